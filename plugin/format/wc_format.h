/*
 * wc_format.h - the folded stack format and the one parser of a line.
 *
 * Owns: nothing; pure functions (kinds and markers, safe text, parser).
 * Invariants: a line is "GROUP;MARKER;frame;...;frame VALUE", VALUE an
 * integer in microseconds; a frame's safe text has no ';' (it becomes
 * ':'), no control bytes, only valid UTF-8 ('?' for the rest), no
 * spaces at either end, is never empty ("[empty]") and is cut between
 * characters at WC_FOLD_MAX_FRAME bytes; spaces inside it stay, so
 * readers split the value off at the last space.
 * Threads: any number of callers at once: there is no state.
 * Design: docs/design.md, section "Folded format".
 */
#ifndef WC_FORMAT_H
#define WC_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum wc_fold_kind {
	WC_FOLD_ONCPU,
	WC_FOLD_RUNQ,
	WC_FOLD_SLEEP,
	WC_FOLD_BLOCKED,
	WC_FOLD_NKINDS,
};

/* Frames the writer makes up itself. */
#define WC_FOLD_OTHER "[other]"
#define WC_FOLD_UNSAMPLED "[unsampled]"
#define WC_FOLD_BELOW_THRESHOLD "[waits below threshold]"
#define WC_FOLD_EMPTY "[empty]"

#define WC_FOLD_MAX_FRAME 4096 /* bytes of one frame's text */

/* The marker frame of a kind, e.g. "[on-cpu]"; NULL if there is none. */
const char *wc_fold_marker(enum wc_fold_kind kind);

/* The kind a marker frame names, or -1 if frame is none of ours. */
int wc_fold_marker_kind(const char *frame);

/* Whether frame marks off-CPU time of a reason this version does not know
 * ("[off-cpu" and more): other writers' files may have them. */
bool wc_fold_is_offcpu(const char *frame);

/* The safe text of in[0..n) (see above) into out, which has room for
 * cap - 1 bytes and a NUL: its length, with *cut set if it was shortened. */
size_t wc_fold_frame_clean(const char *in, size_t n, char *out, size_t cap,
			   bool *cut);

/* A line split into its stack (frames and ';', without the spaces before
 * the value) and its value. */
struct wc_fold_line {
	const char *stack;
	size_t len;
	uint64_t value;
};

/* Parse line[0..len), its "\n" or "\r\n" included or not: 1 for a line,
 * 0 for a blank one, -1 for one that is not "STACK VALUE" (no stack, no
 * value, a value that is not a decimal integer below 2^64, or a NUL). */
int wc_fold_parse(const char *line, size_t len, struct wc_fold_line *out);

/* " VALUE\n" and a NUL into the end of buf (24 bytes): where it
 * starts. */
const char *wc_fold_value_text(uint64_t value, char buf[24]);

#endif /* WC_FORMAT_H */
