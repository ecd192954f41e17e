#!/bin/sh
# build.sh OUT - build the symbolizer's test fixtures into OUT (created).
# tests/unit/test_sym runs it; it needs gcc, g++ and binutils (objcopy,
# strip, readelf).  Each fixture is built the way a real binary reaches a
# profiler: non-PIE, PIE, a dlopen'ed library, stripped with its symbols in
# a .gnu_debuglink or build-id debug file, C++, and a private root for a
# mount namespace.  Exits non-zero at the first step that fails.
set -eu
SRC=$(cd "$(dirname "$0")" && pwd)
OUT=$1
CFLAGS="-O1 -g -fno-omit-frame-pointer"
mkdir -p "$OUT"
cd "$OUT"

# Executables, and the library they load.
gcc $CFLAGS -fno-pie -no-pie -o fx_nopie "$SRC/fixture.c" -ldl
gcc $CFLAGS -fPIE -pie -o fx_pie "$SRC/fixture.c" -ldl
gcc $CFLAGS -fPIC -shared -o libfx.so "$SRC/libfixture.c"
g++ $CFLAGS -fPIE -pie -o fx_cxx "$SRC/fixture_cxx.cpp"

# The library without .symtab: its static function keeps no name.
cp libfx.so libnosym.so
strip --strip-all libnosym.so

# Stripped, symbols in .debug/fx_link.debug, found through .gnu_debuglink
# (no build-id, so that only the debuglink can find them).
gcc $CFLAGS -fPIE -pie -Wl,--build-id=none -o fx_link "$SRC/fixture.c" -ldl
mkdir -p .debug
objcopy --only-keep-debug fx_link .debug/fx_link.debug
strip --strip-all fx_link
objcopy --add-gnu-debuglink=.debug/fx_link.debug fx_link

# The same, but the debug file changed since: its CRC no longer matches.
gcc $CFLAGS -fPIE -pie -Wl,--build-id=none -o fx_badlink "$SRC/fixture.c" -ldl
objcopy --only-keep-debug fx_badlink fx_badlink.debug
strip --strip-all fx_badlink
objcopy --add-gnu-debuglink=fx_badlink.debug fx_badlink
printf 'changed' >>fx_badlink.debug

# Stripped, symbols found by build-id in debugroot/.build-id/xx/rest.debug.
gcc $CFLAGS -fPIE -pie -Wl,--build-id=sha1 -o fx_bid "$SRC/fixture.c" -ldl
id=$(readelf -n fx_bid | sed -n 's/^ *Build ID: *\([0-9a-f]*\).*/\1/p')
[ ${#id} -ge 4 ] || { echo "build.sh: no build-id in fx_bid" >&2; exit 1; }
head=$(echo "$id" | cut -c1-2)
rest=$(echo "$id" | cut -c3-)
mkdir -p "debugroot/.build-id/$head"
objcopy --only-keep-debug fx_bid "debugroot/.build-id/$head/$rest.debug"
strip --strip-all fx_bid

# A forgery: fx_pie's build-id on a binary whose alpha has another name.
id=$(readelf -n fx_pie | sed -n 's/^ *Build ID: *\([0-9a-f]*\).*/\1/p')
[ ${#id} -ge 4 ] || { echo "build.sh: no build-id in fx_pie" >&2; exit 1; }
gcc $CFLAGS -fPIE -pie -Dwcsym_fixture_alpha=wcsym_forged_alpha \
	-Wl,--build-id=0x"$id" -o fx_forged "$SRC/fixture.c" -ldl

# Files mapped executable that are no ELF, or a broken one.
yes 'not an ELF file' | head -c 8192 >blob.bin
head -c 3000 libfx.so >trunc.so

# A root for a private mount namespace: the PIE at a path the host does
# not have, its libraries at their usual paths, and a /tmp.
rm -rf nsroot
mkdir -p nsroot/wcsym_ns nsroot/tmp
chmod 1777 nsroot/tmp
cp fx_pie nsroot/wcsym_ns/fx
for lib in $(ldd fx_pie | awk '$2 == "=>" && $3 ~ /^\// { print $3 }
	$1 ~ /^\// { print $1 }'); do
	mkdir -p "nsroot$(dirname "$lib")"
	cp -L "$lib" "nsroot$lib"
done
