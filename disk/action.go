package disk

import (
	"strings"
)

// Action is one step of a plan as its dry run lists it: Text is the line
// shown, the other fields the effect on the host that carries it out.
// Plan, StackPlan and ReleasePlan each build their list in one place
// (Actions), which the dry run prints and which Apply, ApplyStacks and
// ApplyRelease follow step for step; a test holds every run on the
// recording fake to it (dryrun_test.go).
type Action struct {
	Text string
	// Op is the Host effect that carries the action out (the Op
	// constants); "" for a line that only informs: a partition of the
	// table written, a stack member, an array found made, a wait.
	Op string
	// Path is what the effect acts on: a device, file, directory, mount
	// point or kernel attribute. Empty for OpEditFstab: the fstab is the
	// caller's (Deps.FstabPath), not the plan's.
	Path string
	// Argv is the program OpRun runs; Value what OpWriteSys writes.
	Argv  []string
	Value string
	// Regions are the byte ranges [start, end) of Path that an
	// OpWriteDevice writes; nil: anywhere (a wipe of the signatures found).
	Regions [][2]uint64
	// Maybe: whether the step has an effect depends on what is found when
	// it runs (a directory that exists, an fstab line or a marker that is
	// there, an active swap area, systemd not PID 1, signatures to wipe);
	// Text says when.
	Maybe bool
}

// The effects an Action names, after the Host methods that make them.
const (
	OpRun         = "run"          // Host.Run of Argv
	OpWriteDevice = "write-device" // writes and syncs on the open device Path
	OpPartitions  = "partitions"   // BLKRRPART, BLKPG on the device Path
	OpCreateImage = "create-image"
	OpEmptyImage  = "empty-image"
	OpAttachLoop  = "attach-loop" // Path is the image
	OpDetachLoop  = "detach-loop"
	OpMkdir       = "mkdir"
	OpWriteFile   = "write-file" // the file Path, with the directory it needs
	OpRemove      = "remove"
	OpEditFstab   = "edit-fstab"
	OpUnmount     = "unmount"
	OpWriteSys    = "write-sys"
)

// ActionPlan is a plan a dry run lists: Plan, StackPlan, ReleasePlan.
type ActionPlan interface {
	Actions() []Action
}

// PlanRecorder is a Host that keeps a record of its effects (the
// recording fake, disk/hosttest). Apply, ApplyStacks and ApplyRelease
// tell it the plan they carry out before their first effect and how they
// ended after their last, so that each run can be held to its dry run.
type PlanRecorder interface {
	BeginPlan(p ActionPlan)
	EndPlan(err error)
}

// RecordPlan tells h, when it keeps a record, that p is carried out from
// now on; the function returned tells it how that ended.
func RecordPlan(h Host, p ActionPlan) func(error) {
	r, ok := h.(PlanRecorder)
	if !ok {
		return func(error) {}
	}
	r.BeginPlan(p)
	return r.EndPlan
}

// Steps is the text of each action, as the dry run prints them.
func Steps(actions []Action) []string {
	s := make([]string, len(actions))
	for i, a := range actions {
		s[i] = a.Text
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none reported)"
	}
	return s
}

// QuoteArgv renders argv as a shell would need it typed.
func QuoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}

// Quote quotes s for a shell, as QuoteArgv does each word.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
