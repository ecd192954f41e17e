#!/usr/bin/env python3
"""User stacks walked by unwind tables reach the program's entry.

tests/uw_workload.c built -O2 twice, without frame pointers (uw_nofp) and
with them (uw_fp): a thread spinning in a qsort() comparator, one asleep
in nanosleep(), one blocked in a pipe read(), the main thread napping,
every one of them through libc, which Debian builds without frame
pointers.  A real collectd with UserStackUnwinding "auto":

- once the tables are in (every file after the third), at least 95 % of
  each program's on-CPU time and of its sleep carries a complete stack:
  from the leaf to start_thread or __libc_start_call_main, the frames the
  folded files begin a thread's stack at;
- the workload's own functions are in those stacks (uw_compare under
  uw_spin on the CPU; uw_nap, uw_wait_pipe asleep);
- programs nobody here wrote, at the same time: Debian's xz -9 (through
  lzma_code, to __libc_start_call_main), python3.11 (through
  _PyEval_EvalFrameDefault, to Py_BytesMain or Py_RunMain) and a C++
  program of ours formatting numbers with libstdc++'s streams: at least
  90 % of their on-CPU time complete, and through those frames (half of
  it; a twentieth for the C++ program's calls into libstdc++);
- a signal handler's stacks end at its signal frame, labelled so;
- short-lived processes (a second each) of a binary whose tables are in
  already (tables are per file, shared by every process that maps it):
  at least 85 % of their time complete, the rest labelled (each process
  learns its mappings one a walk);
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

from wctest import (BUILD, ENTRY_POINTS as ENTRY, Env, case, done,
                    folded_files, folded_lines, folded_time, require_built,
                    totals_against_metrics, wait_until)

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                   "uw_workload.c")
FLUSH = 3
SECONDS = 18
SHORT_RUNS = 6
ONCPU, SLEEP = "[on-cpu]", "[off-cpu sleep]"


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


def frame_in(frames, part):
    """Whether a frame's name has part in it."""
    return any(part in f for f in frames)


def show(lines, group, kind, n=8):
    st = sorted(stacks(lines, group, kind), key=lambda x: -x[1])
    return "\n".join(f"{';'.join(fr)} {v}" for fr, v in st[:n])


def link(root, name, target):
    """target under another name, so that its processes' comm is that."""
    path = os.path.join(root, name)
    os.symlink(target, path)
    return path


def xz_input(root):
    """64 MiB that xz -9 works on for a while: the host's libraries."""
    path = os.path.join(root, "xz.in")
    with open(path, "wb") as out:
        left = 64 << 20
        for d in ("/usr/lib/x86_64-linux-gnu", "/usr/bin"):
            for name in sorted(os.listdir(d)):
                p = os.path.join(d, name)
                if left <= 0 or not os.path.isfile(p) or \
                        os.path.islink(p):
                    continue
                with open(p, "rb") as f:
                    chunk = f.read(left)
                out.write(chunk)
                left -= len(chunk)
    return path


PY_LOOP = """
import time
def uw_work(n):
    return sum(i * i for i in range(n))
until = time.time() + %d
while time.time() < until:
    uw_work(20000)
"""

# Programs nobody here wrote: group: (a frame their stacks go through,
# frames one of which they reach, the share of the on-CPU time that must
# do both); names match in part (C++ names come with their arguments).
# uw_cxx reaches into libstdc++ (number formatting, operator new) from a
# function of its own, and from there into libc.
DEBIAN = {"uw_xz": ("lzma_code", ("__libc_start_call_main",), 0.5),
          "uw_py": ("_PyEval_EvalFrameDefault", ("Py_BytesMain",
                                                  "Py_RunMain"), 0.5),
          "uw_cxx": ("uw_churn", ("std::ostream::_M_insert",
                                  "std::basic_ios<char", "operator new("),
                     0.05)}

require_built()
with Env("unwind") as env:
    progs = {"uw_nofp": build(env.root, "uw_nofp", False),
             "uw_fp": build(env.root, "uw_fp", True)}
    cxx = os.path.join(env.root, "uw_cxx")
    subprocess.run(["g++", "-O2", "-g", "-o", cxx,
                    os.path.join(os.path.dirname(SRC), "uw_cxx.cpp")],
                   check=True)
    xz = link(env.root, "uw_xz", "/usr/bin/xz")
    py = link(env.root, "uw_py", os.path.realpath("/usr/bin/python3"))
    sig = link(env.root, "uw_sig", progs["uw_nofp"])
    data = xz_input(env.root)
    cd = env.collectd(interval=1, plugin_conf=(
        f'UserStackUnwinding "auto"\nFlushInterval {FLUSH}\n'
        "MinBlockMicroseconds 1000\nTopStacks 100000\n"))
    cd.start()
    procs = [subprocess.Popen([path, str(SECONDS)])
             for path in progs.values()]
    procs.append(subprocess.Popen([sig, str(SECONDS), "signal"]))
    procs.append(subprocess.Popen([cxx, str(SECONDS)]))
    procs.append(subprocess.Popen([py, "-c", PY_LOOP % SECONDS]))
    with open(os.devnull, "wb") as null:
        xzp = subprocess.Popen([xz, "-9", "-T1", "-c", data], stdout=null)
    begun = time.time()
    for p in procs:
        p.wait(timeout=SECONDS + 60)
    xzp.kill()
    xzp.wait()
    # short-lived processes of a binary whose tables are in by now
    short = link(env.root, "uw_short", progs["uw_nofp"])
    for _ in range(SHORT_RUNS):
        subprocess.run([short, "1"], timeout=60, check=True)
    end = time.time()
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

    # the tables come with the first walks' requests, a few seconds
    # later on a busy host: from the fourth file
    warm = [p for p in files[3:] if folded_time(p) <= end + FLUSH]
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
    for group, (through, reach, least) in DEBIAN.items():
        good, total = complete_share(lines, group, ONCPU)
        share = good / total if total else 0.0
        # C++ names come with their arguments: by prefix
        via = sum(v for fr, v in stacks(lines, group, ONCPU)
                  if fr[0] in ENTRY and frame_in(fr, through) and
                  any(frame_in(fr, r) for r in reach))
        print(f"# {group} {ONCPU}: {100 * share:.1f} % of "
              f"{total / 1e6:.2f} s complete by tables, "
              f"{100 * via / total if total else 0:.1f} % through "
              f"{through} and {'/'.join(reach)}")
        case(f"{group} {ONCPU}: >= 90 % of the time has a complete stack",
             total > 0.5e6 and share >= 0.90,
             f"{good} of {total} us\n" + show(lines, group, ONCPU))
        case(f"{group}: at least {100 * least:.0f} % of its time has "
             f"complete stacks through {through} and {'/'.join(reach)}",
             total and via >= least * total,
             f"{via} of {total} us\n" + show(lines, group, ONCPU))
    # its stacks begin with the label: not stacks() (it skips labels)
    st = [(fr[2:], v) for fr, v in lines
          if fr[0] == "uw_sig" and fr[1] == ONCPU and len(fr) > 2]
    total = sum(v for _, v in st)
    ended = sum(v for fr, v in st
                if fr[0] == "[signal frame]" and "uw_on_signal" in fr)
    case("a handler's stacks end at its signal frame, labelled",
         total > 0.5e6 and ended >= 0.9 * total,
         f"{ended} of {total} us\n" + show(lines, "uw_sig", ONCPU))

    every = [ln for p in files for ln in parsed[p]]
    for kind in (ONCPU, SLEEP):
        good, total = complete_share(every, "uw_short", kind)
        share = good / total if total else 0.0
        print(f"# uw_short {kind}: {100 * share:.1f} % of "
              f"{total / 1e6:.2f} s complete")
        case(f"short-lived processes ({SHORT_RUNS} of a second each) of a "
             f"binary whose tables are in: {kind} >= 85 % complete",
             total > 0.2e6 and share >= 0.85,
             f"{good} of {total} us\n" + show(every, "uw_short", kind))

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
        # killed after the record: it must outlive a slow start
        w = subprocess.Popen([progs["uw_nofp"], "120"])
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
                     show(rec_lines, "uw_nofp", kind) +
                     f"\nrecord said: {rec.stderr}")

    # no helper to build tables: said, counted as turned away, and frame
    # pointers walk the program built with them (its frames unnamed: the
    # symbolizer has no helper either)
    out = os.path.join(env.root, "rec-nohelper")
    w = subprocess.Popen([progs["uw_fp"], "120"])
    time.sleep(0.5)
    rec = subprocess.run([os.path.join(BUILD, "wallclock"), "record",
                          "--unwind", "auto", "--pid", str(w.pid),
                          "--duration", "4", "--output", out],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ,
                                  WALLCLOCK_SYMD=os.path.join(env.root,
                                                              "no-symd")))
    w.kill()
    w.wait()
    case("record without the helper: says tables are not built",
         rec.returncode == 0 and
         "no unwind tables are built" in rec.stderr, rec.stderr)
    latest = os.path.join(out, "latest.folded")
    rec_lines = folded_lines(latest) if os.path.exists(latest) else []
    st = [(fr, v) for fr, v in rec_lines
          if fr[0] == "uw_fp" and fr[1] == ONCPU]
    total = sum(v for _, v in st)
    labelled = sum(v for fr, v in st if any(
        f in ("[unwind table not built yet]",
              "[no unwind table or frame pointer]") for f in fr))
    # the comparator and its caller in libc, as frame pointers find them
    deep = sum(v for fr, v in st if len(fr) >= 4)
    print(f"# record without the helper: uw_fp {ONCPU}: "
          f"{100 * deep / total if total else 0:.1f} % of "
          f"{total / 1e6:.2f} s two or more frames deep, "
          f"{100 * labelled / total if total else 0:.1f} % ended by a "
          "table's label")
    case("record without the helper: frame pointers walk in its stead",
         total > 0.5e6 and deep >= 0.8 * total and labelled == 0,
         f"{deep} deep, {labelled} labelled, of {total} us\n" +
         "\n".join(";".join(fr) for fr, _ in st[:8]))
done()
