#!/usr/bin/env bash
# bench-vs-fio.sh: run the same workloads with diskprep's engine and with
# fio, alternating, on one RAM block device (zram, so the engine and not the
# disk is the bottleneck), and print diskprep/fio ratios of IOPS, p50/p99
# completion latency, CPU seconds per million I/Os and peak RSS.
#
# Usage: scripts/bench-vs-fio.sh            (as root, from the repository)
# Env:   RUNTIME=5 (s per run)  ROUNDS=3  SIZE=1G (region laid out and used)
#        ONLY=REGEX runs only the workloads whose name matches
#        FILESERVER=1 adds the `fileserver` set (seqread, seqwrite, randrw
#        50/50; bs 32M, 16 jobs, 2 GiB file) on xfs on a loop device whose
#        image lives in /dev/shm (RAM), compared by MB/s
#        DEV=/dev/zram0  DISKPREP=path (a prebuilt diskprep; built if unset)
#        NICE=-10 (both tools run at this nice level, so a machine shared with
#        compilers disturbs them less; equal for both, so the ratio is fair)
#        RT=1 runs both under SCHED_FIFO (chrt -f 10) instead: steadiest
#        numbers on a busy machine, at the cost of starving everything else
#        (the kernel's RT throttling still leaves it 5%) for the whole run
#
# diskprep runs as users run it: `diskprep bench TARGET --workload SPEC -o json`
# (reading the inventory and saving a record included). CPU and peak RSS come
# from /usr/bin/time -v around each whole process, so startup costs count for
# both; fio runs with --thread so that its peak RSS,
# like diskprep's, covers all jobs (forked jobs would each be measured
# alone).
# MB/s is 10^6 bytes per second.
# Latency is completion latency (fio clat: submission to completion).
# Targets (issue 4): IOPS >= 0.95 (QD1 sync) and >= 0.90 (QD32 io_uring),
# CPU/MIO <= 1.1, p50/p99 within 10%, peak RSS <= 1.2.
set -euo pipefail

RUNTIME=${RUNTIME:-5}
ROUNDS=${ROUNDS:-3}
SIZE=${SIZE:-1G}
DEV=${DEV:-/dev/zram0}
NICE=${NICE:--10}
RT=${RT:-0}
prio=(nice -n "$NICE")
if [[ $RT == 1 ]]; then
	prio=(chrt -f 10)
fi

die() { echo "bench-vs-fio: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "needs root (zram setup and O_DIRECT on a block device)"
for p in fio jq awk; do
	command -v "$p" >/dev/null || die "$p not installed"
done
[[ -x /usr/bin/time ]] || die "/usr/bin/time not installed (GNU time, for peak RSS)"

tmp=$(mktemp -d)
made_zram=0
cleanup() {
	if [[ $made_zram == 1 ]]; then
		echo 1 >"/sys/block/$(basename "$DEV")/reset" || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -z ${DISKPREP:-} ]]; then
	root=$(cd "$(dirname "$0")/.." && pwd)
	(cd "$root" && CGO_ENABLED=0 go build -o "$tmp/diskprep" ./cmd/diskprep)
	DISKPREP=$tmp/diskprep
fi

sysdir=/sys/block/$(basename "$DEV")
if [[ ! -b $DEV ]]; then
	modprobe zram num_devices=1 2>/dev/null || true
fi
[[ -b $DEV && -d $sysdir ]] || die "$DEV: no zram device (kernel without zram?)"
if [[ $(cat "$sysdir/disksize") == 0 ]]; then
	echo 4G >"$sysdir/disksize"
	made_zram=1
fi

# ours SPEC TARGET [FLAG...]: one diskprep bench run, the record on stdout.
ours() {
	"$DISKPREP" bench "$2" --workload "$1" --results "$tmp/results" -q -o json "${@:3}"
}

# Unwritten zram pages read back as zeros without work: fill the region first.
echo "laying out $SIZE of random data on $DEV ..."
ours "name=layout,rw=write,bs=1M,iodepth=4,size=$SIZE,runtime=0" "$DEV" --allow-device-write >/dev/null

# run_timed OUT CMD...: run CMD under GNU time; CMD's stdout to OUT.json,
# time's report to OUT.time.
run_timed() {
	local out=$1
	shift
	"${prio[@]}" /usr/bin/time -v -o "$out.time" "$@" >"$out.json"
}

# metrics OUT TOOL: print "iops mb_per_s p50_ns p99_ns cpu_s_per_mio rss_kb",
# both directions summed; latency of reads when there are any, else writes.
metrics() {
	local out=$1 tool=$2 iops bw p50 p99 ios user sys rss dir
	if [[ $tool == fio ]]; then
		dir="read"
		[[ $(jq '.jobs[0].read.total_ios' "$out.json") == 0 ]] && dir="write"
		iops=$(jq '[.jobs[].read.iops, .jobs[].write.iops] | add' "$out.json")
		bw=$(jq '[.jobs[].read.bw_bytes, .jobs[].write.bw_bytes] | add' "$out.json")
		ios=$(jq '[.jobs[].read.total_ios, .jobs[].write.total_ios] | add' "$out.json")
		p50=$(jq ".jobs[0].$dir.clat_ns.percentile[\"50.000000\"]" "$out.json")
		p99=$(jq ".jobs[0].$dir.clat_ns.percentile[\"99.000000\"]" "$out.json")
	else
		local run='.workloads[0].runs[0]'
		dir="read"
		[[ $(jq "$run.read.ios // 0" "$out.json") == 0 ]] && dir="write"
		iops=$(jq "($run.read.iops // 0) + ($run.write.iops // 0)" "$out.json")
		bw=$(jq "($run.read.bw_bytes_per_s // 0) + ($run.write.bw_bytes_per_s // 0)" "$out.json")
		ios=$(jq "($run.read.ios // 0) + ($run.write.ios // 0)" "$out.json")
		p50=$(jq "$run.$dir.lat_ns.p50" "$out.json")
		p99=$(jq "$run.$dir.lat_ns.p99" "$out.json")
	fi
	user=$(awk -F': ' '/User time/ {print $2}' "$out.time")
	sys=$(awk -F': ' '/System time/ {print $2}' "$out.time")
	rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$out.time")
	awk -v i="$iops" -v w="$bw" -v a="$p50" -v b="$p99" -v n="$ios" -v u="$user" -v s="$sys" -v r="$rss" \
		'BEGIN { printf "%.0f %.1f %.0f %.0f %.4f %d\n", i, w / 1e6, a, b, (u + s) / (n / 1e6), r }'
}

# Workloads: name | target | size | diskprep SPEC keys | fio flags
workloads=(
	"randread-4k-2j-qd1-sync|$DEV|$SIZE|rw=randread,bs=4k,jobs=2,iodepth=1,engine=sync|--rw=randread --bs=4k --numjobs=2 --iodepth=1 --ioengine=psync"
	"randread-4k-1j-qd32-uring|$DEV|$SIZE|rw=randread,bs=4k,jobs=1,iodepth=32,engine=io_uring|--rw=randread --bs=4k --numjobs=1 --iodepth=32 --ioengine=io_uring"
)

if [[ ${FILESERVER:-0} == 1 ]]; then
	command -v mkfs.xfs >/dev/null || die "mkfs.xfs not installed"
	img=$(mktemp /dev/shm/bench-vs-fio.XXXXXX)
	truncate -s 3G "$img"
	loopdev=$(losetup --find --show "$img")
	mnt=$tmp/mnt
	mkdir -p "$mnt"
	mkfs.xfs -q -f "$loopdev"
	mount "$loopdev" "$mnt"
	cleanup_fs() {
		umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
		losetup -d "$loopdev" 2>/dev/null || true
		rm -f "$img"
	}
	trap 'cleanup_fs; cleanup' EXIT
	echo "laying out 2G on xfs ($loopdev over $img) ..."
	truncate -s 2G "$mnt/testfile"
	ours "name=layout,rw=write,bs=32M,size=2G,runtime=0" "$mnt/testfile" >/dev/null
	# The workloads of `diskprep bench --set fileserver`, one process each.
	fs="bs=32M,jobs=16,iodepth=1,engine=sync"
	ffs="--bs=32M --numjobs=16 --iodepth=1 --ioengine=psync"
	workloads+=(
		"fileserver-seqread|$mnt/testfile|2G|rw=read,$fs|--rw=read $ffs"
		"fileserver-seqwrite|$mnt/testfile|2G|rw=write,$fs|--rw=write $ffs"
		"fileserver-randrw|$mnt/testfile|2G|rw=randrw,rwmixread=50,$fs|--rw=randrw --rwmixread=50 $ffs"
	)
fi

printf '%-28s %-8s %5s %10s %9s %9s %9s %9s %8s\n' workload tool round IOPS MB/s p50_us p99_us cpu_s/MIO rss_MB
for w in "${workloads[@]}"; do
	IFS='|' read -r name target size spec theirs <<<"$w"
	[[ $name =~ ${ONLY:-.} ]] || continue
	for ((r = 1; r <= ROUNDS; r++)); do
		# Alternate who goes first so drift (thermal, neighbours) hits both.
		order=(diskprep fio)
		((r % 2 == 0)) && order=(fio diskprep)
		for tool in "${order[@]}"; do
			out=$tmp/$name.$tool.$r
			if [[ $tool == fio ]]; then
				# shellcheck disable=SC2086 # flag lists split on purpose
				run_timed "$out" fio --name="$name" --filename="$target" --direct=1 --size="$size" \
					--thread --time_based --runtime="$RUNTIME" --group_reporting --output-format=json $theirs
			else
				run_timed "$out" "$DISKPREP" bench "$target" --workload "name=$name,$spec,size=$size,runtime=${RUNTIME}s,direct=1" \
					--results "$tmp/results" -q -o json
			fi
			read -r iops mbs p50 p99 cpu rss < <(metrics "$out" "$tool")
			echo "$name $tool $iops $mbs $p50 $p99 $cpu $rss" >>"$tmp/all"
			awk -v n="$name" -v t="$tool" -v r="$r" -v i="$iops" -v w="$mbs" -v a="$p50" -v b="$p99" -v c="$cpu" -v m="$rss" \
				'BEGIN { printf "%-28s %-8s %5d %10d %9.1f %9.1f %9.1f %9.3f %8.1f\n", n, t, r, i, w, a/1000, b/1000, c, m/1024 }'
		done
	done
done

echo
echo "diskprep/fio ratios of per-tool medians over $ROUNDS rounds (IOPS, MB/s: higher is better; the rest: lower is better)"
echo "(MB/s is 10^6 bytes/s, both directions summed)"
printf '%-28s %7s %7s %7s %7s %9s %7s\n' workload IOPS MB/s p50 p99 cpu/MIO rss
awk '
function median(arr, n,   i, j, t) {
	for (i = 2; i <= n; i++) { t = arr[i]; for (j = i - 1; j >= 1 && arr[j] > t; j--) arr[j+1] = arr[j]; arr[j+1] = t }
	return (n % 2) ? arr[(n+1)/2] : (arr[n/2] + arr[n/2+1]) / 2
}
{
	k = $1 SUBSEP $2; n[k]++
	for (f = 3; f <= 8; f++) v[k, f, n[k]] = $f
	if (!($1 in seen)) { seen[$1] = 1; names[++nn] = $1 }
}
END {
	for (w = 1; w <= nn; w++) {
		line = sprintf("%-28s", names[w])
		for (f = 3; f <= 8; f++) {
			for (tool = 1; tool <= 2; tool++) {
				t = (tool == 1) ? "diskprep" : "fio"; k = names[w] SUBSEP t
				delete a; for (i = 1; i <= n[k]; i++) a[i] = v[k, f, i]
				m[tool] = median(a, n[k])
			}
			line = line sprintf(f == 7 ? " %9.3f" : " %7.3f", m[2] ? m[1] / m[2] : 0)
		}
		print line
	}
}' "$tmp/all"
