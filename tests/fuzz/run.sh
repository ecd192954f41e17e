#!/bin/bash
# run.sh - the libFuzzer targets (tests/fuzz/fuzz_*.c), built with clang
# under ASan and UBSan, each run first on its saved crashing inputs
# (crashes/TARGET/: every finding is kept there as a regression test),
# then fuzzed from its seed corpus (corpus/TARGET/) for a while.
#
#   tests/fuzz/run.sh [--seconds N] [--runs N] [--out DIR] [TARGET...]
#
# One PASS/FAIL line per target with its executions.  The corpus a run
# grows is kept in DIR/corpus (the next run starts from it); a finding is
# left in DIR/findings/TARGET/ and named in the FAIL line.  The suite runs
# a few seconds each; `make fuzz` runs longer (FUZZ_SECONDS, and
# FUZZ_RUNS to stop a target sooner at that many executions).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
seconds=5
runs=-1
out=${WC_BUILD_DIR:-$SRC/build}/fuzz
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) seconds=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-*) echo "usage: $0 [--seconds N] [--runs N] [--out DIR] [TARGET...]" >&2; exit 2 ;;
	*) break ;;
	esac
done
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for f in "$SRC"/tests/fuzz/fuzz_*.c; do
		t=$(basename "$f" .c)
		targets+=("${t#fuzz_}")
	done
fi

# The code under test: every parser of outside input and what it needs.
CORE=(sym/wc_sym_tab sym/wc_sym_elf sym/wc_sym_cfi sym/wc_sym_perfmap sym/wc_sym_kallsyms
	sym/wc_sym_proc sym/wc_sym_wire sym/wc_sym_fetch core/wc_config
	core/wc_select util/wc_name util/wc_log cli/wc_merge stacks/wc_folded
	render/wc_svg util/wc_text util/wc_budget util/wc_strtab
	format/wc_format util/wc_num util/wc_idmap)
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"
CFLAGS="-g -O1 -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE
	-I$SRC -I${WC_BUILD_DIR:-$SRC/build}/plugin -I$SRC/plugin $SAN"
LIBS="$(pkg-config --libs libdw libelf zlib)"

build() {
	local f o objs=()
	mkdir -p "$out/obj" || return 1
	for f in "${CORE[@]}"; do
		o=$out/obj/$(basename "$f").o
		objs+=("$o")
		clang $CFLAGS -fsanitize=fuzzer-no-link -c \
			"$SRC/plugin/$f.c" -o "$o" || return 1
	done
	rm -f "$out/obj/libcore.a"
	ar rcs "$out/obj/libcore.a" "${objs[@]}" || return 1
	for t in "${targets[@]}"; do
		clang $CFLAGS -fsanitize=fuzzer "$SRC/tests/fuzz/fuzz_$t.c" \
			"$out/obj/libcore.a" $LIBS -o "$out/fuzz_$t" || return 1
	done
}

# replay TARGET: the saved findings must all pass now
replay() {
	local t=$1 dir=$SRC/tests/fuzz/crashes/$1 files
	files=("$dir"/*)
	[ -e "${files[0]}" ] || return 0
	"$out/fuzz_$t" -runs=1 -timeout=10 -rss_limit_mb=2048 "${files[@]}" \
		>"$out/replay_$t.log" 2>&1
}

fuzz() {
	local t=$1 log=$out/fuzz_$1.log
	mkdir -p "$out/corpus/$t" "$out/findings/$t"
	# -timeout: an input that takes 10 s is a finding too (what the
	# targets run takes microseconds; a busy host can stall one for a
	# second, which is not the code's doing)
	# No periodic release of freed memory to the kernel: in this VM a
	# madvise of a fuzzer's heap once stalled a run past its timeout
	# (15 s in ASan's allocator, for an input that takes 37 ms).
	ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_release_to_os_interval_ms=-1} \
	"$out/fuzz_$t" -max_total_time="$seconds" -runs="$runs" -timeout=10 \
		-rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
		-artifact_prefix="$out/findings/$t/" \
		"$out/corpus/$t" "$SRC/tests/fuzz/corpus/$t" >"$log" 2>&1
}

# Everything the build reads: the same again is not rebuilt (the suite
# runs this at every check, and the build is most of its time).
sources_sum() {
	{ clang --version | head -1
	  echo "$CFLAGS $LIBS ${targets[*]}"
	  cat "$SRC"/plugin/*/*.[ch] "$SRC"/bpf/*.h "$SRC"/tests/fuzz/*.[ch] \
		"${WC_BUILD_DIR:-$SRC/build}"/plugin/render/*.inc
	} 2>/dev/null | sha1sum | cut -d' ' -f1
}
sum=$(sources_sum)
if [ "$(cat "$out/build.sum" 2>/dev/null)" != "$sum" ]; then
	rm -f "$out/build.sum"
	if ! build >"$out.build.log" 2>&1; then
		cat "$out.build.log"
		echo "FAIL: fuzz: the targets did not build"
		exit 1
	fi
	echo "$sum" >"$out/build.sum"
fi
status=0
for t in "${targets[@]}"; do
	if ! replay "$t"; then
		tail -30 "$out/replay_$t.log"
		echo "FAIL: fuzz $t: a saved crashing input fails again" \
			"($out/replay_$t.log)"
		status=1
		continue
	fi
	fuzz "$t"
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' \
		"$out/fuzz_$t.log")
	cov=$(grep -o 'cov: [0-9]*' "$out/fuzz_$t.log" | tail -1)
	if [ "$rc" -ne 0 ]; then
		grep -A20 -m1 'ERROR\|runtime error\|deadly signal\|timeout' \
			"$out/fuzz_$t.log" | head -30
		echo "FAIL: fuzz $t: a finding after ${execs:-?} executions:" \
			"$(ls "$out/findings/$t" | head -1) in $out/findings/$t" \
			"(keep it in tests/fuzz/crashes/$t once fixed)"
		status=1
	else
		secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' \
			"$out/fuzz_$t.log")
		echo "PASS: fuzz $t: ${execs:-?} executions in ${secs:-?} s," \
			"no finding ($cov)"
	fi
done
exit $status
