package report

import (
	"bytes"
	"encoding/csv"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/record"
)

// storeRecords are nine real records (testdata/store, made by diskprep
// bench on loop devices: the quick set on a raw device, on xfs and on ext4,
// the cdm set on both, without and with labels, some with --repeat 3, two
// of them recorded as another host with --hostname): the store a new user
// has after an hour, whose bare compare was 476 characters wide with 104
// warnings.
func storeRecords(t *testing.T) []*record.Record {
	t.Helper()
	recs, warnings, err := record.Gather([]string{filepath.Join("testdata", "store")}, "")
	if err != nil || len(warnings) > 0 || len(recs) != 9 {
		t.Fatalf("store: %d records, %v, %q", len(recs), err, warnings)
	}
	return recs
}

func storeComparison(t *testing.T) *compare.Comparison {
	t.Helper()
	c, err := compare.Compare(storeRecords(t), compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStoreColumnsNeverPool: the automatic grouping keeps a raw device
// and a mounted directory, two hosts and two sets apart even where the
// labels (or their absence) agree.
func TestStoreColumnsNeverPool(t *testing.T) {
	c := storeComparison(t)
	for _, g := range c.Groups {
		first := g.Records[0]
		for _, r := range g.Records[1:] {
			if r.Host.Hostname != first.Host.Hostname || r.Target.Path != first.Target.Path || r.Set != first.Set || r.Target.Kind != first.Target.Kind {
				t.Errorf("column %q pools %s (%s %s %s) with %s (%s %s %s)", g.Name, first.ID, first.Host.Hostname, first.Target.Path, first.Set,
					r.ID, r.Host.Hostname, r.Target.Path, r.Set)
			}
		}
	}
	var names []string
	for _, g := range c.Groups {
		names = append(names, g.Name)
	}
	want := []string{"(no label) · vm · raw device", "(no label) · vm · xfs", "(no label) · esx-guest",
		"xfs · vm · set quick", "xfs · vm · set cdm", "xfs · esx-guest", "ext4 · vm · set quick", "ext4 · vm · set cdm", "ext4 · esx-guest"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("columns\n%q\nwant\n%q", names, want)
	}
	if c.By != compare.ByLabel || strings.Join(c.Split, ",") != "host,fs,set" {
		t.Errorf("by %s split %v, want label split by host, fs, set", c.By, c.Split)
	}
	// Collapsed: one line per kind, not one per row and column.
	if len(c.Warnings) > 10 {
		t.Errorf("%d warnings:\n%s", len(c.Warnings), strings.Join(c.Warnings, "\n"))
	}
	n := 0
	for _, w := range c.Warnings {
		if strings.Contains(w, "no measurement") {
			n++
		}
	}
	if n > 2 {
		t.Errorf("%d no-measurement warnings, want one per set of missing columns", n)
	}
}

// TestStoreTableFits: by default no line of the table passes 120 columns;
// --wide gives the full table, one column per group.
func TestStoreTableFits(t *testing.T) {
	c := storeComparison(t)
	var buf bytes.Buffer
	if err := WriteLayout(&buf, "table", c, Layout{}); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(buf.String(), "\n") {
		if textWidth(l) > DefaultWidth {
			t.Errorf("line %d is %d columns: %q", i+1, textWidth(l), l)
		}
	}
	checkGolden(t, "store.table", buf.Bytes())
	// With the p99 latency too (changes of several metrics per line).
	withLatency, err := compare.Compare(storeRecords(t), compare.Options{Latency: true})
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := WriteLayout(&buf, "table", withLatency, Layout{}); err != nil {
		t.Fatal(err)
	}
	if w := maxWidth(buf.String()); w > DefaultWidth {
		t.Errorf("table with latency is %d columns wide", w)
	}
	if !strings.Contains(buf.String(), "p99 latency") {
		t.Error("table with latency lacks it")
	}
	buf.Reset()
	if err := WriteLayout(&buf, "table", c, Layout{Wide: true}); err != nil {
		t.Fatal(err)
	}
	if maxWidth(buf.String()) <= DefaultWidth || !strings.Contains(buf.String(), "xfs · esx-guest vs (no label) · vm · raw device") {
		t.Errorf("--wide is not the full table (%d columns)", maxWidth(buf.String()))
	}
}

// TestStoreMarkdownAndCSV: the Markdown tables keep one cell count per
// table whatever the number of columns; the CSV has a line per row,
// metric and group.
func TestStoreMarkdownAndCSV(t *testing.T) {
	c := storeComparison(t)
	var buf bytes.Buffer
	if err := WriteLayout(&buf, "markdown", c, Layout{}); err != nil {
		t.Fatal(err)
	}
	cells := -1
	for i, l := range strings.Split(buf.String(), "\n") {
		if !strings.HasPrefix(l, "|") {
			cells = -1
			continue
		}
		n := strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") - 1
		if cells < 0 {
			cells = n
		} else if n != cells {
			t.Errorf("markdown line %d has %d cells, its table %d: %q", i+1, n, cells, l)
		}
	}
	checkGolden(t, "store.markdown", buf.Bytes())
	buf.Reset()
	if err := CSV(&buf, c); err != nil {
		t.Fatal(err)
	}
	lines, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + len(c.Rows)*len(c.Metrics)*len(c.Groups); len(lines) != want {
		t.Errorf("csv has %d lines, want %d", len(lines), want)
	}
}
