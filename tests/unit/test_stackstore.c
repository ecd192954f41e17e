/*
 * test_stackstore.c - the window of raw stacks: weights merge per key,
 * stacks are held by hash across windows while named, and every bound is
 * kept and counted.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "wc_stacks.h"

struct sum {
	uint64_t total;
	uint32_t n;
};

static void add_up(void *arg, const struct wc_stack_entry *e)
{
	struct sum *s = arg;

	s->total += e->weight;
	s->n++;
}

static struct wc_stack_key key(uint32_t tgid, uint32_t kind, uint64_t u,
			       uint64_t k)
{
	struct wc_stack_key x = {
		.tgid = tgid, .kind = kind, .ustack = u, .kstack = k};

	return x;
}

static struct wc_stack stack_of(uint32_t nr, uint64_t base)
{
	struct wc_stack st;
	uint32_t i;

	memset(&st, 0, sizeof(st));
	st.nr = nr;
	for (i = 0; i < nr && i < WC_STACK_DEPTH; i++)
		st.ip[i] = base + i;
	return st;
}

static void test_weights_merge(void)
{
	struct wc_stacks *s;
	struct wc_stack_key a = key(10, WC_ONCPU, 5, 6);
	struct wc_stack_key b = key(10, WC_SLEEP, 5, 6);
	struct sum sum = {0, 0};

	CHECK(wc_stacks_new(64, 64, 1 << 20, &s) == 0);
	CHECK(wc_stacks_add(s, "app", &a, 3) == 0);
	CHECK(wc_stacks_add(s, "app", &a, 4) == 0);
	CHECK(wc_stacks_add(s, "app", &b, 1000) == 0);
	/* the same key under another group is another entry */
	CHECK(wc_stacks_add(s, "other", &a, 1) == 0);
	wc_stacks_foreach(s, add_up, &sum);
	CHECK(sum.n == 3 && sum.total == 1008);
	wc_stacks_next_window(s);
	sum.n = 0;
	sum.total = 0;
	wc_stacks_foreach(s, add_up, &sum);
	CHECK(sum.n == 0);
	wc_stacks_free(s);
}

struct walk {
	uint32_t n, tgid[64];
	uint64_t ustack[64];
};

static void note_order(void *arg, const struct wc_stack_entry *e)
{
	struct walk *w = arg;

	if (w->n < 64) {
		w->tgid[w->n] = e->tgid;
		w->ustack[w->n++] = e->ustack;
	}
}

/* The walk brings one process's weights together, and within one the
 * weights of a user stack, whatever order they came in. */
static void test_walk_by_process(void)
{
	static const uint32_t tgids[] = {30, 10, 20, 10, 30, 10, 20, 10};
	static const uint64_t us[] = {7, 9, 1, 3, 7, 9, 1, 9};
	struct walk w = {0};
	struct wc_stacks *s;
	uint32_t i;

	CHECK(wc_stacks_new(64, 64, 1 << 20, &s) == 0);
	for (i = 0; i < 8; i++) {
		struct wc_stack_key k = key(tgids[i], WC_SLEEP, us[i], 100 + i);

		CHECK(wc_stacks_add(s, "app", &k, 1) == 0);
	}
	wc_stacks_foreach(s, note_order, &w);
	CHECK(w.n == 8);
	for (i = 1; i < w.n; i++)
		CHECK(w.tgid[i - 1] < w.tgid[i] ||
		      (w.tgid[i - 1] == w.tgid[i] &&
		       w.ustack[i - 1] <= w.ustack[i]));
	wc_stacks_free(s);
}

struct by_group {
	uint64_t w[100];
	uint32_t bad;
};

static void add_by_group(void *arg, const struct wc_stack_entry *e)
{
	struct by_group *g = arg;
	unsigned int i;

	if (sscanf(e->group, "group-%u", &i) == 1 && i < 100)
		g->w[i] += e->weight;
	else
		g->bad++;
}

/* Group names are held once per window however many weights name them,
 * and come back right past many groups and across windows. */
static void test_group_names(void)
{
	struct wc_stacks *s;
	int round;

	CHECK(wc_stacks_new(1000, 16, 1 << 20, &s) == 0);
	for (round = 0; round < 3; round++) {
		struct by_group g = {{0}, 0};
		uint32_t i, j;

		for (i = 0; i < 300; i++) {
			struct wc_stack_key k = key(i % 7 + 1, WC_SLEEP, 5, 6);
			char name[32];

			j = (i * 37 + (uint32_t)round) % 100;
			snprintf(name, sizeof(name), "group-%u", j);
			CHECK(wc_stacks_add(s, name, &k, j + 1) == 0);
		}
		wc_stacks_foreach(s, add_by_group, &g);
		CHECK(g.bad == 0);
		for (j = 0; j < 100; j++)
			CHECK(g.w[j] == 3 * (j + 1));
		wc_stacks_next_window(s);
	}
	wc_stacks_free(s);
}

static void test_weights_bound(void)
{
	struct wc_stacks *s;
	struct wc_stacks_stats st;
	uint32_t i;

	CHECK(wc_stacks_new(100, 16, 1 << 20, &s) == 0);
	for (i = 0; i < 150; i++) {
		struct wc_stack_key k = key(i + 1, WC_ONCPU, 2, 3);

		wc_stacks_add(s, "app", &k, 1);
	}
	wc_stacks_stats(s, &st);
	CHECK(st.weights == 100);
	CHECK(st.weights_dropped == 50);
	/* a new window has room again */
	wc_stacks_next_window(s);
	{
		struct wc_stack_key k = key(999, WC_ONCPU, 2, 3);

		CHECK(wc_stacks_add(s, "app", &k, 1) == 0);
	}
	wc_stacks_free(s);
}

static void test_stacks_held_across_windows(void)
{
	struct wc_stacks *s;
	struct wc_stack st = stack_of(5, 0x1000);
	struct wc_stack_view v;

	CHECK(wc_stacks_new(16, 16, 1 << 20, &s) == 0);
	CHECK(!wc_stacks_has(s, 77));
	CHECK(wc_stacks_put(s, 77, &st) == 0);
	CHECK(wc_stacks_get(s, 77, &v) && v.nr == 5 && v.ip[0] == 0x1000 &&
	      v.ip[4] == 0x1004);
	/* named in this window: kept through its end */
	wc_stacks_next_window(s);
	CHECK(wc_stacks_get(s, 77, &v));
	/* named again in the next one: kept again */
	CHECK(wc_stacks_has(s, 77));
	wc_stacks_next_window(s);
	CHECK(wc_stacks_get(s, 77, &v));
	/* a whole window without it: gone */
	wc_stacks_next_window(s);
	CHECK(!wc_stacks_get(s, 77, &v));
	wc_stacks_free(s);
}

static void test_stacks_bounds(void)
{
	struct wc_stacks *s;
	struct wc_stacks_stats st;
	struct wc_stack big = stack_of(100, 0x5000);
	uint64_t h;

	/* room for 4 stacks, or 2 of 100 frames by bytes */
	CHECK(wc_stacks_new(16, 4, 2 * 100 * sizeof(uint64_t), &s) == 0);
	CHECK(wc_stacks_put(s, 2, &big) == 0);
	CHECK(wc_stacks_put(s, 3, &big) == 0);
	CHECK(wc_stacks_put(s, 4, &big) != 0); /* bytes */
	for (h = 10; h < 14; h++) {
		struct wc_stack small = stack_of(1, h);

		wc_stacks_put(s, h, &small);
	}
	wc_stacks_stats(s, &st);
	CHECK(st.stacks == 2);
	CHECK(st.stacks_dropped == 5);
	CHECK(st.stack_bytes == 2 * 100 * sizeof(uint64_t));
	/* once they are gone there is room; a nonsense depth is clamped */
	wc_stacks_next_window(s);
	wc_stacks_next_window(s);
	big.nr = 100000;
	CHECK(wc_stacks_put(s, 9, &big) == 0);
	{
		struct wc_stack_view v;

		CHECK(wc_stacks_get(s, 9, &v) && v.nr == WC_STACK_DEPTH);
	}
	wc_stacks_free(s);
}

static void test_many_windows_no_growth(void)
{
	struct wc_stacks *s;
	struct wc_stacks_stats st;
	uint32_t w, i;

	CHECK(wc_stacks_new(1000, 1000, 1 << 20, &s) == 0);
	for (w = 0; w < 50; w++) {
		for (i = 0; i < 500; i++) {
			uint64_t h = 2 + w * 1000 + i;
			struct wc_stack st1 = stack_of(8, h);
			struct wc_stack_key k = key(i + 1, WC_SLEEP, h, 0);

			if (!wc_stacks_has(s, h))
				wc_stacks_put(s, h, &st1);
			wc_stacks_add(s, "app", &k, 1000);
		}
		wc_stacks_next_window(s);
	}
	wc_stacks_stats(s, &st);
	CHECK(st.stacks <= 500);
	CHECK(st.stacks_dropped == 0 && st.weights_dropped == 0);
	wc_stacks_free(s);
}

int main(void)
{
	check_prog = "test_stackstore";
	RUN(test_weights_merge);
	RUN(test_walk_by_process);
	RUN(test_group_names);
	RUN(test_weights_bound);
	RUN(test_stacks_held_across_windows);
	RUN(test_stacks_bounds);
	RUN(test_many_windows_no_growth);
	return check_done();
}
