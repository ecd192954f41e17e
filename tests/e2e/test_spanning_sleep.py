#!/usr/bin/env python3
"""A sleep that spans many reads is charged in the intervals it passes in.

One thread sleeps in a single nanosleep of ~9 s while the main thread
waits for it in pthread_join, so the kernel sees no scheduler event for
either during the sleep.  With Interval 1, every read interval that lies
wholly inside the sleep must show sleep time within 5 % of 2 threads x
the interval (measured between the csv timestamps of the two reads), and
no interval, from start to end, may show a lump of more than twice what 2
threads can spend in it.
"""
from wctest import (Env, case, done, near, pct, require_built, row_at,
                    wait_until)

SECONDS = 9
THREADS = 2
TOL = 0.05

require_built()
with Env("spanning") as env:
    cd = env.collectd(interval=1)
    cd.start()
    w = env.workload("wcw_span", "--sleep", "1", "--seconds", str(SECONDS))
    w.wait()
    end = w.started + SECONDS
    # Wait for the read that sees the exits, plus one.
    wait_until(lambda: cd.csv("wcw_span", "wallclock_us", "sleep")
               and cd.csv("wcw_span", "wallclock_us", "sleep")[-1][0]
               > end + 2, 6)
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")

    sleep = cd.csv("wcw_span", "wallclock_us", "sleep")
    oncpu = cd.csv("wcw_span", "wallclock_us", "oncpu")
    offcpu = cd.csv("wcw_span", "wallclock_us", "offcpu")
    threads = cd.csv("wcw_span", "wallclock_threads")
    slots = {k: cd.csv("wcw_span", "wallclock_us", k)
             for k in ("oncpu", "runqueue", "sleep", "blocked", "steal")}

    def where(t0, t1):
        """Every slot's growth between the reads at t0 and t1: where time
        that is not sleep went, if a case fails."""
        out = []
        for k, rows in slots.items():
            a, b = row_at(rows, t0), row_at(rows, t1)
            if a and b:
                out.append(f"{k} {b[1] - a[1]:.0f}")
        return ", ".join(out) + " us"
    inside = [(a, b) for a, b in zip(sleep, sleep[1:])
              if a[0] > w.started + 0.2 and b[0] < end - 0.2]
    case("enough intervals inside the sleep", len(inside) >= SECONDS - 3,
         f"{len(inside)} intervals: {sleep}")
    worst = 0.0
    for (t0, v0), (t1, v1) in inside:
        want = THREADS * (t1 - t0) * 1e6
        th = row_at(threads, t1)
        worst = max(worst, abs(pct(v1 - v0, want)))
        case(f"[{t0 - w.started:+.1f}s,{t1 - w.started:+.1f}s] sleep "
             f"within 5% of {THREADS} x {t1 - t0:.3f} s",
             near(v1 - v0, want, TOL) and th and th[1] == THREADS,
             f"sleep {v1 - v0:.0f} us, want {want:.0f} us "
             f"({pct(v1 - v0, want):+.2f}%), threads {th}; "
             f"{where(t0, t1)}")
    print(f"# worst error: {worst:.2f}%")

    lumps = []
    for rows, what in ((sleep, "sleep"), (offcpu, "offcpu"),
                       (oncpu, "oncpu")):
        for (t0, v0), (t1, v1) in zip(rows, rows[1:]):
            if v1 - v0 > 2 * THREADS * (t1 - t0) * 1e6:
                lumps.append(f"{what} +{v1 - v0:.0f} us in "
                             f"{t1 - t0:.3f} s at {t1 - w.started:+.1f}s")
    case("no interval shows a lump", not lumps, "; ".join(lumps))
    total, want = sleep[-1][1], THREADS * SECONDS * 1e6
    case("the whole sleep is charged once (total within 5% of "
         f"{THREADS} x {SECONDS} s)", near(total, want, TOL),
         f"total sleep {total:.0f} us ({pct(total, want):+.2f}%); "
         f"over the whole run: {where(sleep[0][0], sleep[-1][0])}")
done()
