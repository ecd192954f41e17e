/*
 * wc_clock.h - a clock read in nanoseconds.
 *
 * Owns nothing: one inline function, so that no module keeps its own.
 * CLOCK_MONOTONIC is the clock of bpf_ktime_get_ns and of task start
 * times; CLOCK_REALTIME is the one values are stamped with.
 */
#ifndef WC_CLOCK_H
#define WC_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t wc_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif /* WC_CLOCK_H */
