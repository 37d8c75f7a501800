package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// FuzzReadFile puts arbitrary bytes in a store as a record file: ReadFile
// and List never panic, List skips what ReadFile refuses (with a warning
// naming the file) and returns what it accepts, and an accepted record
// marshals to JSON that reads back to the same record.
func FuzzReadFile(f *testing.F) {
	if b, err := os.ReadFile("testdata/record.golden.json"); err == nil {
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(bytes.Replace(b, []byte(Schema), []byte("diskprep/result/v2"), 1))
	}
	f.Add([]byte(`{"schema":"diskprep/result/v1","id":"x","workloads":null}`))
	f.Add([]byte(`{"schema":"diskprep/result/v1"}`))
	f.Add([]byte(`[]`))
	dir := f.TempDir()
	path := filepath.Join(dir, "20261130T061500Z-abcd.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		rec, rerr := ReadFile(path)
		entries, warnings, err := List(dir)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if rerr != nil {
			if rec != nil || len(entries) != 0 || len(warnings) != 1 || !strings.Contains(warnings[0], path) {
				t.Fatalf("ReadFile refused (%v); List gave %d entries, warnings %q", rerr, len(entries), warnings)
			}
			return
		}
		if rec.Schema != Schema || rec.ID == "" || len(entries) != 1 || len(warnings) != 0 {
			t.Fatalf("ReadFile accepted schema %q id %q; List gave %d entries, warnings %q", rec.Schema, rec.ID, len(entries), warnings)
		}
		first, err := json.Marshal(rec)
		if err != nil {
			t.Fatalf("a record ReadFile accepts does not marshal: %v", err)
		}
		var back Record
		if err := json.Unmarshal(first, &back); err != nil {
			t.Fatalf("marshalled record does not read back: %v", err)
		}
		second, err := json.Marshal(&back)
		if err != nil || !bytes.Equal(first, second) {
			t.Fatalf("record changes through JSON:\n%s\n%s (%v)", first, second, err)
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
