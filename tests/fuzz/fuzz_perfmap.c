/*
 * fuzz_perfmap.c - a JIT's perf map as its owner may write it: lines of
 * any length, garbage, control bytes, and a size bound below the file's.
 */
#include <string.h>

#include "fuzz.h"
#include "sym/wc_sym_perfmap.h"
#include "sym/wc_sym_tab.h"

#define BUDGET (64u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wc_symtab t;
	uint64_t bad = 0, start, len;
	const char *name;
	size_t namelen, i;
	long n;

	char *line = malloc(size + 1);

	/* the line parser on the input as one line, NUL-terminated as the
	 * line reader leaves it */
	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	if (wc_perfmap_parse_line(line, size, &start, &len, &name, &namelen) ==
	    0)
		FUZZ_ASSERT(name >= line && name + namelen <= line + size);
	free(line);
	/* the file reader, bounded at its size or at half of it */
	wc_symtab_init(&t, BUDGET, 4096);
	n = wc_perfmap_load(fuzz_memfd(data, size),
			    size && data[0] & 1 ? size / 2 : size, &t, &bad);
	if (n >= 0) {
		FUZZ_ASSERT((size_t)n == t.n);
		FUZZ_ASSERT(wc_symtab_bytes(&t) <= BUDGET);
		for (i = 1; i < t.n; i++)
			FUZZ_ASSERT(t.ents[i - 1].addr < t.ents[i].addr);
	}
	wc_symtab_free(&t);
	return 0;
}
