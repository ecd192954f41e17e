/*
 * wc_folded.h - one flush window's stacks, folded for flame graphs.
 *
 * Owns: the window's interned strings, its distinct stacks, and one cell
 * per (group, kind) with its measured total and summed weights.
 * Invariants: bounded at creation (max_stacks, max_bytes); time is never
 * silently lost (what does not fit goes to [other] or to group "other",
 * and is counted); a cell whose total is set sums to exactly it; the same
 * window gives the same file whatever order its stacks were added in;
 * frames are made safe as format/wc_format.h says.
 * Threads: not thread-safe: one caller at a time.
 * Design: docs/design.md, section "Folded format".
 */
#ifndef WC_FOLDED_H
#define WC_FOLDED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/wc_format.h"

#define WC_FOLD_MAX_DEPTH 1024 /* frames of one stack */
#define WC_FOLD_MAX_LABEL 64   /* bytes of a label set by the caller */

struct wc_fold;

struct wc_fold_stats {
	/* since wc_fold_new() or the last wc_fold_reset() */
	uint64_t stacks;       /* distinct stacks held */
	uint64_t merged;       /* adds that landed on a stack already held */
	uint64_t dropped_full; /* adds that did not fit: in [other] */
	uint64_t groups_redirected; /* adds and totals moved to "other" */
	uint64_t truncated; /* adds with a frame or the depth cut short */
	/* of the last wc_fold_emit() */
	uint64_t lines;		  /* lines written */
	uint64_t bytes;		  /* bytes written */
	uint64_t total_us;	  /* sum of all values written */
	uint64_t other_us;	  /* in [other] lines */
	uint64_t unattributed_us; /* in [unsampled] and below-threshold lines */
	uint64_t scaled_down;	  /* cells whose off-CPU weights exceeded the
				     total */
};

/* Receives the file in pieces; returns 0, or -1 to stop the emit. */
typedef int (*wc_fold_out_fn)(void *ctx, const char *buf, size_t len);

/* NULL if a bound is out of range (max_stacks 1..2^24, max_bytes
 * 4 KiB..1 GiB) or memory is short. */
struct wc_fold *wc_fold_new(size_t max_stacks, size_t max_bytes);
void wc_fold_free(struct wc_fold *f);
/* Forget the window's stacks, totals and stats; keep the memory. */
void wc_fold_reset(struct wc_fold *f);

/*
 * Add weight to the stack (group, kind, frames), frames root first.  The
 * weight is raw: samples for on-CPU, nanoseconds for off-CPU.  A NULL frame
 * counts as empty.  Returns 0 when the weight was counted (held, merged, or
 * put in [other] for want of room), -1 on bad arguments.
 */
int wc_fold_add(struct wc_fold *f, const char *group, enum wc_fold_kind kind,
		const char *const *frames, size_t nframes, uint64_t weight);

/*
 * The id of a frame's text (made safe as above), for wc_fold_add_ids: a
 * caller that meets the same frame in many stacks (a function in every
 * stack through it, a kernel stack in every sleeper) makes it safe and
 * finds it once.  Good until the next wc_fold_reset.  WC_FOLD_CUT is set
 * in it if the text was cut; WC_FOLD_NO_FRAME if it is new and there is
 * no room (an add naming it lands in [other]).
 */
#define WC_FOLD_CUT (1u << 31)
#define WC_FOLD_NO_FRAME UINT32_MAX
uint32_t wc_fold_frame(struct wc_fold *f, const char *frame);

/* wc_fold_add with frames given by their ids. */
int wc_fold_add_ids(struct wc_fold *f, const char *group,
		    enum wc_fold_kind kind, const uint32_t *frames,
		    size_t nframes, uint64_t weight);

/* The measured total of (group, kind) in this window, in microseconds;
 * setting it again replaces it.  Returns -1 on bad arguments. */
int wc_fold_set_total(struct wc_fold *f, const char *group,
		      enum wc_fold_kind kind, uint64_t total_us);

/* Replace WC_FOLD_BELOW_THRESHOLD, e.g. with "[waits < 1 ms]" so the file
 * says what the threshold was.  Made safe like a frame; -1 if too long. */
int wc_fold_set_below_label(struct wc_fold *f, const char *label);

/*
 * Write the file through out (in pieces of at most 64 KiB).  top_n is how
 * many stack lines to keep, 0 for all.  Returns the bytes written, or -1 if
 * out failed or memory was short.  Does not change what was added, so it
 * can be called again.
 */
ssize_t wc_fold_emit(struct wc_fold *f, size_t top_n, wc_fold_out_fn out,
		     void *ctx);

void wc_fold_get_stats(const struct wc_fold *f, struct wc_fold_stats *st);

#endif /* WC_FOLDED_H */
