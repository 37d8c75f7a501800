package fio

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/internal/redact"
)

// raw is a loose view of a fio file, to check the import against the
// figures fio itself wrote rather than against numbers copied by hand.
type raw struct {
	Version string `json:"fio version"`
	Jobs    []struct {
		Name  string                     `json:"jobname"`
		Read  map[string]json.RawMessage `json:"read"`
		Write map[string]json.RawMessage `json:"write"`
		Opts  map[string]string          `json:"job options"`
	} `json:"jobs"`
}

func readRaw(t *testing.T, name string) ([]byte, raw) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var r raw
	body := b
	if i := bytes.Index(b, []byte("\n{")); !bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) && i >= 0 {
		body = b[i+1:]
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b, r
}

func num(t *testing.T, m map[string]json.RawMessage, key string) float64 {
	t.Helper()
	var f float64
	if err := json.Unmarshal(m[key], &f); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return f
}

func clatPct(t *testing.T, m map[string]json.RawMessage, key, pct string) float64 {
	t.Helper()
	var l struct {
		Percentile map[string]float64 `json:"percentile"`
	}
	if err := json.Unmarshal(m[key], &l); err != nil {
		t.Fatal(err)
	}
	return l.Percentile[pct]
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))+1e-9 }

func TestImportRealFio3SingleJob(t *testing.T) {
	for _, name := range []string{"fio-3.33-randread.json", "fio-3.33-randrw-numjobs2-group.json", "fio-3.33-two-jobs-direct.json"} {
		t.Run(name, func(t *testing.T) {
			data, r := readRaw(t, name)
			rec, warns, err := Import(data, ImportOptions{Label: "old", Source: name})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Host.Hostname != UnknownHost || rec.Label != "old" || !strings.HasPrefix(rec.ToolVersion, r.Version) {
				t.Errorf("identity: host %q label %q tool %q", rec.Host.Hostname, rec.Label, rec.ToolVersion)
			}
			if rec.Start.IsZero() || rec.Start.Year() < 2020 {
				t.Errorf("start %v not taken from the fio timestamp", rec.Start)
			}
			if len(rec.Workloads) != len(r.Jobs) {
				t.Fatalf("%d workloads from %d jobs", len(rec.Workloads), len(r.Jobs))
			}
			for i, j := range r.Jobs {
				wr := rec.Workloads[i]
				if wr.Params.Name != j.Name || wr.Params.RW != j.Opts["rw"] {
					t.Errorf("job %d: params %+v", i, wr.Params)
				}
				for _, side := range []struct {
					dir string
					m   map[string]json.RawMessage
				}{{"read", j.Read}, {"write", j.Write}} {
					run := wr.Runs[0].Read
					if side.dir == "write" {
						run = wr.Runs[0].Write
					}
					ios := num(t, side.m, "total_ios")
					if ios == 0 {
						if run != nil {
							t.Errorf("%s %s: imported without I/O", j.Name, side.dir)
						}
						continue
					}
					if run == nil {
						t.Fatalf("%s %s: missing", j.Name, side.dir)
					}
					if !near(run.IOPS, num(t, side.m, "iops")) || !near(run.BWBytesPerS, num(t, side.m, "bw_bytes")) ||
						run.IOBytes != uint64(num(t, side.m, "io_bytes")) || run.IOs != uint64(ios) {
						t.Errorf("%s %s: %+v", j.Name, side.dir, run)
					}
					if want := clatPct(t, side.m, "clat_ns", "99.000000"); run.LatNS.P99 != want || want == 0 {
						t.Errorf("%s %s: p99 %v, want clat_ns 99.000000 = %v", j.Name, side.dir, run.LatNS.P99, want)
					}
					if want := clatPct(t, side.m, "clat_ns", "99.900000"); run.LatNS.P999 != want {
						t.Errorf("%s %s: p99.9 %v, want %v", j.Name, side.dir, run.LatNS.P999, want)
					}
				}
			}
			for _, w := range warns {
				if strings.Contains(w, "reported separately") {
					t.Errorf("unexpected warning %q", w)
				}
			}
		})
	}
}

func TestImportRealFio3NumjobsWithoutGroupReporting(t *testing.T) {
	data, r := readRaw(t, "fio-3.33-randrw-numjobs2.json")
	rec, warns, err := Import(data, ImportOptions{HostNote: "esx-guest-7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Jobs) != 2 || len(rec.Workloads) != 1 {
		t.Fatalf("%d jobs became %d workloads, want 2 -> 1", len(r.Jobs), len(rec.Workloads))
	}
	wr := rec.Workloads[0]
	if wr.Params.Jobs != 2 || rec.Host.Hostname != "esx-guest-7" {
		t.Errorf("jobs %d host %q", wr.Params.Jobs, rec.Host.Hostname)
	}
	var iops, bw float64
	for _, j := range r.Jobs {
		iops += num(t, j.Read, "iops")
		bw += num(t, j.Read, "bw_bytes")
	}
	if got := wr.Runs[0].Read; !near(got.IOPS, iops) || !near(got.BWBytesPerS, bw) {
		t.Errorf("read iops %v bw %v, want the sums %v %v", got.IOPS, got.BWBytesPerS, iops, bw)
	}
	// Named from what the job did (issue 12), not from its name "file1".
	if _, ok := wr.Summary["read"]; !ok || wr.Summary["read"].Name != "randread" || wr.Summary["write"].Name != "randwrite" {
		t.Errorf("summary names %+v", wr.Summary)
	}
	if !strings.Contains(strings.Join(warns, "\n"), "2 jobs reported separately") {
		t.Errorf("no approximation warning: %q", warns)
	}
}

func TestImportTextBeforeJSON(t *testing.T) {
	data, _ := readRaw(t, "fio-3.33-note-before-json.json")
	if bytes.HasPrefix(data, []byte("{")) {
		t.Fatal("fixture should start with fio's note")
	}
	rec, warns, err := Import(data, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Workloads) != 1 || rec.Workloads[0].Runs[0].Engine != "psync" {
		t.Errorf("workloads %+v", rec.Workloads)
	}
	if !strings.Contains(strings.Join(warns, "\n"), "note: both iodepth") {
		t.Errorf("warnings %q should quote the skipped note", warns)
	}
}

func TestImportFio2Shape(t *testing.T) {
	data, _ := readRaw(t, "fio-2.x-shape-handwritten.json")
	rec, _, err := Import(data, ImportOptions{Now: time.Date(2016, 5, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Start.Equal(time.Date(2016, 5, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("start %v: fio 2.x has no timestamp, want the given time", rec.Start)
	}
	if len(rec.Workloads) != 2 {
		t.Fatalf("%d workloads", len(rec.Workloads))
	}
	seq := rec.Workloads[0].Runs[0]
	// fio 2.x: io_bytes in KiB, bw in KiB/s, clat in µs.
	if seq.Read.IOBytes != 1048576*1024 || seq.Read.BWBytesPerS != 104857*1024 || seq.Read.LatNS.P99 != 14016*1000 || seq.Write != nil {
		t.Errorf("seq-read: %+v", seq.Read)
	}
	if seq.Read.LatNS.P50 != 9664*1000 || seq.Read.LatNS.P999 != 24960*1000 {
		t.Errorf("seq-read percentiles %+v", seq.Read.LatNS)
	}
	rw := rec.Workloads[1]
	// fio 2.x wrote no options: the job name "rand-rw" says random, and
	// the rows are named from what the job did (issue 12).
	if rw.Summary["read"].Name != "randread" || rw.Summary["write"].Name != "randwrite" || rw.Runs[0].Write.IOPS != 500 || rw.Params.RW != "randrw" {
		t.Errorf("rand-rw: %+v", rw.Summary)
	}
}

func TestImportNotFio(t *testing.T) {
	for name, in := range map[string]string{
		"text":         "fio: this is not json\n",
		"empty":        "",
		"other json":   `{"schema": "diskprep/result/v1", "id": "x"}`,
		"corrupt":      "{\n  \"fio version\" : \"fio-3.33\",\n  \"jobs\" : [\n",
		"no jobs":      `{"fio version": "fio-3.33", "jobs": []}`,
		"jobs without": `{"fio version": "fio-3.33", "jobs": [{"jobname": "x", "read": {"io_bytes": 0}}]}`,
	} {
		if _, _, err := Import([]byte(in), ImportOptions{}); !errors.Is(err, ErrNotFio) {
			t.Errorf("%s: err %v, want ErrNotFio", name, err)
		}
	}
}

func TestExportRoundTrip(t *testing.T) {
	orig := ct.Quick(ct.ID(5), "xfs", "xfs", 1, 3, time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC))
	var buf bytes.Buffer
	if err := Export(&buf, orig); err != nil {
		t.Fatal(err)
	}
	// What plotting tools read: jobs[].read.iops, bw_bytes, clat_ns.percentile.
	var doc struct {
		Jobs []struct {
			Name string `json:"jobname"`
			Read struct {
				IOPS    float64 `json:"iops"`
				BWBytes float64 `json:"bw_bytes"`
				BW      float64 `json:"bw"`
				ClatNS  struct {
					Percentile map[string]float64 `json:"percentile"`
				} `json:"clat_ns"`
			} `json:"read"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Jobs) != len(orig.Workloads) || doc.Jobs[0].Read.ClatNS.Percentile["99.000000"] == 0 {
		t.Fatalf("exported %+v", doc.Jobs)
	}
	if kib := doc.Jobs[0].Read.BWBytes / 1024; math.Abs(doc.Jobs[0].Read.BW-kib) > 1 {
		t.Errorf("bw %v KiB/s vs bw_bytes %v", doc.Jobs[0].Read.BW, doc.Jobs[0].Read.BWBytes)
	}
	back, _, err := Import(buf.Bytes(), ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, wr := range orig.Workloads {
		got := back.Workloads[i]
		if got.Params.Name != wr.Params.Name || got.Params.RW != wr.Params.RW || got.Params.BlockBytes != wr.Params.BlockBytes ||
			got.Params.IODepth != wr.Params.IODepth || got.Params.Runtime != wr.Params.Runtime || got.Params.Direct != wr.Params.Direct {
			t.Errorf("params %+v, want %+v", got.Params, wr.Params)
		}
		for dir, s := range wr.Summary {
			gs := got.Summary[dir]
			// Export keeps the repetition closest to the median: with
			// three repetitions that is the median one.
			if gs.Name != s.Name || math.Abs(gs.BWBytesPerS.Median-s.BWBytesPerS.Median) > 1 ||
				math.Abs(gs.IOPS.Median-s.IOPS.Median) > 1e-6 || math.Abs(gs.LatP99NS.Median-s.LatP99NS.Median) > 1 {
				t.Errorf("%s %s: %+v, want %+v", wr.Params.Name, dir, gs, s)
			}
		}
	}
}

func TestImportStatusIntervalUsesTheLastDocument(t *testing.T) {
	first, _ := readRaw(t, "fio-3.33-randread.json")
	last, r := readRaw(t, "fio-3.33-two-jobs-direct.json")
	data := append(append(append([]byte(nil), first...), '\n'), last...)
	rec, warns, err := Import(data, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Workloads) != len(r.Jobs) || rec.Workloads[0].Params.Name != r.Jobs[0].Name {
		t.Errorf("imported %d workloads (%s), want the last document's %d", len(rec.Workloads), rec.Workloads[0].Params.Name, len(r.Jobs))
	}
	if !strings.Contains(strings.Join(warns, "\n"), "2 fio JSON documents") {
		t.Errorf("warnings %q", warns)
	}
}

// UnknownHost stands where an imported record has no host: redaction
// (internal/redact, which knows it by value and not through this package)
// must leave it, or every imported record would get a made-up host token.
func TestUnknownHostSurvivesRedaction(t *testing.T) {
	rec := &record.Record{Schema: record.Schema, ID: "20261130T060000Z-0001"}
	rec.Host.Hostname = UnknownHost
	if got := redact.Copy(rec).Host.Hostname; got != UnknownHost {
		t.Fatalf("hostname %q redacted to %q", UnknownHost, got)
	}
}

// Issue 25 item 7: one job whose percentile list stops at 99 counted as 0
// in the jobs' p99.9, which fell below their p99.
func TestCombinePercentilesMonotonic(t *testing.T) {
	ios := 1000.0
	d := func(pcts map[string]float64) *direction {
		return &direction{IOBytes: 4096 * ios, IOPS: 100, Runtime: 10000, TotalIOs: &ios,
			ClatNS: &lat{Min: 1e5, Max: 5e6, Mean: 1e6, Percentile: pcts}}
	}
	full := map[string]float64{"50.000000": 1e6, "90.000000": 2e6, "99.000000": 3e6, "99.900000": 4e6}
	short := map[string]float64{"50.000000": 1e6, "90.000000": 2e6, "99.000000": 3e6}
	out := combine([]job{{Read: d(full)}, {Read: d(short)}}, func(j job) *direction { return j.Read })
	if l := out.LatNS; l.P999 < l.P99 || l.P999 != 4e6 || l.P99 != 3e6 {
		t.Errorf("combined percentiles %+v: want p99 3 ms, p99.9 4 ms", l)
	}
}
