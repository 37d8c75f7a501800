package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	ct "github.com/diskprep/diskprep/bench/compare/comparetest"
	"github.com/diskprep/diskprep/bench/record"
	"github.com/diskprep/diskprep/bench/report"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/redact"
	"github.com/diskprep/diskprep/internal/testenv"
)

// The safety net of --redact: every command and output format is run on
// fixtures holding known serials, WWNs, hostnames, UUIDs and MACs, with
// and without --redact. Without it, the output must show some of them (or
// the check below proves nothing); with it, none may appear anywhere in the
// output, HTML and SVG included.

var tokenInOutput = regexp.MustCompile(`(host|serial|wwn|uuid|mac|id)-[0-9a-f]{6}`)

// checkRedacted compares the plain and the redacted output of one command.
func checkRedacted(t *testing.T, what, plain, redacted string, secrets []string) {
	t.Helper()
	var shown []string
	for _, s := range secrets {
		if strings.Contains(strings.ToLower(plain), strings.ToLower(s)) {
			shown = append(shown, s)
		}
		if strings.Contains(strings.ToLower(redacted), strings.ToLower(s)) {
			t.Errorf("%s --redact shows %q", what, s)
		}
	}
	if len(shown) == 0 {
		t.Logf("%s: no identifying value in this output", what)
		// A format without identity (a record's CSV is its measurements)
		// has nothing to hide, and --redact must leave it as it is.
		if plain != redacted {
			t.Errorf("%s shows no identifying value, yet --redact changes it:\n%s\n---\n%s", what, plain, redacted)
		}
		return
	}
	if !tokenInOutput.MatchString(redacted) {
		t.Errorf("%s --redact shows no token", what)
	}
}

// redactRecords are three records: two from one host and disk, one from
// another, each carrying every kind of identifying value where it turns up.
func redactRecords() []*record.Record {
	mk := func(m int, host, serial, label string, factor float64) *record.Record {
		rec := ct.Quick(ct.ID(m), label, "xfs", factor, 5, resultsT0.Add(time.Duration(m)*time.Minute))
		rec.Host.Hostname = host
		rec.Host.Warnings = []string{`host recorded as "` + host + `" (--hostname); it calls itself "realbox-` + host + `.corp.example"`}
		rec.Target.Path = "/dev/disk/by-id/ata-TOSHIBA_DT01ACA300_" + serial + "-part1"
		rec.Target.Kind = "device"
		rec.Target.Serial = serial
		rec.Target.WWN = "0x5000039f" + strings.Repeat(fmt.Sprint(m%10), 8)
		rec.Target.MountSource = "/dev/disk/by-uuid/1a2b3c4d-0000-4111-8222-33334444555" + fmt.Sprint(m%10)
		uuid := fmt.Sprintf("9e8d7c6b-5a49-4838-a727-16051f4e3d%02d", m)
		rec.Target.Prepared = &record.Prepared{
			FSType: "xfs", UUID: uuid, MountOptions: "noatime",
			MkfsArgv: []string{"mkfs.xfs", "-f", "-m", "uuid=" + uuid, "/var/tmp/" + host + "-disk.img"},
		}
		rec.Warnings = []string{"nic 52:54:00:ab:cd:e" + fmt.Sprint(m%10) + " on " + host}
		return rec
	}
	return []*record.Record{
		mk(1, "storage-lab", "Z3GKXXXXGS", "xfs", 1),
		mk(2, "storage-lab", "Z3GKXXXXGS", "ext4", 0.9),
		mk(3, "esxi-guest.lab.example", "Z3GKYYYYGS", "vm", 0.5),
	}
}

func recordSecrets(recs []*record.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Host.Hostname, r.Target.Serial, r.Target.WWN, strings.TrimPrefix(r.Target.WWN, "0x"),
			r.Target.Prepared.UUID, strings.TrimPrefix(r.Target.MountSource, "/dev/disk/by-uuid/"))
		out = append(out, regexp.MustCompile(`realbox-[^"]+`).FindString(r.Host.Warnings[0]))
		out = append(out, regexp.MustCompile(`52:54:\S+`).FindString(r.Warnings[0]))
	}
	// The short name of an FQDN hostname.
	out = append(out, "esxi-guest")
	return out
}

// both runs f with a fresh env of the given format, without and with
// --redact, and returns stdout+stderr of each.
func both(t *testing.T, dir, format string, f func(e *env) error) (plain, redacted string) {
	t.Helper()
	for _, red := range []bool{false, true} {
		e, out, errb := resultsEnv(t, format)
		e.ResultsDir, e.Redact = dir, red
		if err := f(e); err != nil {
			t.Fatalf("-o %s redact=%v: %v", format, red, err)
		}
		if red {
			redacted = out.String() + errb.String()
		} else {
			plain = out.String() + errb.String()
		}
	}
	return plain, redacted
}

func storeRecords(t *testing.T, recs []*record.Record) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	for _, r := range recs {
		if err := record.Save(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRedactInventory(t *testing.T) {
	for _, fixture := range []string{"desktop-nvme-sata", "kvm-virtio", "vmware-rdm"} {
		root := filepath.Join("..", "..", "hwinfo", "testdata", fixture)
		h, err := hwinfo.Read(context.Background(), hwinfo.Options{Root: root, All: true})
		if err != nil {
			t.Fatal(err)
		}
		secrets := []string{h.Hostname}
		for _, d := range h.Disks {
			secrets = append(secrets, d.Serial, d.WWN, d.PartitionTableID, d.FSUUID)
			secrets = append(secrets, d.ByID...)
			for _, p := range d.Partitions {
				secrets = append(secrets, p.FSUUID, p.PartUUID)
			}
		}
		secrets = nonEmptyStrings(secrets)
		for _, format := range []string{"table", "json", "markdown"} {
			plain, redacted := both(t, t.TempDir(), format, func(e *env) error {
				e.Root = root
				return runInventory(context.Background(), inventoryOptions{All: true}, e)
			})
			checkRedacted(t, fixture+" inventory -o "+format, plain, redacted, secrets)
		}
	}
}

func nonEmptyStrings(in []string) []string {
	var out []string
	for _, s := range in {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}

func TestRedactResults(t *testing.T) {
	recs := redactRecords()
	secrets := recordSecrets(recs)
	dir := storeRecords(t, recs)
	before, err := os.ReadFile(filepath.Join(dir, recs[0].ID+".json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "json", "markdown", "csv"} {
		plain, redacted := both(t, dir, format, func(e *env) error { return runResultsShow(context.Background(), recs[0].ID, e) })
		checkRedacted(t, "results show -o "+format, plain, redacted, secrets)
		plain, redacted = both(t, dir, format, func(e *env) error { return runResultsList(context.Background(), recordFilter{}, e) })
		checkRedacted(t, "results list -o "+format, plain, redacted, secrets)
	}
	// The store directory is named after a host: its path in the listing
	// is hidden too, the filter still takes the real name.
	hostDir := filepath.Join(t.TempDir(), "results-storage-lab")
	for _, r := range recs {
		if err := record.Save(hostDir, r); err != nil {
			t.Fatal(err)
		}
	}
	plain, redacted := both(t, hostDir, "csv", func(e *env) error {
		return runResultsList(context.Background(), recordFilter{Host: "storage-lab"}, e)
	})
	checkRedacted(t, "results list --host", plain, redacted, append(secrets, hostDir))
	if n := strings.Count(redacted, "\n"); n != 3 {
		t.Errorf("--host filter with --redact: %d lines, want header and 2 records:\n%s", n, redacted)
	}
	// --host also takes the token a redacted listing showed.
	e, out, _ := resultsEnv(t, "json")
	e.ResultsDir, e.Redact = dir, true
	if err := runResultsList(context.Background(), recordFilter{Host: redact.Token(redact.KindHost, "storage-lab")}, e); err != nil {
		t.Fatal(err)
	}
	var list report.ResultListJSON
	err = json.Unmarshal(out.Bytes(), &list)
	rows := list.Results
	if err != nil || len(rows) != 2 || rows[0].ID != recs[0].ID || rows[1].ID != recs[1].ID {
		t.Errorf("--host TOKEN: %v %+v", err, rows)
	}
	for _, as := range exportFormats {
		plain, redacted := both(t, dir, "", func(e *env) error {
			return runResultsExport(context.Background(), resultsExportOptions{ID: recs[2].ID, As: as}, e)
		})
		checkRedacted(t, "results export --as "+as, plain, redacted, secrets)
	}
	after, err := os.ReadFile(filepath.Join(dir, recs[0].ID+".json"))
	if err != nil || string(after) != string(before) {
		t.Errorf("the stored record changed: %v", err)
	}
}

func TestRedactCompare(t *testing.T) {
	recs := redactRecords()
	secrets := recordSecrets(recs)
	dir := storeRecords(t, recs)
	for _, by := range []string{"host", "label", "device"} {
		for _, format := range report.Formats {
			plain, redacted := both(t, dir, format, func(e *env) error {
				return runCompare(context.Background(), compareOptions{By: by, Latency: true}, e)
			})
			checkRedacted(t, "compare --by "+by+" -o "+format, plain, redacted, secrets)
		}
	}
	// Grouped by host, the two records of one host still share a column,
	// named by the token, and --baseline takes the real name.
	e, out, _ := resultsEnv(t, "json")
	e.ResultsDir, e.Redact = dir, true
	if err := runCompare(context.Background(), compareOptions{By: "host", Baseline: "esxi-guest.lab.example"}, e); err != nil {
		t.Fatal(err)
	}
	var c struct {
		Groups []struct {
			Name    string   `json:"name"`
			Records []string `json:"records"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 2 || c.Groups[0].Name != redact.Token(redact.KindHost, "esxi-guest.lab.example") ||
		c.Groups[1].Name != redact.Token(redact.KindHost, "storage-lab") {
		t.Errorf("groups %+v", c.Groups)
	}
	// A report written to a file.
	file := filepath.Join(t.TempDir(), "report.html")
	e, _, _ = resultsEnv(t, "")
	e.ResultsDir, e.Redact = dir, true
	if err := runCompare(context.Background(), compareOptions{By: "host", Output: file}, e); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(b), s) {
			t.Errorf("report.html shows %q", s)
		}
	}
}

// The flag works before and after the command, and from the environment.
func TestRedactFlagPlaces(t *testing.T) {
	recs := redactRecords()
	dir := storeRecords(t, recs)
	runs := [][]string{
		{"--redact", "results", "show", recs[0].ID, "--results", dir},
		{"results", "show", recs[0].ID, "--redact", "--results", dir},
		{"results", "list", "--results", dir, "-o", "json", "--redact"},
		{"compare", "--results", dir, "--redact", "-o", "svg", "--by", "host"},
		{"inventory", "--root", filepath.Join("..", "..", "hwinfo", "testdata", "desktop-nvme-sata"), "--redact"},
	}
	for _, args := range runs {
		code, stdout, stderr := runDiskprep(t, "", args...)
		if code != 0 || strings.Contains(stdout+stderr, "storage-lab") || !tokenInOutput.MatchString(stdout) {
			t.Errorf("%q: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
	}
	t.Setenv("DISKPREP_REDACT", "1")
	code, stdout, stderr := runDiskprep(t, "", "results", "show", recs[0].ID, "--results", dir)
	if code != 0 || strings.Contains(stdout+stderr, "storage-lab") {
		t.Errorf("DISKPREP_REDACT=1: exit %d\n%s", code, stdout)
	}
	t.Setenv("DISKPREP_REDACT", "0")
	if _, stdout, _ := runDiskprep(t, "", "results", "show", recs[0].ID, "--results", dir); !strings.Contains(stdout, "storage-lab") {
		t.Errorf("DISKPREP_REDACT=0 redacts:\n%s", stdout)
	}
}

// bench prints the record redacted and stores it whole. A directory on
// this machine's filesystem is enough: one pass of reads over 1 MiB.
func TestRedactBench(t *testing.T) {
	real, err := os.Hostname()
	if err != nil {
		t.Skip("no hostname")
	}
	store := filepath.Join(t.TempDir(), "store")
	for _, format := range []string{"table", "json", "markdown"} {
		var outputs [2]string
		var stored *record.Record
		for i, red := range []bool{false, true} {
			e, out, errb := resultsEnv(t, format)
			e.ResultsDir, e.Redact = store, red
			err := runBench(context.Background(), benchOptions{
				Target: t.TempDir(), Workloads: []string{"rw=read,bs=64k,size=1M,runtime=0"}, Repeat: 1,
				Hostname: "node-alias-7", Label: "on-node-alias-7",
			}, liveMachine(), e)
			if err != nil {
				t.Fatalf("-o %s redact=%v: %v", format, red, err)
			}
			outputs[i] = out.String() + errb.String()
			entries, _, err := record.List(store)
			if err != nil || len(entries) == 0 {
				t.Fatalf("store: %v", err)
			}
			stored = entries[len(entries)-1].Record
		}
		if stored.Host.Hostname != "node-alias-7" {
			t.Errorf("the store keeps %q, want the full hostname", stored.Host.Hostname)
		}
		secrets := []string{"node-alias-7", `"` + real + `"`, `\"` + real + `\"`}
		if len(real) >= 3 {
			secrets = append(secrets, real)
		}
		secrets = append(secrets, nonEmptyStrings([]string{stored.Target.Serial, stored.Target.WWN})...)
		checkRedacted(t, "bench -o "+format, outputs[0], outputs[1], secrets)
	}
}

// fscompare shows mkfs arguments that carry the filesystem UUIDs diskprep
// chose: with --redact the report shows their tokens, and the stored
// records keep the UUIDs.
func TestPrivilegedRedactFSCompare(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "losetup", "mount", "umount")
	dir := t.TempDir()
	img := filepath.Join(dir, "redact.img")
	t.Cleanup(func() {
		if out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", img); strings.TrimSpace(out) != "" {
			testenv.UnmountAll(t, strings.TrimSpace(out))
			testenv.Run("losetup", "-d", strings.TrimSpace(out))
		}
	})
	e, out, errb := resultsEnv(t, "markdown")
	e.Redact = true
	err := runFSCompare(context.Background(), fscompareOptions{
		Image: img, Size: "640M", FS: []string{"xfs", "ext4"}, Set: "quick", Runtime: "200ms", Repeat: 1,
		Mount: filepath.Join(dir, "mnt"), Yes: true,
	}, liveMachine(), e)
	if err != nil {
		t.Fatalf("fscompare: %v\n%s", err, errb)
	}
	entries, _, err := record.List(e.ResultsDir)
	if err != nil || len(entries) != 2 {
		t.Fatalf("%d records (%v), want 2", len(entries), err)
	}
	shown := out.String() + errb.String()
	for _, en := range entries {
		p := en.Record.Target.Prepared
		if p == nil || p.UUID == "" || !strings.Contains(strings.Join(p.MkfsArgv, " "), p.UUID) {
			t.Fatalf("record %s: no mkfs UUID to hide: %+v", en.Record.ID, p)
		}
		if strings.Contains(strings.ToLower(shown), strings.ToLower(p.UUID)) {
			t.Errorf("report shows the %s UUID %s", p.FSType, p.UUID)
		}
		if !strings.Contains(shown, redact.Token(redact.KindUUID, p.UUID)) {
			t.Errorf("report lacks the token of the %s UUID:\n%s", p.FSType, shown)
		}
	}
}
