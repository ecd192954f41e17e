/*
 * wc_budget.c - arrays grown within a shared byte budget.
 */
#include "util/wc_budget.h"

#include <stdlib.h>

bool wc_budget_has(const struct wc_budget *b, size_t more)
{
	return more <= b->max - b->bytes;
}

int wc_budget_resize(struct wc_budget *b, void **buf, size_t *cap, size_t ncap,
		     size_t sz)
{
	void *p;

	if (ncap > *cap && !wc_budget_has(b, (ncap - *cap) * sz))
		return -1;
	p = realloc(*buf, ncap * sz);
	if (!p)
		return -1;
	b->bytes = b->bytes - *cap * sz + ncap * sz;
	*buf = p;
	*cap = ncap;
	return 0;
}

int wc_budget_grow(struct wc_budget *b, void **buf, size_t *cap, size_t need,
		   size_t sz)
{
	size_t allowed = (b->max - b->bytes) / sz + *cap;
	size_t ncap = *cap ? *cap * 2 : 1024;

	if (need <= *cap)
		return 0;
	if (need > allowed)
		return -1;
	if (ncap < need)
		ncap = need;
	if (ncap > allowed)
		ncap = allowed;
	return wc_budget_resize(b, buf, cap, ncap, sz);
}
