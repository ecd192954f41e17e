/*
 * wc_svg.h - one folded file in, one self-contained SVG flame graph out.
 *
 * Owns: a tree of frames built by merging common prefixes (root "all"),
 * the interned frame names, and the index that finds a child by (parent,
 * name).  All of it is bounded: at most max_frames nodes, root included,
 * and at most max_bytes for everything the renderer allocates (names,
 * nodes, indexes, emit's scratch; the struct itself with its 64 KiB output
 * buffer on top).  A stack whose deeper frames do not fit ends at the
 * deepest frame that did: the value still counts there, as that frame's
 * own time, so the total is never lost; each such add is counted in
 * nodes_merged.  Emit allocates nothing, so it never fails for memory.
 * Not thread-safe: one caller at a time.
 *
 * Input: lines of the folded format that wc_folded.h documents,
 *   GROUP;MARKER;frame;...;frame VALUE
 * VALUE is integer microseconds, split off at the last space.  A line
 * without a value, with a value that is not all digits or does not fit 64
 * bits (or would carry the total past 64 bits), or with an empty stack is
 * malformed: counted, skipped.  Blank lines are ignored; a value of 0 is
 * counted and draws nothing.  Frame text is made safe on the way in (control bytes and
 * bytes that are not valid UTF-8 become '?', spaces at either end are
 * trimmed, an empty frame is "[empty]", a frame is cut at WC_SVG_MAX_FRAME
 * bytes, a stack at WC_SVG_MAX_DEPTH frames), so the SVG is always
 * well-formed XML whatever the input.
 *
 * Output, for the same frames and values whatever the order they came in,
 * byte for byte the same file (no clock, no locale, no randomness):
 *   - flame orientation, root at the bottom; siblings sorted by name in
 *     byte order; width proportional to value; a frame narrower than
 *     min_width_px is not drawn, nor anything above it (its time still
 *     shows in its parent's width);
 *   - colour family by the first marker frame on the path: [on-cpu] warm
 *     (red to yellow), [off-cpu runqueue] purple, [off-cpu sleep] blue,
 *     [off-cpu io] teal, other "[off-cpu...]" slate; stacks without a
 *     marker warm like flamegraph.pl's default.  Kernel frames ("_[k]")
 *     are a paler shade of their family.  The shade within a family is a
 *     hash of the name, so a name has the same colour in every file.  Root,
 *     group (depth 1) and marker frames are grey;
 *   - title, subtitle, and a totals line: total thread time, on-CPU and
 *     off-CPU with each reason, in human units ("12.3 s", "450 ms");
 *   - inline script and style only: hover shows name, time and share of
 *     the total at the bottom (and in each frame's <title>); click zooms;
 *     "Reset Zoom"; "Search" (or Ctrl-F, or ?s=REGEX in the URL)
 *     highlights matches and shows "Matched: X.X%" without counting a
 *     match inside another twice; Escape clears the search.
 *
 * Hooks for a browser test (stable): each drawn frame is
 *   <g class="frame" data-name="NAME" data-value="US" data-x="US">
 *     <title>..</title><rect x y width height fill/><text>..</text></g>
 * (data-x: microseconds left of the frame under the root), all inside
 * <g id="frames" data-width="PX" data-xpad="PX" data-total="US">; buttons
 * have ids "reset" and "search", the match share is in #matched, totals in
 * #totals.  After a click on a frame its rect's width is data-width (the
 * root's width); after a search the matches' fill attribute changes.
 * Scripting API (for tests): zoom(g), unzoom(), search(regex),
 * reset_search().
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
