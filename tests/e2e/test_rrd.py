#!/usr/bin/env python3
"""The values also work through collectd's rrdtool and unixsock plugins.

Three spinners run as wcw_rrd under a collectd with the csv, rrdtool and
unixsock writers (Interval 1).  The group's RRD files exist; for each
one-second step of the busy period, the rate `rrdtool fetch` reports
(microseconds per second) matches the rate the csv counters give over the
same step within 5 % (placing the csv rows where the rrdtool plugin does:
at the dispatch time rounded to the second, with the updates rrdtool
refused, as its log says, and what went with them); the on-CPU rate is no more
than three spinners can get on this machine's CPUs, and what the kernel's
schedstat says they got between the same reads (what other work took
meanwhile, measured in /proc/stat, is printed); and `collectdctl getval` answers for the group
over the unix socket with a rate.
"""
import math
import os
import re
import subprocess
import time

from wctest import (HOST, Env, SchedSampler, case, cpu_busy_s, done, near,
                    pct, require_built, task_schedstat)

SECONDS = 10
SPIN = 3
TOL = 0.05
SLOTS = ("oncpu", "offcpu", "runqueue", "sleep")
# values queued for one file while the rrdtool plugin's writer is behind
MAX_LOST = 5
# ways of losing them tried before the RRD is called unexplained
MAX_TRIES = 20000
REFUSED = re.compile(r"rrd_update_r \((?P<path>[^)]*)\) failed: .*illegal "
                     r"attempt to update using time (?P<at>\d+) when last "
                     r"update time is (?P<last>\d+)")

require_built()


def rrd_updates(rows, lost=()):
    """The rrdtool plugin stamps each update with the dispatch time rounded
    to the whole second (CDTIME_T_TO_TIME_T), and rrdtool refuses an update
    no later than the last one.  The plugin's writer thread hands rrdtool
    all the values queued for a file at once, and rrdtool stops at the
    first it refuses: lost[k] is how many rows after the k-th refusal went
    with it (none unless the writer fell behind).  The csv rows the RRD
    file received, as (second it was filed at, time the plugin read the
    kernel, value), and the refusals, as (second, last second filed)."""
    out, refused, skip = [], [], 0
    for t, v in rows:
        tr = math.floor(t + 0.5)
        if skip:
            skip -= 1
        elif not out or tr > out[-1][0]:
            out.append((tr, t, v))
        else:
            refused.append((tr, out[-1][0]))
            skip = lost[len(refused) - 1] if len(refused) <= len(lost) else 0
    return out, refused


def refusals(log, path):
    """The updates of one file rrdtool refused, as collectd logged them."""
    return [(int(m["at"]), int(m["last"])) for m in REFUSED.finditer(log)
            if os.path.normpath(m["path"]) == os.path.normpath(path)]


def differ(ups, known, busy, upto=None):
    """Known steps (up to the second upto) whose RRD rate differs from the
    csv's through the updates ups."""
    seen = [(tr, v) for tr, _, v in ups]
    bad = []
    for t, v in known:
        if upto is not None and t > upto:
            break
        want = csv_rate(seen, t - 1, t)
        if not (near(v, want, TOL) or (abs(v - want) < 0.01 * busy
                                       and want < 0.05 * busy)):
            bad.append(f"{t}: rrd {v:.0f}, csv {want:.0f} "
                       f"({pct(v, want):+.2f}%)")
    return bad


def explain(rows, known, logged, busy, lost=(), tries=None):
    """The updates the RRD file holds: the rows as the plugin filed them,
    less those rrdtool refused, each of them logged, and what went with
    them (at each refusal the fewest rows that make the steps up to the
    next match).  Returns (updates, rows lost with refusals) or None."""
    tries = tries if tries is not None else [MAX_TRIES]
    tries[0] -= 1
    if tries[0] < 0:
        return None
    ups, refused = rrd_updates(rows, lost)
    k = len(lost)
    if k == len(logged):
        return (ups, sum(lost)) if (refused == logged and
                                    not differ(ups, known, busy)) else None
    # the k-th refusal and the updates before it do not depend on what
    # went with it
    if refused[:k + 1] != logged[:k + 1] or differ(ups, known, busy,
                                                   logged[k][1]):
        return None
    for n in range(MAX_LOST + 1):
        found = explain(rows, known, logged, busy, lost + (n,), tries)
        if found:
            return found
    return None


def csv_rate(rows, t0, t1):
    """Mean rate over (t0, t1] of a counter sampled at rows, taking each
    rate as constant between two samples (what rrdtool does with DERIVE)."""
    total = 0.0
    for (ta, va), (tb, vb) in zip(rows, rows[1:]):
        lo, hi = max(ta, t0), min(tb, t1)
        if hi > lo:
            total += (vb - va) / (tb - ta) * (hi - lo)
    return total / (t1 - t0)


def fetch(path, start, end):
    """[(step end, rate or None)] from the finest AVERAGE archive."""
    out = subprocess.run(["rrdtool", "fetch", path, "AVERAGE", "-r", "1",
                          "-s", str(int(start)), "-e", str(int(end))],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        if ":" not in line:
            continue
        t, v = line.split(":", 1)
        v = v.strip()
        rows.append((int(t), None if v.lower().startswith(("nan", "-nan"))
                     else float(v)))
    return rows


with Env("rrd") as env:
    cd = env.collectd(interval=1, writers=("csv", "rrdtool", "unixsock"))
    cd.start()
    w = env.workload("wcw_rrd", "--spin", str(SPIN), "--seconds",
                     str(SECONDS))
    ss = SchedSampler([w.pid])
    cd.wait_rows("wcw_rrd", "wallclock_us", "oncpu", 4, 10)
    r = subprocess.run(["collectdctl", "-s", cd.sock, "getval",
                        f"{HOST}/wallclock-wcw_rrd/wallclock_us-oncpu"],
                       capture_output=True, text=True)
    got = [ln.split("=", 1)[1] for ln in r.stdout.splitlines()
           if ln.startswith("value=")]
    try:
        getval = float(got[0]) if got else None
    except ValueError:
        getval = None
    # GETVAL answers a DERIVE with its rate: on-CPU us per second.
    cap = 1.025 * min(SPIN, os.cpu_count()) * 1e6
    case("collectdctl getval answers for wallclock-wcw_rrd/"
         "wallclock_us-oncpu with a rate (0 to %.3g us/s)" % cap,
         r.returncode == 0 and getval is not None and 0 < getval <= cap,
         f"rc {r.returncode}: {r.stdout!r} {r.stderr!r}")
    # How much of the machine other work took meanwhile (tests and builds
    # may run side by side), for the record.
    t_a = w.started + 1
    time.sleep(max(0.0, t_a - time.time()))
    busy_a, on_a = cpu_busy_s(), task_schedstat(w.pid)[0]
    t_b = w.started + SECONDS - 1
    time.sleep(max(0.0, t_b - time.time()))
    busy_b, on_b = cpu_busy_s(), task_schedstat(w.pid)[0]
    others = max(0.0, (busy_b - busy_a) - (on_b - on_a) / 1e9) / (t_b - t_a)
    w.wait()
    ss.stop()
    end = w.started + SECONDS
    rc = cd.stop()  # the rrdtool plugin writes what it cached
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")
    log = cd.log()

    ncpu = os.cpu_count()
    busy = min(SPIN, ncpu) * 1e6
    print(f"# other work took {others:.2f} of {ncpu} CPUs")
    rrd_dir = os.path.join(cd.rrd_dir, HOST, "wallclock-wcw_rrd")
    want = {f"wallclock_us-{k}.rrd" for k in
            ("oncpu", "offcpu", "runqueue", "sleep", "blocked", "steal")}
    want |= {"wallclock_samples.rrd", "wallclock_threads.rrd"}
    have = set(os.listdir(rrd_dir)) if os.path.isdir(rrd_dir) else set()
    case("the group has one RRD file per type and instance", have == want,
         f"missing {sorted(want - have)}, unexpected {sorted(have - want)}")
    for slot in SLOTS:
        path = os.path.join(rrd_dir, f"wallclock_us-{slot}.rrd")
        if not case(f"{slot}: {os.path.relpath(path, cd.rrd_dir)} exists",
                    os.path.exists(path),
                    str(os.listdir(rrd_dir) if os.path.isdir(rrd_dir)
                        else "no " + rrd_dir)):
            continue
        rows = cd.csv("wcw_rrd", "wallclock_us", slot)
        # Steps wholly inside the busy period and inside the csv data.
        lo = max(w.started + 0.5, rows[0][0])
        hi = min(end - 0.5, rows[-1][0])
        steps = [(t, v) for t, v in fetch(path, lo, hi)
                 if t - 1 >= lo and t <= hi]
        known = [(t, v) for t, v in steps if v is not None]
        case(f"{slot}: several known RRD rows over the busy period",
             len(known) >= SECONDS - 4, f"{steps}")
        logged = refusals(log, path)
        found = explain(rows, known, logged, busy)
        if found:
            ups, lost = found
            if logged:
                print(f"# {slot}: rrdtool refused {len(logged)} updates "
                      f"(the log), {lost} more rows went with them")
            bad = []
        else:
            ups, refused = rrd_updates(rows)
            bad = differ(ups, known, busy) or [
                f"refused by the rows {refused}, by the log {logged}"]
        case(f"{slot}: RRD rates match the csv counters within 5%",
             known and not bad, "; ".join(bad) or "no rows")
        if slot == "oncpu" and known:
            t0, t1 = known[0][0] - 1, known[-1][0]
            mean = sum(v for _, v in known) / len(known)
            # what the spinners got of the CPUs is the scheduler's
            # business (two hogs in sessions of their own took all but
            # 0.6 of 2 CPUs once): the kernel's count below is the truth
            # the counters at the instants they were read: the RRD files
            # each at a rounded second, so a step of it may hold more or
            # less than a second's worth
            inside = [(t, v) for t, v in rows if lo <= t <= hi]
            exact = ((inside[-1][1] - inside[0][1]) /
                     (inside[-1][0] - inside[0][0])
                     if len(inside) > 1 else 0.0)
            case(f"oncpu rate is at most what {SPIN} spinners can get on "
                 f"{ncpu} CPUs (0 to {1.025 * busy:.3g} us/s)",
                 0 < exact <= 1.025 * busy,
                 f"{exact:.0f} us/s over {len(inside)} reads")
            # The RRD's steps from one update to another add up to the
            # counter's change between the two reads, filed at whole
            # seconds: the kernel's count over the same two reads, over
            # the same filed seconds, is what they must match.  (Compared
            # at the filed seconds instead, a busy host's changing share
            # shifts up to half a second of it at each end.)
            read = {tr: t for tr, t, _ in ups}
            ends = [tr for tr in sorted(read) if t0 <= tr <= t1]
            steps_in = {t for t, _ in known}
            if len(ends) >= 2 and all(t in steps_in for t in
                                      range(ends[0] + 1, ends[-1] + 1)):
                t0, t1 = ends[0], ends[-1]
                mean = sum(v for t, v in known if t0 < t <= t1) / (t1 - t0)
            k0 = ss.at(w.pid, read.get(t0, t0))
            k1 = ss.at(w.pid, read.get(t1, t1))
            if case("schedstat covers the RRD rows", k0 and k1,
                    f"{t0}..{t1}"):
                kernel = (k1[0] - k0[0]) / 1e3 / (t1 - t0)
                print(f"# oncpu from {t0} to {t1}: rrd {mean:.0f} us/s, "
                      f"kernel {kernel:.0f} us/s ({pct(mean, kernel):+.2f}%)")
                case("oncpu rate within 5% of the kernel's schedstat",
                     near(mean, kernel, TOL),
                     f"rrd {mean:.0f} us/s, kernel {kernel:.0f} us/s "
                     f"({pct(mean, kernel):+.2f}%) from {t0} to {t1}")
        if slot == "runqueue" and known and SPIN > ncpu:
            mean = sum(v for _, v in known) / len(known)
            case("runqueue rate shows the spinners waiting for a CPU",
                 mean > 0.15 * (SPIN - ncpu) * 1e6, f"{mean:.0f} us/s")
done()
