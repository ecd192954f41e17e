/*
 * wc_idmap.h - a hash from non-zero 64-bit keys to 32-bit values (slab
 * indexes), for at most max_entries keys.
 *
 * Owns: its two arrays.  They start small and double as keys arrive
 * (load factor at most 1/2), up to the size max_entries needs and never
 * past it; they never shrink.  The bounds are what the options allow, and
 * a table sized for them up front is touched a page at a time by keys
 * hashed all over it: the RSS would creep towards the bound for hours.
 * Sized by use, it follows the most keys held at once.  A put into a full
 * map (or one that cannot grow) fails and the caller counts it.
 * Linear probing with backward-shift deletion: no tombstones, so lookups
 * stay short under endless churn.
 */
#ifndef WC_IDMAP_H
#define WC_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wc_idmap {
	uint64_t *keys; /* 0 = empty slot */
	uint32_t *vals;
	uint32_t mask;
	uint32_t max_mask; /* the size max_entries needs, less one */
	uint32_t count;
	uint32_t max_entries;
};

int wc_idmap_init(struct wc_idmap *m, uint32_t max_entries);
void wc_idmap_free(struct wc_idmap *m);
bool wc_idmap_get(const struct wc_idmap *m, uint64_t key, uint32_t *val);
/* Start fetching the memory a get of key will read. */
void wc_idmap_prefetch(const struct wc_idmap *m, uint64_t key);
/* 0 on success (insert or overwrite), -1 if key is 0 or the map is full. */
int wc_idmap_put(struct wc_idmap *m, uint64_t key, uint32_t val);
bool wc_idmap_del(struct wc_idmap *m, uint64_t key);

#endif /* WC_IDMAP_H */
