/* wc_sym_kallsyms.c - see wc_sym_kallsyms.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/wc_log.h"
#include "sym/wc_sym_kallsyms.h"
#include "sym/wc_sym_proc.h"
#include "util/wc_hash.h"

/* KSYM_NAME_LEN is 512; with a module name, a line is well under this. */
#define LINE_MAX_BYTES 1024

struct kline {
	uint64_t addr;
	char type;
	const char *name;
	size_t namelen;
	const char *mod; /* NULL for the core kernel */
	size_t modlen;
};

/* "ffffffff81000000 T name" or "ffffffffc0000000 t name\t[module]". */
static bool parse_line(const char *line, size_t len, struct kline *k)
{
	const char *p = line, *end = line + len, *tab;
	unsigned digits = 0;

	memset(k, 0, sizeof(*k));
	for (; p < end && digits <= 16; p++, digits++) {
		char c = *p;
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			break;
		k->addr = k->addr << 4 | d;
	}
	if (digits == 0 || digits > 16 || end - p < 4 || p[0] != ' ' ||
	    p[2] != ' ')
		return false;
	k->type = p[1];
	k->name = p + 3;
	tab = memchr(k->name, '\t', (size_t)(end - k->name));
	k->namelen = (size_t)((tab ? tab : end) - k->name);
	if (tab && end - tab >= 3 && tab[1] == '[' && end[-1] == ']') {
		k->mod = tab + 2;
		k->modlen = (size_t)(end - k->mod - 1);
	}
	return k->namelen > 0;
}

static bool is_text(char type)
{
	return type == 't' || type == 'T' || type == 'w' || type == 'W';
}

/* Prefer global names over weak over local among aliases. */
static uint32_t rank_of(char type)
{
	return type == 'T' ? 2 : (type == 'W' || type == 'w') ? 1 : 0;
}

static int add_line(struct wc_symtab *t, const struct kline *k)
{
	char name[LINE_MAX_BYTES + 4];
	int n;

	if (!k->mod)
		return wc_symtab_add(t, k->addr, 0, k->name, k->namelen,
				     rank_of(k->type));
	n = snprintf(name, sizeof(name), "%.*s [%.*s]", (int)k->namelen,
		     k->name, (int)k->modlen, k->mod);
	if (n < 0)
		return -1;
	return wc_symtab_add(t, k->addr, 0, name, sizeof(name),
			     rank_of(k->type));
}

static int read_all(struct wc_symtab *t, struct wc_lines *r, size_t *ntext,
		    size_t *nzero, char *err, size_t errlen)
{
	struct kline k;
	size_t len;
	char *line;

	while ((line = wc_lines_next(r, &len))) {
		if (!parse_line(line, len, &k) || !is_text(k.type))
			continue;
		(*ntext)++;
		if (k.addr == 0) {
			(*nzero)++;
			continue;
		}
		if (add_line(t, &k))
			return wc_err(err, errlen,
				      "kallsyms: over %zu bytes after %zu "
				      "symbols: %s",
				      t->max_bytes, *ntext, strerror(errno));
	}
	return 0;
}

int wc_kallsyms_load(struct wc_symtab *t, const char *path, size_t max_bytes,
		     char *err, size_t errlen)
{
	size_t ntext = 0, nzero = 0;
	struct wc_lines r;
	int fd, rc;

	wc_symtab_init(t, max_bytes, WC_KALLSYMS_UNSIZED_MAX);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return wc_err(err, errlen, "kallsyms: %s: %s", path,
			      strerror(errno));
	if (wc_lines_open(&r, fd, 64 * 1024, UINT64_MAX))
		return wc_err(err, errlen, "kallsyms: out of memory");
	rc = read_all(t, &r, &ntext, &nzero, err, errlen);
	wc_lines_close(&r);
	if (rc == 0 && ntext == 0)
		rc = wc_err(err, errlen, "kallsyms: %s has no text symbols",
			    path);
	else if (rc == 0 && nzero == ntext)
		rc = wc_err(err, errlen,
			    "kallsyms: addresses hidden (all %zu read as zero):"
			    " kernel.kptr_restrict is set, or not root; kernel"
			    " frames will be [unknown]",
			    ntext);
	if (rc == 0 && wc_symtab_finish(t))
		rc = wc_err(err, errlen, "kallsyms: out of memory");
	if (rc)
		wc_symtab_free(t);
	return rc;
}

uint64_t wc_kallsyms_modules_sig(const char *path)
{
	uint64_t h = WC_FNV_SEED;
	struct wc_lines r;
	size_t len;
	char *line;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || wc_lines_open(&r, fd, 4096, UINT64_MAX))
		return 0;
	/* "name size refs deps state address": hash name and address. */
	while ((line = wc_lines_next(&r, &len))) {
		const char *addr = strrchr(line, ' ');
		size_t namelen = strcspn(line, " ");

		h = wc_fnv1a(h, line, namelen);
		if (addr)
			h = wc_fnv1a(h, addr, strlen(addr));
	}
	wc_lines_close(&r);
	return h ? h : 1;
}
