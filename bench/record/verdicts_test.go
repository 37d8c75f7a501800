package record

import (
	"reflect"
	"testing"

	"github.com/diskprep/diskprep/bench/workload"
)

func TestVerdicts(t *testing.T) {
	wr := func(name string, runs int, stop string, ss *SteadyState) WorkloadResult {
		w := WorkloadResult{Params: workload.Workload{Name: name}, RepeatStop: stop, SteadyState: ss}
		for i := 0; i < runs; i++ {
			w.Runs = append(w.Runs, Repetition{Index: i + 1, Read: &DirResult{IOs: 1000}, CPUSysS: 0.002})
		}
		w.Summarize()
		return w
	}
	rec := &Record{
		Precondition: &Precondition{Passes: 2, BlockBytes: 128 << 10, DeviceBytes: 4e9, BWBytesPerS: 1.5e9},
		Workloads: []WorkloadResult{
			wr("a", 3, "stopped after 3 runs: the 95% interval of the median is within ±1.0% (goal ±3.5%)", nil),
			wr("b", 10, "stopped at the most runs allowed, 10: the 95% interval of the median is ±5.0%, wider than the goal ±3.5%", nil),
		},
		Health: &Health{Device: "/dev/sdb", Note: "not read: smartctl not found (install smartmontools to record the disk's temperature, wear and error counters)"},
	}
	engine := "engine CPU time per I/O (user+sys, all jobs; 1 s over it is the most IOPS one core of this engine can drive): a 2.00 µs, b 2.00 µs"
	want := []string{
		"preconditioned: the device (4.0 GB) written 2 times with 128 KiB sequential writes before the workloads, 1500 MB/s",
		"a: stopped after 3 runs: the 95% interval of the median is within ±1.0% (goal ±3.5%)",
		"b: stopped at the most runs allowed, 10: the 95% interval of the median is ±5.0%, wider than the goal ±3.5%",
		engine,
		"device health: not read: smartctl not found (install smartmontools to record the disk's temperature, wear and error counters)",
	}
	if got := Verdicts(rec); !reflect.DeepEqual(got, want) {
		t.Errorf("Verdicts:\n%q\nwant\n%q", got, want)
	}
	brief := []string{want[0], "runs of --repeat auto: a 3, b 10 (not stable)", engine, want[4]}
	if got := BriefVerdicts(rec); !reflect.DeepEqual(got, brief) {
		t.Errorf("BriefVerdicts:\n%q\nwant\n%q", got, brief)
	}
	if got := Verdicts(&Record{}); len(got) != 0 {
		t.Errorf("a bare record has verdicts %q", got)
	}
}
