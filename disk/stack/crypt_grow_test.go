package stack_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/stack"
)

// Growing an encrypted logical volume (prepare with a larger size): the
// volume grows without --resizefs, then its open LUKS2 mapping
// (cryptsetup resize, online), then the file system on the mapping,
// mounted; a rerun changes nothing; a kill before any of those steps
// converges on the rerun; shrinking one stays refused.
func grownCrypt(fs string, size uint64) stackCase {
	return stackCase{
		reqs: []disk.Request{member("/dev/sdb", "lvm:vault")},
		stack: stack.StackRequest{Groups: []stack.GroupSpec{{VG: "vault", Volumes: []stack.LVSpec{
			{Name: "home", SizeBytes: size, Volume: stack.VolumeSpec{FS: fs, Mount: "/mnt/home", Persist: true, Encrypt: &crypt.Spec{KeyFile: "/etc/diskprep/keys/home.key"}}}}}}},
	}
}

func TestStackCryptGrow(t *testing.T) {
	for _, fs := range []string{"ext4", "xfs"} {
		t.Run(fs, func(t *testing.T) {
			r := newStackRig(t, "sdb")
			r.prepare(t, grownCrypt(fs, 512<<20))
			plans, sp, err := r.plan(grownCrypt(fs, 768<<20))
			if err != nil {
				t.Fatal(err)
			}
			var dry bytes.Buffer
			sp.WriteText(&dry)
			grow := map[string]string{"ext4": "resize2fs /dev/mapper/vault-home_crypt", "xfs": "xfs_growfs /mnt/home"}[fs]
			for _, want := range []string{
				"lvextend --size 805306368b vault/home (from 512 MiB to 768 MiB, then its LUKS2 mapping and " + fs + ")",
				"cryptsetup resize --key-file '<key file /etc/diskprep/keys/home.key>' vault-home_crypt",
				grow,
			} {
				if !strings.Contains(dry.String(), want) {
					t.Errorf("dry run lacks %q:\n%s", want, dry.String())
				}
			}
			if strings.Contains(dry.String(), "--resizefs") {
				t.Errorf("lvextend --resizefs on an encrypted volume:\n%s", dry.String())
			}
			res, err := r.apply(plans, sp)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			lr := res.Groups[0].Volumes[0]
			if !lr.Grown || !lr.CryptResized || !lr.FSGrown {
				t.Errorf("result %+v", lr)
			}
			var out bytes.Buffer
			res.WriteText(&out)
			if !strings.Contains(out.String(), "then its LUKS2 mapping with cryptsetup resize --key-file '<key file /etc/diskprep/keys/home.key>' vault-home_crypt, then its file system with") {
				t.Errorf("result text:\n%s", out.String())
			}
			if _, sp, err := r.plan(grownCrypt(fs, 768<<20)); err != nil || !sp.Unchanged {
				t.Errorf("rerun: %v, unchanged %v: %v", err, sp != nil && sp.Unchanged, stepsOf(sp))
			}
			if fs == "ext4" {
				c := grownCrypt(fs, 512<<20)
				c.stack.Shrink = true
				if _, _, err := r.plan(c); !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "does not shrink an encrypted volume") {
					t.Errorf("--shrink: %v", err)
				}
			}
		})
	}
}

func TestStackCryptGrowCrashAtEveryStep(t *testing.T) {
	fresh := func() *stackRig {
		r := newStackRig(t, "sdb")
		r.prepare(t, grownCrypt("ext4", 512<<20))
		r.h.ResetLog()
		return r
	}
	c := grownCrypt("ext4", 768<<20)
	clean := fresh()
	clean.prepare(t, c)
	if !slices.ContainsFunc(clean.h.Writes(), runOf("cryptsetup")) {
		t.Fatalf("the grow resized no mapping: %v", clean.h.Writes())
	}
	// Every write of a grow is after the disks were made: every rerun
	// completes.
	always := func(hosttest.Effect) bool { return true }
	killAtEveryWrite(t, fresh, c, always, func(r *stackRig, n int, before hosttest.Effect) {
		unchangedOnThirdRun(t, r, c, n, before)
	})
}
