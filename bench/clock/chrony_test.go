package clock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/record"
)

// near: to a nanosecond, in ms (a Clock keeps whole nanoseconds).
func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// chronyc's System time is its correction: positive when the clock is
// slow of NTP time, so the offset (clock less NTP) is its negation; the
// uncertainty is root dispersion plus half the root delay.
func TestParseChrony(t *testing.T) {
	cases := []struct {
		file                string
		offsetMS, uncertMS  float64
		reference, errMatch string
	}{
		{"chrony-slow.csv", -2.5, 1 + 4.0/2, "192.168.0.1", ""},
		{"chrony-fast.csv", 0.004315, 0.029493 + 0.000001/2, "PHC0", ""},
		{"chrony-unsync.csv", 0, 0, "", "not synchronised"},
		{"chrony-local.csv", 0, 0, "", "synchronised to no server"},
	}
	for _, tc := range cases {
		out, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ParseChrony(out)
		if tc.errMatch != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errMatch) {
				t.Errorf("%s: %+v, %v; want an error saying %q", tc.file, c, err, tc.errMatch)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if c.Source != record.ClockChrony || c.Reference != tc.reference || c.OffsetMS == nil || !near(*c.OffsetMS, tc.offsetMS) ||
			c.UncertaintyMS == nil || !near(*c.UncertaintyMS, tc.uncertMS) || c.RTTMS != nil {
			t.Errorf("%s: %+v (offset %v, uncertainty %v), want offset %v ms ± %v ms against %s", tc.file, c, deref(c.OffsetMS), deref(c.UncertaintyMS), tc.offsetMS, tc.uncertMS, tc.reference)
		}
	}
	for _, bad := range []string{"", "506 Cannot talk to daemon\n", "a,b,c,d,x,f,g,h,i,j,k,l,m,Normal\n"} {
		if c, err := ParseChrony([]byte(bad)); err == nil {
			t.Errorf("%q: %+v, want an error", bad, c)
		}
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

type fakeRunner struct {
	out  string
	err  error
	argv [][]string
}

func (f *fakeRunner) Run(_ context.Context, name string, args ...string) ([]byte, error) {
	f.argv = append(f.argv, append([]string{name}, args...))
	return []byte(f.out), f.err
}

// Chrony runs chronyc -c tracking once through the runner; whatever goes
// wrong is an unknown clock that says why, never an error.
func TestChronyThroughRunner(t *testing.T) {
	slow, _ := os.ReadFile("testdata/chrony-slow.csv")
	r := &fakeRunner{out: string(slow)}
	c := Chrony(context.Background(), r)
	if len(r.argv) != 1 || !slices.Equal(r.argv[0], []string{"chronyc", "-c", "tracking"}) {
		t.Errorf("ran %q", r.argv)
	}
	if c.Source != record.ClockChrony || c.OffsetMS == nil || !near(*c.OffsetMS, -2.5) {
		t.Errorf("clock %+v", c)
	}
	for _, tc := range []struct {
		r    *fakeRunner
		note string
	}{
		{&fakeRunner{err: fmt.Errorf("chronyc: %w", exec.ErrNotFound)}, "chronyc not found"},
		{&fakeRunner{out: "506 Cannot talk to daemon\n", err: errors.New("chronyc -c tracking: exit status 1: 506 Cannot talk to daemon")}, "506 Cannot talk to daemon"},
		{&fakeRunner{out: "00000000,,0,0.0,0.0,0.0,0.0,0.0,0.0,0.0,1.0,1.0,0.0,Not synchronised\n"}, "not synchronised"},
	} {
		c := Chrony(context.Background(), tc.r)
		if c.Source != record.ClockUnknown || c.OffsetMS != nil || !strings.Contains(c.Note, tc.note) {
			t.Errorf("clock %+v, want unknown saying %q", c, tc.note)
		}
	}
	if c := Chrony(context.Background(), nil); c.Source != record.ClockUnknown {
		t.Errorf("no runner: %+v", c)
	}
}
