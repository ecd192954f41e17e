/* wc_sym_mod.c - see wc_sym_mod.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sym/wc_sym_mod.h"
#include "util/wc_hash.h"

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
	uint64_t size, mtime_ns; /* when map_files could be stat'ed */
	bool known;
	struct wc_elf_seg segs[WC_ELF_MAX_SEGS];
	unsigned nsegs;
	struct wc_mod_table *table;
	bool evicted;
	bool stale; /* replaced by a newer file of the same inode */
	unsigned refs;
	uint32_t serial; /* never reused while the cache lives */
	uint64_t last_cycle;
	char *image; /* a vdso's: what tells it from another, not its hash */
	size_t image_len;
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
	uint64_t lost; /* tables evicted, or not read for want of the helper */
	uint32_t serials; /* the last module's serial */
	struct wc_mod_stats st;
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
	return sizeof(*m) + strlen(m->name) + 1 + m->image_len;
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
	free(m->image);
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

/* A module is one file under one name: the same file bind-mounted under
 * another name is named by that name where it has no symbol. */
static struct wc_mod *find(struct wc_mod_cache *c, uint64_t dev, uint64_t ino,
			   const char *name, size_t namelen)
{
	struct wc_mod *m = c->buckets[bucket_of(c, dev, ino)];

	for (; m; m = m->hnext)
		if (m->dev == dev && m->ino == ino && !m->stale &&
		    !strncmp(m->name, name, namelen) && !m->name[namelen])
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
	c->lost++;
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

static struct wc_mod_table *
table_new(struct wc_mod_cache *c, const struct wc_fetch_image *img, bool shared)
{
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
	wc_symtab_init(&t->syms, c->o.max_bytes / 2, WC_FETCH_UNSIZED_MAX);
	if (shared) {
		memcpy(t->build_id, img->build_id, img->build_id_len);
		t->build_id_len = img->build_id_len;
	}
	t->owner = img->owner;
	t->index = c->ntables;
	c->tables[c->ntables++] = t;
	return t;
}

/* Count a table just filled, and make room for it; NULL (freed) if it
 * has no symbols. */
static struct wc_mod_table *table_keep(struct wc_mod_cache *c,
				       struct wc_mod_table *t)
{
	if (t->syms.n == 0) {
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

static void set_segs(struct wc_mod *m, const struct wc_fetch_image *img)
{
	memcpy(m->segs, img->segs, sizeof(m->segs));
	m->nsegs = img->nsegs;
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

/* Not read now (the helper stopped, the caller's budget spent): read it
 * again when next needed, as if its table had been evicted. */
static void unread(struct wc_mod_cache *c, struct wc_mod *mod)
{
	mod->evicted = true;
	c->lost++;
}

/* Not read for now: the helper did not answer, or another file was at
 * the mapping's place by then (a process can put one there to have its
 * names kept for the file it replaced). */
static bool again(int err)
{
	return err == EAGAIN || err == ESTALE;
}

/* Read the file behind mapping m of pid: its image, and its symbols
 * unless a file of the same owner with its build-id was read before. */
static void read_file(struct wc_mod_cache *c, struct wc_mod *mod, pid_t pid,
		      const struct wc_proc_map *m)
{
	/* what the module is keyed by: the file read must be that one */
	const struct wc_fetch_file f = {.size = mod->size,
					.mtime_ns = mod->mtime_ns,
					.dev = mod->dev,
					.known = mod->known};
	struct wc_fetch_image img;
	struct wc_mod_table *t;

	c->st.misses++;
	if (wc_sym_src_image(c->o.src, pid, m, &f, &img)) {
		if (again(errno))
			unread(c, mod);
		return;
	}
	set_segs(mod, &img);
	t = table_by_build_id(c, img.build_id, img.build_id_len, img.owner);
	if (!t) {
		t = table_new(c, &img, true);
		if (t && wc_sym_src_symbols(c->o.src, pid, m, &f, &t->syms) &&
		    again(errno)) {
			table_free(c, t);
			unread(c, mod);
			return;
		}
		if (t)
			t = table_keep(c, t);
	}
	attach(c, mod, t);
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

/* Read an evicted module's table again through pid's mapping m. */
static void reload(struct wc_mod_cache *c, struct wc_mod *mod, pid_t pid,
		   const struct wc_proc_map *m)
{
	if (mod->evicted && !mod->table && mod->dev != VDSO_DEV)
		read_file(c, mod, pid, m);
}

struct wc_mod *wc_mod_file(struct wc_mod_cache *c, pid_t pid,
			   const struct wc_proc_map *m,
			   const struct wc_fetch_file *f)
{
	uint64_t dev = f->known ? f->dev
				: (uint64_t)m->dev_major << 32 | m->dev_minor;
	size_t namelen;
	const char *name = base_name(m->path, m->pathlen, &namelen);
	struct wc_mod *mod = find(c, dev, m->ino, name, namelen);

	/* Same inode number, other contents: a new file. */
	if (mod && f->known && mod->known &&
	    (mod->size != f->size || mod->mtime_ns != f->mtime_ns)) {
		mod->stale = true;
		drop_if_unused(c, mod);
		mod = NULL;
	}
	if (mod) {
		mod->refs++;
		mod->last_cycle = c->cycle;
		if (mod->evicted)
			reload(c, mod, pid, m);
		else
			hit(c, mod);
		return mod;
	}
	mod = mod_new(c, dev, m->ino, name, namelen);
	if (!mod)
		return NULL;
	mod->size = f->size;
	mod->mtime_ns = f->mtime_ns;
	mod->known = f->known;
	mod->refs = 1;
	read_file(c, mod, pid, m);
	return mod;
}

/* The vdso module of exactly this image: a process may write to its own
 * vdso, and an image made to hash alike must not lend its names. */
static struct wc_mod *find_image(struct wc_mod_cache *c, uint64_t key,
				 const char *image, size_t len)
{
	struct wc_mod *m = c->buckets[bucket_of(c, VDSO_DEV, key)];

	for (; m; m = m->hnext)
		if (m->dev == VDSO_DEV && m->ino == key &&
		    m->image_len == len && !memcmp(m->image, image, len))
			return m;
	return NULL;
}

/* A new vdso module, owning image. */
static struct wc_mod *vdso_new(struct wc_mod_cache *c, uint64_t key,
			       char **image, size_t len)
{
	struct wc_mod *mod = mod_new(c, VDSO_DEV, key, "[vdso]", 6);

	if (mod) {
		mod->image = *image;
		mod->image_len = len;
		c->bytes += len;
		*image = NULL;
	}
	return mod;
}

struct wc_mod *wc_mod_vdso(struct wc_mod_cache *c, pid_t pid, uint64_t start,
			   uint64_t end)
{
	struct wc_fetch_image img = {0};
	size_t len = (size_t)(end - start);
	struct wc_mod_table *t;
	struct wc_mod *mod;
	char *image = NULL;
	uint64_t key;
	bool fresh;

	if (end - start > WC_MOD_VDSO_MAX)
		return NULL;
	/* The image comes with its symbols, which a known image does not
	 * need: a vdso has a dozen. */
	t = table_new(c, &img, false);
	if (!t)
		return NULL;
	if (wc_sym_src_vdso(c->o.src, pid, start, end, &image, &img,
			    &t->syms)) {
		table_free(c, t);
		return NULL;
	}
	key = wc_fnv1a(WC_FNV_SEED, image, len);
	mod = find_image(c, key, image, len);
	fresh = !mod;
	if (fresh)
		mod = vdso_new(c, key, &image, len);
	free(image);
	if (!mod || (!fresh && !mod->evicted)) {
		table_free(c, t);
		if (mod) {
			mod->refs++;
			mod->last_cycle = c->cycle;
			hit(c, mod);
		}
		return mod;
	}
	mod->refs++;
	mod->last_cycle = c->cycle;
	c->st.misses++;
	set_segs(mod, &img);
	attach(c, mod, table_keep(c, t));
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

uint64_t wc_mod_evictions(const struct wc_mod_cache *c)
{
	return c->lost;
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

void wc_mod_stats(const struct wc_mod_cache *c, struct wc_mod_stats *out)
{
	*out = c->st;
	out->tables = c->ntables;
	out->bytes = c->bytes;
}
