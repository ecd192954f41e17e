#!/bin/bash
# format.sh - every C source is as .clang-format lays it out (Debian 12's
# clang-format 14): one PASS or FAIL line, the FAIL naming the files.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
mapfile -t files < <(find plugin bpf tests -name '*.[ch]' ! -name vmlinux.h \
	! -name '*.skel.h' | sort)
bad=()
for f in "${files[@]}"; do
	clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -eq 0 ]; then
	echo "PASS: format: ${#files[@]} C files as .clang-format lays them out"
else
	echo "FAIL: format: not as .clang-format lays them out" \
		"(clang-format -i FILE): ${bad[*]}"
	exit 1
fi
