#!/usr/bin/env python3
"""demo_top.py SOCKET INTERVAL LOG - print wallclock's per-group numbers
from a running collectd every interval, busiest groups first.  Values are
rates in thread-seconds per second: 1.00 = one thread all the time."""
import subprocess
import sys
import time

SOCK, INTERVAL, LOG = sys.argv[1], float(sys.argv[2]), sys.argv[3]
COLS = ("oncpu", "runqueue", "sleep", "blocked", "steal")


def ctl(*args):
    r = subprocess.run(["collectdctl", "-s", SOCK, *args],
                       capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else ""


def value(ident):
    for line in ctl("getval", ident).splitlines():
        if "=" in line:
            try:
                return float(line.split("=", 1)[1])
            except ValueError:
                return float("nan")
    return float("nan")


def groups():
    out = set()
    for line in ctl("listval").splitlines():
        ident = line.split()[-1]
        parts = ident.split("/")
        if len(parts) == 3 and parts[1].startswith("wallclock-"):
            out.add((parts[0], parts[1]))
    return sorted(out)


def main():
    print("demo: waiting for the first values (collectd log: %s)" % LOG)
    while True:
        time.sleep(INTERVAL)
        rows = []
        for host, plugin in groups():
            base = f"{host}/{plugin}/"
            vals = [value(base + "wallclock_us-" + c) / 1e6 for c in COLS]
            thr = value(base + "wallclock_threads")
            # a group's first value has no rate yet; gone groups linger
            if thr > 0 and all(v == v for v in vals):
                rows.append((plugin[len("wallclock-"):], thr, vals))
        if not rows:
            print("demo: no values yet")
            continue
        rows.sort(key=lambda r: -(r[2][0] if r[2][0] == r[2][0] else 0))
        print("\n%-20s %7s %8s %8s %8s %8s %8s" %
              ("group", "threads", "on-CPU", "runq", "sleep", "blocked",
               "steal"))
        for name, thr, vals in rows[:15]:
            print("%-20s %7.0f " % (name[:20], thr) +
                  " ".join("%8.2f" % v for v in vals))
        print("(thread-seconds per second; Ctrl-C stops)")


try:
    main()
except KeyboardInterrupt:
    pass
