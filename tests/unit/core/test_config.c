/*
 * test_config.c - the configuration: defaults, every option's accepted
 * values, every error path of wc_config_set() (each message must name the
 * option and the offending value), and wc_config_finish()'s checks on the
 * spool directory, made for real under a temporary directory.
 */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/wc_config.h"

static char err[512];

static struct wc_cval str_v(const char *s)
{
	return (struct wc_cval){.type = WC_CVAL_STRING, .s = s};
}

static struct wc_cval num_v(double n)
{
	return (struct wc_cval){.type = WC_CVAL_NUMBER, .n = n};
}

static struct wc_cval bool_v(bool b)
{
	return (struct wc_cval){.type = WC_CVAL_BOOL, .b = b};
}

static int set(struct wc_config *c, const char *key, const struct wc_cval *v,
	       int n)
{
	strcpy(err, "(untouched)");
	return wc_config_set(c, key, v, n, err, sizeof(err));
}

static int set1(struct wc_config *c, const char *key, struct wc_cval v)
{
	return set(c, key, &v, 1);
}

static bool at_defaults(const struct wc_config *c)
{
	struct wc_config d;

	wc_config_init(&d);
	return c->sample_hz == d.sample_hz && c->kthreads == d.kthreads &&
	       c->max_groups == d.max_groups &&
	       c->max_threads == d.max_threads &&
	       c->exit_ring_kib == d.exit_ring_kib &&
	       c->unmatched_other == d.unmatched_other &&
	       strcmp(c->spool_dir, d.spool_dir) == 0 && c->nsel == 0;
}

/* CHECKs inside a helper report the helper's line: add the caller's. */
static int sub_begin(void)
{
	int failed_before = check_cur_failed;

	check_cur_failed = 0;
	return failed_before;
}

static void sub_end(int failed_before, int line)
{
	if (check_cur_failed)
		printf("  (from line %d)\n", line);
	check_cur_failed |= failed_before;
}

/*
 * The option must be refused with a message naming it and `needle` (the
 * offending value, as written).  With c NULL it is tried on a fresh config,
 * which must come out unchanged.
 */
static void refused_at(int line, struct wc_config *c, const char *key,
		       const struct wc_cval *v, int n, const char *needle)
{
	int failed_before = sub_begin();
	struct wc_config fresh;

	wc_config_init(&fresh);
	CHECK(set(c ? c : &fresh, key, v, n) == -1);
	CHECK_STR_HAS(err, key);
	CHECK_STR_HAS(err, needle);
	CHECK(c || at_defaults(&fresh));
	wc_config_free(&fresh);
	sub_end(failed_before, line);
}

#define NVALS(a) ((int)(sizeof(a) / sizeof((a)[0])))
/* BAD(config or NULL, key, needle, values...) */
#define BAD(c, key, needle, ...)                                               \
	do {                                                                   \
		const struct wc_cval v_[] = {__VA_ARGS__};                     \
		refused_at(__LINE__, c, key, v_, NVALS(v_), needle);           \
	} while (0)
#define BAD_NONE(key) refused_at(__LINE__, NULL, key, NULL, 0, "got 0")

static void test_defaults(void)
{
	struct wc_config c;

	wc_config_init(&c);
	CHECK(c.sample_hz == 49);
	CHECK(!c.kthreads);
	CHECK(c.max_groups == 50);
	CHECK(c.max_threads == 131072);
	CHECK(c.exit_ring_kib == 0);
	CHECK(c.unmatched_other);
	CHECK(strcmp(c.spool_dir, "/var/lib/collectd/wallclock") == 0);
	CHECK(c.nsel == 0 && c.sel == NULL);
	wc_config_free(&c);
}

static void test_unknown_key(void)
{
	BAD(NULL, "Frobnicate", "\"Frobnicate\"", num_v(1));
	BAD(NULL, "SampleFreq", "\"SampleFreq\"", num_v(1));
}

/* The whole-number options, with their documented bounds. */
static const struct uint_opt {
	const char *key;
	unsigned int lo, hi;
	size_t off;
} uint_opts[] = {
	{"SampleFrequency", 1, 1000, offsetof(struct wc_config, sample_hz)},
	{"MaxGroups", 1, 1000, offsetof(struct wc_config, max_groups)},
	{"MaxThreads", 1024, 4194304, offsetof(struct wc_config, max_threads)},
	{"ExitBufferKiB", 64, 262144,
	 offsetof(struct wc_config, exit_ring_kib)},
};

static unsigned int get_field(const struct wc_config *c, size_t off)
{
	return *(const unsigned int *)((const char *)c + off);
}

static void accepts_uint(const struct uint_opt *o, unsigned int n)
{
	struct wc_config c;

	wc_config_init(&c);
	CHECK(set1(&c, o->key, num_v(n)) == 0);
	if (get_field(&c, o->off) != n) {
		printf("  %s %u: stored %u\n", o->key, n,
		       get_field(&c, o->off));
		check_cur_failed = 1;
	}
	wc_config_free(&c);
}

static void refuses_num(const struct uint_opt *o, double n, const char *fmt)
{
	char needle[64], range[64];

	snprintf(needle, sizeof(needle), fmt, n);
	snprintf(range, sizeof(range), "from %u to %u", o->lo, o->hi);
	BAD(NULL, o->key, needle, num_v(n));
	CHECK_STR_HAS(err, range);
}

static void test_uint_options_accept(void)
{
	size_t i;

	for (i = 0; i < sizeof(uint_opts) / sizeof(uint_opts[0]); i++) {
		accepts_uint(&uint_opts[i], uint_opts[i].lo);
		accepts_uint(&uint_opts[i], uint_opts[i].hi);
		accepts_uint(&uint_opts[i], uint_opts[i].lo + 1);
	}
	accepts_uint(&uint_opts[0], 49);
	accepts_uint(&uint_opts[2], 131072);
}

static void test_uint_options_refuse(void)
{
	size_t i;

	for (i = 0; i < sizeof(uint_opts) / sizeof(uint_opts[0]); i++) {
		const struct uint_opt *o = &uint_opts[i];

		refuses_num(o, o->lo - 1.0, " %.0f:");
		refuses_num(o, o->hi + 1.0, " %.0f:");
		refuses_num(o, -1, " %.0f:");
		refuses_num(o, o->lo + 0.5, " %.1f:");
		refuses_num(o, NAN, " %f:");
		refuses_num(o, INFINITY, " %f:");
		refuses_num(o, -INFINITY, " %f:");
		BAD(NULL, o->key, "\"49\"", str_v("49"));
		BAD(NULL, o->key, "true", bool_v(true));
		BAD_NONE(o->key);
		BAD(NULL, o->key, "got 2", num_v(o->lo), num_v(o->lo));
	}
	/* The values users actually get wrong. */
	refuses_num(&uint_opts[0], 49.5, " %.1f:");
	refuses_num(&uint_opts[0], 0, " %.0f:");
	refuses_num(&uint_opts[0], 1001, " %.0f:");
	refuses_num(&uint_opts[2], 1023, " %.0f:");
	refuses_num(&uint_opts[2], 4194305, " %.0f:");
	refuses_num(&uint_opts[3], 262145, " %.0f:");
	refuses_num(&uint_opts[3], 1e12, " %.0f:");
}

static void test_key_case_insensitive(void)
{
	struct wc_config c;

	wc_config_init(&c);
	CHECK(set1(&c, "samplefrequency", num_v(99)) == 0);
	CHECK(set1(&c, "KERNELTHREADS", bool_v(true)) == 0);
	CHECK(c.sample_hz == 99 && c.kthreads);
	wc_config_free(&c);
}

static void test_kernel_threads(void)
{
	struct wc_config c;

	wc_config_init(&c);
	CHECK(set1(&c, "KernelThreads", bool_v(true)) == 0 && c.kthreads);
	CHECK(set1(&c, "KernelThreads", bool_v(false)) == 0 && !c.kthreads);
	wc_config_free(&c);
	BAD(NULL, "KernelThreads", "\"true\"", str_v("true"));
	BAD(NULL, "KernelThreads", " 1:", num_v(1));
	BAD_NONE("KernelThreads");
	BAD(NULL, "KernelThreads", "got 2", bool_v(true), bool_v(true));
}

static void test_process_accept(void)
{
	struct wc_config c;

	wc_config_init(&c);
	CHECK(set1(&c, "Process", str_v("nginx")) == 0);
	CHECK(set1(&c, "Process", str_v("my app/x")) == 0);
	CHECK(c.nsel == 2);
	if (c.nsel == 2) {
		CHECK(strcmp(c.sel[0].label, "nginx") == 0);
		CHECK(strcmp(c.sel[0].comm, "nginx") == 0);
		CHECK(!c.sel[0].is_regex);
		/* The label is a safe group name; the comm stays as written. */
		CHECK(strcmp(c.sel[1].label, "my_app_x") == 0);
		CHECK(strcmp(c.sel[1].comm, "my app/x") == 0);
	}
	wc_config_free(&c);
	CHECK(c.sel == NULL && c.nsel == 0);
}

static void test_process_refuse(void)
{
	struct wc_config c;
	char longname[WC_NAME_MAX + 1];

	BAD(NULL, "Process", "\"\"", str_v(""));
	BAD(NULL, "Process", " 5:", num_v(5));
	BAD(NULL, "Process", "true", bool_v(true));
	BAD_NONE("Process");
	BAD(NULL, "Process", "got 2", str_v("a"), str_v("b"));
	BAD(NULL, "Process", "\"other\"", str_v("other"));
	memset(longname, 'n', WC_NAME_MAX);
	longname[WC_NAME_MAX] = '\0';
	BAD(NULL, "Process", "\"nnnnnnnn", str_v(longname));
	longname[WC_NAME_MAX - 1] = '\0';
	wc_config_init(&c);
	CHECK(set1(&c, "Process", str_v(longname)) == 0);
	wc_config_free(&c);
}

/* Two selections must never feed one group: that includes labels that
 * only become equal once sanitised. */
static void test_duplicate_labels(void)
{
	struct wc_config c;

	wc_config_init(&c);
	CHECK(set1(&c, "Process", str_v("nginx")) == 0);
	BAD(&c, "Process", "\"nginx\"", str_v("nginx"));
	CHECK(set1(&c, "Process", str_v("a/b")) == 0);
	BAD(&c, "Process", "\"a_b\"", str_v("a_b"));
	BAD(&c, "ProcessMatch", "\"nginx\"", str_v("nginx"), str_v("x"));
	CHECK(set(&c, "ProcessMatch",
		  (const struct wc_cval[]){str_v("web"), str_v("httpd")},
		  2) == 0);
	BAD(&c, "Process", "\"web\"", str_v("web"));
	BAD(&c, "ProcessMatch", "\"a;b\"", str_v("a;b"), str_v("y"));
	CHECK(c.nsel == 3);
	wc_config_free(&c);
}

static void test_too_many_selections(void)
{
	struct wc_config c;
	char name[16];
	int i;

	wc_config_init(&c);
	for (i = 0; i < WC_MAX_SELECTIONS; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		CHECK(set1(&c, "Process", str_v(name)) == 0);
	}
	BAD(&c, "Process", "\"p256\"", str_v("p256"));
	CHECK_STR_HAS(err, "256");
	BAD(&c, "ProcessMatch", "\"m\"", str_v("m"), str_v("x"));
	CHECK(c.nsel == WC_MAX_SELECTIONS);
	wc_config_free(&c);
}

static void test_process_match(void)
{
	struct wc_config c;
	const struct wc_cval ok[] = {str_v("jvm"), str_v("^java .*-jar")};

	wc_config_init(&c);
	CHECK(set(&c, "ProcessMatch", ok, 2) == 0);
	CHECK(c.nsel == 1);
	if (c.nsel == 1) {
		CHECK(c.sel[0].is_regex);
		CHECK(strcmp(c.sel[0].label, "jvm") == 0);
		CHECK(regexec(&c.sel[0].re, "java -jar x", 0, NULL, 0) == 0);
		CHECK(regexec(&c.sel[0].re, "javac x", 0, NULL, 0) != 0);
	}
	wc_config_free(&c);
	BAD(NULL, "ProcessMatch", "got 1", str_v("jvm"));
	BAD(NULL, "ProcessMatch", "got 3", str_v("a"), str_v("b"), str_v("c"));
	refused_at(__LINE__, NULL, "ProcessMatch", NULL, 0, "got 0");
	BAD(NULL, "ProcessMatch", "\"(\"", str_v("x"), str_v("("));
	CHECK_STR_HAS(err, "bad regex");
	BAD(NULL, "ProcessMatch", "\"\"", str_v(""), str_v("x"));
	BAD(NULL, "ProcessMatch", "\"\"", str_v("x"), str_v(""));
	BAD(NULL, "ProcessMatch", " 7:", num_v(7), str_v("x"));
	BAD(NULL, "ProcessMatch", " 7:", str_v("x"), num_v(7));
	BAD(NULL, "ProcessMatch", "\"other\"", str_v("other"), str_v("x"));
}

/*
 * Regexes that glibc's regcomp would take minutes and gigabytes over
 * (found by tests/fuzz: fuzz_config) are refused before it sees them;
 * the ones people write still compile.
 */
static void test_process_match_complexity(void)
{
	static const char *const fine[] = {
		"^/usr/sbin/(nginx|apache2)( |$)",
		"[0-9]{1,3}(\\.[0-9]{1,3}){3}",
		"^java .*-jar [^ ]+\\.jar",
		"(a{30}){30}",
		"[[:alpha:]]+[]{}*+]{2,}",
	};
	char plus[90], deep[142];
	size_t i;

	for (i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		const struct wc_cval v[] = {str_v("g"), str_v(fine[i])};
		struct wc_config c;

		wc_config_init(&c);
		CHECK(set(&c, "ProcessMatch", v, 2) == 0);
		wc_config_free(&c);
	}
	memset(plus, '+', sizeof(plus) - 1);
	plus[0] = 'a';
	plus[sizeof(plus) - 1] = '\0';
	BAD(NULL, "ProcessMatch", "too complex", str_v("g"),
	    str_v("((a{99}){99}){99}"));
	BAD(NULL, "ProcessMatch", "too complex", str_v("g"), str_v(plus));
	BAD(NULL, "ProcessMatch", "too complex", str_v("g"),
	    str_v("^/************************++"));
	BAD(NULL, "ProcessMatch", "\".*?\"", str_v("g"), str_v("nginx.*?w"));
	/* deeper than the check follows: 70 '(', 'a', 70 ')' */
	memset(deep, '(', 70);
	deep[70] = 'a';
	memset(deep + 71, ')', 70);
	deep[141] = '\0';
	BAD(NULL, "ProcessMatch", "too complex", str_v("g"), str_v(deep));
}

static void test_unmatched(void)
{
	static const struct {
		const char *value;
		bool other;
	} accepted[] = {
		{"other", true},
		{"drop", false},
		{"DROP", false},
		{"Other", true},
	};
	struct wc_config c;
	size_t i;

	for (i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		wc_config_init(&c);
		/* Start from the opposite, so a no-op cannot pass. */
		c.unmatched_other = !accepted[i].other;
		CHECK(set1(&c, "Unmatched", str_v(accepted[i].value)) == 0);
		CHECK(c.unmatched_other == accepted[i].other);
		wc_config_free(&c);
	}
	BAD(NULL, "Unmatched", "\"maybe\"", str_v("maybe"));
	BAD(NULL, "Unmatched", "\"\"", str_v(""));
	BAD(NULL, "Unmatched", " 0:", num_v(0));
	BAD(NULL, "Unmatched", "false", bool_v(false));
	BAD(NULL, "Unmatched", "\"dropdropdropdrop", str_v("dropdropdropdrop"));
	BAD_NONE("Unmatched");
	BAD(NULL, "Unmatched", "got 2", str_v("drop"), str_v("drop"));
}

static void test_unwinding(void)
{
	struct wc_config c;

	wc_config_init(&c);
	CHECK(c.unwind_tables && c.unwind_mib == 32);
	CHECK(set1(&c, "UserStackUnwinding", str_v("AUTO")) == 0 &&
	      c.unwind_tables);
	CHECK(set1(&c, "UserStackUnwinding", str_v("framepointer")) == 0 &&
	      !c.unwind_tables);
	wc_config_free(&c);
	BAD(NULL, "UserStackUnwinding", "\"dwarf\"", str_v("dwarf"));
	BAD(NULL, "UserStackUnwinding", "true", bool_v(true));
	BAD_NONE("UserStackUnwinding");
}

static void test_spool_dir_set(void)
{
	static char path[PATH_MAX];
	struct wc_config c;

	wc_config_init(&c);
	CHECK(set1(&c, "SpoolDir", str_v("/srv/spool")) == 0);
	CHECK(strcmp(c.spool_dir, "/srv/spool") == 0);
	wc_config_free(&c);
	BAD(NULL, "SpoolDir", "\"spool\"", str_v("spool"));
	BAD(NULL, "SpoolDir", "\"./spool\"", str_v("./spool"));
	BAD(NULL, "SpoolDir", "\"\"", str_v(""));
	BAD(NULL, "SpoolDir", " 1:", num_v(1));
	BAD_NONE("SpoolDir");
	BAD(NULL, "SpoolDir", "got 2", str_v("/a"), str_v("/b"));
	/* Room must stay below PATH_MAX for the spool's own file names. */
	memset(path, 'a', PATH_MAX - 128);
	path[0] = '/';
	path[PATH_MAX - 128] = '\0';
	BAD(NULL, "SpoolDir", "\"/aaaaaaaaaaaaaaaaaaaaaaaaaaa", str_v(path));
	path[PATH_MAX - 129] = '\0';
	wc_config_init(&c);
	CHECK(set1(&c, "SpoolDir", str_v(path)) == 0);
	CHECK(strcmp(c.spool_dir, path) == 0);
	wc_config_free(&c);
}

/* Stack and spool options: defaults, the accepted range's ends, and a
 * refusal on each side of it. */
static void test_stack_options(void)
{
	static const struct {
		const char *key;
		double lo, hi;
	} ranges[] = {
		{"MinBlockMicroseconds", 0, 60000000},
		{"StackStorage", 1024, 1048576},
		{"FlushInterval", 1, 86400},
		{"TopStacks", 1, 1000000},
		{"SpoolKeepFiles", 0, 10000000},
		{"SpoolKeepHours", 0, 87600},
		{"SpoolKeepMiB", 0, 16777216},
		{"UnwindTableMiB", 1, 4096},
	};
	struct wc_config c;
	size_t i;

	wc_config_init(&c);
	CHECK(c.stacks && c.min_block_us == 1000 && c.stack_entries == 16384);
	CHECK(c.flush_interval_s == 60 && c.top_stacks == 500);
	CHECK(!c.spool_gzip && c.keep_files == 1440 && c.keep_hours == 168 &&
	      c.keep_mib == 1024);
	CHECK(set1(&c, "Stacks", bool_v(false)) == 0 && !c.stacks);
	CHECK(set1(&c, "SpoolCompress", bool_v(true)) == 0 && c.spool_gzip);
	CHECK(c.render_svg);
	CHECK(set1(&c, "RenderSVG", bool_v(false)) == 0 && !c.render_svg);
	CHECK(set1(&c, "MinBlockMicroseconds", num_v(250)) == 0 &&
	      c.min_block_us == 250);
	wc_config_free(&c);
	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		wc_config_init(&c);
		CHECK(set1(&c, ranges[i].key, num_v(ranges[i].lo)) == 0);
		CHECK(set1(&c, ranges[i].key, num_v(ranges[i].hi)) == 0);
		wc_config_free(&c);
		if (ranges[i].lo > 0)
			BAD(NULL, ranges[i].key, "must be a whole number",
			    num_v(ranges[i].lo - 1));
		BAD(NULL, ranges[i].key, "must be a whole number",
		    num_v(ranges[i].hi + 1));
		BAD(NULL, ranges[i].key, "must be a whole number", num_v(1.5));
		BAD(NULL, ranges[i].key, "must be a whole number", str_v("10"));
		BAD_NONE(ranges[i].key);
	}
	BAD(NULL, "Stacks", "must be true or false", num_v(1));
	BAD(NULL, "SpoolCompress", "must be true or false", str_v("gzip"));
	BAD(NULL, "RenderSVG", "must be true or false", num_v(0));
}

/* --- wc_config_finish: the spool directory on disk --- */

static char tmpdir[64];

static const char *in_tmp(const char *name)
{
	static char path[2][PATH_MAX];
	static int which;

	which ^= 1;
	snprintf(path[which], PATH_MAX, "%s/%s", tmpdir, name);
	return path[which];
}

static bool make_tmp(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/wc-test-config-XXXXXX");
	if (mkdtemp(tmpdir))
		return true;
	printf("  mkdtemp: %s\n", strerror(errno));
	check_cur_failed = 1;
	return false;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_tmp(void)
{
	CHECK(nftw(tmpdir, rm_one, 8, FTW_DEPTH | FTW_PHYS) == 0);
}

static int finish_with(const char *spool)
{
	struct wc_config c;
	int rc;

	wc_config_init(&c);
	CHECK(set1(&c, "SpoolDir", str_v(spool)) == 0);
	strcpy(err, "(untouched)");
	rc = wc_config_finish(&c, err, sizeof(err));
	wc_config_free(&c);
	return rc;
}

static void finish_refused(int line, const char *spool, const char *needle)
{
	int failed_before = sub_begin();

	CHECK(finish_with(spool) == -1);
	CHECK_STR_HAS(err, "SpoolDir");
	CHECK_STR_HAS(err, spool);
	CHECK_STR_HAS(err, needle);
	sub_end(failed_before, line);
}

#define FINISH_BAD(spool, needle) finish_refused(__LINE__, spool, needle)

static void test_finish_good(void)
{
	if (!make_tmp())
		return;
	CHECK(chmod(tmpdir, 0700) == 0);
	CHECK(finish_with(tmpdir) == 0);
	CHECK(chmod(tmpdir, 0755) == 0);
	CHECK(finish_with(tmpdir) == 0);
	/* Not there yet is fine: the spool makes it. */
	CHECK(finish_with(in_tmp("new")) == 0);
	remove_tmp();
}

static void test_finish_not_a_dir(void)
{
	FILE *f;

	if (!make_tmp())
		return;
	f = fopen(in_tmp("file"), "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	FINISH_BAD(in_tmp("file"), "not a directory");
	/* A path through a file fails in lstat itself, not with ENOENT. */
	FINISH_BAD(in_tmp("file/spool"), strerror(ENOTDIR));
	remove_tmp();
}

static void test_finish_symlink(void)
{
	if (!make_tmp())
		return;
	CHECK(mkdir(in_tmp("real"), 0700) == 0);
	CHECK(symlink(in_tmp("real"), in_tmp("link")) == 0);
	FINISH_BAD(in_tmp("link"), "symbolic link");
	/* A trailing slash makes lstat() follow the link: still refused. */
	FINISH_BAD(in_tmp("link/"), "symbolic link");
	CHECK(symlink(in_tmp("nowhere"), in_tmp("dangling")) == 0);
	FINISH_BAD(in_tmp("dangling"), "symbolic link");
	CHECK(finish_with(in_tmp("real")) == 0);
	remove_tmp();
}

static void test_finish_writable_by_others(void)
{
	static const mode_t modes[] = {0770, 0777, 0720, 0702, 01777};
	char needle[32];
	size_t i;

	if (!make_tmp())
		return;
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		CHECK(chmod(tmpdir, modes[i]) == 0);
		snprintf(needle, sizeof(needle), "mode %04o",
			 (unsigned)modes[i]);
		FINISH_BAD(tmpdir, needle);
		CHECK_STR_HAS(err, "writable by other users");
	}
	CHECK(chmod(tmpdir, 0700) == 0);
	remove_tmp();
}

static void test_finish_foreign_owner(void)
{
	if (geteuid() != 0)
		SKIP("needs root: chown to another uid");
	if (!make_tmp())
		return;
	CHECK(chown(tmpdir, 65534, 65534) == 0);
	FINISH_BAD(tmpdir, "owned by uid 65534");
	remove_tmp();
}

static void test_finish_parent_missing(void)
{
	if (!make_tmp())
		return;
	FINISH_BAD(in_tmp("nope/spool"), "parent directory does not exist");
	remove_tmp();
}

/* Unset, the exit ring grows with the CPUs (exits are bounded by them)
 * within 1-16 MiB; ExitBufferKiB wins when given. */
static void test_exit_ring_size(void)
{
	struct wc_config c;

	wc_config_init(&c);
	CHECK(wc_config_exit_ring_kib(&c, 1) == 1024);
	CHECK(wc_config_exit_ring_kib(&c, 2) == 1024);
	CHECK(wc_config_exit_ring_kib(&c, 8) == 4096);
	CHECK(wc_config_exit_ring_kib(&c, 32) == 16384);
	CHECK(wc_config_exit_ring_kib(&c, 256) == 16384);
	CHECK(wc_config_exit_ring_kib(&c, 0) == 1024);
	CHECK(set1(&c, "ExitBufferKiB", num_v(64)) == 0);
	CHECK(wc_config_exit_ring_kib(&c, 256) == 64);
	wc_config_free(&c);
}

int main(void)
{
	check_prog = "test_config";
	RUN(test_defaults);
	RUN(test_unknown_key);
	RUN(test_uint_options_accept);
	RUN(test_uint_options_refuse);
	RUN(test_key_case_insensitive);
	RUN(test_kernel_threads);
	RUN(test_process_accept);
	RUN(test_process_refuse);
	RUN(test_duplicate_labels);
	RUN(test_too_many_selections);
	RUN(test_process_match);
	RUN(test_process_match_complexity);
	RUN(test_unmatched);
	RUN(test_unwinding);
	RUN(test_spool_dir_set);
	RUN(test_finish_good);
	RUN(test_finish_not_a_dir);
	RUN(test_finish_symlink);
	RUN(test_stack_options);
	RUN(test_finish_writable_by_others);
	RUN(test_finish_foreign_owner);
	RUN(test_finish_parent_missing);
	RUN(test_exit_ring_size);
	return check_done();
}
