package compare_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
)

func ms(v float64) *float64 { return &v }

func fleetOf(t *testing.T, recs []*record.Record, opts compare.Options) *compare.Comparison {
	t.Helper()
	opts.By = compare.ByHost
	c, err := compare.Compare(recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.Fleet == nil {
		t.Fatal("no fleet summary by host")
	}
	return c
}

// threeHosts is the fleet: two SSD hosts, one of them 5 s ahead
// (measured), and a host whose disk runs at a tenth of their speed and
// whose clock nobody measured.
func threeHosts() []*record.Record {
	return comparetest.Fleet([]comparetest.FleetHost{
		{Name: "node-a", Factor: 1, OffsetMS: ms(0.42), Late: 3 * time.Millisecond},
		{Name: "node-b", Factor: 0.98, Disk: "KINGSTON SA400S37480G", OffsetMS: ms(5012.3), Late: 11 * time.Millisecond},
		{Name: "node-c", Factor: 0.1, Disk: "ST4000DM004-2CV104", Late: 40 * time.Millisecond},
	})
}

func outlierHosts(f *compare.Fleet) []string {
	var hs []string
	for _, o := range f.Outliers {
		if !slices.Contains(hs, o.Host) {
			hs = append(hs, o.Host)
		}
	}
	return hs
}

// The main workloads of the quick set, each by the figure people read
// it by, and the random read's p99; the throttled host is named on
// every one of them, worse, and no other host is.
func TestFleetNamesTheThrottledHost(t *testing.T) {
	c := fleetOf(t, threeHosts(), compare.Options{})
	f := c.Fleet
	var cols []string
	for _, col := range f.Columns {
		cols = append(cols, col.Row+" "+col.Metric)
	}
	want := []string{"seq1m-read MB/s", "seq1m-write MB/s", "rnd4k-read IOPS", "rnd4k-write IOPS", "rnd4k-read p99 latency"}
	if !slices.Equal(cols, want) {
		t.Fatalf("columns %q, want %q", cols, want)
	}
	if len(f.Hosts) != 3 || f.Expected != 3 || len(f.Failed) != 0 {
		t.Fatalf("hosts %d, expected %d, failed %v", len(f.Hosts), f.Expected, f.Failed)
	}
	if got := outlierHosts(f); !slices.Equal(got, []string{"node-c"}) || len(f.Outliers) != 5 {
		t.Fatalf("outliers %+v", f.Outliers)
	}
	for i, o := range f.Outliers {
		if !o.Worse || o.Row != f.Columns[i].Row || math.Abs(o.Ratio-0.1) > 0.01 && o.Metric != compare.MetricLatP99 {
			t.Errorf("outlier %+v", o)
		}
	}
	c0 := f.Columns[0]
	// 520, 509.6, 52: median 509.6, MAD 10.4; 3 robust σ (46.3) are
	// less than the 10% floor, so the band is ±50.96.
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(c0.Median, 509.6) || !near(c0.MAD, 10.4) || !c0.Banded || !near(c0.Low, 458.64) || !near(c0.High, 560.56) {
		t.Errorf("seq1m-read column %+v", c0)
	}
	h := f.Hosts[1]
	if h.Host != "node-b" || h.Model != "KINGSTON SA400S37480G" || h.Transport != "sata" || h.FS != "xfs" || !near(*h.Values[0].Value, 509.6) || h.Values[0].Outlier {
		t.Errorf("node-b %+v", h)
	}
}

// Fifty hosts a few percent apart have no outlier; one throttled among
// them is the only one named.
func TestFleetFiftyHosts(t *testing.T) {
	c := fleetOf(t, comparetest.Fleet(comparetest.FleetOf(50)), compare.Options{})
	if len(c.Fleet.Outliers) != 0 {
		t.Errorf("outliers in an even fleet: %+v", c.Fleet.Outliers)
	}
	c = fleetOf(t, comparetest.Fleet(comparetest.FleetOf(50, 7)), compare.Options{})
	if got := outlierHosts(c.Fleet); !slices.Equal(got, []string{"node-07"}) {
		t.Errorf("outliers %v", got)
	}
	if c.Fleet.StartAt == nil || !c.Fleet.StartAt.Equal(comparetest.FleetStart) || !c.Fleet.Synchronized {
		t.Errorf("start %v, synchronized %v", c.Fleet.StartAt, c.Fleet.Synchronized)
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, "start skew") || strings.Contains(w, "clock offset") {
			t.Errorf("warned of a fleet that started together with known clocks: %s", w)
		}
	}
}

// With two hosts neither is the odd one out, however far apart.
func TestFleetNoBandUnderThreeHosts(t *testing.T) {
	c := fleetOf(t, threeHosts()[1:], compare.Options{})
	if len(c.Fleet.Outliers) != 0 || c.Fleet.Columns[0].Banded {
		t.Errorf("outliers %+v, column %+v", c.Fleet.Outliers, c.Fleet.Columns[0])
	}
}

// Start skew: each host's actual start less its offset, against the
// first; the host 5 s ahead that waited by its offset started with the
// others. A host more than 1 s late, and hosts of unknown offset, are
// each said once, with their count.
func TestFleetStartSkew(t *testing.T) {
	c := fleetOf(t, threeHosts(), compare.Options{})
	skew := map[string]float64{}
	for _, h := range c.Fleet.Hosts {
		skew[h.Host] = *h.StartSkewMS
	}
	if math.Abs(skew["node-a"]) > 1e-6 || math.Abs(skew["node-b"]-8) > 1e-6 || math.Abs(skew["node-c"]-37) > 1e-6 {
		t.Errorf("skews %v, want node-a 0, node-b 8 ms, node-c 37 ms", skew)
	}
	if h := c.Fleet.Hosts[2]; !h.SkewUncorrected || h.ClockOffsetMS != nil || h.ClockSource != record.ClockUnknown {
		t.Errorf("node-c %+v", h)
	}
	if h := c.Fleet.Hosts[1]; h.SkewUncorrected || *h.ClockOffsetMS != 5012.3 || h.ClockSource != record.ClockController {
		t.Errorf("node-b %+v", h)
	}
	wantUnknown := "clock offset unknown: 1 host (node-c): their start skew is by their own clocks"
	if n := countWarnings(c, "clock offset unknown"); n != 1 || !hasWarning(c, wantUnknown) {
		t.Errorf("warnings %q", c.Warnings)
	}
	if countWarnings(c, "start skew above") != 0 {
		t.Errorf("warnings %q", c.Warnings)
	}

	// Three hosts late: one warning naming them with their skew.
	hosts := comparetest.FleetOf(6)
	for i, late := range map[int]time.Duration{1: 1500 * time.Millisecond, 3: 4 * time.Second, 4: 2 * time.Second} {
		hosts[i].Late = late
	}
	hosts[5].OffsetMS = nil
	c = fleetOf(t, comparetest.Fleet(hosts), compare.Options{})
	if countWarnings(c, "start skew above 1s: 3 hosts (node-02 +1.5") != 1 || countWarnings(c, "start skew above") != 1 ||
		countWarnings(c, "node-04 +4") != 1 || countWarnings(c, "clock offset unknown: 1 host (node-06)") != 1 {
		t.Errorf("warnings %q", c.Warnings)
	}
}

// Records without a synchronized start have no skew, and their unknown
// clocks are nothing to warn about.
func TestFleetWithoutStartAt(t *testing.T) {
	recs := threeHosts()
	for _, r := range recs {
		r.StartAt = nil
	}
	c := fleetOf(t, recs, compare.Options{})
	if c.Fleet.Synchronized || c.Fleet.StartAt != nil {
		t.Errorf("fleet %+v", c.Fleet)
	}
	for _, h := range c.Fleet.Hosts {
		if h.StartSkewMS != nil {
			t.Errorf("%s skew %v", h.Host, *h.StartSkewMS)
		}
	}
	if countWarnings(c, "clock offset") != 0 || countWarnings(c, "start skew") != 0 {
		t.Errorf("warnings %q", c.Warnings)
	}
}

// Failed hosts: those the playbook said failed, with their reason, in its
// order, then those expected that have no record; each once.
func TestFleetFailedHosts(t *testing.T) {
	c := fleetOf(t, threeHosts(), compare.Options{
		Expected: []string{"node-a", "node-b", "node-c", "node-d", "node-e", "node-f"},
		Failed: []compare.FailedHost{
			{Host: "node-e", Reason: "unreachable: ssh: connect to host node-e port 22: No route to host"},
			{Host: "node-d", Reason: "prepare: refused: /dev/sdb holds an xfs filesystem (pass wipe: true)"},
			{Host: "node-e", Reason: "said twice"},
			{Host: "node-g"},
		},
	})
	want := []compare.FailedHost{
		{Host: "node-e", Reason: "unreachable: ssh: connect to host node-e port 22: No route to host"},
		{Host: "node-d", Reason: "prepare: refused: /dev/sdb holds an xfs filesystem (pass wipe: true)"},
		{Host: "node-g", Reason: "failed (no reason given)"},
		{Host: "node-f", Reason: "no record (expected: --expect-hosts)"},
	}
	if !slices.Equal(c.Fleet.Failed, want) || c.Fleet.Expected != 7 {
		t.Errorf("failed %+v, expected %d", c.Fleet.Failed, c.Fleet.Expected)
	}
	// One host left of a fleet is a report all the same.
	c = fleetOf(t, threeHosts()[:1], compare.Options{Failed: []compare.FailedHost{{Host: "node-b", Reason: "x"}}})
	if countWarnings(c, "nothing to compare against") != 0 {
		t.Errorf("warnings %q", c.Warnings)
	}
}

func TestFleetOnlyByHost(t *testing.T) {
	_, err := compare.Compare(threeHosts(), compare.Options{By: compare.ByLabel, Expected: []string{"node-a"}})
	if !errors.Is(err, compare.ErrUsage) {
		t.Errorf("--by label with expected hosts: %v", err)
	}
	c, err := compare.Compare(threeHosts(), compare.Options{By: compare.ByDevice})
	if err != nil || c.Fleet != nil {
		t.Errorf("fleet summary by device: %v, %v", c.Fleet, err)
	}
}

// The main workloads of a CrystalDiskMark set: the first of each kind,
// the sequential ones by MB/s, the random ones by IOPS, and the first
// random read's p99.
func TestFleetColumnsOfCDM(t *testing.T) {
	mk := func(host string) *record.Record {
		w := func(name, rw string, bs uint64) comparetest.Workload {
			return comparetest.Workload{Name: name, RW: rw, BS: bs, MBps: []float64{100, 101, 99}}
		}
		r := comparetest.Record(comparetest.Opts{Host: host, ID: host, Set: "cdm", Workloads: []comparetest.Workload{
			w("seq1m-q8t1-read", "read", 1<<20), w("seq1m-q8t1-write", "write", 1<<20),
			w("seq1m-q1t1-read", "read", 1<<20), w("seq1m-q1t1-write", "write", 1<<20),
			w("rnd4k-q32t1-read", "randread", 4<<10), w("rnd4k-q32t1-write", "randwrite", 4<<10),
			w("rnd4k-q1t1-read", "randread", 4<<10), w("rnd4k-q1t1-write", "randwrite", 4<<10),
		}})
		return r
	}
	c := fleetOf(t, []*record.Record{mk("a"), mk("b")}, compare.Options{})
	var cols []string
	for _, col := range c.Fleet.Columns {
		cols = append(cols, fmt.Sprintf("%s %s", col.Row, col.Metric))
	}
	want := []string{"seq1m-q8t1-read MB/s", "seq1m-q8t1-write MB/s", "rnd4k-q32t1-read IOPS", "rnd4k-q32t1-write IOPS", "rnd4k-q32t1-read p99 latency"}
	if !slices.Equal(cols, want) {
		t.Errorf("columns %q, want %q", cols, want)
	}
}

func countWarnings(c *compare.Comparison, part string) int {
	n := 0
	for _, w := range c.Warnings {
		if strings.Contains(w, part) {
			n++
		}
	}
	return n
}

func hasWarning(c *compare.Comparison, part string) bool { return countWarnings(c, part) > 0 }
