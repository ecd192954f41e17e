#!/usr/bin/env python3
"""Stacks reach the spool under the kernel this runs on (tests/vm/guest.sh
runs it in a VM): a real collectd with the plugin writes folded files and
flame graphs, and the workload's known functions are in them, on-CPU and
off.  tests/e2e/test_folded.py holds the exact checks; this is what an
emulated CPU can stand (its clock reads are slow, so the spinner's time
shows inside clock_gettime, under spinner, as much as in burn_cpu), with
what depends on the kernel: the stacks themselves, and the kernel's frames
named.
"""
import glob
import os
import sys
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "e2e"))
from wctest import (Env, TablesSettled, case, done,  # noqa: E402
                    require_built, wait_until)

GROUP = "wcw_vmspool"
WAITER = "wcw_vmwait"
WARM = "wcw_vmwarm"


def lines_of(path):
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            stack, _, value = line.rstrip("\n").rpartition(" ")
            if value.isdigit():
                out.append((stack.split(";"), int(value)))
    return out


require_built()
with Env("vmspool") as env:
    cd = env.collectd(interval=1, plugin_conf="FlushInterval 2\n"
                      "SampleFrequency 99\n")
    cd.start()
    # The unwind tables' helper has a small share of an emulated CPU, less
    # while the host is busy, and may build other programs' tables
    # first: the workload's own is built while a first run of it spins,
    # so that what is checked below is this kernel's stacks, not how soon
    # the helper came to the file (4 of 4.8 s labelled once, 0 in most
    # runs).
    warm = env.workload(WARM, "--spin", "1", "--seconds", "120")
    settled = wait_until(TablesSettled(cd), 110, 1)
    warm.kill()
    print(f"# tables settled before the run: {settled}")
    w = env.workload(GROUP, "--spin", "1", "--sleep", "1", "--sleep-ms",
                     "20", "--seconds", "8")
    # a read on a pipe that lasts the whole run: charged at every flush
    # (by the task iterator's walk, on kernels before 6.7)
    wr = env.workload(WAITER, "--waiters", "1", "--seconds", "8")
    w.wait()
    wr.wait()
    end = time.time()
    wait_until(lambda: any(os.path.getmtime(p) > end for p in glob.glob(
        os.path.join(cd.spool, "wallclock-*.folded"))), 10)
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")
    sym = {t: cd.last("", "derive", f"symbolizer_{t}")
           for t in ("starts", "stalls", "crashes", "skipped")}
    print("# symbolizer: " + ", ".join(f"{k} {v:.0f}" for k, v in
                                       sym.items()))
    # what the plugin said: a slow emulated CPU shows in the symbolizer's
    for line in cd.log().splitlines():
        if "wallclock" in line and ("[warning]" in line or "[notice]"
                                    in line or "[error]" in line):
            print(f"# log: {line[:300]}")
    files = sorted(glob.glob(os.path.join(cd.spool, "wallclock-*.folded")))
    case("folded files are written every flush", len(files) >= 3,
         str(os.listdir(cd.spool)))
    ours = [(fr, v) for p in files for fr, v in lines_of(p)
            if fr[0] == GROUP]
    oncpu = sum(v for fr, v in ours if fr[1] == "[on-cpu]")
    # User frames are the kernel's to take and the symbolizer's to name.
    # Names are the same on every kernel and test_folded.py checks them
    # exactly; here they must be the workload's (named, or addresses in
    # its binary), unless the symbolizer was held back: its share of the
    # time (a twentieth, after a second's burst) buys little on a slow
    # emulated CPU beside busy ones, and a process it has not read by the
    # time it exits keeps [unknown] frames.  The frames must be there.
    held_back = sym["skipped"] > 0

    def ours_frames(fr, name):
        user = [f for f in fr[2:] if not f.endswith("_[k]")]
        if name in fr or any(f.startswith("workload+") for f in user):
            return True
        return held_back and len(user) >= 2 and all(
            f == "[unknown]" for f in user)

    if held_back:
        print(f"# the symbolizer skipped {sym['skipped']:.0f} reads: "
              "[unknown] user frames count as the workload's")
    spinning = [(fr, v) for fr, v in ours if fr[1] == "[on-cpu]" and
                ours_frames(fr, "spinner")]
    spinner = sum(v for _, v in spinning)
    # Likewise the unwind tables' helper: until the binary's table is
    # built (slower on an emulated CPU beside busy ones) its frames are
    # labelled so, not guessed.  Labelled, they are not the whole story.
    pending = sum(v for fr, v in ours if fr[1] == "[on-cpu]" and
                  len(fr) > 2 and fr[2] == "[unwind table not built yet]")
    named = sum(v for fr, v in spinning if "spinner" in fr)
    sleep = sum(v for fr, v in ours if fr[1] == "[off-cpu sleep]")
    napper = sum(v for fr, v in ours if fr[1] == "[off-cpu sleep]" and
                 "hrtimer_nanosleep_[k]" in fr and
                 ours_frames(fr, "sleep_a_while"))
    print(f"# spool: {len(files)} files; {GROUP} on-CPU {oncpu} us "
          f"({spinner} in the workload's binary, {named} of it named "
          f"spinner), sleep {sleep} us ({napper} from the workload's "
          f"binary into hrtimer_nanosleep)")
    others = {}
    for fr, v in ours:
        if fr[1] == "[on-cpu]" and (fr, v) not in spinning:
            key = ";".join(fr[1:])
            others[key] = others.get(key, 0) + v
    heavy = sorted(others.items(), key=lambda kv: -kv[1])[:5]
    print(f"# spool: {pending} us of on-CPU stacks before the workload's "
          "unwind table was built")
    case("the spinner's on-CPU stacks are there, in the workload's binary "
         "(or labelled as waiting for its unwind table, under half)",
         oncpu > 1e6 and spinner + pending >= 0.9 * oncpu and
         pending <= 0.5 * oncpu, f"{spinner} of {oncpu}, {pending} "
         "waiting for a table; "
         "the heaviest others: " + "; ".join(f"{k[:200]} {v}"
                                            for k, v in heavy))
    case("the sleeper's stacks are there, user and kernel frames",
         napper > 1e6, f"{napper} of {sleep}")
    # the pipe reader's wait, under way at every flush
    reading = sum(v for p in files for fr, v in lines_of(p)
                  if fr[0] == WAITER and fr[1] == "[off-cpu sleep]" and
                  "pipe_read_[k]" in fr and ours_frames(fr, "wait_in_read"))
    waited = sum(v for p in files for fr, v in lines_of(p)
                 if fr[0] == WAITER and fr[1] == "[off-cpu sleep]")
    case("a wait under way at flushes is under its own frames and "
         "pipe_read (at least a quarter of the group's sleep: 1 thread of "
         "3, less its start)", waited > 3e6 and reading > 0.25 * waited,
         f"{reading} of {waited} us")
    # the graph of the window the sleeper slept most in (latest.svg is
    # the last flush's, which on a slow guest may come after the run)
    def napped(p):
        return sum(v for fr, v in lines_of(p) if fr[0] == GROUP and
                   "hrtimer_nanosleep_[k]" in fr)
    best = max(files, key=napped) if files else ""
    svg = best[:-len(".folded")] + ".svg"
    try:
        names = {g.get("data-name") for g in ET.parse(svg).getroot().iter(
            "{http://www.w3.org/2000/svg}g")}
    except (OSError, ET.ParseError) as e:
        names = {str(e)}
    case("the flame graph draws the group and the sleeper's kernel frame",
         GROUP in names and "hrtimer_nanosleep_[k]" in names,
         f"{os.path.basename(svg)} (its folded file: "
         f"{napped(best) if best else 0} us of the sleeper's nanosleep): "
         f"group drawn {GROUP in names}, "
         f"hrtimer_nanosleep_[k] drawn {'hrtimer_nanosleep_[k]' in names}")
done()
