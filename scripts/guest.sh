#!/usr/bin/env bash
# Boots a QEMU guest with a real Debian kernel and emulated disks, runs one
# command in it as root and exits with that command's exit code.
#
#   scripts/guest.sh [--disk KIND:SIZE[:key=value,...]]... [--state DIR]
#                    [--share DIR] [--boots N] [--systemd] [--tpm]
#                    [--timeout DURATION] [--ssh PORT] [--verbose] -- COMMAND [ARG...]
#
# KIND is nvme, sata-hdd, sata-ssd, scsi, virtio or usb; SIZE is bytes or
# K/M/G/T (binary). Keys: model, vendor (scsi, usb), serial, wwn (0x and 16 hex
# digits; not NVMe: Linux ignores QEMU's namespace IDs), lbs and pbs (logical and physical block
# size), rpm (rotation rate; sata-hdd defaults to 7200, sata-ssd is 1), name
# (the image's base name, default dN-KIND for the Nth --disk), iops and bps
# (QEMU throttling), badwrite (a 512-byte sector number: every write that
# covers it fails with EIO, through QEMU's blkdebug driver, as on a disk with
# a bad sector). A key the emulated device cannot carry is an error.
#
# Inside the guest: COMMAND runs as root in /root with a static diskprep built
# from this tree on PATH, the tree read-only at /src, --share DIR read-write at
# /share, and DISKPREP_GUEST_BOOT=1 (2 on the second of --boots 2, ...). Its
# stdout and stderr come back on this script's stdout and stderr. The guest's
# root file system is ext4 on its own virtio disk (serial guestroot), so it is
# the system disk and every --disk is free. Without --systemd the root is a
# minimal one (busybox, udevd started by hand, the storage tools); with
# --systemd it is a Debian minbase with systemd as PID 1.
#
# --ssh PORT (with --systemd) gives the guest a network card on QEMU's user
# network, restricted to the host, with the guest's sshd forwarded from
# 127.0.0.1:PORT here; root logs in with a key the command puts in
# /root/.ssh/authorized_keys (sshd is up before the command starts). The
# guest reaches nothing but the forwarded port.
#
# --tpm gives the guest a TPM 2.0 (swtpm, on QEMU's TIS interface: /dev/tpm0,
# /dev/tpmrm0), started for each boot with its state in DIR/tpm/ of --state:
# what is sealed to it in one boot or call unseals in the next. The --systemd
# root has the libtss2 libraries systemd-cryptenroll and systemd-cryptsetup
# load for it. Its boots start the compressed kernel (some 4 s more under TCG).
#
# --state DIR keeps the disk images and the guest's root disk between calls
# (else they live in a temporary directory removed at the end); the console
# log of each boot is in DIR/run/ (its tail shown on failure; --verbose
# streams it to stderr as the guest boots).
#
# Exit status: COMMAND's, or 2 for bad input (nothing started), 124 when
# --timeout (default 5m) ran out, 125 when the guest did not boot or report,
# 130 when interrupted. No qemu or swtpm process, loop device or mount is
# left behind.
#
# Builds are cached in DISKPREP_GUEST_CACHE (default .cache/guest in this
# tree), keyed by their inputs. DISKPREP_GUEST_ACCEL=tcg|kvm overrides the
# KVM probe, DISKPREP_GUEST_SMP the guest's CPU count, DISKPREP_GUEST_CPU its
# CPU model under TCG (default max,-erms,-fsrm), DISKPREP_GUEST_DISKPREP
# names a prebuilt static diskprep to use instead of building one,
# DISKPREP_GUEST_QEMU the QEMU binary (default qemu-system-x86_64).
set -euo pipefail

prog=guest.sh
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
guest_dir=$repo/scripts/guest

bad() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 2
}
note() { printf '%s: %s\n' "$prog" "$*" >&2; }

# ---- arguments ----------------------------------------------------------

disks=() state='' share='' boots=1 systemd='' tpm='' timeout=5m verbose='' ssh_port=''
while [ $# -gt 0 ]; do
	case $1 in
	--disk) [ $# -ge 2 ] || bad "--disk needs KIND:SIZE[:key=value,...]"; disks+=("$2"); shift 2 ;;
	--disk=*) disks+=("${1#*=}"); shift ;;
	--state) [ $# -ge 2 ] || bad "--state needs a directory"; state=$2; shift 2 ;;
	--state=*) state=${1#*=}; shift ;;
	--share) [ $# -ge 2 ] || bad "--share needs a directory"; share=$2; shift 2 ;;
	--share=*) share=${1#*=}; shift ;;
	--boots) [ $# -ge 2 ] || bad "--boots needs a number"; boots=$2; shift 2 ;;
	--boots=*) boots=${1#*=}; shift ;;
	--timeout) [ $# -ge 2 ] || bad "--timeout needs a duration"; timeout=$2; shift 2 ;;
	--timeout=*) timeout=${1#*=}; shift ;;
	--systemd) systemd=1; shift ;;
	--tpm) tpm=1; shift ;;
	--ssh) [ $# -ge 2 ] || bad "--ssh needs a port"; ssh_port=$2; shift 2 ;;
	--ssh=*) ssh_port=${1#*=}; shift ;;
	--verbose | -v) verbose=1; shift ;;
	-h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	-*) bad "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || bad "no COMMAND: usage: $prog [--disk KIND:SIZE[:key=value,...]]... [--state DIR] [--share DIR] [--boots N] [--systemd] [--tpm] [--timeout DURATION] [--ssh PORT] -- COMMAND [ARG...]"

case $boots in '' | *[!0-9]* | 0*) bad "--boots $boots: want a whole number from 1" ;; esac
if [ -n "$ssh_port" ]; then
	case $ssh_port in '' | *[!0-9]* | 0* | ??????*) bad "--ssh $ssh_port: want a port number from 1024 to 65535" ;; esac
	if [ "$ssh_port" -lt 1024 ] || [ "$ssh_port" -gt 65535 ]; then bad "--ssh $ssh_port: want a port number from 1024 to 65535"; fi
	[ -n "$systemd" ] || bad "--ssh needs --systemd (the minimal root has no sshd)"
fi

duration_seconds() {
	local d=$1 n unit
	[[ $d =~ ^([0-9]+)(s|m|h)?$ ]] || return 1
	n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]:-s}
	case $unit in s) echo "$n" ;; m) echo $((n * 60)) ;; h) echo $((n * 3600)) ;; esac
}
timeout_s=$(duration_seconds "$timeout") || bad "--timeout $timeout: want seconds, or N with s, m or h (90s, 5m)"
[ "$timeout_s" -gt 0 ] || bad "--timeout $timeout: must be more than 0"

if [ -n "$share" ]; then
	[ -d "$share" ] || bad "--share $share: not a directory"
	share=$(cd "$share" && pwd)
fi
if [ -n "$state" ]; then
	mkdir -p "$state" 2>/dev/null || bad "--state $state: cannot make the directory"
	state=$(cd "$state" && pwd)
	# swtpm's control socket, DIR/run/swtpm.sock, is a Unix socket path (at
	# most 107 bytes), and swtpm's and QEMU's options split at commas.
	if [ -n "$tpm" ] && { [ ${#state} -gt 93 ] || [[ $state == *,* ]]; }; then
		bad "--state $state: with --tpm, want a path of at most 93 characters and no comma"
	fi
fi

# size_bytes turns 512M, 1G, 4096, 2GiB into bytes.
size_bytes() {
	local s=$1 n unit
	[[ $s =~ ^([0-9]+)([KMGT]?)(i?B)?$ ]] || return 1
	n=${BASH_REMATCH[1]} unit=${BASH_REMATCH[2]}
	[ ${#n} -le 16 ] || return 1
	case $unit in
	'') echo "$n" ;; K) echo $((n << 10)) ;; M) echo $((n << 20)) ;; G) echo $((n << 30)) ;; T) echo $((n << 40)) ;;
	esac
}

pow2_in() { # value min max
	local v=$1
	[[ $v =~ ^[0-9]+$ ]] && [ "$v" -ge "$2" ] && [ "$v" -le "$3" ] && [ $((v & (v - 1))) -eq 0 ]
}

# Each disk becomes: image path, size, and the QEMU arguments that attach it.
disk_names=() disk_sizes=() disk_kinds=() disk_args=() disk_badwrites=()
n_sata=0 n_scsi=0 n_usb=0 n_nvme=0
for i in "${!disks[@]}"; do
	spec=${disks[$i]}
	idx=$((i + 1))
	IFS=: read -r kind size opts extra <<<"$spec"
	[ -z "${extra:-}" ] || bad "--disk $spec: want KIND:SIZE[:key=value,...]"
	case $kind in
	nvme | sata-hdd | sata-ssd | scsi | virtio | usb) ;;
	*) bad "--disk $spec: unknown kind '$kind' (nvme, sata-hdd, sata-ssd, scsi, virtio, usb)" ;;
	esac
	[ -n "${size:-}" ] || bad "--disk $spec: no size"
	bytes=$(size_bytes "$size") || bad "--disk $spec: cannot make a disk of size '$size' (bytes, or a number with K, M, G or T)"
	[ "$bytes" -ge 1048576 ] || bad "--disk $spec: size $size is under 1M"
	[ "$bytes" -le $((16 << 40)) ] || bad "--disk $spec: size $size is over 16T"
	model='' vendor='' serial='' wwn='' lbs='' pbs='' rpm='' name='' iops='' bps='' badwrite=''
	if [ -n "${opts:-}" ]; then
		IFS=, read -r -a kvs <<<"$opts"
		for kv in "${kvs[@]}"; do
			[[ $kv == *=* ]] || bad "--disk $spec: '$kv' is not key=value"
			k=${kv%%=*} v=${kv#*=}
			[ -n "$v" ] || bad "--disk $spec: $k has no value"
			case $k in
			model | vendor | serial | wwn | lbs | pbs | rpm | name | iops | bps | badwrite) ;;
			*) bad "--disk $spec: unknown key '$k' (model, vendor, serial, wwn, lbs, pbs, rpm, name, iops, bps, badwrite)" ;;
			esac
			case $v in *[![:print:]]* | *\"* | *\'* | *\\*) bad "--disk $spec: $k holds a quote, backslash or non-printable character" ;; esac
			printf -v "$k" '%s' "$v"
		done
	fi
	cannot() { bad "--disk $spec: $kind cannot carry $1: $2"; }
	case $kind in
	nvme)
		[ -z "$model" ] || cannot model "QEMU's NVMe controller has a fixed model name"
		[ -z "$vendor" ] || cannot vendor "QEMU's NVMe controller has a fixed vendor"
		[ -z "$rpm" ] || cannot rpm "NVMe reports no rotation rate"
		# QEMU takes an EUI-64 (nvme-ns eui64=), but Linux ignores the
		# namespace IDs of QEMU's controller (either PCI ID) and makes the
		# WWID from vendor, serial and model (nvme.1b36-...).
		[ -z "$wwn" ] || cannot wwn "Linux ignores the namespace IDs of QEMU's NVMe controller"
		;;
	sata-hdd | sata-ssd)
		[ -z "$vendor" ] || cannot vendor "ATA has no vendor field (put it in model)"
		[ -z "$lbs" ] || [ "$lbs" = 512 ] || cannot "lbs=$lbs" "QEMU's SATA disk has 512-byte logical sectors (pbs can be larger)"
		if [ "$kind" = sata-ssd ]; then
			[ -z "$rpm" ] || [ "$rpm" = 1 ] || cannot "rpm=$rpm" "an SSD reports rpm 1 (non-rotating); use sata-hdd"
			rpm=1
		else
			[ "$rpm" != 1 ] || cannot "rpm=1" "rpm 1 means non-rotating; use sata-ssd"
			rpm=${rpm:-7200}
		fi
		;;
	virtio)
		[ -z "$model" ] || cannot model "virtio-blk has no model"
		[ -z "$vendor" ] || cannot vendor "virtio-blk has no vendor"
		[ -z "$wwn" ] || cannot wwn "virtio-blk has no WWN"
		[ -z "$rpm" ] || cannot rpm "virtio-blk has no rotation rate"
		;;
	usb)
		[ -z "$wwn" ] || cannot wwn "Linux reads no VPD pages from USB storage"
		[ -z "$rpm" ] || cannot rpm "Linux reads no VPD pages from USB storage"
		;;
	esac
	if [ -n "$rpm" ]; then
		if ! [[ $rpm =~ ^[0-9]+$ ]] || { [ "$rpm" != 1 ] && { [ "$rpm" -lt 1025 ] || [ "$rpm" -gt 65534 ]; }; }; then
			bad "--disk $spec: rpm $rpm: want 1 (non-rotating) or 1025-65534"
		fi
	fi
	if [ -n "$lbs" ]; then pow2_in "$lbs" 512 4096 || bad "--disk $spec: lbs $lbs: want 512, 1024, 2048 or 4096"; fi
	if [ -n "$pbs" ]; then pow2_in "$pbs" 512 2097152 || bad "--disk $spec: pbs $pbs: want a power of two from 512 to 2M"; fi
	if [ -n "$lbs" ] && [ -z "$pbs" ]; then pbs=$lbs; fi
	if [ -n "$pbs" ] && [ "$pbs" -lt "${lbs:-512}" ]; then bad "--disk $spec: pbs $pbs is smaller than lbs ${lbs:-512}"; fi
	[ $((bytes % ${pbs:-512})) -eq 0 ] || bad "--disk $spec: size $size is not a multiple of the ${pbs:-512}-byte block"
	if [ -n "$wwn" ]; then
		[[ $wwn =~ ^(0x)?[0-9a-fA-F]{16}$ ]] || bad "--disk $spec: wwn $wwn: want 16 hex digits (0x5000c500a1b2c3d4)"
		wwn=0x${wwn#0x}
	fi
	for k in iops bps; do
		v=${!k}
		[ -z "$v" ] || [[ $v =~ ^[1-9][0-9]{0,15}$ ]] || bad "--disk $spec: $k $v: want a whole number above 0"
	done
	if [ -n "$badwrite" ]; then
		if ! [[ $badwrite =~ ^(0|[1-9][0-9]{0,15})$ ]] || [ "$badwrite" -ge $((bytes / 512)) ]; then
			bad "--disk $spec: badwrite $badwrite: want a 512-byte sector number under $((bytes / 512))"
		fi
	fi
	name=${name:-d$idx-$kind}
	[[ $name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || bad "--disk $spec: name $name: use letters, digits, '.', '_', '-'"
	[ "$name" != guestroot ] || bad "--disk $spec: name guestroot is the guest's own root disk"
	for other in "${disk_names[@]}"; do
		[ "$other" != "$name" ] || bad "--disk $spec: two disks named $name"
	done
	serial=${serial:-$(printf '%s' "$name" | tr -cd 'A-Za-z0-9' | cut -c1-20)}
	case $kind in
	nvme | virtio | sata-*) max=20 ;;
	*) max=36 ;;
	esac
	[ ${#serial} -le $max ] || bad "--disk $spec: serial $serial is longer than the $max characters $kind carries"
	[ -z "$model" ] || case $kind in
	sata-*) [ ${#model} -le 40 ] || bad "--disk $spec: model is longer than the 40 characters ATA carries" ;;
	*) [ ${#model} -le 16 ] || bad "--disk $spec: model is longer than the 16 characters SCSI's product carries" ;;
	esac
	[ -z "$vendor" ] || [ ${#vendor} -le 8 ] || bad "--disk $spec: vendor is longer than the 8 characters SCSI carries"

	id=disk$idx
	drive="if=none,id=$id,format=raw,cache=writeback,aio=threads"
	[ -z "$iops" ] || drive+=",throttling.iops-total=$iops"
	[ -z "$bps" ] || drive+=",throttling.bps-total=$bps"
	blk=
	[ -z "$lbs" ] || blk+=",logical_block_size=$lbs"
	[ -z "$pbs" ] || blk+=",physical_block_size=$pbs"
	case $kind in
	nvme)
		# ioeventfd=on: without it QEMU 7.2's NVMe, under TCG, now and then
		# stops taking commands from a queue; the guest's reads then hang
		# until the kernel resets the controller, and again after it.
		dev=(-device "nvme,id=nvme$n_nvme,serial=$serial,ioeventfd=on$blk"
			-device "nvme-ns,bus=nvme$n_nvme,drive=$id,nsid=1$blk")
		n_nvme=$((n_nvme + 1))
		;;
	sata-*)
		dev=(-device "ide-hd,bus=ahci$((n_sata / 6)).$((n_sata % 6)),drive=$id,serial=$serial,rotation_rate=$rpm$blk${model:+,model=$model}${wwn:+,wwn=$wwn}")
		n_sata=$((n_sata + 1))
		;;
	scsi)
		dev=(-device "scsi-hd,bus=scsi0.0,channel=0,scsi-id=$n_scsi,lun=0,drive=$id,serial=$serial$blk${model:+,product=$model}${vendor:+,vendor=$vendor}${wwn:+,wwn=$wwn}${rpm:+,rotation_rate=$rpm}")
		n_scsi=$((n_scsi + 1))
		;;
	virtio)
		dev=(-device "virtio-blk-pci,drive=$id,serial=$serial$blk")
		;;
	usb)
		dev=(-device "usb-bot,id=usb$n_usb,bus=xhci0.0,serial=$serial"
			-device "scsi-hd,bus=usb$n_usb.0,scsi-id=0,lun=0,drive=$id,serial=$serial$blk${model:+,product=$model}${vendor:+,vendor=$vendor}")
		n_usb=$((n_usb + 1))
		;;
	esac
	disk_names+=("$name") disk_sizes+=("$bytes") disk_kinds+=("$kind") disk_badwrites+=("$badwrite")
	disk_args+=("$(printf '%q ' -drive "$drive" "${dev[@]}")")
done

# ---- what is needed on this machine ----------------------------------------

qemu=${DISKPREP_GUEST_QEMU:-qemu-system-x86_64}
need_pkgs=()
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }
if [ -z "${DISKPREP_GUEST_QEMU:-}" ] && ! command -v "$qemu" >/dev/null 2>&1; then need_pkgs+=(qemu-system-x86); fi
if command -v dpkg-query >/dev/null 2>&1; then
	for p in linux-image-amd64 busybox-static udev kmod xfsprogs e2fsprogs gdisk dmsetup lvm2 mdadm \
		bcache-tools cryptsetup-bin smartmontools fio cpio xz-utils binutils util-linux fdisk procps; do
		have_pkg "$p" || need_pkgs+=("$p")
	done
	if [ -n "$systemd" ]; then have_pkg debootstrap || need_pkgs+=(debootstrap); fi
	if [ -n "$tpm" ]; then have_pkg swtpm || need_pkgs+=(swtpm); fi
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
		note "installing ${need_pkgs[*]} (apt-get)"
		if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}"; } >/dev/null 2>&1; then
			bad "missing ${need_pkgs[*]} and apt-get could not install them"
		fi
	else
		bad "missing ${need_pkgs[*]}: install them (Debian packages) or run as root where apt-get can"
	fi
fi
command -v "$qemu" >/dev/null 2>&1 || bad "$qemu not found (Debian package qemu-system-x86)"
[ -z "$tpm" ] || command -v swtpm >/dev/null 2>&1 || bad "--tpm: swtpm not found (Debian package swtpm)"
command -v dpkg-query >/dev/null 2>&1 || bad "the guest is built from Debian packages: no dpkg-query here"
command -v go >/dev/null 2>&1 || [ -n "${DISKPREP_GUEST_DISKPREP:-}" ] || bad "go not found: it builds the guest's diskprep"

# ---- cleanup ------------------------------------------------------------

tmpstate='' qpid='' cat_pids=() tail_pid='' build_pid='' cache='' tpm_pid='' tpm_sock=''
# stop_tpm ends this boot's swtpm (--terminate ends it once QEMU has let go;
# a TERM lets it finish writing its state) and removes its socket.
# shellcheck disable=SC2317 # also run by the EXIT trap
stop_tpm() {
	if [ -n "$tpm_pid" ]; then
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$tpm_pid" 2>/dev/null || break; sleep 0.2; done
		kill -TERM "$tpm_pid" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$tpm_pid" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$tpm_pid" 2>/dev/null || true
		wait "$tpm_pid" 2>/dev/null || true
		tpm_pid=''
	fi
	if [ -n "$tpm_sock" ]; then rm -f "$tpm_sock"; fi
	tpm_sock=''
}
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	local p
	# Nothing cuts the cleanup short: not a second signal (go test's
	# timeout, then the Ctrl-C of a user who is tired of waiting), not a
	# stderr whose reader has gone.
	trap '' INT TERM HUP PIPE
	if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
		kill -TERM "$qpid" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$qpid" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$qpid" 2>/dev/null || true
		wait "$qpid" 2>/dev/null || true
	fi
	stop_tpm
	for p in "${cat_pids[@]}" $tail_pid; do kill "$p" 2>/dev/null || true; done
	if [ -n "$build_pid" ]; then
		# A build cut short: its session goes, and with it what debootstrap
		# mounted in its root (this call holds the cache's lock, so every
		# half-made build there is this one's).
		kill -TERM -- "-$build_pid" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$build_pid" 2>/dev/null || break; sleep 0.2; done
		kill -KILL -- "-$build_pid" 2>/dev/null || true
		wait "$build_pid" 2>/dev/null || true
		awk -v d="$cache/" 'index($2, d) == 1 && $2 ~ /\.tmp\./ {print $2}' /proc/self/mounts | sort -r |
			while read -r m; do umount -l "$m" 2>/dev/null || true; done
		rm -rf "$cache"/*.tmp.* "$cache"/*.part
	fi
	if [ -n "$tmpstate" ]; then rm -rf "$tmpstate"; fi
}
trap cleanup EXIT
# PIPE too: a caller that dies closes the pipes this script writes to, and
# an untrapped SIGPIPE would end it without the cleanup, leaving QEMU.
trap 'trap "" PIPE; note "interrupted" || true; exit 130' INT TERM HUP PIPE

if [ -z "$state" ]; then
	tmpstate=$(mktemp -d "${TMPDIR:-/tmp}/diskprep-guest.XXXXXX")
	state=$tmpstate
fi

# ---- builds (cached) ----------------------------------------------------

# shellcheck source=scripts/guest/build.sh
. "$guest_dir/build.sh"

cache=${DISKPREP_GUEST_CACHE:-$repo/.cache/guest}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
kver=$(guest_kernel_version) || bad "no /boot/vmlinuz-* with its /lib/modules (Debian package linux-image-amd64)"
root_size=4G
key=$(guest_inputs_key "$kver" "$root_size")
kernel=$cache/vmlinux-$kver
initrd=$cache/initrd-$key.cpio
# With a TPM, SeaBIOS's ACPI tables (and the TPM's 64K event log with them)
# outgrow the room QEMU leaves for them above the initrd when it boots the
# vmlinux through PVH: the initrd, copied in after, overwrites them, and the
# guest has no ACPI (no TPM, no power-off). QEMU's bzImage loader puts the
# initrd lower; it costs the kernel's decompression, about 4 s under TCG.
if [ -n "$tpm" ]; then kernel=/boot/vmlinuz-$kver; fi
if [ -n "$systemd" ]; then
	flavour=systemd-$(guest_inputs_key "$kver" "$root_size" systemd "${systemd_packages[@]}" "$(debian_suite)")
	guest_init=/sbin/init
else
	flavour=minimal-$key
	guest_init=/usr/sbin/guest-run
fi
base_root=$cache/root-$flavour.img
# build WHAT ARG...: one build in a session of its own (see cleanup).
build() {
	local rc=0
	setsid bash "$guest_dir/build.sh" "$@" &
	build_pid=$!
	wait "$build_pid" || rc=$?
	build_pid=''
	return "$rc"
}
{
	exec 9>"$cache/.lock"
	flock 9
	if [ ! -e "$kernel" ] || [ ! -e "$initrd" ] || [ ! -e "$base_root" ]; then
		note "building the guest (kernel $kver${systemd:+, systemd root from $(debian_mirror)}) into $cache: once per change of its inputs"
		build kernel "$kver" "$kernel"
		build initrd "$kver" "$initrd"
		if [ -n "$systemd" ]; then
			if ! build systemd "$kver" "$base_root" "$root_size" "$cache/debs"; then
				note "could not build the systemd root (debootstrap from $(debian_mirror))"
				exit 125
			fi
		else
			build minimal "$kver" "$base_root" "$root_size"
		fi
	fi
	# What no call used for a day goes (builds of older inputs, other
	# worktrees' that stopped); this call's are marked used.
	touch "$kernel" "$initrd" "$base_root"
	find "$cache" -maxdepth 1 -mtime +0 \( -name 'initrd-*' -o -name 'root-*' -o -name 'kvm-*' -o -name 'vmlinux-*' \) \
		-exec rm -rf {} + 2>/dev/null || true
	exec 9>&-
}

# ---- the guest's disks --------------------------------------------------

run=$state/run
mkdir -p "$run"
exec 8>"$state/.lock"
flock -n 8 || bad "--state $state is in use by another call"
root_img=$state/guestroot.img
if [ "$(cat "$state/guestroot.key" 2>/dev/null)" != "$flavour" ] || [ ! -e "$root_img" ]; then
	if [ -e "$root_img" ]; then note "the guest's root changed: $root_img starts afresh"; fi
	cp --sparse=always "$base_root" "$root_img.part"
	mv "$root_img.part" "$root_img"
	printf '%s\n' "$flavour" >"$state/guestroot.key"
fi
for i in "${!disk_names[@]}"; do
	img=$state/${disk_names[$i]}.img
	if [ -e "$img" ]; then
		have=$(stat -c %s "$img")
		[ "$have" = "${disk_sizes[$i]}" ] || bad "$img exists with $have bytes, not the ${disk_sizes[$i]} asked: remove it or ask its size"
	else
		truncate -s "${disk_sizes[$i]}" "$img" 2>/dev/null || bad "cannot make a ${disk_sizes[$i]}-byte image $img"
	fi
done

# ---- diskprep -----------------------------------------------------------

if [ -n "${DISKPREP_GUEST_DISKPREP:-}" ]; then
	cp "$DISKPREP_GUEST_DISKPREP" "$run/diskprep"
else
	if ! out=$(cd "$repo" && CGO_ENABLED=0 go build -o "$run/diskprep" ./cmd/diskprep 2>&1); then
		printf '%s\n' "$out" >&2
		note "go build ./cmd/diskprep failed"
		exit 125
	fi
fi

# ---- booting ------------------------------------------------------------

qemu_common() { # accel disks
	local accel=$1 ndisks=$2
	local -a a
	a=(-nodefaults -no-user-config -display none -no-reboot -M pc -m 2048)
	if [ "$accel" = kvm ]; then
		a+=(-accel kvm -cpu host)
	else
		# max, though Nehalem boots about 2.5 s faster under TCG: without
		# max's TSC frequency in CPUID the guest calibrates its TSC against
		# an emulated timer, and on a busy host its clock then ran 7.7 s
		# fast within minutes (the fleet test's clock check failed on it).
		# Without ERMS and FSRM: TCG runs `rep movsb` a byte per step, and
		# the guest's kernel and libc copy with it when these say it is
		# fast; without them they copy by `rep movsq` or loops (dd of 2 GB
		# from /dev/zero: 4.2 s with them, 0.6 s without).
		a+=(-accel "tcg,thread=multi" -cpu "${DISKPREP_GUEST_CPU:-max,-erms,-fsrm}")
	fi
	a+=(-smp "${DISKPREP_GUEST_SMP:-1}")
	a+=(-kernel "$kernel" -initrd "$initrd")
	# nvme_core.io_timeout: under TCG on a busy host an emulated NVMe
	# command can outlast the default 30 s; the kernel then resets the
	# controller and fails the I/O ("Host Pathing Error").
	# systemd.show_status=auto: quiet, unless a unit is slow to start,
	# then the console (and a timed-out boot's excerpt) says which.
	# systemd.default_timeout_start_sec: units other than devices start
	# slowly on a loaded machine too (a device's own 90 s is raised in the
	# root's system.conf.d, the only place systemd 252 reads it from).
	a+=(-append "console=ttyS0 panic=-1 loglevel=4 mitigations=off nvme_core.io_timeout=600 nvme_core.admin_timeout=600 guest.init=$guest_init guest.disks=$ndisks${systemd:+ systemd.show_status=auto systemd.default_timeout_start_sec=600}")
	a+=(-device virtio-rng-pci)
	# restrict=on: the guest reaches neither this machine nor any other
	# address; the forward below still reaches the guest.
	if [ -n "$ssh_port" ]; then
		a+=(-nic "user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:$ssh_port-:22")
	fi
	printf '%q ' "${a[@]}"
}

# start_tpm DIR: the swtpm of one boot (--tpm), its state in $state/tpm/,
# its control socket DIR/swtpm.sock for QEMU, its log DIR/swtpm.log. QEMU
# initialises the TPM at each machine reset and SeaBIOS starts it up.
start_tpm() {
	local dir=$1
	mkdir -p "$state/tpm"
	chmod 700 "$state/tpm"
	tpm_sock=$dir/swtpm.sock
	rm -f "$tpm_sock"
	swtpm socket --tpm2 --tpmstate "dir=$state/tpm,mode=0600" \
		--ctrl "type=unixio,path=$tpm_sock,mode=0600" --terminate \
		--log "file=$dir/swtpm.log,truncate" </dev/null >/dev/null 2>>"$dir/swtpm.log" &
	tpm_pid=$!
	for _ in $(seq 100); do
		[ -S "$tpm_sock" ] && return 0
		kill -0 "$tpm_pid" 2>/dev/null || break
		sleep 0.05
	done
	note "swtpm did not start: $(tr '\n' ' ' <"$dir/swtpm.log" 2>/dev/null)"
	stop_tpm
	return 1
}

# boot RUNDIR ACCEL TIMEOUT WITH_DISKS: one boot; sets boot_rc to COMMAND's
# exit code, or 124 (timeout) or 125 (no report).
boot() {
	local dir=$1 accel=$2 secs=$3 with_disks=$4 rc=0 args=() p
	rm -f "$dir/status" "$dir/stdout.fifo" "$dir/stderr.fifo"
	: >"$dir/status"
	mkfifo "$dir/stdout.fifo" "$dir/stderr.fifo"
	local ndisks=1
	if [ "$with_disks" = 1 ]; then ndisks=$((${#disk_names[@]} + 1)); fi
	eval "args=($(qemu_common "$accel" "$ndisks"))"
	args+=(-serial "file:$dir/console.log")
	args+=(-device "virtio-serial-pci,id=vser0"
		-chardev "file,id=gout,path=$dir/stdout.fifo" -device "virtserialport,bus=vser0.0,chardev=gout,name=stdout"
		-chardev "file,id=gerr,path=$dir/stderr.fifo" -device "virtserialport,bus=vser0.0,chardev=gerr,name=stderr"
		-chardev "file,id=gst,path=$dir/status" -device "virtserialport,bus=vser0.0,chardev=gst,name=status")
	args+=(-drive "file=$root_img,if=none,id=root,format=raw,cache=writeback,aio=threads" -device "virtio-blk-pci,drive=root,serial=guestroot")
	args+=(-virtfs "local,path=$repo,mount_tag=src,security_model=none,readonly=on")
	args+=(-virtfs "local,path=$dir,mount_tag=guestrun,security_model=none,readonly=on")
	if [ -n "$share" ]; then
		args+=(-virtfs "local,path=$share,mount_tag=share,security_model=none")
	fi
	if [ "$with_disks" = 1 ] && [ -n "$tpm" ]; then
		start_tpm "$dir" || exit 125
		args+=(-chardev "socket,id=chrtpm,path=$tpm_sock" -tpmdev "emulator,id=tpm0,chardev=chrtpm" -device "tpm-tis,tpmdev=tpm0")
	fi
	if [ "$with_disks" = 1 ]; then
		local c
		for ((c = 0; c * 6 < n_sata; c++)); do args+=(-device "ahci,id=ahci$c"); done
		[ "$n_scsi" -eq 0 ] || args+=(-device "virtio-scsi-pci,id=scsi0")
		[ "$n_usb" -eq 0 ] || args+=(-device "qemu-xhci,id=xhci0")
		local i extra file
		for i in "${!disk_names[@]}"; do
			eval "extra=(${disk_args[$i]})"
			file=$state/${disk_names[$i]}.img
			if [ -n "${disk_badwrites[$i]}" ]; then
				# blkdebug activates a rule on an event: pwritev fires
				# before every write, which the rule then fails where it
				# covers the sector; iotype keeps reads of it working.
				printf '[inject-error]\nevent = "pwritev"\niotype = "write"\nerrno = "5"\nsector = "%s"\nonce = "off"\n' \
					"${disk_badwrites[$i]}" >"$dir/${disk_names[$i]}.blkdebug"
				file=blkdebug:$dir/${disk_names[$i]}.blkdebug:$file
			fi
			extra[1]="file=$file,${extra[1]}"
			args+=("${extra[@]}")
		done
	fi
	cat "$dir/stdout.fifo" &
	cat_pids=($!)
	cat "$dir/stderr.fifo" >&2 &
	cat_pids+=($!)
	rm -f "$dir/console.log"
	timeout -k 5 "$secs" "$qemu" "${args[@]}" </dev/null >"$dir/qemu.log" 2>&1 &
	qpid=$!
	if [ -n "$verbose" ]; then
		tail -n +1 -F --sleep-interval=0.2 "$dir/console.log" >&2 2>/dev/null &
		tail_pid=$!
	fi
	wait "$qpid" || rc=$?
	qpid=
	stop_tpm
	# The readers end when QEMU closes the pipes; one still waiting means
	# QEMU never opened them.
	for p in "${cat_pids[@]}"; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	cat_pids=()
	if [ -n "$tail_pid" ]; then
		sleep 0.3
		kill "$tail_pid" 2>/dev/null || true
		wait "$tail_pid" 2>/dev/null || true
		tail_pid=''
	fi
	rm -f "$dir/stdout.fifo" "$dir/stderr.fifo"
	if [ "$rc" -eq 124 ]; then
		boot_rc=124
	elif read -r boot_rc <"$dir/status" && [[ $boot_rc =~ ^[0-9]+$ ]]; then
		:
	else
		boot_rc=125
	fi
}

show_logs() { # dir
	note "qemu: $(tr '\n' ' ' <"$1/qemu.log")"
	if [ -n "$tmpstate" ]; then note "guest console:"; else note "guest console ($1/console.log):"; fi
	tail -n 40 "$1/console.log" >&2 || true
	if [ -n "$tpm" ] && [ -s "$1/swtpm.log" ]; then note "swtpm: $(tail -n 5 "$1/swtpm.log" | tr '\n' ' ')"; fi
}

# write_cmd DIR BOOT ARG...: the command the guest runs, one word a quoted
# string (POSIX sh).
write_cmd() {
	local dir=$1 b=$2 a q
	shift 2
	printf '%s\n' "$b" >"$dir/boot"
	{
		printf 'exec'
		for a in "$@"; do
			q=${a//\'/\'\\\'\'}
			printf " '%s'" "$q"
		done
		printf '\n'
	} >"$dir/cmd.sh"
	if [ -n "$share" ]; then : >"$dir/share"; else rm -f "$dir/share"; fi
	if [ "$dir" != "$run" ]; then cp "$run/diskprep" "$dir/diskprep"; fi
}

# KVM only where a probe boot under it has worked on this host (nested and
# software hypervisors may fail on instructions the guest kernel uses).
accel=${DISKPREP_GUEST_ACCEL:-}
if [ -z "$accel" ]; then
	accel=tcg
	if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
		vkey=$( { uname -r; "$qemu" --version | head -n 1; grep -m1 "^model name" /proc/cpuinfo; echo "$kver"; } | sha256sum | cut -c1-16)
		verdict=$cache/kvm-$vkey
		if [ ! -e "$verdict" ]; then
			probe=$run/probe
			mkdir -p "$probe"
			write_cmd "$probe" 0 true
			boot "$probe" kvm 20 0
			# Calls running at once may all probe: each writes its own file
			# and the last rename wins (they found the same).
			if [ "$boot_rc" -eq 0 ]; then echo kvm >"$verdict.tmp.$$"; else echo tcg >"$verdict.tmp.$$"; fi
			mv "$verdict.tmp.$$" "$verdict"
			rm -rf "$probe"
		fi
		accel=$(cat "$verdict")
		touch "$verdict"
	fi
fi

rc=0
for ((b = 1; b <= boots; b++)); do
	write_cmd "$run" "$b" "$@"
	boot "$run" "$accel" "$timeout_s" 1
	cp "$run/console.log" "$run/console-$b.log"
	rc=$boot_rc
	case $rc in
	124) note "boot $b: timed out after $timeout"; [ -n "$verbose" ] || show_logs "$run"; break ;;
	125) note "boot $b: the guest did not report an exit status"; [ -n "$verbose" ] || show_logs "$run"; break ;;
	0) ;;
	*) break ;;
	esac
done
exit "$rc"
