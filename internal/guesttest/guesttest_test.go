package guesttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The smoke test of scripts/guest.sh: every kind of disk comes up in the
// guest with the identity asked for, stdout and stderr come back apart, the
// command's exit code comes through, a second boot sees what the first wrote,
// a prebuilt test binary runs in the guest, and a timeout or an interrupt
// leaves no QEMU behind. The guests run in parallel: TCG keeps one host CPU
// busy per guest, and this machine has two.

type wantDisk struct {
	spec   string
	serial string
	size   int64
	model  string
	vendor string // "" = not checked
	wwn    string
	lsec   int64
	psec   int64
	rota   bool
	tran   string
}

var kinds = []wantDisk{
	{spec: "nvme:1G:serial=NVME0001", serial: "NVME0001", size: 1 << 30,
		model: "QEMU NVMe Ctrl", lsec: 512, psec: 512, tran: "nvme"},
	{spec: "nvme:512M:serial=NVME4K01,lbs=4096", serial: "NVME4K01", size: 512 << 20,
		model: "QEMU NVMe Ctrl", lsec: 4096, psec: 4096, tran: "nvme"},
	{spec: "sata-hdd:2G:model=WDC WD40EFRX-68N32N0,serial=WD-WCC7K0000001,wwn=0x50014ee2b0000001,pbs=4096",
		serial: "WD-WCC7K0000001", size: 2 << 30, model: "WDC WD40EFRX-68N32N0", vendor: "ATA",
		wwn: "0x50014ee2b0000001", lsec: 512, psec: 4096, rota: true, tran: "sata"},
	{spec: "sata-ssd:1G:model=Samsung SSD 870 EVO 1TB,serial=S6PNNX0R100001,wwn=0x5002538e40000001",
		serial: "S6PNNX0R100001", size: 1 << 30, model: "Samsung SSD 870 EVO 1TB", vendor: "ATA",
		wwn: "0x5002538e40000001", lsec: 512, psec: 512, tran: "sata"},
	{spec: "scsi:1G:vendor=SEAGATE,model=ST4000NM0023,serial=Z1Z00001,wwn=0x5000c50000000001,rpm=7200",
		serial: "Z1Z00001", size: 1 << 30, model: "ST4000NM0023", vendor: "SEAGATE",
		wwn: "0x5000c50000000001", lsec: 512, psec: 512, rota: true},
	{spec: "scsi:1G:serial=SCSISSD1,lbs=4096,rpm=1", serial: "SCSISSD1", size: 1 << 30,
		model: "QEMU HARDDISK", vendor: "QEMU", lsec: 4096, psec: 4096},
	{spec: "virtio:1G:serial=VIRTIO0001,pbs=4096", serial: "VIRTIO0001", size: 1 << 30,
		lsec: 512, psec: 4096, rota: true},
	{spec: "usb:1G:vendor=SanDisk,model=Ultra Fit,serial=4C530001234567", serial: "4C530001234567",
		size: 1 << 30, model: "Ultra Fit", vendor: "SanDisk", lsec: 512, psec: 512, rota: true, tran: "usb"},
}

// lsblkDisk is the part of `lsblk -J -O -b` the test reads.
type lsblkDisk struct {
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Size        int64    `json:"size"`
	Serial      *string  `json:"serial"`
	Model       *string  `json:"model"`
	Vendor      *string  `json:"vendor"`
	WWN         *string  `json:"wwn"`
	LogSec      int64    `json:"log-sec"`
	PhySec      int64    `json:"phy-sec"`
	Rota        bool     `json:"rota"`
	Tran        *string  `json:"tran"`
	Mountpoints []string `json:"mountpoints"`
	Children    []lsblkDisk
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return strings.TrimSpace(*p)
}

func TestEveryDiskKindHasItsIdentity(t *testing.T) {
	parallel(t)
	var opt Options
	for _, k := range kinds {
		opt.Disks = append(opt.Disks, k.spec)
	}
	// and one throttled to 1 MiB/s: reading 5 MiB from it takes about 4 s
	// (QEMU lets the first MiB or so through as a burst), not 0.1 s.
	opt.Disks = append(opt.Disks, "virtio:64M:serial=SLOW0001,bps=1048576")
	script := `lsblk -J -O -b
s=$(date +%s%N)
dd if=/dev/disk/by-id/virtio-SLOW0001 of=/dev/null bs=1M count=5 iflag=direct 2>/dev/null
e=$(date +%s%N)
echo "throttled-ms $(( (e - s) / 1000000 ))"
echo only-on-stderr >&2
exit 7`
	r := Run(t, opt, "sh", "-c", script)
	if r.ExitCode != 7 {
		t.Fatalf("exit %d, want the command's 7; stderr:\n%s", r.ExitCode, r.Stderr)
	}
	if strings.Contains(r.Stdout, "only-on-stderr") || !strings.Contains(r.Stderr, "only-on-stderr") {
		t.Errorf("stderr not kept apart: stdout %q, stderr %q", r.Stdout, r.Stderr)
	}
	var out struct {
		Blockdevices []lsblkDisk `json:"blockdevices"`
	}
	dec := json.NewDecoder(strings.NewReader(r.Stdout))
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("lsblk -J from the guest: %v\n%s", err, r.Stdout)
	}
	rest, _ := io.ReadAll(dec.Buffered())
	var ms int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(rest)), "throttled-ms %d", &ms); err != nil {
		t.Errorf("no time for the throttled read: %v: %q", err, rest)
	} else if ms < 3000 {
		t.Errorf("5 MiB from a disk throttled to 1 MiB/s took %d ms, want over 3000", ms)
	}
	bySerial := map[string]lsblkDisk{}
	for _, d := range out.Blockdevices {
		if d.Type == "disk" {
			bySerial[str(d.Serial)] = d
		}
	}
	root, ok := bySerial["guestroot"]
	if !ok || len(root.Mountpoints) == 0 || root.Mountpoints[0] != "/" {
		t.Errorf("the guest's root disk (serial guestroot) is not mounted at /: %+v", root)
	}
	if len(bySerial) != len(opt.Disks)+1 {
		t.Errorf("guest has %d disks, want %d (each --disk and guestroot): %v", len(bySerial), len(opt.Disks)+1, keys(bySerial))
	}
	for _, k := range kinds {
		d, ok := bySerial[k.serial]
		if !ok {
			t.Errorf("%s: no disk with serial %q in the guest", k.spec, k.serial)
			continue
		}
		check := func(field string, got, want any) {
			if got != want {
				t.Errorf("%s (%s): %s = %v, want %v", k.spec, d.Name, field, got, want)
			}
		}
		check("size", d.Size, k.size)
		check("log-sec", d.LogSec, k.lsec)
		check("phy-sec", d.PhySec, k.psec)
		check("rota", d.Rota, k.rota)
		check("tran", str(d.Tran), k.tran)
		check("model", str(d.Model), k.model)
		if k.vendor != "" {
			check("vendor", str(d.Vendor), k.vendor)
		}
		if k.wwn != "" {
			check("wwn", str(d.WWN), k.wwn)
		}
		if len(d.Children) != 0 || len(d.Mountpoints) != 0 && d.Mountpoints[0] != "" {
			t.Errorf("%s: a fresh disk has partitions or mounts: %+v", k.spec, d)
		}
	}
}

func keys(m map[string]lsblkDisk) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// A second boot, and a second call with the same --state, see the disk, the
// guest's root and /share as the first boot left them, and a static test binary from /share runs on the guest's disk-backed root with its
// testdata copied from /src.
func TestSecondBootSeesFirstBootsWrites(t *testing.T) {
	parallel(t)
	Require(t)
	share := t.TempDir()
	bin := TestBinary(t, "./disk/fstab", share)
	opt := Options{
		Disks: []string{"virtio:64M:serial=PERSIST01"},
		State: t.TempDir(),
		Share: share,
		Boots: 2,
	}
	script := `set -e
disk=/dev/disk/by-id/virtio-PERSIST01
if [ "$DISKPREP_GUEST_BOOT" = 1 ]; then
	printf 'written in boot 1' | dd of=$disk conv=notrunc 2>/dev/null
	echo "boot 1 of $(cat /proc/sys/kernel/random/boot_id)" >/share/first
	echo kept >/root/on-root-disk
	exit 0
fi
echo "boot $DISKPREP_GUEST_BOOT read: $(head -c 17 $disk)"
echo "root disk: $(cat /root/on-root-disk)"
mkdir -p /root/fstab
cp -r /src/disk/fstab/testdata /root/fstab/
cd /root/fstab
/share/` + bin + ` -test.count=1 2>&1 | tail -n 1
`
	r := Run(t, opt, "sh", "-c", script)
	if r.ExitCode != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	for _, want := range []string{"boot 2 read: written in boot 1\n", "root disk: kept\n", "\nPASS\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
		}
	}
	first, err := os.ReadFile(filepath.Join(share, "first"))
	if err != nil || !strings.HasPrefix(string(first), "boot 1 of ") {
		t.Errorf("/share/first from boot 1: %q, %v", first, err)
	}
	if fi, err := os.Stat(filepath.Join(opt.State, "d1-virtio.img")); err != nil || fi.Size() != 64<<20 {
		t.Errorf("the disk image is not kept under --state: %v", err)
	}

	// A later call with the same --state boots the same disks and root.
	again := Run(t, Options{Disks: opt.Disks, State: opt.State}, "sh", "-c",
		`echo "$DISKPREP_GUEST_BOOT: $(head -c 17 /dev/disk/by-id/virtio-PERSIST01), $(cat /root/on-root-disk)"`)
	if again.ExitCode != 0 || again.Stdout != "1: written in boot 1, kept\n" {
		t.Errorf("second call with the same --state: exit %d, stdout %q, stderr:\n%s", again.ExitCode, again.Stdout, again.Stderr)
	}
}

// qemuUsing lists QEMU processes whose command line names dir.
func qemuUsing(dir string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, "qemu-system") && strings.Contains(cmd, dir) {
			found = append(found, cmd)
		}
	}
	return found
}

func TestTimeoutAndInterruptLeaveNothingRunning(t *testing.T) {
	parallel(t)
	Require(t)
	t.Run("timeout", func(t *testing.T) {
		state := t.TempDir()
		r, err := Exec(context.Background(), Options{State: state, Timeout: 15 * time.Second}, "sleep", "600")
		if err != nil {
			t.Fatal(err)
		}
		if r.ExitCode != ExitTimeout {
			t.Errorf("exit %d, want %d; stderr:\n%s", r.ExitCode, ExitTimeout, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "timed out after 15s") {
			t.Errorf("stderr does not say it timed out:\n%s", r.Stderr)
		}
		if left := qemuUsing(state); len(left) > 0 {
			t.Errorf("QEMU left running: %v", left)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		state := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		r, err := Exec(ctx, Options{State: state, Disks: []string{"nvme:64M"}}, "sleep", "600")
		if err != nil && r.ExitCode == 0 {
			t.Fatal(err)
		}
		if r.ExitCode != ExitInterrupt {
			t.Errorf("exit %d, want %d; stderr:\n%s", r.ExitCode, ExitInterrupt, r.Stderr)
		}
		if left := qemuUsing(state); len(left) > 0 {
			t.Errorf("QEMU left running: %v", left)
		}
	})
}

// Bad input: exit 2 with one line on stderr, before anything is built or
// booted. These need neither root nor QEMU.
func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unknown kind", nil, []string{"--disk", "floppy:1G", "--", "true"}, "unknown kind 'floppy'"},
		{"unknown key", nil, []string{"--disk", "nvme:1G:colour=red", "--", "true"}, "unknown key 'colour'"},
		{"key the device cannot carry", nil, []string{"--disk", "nvme:1G:model=Samsung", "--", "true"}, "nvme cannot carry model"},
		{"rpm on virtio", nil, []string{"--disk", "virtio:1G:rpm=7200", "--", "true"}, "virtio cannot carry rpm"},
		{"4K sectors on SATA", nil, []string{"--disk", "sata-hdd:1G:lbs=4096", "--", "true"}, "512-byte logical sectors"},
		{"size not a size", nil, []string{"--disk", "nvme:lots", "--", "true"}, "cannot make a disk of size 'lots'"},
		{"size too small", nil, []string{"--disk", "nvme:0", "--", "true"}, "under 1M"},
		{"size too large", nil, []string{"--disk", "nvme:100T", "--", "true"}, "over 16T"},
		{"size off the block", nil, []string{"--disk", "nvme:1048577", "--", "true"}, "not a multiple"},
		{"bad sector past the end", nil, []string{"--disk", "sata-ssd:1M:badwrite=2048", "--", "true"}, "badwrite 2048: want a 512-byte sector number under 2048"},
		{"no command", nil, []string{"--disk", "nvme:1G", "--"}, "no COMMAND"},
		{"unknown option", nil, []string{"--colour", "--", "true"}, "unknown option --colour"},
		{"ssh without systemd", nil, []string{"--ssh", "2222", "--", "true"}, "--ssh needs --systemd"},
		{"ssh port not a number", nil, []string{"--systemd", "--ssh", "22x", "--", "true"}, "--ssh 22x: want a port number"},
		{"ssh port privileged", nil, []string{"--systemd", "--ssh", "22", "--", "true"}, "--ssh 22: want a port number"},
		{"ssh port too large", nil, []string{"--systemd", "--ssh", "65536", "--", "true"}, "--ssh 65536: want a port number"},
		{"bad timeout", nil, []string{"--timeout", "soon", "--", "true"}, "--timeout soon"},
		{"qemu missing", []string{"DISKPREP_GUEST_QEMU=/nonexistent/qemu-system-x86_64"}, []string{"--", "true"}, "/nonexistent/qemu-system-x86_64 not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			script, err := Script()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, script, c.args...)
			cmd.Env = append(os.Environ(), c.env...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err = cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != ExitBadInput {
				t.Errorf("exit %d, want %d", code, ExitBadInput)
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "guest.sh: ") {
				t.Errorf("stderr is not one guest.sh line:\n%s", stderr.String())
			}
			if !strings.Contains(stderr.String(), c.want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), c.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout not empty: %q", stdout.String())
			}
		})
	}
}

// Issue 25 item 3: a guest test cut off by go test's own -timeout (which
// panics and exits the test process at once, running no cleanup of the
// test's) leaves no QEMU running and no images in the temporary directory:
// the script gets SIGINT when the process that started it dies, and
// cleans up as on Ctrl-C. The child is this test binary, running
// TestGuestSleepsForTimeout with a -test.timeout shorter than the guest.
func TestGoTestTimeoutLeavesNothingBehind(t *testing.T) {
	if os.Getenv("DISKPREP_GUEST_SLEEPER") != "" {
		return
	}
	parallel(t)
	Require(t)
	tmp := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestGuestSleepsForTimeout$", "-test.timeout=40s", "-test.v")
	child.Env = append(os.Environ(), "DISKPREP_GUEST_SLEEPER=1", "TMPDIR="+tmp)
	out, err := child.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "test timed out after 40s") {
		t.Fatalf("the child did not end by go test's timeout (%v):\n%s", err, out)
	}
	// The script has up to its own cleanup time after the signal.
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := qemuUsing(tmp)
		ents, _ := os.ReadDir(tmp)
		if len(left) == 0 && len(ents) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Fatalf("after go test's timeout: QEMU %v, files in TMPDIR %v\nchild:\n%s", left, names, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestGuestSleepsForTimeout is the child of TestGoTestTimeoutLeavesNothingBehind
// (in any other run it returns at once): a guest that sleeps past the
// child's -test.timeout, started by Exec as Run does but without Run's
// budget, which would end the guest before the deadline.
func TestGuestSleepsForTimeout(t *testing.T) {
	if os.Getenv("DISKPREP_GUEST_SLEEPER") == "" {
		return
	}
	r, err := Exec(context.Background(), Options{Disks: []string{"nvme:64M"}, Timeout: 10 * time.Minute}, "sleep", "600")
	t.Fatalf("the guest ended before the timeout: %v, %+v", err, r)
}

func TestBudgetStretchesWithLoadAndEndsBeforeTheDeadline(t *testing.T) {
	for _, c := range []struct {
		want        time.Duration
		load        float64
		cpus        int
		remaining   time.Duration
		guest, call time.Duration
	}{
		{15 * time.Minute, 1, 2, 0, 15 * time.Minute, 20 * time.Minute},                                              // quiet, no deadline
		{0, 1, 2, 0, 5 * time.Minute, 20 * time.Minute},                                                              // the script's default
		{15 * time.Minute, 4, 2, 0, 30 * time.Minute, 35 * time.Minute},                                              // load 4 on 2 CPUs: twice
		{10 * time.Minute, 20, 2, 0, 30 * time.Minute, 35 * time.Minute},                                             // never past 3 times
		{15 * time.Minute, 4, 2, 20 * time.Minute, 18*time.Minute + 30*time.Second, 19*time.Minute + 30*time.Second}, // before go test's deadline
		{15 * time.Minute, 1, 2, 60 * time.Second, time.Second, 30 * time.Second},                                    // almost out of time
	} {
		b := budgetFor(c.want, c.load, c.cpus, c.remaining)
		if b.guest != c.guest || b.call != c.call {
			t.Errorf("budgetFor(%v, load %.0f on %d, %v left) = guest %v, call %v; want %v, %v", c.want, c.load, c.cpus, c.remaining, b.guest, b.call, c.guest, c.call)
		}
	}
}

func TestFailureExcerptsShowEachFailedTest(t *testing.T) {
	log := `=== RUN   TestA
--- PASS: TestA (0.01s)
=== RUN   TestB
    b_test.go:12: the disk was still mounted
--- FAIL: TestB (0.20s)
=== RUN   TestC
--- PASS: TestC (0.01s)
FAIL`
	got := failureExcerpts(log, []string{"TestB FAIL"})
	want := "=== RUN   TestB\n    b_test.go:12: the disk was still mounted\n--- FAIL: TestB (0.20s)\n"
	if got != want {
		t.Errorf("failureExcerpts = %q, want %q", got, want)
	}
	if got := failureExcerpts(log, []string{"TestZ FAIL"}); got != "" {
		t.Errorf("a test not in the log: %q, want nothing", got)
	}
}
