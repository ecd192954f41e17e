/* SPDX-License-Identifier: GPL-2.0 */
/*
 * charge.bpf.h - a thread's entry and the arithmetic that splits a
 * stretch of its time into on-CPU, run queue, sleep, blocked and steal.
 *
 * Writers: one per entry at a time (the kernel serialises a thread's
 * switches); begin_write/end_write let the walk read it meanwhile.
 *
 * Included once, in order, by wallclock.bpf.c.
 */
#ifndef WC_CHARGE_BPF_H
#define WC_CHARGE_BPF_H

/* The idle tasks all have pid 0: they are not threads anyone profiles. */
static __always_inline bool profiled(struct task_struct *t)
{
	if (t->pid == 0)
		return false;
	return include_kthreads || !(t->flags & K_PF_KTHREAD);
}

/* State after a switch-out.  Test bits, not values: TASK_IDLE and
 * TASK_KILLABLE are combinations, and an idle kernel wait is not I/O. */
static __always_inline __u32 state_of(unsigned int st)
{
	if (st == K_TASK_RUNNING || (st & K_TASK_WAKING))
		return WC_RUNQ;
	if ((st & K_TASK_UNINTERRUPTIBLE) && !(st & K_TASK_NOLOAD))
		return WC_BLOCKED;
	return WC_SLEEP;
}

/* A task's run-queue clock (of the CPU it is on, or last ran on).  Reached
 * through the task, not the runqueues per-CPU symbol, which kernels without
 * CONFIG_KALLSYMS_ALL cannot resolve. */
static __always_inline __u64 rq_clock_of(struct task_struct *t)
{
	struct cfs_rq *cfs = t->se.cfs_rq;
	unsigned long rq;

	if (bpf_core_field_exists(cfs->rq))
		return cfs->rq->clock;
	/* without FAIR_GROUP_SCHED every cfs_rq is the one inside its rq */
	rq = (unsigned long)BPF_CORE_READ(t, se.cfs_rq) -
	     bpf_core_field_offset(struct rq, cfs);
	return BPF_CORE_READ((struct rq *)rq, clock);
}

/* Storage for a thread, in state since ckpt, with the kernel's run time
 * and run-queue total as of then. */
static __always_inline struct wc_task *create(struct task_struct *task,
					      __u64 ckpt, __u32 state,
					      __u64 exec_ns, __u64 rd_ckpt)
{
	struct wc_task init = {};
	struct wc_task *t;

	init.id = __sync_fetch_and_add(&next_id, 1) + 1;
	init.state = state;
	init.ckpt = ckpt;
	init.exec_ns = exec_ns;
	init.sample_exec_ns = exec_ns;
	init.rd_ckpt = rd_ckpt;
	init.place = WC_PLACES;
	t = bpf_task_storage_get(&tasks, task, &init,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		count(WC_CNT_STORAGE_FAILED);
	return t;
}

/*
 * A thread met for the first time (by a switch-out, a sample or the
 * iterator), in state at now.  One started since we loaded and running
 * (for the first time: any switch-out would have met it) is ours from its
 * first stay in the run queue: it waited run_delay for the arrival and
 * has run since, from nothing.  Any other starts now (one the iterator
 * finds queued and never run loses the microseconds it has waited so
 * far).
 */
static __always_inline struct wc_task *first_sight(struct task_struct *task,
						   __u64 now, __u32 state,
						   bool running)
{
	__u64 rd = task->sched_info.run_delay;
	__u64 arrived = task->sched_info.last_arrival;

	if (load_mono_ns && task->start_time >= load_mono_ns && running &&
	    arrived > rd && arrived <= now)
		return create(task, arrived - rd, WC_RUNQ, 0, 0);
	return create(task, now, state, task->se.sum_exec_runtime, rd);
}

static __always_inline __u32 slot(__u32 st)
{
	opaque(st);
	return st & 3;
}

/*
 * How much of a wait since the checkpoint was spent in the run queue, up
 * to `now` on the clock of the CPU looking: what schedstat's run_delay
 * grew by, plus a stay in the run queue still under way (run_delay counts
 * it only once the thread runs).  A wait that ends in the run queue of
 * another CPU than it began on (the thread migrated) adds up the same.
 */
static __always_inline __u64 runq_part(struct task_struct *task,
				       __u64 rd_ckpt, __u64 now)
{
	__u64 rd = task->sched_info.run_delay;
	__u64 queued = task->sched_info.last_queued;

	if (queued && now > queued)
		rd += now - queued;
	return rd > rd_ckpt ? rd - rd_ckpt : 0;
}

/* What a wait of wall nanoseconds, rq of them in the run queue (from
 * runq_part), spent asleep: a thread that went to sleep slept until it
 * was woken, and waited for a CPU from then on. */
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

static __always_inline void begin_write(struct wc_task *t)
{
	WRITE_ONCE(t->seq, t->seq + 1);
	barrier();
}

static __always_inline void end_write(struct wc_task *t)
{
	barrier();
	WRITE_ONCE(t->seq, t->seq + 1);
}

/* Enter state at `now`: every stretch starts on the clock of the run queue
 * where its event happened, even when that reads a little behind the old
 * checkpoint (another CPU's clock, or one the scheduler skipped updating);
 * the kernel does the same. */
static __always_inline void enter(struct wc_task *t, __u32 state, __u64 now,
				  __u64 exec_ns)
{
	t->ckpt = now;
	t->exec_ns = exec_ns;
	t->state = state;
}

#endif /* WC_CHARGE_BPF_H */
