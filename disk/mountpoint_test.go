package disk_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
)

// The system's own directories are refused as mount points from the
// request alone, whatever the machine, after cleaning (so ".." cannot
// walk out of a harmless directory); new directories where data disks go
// are not.
func TestMountPointSystemDirectories(t *testing.T) {
	refused := []string{
		"/", "/etc", "/etc/ssh", "/usr", "/usr/local", "/usr/local/data", "/boot", "/boot/efi",
		"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/lib/modules/x",
		"/proc", "/proc/x", "/sys", "/sys/fs/x", "/dev", "/dev/shm", "/dev/x",
		"/root", "/run", "/tmp", "/var", "/var/lib", "/var/log", "/var/cache", "/var/spool", "/var/tmp",
		"/var/mail", "/var/run", "/var/lock",
		"/var/lib/diskprep", "/var/lib/diskprep/results", "/var/lib/diskprep/results/x", "/run/diskprep", "/run/diskprep/x",
		"/var/tmp/x/../../../../etc", "/srv/../etc/.", "//etc//", "/mnt/../usr/lib",
	}
	allowed := []string{
		"/srv", "/srv/data", "/mnt", "/mnt/x", "/data", "/home", "/home/x", "/opt/data", "/media/usb",
		"/var/tmp/x", "/var/lib/libvirt/images", "/var/lib/vm", "/var/log/app", "/tmp/x", "/root/scratch",
		"/run/media/disk", "/etcetera", "/usrdata", "/bootstrap", "/devices", "/var/libx",
	}
	req := func(point string) disk.Request {
		return disk.Request{Device: "sdb", Partitions: []disk.PartSpec{{FS: "xfs", Mount: point}}}
	}
	for _, p := range refused {
		err := req(p).Validate()
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "mount point") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want a one-line refusal", p, err)
		}
	}
	err := req("/var/tmp/x/../../../../etc").Validate()
	if want := "mount point /etc is in /etc, the system's own (/var/tmp/x/../../../../etc, cleaned)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want it to say %q", err, want)
	}
	for _, p := range allowed {
		if err := req(p).Validate(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// mountRig is a fake machine with one blank disk, sdb.
func mountRig(t *testing.T) (*hosttest.Host, disk.Planner) {
	t.Helper()
	h := hosttest.New()
	holdToDryRuns(t, h)
	h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: 2 << 30, Model: "FAKE", Serial: "S1"})
	h.Mkdir("/srv")
	return h, disk.Planner{Host: h, Protect: []string{"/srv/results/"}}
}

func planMount(h *hosttest.Host, pl disk.Planner, ps disk.PartSpec) (*disk.Plan, error) {
	if ps.FS == "" {
		ps.FS = "xfs"
	}
	return pl.PlanDisk(disk.Request{Device: "/dev/sdb", Partitions: []disk.PartSpec{ps}}, h.FactsNow())
}

// What only the host can tell is checked at planning, through the Host:
// where a symbolic link leads, what is there, and whether a new directory
// can be made. Each refusal is one line, wraps ErrRefused and is found
// before anything is written.
func TestPlanMountPoint(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(h *hosttest.Host)
		ps    disk.PartSpec
		want  string // "" plans
	}{
		{"link to /etc", func(h *hosttest.Host) { h.Symlink("/etc", "/mnt/cfg") }, disk.PartSpec{Mount: "/mnt/cfg"}, "is in /etc"},
		{"inside a link to /usr", func(h *hosttest.Host) { h.Mkdir("/usr"); h.Symlink("../usr", "/mnt/u") }, disk.PartSpec{Mount: "/mnt/u/new"}, "/usr/new is in /usr"},
		{"link to /var", func(h *hosttest.Host) { h.Mkdir("/var"); h.Symlink("/var", "/srv/v") }, disk.PartSpec{Mount: "/srv/v"}, "/var is a system directory"},
		{"link to nothing", func(h *hosttest.Host) { h.Symlink("/gone", "/mnt/dangling") }, disk.PartSpec{Mount: "/mnt/dangling"}, "leads nowhere"},
		{"a file", func(h *hosttest.Host) { h.SetFile("/mnt/f", []byte("x")) }, disk.PartSpec{Mount: "/mnt/f"}, "/mnt/f exists and is not a directory"},
		{"under a file", func(h *hosttest.Host) { h.SetFile("/mnt/f", []byte("x")) }, disk.PartSpec{Mount: "/mnt/f/a/b"}, "cannot be made: /mnt/f is not a directory"},
		{"not empty", func(h *hosttest.Host) { h.SetFile("/srv/full/a", nil); h.SetFile("/srv/full/b", nil) }, disk.PartSpec{Mount: "/srv/full"}, "/srv/full is not empty (a, b): mounting there hides it; pass --mount-over"},
		{"not empty, over", func(h *hosttest.Host) { h.SetFile("/srv/full/a", nil) }, disk.PartSpec{Mount: "/srv/full", MountOver: true}, ""},
		{"empty", func(h *hosttest.Host) { h.Mkdir("/srv/empty") }, disk.PartSpec{Mount: "/srv/empty"}, ""},
		{"new", nil, disk.PartSpec{Mount: "/data/new"}, ""},
		{"another's mount point", func(h *hosttest.Host) { h.MountOther("/dev/sdz1", "/srv/taken") }, disk.PartSpec{Mount: "/srv/taken"}, "/srv/taken is already a mount point (of /dev/sdz1)"},
		{"read-only", func(h *hosttest.Host) { h.MountOtherAs("/dev/sdz1", "/ro", "ext4", "ro,relatime") }, disk.PartSpec{Mount: "/ro/new"}, "/ro is on a read-only file system"},
		{"kernel file system", func(h *hosttest.Host) { h.MountOtherAs("sysfs", "/srv/k", "sysfs", "rw") }, disk.PartSpec{Mount: "/srv/k/new"}, "the kernel's sysfs"},
		{"results store", nil, disk.PartSpec{Mount: "/srv/results/x"}, "is in /srv/results, diskprep's own"},
		{"/proc", nil, disk.PartSpec{Mount: "/proc/x"}, "is in /proc"},
		{"made by diskprep before", func(h *hosttest.Host) {
			sum := sha256.Sum256([]byte("/srv/made"))
			h.SetFile("/run/diskprep/mountpoints/made-"+hex.EncodeToString(sum[:8]), []byte("/srv/made\n"))
			h.SetFile("/srv/made/lost+found/x", nil)
		}, disk.PartSpec{Mount: "/srv/made"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, pl := mountRig(t)
			if c.setup != nil {
				c.setup(h)
			}
			p, err := planMount(h, pl, c.ps)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v (plan %v), want a one-line refusal saying %q", err, p, c.want)
			}
			if w := h.Writes(); len(w) > 0 {
				t.Errorf("planning wrote %v", w)
			}
		})
	}
}

// A symbolic link to a harmless directory is followed: the plan mounts at
// the directory itself, the one the mount table will name, and says so in
// the mount argv and fstab line. Mounting over files says what it hides.
func TestPlanMountPointResolved(t *testing.T) {
	h, pl := mountRig(t)
	h.Mkdir("/srv/real")
	h.Symlink("/srv/real", "/mnt/data")
	p, err := planMount(h, pl, disk.PartSpec{Mount: "/mnt/data/", Persist: true})
	if err != nil {
		t.Fatal(err)
	}
	pp := p.Partitions[0]
	if pp.MountPoint != "/srv/real" || pp.MountArgv[len(pp.MountArgv)-1] != "/srv/real" || !strings.Contains(pp.FstabLine, "\t/srv/real\t") {
		t.Errorf("mount point %q, argv %q, fstab %q: want /srv/real", pp.MountPoint, pp.MountArgv, pp.FstabLine)
	}

	h.SetFile("/srv/full/old.txt", nil)
	p, err = planMount(h, pl, disk.PartSpec{Mount: "/srv/full", MountOver: true})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Partitions[0].MountOver || !strings.Contains(strings.Join(p.Notes, "\n"), "/srv/full is not empty (old.txt): hidden while") {
		t.Errorf("over a non-empty directory: mount_over %v, notes %q", p.Partitions[0].MountOver, p.Notes)
	}
}

// The same check guards the real file system: a temporary directory's
// symbolic link to /etc, and a non-empty directory.
func TestPlanMountPointLive(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "cfg")
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := hosttest.New()
	h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: 2 << 30})
	facts := h.FactsNow()
	live := disk.Planner{Host: &liveReads{Host: h}}
	for point, want := range map[string]string{link: "is in /etc", link + "/x": "/etc/x is in /etc", dir: "is not empty (cfg, file)", filepath.Join(dir, "new"): ""} {
		_, err := live.PlanDisk(disk.Request{Device: "/dev/sdb", Partitions: []disk.PartSpec{{FS: "xfs", Mount: point}}}, facts)
		if want == "" && err != nil || want != "" && (!errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: got %v, want %q", point, err, want)
		}
	}
}

// liveReads is the fake machine's disks with the live machine's files
// for what a mount point check reads.
type liveReads struct{ *hosttest.Host }

func (liveReads) EvalSymlinks(p string) (string, error) { return filepath.EvalSymlinks(p) }
func (liveReads) Lstat(p string) (os.FileInfo, error)   { return os.Lstat(p) }
func (liveReads) Stat(p string) (os.FileInfo, error)    { return os.Stat(p) }
func (liveReads) ReadDir(p string) ([]os.DirEntry, error) {
	return os.ReadDir(p)
}

func TestCheckMountOptions(t *testing.T) {
	for _, c := range []struct{ fs, opts, want string }{
		{"xfs", "noatime,discard", ""},
		{"xfs", "defaults,nofail,x-systemd.device-timeout=5s,logbsize=256k,inode64", ""},
		{"ext4", "noatime,data=writeback,commit=60,errors=remount-ro,barrier=0,nodelalloc", ""},
		{"xfs", "bind", `"bind" is refused`},
		{"xfs", "noatime,rbind", `"rbind" is refused`},
		{"ext4", "remount,ro", `"remount" is refused`},
		{"xfs", "move", `"move" is refused`},
		{"xfs", "loop", `"loop" is refused`},
		{"xfs", "loop=/dev/loop3", `"loop=/dev/loop3" is refused`},
		{"xfs", "noatime nodev", "cannot be written in an fstab line"},
		{"xfs", "noatime\tnodev", "cannot be written"},
		{"xfs", "noatime#x", "cannot be written"},
		{"xfs", `comment="x"`, "cannot be written"},
		{"xfs", "comment='x'", "cannot be written"},
		{"xfs", `a\b`, "cannot be written"},
		{"xfs", "noatime\x01", "cannot be written"},
		{"xfs", "noatime,,nodev", "an empty option"},
		{"xfs", ",noatime", "an empty option"},
		{"xfs", "noatime,", "an empty option"},
		{"xfs", "data=writeback", `"data=writeback" is not one mount(8) or xfs takes`},
		{"ext4", "inode64", `"inode64" is not one mount(8) or ext4 takes`},
		{"xfs", "frobnicate", "is not one"},
		{"xfs", "noatime=1", "takes no value"},
		{"xfs", "logbsize", "needs a value"},
		{"ext4", "commit=", "needs a value"},
	} {
		err := disk.CheckMountOptions(c.fs, c.opts)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %q: %v", c.fs, c.opts, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %q: got %v, want %q", c.fs, c.opts, err, c.want)
		}
		// In a request: bad input, one line.
		req := disk.Request{Device: "sdb", Partitions: []disk.PartSpec{{FS: c.fs, Mount: "/data", MountOpts: c.opts}}}
		if err := req.Validate(); c.want != "" && (!errors.Is(err, disk.ErrUsage) || strings.Contains(err.Error(), "\n")) {
			t.Errorf("%s %q in a request: got %v, want a one-line usage error", c.fs, c.opts, err)
		}
	}
}

// Labels are checked as the messages say: length in bytes per file
// system, and the characters the message names.
func TestCheckLabel(t *testing.T) {
	for _, c := range []struct{ fs, label, want string }{
		{"xfs", "data-1_a.b", ""},
		{"xfs", "twelve-bytes", ""},
		{"xfs", "thirteen-byte", "13 bytes, longer than the 12 xfs allows"},
		{"ext4", "sixteen-bytes-ok", ""},
		{"ext4", "seventeen-bytes-x", "17 bytes, longer than the 16 ext4 allows"},
		{"swap", "fifteen-bytes-x", ""},
		{"swap", "sixteen-bytes-xx", "longer than the 15 swap allows"},
		{"xfs", "a b", `' ' is not allowed`},
		{"xfs", "a#b", `'#' is not allowed`},
		{"xfs", "a/b", `'/' is not allowed`},
		{"xfs", `a"b`, `'"' is not allowed`},
		{"xfs", "a\tb", `'\t' is not allowed`},
		{"ext4", "daté", `'é' is not allowed`},
	} {
		err := disk.CheckLabel(c.fs, c.label)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s %q: got %v, want %q", c.fs, c.label, err, c.want)
		}
	}
}

// A rerun is "already prepared as asked": the mount point holds the
// file system's own files (the marker), and that is no refusal. Once
// released, the directory is empty again (the marker is in the file
// system, not the directory), and prepare mounts there anew.
func TestPlanMountPointRerunAndAfterRelease(t *testing.T) {
	h, pl := mountRig(t)
	ctx := context.Background()
	deps := disk.Deps{Host: h, Refresh: h.Facts}
	req := disk.Request{Device: "/dev/sdb", Partitions: []disk.PartSpec{{FS: "xfs", Mount: "/srv/data"}}}
	for round := range 3 {
		p, err := pl.PlanDisk(req, h.FactsNow())
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if round == 1 && !p.Unchanged {
			t.Errorf("rerun: plan changes something: %+v", p.Partitions[0])
		}
		if _, err := disk.Apply(ctx, p, deps); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if h.File("/srv/data/"+disk.MarkerFile) == nil {
			t.Fatalf("round %d: no marker in the mounted file system", round)
		}
		if round == 1 {
			rp, err := disk.PlanRelease(context.Background(), "/srv/data", disk.ReleaseOptions{}, deps)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := disk.ApplyRelease(ctx, rp, deps); err != nil {
				t.Fatal(err)
			}
			// prepare made the directory, so release removes it.
			if des, err := h.ReadDir("/srv/data"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("after release /srv/data holds %v (%v), want it removed", des, err)
			}
		}
	}
}
