/*
 * fuzz_kallsyms.c - /proc/kallsyms and /proc/modules as the kernel might
 * write them and worse: the kernel is trusted, but a parser that crashes
 * on a format change or on a kernel with odd symbols takes collectd down.
 */
#include "fuzz.h"
#include "sym/wc_sym_kallsyms.h"
#include "sym/wc_sym_tab.h"

#define BUDGET (256u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[256];
	struct wc_symtab t;
	int fd = fuzz_memfd(data, size);
	size_t i;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (wc_kallsyms_load(&t, path, BUDGET, err, sizeof(err)) == 0) {
		FUZZ_ASSERT(wc_symtab_bytes(&t) <= BUDGET);
		for (i = 1; i < t.n; i++)
			FUZZ_ASSERT(t.ents[i - 1].addr < t.ents[i].addr);
	}
	wc_symtab_free(&t);
	wc_kallsyms_modules_sig(path);
	close(fd);
	return 0;
}
