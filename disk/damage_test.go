package disk

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/testenv"
)

// gptImage writes the plan's GPT into a sparse file of the plan's size.
func gptImage(t *testing.T, p *Plan) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "disk.img"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(int64(p.Table.TotalSectors * p.Table.SectorBytes)); err != nil {
		t.Fatal(err)
	}
	if err := writeGPT(liveDevice{f}, p); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestReadDamage(t *testing.T) {
	pl := fixedUUIDs(t)
	d := blankDisk("sdb", 512<<20, 512, 512, 0)
	p, err := pl.planOnDisk(oneXFS("/dev/sdb"), &d, nil, damage{})
	if err != nil {
		t.Fatal(err)
	}
	f := gptImage(t, p)
	size := int64(d.SizeBytes)
	pp := p.Partitions[0]
	parts := []hwinfo.Partition{{Number: 1, StartBytes: pp.StartBytes, SizeBytes: pp.SizeBytes, FSType: "xfs"}}

	// A table go-diskfs wrote whole, and no filesystem yet.
	if dmg := readDamage(f, size, 512, parts); !dmg.none() {
		t.Fatalf("intact table: %+v", dmg)
	}

	// An xfs superblock with sb_inprogress set: mkfs.xfs was killed.
	sb := make([]byte, 512)
	copy(sb, "XFSB")
	sb[126] = 1
	f.WriteAt(sb, int64(pp.StartBytes))
	if dmg := readDamage(f, size, 512, parts); !strings.Contains(dmg.parts[1], "mkfs was interrupted") || dmg.table != "" {
		t.Errorf("unfinished xfs: %+v", dmg)
	}
	sb[126] = 0
	f.WriteAt(sb, int64(pp.StartBytes))
	if dmg := readDamage(f, size, 512, parts); !dmg.none() {
		t.Errorf("finished xfs: %+v", dmg)
	}
	// Only an xfs is judged so: ext4's mkfs writes its superblock last.
	sb[126] = 1
	f.WriteAt(sb, int64(pp.StartBytes))
	if dmg := readDamage(f, size, 512, []hwinfo.Partition{{Number: 1, StartBytes: pp.StartBytes, SizeBytes: pp.SizeBytes, FSType: "ext4"}}); !dmg.none() {
		t.Errorf("ext4 partition: %+v", dmg)
	}

	// Killed after the backup GPT, before the primary: no primary header.
	f.WriteAt(make([]byte, 512), 512)
	if dmg := readDamage(f, size, 512, nil); !strings.Contains(dmg.table, "primary GPT header invalid") {
		t.Errorf("no primary: %+v", dmg)
	}
	// Neither header: announced by the protective MBR, unreadable.
	f.WriteAt(make([]byte, 512), size-512)
	if dmg := readDamage(f, size, 512, nil); !strings.Contains(dmg.table, "corrupt partition table") {
		t.Errorf("no headers: %+v", dmg)
	}
}

// TestPlanDamagedNotPrepared: a disk whose facts say "prepared as asked"
// but whose bytes show a half-written table or an unfinished filesystem is
// refused without --wipe, naming the damage, and rewritten with it.
func TestPlanDamagedNotPrepared(t *testing.T) {
	pl := fixedUUIDs(t)
	blank := blankDisk("sdb", 20*gib, 512, 512, 0)
	first, err := pl.planOnDisk(oneXFS("/dev/sdb"), &blank, nil, damage{})
	if err != nil {
		t.Fatal(err)
	}
	pp := first.Partitions[0]
	prepared := blank
	prepared.PartitionTable, prepared.PartitionTableID = "gpt", "11111111-2222-4333-8444-555555555555"
	prepared.Partitions = []hwinfo.Partition{{
		Name: "sdb1", Path: "/dev/sdb1", Number: 1, StartBytes: pp.StartBytes, SizeBytes: pp.SizeBytes,
		FSType: "xfs", FSLabel: "data", FSUUID: "0d0e0a0d-0000-4000-8000-000000000001",
		PartUUID: "0d0e0a0d-0000-4000-8000-000000000002", PartLabel: "data", PartType: LinuxFilesystemGUID,
	}}
	if p, err := pl.planOnDisk(oneXFS("/dev/sdb"), &prepared, nil, damage{}); err != nil || p.Table != nil || p.Partitions[0].Mkfs != nil {
		t.Fatalf("undamaged and prepared: want the table and filesystem kept, got %v", err)
	}
	for name, dmg := range map[string]damage{
		"table": {table: "primary GPT header invalid (bad signature); using the backup header at LBA 41943039"},
		"mkfs":  {parts: map[int]string{1: "unfinished: mkfs was interrupted"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := pl.planOnDisk(oneXFS("/dev/sdb"), &prepared, nil, dmg)
			want := dmg.table
			if want == "" {
				want = dmg.parts[1]
			}
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--wipe") {
				t.Fatalf("without --wipe: %v", err)
			}
			req := oneXFS("/dev/sdb")
			req.Wipe = true
			p, err := pl.planOnDisk(req, &prepared, nil, dmg)
			if err != nil {
				t.Fatal(err)
			}
			if p.Table == nil || p.Partitions[0].Mkfs == nil || !strings.Contains(strings.Join(p.Destroys, "; "), want) {
				t.Errorf("with --wipe: table %v, mkfs %q, destroys %q", p.Table, p.Partitions[0].Mkfs, p.Destroys)
			}
			// Apply compares the fingerprint with facts read afresh, which
			// know nothing of the damage.
			if p.Fingerprint.TableType != "gpt" {
				t.Errorf("fingerprint table type %q", p.Fingerprint.TableType)
			}
		})
	}
}

func TestLockReentrantAndStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "7:99.lock")
	// A killed holder leaves its pid behind; the lock itself died with it.
	os.WriteFile(path, []byte("999999\n"), 0o644)
	u1, err := flockFile(path, "/dev/test")
	if err != nil {
		t.Fatalf("stale pid file blocks: %v", err)
	}
	if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q", b)
	}
	// This process again (LockTarget, then Apply): granted.
	u2, err := flockFile(path, "/dev/test")
	if err != nil {
		t.Fatalf("second lock in one process: %v", err)
	}
	// Anyone else (another open file, as another process has): refused,
	// naming this process.
	other := func() error {
		u, err := flockFileOnce(path, "/dev/test")
		if err == nil {
			u()
		}
		return err
	}
	u2()
	if err := other(); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("held once more: %v", err)
	}
	u1()
	if err := other(); err != nil {
		t.Errorf("after the last unlock: %v", err)
	}
}

// TestPrivilegedLiveFactsUnregisteredTable: a GPT prepare wrote whole but
// the kernel was never told of (a kill before BLKPG, on a kernel without a
// partition parser) is planned as the table it is, not refused.
func TestPrivilegedLiveFactsUnregisteredTable(t *testing.T) {
	testenv.RequirePrivileged(t)
	pl := fixedUUIDs(t)
	l := testenv.NewLoop(t, 64<<20, testenv.LoopOptions{})
	name := filepath.Base(l.Dev)
	d := hwinfo.Disk{Name: name, Path: l.Dev, SizeBytes: 64 << 20, LogicalSectorBytes: 512, PhysicalSectorBytes: 512, Transport: "loop"}
	req := Request{Device: l.Dev, Partitions: []PartSpec{{FS: "ext4", Label: "live"}}}
	p, err := pl.planOnDisk(req, &d, nil, damage{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(l.Dev, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = writeGPT(liveDevice{f}, p)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join("/sys/block", name, name+"p1")); err == nil {
		t.Skip("this kernel registered the partition by itself")
	}
	d.PartitionTable, d.PartitionTableID = "gpt", p.Table.DiskGUID
	live, dmg := pl.liveFacts(&d)
	if !dmg.none() || len(live.Partitions) != 1 || live.Partitions[0].StartBytes != p.Partitions[0].StartBytes || live.Partitions[0].PartLabel != "live" {
		t.Fatalf("live facts: %+v, damage %+v", live.Partitions, dmg)
	}
	again, err := pl.planOnDisk(req, live, nil, dmg)
	if err != nil {
		t.Fatalf("rerun refused: %v", err)
	}
	if again.Table != nil || again.Partitions[0].Mkfs == nil {
		t.Errorf("want the table kept and the filesystem made: table %v mkfs %q", again.Table, again.Partitions[0].Mkfs)
	}
	// Damaged, the same table is not read as partitions but refused.
	f, _ = os.OpenFile(l.Dev, os.O_RDWR, 0)
	f.WriteAt(make([]byte, 512), 512)
	f.Close()
	live, dmg = pl.liveFacts(&d)
	if dmg.table == "" || len(live.Partitions) != 0 {
		t.Errorf("no primary header: %+v, damage %+v", live.Partitions, dmg)
	}
}
