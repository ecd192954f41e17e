/*
 * wc_sym_perfmap.h - JIT symbols from a perf map (/tmp/perf-PID.map, one
 * "START SIZE name" line per compiled function, in hex, appended as the
 * JIT goes).
 *
 * Owns: nothing of its own: it fills a caller's wc_symtab.  The file is
 * written by the profiled process, so it is hostile input: lines of any
 * length, garbage, control bytes and any size.  Bad lines are skipped and
 * counted; a file bigger than the table's budget is read from its end,
 * because a later line replaces an earlier one for the same address (code
 * is reused after the JIT frees it), so the tail is what is current.
 */
#ifndef WC_SYM_PERFMAP_H
#define WC_SYM_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#include "sym/wc_sym_tab.h"

/* Parse one line; name points into it.  0 or -1. */
int wc_perfmap_parse_line(const char *line, size_t len, uint64_t *start,
			  uint64_t *size, const char **name, size_t *namelen);

/* Read the map from fd (taken and closed) into t (initialised by the
 * caller, finished here), no further than size bytes (its size when it
 * was opened: a map that keeps growing is not chased).  Returns the number
 * of symbols kept, or -1; *bad counts lines skipped. */
long wc_perfmap_load(int fd, uint64_t size, struct wc_symtab *t, uint64_t *bad);

#endif /* WC_SYM_PERFMAP_H */
