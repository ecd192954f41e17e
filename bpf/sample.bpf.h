/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sample.bpf.h - the on-CPU sampler's ticks and stacks.
 *
 * Included once, in order, by wallclock.bpf.c.
 */
#ifndef WC_SAMPLE_BPF_H
#define WC_SAMPLE_BPF_H

/*
 * How many sample periods this sample stands for: the periods of the
 * cpu-clock count that began since the last sample on this CPU.  A timer
 * that fires late (a vCPU the hypervisor descheduled, interrupts held
 * off) skips the ticks it missed, and the count says how many.  A timer
 * is never early, so a period is counted when it begins, not when the
 * time since the last sample rounds to it: a tick that came half a period
 * late is one tick, not two.  When the same thread was running at the
 * previous sample on this CPU too, the missed ticks are credited to it,
 * instead of the profile of a busy VM quietly thinning out, but no more
 * than its own run time since covers: the clock also ran while the
 * hypervisor had the vCPU (steal), or while other threads ran between.
 * Otherwise (idle between, or another thread) the sample counts once at
 * most: nobody is credited with time it may not have had.
 */
static __always_inline __u64 ticks(struct bpf_perf_event_data *ctx, __u64 id,
				   __u64 exec_ns)
{
	const __u64 half = sample_period_ns / 2;
	struct bpf_perf_event_value v;
	__u32 zero = 0;
	struct last_sample *last = bpf_map_lookup_elem(&sample_clock, &zero);
	__u64 n = 1, period, ran;

	if (!last || bpf_perf_prog_read_value(ctx, &v, sizeof(v)))
		return 1;
	period = v.counter / sample_period_ns;
	/* the first sample here, or a count that went back or far ahead (a
	 * perf event restarted): one tick */
	if (last->period && period >= last->period &&
	    period - last->period <= 1000) {
		n = period - last->period;
		if (n > 1 && id && last->id == id) {
			ran = exec_ns > last->exec_ns ? exec_ns - last->exec_ns
						      : 0;
			ran = (ran + half) / sample_period_ns;
			if (n > ran)
				n = ran > 1 ? ran : 1;
		} else if (n > 1) {
			n = 1;
		}
	}
	last->period = period ? period : 1;
	last->id = id;
	last->exec_ns = exec_ns;
	return n;
}

/*
 * Whether this tick fell due before the running thread came on the CPU.
 * A timer interrupt held up (an emulated CPU whose host was busy, a long
 * stretch with interrupts off) is delivered to whoever runs when it
 * finally comes, so the ticks due in other threads' short runs would all
 * land on the long runners.  The timer is not moved on until this program
 * returns: its expiry is when the tick fell due (monotonic clock).  The
 * cpu-clock count has just been brought up to date from the clock the
 * scheduler stamps arrivals with, so the two spans compare.
 */
static __always_inline bool due_before_arrival(struct bpf_perf_event_data *ctx,
					       struct task_struct *task)
{
	struct bpf_perf_event_data_kern *k = (void *)ctx;
	__u64 arrived = task->sched_info.last_arrival, clock_now;
	struct perf_event *ev = NULL;
	__s64 due, late;

	if (bpf_probe_read_kernel(&ev, sizeof(ev), &k->event) || !ev ||
	    bpf_core_read(&due, sizeof(due), &ev->hw.hrtimer.node.expires) ||
	    bpf_core_read(&clock_now, sizeof(clock_now), &ev->hw.prev_count))
		return false;
	late = (__s64)bpf_ktime_get_ns() - due;
	return late > 0 && clock_now >= arrived &&
	       clock_now - arrived < (__u64)late;
}

static __always_inline void sample_stacks(struct bpf_perf_event_data *ctx,
					  struct task_struct *task,
					  struct wc_task *t)
{
	struct scratch *sc = scratch_buf(SCRATCH_SAMPLE);
	__u64 uh, kh, exec_ns = task->se.sum_exec_runtime, ran;
	long len;

	/* the scheduler updates the run time at its own ticks: nothing new
	 * since the last sample is nothing to weigh */
	if (!sc || exec_ns <= t->sample_exec_ns)
		return;
	ran = exec_ns - t->sample_exec_ns;
	t->sample_exec_ns = exec_ns;
	len = bpf_get_stack(ctx, sc->k.ip, sizeof(sc->k.ip), 0);
	kh = save_stack(&sc->k, len);
	uh = STACK_NONE;
	if (!(task->flags & K_PF_KTHREAD))
		if (walk_user(ctx, sc, task,
			      (struct pt_regs *)bpf_task_pt_regs(task)))
			uh = save_stack(&sc->u, (long)sc->u.nr * sizeof(__u64));
	add_weight(task->tgid, WC_ONCPU, uh, kh, ran);
}

#endif /* WC_SAMPLE_BPF_H */
