#!/usr/bin/env python3
"""User stacks walked by unwind tables under the kernel this runs on
(tests/vm/guest.sh runs it in a VM with Debian 12's 6.1): the walk loads
(the plugin says so if it had to fall back to frame pointers), tables
are built, and walks of tests/uw_workload.c built without frame pointers
(static, libc and all) reach the outermost frame.  Judged by the plugin's own counters, not by
names: on an emulated CPU the symbolizer's share of the time buys little.
tests/e2e/test_unwind.py holds the exact checks.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "e2e"))
from wctest import (Env, TablesSettled, case, done,  # noqa: E402
                    require_built, wait_until)

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                   "uw_workload.c")

WAIT = 240  # an emulated CPU on a busy host reads slowly


def rows(cd, tinst):
    return cd.csv("", "derive", tinst)


def last(cd, tinst):
    return cd.last("", "derive", tinst, default=0)


WALKS = 400  # enough to tell most from some; each is CI time


require_built()
with Env("vmunwind") as env:
    exe = os.path.join(env.root, "uw_nofp")
    # static: the guest sees the host's libc through 9p, whose files the
    # file rules refuse; its own disk holds this one, libc and all
    subprocess.run(["gcc", "-O2", "-fomit-frame-pointer", "-pthread",
                    "-static", "-o", exe, SRC], check=True)
    cd = env.collectd(interval=1, plugin_conf='UserStackUnwinding "auto"\n'
                      "FlushInterval 2\n")
    cd.start()
    w = subprocess.Popen([exe, str(WAIT + 60)])
    # until the tables are in: the first one built may be another
    # program's while the workload's waits (the tables' helper has a
    # quarter of an emulated CPU), so until no walk has met a table still
    # on its way for six polls; then WALKS walks, however slow the CPU
    wait_until(lambda: last(cd, "unwind_tables_built") >= 1, WAIT / 2, 1)
    t0 = time.time()
    tables_settled = TablesSettled(cd)
    settled = wait_until(tables_settled, WAIT / 2, 1)
    print(f"# tables settled after {time.time() - t0:.0f} s: "
          f"{last(cd, 'unwind_tables_built'):.0f} built")
    w0, c0 = last(cd, "unwind_walks"), last(cd, "unwind_complete")
    wait_until(lambda: last(cd, "unwind_walks") - w0 >= WALKS, WAIT / 2, 1)
    w.kill()
    w.wait()
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")
    fallback = [ln for ln in cd.log().splitlines()
                if "unwind tables did not load" in ln]
    case("the walk by unwind tables loads on this kernel", not fallback,
         "\n".join(fallback))
    built = rows(cd, "unwind_tables_built")
    case("tables are built (the program's at least)",
         built and built[-1][1] >= 1, str(built[-3:]))
    dw = last(cd, "unwind_walks") - w0
    dc = last(cd, "unwind_complete") - c0
    print(f"# once the tables were in: {dw:.0f} walks by tables, {dc:.0f} "
          "to the outermost frame")
    for why in ("no_table", "pending", "unlearnt", "bad_read", "rule",
                "signal"):
        print(f"# ended early, {why}: {last(cd, f'unwind_end_{why}'):.0f}")
    # Every process's walks count here; test_unwind.py measures how
    # complete the walks are, per program, on the host's kernel.
    case("no walk meets a table on its way for a while: they are all in",
         settled, f"{len(tables_settled.polls)} polls")
    case("most walks by tables reach the outermost frame here too",
         dw >= WALKS and dc >= dw / 2, f"{dc} of {dw}")
done()
