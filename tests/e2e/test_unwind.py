#!/usr/bin/env python3
"""User stacks walked by unwind tables reach the program's entry.

tests/uw_workload.c built -O2 twice, without frame pointers (uw_nofp) and
with them (uw_fp): a thread spinning in a qsort() comparator, one asleep
in nanosleep(), one blocked in a pipe read(), the main thread napping,
every one of them through libc, which Debian builds without frame
pointers.  A real collectd with UserStackUnwinding "auto":

- once the tables are in (every file after the second), at least 95 % of
  each program's on-CPU time and of its sleep carries a complete stack:
  from the leaf to start_thread or __libc_start_call_main, the frames the
  folded files begin a thread's stack at;
- the workload's own functions are in those stacks (uw_compare under
  uw_spin on the CPU; uw_nap, uw_wait_pipe asleep);
- every file still adds up to the metrics;
- the self-metrics say tables were built and walks completed.

`wallclock record --unwind auto` does the same (at least 90 %: its first
samples come before the tables); `--unwind framepointer` gives the
frame-pointer-only figure, printed beside (Debian's libc ends those
walks on the CPU; the caller search recovers the sleeps' callers).
"""
import os
import subprocess
import time

from wctest import (BUILD, Env, case, done, folded_files, folded_lines,
                    folded_time, require_built, totals_against_metrics,
                    wait_until)

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                   "uw_workload.c")
FLUSH = 3
SECONDS = 18
ONCPU, SLEEP = "[on-cpu]", "[off-cpu sleep]"
ENTRY = {"start_thread", "__libc_start_call_main", "__libc_start_main",
         "_start", "clone3", "clone"}


def build(root, name, fp):
    out = os.path.join(root, name)
    flag = "-fno-omit-frame-pointer" if fp else "-fomit-frame-pointer"
    subprocess.run(["gcc", "-O2", "-g", flag, "-pthread", "-o", out, SRC],
                   check=True)
    return out


def stacks(lines, group, kind):
    """(frames below the kind, weight) of group's stacks of kind; the
    remainder lines ("[waits < 1 ms]" and the like) are not stacks."""
    return [(fr[2:], v) for fr, v in lines
            if fr[0] == group and fr[1] == kind and len(fr) > 2 and
            not fr[2].startswith("[")]


def complete_share(lines, group, kind):
    st = stacks(lines, group, kind)
    total = sum(v for _, v in st)
    good = sum(v for fr, v in st if fr[0] in ENTRY)
    return good, total


def show(lines, group, kind, n=8):
    st = sorted(stacks(lines, group, kind), key=lambda x: -x[1])
    return "\n".join(f"{';'.join(fr)} {v}" for fr, v in st[:n])


require_built()
with Env("unwind") as env:
    progs = {"uw_nofp": build(env.root, "uw_nofp", False),
             "uw_fp": build(env.root, "uw_fp", True)}
    cd = env.collectd(interval=1, plugin_conf=(
        f'UserStackUnwinding "auto"\nFlushInterval {FLUSH}\n'
        "MinBlockMicroseconds 1000\nTopStacks 100000\n"))
    cd.start()
    procs = [subprocess.Popen([path, str(SECONDS)])
             for path in progs.values()]
    begun = time.time()
    for p in procs:
        p.wait(timeout=SECONDS + 60)
    end = begun + SECONDS
    wait_until(lambda: any(folded_time(p) > end + FLUSH
                           for p in folded_files(cd.spool)), 3 * FLUSH + 5)
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")
    case("no errors or warnings from the plugin",
         not cd.wallclock_errors(("error", "warning")),
         "\n".join(cd.wallclock_errors(("error", "warning"))))

    files = folded_files(cd.spool)
    parsed = {p: folded_lines(p) for p in files}
    checked, details = totals_against_metrics(cd, files, parsed)
    case("file totals equal the metrics, per group and kind",
         checked > 10 and not details,
         f"{checked} compared:\n" + "\n".join(details[:20]))

    # the tables come with the first walks' requests: from the third file
    warm = [p for p in files[2:] if folded_time(p) <= end + FLUSH]
    case("files written once the tables are in", len(warm) >= 3,
         f"{len(warm)} of {len(files)}")
    lines = [ln for p in warm for ln in parsed[p]]
    for group in progs:
        for kind, fns in ((ONCPU, ("uw_spin", "uw_compare")),
                          (SLEEP, ("uw_nap", "uw_wait_pipe"))):
            good, total = complete_share(lines, group, kind)
            share = good / total if total else 0.0
            print(f"# {group} {kind}: {100 * share:.1f} % of "
                  f"{total / 1e6:.2f} s complete by tables")
            case(f"{group} {kind}: >= 95 % of the time has a complete "
                 "stack", total > 0.5e6 and share >= 0.95,
                 f"{good} of {total} us\n" + show(lines, group, kind))
            has = {fn: sum(v for fr, v in stacks(lines, group, kind)
                           if fn in fr and fr[0] in ENTRY)
                   for fn in fns}
            case(f"{group} {kind}: the program's own functions are in "
                 f"its complete stacks ({', '.join(fns)})",
                 all(v > 0 for v in has.values()), str(has))

    def last(tinst, type_="derive"):
        rows = cd.csv("", type_, tinst)
        return rows[-1][1] if rows else None
    built, walks, done_ = (last("unwind_tables_built"),
                           last("unwind_walks"), last("unwind_complete"))
    case("tables were built, and walks completed by them",
         built and built >= 2 and walks and done_ and done_ <= walks,
         f"built {built}, walks {walks}, complete {done_}")
    maps = last("unwind_maps", "bytes")
    case("the tables' kernel memory is reported",
         maps and maps >= 32 << 20, f"{maps}")

    # the command, both ways: by tables as above, and the
    # frame-pointer-only figure for the record
    for how in ("auto", "framepointer"):
        out = os.path.join(env.root, f"rec-{how}")
        w = subprocess.Popen([progs["uw_nofp"], "12"])
        time.sleep(0.5)
        rec = subprocess.run([os.path.join(BUILD, "wallclock"), "record",
                              "--unwind", how, "--pid", str(w.pid),
                              "--duration", "6", "--output", out],
                             capture_output=True, text=True, timeout=120)
        w.kill()
        w.wait()
        case(f"record --unwind {how} exits 0", rec.returncode == 0,
             rec.stderr)
        latest = os.path.join(out, "latest.folded")
        rec_lines = folded_lines(latest) if os.path.exists(latest) else []
        for kind in (ONCPU, SLEEP):
            good, total = complete_share(rec_lines, "uw_nofp", kind)
            share = good / total if total else 0.0
            print(f"# record --unwind {how}: uw_nofp {kind}: "
                  f"{100 * share:.1f} % of {total / 1e6:.2f} s complete")
            if how == "auto":
                # its first samples come before the tables
                case(f"record --unwind auto: uw_nofp {kind}: >= 90 % "
                     "complete", total > 0.5e6 and share >= 0.90,
                     f"{good} of {total} us\n" +
                     show(rec_lines, "uw_nofp", kind))
done()
