#!/usr/bin/env python3
"""Waits still under way at a flush are charged to where they wait.

A real collectd (Interval 1, FlushInterval 2, MinBlockMicroseconds 1000)
and two workloads whose threads each wait in one call for the whole run:
a read on a pipe (wait_in_read), a condition variable (wait_on_cond), a
nanosleep (sleep_a_while) and the main thread's clock_nanosleep.

- wcw_wait starts after collectd: in every file whose window lies inside
  its waits, each waiter's time is under its own function and the kernel
  frames of its wait (at least 95 % of the window, at most 105 %);
- wcw_pre started before collectd (its threads were adopted by the first
  walk, so no user stack was taken as their waits began): in every file
  while it waits, the first too, its pipe reader's time is under
  pipe_read_[k], its condition waiter's under the futex wait's kernel
  frames and its main thread's under hrtimer_nanosleep_[k], the user
  part labelled "[user stack not taken]";
- every file still adds up exactly to the metrics, per group and kind;
- `wallclock record` does the same for its single file: a workload that
  starts waiting after the recording began has each waiter's time (at
  least 95 % of a thread's share of the group's sleep) under its own
  function.
"""
import os
import subprocess

from wctest import (BUILD, Env, case, done, folded_files, folded_lines,
                    flush_stamps, folded_time, require_built,
                    totals_against_metrics, wait_until)

FLUSH = 2
SECONDS = 11
GROUP = "wcw_wait"
PRE = "wcw_pre"
SLEEP = "[off-cpu sleep]"
# each waiter: its function, and part of the name of a kernel function
# its wait passes through (pipe_read is anon_pipe_read in 6.18)
WAITERS = {"wait_in_read": "pipe_read",
           "wait_on_cond": "futex_wait",
           "sleep_a_while": "hrtimer_nanosleep"}


def under(lines, group, fn, kpart):
    """Sleep of group in lines under fn (any frame; "" for any) and a
    kernel frame whose name has kpart."""
    return sum(v for fr, v in lines
               if fr[0] == group and fr[1] == SLEEP and
               (not fn or fn in fr) and
               any(f.endswith("_[k]") and kpart in f for f in fr[2:]))


require_built()
with Env("waits") as env:
    pre = env.workload(PRE, "--waiters", "1", "--seconds", str(SECONDS + 8))
    cd = env.collectd(interval=1, plugin_conf=f"FlushInterval {FLUSH}\n"
                      "MinBlockMicroseconds 1000\nTopStacks 100000\n")
    cd.start()
    w = env.workload(GROUP, "--waiters", "1", "--sleep", "1", "--sleep-ms",
                     "0", "--seconds", str(SECONDS))
    begun, end = w.started, w.started + SECONDS
    w.wait()
    wait_until(lambda: any(folded_time(p) > end + FLUSH
                           for p in folded_files(cd.spool)), 3 * FLUSH + 5)
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")
    case("no errors from the plugin", not cd.wallclock_errors(),
         "\n".join(cd.wallclock_errors()))

    files = folded_files(cd.spool)
    parsed = {p: folded_lines(p) for p in files}
    checked, details = totals_against_metrics(cd, files, parsed)
    case("file totals equal the metrics for the same window, per group "
         "and kind, to the microsecond", checked > 10 and not details,
         f"{checked} compared:\n" + "\n".join(details[:20]))
    labels = {fr[2] for lines in parsed.values() for fr, _ in lines
              if len(fr) > 2 and fr[2].startswith("[waits")}
    case("the remainder is named for short waits only",
         labels <= {"[waits < 1 ms]"}, str(labels))

    # windows wholly inside the waits (a second of margin each side)
    inside = [(prev, cur) for prev, cur in zip(files, files[1:])
              if folded_time(prev) >= begun + 1 and
              folded_time(cur) <= end - 1]
    case("several windows inside the waits", len(inside) >= 3,
         f"{len(inside)} of {len(files)} files")
    stamps = flush_stamps(cd, GROUP, files)
    for fn, kframe in WAITERS.items():
        bad = []
        for prev, cur in inside:
            span = (stamps[cur] - stamps[prev] if prev in stamps and
                    cur in stamps else None)
            got = under(parsed[cur], GROUP, fn, kframe) / 1e6
            if span is None or not 0.95 * span <= got <= 1.05 * span:
                bad.append(f"{os.path.basename(cur)}: {got:.3f} s of "
                           f"{span} s")
        case(f"{GROUP}: every window's {fn} time is under {fn} and "
             f"{kframe} (95-105 % of the window)", inside and not bad,
             "; ".join(bad) + "\n" + "\n".join(
                 f"{';'.join(fr)} {v}" for fr, v in
                 parsed[inside[0][1]] if fr[0] == GROUP) if inside else "")

    # The process that waited before collectd started, while it waits:
    # every file, the first (from the plugin's start) too.  Its three
    # threads slept throughout, so each has a third of its sleep.
    pre_end = pre.started + SECONDS + 8
    before = [p for p in files if folded_time(p) <= pre_end - 1]
    for what, kframe in (("pipe reader", "pipe_read"),
                         ("condition waiter", "futex_wait"),
                         ("main thread", "hrtimer_nanosleep")):
        bad = []
        for p in before:
            share = under(parsed[p], PRE, "", "") / 3
            got = under(parsed[p], PRE, "", kframe)
            if share < 0.5e6 or got < 0.95 * share:
                bad.append(f"{os.path.basename(p)}: {got} us of "
                           f"{share:.0f} us")
        case(f"{PRE} (adopted): in every file the {what}'s wait is under "
             f"{kframe} (>= 95 % of a thread's share)",
             len(before) >= 3 and not bad, "; ".join(bad))
    untaken = sum(under(lines, PRE, "[user stack not taken]", "")
                  for lines in parsed.values())
    case(f"{PRE}: the user part of adopted waits is labelled",
         untaken > 0, f"{untaken} us under [user stack not taken]")
    under_way = [v for _, v in cd.csv("", "derive", "waits_under_way")]
    case("waits_under_way counts the waits charged at flushes",
         under_way and under_way[-1] >= 2 * len(inside), str(under_way[-3:]))
    pre.kill()

    # The same through the command: the recording's single file.
    out = os.path.join(env.root, "rec")
    rec = subprocess.Popen([os.path.join(BUILD, "wallclock"), "record",
                            "--duration", "6", "--output", out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    line = rec.stderr.readline()
    w = env.workload("wcw_recw", "--waiters", "1", "--sleep", "1",
                     "--sleep-ms", "0", "--seconds", "30")
    stdout, stderr = rec.communicate(timeout=120)
    case("wallclock record exits 0", rec.returncode == 0,
         f"{line}{stderr}")
    latest = os.path.join(out, "latest.folded")
    lines = folded_lines(latest) if os.path.exists(latest) else []
    total = sum(v for fr, v in lines if fr[0] == "wcw_recw" and
                fr[1] == SLEEP)
    # four threads waited the whole time since the workload started
    share = total / 4
    for fn, kframe in WAITERS.items():
        got = under(lines, "wcw_recw", fn, kframe)
        case(f"record: {fn}'s wait is under {fn} and {kframe} (>= 95 % of "
             "a thread's share of the group's sleep)",
             share > 1e6 and got >= 0.95 * share,
             f"{got} us of {share:.0f} us\n" + "\n".join(
                 f"{';'.join(fr)} {v}" for fr, v in lines
                 if fr[0] == "wcw_recw"))
    w.kill()
done()
