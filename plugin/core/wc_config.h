/*
 * wc_config.h - the profiler's configuration: defaults, parsing of one
 * option at a time, and validation.
 *
 * Owns: struct wc_config and everything it points to (compiled regexes,
 * the selection list).  Front ends translate their own syntax (collectd's
 * oconfig tree, command-line flags) into wc_cval arrays and call
 * wc_config_set() per option, then wc_config_finish() once.  Every error
 * names the option and the offending value, ready to log as is.
 */
#ifndef WC_CONFIG_H
#define WC_CONFIG_H

#include <limits.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WC_NAME_MAX 64 /* group names, with the NUL */
#define WC_MAX_SELECTIONS 256

#define WC_HZ_MIN 1
#define WC_HZ_MAX 1000
#define WC_GROUPS_MAX 1000
#define WC_THREADS_MIN 1024
#define WC_THREADS_MAX 4194304 /* the kernel's PID_MAX_LIMIT */
#define WC_EXIT_KIB_MIN 64
#define WC_EXIT_KIB_MAX 262144
#define WC_EXIT_KIB_PER_CPU 512	  /* 4,096 final records */
#define WC_EXIT_KIB_AUTO_MIN 1024 /* the kernel maps it into collectd twice */
#define WC_EXIT_KIB_AUTO_MAX 16384
#define WC_MIN_BLOCK_US_MAX 60000000 /* a minute */
#define WC_STACKS_MIN 1024
#define WC_STACKS_MAX 1048576
#define WC_FLUSH_S_MAX 86400
#define WC_TOP_STACKS_MAX 1000000
#define WC_UNWIND_MIB_MIN 1
#define WC_UNWIND_MIB_MAX 4096

enum wc_cval_type { WC_CVAL_STRING, WC_CVAL_NUMBER, WC_CVAL_BOOL };

/* One value of an option, as the front end parsed it. */
struct wc_cval {
	enum wc_cval_type type;
	const char *s;
	double n;
	bool b;
};

/* A process selection: Process (exact name) or ProcessMatch (regex). */
struct wc_selection {
	char label[WC_NAME_MAX]; /* sanitised group name */
	char comm[WC_NAME_MAX];	 /* Process: the name to match */
	bool is_regex;
	regex_t re; /* ProcessMatch: over the command line */
};

struct wc_config {
	unsigned int sample_hz;
	bool kthreads;
	unsigned int max_groups;
	unsigned int max_threads;
	unsigned int exit_ring_kib; /* 0: sized by wc_config_exit_ring_kib() */
	bool unmatched_other;	    /* false: unmatched processes are dropped */
	char spool_dir[PATH_MAX];
	bool stacks;		       /* Stacks */
	unsigned int min_block_us;     /* MinBlockMicroseconds */
	unsigned int stack_entries;    /* StackStorage */
	unsigned int flush_interval_s; /* FlushInterval */
	unsigned int top_stacks;       /* TopStacks */
	bool spool_gzip;	       /* SpoolCompress */
	bool render_svg;	       /* RenderSVG */
	unsigned int keep_files;       /* SpoolKeepFiles, 0: no limit */
	unsigned int keep_hours;       /* SpoolKeepHours, 0: no limit */
	unsigned int keep_mib;	       /* SpoolKeepMiB, 0: no limit */
	bool unwind_tables;	       /* UserStackUnwinding "auto" */
	unsigned int unwind_mib;       /* UnwindTableMiB */
	uint32_t only_tgid;	  /* not an option: the command line's -p PID */
	struct wc_selection *sel; /* owned, nsel entries */
	size_t nsel;
};

void wc_config_init(struct wc_config *cfg);
void wc_config_free(struct wc_config *cfg);

/* Apply one option.  0 on success; -1 with a message in err otherwise. */
int wc_config_set(struct wc_config *cfg, const char *key,
		  const struct wc_cval *vals, int nvals, char *err,
		  size_t errlen);

/* Checks that need all options, and the spool directory's safety. */
int wc_config_finish(struct wc_config *cfg, char *err, size_t errlen);

/* The exit ring's size in KiB on a host of ncpus CPUs: ExitBufferKiB if
 * set, else WC_EXIT_KIB_PER_CPU a CPU (threads exit at a rate bounded by
 * the CPUs that run them) between WC_EXIT_KIB_AUTO_MIN and _MAX. */
unsigned int wc_config_exit_ring_kib(const struct wc_config *cfg, int ncpus);

#endif /* WC_CONFIG_H */
