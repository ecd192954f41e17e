/*
 * wc_sym_elf.h - what symbolization needs from one ELF file or in-memory
 * image, read through libelf: its executable load segments (to turn a file
 * offset into a link-time address), its build-id and .gnu_debuglink, and
 * its function symbols.
 *
 * Owns: while open, the Elf handle and the descriptor it reads (an image
 * stays the caller's).  Files are read with ELF_C_READ (pread), never
 * mmap: a binary truncated while we read it gives an error, not a SIGBUS
 * in a daemon that runs forever.  Everything in the file is untrusted:
 * section sizes are checked against the symbol table's byte budget before
 * libelf reads them, note and debuglink sections are size-capped, and
 * libelf itself checks offsets against the file's size.
 */
#ifndef WC_SYM_ELF_H
#define WC_SYM_ELF_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sym/wc_sym_tab.h"

#define WC_ELF_MAX_SEGS 8
#define WC_ELF_BUILD_ID_MAX 64
#define WC_ELF_DEBUGLINK_MAX 256

/* A PT_LOAD segment, as far as the file goes. */
struct wc_elf_seg {
	uint64_t off;
	uint64_t vaddr;
	uint64_t filesz;
};

struct wc_elf_info {
	struct wc_elf_seg segs[WC_ELF_MAX_SEGS]; /* executable ones first */
	unsigned nsegs;
	unsigned nexec; /* how many of them are executable */
	uint8_t build_id[WC_ELF_BUILD_ID_MAX];
	unsigned build_id_len;		      /* 0: none */
	char debuglink[WC_ELF_DEBUGLINK_MAX]; /* "": none or unusable */
	uint32_t debuglink_crc;
	bool has_symtab; /* a non-empty .symtab */
};

struct wc_elf {
	Elf *elf;
	int fd; /* -1 for an image */
};

/* Open an ELF file from fd (taken: closed by wc_elf_close, also on
 * failure here) or from an image (not taken, must outlive the handle).
 * 0, or -1 if it is not an ELF executable or shared object. */
int wc_elf_open_fd(struct wc_elf *e, int fd);
int wc_elf_open_mem(struct wc_elf *e, char *image, size_t len);
void wc_elf_close(struct wc_elf *e);

int wc_elf_read_info(struct wc_elf *e, struct wc_elf_info *out);

/*
 * Add the function symbols of .symtab (dynsym false) or .dynsym to t,
 * unfinished.  Returns how many were added, or -1 with errno ENOENT (no
 * such table), E2BIG (over t's budget: t is then left partly filled) or
 * EINVAL (corrupt).
 */
ssize_t wc_elf_symbols(struct wc_elf *e, bool dynsym, struct wc_symtab *t);

/* File offset -> link-time address through the load segments. */
bool wc_elf_vaddr(const struct wc_elf_seg *segs, unsigned nsegs, uint64_t off,
		  uint64_t *vaddr);

/* The CRC-32 .gnu_debuglink records, over the file as long as it was at
 * the call; files over 1 GiB are refused (EFBIG) rather than read. */
int wc_elf_crc32(int fd, uint32_t *crc);

#endif /* WC_SYM_ELF_H */
