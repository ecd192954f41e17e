/* wc_sym_fetch.c - see wc_sym_fetch.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sym/wc_sym_fetch.h"
#include "sym/wc_sym_perfmap.h"
#include "util/wc_hash.h"

/* Bytes of /proc/PID/maps read per process and read: 65,536 mappings
 * (the kernel's default vm.max_map_count) of a long path each.  The kernel
 * writes these lines only as they are read: the rest costs nothing. */
#define MAPS_BYTES_MAX (8u << 20)

/* --- maps ---------------------------------------------------------------- */

void wc_fetch_maps_free(struct wc_fetch_maps *m)
{
	free(m->maps);
	free(m->files);
	free(m->paths);
	memset(m, 0, sizeof(*m));
}

/* A file looked at in this read, so that its other mappings are not. */
struct seen_file {
	uint64_t dev, ino;
	struct wc_fetch_file f;
	bool used;
};

#define SEEN_FILES 64

/* Maps being gathered: arrays grown by doubling up to the bounds.  The
 * path buffer moves as it grows: paths are offsets until the end. */
struct gather {
	struct seen_file seen[SEEN_FILES];
	struct wc_fetch_ctx *c;
	pid_t pid;
	struct wc_fetch_maps *out;
	size_t *path_at;
	size_t cap, files_cap, at_cap, paths_cap;
	size_t last_path; /* offset of the last path kept, for sharing */
	bool full;
};

static int grow(void **p, size_t *cap, size_t need, size_t size, size_t max)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	if (need > max) {
		errno = E2BIG;
		return -1;
	}
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	if (ncap > max)
		ncap = max;
	np = realloc(*p, ncap * size);
	if (!np)
		return -1;
	*p = np;
	*cap = ncap;
	return 0;
}

/* The path of pm kept once: equal to the last one kept, or appended;
 * its offset into *at. */
static int keep_path(struct gather *g, const struct wc_proc_map *pm, size_t *at)
{
	struct wc_fetch_maps *o = g->out;

	if (o->paths_len && o->paths_len - g->last_path == pm->pathlen + 1 &&
	    !memcmp(o->paths + g->last_path, pm->path, pm->pathlen)) {
		*at = g->last_path;
		return 0;
	}
	*at = o->paths_len;
	if (grow((void **)&o->paths, &g->paths_cap, *at + pm->pathlen + 1, 1,
		 WC_FETCH_PATH_BYTES))
		return -1;
	memcpy(o->paths + *at, pm->path, pm->pathlen);
	o->paths[*at + pm->pathlen] = '\0';
	o->paths_len = *at + pm->pathlen + 1;
	g->last_path = *at;
	return 0;
}

/* What a stat of a mapped file says of it, as modules are keyed. */
static void file_of_stat(const struct stat *st, struct wc_fetch_file *f)
{
	f->size = (uint64_t)st->st_size;
	f->mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000ULL +
		      (uint64_t)st->st_mtim.tv_nsec;
	f->dev = (uint64_t)st->st_dev;
	f->known = true;
}

/* The identity of a mapped file, looked at once per read whatever its
 * number of mappings (a stat through map_files costs 10 us: a process
 * mapping one file 30,000 times would cost a third of a second). */
static void file_of(struct gather *g, const struct wc_proc_map *pm,
		    struct wc_fetch_file *f)
{
	uint64_t dev = (uint64_t)pm->dev_major << 32 | pm->dev_minor;
	uint64_t h =
		(dev * 0x9e3779b97f4a7c15ULL ^ pm->ino) * 0xbf58476d1ce4e5b9ULL;
	struct seen_file *e = &g->seen[(h >> 32) % SEEN_FILES];
	struct stat st;

	memset(f, 0, sizeof(*f));
	if (pm->path[0] != '/' || pm->path[1] == '/')
		return;
	if (e->used && e->dev == dev && e->ino == pm->ino) {
		*f = e->f;
		return;
	}
	if (wc_proc_stat_map_file(g->c->proc_root, g->pid, pm->start, pm->end,
				  &st) == 0)
		file_of_stat(&st, f);
	*e = (struct seen_file){dev, pm->ino, *f, true};
}

static void gather_add(struct gather *g, const struct wc_proc_map *pm)
{
	struct wc_fetch_maps *o = g->out;
	const size_t max = WC_FETCH_MAX_MAPS;

	/* Lines out of order would break a binary search: only a fake
	 * proc root has them, but they must not make wrong names. */
	if (g->full || (o->n && pm->start < o->maps[o->n - 1].end))
		return;
	if (grow((void **)&o->maps, &g->cap, o->n + 1, sizeof(*o->maps), max) ||
	    grow((void **)&o->files, &g->files_cap, o->n + 1, sizeof(*o->files),
		 max) ||
	    grow((void **)&g->path_at, &g->at_cap, o->n + 1,
		 sizeof(*g->path_at), max) ||
	    keep_path(g, pm, &g->path_at[o->n])) {
		g->c->over_bounds++;
		g->full = true;
		return;
	}
	file_of(g, pm, &o->files[o->n]);
	o->maps[o->n++] = *pm;
}

/* Read the executable lines of pid's maps; with g, keep them. */
static int read_maps(struct wc_fetch_ctx *c, pid_t pid, uint64_t *sig,
		     struct gather *g)
{
	struct wc_proc_map pm;
	struct wc_lines r;
	size_t len;
	char *line;
	int fd;

	fd = wc_proc_open(c->proc_root, pid, "maps");
	if (fd < 0 || wc_lines_open(&r, fd, 64 * 1024, MAPS_BYTES_MAX))
		return -1;
	*sig = WC_FNV_SEED;
	while ((line = wc_lines_next(&r, &len))) {
		if (wc_proc_parse_maps_line(line, len, &pm) || !pm.exec)
			continue;
		/* The hash covers the line as read, path included. */
		*sig = wc_fnv1a(*sig, line, len);
		if (g)
			gather_add(g, &pm);
	}
	if (r.cut && g) {
		c->over_bounds++;
		g->full = true;
	}
	wc_lines_close(&r);
	return 0;
}

int wc_fetch_maps(struct wc_fetch_ctx *c, pid_t pid, uint64_t known_sig,
		  struct wc_fetch_maps *out)
{
	struct gather g = {.c = c, .pid = pid, .out = out};
	uint64_t sig;
	size_t i;

	memset(out, 0, sizeof(*out));
	/* One read, kept whether or not it changed: a process's maps can
	 * take the kernel 30 ms to write. */
	if (wc_proc_status(c->proc_root, pid, &out->nspid, &out->euid) ||
	    read_maps(c, pid, &sig, &g)) {
		free(g.path_at);
		wc_fetch_maps_free(out);
		return -1;
	}
	if (known_sig && sig == known_sig) {
		pid_t nspid = out->nspid;
		uid_t euid = out->euid;

		free(g.path_at);
		wc_fetch_maps_free(out);
		out->sig = sig;
		out->nspid = nspid;
		out->euid = euid;
		return 1;
	}
	out->sig = sig;
	for (i = 0; i < out->n; i++)
		out->maps[i].path = out->paths + g.path_at[i];
	free(g.path_at);
	out->cut = g.full;
	return 0;
}

/* --- mapped files and their debug files ------------------------------------ */

/* Our own mapping at start as our maps show it: its device, inode and
 * end, and whether it is the vdso (its path is not kept).  0, or -1. */
static int own_mapping(uint64_t start, struct wc_proc_map *out, bool *vdso)
{
	struct wc_proc_map pm;
	struct wc_lines r;
	size_t n;
	char *line;
	int fd, rc = -1;

	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || wc_lines_open(&r, fd, 64 * 1024, MAPS_BYTES_MAX))
		return -1;
	while ((line = wc_lines_next(&r, &n))) {
		if (wc_proc_parse_maps_line(line, n, &pm) || pm.start != start)
			continue;
		*vdso = !strcmp(pm.path, "[vdso]");
		*out = pm;
		out->path = "";
		out->pathlen = 0;
		rc = 0;
		break;
	}
	wc_lines_close(&r);
	return rc;
}

enum same { SAME, OTHER, UNKNOWN };

/* stat's view, where the kernel's cannot be had: the same on most
 * filesystems. */
static enum same stat_same(const struct wc_proc_map *m, const struct stat *st)
{
	if (st->st_ino == m->ino && major(st->st_dev) == m->dev_major &&
	    minor(st->st_dev) == m->dev_minor)
		return SAME;
	return OTHER;
}

/*
 * Is fd the file the kernel had mapped as m?  Another may be there by
 * now (a process can map any file at m's range after its maps were
 * read), even one with m's inode number on another filesystem.  Asked of
 * the kernel: fd mapped here shows the device and inode maps lines show,
 * which stat does not on btrfs or overlayfs.  Walks (by_inode) key by the
 * mapped inode's own device, which is the maps line's but on overlayfs
 * since 6.8 (maps show the overlay's): there the inode number alone
 * must do.  One page, or one huge page, never touched nor reserved.
 */
static enum same kernel_same(int fd, const struct wc_proc_map *m, bool by_inode,
			     const struct stat *st)
{
	size_t len = (size_t)sysconf(_SC_PAGESIZE);
	struct wc_proc_map own;
	struct statfs fs;
	enum same same;
	bool vdso;
	void *at;

	if (st->st_blksize > 0 && (size_t)st->st_blksize > len &&
	    (size_t)st->st_blksize <= (1u << 30))
		len = (size_t)st->st_blksize;
	at = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
	if (at == MAP_FAILED)
		return stat_same(m, st);
	if (own_mapping((uintptr_t)at, &own, &vdso))
		same = UNKNOWN;
	else if (own.ino != m->ino)
		same = OTHER;
	else if (own.dev_major == m->dev_major && own.dev_minor == m->dev_minor)
		same = SAME;
	else if (by_inode && fstatfs(fd, &fs) == 0 &&
		 fs.f_type == OVERLAYFS_SUPER_MAGIC)
		same = SAME;
	else
		same = OTHER;
	munmap(at, len);
	return same;
}

/* What open_mapped() opens must be. */
struct expect {
	const struct wc_proc_map *m;
	const struct wc_fetch_file *f; /* map_files' stat of it, or NULL */
	bool by_inode; /* m's device is the inode's own (a walk's key) */
};

static enum same is_expected(int fd, const struct expect *x,
			     const struct stat *st)
{
	const struct wc_fetch_file *f = x->f;
	struct wc_fetch_file now;

	/* the stat the caller keyed the file by, where it has one */
	file_of_stat(st, &now);
	if (f && f->known &&
	    (now.dev != f->dev || now.size != f->size ||
	     now.mtime_ns != f->mtime_ns))
		return OTHER;
	return kernel_same(fd, x->m, x->by_inode, st);
}

/* Open the file behind mapping x->m of pid: map_files first (deleted
 * files, other mount namespaces), else the path in its root.  Either
 * must be the file expected: else -1 with errno ESTALE where map_files
 * showed another (the process mapped one there since: ask again), ENOENT
 * where the path now names another (a file deleted and replaced), EIO if
 * it could not be told. */
static int open_mapped(struct wc_fetch_ctx *c, pid_t pid,
		       const struct expect *x, struct stat *st)
{
	const struct wc_proc_map *m = x->m;
	bool by_path = false;
	enum same same;
	int fd;

	fd = wc_proc_open_map_file(c->proc_root, pid, m->start, m->end, st);
	if (fd < 0 && errno == EINVAL) {
		c->refused++;
		return -1;
	}
	if (fd < 0 && m->path[0] == '/') {
		by_path = true;
		fd = wc_proc_open_in_root(c->proc_root, pid, m->path, 0, st);
		if (fd < 0 && errno == EINVAL)
			c->refused++;
	}
	if (fd < 0)
		return -1;
	same = is_expected(fd, x, st);
	if (same == SAME)
		return fd;
	close(fd);
	errno = same == UNKNOWN ? EIO : by_path ? ENOENT : ESTALE;
	return -1;
}

static void image_of(struct wc_elf *e, const struct stat *st,
		     struct wc_fetch_image *out, struct wc_elf_info *info)
{
	wc_elf_read_info(e, info);
	memset(out, 0, sizeof(*out));
	memcpy(out->segs, info->segs, sizeof(out->segs));
	out->nsegs = info->nsegs;
	memcpy(out->build_id, info->build_id, info->build_id_len);
	out->build_id_len = info->build_id_len;
	out->owner = st ? st->st_uid : 0;
}

int wc_fetch_image(struct wc_fetch_ctx *c, pid_t pid,
		   const struct wc_proc_map *m, const struct wc_fetch_file *f,
		   struct wc_fetch_image *out)
{
	const struct expect x = {.m = m, .f = f};
	struct wc_elf_info info;
	struct stat st;
	struct wc_elf e;
	int fd = open_mapped(c, pid, &x, &st);

	if (fd < 0)
		return -1;
	if (wc_elf_open_fd(&e, fd)) {
		errno = EINVAL;
		return -1;
	}
	image_of(&e, &st, out, &info);
	wc_elf_close(&e);
	return 0;
}

/* Where debug files are looked for, and which binary they are for. */
struct debug_ctx {
	struct wc_fetch_ctx *c;
	pid_t pid;	  /* 0: host only */
	const char *path; /* the binary as the process sees it, or NULL */
	const struct wc_elf_info *info;
	dev_t dev;
	ino_t ino;   /* the binary itself, never its own debug file */
	uid_t owner; /* the binary's */
};

/* Is the open file e the debug file for ctx's binary? */
static bool debug_matches(const struct debug_ctx *d, struct wc_elf *e,
			  bool by_link)
{
	struct wc_elf_info got;
	struct stat st;
	uint32_t crc;

	if (fstat(e->fd, &st) || (st.st_dev == d->dev && st.st_ino == d->ino))
		return false;
	wc_elf_read_info(e, &got);
	if (!got.has_symtab)
		return false;
	if (d->info->build_id_len && got.build_id_len)
		return got.build_id_len == d->info->build_id_len &&
		       !memcmp(got.build_id, d->info->build_id,
			       got.build_id_len);
	return by_link && wc_elf_crc32(e->fd, &crc) == 0 &&
	       crc == d->info->debuglink_crc;
}

/* Where a debug file is opened from. */
enum debug_where {
	DEBUG_HOST,   /* the host's debug directory: root's */
	DEBUG_ROOT,   /* a path in the process's root */
	DEBUG_BESIDE, /* the binary's directory, never leaving it */
};

/* A debug file outside the host's debug directory is believed only if the
 * binary's owner (or root) owns it: names come from it. */
static int open_debug(struct debug_ctx *d, enum debug_where where,
		      const char *path, size_t dirlen)
{
	const char *proc_root = d->c->proc_root;
	struct stat st;
	int fd;

	if (where == DEBUG_HOST)
		return wc_open_regular(path, &st);
	if (d->pid <= 0)
		return -1;
	fd = where == DEBUG_ROOT
		     ? wc_proc_open_in_root(proc_root, d->pid, path, 0, &st)
		     : wc_proc_open_beneath(proc_root, d->pid, d->path, dirlen,
					    path, &st);
	if (fd < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			d->c->refused++;
		return -1;
	}
	if (st.st_uid != 0 && st.st_uid != d->owner) {
		d->c->refused++;
		close(fd);
		return -1;
	}
	return fd;
}

static bool try_debug(struct debug_ctx *d, enum debug_where where,
		      const char *path, size_t dirlen, bool by_link,
		      struct wc_elf *out)
{
	int fd = open_debug(d, where, path, dirlen);

	if (fd < 0 || wc_elf_open_fd(out, fd))
		return false;
	if (debug_matches(d, out, by_link))
		return true;
	wc_elf_close(out);
	return false;
}

static bool find_by_build_id(struct debug_ctx *d, struct wc_elf *out)
{
	const struct wc_elf_info *in = d->info;
	char rel[2 * WC_ELF_BUILD_ID_MAX + 32], path[PATH_MAX];
	size_t n = 0;
	unsigned i;

	if (in->build_id_len < 2)
		return false;
	n += (size_t)snprintf(rel, sizeof(rel), ".build-id/%02x/",
			      in->build_id[0]);
	for (i = 1; i < in->build_id_len; i++)
		n += (size_t)snprintf(rel + n, sizeof(rel) - n, "%02x",
				      in->build_id[i]);
	snprintf(rel + n, sizeof(rel) - n, ".debug");
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", d->c->debug_root,
			     rel) < sizeof(path) &&
	    try_debug(d, DEBUG_HOST, path, 0, false, out))
		return true;
	snprintf(path, sizeof(path), "/usr/lib/debug/%s", rel);
	return try_debug(d, DEBUG_ROOT, path, 0, false, out);
}

static bool find_by_debuglink(struct debug_ctx *d, struct wc_elf *out)
{
	const char *link = d->info->debuglink, *slash;
	char path[PATH_MAX];
	int dirlen;

	/* The name comes from the file: it must not walk out of its dir. */
	if (!link[0] || strchr(link, '/') || !strcmp(link, ".") ||
	    !strcmp(link, "..") || !d->path || d->path[0] != '/')
		return false;
	slash = strrchr(d->path, '/');
	dirlen = (int)(slash - d->path);
	/* Beside the binary: DIR/LINK and DIR/.debug/LINK. */
	if (dirlen > 0 &&
	    try_debug(d, DEBUG_BESIDE, link, (size_t)dirlen, true, out))
		return true;
	if (dirlen > 0 &&
	    snprintf(path, sizeof(path), ".debug/%s", link) <
		    (int)sizeof(path) &&
	    try_debug(d, DEBUG_BESIDE, path, (size_t)dirlen, true, out))
		return true;
	if (snprintf(path, sizeof(path), "/usr/lib/debug%.*s/%s", dirlen,
		     d->path, link) < (int)sizeof(path) &&
	    try_debug(d, DEBUG_ROOT, path, 0, true, out))
		return true;
	return snprintf(path, sizeof(path), "%s%.*s/%s", d->c->debug_root,
			dirlen, d->path, link) < (int)sizeof(path) &&
	       try_debug(d, DEBUG_HOST, path, 0, true, out);
}

int wc_fetch_cfi(struct wc_fetch_ctx *c, pid_t pid, const struct wc_proc_map *m,
		 const struct wc_cfi_limits *lim, struct wc_cfi_table *out)
{
	struct wc_elf_info info;
	struct debug_ctx d;
	struct stat st;
	struct wc_elf e, dbg;
	uint64_t refused = c->refused;
	bool have_dbg;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	/* A table is kept under m's key: never another file's (ESTALE). */
	fd = open_mapped(c, pid,
			 &(const struct expect){.m = m, .by_inode = true}, &st);
	if (fd < 0) {
		if (errno != ESTALE)
			errno = c->refused != refused ? EACCES : ESRCH;
		return -1;
	}
	if (wc_elf_open_fd(&e, fd)) {
		errno = EINVAL;
		return -1;
	}
	if (wc_elf_read_info(&e, &info)) {
		wc_elf_close(&e);
		errno = EINVAL;
		return -1;
	}
	d = (struct debug_ctx){.c = c,
			       .pid = pid,
			       .path = m->path,
			       .info = &info,
			       .dev = st.st_dev,
			       .ino = st.st_ino,
			       .owner = st.st_uid};
	have_dbg = find_by_build_id(&d, &dbg) || find_by_debuglink(&d, &dbg);
	rc = wc_cfi_build_with(&e, &info, have_dbg ? &dbg : NULL, lim, out)
		     ? errno
		     : 0;
	if (have_dbg)
		wc_elf_close(&dbg);
	wc_elf_close(&e);
	errno = rc;
	return rc ? -1 : 0;
}

/* Symbols of one table of e into t; on failure t is emptied. */
static ssize_t symbols(struct debug_ctx *d, struct wc_elf *e, bool dynsym,
		       struct wc_symtab *t)
{
	ssize_t n = wc_elf_symbols(e, dynsym, t);
	int err = errno;

	if (n <= 0) {
		wc_symtab_free(t);
		if (n < 0 && err == E2BIG)
			d->c->too_big++;
		errno = err;
	}
	return n;
}

/* .symtab, else a debug file's .symtab, else .dynsym. */
static void load_symbols(struct debug_ctx *d, struct wc_elf *e,
			 struct wc_symtab *t)
{
	struct wc_elf dbg;
	ssize_t n;

	if (d->info->has_symtab) {
		n = symbols(d, e, false, t);
		if (n > 0)
			return;
		if (n < 0 && errno == E2BIG)
			goto dynsym; /* a debug file's table is as big */
	}
	if (find_by_build_id(d, &dbg) || find_by_debuglink(d, &dbg)) {
		n = symbols(d, &dbg, false, t);
		wc_elf_close(&dbg);
		if (n > 0)
			return;
	}
dynsym:
	symbols(d, e, true, t);
}

static int finish(struct wc_symtab *t)
{
	if (t->pend_n == 0 || wc_symtab_finish(t) || t->n == 0) {
		wc_symtab_free(t);
		return -1;
	}
	return 0;
}

int wc_fetch_symbols(struct wc_fetch_ctx *c, pid_t pid,
		     const struct wc_proc_map *m, const struct wc_fetch_file *f,
		     struct wc_symtab *t)
{
	const struct expect x = {.m = m, .f = f};
	struct wc_elf_info info;
	struct debug_ctx d = {
		.c = c, .pid = pid, .path = m->path, .info = &info};
	struct wc_fetch_image img;
	struct stat st;
	struct wc_elf e;
	int fd = open_mapped(c, pid, &x, &st);

	if (fd < 0)
		return -1;
	if (wc_elf_open_fd(&e, fd)) {
		errno = EINVAL;
		return -1;
	}
	image_of(&e, &st, &img, &info);
	d.dev = st.st_dev;
	d.ino = st.st_ino;
	d.owner = st.st_uid;
	load_symbols(&d, &e, t);
	wc_elf_close(&e);
	if (finish(t)) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* Our own vdso's image into buf if it is len bytes: the stand-in when a
 * process's memory cannot be read (it exited, or a fake proc root): same
 * kernel, same image. */
static int own_vdso(char *buf, size_t len)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	struct wc_proc_map pm;
	bool vdso;

	if (!base || own_mapping(base, &pm, &vdso) || !vdso ||
	    pm.end - pm.start != len)
		return -1;
	memcpy(buf, (const void *)base, len);
	return 0;
}

int wc_fetch_vdso(struct wc_fetch_ctx *c, pid_t pid, uint64_t start,
		  uint64_t end, char **image, struct wc_fetch_image *img,
		  struct wc_symtab *t)
{
	struct wc_elf_info info;
	struct debug_ctx d = {.c = c, .info = &info};
	size_t len = (size_t)(end - start);
	struct wc_elf e;
	char *buf;
	int rc = -1;

	if (end <= start || end - start > WC_FETCH_VDSO_MAX)
		return -1;
	buf = malloc(len);
	if (!buf)
		return -1;
	if ((wc_proc_read_mem(c->proc_root, pid, start, buf, len) == 0 ||
	     own_vdso(buf, len) == 0) &&
	    wc_elf_open_mem(&e, buf, len) == 0) {
		image_of(&e, NULL, img, &info);
		load_symbols(&d, &e, t);
		wc_elf_close(&e);
		finish(t); /* none: the module is named "[vdso]" */
		*image = buf;
		return 0;
	}
	free(buf);
	return rc;
}

/* --- perf maps -------------------------------------------------------------- */

/* Would the process's own user have written this perf map?  A file a
 * process can name is not one it wrote: a symlink or hard link to someone
 * else's file, a bind mount of one in its own namespace, a file others
 * may write to.  A root-owned map of a non-root process is refused even
 * when an admin chown'ed it: it looks the same as a bind mount. */
static bool perfmap_believed(uid_t euid, const struct stat *st)
{
	return st->st_uid == euid && st->st_nlink == 1 &&
	       !(st->st_mode & (S_IWGRP | S_IWOTH));
}

static bool same_file(const struct wc_file_id *a, const struct stat *st)
{
	return a->dev == (uint64_t)st->st_dev &&
	       a->ino == (uint64_t)st->st_ino &&
	       a->size == (uint64_t)st->st_size &&
	       a->mtime_sec == (int64_t)st->st_mtim.tv_sec &&
	       a->mtime_nsec == (int64_t)st->st_mtim.tv_nsec;
}

int wc_fetch_perfmap(struct wc_fetch_ctx *c, pid_t pid, pid_t nspid, uid_t euid,
		     const struct wc_file_id *known, struct wc_symtab *t,
		     struct wc_file_id *id)
{
	char path[64];
	struct stat st;
	uint64_t bad = 0;
	long rc;
	int fd;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)nspid);
	fd = wc_proc_open_in_root(c->proc_root, pid, path, WC_OPEN_NO_SYMLINKS,
				  &st);
	if (fd < 0) {
		/* gone, refused, or a new process under this pid */
		if (errno != ENOENT)
			c->refused++;
		return WC_PERFMAP_NONE;
	}
	if (!perfmap_believed(euid, &st)) {
		c->refused++;
		close(fd);
		return WC_PERFMAP_NONE;
	}
	if (known && same_file(known, &st)) {
		close(fd);
		return WC_PERFMAP_SAME;
	}
	*id = (struct wc_file_id){
		.dev = (uint64_t)st.st_dev,
		.ino = (uint64_t)st.st_ino,
		.size = (uint64_t)st.st_size,
		.mtime_sec = (int64_t)st.st_mtim.tv_sec,
		.mtime_nsec = (int64_t)st.st_mtim.tv_nsec,
	};
	rc = wc_perfmap_load(fd, (uint64_t)st.st_size, t, &bad);
	c->bad_lines += bad;
	return rc < 0 ? WC_PERFMAP_NONE : WC_PERFMAP_READ;
}
