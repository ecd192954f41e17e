#!/bin/bash
# build.sh - configure and build wallclock out of tree in $WC_BUILD_DIR
# (default: ./build), plus the test programs.  Prints the build directory.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${WC_BUILD_DIR:-$SRC/build}

cd "$SRC"
if [ ! -x configure ] || [ configure.ac -nt configure ] ||
	[ Makefile.am -nt Makefile.in ]; then
	autoreconf -fi >/dev/null
fi
mkdir -p "$BUILD"
cd "$BUILD"
if [ ! -f Makefile ]; then
	"$SRC/configure" -q
fi
make -s -j"$(nproc)" >/dev/null
make -s -j"$(nproc)" tests/workload tests/hostile tests/bpf/test_engine >/dev/null
echo "$BUILD"
