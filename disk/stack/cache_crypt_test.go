package stack_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/hosttest"
)

// A cached volume's file system on LUKS2 (the cache under the encryption:
// dm-cache and dm-writecache see ciphertext, so what the SSD holds is
// encrypted too): the LUKS2 layer on /dev/VG/LV, the file system on its
// mapping, crypttab before fstab; a rerun changes nothing; a kill before
// any write converges on the rerun; release --wipe closes the mapping,
// destroys its key slots and takes the cache apart, leaving both disks
// blank. bcache is refused for now.
func encryptedCache(kind, mode string) stackCase {
	c := cacheCase(kind, mode)
	c.stack.Caches[0].Volume.Encrypt = &crypt.Spec{KeyFile: "/etc/diskprep/keys/srv.key"}
	return c
}

func TestCacheEncrypted(t *testing.T) {
	for _, c := range []struct{ kind, mode string }{{"lvmcache", ""}, {"writecache", "writeback"}} {
		t.Run(c.kind, func(t *testing.T) {
			r := newCacheRig(t)
			plans, sp, err := r.plan(encryptedCache(c.kind, c.mode))
			if err != nil {
				t.Fatal(err)
			}
			var dry bytes.Buffer
			sp.WriteText(&dry)
			for _, want := range []string{
				"--key-file '<key file /etc/diskprep/keys/srv.key>' /dev/srv/srv",
				"cryptsetup open --type luks2 --key-file '<key file /etc/diskprep/keys/srv.key>' /dev/srv/srv srv-srv_crypt",
				"ensure in /etc/crypttab: srv-srv_crypt UUID=",
				"mkfs.xfs -f -L srv -m uuid=",
				"/dev/mapper/srv-srv_crypt",
			} {
				if !strings.Contains(dry.String(), want) {
					t.Errorf("dry run lacks %q:\n%s", want, dry.String())
				}
			}
			steps := dry.String()
			if i, j := strings.Index(steps, "lvconvert"), strings.Index(steps, "luksFormat"); i < 0 || j < i {
				t.Errorf("luksFormat is not after the cache is attached:\n%s", steps)
			}
			res, err := r.apply(plans, sp)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			v := res.Caches[0].Volume
			if v.Device != "/dev/mapper/srv-srv_crypt" || v.Crypt == nil || !v.Crypt.Formatted || !v.Formatted || !v.Mounted {
				t.Errorf("cached volume %+v crypt %+v", v, v.Crypt)
			}
			if ct := string(r.h.File("/etc/crypttab")); !strings.Contains(ct, "srv-srv_crypt UUID="+v.Crypt.UUID+" /etc/diskprep/keys/srv.key luks,nofail,headless=true") {
				t.Errorf("crypttab:\n%s", ct)
			}
			r.h.ResetLog()
			plans, sp, err = r.plan(encryptedCache(c.kind, c.mode))
			if err != nil || !sp.Unchanged {
				t.Fatalf("rerun: %v, unchanged %v: %v", err, sp != nil && sp.Unchanged, stepsOf(sp))
			}
			if res, err = r.apply(plans, sp); err != nil || res.Changed || len(r.h.Writes()) > 0 {
				t.Errorf("rerun: %v changed %v wrote %v", err, res.Changed, r.h.Writes())
			}

			p, err := disk.PlanRelease(context.Background(), "/mnt/srv", disk.ReleaseOptions{Wipe: true}, r.deps())
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			p.WriteText(&b)
			for _, want := range []string{"cryptsetup close srv-srv_crypt", "cryptsetup erase --batch-mode /dev/dm-", "lvconvert --yes --uncache srv/srv"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("release --wipe dry run lacks %q:\n%s", want, b.String())
				}
			}
			if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
				t.Fatalf("release: %v", err)
			}
			if got := append(r.h.Stacks(), r.h.PVs()...); len(got) != 0 {
				t.Errorf("left after release --wipe: %q", got)
			}
			for _, d := range []string{"sdb", "sdc"} {
				if sigs := r.h.Signatures(d); len(sigs) != 0 {
					t.Errorf("%s is not signature-free after release --wipe: %v", d, sigs)
				}
			}
			if strings.Contains(string(r.h.File("/etc/crypttab")), "srv-srv_crypt") || strings.Contains(string(r.h.File("/etc/fstab")), "/mnt/srv") {
				t.Errorf("crypttab or fstab still name it:\n%s\n%s", r.h.File("/etc/crypttab"), r.h.File("/etc/fstab"))
			}
		})
	}
}

func TestCacheEncryptedCrashAtEveryStep(t *testing.T) {
	c := encryptedCache("lvmcache", "")
	fresh := func() *stackRig { return newCacheRig(t) }
	killAtEveryWrite(t, fresh, c, runOf("pvcreate"), func(r *stackRig, n int, before hosttest.Effect) {
		if got := strings.Join(r.h.Mounted(), ";"); !strings.Contains(got, "/mnt/srv") {
			t.Errorf("kill before write %d (%s), rerun: mounts %q", n, before, got)
		}
		unchangedOnThirdRun(t, r, c, n, before)
	})
}

func TestCacheEncryptedBcacheRefused(t *testing.T) {
	c := encryptedCache("bcache", "writeback")
	if err := c.stack.Validate(c.reqs); err == nil || !strings.Contains(err.Error(), "a bcache device cannot be encrypted yet") {
		t.Errorf("bcache with encrypt: %v", err)
	}
}
