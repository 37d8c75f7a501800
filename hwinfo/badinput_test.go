package hwinfo

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRootMissingOrNotDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{filepath.Join(t.TempDir(), "nope"), file} {
		h, err := Read(context.Background(), Options{Root: root})
		if !errors.Is(err, ErrRoot) || h != nil {
			t.Errorf("root %s: %v, %v; want ErrRoot", root, h, err)
		}
	}
	t.Setenv("GHW_CHROOT", filepath.Join(t.TempDir(), "nope"))
	if _, err := Read(context.Background(), Options{}); !errors.Is(err, ErrRoot) {
		t.Errorf("GHW_CHROOT to a missing dir: %v, want ErrRoot", err)
	}
}

func TestGHWChrootHonoured(t *testing.T) {
	t.Setenv("GHW_CHROOT", "testdata/kvm-virtio")
	h, err := Read(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Hostname != "rocky9-vm" {
		t.Errorf("hostname %q: GHW_CHROOT ignored", h.Hostname)
	}
}

func TestEmptyRoot(t *testing.T) {
	h, err := Read(context.Background(), Options{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := &Host{Schema: Schema}
	warnings := h.Warnings
	h.Warnings = nil
	assertSameJSON(t, h, want)
	for _, sub := range []string{"hostname unknown", "os unknown", "kernel release unknown", "cpu unknown", "memory unknown", "board, system and BIOS unknown", "disks unknown"} {
		if !containsSub(warnings, sub) {
			t.Errorf("no %q warning in %q", sub, warnings)
		}
	}
}

// TestMalformedFiles corrupts one file at a time in a copy of a good tree:
// the field it feeds goes empty, a warning names the file, nothing else
// changes and nothing panics.
func TestMalformedFiles(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(root string) error
		check   func(h *Host) bool
		warning string
	}{
		{"meminfo garbage", write("proc/meminfo", "MemTotal: lots\n"),
			func(h *Host) bool { return h.Memory.TotalBytes == 0 }, "malformed MemTotal"},
		{"meminfo without MemTotal", write("proc/meminfo", "MemFree: 12 kB\n"),
			func(h *Host) bool { return h.Memory.TotalBytes == 0 }, "has no MemTotal"},
		{"cpuinfo garbage", write("proc/cpuinfo", "\x00\x01 not a cpuinfo\n"),
			func(h *Host) bool { return h.CPU == CPU{} }, "no processor entries"},
		{"os-release unreadable", replaceWithDir("etc/os-release"),
			func(h *Host) bool { return h.OS.ID == "" && h.OS.RedHatRelease != "" }, "etc/os-release"},
		{"os-release malformed lines", write("etc/os-release", "ID=rocky\nthis is junk\nVERSION_ID=\"9.4\n"),
			func(h *Host) bool { return h.OS.ID == "rocky" && h.OS.Version == "" }, "2 malformed line(s)"},
		{"kernel missing", remove("proc/sys/kernel/osrelease"),
			func(h *Host) bool { return h.Kernel == "" }, "kernel release unknown"},
		{"hostname falls back to etc", remove("proc/sys/kernel/hostname"),
			func(h *Host) bool { return h.Hostname == "storage-lab" }, ""},
		{"disk size garbage", write("sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda/size", "3TB\n"),
			func(h *Host) bool {
				d, _ := h.Device("sda")
				return d != nil && d.SizeBytes == 0 && d.Model == "TOSHIBA DT01ACA300"
			},
			`malformed number "3TB"`},
		{"sector size garbage", write("sys/devices/pci0000:00/0000:00:17.0/ata1/host0/target0:0:0/0:0:0:0/block/sda/queue/logical_block_size", "-1\n"),
			func(h *Host) bool { d, _ := h.Device("sda"); return d != nil && d.LogicalSectorBytes == 0 }, "malformed number"},
		{"udev record unreadable", replaceWithDir("run/udev/data/b8:0"),
			func(h *Host) bool {
				d, _ := h.Device("sda")
				// sysfs fallbacks take over: the 16-character SCSI model.
				return d != nil && d.Model == "TOSHIBA DT01ACA3" && d.Serial == "" && d.Transport == "sata"
			}, "udev record b8:0"},
		{"mountinfo garbage", write("proc/self/mountinfo", "garbage\n40 1 253:0 / / rw,relatime shared:1 - xfs /dev/mapper/cl-root rw\n"),
			func(h *Host) bool { d, _ := h.Device("nvme0n1"); return d != nil && d.System }, "1 malformed line(s)"},
		{"mountinfo missing", remove("proc/self/mountinfo"),
			func(h *Host) bool {
				d, _ := h.Device("nvme0n1")
				// Swap alone still marks it.
				return d != nil && d.System && len(d.SystemReasons) == 1
			}, "mounts unknown"},
		{"dmi missing", remove("sys/devices/virtual/dmi/id"),
			func(h *Host) bool { return h.Board == Board{} && h.BIOS == BIOS{} && h.Virt.Hypervisor == "none" }, "board, system and BIOS unknown"},
		{"sys/block missing", remove("sys/block"),
			func(h *Host) bool { return len(h.Disks) == 0 && h.Hostname != "" }, "disks unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, "testdata/desktop-nvme-sata")
			if err := tc.mutate(root); err != nil {
				t.Fatal(err)
			}
			h, err := Read(context.Background(), Options{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(h) {
				t.Errorf("unexpected result: %+v", h)
			}
			if tc.warning == "" && len(h.Warnings) != 0 {
				t.Errorf("warnings %q, want none", h.Warnings)
			}
			if tc.warning != "" && !containsSub(h.Warnings, tc.warning) {
				t.Errorf("warnings %q lack %q", h.Warnings, tc.warning)
			}
		})
	}
}

func write(rel, content string) func(string) error {
	return func(root string) error { return os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644) }
}

func remove(rel string) func(string) error {
	return func(root string) error { return os.RemoveAll(filepath.Join(root, rel)) }
}

// replaceWithDir makes a file unreadable as a file, which works as root too.
func replaceWithDir(rel string) func(string) error {
	return func(root string) error {
		p := filepath.Join(root, rel)
		if err := os.Remove(p); err != nil {
			return err
		}
		return os.Mkdir(p, 0o755)
	}
}

func containsSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// copyTree copies a fixture tree, keeping its symlinks as they are.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := fastTempDir(t)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
