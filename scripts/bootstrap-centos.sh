#!/usr/bin/env bash
# bootstrap-centos.sh: take a fresh CentOS 7/Stream, Rocky, Alma or RHEL
# install (Debian and Ubuntu work too, through apt-get) from blank data disks
# to disks that are prepared, persisted, inventoried and, if asked, baselined.
#
#   bootstrap-centos.sh [--plan FILE] [--rpm FILE | --deb FILE | --binary FILE]
#                       [--bench SET [--bench-target DIR]...] [--root DIR]
#
# Steps, each skipped when already done, so a second run changes nothing and
# says "nothing to do":
#   1. install xfsprogs, e2fsprogs, util-linux and gdisk when missing
#      (dnf, else yum, else apt-get);
#   2. install diskprep from --rpm/--deb (a package), --binary (copied to
#      $DISKPREP_BINDIR), or use the one on PATH;
#   3. check the plan with `diskprep prepare --plan FILE --dry-run`, then
#      apply it with --yes. Persistence is the plan's `persist: true` per
#      partition (/etc/fstab by UUID, defaults,nofail). Default plan:
#      $DISKPREP_CONF_DIR/plan.yaml; when that file does not exist (and no
#      --plan was given) no disk is touched;
#   4. write the inventory as inventory.json and inventory.md in the state
#      directory (after step 3, so it shows the prepared disks);
#      With --root DIR (a fixture tree of another machine's facts, as
#      diskprep --root takes), the plan is only checked;
#   5. with --bench SET: one baseline `diskprep bench` per mount point of the
#      plan (or per --bench-target), recorded once: its record id is kept in
#      the state directory and a later run does not bench again.
#
# The plan is checked before anything is changed (with --rpm/--deb, after
# installing that package, which the check needs). Errors are one line on
# stderr and a non-zero exit: diskprep's own exit code when diskprep refused
# (2 bad plan, 3 refused for safety), 1 otherwise. Details go to the log.
#
# Environment (defaults in brackets), mainly for tests and unusual layouts:
#   DISKPREP_STATE_DIR  [/var/lib/diskprep]   inventory, baseline ids, lock
#   DISKPREP_LOG        [/var/log/diskprep-bootstrap.log]
#   DISKPREP_CONF_DIR   [/etc/diskprep]       where plan.yaml is looked for
#   DISKPREP_BINDIR     [/usr/local/bin]      where --binary is installed
#   DISKPREP_RESULTS    [diskprep's default]  the results store, read by diskprep
set -eu
set -o pipefail

prog=bootstrap-centos.sh
state_dir=${DISKPREP_STATE_DIR:-/var/lib/diskprep}
log_file=${DISKPREP_LOG:-/var/log/diskprep-bootstrap.log}
conf_dir=${DISKPREP_CONF_DIR:-/etc/diskprep}
bin_dir=${DISKPREP_BINDIR:-/usr/local/bin}
packages=(xfsprogs e2fsprogs util-linux gdisk)
args="$*"

usage() {
	cat <<EOF
usage: $prog [--plan FILE] [--rpm FILE | --deb FILE | --binary FILE]
             [--bench SET [--bench-target DIR]...] [--root DIR]

  --plan FILE          disk plan to apply (default $conf_dir/plan.yaml when present)
  --rpm FILE           install diskprep from this rpm (dnf or yum)
  --deb FILE           install diskprep from this deb (apt-get)
  --binary FILE        install this diskprep binary into $bin_dir
                       (default: the diskprep on PATH)
  --bench SET          record a baseline with this workload set (quick, fileserver, ...)
  --bench-target DIR   benchmark DIR instead of the plan's mount points (repeatable)
  --root DIR           read hardware facts from the fixture tree at DIR: the plan
                       is checked against it but not applied (tests, rehearsals)
EOF
}

# One line on stderr (and in the log once it is open), then exit.
log_open=false
die() {
	local code=1
	if [ "$1" = "-c" ]; then code=$2; shift 2; fi
	printf '%s: %s\n' "$prog" "$*" >&2
	if $log_open; then log "error: $*"; fi
	exit "$code"
}

log() {
	if $log_open; then printf '%(%Y-%m-%dT%H:%M:%S%z)T %s\n' -1 "$*" >>"$log_file"; fi
}

# say tells the user and the log.
say() {
	printf '%s\n' "$*"
	log "$*"
}

plan='' plan_given=false rpm='' deb='' binary='' bench_set='' root=''
bench_targets=()
need_arg() {
	if [ $# -lt 2 ] || [ -z "$2" ]; then die -c 2 "$1 needs a value (see --help)"; fi
}
while [ $# -gt 0 ]; do
	case $1 in
	--plan) need_arg "$@"; plan=$2; plan_given=true; shift 2 ;;
	--plan=*) plan=${1#*=}; plan_given=true; shift ;;
	--rpm) need_arg "$@"; rpm=$2; shift 2 ;;
	--rpm=*) rpm=${1#*=}; shift ;;
	--deb) need_arg "$@"; deb=$2; shift 2 ;;
	--deb=*) deb=${1#*=}; shift ;;
	--binary) need_arg "$@"; binary=$2; shift 2 ;;
	--binary=*) binary=${1#*=}; shift ;;
	--bench) need_arg "$@"; bench_set=$2; shift 2 ;;
	--bench=*) bench_set=${1#*=}; shift ;;
	--bench-target) need_arg "$@"; bench_targets+=("$2"); shift 2 ;;
	--bench-target=*) bench_targets+=("${1#*=}"); shift ;;
	--root) need_arg "$@"; root=$2; shift 2 ;;
	--root=*) root=${1#*=}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die -c 2 "unknown argument '$1' (see --help)" ;;
	esac
done
sources=0
for s in "$rpm" "$deb" "$binary"; do [ -n "$s" ] && sources=$((sources + 1)); done
[ "$sources" -le 1 ] || die -c 2 "give one of --rpm, --deb and --binary"
if [ ${#bench_targets[@]} -gt 0 ] && [ -z "$bench_set" ]; then
	die -c 2 "--bench-target needs --bench SET"
fi

# Everything below changes the machine: check all that can be checked first.
[ "$(id -u)" -eq 0 ] || die "must run as root (it installs packages and writes disks and /etc/fstab)"

# Non-login root shells on older releases may lack the sbin directories,
# where mkfs.xfs, sgdisk and losetup live.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin ;; esac
case ":$PATH:" in *:/sbin:*) ;; *) PATH=$PATH:/sbin ;; esac
export PATH

pm=
for p in dnf yum apt-get; do
	if command -v "$p" >/dev/null 2>&1; then pm=$p; break; fi
done
[ -n "$pm" ] || die "no package manager found: need dnf, yum or apt-get"
case $pm in
dnf | yum) [ -z "$deb" ] || die -c 2 "--deb needs apt-get; this host has $pm (use --rpm)" ;;
apt-get) [ -z "$rpm" ] || die -c 2 "--rpm needs dnf or yum; this host has apt-get (use --deb)" ;;
esac

if ! $plan_given && [ -e "$conf_dir/plan.yaml" ]; then plan=$conf_dir/plan.yaml; fi
if [ -n "$plan" ]; then
	[ -f "$plan" ] || die -c 2 "plan $plan: no such file"
	[ -r "$plan" ] || die -c 2 "plan $plan: not readable"
fi
for f in "$rpm" "$deb" "$binary"; do
	if [ -n "$f" ] && [ ! -f "$f" ]; then die -c 2 "$f: no such file"; fi
done
if [ -n "$root" ] && [ ! -d "$root" ]; then die -c 2 "--root $root: not a directory"; fi
if [ -n "$bench_set" ] && [ ${#bench_targets[@]} -eq 0 ] && { [ -z "$plan" ] || [ -n "$root" ]; }; then
	die -c 2 "--bench $bench_set: nothing to benchmark without an applied plan; give --bench-target DIR"
fi

mkdir -p "$(dirname "$log_file")" "$state_dir" || die "cannot create $state_dir or the log directory"
log_open=true
log "started: $prog $args (package manager $pm)"

# Two bootstraps at once (first boot and an admin) would race on the disks.
exec 9>"$state_dir/.bootstrap.lock"
if command -v flock >/dev/null 2>&1 && ! flock -n 9; then
	die "another bootstrap holds $state_dir/.bootstrap.lock"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/diskprep-bootstrap.XXXXXX")
trap 'rm -rf "$work"' EXIT

changes=()
root_args=()
if [ -n "$root" ]; then root_args=(--root "$root"); fi

# Arrays are expanded as ${a[@]+"${a[@]}"}: bash 4.2 (CentOS 7) treats an
# empty "${a[@]}" as unbound under set -u.

# run_logged CMD...: output to the log; on failure one line naming the log.
run_logged() {
	log "run: $*"
	local rc=0
	"$@" >>"$log_file" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ]; then
		die "'$*' failed (exit $rc); see $log_file"
	fi
}

# diskprep_call OUT CMD...: diskprep's stdout to OUT; a failure becomes one
# line carrying diskprep's own message and exit code.
diskprep_call() {
	local out=$1 rc=0
	shift
	log "run: $*"
	"$@" >"$out" 2>"$work/stderr" || rc=$?
	if [ -s "$work/stderr" ]; then cat "$work/stderr" >>"$log_file"; fi
	if [ "$rc" -ne 0 ]; then
		local msg
		msg=$(grep -v '^time=' "$work/stderr" | tail -n 1 || true)
		msg=${msg#diskprep: }
		return_msg=${msg:-exit $rc}
		return "$rc"
	fi
}

installed() {
	case $pm in
	dnf | yum) rpm -q "$1" >/dev/null 2>&1 ;;
	apt-get) [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ] ;;
	esac
}

pm_install() {
	case $pm in
	dnf) run_logged dnf install -y "$@" ;;
	yum) run_logged yum install -y "$@" ;;
	apt-get)
		run_logged apt-get update
		DEBIAN_FRONTEND=noninteractive run_logged apt-get install -y --no-install-recommends "$@"
		;;
	esac
}

# check_plan DISKPREP: the dry run, which touches nothing and fails on a
# missing disk, a selector matching none or several, or a refusal.
check_plan() {
	local rc=0
	diskprep_call "$work/plan.txt" "$1" ${root_args[@]+"${root_args[@]}"} prepare --plan "$plan" --dry-run || rc=$?
	if [ "$rc" -ne 0 ]; then
		die -c "$rc" "plan $plan: $return_msg; nothing was changed by the plan"
	fi
	cat "$work/plan.txt" >>"$log_file"
	plan_checked=true
}
plan_checked=false

# The diskprep that can check the plan before anything else happens.
diskprep=
if [ -n "$binary" ]; then
	diskprep=$binary
	case $diskprep in /*) ;; *) diskprep=$PWD/$diskprep ;; esac
elif [ -z "$rpm" ] && [ -z "$deb" ]; then
	diskprep=$(command -v diskprep) || die "no diskprep on PATH: give --rpm, --deb or --binary"
fi
if [ -n "$plan" ] && [ -n "$diskprep" ]; then check_plan "$diskprep"; fi

# 1. Packages.
missing=()
for p in "${packages[@]}"; do
	if ! installed "$p"; then missing+=("$p"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]} with $pm"
	pm_install "${missing[@]}"
	changes+=("installed ${missing[*]}")
fi

# 2. diskprep itself.
if [ -n "$rpm" ]; then
	want=$(rpm -qp --qf '%{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}' "$rpm" 2>/dev/null) || die "$rpm: not an rpm"
	have=$(rpm -q --qf '%{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}' diskprep 2>/dev/null || true)
	if [ "$want" != "$have" ]; then
		say "installing $want from $rpm"
		pm_install "$(cd "$(dirname "$rpm")" && pwd)/$(basename "$rpm")"
		changes+=("installed $want")
	fi
	diskprep=$(command -v diskprep) || die "$rpm installed no diskprep on PATH"
elif [ -n "$deb" ]; then
	want=$(dpkg-deb -f "$deb" Version 2>/dev/null) || die "$deb: not a deb"
	have=$(dpkg-query -W -f='${Version}' diskprep 2>/dev/null || true)
	if [ "$want" != "$have" ]; then
		say "installing diskprep $want from $deb"
		DEBIAN_FRONTEND=noninteractive run_logged apt-get install -y "$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"
		changes+=("installed diskprep $want")
	fi
	diskprep=$(command -v diskprep) || die "$deb installed no diskprep on PATH"
elif [ -n "$binary" ]; then
	if ! cmp -s "$binary" "$bin_dir/diskprep"; then
		say "installing $binary as $bin_dir/diskprep"
		mkdir -p "$bin_dir"
		# A copy renamed into place: a running diskprep keeps its old inode.
		install -m 0755 "$binary" "$bin_dir/.diskprep.new"
		mv -f "$bin_dir/.diskprep.new" "$bin_dir/diskprep"
		changes+=("installed $bin_dir/diskprep")
	fi
	diskprep=$bin_dir/diskprep
fi
log "diskprep: $diskprep ($("$diskprep" --version 2>/dev/null || echo unknown))"

# 3. The plan.
mounts=()
if [ -n "$plan" ]; then
	if ! $plan_checked; then check_plan "$diskprep"; fi
fi
if [ -n "$plan" ] && [ -n "$root" ]; then
	# The facts are another machine's: diskprep only dry-runs against them.
	say "plan $plan checked against the facts under $root; not applied (--root)"
elif [ -n "$plan" ]; then
	rc=0
	diskprep_call "$work/apply.txt" "$diskprep" prepare --plan "$plan" --yes || rc=$?
	cat "$work/apply.txt" >>"$log_file" 2>/dev/null || true
	if [ "$rc" -ne 0 ]; then
		cat "$work/apply.txt"
		die -c "$rc" "plan $plan: $return_msg"
	fi
	if grep -q '^Prepared ' "$work/apply.txt"; then
		cat "$work/apply.txt"
		changes+=("prepared $(grep -c '^Prepared ' "$work/apply.txt") disk(s) from $plan")
	else
		say "disks: already prepared as $plan asks"
	fi
	diskprep_call "$work/plan.json" "$diskprep" -o json prepare --plan "$plan" --dry-run ||
		die "plan $plan: reading its mount points: $return_msg"
	while IFS= read -r m; do mounts+=("$m"); done < <(sed -n 's/^ *"mount_point": "\(.*\)",\{0,1\}$/\1/p' "$work/plan.json")
else
	say "no plan at $conf_dir/plan.yaml: no disk prepared"
fi

# 4. Inventory, rewritten only when it changed.
for fmt in json markdown; do
	ext=$fmt
	[ "$fmt" = markdown ] && ext=md
	rc=0
	diskprep_call "$work/inventory.$ext" "$diskprep" ${root_args[@]+"${root_args[@]}"} -o "$fmt" inventory || rc=$?
	[ "$rc" -eq 0 ] || die -c "$rc" "inventory: $return_msg"
	if ! cmp -s "$work/inventory.$ext" "$state_dir/inventory.$ext"; then
		cp "$work/inventory.$ext" "$state_dir/.inventory.$ext.new"
		mv -f "$state_dir/.inventory.$ext.new" "$state_dir/inventory.$ext"
		changes+=("wrote $state_dir/inventory.$ext")
	fi
done

# 5. Baseline.
if [ -n "$bench_set" ]; then
	if [ ${#bench_targets[@]} -eq 0 ]; then bench_targets=(${mounts[@]+"${mounts[@]}"}); fi
	[ ${#bench_targets[@]} -gt 0 ] || die -c 2 "--bench $bench_set: the plan mounts nothing; give --bench-target DIR"
	ids=$state_dir/baseline-$bench_set.ids
	touch "$ids"
	for t in "${bench_targets[@]}"; do
		if awk -F '\t' -v t="$t" '$1 == t { found = 1 } END { exit !found }' "$ids"; then
			log "baseline $bench_set of $t already recorded"
			continue
		fi
		say "benchmarking $t with set $bench_set (baseline)"
		rc=0
		diskprep_call "$work/bench.json" "$diskprep" ${root_args[@]+"${root_args[@]}"} -o json bench "$t" --set "$bench_set" --label "baseline-$bench_set" || rc=$?
		[ "$rc" -eq 0 ] || die -c "$rc" "bench $t: $return_msg"
		id=$(sed -n 's/^  "id": "\(.*\)",$/\1/p' "$work/bench.json" | head -n 1)
		[ -n "$id" ] || die "bench $t: no record id in diskprep's output"
		printf '%s\t%s\n' "$t" "$id" >>"$ids"
		changes+=("baseline $id of $t")
	done
fi

if [ ${#changes[@]} -eq 0 ]; then
	say "bootstrap: nothing to do (packages, diskprep, disks, inventory and baseline are as asked)"
else
	say "bootstrap: done: $(printf '%s; ' "${changes[@]}" | sed 's/; $//')"
fi
