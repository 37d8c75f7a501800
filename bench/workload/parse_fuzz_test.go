package workload

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// renderSpec writes w back as a SPEC with every key, in the units ParseSpec
// reads (bytes, Go durations), so that parse(render(w)) can be checked.
func renderSpec(w Workload) string {
	b := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	return fmt.Sprintf("name=%s,rw=%s,bs=%d,size=%d,offset=%d,jobs=%d,iodepth=%d,runtime=%s,ramp=%s,rwmixread=%d,fsync=%s,seed=%d,direct=%s,engine=%s,data=%s",
		w.Name, w.RW, w.BlockBytes, w.SizeBytes, w.OffsetBytes, w.Jobs, w.IODepth, w.Runtime, w.Ramp,
		w.RWMixRead, b(w.Fsync), w.Seed, b(w.Direct), w.Engine, w.Data)
}

// FuzzParseSpec: a SPEC that parses re-renders and re-parses to the same
// workload; a SPEC that does not gives a one-line usage error. Validate
// never panics on whatever was parsed.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"name=seqread,rw=read,bs=32M,size=2G,jobs=16,iodepth=1,runtime=10s",
		"rw=randrw,bs=4k,numjobs=4,iodepth=32,rwmixread=70,ioengine=io_uring,data=compress:50",
		"rw=write,blocksize=1M,size=8G,end_fsync=1,direct=0,randseed=0x10,ramp_time=2s",
		"rw=randread,bs=4k,size=256M,runtime=0,offset=1M,engine=psync,data=zeros",
		"name=a , rw = write ,, bs=512",
		"rw=readwrite", "jobs=1600", "bs=4k,bs=8k", "nokey", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		w, given, err := ParseSpec(spec, DefaultWorkload())
		if err != nil {
			if !errors.Is(err, ErrUsage) || strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("ParseSpec(%q): bad error %q", spec, err)
			}
			return
		}
		if w.Name == "" {
			t.Fatalf("ParseSpec(%q) gave an unnamed workload", spec)
		}
		for k := range given {
			if _, ok := specKeys[k]; !ok {
				t.Fatalf("ParseSpec(%q) reports unknown key %q as given", spec, k)
			}
		}
		_ = w.Validate()
		again := renderSpec(w)
		w2, _, err := ParseSpec(again, DefaultWorkload())
		if err != nil {
			t.Fatalf("ParseSpec(%q) = %+v, which renders as %q and fails: %v", spec, w, again, err)
		}
		if !reflect.DeepEqual(w, w2) {
			t.Fatalf("ParseSpec(%q) = %+v; rendered %q parses as %+v", spec, w, again, w2)
		}
	})
}

// Found by FuzzParseSpec: a value with a control character went raw into
// the error, which must stay one line.
func TestParseSpecErrorIsOneLine(t *testing.T) {
	for _, spec := range []string{"rw=0\r0", "rw=a\nb", "engine=x\x1b[2J", "bs=4k\x00"} {
		_, _, err := ParseSpec(spec, DefaultWorkload())
		if !errors.Is(err, ErrUsage) || strings.ContainsFunc(err.Error(), func(r rune) bool { return r < ' ' }) {
			t.Errorf("ParseSpec(%q): %q", spec, err)
		}
	}
	_, _, err := ParseSpec("rw=nope", DefaultWorkload())
	if err == nil || !strings.Contains(err.Error(), ": rw=nope: ") {
		t.Errorf("a printable value is shown as typed: %v", err)
	}
}
