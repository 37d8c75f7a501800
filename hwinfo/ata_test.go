package hwinfo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// identifyWords builds IDENTIFY DEVICE data word by word, as a disk sends
// it: strings with the first character of each pair in bits 15:8.
type identifyWords [256]uint16

func (w *identifyWords) str(first, n int, s string) {
	b := []byte(s)
	for len(b) < 2*n {
		b = append(b, ' ')
	}
	for i := 0; i < n; i++ {
		w[first+i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
}

// page wraps the words into VPD page 0x89 (little-endian words from byte 60),
// with a valid integrity word when sign is set.
func (w *identifyWords) page(sign bool) []byte {
	if sign {
		w[255] = 0xa5
		var sum byte
		for i, v := range w {
			if i == 255 {
				sum += byte(v)
				continue
			}
			sum += byte(v) + byte(v>>8)
		}
		w[255] |= uint16(-sum) << 8
	}
	b := make([]byte, 60, 572)
	b[1], b[2], b[3] = 0x89, 0x02, 0x38
	copy(b[8:], "linux   libata          ")
	b[56] = 0xec
	for _, v := range w {
		b = append(b, byte(v), byte(v>>8))
	}
	return b
}

func TestParseVPD89(t *testing.T) {
	var w identifyWords
	w.str(10, 10, "        Z3GKXXXXGS") // serials are often right-aligned
	w.str(23, 4, "MX6OABB0")
	w.str(27, 20, "TOSHIBA DT01ACA300")
	w[87] = 0x4100
	w[108], w[109], w[110], w[111] = 0x5000, 0x039f, 0xe6d0, 0xa1b2
	w[217] = 7200
	want := ataIdentity{Model: "TOSHIBA DT01ACA300", Serial: "Z3GKXXXXGS", Firmware: "MX6OABB0", WWN: "0x5000039fe6d0a1b2"}

	for _, sign := range []bool{false, true} {
		id, words, ok := parseVPD89(w.page(sign))
		if !ok || id != want || words[217] != 7200 {
			t.Errorf("signed=%v: %+v %v, want %+v", sign, id, ok, want)
		}
	}

	// A damaged page (checksum off) is not read.
	bad := w.page(true)
	bad[60+2*27]++
	if _, _, ok := parseVPD89(bad); ok {
		t.Error("page with a wrong checksum accepted")
	}
	// No WWN when word 87 does not say there is one.
	w2 := w
	w2[87] = 0x4000
	w2[255] = 0
	if id, _, ok := parseVPD89(w2.page(false)); !ok || id.WWN != "" {
		t.Errorf("WWN without word 87 bit 8: %+v", id)
	}
	// NUL padding, as some devices have, before the spaces of the rest.
	w3 := w
	w3[255] = 0
	for i := 27 + 9; i < 40; i++ {
		w3[i] = 0
	}
	if id, _, _ := parseVPD89(w3.page(false)); id.Model != "TOSHIBA DT01ACA300" {
		t.Errorf("NUL-padded model %q", id.Model)
	}

	good := w.page(false)
	for name, b := range map[string][]byte{
		"short":          good[:571],
		"other page":     append([]byte{0, 0x83}, good[2:]...),
		"short length":   append([]byte{0, 0x89, 0x01, 0x00}, good[4:]...),
		"other command":  append(append(append([]byte{}, good[:56]...), 0x25), good[57:]...),
		"empty":          nil,
		"header no data": good[:60],
	} {
		if _, _, ok := parseVPD89(b); ok {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestATAFromWWID(t *testing.T) {
	cases := []struct {
		wwid, model, serial string
		ok                  bool
	}{
		{"t10.ATA     Samsung SSD 870 EVO 1TB                 S6PUNX0T123456A", "Samsung SSD 870 EVO 1TB", "S6PUNX0T123456A", true},
		{"t10.ATA     QEMU HARDDISK                           QM00001", "QEMU HARDDISK", "QM00001", true},
		{"t10.ATA     QEMU HARDDISK", "QEMU HARDDISK", "", true}, // blank serial, trimmed
		{"naa.5000039fe6d0a1b3", "", "", false},
		{"t10.SEAGATE ST4000NM0035", "", "", false}, // not a SAT designator
		{"t10.ATA     ", "", "", false},
		{"", "", "", false},
	}
	for _, tc := range cases {
		m, s, ok := ataFromWWID(tc.wwid)
		if m != tc.model || s != tc.serial || ok != tc.ok {
			t.Errorf("%q: %q %q %v, want %q %q %v", tc.wwid, m, s, ok, tc.model, tc.serial, tc.ok)
		}
	}
}

// TestATAModelWithoutUdev: in a guest without udev, a SATA disk's model is
// the whole ATA model from VPD page 0x89, or from the wwid when the kernel
// has no such page, not the 16 characters of sysfs device/model.
func TestATAModelWithoutUdev(t *testing.T) {
	h, err := Read(context.Background(), Options{Root: "testdata/qemu-guest"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2]string{
		"sda": {"WDC WD40EFRX-68N32N0", "0x50014ee2b1234567"}, // WWN from wwid naa.
		"sdb": {"Samsung SSD 870 EVO 1TB", ""},
	} {
		d, _ := h.Device(name)
		if d == nil || d.Model != want[0] || d.WWN != want[1] || d.Vendor != "ATA" || d.Firmware != "2.5+" {
			t.Errorf("%s = %+v, want model %q, WWN %q", name, d, want[0], want[1])
		}
	}

	// A kernel older than 5.19 exports no vpd_pg89: the T10 designator of
	// the wwid still has the model; a disk with a WWN keeps what sysfs has.
	root := copyTree(t, "testdata/qemu-guest")
	for _, dev := range []string{"ata1/host0/target0:0:0/0:0:0:0", "ata2/host1/target1:0:0/1:0:0:0"} {
		if err := os.Remove(filepath.Join(root, "sys/devices/pci0000:00/0000:00:1f.2", dev, "vpd_pg89")); err != nil {
			t.Fatal(err)
		}
	}
	h, err = Read(context.Background(), Options{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := h.Device("sdb"); d == nil || d.Model != "Samsung SSD 870 EVO 1TB" || d.Serial != "S6PUNX0T123456A" {
		t.Errorf("sdb from wwid = %+v", d)
	}
	if d, _ := h.Device("sda"); d == nil || d.Model != "WDC WD40EFRX-68N" || d.WWN != "0x50014ee2b1234567" {
		t.Errorf("sda without vpd_pg89 = %+v", d)
	}
}

// TestRotationRate: a disk is an HDD when it reports a rotation rate, an
// SSD when it reports none or the kernel was told it does not rotate, and
// of unknown media otherwise, not an HDD because the kernel's rotational
// flag defaults to 1.
func TestRotationRate(t *testing.T) {
	check := func(h *Host, name, media string, rpm uint32) {
		t.Helper()
		d, _ := h.Device(name)
		if d == nil || d.Media != media || d.RotationRPM != rpm {
			t.Errorf("%s = %+v, want media %q, %d rpm", name, d, media, rpm)
		}
	}
	h, err := Read(context.Background(), Options{Root: "testdata/qemu-guest"})
	if err != nil {
		t.Fatal(err)
	}
	check(h, "sda", "hdd", 7200) // SATA, VPD page 0xb1 from libata
	check(h, "sdb", "ssd", 0)    // rate 1: non-rotating
	check(h, "sdc", "", 0)       // SCSI, page 0xb1 says 0: not reported
	check(h, "sdd", "hdd", 7200) // SCSI, page 0xb1
	check(h, "vda", "", 0)       // virtio-blk: nothing to say
	check(h, "vdb", "", 0)

	// Without page 0xb1, word 217 of the IDENTIFY data in page 0x89; with
	// neither, nothing.
	root := copyTree(t, "testdata/qemu-guest")
	ata1 := filepath.Join(root, "sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0")
	if err := os.Remove(filepath.Join(ata1, "vpd_pgb1")); err != nil {
		t.Fatal(err)
	}
	if h, err = Read(context.Background(), Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	check(h, "sda", "hdd", 7200)
	if err := os.Remove(filepath.Join(ata1, "vpd_pg89")); err != nil {
		t.Fatal(err)
	}
	if h, err = Read(context.Background(), Options{Root: root}); err != nil {
		t.Fatal(err)
	}
	check(h, "sda", "", 0)

	// udev's ata_id says 0 for a non-rotating disk, the rate otherwise.
	r := &reader{root: t.TempDir()}
	for v, want := range map[string]uint16{"0": rotationNone, "5400": 5400, "1000": rotationNotReported, "x": rotationNotReported} {
		got := r.rotationRate(&Disk{Transport: "sata"}, "/sys/block/sdx", map[string]string{"ID_ATA_ROTATION_RATE_RPM": v})
		if got != want {
			t.Errorf("ID_ATA_ROTATION_RATE_RPM=%s: %d, want %d", v, got, want)
		}
	}
	for _, v := range []uint16{0, 2, 0x400, 0xffff} {
		if validRotation(v) != rotationNotReported {
			t.Errorf("reserved rate %#x taken as %d", v, validRotation(v))
		}
	}
}

// TestRealGuestPages decodes the pages a 6.1 kernel gave in a QEMU guest
// (testdata/vpd/README says which disk each is).
func TestRealGuestPages(t *testing.T) {
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata/vpd", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for file, want := range map[string]ataIdentity{
		"sata-hdd.pg89": {Model: "WDC WD40EFRX-68N32N0", Serial: "WD-WCC7K1234567", Firmware: "2.5+", WWN: "0x50014ee2b1234567"},
		"sata-ssd.pg89": {Model: "Samsung SSD 870 EVO 1TB", Serial: "S6PUNX0T123456A", Firmware: "2.5+"},
	} {
		if id, _, ok := parseVPD89(read(file)); !ok || id != want {
			t.Errorf("%s: %+v %v, want %+v", file, id, ok, want)
		}
	}
	r := &reader{root: "testdata/vpd"}
	for file, want := range map[string]uint16{
		"sata-hdd.pgb1": 7200, "sata-ssd.pgb1": rotationNone, "scsi-7200.pgb1": 7200, "scsi-norate.pgb1": rotationNotReported,
	} {
		if got := vpdRotationRate(read(file)); got != want {
			t.Errorf("%s: rate %d, want %d", file, got, want)
		}
	}
	for file, want := range map[string]string{"sata-hdd.pg80": "WD-WCC7K1234567", "scsi.pg80": "ZC1A2B3C"} {
		if got := r.vpdSerial("/" + file); got != want {
			t.Errorf("%s: serial %q, want %q", file, got, want)
		}
	}
	if m, s, ok := ataFromWWID(strings.TrimSpace(string(read("sata-ssd.wwid")))); !ok || m != "Samsung SSD 870 EVO 1TB" || s != "S6PUNX0T123456A" {
		t.Errorf("sata-ssd.wwid: %q %q %v", m, s, ok)
	}
}
