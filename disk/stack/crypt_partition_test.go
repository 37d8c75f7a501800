package stack_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/stack"
)

// LUKS2 right on a partition (prepare DEVICE --encrypt): the partition
// typed as LUKS, the layer and the file system on sdb1_crypt, persisted
// through crypttab and fstab; a rerun changes nothing; release --wipe
// closes it, destroys its key slots and leaves the disk blank.
func encryptedPartition() stackCase {
	return stackCase{
		reqs: []disk.Request{{Device: "/dev/sdb", Partitions: []disk.PartSpec{{Use: "crypt:sdb"}}}},
		stack: stack.StackRequest{Encrypted: []stack.EncryptedSpec{{Key: "sdb",
			Volume: stack.VolumeSpec{FS: "xfs", Label: "vault", Mount: "/mnt/vault", Persist: true, Encrypt: &crypt.Spec{KeyFile: "/etc/diskprep/keys/vault.key"}}}}},
	}
}

func TestStackEncryptedPartition(t *testing.T) {
	r := newStackRig(t, "sdb")
	plans, sp, err := r.plan(encryptedPartition())
	if err != nil {
		t.Fatal(err)
	}
	if got := plans[0].Partitions[0].TypeGUID; got != disk.LinuxLUKSGUID {
		t.Errorf("partition type %s, want LUKS's %s", got, disk.LinuxLUKSGUID)
	}
	var dry bytes.Buffer
	sp.WriteText(&dry)
	for _, want := range []string{
		"xfs on /dev/mapper/sdb1_crypt, LUKS2 on /dev/sdb1, 4096-byte sectors", "mounted at /mnt/vault",
		"make key file /etc/diskprep/keys/vault.key",
		"cryptsetup luksFormat --batch-mode --type luks2",
		"--key-file '<key file /etc/diskprep/keys/vault.key>' /dev/sdb1 sdb1_crypt",
		"ensure in /etc/crypttab: sdb1_crypt UUID=",
		"mkfs.xfs",
	} {
		if !strings.Contains(dry.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, dry.String())
		}
	}
	res, err := r.apply(plans, sp)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if len(res.Encrypted) != 1 {
		t.Fatalf("result %+v", res)
	}
	v := res.Encrypted[0].Volume
	if res.Encrypted[0].Partition != "/dev/sdb1" || v.Device != "/dev/mapper/sdb1_crypt" || v.Crypt == nil || !v.Crypt.Formatted || !v.Crypt.Opened ||
		!v.Crypt.CrypttabAdded || !v.Formatted || !v.Mounted || !v.FstabAdded {
		t.Errorf("encrypted partition %+v crypt %+v", v, v.Crypt)
	}
	if !strings.Contains(string(r.h.File("/etc/crypttab")), "sdb1_crypt UUID="+v.Crypt.UUID+" /etc/diskprep/keys/vault.key luks,nofail,headless=true") {
		t.Errorf("crypttab:\n%s", r.h.File("/etc/crypttab"))
	}
	if f := string(r.h.File("/etc/fstab")); !strings.Contains(f, "UUID="+v.UUID+"\t/mnt/vault\txfs\tdefaults,nofail") {
		t.Errorf("fstab:\n%s", f)
	}

	// Again: already prepared as asked, nothing written.
	r.h.ResetLog()
	plans, sp, err = r.plan(encryptedPartition())
	if err != nil {
		t.Fatal(err)
	}
	if !sp.Unchanged {
		t.Errorf("rerun plan is not unchanged: %v", sp.Steps())
	}
	if res, err = r.apply(plans, sp); err != nil || res.Changed {
		t.Fatalf("rerun: %v %+v", err, res)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("rerun wrote: %v", w)
	}

	r.h.ResetLog()
	p, err := disk.PlanRelease(context.Background(), "/mnt/vault", disk.ReleaseOptions{Wipe: true}, r.deps())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	p.WriteText(&b)
	for _, want := range []string{"cryptsetup close sdb1_crypt", "cryptsetup erase --batch-mode /dev/sdb1", "wipefs --all /dev/sdb1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("release --wipe dry run lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
		t.Fatal(err)
	}
	if got := r.h.Stacks(); len(got) != 0 {
		t.Errorf("stacks left: %q", got)
	}
	for _, d := range []string{"sdb", "sdb1"} {
		if sigs := r.h.Signatures(d); len(sigs) != 0 {
			t.Errorf("%s is not blank: %v", d, sigs)
		}
	}
	if strings.Contains(string(r.h.File("/etc/crypttab")), "sdb1_crypt") || strings.Contains(string(r.h.File("/etc/fstab")), "/mnt/vault") {
		t.Errorf("crypttab or fstab still name it:\n%s\n%s", r.h.File("/etc/crypttab"), r.h.File("/etc/fstab"))
	}
}

// The request is held to one partition per entry, and an entry needs its
// key file.
func TestStackEncryptedPartitionBadInput(t *testing.T) {
	c := encryptedPartition()
	c.reqs = append(c.reqs, disk.Request{Device: "/dev/sdc", Partitions: []disk.PartSpec{{Use: "crypt:sdb"}}})
	if err := c.stack.Validate(c.reqs); err == nil || !strings.Contains(err.Error(), "2 partitions say use: crypt:sdb, want one") {
		t.Errorf("two partitions: %v", err)
	}
	c = encryptedPartition()
	c.stack.Encrypted[0].Volume.Encrypt = nil
	if err := c.stack.Validate(c.reqs); err == nil || !strings.Contains(err.Error(), "no encrypt") {
		t.Errorf("no encrypt: %v", err)
	}
}
