// SPDX-License-Identifier: GPL-2.0
/*
 * wallclock.bpf.c - per-thread wall-clock accounting in the kernel.
 *
 * Owns: one task-storage entry per profiled thread: its checkpoint (the
 * state it entered at a switch-out, and when) and its time per slot.
 * Invariants: a thread's slots add up to the time it was watched, every
 * stretch in exactly one slot.  The switch path allocates nothing (but
 * once per thread), calls no clock helper and touches no shared cache
 * line (but for pids sharing a quick slot).
 * Threads: the kernel serialises one thread's switches, so each entry
 * has one writer (the hooks of stale.bpf.h write only an asleep thread's);
 * the iterator reads it under a sequence count, which relies on x86-64's
 * store order.
 * Design: docs/design.md, section "BPF accounting"; README.md, "How it
 * measures".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "wallclock.h"

char LICENSE[] SEC("license") = "GPL";

/* include/linux/sched.h: state bits, stable since 4.14 */
#define K_TASK_RUNNING 0x0000
#define K_TASK_UNINTERRUPTIBLE 0x0002
#define K_TASK_DEAD 0x0080
#define K_TASK_WAKING 0x0200
#define K_TASK_NOLOAD 0x0400
#define K_PF_EXITING 0x00000004
#define K_PF_KTHREAD 0x00200000
#define K_EEXIST 17

#define barrier() asm volatile("" ::: "memory")
#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))
/* Hide a value's known range from the compiler, so the mask that proves an
 * index in bounds to the verifier is not optimised away. */
#define opaque(x) asm volatile("" : "+r"(x))

/* Set by user space before load. */
const volatile bool include_kthreads = false;
const volatile __u64 sample_period_ns = 1000000000ULL / 49;
const volatile bool stacks_enabled = false;
const volatile __u64 min_block_ns = 1000000;
/* CLOCK_MONOTONIC as the programs were loaded: a thread started later
 * (task_struct.start_time is on that clock) is new, its whole life ours. */
const volatile __u64 load_mono_ns = 0;
/* Buckets of the held map less one (a power of two); user space sizes
 * the map to match. */
const volatile __u32 held_mask = 0;
/* Walk user stacks by the unwind tables user space puts (plugin/unwind),
 * by frame pointers where none covers the innermost frame. */
const volatile bool unwind_tables = false;
/* Measuring only: check framepointer mode's stack search against complete
 * walks by tables (WC_CNT_UW_SCAN_*). */
const volatile bool measure_scan = false;

#include "maps.bpf.h"
#include "stackstore.bpf.h"
#include "ustack_x86.bpf.h"
#include "unwind_x86.bpf.h"
#include "charge.bpf.h"
#include "exits.bpf.h"
#include "park.bpf.h"
#include "switch.bpf.h"
#include "stale.bpf.h"

SEC("tp_btf/sched_switch")
int BPF_PROG(wc_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	/* without stacks a switch-in has nothing to do */
	bool out = profiled(prev), in = stacks_live() && profiled(next);
	__u64 now;

	/* kernel threads and idle, when not profiled, pay for nothing more */
	if (!out && !in)
		return 0;
	/* __schedule() has just updated this run queue's clock. */
	now = rq_clock_of(next);
	if (out)
		switch_out(ctx, prev, now, preempt, prev_state);
	if (in)
		switch_in(next, now);
	return 0;
}

/* Only where the kernel delays dequeues: user space loads these two
 * there alone. */
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(wc_migrate, struct task_struct *p, int dest_cpu)
{
	stale_mark(p);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(wc_wakeup, struct task_struct *p)
{
	stale_mend(p);
	return 0;
}

#include "sample.bpf.h"

SEC("perf_event")
int wc_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct wc_task *t = NULL;
	__u64 n;

	if (task->pid != 0 && profiled(task)) {
		t = bpf_task_storage_get(&tasks, task, 0, 0);
		/* running since before any switch-out we saw */
		if (!t && !(task->flags & K_PF_EXITING))
			t = first_sight(task, rq_clock_of(task), WC_ONCPU, true,
					SCRATCH_SAMPLE);
	}
	n = ticks(ctx, t ? t->id : 0, task->se.sum_exec_runtime);
	if (task->pid == 0) {
		count(WC_CNT_IDLE_SAMPLES);
		return 0;
	}
	if (!profiled(task))
		return 0;
	if (!t) {
		count(WC_CNT_SAMPLES_LOST);
		return 0;
	}
	if (n && due_before_arrival(ctx, task)) {
		count_n(WC_CNT_SAMPLES_MISPLACED, n);
		n = 0;
	}
	t->samples += n;
	if (stacks_live())
		sample_stacks(ctx, task, t);
	count_n(WC_CNT_SAMPLES, n);
	if (n > 1)
		count_n(WC_CNT_SAMPLES_LATE, n - 1);
	return 0;
}

#include "walk.bpf.h"
#include "waits.bpf.h"

/* The seq_file task iterator: every kernel with task storage has it. */
SEC("iter/task")
int wc_iter(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct wc_task_rec r = {};
	__u64 entry = 0;

	if (task && thread_rec(task, &r, &entry))
		bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}

/* At a read that a flush follows, after its walk: waits under way. */
SEC("iter/task")
int wc_waits(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct wc_task *t;

	if (!task || !stacks_live() || !profiled(task))
		return 0;
	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (t && t->state != WC_DEAD)
		charge_under_way(task, t);
	return 0;
}

SEC("syscall")
int wc_snap(void *ctx)
{
	struct bpf_iter_task it;
	struct task_struct *p;
	__u32 lo = snap.lo, hi = snap.hi;
	bool ok = true;

	/* older kernels: the loader does not load this program at all */
	if (!ksym_exists(bpf_iter_task_new) ||
	    !ksym_exists(bpf_task_from_pid) || !ksym_exists(bpf_rcu_read_lock))
		return 1;
	snap.stop_tgid = 0;
	snap.stop_tid = 0;
	ahead.proc_pos = 0;
	bpf_rcu_read_lock();
	if (snap.resume_tid) {
		p = bpf_task_from_pid(snap.resume_tid);
		if (p && (__u32)p->tgid == lo) {
			ok = snap_threads(p);
			lo++;
		}
		if (p)
			bpf_task_release(p);
	}
	/* a resumed process may have been the whole range: no pass then */
	if (ok && lo < hi) {
		bpf_iter_task_new(&it, NULL, BPF_TASK_ITER_ALL_PROCS);
		while ((p = bpf_iter_task_next(&it))) {
			struct task_struct *leader;

			warm_procs(ahead.proc_pos++, p);
			if ((__u32)p->tgid < lo || (__u32)p->tgid >= hi)
				continue;
			/* a thread walk starts from a task held, not just
			 * seen under RCU */
			leader = bpf_task_acquire(p);
			if (!leader)
				continue;
			ok = snap_threads(leader);
			bpf_task_release(leader);
			if (!ok)
				break;
		}
		bpf_iter_task_destroy(&it);
	}
	bpf_rcu_read_unlock();
	return 0;
}
