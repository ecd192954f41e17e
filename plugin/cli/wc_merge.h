/*
 * wc_merge.h - folded files summed into one table of stacks: what
 * `wallclock render` and `wallclock merge` read, from any host and any
 * version of the plugin.
 *
 * Owns: the text of each distinct stack (a wc_strtab, at most 1 GiB), an
 * index from it to the stack's entry, and the entries, at most max stacks;
 * a stack beyond that (or beyond the text's bound) is summed into its
 * group's "GROUP;[other]" line (room for one per group is kept), and
 * counted.  Input is untrusted text, plain or gzip: a line that is not
 * "STACK VALUE" (wc_fold_parse), or is longer than WC_MERGE_LINE_MAX
 * bytes, or would carry its stack's sum past 64 bits, is counted as
 * malformed and skipped whole, never cut into pieces that parse.
 */
#ifndef WC_MERGE_H
#define WC_MERGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/wc_budget.h"
#include "util/wc_idmap.h"
#include "util/wc_strtab.h"

#define WC_MERGE_LINE_MAX (1u << 20)

struct wc_merge_entry {
	uint32_t stack; /* its text: wc_merge_stack */
	uint64_t value;
};

struct wc_merge {
	struct wc_budget budget;
	struct wc_strtab text; /* the stacks' text */
	struct wc_idmap index; /* a stack's offset in text + 1 -> entry */
	struct wc_merge_entry *entries;
	size_t n, cap, limit; /* limit: max, and room for the others */
	size_t max;
	const char *group; /* only its lines are taken; NULL: all */
	uint64_t dropped;  /* stacks that found the table full */
	uint64_t bad;	   /* malformed lines */
	uint64_t lines;
};

/* 0, or -1 (out of memory).  group, if not NULL, must outlive t. */
int wc_merge_init(struct wc_merge *t, size_t max, const char *group);
void wc_merge_free(struct wc_merge *t);

/* One line, without its newline. */
void wc_merge_line(struct wc_merge *t, const char *line, size_t len);

/* Every line of fd (taken and closed), plain or gzip.  0, or -1 with
 * errno (the lines read before an error are kept). */
int wc_merge_read_fd(struct wc_merge *t, int fd);

/* An entry's stack, good until t changes. */
const char *wc_merge_stack(const struct wc_merge *t,
			   const struct wc_merge_entry *e);

/* The stacks with a value, largest first (equal ones by text): an array
 * of n pointers into t, the caller's to free.  NULL if out of memory. */
const struct wc_merge_entry **wc_merge_sorted(const struct wc_merge *t,
					      size_t *n);

/* "STACK VALUE\n" per stack, in wc_merge_sorted's order.  0 or -1. */
int wc_merge_write(const struct wc_merge *t, FILE *out);

#endif /* WC_MERGE_H */
