package scripttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/internal/testenv"
)

// The fleet playbook against the example inventory (two aliases of this
// machine, each benchmarking its own loop image), where node-b applies a
// host_vars plan on a loop device instead, plus a third alias that fails:
// the two good hosts' results are fetched and compared side by side, the
// report names the failed host, and the run exits non-zero.
func TestPrivilegedAnsibleFleet(t *testing.T) {
	testenv.RequirePrivileged(t, "ansible-playbook", "mkfs.xfs", "blkid", "partx")
	bin := diskprepBinary(t)
	dir := t.TempDir()
	t.Cleanup(func() { detachLoopsUnder(t, dir) })
	os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
	fetch := filepath.Join(dir, "fetch")
	// A second inventory source: node-b gets a plan (host_vars) for a loop
	// device instead of the example's image, and node-c asks for an image
	// of an impossible size, which diskprep refuses.
	loop := testenv.NewLoop(t, 1<<30, testenv.LoopOptions{})
	// The play leaves the plan's filesystem mounted, as a fleet run should:
	// unmount it before dropping the partition and detaching.
	t.Cleanup(func() { testenv.UnmountAll(t, loop.Dev); dropKernelPartitions(t, loop.Dev) })
	extra := filepath.Join(dir, "inventory", "hosts.ini")
	writeFile(t, extra, "[diskprep]\nnode-b\nnode-c ansible_connection=local diskprep_image_size=1X\n", 0o644)
	planMount := filepath.Join(dir, "node-b-plan.mnt")
	writeFile(t, filepath.Join(dir, "inventory", "host_vars", "node-b.yml"), `diskprep_image: ""
diskprep_apply_plan: true
diskprep_plan_path: "`+dir+`/node-b-plan.yaml"
diskprep_plan:
  version: 1
  disks:
    - select: {path: "`+loop.Dev+`"}
      partitions:
        - {size: rest, fs: xfs, label: nodeb, mount: "`+planMount+`"}
`, 0o644)
	// An empty configuration: no ansible.cfg of the machine or the user.
	cfg := filepath.Join(dir, "ansible.cfg")
	writeFile(t, cfg, "[defaults]\n", 0o644)
	play := filepath.Join(repoRoot(t), "scripts", "ansible")
	env := append(os.Environ(),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "ansible-tmp"),
		"ANSIBLE_REMOTE_TEMP="+filepath.Join(dir, "ansible-tmp"),
		"ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0", "ANSIBLE_PIPELINING=1", "ANSIBLE_CONFIG="+cfg,
	)
	r := runEnv(t, env, play, "ansible-playbook",
		"-i", "inventory.example.ini", "-i", extra, "site.yml",
		"-e", "diskprep_demo_dir="+dir,
		"-e", "diskprep_fetch_dir="+fetch,
		"-e", "diskprep_binary_src="+bin,
		"-e", "diskprep_bin="+filepath.Join(dir, "bin", "diskprep"),
		"-e", "diskprep_local_bin="+bin,
		"-e", `{"diskprep_bench_args": ["--runtime", "1s", "--size", "64M"]}`,
	)
	if r.code == 0 || !strings.Contains(r.stdout, "diskprep failed on node-c") {
		t.Errorf("want a failed run naming node-c:\n%v", r)
	}

	// Two records, one per good host, each recorded under its inventory name.
	recs, _ := filepath.Glob(filepath.Join(fetch, "records", "*.json"))
	hosts := map[string]bool{}
	for _, p := range recs {
		var rec struct {
			Host struct {
				Hostname string `json:"hostname"`
			} `json:"host"`
		}
		b, _ := os.ReadFile(p)
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		hosts[rec.Host.Hostname] = true
	}
	if len(recs) != 2 || !hosts["node-a"] || !hosts["node-b"] {
		t.Fatalf("records %q hosts %v\n%v", recs, hosts, r)
	}
	// node-b's disk came from its plan, and its record says so.
	if got := strings.TrimSpace(testenv.MustRun(t, "blkid", "-p", "-s", "LABEL", "-o", "value", loop.Dev+"p1")); got != "nodeb" {
		t.Errorf("node-b's plan: %sp1 LABEL %q, want nodeb", loop.Dev, got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "node-b-plan.yaml")); err != nil || !strings.Contains(string(b), loop.Dev) {
		t.Errorf("node-b's plan file: %v\n%s", err, b)
	}
	for _, p := range recs {
		var rec struct {
			Label  string `json:"label"`
			Target struct {
				MountPoint string `json:"mount_point"`
			} `json:"target"`
		}
		b, _ := os.ReadFile(p)
		json.Unmarshal(b, &rec)
		if rec.Label == "node-b" && rec.Target.MountPoint != planMount {
			t.Errorf("node-b benchmarked %q, want its plan's mount point %s", rec.Target.MountPoint, planMount)
		}
	}
	for _, h := range []string{"node-a", "node-b"} {
		if !exists(filepath.Join(fetch, "inventory", h+".json")) {
			t.Errorf("no inventory fetched for %s", h)
		}
	}

	md, err := os.ReadFile(filepath.Join(fetch, "report.md"))
	if err != nil {
		t.Fatalf("report.md: %v\n%v", err, r)
	}
	report := string(md)
	header := ""
	for _, l := range strings.Split(report, "\n") {
		if strings.HasPrefix(l, "| Workload |") {
			header = l
			break
		}
	}
	cols := strings.Split(strings.Trim(header, "| "), "|")
	if len(cols) < 4 || !strings.Contains(cols[2], "node-a") || !strings.Contains(cols[3], "node-b") {
		t.Errorf("compare header %q: want one column per host\n%s", header, report)
	}
	if !strings.Contains(report, "Failed hosts (1)") || !strings.Contains(report, "- node-c: prepare the image on a loop device: ") ||
		!strings.Contains(report, "1X") {
		t.Errorf("report does not name node-c's failure:\n%s", report)
	}
	html, err := os.ReadFile(filepath.Join(fetch, "report.html"))
	if err != nil || !strings.Contains(string(html), "node-a") || !strings.Contains(string(html), "node-b") || !strings.Contains(strings.ToLower(string(html)), "<html") {
		t.Errorf("report.html: %v\n%.300s", err, html)
	}

	// The same run again: node-a and node-b keep the records fetched
	// before (no benchmark, nothing fetched), node-b's plan is already
	// prepared (changed=0), and the report still compares both.
	r2 := runEnv(t, env, play, "ansible-playbook",
		"-i", "inventory.example.ini", "-i", extra, "site.yml",
		"-e", "diskprep_demo_dir="+dir,
		"-e", "diskprep_fetch_dir="+fetch,
		"-e", "diskprep_binary_src="+bin,
		"-e", "diskprep_bin="+filepath.Join(dir, "bin", "diskprep"),
		"-e", "diskprep_local_bin="+bin,
		"-e", `{"diskprep_bench_args": ["--runtime", "1s", "--size", "64M"]}`,
	)
	recs2, _ := filepath.Glob(filepath.Join(fetch, "records", "*.json"))
	if len(recs2) != len(recs) {
		t.Errorf("the rerun left %d records, want the %d of the first run\n%v", len(recs2), len(recs), r2)
	}
	for _, task := range []string{"benchmark", "fetch the records"} {
		for _, h := range []string{"node-a", "node-b"} {
			if st := testenv.AnsibleTaskStatus(r2.stdout, task, h); st != "skipping" {
				t.Errorf("rerun: task %q on %s: %q, want skipping\n%s", task, h, st, r2.stdout)
			}
		}
	}
	if st := testenv.AnsibleTaskStatus(r2.stdout, "prepare the plan's disks", "node-b"); st != "ok" {
		t.Errorf("rerun: prepare on node-b: %q, want ok (nothing changed)\n%s", st, r2.stdout)
	}
	if md2, err := os.ReadFile(filepath.Join(fetch, "report.md")); err != nil || !strings.Contains(string(md2), "node-a") || !strings.Contains(string(md2), "node-b") {
		t.Errorf("rerun report: %v\n%s", err, md2)
	}
}

// detachLoopsUnder unmounts and detaches every loop device whose backing
// file lies under dir: the images the playbook made.
func detachLoopsUnder(t *testing.T, dir string) {
	out, err := testenv.Run("losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE")
	if err != nil {
		return
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.HasPrefix(f[1], dir+"/") {
			continue
		}
		testenv.UnmountAll(t, f[0])
		dropKernelPartitions(t, f[0])
		if _, err := testenv.Run("losetup", "-d", f[0]); err != nil {
			t.Errorf("detach %s: %v", f[0], err)
		}
	}
}

// A host that answers the benchmark with a record "id" holding a path
// (../) must not have the control machine write the fetched file outside
// its records directory: the role holds each id to diskprep's form, and
// the host fails with the reason. The host's diskprep here is a stand-in
// that is diskprep for everything but bench.
func TestPrivilegedAnsibleRefusesARecordIDWithAPath(t *testing.T) {
	testenv.RequirePrivileged(t, "ansible-playbook")
	bin := diskprepBinary(t)
	dir := t.TempDir()
	fetch := filepath.Join(dir, "fetch")
	target := filepath.Join(dir, "target")
	for _, d := range []string{target, filepath.Join(dir, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake := filepath.Join(dir, "fake-diskprep")
	writeFile(t, fake, `#!/bin/sh
results=
prev=
for a in "$@"; do
	[ "$prev" = --results ] && results=$a
	prev=$a
	if [ "$a" = bench ]; then
		mkdir -p "$results"
		echo '{"planted": true}' >"$results/../planted.json"
		echo '{"id": "../planted"}'
		exit 0
	fi
done
exec `+bin+` "$@"
`, 0o755)
	inv := filepath.Join(dir, "hosts.ini")
	writeFile(t, inv, "[diskprep]\nnode-x ansible_connection=local\n", 0o644)
	cfg := filepath.Join(dir, "ansible.cfg")
	writeFile(t, cfg, "[defaults]\n", 0o644)
	env := append(os.Environ(),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "ansible-tmp"),
		"ANSIBLE_REMOTE_TEMP="+filepath.Join(dir, "ansible-tmp"),
		"ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0", "ANSIBLE_PIPELINING=1", "ANSIBLE_CONFIG="+cfg,
	)
	r := runEnv(t, env, filepath.Join(repoRoot(t), "scripts", "ansible"), "ansible-playbook", "-i", inv, "site.yml",
		"-e", "diskprep_fetch_dir="+fetch,
		"-e", "diskprep_binary_src="+fake,
		"-e", "diskprep_bin="+filepath.Join(dir, "bin", "diskprep"),
		"-e", "diskprep_local_bin="+bin,
		"-e", "diskprep_state_dir="+filepath.Join(dir, "state"),
		"-e", "diskprep_results_dir="+filepath.Join(dir, "state", "results"),
		"-e", "diskprep_start_lead=0",
		"-e", `{"diskprep_bench_targets": ["`+target+`"]}`,
	)
	if !exists(filepath.Join(dir, "state", "planted.json")) {
		t.Fatalf("the stand-in did not run its bench:\n%v", r)
	}
	if exists(filepath.Join(fetch, "planted.json")) {
		t.Errorf("the control machine wrote the host's file outside its records directory (fetch/planted.json)")
	}
	if recs, _ := filepath.Glob(filepath.Join(fetch, "records", "*")); len(recs) != 0 {
		t.Errorf("records fetched: %v", recs)
	}
	if r.code == 0 || !strings.Contains(r.stdout, `failed: node-x: check the records' ids: the host named a record \"../planted\", not an id diskprep gives`) {
		t.Errorf("want node-x failed with the id named:\n%v", r)
	}
}
