// SPDX-License-Identifier: GPL-2.0
/*
 * wallclock.bpf.c - per-thread wall-clock accounting in the kernel.
 *
 * Owns: one task-storage entry per profiled thread, holding the state the
 * thread is in and the moment it entered it (the checkpoint), plus the time
 * already charged to each slot.  Every scheduler event charges the time
 * since the checkpoint to the state the thread was in and moves the
 * checkpoint, so a thread's slots always add up to the time it was watched.
 *
 * Clocks: a checkpoint is the run-queue clock (rq->clock) of the CPU the
 * event happens on, the value the scheduler has just updated and uses for
 * schedstat's run_delay.  An on-CPU stretch is charged with the kernel's
 * own count, the growth of se.sum_exec_runtime, and the rest of its wall
 * time (hypervisor steal, IRQ time on IRQ_TIME_ACCOUNTING kernels) goes to
 * the STEAL slot.  So on-CPU and run-queue times are what the kernel says,
 * to the nanosecond, while the slots still add up to wall time.
 *
 * Missed switches: on this kernel the sched_switch tracepoint does not show
 * every switch-in (measured: 0.3-3 % of a busy spinner's).  A thread that
 * switches out while we still think it waits was switched in unseen; the
 * kernel's sched_info.last_arrival says when, so the stretch is split there
 * and nothing is misfiled.  The reverse case uses sched_info.last_queued.
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
 * Nothing on the context-switch path walks a stack, allocates (except once
 * per thread), calls a clock helper or touches a shared cache line.
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

struct wc_task {
	__u64 id;
	__u32 seq;     /* odd while being charged */
	__u32 state;   /* enum wc_state */
	__u64 ckpt;    /* rq->clock when the state was entered */
	__u64 exec_ns; /* se.sum_exec_runtime at the checkpoint */
	__u64 time_ns[WC_NSLOTS];
	__u64 samples;
	/* A long wait whose user stack is still to be taken, on the thread's
	 * way back to user space.  Written by the waker, read by the thread
	 * itself once it runs again: the scheduler orders the two. */
	__u64 pend_ns;
	__u64 pend_kstack;
	__u32 pend_kind;
	/* se.sum_exec_runtime at the thread's last sample: a sample's stack
	 * is weighted with the run time since, so each thread's stacks add
	 * up to its own run time, whatever the sampling luck of others. */
	__u64 sample_exec_ns;
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

/* Per CPU: the cpu-clock event's count at the last sample, and whom that
 * sample found running (a thread id, 0 for idle or unprofiled). */
struct last_sample {
	__u64 count;
	__u64 id;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct last_sample);
} sample_clock SEC(".maps");

/* Stacks by hash, and weights per (process, kind, stacks); user space
 * sizes both before load and drains them at every read. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct wc_stack);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct wc_stack_key);
	__type(value, __u64);
} stack_counts SEC(".maps");

#define SCAN_WORDS 32
#define SCAN_CALLERS 4

/* Per-CPU stack buffers, one per program that walks stacks.  The sampler
 * (hard IRQ) and the wake-up hook (IRQs off under the run-queue lock)
 * cannot be interrupted by another user of theirs on the same CPU; the
 * syscall-exit hook is preemptible, so it claims its buffer with `busy`
 * and a run that finds it taken goes without a user stack (counted). */
struct scratch {
	struct wc_stack k;
	struct wc_stack u;
	struct wc_stack walk;	     /* the frame-pointer walk, before callers
					are spliced in */
	__u64 words[SCAN_WORDS];     /* the top of the user stack */
	__u64 callers[SCAN_CALLERS]; /* return addresses found in it */
	__u64 busy;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

#define SCRATCH_SAMPLE 0
#define SCRATCH_WAKE 1
#define SCRATCH_SYS_EXIT 2

/* Thread ids handed out so far; ids survive exec and TID reuse. */
__u64 next_id;

/* CLOCK_MONOTONIC when user space last flushed stacks (it writes this):
 * a wait that began before is only charged from here on, since the part
 * before was already shown, as an ongoing wait, in the previous file. */
__u64 window_start_ns;

static __always_inline void count_n(enum wc_counter c, __u64 n)
{
	__u32 zero = 0;
	struct wc_counters *cs = bpf_map_lookup_elem(&counters, &zero);

	if (cs && c < WC_CNT_NR)
		__sync_fetch_and_add(&cs->v[c], n);
}

static __always_inline void count(enum wc_counter c)
{
	count_n(c, 1);
}

/* 0 is "no stack", 1 "stack not stored" (table full): real hashes are
 * never either. */
#define STACK_NONE 0
#define STACK_DROPPED 1

static __always_inline __u64 hash_stack(const struct wc_stack *s)
{
	__u64 h = 0xcbf29ce484222325ULL ^ s->nr;
	__u32 i;

	for (i = 0; i < WC_STACK_DEPTH && i < s->nr; i++) {
		h = (h ^ s->ip[i]) * 0x100000001b3ULL;
		h ^= h >> 31;
	}
	return h > STACK_DROPPED ? h : h + 2;
}

/* Store a stack the kernel just wrote into s (len bytes, or an error) and
 * return its hash. */
static __always_inline __u64 save_stack(struct wc_stack *s, long len)
{
	__u64 h;
	long rc;

	if (len <= 0) {
		if (len < 0)
			count(WC_CNT_STACK_ERRORS);
		return STACK_NONE;
	}
	s->nr = (__u32)(len / sizeof(__u64));
	if (s->nr >= WC_STACK_DEPTH)
		count(WC_CNT_STACKS_TRUNCATED);
	h = hash_stack(s);
	rc = bpf_map_update_elem(&stacks, &h, s, BPF_NOEXIST);
	if (rc && rc != -K_EEXIST) {
		count(WC_CNT_STACKS_FULL);
		return STACK_DROPPED;
	}
	return h;
}

static __always_inline void add_weight(__u32 tgid, __u32 kind, __u64 ustack,
				       __u64 kstack, __u64 w)
{
	struct wc_stack_key k = {
		.tgid = tgid, .kind = kind, .ustack = ustack, .kstack = kstack};
	__u64 *v = bpf_map_lookup_elem(&stack_counts, &k);
	long rc;

	if (v) {
		__sync_fetch_and_add(v, w);
		return;
	}
	rc = bpf_map_update_elem(&stack_counts, &k, &w, BPF_NOEXIST);
	if (rc == -K_EEXIST) {
		v = bpf_map_lookup_elem(&stack_counts, &k);
		if (v)
			__sync_fetch_and_add(v, w);
	} else if (rc) {
		count(WC_CNT_STACK_COUNTS_FULL);
	}
}

static __always_inline struct scratch *scratch_buf(__u32 which)
{
	return bpf_map_lookup_elem(&scratch, &which);
}

/*
 * Frame pointers lose the caller of a function built without them, and
 * Debian's libc is: a thread blocked in nanosleep() shows libc and then
 * the caller's caller.  The lost return address is on the stack between
 * the stack pointer and the frame pointer (the frame of the function
 * without one), so look there for words that point into executable memory
 * right after a call instruction, and splice them in after the innermost
 * frame, in stack order (which is call order).  Requiring both makes a
 * stale pointer in a local variable an unlikely impostor.
 */
#define K_VM_EXEC 0x4

static long vma_exec(struct task_struct *task, struct vm_area_struct *vma,
		     void *data)
{
	*(bool *)data = vma->vm_flags & K_VM_EXEC;
	return 0;
}

/* x86-64 calls: e8 rel32 (5 bytes), and ff /2 in its 2, 3, 4, 6 and 7
 * byte forms (register, disp8, sib+disp8, disp32 or rip, sib+disp32). */
static __always_inline bool after_call(__u64 ret)
{
	__u8 b[8];

	if (bpf_probe_read_user(b, sizeof(b), (void *)(ret - 8)))
		return false;
	if (b[3] == 0xe8)
		return true;
	return (b[6] == 0xff && (b[7] & 0x38) == 0x10) ||
	       (b[5] == 0xff && (b[6] & 0x38) == 0x10) ||
	       (b[4] == 0xff && (b[5] & 0x38) == 0x10) ||
	       (b[2] == 0xff && (b[3] & 0x38) == 0x10) ||
	       (b[1] == 0xff && (b[2] & 0x38) == 0x10);
}

static __always_inline __u32 find_callers(struct scratch *sc,
					  struct task_struct *task,
					  struct pt_regs *regs)
{
	__u64 sp = BPF_CORE_READ(regs, sp), bp = BPF_CORE_READ(regs, bp);
	__u32 i, n = 0, words;

	if (bp <= sp || bp - sp > SCAN_WORDS * 8 * 4)
		return 0;
	words = (bp - sp) / 8;
	if (words > SCAN_WORDS)
		words = SCAN_WORDS;
	if (bpf_probe_read_user(sc->words, sizeof(sc->words), (void *)sp))
		return 0;
	for (i = 0; i < SCAN_WORDS && i < words; i++) {
		__u64 w = sc->words[i];
		bool exec = false;

		/* user text, not the stack itself */
		if (w < 0x10000 || w >= 0x800000000000ULL ||
		    (w >= sp - 0x100000 && w < sp + 0x800000))
			continue;
		bpf_find_vma(task, w, vma_exec, &exec, 0);
		if (!exec || !after_call(w))
			continue;
		if (n < SCAN_CALLERS)
			sc->callers[n] = w;
		if (++n >= SCAN_CALLERS)
			break;
	}
	return n;
}

/* out = walk[0], callers, walk[1..]: at most WC_STACK_DEPTH frames. */
static __always_inline void splice(struct wc_stack *out,
				   const struct wc_stack *walk,
				   const __u64 *callers, __u32 ncallers)
{
	__u32 i, j;

	out->nr = 0;
	if (walk->nr == 0)
		return;
	out->ip[0] = walk->ip[0];
	for (i = 0; i < SCAN_CALLERS && i < ncallers; i++) {
		out->ip[1 + i] = callers[i];
		barrier();
	}
	for (j = 1; j < WC_STACK_DEPTH && j < walk->nr; j++) {
		__u32 k = j + i;

		if (k >= WC_STACK_DEPTH)
			break;
		out->ip[k] = walk->ip[j];
		barrier(); /* a loop, not a memmove call BPF lacks */
	}
	out->nr = walk->nr + i > WC_STACK_DEPTH ? WC_STACK_DEPTH : walk->nr + i;
}

/* A user stack, walked by frame pointers, callers recovered; its hash. */
static __always_inline __u64 user_stack(void *ctx, struct scratch *sc,
					struct task_struct *task,
					struct pt_regs *regs)
{
	long len = bpf_get_stack(ctx, sc->walk.ip, sizeof(sc->walk.ip),
				 BPF_F_USER_STACK);
	__u32 n;

	if (len <= 0)
		return save_stack(&sc->u, len);
	sc->walk.nr = (__u32)(len / sizeof(__u64));
	n = find_callers(sc, task, regs);
	splice(&sc->u, &sc->walk, sc->callers, n);
	return save_stack(&sc->u, (long)sc->u.nr * sizeof(__u64));
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

static __always_inline struct wc_task *create(struct task_struct *task,
					      __u64 now, __u32 state)
{
	struct wc_task init = {};
	struct wc_task *t;

	init.id = __sync_fetch_and_add(&next_id, 1) + 1;
	init.state = state;
	init.ckpt = now;
	init.exec_ns = task->se.sum_exec_runtime;
	init.sample_exec_ns = init.exec_ns;
	t = bpf_task_storage_get(&tasks, task, &init,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		count(WC_CNT_STORAGE_FAILED);
	return t;
}

static __always_inline __u32 slot(__u32 st)
{
	opaque(st);
	return st & 3;
}

/* Charge an off-CPU stretch [from, to] of state st. */
static __always_inline void add_wait(__u64 *times, __u32 st, __u64 from,
				     __u64 to)
{
	if (to > from && st != WC_ONCPU && st <= WC_BLOCKED)
		times[slot(st)] += to - from;
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

/* Record a pending wait without its user stack: the thread died, or it
 * blocked again elsewhere before returning to user space (a page fault,
 * or a kernel thread, which never does). */
static __always_inline void flush_pending(struct task_struct *task,
					  struct wc_task *t)
{
	if (!t->pend_ns)
		return;
	add_weight(task->tgid, t->pend_kind, STACK_NONE, t->pend_kstack,
		   t->pend_ns);
	count(WC_CNT_OFFCPU_STACKS);
	if (!(task->flags & K_PF_KTHREAD))
		count(WC_CNT_OFFCPU_NO_USER);
	t->pend_ns = 0;
}

static __always_inline void switch_out(struct task_struct *prev, __u64 now,
				       bool preempt, unsigned int prev_state)
{
	struct wc_task *t = bpf_task_storage_get(&tasks, prev, 0, 0);
	__u64 exec_ns = prev->se.sum_exec_runtime;
	bool dead = prev_state & K_TASK_DEAD;
	__u64 start;

	if (!t) {
		/* First sight: time before now is not ours to know. */
		if (!dead)
			create(prev, now,
			       preempt ? WC_RUNQ : state_of(prev_state));
		return;
	}
	begin_write(t);
	start = t->ckpt;
	if (t->state != WC_ONCPU) {
		/* switched in unseen: the kernel noted when */
		__u64 arrived = 0;

		if (bpf_core_field_exists(prev->sched_info.last_arrival))
			arrived = prev->sched_info.last_arrival;
		if (arrived > start && arrived <= now) {
			add_wait(t->time_ns, t->state, start, arrived);
			start = arrived;
		}
		count(WC_CNT_SWITCHES_MISSED);
	}
	add_run(t->time_ns, start, now, t->exec_ns, exec_ns);
	if (dead)
		enter(t, WC_DEAD, now, exec_ns);
	else
		enter(t, preempt ? WC_RUNQ : state_of(prev_state), now,
		      exec_ns);
	end_write(t);
	if (dead) {
		flush_pending(prev, t);
		emit_exit(prev, t);
	}
}

static __always_inline void switch_in(struct task_struct *next, __u64 now)
{
	struct wc_task *t = bpf_task_storage_get(&tasks, next, 0, 0);
	__u64 exec_ns = next->se.sum_exec_runtime;

	if (!t) {
		create(next, now, WC_ONCPU);
		return;
	}
	begin_write(t);
	if (t->state == WC_ONCPU) {
		/* switched out unseen: run time is the kernel's, a wait for
		 * a CPU since last_queued is run-queue time, the rest slept */
		__u64 queued = 0;
		__u64 run = exec_ns > t->exec_ns ? exec_ns - t->exec_ns : 0;
		__u64 wall = now > t->ckpt ? now - t->ckpt : 0;
		__u64 rq;

		if (bpf_core_field_exists(next->sched_info.last_queued))
			queued = next->sched_info.last_queued;
		rq = queued > t->ckpt && queued < now ? now - queued : 0;

		t->time_ns[WC_T_ONCPU] += run;
		t->time_ns[WC_T_RUNQ] += rq;
		if (wall > run + rq)
			t->time_ns[WC_T_SLEEP] += wall - run - rq;
		count(WC_CNT_SWITCHES_MISSED);
	} else {
		add_wait(t->time_ns, t->state, t->ckpt, now);
	}
	enter(t, WC_ONCPU, now, exec_ns);
	end_write(t);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(wc_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	bool out = profiled(prev), in = profiled(next);
	__u64 now;

	/* kernel threads and idle, when not profiled, pay for nothing more */
	if (!out && !in)
		return 0;
	/* __schedule() has just updated this run queue's clock. */
	now = rq_clock_of(next);
	if (out)
		switch_out(prev, now, preempt, prev_state);
	if (in)
		switch_in(next, now);
	return 0;
}

/*
 * A wait long enough to deserve a stack has just ended.  The woken thread
 * has not run since it blocked (we hold its run-queue lock), so its kernel
 * stack is still the one it blocked in: walk it now.  Its user stack can
 * only be read from its own context, so the wait stays pending until the
 * thread returns from its system call.  Waits that end the same way merge
 * (a syscall that sleeps several times: fdatasync, poll loops).
 */
static __always_inline void note_wait(struct task_struct *p, struct wc_task *t,
				      __u32 kind, __u64 wait_ns)
{
	struct scratch *sc = scratch_buf(SCRATCH_WAKE);
	__u64 kh = STACK_NONE, start = window_start_ns, mono;
	long len;

	mono = bpf_ktime_get_ns();
	if (start && mono > start && wait_ns > mono - start)
		wait_ns = mono - start;

	if (sc) {
		len = bpf_get_task_stack(p, sc->k.ip, sizeof(sc->k.ip), 0);
		kh = save_stack(&sc->k, len);
	}
	if (t->pend_ns && (t->pend_kstack != kh || t->pend_kind != kind))
		flush_pending(p, t);
	if (t->pend_ns) {
		t->pend_ns += wait_ns;
		return;
	}
	t->pend_ns = wait_ns;
	t->pend_kstack = kh;
	t->pend_kind = kind;
	if (p->flags & K_PF_KTHREAD)
		flush_pending(p, t);
}

/* From wake-up to running is run-queue wait (schedstat's run_delay counts
 * it too), so the sleep ends here, not at switch-in. */
static __always_inline void wake(struct task_struct *p)
{
	struct wc_task *t;
	__u64 now, since;
	__u32 st;

	if (!profiled(p))
		return;
	t = bpf_task_storage_get(&tasks, p, 0, 0);
	/* a wake-up of a thread already running or runnable changes nothing */
	if (t && t->state != WC_SLEEP && t->state != WC_BLOCKED)
		return;
	/* The waker has enqueued p and updated p's run-queue clock: the
	 * moment the kernel starts counting run_delay. */
	now = rq_clock_of(p);
	if (!t) {
		create(p, now, WC_RUNQ);
		return;
	}
	st = t->state;
	since = t->ckpt;
	begin_write(t);
	add_wait(t->time_ns, st, since, now);
	enter(t, WC_RUNQ, now, t->exec_ns);
	end_write(t);
	if (stacks_enabled && now >= since + min_block_ns)
		note_wait(p, t, st, now - since);
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

/*
 * How many sample periods this sample stands for.  A timer that fires late
 * (a vCPU the hypervisor descheduled, interrupts held off) skips the ticks
 * it missed; the cpu-clock count says how much time really passed.  When
 * the same thread was running at the previous sample on this CPU too, the
 * missed ticks are credited to it, instead of the profile of a busy VM
 * quietly thinning out.  Otherwise (idle between, or another thread) the
 * sample counts once: nobody is credited with time it may not have had.
 */
static __always_inline __u64 ticks(struct bpf_perf_event_data *ctx, __u64 id)
{
	struct bpf_perf_event_value v;
	__u32 zero = 0;
	struct last_sample *last = bpf_map_lookup_elem(&sample_clock, &zero);
	__u64 n = 1;

	if (!last || bpf_perf_prog_read_value(ctx, &v, sizeof(v)))
		return 1;
	if (id && last->id == id && last->count && v.counter > last->count)
		n = (v.counter - last->count + sample_period_ns / 2) /
		    sample_period_ns;
	last->count = v.counter;
	last->id = id;
	if (n < 1 || n > 1000)
		n = 1;
	return n;
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
		uh = user_stack(ctx, sc, task,
				(struct pt_regs *)bpf_task_pt_regs(task));
	add_weight(task->tgid, WC_ONCPU, uh, kh, ran);
}

SEC("perf_event")
int wc_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct wc_task *t = NULL;
	__u64 n;

	if (task->pid != 0 && profiled(task))
		t = bpf_task_storage_get(&tasks, task, 0, 0);
	n = ticks(ctx, t ? t->id : 0);
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
	t->samples += n;
	if (stacks_enabled)
		sample_stacks(ctx, task, t);
	count_n(WC_CNT_SAMPLES, n);
	if (n > 1)
		count_n(WC_CNT_SAMPLES_LATE, n - 1);
	return 0;
}

/* On the way back to user space after a long wait: the user stack is the
 * one the thread blocked with.  Attached only when stacks are wanted. */
SEC("tp_btf/sys_exit")
int BPF_PROG(wc_sys_exit, struct pt_regs *regs, long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct wc_task *t = bpf_task_storage_get(&tasks, task, 0, 0);
	struct scratch *sc;
	__u64 uh = STACK_NONE;

	if (!t || !t->pend_ns)
		return 0;
	sc = scratch_buf(SCRATCH_SYS_EXIT);
	if (sc && __sync_lock_test_and_set(&sc->busy, 1) == 0) {
		uh = user_stack(ctx, sc, task,
				(struct pt_regs *)bpf_task_pt_regs(task));
		/* only this CPU contends for it: order, not atomicity */
		barrier();
		WRITE_ONCE(sc->busy, 0);
	} else {
		count(WC_CNT_STACK_ERRORS);
	}
	add_weight(task->tgid, t->pend_kind, uh, t->pend_kstack, t->pend_ns);
	count(WC_CNT_OFFCPU_STACKS);
	t->pend_ns = 0;
	return 0;
}

/* A thread the iterator meets before any scheduler event: start it in the
 * state the kernel says it is in now. */
static __always_inline struct wc_task *adopt(struct task_struct *task)
{
	unsigned int st = BPF_CORE_READ(task, __state);

	if (BPF_CORE_READ(task, on_cpu))
		return create(task, rq_clock_of(task), WC_ONCPU);
	return create(task, rq_clock_of(bpf_get_current_task_btf()),
		      state_of(st));
}

/*
 * Bring a waiting thread's copy up to now.  If it is in fact running, its
 * switch-in went unseen: the wait ended at sched_info.last_arrival and it
 * has run since, exactly as switch_out() will rebuild it.  Charging the
 * whole stretch as waiting instead would report wait time that the switch
 * out then turns into run time, and a counter that was ahead can only
 * stay ahead: the group would show more time than it had.
 */
static __always_inline void charge_waiting(struct task_struct *task,
					   struct wc_task_rec *r, __u32 st,
					   __u64 ckpt, __u64 exec_ns)
{
	__u64 now = rq_clock_of(bpf_get_current_task_btf()), arrived = 0;

	if (BPF_CORE_READ(task, on_cpu) &&
	    bpf_core_field_exists(task->sched_info.last_arrival))
		arrived = BPF_CORE_READ(task, sched_info.last_arrival);
	if (arrived > ckpt && arrived <= now) {
		add_wait(r->time_ns, st, ckpt, arrived);
		add_run(r->time_ns, 0, 0, exec_ns, task->se.sum_exec_runtime);
		return;
	}
	add_wait(r->time_ns, st, ckpt, now);
}

/*
 * Copy an entry that another CPU may be charging and bring it up to now:
 * a running thread by the kernel's run time so far (at most a tick behind;
 * its steal is settled when it switches out), a waiting one by the
 * iterator's own run-queue clock, which is busy running us and so at most
 * a tick behind too.  What is not counted yet is counted at the next read.
 */
static __always_inline bool snapshot(struct task_struct *task,
				     struct wc_task *t, struct wc_task_rec *r)
{
	int i, k;

	for (i = 0; i < 4; i++) {
		__u32 s1 = READ_ONCE(t->seq);
		__u64 ckpt, exec_ns;
		__u32 s2, st;

		barrier();
		st = t->state;
		ckpt = t->ckpt;
		exec_ns = t->exec_ns;
		for (k = 0; k < WC_NSLOTS; k++)
			r->time_ns[k] = t->time_ns[k];
		barrier();
		s2 = READ_ONCE(t->seq);
		if (s1 != s2 || (s1 & 1))
			continue;
		if (st == WC_ONCPU)
			add_run(r->time_ns, 0, 0, exec_ns,
				task->se.sum_exec_runtime);
		else
			charge_waiting(task, r, st, ckpt, exec_ns);
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
