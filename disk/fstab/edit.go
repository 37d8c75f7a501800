package fstab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/diskprep/diskprep/internal/atomicfile"
)

// BackupSuffix is appended to the fstab file name to name the copy of the
// previous content kept by every change.
const BackupSuffix = ".diskprep.bak"

// Change turns the parsed lines of an fstab into the lines to write; nil
// lines (and no error) mean there is nothing to change.
type Change func(lines []Line) ([]Line, error)

// Editor carries out one edit of the fstab at path: Edit on the live
// machine, a fake's in-memory file in tests.
type Editor func(path string, change Change) error

// Add appends e, marked as diskprep's own, to the fstab at path (created when
// missing). An entry with the same spec and mount point already present,
// managed or not, leaves the file alone and returns changed=false. The mount
// point taken by another device, or the device already mounted elsewhere, is
// an error wrapping ErrConflict that names the existing line. The marker
// line above e is dated with at's day (UTC).
func Add(path string, e Entry, at time.Time) (changed bool, err error) {
	return AddWith(Edit, path, e, at)
}

// AddWith is Add through edit.
func AddWith(edit Editor, path string, e Entry, at time.Time) (changed bool, err error) {
	_, changed, err = ReplaceWith(edit, path, nil, e, at)
	return changed, err
}

// Replace is Remove of the managed entries matching stale, then Add of e, in
// one atomic write: for a disk prepared again (--wipe gives its filesystem a
// new UUID), so the old line goes and the new one comes with no moment, and
// no crash, that leaves both or neither. A managed entry identical to e is
// kept as it is. stale may be nil.
func Replace(path string, stale func(Entry) bool, e Entry, at time.Time) (removed []Entry, changed bool, err error) {
	return ReplaceWith(Edit, path, stale, e, at)
}

// ReplaceWith is Replace through edit.
func ReplaceWith(edit Editor, path string, stale func(Entry) bool, e Entry, at time.Time) (removed []Entry, changed bool, err error) {
	if e.Spec == "" || e.File == "" {
		return nil, false, fmt.Errorf("add fstab entry: spec and mount point are required")
	}
	err = edit(path, func(lines []Line) ([]Line, error) {
		removed = nil
		if stale != nil {
			lines, removed = removeManaged(lines, func(x Entry) bool {
				return stale(x) && !(sameSpec(x.Spec, e.Spec) && sameTarget(x.File, e.File))
			})
		}
		out, added, err := addEntry(path, lines, e, at)
		if err != nil {
			return nil, err
		}
		changed = added || len(removed) > 0
		if !changed {
			return nil, nil
		}
		return out, nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("add %s to fstab: %w", e.File, err)
	}
	return removed, changed, nil
}

func addEntry(path string, lines []Line, e Entry, at time.Time) ([]Line, bool, error) {
	if Has(lines, e) {
		return lines, false, nil
	}
	for _, l := range lines {
		if l.Entry == nil {
			continue
		}
		if sameFile(l.Entry.File, e.File) {
			return nil, false, fmt.Errorf("mount point %s is already in %s at line %d: %q: %w", e.File, path, l.num, l.Raw, ErrConflict)
		}
		if sameSpec(l.Entry.Spec, e.Spec) {
			return nil, false, fmt.Errorf("%s is already in %s at line %d: %q: %w", e.Spec, path, l.num, l.Raw, ErrConflict)
		}
	}
	out := append([]Line(nil), lines...)
	if n := len(out); n > 0 {
		out[n-1].noNewline = false
	}
	out = append(out,
		Line{Raw: MarkerLine(e, at.UTC().Format("2006-01-02")), Marker: true, MarkerSpec: e.Spec},
		Line{Raw: EntryLine(e), Entry: &e, Managed: true},
	)
	return out, true, nil
}

// Remove drops the diskprep-managed entries for which match returns true,
// together with their marker lines, and returns them. Entries without
// diskprep's marker are never removed, whatever match says. A missing fstab
// has nothing to remove.
func Remove(path string, match func(Entry) bool) (removed []Entry, err error) {
	return RemoveWith(Edit, path, match)
}

// RemoveWith is Remove through edit.
func RemoveWith(edit Editor, path string, match func(Entry) bool) (removed []Entry, err error) {
	err = edit(path, func(lines []Line) ([]Line, error) {
		var out []Line
		out, removed = removeManaged(lines, match)
		if len(removed) == 0 {
			return nil, nil
		}
		return out, nil
	})
	if err != nil {
		return nil, fmt.Errorf("remove from fstab: %w", err)
	}
	return removed, nil
}

func removeManaged(lines []Line, match func(Entry) bool) ([]Line, []Entry) {
	drop := make([]bool, len(lines))
	var removed []Entry
	for i, l := range lines {
		// Managed implies a marker line at i-1.
		if l.Managed && match(*l.Entry) {
			drop[i], drop[i-1] = true, true
			removed = append(removed, *l.Entry)
		}
	}
	if len(removed) == 0 {
		return lines, nil
	}
	out := make([]Line, 0, len(lines))
	for i, l := range lines {
		if !drop[i] {
			out = append(out, l)
		}
	}
	// A removed last line takes the file's missing final newline with it;
	// the new last line then ends with one, as a file should.
	return out, removed
}

// Managed lists the diskprep-managed entries of an fstab content for which
// match returns true: what Remove would take out, for a dry run.
func Managed(data []byte, match func(Entry) bool) ([]Entry, error) {
	lines, err := Parse(data)
	if err != nil {
		return nil, err
	}
	_, found := removeManaged(lines, match)
	return found, nil
}

// Edit is the live Editor: it runs change over the parsed file under an
// exclusive lock and, when it returns lines (nil means nothing to do),
// backs up the old content and replaces the file atomically.
func Edit(path string, change Change) error { return EditSteps(path, change, nil) }

// EditSteps is Edit calling step, when not nil, at each step boundary
// ("parsed", "backed-up", "replaced"), where the crash tests kill it.
func EditSteps(path string, change Change, step func(name string)) error {
	if step == nil {
		step = func(string) {}
	}
	target, err := resolve(path)
	if err != nil {
		return err
	}
	unlock, err := lockDir(filepath.Dir(target))
	if err != nil {
		return err
	}
	defer unlock()
	removeStaleTemps(target)

	perm := fs.FileMode(0o644)
	old, err := os.ReadFile(target)
	existed := err == nil
	var st os.FileInfo
	switch {
	case existed:
		if st, err = os.Stat(target); err != nil {
			return err
		}
		perm = st.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist):
	default:
		return err
	}
	lines, err := Parse(old)
	if err != nil {
		return fmt.Errorf("%s: %w", target, err)
	}
	out, err := change(lines)
	if err != nil || out == nil {
		return err
	}
	step("parsed")
	if existed {
		backup := target + BackupSuffix
		if err := atomicfile.Write(backup, old, perm); err != nil {
			return fmt.Errorf("back up %s: %w", target, err)
		}
		// atomicfile keeps an older backup's mode; the backup must not be
		// more readable than the file it copies.
		if err := os.Chmod(backup, perm); err != nil {
			return fmt.Errorf("back up %s: %w", target, err)
		}
		keepOwner(backup, st)
		step("backed-up")
	}
	if err := atomicfile.Write(target, Render(out), perm); err != nil {
		return err
	}
	keepOwner(target, st)
	step("replaced")
	return nil
}

// removeStaleTemps deletes the temporary files a killed earlier edit left
// beside the target. Safe under the lock: only an edit of this same file
// makes temporaries with these names.
func removeStaleTemps(target string) {
	dir, base := filepath.Split(target)
	for _, name := range []string{base, base + BackupSuffix} {
		stale, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix+globEscape(name)+"-*"))
		for _, p := range stale {
			os.Remove(p)
		}
	}
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// resolve follows symlinks to the file that must be rewritten, so that
// replacing it does not turn the link into a plain file. A dangling link
// resolves to the missing target, which is then created.
func resolve(path string) (string, error) {
	p := path
	for range 40 {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.Mode().IsRegular() {
				return "", fmt.Errorf("%s is not a regular file", p)
			}
			return p, nil
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = dest
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// lockDir takes flock(2) on the directory rather than on a lock file next to
// fstab, so no extra file is left in /etc; a killed holder releases it.
func lockDir(dir string) (func(), error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	for {
		err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { d.Close() }, nil
}

// keepOwner gives the rewritten file the previous one's owner; best effort,
// as only root can chown and a non-root caller made a file it owns anyway.
func keepOwner(path string, old os.FileInfo) {
	if old == nil {
		return
	}
	if s, ok := old.Sys().(*syscall.Stat_t); ok {
		_ = os.Lchown(path, int(s.Uid), int(s.Gid))
	}
}

// Has says whether lines already hold e as Add would leave it: an entry
// for the same device at the same mount point, managed or not.
func Has(lines []Line, e Entry) bool {
	for _, l := range lines {
		if l.Entry != nil && sameSpec(l.Entry.Spec, e.Spec) && sameTarget(l.Entry.File, e.File) {
			return true
		}
	}
	return false
}
