#!/usr/bin/env python3
"""A nap stays sleep when the thread is moved to another CPU as it naps.

Where the kernel delays dequeues (6.12 and later), a thread that goes to
sleep just after running ahead of a spinner on its CPU stays queued a
while; if it is moved to another CPU meanwhile, the kernel stamps it as
queued and, when it wakes, counts its whole nap as run queue time in its
schedstat.  The workload (--moved) naps until that happened STALE times
(a third of its naps on a quiet host, fewer beside busy CPUs) and
reports, from its own schedstat, how many naps and how many nanoseconds
the kernel counted so.  The group's run queue time must be
what the kernel says less those naps, but for the real waits for a CPU
that followed their wake-ups (how late each ended); its sleep must hold
the naps.
"""
import time

from wctest import (Env, case, done, kernel_delays_dequeue, near, pct,
                    require_built, skip, wait_until)

STALE = 5
NAP_S = 0.2
# The real wait for a CPU after a miscounted nap's wake-up stays in the
# run queue's count, and is added back; what is left is timer slack and
# the instants around the nap.  A nap left miscounted is 200 ms.
SLACK_US = 30000

require_built()
if not kernel_delays_dequeue():
    skip("moved naps", "this kernel does not delay dequeues (before 6.12):"
         " it leaves no stale queue stamp to mend")
    done()
with Env("moved") as env:
    cd = env.collectd(interval=1)
    cd.start()
    w = env.workload("wcw_moved", "--moved", str(STALE), "--seconds", "0")
    w.wait()
    end = time.time()
    wait_until(lambda: cd.csv("wcw_moved", "wallclock_us", "runqueue")
               and cd.csv("wcw_moved", "wallclock_us", "runqueue")[-1][0]
               > end + 2, 10)
    stale_counted = cd.csv("", "derive", "runq_stamps_stale")
    unmended = cd.csv("", "derive", "runq_stale_unmended")
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")

    rep = w.report()
    naps, stale = rep["moved_naps"], rep["moved_stale"]
    stale_ns, late_ns = rep["moved_stale_ns"], rep["moved_stale_late_ns"]
    kernel_rq_us = sum(t[3] for t in rep["threads"]) / 1e3
    want = kernel_rq_us - (stale_ns - late_ns) / 1e3
    case("the kernel counted some naps as run queue time (the premise)",
         stale > 0, f"{stale} of {naps} naps, {stale_ns / 1e6:.1f} ms")
    rq = cd.csv("wcw_moved", "wallclock_us", "runqueue")
    sleep = cd.csv("wcw_moved", "wallclock_us", "sleep")
    got = rq[-1][1] if rq else 0.0
    case("run queue time is the kernel's less the miscounted naps",
         want - SLACK_US <= got <= want + SLACK_US,
         f"ours {got:.0f} us; the kernel's {kernel_rq_us:.0f} us, of it "
         f"{stale_ns / 1e3:.0f} us in {stale} naps, which ended "
         f"{late_ns / 1e3:.0f} us late in all: want {want:.0f} us "
         f"(+-{SLACK_US} us)")
    # the sleeper's naps; the main thread's join and the mover's reads,
    # what their lives leave besides run and run queue time
    others_us = sum(t[4] - t[2] - t[3] for t in rep["threads"]
                    if t[0] in ("main", "mover")) / 1e3
    want_sleep = naps * NAP_S * 1e6 + others_us
    slept = sleep[-1][1] if sleep else 0.0
    case("sleep holds the naps and the others' waits (within 5%)",
         near(slept, want_sleep, 0.05),
         f"sleep {slept:.0f} us, want {want_sleep:.0f} us "
         f"({pct(slept, want_sleep):+.1f}%)")
    counted = stale_counted[-1][1] if stale_counted else 0
    case("the self metric counts the stale stamps",
         counted >= stale, f"runq_stamps_stale {counted}, naps {stale}")
    print(f"# {stale} of {naps} naps miscounted by the kernel "
          f"({stale_ns / 1e6:.0f} ms); ours {got / 1e3:.1f} ms of run queue,"
          f" the kernel's less those {want / 1e3:.1f} ms; host-wide "
          f"{unmended[-1][1] if unmended else 0:.0f} stamps not mended")
done()
