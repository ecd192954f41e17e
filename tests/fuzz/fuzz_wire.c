/*
 * fuzz_wire.c - replies from the symbolizer's helper as collectd decodes
 * them.  The helper parses hostile files, so a helper that a crafted file
 * took over can send anything: what collectd keeps must still be
 * consistent (mappings in order and not empty, paths inside their buffer,
 * tables sorted and within budget).  The first two bytes pick the
 * sequence of parts to decode.
 */
#include <string.h>

#include "fuzz.h"
#include "sym/wc_sym_fetch.h"
#include "sym/wc_sym_tab.h"
#include "sym/wc_sym_wire.h"

#define BUDGET (64u << 10)

static void maps(struct wc_rbuf *r)
{
	struct wc_fetch_maps m;
	size_t i;

	if (!wc_wire_get_maps(r, &m))
		return;
	FUZZ_ASSERT(m.n <= WC_FETCH_MAX_MAPS);
	for (i = 0; i < m.n; i++) {
		const struct wc_proc_map *p = &m.maps[i];

		FUZZ_ASSERT(p->start < p->end);
		FUZZ_ASSERT(i == 0 || m.maps[i - 1].end <= p->start);
		FUZZ_ASSERT(p->path >= m.paths &&
			    p->path + p->pathlen < m.paths + m.paths_len);
		FUZZ_ASSERT(strlen(p->path) == p->pathlen);
	}
	wc_fetch_maps_free(&m);
}

static void image(struct wc_rbuf *r)
{
	struct wc_fetch_image img;

	if (wc_wire_get_image(r, &img)) {
		FUZZ_ASSERT(img.nsegs <= WC_ELF_MAX_SEGS);
		FUZZ_ASSERT(img.build_id_len <= WC_ELF_BUILD_ID_MAX);
	}
}

static void symtab(struct wc_rbuf *r)
{
	struct wc_symtab t;
	size_t i;

	wc_symtab_init(&t, BUDGET, 4096);
	if (wc_wire_get_symtab(r, &t)) {
		FUZZ_ASSERT(wc_symtab_bytes(&t) <= BUDGET);
		for (i = 0; i < t.n; i++) {
			FUZZ_ASSERT(i == 0 ||
				    t.ents[i - 1].addr < t.ents[i].addr);
			FUZZ_ASSERT(wc_symtab_find(&t, t.ents[i].addr) ==
				    &t.ents[i]);
			FUZZ_ASSERT(strlen(wc_symtab_name(&t, &t.ents[i])) <
				    BUDGET);
		}
	}
	wc_symtab_free(&t);
}

static void cfi(struct wc_rbuf *r)
{
	struct wc_cfi_table t;
	size_t i;

	if (!wc_wire_get_cfi(r, 4096, &t))
		return;
	FUZZ_ASSERT(t.n >= 1 && t.n <= 4096);
	for (i = 0; i < t.n; i++)
		FUZZ_ASSERT(wc_cfi_find(&t, t.rows[i].off) == &t.rows[i]);
	wc_cfi_free(&t);
}

static void cfi_limits(struct wc_rbuf *r)
{
	struct wc_cfi_limits l;

	if (!wc_wire_get_cfi_limits(r, &l))
		return;
	FUZZ_ASSERT(l.rows_max <= WC_CFI_ROWS_MAX &&
		    l.section_max <= WC_CFI_SECTION_MAX &&
		    l.fde_rows_max <= WC_CFI_FDE_ROWS_MAX &&
		    l.cpu_ns <= WC_CFI_CPU_NS_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wc_file_id id;
	struct wc_rbuf r;
	unsigned plan, i;
	char *copy;

	if (size < 2)
		return 0;
	/* a reply lands in a malloc'ed buffer: ASan sees any read past it */
	copy = malloc(size - 2 ? size - 2 : 1);
	if (!copy)
		abort();
	memcpy(copy, data + 2, size - 2);
	wc_rbuf_init(&r, copy, size - 2);
	plan = data[0] | (unsigned)data[1] << 8;
	for (i = 0; i < 4 && !r.failed; i++, plan >>= 3) {
		switch (plan & 7) {
		case 4:
			cfi(&r);
			break;
		case 5:
			cfi_limits(&r);
			break;
		case 0:
			maps(&r);
			break;
		case 1:
			image(&r);
			break;
		case 2:
			symtab(&r);
			break;
		default:
			wc_wire_get_file_id(&r, &id);
		}
	}
	free(copy);
	return 0;
}
