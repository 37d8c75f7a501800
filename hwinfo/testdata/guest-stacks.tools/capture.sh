#!/bin/sh
# Runs in the guest: builds md arrays and an LVM VG, then copies the sysfs,
# procfs and udev facts (and the PVs' first MiB) into /share/tree.
set -u
OUT=/share/tree
rm -rf "$OUT" /share/pv /share/tools; mkdir -p "$OUT" /share/pv /share/tools
id() { readlink -f "$1"; }
A=$(id /dev/disk/by-id/ata-QEMU_HARDDISK_MIRA) B=$(id /dev/disk/by-id/ata-QEMU_HARDDISK_MIRB)
C=$(id /dev/disk/by-id/ata-QEMU_HARDDISK_DEGR) D=$(id /dev/disk/by-id/ata-QEMU_HARDDISK_PVSATA)
N=$(id /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_FASTNVME)
echo "A=$A B=$B C=$C D=$D N=$N" >&2
# A resync slow enough to be seen in progress.
echo 1000 >/proc/sys/dev/raid/speed_limit_min
echo 1000 >/proc/sys/dev/raid/speed_limit_max
sgdisk -n1:0:+64M -t1:8200 -n2:0:0 -t2:8e00 "$N" >/dev/null
sgdisk -n1:0:0 -t1:fd00 "$C" >/dev/null
udevadm settle
mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 --name=data "$A" "$B" >&2
mdadm --create /dev/md1 --run --level=1 --raid-devices=2 --metadata=1.2 --name=degr "${C}1" missing >&2
pvcreate -q "${N}p2" "$D" >&2
vgcreate -q fast "${N}p2" "$D" >&2
lvcreate -q -y -n scratch -L 100M fast "${N}p2" >&2
lvcreate -q -y -n vm -L 300M fast >&2
udevadm settle
mkfs.xfs -q /dev/md1 && mkdir -p /mnt/degr && mount /dev/md1 /mnt/degr
mkfs.ext4 -q /dev/fast/scratch && mkdir -p /mnt/scratch && mount /dev/fast/scratch /mnt/scratch
udevadm settle
devs=
for b in /sys/block/*; do
	case ${b##*/} in loop* | ram* | zram* | sr*) continue ;; esac
	devs="$devs $(readlink -f "$b")"
done
{
	ls -d /sys/block/* /sys/class/block/* /dev/disk/by-id/* /dev/disk/by-path/* /dev/mapper/* /dev/fast/* /dev/md/* 2>/dev/null
	for d in $devs; do
		find "$d" -maxdepth 1 -type f \( -name dev -o -name size -o -name ro -o -name removable -o -name hidden -o -name range -o -name ext_range -o -name capability \)
		find "$d/queue" -maxdepth 1 -type f \( -name logical_block_size -o -name physical_block_size -o -name minimum_io_size -o -name optimal_io_size -o -name rotational \)
		find "$d" -mindepth 2 -maxdepth 2 \( -path "$d/holders/*" -o -path "$d/slaves/*" -o -path "$d/dm/*" \)
		[ -d "$d/md" ] && find "$d/md" -maxdepth 2 \( -type f -o -type l \) ! -path '*/bitmap/*'
		for p in "$d"/*/partition; do
			[ -f "$p" ] || continue
			p=${p%/partition}
			find "$p" -maxdepth 1 -type f \( -name dev -o -name size -o -name ro -o -name start -o -name partition \)
			find "$p" -mindepth 2 -maxdepth 2 -path "$p/holders/*"
		done
		if [ -L "$d/device" ]; then
			echo "$d/device"
			dv=$(readlink -f "$d/device")
			find "$dv" -maxdepth 1 -type f \( -name model -o -name vendor -o -name rev -o -name wwid -o -name serial -o -name firmware_rev \)
		fi
		echo "/run/udev/data/b$(cat "$d/dev")"
		for p in "$d"/*/dev; do [ -f "$p" ] && echo "/run/udev/data/b$(cat "$p")"; done
	done
	find /sys/class/dmi/id/ /sys/devices/virtual/dmi/id -maxdepth 1 2>/dev/null
	ls -d /usr/lib/os-release /etc/os-release 2>/dev/null
	echo /proc/mdstat /proc/cpuinfo /proc/swaps /proc/self/mountinfo /proc/sys/kernel/osrelease /proc/sys/kernel/hostname /proc/meminfo /etc/os-release | tr ' ' '\n'
} >/share/list 2>/share/list.err
# cp reads sysfs attributes to their end whatever size stat says.
xargs cp -P --parents -t "$OUT" </share/list 2>/share/cp.err
# /proc/self is cp's own: the mountinfo of this shell is the same.
for pv in "${N}p2" "$D"; do dd if="$pv" of="/share/pv/${pv##*/}.img" bs=1M count=1 2>/dev/null; done
mdadm --detail /dev/md0 >/share/tools/md0.detail
mdadm --detail /dev/md1 >/share/tools/md1.detail
cat /proc/mdstat >/share/tools/mdstat
vgs --reportformat json --units b -o vg_name,vg_uuid,vg_size,vg_free,vg_extent_size,pv_count,lv_count >/share/tools/vgs.json
lvs --reportformat json --units b -o lv_name,vg_name,lv_uuid,lv_size,lv_dm_path,lv_kernel_major,lv_kernel_minor,segtype,devices >/share/tools/lvs.json
pvs --reportformat json --units b -o pv_name,pv_uuid,vg_name,pv_size,pv_free,pe_start >/share/tools/pvs.json
diskprep inventory -o json >/share/tools/inventory.json 2>/share/tools/inventory.err
echo captured
