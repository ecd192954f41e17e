/*
 * wc_merge.c - folded files summed into one bounded table of stacks.
 */
#include "cli/wc_merge.h"
#include "format/wc_format.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define OTHER_FRAME ";" WC_FOLD_OTHER
#define READ_CHUNK (64u << 10)

/* Bytes of stack text at most: offsets are 32 bits. */
#define TEXT_MAX (1u << 30)

int wc_merge_init(struct wc_merge *t, size_t max, const char *group)
{
	memset(t, 0, sizeof(*t));
	if (max < 1 || max > (1u << 28))
		return -1;
	t->max = max;
	t->limit = max + max / 2 + 768;
	t->group = group;
	t->budget.max = TEXT_MAX;
	if (wc_strtab_init(&t->text, &t->budget, 4096) ||
	    wc_idmap_init(&t->index, (uint32_t)t->limit)) {
		wc_merge_free(t);
		return -1;
	}
	return 0;
}

void wc_merge_free(struct wc_merge *t)
{
	wc_strtab_free(&t->text);
	wc_idmap_free(&t->index);
	free(t->entries);
	t->entries = NULL;
	t->n = t->cap = 0;
}

const char *wc_merge_stack(const struct wc_merge *t,
			   const struct wc_merge_entry *e)
{
	return wc_strtab_str(&t->text, e->stack);
}

/* The entry of a stack; a new one if create and there is room. */
static struct wc_merge_entry *find(struct wc_merge *t, const char *stack,
				   size_t len, bool create)
{
	struct wc_merge_entry *e;
	uint32_t off, i;
	size_t ncap;

	if (wc_strtab_intern(&t->text, stack, len, false, &off) == 0)
		return wc_idmap_get(&t->index, (uint64_t)off + 1, &i)
			       ? &t->entries[i]
			       : NULL;
	if (!create || t->n >= t->limit)
		return NULL;
	if (t->n == t->cap) {
		ncap = t->cap ? 2 * t->cap : 1024;
		ncap = ncap < t->limit ? ncap : t->limit;
		e = realloc(t->entries, ncap * sizeof(*e));
		if (!e)
			return NULL;
		t->entries = e;
		t->cap = ncap;
	}
	if (wc_strtab_intern(&t->text, stack, len, true, &off) != 1 ||
	    wc_idmap_put(&t->index, (uint64_t)off + 1, (uint32_t)t->n))
		return NULL;
	e = &t->entries[t->n++];
	e->stack = off;
	e->value = 0;
	return e;
}

/* The group's remainder, so its total stays whole: made while there is
 * room for one per group beyond max. */
static struct wc_merge_entry *other(struct wc_merge *t, const char *stack,
				    size_t len)
{
	const char *semi = memchr(stack, ';', len);
	size_t g = semi ? (size_t)(semi - stack) : len;
	struct wc_merge_entry *e;
	char *text = malloc(g + sizeof(OTHER_FRAME));

	if (!text)
		return NULL;
	memcpy(text, stack, g);
	memcpy(text + g, OTHER_FRAME, sizeof(OTHER_FRAME));
	e = find(t, text, g + sizeof(OTHER_FRAME) - 1, true);
	free(text);
	return e;
}

static void add(struct wc_merge *t, const char *stack, size_t len,
		uint64_t value)
{
	struct wc_merge_entry *e = find(t, stack, len, t->n < t->max);

	if (!e) {
		t->dropped++;
		e = other(t, stack, len);
		if (!e)
			return;
	}
	if (e->value + value < e->value) {
		t->bad++;
		return;
	}
	e->value += value;
}

static bool in_group(const struct wc_merge *t, const char *stack, size_t len)
{
	size_t g;

	if (!t->group)
		return true;
	g = strlen(t->group);
	return len >= g && memcmp(stack, t->group, g) == 0 &&
	       (len == g || stack[g] == ';');
}

void wc_merge_line(struct wc_merge *t, const char *line, size_t len)
{
	struct wc_fold_line l;
	int rc = wc_fold_parse(line, len, &l);

	if (rc == 0)
		return;
	t->lines++;
	if (rc < 0) {
		t->bad++;
		return;
	}
	if (in_group(t, l.stack, l.len))
		add(t, l.stack, l.len, l.value);
}

/* The lines of one file, through a buffer that grows to one line at
 * most. */
struct splitter {
	char *line;
	size_t len, cap;
	bool overlong;
};

static bool room(struct splitter *s, size_t more)
{
	size_t cap = s->cap ? s->cap : 4096;
	char *p;

	if (more > WC_MERGE_LINE_MAX - s->len)
		return false;
	while (cap < s->len + more)
		cap *= 2;
	if (cap == s->cap)
		return true;
	cap = cap < WC_MERGE_LINE_MAX ? cap : WC_MERGE_LINE_MAX;
	p = realloc(s->line, cap);
	if (!p)
		return false;
	s->line = p;
	s->cap = cap;
	return true;
}

static void split(struct wc_merge *t, struct splitter *s, const char *p,
		  size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) : n;

		if (!s->overlong && room(s, take)) {
			memcpy(s->line + s->len, p, take);
			s->len += take;
		} else {
			s->overlong = true;
		}
		if (!nl)
			return;
		if (s->overlong) {
			t->lines++;
			t->bad++;
		} else {
			wc_merge_line(t, s->line, s->len);
		}
		s->len = 0;
		s->overlong = false;
		p = nl + 1;
		n -= take + 1;
	}
}

int wc_merge_read_fd(struct wc_merge *t, int fd)
{
	struct splitter s = {0};
	char *chunk;
	gzFile f;
	int n = 0, saved, z;

	f = gzdopen(fd, "rb"); /* reads plain files too */
	if (!f) {
		close(fd);
		return -1;
	}
	chunk = malloc(READ_CHUNK);
	if (!chunk)
		errno = ENOMEM;
	while (chunk && (n = gzread(f, chunk, READ_CHUNK)) > 0)
		split(t, &s, chunk, (size_t)n);
	if (chunk && n == 0)
		split(t, &s, "\n", s.len || s.overlong ? 1 : 0);
	/* Z_BUF_ERROR at the end: a gzip stream cut short */
	if (chunk && n == 0) {
		gzerror(f, &z);
		n = z == Z_BUF_ERROR ? -1 : 0;
	}
	saved = n < 0 ? EIO : errno;
	free(chunk);
	free(s.line);
	gzclose(f);
	errno = saved;
	return n < 0 || !chunk ? -1 : 0;
}

static int by_value_desc(const void *a, const void *b, void *arg)
{
	const struct wc_merge_entry *x =
		*(const struct wc_merge_entry *const *)a;
	const struct wc_merge_entry *y =
		*(const struct wc_merge_entry *const *)b;

	if (x->value != y->value)
		return x->value < y->value ? 1 : -1;
	return strcmp(wc_merge_stack(arg, x), wc_merge_stack(arg, y));
}

const struct wc_merge_entry **wc_merge_sorted(const struct wc_merge *t,
					      size_t *n)
{
	const struct wc_merge_entry **v;
	size_t i, k = 0;

	v = malloc((t->n ? t->n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (i = 0; i < t->n; i++)
		if (t->entries[i].value)
			v[k++] = &t->entries[i];
	qsort_r(v, k, sizeof(*v), by_value_desc, (void *)t);
	*n = k;
	return v;
}

int wc_merge_write(const struct wc_merge *t, FILE *out)
{
	const struct wc_merge_entry **v;
	size_t i, n;

	v = wc_merge_sorted(t, &n);
	if (!v)
		return -1;
	for (i = 0; i < n; i++)
		fprintf(out, "%s %llu\n", wc_merge_stack(t, v[i]),
			(unsigned long long)v[i]->value);
	free(v);
	return ferror(out) ? -1 : 0;
}
