/*
 * wc_strtab.h - interned strings: each distinct string stored once and
 * named by its offset in one text buffer.
 *
 * Owns: the text and an open-addressed index of it (kept at most half
 * full), both grown within a byte budget the caller shares with its other
 * arrays; the index is charged from init, the text as it grows.  Strings
 * may hold any byte but NUL.  Not thread-safe.
 */
#ifndef WC_STRTAB_H
#define WC_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/wc_budget.h"

struct wc_strtab {
	struct wc_budget *budget;
	char *text; /* NUL-terminated strings, back to back */
	size_t len, text_cap;
	uint32_t *slots; /* offset + 1, 0 = empty */
	uint32_t *hash;
	size_t cap, count;
};

/* An empty table with a 256-slot index and room for text bytes. */
int wc_strtab_init(struct wc_strtab *t, struct wc_budget *b, size_t text);
void wc_strtab_free(struct wc_strtab *t);

/* Forget every string, keeping the memory. */
void wc_strtab_clear(struct wc_strtab *t);

/* The offset of s (n bytes) in *off: 0 if it was there, 1 if it was added,
 * -1 if it is new and insert is false, or there is no room. */
int wc_strtab_intern(struct wc_strtab *t, const char *s, size_t n, bool insert,
		     uint32_t *off);

static inline const char *wc_strtab_str(const struct wc_strtab *t, uint32_t off)
{
	return t->text + off;
}

#endif /* WC_STRTAB_H */
