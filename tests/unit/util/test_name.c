/*
 * test_name.c - turning untrusted comms into group names: the alphabet,
 * the leading-character and reserved-name rules, the length bounds on both
 * sides, and the kernel-thread folding at '/'.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "check.h"
#include "util/wc_name.h"

static void expect_name(int line, const char *got, const char *want)
{
	if (strcmp(got, want) != 0) {
		printf("  %s:%d: got \"%s\", want \"%s\"\n", __FILE__, line,
		       got, want);
		check_cur_failed = 1;
	}
}

static void check_san(int line, const char *in, size_t inlen, size_t outlen,
		      const char *want)
{
	char out[256];

	memset(out, 'X', sizeof(out));
	wc_name_sanitize(in, inlen, out, outlen);
	expect_name(line, out, want);
	/* Nothing may be written past outlen. */
	if (outlen < sizeof(out) && out[outlen] != 'X')
		expect_name(line, "wrote past outlen", "");
}

static void check_kthread(int line, const char *in, size_t len,
			  const char *want)
{
	char out[64];

	wc_name_kthread(in, len, out, sizeof(out));
	expect_name(line, out, want);
}

/* String literals, embedded NULs included, at the default size. */
#define SAN(in, want) check_san(__LINE__, in, sizeof(in) - 1, 64, want)
#define SAN_N(in, outlen, want)                                                \
	check_san(__LINE__, in, sizeof(in) - 1, outlen, want)
#define KTHREAD(in, want) check_kthread(__LINE__, in, sizeof(in) - 1, want)

static void test_plain_names_unchanged(void)
{
	SAN("nginx", "nginx");
	SAN("postgres", "postgres");
	SAN("A-z_0.9", "A-z_0.9");
	SAN("python3.11", "python3.11");
	SAN("x", "x");
}

static void test_unsafe_bytes_replaced(void)
{
	SAN("a/b", "a_b");
	SAN("a;b", "a_b");
	SAN("a b", "a_b");
	SAN("a\nb", "a_b");
	SAN("a\tb\rc", "a_b_c");
	SAN("a\x01"
	    "b\x7f",
	    "a_b_");
	SAN("caf\xc3\xa9", "caf__");
	SAN("\x80\xff", "__");
	SAN("../../etc/passwd", "_._.._etc_passwd");
	SAN("$(rm -rf)", "__rm_-rf_");
}

/* Every byte value, judged against the documented alphabet. */
static void test_every_byte(void)
{
	int c;

	for (c = 1; c < 256; c++) {
		bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '_' || c == '.' ||
			    c == '-';
		char in[4] = {'a', (char)c, 'b', 0}, out[8];

		wc_name_sanitize(in, 3, out, sizeof(out));
		if (strlen(out) != 3 || out[1] != (safe ? (char)c : '_')) {
			printf("  byte 0x%02x became \"%s\"\n", c, out);
			check_cur_failed = 1;
		}
	}
}

/* "." and ".." are directory names; a leading '-' reads as an option. */
static void test_leading_dot_dash(void)
{
	SAN(".", "_");
	SAN("..", "_.");
	SAN("...", "_..");
	SAN(".hidden", "_hidden");
	SAN("-rf", "_rf");
	SAN("--", "_-");
	SAN("-", "_");
	SAN("a.", "a.");
	SAN("a-", "a-");
}

static void test_empty_is_unknown(void)
{
	SAN("", "unknown");
	SAN("\0abc", "unknown");
	check_san(__LINE__, "abc", 0, 64, "unknown");
	SAN_N("", 4, "unk");
	SAN_N("", 2, "u");
}

/* "other" is where unmatched processes go: no process may join it by
 * naming itself so, whatever the output size. */
static void test_other_is_reserved(void)
{
	SAN("other", "other_");
	SAN("other_", "other_");
	SAN("Other", "Other");
	SAN("others", "others");
	SAN_N("other", 7, "other_");
	SAN_N("otherwise", 6, "othe_");
	SAN_N("other", 6, "othe_");
	SAN_N("other", 5, "othe");
}

static void test_truncation(void)
{
	char in[200], want[64];

	memset(in, 'a', sizeof(in));
	memset(want, 'a', sizeof(want));
	want[63] = '\0';
	check_san(__LINE__, in, sizeof(in), 64, want);
	SAN_N("abcdef", 4, "abc");
	SAN_N("abcdef", 2, "a");
	SAN_N(".abc", 2, "_");
	SAN_N("a/bc", 3, "a_");
	SAN_N("abc", 4, "abc");
}

/* Comms come as 16 raw bytes with no NUL when the name fills them: ASan
 * turns any read past inlen into a failure. */
static void test_inlen_bound(void)
{
	char *raw = malloc(4);
	char out[16];

	CHECK(raw != NULL);
	if (!raw)
		return;
	memcpy(raw, "abcd", 4);
	wc_name_sanitize(raw, 4, out, sizeof(out));
	expect_name(__LINE__, out, "abcd");
	wc_name_sanitize(raw, 2, out, sizeof(out));
	expect_name(__LINE__, out, "ab");
	wc_name_kthread(raw, 4, out, sizeof(out));
	expect_name(__LINE__, out, "abcd");
	free(raw);
	SAN("ab\0cd", "ab");
}

static void test_deterministic(void)
{
	const char *in = "we\x01ird/na me..";
	char a[64], b[64];

	wc_name_sanitize(in, strlen(in), a, sizeof(a));
	memset(b, 0, sizeof(b));
	wc_name_sanitize(in, strlen(in), b, sizeof(b));
	expect_name(__LINE__, a, b);
	expect_name(__LINE__, a, "we_ird_na_me..");
}

static void test_kthread(void)
{
	KTHREAD("kworker/0:1-events", "kworker");
	KTHREAD("ksoftirqd/1", "ksoftirqd");
	KTHREAD("kworker/u16:2-ev", "kworker");
	KTHREAD("migration/3", "migration");
	KTHREAD("rcu_sched", "rcu_sched");
	KTHREAD("kthreadd", "kthreadd");
	/* Slash first: nothing before it to fold on, so sanitise it all. */
	KTHREAD("/x", "_x");
	KTHREAD("/", "_");
	KTHREAD("a b/1", "a_b");
	KTHREAD("other/2", "other_");
	KTHREAD(".x/1", "_x");
	KTHREAD("", "unknown");
	/* A slash beyond len is not part of the name. */
	check_kthread(__LINE__, "abc/def", 3, "abc");
	check_kthread(__LINE__, "ab\0/cd", 6, "ab");
}

int main(void)
{
	check_prog = "test_name";
	RUN(test_plain_names_unchanged);
	RUN(test_unsafe_bytes_replaced);
	RUN(test_every_byte);
	RUN(test_leading_dot_dash);
	RUN(test_empty_is_unknown);
	RUN(test_other_is_reserved);
	RUN(test_truncation);
	RUN(test_inlen_bound);
	RUN(test_deterministic);
	RUN(test_kthread);
	return check_done();
}
