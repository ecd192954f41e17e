/*
 * check.h - the smallest test harness that tells the runner what happened.
 *
 * Each test is a void function run by RUN(); CHECK() records a failure
 * with its line and carries on.  Output, one line per test:
 *   PASS: <program>: <test>
 *   FAIL: <program>: <test>
 *   SKIP: <program>: <test>: <why>        (from SKIP(); loudly, never silently)
 * tests/check.sh counts these lines; check_done() makes the exit status
 * non-zero on any failure, so automake's `make check` agrees.  While
 * chasing one test, CHECK_ONLY=<test> in the environment runs only it.
 */
#ifndef WC_TEST_CHECK_H
#define WC_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures, check_passes, check_skips;
static int check_cur_failed, check_cur_skipped;
static const char *check_prog = "test";

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("  %s:%d: CHECK(%s) failed\n", __FILE__,        \
			       __LINE__, #cond);                               \
			check_cur_failed = 1;                                  \
		}                                                              \
	} while (0)

/* CHECK with the values shown, for numbers. */
#define CHECK_NEAR(got, want, rel_tol)                                         \
	do {                                                                   \
		double g_ = (double)(got), w_ = (double)(want);                \
		double d_ = g_ > w_ ? g_ - w_ : w_ - g_;                       \
		if (!(d_ <= (rel_tol) * (w_ > 0 ? w_ : -w_))) {                \
			printf("  %s:%d: %s = %.6g, want %s = %.6g "           \
			       "within %.1f%% (off by %.2f%%)\n",              \
			       __FILE__, __LINE__, #got, g_, #want, w_,        \
			       100.0 * (rel_tol),                              \
			       w_ != 0 ? 100.0 * d_ / (w_ > 0 ? w_ : -w_)      \
				       : 0.0);                                 \
			check_cur_failed = 1;                                  \
		}                                                              \
	} while (0)

#define CHECK_STR_HAS(hay, needle)                                             \
	do {                                                                   \
		const char *h_ = (hay), *n_ = (needle);                        \
		if (!h_ || !strstr(h_, n_)) {                                  \
			printf("  %s:%d: \"%s\" does not contain \"%s\"\n",    \
			       __FILE__, __LINE__, h_ ? h_ : "(null)", n_);    \
			check_cur_failed = 1;                                  \
		}                                                              \
	} while (0)

#define SKIP(why)                                                              \
	do {                                                                   \
		printf("SKIP: %s: %s: %s\n", check_prog, __func__, why);       \
		check_cur_skipped = 1;                                         \
		return;                                                        \
	} while (0)

#define RUN(fn)                                                                \
	do {                                                                   \
		const char *only_ = getenv("CHECK_ONLY");                      \
		if (only_ && strcmp(only_, #fn) != 0)                          \
			break;                                                 \
		check_cur_failed = 0;                                          \
		check_cur_skipped = 0;                                         \
		fn();                                                          \
		if (check_cur_skipped) {                                       \
			check_skips++;                                         \
		} else if (check_cur_failed) {                                 \
			check_failures++;                                      \
			printf("FAIL: %s: %s\n", check_prog, #fn);             \
		} else {                                                       \
			check_passes++;                                        \
			printf("PASS: %s: %s\n", check_prog, #fn);             \
		}                                                              \
		fflush(stdout);                                                \
	} while (0)

static inline int check_done(void)
{
	printf("# %s: %d passed, %d failed, %d skipped\n", check_prog,
	       check_passes, check_failures, check_skips);
	return check_failures ? 1 : 0;
}

#endif /* WC_TEST_CHECK_H */
