package disk_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/hwinfo"
)

// The guard's rules for release, on the recording fake: the system is
// refused (dry run too), a filesystem diskprep did not make is wiped only
// once confirmed, and one it did not mount is unmounted only when named
// or forced. Every refusal writes nothing.

// foreignHost is a machine with sdb holding an XFS nobody asked diskprep
// to make, and sdc mounted at /boot (the running system's).
func foreignHost(t *testing.T) *hosttest.Host {
	t.Helper()
	h := hosttest.New()
	h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: 2 << 30, Model: "FAKE SSD", Serial: "THEIRS01"})
	h.AddDisk(hosttest.Disk{Name: "sdc", Minor: 32, SizeBytes: 2 << 30, Model: "FAKE SSD", Serial: "BOOT0001"})
	holdToDryRuns(t, h)
	byOthers(t, h,
		[]string{"mkfs.xfs", "-L", "theirs", "-m", "uuid=0b5e5a1e-0000-4000-8000-00000000000b", "/dev/sdb"},
		[]string{"mkfs.ext4", "-L", "boot", "-U", "0b5e5a1e-0000-4000-8000-00000000000c", "/dev/sdc"},
		[]string{"mkdir", "-p", "/boot"},
		[]string{"mount", "-t", "ext4", "/dev/sdc", "/boot"})
	h.ResetLog()
	return h
}

// byOthers runs each argv on h as someone else would (mkdir -p by
// MkdirAll): the machine as the test finds it, not diskprep's doing.
func byOthers(t *testing.T, h *hosttest.Host, argvs ...[]string) {
	t.Helper()
	h.ByOthers(func() {
		for _, argv := range argvs {
			var err error
			if argv[0] == "mkdir" {
				err = h.MkdirAll(argv[len(argv)-1], 0o755)
			} else {
				_, err = h.Run(context.Background(), argv[0], argv[1:]...)
			}
			if err != nil {
				t.Fatalf("%v: %v", argv, err)
			}
		}
	})
}

func TestGuardReleaseRefusesTheSystem(t *testing.T) {
	for _, c := range []struct {
		target string
		opt    disk.ReleaseOptions
	}{
		{"/dev/sdc", disk.ReleaseOptions{}},
		{"/dev/sdc", disk.ReleaseOptions{Wipe: true, Yes: true, ForceUnmount: true}},
		{"/boot", disk.ReleaseOptions{Wipe: true, Yes: true}},
	} {
		h := foreignHost(t)
		_, err := disk.PlanRelease(context.Background(), c.target, c.opt, disk.Deps{Host: h})
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "running system") {
			t.Errorf("release %s %+v: %v, want a refusal naming the running system", c.target, c.opt, err)
		}
		if w := h.Writes(); len(w) > 0 {
			t.Errorf("release %s: the refusal wrote %v", c.target, w)
		}
	}
}

func TestGuardReleaseForeignWipeNeedsConfirmation(t *testing.T) {
	h := foreignHost(t)
	ctx := context.Background()
	deps := disk.Deps{Host: h}
	p, err := disk.PlanRelease(ctx, "/dev/sdb", disk.ReleaseOptions{Wipe: true}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if !p.NeedsConfirmation || len(p.Destroys) != 1 {
		t.Fatalf("plan: needs confirmation %v, destroys %+v; want one foreign loss", p.NeedsConfirmation, p.Destroys)
	}
	l := p.Destroys[0]
	if l.Device != "/dev/sdb" || l.Model != "FAKE SSD" || l.Serial != "THEIRS01" || l.SizeBytes != 2<<30 || l.Made != "" ||
		len(l.Signatures) != 1 || !strings.HasPrefix(l.Signatures[0], `xfs label "theirs" UUID `) {
		t.Errorf("loss shown: %+v", l)
	}
	if q := disk.ReleaseQuestion(p); !strings.Contains(q, "/dev/sdb (FAKE SSD, serial THEIRS01, 2 GiB): xfs label \"theirs\"") {
		t.Errorf("question does not show the disk and its signature:\n%s", q)
	}
	_, err = disk.ApplyRelease(ctx, p, deps)
	if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "not made by diskprep") {
		t.Fatalf("unconfirmed: %v, want a refusal", err)
	}
	if w := h.Writes(); len(w) > 0 {
		t.Fatalf("unconfirmed wipe wrote %v", w)
	}
	if sigs := h.Signatures("sdb"); len(sigs) == 0 {
		t.Fatal("the foreign xfs is gone after a refusal")
	}

	// Confirmed (--yes, or yes at the question): wiped.
	p, err = disk.PlanRelease(ctx, "/dev/sdb", disk.ReleaseOptions{Wipe: true, Yes: true}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := disk.ApplyRelease(ctx, p, deps); err != nil {
		t.Fatal(err)
	}
	if sigs := h.Signatures("sdb"); len(sigs) != 0 {
		t.Errorf("after a confirmed wipe: %v", sigs)
	}
}

func TestGuardReleaseForeignMount(t *testing.T) {
	h := foreignHost(t)
	ctx := context.Background()
	byOthers(t, h, []string{"mkdir", "-p", "/srv/theirs"}, []string{"mount", "-t", "xfs", "/dev/sdb", "/srv/theirs"})
	h.ResetLog()
	deps := disk.Deps{Host: h}

	// By device: diskprep did not mount it, so it is not unmounted.
	_, err := disk.PlanRelease(ctx, "/dev/sdb", disk.ReleaseOptions{}, deps)
	if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "/srv/theirs mounted by someone else") || !strings.Contains(err.Error(), "--force-unmount") {
		t.Fatalf("release /dev/sdb: %v, want a refusal naming the mount and --force-unmount", err)
	}
	if w := h.Writes(); len(w) > 0 {
		t.Fatalf("refusal wrote %v", w)
	}
	// Named, or forced: unmounted, the data kept.
	for _, c := range []struct {
		target string
		opt    disk.ReleaseOptions
	}{{"/srv/theirs", disk.ReleaseOptions{}}, {"/dev/sdb", disk.ReleaseOptions{ForceUnmount: true}}} {
		p, err := disk.PlanRelease(ctx, c.target, c.opt, deps)
		if err != nil {
			t.Fatalf("release %s: %v", c.target, err)
		}
		if _, err := disk.ApplyRelease(ctx, p, deps); err != nil {
			t.Fatalf("release %s: %v", c.target, err)
		}
		for _, m := range h.Mounted() {
			if strings.HasPrefix(m, "/srv/theirs ") {
				t.Errorf("release %s left %s", c.target, m)
			}
		}
		if sigs := h.Signatures("sdb"); len(sigs) == 0 {
			t.Errorf("release %s without --wipe lost the filesystem", c.target)
		}
		byOthers(t, h, []string{"mount", "-t", "xfs", "/dev/sdb", "/srv/theirs"})
	}
}

// Image files are root's own: one another user made or may write, a link,
// or one in a directory another user may write into without the sticky
// bit is refused at planning, before anything is written.
func TestGuardImageFiles(t *testing.T) {
	req := func(p string) disk.Request {
		return disk.Request{Image: p, ImageSizeBytes: 400 << 20, Partitions: []disk.PartSpec{{FS: "ext4", Mount: "/mnt/s"}}}
	}
	for _, c := range []struct {
		name  string
		setup func(h *hosttest.Host)
		path  string
		want  string
	}{
		{"another user's file", func(h *hosttest.Host) { h.AddImage("/var/tmp/u.img", 400<<20); h.Chown("/var/tmp/u.img", 4242, 0o644) }, "/var/tmp/u.img", "belongs to uid 4242"},
		{"writable by others", func(h *hosttest.Host) { h.AddImage("/var/tmp/w.img", 400<<20); h.Chown("/var/tmp/w.img", 0, 0o666) }, "/var/tmp/w.img", "writable by no one else"},
		{"a link", func(h *hosttest.Host) {
			h.AddImage("/etc/shadow.img", 400<<20)
			h.Symlink("/etc/shadow.img", "/var/tmp/l.img")
		}, "/var/tmp/l.img", "symbolic link"},
		{"root's link to a disk", func(h *hosttest.Host) {
			h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: 2 << 30})
			h.Symlink("/dev/sdb", "/var/tmp/by-id.img")
		}, "/var/tmp/by-id.img", "is a device node, not an image file (use prepare /var/tmp/by-id.img)"},
		{"another user's link to a disk", func(h *hosttest.Host) {
			h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: 2 << 30})
			h.Symlink("/dev/sdb", "/var/tmp/d.img")
			h.Chown("/var/tmp/d.img", 4242, 0o777)
		}, "/var/tmp/d.img", "/var/tmp/d.img is a symbolic link"},
		{"another user's directory", func(h *hosttest.Host) {
			h.MkdirAll("/home/u", 0o755)
			h.Chown("/home/u", 4242, 0o755)
		}, "/home/u/new.img", "another user could replace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := hosttest.New()
			c.setup(h)
			h.ResetLog()
			pl := disk.Planner{Host: h}
			_, err := pl.PlanDisk(req(c.path), h.FactsNow())
			if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("plan %s: %v, want a refusal saying %q", c.path, err, c.want)
			}
			if w := h.Writes(); len(w) > 0 {
				t.Errorf("the refusal wrote %v", w)
			}
		})
	}
}

// release --remove-image deletes only an image diskprep created.
func TestGuardRemoveImageOnlyMade(t *testing.T) {
	h := hosttest.New()
	holdToDryRuns(t, h)
	h.AddImage("/var/tmp/theirs.img", 1<<20)
	h.ByOthers(func() { // as prepare --image would have
		if err := h.CreateImage("/var/tmp/ours.img", 1<<20); err != nil {
			t.Fatal(err)
		}
	})
	h.ResetLog()
	ctx := context.Background()
	_, err := disk.PlanRelease(ctx, "/var/tmp/theirs.img", disk.ReleaseOptions{RemoveImage: true}, disk.Deps{Host: h})
	if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "not created by diskprep") {
		t.Fatalf("remove an image diskprep did not make: %v, want a refusal", err)
	}
	if _, err := disk.Release(ctx, "/var/tmp/ours.img", disk.ReleaseOptions{RemoveImage: true}, disk.Deps{Host: h}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Lstat("/var/tmp/ours.img"); err == nil {
		t.Error("the image diskprep made is still there")
	}
	if _, err := h.Lstat("/var/tmp/theirs.img"); err != nil {
		t.Errorf("the other image is gone: %v", err)
	}
}

// release follows root's links (/dev/disk/by-id), never another user's:
// through a link of theirs in /var/tmp, that user would choose which of
// diskprep's images root detaches and removes.
func TestGuardReleaseOtherUsersLink(t *testing.T) {
	h := hosttest.New()
	h.Mkdir("/var/lib")
	if err := h.CreateImage("/var/lib/ours.img", 1<<20); err != nil {
		t.Fatal(err)
	}
	h.Symlink("/var/lib/ours.img", "/var/tmp/theirs.img")
	h.Chown("/var/tmp/theirs.img", 4242, 0o777)
	h.Symlink("/var/lib/ours.img", "/root/ours.img")
	h.ResetLog()
	ctx := context.Background()
	for _, opt := range []disk.ReleaseOptions{{RemoveImage: true}, {}} {
		_, err := disk.PlanRelease(ctx, "/var/tmp/theirs.img", opt, disk.Deps{Host: h})
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "refusing to release /var/tmp/theirs.img: /var/tmp/theirs.img is a link owned by uid 4242; give the path itself (/var/lib/ours.img)") {
			t.Fatalf("release %+v through another user's link: %v, want a refusal naming the link and its owner", opt, err)
		}
	}
	if w := h.Writes(); len(w) > 0 {
		t.Errorf("the refusal wrote %v", w)
	}
	if _, err := disk.Release(ctx, "/root/ours.img", disk.ReleaseOptions{RemoveImage: true}, disk.Deps{Host: h}); err != nil {
		t.Fatalf("release through root's link: %v", err)
	}
	if _, err := h.Lstat("/var/lib/ours.img"); err == nil {
		t.Error("release --remove-image through root's link left the image")
	}
}

// release --wipe holds the device lock of each disk it wipes: another
// diskprep at work on one of them (a prepare) makes it refuse, unwritten.
func TestGuardReleaseWipeTakesTheLock(t *testing.T) {
	h := foreignHost(t)
	var roots hwinfo.Roots
	h.LockedBy(roots.DeviceLockPath("8:16"), "4242")
	ctx := context.Background()
	p, err := disk.PlanRelease(ctx, "/dev/sdb", disk.ReleaseOptions{Wipe: true, Yes: true}, disk.Deps{Host: h})
	if err != nil {
		t.Fatal(err)
	}
	_, err = disk.ApplyRelease(ctx, p, disk.Deps{Host: h})
	if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "pid 4242") {
		t.Fatalf("release --wipe of a locked disk: %v, want a refusal naming the holder", err)
	}
	if w := h.Writes(); len(w) > 0 {
		t.Errorf("wrote %v under another's lock", w)
	}
}

// A marker file another user put in a filesystem of theirs vouches for
// nothing: the filesystem is still not diskprep's.
func TestGuardMarkerOfAnotherUser(t *testing.T) {
	h := foreignHost(t)
	ctx := context.Background()
	byOthers(t, h, []string{"mkdir", "-p", "/media/stick"}, []string{"mount", "-t", "xfs", "/dev/sdb", "/media/stick"})
	marker := "/media/stick/" + disk.MarkerFile
	h.SetFile(marker, []byte(`{"schema":"`+disk.MarkerSchema+`","fs":"xfs","uuid":"0b5e5a1e-0000-4000-8000-00000000000b"}`))
	h.Chown(marker, 4242, 0o644)
	h.ResetLog()
	_, err := disk.PlanRelease(ctx, "/dev/sdb", disk.ReleaseOptions{Wipe: true, Yes: true}, disk.Deps{Host: h})
	if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "mounted by someone else") {
		t.Fatalf("release of a stick with a planted marker: %v, want it treated as another's mount", err)
	}
	// Root's own marker is diskprep's.
	h.Chown(marker, 0, 0o644)
	p, err := disk.PlanRelease(ctx, "/dev/sdb", disk.ReleaseOptions{Wipe: true}, disk.Deps{Host: h})
	if err != nil || p.NeedsConfirmation {
		t.Fatalf("release of diskprep's own marked filesystem: %v, needs confirmation %v", err, p != nil && p.NeedsConfirmation)
	}
}
