/*
 * wc_cli.c - `wallclock`, the command-line front end over the same core as
 * the plugin: record a profile without collectd, render and merge folded
 * files into a flame graph or one folded file.
 *
 * Owns: the command line, and for render/merge one wc_merge table of the
 * inputs' stacks (bounded by --max-lines; what does not fit is counted,
 * reported, and goes to one "[other]" line per group).  No collectd.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "core/wc_config.h"
#include "engine/wc_engine.h"
#include "util/wc_log.h"
#include "cli/wc_merge.h"
#include "render/wc_svg.h"

#define DEFAULT_MAX_LINES 1000000u
#define MAX_INPUTS 4096

static const char usage_main[] =
	"usage: wallclock COMMAND [OPTIONS]\n"
	"\n"
	"Where does the wall-clock time of every process go: on a CPU, waiting\n"
	"for one, sleeping, or blocked in I/O.  The collectd plugin writes a\n"
	"folded stack file and a flame graph every FlushInterval; this tool\n"
	"records without collectd and renders or merges those files.\n"
	"\n"
	"commands:\n"
	"  record   profile the whole host (or one process) for N seconds and\n"
	"           write a folded file and an SVG flame graph\n"
	"  render   folded files (plain or .gz, files or spool directories, one\n"
	"           host or many) into one SVG flame graph\n"
	"  merge    the same inputs into one folded file\n"
	"  help     this text, or `wallclock help COMMAND`\n"
	"\n"
	"Run `wallclock COMMAND --help` for a command's options.\n";

static const char usage_record[] =
	"usage: wallclock record [-d SECONDS] [-p PID] [-F HZ] [-m US]\n"
	"                        [-n TOP] [-k] [-u HOW] [-o DIR]\n"
	"\n"
	"Profile the whole host (or one process) for SECONDS, then write\n"
	"DIR/wallclock-YYYYMMDDTHHMMSSZ.folded and .svg (and latest.*), the\n"
	"same files the collectd plugin writes.  Needs root (or CAP_BPF and\n"
	"CAP_PERFMON).\n"
	"\n"
	"  -d, --duration SECONDS   how long to record (default 10, 1-86400)\n"
	"  -p, --pid PID            only this process (its threads)\n"
	"  -F, --frequency HZ       on-CPU samples per second per CPU (default\n"
	"                           49, 1-1000)\n"
	"  -m, --min-block US       walk the stacks of waits from US\n"
	"                           microseconds on (default 1000; 0 = all)\n"
	"  -n, --top N              stack lines kept (default 500)\n"
	"  -k, --kernel-threads     include kernel threads\n"
	"  -u, --unwind HOW         user stacks by \"auto\" (the default: unwind\n"
	"                           tables, frame pointers where none) or\n"
	"                           \"framepointer\"\n"
	"  -o, --output DIR         where the files go (default ./wallclock-out,\n"
	"                           created mode 0750; must not be writable by\n"
	"                           others)\n"
	"  -h, --help               this text\n";

static const char usage_render[] =
	"usage: wallclock render [-o OUT.svg] [-g GROUP] [--from TIME]\n"
	"                        [--to TIME] [-t TITLE] INPUT...\n"
	"       wallclock merge  [-o OUT.folded] [-g GROUP] [--from TIME]\n"
	"                        [--to TIME] INPUT...\n"
	"\n"
	"INPUT is a folded file (GROUP;MARKER;frame;... VALUE, plain or gzip)\n"
	"or a spool directory, of which the wallclock-*.folded[.gz] files are\n"
	"read (within --from/--to).  Identical stacks from all inputs are\n"
	"summed, so files from many hosts or many intervals make one picture.\n"
	"\n"
	"  -o, --output FILE        write here (default: standard output)\n"
	"  -g, --group GROUP        only this process group (the root frame)\n"
	"      --from TIME          spool files from TIME on, and\n"
	"      --to TIME            up to TIME; TIME is YYYYMMDDTHHMMSSZ (as in\n"
	"                           the file names) or seconds since the epoch\n"
	"  -t, --title TITLE        the flame graph's title (render)\n"
	"      --max-lines N        distinct stacks kept (default 1000000);\n"
	"                           the rest is summed per group into [other]\n"
	"  -h, --help               this text\n";

static void die_usage(const char *usage, const char *fmt, const char *arg)
{
	fprintf(stderr, "wallclock: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n\n%s", usage);
	exit(2);
}

static long parse_long(const char *usage, const char *what, const char *s,
		       long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr,
			"wallclock: %s \"%s\": must be a whole number from "
			"%ld to %ld\n\n%s",
			what, s, lo, hi, usage);
		exit(2);
	}
	return v;
}

/* ---- record ---------------------------------------------------------- */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void log_stderr(enum wc_log_level level, const char *msg)
{
	if (level <= WC_LOG_WARN)
		fprintf(stderr, "wallclock: %s\n", msg);
}

static int quiet_libbpf(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level != LIBBPF_WARN)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* One option through the plugin's own parser, so limits and messages
 * are the same as in collectd.conf. */
static int set_opt(struct wc_config *cfg, const char *key, struct wc_cval v)
{
	char err[512];

	if (wc_config_set(cfg, key, &v, 1, err, sizeof(err))) {
		fprintf(stderr, "wallclock: %s\n", err);
		return -1;
	}
	return 0;
}

static int set_num(struct wc_config *cfg, const char *key, long n)
{
	return set_opt(
		cfg, key,
		(struct wc_cval){.type = WC_CVAL_NUMBER, .n = (double)n});
}

/*
 * Reads fall on whole seconds from the start, however long each takes, so
 * a recording of N seconds is N reads long (deadlines by time(NULL) lost
 * one whenever a read crossed a second boundary).  Ctrl-C still reads, so
 * the part second before it is in the file.
 */
static int record_loop(struct wc_engine *e, long seconds)
{
	struct timespec at;
	char err[512];
	long i;

	clock_gettime(CLOCK_MONOTONIC, &at);
	for (i = 0; i < seconds * 10 && !stop; i++) {
		at.tv_nsec += 100000000;
		if (at.tv_nsec >= 1000000000) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000;
		}
		while (!stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
						&at, NULL) == EINTR)
			;
		/* exits ten times a second, as the plugin takes them */
		if (i % 10 != 9) {
			if (wc_engine_drain_exits(e, err, sizeof(err)))
				fprintf(stderr, "wallclock: %s\n", err);
			continue;
		}
		if (wc_engine_read(e, err, sizeof(err))) {
			fprintf(stderr, "wallclock: read: %s\n", err);
			return -1;
		}
		/* the next drain takes what this one left */
		if (wc_engine_drain(e, err, sizeof(err)))
			fprintf(stderr, "wallclock: drain: %s\n", err);
	}
	return 0;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{"duration", required_argument, NULL, 'd'},
		{"pid", required_argument, NULL, 'p'},
		{"frequency", required_argument, NULL, 'F'},
		{"min-block", required_argument, NULL, 'm'},
		{"top", required_argument, NULL, 'n'},
		{"kernel-threads", no_argument, NULL, 'k'},
		{"output", required_argument, NULL, 'o'},
		{"unwind", required_argument, NULL, 'u'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	char out[PATH_MAX] = "wallclock-out", abs[PATH_MAX], err[1024] = "";
	const char *unwind = "auto";
	long seconds = 10, pid = 0, hz = 49, min_us = 1000, top = 500;
	bool kthreads = false;
	struct wc_config cfg;
	struct wc_engine *e;
	int c, rc;

	while ((c = getopt_long(argc, argv, "d:p:F:m:n:ko:u:h", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 'd':
			seconds = parse_long(usage_record, "--duration", optarg,
					     1, 86400);
			break;
		case 'p':
			pid = parse_long(usage_record, "--pid", optarg, 1,
					 4194304);
			break;
		case 'F':
			hz = parse_long(usage_record, "--frequency", optarg,
					WC_HZ_MIN, WC_HZ_MAX);
			break;
		case 'm':
			min_us = parse_long(usage_record, "--min-block", optarg,
					    0, WC_MIN_BLOCK_US_MAX);
			break;
		case 'n':
			top = parse_long(usage_record, "--top", optarg, 1,
					 WC_TOP_STACKS_MAX);
			break;
		case 'k':
			kthreads = true;
			break;
		case 'o':
			snprintf(out, sizeof(out), "%s", optarg);
			break;
		case 'u':
			unwind = optarg;
			break;
		case 'h':
			fputs(usage_record, stdout);
			return 0;
		default:
			fprintf(stderr, "\n%s", usage_record);
			return 2;
		}
	}
	if (optind < argc)
		die_usage(usage_record, "unexpected argument \"%s\"",
			  argv[optind]);
	if (pid && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
		fprintf(stderr, "wallclock: --pid %ld: no such process\n", pid);
		return 2;
	}
	if (out[0] == '/')
		snprintf(abs, sizeof(abs), "%s", out);
	else if (!getcwd(abs, sizeof(abs) - strlen(out) - 2))
		return perror("wallclock: getcwd"), 1;
	else
		snprintf(abs + strlen(abs), sizeof(abs) - strlen(abs), "/%s",
			 out);
	wc_config_init(&cfg);
	cfg.kthreads = kthreads;
	cfg.only_tgid = (uint32_t)pid;
	if (set_num(&cfg, "SampleFrequency", hz) ||
	    set_num(&cfg, "MinBlockMicroseconds", min_us) ||
	    set_num(&cfg, "TopStacks", top) ||
	    set_num(&cfg, "FlushInterval", seconds) ||
	    set_opt(&cfg, "SpoolDir",
		    (struct wc_cval){.type = WC_CVAL_STRING, .s = abs}) ||
	    set_opt(&cfg, "UserStackUnwinding",
		    (struct wc_cval){.type = WC_CVAL_STRING, .s = unwind}) ||
	    wc_config_finish(&cfg, err, sizeof(err))) {
		if (err[0])
			fprintf(stderr, "wallclock: %s\n", err);
		wc_config_free(&cfg);
		return 2;
	}
	err[0] = '\0';
	rc = wc_engine_open(&cfg, &e, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "wallclock: cannot start: %s%s\n", err,
			rc == -EACCES ? "; run it as root: sudo wallclock ..."
				      : "");
		wc_config_free(&cfg);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr,
		"wallclock: recording %s for %ld s (Ctrl-C ends it "
		"early)...\n",
		pid ? "one process" : "the whole host", seconds);
	rc = record_loop(e, seconds);
	if (rc == 0 && wc_engine_flush(e, time(NULL), err, sizeof(err))) {
		fprintf(stderr, "wallclock: writing to %s failed: %s\n", abs,
			err);
		rc = -1;
	}
	if (rc == 0)
		printf("%s/latest.folded\n%s/latest.svg\n", abs, abs);
	wc_engine_close(e);
	wc_config_free(&cfg);
	return rc ? 1 : 0;
}

/* ---- render and merge -------------------------------------------------- */

struct render_opts {
	time_t from, to;
};

/* A spool directory's entries must be regular files (a FIFO planted there
 * would hang us); a path given by name may be a pipe. */
static int read_file(struct wc_merge *t, const char *path, bool from_dir)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC |
				    (from_dir ? O_NOFOLLOW | O_NONBLOCK : 0));
	struct stat st;

	if (fd >= 0 && from_dir && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		fprintf(stderr, "wallclock: %s: not a regular file, skipped\n",
			path);
		close(fd);
		return 0;
	}
	if (fd < 0 || wc_merge_read_fd(t, fd) != 0) {
		fprintf(stderr, "wallclock: %s: %s\n", path,
			fd >= 0 && errno == EIO
				? "corrupt or truncated gzip data"
				: strerror(errno));
		return -1;
	}
	return 0;
}

/* wallclock-YYYYMMDDTHHMMSSZ[-N].folded[.gz]: its time, or -1. */
static time_t spool_name_time(const char *name)
{
	struct tm tm = {0};
	const char *rest;

	if (strncmp(name, "wallclock-", 10) != 0)
		return -1;
	rest = strptime(name + 10, "%Y%m%dT%H%M%SZ", &tm);
	if (!rest || (strncmp(rest, ".folded", 7) != 0 && rest[0] != '-') ||
	    !strstr(rest, ".folded"))
		return -1;
	return timegm(&tm);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_dir(struct wc_merge *t, const struct render_opts *o,
		    const char *dir)
{
	char *names[MAX_INPUTS], path[PATH_MAX];
	size_t n = 0, i;
	struct dirent *d;
	DIR *dh = opendir(dir);
	int rc = 0;

	if (!dh) {
		fprintf(stderr, "wallclock: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((d = readdir(dh)) && n < MAX_INPUTS) {
		time_t when = spool_name_time(d->d_name);

		if (when < 0 || (o->from && when < o->from) ||
		    (o->to && when > o->to))
			continue;
		names[n] = strdup(d->d_name);
		if (names[n])
			n++;
	}
	closedir(dh);
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		rc |= read_file(t, path, true);
		free(names[i]);
	}
	if (n == 0)
		fprintf(stderr, "wallclock: %s: no folded files%s\n", dir,
			o->from || o->to ? " in the time range" : "");
	return rc;
}

static int read_input(struct wc_merge *t, const struct render_opts *o,
		      const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "wallclock: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return S_ISDIR(st.st_mode) ? read_dir(t, o, path)
				   : read_file(t, path, false);
}

static time_t parse_time(const char *usage, const char *what, const char *s)
{
	struct tm tm = {0};
	const char *rest = strptime(s, "%Y%m%dT%H%M%SZ", &tm);

	if (rest && !*rest)
		return timegm(&tm);
	return (time_t)parse_long(usage, what, s, 1, LONG_MAX);
}

static int to_file(void *ctx, const char *buf, size_t len)
{
	return fwrite(buf, 1, len, ctx) == len ? 0 : -1;
}

static int write_svg(const struct wc_merge *t, const char *title, FILE *out)
{
	struct wc_svg_opts o = {0};
	char *line = malloc(WC_MERGE_LINE_MAX + 32);
	struct wc_svg *svg;
	size_t i;
	int rc;

	o.title = title ? title : "wallclock";
	svg = line ? wc_svg_new(&o) : NULL;
	if (!svg) {
		free(line);
		return -1;
	}
	for (i = 0; i < t->n; i++) {
		int n;

		/* lines were read into buffers of this size: they fit */
		n = snprintf(line, WC_MERGE_LINE_MAX + 32, "%s %llu",
			     wc_merge_stack(t, &t->entries[i]),
			     (unsigned long long)t->entries[i].value);
		if (n > 0 && (size_t)n < WC_MERGE_LINE_MAX + 32)
			wc_svg_add_line(svg, line, (size_t)n);
	}
	rc = wc_svg_emit(svg, to_file, out) < 0 ? -1 : 0;
	wc_svg_free(svg);
	free(line);
	return rc;
}

static int cmd_render(int argc, char **argv, bool merge)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"group", required_argument, NULL, 'g'},
		{"from", required_argument, NULL, 'f'},
		{"to", required_argument, NULL, 'T'},
		{"title", required_argument, NULL, 't'},
		{"max-lines", required_argument, NULL, 'M'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct render_opts ro = {0};
	const char *output = NULL, *title = NULL;
	size_t max = DEFAULT_MAX_LINES;
	const char *group = NULL;
	struct wc_merge t;
	FILE *out = stdout;
	int c, i, rc = 0;

	while ((c = getopt_long(argc, argv, "o:g:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'g':
			group = optarg;
			break;
		case 'f':
			ro.from = parse_time(usage_render, "--from", optarg);
			break;
		case 'T':
			ro.to = parse_time(usage_render, "--to", optarg);
			break;
		case 't':
			title = optarg;
			break;
		case 'M':
			max = (size_t)parse_long(usage_render, "--max-lines",
						 optarg, 1, 100000000);
			break;
		case 'h':
			fputs(usage_render, stdout);
			return 0;
		default:
			fprintf(stderr, "\n%s", usage_render);
			return 2;
		}
	}
	if (optind >= argc)
		die_usage(usage_render, "%s: no input given",
			  merge ? "merge" : "render");
	if (wc_merge_init(&t, max, group))
		return fprintf(stderr, "wallclock: out of memory\n"), 1;
	for (i = optind; i < argc; i++)
		rc |= read_input(&t, &ro, argv[i]);
	if (rc) {
		wc_merge_free(&t);
		return 1;
	}
	if (t.bad)
		fprintf(stderr,
			"wallclock: %llu malformed lines skipped (not "
			"\"frame;...;frame VALUE\")\n",
			(unsigned long long)t.bad);
	if (t.dropped)
		fprintf(stderr,
			"wallclock: %llu stacks beyond --max-lines summed "
			"into [other]\n",
			(unsigned long long)t.dropped);
	if (output && !(out = fopen(output, "w"))) {
		fprintf(stderr, "wallclock: %s: %s\n", output, strerror(errno));
		wc_merge_free(&t);
		return 1;
	}
	rc = merge ? wc_merge_write(&t, out) : write_svg(&t, title, out);
	if ((out != stdout && fclose(out) != 0) || rc) {
		fprintf(stderr, "wallclock: writing %s failed\n",
			output ? output : "standard output");
		rc = 1;
	}
	wc_merge_free(&t);
	return rc;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	wc_log_set(log_stderr);
	libbpf_set_print(quiet_libbpf);
	if (!cmd || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
		fputs(usage_main, cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (!strcmp(cmd, "help")) {
		const char *what = argc > 2 ? argv[2] : "";

		if (!strcmp(what, "record"))
			fputs(usage_record, stdout);
		else if (!strcmp(what, "render") || !strcmp(what, "merge"))
			fputs(usage_render, stdout);
		else
			fputs(usage_main, stdout);
		return 0;
	}
	if (!strcmp(cmd, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "render"))
		return cmd_render(argc - 1, argv + 1, false);
	if (!strcmp(cmd, "merge"))
		return cmd_render(argc - 1, argv + 1, true);
	fprintf(stderr, "wallclock: unknown command \"%s\"\n\n%s", cmd,
		usage_main);
	return 2;
}
