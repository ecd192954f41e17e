#!/usr/bin/env python3
"""The folded files against independent tools on the same workload:
`perf record -g` (Debian's linux-perf) for on-CPU stacks and Debian's
libbpf-tools `offcputime` for off-CPU stacks, run at the same time as the
plugin.  Their top stacks must name the same functions, and the shares and
rates must agree.

Both peers walk frame pointers only, so they cannot see the caller of a
libc function (offcputime shows `clock_nanosleep;sleeper`, where the
plugin shows `sleeper;sleep_a_while;...;clock_nanosleep`): the comparison
is on the frames both can see.
"""
import os
import shutil
import subprocess
import time

from wctest import (Env, bpftool_list, case, done, flush_stamps,
                    folded_files, folded_lines, folded_time, require_built,
                    skip, wait_until)

GROUP = "wcw_cmp"      # the spinner, for perf
SLEEPER = "wcw_cmps"   # the sleeper alone, for offcputime
PEER_SECONDS = 6
FLUSH = 2


def perf_samples(data):
    """[[function names, leaf first]] from perf script."""
    out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"],
                         capture_output=True, text=True).stdout
    samples, cur = [], []
    for line in out.splitlines():
        if not line.strip():
            if cur:
                samples.append(cur)
            cur = []
            continue
        parts = line.split(None, 1)
        cur.append(parts[1].split("+")[0] if len(parts) > 1 else "?")
    if cur:
        samples.append(cur)
    return samples


def offcpu_stacks(text):
    """[(frames leaf first, us)] from offcputime's default output."""
    stacks, frames, want_value = [], [], False
    for line in text.splitlines():
        s = line.strip()
        if not s:
            frames, want_value = [], False
            continue
        if want_value:
            if s.isdigit():
                stacks.append((frames, int(s)))
            frames, want_value = [], False
        elif s.startswith("- "):
            want_value = True
        else:
            frames.append(s)
    return stacks


def windows_inside(cd, group, t0, t1):
    """Files whose whole window lies inside [t0, t1], with its length: the
    group's stamps at the reads that wrote the previous file and this one
    (the seconds in the names are a second off when a read is late)."""
    files = folded_files(cd.spool)
    stamps = flush_stamps(cd, group, files)
    out = []
    for prev, cur in zip(files, files[1:]):
        a, b = stamps.get(prev), stamps.get(cur)
        if a is not None and b is not None and a >= t0 and b <= t1:
            out.append((cur, b - a))
            print(f"# window {os.path.basename(cur)}: {b - a:.3f} s by "
                  f"the reads' stamps, {folded_time(cur) - folded_time(prev)}"
                  " s by the names")
    return out


require_built()
if not shutil.which("offcputime") or not shutil.which("perf"):
    skip("compare with perf and offcputime",
         "needs linux-perf and libbpf-tools (tests/deps.sh installs them)")
    done()
with Env("compare") as env:
    cd = env.collectd(interval=1, plugin_conf=f"FlushInterval {FLUSH}\n"
                      "SampleFrequency 99\nMinBlockMicroseconds 1000\n")
    cd.start()
    w = env.workload(GROUP, "--spin", "1", "--seconds",
                     str(PEER_SECONDS + 4))
    ws = env.workload(SLEEPER, "--sleep", "1", "--sleep-ms", "20",
                      "--seconds", str(PEER_SECONDS + 4))
    time.sleep(1.5)
    data = os.path.join(env.root, "perf.data")
    perf = subprocess.Popen(
        ["perf", "record", "-q", "-F", "99", "-g", "-p", str(w.pid), "-o",
         data, "--", "sleep", str(PEER_SECONDS)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # offcputime's own clock starts when its programs are attached, a
    # few hundred ms after it starts: watch for them.
    before = {p["id"] for p in bpftool_list("prog")}
    offp = subprocess.Popen(["offcputime", "-p", str(ws.pid), "-m", "1000",
                             str(PEER_SECONDS)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    def peer_ids():
        return [p["id"] for p in bpftool_list("prog") if p["id"] not in
                before and p.get("name", "").startswith("sched_switch")]

    wait_until(peer_ids, 10, 0.02)
    t0 = time.time()
    ids = peer_ids()
    # ... and stops when they are detached, before it symbolizes
    time.sleep(PEER_SECONDS - 0.5)
    wait_until(lambda: subprocess.run(
        ["bpftool", "prog", "show", "id", str(ids[0])],
        capture_output=True).returncode != 0, 10, 0.02)
    t1 = time.time()
    out, err = offp.communicate(timeout=30)
    perf.wait(timeout=30)
    w.wait()
    ws.wait()
    wait_until(lambda: any(folded_time(p) > t1 + FLUSH for p in
                           folded_files(cd.spool)), 10)
    cd.stop()
    inside = windows_inside(cd, SLEEPER, t0, t1)
    case("some flush windows lie inside the peers' run", len(inside) >= 1,
         f"{len(inside)} of {os.listdir(cd.spool)}")

    # On-CPU: share of the process's time in spinner;burn_cpu.
    samples = perf_samples(data)
    perf_burn = sum(1 for s in samples if "burn_cpu" in s
                    and "spinner" in s)
    our_total = our_burn = 0
    for path, _ in inside:
        for fr, v in folded_lines(path):
            if fr[0] == GROUP and fr[1] == "[on-cpu]":
                our_total += v
                if "burn_cpu" in fr and "spinner" in fr:
                    our_burn += v
    p_perf = perf_burn / len(samples) if samples else 0
    p_ours = our_burn / our_total if our_total else 0
    print(f"# on-CPU in spinner;burn_cpu: perf {100 * p_perf:.1f}% of "
          f"{len(samples)} samples, wallclock {100 * p_ours:.1f}% of "
          f"{our_total} us")
    case("perf recorded the workload", len(samples) > 100,
         f"{len(samples)} samples; {perf.stderr.read()[-300:]}")
    case("on-CPU: the top stack is spinner;burn_cpu for both, shares "
         "within 5 points", p_perf > 0.5 and p_ours > 0.5 and
         abs(p_perf - p_ours) <= 0.05,
         f"perf {p_perf:.3f}, ours {p_ours:.3f}")

    # Off-CPU: the top stacks name the same path, and the sleeper's
    # off-CPU rate agrees.
    stacks = sorted(offcpu_stacks(out), key=lambda s: -s[1])
    case("offcputime recorded the workload", bool(stacks),
         out[-500:] + err[-500:])
    if stacks:
        top, top_us = stacks[0]
        # every stack of the sleeper's naps, not just the top one (a stack
        # table collision or a truncated walk splits them)
        peer_rate = sum(us for fr, us in stacks if "sleeper" in fr and
                        "hrtimer_nanosleep" in fr) / (t1 - t0)
        mine, secs, runq = {}, 0, 0
        for path, length in inside:
            secs += length
            for fr, v in folded_lines(path):
                if fr[0] != SLEEPER:
                    continue
                # the process's run-queue wait is the sleeper's (its
                # main thread only waits in pthread_join)
                if fr[1] == "[off-cpu runqueue]":
                    runq += v
                # stacks, not the made-up remainder lines, and not the
                # main thread's one wait in pthread_join (a futex), under
                # way the whole run: offcputime charges waits when they
                # end, the plugin at every flush too
                if fr[1] == "[off-cpu sleep]" and not fr[2].startswith("[") \
                        and not any(f.startswith("futex_") for f in fr):
                    key = ";".join(fr)
                    mine[key] = mine.get(key, 0) + v
        mine_top = max(mine, key=mine.get).split(";") if mine else []
        our_rate = (sum(v for k, v in mine.items() if ";sleeper;" in k)
                    + runq) / secs if secs else 0
        shared = {"sleeper", "hrtimer_nanosleep"}
        our_names = {f.replace("_[k]", "") for f in mine_top}
        print(f"# off-CPU top stack, offcputime ({peer_rate / 1e6:.3f} "
              f"s/s): {';'.join(reversed(top))}")
        print(f"# off-CPU top stack, wallclock ({our_rate / 1e6:.3f} s/s "
              f"under sleeper, run queue included): {';'.join(mine_top)}")
        case("off-CPU: both top stacks go through sleeper and "
             "hrtimer_nanosleep", shared <= set(top) and
             shared <= our_names, f"{set(top)} / {our_names}")
        # offcputime counts from switch-out to switch-in (the sleep and
        # the run-queue wait after it, so the plugin's figure adds the
        # process's run-queue time).  It can only lose time: naps whose
        # switch-in the tracepoint misses (0.3-3 % of switches here), naps
        # its start and stop cut, and, measured on a loaded VM, up to a
        # quarter more.  The plugin's figure is checked against schedstat
        # in test_folded.py; here: never less than the peer saw, and not
        # wildly more.
        case("off-CPU: the peer's sleeper off-CPU rate is at most the "
             "plugin's (+3%) and at least 70% of it",
             secs >= 0.75 * FLUSH and 0.7 * our_rate <= peer_rate <= 1.03 *
             our_rate, f"offcputime {peer_rate:.0f} us/s, wallclock "
             f"{our_rate:.0f} us/s over {secs:.3f} s")
done()
