package stack_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/crypt"
	"github.com/diskprep/diskprep/disk/hosttest"
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
	if n := strings.Count(b.String(), "wipefs --all /dev/sdb1"); n != 1 {
		t.Errorf("the partition is wiped %d times, want once:\n%s", n, b.String())
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

// A passphrase instead of a key file: asked through Deps (twice for a
// new volume, once to open a closed one, never on a rerun that has
// nothing to do), given to cryptsetup on its standard input, stretched by
// cryptsetup's default PBKDF, and found in no argv, effect, log, plan,
// result or crypttab.
func TestStackEncryptedPartitionPassphrase(t *testing.T) {
	const secret = "correct horse battery staple"
	r := newStackRig(t, "sdb")
	c := encryptedPartition()
	c.stack.Encrypted[0].Volume.Encrypt = &crypt.Spec{Passphrase: true}
	var asked []string
	var logs bytes.Buffer
	deps := r.deps()
	deps.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	deps.Passphrase = func(_ context.Context, name string, confirm bool) ([]byte, error) {
		asked = append(asked, fmt.Sprintf("%s %v", name, confirm))
		return []byte(secret), nil
	}
	apply := func() (*stack.StackPlan, *stack.StackResult) {
		t.Helper()
		plans, sp, err := r.plan(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range plans {
			if _, err := disk.Apply(context.Background(), p, deps); err != nil {
				t.Fatal(err)
			}
		}
		res, err := stack.ApplyStacks(context.Background(), sp, deps)
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		return sp, res
	}
	sp, res := apply()
	var dry bytes.Buffer
	sp.WriteText(&dry)
	if got := strings.Join(asked, ","); got != "sdb1_crypt true" {
		t.Errorf("asked %q, want once, confirmed, for sdb1_crypt", got)
	}
	format := sp.Encrypted[0].Volume.Crypt.Format
	if f := strings.Join(format, " "); !strings.Contains(f, "--key-file - /dev/sdb1") || strings.Contains(f, "pbkdf") {
		t.Errorf("luksFormat %q: want the passphrase on stdin, cryptsetup's own PBKDF", f)
	}
	for _, want := range []string{"ask the passphrase of sdb1_crypt on the terminal, not echoed (twice)", "--key-file '<passphrase on standard input>' /dev/sdb1"} {
		if !strings.Contains(dry.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, dry.String())
		}
	}
	v := res.Encrypted[0].Volume
	if !strings.Contains(string(r.h.File("/etc/crypttab")), "sdb1_crypt UUID="+v.Crypt.UUID+" none luks,nofail\n") {
		t.Errorf("crypttab:\n%s", r.h.File("/etc/crypttab"))
	}

	// Again: nothing to do, nothing asked.
	asked = nil
	if sp, res = apply(); !sp.Unchanged || res.Changed || len(asked) > 0 {
		t.Errorf("rerun: unchanged %v, changed %v, asked %q", sp.Unchanged, res.Changed, asked)
	}
	// Closed: opened with the passphrase asked once, its files kept.
	r.h.ByOthers(func() {
		if err := r.h.Unmount("/mnt/vault"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.h.Run(t.Context(), "cryptsetup", "close", "sdb1_crypt"); err != nil {
			t.Fatal(err)
		}
	})
	if _, res = apply(); strings.Join(asked, ",") != "sdb1_crypt false" || res.Encrypted[0].Volume.Formatted || !res.Encrypted[0].Volume.Crypt.Opened {
		t.Errorf("reopen: asked %q, result %+v", asked, res.Encrypted[0].Volume)
	}

	resJSON, _ := json.Marshal(res)
	planJSON, _ := json.Marshal(sp)
	for what, text := range map[string]string{"effects": r.h.Transcript(), "log": logs.String(), "result": string(resJSON), "plan": string(planJSON),
		"dry run": dry.String(), "crypttab": string(r.h.File("/etc/crypttab")), "fstab": string(r.h.File("/etc/fstab"))} {
		if strings.Contains(text, secret) || strings.Contains(text, hex.EncodeToString([]byte(secret))) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(secret))) {
			t.Errorf("the passphrase is in the %s", what)
		}
	}
	if !strings.Contains(logs.String(), "open the LUKS2 volume: finished") {
		t.Errorf("the log does not show the steps, so its check says nothing:\n%s", logs.String())
	}

	// No one to ask: the layer fails before its first step.
	r2 := newStackRig(t, "sdb")
	plans, sp2, err := r2.plan(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if _, err := disk.Apply(context.Background(), p, r2.deps()); err != nil {
			t.Fatal(err)
		}
	}
	r2.h.ResetLog()
	if _, err := stack.ApplyStacks(context.Background(), sp2, r2.deps()); err == nil || !strings.Contains(err.Error(), "needs a passphrase, and nothing asks for it") {
		t.Errorf("without an asker: %v", err)
	}
	if w := r2.h.Writes(); len(w) > 0 {
		t.Errorf("without an asker it wrote: %v", w)
	}
}

// tpm2: a second key slot sealed to the TPM (systemd-cryptenroll, unlocked
// with the key file, which stays as the recovery key) unlocks the volume
// at boot: crypttab names no key file and asks the TPM. Refused where the
// kernel shows no TPM 2.0; a rerun enrolls nothing again; a kill at any
// step converges on the rerun, the enrollment included.
func TestStackEncryptedPartitionTPM2(t *testing.T) {
	tpm2 := func() stackCase {
		c := encryptedPartition()
		c.stack.Encrypted[0].Volume.Encrypt.TPM2 = true
		return c
	}
	r := newStackRig(t, "sdb")
	if _, _, err := r.plan(tpm2()); !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "no TPM 2.0") {
		t.Fatalf("no TPM: %v, want a refusal", err)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("refused plan wrote: %v", w)
	}
	withTPM := func(r *stackRig) {
		r.h.SetFile("/sys/class/tpm/tpm0/tpm_version_major", []byte("2\n"))
	}
	withTPM(r)
	plans, sp, err := r.plan(tpm2())
	if err != nil {
		t.Fatal(err)
	}
	var dry bytes.Buffer
	sp.WriteText(&dry)
	for _, want := range []string{
		"systemd-cryptenroll --unlock-key-file '<key file /etc/diskprep/keys/vault.key>' --tpm2-device=auto /dev/sdb1",
		"none luks,nofail,headless=true,tpm2-device=auto",
	} {
		if !strings.Contains(dry.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, dry.String())
		}
	}
	res, err := r.apply(plans, sp)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	cr := res.Encrypted[0].Volume.Crypt
	if !cr.TPM2Enrolled || !cr.Formatted || !cr.Opened {
		t.Errorf("crypt result %+v", cr)
	}
	if !strings.Contains(string(r.h.File("/etc/crypttab")), "sdb1_crypt UUID="+cr.UUID+" none luks,nofail,headless=true,tpm2-device=auto\n") {
		t.Errorf("crypttab:\n%s", r.h.File("/etc/crypttab"))
	}
	enrolls := func(r *stackRig) int {
		n := 0
		for _, w := range r.h.Writes() {
			if w.Op == "run" && w.Args[0] == "systemd-cryptenroll" {
				n++
			}
		}
		return n
	}
	if n := enrolls(r); n != 1 {
		t.Errorf("%d enrollments, want 1", n)
	}
	// What inventory reads of the header: the token is there.
	if d, _ := r.h.FactsNow().Device("/dev/sdb"); d == nil || len(d.Partitions) != 1 || d.Partitions[0].Crypt == nil ||
		!slices.Equal(d.Partitions[0].Crypt.Tokens, []string{crypt.TPM2Token}) {
		t.Errorf("inventory of sdb: %+v", d)
	}
	r.h.ResetLog()
	plans, sp, err = r.plan(tpm2())
	if err != nil {
		t.Fatal(err)
	}
	if !sp.Unchanged {
		t.Errorf("rerun plan is not unchanged: %v", sp.Steps())
	}
	if res, err = r.apply(plans, sp); err != nil || res.Changed || len(r.h.Writes()) > 0 {
		t.Fatalf("rerun: %v changed %v wrote %v", err, res.Changed, r.h.Writes())
	}

	var diff strings.Builder
	for _, c := range sp.Diff("", "", nil) {
		fmt.Fprintln(&diff, c.What)
	}
	if want := "the TPM at boot (recovery key file /etc/diskprep/keys/vault.key)"; !strings.Contains(diff.String(), want) {
		t.Errorf("diff lacks %q:\n%s", want, diff.String())
	}

	fresh := func() *stackRig {
		r := newStackRig(t, "sdb")
		withTPM(r)
		return r
	}
	// The first write that is not the disk's own (its GPT) is a layer's.
	layer := func(w hosttest.Effect) bool { return w.Op != "write" && w.Op != "sync" && w.Op != "open" }
	clean := fresh()
	clean.prepare(t, tpm2())
	enrolled := slices.IndexFunc(clean.h.Writes(), runOf("systemd-cryptenroll"))
	killAtEveryWrite(t, fresh, tpm2(), layer, func(r *stackRig, n int, before hosttest.Effect) {
		// The killed run enrolled when it got past the enrollment: the
		// rerun enrolls only when it did not.
		if got, want := enrolls(r), map[bool]int{true: 0, false: 1}[n > enrolled]; got != want {
			t.Errorf("kill before write %d (%s): the rerun enrolled %d times, want %d", n, before, got, want)
		}
		if !strings.Contains(string(r.h.File("/etc/crypttab")), "tpm2-device=auto") || len(r.h.Mounted()) == 0 {
			t.Errorf("kill before write %d (%s): rerun left crypttab %q, mounts %q", n, before, r.h.File("/etc/crypttab"), r.h.Mounted())
		}
	})
}

// A file system mkfs would refuse for want of room is refused at planning,
// before any step: on an encrypted partition (the mapping is the
// partition less the LUKS2 header) and on a logical volume of a size
// asked.
func TestStackFileSystemRoomCheckedWhenPlanning(t *testing.T) {
	r := newStackRig(t)
	r.h.AddDisk(hosttest.Disk{Name: "sdb", Minor: 16, SizeBytes: 256 << 20, Model: "FAKE SSD", Serial: "SMALL1"})
	if _, _, err := r.plan(encryptedPartition()); !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "/dev/mapper/sdb1_crypt is too small for xfs: it would have 238 MiB, xfs needs at least 300 MiB") {
		t.Errorf("xfs on a 256 MiB disk's LUKS2 mapping: %v", err)
	}
	c := lvmFast()
	c.stack.Groups[0].Volumes[1].SizeBytes = 100 << 20
	r = newStackRig(t, "sdb", "sdc")
	if _, _, err := r.plan(c); !errors.Is(err, disk.ErrRefused) || !strings.Contains(err.Error(), "/dev/fast/vm is too small for xfs: it would have 100 MiB") {
		t.Errorf("xfs on a 100 MiB logical volume: %v", err)
	}
	if w := r.h.Writes(); len(w) > 0 {
		t.Errorf("refused plans wrote: %v", w)
	}
}
