// Package dryrun holds every plan run on the recording fake (hosttest) to
// its dry run: the checker the tests of disk and its layers share.
package dryrun

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/hwinfo"
)

// Dry run and apply are one plan (DESIGN.md, "Dry run = plan"): every run
// of Apply, ApplyStacks and ApplyRelease on the recording fake (each tells
// the fake its plan: disk.PlanRecorder) is held to the actions its dry run
// lists, which are what --dry-run prints (Steps, WriteText) and what -o
// json carries. The effects the run made, in order, must be those actions
// in the same order: an effect no action names fails, and so does a
// listed action that left no effect, unless the dry run says it depends
// on what is found (Action.Maybe: mkdir -p, "ensure in fstab", "unless
// active", systemd as PID 1). A run that failed or was killed must have
// done a prefix of its actions, then at most the undo of what it did.
// Writes the fake saw while no plan ran fail too: nothing writes around
// a plan (a test's own setup says it is not diskprep's: ByOthers). Each
// rig of the fake holds all its runs to this when its test ends
// (Hold): the conformance suite's, the stacks', the caches',
// release --wipe's, the guard's and the mount points'.
//
// What cannot be known at planning, and is not an action the user is
// shown, is left out or bound, and nothing else:
//   - diskprep's own records under its state directory (/run/diskprep:
//     the loop devices it attached, the mount points it is making), as
//     its locks there are (not writes at all);
//   - the loop device an image gets and the bcache device a backing
//     device becomes, which the kernel names at attach or registration
//     time: the plan says /dev/loopN and /dev/bcacheN, bound here to the
//     one device of that kind the run's effects name;
//   - which fstab file is edited: the caller's (Deps.FstabPath), not the
//     plan's.
//
// Reads are not effects (mkfs -V, pvs, udevadm settle, probing); a write
// that failed is: it was attempted.

// Hold checks, when the test ends, every plan run on h against
// its dry run. The rigs call it as they make the machine (newFakeRig,
// newStackRig, mountRig, foreignHost), so no test on them can leave a
// run unchecked: Apply, ApplyStacks and ApplyRelease record their runs
// themselves.
func Hold(t *testing.T, h *hosttest.Host) {
	t.Cleanup(func() { t.Logf("%d plan runs held to their dry run", Check(t, h)) })
}

// Check holds every plan run on h to its dry run, and says how
// many there were.
func Check(t *testing.T, h *hosttest.Host) int {
	t.Helper()
	runs := h.PlanRuns()
	for i, run := range runs {
		for _, p := range dryRunProblems(run) {
			t.Errorf("plan run %d of %d (%T): %s\n%s", i+1, len(runs), run.Plan, p, describeRun(run))
		}
	}
	for _, e := range h.Unplanned() {
		t.Errorf("written while no plan ran (no dry run lists it): %s", e)
	}
	return len(runs)
}

// dryRunProblems compares one run with its plan's actions.
func dryRunProblems(run hosttest.PlanRun) []string {
	var problems []string
	if p := jsonRoundTrip(run); p != "" {
		problems = append(problems, p)
	}
	if !run.Ended {
		return append(problems, "the run did not end")
	}
	actions, effects := run.Actions, visibleWrites(run.Effects)
	actions, err := bindPlaceholders(actions, effects)
	if err != nil {
		return append(problems, err.Error())
	}
	complete := run.Ended && run.Err == nil && !run.Crashed
	return append(problems, matchActions(actions, effects, complete)...)
}

// jsonRoundTrip checks that the plan's JSON (prepare and release --dry-run
// -o json) holds everything its actions come from: the plan read back from
// it lists the same.
func jsonRoundTrip(run hosttest.PlanRun) string {
	b, err := json.Marshal(run.Plan)
	if err != nil {
		return fmt.Sprintf("the plan does not marshal: %v", err)
	}
	back := reflect.New(reflect.TypeOf(run.Plan).Elem()).Interface().(disk.ActionPlan)
	if err := json.Unmarshal(b, back); err != nil {
		return fmt.Sprintf("the plan's JSON does not read back: %v", err)
	}
	if got := back.Actions(); !reflect.DeepEqual(got, run.Actions) {
		return fmt.Sprintf("the plan read back from its JSON lists other actions:\n%s\nnot\n%s", actionLines(got), actionLines(run.Actions))
	}
	return ""
}

var stateDir = hwinfo.Roots{}.StateDir() + "/"

// visibleWrites are the effects that change the machine, attempted or
// done, but diskprep's records under its state directory.
func visibleWrites(effects []hosttest.Effect) []hosttest.Effect {
	var out []hosttest.Effect
	for _, e := range effects {
		if !e.Write {
			continue
		}
		if (e.Op == "write-file" || e.Op == "remove" || e.Op == "mkdir") && strings.HasPrefix(e.Args[0]+"/", stateDir) {
			continue
		}
		out = append(out, e)
	}
	return out
}

var placeholders = []struct {
	name string
	kind *regexp.Regexp
}{
	{disk.LoopPlaceholder, regexp.MustCompile(`^/dev/loop[0-9]+`)},
	{stack.BcachePlaceholder, regexp.MustCompile(`^/dev/bcache[0-9]+`)},
}

// bindPlaceholders replaces each placeholder in the actions by the one
// device of its kind the effects name.
func bindPlaceholders(actions []disk.Action, effects []hosttest.Effect) ([]disk.Action, error) {
	out := make([]disk.Action, len(actions))
	copy(out, actions)
	for _, ph := range placeholders {
		if !mentions(actions, ph.name) {
			continue
		}
		seen := map[string]bool{}
		for _, e := range effects {
			for _, a := range e.Args {
				if m := ph.kind.FindString(a); m != "" {
					seen[m] = true
				}
			}
		}
		if len(seen) > 1 {
			return nil, fmt.Errorf("%s: the run names %d devices it could be: %v", ph.name, len(seen), seen)
		}
		for dev := range seen {
			for i := range out {
				a := &out[i]
				a.Path = strings.ReplaceAll(a.Path, ph.name, dev)
				if a.Argv != nil {
					a.Argv = append([]string(nil), a.Argv...)
					for j := range a.Argv {
						a.Argv[j] = strings.ReplaceAll(a.Argv[j], ph.name, dev)
					}
				}
			}
		}
	}
	return out, nil
}

func mentions(actions []disk.Action, s string) bool {
	for _, a := range actions {
		if strings.Contains(a.Path, s) || strings.Contains(strings.Join(a.Argv, " "), s) {
			return true
		}
	}
	return false
}

// effectRange is how many effects an action makes: none for a line that
// only informs, any number for a device's writes, a file (with its
// directory) and the kernel's partitions, one otherwise; none may do
// when the action is Maybe.
func effectRange(a disk.Action) (min, max int) {
	switch a.Op {
	case "":
		return 0, 0
	case disk.OpWriteDevice, disk.OpPartitions, disk.OpWriteFile:
		min, max = 1, 1<<30
	default:
		min, max = 1, 1
	}
	if a.Maybe {
		min = 0
	}
	return min, max
}

// carriesOut says whether e is (part of) what a does.
func carriesOut(a disk.Action, e hosttest.Effect) bool {
	arg := func(i int) string {
		if i < len(e.Args) {
			return e.Args[i]
		}
		return ""
	}
	switch a.Op {
	case disk.OpRun:
		return e.Op == "run" && reflect.DeepEqual(e.Args, a.Argv)
	case disk.OpWriteDevice:
		if arg(0) != a.Path {
			return false
		}
		if e.Op == "sync" {
			return true
		}
		var off, n uint64
		if e.Op != "write" || len(e.Args) != 2 {
			return false
		}
		if _, err := fmt.Sscanf(e.Args[1], "%d+%d", &off, &n); err != nil {
			return false
		}
		if a.Regions == nil {
			return true
		}
		for _, r := range a.Regions {
			if off >= r[0] && off+n <= r[1] {
				return true
			}
		}
		return false
	case disk.OpPartitions:
		return (e.Op == "BLKRRPART" || e.Op == "BLKPG-add" || e.Op == "BLKPG-del") && arg(0) == a.Path
	case disk.OpWriteFile:
		// Writing a file makes the directory it needs.
		return e.Op == "write-file" && arg(0) == a.Path || e.Op == "mkdir" && strings.HasPrefix(a.Path, arg(0)+"/")
	case disk.OpEditFstab:
		return e.Op == "edit-fstab"
	case disk.OpWriteSys:
		return e.Op == "write-sys" && arg(0) == a.Path && arg(1) == a.Value
	case disk.OpCreateImage, disk.OpEmptyImage, disk.OpAttachLoop, disk.OpDetachLoop, disk.OpMkdir, disk.OpRemove, disk.OpUnmount:
		return e.Op == a.Op && arg(0) == a.Path
	}
	return false
}

// matchActions aligns the effects with the actions, each action taking
// the next run of effects it carries out. complete: the run succeeded, so
// every action must be done; otherwise a prefix of them, and what comes
// after may only undo what was done.
func matchActions(actions []disk.Action, effects []hosttest.Effect, complete bool) []string {
	n, m := len(actions), len(effects)
	// reach[i][j]: the first i actions make exactly the first j effects.
	reach := make([][]bool, n+1)
	for i := range reach {
		reach[i] = make([]bool, m+1)
	}
	reach[0][0] = true
	for i, a := range actions {
		min, max := effectRange(a)
		for j := 0; j <= m; j++ {
			if !reach[i][j] {
				continue
			}
			if min == 0 {
				reach[i+1][j] = true
			}
			for k := 1; k <= max && j+k <= m && carriesOut(a, effects[j+k-1]); k++ {
				if k >= min {
					reach[i+1][j+k] = true
				}
			}
		}
	}
	// The furthest into the effects the actions in order get, and the
	// most actions done to get there.
	far, done := 0, 0
	for j := 0; j <= m; j++ {
		for i := 0; i <= n; i++ {
			if reach[i][j] {
				far, done = j, i
			}
		}
	}
	if complete {
		switch {
		case far < m:
			return []string{fmt.Sprintf("effect %d, %q, is not what the dry run lists (after %d actions; next: %s)", far+1, effects[far], done, nextAction(actions, done))}
		case !reach[n][m]:
			return []string{fmt.Sprintf("the dry run lists %s, which the run did not do", nextAction(actions, done))}
		}
		return nil
	}
	var problems []string
	for _, e := range effects[far:] {
		if !undoes(e, effects[:far]) {
			problems = append(problems, fmt.Sprintf("effect %q is not what the dry run lists (after %d actions; next: %s), nor the undo of an effect before", e, done, nextAction(actions, done)))
		}
	}
	return problems
}

// nextAction names the first action from i on that had to leave an effect.
func nextAction(actions []disk.Action, i int) string {
	for ; i < len(actions); i++ {
		if min, _ := effectRange(actions[i]); min > 0 {
			return fmt.Sprintf("action %d, %q", i+1, actions[i].Text)
		}
	}
	return "nothing"
}

// undoes says whether e takes back one of the effects before: a failed
// run unmounts what it mounted, turns off the swap it turned on, detaches
// the loop device it attached and removes the image it created.
func undoes(e hosttest.Effect, before []hosttest.Effect) bool {
	for _, b := range before {
		switch {
		case e.Op == "unmount" && b.Op == "run" && len(b.Args) > 0 && b.Args[0] == "mount" && b.Args[len(b.Args)-1] == e.Args[0],
			e.Op == "run" && len(e.Args) == 2 && e.Args[0] == "swapoff" && reflect.DeepEqual(b.Args, []string{"swapon", e.Args[1]}),
			e.Op == "detach-loop" && b.Op == "attach-loop",
			e.Op == "remove" && b.Op == "create-image" && b.Args[0] == e.Args[0]:
			return true
		}
	}
	return false
}

func describeRun(run hosttest.PlanRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "dry run:\n%s", actionLines(run.Actions))
	fmt.Fprintf(&b, "effects (ended %v, err %v, crashed %v):\n", run.Ended, run.Err, run.Crashed)
	for _, e := range visibleWrites(run.Effects) {
		fmt.Fprintf(&b, "  %s\n", e)
	}
	return b.String()
}

func actionLines(actions []disk.Action) string {
	var b strings.Builder
	for i, a := range actions {
		fmt.Fprintf(&b, "  %2d. [%s %s%s] %s\n", i+1, a.Op, a.Path, map[bool]string{true: " maybe"}[a.Maybe], a.Text)
	}
	return b.String()
}

// The comparison itself: what it must catch, and what it must let pass.
