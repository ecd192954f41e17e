/*
 * test_spool.c - the spool directory: names, modes, gzip, atomicity under a
 * polling reader and a writer killed mid-file, retention among hostile
 * names, a full and a read-only file system, planted symlinks and FIFOs,
 * and the refusals of unsafe directories.  Runs as root for chown and
 * mount (those cases SKIP otherwise); the mounts live in a private mount
 * namespace of a child, so a crash leaves nothing mounted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "util/wc_log.h"
#include "spool/wc_spool.h"

#define TRAILER "# end of file\n"
#define WHEN 1704164645 /* 2024-01-02T03:04:05Z */

/* ---- helpers ---- */

static int log_err, log_warn, log_notice;
static char log_last[1024];

static void capture_log(enum wc_log_level level, const char *msg)
{
	if (level == WC_LOG_ERR)
		log_err++;
	else if (level == WC_LOG_WARN)
		log_warn++;
	else if (level == WC_LOG_NOTICE)
		log_notice++;
	snprintf(log_last, sizeof(log_last), "%s", msg);
}

static void log_reset(void)
{
	log_err = log_warn = log_notice = 0;
	log_last[0] = '\0';
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void rm_rf(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory to play in (mode 0700, ours) and the spool path in it.
 * Every test gets its own, removed by done(). */
struct place {
	char base[64];
	char spool[96];
};

static void place_new(struct place *p)
{
	snprintf(p->base, sizeof(p->base), "/tmp/wc_spool_test.XXXXXX");
	if (!mkdtemp(p->base))
		abort();
	snprintf(p->spool, sizeof(p->spool), "%s/spool", p->base);
}

static void place_done(struct place *p)
{
	rm_rf(p->base);
}

static struct wc_spool *open_spool(const char *dir, bool gzip,
				   unsigned keep_files)
{
	struct wc_spool_opts o = {
		.dir = dir, .gzip = gzip, .keep_flushes = keep_files};
	char err[256] = "";
	struct wc_spool *s = wc_spool_open(&o, err, sizeof(err));

	if (!s)
		printf("  open %s: %s\n", dir, err);
	return s;
}

/* Body of `len` bytes of folded-like text ending in TRAILER. */
static char *make_body(size_t len, unsigned seed)
{
	static const char *const words[] = {
		"main",
		"event_loop",
		"dispatch",
		"handle_request",
		"parse_json",
		"read",
		"__libc_read",
		"vfs_read_[k]",
		"epoll_wait",
		"futex_wait_[k]",
		"schedule_[k]",
		"malloc",
		"std::string::append(char const*, unsigned long)"};
	char *b = malloc(len + 1);
	size_t n = 0, t = strlen(TRAILER);

	while (n + t < len) {
		const char *w =
			words[((seed = seed * 1103515245 + 12345) >> 16) % 13];
		int k = snprintf(b + n, len + 1 - n, "%s%s", w,
				 (seed >> 8) % 7 ? ";" : " 1234\n");

		n += (size_t)k;
		if (n + t > len)
			n = len - t;
	}
	memcpy(b + len - t, TRAILER, t);
	b[len] = '\0';
	return b;
}

static int put_file(struct wc_spool *s, time_t when, const char *suffix,
		    bool may_gzip, const char *body, size_t len)
{
	struct wc_spool_file *f = wc_spool_begin(s, when, suffix, may_gzip);

	if (!f)
		return -1;
	if (wc_spool_write(f, body, len) < 0) {
		wc_spool_commit(f);
		return -1;
	}
	return wc_spool_commit(f);
}

static int count_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

static bool exists(const char *dir, const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

static int lstat_in(const char *dir, const char *name, struct stat *st)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, st);
}

/* The whole content of a file, decompressed if it is gzip; NULL if it is
 * not complete (truncated gzip). */
static char *slurp_fd(int fd, bool gz, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	gzFile g = gz ? gzdopen(fd, "rb") : NULL;
	int k, zerr = Z_OK;

	for (;;) {
		if (n + 65536 > cap)
			b = realloc(b, cap *= 2);
		k = gz ? gzread(g, b + n, 65536) : (int)read(fd, b + n, 65536);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	if (gz) {
		gzerror(g, &zerr);
		if (gzclose(g) != Z_OK)
			zerr = Z_BUF_ERROR;
	} else {
		close(fd);
	}
	if (k < 0 || zerr != Z_OK) {
		free(b);
		errno = EBADMSG; /* not ENOENT: a reader must count it */
		return NULL;
	}
	b[n] = '\0';
	*len = n;
	return b;
}

static char *slurp(const char *dir, const char *name, size_t *len)
{
	char path[512];
	size_t n = strlen(name);
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	return slurp_fd(fd, n > 3 && strcmp(name + n - 3, ".gz") == 0, len);
}

static bool ends_with_trailer(const char *b, size_t n)
{
	size_t t = strlen(TRAILER);

	return b && n >= t && memcmp(b + n - t, TRAILER, t) == 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- refusing unsafe directories ---- */

static void test_check_dir(void)
{
	struct place p;
	char err[512], path[160];

	place_new(&p);
	/* Missing but creatable; missing parent. */
	CHECK(wc_spool_check_dir(p.spool, err, sizeof(err)) == 0);
	snprintf(path, sizeof(path), "%s/no/spool", p.base);
	CHECK(wc_spool_check_dir(path, err, sizeof(err)) == -1);
	CHECK_STR_HAS(err, path);
	CHECK(wc_spool_check_dir("", err, sizeof(err)) == -1);
	CHECK(wc_spool_check_dir(NULL, err, sizeof(err)) == -1);

	CHECK(mkdir(p.spool, 0750) == 0);
	CHECK(wc_spool_check_dir(p.spool, err, sizeof(err)) == 0);

	/* Group- or world-writable, whatever the sticky bit. */
	chmod(p.spool, 0777);
	CHECK(wc_spool_check_dir(p.spool, err, sizeof(err)) == -1);
	CHECK_STR_HAS(err, p.spool);
	CHECK_STR_HAS(err, "0777");
	chmod(p.spool, 01777);
	CHECK(wc_spool_check_dir(p.spool, err, sizeof(err)) == -1);
	CHECK_STR_HAS(err, "1777");
	chmod(p.spool, 0770);
	CHECK(wc_spool_check_dir(p.spool, err, sizeof(err)) == -1);
	CHECK_STR_HAS(err, "0770");
	chmod(p.spool, 0750);

	/* A symlink to a good directory, with or without a trailing '/'. */
	snprintf(path, sizeof(path), "%s/link", p.base);
	CHECK(symlink(p.spool, path) == 0);
	CHECK(wc_spool_check_dir(path, err, sizeof(err)) == -1);
	CHECK_STR_HAS(err, path);
	CHECK_STR_HAS(err, "symlink");
	strcat(path, "/");
	CHECK(wc_spool_check_dir(path, err, sizeof(err)) == -1);
	CHECK_STR_HAS(err, "symlink");

	/* A file. */
	snprintf(path, sizeof(path), "%s/file", p.base);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	CHECK(wc_spool_check_dir(path, err, sizeof(err)) == -1);
	CHECK_STR_HAS(err, "not a directory");

	if (geteuid() == 0) {
		CHECK(chown(p.spool, 12345, 0) == 0);
		CHECK(wc_spool_check_dir(p.spool, err, sizeof(err)) == -1);
		CHECK_STR_HAS(err, p.spool);
		CHECK_STR_HAS(err, "uid 12345");
	}
	place_done(&p);
	if (geteuid() != 0)
		SKIP("not root: the other-owner case was not run");
}

static void test_open_refusals(void)
{
	struct wc_spool_opts o = {0};
	struct wc_spool *s, *s2;
	struct place p;
	char err[512], link[160];
	struct stat st;
	mode_t old = umask(0);

	place_new(&p);
	/* Created 0750 when missing, whatever the umask. */
	s = open_spool(p.spool, false, 0);
	CHECK(s != NULL);
	CHECK(stat(p.spool, &st) == 0 && (st.st_mode & 07777) == 0750);
	/* One writer per directory. */
	o.dir = p.spool;
	s2 = wc_spool_open(&o, err, sizeof(err));
	CHECK(s2 == NULL);
	CHECK_STR_HAS(err, "in use");
	wc_spool_close(s);
	s2 = wc_spool_open(&o, err, sizeof(err));
	CHECK(s2 != NULL);
	wc_spool_close(s2);

	o.gzip_level = 10;
	CHECK(wc_spool_open(&o, err, sizeof(err)) == NULL);
	o.gzip_level = 0;

	snprintf(link, sizeof(link), "%s/link", p.base);
	CHECK(symlink(p.spool, link) == 0);
	o.dir = link;
	CHECK(wc_spool_open(&o, err, sizeof(err)) == NULL);
	CHECK_STR_HAS(err, "symlink");
	CHECK_STR_HAS(err, link);

	o.dir = p.spool;
	chmod(p.spool, 0777);
	CHECK(wc_spool_open(&o, err, sizeof(err)) == NULL);
	CHECK_STR_HAS(err, "0777");
	chmod(p.spool, 0750);
	if (geteuid() == 0) {
		CHECK(chown(p.spool, 12345, 12345) == 0);
		CHECK(wc_spool_open(&o, err, sizeof(err)) == NULL);
		CHECK_STR_HAS(err, "uid 12345");
	}
	umask(old);
	place_done(&p);
}

/* ---- names, modes, latest, gzip ---- */

static void test_names_and_latest(void)
{
	struct place p;
	struct wc_spool *s;
	struct wc_spool_stats st;
	struct stat a, b;
	char *body = make_body(5000, 1), *back;
	size_t n;

	place_new(&p);
	s = open_spool(p.spool, false, 0);
	CHECK(put_file(s, WHEN, "folded", true, body, 5000) == 0);
	CHECK(put_file(s, WHEN, "folded", true, body, 4000) == 0);
	CHECK(put_file(s, WHEN, "folded", true, body, 3000) == 0);
	CHECK(exists(p.spool, "wallclock-20240102T030405Z.folded"));
	CHECK(exists(p.spool, "wallclock-20240102T030405Z-1.folded"));
	CHECK(exists(p.spool, "wallclock-20240102T030405Z-2.folded"));
	/* latest is the newest: a hard link, same inode. */
	CHECK(lstat_in(p.spool, "latest.folded", &a) == 0 &&
	      S_ISREG(a.st_mode));
	CHECK(lstat_in(p.spool, "wallclock-20240102T030405Z-2.folded", &b) ==
	      0);
	CHECK(a.st_ino == b.st_ino && a.st_nlink == 2);
	back = slurp(p.spool, "latest.folded", &n);
	CHECK(back && n == 3000 && memcmp(back, body, 2000) == 0);
	free(back);
	wc_spool_get_stats(s, &st);
	CHECK(st.files_written == 3 && st.bytes_written == 12000);
	CHECK(st.files_in_spool == 3 && st.bytes_in_spool == 12000);
	CHECK(count_prefix(p.spool, ".tmp") == 0);

	/* Bad suffixes and times; NULL files are no-ops that fail. */
	log_reset();
	CHECK(wc_spool_begin(s, WHEN, "../x", true) == NULL);
	CHECK(wc_spool_begin(s, WHEN, "", true) == NULL);
	CHECK(wc_spool_begin(s, WHEN, "Folded", true) == NULL);
	CHECK(wc_spool_begin(s, WHEN, NULL, true) == NULL);
	CHECK(wc_spool_begin(s, (time_t)1 << 50, "folded", true) == NULL);
	CHECK(log_err == 5);
	CHECK(wc_spool_write(NULL, "x", 1) == -1);
	CHECK(wc_spool_commit(NULL) == -1);
	wc_spool_abort(NULL);

	/* Abort leaves nothing. */
	{
		struct wc_spool_file *f =
			wc_spool_begin(s, WHEN + 1, "folded", true);

		CHECK(f && wc_spool_write(f, body, 100) == 0);
		CHECK(count_prefix(p.spool, ".tmp-wallclock-") == 1);
		wc_spool_abort(f);
		CHECK(count_prefix(p.spool, ".tmp-wallclock-") == 0);
		CHECK(count_prefix(p.spool, "wallclock-20240102T030406Z") == 0);
	}
	wc_spool_close(s);
	free(body);
	place_done(&p);
}

static void test_modes(void)
{
	static const mode_t masks[] = {0, 022, 077, 0777};
	struct place p;
	struct wc_spool *s;
	struct stat st;
	char name[64];
	mode_t old = umask(0);
	size_t i;

	place_new(&p);
	s = open_spool(p.spool, true, 0);
	for (i = 0; i < 4; i++) {
		umask(masks[i]);
		CHECK(put_file(s, WHEN + (time_t)i, "folded", true, "x\n", 2) ==
		      0);
		snprintf(name, sizeof(name),
			 "wallclock-20240102T03040%dZ.folded.gz", (int)(5 + i));
		CHECK(lstat_in(p.spool, name, &st) == 0);
		CHECK((st.st_mode & 07777) == 0640);
	}
	umask(old);
	wc_spool_close(s);
	place_done(&p);
}

static void test_gzip_round_trip(void)
{
	struct place p;
	struct wc_spool *s;
	struct wc_spool_file *f;
	size_t len = 3 << 20, off = 0, n;
	char *body = make_body(len, 2), *back;
	unsigned seed = 5;

	place_new(&p);
	s = open_spool(p.spool, true, 0);
	f = wc_spool_begin(s, WHEN, "folded", true);
	/* Pieces from 1 byte to 200 KB, across the buffer's edges. */
	while (off < len) {
		size_t k = (seed = seed * 1103515245 + 12345) % 200000 + 1;

		if (k > len - off)
			k = len - off;
		CHECK(wc_spool_write(f, body + off, k) == 0);
		off += k;
	}
	CHECK(wc_spool_commit(f) == 0);
	back = slurp(p.spool, "wallclock-20240102T030405Z.folded.gz", &n);
	CHECK(back && n == len && memcmp(back, body, len) == 0);
	free(back);
	back = slurp(p.spool, "latest.folded.gz", &n);
	CHECK(back && n == len);
	free(back);

	/* may_gzip false: plain, and its own latest. */
	CHECK(put_file(s, WHEN, "svg", false, "<svg/>\n", 7) == 0);
	CHECK(exists(p.spool, "wallclock-20240102T030405Z.svg"));
	CHECK(exists(p.spool, "latest.svg"));
	/* An empty file is a valid empty gzip stream. */
	CHECK(put_file(s, WHEN + 1, "folded", true, "", 0) == 0);
	back = slurp(p.spool, "wallclock-20240102T030406Z.folded.gz", &n);
	CHECK(back && n == 0);
	free(back);
	wc_spool_close(s);

	/* Gzip turned off: the .gz latest is not the newest any more. */
	s = open_spool(p.spool, false, 0);
	CHECK(put_file(s, WHEN + 2, "folded", true, "y\n", 2) == 0);
	CHECK(exists(p.spool, "latest.folded"));
	CHECK(!exists(p.spool, "latest.folded.gz"));
	wc_spool_close(s);
	free(body);
	place_done(&p);
}

/* ---- retention ---- */

/* Entries that are not ours, and must survive everything. */
static const char *const hostile[] = {
	"wallclock- spaces .folded",
	"wallclock-20000101T000000Z.folded\nnewline",
	"wallclock-20000101T000000Z.folded.bak",
	"wallclock-20000101T000000Z-0.folded",
	"wallclock-20000101T000000Z.Folded",
	"notes.txt",
	".tmp-other",
	"latest",
};

static void plant_hostile(const char *dir)
{
	char path[600], longname[256];
	size_t i;

	for (i = 0; i < sizeof(hostile) / sizeof(*hostile); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, hostile[i]);
		close(open(path, O_CREAT | O_WRONLY, 0600));
	}
	memset(longname, 'a', 255);
	memcpy(longname, "wallclock-", 10);
	longname[255] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, longname);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	/* A directory, and a symlink, with names exactly like ours. */
	snprintf(path, sizeof(path), "%s/wallclock-20000101T000000Z.folded",
		 dir);
	mkdir(path, 0700);
	strcat(path, "/inside");
	close(open(path, O_CREAT | O_WRONLY, 0600));
	snprintf(path, sizeof(path), "%s/wallclock-19990101T000000Z.folded",
		 dir);
	if (symlink("/etc/hostname", path) < 0)
		printf("  symlink %s: %s\n", path, strerror(errno));
}

static bool hostile_intact(const char *dir)
{
	char path[600];
	struct stat st;
	size_t i;
	bool ok = true;

	for (i = 0; i < sizeof(hostile) / sizeof(*hostile); i++)
		ok &= exists(dir, hostile[i]);
	snprintf(path, sizeof(path),
		 "%s/wallclock-20000101T000000Z.folded/inside", dir);
	ok &= stat(path, &st) == 0;
	ok &= lstat_in(dir, "wallclock-19990101T000000Z.folded", &st) == 0 &&
	      S_ISLNK(st.st_mode);
	ok &= count_prefix(dir, "wallclock-aaaa") == 1;
	return ok;
}

/* Ours only: wallclock-2024... regular files. */
static int count_ours(const char *dir)
{
	return count_prefix(dir, "wallclock-2024");
}

static void test_retention_count(void)
{
	struct place p;
	struct wc_spool *s;
	struct wc_spool_stats st;
	struct stat a, b;
	char *body = make_body(1000, 3);
	int i;

	place_new(&p);
	mkdir(p.spool, 0750);
	plant_hostile(p.spool);
	s = open_spool(p.spool, false, 3);
	for (i = 0; i < 10; i++)
		CHECK(put_file(s, WHEN + i, "folded", true, body, 1000) == 0);
	CHECK(count_ours(p.spool) == 3);
	CHECK(exists(p.spool, "wallclock-20240102T030412Z.folded"));
	CHECK(exists(p.spool, "wallclock-20240102T030413Z.folded"));
	CHECK(exists(p.spool, "wallclock-20240102T030414Z.folded"));
	CHECK(lstat_in(p.spool, "latest.folded", &a) == 0);
	CHECK(lstat_in(p.spool, "wallclock-20240102T030414Z.folded", &b) == 0);
	CHECK(a.st_ino == b.st_ino);
	wc_spool_get_stats(s, &st);
	CHECK(st.files_in_spool == 3 && st.bytes_in_spool == 3000);
	CHECK(st.files_removed == 7);
	CHECK(hostile_intact(p.spool));

	/* Same second: -N files are newer than the plain name. */
	for (i = 0; i < 4; i++)
		CHECK(put_file(s, WHEN + 100, "folded", true, body, 1000) == 0);
	CHECK(count_ours(p.spool) == 3);
	CHECK(exists(p.spool, "wallclock-20240102T030545Z-1.folded"));
	CHECK(exists(p.spool, "wallclock-20240102T030545Z-2.folded"));
	CHECK(exists(p.spool, "wallclock-20240102T030545Z-3.folded"));

	/* A latest whose files are all gone goes too. */
	CHECK(put_file(s, WHEN + 200, "svg", false, body, 1000) == 0);
	CHECK(exists(p.spool, "latest.svg"));
	for (i = 0; i < 3; i++)
		CHECK(put_file(s, WHEN + 300 + i, "folded", true, body, 1000) ==
		      0);
	CHECK(!exists(p.spool, "wallclock-20240102T030725Z.svg"));
	CHECK(!exists(p.spool, "latest.svg"));
	CHECK(hostile_intact(p.spool));
	wc_spool_close(s);
	free(body);
	place_done(&p);
}

static void test_retention_age(void)
{
	struct wc_spool_opts o = {.keep_age_s = 600};
	struct place p;
	struct wc_spool *s;
	struct timespec old[2] = {{time(NULL) - 3600, 0},
				  {time(NULL) - 3600, 0}};
	char name[64], err[256];
	int i;

	place_new(&p);
	mkdir(p.spool, 0750);
	plant_hostile(p.spool);
	o.dir = p.spool;
	s = wc_spool_open(&o, err, sizeof(err));
	for (i = 0; i < 5; i++)
		CHECK(put_file(s, WHEN + i, "folded", true, "x\n", 2) == 0);
	/* Age is by mtime, not by the name's time. */
	for (i = 2; i < 5; i++) {
		snprintf(name, sizeof(name),
			 "wallclock-20240102T03040%dZ.folded", 5 + i);
		{
			char path[300];

			snprintf(path, sizeof(path), "%s/%s", p.spool, name);
			CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
		}
	}
	CHECK(put_file(s, WHEN + 10, "folded", true, "x\n", 2) == 0);
	CHECK(count_ours(p.spool) == 3);
	CHECK(exists(p.spool, "wallclock-20240102T030405Z.folded"));
	CHECK(exists(p.spool, "wallclock-20240102T030406Z.folded"));
	CHECK(exists(p.spool, "wallclock-20240102T030415Z.folded"));
	CHECK(hostile_intact(p.spool));
	wc_spool_close(s);
	place_done(&p);
}

static void test_retention_bytes(void)
{
	struct wc_spool_opts o = {.keep_bytes = 3500};
	struct place p;
	struct wc_spool *s;
	struct wc_spool_stats st;
	char *body = make_body(10000, 4), err[256];
	int i;

	place_new(&p);
	mkdir(p.spool, 0750);
	plant_hostile(p.spool);
	o.dir = p.spool;
	s = wc_spool_open(&o, err, sizeof(err));
	for (i = 0; i < 6; i++)
		CHECK(put_file(s, WHEN + i, "folded", true, body, 1000) == 0);
	wc_spool_get_stats(s, &st);
	CHECK(count_ours(p.spool) == 3 && st.bytes_in_spool == 3000);
	/* One file over the limit on its own: the newest is always kept. */
	CHECK(put_file(s, WHEN + 10, "folded", true, body, 10000) == 0);
	wc_spool_get_stats(s, &st);
	CHECK(count_ours(p.spool) == 1 && st.bytes_in_spool == 10000);
	CHECK(exists(p.spool, "wallclock-20240102T030415Z.folded"));
	CHECK(hostile_intact(p.spool));
	wc_spool_close(s);
	free(body);
	place_done(&p);
}

/*
 * SpoolKeepFiles counts flushes: a flush's .folded and .svg stay and go
 * together, for the count, the age and the bytes alike, and a flush that
 * wrote only one of them is one flush too.
 */
static void put_flush(struct wc_spool *s, time_t when, const char *body,
		      bool svg)
{
	CHECK(put_file(s, when, "folded", true, body, 1000) == 0);
	if (svg)
		CHECK(put_file(s, when, "svg", false, body, 500) == 0);
}

static void test_retention_flushes(void)
{
	struct wc_spool_opts o = {.keep_flushes = 3};
	struct timespec old[2] = {{time(NULL) - 3600, 0},
				  {time(NULL) - 3600, 0}};
	struct wc_spool_stats st;
	char *body = make_body(1000, 5), err[256], path[300];
	struct place p;
	struct wc_spool *s;
	int i;

	place_new(&p);
	mkdir(p.spool, 0750);
	o.dir = p.spool;
	s = wc_spool_open(&o, err, sizeof(err));
	for (i = 0; i < 10; i++)
		put_flush(s, WHEN + i, body, i != 8);
	/* flushes 7, 8 (no svg) and 9 */
	CHECK(count_ours(p.spool) == 5);
	CHECK(exists(p.spool, "wallclock-20240102T030412Z.svg"));
	CHECK(exists(p.spool, "wallclock-20240102T030412Z.folded"));
	CHECK(!exists(p.spool, "wallclock-20240102T030411Z.svg"));
	wc_spool_get_stats(s, &st);
	CHECK(st.files_in_spool == 5 && st.bytes_in_spool == 4000);
	wc_spool_close(s);

	/* by bytes: 1500 a flush, 3500 leaves two */
	o.keep_flushes = 0;
	o.keep_bytes = 3500;
	s = wc_spool_open(&o, err, sizeof(err));
	put_flush(s, WHEN + 20, body, true);
	CHECK(count_ours(p.spool) == 4);
	CHECK(exists(p.spool, "wallclock-20240102T030414Z.svg") &&
	      exists(p.spool, "wallclock-20240102T030414Z.folded"));
	wc_spool_close(s);

	/* by age: a flush is old when its newest file is */
	o.keep_bytes = 0;
	o.keep_age_s = 600;
	snprintf(path, sizeof(path), "%s/wallclock-20240102T030414Z.folded",
		 p.spool);
	CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
	s = wc_spool_open(&o, err, sizeof(err));
	CHECK(count_ours(p.spool) == 4);
	snprintf(path, sizeof(path), "%s/wallclock-20240102T030414Z.svg",
		 p.spool);
	CHECK(utimensat(AT_FDCWD, path, old, 0) == 0);
	put_flush(s, WHEN + 21, body, true);
	CHECK(count_ours(p.spool) == 4);
	CHECK(!exists(p.spool, "wallclock-20240102T030414Z.folded"));
	wc_spool_close(s);
	free(body);
	place_done(&p);
}

/* Compressed, a flush is a .folded.gz and a .svg: counted as one. */
static void test_retention_flushes_gzip(void)
{
	char *body = make_body(1000, 6);
	struct place p;
	struct wc_spool *s;
	int i;

	place_new(&p);
	s = open_spool(p.spool, true, 2);
	for (i = 0; i < 5; i++)
		put_flush(s, WHEN + i, body, true);
	CHECK(count_ours(p.spool) == 4);
	CHECK(exists(p.spool, "wallclock-20240102T030409Z.folded.gz") &&
	      exists(p.spool, "wallclock-20240102T030409Z.svg"));
	CHECK(exists(p.spool, "wallclock-20240102T030408Z.folded.gz") &&
	      exists(p.spool, "wallclock-20240102T030408Z.svg"));
	CHECK(!exists(p.spool, "wallclock-20240102T030407Z.folded.gz") &&
	      !exists(p.spool, "wallclock-20240102T030407Z.svg"));
	wc_spool_close(s);
	free(body);
	place_done(&p);
}

/* ---- atomicity ---- */

/* The reader: every file it can open under a final name is complete.
 * Reports "checked bad" on out until stop is readable. */
static void reader(const char *dir, int stop, int out)
{
	unsigned long checked = 0, bad = 0;
	struct pollfd pfd = {.fd = stop, .events = POLLIN};
	char msg[64];

	while (poll(&pfd, 1, 0) == 0) {
		DIR *d = opendir(dir);
		struct dirent *de;

		if (!d)
			break;
		while ((de = readdir(d))) {
			size_t n;
			char *b;

			if (strncmp(de->d_name, "wallclock-", 10) &&
			    strncmp(de->d_name, "latest.", 7))
				continue;
			b = slurp(dir, de->d_name, &n);
			if (!b && errno == ENOENT)
				continue; /* removed by retention meanwhile */
			checked++;
			if (!ends_with_trailer(b, n)) {
				bad++;
				fprintf(stderr, "  incomplete: %s\n",
					de->d_name);
			}
			free(b);
		}
		closedir(d);
	}
	snprintf(msg, sizeof(msg), "%lu %lu", checked, bad);
	if (write(out, msg, strlen(msg) + 1) < 0)
		_exit(1);
	_exit(0);
}

static void test_atomic_reader(void)
{
	struct place p;
	struct wc_spool *s;
	unsigned long checked = 0, bad = 1;
	int stop[2], res[2], i, status;
	char msg[64] = "";
	pid_t pid;

	place_new(&p);
	s = open_spool(p.spool, true, 20);
	if (pipe(stop) || pipe(res))
		abort();
	pid = fork();
	if (pid == 0) {
		close(stop[1]);
		reader(p.spool, stop[0], res[1]);
	}
	for (i = 0; i < 400; i++) {
		size_t len = 1000 + (size_t)(i * 7919) % 300000;
		char *body = make_body(len, (unsigned)i);

		/* Half compressed; some seconds taken twice. */
		CHECK(put_file(s, WHEN + i / 3, "folded", i % 2, body, len) ==
		      0);
		free(body);
	}
	close(stop[1]);
	if (read(res[0], msg, sizeof(msg)) > 0)
		sscanf(msg, "%lu %lu", &checked, &bad);
	waitpid(pid, &status, 0);
	printf("# atomic: reader opened %lu files while 400 were written, "
	       "%lu incomplete\n",
	       checked, bad);
	CHECK(bad == 0 && checked >= 100);
	CHECK(count_prefix(p.spool, ".tmp") == 0);
	close(stop[0]);
	close(res[0]);
	close(res[1]);
	wc_spool_close(s);
	place_done(&p);
}

/* A writer killed mid-file leaves a temporary, never a final name, and
 * the next open removes the temporary. */
static void test_kill9(void)
{
	struct place p;
	struct wc_spool *s;
	char *body = make_body(200000, 9), c;
	int sync[2], round, status;
	pid_t pid;

	place_new(&p);
	mkdir(p.spool, 0750);
	for (round = 0; round < 2; round++) {
		if (pipe(sync))
			abort();
		pid = fork();
		if (pid == 0) {
			struct wc_spool *cs = open_spool(p.spool, round, 0);
			struct wc_spool_file *f;
			int i;

			if (round == 0) {
				/* Stop in the middle of a file. */
				f = wc_spool_begin(cs, WHEN, "folded", true);
				wc_spool_write(f, body, 100000);
				if (write(sync[1], "x", 1) < 0)
					_exit(1);
				pause();
			}
			/* Write for ever; killed at a random moment. */
			if (write(sync[1], "x", 1) < 0)
				_exit(1);
			for (i = 0;; i++)
				put_file(cs, WHEN + i, "folded", true, body,
					 200000);
		}
		close(sync[1]);
		CHECK(read(sync[0], &c, 1) == 1);
		if (round)
			usleep(20000 + (unsigned)(rand() % 30000));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		close(sync[0]);
		if (round == 0) {
			CHECK(count_prefix(p.spool, ".tmp-wallclock-") == 1);
			CHECK(count_ours(p.spool) == 0);
		}
		/* Whatever has a final name is whole. */
		{
			DIR *d = opendir(p.spool);
			struct dirent *de;
			int seen = 0;

			while (d && (de = readdir(d))) {
				size_t n;
				char *b;

				if (strncmp(de->d_name, "wallclock-", 10) &&
				    strncmp(de->d_name, "latest.", 7))
					continue;
				b = slurp(p.spool, de->d_name, &n);
				CHECK(ends_with_trailer(b, n));
				free(b);
				seen++;
			}
			if (d)
				closedir(d);
			if (round)
				printf("# kill -9: %d complete files, %d "
				       "temporary left\n",
				       seen,
				       count_prefix(p.spool,
						    ".tmp-wallclock-"));
		}
	}
	log_reset();
	s = open_spool(p.spool, false, 0);
	CHECK(s != NULL);
	CHECK(count_prefix(p.spool, ".tmp-") == 0);
	wc_spool_close(s);
	free(body);
	place_done(&p);
}

/* ---- symlinks planted in the spool ---- */

static bool outside_intact(const char *path)
{
	char buf[64] = "";
	struct stat st;
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n == 9 && strcmp(buf, "precious\n") == 0 &&
	       stat(path, &st) == 0 && (st.st_mode & 07777) == 0600;
}

static int plant(int dfd, const char *name, const char *outside, bool fifo)
{
	return fifo ? mkfifoat(dfd, name, 0600) : symlinkat(outside, dfd, name);
}

static bool still_planted(int dfd, const char *name, bool fifo)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       (fifo ? S_ISFIFO(st.st_mode) : S_ISLNK(st.st_mode));
}

/* Symlinks (to a file of root's) or FIFOs (an open would block for ever:
 * the alarm ends the test) at every name the spool writes. */
static void planted(bool fifo)
{
	struct place p;
	struct wc_spool *s;
	struct stat a, b;
	char outside[128], name[128];
	int dfd, fd, k;

	place_new(&p);
	snprintf(outside, sizeof(outside), "%s/outside", p.base);
	fd = open(outside, O_CREAT | O_WRONLY, 0600);
	CHECK(write(fd, "precious\n", 9) == 9);
	close(fd);
	alarm(30);
	s = open_spool(p.spool, false, 2);
	dfd = open(p.spool, O_RDONLY | O_DIRECTORY);
	/* At the next temporary names, the final name and latest. */
	for (k = 0; k < 6; k++) {
		snprintf(name, sizeof(name), ".tmp-wallclock-%d-%d",
			 (int)getpid(), k);
		CHECK(plant(dfd, name, outside, fifo) == 0);
		snprintf(name, sizeof(name), ".tmp-latest-%d-%d", (int)getpid(),
			 k + 7);
		CHECK(plant(dfd, name, outside, fifo) == 0);
	}
	CHECK(plant(dfd, "wallclock-20240102T030405Z.folded", outside, fifo) ==
	      0);
	CHECK(plant(dfd, "latest.folded", outside, fifo) == 0);
	CHECK(put_file(s, WHEN, "folded", true, "new\n", 4) == 0);
	CHECK(outside_intact(outside));
	/* The planted final name is still there; ours took -1. */
	CHECK(still_planted(dfd, "wallclock-20240102T030405Z.folded", fifo));
	CHECK(fstatat(dfd, "wallclock-20240102T030405Z-1.folded", &b,
		      AT_SYMLINK_NOFOLLOW) == 0 &&
	      S_ISREG(b.st_mode));
	/* latest was replaced, not written through. */
	CHECK(fstatat(dfd, "latest.folded", &a, AT_SYMLINK_NOFOLLOW) == 0 &&
	      S_ISREG(a.st_mode) && a.st_ino == b.st_ino);
	/* Retention never takes the planted name for a file of ours. */
	for (k = 1; k < 6; k++)
		CHECK(put_file(s, WHEN + k, "folded", true, "new\n", 4) == 0);
	CHECK(still_planted(dfd, "wallclock-20240102T030405Z.folded", fifo));
	CHECK(outside_intact(outside));
	wc_spool_close(s);
	/* Stale-temporary cleanup unlinks them, not what they name. */
	s = open_spool(p.spool, false, 2);
	CHECK(count_prefix(p.spool, ".tmp-") == 0);
	CHECK(outside_intact(outside));
	wc_spool_close(s);
	alarm(0);
	close(dfd);
	place_done(&p);
}

static void test_symlinks(void)
{
	planted(false);
}

static void test_fifos(void)
{
	planted(true);
}

/* ---- failing file systems, in a child with its own mounts ---- */

/* Runs fn in a child in a private mount namespace with a 64 KiB tmpfs at
 * mnt; 77 from the child means it could not set up. */
static int in_tmpfs(void (*fn)(const char *mnt), char *why, size_t whylen)
{
	struct place p;
	char mnt[128];
	int status;
	pid_t pid;

	place_new(&p);
	snprintf(mnt, sizeof(mnt), "%s/mnt", p.base);
	mkdir(mnt, 0700);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", mnt, "tmpfs", 0, "size=64k,mode=0700") < 0) {
			printf("  mount: %s\n", strerror(errno));
			fflush(stdout);
			_exit(77);
		}
		check_cur_failed = 0;
		fn(mnt);
		fflush(stdout);
		_exit(check_cur_failed ? 1 : 0);
	}
	waitpid(pid, &status, 0);
	place_done(&p);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
		snprintf(why, whylen,
			 "cannot mount a tmpfs (needs root and CAP_SYS_ADMIN)");
		return 77;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

static void remove_ours(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[600];

	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "wallclock-", 10) &&
		    strncmp(de->d_name, "latest.", 7))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
}

static void full_disk(const char *mnt)
{
	char dir[200], *body = make_body(12000, 7), *big = make_body(200000, 8);
	struct wc_spool *s;
	struct wc_spool_stats st;
	int i, ok = 0, rc = 0;

	snprintf(dir, sizeof(dir), "%s/spool", mnt);
	s = open_spool(dir, false, 0);
	log_reset();
	for (i = 0; i < 20 && (rc = put_file(s, WHEN + i, "folded", true, body,
					     12000)) == 0;
	     i++)
		ok++;
	printf("# full disk: %d files of 12000 bytes fit in 64 KiB\n", ok);
	CHECK(rc == -1 && ok >= 1 && ok < 20);
	CHECK(count_prefix(dir, ".tmp") == 0);
	CHECK(log_err == 1);
	CHECK_STR_HAS(log_last, "No space left");
	CHECK_STR_HAS(log_last, dir);
	/* Still full: failures counted, not logged again.  Failing inside
	 * wc_spool_write (a big file) as well as inside commit. */
	for (i = 0; i < 5; i++) {
		CHECK(put_file(s, WHEN + 100 + i, "folded", true, body,
			       12000) == -1);
		CHECK(put_file(s, WHEN + 200 + i, "folded", true, big,
			       200000) == -1);
	}
	CHECK(log_err == 1);
	CHECK(count_prefix(dir, ".tmp") == 0);
	wc_spool_get_stats(s, &st);
	CHECK(st.skipped_full == 11 && st.write_errors == 11);
	CHECK(st.files_written == (uint64_t)ok);
	/* Room for small files only: small ones in, big ones lost, and
	 * that is still one episode, not a log line per big file. */
	remove_ours(dir);
	for (i = 0; i < 3; i++) {
		CHECK(put_file(s, WHEN + 250 + i, "folded", true, body, 100) ==
		      0);
		CHECK(put_file(s, WHEN + 260 + i, "folded", true, big,
			       200000) == -1);
	}
	CHECK(log_err == 1 && log_notice == 0);
	/* Room again: written, and said so once, after a few in a row. */
	remove_ours(dir);
	CHECK(put_file(s, WHEN + 300, "folded", true, body, 12000) == 0);
	CHECK(put_file(s, WHEN + 301, "folded", true, body, 12000) == 0);
	CHECK(log_notice == 0);
	CHECK(put_file(s, WHEN + 302, "folded", true, body, 12000) == 0);
	CHECK(log_err == 1 && log_notice == 1);
	CHECK_STR_HAS(log_last, "writing again, 14 files lost");

	/* Read-only: a new episode, logged once, not counted as full. */
	CHECK(mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0);
	for (i = 0; i < 3; i++)
		CHECK(put_file(s, WHEN + 400 + i, "folded", true, body, 100) ==
		      -1);
	CHECK(log_err == 2);
	CHECK_STR_HAS(log_last, "Read-only");
	wc_spool_get_stats(s, &st);
	CHECK(st.skipped_full == 14 && st.write_errors == 17);
	CHECK(mount(NULL, mnt, NULL, MS_REMOUNT, "size=64k") == 0);
	for (i = 0; i < 3; i++)
		CHECK(put_file(s, WHEN + 500 + i, "folded", true, body, 100) ==
		      0);
	CHECK(log_err == 2 && log_notice == 2);
	CHECK(count_prefix(dir, ".tmp") == 0);
	wc_spool_close(s);
	free(body);
	free(big);
}

static void test_full_disk(void)
{
	char why[128];
	int rc = in_tmpfs(full_disk, why, sizeof(why));

	if (rc == 77)
		SKIP(why);
	CHECK(rc == 0);
}

/* ---- measurements ---- */

static const char *fs_name(const char *dir)
{
	struct statfs sf;

	if (statfs(dir, &sf) < 0)
		return "?";
	switch ((unsigned long)sf.f_type) {
	case 0xEF53:
		return "ext4";
	case 0x01021994:
		return "tmpfs";
	case 0x794c7630:
		return "overlayfs";
	case 0x58465342:
		return "xfs";
	case 0x9123683E:
		return "btrfs";
	default:
		return "other fs";
	}
}

static void test_measure(void)
{
	struct place p;
	struct wc_spool *s;
	struct wc_spool_stats st;
	size_t len = 1 << 20;
	char *body = make_body(len, 11);
	double t_plain = 1e9, t_gz = 1e9, t;
	uint64_t before, gz_bytes = 0;
	int i;

	place_new(&p);
	/* Best of 3 of each, against the disk /tmp is on. */
	s = open_spool(p.spool, true, 4);
	for (i = 0; i < 3; i++) {
		t = now_ms();
		CHECK(put_file(s, WHEN + i, "folded", false, body, len) == 0);
		t = now_ms() - t;
		t_plain = t < t_plain ? t : t_plain;
		wc_spool_get_stats(s, &st);
		before = st.bytes_written;
		t = now_ms();
		CHECK(put_file(s, WHEN + 10 + i, "folded", true, body, len) ==
		      0);
		t = now_ms() - t;
		t_gz = t < t_gz ? t : t_gz;
		wc_spool_get_stats(s, &st);
		gz_bytes = st.bytes_written - before;
	}
	printf("# commit 1 MiB on %s: plain %.1f ms, gzip %.1f ms "
	       "(level 6, with fsync)\n",
	       fs_name(p.base), t_plain, t_gz);
	printf("# gzip ratio on folded-like text: %.1f:1 (%zu -> %llu "
	       "bytes)\n",
	       (double)len / (double)gz_bytes, len,
	       (unsigned long long)gz_bytes);
	CHECK(gz_bytes > 0 && gz_bytes < len / 3);
	wc_spool_close(s);

	/* Retention scans the directory at every commit: its cost with
	 * 1000 files kept. */
	s = open_spool(p.spool, false, 1000);
	for (i = 0; i < 1000; i++)
		put_file(s, WHEN + 100 + i, "folded", true, "x\n", 2);
	t = now_ms();
	for (i = 0; i < 10; i++)
		CHECK(put_file(s, WHEN + 2000 + i, "folded", true, "x\n", 2) ==
		      0);
	t = (now_ms() - t) / 10;
	wc_spool_get_stats(s, &st);
	CHECK(st.files_in_spool == 1000);
	printf("# commit of a small file with 1000 files kept: %.2f ms\n", t);
	wc_spool_close(s);
	free(body);
	place_done(&p);
}

int main(void)
{
	check_prog = "test_spool";
	wc_log_set(capture_log);
	srand((unsigned)time(NULL));
	RUN(test_check_dir);
	RUN(test_open_refusals);
	RUN(test_names_and_latest);
	RUN(test_modes);
	RUN(test_gzip_round_trip);
	RUN(test_retention_count);
	RUN(test_retention_age);
	RUN(test_retention_bytes);
	RUN(test_retention_flushes);
	RUN(test_retention_flushes_gzip);
	RUN(test_atomic_reader);
	RUN(test_kill9);
	RUN(test_symlinks);
	RUN(test_fifos);
	RUN(test_full_disk);
	RUN(test_measure);
	return check_done();
}
