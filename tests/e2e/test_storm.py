#!/usr/bin/env python3
"""An exit storm with the defaults (Interval 2): 10,000 threads a second
for 15 s, the rate at which a review found half the final records dropped
(the exit ring held a whole interval's exits and filled).

The exit ring is drained ten times a second now, between reads: no final
record is dropped, every thread made is seen exiting, the ring keeps room
to spare, every read stays quick, collectd's RSS stays put, and a
long-lived spinner measured at the same time stays within 3 % of its
schedstat.
"""
import os
import subprocess
import time

from wctest import (Collectd, Env, SchedSampler, case, counter_window, done,
                    near, pct, require_built)

RATE = 10000
SECONDS = 15
TOL = 0.03

require_built()
with Env("storm") as env:
    cd = env.collectd(interval=2)
    cd.start()
    spin = env.workload("wcw_stspin", "--spin", "1", "--seconds",
                        str(SECONDS + 8))
    cd.wait_rows("", "derive", "exits", 2, 10)

    def rss_kib():
        with open(f"/proc/{cd.pid}/status") as f:
            return int(f.read().split("VmRSS:")[1].split()[0])

    def last(type_, tinst):
        rows = cd.csv("", type_, tinst)
        return rows[-1][1] if rows else 0

    ss = SchedSampler([spin.pid])
    rss0 = rss_kib()
    exits0, dropped0 = last("derive", "exits"), last("derive",
                                                       "exits_dropped")
    # two makers, ahead of other work on one CPU: each thread made waits
    # for its exit, and one woken on the other CPU behind a hog makes the
    # rate a matter of luck (1,100-6,900 a second unpinned beside two hogs
    # on one VM, 10,000 pinned); the storm is under test here, not the
    # scheduler.  collectd keeps its own priority, on any CPU.
    storm = env.workload("wcw_storm", "--churn", str(RATE), "--churn-us",
                         "0", "--churners", "2", "--seconds", str(SECONDS),
                         nice=-10, cpu=0)
    storm.wait()
    # two more reads take the last exits
    n = len(cd.csv("", "derive", "exits"))
    cd.wait_rows("", "derive", "exits", n + 2, 10)
    rss1 = rss_kib()
    spin.wait()
    ss.stop()
    exits = last("derive", "exits") - exits0
    dropped = last("derive", "exits_dropped") - dropped0
    made = storm.report()["churned"]
    fill = max(r[1] for r in cd.csv("", "percent", "exit_ring_fill"))
    reads = [r[1] for r in cd.csv("", "duration", "read")]
    print(f"# storm: {made} threads in {SECONDS} s ({made / SECONDS:.0f}/s),"
          f" {exits:.0f} exits seen, {dropped:.0f} dropped, ring at most "
          f"{fill:.0f}% full, reads up to {max(reads) * 1e3:.0f} ms, RSS "
          f"{rss0 / 1024:.1f} -> {rss1 / 1024:.1f} MiB")
    # the premise, not the plugin: a storm the old exit ring could not
    # hold (it passed 4,400 exits a second at most: 264,023 of 576,923
    # in the review's minute).
    case("the storm ran at 6,000 threads a second or more",
         made >= 0.6 * RATE * SECONDS, f"{made}")
    case("no final record dropped", dropped == 0, f"{dropped:.0f}")
    case("every thread made is seen exiting", exits >= made,
         f"{exits:.0f} exits, {made} threads")
    # a storm slowed by a busy CPU catches up in bursts of several times
    # its rate: room to spare for those
    case("the exit ring stays under 90 % full", fill < 90, f"{fill:.0f}%")
    case("every read takes under half a second", max(reads) < 0.5,
         f"{max(reads):.3f} s")
    case("collectd's RSS grows by under 4 MiB", rss1 - rss0 < 4096,
         f"{rss0} -> {rss1} KiB")

    # the spinner, over the reads dispatched while the storm ran
    on = cd.csv("wcw_stspin", "wallclock_us", "oncpu")
    ts = [t for t, _ in on if storm.started + 1 < t < storm.started +
          SECONDS]
    if len(ts) >= 2:
        got = counter_window(on, ts[0], ts[-1])
        a, b = ss.at(spin.pid, got[1]), ss.at(spin.pid, got[2])
        want = (b[0] - a[0]) / 1e3 if a and b else None
        case(f"the spinner's on-CPU time during the storm is within "
             f"{TOL:.0%} of schedstat", want and near(got[0], want, TOL),
             f"{got[0]:.0f} us vs {want} ({pct(got[0], want or 1)})")
    else:
        case("reads were dispatched during the storm", False, str(on))
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")

    # Limits hit are said, once a minute at most, with what to raise: an
    # exit ring far too small for the storm, and MaxThreads below what
    # the host runs.
    root = os.path.join(env.root, "limits")
    os.mkdir(root, 0o755)
    cd = Collectd(root, 2, "ExitBufferKiB 64\n  MaxThreads 1024")
    cd.start()
    began = time.time()
    crowd = [subprocess.Popen(["sleep", "14"]) for _ in range(1100)]
    # made as the first storm: unpinned, beside the hogs, it could fall
    # short of what the ring holds (5,120 exits a second drained ten times)
    storm = env.workload("wcw_storm2", "--churn", str(RATE), "--churn-us",
                         "0", "--churners", "2", "--seconds", "6",
                         nice=-10, cpu=0)
    storm.wait()
    n = len(cd.csv("", "derive", "exits"))
    cd.wait_rows("", "derive", "exits", n + 2, 10)
    dropped = last("derive", "exits_dropped")
    lost_us = last("derive", "exits_dropped_us")
    untracked = last("derive", "threads_untracked")
    said = [ln for ln in cd.log().splitlines() if "wallclock" in ln]
    drop_lines = [ln for ln in said if "exited threads dropped" in ln]
    max_lines = [ln for ln in said if "MaxThreads was reached" in ln]
    # once a minute at most: a second line only if this part ran over a
    # minute (it can, beside CPU hogs)
    minutes = 1 + int((time.time() - began) // 60)

    def once_a_minute(lines, option):
        stamps = [time.mktime(time.strptime(ln[1:20], "%Y-%m-%d %H:%M:%S"))
                  for ln in lines]
        return (1 <= len(lines) <= minutes and
                all(option in ln and "warn" in ln for ln in lines) and
                all(b - a >= 59 for a, b in zip(stamps, stamps[1:])))
    case("drops are counted", dropped > 0, f"{dropped}")
    # each took along at most its time since the last walk (an interval)
    # or, born since, its life (shorter)
    print(f"# limits: {storm.report()['churned']} threads in 6 s, "
          f"{dropped:.0f} final records dropped, taking "
          f"{lost_us / 1e6:.3f} s along ({lost_us / max(dropped, 1):.0f} "
          "us each)")
    case("the time they took along is counted, at most an interval each",
         0 < lost_us <= dropped * 2e6, f"{lost_us} us, {dropped} dropped")
    case("and said, once a minute at most, naming ExitBufferKiB",
         once_a_minute(drop_lines, "ExitBufferKiB"), "\n".join(drop_lines))
    case("threads beyond MaxThreads are counted", untracked > 0,
         f"{untracked}")
    case("and said, once a minute at most, naming MaxThreads",
         once_a_minute(max_lines, "MaxThreads"), "\n".join(max_lines))
    unsaid = cd.limits_unsaid()
    case("every other limit hit is said too", not unsaid, str(unsaid))
    for p in crowd:
        p.kill()
        p.wait()
    case("collectd exits cleanly", cd.stop() == 0)
done()
