/*
 * cfitables.c - unwind tables built for the files named, one line each:
 * "rows ROWS bytes BYTES ms WALL cpu_ms CPU FILE" (or "error ERRNO FILE").
 * tests/bench/cfi_tables.py runs it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sym/wc_sym_cfi.h"

static double ms(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	int i;

	elf_version(EV_CURRENT);
	for (i = 1; i < argc; i++) {
		struct wc_elf_info info;
		struct wc_cfi_table t;
		struct wc_elf e;
		double w0, c0;
		int err = 0;

		if (wc_elf_open_fd(&e, open(argv[i], O_RDONLY | O_CLOEXEC))) {
			printf("error %d %s\n", EINVAL, argv[i]);
			continue;
		}
		w0 = ms(CLOCK_MONOTONIC);
		c0 = ms(CLOCK_THREAD_CPUTIME_ID);
		if (wc_elf_read_info(&e, &info) ||
		    wc_cfi_build(&e, &info, &lim, &t))
			err = errno ? errno : EINVAL;
		if (err)
			printf("error %d %s\n", err, argv[i]);
		else
			printf("rows %zu bytes %zu ms %.2f cpu_ms %.2f %s\n",
			       t.n, t.n * sizeof(*t.rows),
			       ms(CLOCK_MONOTONIC) - w0,
			       ms(CLOCK_THREAD_CPUTIME_ID) - c0, argv[i]);
		if (!err)
			wc_cfi_free(&t);
		wc_elf_close(&e);
	}
	return 0;
}
