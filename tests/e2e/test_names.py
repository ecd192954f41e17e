#!/usr/bin/env python3
"""Hostile process names, and Process/ProcessMatch selections.

Part 1: workloads rename themselves (prctl PR_SET_NAME, which keeps 15
bytes) to names with path separators, dots, dashes, control bytes, the
reserved "other" and nothing at all.  Each must get the group the
documented sanitising rule gives (written here independently of the C
code), with plausible values (2 threads, on + off-CPU = 2 x wall), and
nothing the csv writer creates may land outside its host directory.

Part 2: with `Process "wcw_sel_a"`, `ProcessMatch "by_arg" "wcw_sel_b
.*--seconds 6"`, time lands in exactly the selected groups (checked
against each workload's own rusage), decoys that nearly match go to
"other" with `Unmatched "other"`, no automatic group appears, and with
`Unmatched "drop"` there is no "other" at all.
"""
import os
import re
import time

from wctest import (HOST, Collectd, Env, Workload, case, done, near, pct,
                    require_built, wait_until)

COMM_MAX = 15  # bytes the kernel keeps of a name
NAME_MAX = 63


def expected_group(name):
    """The documented rule: keep [A-Za-z0-9_.-], anything else becomes _,
    a leading . or - becomes _, empty is "unknown", exactly "other" is
    "other_", at most 63 bytes."""
    raw = name.encode()[:COMM_MAX]
    out = "".join(chr(b) if re.fullmatch(rb"[A-Za-z0-9_.-]", bytes([b]))
                  else "_" for b in raw)
    if out[:1] in (".", "-"):
        out = "_" + out[1:]
    if not out:
        out = "unknown"
    if out == "other":
        out = "other_"
    return out[:NAME_MAX]


HOSTILE = ["../x;y z", "a/b.c", "..", ".hidden", "-dash", "other",
           "tab\there", "bell\x07", "", "ünïcode", "$(rm -rf ~)",
           "a_name_longer_than_fifteen_bytes"]

require_built()


def check_no_escape(cd):
    """What the csv writer made: plain directories exactly one level below
    csv/HOST/ holding plain files, nothing else and nothing elsewhere."""
    bad = []
    top = os.path.realpath(cd.csv_dir)
    host = os.path.join(top, HOST)
    for dirpath, dirnames, filenames in os.walk(top):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            parent = os.path.dirname(os.path.realpath(p))
            if os.path.islink(p):
                bad.append(f"symlink {p}")
            elif n in dirnames and p != host and parent != host:
                bad.append(f"directory {p}")
            elif n in filenames and os.path.dirname(parent) != host:
                bad.append(f"file {p}")
    known = {"csv", "bin", "sock", "collectd.log", "collectd.conf",
             "collectd.pid", "spool"}
    bad += [f"in the test root: {n}" for n in os.listdir(cd.root)
            if n not in known and not n.endswith(".report")]
    return bad


def part_hostile(env):
    cd = env.collectd(interval=1, plugin_conf="MaxGroups 200")
    cd.start()
    work = []
    for i, name in enumerate(HOSTILE):
        w = env.workload(f"wcw_n{i}", "--name", name, "--sleep", "1",
                         "--seconds", "6")
        work.append((name, expected_group(name), w))
    want = {g for _, g, _ in work}
    case("the rule gives distinct groups for these names",
         len(want) == len(HOSTILE), f"{sorted(want)}")
    wait_until(lambda: all(len(cd.csv(g, "wallclock_threads")) >= 4
                           for g in want), 10)
    for _, _, w in work:
        w.wait()
    time.sleep(1.5)
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")
    groups = set(cd.groups())
    for name, g, w in work:
        tag = f"name {name!r} -> group {g!r}"
        th = cd.csv(g, "wallclock_threads")
        if not case(f"{tag}: has values", len(th) >= 3,
                    f"{len(th)} rows; groups: {sorted(groups)}"):
            continue
        case(f"{tag}: 2 threads", max(v for _, v in th) == 2,
             f"threads {th}")
        on = cd.csv(g, "wallclock_us", "oncpu")
        off = cd.csv(g, "wallclock_us", "offcpu")
        inside = [t for t, _ in on if w.started + 0.3 < t < w.started + 5.7]
        if case(f"{tag}: a window inside its life", len(inside) >= 2,
                f"{inside}"):
            t0, t1 = inside[0], inside[-1]
            d = (dict(on)[t1] - dict(on)[t0]) + (dict(off)[t1]
                                                  - dict(off)[t0])
            wall = 2 * (t1 - t0) * 1e6
            case(f"{tag}: on + off-CPU within 5% of 2 x wall",
                 near(d, wall, 0.05), f"{d:.0f} vs {wall:.0f} us "
                 f"({pct(d, wall):+.2f}%)")
    bad = check_no_escape(cd)
    case("nothing written outside the csv host directory", not bad,
         f"{bad}")
    odd = [g for g in groups
           if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}", g)]
    case("every group name is in the safe alphabet", not odd, f"{odd}")


def part_select(env, unmatched):
    root = os.path.join(env.root, f"sel-{unmatched}")
    os.mkdir(root, 0o755)
    cd = Collectd(root, 1, "\n".join([
        '  Process "wcw_sel_a"',
        '  ProcessMatch "by_arg" "wcw_sel_b .*--seconds 6"',
        f'  Unmatched "{unmatched}"']))
    cd.start()
    a = Workload(root, "wcw_sel_a", ["--spin", "1", "--seconds", "5"])
    b = Workload(root, "wcw_sel_b", ["--spin", "1", "--seconds", "6"])
    # Decoys: a longer name, and the right name with other arguments.
    c = Workload(root, "wcw_sel_ab", ["--spin", "1", "--seconds", "5"])
    d = Workload(root, "wcw_sel_d", ["--name", "wcw_sel_b", "--spin", "1",
                                     "--seconds", "5"])
    for w in (a, b, c, d):
        w.wait()
    last = time.time()
    wait_until(lambda: (cd.csv("by_arg", "wallclock_threads") or
                        [(0, 0)])[-1][0] > last + 1.2, 5)
    rc = cd.stop()
    tag = f"Unmatched {unmatched}"
    case(f"{tag}: collectd exits cleanly", rc == 0, f"exit status {rc}")
    want = {"wcw_sel_a", "by_arg"} | ({"other"} if unmatched == "other"
                                      else set())
    case(f"{tag}: groups are exactly {sorted(want)}",
         set(cd.groups()) == want, f"{cd.groups()}")
    for g, w in (("wcw_sel_a", a), ("by_arg", b)):
        rows = cd.csv(g, "wallclock_us", "oncpu")
        got = rows[-1][1] if rows else 0
        cpu = w.report()["rusage_ns"] / 1e3
        case(f"{tag}: {g} holds its workload's CPU time (within 3% of "
             f"rusage)", near(got, cpu, 0.03),
             f"{got:.0f} us vs rusage {cpu:.0f} us ({pct(got, cpu):+.2f}%)")
    if unmatched == "other":
        rows = cd.csv("other", "wallclock_us", "oncpu")
        t_a = [t for t, _ in rows if t < min(w.started for w in (c, d))]
        decoys = (c.report()["rusage_ns"] + d.report()["rusage_ns"]) / 1e3
        # no row before the decoys: "other" was born with them, its
        # counter from zero (a quiet host runs nothing else unmatched)
        base = dict(rows)[t_a[-1]] if t_a else 0
        got = rows[-1][1] - base if rows else 0
        case(f"{tag}: the decoys' CPU time is in other", got >= 0.97 * decoys,
             f"other +{got:.0f} us, decoys {decoys:.0f} us")


with Env("names") as env:
    part_hostile(env)
    part_select(env, "other")
    part_select(env, "drop")
done()
