package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/diskprep/diskprep/bench/compare"
	"github.com/diskprep/diskprep/internal/units"
)

// CacheReport is what a cache benchmark (diskprep cachebench) found, for
// people: the cached volume, each working set's phases (the HDD alone and
// the SSD alone, the bounds, and the cache cold, warm and steady), the
// comparison of the measured records with its verdicts, and what the cache
// buys, one sentence per working set.
type CacheReport struct {
	Kind, Mode          string // lvmcache|writecache|bcache, writethrough|writeback
	Origin, CacheDevice string
	CachedVolume        string
	CacheBytes          uint64
	Sets                []CacheSet
	Flush               *CacheFlush // writeback only
	Warnings            []string
	Records             []string
	// Comparison is the measured phases side by side against the HDD
	// alone, with significance; nil leaves it out.
	Comparison *compare.Comparison
}

// CacheSet is one working set.
type CacheSet struct {
	Name      string // below, near, above, above-zipf
	SizeBytes uint64
	// HDD and SSD are the disks alone (nil: not measured); Phases the
	// cached volume's, in the order they ran.
	HDD, SSD *CachePhase
	Phases   []CachePhase
	Sentence string // what the cache buys here
}

// CachePhase is one phase's medians over its repetitions.
type CachePhase struct {
	Name string // HDD alone, SSD alone, cold, warm, steady
	// SizeBytes is the working set it read when it differs from the
	// set's (the SSD alone reads at most all of the SSD); 0 otherwise.
	SizeBytes                             uint64
	IOPS, BWBytesPerS, LatP50NS, LatP99NS float64
	HitRatio                              *float64 // the kernel's counters; nil off the cache or unknown
}

// CacheFlush is a writeback cache's flush at its release.
type CacheFlush struct {
	DirtyBytes uint64
	ReleaseMS  float64
}

// CacheFormats are the outputs of WriteCache.
var CacheFormats = []string{"table", "markdown", "html"}

// WriteCache renders r in format, in the same order in each: the heading,
// the phases per working set (HTML: with their chart), the comparison
// with its verdicts, then what the cache buys (one sentence per working
// set), the flush, the warnings and the records.
func WriteCache(w io.Writer, format string, r *CacheReport, l Layout) error {
	var b strings.Builder
	switch format {
	case "table", "":
		cacheText(&b, r, false, l)
	case "markdown", "md":
		cacheText(&b, r, true, l)
	case "html":
		cacheHTML(&b, r, l)
	default:
		return fmt.Errorf("%q (valid: %s): %w", format, strings.Join(CacheFormats, ", "), ErrFormat)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// heading says what was measured: "lvmcache (writethrough) over /dev/sdb,
// cached by /dev/nvme0n1 (240 MiB of cache)".
func (r *CacheReport) heading() string {
	return fmt.Sprintf("%s (%s) over %s, cached by %s (%s of cache)", r.Kind, r.Mode, r.Origin, r.CacheDevice, cacheBytesText(r.CacheBytes))
}

func cacheBytesText(n uint64) string {
	if n == 0 {
		return "an unknown size"
	}
	return units.FormatSize(n)
}

func (s CacheSet) title() string { return s.Name + " " + units.FormatSize(s.SizeBytes) }

// phaseRow is a line of the phase table.
type phaseRow struct {
	CachePhase
	bound bool // a disk alone
}

// rows are a set's phases as the table shows them: the disks alone, then
// the cache's phases.
func (s CacheSet) rows() []phaseRow {
	var out []phaseRow
	for _, p := range []*CachePhase{s.HDD, s.SSD} {
		if p != nil {
			out = append(out, phaseRow{*p, true})
		}
	}
	for _, p := range s.Phases {
		out = append(out, phaseRow{CachePhase: p})
	}
	return out
}

func (p CachePhase) label() string {
	if p.SizeBytes > 0 {
		return p.Name + " (" + units.FormatSize(p.SizeBytes) + ")"
	}
	return p.Name
}

func hitText(h *float64) string {
	if h == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *h*100)
}

// phaseCells are a phase's figures, formatted as every other report's.
func phaseCells(p CachePhase) []string {
	return []string{num(p.IOPS), mbps(p.BWBytesPerS), latency(p.LatP50NS), latency(p.LatP99NS), hitText(p.HitRatio)}
}

// The phase table's columns: in capitals in the terminal, as compare's
// table has them, as words in Markdown and HTML.
var (
	cacheHead     = []string{"WORKING SET", "PHASE", "IOPS", "MB/s", "P50", "P99", "HIT RATIO"}
	cacheHeadHTML = []string{"Working set", "Phase", "IOPS", "MB/s", "p50", "p99", "Hit ratio"}
)

const cacheMethod = "MB/s is 10^6 bytes/s; values are medians over repetitions; hit ratios are the kernel's counters during each run."

func (r *CacheReport) flushText() string {
	return fmt.Sprintf("Flush: %s dirty at release; the release, flush included, took %.1f s.", units.FormatSize(r.Flush.DirtyBytes), r.Flush.ReleaseMS/1000)
}

// cacheText is the table and the Markdown form.
func cacheText(b *strings.Builder, r *CacheReport, md bool, l Layout) {
	var rows [][]string
	for _, s := range r.Sets {
		name := s.title()
		for _, p := range s.rows() {
			rows = append(rows, append([]string{name, p.label()}, phaseCells(p.CachePhase)...))
			name = ""
		}
	}
	if md {
		fmt.Fprintf(b, "## %s\n\n", r.heading())
		b.WriteString("| " + strings.Join(cacheHeadHTML, " | ") + " |\n|---|---|" + strings.Repeat("--:|", len(cacheHead)-2) + "\n")
		for _, row := range rows {
			for i := range row {
				row[i] = mdCell(row[i])
			}
			if row[0] != "-" {
				row[0] = "**" + row[0] + "**"
			} else {
				row[0] = ""
			}
			b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
	} else {
		b.WriteString(r.heading() + "\n\n")
		widths := make([]int, len(cacheHead))
		for _, row := range append([][]string{cacheHead}, rows...) {
			for i, c := range row {
				widths[i] = max(widths[i], textWidth(c))
			}
		}
		for _, row := range append([][]string{cacheHead}, rows...) {
			var cells []string
			for i, c := range row {
				if i >= 2 {
					cells = append(cells, padLeft(c, widths[i]))
				} else {
					cells = append(cells, pad(c, widths[i]))
				}
			}
			b.WriteString(strings.TrimRight(strings.Join(cells, "  "), " ") + "\n")
		}
	}
	b.WriteString("\n" + cacheMethod + "\n")
	if r.Comparison != nil {
		b.WriteString("\n")
		if md {
			_ = markdown(b, r.Comparison, l)
		} else {
			_ = TableLayout(b, r.Comparison, l)
		}
	}
	// One line each, however long: a sentence is found by grep.
	if md {
		b.WriteString("\n## What the cache buys\n\n")
	} else {
		b.WriteString("\nWhat the cache buys\n")
	}
	bullet := "  "
	if md {
		bullet = "- "
	}
	for _, s := range r.Sets {
		b.WriteString(bullet + s.Sentence + "\n")
	}
	if r.Flush != nil {
		b.WriteString("\n" + r.flushText() + "\n")
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n")
		for _, w := range r.Warnings {
			if md {
				b.WriteString("- ")
			}
			b.WriteString("warning: " + w + "\n")
		}
	}
	b.WriteString("\nRecords: " + strings.Join(r.Records, " ") + "\n")
}

// cacheCSS styles what only the cache page has: the disks alone drawn as
// the bounds, grey, the dashed lines that carry them through a working
// set's bars, and figures that stay readable where a line crosses them
// (a halo of the background around the glyphs).
var cacheCSS = fmt.Sprintf(`svg.chart .bar.bound{fill:%s}
svg.chart .bound-line{stroke:%s;stroke-width:1.5;stroke-dasharray:5 3;fill:none}
@media screen and (prefers-color-scheme: dark){svg.chart .bar.bound{fill:%s} svg.chart .bound-line{stroke:%s}}
svg.chart text.halo{paint-order:stroke;stroke:%s;stroke-width:4px;stroke-linejoin:round}
@media screen and (prefers-color-scheme: dark){svg.chart text.halo{stroke:%s}}
td.bound{color:var(--muted)} th.num{text-align:right}
@media print{p.intro{break-after:avoid} ul.buys{break-inside:avoid}}
ul.buys li{margin:6px 0}
`, light.same, light.fg, dark.same, dark.fg, light.bg, dark.bg)

// cacheHTML is the one page: the heading, the phases and their chart, the
// comparison's sections as compare's page has them, then what the cache
// buys.
func cacheHTML(b *strings.Builder, r *CacheReport, l Layout) {
	t := fmt.Sprintf("What the SSD cache buys: %s (%s) over %s", r.Kind, r.Mode, r.Origin)
	pageHead(b, t, cacheCSS)
	fmt.Fprintf(b, "<h1>%s</h1>\n", esc(t))
	vol := ""
	if r.CachedVolume != "" {
		vol = ", as the volume " + r.CachedVolume
	}
	fmt.Fprintf(b, "<p class=\"sub\">Cached by %s, %s of cache%s. Per working set: the HDD alone and the SSD alone, the bounds, and the cached volume cold (right after it was built), warm (after a warm-up pass) and steady; then the phases against the HDD alone with significance; <a href=\"#buys\">what the cache buys</a> at the end.</p>\n",
		esc(r.CacheDevice), esc(cacheBytesText(r.CacheBytes)), esc(vol))

	b.WriteString("<h2>Phases per working set</h2>\n<div class=\"table-wrap\">\n<table class=\"phases\">\n<thead><tr>")
	for i, h := range cacheHeadHTML {
		cls := ""
		if i >= 2 {
			cls = ` class="num"` // over figures aligned right
		}
		fmt.Fprintf(b, "<th scope=\"col\"%s>%s</th>", cls, h)
	}
	b.WriteString("</tr></thead>\n")
	for _, s := range r.Sets {
		rows := s.rows()
		if len(rows) == 0 {
			continue
		}
		b.WriteString("<tbody>\n")
		for i, p := range rows {
			b.WriteString("<tr>")
			if i == 0 {
				fmt.Fprintf(b, "<th scope=\"rowgroup\" rowspan=\"%d\">%s<br><span class=\"nw\">%s</span></th>", len(rows), esc(s.Name), esc(units.FormatSize(s.SizeBytes)))
			}
			cls := ""
			if p.bound {
				cls = ` class="bound"`
			}
			fmt.Fprintf(b, "<td%s>%s</td>", cls, esc(p.label()))
			for _, c := range phaseCells(p.CachePhase) {
				fmt.Fprintf(b, "<td class=\"num\"><span class=\"nw\">%s</span></td>", esc(c))
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</tbody>\n")
	}
	b.WriteString("</table>\n</div>\n")
	fmt.Fprintf(b, "<p class=\"method\">%s</p>\n", strings.Replace(esc(cacheMethod), "10^6", "10<sup>6</sup>", 1))
	fmt.Fprintf(b, "<figure>\n%s<figcaption>IOPS of each phase between the HDD alone and the SSD alone (dashed), and the share of its reads the cache served.</figcaption>\n</figure>\n",
		cacheChart(r, "cache-iops", svgWide).svg(false))

	if c := r.Comparison; c != nil {
		fmt.Fprintf(b, "<h2>The phases side by side, with significance</h2>\n<p class=\"sub intro\">%s: the measured records compared %s. Baseline: %s. <code>diskprep compare</code> shows them again.</p>\n",
			esc(title(c)), esc(byText(c)), esc(c.Groups[0].Name))
		comparisonSections(b, c, l)
	}

	b.WriteString("<h2 id=\"buys\">What the cache buys</h2>\n<ul class=\"buys\">\n")
	for _, s := range r.Sets {
		// The working set's name and size lead the sentence: set apart.
		if lead, rest, ok := strings.Cut(s.Sentence, ": "); ok {
			fmt.Fprintf(b, "<li><strong>%s:</strong> %s</li>\n", esc(lead), esc(rest))
		} else {
			fmt.Fprintf(b, "<li>%s</li>\n", esc(s.Sentence))
		}
	}
	b.WriteString("</ul>\n")
	if r.Flush != nil {
		fmt.Fprintf(b, "<p class=\"flush\">%s</p>\n", esc(r.flushText()))
	}
	if len(r.Warnings) > 0 {
		b.WriteString("<h3>Warnings</h3>\n<ul class=\"warn\">\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(b, "<li>%s</li>\n", esc(w))
		}
		b.WriteString("</ul>\n")
	}
	fmt.Fprintf(b, "<p class=\"method\">Records: %s</p>\n", esc(strings.Join(r.Records, " ")))
	b.WriteString("</body>\n</html>\n")
}

// phaseSeries is the colour of the cache's phase pi: its column's in the
// comparison's charts below (the column "KIND PHASE"), else the one it
// would have there (after the HDD and the SSD alone).
func (r *CacheReport) phaseSeries(pi int, name string) int {
	if c := r.Comparison; c != nil {
		for gi, g := range c.Groups {
			if g.Name == r.Kind+" "+name {
				return gi
			}
		}
	}
	return 2 + pi
}

// cacheChart draws, per working set, the IOPS of each phase as bars on a
// log axis, between the HDD alone and the SSD alone (grey bars, carried
// through the set's bars as dashed lines: the bounds), and on the right
// the hit ratio of each phase of the cache.
func cacheChart(r *CacheReport, id string, w float64) *svgDoc {
	d := &svgDoc{id: id, w: w, kind: "cache-phases"}
	d.title = "IOPS and hit ratio per phase"
	y := d.heading(d.title, "median IOPS of the repetitions, logarithmic scale, longer is better; grey: the HDD alone and the SSD alone, the bounds (dashed); right: the hit ratio the kernel counted")

	type bar struct {
		name  string
		p     CachePhase
		class string
		bound bool
	}
	lo, hi := math.Inf(1), 0.0
	labelW, valueW := 0.0, 0.0
	sets := make([][]bar, len(r.Sets))
	for si, s := range r.Sets {
		if s.HDD != nil {
			sets[si] = append(sets[si], bar{name: s.HDD.Name, p: *s.HDD, class: "bound", bound: true})
		}
		for pi, p := range s.Phases {
			sets[si] = append(sets[si], bar{name: p.Name, p: p, class: series(r.phaseSeries(pi, p.Name))})
		}
		if s.SSD != nil {
			sets[si] = append(sets[si], bar{name: s.SSD.Name, p: *s.SSD, class: "bound", bound: true})
		}
		for _, b := range sets[si] {
			labelW = math.Max(labelW, textExtent(b.name, fontBase, false))
			valueW = math.Max(valueW, textExtent(num(b.p.IOPS), fontBase, false))
			if b.p.IOPS > 0 {
				lo, hi = math.Min(lo, b.p.IOPS), math.Max(hi, b.p.IOPS)
			}
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	// The axis starts at the power of ten below the smallest figure: the
	// slowest bar stays a bar.
	lo = math.Pow(10, math.Floor(math.Log10(lo/1.2)))
	hi *= 1.15
	ticks := logTicks(lo, hi)
	for len(ticks) < 3 {
		hi *= 2
		ticks = logTicks(lo, hi)
	}

	labelW = math.Min(labelW+22, w*0.3)
	hitValueW := textExtent("100%", fontBase, false) + 12
	hitW := math.Max(100, math.Min(180, w*0.2))
	hitX1 := w - 10 - hitValueW
	hitX0 := hitX1 - hitW
	x0, x1 := labelW, hitX0-28-valueW-6
	x := func(v float64) float64 {
		return x0 + (math.Log(v)-math.Log(lo))/(math.Log(hi)-math.Log(lo))*(x1-x0)
	}
	hx := func(h float64) float64 { return hitX0 + h*hitW }
	// 2 and 5 times the powers of ten only where their labels have room.
	for i := 1; i < len(ticks); i++ {
		room := (textExtent(tickNum(ticks[i-1]), fontTick, false)+textExtent(tickNum(ticks[i]), fontTick, false))/2 + 8
		if x(ticks[i])-x(ticks[i-1]) < room {
			var powers []float64
			for _, t := range ticks {
				if e := math.Log10(t); math.Abs(e-math.Round(e)) < 1e-9 {
					powers = append(powers, t)
				}
			}
			ticks = powers
			break
		}
	}

	d.text(x0, y+10, "start", "muted", "IOPS")
	d.text(hitX0, y+10, "start", "muted", "hit ratio")
	y += 18
	const barH, gap = 15.0, 4.0
	type span struct{ a, b float64 }
	var spans []span
	var bars strings.Builder
	var desc []string
	for si, s := range r.Sets {
		if len(sets[si]) == 0 {
			continue
		}
		d.text(10, y+13, "start", "head", fitText(s.title(), fontBase, true, w-20))
		y += 20
		top := y - 3
		var parts []string
		for _, b := range sets[si] {
			d.text(labelW-8, y+11.5, "end", "", fitText(b.name, fontBase, false, labelW-16))
			tip := fmt.Sprintf("%s, %s: %s IOPS", s.title(), b.name, num(b.p.IOPS))
			if b.p.HitRatio != nil {
				tip += ", hit ratio " + hitText(b.p.HitRatio)
			}
			if b.p.IOPS > 0 {
				wv := math.Max(x(b.p.IOPS)-x0, 1)
				fmt.Fprintf(&bars, `<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%.0f"><title>%s</title></rect>`+"\n", b.class, x0, y, wv, barH, esc(tip))
				d.text(x0+wv+6, y+11.5, "start", "halo", num(b.p.IOPS))
			} else {
				d.text(x0+6, y+11.5, "start", "muted", "no reads")
			}
			switch {
			case b.p.HitRatio != nil:
				h := math.Max(0, math.Min(1, *b.p.HitRatio))
				fmt.Fprintf(&bars, `<rect class="bar %s" x="%.1f" y="%.1f" width="%.1f" height="%.0f"><title>%s</title></rect>`+"\n", b.class, hitX0, y, math.Max(hx(h)-hitX0, 1), barH, esc(tip))
				d.text(hx(h)+6, y+11.5, "start", "halo", fmt.Sprintf("%.0f%%", h*100))
			case !b.bound:
				d.text(hitX0+6, y+11.5, "start", "muted", "not counted")
			}
			part := b.name + " " + num(b.p.IOPS) + " IOPS"
			if b.p.HitRatio != nil {
				part += " at " + hitText(b.p.HitRatio)
			}
			parts = append(parts, part)
			y += barH + gap
		}
		spans = append(spans, span{top, y + 1})
		// The bounds, through the set's bars.
		for _, p := range []*CachePhase{s.HDD, s.SSD} {
			if p != nil && p.IOPS > 0 {
				fmt.Fprintf(&bars, `<line class="bound-line" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", x(p.IOPS), top, x(p.IOPS), y+1)
			}
		}
		desc = append(desc, s.title()+": "+strings.Join(parts, ", "))
		y += 8
	}
	for _, sp := range spans {
		for _, t := range ticks {
			d.line("grid", x(t), sp.a, x(t), sp.b)
		}
		for _, h := range []float64{0.5, 1} {
			d.line("grid", hx(h), sp.a, hx(h), sp.b)
		}
		d.line("axis", x0, sp.a, x0, sp.b)
		d.line("axis", hitX0, sp.a, hitX0, sp.b)
	}
	d.b.WriteString(bars.String())
	d.line("axis", x0, y, x1, y)
	d.line("axis", hitX0, y, hitX0+hitW, y)
	for _, t := range ticks {
		d.text(x(t), y+15, "middle", "tick", tickNum(t))
	}
	for _, h := range []float64{0, 0.5, 1} {
		d.text(hx(h), y+15, "middle", "tick", fmt.Sprintf("%.0f%%", h*100))
	}
	d.text(x1, y+31, "end", "muted", "IOPS, log scale")
	d.text(hitX0+hitW, y+31, "end", "muted", "hit ratio")
	d.h = y + 40
	d.desc = "IOPS per phase. " + strings.Join(desc, "; ") + "."
	return d
}
