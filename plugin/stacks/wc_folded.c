/* wc_folded.c - see wc_folded.h. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "stacks/wc_folded.h"
#include "util/wc_hash.h"
#include "util/wc_strtab.h"
#include "util/wc_name.h"

#define NO_STACK UINT32_MAX
#define OUT_CHUNK 65536
#define MIN_BYTES 4096
#define MAX_BYTES (1u << 30)
#define MAX_STACKS (1u << 24)

/*
 * One (group, kind).  The first WC_FOLD_NKINDS cells are WC_OTHER_GROUP's,
 * made at reset, so a redirect never needs memory.
 */
struct fold_cell {
	uint32_t group; /* offset of the name in text */
	uint32_t kind;
	bool has_total;
	bool has_extra;
	uint64_t total_us;
	uint64_t extra_us; /* totals of groups redirected here */
	uint64_t weight;   /* of the stacks held */
	uint64_t dropped;  /* of the stacks that did not fit */
	/* emit's working values */
	uint64_t target;   /* us shared out among stacks and dropped */
	uint64_t label_us; /* [unsampled] or below-threshold */
	uint64_t other_us;
	uint64_t dropped_rem;
	uint64_t leftover; /* units still to give by largest remainder */
};

struct fold_stack {
	uint64_t weight;
	uint64_t value_us; /* emit's share */
	uint64_t rem;	   /* emit's remainder of the share */
	uint32_t cell;
	uint32_t frames; /* index of the first frame's offset in pool */
	uint32_t nframes;
	uint32_t hash;
};

/* A line to write, or (while sharing out) a remainder to rank. */
struct fold_line {
	uint64_t value;
	uint32_t cell;
	uint32_t stack;	   /* NO_STACK: a made-up line */
	const char *label; /* of a made-up line */
};

struct wc_fold {
	size_t max_stacks;
	struct wc_budget budget; /* of the strings and the pool */
	struct wc_strtab strs;	 /* frame and group names */

	uint32_t *pool; /* frame lists: string offsets */
	size_t pool_len, pool_cap;

	struct fold_stack *stacks;
	size_t nstacks, stacks_cap;
	uint32_t *stack_slots; /* index + 1, sized once for max_stacks */
	size_t stack_mask;

	struct fold_cell *cells;
	size_t ncells, cells_cap;
	uint32_t *cell_slots; /* index + 1, sized once */
	size_t cell_mask;

	char below_label[WC_FOLD_MAX_LABEL];
	struct wc_fold_stats st;

	/* scratch of one add: fixed, so an add never allocates for them */
	char frame_buf[WC_FOLD_MAX_FRAME + 1];
	uint32_t ids[WC_FOLD_MAX_DEPTH];
	uint32_t add_ids[WC_FOLD_MAX_DEPTH];
};

static size_t pow2_at_least(size_t n)
{
	size_t cap = 16;

	while (cap < n)
		cap <<= 1;
	return cap;
}

/* ---- safe text ---- */

/* The safe text of in (see the header) into out, which has room for
 * cap - 1 bytes; returns its length and sets *cut if it was shortened. */
static size_t sanitize(const char *in, char *out, size_t cap, bool *cut)
{
	in = in ? in : "";
	return wc_fold_frame_clean(in, strlen(in), out, cap, cut);
}

/* ---- cells ---- */

static uint32_t cell_hash(uint32_t group, uint32_t kind)
{
	return wc_mix32(((uint64_t)group << 2) | kind);
}

static bool cell_find(const struct wc_fold *f, uint32_t group, uint32_t kind,
		      size_t *slot)
{
	size_t i = cell_hash(group, kind) & f->cell_mask;

	while (f->cell_slots[i]) {
		const struct fold_cell *c = &f->cells[f->cell_slots[i] - 1];

		if (c->group == group && c->kind == kind) {
			*slot = i;
			return true;
		}
		i = (i + 1) & f->cell_mask;
	}
	*slot = i;
	return false;
}

static int cell_new(struct wc_fold *f, uint32_t group, uint32_t kind,
		    size_t slot)
{
	struct fold_cell *c;

	if (f->ncells == f->cells_cap) {
		size_t ncap = f->cells_cap * 2;

		if (ncap > f->max_stacks + WC_FOLD_NKINDS)
			ncap = f->max_stacks + WC_FOLD_NKINDS;
		c = realloc(f->cells, ncap * sizeof(*c));
		if (!c)
			return -1;
		f->cells = c;
		f->cells_cap = ncap;
	}
	c = &f->cells[f->ncells];
	memset(c, 0, sizeof(*c));
	c->group = group;
	c->kind = kind;
	f->cell_slots[slot] = (uint32_t)++f->ncells;
	return (int)(f->ncells - 1);
}

/* The cell of (group, kind), made if new; when there is no room for it, the
 * reserved cell of WC_OTHER_GROUP, with *redirected set.  Never fails. */
static uint32_t cell_get(struct wc_fold *f, const char *group, uint32_t kind,
			 bool *redirected)
{
	bool cut;
	size_t n = sanitize(group, f->frame_buf, sizeof(f->frame_buf), &cut);
	size_t slot;
	uint32_t g;
	int idx;

	*redirected = false;
	if (wc_strtab_intern(&f->strs, f->frame_buf, n, false, &g) == 0 &&
	    cell_find(f, g, kind, &slot))
		return f->cell_slots[slot] - 1;
	if (f->ncells < f->max_stacks + WC_FOLD_NKINDS &&
	    wc_strtab_intern(&f->strs, f->frame_buf, n, true, &g) >= 0) {
		cell_find(f, g, kind, &slot);
		idx = cell_new(f, g, kind, slot);
		if (idx >= 0)
			return (uint32_t)idx;
	}
	*redirected = true;
	f->st.groups_redirected++;
	return kind; /* the reserved cells come first, in kind order */
}

/* ---- stacks ---- */

static uint32_t stack_hash(uint32_t cell, const uint32_t *ids, size_t n)
{
	uint64_t h = cell * 0x9e3779b97f4a7c15ULL;
	size_t i;

	for (i = 0; i < n; i++)
		h = wc_fnv1a_step(h, ids[i]);
	return wc_mix32(h ^ n);
}

static bool stack_find(const struct wc_fold *f, uint32_t cell,
		       const uint32_t *ids, size_t n, uint32_t h, size_t *slot)
{
	size_t i = h & f->stack_mask;

	while (f->stack_slots[i]) {
		const struct fold_stack *s = &f->stacks[f->stack_slots[i] - 1];

		if (s->hash == h && s->cell == cell && s->nframes == n &&
		    memcmp(f->pool + s->frames, ids, n * sizeof(*ids)) == 0) {
			*slot = i;
			return true;
		}
		i = (i + 1) & f->stack_mask;
	}
	*slot = i;
	return false;
}

static int stack_new(struct wc_fold *f, uint32_t cell, size_t n, uint32_t h,
		     size_t slot, uint64_t weight)
{
	struct fold_stack *s;

	if (f->nstacks == f->stacks_cap) {
		size_t ncap = f->stacks_cap ? f->stacks_cap * 2 : 256;

		if (ncap > f->max_stacks)
			ncap = f->max_stacks;
		s = realloc(f->stacks, ncap * sizeof(*s));
		if (!s)
			return -1;
		f->stacks = s;
		f->stacks_cap = ncap;
	}
	if (wc_budget_grow(&f->budget, (void **)&f->pool, &f->pool_cap,
			   f->pool_len + n, sizeof(*f->pool)))
		return -1;
	s = &f->stacks[f->nstacks];
	memset(s, 0, sizeof(*s));
	s->weight = weight;
	s->cell = cell;
	s->frames = (uint32_t)f->pool_len;
	s->nframes = (uint32_t)n;
	s->hash = h;
	memcpy(f->pool + f->pool_len, f->ids, n * sizeof(*f->ids));
	f->pool_len += n;
	f->stack_slots[slot] = (uint32_t)++f->nstacks;
	return 0;
}

/* Whether a frame not interned yet may be: with the stack table full,
 * only a stack already held can take a weight, and all its frames are
 * interned already. */
static bool may_insert(const struct wc_fold *f)
{
	return f->nstacks < f->max_stacks;
}

uint32_t wc_fold_frame(struct wc_fold *f, const char *frame)
{
	bool cut;
	size_t len = sanitize(frame, f->frame_buf, sizeof(f->frame_buf), &cut);
	uint32_t off;

	if (wc_strtab_intern(&f->strs, f->frame_buf, len, may_insert(f), &off) <
	    0)
		return WC_FOLD_NO_FRAME;
	return off | (cut ? WC_FOLD_CUT : 0);
}

/* Arguments checked; cut: the caller cut the stack's depth. */
static void add_ids(struct wc_fold *f, const char *group, uint32_t kind,
		    const uint32_t *frames, size_t n, uint64_t weight, bool cut)
{
	bool redirected, known = true;
	size_t slot, i;
	uint32_t cell, h;

	cell = cell_get(f, group, kind, &redirected);
	for (i = 0; i < n; i++) {
		known &= frames[i] != WC_FOLD_NO_FRAME;
		cut |= frames[i] != WC_FOLD_NO_FRAME &&
		       (frames[i] & WC_FOLD_CUT);
		f->ids[i] = frames[i] & ~WC_FOLD_CUT;
	}
	f->st.truncated += cut;
	if (!known)
		goto dropped;
	h = stack_hash(cell, f->ids, n);
	if (stack_find(f, cell, f->ids, n, h, &slot)) {
		f->stacks[f->stack_slots[slot] - 1].weight += weight;
		f->st.merged++;
	} else if (f->nstacks >= f->max_stacks ||
		   stack_new(f, cell, n, h, slot, weight) < 0) {
		goto dropped;
	}
	f->cells[cell].weight += weight;
	return;
dropped:
	f->cells[cell].dropped += weight;
	f->st.dropped_full++;
}

static bool bad_add(const struct wc_fold *f, const char *group,
		    enum wc_fold_kind kind, const void *frames, size_t nframes)
{
	return !f || !group || (unsigned)kind >= WC_FOLD_NKINDS ||
	       (nframes && !frames);
}

int wc_fold_add_ids(struct wc_fold *f, const char *group,
		    enum wc_fold_kind kind, const uint32_t *frames,
		    size_t nframes, uint64_t weight)
{
	bool cut = nframes > WC_FOLD_MAX_DEPTH;

	if (bad_add(f, group, kind, frames, nframes))
		return -1;
	if (weight)
		add_ids(f, group, kind, frames,
			cut ? WC_FOLD_MAX_DEPTH : nframes, weight, cut);
	return 0;
}

int wc_fold_add(struct wc_fold *f, const char *group, enum wc_fold_kind kind,
		const char *const *frames, size_t nframes, uint64_t weight)
{
	bool cut = nframes > WC_FOLD_MAX_DEPTH;
	size_t n = cut ? WC_FOLD_MAX_DEPTH : nframes, i;

	if (bad_add(f, group, kind, frames, nframes))
		return -1;
	if (weight == 0)
		return 0;
	/* through a copy: add_ids works in f->ids */
	for (i = 0; i < n; i++)
		f->add_ids[i] = wc_fold_frame(f, frames[i]);
	add_ids(f, group, kind, f->add_ids, n, weight, cut);
	return 0;
}

int wc_fold_set_total(struct wc_fold *f, const char *group,
		      enum wc_fold_kind kind, uint64_t total_us)
{
	bool redirected;
	struct fold_cell *c;
	uint32_t cell;

	if (!f || !group || (unsigned)kind >= WC_FOLD_NKINDS)
		return -1;
	cell = cell_get(f, group, kind, &redirected); /* may move f->cells */
	c = &f->cells[cell];
	if (redirected) {
		c->extra_us += total_us;
		c->has_extra = true;
	} else {
		c->total_us = total_us;
		c->has_total = true;
	}
	return 0;
}

int wc_fold_set_below_label(struct wc_fold *f, const char *label)
{
	char buf[WC_FOLD_MAX_LABEL];
	bool cut;

	if (!f || !label)
		return -1;
	sanitize(label, buf, sizeof(buf), &cut);
	if (cut)
		return -1;
	strcpy(f->below_label, buf);
	return 0;
}

/* ---- life ---- */

void wc_fold_reset(struct wc_fold *f)
{
	uint32_t other, k;
	size_t slot;

	wc_strtab_clear(&f->strs);
	f->pool_len = 0;
	f->nstacks = 0;
	memset(f->stack_slots, 0, (f->stack_mask + 1) * sizeof(uint32_t));
	f->ncells = 0;
	memset(f->cell_slots, 0, (f->cell_mask + 1) * sizeof(uint32_t));
	memset(&f->st, 0, sizeof(f->st));
	/* Cannot fail: new() reserved room for the name and the cells. */
	wc_strtab_intern(&f->strs, WC_OTHER_GROUP, strlen(WC_OTHER_GROUP), true,
			 &other);
	for (k = 0; k < WC_FOLD_NKINDS; k++) {
		cell_find(f, other, k, &slot);
		cell_new(f, other, k, slot);
	}
}

struct wc_fold *wc_fold_new(size_t max_stacks, size_t max_bytes)
{
	struct wc_fold *f;
	size_t cells = max_stacks + WC_FOLD_NKINDS;

	if (max_stacks < 1 || max_stacks > MAX_STACKS ||
	    max_bytes < MIN_BYTES || max_bytes > MAX_BYTES)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->max_stacks = max_stacks;
	f->budget.max = max_bytes;
	f->stack_mask = pow2_at_least(2 * max_stacks) - 1;
	f->cell_mask = pow2_at_least(2 * cells) - 1;
	f->cells_cap = WC_FOLD_NKINDS * 4;
	f->stack_slots = calloc(f->stack_mask + 1, sizeof(uint32_t));
	f->cell_slots = calloc(f->cell_mask + 1, sizeof(uint32_t));
	f->cells = calloc(f->cells_cap, sizeof(*f->cells));
	if (!f->stack_slots || !f->cell_slots || !f->cells ||
	    wc_strtab_init(&f->strs, &f->budget, 1024) < 0) {
		wc_fold_free(f);
		return NULL;
	}
	strcpy(f->below_label, WC_FOLD_BELOW_THRESHOLD);
	wc_fold_reset(f);
	return f;
}

void wc_fold_free(struct wc_fold *f)
{
	if (!f)
		return;
	wc_strtab_free(&f->strs);
	free(f->pool);
	free(f->stacks);
	free(f->stack_slots);
	free(f->cells);
	free(f->cell_slots);
	free(f);
}

void wc_fold_get_stats(const struct wc_fold *f, struct wc_fold_stats *st)
{
	*st = f->st;
	st->stacks = f->nstacks;
}

/* ---- emit: sharing out ---- */

/* Decide what a cell's stacks share (target) and what goes to a label. */
static void plan_cell(struct wc_fold *f, struct fold_cell *c)
{
	uint64_t w = c->weight + c->dropped;
	uint64_t total = c->total_us + c->extra_us;

	c->label_us = 0;
	c->other_us = 0;
	c->dropped_rem = 0;
	if (!c->has_total && !c->has_extra)
		c->target = c->kind == WC_FOLD_ONCPU
				    ? w
				    : w / 1000 + (w % 1000 >= 500);
	else if (w == 0 || c->kind == WC_FOLD_ONCPU)
		c->target = w ? total : 0;
	else if ((unsigned __int128)w >= (unsigned __int128)total * 1000)
		c->target = total;
	else
		c->target = w / 1000 + (w % 1000 >= 500);
	if (c->has_total || c->has_extra) {
		c->label_us = total - c->target;
		if (c->kind != WC_FOLD_ONCPU &&
		    (unsigned __int128)w > (unsigned __int128)total * 1000)
			f->st.scaled_down++;
	}
	c->leftover = c->target;
}

/* share = weight * target / W: the floor now, the remainder for later. */
static uint64_t share(uint64_t weight, const struct fold_cell *c, uint64_t *rem)
{
	uint64_t w = c->weight + c->dropped;
	unsigned __int128 q = (unsigned __int128)weight * c->target;

	*rem = (uint64_t)(q % w);
	return (uint64_t)(q / w);
}

static void share_floors(struct wc_fold *f)
{
	size_t i;

	for (i = 0; i < f->ncells; i++) {
		struct fold_cell *c = &f->cells[i];

		plan_cell(f, c);
		if (c->dropped) {
			c->other_us = share(c->dropped, c, &c->dropped_rem);
			c->leftover -= c->other_us;
		}
	}
	for (i = 0; i < f->nstacks; i++) {
		struct fold_stack *s = &f->stacks[i];
		struct fold_cell *c = &f->cells[s->cell];

		s->value_us = share(s->weight, c, &s->rem);
		c->leftover -= s->value_us;
	}
}

/* ---- emit: ordering ---- */

static size_t line_nseg(const struct wc_fold *f, const struct fold_line *l)
{
	return l->stack == NO_STACK ? 3 : 2 + f->stacks[l->stack].nframes;
}

/* The i-th frame of a line's text, the group and the marker first. */
static const char *line_seg(const struct wc_fold *f, const struct fold_line *l,
			    size_t i)
{
	const struct fold_cell *c = &f->cells[l->cell];

	if (i == 0)
		return wc_strtab_str(&f->strs, c->group);
	if (i == 1)
		return wc_fold_marker(c->kind);
	if (l->stack == NO_STACK)
		return l->label;
	return wc_strtab_str(&f->strs,
			     f->pool[f->stacks[l->stack].frames + i - 2]);
}

/*
 * Byte order of the lines' text without the value, frame by frame so that
 * shared (interned) frames compare by pointer.  No frame holds ';', so a
 * frame that is a prefix of the other's ranks by ';' against the other's
 * next byte, and a line that ends first ranks first.
 */
static int text_cmp(const struct wc_fold *f, const struct fold_line *a,
		    const struct fold_line *b)
{
	size_t na = line_nseg(f, a), nb = line_nseg(f, b), i;

	for (i = 0; i < na && i < nb; i++) {
		const unsigned char *x = (const void *)line_seg(f, a, i);
		const unsigned char *y = (const void *)line_seg(f, b, i);
		int cx, cy;

		if (x == y)
			continue;
		while (*x && *x == *y)
			x++, y++;
		if (!*x && !*y)
			continue;
		cx = *x ? *x : i + 1 < na ? ';' : -1;
		cy = *y ? *y : i + 1 < nb ? ';' : -1;
		return cx < cy ? -1 : 1;
	}
	return (na > nb) - (na < nb);
}

static int value_cmp(const void *pa, const void *pb, void *arg)
{
	const struct fold_line *a = pa, *b = pb;

	if (a->value != b->value)
		return a->value > b->value ? -1 : 1;
	return text_cmp(arg, a, b);
}

/* Remainders: by cell, largest first, a cell's dropped weight after its
 * stacks, then by text, so ties go the same way every time. */
static int rem_cmp(const void *pa, const void *pb, void *arg)
{
	const struct fold_line *a = pa, *b = pb;

	if (a->cell != b->cell)
		return a->cell < b->cell ? -1 : 1;
	if (a->value != b->value)
		return a->value > b->value ? -1 : 1;
	if ((a->stack == NO_STACK) != (b->stack == NO_STACK))
		return a->stack == NO_STACK ? 1 : -1;
	return text_cmp(arg, a, b);
}

/* Largest remainder: each cell's leftover units go one each to the
 * largest remainders.  scratch holds nstacks + ncells lines. */
static void share_leftovers(struct wc_fold *f, struct fold_line *scratch)
{
	size_t i, n = 0;

	for (i = 0; i < f->nstacks; i++) {
		const struct fold_stack *s = &f->stacks[i];

		if (s->rem && f->cells[s->cell].leftover)
			scratch[n++] = (struct fold_line){s->rem, s->cell,
							  (uint32_t)i, NULL};
	}
	for (i = 0; i < f->ncells; i++) {
		if (f->cells[i].dropped_rem && f->cells[i].leftover)
			scratch[n++] = (struct fold_line){
				f->cells[i].dropped_rem, (uint32_t)i, NO_STACK,
				WC_FOLD_OTHER};
	}
	qsort_r(scratch, n, sizeof(*scratch), rem_cmp, f);
	for (i = 0; i < n; i++) {
		struct fold_cell *c = &f->cells[scratch[i].cell];

		if (!c->leftover)
			continue;
		c->leftover--;
		if (scratch[i].stack == NO_STACK)
			c->other_us++;
		else
			f->stacks[scratch[i].stack].value_us++;
	}
}

/* The lines to write, sorted: the top_n stacks, then per cell its [other]
 * and label lines.  Returns how many. */
static size_t pick_lines(struct wc_fold *f, size_t top_n,
			 struct fold_line *lines)
{
	size_t i, n = 0;

	for (i = 0; i < f->nstacks; i++) {
		const struct fold_stack *s = &f->stacks[i];

		if (s->value_us)
			lines[n++] = (struct fold_line){s->value_us, s->cell,
							(uint32_t)i, NULL};
	}
	if (top_n && n > top_n) {
		qsort_r(lines, n, sizeof(*lines), value_cmp, f);
		for (i = top_n; i < n; i++)
			f->cells[lines[i].cell].other_us += lines[i].value;
		n = top_n;
	}
	for (i = 0; i < f->ncells; i++) {
		const struct fold_cell *c = &f->cells[i];
		const char *label = c->kind == WC_FOLD_ONCPU ? WC_FOLD_UNSAMPLED
							     : f->below_label;

		if (c->other_us)
			lines[n++] = (struct fold_line){c->other_us,
							(uint32_t)i, NO_STACK,
							WC_FOLD_OTHER};
		if (c->label_us)
			lines[n++] = (struct fold_line){
				c->label_us, (uint32_t)i, NO_STACK, label};
		f->st.other_us += c->other_us;
		f->st.unattributed_us += c->label_us;
	}
	qsort_r(lines, n, sizeof(*lines), value_cmp, f);
	return n;
}

/* ---- emit: writing ---- */

struct out_buf {
	char *buf;
	size_t len;
	wc_fold_out_fn out;
	void *ctx;
	ssize_t total;
	int err;
};

static void out_flush(struct out_buf *o)
{
	if (o->len && !o->err && o->out(o->ctx, o->buf, o->len) < 0)
		o->err = -1;
	o->total += (ssize_t)o->len;
	o->len = 0;
}

static void out_put(struct out_buf *o, const char *s, size_t n)
{
	while (n && !o->err) {
		size_t room = OUT_CHUNK - o->len, k = n < room ? n : room;

		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
		if (o->len == OUT_CHUNK)
			out_flush(o);
	}
}

static void out_line(struct wc_fold *f, struct out_buf *o,
		     const struct fold_line *l)
{
	size_t i, nseg = line_nseg(f, l);
	char num[24];
	const char *tail = wc_fold_value_text(l->value, num);

	for (i = 0; i < nseg; i++) {
		const char *seg = line_seg(f, l, i);

		if (i)
			out_put(o, ";", 1);
		out_put(o, seg, strlen(seg));
	}
	out_put(o, tail, strlen(tail));
	f->st.total_us += l->value;
}

ssize_t wc_fold_emit(struct wc_fold *f, size_t top_n, wc_fold_out_fn out,
		     void *ctx)
{
	struct out_buf o = {.out = out, .ctx = ctx};
	struct fold_line *lines;
	size_t n, i;

	if (!f || !out)
		return -1;
	f->st.lines = f->st.bytes = f->st.total_us = 0;
	f->st.other_us = f->st.unattributed_us = f->st.scaled_down = 0;
	lines = malloc((f->nstacks + 3 * f->ncells) * sizeof(*lines));
	o.buf = malloc(OUT_CHUNK);
	if (!lines || !o.buf) {
		free(lines);
		free(o.buf);
		return -1;
	}
	share_floors(f);
	share_leftovers(f, lines);
	n = pick_lines(f, top_n, lines);
	for (i = 0; i < n && !o.err; i++)
		out_line(f, &o, &lines[i]);
	out_flush(&o);
	free(lines);
	free(o.buf);
	if (o.err)
		return -1;
	f->st.lines = n;
	f->st.bytes = (uint64_t)o.total;
	return o.total;
}
