// SPDX-License-Identifier: GPL-2.0
/*
 * wallclock.bpf.c - per-thread wall-clock accounting in the kernel.
 *
 * Owns: one task-storage entry per profiled thread, holding the state the
 * thread is in and the moment it entered it (the checkpoint), plus the time
 * already charged to each state.  Every scheduler event charges the time
 * since the checkpoint to the state the thread was in and moves the
 * checkpoint, so a thread's states always add up to the time it was watched.
 *
 * Writers: for one thread, the scheduler events (switch out, wake-up, switch
 * in) are serialised by the kernel (run-queue locks and the on_cpu hand-off
 * in try_to_wake_up), so each entry has one writer at a time and needs no
 * lock.  The sampler only increments the sample count, which nobody else
 * writes.  The task iterator reads entries while they may change on another
 * CPU: a sequence count (odd while a write is in progress) lets it retry
 * instead of seeing a half-charged entry.  Ordering relies on x86-64's
 * total store order plus compiler barriers; see the README's portability
 * note before building for a weakly ordered architecture.
 *
 * Clocks: every checkpoint is the run-queue clock (rq->clock, and
 * rq->clock_task for on-CPU stretches) of the CPU the event happens on, the
 * values the scheduler itself has just updated and uses for schedstat.  So
 * run-queue wait is the kernel's run_delay and on-CPU time is its
 * sum_exec_runtime, to the nanosecond, while every stretch still lands in
 * exactly one slot and the slots add up to wall time.  Reading them is
 * cheaper than calling bpf_ktime_get_ns().
 *
 * Nothing on the context-switch path walks a stack, allocates (except once
 * per thread) or touches a shared cache line.
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
#define K_PF_KTHREAD 0x00200000

#define barrier() asm volatile("" ::: "memory")
#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile typeof(x) *)&(x) = (v))
/* Hide a value's known range from the compiler, so the mask that proves an
 * index in bounds to the verifier is not optimised away. */
#define opaque(x) asm volatile("" : "+r"(x))

static __always_inline __u32 slot(__u32 st)
{
	opaque(st);
	return st & 3;
}

/* Set by user space before load. */
const volatile bool include_kthreads = false;

/* A moment on one run queue's clocks. */
struct wc_clock {
	__u64 clock;
	__u64 task; /* clock_task: clock minus steal (and IRQ time) */
};

struct wc_task {
	__u64 id;
	__u32 seq;   /* odd while being charged */
	__u32 state; /* enum wc_state */
	struct wc_clock ckpt;
	__u64 time_ns[WC_NSLOTS];
	__u64 samples;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct wc_task);
} tasks SEC(".maps");

/* Final records of dead threads; user space resizes it before load. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} exits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wc_counters);
} counters SEC(".maps");

/* Thread ids handed out so far; ids survive exec and TID reuse. */
__u64 next_id;

/* A task's run queue.  Reached through the task, not the runqueues per-CPU
 * symbol, which kernels without CONFIG_KALLSYMS_ALL cannot resolve. */
static __always_inline struct rq *rq_of(struct task_struct *t)
{
	struct cfs_rq *cfs = t->se.cfs_rq;
	struct rq *rq = NULL;

	if (bpf_core_field_exists(cfs->rq))
		return cfs->rq;
	/* without FAIR_GROUP_SCHED every cfs_rq is the one inside its rq */
	bpf_probe_read_kernel(&rq, sizeof(rq), &cfs);
	return (struct rq *)((unsigned long)rq -
			     bpf_core_field_offset(struct rq, cfs));
}

static __always_inline struct wc_clock clock_of(struct rq *rq)
{
	struct wc_clock c = {};

	c.clock = BPF_CORE_READ(rq, clock);
	c.task = BPF_CORE_READ(rq, clock_task);
	return c;
}

/* The clock of the run queue a task is on (or last ran on). */
static __always_inline struct wc_clock task_clock(struct task_struct *t)
{
	return clock_of(rq_of(t));
}

static __always_inline struct wc_clock this_clock(void)
{
	return task_clock(bpf_get_current_task_btf());
}

static __always_inline void count(enum wc_counter c)
{
	__u32 zero = 0;
	struct wc_counters *cs = bpf_map_lookup_elem(&counters, &zero);

	if (cs && c < WC_CNT_NR)
		__sync_fetch_and_add(&cs->v[c], 1);
}

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

static __always_inline struct wc_task *create(struct task_struct *task,
					      struct wc_clock now, __u32 state)
{
	struct wc_task init = {};
	struct wc_task *t;

	init.id = __sync_fetch_and_add(&next_id, 1) + 1;
	init.state = state;
	init.ckpt = now;
	t = bpf_task_storage_get(&tasks, task, &init,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		count(WC_CNT_STORAGE_FAILED);
	return t;
}

/* Add the stretch from `from` to `to` in state st to times[]: on-CPU is
 * measured on clock_task like the kernel's run time, and the rest of the
 * stretch is steal. */
static __always_inline void add_stretch(__u64 *times, __u32 st,
					struct wc_clock from, struct wc_clock to)
{
	__u64 wall, run;

	if (to.clock <= from.clock || st > WC_BLOCKED)
		return;
	wall = to.clock - from.clock;
	if (st != WC_ONCPU) {
		times[slot(st)] += wall;
		return;
	}
	run = to.task > from.task ? to.task - from.task : 0;
	if (run > wall)
		run = wall;
	times[WC_T_ONCPU] += run;
	times[WC_T_STEAL] += wall - run;
}

/* Charge the time since the checkpoint to the current state, then enter
 * next_state.  The caller is the only writer (see the file comment). */
static __always_inline void charge(struct wc_task *t, struct wc_clock now,
				   __u32 next_state)
{
	WRITE_ONCE(t->seq, t->seq + 1);
	barrier();
	add_stretch(t->time_ns, t->state, t->ckpt, now);
	if (now.clock > t->ckpt.clock)
		t->ckpt = now;
	t->state = next_state;
	barrier();
	WRITE_ONCE(t->seq, t->seq + 1);
}

static __always_inline void fill_identity(struct wc_task_rec *r,
					  struct task_struct *task)
{
	struct task_struct *leader = BPF_CORE_READ(task, group_leader);

	r->tid = BPF_CORE_READ(task, pid);
	r->tgid = BPF_CORE_READ(task, tgid);
	r->leader_start_ns = BPF_CORE_READ(leader, start_time);
	if (BPF_CORE_READ(task, flags) & K_PF_KTHREAD)
		r->flags |= WC_REC_KTHREAD;
	bpf_probe_read_kernel_str(r->leader_comm, sizeof(r->leader_comm),
				  &leader->comm);
}

static __always_inline void emit_exit(struct task_struct *task,
				      struct wc_task *t)
{
	struct wc_task_rec *r;
	int i;

	count(WC_CNT_EXITS);
	r = bpf_ringbuf_reserve(&exits, sizeof(*r), 0);
	if (!r) {
		count(WC_CNT_EXITS_DROPPED);
		return;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->id = t->id;
	for (i = 0; i < WC_NSLOTS; i++)
		r->time_ns[i] = t->time_ns[i];
	r->samples = t->samples;
	r->state = WC_DEAD;
	r->flags = WC_REC_EXITED;
	fill_identity(r, task);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

static __always_inline void switch_out(struct task_struct *prev,
				       struct wc_clock now,
				       bool preempt, unsigned int prev_state)
{
	struct wc_task *t = bpf_task_storage_get(&tasks, prev, 0, 0);
	bool dead = prev_state & K_TASK_DEAD;
	__u32 next_state = preempt ? WC_RUNQ : state_of(prev_state);

	if (!t) {
		/* First sight: time before now is not ours to know. */
		if (!dead)
			create(prev, now, next_state);
		return;
	}
	if (dead) {
		charge(t, now, WC_DEAD);
		emit_exit(prev, t);
		return;
	}
	charge(t, now, next_state);
}

static __always_inline void switch_in(struct task_struct *next,
				      struct wc_clock now)
{
	struct wc_task *t = bpf_task_storage_get(&tasks, next, 0, 0);

	if (!t) {
		create(next, now, WC_ONCPU);
		return;
	}
	charge(t, now, WC_ONCPU);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(wc_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	/* __schedule() has just updated this run queue's clock. */
	struct wc_clock now = task_clock(next);

	if (profiled(prev))
		switch_out(prev, now, preempt, prev_state);
	if (profiled(next))
		switch_in(next, now);
	return 0;
}

/* From wake-up to running is run-queue wait (schedstat's run_delay counts
 * it too), so the sleep ends here, not at switch-in. */
static __always_inline void wake(struct task_struct *p)
{
	struct wc_clock now;
	struct wc_task *t;

	if (!profiled(p))
		return;
	/* The waker has enqueued p and updated p's run-queue clock: the
	 * moment the kernel starts counting run_delay. */
	now = task_clock(p);
	t = bpf_task_storage_get(&tasks, p, 0, 0);
	if (!t) {
		create(p, now, WC_RUNQ);
		return;
	}
	if (t->state == WC_SLEEP || t->state == WC_BLOCKED)
		charge(t, now, WC_RUNQ);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(wc_wakeup, struct task_struct *p)
{
	wake(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(wc_wakeup_new, struct task_struct *p)
{
	wake(p);
	return 0;
}

SEC("perf_event")
int wc_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct wc_task *t;

	if (task->pid == 0) {
		count(WC_CNT_IDLE_SAMPLES);
		return 0;
	}
	if (!profiled(task))
		return 0;
	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!t) {
		count(WC_CNT_SAMPLES_LOST);
		return 0;
	}
	t->samples++;
	count(WC_CNT_SAMPLES);
	return 0;
}

/* "Now" for the iterator: a running thread's own run queue (ticking while
 * it runs), else the iterator's CPU, which is busy running us.  Either is
 * at most a tick behind; what it misses is charged at the next read. */
static __always_inline struct wc_clock iter_clock(struct task_struct *task,
						  bool running)
{
	return running ? task_clock(task) : this_clock();
}

/* A thread the iterator meets before any scheduler event: start it in the
 * state the kernel says it is in now. */
static __always_inline struct wc_task *adopt(struct task_struct *task)
{
	unsigned int st = BPF_CORE_READ(task, __state);
	bool running = BPF_CORE_READ(task, on_cpu);

	return create(task, iter_clock(task, running),
		      running ? WC_ONCPU : state_of(st));
}

/* Copy an entry that another CPU may be charging, adding the time since its
 * checkpoint, so the record is the thread's total up to this moment. */
static __always_inline bool snapshot(struct task_struct *task,
				     struct wc_task *t, struct wc_task_rec *r)
{
	int i, k;

	for (i = 0; i < 4; i++) {
		__u32 s1 = READ_ONCE(t->seq);
		struct wc_clock ckpt, now;
		__u32 s2, st;

		barrier();
		st = t->state;
		ckpt = t->ckpt;
		for (k = 0; k < WC_NSLOTS; k++)
			r->time_ns[k] = t->time_ns[k];
		barrier();
		s2 = READ_ONCE(t->seq);
		if (s1 != s2 || (s1 & 1))
			continue;
		now = iter_clock(task, st == WC_ONCPU);
		add_stretch(r->time_ns, st, ckpt, now);
		r->state = st;
		r->id = t->id;
		r->samples = t->samples;
		return true;
	}
	return false;
}

SEC("iter/task")
int wc_iter(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct wc_task_rec r = {};
	struct wc_task *t;

	if (!task || !profiled(task))
		return 0;
	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!t)
		t = adopt(task);
	if (!t)
		return 0;
	if (!snapshot(task, t, &r)) {
		count(WC_CNT_TORN_READS);
		return 0;
	}
	/* A dead thread's final record went through the exit ring; a zombie
	 * leader stays visible here and must not be counted twice. */
	if (r.state == WC_DEAD)
		return 0;
	fill_identity(&r, task);
	bpf_seq_write(ctx->meta->seq, &r, sizeof(r));
	return 0;
}
