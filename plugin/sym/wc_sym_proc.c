/* wc_sym_proc.c - see wc_sym_proc.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sym/wc_sym_proc.h"
#include "util/wc_num.h"

#define OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
/* /proc/PID/status is a few KiB, but for a Groups: line of thousands. */
#define STATUS_MAX (1u << 20)

int wc_lines_open(struct wc_lines *r, int fd, size_t cap, uint64_t limit)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->cap = cap;
	r->left = limit;
	r->buf = malloc(cap + 1);
	if (!r->buf) {
		wc_lines_close(r);
		return -1;
	}
	return 0;
}

void wc_lines_close(struct wc_lines *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	r->fd = -1;
	r->buf = NULL;
}

/* Read more after what is buffered; false at the end or on an error. */
static bool fill(struct wc_lines *r)
{
	size_t want;
	ssize_t n;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (r->end == r->cap) {
		/* A line that does not fit: drop what we have of it. */
		r->skipping = true;
		r->end = 0;
	}
	want = r->cap - r->end;
	if (want > r->left)
		want = (size_t)r->left;
	if (want == 0) {
		r->eof = true;
		r->cut = true;
		return false;
	}
	do
		n = read(r->fd, r->buf + r->end, want);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		r->eof = true;
		return false;
	}
	r->end += (size_t)n;
	r->left -= (uint64_t)n;
	return true;
}

static char *take(struct wc_lines *r, size_t at, size_t *len)
{
	char *line = r->buf + r->start;

	r->buf[at] = '\0';
	*len = at - r->start;
	r->start = at < r->end ? at + 1 : at;
	return line;
}

char *wc_lines_next(struct wc_lines *r, size_t *len)
{
	size_t scanned = r->start;

	for (;;) {
		char *nl = memchr(r->buf + scanned, '\n', r->end - scanned);

		if (nl) {
			size_t at = (size_t)(nl - r->buf);

			if (!r->skipping)
				return take(r, at, len);
			r->skipping = false;
			r->skipped++;
			r->start = scanned = at + 1;
			continue;
		}
		if (r->eof || !fill(r)) {
			if (r->skipping) {
				r->skipping = false;
				r->skipped++;
				r->start = r->end;
			}
			/* At the byte bound a line without its newline
			 * was still being written. */
			if (r->start < r->end && r->cut) {
				r->skipped++;
				r->start = r->end;
			}
			if (r->start < r->end)
				return take(r, r->end, len);
			return NULL;
		}
		scanned = r->start;
	}
}

static bool expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return false;
	(*p)++;
	return true;
}

int wc_proc_parse_maps_line(char *line, size_t len, struct wc_proc_map *m)
{
	static const char deleted[] = " (deleted)";
	const size_t dlen = sizeof(deleted) - 1;
	const char *p = line, *end = line + len;
	uint64_t major, minor;

	memset(m, 0, sizeof(*m));
	/* no path holds a NUL: a line that does is not the kernel's */
	if (memchr(line, '\0', len) || !wc_parse_hex(&p, end, &m->start) ||
	    !expect(&p, end, '-') || !wc_parse_hex(&p, end, &m->end) ||
	    !expect(&p, end, ' ') || end - p < 5 || p[4] != ' ' ||
	    m->end <= m->start)
		return -1;
	m->exec = p[2] == 'x';
	p += 5;
	if (!wc_parse_hex(&p, end, &m->pgoff) || !expect(&p, end, ' ') ||
	    !wc_parse_hex(&p, end, &major) || !expect(&p, end, ':') ||
	    !wc_parse_hex(&p, end, &minor) || !expect(&p, end, ' ') ||
	    !wc_parse_dec(&p, end, &m->ino) || major > UINT32_MAX ||
	    minor > UINT32_MAX)
		return -1;
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	while (p < end && *p == ' ')
		p++;
	m->path = p;
	m->pathlen = (size_t)(end - p);
	if (m->pathlen > dlen &&
	    memcmp(p + m->pathlen - dlen, deleted, dlen) == 0) {
		m->deleted = true;
		m->pathlen -= dlen;
	}
	line[p - line + (ptrdiff_t)m->pathlen] = '\0';
	return 0;
}

static int proc_path(char *out, size_t outlen, const char *proc_root, pid_t pid,
		     const char *name)
{
	int n = snprintf(out, outlen, "%s/%d/%s", proc_root, (int)pid, name);

	if (n < 0 || (size_t)n >= outlen) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int wc_proc_open(const char *proc_root, pid_t pid, const char *name)
{
	char path[PATH_MAX];

	if (proc_path(path, sizeof(path), proc_root, pid, name))
		return -1;
	return open(path, OPEN_FLAGS);
}

/* The index-th number of a status value ("\t0\t1000\t..."), or the last
 * one if index < 0. */
static bool status_field(const char *p, int index, uint64_t *out)
{
	const char *end = p + strlen(p);
	bool found = false;
	uint64_t v;

	for (int i = 0; index < 0 || i <= index; i++) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (!wc_parse_dec(&p, end, &v))
			break;
		if (index < 0 || i == index) {
			*out = v;
			found = true;
		}
	}
	return found;
}

int wc_proc_status(const char *proc_root, pid_t pid, pid_t *nspid, uid_t *euid)
{
	bool have_ns = false, have_uid = false;
	struct wc_lines r;
	size_t len;
	char *line;
	uint64_t v;
	int fd;

	fd = wc_proc_open(proc_root, pid, "status");
	if (fd < 0 || wc_lines_open(&r, fd, 4096, STATUS_MAX))
		return -1;
	/* An overlong line (Groups: with thousands of groups) is skipped. */
	while ((line = wc_lines_next(&r, &len))) {
		if (!strncmp(line, "NSpid:", 6)) {
			have_ns = status_field(line + 6, -1, &v) && v > 0 &&
				  v <= INT_MAX;
			if (have_ns)
				*nspid = (pid_t)v;
		} else if (!strncmp(line, "Uid:", 4)) {
			have_uid = status_field(line + 4, 1, &v) &&
				   v <= UINT32_MAX;
			if (have_uid)
				*euid = (uid_t)v;
		}
	}
	wc_lines_close(&r);
	/* Kernels before 4.1 have no NSpid: the pid is the same there. */
	if (!have_ns)
		*nspid = pid;
	return have_uid ? 0 : -1;
}

static int map_file_path(char *out, size_t outlen, const char *proc_root,
			 pid_t pid, uint64_t start, uint64_t end)
{
	char name[64];

	/* The entries are named without zero padding, unlike maps lines. */
	snprintf(name, sizeof(name), "map_files/%" PRIx64 "-%" PRIx64, start,
		 end);
	return proc_path(out, outlen, proc_root, pid, name);
}

int wc_proc_stat_map_file(const char *proc_root, pid_t pid, uint64_t start,
			  uint64_t end, struct stat *st)
{
	char path[PATH_MAX];

	if (map_file_path(path, sizeof(path), proc_root, pid, start, end))
		return -1;
	return stat(path, st);
}

/* statfs types, not all in every linux/magic.h */
#define ZFS_MAGIC 0x2fc12fc1
#define JFS_MAGIC 0x3153464a
#define BCACHEFS_MAGIC 0xca451a4e

bool wc_fs_readable(long f_type)
{
	static const unsigned long ok[] = {
		EXT4_SUPER_MAGIC,  XFS_SUPER_MAGIC,
		BTRFS_SUPER_MAGIC, F2FS_SUPER_MAGIC,
		ZFS_MAGIC,	   BCACHEFS_MAGIC,
		JFS_MAGIC,	   REISERFS_SUPER_MAGIC,
		NILFS_SUPER_MAGIC, OCFS2_SUPER_MAGIC,
		TMPFS_MAGIC,	   RAMFS_MAGIC,
		HUGETLBFS_MAGIC,   OVERLAYFS_SUPER_MAGIC,
		SQUASHFS_MAGIC,	   EROFS_SUPER_MAGIC_V1,
		ISOFS_SUPER_MAGIC, MSDOS_SUPER_MAGIC,
		EXFAT_SUPER_MAGIC, NFS_SUPER_MAGIC,
		CIFS_SUPER_MAGIC,  SMB2_SUPER_MAGIC,
		CEPH_SUPER_MAGIC,  V9FS_MAGIC,
	};
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if ((unsigned long)(uint32_t)f_type == ok[i])
			return true;
	return false;
}

/*
 * Open for reading what pfd (an O_PATH descriptor, taken) names, if it is
 * a regular file on a readable filesystem.  An O_PATH open runs no driver
 * code, so a device node or FIFO someone put in a path we follow is looked
 * at, never opened.
 */
static int reopen_regular(int pfd, struct stat *st)
{
	char path[64];
	struct statfs sf;
	int fd;

	if (pfd < 0)
		return -1;
	if (fstat(pfd, st) || !S_ISREG(st->st_mode) || fstatfs(pfd, &sf) ||
	    !wc_fs_readable((long)sf.f_type)) {
		close(pfd);
		errno = EINVAL;
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", pfd);
	fd = open(path, OPEN_FLAGS);
	close(pfd);
	return fd;
}

int wc_proc_open_map_file(const char *proc_root, pid_t pid, uint64_t start,
			  uint64_t end, struct stat *st)
{
	char path[PATH_MAX];

	if (map_file_path(path, sizeof(path), proc_root, pid, start, end))
		return -1;
	return reopen_regular(open(path, O_PATH | O_CLOEXEC), st);
}

static int openat2_path(int dfd, const char *path, uint64_t resolve)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = resolve | RESOLVE_NO_MAGICLINKS,
	};

	return (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
}

/* The process's root as a directory descriptor. */
static int open_root(const char *proc_root, pid_t pid)
{
	char full[PATH_MAX];

	if (proc_path(full, sizeof(full), proc_root, pid, "root"))
		return -1;
	return open(full, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int wc_proc_open_in_root(const char *proc_root, pid_t pid, const char *path,
			 unsigned flags, struct stat *st)
{
	uint64_t resolve = RESOLVE_IN_ROOT;
	int dfd, fd;

	if (path[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	if (flags & WC_OPEN_NO_SYMLINKS)
		resolve |= RESOLVE_NO_SYMLINKS;
	dfd = open_root(proc_root, pid);
	if (dfd < 0)
		return -1;
	/* No fallback without openat2 (before 5.6, or a seccomp profile
	 * that refuses it): the kernel would resolve absolute symlinks of
	 * the process's files in our root. */
	fd = openat2_path(dfd, path, resolve);
	close(dfd);
	return reopen_regular(fd, st);
}

int wc_proc_open_beneath(const char *proc_root, pid_t pid, const char *dir,
			 size_t dirlen, const char *name, struct stat *st)
{
	char dpath[PATH_MAX];
	int rfd, dfd, fd;

	if (dirlen == 0 || dirlen >= sizeof(dpath) || dir[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	memcpy(dpath, dir, dirlen);
	dpath[dirlen] = '\0';
	rfd = open_root(proc_root, pid);
	if (rfd < 0)
		return -1;
	dfd = openat2_path(rfd, dpath, RESOLVE_IN_ROOT);
	close(rfd);
	if (dfd < 0)
		return -1;
	fd = openat2_path(dfd, name, RESOLVE_BENEATH);
	close(dfd);
	return reopen_regular(fd, st);
}

int wc_proc_read_mem(const char *proc_root, pid_t pid, uint64_t addr, void *buf,
		     size_t len)
{
	int fd = wc_proc_open(proc_root, pid, "mem");
	ssize_t n;

	if (fd < 0)
		return -1;
	if (addr > (uint64_t)INT64_MAX - len) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	do
		n = pread(fd, buf, len, (off_t)addr);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0 || (size_t)n != len) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

int wc_open_regular(const char *path, struct stat *st)
{
	return reopen_regular(open(path, O_PATH | O_CLOEXEC), st);
}
