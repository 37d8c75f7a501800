package report

import (
	"sort"
	"strings"
)

// Text extents for placing chart labels, estimated from font metrics: the
// advance widths (in em) of DejaVu Sans and DejaVu Sans Bold, read from
// the fonts' hmtx tables. DejaVu is what Debian's browsers draw system-ui
// and sans-serif with, and wider than the system fonts of other desktops,
// so a label placed by these widths fits wherever the page is opened.

// dejaVuASCII are the advances of ' ' (32) to '~' (126).
var dejaVuASCII = [95]float64{0.318, 0.401, 0.460, 0.838, 0.636, 0.950, 0.780, 0.275, 0.390, 0.390, 0.500, 0.838, 0.318, 0.361, 0.318, 0.337, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.636, 0.337, 0.337, 0.838, 0.838, 0.838, 0.531, 1.000, 0.684, 0.686, 0.698, 0.770, 0.632, 0.575, 0.775, 0.752, 0.295, 0.295, 0.656, 0.557, 0.863, 0.748, 0.787, 0.603, 0.787, 0.695, 0.635, 0.611, 0.732, 0.684, 0.989, 0.685, 0.611, 0.685, 0.390, 0.337, 0.390, 0.838, 0.500, 0.500, 0.613, 0.635, 0.550, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278, 0.278, 0.579, 0.278, 0.974, 0.634, 0.612, 0.635, 0.635, 0.411, 0.521, 0.392, 0.634, 0.592, 0.818, 0.592, 0.592, 0.525, 0.636, 0.337, 0.636, 0.838}

var dejaVuBoldASCII = [95]float64{0.348, 0.456, 0.521, 0.838, 0.696, 1.002, 0.872, 0.306, 0.457, 0.457, 0.523, 0.838, 0.380, 0.415, 0.380, 0.365, 0.696, 0.696, 0.696, 0.696, 0.696, 0.696, 0.696, 0.696, 0.696, 0.696, 0.400, 0.400, 0.838, 0.838, 0.838, 0.580, 1.000, 0.774, 0.762, 0.734, 0.830, 0.683, 0.683, 0.821, 0.837, 0.372, 0.372, 0.775, 0.637, 0.995, 0.837, 0.850, 0.733, 0.850, 0.770, 0.720, 0.682, 0.812, 0.774, 1.103, 0.771, 0.724, 0.725, 0.457, 0.365, 0.457, 0.838, 0.500, 0.500, 0.675, 0.716, 0.593, 0.716, 0.678, 0.435, 0.716, 0.712, 0.343, 0.343, 0.665, 0.343, 1.042, 0.712, 0.687, 0.716, 0.716, 0.493, 0.595, 0.478, 0.712, 0.652, 0.924, 0.645, 0.652, 0.582, 0.712, 0.365, 0.712, 0.838}

// dejaVuOther are the advances of the other characters the reports use
// (the same in both weights, but for µ and ·).
var dejaVuOther = map[rune]float64{'µ': 0.636, '–': 0.5, '·': 0.318, '±': 0.838, '≈': 0.838, '▲': 0.769, '▼': 0.769, '→': 0.838, '°': 0.5, '×': 0.838, '…': 1.0, '−': 0.838}

// textExtent is the estimated width in px of s set at size px.
func textExtent(s string, size float64, bold bool) float64 {
	w := 0.0
	for _, r := range s {
		switch {
		case r >= 32 && r < 127 && bold:
			w += dejaVuBoldASCII[r-32]
		case r >= 32 && r < 127:
			w += dejaVuASCII[r-32]
		default:
			a, ok := dejaVuOther[r]
			if !ok {
				a = 1 // unknown: as wide as an em, the widest a glyph usually is
			}
			if bold && (r == 'µ' || r == '·') {
				a *= 1.16
			}
			w += a
		}
	}
	return w * size
}

// fitText shortens s with an ellipsis until it fits width px.
func fitText(s string, size float64, bold bool, width float64) string {
	if textExtent(s, size, bold) <= width {
		return s
	}
	rs := []rune(s)
	for len(rs) > 1 {
		rs = rs[:len(rs)-1]
		if t := string(rs) + "…"; textExtent(t, size, bold) <= width {
			return t
		}
	}
	return "…"
}

// fitAmong shortens s, one of the names all of a chart, to width px by
// cutting what it shares with the other names rather than its end, so
// that "xfs · /tmp/diskprep-fscompare-1183…" and "…-1184…" do not both
// end in an ellipsis just before they differ. Against each other name,
// the runes where the two part are kept; the longest stretch outside
// those is cut in its middle. It falls back to fitText.
func fitAmong(s string, all []string, size float64, bold bool, width float64) string {
	if textExtent(s, size, bold) <= width {
		return s
	}
	rs := []rune(s)
	keep := make([]bool, len(rs))
	for _, o := range all {
		if o == s {
			continue
		}
		or := []rune(o)
		p := 0
		for p < len(rs) && p < len(or) && rs[p] == or[p] {
			p++
		}
		q := 0
		for q < len(rs)-p && q < len(or)-p && rs[len(rs)-1-q] == or[len(or)-1-q] {
			q++
		}
		// Where they part, and a few runes on: enough to tell them apart.
		for i := p; i < max(p+1, min(p+6, len(rs)-q)) && i < len(rs); i++ {
			keep[i] = true
		}
	}
	// The stretches not kept, longest first.
	type gap struct{ a, b int }
	var gaps []gap
	for i := 0; i < len(rs); {
		if keep[i] {
			i++
			continue
		}
		j := i
		for j < len(rs) && !keep[j] {
			j++
		}
		gaps = append(gaps, gap{i, j})
		i = j
	}
	sort.SliceStable(gaps, func(i, j int) bool { return gaps[i].b-gaps[i].a > gaps[j].b-gaps[j].a })
	cut := map[int]gap{} // by start: the runes of a gap left out
	build := func() string {
		var b strings.Builder
		for i := 0; i < len(rs); {
			if g, ok := cut[i]; ok {
				b.WriteRune('…')
				i = g.b
				continue
			}
			b.WriteRune(rs[i])
			i++
		}
		return b.String()
	}
	for _, g := range gaps {
		n := g.b - g.a
		for k := 1; k <= n; k++ {
			from := g.a + (n-k)/2
			// A gap at either end keeps its outer runes: the start of a
			// name and its last runes are what people read first.
			cut[from] = gap{from, from + k}
			if t := build(); textExtent(t, size, bold) <= width {
				return t
			}
			delete(cut, from)
		}
		from := g.a + 0
		cut[from] = gap{from, g.b}
	}
	return fitText(build(), size, bold, width)
}
