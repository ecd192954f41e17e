/* wc_idmap.c - see wc_idmap.h. */
#include <stdlib.h>

#include "util/wc_idmap.h"

static uint32_t slot_of(const struct wc_idmap *m, uint64_t key)
{
	/* splitmix64's finaliser: thread ids are sequential, tgids dense. */
	key ^= key >> 30;
	key *= 0xbf58476d1ce4e5b9ULL;
	key ^= key >> 27;
	key *= 0x94d049bb133111ebULL;
	key ^= key >> 31;
	return (uint32_t)key & m->mask;
}

#define MIN_SLOTS 64

static int alloc_slots(struct wc_idmap *m, uint64_t slots)
{
	m->keys = calloc(slots, sizeof(*m->keys));
	m->vals = calloc(slots, sizeof(*m->vals));
	if (!m->keys || !m->vals) {
		free(m->keys);
		free(m->vals);
		m->keys = NULL;
		m->vals = NULL;
		return -1;
	}
	m->mask = (uint32_t)(slots - 1);
	return 0;
}

int wc_idmap_init(struct wc_idmap *m, uint32_t max_entries)
{
	uint64_t cap = 2;

	*m = (struct wc_idmap){0};
	if (max_entries == 0 || max_entries > (1u << 30))
		return -1;
	while (cap < 2 * (uint64_t)max_entries)
		cap <<= 1;
	if (alloc_slots(m, cap < MIN_SLOTS ? cap : MIN_SLOTS))
		return -1;
	m->max_mask = (uint32_t)(cap - 1);
	m->max_entries = max_entries;
	return 0;
}

void wc_idmap_free(struct wc_idmap *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->count = 0;
}

static bool find(const struct wc_idmap *m, uint64_t key, uint32_t *slot)
{
	uint32_t i = slot_of(m, key);

	while (m->keys[i]) {
		if (m->keys[i] == key) {
			*slot = i;
			return true;
		}
		i = (i + 1) & m->mask;
	}
	*slot = i;
	return false;
}

bool wc_idmap_get(const struct wc_idmap *m, uint64_t key, uint32_t *val)
{
	uint32_t i;

	if (key == 0 || !find(m, key, &i))
		return false;
	*val = m->vals[i];
	return true;
}

void wc_idmap_prefetch(const struct wc_idmap *m, uint64_t key)
{
	uint32_t i = slot_of(m, key);

	__builtin_prefetch(&m->keys[i]);
	__builtin_prefetch(&m->vals[i]);
}

/* Twice the slots, every key placed again; false if there was no memory
 * (the old arrays are kept). */
static bool grow(struct wc_idmap *m)
{
	struct wc_idmap old = *m;
	uint32_t i, at;

	if (alloc_slots(m, 2 * ((uint64_t)old.mask + 1))) {
		*m = old;
		return false;
	}
	for (i = 0; i <= old.mask; i++) {
		if (!old.keys[i])
			continue;
		find(m, old.keys[i], &at);
		m->keys[at] = old.keys[i];
		m->vals[at] = old.vals[i];
	}
	free(old.keys);
	free(old.vals);
	return true;
}

int wc_idmap_put(struct wc_idmap *m, uint64_t key, uint32_t val)
{
	uint32_t i;

	if (key == 0)
		return -1;
	if (!find(m, key, &i)) {
		if (m->count >= m->max_entries)
			return -1;
		/* at most half full, so probe runs end at an empty slot */
		if (2 * ((uint64_t)m->count + 1) > (uint64_t)m->mask + 1) {
			if (m->mask == m->max_mask || !grow(m))
				return -1;
			find(m, key, &i);
		}
		m->keys[i] = key;
		m->count++;
	}
	m->vals[i] = val;
	return 0;
}

/* Distance from a key's home slot to where it sits, modulo the table. */
static uint32_t displacement(const struct wc_idmap *m, uint32_t at)
{
	return (at - slot_of(m, m->keys[at])) & m->mask;
}

bool wc_idmap_del(struct wc_idmap *m, uint64_t key)
{
	uint32_t hole, next;

	if (key == 0 || !find(m, key, &hole))
		return false;
	/* Pull back every following key whose probe run passes the hole. */
	for (next = (hole + 1) & m->mask; m->keys[next];
	     next = (next + 1) & m->mask) {
		if (displacement(m, next) >= ((next - hole) & m->mask)) {
			m->keys[hole] = m->keys[next];
			m->vals[hole] = m->vals[next];
			hole = next;
		}
	}
	m->keys[hole] = 0;
	m->count--;
	return true;
}
