package planfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/diskprep/diskprep/disk"
)

func TestLoadExample(t *testing.T) {
	p, err := Load("testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Plan{
		Path:    "testdata/example.yaml",
		Version: 1,
		Disks: []DiskPlan{
			{
				Line: 40,
				Select: Selector{Line: 41, Serial: "X3G7ABCDE", Model: "TOSHIBA DT01ACA300", Size: "2.5T-3T",
					SizeMin: 5 << 39, SizeMax: 3 << 40},
				Partitions: []disk.PartSpec{
					{SizeBytes: 100 << 30, FS: "xfs", Label: "data", Mount: "/data", MountOpts: "noatime",
						MkfsOpts: []string{"-m", "reflink=1"}, Persist: true},
					{SizeBytes: 0, FS: "ext4", Label: "scratch", Mount: "/scratch", Persist: true},
				},
			},
			{
				Line:   59,
				Select: Selector{Line: 59, ByID: "nvme-Samsung_SSD_980_PRO_1TB_S5GXNF0R123456A"},
				Partitions: []disk.PartSpec{
					{FS: "xfs", Label: "fast", Mount: "/fast", MountOpts: "noatime", Persist: true},
				},
			},
		},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("got  %+v\nwant %+v", p, want)
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, ErrPlan) || !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, disk.ErrUsage) {
		t.Fatalf("got %v, want ErrPlan, disk.ErrUsage and ErrNotExist", err)
	}
}

const head = "version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions:\n"

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"empty", "", "plan.yaml: empty plan"},
		{"comments only", "# nothing\n", "plan.yaml: empty plan"},
		{"syntax", "version: 1\ndisks:\n  - select: {path: /dev/sdb\n", "plan.yaml:3: "},
		{"syntax block", "version: 1\ndisks:\n  - a\n  b: c\n", "plan.yaml:3: did not find expected '-' indicator"},
		{"syntax scanner", "version: 1\n  disks: 2\n", "plan.yaml:2: mapping values are not allowed"},
		{"unknown anchor", "version: 1\ndisks: *nope\n", "plan.yaml: unknown anchor 'nope' referenced"},
		{"tab indent", "version: 1\ndisks:\n\t- select: {}\n", "plan.yaml:3: "},
		{"not a mapping", "- a\n- b\n", "plan.yaml:1: plan: want a mapping"},
		{"unknown top key", "version: 1\ndisk:\n  - {}\n", `plan.yaml:2: plan: unknown key "disk" (known: version, disks, raid, lvm, cache)`},
		{"missing version", "disks: []\n", `plan.yaml:1: missing "version: 1"`},
		{"version 2", "version: 2\ndisks: []\n", "plan.yaml:1: version: unsupported version 2"},
		{"version string", "version: one\ndisks: []\n", `plan.yaml:1: version: want 1, got "one"`},
		{"missing disks", "version: 1\n", `plan.yaml:1: missing "disks"`},
		{"disks not a list", "version: 1\ndisks: {a: b}\n", "plan.yaml:2: disks: want a list, got a mapping"},
		{"disks empty", "version: 1\ndisks: []\n", "plan.yaml:2: disks: empty list"},
		{"second document", "version: 1\ndisks: []\n---\nversion: 1\n", "plan.yaml:3: a second YAML document"},
		{"unknown disk key", "version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    wype: true\n", `plan.yaml:4: disks[0]: unknown key "wype"`},
		{"missing select", "version: 1\ndisks:\n  - partitions: []\n", `plan.yaml:3: disks[0]: missing "select"`},
		{"empty select", "version: 1\ndisks:\n  - select: {}\n    partitions: [{size: rest, fs: xfs}]\n", "plan.yaml:3: disks[0].select: empty"},
		{"unknown selector key", "version: 1\ndisks:\n  - select:\n      paht: /dev/sdb\n", `plan.yaml:4: disks[0].select: unknown key "paht"`},
		{"path not dev", "version: 1\ndisks:\n  - select: {path: sdb}\n", `plan.yaml:3: disks[0].select.path: "sdb" is not a device path`},
		{"size range reversed", "version: 1\ndisks:\n  - select:\n      size: 3T-2T\n", "plan.yaml:4: disks[0].select.size: size range"},
		{"size range bad", "version: 1\ndisks:\n  - select:\n      size: 3X-4T\n", "plan.yaml:4: disks[0].select.size: size \"3X\""},
		{"by_id with dirs", "version: 1\ndisks:\n  - select: {by_id: /dev/disk/by-uuid/x}\n", "plan.yaml:3: disks[0].select.by_id"},
		{"wipe yes", "version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    wipe: yes\n", `plan.yaml:4: disks[0].wipe: want true or false, got "yes"`},
		{"missing partitions", "version: 1\ndisks:\n  - select: {path: /dev/sdb}\n", `plan.yaml:3: disks[0]: missing "partitions"`},
		{"empty partitions", head[:len(head)-1] + " []\n", "plan.yaml:4: disks[0].partitions: empty list"},
		{"unknown partition key", head + "      - size: rest\n        fs: xfs\n        siez: 1G\n", `plan.yaml:7: disks[0].partitions[0]: unknown key "siez" (known: size, fs, label`},
		{"duplicate key", head + "      - size: rest\n        fs: xfs\n        fs: ext4\n", `plan.yaml:7: disks[0].partitions[0]: key "fs" given twice`},
		{"missing size", head + "      - fs: xfs\n", `plan.yaml:5: disks[0].partitions[0]: missing "size"`},
		{"rest not last", head + "      - {size: rest, fs: xfs}\n      - {size: 1G, fs: xfs}\n", `plan.yaml:5: disks[0].partitions[0].size: "rest" is allowed only for the last`},
		{"bad size unit", head + "      - {size: 10X, fs: xfs}\n", `plan.yaml:5: disks[0].partitions[0].size: size "10X": unknown unit`},
		{"negative size", head + "      - {size: -1G, fs: xfs}\n", `plan.yaml:5: disks[0].partitions[0].size: size "-1G"`},
		{"zero size", head + "      - {size: 0, fs: xfs}\n", "plan.yaml:5: disks[0].partitions[0].size: must be more than 0"},
		{"size is a list", head + "      - {size: [1G], fs: xfs}\n", "plan.yaml:5: disks[0].partitions[0].size: want a single value, got a list"},
		{"missing fs", head + "      - {size: rest}\n", `plan.yaml:5: disks[0].partitions[0]: missing "fs"`},
		{"fs btrfs", head + "      - size: rest\n        fs: btrfs\n", `plan.yaml:6: disks[0].partitions[0].fs: "btrfs": want xfs, ext4 or swap`},
		{"xfs label too long", head + "      - {size: rest, fs: xfs, label: abcdefghijklm}\n", "plan.yaml:5: disks[0].partitions[0].label: label \"abcdefghijklm\" is 13 bytes, longer than the 12 xfs allows"},
		{"ext4 label too long", head + "      - {size: rest, fs: ext4, label: abcdefghijklmnopq}\n", "longer than the 16 ext4 allows"},
		{"label with #", head + "      - {size: rest, fs: ext4, label: \"a#b\"}\n", `plan.yaml:5: disks[0].partitions[0].label: label "a#b": '#' is not allowed: use letters, digits, '-', '_' or '.'`},
		{"label control char", head + "      - {size: rest, fs: ext4, label: \"a\\tb\"}\n", "plan.yaml:5: disks[0].partitions[0].label: control characters"},
		{"relative mount", head + "      - {size: rest, fs: xfs, mount: data}\n", `plan.yaml:5: disks[0].partitions[0].mount: "data": want an absolute path`},
		{"options without mount", head + "      - {size: rest, fs: xfs, options: noatime}\n", `plan.yaml:5: disks[0].partitions[0].options: mount options need "mount"`},
		{"options with blanks", head + "      - {size: rest, fs: xfs, mount: /d, options: \"noatime, nodev\"}\n", "cannot be written in an fstab line"},
		{"options bind", head + "      - {size: rest, fs: xfs, mount: /d, options: \"noatime,bind\"}\n", `plan.yaml:5: disks[0].partitions[0].options: mount option "bind" is refused: it mounts a directory, not the file system`},
		{"options unknown", head + "      - {size: rest, fs: xfs, mount: /d, options: data=journal}\n", `mount option "data=journal" is not one mount(8) or xfs takes`},
		{"mount_over without mount", head + "      - {size: rest, fs: xfs, mount_over: true}\n", `plan.yaml:5: disks[0].partitions[0].mount_over: needs "mount"`},
		{"mount_over not a bool", head + "      - {size: rest, fs: xfs, mount: /d, mount_over: maybe}\n", "mount_over"},
		{"persist without mount", head + "      - size: rest\n        fs: xfs\n        persist: true\n", `plan.yaml:7: disks[0].partitions[0].persist: an fstab line needs "mount"`},
		{"mkfs_options string", head + "      - {size: rest, fs: xfs, mkfs_options: \"-m reflink=1\"}\n", "plan.yaml:5: disks[0].partitions[0].mkfs_options: want a list"},
		{"mkfs_options nested", head + "      - {size: rest, fs: xfs, mkfs_options: [[-m]]}\n", "plan.yaml:5: disks[0].partitions[0].mkfs_options[0]: want a single value"},
		{"alias", "version: 1\nx: &a {path: /dev/sdb}\n", `plan.yaml:2: plan: unknown key "x"`},
		{"alias value", "version: 1\ndisks:\n  - select: &s {path: /dev/sdb}\n    partitions: [{size: rest, fs: xfs}]\n  - select: *s\n", "plan.yaml:5: disks[1].select: aliases are not supported"},
		{"duplicate mount", "version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions: [{size: rest, fs: xfs, mount: /data}]\n" +
			"  - select: {path: /dev/sdc}\n    partitions: [{size: rest, fs: xfs, mount: /data/}]\n", "plan.yaml:5: disks[1]: mount point /data is already used at line 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse("plan.yaml", []byte(c.yaml))
			if err == nil {
				t.Fatalf("no error; plan %+v", p)
			}
			if !errors.Is(err, ErrPlan) || !errors.Is(err, disk.ErrUsage) {
				t.Errorf("%v does not wrap ErrPlan and disk.ErrUsage", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("got  %q\nwant it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	y := "version: 1\ndisks:\n" +
		"  - select: {path: /dev/disk/by-id/wwn-0x5000039ff4c3a1b2, size: \"3000592982016\"}\n" +
		"    wipe: true\n" +
		"    partitions:\n" +
		"      - {size: 1.5G, fs: ext4, label: abcdefghijklmnop, mount: /srv/a/, options: \"noatime,nodev\"}\n" +
		"      - {size: 2048, fs: xfs, label: abcdefghijkl, mkfs_options: [-f, \"-i\", size=512]}\n" +
		"      - {size: REST, fs: xfs, label: , persist: false}\n"
	p, err := Parse("p.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	d := p.Disks[0]
	if !d.Wipe || d.Select.SizeMin != 3000592982016 || d.Select.SizeMax != 3000592982016 || d.Select.Path != "/dev/disk/by-id/wwn-0x5000039ff4c3a1b2" {
		t.Fatalf("disk: %+v", d)
	}
	want := []disk.PartSpec{
		{SizeBytes: 3 << 29, FS: "ext4", Label: "abcdefghijklmnop", Mount: "/srv/a", MountOpts: "noatime,nodev"},
		{SizeBytes: 2048, FS: "xfs", Label: "abcdefghijkl", MkfsOpts: []string{"-f", "-i", "size=512"}},
		{FS: "xfs"},
	}
	if !reflect.DeepEqual(d.Partitions, want) {
		t.Fatalf("partitions:\n got %+v\nwant %+v", d.Partitions, want)
	}
}

func TestLoadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte("#"+strings.Repeat("x", maxFileBytes)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "not a plan file") {
		t.Fatalf("got %v", err)
	}
}

// mount_over reaches the partition's and a stack volume's spec.
func TestParseMountOver(t *testing.T) {
	y := "version: 1\ndisks:\n  - select: {path: /dev/sdb}\n    partitions:\n      - {size: 1G, fs: xfs, mount: /srv/old, mount_over: true}\n      - {size: rest, use: lvm:vg}\n" +
		"lvm:\n  - vg: vg\n    volumes:\n      - {name: a, size: rest, fs: ext4, mount: /srv/full, mount_over: true}\n"
	p, err := Parse("plan.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Disks[0].Partitions[0].MountOver || !p.LVM[0].Volumes[0].Volume.MountOver {
		t.Errorf("mount_over lost: %+v %+v", p.Disks[0].Partitions[0], p.LVM[0].Volumes[0].Volume)
	}
}

// Root does what a plan says to the disks: a plan another user could
// change, or one that is not a regular file, is refused (exit 3) before
// it is read, each with one line saying why.
func TestLoadRefusesPlansOthersCouldChange(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(head+"      - {size: rest, fs: xfs}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := func(what string) {
		t.Helper()
		if _, err := Load(plan); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	refused := func(what, want string) {
		t.Helper()
		_, err := Load(plan)
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a refusal saying %q", what, err, want)
		}
	}
	ok("the caller's own plan")
	os.Chmod(plan, 0o666)
	refused("a plan all may write", "may be written by other users (mode 0666)")
	os.Chmod(plan, 0o644)
	os.Chmod(dir, 0o777)
	refused("in a directory all may write", "which other users may write (mode 0777)")
	os.Chmod(dir, os.ModeSticky|0o777)
	ok("in a sticky directory")
	os.Chmod(dir, 0o755)

	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(fifo); !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("a FIFO: %v", err)
	}

	if os.Geteuid() != 0 {
		t.Log("not root: another user's plan and link are not made")
		return
	}
	os.Chown(plan, 65534, 65534)
	refused("another user's plan", "is owned by uid 65534")
	os.Chown(plan, 0, 0)
	link := filepath.Join(dir, "link.yaml")
	os.Symlink(plan, link)
	os.Lchown(link, 65534, 65534)
	if _, err := Load(link); !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("through another user's link: %v", err)
	}
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o755)
	os.Rename(plan, filepath.Join(other, "plan.yaml"))
	plan = filepath.Join(other, "plan.yaml")
	os.Chown(other, 65534, 65534)
	refused("in another user's directory", "a directory owned by uid 65534")
	// Their directory higher up: they may rename the one the plan is in.
	os.Chown(other, 0, 0)
	inner := filepath.Join(other, "inner")
	os.Mkdir(inner, 0o755)
	os.Rename(plan, filepath.Join(inner, "plan.yaml"))
	plan = filepath.Join(inner, "plan.yaml")
	ok("in root's directories")
	os.Chown(other, 65534, 65534)
	refused("under another user's directory", "is in "+other+", a directory owned by uid 65534")
}
