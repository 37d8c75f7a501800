package redact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/hwinfo"
)

var t0 = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

func sha256Prefix(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:3])
}

func TestTokenStableAndDistinct(t *testing.T) {
	a := Token(KindSerial, "Z3GKXXXXGS")
	if !regexp.MustCompile(`^serial-[0-9a-f]{6}$`).MatchString(a) {
		t.Fatalf("token %q, want serial-<6 hex>", a)
	}
	if b := Token(KindSerial, "Z3GKXXXXGS"); b != a {
		t.Errorf("same value, tokens %q and %q", a, b)
	}
	if b := Token(KindSerial, "Z3GKYYYYGS"); b == a {
		t.Errorf("different serials share token %q", a)
	}
	// The kind is a prefix, the hash is of the value (so it matches
	// `printf %s VALUE | sha256sum`, as documented).
	if h, s := Token(KindHost, "web01"), Token(KindSerial, "web01"); h[len("host-"):] != s[len("serial-"):] || h[:5] != "host-" {
		t.Errorf("host %q serial %q", h, s)
	}
	// One value in the spellings it takes in different places.
	same := [][2]string{
		{Token(KindSerial, " Z3GK XXXX GS "), Token(KindSerial, "Z3GK_XXXX_GS")},
		{Token(KindUUID, "5C1D2B34-8F2E-4E5A-9D6C-1A2B3C4D5E6F"), Token(KindUUID, "5c1d2b34-8f2e-4e5a-9d6c-1a2b3c4d5e6f")},
		{Token(KindWWN, "0x5000039FE6D0A1B2"), Token(KindWWN, "naa.5000039fe6d0a1b2")},
		{Token(KindHost, "Web01."), Token(KindHost, "web01")},
		{Token(KindMAC, "52-54-00-AB-CD-EF"), Token(KindMAC, "52:54:00:ab:cd:ef")},
	}
	for i, p := range same {
		if p[0] != p[1] {
			t.Errorf("case %d: %q != %q", i, p[0], p[1])
		}
	}
	if Token(KindSerial, "") != "" || Token(KindSerial, "  ") != "" {
		t.Error("an unknown (empty) value must stay empty")
	}
	if Token(KindSerial, a) != a || Token(KindHost, a) != a {
		t.Error("redacting a token again changes it")
	}
}

// The SHA-256 is plain, so anyone can check a token against a value.
func TestTokenIsPlainSHA256(t *testing.T) {
	// printf %s storage-lab | sha256sum
	if got := Token(KindHost, "storage-lab"); got != "host-"+sha256Prefix("storage-lab") {
		t.Errorf("got %q", got)
	}
}

func readFixture(t *testing.T, name string) *hwinfo.Host {
	t.Helper()
	h, err := hwinfo.Read(context.Background(), hwinfo.Options{Root: filepath.Join("..", "..", "hwinfo", "testdata", name)})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// secretsOfHost lists the identifying values a host holds, read from its
// fields (not from redact's own rules).
func secretsOfHost(h *hwinfo.Host) []string {
	out := []string{h.Hostname}
	for _, d := range h.Disks {
		out = append(out, d.Serial, d.WWN, d.PartitionTableID, d.FSUUID)
		if d.Serial != "" {
			out = append(out, strings.ReplaceAll(d.Serial, " ", "_"))
		}
		out = append(out, d.ByID...)
		for _, p := range d.Partitions {
			out = append(out, p.FSUUID, p.PartUUID)
		}
	}
	return nonEmpty(out)
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

func assertNone(t *testing.T, what, text string, secrets []string) {
	t.Helper()
	lower := strings.ToLower(text)
	for _, s := range secrets {
		if strings.Contains(lower, strings.ToLower(s)) {
			t.Errorf("%s still holds %q", what, s)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHostFixtures(t *testing.T) {
	for _, name := range []string{"desktop-nvme-sata", "kvm-virtio", "vmware-rdm"} {
		t.Run(name, func(t *testing.T) {
			h := readFixture(t, name)
			before := mustJSON(t, h)
			secrets := secretsOfHost(h)
			if len(secrets) < 2 {
				t.Fatalf("fixture has no identifying values: %v", secrets)
			}
			r := Copy(h)
			if mustJSON(t, h) != before {
				t.Error("Host changed its argument")
			}
			assertNone(t, "redacted host", mustJSON(t, r), secrets)
			if r.Hostname != Token(KindHost, h.Hostname) {
				t.Errorf("hostname %q, want %q", r.Hostname, Token(KindHost, h.Hostname))
			}
			for i, d := range h.Disks {
				rd := r.Disks[i]
				if rd.Serial != Token(KindSerial, d.Serial) || rd.WWN != Token(KindWWN, d.WWN) {
					t.Errorf("%s: serial %q wwn %q", d.Name, rd.Serial, rd.WWN)
				}
				// What is not identifying stays, so the output still says
				// what the disk is.
				if rd.Model != d.Model || rd.Name != d.Name || rd.SizeBytes != d.SizeBytes || rd.Firmware != d.Firmware {
					t.Errorf("%s: model %q name %q size %d firmware %q changed", d.Name, rd.Model, rd.Name, rd.SizeBytes, rd.Firmware)
				}
				for j, p := range d.Partitions {
					if rp := rd.Partitions[j]; rp.PartType != p.PartType || rp.FSType != p.FSType || rp.FSUUID != Token(KindUUID, p.FSUUID) {
						t.Errorf("%s: type %q fs %q uuid %q", p.Name, rp.PartType, rp.FSType, rp.FSUUID)
					}
				}
			}
			// Arrays and volume groups keep their shape; their UUIDs go.
			for i, vg := range h.VolumeGroups {
				rv := &r.VolumeGroups[i]
				if rv.UUID != Token(KindUUID, vg.UUID) || rv.Name != vg.Name || rv.SizeBytes != vg.SizeBytes {
					t.Errorf("vg %s: uuid %q name %q size %d", vg.Name, rv.UUID, rv.Name, rv.SizeBytes)
				}
				rv.UUID = vg.UUID
				for j, lv := range vg.LVs {
					if rv.LVs[j].UUID != Token(KindUUID, lv.UUID) {
						t.Errorf("lv %s: uuid %q", lv.Name, rv.LVs[j].UUID)
					}
					rv.LVs[j].UUID = lv.UUID
				}
			}
			for i, a := range h.Arrays {
				if r.Arrays[i].UUID != Token(KindUUID, a.UUID) {
					t.Errorf("array %s: uuid %q", a.Name, r.Arrays[i].UUID)
				}
				r.Arrays[i].UUID = a.UUID
			}
			r.Disks = nil
			h.Disks = nil
			r.Hostname = h.Hostname
			if !reflect.DeepEqual(r, h) {
				t.Errorf("host facts beyond the hostname changed:\n%+v\n%+v", r, h)
			}
		})
	}
}

// by-id names keep the bus and model, and carry the same token as the
// serial or WWN field of the disk.
func TestHostByID(t *testing.T) {
	h := readFixture(t, "desktop-nvme-sata")
	r := Copy(h)
	var got []string
	for _, d := range r.Disks {
		got = append(got, d.ByID...)
	}
	byName := map[string]hwinfo.Disk{}
	for _, d := range h.Disks {
		byName[d.Name] = d
	}
	want := map[string]bool{
		"/dev/disk/by-id/nvme-Samsung_SSD_960_EVO_500GB_" + Token(KindSerial, byName["nvme0n1"].Serial): true,
		"/dev/disk/by-id/nvme-" + Token(KindWWN, byName["nvme0n1"].WWN):                                 true,
		"/dev/disk/by-id/ata-TOSHIBA_DT01ACA300_" + Token(KindSerial, "Z3GKXXXXGS"):                     true,
		"/dev/disk/by-id/" + Token(KindWWN, "0x5000039fe6d0a1b2"):                                       true,
	}
	for _, g := range got {
		delete(want, g)
	}
	if len(want) > 0 {
		t.Errorf("by-id names %q, missing %v", got, want)
	}
}

// fixtureRecord is a record carrying every kind of identifying value, in
// the places they turn up.
func fixtureRecord(id, host, serial string) *record.Record {
	return ct.Identifying(id, host, serial, t0)
}

func TestRecord(t *testing.T) {
	rec := fixtureRecord(ct.ID(1), "storage-lab", "Z3GKXXXXGS")
	before := mustJSON(t, rec)
	r := Copy(rec)
	if mustJSON(t, rec) != before {
		t.Fatal("Record changed its argument")
	}
	out := mustJSON(t, r)
	assertNone(t, "redacted record", out, []string{
		"storage-lab", "Z3GKXXXXGS", "5000039fe6d0a1b2", "1a2b3c4d-0000-4111-8222-333344445555",
		"9e8d7c6b-5a49-4838-a727-16051f4e3d2c", "realbox-77", "52:54:00:ab:cd:ef",
	})
	if r.Host.Hostname != Token(KindHost, "storage-lab") || r.Target.Serial != Token(KindSerial, "Z3GKXXXXGS") ||
		r.Target.WWN != Token(KindWWN, "0x5000039fe6d0a1b2") || r.Target.Prepared.UUID != Token(KindUUID, "9e8d7c6b-5a49-4838-a727-16051f4e3d2c") {
		t.Errorf("fields: %+v %+v", r.Host, r.Target)
	}
	if want := "/dev/disk/by-id/ata-TOSHIBA_DT01ACA300_" + Token(KindSerial, "Z3GKXXXXGS") + "-part1"; r.Target.Path != want {
		t.Errorf("path %q, want %q", r.Target.Path, want)
	}
	uuid := Token(KindUUID, "9e8d7c6b-5a49-4838-a727-16051f4e3d2c")
	if got := strings.Join(r.Target.Prepared.MkfsArgv, " "); got != "mkfs.xfs -f -m crc=1,uuid="+uuid+" -L data /var/tmp/"+Token(KindHost, "storage-lab")+"-disk.img" {
		t.Errorf("mkfs argv %q", got)
	}
	if r.Label != "on-"+Token(KindHost, "storage-lab") {
		t.Errorf("label %q", r.Label)
	}
	// Measurements and the rest of the identity are untouched.
	if !reflect.DeepEqual(r.Workloads, rec.Workloads) || r.ID != rec.ID || r.Target.Model != rec.Target.Model || r.Host.Kernel != rec.Host.Kernel {
		t.Error("measurements or plain facts changed")
	}
	ext4 := []string{"mke2fs", "-t", "ext4", "-U", "9E8D7C6B-5A49-4838-A727-16051F4E3D2C", "/dev/sdb1"}
	rec.Target.Prepared.MkfsArgv = ext4
	if got := Copy(rec).Target.Prepared.MkfsArgv[4]; got != uuid {
		t.Errorf("-U value %q, want %q", got, uuid)
	}
	rec.Target.Prepared.MkfsArgv = []string{"mke2fs", "-U", "random", "-E", "lazy_itable_init=0", "/dev/sdb1"}
	rec.Warnings = []string{"data=random"}
	if got := Copy(rec); got.Target.Prepared.MkfsArgv[2] != "random" || got.Warnings[0] != "data=random" {
		t.Errorf("-U random: %q %q", got.Target.Prepared.MkfsArgv, got.Warnings)
	}
}

// The same serial or host in two records gives the same token (columns
// line up); different ones differ.
func TestRecordsConsistent(t *testing.T) {
	a := fixtureRecord(ct.ID(1), "storage-lab", "Z3GKXXXXGS")
	b := fixtureRecord(ct.ID(2), "storage-lab", "Z3GKXXXXGS")
	c := fixtureRecord(ct.ID(3), "other-box", "Z3GKYYYYGS")
	rs := All([]*record.Record{a, b, c})
	alone := Copy(b)
	if rs[0].Target.Serial != rs[1].Target.Serial || rs[0].Host.Hostname != rs[1].Host.Hostname || alone.Target.Serial != rs[0].Target.Serial {
		t.Errorf("same values, tokens differ: %q %q %q", rs[0].Target.Serial, rs[1].Target.Serial, alone.Target.Serial)
	}
	if rs[2].Target.Serial == rs[0].Target.Serial || rs[2].Host.Hostname == rs[0].Host.Hostname {
		t.Error("different values share a token")
	}
	// A value one record holds in a field is hidden where another only
	// mentions it.
	c.Warnings = append(c.Warnings, "copied from storage-lab")
	if got := All([]*record.Record{a, c})[1].Warnings; strings.Contains(strings.Join(got, " "), "storage-lab") {
		t.Errorf("warnings %q", got)
	}
	// Redacting a redacted record changes nothing.
	if again := All(rs); mustJSON(t, again) != mustJSON(t, rs) {
		t.Error("redaction is not idempotent")
	}
}

func TestTextWholeWords(t *testing.T) {
	rec := ct.Quick(ct.ID(1), "", "xfs", 1, 1, t0)
	rec.Host.Hostname = "lab"
	got := Text("label lab /mnt/lab-data lab.example collab", rec)
	want := "label " + Token(KindHost, "lab") + " /mnt/" + Token(KindHost, "lab") + "-data " + Token(KindHost, "lab") + ".example collab"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// A name too short to search for in text is still replaced where it
	// stands quoted whole, as bench's --hostname warning quotes it.
	rec.Host.Hostname = "vm"
	rec.Host.Warnings = []string{`host recorded as "node-a" (--hostname); it calls itself "vm"`}
	if got := Copy(rec).Host.Warnings[0]; got != `host recorded as "node-a" (--hostname); it calls itself "`+Token(KindHost, "vm")+`"` {
		t.Errorf("short quoted hostname: %q", got)
	}
	if got := Text("vm vmware", rec); got != "vm vmware" {
		t.Errorf("short name replaced in text: %q", got)
	}
	// Shapes are found without any record.
	got = Text[record.Record]("mounted /dev/disk/by-partuuid/000a1b2c-01 from /dev/disk/by-id/scsi-35000c500a1b2c3d4-part2, mac 52:54:00:AB:CD:EF")
	for _, s := range []string{"000a1b2c", "5000c500a1b2c3d4", "AB:CD:EF"} {
		if strings.Contains(got, s) {
			t.Errorf("%q still holds %q", got, s)
		}
	}
	if !strings.Contains(got, "/dev/disk/by-id/scsi-id-") || !strings.HasSuffix(strings.Split(got, ",")[0], "-part2") {
		t.Errorf("by-id name lost its bus or partition: %q", got)
	}
}

func TestPlaceholdersKept(t *testing.T) {
	rec := ct.Quick(ct.ID(1), "", "xfs", 1, 1, t0)
	for _, h := range []string{"imported, unknown", ""} {
		rec.Host.Hostname = h
		if got := Copy(rec).Host.Hostname; got != h {
			t.Errorf("hostname %q redacted to %q", h, got)
		}
	}
	// A host named after its distribution keeps the OS name readable;
	// paths still lose the name.
	rec.Host.Hostname = "ubuntu"
	rec.Host.OS.PrettyName = "Ubuntu 24.04.1 LTS"
	rec.Target.Path = "/home/ubuntu/bench"
	if got := Copy(rec); got.Host.OS.PrettyName != "Ubuntu 24.04.1 LTS" || got.Target.Path != "/home/"+Token(KindHost, "ubuntu")+"/bench" {
		t.Errorf("os %q path %q", got.Host.OS.PrettyName, got.Target.Path)
	}
	// A placeholder serial is kept, and not searched for in other fields.
	rec.Target.Serial = "None"
	rec.Host.Virt.Hypervisor = "none"
	if got := Copy(rec); got.Target.Serial != "None" || got.Host.Virt.Hypervisor != "none" {
		t.Errorf("serial %q hypervisor %q", got.Target.Serial, got.Host.Virt.Hypervisor)
	}
}

// A field added later under a known name is hidden by its name, and any
// other new string field still gets the text pass.
func TestUnknownFieldsByName(t *testing.T) {
	var r redactor
	tree := map[string]any{
		"system": map[string]any{"product_uuid": "4C4C4544-0042-3510-8048-B4C04F4B4E32", "product_serial": "VMware-56 4d"},
		"nics":   []any{map[string]any{"mac_address": "00:50:56:AB:CD:EF", "note": "bond of 00:50:56:ab:cd:ef on VMware-56 4d"}},
	}
	r.learnTree(tree, "")
	got := mustJSON(t, r.applyTree(tree, "", ""))
	for _, s := range []string{"4C4C4544", "VMware-56", "ab:cd:ef", "AB:CD:EF"} {
		if strings.Contains(got, s) {
			t.Errorf("%s still holds %q", got, s)
		}
	}
	if !strings.Contains(got, Token(KindMAC, "00:50:56:ab:cd:ef")) || !strings.Contains(got, Token(KindSerial, "VMware-56 4d")) {
		t.Errorf("tokens missing: %s", got)
	}
}

// Texts is Text string by string, the values learned once.
func TestTextsAsText(t *testing.T) {
	recs := []*record.Record{
		fixtureRecord(ct.ID(1), "storage-lab", "Z3GKXXXXGS"),
		fixtureRecord(ct.ID(2), "other-box", "Z3GKYYYYGS"),
	}
	ss := []string{
		"/var/lib/diskprep/results/storage-lab/" + ct.ID(1) + ".json",
		"copied from other-box, disk Z3GKYYYYGS",
		"mounted /dev/disk/by-partuuid/000a1b2c-01, mac 52:54:00:AB:CD:EF",
		"",
	}
	got := Texts(ss, recs...)
	for i, s := range ss {
		if want := Text(s, recs...); got[i] != want {
			t.Errorf("Texts[%d] = %q, Text %q", i, got[i], want)
		}
	}
	if got[0] == ss[0] || got[1] == ss[1] {
		t.Errorf("nothing redacted: %q", got)
	}
}
