package main

import (
	"context"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/diskprep/diskprep/bench/clock"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/hwinfo"
)

// machine is what prepare, release and fscompare do to the host, as
// functions: runX takes it as its deps (STYLE.md rule 1), and a test
// replaces it whole for one run, so tests may run in parallel.
type machine struct {
	geteuid   func() int
	readFacts func(ctx context.Context, root string, e *env) (*hwinfo.Host, error)
	// diskDeps are disk's ties to the host for Apply and release.
	diskDeps     func(e *env) disk.Deps
	lockTarget   func(r disk.Request, d disk.Deps) (func(), error)
	apply        func(ctx context.Context, p *disk.Plan, d disk.Deps) (*disk.Result, error)
	planRelease  func(ctx context.Context, target string, opt disk.ReleaseOptions, d disk.Deps) (*disk.ReleasePlan, error)
	applyRelease func(ctx context.Context, p *disk.ReleasePlan, d disk.Deps) (*disk.ReleaseResult, error)
	// now, sleep and clock are bench's: the wall clock a synchronized
	// start is waited on, the wait, and this host's clock offset when no
	// --clock-offset is given (chrony's). Nil now and sleep are the real
	// clock and a timer.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	clock func(ctx context.Context) *record.Clock
}

// liveMachine is this machine.
func liveMachine() *machine {
	return &machine{
		geteuid: os.Geteuid,
		readFacts: func(ctx context.Context, root string, e *env) (*hwinfo.Host, error) {
			return hwinfo.Read(ctx, hwinfo.Options{Root: root, All: true, Logger: e.Logger})
		},
		diskDeps:     func(e *env) disk.Deps { return disk.Deps{Logger: e.Logger} },
		lockTarget:   disk.LockTarget,
		apply:        disk.Apply,
		planRelease:  disk.PlanRelease,
		applyRelease: disk.ApplyRelease,
		clock:        func(ctx context.Context) *record.Clock { return clock.Chrony(ctx, disk.ExecRunner{}) },
	}
}

// settledFacts are the facts a plan that writes is made from, read once
// udev has finished the events queued so far: its database may not yet
// show a wipe, or a table a killed run left, made a moment before, and a
// plan made from it is refused when its disk is checked before the write.
func (m *machine) settledFacts(ctx context.Context, e, factsEnv *env, deps disk.Deps) (*hwinfo.Host, error) {
	if e.Root == "" || e.Root == "/" {
		disk.SettleUdev(ctx, deps)
	}
	return m.readFacts(ctx, e.Root, factsEnv)
}

// release is PlanRelease then ApplyRelease on m.
func (m *machine) release(ctx context.Context, target string, opt disk.ReleaseOptions, d disk.Deps) (*disk.ReleaseResult, error) {
	p, err := m.planRelease(ctx, target, opt, d)
	if err != nil {
		return nil, err
	}
	return m.applyRelease(ctx, p, d)
}

// machineOf is the machine the app was started on: run's is live, a
// test's is the one it passed to runOn.
func machineOf(c *cli.Context) *machine {
	if st, ok := c.App.Metadata["state"].(*runState); ok && st.machine != nil {
		return st.machine
	}
	return liveMachine()
}

// deps are m's disk deps with the stack layers, which a release by any
// command may meet on its disks.
func (m *machine) deps(e *env) disk.Deps {
	d := m.diskDeps(e)
	if d.Layers == nil {
		d.Layers = stack.Layers{}
	}
	return d
}

// clockNow is the machine's wall clock.
func (m *machine) clockNow() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}
