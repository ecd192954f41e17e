/*
 * wc_unwind.h - the store of unwind tables the BPF walks read: which
 * mapped files have a table and where its rows are, built when a walk
 * asks for a file it met.
 *
 * Owns: the record of every file entry it put in the kernel's files hash,
 * the placement of rows in the kernel's rows array (free, in use,
 * resting), and its counters.  Not the maps themselves (struct
 * wc_uw_kernel: BPF maps in the engine, a fake in the tests), nor the
 * helper that builds tables (the caller's wc_sym_src).
 *
 * Invariants: a file's entry is put only after its rows are written, and
 * freed rows rest WC_UW_REST_NS before another file's rows go there, so a
 * walk that read the old entry never takes another file's rows for its
 * own.  Entries stay under 7/8 of the files hash, and rows in use under
 * 7/8 of the array, by evicting the files walks used least recently.
 * Files without a table are remembered (the walks then use frame
 * pointers), for a while only where another try may work (too slow,
 * refused, no room, the helper stalled or not asked, the process gone).
 *
 * Not thread-safe: one serving thread.
 */
#ifndef WC_UNWIND_H
#define WC_UNWIND_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/wallclock.h"
#include "sym/wc_sym_cfi.h"
#include "sym/wc_sym_src.h"

/* Rows freed rest this long before reuse: far longer than a walk. */
#define WC_UW_REST_NS 1000000000ull
/* How long a file turned away for a reason that may pass stays so. */
#define WC_UW_RETRY_NS 60000000000ull
/* ... and for a reason that passes soon (the helper not asked, the
 * process gone). */
#define WC_UW_SOON_NS 5000000000ull
/* ... and for another file at the mapping's place when it was opened:
 * the one asked for may be back at once (a library loaded again). */
#define WC_UW_MOVED_NS 1000000000ull
/* A table no walk used for this long goes: its file is likely mapped by
 * no one now (a walk that meets it again asks again).  Looked for this
 * often. */
#define WC_UW_IDLE_NS 600000000000ull
#define WC_UW_IDLE_EVERY_NS 10000000000ull
/* A file used by a walk this recently is not evicted to make room. */
#define WC_UW_HOT_NS 2000000000ull

/* The kernel's side: its maps, or a fake. */
struct wc_uw_kernel {
	struct wc_uw_row *rows; /* the memory-mapped rows array */
	uint32_t nrows;
	uint32_t nfiles; /* the files hash's size */
	void *ctx;
	/* Up to max of the walks' requests, left in place: n. */
	size_t (*wants)(void *ctx, struct wc_uw_key *keys,
			struct wc_uw_want *wants, size_t max);
	void (*unwant)(void *ctx, const struct wc_uw_key *k);
	int (*put)(void *ctx, const struct wc_uw_key *k,
		   const struct wc_uw_file *f);
	/* 0 with *f, or -1: the kernel holds no entry for k. */
	int (*get)(void *ctx, const struct wc_uw_key *k, struct wc_uw_file *f);
	/* 0, or -1: the kernel may still hold the entry */
	int (*del)(void *ctx, const struct wc_uw_key *k);
};

/* The places in the rows array f's entry takes: its rows and the index
 * after them (bpf/wallclock.h); none without a table. */
static inline uint32_t wc_uw_slots(const struct wc_uw_file *f)
{
	return f->state == WC_UW_ROWS ? f->n + (f->buckets + 1) / 2 : 0;
}

/* The index of buckets t's rows get (f's buckets, bbase and bshift);
 * t has rows. */
void wc_uw_index_shape(const struct wc_cfi_table *t, struct wc_uw_file *f);

struct wc_unwind_stats {
	uint64_t wants;			/* requests served */
	uint64_t built;			/* tables built and put */
	uint64_t build_ns;		/* wall time of those builds */
	uint64_t without[WC_UW_WHY_NR]; /* files turned away, by why */
	uint64_t evicted;		/* entries evicted, cold first */
	uint64_t idle;			/* tables dropped, unused for long */
	uint64_t lost;			/* entries the kernel no longer had */
	uint64_t tables;		/* files with rows now */
	uint64_t entries;		/* entries now, with rows or without */
	uint64_t rows_used, rows_resting, rows_cap;
	uint64_t rows_leaked; /* never reused: no memory to track them */
};

struct wc_unwind;

/* NULL without memory.  lim bounds each build (its rows_max at most the
 * array's). */
struct wc_unwind *wc_unwind_new(const struct wc_uw_kernel *k,
				struct wc_sym_src *src,
				const struct wc_cfi_limits *lim);
/* The kernel's entries stay: they go with its maps. */
void wc_unwind_free(struct wc_unwind *u);

/*
 * Serve the walks' requests for up to budget_ns (a build under way is
 * never cut: the helper's limits bound it), then evict, expire and let
 * rested rows go back to use.  now_ns is the kernel's clock
 * (CLOCK_MONOTONIC).  Returns the requests served.
 */
unsigned wc_unwind_serve(struct wc_unwind *u, uint64_t now_ns,
			 uint64_t budget_ns);

void wc_unwind_stats(const struct wc_unwind *u, struct wc_unwind_stats *out);

#endif /* WC_UNWIND_H */
