package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/diskprep/diskprep/bench/record"
)

// notes are every record's verdicts, one line per kind
// (record.BriefVerdicts), named by their column when there are several.
func notes(groups []Group) []string {
	var out []string
	for _, g := range groups {
		for _, r := range g.Records {
			who := g.Name
			if len(g.Records) > 1 {
				who += " (" + r.ID + ")"
			}
			for _, v := range record.BriefVerdicts(r) {
				if len(groups) > 1 || len(g.Records) > 1 {
					v = who + ": " + v
				}
				out = append(out, v)
			}
		}
	}
	return out
}

// Thresholds of the host checks: a column whose average iowait or steal
// differs from another's by this many points of all CPUs ran on a host
// doing something else (waiting for another disk, a neighbour VM).
const (
	IOWaitDiffPoints = 10.0
	StealDiffPoints  = 5.0
)

// hostChecks compare each column's host with the baseline's, over every
// second sampled during its measured runs: a host that spent a much
// larger share of its CPUs waiting for I/O (another disk busy) or stolen
// by the hypervisor (a neighbour VM) is said once per column.
func hostChecks(c *Comparison) []string {
	type avg struct {
		iowait, steal float64
		n             int
	}
	host := make([]avg, len(c.Groups))
	for gi, g := range c.Groups {
		for _, rec := range g.Records {
			for wi := range rec.Workloads {
				for _, r := range rec.Workloads[wi].Measured() {
					for _, s := range r.HostSamples {
						host[gi].iowait += s.CPUIOWaitPct
						host[gi].steal += s.CPUStealPct
						host[gi].n++
					}
				}
			}
		}
	}
	var out []string
	b := host[0]
	for gi := 1; gi < len(c.Groups); gi++ {
		o := host[gi]
		if b.n == 0 || o.n == 0 {
			continue
		}
		for _, x := range []struct {
			what   string
			bv, ov float64
			limit  float64
			why    string
		}{
			{"iowait", b.iowait / float64(b.n), o.iowait / float64(o.n), IOWaitDiffPoints, "the CPUs waited on I/O for very different shares of the time"},
			{"steal", b.steal / float64(b.n), o.steal / float64(o.n), StealDiffPoints, "the hypervisor took very different shares of the CPUs"},
		} {
			if math.Abs(x.bv-x.ov) >= x.limit {
				out = append(out, fmt.Sprintf("CPU %s %.1f%% in %s against %.1f%% in %s (over %d and %d sampled seconds): %s", x.what, x.ov, c.Groups[gi].Name, x.bv, c.Groups[0].Name, o.n, b.n, x.why))
			}
		}
	}
	return out
}

// rowChecks are the caveats of one row across its columns that the
// numbers alone do not show: a steady-state result against a fresh one,
// and differences the engine's own run-to-run cost could explain.
func rowChecks(row string, c *Comparison, members map[int][]member) (warnings []string, engineBound []engineNote) {
	var out []string
	kinds := map[string][]string{}
	var order []string
	// A set beside the lists: with thousands of columns, all fresh.
	inKind := map[[2]string]bool{}
	for gi, g := range c.Groups {
		for _, m := range members[gi] {
			k := "fresh (no --steady-state)"
			if ss := m.wr.SteadyState; ss != nil && ss.Reached {
				k = fmt.Sprintf("at steady state (round %d)", ss.Round)
			} else if ss != nil {
				k = "not at steady state"
			}
			if _, ok := kinds[k]; !ok {
				order = append(order, k)
			}
			if !inKind[[2]string{k, g.Name}] {
				inKind[[2]string{k, g.Name}] = true
				kinds[k] = append(kinds[k], g.Name)
			}
		}
	}
	steady, fresh := false, false
	for _, k := range order {
		steady = steady || strings.HasPrefix(k, "at steady")
		fresh = fresh || strings.HasPrefix(k, "fresh")
	}
	if steady && fresh {
		var parts []string
		for _, k := range order {
			parts = append(parts, strings.Join(kinds[k], ", ")+" "+k)
		}
		out = append(out, fmt.Sprintf("%s: compares a steady-state result with a fresh one (%s): a fresh SSD is faster than it stays; run both with --steady-state (after --precondition)", row, strings.Join(parts, "; ")))
	}
	return out, engineSpread(row, c, members)
}

// engineNote is one column of one row whose difference from the baseline
// lies within the engine's own spread of CPU time per I/O.
type engineNote struct {
	row, group   string
	gi           int
	diff, spread float64
}

// engineWarning says the engine-bound columns once: a store of a dozen
// runs had one such line per row and column, 20 of them saying the same.
func engineWarning(notes []engineNote, base string) []string {
	switch len(notes) {
	case 0:
		return nil
	case 1:
		n := notes[0]
		return []string{fmt.Sprintf("%s: %s and %s differ by %.0f ns per I/O per job, within the engine's own run-to-run spread of CPU time per I/O (%.0f ns): the difference may be the engine's, not the device's, so it is not judged",
			n.row, n.group, base, n.diff, n.spread)}
	}
	var pairs []string
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, n := range notes {
		pairs = append(pairs, n.row+" "+n.group)
		lo, hi = math.Min(lo, n.spread), math.Max(hi, n.spread)
	}
	spread := fmt.Sprintf("%.0f ns", lo)
	if hi-lo >= 1 {
		spread = fmt.Sprintf("%.0f–%.0f ns", lo, hi)
	}
	return []string{fmt.Sprintf("%d results (%s) differ from %s by less time per I/O per job than the engine's own run-to-run spread of CPU time per I/O (%s): the differences may be the engine's, not the device's, so they are not judged",
		len(notes), joinCapped(pairs, 4), base, spread)}
}

// engineSpread says when two columns differ by less time per I/O than the
// engine's own CPU cost per I/O varies from run to run. Per job thread,
// an I/O takes jobs/IOPS seconds of which the engine's CPU time is a part:
// a change in that no larger than the spread of that part may be the
// engine's, not the device's.
func engineSpread(row string, c *Comparison, members map[int][]member) (out []engineNote) {
	mi := slices.Index(c.Metrics, MetricIOPS)
	if mi < 0 || len(members[0]) == 0 {
		return nil
	}
	stats := func(gi int) (iops float64, jobs int, lo, hi float64, ok bool) {
		var vals []float64
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, m := range members[gi] {
			jobs = max(jobs, m.wr.Params.Jobs)
			for _, r := range m.wr.Measured() {
				if d := r.Dir(m.dir); d != nil {
					vals = append(vals, d.IOPS)
				}
				if cost := r.CPUNSPerIO(); cost > 0 {
					lo, hi = math.Min(lo, cost), math.Max(hi, cost)
				}
			}
		}
		if len(vals) == 0 || hi < lo {
			return 0, 0, 0, 0, false
		}
		return median(vals), max(jobs, 1), lo, hi, true
	}
	bIOPS, bJobs, bLo, bHi, ok := stats(0)
	if !ok || bIOPS <= 0 {
		return nil
	}
	for gi := 1; gi < len(c.Groups); gi++ {
		oIOPS, oJobs, oLo, oHi, ok := stats(gi)
		if !ok || oIOPS <= 0 {
			continue
		}
		diff := math.Abs(float64(oJobs)*1e9/oIOPS - float64(bJobs)*1e9/bIOPS)
		spread := math.Max(bHi-bLo, oHi-oLo)
		if diff > 0 && diff <= spread {
			out = append(out, engineNote{row: row, group: c.Groups[gi].Name, gi: gi, diff: diff, spread: spread})
		}
	}
	return out
}

// cipherNotes say, for each column on dm-crypt, how close the disk came
// through it to the cipher's own speed in memory (cryptsetup benchmark,
// in the record): its fastest read row against decryption, its fastest
// write row against encryption. Near 100% the CPU, not the disk, set the
// pace.
func cipherNotes(c *Comparison) []string {
	var out []string
	for gi, g := range c.Groups {
		var e *record.Encryption
		for _, r := range g.Records {
			if r.Target.Encryption != nil {
				e = r.Target.Encryption
				break
			}
		}
		if e == nil {
			continue
		}
		what := g.Name + ": " + EncryptionText(e)
		if e.CipherDecryptMiBps <= 0 {
			if e.CipherNote != "" {
				what += " (" + e.CipherNote + ")"
			}
			out = append(out, what)
			continue
		}
		var parts []string
		over := false
		for _, dir := range []struct {
			name, doing, verb string
			mibps             float64
		}{{"read", "reading", "decrypt", e.CipherDecryptMiBps}, {"write", "writing", "encrypt", e.CipherEncryptMiBps}} {
			best, row := 0.0, ""
			for _, r := range c.Rows {
				if cell := r.Cells[gi]; r.Dir == dir.name && cell.Present && len(cell.Metrics) > 0 && cell.Metrics[0].Metric == MetricMBps && cell.Metrics[0].Median > best {
					best, row = cell.Metrics[0].Median, r.Name
				}
			}
			if row == "" || dir.mibps <= 0 {
				continue
			}
			mem := dir.mibps * (1 << 20) / 1e6
			parts = append(parts, fmt.Sprintf("%.0f%% of the cipher's in-memory speed %s (%s %.0f MB/s, %s %.0f MB/s)", best/mem*100, dir.doing, row, best, dir.verb, mem))
			over = over || best > mem
		}
		if len(parts) == 0 {
			out = append(out, what)
			continue
		}
		note := what + ": the disk through dm-crypt reached " + strings.Join(parts, " and ")
		if over {
			// cryptsetup benchmark goes through the user-space crypto
			// interface, one run, on whatever else the CPU was doing.
			note += " (over 100%: the cipher was not what set the pace; cryptsetup benchmark's one run in memory read lower)"
		}
		out = append(out, note)
	}
	return out
}
