package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/bench/compare/comparetest"
)

func msv(v float64) *float64 { return &v }

// fleetThree is the fleet of three: two SSD hosts, one 5 s ahead,
// a throttled disk whose host's clock is unknown, and a fourth host that
// failed before it measured anything.
func fleetThree(t *testing.T) *compare.Comparison {
	t.Helper()
	recs := comparetest.Fleet([]comparetest.FleetHost{
		{Name: "node-a", Factor: 1, OffsetMS: msv(0.42), Late: 3 * time.Millisecond},
		{Name: "node-b", Factor: 0.98, Disk: "KINGSTON SA400S37480G", OffsetMS: msv(5012.3), Late: 11 * time.Millisecond},
		{Name: "node-c", Factor: 0.1, Disk: "ST4000DM004-2CV104", Late: 40 * time.Millisecond},
	})
	c, err := compare.Compare(recs, compare.Options{By: compare.ByHost, Expected: []string{"node-a", "node-b", "node-c", "node-d"},
		Failed: []compare.FailedHost{{Host: "node-d", Reason: "bench: not enough free space in /data for the test file: need 2.1 GiB, 1.0 GiB available"}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fleetFifty is a fleet of 50 hosts made from one template record, a
// few percent apart, node-07's disk throttled to a tenth.
func fleetFifty(t *testing.T) *compare.Comparison {
	t.Helper()
	c, err := compare.Compare(comparetest.Fleet(comparetest.FleetOf(50, 7)), compare.Options{By: compare.ByHost})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The fleet summary is read first: at the top of the table, every line
// of it within 120 columns for 3 hosts and for 50, each host on a line
// of its own naming its disk, bus and filesystem, the throttled host
// named as the outlier and the failed one with its reason. At 120 it is
// the golden, byte for byte; narrower, it keeps every line within the
// width (one wrapped line per host when the table cannot fit).
func TestFleetSummaryText(t *testing.T) {
	for _, tc := range []struct {
		name, golden string
		c            *compare.Comparison
		outlier      string
	}{
		{"3 hosts", "fleet3.txt", fleetThree(t), "node-c: seq1m-read 52.0 MB/s (0.1×), seq1m-write 48.0 MB/s (0.1×)"},
		{"50 hosts", "fleet50.txt", fleetFifty(t), "node-07: seq1m-read"},
	} {
		for _, width := range []int{60, 80, 120, 200} {
			summary := fleetText(tc.c, width)
			for i, l := range strings.Split(summary, "\n") {
				if textWidth(l) > width {
					t.Errorf("%s at %d: summary line %d is %d columns: %q", tc.name, width, i+1, textWidth(l), l)
				}
			}
			flat := oneLine(summary)
			for _, h := range tc.c.Fleet.Hosts {
				if !strings.Contains(summary, "  "+h.Host) {
					t.Errorf("%s at %d: no line for %s", tc.name, width, h.Host)
				}
			}
			if !strings.Contains(flat, oneLine(tc.outlier)) {
				t.Errorf("%s at %d: the outlier is not named as %q:\n%s", tc.name, width, tc.outlier, summary)
			}
			var table bytes.Buffer
			if err := TableLayout(&table, tc.c, Layout{Width: width}); err != nil {
				t.Fatal(err)
			}
			out := table.String()
			if !strings.Contains(out, summary) || strings.Index(out, "Fleet summary") > strings.Index(out, "\n")+2 {
				t.Errorf("%s at %d: the summary is not the first thing after the title", tc.name, width)
			}
			if width == 120 {
				for i, l := range strings.Split(out, "\n") {
					if textWidth(l) > width {
						t.Errorf("%s: table line %d is %d columns: %q", tc.name, i+1, textWidth(l), l)
					}
				}
				checkGolden(t, tc.golden, []byte(summary))
				// At 120 columns the hosts are a table: one line each.
				if n := strings.Count(summary, "\n  node-"); n != len(tc.c.Fleet.Hosts) {
					t.Errorf("%s: %d host lines", tc.name, n)
				}
			}
		}
	}
	summary := fleetText(fleetThree(t), 120)
	for _, want := range []string{"Fleet summary: 3 of 4 hosts measured, 1 failed; synchronized start 2026-12-03T10:00:00Z",
		"node-d: bench: not enough free space in /data", "+5.01 s", "+37.0 ms?", "ST4000DM004-2CV104"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

// Markdown and HTML carry the same summary table first, outliers marked.
func TestFleetSummaryMarkdownAndHTML(t *testing.T) {
	c := fleetThree(t)
	var md, page bytes.Buffer
	if err := Markdown(&md, c); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "fleet3.markdown", md.Bytes())
	if err := HTML(&page, c); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	fleet := html[strings.Index(html, "<h2>Fleet summary</h2>"):]
	if strings.Index(html, "<h2>Fleet summary</h2>") > strings.Index(html, "<h2>What changed</h2>") {
		t.Error("the fleet summary is not the page's first section")
	}
	if n := strings.Count(fleet[:strings.Index(fleet, "</table>")], `class="num nw outlier"`); n != 5 {
		t.Errorf("%d outlier cells, want node-c's 5", n)
	}
	for _, want := range []string{`<th class="nw" scope="row">node-c</th>`, "<strong>node-d</strong>: bench: not enough free space", "Start<br>skew", "rnd4k<br>read<br>p99"} {
		if !strings.Contains(fleet, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	var p50 bytes.Buffer
	if err := HTML(&p50, fleetFifty(t)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(p50.String(), `<th class="nw" scope="row">node-`); n != 50 {
		t.Errorf("50-host page has %d host rows", n)
	}
}
