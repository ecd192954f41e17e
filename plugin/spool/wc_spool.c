/* wc_spool.c - see wc_spool.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/wc_log.h"
#include "spool/wc_spool.h"

#define BUF_SIZE 65536
#define TMP_PREFIX ".tmp-wallclock-"
#define LATEST_TMP_PREFIX ".tmp-latest-"
#define NAME_PREFIX "wallclock-"
#define LATEST_PREFIX "latest."
#define STAMP_LEN 16	    /* YYYYMMDDTHHMMSSZ */
#define MAX_DUP 100	    /* -1 .. -99 for one second */
#define MAX_TRIES 16	    /* temporary names taken by planted files */
#define MAX_LATEST 16	    /* latest.* names looked at per scan */
#define MAX_ENTRIES 1000000 /* files one retention scan considers */

struct wc_spool {
	int dirfd; /* holds the flock */
	char *dir; /* for messages only: never opened again */
	bool gzip;
	int gzip_level;
	unsigned keep_flushes;
	unsigned keep_age_s;
	uint64_t keep_bytes;
	unsigned seq; /* of temporary names */
	bool failing; /* a lost file was logged, and the disk not trusted yet */
	unsigned ok_streak; /* files written since the last one lost */
	uint64_t lost_since;
	bool latest_warned;
	bool retention_warned;
	struct wc_spool_stats st;
};

struct wc_spool_file {
	struct wc_spool *s;
	int fd;
	bool gzip;
	z_stream z;
	unsigned char *buf; /* BUF_SIZE: to the file, compressed or not */
	size_t len;
	uint64_t bytes; /* written to the file */
	int err;	/* errno of the first failure, 0 while all is well */
	const char *what;
	char tmp[64];
	char stamp[STAMP_LEN + 1];
	char ext[WC_SPOOL_MAX_SUFFIX + 8]; /* ".SUFFIX[.gz]" */
	char final[NAME_MAX + 1];
};

static const char *errstr(int err, char *buf, size_t len)
{
	return strerror_r(err, buf, len);
}

/* ---- checks ---- */

static int check_stat(const char *dir, const struct stat *st, char *err,
		      size_t errlen)
{
	if (S_ISLNK(st->st_mode))
		return wc_err(err, errlen,
			      "spool directory %s is a symlink; give the path "
			      "of the real directory",
			      dir);
	if (!S_ISDIR(st->st_mode))
		return wc_err(err, errlen,
			      "spool directory %s is not a directory", dir);
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return wc_err(
			err, errlen,
			"spool directory %s is owned by uid %u, not root: "
			"its owner could plant files there",
			dir, (unsigned)st->st_uid);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return wc_err(err, errlen,
			      "spool directory %s has mode %04o: writable by "
			      "group or others (chmod go-w %s)",
			      dir, (unsigned)(st->st_mode & 07777), dir);
	return 0;
}

/* A copy without trailing slashes: "dir/" would resolve a symlink even
 * for lstat and O_NOFOLLOW. */
static char *normalize(const char *dir)
{
	size_t n;
	char *d;

	if (!dir || !*dir || strlen(dir) >= PATH_MAX)
		return NULL;
	d = strdup(dir);
	if (!d)
		return NULL;
	n = strlen(d);
	while (n > 1 && d[n - 1] == '/')
		d[--n] = '\0';
	return d;
}

static int check_parent(const char *dir, char *err, size_t errlen)
{
	char *parent = strdup(dir), *slash, eb[128];
	struct stat st;
	int rc = 0;

	if (!parent)
		return wc_err(err, errlen, "out of memory");
	slash = strrchr(parent, '/');
	if (!slash)
		strcpy(parent, ".");
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	if (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode))
		rc = wc_err(err, errlen,
			    "spool directory %s does not exist and its parent "
			    "%s is not a directory",
			    dir, parent);
	else if (access(parent, W_OK | X_OK) < 0)
		rc = wc_err(err, errlen,
			    "spool directory %s does not exist and cannot be "
			    "created in %s: %s",
			    dir, parent, errstr(errno, eb, sizeof(eb)));
	free(parent);
	return rc;
}

int wc_spool_check_dir(const char *dir, char *err, size_t errlen)
{
	char *d = normalize(dir), eb[128];
	struct stat st;
	int rc;

	if (!d)
		return wc_err(err, errlen, "spool directory: bad path \"%s\"",
			      dir ? dir : "");
	if (lstat(d, &st) == 0)
		rc = check_stat(d, &st, err, errlen);
	else if (errno == ENOENT)
		rc = check_parent(d, err, errlen);
	else
		rc = wc_err(err, errlen, "spool directory %s: %s", d,
			    errstr(errno, eb, sizeof(eb)));
	free(d);
	return rc;
}

/* ---- logging a failing disk once ----
 * A nearly full disk takes small files and refuses big ones, so one
 * success is not recovery: the episode ends (and says so) after
 * OK_STREAK files in a row, and until then stays quiet. */
#define OK_STREAK 3

static void spool_failed(struct wc_spool *s, const char *what, const char *name,
			 int err)
{
	char eb[128];

	s->st.write_errors++;
	if (err == ENOSPC || err == EDQUOT)
		s->st.skipped_full++;
	s->lost_since++;
	s->ok_streak = 0;
	if (s->failing)
		return;
	s->failing = true;
	wc_log(WC_LOG_ERR,
	       "spool %s: %s %s: %s; skipping files until writes succeed "
	       "(not logged again until then)",
	       s->dir, what, name, errstr(err, eb, sizeof(eb)));
}

static void spool_ok(struct wc_spool *s)
{
	if (s->failing && ++s->ok_streak < OK_STREAK)
		return;
	if (s->failing)
		wc_log(WC_LOG_NOTICE,
		       "spool %s: writing again, %llu files lost", s->dir,
		       (unsigned long long)s->lost_since);
	s->failing = false;
	s->lost_since = 0;
}

/* ---- directory scans ---- */

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool suffix_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-';
}

/* ".SUFFIX" or ".SUFFIX.gz" and nothing after. */
static bool is_ext(const char *p)
{
	size_t n = 0;

	if (*p++ != '.')
		return false;
	while (suffix_byte(p[n]))
		n++;
	if (n == 0 || n > WC_SPOOL_MAX_SUFFIX)
		return false;
	return p[n] == '\0' || strcmp(p + n, ".gz") == 0;
}

static bool digits(const char *p, size_t n)
{
	while (n--)
		if (*p < '0' || *p++ > '9')
			return false;
	return true;
}

/* wallclock-YYYYMMDDTHHMMSSZ[-N].SUFFIX[.gz]: its stamp and N (0 if
 * none), or false for any other name. */
static bool parse_name(const char *name, char *stamp, unsigned long *dup)
{
	const char *p = name + strlen(NAME_PREFIX);
	char *end;

	if (!has_prefix(name, NAME_PREFIX) || !digits(p, 8) || p[8] != 'T' ||
	    !digits(p + 9, 6) || p[15] != 'Z')
		return false;
	memcpy(stamp, p, STAMP_LEN);
	stamp[STAMP_LEN] = '\0';
	p += STAMP_LEN;
	*dup = 0;
	if (*p == '-') {
		if (p[1] < '1' || p[1] > '9')
			return false;
		*dup = strtoul(p + 1, &end, 10);
		if (end - p > 10)
			return false;
		p = end;
	}
	return is_ext(p);
}

/* A private stream over the directory, so the held descriptor keeps its
 * own offset. */
static DIR *open_scan(struct wc_spool *s)
{
	int fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

/* Not following symlinks, a regular file of ours, or not. */
static bool stat_file(struct wc_spool *s, const char *name, struct stat *st)
{
	return fstatat(s->dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st->st_mode);
}

/* Temporary files of a writer that died: ours by name, never a
 * directory. */
static void remove_stale(struct wc_spool *s)
{
	DIR *d = open_scan(s);
	struct dirent *de;
	struct stat st;
	unsigned n = 0;

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!has_prefix(de->d_name, TMP_PREFIX) &&
		    !has_prefix(de->d_name, LATEST_TMP_PREFIX))
			continue;
		if (fstatat(s->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
			    0 &&
		    !S_ISDIR(st.st_mode) &&
		    unlinkat(s->dirfd, de->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	if (n)
		wc_log(WC_LOG_NOTICE,
		       "spool %s: removed %u temporary files of an earlier run",
		       s->dir, n);
}

/* ---- retention ---- */

struct entry {
	char *name;
	struct timespec mtime;
	uint64_t size;
	unsigned long dup;
	char stamp[STAMP_LEN + 1];
};

struct scan {
	struct entry *e;
	size_t n, cap;
	char *latest[MAX_LATEST];
	size_t nlatest;
};

/* By flush: the files one flush wrote share their stamp and -N. */
static int entry_cmp(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;
	int c = strcmp(a->stamp, b->stamp);

	if (c)
		return c;
	if (a->dup != b->dup)
		return a->dup < b->dup ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* One flush's files: entries [first, first + n) of the sorted scan. */
struct flush_files {
	size_t first, n;
	uint64_t bytes;
	struct timespec mtime; /* the newest file's */
	const struct entry *key;
	bool keep;
};

/* Oldest flush first: by mtime, then by the name's time and -N. */
static int flush_cmp(const void *pa, const void *pb)
{
	const struct flush_files *a = pa, *b = pb;

	if (a->mtime.tv_sec != b->mtime.tv_sec)
		return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
	if (a->mtime.tv_nsec != b->mtime.tv_nsec)
		return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
	return entry_cmp(a->key, b->key);
}

static int scan_add(struct scan *sc, const char *name, const struct stat *st,
		    const char *stamp, unsigned long dup)
{
	struct entry *e;

	if (sc->n == sc->cap) {
		size_t ncap = sc->cap ? sc->cap * 2 : 64;

		if (ncap > MAX_ENTRIES)
			return -1;
		e = realloc(sc->e, ncap * sizeof(*e));
		if (!e)
			return -1;
		sc->e = e;
		sc->cap = ncap;
	}
	e = &sc->e[sc->n];
	e->name = strdup(name);
	if (!e->name)
		return -1;
	e->mtime = st->st_mtim;
	e->size = (uint64_t)st->st_size;
	e->dup = dup;
	memcpy(e->stamp, stamp, sizeof(e->stamp));
	sc->n++;
	return 0;
}

static void scan_free(struct scan *sc)
{
	size_t i;

	for (i = 0; i < sc->n; i++)
		free(sc->e[i].name);
	for (i = 0; i < sc->nlatest; i++)
		free(sc->latest[i]);
	free(sc->e);
}

/* Our final-named regular files, and the latest.* names. */
static void scan_dir(struct wc_spool *s, struct scan *sc)
{
	DIR *d = open_scan(s);
	char stamp[STAMP_LEN + 1];
	struct dirent *de;
	unsigned long dup;
	struct stat st;

	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *name = de->d_name;

		if (has_prefix(name, LATEST_PREFIX) &&
		    is_ext(name + strlen(LATEST_PREFIX) - 1)) {
			if (sc->nlatest < MAX_LATEST &&
			    (sc->latest[sc->nlatest] = strdup(name)))
				sc->nlatest++;
			continue;
		}
		if (!parse_name(name, stamp, &dup) || !stat_file(s, name, &st))
			continue;
		if (scan_add(sc, name, &st, stamp, dup) < 0)
			break; /* retention on what was seen */
	}
	closedir(d);
}

static bool too_old(const struct wc_spool *s, const struct flush_files *g,
		    time_t now)
{
	return s->keep_age_s && now - g->mtime.tv_sec > (time_t)s->keep_age_s;
}

static void remove_entry(struct wc_spool *s, const char *name)
{
	char eb[128];

	if (unlinkat(s->dirfd, name, 0) == 0) {
		s->st.files_removed++;
		s->retention_warned = false;
		return;
	}
	if (errno == ENOENT || s->retention_warned)
		return;
	s->retention_warned = true;
	wc_log(WC_LOG_WARN, "spool %s: cannot remove %s: %s", s->dir, name,
	       errstr(errno, eb, sizeof(eb)));
}

/* A latest.* with a link count of 1 outlived its file. */
static void remove_orphans(struct wc_spool *s, const struct scan *sc)
{
	struct stat st;
	size_t i;

	for (i = 0; i < sc->nlatest; i++)
		if (stat_file(s, sc->latest[i], &st) && st.st_nlink == 1)
			unlinkat(s->dirfd, sc->latest[i], 0);
}

static bool later(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec != b->tv_sec ? a->tv_sec > b->tv_sec
				      : a->tv_nsec > b->tv_nsec;
}

/* The sorted scan's entries grouped by flush, into g (room for sc->n). */
static size_t group_flushes(const struct scan *sc, const char *keep,
			    struct flush_files *g)
{
	size_t i, n = 0;

	for (i = 0; i < sc->n; i++) {
		const struct entry *e = &sc->e[i];

		if (!n || strcmp(e->stamp, g[n - 1].key->stamp) ||
		    e->dup != g[n - 1].key->dup)
			g[n++] = (struct flush_files){
				.first = i, .key = e, .mtime = e->mtime};
		g[n - 1].n++;
		g[n - 1].bytes += e->size;
		g[n - 1].keep |= keep && strcmp(e->name, keep) == 0;
		if (later(&e->mtime, &g[n - 1].mtime))
			g[n - 1].mtime = e->mtime;
	}
	return n;
}

/*
 * Apply the limits a flush at a time (its .folded and .svg together),
 * oldest first, never removing the flush of `keep`.  Without memory for
 * the grouping, nothing is removed this time.
 */
static void retention(struct wc_spool *s, const char *keep)
{
	struct scan sc = {0};
	struct flush_files *g;
	uint64_t count, bytes = 0, files = 0;
	time_t now = time(NULL);
	size_t i, j, n;

	scan_dir(s, &sc);
	g = malloc((sc.n ? sc.n : 1) * sizeof(*g));
	if (sc.n) /* sc.e is NULL for an empty directory */
		qsort(sc.e, sc.n, sizeof(*sc.e), entry_cmp);
	n = g ? group_flushes(&sc, keep, g) : 0;
	if (n)
		qsort(g, n, sizeof(*g), flush_cmp);
	count = n;
	for (i = 0; i < n; i++) {
		bytes += g[i].bytes;
		files += g[i].n;
	}
	for (i = 0; i < n; i++) {
		if (g[i].keep ||
		    (!too_old(s, &g[i], now) &&
		     !(s->keep_flushes && count > s->keep_flushes) &&
		     !(s->keep_bytes && bytes > s->keep_bytes)))
			continue;
		for (j = 0; j < g[i].n; j++)
			remove_entry(s, sc.e[g[i].first + j].name);
		count--;
		bytes -= g[i].bytes;
		files -= g[i].n;
	}
	remove_orphans(s, &sc);
	if (g) {
		s->st.files_in_spool = files;
		s->st.bytes_in_spool = bytes;
	}
	free(g);
	scan_free(&sc);
}

/* ---- open and close ---- */

static int open_dir(struct wc_spool *s, char *err, size_t errlen)
{
	struct stat st;
	char eb[128];

	if (mkdir(s->dir, 0750) < 0 && errno != EEXIST)
		return wc_err(err, errlen,
			      "cannot create spool directory %s: %s", s->dir,
			      errstr(errno, eb, sizeof(eb)));
	s->dirfd =
		open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->dirfd < 0) {
		int e = errno;

		if (lstat(s->dir, &st) == 0 &&
		    check_stat(s->dir, &st, err, errlen) < 0)
			return -1;
		return wc_err(err, errlen, "cannot open spool directory %s: %s",
			      s->dir, errstr(e, eb, sizeof(eb)));
	}
	if (fstat(s->dirfd, &st) < 0)
		return wc_err(err, errlen, "spool directory %s: %s", s->dir,
			      errstr(errno, eb, sizeof(eb)));
	if (check_stat(s->dir, &st, err, errlen) < 0)
		return -1;
	if (flock(s->dirfd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	if (errno == EWOULDBLOCK)
		return wc_err(err, errlen,
			      "spool directory %s is in use by another writer "
			      "(another collectd or wallclock record with this "
			      "directory)",
			      s->dir);
	return wc_err(err, errlen, "cannot lock spool directory %s: %s", s->dir,
		      errstr(errno, eb, sizeof(eb)));
}

struct wc_spool *wc_spool_open(const struct wc_spool_opts *o, char *err,
			       size_t errlen)
{
	struct wc_spool *s;

	if (!o || o->gzip_level < 0 || o->gzip_level > 9) {
		wc_err(err, errlen, "spool: gzip level must be 1..9");
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		wc_err(err, errlen, "out of memory");
		return NULL;
	}
	s->dirfd = -1;
	s->dir = normalize(o->dir);
	if (!s->dir) {
		wc_err(err, errlen, "spool directory: bad path \"%s\"",
		       o->dir ? o->dir : "");
		wc_spool_close(s);
		return NULL;
	}
	s->gzip = o->gzip;
	s->gzip_level = o->gzip_level ? o->gzip_level : Z_DEFAULT_COMPRESSION;
	s->keep_flushes = o->keep_flushes;
	s->keep_age_s = o->keep_age_s;
	s->keep_bytes = o->keep_bytes;
	if (open_dir(s, err, errlen) < 0) {
		wc_spool_close(s);
		return NULL;
	}
	remove_stale(s);
	retention(s, NULL);
	return s;
}

void wc_spool_close(struct wc_spool *s)
{
	if (!s)
		return;
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->dir);
	free(s);
}

void wc_spool_get_stats(const struct wc_spool *s, struct wc_spool_stats *st)
{
	*st = s->st;
}

/* ---- one file ---- */

static void file_fail(struct wc_spool_file *f, const char *what, int err)
{
	if (f->err)
		return;
	f->err = err ? err : EIO;
	f->what = what;
}

static void file_free(struct wc_spool_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->gzip)
		deflateEnd(&f->z);
	free(f->buf);
	free(f);
}

static int create_tmp(struct wc_spool_file *f)
{
	struct wc_spool *s = f->s;
	int i;

	for (i = 0; i < MAX_TRIES; i++) {
		snprintf(f->tmp, sizeof(f->tmp), TMP_PREFIX "%d-%u",
			 (int)getpid(), s->seq++);
		f->fd = openat(s->dirfd, f->tmp,
			       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				       O_CLOEXEC,
			       0640);
		if (f->fd >= 0 || errno != EEXIST)
			break;
	}
	if (f->fd < 0)
		return -1;
	/* The umask may have taken bits away; the mode is ours to say. */
	if (fchmod(f->fd, 0640) < 0) {
		int e = errno;

		unlinkat(s->dirfd, f->tmp, 0);
		errno = e;
		return -1;
	}
	return 0;
}

static bool valid_suffix(const char *suffix)
{
	size_t n = 0;

	while (suffix && suffix_byte(suffix[n]))
		n++;
	return suffix && n > 0 && n <= WC_SPOOL_MAX_SUFFIX && !suffix[n];
}

/* The name's stamp; false for a time outside years 0..9999. */
static bool make_stamp(time_t when, char *stamp)
{
	struct tm tm;

	if (!gmtime_r(&when, &tm) || tm.tm_year < -1900 ||
	    tm.tm_year > 9999 - 1900)
		return false;
	return strftime(stamp, STAMP_LEN + 1, "%Y%m%dT%H%M%SZ", &tm) ==
	       STAMP_LEN;
}

struct wc_spool_file *wc_spool_begin(struct wc_spool *s, time_t when,
				     const char *suffix, bool may_gzip)
{
	struct wc_spool_file *f;

	if (!s || !valid_suffix(suffix)) {
		wc_log(WC_LOG_ERR, "spool: bad file suffix \"%s\"",
		       suffix ? suffix : "");
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->s = s;
	f->fd = -1;
	f->gzip = s->gzip && may_gzip;
	snprintf(f->ext, sizeof(f->ext), ".%s%s", suffix, f->gzip ? ".gz" : "");
	if (!make_stamp(when, f->stamp)) {
		wc_log(WC_LOG_ERR, "spool: time %lld out of range",
		       (long long)when);
		free(f);
		return NULL;
	}
	f->buf = malloc(BUF_SIZE);
	/* 15 + 16: a gzip wrapper, so gunzip and zcat read the file. */
	if (f->gzip && deflateInit2(&f->z, s->gzip_level, Z_DEFLATED, 15 + 16,
				    8, Z_DEFAULT_STRATEGY) != Z_OK) {
		f->gzip = false;
		free(f->buf);
		f->buf = NULL;
	}
	if (!f->buf || create_tmp(f) < 0) {
		spool_failed(s, "cannot create", f->buf ? f->tmp : "a file",
			     f->buf ? errno : ENOMEM);
		file_free(f);
		return NULL;
	}
	return f;
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void flush_buf(struct wc_spool_file *f)
{
	int e;

	if (!f->len || f->err)
		return;
	e = write_all(f->fd, f->buf, f->len);
	if (e)
		file_fail(f, "cannot write", e);
	else
		f->bytes += f->len;
	f->len = 0;
}

/* Feed what is in z.next_in through deflate into buf, flushing buf to the
 * file as it fills; with Z_FINISH, to the end of the stream. */
static void deflate_all(struct wc_spool_file *f, int flush)
{
	int rc;

	do {
		f->z.next_out = f->buf + f->len;
		f->z.avail_out = (uInt)(BUF_SIZE - f->len);
		rc = deflate(&f->z, flush);
		f->len = BUF_SIZE - f->z.avail_out;
		if (rc == Z_STREAM_ERROR) {
			file_fail(f, "cannot compress", EIO);
			return;
		}
		if (f->len == BUF_SIZE)
			flush_buf(f);
	} while (!f->err &&
		 (f->z.avail_in || (flush == Z_FINISH && rc != Z_STREAM_END)));
}

int wc_spool_write(struct wc_spool_file *f, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	if (!f || f->err)
		return -1;
	while (len && !f->err) {
		size_t k = len;

		if (f->gzip) {
			if (k > UINT_MAX)
				k = UINT_MAX;
			f->z.next_in = (Bytef *)p;
			f->z.avail_in = (uInt)k;
			deflate_all(f, Z_NO_FLUSH);
		} else {
			if (k > BUF_SIZE - f->len)
				k = BUF_SIZE - f->len;
			memcpy(f->buf + f->len, p, k);
			f->len += k;
			if (f->len == BUF_SIZE)
				flush_buf(f);
		}
		p += k;
		len -= k;
	}
	return f->err ? -1 : 0;
}

/*
 * Rename the finished temporary file to the first free final name.  Never
 * replaces: RENAME_NOREPLACE, or where the file system lacks it, link(2),
 * which fails on an existing name, symlink or not.
 */
static int publish(struct wc_spool_file *f)
{
	int dirfd = f->s->dirfd;
	unsigned n;

	for (n = 0; n < MAX_DUP; n++) {
		if (n)
			snprintf(f->final, sizeof(f->final),
				 NAME_PREFIX "%s-%u%s", f->stamp, n, f->ext);
		else
			snprintf(f->final, sizeof(f->final), NAME_PREFIX "%s%s",
				 f->stamp, f->ext);
		if (renameat2(dirfd, f->tmp, dirfd, f->final,
			      RENAME_NOREPLACE) == 0)
			return 0;
		if (errno == EINVAL || errno == ENOSYS) {
			if (linkat(dirfd, f->tmp, dirfd, f->final, 0) == 0) {
				unlinkat(dirfd, f->tmp, 0);
				return 0;
			}
		}
		if (errno != EEXIST) {
			file_fail(f, "cannot rename", errno);
			return -1;
		}
	}
	file_fail(f, "no free name for", EEXIST);
	return -1;
}

static void latest_failed(struct wc_spool *s, const char *name, int err)
{
	char eb[128];

	if (s->latest_warned)
		return;
	s->latest_warned = true;
	wc_log(WC_LOG_WARN, "spool %s: cannot update %s: %s", s->dir, name,
	       errstr(err, eb, sizeof(eb)));
}

/* latest.SUFFIX[.gz] without the other compression: it is not the newest
 * any more. */
static void remove_other_latest(struct wc_spool_file *f)
{
	char name[NAME_MAX + 1];
	size_t n = strlen(f->ext);
	struct stat st;

	if (f->gzip)
		snprintf(name, sizeof(name), LATEST_PREFIX "%.*s", (int)(n - 4),
			 f->ext + 1);
	else
		snprintf(name, sizeof(name), LATEST_PREFIX "%s.gz", f->ext + 1);
	if (fstatat(f->s->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISDIR(st.st_mode))
		unlinkat(f->s->dirfd, name, 0);
}

/* Link the new file to a temporary name, then rename that over latest.*:
 * a reader sees the old latest or the new one, and whatever was at
 * latest.* (a symlink, say) is replaced, not followed. */
static void update_latest(struct wc_spool_file *f)
{
	struct wc_spool *s = f->s;
	char tmp[64], latest[NAME_MAX + 1];
	int i, rc = -1;

	snprintf(latest, sizeof(latest), LATEST_PREFIX "%s", f->ext + 1);
	for (i = 0; i < MAX_TRIES && rc < 0; i++) {
		snprintf(tmp, sizeof(tmp), LATEST_TMP_PREFIX "%d-%u",
			 (int)getpid(), s->seq++);
		rc = linkat(s->dirfd, f->final, s->dirfd, tmp, 0);
		if (rc < 0 && errno != EEXIST)
			break;
	}
	if (rc < 0) {
		latest_failed(s, latest, errno);
		return;
	}
	if (renameat(s->dirfd, tmp, s->dirfd, latest) < 0) {
		int e = errno;

		unlinkat(s->dirfd, tmp, 0);
		latest_failed(s, latest, e);
		return;
	}
	s->latest_warned = false;
	remove_other_latest(f);
}

int wc_spool_commit(struct wc_spool_file *f)
{
	struct wc_spool *s;

	if (!f)
		return -1;
	s = f->s;
	if (f->gzip && !f->err) {
		f->z.avail_in = 0;
		deflate_all(f, Z_FINISH);
	}
	flush_buf(f);
	if (!f->err && fsync(f->fd) < 0)
		file_fail(f, "cannot fsync", errno);
	if (close(f->fd) < 0)
		file_fail(f, "cannot close", errno);
	f->fd = -1;
	if (!f->err)
		publish(f);
	if (f->err) {
		unlinkat(s->dirfd, f->tmp, 0);
		spool_failed(s, f->what, f->tmp, f->err);
		file_free(f);
		return -1;
	}
	/* The name's durability only: the data is already on disk, and a
	 * failing disk will show on the next file's writes. */
	(void)fsync(s->dirfd);
	s->st.files_written++;
	s->st.bytes_written += f->bytes;
	spool_ok(s);
	update_latest(f);
	retention(s, f->final);
	file_free(f);
	return 0;
}

void wc_spool_abort(struct wc_spool_file *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	unlinkat(f->s->dirfd, f->tmp, 0);
	file_free(f);
}
