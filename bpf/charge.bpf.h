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

#define split_missed() count(WC_CNT_SWITCHES_MISSED)
#include "split.h"

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
 * and run-queue total as of then.  Its first value is built in the
 * calling program's scratch: on the BPF stack it would take half of what
 * the switch hook's program and the user stack walk's loop may share. */
static __always_inline struct wc_task *create(struct task_struct *task,
					      __u64 ckpt, __u32 state,
					      __u64 exec_ns, __u64 rd_ckpt,
					      __u32 which)
{
	struct scratch *sc = scratch_buf(which);
	struct wc_task *init, *t;

	if (!sc) {
		count(WC_CNT_STORAGE_FAILED);
		return NULL;
	}
	init = &sc->init;
	__builtin_memset(init, 0, sizeof(*init));
	init->id = __sync_fetch_and_add(&next_id, 1) + 1;
	init->state = state;
	init->ckpt = ckpt;
	init->exec_ns = exec_ns;
	init->sample_exec_ns = exec_ns;
	init->rd_ckpt = rd_ckpt;
	init->place = WC_PLACES;
	t = bpf_task_storage_get(&tasks, task, init,
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
						   bool running, __u32 which)
{
	__u64 rd = task->sched_info.run_delay;
	__u64 arrived = task->sched_info.last_arrival;

	if (load_mono_ns && task->start_time >= load_mono_ns && running &&
	    arrived > rd && arrived <= now)
		return create(task, arrived - rd, WC_RUNQ, 0, 0, which);
	return create(task, now, state, task->se.sum_exec_runtime, rd, which);
}

/* How much of a wait since the checkpoint was spent in the run queue, up
 * to `now` (runq_grown). */
static __always_inline __u64 runq_part(struct task_struct *task, __u64 rd_ckpt,
				       __u64 now)
{
	return runq_grown(task->sched_info.run_delay,
			  task->sched_info.last_queued, rd_ckpt, now);
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
