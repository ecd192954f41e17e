#!/bin/bash
# guest.sh - what the suite runs under another kernel (through
# tests/vm/run.sh): the engine and stack tests against the BPF programs as
# that kernel loads them, a real collectd's accuracy against schedstat
# (test_accuracy.py), and its stacks in the spool (test_spool.py: what an
# emulated CPU can stand of test_folded.py's checks).  Each case line carries the kernel's version,
# e.g. "PASS: [6.1.0-56-amd64] test_engine: ...".
#
#   tests/vm/guest.sh BUILD_DIR
set -uo pipefail
BUILD=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export WC_BUILD_DIR=$BUILD WALLCLOCK_SYMD=$BUILD/wallclock-symd
# what only an unstarved CPU can show says SKIP here (the host runs it)
export WC_EMULATED_CPU=1
kernel=$(uname -r)
status=0

# run CMD...: its case lines tagged with the kernel; a command that fails
# without a FAIL line of its own is one
run() {
	local out rc
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" |
		sed -E "s/^(PASS|FAIL|SKIP): /\1: [$kernel] /"
	if [ "$rc" -ne 0 ]; then
		status=1
		grep -q '^FAIL: ' <<<"$out" ||
			echo "FAIL: [$kernel] $*: exited with status $rc"
	fi
}

echo "# guest: kernel $kernel, $(nproc) CPUs"
run "$BUILD/tests/bpf/test_engine" "$BUILD/tests/workload"
run "$BUILD/tests/bpf/test_stacks" "$BUILD/tests/workload"
run python3 "$SRC/tests/e2e/test_accuracy.py"
run python3 "$SRC/tests/vm/test_spool.py"
run python3 "$SRC/tests/vm/test_unwind.py"
exit $status
