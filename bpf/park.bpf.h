/* SPDX-License-Identifier: GPL-2.0 */
/*
 * park.bpf.h - off-CPU stacks: a wait's user stack parked at its
 * switch-out, its kernel stack walked at its switch-in, and the places
 * that decide which waits are worth it.
 *
 * Included once, in order, by wallclock.bpf.c.
 */
#ifndef WC_PARK_BPF_H
#define WC_PARK_BPF_H

/*
 * Off-CPU stacks without a stack walk at every switch-out.  A wait's
 * kernel stack can be walked when it ends (the thread has not run since
 * it blocked), but its user stack only while the thread is still current,
 * at switch-out, before anyone knows how long the wait will be.  So each
 * thread remembers how its last 4 waits from each place went (a place is
 * a system call and a user stack pointer: one call site in one loop), and
 * the user stack is walked only where a recent wait was long.  A place
 * not seen before counts as long.  The cost moves to where the stacks
 * are wanted: a thread whose waits are all short (a pipe, a busy lock)
 * stops paying after 4 of them, one that sleeps long pays once per sleep.
 * A long wait from a place whose last 4 were short is owed the user
 * stack of the thread's next sleep from the same place (walked anyway,
 * now that the place has had a long wait); if the thread dies first, or
 * has another such wait, it goes without one, counted
 * (offcpu_user_missed).  A thread none of whose places has had a long
 * wait lately is quiet: its switch-out does not even find the place (a
 * pt_regs lookup, a hash, a scan), which is most of what stacks cost a
 * pipe or a lock hand-off.  Should one of its waits be long after all,
 * the switch-in finds the place from the same saved user registers, and
 * the wait is owed like any unexpected one.
 */
static __always_inline __u32 place_key(struct pt_regs *regs)
{
	__u64 h = ((__u64)regs->orig_ax + 1) * 0x9e3779b97f4a7c15ULL ^
		  regs->sp * 0xc2b2ae3d27d4eb4fULL;
	__u32 k = (__u32)(h >> 32) ^ (__u32)h;

	return k ? k : 1;
}

/* Set place i's history, and whether the thread has a loud place. */
static __always_inline void set_hist(struct wc_task *t, __u32 i, __u32 hist)
{
	opaque(i);
	i &= WC_PLACES - 1;
	t->places[i].hist = hist;
	if (hist)
		t->loud |= 1u << i;
	else
		t->loud &= ~(1u << i);
}

/* The place with this key, or a slot to reuse for it: an unused one, else
 * one whose recent waits were all short (losing its history is cheap),
 * else the next in turn. */
static __always_inline __u32 find_place(struct wc_task *t, __u32 key)
{
	__u32 i = t->last_place & (WC_PLACES - 1), pick = WC_PLACES;

	if (t->places[i].key == key)
		return i;
	for (i = 0; i < WC_PLACES; i++) {
		if (t->places[i].key == key)
			return i;
		if (pick == WC_PLACES &&
		    (!t->places[i].key || !t->places[i].hist))
			pick = i;
	}
	if (pick == WC_PLACES)
		pick = (__u32)(t->id + t->seq) % WC_PLACES;
	t->places[pick & (WC_PLACES - 1)].key = key;
	set_hist(t, pick, 1);
	return pick & (WC_PLACES - 1);
}

/* A wait's user stack, or what stands for it: a thread of a process has
 * one, even when it was not taken. */
static __always_inline __u64 user_part(struct task_struct *p, __u64 uh)
{
	if (uh == STACK_NONE && !(p->flags & K_PF_KTHREAD))
		return WC_STACK_UNPARKED;
	return uh;
}

/* Record a long wait's weight, once both its stacks are known. */
static __always_inline void add_wait_weight(struct task_struct *p, __u32 kind,
					    __u64 uh, __u64 kh, __u64 wait_ns)
{
	uh = user_part(p, uh);
	if (uh == WC_STACK_UNPARKED)
		count(WC_CNT_OFFCPU_NO_USER);
	add_weight(p->tgid, kind, uh, kh, wait_ns);
	count(WC_CNT_OFFCPU_STACKS);
}

/* Settle an owed wait with this user stack (STACK_NONE: none to lend). */
static __always_inline void settle_owed(struct task_struct *p,
					struct wc_task *t, __u64 uh)
{
	if (!t->owed_ns)
		return;
	if (uh == STACK_NONE)
		count(WC_CNT_OFFCPU_USER_MISSED);
	add_wait_weight(p, t->owed_kind, uh, t->owed_kstack, t->owed_ns);
	t->owed_ns = 0;
}

/* prev is going to sleep: if its place has had long waits, park its user
 * stack until the wait ends, and lend it to a wait owed one from here. */
static __always_inline void park(void *ctx, struct task_struct *prev,
				 struct wc_task *t)
{
	struct pt_regs *regs;
	struct scratch *sc;
	__u32 i, key;
	__u64 uh;

	if (prev->flags & K_PF_KTHREAD)
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	if (!regs)
		return;
	key = place_key(regs);
	i = find_place(t, key);
	t->last_place = i;
	/* a quiet place: nothing to walk or learn from a short wait, and
	 * the switch-in finds it again if the wait turns out long */
	if (!t->places[i & (WC_PLACES - 1)].hist)
		return;
	t->place = i;
	sc = scratch_buf(SCRATCH_SWITCH);
	uh = STACK_NONE;
	if (sc && walk_user(ctx, sc, prev, regs))
		uh = save_stack(&sc->u, (long)sc->u.nr * sizeof(__u64));
	if (uh == STACK_DROPPED)
		uh = STACK_NONE;
	if (t->owed_ns && t->owed_key == key)
		settle_owed(prev, t, uh);
	t->parked_ustack = uh;
}

/* The place a thread that was not parked waited at, from the user
 * registers its system call saved (unchanged until it returns). */
static __always_inline void unparked_place(struct wc_task *t,
					   struct task_struct *p)
{
	struct pt_regs *regs;

	if (p->flags & K_PF_KTHREAD)
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(p);
	if (regs)
		t->place = find_place(t, place_key(regs));
}

/* What of a wait that ends or goes on is still to be charged to its
 * stacks: not what flushes charged already (the same wait: the thread
 * has not run since), and nothing from before the window the plugin is
 * filling (the previous file had it, as a wait under way). */
static __always_inline __u64 uncharged(const struct wc_task *t, __u64 exec_ns,
				       __u64 wait_ns, __u64 mono)
{
	__u64 start = window_start_ns;

	if (t->flushed_ns && t->flushed_exec == exec_ns) {
		wait_ns = wait_ns > t->flushed_ns ? wait_ns - t->flushed_ns : 0;
		if (t->flushed_to > start)
			start = t->flushed_to;
	}
	if (start && mono <= start)
		return 0;
	if (start && wait_ns > mono - start)
		wait_ns = mono - start;
	return wait_ns;
}

/* A long wait of p that just ended: its kernel stack now, its user stack
 * from where it was parked, or owed (unexpected) or none (never seen going
 * to sleep). */
static __always_inline void record_wait(struct task_struct *p,
					struct wc_task *t, __u32 kind,
					__u64 wait_ns, __u64 uh, bool owe)
{
	struct scratch *sc = scratch_buf(SCRATCH_SWITCH);
	__u64 kh = STACK_NONE;
	long len;

	wait_ns = uncharged(t, p->se.sum_exec_runtime, wait_ns,
			    bpf_ktime_get_ns());
	t->flushed_ns = 0;
	if (!wait_ns)
		return;
	if (sc) {
		len = bpf_get_task_stack(p, sc->k.ip, sizeof(sc->k.ip), 0);
		kh = save_stack(&sc->k, len);
	}
	if (uh == STACK_NONE && owe) {
		settle_owed(p, t, STACK_NONE); /* one owed at a time */
		t->owed_ns = wait_ns;
		t->owed_kstack = kh;
		t->owed_kind = kind;
		t->owed_key = t->places[t->place & (WC_PLACES - 1)].key;
		return;
	}
	add_wait_weight(p, kind, uh, kh, wait_ns);
}

/* Learn from p's wait that just ended, at the place it began: whether it
 * was long.  True if the place had had only short waits lately (so its
 * user stack was not walked). */
static __always_inline bool learn(struct wc_task *t, bool long_wait)
{
	__u32 i = t->place;
	bool unexpected;

	/* no place: we never saw it go to sleep (first sight) */
	if (i >= WC_PLACES)
		return false;
	opaque(i);
	i &= WC_PLACES - 1;
	unexpected = t->places[i].hist == 0;
	set_hist(t, i, (t->places[i].hist << 1 | long_wait) & 0xf);
	t->learned = 1;
	return unexpected;
}

/* p's wait is over: its place and parked stack go (a walk for a wait
 * that turned out short is counted). */
static __always_inline void wait_done(struct wc_task *t, bool recorded)
{
	if (!recorded && t->parked_ustack)
		count(WC_CNT_WALKS_UNUSED);
	t->place = WC_PLACES;
	t->parked_ustack = STACK_NONE;
}

#endif /* WC_PARK_BPF_H */
