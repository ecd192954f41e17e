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

/* Add the program ids process dir (a /proc entry) holds descriptors of
 * to ids, each once; the new count. */
static inline int add_held(const char *dir, __u32 *ids, int n, int max)
{
	char path[600], line[128];
	struct dirent *de;
	unsigned id;
	DIR *d;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%s/fdinfo", dir);
	d = opendir(path);
	while (d && (de = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s", dir,
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

/* The ids of the programs this process holds a descriptor of (what it
 * loaded, and what its links attach), each once, into ids; how many.
 * Only ours: the suite may run beside another collectd. */
static inline int held_programs(__u32 *ids, int max)
{
	return add_held("self", ids, 0, max);
}

/* The newest program id loaded now, by anyone. */
static inline __u32 newest_program(void)
{
	__u32 id = 0, next;

	while (bpf_prog_get_next_id(id, &next) == 0)
		id = next;
	return id;
}

/* Programs named wc_* loaded after id after that no process holds: left
 * behind (pinned, or attached without a descriptor).  Looked at twice,
 * 0.5 s apart, so that one a collectd beside was just letting go is gone
 * by the second look. */
static inline int unheld_programs_after(__u32 after)
{
	static __u32 held[4096];
	struct bpf_prog_info info;
	int n, left = 0, look, i;
	__u32 id, len;
	struct dirent *de;
	DIR *d;
	int fd;

	for (look = 0; look < 2; look++) {
		if (look)
			usleep(500000);
		n = 0;
		d = opendir("/proc");
		while (d && (de = readdir(d)) != NULL)
			if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
				n = add_held(de->d_name, held, n, 4096);
		if (d)
			closedir(d);
		for (left = 0, id = after;
		     bpf_prog_get_next_id(id, &id) == 0;) {
			fd = bpf_prog_get_fd_by_id(id);
			if (fd < 0)
				continue;
			memset(&info, 0, sizeof(info));
			len = sizeof(info);
			for (i = 0; i < n && held[i] != id; i++)
				;
			if (i == n &&
			    bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
			    strncmp(info.name, "wc_", 3) == 0)
				left++;
			close(fd);
		}
		if (!left)
			break;
	}
	return left;
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
