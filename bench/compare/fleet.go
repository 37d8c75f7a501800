package compare

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
)

// Fleet is what a comparison by host says first: one line per host (its
// disk, the figures of the main workloads, its clock offset and how far
// after the first host it started), the fleet's median and spread of each
// figure, the hosts outside that spread, and the hosts that were expected
// but have no record, each with why.
type Fleet struct {
	Hosts   []FleetHost   `json:"hosts"`
	Columns []FleetColumn `json:"columns"`
	// Outliers are the figures of hosts outside their column's band.
	Outliers []Outlier `json:"outliers,omitempty"`
	// Failed are the hosts expected (compare --expect-hosts) or said to
	// have failed (compare --failures) that have no record here, or that
	// failed all the same; in the order given.
	Failed []FailedHost `json:"failed,omitempty"`
	// Expected counts the hosts of the run: those with records and the
	// failed ones.
	Expected int `json:"expected"`
	// StartAt is the synchronized start every record that had one shared;
	// omitted when none had one, or they had several.
	StartAt *time.Time `json:"start_at,omitempty"`
	// Synchronized: some records were started together (bench --start-at),
	// so each host's start skew is known.
	Synchronized bool `json:"synchronized"`
	// OutlierRule says how the bands are drawn.
	OutlierRule string `json:"outlier_rule"`
}

// FleetColumn is one figure of the summary: a main workload's throughput
// (MB/s for blocks of 64 KiB and more, IOPS for smaller ones), or the p99
// completion latency of one workload (µs); its median over the hosts that
// have it, their median absolute deviation, and the band outside which a
// host is an outlier (none with fewer than FleetMinHosts hosts).
type FleetColumn struct {
	Row    string  `json:"row"`
	Metric string  `json:"metric"` // MetricMBps, MetricIOPS or MetricLatP99 (µs)
	N      int     `json:"n"`
	Median float64 `json:"median"`
	MAD    float64 `json:"mad"`
	Low    float64 `json:"band_low"`
	High   float64 `json:"band_high"`
	Banded bool    `json:"banded"`
}

// FleetHost is one host's line.
type FleetHost struct {
	Host      string       `json:"host"`
	Records   int          `json:"records"`
	Model     string       `json:"model"`
	Transport string       `json:"transport"`
	FS        string       `json:"fs"`
	Values    []FleetValue `json:"values"` // one per column
	// ClockOffsetMS is the host's clock less the controller's, as its
	// records say (the first that knows it); omitted when unknown.
	ClockOffsetMS *float64 `json:"clock_offset_ms,omitempty"`
	ClockSource   string   `json:"clock_source"`
	// StartSkewMS is how long after the first host of its synchronized
	// start this host began measuring, by the controller's clock (its
	// actual start less its offset), the largest over its records;
	// omitted when none of them had a synchronized start.
	StartSkewMS *float64 `json:"start_skew_ms,omitempty"`
	// SkewUncorrected: an offset was unknown, so the skew is by the
	// hosts' own clocks.
	SkewUncorrected bool `json:"skew_uncorrected,omitempty"`
}

// FleetValue is a host's figure of one column: the median over its
// repetitions; nil when the host did not run the workload.
type FleetValue struct {
	Value   *float64 `json:"value"`
	Outlier bool     `json:"outlier,omitempty"`
}

// Outlier is one host's figure outside its column's band.
type Outlier struct {
	Host   string  `json:"host"`
	Row    string  `json:"row"`
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	// Ratio is the value over the fleet's median.
	Ratio float64 `json:"ratio"`
	// Worse: slower, or of higher latency.
	Worse bool `json:"worse"`
}

// FailedHost is a host that was expected and failed, with why, in one
// line.
type FailedHost struct {
	Host   string `json:"host"`
	Reason string `json:"reason"`
}

// The outlier rule: a robust band around the fleet's median, wide enough
// for ordinary run-to-run noise, and a floor that names a disk at half
// the fleet's speed (a throttled or failing one) however spread the
// fleet is.
const (
	// FleetMinHosts is the fewest hosts a band is drawn for: with two,
	// neither is the odd one out.
	FleetMinHosts = 3
	// OutlierMADs is the band's half-width in robust standard deviations
	// (the MAD times 1.4826, a normal distribution's σ).
	OutlierMADs = 3.0
	madSigma    = 1.4826
	// OutlierMinBand is the band's least half-width, a share of the
	// median: a fleet of identical disks has a MAD near 0, and a host 3%
	// off it is no outlier.
	OutlierMinBand = 0.10
	// OutlierFactor: throughput below the median divided by it, or p99
	// latency above the median times it, is an outlier whatever the MAD.
	OutlierFactor = 2.0
	// MaxSkew is the start skew beyond which hosts did not start
	// together.
	MaxSkew = time.Second
	// fleetMainBlock is the block size from which a workload's figure is
	// its MB/s rather than its IOPS.
	fleetMainBlock = 64 << 10
)

// OutlierRuleText says the rule in a sentence.
var OutlierRuleText = fmt.Sprintf("a host is an outlier on a figure outside the fleet's median ± max(%g × 1.4826 × MAD, %g%% of the median), "+
	"or with less than 1/%g of the median's throughput or more than %g× its p99 latency; drawn for %d hosts or more",
	OutlierMADs, OutlierMinBand*100, OutlierFactor, OutlierFactor, FleetMinHosts)

// fleetSummary is c's summary by host; the warnings are those of the
// start: hosts that started more than MaxSkew apart, and hosts whose
// clock offset is unknown, each said once with their count.
func fleetSummary(c *Comparison, opts Options) (*Fleet, []string) {
	f := &Fleet{OutlierRule: OutlierRuleText}
	cols, rows := fleetColumns(c)
	f.Columns = cols
	for gi, g := range c.Groups {
		h := FleetHost{Host: g.Name, Records: len(g.Records), ClockSource: record.ClockUnknown}
		var models, transports, fss []string
		for _, r := range g.Records {
			models = addDistinct(models, diskModel(r.Target))
			transports = addDistinct(transports, r.Target.Transport)
			fss = addDistinct(fss, fsOf(r))
			if r.Clock != nil && h.ClockOffsetMS == nil {
				h.ClockSource = r.Clock.Source
				if r.Clock.OffsetMS != nil {
					v := *r.Clock.OffsetMS
					h.ClockOffsetMS = &v
				}
			}
		}
		h.Model, h.Transport, h.FS = strings.Join(models, " + "), strings.Join(transports, " + "), strings.Join(fss, " + ")
		for ci, col := range cols {
			cell := c.Rows[rows[ci]].Cells[gi]
			var v FleetValue
			if cell.Present {
				x := cell.Metrics[metricIndex(c, col.Metric)].Median
				if col.Metric == MetricLatP99 {
					x = cell.LatencyNS[2] / 1e3
				}
				v.Value = &x
			}
			h.Values = append(h.Values, v)
		}
		f.Hosts = append(f.Hosts, h)
	}
	for ci := range f.Columns {
		band(f, ci)
	}
	warnings := skews(f, c)
	f.Failed = failedHosts(c, opts)
	f.Expected = len(f.Hosts) + len(f.Failed)
	for _, fh := range f.Failed {
		if slices.ContainsFunc(f.Hosts, func(h FleetHost) bool { return h.Host == fh.Host }) {
			f.Expected-- // failed, and yet has records here
		}
	}
	return f, warnings
}

func addDistinct(list []string, v string) []string {
	if v == "" || slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// metricIndex is where metric is in a cell's Metrics: MB/s and IOPS are
// always the first two.
func metricIndex(c *Comparison, metric string) int {
	if i := slices.Index(c.Metrics, metric); i >= 0 {
		return i
	}
	return 0
}

// fleetColumns picks the main workloads, at most one of each kind
// (sequential read, sequential write, random read, random write), the
// first of each in row order, as CrystalDiskMark's four headline figures
// are; rows of none of these kinds fill up to two. Then one column of p99
// latency: the first random read's, else the first read's, else the first
// column's. It returns the columns and the row each is of.
func fleetColumns(c *Comparison) ([]FleetColumn, []int) {
	kinds := map[string]int{}
	var picked []int
	for ri, r := range c.Rows {
		p, ok := rowParams(r)
		if !ok {
			continue
		}
		kind := "seq"
		if strings.HasPrefix(p.RW, "rand") {
			kind = "rand"
		}
		kind += "-" + r.Dir
		if _, seen := kinds[kind]; !seen {
			kinds[kind] = ri
			picked = append(picked, ri)
		}
	}
	for ri := 0; ri < len(c.Rows) && len(picked) < 2; ri++ {
		if !slices.Contains(picked, ri) {
			picked = append(picked, ri)
		}
	}
	sort.Ints(picked)
	var cols []FleetColumn
	var rows []int
	for _, ri := range picked {
		r := c.Rows[ri]
		metric := MetricIOPS
		if p, ok := rowParams(r); ok && p.BlockBytes >= fleetMainBlock {
			metric = MetricMBps
		}
		cols, rows = append(cols, FleetColumn{Row: r.Name, Metric: metric}), append(rows, ri)
	}
	lat := -1
	if ri, ok := kinds["rand-read"]; ok {
		lat = ri
	} else if ri, ok := kinds["seq-read"]; ok {
		lat = ri
	} else if len(rows) > 0 {
		lat = rows[0]
	}
	if lat >= 0 {
		cols, rows = append(cols, FleetColumn{Row: c.Rows[lat].Name, Metric: MetricLatP99}), append(rows, lat)
	}
	return cols, rows
}

// band draws column ci's median, MAD and band over the hosts that have
// it, and marks the outliers.
func band(f *Fleet, ci int) {
	col := &f.Columns[ci]
	var xs []float64
	for _, h := range f.Hosts {
		if v := h.Values[ci].Value; v != nil {
			xs = append(xs, *v)
		}
	}
	col.N = len(xs)
	if col.N == 0 {
		return
	}
	col.Median = median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - col.Median)
	}
	col.MAD = median(dev)
	if col.N < FleetMinHosts {
		return
	}
	half := math.Max(OutlierMADs*madSigma*col.MAD, OutlierMinBand*col.Median)
	col.Low, col.High, col.Banded = col.Median-half, col.Median+half, true
	lowerBetter := LowerIsBetter(col.Metric)
	if lowerBetter {
		col.High = math.Min(col.High, col.Median*OutlierFactor)
	} else {
		col.Low = math.Max(col.Low, col.Median/OutlierFactor)
	}
	for hi := range f.Hosts {
		v := &f.Hosts[hi].Values[ci]
		if v.Value == nil || *v.Value >= col.Low && *v.Value <= col.High {
			continue
		}
		v.Outlier = true
		o := Outlier{Host: f.Hosts[hi].Host, Row: col.Row, Metric: col.Metric, Value: *v.Value, Worse: (*v.Value < col.Low) != lowerBetter}
		if col.Median != 0 {
			o.Ratio = *v.Value / col.Median
		}
		f.Outliers = append(f.Outliers, o)
	}
}

// skews sets each host's start skew: within each synchronized start
// (records of one start_at), every record's actual start less its
// clock offset (the controller's time it began at) less the earliest of
// them. A host's skew is its largest. It warns, once each, of hosts
// more than MaxSkew late and of hosts whose offset is unknown (their
// skew is then by their own clock).
func skews(f *Fleet, c *Comparison) []string {
	type start struct {
		host    int
		at      time.Time // by the controller's clock
		unknown bool
	}
	bySync := map[int64][]start{}
	var syncs []int64
	for gi, g := range c.Groups {
		for _, r := range g.Records {
			if r.StartAt == nil || r.ActualStart == nil {
				continue
			}
			off, ok := r.Clock.Offset()
			key := r.StartAt.UnixNano()
			if _, seen := bySync[key]; !seen {
				syncs = append(syncs, key)
			}
			bySync[key] = append(bySync[key], start{host: gi, at: r.ActualStart.Add(-off), unknown: !ok})
		}
	}
	if len(syncs) == 0 {
		return nil
	}
	f.Synchronized = true
	if len(syncs) == 1 {
		at := time.Unix(0, syncs[0]).UTC()
		f.StartAt = &at
	}
	for _, key := range syncs {
		starts := bySync[key]
		first := starts[0].at
		for _, s := range starts {
			if s.at.Before(first) {
				first = s.at
			}
		}
		for _, s := range starts {
			h := &f.Hosts[s.host]
			skew := *record.MS(s.at.Sub(first))
			if h.StartSkewMS == nil || skew > *h.StartSkewMS {
				h.StartSkewMS = &skew
			}
			h.SkewUncorrected = h.SkewUncorrected || s.unknown
		}
	}
	var late, unknown []string
	for _, h := range f.Hosts {
		if h.StartSkewMS == nil {
			continue
		}
		if time.Duration(*h.StartSkewMS*float64(time.Millisecond)) > MaxSkew {
			late = append(late, fmt.Sprintf("%s +%s", h.Host, time.Duration(*h.StartSkewMS*float64(time.Millisecond)).Round(10*time.Millisecond)))
		}
		if h.SkewUncorrected {
			unknown = append(unknown, h.Host)
		}
	}
	var out []string
	if len(late) > 0 {
		out = append(out, fmt.Sprintf("start skew above %s: %s (%s): they did not start together, so their runs overlapped less than asked",
			MaxSkew, hostCount(len(late)), joinCapped(late, 5)))
	}
	if len(unknown) > 0 {
		out = append(out, fmt.Sprintf("clock offset unknown: %s (%s): their start skew is by their own clocks (give bench --clock-offset, as the fleet playbook does, or run chrony)",
			hostCount(len(unknown)), joinCapped(unknown, 5)))
	}
	return out
}

func hostCount(n int) string {
	if n == 1 {
		return "1 host"
	}
	return fmt.Sprintf("%d hosts", n)
}

// failedHosts are the hosts said to have failed, in the order given, then
// the expected ones with no record and no reason given.
func failedHosts(c *Comparison, opts Options) []FailedHost {
	var out []FailedHost
	seen := map[string]bool{}
	for _, fh := range opts.Failed {
		if fh.Host == "" || seen[fh.Host] {
			continue
		}
		seen[fh.Host] = true
		if fh.Reason == "" {
			fh.Reason = "failed (no reason given)"
		}
		out = append(out, fh)
	}
	for _, h := range opts.Expected {
		if h == "" || seen[h] || slices.ContainsFunc(c.Groups, func(g Group) bool { return g.Name == h }) {
			continue
		}
		seen[h] = true
		out = append(out, FailedHost{Host: h, Reason: "no record (expected: --expect-hosts)"})
	}
	return out
}

// rowParams are the workload parameters of r's first measured cell.
func rowParams(r Row) (workload.Workload, bool) {
	for _, cell := range r.Cells {
		for _, src := range cell.Sources {
			if src.Workload != nil {
				return src.Workload.Params, true
			}
		}
	}
	return workload.Workload{}, false
}
