/* SPDX-License-Identifier: GPL-2.0 */
/*
 * split.h - how a thread's time since its checkpoint splits into on-CPU,
 * run queue, sleep, blocked and steal: plain arithmetic on the kernel's
 * counters, included by the BPF programs (charge.bpf.h) and by the unit
 * test that tries the hard cases in user space (tests/unit/bpf).
 *
 * Owns nothing: pure functions on integers.  Invariant: what a stretch
 * charges adds up to its wall time, however the counters disagree (two
 * CPUs' clocks, a clock update the scheduler skipped, a switch nobody
 * saw): every difference is clamped at 0 and the run time wins.
 */
#ifndef WC_SPLIT_H
#define WC_SPLIT_H

#ifndef __bpf__
#include <linux/types.h>
#endif
#include "wallclock.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif
#ifndef opaque
#define opaque(x) ((void)(x))
#endif
/* Called where a switch went unseen or a wait's end cannot be placed: the
 * BPF side counts it (switches_missed), a test notes it. */
#ifndef split_missed
#define split_missed() ((void)0)
#endif

/* Run time this far beyond the stint since the last arrival means a
 * switch-out went unseen. */
#define UNSEEN_RUN_NS 2000000ULL

/* The run time of quick stints since the checkpoint, when their quick
 * slot was lost. */
#define BEFORE_UNKNOWN (~0ULL)

static __always_inline __u32 slot(__u32 st)
{
	opaque(st);
	return st & 3;
}

/*
 * How much of a wait since the checkpoint was spent in the run queue, up
 * to `now` on the clock of the CPU looking: what schedstat's run_delay
 * (rd) grew by since rd_ckpt, plus a stay in the run queue still under way
 * since `queued` (run_delay counts it only once the thread runs).  A wait
 * that ends in the run queue of another CPU than it began on (the thread
 * migrated) adds up the same.
 */
static __always_inline __u64 runq_grown(__u64 rd, __u64 queued, __u64 rd_ckpt,
					__u64 now)
{
	if (queued && now > queued)
		rd += now - queued;
	return rd > rd_ckpt ? rd - rd_ckpt : 0;
}

/* What a wait of wall nanoseconds, rq of them in the run queue, spent
 * asleep: a thread that went to sleep slept until it was woken, and
 * waited for a CPU from then on. */
static __always_inline __u64 slept_part(__u64 wall, __u64 rq)
{
	return wall > rq ? wall - rq : 0;
}

/* Charge off-CPU time [from, to] whose first wait began in state st, rq of
 * it in the run queue.  Returns the part slept.  It may hold several waits
 * (switch-outs that took the quick path): those were all sleeps or
 * preemptions, so what a preemption's run queue time leaves is sleep. */
static __always_inline __u64 add_wait(__u64 *times, __u32 st, __u64 from,
				      __u64 to, __u64 rq)
{
	__u64 wall = to > from ? to - from : 0, slept;

	if (st != WC_RUNQ && st != WC_SLEEP && st != WC_BLOCKED)
		return 0;
	slept = slept_part(wall, rq);
	times[WC_T_RUNQ] += wall - slept;
	times[slot(st == WC_RUNQ ? WC_SLEEP : st)] += slept;
	return slept;
}

/* Charge an on-CPU stretch: the kernel's run time, and steal for the rest
 * of its wall time (if the kernel counted more, as it does across a
 * skipped clock update, the run time wins: it is the number users compare
 * with). */
static __always_inline void add_run(__u64 *times, __u64 from, __u64 to,
				    __u64 exec_from, __u64 exec_to)
{
	__u64 run = exec_to > exec_from ? exec_to - exec_from : 0;
	__u64 wall = to > from ? to - from : 0;

	times[WC_T_ONCPU] += run;
	if (wall > run)
		times[WC_T_STEAL] += wall - run;
}

/* What a switch-out knows of its thread's time since the checkpoint. */
struct wc_stretch {
	__u64 start;	 /* the checkpoint, on the run queue's clock */
	__u64 now;	 /* this switch-out, on the same clock */
	__u64 arrived;	 /* the last arrival on a CPU (last_arrival) */
	__u64 exec_ckpt; /* se.sum_exec_runtime at the checkpoint */
	__u64 exec_now;	 /* and now */
	__u64 before;	 /* run of quick stints since start, BEFORE_UNKNOWN */
	__u32 state;	 /* the state entered at the checkpoint */
};

/*
 * Charge the stretch's run and steal into times as the thread switches out
 * again: the last wait ended when it last arrived on a CPU, and it has run
 * since.  Run time well beyond the stint since the arrival means a
 * switch-out went unseen (two stints, two waits): the waits then get what
 * the run leaves of the wall time.  `before` ran in stints since the
 * checkpoint whose switch-outs were quick, so had no steal: the rest of
 * the time up to this stint was waiting; unknown (the quick slot was
 * lost), this stint is taken to have had none.  Returns how long the waits
 * were, for add_wait (with the run queue's part up to the arrival).
 */
static __always_inline __u64 split_stretch(__u64 *times,
					   const struct wc_stretch *s)
{
	__u64 wall = s->now > s->start ? s->now - s->start : 0;
	__u64 run = s->exec_now > s->exec_ckpt ? s->exec_now - s->exec_ckpt : 0;
	__u64 stint = wall, off = 0, before = s->before;

	if (s->state == WC_ONCPU) {
		/* adopted running: no wait to end */
		before = 0;
	} else if (s->arrived < s->start || s->arrived > s->now) {
		split_missed(); /* no end to place */
		before = 0;
	} else {
		stint = s->now - s->arrived;
		off = s->arrived - s->start;
		if (before == BEFORE_UNKNOWN)
			before = run > stint ? run - stint : 0;
		if (before > run)
			before = run;
		if (before > off)
			before = off;
		off -= before;
		if (run - before > stint + UNSEEN_RUN_NS) {
			split_missed();
			off = wall > run ? wall - run : 0;
			before = 0;
		}
	}
	times[WC_T_ONCPU] += run;
	if (stint > run - before)
		times[WC_T_STEAL] += stint - (run - before);
	return off;
}

#endif /* WC_SPLIT_H */
