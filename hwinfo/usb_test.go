package hwinfo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestUSBSerialWithoutUdev: Linux reads no VPD pages from USB storage, so
// a USB disk's serial is only in its USB device's serial string (what udev's
// usb_id gives as ID_SERIAL_SHORT). Without udev, diskprep reads it there:
// a guest's USB disk had a serial with udev and none without.
func TestUSBSerialWithoutUdev(t *testing.T) {
	root := copyTree(t, "testdata/qemu-guest")
	usb := "sys/devices/pci0000:00/0000:00:0a.0/usb2/2-1"
	scsi := usb + "/2-1:1.0/host7/target7:0:0/7:0:0:0"
	bd := scsi + "/block/sde"
	for rel, v := range map[string]string{
		usb + "/idVendor": "46f4\n", usb + "/idProduct": "0001\n",
		usb + "/manufacturer": "QEMU\n", usb + "/product": "QEMU USB HARDDRIVE\n",
		usb + "/serial":  "4C530001234567\n",
		scsi + "/vendor": "SanDisk \n", scsi + "/model": "Ultra Fit       \n", scsi + "/rev": "2.5+\n",
		bd + "/dev": "8:64\n", bd + "/size": "2097152\n", bd + "/removable": "0\n", bd + "/ro": "0\n",
		bd + "/queue/logical_block_size": "512\n", bd + "/queue/physical_block_size": "512\n",
		bd + "/queue/minimum_io_size": "512\n", bd + "/queue/optimal_io_size": "0\n",
		bd + "/queue/rotational": "1\n",
	} {
		mkfile(t, root, rel, v)
	}
	for link, target := range map[string]string{
		"sys/block/sde":       "../devices/pci0000:00/0000:00:0a.0/usb2/2-1/2-1:1.0/host7/target7:0:0/7:0:0:0/block/sde",
		"sys/class/block/sde": "../../devices/pci0000:00/0000:00:0a.0/usb2/2-1/2-1:1.0/host7/target7:0:0/7:0:0:0/block/sde",
		bd + "/device":        "../../../7:0:0:0",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	read := func() *Disk {
		t.Helper()
		h, err := Read(context.Background(), Options{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Warnings) > 0 {
			t.Errorf("warnings: %q", h.Warnings)
		}
		d, _ := h.Device("sde")
		if d == nil {
			t.Fatal("no sde")
		}
		return d
	}
	if d := read(); d.Transport != "usb" || d.Serial != "4C530001234567" || d.Vendor != "SanDisk" || d.Model != "Ultra Fit" {
		t.Errorf("sde without udev = %+v, want usb SanDisk Ultra Fit, serial 4C530001234567", d)
	}
	// A USB device without a serial string: none, not another device's.
	if err := os.Remove(filepath.Join(root, usb, "serial")); err != nil {
		t.Fatal(err)
	}
	if d := read(); d.Serial != "" {
		t.Errorf("sde without a USB serial string: serial %q, want none", d.Serial)
	}
}
