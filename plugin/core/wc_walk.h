/*
 * wc_walk.h - the open-coded task walk (the BPF program wc_snap), run
 * range by range.
 *
 * Owns: the plan of process-id ranges the walk runs over, drawn from a
 * histogram of the threads the last walk met so that each range holds
 * about WC_WALK_THREADS of them (a run does not give up its CPU, so no
 * run may be long), the mapping of the array the runs write their records
 * into, and the list of ranges still to run when a full array cut a run
 * short.  A thread
 * may be handed over twice in one walk (a range run again after a stop):
 * records are cumulative, so that costs nothing.  No collectd headers.
 */
#ifndef WC_WALK_H
#define WC_WALK_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/wallclock.h"

/* About 1.5 ms of a CPU a run at 10,000 threads on the benchmark's VM:
 * every run walks the whole process list to find its range, so fewer,
 * longer runs cost less (2,048 a run: 9 % more CPU a read). */
#define WC_WALK_THREADS 4096

struct wc_walk;

struct wc_walk_stats {
	bool loaded;	   /* the kernel has it (6.7+); else the iterator */
	uint64_t runs;	   /* of the program, one per range or more */
	uint64_t refills;  /* runs a full array cut short */
	uint64_t failures; /* walks given up (the iterator read instead) */
	uint64_t run_ns;   /* in the program's runs (the kernel's walk) */
	uint64_t hand_ns;  /* handing their records over */
};

/* Records in batches, so the receiver can fetch what it needs for a
 * batch before it works through it. */
typedef void (*wc_walk_fn)(void *arg, const struct wc_task_rec *recs, size_t n);

/* prog_fd: wc_snap; map_fd: its array of records (BPF_F_MMAPABLE), nrecs
 * long; args: its .bss arguments. */
int wc_walk_new(int prog_fd, int map_fd, uint32_t nrecs,
		struct wc_snap_args *args, struct wc_walk **out);

/* Whether a walk knows where the threads are (a first walk, or one after
 * wc_walk_note saw none, would run blind: use the iterator then). */
bool wc_walk_planned(const struct wc_walk *w);

/* A thread of process tgid seen by another walk, for the next plan. */
void wc_walk_note(struct wc_walk *w, uint32_t tgid);

/* Start a new histogram (the walk's own records feed it too) and plan
 * from the last one. */
void wc_walk_begin(struct wc_walk *w);

/* Every live thread's record to fn.  -1 (errno set) if the kernel refused
 * a run or the array kept filling: records handed over so far stay valid,
 * and the caller walks again some other way. */
int wc_walk_run(struct wc_walk *w, wc_walk_fn fn, void *arg);

void wc_walk_stats(const struct wc_walk *w, struct wc_walk_stats *out);
void wc_walk_free(struct wc_walk *w);

#endif /* WC_WALK_H */
