package guesttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What encryption costs (issue 23 item 4 and 5): fscompare --encrypt
// none,luks2,luks2-512 on a 512e SATA disk of the guest's real kernel,
// dm-crypt and cryptsetup. The same xfs plain, on LUKS2 with the 4096-byte
// sectors diskprep chooses, and on LUKS2 with the kernel's 512, in
// interleaved rounds; each record keeps its layer (cipher, key and sector
// size, AES-NI, cryptsetup benchmark's figures) and the host's CPU per
// I/O; the comparison adds that CPU row and a note per encrypted column.
// Before it, the same command killed with its first mapping open; the run
// releases what that left. Afterwards: no mapping, no key file, no LUKS header (so no key slot),
// fstab and crypttab as they were. The numbers are TCG's; the machinery is
// what is checked. One boot.

var costDisks = []string{"sata-ssd:1G:serial=COST512E,pbs=4096"}

const costScript = `set -u
mark() { echo "@@ $1"; }
d=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_COST512E)
mark disk; echo $d
mark sectors; cat /sys/block/${d##*/}/queue/logical_block_size /sys/block/${d##*/}/queue/physical_block_size
touch /etc/crypttab
cp /etc/fstab /root/fstab.before; cp /etc/crypttab /root/crypttab.before
# Killed (kill -9) once its first LUKS2 mapping is open: the same
# command's next run must release what it left and converge.
diskprep fscompare $d --encrypt luks2,none --set quick --runtime 1s --repeat 1 --yes --results /root/res-kill >/dev/null 2>/root/kill.err &
k=$!
i=0
until [ -e /dev/mapper/${d##*/}1_crypt ] || [ $i -ge 1200 ] || ! kill -0 $k 2>/dev/null; do sleep 0.1; i=$((i+1)); done
# (kill succeeds only on a process still running: the shell may have
# reaped it before wait, which then says 0.)
mark kill.sent; kill -KILL $k && echo killed
wait $k
mark kill.open; ls /dev/mapper/ | grep _crypt
mark kill.stderr; cat /root/kill.err
s=$(date +%s)
diskprep fscompare $d --encrypt none,luks2,luks2-512 --set quick --runtime 1s --repeat 2 --yes -o json --results /root/res >/root/out 2>/root/err
rc=$?
mark seconds; echo $(( $(date +%s) - s ))
mark exit; echo $rc
mark json; cat /root/out
mark stderr; cat /root/err
for id in $(diskprep results list -o json --results /root/res | sed -n 's/^ *"id": "\(.*\)",$/\1/p'); do
	mark "record.$id"; diskprep results show $id -o json --results /root/res
done
diskprep compare --results /root/res --cpu -o html --output /root/cost.html >/dev/null 2>&1
mark html.exit; echo $?
mark html; cat /root/cost.html
mark left.mounts; grep "^$d" /proc/mounts
mark left.dm; dmsetup ls --target crypt | grep -v '^No devices found'
# The last round's plain xfs stays on the disk, as fscompare leaves it; no
# LUKS header (so no key slot) may.
mark left.luks; for p in $(lsblk -nrpo NAME $d); do cryptsetup isLuks $p 2>/dev/null && echo "$p"; done
mark left.keys; ls /run/diskprep/fscompare/ 2>/dev/null | grep -v '\.lock$'
mark left.fstab; diff /root/fstab.before /etc/fstab
mark left.crypttab; diff /root/crypttab.before /etc/crypttab
mark end
`

// costRecord is the part of a record this scenario reads.
type costRecord struct {
	Label  string `json:"label"`
	Target struct {
		Device     string `json:"device"`
		FSType     string `json:"fs_type"`
		StackText  string `json:"stack_text"`
		Encryption *struct {
			Mapper      string  `json:"mapper"`
			LUKSVersion int     `json:"luks_version"`
			Cipher      string  `json:"cipher"`
			KeyBits     int     `json:"key_bits"`
			SectorBytes int     `json:"sector_bytes"`
			AES         *bool   `json:"aes"`
			EncMiBps    float64 `json:"cipher_encrypt_mib_per_s"`
			DecMiBps    float64 `json:"cipher_decrypt_mib_per_s"`
			Note        string  `json:"cipher_note"`
		} `json:"encryption"`
	} `json:"target"`
	Order     string `json:"order"`
	Workloads []struct {
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
		Runs []struct {
			HostCPU float64 `json:"host_cpu_ns_per_io"`
		} `json:"runs"`
	} `json:"workloads"`
}

func TestScenarioEncryptCost(t *testing.T) {
	parallel(t)
	r := Run(t, Options{Disks: costDisks, Timeout: 12 * time.Minute}, "sh", "-c", costScript)
	out := splitMarked(r.Stdout)
	if _, ok := out["end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	t.Logf("fscompare --encrypt none,luks2,luks2-512, 2 rounds of the quick set: exit %s in %s s (%.0f s the boot)\nstderr:\n%s",
		out["exit"], out["seconds"], r.Elapsed.Seconds(), out["stderr"])
	if f := strings.Fields(out["sectors"]); len(f) != 2 || f[0] != "512" || f[1] != "4096" {
		t.Fatalf("the disk is not 512e: logical and physical sectors %q", out["sectors"])
	}
	if out["kill.sent"] != "killed" || out["kill.open"] == "" {
		t.Errorf("the first fscompare: kill %q with mappings %q, want killed with its LUKS2 mapping open\n%s", out["kill.sent"], out["kill.open"], out["kill.stderr"])
	}
	if out["exit"] != "0" {
		t.Fatalf("fscompare --encrypt after the killed one: exit %s\n%s", out["exit"], out["stderr"])
	}
	if !strings.Contains(out["stderr"], "an earlier fscompare of /dev/") || !strings.Contains(out["stderr"], "ended without cleaning up") {
		t.Errorf("the run after the killed one did not say it cleaned up what that left:\n%s", out["stderr"])
	}
	dev := strings.TrimPrefix(out["disk"], "/dev/")
	recs := map[string]costRecord{}
	for k, v := range out {
		if strings.HasPrefix(k, "record.") {
			var rec costRecord
			decodeJSON(t, k, v, &rec)
			recs[rec.Label] = rec
		}
	}
	if len(recs) != 3 {
		t.Fatalf("records of %d labels, want xfs, xfs+luks2 and xfs+luks2-512", len(recs))
	}
	for label, sector := range map[string]int{"xfs": 0, "xfs+luks2": 4096, "xfs+luks2-512": 512} {
		rec, ok := recs[label]
		if !ok {
			t.Errorf("no record labelled %s", label)
			continue
		}
		tg, e := rec.Target, rec.Target.Encryption
		t.Logf("%s: %s on %s, encryption %+v", label, tg.FSType, tg.StackText, e)
		if tg.FSType != "xfs" || rec.Order != "interleaved" {
			t.Errorf("%s: filesystem %q, order %q, want xfs, interleaved", label, tg.FSType, rec.Order)
		}
		for _, w := range rec.Workloads {
			for i, run := range w.Runs {
				if run.HostCPU <= 0 {
					t.Errorf("%s: %s run %d: no host CPU per I/O", label, w.Params.Name, i+1)
				}
			}
		}
		if sector == 0 {
			if e != nil || tg.Device != dev+"1" {
				t.Errorf("xfs: on %s with encryption %+v, want plain on %s1", tg.Device, e, dev)
			}
			continue
		}
		if e == nil {
			t.Errorf("%s: no encryption in the record (on %s)", label, tg.StackText)
			continue
		}
		if e.Mapper != dev+"1_crypt" || e.LUKSVersion != 2 || e.Cipher != "aes-xts-plain64" || e.KeyBits != 512 || e.SectorBytes != sector ||
			e.AES == nil || e.EncMiBps <= 0 || e.DecMiBps <= 0 {
			t.Errorf("%s: encryption %+v, want %s1_crypt, LUKS2 aes-xts-plain64 512-bit, %d-byte sectors, AES known, cryptsetup benchmark's figures", label, e, dev, sector)
		}
	}
	var cmp struct {
		Schema  string   `json:"schema"`
		By      string   `json:"by"`
		Metrics []string `json:"metrics"`
		Groups  []struct {
			Name string `json:"name"`
		} `json:"groups"`
		Notes []string `json:"notes"`
	}
	decodeJSON(t, "comparison", out["json"], &cmp)
	var groups []string
	for _, g := range cmp.Groups {
		groups = append(groups, g.Name)
	}
	if cmp.By != "label" || strings.Join(groups, " ") != "xfs xfs+luks2 xfs+luks2-512" || !strings.Contains(strings.Join(cmp.Metrics, ","), "host CPU per I/O") {
		t.Errorf("comparison by %s of %v with %v: want by label, xfs xfs+luks2 xfs+luks2-512, with the host's CPU per I/O", cmp.By, groups, cmp.Metrics)
	}
	for _, g := range []string{"xfs+luks2", "xfs+luks2-512"} {
		found := false
		for _, n := range cmp.Notes {
			found = found || strings.HasPrefix(n, g+": LUKS2 aes-xts-plain64, 512-bit key") && strings.Contains(n, "of the cipher's in-memory speed")
		}
		if !found {
			t.Errorf("no note of %s's cipher and its in-memory speed: %q", g, cmp.Notes)
		}
	}
	if out["html.exit"] != "0" || !strings.Contains(out["html"], "host CPU per I/O") {
		t.Errorf("compare --cpu -o html: exit %s, no host CPU row", out["html.exit"])
	}
	if keep := os.Getenv("DISKPREP_GUEST_KEEP"); keep != "" {
		writeTestFile(t, filepath.Join(keep, "encrypt-cost.html"), out["html"])
		b, _ := json.MarshalIndent(cmp, "", "  ")
		writeTestFile(t, filepath.Join(keep, "encrypt-cost.json"), string(b))
		for k, v := range out {
			if strings.HasPrefix(k, "record.") {
				writeTestFile(t, filepath.Join(keep, "encrypt-cost-records", strings.TrimPrefix(k, "record.")+".json"), v)
			}
		}
	}
	for _, k := range []string{"left.mounts", "left.dm", "left.luks", "left.keys", "left.fstab", "left.crypttab"} {
		if out[k] != "" {
			t.Errorf("%s after fscompare --encrypt: %s", k, out[k])
		}
	}
}
