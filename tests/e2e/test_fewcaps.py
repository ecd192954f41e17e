#!/usr/bin/env python3
"""collectd with exactly CAP_BPF and CAP_PERFMON: what the README says is
enough to profile.  It profiles; what the stacks lose for want of the
other capabilities is said once, naming each capability and what it would
restore, and counted in capabilities_missing; nothing fails or crashes,
and the time is all in the stack files, under frames that say they are
unknown.  Without CAP_SETUID and CAP_SETGID the symbolizer's helper cannot
open files as nobody: it opens them as root with no capability left, and
its seccomp filter alone keeps it from writing root's files.
"""
import glob
import os

from wctest import (Collectd, Env, case, done, helper_check, helper_pids,
                    require_built, wait_until)

KEEP = "--bounding-set=-all,+bpf,+perfmon"
PREFIX = ["setpriv", KEEP, "--inh-caps=-all"]
CAP_BITS = {"bpf": 39, "perfmon": 38, "sys_ptrace": 19, "sys_admin": 21,
            "dac_read_search": 2, "checkpoint_restore": 40}

require_built()
with Env("fewcaps") as env:
    w = env.workload("wcw_few", "--spin", "1", "--seconds", "30")
    cd = env.collectd(interval=1, plugin_conf="FlushInterval 3",
                      prefix=PREFIX)
    cd.start()
    with open(f"/proc/{cd.pid}/status") as f:
        eff = int(next(ln for ln in f if ln.startswith("CapEff:")).split()[1],
                  16)
    held = sorted(n for n, b in CAP_BITS.items() if eff >> b & 1)
    case("collectd runs with CAP_BPF and CAP_PERFMON only",
         held == ["bpf", "perfmon"], f"{held} (CapEff {eff:x})")
    ok = cd.wait_rows("wcw_few", "wallclock_us", "oncpu", 3, 10)
    case("it profiles: the workload's values flow", ok)
    missing = cd.csv("", "gauge", "capabilities_missing")
    case("capabilities_missing counts what the stacks lack",
         missing and missing[-1][1] >= 3, str(missing[-1:]))
    said = [ln for ln in cd.log().splitlines()
            if "stacks will be less complete" in ln]
    case("it says once what is degraded and which capability restores it",
         len(said) == 1 and all(c in said[0] for c in (
             "CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH",
             "CAP_CHECKPOINT_RESTORE")), "\n".join(said))
    got = wait_until(lambda: glob.glob(os.path.join(cd.spool,
                                                    "wallclock-*.folded")), 10)
    text = ""
    for path in glob.glob(os.path.join(cd.spool, "wallclock-*.folded")):
        with open(path) as f:
            text += f.read()
    case("stack files are written", got and text, str(got))
    # reading another process takes CAP_SYS_PTRACE: without it
    # no process's maps, so the time is all there, its frames unnamed
    few = [ln for ln in text.splitlines() if ln.startswith("wcw_few;")]
    case("the workload's time is in the files, its user frames [unknown]",
         any(";[on-cpu];[unknown]" in ln for ln in few) and
         not any("burn_cpu" in ln for ln in few), "\n".join(few)[:2000])
    case("the symbolizer's helper runs",
         wait_until(lambda: helper_pids(cd.pid), 5), "no wallclock-symd")
    confined, refused, out = helper_check(env.root, PREFIX)
    case("a helper with these capabilities confines itself, and can "
         "neither make nor truncate root's files", confined and refused, out)
    # the kernel's symbols, hidden for want of CAP_SYSLOG, are said where
    # they are read too
    bad = [ln for ln in cd.wallclock_errors(("error", "warning"))
           if "stacks will be less complete" not in ln and
           "kallsyms: addresses hidden" not in ln]
    case("no errors or warnings from the plugin but those",
         not bad, "\n".join(bad))
    case("collectd exits cleanly", cd.stop() == 0)

    # Everything but CAP_SETUID and CAP_SETGID: the helper reads as root
    # (no openat2), through map_files: the workload's frames are named.
    root = os.path.join(env.root, "nosetid")
    os.mkdir(root, 0o755)
    nosetid = ["setpriv", "--bounding-set=-setuid,-setgid",
               "--inh-caps=-all"]
    cd = Collectd(root, 1, "FlushInterval 3", prefix=nosetid)
    cd.start()
    said = [ln for ln in cd.log().splitlines()
            if "stacks will be less complete" in ln]
    case("without CAP_SETUID and CAP_SETGID: said, naming what is lost",
         len(said) == 1 and "CAP_SETUID and CAP_SETGID" in said[0] and
         "perf maps" in said[0], "\n".join(said))
    named = wait_until(lambda: any(
        "burn_cpu" in ln for path in glob.glob(os.path.join(
            cd.spool, "wallclock-*.folded")) for ln in open(path)), 15, 0.5)
    case("without CAP_SETUID and CAP_SETGID: the workload's frames are "
         "named (map_files)", named)
    pids = helper_pids(cd.pid)
    fsuids = []
    for pid in pids:
        with open(f"/proc/{pid}/status") as f:
            fsuids += [ln.split()[4] for ln in f if ln.startswith("Uid:")]
    case("without CAP_SETUID and CAP_SETGID: the helpers read as root",
         pids and fsuids == ["0"] * len(pids), str(fsuids))
    confined, refused, out = helper_check(root, nosetid)
    case("without CAP_SETUID and CAP_SETGID: a helper confines itself, "
         "and can neither make nor truncate root's files (openat2 "
         "refused)", confined and refused and
         out.count("Operation not permitted") >= 4, out)
    case("without CAP_SETUID and CAP_SETGID: collectd exits cleanly",
         cd.stop() == 0)
    w.kill()
done()
