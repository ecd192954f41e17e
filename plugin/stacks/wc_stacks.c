/* wc_stacks.c - see wc_stacks.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/wc_idmap.h"
#include "stacks/wc_stacks.h"
#include "util/wc_hash.h"
#include "util/wc_strtab.h"

#define NONE UINT32_MAX

struct held {
	uint64_t hash; /* 0: free slot */
	uint64_t *ip;
	uint32_t nr;
	uint32_t gen; /* window that last named it */
	bool let_go;  /* unnamed for a window: the kernel was told */
};

/* An entry's place in the order of the flush's walk: by process, then by
 * its user stack's hash folded to 32 bits (two stacks alike there only
 * interleave), then as added. */
struct order {
	uint64_t key; /* tgid << 32 | folded ustack */
	uint32_t i;   /* into w */
};

/* One process's run of entries in that order, and what it weighs. */
struct proc_run {
	uint32_t start, n, tgid;
	uint64_t oncpu, offcpu;
};

#define RADIX_BITS 11
#define RADIX_PASSES 5 /* of the key's 54 bits: pids stay below 2^22 */

/* A weight as held: its group is an offset into the window's names.
 * Weights whose keys hash alike (the same stacks under another group,
 * after an exec renamed the process) chain from the first. */
struct weight {
	uint32_t group;
	uint32_t tgid;
	uint32_t kind;
	uint32_t next; /* index into w, NONE */
	uint64_t ustack;
	uint64_t kstack;
	uint64_t weight;
};

struct wc_stacks {
	struct weight *w;	/* max_weights */
	struct wc_strtab names; /* group names, each once per window */
	struct wc_budget names_budget;
	struct order *order, *sorted; /* max_weights each, the walk's */
	struct proc_run *runs;	      /* max_weights, the walk's */
	uint32_t *radix;	      /* 1 << RADIX_BITS counts */
	uint32_t nw, max_weights;
	struct wc_idmap widx; /* weight key -> index into w */
	uint64_t *wkeys; /* the map key of a chain's head, to clear it; 0 */

	struct held *held; /* max_stacks */
	uint32_t *free_list, nfree, max_stacks;
	struct wc_idmap sidx; /* stack hash -> index into held */
	size_t bytes, max_bytes;
	uint32_t gen;
	bool reapable; /* stacks were let go since the last reap */

	struct wc_stacks_stats stats;
};

int wc_stacks_new(uint32_t max_weights, uint32_t max_stacks,
		  size_t max_stack_bytes, struct wc_stacks **out)
{
	struct wc_stacks *s = calloc(1, sizeof(*s));
	uint32_t i;

	if (!s)
		return -1;
	s->max_weights = max_weights;
	s->max_stacks = max_stacks;
	s->max_bytes = max_stack_bytes;
	s->gen = 1;
	s->w = calloc(max_weights, sizeof(*s->w));
	s->wkeys = calloc(max_weights, sizeof(*s->wkeys));
	s->order = malloc(max_weights * sizeof(*s->order));
	s->sorted = malloc(max_weights * sizeof(*s->sorted));
	s->runs = malloc(max_weights * sizeof(*s->runs));
	s->radix = malloc((1u << RADIX_BITS) * sizeof(*s->radix));
	s->held = calloc(max_stacks, sizeof(*s->held));
	s->free_list = calloc(max_stacks, sizeof(*s->free_list));
	/* a window sees a few groups and many weights: at most a name per
	 * weight, with its index */
	s->names_budget.max = (size_t)max_weights * (WC_NAME_MAX + 32) + 4096;
	if (!s->w || !s->wkeys || !s->order || !s->sorted || !s->runs ||
	    !s->radix || !s->held || !s->free_list ||
	    wc_strtab_init(&s->names, &s->names_budget, 1024) ||
	    wc_idmap_init(&s->widx, max_weights) ||
	    wc_idmap_init(&s->sidx, max_stacks)) {
		wc_stacks_free(s);
		return -1;
	}
	for (i = 0; i < max_stacks; i++)
		s->free_list[i] = max_stacks - 1 - i;
	s->nfree = max_stacks;
	*out = s;
	return 0;
}

void wc_stacks_free(struct wc_stacks *s)
{
	uint32_t i;

	if (!s)
		return;
	for (i = 0; s->held && i < s->max_stacks; i++)
		free(s->held[i].ip);
	wc_idmap_free(&s->widx);
	wc_idmap_free(&s->sidx);
	free(s->w);
	wc_strtab_free(&s->names);
	free(s->wkeys);
	free(s->order);
	free(s->sorted);
	free(s->runs);
	free(s->radix);
	free(s->held);
	free(s->free_list);
	free(s);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

/* Not of the group: known before it is, so it can be prefetched. */
static uint64_t weight_key(const struct wc_stack_key *k)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	h = mix(h, k->tgid);
	h = mix(h, k->kind);
	h = mix(h, k->ustack);
	h = mix(h, k->kstack);
	return h ? h : 1;
}

/* The offset of a group's name, added if new; -1 if there is no room. */
static int64_t name_of(struct wc_stacks *s, const char *group)
{
	uint32_t off;

	if (wc_strtab_intern(&s->names, group, strnlen(group, WC_NAME_MAX - 1),
			     true, &off) < 0)
		return -1;
	return off;
}

static bool same(const struct weight *e, uint32_t group,
		 const struct wc_stack_key *k)
{
	return e->tgid == k->tgid && e->kind == k->kind &&
	       e->ustack == k->ustack && e->kstack == k->kstack &&
	       e->group == group;
}

void wc_stacks_prefetch(const struct wc_stacks *s, const struct wc_stack_key *k)
{
	wc_idmap_prefetch(&s->widx, weight_key(k));
	if (k->ustack >= WC_STACK_LABELS)
		wc_idmap_prefetch(&s->sidx, k->ustack);
	if (k->kstack >= WC_STACK_LABELS)
		wc_idmap_prefetch(&s->sidx, k->kstack);
}

int wc_stacks_add(struct wc_stacks *s, const char *group,
		  const struct wc_stack_key *k, uint64_t weight)
{
	uint64_t key = weight_key(k);
	int64_t name = name_of(s, group);
	uint32_t head = NONE, i;
	struct weight *e;

	if (name < 0)
		goto dropped;
	if (wc_idmap_get(&s->widx, key, &head))
		for (i = head; i != NONE; i = s->w[i].next)
			if (same(&s->w[i], (uint32_t)name, k)) {
				s->w[i].weight += weight;
				return 0;
			}
	if (s->nw == s->max_weights ||
	    (head == NONE && wc_idmap_put(&s->widx, key, s->nw)))
		goto dropped;
	e = &s->w[s->nw];
	e->group = (uint32_t)name;
	e->tgid = k->tgid;
	e->kind = k->kind;
	e->ustack = k->ustack;
	e->kstack = k->kstack;
	e->weight = weight;
	/* the head keeps the map's key; the rest of its chain has none */
	if (head == NONE) {
		e->next = NONE;
		s->wkeys[s->nw] = key;
	} else {
		e->next = s->w[head].next;
		s->w[head].next = s->nw;
		s->wkeys[s->nw] = 0;
	}
	s->nw++;
	return 0;
dropped:
	s->stats.weights_dropped++;
	return -1;
}

bool wc_stacks_has(struct wc_stacks *s, uint64_t hash)
{
	uint32_t i;

	if (!wc_idmap_get(&s->sidx, hash, &i))
		return false;
	s->held[i].gen = s->gen;
	return true;
}

int wc_stacks_put(struct wc_stacks *s, uint64_t hash, const struct wc_stack *st)
{
	uint32_t nr = st->nr < WC_STACK_DEPTH ? st->nr : WC_STACK_DEPTH;
	size_t bytes = nr * sizeof(uint64_t);
	struct held *h;
	uint32_t i;

	if (wc_stacks_has(s, hash))
		return 0;
	if (!s->nfree || s->bytes + bytes > s->max_bytes || hash == 0)
		goto full;
	i = s->free_list[s->nfree - 1];
	h = &s->held[i];
	h->ip = malloc(bytes ? bytes : 1);
	if (!h->ip || wc_idmap_put(&s->sidx, hash, i)) {
		free(h->ip);
		h->ip = NULL;
		goto full;
	}
	s->nfree--;
	memcpy(h->ip, st->ip, bytes);
	h->nr = nr;
	h->hash = hash;
	h->gen = s->gen;
	s->bytes += bytes;
	return 0;
full:
	s->stats.stacks_dropped++;
	return -1;
}

bool wc_stacks_get(const struct wc_stacks *s, uint64_t hash,
		   struct wc_stack_view *out)
{
	uint32_t i;

	if (!wc_idmap_get(&s->sidx, hash, &i))
		return false;
	out->ip = s->held[i].ip;
	out->nr = s->held[i].nr;
	return true;
}

/* One stable counting pass on a digit of the key, from a into b; false
 * (nothing moved) if every key has the same digit there. */
static bool radix_pass(uint32_t *count, const struct order *a, struct order *b,
		       uint32_t n, unsigned shift)
{
	const uint32_t mask = (1u << RADIX_BITS) - 1;
	uint32_t i, sum = 0, c;

	memset(count, 0, (mask + 1) * sizeof(*count));
	for (i = 0; i < n; i++)
		count[(a[i].key >> shift) & mask]++;
	if (count[(a[0].key >> shift) & mask] == n)
		return false;
	for (i = 0; i <= mask; i++) {
		c = count[i];
		count[i] = sum;
		sum += c;
	}
	for (i = 0; i < n; i++)
		b[count[(a[i].key >> shift) & mask]++] = a[i];
	return true;
}

static int busier(const void *x, const void *y)
{
	const struct proc_run *a = x, *b = y;

	if (a->oncpu != b->oncpu)
		return a->oncpu < b->oncpu ? 1 : -1;
	if (a->offcpu != b->offcpu)
		return a->offcpu < b->offcpu ? 1 : -1;
	return a->tgid < b->tgid ? -1 : a->tgid > b->tgid;
}

/* Processes in a sorted walk, busiest first, from a into b: a flush whose
 * symbol budget runs out has named the hot paths. */
static const struct order *busiest_first(struct wc_stacks *s,
					 const struct order *a, struct order *b)
{
	uint32_t i, j, nruns = 0, at = 0;

	for (i = 0; i < s->nw; i++) {
		const struct weight *w = &s->w[a[i].i];
		struct proc_run *r = &s->runs[nruns ? nruns - 1 : 0];

		if (!nruns || r->tgid != w->tgid) {
			r = &s->runs[nruns++];
			*r = (struct proc_run){.start = i, .tgid = w->tgid};
		}
		r->n++;
		if (w->kind == WC_ONCPU)
			r->oncpu += w->weight;
		else
			r->offcpu += w->weight;
	}
	qsort(s->runs, nruns, sizeof(*s->runs), busier);
	for (i = 0; i < nruns; i++)
		for (j = 0; j < s->runs[i].n; j++)
			b[at++] = a[s->runs[i].start + j];
	return b;
}

/* The walk's order: a radix sort, least significant digit first, so equal
 * keys keep the order they were added in; then whole processes moved. */
static const struct order *sort_order(struct wc_stacks *s)
{
	struct order *a = s->order, *b = s->sorted, *t;
	unsigned pass;
	uint32_t i;

	for (i = 0; i < s->nw; i++) {
		uint64_t u = s->w[i].ustack;

		a[i].key = (uint64_t)s->w[i].tgid << 32 |
			   (uint32_t)(u ^ u >> 32);
		a[i].i = i;
	}
	if (!s->nw)
		return a;
	for (pass = 0; pass < RADIX_PASSES; pass++) {
		if (!radix_pass(s->radix, a, b, s->nw, pass * RADIX_BITS))
			continue;
		t = a;
		a = b;
		b = t;
	}
	return busiest_first(s, a, b);
}

/* The walk's reads are all misses (the weights in their new order, then
 * their stacks' slots, entries and addresses): fetch a few entries ahead,
 * each stage for an entry whose previous stage was fetched earlier. */
#define AHEAD 4

static void fetch_held(const struct wc_stacks *s, uint64_t hash)
{
	uint32_t i;

	if (hash >= WC_STACK_LABELS && wc_idmap_get(&s->sidx, hash, &i))
		__builtin_prefetch(&s->held[i]);
}

static void fetch_ahead(const struct wc_stacks *s, const struct order *order,
			uint32_t i)
{
	const struct weight *w;

	if (i + 3 * AHEAD < s->nw)
		__builtin_prefetch(&s->w[order[i + 3 * AHEAD].i]);
	if (i + 2 * AHEAD < s->nw) {
		w = &s->w[order[i + 2 * AHEAD].i];
		wc_idmap_prefetch(&s->sidx, w->ustack);
		wc_idmap_prefetch(&s->sidx, w->kstack);
	}
	if (i + AHEAD < s->nw) {
		w = &s->w[order[i + AHEAD].i];
		fetch_held(s, w->ustack);
		fetch_held(s, w->kstack);
	}
}

void wc_stacks_foreach(struct wc_stacks *s, wc_stack_entry_fn fn, void *arg)
{
	const struct order *order = sort_order(s);
	uint32_t i;

	for (i = 0; i < s->nw; i++) {
		const struct weight *w = &s->w[order[i].i];
		struct wc_stack_entry e;

		fetch_ahead(s, order, i);
		e = (struct wc_stack_entry){
			.group = wc_strtab_str(&s->names, w->group),
			.tgid = w->tgid,
			.kind = w->kind,
			.ustack = w->ustack,
			.kstack = w->kstack,
			.weight = w->weight,
		};
		fn(arg, &e);
	}
}

static void drop_stack(struct wc_stacks *s, uint32_t i)
{
	struct held *h = &s->held[i];

	wc_idmap_del(&s->sidx, h->hash);
	s->bytes -= h->nr * sizeof(uint64_t);
	free(h->ip);
	memset(h, 0, sizeof(*h));
	s->free_list[s->nfree++] = i;
}

void wc_stacks_next_window(struct wc_stacks *s, wc_stack_hash_fn let_go,
			   void *arg)
{
	uint32_t i;

	for (i = 0; i < s->nw; i++)
		wc_idmap_del(&s->widx, s->wkeys[i]);
	s->nw = 0;
	wc_strtab_clear(&s->names);
	for (i = 0; i < s->max_stacks; i++) {
		struct held *h = &s->held[i];

		if (!h->hash)
			continue;
		if (h->gen == s->gen) {
			h->let_go = false;
		} else if (h->let_go) {
			drop_stack(s, i);
		} else {
			h->let_go = true;
			if (let_go)
				let_go(arg, h->hash);
		}
	}
	s->gen++;
	s->reapable = true;
}

void wc_stacks_reap(struct wc_stacks *s)
{
	uint32_t i;

	if (!s->reapable)
		return;
	for (i = 0; i < s->max_stacks; i++)
		if (s->held[i].let_go && s->held[i].gen < s->gen)
			drop_stack(s, i);
	s->reapable = false;
}

void wc_stacks_stats(const struct wc_stacks *s, struct wc_stacks_stats *out)
{
	*out = s->stats;
	out->weights = s->nw;
	out->stacks = s->max_stacks - s->nfree;
	out->stack_bytes = s->bytes;
}
