/*
 * fuzz_elf.c - the ELF reader on hostile files: load segments, build-id,
 * .gnu_debuglink, .symtab and .dynsym into a bounded table, the address
 * translation, and the debuglink CRC; read from memory (as a vdso is) and
 * from a descriptor (as a mapped file is).
 */
#include <string.h>

#include "fuzz.h"
#include "sym/wc_sym_elf.h"
#include "sym/wc_sym_tab.h"

#define BUDGET (256u << 10)

static void symbols(struct wc_elf *e, bool dynsym)
{
	struct wc_symtab t;
	const struct wc_symtab_ent *prev = NULL;
	size_t i;

	wc_symtab_init(&t, BUDGET, 4096);
	if (wc_elf_symbols(e, dynsym, &t) >= 0 && wc_symtab_finish(&t) == 0) {
		FUZZ_ASSERT(wc_symtab_bytes(&t) <= BUDGET);
		for (i = 0; i < t.n; i++) {
			const struct wc_symtab_ent *s = &t.ents[i];

			FUZZ_ASSERT(!prev || prev->addr < s->addr);
			FUZZ_ASSERT(s->size > 0);
			FUZZ_ASSERT(wc_symtab_find(&t, s->addr) == s);
			FUZZ_ASSERT(strlen(wc_symtab_name(&t, s)) > 0);
			prev = s;
		}
	}
	wc_symtab_free(&t);
}

static void read_all(struct wc_elf *e)
{
	struct wc_elf_info info;
	uint64_t vaddr;
	unsigned i;

	if (wc_elf_read_info(e, &info) == 0) {
		FUZZ_ASSERT(info.nsegs <= WC_ELF_MAX_SEGS);
		FUZZ_ASSERT(info.build_id_len <= WC_ELF_BUILD_ID_MAX);
		FUZZ_ASSERT(memchr(info.debuglink, 0, sizeof(info.debuglink)));
		for (i = 0; i < info.nsegs; i++)
			wc_elf_vaddr(info.segs, info.nsegs,
				     info.segs[i].off + 1, &vaddr);
	}
	symbols(e, false);
	symbols(e, true);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *image = malloc(size ? size : 1);
	struct wc_elf e;
	uint32_t crc;
	int fd;

	if (!image)
		return 0;
	memcpy(image, data, size);
	if (wc_elf_open_mem(&e, image, size) == 0) {
		read_all(&e);
		wc_elf_close(&e);
	}
	free(image);
	fd = fuzz_memfd(data, size);
	if (wc_elf_crc32(fd, &crc) != 0)
		abort();
	if (wc_elf_open_fd(&e, fd) == 0) {
		read_all(&e);
		wc_elf_close(&e);
	}
	return 0;
}
