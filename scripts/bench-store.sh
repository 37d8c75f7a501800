#!/usr/bin/env bash
# bench-store.sh: time `results list` and `compare` over results stores of
# 1k, 5k and 10k realistic records and print wall time, CPU time (user+sys)
# and max RSS of each. Target (issue 22): each under 2 s and 500 MB at 10k
# records on 2 cores. On a machine busy with other work the wall time
# follows the load; the CPU time much less so.
#
#   scripts/bench-store.sh [-s "1000 5000 10000"] [-n 3] [-k DIR] [-b BIN] [-f]
#
#   -s SIZES  store sizes, in records
#   -n RUNS   timed runs per command (median wall and CPU, largest RSS)
#   -k DIR    keep the stores in DIR and reuse those already there, so two
#             binaries can be timed on the very same records
#   -b BIN    also time BIN (e.g. a build of main) on the same stores,
#             alternating with the binary under test, and print the ratio
#   -f        make records from the tree's fixture store (bench/report/
#             testdata/store) instead of three short bench runs here
#
# DISKPREP=path uses a prebuilt binary (else built, CGO_ENABLED=0).
set -euo pipefail

sizes="1000 5000 10000"
runs=3
keep=""
base=""
fixtures=0

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }

while getopts "s:n:k:b:fh" opt; do
	case $opt in
	s) sizes=$OPTARG ;;
	n) runs=$OPTARG ;;
	k) keep=$OPTARG ;;
	b) base=$OPTARG ;;
	f) fixtures=1 ;;
	h) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[[ -x /usr/bin/time ]] || { echo "bench-store: /usr/bin/time (GNU time) not installed" >&2; exit 1; }
[[ -z $base || -x $base ]] || { echo "bench-store: $base is not an executable" >&2; exit 1; }

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/bench-store.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [[ -z ${DISKPREP:-} ]]; then
	(cd "$repo" && CGO_ENABLED=0 go build -o "$tmp/diskprep" ./cmd/diskprep)
	DISKPREP=$tmp/diskprep
fi
stores=${keep:-$tmp/stores}
mkdir -p "$stores"

# Templates: real records, made by this binary on this machine (three
# workloads a fleet would run, 1 s each, with their per-second host and
# device series: some 14 KB a record), or the tree's fixtures.
templates=$tmp/templates
mkdir -p "$templates"
if ((fixtures)); then
	cp "$repo"/bench/report/testdata/store/*.json "$templates/"
elif compgen -G "$stores/templates/*.json" >/dev/null; then
	cp "$stores"/templates/*.json "$templates/"
else
	mkdir -p "$tmp/target"
	for _ in 1 2 3; do
		"$DISKPREP" --results "$templates" -q -o json bench "$tmp/target" \
			--workload name=seq1m-read,rw=read,bs=1M \
			--workload name=rnd4k-read,rw=randread,bs=4k \
			--workload name=rnd4k-write,rw=randwrite,bs=4k \
			--size 32M --runtime 1s --repeat 1 --label template >/dev/null
	done
	rm -rf "$tmp/target"
fi
if [[ -n $keep ]]; then
	mkdir -p "$stores/templates"
	cp -n "$templates"/*.json "$stores/templates/"
fi

# generate N DIR: N records from the templates, one host per ten records
# (a fleet of N/10 hosts, every 50th with a throttled disk), four labels
# on two filesystems, a minute apart; throughput scaled by host, label and
# a few per cent of noise per repetition, latency inversely. The seed is
# fixed: the same templates give the same store.
generate() {
	local n=$1 dir=$2
	mkdir -p "$dir"
	awk -v n="$n" -v dir="$dir" '
	FNR == 1 { nt++ }
	{ tpl[nt, FNR] = $0; lines[nt] = FNR }
	function scaled(key, parent, v, f) {
		if (key ~ /^(iops|bw_bytes_per_s|io_bytes|ios|bytes|read_iops|write_iops|read_bytes_per_s|write_bytes_per_s|read_bytes|write_bytes|read_ios|write_ios|cpu_user_s|cpu_sys_s)$/)
			return v * f
		if (key ~ /^(median|min|max)$/ && parent ~ /^(iops|bw_bytes_per_s)$/)
			return v * f
		if (parent == "lat_ns" || key ~ /^(median|min|max)$/ && parent ~ /^lat_.*_ns$/)
			return v / f
		return v
	}
	END {
		srand(22)
		split("xfs-default xfs-noatime ext4-default ext4-journal", label, " ")
		split("1.00 1.03 0.94 0.82", lfactor, " ")
		hosts = int(n / 10); if (hosts < 3) hosts = 3
		t0 = 1764547200 # 2025-12-01T00:00:00Z
		for (i = 0; i < n; i++) {
			h = i % hosts
			l = int(i / hosts) % 4 + 1
			fs = (l <= 2) ? "xfs" : "ext4"
			hf = (h % 50 == 7) ? 0.35 : 0.9 + 0.2 * (h * 7919 % 101) / 100
			t = t0 + i * 61
			id = strftime("%Y%m%dT%H%M%SZ", t, 1) sprintf("-%04x", i % 65536)
			file = dir "/" id ".json"
			k = i % nt + 1
			depth = 0; noise = 1
			for (j = 1; j <= lines[k]; j++) {
				s = tpl[k, j]
				if (s ~ /^  "id": /) s = "  \"id\": \"" id "\","
				else if (s ~ /^  "label": /) s = "  \"label\": \"" label[l] "\","
				else if (s ~ /^  "start": /) s = "  \"start\": \"" strftime("%Y-%m-%dT%H:%M:%SZ", t, 1) "\","
				else if (s ~ /^  "end": /) s = "  \"end\": \"" strftime("%Y-%m-%dT%H:%M:%SZ", t + 12, 1) "\","
				else if (s ~ /^    "hostname": /) s = sprintf("    \"hostname\": \"host-%04d\",", h)
				else if (s ~ /"fs_type": "/) sub(/"fs_type": "[^"]*"/, "\"fs_type\": \"" fs "\"", s)
				else if (s ~ /^ *"repetition": /) noise = 1 + (rand() - 0.5) * 0.08
				else if (s ~ /^ *"summary": /) noise = 1
				else if (s ~ /^ *"[a-z0-9_]+": -?[0-9]/) {
					key = s; sub(/^ *"/, "", key); sub(/".*/, "", key)
					v = s; sub(/^[^:]*: /, "", v); comma = sub(/,$/, "", v)
					nv = scaled(key, stack[depth], v + 0, hf * lfactor[l] * noise)
					if (nv != v + 0) {
						ind = s; sub(/".*/, "", ind)
						s = ind "\"" key "\": " (v ~ /^-?[0-9]+$/ ? sprintf("%.0f", nv) : sprintf("%.6f", nv)) (comma ? "," : "")
					}
				}
				print s > file
				if (s ~ /[{[],?$/) {
					key = s; sub(/^ *"?/, "", key); sub(/".*/, "", key)
					stack[++depth] = key
				} else if (s ~ /^ *[]}]/) depth--
			}
			close(file)
		}
	}' "$templates"/*.json
}

# timed OUT CMD...: runs CMD, appends "wall_s cpu_s max_rss_kb" to OUT; a
# failing command stops the benchmark with its stderr.
timed() {
	local out=$1
	shift
	if ! /usr/bin/time -o "$tmp/time" -f '%e %U %S %M' "$@" >/dev/null 2>"$tmp/err"; then
		echo "bench-store: $* failed:" >&2
		cat "$tmp/err" >&2
		exit 1
	fi
	tail -n 1 "$tmp/time" | awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' >>"$out"
}

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
maxrss_mb() { awk '$3 > m {m = $3} END {printf "%.0f", m / 1024}'; }

commands=("results list" "compare --by label" "compare --by host" "compare")
printf '%s: %s runs each, median wall and CPU (user+sys), largest max RSS\n' "$DISKPREP" "$runs"
if [[ -n $base ]]; then
	printf 'baseline: %s, the same, on the same stores, alternating\n' "$base"
	printf '%-8s %-18s %7s %7s %7s   %7s %7s %7s   %6s %6s\n' records command "wall s" "cpu s" "RSS MB" "base s" "cpu s" "RSS MB" "wall x" "cpu x"
else
	printf '%-8s %-18s %7s %7s %7s\n' records command "wall s" "cpu s" "RSS MB"
fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
for n in $sizes; do
	dir=$stores/$n
	if [[ ! -d $dir ]] || (($(find "$dir" -name '*.json' | wc -l) != n)); then
		rm -rf "$dir"
		generate "$n" "$dir"
	fi
	for cmd in "${commands[@]}"; do
		read -ra argv <<<"$cmd"
		rm -f "$tmp"/t.*
		# One untimed run each warms the page cache.
		"$DISKPREP" --results "$dir" "${argv[@]}" >/dev/null 2>&1 || true
		if [[ -n $base ]]; then "$base" --results "$dir" "${argv[@]}" >/dev/null 2>&1 || true; fi
		for ((i = 0; i < runs; i++)); do
			timed "$tmp/t.test" "$DISKPREP" --results "$dir" "${argv[@]}"
			if [[ -n $base ]]; then timed "$tmp/t.base" "$base" --results "$dir" "${argv[@]}"; fi
		done
		w=$(cut -d' ' -f1 "$tmp/t.test" | median)
		c=$(cut -d' ' -f2 "$tmp/t.test" | median)
		m=$(maxrss_mb <"$tmp/t.test")
		if [[ -n $base ]]; then
			bw=$(cut -d' ' -f1 "$tmp/t.base" | median)
			bc=$(cut -d' ' -f2 "$tmp/t.base" | median)
			bm=$(maxrss_mb <"$tmp/t.base")
			printf '%-8s %-18s %7.2f %7.2f %7s   %7.2f %7.2f %7s   %6s %6s\n' "$n" "$cmd" "$w" "$c" "$m" "$bw" "$bc" "$bm" "$(ratio "$w" "$bw")" "$(ratio "$c" "$bc")"
		else
			printf '%-8s %-18s %7.2f %7.2f %7s\n' "$n" "$cmd" "$w" "$c" "$m"
		fi
	done
done
kb=$(du -sk "$stores/${sizes##* }" | cut -f1)
echo "largest store: ${sizes##* } records, $((kb / 1024)) MiB on disk; target: each command under 2 s and 500 MB at 10000"
