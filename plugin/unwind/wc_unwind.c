/* wc_unwind.c - see wc_unwind.h. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "unwind/wc_unwind.h"
#include "util/wc_clock.h"

/* The builder's rows are the walk's rows. */
_Static_assert(sizeof(struct wc_cfi_row) == sizeof(struct wc_uw_row),
	       "row size");
_Static_assert(offsetof(struct wc_cfi_row, cfa) ==
			       offsetof(struct wc_uw_row, cfa) &&
		       offsetof(struct wc_cfi_row, rule) ==
			       offsetof(struct wc_uw_row, rule) &&
		       offsetof(struct wc_cfi_row, fp_slot) ==
			       offsetof(struct wc_uw_row, fp_slot),
	       "row layout");

/* Requests looked at per serve. */
#define WANTS_BATCH 64

struct extent {
	uint32_t first, n;
	uint64_t since_ns; /* resting: when freed */
};

struct entry {
	struct wc_uw_key key;
	struct wc_uw_file f; /* as put */
	uint64_t put_ns;
	uint64_t expires_ns; /* 0: until evicted */
};

struct wc_unwind {
	struct wc_uw_kernel k;
	struct wc_sym_src *src;
	struct wc_cfi_limits lim;
	struct entry *ents;
	size_t nents, ents_max;
	struct extent *free; /* sorted by first, none adjacent */
	size_t nfree, free_cap;
	struct extent *rest; /* in the order freed */
	size_t nrest, rest_cap;
	uint64_t idle_at; /* when entries are next looked at for idleness */
	struct wc_uw_key keys[WANTS_BATCH];
	struct wc_uw_want wants[WANTS_BATCH];
	struct wc_unwind_stats st;
};

/* Room for need extents in *a.  Extents are at least a row each, and
 * free and resting ones never overlap: never more than the array's rows
 * plus one. */
static int grow(struct extent **a, size_t *cap, size_t need)
{
	size_t n = *cap ? *cap : 16;
	struct extent *x;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	x = realloc(*a, n * sizeof(*x));
	if (!x)
		return -1;
	*a = x;
	*cap = n;
	return 0;
}

struct wc_unwind *wc_unwind_new(const struct wc_uw_kernel *k,
				struct wc_sym_src *src,
				const struct wc_cfi_limits *lim)
{
	struct wc_unwind *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->k = *k;
	u->src = src;
	u->lim = *lim;
	/* and its index beside it */
	if (u->lim.rows_max > (uint64_t)k->nrows * 8 / 9)
		u->lim.rows_max = (uint32_t)((uint64_t)k->nrows * 8 / 9);
	u->ents_max = (size_t)k->nfiles * 7 / 8;
	u->ents = calloc(u->ents_max ? u->ents_max : 1, sizeof(*u->ents));
	if (!u->ents || grow(&u->free, &u->free_cap, 1) ||
	    grow(&u->rest, &u->rest_cap, 1)) {
		wc_unwind_free(u);
		return NULL;
	}
	if (k->nrows) {
		u->free[0] = (struct extent){.first = 0, .n = k->nrows};
		u->nfree = 1;
	}
	u->st.rows_cap = k->nrows;
	return u;
}

void wc_unwind_free(struct wc_unwind *u)
{
	if (!u)
		return;
	free(u->ents);
	free(u->free);
	free(u->rest);
	free(u);
}

/* --- rows ------------------------------------------------------------------ */

/* First fit: the first row of n, or -1. */
static int64_t rows_take(struct wc_unwind *u, uint32_t n)
{
	size_t i;

	for (i = 0; i < u->nfree; i++) {
		struct extent *x = &u->free[i];
		uint32_t first = x->first;

		if (x->n < n)
			continue;
		x->first += n;
		x->n -= n;
		if (x->n == 0) {
			memmove(x, x + 1, (u->nfree - i - 1) * sizeof(*x));
			u->nfree--;
		}
		u->st.rows_used += n;
		return first;
	}
	return -1;
}

/* Back to use, merged with its neighbours. */
static void rows_give(struct wc_unwind *u, uint32_t first, uint32_t n)
{
	size_t i = 0;
	struct extent *prev, *next;

	while (i < u->nfree && u->free[i].first < first)
		i++;
	prev = i ? &u->free[i - 1] : NULL;
	next = i < u->nfree ? &u->free[i] : NULL;
	if (prev && prev->first + prev->n == first) {
		prev->n += n;
		if (next && prev->first + prev->n == next->first) {
			prev->n += next->n;
			memmove(next, next + 1,
				(u->nfree - i - 1) * sizeof(*next));
			u->nfree--;
		}
		return;
	}
	if (next && first + n == next->first) {
		next->first = first;
		next->n += n;
		return;
	}
	if (grow(&u->free, &u->free_cap, u->nfree + 1)) {
		u->st.rows_leaked += n; /* out of memory: never reused */
		return;
	}
	memmove(&u->free[i + 1], &u->free[i], (u->nfree - i) * sizeof(*next));
	u->free[i] = (struct extent){.first = first, .n = n};
	u->nfree++;
}

static void rows_rest(struct wc_unwind *u, uint32_t first, uint32_t n,
		      uint64_t now_ns)
{
	u->st.rows_used -= n;
	if (grow(&u->rest, &u->rest_cap, u->nrest + 1)) {
		u->st.rows_leaked += n;
		return;
	}
	u->rest[u->nrest++] =
		(struct extent){.first = first, .n = n, .since_ns = now_ns};
	u->st.rows_resting += n;
}

static void rows_rested(struct wc_unwind *u, uint64_t now_ns)
{
	size_t i = 0, kept = 0;

	for (i = 0; i < u->nrest; i++) {
		struct extent *x = &u->rest[i];

		if (now_ns < x->since_ns + WC_UW_REST_NS) {
			u->rest[kept++] = *x;
			continue;
		}
		rows_give(u, x->first, x->n);
		u->st.rows_resting -= x->n;
	}
	u->nrest = kept;
}

/* --- entries --------------------------------------------------------------- */

static struct entry *find(struct wc_unwind *u, const struct wc_uw_key *k)
{
	size_t i;

	for (i = 0; i < u->nents; i++)
		if (u->ents[i].key.dev == k->dev &&
		    u->ents[i].key.gen == k->gen &&
		    u->ents[i].key.ino == k->ino)
			return &u->ents[i];
	return NULL;
}

/* An entry the kernel may still hold keeps its rows out of use for
 * good: a walk would read another file's rows as its own. */
static void drop(struct wc_unwind *u, struct entry *e, uint64_t now_ns)
{
	bool gone = u->k.del(u->k.ctx, &e->key) == 0;
	uint32_t n = wc_uw_slots(&e->f);

	if (e->f.state == WC_UW_ROWS) {
		if (gone) {
			rows_rest(u, e->f.first, n, now_ns);
		} else {
			u->st.rows_used -= n;
			u->st.rows_leaked += n;
		}
		u->st.tables--;
	}
	*e = u->ents[--u->nents];
}

/* When a walk last used e, as far as we know. */
static uint64_t last_use(struct wc_unwind *u, const struct entry *e)
{
	struct wc_uw_file f;

	if (u->k.get(u->k.ctx, &e->key, &f) == 0 && f.used_ns > e->put_ns)
		return f.used_ns;
	return e->put_ns;
}

/* Walks run on while we serve: a use after now is one now. */
static uint64_t last_use_by(struct wc_unwind *u, const struct entry *e,
			    uint64_t now_ns)
{
	uint64_t use = last_use(u, e);

	return use < now_ns ? use : now_ns;
}

/* The entry walks used least recently, with rows only if rows says so;
 * NULL if none is colder than now - hot_ns. */
static struct entry *coldest(struct wc_unwind *u, bool rows, uint64_t now_ns,
			     uint64_t hot_ns)
{
	struct entry *best = NULL;
	uint64_t best_use = now_ns > hot_ns ? now_ns - hot_ns : 0, use;
	size_t i;

	for (i = 0; i < u->nents; i++) {
		struct entry *e = &u->ents[i];

		if (rows && e->f.state != WC_UW_ROWS)
			continue;
		use = last_use_by(u, e, now_ns);
		if (use < best_use || (!best && use == best_use && !hot_ns)) {
			best = e;
			best_use = use;
		}
	}
	return best;
}

/* A place for one more entry. */
static void keep_entries(struct wc_unwind *u, uint64_t now_ns)
{
	struct entry *e;

	while (u->nents >= u->ents_max && u->nents &&
	       (e = coldest(u, false, now_ns, 0)) != NULL) {
		drop(u, e, now_ns);
		u->st.evicted++;
	}
}

/* Rows in use under 7/8 of the array, if cold files allow. */
static void keep_rows(struct wc_unwind *u, uint64_t now_ns)
{
	struct entry *e;

	while (u->st.rows_used > (uint64_t)u->k.nrows * 7 / 8 &&
	       (e = coldest(u, true, now_ns, WC_UW_HOT_NS)) != NULL) {
		drop(u, e, now_ns);
		u->st.evicted++;
	}
}

static void expire(struct wc_unwind *u, uint64_t now_ns)
{
	size_t i = 0;

	while (i < u->nents) {
		struct entry *e = &u->ents[i];

		if (e->expires_ns && e->expires_ns <= now_ns)
			drop(u, e, now_ns); /* the last one moved to i */
		else
			i++;
	}
}

/* Tables no walk used for WC_UW_IDLE_NS: their files are no longer
 * mapped by anyone, or by nobody whose stacks are taken.  Looked at every
 * WC_UW_IDLE_EVERY_NS only: each look is a lookup in the kernel's map. */
static void drop_idle(struct wc_unwind *u, uint64_t now_ns)
{
	size_t i = 0;

	if (now_ns < u->idle_at)
		return;
	u->idle_at = now_ns + WC_UW_IDLE_EVERY_NS;
	while (i < u->nents) {
		struct entry *e = &u->ents[i];

		if (e->f.state == WC_UW_ROWS &&
		    last_use_by(u, e, now_ns) + WC_UW_IDLE_NS <= now_ns) {
			drop(u, e, now_ns); /* the last one moved to i */
			u->st.idle++;
		} else {
			i++;
		}
	}
}

static void add(struct wc_unwind *u, const struct wc_uw_key *k,
		const struct wc_uw_file *f, uint64_t now_ns, uint64_t expires)
{
	struct entry *e;

	keep_entries(u, now_ns);
	if (u->nents >= u->ents_max)
		return; /* no room even for this: the walk asks again */
	/* not put: nothing to keep (the walk asks again) */
	if (u->k.put(u->k.ctx, k, f))
		return;
	e = &u->ents[u->nents++];
	*e = (struct entry){
		.key = *k, .f = *f, .put_ns = now_ns, .expires_ns = expires};
	if (f->state == WC_UW_ROWS)
		u->st.tables++;
}

static void without(struct wc_unwind *u, const struct wc_uw_key *k,
		    enum wc_uw_why why, uint64_t now_ns, uint64_t retry_ns)
{
	struct wc_uw_file f = {.state = WC_UW_NONE, .why = why};

	u->st.without[why]++;
	add(u, k, &f, now_ns, retry_ns ? now_ns + retry_ns : 0);
}

/* Cold files give their rows for n more, usable once they rested: the
 * file that needs them is asked for again after that. */
static int by_first(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* The longest run of rows free once all resting ones have rested: room
 * in rows alone is not room for one table when they are in pieces. */
static uint32_t longest_once_rested(struct wc_unwind *u)
{
	size_t n = u->nfree + u->nrest, i;
	struct extent *all = malloc((n ? n : 1) * sizeof(*all));
	uint32_t best = 0, run = 0, end = 0;

	if (!all)
		return 0;
	memcpy(all, u->free, u->nfree * sizeof(*all));
	memcpy(all + u->nfree, u->rest, u->nrest * sizeof(*all));
	qsort(all, n, sizeof(*all), by_first);
	for (i = 0; i < n; i++) {
		run = i && all[i].first == end ? run + all[i].n : all[i].n;
		end = all[i].first + all[i].n;
		if (run > best)
			best = run;
	}
	free(all);
	return best;
}

/* Cold files out until n places will be free in a run once rested:
 * whether they will. */
static bool make_room(struct wc_unwind *u, uint32_t n, uint64_t now_ns)
{
	struct entry *e;

	while (longest_once_rested(u) < n &&
	       (e = coldest(u, true, now_ns, WC_UW_HOT_NS)) != NULL) {
		drop(u, e, now_ns);
		u->st.evicted++;
	}
	return longest_once_rested(u) >= n;
}

/* --- requests -------------------------------------------------------------- */

void wc_uw_index_shape(const struct wc_cfi_table *t, struct wc_uw_file *f)
{
	uint64_t lo = t->rows[0].off, hi = t->rows[t->n - 1].off;
	uint64_t most = t->n / 4 ? t->n / 4 : 1;
	uint32_t shift = WC_UW_BSHIFT_MIN;

	/* at 32, one bucket: offsets are 32 bits */
	while ((hi >> shift) - (lo >> shift) + 1 > most && shift < 32)
		shift++;
	f->bshift = shift;
	f->bbase = (uint32_t)(lo >> shift);
	f->buckets = (uint32_t)((hi >> shift) - (lo >> shift) + 1);
}

/* Write t's index after its rows at f->first. */
static void index_fill(struct wc_unwind *u, const struct wc_cfi_table *t,
		       const struct wc_uw_file *f)
{
	char *at = (char *)&u->k.rows[f->first + f->n];
	uint32_t b, row = 0, pad = 0;

	for (b = 0; b < f->buckets; b++) {
		uint64_t start = (uint64_t)(f->bbase + b) << f->bshift;

		while (row + 1 < t->n && t->rows[row + 1].off <= start)
			row++;
		memcpy(at + 4 * (size_t)b, &row, sizeof(row));
	}
	if (f->buckets & 1) /* the last place's other half */
		memcpy(at + 4 * (size_t)f->buckets, &pad, sizeof(pad));
}

static void place(struct wc_unwind *u, const struct wc_uw_key *k,
		  const struct wc_cfi_table *t, uint64_t now_ns)
{
	struct wc_uw_file f = {.state = WC_UW_ROWS, .n = (uint32_t)t->n};
	int64_t first;
	uint32_t n;

	wc_uw_index_shape(t, &f);
	n = wc_uw_slots(&f);
	first = rows_take(u, n);
	if (first < 0) {
		/* asked again once the room rested; where the files in use
		 * are all hot, not before they may have cooled (each ask
		 * builds the table anew) */
		without(u, k, WC_UW_NO_ROOM, now_ns,
			make_room(u, n, now_ns) ? 2 * WC_UW_REST_NS
						: WC_UW_RETRY_NS);
		return;
	}
	f.first = (uint32_t)first;
	memcpy(&u->k.rows[f.first], t->rows, t->n * sizeof(*t->rows));
	index_fill(u, t, &f);
	add(u, k, &f, now_ns, 0);
	if (!find(u, k))
		rows_rest(u, f.first, n, now_ns);
	else
		u->st.built++;
}

static uint64_t helper_failures(struct wc_unwind *u)
{
	struct wc_sym_src_stats s;

	wc_sym_src_stats(u->src, &s);
	return s.stalls + s.crashes;
}

/* Serve one request: false if the helper was not asked (the file is
 * marked to be asked for again soon). */
static bool serve_one(struct wc_unwind *u, const struct wc_uw_key *k,
		      const struct wc_uw_want *w, uint64_t now_ns)
{
	struct wc_proc_map m = {
		.start = w->start,
		.end = w->end,
		.ino = k->ino,
		.dev_major = (uint32_t)(k->dev >> 20),
		.dev_minor = (uint32_t)(k->dev & 0xfffff),
		.exec = true,
		.path = "",
	};
	struct entry *e = find(u, k);
	struct wc_cfi_table t;
	uint64_t failures = helper_failures(u), t0;
	int rc, err;

	if (e) {
		/* A walk found no entry where we put one. */
		u->k.put(u->k.ctx, k, &e->f);
		u->st.lost++;
		return true;
	}
	t0 = wc_clock_ns(CLOCK_MONOTONIC);
	rc = wc_sym_src_cfi(u->src, (pid_t)w->pid, &m, &u->lim, &t);
	err = errno;
	u->st.build_ns += wc_clock_ns(CLOCK_MONOTONIC) - t0;
	if (rc == 0) {
		place(u, k, &t, now_ns);
		wc_cfi_free(&t);
		return true;
	}
	switch (err) {
	case EAGAIN:
		if (wc_sym_src_cannot_start(u->src)) {
			/* frame pointers stand in, as without tables */
			without(u, k, WC_UW_NO_HELPER, now_ns, WC_UW_RETRY_NS);
			break;
		}
		if (helper_failures(u) == failures) {
			/* Not asked (its share spent, stopped, or the file
			 * made it stall before): later. */
			without(u, k, WC_UW_DEFERRED, now_ns, WC_UW_SOON_NS);
			return false;
		}
		without(u, k, WC_UW_SLOW, now_ns, WC_UW_RETRY_NS);
		break;
	case ESRCH:
		/* Gone: a walk asks again, but not at once. */
		without(u, k, WC_UW_GONE, now_ns, WC_UW_SOON_NS);
		break;
	case ESTALE:
		without(u, k, WC_UW_GONE, now_ns, WC_UW_MOVED_NS);
		break;
	case ENOMEM:
		without(u, k, WC_UW_DEFERRED, now_ns, WC_UW_SOON_NS);
		break;
	case ENOENT:
		without(u, k, WC_UW_NO_CFI, now_ns, 0);
		break;
	case EFBIG:
	case E2BIG:
		without(u, k, WC_UW_TOO_BIG, now_ns, 0);
		break;
	case ETIME:
		without(u, k, WC_UW_SLOW, now_ns, WC_UW_RETRY_NS);
		break;
	case EACCES:
		without(u, k, WC_UW_REFUSED, now_ns, WC_UW_RETRY_NS);
		break;
	default:
		without(u, k, WC_UW_UNREADABLE, now_ns, 0);
	}
	return true;
}

unsigned wc_unwind_serve(struct wc_unwind *u, uint64_t now_ns,
			 uint64_t budget_ns)
{
	uint64_t t0 = wc_clock_ns(CLOCK_MONOTONIC);
	unsigned served = 0;
	bool deferred;
	size_t n, i;

	rows_rested(u, now_ns);
	expire(u, now_ns);
	drop_idle(u, now_ns);
	n = u->k.wants(u->k.ctx, u->keys, u->wants, WANTS_BATCH);
	for (i = 0; i < n; i++) {
		if (served && wc_clock_ns(CLOCK_MONOTONIC) - t0 > budget_ns)
			break;
		deferred = !serve_one(u, &u->keys[i], &u->wants[i], now_ns);
		u->k.unwant(u->k.ctx, &u->keys[i]);
		u->st.wants++;
		served++;
		if (deferred)
			break; /* the helper takes no more now */
	}
	keep_rows(u, now_ns);
	return served;
}

void wc_unwind_stats(const struct wc_unwind *u, struct wc_unwind_stats *out)
{
	*out = u->st;
	out->entries = u->nents;
}
