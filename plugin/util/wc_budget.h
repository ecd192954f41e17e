/*
 * wc_budget.h - a byte budget that several growing arrays share.
 *
 * Owns nothing: the caller owns the arrays and the budget.  Invariant:
 * bytes never exceeds max (an array that would not fit stays as it was).
 */
#ifndef WC_BUDGET_H
#define WC_BUDGET_H

#include <stdbool.h>
#include <stddef.h>

struct wc_budget {
	size_t bytes; /* taken by the arrays it covers */
	size_t max;
};

/* Whether more bytes still fit. */
bool wc_budget_has(const struct wc_budget *b, size_t more);

/* Resize an array of sz-byte elements from *cap to ncap elements. */
int wc_budget_resize(struct wc_budget *b, void **buf, size_t *cap, size_t ncap,
		     size_t sz);

/* Room for need elements: double (from 1,024), or what the budget
 * allows. */
int wc_budget_grow(struct wc_budget *b, void **buf, size_t *cap, size_t need,
		   size_t sz);

#endif /* WC_BUDGET_H */
