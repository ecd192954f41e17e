#!/usr/bin/env python3
"""Folded stack files in the spool, from a real collectd: their format,
their totals against the metrics dispatched for the same window, and the
stacks of a workload whose functions are known.

collectd reads every second and flushes every 3 s.  Each file's name
carries the second of the read that wrote it, and every value of that
read carries the same time, so the csv rows of the two reads that bound a
file's window are known exactly.  For every group and kind, the file's
values must add up to the growth of the dispatched counters over that
window: to the microsecond.
"""
import glob
import os
import stat
import time
import xml.etree.ElementTree as ET

from wctest import (MARKERS, Env, case, done, folded_files, folded_lines,
                    require_built, skip, totals_against_metrics, wait_until)

FLUSH = 3
SECONDS = 12
GROUP = "wcw_fold"


require_built()
with Env("folded") as env:
    cd = env.collectd(interval=1, plugin_conf=f"FlushInterval {FLUSH}\n"
                      "MinBlockMicroseconds 0\nSampleFrequency 199\nTopStacks 100000\n")
    cd.start()
    w = env.workload(GROUP, "--spin", "1", "--sleep", "1", "--sleep-ms",
                     "20", "--disk", "1", "--dir", env.root, "--seconds",
                     str(SECONDS))
    w.wait()
    end = time.time()
    wait_until(lambda: len([p for p in glob.glob(cd.spool + "/wallclock-*")
                            if os.path.getmtime(p) > end + FLUSH]) >= 1,
               3 * FLUSH + 5)
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")
    case("no errors from the plugin", not cd.wallclock_errors(),
         "\n".join(cd.wallclock_errors()))

    files = folded_files(cd.spool)
    case("a file per flush interval", len(files) >= SECONDS // FLUSH,
         f"{len(files)} files: {os.listdir(cd.spool)}")
    st = os.stat(cd.spool)
    case("spool directory is not writable by others",
         not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH), oct(st.st_mode))
    modes = {oct(os.stat(p).st_mode & 0o777) for p in files}
    case("files are mode 0640", modes == {"0o640"}, str(modes))
    latest = os.path.join(cd.spool, "latest.folded")
    case("latest.folded is the newest file",
         os.path.exists(latest) and files and
         os.path.samefile(latest, files[-1]),
         str(os.listdir(cd.spool)))

    # A flame graph next to every folded file (RenderSVG is on by default).
    svgs = [p[:-len(".folded")] + ".svg" for p in files]
    missing = [os.path.basename(p) for p in svgs if not os.path.exists(p)]
    case("an SVG flame graph next to each folded file", not missing,
         f"missing {missing}")
    bad_xml, burn = [], 0
    for p in svgs:
        if not os.path.exists(p):
            continue
        try:
            root = ET.parse(p).getroot()
        except ET.ParseError as e:
            bad_xml.append(f"{os.path.basename(p)}: {e}")
            continue
        burn += sum(1 for g in root.iter("{http://www.w3.org/2000/svg}g")
                    if g.get("data-name") == "burn_cpu")
    case("every SVG is well-formed XML", not bad_xml, "\n".join(bad_xml))
    case("the SVGs draw the workload's burn_cpu frames", burn > 0,
         f"{burn} frames named burn_cpu")
    case("latest.svg is the newest flame graph",
         os.path.exists(os.path.join(cd.spool, "latest.svg")) and svgs and
         os.path.samefile(os.path.join(cd.spool, "latest.svg"), svgs[-1]))

    flush = [v for _, v in cd.csv("", "duration", "flush")]
    if flush:
        print(f"# flush (symbolize, fold, write folded + SVG): median "
              f"{1e3 * sorted(flush)[len(flush) // 2]:.1f} ms, max "
              f"{1e3 * max(flush):.1f} ms over {len(flush)} reads")

    parsed = {}
    bad = []
    for p in files:
        try:
            parsed[p] = folded_lines(p)
        except ValueError as e:
            bad.append(str(e))
    case("every line is 'frame;...;frame VALUE'", not bad, "\n".join(bad))
    markers = {fr[1] for lines in parsed.values() for fr, _ in lines
               if len(fr) > 1}
    case("the second frame is always a kind marker",
         markers <= set(MARKERS), str(markers - set(MARKERS)))

    # Totals per (group, kind) against the csv counters, file by file.
    checked, details = totals_against_metrics(cd, files, parsed)
    mismatched = len(details)
    print(f"# {checked} (file, group, kind) totals compared with the "
          f"metrics, {mismatched} differ")
    case("file totals equal the metrics for the same window, per group "
         "and kind, to the microsecond",
         checked > 20 and mismatched == 0,
         f"{checked} compared, {mismatched} differ:\n" + "\n".join(
             details[:20]))

    # Symbolization: frames of the workload's stacks (not the made-up
    # lines), weighted by their time, that resolved to a function name.
    def resolved(frame):
        f = frame[:-len("_[k]")] if frame.endswith("_[k]") else frame
        return not (f in ("[unknown]", "[anon]") or "+0x" in f)

    named = every = 0
    unnamed = {}
    for lines in parsed.values():
        for fr, v in lines:
            if fr[0] != GROUP or len(fr) < 3 or fr[2].startswith("["):
                continue
            for f in fr[2:]:
                every += v
                if resolved(f):
                    named += v
                else:
                    unnamed[f] = unnamed.get(f, 0) + v
    rate = named / every if every else 0
    print(f"# symbolized: {100 * rate:.2f}% of the workload's frames "
          f"(weighted by time); unresolved: {sorted(unnamed)[:5]}")
    case("at least 99% of the workload's frames resolve to names",
         rate >= 0.99, f"{100 * rate:.2f}%: {unnamed}")

    # What the workload's own stacks say, against its design: each
    # thread's own schedstat, read by the thread just before it ends.
    def total(pred, marker):
        return sum(v for lines in parsed.values() for fr, v in lines
                   if fr[0] == GROUP and fr[1] == marker and pred(fr))

    report = w.report()
    rep = {t[0]: t for t in report["threads"]}
    spin_on = rep["spin"][2] / 1e3
    # less the naps the kernel counted as waits for a CPU (stale queue
    # stamps), which the plugin mends into sleep
    sleep_off = (rep["sleep"][4] - rep["sleep"][2] - rep["sleep"][3] +
                 report["stale_naps_ns"]) / 1e3
    got = total(lambda fr: "spinner" in fr, "[on-cpu]")
    print(f"# spinner on-CPU: files {got} us, schedstat {spin_on:.0f} us "
          f"({100.0 * (got - spin_on) / spin_on:+.2f}%)")
    case("on-CPU under spinner within 5% of the spinner's run time",
         abs(got - spin_on) <= 0.05 * spin_on,
         f"{got} us in the files, {spin_on:.0f} us by schedstat")
    got = total(lambda fr: "burn_cpu" in fr and "spinner" in fr,
                "[on-cpu]")
    case("on-CPU: the spinner runs in spinner;burn_cpu (>= 95%)",
         got >= 0.95 * spin_on, f"{got} of {spin_on:.0f} us")
    got = total(lambda fr: "sleeper" in fr and "sleep_a_while" in fr and
                "hrtimer_nanosleep_[k]" in fr, "[off-cpu sleep]")
    print(f"# sleeper sleep: files {got} us, schedstat {sleep_off:.0f} us "
          f"({100.0 * (got - sleep_off) / sleep_off:+.2f}%)")
    case("off-CPU sleep under sleeper;sleep_a_while;...;hrtimer_nanosleep "
         "within 5% of"
         " the sleeper's sleep", abs(got - sleep_off) <= 0.05 * sleep_off,
         f"{got} us in the files, {sleep_off:.0f} us by schedstat")
    got = total(lambda fr: "disk_writer" in fr and "wait_for_disk" in fr,
                "[off-cpu io]")
    # what has no stack of its own: the remainder line ("[waits < ...]",
    # here only the few microseconds between a flush's read and its new
    # window)
    def ongoing(fr):
        return len(fr) > 2 and fr[2].startswith("[waits <")

    every = total(lambda fr: not ongoing(fr), "[off-cpu io]")
    if every == 0:
        skip("off-CPU io: the writer's waits are under disk_writer",
             "this disk never blocked the writer")
    else:
        # what is not there, heaviest first, for the message
        others = sorted(((v, ";".join(fr[2:])) for lines in parsed.values()
                         for fr, v in lines if fr[0] == GROUP and
                         fr[1] == "[off-cpu io]" and
                         not ongoing(fr) and not
                         ("disk_writer" in fr and "wait_for_disk" in fr)),
                        reverse=True)
        print(f"# io outside wait_for_disk: {others[:3]}")
        case("off-CPU io: with MinBlockMicroseconds 0 every wait over by "
             "a flush has a stack, and the writer's are under "
             "disk_writer;wait_for_disk (>= 95%)",
             got >= 0.95 * every, f"{got} of {every} us; others "
             f"{others[:3]}")
done()
