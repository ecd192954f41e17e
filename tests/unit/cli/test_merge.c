/*
 * test_merge.c - the reader behind `wallclock render` and `merge`: folded
 * lines summed per stack, bad lines counted and skipped whole (never cut
 * into pieces that parse), gzip read like plain text and a cut gzip
 * reported, the table's bound kept by summing into [other].
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "cli/wc_merge.h"

static int memfd_of(const void *p, size_t n)
{
	int fd = memfd_create("merge", MFD_CLOEXEC);

	if (fd < 0 || write(fd, p, n) != (ssize_t)n ||
	    lseek(fd, 0, SEEK_SET) != 0)
		abort();
	return fd;
}

static uint64_t value_of(const struct wc_merge *t, const char *stack)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(wc_merge_stack(t, &t->entries[i]), stack))
			return t->entries[i].value;
	return 0;
}

static void read_text(struct wc_merge *t, const char *text)
{
	CHECK(wc_merge_read_fd(t, memfd_of(text, strlen(text))) == 0);
}

static void test_sums_and_bad_lines(void)
{
	struct wc_merge t;

	CHECK(wc_merge_init(&t, 100, NULL) == 0);
	read_text(&t, "a;[on-cpu];f 10\n"
		      "a;[on-cpu];f 5\r\n"
		      "\n"
		      "b;[off-cpu sleep];with space 7\n"
		      "no value\n"
		      " 3\n"
		      "x -5\n"
		      "x 5 \n"
		      "y 18446744073709551616\n"
		      "z 18446744073709551615\n"
		      "z 1\n"
		      "last 4");
	CHECK(value_of(&t, "a;[on-cpu];f") == 15);
	CHECK(value_of(&t, "b;[off-cpu sleep];with space") == 7);
	CHECK(value_of(&t, "last") == 4);
	/* the second z would carry the sum past 64 bits */
	CHECK(value_of(&t, "z") == UINT64_MAX);
	CHECK(t.lines == 11 && t.bad == 6);
	CHECK(t.n == 4);
	wc_merge_free(&t);
}

/* A NUL inside a line, and a line over the bound: each one bad line; the
 * tail of the long one is not read as a line of its own. */
static void test_hostile_lines(void)
{
	size_t big = WC_MERGE_LINE_MAX + 100;
	char *text = malloc(big + 64), *p = text;
	struct wc_merge t;

	CHECK(wc_merge_init(&t, 100, NULL) == 0);
	memcpy(p, "ok 1\nnul\0here 2\n", 17);
	p += 17;
	memset(p, 'f', big);
	memcpy(p + big - 10, ";tail 777", 9);
	p += big - 1;
	p += sprintf(p, "\nok 2\n");
	CHECK(wc_merge_read_fd(&t, memfd_of(text, (size_t)(p - text))) == 0);
	CHECK(value_of(&t, "ok") == 3);
	CHECK(t.n == 1 && t.lines == 4 && t.bad == 2);
	free(text);
	wc_merge_free(&t);
}

static void test_group_filter(void)
{
	struct wc_merge t;

	CHECK(wc_merge_init(&t, 100, "web") == 0);
	read_text(&t, "web;[on-cpu];f 1\nwebber;[on-cpu];f 2\nweb 3\n"
		      "db;[on-cpu];web 4\n");
	CHECK(value_of(&t, "web;[on-cpu];f") == 1 && value_of(&t, "web") == 3);
	CHECK(t.n == 2);
	wc_merge_free(&t);
}

/* Beyond max stacks, each group's rest goes to one GROUP;[other] line. */
static void test_bound(void)
{
	struct wc_merge t;
	char line[64];
	int i;

	CHECK(wc_merge_init(&t, 4, NULL) == 0);
	for (i = 0; i < 10; i++) {
		int n = snprintf(line, sizeof(line), "g%d;[on-cpu];f%d 10",
				 i % 2, i);
		wc_merge_line(&t, line, (size_t)n);
	}
	CHECK(t.dropped == 6);
	CHECK(value_of(&t, "g0;[other]") == 30 &&
	      value_of(&t, "g1;[other]") == 30);
	CHECK(t.n == 6);
	wc_merge_free(&t);
}

static size_t gzip_of(const char *text, unsigned char *out, size_t cap)
{
	z_stream z = {0};

	if (deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY))
		abort();
	z.next_in = (unsigned char *)text;
	z.avail_in = (uInt)strlen(text);
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		abort();
	deflateEnd(&z);
	return z.total_out;
}

static void test_gzip(void)
{
	static char text[200000];
	static unsigned char gz[sizeof(text)];
	struct wc_merge t;
	size_t n, i, at = 0;

	for (i = 0; i < 5000; i++)
		at += (size_t)sprintf(text + at, "g;[on-cpu];f%zu %zu\n", i, i);
	n = gzip_of(text, gz, sizeof(gz));
	CHECK(wc_merge_init(&t, 10000, NULL) == 0);
	CHECK(wc_merge_read_fd(&t, memfd_of(gz, n)) == 0);
	CHECK(t.n == 5000 && t.lines == 5000 && t.bad == 0);
	CHECK(value_of(&t, "g;[on-cpu];f4999") == 4999);
	wc_merge_free(&t);
	/* cut short: an error, what came before kept */
	CHECK(wc_merge_init(&t, 10000, NULL) == 0);
	errno = 0;
	CHECK(wc_merge_read_fd(&t, memfd_of(gz, n / 2)) == -1 && errno == EIO);
	CHECK(t.n > 0 && t.n < 5000);
	wc_merge_free(&t);
}

static void test_sorted(void)
{
	const struct wc_merge_entry **v;
	struct wc_merge t;
	size_t n = 0;

	CHECK(wc_merge_init(&t, 100, NULL) == 0);
	read_text(&t, "b 5\na 5\nc 9\nzero 0\n");
	v = wc_merge_sorted(&t, &n);
	CHECK(v && n == 3);
	if (v && n == 3)
		CHECK(!strcmp(wc_merge_stack(&t, v[0]), "c") &&
		      !strcmp(wc_merge_stack(&t, v[1]), "a") &&
		      !strcmp(wc_merge_stack(&t, v[2]), "b"));
	free(v);
	wc_merge_free(&t);
}

int main(void)
{
	check_prog = "test_merge";
	RUN(test_sums_and_bad_lines);
	RUN(test_hostile_lines);
	RUN(test_group_filter);
	RUN(test_bound);
	RUN(test_gzip);
	RUN(test_sorted);
	return check_done();
}
