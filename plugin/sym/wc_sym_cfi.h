/*
 * wc_sym_cfi.h - one ELF file's call-frame information (.eh_frame, read
 * through libdw) turned into an unwind table for x86-64: for each range
 * of code, keyed by its file offset, where the caller's frame (the CFA)
 * is, and where the caller's frame pointer was saved.  A walker then
 * needs no DWARF: a binary search and two loads a frame.
 *
 * Owns: the rows of a table, until wc_cfi_free.  The file is input from
 * whoever can write it, so everything read is bounded: the section's
 * size, the CIEs, FDEs and rows kept, the rows of one FDE, and the CPU
 * time of a build.  A rule this format cannot hold is kept as a row that
 * says so (WC_CFA_UNSUPPORTED), never guessed.
 */
#ifndef WC_SYM_CFI_H
#define WC_SYM_CFI_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/wallclock.h"
#include "sym/wc_sym_elf.h"

/*
 * A row holds from off to the next row's off.  The return address is at
 * CFA - 8 in every row of kind SP, FP or PLT (rows where it is not are
 * UNSUPPORTED).  8 bytes, for a BPF walk to read as they are.
 */
struct wc_cfi_row {
	uint32_t off;	/* file offset of the first byte covered */
	uint16_t cfa;	/* see enum wc_cfa_kind */
	uint8_t rule;	/* kind | fp rule << 4 */
	int8_t fp_slot; /* WC_FP_AT: in 8-byte slots from the CFA */
};

static inline enum wc_cfa_kind wc_cfi_kind(const struct wc_cfi_row *r)
{
	return (enum wc_cfa_kind)(r->rule & 15);
}

static inline enum wc_fp_rule wc_cfi_fp(const struct wc_cfi_row *r)
{
	return (enum wc_fp_rule)(r->rule >> 4);
}

struct wc_cfi_limits {
	size_t section_max;    /* bytes of .eh_frame read */
	size_t rows_max;       /* rows kept for the file */
	unsigned fde_rows_max; /* rows one FDE may make */
	uint64_t cpu_ns;       /* the calling thread's CPU time for a build */
};

/* No caller gets more, whatever it asks for. */
#define WC_CFI_ROWS_MAX (8u << 20)
#define WC_CFI_SECTION_MAX (256u << 20)
#define WC_CFI_FDE_ROWS_MAX 65536
#define WC_CFI_CPU_NS_MAX 30000000000ull

/* What Debian's biggest libraries need (libclang-cpp: 1.0M rows). */
#define WC_CFI_LIMITS_DEFAULT                                                  \
	{                                                                      \
		.section_max = 64u << 20, .rows_max = 4u << 20,                \
		.fde_rows_max = 4096, .cpu_ns = 5000000000ull,                 \
	}

struct wc_cfi_stats {
	size_t fdes;	     /* FDEs turned into rows */
	size_t fdes_skipped; /* unreadable, overlapping, outside the code */
	size_t unsupported;  /* rows of kind UNSUPPORTED */
};

struct wc_cfi_table {
	struct wc_cfi_row *rows; /* sorted by off, no two alike in a row */
	size_t n, cap;
	struct wc_cfi_stats stats;
};

/*
 * Build e's table.  0 with at least one row, or -1 with errno: ENOENT
 * (no CFI, or nothing in it covers code), EFBIG (the section or
 * the file is over the limits), E2BIG (more rows than rows_max), ETIME
 * (over cpu_ns), EINVAL (not x86-64 or unreadable), ENOMEM.  The table
 * is empty after a failure.
 */
int wc_cfi_build(struct wc_elf *e, const struct wc_elf_info *info,
		 const struct wc_cfi_limits *lim, struct wc_cfi_table *out);

/* The same, with the .debug_frame of e's debug file (may be NULL) for
 * code .eh_frame does not cover (built -fno-asynchronous-unwind-tables).
 * Only that section of the debug file is read. */
int wc_cfi_build_with(struct wc_elf *e, const struct wc_elf_info *info,
		      struct wc_elf *debug, const struct wc_cfi_limits *lim,
		      struct wc_cfi_table *out);

void wc_cfi_free(struct wc_cfi_table *t);

/* What a table from elsewhere (the helper) must be: rows sorted, rules
 * known. */
bool wc_cfi_valid(const struct wc_cfi_row *rows, size_t n);

/* The row that covers file offset off, or NULL (before the first row). */
const struct wc_cfi_row *wc_cfi_find(const struct wc_cfi_table *t,
				     uint64_t off);

#endif /* WC_SYM_CFI_H */
