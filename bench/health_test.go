package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func smartFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "smartctl", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseSmartctl(t *testing.T) {
	r, tool, err := ParseSmartctl(smartFile(t, "nvme-samsung-980"))
	if err != nil {
		t.Fatal(err)
	}
	if tool != "smartctl 7.3" || r.Protocol != "NVMe" || *r.TemperatureC != 38 || *r.PowerOnHours != 6117 ||
		*r.PercentUsed != 3 || *r.MediaErrors != 0 || r.CRCErrors != nil || *r.ThrottleMinutes != 2 || r.Throttled || !*r.PassedSelfTest {
		t.Errorf("nvme: %s %+v", tool, r)
	}
	r, _, err = ParseSmartctl(smartFile(t, "sata-ssd-crucial"))
	if err != nil {
		t.Fatal(err)
	}
	// Wear from Percent_Lifes_Remain (202) normalized 92; media errors
	// are attributes 5+197+198; CRC is 199's raw value.
	if r.Protocol != "ATA" || *r.TemperatureC != 34 || *r.PowerOnHours != 14021 || *r.PercentUsed != 8 ||
		*r.MediaErrors != 0 || *r.CRCErrors != 0 || r.ThrottleMinutes != nil {
		t.Errorf("sata: %+v", r)
	}
	// smartctl's exit status 64 (errors in the device's log) still has data.
	r, _, err = ParseSmartctl(smartFile(t, "sata-ssd-crucial-errors"))
	if err != nil || *r.CRCErrors != 7 || *r.MediaErrors != 2 {
		t.Errorf("sata after: %+v %v", r, err)
	}
	// Real captures in the QEMU guest: its NVMe controller's health log,
	// and its SATA disk's few attributes (no wear, no CRC counter).
	r, _, err = ParseSmartctl(smartFile(t, "qemu-nvme"))
	if err != nil || r.Protocol != "NVMe" || *r.TemperatureC != 50 || *r.PowerOnHours != 0 || *r.PercentUsed != 0 || *r.MediaErrors != 0 || r.Throttled {
		t.Errorf("qemu nvme: %+v %v", r, err)
	}
	r, _, err = ParseSmartctl(smartFile(t, "qemu-sata-ssd"))
	if err != nil || r.Protocol != "ATA" || *r.TemperatureC != 31 || *r.PowerOnHours != 1 || *r.MediaErrors != 0 || r.CRCErrors != nil || r.PercentUsed != nil {
		t.Errorf("qemu sata: %+v %v", r, err)
	}
	// The real capture of a virtio disk: no reading, smartctl's reason.
	if _, _, err := ParseSmartctl(smartFile(t, "virtio-unknown-type")); err == nil || err.Error() != "/dev/vda: Unable to detect device type" {
		t.Errorf("virtio: %v", err)
	}
	for _, bad := range []string{"", "not json", `{"smartctl":{"exit_status":2}}`} {
		if r, _, err := ParseSmartctl([]byte(bad)); err == nil || r != nil {
			t.Errorf("ParseSmartctl(%q) = %+v, %v", bad, r, err)
		}
	}
}

// fakeSmartctl answers smartctl with the files in order, recording argv.
type fakeSmartctl struct {
	mu    sync.Mutex
	files [][]byte
	err   error // returned with every answer
	argv  [][]string
}

func (f *fakeSmartctl) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.argv = append(f.argv, append([]string{name}, args...))
	if len(f.files) == 0 {
		return nil, fmt.Errorf("unexpected call %q", name)
	}
	out := f.files[0]
	f.files = f.files[1:]
	return out, f.err
}

// withHealth reads health before and after a run through run, as Run
// does, and returns the warnings and the health line.
func withHealth(t *testing.T, run Runner, dev string) []string {
	t.Helper()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	h := startHealth(context.Background(), run, dev, now)
	warns := finishHealth(context.Background(), run, h, now.Add(10*time.Minute))
	if h == nil {
		t.Fatal("no health")
	}
	return append(warns, h.Summary())
}

func TestRunHealthWarnings(t *testing.T) {
	cases := []struct {
		name   string
		before string
		after  string
		want   []string
		unwant []string
	}{
		{"nvme hot", "nvme-samsung-980", "nvme-samsung-980-hot", []string{
			"warmed from 38 to 52 °C during the run (more than 10 °C)",
			"reports a temperature above its threshold",
			"temperature 38 → 52 °C, 6117 power-on hours, 3% used, media errors 0 → 0",
		}, []string{"CRC"}},
		{"sata errors", "sata-ssd-crucial", "sata-ssd-crucial-errors", []string{
			"media errors grew from 0 to 2 during the run",
			"CRC errors grew from 0 to 7 during the run: a cable or connector",
		}, []string{"warmed", "throttl"}},
		{"sata unchanged", "sata-ssd-crucial", "sata-ssd-crucial", []string{"temperature 34 → 34 °C"}, []string{"grew", "warmed", "throttl"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeSmartctl{files: [][]byte{smartFile(t, c.before), smartFile(t, c.after)}}
			lines := withHealth(t, f, "/dev/sdb")
			all := strings.Join(lines, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("missing %q in:\n%s", w, all)
				}
			}
			for _, w := range c.unwant {
				if strings.Contains(all, w) {
					t.Errorf("unexpected %q in:\n%s", w, all)
				}
			}
			if len(f.argv) != 2 || f.argv[0][0] != "smartctl" || strings.Join(f.argv[0][1:3], " ") != "-j -a" || f.argv[0][3] != "/dev/sdb" {
				t.Errorf("argv %q", f.argv)
			}
		})
	}
}

// TestHealthAbsent: without smartctl, or for a disk without SMART, a
// one-line note and no second call.
func TestHealthAbsent(t *testing.T) {
	notFound := &fakeSmartctl{files: [][]byte{nil}, err: &exec.Error{Name: "smartctl", Err: exec.ErrNotFound}}
	lines := withHealth(t, notFound, "/dev/sdb")
	if len(lines) != 1 || lines[0] != "device health: not read: smartctl not found (install smartmontools to record the disk's temperature, wear and error counters)" {
		t.Errorf("lines %q", lines)
	}
	if len(notFound.argv) != 1 {
		t.Errorf("smartctl ran %d times, want once (no reading after a failed first one)", len(notFound.argv))
	}
	noSmart := &fakeSmartctl{files: [][]byte{smartFile(t, "virtio-unknown-type")}, err: errors.New("smartctl -j -a /dev/vda: exit status 1")}
	if lines := withHealth(t, noSmart, "/dev/vda"); len(lines) != 1 || lines[0] != "device health: not read: /dev/vda: Unable to detect device type" {
		t.Errorf("lines %q", lines)
	}
	// Nothing printed at all (a runner that failed to start it): its error.
	broken := &fakeSmartctl{files: [][]byte{nil}, err: errors.New("smartctl -j -a /dev/sdb: signal: killed")}
	if lines := withHealth(t, broken, "/dev/sdb"); lines[0] != "device health: not read: smartctl -j -a /dev/sdb: signal: killed" {
		t.Errorf("lines %q", lines)
	}
	// A device made in software has no SMART: smartctl is not asked and
	// nothing is said (issue 25 item 7: a note on every loop record).
	for _, dev := range []string{"/dev/loop0", "/dev/zram1", "/dev/md127", "/dev/dm-3", "/dev/nbd0", "/dev/ram0"} {
		none := &fakeSmartctl{}
		if h := startHealth(context.Background(), none, dev, time.Now()); h != nil || len(none.argv) != 0 {
			t.Errorf("%s: health %+v, smartctl runs %q", dev, h, none.argv)
		}
	}
	if !softwareDevice("/dev/loop0") || softwareDevice("/dev/mdisk") || softwareDevice("/dev/sda") || softwareDevice("/dev/nvme0n1") {
		t.Error("softwareDevice takes the wrong devices")
	}
	// No runner (tests, imports): no health at all.
	if h := startHealth(context.Background(), nil, "/dev/sdb", time.Now()); h != nil {
		t.Errorf("health without a runner: %+v", h)
	}
}
