package crypt_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/hwinfo/probe"
)

func planner(h *hosttest.Host) crypt.Planner {
	n := 0
	return crypt.Planner{Planner: disk.Planner{Host: h, NewUUID: func() string {
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}}}
}

// What the backing holds, the key file and --wipe decide the layer's
// steps: each case's steps, or the refusal, and nothing read as a
// change that is none.
func TestLayerDecidesFromWhatIsFound(t *testing.T) {
	luks := &probe.Signature{Type: "crypto_LUKS", Usage: "crypto", UUID: "11111111-2222-4333-8444-555555555555"}
	xfs := &probe.Signature{Type: "xfs", Usage: "filesystem", Label: "old"}
	for _, tc := range []struct {
		name          string
		found         *probe.Signature
		makeKey, wipe bool
		want          string // "format", "open", or the refusal's words
	}{
		{"nothing", nil, false, false, "format"},
		{"nothing, key made", nil, true, false, "format"},
		{"LUKS, key there", luks, false, false, "open"},
		{"LUKS, key gone", luks, true, false, "key file /k is missing (pass --wipe"},
		{"LUKS, key gone, wipe", luks, true, true, "format"},
		{"xfs", xfs, false, false, `holds xfs label "old", not the LUKS2 volume asked (pass --wipe`},
		{"xfs, wipe", xfs, false, true, "format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hosttest.New()
			b := crypt.Target{Path: "/dev/md/data", SizeBytes: 1 << 30, Found: tc.found}
			c, err := planner(h).Layer(&crypt.Spec{KeyFile: "/k"}, "", b, tc.makeKey, tc.wipe, true)
			switch tc.want {
			case "format", "open":
				if err != nil {
					t.Fatal(err)
				}
			default:
				if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want a refusal saying %q", err, tc.want)
				}
				return
			}
			if c.Name != "data_crypt" || c.Mapper != "/dev/mapper/data_crypt" {
				t.Errorf("name %q at %q, want data_crypt at /dev/mapper/data_crypt", c.Name, c.Mapper)
			}
			if got := c.Fresh(); got != (tc.want == "format") {
				t.Errorf("Fresh() = %v, want %v", got, tc.want == "format")
			}
			if tc.want == "open" && (c.UUID != tc.found.UUID || !c.FSAfterOpen || c.Open == nil) {
				t.Errorf("an existing closed volume: uuid %q, FSAfterOpen %v, open %q", c.UUID, c.FSAfterOpen, c.Open)
			}
			if c.MakeKey != tc.makeKey || !c.Changes() {
				t.Errorf("MakeKey %v, Changes %v", c.MakeKey, c.Changes())
			}
			if want := "data_crypt UUID=" + c.UUID + " /k luks,nofail,headless=true"; c.CrypttabLine != want {
				t.Errorf("crypttab line %q, want %q", c.CrypttabLine, want)
			}
		})
	}
}

// The sector: 4096 where the device allows it, and the reason said.
func TestSectorSize(t *testing.T) {
	for _, tc := range []struct {
		size, logical, want uint64
		why                 string
	}{
		{1 << 30, 512, 4096, "in one piece"},
		{1<<30 + 512, 512, 512, "not a whole number of 4 KiB"},
		{1 << 30, 4096, 4096, "4Kn"},
		{1 << 30, 0, 4096, "in one piece"},
	} {
		c, err := planner(hosttest.New()).Layer(&crypt.Spec{KeyFile: "/k"}, "x", crypt.Target{Path: "/dev/sdb1", SizeBytes: tc.size, LogicalSector: tc.logical}, false, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if c.SectorBytes != tc.want || !strings.Contains(c.SectorWhy, tc.why) {
			t.Errorf("size %d, logical %d: %d (%s), want %d (%s)", tc.size, tc.logical, c.SectorBytes, c.SectorWhy, tc.want, tc.why)
		}
	}
}

// A sector size asked for is taken where the device allows it, and
// refused (not bad input: the device's fact) where it does not.
func TestSectorSizeAsked(t *testing.T) {
	for _, tc := range []struct {
		size, logical, asked, want uint64
		refusal                    string
	}{
		{1 << 30, 512, 512, 512, ""},
		{1 << 30, 512, 4096, 4096, ""},
		{1 << 30, 4096, 512, 0, "logical sector is 4096 bytes"},
		{1<<30 + 512, 512, 4096, 0, "not a whole number of them"},
	} {
		c, err := planner(hosttest.New()).Layer(&crypt.Spec{KeyFile: "/k", SectorBytes: tc.asked}, "x", crypt.Target{Path: "/dev/sdb1", SizeBytes: tc.size, LogicalSector: tc.logical}, false, false, false)
		if tc.refusal != "" {
			if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), tc.refusal) {
				t.Errorf("asked %d on logical %d: %v, want a refusal saying %q", tc.asked, tc.logical, err, tc.refusal)
			}
			continue
		}
		if err != nil || c.SectorBytes != tc.want || c.SectorWhy != "asked for" || !slices.Contains(c.Format, fmt.Sprint(tc.want)) {
			t.Errorf("asked %d on logical %d: %+v, %v; want %d, asked for, in luksFormat's argv", tc.asked, tc.logical, c, err, tc.want)
		}
	}
	if err := (crypt.Spec{KeyFile: "/k", SectorBytes: 1024}).Validate(); err == nil || !strings.Contains(err.Error(), "512 or 4096") {
		t.Errorf("sector 1024: %v, want 512 or 4096", err)
	}
}

// A crypttab entry of the same name that says otherwise is the admin's:
// refused, not overwritten; the same line again is no change.
func TestCrypttabLineOfTheSameName(t *testing.T) {
	h := hosttest.New()
	b := crypt.Target{Path: "/dev/md/data", SizeBytes: 1 << 30}
	c, err := planner(h).Layer(&crypt.Spec{KeyFile: "/k"}, "", b, false, false, true)
	if err != nil {
		t.Fatal(err)
	}
	h.SetFile("/etc/crypttab", []byte("# mine\n"+c.CrypttabLine+"\n"))
	if got := crypt.Diff(c, "# mine\n"+c.CrypttabLine+"\n"); len(got) != 2 || got[1].Act != disk.ActKeep {
		t.Errorf("the same line again: %v, want it kept", got)
	}
	h.SetFile("/etc/crypttab", []byte("data_crypt /dev/sdz1 none luks\n"))
	_, err = planner(h).Layer(&crypt.Spec{KeyFile: "/k"}, "", b, false, false, true)
	if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "already has data_crypt") {
		t.Fatalf("got %v, want a refusal naming the entry", err)
	}
}

// The dry run never shows a key file's path as an argument alone: it is
// marked as a key file.
func TestActionsMarkTheKeyFile(t *testing.T) {
	c, err := planner(hosttest.New()).Layer(&crypt.Spec{KeyFile: "/etc/k"}, "", crypt.Target{Path: "/dev/vg/lv", SizeBytes: 1 << 30}, true, false, true)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, a := range crypt.Actions(c) {
		text = append(text, a.Text)
	}
	got := strings.Join(text, "\n")
	for _, want := range []string{"make key file /etc/k", "--key-file '<key file /etc/k>'", "luksFormat", "open --type luks2", "ensure in /etc/crypttab: vg-lv_crypt UUID="} {
		if !strings.Contains(got, want) {
			t.Errorf("actions lack %q:\n%s", want, got)
		}
	}
}
