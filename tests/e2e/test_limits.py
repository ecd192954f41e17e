#!/usr/bin/env python3
"""Bounds that cost something are said.  StackStorage at its least (1,024)
under 1,200 processes that each sleep 10 times a second: the kernel's
table of (process, stack) weights fills between two drains.  What it
dropped is counted, said once a minute at most naming the option to
raise, and so is every other limit the run hit; collectd keeps reading
and exits cleanly.
"""
import subprocess
import time

from wctest import (WORKLOAD, Env, case, done, require_built, wait_until)

PROCS = 1200

require_built()
with Env("limits") as env:
    cd = env.collectd(interval=1,
                      plugin_conf="StackStorage 1024\n  FlushInterval 3")
    cd.start()
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
    case("reads go on (longest gap under 3 s)",
         len(reads) >= 5 and max(gaps) < 3, f"{len(reads)} reads, gaps "
         f"{max(gaps, default=0):.1f} s")
    for p in crowd:
        p.kill()
        p.wait()
    case("collectd exits cleanly", cd.stop() == 0)
done()
