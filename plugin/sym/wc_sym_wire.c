/* wc_sym_wire.c - see wc_sym_wire.h. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "sym/wc_sym_wire.h"

/* --- the buffer ----------------------------------------------------------- */

void wc_wbuf_reset(struct wc_wbuf *b, size_t head)
{
	static const char zero[WC_WIRE_REPLY_HEAD];

	b->len = 0;
	b->head = head;
	b->failed = false;
	wc_wbuf_bytes(b, zero, head);
}

void wc_wbuf_free(struct wc_wbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void wc_wbuf_bytes(struct wc_wbuf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (b->failed || n > UINT32_MAX - b->len) {
		b->failed = true;
		return;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *np;

		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

void wc_wbuf_u32(struct wc_wbuf *b, uint32_t v)
{
	wc_wbuf_bytes(b, &v, sizeof(v));
}

void wc_wbuf_u64(struct wc_wbuf *b, uint64_t v)
{
	wc_wbuf_bytes(b, &v, sizeof(v));
}

void wc_wbuf_align8(struct wc_wbuf *b)
{
	static const char zero[8];

	wc_wbuf_bytes(b, zero, (8 - (b->len - b->head) % 8) % 8);
}

void wc_wbuf_seal(struct wc_wbuf *b)
{
	uint32_t len = (uint32_t)(b->len - b->head);

	if (!b->failed)
		memcpy(b->p, &len, sizeof(len));
}

void wc_rbuf_init(struct wc_rbuf *r, const void *p, size_t len)
{
	r->p = p;
	r->len = len;
	r->at = 0;
	r->failed = false;
}

const void *wc_rbuf_bytes(struct wc_rbuf *r, size_t n)
{
	const void *p;

	if (r->failed || n > r->len - r->at) {
		r->failed = true;
		return NULL;
	}
	p = r->p + r->at;
	r->at += n;
	return p;
}

uint32_t wc_rbuf_u32(struct wc_rbuf *r)
{
	const void *p = wc_rbuf_bytes(r, sizeof(uint32_t));
	uint32_t v = 0;

	if (p)
		memcpy(&v, p, sizeof(v));
	return v;
}

uint64_t wc_rbuf_u64(struct wc_rbuf *r)
{
	const void *p = wc_rbuf_bytes(r, sizeof(uint64_t));
	uint64_t v = 0;

	if (p)
		memcpy(&v, p, sizeof(v));
	return v;
}

void wc_rbuf_align8(struct wc_rbuf *r)
{
	wc_rbuf_bytes(r, (8 - r->at % 8) % 8);
}

/* --- the parts ---------------------------------------------------------------- */

void wc_wire_put_map(struct wc_wbuf *b, const struct wc_proc_map *m)
{
	wc_wbuf_u64(b, m->start);
	wc_wbuf_u64(b, m->end);
	wc_wbuf_u64(b, m->pgoff);
	wc_wbuf_u64(b, m->ino);
	wc_wbuf_u32(b, m->dev_major);
	wc_wbuf_u32(b, m->dev_minor);
	wc_wbuf_u32(b, (uint32_t)m->exec | (uint32_t)m->deleted << 1);
	wc_wbuf_u32(b, (uint32_t)m->pathlen);
	wc_wbuf_bytes(b, m->path, m->pathlen);
	wc_wbuf_bytes(b, "", 1);
}

bool wc_wire_get_map(struct wc_rbuf *r, struct wc_proc_map *m)
{
	uint32_t flags;
	const char *path;

	m->start = wc_rbuf_u64(r);
	m->end = wc_rbuf_u64(r);
	m->pgoff = wc_rbuf_u64(r);
	m->ino = wc_rbuf_u64(r);
	m->dev_major = wc_rbuf_u32(r);
	m->dev_minor = wc_rbuf_u32(r);
	flags = wc_rbuf_u32(r);
	m->exec = flags & 1;
	m->deleted = flags & 2;
	m->pathlen = wc_rbuf_u32(r);
	if (r->failed || m->pathlen >= PATH_MAX) {
		r->failed = true;
		return false;
	}
	path = wc_rbuf_bytes(r, m->pathlen + 1);
	/* the text must be what it says: one string, NUL at its end */
	if (!path || path[m->pathlen] != '\0' ||
	    memchr(path, '\0', m->pathlen)) {
		r->failed = true;
		return false;
	}
	m->path = path;
	return m->end > m->start;
}

void wc_wire_put_file(struct wc_wbuf *b, const struct wc_fetch_file *f)
{
	wc_wbuf_u64(b, f->size);
	wc_wbuf_u64(b, f->mtime_ns);
	wc_wbuf_u64(b, f->dev);
	wc_wbuf_u32(b, f->known);
}

void wc_wire_get_file(struct wc_rbuf *r, struct wc_fetch_file *f)
{
	f->size = wc_rbuf_u64(r);
	f->mtime_ns = wc_rbuf_u64(r);
	f->dev = wc_rbuf_u64(r);
	f->known = wc_rbuf_u32(r) != 0;
}

void wc_wire_put_maps(struct wc_wbuf *b, const struct wc_fetch_maps *m)
{
	size_t i;

	wc_wbuf_u32(b, (uint32_t)m->nspid);
	wc_wbuf_u32(b, (uint32_t)m->euid);
	wc_wbuf_u64(b, m->sig);
	wc_wbuf_u32(b, m->cut);
	wc_wbuf_u32(b, (uint32_t)m->n);
	for (i = 0; i < m->n; i++) {
		wc_wire_put_map(b, &m->maps[i]);
		wc_wire_put_file(b, &m->files[i]);
	}
}

/* The paths of the decoded maps, copied out of the reader's buffer into
 * one block of out's. */
static bool own_paths(struct wc_fetch_maps *out)
{
	size_t i, total = 0, at = 0;

	for (i = 0; i < out->n; i++)
		total += out->maps[i].pathlen + 1;
	out->paths = malloc(total ? total : 1);
	if (!out->paths)
		return false;
	for (i = 0; i < out->n; i++) {
		struct wc_proc_map *m = &out->maps[i];

		memcpy(out->paths + at, m->path, m->pathlen + 1);
		m->path = out->paths + at;
		at += m->pathlen + 1;
	}
	out->paths_len = total;
	return true;
}

bool wc_wire_get_maps(struct wc_rbuf *r, struct wc_fetch_maps *out)
{
	uint32_t n;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->nspid = (pid_t)wc_rbuf_u32(r);
	out->euid = (uid_t)wc_rbuf_u32(r);
	out->sig = wc_rbuf_u64(r);
	out->cut = wc_rbuf_u32(r) != 0;
	n = wc_rbuf_u32(r);
	if (r->failed || n > WC_FETCH_MAX_MAPS)
		return false;
	out->maps = calloc(n ? n : 1, sizeof(*out->maps));
	out->files = calloc(n ? n : 1, sizeof(*out->files));
	if (!out->maps || !out->files)
		goto fail;
	for (i = 0; i < n; i++) {
		if (!wc_wire_get_map(r, &out->maps[i]))
			goto fail;
		wc_wire_get_file(r, &out->files[i]);
		/* in address order, as the symbolizer searches them */
		if (i && out->maps[i].start < out->maps[i - 1].end)
			goto fail;
	}
	out->n = n;
	if (!r->failed && own_paths(out))
		return true;
fail:
	wc_fetch_maps_free(out);
	r->failed = true;
	return false;
}

void wc_wire_put_image(struct wc_wbuf *b, const struct wc_fetch_image *img)
{
	unsigned i;

	wc_wbuf_u32(b, img->nsegs);
	for (i = 0; i < img->nsegs; i++) {
		wc_wbuf_u64(b, img->segs[i].off);
		wc_wbuf_u64(b, img->segs[i].vaddr);
		wc_wbuf_u64(b, img->segs[i].filesz);
	}
	wc_wbuf_u32(b, img->build_id_len);
	wc_wbuf_bytes(b, img->build_id, img->build_id_len);
	wc_wbuf_u32(b, (uint32_t)img->owner);
}

bool wc_wire_get_image(struct wc_rbuf *r, struct wc_fetch_image *img)
{
	const void *id;
	unsigned i;

	memset(img, 0, sizeof(*img));
	img->nsegs = wc_rbuf_u32(r);
	if (img->nsegs > WC_ELF_MAX_SEGS)
		r->failed = true;
	for (i = 0; !r->failed && i < img->nsegs; i++) {
		img->segs[i].off = wc_rbuf_u64(r);
		img->segs[i].vaddr = wc_rbuf_u64(r);
		img->segs[i].filesz = wc_rbuf_u64(r);
	}
	img->build_id_len = wc_rbuf_u32(r);
	if (img->build_id_len > WC_ELF_BUILD_ID_MAX)
		r->failed = true;
	id = wc_rbuf_bytes(r, img->build_id_len);
	if (id)
		memcpy(img->build_id, id, img->build_id_len);
	img->owner = (uid_t)wc_rbuf_u32(r);
	return !r->failed;
}

void wc_wire_put_symtab(struct wc_wbuf *b, const struct wc_symtab *t)
{
	wc_wbuf_u64(b, t->n);
	wc_wbuf_u64(b, t->strs_len);
	wc_wbuf_align8(b);
	wc_wbuf_bytes(b, t->ents, t->n * sizeof(*t->ents));
	wc_wbuf_bytes(b, t->strs, t->strs_len);
}

bool wc_wire_get_symtab(struct wc_rbuf *r, struct wc_symtab *t)
{
	uint64_t n = wc_rbuf_u64(r), strs_len = wc_rbuf_u64(r);
	const void *ents, *strs;

	wc_rbuf_align8(r);
	if (r->failed || n > (r->len - r->at) / sizeof(*t->ents)) {
		r->failed = true;
		return false;
	}
	ents = wc_rbuf_bytes(r, (size_t)n * sizeof(*t->ents));
	strs = wc_rbuf_bytes(r, (size_t)strs_len);
	if (!ents || !strs)
		return false;
	if (wc_symtab_adopt(t, ents, (size_t)n, strs, (size_t)strs_len)) {
		/* over the budget is not a broken message */
		r->failed = errno != E2BIG;
		return false;
	}
	return true;
}

void wc_wire_put_cfi_limits(struct wc_wbuf *b, const struct wc_cfi_limits *l)
{
	wc_wbuf_u64(b, l->section_max);
	wc_wbuf_u64(b, l->rows_max);
	wc_wbuf_u64(b, l->fde_rows_max);
	wc_wbuf_u64(b, l->cpu_ns);
}

static uint64_t at_most(uint64_t v, uint64_t max)
{
	return v < max ? v : max;
}

bool wc_wire_get_cfi_limits(struct wc_rbuf *r, struct wc_cfi_limits *l)
{
	l->section_max = (size_t)at_most(wc_rbuf_u64(r), WC_CFI_SECTION_MAX);
	l->rows_max = (size_t)at_most(wc_rbuf_u64(r), WC_CFI_ROWS_MAX);
	l->fde_rows_max =
		(unsigned)at_most(wc_rbuf_u64(r), WC_CFI_FDE_ROWS_MAX);
	l->cpu_ns = at_most(wc_rbuf_u64(r), WC_CFI_CPU_NS_MAX);
	return !r->failed;
}

void wc_wire_put_cfi(struct wc_wbuf *b, const struct wc_cfi_table *t)
{
	wc_wbuf_u64(b, t->stats.fdes);
	wc_wbuf_u64(b, t->stats.fdes_skipped);
	wc_wbuf_u64(b, t->stats.unsupported);
	wc_wbuf_u64(b, t->n);
	wc_wbuf_bytes(b, t->rows, t->n * sizeof(*t->rows));
}

bool wc_wire_get_cfi(struct wc_rbuf *r, size_t rows_max, struct wc_cfi_table *t)
{
	const void *rows;
	uint64_t n;

	memset(t, 0, sizeof(*t));
	t->stats.fdes = (size_t)wc_rbuf_u64(r);
	t->stats.fdes_skipped = (size_t)wc_rbuf_u64(r);
	t->stats.unsupported = (size_t)wc_rbuf_u64(r);
	n = wc_rbuf_u64(r);
	if (r->failed || n == 0 || n > rows_max ||
	    n > (r->len - r->at) / sizeof(*t->rows)) {
		r->failed = true;
		return false;
	}
	rows = wc_rbuf_bytes(r, (size_t)n * sizeof(*t->rows));
	t->rows = rows ? malloc((size_t)n * sizeof(*t->rows)) : NULL;
	if (!t->rows) {
		r->failed = rows == NULL;
		return false;
	}
	memcpy(t->rows, rows, (size_t)n * sizeof(*t->rows));
	t->n = t->cap = (size_t)n;
	if (!wc_cfi_valid(t->rows, t->n)) {
		free(t->rows);
		memset(t, 0, sizeof(*t));
		r->failed = true;
		return false;
	}
	return true;
}

void wc_wire_put_file_id(struct wc_wbuf *b, const struct wc_file_id *id)
{
	wc_wbuf_u64(b, id->dev);
	wc_wbuf_u64(b, id->ino);
	wc_wbuf_u64(b, id->size);
	wc_wbuf_u64(b, (uint64_t)id->mtime_sec);
	wc_wbuf_u64(b, (uint64_t)id->mtime_nsec);
}

bool wc_wire_get_file_id(struct wc_rbuf *r, struct wc_file_id *id)
{
	id->dev = wc_rbuf_u64(r);
	id->ino = wc_rbuf_u64(r);
	id->size = wc_rbuf_u64(r);
	id->mtime_sec = (int64_t)wc_rbuf_u64(r);
	id->mtime_nsec = (int64_t)wc_rbuf_u64(r);
	return !r->failed;
}
