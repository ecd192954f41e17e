/*
 * test_format.c - the folded format: markers both ways, a frame's safe
 * text, the one line parser (what every reader accepts and refuses) and
 * the value's text.
 */
#include <string.h>

#include "check.h"
#include "format/wc_format.h"

static void test_markers(void)
{
	int k;

	for (k = 0; k < WC_FOLD_NKINDS; k++)
		CHECK(wc_fold_marker_kind(wc_fold_marker(k)) == k);
	CHECK(strcmp(wc_fold_marker(WC_FOLD_BLOCKED), "[off-cpu io]") == 0);
	CHECK(wc_fold_marker(WC_FOLD_NKINDS) == NULL);
	CHECK(wc_fold_marker_kind("[on-cpu] ") == -1);
	CHECK(wc_fold_marker_kind("main") == -1);
	CHECK(wc_fold_is_offcpu("[off-cpu futex]"));
	CHECK(!wc_fold_is_offcpu("[on-cpu]"));
}

static int parse(const char *line, struct wc_fold_line *l)
{
	return wc_fold_parse(line, strlen(line), l);
}

static void test_parse(void)
{
	struct wc_fold_line l;

	CHECK(parse("g;[on-cpu];main 42\n", &l) == 1);
	CHECK(l.len == 15 && memcmp(l.stack, "g;[on-cpu];main", 15) == 0);
	CHECK(l.value == 42);
	CHECK(parse("g;a b  7\r\n", &l) == 1 && l.len == 5 && l.value == 7);
	CHECK(parse("g 18446744073709551615", &l) == 1 &&
	      l.value == UINT64_MAX);
	CHECK(parse("", &l) == 0 && parse("\r\n", &l) == 0);
	CHECK(parse("g 18446744073709551616", &l) == -1);
	CHECK(parse("g;main", &l) == -1);
	CHECK(parse("g;main ", &l) == -1);
	CHECK(parse("g;main 4x", &l) == -1);
	CHECK(parse("g;main -4", &l) == -1);
	CHECK(parse(" 4", &l) == -1 && parse("   4", &l) == -1);
	CHECK(wc_fold_parse("g\0x 4", 5, &l) == -1);
}

static void test_frame_clean(void)
{
	char out[16];
	bool cut;
	size_t n;

	n = wc_fold_frame_clean("a;b", 3, out, sizeof(out), &cut);
	CHECK(n == 3 && strcmp(out, "a:b") == 0 && !cut);
	n = wc_fold_frame_clean("  ", 2, out, sizeof(out), &cut);
	CHECK(n == strlen(WC_FOLD_EMPTY) && strcmp(out, WC_FOLD_EMPTY) == 0);
	n = wc_fold_frame_clean("x\xff\x01y", 4, out, sizeof(out), &cut);
	CHECK(n == 4 && strcmp(out, "x??y") == 0);
	n = wc_fold_frame_clean("0123456789abcdefghij", 20, out, sizeof(out),
				&cut);
	CHECK(n == 15 && cut);
}

static void test_value_text(void)
{
	char buf[24];

	CHECK(strcmp(wc_fold_value_text(0, buf), " 0\n") == 0);
	CHECK(strcmp(wc_fold_value_text(UINT64_MAX, buf),
		     " 18446744073709551615\n") == 0);
}

int main(void)
{
	check_prog = "test_format";
	RUN(test_markers);
	RUN(test_parse);
	RUN(test_frame_clean);
	RUN(test_value_text);
	return check_done();
}
