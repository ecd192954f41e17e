/*
 * test_idmap.c - the id map: put/get/del, its bounds, growth, and
 * backward-shift deletion under long random churn, checked against a
 * plain array that cannot get collisions wrong.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "util/wc_idmap.h"

static uint64_t rng_state;

/* xorshift64*: a fixed seed makes any failure replay exactly. */
static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

/* An odd multiplier is a bijection, so distinct indexes give distinct,
 * non-zero keys spread over all 64 bits. */
static uint64_t key_of(uint32_t i)
{
	return (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ULL;
}

static bool has(const struct wc_idmap *m, uint64_t key, uint32_t want)
{
	uint32_t v = ~want;

	return wc_idmap_get(m, key, &v) && v == want;
}

static void test_put_get_overwrite_del(void)
{
	struct wc_idmap m;
	uint32_t v = 7;

	CHECK(wc_idmap_init(&m, 16) == 0);
	CHECK(!wc_idmap_get(&m, 5, &v) && v == 7);
	CHECK(wc_idmap_put(&m, 5, 50) == 0);
	CHECK(wc_idmap_put(&m, UINT64_MAX, 0) == 0);
	CHECK(has(&m, 5, 50));
	CHECK(has(&m, UINT64_MAX, 0));
	CHECK(wc_idmap_put(&m, 5, 51) == 0);
	CHECK(has(&m, 5, 51));
	CHECK(m.count == 2);
	CHECK(wc_idmap_del(&m, 5));
	CHECK(!wc_idmap_get(&m, 5, &v));
	CHECK(!wc_idmap_del(&m, 5));
	CHECK(has(&m, UINT64_MAX, 0));
	CHECK(m.count == 1);
	wc_idmap_free(&m);
	CHECK(m.keys == NULL && m.vals == NULL && m.count == 0);
}

/* 0 marks an empty slot, so it must never be stored. */
static void test_key_zero_rejected(void)
{
	struct wc_idmap m;
	uint32_t v;

	CHECK(wc_idmap_init(&m, 4) == 0);
	CHECK(wc_idmap_put(&m, 0, 1) == -1);
	CHECK(m.count == 0);
	CHECK(!wc_idmap_get(&m, 0, &v));
	CHECK(!wc_idmap_del(&m, 0));
	CHECK(wc_idmap_put(&m, 1, 1) == 0);
	CHECK(!wc_idmap_get(&m, 0, &v));
	CHECK(!wc_idmap_del(&m, 0));
	CHECK(m.count == 1);
	wc_idmap_free(&m);
}

static void test_init_bounds(void)
{
	struct wc_idmap m;

	CHECK(wc_idmap_init(&m, 0) == -1);
	CHECK(wc_idmap_init(&m, (1u << 30) + 1) == -1);
	CHECK(wc_idmap_init(&m, 1000) == 0);
	CHECK(m.max_entries == 1000 && m.count == 0);
	wc_idmap_free(&m);
}

/* The arrays follow the keys held, not the bound: a map for a million
 * keys holding a hundred stays small (its RSS would otherwise creep to
 * the bound's 12 MiB as keys hashed all over it touch page after page),
 * and at its bound it is at most half full, so probe runs always end at
 * an empty slot. */
static void test_sized_by_use(void)
{
	struct wc_idmap m;
	uint32_t i;

	CHECK(wc_idmap_init(&m, 1u << 20) == 0);
	CHECK(m.mask + 1 <= 64);
	for (i = 0; i < 100; i++)
		CHECK(wc_idmap_put(&m, key_of(i), i) == 0);
	CHECK(m.mask + 1 >= 200 && m.mask + 1 <= 256);
	for (i = 0; i < 100; i++)
		CHECK(has(&m, key_of(i), i));
	wc_idmap_free(&m);

	CHECK(wc_idmap_init(&m, 1000) == 0);
	for (i = 0; i < 1000; i++)
		CHECK(wc_idmap_put(&m, key_of(i), i) == 0);
	CHECK(wc_idmap_put(&m, key_of(1000), 1000) == -1);
	CHECK(m.mask + 1 >= 2000 && m.mask + 1 <= 2048 &&
	      ((m.mask + 1) & m.mask) == 0);
	for (i = 0; i < 1000; i++)
		CHECK(has(&m, key_of(i), i));
	wc_idmap_free(&m);
}

static void test_full_map(void)
{
	struct wc_idmap m;
	uint32_t i, v;

	CHECK(wc_idmap_init(&m, 8) == 0);
	for (i = 0; i < 8; i++)
		CHECK(wc_idmap_put(&m, key_of(i), i) == 0);
	CHECK(wc_idmap_put(&m, key_of(8), 8) == -1);
	CHECK(!wc_idmap_get(&m, key_of(8), &v));
	CHECK(m.count == 8);
	/* Full means no new keys, not no writes. */
	CHECK(wc_idmap_put(&m, key_of(3), 33) == 0);
	CHECK(has(&m, key_of(3), 33));
	CHECK(wc_idmap_del(&m, key_of(0)));
	CHECK(wc_idmap_put(&m, key_of(8), 8) == 0);
	CHECK(wc_idmap_put(&m, key_of(9), 9) == -1);
	for (i = 1; i < 9; i++)
		CHECK(has(&m, key_of(i), i == 3 ? 33 : i));
	wc_idmap_free(&m);
}

/* The reference: ref[i] is the value of key_of(i), or -1 if absent. */
struct model {
	struct wc_idmap m;
	int64_t *ref;
	uint32_t nkeys;
	uint32_t count;
	bool ok;
};

static void model_expect(struct model *md, bool cond)
{
	if (!cond)
		md->ok = false;
}

static void model_check_key(struct model *md, uint32_t i)
{
	uint32_t v;
	bool found = wc_idmap_get(&md->m, key_of(i), &v);

	model_expect(md, found == (md->ref[i] >= 0));
	model_expect(md, !found || v == (uint32_t)md->ref[i]);
}

static void model_check_all(struct model *md)
{
	uint32_t i;

	for (i = 0; i < md->nkeys; i++)
		model_check_key(md, i);
}

static void model_put(struct model *md, uint32_t i)
{
	uint32_t val = (uint32_t)rng();
	bool fits = md->ref[i] >= 0 || md->count < md->m.max_entries;

	int rc = wc_idmap_put(&md->m, key_of(i), val);

	model_expect(md, rc == (fits ? 0 : -1));
	if (!fits)
		return;
	md->count += md->ref[i] < 0;
	md->ref[i] = val;
}

static void model_del(struct model *md, uint32_t i)
{
	model_expect(md, wc_idmap_del(&md->m, key_of(i)) == (md->ref[i] >= 0));
	md->count -= md->ref[i] >= 0;
	md->ref[i] = -1;
}

/*
 * Random puts and deletes over more keys than fit, so the map spends long
 * stretches full and deletions land inside colliding and wrapped probe
 * runs.  After every op: the touched key, the count and a few random keys;
 * every sweep_every ops, and at the end, every key.
 */
static void churn(uint32_t max_entries, uint32_t nkeys, long ops,
		  long sweep_every, uint64_t seed)
{
	struct model md = {.nkeys = nkeys, .ok = true};
	uint32_t i;
	long op;
	int j;

	rng_state = seed;
	md.ref = malloc(nkeys * sizeof(*md.ref));
	CHECK(md.ref && wc_idmap_init(&md.m, max_entries) == 0);
	if (!md.ref || !md.m.keys)
		return;
	for (i = 0; i < nkeys; i++)
		md.ref[i] = -1;
	for (op = 0; op < ops && md.ok; op++) {
		i = (uint32_t)(rng() % nkeys);
		if (rng() % 100 < 55)
			model_put(&md, i);
		else
			model_del(&md, i);
		model_check_key(&md, i);
		model_expect(&md, md.m.count == md.count);
		for (j = 0; j < 4; j++)
			model_check_key(&md, (uint32_t)(rng() % nkeys));
		if (op % sweep_every == 0)
			model_check_all(&md);
	}
	model_check_all(&md);
	if (!md.ok)
		printf("  churn(%u, %u) diverged by op %ld\n", max_entries,
		       nkeys, op);
	CHECK(md.ok);
	wc_idmap_free(&md.m);
	free(md.ref);
}

static void test_churn_large(void)
{
	churn(1000, 2000, 200000, 10, 0x5eed1234abcdULL);
}

/* Eight slots, four keys: nearly every delete shifts a wrapped run. */
static void test_churn_tiny(void)
{
	churn(4, 12, 100000, 1, 42);
}

int main(void)
{
	check_prog = "test_idmap";
	RUN(test_put_get_overwrite_del);
	RUN(test_key_zero_rejected);
	RUN(test_init_bounds);
	RUN(test_sized_by_use);
	RUN(test_full_map);
	RUN(test_churn_large);
	RUN(test_churn_tiny);
	return check_done();
}
