package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/atomicfile"
)

// fscompareRunSchema names the JSON shape of an fscompareRun.
const fscompareRunSchema = "diskprep/fscompare-run/v1"

// fscompareRun is what an fscompare run going on may leave behind, written
// before it makes or mounts anything and removed once it has cleaned up:
// a run killed outright (SIGKILL, the machine's ssh host gone) leaves it,
// and the next fscompare of the same disk or image reads it to undo
// exactly what that run left, however far it got.
//
// It lives beside the target's lock, which fscompare holds from before the
// record is written until after it is removed: a record of another pid
// found while holding that lock is a dead run's.
type fscompareRun struct {
	Schema string `json:"schema"`
	PID    int    `json:"pid"`
	Device string `json:"device,omitempty"` // the DEVICE given
	Image  string `json:"image,omitempty"`  // the --image, by its real path
	// MadeImage: the image did not exist before the run: it goes.
	MadeImage bool `json:"made_image,omitempty"`
	// Mount is where each filesystem is mounted; MadeMount: a directory
	// the run made, removed once nothing is mounted there.
	Mount     string `json:"mount"`
	MadeMount bool   `json:"made_mount,omitempty"`
	// Encrypted: the run had LUKS2 columns, whose mapping a kill may have
	// left open (unmounted) on the DEVICE.
	Encrypted bool `json:"encrypted,omitempty"`
}

// fscompareRunPath is the record of the runs that hold lockPath.
func fscompareRunPath(lockPath string) string {
	locks := filepath.Dir(lockPath)
	name := strings.TrimSuffix(filepath.Base(lockPath), ".lock") + ".json"
	return filepath.Join(filepath.Dir(locks), "fscompare", name)
}

func (r fscompareRun) write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("record this fscompare run: %w", err)
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("record this fscompare run: %w", err)
	}
	return nil
}

// readFSCompareRun reads the record at path; nil when there is none, or
// none diskprep could have written (root's, not writable by others, its
// schema): the paths in it are unmounted and removed as root.
func readFSCompareRun(path string) *fscompareRun {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64<<10 {
		return nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var r fscompareRun
	if json.Unmarshal(b, &r) != nil || r.Schema != fscompareRunSchema || r.PID == os.Getpid() ||
		r.Mount != "" && !filepath.IsAbs(r.Mount) {
		return nil
	}
	return &r
}

// makeMountDir makes the temporary directory every filesystem of the run
// is mounted at, recording its name in rec (written to path) before
// making it, so a kill at any moment leaves no directory the record does
// not name. The first name tried is the same for every run on target, so
// the records of identical runs name one target; a random one follows
// when it exists (another run's, or anyone's: it is never reused).
func makeMountDir(rec *fscompareRun, path, target string) (string, error) {
	for i := range 10000 {
		dir := filepath.Join(os.TempDir(), "diskprep-fscompare-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		if i == 0 {
			dir = filepath.Join(os.TempDir(), "diskprep-fscompare-"+mountSlug(target))
		}
		rec.Mount, rec.MadeMount = dir, true
		if err := rec.write(path); err != nil {
			return "", err
		}
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("make a temporary directory in %s: every name tried exists", os.TempDir())
}

// mountSlug is target as a file name: its letters and digits, the rest
// as dashes ("/dev/loop3" -> "dev-loop3").
func mountSlug(target string) string {
	var b strings.Builder
	for _, r := range target {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-.")
	if s == "" || len(s) > 100 {
		return "target"
	}
	return s
}

// targetDisk finds in host the disk an fscompare works on: the DEVICE
// given, or the loop device backed by the image (real path); nil when
// there is none (an image not attached).
func targetDisk(host *hwinfo.Host, device, image string) *hwinfo.Disk {
	for i := range host.Disks {
		d := &host.Disks[i]
		if image != "" && d.LoopBackingFile == image {
			return d
		}
	}
	if image != "" || device == "" {
		return nil
	}
	if real, err := filepath.EvalSymlinks(device); err == nil {
		device = real
	}
	if d, p := host.Device(device); d != nil && p == nil {
		return d
	}
	return nil
}

// diskMounts lists the mount points of d and its partitions.
func diskMounts(d *hwinfo.Disk) []string {
	var points []string
	for _, mt := range d.Mounts {
		points = append(points, mt.Point)
	}
	for _, p := range d.Partitions {
		for _, mt := range p.Mounts {
			points = append(points, mt.Point)
		}
	}
	return points
}

// releaseKilledRun undoes what the fscompare run recorded in old, killed
// outright, left of the same target: its filesystem mounted at its
// directory (released by naming that mount point, which detaches an
// image's loop device with it), an image attached or made, its
// directory. The caller holds the target's lock, so that run is over; and
// only what it recorded is touched: a mount elsewhere on the disk stays
// (the plan refuses it, saying how to release it). It says what it does on
// progress, one line. When a release fails the error says, in one line,
// the command that finishes it; the record then stays for the next run.
func releaseKilledRun(ctx context.Context, old *fscompareRun, target, device, image string, yes bool, m *machine, deps disk.Deps, e *env, progress io.Writer) error {
	say := func(what, doing string) {
		if progress != nil {
			fmt.Fprintf(progress, "an earlier fscompare of %s ended without cleaning up (%s): %s\n", target, what, doing)
		}
	}
	host, err := m.readFacts(ctx, e.Root, e)
	if err != nil {
		return err
	}
	d := targetDisk(host, device, image)
	mounted := false
	if d != nil && old.Mount != "" {
		for _, p := range diskMounts(d) {
			mounted = mounted || p == old.Mount
		}
	}
	var releaseTarget string
	var ropts disk.ReleaseOptions
	switch {
	case mounted:
		say("mounted at "+old.Mount, "releasing it first")
		releaseTarget, ropts = old.Mount, disk.ReleaseOptions{RemoveImage: image != "" && old.MadeImage}
	case image != "" && d != nil && len(diskMounts(d)) == 0:
		say("attached to "+d.Path, "releasing it first")
		releaseTarget, ropts = image, disk.ReleaseOptions{RemoveImage: old.MadeImage}
	case image != "" && d == nil && old.MadeImage:
		if _, err := os.Lstat(image); err == nil {
			say("the image it made", "removing it first")
			releaseTarget, ropts = image, disk.ReleaseOptions{RemoveImage: true}
		}
	}
	if releaseTarget == "" && old.Encrypted && d != nil && openCrypt(d) {
		say("a LUKS2 mapping left open", "releasing the disk, its key slots destroyed")
		// --yes, as the run's own wipe of the disk takes it: the header
		// was cut short before its filesystem, which would bear the mark.
		releaseTarget, ropts = device, disk.ReleaseOptions{Wipe: true, Yes: yes}
	}
	if releaseTarget != "" {
		if _, err := m.release(ctx, releaseTarget, ropts, deps); err != nil {
			if !ropts.RemoveImage || errors.Is(err, context.Canceled) {
				return fmt.Errorf("release what an earlier fscompare left of %s: %w (diskprep release %s finishes it)", target, err, releaseTarget)
			}
			// Not an image diskprep made after all: it stays.
			if _, err := m.release(ctx, releaseTarget, disk.ReleaseOptions{}, deps); err != nil {
				return fmt.Errorf("release what an earlier fscompare left of %s: %w (diskprep release %s finishes it)", target, err, releaseTarget)
			}
		}
	}
	if old.MadeMount {
		// Empty once unmounted; one with files in it, or still a mount
		// point, stays.
		err := os.Remove(old.Mount)
		if err == nil && releaseTarget == "" {
			say("its directory "+old.Mount, "removed it")
		}
	}
	return nil
}

// leftoverHint is what a refusal of target because of its mounts adds when
// every one is a filesystem diskprep made (an fscompare --keep, a
// prepare): the command that releases them all.
func leftoverHint(host *hwinfo.Host, device, image, releaseTarget string) string {
	d := targetDisk(host, device, image)
	if d == nil {
		return ""
	}
	points := diskMounts(d)
	if len(points) == 0 {
		return ""
	}
	for _, p := range points {
		if _, err := hwinfo.ReadMarker(p); err != nil {
			return ""
		}
	}
	return fmt.Sprintf(" (diskprep made what is mounted there: diskprep release %s releases it)", releaseTarget)
}

// openCrypt says whether a partition of d holds an open LUKS mapping.
func openCrypt(d *hwinfo.Disk) bool {
	for _, p := range d.Partitions {
		if p.Crypt != nil && p.Crypt.Open {
			return true
		}
	}
	return false
}
