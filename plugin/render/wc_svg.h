/*
 * wc_svg.h - one folded file in, one self-contained SVG flame graph out.
 *
 * Owns: the frame tree (root "all"), its interned names, the child index.
 * Invariants: at most max_frames nodes and max_bytes allocated; a stack
 * that does not fit ends at its deepest frame that did, so the total is
 * never lost; emit allocates nothing, so it never fails for memory; the
 * same frames and values, in any order, give a byte-identical file; the
 * SVG is well-formed XML whatever the input; the test hooks are stable.
 * Threads: not thread-safe: one caller at a time.
 * Design: docs/design.md, section "Flame graph renderer".
 */
#ifndef WC_SVG_H
#define WC_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WC_SVG_MAX_FRAME 4096 /* bytes of one frame's name */
#define WC_SVG_MAX_DEPTH 1024 /* frames of one stack, root not counted */
#define WC_SVG_MAX_LABEL 512  /* bytes of the title and of the subtitle */

/* Zero or NULL fields take the defaults. */
struct wc_svg_opts {
	/* e.g. "wallclock: host web-1"; default "Flame Graph" */
	const char *title;
	/* e.g. the time window, formatted by the caller */
	const char *subtitle;
	/* px, 200..16384; default 1200 */
	unsigned width;
	/* narrower frames are not drawn; default 0.1, negative draws all */
	double min_width_px;
	/* nodes, root included, 1..2^26; default 200000 */
	size_t max_frames;
	/* 64 KiB..1 GiB; default 64 MiB */
	size_t max_bytes;
};

struct wc_svg_stats {
	uint64_t lines;	       /* non-blank lines added, well-formed or not */
	uint64_t bad_lines;    /* malformed, skipped */
	uint64_t nodes;	       /* in the tree, root included */
	uint64_t nodes_merged; /* adds that ended early for want of room */
	uint64_t truncated;    /* adds with a frame or the depth cut short */
	uint64_t total_us;     /* sum of the values added */
	uint64_t bytes;	       /* memory held, within max_bytes */
	/* of the last wc_svg_emit() */
	uint64_t drawn;	    /* frames drawn */
	uint64_t out_bytes; /* bytes written */
};

/* Receives the SVG in pieces; returns 0, or -1 to stop the emit. */
typedef int (*wc_svg_out_fn)(void *ctx, const char *buf, size_t len);

struct wc_svg;

/* NULL if an option is out of range or memory is short; opts may be NULL. */
struct wc_svg *wc_svg_new(const struct wc_svg_opts *opts);
void wc_svg_free(struct wc_svg *s);

/*
 * One folded line, without or with its trailing newline.  Returns 0 when
 * its value was counted (whole, or ended early for want of room), -1 on a
 * malformed line (counted in bad_lines) or bad arguments.
 */
int wc_svg_add_line(struct wc_svg *s, const char *line, size_t len);

/* One stack of n frames, root-most first (the "all" root not included),
 * and its value in microseconds.  A NULL frame counts as empty.  Returns
 * as wc_svg_add_line(); n == 0 is malformed. */
int wc_svg_add(struct wc_svg *s, const char *const *frames, size_t n,
	       uint64_t value_us);

/* Write the SVG through out (in pieces of at most 64 KiB).  Returns the
 * bytes written, or -1 if out failed.  Can be called again, and more
 * stacks added in between. */
ssize_t wc_svg_emit(struct wc_svg *s, wc_svg_out_fn out, void *ctx);

void wc_svg_get_stats(const struct wc_svg *s, struct wc_svg_stats *st);

#endif /* WC_SVG_H */
