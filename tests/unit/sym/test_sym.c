/*
 * test_sym.c - the symbolizer against real processes and real files.
 *
 * tests/unit/sym/fixtures/build.sh builds the fixtures into a temporary directory
 * (WC_SYM_FIXTURES, else mkdtemp under TMPDIR, removed at the end): a
 * non-PIE and a PIE executable, a dlopen'ed library, stripped binaries
 * whose symbols live in a .gnu_debuglink or a build-id debug file, C++, a
 * root for a private mount and pid namespace.  Each fixture runs as a
 * child that prints the addresses of its functions and waits; the test
 * notes it and checks the names through every way a profiler meets them:
 * map_files and /proc/PID/root, a deleted binary, a perf map, the vdso, a
 * process that exited after its note.  Also: kernel symbols (and a fake
 * kallsyms that hides its addresses), the cache's sharing, LRU eviction
 * and bounds, the pure parts (tables, maps and perf map lines, the line
 * reader) and hostile input (corrupt ELF files and images, garbage perf
 * maps).  Cost figures are printed as "# ..." lines.
 *
 * Fixture cases SKIP with the reason when the fixtures cannot be built
 * (no compiler); the namespace case needs root.  The fixture sources are
 * found through WC_SYM_SRC, else $srcdir/tests/unit/sym/fixtures (automake sets srcdir),
 * else next to this file.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gnu/libc-version.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "util/wc_log.h"
#include "sym/wc_sym.h"
#include "sym/wc_sym_elf.h"
#include "sym/wc_sym_kallsyms.h"
#include "sym/wc_sym_mod.h"
#include "sym/wc_sym_perfmap.h"
#include "sym/wc_sym_proc.h"
#include "sym/wc_sym_src.h"
#include "sym/wc_sym_tab.h"
#include "sym/wc_sym_wire.h"

#define CHECK_STR_EQ(got, want)                                                \
	do {                                                                   \
		const char *g_ = (got), *w_ = (want);                          \
		if (strcmp(g_, w_) != 0) {                                     \
			printf("  %s:%d: got \"%s\", want \"%s\"\n", __FILE__, \
			       __LINE__, g_, w_);                              \
			check_cur_failed = 1;                                  \
		}                                                              \
	} while (0)

/* Resolve and expect a name (rc WC_SYM_NAME and the exact text). */
#define CHECK_NAME(s, pid, addr, caller, want)                                 \
	do {                                                                   \
		char b_[512];                                                  \
		int r_ = wc_sym_user(s, pid, addr, caller, b_, sizeof(b_));    \
		CHECK_STR_EQ(b_, want);                                        \
		CHECK(r_ == WC_SYM_NAME);                                      \
	} while (0)

static char fxdir[PATH_MAX];
static bool fxdir_made;
static char fx_skip[512]; /* why fixture cases cannot run, if they cannot */

/* --- helpers ----------------------------------------------------------- */

/* snprintf, out of -Wformat-truncation's sight: test paths are short. */
__attribute__((format(printf, 3, 4))) static void fmt(char *out, size_t len,
						      const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(out, len, f, ap);
	va_end(ap);
}

static const char *fx(const char *name)
{
	static char ring[8][PATH_MAX];
	static unsigned next;
	char *p = ring[next++ % 8];

	fmt(p, PATH_MAX, "%s/%s", fxdir, name);
	return p;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char last_log[1024];

static void log_sink(enum wc_log_level level, const char *msg)
{
	(void)level;
	fmt(last_log, sizeof(last_log), "%s", msg);
	printf("# log: %s\n", msg);
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	close(in);
	close(out);
	return n == 0 ? 0 : -1;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Our libc, and its debug file if libc6-dbg (or the like) is installed:
 * the fixtures run the same libc. */
static bool libc_debug_file(char *lib, size_t liblen, char *dbg, size_t dbglen)
{
	struct wc_elf_info info;
	struct wc_elf e;
	Dl_info dl;
	size_t n;
	unsigned i;

	if (!dladdr((void *)gnu_get_libc_version, &dl) || !dl.dli_fname)
		return false;
	fmt(lib, liblen, "%s", dl.dli_fname);
	if (wc_elf_open_fd(&e, open(lib, O_RDONLY)))
		return false;
	wc_elf_read_info(&e, &info);
	wc_elf_close(&e);
	if (info.build_id_len < 2)
		return false;
	fmt(dbg, dbglen, "/usr/lib/debug/.build-id/%02x/", info.build_id[0]);
	for (i = 1, n = strlen(dbg); i < info.build_id_len; i++, n += 2)
		fmt(dbg + n, dbglen - n, "%02x", info.build_id[i]);
	fmt(dbg + n, dbglen - n, ".debug");
	return access(dbg, R_OK) == 0;
}

/* A running fixture: its host pid and the addresses it printed. */
#define FX_KEYS 32
struct fixture {
	pid_t pid;  /* the process to resolve */
	pid_t wait; /* the child to reap (differs in the namespace case) */
	int in;	    /* its stdin: closing it ends the fixture */
	int n;
	char key[FX_KEYS][32];
	uint64_t addr[FX_KEYS];
};

static bool fx_read(struct fixture *f, int outfd)
{
	FILE *out = fdopen(outfd, "r");
	char line[256], key[32];
	unsigned long long a;
	bool ready = false;

	if (!out)
		return false;
	while (fgets(line, sizeof(line), out)) {
		if (!strcmp(line, "ready\n")) {
			ready = true;
			break;
		}
		if (f->n < FX_KEYS && sscanf(line, "%31s %llx", key, &a) == 2) {
			fmt(f->key[f->n], sizeof(f->key[0]), "%s", key);
			f->addr[f->n++] = a;
		}
	}
	fclose(out);
	return ready;
}

static void fx_stop(struct fixture *f)
{
	if (f->in >= 0)
		close(f->in);
	f->in = -1;
	if (f->wait > 0)
		waitpid(f->wait, NULL, 0);
	f->wait = 0;
}

/* Start argv[0] (a path) with argv as uid (and gid) if not 0; true once
 * it printed "ready". */
static bool fx_start_as(struct fixture *f, const char *const *argv, uid_t uid)
{
	int in[2], out[2];

	memset(f, 0, sizeof(*f));
	f->in = -1;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return false;
	fflush(stdout);
	f->pid = f->wait = fork();
	if (f->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (uid && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	f->in = in[1];
	if (f->pid < 0 || !fx_read(f, out[0])) {
		fx_stop(f);
		return false;
	}
	return true;
}

static bool fx_start(struct fixture *f, const char *const *argv)
{
	return fx_start_as(f, argv, 0);
}

static uint64_t fx_addr(const struct fixture *f, const char *key)
{
	int i;

	for (i = 0; i < f->n; i++)
		if (!strcmp(f->key[i], key))
			return f->addr[i];
	printf("  fixture printed no address for %s\n", key);
	return 0;
}

static struct wc_sym *sym_new(const char *proc_root, const char *debug_root)
{
	struct wc_sym_opts o = {.proc_root = proc_root,
				.debug_root = debug_root,
				.helper = getenv("WC_SYM_HELPER")};
	char err[256];
	struct wc_sym *s = wc_sym_new(&o, err, sizeof(err));

	if (!s)
		printf("  wc_sym_new: %s\n", err);
	return s;
}

#define NEED_FIXTURES()                                                        \
	do {                                                                   \
		if (fx_skip[0])                                                \
			SKIP(fx_skip);                                         \
	} while (0)

/* --- pure parts ----------------------------------------------------------- */

static void test_table(void)
{
	struct wc_symtab t;
	const struct wc_symtab_ent *e;
	char longname[WC_SYMTAB_NAME_MAX + 100];
	int i;

	wc_symtab_init(&t, 1 << 20, 16);
	CHECK(wc_symtab_add(&t, 0x1000, 0x10, "local_alias", 64, 0) == 0);
	CHECK(wc_symtab_add(&t, 0x1000, 0x20, "global", 64, 2) == 0);
	CHECK(wc_symtab_add(&t, 0x1000, 0x20, "global_later", 64, 2) == 0);
	CHECK(wc_symtab_add(&t, 0x3000, 0, "last", 64, 0) == 0);
	CHECK(wc_symtab_add(&t, 0x2000, 0, "unsized", 64, 0) == 0);
	CHECK(wc_symtab_add(&t, 0x2008, 4, "after", 64, 0) == 0);
	errno = 0;
	CHECK(wc_symtab_add(&t, 0x4000, 4, "", 64, 0) == -1 && errno == EINVAL);
	CHECK(wc_symtab_finish(&t) == 0);
	CHECK(t.n == 4);
	e = wc_symtab_find(&t, 0x101f);
	CHECK(e && !strcmp(wc_symtab_name(&t, e), "global"));
	CHECK(!wc_symtab_find(&t, 0x1020));
	CHECK(!wc_symtab_find(&t, 0xfff));
	e = wc_symtab_find(&t, 0x2007);
	CHECK(e && !strcmp(wc_symtab_name(&t, e), "unsized"));
	e = wc_symtab_find(&t, 0x200b);
	CHECK(e && !strcmp(wc_symtab_name(&t, e), "after"));
	CHECK(!wc_symtab_find(&t, 0x200c));
	/* The last unsized symbol covers unsized_max bytes, no more. */
	CHECK(wc_symtab_find(&t, 0x300f) && !wc_symtab_find(&t, 0x3010));
	wc_symtab_free(&t);

	/* Names are cut, never refused for length. */
	memset(longname, 'n', sizeof(longname));
	wc_symtab_init(&t, 1 << 20, 1);
	CHECK(wc_symtab_add(&t, 1, 1, longname, sizeof(longname), 0) == 0);
	CHECK(wc_symtab_finish(&t) == 0 && t.n == 1);
	CHECK(strlen(wc_symtab_name(&t, &t.ents[0])) == WC_SYMTAB_NAME_MAX);
	wc_symtab_free(&t);

	/* The budget holds while building, whatever is thrown at it. */
	wc_symtab_init(&t, 4096, 1);
	for (i = 0; i < 100000; i++)
		if (wc_symtab_add(&t, (uint64_t)i * 8, 4, "some_name", 64, 0))
			break;
	CHECK(i < 100000 && errno == E2BIG);
	CHECK(wc_symtab_bytes(&t) <= 4096);
	CHECK(wc_symtab_finish(&t) == 0 && t.n == (size_t)i);
	CHECK(wc_symtab_bytes(&t) <= 4096);
	wc_symtab_free(&t);

	/* An empty table finds nothing. */
	wc_symtab_init(&t, 4096, 1);
	CHECK(wc_symtab_finish(&t) == 0 && t.n == 0);
	CHECK(!wc_symtab_find(&t, 0) && !wc_symtab_find(&t, UINT64_MAX));
	wc_symtab_free(&t);
}

static void test_line_reader(void)
{
	char path[] = "/tmp/wcsym-lines.XXXXXX";
	struct wc_lines r;
	char big[10000], *line;
	size_t len;
	FILE *f;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	fprintf(f, "first\n%s\nsecond\n\n%s", big, "last, no newline");
	fclose(f);
	fd = open(path, O_RDONLY);
	CHECK(wc_lines_open(&r, fd, 64, UINT64_MAX) == 0);
	line = wc_lines_next(&r, &len);
	CHECK(line && !strcmp(line, "first") && len == 5);
	line = wc_lines_next(&r, &len);
	CHECK(line && !strcmp(line, "second"));
	line = wc_lines_next(&r, &len);
	CHECK(line && len == 0);
	line = wc_lines_next(&r, &len);
	CHECK(line && !strcmp(line, "last, no newline"));
	CHECK(!wc_lines_next(&r, &len));
	CHECK(r.skipped == 1);
	wc_lines_close(&r);
	unlink(path);
}

static void test_maps_lines(void)
{
	struct wc_proc_map m;
	char l1[] = "55d0c0a00000-55d0c0a21000 r-xp 00001000 fd:01 1234   "
		    "/usr/bin/my prog (deleted)";
	char l2[] = "7ffd1c3f0000-7ffd1c3f2000 r-xp 00000000 00:00 0          "
		    "                [vdso]";
	char l3[] = "7f0000000000-7f0000001000 rwxp 00000000 00:00 0 ";
	char l4[] = "00400000-00401000 r-xp 00000000 08:01 42 /a/b c (deleted)"
		    " (deleted)";
	char l5[] = "00400000-00401000 r--p 00000000 103:02 42 /x";
	char *bad[] = {
		"",
		"zz-10 r-xp 0 0:0 0",
		"2000-1000 r-xp 00000000 00:00 0",
		"10000000000000000-1 r-xp 0 0:0 0",
		"1000-2000 r-xp",
		"1000-2000 r-xp 00000000 00:00",
		"1000-2000 r-xp 00000000 0000 12 /x",
	};
	size_t i;

	CHECK(wc_proc_parse_maps_line(l1, strlen(l1), &m) == 0);
	CHECK(m.start == 0x55d0c0a00000 && m.end == 0x55d0c0a21000);
	CHECK(m.pgoff == 0x1000 && m.dev_major == 0xfd && m.dev_minor == 1);
	CHECK(m.ino == 1234 && m.exec && m.deleted);
	CHECK_STR_EQ(m.path, "/usr/bin/my prog");
	CHECK(m.pathlen == strlen("/usr/bin/my prog"));
	CHECK(wc_proc_parse_maps_line(l2, strlen(l2), &m) == 0);
	CHECK_STR_EQ(m.path, "[vdso]");
	CHECK(wc_proc_parse_maps_line(l3, strlen(l3), &m) == 0);
	CHECK_STR_EQ(m.path, "");
	CHECK(m.exec && !m.deleted);
	CHECK(wc_proc_parse_maps_line(l4, strlen(l4), &m) == 0);
	CHECK_STR_EQ(m.path, "/a/b c (deleted)");
	CHECK(m.deleted);
	CHECK(wc_proc_parse_maps_line(l5, strlen(l5), &m) == 0);
	CHECK(!m.exec && m.dev_major == 0x103 && m.dev_minor == 2);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[128];

		fmt(line, sizeof(line), "%s", bad[i]);
		if (wc_proc_parse_maps_line(line, strlen(line), &m) == 0)
			printf("  accepted bad maps line \"%s\"\n", bad[i]);
		CHECK(wc_proc_parse_maps_line(line, strlen(line), &m) == -1);
	}
}

static void test_perf_map_lines(void)
{
	const char *good[] = {"7f0000001000 40 jit_one",
			      "0x7f0000001000 0x40 with spaces (x) [y]"};
	const char *bad[] = {"",
			     "garbage",
			     "zzzz 10 name",
			     "1000 0 zero",
			     "1000 10",
			     "1000 10 ",
			     "1000",
			     "ffffffffffffffff 2 w",
			     "10000000000000000 1 toolong",
			     "1000\t10 tab"};
	uint64_t start, size;
	const char *name;
	size_t i, namelen;

	CHECK(wc_perfmap_parse_line(good[0], strlen(good[0]), &start, &size,
				    &name, &namelen) == 0);
	CHECK(start == 0x7f0000001000 && size == 0x40);
	CHECK(namelen == 7 && !strncmp(name, "jit_one", 7));
	CHECK(wc_perfmap_parse_line(good[1], strlen(good[1]), &start, &size,
				    &name, &namelen) == 0);
	CHECK(!strcmp(name, "with spaces (x) [y]"));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = wc_perfmap_parse_line(bad[i], strlen(bad[i]), &start,
					       &size, &name, &namelen);

		if (rc == 0)
			printf("  accepted bad perf map line \"%s\"\n", bad[i]);
		CHECK(rc == -1);
	}
}

/* --- kernel --------------------------------------------------------------- */

static uint64_t kallsyms_addr(const char *want)
{
	char line[1024], name[512], type;
	unsigned long long a;
	uint64_t found = 0;
	FILE *f = fopen("/proc/kallsyms", "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %511s", &a, &type, name) == 3 &&
		    !strcmp(name, want) && !strchr(line, '['))
			found = a;
	fclose(f);
	return found;
}

/* Replies from the helper are decoded as if hostile: every cut of a good
 * message fails cleanly, and a table whose entries are out of order or
 * point out of its names is refused. */
static void test_wire(void)
{
	static const char paths[] = "/usr/lib/libfoo.so\0[vdso]";
	struct wc_proc_map maps[2] = {
		{.start = 0x1000,
		 .end = 0x2000,
		 .exec = true,
		 .ino = 7,
		 .path = paths,
		 .pathlen = 18},
		{.start = 0x3000,
		 .end = 0x4000,
		 .exec = true,
		 .path = paths + 19,
		 .pathlen = 6},
	};
	struct wc_fetch_file files[2] = {{.size = 4096, .mtime_ns = 1}, {0}};
	struct wc_fetch_maps in = {.nspid = 3,
				   .euid = 1000,
				   .sig = 99,
				   .maps = maps,
				   .files = files,
				   .n = 2};
	struct wc_fetch_maps out;
	struct wc_symtab t, u;
	struct wc_wbuf b = {0};
	struct wc_rbuf r;
	size_t cut;

	wc_wbuf_reset(&b, 0);
	wc_wire_put_maps(&b, &in);
	wc_rbuf_init(&r, b.p, b.len);
	CHECK(wc_wire_get_maps(&r, &out) && out.n == 2 && out.euid == 1000 &&
	      !strcmp(out.maps[0].path, "/usr/lib/libfoo.so") &&
	      !strcmp(out.maps[1].path, "[vdso]") && out.files[0].size == 4096);
	wc_fetch_maps_free(&out);
	for (cut = 0; cut < b.len; cut++) {
		wc_rbuf_init(&r, b.p, cut);
		CHECK(!wc_wire_get_maps(&r, &out) && out.maps == NULL);
	}
	/* a table: whole, cut anywhere, and with a name past its pool */
	wc_symtab_init(&t, 1 << 20, 1);
	CHECK(wc_symtab_add(&t, 0x100, 16, "one", 3, 0) == 0 &&
	      wc_symtab_add(&t, 0x200, 16, "two", 3, 0) == 0 &&
	      wc_symtab_finish(&t) == 0);
	wc_wbuf_reset(&b, 0);
	wc_wire_put_symtab(&b, &t);
	wc_rbuf_init(&r, b.p, b.len);
	wc_symtab_init(&u, 1 << 20, 1);
	CHECK(wc_wire_get_symtab(&r, &u) && u.n == 2 &&
	      !strcmp(wc_symtab_name(&u, wc_symtab_find(&u, 0x205)), "two"));
	wc_symtab_free(&u);
	for (cut = 0; cut < b.len; cut++) {
		wc_rbuf_init(&r, b.p, cut);
		CHECK(!wc_wire_get_symtab(&r, &u) && u.n == 0);
	}
	t.ents[1].name = (uint32_t)t.strs_len;
	CHECK(wc_symtab_adopt(&u, t.ents, t.n, t.strs, t.strs_len) == -1 &&
	      errno == EINVAL);
	t.ents[1].name = 0;
	t.ents[1].addr = 0x100;
	CHECK(wc_symtab_adopt(&u, t.ents, t.n, t.strs, t.strs_len) == -1 &&
	      errno == EINVAL);
	wc_symtab_init(&u, 16, 1);
	CHECK(wc_symtab_adopt(&u, t.ents, t.n, t.strs, t.strs_len) == -1 &&
	      errno == E2BIG);
	wc_symtab_free(&t);
	wc_wbuf_free(&b);
}

static void test_kernel(void)
{
	uint64_t a = kallsyms_addr("schedule");
	struct wc_sym_stats st;
	struct wc_symtab t;
	struct wc_sym *s;
	char buf[256], err[256];
	double t0;

	if (!a)
		SKIP("/proc/kallsyms shows no address for schedule "
		     "(kptr_restrict, or not root)");
	t0 = now_ms();
	CHECK(wc_kallsyms_load(&t, "/proc/kallsyms", 64 << 20, err,
			       sizeof(err)) == 0);
	printf("# kallsyms: %zu text symbols loaded and sorted in %.1f ms, "
	       "%zu KiB\n",
	       t.n, now_ms() - t0, wc_symtab_bytes(&t) / 1024);
	wc_symtab_free(&t);

	s = sym_new(NULL, NULL);
	if (!s)
		return;
	wc_sym_stats(s, &st);
	CHECK(st.kernel_symbols > 10000);
	CHECK(wc_sym_kernel(s, a, false, buf, sizeof(buf)) == WC_SYM_NAME);
	CHECK_STR_EQ(buf, "schedule");
	CHECK(wc_sym_kernel(s, a + 1, false, buf, sizeof(buf)) == WC_SYM_NAME);
	CHECK_STR_EQ(buf, "schedule");
	/* A return address just past the start is still the caller. */
	CHECK(wc_sym_kernel(s, a + 1, true, buf, sizeof(buf)) == WC_SYM_NAME);
	CHECK_STR_EQ(buf, "schedule");
	CHECK(wc_sym_kernel(s, 0x10, false, buf, sizeof(buf)) ==
	      WC_SYM_UNKNOWN);
	CHECK_STR_EQ(buf, "[unknown]");
	/* A buffer too small is cut and terminated. */
	CHECK(wc_sym_kernel(s, a, false, buf, 4) == WC_SYM_NAME);
	CHECK_STR_EQ(buf, "sch");
	wc_sym_free(s);
}

/* A kallsyms that hides its addresses, module names, hostile lines. */
static void test_kernel_fake(void)
{
	char dir[] = "/tmp/wcsym-kproc.XXXXXX", path[PATH_MAX], buf[256];
	struct wc_sym_stats st;
	struct wc_sym *s;

	CHECK(mkdtemp(dir) != NULL);
	fmt(path, sizeof(path), "%s/kallsyms", dir);
	CHECK(write_file(path, "0000000000000000 T _stext\n"
			       "0000000000000000 T schedule\n"
			       "0000000000000000 t helper\t[mod]\n") == 0);
	last_log[0] = '\0';
	s = sym_new(dir, NULL);
	CHECK(s != NULL);
	if (!s)
		goto out;
	CHECK_STR_HAS(last_log, "kptr_restrict");
	wc_sym_stats(s, &st);
	CHECK(st.kernel_symbols == 0);
	CHECK(wc_sym_kernel(s, 0xffffffff81000000, false, buf, sizeof(buf)) ==
	      WC_SYM_UNKNOWN);
	wc_sym_free(s);

	CHECK(write_file(path, "ffffffff81000000 T _stext\n"
			       "ffffffff81000100 t helper\n"
			       "ffffffff81000100 T helper_global\n"
			       "ffffffffc0000000 t mod_func\t[wcmod]\n"
			       "ffffffffc0000040 t evil\x01name\t[wcmod]\n"
			       "ffffffff81000200 D some_data\n"
			       "garbage line\n"
			       "ffffffffffffffffff T too_long\n") == 0);
	s = sym_new(dir, NULL);
	CHECK(s != NULL);
	if (!s)
		goto out;
	wc_sym_stats(s, &st);
	CHECK(st.kernel_symbols == 4);
	wc_sym_kernel(s, 0xffffffff81000180, false, buf, sizeof(buf));
	CHECK_STR_EQ(buf, "helper_global");
	wc_sym_kernel(s, 0xffffffffc0000010, false, buf, sizeof(buf));
	CHECK_STR_EQ(buf, "mod_func [wcmod]");
	wc_sym_kernel(s, 0xffffffffc0000041, false, buf, sizeof(buf));
	CHECK_STR_EQ(buf, "evil?name [wcmod]");
	/* Data is no code, and nothing covers past the last symbol's
	 * bound. */
	CHECK(wc_sym_kernel(s, 0xffffffffc0000040 + WC_KALLSYMS_UNSIZED_MAX,
			    false, buf, sizeof(buf)) == WC_SYM_UNKNOWN);
	wc_sym_free(s);
out:
	rm_tree(dir);
}

/* --- processes ----------------------------------------------------------- */

static void test_non_pie(void)
{
	const char *argv[] = {fx("fx_nopie"), NULL};
	struct fixture f;
	struct wc_sym *s;
	uint64_t alpha;

	NEED_FIXTURES();
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	alpha = fx_addr(&f, "alpha");
	/* Linked at 0x400000: no load bias at all. */
	CHECK(alpha < 0x1000000);
	CHECK_NAME(s, f.pid, alpha, false, "wcsym_fixture_alpha");
	CHECK_NAME(s, f.pid, alpha + 1, false, "wcsym_fixture_alpha");
	CHECK_NAME(s, f.pid, alpha + 1, true, "wcsym_fixture_alpha");
	CHECK_NAME(s, f.pid, fx_addr(&f, "beta"), false, "wcsym_static_beta");
	CHECK_NAME(s, f.pid, fx_addr(&f, "main"), false, "main");
	wc_sym_free(s);
	fx_stop(&f);
}

static void test_pie_and_library(void)
{
	const char *argv[] = {fx("fx_pie"), "--lib", fx("libfx.so"), NULL};
	char buf[256], lib[PATH_MAX], dbg[PATH_MAX];
	struct fixture f;
	struct wc_sym *s;
	int rc;

	NEED_FIXTURES();
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	CHECK_NAME(s, f.pid, fx_addr(&f, "alpha"), false,
		   "wcsym_fixture_alpha");
	CHECK_NAME(s, f.pid, fx_addr(&f, "beta"), false, "wcsym_static_beta");
	CHECK_NAME(s, f.pid, fx_addr(&f, "lib_gamma"), false,
		   "wcsym_lib_gamma");
	CHECK_NAME(s, f.pid, fx_addr(&f, "lib_delta"), false,
		   "wcsym_lib_hidden_delta");
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "libc_nanosleep"), false, buf,
			  sizeof(buf)) == WC_SYM_NAME);
	CHECK_STR_HAS(buf, "nanosleep");
	/* libc's internals are named by its debug file, found by build-id
	 * under /usr/lib/debug; without one, an offset in libc. */
	rc = wc_sym_user(s, f.pid, fx_addr(&f, "main_caller"), true, buf,
			 sizeof(buf));
	if (libc_debug_file(lib, sizeof(lib), dbg, sizeof(dbg))) {
		CHECK(rc == WC_SYM_NAME);
		CHECK_STR_EQ(buf, "__libc_start_call_main");
	} else {
		printf("# no debug file for libc (libc6-dbg): main's caller is "
		       "%s\n",
		       buf);
		CHECK(rc == WC_SYM_NAME || rc == WC_SYM_MODULE);
	}
	/* No mapping at all: the one case for [unknown]. */
	CHECK(wc_sym_user(s, f.pid, 0x10, false, buf, sizeof(buf)) ==
	      WC_SYM_UNKNOWN);
	CHECK_STR_EQ(buf, "[unknown]");
	wc_sym_free(s);
	fx_stop(&f);
}

static void test_debuglink(void)
{
	const char *argv[] = {fx("fx_link"), NULL};
	const char *argv_bad[] = {fx("fx_badlink"), NULL};
	struct fixture f;
	struct wc_sym *s;
	char buf[256];

	NEED_FIXTURES();
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	CHECK_NAME(s, f.pid, fx_addr(&f, "alpha"), false,
		   "wcsym_fixture_alpha");
	CHECK_NAME(s, f.pid, fx_addr(&f, "beta"), false, "wcsym_static_beta");
	fx_stop(&f);

	/* A debug file whose CRC does not match is not believed. */
	if (!fx_start(&f, argv_bad)) {
		CHECK(!"fixture started");
		wc_sym_free(s);
		return;
	}
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "alpha"), false, buf,
			  sizeof(buf)) == WC_SYM_MODULE);
	CHECK_STR_HAS(buf, "fx_badlink+0x");
	wc_sym_free(s);
	fx_stop(&f);
}

static void test_build_id(void)
{
	const char *argv[] = {fx("fx_bid"), NULL};
	struct fixture f;
	struct wc_sym *s;
	char buf[256];

	NEED_FIXTURES();
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	s = sym_new(NULL, fx("debugroot"));
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	CHECK_NAME(s, f.pid, fx_addr(&f, "alpha"), false,
		   "wcsym_fixture_alpha");
	CHECK_NAME(s, f.pid, fx_addr(&f, "beta"), false, "wcsym_static_beta");
	wc_sym_free(s);
	/* Without that debug root the same address has only an offset. */
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_user(s, f.pid, fx_addr(&f, "alpha"), false, buf,
			       sizeof(buf)) == WC_SYM_MODULE);
	CHECK_STR_HAS(buf, "fx_bid+0x");
	wc_sym_free(s);
	fx_stop(&f);
}

static void test_cxx(void)
{
	const char *argv[] = {fx("fx_cxx"), NULL};
	struct fixture f;
	struct wc_sym *s;
	char buf[256];
	int i, n = 100000;
	double t0;

	NEED_FIXTURES();
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	CHECK_NAME(s, f.pid, fx_addr(&f, "method"), false,
		   "ns::klass::method(int)");
	CHECK_NAME(s, f.pid, fx_addr(&f, "twice"), false,
		   "long ns::twice<long>(long)");
	t0 = now_ms();
	for (i = 0; i < n; i++)
		wc_sym_user(s, f.pid, fx_addr(&f, "method"), false, buf,
			    sizeof(buf));
	printf("# warm: %.3f us per C++ lookup (demangled each time)\n",
	       (now_ms() - t0) * 1e3 / n);
	wc_sym_free(s);
	fx_stop(&f);
}

static void test_deleted_binary(void)
{
	char dir[PATH_MAX], bin[PATH_MAX];
	const char *argv[] = {bin, NULL};
	struct fixture f;
	struct wc_sym *s;

	NEED_FIXTURES();
	/* Spaces and a " (deleted)" of its own in the path, too. */
	fmt(dir, sizeof(dir), "%s/dir with space", fxdir);
	fmt(bin, sizeof(bin), "%s/fx (deleted)", dir);
	mkdir(dir, 0755);
	CHECK(copy_file(fx("fx_pie"), bin) == 0);
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	CHECK(unlink(bin) == 0);
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	CHECK_NAME(s, f.pid, fx_addr(&f, "alpha"), false,
		   "wcsym_fixture_alpha");
	CHECK_NAME(s, f.pid, fx_addr(&f, "beta"), false, "wcsym_static_beta");
	wc_sym_free(s);
	fx_stop(&f);
}

static void test_fallback_and_corrupt_files(void)
{
	const char *argv[] = {fx("fx_pie"), "--lib",	    fx("libnosym.so"),
			      "--map",	    fx("blob.bin"), NULL};
	const char *argv_trunc[] = {fx("fx_pie"), "--map", fx("trunc.so"),
				    NULL};
	struct wc_sym_stats st;
	struct fixture f;
	struct wc_sym *s;
	char buf[256];

	NEED_FIXTURES();
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	/* .dynsym still names the exported function... */
	CHECK_NAME(s, f.pid, fx_addr(&f, "lib_gamma"), false,
		   "wcsym_lib_gamma");
	/* ...the static one is an offset in the file. */
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "lib_delta"), false, buf,
			  sizeof(buf)) == WC_SYM_MODULE);
	CHECK_STR_HAS(buf, "libnosym.so+0x");
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "map"), false, buf,
			  sizeof(buf)) == WC_SYM_MODULE);
	CHECK_STR_EQ(buf, "blob.bin+0x10");
	fx_stop(&f);

	/* A truncated ELF file mapped executable: an offset, no crash. */
	if (!fx_start(&f, argv_trunc)) {
		CHECK(!"fixture started");
		wc_sym_free(s);
		return;
	}
	CHECK(wc_sym_proc_note(s, f.pid) == 0);
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "map"), false, buf,
			  sizeof(buf)) == WC_SYM_MODULE);
	CHECK_STR_EQ(buf, "trunc.so+0x10");
	CHECK_NAME(s, f.pid, fx_addr(&f, "alpha"), false,
		   "wcsym_fixture_alpha");
	wc_sym_stats(s, &st);
	CHECK(st.fallbacks >= 3 && st.names >= 2);
	wc_sym_free(s);
	fx_stop(&f);
}

static void test_perf_map(void)
{
	const char *argv[] = {fx("fx_pie"), "--jit", NULL};
	struct fixture f;
	struct wc_sym *s;
	char buf[256];

	NEED_FIXTURES();
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	/* A later line for the same address replaces an earlier one. */
	CHECK_NAME(s, f.pid, fx_addr(&f, "jit_one"), false, "jit_one");
	CHECK_NAME(s, f.pid, fx_addr(&f, "jit_two"), false,
		   "Interpreter::run(int) [jit]");
	CHECK_NAME(s, f.pid, fx_addr(&f, "jit_ctrl"), false, "ctrl?name");
	/* JIT memory no line covers is anonymous, not unknown. */
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "jit_gap"), false, buf,
			  sizeof(buf)) == WC_SYM_MODULE);
	CHECK_STR_EQ(buf, "[anon]");
	/* The overlong line was dropped, not cut into a name. */
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "jit_one") - 0x10 + 0x300,
			  false, buf, sizeof(buf)) == WC_SYM_MODULE);
	wc_sym_free(s);
	fx_stop(&f);
}

/* --- hostile files: what a local user can put where we read ------------- */

#define NOBODY 65534

#define NEED_ROOT()                                                            \
	do {                                                                   \
		if (geteuid() != 0)                                            \
			SKIP("needs root (chown, files of others)");           \
	} while (0)

/* Opened, or refused before anything was read, and never blocking: a
 * procfs file that blocks its reader (/proc/kmsg), a FIFO, a device, a
 * symlink where none may be.  An alarm ends the test if one blocks. */
static void test_open_rules(void)
{
	char fifo[PATH_MAX], reg[PATH_MAX], link[PATH_MAX];
	const char *bad[] = {"/proc/kmsg", "/proc/self/status",
			     "/sys/kernel/notes", "/dev/null", fifo};
	struct stat st;
	size_t i;
	int fd;

	NEED_FIXTURES();
	fmt(fifo, sizeof(fifo), "%s/fifo", fxdir);
	fmt(reg, sizeof(reg), "%s/regular", fxdir);
	fmt(link, sizeof(link), "%s/link", fxdir);
	CHECK(mkfifo(fifo, 0600) == 0 || errno == EEXIST);
	CHECK(write_file(reg, "0123456789") == 0);
	unlink(link);
	CHECK(symlink(reg, link) == 0);
	alarm(20);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		fd = wc_open_regular(bad[i], &st);
		if (fd >= 0 || errno != EINVAL)
			printf("  %s: fd %d, errno %d\n", bad[i], fd, errno);
		CHECK(fd < 0 && errno == EINVAL);
		if (fd >= 0)
			close(fd);
		fd = wc_proc_open_in_root("/proc", getpid(), bad[i], 0, &st);
		CHECK(fd < 0);
	}
	alarm(0);
	CHECK(wc_fs_readable(0xEF53) && !wc_fs_readable(0x9fa0) &&
	      !wc_fs_readable(0x65735546));
	/* a regular file: opened, its size at open given */
	fd = wc_proc_open_in_root("/proc", getpid(), reg, WC_OPEN_NO_SYMLINKS,
				  &st);
	CHECK(fd >= 0 && st.st_size == 10);
	if (fd >= 0)
		close(fd);
	/* through a symlink only where symlinks may be */
	fd = wc_proc_open_in_root("/proc", getpid(), link, 0, &st);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	CHECK(wc_proc_open_in_root("/proc", getpid(), link, WC_OPEN_NO_SYMLINKS,
				   &st) < 0 &&
	      errno == ELOOP);
	unlink(fifo);
	unlink(link);
	unlink(reg);
}

/* A perf map is read no further than its size when it was opened, and a
 * last line without its newline (still being written) is not a name. */
static void test_perf_map_bound(void)
{
	const char *text = "1000 10 one\n2000 10 two\n3000 10 three_cut\n";
	char path[PATH_MAX];
	struct wc_symtab t;
	uint64_t bad = 0;
	int fd;

	NEED_FIXTURES();
	fmt(path, sizeof(path), "%s/growing.map", fxdir);
	CHECK(write_file(path, text) == 0);
	fd = open(path, O_RDONLY);
	wc_symtab_init(&t, 1 << 20, 1);
	/* as if the file had been this long at open: two lines and a half */
	CHECK(wc_perfmap_load(fd, 24 + 9, &t, &bad) == 2);
	CHECK(bad == 1);
	CHECK(wc_symtab_find(&t, 0x1004) && !wc_symtab_find(&t, 0x3004));
	wc_symtab_free(&t);
	unlink(path);
}

/*
 * A map bigger than the table's budget is read from its tail, whose first
 * line is cut and skipped.  When that line was longer than the reader's
 * buffer (a hostile map's megabytes of NULs or a megabyte-long name), the
 * reader drops it itself, and the next line, whole, is kept: a review's
 * 300 MB map lost its one good line to that.
 */
static void test_perf_map_tail_after_overlong(void)
{
	char path[PATH_MAX], *junk;
	size_t big = 6u << 20;
	struct wc_symtab t;
	uint64_t bad = 0;
	FILE *f;
	int fd;

	NEED_FIXTURES();
	fmt(path, sizeof(path), "%s/huge.map", fxdir);
	junk = calloc(1, big);
	f = fopen(path, "w");
	CHECK(f && junk);
	if (!f || !junk) {
		free(junk);
		return;
	}
	fwrite(junk, 1, big, f); /* NULs, no newline */
	fputs("\n4000 10 good_one\nzz binary \x01\x02\n", f);
	fclose(f);
	free(junk);
	fd = open(path, O_RDONLY);
	/* a 1 MiB budget reads the last 512 KiB: inside the NULs */
	wc_symtab_init(&t, 1 << 20, 1);
	CHECK(wc_perfmap_load(fd, big + 31, &t, &bad) == 1);
	CHECK(wc_symtab_find(&t, 0x4004) != NULL);
	wc_symtab_free(&t);
	unlink(path);
}

/* Rename a fixture's perf map aside; put it back (or not) as the test
 * says, then make the symbolizer read it again. */
static void refresh(struct wc_sym *s, pid_t pid)
{
	wc_sym_cycle(s);
	CHECK(wc_sym_proc_note(s, pid) == 0);
}

static bool jit_named(struct wc_sym *s, const struct fixture *f)
{
	char buf[256];

	return wc_sym_user(s, f->pid, fx_addr(f, "jit_one"), false, buf,
			   sizeof(buf)) == WC_SYM_NAME &&
	       !strcmp(buf, "jit_one");
}

/* A perf map is believed only if the process's own user could have
 * written it: a regular file, not a symlink or a second link, owned by
 * the process's user (root's only for root's processes), that no one else
 * may write. */
static void test_perf_map_rules(void)
{
	const char *argv[] = {fx("fx_pie"), "--jit", NULL};
	char map[64], aside[PATH_MAX], link2[64];
	struct wc_sym_stats st;
	struct fixture f, fn;
	struct wc_sym *s;

	NEED_FIXTURES();
	NEED_ROOT();
	/* fixtures of nobody must reach their binary */
	CHECK(chmod(fxdir, 0755) == 0);
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	fmt(map, sizeof(map), "/tmp/perf-%d.map", (int)f.pid);
	fmt(link2, sizeof(link2), "/tmp/perf-%d.map.2", (int)f.pid);
	fmt(aside, sizeof(aside), "%s/aside.map", fxdir);
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0 && jit_named(s, &f));
	/* a symlink to a root-owned file of the right content */
	CHECK(copy_file(map, aside) == 0 && chmod(aside, 0644) == 0);
	CHECK(unlink(map) == 0 && symlink(aside, map) == 0);
	refresh(s, f.pid);
	CHECK(!jit_named(s, &f));
	CHECK(unlink(map) == 0 && copy_file(aside, map) == 0 &&
	      chmod(map, 0644) == 0);
	refresh(s, f.pid);
	CHECK(jit_named(s, &f));
	/* writable by the group, by others */
	CHECK(chmod(map, 0664) == 0);
	refresh(s, f.pid);
	CHECK(!jit_named(s, &f));
	CHECK(chmod(map, 0646) == 0);
	refresh(s, f.pid);
	CHECK(!jit_named(s, &f));
	CHECK(chmod(map, 0644) == 0);
	/* a second link to it */
	CHECK(link(map, link2) == 0);
	refresh(s, f.pid);
	CHECK(!jit_named(s, &f));
	CHECK(unlink(link2) == 0);
	refresh(s, f.pid);
	CHECK(jit_named(s, &f));
	/* someone else's, for a root process */
	CHECK(chown(map, NOBODY, NOBODY) == 0);
	refresh(s, f.pid);
	CHECK(!jit_named(s, &f));
	wc_sym_stats(s, &st);
	CHECK(st.refused >= 5);
	wc_sym_free(s);
	fx_stop(&f);

	/* nobody's process: its own map is believed, root's is not */
	if (!fx_start_as(&fn, argv, NOBODY)) {
		CHECK(!"fixture of nobody started");
		return;
	}
	fmt(map, sizeof(map), "/tmp/perf-%d.map", (int)fn.pid);
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, fn.pid) == 0 && jit_named(s, &fn));
	CHECK(chown(map, 0, 0) == 0);
	refresh(s, fn.pid);
	CHECK(!jit_named(s, &fn));
	wc_sym_free(s);
	unlink(map); /* the fixture, not root, may no longer remove it */
	fx_stop(&fn);
	unlink(aside);
}

/* Copy fx_link and its debug file to DIR/ (made here), owned by uid. */
static bool link_copy(const char *dir, uid_t uid, uid_t debug_uid)
{
	char bin[PATH_MAX], dbgdir[PATH_MAX], dbg[PATH_MAX];

	fmt(bin, sizeof(bin), "%s/fx_link", dir);
	fmt(dbgdir, sizeof(dbgdir), "%s/.debug", dir);
	fmt(dbg, sizeof(dbg), "%s/fx_link.debug", dbgdir);
	return (mkdir(dir, 0755) == 0 || errno == EEXIST) &&
	       (mkdir(dbgdir, 0755) == 0 || errno == EEXIST) &&
	       copy_file(fx("fx_link"), bin) == 0 &&
	       copy_file(fx(".debug/fx_link.debug"), dbg) == 0 &&
	       chown(bin, uid, uid) == 0 &&
	       chown(dbg, debug_uid, debug_uid) == 0;
}

/* The name of fx_link's alpha in a fresh symbolizer, as dir/fx_link. */
static int link_alpha(const char *dir, char *buf, size_t len)
{
	char bin[PATH_MAX];
	const char *argv[] = {bin, NULL};
	struct fixture f;
	struct wc_sym *s;
	int rc;

	fmt(bin, sizeof(bin), "%s/fx_link", dir);
	if (!fx_start(&f, argv))
		return -1;
	s = sym_new(NULL, NULL);
	rc = s ? wc_sym_user(s, f.pid, fx_addr(&f, "alpha"), false, buf, len)
	       : -1;
	wc_sym_free(s);
	fx_stop(&f);
	return rc;
}

/* A debug file beside a binary is believed only if the binary's owner or
 * root owns it, and only where it is: not through a symlink that leaves
 * the binary's directory. */
static void test_debug_file_rules(void)
{
	char dir[PATH_MAX], dbg[PATH_MAX], buf[256];

	NEED_FIXTURES();
	NEED_ROOT();
	fmt(dir, sizeof(dir), "%s/owned", fxdir);
	fmt(dbg, sizeof(dbg), "%s/.debug/fx_link.debug", dir);
	/* the binary's owner's, and root's: believed */
	CHECK(link_copy(dir, NOBODY, NOBODY));
	CHECK(link_alpha(dir, buf, sizeof(buf)) == WC_SYM_NAME);
	CHECK_STR_EQ(buf, "wcsym_fixture_alpha");
	CHECK(chown(dbg, 0, 0) == 0);
	CHECK(link_alpha(dir, buf, sizeof(buf)) == WC_SYM_NAME);
	/* a third user's: not */
	CHECK(chown(dbg, 4242, 4242) == 0);
	CHECK(link_alpha(dir, buf, sizeof(buf)) == WC_SYM_MODULE);
	CHECK_STR_HAS(buf, "fx_link+0x");
	/* a symlink out of the directory to a good debug file: not */
	CHECK(unlink(dbg) == 0 &&
	      symlink(fx(".debug/fx_link.debug"), dbg) == 0);
	CHECK(link_alpha(dir, buf, sizeof(buf)) == WC_SYM_MODULE);
	/* nor to a file that would block us */
	CHECK(unlink(dbg) == 0 && symlink("/proc/kmsg", dbg) == 0);
	alarm(20);
	CHECK(link_alpha(dir, buf, sizeof(buf)) == WC_SYM_MODULE);
	alarm(0);
	rm_tree(dir);
}

/* A table is shared by build-id only between files of one owner: a user
 * who gives a binary of theirs a root binary's build-id names only their
 * own frames. */
static void test_forged_build_id(void)
{
	const char *argv_f[] = {fx("fx_forged"), NULL};
	const char *argv_v[] = {fx("fx_pie"), NULL};
	struct fixture ff, fv;
	struct wc_sym *s;

	NEED_FIXTURES();
	NEED_ROOT();
	CHECK(chown(fx("fx_forged"), NOBODY, NOBODY) == 0);
	if (!fx_start(&ff, argv_f)) {
		CHECK(!"forged fixture started");
		return;
	}
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, ff.pid) == 0);
	CHECK_NAME(s, ff.pid, fx_addr(&ff, "alpha"), false,
		   "wcsym_forged_alpha");
	if (!fx_start(&fv, argv_v)) {
		CHECK(!"victim fixture started");
		wc_sym_free(s);
		fx_stop(&ff);
		return;
	}
	CHECK(wc_sym_proc_note(s, fv.pid) == 0);
	CHECK_NAME(s, fv.pid, fx_addr(&fv, "alpha"), false,
		   "wcsym_fixture_alpha");
	wc_sym_free(s);
	fx_stop(&fv);
	fx_stop(&ff);
}

/* --- the helper process: what happens when it does not answer --------------- */

/* A "helper" that reads its request and never answers, like one stuck in
 * a read of a hostile file; or one that dies at once. */
static const char *fake_helper(const char *name, const char *script)
{
	const char *path = fx(name);

	if (write_file(path, script) || chmod(path, 0755))
		return NULL;
	return path;
}

/* A helper that does not answer in time is killed, what it was reading is
 * logged and never asked for again, and nothing else is asked of a helper
 * until the next cycle: one stall per cycle at most, each bounded. */
static void test_helper_stall(void)
{
	const char *argv[] = {fx("fx_pie"), NULL};
	struct wc_sym_opts o = {.deadline_ms = 300};
	struct wc_sym_stats st;
	struct fixture f, g;
	struct wc_sym *s;
	double t0, t;
	char want[64];
	int i;

	NEED_FIXTURES();
	o.helper = fake_helper("stuck_helper", "#!/bin/sh\nexec sleep 60\n");
	if (!o.helper || !fx_start(&f, argv) || !fx_start(&g, argv)) {
		CHECK(!"fake helper and fixtures");
		return;
	}
	s = wc_sym_new(&o, NULL, 0);
	last_log[0] = '\0';
	t0 = now_ms();
	CHECK(s && wc_sym_proc_note(s, f.pid) == -1);
	t = now_ms() - t0;
	printf("# a stalled note returned after %.0f ms (deadline 300)\n", t);
	CHECK(t >= 250 && t < 2000);
	fmt(want, sizeof(want), "reading the maps of pid %d", (int)f.pid);
	CHECK_STR_HAS(last_log, "did not answer within 0.3 s");
	CHECK_STR_HAS(last_log, want);
	/* the rest of the cycle: nothing asked, at once */
	t0 = now_ms();
	CHECK(wc_sym_proc_note(s, g.pid) == -1);
	CHECK(now_ms() - t0 < 50);
	wc_sym_stats(s, &st);
	CHECK(st.helper_starts == 1 && st.helper_stalls == 1 &&
	      st.helper_skipped == 1);
	/* the next cycle: a new helper, but not for what stalled the last */
	wc_sym_cycle(s);
	CHECK(wc_sym_proc_note(s, f.pid) == -1);
	wc_sym_stats(s, &st);
	CHECK(st.helper_starts == 1 && st.helper_skipped == 2);
	/* the rest is asked of a new helper once the helpers' share of time
	 * (a twentieth, after a burst of 1 s) allows: a stall that a busy
	 * host stretched past the burst leaves none for seconds */
	for (i = 0; i < 300; i++) {
		CHECK(wc_sym_proc_note(s, g.pid) == -1);
		wc_sym_stats(s, &st);
		if (st.helper_starts == 2)
			break;
		usleep(100 * 1000);
	}
	CHECK(st.helper_starts == 2 && st.helper_stalls == 2);
	/* freeing never waits for a stuck helper */
	t0 = now_ms();
	wc_sym_free(s);
	CHECK(now_ms() - t0 < 1000);
	fx_stop(&f);
	fx_stop(&g);
}

/* A helper that dies is reported with how it died, and is started again
 * at the next cycle. */
static void test_helper_death(void)
{
	const char *argv[] = {fx("fx_pie"), NULL};
	struct wc_sym_opts o = {.deadline_ms = 2000};
	struct wc_sym_stats st;
	struct fixture f;
	struct wc_sym *s;

	NEED_FIXTURES();
	o.helper = fake_helper("dying_helper", "#!/bin/sh\nkill -SEGV $$\n");
	if (!o.helper || !fx_start(&f, argv)) {
		CHECK(!"fake helper and fixture");
		return;
	}
	s = wc_sym_new(&o, NULL, 0);
	last_log[0] = '\0';
	CHECK(s && wc_sym_proc_note(s, f.pid) == -1);
	CHECK_STR_HAS(last_log, "died of signal 11");
	wc_sym_stats(s, &st);
	CHECK(st.helper_crashes == 1 && st.helper_stalls == 0);
	/* collectd ignores SIGCHLD: the kernel reaps the helper, its pid
	 * may be another's at once; it is still seen to die */
	signal(SIGCHLD, SIG_IGN);
	wc_sym_cycle(s);
	last_log[0] = '\0';
	CHECK(wc_sym_proc_note(s, getpid()) == -1);
	CHECK_STR_HAS(last_log, " died reading");
	wc_sym_stats(s, &st);
	CHECK(st.helper_crashes == 2);
	signal(SIGCHLD, SIG_DFL);
	wc_sym_free(s);
	/* a helper that is not there: said once, the frames unnamed */
	o.helper = fx("no_such_helper");
	s = wc_sym_new(&o, NULL, 0);
	last_log[0] = '\0';
	CHECK(s && wc_sym_proc_note(s, f.pid) == -1);
	CHECK_STR_HAS(last_log, "cannot start");
	last_log[0] = '\0';
	wc_sym_cycle(s);
	CHECK(wc_sym_proc_note(s, f.pid) == -1);
	CHECK(last_log[0] == '\0');
	wc_sym_free(s);
	fx_stop(&f);
}

/* The helper this test can use: the one given, or the build tree's. */
static const char *real_helper(void)
{
	const char *env = getenv("WC_SYM_HELPER");

	if (env)
		return env;
	return access("./wallclock-symd", X_OK) == 0 ? "./wallclock-symd"
						     : NULL;
}

/* The real helper, started after a sleep of `delay` seconds; NULL if
 * there is none here or the script cannot be written. */
static const char *late_helper(const char *name, const char *delay)
{
	char script[PATH_MAX + 64], real[PATH_MAX];

	if (!real_helper() || !realpath(real_helper(), real))
		return NULL;
	fmt(script, sizeof(script), "#!/bin/sh\nsleep %s\nexec %s \"$@\"\n",
	    delay, real);
	return fake_helper(name, script);
}

/* A helper that takes 1.5 s to come up spends more than the helpers'
 * burst of 1 s: the next process is not read for a while, with any budget
 * but the whole one (a command-line recording's end), which reads it at
 * once. */
static void test_whole_budget(void)
{
	const char *argv[] = {fx("fx_pie"), NULL};
	struct wc_sym_opts o = {.deadline_ms = 5000};
	struct fixture f, g;
	struct wc_sym *s;
	double t0;

	NEED_FIXTURES();
	if (!real_helper())
		SKIP("no wallclock-symd here (run from the build tree, or "
		     "set WC_SYM_HELPER)");
	o.helper = late_helper("slow_helper", "1.5");
	if (!o.helper || !fx_start(&f, argv) || !fx_start(&g, argv)) {
		CHECK(!"slow helper and fixtures");
		return;
	}
	s = wc_sym_new(&o, NULL, 0);
	t0 = now_ms();
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	CHECK(now_ms() - t0 >= 1400);
	wc_sym_allow(s, WC_SYM_UNLIMITED);
	CHECK(wc_sym_proc_note(s, g.pid) == -1);
	wc_sym_allow(s, WC_SYM_WHOLE);
	CHECK(wc_sym_proc_note(s, g.pid) == 0);
	wc_sym_free(s);
	fx_stop(&f);
	fx_stop(&g);
}

/* A helper slow to come up spends a drain's budget on a process's maps,
 * and its files are left for later.  The next note in the same cycle
 * reads them (pass 0), and so does the first lookup that needs one
 * (pass 1): a recording's one flush must not leave the process unnamed. */
static void test_unread_read_again(void)
{
	const char *argv[] = {fx("fx_pie"), NULL};
	struct wc_sym_opts o = {.deadline_ms = 5000};
	struct wc_sym_stats st;
	struct wc_sym *s;
	struct fixture f;
	char buf[256];
	int pass;

	NEED_FIXTURES();
	if (!real_helper())
		SKIP("no wallclock-symd here (run from the build tree, or "
		     "set WC_SYM_HELPER)");
	o.helper = late_helper("late_helper", "0.2");
	if (!o.helper || !fx_start(&f, argv)) {
		CHECK(!"slow helper and fixture");
		return;
	}
	for (pass = 0; pass < 2; pass++) {
		s = wc_sym_new(&o, NULL, 0);
		if (!s) {
			CHECK(!"symbolizer");
			break;
		}
		/* the helper's start spends the millisecond: maps only */
		wc_sym_allow(s, 1);
		CHECK(wc_sym_proc_note(s, f.pid) == 0);
		wc_sym_stats(s, &st);
		CHECK(st.helper_skipped > 0);
		if (pass == 0) {
			/* nothing read meanwhile: a lookup has no name */
			wc_sym_allow(s, 0);
			CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "alpha"), false,
					  buf, sizeof(buf)) == WC_SYM_MODULE);
			wc_sym_allow(s, 1000);
			CHECK(wc_sym_proc_note(s, f.pid) == 0);
			wc_sym_allow(s, 0);
		} else {
			wc_sym_allow(s, WC_SYM_WHOLE);
		}
		CHECK_NAME(s, f.pid, fx_addr(&f, "alpha"), false,
			   "wcsym_fixture_alpha");
		wc_sym_free(s);
	}
	fx_stop(&f);
}

static void *note_and_end(void *arg)
{
	struct wc_sym *s = arg;

	return (void *)(intptr_t)wc_sym_proc_note(s, getppid());
}

/* collectd ends its idle read threads at shutdown while another still
 * flushes: the helper a read thread started serves on after that thread. */
static void test_helper_outlives_its_thread(void)
{
	struct wc_sym_opts o = {.deadline_ms = 5000, .helper = real_helper()};
	struct wc_sym_stats st;
	struct wc_sym *s;
	pthread_t th;
	void *rc = (void *)1;

	if (!o.helper)
		SKIP("no wallclock-symd here (run from the build tree, or "
		     "set WC_SYM_HELPER)");
	s = wc_sym_new(&o, NULL, 0);
	CHECK(s && pthread_create(&th, NULL, note_and_end, s) == 0 &&
	      pthread_join(th, &rc) == 0 && rc == NULL);
	usleep(100 * 1000); /* a death signal takes a moment to land */
	last_log[0] = '\0';
	CHECK(s && wc_sym_proc_note(s, getpid()) == 0);
	CHECK(last_log[0] == '\0');
	if (last_log[0])
		printf("# log: %s\n", last_log);
	wc_sym_stats(s, &st);
	CHECK(st.helper_starts == 1 && st.helper_crashes == 0);
	wc_sym_free(s);
}

/* pid's state letter in /proc, or '?' */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	return p && p[1] == ' ' ? p[2] : '?';
}

/* The middle process: starts the helper as its child, says its pid, and
 * waits to be killed. */
static void run_middle(const char *helper, int sock, int out)
{
	char parent[24], wire[16];
	pid_t h = fork();

	if (h == 0) {
		snprintf(parent, sizeof(parent), "%d", (int)getppid());
		snprintf(wire, sizeof(wire), "%d", WC_WIRE_VERSION);
		if (dup2(sock, 3) == 3)
			execl(helper, helper, "--parent", parent, "--wire",
			      wire, (char *)NULL);
		_exit(127);
	}
	if (write(out, &h, sizeof(h)) != sizeof(h))
		_exit(1);
	pause();
	_exit(0);
}

/* The helper ends with its parent process even while its socket stays
 * open elsewhere (here, in this test): nothing of collectd outlives it. */
static void test_helper_ends_with_parent(void)
{
	const char *helper = real_helper();
	int sv[2], p[2], st = -1, i;
	pid_t mid, h = -1;

	if (!helper)
		SKIP("no wallclock-symd here (run from the build tree, or "
		     "set WC_SYM_HELPER)");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(p)) {
		CHECK(!"subreaper, socket and pipe");
		return;
	}
	mid = fork();
	if (mid == 0)
		run_middle(helper, sv[1], p[1]);
	CHECK(mid > 0 && read(p[0], &h, sizeof(h)) == sizeof(h) && h > 0);
	usleep(300 * 1000); /* past its setup: it serves */
	CHECK(h > 0 && proc_state(h) != 'Z' && proc_state(h) != '?');
	kill(mid, SIGKILL);
	waitpid(mid, NULL, 0);
	/* now this process's child: ended within two seconds, of itself */
	for (i = 0; i < 200 && h > 0 && waitpid(h, &st, WNOHANG) == 0; i++)
		usleep(10 * 1000);
	CHECK(i < 200);
	if (i == 200) {
		kill(h, SIGKILL);
		waitpid(h, NULL, 0);
	}
	close(sv[0]);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
}

/* A module cache over a source, and the mapping of fx_pie in a fixture:
 * what the tests of reading a module again share. */
struct mod_rig {
	struct wc_sym_src *src;
	struct wc_mod_cache *c;
	struct wc_fetch_maps fm;
	const struct wc_proc_map *m;
	const struct wc_fetch_file *file;
	pid_t pid;
	uint64_t off; /* alpha's, in the file */
};

static bool mod_rig_open(struct mod_rig *r, const struct fixture *f,
			 const struct wc_sym_src_opts *so)
{
	struct wc_mod_cache_opts mo = {.max_tables = 16, .max_bytes = 1 << 24};
	size_t i;

	memset(r, 0, sizeof(*r));
	r->pid = f->pid;
	r->src = wc_sym_src_new(so);
	mo.src = r->src;
	r->c = wc_mod_cache_new(&mo);
	if (!r->src || !r->c || wc_sym_src_maps(r->src, f->pid, 0, &r->fm))
		return false;
	for (i = 0; i < r->fm.n && !r->m; i++)
		if (strstr(r->fm.maps[i].path, "/fx_pie"))
			r->m = &r->fm.maps[i], r->file = &r->fm.files[i];
	if (r->m)
		r->off = fx_addr(f, "alpha") - r->m->start + r->m->pgoff;
	return r->m != NULL;
}

/* The rig's module, and alpha's name in it (NULL if none). */
static const char *mod_rig_name(struct mod_rig *r, struct wc_mod **mod)
{
	*mod = wc_mod_file(r->c, r->pid, r->m, r->file);
	return *mod ? wc_mod_lookup(r->c, *mod, r->off) : NULL;
}

/* The rig's module read once without a name (not read: read again when
 * next needed), and again after mend(r, arg): alpha named then. */
static void mod_rig_read_again(struct mod_rig *r,
			       void (*mend)(struct mod_rig *, const void *),
			       const void *arg)
{
	struct wc_mod *mod = NULL, *again = NULL;
	const char *name = mod_rig_name(r, &mod);

	CHECK(mod && wc_mod_evicted(mod) && !name);
	if (name)
		printf("  named %s at first\n", name);
	mend(r, arg);
	name = mod_rig_name(r, &again);
	CHECK(again == mod && name && !strcmp(name, "wcsym_fixture_alpha"));
	wc_mod_unref(r->c, again);
	wc_mod_unref(r->c, mod);
}

static void mod_rig_close(struct mod_rig *r)
{
	wc_fetch_maps_free(&r->fm);
	if (r->c)
		wc_mod_cache_free(r->c);
	if (r->src)
		wc_sym_src_free(r->src);
}

static void allow_all(struct mod_rig *r, const void *arg)
{
	(void)arg;
	wc_sym_src_allow(r->src, WC_SYM_UNLIMITED);
}

/* A file not read for want of time (the caller's budget spent, or the
 * helper stopped) is read when next needed, not left without names. */
static void test_unread_retried(void)
{
	const char *argv[] = {fx("fx_pie"), NULL};
	struct wc_sym_src_opts so = {.helper = real_helper()};
	struct mod_rig r;
	struct fixture f;

	NEED_FIXTURES();
	if (!so.helper)
		SKIP("no wallclock-symd here (run from the build tree, or "
		     "set WC_SYM_HELPER)");
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	if (mod_rig_open(&r, &f, &so)) {
		wc_sym_src_allow(r.src, 0);
		mod_rig_read_again(&r, allow_all, NULL);
	} else {
		CHECK(!"module rig");
	}
	mod_rig_close(&r);
	fx_stop(&f);
}

static void test_exited_process(void)
{
	const char *argv[] = {fx("fx_pie"), "--lib", fx("libfx.so"), "--vdso",
			      NULL};
	struct wc_sym_stats st;
	struct fixture f;
	struct wc_sym *s;
	char buf[256];

	NEED_FIXTURES();
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	fx_stop(&f); /* exited and reaped: /proc/PID is gone */
	CHECK(kill(f.pid, 0) == -1);
	CHECK_NAME(s, f.pid, fx_addr(&f, "alpha"), false,
		   "wcsym_fixture_alpha");
	CHECK_NAME(s, f.pid, fx_addr(&f, "lib_gamma"), false,
		   "wcsym_lib_gamma");
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "libc_nanosleep"), false, buf,
			  sizeof(buf)) == WC_SYM_NAME);
	CHECK_STR_HAS(buf, "nanosleep");
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "vdso_clock_gettime"), false,
			  buf, sizeof(buf)) == WC_SYM_NAME);
	CHECK_STR_HAS(buf, "clock_gettime");
	/* Kept to the end of the cycle, then forgotten. */
	wc_sym_proc_exited(s, f.pid);
	CHECK_NAME(s, f.pid, fx_addr(&f, "alpha"), false,
		   "wcsym_fixture_alpha");
	wc_sym_cycle(s);
	wc_sym_stats(s, &st);
	CHECK(st.procs == 0);
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "alpha"), false, buf,
			  sizeof(buf)) == WC_SYM_UNKNOWN);
	CHECK(wc_sym_proc_note(s, f.pid) == -1);
	wc_sym_free(s);
}

static void test_vdso(void)
{
	const char *argv[] = {fx("fx_pie"), "--vdso", NULL};
	struct fixture f;
	struct wc_sym *s;
	char buf[256];

	NEED_FIXTURES();
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "vdso_clock_gettime"), false,
			  buf, sizeof(buf)) == WC_SYM_NAME);
	CHECK_STR_HAS(buf, "clock_gettime");
	printf("# vdso: %s\n", buf);
	wc_sym_free(s);
	fx_stop(&f);
}

/* A proc root of our making: copies of a process's maps, stat and status,
 * its root, and no map_files or mem.  Files must then be found through
 * the root, and the vdso through our own. */
static int fake_proc(const char *dir, pid_t pid)
{
	static const char *const files[] = {"maps", "status"};
	char from[PATH_MAX], to[PATH_MAX];
	size_t i;

	fmt(to, sizeof(to), "%s/%d", dir, (int)pid);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -1;
	if (mkdir(to, 0755))
		return -1;
	for (i = 0; i < 2; i++) {
		fmt(from, sizeof(from), "/proc/%d/%s", (int)pid, files[i]);
		fmt(to, sizeof(to), "%s/%d/%s", dir, (int)pid, files[i]);
		if (copy_file(from, to))
			return -1;
	}
	fmt(from, sizeof(from), "/proc/%d/root", (int)pid);
	fmt(to, sizeof(to), "%s/%d/root", dir, (int)pid);
	return symlink(from, to);
}

/* In the child: a private mount namespace whose root is a tmpfs holding
 * the staged root, then a pid namespace whose init is the fixture. */
static void ns_child(int report, int in, int out, const char *mnt,
		     const char *stage)
{
	char cmd[2 * PATH_MAX + 32], old[PATH_MAX];
	pid_t gc;

#define NS_FAIL(what)                                                          \
	do {                                                                   \
		dprintf(report, "err %s: %s\n", what, strerror(errno));        \
		_exit(2);                                                      \
	} while (0)
	if (unshare(CLONE_NEWNS))
		NS_FAIL("unshare(CLONE_NEWNS)");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		NS_FAIL("mount --make-rprivate /");
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=64m,mode=755"))
		NS_FAIL("mount tmpfs");
	fmt(cmd, sizeof(cmd), "cp -a '%s/.' '%s/'", stage, mnt);
	if (system(cmd) != 0)
		NS_FAIL("cp -a");
	/* pivot_root, as containers do: a chroot would leave maps showing
	 * paths from the namespace's root, not the process's. */
	fmt(old, sizeof(old), "%s/.oldroot", mnt);
	if (mkdir(old, 0700) || syscall(SYS_pivot_root, mnt, old) || chdir("/"))
		NS_FAIL("pivot_root");
	if (umount2("/.oldroot", MNT_DETACH) || rmdir("/.oldroot"))
		NS_FAIL("umount old root");
	/* After the copy: system()'s shell would become the pid
	 * namespace's init, and its exit would end the namespace. */
	if (unshare(CLONE_NEWPID))
		NS_FAIL("unshare(CLONE_NEWPID)");
	gc = fork();
	if (gc == 0) {
		dup2(in, 0);
		dup2(out, 1);
		execl("/wcsym_ns/fx", "fx", "--jit", "--vdso", (char *)NULL);
		_exit(127);
	}
	if (gc < 0)
		NS_FAIL("fork");
	dprintf(report, "pid %d\n", (int)gc);
	close(in);
	close(out);
	waitpid(gc, NULL, 0);
	_exit(0);
#undef NS_FAIL
}

static bool ns_start(struct fixture *f, char *why, size_t whylen)
{
	int in[2], out[2], rep[2];
	char line[512] = "";
	FILE *r;
	int gc = 0;

	memset(f, 0, sizeof(*f));
	f->in = -1;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) ||
	    pipe2(rep, O_CLOEXEC))
		return false;
	mkdir(fx("nsmnt"), 0755);
	fflush(stdout);
	f->wait = fork();
	if (f->wait == 0) {
		/* Without exec, CLOEXEC closes nothing: a write end kept
		 * here would keep the fixture from ever seeing EOF. */
		close(rep[0]);
		close(in[1]);
		close(out[0]);
		ns_child(rep[1], in[0], out[1], fx("nsmnt"), fx("nsroot"));
	}
	close(rep[1]);
	close(in[0]);
	close(out[1]);
	f->in = in[1];
	r = fdopen(rep[0], "r");
	if (r && fgets(line, sizeof(line), r) && sscanf(line, "pid %d", &gc))
		f->pid = gc;
	if (r)
		fclose(r);
	if (!f->pid) {
		line[strcspn(line, "\n")] = '\0';
		fmt(why, whylen, "namespace setup failed: %s",
		    line[0] ? line : "(no word)");
		close(out[0]);
		fx_stop(f);
		return false;
	}
	if (!fx_read(f, out[0])) {
		fmt(why, whylen, "the fixture did not start in its root");
		fx_stop(f);
		return false;
	}
	return true;
}

static void test_mount_namespace(void)
{
	char why[600], status[64], fake[PATH_MAX], buf[256];
	struct fixture f;
	struct wc_sym *s;
	pid_t nspid = 0;
	uid_t uid;

	NEED_FIXTURES();
	if (geteuid() != 0)
		SKIP("needs root (unshare, mount, pivot_root)");
	/* The binary's path exists only inside the namespace. */
	CHECK(access("/wcsym_ns/fx", F_OK) != 0);
	if (!ns_start(&f, why, sizeof(why))) {
		if (strstr(why, "EPERM") || strstr(why, "not permitted"))
			SKIP(why);
		printf("  %s\n", why);
		CHECK(!"namespace fixture started");
		return;
	}
	CHECK(wc_proc_status("/proc", f.pid, &nspid, &uid) == 0);
	CHECK(nspid == 1);
	fmt(status, sizeof(status), "%d", (int)nspid);

	/* Through map_files. */
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	CHECK_NAME(s, f.pid, fx_addr(&f, "alpha"), false,
		   "wcsym_fixture_alpha");
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "libc_nanosleep"), false, buf,
			  sizeof(buf)) == WC_SYM_NAME);
	CHECK_STR_HAS(buf, "nanosleep");
	/* The perf map is /tmp/perf-1.map in its root: NSpid, not pid. */
	CHECK_NAME(s, f.pid, fx_addr(&f, "jit_one"), false, "jit_one");
	wc_sym_free(s);

	/* Through /proc/PID/root only (no map_files, no mem). */
	fmt(fake, sizeof(fake), "%s/fakeproc", fxdir);
	CHECK(fake_proc(fake, f.pid) == 0);
	s = sym_new(fake, NULL);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	CHECK_NAME(s, f.pid, fx_addr(&f, "alpha"), false,
		   "wcsym_fixture_alpha");
	CHECK_NAME(s, f.pid, fx_addr(&f, "beta"), false, "wcsym_static_beta");
	CHECK_NAME(s, f.pid, fx_addr(&f, "jit_one"), false, "jit_one");
	/* Its vdso could not be read: ours stands in. */
	CHECK(wc_sym_user(s, f.pid, fx_addr(&f, "vdso_clock_gettime"), false,
			  buf, sizeof(buf)) == WC_SYM_NAME);
	CHECK_STR_HAS(buf, "clock_gettime");
	wc_sym_free(s);
	fx_stop(&f);
}

/* Point fake's map_files entry for m at target. */
static int fake_map_file(const char *fake, pid_t pid,
			 const struct wc_proc_map *m, const char *target)
{
	char dir[PATH_MAX], link[PATH_MAX];

	fmt(dir, sizeof(dir), "%s/%d/map_files", fake, (int)pid);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -1;
	fmt(link, sizeof(link), "%s/%" PRIx64 "-%" PRIx64, dir, m->start,
	    m->end);
	unlink(link);
	return symlink(target, link);
}

/* arg: the fake proc root and the real file's path. */
static void map_the_real_file(struct mod_rig *r, const void *arg)
{
	const char *const *at = arg;

	CHECK(fake_map_file(at[0], r->pid, r->m, at[1]) == 0);
}

/*
 * Another file at a mapping's place when it is opened (a process may map
 * one there after its maps were read) is not read as the mapping's file:
 * its names would be kept for the file it replaced, for every process
 * mapping that.  Read again later, the mapping's own file is.  A proc
 * root of our making, whose map_files entry names another file, stands
 * in for the process; in collectd and in the helper.
 */
static void remapped_file(const char *helper)
{
	const char *argv[] = {fx("fx_pie"), NULL};
	struct wc_sym_src_opts so = {.helper = helper};
	char fake[PATH_MAX], real[PATH_MAX];
	struct mod_rig r;
	struct fixture f;

	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	fmt(fake, sizeof(fake), "%s/remapped-%s", fxdir,
	    helper ? "helper" : "inline");
	CHECK(fake_proc(fake, f.pid) == 0);
	so.proc_root = fake;
	if (mod_rig_open(&r, &f, &so) && realpath(fx("fx_pie"), real)) {
		CHECK(fake_map_file(fake, f.pid, r.m, fx("libfx.so")) == 0);
		mod_rig_read_again(&r, map_the_real_file,
				   (const char *const[]){fake, real});
	} else {
		CHECK(!"module rig");
	}
	mod_rig_close(&r);
	fx_stop(&f);
}

/*
 * A module is keyed by what map_files' stat showed when the maps were
 * read; the file read for it must be that one too, not only the one the
 * maps line shows: between the two a process may have swapped in a file
 * of its own with the other's inode number, and swapped back.
 */
static void test_expected_file(void)
{
	const char *argv[] = {fx("fx_pie"), NULL};
	struct wc_fetch_ctx c = {.proc_root = "/proc"};
	struct wc_fetch_file want, other;
	struct wc_fetch_image img;
	struct wc_proc_map moved;
	struct wc_fetch_maps fm;
	struct wc_symtab t;
	struct fixture f;
	size_t i;
	int k;

	NEED_FIXTURES();
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	CHECK(wc_fetch_maps(&c, f.pid, 0, &fm) == 0);
	for (i = 0; i < fm.n && !strstr(fm.maps[i].path, "/fx_pie"); i++)
		;
	CHECK(i < fm.n && fm.files[i].known);
	if (i < fm.n) {
		want = fm.files[i];
		CHECK(wc_fetch_image(&c, f.pid, &fm.maps[i], &want, &img) == 0);
		for (k = 0; k < 3; k++) {
			other = want;
			other.size += k == 0;
			other.mtime_ns += k == 1;
			other.dev ^= k == 2;
			CHECK(wc_fetch_image(&c, f.pid, &fm.maps[i], &other,
					     &img) == -1 &&
			      errno == ESTALE);
		}
		wc_symtab_init(&t, 1 << 20, WC_FETCH_UNSIZED_MAX);
		CHECK(wc_fetch_symbols(&c, f.pid, &fm.maps[i], &other, &t) ==
			      -1 &&
		      errno == ESTALE);
		wc_symtab_free(&t);
		/* what the kernel shows is checked as well */
		moved = fm.maps[i];
		moved.dev_minor ^= 1;
		CHECK(wc_fetch_image(&c, f.pid, &moved, NULL, &img) == -1 &&
		      errno == ESTALE);
	}
	wc_fetch_maps_free(&fm);
	fx_stop(&f);
}

static void test_remapped_file(void)
{
	NEED_FIXTURES();
	remapped_file(NULL);
	if (!real_helper())
		SKIP("no wallclock-symd here for the helper's half (run from "
		     "the build tree, or set WC_SYM_HELPER)");
	remapped_file(real_helper());
}

/* Two processes of one binary share its table; so do two copies of one
 * binary (other inode, same build-id). */
static void test_sharing(void)
{
	const char *argv[] = {fx("fx_pie"), NULL};
	const char *argv_copy[] = {fx("fx_pie_copy"), NULL};
	struct wc_sym_stats a, b, c;
	struct fixture f1, f2, f3;
	struct wc_sym *s;

	NEED_FIXTURES();
	CHECK(copy_file(fx("fx_pie"), fx("fx_pie_copy")) == 0);
	if (!fx_start(&f1, argv) || !fx_start(&f2, argv) ||
	    !fx_start(&f3, argv_copy)) {
		CHECK(!"fixtures started");
		return;
	}
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f1.pid) == 0);
	wc_sym_stats(s, &a);
	CHECK(wc_sym_proc_note(s, f2.pid) == 0);
	wc_sym_stats(s, &b);
	CHECK(b.modules == a.modules);
	CHECK(b.module_misses == a.module_misses);
	CHECK(b.module_hits > a.module_hits);
	CHECK(wc_sym_proc_note(s, f3.pid) == 0);
	wc_sym_stats(s, &c);
	CHECK(c.modules == a.modules);
	CHECK(c.module_misses == b.module_misses + 1);
	CHECK(c.procs == 3);
	CHECK_NAME(s, f3.pid, fx_addr(&f3, "alpha"), false,
		   "wcsym_fixture_alpha");
	/* Noting again in the same cycle is a lookup. */
	CHECK(wc_sym_proc_note(s, f2.pid) == 0);
	wc_sym_stats(s, &a);
	CHECK(a.module_hits == c.module_hits);
	wc_sym_free(s);
	fx_stop(&f1);
	fx_stop(&f2);
	fx_stop(&f3);
}

/* A place is the module and file offset: the same function in two
 * processes of one binary (at other addresses: PIE) is one place, in a
 * copy of the file another; JIT code and anonymous memory have none. */
static void test_places(void)
{
	const char *argv[] = {fx("fx_pie"), NULL};
	const char *argv_copy[] = {fx("fx_pie_copy"), NULL};
	const char *argv_jit[] = {fx("fx_pie"), "--jit", NULL};
	struct fixture f1, f2, f3, fj;
	uint32_t m1 = 0, m2 = 0, m3 = 0, mj;
	uint64_t o1 = 0, o2 = 0, o3 = 0, oj, a1, a2;
	struct wc_sym *s;

	NEED_FIXTURES();
	CHECK(copy_file(fx("fx_pie"), fx("fx_pie_copy")) == 0);
	if (!fx_start(&f1, argv) || !fx_start(&f2, argv) ||
	    !fx_start(&f3, argv_copy) || !fx_start(&fj, argv_jit)) {
		CHECK(!"fixtures started");
		return;
	}
	s = sym_new(NULL, NULL);
	CHECK(s && wc_sym_proc_note(s, f1.pid) == 0 &&
	      wc_sym_proc_note(s, f2.pid) == 0 &&
	      wc_sym_proc_note(s, f3.pid) == 0 &&
	      wc_sym_proc_note(s, fj.pid) == 0);
	a1 = fx_addr(&f1, "alpha");
	a2 = fx_addr(&f2, "alpha");
	CHECK(wc_sym_user_place(s, f1.pid, a1, false, &m1, &o1));
	CHECK(wc_sym_user_place(s, f2.pid, a2, false, &m2, &o2));
	CHECK(wc_sym_user_place(s, f3.pid, fx_addr(&f3, "alpha"), false, &m3,
				&o3));
	CHECK(m1 != 0 && m1 == m2 && o1 == o2);
	CHECK(m3 != m1 && o3 == o1);
	/* a return address is placed inside its call, as it is named */
	CHECK(wc_sym_user_place(s, f1.pid, a1 + 1, true, &m2, &o2));
	CHECK(m2 == m1 && o2 == o1);
	CHECK(!wc_sym_user_place(s, fj.pid, fx_addr(&fj, "jit_one"), false, &mj,
				 &oj));
	CHECK(!wc_sym_user_place(s, fj.pid, fx_addr(&fj, "jit_gap"), false, &mj,
				 &oj));
	CHECK(!wc_sym_user_place(s, 0x3fffff, a1, false, &mj, &oj));
	wc_sym_free(s);
	fx_stop(&f1);
	fx_stop(&f2);
	fx_stop(&f3);
	fx_stop(&fj);
}

/* The table evicted is the one used longest ago: a binary's table that
 * a lookup just used stays, one only loaded earlier goes. */
static void test_lru(void)
{
	const char *argv1[] = {fx("fx_pie"), NULL};
	const char *argv2[] = {fx("fx_link"), NULL};
	const char *argv3[] = {fx("fx_nopie"), NULL};
	struct wc_sym_opts o = {.max_modules = 5,
				.helper = getenv("WC_SYM_HELPER")};
	struct fixture f1, f2, f3;
	struct wc_sym_stats st;
	struct wc_sym *s;
	char buf[256];

	NEED_FIXTURES();
	if (!fx_start(&f1, argv1) || !fx_start(&f2, argv2) ||
	    !fx_start(&f3, argv3)) {
		CHECK(!"fixtures started");
		return;
	}
	s = wc_sym_new(&o, NULL, 0);
	/* fx_pie, libc, ld.so, vdso; then fx_link's table, its libraries
	 * shared (a hit marks them used too). */
	CHECK(s && wc_sym_proc_note(s, f1.pid) == 0);
	CHECK(wc_sym_proc_note(s, f2.pid) == 0);
	wc_sym_stats(s, &st);
	CHECK(st.modules == 5 && st.evictions == 0);
	CHECK_NAME(s, f1.pid, fx_addr(&f1, "alpha"), false,
		   "wcsym_fixture_alpha");
	/* A sixth table: fx_link's is the least recently used. */
	CHECK(wc_sym_proc_note(s, f3.pid) == 0);
	wc_sym_stats(s, &st);
	CHECK(st.modules == 5 && st.evictions == 1);
	CHECK_NAME(s, f1.pid, fx_addr(&f1, "alpha"), false,
		   "wcsym_fixture_alpha");
	CHECK_NAME(s, f3.pid, fx_addr(&f3, "alpha"), false,
		   "wcsym_fixture_alpha");
	CHECK(wc_sym_user(s, f2.pid, fx_addr(&f2, "alpha"), false, buf,
			  sizeof(buf)) == WC_SYM_MODULE);
	CHECK_STR_HAS(buf, "fx_link+0x");
	/* Its next note, a cycle later, reads it again. */
	wc_sym_cycle(s);
	CHECK(wc_sym_proc_note(s, f2.pid) == 0);
	CHECK_NAME(s, f2.pid, fx_addr(&f2, "alpha"), false,
		   "wcsym_fixture_alpha");
	wc_sym_free(s);
	fx_stop(&f1);
	fx_stop(&f2);
	fx_stop(&f3);
}

/* A proc root that is /proc without kallsyms: the kernel table stays out
 * of the byte counts. */
static int proc_without_kernel(const char *dir, pid_t pid)
{
	char from[64], to[PATH_MAX];

	if (mkdir(dir, 0755) && errno != EEXIST)
		return -1;
	fmt(from, sizeof(from), "/proc/%d", (int)pid);
	fmt(to, sizeof(to), "%s/%d", dir, (int)pid);
	return symlink(from, to);
}

static void test_bounds(void)
{
	const char *argv[] = {fx("fx_pie"), "--lib", fx("libfx.so"), "--vdso",
			      NULL};
	struct wc_sym_opts o = {.helper = getenv("WC_SYM_HELPER")};
	struct wc_sym_stats st, st2;
	struct fixture f, g;
	struct wc_sym *s;
	char dir[PATH_MAX], buf[256];
	int rc;

	NEED_FIXTURES();
	if (!fx_start(&f, argv) || !fx_start(&g, argv)) {
		CHECK(!"fixtures started");
		return;
	}
	fmt(dir, sizeof(dir), "%s/nokproc", fxdir);
	CHECK(proc_without_kernel(dir, f.pid) == 0);
	CHECK(proc_without_kernel(dir, g.pid) == 0);

	/* Two tables for five files: the rest are evicted, least recently
	 * used first, and what lost its table answers with an offset. */
	o.max_modules = 2;
	o.proc_root = dir;
	s = wc_sym_new(&o, NULL, 0);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	wc_sym_stats(s, &st);
	CHECK(st.modules <= 2);
	CHECK(st.evictions >= 3);
	rc = wc_sym_user(s, f.pid, fx_addr(&f, "alpha"), false, buf,
			 sizeof(buf));
	CHECK(rc == WC_SYM_NAME || rc == WC_SYM_MODULE);
	rc = wc_sym_user(s, f.pid, fx_addr(&f, "lib_gamma"), false, buf,
			 sizeof(buf));
	CHECK(rc == WC_SYM_NAME || rc == WC_SYM_MODULE);
	/* The next cycle's note reads evicted tables again. */
	wc_sym_cycle(s);
	CHECK(wc_sym_proc_note(s, f.pid) == 0);
	wc_sym_stats(s, &st2);
	CHECK(st2.module_misses > st.module_misses);
	CHECK(st2.modules <= 2);
	wc_sym_free(s);

	/* Bytes: a tight budget still resolves the small tables. */
	memset(&o, 0, sizeof(o));
	o.max_bytes = 256 * 1024;
	o.proc_root = dir;
	s = wc_sym_new(&o, NULL, 0);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	rc = wc_sym_user(s, f.pid, fx_addr(&f, "alpha"), false, buf,
			 sizeof(buf));
	CHECK(rc == WC_SYM_NAME || rc == WC_SYM_MODULE);
	wc_sym_cycle(s);
	wc_sym_stats(s, &st);
	CHECK(st.bytes <= o.max_bytes);
	printf("# bounds: %" PRIu64 " tables in %" PRIu64
	       " bytes under a %zu-byte budget\n",
	       st.modules, st.bytes, o.max_bytes);
	wc_sym_free(s);

	/* One process slot: a second is refused while the first is in use
	 * this cycle, and replaces it in the next. */
	memset(&o, 0, sizeof(o));
	o.max_procs = 1;
	o.proc_root = dir;
	s = wc_sym_new(&o, NULL, 0);
	CHECK(s && wc_sym_proc_note(s, f.pid) == 0);
	CHECK(wc_sym_proc_note(s, g.pid) == -1);
	wc_sym_cycle(s);
	CHECK(wc_sym_proc_note(s, g.pid) == 0);
	wc_sym_stats(s, &st);
	CHECK(st.procs == 1 && st.evictions == 1);
	CHECK_NAME(s, g.pid, fx_addr(&g, "alpha"), false,
		   "wcsym_fixture_alpha");
	/* Forgotten once WC_SYM_IDLE_CYCLES whole cycles passed unused
	 * after the one it was used in. */
	for (rc = 0; rc < WC_SYM_IDLE_CYCLES; rc++)
		wc_sym_cycle(s);
	wc_sym_stats(s, &st);
	CHECK(st.procs == 1);
	wc_sym_cycle(s);
	wc_sym_stats(s, &st);
	CHECK(st.procs == 0);
	wc_sym_free(s);
	fx_stop(&f);
	fx_stop(&g);
}

/* --- hostile ELF ----------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

/* Everything the symbolizer does with an image; must never crash. */
static size_t chew(char *img, size_t len)
{
	struct wc_elf_info info;
	struct wc_symtab t;
	struct wc_elf e;
	size_t n = 0;
	uint64_t va;
	int pass;

	if (wc_elf_open_mem(&e, img, len))
		return 0;
	wc_elf_read_info(&e, &info);
	wc_elf_vaddr(info.segs, info.nsegs, 0x1000, &va);
	for (pass = 0; pass < 2; pass++) {
		wc_symtab_init(&t, 1 << 20, 64);
		wc_elf_symbols(&e, pass, &t);
		wc_symtab_finish(&t);
		n += t.n;
		if (t.n)
			wc_symtab_find(&t, t.ents[t.n / 2].addr);
		wc_symtab_free(&t);
	}
	wc_elf_close(&e);
	return n;
}

static char *slurp(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size);
	if (buf && read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static Elf64_Shdr *symtab_shdr(char *img, size_t len)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	size_t i;

	if (len < sizeof(*eh) || eh->e_shoff > len ||
	    eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff)
		return NULL;
	for (i = 0; i < eh->e_shnum; i++) {
		Elf64_Shdr *sh = (Elf64_Shdr *)(img + eh->e_shoff) + i;

		if (sh->sh_type == SHT_SYMTAB)
			return sh;
	}
	return NULL;
}

/* Write img to a file with its section count extended to shnum (unless
 * negative) and its e_phnum set (unless 0), and open it as a file. */
static int open_copy(char *img, size_t len, long shnum, unsigned phnum)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	struct wc_elf e;
	int fd, rc;

	memcpy(&eh, img, sizeof(eh));
	memcpy(&sh0, img + eh.e_shoff, sizeof(sh0));
	if (shnum >= 0) {
		eh.e_shnum = 0;
		sh0.sh_size = (uint64_t)shnum;
	}
	if (phnum)
		eh.e_phnum = (Elf64_Half)phnum;
	fd = open(fx("hostile.so"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, img, len) != (ssize_t)len ||
	    pwrite(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    pwrite(fd, &sh0, sizeof(sh0), (off_t)eh.e_shoff) != sizeof(sh0))
		return -2;
	rc = wc_elf_open_fd(&e, fd);
	if (rc == 0)
		wc_elf_close(&e);
	return rc;
}

static void test_corrupt_elf(void)
{
	size_t len, cut, i, good;
	struct wc_symtab t;
	struct wc_elf e;
	Elf64_Shdr *sh;
	char *orig, *img;
	int round;

	NEED_FIXTURES();
	orig = slurp(fx("libfx.so"), &len);
	CHECK(orig != NULL);
	if (!orig)
		return;
	img = malloc(len);
	memcpy(img, orig, len);
	good = chew(img, len);
	CHECK(good >= 3);
	/* Every truncation. */
	for (cut = 0; cut < len; cut += 7) {
		memcpy(img, orig, cut);
		chew(img, cut);
	}
	/* Random bytes flipped, a few at a time. */
	for (round = 0; round < 3000; round++) {
		memcpy(img, orig, len);
		for (i = 0; i < 1 + rng() % 8; i++)
			img[rng() % len] = (char)rng();
		chew(img, len);
	}
	/* A symbol table claiming 2^40 bytes is refused before anything
	 * is read; one past the end of the file is an error. */
	memcpy(img, orig, len);
	sh = symtab_shdr(img, len);
	CHECK(sh != NULL);
	if (sh) {
		sh->sh_size = 1ULL << 40;
		CHECK(wc_elf_open_mem(&e, img, len) == 0);
		wc_symtab_init(&t, 1 << 20, 1);
		errno = 0;
		CHECK(wc_elf_symbols(&e, false, &t) == -1 && errno == E2BIG);
		wc_symtab_free(&t);
		wc_elf_close(&e);
		sh->sh_size = 1 << 19;
		CHECK(wc_elf_open_mem(&e, img, len) == 0);
		wc_symtab_init(&t, 1 << 20, 1);
		CHECK(wc_elf_symbols(&e, false, &t) == -1);
		wc_symtab_free(&t);
		wc_elf_close(&e);
	}
	/* Section and program header counts libelf would allocate for
	 * are refused before it sees them: extended numbering claiming
	 * ten million sections, 65535 program headers. */
	memcpy(img, orig, len);
	CHECK(open_copy(img, len, -1, 0) == 0);
	CHECK(open_copy(img, len, 10000000, 0) == -1);
	CHECK(open_copy(img, len, -1, 0xffff) == -1);
	/* Not ELF at all. */
	memset(img, 'x', len);
	CHECK(wc_elf_open_mem(&e, img, len) == -1);
	free(img);
	free(orig);
}

/* --- cost --------------------------------------------------------------------- */

/* The biggest table a process here loads: libc's, from its debug file. */
static void measure_libc(void)
{
	char lib[PATH_MAX], dbg[PATH_MAX];
	bool have_dbg = libc_debug_file(lib, sizeof(lib), dbg, sizeof(dbg));
	struct wc_symtab t;
	struct wc_elf e;
	double t0, t1;

	if (wc_elf_open_fd(&e, open(have_dbg ? dbg : lib, O_RDONLY)))
		return;
	t0 = now_ms();
	wc_symtab_init(&t, 32 << 20, 4096);
	wc_elf_symbols(&e, !have_dbg, &t);
	wc_symtab_finish(&t);
	t1 = now_ms();
	printf("# cold: %s %s: %zu functions read and sorted in %.2f ms, "
	       "%zu KiB\n",
	       lib, have_dbg ? ".symtab (debug file)" : ".dynsym", t.n, t1 - t0,
	       wc_symtab_bytes(&t) / 1024);
	wc_symtab_free(&t);
	wc_elf_close(&e);
}

static void test_measure(void)
{
	const char *argv[] = {fx("fx_pie"), "--lib", fx("libfx.so"), NULL};
	static const char *const keys[] = {"alpha", "beta", "lib_gamma",
					   "lib_delta", "libc_nanosleep"};
	struct wc_sym_stats before, after;
	uint64_t addrs[5], kaddr = kallsyms_addr("schedule");
	struct fixture f;
	struct wc_sym *s;
	char buf[256];
	double t0, t1;
	int i, n = 1000000;

	NEED_FIXTURES();
	if (!fx_start(&f, argv)) {
		CHECK(!"fixture started");
		return;
	}
	for (i = 0; i < 5; i++)
		addrs[i] = fx_addr(&f, keys[i]);
	s = sym_new(NULL, NULL);
	if (!s)
		return;
	wc_sym_stats(s, &before);
	t0 = now_ms();
	CHECK(wc_sym_proc_note(s, f.pid) == 0);
	t1 = now_ms();
	CHECK(wc_sym_user(s, f.pid, addrs[4], false, buf, sizeof(buf)) ==
	      WC_SYM_NAME);
	wc_sym_stats(s, &after);
	printf("# cold: first note of a process, %" PRIu64
	       " modules read (libc with libc6-dbg symbols if installed): "
	       "%.2f ms, %.2f ms per module\n",
	       after.module_misses, t1 - t0,
	       (t1 - t0) /
		       (double)(after.module_misses ? after.module_misses : 1));
	printf("# memory: %" PRIu64 " tables, %" PRIu64 " KiB, %" PRIu64
	       " KiB per table (kernel table excluded)\n",
	       after.modules, (after.bytes - before.bytes) / 1024,
	       (after.bytes - before.bytes) / 1024 /
		       (after.modules ? after.modules : 1));
	t0 = now_ms();
	for (i = 0; i < n; i++)
		wc_sym_user(s, f.pid, addrs[i % 5], true, buf, sizeof(buf));
	t1 = now_ms();
	printf("# warm: %.3f us per user lookup (binary search, copy out)\n",
	       (t1 - t0) * 1e3 / n);
	if (kaddr) {
		t0 = now_ms();
		for (i = 0; i < n; i++)
			wc_sym_kernel(s, kaddr + (uint64_t)(i % 64), false, buf,
				      sizeof(buf));
		t1 = now_ms();
		printf("# warm: %.3f us per kernel lookup\n",
		       (t1 - t0) * 1e3 / n);
	}
	t0 = now_ms();
	for (i = 0; i < 1000; i++)
		wc_sym_proc_note(s, f.pid);
	t1 = now_ms();
	printf("# warm: %.3f us per repeated note in one cycle\n", t1 - t0);
	t0 = now_ms();
	for (i = 0; i < 100; i++) {
		wc_sym_cycle(s);
		wc_sym_proc_note(s, f.pid);
	}
	t1 = now_ms();
	printf("# warm: %.1f us per first note in a cycle (maps re-read, "
	       "unchanged)\n",
	       (t1 - t0) * 10);
	wc_sym_free(s);
	fx_stop(&f);
	measure_libc();
}

/* --- fixtures --------------------------------------------------------------- */

static void find_sources(char *out, size_t len)
{
	const char *env = getenv("WC_SYM_SRC"), *srcdir = getenv("srcdir");
	char here[PATH_MAX], *slash;

	if (env) {
		fmt(out, len, "%s", env);
		return;
	}
	if (srcdir) {
		fmt(out, len, "%s/tests/unit/sym/fixtures", srcdir);
		return;
	}
	fmt(here, sizeof(here), "%s", __FILE__);
	slash = strrchr(here, '/');
	if (slash)
		*slash = '\0';
	else
		fmt(here, sizeof(here), ".");
	fmt(out, len, "%s/fixtures", here);
}

static void build_fixtures(void)
{
	const char *env = getenv("WC_SYM_FIXTURES");
	char src[PATH_MAX], cmd[3 * PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	double t0 = now_ms();
	int rc;

	find_sources(src, sizeof(src));
	if (env) {
		fmt(fxdir, sizeof(fxdir), "%s", env);
	} else {
		fmt(fxdir, sizeof(fxdir), "%s/wcsym.XXXXXX",
		    tmp ? tmp : "/tmp");
		if (!mkdtemp(fxdir)) {
			fmt(fx_skip, sizeof(fx_skip), "mkdtemp %s: %s", fxdir,
			    strerror(errno));
			return;
		}
		fxdir_made = true;
	}
	fmt(cmd, sizeof(cmd), "sh '%s/build.sh' '%s' >'%s/build.log' 2>&1", src,
	    fxdir, fxdir);
	rc = system(cmd);
	if (rc != 0) {
		fmt(fx_skip, sizeof(fx_skip),
		    "fixtures did not build (%s/build.sh, see %s/build.log;"
		    " needs gcc, g++, binutils)",
		    src, fxdir);
		fxdir_made = false; /* keep the log */
		return;
	}
	printf("# fixtures built in %s in %.0f ms\n", fxdir, now_ms() - t0);
}

int main(void)
{
	check_prog = getenv("WC_SYM_HELPER") ? "test_sym(helper)" : "test_sym";
	wc_log_set(log_sink);
	build_fixtures();
	RUN(test_table);
	RUN(test_line_reader);
	RUN(test_maps_lines);
	RUN(test_perf_map_lines);
	RUN(test_wire);
	RUN(test_kernel);
	RUN(test_kernel_fake);
	RUN(test_non_pie);
	RUN(test_pie_and_library);
	RUN(test_debuglink);
	RUN(test_build_id);
	RUN(test_cxx);
	RUN(test_deleted_binary);
	RUN(test_fallback_and_corrupt_files);
	RUN(test_perf_map);
	RUN(test_open_rules);
	RUN(test_perf_map_bound);
	RUN(test_perf_map_tail_after_overlong);
	RUN(test_perf_map_rules);
	RUN(test_debug_file_rules);
	RUN(test_forged_build_id);
	RUN(test_helper_stall);
	RUN(test_whole_budget);
	RUN(test_unread_read_again);
	RUN(test_helper_death);
	RUN(test_unread_retried);
	RUN(test_helper_outlives_its_thread);
	RUN(test_helper_ends_with_parent);
	RUN(test_exited_process);
	RUN(test_vdso);
	RUN(test_mount_namespace);
	RUN(test_remapped_file);
	RUN(test_expected_file);
	RUN(test_sharing);
	RUN(test_places);
	RUN(test_lru);
	RUN(test_bounds);
	RUN(test_corrupt_elf);
	RUN(test_measure);
	if (fxdir_made)
		rm_tree(fxdir);
	return check_done();
}
