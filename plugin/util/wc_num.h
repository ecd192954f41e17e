/*
 * wc_num.h - numbers read from text that anyone may have written (maps
 * files, perf maps): bounded, never past the end, never overflowing.
 *
 * Owns nothing: pure functions.
 */
#ifndef WC_NUM_H
#define WC_NUM_H

#include <stdbool.h>
#include <stdint.h>

/* Hex digits at *p, before end (at most 16); advances *p past them.
 * false if there are none or too many. */
bool wc_parse_hex(const char **p, const char *end, uint64_t *v);

/* Decimal digits at *p, before end; advances *p past them.  false if
 * there are none or the number does not fit 64 bits. */
bool wc_parse_dec(const char **p, const char *end, uint64_t *v);

#endif /* WC_NUM_H */
