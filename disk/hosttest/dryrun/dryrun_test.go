package dryrun

import (
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
)

func TestDryRunComparisonCatches(t *testing.T) {
	mkfs := []string{"mkfs.xfs", "-L", "data", "/dev/sdb1"}
	mount := []string{"mount", "-t", "xfs", "/dev/sdb1", "/mnt/data"}
	plan := []disk.Action{
		{Text: "write GPT", Op: disk.OpWriteDevice, Path: "/dev/sdb", Regions: [][2]uint64{{0, 17408}, {419413504, 419430400}}},
		{Text: "  partition 1"},
		{Text: "make the kernel see sdb1", Op: disk.OpPartitions, Path: "/dev/sdb"},
		{Text: "mkfs", Op: disk.OpRun, Argv: mkfs},
		{Text: "mkdir -p /mnt/data", Op: disk.OpMkdir, Path: "/mnt/data", Maybe: true},
		{Text: "mount", Op: disk.OpRun, Argv: mount},
		{Text: "write marker", Op: disk.OpWriteFile, Path: "/mnt/data/" + disk.MarkerFile},
		{Text: "ensure in fstab", Op: disk.OpEditFstab, Maybe: true},
	}
	w := func(op string, args ...string) hosttest.Effect {
		return hosttest.Effect{Op: op, Args: args, Write: true}
	}
	done := []hosttest.Effect{
		w("write", "/dev/sdb", "446+66"), w("sync", "/dev/sdb"), w("write", "/dev/sdb", "419429888+512"),
		w("BLKRRPART", "/dev/sdb"), w("BLKPG-add", "/dev/sdb", "1", "1048576+417333248"),
		w("run", mkfs...),
		w("mkdir", stateDir+"mountpoints"), w("write-file", stateDir+"mountpoints/made-1"),
		w("mkdir", "/mnt/data"), w("run", mount...), w("write-file", "/mnt/data/"+disk.MarkerFile),
		w("remove", stateDir+"mountpoints/made-1"), w("edit-fstab", "/etc/fstab"),
	}
	without := func(i int) []hosttest.Effect {
		return append(append([]hosttest.Effect(nil), done[:i]...), done[i+1:]...)
	}
	with := func(i int, e hosttest.Effect) []hosttest.Effect {
		return append(append(append([]hosttest.Effect(nil), done[:i]...), e), done[i:]...)
	}
	failed := w("run", mount...)
	failed.Err = "exit 32"
	for _, c := range []struct {
		name     string
		effects  []hosttest.Effect
		complete bool
		bad      bool
	}{
		{"as listed", done, true, false},
		{"maybe steps not needed", without(12), true, false},
		{"an unlisted wipe", with(0, w("run", "wipefs", "--all", "/dev/sdb")), true, true},
		{"a write outside the table", with(2, w("write", "/dev/sdb", "1048576+512")), true, true},
		{"an unlisted mount", with(11, w("run", "mount", "/dev/sdc1", "/mnt/other")), true, true},
		{"mkfs skipped", without(5), true, true},
		{"the marker skipped", without(10), true, true},
		{"the table skipped", done[3:], true, true},
		{"out of order", append(with(5, w("run", mount...))[:7], done[8:]...), true, true},
		{"stopped after mkfs", done[:6], false, false},
		{"mount failed and stopped", append(done[:9:9], failed), false, false},
		{"stopped, then undone", append(done[:11:11], w("unmount", "/mnt/data")), false, false},
		{"stopped, then an unlisted unmount", append(done[:11:11], w("unmount", "/mnt/other")), false, true},
		{"stopped after skipping mkfs", without(5)[:9], false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := matchActions(plan, visibleWrites(c.effects), c.complete)
			if (len(got) > 0) != c.bad {
				t.Errorf("problems %q, want some: %v", got, c.bad)
			}
		})
	}

	// A placeholder binds to the one device of its kind the run names.
	image := []disk.Action{{Op: disk.OpRun, Argv: []string{"mkfs.ext4", disk.LoopPlaceholder + "p1"}}}
	bound, err := bindPlaceholders(image, []hosttest.Effect{w("run", "mkfs.ext4", "/dev/loop3p1")})
	if err != nil || bound[0].Argv[1] != "/dev/loop3p1" || image[0].Argv[1] != disk.LoopPlaceholder+"p1" {
		t.Errorf("bound %v (%v); the plan's own %v", bound, err, image)
	}
	if _, err := bindPlaceholders(image, []hosttest.Effect{w("run", "mkfs.ext4", "/dev/loop3p1"), w("run", "mkfs.ext4", "/dev/loop4p1")}); err == nil {
		t.Error("two loop devices bound to one placeholder")
	}
}

// The fake records what it is told: a run of Apply on it is there, with
// its plan, its actions and its effects.
