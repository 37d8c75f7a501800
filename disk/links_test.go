package disk_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/stack"
)

// linkHost is a machine with disks sdb and sdc, /tmp as it is
// (root's, sticky, open to all) and, in it, links uid 4242 made to them:
// /tmp/x to sdb, /tmp/d to /dev. Root's own link, by-id as udev makes
// them, leads to sdb too.
func linkHost(t *testing.T) *hosttest.Host {
	t.Helper()
	h := hosttest.New()
	h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: 4 << 30, Model: "FAKE HDD", Serial: "HDD0001", Rotational: true})
	h.AddDisk(hosttest.Disk{Name: "sdc", Minor: 32, SizeBytes: 1 << 30, Model: "FAKE SSD", Serial: "SSD0001"})
	h.Mkdir("/tmp")
	h.Chown("/tmp", 0, 0o777|fs.ModeSticky)
	h.Symlink("/dev/sdb", "/tmp/x")
	h.Chown("/tmp/x", 4242, 0o777)
	h.Symlink("/dev", "/tmp/d")
	h.Chown("/tmp/d", 4242, 0o777)
	h.Symlink("../../sdb", "/dev/disk/by-id/ata-FAKE_HDD_HDD0001")
	h.ResetLog()
	return h
}

// prepare, the lock taken before its facts and release refuse a device
// named through another user's link, the link a directory of the path
// or the device's own name, with one reason naming the link, its owner
// and the device to give instead; they write nothing. Root's by-id link
// is followed.
func TestGuardDeviceLinks(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ path, want string }{
		{"/tmp/x", "/tmp/x is a link owned by uid 4242; give the device itself (/dev/sdb)"},
		{"/tmp/d/sdb", "/tmp/d is a link owned by uid 4242; give the device itself (/dev/sdb)"},
	} {
		t.Run(c.path, func(t *testing.T) {
			h := linkHost(t)
			req := disk.Request{Device: c.path, Wipe: true, Partitions: []disk.PartSpec{{FS: "ext4"}}}
			_, err := disk.Planner{Host: h}.PlanDisk(req, h.FactsNow())
			if want := "refusing to prepare " + c.path + ": " + c.want; !errors.Is(err, disk.ErrRefused) || err.Error() != want {
				t.Errorf("prepare: %v, want %q", err, want)
			}
			unlock, err := disk.LockTarget(req, disk.Deps{Host: h})
			if err == nil {
				unlock()
			}
			if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("lock: %v, want a refusal saying %q", err, c.want)
			}
			for _, opt := range []disk.ReleaseOptions{{}, {Wipe: true, Yes: true}} {
				_, err := disk.PlanRelease(ctx, c.path, opt, disk.Deps{Host: h})
				if want := "refusing to release " + c.path + ": " + c.want; !errors.Is(err, disk.ErrRefused) || err.Error() != want {
					t.Errorf("release %+v: %v, want %q", opt, err, want)
				}
			}
			if w := h.Writes(); len(w) > 0 {
				t.Errorf("the refusals wrote %v", w)
			}
		})
	}
	h := linkHost(t)
	p, err := disk.Planner{Host: h}.PlanDisk(disk.Request{Device: "/dev/disk/by-id/ata-FAKE_HDD_HDD0001", Partitions: []disk.PartSpec{{FS: "ext4"}}}, h.FactsNow())
	if err != nil || p.Device != "/dev/sdb" {
		t.Errorf("prepare through root's by-id link: %v", err)
	}
}

// A link of root's is refused too where another user could replace it:
// in that user's directory, or in one others may write that is not
// sticky; in /tmp (root's, sticky) it is followed.
func TestGuardDeviceLinkDirectories(t *testing.T) {
	for _, c := range []struct {
		dir  string
		uid  uint32
		perm fs.FileMode
		want string // "" is followed
	}{
		{"/home/u", 4242, 0o755, "/home/u/l is a link in /home/u, a directory owned by uid 4242"},
		{"/srv/drop", 0, 0o777, "/srv/drop/l is a link in /srv/drop, which other users may write (mode 0777)"},
		{"/srv/team", 0, 0o775, "/srv/team/l is a link in /srv/team, which other users may write (mode 0775)"},
		{"/tmp", 0, 0o777 | fs.ModeSticky, ""},
	} {
		t.Run(c.dir, func(t *testing.T) {
			h := linkHost(t)
			h.Mkdir(c.dir)
			h.Chown(c.dir, c.uid, c.perm)
			h.Symlink("/dev/sdb", c.dir+"/l")
			h.ResetLog()
			p, err := disk.Planner{Host: h}.PlanDisk(disk.Request{Device: c.dir + "/l", Partitions: []disk.PartSpec{{FS: "ext4"}}}, h.FactsNow())
			switch {
			case c.want == "" && (err != nil || p.Device != "/dev/sdb"):
				t.Errorf("prepare %s/l: %v, want the plan of /dev/sdb", c.dir, err)
			case c.want != "" && (!errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), c.want+"; give the device itself (/dev/sdb)")):
				t.Errorf("prepare %s/l: %v, want a refusal saying %q", c.dir, err, c.want)
			}
			if w := h.Writes(); len(w) > 0 {
				t.Errorf("planning wrote %v", w)
			}
		})
	}
}

// The cache device of prepare --cache and cachebench, a disk or a
// partition, is refused through another user's link as the origin is.
func TestGuardCacheDeviceLink(t *testing.T) {
	for _, dev := range []string{"/tmp/d/sdc", "/tmp/d/sdc1"} {
		t.Run(dev, func(t *testing.T) {
			h := linkHost(t)
			if dev == "/tmp/d/sdc1" {
				ctx := context.Background()
				p, err := disk.Planner{Host: h}.PlanDisk(disk.Request{Device: "/dev/sdc", Partitions: []disk.PartSpec{{FS: "xfs"}}}, h.FactsNow())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := disk.Apply(ctx, p, disk.Deps{Host: h}); err != nil {
					t.Fatal(err)
				}
				h.ResetLog()
			}
			b := stack.CacheBuild{Origin: "/dev/sdb", CacheDevice: dev, Kind: "bcache", Mode: "writeback", Wipe: true,
				Volume: stack.VolumeSpec{FS: "xfs", Mount: "/mnt/srv"}}
			_, err := stack.BuildCache(context.Background(), b, h.FactsNow(), disk.Deps{Host: h, Refresh: h.Facts})
			want := "refusing to prepare " + dev + ": /tmp/d is a link owned by uid 4242; give the device itself (/dev/" + dev[len("/tmp/d/"):] + ")"
			if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), want) {
				t.Errorf("build: %v, want a refusal saying %q", err, want)
			}
			if w := h.Writes(); len(w) > 0 {
				t.Errorf("the refusal wrote %v", w)
			}
		})
	}
}

// An image whose directory is reached through another user's link is
// refused, however the sysctl would have the kernel follow it: that user
// would choose the directory root's image is made, formatted and mounted
// in. Root's link to a directory is followed.
func TestGuardImageDirectoryLink(t *testing.T) {
	req := func(p string) disk.Request {
		return disk.Request{Image: p, ImageSizeBytes: 400 << 20, Partitions: []disk.PartSpec{{FS: "ext4", Mount: "/mnt/s"}}}
	}
	h := linkHost(t)
	h.Mkdir("/root/somewhere")
	h.Chown("/root", 0, 0o700)
	h.Symlink("/root/somewhere", "/tmp/userdir")
	h.Chown("/tmp/userdir", 4242, 0o777)
	h.Symlink("/root/somewhere", "/var/imgs")
	h.ResetLog()
	for _, path := range []string{"/tmp/userdir/new.img", "/tmp/userdir/./new.img"} {
		_, err := disk.Planner{Host: h}.PlanDisk(req(path), h.FactsNow())
		want := "/tmp/userdir is a link owned by uid 4242; give the path itself (/root/somewhere/new.img)"
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("plan %s: %v, want a refusal saying %q", path, err, want)
		}
		unlock, err := disk.LockTarget(req(path), disk.Deps{Host: h})
		if err == nil {
			unlock()
			t.Errorf("lock %s: taken", path)
		}
		_, err = disk.PlanRelease(context.Background(), path, disk.ReleaseOptions{RemoveImage: true}, disk.Deps{Host: h})
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "/tmp/userdir is a link owned by uid 4242") {
			t.Errorf("release %s: %v", path, err)
		}
	}
	if w := h.Writes(); len(w) > 0 {
		t.Errorf("the refusals wrote %v", w)
	}
	p, err := disk.Planner{Host: h}.PlanDisk(req("/var/imgs/new.img"), h.FactsNow())
	if err != nil || p.Image == nil || p.Image.Path != "/root/somewhere/new.img" {
		t.Errorf("plan through root's link: %v %+v", err, p)
	}
}

// A mount point reached through another user's link is refused when
// planning: the link could be turned onto /etc between the check and the
// mount. Root's own link in root's directory is followed.
func TestGuardMountPointLink(t *testing.T) {
	h := linkHost(t)
	h.Mkdir("/srv/data")
	h.Symlink("/srv/data", "/tmp/m")
	h.Chown("/tmp/m", 4242, 0o777)
	h.Symlink("/srv", "/tmp/rootlink")
	h.ResetLog()
	req := disk.Request{Device: "/dev/sdb", Partitions: []disk.PartSpec{{FS: "ext4", Mount: "/tmp/m/sub"}}}
	_, err := disk.Planner{Host: h}.PlanDisk(req, h.FactsNow())
	if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "refusing to prepare sdb: /tmp/m is a link owned by uid 4242; give the path itself") {
		t.Errorf("mount through another user's link: %v", err)
	}
	req.Partitions[0].Mount = "/tmp/rootlink/data"
	if p, err := (disk.Planner{Host: h}).PlanDisk(req, h.FactsNow()); err != nil || p.Partitions[0].MountPoint != "/srv/data" {
		t.Errorf("mount through root's link: %v", err)
	}
	if w := h.Writes(); len(w) > 0 {
		t.Errorf("planning wrote %v", w)
	}
}
