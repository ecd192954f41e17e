#!/usr/bin/env python3
"""Per-group accuracy in a real collectd against the kernel's schedstat.

Three workloads run under the plugin (csv writer, raw counters): three
spinners on a machine of two CPUs or fewer (on-CPU and run-queue wait), a
sleeper and a disk writer.  Over windows of a few seconds, bounded by
collectd's own dispatch times, on-CPU and run-queue time must match the
sum of /proc/PID/task/*/schedstat within 3 % (of the nearest value the
samples either side of each end allow), and on + off-CPU must match
threads x wall time within 3 %.  The spinners' on-CPU samples must lie
between their run time and their run time plus hypervisor steal, times
the frequency (README, "Late timer ticks").  The workloads run until
collectd has read them often enough for three windows: where reads come
seconds late (a starved emulated guest), longer than SECONDS.
"""
import os
import time

from wctest import (Env, SchedSampler, case, counter_window, done, pct,
                    require_built, wait_until)

HZ = 99
SECONDS = 14    # the workloads run this long at least,
LONGEST = 60    # and on until collectd has read them READS times
READS = 5       # inside their run: three windows, and one to spare
TOL = 0.03
GROUPS = ("wcw_spin", "wcw_sleep", "wcw_disk")


def count_tol(n):
    """Three standard deviations of a count of about n, or 10 % if more:
    ticks land on threads sharing a CPU by chance."""
    return max(0.10, 3 / (n + 1) ** 0.5)


require_built()
with Env("accuracy") as env:
    cd = env.collectd(interval=2, plugin_conf=f"SampleFrequency {HZ}")
    cd.start()
    spin = env.workload("wcw_spin", "--spin", "3", "--seconds", str(LONGEST))
    sleep = env.workload("wcw_sleep", "--sleep", "1", "--sleep-ms", "50",
                         "--seconds", str(LONGEST))
    disk = env.workload("wcw_disk", "--disk", "1", "--seconds", str(LONGEST),
                        "--dir", env.root)
    ss = SchedSampler([spin.pid, sleep.pid, disk.pid])
    pids = dict(zip(GROUPS, (spin.pid, sleep.pid, disk.pid)))
    start = min(w.started for w in (spin, sleep, disk))

    def reads_inside(group, until):
        rows = ss.rows[pids[group]]
        return [t for t, _ in cd.csv(group, "wallclock_us", "oncpu")
                if rows and rows[0][0] + 0.3 < t < until - 0.3]

    # A starved host (the emulated guest beside busy host CPUs) reads
    # late, seconds apart: the run lasts until the reads to compare came.
    wait_until(lambda: time.time() >= start + SECONDS and all(
        len(reads_inside(g, time.time())) >= READS for g in GROUPS),
        LONGEST - 5, step=0.5)
    end = time.time()
    for w in (spin, sleep, disk):
        w.kill()
        w.wait()
    ss.stop()
    print(f"# the workloads ran {end - start:.1f} s; reads inside: " +
          ", ".join(f"{g} {len(reads_inside(g, end))}" for g in GROUPS))
    cd.wait_rows("wcw_spin", "wallclock_us", "oncpu", 1, 5)
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")
    case("no wallclock errors logged", not cd.wallclock_errors(),
         "\n".join(cd.wallclock_errors()))

    def series(group):
        return {k: cd.csv(group, "wallclock_us", k) for k in
                ("oncpu", "offcpu", "runqueue", "sleep", "blocked")}

    def windows(w):
        """Dispatch times well inside the workload's life, paired into
        windows of two intervals."""
        times = reads_inside(w, min(end, ss_end(w) + 0.3))
        return list(zip(times, times[2:])) + ([(times[0], times[-1])]
                                              if len(times) > 3 else [])

    def ss_start(group):
        return ss.rows[pids[group]][0][0]

    def ss_end(group):
        """The last sample before any of the group's threads ended: the
        kernel's side sums the live threads, so a thread that ended takes
        its whole life out of it (killed at the run's end, the threads
        die one by one, and this side may see some gone already)."""
        rows = ss.rows[pids[group]]
        most = max(r[3] for r in rows)
        first = next(i for i, r in enumerate(rows) if r[3] == most)
        return next((rows[i - 1][0] for i in range(first + 1, len(rows))
                     if rows[i][3] < most), rows[-1][0])

    worst = {}
    read_rows = cd.csv("", "duration", "read")

    def read_took(t):
        """How long the read dispatched at t took: its values are stamped
        with the middle of its walk, each thread read somewhere in it."""
        near_rows = [v for u, v in read_rows if abs(u - t) < 0.5]
        return near_rows[0] if near_rows else 0.0

    def longest_wait(group, t0, t1):
        """The biggest step of the group's run-queue delay between two
        samples near [t0, t1] (us): schedstat adds a wait when it ends,
        the plugin up to its walk, so a wait under way at either end of a
        window is in one and not yet in the other (tens of milliseconds
        in a starved emulated guest, microseconds here)."""
        rows = [r for r in ss.rows[pids[group]] if t0 - 0.2 <= r[0] <= t1
                + 0.2]
        return max((b[2] - a[2] for a, b in zip(rows, rows[1:])),
                   default=0) / 1e3

    def compare(key, what, got, want, slack=0.0, span=None):
        """One window's value against the truth, keeping the worst error;
        slack (us): what the reads' own walks may put on either side;
        span (us): (lo, hi), where the samples either side of the window's
        ends put the truth, if they are further apart than the straight
        line's want shows (the 3 % is then of the nearest point in it)."""
        lo, hi = span or (want, want)
        lo, hi = min(lo, want), max(hi, want)
        off = 0.0 if lo <= got <= hi else min(abs(got - lo), abs(got - hi))
        worst[key] = max(worst.get(key, 0), abs(pct(got, want)))
        case(what, off <= max(TOL * abs(want), slack),
             f"plugin {got:.0f} us, truth {want:.0f} us "
             f"({pct(got, want):+.2f}%, samples put it in "
             f"[{lo:.0f}, {hi:.0f}], slack {slack:.0f} us)")

    for group, nthreads in zip(GROUPS, (4, 2, 2)):
        s = series(group)
        wins = windows(group)
        case(f"{group}: enough windows", len(wins) >= 3, f"{len(wins)}")
        # the kernel's side: reads every 20 ms, most of them kept
        case(f"{group}: the kernel's numbers were sampled",
             len(ss.rows[pids[group]]) >= 4 * SECONDS,
             f"{len(ss.rows[pids[group]])} samples")
        print(f"# {group}: {len(ss.rows[pids[group]])} schedstat samples "
              f"kept, {ss.rejected[pids[group]]} too slow to keep, "
              f"[{ss_start(group) - start:.1f}s, "
              f"{ss_end(group) - start:.1f}s]")
        # Read by read: a thread switched in unseen must not be reported
        # as waiting and then, once its switch-out rebuilds the stretch,
        # as running too (a counter that ran ahead stays ahead).  Each
        # thread was read up to half a walk away from its read's stamp
        # (walks of tens of milliseconds in a slow emulated guest).
        times = [t for t, _ in s["oncpu"]]
        over = []
        for a, b in zip(times, times[1:]):
            if a <= ss_start(group) + 0.3 or b >= end - 0.3:
                continue
            on = counter_window(s["oncpu"], a, b)
            off = counter_window(s["offcpu"], a, b)
            room = nthreads * (b - a + (read_took(a) + read_took(b)) / 2) \
                * 1e6
            if on and off and on[0] + off[0] > 1.03 * room + 5000:
                over.append(f"[{a:.1f},{b:.1f}] {on[0] + off[0]:.0f} us "
                            f"of {room:.0f}")
        case(f"{group}: no read shows more time than its threads had "
             "(on+off <= threads x interval + 3%)", not over,
             "; ".join(over[:5]))
        for t0, t1 in wins:
            on = counter_window(s["oncpu"], t0, t1)
            rq = counter_window(s["runqueue"], t0, t1)
            off = counter_window(s["offcpu"], t0, t1)
            k0, k1 = ss.at(pids[group], t0), ss.at(pids[group], t1)
            if not (on and rq and off and k0 and k1):
                case(f"{group} [{t0:.1f},{t1:.1f}] data", False,
                     f"missing: on {bool(on)} runq {bool(rq)} off "
                     f"{bool(off)} schedstat {bool(k0)} {bool(k1)}")
                continue
            wall_us = (t1 - t0) * 1e6
            # each thread read up to half a walk from its read's stamp
            walks = nthreads * (read_took(t0) + read_took(t1)) / 2 * 1e6
            k_on, k_rq = (k1[0] - k0[0]) / 1e3, (k1[1] - k0[1]) / 1e3
            b0, b1 = ss.bracket(pids[group], t0), ss.bracket(pids[group], t1)
            on_span = ((b1[0][0] - b0[0][1]) / 1e3,
                       (b1[0][1] - b0[0][0]) / 1e3)
            tag = f"{group} [{t0 - start:.1f}s,+{t1 - t0:.1f}s]"
            # too little to compare in relative terms is not compared
            if k_on > 0.05 * wall_us:
                compare(f"{group} oncpu",
                        f"{tag} on-CPU within 3% of schedstat", on[0], k_on,
                        walks, on_span)
            if k_rq > 0.05 * wall_us:
                compare(f"{group} runq",
                        f"{tag} run-queue within 3% of schedstat", rq[0],
                        k_rq, walks + 2 * longest_wait(group, t0, t1))
            compare(f"{group} on+off",
                    f"{tag} on+off within 3% of {nthreads} threads x wall",
                    on[0] + off[0], nthreads * wall_us)
        if not wins or not counter_window(s["oncpu"], *wins[-1]):
            continue    # failed above: too few windows, or missing data
        t0, t1 = wins[-1]
        on = counter_window(s["oncpu"], t0, t1)[0]
        if group == "wcw_spin":
            rq = counter_window(s["runqueue"], t0, t1)[0]
            case(f"spinners wait for a CPU (3 on {os.cpu_count()} CPUs)",
                 rq > 0.15 * 3 * (t1 - t0) * 1e6, f"runqueue {rq:.0f} us")
            smp = counter_window(cd.csv(group, "wallclock_samples"), t0, t1)
            # A tick that falls due while the hypervisor has the vCPU
            # comes late and counts if that steal was shorter than a
            # period; one skipped by longer steal is not credited (the
            # run time does not cover it).  So the count lies between run
            # time and run time plus steal, times the frequency.
            steal = counter_window(cd.csv(group, "wallclock_us", "steal"),
                                   t0, t1)
            steal = steal[0] if steal else 0.0
            lo, hi = on / 1e6 * HZ, (on + steal) / 1e6 * HZ
            late = counter_window(cd.csv("", "derive", "samples_late"),
                                  t0, t1)
            k0, k1 = ss.at(pids[group], t0), ss.at(pids[group], t1)
            ticks = [counter_window(cd.csv("", "derive", k), t0, t1)
                     for k in ("samples", "idle_samples",
                               "samples_misplaced")]
            nan = float("nan")
            print(f"# {group}: {smp[0] if smp else nan:.0f} samples for "
                  f"{on / 1e6:.3f} s on-CPU and {steal / 1e6:.3f} s of "
                  f"steal (schedstat "
                  f"{(k1[0] - k0[0]) / 1e9 if k0 and k1 else nan:.3f} s) "
                  f"at {HZ} Hz; "
                  f"{late[0] if late else nan:.0f} ticks credited late "
                  f"host-wide, {ticks[2][0] if ticks[2] else nan:.0f} "
                  "misplaced; "
                  f"all ticks {sum(x[0] for x in ticks if x):.0f} in "
                  f"{t1 - t0:.3f} s x {os.cpu_count()} CPUs", flush=True)
            lo_tol, hi_tol = count_tol(lo), count_tol(hi)
            case("samples between on-CPU and on-CPU plus steal seconds x "
                 f"frequency (-{lo_tol:.0%}, +{hi_tol:.0%})",
                 smp and lo * (1 - lo_tol) <= smp[0] <= hi * (1 + hi_tol),
                 f"{smp and smp[0]} samples, want {lo:.0f} to {hi:.0f} "
                 f"(host-wide, {late[0] if late else nan:.0f} ticks "
                 "credited late)")
        if group == "wcw_sleep":
            # of the time its threads neither ran nor waited for a CPU
            # (which a starved host makes long after each wake-up)
            sl = counter_window(s["sleep"], t0, t1)[0]
            rq = counter_window(s["runqueue"], t0, t1)[0]
            rest = 2 * (t1 - t0) * 1e6 - on - rq
            case("the sleeper's time is sleep (95% of what it neither ran "
                 "nor waited for a CPU)", sl > 0.95 * rest,
                 f"sleep {sl:.0f} us of {rest:.0f}")
        if group == "wcw_disk":
            # How long fdatasync waits depends on the disk, so the share
            # of wall time is not fixed; what is fixed is its kind: the
            # main thread sleeps (about one thread x wall of "sleep"),
            # and the writer's own waits must land in "blocked".
            bl = counter_window(s["blocked"], t0, t1)[0]
            sl = counter_window(s["sleep"], t0, t1)[0]
            writer_sleep = max(0.0, sl - (t1 - t0) * 1e6)
            case("the disk writer blocks (uninterruptible) in the window",
                 bl > 0.005 * (t1 - t0) * 1e6,
                 f"blocked {bl:.0f} us of {(t1 - t0) * 1e6:.0f}")
            case("the disk writer's waits are mostly uninterruptible",
                 bl > 2 * writer_sleep,
                 f"blocked {bl:.0f} us, writer's interruptible sleep "
                 f"{writer_sleep:.0f} us")
    for k, v in sorted(worst.items()):
        print(f"# worst error {k}: {v:.2f}%")
done()
