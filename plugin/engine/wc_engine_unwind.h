/*
 * wc_engine_unwind.h - the thread that serves the BPF walks' requests
 * for unwind tables, off collectd's read path: a table takes up to a
 * second to build.
 *
 * Owns: the store (wc_unwind), the helper that builds tables (a
 * wc_sym_src of its own, with its own share of the time), the thread,
 * and the store's view of the kernel's maps (the collector's).
 */
#ifndef WC_ENGINE_UNWIND_H
#define WC_ENGINE_UNWIND_H

#include <stddef.h>

#include "core/wc_collector.h"
#include "unwind/wc_unwind.h"

struct wc_engine_uw;

/* Start serving the maps m describes; NULL with err. */
struct wc_engine_uw *wc_engine_uw_start(const struct wc_collector_uw *m,
					char *err, size_t errlen);
void wc_engine_uw_stats(struct wc_engine_uw *s, struct wc_unwind_stats *out);
/* Waits for a build under way (its limits bound it). */
void wc_engine_uw_stop(struct wc_engine_uw *s);

#endif /* WC_ENGINE_UNWIND_H */
