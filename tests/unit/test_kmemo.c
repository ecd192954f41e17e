/*
 * test_kmemo.c - the per-flush memo of symbolized kernel stacks: what is
 * put comes back the same, its bounds (stacks, text) refuse rather than
 * overflow, and a reset forgets everything while the memory is reused.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "wc_kmemo.h"

static void test_put_get(void)
{
	const char *frames[] = {"entry_SYSCALL_64_[k]", "do_nanosleep_[k]",
				"schedule_[k]"};
	const char *out[8];
	struct wc_kmemo *m = wc_kmemo_new(16, 4096);
	uint32_t named = 0;
	int i, n;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK(wc_kmemo_get(m, 42, out, 8, &named) == -1);
	CHECK(wc_kmemo_put(m, 42, frames, 3, 2));
	n = wc_kmemo_get(m, 42, out, 8, &named);
	CHECK(n == 3);
	CHECK(named == 2);
	for (i = 0; i < n && i < 3; i++)
		CHECK(strcmp(out[i], frames[i]) == 0);
	/* no more than asked for */
	CHECK(wc_kmemo_get(m, 42, out, 2, &named) == 2);
	CHECK(wc_kmemo_get(m, 43, out, 8, &named) == -1);
	wc_kmemo_free(m);
}

static void test_bounds(void)
{
	const char *big[] = {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
	const char *one[] = {"x"};
	const char *out[2];
	struct wc_kmemo *m = wc_kmemo_new(2, 64);
	uint32_t named;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK(wc_kmemo_put(m, 1, big, 1, 1));	/* 50 of 64 bytes */
	CHECK(!wc_kmemo_put(m, 2, big, 1, 1));	/* text full */
	CHECK(wc_kmemo_get(m, 2, out, 2, &named) == -1);
	CHECK(wc_kmemo_put(m, 3, one, 1, 1));	/* second stack */
	CHECK(!wc_kmemo_put(m, 4, one, 1, 1));	/* stacks full */
	CHECK(wc_kmemo_get(m, 1, out, 2, &named) == 1);
	CHECK(wc_kmemo_get(m, 3, out, 2, &named) == 1);
	wc_kmemo_free(m);
}

static void test_reset_reuses(void)
{
	const char *a[] = {"first_[k]"}, *b[] = {"second_[k]"};
	const char *out[2];
	struct wc_kmemo *m = wc_kmemo_new(1, 32);
	uint32_t named;
	int round;

	CHECK(m != NULL);
	if (!m)
		return;
	for (round = 0; round < 1000; round++) {
		wc_kmemo_reset(m);
		CHECK(wc_kmemo_get(m, 7, out, 2, &named) == -1);
		CHECK(wc_kmemo_put(m, 7, round & 1 ? a : b, 1, 0));
		CHECK(wc_kmemo_get(m, 7, out, 2, &named) == 1);
		CHECK(strcmp(out[0], round & 1 ? a[0] : b[0]) == 0);
	}
	wc_kmemo_free(m);
}

int main(void)
{
	check_prog = "test_kmemo";
	RUN(test_put_get);
	RUN(test_bounds);
	RUN(test_reset_reuses);
	return check_done();
}
