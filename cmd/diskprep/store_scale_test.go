package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/internal/golden"
)

// scaleStore writes a store as a fleet leaves it: 480 records of 24 hosts
// (one with a throttled disk), four labels on two filesystems, four
// repetitions each with noise, one label drifting down over the day, a
// record copied under a second name, and two files that are no record.
// Its columns are large enough for every path of the statistics that
// does not keep all pairs (over 2,500 pairwise ratios, over 65,536
// pairwise slopes).
func scaleStore(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(22, 6))
	labels := []string{"xfs-default", "xfs-noatime", "ext4-default", "ext4-journal"}
	factors := []float64{1, 1.03, 0.94, 0.82}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	const n = 480
	for i := range n {
		host, li := i%24, i/24%4
		hf := 0.9 + 0.2*float64(host*7919%101)/100
		if host == 7 {
			hf = 0.35
		}
		f := hf * factors[li]
		if li == 3 {
			f *= 1 - 0.3*float64(i)/n // drifts down as the day goes on
		}
		mk := func(name, rw string, bs uint64, base float64) ct.Workload {
			w := ct.Workload{Name: name, RW: rw, BS: bs}
			for range 4 {
				// Rounded, so some runs tie.
				w.MBps = append(w.MBps, math.Round(base*f*(0.96+0.08*rng.Float64())*10)/10)
			}
			return w
		}
		start := t0.Add(time.Duration(i) * time.Minute)
		fs := "xfs"
		if li >= 2 {
			fs = "ext4"
		}
		rec := ct.Record(ct.Opts{
			ID: start.Format("20060102T150405Z") + fmt.Sprintf("-%04x", i), Label: labels[li], Start: start,
			Host: fmt.Sprintf("node-%02d", host), FS: fs, Workloads: []ct.Workload{
				mk("seq1m-read", "read", 1<<20, 520),
				mk("rnd4k-read", "randread", 4<<10, 40),
				mk("rnd4k-write", "randwrite", 4<<10, 90),
			},
		})
		b, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		name := rec.ID + ".json"
		if i == 100 {
			// The same record copied in under another name.
			if err := os.WriteFile(filepath.Join(dir, "copy-of-"+name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{
		"half-written.json": `{"schema":"diskprep/result/v1","id":`,
		"future.json":       `{"schema":"diskprep/result/v2","id":"20300101T000000Z-ffff"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFleetStoreOutputsUnchanged holds results list and compare over a
// fleet's store to what they printed before the store was read in
// parallel and the statistics stopped keeping every pair: the golden
// files under testdata/fleetstore were written by that code (go test
// -update rewrites them; a change there is a change users see).
func TestFleetStoreOutputsUnchanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	scaleStore(t, dir)
	cases := []struct {
		name, format string
		run          func(e *env) error
	}{
		{"list.txt", "table", func(e *env) error { return runResultsList(context.Background(), recordFilter{}, e) }},
		{"list.json.sha256", "json", func(e *env) error { return runResultsList(context.Background(), recordFilter{}, e) }},
		{"list-host.csv", "csv", func(e *env) error { return runResultsList(context.Background(), recordFilter{Host: "node-0[1-3]"}, e) }},
		{"compare-label.txt", "table", func(e *env) error { return runCompare(context.Background(), compareOptions{By: "label"}, e) }},
		{"compare-label.json.sha256", "json", func(e *env) error {
			return runCompare(context.Background(), compareOptions{By: "label", Latency: true}, e)
		}},
		{"compare-host.txt", "table", func(e *env) error { return runCompare(context.Background(), compareOptions{By: "host"}, e) }},
		{"compare-fs.md", "markdown", func(e *env) error {
			return runCompare(context.Background(), compareOptions{By: "fs", Latency: true}, e)
		}},
		{"compare-default.txt", "table", func(e *env) error { return runCompare(context.Background(), compareOptions{}, e) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, out, errb := resultsEnv(t, c.format)
			e.ResultsDir = dir
			if err := c.run(e); err != nil {
				t.Fatal(err)
			}
			// The store's temporary path named the same way every run.
			got := bytes.ReplaceAll(append(out.Bytes(), errb.Bytes()...), []byte(dir), []byte("STORE"))
			if strings.HasSuffix(c.name, ".sha256") {
				// Half a megabyte of runs' values: its digest is kept.
				got = fmt.Appendf(nil, "%x  %d bytes\n", sha256.Sum256(got), len(got))
			}
			golden.Check(t, filepath.Join("testdata", "fleetstore", c.name), got)
		})
	}
}
