#!/usr/bin/env bash
# bench-guest-cpu.sh: how fast a TCG guest of scripts/guest.sh runs the
# work the guest tier gives it, under two CPU models, booted in turn; prints
# each piece's median time under both and their ratio (B over A).
#
# The pieces: 2 GB copied by dd (/dev/zero to /dev/null: the guest
# kernel's copy loop), `diskprep inventory -o json` 5 times (Go), `lvm
# version` 3 times (C, many libraries) and mkfs.xfs 3 times on an emulated
# SATA disk (C and I/O), and the whole boot-run-poweroff cycle.
#
# Usage: sudo scripts/bench-guest-cpu.sh [N] [MODEL_A [MODEL_B]]
#        N boots of each (default 3); MODEL_A defaults to guest.sh's own
#        (max,-erms,-fsrm), MODEL_B to max: TCG runs `rep movsb` a byte per
#        step, and with ERMS and FSRM the guest's kernel and libc copy by it.
set -euo pipefail

n=${1:-3}
a=${2:-max,-erms,-fsrm}
b=${3:-max}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/share"
cat >"$tmp/share/work.sh" <<'EOF'
ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
s=$(date +%s%N); dd if=/dev/zero of=/dev/null bs=1M count=2000 2>/dev/null; echo "dd $(ms "$s")"
s=$(date +%s%N); for i in 1 2 3 4 5; do diskprep inventory -o json >/dev/null 2>&1; done; echo "inventory $(ms "$s")"
s=$(date +%s%N); for i in 1 2 3; do lvm version >/dev/null 2>&1; done; echo "lvm $(ms "$s")"
s=$(date +%s%N); for i in 1 2 3; do mkfs.xfs -f -q /dev/sda >/dev/null 2>&1; done; echo "mkfs $(ms "$s")"
EOF

# One boot first: guest.sh builds what it caches, outside the timing.
"$root/scripts/guest.sh" --disk sata-ssd:1G -- true >/dev/null
for ((i = 0; i < n; i++)); do
	for model in "$a" "$b"; do
		s=$(date +%s%N)
		out=$(DISKPREP_GUEST_CPU=$model "$root/scripts/guest.sh" --share "$tmp/share" --disk sata-ssd:1G -- sh /share/work.sh)
		echo "boot $((($(date +%s%N) - s) / 1000000))" >>"$tmp/$model"
		printf '%s\n' "$out" >>"$tmp/$model"
	done
done

median() { sort -n | awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-10s %14s %14s %8s\n' piece "A ms" "B ms" "B/A"
for piece in dd inventory lvm mkfs boot; do
	ta=$(awk -v p="$piece" '$1 == p {print $2}' "$tmp/$a" | median)
	tb=$(awk -v p="$piece" '$1 == p {print $2}' "$tmp/$b" | median)
	awk -v p="$piece" -v a="$ta" -v b="$tb" 'BEGIN { printf "%-10s %14s %14s %8.2f\n", p, a, b, b / a }'
done
echo "A: $a; B: $b; medians of $n boots each, in turn"
