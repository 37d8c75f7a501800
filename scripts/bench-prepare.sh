#!/usr/bin/env bash
# bench-prepare.sh: time `diskprep prepare --image` against the same steps
# done by hand (sparse file, loop attach, sgdisk, mkfs.xfs, mount), both on a
# fresh image of SIZE, and print the ratio. Needs root.
#
#   scripts/bench-prepare.sh [-b BINARY] [-s 10G] [-n 3] [-d DIR]
#
# Without -b it builds diskprep from this tree into a directory of its own
# (never a fixed path in /tmp, where another user could have put a binary
# root would run).
set -euo pipefail

bin=""
bindir=""
size=10G
runs=3
dir=""

usage() { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; }

while getopts "b:s:n:d:h" opt; do
	case $opt in
	b) bin=$OPTARG ;;
	s) size=$OPTARG ;;
	n) runs=$OPTARG ;;
	d) dir=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done

if [[ $EUID -ne 0 ]]; then
	echo "bench-prepare.sh: needs root" >&2
	exit 1
fi
if [[ -z $bin ]]; then
	bindir=$(mktemp -d)
	trap 'rm -rf "$bindir"' EXIT
	(cd "$(dirname "$0")/.." && CGO_ENABLED=0 go build -o "$bindir/diskprep" ./cmd/diskprep)
	bin=$bindir/diskprep
fi
for p in "$bin" sgdisk mkfs.xfs losetup partx mount umount; do
	if ! command -v "$p" >/dev/null; then
		echo "bench-prepare.sh: $p not found" >&2
		exit 1
	fi
done

if [[ -z $dir ]]; then
	dir=$(mktemp -d /var/tmp/bench-prepare.XXXXXX)
	own_dir=1
else
	own_dir=0
fi
img=$dir/bench.img
mnt=$dir/mnt
loop=""

cleanup() {
	if mountpoint -q "$mnt" 2>/dev/null; then umount "$mnt" || umount -l "$mnt"; fi
	if [[ -n $loop ]]; then
		partx -d "$loop" 2>/dev/null || true
		losetup -d "$loop" 2>/dev/null || true
		loop=""
	fi
	rm -f "$img"
}
on_exit() {
	cleanup
	if [[ $own_dir -eq 1 ]]; then rm -rf "$dir"; fi
	if [[ -n $bindir ]]; then rm -rf "$bindir"; fi
}
trap on_exit EXIT

now_ns() { date +%s%N; }

by_hand() {
	truncate -s "$size" "$img"
	loop=$(losetup --find --show --partscan "$img")
	local s0
	s0=$(now_ns)
	sgdisk --clear --new=1:0:0 --typecode=1:8300 --change-name=1:bench "$loop" >/dev/null
	sgdisk_ms+=($((($(now_ns) - s0) / 1000000)))
	# Kernels without a GPT parser (and hosts where the partscan raced):
	# register the partition as partprobe/partx would.
	if [[ ! -b ${loop}p1 ]]; then partx -a "$loop" 2>/dev/null || true; fi
	for _ in $(seq 100); do [[ -b ${loop}p1 ]] && break; sleep 0.01; done
	mkfs.xfs -q -f -L bench "${loop}p1"
	mkdir -p "$mnt"
	mount -t xfs "${loop}p1" "$mnt"
}

with_diskprep() {
	"$bin" -q prepare --image "$img" --size "$size" --fs xfs --label bench --mount "$mnt" --yes >/dev/null
	loop=$(losetup -j "$img" -O NAME -n | head -n1)
}

elapsed=0
time_one() { # function -> sets elapsed (ms); not in a subshell, so by_hand can record sgdisk's share
	local t0 t1
	t0=$(now_ns)
	"$1"
	t1=$(now_ns)
	cleanup
	elapsed=$(((t1 - t0) / 1000000))
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

hand_ms=()
dp_ms=()
sgdisk_ms=()
for ((i = 1; i <= runs; i++)); do
	time_one by_hand
	hand_ms+=("$elapsed")
	time_one with_diskprep
	dp_ms+=("$elapsed")
	echo "run $i: by hand ${hand_ms[-1]} ms (sgdisk ${sgdisk_ms[-1]} ms of it), diskprep ${dp_ms[-1]} ms"
done

h=$(printf '%s\n' "${hand_ms[@]}" | median)
d=$(printf '%s\n' "${dp_ms[@]}" | median)
ratio=$(awk -v d="$d" -v h="$h" 'BEGIN { if (h > 0) printf "%.2f", d / h; else print "n/a" }')
s=$(printf '%s\n' "${sgdisk_ms[@]}" | median)
echo "median of $runs, $size image: by hand $h ms, diskprep $d ms, ratio ${ratio}x (target <= 1.20x)"
# sgdisk syncs and sleeps about a second before asking the kernel to re-read
# the table; say how the two compare without that wait too.
rest=$((h - s))
ratio2=$(awk -v d="$d" -v h="$rest" 'BEGIN { if (h > 0) printf "%.2f", d / h; else print "n/a" }')
echo "by hand without sgdisk's time ($s ms): $rest ms, ratio ${ratio2}x"
