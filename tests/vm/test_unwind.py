#!/usr/bin/env python3
"""User stacks walked by unwind tables under the kernel this runs on
(tests/vm/guest.sh runs it in a VM with Debian 12's 6.1): the walk loads
(the plugin says so if it had to fall back to frame pointers), tables
are built, and the walks of tests/uw_workload.c built without frame
pointers reach its outermost frames.  Judged by the plugin's own
counters, not by names: on an emulated CPU the symbolizer's share of the
time buys little.  tests/e2e/test_unwind.py holds the exact checks.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "e2e"))
from wctest import Env, case, done, require_built  # noqa: E402

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                   "uw_workload.c")
SECONDS = 12

require_built()
with Env("vmunwind") as env:
    exe = os.path.join(env.root, "uw_nofp")
    subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", "-pthread", "-o",
                    exe, SRC], check=True)
    cd = env.collectd(interval=1, plugin_conf='UserStackUnwinding "auto"\n'
                      "FlushInterval 2\n")
    cd.start()
    w = subprocess.Popen([exe, str(SECONDS)])
    w.wait(timeout=SECONDS + 120)
    cd.wait_rows("", "derive", "unwind_walks", SECONDS, 30)
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")
    fallback = [ln for ln in cd.log().splitlines()
                if "unwind tables did not load" in ln]
    case("the walk by unwind tables loads on this kernel", not fallback,
         "\n".join(fallback))

    def rows(tinst):
        return cd.csv("", "derive", tinst)
    built = rows("unwind_tables_built")
    case("tables are built (the program's and libc's at least)",
         built and built[-1][1] >= 2, str(built[-3:]))
    walks, complete = rows("unwind_walks"), rows("unwind_complete")
    # from the fourth read on: the tables are in by then
    w0 = walks[3][1] if len(walks) > 4 else 0
    c0 = complete[3][1] if len(complete) > 4 else 0
    dw = walks[-1][1] - w0 if walks else 0
    dc = complete[-1][1] - c0 if complete else 0
    print(f"# {dw:.0f} walks by tables, {dc:.0f} to the outermost frame")
    for why in ("no_table", "pending", "unlearnt", "bad_read", "rule",
                "signal"):
        r = rows(f"unwind_end_{why}")
        print(f"# ended early, {why}: {r[-1][1] if r else 0:.0f}")
    print("# built by read: " + " ".join(f"{v:.0f}" for _, v in built))
    case("walks reach the outermost frame (at least 80 % of them)",
         dw >= 50 and dc >= 0.8 * dw, f"{dc} of {dw}")
done()
