// Package planfile reads diskprep plan files: YAML that says, for several
// disks at once, which disk (by a selector that must match exactly one) gets
// which partitions, filesystems and mounts. It is how `diskprep prepare
// --plan FILE` bootstraps a fresh install.
//
// Schema, version 1 (testdata/example.yaml is a commented example):
//
//	version: 1                  # required, must be 1
//	disks:                      # one or more
//	  - select:                 # required; every key given must match
//	      path: /dev/sdb        # device node, also /dev/disk/by-id/... or by-path/...
//	      by_id: ata-TOSHIBA_DT01ACA300_X3G7ABCDE   # a /dev/disk/by-id name
//	      by_path: pci-0000:00:17.0-ata-2           # a /dev/disk/by-path name
//	      serial: X3G7ABCDE     # case-insensitive
//	      wwn: 0x5000039ff4c3a1b2                   # "0x", "naa." and case ignored
//	      model: TOSHIBA DT01ACA300                 # model, or vendor + model; "_" = " "
//	      size: 2.5T-3T         # MIN-MAX range (inclusive), >=MIN, <=MAX or an exact size
//	      transport: nvme       # nvme, sata, sas, scsi, virtio, usb
//	    wipe: false             # allow destroying existing signatures/tables
//	    partitions:             # one or more, in disk order
//	      - size: 100G          # a size, a share of the disk (50%), or "rest" (last only)
//	        fs: xfs             # xfs or ext4
//	        label: data         # GPT name and fs label: xfs <= 12, ext4 <= 16 bytes
//	        mount: /data        # absolute; optional; never a system directory
//	        mount_over: false   # mount over a non-empty directory, hiding its files
//	        options: noatime    # mount options, comma separated (needs mount)
//	        mkfs_options: ["-m", "reflink=1"]   # extra mkfs arguments, as given
//	        persist: true       # add an /etc/fstab line (needs mount; swap: a swap line)
//	        # encrypt: {key_file: /etc/diskprep/keys/data.key}   # the fs on LUKS2 on
//	        #   this partition (PARTITION_crypt); crypttab too with persist
//	      - size: rest
//	        use: raid:data      # a member of the raid entry "data" (or lvm:VG), no fs
//	raid:                       # md arrays over the partitions that "use" them
//	  - name: data
//	    level: 1                # 0, 1, 5, 6, 10
//	    filesystem: {fs: xfs, label: data, mount: /data, persist: true,
//	                 encrypt: {key_file: /etc/diskprep/keys/data.key}}
//	                            # encrypt (optional, also on a volume): LUKS2 under
//	                            #   the fs; name: the mapping, discard: TRIM through;
//	                            #   passphrase: true instead of key_file asks one;
//	                            #   tpm2: true seals a slot to the TPM, which
//	                            #   unlocks it at boot (key_file: the recovery key)
//	lvm:                        # LVM volume groups over the partitions that "use" them
//	  - vg: fast
//	    # encrypt: {key_file: /etc/diskprep/keys/fast.key}   # LUKS2 on each member
//	    #   partition, its mapping (sdb1_crypt) the physical volume
//	    volumes:                # in order; size a share of the group (50%), or
//	                            #   "rest" (or 100%FREE) for the last only
//	      - {name: scratch, size: 100G, fs: ext4, mount: /scratch, persist: true}
//	cache:                      # cached volumes: the partition that says
//	  - name: srv               #   use: origin:srv (the HDD's) behind the one
//	    kind: lvmcache          #   that says use: cache:srv (the SSD's);
//	    mode: writethrough      #   kind lvmcache, writecache or bcache, mode
//	    filesystem: {fs: xfs, mount: /srv, persist: true}   # writethrough or writeback
//
// Sizes are binary as everywhere in diskprep: "3T" is 3 TiB, so a drive sold
// as 3 TB (3.0e12 bytes, 2.73 TiB) is matched by "2.5T-3T".
//
// Every error names the file and line ("plan.yaml:12: ...") and wraps ErrPlan
// (and disk.ErrUsage, which main maps to exit 2). Unknown keys are errors, so
// a typo never silently drops a setting.
package planfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/stack"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/units"
)

// ErrPlan is wrapped by every error about a plan file: unreadable, malformed,
// unknown keys, invalid values, selectors that do not match exactly one disk.
var ErrPlan = errors.New("bad plan")

// Version is the schema version this package reads.
const Version = 1

// Limits that keep a hostile or broken file from making diskprep do silly
// amounts of work; GPT itself holds 128 partitions.
const (
	maxFileBytes  = 1 << 20
	maxDisks      = 64
	maxPartitions = 128
	maxMkfsOpts   = 64
)

// Plan is a parsed, validated plan file.
type Plan struct {
	Path    string // the file name as given to Load, used in messages
	Version int
	Disks   []DiskPlan
	// Raid and LVM are the storage stacks over the partitions whose use
	// names them (disk.PartSpec.Use).
	Raid []stack.ArraySpec
	LVM  []stack.GroupSpec
	// Cache are the cached volumes over the partitions whose use is
	// origin:NAME and cache:NAME.
	Cache []stack.CacheSpec
	// Encrypted are the partitions that say encrypt:, their file system
	// on LUKS2 (the partition's use is crypt:KEY).
	Encrypted []stack.EncryptedSpec
	// StackWipe: an entry of raid, lvm or cache said wipe: true.
	StackWipe bool
}

// Stacks is the plan's storage stacks as disk plans them.
func (p *Plan) Stacks() stack.StackRequest {
	return stack.StackRequest{Arrays: p.Raid, Groups: p.LVM, Caches: p.Cache, Encrypted: p.Encrypted, Options: stack.Options{Wipe: p.StackWipe}}
}

// DiskPlan is one entry of disks: which disk, and what to make of it.
type DiskPlan struct {
	Line       int // of the list item, for messages
	Select     Selector
	Wipe       bool
	Partitions []disk.PartSpec // SizeBytes 0 = rest of the disk (last only)
}

// Selector picks one disk; every field that is set must match.
type Selector struct {
	Line      int
	Transport string // nvme, sata, sas, scsi, virtio, usb
	Path      string
	ByID      string // a /dev/disk/by-id name, without the directory
	ByPath    string // a /dev/disk/by-path name, without the directory
	Serial    string
	WWN       string
	Model     string
	Size      string // as written; SizeMin/SizeMax hold its bounds
	SizeMin   uint64
	SizeMax   uint64
}

type planError struct {
	msg string
	err error // an underlying cause (an os error), or nil
}

func (e *planError) Error() string { return e.msg }
func (e *planError) Unwrap() error { return e.err }
func (e *planError) Is(target error) bool {
	return target == ErrPlan || target == disk.ErrUsage
}

// at formats an error at file:line (line 0: the file alone).
func at(file string, line int, format string, args ...any) error {
	pos := file
	if line > 0 {
		pos = file + ":" + strconv.Itoa(line)
	}
	return &planError{msg: pos + ": " + fmt.Sprintf(format, args...)}
}

// Load reads and validates the plan file at path. What the file says is
// done to the disks as root, so a file that another user could change is
// refused (disk.ErrRefused): one of theirs, one they may write, one in a
// directory of theirs or in one others may write that is not sticky, and
// one reached through their link. Only a regular file is read, and never
// waited on (a FIFO).
func Load(path string) (*Plan, error) {
	real, err := hwinfo.FollowTrustedLinks(nil, path)
	if le := (*hwinfo.LinkError)(nil); errors.As(err, &le) {
		return nil, disk.Refuse(path, le.Error())
	}
	if err != nil {
		return nil, &planError{msg: "read plan: " + err.Error(), err: err}
	}
	fd, err := unix.Open(real, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		err = &fs.PathError{Op: "open", Path: path, Err: err}
		return nil, &planError{msg: "read plan: " + err.Error(), err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if why := untrusted(f, real); why != "" {
		return nil, disk.Refuse(path, why)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, &planError{msg: "read plan: " + err.Error(), err: err}
	}
	return Parse(path, data)
}

// untrusted says why the open plan file f, at real, is one another user
// could change, or is not a regular file; "" when it is neither.
func untrusted(f *os.File, real string) string {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err.Error()
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return real + " is not a regular file"
	}
	euid := uint32(os.Geteuid())
	trusted := func(uid uint32) bool { return uid == 0 || uid == euid }
	switch perm := st.Mode & 0o7777; {
	case !trusted(st.Uid):
		return fmt.Sprintf("the plan %s is owned by uid %d, who could change what it destroys: make it root's", real, st.Uid)
	case perm&0o002 != 0 || perm&0o020 != 0 && st.Gid != 0:
		return fmt.Sprintf("the plan %s may be written by other users (mode %04o): chmod go-w it", real, perm)
	}
	// Every directory up to /: whoever may rename one of them may put
	// another plan at this path.
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		var dst unix.Stat_t
		if err := unix.Lstat(dir, &dst); err != nil {
			return err.Error()
		}
		switch perm := dst.Mode & 0o7777; {
		case !trusted(dst.Uid):
			return fmt.Sprintf("the plan %s is in %s, a directory owned by uid %d, who could replace it", real, dir, dst.Uid)
		case (perm&0o002 != 0 || perm&0o020 != 0 && dst.Gid != 0) && perm&unix.S_ISVTX == 0:
			return fmt.Sprintf("the plan %s is in %s, which other users may write (mode %04o), so they could replace it", real, dir, perm)
		}
		if dir == "/" {
			return ""
		}
	}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse validates plan content; name is the file name used in messages.
func Parse(name string, data []byte) (*Plan, error) {
	if len(data) > maxFileBytes {
		return nil, at(name, 0, "larger than %d bytes: not a plan file", maxFileBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, at(name, 0, "empty plan: want \"version: 1\" and a list of disks")
		}
		return nil, yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, at(name, extra.Line, "a second YAML document: a plan file holds one")
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlError(name, err)
	}
	p := &parser{file: name}
	if len(doc.Content) != 1 {
		return nil, at(name, doc.Line, "empty plan: want \"version: 1\" and a list of disks")
	}
	return p.plan(doc.Content[0])
}

// parserProblems are the messages of yaml's parser (as opposed to its
// scanner). For these yaml.v3 reports the 0-based line of the construct being
// parsed (the line where the broken "{", "[" or list starts), so one is added
// to name the line a person sees in an editor; scanner errors are already
// 1-based.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

func yamlError(name string, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if parserProblems[m[2]] {
			line++
		}
		return at(name, line, "%s", m[2])
	}
	return at(name, 0, "%s", strings.TrimPrefix(msg, "yaml: "))
}

type parser struct {
	file string
	// partLines are the lines of each disk's partitions, for messages
	// about their use.
	partLines [][]int
	curLines  []int
	// encrypted are the partitions read so far that say encrypt:, with
	// the line of each.
	encrypted []stack.EncryptedSpec
	encLines  []int
}

func (p *parser) errf(n *yaml.Node, format string, args ...any) error {
	return at(p.file, n.Line, format, args...)
}

// fields checks that n is a mapping with only known, unique keys, and
// returns the value nodes by key.
func (p *parser) fields(n *yaml.Node, what string, known ...string) (map[string]*yaml.Node, error) {
	if n.Kind == yaml.AliasNode {
		return nil, p.errf(n, "%s: aliases are not supported in plan files", what)
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "%s: want a mapping with keys %s, got %s", what, strings.Join(known, ", "), kind(n))
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, p.errf(k, "%s: keys must be plain words", what)
		}
		isKnown := false
		for _, name := range known {
			isKnown = isKnown || k.Value == name
		}
		if !isKnown {
			return nil, p.errf(k, "%s: unknown key %q (known: %s)", what, k.Value, strings.Join(known, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, p.errf(k, "%s: key %q given twice", what, k.Value)
		}
		if v.Kind == yaml.AliasNode {
			return nil, p.errf(v, "%s.%s: aliases are not supported in plan files", what, k.Value)
		}
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
			continue // "key:" with no value counts as not given
		}
		out[k.Value] = v
	}
	return out, nil
}

func kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

func (p *parser) str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n, "%s: want a single value, got %s", what, kind(n))
	}
	if strings.ContainsFunc(n.Value, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return "", p.errf(n, "%s: control characters are not allowed", what)
	}
	return n.Value, nil
}

func (p *parser) boolean(n *yaml.Node, what string) (bool, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		return false, p.errf(n, "%s: want true or false, got %s", what, kind(n))
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		return false, p.errf(n, "%s: want true or false, got %s", what, kind(n))
	}
	return b, nil
}

func (p *parser) list(n *yaml.Node, what string, max int) ([]*yaml.Node, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "%s: want a list, got %s", what, kind(n))
	}
	if len(n.Content) > max {
		return nil, p.errf(n, "%s: %d items, at most %d allowed", what, len(n.Content), max)
	}
	return n.Content, nil
}

func (p *parser) plan(root *yaml.Node) (*Plan, error) {
	f, err := p.fields(root, "plan", "version", "disks", "raid", "lvm", "cache")
	if err != nil {
		return nil, err
	}
	v, ok := f["version"]
	if !ok {
		return nil, p.errf(root, "missing \"version: %d\"", Version)
	}
	if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
		return nil, p.errf(v, "version: want %d, got %s", Version, kind(v))
	}
	if ver, err := strconv.Atoi(v.Value); err != nil || ver != Version {
		return nil, p.errf(v, "version: unsupported version %s (this diskprep reads version %d)", v.Value, Version)
	}
	dn, ok := f["disks"]
	if !ok {
		return nil, p.errf(root, "missing \"disks\": the list of disks to prepare")
	}
	items, err := p.list(dn, "disks", maxDisks)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, p.errf(dn, "disks: empty list: nothing to prepare")
	}
	plan := &Plan{Path: p.file, Version: Version}
	mounts := map[string]int{}
	for i, item := range items {
		p.curLines = nil
		d, err := p.disk(item, fmt.Sprintf("disks[%d]", i))
		if err != nil {
			return nil, err
		}
		p.partLines = append(p.partLines, p.curLines)
		for _, ps := range d.Partitions {
			if ps.Mount == "" {
				continue
			}
			if line, dup := mounts[ps.Mount]; dup {
				return nil, at(p.file, d.Line, "disks[%d]: mount point %s is already used at line %d", i, ps.Mount, line)
			}
			mounts[ps.Mount] = d.Line
		}
		plan.Disks = append(plan.Disks, d)
	}
	for i, e := range p.encrypted {
		if m := e.Volume.Mount; m != "" {
			if line, dup := mounts[m]; dup {
				return nil, at(p.file, p.encLines[i], "mount point %s is already used at line %d", m, line)
			}
			mounts[m] = p.encLines[i]
		}
	}
	plan.Encrypted = p.encrypted
	if err := p.stacks(plan, f, mounts); err != nil {
		return nil, err
	}
	return plan, nil
}

// stacks reads raid: and lvm: and checks them against the partitions
// that use them.
func (p *parser) stacks(plan *Plan, f map[string]*yaml.Node, mounts map[string]int) error {
	declared := map[string]int{} // use -> line
	for i, e := range plan.Encrypted {
		declared["crypt:"+e.Key] = p.encLines[i]
	}
	if rn, ok := f["raid"]; ok {
		items, err := p.list(rn, "raid", maxDisks)
		if err != nil {
			return err
		}
		for i, it := range items {
			what := fmt.Sprintf("raid[%d]", i)
			rf, err := p.fields(it, what, "name", "level", "filesystem", "wipe")
			if err != nil {
				return err
			}
			a := stack.ArraySpec{Origin: p.file + ":" + strconv.Itoa(it.Line)}
			nn, ok := rf["name"]
			if !ok {
				return p.errf(it, "%s: missing \"name\"", what)
			}
			if a.Name, err = p.str(nn, what+".name"); err != nil {
				return err
			}
			ln, ok := rf["level"]
			if !ok {
				return p.errf(it, "%s: missing \"level\" (0, 1, 5, 6 or 10)", what)
			}
			lvl, err := strconv.Atoi(ln.Value)
			if ln.Kind != yaml.ScalarNode || err != nil {
				return p.errf(ln, "%s.level: want 0, 1, 5, 6 or 10, got %s", what, kind(ln))
			}
			switch lvl {
			case 0, 1, 5, 6, 10:
			default:
				return p.errf(ln, "%s.level: unknown RAID level %d: want 0, 1, 5, 6 or 10", what, lvl)
			}
			a.Level = lvl
			fn, ok := rf["filesystem"]
			if !ok {
				return p.errf(it, "%s: missing \"filesystem\" ({fs: xfs, mount: /data})", what)
			}
			if a.Volume, err = p.volume(fn, what+".filesystem", mounts, false); err != nil {
				return err
			}
			if w, ok := rf["wipe"]; ok {
				b, err := p.boolean(w, what+".wipe")
				if err != nil {
					return err
				}
				plan.StackWipe = plan.StackWipe || b
			}
			use := "raid:" + a.Name
			if prev, dup := declared[use]; dup {
				return p.errf(nn, "%s: raid %s is already declared at line %d", what, a.Name, prev)
			}
			declared[use] = it.Line
			plan.Raid = append(plan.Raid, a)
		}
	}
	if ln, ok := f["lvm"]; ok {
		items, err := p.list(ln, "lvm", maxDisks)
		if err != nil {
			return err
		}
		for i, it := range items {
			what := fmt.Sprintf("lvm[%d]", i)
			gf, err := p.fields(it, what, "vg", "volumes", "wipe", "encrypt")
			if err != nil {
				return err
			}
			g := stack.GroupSpec{Origin: p.file + ":" + strconv.Itoa(it.Line)}
			if en, ok := gf["encrypt"]; ok {
				if g.Encrypt, err = p.encrypt(en, what+".encrypt"); err != nil {
					return err
				}
				if g.Encrypt.Name != "" {
					return p.errf(en, "%s.encrypt: no name for a group's members: each mapping is named after its partition (sdb1_crypt)", what)
				}
			}
			vn, ok := gf["vg"]
			if !ok {
				return p.errf(it, "%s: missing \"vg\"", what)
			}
			if g.VG, err = p.str(vn, what+".vg"); err != nil {
				return err
			}
			if w, ok := gf["wipe"]; ok {
				b, err := p.boolean(w, what+".wipe")
				if err != nil {
					return err
				}
				plan.StackWipe = plan.StackWipe || b
			}
			vsn, ok := gf["volumes"]
			if !ok {
				return p.errf(it, "%s: missing \"volumes\"", what)
			}
			vols, err := p.list(vsn, what+".volumes", maxPartitions)
			if err != nil {
				return err
			}
			if len(vols) == 0 {
				return p.errf(vsn, "%s.volumes: empty list", what)
			}
			for j, vn := range vols {
				vw := fmt.Sprintf("%s.volumes[%d]", what, j)
				vf, err := p.fields(vn, vw, "name", "size", "fs", "label", "mount", "mount_over", "options", "mkfs_options", "persist", "encrypt")
				if err != nil {
					return err
				}
				lv := stack.LVSpec{Origin: p.file + ":" + strconv.Itoa(vn.Line)}
				nn, ok := vf["name"]
				if !ok {
					return p.errf(vn, "%s: missing \"name\"", vw)
				}
				if lv.Name, err = p.str(nn, vw+".name"); err != nil {
					return err
				}
				sn, ok := vf["size"]
				if !ok {
					return p.errf(vn, "%s: missing \"size\" (a size such as 100G, a share of the group such as 50%%, or rest)", vw)
				}
				size, err := p.str(sn, vw+".size")
				if err != nil {
					return err
				}
				pct, isPct, perr := units.ParsePercent(size)
				if strings.EqualFold(size, "rest") || strings.EqualFold(size, "100%FREE") {
					if j != len(vols)-1 {
						return p.errf(sn, "%s.size: %q is allowed only for the last volume", vw, size)
					}
				} else if isPct {
					if perr != nil {
						return p.errf(sn, "%s.size: %v", vw, perr)
					}
					lv.SizePercent = pct
				} else if lv.SizeBytes, err = units.ParseSize(size); err != nil || lv.SizeBytes == 0 {
					if err == nil {
						err = errors.New("must be more than 0")
					}
					return p.errf(sn, "%s.size: %v", vw, err)
				}
				delete(vf, "name")
				delete(vf, "size")
				if lv.Volume, err = p.volumeFields(vn, vf, vw, mounts); err != nil {
					return err
				}
				g.Volumes = append(g.Volumes, lv)
			}
			use := "lvm:" + g.VG
			if prev, dup := declared[use]; dup {
				return p.errf(vn, "%s: lvm vg %s is already declared at line %d", what, g.VG, prev)
			}
			declared[use] = it.Line
			plan.LVM = append(plan.LVM, g)
		}
	}
	if cn, ok := f["cache"]; ok {
		items, err := p.list(cn, "cache", maxDisks)
		if err != nil {
			return err
		}
		for i, it := range items {
			what := fmt.Sprintf("cache[%d]", i)
			cf, err := p.fields(it, what, "name", "kind", "mode", "filesystem", "wipe")
			if err != nil {
				return err
			}
			c := stack.CacheSpec{Origin: p.file + ":" + strconv.Itoa(it.Line)}
			nn, ok := cf["name"]
			if !ok {
				return p.errf(it, "%s: missing \"name\"", what)
			}
			if c.Name, err = p.str(nn, what+".name"); err != nil {
				return err
			}
			if kn, ok := cf["kind"]; ok {
				if c.Kind, err = p.str(kn, what+".kind"); err != nil {
					return err
				}
				if !slices.Contains(stack.CacheKinds, c.Kind) {
					return p.errf(kn, "%s.kind: %q: want lvmcache, writecache or bcache", what, c.Kind)
				}
			}
			if mn, ok := cf["mode"]; ok {
				if c.Mode, err = p.str(mn, what+".mode"); err != nil {
					return err
				}
				if !slices.Contains(stack.CacheModes, c.Mode) {
					return p.errf(mn, "%s.mode: %q: want writethrough or writeback", what, c.Mode)
				}
			}
			fn, ok := cf["filesystem"]
			if !ok {
				return p.errf(it, "%s: missing \"filesystem\" ({fs: xfs, mount: /srv})", what)
			}
			if c.Volume, err = p.volume(fn, what+".filesystem", mounts, false); err != nil {
				return err
			}
			if w, ok := cf["wipe"]; ok {
				b, err := p.boolean(w, what+".wipe")
				if err != nil {
					return err
				}
				plan.StackWipe = plan.StackWipe || b
			}
			for _, use := range []string{"origin:" + c.Name, "cache:" + c.Name} {
				if prev, dup := declared[use]; dup {
					return p.errf(nn, "%s: cache %s is already declared at line %d", what, c.Name, prev)
				}
				declared[use] = it.Line
			}
			plan.Cache = append(plan.Cache, c)
		}
	}
	// Every use names a declared stack, and every array has the members
	// its level needs.
	count := map[string]int{}
	for i, d := range plan.Disks {
		for j, ps := range d.Partitions {
			if ps.Use == "" {
				continue
			}
			if _, ok := declared[ps.Use]; !ok {
				kind, name, _ := strings.Cut(ps.Use, ":")
				key := map[string]string{"raid": "raid entry with name: ", "lvm": "lvm entry with vg: ", "origin": "cache entry with name: ", "cache": "cache entry with name: "}[kind]
				return at(p.file, p.partLines[i][j], "partition use %s: no %s%s in this plan", ps.Use, key, name)
			}
			count[ps.Use]++
		}
	}
	minMembers := map[int]int{0: 2, 1: 2, 5: 3, 6: 4, 10: 4}
	for _, a := range plan.Raid {
		if n := count["raid:"+a.Name]; n < minMembers[a.Level] {
			return at(p.file, declared["raid:"+a.Name], "raid %s: level %d needs at least %d members, %d partitions say use: raid:%s", a.Name, a.Level, minMembers[a.Level], n, a.Name)
		}
	}
	for _, g := range plan.LVM {
		if count["lvm:"+g.VG] == 0 {
			return at(p.file, declared["lvm:"+g.VG], "lvm vg %s: no partition says use: lvm:%s", g.VG, g.VG)
		}
	}
	// The rest of a cache's checks (one origin, one cache, on two disks,
	// writecache only in writeback) are disk's, with this file's line.
	if len(plan.Cache) > 0 {
		var reqs []disk.Request
		for i, d := range plan.Disks {
			reqs = append(reqs, disk.Request{Device: fmt.Sprintf("disks[%d] (line %d)", i, d.Line), Partitions: d.Partitions})
		}
		if err := (stack.StackRequest{Caches: plan.Cache}).Validate(reqs); err != nil {
			if errors.Is(err, disk.ErrRefused) {
				return err
			}
			return &planError{msg: err.Error(), err: err}
		}
	}
	return nil
}

// volume reads a stack's filesystem mapping.
func (p *parser) volume(n *yaml.Node, what string, mounts map[string]int, _ bool) (stack.VolumeSpec, error) {
	f, err := p.fields(n, what, "fs", "label", "mount", "mount_over", "options", "mkfs_options", "persist", "encrypt")
	if err != nil {
		return stack.VolumeSpec{}, err
	}
	return p.volumeFields(n, f, what, mounts)
}

// encrypt reads an encrypt mapping: {key_file: PATH or passphrase: true,
// name: NAME, discard: BOOL, sector_bytes: N, tpm2: BOOL}.
func (p *parser) encrypt(n *yaml.Node, what string) (*crypt.Spec, error) {
	f, err := p.fields(n, what, "key_file", "passphrase", "name", "discard", "sector_bytes", "tpm2")
	if err != nil {
		return nil, err
	}
	e := &crypt.Spec{}
	if pn, ok := f["passphrase"]; ok {
		if e.Passphrase, err = p.boolean(pn, what+".passphrase"); err != nil {
			return nil, err
		}
	}
	kn, ok := f["key_file"]
	if !ok && !e.Passphrase {
		return nil, p.errf(n, "%s: missing \"key_file\" (an absolute path; made, 0400, when missing) or \"passphrase: true\" (asked on the terminal)", what)
	}
	if ok {
		if e.KeyFile, err = p.str(kn, what+".key_file"); err != nil {
			return nil, err
		}
	}
	if nn, ok := f["name"]; ok {
		if e.Name, err = p.str(nn, what+".name"); err != nil {
			return nil, err
		}
	}
	if dn, ok := f["discard"]; ok {
		if e.Discard, err = p.boolean(dn, what+".discard"); err != nil {
			return nil, err
		}
	}
	if tn, ok := f["tpm2"]; ok {
		if e.TPM2, err = p.boolean(tn, what+".tpm2"); err != nil {
			return nil, err
		}
	}
	if sn, ok := f["sector_bytes"]; ok {
		if err := sn.Decode(&e.SectorBytes); err != nil || e.SectorBytes == 0 {
			return nil, p.errf(sn, "%s.sector_bytes: 512 or 4096", what)
		}
	}
	if err := e.Validate(); err != nil {
		return nil, p.errf(n, "%s: %v", what, err)
	}
	return e, nil
}

func (p *parser) volumeFields(n *yaml.Node, f map[string]*yaml.Node, what string, mounts map[string]int) (stack.VolumeSpec, error) {
	var enc *crypt.Spec
	if en, ok := f["encrypt"]; ok {
		var err error
		if enc, err = p.encrypt(en, what+".encrypt"); err != nil {
			return stack.VolumeSpec{}, err
		}
	}
	// The same keys and checks as a partition's file system.
	m := &yaml.Node{Kind: yaml.MappingNode, Line: n.Line, Column: n.Column}
	keys := make([]string, 0, len(f))
	for k := range f {
		if k != "encrypt" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k, Line: f[k].Line}, f[k])
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "size", Line: n.Line}, &yaml.Node{Kind: yaml.ScalarNode, Value: "rest", Line: n.Line})
	ps, err := p.partition(m, what, true)
	if err != nil {
		return stack.VolumeSpec{}, err
	}
	if ps.Use != "" || ps.FS == "swap" {
		return stack.VolumeSpec{}, p.errf(n, "%s: swap and use belong on a partition, not on a stack", what)
	}
	if ps.Mount != "" {
		if line, dup := mounts[ps.Mount]; dup {
			return stack.VolumeSpec{}, p.errf(n, "%s: mount point %s is already used at line %d", what, ps.Mount, line)
		}
		mounts[ps.Mount] = n.Line
	}
	return stack.VolumeSpec{FS: ps.FS, Label: ps.Label, Mount: ps.Mount, MountOpts: ps.MountOpts, MkfsOpts: ps.MkfsOpts, Persist: ps.Persist, MountOver: ps.MountOver, Encrypt: enc}, nil
}

func (p *parser) disk(n *yaml.Node, what string) (DiskPlan, error) {
	d := DiskPlan{Line: n.Line}
	f, err := p.fields(n, what, "select", "wipe", "partitions")
	if err != nil {
		return d, err
	}
	sn, ok := f["select"]
	if !ok {
		return d, p.errf(n, "%s: missing \"select\": which disk this is", what)
	}
	if d.Select, err = p.selector(sn, what+".select"); err != nil {
		return d, err
	}
	if w, ok := f["wipe"]; ok {
		if d.Wipe, err = p.boolean(w, what+".wipe"); err != nil {
			return d, err
		}
	}
	pn, ok := f["partitions"]
	if !ok {
		return d, p.errf(n, "%s: missing \"partitions\"", what)
	}
	parts, err := p.list(pn, what+".partitions", maxPartitions)
	if err != nil {
		return d, err
	}
	if len(parts) == 0 {
		return d, p.errf(pn, "%s.partitions: empty list: want at least one partition", what)
	}
	for j, pn := range parts {
		pwhat := fmt.Sprintf("%s.partitions[%d]", what, j)
		pn, en := withoutKey(pn, "encrypt")
		ps, err := p.partition(pn, pwhat, j == len(parts)-1)
		if err != nil {
			return d, err
		}
		if en != nil {
			if ps, err = p.encryptedPartition(pn, en, ps, pwhat); err != nil {
				return d, err
			}
		}
		d.Partitions = append(d.Partitions, ps)
		p.curLines = append(p.curLines, pn.Line)
	}
	return d, nil
}

var selectorKeys = []string{"path", "by_id", "by_path", "serial", "wwn", "model", "size", "transport"}

// transports are the selector's transport values (hwinfo's names).
var transports = []string{"nvme", "sata", "sas", "scsi", "virtio", "usb", "mmc", "loop"}

func (p *parser) selector(n *yaml.Node, what string) (Selector, error) {
	s := Selector{Line: n.Line}
	f, err := p.fields(n, what, selectorKeys...)
	if err != nil {
		return s, err
	}
	if len(f) == 0 {
		return s, p.errf(n, "%s: empty: give at least one of %s", what, strings.Join(selectorKeys, ", "))
	}
	vals := map[string]string{}
	for k, v := range f {
		str, err := p.str(v, what+"."+k)
		if err != nil {
			return s, err
		}
		if strings.TrimSpace(str) == "" {
			return s, p.errf(v, "%s.%s: empty value", what, k)
		}
		vals[k] = strings.TrimSpace(str)
	}
	s.Path, s.ByID, s.ByPath = vals["path"], vals["by_id"], vals["by_path"]
	s.Serial, s.WWN, s.Model, s.Size = vals["serial"], vals["wwn"], vals["model"], vals["size"]
	if t := strings.ToLower(vals["transport"]); t != "" {
		ok := false
		for _, k := range transports {
			ok = ok || k == t
		}
		if !ok {
			return s, p.errf(f["transport"], "%s.transport: %q: want one of %s", what, vals["transport"], strings.Join(transports, ", "))
		}
		s.Transport = t
	}
	if s.Path != "" && !strings.HasPrefix(s.Path, "/dev/") {
		return s, p.errf(f["path"], "%s.path: %q is not a device path under /dev", what, s.Path)
	}
	for _, k := range []string{"by_id", "by_path"} {
		if v := vals[k]; strings.Contains(strings.TrimPrefix(strings.TrimPrefix(v, "/dev/disk/by-id/"), "/dev/disk/by-path/"), "/") {
			return s, p.errf(f[k], "%s.%s: %q: want a name from /dev/disk/%s", what, k, v, strings.ReplaceAll(k, "_", "-"))
		}
	}
	s.ByID = filepath.Base(s.ByID)
	if s.ByID == "." {
		s.ByID = ""
	}
	s.ByPath = filepath.Base(s.ByPath)
	if s.ByPath == "." {
		s.ByPath = ""
	}
	if s.Size != "" {
		if s.SizeMin, s.SizeMax, err = parseSizeRange(s.Size); err != nil {
			return s, p.errf(f["size"], "%s.size: %v", what, err)
		}
	}
	return s, nil
}

// parseSizeRange reads "MIN-MAX" (inclusive) or one exact size.
func parseSizeRange(s string) (lo, hi uint64, err error) {
	if rest, ok := strings.CutPrefix(s, ">="); ok {
		if lo, err = units.ParseSize(strings.TrimSpace(rest)); err != nil {
			return 0, 0, err
		}
		return lo, ^uint64(0), nil
	}
	if rest, ok := strings.CutPrefix(s, "<="); ok {
		if hi, err = units.ParseSize(strings.TrimSpace(rest)); err != nil || hi == 0 {
			return 0, 0, fmt.Errorf("size %q: want <=SIZE with SIZE more than 0", s)
		}
		return 0, hi, nil
	}
	a, b, isRange := strings.Cut(s, "-")
	if lo, err = units.ParseSize(a); err != nil {
		return 0, 0, err
	}
	if !isRange {
		if lo == 0 {
			return 0, 0, fmt.Errorf("size %q: no disk has size 0", s)
		}
		return lo, lo, nil
	}
	if hi, err = units.ParseSize(b); err != nil {
		return 0, 0, err
	}
	if hi == 0 || lo > hi {
		return 0, 0, fmt.Errorf("size range %q: want MIN-MAX with MIN <= MAX, e.g. 2.5T-3T", s)
	}
	return lo, hi, nil
}

var partitionKeys = []string{"size", "fs", "label", "mount", "mount_over", "options", "mkfs_options", "persist", "use"}

// labelLimits are the filesystems' label lengths in bytes (mkfs.xfs -L
// takes 12, mkfs.ext4 -L 16).
var labelLimits = map[string]int{"xfs": 12, "ext4": 16, "swap": 15}

func (p *parser) partition(n *yaml.Node, what string, last bool) (disk.PartSpec, error) {
	var ps disk.PartSpec
	f, err := p.fields(n, what, partitionKeys...)
	if err != nil {
		return ps, err
	}
	str := func(key string) (string, *yaml.Node, error) {
		v, ok := f[key]
		if !ok {
			return "", n, nil
		}
		s, err := p.str(v, what+"."+key)
		return s, v, err
	}

	size, sn, err := str("size")
	if err != nil {
		return ps, err
	}
	switch {
	case size == "":
		return ps, p.errf(n, "%s: missing \"size\" (a size such as 100G, a share such as 50%%, or rest)", what)
	case strings.EqualFold(size, "rest"):
		if !last {
			return ps, p.errf(sn, "%s.size: \"rest\" is allowed only for the last partition", what)
		}
	case strings.HasSuffix(size, "%"):
		if ps.SizePercent, _, err = units.ParsePercent(size); err != nil {
			return ps, p.errf(sn, "%s.size: %v (of the disk's size)", what, err)
		}
	default:
		if ps.SizeBytes, err = units.ParseSize(size); err != nil {
			return ps, p.errf(sn, "%s.size: %v", what, err)
		}
		if ps.SizeBytes == 0 {
			return ps, p.errf(sn, "%s.size: must be more than 0", what)
		}
	}

	fs, fn, err := str("fs")
	if err != nil {
		return ps, err
	}
	use, un, err := str("use")
	if err != nil {
		return ps, err
	}
	if use != "" {
		kind, name, _ := strings.Cut(use, ":")
		switch {
		case kind != "raid" && kind != "lvm" && kind != "origin" && kind != "cache" || name == "":
			return ps, p.errf(un, "%s.use: %q: want raid:NAME, lvm:VG, origin:CACHE or cache:CACHE", what, use)
		case fs != "":
			return ps, p.errf(fn, "%s.fs: a partition with use: %s has no fs of its own (give it to the %s entry)", what, use, kind)
		}
		for _, k := range []string{"label", "mount", "mount_over", "options", "mkfs_options", "persist"} {
			if _, ok := f[k]; ok && k != "label" {
				return ps, p.errf(f[k], "%s.%s: a partition with use: %s has no %s (give it to the %s entry)", what, k, use, k, kind)
			}
		}
		ps.Use = use
		if l, ok := f["label"]; ok {
			if ps.Label, err = p.str(l, what+".label"); err != nil {
				return ps, err
			}
		}
		return ps, nil
	}
	if _, ok := labelLimits[fs]; !ok {
		if fs == "" {
			return ps, p.errf(n, "%s: missing \"fs\" (xfs, ext4 or swap) or \"use\" (raid:NAME, lvm:VG)", what)
		}
		return ps, p.errf(fn, "%s.fs: %q: want xfs, ext4 or swap", what, fs)
	}
	ps.FS = fs

	label, ln, err := str("label")
	if err != nil {
		return ps, err
	}
	if err := disk.CheckLabel(fs, label); err != nil {
		return ps, p.errf(ln, "%s.label: %v", what, err)
	}
	ps.Label = label

	mount, mn, err := str("mount")
	if err != nil {
		return ps, err
	}
	if mount != "" && fs == "swap" {
		return ps, p.errf(mn, "%s.mount: a swap partition has no mount point", what)
	}
	if mount != "" {
		if !strings.HasPrefix(mount, "/") {
			return ps, p.errf(mn, "%s.mount: %q: want an absolute path", what, mount)
		}
		// The system's own directories (/ among them) are disk's to
		// refuse, as for the command line: a refusal, not bad input.
		ps.Mount = filepath.Clean(mount)
	}

	opts, on, err := str("options")
	if err != nil {
		return ps, err
	}
	if opts != "" {
		if mount == "" {
			return ps, p.errf(on, "%s.options: mount options need \"mount\"", what)
		}
		if err := disk.CheckMountOptions(fs, opts); err != nil {
			return ps, p.errf(on, "%s.options: %v", what, err)
		}
		ps.MountOpts = opts
	}
	if on, ok := f["mount_over"]; ok {
		if ps.MountOver, err = p.boolean(on, what+".mount_over"); err != nil {
			return ps, err
		}
		if ps.MountOver && mount == "" {
			return ps, p.errf(on, "%s.mount_over: needs \"mount\"", what)
		}
	}

	if mo, ok := f["mkfs_options"]; ok {
		items, err := p.list(mo, what+".mkfs_options", maxMkfsOpts)
		if err != nil {
			return ps, err
		}
		for k, it := range items {
			s, err := p.str(it, fmt.Sprintf("%s.mkfs_options[%d]", what, k))
			if err != nil {
				return ps, err
			}
			if s == "" {
				return ps, p.errf(it, "%s.mkfs_options[%d]: empty argument", what, k)
			}
			ps.MkfsOpts = append(ps.MkfsOpts, s)
		}
	}

	if pn, ok := f["persist"]; ok {
		if ps.Persist, err = p.boolean(pn, what+".persist"); err != nil {
			return ps, err
		}
		if ps.Persist && mount == "" && fs != "swap" {
			return ps, p.errf(pn, "%s.persist: an fstab line needs \"mount\"", what)
		}
	}
	return ps, nil
}

// withoutKey is the mapping n without key, and key's value (nil when n
// has none, or is no mapping).
func withoutKey(n *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return n, nil
	}
	var val *yaml.Node
	m := *n
	m.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			val = n.Content[i+1]
			continue
		}
		m.Content = append(m.Content, n.Content[i], n.Content[i+1])
	}
	if val == nil {
		return n, nil
	}
	return &m, val
}

// encryptedPartition turns the partition ps, whose entry n said encrypt:
// en, into a partition for LUKS2 (use: crypt:KEY) and the encrypted file
// system on it, kept for the plan's stacks.
func (p *parser) encryptedPartition(n, en *yaml.Node, ps disk.PartSpec, what string) (disk.PartSpec, error) {
	switch {
	case ps.Use != "":
		return ps, p.errf(en, "%s.encrypt: a partition with use: %s is encrypted by its stack's entry, not here", what, ps.Use)
	case ps.FS == "swap":
		return ps, p.errf(en, "%s.encrypt: swap is not encrypted by diskprep", what)
	}
	e, err := p.encrypt(en, what+".encrypt")
	if err != nil {
		return ps, err
	}
	key := fmt.Sprintf("line%d", n.Line)
	p.encrypted = append(p.encrypted, stack.EncryptedSpec{Key: key, Origin: fmt.Sprintf("%s:%d", p.file, n.Line),
		Volume: stack.VolumeSpec{FS: ps.FS, Label: ps.Label, Mount: ps.Mount, MountOpts: ps.MountOpts, MkfsOpts: ps.MkfsOpts, Persist: ps.Persist, MountOver: ps.MountOver, Encrypt: e}})
	p.encLines = append(p.encLines, n.Line)
	return disk.PartSpec{SizeBytes: ps.SizeBytes, SizePercent: ps.SizePercent, Label: ps.Label, Use: "crypt:" + key}, nil
}
