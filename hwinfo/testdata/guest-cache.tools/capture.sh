#!/bin/sh
# Runs in the guest (scripts/guest.sh --disk sata-hdd:1G:serial=SLOWHDD
# --disk sata-hdd:512M:serial=BACKHDD --disk nvme:1G:serial=FASTNVME --share
# DIR -- sh /src/hwinfo/testdata/guest-cache.tools/capture.sh): builds the
# three kinds of cached volume from the HDDs and the NVMe, moves their
# counters, then copies the sysfs, procfs and udev facts (and the PVs' first
# MiB) into /share/tree and what dmsetup, lvs and bcache's sysfs said into
# /share/tools.
set -u
OUT=/share/tree
rm -rf "$OUT" /share/pv /share/tools; mkdir -p "$OUT" /share/pv /share/tools
id() { readlink -f "$1"; }
H=$(id /dev/disk/by-id/ata-QEMU_HARDDISK_SLOWHDD) B=$(id /dev/disk/by-id/ata-QEMU_HARDDISK_BACKHDD)
N=$(id /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_FASTNVME)
echo "H=$H B=$B N=$N" >&2
sgdisk -n1:0:+400M -t1:8e00 -n2:0:0 "$N" >/dev/null
udevadm settle
pvcreate -q "$H" "${N}p1" >&2
vgcreate -q slow "$H" "${N}p1" >&2
# lvmcache: the origin on the HDD, a cache pool on the NVMe, writethrough.
lvcreate -q -y -n data -L 256M slow "$H" >&2
lvcreate -q -y --type cache-pool -n datacache -L 128M slow "${N}p1" >&2
lvconvert -q -y --type cache --cachepool slow/datacache --cachemode writethrough slow/data >&2
# dm-writecache: the origin on the HDD, a cachevol on the NVMe.
lvcreate -q -y -n logs -L 128M slow "$H" >&2
lvcreate -q -y -an -n logscache -L 64M slow "${N}p1" >&2
lvconvert -q -y --type writecache --cachevol logscache slow/logs >&2
# bcache: backing device the second HDD, cache the NVMe's second partition,
# writeback, the sequential cutoff left at its default.
make-bcache --writeback -B "$B" -C "${N}p2" >&2
udevadm settle
for d in "$B" "${N}p2"; do [ -e /sys/block/bcache0 ] || echo "$d" >/sys/fs/bcache/register 2>/dev/null; done
i=0; while [ ! -e /sys/block/bcache0 ] && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
udevadm settle
# Counters: writes, then reads twice (the second pass hits what the first
# promoted); a long sequential read that bcache bypasses.
dd if=/dev/urandom of=/dev/slow/data bs=1M count=16 oflag=direct 2>/dev/null
dd if=/dev/slow/data of=/dev/null bs=64k count=256 iflag=direct 2>/dev/null
dd if=/dev/slow/data of=/dev/null bs=64k count=256 iflag=direct 2>/dev/null
dd if=/dev/urandom of=/dev/slow/logs bs=1M count=8 oflag=direct 2>/dev/null
dd if=/dev/slow/logs of=/dev/null bs=64k count=64 iflag=direct 2>/dev/null
dd if=/dev/urandom of=/dev/bcache0 bs=1M count=2 oflag=direct 2>/dev/null
dd if=/dev/bcache0 of=/dev/null bs=64k count=32 iflag=direct 2>/dev/null
dd if=/dev/bcache0 of=/dev/null bs=64k count=32 iflag=direct 2>/dev/null
dd if=/dev/bcache0 of=/dev/null bs=1M count=16 skip=32 iflag=direct 2>/dev/null
# Mounted read-only: no file system writes (ext4's lazy init, journal
# commits) move the counters while they are captured.
mkfs.xfs -q -f /dev/bcache0 && mkdir -p /mnt/bcache && mount -o ro /dev/bcache0 /mnt/bcache
mkfs.ext4 -q /dev/slow/logs && mkdir -p /mnt/logs && mount -o ro /dev/slow/logs /mnt/logs
sync
udevadm settle
devs=
for b in /sys/block/*; do
	case ${b##*/} in loop* | ram* | zram* | sr*) continue ;; esac
	devs="$devs $(readlink -f "$b")"
done
set=$(readlink -f /sys/block/bcache0/bcache/cache)
{
	ls -d /sys/block/* /sys/class/block/* /dev/disk/by-id/* /dev/disk/by-path/* /dev/mapper/* /dev/slow/* 2>/dev/null
	for d in $devs; do
		find "$d" -maxdepth 1 -type f \( -name dev -o -name size -o -name ro -o -name removable -o -name hidden -o -name range -o -name ext_range -o -name capability \)
		find "$d/queue" -maxdepth 1 -type f \( -name logical_block_size -o -name physical_block_size -o -name minimum_io_size -o -name optimal_io_size -o -name rotational \)
		find "$d" -mindepth 2 -maxdepth 2 \( -path "$d/holders/*" -o -path "$d/slaves/*" -o -path "$d/dm/*" \)
		[ -d "$d/bcache" ] && find "$d/bcache" -maxdepth 2 \( -type f -o -type l \) -perm -0400
		for p in "$d"/*/partition; do
			[ -f "$p" ] || continue
			p=${p%/partition}
			find "$p" -maxdepth 1 -type f \( -name dev -o -name size -o -name ro -o -name start -o -name partition \)
			find "$p" -mindepth 2 -maxdepth 2 -path "$p/holders/*"
			[ -d "$p/bcache" ] && find "$p/bcache" -maxdepth 2 \( -type f -o -type l \) -perm -0400
		done
		if [ -L "$d/device" ]; then
			echo "$d/device"
			dv=$(readlink -f "$d/device")
			find "$dv" -maxdepth 1 -type f \( -name model -o -name vendor -o -name rev -o -name wwid -o -name serial -o -name firmware_rev \)
		fi
		echo "/run/udev/data/b$(cat "$d/dev")"
		for p in "$d"/*/dev; do [ -f "$p" ] && echo "/run/udev/data/b$(cat "$p")"; done
	done
	ls -d /sys/fs/bcache/*
	[ -n "$set" ] && find "$set" -maxdepth 2 \( -type f -o -type l \) -perm -0400 ! -path '*/internal/*'
	find /sys/class/dmi/id/ /sys/devices/virtual/dmi/id -maxdepth 1 2>/dev/null
	ls -d /usr/lib/os-release /etc/os-release 2>/dev/null
	echo /proc/cpuinfo /proc/swaps /proc/self/mountinfo /proc/sys/kernel/osrelease /proc/sys/kernel/hostname /proc/meminfo /etc/os-release | tr ' ' '\n'
} >/share/list 2>/share/list.err
# bcache folds its hits and misses into stats_total on a timer, 22 times
# in 5 minutes (stats.c): wait for one.
sleep 15
# What the tools say, right before the copy: nothing else does I/O here
# (bcache's writeback of the little dirty data may run meanwhile).
dmsetup table >/share/tools/dmsetup.table
dmsetup status >/share/tools/dmsetup.status
for f in cache_mode dirty_data sequential_cutoff state stats_total/cache_hits stats_total/cache_misses stats_total/cache_bypass_hits stats_total/cache_bypass_misses; do
	printf '%s: %s\n' "$f" "$(cat /sys/block/bcache0/bcache/$f)"
done >/share/tools/bcache0
# cp reads sysfs attributes to their end whatever size stat says.
xargs cp -P --parents -t "$OUT" </share/list 2>/share/cp.err
dmsetup status >/share/tools/dmsetup.status.after
for pv in "$H" "${N}p1"; do dd if="$pv" of="/share/pv/${pv##*/}.img" bs=1M count=1 2>/dev/null; done
dmsetup ls >/share/tools/dmsetup.ls
lvs -a --reportformat json --units b -o lv_name,vg_name,lv_uuid,lv_size,segtype,lv_dm_path,lv_kernel_minor,devices,pool_lv >/share/tools/lvs.json 2>&1
lvs --reportformat json --units b -o lv_name,cache_mode,cache_policy,chunk_size,cache_total_blocks,cache_used_blocks,cache_dirty_blocks,cache_read_hits,cache_read_misses,cache_write_hits,cache_write_misses slow/data >/share/tools/lvs-cache.json 2>&1
lvs --reportformat json --units b -o lv_name,writecache_block_size,writecache_total_blocks,writecache_free_blocks,writecache_writeback_blocks,writecache_error slow/logs >/share/tools/lvs-writecache.json 2>&1
bcache-super-show "$B" >/share/tools/bcache-super-backing 2>&1
bcache-super-show "${N}p2" >/share/tools/bcache-super-cache 2>&1
diskprep inventory -o json >/share/tools/inventory.json 2>/share/tools/inventory.err
umount /mnt/bcache /mnt/logs
echo captured
