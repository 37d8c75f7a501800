package stack_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/disk/stack"
)

// LUKS2 under an array's and a logical volume's file system, on the fake:
// the key made root's alone, luksFormat and open before mkfs, the crypttab
// and fstab lines, a rerun that changes nothing, a closed volume opened
// again with its files kept, and the key files refused.

func cryptCase() stackCase {
	enc := func(key string) *crypt.Spec { return &crypt.Spec{KeyFile: key} }
	return stackCase{
		reqs: []disk.Request{member("/dev/sdb", "raid:data"), member("/dev/sdc", "raid:data"), member("/dev/sdd", "lvm:vault")},
		stack: stack.StackRequest{
			Arrays: []stack.ArraySpec{{Name: "data", Level: 1,
				Volume: stack.VolumeSpec{FS: "xfs", Mount: "/mnt/data", Persist: true, Encrypt: enc("/etc/diskprep/keys/data.key")}}},
			Groups: []stack.GroupSpec{{VG: "vault", Volumes: []stack.LVSpec{
				{Name: "home", Volume: stack.VolumeSpec{FS: "ext4", Mount: "/mnt/home", Persist: true, Encrypt: enc("/etc/diskprep/keys/home.key")}}}}},
		},
	}
}

func TestStackCrypt(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc", "sdd")
	plans, sp, err := r.plan(cryptCase())
	if err != nil {
		t.Fatal(err)
	}
	var dry bytes.Buffer
	sp.WriteText(&dry)
	for _, want := range []string{
		"make key file /etc/diskprep/keys/data.key",
		"cryptsetup luksFormat --batch-mode --type luks2 --uuid 00000000-0000-4000-8000-000000000008 --sector-size 4096",
		"--key-file '<key file /etc/diskprep/keys/data.key>' /dev/md/data",
		"cryptsetup open --type luks2 --key-file '<key file /etc/diskprep/keys/data.key>' /dev/md/data data_crypt",
		"mkfs.xfs", "/dev/mapper/data_crypt",
		"ensure in /etc/crypttab: data_crypt UUID=00000000-0000-4000-8000-000000000008 /etc/diskprep/keys/data.key luks,nofail,headless=true",
		"/dev/mapper/vault-home_crypt",
	} {
		if !strings.Contains(dry.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, dry.String())
		}
	}
	var diff strings.Builder
	for _, c := range sp.Diff("", "", nil) {
		fmt.Fprintf(&diff, "%s %s %s %s\n", c.Act, c.Layer, c.Device, c.What)
	}
	for _, want := range []string{
		"create luks /dev/mapper/data_crypt LUKS2 on /dev/md/data, 4096-byte sectors, key file /etc/diskprep/keys/data.key (made)",
		"create crypttab /etc/crypttab data_crypt UUID=00000000-0000-4000-8000-000000000008 /etc/diskprep/keys/data.key luks,nofail,headless=true",
		"create filesystem /dev/mapper/data_crypt",
	} {
		if !strings.Contains(diff.String(), want) {
			t.Errorf("diff lacks %q:\n%s", want, diff.String())
		}
	}
	res, err := r.apply(plans, sp)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	ar := res.Arrays[0].Volume
	if ar.Crypt == nil || !ar.Crypt.KeyMade || !ar.Crypt.Formatted || !ar.Crypt.Opened || !ar.Crypt.CrypttabAdded ||
		ar.Crypt.SectorBytes != 4096 || !strings.HasPrefix(ar.Crypt.CryptsetupVersion, "cryptsetup 2.") || ar.Device != "/dev/mapper/data_crypt" || !ar.Formatted || !ar.Mounted {
		t.Errorf("array volume %+v crypt %+v", ar, ar.Crypt)
	}
	for _, key := range []string{"/etc/diskprep/keys/data.key", "/etc/diskprep/keys/home.key"} {
		fi, err := r.h.Lstat(key)
		if err != nil || fi.Mode().Perm() != 0o400 || fi.Size() != 64 {
			t.Errorf("key file %s: %v %v", key, fi, err)
		}
	}
	// The key's bytes are in no argv, effect, result or plan.
	key := r.h.File("/etc/diskprep/keys/data.key")
	resJSON, _ := json.Marshal(res)
	planJSON, _ := json.Marshal(sp)
	for what, text := range map[string]string{"effects": r.h.Transcript(), "result": string(resJSON), "plan": string(planJSON), "dry run": dry.String()} {
		if len(key) != 64 || strings.Contains(text, string(key)) || strings.Contains(text, hex.EncodeToString(key)) || strings.Contains(text, base64.StdEncoding.EncodeToString(key)) {
			t.Errorf("the key is in the %s", what)
		}
	}
	if d, _ := r.h.Stat("/etc/diskprep/keys"); d == nil || d.Mode().Perm() != 0o700 {
		t.Errorf("key directory: %v", d)
	}
	ct := string(r.h.File("/etc/crypttab"))
	if !strings.Contains(ct, "# diskprep: data_crypt added 2026-12-01") || !strings.Contains(ct, "data_crypt UUID=00000000-0000-4000-8000-000000000008 /etc/diskprep/keys/data.key luks,nofail,headless=true\n") ||
		!strings.Contains(ct, "vault-home_crypt UUID=") {
		t.Errorf("crypttab:\n%s", ct)
	}
	if f := string(r.h.File("/etc/fstab")); !strings.Contains(f, "UUID="+ar.UUID+"\t/mnt/data\txfs\tdefaults,nofail") {
		t.Errorf("fstab:\n%s", f)
	}
	stacks := strings.Join(r.h.Stacks(), "\n")
	for _, want := range []string{"crypt data_crypt raid0 md127", "crypt vault-home_crypt raid0 dm-1"} {
		if !strings.Contains(stacks, want) {
			t.Errorf("stacks lack %q:\n%s", want, stacks)
		}
	}

	// Again: already prepared as asked, nothing written.
	r.h.ResetLog()
	plans, sp, err = r.plan(cryptCase())
	if err != nil {
		t.Fatal(err)
	}
	if !sp.Unchanged {
		t.Errorf("rerun plan is not unchanged: %v", sp.Steps())
	}
	for _, c := range sp.Diff("", string(r.h.File("/etc/crypttab")), nil) {
		if (c.Layer == "luks" || c.Layer == "crypttab") && c.Act != disk.ActKeep {
			t.Errorf("rerun diff: %+v", c)
		}
	}
	if res, err = r.apply(plans, sp); err != nil || res.Changed {
		t.Fatalf("rerun: %v %+v", err, res)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("rerun wrote: %v", w)
	}

	// Closed (as after a boot without crypttab): opened again, its file
	// system kept, not made anew.
	r.h.ByOthers(func() {
		if err := r.h.Unmount("/mnt/data"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.h.Run(t.Context(), "cryptsetup", "close", "data_crypt"); err != nil {
			t.Fatal(err)
		}
	})
	plans, sp, err = r.plan(cryptCase())
	if err != nil {
		t.Fatal(err)
	}
	if c := sp.Arrays[0].Volume.Crypt; c.Format != nil || c.Open == nil || !c.FSAfterOpen {
		t.Errorf("closed volume planned %+v", c)
	}
	if res, err = r.apply(plans, sp); err != nil {
		t.Fatal(err)
	}
	if v := res.Arrays[0].Volume; v.Formatted || !v.Mounted || !v.Crypt.Opened || v.UUID != ar.UUID {
		t.Errorf("reopened volume %+v (first UUID %s)", v, ar.UUID)
	}
}

func TestStackCryptKeyFileRefused(t *testing.T) {
	for name, set := range map[string]func(h *hosttest.Host){
		"readable by others": func(h *hosttest.Host) {
			h.SetFile("/etc/diskprep/keys/data.key", []byte("0123456789"))
		},
		"owned by a user": func(h *hosttest.Host) {
			h.SetFile("/etc/diskprep/keys/data.key", []byte("0123456789"))
			h.Chown("/etc/diskprep/keys/data.key", 1000, 0o400)
		},
		"a link owned by a user": func(h *hosttest.Host) {
			h.SetFile("/root/k", []byte("0123456789"))
			h.Chown("/root/k", 0, 0o400)
			h.Mkdir("/etc/diskprep/keys")
			h.Symlink("/root/k", "/etc/diskprep/keys/data.key")
			h.Chown("/etc/diskprep/keys/data.key", 1000, 0o777)
		},
		"in a directory others can write": func(h *hosttest.Host) {
			h.Mkdir("/etc/diskprep/keys")
			h.Chown("/etc/diskprep/keys", 0, 0o777)
		},
		"in a user's directory": func(h *hosttest.Host) {
			h.Mkdir("/etc/diskprep/keys")
			h.Chown("/etc/diskprep/keys", 1000, 0o700)
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := newStackRig(t, "sdb", "sdc", "sdd")
			set(r.h)
			_, _, err := r.plan(cryptCase())
			if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "key file /etc/diskprep/keys/data.key") {
				t.Fatalf("got %v, want a refusal naming the key file", err)
			}
			if w := r.h.Writes(); len(w) > 0 {
				t.Errorf("planning wrote: %v", w)
			}
		})
	}
}

func TestStackCryptBadInput(t *testing.T) {
	for name, e := range map[string]crypt.Spec{
		"no key file":      {},
		"relative":         {KeyFile: "keys/data.key"},
		"space":            {KeyFile: "/etc/my keys/data.key"},
		"bad mapping name": {KeyFile: "/etc/k", Name: "a/b"},
	} {
		t.Run(name, func(t *testing.T) {
			c := cryptCase()
			c.stack.Arrays[0].Volume.Encrypt = &e
			if err := c.stack.Validate(c.reqs); !errors.Is(err, disk.ErrUsage) {
				t.Fatalf("got %v, want a usage error", err)
			}
		})
	}
}

// release: without --wipe the mapping closes, its crypttab entry goes and
// the data stays; with --wipe every key slot is destroyed, then the header,
// and nothing of the stacks is left.
func TestStackCryptRelease(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc", "sdd")
	r.prepare(t, cryptCase())
	r.h.ResetLog()

	p, err := disk.PlanRelease(context.Background(), "/mnt/data", disk.ReleaseOptions{}, r.deps())
	if err != nil {
		t.Fatal(err)
	}
	if p.Stacks == nil || strings.Join(p.Stacks.CryptClose, ",") != "data_crypt" || len(p.Stacks.CryptErase) != 0 ||
		strings.Join(p.Stacks.CrypttabRemove, ",") != "data_crypt" || strings.Join(p.Stacks.MDStop, ",") != "/dev/md127" {
		t.Fatalf("release plan: %+v", p.Stacks)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("planning the release wrote: %v", w)
	}
	if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
		t.Fatal(err)
	}
	ct := string(r.h.File("/etc/crypttab"))
	if strings.Contains(ct, "data_crypt") || !strings.Contains(ct, "vault-home_crypt") {
		t.Errorf("crypttab after the release of data:\n%s", ct)
	}
	if got := strings.Join(r.h.Stacks(), "\n"); strings.Contains(got, "data_crypt") || strings.Contains(got, "md127") {
		t.Errorf("stacks after the release: %s", got)
	}

	r.h.ResetLog()
	p, err = disk.PlanRelease(context.Background(), "/mnt/home", disk.ReleaseOptions{Wipe: true}, r.deps())
	if err != nil {
		t.Fatal(err)
	}
	r.wipeHome(t, p)
}

// wipeHome applies p, the release --wipe of cryptCase's /mnt/home, after
// checking its dry run lists the teardown and wants (more lines), and
// checks nothing of the volume is left.
func (r *stackRig) wipeHome(t *testing.T, p *disk.ReleasePlan, more ...string) {
	t.Helper()
	var b bytes.Buffer
	p.WriteText(&b)
	for _, want := range append([]string{"cryptsetup close vault-home_crypt", "cryptsetup erase --batch-mode /dev/dm-1", "wipefs --all /dev/dm-1", "lvremove --yes vault/home"}, more...) {
		if !strings.Contains(b.String(), want) {
			t.Errorf("release --wipe dry run lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.h.Stacks(), "\n"); strings.Contains(got, "vault") {
		t.Errorf("stacks after release --wipe: %s", got)
	}
	if sigs := r.h.Signatures("sdd"); len(sigs) != 0 {
		t.Errorf("sdd is not signature-free: %v", sigs)
	}
	if strings.Contains(string(r.h.File("/etc/crypttab")), "vault-home_crypt") || strings.Contains(string(r.h.File("/etc/fstab")), "/mnt/home") {
		t.Errorf("crypttab or fstab still name the volume:\n%s\n%s", r.h.File("/etc/crypttab"), r.h.File("/etc/fstab"))
	}
}

// A group over encrypted members: each partition gets LUKS2 and its
// mapping is the physical volume; a rerun is unchanged; release --wipe
// takes the group down, then closes the mappings and destroys their key
// slots, and the disks are blank.
func TestStackCryptMembers(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	c := stackCase{
		reqs: []disk.Request{member("/dev/sdb", "lvm:vault"), member("/dev/sdc", "lvm:vault")},
		stack: stack.StackRequest{Groups: []stack.GroupSpec{{VG: "vault", Encrypt: &crypt.Spec{KeyFile: "/etc/diskprep/keys/vault.key"},
			Volumes: []stack.LVSpec{{Name: "home", Volume: stack.VolumeSpec{FS: "ext4", Mount: "/mnt/home", Persist: true}}}}}},
	}
	plans, sp, err := r.plan(c)
	if err != nil {
		t.Fatal(err)
	}
	var dry bytes.Buffer
	sp.WriteText(&dry)
	for _, want := range []string{
		"make key file /etc/diskprep/keys/vault.key",
		"--key-file '<key file /etc/diskprep/keys/vault.key>' /dev/sdb1 sdb1_crypt",
		"--key-file '<key file /etc/diskprep/keys/vault.key>' /dev/sdc1 sdc1_crypt",
		"pvcreate --metadatatype 2 --dataalignment 1024k /dev/mapper/sdb1_crypt",
		"vgcreate --physicalextentsize 4096k vault /dev/mapper/sdb1_crypt /dev/mapper/sdc1_crypt",
	} {
		if !strings.Contains(dry.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, dry.String())
		}
	}
	if strings.Count(dry.String(), "make key file") != 1 {
		t.Errorf("the shared key is made more than once:\n%s", dry.String())
	}
	res, err := r.apply(plans, sp)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if gr := res.Groups[0]; len(gr.Crypts) != 2 || !gr.Crypts[0].Formatted || !gr.Crypts[1].Opened || !gr.Crypts[0].CrypttabAdded {
		t.Errorf("group result %+v", gr)
	}
	if got := strings.Join(r.h.PVs(), ";"); got != "/dev/mapper/sdb1_crypt vault;/dev/mapper/sdc1_crypt vault" {
		t.Errorf("pvs %q", got)
	}
	ct := string(r.h.File("/etc/crypttab"))
	if !strings.Contains(ct, "sdb1_crypt UUID=") || !strings.Contains(ct, "sdc1_crypt UUID=") {
		t.Errorf("crypttab:\n%s", ct)
	}

	r.h.ResetLog()
	plans, sp, err = r.plan(c)
	if err != nil {
		t.Fatal(err)
	}
	if !sp.Unchanged {
		t.Errorf("rerun plan is not unchanged: %v", sp.Steps())
	}
	for _, p := range plans {
		if !p.Unchanged {
			t.Errorf("rerun: %s is not unchanged: %v", p.Device, p.Steps())
		}
	}
	if res, err = r.apply(plans, sp); err != nil || res.Changed {
		t.Fatalf("rerun: %v %+v", err, res)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("rerun wrote: %v", w)
	}

	r.h.ResetLog()
	p, err := disk.PlanRelease(context.Background(), "/mnt/home", disk.ReleaseOptions{Wipe: true}, r.deps())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	p.WriteText(&b)
	for _, want := range []string{"vgremove vault", "cryptsetup close sdb1_crypt", "cryptsetup erase --batch-mode /dev/sdb1", "wipefs --all /dev/sdb1", "wipefs --all /dev/sdc"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("release --wipe dry run lacks %q:\n%s", want, b.String())
		}
	}
	if i, j := strings.Index(b.String(), "pvremove"), strings.Index(b.String(), "cryptsetup close"); i < 0 || j < i {
		t.Errorf("the mappings close before the group goes:\n%s", b.String())
	}
	if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
		t.Fatal(err)
	}
	if got := r.h.Stacks(); len(got) != 0 {
		t.Errorf("stacks left: %q", got)
	}
	for _, d := range []string{"sdb", "sdc", "sdb1", "sdc1"} {
		if sigs := r.h.Signatures(d); len(sigs) != 0 {
			t.Errorf("%s is not signature-free: %v", d, sigs)
		}
	}
	if ct := string(r.h.File("/etc/crypttab")); strings.Contains(ct, "_crypt") {
		t.Errorf("crypttab after release:\n%s", ct)
	}
}

// A plain group does not take a member that holds a LUKS volume.
func TestStackPlainGroupRefusesLUKSMember(t *testing.T) {
	r := newStackRig(t, "sdb", "sdc")
	enc := stackCase{
		reqs: []disk.Request{member("/dev/sdb", "lvm:vault")},
		stack: stack.StackRequest{Groups: []stack.GroupSpec{{VG: "vault", Encrypt: &crypt.Spec{KeyFile: "/etc/k"},
			Volumes: []stack.LVSpec{{Name: "home", Volume: stack.VolumeSpec{FS: "ext4"}}}}}},
	}
	r.prepare(t, enc)
	// Taken down without --wipe: the LUKS header stays on sdb1.
	p, err := disk.PlanRelease(context.Background(), "/dev/vault/home", disk.ReleaseOptions{}, r.deps())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := disk.ApplyRelease(context.Background(), p, r.deps()); err != nil {
		t.Fatal(err)
	}
	plain := enc
	plain.stack.Groups = []stack.GroupSpec{{VG: "vault", Volumes: enc.stack.Groups[0].Volumes}}
	r.h.ResetLog()
	_, _, err = r.plan(plain)
	if !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "holds a LUKS volume") {
		t.Fatalf("got %v, want a refusal of the LUKS member", err)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("planning wrote: %v", w)
	}
	// The encrypted plan again, its member closed (its group inactive
	// on it): opened, and the group found there, not made anew.
	plans, sp, err := r.plan(enc)
	if err != nil {
		t.Fatal(err)
	}
	if c := sp.Groups[0].Crypts[0]; c.Format != nil || c.Open == nil || !sp.Groups[0].Replan {
		t.Fatalf("closed member planned %+v (replan %v)", c, sp.Groups[0].Replan)
	}
	res, err := r.apply(plans, sp)
	if err != nil {
		t.Fatal(err)
	}
	if gr := res.Groups[0]; gr.Created || len(gr.PVCreateArgv) > 0 || !gr.Crypts[0].Opened || gr.Volumes[0].Created || gr.Volumes[0].Volume.Formatted {
		t.Errorf("reopened group %+v", gr)
	}
}
