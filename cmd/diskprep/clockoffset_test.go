package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSecondsRoundTrips(t *testing.T) {
	for _, d := range []time.Duration{0, 5 * time.Second, 8 * time.Millisecond, -4123456 * time.Nanosecond, 5000123456, -1} {
		s := seconds(d)
		back, err := signedDuration("--clock-offset", s)
		if err != nil || back != d || strings.ContainsFunc(s, func(r rune) bool { return r > 127 }) {
			t.Errorf("seconds(%v) = %q, read back as %v, %v", d, s, back, err)
		}
	}
}

// The playbook's samples in, the estimate and the bench flags out; what
// clock-offset prints, bench takes.
func TestClockOffsetCommand(t *testing.T) {
	samples := filepath.Join("..", "..", "bench", "clock", "testdata", "samples-ssh.txt")
	code, out, errOut := runCLI(t, "clock-offset", samples, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc clockOffsetDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	want := clockOffsetDoc{Schema: clockOffsetSchema, OffsetMS: 5000, RTTMS: 8, UncertaintyMS: 4, Samples: 4, SampleUsed: 3,
		BenchArgs: []string{"--clock-offset=5s", "--clock-rtt=0.008s"}}
	if doc.Schema != want.Schema || doc.OffsetMS != want.OffsetMS || doc.RTTMS != want.RTTMS || doc.UncertaintyMS != want.UncertaintyMS ||
		doc.Samples != 4 || doc.SampleUsed != 3 || !slices.Equal(doc.BenchArgs, want.BenchArgs) {
		t.Errorf("doc %+v, want %+v", doc, want)
	}
	c, err := parseClockFlags(strings.TrimPrefix(doc.BenchArgs[0], "--clock-offset="), strings.TrimPrefix(doc.BenchArgs[1], "--clock-rtt="))
	if err != nil || *c.OffsetMS != 5000 || *c.RTTMS != 8 || *c.UncertaintyMS != 4 {
		t.Errorf("bench reads them as %+v, %v", c, err)
	}

	data, _ := os.ReadFile(samples)
	var o, eb strings.Builder
	code = run(t.Context(), []string{"diskprep", "clock-offset"}, strings.NewReader(string(data)), &o, &eb)
	if code != 0 || o.String() != "offset +5s ± 4ms: the host's clock is 5s ahead of this one's (sample 3 of 4, round trip 8ms)\nbench flags: --clock-offset=5s --clock-rtt=0.008s\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, o.String(), eb.String())
	}

	for _, tc := range []struct {
		in, msg string
		args    []string
	}{
		{"1764756000 1764756005\n", `line 1: "1764756000 1764756005": want "T0 HOST T1"`, nil},
		{"# nothing\n", "no samples", nil},
		{"1764756000.5 1764756005 1764756000.1\n", "second time is before its first", nil},
		{"", "no such file", []string{filepath.Join(t.TempDir(), "none.txt")}},
		{"", "at most one SAMPLES", []string{"a", "b"}},
	} {
		var o, eb strings.Builder
		code := run(t.Context(), append([]string{"diskprep", "clock-offset"}, tc.args...), strings.NewReader(tc.in), &o, &eb)
		if code != 2 || o.Len() != 0 || strings.Count(eb.String(), "\n") != 1 || !strings.Contains(eb.String(), tc.msg) {
			t.Errorf("%q %q: exit %d, stderr %q; want exit 2 saying %q", tc.in, tc.args, code, eb.String(), tc.msg)
		}
	}
}
