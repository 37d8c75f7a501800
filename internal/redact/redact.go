// Package redact hides the values that identify a machine or a disk
// (serial numbers, WWNs, hostnames, UUIDs, MAC addresses) in what diskprep
// shows or exports, as `lshw -sanitize` and `inxi -z` do, for output pasted
// into public posts.
//
// Each value becomes a token naming its kind and the first 6 hex digits of
// the plain SHA-256 of the value: "serial-3fa9c1", "host-a91b20". The hash is
// deliberately unkeyed, so the same disk or host gives the same token on every
// machine and in every record, and the columns of several people's redacted
// reports still line up. That hides a value from a casual reader; it is no
// protection against someone who guesses a low-entropy value (a hostname
// like "web01", a serial from a known range) and hashes the guess.
//
// Redaction is structural: every field known to carry such a value is
// replaced whole, and the values found that way are then also replaced
// wherever they appear inside other text (by-id names, mount sources, image
// paths, mkfs arguments, warnings), together with anything shaped like a
// UUID, a MAC address or a WWN. The functions return deep copies; what they
// are given, and so the records in the store, keep the full values.
package redact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Kind names what a token stands for; it is the token's prefix.
type Kind string

// The kinds of value redaction hides.
const (
	KindHost   Kind = "host"
	KindSerial Kind = "serial"
	KindWWN    Kind = "wwn"
	KindUUID   Kind = "uuid"
	KindMAC    Kind = "mac"
	// KindID is a /dev/disk/by-id name whose serial is not otherwise known.
	KindID Kind = "id"
)

var tokenRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(host|serial|wwn|uuid|mac|id)-[0-9a-f]{6}$`) })

// IsToken reports whether s is already a token, so redacting twice (a
// redacted record copied into another person's comparison) changes nothing.
func IsToken(s string) bool { return tokenRE().MatchString(s) }

// normalize gives the spelling of a value that is hashed, so the spellings
// one value takes in different places (a serial with spaces in sysfs and
// underscores in its by-id name, a UUID in upper or lower case, a WWN with
// or without 0x) give one token.
func normalize(kind Kind, v string) string {
	v = strings.TrimSpace(v)
	switch kind {
	case KindSerial:
		return strings.Join(strings.Fields(v), "_")
	case KindHost:
		return strings.TrimSuffix(strings.ToLower(v), ".")
	case KindWWN:
		v = strings.ToLower(v)
		for _, p := range []string{"0x", "naa.", "eui."} {
			v = strings.TrimPrefix(v, p)
		}
		return v
	case KindUUID, KindID:
		return strings.ToLower(v)
	case KindMAC:
		return strings.ReplaceAll(strings.ToLower(v), "-", ":")
	}
	return v
}

// Token returns the stand-in for value: kind-<first 6 hex digits of the
// SHA-256 of the normalized value>. An empty value ("not known") stays
// empty, and a token stays itself.
func Token(kind Kind, value string) string {
	v := normalize(kind, value)
	if v == "" || IsToken(strings.TrimSpace(value)) {
		return strings.TrimSpace(value)
	}
	sum := sha256.Sum256([]byte(v))
	return string(kind) + "-" + hex.EncodeToString(sum[:3])
}

// Copy returns a redacted deep copy of v: a host inventory, a result
// record, or any value whose JSON keys name what it holds (the rules below
// go by those keys, so redact needs none of the types it redacts).
func Copy[T any](v *T) *T {
	if v == nil {
		return nil
	}
	return All([]*T{v})[0]
}

// All returns redacted deep copies of vs. The values of every one are
// learned before any is redacted, so a hostname one record holds in its
// host field is also hidden where another mentions it in passing.
func All[T any](vs []*T) []*T {
	var r redactor
	trees := make([]any, len(vs))
	for i, v := range vs {
		if v == nil {
			continue
		}
		trees[i] = toTree(v)
		r.learnTree(trees[i], "")
	}
	out := make([]*T, len(vs))
	for i, v := range vs {
		if v == nil {
			continue
		}
		out[i] = new(T)
		fromTree(r.applyTree(trees[i], "", ""), out[i])
	}
	return out
}

// Text redacts free text on its own: UUIDs, MACs, WWNs and by-id names by
// their shape, and the values held by vs (hostnames, serials) wherever they
// appear. For lines printed beside redacted output, such as a record's
// file path or a --baseline group name.
func Text[T any](s string, vs ...*T) string {
	return Texts([]string{s}, vs...)[0]
}

// Texts is Text for several strings, learning the values of vs once: a
// listing of thousands of records redacts each file's path by all of
// them, and learning them again per path made it quadratic.
func Texts[T any](ss []string, vs ...*T) []string {
	var r redactor
	for _, v := range vs {
		if v != nil {
			r.learnTree(toTree(v), "")
		}
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = r.text(s)
	}
	return out
}

// toTree turns a value into its JSON tree, the deep copy every redaction
// works on: walking JSON keys reaches every string field, also ones added
// later, which then get at least the text pass.
func toTree(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		// Hosts and records are plain data; Marshal fails only on a
		// programming error, which must not print unredacted output.
		panic(fmt.Sprintf("redact: %v", err))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // byte counts beyond 2^53 survive the round trip
	var tree any
	if err := dec.Decode(&tree); err != nil {
		panic(fmt.Sprintf("redact: %v", err))
	}
	return tree
}

func fromTree(tree any, out any) {
	data, err := json.Marshal(tree)
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		panic(fmt.Sprintf("redact: %v", err))
	}
}

// rule is what happens to the string(s) under one JSON key.
type rule int

const (
	ruleText  rule = iota // free text: known values and shapes replaced inside it
	ruleKeep              // not identifying: left as is
	ruleWhole             // the whole value is one identifying value
	ruleByID              // /dev/disk/by-id paths
	ruleArgv              // mkfs argv: -U UUID, -m uuid=UUID
)

// fieldKind maps the JSON keys that carry an identifying value (in
// hwinfo.Host and the result record; the keys are the same in both) to its
// kind. A type whose identifying field is not named here gets the text pass.
var fieldKind = map[string]Kind{
	"hostname":           KindHost,
	"serial":             KindSerial,
	"wwn":                KindWWN,
	"fs_uuid":            KindUUID,
	"part_uuid":          KindUUID,
	"partition_table_id": KindUUID,
	"uuid":               KindUUID, // the record's prepared filesystem
	// Not collected today; named so that a field added under one of
	// these names is hidden from the day it appears.
	"system_uuid":    KindUUID,
	"product_uuid":   KindUUID,
	"product_serial": KindSerial,
	"board_serial":   KindSerial,
	"chassis_serial": KindSerial,
	"mac":            KindMAC,
	"mac_address":    KindMAC,
}

// plainFacts are the objects of product and software names: a host
// called "ubuntu" or "fedora" must not take those words out of the OS name.
var plainFacts = map[string]bool{"os": true, "cpu": true, "board": true, "system": true, "bios": true, "virtualization": true}

func ruleOf(parent, key string) rule {
	if _, ok := fieldKind[key]; ok {
		return ruleWhole
	}
	if plainFacts[parent] {
		return ruleKeep
	}
	switch key {
	case "by_id":
		return ruleByID
	case "mkfs_argv":
		return ruleArgv
	case "schema", "id", "part_type", "start", "end", "tool_version", "kernel":
		// part_type is a GPT type GUID (the same on every Linux data
		// partition), not an identity; the id and times name the record.
		return ruleKeep
	}
	return ruleText
}

// quotedRE finds quoted words, where a known value is replaced whatever
// its length.
var quotedRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"[^"]+"`) })

// hostNoteRE finds the real hostname bench names in its warning when
// --hostname recorded an alias: no field holds it.
var hostNoteRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`it calls itself "([^"]+)"`) })

// placeholders stand where a value is not known; they identify nothing,
// and searching text for one ("none") would mangle unrelated fields.
var placeholders = map[string]bool{
	// "imported, unknown" is the host of a record imported from fio
	// (bench/fio UnknownHost; its test holds the two together).
	"imported, unknown": true, "(unknown host)": true, "localhost": true, "localhost.localdomain": true,
	"none": true, "unknown": true, "n/a": true, "na": true, "null": true, "0": true,
	"not specified": true, "not available": true, "default string": true,
	"to be filled by o.e.m.": true, "system serial number": true,
}

func placeholder(v string) bool { return placeholders[strings.ToLower(strings.TrimSpace(v))] }

// redactor knows the identifying values of what it redacts, in every
// spelling they take, and the token for each.
type redactor struct {
	// known maps each ASCII-lowercased spelling searched for in text to
	// its token; maxLen is the longest spelling.
	known  map[string]string
	maxLen int
	// quoted holds every value, also those shorter than minText, for
	// where one is quoted whole: `it calls itself "vm"`.
	quoted map[string]string
}

// minText is the shortest value searched for inside other text: a two
// letter hostname would otherwise eat parts of unrelated words. The field
// itself is always replaced.
const minText = 3

func (r *redactor) learn(kind Kind, value string) {
	v := strings.TrimSpace(value)
	if v == "" || IsToken(v) || placeholder(v) {
		return
	}
	tok := Token(kind, v)
	if r.quoted == nil {
		r.quoted = map[string]string{}
	}
	r.quoted[asciiLower(v)] = tok
	add := func(spelling, tok string) {
		s := asciiLower(spelling)
		if len(s) < minText {
			return
		}
		if r.known == nil {
			r.known = map[string]string{}
		}
		if _, dup := r.known[s]; !dup {
			r.known[s] = tok
			r.maxLen = max(r.maxLen, len(s))
		}
	}
	add(v, tok)
	switch kind {
	case KindSerial:
		add(normalize(KindSerial, v), tok) // as in by-id names
	case KindWWN:
		add(normalize(KindWWN, v), tok)
	case KindHost:
		if short, _, ok := strings.Cut(v, "."); ok {
			add(short, Token(KindHost, short))
		}
	}
}

// learnTree collects the identifying values under the keys of fieldKind,
// and the UUIDs of mkfs argv.
func (r *redactor) learnTree(node any, key string) {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			r.learnTree(v, k)
		}
	case []any:
		prev := ""
		for _, v := range n {
			r.learnTree(v, key)
			if s, ok := v.(string); ok && key == "mkfs_argv" {
				if prev == "-U" && !uuidKeyword[s] {
					r.learn(KindUUID, s)
				}
				for _, m := range uuidOptRE().FindAllString(s, -1) {
					r.learn(KindUUID, strings.TrimPrefix(m, "uuid="))
				}
				prev = s
			}
		}
	case string:
		if kind, ok := fieldKind[key]; ok {
			r.learn(kind, n)
		}
		if key == "warnings" {
			if m := hostNoteRE().FindStringSubmatch(n); m != nil {
				r.learn(KindHost, m[1])
			}
		}
	}
}

// applyTree redacts the strings under node, which is the value of key in
// the object named parent.
func (r *redactor) applyTree(node any, parent, key string) any {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			n[k] = r.applyTree(v, key, k)
		}
		return n
	case []any:
		if key == "mkfs_argv" {
			return r.argv(n)
		}
		for i, v := range n {
			n[i] = r.applyTree(v, parent, key)
		}
		return n
	case string:
		switch ruleOf(parent, key) {
		case ruleKeep:
			return n
		case ruleWhole:
			if placeholder(n) {
				return n
			}
			return Token(fieldKind[key], n)
		case ruleByID:
			if !strings.HasPrefix(n, "/") {
				// A bare link name rather than its path.
				return r.text(byIDName(r.replaceKnown(n)))
			}
		}
		return r.text(n)
	}
	return node
}

// argv redacts mkfs arguments: the UUID after -U (mke2fs) and in
// uuid= of -m (mkfs.xfs), whatever its shape, then the text pass.
func (r *redactor) argv(args []any) []any {
	out := make([]any, len(args))
	prev := ""
	for i, a := range args {
		s, ok := a.(string)
		if !ok {
			out[i] = a
			continue
		}
		switch {
		case prev == "-U" && !uuidKeyword[s]:
			s = Token(KindUUID, s)
		case strings.HasPrefix(s, "-U") && len(s) > 2 && !uuidKeyword[s[2:]]:
			s = "-U" + Token(KindUUID, s[2:])
		default:
			s = uuidOptRE().ReplaceAllStringFunc(s, func(m string) string {
				return "uuid=" + Token(KindUUID, strings.TrimPrefix(m, "uuid="))
			})
		}
		out[i] = r.text(s)
		prev = s
	}
	return out
}

// uuidKeyword are mke2fs -U words that ask for a UUID rather than give one.
var uuidKeyword = map[string]bool{"clear": true, "random": true, "time": true}

var uuidOptRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`uuid=[^,\s]+`) })

// Shapes found in any text, compiled on first use (every diskprep
// command would otherwise pay for them at start). No \b around UUIDs, colon MACs and WWNs: it
// counts "_" as part of a word, and udev puts these values after one
// ("luks_<uuid>"); matching inside a longer run of hex only hides more.
var (
	uuidRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	})
	macRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)[0-9a-f]{2}(?::[0-9a-f]{2}){5}|\b[0-9a-f]{2}(?:-[0-9a-f]{2}){5}\b`)
	})
	// NAA WWNs as the kernel and udev spell them, EUI-64 and NGUIDs.
	wwnRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)0x[0-9a-f]{16}|(?:naa|eui)\.[0-9a-f]{16,32}`) })
	// udev's links name a disk by serial, WWN or UUID after these folders.
	diskLinkRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`/dev/disk/by-(id|uuid|partuuid)/([^\s/,;:"'()\[\]]+)`)
	})
	anyTokenRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:^|[^0-9A-Za-z])(?:host|serial|wwn|uuid|mac|id)-[0-9a-f]{6}(?:$|[^0-9A-Za-z])`)
	})
	partSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`-part[0-9]+$`) })
)

// text redacts free text: known values first (so each keeps the token of
// its field), then udev link names, then the shapes of UUIDs, MACs and WWNs.
func (r *redactor) text(s string) string {
	s = quotedRE().ReplaceAllStringFunc(s, func(m string) string {
		if tok, ok := r.quoted[asciiLower(m[1:len(m)-1])]; ok {
			return `"` + tok + `"`
		}
		return m
	})
	s = r.replaceKnown(s)
	s = diskLinkRE().ReplaceAllStringFunc(s, func(m string) string {
		sub := diskLinkRE().FindStringSubmatch(m)
		dir, name := sub[1], sub[2]
		if dir == "id" {
			return "/dev/disk/by-id/" + byIDName(name)
		}
		suffix := ""
		if loc := partSuffix().FindStringIndex(name); loc != nil {
			name, suffix = name[:loc[0]], name[loc[0]:]
		}
		return "/dev/disk/by-" + dir + "/" + Token(KindUUID, name) + suffix
	})
	s = uuidRE().ReplaceAllStringFunc(s, func(m string) string { return Token(KindUUID, m) })
	s = macRE().ReplaceAllStringFunc(s, func(m string) string { return Token(KindMAC, m) })
	return wwnRE().ReplaceAllStringFunc(s, func(m string) string { return Token(KindWWN, m) })
}

// byIDName redacts one by-id link name whose known values are already
// replaced. udev builds these names from the bus and the model, serial,
// WWN or EUI: a name that still holds no token embeds an identity this
// redactor did not know (a disk not in the record), so all but the bus
// prefix and the partition suffix is hashed.
func byIDName(name string) string {
	suffix := ""
	if loc := partSuffix().FindStringIndex(name); loc != nil {
		name, suffix = name[:loc[0]], name[loc[0]:]
	}
	bus, rest, ok := strings.Cut(name, "-")
	switch {
	case bus == "wwn" && rest != "":
		// wwn-0x5000... is the WWN itself: the token of the WWN field.
		return Token(KindWWN, rest) + suffix
	case anyTokenRE().MatchString(name):
		return name + suffix
	case !ok || rest == "":
		return Token(KindID, name) + suffix
	}
	return bus + "-" + Token(KindID, rest) + suffix
}

// replaceKnown replaces every known value in s in one pass, only where it
// stands as a whole word (no letter or digit on either side), so a hostname
// "lab" does not eat "label", and a replaced token is never searched again.
// At each start the longest match wins: a PARTUUID "000a1b2c-01" over its
// table id "000a1b2c", an FQDN over its short name. Candidates are looked
// up by substring, so the cost does not grow with the number of values
// (a comparison of a whole store knows thousands).
func (r *redactor) replaceKnown(s string) string {
	if len(r.known) == 0 || s == "" {
		return s
	}
	lower := asciiLower(s)
	var b strings.Builder
	i, last := 0, 0
	for i < len(s) {
		if i > 0 && alnum(s[i-1]) {
			i++
			continue
		}
		matched := false
		for j := min(len(s), i+r.maxLen); j >= i+minText; j-- {
			if j < len(s) && alnum(s[j]) {
				continue
			}
			if tok, ok := r.known[lower[i:j]]; ok {
				b.WriteString(s[last:i])
				b.WriteString(tok)
				i, last, matched = j, j, true
				break
			}
		}
		if !matched {
			i++
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func alnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// asciiLower lowercases ASCII letters only, so byte offsets in the result
// are those of the original.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
