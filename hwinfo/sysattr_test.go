package hwinfo

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// qemuSCSIWWID is the wwid attribute of the qemu-guest tree's virtio-scsi
// disk sdc, which has no designator the kernel can use.
const qemuSCSIWWID = "sys/devices/pci0000:00/0000:00:03.0/virtio1/host2/target2:0:0/2:0:0:0/wwid"

// failReads makes reads of the files under root named by rel paths fail
// with the given errno, the way a read(2) of a sysfs attribute does.
func failReads(t *testing.T, root string, errs map[string]syscall.Errno) func(string) ([]byte, error) {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	// Compared as resolved paths: the reader goes through sys/block links.
	failing := map[string]syscall.Errno{}
	for rel, errno := range errs {
		p, err := filepath.EvalSymlinks(filepath.Join(abs, rel))
		if err != nil {
			t.Fatal(err)
		}
		failing[p] = errno
	}
	return func(name string) ([]byte, error) {
		if p, err := filepath.EvalSymlinks(name); err == nil {
			if errno, ok := failing[p]; ok {
				return nil, &fs.PathError{Op: "read", Path: name, Err: errno}
			}
		}
		return os.ReadFile(name)
	}
}

// TestSCSIWithoutIdentifier: the kernel answers a SCSI disk's wwid with
// EINVAL when VPD page 0x83 holds no designator it can use. That is a disk
// without a WWN, not a failure to warn about on every inventory.
func TestSCSIWithoutIdentifier(t *testing.T) {
	root := "testdata/qemu-guest"
	for _, errno := range []syscall.Errno{syscall.EINVAL, syscall.ENXIO, syscall.ENODATA, syscall.EOPNOTSUPP, enotsupp} {
		t.Run(errno.Error(), func(t *testing.T) {
			fail := failReads(t, root, map[string]syscall.Errno{qemuSCSIWWID: errno})
			h, err := Read(context.Background(), Options{Root: root, ReadFile: fail})
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Warnings) > 0 {
				t.Errorf("warnings: %q", h.Warnings)
			}
			d, _ := h.Device("sdc")
			if d == nil || d.WWN != "" || d.Serial != "ZC1A2B3C" {
				t.Errorf("sdc = %+v, want no WWN and the serial of VPD page 0x80", d)
			}
		})
	}
	// A read that fails for another reason is still said.
	fail := failReads(t, root, map[string]syscall.Errno{qemuSCSIWWID: syscall.EIO})
	h, err := Read(context.Background(), Options{Root: root, ReadFile: fail})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("read %s: %v", filepath.Join(mustAbs(t, root), "sys/block/sdc/device/wwid"), syscall.EIO)
	if strings.Join(h.Warnings, "\n") != want {
		t.Errorf("warnings %q, want just %q", h.Warnings, want)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
