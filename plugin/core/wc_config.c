/* wc_config.c - see wc_config.h. */
#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/wc_config.h"
#include "util/wc_log.h"
#include "util/wc_name.h"

#define DEFAULT_SPOOL_DIR "/var/lib/collectd/wallclock"

void wc_config_init(struct wc_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->sample_hz = 49;
	cfg->kthreads = false;
	cfg->max_groups = 50;
	cfg->max_threads = 131072;
	cfg->exit_ring_kib = 0;
	cfg->unmatched_other = true;
	snprintf(cfg->spool_dir, sizeof(cfg->spool_dir), "%s",
		 DEFAULT_SPOOL_DIR);
	cfg->stacks = true;
	cfg->min_block_us = 1000;
	cfg->stack_entries = 16384;
	cfg->flush_interval_s = 60;
	cfg->top_stacks = 500;
	cfg->spool_gzip = false;
	cfg->render_svg = true;
	cfg->keep_files = 1440; /* a day of minutes */
	cfg->keep_hours = 168;
	cfg->keep_mib = 1024;
	cfg->unwind_tables = true;
	cfg->unwind_mib = 32;
}

void wc_config_free(struct wc_config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nsel; i++)
		if (cfg->sel[i].is_regex)
			regfree(&cfg->sel[i].re);
	free(cfg->sel);
	cfg->sel = NULL;
	cfg->nsel = 0;
}

/* Render a value the way the user wrote it, for error messages. */
static const char *show(const struct wc_cval *v, char *buf, size_t len)
{
	switch (v->type) {
	case WC_CVAL_STRING:
		snprintf(buf, len, "\"%s\"", v->s);
		break;
	case WC_CVAL_NUMBER:
		snprintf(buf, len, "%.15g", v->n); /* 4194305, not 4.1943e+06 */
		break;
	case WC_CVAL_BOOL:
		snprintf(buf, len, "%s", v->b ? "true" : "false");
		break;
	}
	return buf;
}

static int want_one(const char *key, int nvals, char *err, size_t errlen)
{
	if (nvals != 1)
		return wc_err(err, errlen, "%s takes exactly one value, got %d",
			      key, nvals);
	return 0;
}

static int get_uint(const char *key, const struct wc_cval *vals, int nvals,
		    unsigned int lo, unsigned int hi, unsigned int *out,
		    char *err, size_t errlen)
{
	char buf[64];
	double n;

	if (want_one(key, nvals, err, errlen))
		return -1;
	n = vals[0].n;
	if (vals[0].type != WC_CVAL_NUMBER || !isfinite(n) || n != floor(n) ||
	    n < lo || n > hi)
		return wc_err(err, errlen,
			      "%s %s: must be a whole number from %u to %u",
			      key, show(&vals[0], buf, sizeof(buf)), lo, hi);
	*out = (unsigned int)n;
	return 0;
}

static int get_bool(const char *key, const struct wc_cval *vals, int nvals,
		    bool *out, char *err, size_t errlen)
{
	char buf[64];

	if (want_one(key, nvals, err, errlen))
		return -1;
	if (vals[0].type != WC_CVAL_BOOL)
		return wc_err(err, errlen, "%s %s: must be true or false", key,
			      show(&vals[0], buf, sizeof(buf)));
	*out = vals[0].b;
	return 0;
}

static int get_string(const char *key, const struct wc_cval *v, size_t max,
		      char *err, size_t errlen)
{
	char buf[64];

	if (v->type != WC_CVAL_STRING)
		return wc_err(err, errlen, "%s %s: must be a quoted string",
			      key, show(v, buf, sizeof(buf)));
	if (v->s[0] == '\0')
		return wc_err(err, errlen, "%s \"\": must not be empty", key);
	if (strlen(v->s) >= max)
		return wc_err(err, errlen,
			      "%s \"%.40s...\": longer than %zu bytes", key,
			      v->s, max - 1);
	return 0;
}

static struct wc_selection *add_selection(struct wc_config *cfg,
					  const char *key, const char *label,
					  char *err, size_t errlen)
{
	struct wc_selection *s;
	char name[WC_NAME_MAX];
	size_t i;

	if (cfg->nsel >= WC_MAX_SELECTIONS) {
		wc_err(err, errlen, "%s \"%s\": more than %d selections", key,
		       label, WC_MAX_SELECTIONS);
		return NULL;
	}
	if (strcmp(label, WC_OTHER_GROUP) == 0) {
		wc_err(err, errlen,
		       "%s \"%s\": the group name \"%s\" is reserved for "
		       "unmatched processes",
		       key, label, WC_OTHER_GROUP);
		return NULL;
	}
	wc_name_sanitize(label, strlen(label), name, sizeof(name));
	for (i = 0; i < cfg->nsel; i++) {
		if (strcmp(cfg->sel[i].label, name) == 0) {
			wc_err(err, errlen,
			       "%s \"%s\": group \"%s\" is already defined",
			       key, label, name);
			return NULL;
		}
	}
	s = realloc(cfg->sel, (cfg->nsel + 1) * sizeof(*s));
	if (!s) {
		wc_err(err, errlen, "%s: out of memory", key);
		return NULL;
	}
	cfg->sel = s;
	s = &cfg->sel[cfg->nsel];
	memset(s, 0, sizeof(*s));
	snprintf(s->label, sizeof(s->label), "%s", name);
	return s;
}

static int set_process(struct wc_config *cfg, const char *key,
		       const struct wc_cval *vals, int nvals, char *err,
		       size_t errlen)
{
	struct wc_selection *s;

	if (want_one(key, nvals, err, errlen) ||
	    get_string(key, &vals[0], WC_NAME_MAX, err, errlen))
		return -1;
	s = add_selection(cfg, key, vals[0].s, err, errlen);
	if (!s)
		return -1;
	snprintf(s->comm, sizeof(s->comm), "%s", vals[0].s);
	cfg->nsel++;
	return 0;
}

/* How many copies of its atoms glibc's regcomp makes of an ERE, from
 * above: it copies the tree under an interval {m,n} n times and under a
 * '+' twice, so nested ones multiply: "((a{99}){99}){99}", eighty '+' or
 * thirty '*' in a row take it minutes and gigabytes.  Saturates. */
#define RE_DEPTH_MAX 64
#define RE_COPIES_MAX 1000

static size_t sat_add(size_t a, size_t b)
{
	return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t sat_mul(size_t a, size_t b)
{
	return b && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

/* past a bracket expression that starts at p ('['), or at its NUL */
static const char *skip_bracket(const char *p)
{
	p++;
	if (*p == '^')
		p++;
	if (*p == ']')
		p++;
	for (; *p && *p != ']'; p++) {
		char close = p[1];

		if (*p != '[' || (close != ':' && close != '.' && close != '='))
			continue;
		for (p += 2; *p && !(p[0] == close && p[1] == ']'); p++)
			;
		if (!*p)
			return p;
		p++;
	}
	return *p ? p + 1 : p;
}

/* an interval "{m}", "{m,}" or "{m,n}" at p: its largest count (m + 1 for
 * "{m,}"), and p moved past it; false if it is none */
static bool interval(const char **p, size_t *max)
{
	char *end;
	unsigned long m, n;

	if (!isdigit((unsigned char)(*p)[1]))
		return false;
	m = strtoul(*p + 1, &end, 10);
	n = m;
	if (*end == ',') {
		n = isdigit((unsigned char)end[1]) ? strtoul(end + 1, &end, 10)
						   : (end++, m + 1);
	}
	if (*end != '}')
		return false;
	*p = end;
	*max = n > m ? n : m;
	return true;
}

/* What a quantifier at p (moved to its end) multiplies its atom by, 0 if
 * it is none. */
static size_t quantifier(const char **p)
{
	size_t times = 0;

	if (**p == '*' || **p == '?')
		times = 1;
	else if (**p == '+')
		times = 2; /* "a+" is "aa*" */
	else if (**p == '{' && !interval(p, &times))
		times = 0;
	return times;
}

/* SIZE_MAX also for a quantifier right after another ("a**", ".*?"):
 * POSIX leaves it undefined, and regcomp's closure of nested stars is
 * exponential in their depth. */
static size_t regex_copies(const char *p)
{
	size_t sum[RE_DEPTH_MAX] = {0}, last[RE_DEPTH_MAX] = {0}, times, g;
	bool after_one = false;
	int d = 0;

	for (; *p; p++) {
		times = quantifier(&p);
		if (times && after_one)
			return SIZE_MAX;
		after_one = times > 0;
		if (times) {
			sum[d] = sat_add(sum[d], sat_mul(last[d], times - 1));
			last[d] = sat_mul(last[d], times);
		} else if (*p == '(' && d + 1 < RE_DEPTH_MAX) {
			d++;
			sum[d] = last[d] = 0;
		} else if (*p == '(') {
			return SIZE_MAX;
		} else if (*p == ')' && d > 0) {
			g = sum[d] ? sum[d] : 1;
			d--;
			last[d] = g;
			sum[d] = sat_add(sum[d], g);
		} else if (*p == '|') {
			last[d] = 0;
		} else {
			if (*p == '[')
				p = skip_bracket(p) - 1;
			else if (*p == '\\' && p[1])
				p++;
			last[d] = 1;
			sum[d] = sat_add(sum[d], 1);
		}
	}
	while (d > 0) {
		d--;
		sum[d] = sat_add(sum[d], sum[d + 1]);
	}
	return sum[0];
}

static int set_process_match(struct wc_config *cfg, const char *key,
			     const struct wc_cval *vals, int nvals, char *err,
			     size_t errlen)
{
	struct wc_selection *s;
	char why[128];
	int rc;

	if (nvals != 2)
		return wc_err(
			err, errlen,
			"%s takes a group name and a regex, got %d values", key,
			nvals);
	if (get_string(key, &vals[0], WC_NAME_MAX, err, errlen) ||
	    get_string(key, &vals[1], 4096, err, errlen))
		return -1;
	if (regex_copies(vals[1].s) > RE_COPIES_MAX)
		return wc_err(err, errlen,
			      "%s \"%s\" \"%s\": regex too complex (nested "
			      "repetitions copy it more than %d times, or a "
			      "repetition repeats another, as in \"**\" or "
			      "\".*?\")",
			      key, vals[0].s, vals[1].s, RE_COPIES_MAX);
	s = add_selection(cfg, key, vals[0].s, err, errlen);
	if (!s)
		return -1;
	rc = regcomp(&s->re, vals[1].s, REG_EXTENDED | REG_NOSUB);
	if (rc != 0) {
		regerror(rc, &s->re, why, sizeof(why));
		return wc_err(err, errlen, "%s \"%s\" \"%s\": bad regex: %s",
			      key, vals[0].s, vals[1].s, why);
	}
	s->is_regex = true;
	cfg->nsel++;
	return 0;
}

static int set_unmatched(struct wc_config *cfg, const char *key,
			 const struct wc_cval *vals, int nvals, char *err,
			 size_t errlen)
{
	if (want_one(key, nvals, err, errlen) ||
	    get_string(key, &vals[0], 16, err, errlen))
		return -1;
	if (strcasecmp(vals[0].s, "other") == 0)
		cfg->unmatched_other = true;
	else if (strcasecmp(vals[0].s, "drop") == 0)
		cfg->unmatched_other = false;
	else
		return wc_err(err, errlen,
			      "%s \"%s\": must be \"other\" or \"drop\"", key,
			      vals[0].s);
	return 0;
}

static int set_unwinding(struct wc_config *cfg, const char *key,
			 const struct wc_cval *vals, int nvals, char *err,
			 size_t errlen)
{
	if (want_one(key, nvals, err, errlen) ||
	    get_string(key, &vals[0], 16, err, errlen))
		return -1;
	if (strcasecmp(vals[0].s, "auto") == 0)
		cfg->unwind_tables = true;
	else if (strcasecmp(vals[0].s, "framepointer") == 0)
		cfg->unwind_tables = false;
	else
		return wc_err(err, errlen,
			      "%s \"%s\": must be \"auto\" or \"framepointer\"",
			      key, vals[0].s);
	return 0;
}

static int set_spool_dir(struct wc_config *cfg, const char *key,
			 const struct wc_cval *vals, int nvals, char *err,
			 size_t errlen)
{
	/* Leave room below PATH_MAX for the file names the spool makes. */
	if (want_one(key, nvals, err, errlen) ||
	    get_string(key, &vals[0], PATH_MAX - 128, err, errlen))
		return -1;
	if (vals[0].s[0] != '/')
		return wc_err(err, errlen,
			      "%s \"%s\": must be an absolute path", key,
			      vals[0].s);
	snprintf(cfg->spool_dir, sizeof(cfg->spool_dir), "%s", vals[0].s);
	return 0;
}

static int set_stack_option(struct wc_config *cfg, const char *key,
			    const struct wc_cval *vals, int nvals, char *err,
			    size_t errlen);

int wc_config_set(struct wc_config *cfg, const char *key,
		  const struct wc_cval *vals, int nvals, char *err,
		  size_t errlen)
{
	if (strcasecmp(key, "SampleFrequency") == 0)
		return get_uint(key, vals, nvals, WC_HZ_MIN, WC_HZ_MAX,
				&cfg->sample_hz, err, errlen);
	if (strcasecmp(key, "KernelThreads") == 0)
		return get_bool(key, vals, nvals, &cfg->kthreads, err, errlen);
	if (strcasecmp(key, "MaxGroups") == 0)
		return get_uint(key, vals, nvals, 1, WC_GROUPS_MAX,
				&cfg->max_groups, err, errlen);
	if (strcasecmp(key, "MaxThreads") == 0)
		return get_uint(key, vals, nvals, WC_THREADS_MIN,
				WC_THREADS_MAX, &cfg->max_threads, err, errlen);
	if (strcasecmp(key, "ExitBufferKiB") == 0)
		return get_uint(key, vals, nvals, WC_EXIT_KIB_MIN,
				WC_EXIT_KIB_MAX, &cfg->exit_ring_kib, err,
				errlen);
	if (strcasecmp(key, "Process") == 0)
		return set_process(cfg, key, vals, nvals, err, errlen);
	if (strcasecmp(key, "ProcessMatch") == 0)
		return set_process_match(cfg, key, vals, nvals, err, errlen);
	if (strcasecmp(key, "Unmatched") == 0)
		return set_unmatched(cfg, key, vals, nvals, err, errlen);
	if (strcasecmp(key, "SpoolDir") == 0)
		return set_spool_dir(cfg, key, vals, nvals, err, errlen);
	return set_stack_option(cfg, key, vals, nvals, err, errlen);
}

/* The stack and spool options; the last in the chain, so it names
 * unknown keys. */
static int set_stack_option(struct wc_config *cfg, const char *key,
			    const struct wc_cval *vals, int nvals, char *err,
			    size_t errlen)
{
	if (strcasecmp(key, "Stacks") == 0)
		return get_bool(key, vals, nvals, &cfg->stacks, err, errlen);
	if (strcasecmp(key, "MinBlockMicroseconds") == 0)
		return get_uint(key, vals, nvals, 0, WC_MIN_BLOCK_US_MAX,
				&cfg->min_block_us, err, errlen);
	if (strcasecmp(key, "StackStorage") == 0)
		return get_uint(key, vals, nvals, WC_STACKS_MIN, WC_STACKS_MAX,
				&cfg->stack_entries, err, errlen);
	if (strcasecmp(key, "FlushInterval") == 0)
		return get_uint(key, vals, nvals, 1, WC_FLUSH_S_MAX,
				&cfg->flush_interval_s, err, errlen);
	if (strcasecmp(key, "TopStacks") == 0)
		return get_uint(key, vals, nvals, 1, WC_TOP_STACKS_MAX,
				&cfg->top_stacks, err, errlen);
	if (strcasecmp(key, "RenderSVG") == 0)
		return get_bool(key, vals, nvals, &cfg->render_svg, err,
				errlen);
	if (strcasecmp(key, "SpoolCompress") == 0)
		return get_bool(key, vals, nvals, &cfg->spool_gzip, err,
				errlen);
	if (strcasecmp(key, "SpoolKeepFiles") == 0)
		return get_uint(key, vals, nvals, 0, 10000000, &cfg->keep_files,
				err, errlen);
	if (strcasecmp(key, "SpoolKeepHours") == 0)
		return get_uint(key, vals, nvals, 0, 87600, &cfg->keep_hours,
				err, errlen);
	if (strcasecmp(key, "SpoolKeepMiB") == 0)
		return get_uint(key, vals, nvals, 0, 16777216, &cfg->keep_mib,
				err, errlen);
	if (strcasecmp(key, "UserStackUnwinding") == 0)
		return set_unwinding(cfg, key, vals, nvals, err, errlen);
	if (strcasecmp(key, "UnwindTableMiB") == 0)
		return get_uint(key, vals, nvals, WC_UNWIND_MIB_MIN,
				WC_UNWIND_MIB_MAX, &cfg->unwind_mib, err,
				errlen);
	return wc_err(err, errlen, "unknown option \"%s\"", key);
}

/* collectd runs as root: a spool another user can write to, or a symlink
 * standing in for it, would let that user aim our writes anywhere. */
static int check_spool_dir(const char *path, char *err, size_t errlen)
{
	char name[PATH_MAX], parent[PATH_MAX];
	size_t n = strlen(path);
	struct stat st;

	/* lstat("link/") follows the link: look at the name itself. */
	while (n > 1 && path[n - 1] == '/')
		n--;
	snprintf(name, sizeof(name), "%.*s", (int)n, path);
	if (lstat(name, &st) == 0) {
		if (S_ISLNK(st.st_mode))
			return wc_err(err, errlen,
				      "SpoolDir \"%s\": is a symbolic link; "
				      "name the real directory",
				      path);
		if (!S_ISDIR(st.st_mode))
			return wc_err(err, errlen,
				      "SpoolDir \"%s\": exists and is not a "
				      "directory",
				      path);
		if (st.st_mode & (S_IWGRP | S_IWOTH))
			return wc_err(err, errlen,
				      "SpoolDir \"%s\": is writable by other "
				      "users (mode %04o); chmod go-w it",
				      path, (unsigned)(st.st_mode & 07777));
		if (st.st_uid != geteuid())
			return wc_err(err, errlen,
				      "SpoolDir \"%s\": is owned by uid %u, "
				      "not by the user collectd runs as (%u)",
				      path, (unsigned)st.st_uid,
				      (unsigned)geteuid());
		return 0;
	}
	if (errno != ENOENT)
		return wc_err(err, errlen, "SpoolDir \"%s\": %s", path,
			      strerror(errno));
	snprintf(parent, sizeof(parent), "%s", path);
	if (stat(dirname(parent), &st) != 0 || !S_ISDIR(st.st_mode))
		return wc_err(err, errlen,
			      "SpoolDir \"%s\": its parent directory does not "
			      "exist",
			      path);
	return 0;
}

int wc_config_finish(struct wc_config *cfg, char *err, size_t errlen)
{
	return check_spool_dir(cfg->spool_dir, err, errlen);
}

unsigned int wc_config_exit_ring_kib(const struct wc_config *cfg, int ncpus)
{
	unsigned long kib;

	if (cfg->exit_ring_kib)
		return cfg->exit_ring_kib;
	kib = (unsigned long)(ncpus > 0 ? ncpus : 1) * WC_EXIT_KIB_PER_CPU;
	if (kib < WC_EXIT_KIB_AUTO_MIN)
		kib = WC_EXIT_KIB_AUTO_MIN;
	if (kib > WC_EXIT_KIB_AUTO_MAX)
		kib = WC_EXIT_KIB_AUTO_MAX;
	return (unsigned int)kib;
}
