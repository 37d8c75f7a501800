package guesttest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/internal/testenv"
)

// Issue 22 end to end: three real-kernel hosts with systemd and sshd, each
// with a disk of another kind (a SATA SSD, a SATA HDD throttled like a
// spinning disk, a virtio disk), driven from this machine by Debian's
// ansible-core over SSH with the playbook's README command. One plan
// (by size) fits fleet-b and fleet-c; fleet-a's host_vars choose its disk
// by transport instead. A fourth inventory host answers on no port.
//
//  1. The first run ("one"): fleet-c's plan chooses a disk holding a file
//     system (refused), fleet-b powers off in its benchmark, fleet-gone
//     is unreachable: fleet-a is prepared, benchmarked and fetched, and
//     the report names the three failed hosts with their reasons.
//  2. fleet-b booted again and fleet-c's plan put back, run "one" again
//     fills in fleet-b and fleet-c only: fleet-a, which has its record,
//     is not benchmarked or fetched again, no host's disk is prepared
//     anew, the two benchmarked start as one (each host's clock measured,
//     fleet-b's 5 s ahead), and the three are compared by host.
//
// Two playbook runs, not three (a good run, a failing one, its rerun):
// under TCG a run takes minutes, and the failing run and its rerun show
// all a good run did.
func TestScenarioFleet(t *testing.T) {
	parallel(t)
	// Not QEMU's NVMe: under TCG it now and then never completes a read,
	// and the kernel waits 10 minutes before it resets the controller
	// (seen here with ioeventfd=on too); what this test is about is the
	// fleet, not that emulation.
	a := &fleetGuest{Name: "fleet-a", Disks: []string{"sata-ssd:1G:serial=FLEETA"}}
	// Throttled well below what a TCG guest gets from any disk on a busy
	// host (about 100 random reads a second), so that it is the slow one
	// however loaded the machine is.
	b := &fleetGuest{Name: "fleet-b", Disks: []string{"sata-hdd:1G:serial=FLEETB,iops=25,bps=4194304"}, ClockShift: 5}
	c := &fleetGuest{Name: "fleet-c", Disks: []string{"virtio:1G:serial=FLEETC", "sata-ssd:512M:serial=FLEETC2"}}
	f := startFleet(t, a, b, c)
	if _, err := f.ssh(c, `mkfs.ext4 -q -F -L precious "$(readlink -f /dev/disk/by-id/ata-*FLEETC2)"`); err != nil {
		t.Fatal(err)
	}

	bin := filepath.Join(f.dir, "diskprep")
	build := exec.Command("go", "build", "-o", bin, "./cmd/diskprep")
	build.Dir = repoRoot(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	inv := filepath.Join(f.dir, "inventory")
	fetch := filepath.Join(f.dir, "fetch")
	var hosts strings.Builder
	hosts.WriteString("[diskprep]\n")
	for _, g := range f.guests {
		hosts.WriteString(f.inventoryLine(g) + "\n")
	}
	fmt.Fprintf(&hosts, "fleet-gone ansible_host=127.0.0.1 ansible_port=%d ansible_user=root ansible_ssh_private_key_file=%s\n", freePort(t), f.key)
	// Root logs in with the key: no sudo on the hosts, none needed.
	hosts.WriteString("\n[diskprep:vars]\nansible_become=false\nansible_ssh_common_args=-F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null\n")
	writeTestFile(t, filepath.Join(inv, "inventory.ini"), hosts.String())
	all := func(run string) string {
		return fmt.Sprintf(`diskprep_binary_src: %q
diskprep_local_bin: %q
diskprep_fetch_dir: %q
diskprep_run: %q
diskprep_apply_plan: true
# fleet-b lays out its test file at 4 MiB/s: a small one, and a lead
# that covers the way to the benchmark of a TCG guest on a busy host.
diskprep_bench_args: ["--runtime", "1s", "--size", "16M"]
diskprep_start_lead: 60
`, bin, bin, fetch, run)
	}
	writeTestFile(t, filepath.Join(inv, "group_vars", "all.yml"), all("one"))
	writeTestFile(t, filepath.Join(inv, "group_vars", "diskprep.yml"), `diskprep_plan:
  version: 1
  disks:
    - select: {size: 1G}
      partitions:
        - {size: rest, fs: xfs, label: fleet, mount: /srv/fleet, persist: true}
`)
	writeTestFile(t, filepath.Join(inv, "host_vars", "fleet-a.yml"), `diskprep_plan:
  version: 1
  disks:
    - select: {transport: sata}
      partitions:
        - {size: rest, fs: xfs, label: fleet, mount: /srv/fleet, persist: true}
`)
	// fleet-c's first plan chooses the disk with a file system on it.
	writeTestFile(t, filepath.Join(inv, "host_vars", "fleet-c.yml"), `diskprep_plan:
  version: 1
  disks:
    - select: {serial: FLEETC2}
      partitions:
        - {size: rest, fs: xfs, mount: /srv/other}
`)
	writeTestFile(t, filepath.Join(b.share, "poweroff-in-bench"), "")
	play := func(name string) playResult {
		t.Helper()
		r := runPlaybook(t, f, filepath.Join(inv, "inventory.ini"))
		t.Logf("%s: ansible-playbook exit %d in %.0f s (controller: %.1f s CPU, %d MiB max RSS)", name, r.code, r.elapsed.Seconds(),
			r.cpu.Seconds(), r.maxRSS>>20)
		return r
	}

	// Each host's clock by the test's own round trips, before run 2 and
	// after it: a TCG guest's clock loses time on a busy host (seen: 2.6 s
	// over one run at a load of 5-8), so the offset the playbook measured
	// during run 2 is held to what the clock was between the two.
	clocks := func(when string) map[string]float64 {
		m := map[string]float64{}
		for _, g := range f.guests {
			off, rtt := f.clockOffset(g)
			m[g.Name] = float64(off) / float64(time.Millisecond)
			t.Logf("%s: clock offset %+.1f ms %s, by the test's own round trips (shortest %.1f ms)", g.Name, m[g.Name], when, float64(rtt)/float64(time.Millisecond))
		}
		return m
	}
	// 1. fleet-a measured; fleet-b dead mid-benchmark, fleet-c's plan
	// refused, fleet-gone unreachable, each named with its reason.
	r1 := play("run 1")
	down := f.waitDown(b, stretched(2*time.Minute))
	t.Logf("fleet-b powered off (guest.sh exit %d)", down.ExitCode)
	if r1.code == 0 {
		t.Errorf("run 1: want a failed run:\n%s", r1.stdout)
	}
	report := readTestFile(t, filepath.Join(fetch, "report.md"))
	for _, want := range []string{"- fleet-b: benchmark", "- fleet-c: ", "- fleet-gone: unreachable: "} {
		if !strings.Contains(report, want) {
			t.Errorf("run 1: report.md lacks %q:\n%s\nplaybook:\n%s", want, report, r1.stdout)
		}
	}
	if !strings.Contains(report, "precious") && !strings.Contains(report, "ext4") {
		t.Errorf("run 1: fleet-c's reason does not say what is on the disk:\n%s", report)
	}
	recs1 := fleetRecords(t, fetch)
	if got := recordHosts(t, runRecords(t, fetch, "one")); strings.Join(got, " ") != "fleet-a" {
		t.Errorf("run 1: records of %q, want fleet-a's", got)
	}

	// 2. fleet-b back, fleet-c's plan put back: the rerun fills them in.
	os.Remove(filepath.Join(b.share, "poweroff-in-bench"))
	os.Remove(filepath.Join(inv, "host_vars", "fleet-c.yml"))
	f.boot(b)
	f.waitSSH(b)
	f.reconnect(inv, b)
	before := clocks("before run 2")
	r2 := play("run 2")
	if r2.code == 0 || !strings.Contains(r2.stdout, "fleet-gone") {
		t.Errorf("run 2: want a failed run naming fleet-gone:\n%s", r2.stdout)
	}
	// fleet-a has its records of the run: like any rerun of a run, it is
	// not benchmarked or fetched again; no host's disks are prepared anew
	// (fleet-b's were before it powered off; fleet-c's plan is new).
	for _, task := range []string{"benchmark", "fetch the records"} {
		if st := testenv.AnsibleTaskStatus(r2.stdout, task, "fleet-a"); st != "skipping" {
			t.Errorf("run 2: %s on fleet-a: %q, want skipping", task, st)
		}
	}
	for _, g := range []*fleetGuest{a, b} {
		if st := testenv.AnsibleTaskStatus(r2.stdout, "prepare the plan's disks", g.Name); st != "ok" {
			t.Errorf("run 2: prepare on %s: %q, want ok (prepared in run 1)\n%s", g.Name, st, r2.stdout)
		}
	}
	for _, g := range []*fleetGuest{b, c} {
		if st := testenv.AnsibleTaskStatus(r2.stdout, "benchmark", g.Name); st != "changed" {
			t.Errorf("run 2: benchmark on %s: %q, want changed\n%s", g.Name, st, r2.stdout)
		}
	}
	recs2 := fleetRecords(t, fetch)
	if got := recordHosts(t, runRecords(t, fetch, "one")); strings.Join(got, " ") != "fleet-a fleet-b fleet-c" {
		t.Fatalf("run 2: the run's records of %q, want all three\n%s", got, r2.stdout)
	}
	var added []string
	for _, p := range recs2 {
		if !slices.Contains(recs1, p) {
			added = append(added, p)
		}
	}
	if got := recordHosts(t, added); strings.Join(got, " ") != "fleet-b fleet-c" {
		t.Errorf("run 2: new records of %q, want fleet-b's and fleet-c's", got)
	}
	// What reached the control machine per host (the playbook README's
	// table gives it).
	for _, g := range f.guests {
		var n int64
		files, _ := filepath.Glob(filepath.Join(fetch, "inventory", g.Name+".json"))
		for _, p := range append(files, runRecords(t, fetch, "one")...) {
			if fi, err := os.Stat(p); err == nil && (strings.Contains(p, "/inventory/") || recordHosts(t, []string{p})[0] == g.Name) {
				n += fi.Size()
			}
		}
		t.Logf("%s: %d KiB fetched (inventory and records)", g.Name, n>>10)
	}
	// One start for the two benchmarked, each host's clock measured:
	// fleet-b's 5 s ahead, each within 0.5 s of the test's measures, and
	// by the controller's clock the two began within a second of each
	// other.
	truth := clocks("after run 2")
	// Set 5 s ahead at boot, give or take the RTC's second and what the
	// guests' clocks lost apart: a TCG guest booted on a busy host starts
	// seconds off (in a CI run fleet-c began 1.3 s behind, fleet-b 2.1 s
	// beyond its shift: 7.7 s from the others' mean), so the shift is
	// told from the others within 3.5 s either way. This checks the
	// harness's shift; what diskprep measures of each clock is held to
	// half a second below.
	if d := truth["fleet-b"] - (truth["fleet-a"]+truth["fleet-c"])/2; d < 1500 || d > 8500 {
		t.Errorf("fleet-b's clock is %.0f ms ahead of the others', want about the 5 s it was set to", d)
	}
	checkFleetClocks(t, added, before, truth)
	report = readTestFile(t, filepath.Join(fetch, "report.md"))
	if !strings.Contains(report, "Fleet summary: 3 of 4 hosts measured, 1 failed") {
		t.Errorf("run 2: no fleet summary saying 3 of 4 hosts:\n%s", report)
	}
	// The throttled HDD is named among the fleet's outliers, as slow. (The
	// others' p99 latencies under TCG are noisy enough to be named too.)
	_, outliers, _ := strings.Cut(report, "Outliers (")
	outliers, _, _ = strings.Cut(outliers, "Failed hosts")
	if !strings.Contains(outliers, "- fleet-b: ") || !strings.Contains(outliers[strings.Index(outliers, "- fleet-b: "):], "slow") {
		t.Errorf("run 2: fleet-b, throttled, not named slow among the outliers:\n%s", report)
	}
	t.Logf("run 2: outliers:\n%s", strings.TrimSpace(outliers))
	// DISKPREP_GUEST_KEEP=DIR keeps the reports, to look at.
	if keep := os.Getenv("DISKPREP_GUEST_KEEP"); keep != "" {
		for _, name := range []string{"report.md", "report.html"} {
			writeTestFile(t, filepath.Join(keep, name), readTestFile(t, filepath.Join(fetch, name)))
		}
	}
	if !strings.Contains(report, "- fleet-gone: ") {
		t.Errorf("run 2: report.md does not name fleet-gone:\n%s", report)
	}
	for _, g := range f.guests {
		if !strings.Contains(report, g.Name) {
			t.Errorf("run 2: report.md does not compare %s:\n%s", g.Name, report)
		}
	}
	// Each host's disk is the one its plan chose, mounted from fstab.
	for _, g := range f.guests {
		out, err := f.ssh(g, `findmnt -n -o SOURCE,FSTYPE /srv/fleet; awk '$2 == "/srv/fleet"' /etc/fstab | wc -l`)
		if err != nil || !strings.Contains(out, "xfs") || !strings.HasSuffix(strings.TrimSpace(out), "1") {
			t.Errorf("%s: /srv/fleet: %v\n%s", g.Name, err, out)
		}
	}
}

// playResult is one ansible-playbook run.
type playResult struct {
	code    int
	stdout  string
	elapsed time.Duration
	cpu     time.Duration // ansible-playbook's and its children's user and system time
	maxRSS  int64         // the largest resident set of ansible-playbook or a child, bytes
}

// runPlaybook runs the README's command, `ansible-playbook -i INVENTORY
// site.yml`, in scripts/ansible, with nothing of this machine's Ansible
// configuration.
func runPlaybook(t *testing.T, f *fleet, inventory string) playResult {
	t.Helper()
	cfg := filepath.Join(f.dir, "ansible.cfg")
	writeTestFile(t, cfg, "[defaults]\n")
	ctx, cancel := context.WithTimeout(context.Background(), stretched(15*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "ansible-playbook", "-i", inventory, "site.yml")
	cmd.Dir = filepath.Join(repoRoot(t), "scripts", "ansible")
	cmd.Env = append(os.Environ(), "ANSIBLE_CONFIG="+cfg, "ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0",
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(f.dir, "ansible-tmp"), "ANSIBLE_PIPELINING=1")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	// A test killed outright must not leave the playbook running (one
	// did here, for hours, with its ssh master).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	start := time.Now()
	err := cmd.Run()
	r := playResult{stdout: out.String(), elapsed: time.Since(start)}
	if ps := cmd.ProcessState; ps != nil {
		r.cpu = ps.UserTime() + ps.SystemTime()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			r.maxRSS = ru.Maxrss << 10
		}
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("ansible-playbook: %v\n%s", err, r.stdout)
	}
	if ctx.Err() != nil {
		t.Fatalf("ansible-playbook did not end in time:\n%s", r.stdout)
	}
	return r
}

// reconnect writes g's new port into the inventory after a reboot.
func (f *fleet) reconnect(inv string, g *fleetGuest) {
	f.t.Helper()
	p := filepath.Join(inv, "inventory.ini")
	lines := strings.Split(readTestFile(f.t, p), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, g.Name+" ") {
			lines[i] = f.inventoryLine(g)
		}
	}
	writeTestFile(f.t, p, strings.Join(lines, "\n"))
}

// fleetRecords are the record files fetched to the control machine.
func fleetRecords(t *testing.T, fetch string) []string {
	t.Helper()
	recs, err := filepath.Glob(filepath.Join(fetch, "records", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// runRecords are the records the control machine keeps for run.
func runRecords(t *testing.T, fetch, run string) []string {
	t.Helper()
	lists, _ := filepath.Glob(filepath.Join(fetch, "runs", run, "*.json"))
	var recs []string
	for _, l := range lists {
		var paths []string
		if err := json.Unmarshal([]byte(readTestFile(t, l)), &paths); err != nil {
			t.Errorf("%s: %v", l, err)
		}
		recs = append(recs, paths...)
	}
	return recs
}

// recordHosts are the host names of records, sorted.
func recordHosts(t *testing.T, recs []string) []string {
	t.Helper()
	var hosts []string
	for _, p := range recs {
		var rec struct {
			Host struct {
				Hostname string `json:"hostname"`
			} `json:"host"`
		}
		if err := json.Unmarshal([]byte(readTestFile(t, p)), &rec); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		hosts = append(hosts, rec.Host.Hostname)
	}
	slices.Sort(hosts)
	return hosts
}

// checkFleetClocks holds each record's clock to the host's offset as the
// test measured it before and after the run (ms, ±500 around the two) and
// the starts to one moment: the same start_at everywhere, and actual
// starts, by the controller's clock, within a second of each other.
func checkFleetClocks(t *testing.T, recs []string, before, after map[string]float64) {
	t.Helper()
	var first, last time.Time
	startAt := ""
	for _, p := range recs {
		var rec struct {
			Host struct {
				Hostname string `json:"hostname"`
			} `json:"host"`
			StartAt     string    `json:"start_at"`
			ActualStart time.Time `json:"actual_start"`
			Clock       *struct {
				Source        string   `json:"source"`
				OffsetMS      *float64 `json:"offset_ms"`
				RTTMS         float64  `json:"rtt_ms"`
				UncertaintyMS float64  `json:"uncertainty_ms"`
			} `json:"clock"`
		}
		if err := json.Unmarshal([]byte(readTestFile(t, p)), &rec); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		name := rec.Host.Hostname
		if rec.Clock == nil || rec.Clock.Source != "controller" || rec.Clock.OffsetMS == nil {
			t.Errorf("%s: clock %+v, want one measured by the controller", name, rec.Clock)
			continue
		}
		off := *rec.Clock.OffsetMS
		t.Logf("%s: clock offset %+.1f ms (round trip %.1f ms), started %s for %s", name, off, rec.Clock.RTTMS,
			rec.ActualStart.Format(time.RFC3339Nano), rec.StartAt)
		if lo, hi := min(before[name], after[name])-500, max(before[name], after[name])+500; off < lo || off > hi {
			t.Errorf("%s: clock offset %.1f ms, want it between %.0f and %.0f (the test's before and after run 1, ± 500)", name, off, lo+500, hi-500)
		}
		if startAt == "" {
			startAt = rec.StartAt
		}
		if rec.StartAt == "" || rec.StartAt != startAt {
			t.Errorf("%s: start_at %q, want one start for all (%q)", name, rec.StartAt, startAt)
		}
		at := rec.ActualStart.Add(-time.Duration(off * float64(time.Millisecond)))
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	if skew := last.Sub(first); skew > time.Second {
		t.Errorf("the hosts began %v apart by the controller's clock, want within 1 s", skew)
	} else {
		t.Logf("start skew across the fleet: %v", skew)
	}
}
