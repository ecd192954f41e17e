/*
 * test_stackstore.c - the window of raw stacks: weights merge per key,
 * stacks are held by hash across windows while named, and every bound is
 * kept and counted.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "stacks/wc_stacks.h"

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
	wc_stacks_next_window(s, NULL, NULL);
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
struct runs {
	uint32_t n, tgid, bad;
	uint64_t ustack;
	uint64_t seen[128]; /* (tgid, ustack) runs met, as tgid ^ ustack */
	uint32_t nseen;
};

static void note_run(void *arg, const struct wc_stack_entry *e)
{
	struct runs *r = arg;
	uint32_t i;

	if (r->n++ && e->tgid == r->tgid && e->ustack == r->ustack)
		return;
	if (r->n > 1 && e->tgid < r->tgid)
		r->bad++;
	/* a new run: its stack must not have had one in this process */
	for (i = 0; i < r->nseen; i++)
		if (r->seen[i] == (e->tgid ^ e->ustack))
			r->bad++;
	if (r->nseen < 128)
		r->seen[r->nseen++] = e->tgid ^ e->ustack;
	r->tgid = e->tgid;
	r->ustack = e->ustack;
}

static void runs_check(struct wc_stacks *s)
{
	struct runs r = {0};

	wc_stacks_foreach(s, note_run, &r);
	CHECK(r.n == 3000 && r.bad == 0);
	/* 3 processes x 37 user stacks */
	CHECK(r.nseen == 111);
}

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
	/* small hashes fold to themselves: in order */
	for (i = 1; i < w.n; i++)
		CHECK(w.tgid[i - 1] < w.tgid[i] ||
		      (w.tgid[i - 1] == w.tgid[i] &&
		       w.ustack[i - 1] <= w.ustack[i]));
	wc_stacks_free(s);
	/* real ones: a process's user stacks each in one run */
	CHECK(wc_stacks_new(4096, 64, 1 << 20, &s) == 0);
	for (i = 0; i < 3000; i++) {
		uint64_t u = (i % 37 + 1) * 0x9e3779b97f4a7c15ULL;
		struct wc_stack_key k = key(1000 - i % 3, WC_SLEEP, u, i);

		CHECK(wc_stacks_add(s, "app", &k, 1) == 0);
	}
	runs_check(s);
	wc_stacks_free(s);
}

/* A flush's symbol budget goes to the hot paths first: processes by
 * on-CPU weight, then off-CPU, then PID; each still in one run. */
static void test_busiest_first(void)
{
	static const struct {
		uint32_t tgid, kind;
		uint64_t w;
	} in[] = {
		{5, WC_SLEEP, 1000}, {7, WC_ONCPU, 5},	{9, WC_ONCPU, 20},
		{5, WC_SLEEP, 1000}, {7, WC_ONCPU, 5},	{9, WC_SLEEP, 1},
		{3, WC_SLEEP, 10},   {8, WC_SLEEP, 10}, {7, WC_BLOCKED, 1},
	};
	static const uint32_t want[] = {9, 9, 7, 7, 7, 5, 5, 3, 8};
	struct walk w = {0};
	struct wc_stacks *s;
	uint32_t i;

	CHECK(wc_stacks_new(64, 64, 1 << 20, &s) == 0);
	for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct wc_stack_key k = key(in[i].tgid, in[i].kind, i + 1, i);

		CHECK(wc_stacks_add(s, "app", &k, in[i].w) == 0);
	}
	wc_stacks_foreach(s, note_order, &w);
	CHECK(w.n == sizeof(want) / sizeof(want[0]));
	for (i = 0; i < w.n; i++)
		CHECK(w.tgid[i] == want[i]);
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
		wc_stacks_next_window(s, NULL, NULL);
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
	wc_stacks_next_window(s, NULL, NULL);
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
	wc_stacks_next_window(s, NULL, NULL);
	CHECK(wc_stacks_get(s, 77, &v));
	/* named again in the next one: kept again */
	CHECK(wc_stacks_has(s, 77));
	wc_stacks_next_window(s, NULL, NULL);
	CHECK(wc_stacks_get(s, 77, &v));
	/* a whole window without it: let go, still held until reaped */
	wc_stacks_next_window(s, NULL, NULL);
	CHECK(wc_stacks_get(s, 77, &v));
	wc_stacks_reap(s);
	CHECK(!wc_stacks_get(s, 77, &v));
	wc_stacks_free(s);
}

struct let_go_log {
	uint64_t hash[8];
	uint32_t n;
};

static void note_let_go(void *arg, uint64_t hash)
{
	struct let_go_log *l = arg;

	if (l->n < 8)
		l->hash[l->n] = hash;
	l->n++;
}

/* A stack is let go once, at the end of its first window unnamed, and
 * kept until reaped; named again before that it stays.  Never reaped, it
 * goes at the end of the next window. */
static void test_stacks_let_go(void)
{
	struct wc_stacks *s;
	struct wc_stack st = stack_of(3, 0x2000);
	struct wc_stack_view v;
	struct let_go_log l = {{0}, 0};

	CHECK(wc_stacks_new(16, 16, 1 << 20, &s) == 0);
	CHECK(wc_stacks_put(s, 41, &st) == 0);
	CHECK(wc_stacks_put(s, 42, &st) == 0);
	CHECK(wc_stacks_put(s, 43, &st) == 0);
	wc_stacks_next_window(s, note_let_go, &l); /* all named */
	CHECK(l.n == 0);
	CHECK(wc_stacks_has(s, 42));
	wc_stacks_next_window(s, note_let_go, &l);
	CHECK(l.n == 2 && l.hash[0] == 41 && l.hash[1] == 43);
	/* a late weight names 41 before the reap: kept */
	CHECK(wc_stacks_has(s, 41));
	wc_stacks_reap(s);
	CHECK(wc_stacks_get(s, 41, &v) && wc_stacks_get(s, 42, &v));
	CHECK(!wc_stacks_get(s, 43, &v));
	/* 41 named in this window: kept, and let go once more later */
	wc_stacks_next_window(s, note_let_go, &l);
	CHECK(l.n == 3 && l.hash[2] == 42);
	wc_stacks_next_window(s, note_let_go, &l);
	/* 42 was let go and never reaped: gone; 41 let go now */
	CHECK(!wc_stacks_get(s, 42, &v) && wc_stacks_get(s, 41, &v));
	CHECK(l.n == 4 && l.hash[3] == 41);
	wc_stacks_reap(s);
	CHECK(!wc_stacks_get(s, 41, &v));
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
	/* once they are gone (named in the first window, let go at the end
	 * of the second, then reaped) there is room; a nonsense depth is
	 * clamped */
	wc_stacks_next_window(s, NULL, NULL);
	wc_stacks_next_window(s, NULL, NULL);
	CHECK(wc_stacks_put(s, 9, &big) != 0);
	wc_stacks_reap(s);
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
		wc_stacks_next_window(s, NULL, NULL);
		wc_stacks_reap(s);
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
	RUN(test_busiest_first);
	RUN(test_group_names);
	RUN(test_weights_bound);
	RUN(test_stacks_held_across_windows);
	RUN(test_stacks_let_go);
	RUN(test_stacks_bounds);
	RUN(test_many_windows_no_growth);
	return check_done();
}
