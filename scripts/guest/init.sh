#!/bin/sh
# First stage of the guest's boot (the initramfs's /init, busybox): load the
# modules that reach the root disk, mount the virtio disk whose serial is
# "guestroot" and hand over to its init (guest.init= on the kernel command
# line: guest-run for the minimal root, systemd for --systemd).
fail() {
	echo "guest init: $*" >&2
	poweroff -f
	sleep 10
}

mount -t devtmpfs dev /dev || fail "mount /dev"
mount -t proc proc /proc
mount -t sysfs sys /sys
for m in virtio_pci virtio_blk crc32c_intel crc32c_generic ext4; do
	modprobe "$m" 2>/dev/null || [ "$m" != ext4 ] || fail "modprobe $m"
done

next=/usr/sbin/guest-run
read -r cmdline </proc/cmdline
# shellcheck disable=SC2086 # the command line is words
for arg in $cmdline; do
	case $arg in guest.init=*) next=${arg#guest.init=} ;; esac
done

root=
tries=0
while [ -z "$root" ]; do
	for s in /sys/block/vd*/serial; do
		[ -e "$s" ] || continue
		if [ "$(cat "$s")" = guestroot ]; then
			d=${s%/serial}
			root=/dev/${d##*/}
		fi
	done
	[ -n "$root" ] && break
	tries=$((tries + 1))
	[ "$tries" -gt 100 ] && fail "no virtio disk with serial guestroot"
	sleep 0.1
done
mount -t ext4 -o rw "$root" /newroot || fail "mount $root"
for m in dev proc sys; do
	mount --move "/$m" "/newroot/$m" || fail "move /$m"
done
exec switch_root /newroot "$next"
