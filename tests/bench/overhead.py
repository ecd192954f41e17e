#!/usr/bin/env python3
"""overhead.py - what profiling costs, ours and our peers', in one run.

Two passes, each interleaving its configurations round by round:

1. Slowdown, with kernel.bpf_stats_enabled off (as in production: the
   statistics themselves cost two clock reads per program run).  For
   nothing loaded; the wallclock plugin in a real collectd at its
   defaults, without stacks, with a stack for every wait, and with
   unwind tables (UserStackUnwinding "auto"); Debian's
   libbpf-tools offcputime and runqlat; bpftrace on-CPU + off-CPU
   one-liners; perf record on the switch tracepoint:
     - `perf bench sched pipe`, pinned to CPU 0 (two switches per round
       trip),
     - `perf bench sched messaging`,
     - a CPU-bound loop pinned to CPU 1 (sha256 of zeros),
   and the CPU-bound loop again with the plugin at 49, 99 and 999 Hz.
2. BPF ns per program run (kernel.bpf_stats_enabled on) during the pipe
   benchmark, for ours, the peers', and two yardsticks on the same
   tracepoint (tests/bench/floor.bpf.c: an empty program, and a
   task-storage timestamp), so ours reads against what this machine
   charges for any hook at all.

Prints medians, ranges and ratios to the interleaved baseline.  Asserts
nothing (it is not a test) except in --smoke, which checks it ran.

    make bench                     # or:
    WC_BUILD_DIR=build python3 tests/bench/overhead.py [--rounds 5]
        [--baseline OTHER_BUILD] [--no-peers]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
import wctest  # noqa: E402

BPFTRACE = r"""
tracepoint:sched:sched_switch {
	if (@ts[args->next_pid]) {
		@off[@ks[args->next_pid], @us[args->next_pid], args->next_comm] =
			sum(nsecs - @ts[args->next_pid]);
		delete(@ts[args->next_pid]);
	}
	@ts[tid] = nsecs; @ks[tid] = kstack; @us[tid] = ustack;
}
profile:hz:99 { @on[kstack, ustack, comm] = count(); }
"""


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def pipe(loops):
    out = sh(["taskset", "-c", "0", "perf", "bench", "sched", "pipe", "-l",
              str(loops)], check=True).stdout
    return float(re.search(r"([\d.]+)\s+usecs/op", out).group(1))


def messaging(loops):
    out = sh(["perf", "bench", "sched", "messaging", "-g", "4", "-l",
              str(loops)], check=True).stdout
    return float(re.search(r"Total time:\s+([\d.]+)", out).group(1))


def cpu_bound(mib):
    t = time.monotonic()
    sh(["taskset", "-c", "1", "sh", "-c",
        f"head -c {mib}M /dev/zero | sha256sum"], check=True)
    return time.monotonic() - t


def prog_stats():
    progs = json.loads(sh(["bpftool", "prog", "show", "--json"]).stdout
                       or "[]")
    return {(p["id"], p.get("name", "?")): (p.get("run_time_ns", 0),
                                            p.get("run_cnt", 0))
            for p in progs}


class Proc:
    """A peer running in the background, stopped by SIGINT."""

    def __init__(self, args, settle=2.0):
        self.p = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        time.sleep(settle)
        if self.p.poll() is not None:
            raise RuntimeError(f"{args[0]} exited at once "
                               f"(status {self.p.returncode})")

    def stop(self):
        self.p.send_signal(2)
        try:
            self.p.wait(20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class Plugin:
    def __init__(self, root, conf, plugin_so=wctest.PLUGIN_SO):
        os.makedirs(root, exist_ok=True)
        self.cd = wctest.Collectd(root, 10, conf, writers=("csv",),
                                  plugin_so=plugin_so)
        self.cd.start()
        time.sleep(1)

    def stop(self):
        self.cd.stop()


def ours(root, label="wallclock", so=wctest.PLUGIN_SO, unwind=True):
    """unwind: a row with unwind tables too (a baseline build from before
    them would refuse the option)."""
    out = [(label, lambda i: Plugin(f"{root}/{label}{i}", "", so)),
           (f"{label} Stacks false", lambda i: Plugin(
               f"{root}/{label}ns{i}", "Stacks false", so)),
           (f"{label} MinBlock 0", lambda i: Plugin(
               f"{root}/{label}0_{i}", "MinBlockMicroseconds 0", so))]
    if unwind:
        out.append((f"{label} unwind auto", lambda i: Plugin(
            f"{root}/{label}uw{i}", 'UserStackUnwinding "auto"', so)))
    return out


def peers(tmp, missing):
    """The peers installed; the names of those that are not go to
    `missing`, so the report says which rows it lacks."""
    every = [
        ("offcputime", "offcputime", "libbpf-tools",
         lambda i: Proc(["offcputime", "3600"])),
        ("runqlat", "runqlat", "libbpf-tools",
         lambda i: Proc(["runqlat", "3600", "1"])),
        ("bpftrace on+off", "bpftrace", "bpftrace",
         lambda i: Proc(["bpftrace", "-e", BPFTRACE], settle=4)),
        ("perf sched_switch -g", "perf", "linux-perf",
         lambda i: Proc(["perf", "record", "-q", "-e", "sched:sched_switch",
                         "-a", "-g", "-o",
                         os.path.join(tmp, f"perf{i}.data")])),
    ]
    out = []
    for label, cmd, pkg, start in every:
        if shutil.which(cmd):
            out.append((label, start))
        else:
            missing.append(f"{label} ({cmd} not found: apt-get install "
                           f"{pkg}, or tests/deps.sh)")
    return out


def yardsticks():
    build = os.environ.get("WC_BUILD_DIR", "build")
    load = os.path.join(build, "tests", "bench", "bpfload")
    obj = os.path.join(build, "tests", "bench", "floor.bpf.o")
    if not (os.path.exists(load) and os.path.exists(obj)):
        print(f"# no yardsticks: build {load} and {obj} (make bench does)")
        return []
    return [(f"yardstick {prog}", lambda i, prog=prog: Proc(
        [load, obj, prog], settle=1)) for prog in ("floor_empty",
                                                   "floor_stamp")]


def bpf_stats(on):
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1" if on else "0")


def slowdown(start, rounds, a, results):
    """Pass 1: every workload under every configuration, stats off."""
    bpf_stats(False)
    for i in range(rounds):
        for label, up in start:
            peer = up(i) if up else None
            try:
                r = results.setdefault(label, {"pipe": [], "messaging": [],
                                               "cpu": []})
                r["pipe"].append(pipe(a.loops))
                r["messaging"].append(messaging(a.msg_loops))
                r["cpu"].append(cpu_bound(a.cpu_mib))
            finally:
                if peer:
                    peer.stop()
        print(f"# slowdown: round {i + 1} of {rounds} done", flush=True)


def per_run_ns(start, rounds, a, ns):
    """Pass 2: ns per program run during the pipe benchmark, stats on."""
    bpf_stats(True)
    try:
        for i in range(rounds):
            for label, up in start:
                peer = up(i)
                try:
                    before = prog_stats()
                    pipe(a.loops)
                    after = prog_stats()
                finally:
                    peer.stop()
                for key, (t1, c1) in after.items():
                    t0, c0 = before.get(key, (0, 0))
                    if c1 > c0:
                        ns.setdefault((label, key[1]), []).append(
                            ((t1 - t0) / (c1 - c0), c1 - c0))
            print(f"# ns per run: round {i + 1} of {rounds} done",
                  flush=True)
    finally:
        bpf_stats(False)


def cpu_by_frequency(root, a):
    """The CPU-bound loop with the plugin at 49, 99 and 999 Hz."""
    out = {}
    for i in range(a.rounds):
        base = cpu_bound(a.cpu_mib)
        out.setdefault("none", []).append(base)
        for hz in (49, 99, 999):
            p = Plugin(f"{root}/hz{hz}_{i}", f"SampleFrequency {hz}")
            try:
                out.setdefault(f"{hz} Hz", []).append(cpu_bound(a.cpu_mib))
            finally:
                p.stop()
    return out


def fmt(vals, base):
    m = statistics.median(vals)
    rel = f"{100 * (m / base - 1):+6.1f} %" if base else ""
    return f"{m:9.3f} ({min(vals):.3f}-{max(vals):.3f}) {rel}"


def report_slowdown(results):
    base = results["none"]
    print("\n# Slowdown (bpf_stats off): medians (range) and change against"
          " nothing loaded")
    print(f"{'configuration':24s} {'pipe us/op (CPU 0)':>36s} "
          f"{'messaging s':>32s} {'sha256 s (CPU 1)':>32s}")
    for label, r in results.items():
        print(f"{label:24s} "
              f"{fmt(r['pipe'], statistics.median(base['pipe'])):>36s} "
              f"{fmt(r['messaging'], statistics.median(base['messaging'])):>32s} "
              f"{fmt(r['cpu'], statistics.median(base['cpu'])):>32s}")


def report_ns(ns, sample_hz=(49, 99, 999)):
    """ns per run, and what our sampler's runs cost a CPU at each rate."""
    print("\n# BPF ns per program run during the pipe benchmark "
          "(bpf_stats on), median (range) over rounds")
    for (label, prog), v in sorted(ns.items()):
        if not label.startswith("yardstick") and prog.startswith("floor_"):
            continue
        if label.startswith("wallclock") and not prog.startswith("wc_"):
            continue
        t = [x[0] for x in v]
        runs = statistics.median([x[1] for x in v])
        print(f"{label:24s} {prog:28s} {statistics.median(t):9.0f} "
              f"({min(t):.0f}-{max(t):.0f})  {runs:10.0f} runs")
    sample = [x[0] for (label, prog), v in ns.items()
              if label == "wallclock" and prog == "wc_sample" for x in v]
    if sample:
        m = statistics.median(sample)
        print("# the sampler's own cost, from its ns per run: " + ", ".join(
            f"{hz} Hz {100 * m * hz / 1e9:.2f} % of a CPU"
            for hz in sample_hz))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loops", type=int, default=200000)
    ap.add_argument("--msg-loops", type=int, default=200)
    ap.add_argument("--cpu-mib", type=int, default=1024)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--baseline", metavar="BUILD",
                    help="another build tree (an earlier commit's) whose "
                         "plugin runs interleaved with this one, as "
                         "'baseline'")
    ap.add_argument("--smoke", action="store_true",
                    help="one short round, ours only: checks it runs")
    a = ap.parse_args()
    if a.smoke:
        a.rounds, a.loops, a.msg_loops, a.cpu_mib = 1, 20000, 20, 128
        a.no_peers = True
    wctest.require_built()
    mounted = False
    if not os.path.ismount("/sys/kernel/tracing"):
        mounted = sh(["mount", "-t", "tracefs", "nodev",
                      "/sys/kernel/tracing"]).returncode == 0
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_was = f.read().strip()
    tmp = tempfile.mkdtemp(prefix="wc-bench-", dir="/var/tmp")
    results, ns, freq, missing = {}, {}, {}, []
    try:
        with wctest.Env("bench") as env:
            theirs = [] if a.no_peers else peers(tmp, missing)
            for m in missing:
                print(f"# MISSING PEER: {m}", flush=True)
            base = ours(env.root, "baseline", os.path.join(
                a.baseline, ".libs", "wallclock.so"),
                unwind=False) if a.baseline else []
            slowdown([("none", None)] + ours(env.root) + base + theirs,
                     a.rounds, a, results)
            if not a.smoke:
                freq = cpu_by_frequency(env.root, a)
            per_run_ns(ours(env.root)[:2] + base[:2] + yardsticks() +
                       theirs, a.rounds, a, ns)
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats_was)
        shutil.rmtree(tmp, ignore_errors=True)
        if mounted:
            sh(["umount", "/sys/kernel/tracing"])
    print(f"\n# {a.rounds} interleaved rounds")
    report_slowdown(results)
    if freq:
        print("\n# CPU-bound loop against the plugin's SampleFrequency")
        b = statistics.median(freq["none"])
        for label, v in freq.items():
            print(f"{label:24s} {fmt(v, b)}")
    report_ns(ns)
    for m in missing:
        print(f"# MISSING PEER, its rows are left out: {m}")
    if a.smoke:
        def measured(label, prog):
            return bool(ns.get((label, prog)))
        checks = [
            ("the pipe benchmark runs", bool(results["none"]["pipe"])),
            ("it measures wc_switch", measured("wallclock", "wc_switch")),
            ("it measures the yardsticks",
             measured("yardstick floor_empty", "floor_empty") and
             measured("yardstick floor_stamp", "floor_stamp")),
        ]
        for what, ok in checks:
            print(("PASS" if ok else "FAIL") + f": bench smoke: {what}")
        return 0 if all(ok for _, ok in checks) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
