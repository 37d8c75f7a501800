package guesttest

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// The tier runs as many guests at once as the machine has CPUs: under TCG
// each keeps one busy. Which tests start first decides when the tier ends:
// the longest started last runs alone at the end while the other CPU
// idles. parallel admits the waiting test with the most work first
// (longest processing time first), once the tests have had a moment to
// arrive. go test releases only -parallel tests at a time (GOMAXPROCS by
// default), in an order of its own: scripts/test.sh gives the tier a
// larger -parallel, so that every test waits here and this gate chooses.
//
// A test whose guests mostly wait (0 below) starts at once, beside the
// others, and takes no place: the fleet's three guests wait on Ansible,
// ssh and the synchronized start most of their 6 minutes; counted as a
// place it left a CPU half idle (a run of the tier took 23.5 minutes for
// 37 CPU-minutes, against 22.7 without the gate).

// tierSeconds is each test's time alone on a quiet 2-core machine, the
// order of admission (2026-12-06; a test not named is taken as a minute);
// 0: beside the gate.
var tierSeconds = map[string]int{
	"TestScenarioFleet":                          0,
	"TestGoTestTimeoutLeavesNothingBehind":       0,
	"TestScenarioEncrypt":                        410,
	"TestScenarioSuitesInGuest":                  200,
	"TestScenarioCachebench":                     195,
	"TestScenarioStacksKilled":                   170,
	"TestScenarioStacks":                         160,
	"TestScenarioCache":                          140,
	"TestScenarioPersistAcrossReboots":           135,
	"TestScenarioEncryptCost":                    130,
	"TestScenarioCacheCounters":                  100,
	"TestScenarioGrowVolume":                     50,
	"TestScenarioFailingDisks":                   40,
	"TestScenarioReplaceRAID5Member":             38,
	"TestScenarioReplaceAcrossBoots":             36,
	"TestSecondBootSeesFirstBootsWrites":         33,
	"TestScenarioBenchOnEmulatedDisks":           31,
	"TestScenarioHolders":                        29,
	"TestScenarioStackInventory":                 29,
	"TestScenarioReplaceMirrorMember":            29,
	"TestScenarioPartitionPath":                  24,
	"TestTimeoutAndInterruptLeaveNothingRunning": 20,
	"TestEveryDiskKindHasItsIdentity":            18,
	"TestScenarioInventoryAgainstKernel":         14,
}

// gatherFor is how long the gate waits, from the first test's arrival,
// before it admits any: the released tests reach it within milliseconds.
const gatherFor = 300 * time.Millisecond

type gate struct {
	mu      sync.Mutex
	free    int
	open    bool
	waiting []*waiter
}

type waiter struct {
	name  string
	cost  int
	ready chan struct{}
}

var tier = &gate{free: max(1, runtime.GOMAXPROCS(0))}

// parallel is t.Parallel for a guest test: it returns when the tier's
// gate admits t, and t's end frees its place.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
	cost, ok := tierSeconds[t.Name()]
	if !ok {
		cost = 60
	}
	arrived := time.Now()
	if cost > 0 {
		<-tier.enter(t.Name(), cost)
	}
	admitted := time.Now()
	// go test's time of the test counts its wait here too.
	t.Cleanup(func() {
		t.Logf("ran %.0f s after %.0f s at the tier's gate", time.Since(admitted).Seconds(), admitted.Sub(arrived).Seconds())
		if cost > 0 {
			tier.leave()
		}
	})
}

// enter queues a test and returns the channel closed when it may start.
func (g *gate) enter(name string, cost int) <-chan struct{} {
	w := &waiter{name: name, cost: cost, ready: make(chan struct{})}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open && len(g.waiting) == 0 {
		time.AfterFunc(gatherFor, func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.open = true
			g.admit()
		})
	}
	g.waiting = append(g.waiting, w)
	if g.open {
		g.admit()
	}
	return w.ready
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.free++
	g.admit()
}

// admit starts the costliest waiting tests while there is room (g.mu held).
func (g *gate) admit() {
	for g.free > 0 && len(g.waiting) > 0 {
		i := 0
		for j, w := range g.waiting {
			if w.cost > g.waiting[i].cost || w.cost == g.waiting[i].cost && w.name < g.waiting[i].name {
				i = j
			}
		}
		w := g.waiting[i]
		g.waiting = slices.Delete(g.waiting, i, i+1)
		g.free--
		close(w.ready)
	}
}

func TestGateAdmitsTheCostliestFirst(t *testing.T) {
	g := &gate{open: true} // no place free: everything below waits
	var order []string
	chans := map[string]<-chan struct{}{}
	for _, w := range []struct {
		name string
		cost int
	}{{"b", 30}, {"a", 400}, {"c", 30}, {"d", 100}} {
		chans[w.name] = g.enter(w.name, w.cost)
	}
	for range 4 {
		g.leave()
		for name, c := range chans {
			select {
			case <-c:
				order = append(order, name)
				delete(chans, name)
			default:
			}
		}
	}
	if got := slices.Compact(order); !slices.Equal(got, []string{"a", "d", "b", "c"}) {
		t.Errorf("admitted %v, want a d b c (by cost, then name)", got)
	}
}
