package main

import (
	"context"
	"strings"
	"testing"

	"github.com/diskprep/diskprep/disk"
	"github.com/diskprep/diskprep/disk/hosttest"
	"github.com/diskprep/diskprep/hwinfo"
)

// stackMachine is a machine whose disks are the recording fake's.
func stackMachine(t *testing.T) (*machine, *hosttest.Host) {
	t.Helper()
	h := hosttest.New()
	h.SetFile("/etc/mdadm/.keep", nil)
	for i, n := range []string{"sdb", "sdc"} {
		h.AddDisk(hosttest.Disk{Name: n, Minor: uint32(16 * (i + 1)), SizeBytes: 2 << 30, Model: "FAKE", Serial: "S" + n})
	}
	m, _ := fakeMachine(t, 0, false)
	m.readFacts = func(context.Context, string, *env) (*hwinfo.Host, error) { return h.FactsNow(), nil }
	m.diskDeps = func(*env) disk.Deps { return disk.Deps{Host: h} }
	return m, h
}

func TestPrepareStackShorthandDryRun(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--raid", "1", "--fs", "xfs", "--mount", "/data", "--persist", "--dry-run"},
			[]string{"mdadm --create /dev/md/data --run --metadata=1.2 --name=data --level=1 --raid-devices=2", "/dev/sdb1 /dev/sdc1", "wipefs --all /dev/md/data", "mkfs.xfs -f -m uuid=", "ensure in /etc/mdadm/mdadm.conf: ARRAY /dev/md/data metadata=1.2 UUID=", "dry run: nothing was changed"}},
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--lvm", "fast/scratch:1G", "--fs", "ext4", "--mount", "/scratch", "--dry-run", "--no-discard"},
			[]string{"pvcreate --metadatatype 2 --dataalignment 1024k /dev/sdb1", "vgcreate --physicalextentsize 4096k fast /dev/sdb1 /dev/sdc1", "lvcreate --yes --wipesignatures y --name scratch --size 1073741824b fast", "mkfs.ext4 -U", "-E nodiscard /dev/fast/scratch"}},
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--raid", "1", "--fs", "xfs", "--mount", "/data", "--persist", "--encrypt", "--key-file", "/etc/diskprep/keys/data.key", "--dry-run", "--no-discard"},
			[]string{"xfs on /dev/mapper/data_crypt, LUKS2 on /dev/md/data, 4096-byte sectors", "make key file /etc/diskprep/keys/data.key (64 random bytes, mode 0400, root's)",
				"cryptsetup luksFormat --batch-mode --type luks2 --uuid ", "--key-file '<key file /etc/diskprep/keys/data.key>' /dev/md/data",
				"cryptsetup open --type luks2 --key-file '<key file /etc/diskprep/keys/data.key>' /dev/md/data data_crypt", "ensure in /etc/crypttab: data_crypt UUID=", "mount -t xfs /dev/mapper/data_crypt /data"}},
		{[]string{"prepare", "/dev/sdb", "--fs", "ext4", "--label", "vault", "--mount", "/vault", "--persist", "--encrypt", "--key-file", "/etc/diskprep/keys/vault.key", "--dry-run", "--no-discard"},
			[]string{`name "vault", type CA7D7CCB-63ED-4C53-861C-1742536059CC`, "ext4 on /dev/mapper/sdb1_crypt, LUKS2 on /dev/sdb1, 4096-byte sectors",
				"cryptsetup luksFormat --batch-mode --type luks2 --uuid ", "--key-file '<key file /etc/diskprep/keys/vault.key>' /dev/sdb1",
				"cryptsetup open --type luks2 --key-file '<key file /etc/diskprep/keys/vault.key>' /dev/sdb1 sdb1_crypt", "ensure in /etc/crypttab: sdb1_crypt UUID=",
				"mkfs.ext4 -F -L vault -U", "/dev/mapper/sdb1_crypt", "mount -t ext4 /dev/mapper/sdb1_crypt /vault"}},
		{[]string{"prepare", "/dev/sdb", "--fs", "xfs", "--mount", "/vault", "--persist", "--encrypt", "--passphrase", "--dry-run", "--no-discard"},
			[]string{"ask the passphrase of sdb1_crypt on the terminal, not echoed (twice), before any step",
				"--key-file '<passphrase on standard input>' /dev/sdb1", "ensure in /etc/crypttab: sdb1_crypt UUID=", " none luks,nofail"}},
	} {
		m, h := stackMachine(t)
		code, out, errOut := runArgsOn(m, c.args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", c.args, code, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: the dry run does not say %q:\n%s", c.args, w, out)
			}
		}
		if strings.Contains(out, "blkdiscard") == slicesContains(c.args, "--no-discard") {
			t.Errorf("%q: blkdiscard in the plan is wrong for --no-discard:\n%s", c.args, out)
		}
		if w := h.Writes(); len(w) > 0 {
			t.Errorf("%q: the dry run wrote: %v", c.args, w)
		}
	}
}

// A prepare right after a wipe (a release --wipe just before) reads its
// facts from udev's database only once udev has processed the wipe's
// events: where udev runs, udevadm settle comes before the facts (the
// guest's crash test refused blank members without it: udev still named
// the array they had been in).
func TestPrepareSettlesUdevBeforeFacts(t *testing.T) {
	for _, udev := range []bool{true, false} {
		m, h := stackMachine(t)
		if udev {
			h.SetFile("/run/udev/control", nil)
		}
		var before []string
		facts := m.readFacts
		m.readFacts = func(ctx context.Context, root string, e *env) (*hwinfo.Host, error) {
			if before == nil {
				for _, ef := range h.Log() {
					before = append(before, ef.String())
				}
				before = append(before, "(facts)")
			}
			return facts(ctx, root, e)
		}
		code, _, errOut := runArgsOn(m, "prepare", "/dev/sdb", "/dev/sdc", "--raid", "1", "--fs", "xfs", "--mount", "/data", "--dry-run")
		if code != 0 {
			t.Fatalf("udev %v: exit %d: %s", udev, code, errOut)
		}
		settled := slicesContains(before, "  run udevadm settle --timeout=30")
		if settled != udev {
			t.Errorf("udev running %v: before the facts were read: %q", udev, before)
		}
	}
}

func TestPrepareStackShorthandBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--raid", "3", "--fs", "xfs", "--dry-run"}, "unknown level 3"},
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--raid", "5", "--fs", "xfs", "--dry-run"}, "level 5 needs at least 3 members"},
		{[]string{"prepare", "/dev/sdb", "/dev/sdb", "--raid", "1", "--fs", "xfs", "--dry-run"}, "/dev/sdb is given twice"},
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--raid", "1", "--lvm", "v", "--fs", "xfs", "--dry-run"}, "give --raid or --lvm, not both"},
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--lvm", "v/a:huge", "--fs", "xfs", "--dry-run"}, "size \"huge\""},
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--fs", "xfs", "--dry-run"}, "several go with --raid or --lvm"},
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--raid", "1", "--fs", "xfs", "--encrypt", "--dry-run"}, "encrypt needs a key file (--key-file PATH)"},
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--raid", "1", "--fs", "xfs", "--key-file", "/etc/k", "--dry-run"}, "--key-file goes with --encrypt"},
		{[]string{"prepare", "/dev/sdb", "/dev/sdc", "--raid", "1", "--fs", "xfs", "--encrypt", "--key-file", "k", "--dry-run"}, `key file "k": give a clean absolute path`},
		{[]string{"prepare", "--image", "/tmp/x.img", "--size", "1G", "--fs", "xfs", "--encrypt", "--key-file", "/etc/k", "--dry-run"}, "--encrypt takes a DEVICE, not --image"},
		{[]string{"prepare", "/dev/sdb", "--fs", "swap", "--encrypt", "--key-file", "/etc/k", "--dry-run"}, "swap belongs on a partition"},
		{[]string{"prepare", "/dev/sdb", "--fs", "xfs", "--encrypt", "--dry-run"}, "encrypt needs a key file (--key-file PATH) or a passphrase (--passphrase)"},
		{[]string{"prepare", "/dev/sdb", "--fs", "xfs", "--encrypt", "--passphrase", "--key-file", "/etc/k", "--dry-run"}, "a key file or a passphrase, not both"},
		{[]string{"prepare", "/dev/sdb", "--fs", "xfs", "--passphrase", "--dry-run"}, "--passphrase goes with --encrypt"},
		{[]string{"prepare", "/dev/sdb", "--fs", "xfs", "--tpm2", "--dry-run"}, "--tpm2 goes with --encrypt"},
		{[]string{"prepare", "/dev/sdb", "--fs", "xfs", "--encrypt", "--tpm2", "--dry-run"}, "tpm2 needs a key file (--key-file PATH): it enrolls the TPM and stays as the recovery key"},
		{[]string{"prepare", "/dev/sdb", "--fs", "xfs", "--encrypt", "--tpm2", "--passphrase", "--dry-run"}, "tpm2 needs a key file"},
	} {
		m, _ := stackMachine(t)
		code, _, errOut := runArgsOn(m, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d %q, want exit 2 saying %q", c.args, code, errOut, c.want)
		}
	}
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// --encrypt --tpm2: refused, exit 3, where the kernel shows no TPM 2.0;
// with one, the dry run enrolls it with the key file, shown as one.
func TestPrepareEncryptTPM2(t *testing.T) {
	args := []string{"prepare", "/dev/sdb", "--fs", "xfs", "--mount", "/mnt/v", "--persist", "--encrypt", "--tpm2", "--key-file", "/etc/diskprep/keys/v.key", "--dry-run"}
	m, h := stackMachine(t)
	if code, _, errOut := runArgsOn(m, args...); code != exitRefused || !strings.Contains(errOut, "no TPM 2.0") {
		t.Errorf("no TPM: exit %d %q, want exit 3 saying so", code, errOut)
	}
	h.SetFile("/sys/class/tpm/tpm0/tpm_version_major", []byte("2\n"))
	code, out, errOut := runArgsOn(m, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"systemd-cryptenroll --unlock-key-file '<key file /etc/diskprep/keys/v.key>' --tpm2-device=auto /dev/sdb1",
		"none luks,nofail,headless=true,tpm2-device=auto"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
}
