package compare

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/workload"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// identityField extracts one fact from a record; "" means unknown.
type identityField struct {
	key, name string
	get       func(*record.Record) string
	// warn marks facts that make a comparison unfair when they differ
	// beyond the grouping variable.
	warn bool
}

var identityFields = []identityField{
	{key: "host", name: "Host", get: func(r *record.Record) string { return r.Host.Hostname }},
	{key: "os", name: "OS", get: func(r *record.Record) string {
		o := r.Host.OS
		switch {
		case o.RedHatRelease != "":
			return o.RedHatRelease
		case o.PrettyName != "":
			return o.PrettyName
		}
		return strings.TrimSpace(o.Name + " " + o.Version)
	}},
	{key: "kernel", name: "Kernel", warn: true, get: func(r *record.Record) string { return r.Host.Kernel }},
	{key: "cpu", name: "CPU", warn: true, get: func(r *record.Record) string {
		c := r.Host.CPU
		if c.Model == "" {
			return ""
		}
		if c.Threads > 0 {
			return fmt.Sprintf("%s (%d threads)", c.Model, c.Threads)
		}
		return c.Model
	}},
	{key: "memory", name: "Memory", get: func(r *record.Record) string {
		if r.Host.Memory.TotalBytes == 0 {
			return ""
		}
		return units.FormatSize(r.Host.Memory.TotalBytes)
	}},
	{key: "system", name: "System", get: func(r *record.Record) string {
		return strings.TrimSpace(r.Host.System.Vendor + " " + r.Host.System.Product)
	}},
	{key: "hypervisor", name: "Hypervisor", get: func(r *record.Record) string { return r.Host.Virt.Hypervisor }},
	{key: "disk", name: "Disk", warn: true, get: func(r *record.Record) string {
		m := diskModel(r.Target)
		if m != "" && r.Target.SizeBytes > 0 {
			m += " " + units.FormatSize(r.Target.SizeBytes)
		}
		return m
	}},
	{key: "device", name: "Device", get: func(r *record.Record) string {
		if r.Target.Disk != "" && r.Target.Device != "" && r.Target.Disk != r.Target.Device {
			return r.Target.Device + " on " + r.Target.Disk
		}
		if r.Target.Device != "" {
			return r.Target.Device
		}
		return r.Target.Disk
	}},
	{key: "stack", name: "Storage", get: func(r *record.Record) string { return r.Target.StackText }},
	{key: "encryption", name: "Encryption", get: func(r *record.Record) string {
		// "none" where the stack is known to have no dm-crypt; unknown
		// for a record older than the field, or one whose header was
		// not read.
		if e := r.Target.Encryption; e != nil {
			return EncryptionText(e)
		}
		if r.Target.StackText == "" || slices.ContainsFunc(r.Target.Stack, func(l hwinfo.Layer) bool { return l.Kind == "crypt" }) {
			return ""
		}
		return "none"
	}},
	{key: "media", name: "Media", get: func(r *record.Record) string {
		var parts []string
		if r.Target.Media != "" {
			parts = append(parts, strings.ToUpper(r.Target.Media))
		}
		if r.Target.Transport != "" {
			parts = append(parts, r.Target.Transport)
		}
		if r.Target.Virtual {
			v := "virtual"
			if r.Target.VirtualBy != "" {
				v += " (" + r.Target.VirtualBy + ")"
			}
			parts = append(parts, v)
		}
		return strings.Join(parts, ", ")
	}},
	{key: "fs", name: "Filesystem", warn: true, get: func(r *record.Record) string {
		f := fsOf(r)
		if strings.HasPrefix(f, "(") {
			return ""
		}
		return f
	}},
	{key: "mkfs", name: "mkfs", get: func(r *record.Record) string {
		if p := r.Target.Prepared; p != nil && len(p.MkfsArgv) > 0 {
			return strings.Join(p.MkfsArgv, " ")
		}
		return ""
	}},
	{key: "mount_options", name: "Mount options", get: func(r *record.Record) string {
		if r.Target.MountOptions != "" {
			return r.Target.MountOptions
		}
		if p := r.Target.Prepared; p != nil {
			return p.MountOptions
		}
		return ""
	}},
	{key: "target", name: "Target", get: targetPath},
	{key: "set", name: "Workload set", get: func(r *record.Record) string { return r.Set }},
	{key: "engine", name: "Engine", warn: true, get: func(r *record.Record) string {
		return distinctRuns(r, func(rep record.Repetition) string { return rep.Engine })
	}},
	{key: "direct", name: "O_DIRECT", warn: true, get: func(r *record.Record) string {
		return distinctRuns(r, func(rep record.Repetition) string {
			if rep.Direct {
				return "yes"
			}
			return "no"
		}, "direct")
	}},
	{key: "tool", name: "Tool", get: func(r *record.Record) string { return r.ToolVersion }},
	// How each column's runs were taken: blocked lets drift during the run
	// fall on one column; interleaved spreads it over all.
	{key: "order", name: "Run order", warn: true, get: func(r *record.Record) string {
		if r.Order == "" {
			return record.OrderBlocked
		}
		return r.Order
	}},
}

// distinctRuns joins the distinct values f takes over a record's
// repetitions, leaving out workloads whose record does not know the
// parameter (unknownKey, in Params.Unknown).
func distinctRuns(r *record.Record, f func(record.Repetition) string, unknownKey ...string) string {
	var vals []string
	for _, wr := range r.Workloads {
		if len(unknownKey) > 0 && slices.Contains(wr.Params.Unknown, unknownKey[0]) {
			continue
		}
		for _, rep := range wr.Runs {
			if v := f(rep); v != "" && !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
		}
	}
	slices.Sort(vals)
	return strings.Join(vals, ", ")
}

// groupedKeys are the identity facts that are the grouping variable itself
// (or follow from it), so their differences are the point, not a caveat.
var groupedKeys = map[string][]string{
	ByFS:        {"fs", "mkfs", "mount_options"},
	ByHost:      {"host"},
	ByDevice:    {"disk", "device", "media", "stack"},
	ByStack:     {"disk", "device", "media", "stack"},
	SplitTarget: {"target"},
	SplitSet:    {"set"},
}

// identities splits the records' identity into the facts shared by all
// (the environment) and, per group, the facts that differ; and warns about
// differences beyond the grouping (dims: the --by value and the splits)
// that make the comparison unfair. Unknown is no difference: a fact one
// record does not know (an import, an older record) and the others agree
// on is shared, said with how many records do not know it.
func identities(groups []Group, dims []string) ([]Field, []string) {
	var env []Field
	var warnings []string
	grouped := map[string]bool{}
	for _, d := range dims {
		for _, k := range groupedKeys[d] {
			grouped[k] = true
		}
	}
	for _, f := range identityFields {
		// Sets beside the lists, which keep the order of first sight: a
		// fleet's store has a thousand hostnames.
		var known []string
		isKnown := map[string]bool{}
		unknown, total := 0, 0
		perGroup := make([]string, len(groups))
		for gi, g := range groups {
			var vals []string
			inVals := map[string]bool{}
			for _, r := range g.Records {
				v := f.get(r)
				total++
				if v == "" {
					unknown++
				} else if !isKnown[v] {
					isKnown[v] = true
					known = append(known, v)
				}
				if !inVals[v] {
					inVals[v] = true
					vals = append(vals, v)
				}
			}
			for i, v := range vals {
				if v == "" {
					vals[i] = "unknown"
				}
			}
			perGroup[gi] = strings.Join(vals, " | ")
		}
		if len(known) <= 1 {
			// Plain storage throughout is said by the storage line: an
			// "Encryption none" would be noise in every report.
			if len(known) == 1 && !(f.key == "encryption" && known[0] == "none") {
				v := known[0]
				if unknown > 0 {
					v += fmt.Sprintf(" (unknown in %d of %d records)", unknown, total)
				}
				env = append(env, Field{Key: f.key, Name: f.name, Value: v})
			}
			continue
		}
		// Which columns hold which value, for the warning: "5.14 in a,
		// b; 6.1 in c" reads at any number of columns.
		var order []string
		in := map[string][]string{}
		for gi := range groups {
			groups[gi].Identity = append(groups[gi].Identity, Field{Key: f.key, Name: f.name, Value: perGroup[gi]})
			v := perGroup[gi]
			if _, ok := in[v]; !ok {
				order = append(order, v)
			}
			in[v] = append(in[v], groups[gi].Name)
		}
		// A difference the grouping names is the point, not a caveat: by
		// label with labels "xfs" and "ext4" the filesystems differ by design.
		named := true
		for gi := range groups {
			named = named && (groups[gi].hasPart(perGroup[gi]) || perGroup[gi] == "unknown")
		}
		if f.warn && !named && !grouped[f.key] {
			parts := make([]string, len(order))
			for i, v := range order {
				parts[i] = v + " in " + joinCapped(in[v], 4)
			}
			warnings = append(warnings, fmt.Sprintf("records differ in %s, not only in %s (%s)", f.name, strings.Join(dims, ", "), strings.Join(parts, "; ")))
		}
	}
	return env, warnings
}

// identity is what makes two workload directions the same row: the
// direction and the parameters that change what the disk is asked to do
// (rw, bs, size, jobs, iodepth, rwmixread, direct, data, distribution,
// fsync, fresh),
// as far as the record knows them. Runtime and engine are not identity:
// a longer run or another engine measures the same workload (compare
// warns about them).
type identity map[string]string

func identityOf(w workload.Workload, dir string) identity {
	id := identity{"dir": dir}
	for _, kv := range paramsOf(w) {
		switch kv[0] {
		case "runtime", "engine":
		default:
			id[kv[0]] = kv[1]
		}
	}
	// paramsOf names fsync, fresh and a skewed distribution only when
	// set; here their absence is known, not unknown: video-first-write is
	// not video-rewrite, a zipf read not a uniform one.
	for k, none := range map[string]string{"fsync": "0", "fresh": "0", "distribution": "random"} {
		if _, ok := id[k]; !ok {
			id[k] = none
		}
	}
	return id
}

// compatible reports whether o may be the same workload: every parameter
// both know agrees (an unknown one matches anything).
func (id identity) compatible(o identity) bool {
	for k, v := range id {
		if ov, ok := o[k]; ok && ov != v {
			return false
		}
	}
	return true
}

// learn adds what o knows and id did not, so a row's later members must
// agree with everything its earlier ones said.
func (id identity) learn(o identity) {
	for k, v := range o {
		if _, ok := id[k]; !ok {
			id[k] = v
		}
	}
}

// paramSet is a workload's parameters as ordered key=value pairs.
type paramSet [][2]string

func paramsOf(w workload.Workload) paramSet {
	// Unknown parameters (imports of fio's text or terse output; zero in
	// an old fio 2.x import) are left out rather than shown as a value.
	known := func(k string) bool { return !slices.Contains(w.Unknown, k) }
	var ps paramSet
	if w.RW != "" && known("rw") {
		ps = append(ps, [2]string{"rw", w.RW})
	}
	if w.BlockBytes > 0 && known("bs") {
		ps = append(ps, [2]string{"bs", units.FormatSizeShort(w.BlockBytes)})
	}
	if w.SizeBytes > 0 && known("size") {
		ps = append(ps, [2]string{"size", units.FormatSizeShort(w.SizeBytes)})
	}
	if w.Jobs > 0 && known("jobs") {
		ps = append(ps, [2]string{"jobs", strconv.Itoa(w.Jobs)})
	}
	if w.IODepth > 0 && known("iodepth") {
		ps = append(ps, [2]string{"iodepth", strconv.Itoa(w.IODepth)})
	}
	switch {
	case !known("runtime"):
	case w.Runtime > 0:
		ps = append(ps, [2]string{"runtime", w.Runtime.Round(time.Millisecond).String()})
	default:
		ps = append(ps, [2]string{"runtime", "size-based"})
	}
	if (w.RW == "randrw" || w.RW == "readwrite") && known("rwmixread") {
		ps = append(ps, [2]string{"rwmixread", strconv.Itoa(w.RWMixRead)})
	}
	if known("direct") {
		direct := "0"
		if w.Direct {
			direct = "1"
		}
		ps = append(ps, [2]string{"direct", direct})
	}
	if w.Engine != "" && known("engine") {
		ps = append(ps, [2]string{"engine", w.Engine})
	}
	if w.Data != "" {
		ps = append(ps, [2]string{"data", w.Data})
	}
	if w.Distribution != "" {
		ps = append(ps, [2]string{"distribution", w.Distribution})
	}
	if w.Fsync {
		ps = append(ps, [2]string{"fsync", "1"})
	}
	if w.Fresh {
		ps = append(ps, [2]string{"fresh", "1"})
	}
	return ps
}

func (ps paramSet) get(k string) (string, bool) {
	for _, kv := range ps {
		if kv[0] == k {
			return kv[1], true
		}
	}
	return "", false
}

// merge combines the parameters of the same row in two records of one group;
// a key whose values differ keeps both, so the difference shows.
func (ps paramSet) merge(o paramSet) paramSet {
	out := append(paramSet(nil), ps...)
	for _, kv := range o {
		i := slices.IndexFunc(out, func(x [2]string) bool { return x[0] == kv[0] })
		switch {
		case i < 0:
			out = append(out, kv)
		case !slices.Contains(strings.Split(out[i][1], "|"), kv[1]):
			out[i][1] += "|" + kv[1]
		}
	}
	return out
}

func (ps paramSet) String() string {
	parts := make([]string, len(ps))
	for i, kv := range ps {
		parts[i] = kv[0] + "=" + kv[1]
	}
	return strings.Join(parts, " ")
}

// paramDiffs returns the baseline's (or first present group's) parameters
// and says, key by key, where the groups ran the row differently ("" when
// they did not).
func paramDiffs(groups []Group, params []paramSet) (string, string) {
	var keys []string
	first := ""
	for _, ps := range params {
		if ps == nil {
			continue
		}
		if first == "" {
			first = ps.String()
		}
		for _, kv := range ps {
			if !slices.Contains(keys, kv[0]) {
				keys = append(keys, kv[0])
			}
		}
	}
	var diffs []string
	for _, k := range keys {
		var order []string
		in := map[string][]string{}
		for gi, ps := range params {
			if ps == nil {
				continue
			}
			v, ok := ps.get(k)
			if !ok {
				v = "unknown"
			}
			if _, ok := in[v]; !ok {
				order = append(order, v)
			}
			in[v] = append(in[v], groups[gi].Name)
		}
		if len(order) > 1 || strings.Contains(strings.Join(order, ""), "|") {
			parts := make([]string, len(order))
			for i, v := range order {
				parts[i] = fmt.Sprintf("%s=%s in %s", k, v, joinCapped(in[v], 4))
			}
			diffs = append(diffs, strings.Join(parts, ", "))
		}
	}
	return first, strings.Join(diffs, "; ")
}

// EncryptionText is a target's dm-crypt layer in one line: "LUKS2
// aes-xts-plain64, 512-bit key, 4096-byte sectors, AES-NI"; "" for none.
// The cipher's speed in memory is a measurement, not what the layer is:
// the notes hold it (cipherNotes).
func EncryptionText(e *record.Encryption) string {
	if e == nil {
		return ""
	}
	s := fmt.Sprintf("LUKS%d %s, %d-bit key, %d-byte sectors", e.LUKSVersion, e.Cipher, e.KeyBits, e.SectorBytes)
	switch {
	case e.AES != nil && *e.AES:
		s += ", AES-NI"
	case e.AES != nil:
		s += ", no AES instructions"
	}
	return s
}
