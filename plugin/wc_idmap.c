/* wc_idmap.c - see wc_idmap.h. */
#include <stdlib.h>

#include "wc_idmap.h"

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

int wc_idmap_init(struct wc_idmap *m, uint32_t max_entries)
{
	uint64_t cap = 2;

	if (max_entries == 0 || max_entries > (1u << 30))
		return -1;
	while (cap < 2 * (uint64_t)max_entries)
		cap <<= 1;
	m->keys = calloc(cap, sizeof(*m->keys));
	m->vals = calloc(cap, sizeof(*m->vals));
	if (!m->keys || !m->vals) {
		wc_idmap_free(m);
		return -1;
	}
	m->mask = (uint32_t)(cap - 1);
	m->count = 0;
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

int wc_idmap_put(struct wc_idmap *m, uint64_t key, uint32_t val)
{
	uint32_t i;

	if (key == 0)
		return -1;
	if (!find(m, key, &i)) {
		if (m->count >= m->max_entries)
			return -1;
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
