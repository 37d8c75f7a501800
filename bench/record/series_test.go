package record

import "testing"

func TestSummarizeSeries(t *testing.T) {
	if s := SummarizeSeries(); s != (SeriesSummary{}) {
		t.Errorf("no repetitions: %+v", s)
	}
	if s := SummarizeSeries(Repetition{}, Repetition{}); s.HostSeconds != 0 || s.DeviceSeconds != 0 {
		t.Errorf("no series: %+v", s)
	}
	a := Repetition{
		HostSamples:   []HostSample{{CPUUserPct: 10, CPUIOWaitPct: 30, MemUsedBytes: 5, PageCacheBytes: 9}, {CPUUserPct: 20, CPUIOWaitPct: 10, MemUsedBytes: 7, PageCacheBytes: 8}},
		DeviceSamples: []DeviceSample{{UtilPercent: 100, QueueDepth: 4, AvgWaitMS: 2, IOs: 300}},
	}
	// An idle second (no I/O completed) weighs in the means, not the wait.
	b := Repetition{
		HostSamples:   []HostSample{{CPUUserPct: 30, CPUStealPct: 6, MemUsedBytes: 6, PageCacheBytes: 10}},
		DeviceSamples: []DeviceSample{{UtilPercent: 50, QueueDepth: 1, AvgWaitMS: 10, IOs: 100}, {}},
	}
	s := SummarizeSeries(a, b)
	want := SeriesSummary{HostSeconds: 3, CPUUserPct: 20, CPUIOWaitPct: 40.0 / 3, CPUStealPct: 2, MemUsedPeak: 7, PageCachePeak: 10,
		DeviceSeconds: 3, DeviceUtilPct: 50, DeviceQueue: 5.0 / 3, DeviceWaitMS: (2*300 + 10*100) / 400.0, DeviceIOs: 400}
	if s != want {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
	if s := SummarizeSeries(Repetition{DeviceSamples: []DeviceSample{{UtilPercent: 3}}}); s.DeviceSeconds != 1 || s.DeviceIOs != 0 || s.DeviceWaitMS != 0 {
		t.Errorf("no I/O completed: %+v", s)
	}
}
