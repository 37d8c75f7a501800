package workload

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		spec string
		want func(w *Workload) // edits DefaultWorkload into the expected value
		keys []string
	}{
		{
			spec: "name=seqread,rw=read,bs=32M,size=2G,jobs=16,iodepth=1,runtime=10s",
			want: func(w *Workload) {
				w.Name, w.RW, w.BlockBytes, w.SizeBytes, w.Jobs, w.IODepth, w.Runtime = "seqread", "read", 32<<20, 2<<30, 16, 1, 10*time.Second
			},
			keys: []string{"name", "rw", "bs", "size", "jobs", "iodepth", "runtime"},
		},
		{
			spec: "rw=randrw,rwmixread=70,bs=4k,iodepth=32,engine=io_uring,ramp=2s,seed=42,fsync=1,direct=0,offset=1M,data=compress:50",
			want: func(w *Workload) {
				w.RW, w.RWMixRead, w.BlockBytes, w.IODepth, w.Engine = "randrw", 70, 4096, 32, "io_uring"
				w.Ramp, w.Seed, w.Fsync, w.Direct, w.OffsetBytes, w.Data = 2*time.Second, 42, true, false, 1<<20, "compress:50"
				w.Name = "randrw-4k-q32t1"
			},
			keys: []string{"rw", "rwmixread", "bs", "iodepth", "engine", "ramp", "seed", "fsync", "direct", "offset", "data"},
		},
		{
			// fio spellings people paste, spaces and a trailing comma.
			spec: " numjobs=4, blocksize=128k, ioengine=psync, runtime=1m, rw=write, data=zeros,",
			want: func(w *Workload) {
				w.Jobs, w.BlockBytes, w.Engine, w.Runtime, w.RW, w.Data = 4, 128<<10, "sync", time.Minute, "write", "zeros"
				w.Name = "write-128k-q1t4"
			},
			keys: []string{"jobs", "bs", "engine", "runtime", "rw", "data"},
		},
		{
			spec: "rw=read,runtime=0",
			want: func(w *Workload) { w.Runtime = 0; w.Name = "read-4k-q1t1" },
			keys: []string{"rw", "runtime"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			got, given, err := ParseSpec(tc.spec, DefaultWorkload())
			if err != nil {
				t.Fatal(err)
			}
			want := DefaultWorkload()
			tc.want(&want)
			if !equalWorkload(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if len(given) != len(tc.keys) {
				t.Errorf("given keys %v, want %v", given, tc.keys)
			}
			for _, k := range tc.keys {
				if !given[k] {
					t.Errorf("key %s not marked given", k)
				}
			}
			if err := got.Validate(); err != nil {
				t.Errorf("valid spec fails validation: %v", err)
			}
		})
	}
}

func equalWorkload(a, b Workload) bool {
	a.autoName, b.autoName = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct{ spec, msg string }{
		{"", "empty"},
		{"rw=read,colour=blue", `unknown key "colour"`},
		{"rw=sideways", "want read, write"},
		{"rw=readwrite", "use randrw"},
		{"bs=4q", "unknown unit"},
		{"bs", "not key=value"},
		{"bs=", "not key=value"},
		{"size=-1G", "size"},
		{"runtime=forever", "duration"},
		{"jobs=many", "want an integer"},
		{"direct=maybe", "want 1 or 0"},
		{"engine=libaio", "want auto, sync or io_uring"},
		{"data=compress:150", "percentage"},
		{"data=ones", "want random, zeros"},
		{"bs=4k,bs=8k", "given twice"},
		{"seed=-3", "non-negative"},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			_, _, err := ParseSpec(tc.spec, DefaultWorkload())
			if err == nil {
				t.Fatalf("ParseSpec(%q) accepted", tc.spec)
			}
			if !errors.Is(err, ErrUsage) {
				t.Errorf("error %v does not wrap ErrUsage", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not mention %q", err, tc.msg)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(w *Workload)
		msg  string
	}{
		{"bs not sector multiple", func(w *Workload) { w.BlockBytes = 1000 }, "multiple of 512"},
		{"bs zero", func(w *Workload) { w.BlockBytes = 0 }, "multiple of 512"},
		{"size below bs", func(w *Workload) { w.BlockBytes, w.SizeBytes = 1<<20, 4096 }, "smaller than bs"},
		{"jobs zero", func(w *Workload) { w.Jobs = 0 }, "jobs 0 out of range"},
		{"jobs huge", func(w *Workload) { w.Jobs = MaxJobs + 1 }, "out of range"},
		{"iodepth zero", func(w *Workload) { w.IODepth = 0 }, "iodepth 0"},
		{"iodepth huge", func(w *Workload) { w.IODepth = MaxIODepth + 1 }, "iodepth"},
		{"rwmix", func(w *Workload) { w.RWMixRead = 101 }, "rwmixread"},
		{"offset", func(w *Workload) { w.OffsetBytes = 100 }, "offset"},
		{"runtime tiny", func(w *Workload) { w.Runtime = time.Millisecond }, "too short"},
		{"name with space", func(w *Workload) { w.Name = "SEQ1M Q8T1" }, "letters, digits"},
		{"rw", func(w *Workload) { w.RW = "trim" }, "rw"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := DefaultWorkload()
			w.Name = "x"
			tc.edit(&w)
			err := w.Validate()
			if err == nil || !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Validate = %v, want usage error mentioning %q", err, tc.msg)
			}
		})
	}
}

// TestDistributionSpec: fio's random_distribution spelling is read, put
// one way (so the same skew is the same workload), and refused where it
// means nothing or says nothing.
func TestDistributionSpec(t *testing.T) {
	for spec, want := range map[string]string{
		"rw=randread,distribution=zipf:1.20":                "zipf:1.2",
		"rw=randread,random_distribution=zoned:90/10:10/90": "zoned:90/10:10/90",
		"rw=randrw,distribution=zoned:60/10:30/20:10/70":    "zoned:60/10:30/20:10/70",
		"rw=randwrite,distribution=random":                  "",
	} {
		w, _, err := ParseSpec(spec, DefaultWorkload())
		if err != nil || w.Distribution != want {
			t.Errorf("%s: %q %v, want %q", spec, w.Distribution, err, want)
			continue
		}
		if err := w.Validate(); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
	for _, spec := range []string{
		"rw=randread,distribution=zipf:0", "rw=randread,distribution=zipf:x", "rw=randread,distribution=pareto:0.9",
		"rw=randread,distribution=zoned:90/10:20/90", "rw=randread,distribution=zoned:90/10:10", "rw=randread,distribution=zoned:90/0:10/100",
	} {
		if _, _, err := ParseSpec(spec, DefaultWorkload()); err == nil || !errors.Is(err, ErrUsage) {
			t.Errorf("%s: err %v, want a usage error", spec, err)
		}
	}
	w, _, err := ParseSpec("rw=read,distribution=zipf:1.2", DefaultWorkload())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "needs random I/O") {
		t.Errorf("a skewed sequential read: %v", err)
	}
}
