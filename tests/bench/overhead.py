#!/usr/bin/env python3
"""overhead.py - what profiling costs, ours and our peers', in one run.

For each configuration (nothing; the wallclock plugin in a real collectd
at its defaults; with a stack for every wait; Debian's libbpf-tools
offcputime; bpftrace on-CPU + off-CPU one-liners; perf record on the
switch tracepoint), interleaved over several rounds:

  - `perf bench sched pipe`, pinned to CPU 0 (two switches per round trip),
  - `perf bench sched messaging`,
  - a CPU-bound loop pinned to CPU 1 (sha256 of zeros), at our default
    49 Hz and, for the plugin, at 99 and 999 Hz,

and, with kernel.bpf_stats_enabled, each BPF program's ns per run.  Prints
medians, ranges and ratios to the interleaved baseline.  Asserts nothing
(it is not a test) except in --smoke, which checks it ran.

    make bench                     # or:
    WC_BUILD_DIR=build python3 tests/bench/overhead.py [--rounds 5]
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

    def stop(self):
        self.p.send_signal(2)
        try:
            self.p.wait(20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class Plugin:
    def __init__(self, root, conf):
        os.makedirs(root, exist_ok=True)
        self.cd = wctest.Collectd(root, 10, conf, writers=("csv",))
        self.cd.start()
        time.sleep(1)

    def stop(self):
        self.cd.stop()


def configs(root, peers, tmp):
    out = [("none", None),
           ("wallclock", lambda i: Plugin(f"{root}/wc{i}", "")),
           ("wallclock MinBlock 0", lambda i: Plugin(
               f"{root}/wc0_{i}", "MinBlockMicroseconds 0"))]
    if not peers:
        return out
    if shutil.which("offcputime"):
        out.append(("offcputime", lambda i: Proc(["offcputime", "3600"])))
    if shutil.which("bpftrace"):
        out.append(("bpftrace on+off", lambda i: Proc(
            ["bpftrace", "-e", BPFTRACE], settle=4)))
    out.append(("perf sched_switch -g", lambda i: Proc(
        ["perf", "record", "-q", "-e", "sched:sched_switch", "-a", "-g",
         "-o", os.path.join(tmp, f"perf{i}.data")])))
    return out


def measure(name, start, rounds, a, results, ns):
    for i in range(rounds):
        for label, up in start:
            peer = up(i) if up else None
            before = prog_stats()
            try:
                r = results.setdefault(label, {"pipe": [], "messaging": [],
                                               "cpu": []})
                r["pipe"].append(pipe(a.loops))
                r["messaging"].append(messaging(a.msg_loops))
                r["cpu"].append(cpu_bound(a.cpu_mib))
                after = prog_stats()
            finally:
                if peer:
                    peer.stop()
            for key, (t1, c1) in after.items():
                t0, c0 = before.get(key, (0, 0))
                if c1 > c0 and (label != "none"):
                    ns.setdefault((label, key[1]), []).append(
                        (t1 - t0) / (c1 - c0))
        print(f"# {name}: round {i + 1} of {rounds} done", flush=True)


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loops", type=int, default=200000)
    ap.add_argument("--msg-loops", type=int, default=200)
    ap.add_argument("--cpu-mib", type=int, default=2048)
    ap.add_argument("--no-peers", action="store_true")
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
    results, ns = {}, {}
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        with wctest.Env("bench") as env:
            measure("overhead", configs(env.root, not a.no_peers, tmp),
                    a.rounds, a, results, ns)
            freq = cpu_by_frequency(env.root, a) if not a.smoke else {}
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats_was)
        shutil.rmtree(tmp, ignore_errors=True)
        if mounted:
            sh(["umount", "/sys/kernel/tracing"])
    base = results["none"]
    print(f"\n# {a.rounds} interleaved rounds; medians (range) and change "
          "against nothing loaded")
    print(f"{'configuration':24s} {'pipe us/op (CPU 0)':>36s} "
          f"{'messaging s':>32s} {'sha256 s (CPU 1)':>32s}")
    for label, r in results.items():
        print(f"{label:24s} "
              f"{fmt(r['pipe'], statistics.median(base['pipe'])):>36s} "
              f"{fmt(r['messaging'], statistics.median(base['messaging'])):>32s} "
              f"{fmt(r['cpu'], statistics.median(base['cpu'])):>32s}")
    if freq:
        print("\n# CPU-bound loop against the plugin's SampleFrequency")
        b = statistics.median(freq["none"])
        for label, v in freq.items():
            print(f"{label:24s} {fmt(v, b)}")
    print("\n# BPF ns per run (kernel.bpf_stats_enabled), medians over rounds")
    for (label, prog), v in sorted(ns.items()):
        if label.startswith("wallclock") and not prog.startswith("wc_"):
            continue
        print(f"{label:24s} {prog:28s} {statistics.median(v):9.0f}")
    if a.smoke:
        ours = [k for k in ns if k[0] == "wallclock" and
                k[1] == "wc_switch"]
        ok = bool(base["pipe"]) and bool(ours)
        print(("PASS" if ok else "FAIL") +
              ": bench smoke: the benchmark runs and measures wc_switch")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
