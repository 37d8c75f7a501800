package stack_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
)

// run plans c on r and applies it, as prepare does.
func (r *stackRig) run(c stackCase) error {
	plans, sp, err := r.plan(c)
	if err == nil {
		_, err = r.apply(plans, sp)
	}
	return err
}

// runKilled runs c on r until the fake kills it, and says before what.
// A run that ends on its own, killed or not, fails the test.
func (r *stackRig) runKilled(t *testing.T, c stackCase, n int) hosttest.Effect {
	t.Helper()
	var before *hosttest.Effect
	err := func() error {
		defer func() {
			if v := recover(); v != nil {
				cr, ok := v.(hosttest.Crash)
				if !ok {
					panic(v)
				}
				before = &cr.Before
			}
		}()
		return r.run(c)
	}()
	switch {
	case before != nil:
		return *before
	case err != nil:
		t.Fatalf("kill before write %d: the first run failed on its own: %v", n, err)
	default:
		t.Fatalf("kill before write %d did not happen", n)
	}
	return hosttest.Effect{}
}

// killAtEveryWrite runs c once, uninterrupted, on a rig from fresh; then,
// for each write that run made, on a new rig from fresh killed right
// before that write, and c again on what the kill left. No lock may
// outlive the kill. The rerun must complete, after which done judges the
// host (it starts with an empty effect log); only a kill before the first
// write mustComplete names (a half-written GPT) may instead be refused,
// pointing at --wipe. It returns how many reruns completed and how many
// were refused.
func killAtEveryWrite(t *testing.T, fresh func() *stackRig, c stackCase, mustComplete func(hosttest.Effect) bool, done func(r *stackRig, n int, before hosttest.Effect)) (completed, refused int) {
	t.Helper()
	clean := fresh()
	if err := clean.run(c); err != nil {
		t.Fatalf("the uninterrupted run: %v", err)
	}
	writes := clean.h.Writes()
	if len(writes) == 0 {
		t.Fatal("the uninterrupted run wrote nothing")
	}
	firstMust := slices.IndexFunc(writes, mustComplete)
	if firstMust < 0 {
		t.Fatal("no write the rerun must complete after")
	}
	for n := range writes {
		r := fresh()
		r.h.CrashAfter(n)
		before := r.runKilled(t, c, n)
		if held := r.h.Held(); len(held) > 0 {
			t.Errorf("kill before write %d (%s): locks still held: %v", n, before, held)
		}
		r.h.ResetLog()
		err := r.run(c)
		switch {
		case err == nil:
			completed++
			done(r, n, before)
		case n >= firstMust:
			t.Errorf("kill before write %d (%s): rerun: %v", n, before, err)
		case errors.Is(err, disk.ErrRefused) && strings.Contains(err.Error(), "--wipe"):
			refused++
		default:
			t.Errorf("kill before write %d (%s): rerun neither completes nor refuses pointing at --wipe: %v", n, before, err)
		}
	}
	return completed, refused
}

// runOf is a mustComplete for killAtEveryWrite: the first run of one of
// programs.
func runOf(programs ...string) func(hosttest.Effect) bool {
	return func(w hosttest.Effect) bool { return w.Op == "run" && slices.Contains(programs, w.Args[0]) }
}

// unchangedOnThirdRun fails the test unless c, planned again on r, has
// nothing left to do.
func unchangedOnThirdRun(t *testing.T, r *stackRig, c stackCase, n int, before hosttest.Effect) {
	t.Helper()
	if _, sp, err := r.plan(c); err != nil || !sp.Unchanged {
		t.Errorf("kill before write %d (%s), third run: %v, unchanged %v: %v", n, before, err, sp != nil && sp.Unchanged, stepsOf(sp))
	}
}
