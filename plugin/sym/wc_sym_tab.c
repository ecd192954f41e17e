/* wc_sym_tab.c - see wc_sym_tab.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sym/wc_sym_tab.h"

struct wc_symtab_pending {
	uint64_t addr;
	uint64_t size;
	uint32_t name;
	uint32_t rank;
};

void wc_symtab_init(struct wc_symtab *t, size_t max_bytes, uint32_t unsized_max)
{
	memset(t, 0, sizeof(*t));
	t->max_bytes = max_bytes;
	t->unsized_max = unsized_max ? unsized_max : 1;
}

void wc_symtab_free(struct wc_symtab *t)
{
	free(t->ents);
	free(t->strs);
	free(t->pend);
	wc_symtab_init(t, t->max_bytes, t->unsized_max);
}

size_t wc_symtab_bytes(const struct wc_symtab *t)
{
	return t->n * sizeof(*t->ents) + t->strs_cap +
	       t->pend_cap * sizeof(*t->pend);
}

/* Grow *p (cap elements of size each) so that need fit, never past what
 * the budget leaves once `other` bytes are spoken for. */
static int grow(void **p, size_t *cap, size_t need, size_t size, size_t budget,
		size_t other)
{
	size_t max_elems, ncap;
	void *np;

	if (need <= *cap)
		return 0;
	if (other >= budget || need > (budget - other) / size) {
		errno = E2BIG;
		return -1;
	}
	max_elems = (budget - other) / size;
	ncap = *cap ? *cap : 64;
	while (ncap < need)
		ncap = ncap > max_elems / 2 ? max_elems : ncap * 2;
	if (ncap > max_elems)
		ncap = max_elems;
	np = realloc(*p, ncap * size);
	if (!np)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}

int wc_symtab_add(struct wc_symtab *t, uint64_t addr, uint64_t size,
		  const char *name, size_t namelen, uint32_t rank)
{
	struct wc_symtab_pending *e;
	size_t pend_bytes;

	namelen = strnlen(name, namelen);
	if (namelen == 0) {
		errno = EINVAL;
		return -1;
	}
	if (namelen > WC_SYMTAB_NAME_MAX)
		namelen = WC_SYMTAB_NAME_MAX;
	/* Offsets are 32-bit: a pool that large is past any sane budget. */
	if (t->strs_len + namelen + 1 > UINT32_MAX) {
		errno = E2BIG;
		return -1;
	}
	if (grow((void **)&t->pend, &t->pend_cap, t->pend_n + 1,
		 sizeof(*t->pend), t->max_bytes, t->strs_cap))
		return -1;
	pend_bytes = t->pend_cap * sizeof(*t->pend);
	if (grow((void **)&t->strs, &t->strs_cap, t->strs_len + namelen + 1, 1,
		 t->max_bytes, pend_bytes))
		return -1;
	e = &t->pend[t->pend_n++];
	e->addr = addr;
	e->size = size;
	e->name = (uint32_t)t->strs_len;
	e->rank = rank;
	memcpy(t->strs + t->strs_len, name, namelen);
	t->strs[t->strs_len + namelen] = '\0';
	t->strs_len += namelen + 1;
	return 0;
}

static int cmp_pending(const void *pa, const void *pb)
{
	const struct wc_symtab_pending *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank > b->rank ? -1 : 1;
	/* Names are appended in order: the earlier add wins a tie. */
	return a->name < b->name ? -1 : a->name > b->name;
}

static uint32_t final_size(const struct wc_symtab *t,
			   const struct wc_symtab_pending *e,
			   const struct wc_symtab_pending *next)
{
	uint64_t size = e->size;

	if (size == 0) {
		size = t->unsized_max;
		if (next && next->addr - e->addr < size)
			size = next->addr - e->addr;
	}
	if (size > UINT32_MAX)
		size = UINT32_MAX;
	return size ? (uint32_t)size : 1;
}

int wc_symtab_finish(struct wc_symtab *t)
{
	size_t i, n = 0, uniq = 0;
	char *strs;

	if (t->pend_n)
		qsort(t->pend, t->pend_n, sizeof(*t->pend), cmp_pending);
	for (i = 0; i < t->pend_n; i++)
		if (i == 0 || t->pend[i].addr != t->pend[i - 1].addr)
			uniq++;
	free(t->ents);
	t->ents = uniq ? malloc(uniq * sizeof(*t->ents)) : NULL;
	if (uniq && !t->ents) {
		wc_symtab_free(t);
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < t->pend_n; i++) {
		const struct wc_symtab_pending *e = &t->pend[i], *next = NULL;
		size_t j = i + 1;

		if (i > 0 && e->addr == t->pend[i - 1].addr)
			continue;
		while (j < t->pend_n && t->pend[j].addr == e->addr)
			j++;
		if (j < t->pend_n)
			next = &t->pend[j];
		t->ents[n].addr = e->addr;
		t->ents[n].size = final_size(t, e, next);
		t->ents[n].name = e->name;
		n++;
	}
	t->n = n;
	free(t->pend);
	t->pend = NULL;
	t->pend_n = t->pend_cap = 0;
	/* The pool grew by doubling: give the slack back, it lives long. */
	if (t->strs_len && t->strs_len < t->strs_cap) {
		strs = realloc(t->strs, t->strs_len);
		if (strs) {
			t->strs = strs;
			t->strs_cap = t->strs_len;
		}
	}
	return 0;
}

static bool adoptable(const struct wc_symtab_ent *ents, size_t n,
		      const char *strs, size_t strs_len)
{
	size_t i;

	if (n && (strs_len == 0 || strs[strs_len - 1] != '\0'))
		return false;
	for (i = 0; i < n; i++)
		if (ents[i].size == 0 || ents[i].name >= strs_len ||
		    (i && ents[i].addr <= ents[i - 1].addr))
			return false;
	return true;
}

int wc_symtab_adopt(struct wc_symtab *t, const struct wc_symtab_ent *ents,
		    size_t n, const char *strs, size_t strs_len)
{
	if (n > t->max_bytes / sizeof(*ents) ||
	    strs_len > t->max_bytes - n * sizeof(*ents) ||
	    strs_len > UINT32_MAX) {
		errno = E2BIG;
		return -1;
	}
	if (!adoptable(ents, n, strs, strs_len)) {
		errno = EINVAL;
		return -1;
	}
	if (n == 0)
		return 0;
	t->ents = malloc(n * sizeof(*ents));
	t->strs = malloc(strs_len);
	if (!t->ents || !t->strs) {
		wc_symtab_free(t);
		errno = ENOMEM;
		return -1;
	}
	memcpy(t->ents, ents, n * sizeof(*ents));
	memcpy(t->strs, strs, strs_len);
	t->n = n;
	t->strs_len = t->strs_cap = strs_len;
	return 0;
}

const struct wc_symtab_ent *wc_symtab_find(const struct wc_symtab *t,
					   uint64_t addr)
{
	size_t lo = 0, hi = t->n;
	const struct wc_symtab_ent *e;

	/* First entry past addr, then step back to the one at or before. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->ents[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	e = &t->ents[lo - 1];
	return addr - e->addr < e->size ? e : NULL;
}
