package guesttest

import (
	"strconv"
	"strings"
	"testing"
)

// Scenario e of issue 10: bench and fscompare on emulated devices. bench of
// an NVMe namespace with the quick set (reads only: a block device is not
// written without --allow-device-write) and fscompare of xfs and ext4 on a
// SATA disk complete in the guest, and every record they save carries the
// guest's real transport, model, serial and WWN of the disk, as the
// inventory has them. Sizes and runtimes are small for TCG: 64 MiB and 1 s
// per workload, one repetition.
//
// Before that fscompare, the same command is started with a store of its
// own and sent SIGHUP, as a dropped ssh session does, once its first test
// file is being laid out (issue 19): it must end with 129 and one line
// saying it was interrupted and released the disk, leave nothing mounted,
// no loop device, no fstab change, no temporary mount point and no record;
// the fscompare after it, unchanged, is the rerun that must converge.
//
// One boot (about 35-55 s under TCG; the SIGHUP run adds 4-8 s of it).

var benchDisks = []string{
	"nvme:1G:serial=NVME0001",
	"sata-hdd:1G:model=WDC WD40EFRX-68N32N0,serial=WD-WCC7K0000001,wwn=0x50014ee2b0000001,pbs=4096",
}

const benchScript = `set -u
mark() { echo "@@ $1"; }
sata=$(readlink -f /dev/disk/by-id/ata-WDC_WD40EFRX-68N32N0_WD-WCC7K0000001)
mark sata; echo $sata
cp /etc/fstab /root/fstab.before
diskprep bench /dev/nvme0n1 --set quick --size 64M --runtime 1s -o json --results /root/res-bench >/root/out 2>/root/err
rc=$?
mark bench.exit; echo $rc
mark bench; cat /root/out
mark bench.stderr; cat /root/err
# SIGHUP (a dropped ssh session) in the middle of the same fscompare: once
# its first test file is being laid out on the mounted xfs (at most 120 s),
# then what it left. The fscompare after it, unchanged, must converge.
tmp=${TMPDIR:-/tmp}
hup0=$(date +%s.%N)
diskprep fscompare $sata --fs xfs,ext4 --set quick --runtime 1s --repeat 1 --yes -o json --results /root/res-hup >/root/hup.out 2>/root/hup.err &
hup=$!
i=0
until ls "$tmp"/diskprep-fscompare-*/diskprep-bench.*.tmp >/dev/null 2>&1 || [ $i -ge 600 ] || ! kill -0 $hup 2>/dev/null; do
	sleep 0.2; i=$((i+1))
done
mark hup.mid; ls "$tmp"/diskprep-fscompare-*/diskprep-bench.*.tmp 2>/dev/null
mark hup.mounted; grep "^$sata" /proc/mounts
kill -HUP $hup
(sleep 120; kill -KILL $hup) >/dev/null 2>&1 &
dog=$!
wait $hup
rc=$?
kill $dog 2>/dev/null
mark hup.exit; echo $rc
mark hup.stderr; cat /root/hup.err
mark hup.stdout; cat /root/hup.out
mark hup.records; diskprep results list -o json --results /root/res-hup | sed -n 's/^ *"id": "\(.*\)",$/\1/p'
mark hup.mounts; grep "^$sata" /proc/mounts
mark hup.loops; losetup -a
mark hup.fstab; diff /root/fstab.before /etc/fstab
mark hup.tmpdirs; ls -d "$tmp"/diskprep-fscompare-* 2>/dev/null
mark hup.seconds; echo "$hup0 $(date +%s.%N)"
diskprep fscompare $sata --fs xfs,ext4 --set quick --runtime 1s --repeat 1 --yes -o json --results /root/res-fs >/root/out 2>/root/err
rc=$?
mark fscompare.exit; echo $rc
mark fscompare; cat /root/out
mark fscompare.stderr; cat /root/err
for id in $(diskprep results list -o json --results /root/res-fs | sed -n 's/^ *"id": "\(.*\)",$/\1/p'); do
	mark "record.$id"; diskprep results show $id -o json --results /root/res-fs
done
mark left.mounts; grep "^$sata" /proc/mounts
mark left.fstab; diff /root/fstab.before /etc/fstab
mark inv; diskprep inventory -o json
mark end
`

// recordJSON is the part of a result record the scenario reads.
type recordJSON struct {
	ID     string `json:"id"`
	Label  string `json:"label"`
	Target struct {
		Path       string `json:"path"`
		Kind       string `json:"kind"`
		Device     string `json:"device"`
		Disk       string `json:"disk"`
		Vendor     string `json:"vendor"`
		Model      string `json:"model"`
		Serial     string `json:"serial"`
		WWN        string `json:"wwn"`
		Transport  string `json:"transport"`
		Media      string `json:"media"`
		Rotational bool   `json:"rotational"`
		Virtual    bool   `json:"virtual"`
		SizeBytes  int64  `json:"size_bytes"`
		LogSec     int64  `json:"logical_sector_bytes"`
		PhySec     int64  `json:"physical_sector_bytes"`
		FSType     string `json:"fs_type"`
	} `json:"target"`
	Workloads []struct {
		Params struct {
			Name string `json:"name"`
			RW   string `json:"rw"`
		} `json:"params"`
		Runs []struct {
			Read *struct {
				IOBytes int64 `json:"io_bytes"`
			} `json:"read"`
			Write *struct {
				IOBytes int64 `json:"io_bytes"`
			} `json:"write"`
			HostSamples []struct {
				MemUsedBytes int64 `json:"mem_used_bytes"`
			} `json:"host_samples_per_s"`
			DeviceSamples []struct {
				Bytes int64 `json:"bytes"`
			} `json:"device_samples_per_s"`
		} `json:"runs"`
	} `json:"workloads"`
	// Health is the disk's SMART state (issue 12 item 6): QEMU's NVMe
	// controller and its SATA disks answer smartctl.
	Health *struct {
		Device string `json:"device"`
		Before *struct {
			TemperatureC *float64 `json:"temperature_c"`
			PowerOnHours *uint64  `json:"power_on_hours"`
		} `json:"before"`
		After *struct {
			TemperatureC *float64 `json:"temperature_c"`
		} `json:"after"`
		Note string `json:"note"`
	} `json:"device_health"`
}

func TestScenarioBenchOnEmulatedDisks(t *testing.T) {
	parallel(t)
	r := Run(t, Options{Disks: benchDisks}, "sh", "-c", benchScript)
	out := splitMarked(r.Stdout)
	if _, ok := out["end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	var inv inventoryJSON
	decodeJSON(t, "inventory", out["inv"], &inv)
	disk := func(name string) (d struct{ transport, media, model, serial, wwn string }) {
		for _, x := range inv.Disks {
			if x.Name == name {
				d.transport, d.media, d.model, d.serial, d.wwn = x.Transport, x.Media, x.Model, x.Serial, x.WWN
			}
		}
		return d
	}
	// identity: the record's disk is the inventory's, and the one asked for.
	identity := func(who string, rec recordJSON, name, transport, media, model, serial string) {
		t.Helper()
		tg := rec.Target
		inv := disk(name)
		if inv.serial != serial || inv.model != model || inv.transport != transport {
			t.Fatalf("the inventory shows %s as %+v, want %s %s %s", name, inv, transport, model, serial)
		}
		if tg.Disk != name || tg.Transport != transport || tg.Media != media || tg.Model != model ||
			tg.Serial != serial || tg.WWN != inv.wwn || !tg.Virtual || tg.SizeBytes != 1<<30 {
			t.Errorf("%s: record %s target %+v, want disk %s: %s %s, %s %s, WWN %q, virtual, 1 GiB", who, rec.ID, tg, name, transport, media, model, serial, inv.wwn)
		}
	}
	// observed: the host and device series and the disk's health before
	// and after, read with the guest's smartctl (issue 12 items 5, 6).
	observed := func(who string, rec recordJSON, dev string) {
		t.Helper()
		h := rec.Health
		if h == nil || h.Device != dev || h.Before == nil || h.Before.TemperatureC == nil || h.Before.PowerOnHours == nil || h.After == nil || h.After.TemperatureC == nil {
			t.Errorf("%s: device health %+v, want temperature and hours of %s before and after", who, h, dev)
		}
		for _, w := range rec.Workloads {
			for _, run := range w.Runs {
				var moved int64
				for _, s := range run.DeviceSamples {
					moved += s.Bytes
				}
				if len(run.HostSamples) == 0 || run.HostSamples[0].MemUsedBytes <= 0 || len(run.DeviceSamples) == 0 || moved <= 0 {
					t.Errorf("%s: %s: %d host samples, %d device samples moving %d bytes", who, w.Params.Name, len(run.HostSamples), len(run.DeviceSamples), moved)
				}
			}
		}
	}
	moved := func(who string, rec recordJSON, wantRW ...string) {
		t.Helper()
		var rws []string
		for _, w := range rec.Workloads {
			rws = append(rws, w.Params.RW)
			for _, run := range w.Runs {
				read := run.Read != nil && run.Read.IOBytes > 0
				write := run.Write != nil && run.Write.IOBytes > 0
				if strings.Contains(w.Params.RW, "read") != read || strings.Contains(w.Params.RW, "write") != write {
					t.Errorf("%s: %s moved read %v, write %v", who, w.Params.Name, read, write)
				}
			}
		}
		if strings.Join(rws, ",") != strings.Join(wantRW, ",") {
			t.Errorf("%s: workloads %v, want %v", who, rws, wantRW)
		}
	}

	// bench on the NVMe namespace: reads only.
	if out["bench.exit"] != "0" {
		t.Fatalf("bench: exit %s\n%s", out["bench.exit"], out["bench.stderr"])
	}
	if !strings.Contains(out["bench.stderr"], "skipped write workloads on block device /dev/nvme0n1") {
		t.Errorf("bench: no warning that the writes were skipped:\n%s", out["bench.stderr"])
	}
	var rec recordJSON
	decodeJSON(t, "bench record", out["bench"], &rec)
	if rec.Target.Kind != "device" || rec.Target.Path != "/dev/nvme0n1" || rec.Target.LogSec != 512 {
		t.Errorf("bench: target %+v, want the device /dev/nvme0n1", rec.Target)
	}
	identity("bench", rec, "nvme0n1", "nvme", "nvme", "QEMU NVMe Ctrl", "NVME0001")
	moved("bench", rec, "read", "randread")
	observed("bench", rec, "/dev/nvme0n1")

	// SIGHUP mid-fscompare (issue 19): 129, one line saying so, nothing left.
	sata := strings.TrimPrefix(out["sata"], "/dev/")
	hupped(t, out)

	// fscompare on the SATA disk, the same command run again as it is: a
	// record per filesystem, the first too.
	if out["fscompare.exit"] != "0" {
		t.Fatalf("fscompare after the SIGHUP one (the same command again, must converge): exit %s\n%s", out["fscompare.exit"], out["fscompare.stderr"])
	}
	var recs []recordJSON
	for k, v := range out {
		if strings.HasPrefix(k, "record.") {
			var rec recordJSON
			decodeJSON(t, k, v, &rec)
			recs = append(recs, rec)
		}
	}
	if len(recs) != 2 {
		t.Fatalf("fscompare saved %d records, want 2 (xfs, ext4)", len(recs))
	}
	for _, rec := range recs {
		who := "fscompare " + rec.Label
		if rec.Label != rec.Target.FSType || (rec.Label != "xfs" && rec.Label != "ext4") {
			t.Errorf("%s: record label %q, filesystem %q", who, rec.Label, rec.Target.FSType)
		}
		if rec.Target.Kind != "dir" || rec.Target.Device != sata+"1" {
			t.Errorf("%s: target %+v, want a directory on %s1", who, rec.Target, sata)
		}
		identity(who, rec, sata, "sata", "hdd", "WDC WD40EFRX-68N32N0", "WD-WCC7K0000001")
		moved(who, rec, "read", "write", "randread", "randwrite")
		observed(who, rec, "/dev/"+sata)
	}
	if !strings.Contains(out["fscompare"], `"diskprep/comparison/v1"`) {
		t.Errorf("fscompare printed no comparison:\n%s", out["fscompare"])
	}
	if out["left.mounts"] != "" || out["left.fstab"] != "" {
		t.Errorf("fscompare left %s mounted or /etc/fstab changed:\n%s\n%s", sata, out["left.mounts"], out["left.fstab"])
	}
}

// hupped checks what the fscompare sent SIGHUP mid-run gave and left.
func hupped(t *testing.T, out map[string]string) {
	t.Helper()
	sata := out["sata"]
	if secs := strings.Fields(out["hup.seconds"]); len(secs) == 2 {
		from, _ := strconv.ParseFloat(secs[0], 64)
		to, _ := strconv.ParseFloat(secs[1], 64)
		t.Logf("fscompare with SIGHUP: %.1fs of guest time, exit %s, stderr:\n%s", to-from, out["hup.exit"], out["hup.stderr"])
	}
	if out["hup.mid"] == "" || !strings.Contains(out["hup.mounted"], "/diskprep-fscompare-") {
		t.Fatalf("fscompare was not mid-run when sent SIGHUP (no test file on a mounted %s within 120 s): test files %q, mounts %q\nstderr:\n%s",
			sata, out["hup.mid"], out["hup.mounted"], out["hup.stderr"])
	}
	if out["hup.exit"] != "129" {
		t.Errorf("fscompare sent SIGHUP: exit %s, want 129 (128+SIGHUP)\nstderr:\n%s", out["hup.exit"], out["hup.stderr"])
	}
	// The progress lines ("fscompare: ...") come before; the command's own
	// word on the interruption is one line, the last.
	lines := strings.Split(out["hup.stderr"], "\n")
	want := "diskprep: interrupted by SIGHUP; released " + sata
	if last := lines[len(lines)-1]; last != want {
		t.Errorf("fscompare sent SIGHUP: last line of stderr %q, want %q\nstderr:\n%s", last, want, out["hup.stderr"])
	}
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "fscompare: ") || strings.Contains(l, "context canceled") {
			t.Errorf("fscompare sent SIGHUP: stderr line %q is neither progress nor the last line\nstderr:\n%s", l, out["hup.stderr"])
		}
	}
	if out["hup.stdout"] != "" || out["hup.records"] != "" {
		t.Errorf("fscompare sent SIGHUP printed %q and saved records %q, want neither", out["hup.stdout"], out["hup.records"])
	}
	for _, left := range []struct{ key, what string }{
		{"hup.mounts", sata + " (or a partition of it) mounted"},
		{"hup.loops", "loop devices"},
		{"hup.fstab", "an /etc/fstab changed from the copy taken before"},
		{"hup.tmpdirs", "temporary mount points"},
	} {
		if out[left.key] != "" {
			t.Errorf("fscompare sent SIGHUP left %s:\n%s", left.what, out[left.key])
		}
	}
}
