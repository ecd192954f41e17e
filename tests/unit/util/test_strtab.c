/*
 * test_strtab.c - interned strings and the byte budget they share: one
 * offset per distinct string through index growth, refusal at the budget
 * with nothing changed, and clear.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "util/wc_budget.h"
#include "util/wc_strtab.h"

static void test_same_string_same_offset(void)
{
	struct wc_budget b = {.max = 1 << 20};
	struct wc_strtab t;
	uint32_t a, a2, c, d;

	CHECK(wc_strtab_init(&t, &b, 64) == 0);
	CHECK(wc_strtab_intern(&t, "main", 4, true, &a) == 1);
	CHECK(wc_strtab_intern(&t, "main;x", 4, false, &a2) == 0 && a2 == a);
	CHECK(wc_strtab_intern(&t, "mai", 3, true, &c) == 1 && c != a);
	CHECK(wc_strtab_intern(&t, "other", 5, false, &d) == -1);
	CHECK(strcmp(wc_strtab_str(&t, a), "main") == 0);
	CHECK(strcmp(wc_strtab_str(&t, c), "mai") == 0);
	CHECK(t.count == 2);
	wc_strtab_free(&t);
}

/* Thousands of strings: the index doubles many times and every string
 * keeps its offset and text. */
static void test_growth_keeps_offsets(void)
{
	struct wc_budget b = {.max = 8 << 20};
	static uint32_t off[5000];
	struct wc_strtab t;
	char s[32];
	uint32_t o;
	int i, n, bad = 0;

	CHECK(wc_strtab_init(&t, &b, 16) == 0);
	for (i = 0; i < 5000; i++) {
		n = snprintf(s, sizeof(s), "frame_%d", i);
		CHECK(wc_strtab_intern(&t, s, (size_t)n, true, &off[i]) == 1);
	}
	for (i = 0; i < 5000; i++) {
		n = snprintf(s, sizeof(s), "frame_%d", i);
		bad += wc_strtab_intern(&t, s, (size_t)n, true, &o) != 0 ||
		       o != off[i] || strcmp(wc_strtab_str(&t, o), s) != 0;
	}
	CHECK(bad == 0);
	CHECK(t.cap >= 2 * t.count);
	CHECK(b.bytes <= b.max);
	wc_strtab_free(&t);
}

/* At the budget a new string is refused, the table and budget unchanged,
 * and strings already in are still found. */
static void test_budget_refuses(void)
{
	struct wc_budget b = {.max = 4096};
	struct wc_strtab t;
	char s[64];
	uint32_t o, first;
	size_t before;
	int i, n, rc = 1;

	CHECK(wc_strtab_init(&t, &b, 16) == 0);
	CHECK(wc_strtab_intern(&t, "first", 5, true, &first) == 1);
	for (i = 0; rc == 1 && i < 10000; i++) {
		n = snprintf(s, sizeof(s), "a rather long frame name %d", i);
		rc = wc_strtab_intern(&t, s, (size_t)n, true, &o);
	}
	CHECK(rc == -1);
	CHECK(b.bytes <= b.max);
	before = b.bytes;
	n = (int)t.count;
	CHECK(wc_strtab_intern(&t, s, strlen(s), true, &o) == -1);
	CHECK(b.bytes == before && (int)t.count == n);
	CHECK(wc_strtab_intern(&t, "first", 5, true, &o) == 0 && o == first);
	wc_strtab_free(&t);
}

static void test_clear(void)
{
	struct wc_budget b = {.max = 1 << 20};
	struct wc_strtab t;
	uint32_t o;
	size_t bytes;

	CHECK(wc_strtab_init(&t, &b, 64) == 0);
	CHECK(wc_strtab_intern(&t, "x", 1, true, &o) == 1);
	bytes = b.bytes;
	wc_strtab_clear(&t);
	CHECK(t.count == 0 && b.bytes == bytes);
	CHECK(wc_strtab_intern(&t, "x", 1, false, &o) == -1);
	CHECK(wc_strtab_intern(&t, "y", 1, true, &o) == 1 && o == 0);
	wc_strtab_free(&t);
}

static void test_budget_grow(void)
{
	struct wc_budget b = {.max = 100};
	size_t cap = 0;
	char *buf = NULL;

	CHECK(wc_budget_grow(&b, (void **)&buf, &cap, 10, 1) == 0);
	CHECK(cap == 100 && b.bytes == 100);
	CHECK(wc_budget_grow(&b, (void **)&buf, &cap, 101, 1) == -1);
	CHECK(cap == 100 && b.bytes == 100);
	CHECK(wc_budget_resize(&b, (void **)&buf, &cap, 40, 1) == 0);
	CHECK(cap == 40 && b.bytes == 40);
	CHECK(!wc_budget_has(&b, 61) && wc_budget_has(&b, 60));
	free(buf);
}

int main(void)
{
	check_prog = "test_strtab";
	RUN(test_same_string_same_offset);
	RUN(test_growth_keeps_offsets);
	RUN(test_budget_refuses);
	RUN(test_clear);
	RUN(test_budget_grow);
	return check_done();
}
