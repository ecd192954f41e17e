#!/usr/bin/env python3
"""unwind.py - what walking user stacks by unwind tables costs, against
frame pointers, interleaved round by round in one run.

Each round runs a real collectd (Interval 1, FlushInterval 5) once with
UserStackUnwinding "framepointer" and once with "auto", each with:

- on the CPU: tests/uw_workload.c built -O2 without frame pointers (a
  thread spinning in a qsort() comparator, others asleep), Debian's
  xz -9 and a python3 loop: the sampler's ns per run (bpf_stats on);
- parked waits: the same program's "naps" mode pinned to CPU 0 (1.2 ms
  sleeps, so every switch-out parks a user stack): the switch hook's ns
  per run;
- collectd's RSS, the unwind maps' kernel memory, the tables built;
- the share of uw_nofp's on-CPU time with a complete stack in the files;
- once more with tables, checking framepointer mode's stack search
  against every stack the tables walked whole (WALLCLOCK_MEASURE_SCAN):
  how many of the callers it recovers are false.

Prints medians (ranges) and the tables/frame-pointer ratio.  Asserts
nothing (it is not a test) except in --smoke, which checks it ran.

    make bench    # or: WC_BUILD_DIR=build python3 tests/bench/unwind.py
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
import wctest  # noqa: E402
from overhead import bpf_stats, prog_stats  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "uw_workload.c")
MODES = ("framepointer", "auto")
ENTRY = wctest.ENTRY_POINTS
PY_LOOP = """
import time
until = time.time() + %d
while time.time() < until:
    sum(i * i for i in range(20000))
"""


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def complete(spool):
    good = total = 0
    for p in wctest.folded_files(spool)[1:]:
        for fr, v in wctest.folded_lines(p):
            if fr[0] != "uw_nofp" or fr[1] != "[on-cpu]" or len(fr) < 3 \
                    or fr[2].startswith("["):
                continue
            total += v
            good += v if fr[2] in ENTRY else 0
    return good / total if total else 0.0


def one(root, mode, exe, a, out, measure=False):
    cd = wctest.Collectd(root, 1, f'UserStackUnwinding "{mode}"\n'
                         "FlushInterval 5\n", writers=("csv",))
    if measure:
        os.environ["WALLCLOCK_MEASURE_SCAN"] = "1"
    try:
        cd.start()
    finally:
        os.environ.pop("WALLCLOCK_MEASURE_SCAN", None)
    secs = a.settle + a.measure + 2
    work = [subprocess.Popen([exe, str(secs)]),
            subprocess.Popen(["taskset", "-c", "0", exe, str(secs),
                              "naps"]),
            subprocess.Popen(["/usr/bin/python3", "-c", PY_LOOP % secs])]
    with open(os.devnull, "wb") as null:
        work.append(subprocess.Popen(["xz", "-9", "-T1", "-c",
                                      "/usr/bin/python3.11"], stdout=null))
    try:
        time.sleep(a.settle)
        if measure:
            time.sleep(a.measure)
            callers = cd.last("", "derive", "unwind_scan_callers", 0)
            false = cd.last("", "derive", "unwind_scan_false", 0)
            out.setdefault("scan", []).append((callers, false))
            return
        bpf_stats(True)
        before = prog_stats()
        time.sleep(a.measure)
        after = prog_stats()
        bpf_stats(False)
        for key, (t1, c1) in after.items():
            t0, c0 = before.get(key, (0, 0))
            if key[1] in ("wc_sample", "wc_switch") and c1 > c0:
                out.setdefault((mode, key[1]), []).append((t1 - t0) /
                                                          (c1 - c0))
        out.setdefault((mode, "rss KiB"), []).append(rss_kib(cd.pid))
        maps = cd.last("", "bytes", "unwind_maps", None)
        if maps is not None:
            out.setdefault((mode, "map KiB"), []).append(maps / 1024)
        built = cd.last("", "derive", "unwind_tables_built", None)
        if built is not None:
            out.setdefault((mode, "tables built"), []).append(built)
    finally:
        bpf_stats(False)
        for w in work:
            w.kill()
            w.wait()
        cd.stop()
    if not measure:
        out.setdefault((mode, "complete %"), []).append(
            100 * complete(cd.spool))


def report(out):
    print("\n# unwind tables against frame pointers: medians (range) over "
          "rounds")
    print(f"{'':20s} {'framepointer':>28s} {'auto (tables)':>28s} "
          f"{'ratio':>7s}")
    for what in ("wc_sample", "wc_switch", "complete %", "rss KiB",
                 "map KiB", "tables built"):
        cells, meds = [], []
        for mode in MODES:
            v = out.get((mode, what))
            if not v:
                cells.append("-")
                meds.append(None)
                continue
            m = statistics.median(v)
            meds.append(m)
            cells.append(f"{m:.0f} ({min(v):.0f}-{max(v):.0f})")
        ratio = (f"{meds[1] / meds[0]:.2f}" if meds[0] and meds[1]
                 else "")
        name = {"wc_sample": "ns per sample",
                "wc_switch": "ns per switch"}.get(what, what)
        print(f"{name:20s} {cells[0]:>28s} {cells[1]:>28s} {ratio:>7s}")
    print("# ns per switch: the switch hook's runs while a thread pinned "
          "to CPU 0 sleeps 1.2 ms at a time (each switch-out parks a user "
          "stack) beside the sampled programs")
    scan = out.get("scan", [])
    callers = sum(c for c, _ in scan)
    false = sum(f for _, f in scan)
    if callers:
        print(f"# framepointer mode's stack search, against stacks the "
              f"tables walked whole: {false:.0f} of {callers:.0f} callers "
              f"it recovers are false ({100 * false / callers:.1f} %)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--settle", type=float, default=4)
    ap.add_argument("--measure", type=float, default=6)
    ap.add_argument("--smoke", action="store_true",
                    help="one short round: checks it runs")
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.settle, a.measure = 1, 2, 2
    wctest.require_built()
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_was = f.read().strip()
    out = {}
    try:
        with wctest.Env("bench-unwind") as env:
            exe = os.path.join(env.root, "uw_nofp")
            subprocess.run(["gcc", "-O2", "-g", "-fomit-frame-pointer",
                            "-pthread", "-o", exe, SRC], check=True)
            for i in range(a.rounds):
                for mode in MODES:
                    root = os.path.join(env.root, f"{mode}{i}")
                    os.makedirs(root)
                    one(root, mode, exe, a, out)
                root = os.path.join(env.root, f"scan{i}")
                os.makedirs(root)
                one(root, "auto", exe, a, out, measure=True)
                print(f"# round {i + 1} of {a.rounds} done", flush=True)
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats_was)
    report(out)
    if a.smoke:
        ok = all(out.get((m, "wc_sample")) for m in MODES) and \
            out.get(("auto", "map KiB"))
        print(("PASS" if ok else "FAIL") + ": unwind.py --smoke: figures "
              "for both modes")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
