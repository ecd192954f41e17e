/* SPDX-License-Identifier: GPL-2.0 */
/*
 * maps.bpf.h - every map and global the programs share, and the
 * counters.
 *
 * Owns: the task storage (one wc_task per thread), the quick slots,
 * the stack store's maps, the exit ring, the per-CPU scratch and the
 * caller-recovery cache, the counters.  Sizes are fixed here or set by
 * user space before load.
 *
 * Included once, in order, by wallclock.bpf.c.
 */
#ifndef WC_MAPS_BPF_H
#define WC_MAPS_BPF_H

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
	__u32 place;   /* index of the place the current wait began at */
	__u8 loud;     /* places whose hist has a long wait, one bit each */
	__u8 learned;  /* a wait of this thread has been learned from */
	__u8 rd_stale; /* its queue stamp is stale: stale_rd holds */
	__u8 pad;
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
	__u64 walked_at; /* CLOCK_MONOTONIC then */
	/* The wait under way that flushes charged to its stacks: how much
	 * of it, up to when (CLOCK_MONOTONIC), its kernel stack, and the
	 * thread's run time then, which names the wait (a thread that has
	 * not run since waits still). */
	__u64 flushed_ns;
	__u64 flushed_to;
	__u64 flushed_kstack;
	__u64 flushed_exec;
	/* sched_info.run_delay when a move left the queue stamp of this
	 * asleep thread stale (stale.bpf.h) */
	__u64 stale_rd;
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
	__u64 period; /* of the cpu-clock count, at the last sample; 0: none */
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

#define SCAN_WORDS 64
#define SCAN_CALLERS 4

/* The stack search's progress (ustack_x86.bpf.h), kept in the scratch
 * rather than on the BPF stack: the verifier tracks what is on the stack
 * value by value, and would check the search's loop once per count. */
struct scan_vars {
	__u64 sp;
	__u64 fp; /* the walk from the record: where it is */
	__u32 words;
	__u32 n;
	__u32 record; /* its return address, in words from sp; 0: none */
	__u8 asked;
	__u8 search; /* for a frame record too (see is_record) */
};

/* A user stack walk by unwind tables (unwind_x86.bpf.h). */
struct uw_regs {
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u64 now; /* bpf_ktime_get_ns(), once a walk needs it */
	__u32 n;
	__u32 by_table;
	__u32 by_fp;
	__u8 fp_good; /* bp is the caller's rbp as it was */
	__u8 asked;   /* this run's one bpf_find_vma() is spent */
	__u8 leaf_untabled;
	__u8 complete;
	__u32 label; /* enum wc_frame_label: why it ended early; 0: it did not */
	__u32 valid; /* the process's cached mappings checked in this walk */
	__u8 bad;    /* the kernel said an address is not in executable code */
	struct wc_uw_key key;	/* a file's, as the walk looks it up */
	struct wc_uw_want want; /* the walk's request for its table */
};

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
	__u64 record[2]; /* a frame record read (off the BPF stack, which
			    the stack search's callbacks fill) */
	struct uw_regs uw;
	struct scan_vars scan;
	struct wc_task init; /* a thread's first storage value (create) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

#define SCRATCH_SAMPLE 0
#define SCRATCH_SWITCH 1
#define SCRATCH_WALK 2 /* the thread walk (one at a time) */

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
#define Q_PENDING                                                              \
	0x1 /* the next switch-out must charge: a blocked wait
			 or a parked stack is under way */
#define Q_QUIET                                                                \
	0x2 /* no place of the thread has had a long wait lately:
			 nothing to park at a sleep */
#define Q_MERGED                                                               \
	0x4 /* quick switch-outs since the storage's checkpoint:
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
 * before was in the previous file already. */
__u64 window_start_ns;

/* Kernel stacks wc_waits may still walk: user space sets it before each
 * run. */
__u32 wait_walks;

/* Set by user space while its stacks could not be written (the spool is
 * another writer's): none are taken, as if stacks were off. */
__u32 stacks_paused;

static __always_inline bool stacks_live(void)
{
	return stacks_enabled && !*(volatile __u32 *)&stacks_paused;
}

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

#endif /* WC_MAPS_BPF_H */
