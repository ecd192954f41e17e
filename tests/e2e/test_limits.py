#!/usr/bin/env python3
"""Bounds that cost something are said.  StackStorage at its least (1,024)
under 1,200 processes that each sleep 10 times a second: the kernel's
table of (process, stack) weights fills between two drains.  What it
dropped is counted, said once a minute at most naming the option to
raise, and so is every other limit the run hit; collectd keeps reading
and exits cleanly.  Its longest gap between reads is explained (what
collectd ran and waited for a CPU over it, what the read and the flush
after it took, the hypervisor's steal), so that a gap says whether the
plugin held collectd up or collectd was not run.
"""
import subprocess
import time

from wctest import (WORKLOAD, Env, SchedSampler, case, done, require_built,
                    row_at, stolen_s, wait_until)

PROCS = 1200
GAP = 3  # seconds between reads at most, at Interval 1


def longest_gap(cd, sampler, gap, a, b, stolen):
    """What collectd did in its longest gap between reads: run, waited
    for a CPU (all its threads), or neither (blocked, or the VM paused),
    so that a failure says which side it is on."""
    at_a = sampler.at(cd.pid, a)
    at_b = sampler.at(cd.pid, b)
    both = at_a and at_b
    ran = f"{(at_b[0] - at_a[0]) / 1e9:.2f}" if both else "?"
    queued = f"{(at_b[1] - at_a[1]) / 1e9:.2f}" if both else "?"
    read = row_at(cd.csv("", "duration", "read"), b)
    flush = row_at(cd.csv("", "duration", "flush"), b)
    read = f"{read[1]:.3f}" if read else "?"
    flush = f"{flush[1]:.3f}" if flush else "?"
    print(f"# longest gap {gap:.2f} s: collectd ran {ran} s and waited "
          f"{queued} s for a CPU (its threads summed); the read after it "
          f"took {read} s, its flush {flush} s; the VM lost {stolen:.2f} s "
          f"to steal over the test")
    if gap < GAP:
        return
    # collectd's own "read-function ... took" is a warning naming us
    for ln in cd.wallclock_errors(levels=("error", "warning")):
        print(f"# log: {ln}")


require_built()
with Env("limits") as env:
    cd = env.collectd(interval=1,
                      plugin_conf="StackStorage 1024\n  FlushInterval 3")
    cd.start()
    sampler = SchedSampler([cd.pid], period=0.1)
    steal0 = stolen_s()
    began = time.time()
    # each process leaves a weight in every drain, which is what fills
    # the table; niced, so that the crowd's start (1,200 execs beside the
    # hogs) does not starve collectd, which is not under test here
    crowd = [subprocess.Popen(["nice", "-n", "10", WORKLOAD, "--sleep", "1",
                               "--sleep-ms", "100", "--seconds", "20"],
                              stdout=subprocess.DEVNULL)
             for _ in range(PROCS)]

    def full():
        return cd.last("", "derive", "stack_counts_full")
    hit = wait_until(lambda: full() > 0, 30, 0.5)
    n = len(cd.csv("", "derive", "stack_counts_full"))
    cd.wait_rows("", "derive", "stack_counts_full", n + 4, 15)
    print(f"# limits: {PROCS} sleeping processes, StackStorage 1024: "
          f"{full():.0f} weights dropped")
    case("weights that found the kernel's table full are counted", hit,
         str(full()))
    said = [ln for ln in cd.log().splitlines()
            if "stack weights dropped" in ln]
    minutes = 1 + int((time.time() - began) // 60)
    case("and said, once a minute at most, naming StackStorage",
         1 <= len(said) <= minutes and
         all("StackStorage" in ln and "warn" in ln for ln in said),
         "\n".join(said))
    unsaid = cd.limits_unsaid()
    case("every limit hit is said", not unsaid, str(unsaid))
    reads = [t for t, _ in cd.csv("", "derive", "exits") if t >= began]
    gaps = [b - a for a, b in zip(reads, reads[1:])]
    if gaps:
        longest_gap(cd, sampler, *max(zip(gaps, reads, reads[1:])),
                    stolen_s() - steal0)
    case(f"reads go on (longest gap under {GAP} s)",
         len(reads) >= 5 and max(gaps) < GAP, f"{len(reads)} reads, gaps "
         f"{max(gaps, default=0):.1f} s")
    for p in crowd:
        p.kill()
        p.wait()
    case("collectd exits cleanly", cd.stop() == 0)
done()
