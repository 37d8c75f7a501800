package guesttest

import (
	"regexp"
	"strings"
	"testing"
)

// Scenario f of issue 10: disks that fail under diskprep, on a real kernel.
// Reads fail through device-mapper (an error target over part of an
// emulated SATA disk, or swapped in under a bench's test file mid-run);
// writes fail through QEMU's blkdebug on the emulated disk itself
// (guest.sh's badwrite key), because prepare refuses a dm device as a
// target, rightly: the disk must be a real one for the kernel's partition
// parser, udev and the O_EXCL open to be the real thing.
//
// One boot does it all (about 20 s under TCG).

// faultScript prints, between "@@ NAME" lines, what the Go side judges.
const faultScript = `set -u
byid=/dev/disk/by-id/ata-QEMU_HARDDISK_
mark() { echo "@@ $1"; }

# A device whose reads fail from 64 MiB on: a sequential read of the whole
# device starts well and fails mid-run.
a=${byid}READFAIL1 s=$(blockdev --getsz ${byid}READFAIL1)
dmsetup create rdev --table "0 131072 linear $a 0
131072 $((s - 131072)) error"
diskprep bench /dev/mapper/rdev --workload name=seqread,rw=read,bs=1M,size=256M,runtime=60s \
	--results /root/res-dev >/root/out 2>/root/err
rc=$?
mark dev.exit; echo $rc
mark dev.stderr; cat /root/err
mark dev.saved; find /root/res-dev -type f 2>/dev/null

# A directory whose test file's blocks start failing once the run reads
# them: only the file's extents are swapped for an error target, so the
# filesystem's own metadata (the unlink of the test file) still works.
b=${byid}DIRFAIL1 s=$(blockdev --getsz ${byid}DIRFAIL1)
dmsetup create rdir --table "0 $s linear $b 0"
dm=$(basename "$(readlink -f /dev/mapper/rdir)")
mkfs.ext4 -q /dev/mapper/rdir && mkdir -p /mnt/rdir && mount /dev/mapper/rdir /mnt/rdir
r0=$(awk '{print $1}' /sys/block/$dm/stat)
diskprep bench /mnt/rdir --workload name=seqread,rw=read,bs=64k,size=64M,runtime=60s \
	--results /root/res-dir >/root/out 2>/root/err &
pid=$!
swapped=no
while kill -0 $pid 2>/dev/null; do
	if [ $(( $(awk '{print $1}' /sys/block/$dm/stat) - r0 )) -gt 200 ]; then
		f=$(ls /mnt/rdir/diskprep-bench.*.tmp)
		filefrag -e -b512 "$f" | awk -F: '/^ *[0-9]+:/ { split($3, p, /\.\./); print p[1] + 0, p[2] + 0 }' | sort -n |
			awk -v size=$s -v dev=$b 'BEGIN { pos = 0 }
				{ if ($1 > pos) print pos, $1 - pos, "linear", dev, pos; print $1, $2 - $1 + 1, "error"; pos = $2 + 1 }
				END { if (pos < size) print pos, size - pos, "linear", dev, pos }' >/root/bad.table
		dmsetup load rdir /root/bad.table && dmsetup resume rdir && swapped=yes
		break
	fi
	sleep 0.1
done
wait $pid
rc=$?
mark dir.exit; echo $rc
mark dir.swapped; echo $swapped
mark dir.stderr; cat /root/err
mark dir.saved; find /root/res-dir -type f 2>/dev/null
mark dir.left; ls -A /mnt/rdir
dmsetup load rdir --table "0 $s linear $b 0" && dmsetup resume rdir
umount /mnt/rdir && mount /dev/mapper/rdir /mnt/rdir
mark dir.left-on-disk; ls -A /mnt/rdir
umount /mnt/rdir

# Disks whose writes fail: in mkfs (XFS's AG 2 header: partition 1 starts
# at sector 2048, 4 AGs of 65408 4-KiB blocks, so AG 2 is at sector
# 1048576) and in the GPT (the last sector: the backup header).
cp /etc/fstab /root/fstab.before
for spec in MKFSFAIL1:xfs GPTFAIL1:ext4; do
	id=${spec%:*} fs=${spec#*:}
	dev=$(readlink -f $byid$id) name=$(basename "$(readlink -f $byid$id)")
	diskprep prepare $byid$id --fs $fs --mount /mnt/$id --persist --yes >/root/out 2>/root/err
	rc=$?
	mark $id.exit; echo $rc
	mark $id.stderr; cat /root/err
	mark $id.fstab; diff /root/fstab.before /etc/fstab
	mark $id.mounts; grep "^$dev" /proc/mounts
	mark $id.holders; ls /sys/block/$name/holders /sys/block/$name/$name*/holders 2>/dev/null | grep -v ':$'
	mark $id.locks; cat /run/diskprep/locks/* 2>/dev/null
	diskprep prepare $byid$id --fs $fs --mount /mnt/$id --persist --yes >/root/out 2>/root/err
	rc=$?
	mark $id.rerun.exit; echo $rc
	mark $id.rerun.stderr; cat /root/err
done
mark loops; losetup -a
mark maps; dmsetup ls | awk '{print $1}' | sort
mark end
`

// splitMarked splits a guest script's output at its "@@ NAME" lines.
func splitMarked(out string) map[string]string {
	m := map[string]string{}
	name := ""
	for _, line := range strings.SplitAfter(out, "\n") {
		if n, ok := strings.CutPrefix(line, "@@ "); ok {
			name = strings.TrimSpace(n)
			m[name] = ""
			continue
		}
		if name != "" {
			m[name] += line
		}
	}
	for k, v := range m {
		m[k] = strings.TrimRight(v, "\n")
	}
	return m
}

func TestScenarioFailingDisks(t *testing.T) {
	parallel(t)
	opt := Options{Disks: []string{
		"sata-ssd:256M:serial=READFAIL1",
		"sata-ssd:256M:serial=DIRFAIL1",
		"sata-ssd:1G:serial=MKFSFAIL1,badwrite=1048576",
		"sata-ssd:64M:serial=GPTFAIL1,badwrite=131071",
	}}
	r := Run(t, opt, "sh", "-c", faultScript)
	out := splitMarked(r.Stdout)
	if _, ok := out["end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	t.Logf("guest stdout:\n%s", r.Stdout)

	// bench: exit 1, one line naming the device and the errno, no record.
	oneLine := func(key string, want ...*regexp.Regexp) {
		t.Helper()
		msg := out[key]
		if strings.Count(msg, "\n") != 0 || msg == "" {
			t.Errorf("%s: not one line:\n%s", key, msg)
		}
		for _, re := range want {
			if !re.MatchString(msg) {
				t.Errorf("%s: %q does not match %s", key, msg, re)
			}
		}
	}
	for _, c := range []struct{ name, where string }{
		{"dev", `/dev/mapper/rdev \(dm-\d+\)`},
		{"dir", `/mnt/rdir \(dm-\d+\)`},
	} {
		if out[c.name+".exit"] != "1" {
			t.Errorf("bench on a failing %s: exit %s, want 1", c.name, out[c.name+".exit"])
		}
		// A run of 30 s or more says each step on stderr even without a
		// terminal ("[1/1] seqread  ETA 59s"); the failure is the one
		// line besides them, and the last.
		var rest []string
		for _, l := range strings.Split(out[c.name+".stderr"], "\n") {
			if !progressLine.MatchString(l) {
				rest = append(rest, l)
			}
		}
		out[c.name+".stderr"] = strings.Join(rest, "\n")
		oneLine(c.name+".stderr", regexp.MustCompile(`^diskprep: workload seqread on `+c.where+`: .*pread at offset \d+: input/output error \(EIO\)$`))
		if out[c.name+".saved"] != "" {
			t.Errorf("bench on a failing %s saved %s", c.name, out[c.name+".saved"])
		}
	}
	// The device's reads failed where the error target starts, after 64 MiB
	// of good reads: mid-run, not at the first I/O.
	if !strings.Contains(out["dev.stderr"], "at offset 67108864:") {
		t.Errorf("the device's reads did not fail at 64 MiB: %s", out["dev.stderr"])
	}
	if out["dir.swapped"] != "yes" {
		t.Errorf("the test file's blocks were not made to fail during the run (bench ended first?)")
	}
	for _, k := range []string{"dir.left", "dir.left-on-disk"} {
		if out[k] != "lost+found" {
			t.Errorf("%s: the directory holds %q, want only lost+found", k, out[k])
		}
	}

	// prepare: exit 1, one line naming the step; no fstab line, no mount,
	// nothing stacked, no lock held; a rerun refuses the half-made disk
	// instead of taking it as prepared.
	for _, c := range []struct {
		id, step, rerun string
	}{
		{"MKFSFAIL1", `^diskprep: make xfs on /dev/sd[a-z]+1: mkfs\.xfs .*Input/output error`, `xfs \(unfinished: mkfs was interrupted\)`},
		{"GPTFAIL1", `^diskprep: write GPT on /dev/sd[a-z]+: .*input/output error$`, `PMBR \(damaged: `},
	} {
		if out[c.id+".exit"] != "1" {
			t.Errorf("%s: prepare exit %s, want 1", c.id, out[c.id+".exit"])
		}
		oneLine(c.id+".stderr", regexp.MustCompile(c.step))
		for _, k := range []string{"fstab", "mounts", "holders", "locks"} {
			if v := out[c.id+"."+k]; v != "" {
				t.Errorf("%s: left behind (%s):\n%s", c.id, k, v)
			}
		}
		if out[c.id+".rerun.exit"] != "3" {
			t.Errorf("%s: a rerun on the half-made disk: exit %s, want 3 (refused)", c.id, out[c.id+".rerun.exit"])
		}
		// Its last line: the minimal guest has no os-release, which
		// diskprep warns about first.
		rerun := out[c.id+".rerun.stderr"]
		rerun = rerun[strings.LastIndex(rerun, "\n")+1:]
		if !regexp.MustCompile(`^diskprep: refusing to prepare sd[a-z]+: .*` + c.rerun + `.*pass --wipe`).MatchString(rerun) {
			t.Errorf("%s: the rerun's refusal does not name the half-made state (%s): %s", c.id, c.rerun, rerun)
		}
	}
	if out["loops"] != "" {
		t.Errorf("loop devices left: %s", out["loops"])
	}
	if out["maps"] != "rdev\nrdir" {
		t.Errorf("device-mapper devices: %q, want only the test's rdev and rdir", out["maps"])
	}
}

// progressLine is bench's step line on a stderr that is no terminal.
var progressLine = regexp.MustCompile(`^\[\d+/\d+\] \S+`)

// runMarked runs script in a guest with disks and returns its marked
// sections (splitMarked), failing the test unless it ran to "@@ end".
func runMarked(t *testing.T, disks []string, script string) map[string]string {
	t.Helper()
	return runMarkedOpts(t, Options{Disks: disks}, script)
}

// runMarkedOpts is runMarked with the guest's other options.
func runMarkedOpts(t *testing.T, opt Options, script string) map[string]string {
	t.Helper()
	r := Run(t, opt, "sh", "-c", script)
	out := splitMarked(r.Stdout)
	if _, ok := out["end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	return out
}

// lastLine is a section's last line: the "exit N" a script echoes after
// a command.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
