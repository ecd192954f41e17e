/* wc_kmemo.c - see wc_kmemo.h. */
#include <stdlib.h>
#include <string.h>

#include "wc_idmap.h"
#include "wc_kmemo.h"

struct memo {
	uint32_t first; /* index of its first frame in frame_at */
	uint32_t n;
	uint32_t named;
};

struct wc_kmemo {
	struct wc_idmap idx; /* hash -> index into memos */
	struct memo *memos;
	uint32_t nmemos, max_stacks;
	uint32_t *frame_at; /* offsets into text, of every frame stored */
	uint32_t nframes, max_frames;
	char *text;
	size_t used, max_bytes;
};

struct wc_kmemo *wc_kmemo_new(uint32_t max_stacks, size_t max_bytes)
{
	struct wc_kmemo *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->max_stacks = max_stacks;
	m->max_bytes = max_bytes;
	/* frames are at least 2 bytes of text each (a letter and its NUL) */
	m->max_frames = (uint32_t)(max_bytes / 2);
	m->memos = calloc(max_stacks, sizeof(*m->memos));
	m->frame_at = malloc(m->max_frames * sizeof(*m->frame_at));
	m->text = malloc(max_bytes);
	if (!m->memos || !m->frame_at || !m->text ||
	    wc_idmap_init(&m->idx, max_stacks)) {
		wc_kmemo_free(m);
		return NULL;
	}
	return m;
}

void wc_kmemo_free(struct wc_kmemo *m)
{
	if (!m)
		return;
	wc_idmap_free(&m->idx);
	free(m->memos);
	free(m->frame_at);
	free(m->text);
	free(m);
}

void wc_kmemo_reset(struct wc_kmemo *m)
{
	if (m->idx.count)
		memset(m->idx.keys, 0,
		       ((size_t)m->idx.mask + 1) * sizeof(*m->idx.keys));
	m->idx.count = 0;
	m->nmemos = 0;
	m->nframes = 0;
	m->used = 0;
}

int wc_kmemo_get(const struct wc_kmemo *m, uint64_t hash, const char **out,
		 size_t max, uint32_t *named)
{
	const struct memo *e;
	uint32_t i, k;

	if (!wc_idmap_get(&m->idx, hash, &k))
		return -1;
	e = &m->memos[k];
	for (i = 0; i < e->n && i < max; i++)
		out[i] = m->text + m->frame_at[e->first + i];
	*named = e->named;
	return (int)i;
}

bool wc_kmemo_put(struct wc_kmemo *m, uint64_t hash,
		  const char *const *frames, size_t n, uint32_t named)
{
	size_t bytes = 0, i;
	struct memo *e;

	for (i = 0; i < n; i++)
		bytes += strlen(frames[i]) + 1;
	if (m->nmemos >= m->max_stacks || m->nframes + n > m->max_frames ||
	    m->used + bytes > m->max_bytes ||
	    wc_idmap_put(&m->idx, hash, m->nmemos))
		return false;
	e = &m->memos[m->nmemos++];
	e->first = m->nframes;
	e->n = (uint32_t)n;
	e->named = named;
	for (i = 0; i < n; i++) {
		size_t len = strlen(frames[i]) + 1;

		m->frame_at[m->nframes++] = (uint32_t)m->used;
		memcpy(m->text + m->used, frames[i], len);
		m->used += len;
	}
	return true;
}
