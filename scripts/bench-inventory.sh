#!/usr/bin/env bash
# bench-inventory.sh: time `diskprep inventory -o json` against `lsblk -J -O`
# on this machine, alternating, and print the medians and their ratio.
# Target (issue 2): diskprep under 50 ms wall.
#
# Usage: scripts/bench-inventory.sh [N]     (N runs of each, default 30)
#        DISKPREP=path uses a prebuilt binary (else built, CGO_ENABLED=0)
set -euo pipefail

n=${1:-30}
command -v lsblk >/dev/null || { echo "bench-inventory: lsblk not installed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -z ${DISKPREP:-} ]]; then
	(cd "$(dirname "$0")/.." && CGO_ENABLED=0 go build -o "$tmp/diskprep" ./cmd/diskprep)
	DISKPREP=$tmp/diskprep
fi

# wall_ms CMD...: one run's wall time in milliseconds (output discarded).
wall_ms() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000))
}

# One untimed run each warms the page cache for both.
"$DISKPREP" inventory -o json >/dev/null 2>&1
lsblk -J -O >/dev/null 2>&1
for ((i = 0; i < n; i++)); do
	if ((i % 2 == 0)); then
		wall_ms "$DISKPREP" inventory -o json >>"$tmp/t.diskprep"
		wall_ms lsblk -J -O >>"$tmp/t.lsblk"
	else
		wall_ms lsblk -J -O >>"$tmp/t.lsblk"
		wall_ms "$DISKPREP" inventory -o json >>"$tmp/t.diskprep"
	fi
done

median() { sort -n "$1" | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
d=$(median "$tmp/t.diskprep")
l=$(median "$tmp/t.lsblk")
disks=$("$DISKPREP" inventory -o json --all 2>/dev/null | grep -c '"path": "/dev/[a-z]*[a-z0-9]*"' || true)
awk -v d="$d" -v l="$l" -v n="$n" -v k="$disks" 'BEGIN {
	printf "median wall over %d runs each (%d block devices and partitions listed with --all)\n", n, k
	printf "  diskprep inventory -o json  %7.1f ms\n", d / 1000
	printf "  lsblk -J -O                 %7.1f ms\n", l / 1000
	printf "  ratio diskprep/lsblk        %7.2f   (target: diskprep under 50 ms)\n", d / l
}'
