#!/usr/bin/env python3
"""storm.py - the plugin under a long storm, with the defaults (Interval 2):
what collectd's memory does, whether its reads stay quick, what was
dropped, and whether a long-lived spinner is still measured right.

Loads (--load):
  threads   a process making --rate threads a second (each lives 1 us
            of work), like a thread-per-request server;
  forkexec  --jobs shell loops forking and execing /bin/true;
  switches  --pairs pairs of threads ping-ponging a byte through pipes
            (the context-switch rate is read from /proc/stat);
  bigproc   one process of --threads threads, each asleep and waking
            once a second, all dying at once at the end (the process
            exits); --max-threads sets MaxThreads (below the thread
            count: a process beyond it).

Printed every --sample seconds: collectd's RSS, its anonymous part and
the symbolizer's cache (symbol tables and process mappings, a cache
bounded by its own budget that grows as new programs are seen), the
storm's rate (exits or context switches a second); at the end: the
slope of the RSS, and of the RSS less the cache, after the first three
minutes (the first flushes fill caches), reads (median and slowest),
the exit ring's fullest, every drop counter, collectd's CPU time, and the
spinner's on-CPU time against its schedstat over the whole storm.

It asserts nothing (a benchmark) except in --smoke: a 20 s storm of 2,000
threads a second, with PASS/FAIL lines that fail only when a figure could
not be measured.  Needs root.

    WC_BUILD_DIR=build python3 tests/bench/storm.py --load threads
        [--minutes 10] [--rate 10000] [--smoke]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "e2e"))
from wctest import Env, SchedSampler, counter_window, pct  # noqa: E402

DROPS = ("exits_dropped", "threads_lost", "threads_untracked",
         "samples_lost", "storage_failed", "stacks_full",
         "stack_counts_full", "window_weights_dropped",
         "window_stacks_dropped", "stacks_lost")



def status_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssAnon", "Threads"):
                out[k] = int(v.split()[0])
    return out


def ctxt():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("ctxt "):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        p = f.read().rsplit(")", 1)[1].split()
    return (int(p[11]) + int(p[12])) / os.sysconf("SC_CLK_TCK")


def start_load(env, a, seconds):
    """The storm's processes: a list of Popen-like objects to kill."""
    if a.load == "threads":
        return [env.workload("wcw_storm", "--churn", str(a.rate),
                             "--churn-us", "0", "--seconds",
                             str(seconds)).proc]
    if a.load == "switches":
        return [env.workload("wcw_pingpong", "--pingpong", str(a.pairs),
                             "--seconds", str(seconds)).proc]
    if a.load == "forkexec":
        return [subprocess.Popen(["sh", "-c",
                                  "while :; do /bin/true; done"])
                for _ in range(a.jobs)]
    return [env.workload("wcw_bigproc", "--nappers", str(a.threads),
                         "--sleep", "1", "--seconds", str(seconds)).proc]


def slope_mib_h(series, after):
    """MiB an hour, least squares over (seconds, KiB) from after on."""
    pts = [(t, k) for t, k in series if t >= after]
    if len(pts) < 3:
        return float("nan")
    mt = statistics.mean(t for t, _ in pts)
    mk = statistics.mean(k for _, k in pts)
    num = sum((t - mt) * (k - mk) for t, k in pts)
    den = sum((t - mt) ** 2 for t, _ in pts)
    return num / den * 3600 / 1024 if den else float("nan")


def run(a):
    seconds = int(a.minutes * 60)
    conf = f"MaxThreads {a.max_threads}" if a.max_threads else ""
    with Env(f"bench-storm-{a.load}") as env:
        cd = env.collectd(interval=2, plugin_conf=conf).start()
        spin = env.workload("wcw_stspin", "--spin", "1", "--seconds",
                            str(seconds + 20))
        cd.wait_rows("", "derive", "exits", 2, 10)
        ss = SchedSampler([spin.pid], period=0.2)
        t0 = time.time()
        procs = start_load(env, a, seconds)
        exits0, cs0, cpu0 = cd.last("", "derive", "exits"), ctxt(), cpu_s(
            cd.pid)
        series, rest, prev = [], [], (t0, exits0, cs0)
        print(f"# storm {a.load}: {a.minutes} min; t, RSS, anon, symbol "
              "cache, rate")
        while time.time() - t0 < seconds:
            time.sleep(min(a.sample, seconds - (time.time() - t0)))
            now, ex, cs = time.time(), cd.last("", "derive", "exits"), ctxt()
            st = status_kib(cd.pid)
            sym = cd.last("", "bytes", "symbol_cache") / 1024
            series.append((now - t0, st["VmRSS"]))
            rest.append((now - t0, st["VmRSS"] - sym))
            dt = now - prev[0]
            print(f"#   {now - t0:6.0f} s  RSS {st['VmRSS'] / 1024:6.1f} MiB"
                  f"  anon {st['RssAnon'] / 1024:6.1f} MiB  symbols "
                  f"{sym / 1024:5.1f} MiB  exits "
                  f"{(ex - prev[1]) / dt:8.0f}/s  switches "
                  f"{(cs - prev[2]) / dt:8.0f}/s", flush=True)
            prev = (now, ex, cs)
        t1 = time.time()
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        n = len(cd.csv("", "derive", "exits"))
        cd.wait_rows("", "derive", "exits", n + 2, 10)
        measured = report(a, cd, ss, spin, (t0, t1), (series, rest),
                          (cd.last("", "derive", "exits") - exits0,
                           ctxt() - cs0, cpu_s(cd.pid) - cpu0))
        spin.kill()
        ss.stop()
        cd.stop()
    return measured


def report(a, cd, ss, spin, span, rss, totals):
    t0, t1 = span
    series, rest = rss
    exits, cs, cpu = totals
    reads = [v for t, v in cd.csv("", "duration", "read") if t0 < t < t1]
    fill = [v for t, v in cd.csv("", "percent", "exit_ring_fill")
            if t0 < t < t1]
    print(f"# storm {a.load}: {exits / (t1 - t0):.0f} exits/s, "
          f"{cs / (t1 - t0):.0f} context switches/s over {t1 - t0:.0f} s")
    if not series:
        print("# storm: nothing measured")
        return {}
    # the first flushes (a minute apart) fill the caches and the window
    warm = min(180, (t1 - t0) / 3)
    print(f"# RSS {series[0][1] / 1024:.1f} MiB at {series[0][0]:.0f} s, "
          f"{series[-1][1] / 1024:.1f} at {series[-1][0]:.0f} s, most "
          f"{max(k for _, k in series) / 1024:.1f}; slope from {warm:.0f} s "
          f"on {slope_mib_h(series, warm):+.2f} MiB/hour; less the symbol "
          f"cache {rest[0][1] / 1024:.1f} MiB at {rest[0][0]:.0f} s, "
          f"{rest[-1][1] / 1024:.1f} at {rest[-1][0]:.0f} s, slope "
          f"{slope_mib_h(rest, warm):+.2f} MiB/hour")
    if reads:
        print(f"# reads: median {statistics.median(reads) * 1e3:.1f} ms, "
              f"slowest {max(reads) * 1e3:.1f} ms ({len(reads)} reads); "
              f"exit ring at most {max(fill, default=0):.0f} % full; "
              f"collectd CPU {cpu:.1f} s ({100 * cpu / (t1 - t0):.1f} %)")
    print("# drops: " + ", ".join(f"{d} {cd.last('', 'derive', d):.0f}"
                                  for d in DROPS))
    print(f"# groups {cd.last('', 'gauge', 'groups'):.0f}, threads "
          f"{cd.last('', 'gauge', 'threads'):.0f}, processes "
          f"{cd.last('', 'gauge', 'processes'):.0f}")
    on = cd.csv("wcw_stspin", "wallclock_us", "oncpu")
    ts = [t for t, _ in on if t0 + 2 < t < t1]
    got = counter_window(on, ts[0], ts[-1]) if len(ts) >= 2 else None
    a_, b_ = (ss.at(spin.pid, got[1]), ss.at(spin.pid, got[2])) if got \
        else (None, None)
    out = {"exits": exits, "reads": len(reads)}
    if a_ and b_:
        want = (b_[0] - a_[0]) / 1e3
        out["spinner"] = pct(got[0], want)
        print(f"# spinner: {got[0] / 1e6:.2f} s on-CPU against schedstat's "
              f"{want / 1e6:.2f} s ({out['spinner']:+.2f} %) over "
              f"{got[2] - got[1]:.0f} s")
    else:
        print("# spinner: not measured (no reads in the storm)")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--load", default="threads",
                    choices=("threads", "forkexec", "switches", "bigproc"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--rate", type=int, default=10000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=10000)
    ap.add_argument("--max-threads", type=int, default=0)
    ap.add_argument("--sample", type=float, default=30)
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if not a.smoke:
        run(a)
        return
    a.load, a.minutes, a.rate, a.sample = "threads", 1 / 3, 2000, 5
    m = run(a)
    for what, ok in (("exits counted", m.get("exits", 0) > 0),
                     ("reads timed", m.get("reads", 0) > 0),
                     ("the spinner measured", "spinner" in m)):
        print(f"{'PASS' if ok else 'FAIL'}: storm.py smoke: {what}")
    sys.exit(0 if len(m) == 3 else 1)


if __name__ == "__main__":
    main()
