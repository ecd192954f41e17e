/*
 * bpf_test.h - what the tests that load BPF share: log sinks that keep
 * the core's and libbpf's chatter out of the PASS/FAIL lines, printing
 * only warnings and errors, indented under the test they belong to; and
 * which loaded programs are this process's own.
 */
#ifndef WC_TEST_BPF_TEST_H
#define WC_TEST_BPF_TEST_H

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
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

/* The ids of the programs this process holds a descriptor of (what it
 * loaded, and what its links attach), each once, into ids; how many.
 * Only ours: the suite may run beside another collectd. */
static inline int held_programs(__u32 *ids, int max)
{
	DIR *d = opendir("/proc/self/fdinfo");
	char path[300], line[128];
	struct dirent *de;
	unsigned id;
	int n = 0, i;
	FILE *f;

	while (d && (de = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s",
			 de->d_name);
		f = de->d_name[0] == '.' ? NULL : fopen(path, "r");
		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "prog_id: %u", &id) != 1)
				continue;
			for (i = 0; i < n && ids[i] != id; i++)
				;
			if (i == n && n < max)
				ids[n++] = id;
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* How many of ids are still loaded, by anyone: released programs go
 * after an RCU grace period, so asked for up to 5 s until none is. */
static inline int still_loaded(const __u32 *ids, int n)
{
	int left = n, tries, i, fd;

	for (tries = 0; tries < 50 && left; tries++) {
		if (tries)
			usleep(100000);
		for (left = 0, i = 0; i < n; i++) {
			fd = bpf_prog_get_fd_by_id(ids[i]);
			if (fd >= 0) {
				left++;
				close(fd);
			}
		}
	}
	return left;
}

#endif /* WC_TEST_BPF_TEST_H */
