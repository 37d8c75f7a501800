#!/usr/bin/env bash
# Runs every test tier of diskprep: formatting, vet, staticcheck, unit tests,
# fixture tests and, as root, the privileged tests on loop devices.
# Installs what the tests need when it is missing (apt-get, dnf or yum).
#
#   sudo scripts/test.sh            # everything
#   scripts/test.sh -run Inventory  # extra arguments go to `go test`
#
# DISKPREP_REQUIRE_PRIVILEGED=1 (set by CI) turns a skipped privileged test
# into a failure. DISKPREP_FUZZTIME (default 10s in CI, 0 = off elsewhere)
# runs each fuzz target for that long after the tests.
set -euo pipefail

cd "$(dirname "$0")/.."

log() { printf '== %s\n' "$*"; }

# program -> package (same name on Debian and the RHEL family)
need_pkgs=()
for pair in mkfs.xfs:xfsprogs mkfs.ext4:e2fsprogs losetup:util-linux blkid:util-linux \
            wipefs:util-linux sgdisk:gdisk fio:fio pvcreate:lvm2; do
	prog=${pair%%:*} pkg=${pair#*:}
	if ! command -v "$prog" >/dev/null 2>&1 && [ -z "$(command -v "/usr/sbin/$prog" 2>/dev/null)" ]; then
		need_pkgs+=("$pkg")
	fi
done
if ! command -v shellcheck >/dev/null 2>&1; then need_pkgs+=(shellcheck); fi
# The fleet playbook test runs ansible-playbook; the package test reads the rpm.
if ! command -v ansible-playbook >/dev/null 2>&1; then need_pkgs+=(ansible-core); fi
# The guest tier's fleet test reaches its guests with ssh and a key it makes.
if ! command -v ssh-keygen >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then need_pkgs+=(openssh-client); fi
if ! command -v rpm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then need_pkgs+=(rpm); fi
# The LUKS header reader is held to cryptsetup (Debian: cryptsetup-bin).
if ! command -v cryptsetup >/dev/null 2>&1 && [ ! -x /usr/sbin/cryptsetup ]; then
	if command -v apt-get >/dev/null 2>&1; then need_pkgs+=(cryptsetup-bin); else need_pkgs+=(cryptsetup); fi
fi
# The completion test runs the zsh and fish scripts in those shells.
for sh in zsh fish; do
	if ! command -v "$sh" >/dev/null 2>&1; then need_pkgs+=("$sh"); fi
done
# The guest tier boots Debian's kernel in QEMU with these packages' tools
# (scripts/guest.sh builds its root from them), swtpm for its --tpm. Here,
# not by guest.sh itself: the tier's guests start at once, and their apt-gets
# would contend for dpkg's lock.
if command -v dpkg-query >/dev/null 2>&1; then
	for pkg in qemu-system-x86 linux-image-amd64 busybox-static udev kmod dmsetup lvm2 mdadm \
		bcache-tools cryptsetup-bin smartmontools fdisk procps cpio xz-utils binutils debootstrap swtpm; do
		if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed'; then need_pkgs+=("$pkg"); fi
	done
fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
	# shellcheck disable=SC2207
	need_pkgs=($(printf '%s\n' "${need_pkgs[@]}" | sort -u))
	if [ "$(id -u)" -ne 0 ]; then
		echo "scripts/test.sh: missing ${need_pkgs[*]}; run as root to install them" >&2
	elif command -v apt-get >/dev/null 2>&1; then
		log "installing ${need_pkgs[*]} (apt-get)"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
	elif command -v dnf >/dev/null 2>&1; then
		log "installing ${need_pkgs[*]} (dnf)"
		dnf install -y -q "${need_pkgs[@]}"
	elif command -v yum >/dev/null 2>&1; then
		log "installing ${need_pkgs[*]} (yum)"
		yum install -y -q "${need_pkgs[@]}"
	else
		echo "scripts/test.sh: missing ${need_pkgs[*]} and no apt-get, dnf or yum" >&2
		exit 1
	fi
fi
gobin=$(go env GOPATH)/bin
export PATH="$PATH:/usr/sbin:/sbin:$gobin"

log "guest tier (internal/guesttest), in the background"
# The guest tier (internal/guesttest: QEMU guests under TCG, CPU-bound, with
# no loop device or mount of theirs on this machine) is the longest part: it
# starts first, building its images while the checks below run, and runs
# beside everything after it, which waits on disks, programs and the fuzz
# clock much of the time. Its output comes once it has ended, at the end:
# verbose, so a green run prints each test's time and a failing one
# everything. On a failure before then the script still waits for it: it
# stops its own guests, and nothing is left running. 75m: it took 40 min in
# a CI-like run with the fleet's three guests, and CI allows 90. -parallel
# 64: every test is released at once and waits at the tier's own gate,
# which starts the longest first, one guest per CPU (schedule_test.go).
guest_log=$(mktemp)
go test -v -count=1 -timeout 75m -parallel 64 "$@" ./internal/guesttest/ >"$guest_log" 2>&1 &
guest_pid=$!
# shellcheck disable=SC2317 # run by the EXIT trap
guest_wait() {
	if [ -n "$guest_pid" ]; then
		wait "$guest_pid" 2>/dev/null || true
		guest_pid=''
		cat "$guest_log"
	fi
	rm -f "$guest_log"
}
trap guest_wait EXIT
log "gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi

log "go vet"
go vet ./...

log "staticcheck"
if ! command -v staticcheck >/dev/null 2>&1; then
	go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
# scripts/package.sh builds the rpm and deb with nfpm.
if ! command -v nfpm >/dev/null 2>&1; then
	go install github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
fi
staticcheck ./...

log "shellcheck"
if command -v shellcheck >/dev/null 2>&1; then
	mapfile -t shells < <(git ls-files '*.sh' 2>/dev/null)
	if [ ${#shells[@]} -gt 0 ]; then shellcheck "${shells[@]}"; fi
fi

log "go test"
# Privileged tests share loop devices and mounts with each other, so packages
# run one at a time (-p 1); each test cleans up what it made.
mapfile -t host_pkgs < <(go list ./... | grep -v '/internal/guesttest$')
go test -p 1 -count=1 -timeout 20m "$@" "${host_pkgs[@]}"

log "go test -tags crashtest"
# The crash points and the hidden --fstab exist only in a crashtest build
# (disk/crashpoint.go, cmd/diskprep/testflags_crashtest.go): the crash-safety
# tests build and kill such a binary; the binary built as the README says
# must carry neither.
go vet -tags crashtest ./...
staticcheck -tags crashtest ./...
go test -p 1 -count=1 -timeout 20m -tags crashtest "$@" ./internal/crashtest/
go test -count=1 -tags crashtest -run '^TestHiddenFstabFlag$' ./cmd/diskprep/
release_bin=$(mktemp -d)
CGO_ENABLED=0 go build -o "$release_bin/diskprep" ./cmd/diskprep
if grep -a -q -e DISKPREP_TEST_CRASH_AT -e 'instead of /etc/fstab (for tests)' "$release_bin/diskprep"; then
	echo "the release binary carries a test hook" >&2
	exit 1
fi
rm -rf "$release_bin"

fuzztime=${DISKPREP_FUZZTIME:-}
if [ -z "$fuzztime" ] && [ "${CI:-}" = "true" ]; then fuzztime=10s; fi
if [ -n "$fuzztime" ] && [ "$fuzztime" != "0" ]; then
	log "fuzz ($fuzztime each)"
	for pkg in $(go list ./...); do
		corpus=$(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz
		for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
			before=$(find "$corpus/$target" -type f 2>/dev/null | wc -l || true)
			# A short -fuzzminimizetime keeps the budget for fuzzing: each new
			# interesting input is otherwise minimized for up to 60 s. One
			# worker: the guest tier's QEMU, beside it, is CPU-bound too.
			if out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s -parallel 1 "$pkg" 2>&1); then
				printf '%s %s: %s\n' "$pkg" "$target" "$(grep -o 'execs: [0-9]*' <<<"$out" | tail -n 1)"
				continue
			fi
			# Go before 1.27 may fail a target with a bare "context deadline
			# exceeded" when -fuzztime ends during a call (golang/go#75804):
			# no input was written, so there is no crasher to report.
			after=$(find "$corpus/$target" -type f 2>/dev/null | wc -l || true)
			if [ "$after" -eq "$before" ] && grep -q 'context deadline exceeded' <<<"$out"; then
				echo "warning: $pkg $target: the Go fuzz deadline race (golang/go#75804), no failing input" >&2
				continue
			fi
			echo "$out" >&2
			exit 1
		done
	done
fi
log "guest tier (internal/guesttest)"
guest_rc=0
wait "$guest_pid" || guest_rc=$?
guest_pid=''
if [ "$guest_rc" -ne 0 ]; then
	cat "$guest_log"
	exit "$guest_rc"
fi
grep -E '^(--- |ok )' "$guest_log" || true
log "all tests passed"
