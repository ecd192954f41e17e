#!/usr/bin/env python3
"""cfi_tables.py [--rounds N] [--smoke] - what unwind tables cost to build
and hold: rows, bytes and build time for libc, python3.11 and the biggest
C++ library on the machine (libclang-cpp, when clang-format is there), and
for every distinct file mapped executable by the processes running now
(the whole host; run it beside tests/bench/scale.py's 1,000 processes for
the scale figure).  Medians of N rounds, interleaved.  Prints figures,
asserts nothing (--smoke: libc once, and that it built)."""
import glob
import os
import statistics
import subprocess
import sys

BUILD = os.environ.get("WC_BUILD_DIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build"))
TOOL = os.path.join(BUILD, "tests", "bench", "cfitables")
NAMED = ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11"] + \
    sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libclang-cpp.so.*"))[:1]


def host_files():
    """Every file mapped executable now, once per (device, inode)."""
    seen, files = set(), []
    for maps in glob.glob("/proc/[0-9]*/maps"):
        try:
            lines = open(maps).read().splitlines()
        except OSError:
            continue
        for line in lines:
            f = line.split(None, 5)
            if len(f) < 6 or "x" not in f[1] or not f[5].startswith("/"):
                continue
            key = (f[3], f[4])
            path = f[5].replace(" (deleted)", "")
            if key in seen or not os.path.isfile(path):
                continue
            seen.add(key)
            files.append(path)
    return files


def build(files):
    out = subprocess.run([TOOL] + files, capture_output=True, text=True,
                         check=True).stdout
    res = {}
    for line in out.splitlines():
        f = line.split(None, 8)
        if f[0] == "rows":
            res[f[8]] = (int(f[1]), int(f[3]), float(f[5]), float(f[7]))
        else:
            res[f[2]] = None
    return res


def main():
    rounds = 5
    if "--rounds" in sys.argv:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1])
    if "--smoke" in sys.argv:
        res = build(NAMED[:1])
        ok = res.get(NAMED[0]) is not None
        print("%s: cfi tables smoke: libc %s" % (
            "PASS" if ok else "FAIL",
            "%d rows" % res[NAMED[0]][0] if ok else "did not build"))
        return 0 if ok else 1
    host = host_files()
    named, whole = {}, []
    for _ in range(rounds):
        for path, r in build(NAMED).items():
            if r:
                named.setdefault(path, []).append(r)
        res = build(host)
        ok = [r for r in res.values() if r]
        whole.append((len(ok), len(res) - len(ok), sum(r[0] for r in ok),
                      sum(r[1] for r in ok), sum(r[3] for r in ok)))
    print("# unwind tables, medians of %d rounds" % rounds)
    print("%-40s %10s %10s %9s %9s" % ("file", "rows", "KiB", "ms", "cpu ms"))
    for path, rs in named.items():
        print("%-40s %10d %10.0f %9.1f %9.1f" % (
            os.path.basename(path), rs[0][0], rs[0][1] / 1024,
            statistics.median(r[2] for r in rs),
            statistics.median(r[3] for r in rs)))
    n, bad, rows, size, cpu = (statistics.median(w[i] for w in whole)
                               for i in range(5))
    print("%-40s %10d %10.0f %9s %9.1f" % (
        "host: %d files (%d without a table)" % (n, bad), rows, size / 1024,
        "", cpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
