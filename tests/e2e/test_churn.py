#!/usr/bin/env python3
"""Bounded groups, and threads and processes that come and go by the
thousand.

Part 1 (MaxGroups 3): six workloads with distinct names spin at once while
the host's own processes already hold the slots.  At every read at most
three automatic groups are dispatched besides "other"; the workloads
without a slot are counted as waiting and their threads and CPU time are
in "other", so no time is lost: "other" plus the workloads' own groups
gain at least their rusage.

Part 2: after a shorter warm-up churn, a workload creates ~300 short
threads a second for 8 s while a shell forks 1000 /bin/true (kernel
threads profiled too).  Every task that was created or alive meanwhile and
is gone (the kernel's fork count, /proc/stat "processes", and snapshots of
/proc) is seen exiting, no final record is dropped or lost, the tracked
thread count returns to its baseline (relative to the host's live
threads), collectd's RSS after the churn is within 1 MiB of its RSS after
the warm-up, and the churning group's on-CPU time over its whole life
matches the workload's rusage within 3 %.
"""
import os
import subprocess
import time

from wctest import (Collectd, Env, Workload, case, done, near, pct,
                    proc_stat, require_built, row_at, wait_until)

require_built()


def live_tasks():
    """{(tid, start time)} of every task now, and which are kernel
    threads."""
    tasks, kthreads = set(), set()
    for path in os.listdir("/proc"):
        if not path.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{path}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{path}/task/{tid}/stat") as f:
                    st = f.read()
            except OSError:
                continue
            fields = st[st.rindex(")") + 2:].split()
            key = (int(tid), int(fields[19]))
            tasks.add(key)
            if int(fields[6]) & 0x00200000:  # PF_KTHREAD
                kthreads.add(key)
    return tasks, kthreads


def tracked_vs_live(cd, n=3):
    """For the next n reads: gauge-threads minus the threads alive just
    after the read.  Not zero: tasks the task iterator does not show (a
    sandbox's init, say) are alive but never tracked; what matters is that
    the difference does not move."""
    out = []
    for _ in range(n):
        last = cd.csv("", "gauge", "threads")[-1][0]
        wait_until(lambda: cd.csv("", "gauge", "threads")[-1][0] > last,
                   3, 0.01)
        tasks, _ = live_tasks()
        out.append(cd.csv("", "gauge", "threads")[-1][1] - len(tasks))
    return sorted(out)


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def read_times(cd):
    return [t for t, _ in cd.csv("", "gauge", "groups")]


def part_max_groups(env):
    cd = env.collectd(interval=1, plugin_conf="MaxGroups 3")
    cd.start()
    cd.wait_rows("", "gauge", "groups", 2, 5)
    t_before = time.time()
    names = [f"wcw_mg{i}" for i in range(6)]
    work = [env.workload(n, "--spin", "1", "--seconds", "6") for n in names]
    for w in work:
        w.wait()
    t_after = time.time()
    wait_until(lambda: read_times(cd) and read_times(cd)[-1] > t_after + 1.2,
               5)
    rc = cd.stop()
    case("MaxGroups: collectd exits cleanly", rc == 0, f"exit status {rc}")

    groups = cd.groups()
    series = {g: cd.csv(g, "wallclock_threads") for g in groups}
    over = []
    for t, n in cd.csv("", "gauge", "groups"):
        present = [g for g, rows in series.items() if row_at(rows, t)]
        auto = [g for g in present if g != "other"]
        if len(auto) > 3 or n > 4:
            over.append(f"{t:.1f}: gauge {n:.0f}, groups {present}")
    case("at most 3 automatic groups besides other at every read",
         not over, "; ".join(over))
    slotted = [n for n in names if n in groups]
    waiting = len(names) - len(slotted)
    print(f"# workloads with a slot: {slotted or 'none'}; other groups: "
          f"{[g for g in groups if g not in names]}")
    during = [(t, v) for t, v in cd.csv("", "gauge", "processes_waiting")
              if t_before + 1.5 < t < t_after - 1.5]
    case("processes_waiting counts the workloads without a slot",
         during and max(v for _, v in during) >= max(1, waiting),
         f"{during}, {waiting} workloads without a slot")
    other_th = [(t, v) for t, v in cd.csv("other", "wallclock_threads")
                if t_before + 1.5 < t < t_after - 1.5]
    case("other holds the waiting workloads' threads",
         other_th and max(v for _, v in other_th) >= 2 * waiting,
         f"{other_th}, want >= {2 * waiting}")
    on = cd.csv("other", "wallclock_us", "oncpu")
    start = [r for r in on if r[0] < t_before]
    got = on[-1][1] - start[-1][1] if start else 0
    for n in slotted:
        got += cd.csv(n, "wallclock_us", "oncpu")[-1][1]
    cpu = sum(w.report()["rusage_ns"] for w in work) / 1e3
    case("no CPU time is lost: other + the workloads' groups >= 97% of "
         "their rusage", start and got >= 0.97 * cpu,
         f"{got:.0f} us vs rusage {cpu:.0f} us")


def part_churn(env):
    root = os.path.join(env.root, "churn")
    os.mkdir(root, 0o755)
    # Kernel threads are profiled too, so that every task the kernel
    # creates is one the plugin must see exit.  The tables are bounded by
    # MaxThreads and their pages are touched as new ids arrive: a first,
    # shorter churn warms them (and collectd's malloc arenas) up, so that
    # what the second one adds to the RSS would be a leak.
    # The accounting alone: the stack window grows up to its own bound
    # within a flush interval, which part_stack_churn checks.
    cd = Collectd(root, 1, "MaxGroups 1000\nMaxThreads 4096\n"
                  "KernelThreads true\nStacks false")
    cd.start()
    cd.wait_rows("", "gauge", "threads", 3, 8)
    warm = Workload(root, "wcw_warm", ["--churn", "300", "--churn-us", "500",
                                       "--seconds", "4"])
    subprocess.run(["/bin/bash", "-c",
                    "for i in $(seq 400); do /bin/true; done"])
    warm.wait()
    d0 = tracked_vs_live(cd)
    rss0, anon0 = status_kib(cd.pid, "VmRSS"), status_kib(cd.pid, "RssAnon")
    exits0 = cd.csv("", "derive", "exits")[-1][1]
    lost0 = cd.csv("", "derive", "threads_lost")[-1][1]
    # Snapshot, then count (and at the end count, then snapshot), so that
    # no task is both counted as created and found in the first snapshot.
    tasks0, _ = live_tasks()
    forks0 = proc_stat("processes")[0]

    w = Workload(root, "wcw_churn", ["--churn", "300", "--churn-us", "500",
                                     "--seconds", "8"])
    sh = subprocess.Popen(["/bin/bash", "-c",
                           "for i in $(seq 1000); do /bin/true; done"])
    sh.wait()
    w.wait()
    forks1 = proc_stat("processes")[0]
    tasks1, kthreads1 = live_tasks()
    t_end = time.time()
    new_alive = tasks1 - tasks0
    created = forks1 - forks0 - len(new_alive)
    old_gone = len(tasks0 - tasks1)
    wait_until(lambda: cd.csv("", "derive", "exits")[-1][0] > t_end + 2.2,
               6)
    d1 = tracked_vs_live(cd)
    exits1 = cd.csv("", "derive", "exits")[-1][1]
    rss1, anon1 = status_kib(cd.pid, "VmRSS"), status_kib(cd.pid, "RssAnon")
    rc = cd.stop()
    case("churn: collectd exits cleanly", rc == 0, f"exit status {rc}")

    print(f"# tasks created and gone: {created} "
          f"({len(new_alive)} new still alive, "
          f"{len(new_alive & kthreads1)} of them kernel threads); "
          f"older tasks gone: {old_gone}; exits counted: "
          f"{exits1 - exits0:.0f}")
    case("every task created (or alive) meanwhile and gone is seen exiting",
         exits1 - exits0 >= created + old_gone,
         f"exits +{exits1 - exits0:.0f}, tasks created and gone {created}, "
         f"older tasks gone {old_gone}")
    dropped = cd.csv("", "derive", "exits_dropped")
    case("no final record dropped", dropped and dropped[-1][1] == 0,
         f"{dropped[-1:]}")
    lost = cd.csv("", "derive", "threads_lost")[-1][1] - lost0
    case("no thread lost", lost == 0, f"threads_lost +{lost:.0f}")
    untracked = cd.csv("", "derive", "threads_untracked")
    case("no thread untracked", untracked and untracked[-1][1] == 0,
         f"{untracked[-1:]}")
    # The host's own thread count moves (other tests, builds): compare the
    # tracked count with the live one, before and after.
    print(f"# tracked minus live threads: before {d0}, after {d1}")
    case("tracked threads return to the baseline (tracked - live within "
         "5 of before)", abs(d1[1] - d0[1]) <= 5,
         f"tracked - live: before {d0}, after {d1}")
    print(f"# collectd RSS {rss0} -> {rss1} KiB, anonymous {anon0} -> "
          f"{anon1} KiB")
    case("collectd's RSS after the churn within 1 MiB of after warm-up",
         rss1 - rss0 <= 1024, f"VmRSS {rss0} -> {rss1} KiB, RssAnon "
         f"{anon0} -> {anon1} KiB")
    on = cd.csv("wcw_churn", "wallclock_us", "oncpu")
    got = on[-1][1] if on else 0
    cpu = w.report()["rusage_ns"] / 1e3
    case("the churning group's on-CPU time is its rusage within 3%",
         near(got, cpu, 0.03),
         f"{got:.0f} us vs rusage {cpu:.0f} us ({pct(got, cpu):+.2f}%)")


def part_stack_churn(env):
    """With stacks, churned processes' stacks and symbols are dropped once
    their flush is written: another churn as long as the last leaves the
    RSS where the last did.  The window's tables are allocated at their
    configured bound and their pages are touched as windows fill, so the
    first rounds raise a high-water mark; a leak would add to every round
    (1,800 processes a round: 1 KiB each is 1.8 MiB)."""
    root = os.path.join(env.root, "stackchurn")
    os.mkdir(root, 0o755)
    cd = Collectd(root, 1, "FlushInterval 2\nMinBlockMicroseconds 0")
    cd.start()
    rss, sym = [], []
    for rnd in range(4):
        w = Workload(root, f"wcw_sc{rnd}", ["--churn", "300", "--churn-us",
                                            "500", "--seconds", "6"])
        w.wait()
        time.sleep(5)  # two flushes: the window and its stacks are gone
        rss.append(status_kib(cd.pid, "VmRSS"))
        sym.append(round(cd.last("", "bytes", "symbol_cache") / 1024))
    files = len(os.listdir(cd.spool))
    rc = cd.stop()
    case("stack churn: collectd exits cleanly", rc == 0, f"status {rc}")
    # The symbol cache is bounded and reported on its own: a busy host
    # can leave a shared library's table to a later round.
    rest = [r - c for r, c in zip(rss, sym)]
    print(f"# RSS after each of 4 churns with stacks: {rss} KiB, of it "
          f"symbol cache {sym} KiB, {files} spool files")
    case("stack churn: RSS less the symbol cache after the fourth churn "
         "within 1 MiB of after the third", rest[3] - rest[2] <= 1024,
         f"{rest} KiB")


with Env("churn") as env:
    part_max_groups(env)
    part_churn(env)
    part_stack_churn(env)
done()
