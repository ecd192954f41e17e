/* SPDX-License-Identifier: GPL-2.0 */
/*
 * switch.bpf.h - the switch-out and the switch-in: charging a stint
 * and its wait, and the quick switch-out that skips the task storage.
 *
 * Included once, in order, by wallclock.bpf.c.
 */
#ifndef WC_SWITCH_BPF_H
#define WC_SWITCH_BPF_H

/* Charge prev's time since its checkpoint (its last switch-out that
 * charged), as it switches out again (split_stretch): the switch-in needs
 * no bookkeeping.  `before` is the run time of the stints before this one
 * since the checkpoint (whose switch-outs were quick), or BEFORE_UNKNOWN.
 * Returns the part of the wait spent asleep. */
static __always_inline __u64 charge(struct task_struct *prev, struct wc_task *t,
				    __u64 now, __u64 exec_ns, __u64 before)
{
	struct wc_stretch s = {
		.arrived = prev->sched_info.last_arrival,
		.start = t->ckpt,
		.now = now,
		.exec_ckpt = t->exec_ns,
		.exec_now = exec_ns,
		.before = before,
		.state = t->state,
	};
	__u64 off = split_stretch(t->time_ns, &s);

	return add_wait(t->time_ns, t->state, 0, off,
			runq_part(prev, t->rd_ckpt, s.arrived));
}

/* The quick entry of a thread, and the key it must hold to be its: its
 * pid, and its stack canary, random per task, where the kernel has one (a
 * thread that execs takes its leader's pid, not its canary), else its
 * start time.  The canary shares a cache line with the pid; the start
 * time is one more miss per thread in a walk. */
static __always_inline struct quick *quick_of(struct task_struct *p, __u64 *key)
{
	__u32 i = (__u32)p->pid & (QUICK_SLOTS - 1);
	__u64 mix;

	if (bpf_core_field_exists(p->stack_canary))
		mix = p->stack_canary;
	else
		mix = p->start_time;
	*key = (__u64)(__u32)p->pid << 32 | (__u32)(mix ^ mix >> 32);
	return bpf_map_lookup_elem(&quicks, &i);
}

/* What the storage says the quick path may skip. */
static __always_inline void quick_note(struct quick *q, const struct wc_task *t)
{
	__u32 f = 0, i = t->last_place;
	const struct wc_place *pl;

	if (t->state == WC_BLOCKED || t->place < WC_PLACES)
		f |= Q_PENDING;
	if (t->learned && !t->loud)
		f |= Q_QUIET;
	q->flags = f;
	opaque(i);
	pl = &t->places[i & (WC_PLACES - 1)];
	q->quiet_key = pl->hist ? 0 : pl->key;
}

/* Whether prev is going to sleep at the place its entry knows as quiet. */
static __always_inline bool at_quiet_place(struct task_struct *prev,
					   __u32 quiet_key)
{
	struct pt_regs *regs;

	if (!quiet_key || (prev->flags & K_PF_KTHREAD))
		return false;
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	return regs && place_key(regs) == quiet_key;
}

/* The run time since the checkpoint (exec_ckpt) up to the thread's last
 * quick switch-out (0 if it had none since), as its entry noted it;
 * BEFORE_UNKNOWN without the entry. */
static __always_inline __u64 merged_run(const struct quick *q, __u64 key,
					__u64 exec_ckpt)
{
	if (!q || q->key != key)
		return BEFORE_UNKNOWN;
	if (!(q->flags & Q_MERGED))
		return 0;
	return q->exec_dep > exec_ckpt ? q->exec_dep - exec_ckpt : 0;
}

/* After prev's storage was charged (or to forget a dead thread). */
static __always_inline void publish(struct quick *q, __u64 key,
				    struct task_struct *prev, struct wc_task *t,
				    __u64 now, bool dead)
{
	if (!q)
		return;
	if (dead) {
		if (q->key == key)
			q->key = 0;
		return;
	}
	q->key = key;
	q->dep = now;
	q->rd_dep = prev->sched_info.run_delay;
	quick_note(q, t);
}

/*
 * Most switch-outs change nothing the storage must know at once: a sleep
 * or a preemption (the kernel's run_delay says later how much of the wait
 * was spent in the run queue, and the rest was sleep) after a stint with
 * no steal (its wall time since the arrival is exactly the run time the
 * kernel counted since the pick), by a thread whose last wait needs no
 * charging on its own (not blocked) and, with stacks, that has nothing to
 * park.  Those only note when the wait began (for the switch-in) and the
 * run time so far; the next switch-out that takes the slow path charges
 * them all together, the run up to the last quick one as run and the rest
 * until this stint as waits.
 */
static __always_inline bool quick_out(struct task_struct *prev, struct quick *q,
				      __u64 key, __u64 now, __u32 state)
{
	__u64 arrived;

	if (state != WC_SLEEP && state != WC_RUNQ)
		return false;
	if (!q || q->key != key || (q->flags & Q_PENDING))
		return false;
	if (stacks_live() && state == WC_SLEEP && !(q->flags & Q_QUIET) &&
	    !at_quiet_place(prev, q->quiet_key))
		return false;
	arrived = prev->sched_info.last_arrival;
	if (arrived > now ||
	    now - arrived !=
		    prev->se.sum_exec_runtime - prev->se.prev_sum_exec_runtime)
		return false;
	q->dep = now;
	q->rd_dep = prev->sched_info.run_delay;
	q->exec_dep = prev->se.sum_exec_runtime;
	q->flags |= Q_MERGED;
	return true;
}

static __always_inline void switch_out(void *ctx, struct task_struct *prev,
				       __u64 now, bool preempt,
				       unsigned int prev_state)
{
	bool dead = prev_state & K_TASK_DEAD;
	__u32 state = preempt ? WC_RUNQ : state_of(prev_state);
	__u64 exec_ns, slept, key;
	struct wc_task *t;
	struct quick *q;

	q = quick_of(prev, &key);
	if (!dead && quick_out(prev, q, key, now, state))
		return;
	count(WC_CNT_SWITCHES_CHARGED);
	t = bpf_task_storage_get(&tasks, prev, 0, 0);
	exec_ns = prev->se.sum_exec_runtime;
	if (!t) {
		/* storage cannot be made for a thread that is exiting */
		if (dead) {
			emit_first_exit(prev, now);
			return;
		}
		/* one that began before we looked starts now, at no charge */
		t = first_sight(prev, now, WC_ONCPU, true, SCRATCH_SWITCH);
		if (!t)
			return;
	}
	begin_write(t);
	slept = charge(prev, t, now, exec_ns, merged_run(q, key, t->exec_ns));
	t->rd_ckpt = prev->sched_info.run_delay;
	/* a stale stamp whose wake-up went unseen: too late to mend */
	if (t->rd_stale) {
		t->rd_stale = 0;
		count(WC_CNT_RUNQ_STALE_UNMENDED);
	}
	enter(t, dead ? WC_DEAD : state, now, exec_ns);
	end_write(t);
	/* a wait its switch-in did not look at was short: learn it here */
	if (t->place < WC_PLACES) {
		learn(t, slept >= min_block_ns);
		wait_done(t, false);
	}
	/* a stack parked for a wait whose end went unseen is not this one's */
	if (t->parked_ustack)
		t->parked_ustack = STACK_NONE;
	if (dead) {
		settle_owed(prev, t, STACK_NONE);
		emit_exit(prev, t);
		publish(q, key, prev, t, now, true);
		return;
	}
	if (stacks_live() && (state == WC_SLEEP || state == WC_BLOCKED) &&
	    !(t->learned && !t->loud))
		park(ctx, prev, t);
	publish(q, key, prev, t, now, false);
}

/*
 * With stacks, a wait that ends long is recorded now, while its kernel
 * stack is still there to walk.  Most waits are short, and the kernel's
 * own fields say so without a look at the task storage: a wait began
 * after the thread's last arrival and was slept until it was queued
 * (sched_info.last_queued, still set at the tracepoint, as last_arrival
 * is not yet moved), so it slept at most the time between them.  A wait
 * not looked at here is learned from at the thread's next switch-out;
 * without stacks none is: the switch-out charges everything.
 */
static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	__u64 arrived = next->sched_info.last_arrival, woken, slept, key;
	__u64 dep, rd_dep;
	bool long_wait, unexpected, parked;
	struct wc_task *t;
	struct quick *q;
	__u32 st, uncharged;
	bool mine;

	if (!stacks_live())
		return;
	woken = next->sched_info.last_queued;
	if (!woken || woken > now)
		woken = now;
	if (woken >= arrived && woken - arrived < min_block_ns)
		return;
	t = bpf_task_storage_get(&tasks, next, 0, 0);
	if (!t)
		return;
	/* the wait began at the last switch-out: a quick one noted when;
	 * without the entry (another thread took the slot) the last
	 * arrival bounds it */
	q = quick_of(next, &key);
	mine = q && q->key == key;
	if (mine) {
		dep = q->dep;
		rd_dep = q->rd_dep;
		/* a quick one was a sleep, or a preemption that slept 0 */
		st = dep == t->ckpt ? t->state : WC_SLEEP;
	} else {
		dep = t->ckpt > arrived ? t->ckpt : arrived;
		rd_dep = t->rd_ckpt;
		st = t->state;
	}
	if (st != WC_SLEEP && st != WC_BLOCKED)
		return;
	slept = slept_part(now > dep ? now - dep : 0,
			   runq_part(next, rd_dep, now));
	long_wait = slept >= min_block_ns;
	/* quiet at its switch-out: the place is found now, and the wait
	 * is owed a user stack */
	parked = t->place < WC_PLACES;
	if (!parked && long_wait)
		unparked_place(t, next);
	unexpected = learn(t, long_wait) || (!parked && t->place < WC_PLACES);
	if (long_wait)
		record_wait(next, t, st, slept, t->parked_ustack, unexpected);
	wait_done(t, long_wait);
	/* quick switch-outs before this wait are still to be charged */
	if (mine) {
		uncharged = q->flags & Q_MERGED;
		quick_note(q, t);
		q->flags |= uncharged;
	}
}

#endif /* WC_SWITCH_BPF_H */
