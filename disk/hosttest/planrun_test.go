package hosttest

import (
	"errors"
	"testing"

	"github.com/diskprep/diskprep/disk"
)

type actions []disk.Action

func (a actions) Actions() []disk.Action { return a }

// A run keeps the effects made between its start and its end, a failed
// one with its error, across ResetLog; a write outside any run is kept
// apart, unless ByOthers made it; a run killed by CrashAfter still ends,
// marked as killed.
func TestPlanRuns(t *testing.T) {
	h := New()
	h.ByOthers(func() { h.MkdirAll("/srv/setup", 0o755) })
	h.MkdirAll("/srv/around", 0o755)
	p := actions{{Text: "mkdir -p /srv/in", Op: disk.OpMkdir, Path: "/srv/in"}}
	h.BeginPlan(p)
	h.MkdirAll("/srv/in", 0o755)
	h.Remove("/srv/missing")
	h.EndPlan(errors.New("stopped"))
	h.ResetLog()

	runs := h.PlanRuns()
	if len(runs) != 1 || !runs[0].Ended || runs[0].Crashed || runs[0].Err == nil || len(runs[0].Actions) != 1 {
		t.Fatalf("runs %+v", runs)
	}
	if e := runs[0].Effects; len(e) != 2 || e[0].String() != "! mkdir /srv/in" || e[1].Err == "" {
		t.Errorf("effects of the run %q", e)
	}
	if u := h.Unplanned(); len(u) != 1 || u[0].String() != "! mkdir /srv/around" {
		t.Errorf("unplanned %q", u)
	}

	h.CrashAfter(0)
	func() {
		defer func() {
			if _, ok := recover().(Crash); !ok {
				t.Fatal("no crash")
			}
		}()
		h.BeginPlan(p)
		defer h.EndPlan(nil)
		h.MkdirAll("/srv/killed", 0o755)
	}()
	if runs := h.PlanRuns(); len(runs) != 2 || !runs[1].Crashed || !runs[1].Ended || len(runs[1].Effects) != 0 {
		t.Errorf("the killed run %+v", runs[len(runs)-1])
	}
}
