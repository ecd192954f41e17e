#!/usr/bin/env python3
"""Without CAP_BPF/CAP_PERFMON/CAP_SYS_ADMIN the plugin says so and steps
aside, and the rest of collectd keeps working.

collectd runs under `setpriv --bounding-set=-bpf,-perfmon,-sys_admin` (so
even as root it cannot have those capabilities after exec) with the load
plugin and the csv writer.  It must keep running and writing load values
for several intervals, log one wallclock error that names CAP_BPF and says
the rest keeps running, write no wallclock values at all, hold and leave
behind no BPF programs, and exit with status 0 on SIGTERM.
"""
import os
import time

from wctest import (HOST, Env, bpf_fd_ids, case, done, leaked_bpf,
                    require_built, wait_until)

DROP = "--bounding-set=-bpf,-perfmon,-sys_admin"
CAP_BITS = {"sys_admin": 21, "perfmon": 38, "bpf": 39}

require_built()
with Env("nocaps") as env:
    cd = env.collectd(interval=1, extra="LoadPlugin load",
                      prefix=["setpriv", DROP])
    cd.start()
    with open(f"/proc/{cd.pid}/status") as f:
        eff = int(next(ln for ln in f if ln.startswith("CapEff:")).split()[1],
                  16)
    held = [n for n, b in CAP_BITS.items() if eff >> b & 1]
    case("collectd really runs without the capabilities", not held,
         f"still has {held} (CapEff {eff:x})")

    def load_rows():
        rows = []
        for path in sorted(os.listdir(os.path.join(cd.csv_dir, HOST,
                                                   "load"))):
            with open(os.path.join(cd.csv_dir, HOST, "load", path)) as f:
                rows += [ln for ln in f if ln[0].isdigit()]
        return rows

    def n_load():
        try:
            return len(load_rows())
        except FileNotFoundError:
            return 0

    wait_until(lambda: n_load() >= 1, 5)
    first = n_load()
    progs, links = bpf_fd_ids(cd.pid)
    time.sleep(4)
    alive = cd.proc.poll() is None
    case("collectd keeps running for several intervals", alive,
         f"exited with {cd.proc.returncode}: {cd.output()[-300:]}")
    later = n_load()
    case("load values keep being written", later >= first + 3,
         f"{first} rows, then {later} after 4 s")
    case("collectd holds no BPF programs or links",
         not progs and not links, f"progs {progs}, links {links}")

    errs = [ln for ln in cd.wallclock_errors() if "wallclock plugin:" in ln]
    case("one wallclock error is logged", len(errs) == 1,
         "\n".join(errs) or cd.log()[-800:])
    text = "\n".join(errs)
    case("the error names CAP_BPF", "CAP_BPF" in text, text)
    case("the error says the rest of collectd keeps running",
         "rest of collectd keeps running" in text, text)
    case("no read of the plugin failed afterwards",
         "read-function of plugin `wallclock' failed" not in cd.log(),
         cd.log()[-800:])
    base = os.path.join(cd.csv_dir, HOST)
    ours = [d for d in os.listdir(base) if d.startswith("wallclock")]
    case("no wallclock values are written", not ours, f"found {ours}")

    rc = cd.stop()
    why = [ln for ln in cd.log().splitlines() if "callbacks failed" in ln]
    case("collectd exits with status 0 after SIGTERM", rc == 0,
         f"exit status {rc}; the log says: {why}")
    leaked, leaked_links = leaked_bpf()
    case("no wc_* BPF programs or links left behind",
         not leaked and not leaked_links,
         f"programs {leaked}, links {leaked_links}")
done()
