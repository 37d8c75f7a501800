// Package md is the md RAID layer of a stack: an array planned over its
// member partitions (level, chunk, the stripe geometry its file system
// is given), created with its mdadm.conf line, and released: stopped,
// its members' superblocks zeroed, its line removed.
package md

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/stack/internal/layer"
	"github.com/diskprep/diskprep/hwinfo/probe"
)

// ArrayResult is one md array after ApplyStacks.
type ArrayResult struct {
	Name        string   `json:"name"`
	Device      string   `json:"device"`
	Node        string   `json:"node,omitempty"` // md127
	Level       int      `json:"level"`
	Members     []string `json:"members"`
	Metadata    string   `json:"metadata"`
	UUID        string   `json:"uuid"`
	ChunkBytes  uint64   `json:"chunk_bytes,omitempty"`
	DataMembers int      `json:"data_members,omitempty"`
	Created     bool     `json:"created"`
	CreateArgv  []string `json:"create_argv,omitempty"`
	// MdadmVersion is the first line of mdadm --version.
	MdadmVersion string             `json:"mdadm_version,omitempty"`
	ConfFile     string             `json:"conf_file"`
	ConfLine     string             `json:"conf_line"`
	ConfAdded    bool               `json:"conf_added,omitempty"`
	Volume       layer.VolumeResult `json:"volume"`
}

// mdadmConfMarker starts diskprep's ownership comment above its ARRAY
// lines, as in fstab.
const mdadmConfMarker = "# diskprep: md "

// ensureMdadmConf adds the array's line to mdadm.conf (atomically, the
// file created when missing) unless it is there.
func (a *applier) ensureMdadmConf(path string, ap ArrayPlan) (bool, error) {
	old, err := a.Host().ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(old), "\n") {
		if strings.TrimSpace(line) == ap.ConfLine {
			return false, nil
		}
	}
	b := append([]byte(nil), old...)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	b = fmt.Appendf(b, "%s%s (\"diskprep release\" removes this entry)\n%s\n", mdadmConfMarker, ap.Name, ap.ConfLine)
	a.Log().Info("add mdadm.conf line: started", "file", path, "line", ap.ConfLine)
	if err := a.Host().MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := a.Host().WriteFile(path, b, 0o644); err != nil {
		a.Log().Info("add mdadm.conf line: failed", "file", path, "err", err)
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	a.Log().Info("add mdadm.conf line: finished", "file", path)
	return true, nil
}

// applyArray creates one md array, writes its mdadm.conf line and puts
// its file system on it.
func (r *run) applyArray(ctx context.Context, ap ArrayPlan, conf string) (*ArrayResult, error) {
	ar := ArrayResult{Name: ap.Name, Device: ap.Device, Level: ap.Level, Members: ap.Members, Metadata: ap.Metadata, UUID: ap.UUID,
		ChunkBytes: ap.ChunkBytes, DataMembers: ap.DataMembers, MdadmVersion: r.Versions["mdadm"], ConfFile: conf, ConfLine: ap.ConfLine}
	if ap.Create != nil {
		if err := r.CheckMembersFree(ap.Members, "raid:"+ap.Name); err != nil {
			return nil, err
		}
		if err := r.Do(ctx, "create md array", ap.Create); err != nil {
			return nil, fmt.Errorf("create md array %s: %w", ap.Name, err)
		}
		ar.Created, ar.CreateArgv = true, ap.Create
		r.Changed = true
	}
	err := r.arraySteps(ctx, ap, conf, &ar)
	if err == nil {
		ar.Volume, err = r.Volume(ctx, ap.Volume)
	}
	return &ar, err
}

// arraySteps waits for a new array's node, wipes it and persists it.
func (r *run) arraySteps(ctx context.Context, ap ArrayPlan, conf string, ar *ArrayResult) error {
	node, err := r.WaitStackNode(ctx, ap.Device)
	if err != nil {
		return err
	}
	ar.Node = node
	if ap.Wipe != nil {
		if err := r.Do(ctx, "wipe the new array", ap.Wipe); err != nil {
			return fmt.Errorf("wipe the new md array %s: %w", ap.Name, err)
		}
	}
	added, err := r.app().ensureMdadmConf(conf, ap)
	if err != nil {
		return err
	}
	ar.ConfAdded = added
	r.Changed = r.Changed || added
	return nil
}

// mdMetadata is the md superblock version diskprep writes, said
// explicitly: 1.2 sits 4 KiB from the start, away from the GPT and from
// anything a partition scanner or file system would look at.
const mdMetadata = "1.2"

// MinStripedXFSBytes is the smallest array whose xfs is given the stripe
// geometry: mkfs.xfs ignores a volume's own geometry under 1 GiB ("the
// performance gains on such a small system are not worth the risk that
// we'll end up with an undersized log"), and given su/sw there it fails
// ("Log size must be at least 64MB" on a 510 layer.MiB RAID10 of 512 KiB chunks).
const MinStripedXFSBytes = 1 << 30

// defaultChunkBytes is mdadm's default chunk, used unless the members'
// optimal I/O size asks for a larger one.
const defaultChunkBytes = 512 << 10

// ArraySpec is one md array: its members are the partitions whose Use is
// "raid:"+Name.
type ArraySpec struct {
	Name   string           `json:"name"`
	Level  int              `json:"level"` // 0, 1, 5, 6, 10
	Volume layer.VolumeSpec `json:"filesystem"`
	Origin string           `json:"origin,omitempty"`
}

// ArrayPlan is one md array.
type ArrayPlan struct {
	Name     string   `json:"name"`
	Device   string   `json:"device"` // /dev/md/NAME
	Level    int      `json:"level"`
	Members  []string `json:"members"`
	Metadata string   `json:"metadata"`
	// ChunkBytes is the stripe unit (levels 0, 5, 6, 10); DataMembers the
	// members a stripe spans with data. Zero for RAID1.
	ChunkBytes  uint64 `json:"chunk_bytes,omitempty"`
	DataMembers int    `json:"data_members,omitempty"`
	UUID        string `json:"uuid"` // mdadm's form, chosen at planning
	SizeBytes   uint64 `json:"size_bytes"`
	// Create is the mdadm argv; nil when the array exists as asked.
	Create []string `json:"create,omitempty"`
	// Wipe is the wipefs argv run on the new array before its mdadm.conf
	// line and file system; nil for an array made by an earlier run.
	Wipe []string `json:"wipe,omitempty"`
	// Existing names the running array ("md127") when there is one.
	Existing string           `json:"existing,omitempty"`
	ConfLine string           `json:"conf_line"`
	Volume   layer.VolumePlan `json:"volume"`
	Origin   string           `json:"origin,omitempty"`
}

// minMembers is the least an md level takes.
var minMembers = map[int]int{0: 2, 1: 2, 5: 3, 6: 4, 10: 4}

// arrayGeometry is the chunk and data members of a level over n members.
func arrayGeometry(level, n int, ms []layer.Member) (chunk uint64, data int) {
	switch level {
	case 0:
		data = n
	case 5:
		data = n - 1
	case 6:
		data = n - 2
	case 10:
		if n%2 == 0 {
			data = n / 2
		}
	default:
		return 0, 0
	}
	chunk = defaultChunkBytes
	for _, m := range ms {
		// A device that says its optimal I/O is a larger power-of-two
		// multiple of 4 KiB (a hardware RAID or SMR stripe under it)
		// gets chunks of that size.
		if m.Disk != nil {
			if o := m.Disk.OptimalIOBytes; o > chunk && o <= 4<<20 && o%4096 == 0 && o&(o-1) == 0 {
				chunk = o
			}
		}
	}
	return chunk, data
}

func (pl planner) planArray(a ArraySpec, ms []layer.Member, opt layer.Options, mounts []disk.MountEntry, conf string) (ArrayPlan, error) {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Path < ms[j].Path })
	ap := ArrayPlan{Name: a.Name, Device: pl.Roots.DevPath("md", a.Name), Level: a.Level, Metadata: mdMetadata, Origin: a.Origin}
	var smallest uint64
	for i, m := range ms {
		ap.Members = append(ap.Members, m.Path)
		if i == 0 || m.Part.SizeBytes < smallest {
			smallest = m.Part.SizeBytes
		}
	}
	n := len(ms)
	ap.ChunkBytes, ap.DataMembers = arrayGeometry(a.Level, n, ms)
	switch a.Level {
	case 1:
		ap.SizeBytes = smallest
	case 10:
		ap.SizeBytes = smallest * uint64(n) / 2
	default:
		ap.SizeBytes = smallest * uint64(ap.DataMembers)
	}

	// What is running: an array holding the members, or one by this name.
	h := pl.HostOrLive()
	running := ""
	for _, m := range ms {
		if m.Ex == nil {
			continue
		}
		for _, hd := range m.Ex.Holders {
			if hd.Kind != "md" {
				continue
			}
			if !disk.MDNameIs(hd.DMName, a.Name) {
				return ap, disk.Refuse(m.Path, fmt.Sprintf("%s is already a member of md array %s (%s), not of %s", m.Path, hd.Name, layer.OrNone(hd.DMName), a.Name))
			}
			if running != "" && running != hd.Name {
				return ap, disk.Refuse(m.Path, fmt.Sprintf("the members of %s are in two arrays, %s and %s", a.Name, running, hd.Name))
			}
			running = hd.Name
		}
	}
	if real, err := h.EvalSymlinks(ap.Device); err == nil {
		name := filepath.Base(real)
		slaves := pl.mdSlaves(name)
		switch {
		case running == "" && len(slaves) == 0:
			// The node of an array just stopped, which udev has not
			// removed yet: nothing runs there, mdadm --create takes it.
		case running == "":
			return ap, disk.Refuse(ap.Device, fmt.Sprintf("md array %s already exists as %s over %s, not the partitions planned", a.Name, name, strings.Join(slaves, ", ")))
		case name != running:
			return ap, disk.Refuse(ap.Device, fmt.Sprintf("%s is %s, but the members are in %s", ap.Device, name, running))
		}
	}
	vol := layer.VolumePlan{Device: ap.Device, FS: a.Volume.FS, Label: a.Volume.Label, MkfsOpts: a.Volume.MkfsOpts,
		MountPoint: pl.ResolveMountPoint(a.Volume.Mount), MountOpts: a.Volume.MountOpts, MountOver: a.Volume.MountOver, Persist: a.Volume.Persist}
	geometry := stripeGeometry(vol.FS, ap.ChunkBytes, ap.DataMembers)
	if vol.FS == "xfs" && ap.SizeBytes < MinStripedXFSBytes {
		geometry = ""
	}
	vol.Geometry = geometry
	if running != "" {
		ap.Existing = running
		if err := pl.checkArray(ap, running); err != nil {
			return ap, err
		}
		uuid, err := pl.mdUUID(running)
		if err != nil {
			return ap, err
		}
		ap.UUID = uuid
		ap.ConfLine = fmt.Sprintf("ARRAY %s metadata=%s UUID=%s", ap.Device, mdMetadata, ap.UUID)
		if !pl.confHas(conf, ap.ConfLine) {
			// A run killed between mdadm --create and the mdadm.conf
			// line, which comes before mkfs: whatever the new array
			// shows is what its members held before, not ours.
			ap.Wipe = []string{"wipefs", "--all", ap.Device}
			if err := pl.PlanVolumeOn(&vol, a.Volume.Encrypt, pl.Roots.DevPath(running), true, true, ap.SizeBytes, opt, mounts, geometry); err != nil {
				return ap, err
			}
		} else if err := pl.PlanVolumeOn(&vol, a.Volume.Encrypt, pl.Roots.DevPath(running), false, false, ap.SizeBytes, opt, mounts, geometry); err != nil {
			return ap, err
		}
	} else {
		ap.UUID = mdUUIDForm(pl.MakeUUID())
		ap.Create = []string{"mdadm", "--create", ap.Device, "--run", "--metadata=" + mdMetadata, "--name=" + a.Name,
			"--level=" + fmt.Sprint(a.Level), fmt.Sprintf("--raid-devices=%d", n), "--uuid=" + ap.UUID}
		if ap.ChunkBytes > 0 {
			ap.Create = append(ap.Create, fmt.Sprintf("--chunk=%dK", ap.ChunkBytes>>10))
		}
		ap.Create = append(ap.Create, ap.Members...)
		// A new array shows at its start what its members held there
		// before (an earlier array of the same layout, its file system):
		// it is wiped before anything else, and mkfs may overwrite.
		ap.Wipe = []string{"wipefs", "--all", ap.Device}
		if err := pl.PlanVolumeOn(&vol, a.Volume.Encrypt, "", true, true, ap.SizeBytes, opt, mounts, geometry); err != nil {
			return ap, err
		}
	}
	ap.ConfLine = fmt.Sprintf("ARRAY %s metadata=%s UUID=%s", ap.Device, mdMetadata, ap.UUID)
	if vol.Persist {
		vol.FstabLine = disk.FstabEntryLine(vol.PartPlan())
	}
	ap.Volume = vol
	return ap, nil
}

// checkArray refuses a running array that is not the one asked for: other
// level or other members.
func (pl planner) checkArray(ap ArrayPlan, name string) error {
	h := pl.HostOrLive()
	b, err := h.ReadFile(pl.Roots.SysPath("block", name, "md", "level"))
	if err != nil {
		return fmt.Errorf("level of %s: %w", name, err)
	}
	if lvl := strings.TrimSpace(string(b)); lvl != fmt.Sprintf("raid%d", ap.Level) {
		return disk.Refuse(ap.Device, fmt.Sprintf("md array %s (%s) is %s, not raid%d asked (release it with --wipe first)", ap.Name, name, lvl, ap.Level))
	}
	have := pl.mdSlaves(name)
	var want []string
	for _, m := range ap.Members {
		want = append(want, filepath.Base(m))
	}
	sort.Strings(want)
	if strings.Join(have, ",") != strings.Join(want, ",") {
		return disk.Refuse(ap.Device, fmt.Sprintf("md array %s (%s) is built over %s, not %s (release it with --wipe first)", ap.Name, name, layer.OrNone(strings.Join(have, ", ")), strings.Join(want, ", ")))
	}
	return nil
}

// confHas says whether mdadm.conf holds line.
func (pl planner) confHas(conf, line string) bool {
	b, err := pl.HostOrLive().ReadFile(conf)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// mdSlaves lists the member devices of a running md array, sorted.
func (pl planner) mdSlaves(name string) []string {
	des, _ := pl.HostOrLive().ReadDir(pl.Roots.SysPath("block", name, "slaves"))
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	sort.Strings(out)
	return out
}

// mdUUID is a running array's UUID in mdadm's form, from sysfs.
func (pl planner) mdUUID(name string) (string, error) {
	b, err := pl.HostOrLive().ReadFile(pl.Roots.SysPath("block", name, "md", "uuid"))
	if err != nil {
		return "", fmt.Errorf("uuid of %s: %w", name, err)
	}
	return mdUUIDForm(strings.TrimSpace(string(b))), nil
}

// mdUUIDForm writes a UUID as mdadm does: four groups of eight hex digits.
func mdUUIDForm(u string) string {
	hex := strings.ToLower(strings.NewReplacer("-", "", ":", "").Replace(u))
	if len(hex) != 32 {
		return u
	}
	return hex[0:8] + ":" + hex[8:16] + ":" + hex[16:24] + ":" + hex[24:32]
}

// stripeGeometry is the stripe geometry mkfs is given for chunk and data
// members: xfs's su=..,sw=.. (-d), ext4's stride=..,stripe_width=.. (-E,
// in 4 KiB blocks); "" for none.
func stripeGeometry(fs string, chunk uint64, data int) string {
	if chunk == 0 || data == 0 {
		return ""
	}
	switch fs {
	case "xfs":
		return fmt.Sprintf("su=%dk,sw=%d", chunk>>10, data)
	case "ext4":
		stride := chunk / 4096
		return fmt.Sprintf("stride=%d,stripe_width=%d", stride, stride*uint64(data))
	}
	return ""
}

// checkMdadmConf refuses an mdadm.conf that already names an array's
// device or UUID with another line (written by hand, or for another
// array).
func (pl planner) checkMdadmConf(conf string, arrays []ArrayPlan) error {
	if len(arrays) == 0 {
		return nil
	}
	b, err := pl.HostOrLive().ReadFile(conf)
	if err != nil {
		return nil
	}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "ARRAY" {
			continue
		}
		for _, ap := range arrays {
			if strings.TrimSpace(line) == ap.ConfLine {
				continue
			}
			if f[1] == ap.Device || strings.Contains(strings.ToLower(line), "uuid="+ap.UUID) {
				return disk.Refuse(ap.Device, fmt.Sprintf("%s line %d already says %q", conf, i+1, strings.TrimSpace(line)))
			}
		}
	}
	return nil
}

// addDormantMD plans zeroing the superblock of dev, a member of a stopped
// md array, or refuses when another device that is not wiped is a member
// of the same array.
func (a *applier) addDormantMD(plan *disk.ReleasePlan, dev string, sig probe.Signature, wiped map[string]bool) error {
	var others []string
	des, _ := a.Host().ReadDir(a.Roots().SysPath("class/block"))
	for _, de := range des {
		n := de.Name()
		if wiped[n] || strings.HasPrefix(n, "fd") || strings.HasPrefix(n, "sr") {
			continue // a floppy or optical drive holds no array, and opening one can hang
		}
		sigs, err := a.ProbeDevice(a.Roots().DevPath(n))
		if err != nil {
			continue
		}
		for _, o := range sigs {
			if o.Type == "linux_raid_member" && sig.UUID != "" && strings.EqualFold(o.UUID, sig.UUID) {
				others = append(others, "/dev/"+n)
			}
		}
	}
	if len(others) > 0 {
		sort.Strings(others)
		name := sig.Label
		if _, after, ok := strings.Cut(name, ":"); ok {
			name = after
		}
		how := "assemble it (mdadm --assemble --scan) and release it with --wipe"
		if name != "" {
			how += " (diskprep release /dev/md/" + name + " --wipe)"
		}
		return disk.RefuseWipe(plan.Target, fmt.Sprintf("%s is a member of the stopped md array %s, which also has %s, not released: wiping only this would leave the array degraded there; to remove all of it, %s",
			dev, strings.TrimSpace(name+" (uuid "+sig.UUID+")"), strings.Join(others, ", "), how))
	}
	plan.Stacks.MDZero = append(plan.Stacks.MDZero, dev)
	return nil
}

// managedConfLines are diskprep's ARRAY lines (under its marker) for the
// array uuid in mdadm.conf data.
func managedConfLines(data, uuid string) []string {
	lines := strings.Split(data, "\n")
	var out []string
	for i := 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i-1], mdadmConfMarker) && strings.HasPrefix(lines[i], "ARRAY ") && strings.Contains(lines[i], "UUID="+uuid) {
			out = append(out, lines[i])
		}
	}
	return out
}
