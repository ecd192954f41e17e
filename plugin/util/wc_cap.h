/*
 * wc_cap.h - the calling thread's effective capabilities, as the kernel
 * reports them (capget): what the plugin may do, and what its helper may.
 *
 * Owns nothing.
 */
#ifndef WC_CAP_H
#define WC_CAP_H

#include <stdbool.h>
#include <stdint.h>

/* The effective set in *mask (bit n: capability n): 0, or -1 if the
 * kernel would not say. */
int wc_cap_effective(uint64_t *mask);

/* Is cap in the mask?  (-1: none is.) */
static inline bool wc_cap_in(uint64_t mask, int cap)
{
	return cap >= 0 && cap < 64 && (mask >> cap & 1);
}

/* Does the calling thread have cap in effect?  false if unknown. */
bool wc_cap_have(int cap);

#endif /* WC_CAP_H */
