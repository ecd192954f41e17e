/*
 * wc_collector.h - the BPF side, seen from user space.
 *
 * Owns: the loaded skeleton, its links (the scheduler tracepoint, the task
 * iterators of the records and of waits under way, one cpu-clock perf
 * event per online CPU), the open-coded walk
 * (wc_walk) where the kernel has one, the exit ring reader, the buffers
 * used to drain the stack tables and the mapping of the held-stacks set.  wc_collector_close() detaches and frees all of it: no program
 * or link outlives the collector.
 *
 * A poll walks the live threads (one record per live thread, charged up to
 * now: by the open-coded walk of wc_walk where the kernel has it, else, and
 * at the first poll, by the task iterator) and then drains the exit ring (final records of threads that died),
 * handing every record to the caller in that order.  No collectd headers.
 */
#ifndef WC_COLLECTOR_H
#define WC_COLLECTOR_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/wallclock.h"
#include "core/wc_walk.h"

struct wc_collector;

/* How threads are read where a choice exists.  Zero is what the plugin
 * and the CLI use; the rest lets tests reach each path on one kernel. */
struct wc_walk_opts {
	bool iterator_only; /* never the open-coded walk */
	unsigned int recs;  /* records in the walk's array; 0: 8192 */
	bool refused;	    /* size the array so the kernel refuses the walk */
};

struct wc_collector_opts {
	unsigned int sample_hz;
	bool kthreads;
	unsigned int exit_ring_kib; /* rounded up to a power of two */
	bool stacks;		    /* capture on-CPU and off-CPU stacks */
	unsigned int min_block_us;  /* shortest wait recorded with a stack */
	unsigned int stack_entries; /* stacks, and (process, stack) weights */
	unsigned int held_stacks;   /* stacks user space holds at most */
	struct wc_walk_opts walk;   /* zero: the way the kernel allows */
	/* unwind tables (with stacks): rows in the array, 0 for none */
	uint32_t unwind_rows;
	uint32_t unwind_files; /* files with an entry at most */
	uint32_t unwind_procs; /* processes whose mappings are kept */
	bool measure_scan;     /* the benchmark's check of the stack search */
};

/* The unwind tables' maps (bpf/unwind_x86.bpf.h), for wc_unwind. */
struct wc_collector_uw {
	struct wc_uw_row *rows; /* mapped; valid until close */
	uint32_t nrows;
	uint32_t nfiles;
	int files_fd;
	int wants_fd;
	uint64_t map_bytes; /* the kernel memory the maps took */
};

/* False when the programs walk by frame pointers only. */
bool wc_collector_unwind(const struct wc_collector *c,
			 struct wc_collector_uw *out);

/* Load and attach.  On failure, err says what was refused and what to do
 * about it, and nothing stays loaded; -EACCES when the process lacks the
 * capabilities (the caller knows how it may be given them). */
int wc_collector_open(const struct wc_collector_opts *opts,
		      struct wc_collector **out, char *err, size_t errlen);

/* Records come in batches (see wc_walk_fn). */
typedef wc_walk_fn wc_rec_fn;
int wc_collector_poll(struct wc_collector *c, wc_rec_fn fn, void *arg,
		      char *err, size_t errlen);
/* Only the exit ring's final records, between polls, so that the ring
 * never has to hold a whole interval's exits. */
int wc_collector_drain_exits(struct wc_collector *c, wc_rec_fn fn, void *arg,
			     char *err, size_t errlen);

/*
 * Stacks: drain_stacks hands over every (process, kind, stacks) weight
 * gathered since the last drain and removes it from the kernel's table;
 * drain_stack_table then hands over (and removes) every stack the kernel
 * holds.  Drain both every time, in that order: a weight is added after
 * its stack is stored, so every weight drained names a stack drained with
 * it or before, and the kernel's tables hold one read's worth at most
 * (bounded; what does not fit is dropped and counted).  take copies out
 * one stack by hash instead, false if the kernel has no such stack.
 *
 * held tells the programs that user space holds a stack: they then name it
 * without storing it again, so it is not drained again.  let_go says it
 * may stop holding it: the programs store it again from then on.  Keep a
 * stack let go until a drain and a walk have passed: a program that found
 * it held just before may still name it in a weight drained after, and a
 * wait under way may have parked it (its record names it).
 */
typedef void (*wc_weight_fn)(void *arg, const struct wc_stack_key *k,
			     const uint64_t *weight, size_t n);
typedef void (*wc_stack_fn)(void *arg, uint64_t hash,
			    const struct wc_stack *st);
int wc_collector_drain_stacks(struct wc_collector *c, wc_weight_fn fn,
			      void *arg, char *err, size_t errlen);
int wc_collector_drain_stack_table(struct wc_collector *c, wc_stack_fn fn,
				   void *arg, char *err, size_t errlen);
bool wc_collector_take_stack(struct wc_collector *c, uint64_t hash,
			     struct wc_stack *out);
void wc_collector_held(struct wc_collector *c, uint64_t hash);
void wc_collector_let_go(struct wc_collector *c, uint64_t hash);
/* A new window of stacks starts now: waits that end later are charged
 * only from here on. */
void wc_collector_new_window(struct wc_collector *c);
/* While paused the programs take no stacks (and pay for none), as with
 * stacks off; the counters go on. */
void wc_collector_pause_stacks(struct wc_collector *c, bool paused);
/* Right after the poll of a read that a flush follows: charge every wait
 * under way for at least min_block_us to its stacks, for its part in the
 * window up to when that poll's walk read the thread, walking at most
 * max_walks kernel stacks (the rest is charged under WC_STACK_UNWALKED,
 * counted). */
int wc_collector_charge_waits(struct wc_collector *c, uint32_t max_walks,
			      char *err, size_t errlen);

/* Event counters summed over CPUs (cumulative since open). */
void wc_collector_counters(const struct wc_collector *c,
			   struct wc_counters *sum);

/* How full the exit ring was at its fullest drain up to the last poll
 * (0..1): near 1 means exits are about to be dropped (raise
 * ExitBufferKiB). */
double wc_collector_exit_ring_fill(const struct wc_collector *c);

struct btf;
/* What the programs need that a kernel's BTF shows it lacks (named, with
 * the release that brought it), or NULL: wc_collector_open refuses such a
 * kernel with that name. */
const char *wc_collector_btf_lacks(const struct btf *btf);
/* Whether the kernel has what the open-coded walk calls (6.7+); if not,
 * it is not loaded and every read uses the iterator. */
bool wc_collector_kernel_walks(void);

/* Whether the kernel delays dequeues (6.12 and later), so that a move can
 * leave an asleep thread's queue stamp stale: two more programs load to
 * mend it (bpf/stale.bpf.h). */
bool wc_collector_kernel_delays(void);
/* How the open-coded walk went (all 0 where the kernel has none). */
void wc_collector_walk_stats(const struct wc_collector *c,
			     struct wc_walk_stats *out);

/* Number of CPUs sampled. */
unsigned int wc_collector_ncpus(const struct wc_collector *c);

void wc_collector_close(struct wc_collector *c);

#endif /* WC_COLLECTOR_H */
