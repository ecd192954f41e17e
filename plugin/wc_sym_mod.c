/* wc_sym_mod.c - see wc_sym_mod.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "wc_sym_elf.h"
#include "wc_sym_mod.h"

/* Unsized ELF symbols (assembly) cover at most this much. */
#define UNSIZED_MAX 4096
/* The device number no file has: vdso modules are keyed by image hash. */
#define VDSO_DEV UINT64_MAX

struct wc_mod_table {
	struct wc_symtab syms;
	uint8_t build_id[WC_ELF_BUILD_ID_MAX];
	unsigned build_id_len; /* 0: never shared (no id, or a vdso) */
	uid_t owner;	       /* of the file: shared only with its files */
	unsigned refs; /* modules holding it; 0 = cached for a later one */
	uint64_t last_used;
	size_t bytes; /* counted in c->bytes */
	size_t index; /* in c->tables */
};

struct wc_mod {
	struct wc_mod *hnext;
	uint64_t dev, ino;
	uint64_t size, mtime_ns; /* 0 when map_files could not be stat'ed */
	struct wc_elf_seg segs[WC_ELF_MAX_SEGS];
	unsigned nsegs;
	struct wc_mod_table *table;
	bool evicted;
	bool stale; /* replaced by a newer file of the same inode */
	unsigned refs;
	uint32_t serial; /* never reused while the cache lives */
	uint64_t last_cycle;
	char name[]; /* base name */
};

struct wc_mod_cache {
	struct wc_mod_cache_opts o;
	struct wc_mod **buckets;
	size_t nbuckets; /* a power of two */
	size_t nmods;
	struct wc_mod_table **tables;
	size_t ntables, tables_cap;
	size_t bytes;
	size_t other_bytes; /* the caller's, as of the last cycle */
	uint64_t tick, cycle;
	uint32_t serials; /* the last module's serial */
	struct wc_mod_stats st;
	char *own_vdso; /* our vdso's image, copied once when needed */
	size_t own_vdso_len;
	bool own_vdso_tried;
};

struct wc_mod_cache *wc_mod_cache_new(const struct wc_mod_cache_opts *o)
{
	struct wc_mod_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->o = *o;
	c->nbuckets = 64;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return NULL;
	}
	return c;
}

static size_t mod_bytes(const struct wc_mod *m)
{
	return sizeof(*m) + strlen(m->name) + 1;
}

static void table_free(struct wc_mod_cache *c, struct wc_mod_table *t)
{
	c->tables[t->index] = c->tables[--c->ntables];
	c->tables[t->index]->index = t->index;
	c->bytes -= t->bytes;
	wc_symtab_free(&t->syms);
	free(t);
}

static void mod_free(struct wc_mod_cache *c, struct wc_mod *m)
{
	struct wc_mod_table *t = m->table;

	c->bytes -= mod_bytes(m);
	c->nmods--;
	/* Unused, a table stays cached for the next file with its build-id;
	 * without one nothing could ever find it again. */
	if (t && --t->refs == 0 && !t->build_id_len)
		table_free(c, t);
	free(m);
}

void wc_mod_cache_free(struct wc_mod_cache *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nbuckets; i++) {
		struct wc_mod *m = c->buckets[i], *next;

		for (; m; m = next) {
			next = m->hnext;
			mod_free(c, m);
		}
	}
	while (c->ntables)
		table_free(c, c->tables[0]);
	free(c->tables);
	free(c->buckets);
	free(c->own_vdso);
	free(c);
}

static size_t bucket_of(const struct wc_mod_cache *c, uint64_t dev,
			uint64_t ino)
{
	uint64_t h = dev * 0x9e3779b97f4a7c15ULL ^ ino;

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 29;
	return (size_t)h & (c->nbuckets - 1);
}

/* Double the buckets when chains would grow past one on average; a
 * failed allocation only makes chains longer. */
static void maybe_grow(struct wc_mod_cache *c)
{
	struct wc_mod **old = c->buckets, **nb;
	size_t i, oldn = c->nbuckets;

	if (c->nmods < c->nbuckets || c->nbuckets > SIZE_MAX / 2)
		return;
	nb = calloc(oldn * 2, sizeof(*nb));
	if (!nb)
		return;
	c->buckets = nb;
	c->nbuckets = oldn * 2;
	for (i = 0; i < oldn; i++) {
		struct wc_mod *m = old[i], *next;

		for (; m; m = next) {
			size_t b = bucket_of(c, m->dev, m->ino);

			next = m->hnext;
			m->hnext = nb[b];
			nb[b] = m;
		}
	}
	free(old);
}

/* Every module stays hashed until freed (stale ones too, so that table
 * eviction reaches every holder through the buckets). */
static void unhash_free(struct wc_mod_cache *c, struct wc_mod *m)
{
	struct wc_mod **pp = &c->buckets[bucket_of(c, m->dev, m->ino)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == m) {
			*pp = m->hnext;
			break;
		}
	}
	mod_free(c, m);
}

static struct wc_mod *find(struct wc_mod_cache *c, uint64_t dev, uint64_t ino)
{
	struct wc_mod *m = c->buckets[bucket_of(c, dev, ino)];

	for (; m; m = m->hnext)
		if (m->dev == dev && m->ino == ino && !m->stale)
			return m;
	return NULL;
}

/* Unreferenced modules are kept only as the way to a cached table. */
static void drop_if_unused(struct wc_mod_cache *c, struct wc_mod *m)
{
	if (!m->refs && (!m->table || m->stale))
		unhash_free(c, m);
}

static void evict_table(struct wc_mod_cache *c, struct wc_mod_table *t)
{
	size_t i;

	for (i = 0; i < c->nbuckets && t->refs; i++) {
		struct wc_mod *m = c->buckets[i], *next;

		for (; m; m = next) {
			next = m->hnext;
			if (m->table != t)
				continue;
			m->table = NULL;
			m->evicted = true;
			t->refs--;
			drop_if_unused(c, m);
		}
	}
	c->st.evictions++;
	table_free(c, t);
}

/* Evict least recently used tables (never keep) until within bounds. */
static void trim(struct wc_mod_cache *c, size_t other_bytes,
		 const struct wc_mod_table *keep)
{
	while (c->ntables > c->o.max_tables ||
	       c->bytes + other_bytes > c->o.max_bytes) {
		struct wc_mod_table *lru = NULL;
		size_t i;

		for (i = 0; i < c->ntables; i++) {
			struct wc_mod_table *t = c->tables[i];

			if (t != keep &&
			    (!lru || t->last_used < lru->last_used))
				lru = t;
		}
		if (!lru)
			return;
		evict_table(c, lru);
	}
}

/*
 * A table another file of the same owner read under this build-id.  Any
 * user can give a binary of theirs any build-id: sharing across owners
 * would let them name another user's frames.
 */
static struct wc_mod_table *table_by_build_id(struct wc_mod_cache *c,
					      const uint8_t *id, unsigned len,
					      uid_t owner)
{
	size_t i;

	if (!len)
		return NULL;
	for (i = 0; i < c->ntables; i++) {
		struct wc_mod_table *t = c->tables[i];

		if (t->build_id_len == len && t->owner == owner && t->syms.n &&
		    memcmp(t->build_id, id, len) == 0)
			return t;
	}
	return NULL;
}

/* Where debug files are looked for, and which binary they are for. */
struct debug_ctx {
	struct wc_mod_cache *c;
	pid_t pid;	  /* 0: host only */
	const char *path; /* the binary as the process sees it, or NULL */
	const struct wc_elf_info *info;
	dev_t dev;
	ino_t ino;   /* the binary itself, never its own debug file */
	uid_t owner; /* the binary's */
	bool shared; /* its table may be shared by build-id */
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
	DEBUG_HOST,    /* the host's debug directory: root's */
	DEBUG_ROOT,    /* a path in the process's root */
	DEBUG_BESIDE,  /* the binary's directory, never leaving it */
};

/* A debug file outside the host's debug directory is believed only if the
 * binary's owner (or root) owns it: names come from it. */
static int open_debug(struct debug_ctx *d, enum debug_where where,
		      const char *path, size_t dirlen)
{
	const char *proc_root = d->c->o.proc_root;
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
			d->c->st.refused++;
		return -1;
	}
	if (st.st_uid != 0 && st.st_uid != d->owner) {
		d->c->st.refused++;
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
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", d->c->o.debug_root,
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
	if (dirlen > 0 && try_debug(d, DEBUG_BESIDE, link, (size_t)dirlen,
				    true, out))
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
	return snprintf(path, sizeof(path), "%s%.*s/%s", d->c->o.debug_root,
			dirlen, d->path, link) < (int)sizeof(path) &&
	       try_debug(d, DEBUG_HOST, path, 0, true, out);
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
			d->c->st.too_big++;
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

static struct wc_mod_table *table_new(struct wc_mod_cache *c,
				      const struct debug_ctx *d)
{
	const struct wc_elf_info *info = d->info;

	struct wc_mod_table *t;

	if (c->ntables == c->tables_cap) {
		size_t cap = c->tables_cap ? 2 * c->tables_cap : 16;
		struct wc_mod_table **nt =
			realloc(c->tables, cap * sizeof(*nt));

		if (!nt)
			return NULL;
		c->tables = nt;
		c->tables_cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	wc_symtab_init(&t->syms, c->o.max_bytes / 2, UNSIZED_MAX);
	if (d->shared) {
		memcpy(t->build_id, info->build_id, info->build_id_len);
		t->build_id_len = info->build_id_len;
	}
	t->owner = d->owner;
	t->index = c->ntables;
	c->tables[c->ntables++] = t;
	return t;
}

/* The table for an open ELF image: shared by build-id, or read now. */
static struct wc_mod_table *
table_for(struct wc_mod_cache *c, struct debug_ctx *d, struct wc_elf *e)
{
	struct wc_mod_table *t = NULL;

	if (d->shared)
		t = table_by_build_id(c, d->info->build_id,
				      d->info->build_id_len, d->owner);
	if (t)
		return t;
	t = table_new(c, d);
	if (!t)
		return NULL;
	load_symbols(d, e, &t->syms);
	if (t->syms.pend_n == 0 || wc_symtab_finish(&t->syms) ||
	    t->syms.n == 0) {
		table_free(c, t);
		return NULL;
	}
	t->bytes = sizeof(*t) + wc_symtab_bytes(&t->syms);
	c->bytes += t->bytes;
	t->last_used = ++c->tick;
	trim(c, c->other_bytes, t);
	return t;
}

static void attach(struct wc_mod_cache *c, struct wc_mod *m,
		   struct wc_mod_table *t)
{
	if (!t)
		return;
	t->refs++;
	t->last_used = ++c->tick;
	m->table = t;
	m->evicted = false;
}

/* Fill m from an open ELF image (a file of pid's, or with pid 0 a vdso
 * image, whose table is its own) and give it a table. */
static void read_image(struct wc_mod_cache *c, struct wc_mod *m,
		       struct wc_elf *e, pid_t pid, const char *path)
{
	struct wc_elf_info info;
	struct debug_ctx d = {.c = c, .pid = pid, .path = path, .info = &info};
	struct stat st;

	if (e->fd >= 0 && fstat(e->fd, &st) == 0) {
		d.dev = st.st_dev;
		d.ino = st.st_ino;
		d.owner = st.st_uid;
		d.shared = true;
	}
	wc_elf_read_info(e, &info);
	memcpy(m->segs, info.segs, sizeof(m->segs));
	m->nsegs = info.nsegs;
	attach(c, m, table_for(c, &d, e));
}

static struct wc_mod *mod_new(struct wc_mod_cache *c, uint64_t dev,
			      uint64_t ino, const char *name, size_t namelen)
{
	struct wc_mod *m;
	size_t b;

	m = calloc(1, sizeof(*m) + namelen + 1);
	if (!m)
		return NULL;
	m->dev = dev;
	m->ino = ino;
	m->serial = ++c->serials;
	memcpy(m->name, name, namelen);
	m->last_cycle = c->cycle;
	b = bucket_of(c, dev, ino);
	m->hnext = c->buckets[b];
	c->buckets[b] = m;
	c->nmods++;
	c->bytes += mod_bytes(m);
	maybe_grow(c);
	return m;
}

/* Open the file behind mapping m of pid: map_files first (deleted files,
 * other mount namespaces), else the path in its root if it is still the
 * same file. */
static int open_mapped(struct wc_mod_cache *c, pid_t pid,
		       const struct wc_proc_map *m)
{
	struct stat st;
	int fd;

	fd = wc_proc_open_map_file(c->o.proc_root, pid, m->start, m->end, &st);
	if (fd >= 0)
		return fd;
	if (errno == EINVAL) {
		c->st.refused++;
		return -1;
	}
	if (m->path[0] != '/')
		return -1;
	fd = wc_proc_open_in_root(c->o.proc_root, pid, m->path, 0, &st);
	if (fd >= 0 && (st.st_ino != m->ino ||
			major(st.st_dev) != m->dev_major ||
			minor(st.st_dev) != m->dev_minor)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 && errno == EINVAL)
		c->st.refused++;
	return fd;
}

static void read_file(struct wc_mod_cache *c, struct wc_mod *mod, pid_t pid,
		      const struct wc_proc_map *m)
{
	struct wc_elf e;
	int fd;

	c->st.misses++;
	fd = open_mapped(c, pid, m);
	if (fd < 0 || wc_elf_open_fd(&e, fd))
		return;
	read_image(c, mod, &e, pid, m->path);
	wc_elf_close(&e);
}

/* A new mapping of a known module: its table is in use again. */
static void hit(struct wc_mod_cache *c, struct wc_mod *mod)
{
	c->st.hits++;
	if (mod->table)
		mod->table->last_used = ++c->tick;
}

static const char *base_name(const char *path, size_t len, size_t *outlen)
{
	const char *b = path + len;

	while (b > path && b[-1] != '/')
		b--;
	*outlen = (size_t)(path + len - b);
	return b;
}

struct wc_mod *wc_mod_file(struct wc_mod_cache *c, pid_t pid,
			   const struct wc_proc_map *m)
{
	uint64_t dev = (uint64_t)m->dev_major << 32 | m->dev_minor;
	uint64_t size = 0, mtime = 0;
	struct wc_mod *mod;
	const char *name;
	size_t namelen;
	struct stat st;

	if (wc_proc_stat_map_file(c->o.proc_root, pid, m->start, m->end, &st) ==
	    0) {
		size = (uint64_t)st.st_size;
		mtime = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL +
			(uint64_t)st.st_mtim.tv_nsec;
	}
	mod = find(c, dev, m->ino);
	/* Same inode number, other contents: a new file. */
	if (mod && size && mod->size &&
	    (mod->size != size || mod->mtime_ns != mtime)) {
		mod->stale = true;
		drop_if_unused(c, mod);
		mod = NULL;
	}
	if (mod) {
		mod->refs++;
		mod->last_cycle = c->cycle;
		if (mod->evicted)
			wc_mod_reload(c, mod, pid, m);
		else
			hit(c, mod);
		return mod;
	}
	name = base_name(m->path, m->pathlen, &namelen);
	mod = mod_new(c, dev, m->ino, name, namelen);
	if (!mod)
		return NULL;
	mod->size = size;
	mod->mtime_ns = mtime;
	mod->refs = 1;
	read_file(c, mod, pid, m);
	return mod;
}

void wc_mod_reload(struct wc_mod_cache *c, struct wc_mod *mod, pid_t pid,
		   const struct wc_proc_map *m)
{
	if (mod->evicted && !mod->table && mod->dev != VDSO_DEV)
		read_file(c, mod, pid, m);
}

/* Our own vdso, the stand-in when a process's memory cannot be read (it
 * exited, or a fake proc root): same kernel, same image. */
static void own_vdso(struct wc_mod_cache *c)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	struct wc_proc_map pm;
	struct wc_lines r;
	size_t len;
	char *line;
	int fd;

	c->own_vdso_tried = true;
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (!base || fd < 0 || wc_lines_open(&r, fd, 8192, UINT64_MAX))
		return;
	while ((line = wc_lines_next(&r, &len))) {
		if (wc_proc_parse_maps_line(line, len, &pm) ||
		    pm.start != base || strcmp(pm.path, "[vdso]") ||
		    pm.end - pm.start > WC_MOD_VDSO_MAX)
			continue;
		c->own_vdso = malloc(pm.end - pm.start);
		if (c->own_vdso) {
			memcpy(c->own_vdso, (const void *)base,
			       pm.end - pm.start);
			c->own_vdso_len = pm.end - pm.start;
		}
		break;
	}
	wc_lines_close(&r);
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--)
		h = (h ^ *p++) * 0x100000001b3ULL;
	return h;
}

struct wc_mod *wc_mod_vdso(struct wc_mod_cache *c, pid_t pid, uint64_t start,
			   uint64_t end)
{
	size_t len = (size_t)(end - start);
	struct wc_mod *mod = NULL;
	struct wc_elf e;
	uint64_t key;
	bool fresh;
	char *img;

	if (end - start > WC_MOD_VDSO_MAX)
		return NULL;
	img = malloc(len);
	if (!img)
		return NULL;
	if (wc_proc_read_mem(c->o.proc_root, pid, start, img, len)) {
		if (!c->own_vdso_tried)
			own_vdso(c);
		if (c->own_vdso_len != len)
			goto out;
		memcpy(img, c->own_vdso, len);
	}
	key = fnv1a((unsigned char *)img, len);
	mod = find(c, VDSO_DEV, key);
	fresh = !mod;
	if (fresh)
		mod = mod_new(c, VDSO_DEV, key, "[vdso]", 6);
	if (!mod)
		goto out;
	mod->refs++;
	mod->last_cycle = c->cycle;
	if (!fresh && !mod->evicted) {
		hit(c, mod);
		goto out;
	}
	c->st.misses++;
	if (!mod->table && wc_elf_open_mem(&e, img, len) == 0) {
		read_image(c, mod, &e, 0, NULL);
		wc_elf_close(&e);
	}
out:
	free(img);
	return mod;
}

struct wc_mod *wc_mod_ref(struct wc_mod *mod)
{
	mod->refs++;
	return mod;
}

void wc_mod_unref(struct wc_mod_cache *c, struct wc_mod *mod)
{
	if (!mod || !mod->refs)
		return;
	mod->refs--;
	mod->last_cycle = c->cycle;
	drop_if_unused(c, mod);
}

bool wc_mod_evicted(const struct wc_mod *mod)
{
	return mod->evicted;
}

const char *wc_mod_lookup(struct wc_mod_cache *c, struct wc_mod *mod,
			  uint64_t off)
{
	const struct wc_symtab_ent *e;
	uint64_t vaddr;

	if (!mod->table || !wc_elf_vaddr(mod->segs, mod->nsegs, off, &vaddr))
		return NULL;
	mod->table->last_used = ++c->tick;
	e = wc_symtab_find(&mod->table->syms, vaddr);
	return e ? wc_symtab_name(&mod->table->syms, e) : NULL;
}

const char *wc_mod_name(const struct wc_mod *mod)
{
	return mod->name;
}

uint32_t wc_mod_serial(const struct wc_mod *mod)
{
	return mod->serial;
}

void wc_mod_cycle(struct wc_mod_cache *c, size_t other_bytes)
{
	size_t i;

	c->cycle++;
	c->other_bytes = other_bytes;
	for (i = 0; i < c->nbuckets; i++) {
		struct wc_mod *m = c->buckets[i], *next;

		for (; m; m = next) {
			next = m->hnext;
			if (!m->refs &&
			    m->last_cycle + WC_MOD_IDLE_CYCLES < c->cycle)
				unhash_free(c, m);
		}
	}
	trim(c, other_bytes, NULL);
}

void wc_mod_set_other_bytes(struct wc_mod_cache *c, size_t other_bytes)
{
	c->other_bytes = other_bytes;
}

size_t wc_mod_bytes(const struct wc_mod_cache *c)
{
	return c->bytes;
}

void wc_mod_stats(const struct wc_mod_cache *c, struct wc_mod_stats *out)
{
	*out = c->st;
	out->tables = c->ntables;
	out->bytes = c->bytes;
}
