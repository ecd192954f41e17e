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
    # groups with a row in the newest read hold a slot now
    newest = max(t for t, _ in cd.csv("", "gauge", "groups"))
    held = [g for g in cd.groups() if g.startswith("idle") and any(
        t >= newest for t, _ in cd.csv(g, "wallclock_us", "sleep"))]
    waiting = cd.last("", "gauge", "processes_waiting")
    print(f"# groups: {len(held)} of {MAX_GROUPS} slots held by idle "
          f"processes of nobody ({sorted(held)}), {waiting:.0f} "
          "processes waiting")
    case("the premise: every slot is taken, idle processes of nobody hold "
         "some", held and waiting >= 1, f"{held}, {waiting} waiting")
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
            if "gives its slot to busysvc" in ln]
    print("# groups: " + "; ".join(ln.split("plugin: ", 1)[-1]
                                   for ln in said))
    case("and logged: a quieter group gave its slot to the service",
         len(said) == 1, cd.log()[-800:])
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
