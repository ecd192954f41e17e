/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * wallclock.h - the only contract between the BPF programs and user space.
 *
 * Owns: the thread states time is charged to, the per-thread record the task
 * iterator and the exit ring buffer emit, and the per-CPU event counters.
 * Both sides include it; change it only together with bpf/wallclock.bpf.c and
 * plugin/core/wc_collector.c.
 *
 * Units are in the names: every time is nanoseconds of one thread's time.
 * On-CPU time is the kernel's own sum_exec_runtime and the rest is measured
 * on the scheduler's run-queue clocks (the ones schedstat uses), so on-CPU
 * and run-queue wait mean exactly what the kernel means by them.
 */
#ifndef WALLCLOCK_BPF_H
#define WALLCLOCK_BPF_H

#define WC_COMM_LEN 16

/* The state a thread is in.  DEAD marks a thread whose final record has
 * been emitted, so nothing charges it again. */
enum wc_state {
	WC_ONCPU = 0,	/* running on a CPU */
	WC_RUNQ = 1,	/* runnable, waiting for a CPU (run_delay) */
	WC_SLEEP = 2,	/* interruptible, idle or stopped sleep */
	WC_BLOCKED = 3, /* uninterruptible, not TASK_NOLOAD: I/O */
	WC_DEAD = 5,
};

/*
 * Where a thread's time goes: one slot per charged state, plus STEAL, the
 * part of an on-CPU stretch the kernel does not count as the thread's run
 * time (hypervisor steal, and interrupt time on kernels with
 * IRQ_TIME_ACCOUNTING).  All slots together are the thread's wall time.
 */
enum wc_slot {
	WC_T_ONCPU = WC_ONCPU,
	WC_T_RUNQ = WC_RUNQ,
	WC_T_SLEEP = WC_SLEEP,
	WC_T_BLOCKED = WC_BLOCKED,
	WC_T_STEAL = 4,
	WC_NSLOTS = 5,
};

/* wc_task_rec.flags */
#define WC_REC_KTHREAD 0x1u /* a kernel thread (PF_KTHREAD) */
#define WC_REC_EXITED 0x2u  /* final record of a thread, from the exit ring */

/*
 * One thread, cumulative since the profiler first saw it.  The task iterator
 * emits one per live thread at each read (charging in-progress time up to
 * the moment it looks); the scheduler hook emits a final one when the thread
 * dies.  User space keeps the previous record per id and takes differences.
 */
struct wc_task_rec {
	__u64 id; /* unique per thread for the life of the profiler */
	__u64 leader_start_ns; /* start time of the thread group leader */
	__u64 time_ns[WC_NSLOTS];
	__u64 samples;	     /* on-CPU samples taken while this thread ran */
	__u64 parked_ustack; /* stack hash a wait under way will name */
	__u64 owed_kstack;   /* stack hash an owed wait will name */
	__u64 read_ns; /* CLOCK_MONOTONIC when read; 0 in a final record */
	__u32 tid;
	__u32 tgid;
	__u32 flags;
	__u32 state;
	char leader_comm[WC_COMM_LEN];
};

/*
 * The open-coded walk's arguments (wc_snap, in .bss): it writes the
 * threads of the processes with lo <= tgid < hi, first those of process
 * lo from thread resume_tid on if that is set, into its array of records
 * from index count on (user space sets it to 0 before a run); a full array
 * stops it at (stop_tgid, stop_tid), the thread not written (stop_tgid 0:
 * no stop).  pos counts the threads met since user space set it to 0 at
 * the start of a read: where a thread was found last time, by position,
 * lets the walk fetch what it will need a few threads ahead.
 */
struct wc_snap_args {
	__u32 lo;
	__u32 hi;
	__u32 resume_tid;
	__u32 stop_tgid;
	__u32 stop_tid;
	__u32 count;
	__u32 pos;
};

/* Per-CPU event counters, summed by user space.  Only rare paths, samples
 * and the context switch's slow path count here, so a quick switch-out
 * pays nothing for them. */
enum wc_counter {
	WC_CNT_SAMPLES,	       /* on-CPU samples of a profiled thread */
	WC_CNT_SAMPLES_LATE,   /* of those, ticks recovered from a late timer */
	WC_CNT_IDLE_SAMPLES,   /* samples that found the CPU idle */
	WC_CNT_SAMPLES_LOST,   /* samples of a thread with no storage yet */
	WC_CNT_STORAGE_FAILED, /* task storage could not be created */
	WC_CNT_EXITS,	       /* threads that died while profiled */
	WC_CNT_EXITS_DROPPED,  /* final records lost to a full exit ring */
	WC_CNT_TORN_READS,     /* iterator gave up on a thread being updated */
	WC_CNT_SWITCHES_MISSED, /* switch-outs with no arrival since the last */
	WC_CNT_STACKS_FULL,	/* a new stack found the stack table full */
	WC_CNT_STACK_COUNTS_FULL, /* a new (process, stack) found its table full */
	WC_CNT_STACK_ERRORS,	  /* the kernel could not walk a stack */
	WC_CNT_OFFCPU_STACKS,	  /* off-CPU waits recorded with a stack */
	WC_CNT_OFFCPU_NO_USER,	  /* of those, without a user stack */
	WC_CNT_OFFCPU_USER_MISSED, /* of those, unexpected (recent waits from
				    * their place were short) and with no
				    * later sleep there to lend a user stack */
	WC_CNT_WALKS_UNUSED,	   /* user stacks walked for a wait that then
				   * was short */
	WC_CNT_STACKS_TRUNCATED,   /* stacks cut at WC_STACK_DEPTH frames */
	WC_CNT_SWITCHES_CHARGED,   /* switch-outs that took the slow path (the
				  * task storage): the rest only noted when
				  * their wait began */
	WC_CNT_STACKS_KNOWN,	   /* stacks user space said it holds: named,
				  * not stored again */
	WC_CNT_EXITS_DROPPED_NS,   /* their threads' time since the last walk
				 * read them: the time they took along */
	WC_CNT_SAMPLES_MISPLACED,  /* ticks delivered after the thread they
				   * fell due in had left the CPU: credited
				   * to none */
	WC_CNT_WAITS_UNDER_WAY,	   /* long waits a flush's walk charged to
				    * their stacks before they ended */
	WC_CNT_WAITS_UNWALKED,	   /* of those, with no kernel stack: the
				    * flush's walks were used up */
	WC_CNT_UW_WALKS,	   /* user stacks walked by unwind tables */
	WC_CNT_UW_FRAMES_TABLE,	   /* their frames unwound by a table */
	WC_CNT_UW_FRAMES_FP,	   /* ... by frame pointer (no table there) */
	WC_CNT_UW_COMPLETE,	   /* walks that reached the outermost frame */
	WC_CNT_UW_LEAF_NO_TABLE,   /* user stacks whose innermost frame had no
				    * table: walked by frame pointers */
	WC_CNT_UW_END_NO_TABLE,	   /* walks ended early: a frame without a
				    * table, the frame pointer not known good */
	WC_CNT_UW_END_UNLEARNT,	   /* ... a mapping not learnt yet */
	WC_CNT_UW_END_BAD_READ,	 /* ... the stack unreadable or not going up */
	WC_CNT_UW_END_RULE,	 /* ... a rule the walk does not follow */
	WC_CNT_UW_END_SIGNAL,	 /* ... a signal frame */
	WC_CNT_UW_END_PENDING,	 /* ... a table not built yet */
	WC_CNT_UW_WANTS_DROPPED, /* requests for a table the full wants map
				  * did not take (asked again at the next walk) */
	WC_CNT_UW_SCAN_CALLERS,	 /* measuring only: callers the stack search
				  * recovered for stacks walked whole by tables */
	WC_CNT_UW_SCAN_FALSE,	 /* ... of those, not among the walk's frames */
	WC_CNT_RUNQ_STAMPS_STALE,   /* asleep threads whose queue stamp a move
				     * left stale (delayed dequeue) */
	WC_CNT_RUNQ_STALE_NS,	    /* the time their wake-ups took out of
				     * the run queue's count, as it was sleep */
	WC_CNT_RUNQ_STALE_UNMENDED, /* ... marked threads that ran again
				     * without a wake-up the hook mended */
	WC_CNT_NR,
};

/*
 * Stacks.  A stack is stored once, under a 64-bit hash of its addresses (0
 * means "no stack": a user stack of a kernel thread, or one the kernel
 * could not walk); weights are summed per (process, kind, user stack,
 * kernel stack).  On-CPU weights are nanoseconds of the thread's run time
 * since its previous sample, charged to the stack the sample found;
 * off-CPU weights are nanoseconds of the wait that ended (sleep or I/O),
 * recorded only for waits of at least MinBlockMicroseconds.  User space
 * drains both tables every second or so.
 */
#define WC_STACK_DEPTH 127 /* the kernel's default perf_event_max_stack */

struct wc_stack {
	__u32 nr; /* addresses used, innermost first */
	__u32 pad;
	__u64 ip[WC_STACK_DEPTH];
};

/* Most stacks are shallow: those of up to WC_SHORT_DEPTH frames are kept
 * in a table of this smaller layout (a prefix of struct wc_stack), the
 * rest in one a quarter the size of the full layout, so the kernel's
 * memory goes to addresses rather than to empty slots. */
#define WC_SHORT_DEPTH 30

struct wc_stack_short {
	__u32 nr;
	__u32 pad;
	__u64 ip[WC_SHORT_DEPTH];
};

/* Hashes below WC_STACK_LABELS are not stacks but stand for a missing one,
 * which the folded files name. */
#define WC_STACK_NONE 0	    /* none: a kernel thread's user stack */
#define WC_STACK_DROPPED 1  /* not stored: the stack table was full */
#define WC_STACK_UNWALKED 2 /* a wait's kernel stack, not walked at a flush */
#define WC_STACK_UNPARKED 3 /* a wait's user stack, not taken as it began */
#define WC_STACK_LABELS 16

/* A user stack's outermost address at or above WC_FRAME_LABEL is not a
 * frame but says why a walk by unwind tables ended there, which the
 * folded files name (no user address is this high). */
#define WC_FRAME_LABEL 0xffffffffffffff00ULL
enum wc_frame_label {
	WC_FL_NO_TABLE = 1, /* no table, the frame pointer not known good */
	WC_FL_UNLEARNT,	    /* the mapping not looked up yet */
	WC_FL_BAD_READ,	    /* the stack unreadable, or not going up */
	WC_FL_RULE,	    /* a rule the walk does not follow */
	WC_FL_SIGNAL,	    /* a signal frame */
	WC_FL_PENDING,	    /* the file's table not built yet */
	WC_FL_NR,
};

struct wc_stack_key {
	__u32 tgid;
	__u32 kind; /* enum wc_state: WC_ONCPU, WC_SLEEP or WC_BLOCKED */
	__u64 ustack;
	__u64 kstack;
};

/*
 * The stacks user space holds, so that the programs name them without
 * storing them again: a set of hashes in a memory-mapped array that only
 * user space writes, WC_HELD_WAYS to a bucket.  A hash missing from it
 * (never told, or pushed out by others of its bucket) only costs storing
 * the stack again; a hash present is one user space holds.
 */
#define WC_HELD_WAYS 4

struct wc_held_bucket {
	__u64 hash[WC_HELD_WAYS];
};

/* mask: the number of buckets minus one (a power of two). */
static inline __u32 wc_held_bucket_of(__u64 hash, __u32 mask)
{
	return (__u32)(hash ^ (hash >> 29)) & mask;
}

struct wc_counters {
	__u64 v[WC_CNT_NR];
};

/*
 * Unwind tables (plugin/unwind).  A mapped file is named as the kernel
 * sees it; its rows (the layout of plugin/sym/wc_sym_cfi.h's) sit in one
 * memory-mapped array that only user space writes, at the place its
 * entry in the files hash says.  A walk that meets a file with no entry
 * asks for it with a want: the process that maps it and where, so that
 * user space can open it through /proc/PID/map_files.
 */
struct wc_uw_key {
	__u32 dev; /* the inode's superblock s_dev: major << 20 | minor */
	__u32 gen; /* its i_generation: a number reused is another file */
	__u64 ino;
};

/* wc_uw_row.rule & 15: how the CFA (the stack pointer before the call)
 * is found. */
enum wc_cfa_kind {
	WC_CFA_NONE,	    /* no FDE covers the code: no rule */
	WC_CFA_SP,	    /* rsp + 8 * cfa */
	WC_CFA_FP,	    /* rbp + 8 * cfa */
	WC_CFA_PLT,	    /* rsp + 8, + 8 more when (rip & 15) >= cfa */
	WC_CFA_END,	    /* the return address is undefined: outermost */
	WC_CFA_SIGNAL,	    /* a signal frame (augmentation "S") */
	WC_CFA_UNSUPPORTED, /* a rule the table cannot hold */
};

/* wc_uw_row.rule >> 4: where the caller's rbp is. */
enum wc_fp_rule {
	WC_FP_SAME, /* this frame has not changed it */
	WC_FP_AT,   /* saved at CFA + 8 * fp_slot */
	WC_FP_LOST, /* anything else: the caller's rbp is unknown */
};

struct wc_uw_row {
	__u32 off; /* file offset of the first byte covered */
	__u16 cfa;
	__u8 rule; /* kind | frame-pointer rule << 4 */
	__s8 fp_slot;
};

/* wc_uw_file.state */
#define WC_UW_ROWS 0 /* rows [first, first + n) */
#define WC_UW_NONE 1 /* no table (why says why): walk by frame pointers */

/* Why a file has no table (wc_uw_file.why of a WC_UW_NONE entry). */
enum wc_uw_why {
	WC_UW_NO_CFI = 1, /* no .eh_frame, or none of it covers code */
	WC_UW_TOO_BIG,	  /* over the builder's limits */
	WC_UW_NO_ROOM,	  /* the rows array is full of files in use */
	WC_UW_SLOW,	  /* over the build's CPU time, or the helper stalled */
	WC_UW_REFUSED,	  /* the file rules said no */
	WC_UW_UNREADABLE, /* not an ELF file for this machine */
	WC_UW_DEFERRED,	  /* the helper was not asked (its share spent) */
	WC_UW_GONE,	  /* the process, or its mapping of the file, went */
	WC_UW_NO_HELPER,  /* the helper that builds tables cannot start */
	WC_UW_WHY_NR,
};

/*
 * A table's rows are followed by an index of buckets, two to a row's
 * place: bucket b holds the last row (counted from first) at or before
 * file offset (bbase + b) << bshift, so that a walk's binary search
 * starts within a bucket, not across the whole table.  bshift grows from
 * WC_UW_BSHIFT_MIN until there are at most a quarter as many buckets as
 * rows (or to 32: one bucket): the index costs an eighth of the rows'
 * memory at most.
 */
#define WC_UW_BSHIFT_MIN 8

struct wc_uw_file {
	__u32 first;
	__u32 n; /* rows */
	__u32 state;
	__u32 why;
	__u64 used_ns; /* bpf_ktime_get_ns() of the last walk that used it */
	__u32 buckets; /* the index's, after the rows */
	__u32 bbase;   /* the first bucket's offset >> bshift */
	__u32 bshift;
	__u32 pad;
};

struct wc_uw_want {
	__u32 pid;
	__u32 pad;
	__u64 start; /* the mapping: map_files/START-END */
	__u64 end;
	__u64 ns; /* bpf_ktime_get_ns() when asked */
};

#endif /* WALLCLOCK_BPF_H */
