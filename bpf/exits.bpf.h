/* SPDX-License-Identifier: GPL-2.0 */
/*
 * exits.bpf.h - the final record of an exiting thread, through the
 * exit ring.
 *
 * A record that does not fit the ring is counted, never lost
 * silently.
 *
 * Included once, in order, by wallclock.bpf.c.
 */
#ifndef WC_EXITS_BPF_H
#define WC_EXITS_BPF_H

static __always_inline void fill_identity(struct wc_task_rec *r,
					  struct task_struct *task)
{
	struct task_struct *leader = task->group_leader;

	/* plain loads: both callers hold a trusted task */
	r->tid = task->pid;
	r->tgid = task->tgid;
	r->leader_start_ns = leader->start_time;
	if (task->flags & K_PF_KTHREAD)
		r->flags |= WC_REC_KTHREAD;
	__builtin_memcpy(r->leader_comm, leader->comm, sizeof(r->leader_comm));
}

/* A final record, identity filled in; NULL (counted, with the time
 * unreported, lost) if the ring is full. */
static __always_inline struct wc_task_rec *exit_rec(struct task_struct *task,
						    __u64 lost_ns)
{
	struct wc_task_rec *r;

	count(WC_CNT_EXITS);
	r = bpf_ringbuf_reserve(&exits, sizeof(*r), 0);
	if (!r) {
		count(WC_CNT_EXITS_DROPPED);
		count_n(WC_CNT_EXITS_DROPPED_NS, lost_ns);
		return NULL;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->state = WC_DEAD;
	r->flags = WC_REC_EXITED;
	fill_identity(r, task);
	return r;
}

static __always_inline __u64 sum_slots(const __u64 *time_ns)
{
	__u64 sum = 0;
	int i;

	for (i = 0; i < WC_NSLOTS; i++)
		sum += time_ns[i];
	return sum;
}

static __always_inline void emit_exit(struct task_struct *task,
				      struct wc_task *t)
{
	__u64 sum = sum_slots(t->time_ns), walked = t->walked_ns;
	struct wc_task_rec *r;
	int i;

	r = exit_rec(task, sum > walked ? sum - walked : 0);
	if (!r)
		return;
	r->id = t->id;
	for (i = 0; i < WC_NSLOTS; i++)
		r->time_ns[i] = t->time_ns[i];
	r->samples = t->samples;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

/* A thread that dies at its first switch-out (it ran once, briefly, and
 * no sample met it): if it started since we loaded, its whole life is its
 * wait for a first CPU and the run since. */
static __always_inline void emit_first_exit(struct task_struct *task, __u64 now)
{
	__u64 arrived = task->sched_info.last_arrival;
	__u64 rd = task->sched_info.run_delay;
	__u64 run = task->se.sum_exec_runtime, stint;
	struct wc_task_rec *r;

	if (!load_mono_ns || task->start_time < load_mono_ns || arrived > now)
		return;
	stint = now - arrived;
	r = exit_rec(task, rd + (stint > run ? stint : run));
	if (!r)
		return;
	r->id = __sync_fetch_and_add(&next_id, 1) + 1;
	r->time_ns[WC_T_RUNQ] = rd;
	r->time_ns[WC_T_ONCPU] = run;
	r->time_ns[WC_T_STEAL] = stint > run ? stint - run : 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

#endif /* WC_EXITS_BPF_H */
