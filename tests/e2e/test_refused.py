#!/usr/bin/env python3
"""Whatever keeps the profiler from loading, the plugin says what and steps
aside, and the rest of collectd keeps working: no capabilities (collectd
under `setpriv --bounding-set=-bpf,-perfmon,-sys_admin`, so even as root
it cannot have them after exec), no kernel BTF (a private mount namespace
with an empty /sys/kernel/btf), and the kernel refusing bpf() or
perf_event_open() while the capabilities are there (a seccomp filter, as
a security module or a container's profile would).

Each time collectd runs with the load plugin and the csv writer.  It must
keep running and writing load values for several intervals, log one
wallclock error that names the cause and says the rest keeps running,
write no wallclock values at all, hold and leave behind no BPF programs,
links or maps of ours, and exit with status 0 on SIGTERM.
"""
import os
import re
import time

from wctest import (HOST, Collectd, Env, bpf_fd_ids, case, done,
                    leaked_bpf, require_built, skip, wait_until)

DENY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wcdeny.py")
CAP_BITS = {"sys_admin": 21, "perfmon": 38, "bpf": 39}
NO_BTF = ["unshare", "-m", "--propagation", "private", "sh", "-c",
          'mount -t tmpfs none /sys/kernel/btf && exec "$@"', "sh"]
SYS_PERF_EVENT_OPEN, SYS_BPF = 298, 321


def caps_of(pid):
    with open(f"/proc/{pid}/status") as f:
        eff = int(next(ln for ln in f if ln.startswith("CapEff:")).split()[1],
                  16)
    return [n for n, b in CAP_BITS.items() if eff >> b & 1]


def load_rows(cd):
    rows = []
    try:
        for path in sorted(os.listdir(os.path.join(cd.csv_dir, HOST,
                                                   "load"))):
            with open(os.path.join(cd.csv_dir, HOST, "load", path)) as f:
                rows += [ln for ln in f if ln[0].isdigit()]
    except FileNotFoundError:
        pass
    return rows


def steps_aside(env, label, prefix, needles, absent=(), premise=None):
    """collectd under prefix: the plugin must not start, saying needles
    and none of absent."""
    root = os.path.join(env.root, re.sub(r"\W+", "-", label))
    os.mkdir(root, 0o755)
    cd = Collectd(root, 1, "", extra="LoadPlugin load", prefix=prefix)
    cd.start()
    if premise:
        premise(cd)
    wait_until(lambda: len(load_rows(cd)) >= 1, 5)
    first = len(load_rows(cd))
    progs, links = bpf_fd_ids(cd.pid)
    time.sleep(4)
    alive = cd.proc.poll() is None
    case(f"{label}: collectd keeps running for several intervals", alive,
         f"exited with {cd.proc.returncode}: {cd.output()[-300:]}")
    later = len(load_rows(cd))
    case(f"{label}: load values keep being written", later >= first + 3,
         f"{first} rows, then {later} after 4 s")
    case(f"{label}: collectd holds no BPF programs or links",
         not progs and not links, f"progs {progs}, links {links}")

    errs = [ln for ln in cd.wallclock_errors() if "wallclock plugin:" in ln]
    case(f"{label}: one wallclock error is logged", len(errs) == 1,
         "\n".join(errs) or cd.log()[-800:])
    text = "\n".join(errs)
    print(f"# {label}: {text.split('wallclock plugin: ', 1)[-1]}")
    case(f"{label}: the error says what and what to do",
         all(n in text for n in needles) and
         not any(a in text for a in absent), text)
    case(f"{label}: the error says the rest of collectd keeps running",
         "rest of collectd keeps running" in text, text)
    case(f"{label}: no read of the plugin failed afterwards",
         "read-function of plugin `wallclock' failed" not in cd.log(),
         cd.log()[-800:])
    base = os.path.join(cd.csv_dir, HOST)
    ours = [d for d in os.listdir(base) if d.startswith("wallclock")]
    case(f"{label}: no wallclock values are written", not ours,
         f"found {ours}")

    rc = cd.stop()
    why = [ln for ln in cd.log().splitlines() if "callbacks failed" in ln]
    case(f"{label}: collectd exits with status 0 after SIGTERM", rc == 0,
         f"exit status {rc}; the log says: {why}")
    leaked, leaked_links, leaked_maps = leaked_bpf()
    case(f"{label}: no BPF programs, links or maps of ours left behind",
         not leaked and not leaked_links and not leaked_maps,
         f"programs {leaked}, links {leaked_links}, maps {leaked_maps}")


def no_caps(cd):
    held = caps_of(cd.pid)
    case("no capabilities: collectd really runs without them", not held,
         f"still has {held}")


require_built()
with Env("refused") as env:
    # a service's settings are the way, not sudo (that is the command's)
    steps_aside(env, "no capabilities",
                ["setpriv", "--bounding-set=-bpf,-perfmon,-sys_admin"],
                ("CAP_BPF", "CapabilityBoundingSet"), ("sudo",), no_caps)
    steps_aside(env, "no BTF", NO_BTF,
                ("has no BTF", "CONFIG_DEBUG_INFO_BTF"))
    if os.uname().machine != "x86_64":
        skip("refused by the kernel", "wcdeny.py knows x86-64's system "
             "call numbers only")
    else:
        steps_aside(env, "bpf() refused",
                    ["python3", DENY, str(SYS_BPF)],
                    ("refused bpf()", "Operation not permitted",
                     "lockdown", "seccomp"), ("sudo", "lacks"))
        steps_aside(env, "perf_event_open() refused",
                    ["python3", DENY, str(SYS_PERF_EVENT_OPEN)],
                    ("cpu-clock perf event", "Operation not permitted",
                     "seccomp"), ("sudo",))
done()
