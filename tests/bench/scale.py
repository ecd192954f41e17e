#!/usr/bin/env python3
"""scale.py - what the plugin costs on a host with many processes, threads
and distinct stacks.

A generated workload (tests/bench/scalegen.py): PROCS processes of THREADS
threads each (default 1000 x 10), every thread descending a pseudo-random
path through a tree of 16 x 4 distinct functions (65,536 call paths, each a
distinct user stack) and, at the leaf, sleeping 2-20 ms (an off-CPU stack:
the plugin walks waits >= MinBlockMicroseconds, 1 ms by default) or
spinning 200 us, then resting 1-3 s (so each thread wakes about once a
second, and the host stays mostly idle).  About 50,000 distinct call paths
are used in each 20 s flush window.  The worker processes are forked by
one launcher (same layout, so the same addresses in every process, like a
pre-forking server); --exec makes each exec itself (its own ASLR layout,
so every process's stacks are distinct addresses).

The plugin runs in a real collectd (Interval 10, FlushInterval 20 by
default: several flushes in a short run; production's default is 60) with
StackStorage at its default, 16384 (the kernel's tables are emptied every
second, so they need room for a second's worth; the drop counters show
whether they had it).  Printed, median and
range where there are several values:

  - drain time (total_time_in_ms-drain) and the stacks copied out;
  - read time (the plugin's duration-read: walk the threads and account
    them; the drains and the flush are not in it): the first read, later reads,
    reads at a flush,
  - flush time (duration-flush): the first flush (cold symbol caches)
    against the later ones, and read + flush at a flush read,
  - processes, threads, groups tracked; stacks held per window; lines per
    folded file; symbolizer memory,
  - collectd's RSS (VmRSS, VmHWM from /proc/PID/status, every 2 s) and
    CPU time,
  - the kernel memory of the plugin's BPF maps (bytes_memlock, per map),
  - the user stacks: unwind tables loaded, their bytes (rows, and the
    maps' kernel memory), the helper's build time, walks by tables and
    how many reached the outermost frame, why the others ended, files
    left without a table (--unwind framepointer for the comparison);
  - every drop counter, so a reader sees whether the stacks all fit.

--churn-minutes N instead runs N minutes while the launcher replaces
--churn-rate worker processes a second (new processes, new PIDs, same
code), samples collectd's RSS once a minute and prints the series and its
slope in MiB/hour ("RSS flat across an hour of churn").

It asserts nothing (it is a benchmark) except in --smoke: tiny sizes, a
short run with some churn, PASS/FAIL lines that fail only when a figure
could not be measured.  Needs root.

    WC_BUILD_DIR=build python3 tests/bench/scale.py [--procs 1000]
        [--threads 10] [--duration 180] [--churn-minutes 60]
        [--unwind auto|framepointer] [--smoke]
"""
import argparse
import json
import math
import os
import re
import resource
import select
import signal
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "e2e"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scalegen  # noqa: E402
import wctest  # noqa: E402

CFLAGS = ["-O1", "-fno-omit-frame-pointer", "-fno-inline", "-pthread"]
MiB = 1024.0 * 1024.0

DROPS = ("stacks_full", "stack_counts_full", "window_stacks_dropped",
         "window_weights_dropped", "stacks_lost", "stack_errors",
         "stacks_truncated", "exits_dropped", "threads_lost",
         "threads_untracked", "samples_lost", "storage_failed",
         "torn_reads", "read_errors", "spool_write_errors",
         "walk_refills", "walk_failures")


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


# ---------------------------------------------------------------- figures

def fmt_range(vals, scale=1.0, unit="", prec=1):
    """median (min-max), n values; '-' when there is none."""
    if not vals:
        return "-"
    v = [x * scale for x in vals]
    if len(v) == 1:
        return f"{v[0]:.{prec}f}{unit} (1 value)"
    return (f"{statistics.median(v):.{prec}f}{unit} "
            f"({min(v):.{prec}f}-{max(v):.{prec}f}, {len(v)} values)")


def slope_per_hour(series):
    """Least-squares slope of [(seconds, MiB)] in MiB per hour."""
    if len(series) < 2:
        return None
    xs = [t / 3600.0 for t, _ in series]
    ys = [v for _, v in series]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return (sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den
            if den else None)


def status_kib(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "RssAnon"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
    except OSError:
        return None
    fields = st[st.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class RssSampler:
    """VmRSS and VmHWM of one process every `period` seconds."""

    def __init__(self, pid, period=2.0):
        self.pid, self.period = pid, period
        self.rows = []  # (time, rss KiB, hwm KiB)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def sample(self):
        s = status_kib(self.pid)
        if "VmRSS" in s:
            self.rows.append((time.time(), s["VmRSS"], s.get("VmHWM", 0)))
        return s

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.period)

    def stop(self):
        self._stop.set()
        self._t.join()


def bpf_maps(pid):
    """The BPF maps a process holds (through its fds, or through the
    programs it holds), as bpftool's json dicts.  Returns (maps, how)."""
    try:
        shown = json.loads(sh(["bpftool", "map", "show", "--json"]).stdout
                           or "[]")
    except ValueError:
        shown = []
    owned = [m for m in shown
             if any(p.get("pid") == pid for p in m.get("pids", []))]
    if owned:
        return owned, "bpftool pids"
    ids = wctest.fdinfo_ids(pid, ("map_id", "prog_id"))
    map_ids, prog_ids = ids["map_id"], ids["prog_id"]
    for pid_ in prog_ids:
        try:
            p = json.loads(sh(["bpftool", "prog", "show", "id", str(pid_),
                               "--json"]).stdout or "{}")
        except ValueError:
            continue
        map_ids.update(p.get("map_ids", []))
    return [m for m in shown if m.get("id") in map_ids], "fds of the pid"


# ---------------------------------------------------------------- workload

class Launcher:
    """The compiled workload's launcher, in its own session, so one
    killpg reaches every worker whatever happens."""

    def __init__(self, binary, a, churn_per_s):
        args = [binary, "--procs", str(a.procs), "--threads",
                str(a.threads), "--sleep-us", str(a.sleep_us[0]),
                str(a.sleep_us[1]), "--spin-pct", str(a.spin_pct),
                "--spin-us", str(a.spin_us), "--rest-ms",
                str(a.rest_ms[0]), str(a.rest_ms[1]), "--names",
                str(a.names), "--churn-per-s", str(churn_per_s),
                "--ready-timeout", "180"]
        if a.exec:
            args.append("--exec")

        def unlimit():
            inf = resource.RLIM_INFINITY
            for lim in (resource.RLIMIT_NPROC,):
                try:
                    resource.setrlimit(lim, (inf, inf))
                except (ValueError, OSError):
                    pass

        self.t0 = time.time()
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True,
                                  start_new_session=True,
                                  preexec_fn=unlimit)
        self.done_line = ""

    def wait_ready(self):
        ready = self._line(240)
        m = re.match(r"ready (\d+) (\d+)", ready or "")
        if not m:
            raise RuntimeError(f"workload did not start: {ready!r}")
        self.procs, self.threads = int(m.group(1)), int(m.group(2))
        self.start_s = time.time() - self.t0

    def _line(self, timeout):
        end = time.time() + timeout
        while time.time() < end:
            r, _, _ = select.select([self.p.stdout], [], [], 0.5)
            if r:
                return self.p.stdout.readline()
            if self.p.poll() is not None:
                return self.p.stdout.readline()
        return None

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            self.done_line = self._line(40) or ""
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                pass
        try:  # whatever is left of the session
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.p.poll() is None:
            self.p.wait()
        if self.p.stdout:
            self.p.stdout.close()

    def summary(self):
        m = dict(re.findall(r"(\w+)=([\d.]+)", self.done_line))
        return {k: float(v) for k, v in m.items()}


def build_workload(root, a):
    src = os.path.join(root, "scalew.c")
    exe = os.path.join(root, "scalew")
    with open(src, "w") as f:
        f.write(scalegen.generate(a.fanout, a.depth))
    t = time.time()
    r = sh(["gcc"] + CFLAGS + ["-o", exe, src])
    if r.returncode:
        raise RuntimeError("gcc failed:\n" + r.stderr[-3000:])
    return exe, time.time() - t


def raise_limits(a, restore):
    """pid_max and threads-max with room for the workload (and churn)."""
    need = a.procs * (a.threads + 1) + 4096
    for path in ("/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"):
        with open(path) as f:
            have = int(f.read())
        if have < need:
            want = min(4194304, 1 << math.ceil(math.log2(need)))
            with open(path, "w") as f:
                f.write(str(want))
            restore.append((path, str(have)))
            print(f"# raised {path} from {have} to {want}")


# ---------------------------------------------------------------- collectd

def plugin_ready():
    return os.path.exists(wctest.PLUGIN_SO)


def start_collectd(root, a, conf, tries=3):
    """collectd with the plugin, its first read done.  A build directory
    someone is rebuilding may miss the plugin for a moment: wait and retry
    (60 s) before giving up."""
    why = ""
    for attempt in range(1, tries + 1):
        if not plugin_ready():
            why = f"{wctest.PLUGIN_SO} missing"
        else:
            d = os.path.join(root, f"collectd{attempt}")
            os.makedirs(d)
            cd = wctest.Collectd(d, a.interval, conf, writers=("csv",))
            t = time.time()
            try:
                cd.start()
                ok = wctest.wait_until(
                    lambda: cd.csv("", "gauge", "threads") or
                    cd.proc.poll() is not None, a.interval * 2 + 60, 0.2)
                if ok and cd.proc.poll() is None:
                    return cd, time.time() - t
                why = "no read: " + " | ".join(
                    cd.wallclock_errors(("error", "warning"))[-3:])
            except RuntimeError as e:
                why = str(e)[-1500:]
            cd.stop()
        if attempt < tries:
            print(f"# collectd or the plugin did not start (attempt "
                  f"{attempt}): {why}; retrying in 60 s", flush=True)
            time.sleep(60)
    raise RuntimeError(f"collectd or the plugin did not start: {why}")


def self_rows(cd, key):
    type_, tinst = key.split("-", 1)
    return cd.csv("", type_, tinst)


def report_waits(cd):
    """waits_under_way and waits_unwalked, and how much of the files'
    sleep and I/O time is under the labels for missing stacks."""
    for name in ("waits_under_way", "waits_unwalked"):
        rows = self_rows(cd, "derive-" + name)
        print(f"{'derive-' + name:34s} "
              f"{rows[-1][1] if rows else float('nan'):.0f}")
    waited = {"all": 0, "[user stack not taken]": 0,
              "[kernel stack not walked]": 0}
    for path in wctest.folded_files(cd.spool):
        for fr, v in wctest.folded_lines(path):
            if fr[1] not in ("[off-cpu sleep]", "[off-cpu io]") or \
                    fr[2].startswith("[waits <"):
                continue
            waited["all"] += v
            for label in waited:
                if label in fr:
                    waited[label] += v
    for label in ("[user stack not taken]", "[kernel stack not walked]"):
        share = waited[label] / waited["all"] if waited["all"] else 0
        print(f"{'under ' + label:34s} {100 * share:.2f} % of the files' "
              "sleep and I/O with a stack")


def flush_reads(cd):
    """Times of the reads that wrote a file (spool_files grew)."""
    rows = self_rows(cd, "derive-spool_files")
    return [t for (t0, v0), (t, v) in zip(rows, rows[1:]) if v > v0] + (
        [rows[0][0]] if rows and rows[0][1] > 0 else [])


def near_any(t, times, slack=0.5):
    return any(abs(t - x) <= slack for x in times)


# ---------------------------------------------------------------- report

def model(a):
    """Expected path picks and distinct paths per flush window."""
    paths = a.fanout ** a.depth
    leaf_s = ((1 - a.spin_pct / 100) * sum(a.sleep_us) / 2e6 +
              a.spin_pct / 100 * a.spin_us / 1e6)
    iter_s = sum(a.rest_ms) / 2e3 + leaf_s
    picks = a.procs * a.threads * a.flush / iter_s
    if a.exec:  # every process its own addresses
        per = picks / a.procs
        distinct = a.procs * paths * (1 - math.exp(-per / paths))
    else:
        distinct = paths * (1 - math.exp(-picks / paths))
    return paths, iter_s, picks, distinct


UW_ENDS = ("no_table", "pending", "unlearnt", "bad_read", "rule", "signal")
UW_FILES = ("deferred", "no_room", "too_big", "slow", "refused", "no_cfi",
            "gone", "unreadable")


def report_unwind(cd, a):
    """The unwind tables at this scale: what they hold, what building them
    took, how whole the walks were.  False if not dispatched."""
    def final(key):
        r = self_rows(cd, key)
        return r[-1][1] if r else None

    print(f"\n# user stacks (UserStackUnwinding \"{a.unwind}\")")
    walks, whole = final("derive-unwind_walks"), final("derive-unwind_complete")
    if walks is None:
        print("  (no unwind metrics dispatched)")
        return False
    tables = [v for _, v in self_rows(cd, "gauge-unwind_tables")]
    print(f"{'tables loaded':34s} {fmt_range(tables, prec=0)}; built "
          f"{final('derive-unwind_tables_built') or 0:.0f}, evicted "
          f"{final('derive-unwind_evicted') or 0:.0f}")
    for key in ("bytes-unwind_rows", "bytes-unwind_maps"):
        v = [x for _, x in self_rows(cd, key)]
        print(f"{key:34s} {fmt_range(v, 1 / MiB, ' MiB', prec=2)}")
    build = self_rows(cd, "total_time_in_ms-unwind_build")
    if build:
        print(f"{'building them (helper)':34s} {build[-1][1]:.0f} ms over "
              "the run")
    print(f"{'walks by tables / whole':34s} {walks:.0f} / {whole:.0f} "
          f"({100 * whole / max(walks, 1):.1f} %)")
    print(f"{'frames by table / frame pointer':34s} "
          f"{final('derive-unwind_frames_table') or 0:.0f} / "
          f"{final('derive-unwind_frames_fp') or 0:.0f}")
    ends = ", ".join(f"{w} {final('derive-unwind_end_' + w) or 0:.0f}"
                     for w in UW_ENDS)
    print(f"{'walks ended early':34s} {ends}")
    files = ", ".join(f"{w} {final('derive-unwind_files_' + w) or 0:.0f}"
                      for w in UW_FILES)
    print(f"{'files without a table':34s} {files}")
    return True


def report(cd, a, sampler, maps, cpu, launcher, churn, t_start, t_end):
    figures = {}
    reads = self_rows(cd, "duration-read")
    flushes_at = flush_reads(cd)
    later = reads[1:]
    r_flush = [v for t, v in later if near_any(t, flushes_at)]
    r_plain = [v for t, v in later if not near_any(t, flushes_at)]
    flush_rows = [(t, v) for t, v in self_rows(cd, "duration-flush")
                  if near_any(t, flushes_at)]
    flush = [v for _, v in flush_rows]
    whole = [v + r[1] for t, v in flush_rows
             for r in [wctest.row_at(reads, t, 0.5)] if r]
    print("\n# read (duration-read: walk the threads and account them; "
          "the drains and the flush are not in it)")
    first = [v for _, v in reads[:1]]
    print(f"{'first read':34s} {fmt_range(first, 1e3, ' ms')}")
    print(f"{'later reads, no flush':34s} {fmt_range(r_plain, 1e3, ' ms')}")
    print(f"{'later reads at a flush':34s} {fmt_range(r_flush, 1e3, ' ms')}")
    figures["read"] = bool(reads)
    drain = self_rows(cd, "total_time_in_ms-drain")
    copied = self_rows(cd, "derive-stacks_copied")
    known = self_rows(cd, "derive-stacks_known")
    if len(drain) > 1:
        span = drain[-1][0] - drain[0][0]
        ms = drain[-1][1] - drain[0][1]
        print("\n# drain (total_time_in_ms-drain: emptying the kernel's stack "
              "tables, every second and at each flush)")
        print(f"{'time spent draining':34s} {ms:.0f} ms over {span:.0f} s "
              f"= {100 * ms / 1e3 / span:.2f} % of one CPU")
        if len(copied) > 1 and len(known) > 1:
            c = copied[-1][1] - copied[0][1]
            k = known[-1][1] - known[0][1]
            print(f"{'stacks copied out / found held':34s} {c / span:.0f} "
                  f"/ {k / span:.0f} a second ({100 * k / max(c + k, 1):.1f} "
                  f"% named without a copy)")
    figures["drain"] = len(drain) > 1
    print("\n# flush: symbolize, fold, write folded + SVG (duration-flush)")
    print(f"{'first flush (cold caches)':34s} "
          f"{fmt_range(flush[:1], 1e3, ' ms')}")
    print(f"{'later flushes (warm)':34s} {fmt_range(flush[1:], 1e3, ' ms')}")
    print(f"{'whole read callback at a flush':34s} "
          f"{fmt_range(whole, 1e3, ' ms')}  (read + flush)")
    figures["flush cold"] = bool(flush[:1])
    figures["flush warm"] = bool(flush[1:])

    print("\n# what the plugin tracked (per read; per flush for the last "
          "two)")
    for key in ("gauge-processes", "gauge-threads", "gauge-groups",
                "gauge-processes_waiting", "percent-table_fill"):
        v = [x for _, x in self_rows(cd, key)]
        print(f"{key:34s} {fmt_range(v, prec=0 if 'gauge' in key else 1)}")
        figures[key] = bool(v)
    # window_stacks: per window, the most held at a read (the flush read
    # then adds its own interval's stacks before writing).
    ws = self_rows(cd, "gauge-window_stacks")
    per_window, cur = [], 0.0
    for t, v in ws:
        if near_any(t, flushes_at):
            per_window.append(cur)
            cur = 0.0
        else:
            cur = max(cur, v)
    print(f"{'window_stacks, max per window':34s} "
          f"{fmt_range(per_window, prec=0)}")
    print(f"{'window_stacks, max of all reads':34s} "
          f"{max((v for _, v in ws), default=0):.0f}")
    lines = [v for t, v in self_rows(cd, "gauge-flush_lines")
             if near_any(t, flushes_at)]
    print(f"{'flush_lines (lines per file)':34s} {fmt_range(lines, prec=0)}")
    figures["window_stacks"] = bool(ws)
    figures["flush_lines"] = bool(lines)
    symb = [v for _, v in self_rows(cd, "bytes-symbol_cache")]
    print(f"{'bytes-symbol_cache':34s} "
          f"{fmt_range(symb, 1 / MiB, ' MiB')}")
    fr = self_rows(cd, "derive-frames")
    fn = self_rows(cd, "derive-frames_named")
    if fr and fn and fr[-1][1]:
        print(f"{'frames symbolized / named':34s} {fr[-1][1]:.0f} / "
              f"{fn[-1][1]:.0f} ({100 * fn[-1][1] / fr[-1][1]:.2f} %)")
    mh = self_rows(cd, "derive-flush_memo_hits")
    mm = self_rows(cd, "derive-flush_memo_misses")
    if mh and mm and mh[-1][1] + mm[-1][1]:
        print(f"{'flush memo hits / misses':34s} {mh[-1][1]:.0f} / "
              f"{mm[-1][1]:.0f} (symbolized: the misses)")
    paths, iter_s, picks, distinct = model(a)
    print(f"{'model: path picks per window':34s} {picks:.0f} over {paths} "
          f"paths -> ~{distinct:.0f} distinct call paths")
    where = ("each process its own addresses (--exec)" if a.exec else
             "the same addresses in every process")
    print(f"{'':34s} ({where}; held stacks are more: user and\n"
          f"{'':34s} kernel stacks apart, on-CPU samples, variants of one "
          "path)")

    print("\n# collectd's memory (VmRSS / VmHWM every 2 s) and CPU")
    rss = [r for _, r, _ in sampler.rows]
    hwm = [h for _, _, h in sampler.rows]
    if rss:
        print(f"{'VmRSS':34s} first {rss[0] / 1024:.1f} MiB, max "
              f"{max(rss) / 1024:.1f} MiB, final {rss[-1] / 1024:.1f} MiB "
              f"({len(rss)} samples)")
        print(f"{'VmHWM':34s} final {hwm[-1] / 1024:.1f} MiB")
    figures["rss"] = bool(rss)
    if cpu:
        print(f"{'collectd CPU time':34s} {cpu[0]:.2f} s over "
              f"{cpu[1]:.0f} s = {100 * cpu[0] / cpu[1]:.2f} % of one CPU")
    wl = launcher.summary() if launcher else {}
    if wl.get("wall_s"):
        print(f"{'workload CPU time (reaped workers)':34s} "
              f"{wl.get('cpu_s', 0):.1f} s over {wl['wall_s']:.0f} s = "
              f"{100 * wl.get('cpu_s', 0) / wl['wall_s']:.1f} % of one CPU "
              f"(forks {wl.get('forks', 0):.0f}, churned "
              f"{wl.get('churned', 0):.0f}, died {wl.get('died', 0):.0f})")

    print("\n# BPF maps held by collectd (bytes_memlock)" +
          (f", found via {maps[1]}" if maps else ""))
    total = 0
    task_value = None
    for m in sorted(maps[0] if maps else [], key=lambda m: m.get("id", 0)):
        mem = int(m.get("bytes_memlock", 0))
        total += mem
        if m.get("type") == "task_storage":
            task_value = m.get("bytes_value")
        print(f"  {m.get('name', '?'):16s} {m.get('type', '?'):16s} "
              f"max_entries {m.get('max_entries', 0):>8} value "
              f"{m.get('bytes_value', 0):>5} B  {mem / MiB:9.2f} MiB")
    print(f"  {'total':16s} {'':16s} {'':29s} {total / MiB:9.2f} MiB")
    threads = self_rows(cd, "gauge-threads")
    if task_value and threads:
        n = max(v for _, v in threads)
        print(f"  (task storage is not in bytes_memlock: {n:.0f} threads x "
              f"{task_value} B = {n * task_value / MiB:.1f} MiB of values, "
              f"plus the kernel's per-element overhead)")
    figures["bpf maps"] = total > 0

    figures["unwind"] = report_unwind(cd, a) or a.unwind != "auto"

    print("\n# waits under way at flushes (their part in the window "
          "charged to their stacks)")
    report_waits(cd)

    print("\n# drops and losses (counters over the whole run; 0 = "
          "everything fit)")
    offcpu = self_rows(cd, "derive-offcpu_stacks")
    if offcpu:
        print(f"{'offcpu_stacks (waits with a stack)':34s} "
              f"{offcpu[-1][1]:.0f}")
    missing = []
    for name in DROPS:
        rows = self_rows(cd, "derive-" + name)
        if not rows:
            missing.append(name)
            continue
        print(f"{'derive-' + name:34s} {rows[-1][1]:.0f}")
    figures["drop counters"] = not missing
    if missing:
        print(f"  (not dispatched: {', '.join(missing)})")

    if churn is not None:
        print(f"\n# churn: {a.churn_rate:g} worker processes replaced a "
              f"second; collectd's VmRSS (of it anonymous: the heap, not "
              f"mapped files) every {a.churn_sample:g} s")
        for t, kib, anon in churn:
            print(f"  {int(t) // 60:4d}:{int(t) % 60:02d}  "
                  f"{kib / 1024:8.1f} MiB  ({anon / 1024:.1f} anonymous)")
        mib = [(t, kib / 1024) for t, kib, _ in churn]
        anon = [(t, kib / 1024) for t, _, kib in churn]
        s_all = slope_per_hour(mib)
        s_late = slope_per_hour(mib[1:]) if len(mib) > 2 else None
        s_anon = slope_per_hour(anon[1:]) if len(anon) > 2 else None
        if s_anon is not None:
            print(f"{'anonymous, after the first sample':34s} "
                  f"{s_anon:+.2f} MiB/hour")
        if s_all is not None:
            print(f"{'slope, all samples':34s} {s_all:+.2f} MiB/hour")
        if s_late is not None:
            print(f"{'slope, after the first sample':34s} "
                  f"{s_late:+.2f} MiB/hour")
        if mib:
            print(f"{'first -> last':34s} {mib[0][1]:.1f} -> "
                  f"{mib[-1][1]:.1f} MiB")
        figures["churn RSS series"] = len(mib) >= 2 and s_all is not None
    return figures


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(
        description="scale: the plugin against many processes, threads "
        "and stacks (a benchmark: prints figures)")
    ap.add_argument("--procs", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=10,
                    help="threads per process (the main thread included)")
    ap.add_argument("--duration", type=float, default=180,
                    help="seconds measured after collectd's first read")
    ap.add_argument("--interval", type=float, default=10,
                    help="collectd's Interval")
    ap.add_argument("--flush", type=int, default=20,
                    help="the plugin's FlushInterval")
    ap.add_argument("--stack-storage", type=int, default=16384)
    ap.add_argument("--unwind", choices=("auto", "framepointer"),
                    default="auto", help="UserStackUnwinding")
    ap.add_argument("--plugin-conf", default="",
                    help="more lines for <Plugin wallclock>")
    ap.add_argument("--fanout", type=int, default=16)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--sleep-us", type=int, nargs=2, default=(2000, 20000))
    ap.add_argument("--spin-pct", type=int, default=10,
                    help="leaves that spin instead of sleeping, %%")
    ap.add_argument("--spin-us", type=int, default=200)
    ap.add_argument("--rest-ms", type=int, nargs=2, default=(1000, 3000))
    ap.add_argument("--names", type=int, default=8,
                    help="distinct process names (groups)")
    ap.add_argument("--exec", action="store_true",
                    help="workers exec themselves: own ASLR layout each")
    ap.add_argument("--churn-minutes", type=float, default=0,
                    help="run this long replacing processes; RSS slope")
    ap.add_argument("--churn-rate", type=float, default=5,
                    help="worker processes replaced per second")
    ap.add_argument("--churn-sample", type=float, default=60,
                    help="seconds between RSS samples of the churn series")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny and short, with churn: checks it runs")
    a = ap.parse_args()
    if a.smoke:
        a.procs, a.threads, a.interval, a.flush = 20, 2, 2, 6
        a.stack_storage, a.rest_ms = 16384, (200, 600)
        a.churn_minutes, a.churn_rate, a.churn_sample = 0.4, 2, 4
    churning = a.churn_minutes > 0
    run_s = a.churn_minutes * 60 if churning else a.duration

    if not plugin_ready():
        print(f"# {wctest.PLUGIN_SO} missing; waiting 60 s", flush=True)
        time.sleep(60)
    wctest.require_built()
    conf = (f"FlushInterval {a.flush}\nStackStorage {a.stack_storage}\n"
            f"UserStackUnwinding \"{a.unwind}\"\n" + a.plugin_conf)
    restore = []
    launcher = cd = sampler = None
    figures = {}
    try:
        raise_limits(a, restore)
        with wctest.Env("scale") as env:
            try:
                exe, cc_s = build_workload(env.root, a)
                print(f"# workload: {a.fanout}^{a.depth} = "
                      f"{a.fanout ** a.depth} call paths; built in "
                      f"{cc_s:.1f} s (gcc {' '.join(CFLAGS)})", flush=True)
                launcher = Launcher(exe, a, a.churn_rate if churning else 0)
                launcher.wait_ready()
                print(f"# workload: {launcher.procs} processes, "
                      f"{launcher.threads} threads ready in "
                      f"{launcher.start_s:.1f} s"
                      f"{', exec' if a.exec else ', forked'}", flush=True)
                print("# plugin: " + "; ".join(
                    x for x in conf.splitlines() if x.strip()) +
                    f"; collectd Interval {a.interval:g}", flush=True)
                cd, start_s = start_collectd(env.root, a, conf)
                print(f"# collectd up, first read done, in {start_s:.1f} s",
                      flush=True)
                sampler = RssSampler(cd.pid)
                t_start = time.time()
                cpu0 = cpu_seconds(cd.pid)
                churn, next_sample = ([] if churning else None), t_start
                next_note = t_start + 30
                while time.time() - t_start < run_s:
                    now = time.time()
                    if churn is not None and now >= next_sample:
                        s = sampler.sample()
                        if "VmRSS" in s:
                            churn.append((now - t_start, s["VmRSS"],
                                          s.get("RssAnon", 0)))
                        next_sample += a.churn_sample
                    if now >= next_note:
                        s = status_kib(cd.pid)
                        print(f"# {now - t_start:5.0f} s: collectd VmRSS "
                              f"{s.get('VmRSS', 0) / 1024:.1f} MiB, reads "
                              f"{len(self_rows(cd, 'duration-read'))}, "
                              f"flushes {len(flush_reads(cd))}", flush=True)
                        next_note += 60 if churning else 30
                    if cd.proc.poll() is not None:
                        raise RuntimeError("collectd exited:\n" +
                                           cd.log()[-2000:])
                    time.sleep(0.5)
                if churn is not None:
                    s = sampler.sample()
                    if "VmRSS" in s:
                        churn.append((time.time() - t_start, s["VmRSS"],
                                      s.get("RssAnon", 0)))
                maps = bpf_maps(cd.pid)
                cpu1 = cpu_seconds(cd.pid)
                t_end = time.time()
                cpu = ((cpu1 - cpu0, t_end - t_start)
                       if cpu0 is not None and cpu1 is not None else None)
                sampler.stop()
                cd.stop()
                launcher.stop()
                errors = cd.wallclock_errors(("error", "warning"))
                figures = report(cd, a, sampler, maps, cpu, launcher,
                                 churn, t_start, t_end)
                figures["workload ready"] = launcher.procs == a.procs
                if errors:
                    print("\n# plugin errors and warnings in collectd's "
                          "log:")
                    for line in errors[:10]:
                        print("  " + line)
            finally:
                if sampler:
                    sampler.stop()
                if cd:
                    cd.stop()
                if launcher:
                    launcher.stop()
    finally:
        for path, value in restore:
            with open(path, "w") as f:
                f.write(value)
    if a.smoke:
        bad = 0
        for name, ok in figures.items():
            print(("PASS" if ok else "FAIL") +
                  f": scale smoke: {name} measured")
            bad += not ok
        if not figures:
            print("FAIL: scale smoke: no figures")
            return 1
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
