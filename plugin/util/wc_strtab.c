/*
 * wc_strtab.c - interned strings within a byte budget.
 */
#include "util/wc_strtab.h"

#include <stdlib.h>
#include <string.h>

#include "util/wc_hash.h"

#define FIRST_SLOTS 256

int wc_strtab_init(struct wc_strtab *t, struct wc_budget *b, size_t text)
{
	memset(t, 0, sizeof(*t));
	t->budget = b;
	t->cap = FIRST_SLOTS;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	t->hash = calloc(t->cap, sizeof(*t->hash));
	b->bytes += t->cap * 2 * sizeof(uint32_t);
	if (!t->slots || !t->hash ||
	    wc_budget_grow(b, (void **)&t->text, &t->text_cap, text, 1) < 0)
		return -1;
	return 0;
}

void wc_strtab_free(struct wc_strtab *t)
{
	free(t->text);
	free(t->slots);
	free(t->hash);
	memset(t, 0, sizeof(*t));
}

void wc_strtab_clear(struct wc_strtab *t)
{
	t->len = 0;
	t->count = 0;
	memset(t->slots, 0, t->cap * sizeof(*t->slots));
}

static bool find(const struct wc_strtab *t, const char *s, size_t n, uint32_t h,
		 size_t *slot)
{
	size_t mask = t->cap - 1, i = h & mask;

	while (t->slots[i]) {
		const char *u = t->text + t->slots[i] - 1;

		if (t->hash[i] == h && strncmp(u, s, n) == 0 && !u[n]) {
			*slot = i;
			return true;
		}
		i = (i + 1) & mask;
	}
	*slot = i;
	return false;
}

/* Double the index; the old one stays if there is no room. */
static int rehash(struct wc_strtab *t)
{
	size_t ncap = t->cap * 2, held = t->cap * 2 * sizeof(uint32_t), i, j;
	uint32_t *slots, *hash;

	/* both indexes are held while moving */
	if (!wc_budget_has(t->budget, ncap * 2 * sizeof(uint32_t)))
		return -1;
	slots = calloc(ncap, sizeof(*slots));
	hash = calloc(ncap, sizeof(*hash));
	if (!slots || !hash) {
		free(slots);
		free(hash);
		return -1;
	}
	for (i = 0; i < t->cap; i++) {
		if (!t->slots[i])
			continue;
		for (j = t->hash[i] & (ncap - 1); slots[j];
		     j = (j + 1) & (ncap - 1))
			;
		slots[j] = t->slots[i];
		hash[j] = t->hash[i];
	}
	free(t->slots);
	free(t->hash);
	t->budget->bytes += ncap * 2 * sizeof(uint32_t) - held;
	t->slots = slots;
	t->hash = hash;
	t->cap = ncap;
	return 0;
}

int wc_strtab_intern(struct wc_strtab *t, const char *s, size_t n, bool insert,
		     uint32_t *off)
{
	uint32_t h = wc_hash32(s, n);
	size_t slot;

	if (find(t, s, n, h, &slot)) {
		*off = t->slots[slot] - 1;
		return 0;
	}
	if (!insert)
		return -1;
	if ((t->count + 1) * 2 > t->cap) {
		if (rehash(t) < 0)
			return -1;
		find(t, s, n, h, &slot);
	}
	if (wc_budget_grow(t->budget, (void **)&t->text, &t->text_cap,
			   t->len + n + 1, 1))
		return -1;
	memcpy(t->text + t->len, s, n);
	t->text[t->len + n] = '\0';
	*off = (uint32_t)t->len;
	t->len += n + 1;
	t->slots[slot] = *off + 1;
	t->hash[slot] = h;
	t->count++;
	return 1;
}
