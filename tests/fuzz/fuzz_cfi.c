/*
 * fuzz_cfi.c - the unwind table builder on hostile files: an image's
 * .eh_frame, and its .debug_frame as if it were its own debug file
 * (plain or compressed), through libdw into rows, under limits small enough that a
 * run stays fast; every table built must be sorted, bounded and hold
 * only rules the walk knows.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "sym/wc_sym_cfi.h"

static void check_table(const struct wc_cfi_table *t,
			const struct wc_cfi_limits *lim)
{
	size_t i;

	FUZZ_ASSERT(t->n > 0 && t->n <= lim->rows_max && t->n <= t->cap);
	for (i = 0; i < t->n; i++) {
		const struct wc_cfi_row *r = &t->rows[i];

		FUZZ_ASSERT(wc_cfi_kind(r) <= WC_CFA_UNSUPPORTED);
		FUZZ_ASSERT(wc_cfi_fp(r) <= WC_FP_LOST);
		FUZZ_ASSERT(i == 0 || t->rows[i - 1].off < r->off);
		FUZZ_ASSERT(wc_cfi_find(t, r->off) == r);
	}
	FUZZ_ASSERT(!t->rows[0].off || !wc_cfi_find(t, t->rows[0].off - 1));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wc_cfi_limits lim = {
		.section_max = 1u << 20,
		.rows_max = 1u << 16,
		.fde_rows_max = 512,
		.cpu_ns = 2000000000ull,
	};
	char *image = malloc(size ? size : 1);
	struct wc_elf_info info;
	struct wc_cfi_table t;
	struct wc_elf e;

	if (!image)
		return 0;
	memcpy(image, data, size);
	if (wc_elf_open_mem(&e, image, size) == 0) {
		if (wc_elf_read_info(&e, &info) == 0) {
			if (wc_cfi_build(&e, &info, &lim, &t) == 0)
				check_table(&t, &lim);
			else
				FUZZ_ASSERT(t.n == 0 && !t.rows && errno);
			wc_cfi_free(&t);
			/* and as its own debug file: its .debug_frame */
			if (wc_cfi_build_with(&e, &info, &e, &lim, &t) == 0)
				check_table(&t, &lim);
			else
				FUZZ_ASSERT(t.n == 0 && !t.rows && errno);
			wc_cfi_free(&t);
		}
		wc_elf_close(&e);
	}
	free(image);
	return 0;
}
