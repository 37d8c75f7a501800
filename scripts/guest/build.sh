# shellcheck shell=bash
# Builds what scripts/guest.sh boots, from this machine's Debian packages, into
# the cache directory: the uncompressed kernel, the small initramfs that finds
# and mounts the root disk, and the root file system images (minimal and
# systemd). scripts/guest.sh sources it for the names and keys, and runs it
#
#   bash scripts/guest/build.sh kernel|initrd|minimal|systemd KVER OUT [SIZE [DEBS]]
#
# in a session of its own, so an interrupt can stop a build and all its
# children (debootstrap) at once. Every build writes into a temporary name
# and renames, so a half-made build is never used; callers serialise on the
# cache's lock.

guest_dir=${guest_dir:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}

# The kernel modules the guest may need, loaded at boot in dependency order.
guest_modules=(
	virtio_pci virtio_blk virtio_scsi virtio_console virtio_rng crc32c_generic crc32c_intel
	nvme ahci sd_mod sg usb_storage uas xhci_pci virtio_net
	dm_mod dm_cache dm_cache_smq dm_writecache dm_flakey dm_delay dm_crypt
	dm_snapshot dm_thin_pool dm_mirror
	md_mod raid0 raid1 raid456 raid10 bcache
	xfs ext4 vfat nls_cp437 nls_ascii 9p 9pnet_virtio loop
)
# In the root for `modprobe`, not loaded at boot (zram makes a zram0 disk;
# dm-crypt's AES-XTS and cryptsetup's kernel crypto API checks).
guest_modules_on_demand=(zram xts aesni_intel algif_skcipher)
# Loaded at boot. The rest load when needed, as on a real host: drivers by
# udev (the devices' modaliases, bcache's rule), file systems at mount, dm
# targets and md personalities when a table or array asks for them. Loading
# all of them would cost seconds of each boot under TCG (xfs, raid456's
# benchmarks).
guest_modules_boot=(virtio_console 9p 9pnet_virtio dm_mod md_mod loop)
# Only these are needed before the root disk is mounted.
# ext4 asks the crypto API for crc32c, which no dependency loads.
initrd_modules=(virtio_pci virtio_blk crc32c_generic crc32c_intel ext4)

# The Debian packages whose files make up the minimal root (the guest's tools:
# partitioning, mkfs/fsck, device-mapper, md, LVM, bcache, LUKS, udev, SMART, fio).
guest_packages=(
	busybox-static dash bash coreutils util-linux mount fdisk xfsprogs e2fsprogs gdisk
	dmsetup lvm2 mdadm bcache-tools cryptsetup-bin smartmontools fio udev kmod procps
)

guest_kernel_version() {
	local v
	v=$(find /boot -maxdepth 1 -name 'vmlinuz-*' -printf '%f\n' | sed 's/^vmlinuz-//' | sort -V | tail -n 1)
	[ -n "$v" ] || return 1
	[ -d "/lib/modules/$v" ] || return 1
	printf '%s\n' "$v"
}

# guest_inputs_key prints a short hash of everything a build depends on: the
# build scripts themselves, the kernel, and the versions of the packages used.
guest_inputs_key() {
	local kver=$1
	shift
	{
		cat "$guest_dir/build.sh" "$guest_dir/init.sh" "$guest_dir/run.sh"
		printf '%s\n' "$kver" "${guest_modules[@]}" "${guest_modules_on_demand[@]}" "${guest_modules_boot[@]}" "$@"
		dpkg-query -W -f='${Package} ${Version}\n' "${guest_packages[@]}" 2>/dev/null || true
	} | sha256sum | cut -c1-16
}

# guest_build_kernel extracts the uncompressed vmlinux from Debian's vmlinuz:
# QEMU boots it through its PVH entry point, skipping the decompression that
# takes seconds under TCG.
guest_build_kernel() {
	local kver=$1 out=$2 src off tmp
	src=/boot/vmlinuz-$kver
	[ -e "$out" ] && return 0
	tmp=$out.tmp.$$
	# xz streams start with FD 37 7A 58 5A 00; try each offset where one does.
	while read -r off; do
		if xz -dcq --single-stream < <(tail -c +"$((off + 1))" "$src" 2>/dev/null) >"$tmp" 2>/dev/null &&
			[ "$(head -c 4 "$tmp" | od -An -c | tr -d ' ')" = '177ELF' ]; then
			mv "$tmp" "$out"
			return 0
		fi
	done < <(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$src" | cut -d: -f1)
	rm -f "$tmp"
	# Not xz, or no PVH-bootable ELF inside: boot the compressed image.
	cp "$src" "$out"
}

# copy_modules puts the named modules and their dependencies, with their
# signatures stripped (checking them is slow under TCG), under root.
copy_modules() {
	local kver=$1 root=$2 m ko rel
	shift 2
	mkdir -p "$root/usr/lib/modules/$kver"
	for m in "$@"; do
		modprobe -D -S "$kver" "$m" | awk '$1 == "insmod" {print $2}'
	done | sort -u | while read -r ko; do
		rel=${ko#/lib/modules/"$kver"/}
		rel=${rel#/usr/lib/modules/"$kver"/}
		mkdir -p "$root/usr/lib/modules/$kver/$(dirname "$rel")"
		strip --strip-debug -o "$root/usr/lib/modules/$kver/$rel" "$ko"
	done
	for f in modules.order modules.builtin modules.builtin.modinfo; do
		if [ -e "/lib/modules/$kver/$f" ]; then cp "/lib/modules/$kver/$f" "$root/usr/lib/modules/$kver/"; fi
	done
	depmod -b "$root" "$kver"
}

# merged_usr lays out a root whose /bin, /sbin and /lib point into /usr, as
# Debian's do.
merged_usr() {
	local root=$1 d
	mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/lib64"
	for d in bin sbin lib lib64; do ln -sfn "usr/$d" "$root/$d"; done
}

# guest_build_initrd makes the first-stage initramfs: static busybox, the
# modules to reach the root disk, and init.sh as /init.
guest_build_initrd() {
	local kver=$1 out=$2 tmp
	[ -e "$out" ] && return 0
	tmp=$(mktemp -d "$out.tmp.XXXXXX")
	merged_usr "$tmp"
	cp /bin/busybox "$tmp/usr/bin/busybox"
	for a in sh mount umount mkdir cat sleep ls echo; do
		ln -s busybox "$tmp/usr/bin/$a"
	done
	for a in insmod modprobe switch_root poweroff; do
		ln -s ../bin/busybox "$tmp/usr/sbin/$a"
	done
	copy_modules "$kver" "$tmp" "${initrd_modules[@]}"
	cp "$guest_dir/init.sh" "$tmp/init"
	chmod 755 "$tmp/init"
	mkdir -p "$tmp/dev" "$tmp/proc" "$tmp/sys" "$tmp/newroot"
	(cd "$tmp" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet) >"$out.part"
	rm -rf "$tmp"
	mv "$out.part" "$out"
}

# elf_deps prints the shared libraries (and their symlinks' targets) that the
# ELF files named on stdin load.
elf_deps() {
	local f
	while read -r f; do
		{ ldd "$f" 2>/dev/null || true; } | awk '/=> \// {print $3} /^\t\/[^ ]+ \(/ {print $1}'
	done | sort -u | while read -r f; do
		printf '%s\n' "$f"
		readlink -f "$f"
	done | sort -u
}

# guest_build_minimal_root makes the minimal root file system image: the files
# of guest_packages and the libraries they load, the modules, run.sh as the
# init, on an ext4 image that each --state copies and boots as its root disk.
guest_build_minimal_root() {
	local kver=$1 out=$2 size=$3 tmp list
	[ -e "$out" ] && return 0
	tmp=$(mktemp -d "$out.tmp.XXXXXX")
	list=$tmp.files
	merged_usr "$tmp"
	# Regular files and symlinks of the packages, without documentation.
	dpkg -L "${guest_packages[@]}" 2>/dev/null |
		grep -Ev '^/usr/share/(doc|man|info|locale|lintian|bash-completion|zsh|fish)/' |
		while read -r f; do
			if [ -L "$f" ] || [ -f "$f" ]; then printf '%s\n' "$f"; fi
		done | LC_ALL=C sort -u >"$list"
	# and what their programs load
	while read -r f; do
		if [ -f "$f" ] && [ -x "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
			printf '%s\n' "$f"
		fi
	done <"$list" | elf_deps >"$list.libs"
	LC_ALL=C sort -u -o "$list" "$list" "$list.libs"
	sed 's|^/||' "$list" | tar -C / --no-recursion -cf - -T - | tar -C "$tmp" --keep-directory-symlink -xf -
	# /bin/sh is dash, as on Debian: busybox's sh would run its own applets
	# (mount, losetup, ...) before the real tools on PATH.
	ln -sfn dash "$tmp/usr/bin/sh"
	# busybox fills in what the packages do not have (poweroff, vi, ...).
	while read -r a; do
		case $a in /*) ;; *) continue ;; esac
		if [ ! -e "$tmp$a" ] && [ ! -L "$tmp$a" ]; then ln -s /usr/bin/busybox "$tmp$a"; fi
	done < <(busybox --list-full | sed 's|^|/|')
	copy_modules "$kver" "$tmp" "${guest_modules[@]}" "${guest_modules_on_demand[@]}"
	mkdir -p "$tmp/etc" "$tmp/dev" "$tmp/proc" "$tmp/sys" "$tmp/run" "$tmp/tmp" "$tmp/root" \
		"$tmp/src" "$tmp/share" "$tmp/var/tmp" "$tmp/usr/local/bin" "$tmp/mnt"
	chmod 1777 "$tmp/tmp" "$tmp/var/tmp"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$tmp/etc/passwd"
	local g n=0
	: >"$tmp/etc/group"
	for g in root daemon bin sys adm tty disk lp mail kmem dialout cdrom floppy tape audio video input kvm render sgx; do
		case $g in
		root) printf 'root:x:0:\n' ;;
		*) printf '%s:x:%d:\n' "$g" "$((100 + n))" ;;
		esac >>"$tmp/etc/group"
		n=$((n + 1))
	done
	printf 'guest\n' >"$tmp/etc/hostname"
	: >"$tmp/etc/fstab"
	# What a Debian root has and tools look for.
	cp /usr/lib/os-release "$tmp/usr/lib/os-release"
	ln -sfn ../usr/lib/os-release "$tmp/etc/os-release"
	ln -sfn ../proc/self/mounts "$tmp/etc/mtab"
	printf '%s\n' "${guest_modules_boot[@]}" >"$tmp/etc/guest-modules"
	mkdir -p "$tmp/etc/modprobe.d"
	# USB storage scans at once instead of after a second.
	printf 'options usb-storage delay_use=0\n' >"$tmp/etc/modprobe.d/guest.conf"
	cp "$guest_dir/run.sh" "$tmp/usr/sbin/guest-run"
	chmod 755 "$tmp/usr/sbin/guest-run"
	rm -f "$out.part"
	truncate -s "$size" "$out.part"
	mkfs.ext4 -q -F -L guestroot -d "$tmp" "$out.part"
	rm -rf "$tmp" "$list" "$list.libs"
	mv "$out.part" "$out"
}

# The packages of the --systemd root on top of debootstrap's minbase. The
# libtss2 ones are what systemd-cryptenroll and systemd-cryptsetup dlopen for
# a TPM (scripts/guest.sh --tpm): esys, rc, mu and the device TCTI.
systemd_packages=(
	systemd systemd-sysv udev kmod dbus util-linux fdisk xfsprogs e2fsprogs gdisk dmsetup
	lvm2 mdadm bcache-tools cryptsetup-bin smartmontools fio procps
	openssh-server python3
	libtss2-esys-3.0.2-0 libtss2-rc0 libtss2-mu0 libtss2-tcti-device0
)

# debian_mirror prints the Debian mirror apt uses here (deb822 or one-line
# sources), or DISKPREP_GUEST_MIRROR.
debian_mirror() {
	local m=${DISKPREP_GUEST_MIRROR:-}
	if [ -z "$m" ]; then
		m=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
	fi
	if [ -z "$m" ]; then
		m=$(awk '$1 == "deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
	fi
	printf '%s\n' "${m:-http://deb.debian.org/debian}"
}

debian_suite() {
	local s
	s=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null || true)
	printf '%s\n' "${s:-bookworm}"
}

# guest_build_systemd_root makes the --systemd root: a Debian minbase with
# systemd as init and the storage tools, this machine's kernel modules, and
# guest-run.service, which runs the command once the system is up and then
# powers off.
guest_build_systemd_root() {
	local kver=$1 out=$2 size=$3 debs=$4 tmp log
	[ -e "$out" ] && return 0
	# debootstrap mounts /proc and /sys in the new root: scripts/guest.sh's
	# cleanup unmounts whatever is under a *.tmp.* of the cache if the build
	# is cut short.
	tmp=$(mktemp -d "$out.tmp.XXXXXX")
	log=$out.debootstrap.log
	mkdir -p "$debs"
	local incl
	incl=$(IFS=,; printf '%s' "${systemd_packages[*]}")
	if ! debootstrap --variant=minbase --include="$incl" --cache-dir="$debs" \
		"$(debian_suite)" "$tmp" "$(debian_mirror)" >"$log" 2>&1; then
		rm -rf "$tmp"
		echo "debootstrap failed; its log: $log" >&2
		return 1
	fi
	# The downloads stay in --cache-dir; what apt cached in the root does not
	# belong on every guest's disk.
	rm -rf "$tmp/var/cache/apt/archives/"*.deb "$tmp/var/lib/apt/lists/"* "$tmp/usr/share/doc" "$tmp/usr/share/man" "$tmp/usr/share/locale"
	copy_modules "$kver" "$tmp" "${guest_modules[@]}" "${guest_modules_on_demand[@]}"
	printf '%s\n' "${guest_modules_boot[@]}" >"$tmp/etc/modules-load.d/guest.conf"
	mkdir -p "$tmp/etc/modprobe.d"
	printf 'options usb-storage delay_use=0\n' >"$tmp/etc/modprobe.d/guest.conf"
	printf 'guest\n' >"$tmp/etc/hostname"
	printf 'LABEL=guestroot / ext4 defaults 0 0\n' >"$tmp/etc/fstab"
	# The network of scripts/guest.sh --ssh: QEMU's user network gives the
	# guest 10.0.2.15 and forwards the host's port to its sshd.
	mkdir -p "$tmp/etc/systemd/network" "$tmp/etc/systemd/system/multi-user.target.wants"
	printf '[Match]\nType=ether\n[Network]\nAddress=10.0.2.15/24\nGateway=10.0.2.2\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' \
		>"$tmp/etc/systemd/network/10-guest.network"
	ln -sfn /lib/systemd/system/systemd-networkd.service "$tmp/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
	# No DNS here: a lookup of the client's address would stall each login.
	printf 'UseDNS no\nPasswordAuthentication no\nPermitRootLogin prohibit-password\n' >"$tmp/etc/ssh/sshd_config.d/guest.conf"
	: >"$tmp/etc/machine-id"
	mkdir -p "$tmp/src" "$tmp/share"
	cp "$guest_dir/run.sh" "$tmp/usr/sbin/guest-run"
	chmod 755 "$tmp/usr/sbin/guest-run"
	cat >"$tmp/etc/systemd/system/guest-run.service" <<-'UNIT'
		[Unit]
		Description=The command of scripts/guest.sh
		# After basic.target (the default): local file systems (fstab)
		# mounted, udev started; guest-run waits for udev to settle.
		[Service]
		Type=oneshot
		ExecStart=/usr/sbin/guest-run
		StandardInput=null
		StandardOutput=journal+console
		StandardError=journal+console
		[Install]
		WantedBy=multi-user.target
	UNIT
	mkdir -p "$tmp/etc/systemd/system/multi-user.target.wants"
	ln -sfn ../guest-run.service "$tmp/etc/systemd/system/multi-user.target.wants/guest-run.service"
	# systemd 252 gives a device 90 s (DefaultDeviceTimeoutSec, which it
	# takes from system.conf only): on a loaded machine an encrypted
	# volume on LVM came 15 s after that, and its mount had failed.
	mkdir -p "$tmp/etc/systemd/system.conf.d"
	printf '[Manager]\nDefaultDeviceTimeoutSec=600s\n' >"$tmp/etc/systemd/system.conf.d/guest.conf"
	# Nothing that would start at boot and make it slower for no test.
	local u
	for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer \
		serial-getty@ttyS0.service getty@tty1.service systemd-timesyncd.service; do
		ln -sfn /dev/null "$tmp/etc/systemd/system/$u"
	done
	rm -f "$out.part"
	truncate -s "$size" "$out.part"
	mkfs.ext4 -q -F -L guestroot -d "$tmp" "$out.part"
	rm -rf "$tmp"
	mv "$out.part" "$out"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	what=$1
	shift
	case $what in
	kernel) guest_build_kernel "$@" ;;
	initrd) guest_build_initrd "$@" ;;
	minimal) guest_build_minimal_root "$@" ;;
	systemd) guest_build_systemd_root "$@" ;;
	*)
		echo "build.sh: unknown build $what" >&2
		exit 2
		;;
	esac
fi
