/* wc_memo.c - see wc_memo.h. */
#include <stdlib.h>
#include <string.h>

#include "util/wc_idmap.h"
#include "stacks/wc_memo.h"

#define FRAMES_PER_STACK 32 /* average bound of the kernel stacks' pool */
#define NAMED (1u << 31)    /* in a frame's who: pids stay below 2^22 */
#define PLACE (1u << 30)    /* in a frame's who: a module's serial */

struct memo_stack {
	uint32_t first; /* index of its first id in pool */
	uint32_t n;
	uint32_t named;
};

/* A user frame; addr 0 marks an empty slot. */
struct memo_frame {
	uint64_t addr;
	uint32_t who; /* pid << 1 | caller, or PLACE | module; and NAMED */
	uint32_t id;
};

struct wc_memo {
	struct wc_idmap idx; /* kernel stack hash -> index into stacks */
	struct memo_stack *stacks;
	uint32_t nstacks, max_stacks;
	uint32_t *pool;
	uint32_t npool, max_pool;
	struct memo_frame *frames;
	uint32_t nframes, max_frames, frame_mask;
	struct wc_memo_stats st;
};

struct wc_memo *wc_memo_new(uint32_t max_stacks, uint32_t max_frames)
{
	struct wc_memo *m = calloc(1, sizeof(*m));
	size_t slots = 16;

	if (!m)
		return NULL;
	if (max_stacks == 0 || max_stacks > (1u << 24) || max_frames == 0 ||
	    max_frames > (1u << 24)) {
		free(m);
		return NULL;
	}
	while (slots < 2 * (size_t)max_frames)
		slots <<= 1;
	m->max_stacks = max_stacks;
	m->max_pool = max_stacks * FRAMES_PER_STACK;
	m->max_frames = max_frames;
	m->frame_mask = (uint32_t)(slots - 1);
	m->stacks = calloc(max_stacks, sizeof(*m->stacks));
	m->pool = malloc((size_t)m->max_pool * sizeof(*m->pool));
	m->frames = calloc(slots, sizeof(*m->frames));
	if (!m->stacks || !m->pool || !m->frames ||
	    wc_idmap_init(&m->idx, max_stacks)) {
		wc_memo_free(m);
		return NULL;
	}
	return m;
}

void wc_memo_free(struct wc_memo *m)
{
	if (!m)
		return;
	wc_idmap_free(&m->idx);
	free(m->stacks);
	free(m->pool);
	free(m->frames);
	free(m);
}

void wc_memo_reset(struct wc_memo *m)
{
	if (m->idx.count)
		memset(m->idx.keys, 0,
		       ((size_t)m->idx.mask + 1) * sizeof(*m->idx.keys));
	m->idx.count = 0;
	m->nstacks = 0;
	m->npool = 0;
	if (m->nframes)
		memset(m->frames, 0,
		       ((size_t)m->frame_mask + 1) * sizeof(*m->frames));
	m->nframes = 0;
}

int wc_memo_stack_get(struct wc_memo *m, uint64_t hash, uint32_t *out,
		      size_t max, uint32_t *named)
{
	const struct memo_stack *e;
	uint32_t k;
	size_t n;

	if (!wc_idmap_get(&m->idx, hash, &k)) {
		m->st.stack_misses++;
		return -1;
	}
	m->st.stack_hits++;
	e = &m->stacks[k];
	n = e->n < max ? e->n : max;
	memcpy(out, m->pool + e->first, n * sizeof(*out));
	*named = e->named;
	return (int)n;
}

bool wc_memo_stack_put(struct wc_memo *m, uint64_t hash, const uint32_t *ids,
		       size_t n, uint32_t named)
{
	struct memo_stack *e;

	if (m->nstacks >= m->max_stacks || n > m->max_pool - m->npool ||
	    wc_idmap_put(&m->idx, hash, m->nstacks)) {
		m->st.stacks_full++;
		return false;
	}
	e = &m->stacks[m->nstacks++];
	e->first = m->npool;
	e->n = (uint32_t)n;
	e->named = named;
	memcpy(m->pool + m->npool, ids, n * sizeof(*ids));
	m->npool += (uint32_t)n;
	return true;
}

/* The slot of (who, addr), or the empty slot where it would go. */
static struct memo_frame *frame_slot(const struct wc_memo *m, uint32_t who,
				     uint64_t addr)
{
	uint64_t h = (addr ^ ((uint64_t)who << 40)) * 0x9e3779b97f4a7c15ULL;
	uint32_t i = (uint32_t)(h >> 32) & m->frame_mask;

	while (m->frames[i].addr && (m->frames[i].addr != addr ||
				     (m->frames[i].who & ~NAMED) != who))
		i = (i + 1) & m->frame_mask;
	return &m->frames[i];
}

static bool frame_get(struct wc_memo *m, uint32_t who, uint64_t addr,
		      uint32_t *id, bool *named)
{
	const struct memo_frame *e = frame_slot(m, who, addr);

	if (!e->addr)
		return false;
	*id = e->id;
	*named = e->who & NAMED;
	return true;
}

static void frame_put(struct wc_memo *m, uint32_t who, uint64_t addr,
		      uint32_t id, bool named)
{
	struct memo_frame *e = frame_slot(m, who, addr);

	if (!e->addr) {
		if (m->nframes >= m->max_frames) {
			/* the walk has moved on to other processes */
			memset(m->frames, 0,
			       ((size_t)m->frame_mask + 1) *
				       sizeof(*m->frames));
			m->nframes = 0;
			m->st.frame_clears++;
			e = frame_slot(m, who, addr);
		}
		m->nframes++;
		e->addr = addr;
	}
	e->who = who | (named ? NAMED : 0);
	e->id = id;
}

bool wc_memo_frame_get(struct wc_memo *m, uint32_t pid, uint64_t addr,
		       bool caller, uint32_t *id, bool *named)
{
	if (!addr || pid >= PLACE >> 1)
		return false;
	if (!frame_get(m, pid << 1 | caller, addr, id, named)) {
		m->st.frame_misses++;
		return false;
	}
	m->st.frame_hits++;
	return true;
}

bool wc_memo_frame_put(struct wc_memo *m, uint32_t pid, uint64_t addr,
		       bool caller, uint32_t id, bool named)
{
	if (!addr || pid >= PLACE >> 1)
		return false;
	frame_put(m, pid << 1 | caller, addr, id, named);
	return true;
}

/* Places share the frames' table: off + 1, since 0 marks a free slot. */
bool wc_memo_place_get(struct wc_memo *m, uint32_t mod, uint64_t off,
		       uint32_t *id, bool *named)
{
	if (mod >= PLACE || off == UINT64_MAX ||
	    !frame_get(m, PLACE | mod, off + 1, id, named))
		return false;
	m->st.place_hits++;
	return true;
}

bool wc_memo_place_put(struct wc_memo *m, uint32_t mod, uint64_t off,
		       uint32_t id, bool named)
{
	if (mod >= PLACE || off == UINT64_MAX)
		return false;
	frame_put(m, PLACE | mod, off + 1, id, named);
	return true;
}

void wc_memo_get_stats(const struct wc_memo *m, struct wc_memo_stats *st)
{
	*st = m->st;
}
