/*
 * bpf_test.h - what the tests that load BPF share: log sinks that keep
 * the core's and libbpf's chatter out of the PASS/FAIL lines, printing
 * only warnings and errors, indented under the test they belong to.
 */
#ifndef WC_TEST_BPF_TEST_H
#define WC_TEST_BPF_TEST_H

#include <stdarg.h>
#include <stdio.h>

#include <bpf/libbpf.h>

#include "util/wc_log.h"

static void quiet_log(enum wc_log_level level, const char *msg)
{
	if (level <= WC_LOG_WARN)
		printf("  log: %s\n", msg);
}

static int quiet_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level != LIBBPF_WARN)
		return 0;
	printf("  ");
	return vprintf(fmt, ap);
}

/* Route both sinks; call first in main. */
static inline void quiet_logs(void)
{
	wc_log_set(quiet_log);
	libbpf_set_print(quiet_libbpf);
}

#endif /* WC_TEST_BPF_TEST_H */
