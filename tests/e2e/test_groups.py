#!/usr/bin/env python3
"""Fair groups, end to end: 60 idle processes of user nobody, each under a
name of its own, hold every MaxGroups slot (10) before a busy root
service starts.  The service must win a slot within a few reads (the
quietest group's, logged and counted in groups_taken_over), keep it read
after read (hysteresis: no flapping), and the names still waiting are
counted in processes_waiting.
"""
import os
import subprocess
import time

from wctest import (Env, case, done, require_built, wait_until)

IDLE = 60
MAX_GROUPS = 10

require_built()
with Env("groups") as env:
    bindir = os.path.join(env.root, "bin")
    os.makedirs(bindir)
    idle = []
    for i in range(IDLE):
        link = os.path.join(bindir, f"idle{i:02d}")
        os.symlink("/bin/sleep", link)
        idle.append(subprocess.Popen(
            ["setpriv", "--reuid=nobody", "--regid=nogroup",
             "--clear-groups", link, "300"]))
    cd = env.collectd(interval=1, plugin_conf=f"MaxGroups {MAX_GROUPS}")
    cd.start()
    # the idle names take the slots; then they hold them ten reads at least
    wait_until(lambda: len(cd.csv("", "gauge", "groups")) >= 12, 30, 0.5)
    groups = cd.groups()
    held = [g for g in groups if g.startswith("idle")]
    print(f"# groups: {len(held)} of {MAX_GROUPS} slots held by idle "
          f"processes of nobody: {sorted(held)}")
    case("the idle processes hold slots", len(held) >= MAX_GROUPS // 2,
         str(groups))
    busy = env.workload("busysvc", "--spin", "1", "--seconds", "60")
    began = time.time()
    got = wait_until(lambda: "busysvc" in cd.groups(), 15, 0.5)
    took = time.time() - began
    print(f"# groups: the busy service got a slot {took:.1f} s after it "
          "started")
    case("the busy service wins a slot within a few reads", got,
         str(cd.groups()))
    over = cd.last("", "derive", "groups_taken_over")
    case("the slot changing hands is counted", over >= 1, str(over))
    said = [ln for ln in cd.log().splitlines()
            if "busysvc" in ln and "wallclock" in ln]
    case("and logged, naming the group that got it", said, cd.log()[-800:])
    waiting = cd.last("", "gauge", "processes_waiting")
    case("the names still waiting are counted", waiting >= 1, str(waiting))
    # kept: a row every read from then on
    t0 = time.time()
    time.sleep(10)
    rows = [t for t, _ in cd.csv("busysvc", "wallclock_us", "oncpu")
            if t >= t0]
    gaps = [b - a for a, b in zip(rows, rows[1:])]
    case("and keeps it, read after read (no flapping)",
         len(rows) >= 8 and max(gaps, default=99) < 2.5,
         f"{len(rows)} rows in 10 s, longest gap {max(gaps, default=0):.1f}")
    busy.kill()
    for p in idle:
        p.kill()
        p.wait()
    case("collectd exits cleanly", cd.stop() == 0)
done()
