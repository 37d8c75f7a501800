package hosttest

import "github.com/diskprep/diskprep/disk"

// PlanRun is one run of a plan on the machine: the plan Apply,
// ApplyStacks or ApplyRelease was given, the actions its dry run lists,
// and every effect from the run's start to its end (the undo of a
// failure included), as Log has them.
type PlanRun struct {
	Plan    disk.ActionPlan
	Actions []disk.Action
	Effects []Effect
	Ended   bool
	Err     error // how it ended
	// Crashed: the machine "killed" it (CrashAfter) before it ended.
	Crashed bool
}

// BeginPlan implements disk.PlanRecorder.
func (h *Host) BeginPlan(p disk.ActionPlan) {
	h.mu.Lock()
	defer h.mu.Unlock()
	run := &PlanRun{Plan: p, Actions: p.Actions()}
	h.runs = append(h.runs, run)
	h.open = append(h.open, run)
}

// EndPlan implements disk.PlanRecorder.
func (h *Host) EndPlan(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.open) == 0 {
		panic("hosttest: EndPlan without BeginPlan")
	}
	run := h.open[len(h.open)-1]
	h.open = h.open[:len(h.open)-1]
	run.Ended, run.Err = true, err
}

// PlanRuns are the runs of plans so far, in the order they began;
// ResetLog does not forget them.
func (h *Host) PlanRuns() []PlanRun {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]PlanRun, len(h.runs))
	for i, r := range h.runs {
		out[i] = *r
		out[i].Effects = append([]Effect(nil), r.Effects...)
	}
	return out
}

// Unplanned are the writes made while no plan ran (ResetLog does not
// forget them either): a test's own setup through the Host, or an
// effect of diskprep that no dry run lists.
func (h *Host) Unplanned() []Effect {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Effect(nil), h.unplanned...)
}

// keep files e, just added to the log, under the run it belongs to.
func (h *Host) keep(e Effect) {
	h.lastKept = nil
	switch {
	case len(h.open) > 0:
		run := h.open[len(h.open)-1]
		run.Effects = append(run.Effects, e)
		h.lastKept = &run.Effects
	case e.Write && h.others == 0:
		h.unplanned = append(h.unplanned, e)
		h.lastKept = &h.unplanned
	}
}

// crash marks the runs under way as killed (the deferred EndPlan of
// each still runs, as the process's deferred unlocks do).
func (h *Host) crash() {
	for _, r := range h.open {
		r.Crashed = true
	}
}

// ByOthers runs f, whose effects on the machine are another program's
// (a test's setup: vgchange or wipefs typed by hand), not diskprep's:
// logged as any, held to no plan.
func (h *Host) ByOthers(f func()) {
	h.mu.Lock()
	h.others++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.others--
		h.mu.Unlock()
	}()
	f()
}
