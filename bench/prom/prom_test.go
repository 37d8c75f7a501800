package prom

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/internal/golden"
)

func loadRecord(t *testing.T) *record.Record {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "record.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r record.Record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// awkward is a record whose label values need every escape.
func awkward(t *testing.T) *record.Record {
	r := loadRecord(t)
	r.Host.Hostname = `vm "7"`
	r.Label = "C:\\raw\nmapped"
	r.Target.Vendor, r.Target.Model = "QEMU", "HARDDISK"
	r.Target.FSType = ""
	r.Target.Prepared = &record.Prepared{FSType: "ext4"}
	r.End = r.End.Add(time.Hour)
	return r
}

func TestWriteGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, loadRecord(t), awkward(t)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "record.prom.golden"), buf.Bytes())
}

// TestWriteParses reads the output back with an exposition-format parser
// and checks the values against the record they came from.
func TestWriteParses(t *testing.T) {
	rec, odd := loadRecord(t), awkward(t)
	var buf bytes.Buffer
	if err := Write(&buf, rec, odd); err != nil {
		t.Fatal(err)
	}
	got, err := parseExposition(buf.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if got.types["diskprep_bench_bw_bytes_per_second"] != "gauge" || got.types["diskprep_bench_latency_seconds"] != "gauge" {
		t.Errorf("types %v", got.types)
	}
	n := 0
	for _, r := range []*record.Record{rec, odd} {
		fs := r.Target.FSType
		model := r.Target.Model
		if r == odd {
			fs, model = "ext4", "QEMU HARDDISK"
		}
		for _, wl := range r.Workloads {
			for dir, s := range wl.Summary {
				labels := map[string]string{"host": r.Host.Hostname, "device_model": model, "fs": fs,
					"label": r.Label, "set": r.Set, "workload": s.Name, "direction": dir}
				check := func(name string, want float64, extra ...string) {
					t.Helper()
					l := labels
					if len(extra) == 2 {
						l = map[string]string{extra[0]: extra[1]}
						for k, v := range labels {
							l[k] = v
						}
					}
					key := seriesKey(name, l)
					v, ok := got.samples[key]
					if !ok {
						t.Errorf("no series %s", key)
						return
					}
					if v != want {
						t.Errorf("%s = %v, want %v", key, v, want)
					}
					n++
				}
				check("diskprep_bench_bw_bytes_per_second", s.BWBytesPerS.Median)
				check("diskprep_bench_iops", s.IOPS.Median)
				check("diskprep_bench_latency_seconds", s.LatP50NS.Median/1e9, "quantile", "0.5")
				check("diskprep_bench_latency_seconds", s.LatP99NS.Median/1e9, "quantile", "0.99")
				check("diskprep_bench_latency_mean_seconds", s.LatMeanNS.Median/1e9)
				check("diskprep_bench_runtime_seconds", s.RuntimeMS.Median/1e3)
			}
		}
	}
	if n == 0 || len(got.samples) != n+2 {
		t.Errorf("%d series, checked %d plus 2 end timestamps", len(got.samples), n)
	}
	end := seriesKey("diskprep_bench_end_timestamp_seconds", map[string]string{"host": odd.Host.Hostname,
		"device_model": "QEMU HARDDISK", "fs": "ext4", "label": odd.Label, "set": odd.Set})
	if v := got.samples[end]; v != float64(odd.End.Unix()) {
		t.Errorf("%s = %v, want %d", end, v, odd.End.Unix())
	}
}

func TestWriteNewerRecordWins(t *testing.T) {
	older, newer := loadRecord(t), loadRecord(t)
	newer.End = older.End.Add(time.Minute)
	for i := range newer.Workloads {
		s := newer.Workloads[i].Summary["read"]
		s.IOPS.Median = 12345
		newer.Workloads[i].Summary["read"] = s
	}
	for _, order := range [][]*record.Record{{older, newer}, {newer, older}} {
		var buf bytes.Buffer
		if err := Write(&buf, order...); err != nil {
			t.Fatal(err)
		}
		got, err := parseExposition(buf.String())
		if err != nil {
			t.Fatal(err)
		}
		var single bytes.Buffer
		Write(&single, newer)
		if buf.String() != single.String() {
			t.Errorf("two records with the same labels: want only the newer's series, got\n%s", buf.String())
		}
		if len(got.samples) == 0 {
			t.Error("no samples")
		}
	}
}

func TestWriteNoRecords(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := parseExposition(buf.String()); err != nil {
		t.Errorf("%v\n%s", err, buf.String())
	}
	if strings.Contains(buf.String(), "{") {
		t.Errorf("samples without records:\n%s", buf.String())
	}
}

func TestParserRejects(t *testing.T) {
	// Each text fails for its own reason: h is a valid HELP and TYPE of m.
	const h = "# HELP m x\n# TYPE m gauge\n"
	for _, c := range []struct{ text, why string }{
		{"metric 1\n", "before its TYPE"},
		{h + "m{a=\"x} 1\n", "unterminated"},
		{h + "m{a=\"\\q\"} 1\n", "bad escape"},
		{h + "m{a=\"x\"} one\n", "value"},
		{h + "m 1\nm 2\n", "series twice"},
		{"# HELP m x\n# TYPE m gauge\n# HELP n x\n# TYPE n gauge\nn 1\nm 1\n", "outside its family"},
		{h + "m{1a=\"x\"} 1\n", "bad label name"},
		{h + "m 1 1700000000000\n", "timestamp"}, // the textfile collector refuses timestamps
		{h + "m 1", "no line feed"},
		{h + "m NaNa\n", "value"},
		{"# TYPE m gauge\nm 1\n", "before its HELP"},
		{"# HELP m x\n# HELP m y\n# TYPE m gauge\nm 1\n", "second HELP"},
		{"# HELP m\n# TYPE m gauge\nm 1\n", "empty HELP"},
		{"# HELP m_total x\n# TYPE m_total gauge\nm_total 1\n", "_total"},
		{"# HELP m x\n# TYPE m counter\nm 1\n", "_total"},
		{h + "m{__name__=\"y\"} 1\n", "bad label name"},
		{h + "# TYPE m gauge\nm 1\n", "second TYPE"},
		{h + "# HELP n x\n# TYPE n gauge\nm 1\n", "outside its family"},
	} {
		_, err := parseExposition(c.text)
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%q: %v, want an error saying %q", c.text, err, c.why)
		}
	}
	if _, err := parseExposition(h + "m{a=\"x\\\"y\\n\"} -1.5e-3\nm{a=\"y\"} +Inf\n"); err != nil {
		t.Errorf("a valid exposition: %v", err)
	}
}

// exposition is what parseExposition read: TYPE per family and the value of
// each series, keyed by seriesKey.
type exposition struct {
	types   map[string]string
	samples map[string]float64
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parseExposition checks text line by line against the text exposition
// format as node_exporter's textfile collector reads it: HELP and TYPE
// comments, each family's HELP and TYPE before its samples (once each) and
// its samples together, valid names (no reserved __ label), quoted and
// escaped label values, float values, no timestamps, no series twice; and
// Prometheus's naming rule that _total names a counter and a counter ends
// in _total.
func parseExposition(text string) (*exposition, error) {
	e := &exposition{types: map[string]string{}, samples: map[string]float64{}}
	help := map[string]bool{}
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("no line feed at the end")
	}
	done := map[string]bool{}
	current := ""
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if text == "" {
			break
		}
		fail := func(format string, a ...any) error {
			return fmt.Errorf("line %d %q: %s", i+1, line, fmt.Sprintf(format, a...))
		}
		if strings.HasPrefix(line, "#") {
			f := strings.SplitN(line, " ", 4)
			if len(f) < 3 || (f[1] != "HELP" && f[1] != "TYPE") {
				continue // a plain comment
			}
			if !metricName.MatchString(f[2]) {
				return nil, fail("bad metric name")
			}
			if f[1] == "TYPE" {
				if len(f) != 4 || !strings.Contains(" counter gauge histogram summary untyped ", " "+f[3]+" ") {
					return nil, fail("bad type")
				}
				if _, dup := e.types[f[2]]; dup {
					return nil, fail("second TYPE")
				}
				if (f[3] == "counter") != strings.HasSuffix(f[2], "_total") {
					return nil, fail("_total is for counters, and counters end in _total")
				}
				e.types[f[2]] = f[3]
			} else {
				if help[f[2]] {
					return nil, fail("second HELP")
				}
				if len(f) != 4 || strings.TrimSpace(f[3]) == "" {
					return nil, fail("empty HELP")
				}
				help[f[2]] = true
			}
			if f[2] != current {
				if done[f[2]] {
					return nil, fail("family %s is split", f[2])
				}
				if current != "" {
					done[current] = true
				}
				current = f[2]
			}
			continue
		}
		name, labels, rest, err := splitSample(line)
		if err != nil {
			return nil, fail("%v", err)
		}
		if _, ok := e.types[name]; !ok {
			return nil, fail("sample before its TYPE")
		}
		if !help[name] {
			return nil, fail("sample before its HELP")
		}
		if name != current {
			return nil, fail("sample of %s outside its family", name)
		}
		if strings.Contains(rest, " ") {
			return nil, fail("timestamp or trailing text")
		}
		v, err := strconv.ParseFloat(rest, 64)
		if err != nil {
			return nil, fail("value: %v", err)
		}
		key := seriesKey(name, labels)
		if _, dup := e.samples[key]; dup {
			return nil, fail("series twice")
		}
		e.samples[key] = v
	}
	return e, nil
}

func splitSample(line string) (name string, labels map[string]string, rest string, err error) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", nil, "", fmt.Errorf("no value")
	}
	name = line[:i]
	if !metricName.MatchString(name) {
		return "", nil, "", fmt.Errorf("bad metric name %q", name)
	}
	labels = map[string]string{}
	s := line[i:]
	if s[0] == '{' {
		s = s[1:]
		for !strings.HasPrefix(s, "}") {
			eq := strings.Index(s, `="`)
			if eq < 0 {
				return "", nil, "", fmt.Errorf("label without =\"")
			}
			ln := s[:eq]
			if !labelName.MatchString(ln) || strings.HasPrefix(ln, "__") {
				return "", nil, "", fmt.Errorf("bad label name %q", ln)
			}
			s = s[eq+2:]
			var v strings.Builder
			closed := false
			for j := 0; j < len(s); j++ {
				switch c := s[j]; c {
				case '\\':
					if j+1 >= len(s) {
						return "", nil, "", fmt.Errorf("dangling backslash")
					}
					switch s[j+1] {
					case '\\':
						v.WriteByte('\\')
					case '"':
						v.WriteByte('"')
					case 'n':
						v.WriteByte('\n')
					default:
						return "", nil, "", fmt.Errorf("bad escape \\%c", s[j+1])
					}
					j++
				case '"':
					s, closed = s[j+1:], true
				default:
					v.WriteByte(c)
				}
				if closed {
					break
				}
			}
			if !closed {
				return "", nil, "", fmt.Errorf("unterminated label value")
			}
			if _, dup := labels[ln]; dup {
				return "", nil, "", fmt.Errorf("label %s twice", ln)
			}
			labels[ln] = v.String()
			if strings.HasPrefix(s, ",") {
				s = s[1:]
			} else if !strings.HasPrefix(s, "}") {
				return "", nil, "", fmt.Errorf("expected , or }")
			}
		}
		s = s[1:]
	}
	if !strings.HasPrefix(s, " ") {
		return "", nil, "", fmt.Errorf("no blank before the value")
	}
	return name, labels, s[1:], nil
}

func seriesKey(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(name)
	for _, k := range keys {
		fmt.Fprintf(&b, "|%s=%q", k, labels[k])
	}
	return b.String()
}
