/* SPDX-License-Identifier: GPL-2.0 */
/*
 * waits.bpf.h - waits under way at a flush, charged to their stacks by
 * wc_waits, and the bound on the kernel stacks a flush walks for them.
 *
 * Included once, in order, by wallclock.bpf.c, after walk.bpf.h.
 */
#ifndef WC_WAITS_BPF_H
#define WC_WAITS_BPF_H

/* The kernel stack of a thread that waits, if the flush's walks are not
 * used up: a host of idle threads must not make a flush long. */
static __always_inline __u64 waiting_kstack(struct task_struct *task)
{
	struct scratch *sc;
	long len;

	if (!wait_walks) {
		count(WC_CNT_WAITS_UNWALKED);
		return WC_STACK_UNWALKED;
	}
	wait_walks--;
	sc = scratch_buf(SCRATCH_WALK);
	if (!sc)
		return STACK_NONE;
	len = bpf_get_task_stack(task, sc->k.ip, sizeof(sc->k.ip), 0);
	return save_stack(&sc->k, len);
}

/*
 * Right after the walk of a read that a flush follows: a wait under way
 * for at least MinBlock is charged to its stacks, for its part in the
 * window up to when the walk read the thread (the file's totals are that
 * read's counters), not only when it ends (it may not, for hours).  Its
 * kernel stack is walked once (it cannot change while the thread waits)
 * and named again at later flushes while user space holds it; its user
 * stack is the one parked as it began.  The wait began at the last
 * switch-out, as the switch-in will find.  A program of its own, not a
 * part of the walk: inside the open-coded walk's loops the verifier took
 * seconds over it.
 */
static __always_inline void charge_under_way(struct task_struct *task,
					     struct wc_task *t)
{
	__u32 kind = state_of(task->__state);
	__u64 exec_ns = task->se.sum_exec_runtime, key, start, now, mono, w, kh;
	struct quick *q;
	bool same;

	if ((kind != WC_SLEEP && kind != WC_BLOCKED) || task->on_cpu)
		return;
	q = quick_of(task, &key);
	if (q && q->key == key) {
		start = q->dep;
	} else {
		/* two loads the compiler must not merge through a pointer
		 * chosen between a map value and a task */
		__u64 arrived = READ_ONCE(task->sched_info.last_arrival);

		start = READ_ONCE(t->ckpt);
		if (arrived > start)
			start = arrived;
	}
	now = rq_clock_of(bpf_get_current_task_btf());
	mono = bpf_ktime_get_ns();
	/* as of the walk's read: a thread it did not read is left alone */
	if (!t->walked_at || t->walked_at > mono || mono - t->walked_at > now)
		return;
	now -= mono - t->walked_at;
	mono = t->walked_at;
	if (now < start || now - start < min_block_ns)
		return;
	w = uncharged(t, exec_ns, now - start, mono);
	if (!w)
		return;
	same = t->flushed_ns && t->flushed_exec == exec_ns;
	kh = same ? t->flushed_kstack : STACK_NONE;
	if (kh < WC_STACK_LABELS || !user_holds(kh))
		kh = waiting_kstack(task);
	add_weight(task->tgid, kind, user_part(task, t->parked_ustack), kh, w);
	count(WC_CNT_WAITS_UNDER_WAY);
	t->flushed_ns = (same ? t->flushed_ns : 0) + w;
	t->flushed_to = mono;
	t->flushed_kstack = kh;
	t->flushed_exec = exec_ns;
}

#endif /* WC_WAITS_BPF_H */
