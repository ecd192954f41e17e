/*
 * wc_name.h - turning untrusted process names into group names.
 *
 * Owns nothing: pure functions.  A comm or command line is chosen by
 * whoever started the process: it may hold '/', '.', ';', spaces, control
 * bytes, or be "..".  Group names end up in collectd identifiers, RRD and
 * whisper file names, Graphite paths and folded-stack lines, so they are
 * mapped to a small, stable alphabet before anything else sees them.
 */
#ifndef WC_NAME_H
#define WC_NAME_H

#include <stddef.h>

/* The group everything without a group of its own is summed into. */
#define WC_OTHER_GROUP "other"

/*
 * Write a safe name for `in` (at most inlen bytes, stops at NUL) into out
 * (outlen >= 2).  Keeps [A-Za-z0-9_.-], turns every other byte into '_',
 * never starts with '.' or '-', never is empty ("unknown"), and never equals
 * the reserved WC_OTHER_GROUP (a process really named "other" becomes
 * "other_").  The same input always gives the same output.
 */
void wc_name_sanitize(const char *in, size_t inlen, char *out, size_t outlen);

/* A kernel thread's group: its name up to the first '/', so the per-CPU
 * "kworker/1:2" and "ksoftirqd/0" threads fold into one group each. */
void wc_name_kthread(const char *comm, size_t len, char *out, size_t outlen);

#endif /* WC_NAME_H */
