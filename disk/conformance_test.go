package disk_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/hwinfo"
	"github.com/diskprep/diskprep/internal/golden"
	"github.com/diskprep/diskprep/internal/testenv"
)

// The conformance suite of Apply and release (STYLE.md rule 10): every
// scenario runs against the recording fake (hosttest, no root: any
// developer machine) and against a real loop device (the privileged tier),
// with the same steps and the same assertions. On the fake it also checks
// the exact ordered effect log against testdata/effects/<scenario>.log
// (go test -run Conformance -update rewrites them), that a refusal
// wrote nothing, and that every run did what its dry run lists, no more
// and no less (dryrun_test.go).

// rig is one machine the scenarios run on.
type rig interface {
	name() string
	deps() disk.Deps
	planner() disk.Planner
	disk() string // the test disk's node
	mountDir(leaf string) string
	imagePath() string
	imageState(t *testing.T) disk.ImageState
	facts(t *testing.T) *hwinfo.Host
	fstab(t *testing.T) string
	setFstab(t *testing.T, content string)
	mounted(t *testing.T, point string) bool
	// fingerprint hashes the disk's bytes, the fstab and the mount table.
	fingerprint(t *testing.T) string
	// setup steps of the refusal scenarios
	claim(t *testing.T)                        // someone else opens the disk O_EXCL
	lockedBy(t *testing.T, path string)        // another diskprep holds the lock file
	writeAt(t *testing.T, off int64, b []byte) // bytes onto the disk
	mountOther(t *testing.T, point string)     // another file system at point
	uninstall(prog string)                     // a program that is not there
	busy(t *testing.T, point string)           // a process has a file open under point
	unmountByHand(t *testing.T, point string)  // its user unmounts point, leaving the fstab
	makeImage(t *testing.T, size int64)        // imagePath appears, not attached
	attachImage(t *testing.T)                  // imagePath gets a loop device diskprep did not attach
	// modern makes the kernel parse partition tables itself and systemd
	// PID 1, where the rig can (the fake; a loop rig is as it is).
	modern()
	// effects is the fake's log since the last call (nil on a real rig).
	effects() *hosttest.Host
}

// scenario is one conformance case; it returns the refusal (or failure)
// it expects so the runner can check that nothing was written.
type scenario struct {
	name string
	run  func(t *testing.T, r rig) (refused bool)
}

const diskSize = 400 << 20 // mkfs.xfs wants 300 MiB; sparse, so cheap

func xfsData(r rig) disk.Request {
	return disk.Request{Device: r.disk(), Partitions: []disk.PartSpec{{FS: "xfs", Label: "data", Mount: r.mountDir("data"), Persist: true}}}
}

func plan(t *testing.T, r rig, req disk.Request) *disk.Plan {
	t.Helper()
	p, err := r.planner().PlanDisk(req, r.facts(t))
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p
}

func apply(t *testing.T, r rig, p *disk.Plan) *disk.Result {
	t.Helper()
	res, err := disk.Apply(context.Background(), p, r.deps())
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return res
}

// wantRefusal applies p and wants a refusal naming every want, with the
// disk, the fstab and the mount table as they were.
func wantRefusal(t *testing.T, r rig, p *disk.Plan, want ...string) bool {
	t.Helper()
	return wantRefusalWith(t, r, p, nil, want...)
}

// wantRefusalWith is wantRefusal with the facts re-read just before writing
// changed by change (what another program did since planning).
func wantRefusalWith(t *testing.T, r rig, p *disk.Plan, change func(*hwinfo.Host), want ...string) bool {
	t.Helper()
	deps := r.deps()
	if change != nil {
		refresh := deps.Refresh
		deps.Refresh = func(ctx context.Context) (*hwinfo.Host, error) {
			h, err := refresh(ctx)
			if err == nil {
				change(h)
			}
			return h, err
		}
	}
	return refusedBy(t, r, p, deps, want...)
}

// wantRefusalUnseen is wantRefusal without the re-read of the facts before
// writing: Apply's own checks of the device must catch the change.
func wantRefusalUnseen(t *testing.T, r rig, p *disk.Plan, want ...string) bool {
	t.Helper()
	deps := r.deps()
	deps.Refresh = nil
	return refusedBy(t, r, p, deps, want...)
}

func refusedBy(t *testing.T, r rig, p *disk.Plan, deps disk.Deps, want ...string) bool {
	t.Helper()
	before := r.fingerprint(t)
	_, err := disk.Apply(context.Background(), p, deps)
	if r.fingerprint(t) != before {
		t.Error("refused, yet the disk, the fstab or the mount table changed")
	}
	if !errors.Is(err, disk.ErrRefused) {
		t.Fatalf("apply: %v, want a refusal", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
	return true
}

var scenarios = []scenario{
	{"prepare", func(t *testing.T, r rig) bool {
		res := apply(t, r, plan(t, r, xfsData(r)))
		pr := res.Partitions[0]
		if !res.Changed || !res.TableWritten || !pr.Formatted || !pr.Mounted || !pr.FstabAdded || pr.UUID == "" {
			t.Errorf("result %+v", res)
		}
		if !r.mounted(t, r.mountDir("data")) {
			t.Error("not mounted")
		}
		if f := r.fstab(t); !strings.Contains(f, "UUID="+pr.UUID+"\t"+r.mountDir("data")+"\txfs\tdefaults,nofail") {
			t.Errorf("fstab has no line for %s:\n%s", pr.UUID, f)
		}
		return false
	}},
	{"rerun", func(t *testing.T, r rig) bool {
		apply(t, r, plan(t, r, xfsData(r)))
		r.effects()
		before := r.fingerprint(t)
		res := apply(t, r, plan(t, r, xfsData(r)))
		if res.Changed || res.TableWritten || res.Partitions[0].Formatted {
			t.Errorf("second run changed something: %+v", res)
		}
		if r.fingerprint(t) != before {
			t.Error("the second run changed the disk, the fstab or the mounts")
		}
		return true // nothing may be written
	}},
	{"release-dry-run", func(t *testing.T, r rig) bool {
		res := apply(t, r, plan(t, r, xfsData(r)))
		r.effects()
		before := r.fingerprint(t)
		p, err := disk.PlanRelease(context.Background(), r.mountDir("data"), disk.ReleaseOptions{}, r.deps())
		if err != nil {
			t.Fatal(err)
		}
		line := "UUID=" + res.Partitions[0].UUID + "\t" + r.mountDir("data") + "\txfs\tdefaults,nofail\t0\t0"
		if len(p.Unmount) != 1 || p.Unmount[0] != r.mountDir("data") || len(p.FstabRemove) != 1 || p.FstabRemove[0] != line || p.Detach != "" {
			t.Errorf("plan %+v, want to unmount %s and remove %q", p, r.mountDir("data"), line)
		}
		var b bytes.Buffer
		p.WriteText(&b)
		if !strings.Contains(b.String(), "would unmount "+r.mountDir("data")) || !strings.Contains(b.String(), "would remove from fstab: "+line) {
			t.Errorf("plan text:\n%s", &b)
		}
		if r.fingerprint(t) != before {
			t.Error("planning the release changed the disk, the fstab or the mounts")
		}
		return true
	}},
	{"prepare-modern", func(t *testing.T, r rig) bool {
		r.modern()
		res := apply(t, r, plan(t, r, xfsData(r)))
		if !res.Changed || !res.Partitions[0].Mounted || !res.Partitions[0].FstabAdded {
			t.Errorf("result %+v", res)
		}
		rel, err := disk.Release(context.Background(), r.mountDir("data"), disk.ReleaseOptions{}, r.deps())
		if err != nil || len(rel.Unmounted) != 1 || len(rel.FstabRemoved) != 1 {
			t.Errorf("release %+v %v", rel, err)
		}
		return false
	}},
	{"release", func(t *testing.T, r rig) bool {
		res := apply(t, r, plan(t, r, xfsData(r)))
		r.effects()
		rel, err := disk.Release(context.Background(), r.mountDir("data"), disk.ReleaseOptions{}, r.deps())
		if err != nil {
			t.Fatal(err)
		}
		if len(rel.Unmounted) != 1 || len(rel.FstabRemoved) != 1 || !strings.Contains(rel.FstabRemoved[0], res.Partitions[0].UUID) {
			t.Errorf("release %+v", rel)
		}
		if r.mounted(t, r.mountDir("data")) || strings.Contains(r.fstab(t), res.Partitions[0].UUID) {
			t.Errorf("still mounted or in fstab:\n%s", r.fstab(t))
		}
		return false
	}},
	{"release-device", func(t *testing.T, r rig) bool {
		apply(t, r, plan(t, r, xfsData(r)))
		r.effects()
		rel, err := disk.Release(context.Background(), r.disk(), disk.ReleaseOptions{}, r.deps())
		if err != nil {
			t.Fatal(err)
		}
		if len(rel.Unmounted) != 1 || rel.Unmounted[0] != r.mountDir("data") || len(rel.FstabRemoved) != 1 || rel.Device != r.disk() {
			t.Errorf("release %+v", rel)
		}
		return false
	}},
	// A mount point unmounted by hand, its fstab line left: release
	// --wipe follows the line to the partition and wipes it, as it does
	// when the point is mounted, instead of stopping at the line.
	{"release-unmounted-wipe", func(t *testing.T, r rig) bool {
		res := apply(t, r, plan(t, r, xfsData(r)))
		r.unmountByHand(t, r.mountDir("data"))
		r.effects()
		rel, err := disk.Release(context.Background(), r.mountDir("data"), disk.ReleaseOptions{Wipe: true, Yes: true}, r.deps())
		if err != nil {
			t.Fatal(err)
		}
		if len(rel.FstabRemoved) != 1 || len(rel.StackSteps) == 0 || !strings.Contains(strings.Join(rel.StackSteps, "\n"), "wipefs") {
			t.Errorf("release %+v: want the fstab line removed and the partition wiped", rel)
		}
		if strings.Contains(r.fstab(t), res.Partitions[0].UUID) {
			t.Errorf("fstab still names %s:\n%s", res.Partitions[0].UUID, r.fstab(t))
		}
		if d, _ := r.facts(t).Device(r.disk()); d == nil || len(d.Partitions) != 1 || d.Partitions[0].FSType != "" {
			t.Errorf("after release --wipe of the unmounted point, %s: %+v", r.disk(), d)
		}
		return false
	}},
	// The same, when the line's file system is on no device: --wipe is
	// refused with nothing written (not reported done); without it only
	// the line goes.
	{"release-unmounted-wipe-gone", func(t *testing.T, r rig) bool {
		res := apply(t, r, plan(t, r, xfsData(r)))
		r.unmountByHand(t, r.mountDir("data"))
		gone := "0b8e1e8c-7b1f-4c43-9a61-0d4a2b77e0c1"
		r.setFstab(t, strings.ReplaceAll(r.fstab(t), res.Partitions[0].UUID, gone))
		r.effects()
		before := r.fingerprint(t)
		_, err := disk.Release(context.Background(), r.mountDir("data"), disk.ReleaseOptions{Wipe: true, Yes: true}, r.deps())
		if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "UUID="+gone) || !strings.Contains(err.Error(), "drop --wipe") {
			t.Errorf("release --wipe of a point whose file system is gone: %v", err)
		}
		if r.fingerprint(t) != before {
			t.Error("the refused release changed the disk, the fstab or the mounts")
		}
		rel, err := disk.Release(context.Background(), r.mountDir("data"), disk.ReleaseOptions{}, r.deps())
		if err != nil || len(rel.FstabRemoved) != 1 || len(rel.StackSteps) != 0 || strings.Contains(r.fstab(t), gone) {
			t.Errorf("release without --wipe: %+v %v\n%s", rel, err, r.fstab(t))
		}
		return false
	}},
	{"image", func(t *testing.T, r rig) bool {
		res := apply(t, r, planImage(t, r))
		if !res.LoopAttached || !res.Partitions[0].Mounted || !strings.HasPrefix(res.Device, "/dev/loop") {
			t.Errorf("result %+v", res)
		}
		rel, err := disk.Release(context.Background(), r.imagePath(), disk.ReleaseOptions{RemoveImage: true}, r.deps())
		if err != nil {
			t.Fatal(err)
		}
		if rel.Detached != res.Device || !rel.ImageRemoved || len(rel.Unmounted) != 1 {
			t.Errorf("release %+v", rel)
		}
		return false
	}},

	// Refusals: each must leave the disk as it was.
	{"refuse-missing-mkfs", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		r.uninstall("mkfs.xfs")
		_, err := disk.Apply(context.Background(), p, r.deps())
		if !errors.Is(err, disk.ErrMissingProgram) || !strings.Contains(err.Error(), "xfsprogs") {
			t.Errorf("apply: %v", err)
		}
		return true
	}},
	{"refuse-claimed", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		r.claim(t)
		return wantRefusal(t, r, p, "is in use (exclusive open")
	}},
	{"refuse-locked", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		major, minor, err := r.deps().Host.DeviceNumber(r.disk())
		if err != nil {
			t.Fatal(err)
		}
		r.lockedBy(t, r.deps().Roots.DeviceLockPath(fmt.Sprintf("%d:%d", major, minor)))
		return wantRefusal(t, r, p, "another diskprep (pid ")
	}},
	{"refuse-signature-since-planning", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		r.writeAt(t, 1<<20, xfsMagic())
		return wantRefusal(t, r, p, "is not empty", "xfs signature at offset 1048576", "--wipe")
	}},
	{"refuse-resized-since-planning", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		p.Fingerprint.SizeBytes += 1 << 20
		return wantRefusal(t, r, p, "changed since planning")
	}},
	{"refuse-mount-point-taken", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		r.mountOther(t, r.mountDir("data"))
		return wantRefusal(t, r, p, "is already a mount point")
	}},
	{"refuse-fstab-conflict", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		r.setFstab(t, r.fstab(t)+"LABEL=other\t"+r.mountDir("data")+"\text4\tdefaults\t0 0\n")
		return wantRefusal(t, r, p, "already says")
	}},
	{"refuse-system-since-planning", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		return wantRefusalWith(t, r, p, func(h *hwinfo.Host) {
			d, _ := h.Device(r.disk())
			d.System, d.SystemReasons = true, []string{"/ on " + d.Name}
		}, "now holds the running system")
	}},
	{"refuse-held-since-planning", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		return wantRefusalWith(t, r, p, func(h *hwinfo.Host) {
			d, _ := h.Device(r.disk())
			d.Holders = []hwinfo.Holder{{Name: "md127", Kind: "md"}}
		}, "is held by md md127")
	}},
	{"refuse-mounted-since-planning", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		return wantRefusalWith(t, r, p, func(h *hwinfo.Host) {
			d, _ := h.Device(r.disk())
			d.Mounts = []hwinfo.Mount{{Point: "/elsewhere", Source: r.disk()}}
		}, "is mounted at /elsewhere")
	}},
	{"refuse-resized-unseen", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		p.Fingerprint.SizeBytes += 1 << 20
		return wantRefusalUnseen(t, r, p, "is now 419430400 bytes with 512-byte sectors; planned 420478976")
	}},
	{"refuse-table-since-planning", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		p.Fingerprint.TableType, p.Fingerprint.TableID = "gpt", "0B8E1E8C-7B1F-4C43-9A61-0D4A2B77E0C1"
		return wantRefusalUnseen(t, r, p, "the partition table of "+r.disk()+" changed since planning")
	}},
	{"refuse-gone-since-planning", func(t *testing.T, r rig) bool {
		p := plan(t, r, xfsData(r))
		return wantRefusalWith(t, r, p, func(h *hwinfo.Host) {
			for i, d := range h.Disks {
				if d.Path == r.disk() {
					h.Disks = append(h.Disks[:i], h.Disks[i+1:]...)
					break
				}
			}
		}, "is no longer listed as a disk")
	}},
	{"refuse-image-appeared", func(t *testing.T, r rig) bool {
		p := planImage(t, r)
		r.makeImage(t, diskSize)
		return wantRefusal(t, r, p, "appeared since planning")
	}},
	{"refuse-image-attached", func(t *testing.T, r rig) bool {
		p := planImage(t, r)
		r.makeImage(t, diskSize)
		r.attachImage(t)
		return wantRefusal(t, r, p, "was attached to /dev/loop")
	}},
	{"refuse-image-changed", func(t *testing.T, r rig) bool {
		r.makeImage(t, diskSize)
		p := planImage(t, r)
		r.makeImage(t, diskSize+(1<<20))
		return wantRefusal(t, r, p, "changed since planning")
	}},
	{"release-busy", func(t *testing.T, r rig) bool {
		res := apply(t, r, plan(t, r, xfsData(r)))
		r.busy(t, r.mountDir("data"))
		r.effects()
		before := r.fingerprint(t)
		rel, err := disk.Release(context.Background(), r.mountDir("data"), disk.ReleaseOptions{}, r.deps())
		if err == nil || !strings.Contains(err.Error(), "busy") || len(rel.Unmounted) != 0 {
			t.Errorf("release of a busy mount: %+v %v", rel, err)
		}
		if !strings.Contains(r.fstab(t), res.Partitions[0].UUID) || r.fingerprint(t) != before {
			t.Error("a failed unmount still changed the fstab, the mounts or the disk")
		}
		return true
	}},
	{"release-not-a-target", func(t *testing.T, r rig) bool {
		_, err := disk.Release(context.Background(), "/dev/null", disk.ReleaseOptions{}, r.deps())
		if !errors.Is(err, disk.ErrUsage) {
			t.Errorf("release /dev/null: %v", err)
		}
		return true
	}},
}

func planImage(t *testing.T, r rig) *disk.Plan {
	t.Helper()
	req := disk.Request{Image: r.imagePath(), ImageSizeBytes: diskSize, Partitions: []disk.PartSpec{{FS: "ext4", Label: "scratch", Mount: r.mountDir("scratch")}}}
	p, err := r.planner().PlanImage(req, r.facts(t), r.imageState(t))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// xfsMagic is an XFS superblock the prober takes for one (geometry sane).
func xfsMagic() []byte {
	b := make([]byte, 512)
	copy(b, "XFSB")
	put32 := func(off int, v uint32) {
		b[off], b[off+1], b[off+2], b[off+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	}
	put32(4, 4096)
	b[8+7] = 64 // dblocks (big-endian 64 bits): one allocation group of 64 blocks
	put32(80, 1)
	put32(84, 64)
	put32(88, 1)
	b[102], b[103] = 0x02, 0x00 // sectsize 512
	b[104], b[105] = 0x02, 0x00 // inodesize 512
	b[120], b[121], b[122], b[123] = 12, 9, 9, 3
	b[127] = 25
	return b
}

func TestConformanceFake(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			r := newFakeRig(t)
			refused := sc.run(t, r)
			h := r.h
			if refused {
				if w := h.Writes(); len(w) > 0 {
					t.Errorf("refused, yet written: %v", w)
				}
			}
			golden.Check(t, filepath.Join("testdata", "effects", sc.name+".log"), []byte(h.Transcript()))
			if held := h.Held(); len(held) > 0 {
				t.Errorf("locks still held: %v", held)
			}
		})
	}
}

func TestPrivilegedConformance(t *testing.T) {
	testenv.RequirePrivileged(t, "mkfs.xfs", "mkfs.ext4", "findmnt", "flock", "mount", "umount")
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { sc.run(t, newLoopRig(t)) })
	}
}

// --- the fake rig ---

type fakeRig struct {
	h *hosttest.Host
	n int
}

func newFakeRig(t *testing.T) *fakeRig {
	h := hosttest.New()
	holdToDryRuns(t, h)
	h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: diskSize, Model: "FAKE DISK", Serial: "FAKE0001", WWN: "0x5000000000000001"})
	h.SetFile("/mnt/.keep", nil)
	return &fakeRig{h: h}
}

func (r *fakeRig) name() string { return "fake" }
func (r *fakeRig) deps() disk.Deps {
	return disk.Deps{Host: r.h, Refresh: r.h.Facts, Now: func() time.Time { return time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC) }}
}
func (r *fakeRig) planner() disk.Planner {
	return disk.Planner{Host: r.h, NewUUID: func() string {
		r.n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", r.n)
	}}
}
func (r *fakeRig) disk() string                { return "/dev/sdb" }
func (r *fakeRig) mountDir(leaf string) string { return "/mnt/" + leaf }
func (r *fakeRig) imagePath() string           { return "/var/tmp/scratch.img" }
func (r *fakeRig) imageState(t *testing.T) disk.ImageState {
	st, err := disk.Planner{Host: r.h}.InspectImage(r.imagePath())
	if err != nil {
		t.Fatal(err)
	}
	return st
}
func (r *fakeRig) modern() {
	r.h.GPTParser = true
	r.h.SetFile("/proc/1/comm", []byte("systemd\n"))
}
func (r *fakeRig) makeImage(_ *testing.T, size int64) { r.h.AddImage(r.imagePath(), uint64(size)) }
func (r *fakeRig) attachImage(*testing.T)             { r.h.Attach(r.imagePath()) }
func (r *fakeRig) facts(*testing.T) *hwinfo.Host      { return r.h.FactsNow() }
func (r *fakeRig) fstab(*testing.T) string            { return string(r.h.File("/etc/fstab")) }
func (r *fakeRig) setFstab(_ *testing.T, c string)    { r.h.SetFile("/etc/fstab", []byte(c)) }
func (r *fakeRig) mounted(_ *testing.T, point string) bool {
	for _, m := range r.h.Mounted() {
		if strings.HasPrefix(m, point+" ") {
			return true
		}
	}
	return false
}
func (r *fakeRig) fingerprint(*testing.T) string {
	return fmt.Sprint(r.h.File("/etc/fstab"), r.h.Mounted(), r.h.Devices(), len(r.h.Writes()))
}
func (r *fakeRig) claim(*testing.T)                          { r.h.Claim("sdb", true) }
func (r *fakeRig) lockedBy(_ *testing.T, p string)           { r.h.LockedBy(p, "4242") }
func (r *fakeRig) writeAt(_ *testing.T, off int64, b []byte) { r.h.WriteSignature("sdb", off, b) }
func (r *fakeRig) mountOther(_ *testing.T, p string)         { r.h.MountOther("/dev/sdz1", p) }
func (r *fakeRig) uninstall(prog string)                     { r.h.Missing(prog) }
func (r *fakeRig) busy(_ *testing.T, p string)               { r.h.Fail("unmount", p, syscall.EBUSY) }
func (r *fakeRig) unmountByHand(t *testing.T, p string) {
	r.h.ByOthers(func() {
		if err := r.h.Unmount(p); err != nil {
			t.Fatal(err)
		}
	})
}
func (r *fakeRig) effects() *hosttest.Host { r.h.ResetLog(); return r.h }

// --- the loop-device rig ---

type loopRig struct {
	loop      *testenv.Loop
	root, dir string
	runner    disk.Runner
}

func newLoopRig(t *testing.T) *loopRig {
	l := testenv.NewLoop(t, diskSize, testenv.LoopOptions{})
	t.Cleanup(func() { testenv.UnmountAll(t, l.Dev); testenv.DropPartitions(t, l.Dev) })
	root := testenv.TempRoot(t)
	return &loopRig{loop: l, root: root, dir: t.TempDir()}
}

func (r *loopRig) name() string { return "loop" }
func (r *loopRig) deps() disk.Deps {
	return disk.Deps{
		Host: &disk.LiveHost{Runner: r.runner}, Roots: hwinfo.Roots{Root: r.root},
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
		Refresh: func(ctx context.Context) (*hwinfo.Host, error) { return hwinfo.Read(ctx, hwinfo.Options{All: true}) },
	}
}
func (r *loopRig) planner() disk.Planner       { return disk.Planner{} }
func (r *loopRig) disk() string                { return r.loop.Dev }
func (r *loopRig) mountDir(leaf string) string { return filepath.Join(r.dir, leaf) }
func (r *loopRig) imagePath() string           { return filepath.Join(r.dir, "scratch.img") }
func (r *loopRig) imageState(t *testing.T) disk.ImageState {
	st, err := disk.Planner{}.InspectImage(r.imagePath())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, _ := testenv.Run("losetup", "-n", "-O", "NAME", "-j", r.imagePath()); strings.TrimSpace(out) != "" {
			testenv.UnmountAll(t, strings.TrimSpace(out))
			testenv.DropPartitions(t, strings.TrimSpace(out))
			testenv.Run("losetup", "-d", strings.TrimSpace(out))
		}
	})
	return st
}
func (r *loopRig) facts(t *testing.T) *hwinfo.Host {
	h, err := hwinfo.Read(context.Background(), hwinfo.Options{All: true})
	if err != nil {
		t.Fatal(err)
	}
	return h
}
func (r *loopRig) fstab(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(r.root, "etc/fstab"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
func (r *loopRig) setFstab(t *testing.T, c string) {
	if err := os.WriteFile(filepath.Join(r.root, "etc/fstab"), []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
}
func (r *loopRig) mounted(_ *testing.T, point string) bool {
	_, err := testenv.Run("findmnt", "-n", point)
	return err == nil
}
func (r *loopRig) fingerprint(t *testing.T) string {
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	// What is mounted where, of this test's disk or under its directory
	// (other tests of the machine mount their own things meanwhile).
	var mounts []string
	diskMounted := false
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		src := f[len(f)-2]
		if strings.HasPrefix(src, r.loop.Dev) || strings.HasPrefix(f[4], r.dir) {
			mounts = append(mounts, f[2]+" "+f[4]+" "+src)
		}
		diskMounted = diskMounted || strings.HasPrefix(src, r.loop.Dev)
	}
	sum := sha256.New()
	f, err := os.Open(r.loop.Dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !diskMounted {
		if _, err := io.Copy(sum, f); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%x %q %q", sum.Sum(nil), r.fstab(t), mounts)
	}
	// A mounted file system is the kernel's to write whenever it likes (the
	// XFS log worker, ext4's lazy init, atime), so only what diskprep owns
	// there is hashed: the partition table's first and last MiB.
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, size - 1<<20} {
		if _, err := io.Copy(sum, io.NewSectionReader(f, off, 1<<20)); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("table %x %q %q", sum.Sum(nil), r.fstab(t), mounts)
}
func (r *loopRig) claim(t *testing.T) {
	fd, err := syscall.Open(r.loop.Dev, syscall.O_RDONLY|syscall.O_EXCL, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
}
func (r *loopRig) lockedBy(t *testing.T, p string) {
	os.MkdirAll(filepath.Dir(p), 0o755)
	cmd := exec.Command("flock", "-n", p, "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Wait until the child holds it.
	for i := 0; i < 200; i++ {
		if out, _ := os.ReadFile("/proc/locks"); bytes.Contains(out, []byte(fmt.Sprintf(" %d ", cmd.Process.Pid))) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("flock child did not take the lock")
}
func (r *loopRig) writeAt(t *testing.T, off int64, b []byte) {
	f, err := os.OpenFile(r.loop.Dev, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
func (r *loopRig) mountOther(t *testing.T, p string) {
	os.MkdirAll(p, 0o755)
	testenv.MustRun(t, "mount", "-t", "tmpfs", "other", p)
	t.Cleanup(func() { testenv.Run("umount", p) })
}
func (r *loopRig) uninstall(prog string) { r.runner = missingRunner{prog} }
func (r *loopRig) busy(t *testing.T, p string) {
	f, err := os.Create(filepath.Join(p, "open-file"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
}
func (r *loopRig) effects() *hosttest.Host { return nil }
func (r *loopRig) unmountByHand(t *testing.T, p string) {
	if err := syscall.Unmount(p, 0); err != nil {
		t.Fatal(err)
	}
}
func (r *loopRig) modern() {}
func (r *loopRig) makeImage(t *testing.T, size int64) {
	if err := os.WriteFile(r.imagePath(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(r.imagePath(), size); err != nil {
		t.Fatal(err)
	}
}
func (r *loopRig) attachImage(t *testing.T) {
	dev := strings.TrimSpace(testenv.MustRun(t, "losetup", "-f", "--show", r.imagePath()))
	t.Cleanup(func() { testenv.Run("losetup", "-d", dev) })
}

// missingRunner runs every program but prog, which is not installed.
type missingRunner struct{ prog string }

func (m missingRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if name == m.prog {
		return nil, &disk.RunError{Argv: append([]string{name}, args...), ExitCode: -1, Err: exec.ErrNotFound}
	}
	return disk.ExecRunner{}.Run(ctx, name, args...)
}
