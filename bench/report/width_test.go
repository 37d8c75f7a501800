package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/bench/compare"
)

// expectedTexts is what a table of c must say whatever its width: every
// workload, its parameters, every column's name and records, every shared
// and per-column fact, every median and range, every change, warning and
// note (the full table, chosen where it fits, names each metric's change
// and leaves the parameters to the stacked form and the other outputs, as
// --wide always has).
func expectedTexts(c *compare.Comparison, full bool) []string {
	want := []string{title(c)}
	for _, f := range c.Environment {
		want = append(want, f.Name+" "+f.Value)
	}
	names, cells := identityRows(c)
	for gi, g := range c.Groups {
		want = append(want, g.Name)
		for i := range names {
			want = append(want, cells[i][gi])
		}
	}
	for _, r := range c.Rows {
		want = append(want, r.Name)
		if !full {
			want = append(want, r.Params)
		}
		for gi, cell := range r.Cells {
			if !cell.Present {
				want = append(want, c.Groups[gi].Name)
				continue
			}
			want = append(want, rowGroupHeader(c, r, gi))
			for mi, m := range c.Metrics {
				med, rg := valueParts(m, cell.Metrics[mi])
				want = append(want, med, rg)
				if full && gi != r.Baseline {
					want = append(want, changeText(cell.Metrics[mi]))
				}
			}
			if !full && gi != r.Baseline {
				want = append(want, cellChange(c, cell))
			}
		}
	}
	want = append(want, c.Warnings...)
	return append(want, c.Notes...)
}

// oneLine is s with every run of spaces and line breaks made one space,
// so a text wrapped over lines is still found.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestTableFitsWidth: at 80, 120 and 200 columns (and at the minimum, 60,
// which a narrower terminal gets), no line of a comparison passes the
// width, and nothing is lost; at 120 it is the golden, byte for byte.
func TestTableFitsWidth(t *testing.T) {
	withLatency := func(c *compare.Comparison, err error) *compare.Comparison {
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cases := []struct {
		name   string
		c      *compare.Comparison
		golden string
	}{
		{"three filesystems", comparison(t, false), "compare.table"},
		{"three filesystems, latency", comparison(t, true), "compare-latency.table"},
		{"nine-record store", storeComparison(t), "store.table"},
		{"nine-record store, latency", withLatency(compare.Compare(storeRecords(t), compare.Options{Latency: true})), ""},
	}
	for _, tc := range cases {
		for _, width := range []int{40, 60, 80, 120, 200} {
			var buf bytes.Buffer
			if err := TableLayout(&buf, tc.c, Layout{Width: width}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			limit := max(width, MinWidth)
			for i, l := range strings.Split(out, "\n") {
				if textWidth(l) > limit {
					t.Errorf("%s at %d: line %d is %d columns: %q", tc.name, width, i+1, textWidth(l), l)
				}
			}
			flat := oneLine(out)
			for _, w := range expectedTexts(tc.c, !(Layout{Width: width}).stacked(tc.c)) {
				if w != "" && !strings.Contains(flat, oneLine(w)) {
					t.Errorf("%s at %d: %q is missing", tc.name, width, w)
				}
			}
			if width == 120 && tc.golden != "" {
				want, err := os.ReadFile(filepath.Join("testdata", tc.golden))
				if err != nil {
					t.Fatal(err)
				}
				if out != string(want) {
					t.Errorf("%s at 120 columns differs from testdata/%s", tc.name, tc.golden)
				}
			}
			if width == 40 {
				var at60 bytes.Buffer
				TableLayout(&at60, tc.c, Layout{Width: 60})
				if out != at60.String() {
					t.Errorf("%s at 40 columns is not the table at 60", tc.name)
				}
			}
		}
	}
}

// TestWrapCutsOverlongWords: a word longer than any line (a by-id path)
// is cut at the width, its pieces on lines of their own, and nothing of
// it is lost; words that fit are never cut.
func TestWrapCutsOverlongWords(t *testing.T) {
	long := "/dev/disk/by-id/nvme-SAMSUNG_MZVL21T0HCLR-00B00_S676NF0R123456-part1" + strings.Repeat("x", 40)
	got := wrap("Target "+long+" mounted at /mnt/data", "  Target  ", "          ", 60)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	for _, l := range lines {
		if textWidth(l) > 60 {
			t.Errorf("line of %d columns: %q", textWidth(l), l)
		}
	}
	var joined strings.Builder
	for _, l := range lines[1:] {
		joined.WriteString(strings.TrimSpace(l))
	}
	if !strings.Contains(joined.String(), long) || lines[0] != "  Target  Target" || !strings.HasSuffix(got, " mounted at /mnt/data\n") {
		t.Errorf("wrapped:\n%s", got)
	}
	if got := wrap("a few short words", "", "  ", 60); got != "a few short words\n" {
		t.Errorf("short text wrapped as %q", got)
	}
}
