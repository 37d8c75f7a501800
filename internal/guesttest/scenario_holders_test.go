package guesttest

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Scenario c of issue 10: disks held by the kernel's stacking drivers. In
// one guest: a physical volume of an active LVM volume group with a logical
// volume, both members of an active md RAID1, a disk under a dm linear
// mapping, an open LUKS2 volume, and an active swap disk. prepare (also with --wipe) refuses each
// with exit 3, naming what holds it, and the whole disk's bytes are the
// same afterwards (sha256 in the guest); the inventory shows each holder,
// and the LUKS volume's header as cryptsetup's luksDump says it.
// Then a disk holds the root file system through LVM: diskprep, run in a
// mount namespace whose / is that logical volume, marks it the system disk
// and refuses it; release --wipe of it is refused too, dry run or not.
//
// The disks are small (32 MiB): hashing runs at about 20 MB/s under TCG.
// One boot (about 25 s).

var holderDisks = []string{
	"sata-hdd:32M:serial=LVMPV0001",
	"virtio:32M:serial=MDA0001",
	"virtio:32M:serial=MDB0001",
	"virtio:32M:serial=DMLIN0001",
	"virtio:32M:serial=LUKS0001",
	"virtio:32M:serial=SWAP0001",
	"virtio:64M:serial=ROOTLV0001",
}

const holdersScript = `set -u
mark() { echo "@@ $1"; }
lvm=$(readlink -f /dev/disk/by-id/ata-QEMU_HARDDISK_LVMPV0001)
md1=$(readlink -f /dev/disk/by-id/virtio-MDA0001)
md2=$(readlink -f /dev/disk/by-id/virtio-MDB0001)
dm=$(readlink -f /dev/disk/by-id/virtio-DMLIN0001)
lk=$(readlink -f /dev/disk/by-id/virtio-LUKS0001)
sw=$(readlink -f /dev/disk/by-id/virtio-SWAP0001)
root=$(readlink -f /dev/disk/by-id/virtio-ROOTLV0001)
mark names; echo "lvm=${lvm#/dev/} md=${md1#/dev/} md2=${md2#/dev/} dm=${dm#/dev/} crypt=${lk#/dev/} swap=${sw#/dev/} root=${root#/dev/}"
mark setup
{ pvcreate -q $lvm && vgcreate -q vgdata $lvm && lvcreate -q -y -L 8M -n lv0 vgdata; } >/dev/null || echo "lvm setup failed"
mdadm --create /dev/md0 --run --assume-clean --level=1 --raid-devices=2 --metadata=1.2 $md1 $md2 2>/dev/null || echo "md setup failed"
dmsetup create lin0 --table "0 $(blockdev --getsz $dm) linear $dm 0" || echo "dm setup failed"
{ mkswap -q $sw && swapon $sw; } >/dev/null || echo "swap setup failed"
printf 0123456789abcdef >/root/key
{ cryptsetup luksFormat --batch-mode --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 --key-file /root/key $lk &&
	cryptsetup open --key-file /root/key $lk luks-holders; } >/dev/null 2>&1 || echo "luks setup failed"
mark luksdump; cryptsetup luksDump $lk | grep -E '^[[:space:]]*(cipher|sector):|^[[:space:]]*Key:' | tr -s ' \t' ' '
sha256sum $lvm $md1 $md2 $dm $lk $sw >/root/sums
for d in lvm=$lvm md=$md1 dm=$dm crypt=$lk swap=$sw; do
	n=${d%%=*} dev=${d#*=}
	diskprep prepare $dev --fs ext4 --yes >/dev/null 2>/root/err
	rc=$?
	mark $n.exit; echo $rc
	mark $n.stderr; cat /root/err
	diskprep prepare $dev --fs ext4 --wipe --yes >/dev/null 2>/root/err
	rc=$?
	mark $n.wipe.exit; echo $rc
	mark $n.wipe.stderr; cat /root/err
done
mark sums; sha256sum -c --quiet /root/sums && echo same
diskprep inventory -o json >/root/inv.json 2>/root/err
rc=$?
mark inv.exit; echo $rc
mark inv; cat /root/inv.json
mark inv.stderr; cat /root/err

# The root on LVM: a copy of what diskprep needs (it is static) on a logical
# volume, made / of a mount namespace with pivot_root. There only the shell's
# builtins and diskprep are at hand (the old root stays at /oldroot: the
# guest's tools need its libraries): what diskprep says lands in the new
# root's /tmp, read here through /mnt/newroot.
{ pvcreate -q $root && vgcreate -q vgroot $root && lvcreate -q -y -l 100%FREE -n root vgroot &&
	mkfs.ext4 -q /dev/vgroot/root && mkdir -p /mnt/newroot && mount /dev/vgroot/root /mnt/newroot &&
	mkdir -p /mnt/newroot/proc /mnt/newroot/sys /mnt/newroot/dev /mnt/newroot/run /mnt/newroot/oldroot /mnt/newroot/bin /mnt/newroot/tmp &&
	cp /usr/local/bin/diskprep /mnt/newroot/bin/; } >/dev/null || echo "root setup failed"
# The LVM label and metadata (the first MiB): what a release would wipe.
dd if=$root bs=1M count=1 2>/dev/null | sha256sum >/root/rootsum
unshare -m sh -c '
	mount --rbind /dev /mnt/newroot/dev && mount --rbind /sys /mnt/newroot/sys &&
	mount --rbind /run /mnt/newroot/run && mount -t proc proc /mnt/newroot/proc &&
	cd /mnt/newroot && pivot_root . oldroot || exit 99
	/bin/diskprep inventory -o json >/tmp/inv.json 2>/tmp/inv.err
	echo $? >/tmp/inv.exit
	while read -r l; do echo "$l"; done </proc/self/mountinfo >/tmp/mountinfo
	/bin/diskprep prepare '$root' --fs ext4 --wipe --yes >/dev/null 2>/tmp/prep.err
	echo $? >/tmp/prep.exit
	/bin/diskprep release '$root' --wipe --dry-run >/dev/null 2>/tmp/reldry.err
	echo $? >/tmp/reldry.exit
	/bin/diskprep release '$root' --wipe --yes --force-unmount >/dev/null 2>/tmp/rel.err
	echo $? >/tmp/rel.exit

'
rc=$?
mark pivot.exit; echo $rc
cd /mnt/newroot/tmp
mark rootinv.exit; cat inv.exit
mark rootinv; cat inv.json
mark rootinv.stderr; cat inv.err
mark rootinv.mountinfo; cat mountinfo
mark rootprep.exit; cat prep.exit
mark rootprep.stderr; cat prep.err
mark rootrel.dry.exit; cat reldry.exit
mark rootrel.dry.stderr; cat reldry.err
mark rootrel.exit; cat rel.exit
mark rootrel.stderr; cat rel.err
mark rootrel.sum; dd if=$root bs=1M count=1 2>/dev/null | sha256sum | cmp -s - /root/rootsum && echo same
mark end
`

func TestScenarioHolders(t *testing.T) {
	parallel(t)
	r := Run(t, Options{Disks: holderDisks}, "sh", "-c", holdersScript)
	out := splitMarked(r.Stdout)
	if _, ok := out["end"]; !ok || r.ExitCode != 0 {
		t.Fatalf("the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if out["setup"] != "" {
		t.Fatalf("setting up the holders failed: %s\nstderr:\n%s", out["setup"], r.Stderr)
	}
	names := map[string]string{}
	for _, f := range strings.Fields(out["names"]) {
		k, v, _ := strings.Cut(f, "=")
		names[k] = v
	}

	// Refused, naming the holder, with and without --wipe.
	for _, c := range []struct{ key, why string }{
		{"lvm", `is held by lvm dm-\d+ \(vgdata-lv0\)`},
		{"md", `is held by md md0 \(`},
		{"dm", `is held by dm dm-\d+ \(lin0\)`},
		{"crypt", `is held by crypt dm-\d+ \(luks-holders\)`},
		{"swap", `holds the running system \(swap on ` + names["swap"] + `\)`},
	} {
		for _, k := range []string{c.key, c.key + ".wipe"} {
			if out[k+".exit"] != "3" {
				t.Errorf("prepare of the %s disk (%s): exit %s, want 3\n%s", k, names[c.key], out[k+".exit"], out[k+".stderr"])
			}
			re := regexp.MustCompile(`^diskprep: refusing to prepare ` + names[c.key] + `: ` + names[c.key] + ` ` + c.why)
			if !re.MatchString(out[k+".stderr"]) || strings.Count(out[k+".stderr"], "\n") != 0 {
				t.Errorf("prepare of the %s disk: stderr %q, want one line matching %s", k, out[k+".stderr"], re)
			}
		}
	}
	if out["sums"] != "same" {
		t.Errorf("the disks' bytes changed (sha256sum -c):\n%s", out["sums"])
	}

	// The inventory shows each holder.
	if out["inv.exit"] != "0" || out["inv.stderr"] != "" {
		t.Errorf("inventory: exit %s, stderr:\n%s", out["inv.exit"], out["inv.stderr"])
	}
	var inv inventoryJSON
	decodeJSON(t, "inventory", out["inv"], &inv)
	disks := map[string]int{}
	for i, d := range inv.Disks {
		disks[d.Name] = i
	}
	for _, c := range []struct{ key, kind, dmName string }{
		{"lvm", "lvm", "vgdata-lv0"}, {"md", "md", ""}, {"md2", "md", ""}, {"dm", "dm", "lin0"}, {"crypt", "crypt", "luks-holders"},
	} {
		i, ok := disks[names[c.key]]
		if !ok {
			t.Errorf("inventory lacks %s", names[c.key])
			continue
		}
		d := inv.Disks[i]
		if len(d.Holders) != 1 || d.Holders[0].Kind != c.kind || (c.dmName != "" && d.Holders[0].DMName != c.dmName) ||
			(c.kind == "md" && d.Holders[0].Name != "md0") {
			t.Errorf("inventory: %s holders %+v, want one %s %s", d.Name, d.Holders, c.kind, c.dmName)
		}
		if d.System {
			t.Errorf("inventory: %s is marked system", d.Name)
		}
	}
	// The LUKS header, as luksDump says it: " cipher: aes-xts-plain64",
	// " sector: 512 [bytes]", " Key: 512 bits" (the keyslot's).
	dump := map[string]string{}
	for _, l := range strings.Split(out["luksdump"], "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ": "); ok {
			dump[k] = strings.Fields(v)[0]
		}
	}
	if i, ok := disks[names["crypt"]]; !ok || inv.Disks[i].Crypt == nil {
		t.Errorf("inventory: no LUKS volume on %s", names["crypt"])
	} else if c := *inv.Disks[i].Crypt; c.Version != 2 || c.Cipher != dump["cipher"] || strconv.Itoa(c.SectorBytes) != dump["sector"] ||
		strconv.Itoa(c.KeyBits) != dump["Key"] || !c.Open || c.Mapper != "/dev/mapper/luks-holders" {
		t.Errorf("inventory: LUKS volume %+v, want LUKS2, open at /dev/mapper/luks-holders, and as luksDump says %v", c, dump)
	} else {
		t.Logf("inventory: LUKS volume %+v; luksDump %v", c, dump)
	}
	if i, ok := disks[names["swap"]]; !ok || !inv.Disks[i].Swap || !inv.Disks[i].System {
		t.Errorf("inventory: the swap disk %s is not shown as active swap (system): %+v", names["swap"], inv.Disks[i])
	}

	// The root through LVM: the disk under it is the system disk.
	if out["pivot.exit"] != "0" || out["rootinv.exit"] != "0" || out["rootinv.stderr"] != "" {
		t.Fatalf("inventory with / on LVM: exit %s/%s, stderr:\n%s\nguest stderr:\n%s", out["pivot.exit"], out["rootinv.exit"], out["rootinv.stderr"], r.Stderr)
	}
	if !regexp.MustCompile(`(?m)^\S+ \S+ \d+:\d+ / / .* - ext4 /dev/(mapper/vgroot-root|dm-\d+) `).MatchString(out["rootinv.mountinfo"]) {
		t.Fatalf("/ is not on a device-mapper device in the namespace:\n%s", out["rootinv.mountinfo"])
	}
	var rinv inventoryJSON
	decodeJSON(t, "inventory with / on LVM", out["rootinv"], &rinv)
	var found bool
	for _, d := range rinv.Disks {
		switch d.Name {
		case names["root"]:
			found = true
			onRoot := false
			for _, m := range d.Mounts {
				onRoot = onRoot || m.Point == "/" && strings.Contains(m.Via, "vgroot-root")
			}
			if !d.System || !onRoot || len(d.Holders) != 1 || d.Holders[0].Kind != "lvm" || d.Holders[0].DMName != "vgroot-root" {
				t.Errorf("with / on LVM over %s: system %v, mounts %+v, holders %+v; want system, / via vgroot-root", d.Name, d.System, d.Mounts, d.Holders)
			}
		case names["swap"]:
		default:
			if d.System {
				t.Errorf("with / on LVM over %s, %s is marked system too", names["root"], d.Name)
			}
		}
	}
	if !found {
		t.Errorf("inventory with / on LVM lacks %s", names["root"])
	}
	if out["rootprep.exit"] != "3" || !regexp.MustCompile(`^diskprep: refusing to prepare `+names["root"]+`: `+names["root"]+` holds the running system \(`).MatchString(out["rootprep.stderr"]) {
		t.Errorf("prepare --wipe of the disk under /: exit %s, stderr %q; want 3, holds the running system", out["rootprep.exit"], out["rootprep.stderr"])
	}
	// release --wipe of it, dry run or not, whatever the flags: refused,
	// its LVM label and metadata the same bytes.
	for _, k := range []string{"rootrel.dry", "rootrel"} {
		if out[k+".exit"] != "3" || !regexp.MustCompile(`^diskprep: refusing to release /dev/`+names["root"]+`: .*running system`).MatchString(out[k+".stderr"]) || strings.Count(out[k+".stderr"], "\n") != 0 {
			t.Errorf("%s of the disk under /: exit %s, stderr %q; want 3, one line naming the running system", k, out[k+".exit"], out[k+".stderr"])
		}
	}
	if out["rootrel.sum"] != "same" {
		t.Errorf("release --wipe of the disk under / changed its first MiB")
	}
}
