// Package compare lines up result records side by side: it groups them (by
// label, filesystem, host or device), aligns their workloads by what they
// did (their parameters; the name is a label), pools repetitions, and says per cell whether a change against the first
// group (the baseline) is larger than the run-to-run noise. It is pure: it
// reads records and returns a Comparison that bench/report renders.
package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/hwinfo"
)

// ErrUsage is wrapped by errors caused by bad options (an unknown --by).
var ErrUsage = errors.New("usage")

// usageError marks err as bad input without adding words to its message.
type usageError struct{ err error }

func (u usageError) Error() string        { return u.err.Error() }
func (u usageError) Unwrap() error        { return u.err }
func (u usageError) Is(target error) bool { return target == ErrUsage }

// ErrNothing is returned when there is nothing to compare.
var ErrNothing = errors.New("nothing to compare")

// Ways to group records into columns.
const (
	ByLabel  = "label"
	ByFS     = "fs"
	ByHost   = "host"
	ByDevice = "device"
	// ByStack groups by the kind of storage under the target: "raid1",
	// "lvm linear", "single disk" (hwinfo.Topology of the record's stack).
	ByStack  = "stack"
	ByRecord = "record" // one column per record: what auto grouping falls back to
)

// ByNames lists the accepted --by values.
var ByNames = []string{ByLabel, ByFS, ByHost, ByStack, ByDevice, ByRecord}

// Metric names of a cell.
const (
	MetricMBps   = "MB/s"
	MetricIOPS   = "IOPS"
	MetricLatP99 = "p99 latency"
	// MetricHostCPU is the host's busy CPU time per I/O of the target
	// device, in µs (record.Repetition.HostCPUNSPerIO): what a layer
	// that computes (encryption) costs beside the disk's own time.
	MetricHostCPU = "host CPU per I/O"
)

// Verdicts of a non-baseline cell.
const (
	VerdictBaseline    = "baseline"
	VerdictSignificant = "significant"
	VerdictSame        = "no significant difference"
	VerdictTooFew      = "n too small to judge"
	VerdictMissing     = "missing"
	// VerdictUnstable: a side's repetitions drifted during the run (a
	// trend in run order), so the difference says nothing either way.
	VerdictUnstable = "unstable"
	// VerdictEngineBound: the columns differ by less time per I/O than
	// the engine's own CPU cost per I/O varies: not the device's to judge.
	VerdictEngineBound = "engine-bound"
)

// Options steer a comparison.
type Options struct {
	By      string // "" = label when labels differ, else the first of fs, host, device that differs, else record
	Latency bool   // add a p99 latency line per row
	// CPU adds the host's CPU time per I/O (MetricHostCPU) per row.
	CPU bool
	// Baseline names the group every other is compared against; "" keeps
	// the first group (the records' order) as the baseline.
	Baseline string
	// Expected are the hosts a fleet run was to have records of: those
	// without any are named among the failed hosts. By host only.
	Expected []string
	// Failed are hosts known to have failed, each with its one-line
	// reason (the fleet playbook's). By host only.
	Failed []FailedHost
}

// Comparison is the whole result: what was grouped how, the shared
// environment, one row per workload direction, and the caveats.
type Comparison struct {
	By     string `json:"by"`
	AutoBy bool   `json:"by_chosen_automatically"`
	// Split names the facts an automatic grouping split columns by
	// further, so that no column pools different hosts, targets or sets:
	// host, fs, device, target, set.
	Split  []string `json:"split_by,omitempty"`
	Method string   `json:"method"`
	Alpha  float64  `json:"alpha"`
	// Tested counts the cells whose change was tested; Selected those
	// Benjamini–Hochberg kept at Alpha; CILevel is every interval's level
	// (1 - max(Selected,1)·Alpha/Tested: false-coverage adjusted).
	Tested   int     `json:"tested"`
	Selected int     `json:"selected"`
	CILevel  float64 `json:"ci_level"`
	// Drifted counts the sides (a column's runs of a workload) whose
	// repetitions trended during the run (Mann–Kendall, corrected).
	Drifted     int      `json:"drifted,omitempty"`
	Metrics     []string `json:"metrics"`
	Environment []Field  `json:"environment"` // identity shared by every record
	Groups      []Group  `json:"groups"`
	Rows        []Row    `json:"rows"`
	Warnings    []string `json:"warnings,omitempty"`
	// Notes say how the records' numbers came about (record.Verdicts:
	// repetitions, steady state, engine cost, device health), per column.
	Notes []string `json:"notes,omitempty"`
	// Fleet is the summary by host (fleet.go), when grouped by host.
	Fleet *Fleet `json:"fleet,omitempty"`
}

// Field is one named identity fact.
type Field struct {
	Key   string `json:"key"`
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Group is one column: the records sharing a grouping value.
type Group struct {
	Name      string   `json:"name"`
	RecordIDs []string `json:"record_ids"`
	// Identity is what sets this column apart from the others (facts not
	// shared by all records), in the order of Comparison.Environment's keys.
	Identity []Field `json:"identity,omitempty"`
	// Records are the group's records, for renderers that draw the raw
	// repetitions (time series); not part of the JSON output.
	Records []*record.Record `json:"-"`
	parts   []string         // the name's parts: the --by value, then each split's
}

// Row is one workload direction across all groups.
type Row struct {
	Name     string `json:"name"` // randread, seq1m-q8t1-read
	Workload string `json:"workload"`
	Dir      string `json:"dir"` // read or write
	// Params are the baseline's workload parameters (differences are warnings).
	Params string `json:"params"`
	Cells  []Cell `json:"cells"` // one per group, in group order
	// Baseline is the index of the group the row's changes are against:
	// 0, or the first group that has the row when the baseline lacks it.
	Baseline int `json:"baseline_group"`
	// NoiseFloor is what the row's run-to-run spread lets it tell apart;
	// nil with fewer than 2 runs a column.
	NoiseFloor *NoiseFloor `json:"noise_floor,omitempty"`
}

// Cell is one row in one group.
type Cell struct {
	Present bool `json:"present"`
	N       int  `json:"n"` // repetitions pooled
	// Metrics are MB/s, IOPS and (when asked) p99 latency in microseconds,
	// in Comparison.Metrics order.
	Metrics []Value `json:"metrics,omitempty"`
	// LatencyNS are the medians over repetitions of p50, p90, p99, p99.9 in ns.
	LatencyNS [4]float64 `json:"latency_percentiles_ns"`
	// Sources are the workload directions pooled into the cell, for
	// renderers that draw the repetitions (time series); not in the JSON.
	Sources []Source `json:"-"`
}

// Source is one record's workload direction pooled into a cell.
type Source struct {
	Record   *record.Record
	Workload *record.WorkloadResult
	Dir      string // read or write
}

// Value is one metric of a cell: the repetitions, their median and range,
// and against the baseline the change and its verdict.
type Value struct {
	Metric string    `json:"metric"`
	Values []float64 `json:"values"`
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	// ChangePct is (ratio - 1) * 100, the ratio Hodges–Lehmann's: the
	// median of the ratios of each run to each baseline run; nil for the
	// baseline and when the baseline is zero.
	ChangePct *float64 `json:"change_pct,omitempty"`
	Verdict   string   `json:"verdict"`
	// Better is true when a significant change is an improvement (higher
	// throughput, lower latency).
	Better bool     `json:"better,omitempty"`
	P      *float64 `json:"p,omitempty"`
	Exact  bool     `json:"p_exact,omitempty"`
	// Q is P corrected for the comparison's many cells (Benjamini–Hochberg).
	Q *float64 `json:"q,omitempty"`
	// CILowPct and CIHighPct bound the change at CILevel (the test's own
	// interval, Lehmann's, false-coverage adjusted across the cells).
	CILevel   float64  `json:"ci_level,omitempty"`
	CILowPct  *float64 `json:"ci_low_pct,omitempty"`
	CIHighPct *float64 `json:"ci_high_pct,omitempty"`
	// DriftPct is how far the side that drifted (DriftIn, a group) moved
	// during its runs (Sen's slope over the run), set on an unstable cell.
	DriftPct *float64 `json:"drift_pct,omitempty"`
	DriftIn  string   `json:"drift_in,omitempty"`
}

// LowerIsBetter says whether smaller values of metric are improvements.
func LowerIsBetter(metric string) bool { return metric == MetricLatP99 || metric == MetricHostCPU }

// MethodText names the statistics behind the verdicts, for every output:
// m cells tested, of which selected were called a change, and the level of
// every interval.
func MethodText(m, selected int, level float64) string {
	s := fmt.Sprintf("verdicts: two-sided Mann–Whitney U test on the pooled repetitions (exact, ties included, up to %d arrangements; "+
		"normal approximation with tie correction beyond), α=%.2f; with too few repetitions to ever reach p<α "+
		"(fewer than 4 per side, or 3 against fewer than 5) a cell says %q. "+
		"Change: the Hodges–Lehmann ratio (the median of every run's ratio to every baseline run); "+
		"interval: the ratios the same test does not reject (Lehmann), so a change is called only when its interval excludes none",
		exactLimit, Alpha, VerdictTooFew)
	s += ". Drift: each column's repetitions in run order, tested for a trend (Mann–Kendall, Benjamini–Hochberg across them); a cell whose side drifted says " + strconv.Quote(VerdictUnstable) + " with how far (Sen's slope)"
	if m > 1 {
		s += fmt.Sprintf(". %d cells tested at once: p-values corrected by Benjamini–Hochberg (%d selected), intervals at the matching false-coverage level %s (Benjamini–Yekutieli)",
			m, selected, LevelText(level))
	} else {
		s += fmt.Sprintf(", at the %s level", LevelText(level))
	}
	return s
}

// LevelText is an interval's level as a percentage: "95%", "99.4%".
func LevelText(level float64) string {
	return strconv.FormatFloat(math.Floor(level*1000+1e-9)/10, 'f', -1, 64) + "%"
}

// Compare groups recs and lines them up. recs are in the order the caller
// wants the columns to appear (the first group is the baseline).
func Compare(recs []*record.Record, opts Options) (*Comparison, error) {
	if len(recs) == 0 {
		return nil, ErrNothing
	}
	by, auto := opts.By, false
	if by == "" {
		by, auto = autoBy(recs), true
	}
	if !slices.Contains(ByNames, by) {
		return nil, usageError{fmt.Errorf("unknown --by %q (valid: %s)", by, strings.Join(ByNames, ", "))}
	}
	if by != ByHost && (len(opts.Expected) > 0 || len(opts.Failed) > 0) {
		return nil, usageError{fmt.Errorf("expected and failed hosts are a fleet's, compared --by host, not --by %s", by)}
	}
	c := &Comparison{By: by, AutoBy: auto, Alpha: Alpha, Metrics: []string{MetricMBps, MetricIOPS}}
	if opts.Latency {
		c.Metrics = append(c.Metrics, MetricLatP99)
	}
	if opts.CPU {
		c.Metrics = append(c.Metrics, MetricHostCPU)
	}
	c.Groups, c.Split = groupRecords(recs, by, auto)
	if opts.Baseline != "" {
		var ok bool
		if c.Groups, ok = pickBaseline(c.Groups, opts.Baseline); !ok {
			names := make([]string, len(c.Groups))
			for j, g := range c.Groups {
				names[j] = g.Name
			}
			return nil, usageError{fmt.Errorf("no group %q to use as the baseline (groups by %s: %s)", opts.Baseline, by, strings.Join(names, ", "))}
		}
	}
	c.Environment, c.Warnings = identities(c.Groups, append([]string{by}, c.Split...))
	c.Warnings = append(c.Warnings, recordWarnings(c.Groups)...)
	for _, r := range recs {
		if r.Partial {
			c.Warnings = append(c.Warnings, fmt.Sprintf("record %s is partial (interrupted): some repetitions or workloads are missing", r.ID))
		}
	}
	c.Rows, c.Warnings = rows(c, opts, c.Warnings)
	decide(c)
	c.Warnings = append(c.Warnings, hostChecks(c)...)
	c.Notes = append(notes(c.Groups), cipherNotes(c)...)
	var own []string
	for _, r := range c.Rows {
		if r.Baseline != 0 {
			own = append(own, r.Name)
		}
	}
	if len(own) > 0 {
		c.Warnings = append(c.Warnings, fmt.Sprintf("%s: not measured in the baseline %q: compared with the first column that has them", rowsText(own), c.Groups[0].Name))
	}
	if len(c.Rows) == 0 {
		return nil, fmt.Errorf("the records hold no measured workloads: %w", ErrNothing)
	}
	if by == ByHost {
		var ws []string
		c.Fleet, ws = fleetSummary(c, opts)
		c.Warnings = append(c.Warnings, ws...)
	}
	// One host of a fleet whose others failed is a fleet's report all
	// the same.
	if len(c.Groups) == 1 && (c.Fleet == nil || len(c.Fleet.Failed) == 0) {
		c.Warnings = append(c.Warnings, fmt.Sprintf("all records fall in one group (%s %q): nothing to compare against; try another --by", by, c.Groups[0].Name))
	}
	return c, nil
}

// autoBy picks the grouping: labels when they tell records apart, else the
// first of filesystem, host and device that differs, else each record alone.
func autoBy(recs []*record.Record) string {
	for _, by := range []string{ByLabel, ByFS, ByHost, ByStack, ByDevice} {
		seen := map[string]bool{}
		for _, r := range recs {
			if by == ByLabel && r.Label == "" || by == ByStack && r.Target.StackText == "" {
				// Unknown is no difference: records from before stacks
				// were recorded still group by device as they did.
				continue
			}
			seen[GroupKey(r, by)] = true
		}
		if len(seen) > 1 {
			return by
		}
	}
	return ByRecord
}

// GroupKey is the column a record falls into when grouped by by.
func GroupKey(r *record.Record, by string) string {
	switch by {
	case ByLabel:
		if r.Label != "" {
			return r.Label
		}
		return "(no label)"
	case ByFS:
		return fsOf(r)
	case ByHost:
		if r.Host.Hostname != "" {
			return r.Host.Hostname
		}
		return "(unknown host)"
	case ByDevice:
		return deviceOf(r)
	case ByStack:
		return stackOf(r)
	}
	return r.ID
}

// stackOf is the kind of storage the record measured: "raid1", "lvm
// linear", "single disk", or "(unknown stack)" for a record that predates
// the stack fields.
func stackOf(r *record.Record) string {
	if len(r.Target.Stack) == 0 && r.Target.StackText == "" {
		return "(unknown stack)"
	}
	return hwinfo.Topology(r.Target.Stack)
}

func fsOf(r *record.Record) string {
	switch {
	case r.Target.FSType != "":
		return r.Target.FSType
	case r.Target.Prepared != nil && r.Target.Prepared.FSType != "":
		return r.Target.Prepared.FSType
	case r.Target.Kind == "device":
		return "raw device"
	}
	return "(unknown fs)"
}

func deviceOf(r *record.Record) string {
	t := r.Target
	model := diskModel(t)
	name := t.Disk
	if name == "" {
		name = t.Device
	}
	if len(t.Stack) > 0 {
		// An array or LV is not its first disk: "md0 raid1 of sda+sdb".
		return hwinfo.DescribeStack("", t.Device, t.Stack)
	}
	switch {
	case name != "" && model != "":
		return name + " " + model
	case model != "":
		return model
	case name != "":
		return name
	case t.Path != "":
		return t.Path
	}
	return "(unknown device)"
}

func diskModel(t record.Target) string {
	m := strings.TrimSpace(t.Model)
	v := strings.TrimSpace(t.Vendor)
	if v != "" && v != "ATA" && !strings.HasPrefix(strings.ToLower(m), strings.ToLower(v)) {
		m = strings.TrimSpace(v + " " + m)
	}
	return m
}

// rows lines up the groups' workload directions, in order of first
// appearance (baseline first), and fills each cell. Two directions share
// a row only when their workloads' identities agree (identity.go): the
// name is a label, so an imported "seqread" and a bench run's
// "seq-32m-read" of the same parameters meet, and two "seqread" of
// different block sizes do not, even within a group. A record's own
// workloads never share a row (video-read and video-reread are alike).
func rows(c *Comparison, opts Options, warnings []string) ([]Row, []string) {
	var built []*rowBuild
	for gi, g := range c.Groups {
		for _, rec := range g.Records {
			built = placeRecord(built, gi, rec)
		}
	}
	names := rowNames(built)
	var engineBound []engineNote
	siblings := map[string][]int{}
	for ri, b := range built {
		siblings[b.name] = append(siblings[b.name], ri)
	}
	var out []Row
	by := c.By
	if len(c.Split) > 0 {
		by = "column"
	}
	// Rows missing from the same columns, and rows whose parameters
	// differ the same way, are said once, with their count: a store of
	// several sets leaves whole sets of rows absent from most columns.
	var missingOrder, diffOrder []string
	missingRows, diffRows := map[string][]string{}, map[string][]string{}
	for ri, b := range built {
		row := Row{Name: names[ri], Workload: b.workload, Dir: b.dir, Cells: make([]Cell, len(c.Groups))}
		var params []paramSet // per group, nil when absent
		var missing []string
		for gi, g := range c.Groups {
			cell, ps := gather(b.members[gi])
			row.Cells[gi] = cell
			params = append(params, ps)
			if !cell.Present {
				missing = append(missing, fmt.Sprintf("%q", g.Name))
			}
		}
		// Said once per row: rows of one name that did not match are
		// said once for all of them.
		sib := siblings[b.name]
		unmatched := false
		for _, si := range sib {
			for gi := range c.Groups {
				unmatched = unmatched || len(built[si].members[gi]) == 0
			}
		}
		switch {
		case len(sib) > 1 && sib[0] == ri && unmatched:
			var parts []string
			for _, si := range sib {
				var in []string
				for gi, g := range c.Groups {
					if len(built[si].members[gi]) > 0 {
						in = append(in, g.Name)
					}
				}
				parts = append(parts, strings.TrimSuffix(strings.TrimPrefix(names[si], b.name+" ("), ")")+" in "+strings.Join(in, ", "))
			}
			warnings = append(warnings, fmt.Sprintf("%s: not matched across %s, the parameters differ (%s): shown as %d rows", b.name, by, strings.Join(parts, "; "), len(sib)))
		case len(sib) == 1 && len(missing) > 0:
			key := joinCapped(missing, 6)
			if _, ok := missingRows[key]; !ok {
				missingOrder = append(missingOrder, key)
			}
			missingRows[key] = append(missingRows[key], row.Name)
		}
		var diff string
		row.Params, diff = paramDiffs(c.Groups, params)
		if diff != "" {
			if _, ok := diffRows[diff]; !ok {
				diffOrder = append(diffOrder, diff)
			}
			diffRows[diff] = append(diffRows[diff], row.Name)
		}
		judge(&row, c)
		ws, bound := rowChecks(row.Name, c, b.members)
		warnings = append(warnings, ws...)
		engineBound = append(engineBound, bound...)
		for _, n := range bound {
			gi := n.gi
			for mi := range row.Cells[gi].Metrics {
				// The host's CPU per I/O is the cost itself, not a time
				// per I/O the engine's own cost could fake: judged.
				if v := &row.Cells[gi].Metrics[mi]; v.Verdict == "" && c.Metrics[mi] != MetricHostCPU {
					v.Verdict = VerdictEngineBound
				}
			}
		}
		row.NoiseFloor = noiseFloor(&row)
		out = append(out, row)
	}
	warnings = append(warnings, engineWarning(engineBound, c.Groups[0].Name)...)
	for _, key := range missingOrder {
		warnings = append(warnings, fmt.Sprintf("%s: no measurement in %s %s", rowsText(missingRows[key]), by, key))
	}
	for _, diff := range diffOrder {
		warnings = append(warnings, fmt.Sprintf("%s: workload parameters differ, not only the %s: %s", rowsText(diffRows[diff]), by, diff))
	}
	return out, warnings
}

// rowsText names the rows a warning is about, counted when there are many.
func rowsText(rows []string) string {
	if len(rows) <= 4 {
		return strings.Join(rows, ", ")
	}
	return fmt.Sprintf("%d rows (%s)", len(rows), joinCapped(rows, 4))
}

// member is one workload direction of one record.
type member struct {
	wr  *record.WorkloadResult
	dir string
	rec *record.Record
}

// rowBuild is a row while records are placed into it.
type rowBuild struct {
	name, workload, dir string
	id                  identity
	members             map[int][]member // by group index
	params              paramSet         // the first member's, for names
}

// placeRecord puts each of rec's workload directions into the first row
// of its name and a compatible identity, else into the first compatible
// row, else into a new row; a row takes one direction per record.
func placeRecord(built []*rowBuild, gi int, rec *record.Record) []*rowBuild {
	type entry struct {
		m    member
		name string
		id   identity
	}
	var entries []entry
	for wi := range rec.Workloads {
		wr := &rec.Workloads[wi]
		for _, dir := range []string{"read", "write"} {
			if s, ok := wr.Summary[dir]; ok {
				entries = append(entries, entry{member{wr, dir, rec}, s.Name, identityOf(wr.Params, dir)})
			}
		}
	}
	used := map[int]bool{}
	placed := make([]int, len(entries))
	for i := range placed {
		placed[i] = -1
	}
	try := func(byName bool) {
		for i, e := range entries {
			if placed[i] >= 0 {
				continue
			}
			for ri, b := range built {
				if used[ri] || byName && b.name != e.name || !b.id.compatible(e.id) {
					continue
				}
				placed[i], used[ri] = ri, true
				break
			}
		}
	}
	try(true)
	try(false)
	for i, e := range entries {
		ri := placed[i]
		if ri < 0 {
			built = append(built, &rowBuild{name: e.name, workload: e.m.wr.Params.Name, dir: e.m.dir, id: identity{}, members: map[int][]member{}, params: paramsOf(e.m.wr.Params)})
			ri = len(built) - 1
		}
		b := built[ri]
		b.id.learn(e.id)
		b.members[gi] = append(b.members[gi], e.m)
	}
	return built
}

// rowNames are the rows' names, unique: rows of one name that did not
// match (different parameters) are told apart by the parameters that
// differ, "seqread (bs=1M)" and "seqread (bs=128k)".
func rowNames(built []*rowBuild) []string {
	out := make([]string, len(built))
	byName := map[string][]int{}
	for i, b := range built {
		out[i] = b.name
		byName[b.name] = append(byName[b.name], i)
	}
	for name, idx := range byName {
		if len(idx) < 2 {
			continue
		}
		var keys []string
		for _, kv := range built[idx[0]].params {
			k := kv[0]
			seen := map[string]bool{}
			for _, i := range idx {
				v, _ := built[i].params.get(k)
				seen[v] = true
			}
			if len(seen) > 1 {
				keys = append(keys, k)
			}
		}
		for _, i := range idx {
			var parts []string
			for _, k := range keys {
				v, ok := built[i].params.get(k)
				if !ok {
					v = "unknown"
				}
				parts = append(parts, k+"="+v)
			}
			if len(parts) == 0 {
				parts = []string{fmt.Sprintf("#%d", slices.Index(idx, i)+1)}
			}
			out[i] = name + " (" + strings.Join(parts, " ") + ")"
		}
	}
	return out
}

// gather pools every repetition of a row's members in one group.
func gather(members []member) (Cell, paramSet) {
	var cell Cell
	// Each repetition's figures with its start, put in run order below:
	// the drift test reads them so.
	type run struct {
		start         time.Time
		bw, iops, p99 float64
		cpu           float64 // µs per I/O; 0 when not recorded
		pct           [4]float64
		pctOf         []int
	}
	var runs []run
	var ps paramSet
	for _, m := range members {
		wr, dir := m.wr, m.dir
		cell.Sources = append(cell.Sources, Source{Record: m.rec, Workload: wr, Dir: dir})
		s := wr.Summary[dir]
		if ps == nil {
			ps = paramsOf(wr.Params)
		} else {
			ps = ps.merge(paramsOf(wr.Params))
		}
		n := 0
		for _, rep := range wr.Measured() {
			d := rep.Dir(dir)
			if d == nil {
				continue
			}
			n++
			runs = append(runs, run{start: rep.Start, bw: d.BWBytesPerS / 1e6, iops: d.IOPS, p99: d.LatNS.P99 / 1e3, cpu: rep.HostCPUNSPerIO / 1e3,
				pct: [4]float64{d.LatNS.P50, d.LatNS.P90, d.LatNS.P99, d.LatNS.P999}, pctOf: []int{0, 1, 2, 3}})
		}
		if n == 0 {
			// A record with a summary but no repetitions (trimmed
			// by hand): its median counts as one value.
			runs = append(runs, run{start: m.rec.Start, bw: s.BWBytesPerS.Median / 1e6, iops: s.IOPS.Median, p99: s.LatP99NS.Median / 1e3,
				pct: [4]float64{s.LatP50NS.Median, 0, s.LatP99NS.Median, 0}, pctOf: []int{0, 2}})
		}
	}
	if len(runs) == 0 {
		return cell, nil
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].start.Before(runs[j].start) })
	var bw, iops, p99, cpu []float64
	var pct [4][]float64
	for _, r := range runs {
		bw, iops, p99 = append(bw, r.bw), append(iops, r.iops), append(p99, r.p99)
		if r.cpu > 0 {
			cpu = append(cpu, r.cpu)
		}
		for _, i := range r.pctOf {
			pct[i] = append(pct[i], r.pct[i])
		}
	}
	cell.Present, cell.N = true, len(bw)
	cell.Metrics = []Value{valueOf(MetricMBps, bw), valueOf(MetricIOPS, iops), valueOf(MetricLatP99, p99), valueOf(MetricHostCPU, cpu)}
	for i := range pct {
		cell.LatencyNS[i] = median(pct[i])
	}
	return cell, ps
}

func valueOf(metric string, vs []float64) Value {
	v := Value{Metric: metric, Values: vs, Median: median(vs), Min: math.Inf(1), Max: math.Inf(-1)}
	if len(vs) == 0 {
		// Not recorded (the host's CPU per I/O of an older record).
		v.Min, v.Max = 0, 0
	}
	for _, x := range vs {
		v.Min = math.Min(v.Min, x)
		v.Max = math.Max(v.Max, x)
	}
	return v
}

// judge sets each non-baseline cell's change and verdict against the
// baseline (the first group, or the first that has the row), and trims the metrics to the ones asked for.
func judge(row *Row, c *Comparison) {
	for gi := range row.Cells {
		cell := &row.Cells[gi]
		if !cell.Present {
			continue
		}
		picked := make([]Value, 0, len(c.Metrics))
		for _, m := range c.Metrics {
			if i := slices.IndexFunc(cell.Metrics, func(v Value) bool { return v.Metric == m }); i >= 0 {
				picked = append(picked, cell.Metrics[i])
			}
		}
		cell.Metrics = picked
	}
	// A row the baseline did not run (another set's workload) is judged
	// against the first column that ran it, and says so (Row.Baseline).
	bi := slices.IndexFunc(row.Cells, func(cell Cell) bool { return cell.Present })
	row.Baseline = max(bi, 0)
	base := row.Cells[row.Baseline]
	for mi := range c.Metrics {
		for gi := range row.Cells {
			cell := &row.Cells[gi]
			if !cell.Present {
				continue
			}
			v := &cell.Metrics[mi]
			if gi == row.Baseline {
				v.Verdict = VerdictBaseline
				continue
			}
			b := base.Metrics[mi]
			if r := hodgesLehmann(newRanked(b.Values, v.Values)); !math.IsInf(r, 0) && !math.IsNaN(r) {
				ch := (r - 1) * 100
				v.ChangePct = &ch
			}
			n1, n2 := len(b.Values), len(v.Values)
			if n1 < 3 || n2 < 3 || minAttainableP(n1, n2) > Alpha {
				v.Verdict = VerdictTooFew
				continue
			}
			_, p, exact := mannWhitney(b.Values, v.Values)
			v.P, v.Exact = &p, exact
			v.Verdict = "" // decide calls it, once every cell has its p
		}
	}
}

// tested is one cell decide judges: its value, the baseline's values,
// the metric's index and both groups' names.
type tested struct {
	v              *Value
	base           []float64
	mi             int
	name, baseName string
}

// decide gives every tested cell its verdict and interval, all cells of
// the comparison at once: Benjamini–Hochberg selects at Alpha, each
// interval is at the false-coverage level that goes with it, and a change
// is called better or worse only when selected and its interval excludes
// no change (by the test's inversion the two agree but for ties).
func decide(c *Comparison) {
	var cells, iops []tested
	var ps []float64
	for ri := range c.Rows {
		row := &c.Rows[ri]
		for gi := range row.Cells {
			cell := &row.Cells[gi]
			for mi := range cell.Metrics {
				v := &cell.Metrics[mi]
				if !cell.Present || v.P == nil || v.Verdict != "" {
					continue
				}
				if c.Metrics[mi] == MetricIOPS && slices.Contains(c.Metrics, MetricMBps) {
					// The same runs' MB/s over a fixed block size:
					// the same test, judged below with MB/s's family.
					iops = append(iops, tested{v: v, base: row.Cells[row.Baseline].Metrics[mi].Values, mi: mi,
						name: c.Groups[gi].Name, baseName: c.Groups[row.Baseline].Name})
					continue
				}
				cells = append(cells, tested{v: v, base: row.Cells[row.Baseline].Metrics[mi].Values, mi: mi,
					name: c.Groups[gi].Name, baseName: c.Groups[row.Baseline].Name})
				ps = append(ps, *v.P)
			}
		}
	}
	q, selected := benjaminiHochberg(ps, Alpha)
	c.Tested, c.Selected = len(cells), selected
	drifted := driftedSides(c, cells2values(cells), cells2values(iops))
	c.CILevel = 1 - Alpha
	if len(cells) > 0 {
		c.CILevel = 1 - float64(max(selected, 1))*Alpha/float64(len(cells))
	}
	c.Method = MethodText(c.Tested, c.Selected, c.CILevel)
	cut := float64(selected) * Alpha / float64(max(len(cells), 1))
	for i := range iops {
		// q of the MB/s cell with the same p (the same runs): found by
		// value, the IOPS cell holding its own copy of p.
		for j, t := range cells {
			if *t.v.P == *iops[i].v.P {
				qi := q[j]
				iops[i].v.Q = &qi
				break
			}
		}
	}
	all := append(append([]tested(nil), cells...), iops...)
	ks := lehmannKs{level: c.CILevel}
	for i, t := range all {
		v := t.v
		if i < len(cells) {
			v.Q = &q[i]
		}
		v.Verdict = VerdictSame
		_, lo, hi, ok := shiftIntervalK(t.base, v.Values, ks.get(len(t.base), len(v.Values)))
		if !ok {
			continue
		}
		lo, hi = (lo-1)*100, (hi-1)*100
		v.CILevel, v.CILowPct, v.CIHighPct = c.CILevel, &lo, &hi
		if selected > 0 && *v.P <= cut && (lo > 0 || hi < 0) {
			v.Verdict = VerdictSignificant
			v.Better = (lo > 0) != LowerIsBetter(c.Metrics[t.mi])
		}
	}
	for _, t := range all {
		for _, side := range []struct {
			vs   []float64
			name string
		}{{t.base, t.baseName}, {t.v.Values, t.name}} {
			d, ok := drifted[&side.vs[0]]
			if !ok || t.v.DriftPct != nil && math.Abs(*t.v.DriftPct) >= math.Abs(d) {
				continue
			}
			t.v.Verdict, t.v.Better = VerdictUnstable, false
			t.v.DriftPct, t.v.DriftIn = &d, side.name
		}
	}
}

func cells2values(cells []tested) [][]float64 {
	var out [][]float64
	for _, t := range cells {
		out = append(out, t.base, t.v.Values)
	}
	return out
}

// driftedSides tests each side's values (in run order) for a trend, all
// sides of the comparison at once (Benjamini–Hochberg at Alpha; twins by
// the same cut), and
// returns the drift of those that moved, by their first value's address
// (a baseline is one side however many cells it is compared with).
func driftedSides(c *Comparison, sides, twins [][]float64) map[*float64]float64 {
	var keys [][]float64
	var ps []float64
	seen := map[*float64]bool{}
	for _, vs := range sides {
		if len(vs) == 0 || seen[&vs[0]] {
			continue
		}
		seen[&vs[0]] = true
		_, p := mannKendall(vs)
		keys, ps = append(keys, vs), append(ps, p)
	}
	_, selected := benjaminiHochberg(ps, Alpha)
	out := map[*float64]float64{}
	cut := float64(selected) * Alpha / float64(max(len(ps), 1))
	for i, vs := range keys {
		if selected > 0 && ps[i] <= cut {
			out[&vs[0]] = driftPct(vs)
		}
	}
	c.Drifted = len(out)
	// The IOPS twins of MB/s sides (the same runs) are judged by the same
	// cut, outside the family, which they would only double.
	for _, vs := range twins {
		if len(vs) == 0 || seen[&vs[0]] {
			continue
		}
		seen[&vs[0]] = true
		if _, p := mannKendall(vs); selected > 0 && p <= cut {
			out[&vs[0]] = driftPct(vs)
		}
	}
	return out
}

// recordWarnings carries the records' own warnings (page cache, noisy
// runtimes, compressing filesystems, imported identity) into the
// comparison, once each: "all records: ..." when every group has it, else
// naming the groups.
func recordWarnings(groups []Group) []string {
	var order []string
	in := map[string][]string{}
	// Sets beside the lists: a warning every record of a fleet's store
	// carries is in thousands of columns.
	inSet := map[[2]string]bool{}
	for _, g := range groups {
		for _, r := range g.Records {
			ws := append([]string(nil), r.Warnings...)
			for _, wr := range r.Workloads {
				ws = append(ws, wr.Warnings...)
			}
			for _, w := range ws {
				if _, ok := in[w]; !ok {
					order = append(order, w)
				}
				if !inSet[[2]string{w, g.Name}] {
					inSet[[2]string{w, g.Name}] = true
					in[w] = append(in[w], g.Name)
				}
			}
		}
	}
	// "seq1m-read: runtime 2s is under 3s" for every workload and column
	// becomes one line naming the workloads and the columns.
	type merged struct {
		names       []string
		rest        string
		who         []string
		has, hasWho map[string]bool
	}
	var lines []*merged
	add := func(names []string, rest string, who []string) {
		i := slices.IndexFunc(lines, func(m *merged) bool { return m.rest == rest && (len(m.names) > 0) == (len(names) > 0) })
		if i < 0 {
			lines = append(lines, &merged{rest: rest, has: map[string]bool{}, hasWho: map[string]bool{}})
			i = len(lines) - 1
		}
		m := lines[i]
		for _, n := range names {
			if !m.has[n] {
				m.has[n] = true
				m.names = append(m.names, n)
			}
		}
		for _, g := range who {
			if !m.hasWho[g] {
				m.hasWho[g] = true
				m.who = append(m.who, g)
			}
		}
	}
	for _, w := range order {
		name, rest, ok := strings.Cut(w, ": ")
		if !ok || strings.ContainsAny(name, " ,") {
			add(nil, w, in[w])
			continue
		}
		add([]string{name}, rest, in[w])
	}
	var out []string
	for _, m := range lines {
		who := joinCapped(m.who, 3)
		if len(m.who) == len(groups) && len(groups) > 1 {
			who = "all records"
		}
		w := m.rest
		if len(m.names) > 0 {
			w = rowsText(m.names) + ": " + m.rest
		}
		out = append(out, who+": "+w)
	}
	return out
}
