#!/usr/bin/env python3
"""cfi_readelf.py TEST_CFI [FILE...] - the unwind tables test_cfi --dump
builds, row by row against binutils' reading of the same .eh_frame
(readelf --debug-dump=frames-interp).  For every row readelf prints, the
table's row at that address must hold the same rule, no other row may
start inside it, and an FDE's end without a next FDE has no rule.  One
PASS/FAIL line per file; the default files are real Debian binaries."""
import bisect
import os
import re
import subprocess
import sys

FILES = ["/lib/x86_64-linux-gnu/libc.so.6",
         "/lib/x86_64-linux-gnu/liblzma.so.5",
         "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
         "/usr/bin/python3.11", "/usr/bin/xz"]
NONE, SP, FP, PLT, END, SIGNAL, UNSUP = range(7)
SAME, AT, LOST = range(3)


def segments(path):
    out = subprocess.run(["readelf", "-lW", path], capture_output=True,
                         text=True, check=True).stdout
    segs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD" and "E" in "".join(f[6:-1]):
            segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))
    return segs


def to_off(segs, addr):
    for off, vaddr, size in segs:
        if vaddr <= addr < vaddr + size:
            return addr - vaddr + off
    return None


def fdes(path):
    """(start, end, signal, [(loc, {column: value})]) for every FDE."""
    # -wN: not the .debug_frame of a debug file it would follow to
    out = subprocess.run(["readelf", "-wN", "--debug-dump=frames-interp",
                          path], capture_output=True, text=True).stdout
    cies, result, cur, cols, in_eh = {}, [], None, [], False
    cie_re = re.compile(r'^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ CIE "([^"]*)"')
    fde_re = re.compile(r'^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE cie=([0-9a-f]+)'
                        r' pc=([0-9a-f]+)\.\.([0-9a-f]+)')
    for line in out.splitlines():
        if line.startswith("Contents of the "):
            in_eh = line.startswith("Contents of the .eh_frame section")
            cur = None
            continue
        if not in_eh:
            continue
        m = cie_re.match(line)
        if m:
            cur = {"aug": m.group(2), "rows": []}
            cies[int(m.group(1), 16)] = cur
            continue
        m = fde_re.match(line)
        if m:
            cie = cies[int(m.group(1), 16)]
            cur = {"cie": cie, "start": int(m.group(2), 16),
                   "end": int(m.group(3), 16), "rows": []}
            result.append(cur)
            continue
        # a register saved in another reads "r9 (r9)": one value
        f = re.findall(r"r\d+ \([^)]*\)|\S+", line)
        if not f or cur is None or "ZERO" in f:
            continue
        if f[0] == "LOC":
            cols = f[1:]
        elif re.fullmatch(r"[0-9a-f]{8,16}", f[0]) and len(f) == len(cols) + 1:
            cur["rows"].append((int(f[0], 16), dict(zip(cols, f[1:]))))
    for fde in result:
        cie = fde.pop("cie")
        if not fde["rows"] and cie["rows"]:
            fde["rows"] = [(fde["start"], cie["rows"][0][1])]
        fde["signal"] = "S" in cie["aug"]
    return result


def expected(row, signal):
    """(kind, cfa, fp, slot); None where any value is right."""
    if signal:
        return (SIGNAL, 0, None, None)
    ra = row.get("ra", "u")
    if ra == "u":
        return (END, 0, None, None)
    if ra != "c-8":
        return (UNSUP, 0, None, None)
    m = re.fullmatch(r"(rsp|rbp)\+(\d+)", row["CFA"])
    if row["CFA"] == "exp":
        kind, cfa = None, None  # the PLT rule, or another expression
    elif m and int(m.group(2)) % 8 == 0 and int(m.group(2)) // 8 < 65536:
        kind, cfa = (SP if m.group(1) == "rsp" else FP), int(m.group(2)) // 8
    else:
        return (UNSUP, 0, None, None)
    rbp = row.get("rbp", "u")
    if rbp in ("u", "s"):
        return (kind, cfa, SAME, None)
    m = re.fullmatch(r"c([+-]\d+)", rbp)
    if m and int(m.group(1)) % 8 == 0 and -128 <= int(m.group(1)) // 8 < 128:
        return (kind, cfa, AT, int(m.group(1)) // 8)
    return (kind, cfa, LOST, None)


def agrees(want, got):
    kind, cfa, fp, slot = want
    if kind is None:
        return got[0] in (PLT, UNSUP)
    if got[0] != kind or got[1] != cfa:
        return False
    if kind in (END, SIGNAL, UNSUP):
        return True
    return got[2] == fp and (slot is None or got[3] == slot)


def check(test_cfi, path):
    dump = subprocess.run([test_cfi, "--dump", path], capture_output=True,
                          text=True)
    if dump.returncode != 0:
        return False, "test_cfi --dump failed: " + dump.stderr.strip()
    rows = [tuple(int(v, 16) if i == 0 else int(v)
                  for i, v in enumerate(line.split()))
            for line in dump.stdout.splitlines()]
    offs = [r[0] for r in rows]
    segs = segments(path)
    starts = set()
    all_fdes = fdes(path)
    for fde in all_fdes:
        starts.add(fde["start"])
    bad, checked = [], 0

    def at(off):
        i = bisect.bisect_right(offs, off) - 1
        return rows[i] if i >= 0 else (0, NONE, 0, 0, 0)

    for fde in all_fdes:
        locs = [loc for loc, _ in fde["rows"]] + [fde["end"]]
        for i, (loc, row) in enumerate(fde["rows"]):
            lo, hi = to_off(segs, loc), to_off(segs, locs[i + 1] - 1)
            if lo is None or hi is None or locs[i + 1] <= loc:
                continue
            checked += 1
            want, got = expected(row, fde["signal"]), at(lo)
            inside = [o for o in offs[bisect.bisect_right(offs, lo):
                                      bisect.bisect_right(offs, hi)]]
            if not agrees(want, got[1:]) or inside:
                bad.append("%#x: readelf %s -> %s, table %s%s" % (
                    loc, row, want, got,
                    ", rows inside at %s" % [hex(o) for o in inside[:3]]
                    if inside else ""))
        end = to_off(segs, fde["end"])
        if fde["end"] not in starts and end is not None and \
                at(end)[1] != NONE:
            bad.append("%#x: an FDE ends, table %s" % (fde["end"],
                                                        at(end)))
    if not checked:
        return False, "no rows to check"
    if bad:
        return False, "%d of %d rows differ: %s" % (len(bad), checked,
                                                      "; ".join(bad[:5]))
    return True, "%d rows of %d FDEs agree" % (checked, len(all_fdes))


def main():
    test_cfi, files = sys.argv[1], sys.argv[2:] or FILES
    failed = 0
    for path in files:
        name = os.path.basename(path)
        if not os.path.exists(path):
            print("SKIP: cfi readelf: %s: not on this machine" % name)
            continue
        ok, why = check(test_cfi, path)
        print("%s: cfi readelf: %s: %s" % ("PASS" if ok else "FAIL", name,
                                            why))
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
