// SPDX-License-Identifier: GPL-2.0
/*
 * wallclock.bpf.c - per-thread wall-clock accounting in the kernel.
 *
 * Owns: one task-storage entry per profiled thread, holding the state the
 * thread entered at a switch-out and when (the checkpoint), plus the time
 * already charged to each slot.  A switch-out that charges takes the time
 * since the checkpoint and moves it, so a thread's slots always add up to
 * the time it was watched: the last wait ended when the thread last
 * arrived on a CPU (sched_info.last_arrival, which the kernel sets on the
 * same clock) and it has run since.  The wait is
 * split where the kernel splits it: what schedstat's run_delay grew by was
 * spent in the run queue, the rest asleep (or blocked), so no wake-up hook
 * is needed, and the switch-in has no bookkeeping to do.  Most switch-outs
 * need not even charge: a sleep or a preemption after a stint without
 * steal leaves nothing the kernel's own counters will not tell the next
 * charge (see quick_out), so they skip the task storage and note only
 * when the wait began, in an array slot of their pid.  With stacks on, a
 * switch-in looks at its thread only if its wait may have been long (the
 * kernel's times of its last arrival and wake-up say), to walk the kernel
 * stack it waited in.
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
 * every switch-in (measured: 0.3-3 % of a busy spinner's), which the
 * accounting no longer needs.  A missed switch-out merges two stints and
 * two waits: the run is the kernel's, the waits get the rest of the wall
 * time, in the first one's state.  A switch-out that finds no arrival
 * since its checkpoint cannot place the end of the wait: it is charged as
 * run and steal.  Both are counted (switches_missed).
 *
 * A thread is met first at a switch-out, a sample or the iterator; one
 * started since the programs were loaded is charged from its first stay in
 * the run queue (its run_delay), so short-lived threads count in full.
 *
 * Writers: for one thread, its switches out and in are serialised by the
 * kernel (run-queue locks and the on_cpu hand-off), so each storage entry
 * has one writer at a time and needs no lock.  A quick slot can be written
 * by two threads at once only when their pids share it; what either then
 * reads back is clamped so that no time is lost or counted twice.  The
 * sampler only increments the sample count, which nobody else writes.  The task iterator reads entries
 * while they may change on another CPU: a sequence count (odd while a
 * write is in progress) lets it retry instead of seeing a half-charged
 * entry; a thread it finds running is brought up to now from
 * last_arrival, as its switch-out will be.  Ordering relies on x86-64's
 * total store order plus compiler barriers; see the README's portability
 * note before building for a weakly ordered architecture.
 *
 * Nothing on the context-switch path allocates (except once per thread),
 * calls a clock helper or touches a shared cache line (but for threads
 * whose pids share a quick slot), and it walks a stack only for a wait
 * expected to be long (the user stack, at switch-out) or one that was
 * (the kernel stack, at switch-in).
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

/* How a thread's recent waits from one place went, to decide at the next
 * switch-out from there whether its user stack is worth walking. */
#define WC_PLACES 8

struct wc_place {
	__u32 key;  /* hash of (system call, user stack pointer); 0 unused */
	__u32 hist; /* last 4 waits from here, newest in bit 0: 1 = long */
};

/*
 * The fields every switch-out touches come first: the kernel keeps a task
 * storage value at the start of a cache line (after one pointer), so
 * they fill two lines, which are also all the walk reads; the rest is
 * read only when stacks are walked or samples taken.
 */
struct wc_task {
	__u32 seq;     /* odd while being charged */
	__u32 state;   /* enum wc_state */
	__u64 ckpt;    /* rq->clock when the state was entered */
	__u64 exec_ns; /* se.sum_exec_runtime at the checkpoint */
	/* sched_info.run_delay (schedstat's run-queue total) as of the
	 * checkpoint, counting a wait in the run queue that is under way:
	 * what it grows by is the run-queue part of a wait. */
	__u64 rd_ckpt;
	__u32 place;	/* index of the place the current wait began at */
	__u8 loud;	/* places whose hist has a long wait, one bit each */
	__u8 learned;	/* a wait of this thread has been learned from */
	__u16 pad;
	/* the user stack walked as the current wait began, stored in
	 * `stacks` (user space keeps it while a thread has it parked) */
	__u64 parked_ustack;
	__u64 time_ns[WC_NSLOTS];
	__u64 id;
	__u64 samples;
	/* A long wait from a place that had only short ones lately: its user
	 * stack was not taken, so the next sleep from the same place lends
	 * its own (same system call, same stack depth: same call site).  The
	 * walk reads owed_ns: in the second line. */
	__u64 owed_ns;
	/* se.sum_exec_runtime at the thread's last sample: a sample's stack
	 * is weighted with the run time since, so each thread's stacks add
	 * up to its own run time, whatever the sampling luck of others.
	 * Beside samples, the other field the sampler writes. */
	__u64 sample_exec_ns;
	struct wc_place places[WC_PLACES]; /* the third line */
	__u32 last_place; /* where the previous wait began: likely again */
	__u32 owed_key;
	__u64 owed_kstack;
	__u32 owed_kind;
	__u32 pad2;
	/* the sum of time_ns as the last walk read it (0: never walked): a
	 * final record lost to a full ring takes the rest along, counted */
	__u64 walked_ns;
};
_Static_assert(__builtin_offsetof(struct wc_task, places) == 2 * 64 - 8,
	       "the walk's fields fill the entry's first two cache lines");

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
	__u64 exec_ns; /* that thread's run time then */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct last_sample);
} sample_clock SEC(".maps");

/* Stacks by hash, and weights per (process, kind, stacks); user space
 * sizes both before load and drains them every second. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct wc_stack_short);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct wc_stack);
} deep_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct wc_stack_key);
	__type(value, __u64);
} stack_counts SEC(".maps");

/* wc_held_bucket: user space sizes it, maps it and fills it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wc_held_bucket);
} held SEC(".maps");

const volatile __u32 held_mask = 0;

#define SCAN_WORDS 32
#define SCAN_CALLERS 4

/* Per-CPU stack buffers, one per program that walks stacks: the sampler
 * (hard IRQ) and the switch hook (IRQs off under the run-queue lock)
 * cannot be interrupted by another run of theirs on the same CPU. */
struct scratch {
	struct wc_stack k;
	struct wc_stack u;
	struct wc_stack walk;	     /* the frame-pointer walk, before callers
					are spliced in */
	__u64 words[SCAN_WORDS];     /* the top of the user stack */
	__u64 callers[SCAN_CALLERS]; /* return addresses found in it */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

#define SCRATCH_SAMPLE 0
#define SCRATCH_SWITCH 1

/* Executable mappings of each process, as far as caller recovery has
 * asked about them (below); least recently used processes go first. */
#define TEXTS 8

struct text_key {
	__u64 mm;
	__u32 tgid; /* with mm: a freed mm reused by a new process is new */
	__u32 pad;
};

struct texts {
	__u64 start[TEXTS];
	__u64 end[TEXTS];
	__u32 next;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct text_key);
	__type(value, struct texts);
} texts SEC(".maps");


/*
 * What a switch-out needs to know to skip the task storage: one entry per
 * thread, at its pid modulo QUICK_SLOTS (threads that share a slot take
 * turns owning it, and the one not owning it takes the slow path).  The
 * key (quick_of) tells a thread from one that reuses its pid.  A thread
 * that loses its slot with quick switch-outs not yet charged (another
 * took it over, or exec gave it another pid) is charged as if its last
 * stint had no steal (see charge): no time is lost or counted twice, only
 * that stint's steal, if any, is counted as sleep.
 */
#define QUICK_SLOTS 65536
#define Q_PENDING 0x1 /* the next switch-out must charge: a blocked wait
			 or a parked stack is under way */
#define Q_QUIET 0x2   /* no place of the thread has had a long wait lately:
			 nothing to park at a sleep */
#define Q_MERGED 0x4  /* quick switch-outs since the storage's checkpoint:
			 exec_dep says how much of the time since was run */

struct quick {
	__u64 key;	/* 0: unused */
	__u64 dep;	/* rq clock at the thread's last switch-out */
	__u64 rd_dep;	/* its sched_info.run_delay then */
	__u64 exec_dep; /* its se.sum_exec_runtime then, if quick */
	__u32 flags;
	/* the place the thread last slept at, if its recent waits were all
	 * short: a sleep from there has nothing to park either */
	__u32 quiet_key;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, QUICK_SLOTS);
	__type(key, __u32);
	__type(value, struct quick);
} quicks SEC(".maps");

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

/* Whether user space holds this stack already: then naming it is enough
 * (and storing it again would only be copied out and thrown away). */
static __always_inline bool user_holds(__u64 h)
{
	__u32 i = wc_held_bucket_of(h, held_mask);
	struct wc_held_bucket *b = bpf_map_lookup_elem(&held, &i);
	int w;

	if (!b)
		return false;
	for (w = 0; w < WC_HELD_WAYS; w++)
		if (READ_ONCE(b->hash[w]) == h)
			return true;
	return false;
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
	if (user_holds(h)) {
		count(WC_CNT_STACKS_KNOWN);
		return h;
	}
	/* the short layout is a prefix of the full one */
	if (s->nr <= WC_SHORT_DEPTH)
		rc = bpf_map_update_elem(&stacks, &h, s, BPF_NOEXIST);
	else
		rc = bpf_map_update_elem(&deep_stacks, &h, s, BPF_NOEXIST);
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

/*
 * Whether an address is in executable memory is bpf_find_vma()'s to say,
 * but with IRQs off (the sampler, the switch hook) it can answer only once
 * until the CPU next takes interrupts (it releases the mmap lock from an
 * irq_work), and each answer costs that interrupt.  So each process keeps
 * the executable mappings it was found to have, and a walk asks about at
 * most one new one.  A kept range can only go stale by being unmapped
 * while its process lives on, and a candidate must still follow a call
 * instruction.
 */
struct vma_answer {
	__u64 start;
	__u64 end;
	bool exec;
};

static long vma_note(struct task_struct *task, struct vm_area_struct *vma,
		     void *data)
{
	struct vma_answer *a = data;

	a->start = vma->vm_start;
	a->end = vma->vm_end;
	a->exec = (vma->vm_flags & K_VM_EXEC) != 0;
	return 0;
}

static __always_inline struct texts *texts_of(struct task_struct *task)
{
	struct text_key k = {.mm = (__u64)task->mm, .tgid = task->tgid};
	struct texts *x = bpf_map_lookup_elem(&texts, &k), fresh = {};

	if (x)
		return x;
	bpf_map_update_elem(&texts, &k, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&texts, &k);
}

/* Whether w is in an executable mapping of task: false if not, or not
 * known and this walk's one question was already asked. */
static __always_inline bool is_exec(struct texts *x, struct task_struct *task,
				    __u64 w, bool *asked)
{
	struct vma_answer a = {};
	__u32 i;

	for (i = 0; i < TEXTS; i++)
		if (w >= x->start[i] && w < x->end[i])
			return true;
	if (*asked)
		return false;
	*asked = true;
	if (bpf_find_vma(task, w, vma_note, &a, 0) || !a.exec || a.end <= w)
		return false;
	i = x->next++ % TEXTS;
	x->start[i & (TEXTS - 1)] = a.start;
	x->end[i & (TEXTS - 1)] = a.end;
	return true;
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

struct scan {
	struct scratch *sc;
	struct texts *texts;
	struct task_struct *task;
	__u64 sp;
	__u32 words;
	__u32 n;
	bool asked;
};

/* One word of the scan; a bpf_loop() body, so the verifier walks it once
 * rather than once per word. */
static long scan_word(__u64 i, void *data)
{
	struct scan *c = data;
	struct scratch *sc = c->sc;
	__u64 w;

	if (!sc || !c->texts || i >= c->words || i >= SCAN_WORDS ||
	    c->n >= SCAN_CALLERS)
		return 1;
	w = sc->words[i & (SCAN_WORDS - 1)];
	/* user text, not the stack itself */
	if (w < 0x10000 || w >= 0x800000000000ULL ||
	    (w >= c->sp - 0x100000 && w < c->sp + 0x800000))
		return 0;
	/* the cheap test first: asking about a mapping costs an IPI */
	if (!after_call(w) || !is_exec(c->texts, c->task, w, &c->asked))
		return 0;
	sc->callers[c->n & (SCAN_CALLERS - 1)] = w;
	c->n++;
	return 0;
}

static __always_inline __u32 find_callers(struct scratch *sc,
					  struct task_struct *task,
					  struct pt_regs *regs)
{
	__u64 sp = BPF_CORE_READ(regs, sp), bp = BPF_CORE_READ(regs, bp);
	struct scan c = {.sc = sc, .task = task, .sp = sp};

	if (bp <= sp || bp - sp > SCAN_WORDS * 8 * 4)
		return 0;
	c.words = (bp - sp) / 8;
	if (bpf_probe_read_user(sc->words, sizeof(sc->words), (void *)sp))
		return 0;
	c.texts = texts_of(task);
	if (!c.texts)
		return 0;
	bpf_loop(SCAN_WORDS, scan_word, &c, 0);
	return c.n < SCAN_CALLERS ? c.n : SCAN_CALLERS;
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

/* The current thread's user stack into sc->u, walked by frame pointers,
 * callers recovered; false if the kernel could not walk it. */
static __always_inline bool walk_user(void *ctx, struct scratch *sc,
				      struct task_struct *task,
				      struct pt_regs *regs)
{
	long len = bpf_get_stack(ctx, sc->walk.ip, sizeof(sc->walk.ip),
				 BPF_F_USER_STACK);
	__u32 n;

	sc->u.nr = 0;
	if (len <= 0) {
		if (len < 0)
			count(WC_CNT_STACK_ERRORS);
		return false;
	}
	sc->walk.nr = (__u32)(len / sizeof(__u64));
	n = find_callers(sc, task, regs);
	splice(&sc->u, &sc->walk, sc->callers, n);
	return sc->u.nr > 0;
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
static __always_inline void emit_first_exit(struct task_struct *task,
					    __u64 now)
{
	__u64 arrived = task->sched_info.last_arrival;
	__u64 rd = task->sched_info.run_delay;
	__u64 run = task->se.sum_exec_runtime, stint;
	struct wc_task_rec *r;

	if (!load_mono_ns || task->start_time < load_mono_ns ||
	    arrived > now)
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

/* Record a long wait's weight, once both its stacks are known. */
static __always_inline void add_wait_weight(struct task_struct *p, __u32 kind,
					    __u64 uh, __u64 kh, __u64 wait_ns)
{
	if (uh == STACK_NONE && !(p->flags & K_PF_KTHREAD))
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

/* A long wait of p that just ended: its kernel stack now, its user stack
 * from where it was parked, or owed (unexpected) or none (never seen going
 * to sleep).  A wait that began before the window the plugin is filling
 * is charged from the window's start on: the part before was in the
 * previous file already, as a wait under way. */
static __always_inline void record_wait(struct task_struct *p,
					struct wc_task *t, __u32 kind,
					__u64 wait_ns, __u64 uh, bool owe)
{
	struct scratch *sc = scratch_buf(SCRATCH_SWITCH);
	__u64 kh = STACK_NONE, start = window_start_ns;
	__u64 mono = bpf_ktime_get_ns();
	long len;

	if (start && mono > start && wait_ns > mono - start)
		wait_ns = mono - start;
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

/*
 * Charge prev's time since its checkpoint (its last switch-out that
 * charged), as it switches out again: the last wait ended when it last
 * arrived on a CPU (the kernel notes when, in sched_info.last_arrival, on
 * the run queue's clock, which is ours), and it has run since.  So the
 * switch-in needs no bookkeeping.  Run
 * time well beyond the stretch since the arrival means a switch-out went
 * unseen (two stints, two waits): the waits then get what the run leaves
 * of the wall time.  `before` is the run time of the stints before this
 * one since the checkpoint (whose switch-outs were quick), or
 * BEFORE_UNKNOWN.  Returns the part of the wait spent asleep.
 */
#define UNSEEN_RUN_NS 2000000ULL

#define BEFORE_UNKNOWN (~0ULL)

static __always_inline __u64 charge(struct task_struct *prev,
				    struct wc_task *t, __u64 now,
				    __u64 exec_ns, __u64 before)
{
	__u64 arrived = prev->sched_info.last_arrival, start = t->ckpt;
	__u64 wall = now > start ? now - start : 0;
	__u64 run = exec_ns > t->exec_ns ? exec_ns - t->exec_ns : 0;
	__u64 stint = wall, off = 0;

	if (t->state == WC_ONCPU) {
		/* adopted running: no wait to end */
		before = 0;
	} else if (arrived < start || arrived > now) {
		count(WC_CNT_SWITCHES_MISSED); /* no end to place */
		before = 0;
	} else {
		/* `before` ran in stints since the checkpoint whose
		 * switch-outs were quick, so had no steal: the rest of
		 * the time up to this stint was waiting.  Unknown (the
		 * slot was lost), this stint is taken to have had none. */
		stint = now - arrived;
		off = arrived - start;
		if (before == BEFORE_UNKNOWN)
			before = run > stint ? run - stint : 0;
		if (before > run)
			before = run;
		if (before > off)
			before = off;
		off -= before;
		if (run - before > stint + UNSEEN_RUN_NS) {
			count(WC_CNT_SWITCHES_MISSED);
			off = wall > run ? wall - run : 0;
			before = 0;
		}
	}
	t->time_ns[WC_T_ONCPU] += run;
	if (stint > run - before)
		t->time_ns[WC_T_STEAL] += stint - (run - before);
	return add_wait(t->time_ns, t->state, 0, off,
			runq_part(prev, t->rd_ckpt, arrived));
}

/* The quick entry of a thread, and the key it must hold to be its: its
 * pid, and its stack canary, random per task, where the kernel has one (a
 * thread that execs takes its leader's pid, not its canary), else its
 * start time.  The canary shares a cache line with the pid; the start
 * time is one more miss per thread in a walk. */
static __always_inline struct quick *quick_of(struct task_struct *p,
					      __u64 *key)
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
				    struct task_struct *prev,
				    struct wc_task *t, __u64 now, bool dead)
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
static __always_inline bool quick_out(struct task_struct *prev,
				      struct quick *q, __u64 key, __u64 now,
				      __u32 state)
{
	__u64 arrived;

	if (state != WC_SLEEP && state != WC_RUNQ)
		return false;
	if (!q || q->key != key || (q->flags & Q_PENDING))
		return false;
	if (stacks_enabled && state == WC_SLEEP && !(q->flags & Q_QUIET) &&
	    !at_quiet_place(prev, q->quiet_key))
		return false;
	arrived = prev->sched_info.last_arrival;
	if (arrived > now || now - arrived != prev->se.sum_exec_runtime -
						       prev->se.prev_sum_exec_runtime)
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
		t = first_sight(prev, now, WC_ONCPU, true);
		if (!t)
			return;
	}
	begin_write(t);
	slept = charge(prev, t, now, exec_ns, merged_run(q, key, t->exec_ns));
	t->rd_ckpt = prev->sched_info.run_delay;
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
	if (stacks_enabled && (state == WC_SLEEP || state == WC_BLOCKED) &&
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

	if (!stacks_enabled)
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

SEC("tp_btf/sched_switch")
int BPF_PROG(wc_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	/* without stacks a switch-in has nothing to do */
	bool out = profiled(prev), in = stacks_enabled && profiled(next);
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

/*
 * How many sample periods this sample stands for.  A timer that fires late
 * (a vCPU the hypervisor descheduled, interrupts held off) skips the ticks
 * it missed; the cpu-clock count says how much time really passed.  When
 * the same thread was running at the previous sample on this CPU too, the
 * missed ticks are credited to it, instead of the profile of a busy VM
 * quietly thinning out, but no more than its own run time since covers:
 * the clock also ran while the hypervisor had the vCPU (steal), or while
 * other threads ran between.  Otherwise (idle between, or another thread)
 * the sample counts once: nobody is credited with time it may not have had.
 */
static __always_inline __u64 ticks(struct bpf_perf_event_data *ctx, __u64 id,
				   __u64 exec_ns)
{
	const __u64 half = sample_period_ns / 2;
	struct bpf_perf_event_value v;
	__u32 zero = 0;
	struct last_sample *last = bpf_map_lookup_elem(&sample_clock, &zero);
	__u64 n = 1, ran;

	if (!last || bpf_perf_prog_read_value(ctx, &v, sizeof(v)))
		return 1;
	if (id && last->id == id && last->count && v.counter > last->count) {
		n = (v.counter - last->count + half) / sample_period_ns;
		ran = exec_ns > last->exec_ns ? exec_ns - last->exec_ns : 0;
		ran = (ran + half) / sample_period_ns;
		if (n > ran)
			n = ran;
	}
	last->count = v.counter;
	last->id = id;
	last->exec_ns = exec_ns;
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
		if (walk_user(ctx, sc, task,
			      (struct pt_regs *)bpf_task_pt_regs(task)))
			uh = save_stack(&sc->u, (long)sc->u.nr * sizeof(__u64));
	add_weight(task->tgid, WC_ONCPU, uh, kh, ran);
}

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
			t = first_sight(task, rq_clock_of(task), WC_ONCPU,
					true);
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
	t->samples += n;
	if (stacks_enabled)
		sample_stacks(ctx, task, t);
	count_n(WC_CNT_SAMPLES, n);
	if (n > 1)
		count_n(WC_CNT_SAMPLES_LATE, n - 1);
	return 0;
}

/* A thread the iterator meets before any scheduler event: start it in the
 * state the kernel says it is in now.  Not one that is exiting: if it died
 * at its first switch-out, its whole life went through the exit ring under
 * an id of its own, and a new entry for the zombie would never be heard
 * from again (the account would count a thread lost); if not, its last
 * switch-out will do the same. */
static __always_inline struct wc_task *adopt(struct task_struct *task)
{
	unsigned int st = BPF_CORE_READ(task, __state);

	if (BPF_CORE_READ(task, flags) & K_PF_EXITING)
		return NULL;

	if (BPF_CORE_READ(task, on_cpu))
		return first_sight(task, rq_clock_of(task), WC_ONCPU, true);
	return first_sight(task, rq_clock_of(bpf_get_current_task_btf()),
			   state_of(st), false);
}

/*
 * Bring a waiting thread's copy up to now.  If it is in fact running, the
 * wait ended at sched_info.last_arrival and it has run since, exactly as
 * its switch-out will charge it.  Charging the whole stretch as waiting
 * instead would report wait time that the switch-out then turns into run
 * time, and a counter that was ahead can only stay ahead: the group would
 * show more time than it had.  Stints since the checkpoint whose
 * switch-outs took the quick path are run, and the rest waits, as the
 * next slow switch-out will find.
 */
struct merged {
	__u64 run; /* merged_run() */
	__u64 dep; /* the last switch-out, if the entry is the thread's */
};

static __always_inline void charge_waiting(struct task_struct *task,
					   struct wc_task_rec *r, __u32 st,
					   __u64 ckpt, __u64 exec_ns,
					   __u64 rd_ckpt,
					   const struct merged *m)
{
	__u64 now = rq_clock_of(bpf_get_current_task_btf()), arrived = 0;
	__u64 run_ns = task->se.sum_exec_runtime, before;

	if (task->on_cpu)
		arrived = task->sched_info.last_arrival;
	/* a quick switch-out since the arrival: it is on its way off the
	 * CPU (on_cpu is cleared after the tracepoint) */
	if (arrived && m->dep >= arrived)
		arrived = 0;
	/* running: its wait ended at the arrival, or (an arrival before the
	 * checkpoint, on another CPU's clock) had ended already, as its
	 * switch-out will find */
	if (arrived && arrived <= now) {
		before = m->run;
		if (before == BEFORE_UNKNOWN)
			before = run_ns > exec_ns + (now - arrived)
					 ? run_ns - exec_ns - (now - arrived)
					 : 0;
		if (arrived > ckpt + before)
			add_wait(r->time_ns, st, ckpt + before, arrived,
				 runq_part(task, rd_ckpt, arrived));
		add_run(r->time_ns, 0, 0, exec_ns, run_ns);
		return;
	}
	before = run_ns > exec_ns ? run_ns - exec_ns : 0;
	add_wait(r->time_ns, st, ckpt + before, now,
		 runq_part(task, rd_ckpt, now));
	add_run(r->time_ns, 0, 0, exec_ns, run_ns);
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
	struct quick *q;
	struct merged m;
	__u64 key;
	int i, k;

	q = quick_of(task, &key);
	for (i = 0; i < 4; i++) {
		__u32 s1 = READ_ONCE(t->seq);
		__u64 ckpt, exec_ns, rd_ckpt;
		__u32 s2, st;

		barrier();
		st = t->state;
		ckpt = t->ckpt;
		exec_ns = t->exec_ns;
		rd_ckpt = t->rd_ckpt;
		for (k = 0; k < WC_NSLOTS; k++)
			r->time_ns[k] = t->time_ns[k];
		/* inside the count: a charge that clears the entry's
		 * merged run comes after the checkpoint it charged to */
		m.run = merged_run(q, key, exec_ns);
		m.dep = q && q->key == key ? q->dep : 0;
		barrier();
		s2 = READ_ONCE(t->seq);
		if (s1 != s2 || (s1 & 1))
			continue;
		if (st == WC_ONCPU)
			add_run(r->time_ns, 0, 0, exec_ns,
				task->se.sum_exec_runtime);
		else
			charge_waiting(task, r, st, ckpt, exec_ns, rd_ckpt,
				       &m);
		r->state = st;
		r->id = t->id;
		r->samples = t->samples;
		r->parked_ustack = t->parked_ustack;
		r->owed_kstack = t->owed_ns ? t->owed_kstack : STACK_NONE;
		return true;
	}
	return false;
}

/* libbpf's bpf_ksym_exists, which Debian 12's libbpf lacks */
#define ksym_exists(sym) (!!(sym))

/* 6.2+; where it is missing the walk only goes without the warming */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __weak __ksym;

/*
 * The walk chases pointers: a thread's record takes some fifteen cache
 * lines (nine of its task_struct, its storage's pointer table, its entry,
 * its quick slot), and left alone it waits for one miss after another:
 * the next thread is found only from this one, its entry only from its
 * table, its table only from its task.  Asking early for the next thread's
 * lines with plain loads (BPF has no prefetch) does not help much either:
 * a load that misses holds up every instruction after it until it is
 * served, so each thread still waits about one miss.  So the walk asks
 * for the lines of WARM_BATCH threads at once, WARM_FAR threads ahead,
 * and waits for one miss per batch.  Where those threads are, it learns
 * from the walk before: walk_hints, indexed by thread id, notes where the
 * thread met WARM_FAR after it was, task and entry.  The lines those
 * point to (the storage table, the quick slot, the next hint) are asked
 * for WARM_NEAR ahead, once the task's lines have come in.  The last
 * WARM_RING threads' hints and ids are kept in `ahead` (the walk's alone:
 * runs never overlap).  A process that came or went spoils only the hints
 * of the few threads before it; loads through a hint are checked (a stale
 * or garbage address reads 0) and their values unused.  Measured at
 * 10,000 threads under churn (tests/bench/readbench): a fifth off the
 * read's CPU time.
 */
#define WARM_BATCH 8
#define WARM_FAR (4 * WARM_BATCH)
#define WARM_NEAR (2 * WARM_BATCH)
#define WARM_RING 64 /* > WARM_FAR + WARM_BATCH, a power of two */
#define HINT_SLOTS 65536

struct walk_hint {
	__u64 task;
	__u64 entry;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HINT_SLOTS);
	__type(key, __u32);
	__type(value, struct walk_hint);
} walk_hints SEC(".maps");

struct walk_ahead {
	__u64 task[WARM_RING];	/* by walk position */
	__u64 entry[WARM_RING];
	__u32 tid[WARM_RING];
	/* where a run is in the process list (a count in a register would
	 * keep the verifier from seeing that the loop's states converge) */
	__u32 proc_pos;
};

static struct walk_ahead ahead;

static __always_inline __u32 ring_slot(__u32 pos)
{
	opaque(pos);
	return pos & (WARM_RING - 1);
}

static __always_inline struct walk_hint *hint_of(__u32 tid)
{
	__u32 i = tid & (HINT_SLOTS - 1);

	return bpf_map_lookup_elem(&walk_hints, &i);
}

static __always_inline void touch(unsigned long addr)
{
	struct list_head *l = bpf_rdonly_cast(
		(void *)addr, bpf_core_type_id_kernel(struct list_head));
	void *v = l->next;

	barrier_var(v);
}

static __always_inline struct task_struct *task_at(__u64 addr)
{
	return bpf_rdonly_cast((void *)addr,
			       bpf_core_type_id_kernel(struct task_struct));
}

/* Load a value only to have its line fetched. */
#define fetch(x)                                                               \
	({                                                                     \
		__u64 __v = (__u64)(x);                                        \
		barrier_var(__v);                                              \
	})

/* The task's fields the record and the iterator's next step read, and
 * its entry's two lines. */
static __always_inline void warm_far(__u32 i)
{
	struct task_struct *task;
	__u64 e = ahead.entry[i];

	if (!ahead.task[i])
		return;
	task = task_at(ahead.task[i]);
	fetch(task->se.sum_exec_runtime);
	fetch(task->sched_info.run_delay);
	fetch(task->sched_info.last_queued);
	fetch(task->group_leader);
	fetch(task->bpf_storage);
	fetch(task->signal);
	fetch(task->thread_node.next);
	fetch(task->flags);
	fetch(task->pid);
	if (e) {
		touch(e);
		touch(e + 64);
	}
}

/* What those lines point to: the table the storage lookup reads first
 * (16 pointers: two lines), the quick slot, the thread's hint, and what
 * the first thread of a process reads for all of them: the end of the
 * thread list (in signal_struct) and the leader's start time and name. */
static __always_inline void warm_near(__u32 i)
{
	struct task_struct *task, *leader;
	unsigned long st;
	struct quick *q;
	__u64 key;

	if (!ahead.task[i])
		return;
	task = task_at(ahead.task[i]);
	st = (unsigned long)task->bpf_storage;
	if (st) {
		touch(st);
		touch(st + 64);
	}
	fetch(task->signal->thread_head.next);
	leader = task->group_leader;
	fetch(leader->start_time);
	fetch(leader->comm[0]);
	q = quick_of(task, &key);
	if (q)
		fetch(q->key);
	touch((unsigned long)hint_of(task->pid));
}

/* Before the thread at pos: learn where the one WARM_FAR on is, and at
 * the end of a batch ask for the lines of the next batch. */
static __always_inline void warm_ahead(__u32 pos, struct task_struct *task)
{
	struct walk_hint *h = hint_of(task->pid);
	__u32 i = ring_slot(pos + WARM_FAR), k;

	if (!ksym_exists(bpf_rdonly_cast))
		return;
	ahead.task[i] = h ? h->task : 0;
	ahead.entry[i] = h ? h->entry : 0;
	if (pos % WARM_BATCH != WARM_BATCH - 1)
		return;
	for (k = 0; k < WARM_BATCH; k++)
		warm_far(ring_slot(pos + WARM_FAR - k));
	for (k = 0; k < WARM_BATCH; k++)
		warm_near(ring_slot(pos + WARM_NEAR - k));
}

/* After it: it is where the thread WARM_FAR before it should look next
 * time.  Written only when it changed: a steady walk dirties nothing. */
static __always_inline void note_ahead(__u32 pos, struct task_struct *task,
				       __u64 entry)
{
	struct walk_hint *h;

	ahead.tid[ring_slot(pos)] = task->pid;
	if (pos < WARM_FAR)
		return;
	h = hint_of(ahead.tid[ring_slot(pos - WARM_FAR)]);
	if (!h)
		return;
	if (h->task != (__u64)task)
		h->task = (__u64)task;
	if (h->entry != entry)
		h->entry = entry;
}

/* The record of one live thread, brought up to now; false if there is
 * none to give (not profiled, no storage, torn, or dead already).  *entry
 * says where its storage entry is, for the next walk's warming.  A
 * function of its own, not inlined: inside the open-coded walk's loops
 * the verifier took 1.4 s over the inlined body, and 0.1 s over this. */
static __noinline bool thread_rec(struct task_struct *task,
				  struct wc_task_rec *r, __u64 *entry)
{
	struct wc_task *t;

	if (!profiled(task))
		return false;
	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!t)
		t = adopt(task);
	if (!t)
		return false;
	*entry = (__u64)t;
	if (!snapshot(task, t, r)) {
		count(WC_CNT_TORN_READS);
		return false;
	}
	/* A dead thread's final record went through the exit ring; a zombie
	 * leader stays visible here and must not be counted twice. */
	if (r->state == WC_DEAD)
		return false;
	t->walked_ns = sum_slots(r->time_ns);
	fill_identity(r, task);
	return true;
}

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

extern int bpf_iter_task_new(struct bpf_iter_task *it,
			     struct task_struct *task, unsigned int flags)
	__weak __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it)
	__weak __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __weak __ksym;
extern struct task_struct *bpf_task_from_pid(s32 pid) __weak __ksym;
extern struct task_struct *bpf_task_acquire(struct task_struct *p)
	__weak __ksym;
extern void bpf_task_release(struct task_struct *p) __weak __ksym;
extern void bpf_rcu_read_lock(void) __weak __ksym;
extern void bpf_rcu_read_unlock(void) __weak __ksym;

/*
 * The same walk, open-coded (kernels with bpf_iter_task, 6.7+): it skips
 * the seq_file machinery and the pid lookup per thread that make the
 * iterator above cost twice as much a thread.  User space runs it once per
 * range of process ids [snap.lo, snap.hi), each holding about as many
 * threads as it wants handled in one go (a run does not yield the CPU),
 * and reads the records the run wrote, snaps[0, snap.count), where they
 * are: the array is mapped into user space.  (A ring buffer's reserve and
 * commit took 280 ns a record here, more than the rest of a thread's
 * record; the run is the array's only writer, and user space reads it
 * only once the run has returned.)  A run that fills the array says where
 * it stopped (stop_tgid, stop_tid: the thread not written); user space
 * takes the records, runs the rest of that process (resume_tid) and then
 * the process ids on either side of it again.  A thread written twice in
 * one read costs nothing: records are cumulative.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct wc_task_rec);
} snaps SEC(".maps");

struct wc_snap_args snap;

/* Write the threads of one process, from `from` on; false once the array
 * is full (the stop is noted). */
static __always_inline bool snap_threads(struct task_struct *from)
{
	struct bpf_iter_task it;
	struct task_struct *task;
	struct wc_task_rec *r;
	bool ok = true;
	__u64 entry;

	bpf_iter_task_new(&it, from, BPF_TASK_ITER_PROC_THREADS);
	while ((task = bpf_iter_task_next(&it))) {
		warm_ahead(snap.pos, task);
		r = bpf_map_lookup_elem(&snaps, &snap.count);
		if (!r) {
			snap.stop_tgid = task->tgid;
			snap.stop_tid = task->pid;
			ok = false;
			break;
		}
		__builtin_memset(r, 0, sizeof(*r));
		entry = 0;
		if (thread_rec(task, r, &entry))
			snap.count++;
		note_ahead(snap.pos, task, entry);
		snap.pos++;
	}
	bpf_iter_task_destroy(&it);
	return ok;
}

/*
 * Every run walks the whole process list to find the processes of its
 * range, one pointer after another (a quarter of a millisecond a pass at
 * 1,000 processes, cold).  The list changes little between passes (three
 * a read at 10,000 threads), so each pass notes where it found its nth
 * process, and the next asks for the lines of PROC_BATCH processes at
 * once, PROC_FAR ahead, from those notes: the two lines its step and its
 * test read.  A note that is off (the list changed) costs only its loads.
 */
#define PROC_BATCH 8
#define PROC_FAR (2 * PROC_BATCH)
#define PROC_SLOTS 65536

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROC_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} walk_procs SEC(".maps");

static __always_inline void warm_procs(__u32 k, struct task_struct *p)
{
	__u64 *at = bpf_map_lookup_elem(&walk_procs, &k);
	struct task_struct *q;
	__u32 i, j;

	if (!at || !ksym_exists(bpf_rdonly_cast))
		return;
	if (*at != (__u64)p)
		*at = (__u64)p;
	if (k % PROC_BATCH)
		return;
	for (i = 0; i < PROC_BATCH; i++) {
		j = k + PROC_FAR + i;
		at = bpf_map_lookup_elem(&walk_procs, &j);
		if (!at || !*at)
			continue;
		q = task_at(*at);
		fetch(q->tasks.next);
		fetch(q->tgid);
	}
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
	    !ksym_exists(bpf_task_from_pid) ||
	    !ksym_exists(bpf_rcu_read_lock))
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
