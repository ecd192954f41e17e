/* wc_account.c - see wc_account.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/wc_account.h"
#include "util/wc_idmap.h"
#include "util/wc_log.h"
#include "util/wc_name.h"

#define NONE UINT32_MAX
#define EVICT_AFTER_READS 5
/* A name without a slot takes the slot of the quietest automatic group
 * when it was more than TAKE_OVER times as busy (not asleep) in a read as
 * that group has been on average, and busy for TAKE_MIN_NS at least; a
 * group keeps a slot HOLD_READS reads at least, so series stay stable. */
#define TAKE_OVER 2
#define TAKE_MIN_NS 1000000ULL
#define HOLD_READS 10
#define SCORE_SHIFT 3	/* score: busy ns a read, averaged over ~8, x8 */
#define TAKEN_LOGGED 10 /* then only counted */
#define LOST_AFTER_READS 2
#define RECHECK_READS 3 /* a group decided from the name alone, asked again */
#define LOST_LOGGED 10	/* then only counted */

struct thread {
	uint64_t id; /* 0: free */
	uint64_t last_ns[WC_NSLOTS];
	uint64_t last_samples;
	uint32_t proc;
	uint32_t seen_gen;
};

enum proc_state {
	P_NEW,	   /* group not decided yet (or its name changed) */
	P_GROUP,   /* counted in group */
	P_WAITING, /* automatic group without a slot: counted in "other" */
	P_OTHER,   /* unmatched, counted in "other" */
	P_DROP,	   /* unmatched and Unmatched "drop" */
};

struct proc {
	uint64_t key; /* 0: free */
	uint64_t d_ns[WC_NSLOTS];
	uint64_t d_samples;
	uint32_t tgid;
	uint32_t refs; /* live threads pointing here */
	uint32_t group;
	uint32_t threads_seen;
	uint64_t read_at_ns; /* its first live thread's stamp this read */
	uint8_t state;
	uint8_t rechecks; /* reads left to decide the group again */
	bool kthread;
	bool dead; /* no thread left: freed at the next begin */
	char comm[WC_COMM_LEN];
	char name[WC_NAME_MAX]; /* the automatic group it waits for */
};

struct group {
	char name[WC_NAME_MAX];
	bool used;
	bool explicit;
	uint32_t procs;
	uint32_t idle_reads;
	uint32_t threads;
	uint64_t d_ns[WC_NSLOTS];
	uint64_t d_samples;
	uint64_t cum_ns[WC_NSLOTS];
	uint64_t cum_samples;
	uint64_t serial; /* which life of the slot: counters restart per life */
	uint64_t score;	 /* busy time a read, see SCORE_SHIFT */
	uint32_t held_reads;
	uint64_t read_lo, read_hi; /* its processes' stamps, this read (hi 0:
				      none) */
	bool unflushed; /* grew since the last wc_account_flushed() */
};

/* A slab of fixed-size entries with a free list; entries are scanned only
 * up to the high-water mark. */
struct slab {
	uint32_t cap;
	uint32_t hi;
	uint32_t free_head;
	uint32_t count;
	uint32_t *next_free; /* cap entries */
};

struct waiting {
	struct proc *p;
	uint64_t busy_ns; /* of the whole name, on the first of a run */
};

/* Where a thread id's thread was last found, by thread id modulo this:
 * a read meets the threads of a process one after another, and their ids
 * are close, so these slots are read in order where the hash table's are
 * scattered.  A slot is only a guess, checked against the thread's id. */
#define BY_TID_SLOTS 65536

struct wc_account {
	const struct wc_selector *sel;
	uint32_t gen;
	int64_t realtime_off; /* see wc_account_clock */
	struct thread *threads;
	struct slab tslab;
	struct wc_idmap thread_ids;
	uint32_t *by_tid; /* BY_TID_SLOTS indices into threads */
	struct proc *procs;
	struct slab pslab;
	struct wc_idmap proc_keys;
	struct wc_idmap tgids; /* tgid -> newest process with it */
	struct group *groups;  /* explicit, then other, then automatic */
	uint32_t ngroups;
	uint32_t nexplicit;
	uint32_t other;
	bool other_used;
	struct waiting *scratch; /* pslab.cap entries, for ranking */
	uint64_t serials;	 /* group lives handed out */
	wc_proc_gone_fn gone;
	void *gone_arg;
	struct wc_account_stats stats;
};

static int slab_init(struct slab *s, uint32_t cap)
{
	*s = (struct slab){.cap = cap, .free_head = NONE};
	s->next_free = calloc(cap, sizeof(*s->next_free));
	return s->next_free ? 0 : -1;
}

static uint32_t slab_take(struct slab *s)
{
	uint32_t i;

	if (s->free_head != NONE) {
		i = s->free_head;
		s->free_head = s->next_free[i];
	} else if (s->hi < s->cap) {
		i = s->hi++;
	} else {
		return NONE;
	}
	s->count++;
	return i;
}

static void slab_put(struct slab *s, uint32_t i)
{
	s->next_free[i] = s->free_head;
	s->free_head = i;
	s->count--;
}

int wc_account_new(const struct wc_account_opts *o, struct wc_account **out)
{
	const struct wc_config *cfg = o->selector->cfg;
	struct wc_account *a = calloc(1, sizeof(*a));
	uint32_t i;

	if (!a)
		return -1;
	a->sel = o->selector;
	a->gen = 1;
	a->nexplicit = (uint32_t)cfg->nsel;
	a->other = a->nexplicit;
	a->ngroups = a->nexplicit + 1 + o->max_groups;
	a->threads = calloc(o->max_threads, sizeof(*a->threads));
	a->procs = calloc(o->max_threads, sizeof(*a->procs));
	a->groups = calloc(a->ngroups, sizeof(*a->groups));
	a->scratch = calloc(o->max_threads, sizeof(*a->scratch));
	a->by_tid = calloc(BY_TID_SLOTS, sizeof(*a->by_tid));
	if (!a->threads || !a->procs || !a->groups || !a->scratch ||
	    !a->by_tid || slab_init(&a->tslab, o->max_threads) ||
	    slab_init(&a->pslab, o->max_threads) ||
	    wc_idmap_init(&a->thread_ids, o->max_threads) ||
	    wc_idmap_init(&a->proc_keys, o->max_threads) ||
	    wc_idmap_init(&a->tgids, o->max_threads)) {
		wc_account_free(a);
		return -1;
	}
	for (i = 0; i < a->nexplicit; i++) {
		snprintf(a->groups[i].name, WC_NAME_MAX, "%s",
			 cfg->sel[i].label);
		a->groups[i].used = true;
		a->groups[i].explicit = true;
	}
	snprintf(a->groups[a->other].name, WC_NAME_MAX, "%s", WC_OTHER_GROUP);
	a->groups[a->other].used = true;
	/* With selections, "other" is part of the configured picture. */
	a->other_used = a->nexplicit > 0 && cfg->unmatched_other;
	*out = a;
	return 0;
}

void wc_account_free(struct wc_account *a)
{
	if (!a)
		return;
	wc_idmap_free(&a->thread_ids);
	wc_idmap_free(&a->proc_keys);
	wc_idmap_free(&a->tgids);
	free(a->threads);
	free(a->procs);
	free(a->groups);
	free(a->scratch);
	free(a->by_tid);
	free(a->tslab.next_free);
	free(a->pslab.next_free);
	free(a);
}

static void free_proc(struct wc_account *a, struct proc *p);

void wc_account_begin(struct wc_account *a)
{
	uint32_t i;

	a->gen++;
	for (i = 0; i < a->pslab.hi; i++)
		if (a->procs[i].key && a->procs[i].dead && !a->procs[i].refs)
			free_proc(a, &a->procs[i]);
	for (i = 0; i < a->ngroups; i++) {
		struct group *g = &a->groups[i];

		g->threads = 0;
		g->d_samples = 0;
		memset(g->d_ns, 0, sizeof(g->d_ns));
		g->read_hi = 0; /* none yet: read_lo is then unset */
	}
}

void wc_account_clock(struct wc_account *a, int64_t realtime_off_ns)
{
	a->realtime_off = realtime_off_ns;
}

/* PIDs are below 2^22 (PID_MAX_LIMIT); the start time tells reuses apart. */
static uint64_t proc_key(uint32_t tgid, uint64_t leader_start_ns)
{
	return ((leader_start_ns & ((1ULL << 42) - 1)) << 22) |
	       (tgid & ((1u << 22) - 1));
}

static struct proc *proc_get(struct wc_account *a, const struct wc_task_rec *r,
			     uint32_t *index)
{
	uint64_t key = proc_key(r->tgid, r->leader_start_ns);
	struct proc *p;
	uint32_t i;

	if (key == 0)
		return NULL;
	if (wc_idmap_get(&a->proc_keys, key, &i)) {
		*index = i;
		return &a->procs[i];
	}
	i = slab_take(&a->pslab);
	if (i == NONE)
		return NULL;
	if (wc_idmap_put(&a->proc_keys, key, i)) {
		slab_put(&a->pslab, i);
		return NULL;
	}
	p = &a->procs[i];
	memset(p, 0, sizeof(*p));
	wc_idmap_put(&a->tgids, r->tgid, i); /* the newest wins */
	p->key = key;
	p->tgid = r->tgid;
	p->state = P_NEW;
	p->group = NONE;
	p->rechecks = RECHECK_READS;
	p->kthread = r->flags & WC_REC_KTHREAD;
	memcpy(p->comm, r->leader_comm, WC_COMM_LEN);
	*index = i;
	return p;
}

static struct thread *thread_new(struct wc_account *a, uint64_t id,
				 uint32_t proc)
{
	struct thread *t;
	uint32_t i;

	i = slab_take(&a->tslab);
	if (i == NONE)
		return NULL;
	if (wc_idmap_put(&a->thread_ids, id, i)) {
		slab_put(&a->tslab, i);
		return NULL;
	}
	t = &a->threads[i];
	memset(t, 0, sizeof(*t));
	t->id = id;
	t->proc = proc;
	a->procs[proc].refs++;
	return t;
}

static void thread_forget(struct wc_account *a, struct thread *t)
{
	uint32_t i = (uint32_t)(t - a->threads);

	wc_idmap_del(&a->thread_ids, t->id);
	a->procs[t->proc].refs--;
	t->id = 0;
	slab_put(&a->tslab, i);
}

/* Counters only move forward.  The iterator's in-progress estimate can run
 * a few microseconds ahead of what the scheduler charges later (it reads
 * another CPU's clock); keeping the maximum means such a step is counted
 * once, early, and never twice. */
static uint64_t forward(struct wc_account *a, uint64_t now, uint64_t *last)
{
	uint64_t d = 0;

	if (now >= *last)
		d = now - *last;
	else
		a->stats.regressions++;
	if (now > *last)
		*last = now;
	return d;
}

static void add_delta(struct wc_account *a, struct proc *p,
		      const struct wc_task_rec *r, struct thread *t)
{
	uint64_t zero[WC_NSLOTS + 1] = {0};
	uint64_t *last_ns = t ? t->last_ns : zero;
	uint64_t *last_samples = t ? &t->last_samples : &zero[WC_NSLOTS];
	int k;

	for (k = 0; k < WC_NSLOTS; k++)
		p->d_ns[k] += forward(a, r->time_ns[k], &last_ns[k]);
	p->d_samples += forward(a, r->samples, last_samples);
}

void wc_account_prefetch(const struct wc_account *a,
			 const struct wc_task_rec *r)
{
	__builtin_prefetch(&a->threads[a->by_tid[r->tid % BY_TID_SLOTS]]);
}

/* The thread a record is about, if it is tracked. */
static struct thread *thread_of(struct wc_account *a,
				const struct wc_task_rec *r)
{
	uint32_t *guess = &a->by_tid[r->tid % BY_TID_SLOTS], i;

	if (r->id && a->threads[*guess].id == r->id)
		return &a->threads[*guess];
	if (!wc_idmap_get(&a->thread_ids, r->id, &i))
		return NULL;
	*guess = i;
	return &a->threads[i];
}

void wc_account_prefetch_group(const struct wc_account *a, uint32_t tgid)
{
	wc_idmap_prefetch(&a->tgids, tgid);
}

static void undecide(struct wc_account *a, struct proc *p)
{
	if (p->state != P_NEW && p->group != NONE)
		a->groups[p->group].procs--;
	p->state = P_NEW;
	p->group = NONE;
}

static void record(struct wc_account *a, const struct wc_task_rec *r, bool late)
{
	bool exited = r->flags & WC_REC_EXITED;
	struct thread *t = thread_of(a, r);
	struct proc *p;
	uint32_t pi;

	if (t) {
		pi = t->proc;
		p = &a->procs[pi];
	} else {
		p = proc_get(a, r, &pi);
		if (p && !exited)
			t = thread_new(a, r->id, pi);
		if (t)
			a->by_tid[r->tid % BY_TID_SLOTS] =
				(uint32_t)(t - a->threads);
		if (!p || (!exited && !t)) {
			a->stats.threads_untracked++;
			return;
		}
	}
	add_delta(a, p, r, t);
	if (r->read_ns && !p->read_at_ns)
		p->read_at_ns = r->read_ns + (uint64_t)a->realtime_off;
	/* a late record counts in the next read, whose begin must not free
	 * its process */
	p->dead = false;
	if (!t || t->seen_gen != a->gen || late)
		p->threads_seen++;
	if (memcmp(p->comm, r->leader_comm, WC_COMM_LEN) != 0) {
		/* exec or a rename: decide the group again */
		memcpy(p->comm, r->leader_comm, WC_COMM_LEN);
		undecide(a, p);
		p->rechecks = RECHECK_READS;
	}
	if (!t)
		return;
	if (exited) {
		thread_forget(a, t);
		return;
	}
	t->seen_gen = a->gen;
}

void wc_account_record(struct wc_account *a, const struct wc_task_rec *r)
{
	record(a, r, false);
}

void wc_account_record_late(struct wc_account *a, const struct wc_task_rec *r)
{
	if (r->flags & WC_REC_EXITED)
		record(a, r, true);
}

static void sweep_threads(struct wc_account *a)
{
	uint32_t i;

	for (i = 0; i < a->tslab.hi; i++) {
		struct thread *t = &a->threads[i];

		if (t->id && a->gen - t->seen_gen >= LOST_AFTER_READS) {
			if (a->stats.threads_lost++ < LOST_LOGGED)
				wc_log(WC_LOG_INFO,
				       "a thread of process %u (%.*s) vanished "
				       "without a final record (threads_lost)",
				       a->procs[t->proc].tgid, WC_COMM_LEN,
				       a->procs[t->proc].comm);
			thread_forget(a, t);
		}
	}
}

static uint32_t find_auto_group(const struct wc_account *a, const char *name)
{
	uint32_t i;

	for (i = a->other + 1; i < a->ngroups; i++)
		if (a->groups[i].used && strcmp(a->groups[i].name, name) == 0)
			return i;
	return NONE;
}

static void join_group(struct wc_account *a, struct proc *p, uint32_t g)
{
	p->state = P_GROUP;
	p->group = g;
	a->groups[g].procs++;
}

static void classify(struct wc_account *a, struct proc *p)
{
	size_t index = 0;
	bool unsure;
	uint32_t g;

	switch (wc_select(a->sel, p->tgid, p->comm, p->kthread, &index, p->name,
			  &unsure)) {
	case WC_SEL_EXPLICIT:
		join_group(a, p, (uint32_t)index);
		break;
	case WC_SEL_AUTO:
		g = find_auto_group(a, p->name);
		if (g != NONE)
			join_group(a, p, g);
		else
			p->state = P_WAITING;
		break;
	case WC_SEL_OTHER:
		p->state = P_OTHER;
		break;
	case WC_SEL_DROP:
		p->state = P_DROP;
		break;
	}
	if (!unsure)
		p->rechecks = 0;
}

/* Time that is not sleep: what makes a group worth a slot. */
static uint64_t busy_of(const uint64_t *d_ns)
{
	return d_ns[WC_T_ONCPU] + d_ns[WC_T_RUNQ] + d_ns[WC_T_BLOCKED] +
	       d_ns[WC_T_STEAL];
}

static int by_name(const void *x, const void *y)
{
	const struct waiting *a = x, *b = y;

	return strcmp(a->p->name, b->p->name);
}

static int by_busy_desc(const void *x, const void *y)
{
	const struct waiting *a = x, *b = y;

	if (a->busy_ns != b->busy_ns)
		return a->busy_ns < b->busy_ns ? 1 : -1;
	return strcmp(a->p->name, b->p->name);
}

static uint32_t free_auto_slot(struct wc_account *a)
{
	uint32_t i;

	for (i = a->other + 1; i < a->ngroups; i++)
		if (!a->groups[i].used)
			return i;
	return NONE;
}

static uint32_t open_group(struct wc_account *a, const char *name)
{
	uint32_t g = free_auto_slot(a);

	if (g == NONE)
		return NONE;
	memset(&a->groups[g], 0, sizeof(a->groups[g]));
	snprintf(a->groups[g].name, WC_NAME_MAX, "%s", name);
	a->groups[g].used = true;
	a->groups[g].serial = ++a->serials;
	return g;
}

/* The automatic group with the lowest score that has held its slot long
 * enough to give it up. */
static uint32_t quietest_group(const struct wc_account *a)
{
	uint32_t i, best = NONE;

	for (i = a->other + 1; i < a->ngroups; i++) {
		const struct group *g = &a->groups[i];

		if (g->used && g->held_reads >= HOLD_READS &&
		    (best == NONE || g->score < a->groups[best].score))
			best = i;
	}
	return best;
}

/* Slot g goes to a busier name: its processes wait in "other". */
static void take_over(struct wc_account *a, uint32_t g, const char *name)
{
	uint32_t k;

	for (k = 0; k < a->pslab.hi; k++) {
		struct proc *p = &a->procs[k];

		if (p->key && p->state == P_GROUP && p->group == g)
			p->state = P_WAITING;
	}
	if (a->stats.groups_taken_over++ < TAKEN_LOGGED)
		wc_log(WC_LOG_INFO,
		       "group %s gives its slot to %s, busier (MaxGroups "
		       "reached; %s waits in \"other\")%s",
		       a->groups[g].name, name, a->groups[g].name,
		       a->stats.groups_taken_over == TAKEN_LOGGED
			       ? "; further take-overs are only counted"
			       : "");
	a->groups[g].used = false;
}

/* The busiest waiting name w may take the quietest group's slot. */
static void maybe_take_over(struct wc_account *a, const struct waiting *w)
{
	uint32_t g = quietest_group(a);

	if (g == NONE || w->busy_ns < TAKE_MIN_NS ||
	    (w->busy_ns << SCORE_SHIFT) <= TAKE_OVER * a->groups[g].score)
		return;
	take_over(a, g, w->p->name);
	g = open_group(a, w->p->name);
	if (g != NONE)
		a->groups[g].score = w->busy_ns << SCORE_SHIFT;
}

/* Give free slots to the waiting names with the most busy time this
 * read, and the quietest group's to the next if it is much busier. */
static void place_waiting(struct wc_account *a)
{
	struct waiting *w = a->scratch;
	size_t n = 0, runs = 0, i, j;
	uint32_t k;

	for (k = 0; k < a->pslab.hi; k++)
		if (a->procs[k].key && a->procs[k].state == P_WAITING)
			w[n++] = (struct waiting){.p = &a->procs[k]};
	if (n == 0)
		return;
	qsort(w, n, sizeof(*w), by_name);
	/* Collapse each run of one name into its first entry... */
	for (i = 0; i < n; i = j) {
		uint64_t sum = 0;

		for (j = i; j < n && strcmp(w[j].p->name, w[i].p->name) == 0;
		     j++)
			sum += busy_of(w[j].p->d_ns);
		w[runs++] = (struct waiting){.p = w[i].p, .busy_ns = sum};
	}
	/* ...rank the names, and admit as many as there are slots. */
	qsort(w, runs, sizeof(*w), by_busy_desc);
	for (i = 0; i < runs; i++)
		if (open_group(a, w[i].p->name) == NONE)
			break;
	if (i < runs)
		maybe_take_over(a, &w[i]);
	for (k = 0; k < a->pslab.hi; k++) {
		struct proc *p = &a->procs[k];
		uint32_t g;

		if (!p->key || p->state != P_WAITING)
			continue;
		g = find_auto_group(a, p->name);
		if (g != NONE)
			join_group(a, p, g);
	}
}

void wc_account_on_proc_gone(struct wc_account *a, wc_proc_gone_fn fn,
			     void *arg)
{
	a->gone = fn;
	a->gone_arg = arg;
}

static void free_proc(struct wc_account *a, struct proc *p)
{
	uint32_t i = (uint32_t)(p - a->procs), t;

	if (a->gone)
		a->gone(a->gone_arg, p->tgid);
	if (p->state == P_GROUP)
		a->groups[p->group].procs--;
	wc_idmap_del(&a->proc_keys, p->key);
	if (wc_idmap_get(&a->tgids, p->tgid, &t) && t == i)
		wc_idmap_del(&a->tgids, p->tgid);
	p->key = 0;
	slab_put(&a->pslab, i);
}

static void fold_proc(struct wc_account *a, struct proc *p)
{
	struct group *g = NULL;
	int k;

	if (p->state == P_GROUP)
		g = &a->groups[p->group];
	else if (p->state == P_WAITING || p->state == P_OTHER)
		g = &a->groups[a->other];
	if (p->state == P_WAITING)
		a->stats.waiting++;
	if (g) {
		for (k = 0; k < WC_NSLOTS; k++)
			g->d_ns[k] += p->d_ns[k];
		g->d_samples += p->d_samples;
		g->threads += p->threads_seen;
		if (g == &a->groups[a->other] && p->threads_seen)
			a->other_used = true;
		if (p->read_at_ns &&
		    (!g->read_hi || p->read_at_ns < g->read_lo))
			g->read_lo = p->read_at_ns;
		if (p->read_at_ns > g->read_hi)
			g->read_hi = p->read_at_ns;
	}
	p->read_at_ns = 0;
	memset(p->d_ns, 0, sizeof(p->d_ns));
	p->d_samples = 0;
	p->threads_seen = 0;
}

static void fold_procs(struct wc_account *a)
{
	uint32_t i;

	a->stats.waiting = 0;
	for (i = 0; i < a->pslab.hi; i++) {
		struct proc *p = &a->procs[i];

		if (!p->key)
			continue;
		fold_proc(a, p);
		/* kept one more read, so the stacks of its last moments still
		 * find their group */
		p->dead = p->refs == 0;
	}
}

static void age_groups(struct wc_account *a)
{
	uint32_t i;
	int k;

	for (i = 0; i < a->ngroups; i++) {
		struct group *g = &a->groups[i];

		if (!g->used)
			continue;
		for (k = 0; k < WC_NSLOTS; k++)
			g->cum_ns[k] += g->d_ns[k];
		g->cum_samples += g->d_samples;
		g->idle_reads = g->threads ? 0 : g->idle_reads + 1;
		g->score += busy_of(g->d_ns) - (g->score >> SCORE_SHIFT);
		g->held_reads++;
		for (k = 0; k < WC_NSLOTS; k++)
			g->unflushed |= g->d_ns[k] > 0;
		/* a group that grew since the last file stays until the next:
		 * its growth goes into that file, not its weights alone */
		if (i > a->other && g->procs == 0 && !g->unflushed &&
		    g->idle_reads >= EVICT_AFTER_READS)
			g->used = false;
	}
}

void wc_account_end(struct wc_account *a)
{
	uint32_t i;

	sweep_threads(a);
	for (i = 0; i < a->pslab.hi; i++) {
		struct proc *p = &a->procs[i];

		if (!p->key)
			continue;
		/* a ProcessMatch caught in an exec saw no command line yet */
		if (p->state != P_NEW && p->rechecks) {
			p->rechecks--;
			undecide(a, p);
		}
		if (p->state == P_NEW)
			classify(a, p);
	}
	place_waiting(a);
	fold_procs(a);
	age_groups(a);
}

static bool dispatched(const struct wc_account *a, uint32_t i)
{
	if (!a->groups[i].used)
		return false;
	return i != a->other || a->other_used;
}

void wc_account_flushed(struct wc_account *a)
{
	uint32_t i;

	for (i = 0; i < a->ngroups; i++)
		a->groups[i].unflushed = false;
}

void wc_account_foreach(const struct wc_account *a, wc_group_fn fn, void *arg)
{
	uint32_t i;

	for (i = 0; i < a->ngroups; i++) {
		const struct group *g = &a->groups[i];
		struct wc_group_view v;

		if (!dispatched(a, i))
			continue;
		v.name = g->name;
		v.serial = g->serial;
		memcpy(v.time_ns, g->cum_ns, sizeof(v.time_ns));
		v.samples = g->cum_samples;
		v.threads = g->threads;
		v.read_at_ns =
			g->read_hi ? g->read_lo + (g->read_hi - g->read_lo) / 2
				   : 0;
		fn(arg, &v);
	}
}

const char *wc_account_group_of(const struct wc_account *a, uint32_t tgid)
{
	const struct proc *p;
	uint32_t i;

	if (!wc_idmap_get(&a->tgids, tgid, &i))
		return NULL;
	p = &a->procs[i];
	if (p->state == P_GROUP)
		return a->groups[p->group].name;
	if (p->state == P_WAITING || p->state == P_OTHER)
		return a->groups[a->other].name;
	return NULL;
}

bool wc_account_dropped(const struct wc_account *a, uint32_t tgid)
{
	uint32_t i;

	return wc_idmap_get(&a->tgids, tgid, &i) && a->procs[i].state == P_DROP;
}

void wc_account_stats(const struct wc_account *a, struct wc_account_stats *out)
{
	uint32_t i;

	*out = a->stats;
	out->threads = a->tslab.count;
	out->processes = 0;
	for (i = 0; i < a->pslab.hi; i++)
		out->processes += a->procs[i].key && !a->procs[i].dead;
	out->groups = 0;
	for (i = 0; i < a->ngroups; i++)
		out->groups += dispatched(a, i);
}
