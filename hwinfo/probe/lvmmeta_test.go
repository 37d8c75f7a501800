package probe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
)

// The PVs' first 12 KiB as a 6.1 guest's lvm2 2.03.16 wrote them (vgcreate
// fast on nvme0n1p2 and sdd, then lvcreate scratch, 100 MiB, and vm, 300 MiB: seqno 3), from
// hwinfo's guest-stacks fixture tree.
func readPVFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/guest-stacks/dev/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadPVReal(t *testing.T) {
	for name, uuid := range map[string]string{
		"sdd":       "aX7Ire-gIA6-tY91-nMFP-ZuZC-f3TY-xydRM2",
		"nvme0n1p2": "hCLXCK-g4ZL-E1ZN-D4BD-L3Tt-hDz9-7kUM2P",
	} {
		b := readPVFixture(t, name)
		pv, err := ReadPV(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if pv.UUID != uuid {
			t.Errorf("%s: uuid %q, want %q", name, pv.UUID, uuid)
		}
		md, err := ParseVGMetadata(pv.Metadata)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if md.Name != "fast" || md.ID != "kkdLCm-V2IM-ZFby-cIZ6-wvZ7-HAQl-WcmU9h" || md.SeqNo != 3 || md.ExtentSectors != 8192 {
			t.Errorf("%s: vg %+v", name, md)
		}
		if len(md.PVs) != 2 || md.PVs[0].Key != "pv0" || md.PVs[0].PECount != 111 || md.PVs[1].PECount != 127 || md.PVs[1].DeviceHint != "/dev/sdd" {
			t.Errorf("%s: pvs %+v", name, md.PVs)
		}
		if len(md.LVs) != 2 || md.LVs[0].Name != "scratch" || !md.LVs[0].Visible() || len(md.LVs[1].Segments) != 1 {
			t.Fatalf("%s: lvs %+v", name, md.LVs)
		}
		seg := md.LVs[1].Segments[0]
		if seg.Type != "striped" || seg.StripeCount != 1 || seg.ExtentCount != 75 || len(seg.Stripes) != 1 || seg.Stripes[0] != (VGArea{PV: "pv0", Start: 25}) {
			t.Errorf("%s: vm's segment %+v", name, seg)
		}
	}
}

// TestReadPVRing: the newest text may wrap around the end of the metadata
// area and continue right after its header; the checksum covers both parts.
func TestReadPVRing(t *testing.T) {
	b := readPVFixture(t, "sdd")
	pv, err := ReadPV(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	text := append(append([]byte(nil), pv.Metadata...), 0)
	const start, area = 4096, 8192 // a small area of our own at the real header's place
	dev := make([]byte, start+area)
	copy(dev, b[:start])
	hdr := dev[start : start+lvmMDAHeaderSize]
	copy(hdr, b[start:start+lvmMDAHeaderSize])
	binary.LittleEndian.PutUint64(hdr[32:], area)
	off := uint64(area - 1000) // 1000 bytes before the end, the rest after the header
	binary.LittleEndian.PutUint64(hdr[40:], off)
	binary.LittleEndian.PutUint64(hdr[48:], uint64(len(text)))
	binary.LittleEndian.PutUint32(hdr[56:], lvmCRC(text))
	binary.LittleEndian.PutUint32(hdr[0:], lvmCRC(hdr[4:]))
	copy(dev[start+off:], text[:1000])
	copy(dev[start+lvmMDAHeaderSize:], text[1000:])
	// The PV header's metadata area is 4096 + 1020 KiB long; ours is
	// shorter but at the same place, so the label stays as it is.
	got, err := ReadPV(bytes.NewReader(dev), int64(len(dev)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Metadata, pv.Metadata) {
		t.Errorf("wrapped text differs:\n%s", got.Metadata)
	}
	dev[start+lvmMDAHeaderSize+5] ^= 1
	if _, err := ReadPV(bytes.NewReader(dev), int64(len(dev))); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("corrupt text: err %v, want a checksum mismatch", err)
	}
}

func TestReadPVNotPV(t *testing.T) {
	b := readPVFixture(t, "sdd")
	if _, err := ReadPV(bytes.NewReader(make([]byte, 8192)), 8192); !errors.Is(err, ErrNoPV) {
		t.Errorf("zeros: %v", err)
	}
	bad := append([]byte(nil), b...)
	bad[4096+10] ^= 1 // the metadata area header's magic
	if _, err := ReadPV(bytes.NewReader(bad), int64(len(bad))); err == nil {
		t.Error("a bad metadata area header was accepted")
	}
	// A PV whose metadata area lies beyond what can be read has a label
	// but no text.
	pv, err := ReadPV(bytes.NewReader(b[:1024]), 1024)
	if err != nil || pv.Metadata != nil || pv.UUID == "" {
		t.Errorf("label only: %+v, %v", pv, err)
	}
}

func TestParseVGMetadataBad(t *testing.T) {
	for _, text := range []string{
		"", "vg {", "vg { id = }", `vg { id = "x }`, "vg { a = [1, { ] }", "= 1", "vg { extent_size = 1 ",
		strings.Repeat("a {", 40) + strings.Repeat("}", 40),
		"vg { seqno = 1 }", // no extent_size: not a VG
	} {
		if _, err := ParseVGMetadata([]byte(text)); !errors.Is(err, ErrBadMetadata) {
			t.Errorf("%q: err %v, want ErrBadMetadata", text, err)
		}
	}
}

func FuzzParseVGMetadata(f *testing.F) {
	b, err := os.ReadFile("../testdata/guest-stacks/dev/sdd")
	if err != nil {
		f.Fatal(err)
	}
	pv, err := ReadPV(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pv.Metadata)
	f.Fuzz(func(t *testing.T, text []byte) {
		md, err := ParseVGMetadata(text)
		if err == nil && md == nil {
			t.Fatal("nil metadata without an error")
		}
	})
}
