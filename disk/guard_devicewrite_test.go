package disk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
)

// A raw write that no plan describes (bench --allow-device-write): the
// guard reads what is on the device itself, nothing for a blank one, the
// table and each partition's file system once prepared, and refuses a
// device of the running system; it writes nothing itself.
func TestGuardDeviceWrite(t *testing.T) {
	r := newFakeRig(t)
	ctx := context.Background()
	l, err := disk.GuardDeviceWrite(ctx, r.disk(), r.deps())
	if err != nil || len(l.Signatures) != 0 {
		t.Fatalf("blank disk: %+v %v, want nothing on it", l, err)
	}
	apply(t, r, plan(t, r, xfsData(r)))
	r.unmountByHand(t, r.mountDir("data"))
	r.effects()
	l, err = disk.GuardDeviceWrite(ctx, r.disk(), r.deps())
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(l.Signatures, "; ")
	for _, want := range []string{"gpt", `sdb1: xfs label "data" UUID `} {
		if !strings.Contains(got, want) {
			t.Errorf("what is on %s: %q, want %q", r.disk(), got, want)
		}
	}
	if l.Model != "FAKE DISK" || l.Serial != "FAKE0001" || l.SizeBytes != diskSize {
		t.Errorf("identity %+v", l)
	}
	prompt := disk.DeviceWritePrompt(l, "bench --allow-device-write")
	for _, want := range []string{"About to write to /dev/sdb (bench --allow-device-write)", "serial: FAKE0001", "this DESTROYS:", `- sdb1: xfs label "data"`, "Continue? [y/N] "} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	err = disk.ConfirmDeviceWrite(l, "the write workloads destroy", "confirm on a terminal or pass --yes")
	if !errors.Is(err, disk.ErrRefused) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "refusing to write to /dev/sdb: the write workloads destroy what is on /dev/sdb (FAKE DISK, serial FAKE0001") || !strings.HasSuffix(err.Error(), "pass --yes") {
		t.Errorf("unconfirmed: %v", err)
	}
	l, err = disk.GuardDeviceWrite(ctx, "/dev/sdb1", r.deps())
	if err != nil || len(l.Signatures) != 1 || !strings.HasPrefix(l.Signatures[0], `xfs label "data"`) {
		t.Errorf("the partition: %+v %v", l, err)
	}

	deps := r.deps()
	deps.Refresh = func(context.Context) (*hwinfo.Host, error) {
		h := r.facts(t)
		d, _ := h.Device("sdb")
		d.System, d.SystemReasons = true, []string{"/ on sdb1"}
		return h, nil
	}
	for _, dev := range []string{"/dev/sdb", "/dev/sdb1"} {
		_, err = disk.GuardDeviceWrite(ctx, dev, deps)
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "holds the running system (/ on sdb1)") {
			t.Errorf("%s of the running system: %v, want a refusal", dev, err)
		}
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("the guard wrote: %v", w)
	}
}
