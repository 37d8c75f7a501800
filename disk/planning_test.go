package disk

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/hwinfo"
)

const gib = uint64(1) << 30

// fixedUUIDs is a planner whose plans are reproducible: uuid-1, uuid-2, ...
func fixedUUIDs(t *testing.T) Planner {
	t.Helper()
	n := 0
	return Planner{NewUUID: func() string {
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}}
}

func blankDisk(name string, size, lss, pss, opt uint64) hwinfo.Disk {
	return hwinfo.Disk{
		Name: name, Path: "/dev/" + name, SizeBytes: size,
		LogicalSectorBytes: lss, PhysicalSectorBytes: pss, OptimalIOBytes: opt,
		Model: "TEST DISK", Serial: "S123", WWN: "0x5000c500a1b2c3d4", Transport: "sata",
	}
}

func hostWith(disks ...hwinfo.Disk) *hwinfo.Host {
	return &hwinfo.Host{Schema: hwinfo.Schema, Disks: disks}
}

func oneXFS(dev string) Request {
	return Request{Device: dev, Partitions: []PartSpec{{FS: "xfs", Label: "data", Mount: "/data"}}}
}

func TestPlanBlankDisk512(t *testing.T) {
	pl := fixedUUIDs(t)
	h := hostWith(blankDisk("sdb", 20*gib, 512, 512, 0))
	p, err := pl.PlanDisk(oneXFS("/dev/sdb"), h)
	if err != nil {
		t.Fatal(err)
	}
	if p.Table == nil || p.Table.FirstUsableLBA != 34 || p.Table.TotalSectors != 20*gib/512 {
		t.Fatalf("table %+v", p.Table)
	}
	// Backup GPT: 32 entry sectors + header at the end.
	if want := 20*gib/512 - 34; p.Table.LastUsableLBA != want {
		t.Errorf("last usable %d, want %d", p.Table.LastUsableLBA, want)
	}
	pp := p.Partitions[0]
	if pp.StartLBA != 2048 || pp.Name != "sdb1" || pp.Path != "/dev/sdb1" {
		t.Errorf("partition %+v", pp)
	}
	// The rest partition ends on a 1 MiB boundary, before the backup GPT.
	if (pp.EndLBA+1)%2048 != 0 || pp.EndLBA > p.Table.LastUsableLBA {
		t.Errorf("end LBA %d not aligned or beyond %d", pp.EndLBA, p.Table.LastUsableLBA)
	}
	if pp.SizeBytes != (pp.EndLBA-pp.StartLBA+1)*512 || pp.StartBytes != mib {
		t.Errorf("bytes %d@%d", pp.SizeBytes, pp.StartBytes)
	}
	wantMkfs := []string{"mkfs.xfs", "-L", "data", "-m", "uuid=" + pp.FSUUID, "/dev/sdb1"}
	if fmt.Sprint(pp.Mkfs) != fmt.Sprint(wantMkfs) {
		t.Errorf("mkfs %q, want %q", pp.Mkfs, wantMkfs)
	}
	if want := []string{"mount", "-t", "xfs", "/dev/sdb1", "/data"}; fmt.Sprint(pp.MountArgv) != fmt.Sprint(want) {
		t.Errorf("mount %q", pp.MountArgv)
	}
	if pp.TypeGUID != LinuxFilesystemGUID || pp.Label != "data" || pp.PartGUID == "" || p.Table.DiskGUID == "" {
		t.Errorf("gpt fields %+v %+v", pp, p.Table)
	}
	if p.Fingerprint.Serial != "S123" || p.Fingerprint.SizeBytes != 20*gib || p.Unchanged || len(p.Destroys) != 0 {
		t.Errorf("plan %+v", p)
	}
	if _, err := json.Marshal(p); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.WriteText(&b); err != nil || !strings.Contains(b.String(), QuoteArgv(pp.Mkfs)) {
		t.Errorf("text %q %v", b.String(), err)
	}
}

func TestPlanSectorSizesAndAlignment(t *testing.T) {
	pl := fixedUUIDs(t)
	cases := []struct {
		lss, pss, opt uint64
		firstUsable   uint64
		align         uint64
		note          bool
	}{
		{512, 512, 0, 34, mib, false},
		{512, 4096, 0, 34, mib, false},
		{4096, 4096, 0, 6, mib, false},
		{512, 4096, 4 * mib, 34, 4 * mib, false},
		{4096, 4096, 768 << 10, 6, 3 * mib, false}, // RAID stripe that does not divide 1 MiB
		{512, 512, 33553920, 34, mib, true},        // 0xffff sectors: nonsense
		{512, 512, 1000, 34, mib, true},            // not a sector multiple
		{4096, 4096, 512 << 10, 6, mib, false},     // divides 1 MiB
		{512, 512, 2 * mib, 34, 2 * mib, false},    // larger optimal I/O
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d-%d-%d", c.lss, c.pss, c.opt), func(t *testing.T) {
			h := hostWith(blankDisk("nvme0n1", 50*gib+12345*4096, c.lss, c.pss, c.opt))
			req := Request{Device: "nvme0n1", Partitions: []PartSpec{{FS: "ext4", SizeBytes: 10 * gib}, {FS: "xfs"}}}
			p, err := pl.PlanDisk(req, h)
			if err != nil {
				t.Fatal(err)
			}
			if p.Table.FirstUsableLBA != c.firstUsable || p.Table.AlignBytes != c.align || p.Table.SectorBytes != c.lss {
				t.Fatalf("table %+v", p.Table)
			}
			if (len(p.Notes) > 0) != c.note {
				t.Errorf("notes %q", p.Notes)
			}
			for _, pp := range p.Partitions {
				if pp.StartBytes%c.align != 0 || pp.StartLBA < c.firstUsable || pp.EndLBA > p.Table.LastUsableLBA {
					t.Errorf("partition %d at %d not aligned to %d / out of range", pp.Number, pp.StartBytes, c.align)
				}
			}
			if p.Partitions[0].SizeBytes != 10*gib || p.Partitions[0].Name != "nvme0n1p1" {
				t.Errorf("p1 %+v", p.Partitions[0])
			}
			if p.Partitions[1].StartLBA <= p.Partitions[0].EndLBA {
				t.Errorf("overlap")
			}
			if want := c.lss * (p.Table.TotalSectors - 1 - (16384 / c.lss)); p.Table.LastUsableLBA*c.lss >= want {
				t.Errorf("last usable %d overlaps the backup entry array", p.Table.LastUsableLBA)
			}
		})
	}
}

func TestPlanWipeForcesMkfs(t *testing.T) {
	pl := fixedUUIDs(t)
	d := blankDisk("sdb", 20*gib, 512, 512, 0)
	d.FSType, d.FSLabel = "ext4", "old"
	req := Request{Device: "sdb", Wipe: true, Partitions: []PartSpec{{FS: "ext4", Label: "new"}, {FS: "xfs"}}}
	req.Partitions[0].SizeBytes = 5 * gib
	p, err := pl.PlanDisk(req, hostWith(d))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Partitions[0].Mkfs; fmt.Sprint(got) != fmt.Sprint([]string{"mkfs.ext4", "-F", "-L", "new", "-U", p.Partitions[0].FSUUID, "/dev/sdb1"}) {
		t.Errorf("ext4 argv %q", got)
	}
	if got := p.Partitions[1].Mkfs; got[1] != "-f" {
		t.Errorf("xfs argv %q", got)
	}
	if len(p.Destroys) != 1 || !strings.Contains(p.Destroys[0], "ext4") {
		t.Errorf("destroys %q", p.Destroys)
	}
}

func TestPlanUserOptionsPassedThrough(t *testing.T) {
	pl := fixedUUIDs(t)
	req := Request{Device: "sdb", Partitions: []PartSpec{{FS: "xfs", MkfsOpts: []string{"-b", "size=4096", "-m", "reflink=0"}, Mount: "/srv/x y", MountOpts: "noatime,discard", Persist: true}}}
	_, err := pl.PlanDisk(req, hostWith(blankDisk("sdb", 20*gib, 512, 512, 0)))
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("mount point with a space: %v", err)
	}
	req.Partitions[0].Mount = "/srv/x"
	p, err := pl.PlanDisk(req, hostWith(blankDisk("sdb", 20*gib, 512, 512, 0)))
	if err != nil {
		t.Fatal(err)
	}
	pp := p.Partitions[0]
	want := []string{"mkfs.xfs", "-m", "uuid=" + pp.FSUUID, "-b", "size=4096", "-m", "reflink=0", "/dev/sdb1"}
	if fmt.Sprint(pp.Mkfs) != fmt.Sprint(want) {
		t.Errorf("mkfs %q", pp.Mkfs)
	}
	if want := []string{"mount", "-t", "xfs", "-o", "noatime,discard", "/dev/sdb1", "/srv/x"}; fmt.Sprint(pp.MountArgv) != fmt.Sprint(want) {
		t.Errorf("mount %q", pp.MountArgv)
	}
	if want := "UUID=" + pp.FSUUID + "\t/srv/x\txfs\tdefaults,nofail,noatime,discard\t0\t0"; pp.FstabLine != want {
		t.Errorf("fstab %q, want %q", pp.FstabLine, want)
	}
}

func TestPlanRefusals(t *testing.T) {
	pl := fixedUUIDs(t)
	withPart := func(mut func(*hwinfo.Disk, *hwinfo.Partition)) hwinfo.Disk {
		d := blankDisk("sdb", 20*gib, 512, 512, 0)
		d.PartitionTable, d.PartitionTableID = "gpt", "A-B"
		d.Partitions = []hwinfo.Partition{{Name: "sdb1", Path: "/dev/sdb1", Number: 1, StartBytes: mib, SizeBytes: 5 * gib, FSType: "xfs"}}
		mut(&d, &d.Partitions[0])
		return d
	}
	cases := []struct {
		name     string
		disk     hwinfo.Disk
		req      Request
		evidence string
	}{
		{"mounted", withPart(func(d *hwinfo.Disk, p *hwinfo.Partition) {
			p.Mounts = []hwinfo.Mount{{Point: "/data", Source: "/dev/sdb1"}}
		}), oneXFS("sdb"), "sdb1 is mounted at /data"},
		{"mounted with wipe", withPart(func(d *hwinfo.Disk, p *hwinfo.Partition) { p.Mounts = []hwinfo.Mount{{Point: "/data"}} }), Request{Device: "sdb", Wipe: true, Partitions: []PartSpec{{FS: "xfs"}}}, "sdb1 is mounted at /data"},
		{"whole disk mounted", func() hwinfo.Disk {
			d := blankDisk("sdb", 20*gib, 512, 512, 0)
			d.FSType, d.Mounts = "ext4", []hwinfo.Mount{{Point: "/mnt"}}
			return d
		}(), oneXFS("sdb"), "sdb is mounted at /mnt"},
		{"swap", withPart(func(d *hwinfo.Disk, p *hwinfo.Partition) { p.FSType, p.Swap = "swap", true }), Request{Device: "sdb", Wipe: true, Partitions: []PartSpec{{FS: "xfs"}}}, "sdb1 is in use as swap"},
		{"lvm holder", withPart(func(d *hwinfo.Disk, p *hwinfo.Partition) {
			p.FSType = "LVM2_member"
			p.Holders = []hwinfo.Holder{{Name: "dm-0", Kind: "lvm", DMName: "vg-data", Mounts: []hwinfo.Mount{{Point: "/srv"}}}}
		}), Request{Device: "sdb", Wipe: true, Partitions: []PartSpec{{FS: "xfs"}}}, "sdb1 is held by lvm dm-0 (vg-data)"},
		{"indirect mount", withPart(func(d *hwinfo.Disk, p *hwinfo.Partition) {
			p.Holders = []hwinfo.Holder{{Name: "dm-0", Kind: "crypt", Holders: []hwinfo.Holder{{Name: "dm-1", Kind: "lvm", Mounts: []hwinfo.Mount{{Point: "/home"}}}}}}
		}), Request{Device: "sdb", Wipe: true, Partitions: []PartSpec{{FS: "xfs"}}}, "sdb1 is mounted at /home via dm-1"},
		{"md holder on disk", func() hwinfo.Disk {
			d := blankDisk("sdb", 20*gib, 512, 512, 0)
			d.FSType, d.Holders = "linux_raid_member", []hwinfo.Holder{{Name: "md127", Kind: "md"}}
			return d
		}(), Request{Device: "sdb", Wipe: true, Partitions: []PartSpec{{FS: "xfs"}}}, "sdb is held by md md127"},
		{"md holder on a disk too small", func() hwinfo.Disk {
			// A guest's 128 MiB md member was refused as too small for xfs,
			// which hid what holds it.
			d := blankDisk("sdb", 128*mib, 512, 512, 0)
			d.FSType, d.Holders = "linux_raid_member", []hwinfo.Holder{{Name: "md0", Kind: "md"}}
			return d
		}(), Request{Device: "sdb", Wipe: true, Partitions: []PartSpec{{FS: "xfs"}}}, "sdb is held by md md0"},
		{"system", func() hwinfo.Disk {
			d := blankDisk("sda", 20*gib, 512, 512, 0)
			d.System, d.SystemReasons = true, []string{"/ on sda2"}
			return d
		}(), Request{Device: "sda", Wipe: true, Partitions: []PartSpec{{FS: "xfs"}}}, "sda holds the running system (/ on sda2)"},
		{"read-only", func() hwinfo.Disk {
			d := blankDisk("sdb", 20*gib, 512, 512, 0)
			d.ReadOnly = true
			return d
		}(), oneXFS("sdb"), "sdb is read-only"},
		{"signature without wipe", withPart(func(*hwinfo.Disk, *hwinfo.Partition) {}), oneXFS("sdb"), "sdb is not empty: gpt partition table A-B, sdb1 (5 GiB, xfs) (pass --wipe"},
		{"whole-disk signature without wipe", func() hwinfo.Disk {
			d := blankDisk("sdb", 20*gib, 512, 512, 0)
			d.FSType = "LVM2_member"
			return d
		}(), oneXFS("sdb"), "LVM2_member signature on the whole disk"},
		{"partition given", withPart(func(*hwinfo.Disk, *hwinfo.Partition) {}), oneXFS("/dev/sdb1"), "sdb1 is a partition of sdb; give the whole disk"},
		{"too small for xfs", blankDisk("sdb", 200*mib, 512, 512, 0), oneXFS("sdb"), "too small for the plan: partition 1 would have 198 MiB, xfs needs at least 300 MiB"},
		{"too small for sizes", blankDisk("sdb", 10*gib, 512, 512, 0), Request{Device: "sdb", Partitions: []PartSpec{{FS: "ext4", SizeBytes: 8 * gib}, {FS: "ext4", SizeBytes: 3 * gib}}}, "partition 2 of 3 GiB ends beyond the last usable sector"},
		{"no room for rest", blankDisk("sdb", 10*gib, 512, 512, 0), Request{Device: "sdb", Partitions: []PartSpec{{FS: "ext4", SizeBytes: 10*gib - 2*mib}, {FS: "ext4"}}}, "partition 2 would have 1008 KiB"},
		{"fingerprint changed", blankDisk("sdb", 20*gib, 512, 512, 0), Request{Device: "sdb", Partitions: []PartSpec{{FS: "xfs"}}, Expect: &Fingerprint{Serial: "OTHER", SizeBytes: 20 * gib}}, `serial "S123", expected "OTHER"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := pl.PlanDisk(c.req, hostWith(c.disk))
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("got %v, want a refusal", err)
			}
			if !strings.Contains(err.Error(), c.evidence) {
				t.Errorf("error %q does not name %q", err, c.evidence)
			}
		})
	}
}

func TestPlanNotBlockDevice(t *testing.T) {
	pl := Planner{Host: &statHost{paths: map[string]pathState{
		"/dev/null":             {Block: false, Resolved: "/dev/null"},
		"/dev/disk/by-id/ata-X": {Block: true, Resolved: "/dev/sdb"},
	}}}
	h := hostWith(blankDisk("sdb", 20*gib, 512, 512, 0))
	if _, err := pl.PlanDisk(oneXFS("/dev/null"), h); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not a block device") {
		t.Errorf("/dev/null: %v", err)
	}
	if _, err := pl.PlanDisk(oneXFS("/dev/sdz"), h); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("/dev/sdz: %v", err)
	}
	p, err := pl.PlanDisk(oneXFS("/dev/disk/by-id/ata-X"), h)
	if err != nil || p.Device != "/dev/sdb" {
		t.Errorf("by-id: %v %+v", err, p)
	}
}

// statHost answers the device-argument checks of planning from a table;
// its other methods are the live machine's (planning reads nothing else
// here: the facts have no such disk).
type statHost struct {
	LiveHost
	paths map[string]pathState
}

func (h *statHost) Stat(p string) (fs.FileInfo, error) {
	if _, ok := h.paths[p]; !ok {
		return nil, fs.ErrNotExist
	}
	return nil, nil
}

func (h *statHost) DeviceNumber(p string) (uint32, uint32, error) {
	if st, ok := h.paths[p]; ok && st.Block {
		return 8, 16, nil
	}
	return 0, 0, errors.New("not a block device")
}

func (h *statHost) EvalSymlinks(p string) (string, error) { return h.paths[p].Resolved, nil }

// Lstat and Readlink show each path of the table that resolves elsewhere
// as root's link there, what it resolves to as a node, and the
// directories above them as root's.
func (h *statHost) Lstat(p string) (fs.FileInfo, error) {
	mode := fs.FileMode(0)
	for path, st := range h.paths {
		switch {
		case p == path && st.Resolved != path:
			return statHostInfo{fs.ModeSymlink | 0o777}, nil
		case p == path || p == st.Resolved:
			mode = fs.ModeDevice | 0o660
		case mode == 0 && (within(path, p) || within(st.Resolved, p)):
			mode = fs.ModeDir | 0o755
		}
	}
	if mode == 0 {
		return nil, fs.ErrNotExist
	}
	return statHostInfo{mode}, nil
}

func (h *statHost) Readlink(p string) (string, error) {
	if st, ok := h.paths[p]; ok && st.Resolved != p {
		return st.Resolved, nil
	}
	return "", fs.ErrInvalid
}

type statHostInfo struct{ mode fs.FileMode }

func (i statHostInfo) Name() string       { return "" }
func (i statHostInfo) Size() int64        { return 0 }
func (i statHostInfo) Mode() fs.FileMode  { return i.mode }
func (i statHostInfo) ModTime() time.Time { return time.Time{} }
func (i statHostInfo) IsDir() bool        { return i.mode.IsDir() }
func (i statHostInfo) Sys() any           { return &syscall.Stat_t{} }

func TestPlanBadInput(t *testing.T) {
	h := hostWith(blankDisk("sdb", 20*gib, 512, 512, 0))
	cases := map[string]Request{
		"no device":        {Partitions: []PartSpec{{FS: "xfs"}}},
		"both":             {Device: "sdb", Image: "/tmp/x", Partitions: []PartSpec{{FS: "xfs"}}},
		"unknown fs":       {Device: "sdb", Partitions: []PartSpec{{FS: "btrfs"}}},
		"no partitions":    {Device: "sdb"},
		"rest not last":    {Device: "sdb", Partitions: []PartSpec{{FS: "xfs"}, {FS: "xfs", SizeBytes: gib}}},
		"long xfs label":   {Device: "sdb", Partitions: []PartSpec{{FS: "xfs", Label: "thirteen-char"}}},
		"label space":      {Device: "sdb", Partitions: []PartSpec{{FS: "ext4", Label: "a b"}}},
		"relative mount":   {Device: "sdb", Partitions: []PartSpec{{FS: "xfs", Mount: "data"}}},
		"persist no mount": {Device: "sdb", Partitions: []PartSpec{{FS: "xfs", Persist: true}}},
		"bad opts":         {Device: "sdb", Partitions: []PartSpec{{FS: "xfs", Mount: "/d", MountOpts: "a,,b"}}},
		"dup mount":        {Device: "sdb", Partitions: []PartSpec{{FS: "xfs", SizeBytes: gib, Mount: "/d"}, {FS: "xfs", Mount: "/d/"}}},
		"sector":           {Image: "/tmp/x.img", ImageSizeBytes: gib, ImageSectorBytes: 1024, Partitions: []PartSpec{{FS: "xfs"}}},
	}
	for name, req := range cases {
		if _, err := PlanDisk(req, h); !errors.Is(err, ErrUsage) {
			t.Errorf("%s: got %v, want a usage error", name, err)
		}
	}
}

// A disk laid out exactly as asked: nothing to write; mounted where asked
// is not "in use" but the expected state.
func TestPlanIdempotent(t *testing.T) {
	pl := fixedUUIDs(t)
	d := blankDisk("sdb", 20*gib, 512, 512, 0)
	req := oneXFS("sdb")
	req.Partitions[0].Persist = true
	first, err := pl.PlanDisk(req, hostWith(d))
	if err != nil {
		t.Fatal(err)
	}
	pp := first.Partitions[0]
	d.PartitionTable, d.PartitionTableID = "gpt", first.Table.DiskGUID
	d.Partitions = []hwinfo.Partition{{Name: "sdb1", Path: "/dev/sdb1", Number: 1, StartBytes: pp.StartBytes, SizeBytes: pp.SizeBytes,
		FSType: "xfs", FSLabel: "data", FSUUID: "fs-uuid", PartUUID: strings.ToLower(pp.PartGUID), PartLabel: "data", PartType: strings.ToLower(LinuxFilesystemGUID),
		Mounts: []hwinfo.Mount{{Point: "/data", Source: "/dev/sdb1", FSType: "xfs"}}}}
	p, err := pl.PlanDisk(req, hostWith(d))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Unchanged || p.Table != nil || p.Destructive() || p.Partitions[0].Mkfs != nil || p.Partitions[0].MountArgv != nil {
		t.Fatalf("plan %+v", p)
	}
	if !strings.HasPrefix(p.Partitions[0].FstabLine, "UUID=fs-uuid\t/data\t") {
		t.Errorf("fstab line %q", p.Partitions[0].FstabLine)
	}
	if ask, err := NeedConfirmation(p, false, false); ask || err != nil {
		t.Errorf("confirmation for a no-op: %v %v", ask, err)
	}

	// Not mounted: only the mount is planned.
	d.Partitions[0].Mounts = nil
	if p, err = pl.PlanDisk(req, hostWith(d)); err != nil || p.Unchanged || p.Partitions[0].MountArgv == nil || p.Destructive() {
		t.Errorf("unmounted: %v %+v", err, p)
	}
	// Mounted elsewhere: in use.
	d.Partitions[0].Mounts = []hwinfo.Mount{{Point: "/elsewhere"}}
	if _, err = pl.PlanDisk(req, hostWith(d)); !errors.Is(err, ErrRefused) {
		t.Errorf("mounted elsewhere: %v", err)
	}
	// Different filesystem: prepared differently, refused without --wipe.
	d.Partitions[0].Mounts = nil
	d.Partitions[0].FSType = "ext4"
	if _, err = pl.PlanDisk(req, hostWith(d)); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--wipe") {
		t.Errorf("different fs: %v", err)
	}
	req.Wipe = true
	if p, err = pl.PlanDisk(req, hostWith(d)); err != nil || p.Table == nil || p.Partitions[0].Mkfs[1] != "-f" {
		t.Errorf("different fs with wipe: %v %+v", err, p)
	}
	// Table written but no filesystem yet (an interrupted run): only mkfs.
	req.Wipe = false
	d.Partitions[0].FSType, d.Partitions[0].FSLabel = "", ""
	if p, err = pl.PlanDisk(req, hostWith(d)); err != nil || p.Table != nil || p.Partitions[0].Mkfs == nil || p.Partitions[0].Mkfs[1] == "-f" {
		t.Errorf("half done: %v %+v", err, p)
	}
}

// Fresh (fscompare) makes the table and the filesystem anew on a disk
// already prepared as planned, unmounted: a destructive plan, confirmed as
// any; where the layout differs it is Wipe as before. Without Wipe it
// changes nothing.
func TestPlanFresh(t *testing.T) {
	pl := fixedUUIDs(t)
	d := blankDisk("sdb", 20*gib, 512, 512, 0)
	req := oneXFS("sdb")
	first, err := pl.PlanDisk(req, hostWith(d))
	if err != nil {
		t.Fatal(err)
	}
	pp := first.Partitions[0]
	d.PartitionTable, d.PartitionTableID = "gpt", first.Table.DiskGUID
	d.Partitions = []hwinfo.Partition{{Name: "sdb1", Path: "/dev/sdb1", Number: 1, StartBytes: pp.StartBytes, SizeBytes: pp.SizeBytes,
		FSType: "xfs", FSLabel: "data", FSUUID: "fs-uuid", PartUUID: strings.ToLower(pp.PartGUID), PartLabel: "data", PartType: strings.ToLower(LinuxFilesystemGUID)}}
	req.Fresh = true
	if p, err := pl.PlanDisk(req, hostWith(d)); err != nil || p.Table != nil || p.Partitions[0].Mkfs != nil {
		t.Errorf("fresh without wipe: %v %+v", err, p)
	}
	req.Wipe = true
	p, err := pl.PlanDisk(req, hostWith(d))
	if err != nil || p.Table == nil || p.Partitions[0].Mkfs == nil || p.Partitions[0].Mkfs[1] != "-f" || p.Partitions[0].MountArgv == nil || !p.Destructive() {
		t.Fatalf("fresh with wipe: %v %+v", err, p)
	}
	if ask, err := NeedConfirmation(p, false, true); !ask || err != nil {
		t.Errorf("confirmation for a fresh plan: %v %v", ask, err)
	}
	// Mounted at the planned point (a rerun's): in use now.
	d.Partitions[0].Mounts = []hwinfo.Mount{{Point: "/data", Source: "/dev/sdb1", FSType: "xfs"}}
	if _, err := pl.PlanDisk(req, hostWith(d)); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "sdb1 is mounted at /data") {
		t.Errorf("fresh, mounted: %v", err)
	}
}

func TestPlanImage(t *testing.T) {
	pl := fixedUUIDs(t)
	h := hostWith()
	req := Request{Image: "/var/tmp/a.img", ImageSizeBytes: 10 * gib, Partitions: []PartSpec{{FS: "xfs", Mount: "/mnt/a"}}}
	p, err := pl.PlanImage(req, h, ImageState{Path: "/var/tmp/a.img"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Image.Create || !p.Image.Attach || p.Device != LoopPlaceholder || p.Partitions[0].Path != LoopPlaceholder+"p1" {
		t.Fatalf("plan %+v %+v", p, p.Image)
	}
	b := p.Bind("/dev/loop7")
	if b.Device != "/dev/loop7" || b.Partitions[0].Name != "loop7p1" || b.Partitions[0].Mkfs[len(b.Partitions[0].Mkfs)-1] != "/dev/loop7p1" || b.Partitions[0].MountArgv[len(b.Partitions[0].MountArgv)-2] != "/dev/loop7p1" || b.Partitions[0].MountOpts != "nosuid,nodev" {
		t.Errorf("bound %+v", b.Partitions[0])
	}
	if p.Partitions[0].Path != LoopPlaceholder+"p1" {
		t.Errorf("Bind changed the original plan")
	}

	if _, err := pl.PlanImage(req, h, ImageState{Path: "/dev/sdb", Exists: true, DeviceNode: true}); !errors.Is(err, ErrRefused) {
		t.Errorf("device node: %v", err)
	}
	if _, err := pl.PlanImage(req, h, ImageState{Path: "/var/tmp/a.img", Exists: true, Regular: true, SizeBytes: gib, Disk: &hwinfo.Disk{}}); !errors.Is(err, ErrRefused) {
		t.Errorf("other size: %v", err)
	}
	req.Wipe = true
	if p, err := pl.PlanImage(req, h, ImageState{Path: "/var/tmp/a.img", Exists: true, Regular: true, SizeBytes: gib, Disk: &hwinfo.Disk{}}); err != nil || !p.Image.Recreate || !p.Destructive() {
		t.Errorf("other size with wipe: %v %+v", err, p)
	}
	req.Wipe = false
	// Existing image with an xfs on it: refused like a disk.
	d := hwinfo.Disk{SizeBytes: 10 * gib, LogicalSectorBytes: 512, PhysicalSectorBytes: 512, FSType: "xfs"}
	if _, err := pl.PlanImage(req, h, ImageState{Path: "/var/tmp/a.img", Exists: true, Regular: true, SizeBytes: 10 * gib, Disk: &d}); !errors.Is(err, ErrRefused) {
		t.Errorf("existing fs: %v", err)
	}
	// Attached already: planned against the loop device.
	loop := blankDisk("loop3", 10*gib, 512, 512, 0)
	loop.LoopBackingFile = "/var/tmp/a.img"
	p, err = pl.PlanImage(req, hostWith(loop), ImageState{Path: "/var/tmp/a.img", Exists: true, Regular: true, SizeBytes: 10 * gib, Disk: &hwinfo.Disk{}})
	if err != nil || p.Device != "/dev/loop3" || p.Image.Attach || p.Partitions[0].Name != "loop3p1" {
		t.Errorf("attached: %v %+v", err, p)
	}
	if _, err := pl.PlanImage(Request{Image: "/x", Partitions: []PartSpec{{FS: "xfs"}}}, h, ImageState{Path: "/x"}); !errors.Is(err, ErrUsage) {
		t.Errorf("no size: %v", err)
	}
}

func TestPartitionName(t *testing.T) {
	for disk, want := range map[string]string{"sda": "sda1", "vdb": "vdb1", "nvme0n1": "nvme0n1p1", "loop3": "loop3p1", "mmcblk0": "mmcblk0p1", "loopN": "loopNp1"} {
		if got := PartitionName(disk, 1); got != want {
			t.Errorf("%s: %s, want %s", disk, got, want)
		}
	}
}

func TestConfirmation(t *testing.T) {
	pl := fixedUUIDs(t)
	d := blankDisk("sdb", 20*gib, 512, 512, 0)
	d.FSType = "ext4"
	p, err := pl.PlanDisk(Request{Device: "sdb", Wipe: true, Partitions: []PartSpec{{FS: "xfs"}}}, hostWith(d))
	if err != nil {
		t.Fatal(err)
	}
	if ask, err := NeedConfirmation(p, false, false); ask || !errors.Is(err, ErrRefused) {
		t.Errorf("no terminal: %v %v", ask, err)
	}
	if ask, err := NeedConfirmation(p, true, false); ask || err != nil {
		t.Errorf("--yes: %v %v", ask, err)
	}
	if ask, err := NeedConfirmation(p, false, true); !ask || err != nil {
		t.Errorf("terminal: %v %v", ask, err)
	}
	// A new image holds nothing to lose: no question, even without a terminal.
	fresh := *p
	fresh.Image = &ImagePlan{Path: "/var/tmp/new.img", SizeBytes: 20 * gib, Create: true, Attach: true}
	if ask, err := NeedConfirmation(&fresh, false, false); ask || err != nil {
		t.Errorf("new image: %v %v", ask, err)
	}
	fresh.Image = &ImagePlan{Path: "/var/tmp/old.img", SizeBytes: 20 * gib, Attach: true}
	if _, err := NeedConfirmation(&fresh, false, false); !errors.Is(err, ErrRefused) {
		t.Errorf("existing image without a terminal: %v", err)
	}
	q := ConfirmationPrompt(p)
	for _, want := range []string{"TEST DISK", "S123", "20 GiB", "ext4 signature on the whole disk", "[y/N]"} {
		if !strings.Contains(q, want) {
			t.Errorf("prompt %q lacks %q", q, want)
		}
	}
	for a, want := range map[string]bool{"y\n": true, "YES": true, "": false, "n": false, "yep": false} {
		if Confirmed(a) != want {
			t.Errorf("answer %q", a)
		}
	}
}

// Images are named by their real path, as the kernel names a loop device's
// backing file, so a second run through a symlinked directory recognises an
// attached image instead of attaching it twice.
func TestInspectImageRealPath(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	st, err := InspectImage(filepath.Join(link, "a.img"))
	if err != nil || st.Exists || st.Path != filepath.Join(real, "a.img") {
		t.Fatalf("missing image: %+v %v", st, err)
	}
	if err := os.WriteFile(filepath.Join(real, "a.img"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err = InspectImage(filepath.Join(link, "a.img"))
	if err != nil || !st.Exists || !st.Regular || st.Path != filepath.Join(real, "a.img") || st.SizeBytes != 1<<20 || st.Disk == nil || st.Disk.PartitionTable != "" {
		t.Fatalf("existing image: %+v %v", st, err)
	}
}
