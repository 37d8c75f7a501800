package guesttest

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Issue 23 on a real kernel, with systemd as PID 1 and the guest's root
// (so /etc/crypttab, /etc/fstab and the key files) kept under --state:
// an md RAID1 -> LUKS2 -> xfs, an LVM volume -> LUKS2 -> ext4, an
// NVMe partition -> LUKS2 -> LVM -> ext4 (a plan file's encrypted group) and a
// partition -> LUKS2 -> ext4 (prepare DEVICE --encrypt), each
// first killed after a LUKS step (the crashtest build) and then made by
// the plain run; a rerun changes nothing; after a reboot systemd unlocks
// both from their key files and mounts them. With one key file gone the
// next boot still completes, the other volume mounted; then release
// --wipe leaves no key slot, no crypttab entry and blank disks. A sixth
// volume (NVMe partition -> LUKS2 -> xfs) is sealed to the guest's TPM
// (swtpm), killed after luksFormat and after the enrollment, and is
// unlocked at boot by the TPM alone, its key file moved away; a seventh
// is an lvmcache volume (HDD origin, SSD cache) -> LUKS2 -> ext4.

var cryptDisks = []string{"sata-ssd:512M:serial=CRYPTA", "sata-ssd:512M:serial=CRYPTB", "virtio:384M:serial=CRYPTC", "nvme:256M:serial=CRYPTD", "sata-ssd:256M:serial=CRYPTE", "nvme:256M:serial=CRYPTF", "sata-hdd:256M:serial=CRYPTG", "sata-ssd:128M:serial=CRYPTH"}

const cryptLib = `set -u
mark() { echo "@@ $1"; }
disk() { lsblk -dnpo PATH,SERIAL | awk -v s="$1" '$2 == s {print $1}'; }
# Up to 5 min for each: on a loaded machine the boot's LVM activation,
# unlocking and mounts come long after the command starts. A unit with
# no job left (its device timed out, a dependency failed) is not waited
# for: it will not start; diag then says what the boot's journal said.
waitactive() {
	for u in "$@"; do
		i=0
		while [ $i -lt 1500 ] && ! systemctl is-active -q "$u" && ! systemctl is-failed -q "$u" &&
			{ [ $i -lt 25 ] || [ -n "$(systemctl show -p Job --value "$u")" ]; }; do sleep 0.2; i=$((i + 1)); done
	done
	for u in "$@"; do
		if ! systemctl is-active -q "$u"; then
			mark diag; systemctl list-jobs --no-pager
			journalctl -b -o short-monotonic --no-pager | grep -E 'Timed out|Dependency failed|Found device|cryptsetup|udev|pvscan|lvm' | tail -n 80
			break
		fi
	done
}
A=$(disk CRYPTA) B=$(disk CRYPTB) C=$(disk CRYPTC) D=$(disk CRYPTD) E=$(disk CRYPTE) F=$(disk CRYPTF) G=$(disk CRYPTG) H=$(disk CRYPTH)
cat >/root/safe.yaml <<EOF
version: 1
disks:
  - select: {serial: CRYPTD}
    partitions: [{size: rest, use: lvm:safe}]
lvm:
  - vg: safe
    encrypt: {key_file: /etc/diskprep/keys/safe.key}
    volumes:
      - {name: docs, size: rest, fs: ext4, mount: /docs, persist: true}
EOF
safe() { diskprep prepare --plan /root/safe.yaml --yes "$@" 2>&1; echo "exit $?"; }
# The member's mapping is named after its partition at prepare
# (nvme0n1p1_crypt); crypttab keeps that name whatever the next boot
# calls the disk.
member() { awk '$3 == "/etc/diskprep/keys/safe.key" {print $1}' /etc/crypttab; }
mirror() { diskprep prepare "$A" "$B" --raid 1 --fs xfs --mount /data --persist --encrypt --key-file /etc/diskprep/keys/data.key --yes "$@" 2>&1; echo "exit $?"; }
vault() { diskprep prepare "$C" --lvm "vault/home:${HOMESIZE:-256M}" --fs ext4 --mount /home2 --persist --encrypt --key-file /etc/diskprep/keys/home.key --yes "$@" 2>&1; echo "exit $?"; }
plain() { diskprep prepare "$E" --fs ext4 --label plain --mount /plain --persist --encrypt --key-file /etc/diskprep/keys/plain.key --yes "$@" 2>&1; echo "exit $?"; }
tpm() { diskprep prepare "$F" --fs ext4 --mount /tpm --persist --encrypt --tpm2 --key-file /etc/diskprep/keys/tpm.key --yes "$@" 2>&1; echo "exit $?"; }
tpmpart() { lsblk -nrpo PATH "$F" | sed -n 2p; }
cached() { diskprep prepare --cache "$G" --cache-device "$H" --name cached --fs ext4 --mount /cached --persist --encrypt --key-file /etc/diskprep/keys/cached.key --yes "$@" 2>&1; echo "exit $?"; }
# The partition's mapping is named after the partition at prepare
# (sdc1_crypt); the kernel may name the disk otherwise in a later boot.
part() { awk '$3 == "/etc/diskprep/keys/plain.key" {print $1}' /etc/crypttab; }
units() {
	for u in data.mount home2.mount docs.mount 'systemd-cryptsetup@data_crypt.service' 'systemd-cryptsetup@vault\x2dhome_crypt.service'; do
		echo "$u $(systemctl show -p ActiveState --value "$u")"
	done
	echo "member $(systemctl show -p ActiveState --value "systemd-cryptsetup@$(member).service")"
	echo "plain $(systemctl show -p ActiveState --value plain.mount) $(systemctl show -p ActiveState --value "systemd-cryptsetup@$(part).service")"
	echo "tpm $(systemctl show -p ActiveState --value tpm.mount)"
	echo "cached $(systemctl show -p ActiveState --value cached.mount) $(lvs --noheadings -o segtype cached/cached | tr -d ' ')"
}
`

const cryptPrepare = cryptLib + `
if [ "$DISKPREP_GUEST_BOOT" = 1 ]; then
	mark killformat; DISKPREP_TEST_CRASH_AT=luks-formatted mirror | tail -n 1
	mark mirror; mirror
	mark killopen; DISKPREP_TEST_CRASH_AT=luks-opened vault | tail -n 1
	mark vault; vault
	mark killsafe; DISKPREP_TEST_CRASH_AT=luks-formatted safe | tail -n 1
	mark safe; safe
	mark killplain; DISKPREP_TEST_CRASH_AT=luks-formatted plain | tail -n 1
	mark plain; plain
	mark killtpm; DISKPREP_TEST_CRASH_AT=luks-formatted tpm | tail -n 1
	mark killenroll; DISKPREP_TEST_CRASH_AT=tpm2-enrolled tpm | tail -n 1
	mark tpm; tpm
	mark cached; cached
	echo one >/data/kept; echo two >/home2/kept; echo three >/docs/kept; echo four >/plain/kept; echo five >/tpm/kept; echo six >/cached/kept; sync
	mark again; mirror; vault; safe; plain; tpm; cached
	mark tokens; cryptsetup luksDump "$(tpmpart)" | grep -c systemd-tpm2
	mark pvs; pvs --noheadings -o pv_name,vg_name -S vg_name=safe | awk '{print $1, $2}'; member
	mark keys; stat -c '%a %U %s %n' /etc/diskprep/keys /etc/diskprep/keys/data.key /etc/diskprep/keys/home.key /etc/diskprep/keys/safe.key /etc/diskprep/keys/plain.key
	mark crypttab; grep -v '^#' /etc/crypttab | grep . | awk '{print $1, $3, $4}'
	mark dump; cryptsetup luksDump /dev/md/data | grep -E '^Version|sector:|PBKDF:|Cipher:' | awk '{$1=$1; print}' | sort -u
	mark sources; findmnt -no SOURCE /data; findmnt -no SOURCE /home2; findmnt -no SOURCE /docs; findmnt -no SOURCE /plain; findmnt -no SOURCE /cached
	mark parttype; lsblk -dno PARTTYPE "${E}1"; part
	mark inventory; diskprep inventory --no-color 2>&1 | grep LUKS
	mark tpmmap; awk '$4 ~ /tpm2-device=auto/ {print $1}' /etc/crypttab
	# The TPM alone unlocks it at the next boot.
	mv /etc/diskprep/keys/tpm.key /root/tpm.key
	exit 0
fi
waitactive data.mount home2.mount docs.mount plain.mount tpm.mount cached.mount
mark units.2; units
mark kept.2; cat /data/kept /home2/kept /docs/kept /plain/kept /tpm/kept /cached/kept
# The next boot goes without the volume's key.
mv /etc/diskprep/keys/home.key /root/home.key
mark end
`

const cryptKeyGone = cryptLib + `
waitactive data.mount docs.mount plain.mount tpm.mount cached.mount
i=0
while [ $i -lt 150 ] && [ "$(systemctl show -p ActiveState --value 'systemd-cryptsetup@vault\x2dhome_crypt.service')" = activating ]; do sleep 0.2; i=$((i + 1)); done
mark reached; echo yes
mark units.3; units
mark kept.3; cat /data/kept /docs/kept /plain/kept
mark inventory.3; diskprep inventory --no-color 2>&1 | grep LUKS
mv /root/home.key /etc/diskprep/keys/home.key
mark reopen; vault
mark kept.4; cat /home2/kept
mark size.4; findmnt -bno SIZE /home2
mark grow; HOMESIZE=320M vault
mark grown; findmnt -bno SIZE /home2; cat /home2/kept
mark release; for m in /data /home2 /docs /plain /tpm /cached; do diskprep release $m --wipe --yes 2>&1; echo "exit $?"; done
mark crypttab.5; grep -c . /etc/crypttab
mark blank; for d in "$A" "$B" "$C" "$D" "$E" "$F" "$G" "$H"; do echo "$d $(blkid -p -o value -s TYPE "$d"; lsblk -nro NAME "$d" | wc -l)"; done
# A passphrase typed on a terminal (a pty: each prompt answered once it
# is shown, with the echo already off), then looked for everywhere.
pwtty() {
	python3 -c '
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
pw, buf = os.environ["PW"].encode() + b"\n", b""
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    buf += data
    last = buf.split(b"\n")[-1]
    if buf.endswith(b": ") and (b"Passphrase for" in last or b"The same again" in last):
        os.write(fd, pw)
        buf = b""
_, st = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(st))
' "$@"
}
export PW
mark pw; pwtty diskprep -o json prepare "$E" --fs ext4 --mount /pw --persist --encrypt --passphrase --yes >/root/pw.out 2>&1; echo "exit $?"
mark pw.mounted; findmnt -no FSTYPE /pw
mark pw.open; printf '%s' "$PW" | cryptsetup open --test-passphrase --key-file - "${E}1" && echo yes
mark pw.crypttab; grep -v '^#' /etc/crypttab | grep . | awk '{print $3, $4}'
pwtty diskprep prepare "$E" --fs ext4 --mount /pw --persist --encrypt --passphrase --yes >/root/pw.rerun 2>&1
mark pw.rerun; grep -q "already prepared as asked" /root/pw.rerun && echo prepared; grep -q "Passphrase for" /root/pw.rerun && echo asked
# (/run/guest holds this script, passphrase and all.)
mark pw.leak; grep -rlF -- "$PW" /etc /run /var/log /root/pw.out 2>/dev/null | grep -v '^/run/guest/'; journalctl -b --no-pager 2>/dev/null | grep -cF -- "$PW"; diskprep inventory 2>&1 | grep -cF -- "$PW"
mark pw.release; diskprep release /pw --wipe --yes 2>&1; echo "exit $?"
mark pw.out; cat /root/pw.out
mark end
`

// cryptPassphrase is the passphrase the scenario types; it must show
// nowhere in what the guest prints or keeps.
const cryptPassphrase = "tcg Guest-pass 7!"

func TestScenarioEncrypt(t *testing.T) {
	parallel(t)
	bin := crashtestBinary(t)
	state := t.TempDir()
	run := func(step string, boots int, script string) map[string]string {
		t.Helper()
		// Two systemd boots under TCG, the first with three prepares and
		// two kills: 130 s alone here, and more than the 5 min default
		// (stretched by the load) in the whole guest tier, where the first
		// call also waits for the systemd image to be built.
		r := Run(t, Options{Disks: cryptDisks, State: state, Boots: boots, Systemd: true, TPM: true, Timeout: 10 * time.Minute,
			Env: []string{"DISKPREP_GUEST_DISKPREP=" + bin}}, "sh", "-c", script)
		out := splitMarked(r.Stdout)
		if _, ok := out["end"]; !ok || r.ExitCode != 0 {
			t.Fatalf("%s: the guest script did not finish (exit %d)\nstdout:\n%s\nstderr:\n%s", step, r.ExitCode, r.Stdout, r.Stderr)
		}
		t.Logf("%s (%.1fs):\n%s", step, r.Elapsed.Seconds(), r.Stdout)
		return out
	}
	exit := func(out map[string]string, step string) string { return lastLine(out[step]) }

	out := run("prepare, reboot", 2, cryptPrepare)
	for step, want := range map[string]string{"killformat": "exit 137", "mirror": "exit 0", "killopen": "exit 137", "vault": "exit 0", "killsafe": "exit 137", "safe": "exit 0",
		"killplain": "exit 137", "plain": "exit 0", "killtpm": "exit 137", "killenroll": "exit 137", "tpm": "exit 0", "cached": "exit 0"} {
		if got := exit(out, step); got != want {
			t.Errorf("%s: %s, want %s:\n%s", step, got, want, out[step])
		}
	}
	pvs := strings.Fields(out["pvs"])
	if len(pvs) != 3 || pvs[0] != "/dev/mapper/"+pvs[2] || pvs[1] != "safe" || !regexp.MustCompile(`^nvme\d+n1p1_crypt$`).MatchString(pvs[2]) {
		t.Fatalf("pvs: the encrypted member is not safe's physical volume on the NVMe partition:\n%s", out["pvs"])
	}
	member := pvs[2]
	if !strings.Contains(out["safe"], "LUKS2 /dev/mapper/"+member) || !strings.Contains(out["safe"], ": opened (") {
		t.Errorf("the run after the kill does not say it opened the member:\n%s", out["safe"])
	}
	if strings.Count(out["again"], "exit 0") != 6 || strings.Count(out["again"], "The storage stacks are already prepared as asked") != 6 {
		t.Errorf("the rerun is not a no-op:\n%s", out["again"])
	}
	// Killed after luksFormat, then after the enrollment: one token, the
	// rerun opening what the kills left.
	tpmMapping := out["tpmmap"]
	if out["tokens"] != "1" || !strings.HasSuffix(tpmMapping, "_crypt") {
		t.Errorf("TPM2 tokens on the volume after two kills and a rerun: %q, want 1 (mapping %q)", out["tokens"], tpmMapping)
	}
	if got := out["tpm"]; !strings.Contains(got, "the TPM at boot (recovery key file /etc/diskprep/keys/tpm.key)") || !strings.Contains(got, ": opened (") {
		t.Errorf("the run after the kills does not say it opened the TPM-sealed volume:\n%s", got)
	}
	if got, want := out["keys"], "700 root 4096 /etc/diskprep/keys\n400 root 64 /etc/diskprep/keys/data.key\n400 root 64 /etc/diskprep/keys/home.key\n400 root 64 /etc/diskprep/keys/safe.key\n400 root 64 /etc/diskprep/keys/plain.key"; got != want {
		t.Errorf("key files:\n%swant:\n%s", got, want)
	}
	parttype := strings.Fields(out["parttype"])
	if len(parttype) != 2 || !strings.EqualFold(parttype[0], "ca7d7ccb-63ed-4c53-861c-1742536059cc") {
		t.Fatalf("the encrypted partition's GPT type:\n%s", out["parttype"])
	}
	part := parttype[1]
	if !strings.Contains(out["plain"], "LUKS2 /dev/mapper/"+part) || !strings.Contains(out["plain"], ": opened (") {
		t.Errorf("the run after the kill does not say it opened the partition's volume:\n%s", out["plain"])
	}
	if got, want := out["crypttab"], "data_crypt /etc/diskprep/keys/data.key luks,nofail,headless=true\nvault-home_crypt /etc/diskprep/keys/home.key luks,nofail,headless=true\n"+member+" /etc/diskprep/keys/safe.key luks,nofail,headless=true\n"+
		part+" /etc/diskprep/keys/plain.key luks,nofail,headless=true\n"+tpmMapping+" none luks,nofail,headless=true,tpm2-device=auto\ncached-cached_crypt /etc/diskprep/keys/cached.key luks,nofail,headless=true"; got != want {
		t.Errorf("crypttab:\n%swant:\n%s", got, want)
	}
	for _, want := range []string{"Version: 2", "sector: 4096 [bytes]", "PBKDF: pbkdf2", "Cipher: aes-xts-plain64"} {
		if !strings.Contains(out["dump"], want) {
			t.Errorf("luksDump lacks %q:\n%s", want, out["dump"])
		}
	}
	// One space between words: a partition's row is spaced to the
	// disks' columns, an array's or volume's to its own.
	if inv := strings.Join(strings.Fields(out["inventory"]), " "); strings.Count(inv, "LUKS2 aes-xts-plain64 512-bit key, 4096 B sectors, crypt data_crypt: /data") != 1 ||
		strings.Count(inv, "LUKS2 aes-xts-plain64 512-bit key, 4096 B sectors, crypt vault-home_crypt: /home2") != 1 ||
		strings.Count(inv, "LUKS2 aes-xts-plain64 512-bit key, 4096 B sectors, crypt "+part+": /plain") != 1 ||
		strings.Count(inv, "LUKS2 aes-xts-plain64 512-bit key, 4096 B sectors, TPM2, crypt "+tpmMapping+": /tpm") != 1 {
		t.Errorf("inventory of the encrypted array, volume and partition:\n%s", out["inventory"])
	}
	// The cached volume's type as lvs says it, not LVM metadata's
	// cache+CACHE_USES_CACHEVOL.
	if inv := strings.Join(strings.Fields(out["inventory"]), " "); !regexp.MustCompile(`cached \d+ MiB cache dm-\d+ `).MatchString(inv) {
		t.Errorf("inventory of the encrypted cached volume:\n%s", out["inventory"])
	}
	if got := out["mirror"]; !strings.Contains(got, "LUKS2 /dev/mapper/data_crypt on /dev/md/data, 4096-byte sectors, key file /etc/diskprep/keys/data.key: opened") {
		t.Errorf("the run after the kill does not say it opened the volume:\n%s", got)
	}
	if got := out["sources"]; got != "/dev/mapper/data_crypt\n/dev/mapper/vault-home_crypt\n/dev/mapper/safe-docs\n/dev/mapper/"+part+"\n/dev/mapper/cached-cached_crypt" {
		t.Errorf("mounted from:\n%s", got)
	}
	if got, want := out["units.2"], "data.mount active\nhome2.mount active\ndocs.mount active\nsystemd-cryptsetup@data_crypt.service active\nsystemd-cryptsetup@vault\\x2dhome_crypt.service active\nmember active\nplain active active\ntpm active\ncached active cache"; got != want {
		t.Errorf("after the reboot:\n%swant:\n%s\nthe boot's journal:\n%s", got, want, out["diag"])
	}
	if out["kept.2"] != "one\ntwo\nthree\nfour\nfive\nsix" {
		t.Errorf("files after the reboot: %q", out["kept.2"])
	}

	out = run("the volume's key gone", 1, "PW='"+cryptPassphrase+"'\n"+cryptKeyGone)
	if out["reached"] != "yes" {
		t.Errorf("the boot without a key did not complete")
	}
	if got, want := out["units.3"], "data.mount active\nhome2.mount inactive\ndocs.mount active\nsystemd-cryptsetup@data_crypt.service active\nsystemd-cryptsetup@vault\\x2dhome_crypt.service failed\nmember active\nplain active active\ntpm active\ncached active cache"; got != want {
		t.Errorf("without home.key:\n%swant:\n%s\nthe boot's journal:\n%s", got, want, out["diag"])
	}
	if inv := out["inventory.3"]; !strings.Contains(inv, "crypt data_crypt: /data") || !strings.Contains(inv, "4096 B sectors, closed") ||
		!strings.Contains(inv, `LUKS volume vault-home_crypt (crypttab) is not open: its key file /etc/diskprep/keys/home.key is missing (systemctl status systemd-cryptsetup@vault\x2dhome_crypt.service)`) {
		t.Errorf("inventory without home.key:\n%s", inv)
	}
	if out["kept.3"] != "one\nthree\nfour" {
		t.Errorf("/data without home.key: %q", out["kept.3"])
	}
	if exit(out, "reopen") != "exit 0" || out["kept.4"] != "two" {
		t.Errorf("the key back, prepare opens the volume and keeps its files:\n%s%s", out["reopen"], out["kept.4"])
	}
	// Grown: the volume, then its open mapping, then the ext4 on it,
	// mounted, the file kept.
	if g := out["grow"]; lastLine(g) != "exit 0" || !strings.Contains(g, "grown from 256 MiB to 320 MiB with lvextend --size 335544320b vault/home, then its LUKS2 mapping with cryptsetup resize --key-file '<key file /etc/diskprep/keys/home.key>' vault-home_crypt, then its file system with resize2fs /dev/mapper/vault-home_crypt") {
		t.Errorf("growing the encrypted volume:\n%s", g)
	}
	before, _ := strconv.ParseUint(strings.TrimSpace(out["size.4"]), 10, 64)
	if f := strings.Fields(out["grown"]); len(f) != 2 || f[1] != "two" {
		t.Errorf("after the grow: %q", out["grown"])
	} else if n, _ := strconv.ParseUint(f[0], 10, 64); before == 0 || n < before+50<<20 {
		t.Errorf("the file system has %d bytes after the grow, %d before: want 64 MiB more, less ext4's share", n, before)
	}
	if strings.Count(out["release"], "exit 0") != 6 || strings.Count(out["release"], "cryptsetup erase") != 6 {
		t.Errorf("release --wipe:\n%s", out["release"])
	}
	if out["crypttab.5"] != "0" {
		t.Errorf("crypttab after release: %q lines", out["crypttab.5"])
	}
	for _, l := range strings.Split(strings.TrimSpace(out["blank"]), "\n") {
		if f := strings.Fields(l); len(f) != 2 || f[1] != "1" {
			t.Errorf("not blank after release --wipe: %q", l)
		}
	}

	// The passphrase, typed twice on a terminal: the volume opens with
	// it, systemd is to ask it at boot, a rerun asks nothing, and it is
	// in no output, file, journal line or inventory.
	if exit(out, "pw") != "exit 0" || out["pw.mounted"] != "ext4" || out["pw.open"] != "yes" {
		t.Errorf("prepare --passphrase: %s, mounted %q, opens with the passphrase %q\n%s", exit(out, "pw"), out["pw.mounted"], out["pw.open"], out["pw.out"])
	}
	if out["pw.crypttab"] != "none luks,nofail" || out["pw.rerun"] != "prepared" || exit(out, "pw.release") != "exit 0" {
		t.Errorf("crypttab %q, rerun %q, release %q", out["pw.crypttab"], out["pw.rerun"], out["pw.release"])
	}
	if out["pw.leak"] != "0\n0" {
		t.Errorf("the passphrase is in files, the journal or the inventory:\n%s", out["pw.leak"])
	}
	for k, v := range out {
		if strings.Contains(v, cryptPassphrase) {
			t.Errorf("the passphrase is in the guest's output (%s)", k)
		}
	}
}
