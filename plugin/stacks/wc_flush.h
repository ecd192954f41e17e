/*
 * wc_flush.h - one flush: a window of raw stacks becomes a folded file in
 * the spool, its totals equal to what the metrics counted in that window.
 *
 * Owns: the symbolizer and its caches, the folding table (reused every
 * flush), the spool, and every group's counters at the last flush, so that
 * each file holds exactly the growth of the dispatched counters over its
 * window.  Without a usable spool (it could not be opened) flushes still
 * run and count, but write nothing; the reason was logged once.  The
 * window before the flush that finds it usable again was taken without
 * stacks (the engine pauses them meanwhile): it is not written either.
 *
 * A flush is begin, one wc_flush_group() per dispatched group, then
 * wc_flush_write() with the window's stacks.  Not thread-safe.
 */
#ifndef WC_FLUSH_H
#define WC_FLUSH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "core/wc_account.h"
#include "core/wc_config.h"
#include "stacks/wc_stacks.h"

struct wc_flush;

struct wc_flush_stats {
	uint64_t flushes;
	uint64_t flush_ns;	/* the last flush took */
	uint64_t lines;		/* of the last file */
	uint64_t frames;	/* user and kernel frames symbolized, total */
	uint64_t frames_named;	/* ... of which resolved to a name */
	uint64_t stacks_lost;	/* named by a weight but no longer held */
	uint64_t files_written; /* the spool's counters */
	uint64_t write_errors;	/* and flushes with no spool to write to */
	uint64_t spool_bytes;
	uint64_t sym_hits; /* the symbolizer's module cache */
	uint64_t sym_misses;
	uint64_t sym_bytes;
	uint64_t sym_procs;	  /* processes whose maps it holds now */
	uint64_t sym_refused;	  /* files refused by the symbolizer's rules */
	uint64_t sym_bad_lines;	  /* perf-map lines that were no symbol */
	uint64_t sym_over_bounds; /* mappings, map bytes, tables left out */
	uint64_t helper_starts;	  /* the symbolizer's helper process */
	uint64_t helper_stalls;
	uint64_t helper_crashes;
	uint64_t helper_skipped;
	uint64_t memo_hits; /* frames and kernel stacks folded once per flush */
	uint64_t memo_misses;
	bool spool_ok; /* a spool to write to now */
};

struct wc_flush *wc_flush_new(const struct wc_config *cfg, char *err,
			      size_t errlen);
void wc_flush_free(struct wc_flush *f);

/* A process named by this window's stacks: snapshot its mappings while it
 * lives, so it resolves at the flush even if it exits before. */
void wc_flush_note(struct wc_flush *f, pid_t pid);
void wc_flush_prefetch_note(const struct wc_flush *f, pid_t pid);
/* The process is gone: its pid may come back as another process. */
void wc_flush_gone(struct wc_flush *f, pid_t pid);

/* What reading processes and files for symbols may take from now on
 * (wc_sym_allow). */
void wc_flush_allow(struct wc_flush *f, unsigned ms);

void wc_flush_begin(struct wc_flush *f);
void wc_flush_group(struct wc_flush *f, const struct wc_group_view *g);
/* Symbolize, fold and write the file for the window ending at `when`.
 * 0, or -1 if the file was not written (logged by the spool). */
int wc_flush_write(struct wc_flush *f, struct wc_stacks *st, time_t when);

void wc_flush_stats(const struct wc_flush *f, struct wc_flush_stats *out);
/* A spool to write to now. */
bool wc_flush_spool_ok(const struct wc_flush *f);

#endif /* WC_FLUSH_H */
