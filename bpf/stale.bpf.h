/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stale.bpf.h - queue stamps the kernel leaves stale on an asleep thread.
 *
 * With delayed dequeue (6.12 and later) a thread that sleeps may stay on
 * its run queue a while; one the load balancer or an affinity change
 * moves then gets sched_info.last_queued set as if it were runnable, and
 * nothing clears it.  When it wakes, the kernel adds its whole sleep
 * since the move to run_delay, so the wait would read as run queue time.
 * The move marks the entry with run_delay as it was (stale_rd); the
 * wake-up shifts the checkpoints by what was added since and will be at
 * the arrival, so only the run queue time after the wake-up counts.
 *
 * Writers: both hooks write only an asleep thread's entry, under its run
 * queue's lock, so never beside its own switch-out.
 *
 * Included once, in order, by wallclock.bpf.c, after switch.bpf.h.
 */
#ifndef WC_STALE_BPF_H
#define WC_STALE_BPF_H

/* sched_entity.sched_delayed, where the kernel has it. */
struct sched_entity___delayed {
	unsigned char sched_delayed;
} __attribute__((preserve_access_index));

static __always_inline bool delayed(struct task_struct *p)
{
	struct sched_entity___delayed *se = (void *)&p->se;

	if (!bpf_core_field_exists(se->sched_delayed))
		return false;
	return BPF_CORE_READ(se, sched_delayed);
}

/* p, asleep but still queued, is being moved to another CPU. */
static __always_inline void stale_mark(struct task_struct *p)
{
	struct wc_task *t;

	if (!delayed(p))
		return;
	t = bpf_task_storage_get(&tasks, p, 0, 0);
	if (!t || t->rd_stale)
		return;
	begin_write(t);
	t->stale_rd = p->sched_info.run_delay;
	t->rd_stale = 1;
	end_write(t);
	count(WC_CNT_RUNQ_STAMPS_STALE);
}

/* p is woken.  Its stamp is fresh if the enqueue just set it (on the same
 * clock reading): most wake-ups end here, without the task storage. */
static __always_inline void stale_mend(struct task_struct *p)
{
	__u64 lq = p->sched_info.last_queued, now, shift, key;
	struct wc_task *t;
	struct quick *q;

	if (!lq)
		return;
	now = rq_clock_of(p);
	if (lq >= now)
		return;
	t = bpf_task_storage_get(&tasks, p, 0, 0);
	if (!t || !t->rd_stale)
		return;
	/* run_delay less what it grew by since the move, less what the
	 * arrival will add for the time before now */
	shift = p->sched_info.run_delay + (now - lq);
	shift = shift > t->stale_rd ? shift - t->stale_rd : 0;
	begin_write(t);
	t->rd_ckpt += shift;
	t->rd_stale = 0;
	end_write(t);
	q = quick_of(p, &key);
	if (q && q->key == key)
		q->rd_dep += shift;
	count_n(WC_CNT_RUNQ_STALE_NS, shift);
}

#endif /* WC_STALE_BPF_H */
