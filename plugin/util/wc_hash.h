/*
 * wc_hash.h - the one hash of the project: FNV-1a over bytes or words, and
 * a finaliser that folds its 64 bits into 32 well-mixed ones for a slot.
 *
 * Owns nothing: pure functions.  Keys may be chosen by anyone (frame and
 * process names), so every table hashed with it bounds its size, and
 * therefore its probes, by itself.
 */
#ifndef WC_HASH_H
#define WC_HASH_H

#include <stddef.h>
#include <stdint.h>

#define WC_FNV_SEED 0xcbf29ce484222325ULL
#define WC_FNV_PRIME 0x100000001b3ULL

/* One FNV-1a step over a byte or a whole word. */
static inline uint64_t wc_fnv1a_step(uint64_t h, uint64_t v)
{
	return (h ^ v) * WC_FNV_PRIME;
}

/* h (WC_FNV_SEED to start) carried over n bytes at p. */
static inline uint64_t wc_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		h = wc_fnv1a_step(h, *b++);
	return h;
}

/* 64 bits into 32 whose low bits all depend on every input bit. */
static inline uint32_t wc_mix32(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return (uint32_t)x;
}

/* The slot hash of n bytes. */
static inline uint32_t wc_hash32(const void *p, size_t n)
{
	return wc_mix32(wc_fnv1a(WC_FNV_SEED, p, n));
}

#endif /* WC_HASH_H */
