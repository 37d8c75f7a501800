package disk_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every destructive effect in every golden effect log comes after the
// guard's decision on that disk in the same run: the lock on its device
// number (or, for a new image, on the image), which prepare and release
// take once the guard has looked and hold to the end. A destructive
// effect added without passing the guard fails here.
func TestGuardBeforeEveryDestructiveEffect(t *testing.T) {
	// The stack layer's logs are held to the same rule.
	logs, err := filepath.Glob(filepath.Join("testdata", "effects", "*.log"))
	stacked, err2 := filepath.Glob(filepath.Join("stack", "testdata", "effects", "*.log"))
	logs, err = append(logs, stacked...), errors.Join(err, err2)
	if err != nil || len(logs) < 30 {
		t.Fatalf("golden effect logs: %d found, %v", len(logs), err)
	}
	destructive := 0
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		n, problems := unguarded(strings.Split(string(b), "\n"))
		destructive += n
		for _, p := range problems {
			t.Errorf("%s: %s", path, p)
		}
	}
	if destructive < 100 {
		t.Errorf("only %d destructive effects found in %d logs: the classifier lost them", destructive, len(logs))
	}
}

// The classifier itself: a wipe of a disk nobody locked is caught, one of
// a partition of a locked disk is not, and a stack volume needs a lock of
// some member disk.
func TestGuardInvariantCatches(t *testing.T) {
	for _, c := range []struct {
		log  []string
		want int // problems
	}{
		{[]string{"! run wipefs --all /dev/sdb"}, 1},
		{[]string{"  lock /run/diskprep/locks/8:16.lock", "! run wipefs --all /dev/sdb1"}, 0},
		{[]string{"  lock /run/diskprep/locks/8:32.lock", "! write /dev/sdb 0+512"}, 1},
		{[]string{"  lock /run/diskprep/locks/7:3.lock", "! run mkfs.ext4 -q /dev/loop3p2"}, 0},
		{[]string{"! run lvcreate --name x vg"}, 1},
		{[]string{"  lock /run/diskprep/locks/8:16.lock", "! run mkfs.xfs /dev/md/data"}, 0},
		{[]string{"! create-image /var/tmp/a.img 1024"}, 1},
		{[]string{"  lock /run/diskprep/locks/image-00.lock", "! create-image /var/tmp/a.img 1024"}, 0},
		{[]string{"! run wipefs --all /dev/sdb -> exit 1"}, 0}, // failed: wrote nothing
	} {
		if _, got := unguarded(c.log); len(got) != c.want {
			t.Errorf("%q: %d problems %q, want %d", c.log, len(got), got, c.want)
		}
	}
}

var (
	lockLine  = regexp.MustCompile(`^  lock /run/diskprep/locks/(.+)\.lock$`)
	diskNames = regexp.MustCompile(`^/dev/(sd[a-z]+|vd[a-z]+|loop\d+|nvme\d+n\d+)(p?\d+)?$`)
)

// unguarded counts the destructive effects of one log and says which come
// before any lock of their disk.
func unguarded(lines []string) (destructive int, problems []string) {
	locked := map[string]bool{} // "8:16", "image-…"
	anyDisk := false
	for i, l := range lines {
		if m := lockLine.FindStringSubmatch(l); m != nil {
			locked[m[1]] = true
			if !strings.HasPrefix(m[1], "image-") {
				anyDisk = true
			}
			continue
		}
		if !strings.HasPrefix(l, "! ") || strings.Contains(l, " -> ") {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(l, "! "))
		devs, stack, image := destroys(f)
		if len(devs) == 0 && !stack && !image {
			continue
		}
		destructive++
		switch {
		case image:
			if !anyLocked(locked, "image-") {
				problems = append(problems, fmt.Sprintf("line %d %q: no image lock before it", i+1, l))
			}
		case stack && len(devs) == 0:
			if !anyDisk {
				problems = append(problems, fmt.Sprintf("line %d %q: no disk locked before it", i+1, l))
			}
		}
		for _, d := range devs {
			num, ok := devnum(d)
			switch {
			case !ok && !anyDisk:
				problems = append(problems, fmt.Sprintf("line %d %q: %s, a stack volume, with no disk locked before it", i+1, l, d))
			case ok && !locked[num]:
				problems = append(problems, fmt.Sprintf("line %d %q: %s (%s) not locked before it", i+1, l, d, num))
			}
		}
	}
	return destructive, problems
}

func anyLocked(locked map[string]bool, prefix string) bool {
	for k := range locked {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// destroys names the devices an effect destroys data on; stack is set for
// a tool that writes a volume group or array named otherwise, image for
// an image file made or emptied.
func destroys(f []string) (devs []string, stack, image bool) {
	if len(f) < 2 {
		return nil, false, false
	}
	devArgs := func(args []string) []string {
		var out []string
		for _, a := range args {
			if strings.HasPrefix(a, "/dev/") {
				out = append(out, a)
			}
		}
		return out
	}
	switch f[0] {
	case "write", "BLKPG-add", "BLKPG-del", "BLKRRPART":
		return []string{f[1]}, false, false
	case "create-image", "empty-image":
		return nil, false, true
	case "run":
		switch f[1] {
		case "wipefs", "mkswap", "blkdiscard", "pvcreate", "pvremove", "make-bcache", "mdadm":
			if f[1] == "mdadm" && !strings.Contains(strings.Join(f, " "), "--create") && !strings.Contains(strings.Join(f, " "), "--zero-superblock") {
				return nil, false, false
			}
			return devArgs(f[2:]), true, false
		case "lvcreate", "lvremove", "vgcreate", "vgremove", "lvconvert", "vgextend", "vgreduce":
			return devArgs(f[2:]), true, false
		}
		if strings.HasPrefix(f[1], "mkfs") {
			return devArgs(f[len(f)-1:]), true, false
		}
	}
	return nil, false, false
}

// devnum is the device number of the disk dev is on, as the fake numbers
// them (sdX as 8:16·n, vdX as 254:16·n, loopN as 7:N); ok is false for a
// stack volume (md, dm, bcache).
func devnum(dev string) (string, bool) {
	m := diskNames.FindStringSubmatch(dev)
	if m == nil {
		return "", false
	}
	disk := m[1]
	switch {
	case strings.HasPrefix(disk, "sd"):
		return fmt.Sprintf("8:%d", 16*int(disk[2]-'a')), true
	case strings.HasPrefix(disk, "vd"):
		return fmt.Sprintf("254:%d", 16*int(disk[2]-'a')), true
	case strings.HasPrefix(disk, "loop"):
		n, _ := strconv.Atoi(strings.TrimPrefix(disk, "loop"))
		return fmt.Sprintf("7:%d", n), true
	}
	return "", false
}
