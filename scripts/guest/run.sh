#!/bin/sh
# The guest side of scripts/guest.sh: sets the machine up (as PID 1 of the
# minimal root; under --systemd, systemd has done that and runs this from
# guest-run.service), runs the command the host wrote to /run/guest/cmd.sh
# with its stdout and stderr on their own virtio-serial ports, reports its exit
# code on a third and powers the machine off.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
minimal=
[ "$$" -eq 1 ] && minimal=1

say() { echo "guest-run: $(cut -d" " -f1 /proc/uptime) $*" >/dev/console; }

off() {
	if [ -n "$minimal" ]; then
		kill -TERM -1 2>/dev/null
		sleep 0.2
		kill -KILL -1 2>/dev/null
		sync
		umount /share /src /run/guest 2>/dev/null
		mount -o remount,ro / 2>/dev/null
		poweroff -f
		sleep 10
	else
		systemctl --no-block poweroff
		exit 0
	fi
}

if [ -n "$minimal" ]; then
	mkdir -p /dev/pts /dev/shm
	mount -t devpts -o gid=5,mode=620 devpts /dev/pts
	mount -t tmpfs -o mode=1777 shm /dev/shm
	mount -t tmpfs -o mode=755 run /run
	mount -o remount,rw /
	hostname guest
	ln -sf /proc/self/fd /dev/fd
	ln -sf /proc/self/fd/0 /dev/stdin
	ln -sf /proc/self/fd/1 /dev/stdout
	ln -sf /proc/self/fd/2 /dev/stderr
	say "modules"
	# The modules nothing else loads when needed (build.sh says which).
	# shellcheck disable=SC2046 # one module name a word
	modprobe -a $(cat /etc/guest-modules) || say "some modules did not load"
	say "udev"
	mkdir -p /run/udev
	/lib/systemd/systemd-udevd --daemon || say "systemd-udevd did not start"
	udevadm trigger --type=subsystems --action=add
	udevadm trigger --type=devices --action=add
	udevadm settle --timeout=30 || say "udevadm settle timed out"
fi

# Some disks appear after their controller's events settled (USB
# storage scans from a thread): wait for as many as the host attached.
want=0
read -r cmdline </proc/cmdline
for arg in $cmdline; do
	case $arg in guest.disks=*) want=${arg#guest.disks=} ;; esac
done
tries=0
while :; do
	have=0
	for d in /sys/block/sd* /sys/block/vd* /sys/block/nvme*; do
		[ -e "$d" ] && have=$((have + 1))
	done
	[ "$have" -ge "$want" ] && break
	tries=$((tries + 1))
	if [ "$tries" -gt 150 ]; then
		say "only $have of $want disks appeared"
		break
	fi
	sleep 0.1
done
udevadm settle --timeout=30 || say "udevadm settle timed out"
# As nvme_core.io_timeout on the kernel's command line: a SCSI or SATA
# command on a busy TCG host may outlast the default 30 s, and the kernel
# would abort it and reset the disk.
for t in /sys/block/sd*/device/timeout; do
	[ -w "$t" ] && echo 600 >"$t"
done

[ -n "$minimal" ] && say "mounts"
mkdir -p /run/guest
opts=trans=virtio,version=9p2000.L,msize=524288
mount -t 9p -o "$opts,ro" guestrun /run/guest || { say "mount guestrun"; off; }
mount -t 9p -o "$opts,ro" src /src || say "mount /src"
if [ -e /run/guest/share ]; then
	mount -t 9p -o "$opts" share /share || say "mount /share"
fi
cp /run/guest/diskprep /usr/local/bin/diskprep && chmod 755 /usr/local/bin/diskprep

for p in /sys/class/virtio-ports/vport*; do
	[ -e "$p/name" ] || continue
	case $(cat "$p/name") in
	stdout) out=/dev/${p##*/} ;;
	stderr) err=/dev/${p##*/} ;;
	status) status=/dev/${p##*/} ;;
	esac
done
if [ -z "$out" ] || [ -z "$err" ] || [ -z "$status" ]; then
	say "no virtio-serial ports stdout, stderr, status"
	off
fi

boot=$(cat /run/guest/boot)
[ -n "$minimal" ] && say "running the command (boot $boot)"
(
	cd /root || exit 1
	DISKPREP_GUEST_BOOT=$boot HOME=/root TERM=dumb exec sh /run/guest/cmd.sh
) </dev/null >"$out" 2>"$err"
rc=$?
printf '%s\n' "$rc" >"$status"
off
