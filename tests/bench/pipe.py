#!/usr/bin/env python3
"""pipe.py - context-switch cost of the wallclock plugin.

Runs `perf bench sched pipe` pinned to CPU 0 (two context switches and two
wake-ups per round trip), alternating runs with nothing loaded and with the
plugin loaded in a real collectd, and reports medians, ranges and the
slowdown.  With kernel.bpf_stats_enabled=1 it also reports each of our
programs' ns per run.  Not a test: it prints figures and asserts nothing.

    WC_BUILD_DIR=build python3 tests/bench/pipe.py [--runs 5] [--loops 200000]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
import wctest  # noqa: E402


def pipe_us_per_op(loops):
    out = subprocess.run(["taskset", "-c", "0", "perf", "bench", "sched",
                          "pipe", "-l", str(loops)], capture_output=True,
                         text=True, check=True).stdout
    m = re.search(r"([\d.]+)\s+usecs/op", out)
    return float(m.group(1))


def prog_stats():
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "--json"],
                                      capture_output=True, text=True).stdout)
    return {p["name"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0))
            for p in progs if p["name"].startswith("wc_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--loops", type=int, default=200000)
    ap.add_argument("--conf", default="", help="extra plugin options")
    a = ap.parse_args()
    wctest.require_built()
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_was = f.read().strip()
    base, loaded = [], []
    per_prog = {}
    with wctest.Env("bench") as env:
        try:
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write("1")
            for i in range(a.runs):
                base.append(pipe_us_per_op(a.loops))
                cd = env.collectd(interval=10, plugin_conf=a.conf,
                                  writers=("csv",))
                cd.start()
                time.sleep(1)
                before = prog_stats()
                loaded.append(pipe_us_per_op(a.loops))
                after = prog_stats()
                for name in after:
                    t0, c0 = before.get(name, (0, 0))
                    t1, c1 = after[name]
                    if c1 > c0:
                        per_prog.setdefault(name, []).append(
                            (t1 - t0) / (c1 - c0))
                cd.stop()
                time.sleep(0.5)
        finally:
            with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
                f.write(stats_was)

    def show(label, xs):
        print(f"{label:28s} median {statistics.median(xs):6.2f} us/op "
              f"(range {min(xs):.2f}-{max(xs):.2f}, n={len(xs)})")
    show("pipe, nothing loaded", base)
    show("pipe, wallclock loaded", loaded)
    slow = statistics.median(loaded) / statistics.median(base) - 1
    print(f"{'slowdown':28s} {100 * slow:+.1f} %")
    for name, xs in sorted(per_prog.items()):
        print(f"{name:28s} median {statistics.median(xs):6.0f} ns/run "
              f"(range {min(xs):.0f}-{max(xs):.0f})")


main()
