/*
 * wc_account.h - per-thread records in, per-group totals out.
 *
 * Owns: the tables of threads, of processes (by tgid and the leader's
 * start time) and of the groups metrics are dispatched under.
 * Invariants: all three bounded at creation (max_threads; selections,
 * max_groups and "other"); a read is begin, records (live threads
 * first, then final records), end; a record's difference from the last
 * goes to its process and group; a thread that vanishes is counted lost.
 * Threads: not thread-safe: one caller at a time.
 * Design: docs/design.md, section "Accounting"; README.md, "Groups".
 */
#ifndef WC_ACCOUNT_H
#define WC_ACCOUNT_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "bpf/wallclock.h"
#include "core/wc_select.h"

struct wc_account;

struct wc_account_opts {
	uint32_t max_threads;
	uint32_t max_groups;
	const struct wc_selector *selector; /* must outlive the account */
};

/* A group as dispatched: times and samples are cumulative since the group
 * was created (monotonic counters), threads is this read's count. */
struct wc_group_view {
	const char *name;
	uint64_t time_ns[WC_NSLOTS];
	uint64_t samples;
	uint32_t threads;
	uint64_t serial; /* changes when the group is evicted and comes back,
			    its counters restarting from zero */
	uint64_t read_at_ns; /* when its threads were read (CLOCK_REALTIME
				ns; 0: none was, only final records) */
};

struct wc_account_stats {
	uint64_t threads_lost;	    /* vanished without a final record */
	uint64_t threads_untracked; /* table full: their time is not counted */
	uint64_t regressions; /* a record behind the last: see forward() */
	uint32_t threads;     /* threads tracked now */
	uint32_t processes;   /* processes tracked now */
	uint32_t groups;      /* groups dispatched */
	uint32_t waiting;     /* processes in "other" for want of a slot */
	uint64_t groups_taken_over; /* slots given to a busier name */
};

int wc_account_new(const struct wc_account_opts *opts, struct wc_account **out);
void wc_account_free(struct wc_account *a);

/* Called with a process's tgid when the account forgets it (it died and
 * its last read is done): whoever keeps per-process state may let go. */
typedef void (*wc_proc_gone_fn)(void *arg, uint32_t tgid);
void wc_account_on_proc_gone(struct wc_account *a, wc_proc_gone_fn fn,
			     void *arg);

void wc_account_begin(struct wc_account *a);
/* CLOCK_REALTIME less CLOCK_MONOTONIC now: a group's values are stamped
 * with when the kernel read its threads (wc_task_rec.read_ns), so that a
 * walk that a busy CPU stretched does not misdate them. */
void wc_account_clock(struct wc_account *a, int64_t realtime_off_ns);
void wc_account_record(struct wc_account *a, const struct wc_task_rec *r);
/* A final record taken between reads (the exit ring is drained more often
 * than reads come, so that it does not fill): counted in the next read,
 * as if it came in it.  Only final records: a live one is ignored. */
void wc_account_record_late(struct wc_account *a, const struct wc_task_rec *r);
/* Start fetching what recording r will look at: a batch of records goes
 * faster prefetched all first. */
void wc_account_prefetch(const struct wc_account *a,
			 const struct wc_task_rec *r);
/* The same for wc_account_group_of(tgid). */
void wc_account_prefetch_group(const struct wc_account *a, uint32_t tgid);
void wc_account_end(struct wc_account *a);

typedef void (*wc_group_fn)(void *arg, const struct wc_group_view *g);
void wc_account_foreach(const struct wc_account *a, wc_group_fn fn, void *arg);
/* The groups' growth so far is in a file: a group with no process left
 * may give up its slot only after this (with stacks off, every read). */
void wc_account_flushed(struct wc_account *a);
void wc_account_stats(const struct wc_account *a, struct wc_account_stats *out);

/* The group a process's time went to in the last read, NULL if it is
 * dropped (Unmatched drop) or unknown.  A process whose last thread died
 * in the last read is still known until the next begin. */
const char *wc_account_group_of(const struct wc_account *a, uint32_t tgid);
/* The last read left the process out (Unmatched drop, or another's -p):
 * none of its stacks will be written. */
bool wc_account_dropped(const struct wc_account *a, uint32_t tgid);

#endif /* WC_ACCOUNT_H */
