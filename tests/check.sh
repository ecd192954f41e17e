#!/bin/bash
# check.sh - the whole test suite: installs what is missing, builds, then
# runs the unit tests (plain and under ASan/UBSan), the BPF engine tests and
# the end-to-end tests against a real collectd.  Needs root (BPF).
#
# Every test program prints one line per case (PASS:/FAIL:/SKIP:); this
# script counts them and ends with "N passed, N failed".  A program that
# exits non-zero without saying which case failed counts as one failure.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
cd "$SRC"

tests/deps.sh || { echo "0 passed, 1 failed"; exit 1; }
BUILD=$(tests/build.sh) || { echo "build failed"; echo "0 passed, 1 failed"; exit 1; }
export WC_BUILD_DIR=$BUILD
# the symbolizer's helper, from the build tree (not installed)
export WALLCLOCK_SYMD=$BUILD/wallclock-symd
LOG=$BUILD/check.log
: > "$LOG"

passed=0 failed=0 skipped=0

# run NAME CMD...: run one test program, echo its output, count its cases
run() {
	local name=$1 out rc p f s t0=$SECONDS
	shift
	echo "=== $name"
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | tee -a "$LOG"
	echo "# $name took $((SECONDS - t0)) s"
	p=$(grep -c '^PASS: ' <<<"$out")
	f=$(grep -c '^FAIL: ' <<<"$out")
	s=$(grep -c '^SKIP: ' <<<"$out")
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "FAIL: $name: exited with status $rc" | tee -a "$LOG"
		f=1
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

# unit DIR LABEL: the unit tests through automake in build DIR (so `make
# check` stays the developer's entry point); their per-case lines are in
# the logs it writes
unit() {
	local dir=$1 label=$2 rc before=$failed t
	( cd "$dir" && make -s -j"$(nproc)" check >"$dir/make-check.out" 2>&1 )
	rc=$?
	for t in "$dir"/tests/unit/*/test_*.log; do
		run "$label $(basename "$t" .log)" cat "$t"
	done
	if [ "$rc" -ne 0 ] && [ "$failed" -eq "$before" ]; then
		tail -20 "$dir/make-check.out"
		echo "FAIL: $label: make check exited with status $rc" |
			tee -a "$LOG"
		failed=$((failed + 1))
	fi
}
# Debian 12's own kernel (6.1), booted in qemu: the engine, the stacks
# and a real collectd against schedstat, as that kernel loads them.  It
# runs beside the rest (a CPU of its own, most of whose time the host's
# tests spend waiting for intervals), on test programs built first: the
# guest reads the build tree as it is.
VM_OUT=$BUILD/vm.out
if (cd "$BUILD" && make -s -j"$(nproc)" check TESTS= >"$BUILD/vm-build.out" 2>&1); then
	tests/vm/run.sh -- tests/vm/guest.sh "$BUILD" >"$VM_OUT" 2>&1 &
	vm_pid=$!
else
	{ tail -20 "$BUILD/vm-build.out"
	  echo "FAIL: vm: the test programs did not build"; } >"$VM_OUT"
	vm_pid=
fi

unit "$BUILD" "unit"
# and again with every file under ASan and UBSan, in a build of their own
SAN_BUILD=$BUILD-san
mkdir -p "$SAN_BUILD"
if [ -f "$SAN_BUILD/Makefile" ] ||
	(cd "$SAN_BUILD" && "$SRC/configure" -q --enable-sanitizers); then
	unit "$SAN_BUILD" "unit asan"
else
	echo "FAIL: unit asan: configure --enable-sanitizers failed" | tee -a "$LOG"
	failed=$((failed + 1))
fi

# the unwind tables against binutils' reading of real binaries
run "cfi readelf" python3 tests/unit/sym/cfi_readelf.py \
	"$BUILD/tests/unit/sym/test_cfi"

# The folders of plugin/ call only downwards
run "layers" python3 tests/layers.py
# the C sources are laid out as .clang-format says
run "format" tests/format.sh
# make rebuilds the BPF object when any header of it changes
run "bpf deps" tests/bpf_deps.sh "$BUILD"
# the flame graph's script is real JavaScript (the browser test runs it)
# shellcheck disable=SC2016
run "flame js" bash -c 'node --check "$1" &&
	echo "PASS: flame js: wc_flame.js parses (node --check)"' _ \
	plugin/render/wc_flame.js

# Every parser of outside input under libFuzzer, a few seconds each (long
# runs: make fuzz), its saved crashing inputs first
run "fuzz" tests/fuzz/run.sh --seconds 5

run "engine" "$BUILD/tests/bpf/test_engine" "$BUILD/tests/workload"
run "stacks" "$BUILD/tests/bpf/test_stacks" "$BUILD/tests/workload"
run "cycle" "$BUILD/tests/bpf/test_cycle" "$BUILD/tests/workload"
run "cycle tsan" "$BUILD/tests/bpf/test_cycle_tsan" "$BUILD/tests/workload"

for t in "$SRC"/tests/e2e/test_*.py; do
	run "e2e $(basename "$t")" python3 "$t"
done
vm_rc=1
[ -n "$vm_pid" ] && { wait "$vm_pid"; vm_rc=$?; }
# shellcheck disable=SC2016
run "vm" bash -c 'cat "$1"; exit "$2"' _ "$VM_OUT" "$vm_rc"
# The benchmark itself is `make bench`; here only a short smoke run that
# checks it still works (never how fast).
run "bench smoke" python3 "$SRC/tests/bench/overhead.py" --smoke
run "bench scale smoke" python3 "$SRC/tests/bench/scale.py" --smoke
run "bench storm smoke" python3 "$SRC/tests/bench/storm.py" --smoke
run "bench adopted smoke" python3 "$SRC/tests/bench/adopted.py" --smoke
run "bench cfi tables smoke" python3 "$SRC/tests/bench/cfi_tables.py" --smoke
run "bench unwind smoke" python3 "$SRC/tests/bench/unwind.py" --smoke
# shellcheck disable=SC2016
run "bench read smoke" bash -c '"$1" -n 2 -s 1 >/dev/null &&
	echo "PASS: readbench: two reads timed"' _ "$BUILD/tests/bench/readbench"

echo
[ "$skipped" -gt 0 ] && echo "($skipped skipped: see SKIP lines above)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
