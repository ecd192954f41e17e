#!/usr/bin/env python3
"""Start and stop collectd with the plugin three times in a row.

Each time: values flow (the self metrics and a workload's group), exactly
the expected BPF programs are loaded while it runs (found through the
file descriptors collectd holds, so tests running side by side do not
confuse the count), it exits with status 0 after SIGTERM, the log has no
error or warning from the plugin, and afterwards none of the programs and
links it held exists any more, nor any other unowned wc_* program.
"""
import os

from wctest import (Collectd, Env, bpf_fd_ids, bpftool_list, case, done,
                    kernel_delays_dequeue, leaked_bpf, require_built,
                    wait_until)

EXPECTED = {"wc_switch", "wc_sample", "wc_iter", "wc_waits", "wc_snap"}
# where the kernel delays dequeues, the hooks that mend stale queue stamps
STALE = {"wc_migrate", "wc_wakeup"} if kernel_delays_dequeue() else set()
ROUNDS = 3

# The README's table of self metrics, as type-instance.
SELF_METRICS = [
    "derive-samples", "derive-samples_late", "derive-samples_misplaced",
    "derive-idle_samples",
    "derive-samples_lost", "derive-storage_failed", "derive-exits",
    "derive-exits_dropped", "derive-exits_dropped_us",
    "derive-threads_lost", "derive-threads_untracked",
    "derive-groups_taken_over",
    "derive-torn_reads", "derive-switches_missed",
    "derive-switches_charged", "derive-runq_stamps_stale",
    "derive-runq_stale_us", "derive-runq_stale_unmended", "derive-walk_runs",
    "derive-walk_refills", "derive-walk_failures", "derive-read_errors",
    "gauge-threads", "gauge-processes", "gauge-groups",
    "gauge-processes_waiting", "gauge-cpus", "gauge-capabilities_missing",
    "percent-exit_ring_fill",
    "percent-table_fill", "duration-read",
    # with Stacks true (the default)
    "derive-stacks_full", "derive-stack_counts_full", "derive-stack_errors",
    "derive-weights_unowned",
    "derive-offcpu_stacks", "derive-offcpu_no_user_stack",
    "derive-offcpu_user_missed", "derive-offcpu_walks_unused",
    "derive-waits_under_way", "derive-waits_unwalked",
    "derive-stacks_truncated", "derive-stacks_known", "derive-stacks_copied",
    "total_time_in_ms-drain",
    "derive-window_weights_dropped", "derive-window_stacks_dropped",
    "derive-stacks_lost", "derive-frames", "derive-frames_named",
    "derive-symbol_cache_hits", "derive-symbol_cache_misses",
    "derive-flush_memo_hits", "derive-flush_memo_misses",
    "derive-spool_files", "derive-spool_write_errors", "gauge-window_stacks",
    "gauge-flush_lines", "bytes-symbol_cache", "bytes-spool",
]

require_built()
with Env("lifecycle") as env:
    # outlives the rounds however slowly collectd starts (the verifier
    # beside CPU hogs: over 10 s a start); killed after them
    w = env.workload("wcw_life", "--sleep", "1", "--sleep-ms", "20",
                     "--seconds", "600")
    for rnd in range(1, ROUNDS + 1):
        tag = f"round {rnd}"
        root = os.path.join(env.root, f"round{rnd}")
        os.mkdir(root, 0o755)
        cd = Collectd(root, 1, "")
        cd.start()
        ok = cd.wait_rows("wcw_life", "wallclock_us", "sleep", 3, 10)
        rows = cd.csv("wcw_life", "wallclock_us", "sleep")
        case(f"{tag}: group values flow", ok and rows[-1][1] > rows[0][1],
             f"rows {rows}")
        # dispatched after the groups' (and the flush) in the same read
        case(f"{tag}: self metrics flow",
             cd.wait_rows("", "derive", "samples", 3, 5),
             f"{cd.csv('', 'derive', 'samples')}")
        if rnd == 1:
            missing = [m for m in SELF_METRICS
                       if not cd.csv("", *m.split("-", 1))]
            case("every documented self metric is dispatched", not missing,
                 f"missing {missing}")
            fills = [cd.csv("", "percent", k)[-1][1]
                     for k in ("exit_ring_fill", "table_fill")]
            case("fill levels are percentages, the thread table's above 0",
                 all(0 <= f <= 100 for f in fills) and fills[1] > 0,
                 f"{fills}")
        progs, links = bpf_fd_ids(cd.pid)
        names = {p["id"]: p["name"] for p in bpftool_list("prog")
                 if p["id"] in progs}
        case(f"{tag}: exactly the expected programs are loaded",
             sorted(names.values()) == sorted(EXPECTED | STALE),
             f"collectd holds {sorted(names.values())}")
        link_progs = {lk["id"]: lk.get("prog_id")
                      for lk in bpftool_list("link") if lk["id"] in links}
        ncpu = int(cd.csv("", "gauge", "cpus")[-1][1])
        case(f"{tag}: links: the switch tracepoint, the two iterators "
             f"(records, waits under way), one sampler per CPU ({ncpu}), "
             f"{len(STALE)} for stale queue stamps",
             len(link_progs) == 3 + ncpu + len(STALE)
             and set(link_progs.values()) <= set(names),
             f"links {link_progs}")
        rc = cd.stop()
        case(f"{tag}: collectd exits with status 0", rc == 0,
             f"exit status {rc}")
        bad = cd.wallclock_errors(("error", "warning"))
        case(f"{tag}: no wallclock errors or warnings in the log", not bad,
             "\n".join(bad))

        def left():
            return ({p["id"] for p in bpftool_list("prog")} & set(names),
                    {lk["id"] for lk in bpftool_list("link")}
                    & set(link_progs))
        # The kernel frees tracing programs after an RCU grace period.
        gone = wait_until(lambda: left() == (set(), set()), 10, 0.2)
        case(f"{tag}: its programs and links are gone", gone,
             "after 10 s still: programs %s, links %s" % left())
        left = leaked_bpf()
        case(f"{tag}: no unowned wc_* programs, links or maps of ours",
             not any(left), str(left))
    w.kill()
done()
