/*
 * test_select.c - which group a process lands in: automatic names, kernel
 * threads, Process against the kernel's truncated comm, ProcessMatch over
 * the command line (through an injected reader, so nothing here depends on
 * the processes of the machine running it), order, and Unmatched.
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "core/wc_select.h"

#define ARGV(tgid, s)                                                          \
	{                                                                      \
		tgid, s, sizeof(s) - 1                                         \
	}

/* Canned /proc/TGID/cmdline contents; any other tgid has none. */
static const struct {
	uint32_t tgid;
	const char *argv;
	size_t len;
} cmdlines[] = {
	ARGV(100, "java\0-jar\0app.jar\0"),
	ARGV(101, "python3\0script.py\0"),
	ARGV(102, "nginx: worker process\0\0\0"),
	ARGV(103, "/usr/bin/x\0"),
	ARGV(104, ""), /* a zombie's */
};

static char huge[6000];
static int reader_calls;

static long fake_cmdline(uint32_t tgid, char *buf, size_t len)
{
	const char *src = NULL;
	size_t i, n = 0;

	reader_calls++;
	for (i = 0; i < sizeof(cmdlines) / sizeof(cmdlines[0]); i++) {
		if (cmdlines[i].tgid == tgid) {
			src = cmdlines[i].argv;
			n = cmdlines[i].len;
		}
	}
	/* Longer than any buffer: the reader fills it to the brim. */
	if (tgid == 200) {
		src = huge;
		n = sizeof(huge);
	}
	if (!src)
		return -1;
	n = n < len ? n : len;
	memcpy(buf, src, n);
	return (long)n;
}

struct sel {
	struct wc_config cfg;
	struct wc_selector s;
	char name[WC_NAME_MAX];
	size_t index;
	bool unsure;
};

static void sel_init(struct sel *t)
{
	wc_config_init(&t->cfg);
}

static struct wc_cval str_v(const char *s)
{
	return (struct wc_cval){.type = WC_CVAL_STRING, .s = s};
}

/* Process name, or with a regex, ProcessMatch name regex. */
static void add_sel(struct sel *t, const char *name, const char *re)
{
	const struct wc_cval v[2] = {str_v(name), str_v(re)};
	const char *key = re ? "ProcessMatch" : "Process";
	char err[256];

	if (wc_config_set(&t->cfg, key, v, re ? 2 : 1, err, sizeof(err))) {
		printf("  %s\n", err);
		check_cur_failed = 1;
	}
}

static void drop_unmatched(struct sel *t)
{
	t->cfg.unmatched_other = false;
}

/* Call after the selections are all added. */
static void sel_ready(struct sel *t)
{
	wc_selector_init(&t->s, &t->cfg, fake_cmdline);
	reader_calls = 0;
}

static enum wc_verdict pick(struct sel *t, uint32_t tgid, const char *comm,
			    bool kthread)
{
	char c[16] = {0};

	/* Exactly 16 bytes, as the record carries it. */
	memcpy(c, comm, strnlen(comm, sizeof(c)));
	t->index = 999;
	memset(t->name, 'X', sizeof(t->name) - 1);
	t->name[sizeof(t->name) - 1] = '\0';
	return wc_select(&t->s, tgid, c, kthread, &t->index, t->name,
			 &t->unsure);
}

static void expect(int line, struct sel *t, enum wc_verdict got,
		   enum wc_verdict want, size_t index, const char *name)
{
	bool named = want == WC_SEL_EXPLICIT || want == WC_SEL_AUTO;

	if (got != want || (want == WC_SEL_EXPLICIT && t->index != index) ||
	    (named && strcmp(t->name, name) != 0)) {
		printf("  %s:%d: verdict %d index %zu name \"%s\", want %d "
		       "index %zu name \"%s\"\n",
		       __FILE__, line, got, t->index, t->name, want, index,
		       name);
		check_cur_failed = 1;
	}
}

/* EXPECT(sel, tgid, comm, kthread, verdict, index, name) */
#define EXPECT(t, tgid, comm, kt, want, index, name)                           \
	expect(__LINE__, t, pick(t, tgid, comm, kt), want, index, name)

static void test_auto_names(void)
{
	struct sel t;

	sel_init(&t);
	sel_ready(&t);
	EXPECT(&t, 1, "nginx", false, WC_SEL_AUTO, 0, "nginx");
	EXPECT(&t, 1, "my app", false, WC_SEL_AUTO, 0, "my_app");
	EXPECT(&t, 1, "..", false, WC_SEL_AUTO, 0, "_.");
	EXPECT(&t, 1, "other", false, WC_SEL_AUTO, 0, "other_");
	EXPECT(&t, 1, "", false, WC_SEL_AUTO, 0, "unknown");
	/* Without ProcessMatch nobody needs a command line. */
	CHECK(!t.s.need_cmdline && reader_calls == 0);
	wc_config_free(&t.cfg);
}

static void test_kernel_threads(void)
{
	struct sel t;

	sel_init(&t);
	sel_ready(&t);
	EXPECT(&t, 2, "kworker/3:1H", true, WC_SEL_AUTO, 0, "kworker");
	EXPECT(&t, 2, "ksoftirqd/0", true, WC_SEL_AUTO, 0, "ksoftirqd");
	EXPECT(&t, 2, "kthreadd", true, WC_SEL_AUTO, 0, "kthreadd");
	/* A user process may name itself so; only kernel threads fold. */
	EXPECT(&t, 2, "kworker/3:1H", false, WC_SEL_AUTO, 0, "kworker_3_1H");
	wc_config_free(&t.cfg);
}

static void test_process_exact(void)
{
	struct sel t;

	sel_init(&t);
	add_sel(&t, "ngin", NULL);
	add_sel(&t, "nginx", NULL);
	sel_ready(&t);
	EXPECT(&t, 1, "nginx", false, WC_SEL_EXPLICIT, 1, "nginx");
	EXPECT(&t, 1, "ngin", false, WC_SEL_EXPLICIT, 0, "ngin");
	EXPECT(&t, 1, "nginx2", false, WC_SEL_OTHER, 0, "");
	EXPECT(&t, 1, "ngi", false, WC_SEL_OTHER, 0, "");
	EXPECT(&t, 1, "NGINX", false, WC_SEL_OTHER, 0, "");
	CHECK(reader_calls == 0);
	wc_config_free(&t.cfg);
}

static void test_process_prefix_no_match(void)
{
	struct sel t;

	sel_init(&t);
	add_sel(&t, "ngin", NULL);
	sel_ready(&t);
	EXPECT(&t, 1, "nginx", false, WC_SEL_OTHER, 0, "");
	wc_config_free(&t.cfg);
}

/* The kernel keeps 15 bytes of a name: the configured name as the user
 * knows it must still match what the kernel shows. */
static void test_process_long_name(void)
{
	struct sel t;

	sel_init(&t);
	add_sel(&t, "systemd-journald", NULL);
	add_sel(&t, "abcdefghijklmno", NULL);
	sel_ready(&t);
	EXPECT(&t, 1, "systemd-journal", false, WC_SEL_EXPLICIT, 0,
	       "systemd-journald");
	EXPECT(&t, 1, "abcdefghijklmno", false, WC_SEL_EXPLICIT, 1,
	       "abcdefghijklmno");
	EXPECT(&t, 1, "systemd-journa", false, WC_SEL_OTHER, 0, "");
	EXPECT(&t, 1, "abcdefghijklmn", false, WC_SEL_OTHER, 0, "");
	wc_config_free(&t.cfg);
}

/* A comm that fills all 16 bytes has no NUL; ASan checks the bound. */
static void test_comm_without_nul(void)
{
	char *comm = malloc(16);
	struct sel t;

	CHECK(comm != NULL);
	if (!comm)
		return;
	memcpy(comm, "abcdefghijklmnop", 16);
	sel_init(&t);
	sel_ready(&t);
	t.index = 999;
	expect(__LINE__, &t,
	       wc_select(&t.s, 1, comm, false, &t.index, t.name, &t.unsure),
	       WC_SEL_AUTO, 0, "abcdefghijklmno");
	wc_config_free(&t.cfg);
	sel_init(&t);
	add_sel(&t, "abcdefghijklmnop", NULL);
	add_sel(&t, "re", "^abcdefghijklmno$");
	sel_ready(&t);
	expect(__LINE__, &t,
	       wc_select(&t.s, 1, comm, false, &t.index, t.name, &t.unsure),
	       WC_SEL_EXPLICIT, 0, "abcdefghijklmnop");
	free(comm);
	wc_config_free(&t.cfg);
}

static void test_regex_command_line(void)
{
	struct sel t;

	sel_init(&t);
	add_sel(&t, "jvm", "^java -jar app\\.jar$");
	add_sel(&t, "py", "^python3$");
	add_sel(&t, "ngx", "^nginx: worker process$");
	sel_ready(&t);
	CHECK(t.s.need_cmdline);
	/* Arguments joined by single spaces, trailing NULs dropped. */
	EXPECT(&t, 100, "java", false, WC_SEL_EXPLICIT, 0, "jvm");
	EXPECT(&t, 102, "nginx", false, WC_SEL_EXPLICIT, 2, "ngx");
	/* With a command line, the regex sees it and not the comm... */
	EXPECT(&t, 101, "python3", false, WC_SEL_OTHER, 0, "");
	/* ...and without one (gone, kernel thread) it sees the comm. */
	EXPECT(&t, 999, "python3", false, WC_SEL_EXPLICIT, 1, "py");
	EXPECT(&t, 104, "python3", false, WC_SEL_EXPLICIT, 1, "py");
	EXPECT(&t, 999, "java", false, WC_SEL_OTHER, 0, "");
	CHECK(t.unsure);
	CHECK(reader_calls == 6);
	/* Decided by name alone: the caller asks again, except for kernel
	 * threads, which never have arguments. */
	EXPECT(&t, 104, "python3", false, WC_SEL_EXPLICIT, 1, "py");
	CHECK(t.unsure);
	EXPECT(&t, 100, "java", false, WC_SEL_EXPLICIT, 0, "jvm");
	CHECK(!t.unsure);
	EXPECT(&t, 101, "python3", false, WC_SEL_OTHER, 0, "");
	CHECK(!t.unsure);
	EXPECT(&t, 104, "python3", true, WC_SEL_EXPLICIT, 1, "py");
	CHECK(!t.unsure);
	wc_config_free(&t.cfg);
}

static void test_regex_long_command_line(void)
{
	struct sel t;

	memset(huge, 'x', sizeof(huge));
	sel_init(&t);
	add_sel(&t, "xs", "^x+$");
	sel_ready(&t);
	EXPECT(&t, 200, "x", false, WC_SEL_EXPLICIT, 0, "xs");
	wc_config_free(&t.cfg);
}

static void test_first_match_wins(void)
{
	struct sel t;

	sel_init(&t);
	add_sel(&t, "java", NULL);
	add_sel(&t, "jvm", "java");
	sel_ready(&t);
	EXPECT(&t, 100, "java", false, WC_SEL_EXPLICIT, 0, "java");
	wc_config_free(&t.cfg);
	sel_init(&t);
	add_sel(&t, "jvm", "java");
	add_sel(&t, "java", NULL);
	sel_ready(&t);
	EXPECT(&t, 100, "java", false, WC_SEL_EXPLICIT, 0, "jvm");
	wc_config_free(&t.cfg);
}

static void test_unmatched(void)
{
	struct sel t;

	sel_init(&t);
	add_sel(&t, "nginx", NULL);
	sel_ready(&t);
	EXPECT(&t, 1, "bash", false, WC_SEL_OTHER, 0, "");
	CHECK(!t.unsure); /* a name is final from the exec on */
	/* Selections replace automatic grouping, kernel threads included. */
	EXPECT(&t, 2, "kworker/0:1", true, WC_SEL_OTHER, 0, "");
	drop_unmatched(&t);
	EXPECT(&t, 1, "bash", false, WC_SEL_DROP, 0, "");
	EXPECT(&t, 1, "nginx", false, WC_SEL_EXPLICIT, 0, "nginx");
	wc_config_free(&t.cfg);
}

/* The command line's -p PID: that process alone, grouped as usual. */
static void test_only_tgid(void)
{
	struct sel t;

	sel_init(&t);
	t.cfg.only_tgid = 42;
	sel_ready(&t);
	EXPECT(&t, 41, "bash", false, WC_SEL_DROP, 0, "");
	EXPECT(&t, 42, "bash", false, WC_SEL_AUTO, 0, "bash");
	wc_config_free(&t.cfg);
}

static const char *argv0;

/* The default reader, on this very process and on one that cannot be. */
static void test_proc_cmdline(void)
{
	char buf[4096];
	long n = wc_proc_cmdline((uint32_t)getpid(), buf, sizeof(buf) - 1);

	CHECK(n > (long)strlen(argv0));
	if (n > 0) {
		buf[n] = '\0';
		CHECK(strcmp(buf, argv0) == 0);
	}
	CHECK(wc_proc_cmdline(UINT32_MAX, buf, sizeof(buf)) == -1);
}

int main(int argc, char **argv)
{
	(void)argc;
	argv0 = argv[0];
	check_prog = "test_select";
	RUN(test_auto_names);
	RUN(test_kernel_threads);
	RUN(test_process_exact);
	RUN(test_process_prefix_no_match);
	RUN(test_process_long_name);
	RUN(test_comm_without_nul);
	RUN(test_regex_command_line);
	RUN(test_regex_long_command_line);
	RUN(test_first_match_wins);
	RUN(test_unmatched);
	RUN(test_only_tgid);
	RUN(test_proc_cmdline);
	return check_done();
}
