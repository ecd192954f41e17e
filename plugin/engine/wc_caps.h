/*
 * wc_caps.h - what the profiler can see with the capabilities it runs
 * with.  Loading needs CAP_BPF and CAP_PERFMON (wc_collector refuses to
 * start without them); naming frames needs more, and without it frames
 * quietly become module+0x... or [unknown].  This says which are missing
 * and what each would restore, so that it is said once, not discovered.
 *
 * Owns nothing: it looks at the calling thread's effective set (and at
 * the sysctls that decide whether CAP_SYSLOG matters).
 */
#ifndef WC_CAPS_H
#define WC_CAPS_H

#include <stdbool.h>
#include <stddef.h>

/* How many of the capabilities the stacks use are missing (0 without
 * stacks), and a sentence per missing one in text ("" if none). */
unsigned wc_caps_missing(bool stacks, char *text, size_t len);

#endif /* WC_CAPS_H */
