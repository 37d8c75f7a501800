package record

import (
	"fmt"
	"strings"

	"github.com/diskprep/diskprep/internal/units"
)

// Verdicts are the lines every report shows about how a record's numbers
// came about, beside its warnings: the device fill before the run, why
// --repeat auto stopped, the --steady-state verdict, the engine's own cost
// per I/O and the disk's health before and after. Empty for a record
// with none of these.
func Verdicts(rec *Record) []string {
	var per []string
	for _, wr := range rec.Workloads {
		if wr.RepeatStop != "" {
			per = append(per, wr.Params.Name+": "+wr.RepeatStop)
		}
		if v := wr.SteadyState.Verdict(); v != "" {
			per = append(per, wr.Params.Name+": "+v)
		}
	}
	return verdictLines(rec, per)
}

// BriefVerdicts are Verdicts with one line per kind, for a comparison of
// several records: the runs of each workload under --repeat auto and the
// steady-state round of each under --steady-state each in one line.
func BriefVerdicts(rec *Record) []string {
	var reps, steady []string
	for _, wr := range rec.Workloads {
		name := wr.Params.Name
		if wr.RepeatStop != "" {
			r := fmt.Sprintf("%s %d", name, len(wr.Runs))
			if strings.HasPrefix(wr.RepeatStop, "stopped at the most runs allowed") {
				r += " (not stable)"
			}
			reps = append(reps, r)
		}
		if ss := wr.SteadyState; ss != nil && ss.Reached {
			steady = append(steady, fmt.Sprintf("%s reached at round %d", name, ss.Round))
		} else if ss != nil {
			steady = append(steady, fmt.Sprintf("%s not reached in %d rounds", name, len(ss.Values)))
		}
	}
	var per []string
	if len(reps) > 0 {
		per = append(per, "runs of --repeat auto: "+strings.Join(reps, ", "))
	}
	if len(steady) > 0 {
		per = append(per, "steady state: "+strings.Join(steady, ", "))
	}
	return verdictLines(rec, per)
}

// verdictLines puts the per-workload lines between the record's
// precondition and its engine cost and health.
func verdictLines(rec *Record, per []string) []string {
	var out []string
	if p := rec.Precondition; p != nil {
		out = append(out, fmt.Sprintf("preconditioned: the device (%.1f GB) written %d times with %s sequential writes before the workloads, %.0f MB/s",
			float64(p.DeviceBytes)/1e9, p.Passes, sizeText(p.BlockBytes), p.BWBytesPerS/1e6))
	}
	out = append(out, per...)
	var cost []string
	for _, wr := range rec.Workloads {
		if s := wr.EngineCPUNSPerIO; s != nil && s.N > 0 {
			c := wr.Params.Name + " " + units.FormatNanoseconds(s.Median)
			if s.N > 1 && s.Min != s.Max {
				c += " (" + units.FormatNanoseconds(s.Min) + "–" + units.FormatNanoseconds(s.Max) + ")"
			}
			cost = append(cost, c)
		}
	}
	if len(cost) > 0 {
		out = append(out, "engine CPU time per I/O (user+sys, all jobs; 1 s over it is the most IOPS one core of this engine can drive): "+strings.Join(cost, ", "))
	}
	if h := rec.Health; h != nil {
		out = append(out, h.Summary())
	}
	return out
}

// Summary is the health in one line: before → after of each value known.
func (h *Health) Summary() string {
	if h.Before == nil && h.After == nil {
		return "device health: " + h.Note
	}
	b, a := h.Before, h.After
	if b == nil {
		b = a
	}
	if a == nil {
		a = b
	}
	var parts []string
	if b.TemperatureC != nil || a.TemperatureC != nil {
		parts = append(parts, fmt.Sprintf("temperature %s → %s °C", optF(b.TemperatureC), optF(a.TemperatureC)))
	}
	if a.PowerOnHours != nil {
		parts = append(parts, fmt.Sprintf("%d power-on hours", *a.PowerOnHours))
	}
	if a.PercentUsed != nil {
		parts = append(parts, fmt.Sprintf("%s%% used", optF(a.PercentUsed)))
	}
	if b.MediaErrors != nil || a.MediaErrors != nil {
		parts = append(parts, fmt.Sprintf("media errors %s → %s", optU(b.MediaErrors), optU(a.MediaErrors)))
	}
	if b.CRCErrors != nil || a.CRCErrors != nil {
		parts = append(parts, fmt.Sprintf("CRC errors %s → %s", optU(b.CRCErrors), optU(a.CRCErrors)))
	}
	if a.Throttled {
		parts = append(parts, "throttled")
	}
	s := "device health of " + h.Device
	if h.Tool != "" {
		s += " (" + h.Tool + ")"
	}
	if len(parts) == 0 {
		return s + ": the disk reports none of temperature, hours, wear or error counters"
	}
	if h.Note != "" {
		parts = append(parts, h.Note)
	}
	return s + ": " + strings.Join(parts, ", ")
}

func optF(v *float64) string {
	if v == nil {
		return "?"
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", *v), "0"), ".")
}

func optU(v *uint64) string {
	if v == nil {
		return "?"
	}
	return fmt.Sprint(*v)
}

func sizeText(b uint64) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}
