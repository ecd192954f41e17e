/*
 * test_memo.c - the per-flush memo of symbolized frames: kernel stacks and
 * user frames come back as they were put, keys do not bleed into each
 * other (process, address, leaf or caller), the bounds refuse or empty the
 * table rather than overflow and are counted, and a reset forgets everything while the
 * memory is reused.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "stacks/wc_memo.h"

static void test_stack_put_get(void)
{
	const uint32_t ids[] = {10, 20, 30};
	struct wc_memo *m = wc_memo_new(16, 64);
	uint32_t out[8], named = 0;
	int i, n;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK(wc_memo_stack_get(m, 42, out, 8, &named) == -1);
	CHECK(wc_memo_stack_put(m, 42, ids, 3, 2));
	n = wc_memo_stack_get(m, 42, out, 8, &named);
	CHECK(n == 3);
	CHECK(named == 2);
	for (i = 0; i < n && i < 3; i++)
		CHECK(out[i] == ids[i]);
	/* no more than asked for */
	CHECK(wc_memo_stack_get(m, 42, out, 2, &named) == 2);
	CHECK(wc_memo_stack_get(m, 43, out, 8, &named) == -1);
	wc_memo_free(m);
}

static void test_stack_bounds(void)
{
	uint32_t big[40] = {0}, out[40], named;
	struct wc_memo *m = wc_memo_new(2, 16); /* pool: 2 x 32 ids */
	struct wc_memo_stats st;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK(wc_memo_stack_put(m, 1, big, 40, 1));  /* 40 of 64 ids */
	CHECK(!wc_memo_stack_put(m, 2, big, 40, 1)); /* pool full */
	CHECK(wc_memo_stack_get(m, 2, out, 40, &named) == -1);
	CHECK(wc_memo_stack_put(m, 3, big, 1, 1));  /* second stack */
	CHECK(!wc_memo_stack_put(m, 4, big, 1, 1)); /* stacks full */
	CHECK(wc_memo_stack_get(m, 1, out, 40, &named) == 40);
	CHECK(wc_memo_stack_get(m, 3, out, 40, &named) == 1);
	wc_memo_get_stats(m, &st);
	CHECK(st.stacks_full == 2);
	wc_memo_free(m);
}

static void test_frames_keyed(void)
{
	struct wc_memo *m = wc_memo_new(4, 64);
	uint32_t id = 0;
	bool named = false;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK(!wc_memo_frame_get(m, 100, 0x401000, false, &id, &named));
	CHECK(wc_memo_frame_put(m, 100, 0x401000, false, 7, true));
	CHECK(wc_memo_frame_put(m, 100, 0x401000, true, 8, false));
	CHECK(wc_memo_frame_put(m, 101, 0x401000, false, 9, false));
	CHECK(wc_memo_frame_get(m, 100, 0x401000, false, &id, &named));
	CHECK(id == 7 && named);
	CHECK(wc_memo_frame_get(m, 100, 0x401000, true, &id, &named));
	CHECK(id == 8 && !named);
	CHECK(wc_memo_frame_get(m, 101, 0x401000, false, &id, &named));
	CHECK(id == 9 && !named);
	CHECK(!wc_memo_frame_get(m, 102, 0x401000, false, &id, &named));
	CHECK(!wc_memo_frame_get(m, 100, 0x401001, false, &id, &named));
	/* the ids of a fold have their top bit as a flag: kept whole */
	CHECK(wc_memo_frame_put(m, 5, 0x10, false, 0x80000005u, true));
	CHECK(wc_memo_frame_get(m, 5, 0x10, false, &id, &named));
	CHECK(id == 0x80000005u && named);
	/* address 0 is never a frame the memo holds */
	CHECK(!wc_memo_frame_put(m, 5, 0, false, 1, true));
	CHECK(!wc_memo_frame_get(m, 5, 0, false, &id, &named));
	wc_memo_free(m);
}

/* Places are their own keys beside the frames', in the same table. */
static void test_places(void)
{
	struct wc_memo *m = wc_memo_new(4, 64);
	struct wc_memo_stats st;
	uint32_t id = 0;
	bool named = false;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK(!wc_memo_place_get(m, 3, 0x1000, &id, &named));
	CHECK(wc_memo_place_put(m, 3, 0x1000, 11, true));
	/* offset 0 is a place, unlike address 0 */
	CHECK(wc_memo_place_put(m, 3, 0, 12, false));
	CHECK(wc_memo_frame_put(m, 3, 0x1001, false, 13, false));
	CHECK(wc_memo_place_get(m, 3, 0x1000, &id, &named));
	CHECK(id == 11 && named);
	wc_memo_get_stats(m, &st);
	CHECK(st.place_hits == 1 && st.frame_misses == 0);
	CHECK(wc_memo_place_get(m, 3, 0, &id, &named));
	CHECK(id == 12 && !named);
	CHECK(!wc_memo_place_get(m, 4, 0x1000, &id, &named));
	/* pid 3 is not module 3: a place is stored at offset + 1, here
	 * beside the frame at 0x1001 */
	CHECK(!wc_memo_frame_get(m, 3, 0x1000, false, &id, &named));
	CHECK(wc_memo_frame_get(m, 3, 0x1001, false, &id, &named));
	CHECK(id == 13);
	wc_memo_reset(m);
	CHECK(!wc_memo_place_get(m, 3, 0x1000, &id, &named));
	wc_memo_free(m);
}

static void test_frame_bounds(void)
{
	struct wc_memo *m = wc_memo_new(1, 100);
	struct wc_memo_stats st;
	uint32_t a, id;
	bool named;

	CHECK(m != NULL);
	if (!m)
		return;
	for (a = 1; a <= 100; a++)
		CHECK(wc_memo_frame_put(m, 1, a * 16, true, a, false));
	/* one held is overwritten in place */
	CHECK(wc_memo_frame_put(m, 1, 16, true, 1000, true));
	for (a = 2; a <= 100; a++) {
		CHECK(wc_memo_frame_get(m, 1, a * 16, true, &id, &named));
		CHECK(id == a);
	}
	CHECK(wc_memo_frame_get(m, 1, 16, true, &id, &named) && id == 1000);
	wc_memo_get_stats(m, &st);
	CHECK(st.frame_clears == 0);
	/* a new one past the bound empties the table first */
	CHECK(wc_memo_frame_put(m, 2, 101 * 16, true, 101, false));
	CHECK(wc_memo_frame_get(m, 2, 101 * 16, true, &id, &named));
	CHECK(id == 101);
	CHECK(!wc_memo_frame_get(m, 1, 16, true, &id, &named));
	CHECK(!wc_memo_frame_get(m, 1, 50 * 16, true, &id, &named));
	wc_memo_get_stats(m, &st);
	CHECK(st.frame_clears == 1);
	for (a = 1; a < 100; a++)
		CHECK(wc_memo_frame_put(m, 3, a * 16, false, a, false));
	wc_memo_get_stats(m, &st);
	CHECK(st.frame_clears == 1);
	CHECK(wc_memo_frame_put(m, 3, 100 * 16, false, 100, false));
	CHECK(wc_memo_frame_put(m, 3, 101 * 16, false, 101, false));
	wc_memo_get_stats(m, &st);
	CHECK(st.frame_clears == 2);
	wc_memo_free(m);
}

static void test_reset_reuses(void)
{
	struct wc_memo *m = wc_memo_new(1, 1);
	uint32_t out[2], named, id;
	bool fnamed;
	int round;

	CHECK(m != NULL);
	if (!m)
		return;
	for (round = 0; round < 1000; round++) {
		uint32_t v = (uint32_t)round;

		wc_memo_reset(m);
		CHECK(wc_memo_stack_get(m, 7, out, 2, &named) == -1);
		CHECK(!wc_memo_frame_get(m, 3, 0x1000, false, &id, &fnamed));
		CHECK(wc_memo_stack_put(m, 7, &v, 1, 0));
		CHECK(wc_memo_frame_put(m, 3, 0x1000, false, v, false));
		CHECK(wc_memo_stack_get(m, 7, out, 2, &named) == 1);
		CHECK(out[0] == v);
		CHECK(wc_memo_frame_get(m, 3, 0x1000, false, &id, &fnamed));
		CHECK(id == v);
	}
	wc_memo_free(m);
}

static void test_bad_sizes(void)
{
	CHECK(wc_memo_new(0, 16) == NULL);
	CHECK(wc_memo_new(16, 0) == NULL);
	CHECK(wc_memo_new(1u << 25, 16) == NULL);
}

int main(void)
{
	check_prog = "test_memo";
	RUN(test_stack_put_get);
	RUN(test_stack_bounds);
	RUN(test_frames_keyed);
	RUN(test_places);
	RUN(test_frame_bounds);
	RUN(test_reset_reuses);
	RUN(test_bad_sizes);
	return check_done();
}
