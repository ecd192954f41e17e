/*
 * wc_merge.c - folded files summed into one bounded table of stacks.
 */
#include "cli/wc_merge.h"
#include "format/wc_format.h"
#include "util/wc_hash.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define OTHER_FRAME ";" WC_FOLD_OTHER
#define READ_CHUNK (64u << 10)

int wc_merge_init(struct wc_merge *t, size_t max, const char *group)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
	t->group = group;
	t->cap = 1024;
	while (t->cap < 2 * max)
		t->cap <<= 1;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	return t->slots ? 0 : -1;
}

void wc_merge_free(struct wc_merge *t)
{
	size_t i;

	for (i = 0; t->slots && i < t->cap; i++)
		free(t->slots[i].stack);
	free(t->slots);
	t->slots = NULL;
}

static struct wc_merge_entry *slot(struct wc_merge *t, const char *stack,
				   size_t len)
{
	size_t i = wc_fnv1a(WC_FNV_SEED, stack, len) & (t->cap - 1);

	while (t->slots[i].stack &&
	       (strlen(t->slots[i].stack) != len ||
		memcmp(t->slots[i].stack, stack, len) != 0))
		i = (i + 1) & (t->cap - 1);
	return &t->slots[i];
}

/* Into the group's remainder, so its total stays whole; the table has
 * room for one per group beyond max (cap >= 2 max, never fuller than 3/4). */
static struct wc_merge_entry *other_slot(struct wc_merge *t, const char *stack,
					 size_t len, char **text)
{
	const char *semi = memchr(stack, ';', len);
	size_t g = semi ? (size_t)(semi - stack) : len;
	struct wc_merge_entry *e;

	*text = malloc(g + sizeof(OTHER_FRAME));
	if (!*text)
		return NULL;
	memcpy(*text, stack, g);
	memcpy(*text + g, OTHER_FRAME, sizeof(OTHER_FRAME));
	e = slot(t, *text, g + sizeof(OTHER_FRAME) - 1);
	if (!e->stack && t->n >= t->cap / 4 * 3)
		return NULL;
	return e;
}

static void add(struct wc_merge *t, const char *stack, size_t len,
		uint64_t value)
{
	struct wc_merge_entry *e = slot(t, stack, len);
	char *text = NULL;

	if (!e->stack && t->n >= t->max) {
		t->dropped++;
		e = other_slot(t, stack, len, &text);
		if (!e) {
			free(text);
			return;
		}
	}
	if (e->value + value < e->value) {
		t->bad++;
		free(text);
		return;
	}
	if (!e->stack) {
		e->stack = text ? text : strndup(stack, len);
		if (!e->stack)
			return;
		text = NULL;
		t->n++;
	}
	free(text);
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

static int by_value_desc(const void *a, const void *b)
{
	const struct wc_merge_entry *x =
		*(const struct wc_merge_entry *const *)a;
	const struct wc_merge_entry *y =
		*(const struct wc_merge_entry *const *)b;

	if (x->value != y->value)
		return x->value < y->value ? 1 : -1;
	return strcmp(x->stack, y->stack);
}

const struct wc_merge_entry **wc_merge_sorted(const struct wc_merge *t,
					      size_t *n)
{
	const struct wc_merge_entry **v;
	size_t i, k = 0;

	v = malloc((t->n ? t->n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (i = 0; i < t->cap; i++)
		if (t->slots[i].stack && t->slots[i].value)
			v[k++] = &t->slots[i];
	qsort(v, k, sizeof(*v), by_value_desc);
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
		fprintf(out, "%s %llu\n", v[i]->stack,
			(unsigned long long)v[i]->value);
	free(v);
	return ferror(out) ? -1 : 0;
}
