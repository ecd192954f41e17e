/*
 * test_folded.c - folding one window's stacks: merging, exact totals by
 * largest remainder, scale-down and the made-up lines, top-N with [other],
 * safe frame text, ordering that does not depend on insertion order, the
 * bounds, and the cost of emitting 10k stacks.  Every file written is also
 * checked line by line and its values summed against the totals.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "stacks/wc_folded.h"

/* ---- a sink for the file and its checks ---- */

struct sink {
	char *buf;
	size_t len, cap;
	int fail_after; /* calls before out fails; -1 = never */
	int calls;
};

static int sink_out(void *ctx, const char *buf, size_t len)
{
	struct sink *s = ctx;

	if (s->fail_after >= 0 && s->calls >= s->fail_after)
		return -1;
	s->calls++;
	if (s->len + len + 1 > s->cap) {
		s->cap = (s->len + len + 1) * 2;
		s->buf = realloc(s->buf, s->cap);
	}
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
	s->buf[s->len] = '\0';
	return 0;
}

/* Emit into a fresh string (caller frees); NULL if emit failed. */
static char *emit(struct wc_fold *f, size_t top_n)
{
	struct sink s = {.fail_after = -1};
	ssize_t n;

	sink_out(&s, "", 0);
	n = wc_fold_emit(f, top_n, sink_out, &s);
	if (n < 0 || (size_t)n != s.len) {
		free(s.buf);
		return NULL;
	}
	return s.buf;
}

/*
 * Sum a file's values, checking each line: text, one space, digits, '\n',
 * no empty frame, value > 0, and values never increasing down the file.
 * Returns UINT64_MAX on a malformed file.
 */
static uint64_t file_sum(const char *file, size_t *nlines)
{
	uint64_t sum = 0, prev = UINT64_MAX;
	const char *p = file;

	*nlines = 0;
	while (*p) {
		const char *nl = strchr(p, '\n'), *sp;
		uint64_t v = 0;

		if (!nl)
			return UINT64_MAX;
		for (sp = nl; sp > p && sp[-1] != ' '; sp--)
			;
		if (sp == p || sp == nl || strstr(p, ";;") == p)
			return UINT64_MAX;
		for (const char *d = sp; d < nl; d++) {
			if (*d < '0' || *d > '9')
				return UINT64_MAX;
			v = v * 10 + (uint64_t)(*d - '0');
		}
		if (v == 0 || v > prev)
			return UINT64_MAX;
		prev = v;
		sum += v;
		(*nlines)++;
		p = nl + 1;
	}
	return sum;
}

/* The value on the line whose text (without the value) is text. */
static int64_t line_value(const char *file, const char *text)
{
	size_t n = strlen(text);
	const char *p = file;

	while (p && *p) {
		if (strncmp(p, text, n) == 0 && p[n] == ' ')
			return strtoll(p + n + 1, NULL, 10);
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return -1;
}

#define ADD(f, g, k, w, ...)                                                   \
	wc_fold_add(f, g, k, (const char *const[]){__VA_ARGS__},               \
		    sizeof((const char *const[]){__VA_ARGS__}) /               \
			    sizeof(char *),                                    \
		    w)

static void test_merge(void)
{
	struct wc_fold *f = wc_fold_new(100, 1 << 16);
	struct wc_fold_stats st;
	char *out;
	size_t n;

	CHECK(f != NULL);
	CHECK(ADD(f, "app", WC_FOLD_ONCPU, 2, "main", "work") == 0);
	CHECK(ADD(f, "app", WC_FOLD_ONCPU, 3, "main", "work") == 0);
	CHECK(ADD(f, "app", WC_FOLD_ONCPU, 5, "main", "work") == 0);
	/* Same frames, other kind or group or depth: not the same stack. */
	CHECK(ADD(f, "app", WC_FOLD_SLEEP, 4000, "main", "work") == 0);
	CHECK(ADD(f, "db", WC_FOLD_ONCPU, 1, "main", "work") == 0);
	CHECK(ADD(f, "app", WC_FOLD_ONCPU, 7, "main") == 0);
	CHECK(ADD(f, "app", WC_FOLD_ONCPU, 0, "main", "zero") == 0);
	wc_fold_get_stats(f, &st);
	CHECK(st.stacks == 4 && st.merged == 2 && st.dropped_full == 0);
	out = emit(f, 0);
	CHECK(out != NULL);
	CHECK(line_value(out, "app;[on-cpu];main;work") == 10);
	CHECK(line_value(out, "app;[on-cpu];main") == 7);
	CHECK(line_value(out, "app;[off-cpu sleep];main;work") == 4);
	CHECK(line_value(out, "db;[on-cpu];main;work") == 1);
	CHECK(file_sum(out, &n) == 22 && n == 4);
	CHECK(strstr(out, "zero") == NULL);
	free(out);
	wc_fold_free(f);
}

/* 3 equal stacks sharing 10: 4/3/3, and the 4 goes the same way always. */
static void test_exact_rounding(void)
{
	struct wc_fold *f = wc_fold_new(100, 1 << 16);
	int64_t a, b, c;
	char *out;
	size_t n;

	ADD(f, "g", WC_FOLD_ONCPU, 1, "a");
	ADD(f, "g", WC_FOLD_ONCPU, 1, "b");
	ADD(f, "g", WC_FOLD_ONCPU, 1, "c");
	CHECK(wc_fold_set_total(f, "g", WC_FOLD_ONCPU, 10) == 0);
	out = emit(f, 0);
	a = line_value(out, "g;[on-cpu];a");
	b = line_value(out, "g;[on-cpu];b");
	c = line_value(out, "g;[on-cpu];c");
	CHECK(a + b + c == 10);
	CHECK(a == 4 && b == 3 && c == 3);
	CHECK(file_sum(out, &n) == 10 && n == 3);
	free(out);

	/* Off-CPU without a total: 3 × 600 ns is 1.8 us, shown as 1 + 1 + 0,
	 * where per-stack division (600 / 1000) would have shown nothing. */
	wc_fold_reset(f);
	ADD(f, "g", WC_FOLD_RUNQ, 600, "x");
	ADD(f, "g", WC_FOLD_RUNQ, 600, "y");
	ADD(f, "g", WC_FOLD_RUNQ, 600, "z");
	out = emit(f, 0);
	CHECK(file_sum(out, &n) == 2 && n == 2);
	CHECK(line_value(out, "g;[off-cpu runqueue];x") == 1);
	CHECK(line_value(out, "g;[off-cpu runqueue];y") == 1);
	free(out);

	/* Uneven shares: 1:2:97 of 50 is 0.5, 1, 48.5. */
	wc_fold_reset(f);
	ADD(f, "g", WC_FOLD_ONCPU, 1, "p");
	ADD(f, "g", WC_FOLD_ONCPU, 2, "q");
	ADD(f, "g", WC_FOLD_ONCPU, 97, "r");
	wc_fold_set_total(f, "g", WC_FOLD_ONCPU, 50);
	out = emit(f, 0);
	CHECK(file_sum(out, &n) == 50);
	CHECK(line_value(out, "g;[on-cpu];q") == 1);
	CHECK(line_value(out, "g;[on-cpu];p") +
		      line_value(out, "g;[on-cpu];r") ==
	      49);
	free(out);
	wc_fold_free(f);
}

/* Off-CPU weights over the total: a wait that began in the last window. */
static void test_scale_down(void)
{
	struct wc_fold *f = wc_fold_new(100, 1 << 16);
	struct wc_fold_stats st;
	char *out;
	size_t n;

	ADD(f, "g", WC_FOLD_BLOCKED, 6000, "read_[k]");
	ADD(f, "g", WC_FOLD_BLOCKED, 4000, "write_[k]");
	wc_fold_set_total(f, "g", WC_FOLD_BLOCKED, 5);
	/* Exactly equal is not a scale-down. */
	ADD(f, "h", WC_FOLD_SLEEP, 3000, "poll");
	wc_fold_set_total(f, "h", WC_FOLD_SLEEP, 3);
	out = emit(f, 0);
	CHECK(line_value(out, "g;[off-cpu io];read_[k]") == 3);
	CHECK(line_value(out, "g;[off-cpu io];write_[k]") == 2);
	CHECK(line_value(out, "h;[off-cpu sleep];poll") == 3);
	CHECK(file_sum(out, &n) == 8 && n == 3);
	wc_fold_get_stats(f, &st);
	CHECK(st.scaled_down == 1 && st.unattributed_us == 0);
	CHECK(st.total_us == 8 && st.lines == 3);
	free(out);
	wc_fold_free(f);
}

static void test_below_threshold(void)
{
	struct wc_fold *f = wc_fold_new(100, 1 << 16);
	struct wc_fold_stats st;
	char *out;
	size_t n;

	ADD(f, "g", WC_FOLD_SLEEP, 2000, "nanosleep");
	ADD(f, "g", WC_FOLD_SLEEP, 1000, "futex");
	wc_fold_set_total(f, "g", WC_FOLD_SLEEP, 10);
	/* A total with no stacks at all: all of it is below threshold. */
	wc_fold_set_total(f, "g", WC_FOLD_RUNQ, 4);
	out = emit(f, 0);
	CHECK(line_value(out, "g;[off-cpu sleep];nanosleep") == 2);
	CHECK(line_value(out, "g;[off-cpu sleep];futex") == 1);
	CHECK(line_value(out, "g;[off-cpu sleep];[waits below threshold]") ==
	      7);
	CHECK(line_value(out, "g;[off-cpu runqueue];[waits below threshold]") ==
	      4);
	CHECK(file_sum(out, &n) == 14 && n == 4);
	wc_fold_get_stats(f, &st);
	CHECK(st.unattributed_us == 11 && st.scaled_down == 0);
	free(out);

	CHECK(wc_fold_set_below_label(f, "[waits < 1 ms]") == 0);
	CHECK(wc_fold_set_below_label(f, NULL) == -1);
	CHECK(wc_fold_set_below_label(
		      f, "[waits below a threshold whose "
			 "name is far too long to be a label]") == -1);
	out = emit(f, 0);
	CHECK(line_value(out, "g;[off-cpu sleep];[waits < 1 ms]") == 7);
	free(out);
	wc_fold_free(f);
}

static void test_unsampled(void)
{
	struct wc_fold *f = wc_fold_new(100, 1 << 16);
	char *out;
	size_t n;

	wc_fold_set_total(f, "idle_app", WC_FOLD_ONCPU, 25);
	/* A total of 0 writes nothing; setting again replaces. */
	wc_fold_set_total(f, "quiet", WC_FOLD_ONCPU, 0);
	wc_fold_set_total(f, "twice", WC_FOLD_ONCPU, 99);
	wc_fold_set_total(f, "twice", WC_FOLD_ONCPU, 9);
	out = emit(f, 0);
	CHECK(line_value(out, "idle_app;[on-cpu];[unsampled]") == 25);
	CHECK(line_value(out, "twice;[on-cpu];[unsampled]") == 9);
	CHECK(strstr(out, "quiet") == NULL);
	CHECK(file_sum(out, &n) == 34 && n == 2);
	free(out);
	wc_fold_free(f);
}

/* Top 3 across the file; each (group, kind) keeps its own [other]. */
static void test_top_n_other(void)
{
	struct wc_fold *f = wc_fold_new(100, 1 << 16);
	struct wc_fold_stats st;
	char name[16], *out;
	size_t n;
	int i;

	for (i = 1; i <= 5; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ADD(f, "a", WC_FOLD_ONCPU, (uint64_t)(100 * i), name);
		ADD(f, "a", WC_FOLD_SLEEP, (uint64_t)(1000 * i), name);
		ADD(f, "b", WC_FOLD_ONCPU, (uint64_t)(10 * i), name);
	}
	wc_fold_set_total(f, "a", WC_FOLD_SLEEP, 30);
	out = emit(f, 3);
	/* a;on-cpu is 100..500, the three largest in the file. */
	CHECK(line_value(out, "a;[on-cpu];f5") == 500);
	CHECK(line_value(out, "a;[on-cpu];f4") == 400);
	CHECK(line_value(out, "a;[on-cpu];f3") == 300);
	CHECK(line_value(out, "a;[on-cpu];[other]") == 300);
	CHECK(line_value(out, "b;[on-cpu];[other]") == 150);
	/* 15 us of stacks, 15 below threshold, all the stacks in [other] */
	CHECK(line_value(out, "a;[off-cpu sleep];[other]") == 15);
	CHECK(line_value(out, "a;[off-cpu sleep];[waits below threshold]") ==
	      15);
	CHECK(file_sum(out, &n) == 1500 + 150 + 30 && n == 7);
	wc_fold_get_stats(f, &st);
	CHECK(st.other_us == 300 + 150 + 15);
	free(out);

	/* top_n 0 keeps every stack. */
	out = emit(f, 0);
	CHECK(file_sum(out, &n) == 1680 && n == 16);
	CHECK(strstr(out, "[other]") == NULL);
	free(out);
	wc_fold_free(f);
}

static void test_escaping(void)
{
	struct wc_fold *f = wc_fold_new(100, 1 << 16);
	const char *frames[] = {"  a;b  ", "x\ny\r", "\tz", "", NULL,
				"ns::f(int, char)", "vfs_read_[k]", "   ",
				"caf\xc3\xa9\x7f",
				/* not UTF-8: a stray continuation byte, an
				 * overlong '/', a surrogate, a cut sequence */
				"\x80"
				"a\xc0\xaf\xed\xa0\x80\xe2\x82"};
	char *out;
	size_t n;

	CHECK(wc_fold_add(f, "we;ird\n", WC_FOLD_ONCPU, frames, 10, 5) == 0);
	out = emit(f, 0);
	CHECK_STR_HAS(out, "we:ird?;[on-cpu];a:b;x?y?;?z;[empty];[empty];"
			   "ns::f(int, char);vfs_read_[k];[empty];caf\xc3\xa9?;"
			   "?a??????? 5\n");
	CHECK(file_sum(out, &n) == 5 && n == 1);
	free(out);
	/* Escaped text is the identity: "a;b" and "a:b" are one frame. */
	ADD(f, "we:ird?", WC_FOLD_ONCPU, 1, "a:b", "x?y?", "?z", "[empty]",
	    "[empty]", "ns::f(int, char)", "vfs_read_[k]", "[empty]",
	    "caf\xc3\xa9?", "?a???????");
	out = emit(f, 0);
	CHECK(file_sum(out, &n) == 6 && n == 1);
	free(out);
	CHECK(wc_fold_add(f, "g", WC_FOLD_ONCPU, NULL, 0, 3) == 0);
	CHECK(wc_fold_add(f, "g", WC_FOLD_ONCPU, NULL, 2, 3) == -1);
	CHECK(wc_fold_add(f, NULL, WC_FOLD_ONCPU, frames, 1, 3) == -1);
	CHECK(wc_fold_add(f, "g", WC_FOLD_NKINDS, frames, 1, 3) == -1);
	CHECK(wc_fold_set_total(f, "g", (enum wc_fold_kind) - 1, 3) == -1);
	out = emit(f, 0);
	CHECK(line_value(out, "g;[on-cpu]") == 3);
	free(out);
	wc_fold_free(f);
}

/* Frames and stacks cut at their bounds, a cut UTF-8 sequence backed off. */
static void test_truncation(void)
{
	struct wc_fold *f = wc_fold_new(100, 1 << 20);
	static char big[WC_FOLD_MAX_FRAME + 100];
	static const char *deep[WC_FOLD_MAX_DEPTH + 5];
	struct wc_fold_stats st;
	char *out, *line;
	size_t i, n;

	memset(big, 'x', sizeof(big) - 1);
	/* a two-byte character straddling the cut */
	big[WC_FOLD_MAX_FRAME - 1] = (char)0xc3;
	big[WC_FOLD_MAX_FRAME] = (char)0xa9;
	ADD(f, "g", WC_FOLD_ONCPU, 1, big);
	for (i = 0; i < WC_FOLD_MAX_DEPTH + 5; i++)
		deep[i] = i < WC_FOLD_MAX_DEPTH ? "d" : "leaf";
	CHECK(wc_fold_add(f, "h", WC_FOLD_ONCPU, deep, WC_FOLD_MAX_DEPTH + 5,
			  2) == 0);
	wc_fold_get_stats(f, &st);
	CHECK(st.truncated == 2);
	out = emit(f, 0);
	CHECK(file_sum(out, &n) == 3 && n == 2);
	CHECK(strstr(out, "leaf") == NULL);
	line = strstr(out, "g;[on-cpu];x");
	CHECK(line &&
	      strchr(line, ' ') - line == (ptrdiff_t)(strlen("g;[on-cpu];") +
						      WC_FOLD_MAX_FRAME - 1));
	free(out);
	wc_fold_free(f);
}

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

struct rec {
	char group[8];
	int kind;
	char frames[4][8];
	int nframes;
	uint64_t weight;
};

/* Length of a line's text, up to the space before its value. */
static size_t text_len(const char *line)
{
	const char *nl = strchr(line, '\n'), *sp = nl;

	while (sp > line && *sp != ' ')
		sp--;
	return (size_t)(sp - line);
}

/* The same stacks in two orders, with ties everywhere: one file. */
static void test_order_determinism(void)
{
	struct rec r[300];
	struct wc_fold *f1 = wc_fold_new(1000, 1 << 16);
	struct wc_fold *f2 = wc_fold_new(1000, 1 << 16);
	char *o1, *o2, *p;
	size_t i, j, n;

	rng_state = 7;
	for (i = 0; i < 300; i++) {
		snprintf(r[i].group, 8, "g%d", (int)(rng() % 3));
		r[i].kind = (int)(rng() % WC_FOLD_NKINDS);
		r[i].nframes = 1 + (int)(rng() % 4);
		for (j = 0; j < 4; j++)
			snprintf(r[i].frames[j], 8, "f%d", (int)(rng() % 4));
		r[i].weight = r[i].kind ? 1000 * (1 + rng() % 3) : 1;
	}
	for (i = 0; i < 600; i++) {
		struct rec *a = &r[i % 300], *b = &r[299 - i % 300];
		const char *fa[4], *fb[4];

		for (j = 0; j < 4; j++) {
			fa[j] = a->frames[j];
			fb[j] = b->frames[j];
		}
		wc_fold_add(f1, a->group, a->kind, fa, a->nframes, a->weight);
		wc_fold_add(f2, b->group, b->kind, fb, b->nframes, b->weight);
	}
	for (i = 0; i < 3; i++) {
		char g[8];

		snprintf(g, 8, "g%d", (int)i);
		wc_fold_set_total(f1, g, WC_FOLD_ONCPU, 777);
		wc_fold_set_total(f2, g, WC_FOLD_ONCPU, 777);
	}
	o1 = emit(f1, 40);
	o2 = emit(f2, 40);
	CHECK(o1 && o2 && strcmp(o1, o2) == 0);
	CHECK(file_sum(o1, &n) != UINT64_MAX && n > 40);
	/* Emitting again gives the same file. */
	free(o2);
	o2 = emit(f1, 40);
	CHECK(o2 && strcmp(o1, o2) == 0);
	/* Equal values are in text order. */
	for (p = o1; *p && *(strchr(p, '\n') + 1);) {
		char *q = strchr(p, '\n') + 1;
		size_t lp = text_len(p), lq = text_len(q);

		if (strtoull(p + lp, NULL, 10) == strtoull(q + lq, NULL, 10)) {
			int c = memcmp(p, q, lp < lq ? lp : lq);

			CHECK(c < 0 || (c == 0 && lp < lq));
		}
		p = q;
	}
	free(o1);
	free(o2);
	wc_fold_free(f1);
	wc_fold_free(f2);
}

/* What does not fit is counted and its time kept, in [other]. */
static void test_bounds(void)
{
	struct wc_fold *f = wc_fold_new(3, 4096);
	struct wc_fold_stats st;
	static char longf[1500];
	char *out;
	size_t n;

	ADD(f, "g", WC_FOLD_ONCPU, 10, "a");
	ADD(f, "g", WC_FOLD_ONCPU, 20, "b");
	ADD(f, "g", WC_FOLD_ONCPU, 30, "c");
	ADD(f, "g", WC_FOLD_ONCPU, 40, "d");	 /* no room */
	ADD(f, "g", WC_FOLD_ONCPU, 50, "a");	 /* merges, full or not */
	ADD(f, "g", WC_FOLD_ONCPU, 5, "a", "b"); /* no room */
	wc_fold_get_stats(f, &st);
	CHECK(st.stacks == 3 && st.dropped_full == 2 && st.merged == 1);
	out = emit(f, 0);
	CHECK(line_value(out, "g;[on-cpu];a") == 60);
	CHECK(line_value(out, "g;[on-cpu];[other]") == 45);
	CHECK(file_sum(out, &n) == 155 && n == 4);
	free(out);
	wc_fold_free(f);

	/* Text bound: frames of 1.5 KB in 8 KiB. */
	f = wc_fold_new(100, 8192);
	memset(longf, 'L', sizeof(longf) - 1);
	for (n = 0; n < 6; n++) {
		longf[0] = (char)('A' + n);
		ADD(f, "g", WC_FOLD_SLEEP, 1000 * (n + 1), longf);
	}
	wc_fold_set_total(f, "g", WC_FOLD_SLEEP, 100);
	wc_fold_get_stats(f, &st);
	CHECK(st.stacks >= 1 && st.stacks < 6 && st.dropped_full >= 1);
	CHECK(st.stacks + st.dropped_full == 6);
	out = emit(f, 0);
	CHECK(file_sum(out, &n) == 100);
	CHECK(line_value(out, "g;[off-cpu sleep];[other]") > 0);
	free(out);
	wc_fold_free(f);

	/* Group bound: past max_stacks cells, groups fold into "other". */
	f = wc_fold_new(2, 4096);
	ADD(f, "g1", WC_FOLD_ONCPU, 1, "x");
	ADD(f, "g2", WC_FOLD_ONCPU, 2, "x");
	ADD(f, "g3", WC_FOLD_ONCPU, 4, "x");
	wc_fold_set_total(f, "g4", WC_FOLD_SLEEP, 8);
	wc_fold_set_total(f, "g5", WC_FOLD_SLEEP, 16);
	wc_fold_get_stats(f, &st);
	CHECK(st.groups_redirected == 3);
	out = emit(f, 0);
	CHECK(line_value(out,
			 "other;[off-cpu sleep];[waits below threshold]") ==
	      24);
	CHECK(file_sum(out, &n) == 31);
	free(out);
	wc_fold_free(f);

	CHECK(wc_fold_new(0, 4096) == NULL);
	CHECK(wc_fold_new(10, 100) == NULL);
	CHECK(wc_fold_new((1u << 24) + 1, 4096) == NULL);
}

/* Frames given by id make the same file as frames given by text; a cut
 * frame is counted at every add naming it; a frame without room sends its
 * stack's time to [other]. */
static void test_ids(void)
{
	struct wc_fold *a = wc_fold_new(100, 1 << 16);
	struct wc_fold *b = wc_fold_new(100, 1 << 16);
	static char big[WC_FOLD_MAX_FRAME + 10];
	struct wc_fold_stats st;
	uint32_t ids[3], cut;
	char *oa, *ob;
	size_t n;

	ADD(a, "g", WC_FOLD_SLEEP, 3000, "main", "x;y", "leaf_[k]");
	ADD(a, "g", WC_FOLD_SLEEP, 5000, "main", "leaf_[k]");
	ADD(a, "g", WC_FOLD_SLEEP, 2000, "main", "x;y", "leaf_[k]");
	ids[0] = wc_fold_frame(b, "main");
	ids[1] = wc_fold_frame(b, "x;y");
	ids[2] = wc_fold_frame(b, "leaf_[k]");
	CHECK(wc_fold_frame(b, " main ") == ids[0]); /* made safe the same */
	CHECK(wc_fold_add_ids(b, "g", WC_FOLD_SLEEP, ids, 3, 3000) == 0);
	ids[1] = ids[2];
	CHECK(wc_fold_add_ids(b, "g", WC_FOLD_SLEEP, ids, 2, 5000) == 0);
	ids[1] = wc_fold_frame(b, "x;y");
	CHECK(wc_fold_add_ids(b, "g", WC_FOLD_SLEEP, ids, 3, 2000) == 0);
	oa = emit(a, 0);
	ob = emit(b, 0);
	CHECK(oa && ob && strcmp(oa, ob) == 0);
	CHECK(line_value(ob, "g;[off-cpu sleep];main;x:y;leaf_[k]") == 5);
	free(oa);
	free(ob);

	memset(big, 'c', sizeof(big) - 1);
	cut = wc_fold_frame(b, big);
	CHECK(cut != WC_FOLD_NO_FRAME && (cut & WC_FOLD_CUT));
	CHECK(wc_fold_add_ids(b, "h", WC_FOLD_ONCPU, &cut, 1, 1) == 0);
	CHECK(wc_fold_add_ids(b, "h", WC_FOLD_ONCPU, &cut, 1, 1) == 0);
	wc_fold_get_stats(b, &st);
	CHECK(st.truncated == 2 && st.merged == 2);
	CHECK(wc_fold_add_ids(b, "h", WC_FOLD_NKINDS, ids, 1, 1) == -1);
	CHECK(wc_fold_add_ids(b, "h", WC_FOLD_ONCPU, NULL, 1, 1) == -1);
	wc_fold_free(a);
	wc_fold_free(b);

	/* a full table of stacks interns no new frame */
	a = wc_fold_new(1, 4096);
	ADD(a, "g", WC_FOLD_ONCPU, 1, "only");
	ids[0] = wc_fold_frame(a, "new");
	CHECK(ids[0] == WC_FOLD_NO_FRAME);
	CHECK(wc_fold_add_ids(a, "g", WC_FOLD_ONCPU, ids, 1, 4) == 0);
	wc_fold_get_stats(a, &st);
	CHECK(st.dropped_full == 1);
	oa = emit(a, 0);
	CHECK(line_value(oa, "g;[on-cpu];[other]") == 4);
	CHECK(file_sum(oa, &n) == 5 && n == 2);
	free(oa);
	wc_fold_free(a);
}

static void test_empty_and_errors(void)
{
	struct wc_fold *f = wc_fold_new(10, 4096);
	struct sink s = {.fail_after = -1};
	struct wc_fold_stats st;
	int i;

	CHECK(wc_fold_emit(f, 0, sink_out, &s) == 0 && s.calls == 0);
	wc_fold_get_stats(f, &st);
	CHECK(st.lines == 0 && st.stacks == 0);
	/* A failing writer fails the emit. */
	for (i = 0; i < 10; i++)
		ADD(f, "g", WC_FOLD_ONCPU, 1, "frame");
	s.fail_after = 0;
	CHECK(wc_fold_emit(f, 0, sink_out, &s) == -1);
	CHECK(wc_fold_emit(f, 0, NULL, NULL) == -1);
	CHECK(wc_fold_emit(NULL, 0, sink_out, &s) == -1);
	/* Reset forgets everything. */
	wc_fold_reset(f);
	s.fail_after = -1;
	CHECK(wc_fold_emit(f, 0, sink_out, &s) == 0);
	wc_fold_free(f);
	free(s.buf);
	wc_fold_free(NULL);
}

/* Random windows: the file's sum is what the totals say, exactly. */
static void test_random_sums(void)
{
	int round;

	rng_state = 0xfeedULL;
	for (round = 0; round < 200; round++) {
		/* enough cells for every (group, kind): no redirects, whose
		 * mixing of groups the per-group sums here do not model */
		struct wc_fold *f =
			wc_fold_new(16 + rng() % 64, 4096 + rng() % 8192);
		uint64_t w[4][WC_FOLD_NKINDS] = {{0}}, want = 0;
		int64_t total[4][WC_FOLD_NKINDS];
		int i, g, k, nadd = (int)(rng() % 300);
		char *out;
		size_t n;

		memset(total, -1, sizeof(total));
		for (i = 0; i < nadd; i++) {
			char gn[8], fr[3][8];
			const char *fp[3] = {fr[0], fr[1], fr[2]};

			g = (int)(rng() % 4);
			k = (int)(rng() % WC_FOLD_NKINDS);
			snprintf(gn, 8, "g%d", g);
			for (int j = 0; j < 3; j++)
				snprintf(fr[j], 8, "f%d", (int)(rng() % 6));
			uint64_t wt = rng() % (k ? 5000000 : 50);
			wc_fold_add(f, gn, k, fp, 1 + rng() % 3, wt);
			w[g][k] += wt;
		}
		for (g = 0; g < 4; g++)
			for (k = 0; k < WC_FOLD_NKINDS; k++) {
				char gn[8];

				if (rng() % 3 == 0)
					continue;
				snprintf(gn, 8, "g%d", g);
				total[g][k] = (int64_t)(rng() % 100000);
				wc_fold_set_total(f, gn, k,
						  (uint64_t)total[g][k]);
			}
		for (g = 0; g < 4; g++)
			for (k = 0; k < WC_FOLD_NKINDS; k++) {
				if (total[g][k] >= 0)
					want += (uint64_t)total[g][k];
				else if (k == WC_FOLD_ONCPU)
					want += w[g][k];
				else
					want += (w[g][k] + 500) / 1000;
			}
		out = emit(f, rng() % 20);
		CHECK(out != NULL);
		if (out && file_sum(out, &n) != want) {
			printf("  round %d: sum %llu, want %llu\n", round,
			       (unsigned long long)file_sum(out, &n),
			       (unsigned long long)want);
			CHECK(0);
		}
		free(out);
		wc_fold_free(f);
	}
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* 10k distinct stacks, 20 deep, 50 groups: the cost of one window. */
static void test_10k_stacks(void)
{
	static const char *const words[] = {
		"main",
		"run",
		"event_loop",
		"dispatch",
		"handle",
		"parse",
		"read",
		"write",
		"poll",
		"epoll_wait",
		"malloc",
		"free",
		"memcpy",
		"hash",
		"lookup",
		"std::vector<int>::push_back(int const&)",
		"do_syscall_64_[k]",
		"schedule_[k]",
		"vfs_read_[k]",
		"futex_wait_[k]"};
	struct wc_fold *f = wc_fold_new(16384, 8 << 20);
	struct wc_fold_stats st;
	struct sink s = {.fail_after = -1};
	const char *fr[20];
	uint64_t want = 0;
	double t0, t_add, t_emit, t_emit_top;
	size_t i, j, n;
	char g[16];

	rng_state = 99;
	t0 = now_ms();
	for (i = 0; i < 10000; i++) {
		uint64_t wt = 1 + rng() % 1000;

		for (j = 5; j < 20; j++)
			fr[j] = words[(i * 31 + j * 7) % 20];
		snprintf(g, sizeof(g), "group%zu", i % 50);
		/* i's digits in frames 1..4 keep the stacks distinct */
		fr[0] = words[0];
		fr[1] = words[i % 7];
		fr[2] = words[(i / 7) % 20];
		fr[3] = words[(i / 140) % 20];
		fr[4] = words[(i / 2800) % 20];
		wc_fold_add(f, g, WC_FOLD_ONCPU, fr, 20, wt);
		want += wt;
	}
	t_add = now_ms() - t0;
	wc_fold_get_stats(f, &st);
	CHECK(st.dropped_full == 0);
	t0 = now_ms();
	CHECK(wc_fold_emit(f, 0, sink_out, &s) > 0);
	t_emit = now_ms() - t0;
	CHECK(file_sum(s.buf, &n) == want && n == st.stacks);
	s.len = 0;
	t0 = now_ms();
	CHECK(wc_fold_emit(f, 1000, sink_out, &s) > 0);
	t_emit_top = now_ms() - t0;
	CHECK(file_sum(s.buf, &n) == want);
	printf("# add 10k stacks (%llu distinct): %.1f ms\n",
	       (unsigned long long)st.stacks, t_add);
	printf("# emit 10k stacks: %.1f ms (all, %.0f KiB), %.1f ms (top 1000)\n",
	       t_emit, (double)wc_fold_emit(f, 0, sink_out, &s) / 1024,
	       t_emit_top);
	free(s.buf);
	wc_fold_free(f);
}

int main(void)
{
	check_prog = "test_folded";
	RUN(test_merge);
	RUN(test_exact_rounding);
	RUN(test_scale_down);
	RUN(test_below_threshold);
	RUN(test_unsampled);
	RUN(test_top_n_other);
	RUN(test_escaping);
	RUN(test_truncation);
	RUN(test_order_determinism);
	RUN(test_bounds);
	RUN(test_ids);
	RUN(test_empty_and_errors);
	RUN(test_random_sums);
	RUN(test_10k_stacks);
	return check_done();
}
