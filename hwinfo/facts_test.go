package hwinfo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestRoots(t *testing.T) {
	var live Roots
	for got, want := range map[string]string{
		live.SysPath("class/block", "sdb"): "/sys/class/block/sdb",
		live.ProcPath("self/mountinfo"):    "/proc/self/mountinfo",
		live.DevPath("loop-control"):       "/dev/loop-control",
		live.HostPath("etc/fstab"):         "/etc/fstab",
		live.StateDir():                    "/run/diskprep",
		live.DeviceLockPath("8:16"):        "/run/diskprep/locks/8:16.lock",
	} {
		if got != want {
			t.Errorf("live path %q, want %q", got, want)
		}
	}
	r := RootsUnder("/tmp/x")
	if r.SysPath("block") != "/tmp/x/sys/block" || r.ProcPath("swaps") != "/tmp/x/proc/swaps" || r.DevPath("sdb") != "/tmp/x/dev/sdb" || r.HostPath("etc/fstab") != "/tmp/x/etc/fstab" {
		t.Errorf("RootsUnder: %+v", r)
	}
	if a, b := live.ImageLockPath("/var/tmp/a.img"), live.ImageLockPath("/var/tmp/b.img"); a == b || !strings.HasPrefix(a, "/run/diskprep/locks/image-") {
		t.Errorf("image locks %q %q", a, b)
	}
}

func TestParseSwaps(t *testing.T) {
	got := ParseSwaps("Filename\tType\tSize\tUsed\tPriority\n/dev/sdd2  partition\t1048572\t0\t-2\n/swap\\040file file 100 0 -3\n\n")
	want := []Swap{{Path: "/dev/sdd2", Type: "partition"}, {Path: "/swap file", Type: "file"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseSwaps = %+v, want %+v", got, want)
	}
	if got := ParseSwaps("Filename\tType\tSize\tUsed\tPriority\n"); len(got) != 0 {
		t.Errorf("header only: %+v", got)
	}
}

func TestParseMemTotal(t *testing.T) {
	if n, err := ParseMemTotal("MemFree: 1 kB\nMemTotal:       24520352 kB\n"); err != nil || n != 24520352*1024 {
		t.Errorf("MemTotal = %d, %v", n, err)
	}
	if _, err := ParseMemTotal("MemFree: 1 kB\n"); !errors.Is(err, ErrNoMemTotal) {
		t.Errorf("missing: %v", err)
	}
	if _, err := ParseMemTotal("MemTotal: lots\n"); err == nil || !strings.Contains(err.Error(), `malformed MemTotal line "MemTotal: lots"`) {
		t.Errorf("malformed: %v", err)
	}
	if _, err := ParseMemTotal("MemTotal: 0 kB\n"); err == nil || !strings.Contains(err.Error(), `malformed MemTotal line`) {
		t.Errorf("no memory: %v", err)
	}
	dir := t.TempDir()
	mkfile(t, dir, "proc/meminfo", "MemTotal: 2048 kB\n")
	if n, err := RootsUnder(dir).MemTotal(); err != nil || n != 2<<20 {
		t.Errorf("Roots.MemTotal = %d, %v", n, err)
	}
	if _, err := RootsUnder(t.TempDir()).MemTotal(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no meminfo: %v", err)
	}
}

func TestReadMarker(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadMarker(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no marker: %v", err)
	}
	mkfile(t, dir, MarkerFile, `{"schema":"diskprep/prepared/v1","fs":"xfs","uuid":"u1","device":"/dev/sdb1","disk":"/dev/sdb","mkfs_argv":["mkfs.xfs","-f"],"mkfs_version":"6.4.0","prepared_at":"2026-12-01T00:00:00Z"}`)
	m, err := ReadMarker(dir)
	if err != nil || m.Schema != MarkerSchema || m.FS != "xfs" || m.UUID != "u1" || m.Disk != "/dev/sdb" || len(m.MkfsArgv) != 2 {
		t.Errorf("marker %+v, %v", m, err)
	}
	mkfile(t, dir, MarkerFile, `{garbage`)
	if _, err := ReadMarker(dir); err == nil || !strings.Contains(err.Error(), MarkerFile) {
		t.Errorf("garbage marker: %v", err)
	}
}

func TestDiskUses(t *testing.T) {
	lv := Holder{Name: "dm-1", Kind: "lvm", DMName: "vg-data", Mounts: []Mount{{Point: "/srv"}}, Swap: true}
	crypt := Holder{Name: "dm-0", Kind: "crypt", DMName: "luks-1", Holders: []Holder{lv}}
	d := Disk{
		Name: "sdb", Mounts: []Mount{{Point: "/srv", Via: "dm-0 (luks-1) -> dm-1 (vg-data)"}},
		Partitions: []Partition{
			{Name: "sdb1", Mounts: []Mount{{Point: "/data"}}},
			{Name: "sdb2", Swap: true},
			{Name: "sdb3", Holders: []Holder{crypt}},
			{Name: "sdb4", Holders: []Holder{{Name: "md127", Kind: "md"}}},
			{Name: "sdb5", Holders: []Holder{{Name: "dm-7"}}},
		},
	}
	var got []string
	for _, u := range d.Uses() {
		got = append(got, u.String())
	}
	want := []string{
		"sdb is mounted at /srv via dm-0 (luks-1) -> dm-1 (vg-data)",
		"sdb1 is mounted at /data",
		"sdb2 is in use as swap",
		"sdb3 is held by crypt dm-0 (luks-1)",
		"sdb3 is mounted at /srv via dm-1 (vg-data)",
		"sdb3 is in use as swap via dm-1 (vg-data)",
		"sdb4 is held by md md127",
		"sdb5 is held by holder dm-7",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("uses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	p := d.Partitions[0]
	if u := p.Uses(); len(u) != 1 || u[0].Device != "sdb1" || u[0].Kind != UseMounted || u[0].Point != "/data" {
		t.Errorf("partition uses %+v", u)
	}
	if u := (&Disk{Name: "sdc", Partitions: []Partition{{Name: "sdc1"}}}).Uses(); len(u) != 0 {
		t.Errorf("unused disk: %+v", u)
	}
}

func TestLiveUses(t *testing.T) {
	dir := t.TempDir()
	r := RootsUnder(dir)
	mkfile(t, dir, "proc/self/mountinfo", `22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
30 22 8:17 / /mnt/data rw,noatime shared:5 - xfs /dev/sdb1 rw
31 22 8:33 / /mnt/my\040disk rw,relatime shared:6 - ext4 /dev/sdc1 rw
`)
	mkfile(t, dir, "proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n/dev/sdd2  partition\t1048572\t0\t-2\n")
	disk := func(name string, minor int, parts ...string) {
		mkfile(t, dir, filepath.Join("sys/class/block", name, "dev"), fmt.Sprintf("8:%d\n", minor))
		os.MkdirAll(filepath.Join(dir, "sys/class/block", name, "holders"), 0o755)
		for i, p := range parts {
			mkfile(t, dir, filepath.Join("sys/class/block", name, p, "dev"), fmt.Sprintf("8:%d\n", minor+i+1))
			os.MkdirAll(filepath.Join(dir, "sys/class/block", name, p, "holders"), 0o755)
		}
	}
	disk("sdb", 16, "sdb1")
	disk("sdc", 32, "sdc1")
	disk("sdd", 48, "sdd1", "sdd2")
	disk("sde", 64, "sde1")
	os.MkdirAll(filepath.Join(dir, "sys/class/block/sde/sde1/holders/dm-0"), 0o755)
	disk("sdf", 80, "sdf1")

	// A lock on sdf held by another process, as proc/locks lists it.
	lock := r.DeviceLockPath("8:80")
	mkfile(t, dir, strings.TrimPrefix(lock, dir+"/"), "4242\n")
	fi, err := os.Stat(lock)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	id := fmt.Sprintf("%02x:%02x:%d", uint64(st.Dev)>>8&0xfff, uint64(st.Dev)&0xff|uint64(st.Dev)>>12&^0xff, st.Ino)
	mkfile(t, dir, "proc/locks", fmt.Sprintf("1: POSIX  ADVISORY  WRITE 99 00:00:1 0 EOF\n2: -> FLOCK  ADVISORY  WRITE 77 %s 0 EOF\n3: FLOCK  ADVISORY  WRITE 4242 %s 0 EOF\n", id, id))

	for _, tc := range []struct{ name, majmin, want string }{
		{"sdb", "8:16", "sdb1 mounted /mnt/data /dev/sdb1"},
		{"sdb1", "8:17", "sdb1 mounted /mnt/data /dev/sdb1"},
		{"sdc", "8:32", "sdc1 mounted /mnt/my disk /dev/sdc1"},
		{"sdd", "8:48", "sdd2 swap  /dev/sdd2"},
		{"sde", "8:64", "sde1 held dm-0 "},
		{"sdf", "8:80", "sdf locked 4242 "},
		{"sdf1", "8:81", ""},
	} {
		var got []string
		for _, u := range r.LiveUses(tc.name, tc.majmin, "/nonexistent/"+tc.name) {
			s := u.Device + " " + string(u.Kind) + " " + u.Point + u.PID + " " + u.Source
			if u.Holder != nil {
				s = u.Device + " " + string(u.Kind) + " " + u.Holder.Name + " " + u.Source
			}
			got = append(got, s)
		}
		if strings.Join(got, "; ") != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if u := r.LiveUses("", "", filepath.Join(dir, "proc/swaps")); len(u) != 0 {
		t.Errorf("a regular file opened exclusively: %+v", u)
	}
}

func TestFlockHolder(t *testing.T) {
	locks := "1: FLOCK  ADVISORY  WRITE 100 fd:01:12 0 EOF\n2: FLOCK  ADVISORY  WRITE 200 00:1a:34 0 EOF\n"
	if pid, ok := flockHolder(locks, 0x1a, 34, 1); !ok || pid != "200" {
		t.Errorf("held: %q %v", pid, ok)
	}
	if _, ok := flockHolder(locks, 0x1a, 34, 200); ok {
		t.Error("own lock counted")
	}
	if _, ok := flockHolder(locks, 0x1a, 35, 1); ok {
		t.Error("another inode counted")
	}
}
