package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/hwinfo"
)

// A LUKS volume shows its version, cipher, key and sector size, and its
// mapping's use when open, "closed" when not, in the table and Markdown.
func TestInventoryLUKS(t *testing.T) {
	srv := hwinfo.Mount{Point: "/srv", FSType: "ext4", Source: "/dev/mapper/luks-data"}
	h := &hwinfo.Host{Disks: []hwinfo.Disk{
		{Name: "sdb", SizeBytes: 64 << 20, Partitions: []hwinfo.Partition{{
			Name: "sdb1", SizeBytes: 32 << 20, FSType: "crypto_LUKS",
			Mounts:  []hwinfo.Mount{{Point: "/srv", FSType: "ext4", Source: "/dev/mapper/luks-data", Via: "dm-2 (luks-data)"}},
			Holders: []hwinfo.Holder{{Name: "dm-2", Kind: "crypt", DMName: "luks-data", Mounts: []hwinfo.Mount{srv}}},
			Crypt:   &hwinfo.Crypt{Version: 2, Cipher: "aes-xts-plain64", KeyBits: 512, SectorBytes: 4096, Open: true, Mapper: "/dev/mapper/luks-data"},
		}}},
		{Name: "sdc", SizeBytes: 32 << 20, FSType: "crypto_LUKS",
			Crypt: &hwinfo.Crypt{Version: 1, Cipher: "aes-cbc-essiv:sha256", KeyBits: 256, SectorBytes: 512}},
	}}
	for format, want := range map[string][]string{
		"table": {
			"sdb1  32 MiB  LUKS2 aes-xts-plain64  ",
			"  512-bit key, 4096 B sectors, crypt luks-data: /srv\n",
			"LUKS1 aes-cbc-essiv:sha256 256-bit key, 512 B sectors, closed\n",
		},
		"markdown": {
			"sdb1: LUKS2 aes-xts-plain64 512-bit key, 4096 B sectors, crypt luks-data: /srv |",
			"LUKS1 aes-cbc-essiv:sha256 256-bit key, 512 B sectors, closed |",
		},
	} {
		var b bytes.Buffer
		if err := Inventory(&b, format, h); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: no %q in:\n%s", format, w, b.String())
			}
		}
	}
}
