#!/usr/bin/env bash
# bench-aa.sh: the A/A test of compare's verdicts with more trials than CI
# runs: the same loop device benchmarked as label a and as label b, in
# blocked and interleaved order, quiet and with a CPU hog from halfway,
# and the rate of changes called between a device and itself, with its
# 95% interval (bench/aa_privileged_test.go). Needs root.
#
# Usage: sudo scripts/bench-aa.sh [TRIALS]     (default 100; CI runs 20)
set -euo pipefail
cd "$(dirname "$0")/.."
DISKPREP_AA_TRIALS=${1:-100} go test -count=1 -timeout 2h -v \
	-run '^TestPrivilegedAAFalsePositives$' ./bench/ | sed -n '/A\/A test/,/^---/p'
