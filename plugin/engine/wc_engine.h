/*
 * wc_engine.h - one running profile: the collector, the group selector and
 * the accounting, driven one read at a time.
 *
 * Owns: all of the above, plus the window of stacks and the flush that
 * writes it, when stacks are on; borrows the configuration, which must outlive
 * the engine.  Front ends (the collectd plugin, command-line tools) call
 * read on their own clock and then walk the groups; neither re-implements
 * the orchestration.  Threads: one caller at a time, except that
 * wc_engine_drain_exits may run in another thread at any moment, even
 * while a flush writes its files (an internal lock keeps the account and
 * the collector whole between them).
 */
#ifndef WC_ENGINE_H
#define WC_ENGINE_H

#include <stdint.h>

#include "core/wc_account.h"
#include "core/wc_collector.h"
#include "core/wc_config.h"
#include "stacks/wc_flush.h"
#include "stacks/wc_stacks.h"
#include "unwind/wc_unwind.h"

struct wc_engine;

struct wc_self_stats {
	struct wc_counters bpf; /* cumulative */
	struct wc_account_stats acct;
	uint64_t read_ns;	   /* how long the last read took */
	double exit_ring_fill;	   /* 0..1, when the last read drained it */
	double table_fill;	   /* 0..1: tracked threads / MaxThreads */
	unsigned int ncpus;	   /* CPUs sampled */
	unsigned int caps_missing; /* of those stacks use (wc_caps.h) */
	struct wc_walk_stats walk;
	bool stacks; /* the rest is about stacks, if on */
	struct wc_stacks_stats window;
	struct wc_flush_stats flush;
	uint64_t weights_unowned; /* weights of dropped or unknown processes */
	uint64_t drain_ns;	  /* spent draining the stack tables, ever */
	uint64_t stacks_copied;	  /* stacks copied out of the kernel, ever */
	bool unwind;		  /* unwind tables on: the rest is about them */
	uint64_t unwind_map_bytes;
	struct wc_unwind_stats uw;
};

/* Loads and attaches, then takes the baseline: what threads do from here
 * on is counted.  err says what went wrong and what to do; -EACCES when
 * the process lacks the capabilities (the caller says how to give them). */
int wc_engine_open(const struct wc_config *cfg, struct wc_engine **out,
		   char *err, size_t errlen);
/* The same, reading threads as walk says (tests of each way). */
int wc_engine_open_walk(const struct wc_config *cfg,
			const struct wc_walk_opts *walk, struct wc_engine **out,
			char *err, size_t errlen);

/* Bring every group's counters up to now.  Stacks are gathered by the
 * drains, not here. */
int wc_engine_read(struct wc_engine *e, char *err, size_t errlen);
/* When the last read took the kernel's counters (CLOCK_REALTIME ns, the
 * middle of its walk): the time its values are true at. */
uint64_t wc_engine_read_at(const struct wc_engine *e);

/* Every second or so: empty the kernel's stack tables into the window, so
 * they need room for that long, not for a whole read interval.  Weights
 * of processes born since the last read wait for the next one, which
 * knows their group.  The caller serialises it with read and flush. */
int wc_engine_drain(struct wc_engine *e, char *err, size_t errlen);

/* As often as exits may come: take the final records of threads that died
 * out of the kernel's ring (counted at the next read), so the ring holds
 * the exits of a fraction of a second, not of a whole read interval.
 * From any thread, at any time: a flush held up by slow symbols does not
 * hold it up. */
int wc_engine_drain_exits(struct wc_engine *e, char *err, size_t errlen);

/* After a read: if FlushInterval had passed since the last flush (or the
 * open) when it began (that read also charged the waits under way to
 * their stacks), drain one last time and write the window's stacks to the
 * spool.
 * 1 if it flushed, 0 if not due, -1 if the drain failed (err says why; a
 * file not written is counted in the flush's stats). */
int wc_engine_maybe_flush(struct wc_engine *e, time_t now, char *err,
			  size_t errlen);

/* Read (charging the waits under way) and flush now, whatever the
 * interval (a command-line recording's end).
 * 0, or -1 if stacks are off or the file was not written (err says
 * which); a failed last drain is logged, and the file written without. */
int wc_engine_flush(struct wc_engine *e, time_t when, char *err, size_t errlen);

void wc_engine_foreach_group(struct wc_engine *e, wc_group_fn fn, void *arg);
void wc_engine_self(struct wc_engine *e, struct wc_self_stats *out);
void wc_engine_close(struct wc_engine *e);

#endif /* WC_ENGINE_H */
