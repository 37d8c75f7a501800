package hwinfo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// TestLUKSVolumes: inventory reads each LUKS header cryptsetup wrote (the
// first MiB of the device, as a fixture captures it) and says whether the
// volume is open: a LUKS2 partition opened as luks-data with ext4 mounted
// from it, and a whole disk with a closed LUKS1 volume.
func TestLUKSVolumes(t *testing.T) {
	root := t.TempDir()
	dev := "/sys/devices/pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0/block/sdb"
	dev2 := "/sys/devices/pci0000:00/0000:00:17.0/ata3/host2/target2:0:0/2:0:0:0/block/sdc"
	files := map[string]string{
		dev + "/dev": "8:16", dev + "/size": "131072", dev + "/sdb1/partition": "1", dev + "/sdb1/start": "2048",
		dev + "/sdb1/size": "65536", dev + "/sdb1/dev": "8:17",
		dev2 + "/dev": "8:32", dev2 + "/size": "65536",
		"/sys/devices/virtual/block/dm-2/dev": "253:2", "/sys/devices/virtual/block/dm-2/dm/name": "luks-data",
		"/sys/devices/virtual/block/dm-2/dm/uuid": "CRYPT-LUKS2-0c1d2e3f-luks-data",
		"/run/udev/data/b8:17":                    "E:ID_FS_TYPE=crypto_LUKS\nE:ID_FS_VERSION=2",
		"/run/udev/data/b8:32":                    "E:ID_FS_TYPE=crypto_LUKS\nE:ID_FS_VERSION=1",
		"/proc/self/mountinfo":                    "31 1 253:2 / /srv rw,relatime - ext4 /dev/mapper/luks-data rw\n",
		"/proc/swaps":                             "Filename Type Size Used Priority\n",
		"/proc/sys/kernel/osrelease":              "6.1.0\n",
	}
	for p, c := range files {
		mkfile(t, root, p, c+"\n")
	}
	for l, target := range map[string]string{
		"/sys/block/sdb":           dev,
		"/sys/block/sdc":           dev2,
		"/sys/block/dm-2":          "/sys/devices/virtual/block/dm-2",
		dev + "/sdb1/holders/dm-2": "/sys/devices/virtual/block/dm-2",
	} {
		mklink(t, root, l, target)
	}
	capture := func(img, dst string) {
		b, err := os.ReadFile(img)
		if err != nil {
			t.Fatal(err)
		}
		mkfile(t, root, dst, string(b[:1<<20]))
	}
	capture(testenv.LUKSFormat(t, 32<<20, "--type", "luks2", "--pbkdf", "pbkdf2", "--sector-size", "4096", "--key-size", "512"), "/dev/sdb1")
	capture(testenv.LUKSFormat(t, 32<<20, "--type", "luks1", "--cipher", "aes-cbc-essiv:sha256", "--key-size", "256"), "/dev/sdc")

	uuidOf := func(dev string) string {
		b, err := os.ReadFile(filepath.Join(root, dev))
		if err != nil {
			t.Fatal(err)
		}
		return string(bytes.TrimRight(b[168:208], "\x00"))
	}
	u2, u1 := uuidOf("/dev/sdb1"), uuidOf("/dev/sdc")
	// crypttab unlocks both: the open one says nothing, the closed one
	// one line naming its missing key file and the unit to look at.
	mkfile(t, root, "/etc/crypttab", "# comment\nluks-data UUID="+u2+" /etc/keys/data.key luks\nold-data UUID="+u1+" /etc/keys/old.key luks,nofail\n")
	mkfile(t, root, "/etc/keys/data.key", "k")

	h, err := Read(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Disks) != 2 || len(h.Disks[0].Partitions) != 1 {
		t.Fatalf("disks: %+v", h.Disks)
	}
	assertSameJSON(t, h.Disks[0].Partitions[0].Crypt, &Crypt{Version: 2, Cipher: "aes-xts-plain64", KeyBits: 512, SectorBytes: 4096, Open: true, Mapper: "/dev/mapper/luks-data", UUID: u2})
	assertSameJSON(t, h.Disks[0].Partitions[0].Holders[0].Mounts, []Mount{{Point: "/srv", FSType: "ext4", Options: "rw,relatime", Source: "/dev/mapper/luks-data"}})
	assertSameJSON(t, h.Disks[1].Crypt, &Crypt{Version: 1, Cipher: "aes-cbc-essiv:sha256", KeyBits: 256, SectorBytes: 512, UUID: u1})
	for _, w := range h.Warnings {
		if strings.HasPrefix(w, "/dev/sd") || strings.Contains(w, "LUKS ciphers") {
			t.Errorf("warning: %s", w)
		}
	}
	want := "LUKS volume old-data (crypttab) is not open: its key file /etc/keys/old.key is missing (systemctl status systemd-cryptsetup@old\\x2ddata.service)"
	if got := warningsWith(h, "(crypttab)"); len(got) != 1 || got[0] != want {
		t.Errorf("crypttab warnings %q, want [%q]", got, want)
	}

	// Unlocked by a passphrase at boot (key file none): nobody gave it.
	mkfile(t, root, "/etc/crypttab", "old-data UUID="+u1+" none luks,nofail\n")
	if h, err = Read(context.Background(), Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	want = "LUKS volume old-data (crypttab) is not open: its passphrase was not given at boot (systemctl start asks it again) (systemctl status systemd-cryptsetup@old\\x2ddata.service)"
	if got := warningsWith(h, "(crypttab)"); len(got) != 1 || got[0] != want {
		t.Errorf("crypttab warnings %q, want [%q]", got, want)
	}
}

// A LUKS device that cannot be opened (a socket stands in for a device an
// unprivileged run may not open) leaves its Crypt unknown, with one
// warning for all of them.
func TestLUKSNotOpenable(t *testing.T) {
	root := t.TempDir()
	dev := "/sys/devices/pci0000:00/0000:00:17.0/ata2/host1/target1:0:0/1:0:0:0/block/sd"
	for _, n := range []string{"b", "c"} {
		d := dev + n
		mkfile(t, root, d+"/dev", "8:"+map[string]string{"b": "16", "c": "32"}[n]+"\n")
		mkfile(t, root, d+"/size", "65536\n")
		mkfile(t, root, "/run/udev/data/b8:"+map[string]string{"b": "16", "c": "32"}[n], "E:ID_FS_TYPE=crypto_LUKS\n")
		mklink(t, root, "/sys/block/sd"+n, d)
		unopenable(t, filepath.Join(root, "dev", "sd"+n))
	}
	h, err := Read(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	warned := warningsWith(h, "LUKS ciphers")
	if len(warned) != 1 || !strings.Contains(warned[0], "run as root") {
		t.Errorf("warnings %q, want one about the LUKS headers", h.Warnings)
	}
	for _, d := range h.Disks {
		if d.FSType != "crypto_LUKS" || d.Crypt != nil {
			t.Errorf("%s: %s, crypt %+v; want crypto_LUKS, unknown", d.Name, d.FSType, d.Crypt)
		}
	}
	if len(h.Disks) != 2 {
		t.Errorf("disks: %+v", h.Disks)
	}
}
