package probe

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// VGMetadata is the part of an LVM2 VG metadata text (the "Text Format
// Volume Group" that vgcfgbackup also writes) that says how the VG is laid
// out: its extents, PVs and LVs.
type VGMetadata struct {
	Name string
	ID   string // 6-4-4-4-4-4-6, as vgs prints it
	// SeqNo counts the VG's metadata updates; every PV's copy has one, the
	// highest is the newest.
	SeqNo         uint64
	ExtentSectors uint64 // extent_size, in 512-byte sectors
	Status        []string
	PVs           []VGPV
	LVs           []VGLV
}

// VGPV is one physical_volumes entry.
type VGPV struct {
	Key        string // pv0, the name segments refer to it by
	ID         string
	DeviceHint string // "device": the path lvm2 last saw it at, a hint only
	Status     []string
	Flags      []string // "MISSING" when lvm2 lost it
	DevSectors uint64
	PEStart    uint64 // sectors
	PECount    uint64
}

// VGLV is one logical_volumes entry, hidden ones (sub-LVs of a RAID, a
// cache pool, a thin pool: no "VISIBLE" status) included.
type VGLV struct {
	Name     string
	ID       string
	Status   []string
	Flags    []string
	Segments []VGSegment
}

// Visible tells an LV users see (lvs without -a) from an internal one.
func (lv VGLV) Visible() bool { return slices.Contains(lv.Status, "VISIBLE") }

// VGSegment is one segmentN of an LV.
type VGSegment struct {
	StartExtent uint64
	ExtentCount uint64
	Type        string // striped (linear is striped with one stripe), raid1, mirror, thin-pool, thin, cache, writecache ...
	StripeCount uint64
	// Stripes are the PV areas of a striped segment: which PV (by key) and
	// the first extent there.
	Stripes []VGArea
	// LVRefs are the LVs a segment of another type is built from (raids,
	// mirrors, pool, origin, cache_pool, writecache ...), by key then name.
	LVRefs map[string][]string
}

// VGArea is one area of a striped segment.
type VGArea struct {
	PV    string
	Start uint64
}

// ErrBadMetadata means a metadata text could not be parsed.
var ErrBadMetadata = errors.New("malformed lvm2 metadata")

// ParseVGMetadata parses a VG metadata text.
func ParseVGMetadata(text []byte) (*VGMetadata, error) {
	root, err := parseLVMConfig(string(text))
	if err != nil {
		return nil, err
	}
	var vg *cfgSection
	for _, s := range root.sections {
		if _, ok := s.values["extent_size"]; ok {
			vg = s
			break
		}
	}
	if vg == nil {
		return nil, fmt.Errorf("%w: no volume group section", ErrBadMetadata)
	}
	md := &VGMetadata{Name: vg.name, ID: vg.str("id"), SeqNo: vg.num("seqno"), ExtentSectors: vg.num("extent_size"), Status: vg.strs("status")}
	if pvs := vg.section("physical_volumes"); pvs != nil {
		for _, p := range pvs.sections {
			md.PVs = append(md.PVs, VGPV{Key: p.name, ID: p.str("id"), DeviceHint: p.str("device"), Status: p.strs("status"),
				Flags: p.strs("flags"), DevSectors: p.num("dev_size"), PEStart: p.num("pe_start"), PECount: p.num("pe_count")})
		}
	}
	if lvs := vg.section("logical_volumes"); lvs != nil {
		for _, l := range lvs.sections {
			lv := VGLV{Name: l.name, ID: l.str("id"), Status: l.strs("status"), Flags: l.strs("flags")}
			for _, s := range l.sections {
				if !strings.HasPrefix(s.name, "segment") {
					continue
				}
				seg := VGSegment{StartExtent: s.num("start_extent"), ExtentCount: s.num("extent_count"), Type: s.str("type"),
					StripeCount: s.num("stripe_count")}
				for _, k := range s.keys {
					v := s.values[k]
					switch k {
					case "stripes":
						for i := 0; i+1 < len(v.list); i += 2 {
							start, _ := strconv.ParseUint(v.list[i+1].s, 10, 64)
							seg.Stripes = append(seg.Stripes, VGArea{PV: v.list[i].s, Start: start})
						}
					case "raids", "mirrors", "pool", "origin", "cache_pool", "writecache", "metadata", "data", "cow", "mirror_log":
						if seg.LVRefs == nil {
							seg.LVRefs = map[string][]string{}
						}
						for _, x := range v.items() {
							if x.str {
								seg.LVRefs[k] = append(seg.LVRefs[k], x.s)
							}
						}
					}
				}
				lv.Segments = append(lv.Segments, seg)
			}
			md.LVs = append(md.LVs, lv)
		}
	}
	return md, nil
}

// The lvm2 config syntax: `key = value` where a value is a number, a
// "string" or a [list, of, values], and `name { ... }` sections; # starts
// a comment.

type cfgValue struct {
	s      string
	str    bool
	list   []cfgValue
	isList bool
}

func (v cfgValue) items() []cfgValue {
	if v.isList {
		return v.list
	}
	return []cfgValue{v}
}

type cfgSection struct {
	name     string
	keys     []string
	values   map[string]cfgValue
	sections []*cfgSection
}

func (s *cfgSection) str(k string) string { return s.values[k].s }

func (s *cfgSection) num(k string) uint64 {
	n, _ := strconv.ParseUint(s.values[k].s, 10, 64)
	return n
}

func (s *cfgSection) strs(k string) []string {
	var out []string
	for _, v := range s.values[k].items() {
		if v.s != "" {
			out = append(out, v.s)
		}
	}
	return out
}

func (s *cfgSection) section(name string) *cfgSection {
	for _, c := range s.sections {
		if c.name == name {
			return c
		}
	}
	return nil
}

type cfgLexer struct {
	s   string
	pos int
}

type cfgToken struct {
	kind byte // 'w' word, 's' string, or the punctuation itself; 0 at the end
	text string
}

func (l *cfgLexer) next() (cfgToken, error) {
	for l.pos < len(l.s) {
		c := l.s[l.pos]
		switch {
		case c == '#':
			for l.pos < len(l.s) && l.s[l.pos] != '\n' {
				l.pos++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.pos++
		case strings.IndexByte("={}[],", c) >= 0:
			l.pos++
			return cfgToken{kind: c}, nil
		case c == '"':
			var b strings.Builder
			for l.pos++; ; l.pos++ {
				if l.pos >= len(l.s) {
					return cfgToken{}, fmt.Errorf("%w: unterminated string", ErrBadMetadata)
				}
				c := l.s[l.pos]
				if c == '\\' && l.pos+1 < len(l.s) {
					l.pos++
					b.WriteByte(l.s[l.pos])
					continue
				}
				if c == '"' {
					l.pos++
					return cfgToken{kind: 's', text: b.String()}, nil
				}
				b.WriteByte(c)
			}
		default:
			start := l.pos
			for l.pos < len(l.s) && strings.IndexByte("={}[],\"# \t\r\n", l.s[l.pos]) < 0 {
				l.pos++
			}
			return cfgToken{kind: 'w', text: l.s[start:l.pos]}, nil
		}
	}
	return cfgToken{}, nil
}

// maxCfgDepth bounds nesting: a VG text is four deep (vg, logical_volumes,
// lv, segment); garbage must not recurse without end.
const maxCfgDepth = 16

func parseLVMConfig(s string) (*cfgSection, error) {
	l := &cfgLexer{s: s}
	root := &cfgSection{values: map[string]cfgValue{}}
	if err := parseCfgBody(l, root, 0, true); err != nil {
		return nil, err
	}
	return root, nil
}

func parseCfgBody(l *cfgLexer, sec *cfgSection, depth int, top bool) error {
	if depth > maxCfgDepth {
		return fmt.Errorf("%w: nested too deep", ErrBadMetadata)
	}
	for {
		t, err := l.next()
		if err != nil {
			return err
		}
		switch {
		case t.kind == 0 && top:
			return nil
		case t.kind == '}' && !top:
			return nil
		case t.kind != 'w':
			return fmt.Errorf("%w: unexpected %q at byte %d", ErrBadMetadata, t.kind, l.pos)
		}
		op, err := l.next()
		if err != nil {
			return err
		}
		switch op.kind {
		case '{':
			child := &cfgSection{name: t.text, values: map[string]cfgValue{}}
			if err := parseCfgBody(l, child, depth+1, false); err != nil {
				return err
			}
			sec.sections = append(sec.sections, child)
		case '=':
			v, err := parseCfgValue(l)
			if err != nil {
				return err
			}
			if _, dup := sec.values[t.text]; !dup {
				sec.keys = append(sec.keys, t.text)
			}
			sec.values[t.text] = v
		default:
			return fmt.Errorf("%w: %q is followed by neither = nor {", ErrBadMetadata, t.text)
		}
	}
}

func parseCfgValue(l *cfgLexer) (cfgValue, error) {
	t, err := l.next()
	if err != nil {
		return cfgValue{}, err
	}
	switch t.kind {
	case 'w':
		return cfgValue{s: t.text}, nil
	case 's':
		return cfgValue{s: t.text, str: true}, nil
	case '[':
		v := cfgValue{isList: true}
		for {
			t, err := l.next()
			if err != nil {
				return cfgValue{}, err
			}
			switch t.kind {
			case ']':
				return v, nil
			case ',':
			case 'w':
				v.list = append(v.list, cfgValue{s: t.text})
			case 's':
				v.list = append(v.list, cfgValue{s: t.text, str: true})
			default:
				return cfgValue{}, fmt.Errorf("%w: unexpected %q in a list", ErrBadMetadata, t.kind)
			}
		}
	}
	return cfgValue{}, fmt.Errorf("%w: value expected at byte %d", ErrBadMetadata, l.pos)
}
