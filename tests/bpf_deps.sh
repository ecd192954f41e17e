#!/bin/bash
# bpf_deps.sh BUILD - make rebuilds the BPF object when its source or any
# header it includes changes (the compiler's -MMD list), and not otherwise.
# Asks make what it would do (-q, -W): nothing is built or touched.
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:?usage: bpf_deps.sh BUILD}
OBJ=bpf/wallclock.bpf.o
cd "$BUILD" || exit 1
make -s "$OBJ" >/dev/null 2>&1
if make -q "$OBJ"; then
	echo "PASS: bpf deps: the object is up to date after a build"
else
	echo "FAIL: bpf deps: make would rebuild an up-to-date object"
fi
status=0
for f in "$SRC"/bpf/*.h "$SRC"/bpf/*.bpf.c; do
	if make -q -W "$f" "$OBJ"; then
		echo "FAIL: bpf deps: a change to ${f#"$SRC"/} does not rebuild $OBJ"
		status=1
	fi
done
[ "$status" -eq 0 ] &&
	echo "PASS: bpf deps: a change to any of $(ls "$SRC"/bpf/*.h "$SRC"/bpf/*.bpf.c | wc -l) BPF sources rebuilds the object"
exit 0
