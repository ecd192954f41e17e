/*
 * wc_folded.h - one flush window's stacks, folded for flame graphs.
 *
 * Owns: the window's interned strings (frame and group names), its distinct
 * stacks, and one cell per (group, kind) holding the measured total and
 * the summed weights.  All of it is bounded at creation: at most max_stacks
 * distinct stacks and max_stacks cells, and at most max_bytes for what grows
 * with the text (interned strings, their index, the stacks' frame lists).
 * On top of max_bytes: hash slots sized once from max_stacks (16 to 32
 * bytes per stack), and stack records (40 bytes) and cells (96 bytes)
 * allocated as they are used, up to max_stacks of each.  A stack that does
 * not fit is counted (dropped_full) and its weight still lands in its
 * cell's [other] line; a group that does not fit is folded into the group
 * WC_OTHER_GROUP ("other", always reserved) and counted (groups_redirected),
 * so time is never silently lost.  Not thread-safe: one caller at a time.
 *
 * The file is in the folded format (format/wc_format.h), frames made safe
 * as it says.  Stacks deeper than WC_FOLD_MAX_DEPTH keep their root-most
 * frames.
 *
 * Totals are exact.  When the metrics' total of a (group, kind) is set,
 * that cell's lines add up to exactly that many microseconds:
 *   - on-CPU: sample counts are scaled to the total; with no samples, the
 *     total goes to one GROUP;[on-cpu];[unsampled] line.
 *   - off-CPU: weights are nanoseconds.  If they add up to more than the
 *     total (a wait that began in an earlier window), they are scaled down
 *     to it (counted in scaled_down); if less, each stack gets its own
 *     microseconds and the difference (the waits too short to have a stack
 *     walked) goes to one GROUP;MARKER;[waits below threshold] line.
 * Without a total, off-CPU weights are converted from ns to us and on-CPU
 * weights are taken as microseconds already.  Integer values are shared
 * out by the largest-remainder method, so they add up exactly and a small
 * stack only shows 0 when its share truly rounds to 0.
 *
 * The file keeps the top_n stacks by value; the rest of each cell is summed
 * into one GROUP;MARKER;[other] line.  Lines with value 0 are not written.
 * So the values in a file add up to the totals set, plus the unscaled
 * weights of cells without a total.  Lines are sorted by value, largest
 * first; equal values by the line's text in byte order (a line that is a
 * prefix of another first), so the same window always gives the same file
 * whatever order its stacks were added in.
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
