package hwinfo

import "path/filepath"

// Roots are where a command finds the live machine's kernel interfaces and
// its own state: the one set of paths disk and bench are given (STYLE.md
// rule 5). The zero value is the live machine. A test points them at a
// temporary tree; hwinfo.Read's Options.Root (the --root fixture of the
// inventory) is another thing: facts about a machine, not the one to act on.
type Roots struct {
	// Sys, Proc and Dev stand for /sys, /proc and /dev.
	Sys, Proc, Dev string
	// Root stands for "/" for the host's own files: etc/fstab,
	// run/diskprep (locks, loop records), run/udev/control, proc/1/comm (which
	// init runs: a test's temporary root says "not systemd").
	Root string
}

// RootsUnder is the Roots of a whole tree at dir (dir/sys, dir/proc ...).
func RootsUnder(dir string) Roots {
	return Roots{Sys: filepath.Join(dir, "sys"), Proc: filepath.Join(dir, "proc"), Dev: filepath.Join(dir, "dev"), Root: dir}
}

// SysPath joins elem under the sysfs root.
func (r Roots) SysPath(elem ...string) string { return join(r.Sys, "/sys", elem) }

// ProcPath joins elem under the procfs root.
func (r Roots) ProcPath(elem ...string) string { return join(r.Proc, "/proc", elem) }

// DevPath joins elem under the device directory.
func (r Roots) DevPath(elem ...string) string { return join(r.Dev, "/dev", elem) }

// HostPath joins elem ("etc/fstab", "run/diskprep") under Root.
func (r Roots) HostPath(elem ...string) string { return join(r.Root, "/", elem) }

// StateDir is diskprep's own state on the host: locks and loop records.
func (r Roots) StateDir() string { return r.HostPath("run/diskprep") }

func join(dir, live string, elem []string) string {
	if dir == "" {
		dir = live
	}
	return filepath.Join(append([]string{dir}, elem...)...)
}
