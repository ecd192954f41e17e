/*
 * wc_engine.h - one running profile: the collector, the group selector and
 * the accounting, driven one read at a time.
 *
 * Owns: all of the above; borrows the configuration, which must outlive
 * the engine.  Front ends (the collectd plugin, command-line tools) call
 * read on their own clock and then walk the groups; neither re-implements
 * the orchestration.  Not thread-safe: one caller at a time.
 */
#ifndef WC_ENGINE_H
#define WC_ENGINE_H

#include <stdint.h>

#include "wc_account.h"
#include "wc_collector.h"
#include "wc_config.h"

struct wc_engine;

struct wc_self_stats {
	struct wc_counters bpf; /* cumulative */
	struct wc_account_stats acct;
	uint64_t read_ns;      /* how long the last read took */
	double exit_ring_fill; /* 0..1, when the last read drained it */
	double table_fill;     /* 0..1: tracked threads / MaxThreads */
	unsigned int ncpus;    /* CPUs sampled */
};

/* Loads and attaches, then takes the baseline: what threads do from here
 * on is counted.  err says what went wrong and what to do. */
int wc_engine_open(const struct wc_config *cfg, struct wc_engine **out,
		   char *err, size_t errlen);

/* Bring every group's counters up to now. */
int wc_engine_read(struct wc_engine *e, char *err, size_t errlen);

void wc_engine_foreach_group(const struct wc_engine *e, wc_group_fn fn,
			     void *arg);
void wc_engine_self(const struct wc_engine *e, struct wc_self_stats *out);
void wc_engine_close(struct wc_engine *e);

#endif /* WC_ENGINE_H */
