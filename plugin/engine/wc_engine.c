/* wc_engine.c - see wc_engine.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <bpf/libbpf.h>

#include "engine/wc_engine.h"
#include "engine/wc_caps.h"
#include "engine/wc_engine_unwind.h"
#include "util/wc_clock.h"
#include "util/wc_log.h"
#include "core/wc_select.h"
#include "sym/wc_sym_src.h"

/* Room in the window for weights and stacks, relative to StackStorage
 * (the kernel's tables, drained every second): a window spans many reads. */
#define WINDOW_FACTOR 8u
#define WINDOW_STACK_BYTES (64u << 20)
/* Stacks let go are freed by a drain that begins this long after, and
 * after a read's walk: a program that found one held just before runs for
 * microseconds, and its weight is drained by then; a wait under way that
 * parked one is named by its record in the walk. */
#define LET_GO_NS 100000000ULL
/* What reading processes and files for symbols may take in a drain (every
 * second, serialised with the read) and in a flush: a host full of
 * hostile mappings slows the names, never the metrics. */
#define DRAIN_SYM_MS 50
#define FLUSH_SYM_MS 1000
/* Processes noted in one drain; beyond, they are noted at once, under
 * the lock. */
#define MAX_NOTES 4096
/* Kernel stacks of waits under way walked at a flush: a host of idle
 * threads walks this many a flush (each wait is walked once). */
#define WAIT_WALKS 16384u
/* Files with unwind tables (or known to have none), and processes whose
 * mappings the walks keep. */
#define UNWIND_FILES 4096u
#define UNWIND_PROCS 2048u

/* A counter of what a bound cost, and when it was last said. */
struct limit {
	uint64_t said;	  /* the count when last said */
	uint64_t said_ns; /* 0: never */
};

#define LIMIT_SAY_NS (60 * 1000000000ULL)

enum limit_kind {
	LIM_EXITS,
	LIM_UNTRACKED,
	LIM_STACKS,
	LIM_WEIGHTS,
	LIM_WINDOW,
	LIM_UNWALKED,
	LIM_SYM_BOUNDS,
	LIM_UNWIND_ROOM,
	LIM_NR
};

struct wc_engine {
	const struct wc_config *cfg;
	struct wc_selector selector;
	struct wc_collector *collector;
	struct wc_account *account;
	uint64_t read_ns;
	uint64_t read_at_ns;	  /* CLOCK_REALTIME, see wc_engine_read_at */
	struct wc_stacks *stacks; /* NULL when stacks are off */
	struct wc_flush *flush;
	time_t next_flush;
	bool flush_due; /* the last read charged waits under way for it */
	uint64_t weights_unowned;
	uint64_t drain_ns, stacks_copied;
	uint64_t let_go_ns; /* when stacks were last let go */
	bool walked;	    /* a read's walk has begun since */
	/* weights drained between reads whose process the account does not
	 * know yet (born since the last read): placed at the next read */
	struct deferred *deferred;
	uint32_t ndeferred, max_deferred;
	/* processes whose mappings the symbolizer should read while they
	 * live: read after the lock is let go, as the helper may be slow */
	pid_t *notes;
	uint32_t nnotes, max_notes;
	bool between_reads;
	/* limits hit, said at most once a minute each (see report_limits) */
	struct limit limits[LIM_NR];
	unsigned caps_missing;
	struct wc_engine_uw *uw; /* NULL: frame pointers only */
	uint64_t uw_map_bytes;
	/* the account and the collector, against an exit drain that may run
	 * while a flush writes (see wc_engine.h) */
	pthread_mutex_t lock;
};

struct deferred {
	struct wc_stack_key k;
	uint64_t w;
};

/* Mark a stack named as in use, if it is held already (one new since
 * comes with the stack table's next drain). */
static void keep_stack(struct wc_engine *e, uint64_t hash)
{
	if (hash >= WC_STACK_LABELS)
		wc_stacks_has(e->stacks, hash);
}

static void on_records(void *arg, const struct wc_task_rec *recs, size_t n)
{
	struct wc_engine *e = arg;
	size_t i;

	/* the threads' entries are scattered: ask for them all first */
	for (i = 0; i < n; i++)
		wc_account_prefetch(e->account, &recs[i]);
	for (i = 0; i < n; i++) {
		wc_account_record(e->account, &recs[i]);
		/* a wait under way will name its parked stack when it ends,
		 * and an owed wait its kernel stack when it is settled: keep
		 * them however long that takes */
		if (!e->stacks)
			continue;
		keep_stack(e, recs[i].parked_ustack);
		keep_stack(e, recs[i].owed_kstack);
	}
}

/* A stack the kernel handed over: kept while weights name it, and the
 * kernel is told, so it names it from then on without storing it again. */
static void on_stack(void *arg, uint64_t hash, const struct wc_stack *st)
{
	struct wc_engine *e = arg;

	e->stacks_copied++;
	if (hash >= WC_STACK_LABELS && wc_stacks_put(e->stacks, hash, st) == 0)
		wc_collector_held(e->collector, hash);
}

static void let_go(void *arg, uint64_t hash)
{
	struct wc_engine *e = arg;

	wc_collector_let_go(e->collector, hash);
}

static void note_later(struct wc_engine *e, pid_t pid)
{
	if (e->nnotes && e->notes[e->nnotes - 1] == pid)
		return;
	if (e->nnotes < e->max_notes)
		e->notes[e->nnotes++] = pid;
	else
		wc_flush_note(e->flush, pid);
}

/* Outside the lock: the symbolizer's helper may take up to its deadline,
 * and exits must drain meanwhile. */
static void note_now(struct wc_engine *e)
{
	uint32_t i;

	for (i = 0; i < e->nnotes; i++) {
		if (i + 4 < e->nnotes)
			wc_flush_prefetch_note(e->flush, e->notes[i + 4]);
		wc_flush_note(e->flush, e->notes[i]);
	}
	e->nnotes = 0;
}

static void on_weight(void *arg, const struct wc_stack_key *k, uint64_t w)
{
	struct wc_engine *e = arg;
	const char *group = wc_account_group_of(e->account, k->tgid);

	/* While the process lives: it may be gone by the flush.  Not one
	 * left out, whose maps would only spend the drain's budget. */
	if (k->ustack >= WC_STACK_LABELS &&
	    (group || !wc_account_dropped(e->account, k->tgid)))
		note_later(e, (pid_t)k->tgid);
	if (!group && e->between_reads && e->ndeferred < e->max_deferred) {
		e->deferred[e->ndeferred++] = (struct deferred){*k, w};
		return;
	}
	if (!group) {
		e->weights_unowned++;
		return;
	}
	keep_stack(e, k->ustack);
	keep_stack(e, k->kstack);
	wc_stacks_add(e->stacks, group, k, w);
}

/* Weights by the thousand, their entries scattered over several tables:
 * ask for a batch's first, then add them. */
#define WEIGHT_BATCH 16

static void on_weights(void *arg, const struct wc_stack_key *k,
		       const uint64_t *w, size_t n)
{
	struct wc_engine *e = arg;
	size_t i, j, m;

	for (i = 0; i < n; i += m) {
		m = n - i < WEIGHT_BATCH ? n - i : WEIGHT_BATCH;
		for (j = i; j < i + m; j++) {
			wc_account_prefetch_group(e->account, k[j].tgid);
			wc_stacks_prefetch(e->stacks, &k[j]);
		}
		for (j = i; j < i + m; j++)
			on_weight(e, &k[j], w[j]);
	}
}

static int drain(struct wc_engine *e, char *err, size_t errlen)
{
	uint64_t start = wc_clock_ns(CLOCK_MONOTONIC);
	int rc;

	wc_flush_allow(e->flush, DRAIN_SYM_MS);
	rc = wc_collector_drain_stacks(e->collector, on_weights, e, err,
				       errlen);

	if (rc == 0)
		rc = wc_collector_drain_stack_table(e->collector, on_stack, e,
						    err, errlen);
	if (rc == 0 && e->walked && start >= e->let_go_ns + LET_GO_NS)
		wc_stacks_reap(e->stacks);
	e->drain_ns += wc_clock_ns(CLOCK_MONOTONIC) - start;
	return rc;
}

int wc_engine_drain(struct wc_engine *e, char *err, size_t errlen)
{
	int rc;

	if (!e->stacks)
		return 0;
	pthread_mutex_lock(&e->lock);
	e->between_reads = true;
	rc = drain(e, err, errlen);
	e->between_reads = false;
	pthread_mutex_unlock(&e->lock);
	note_now(e);
	return rc;
}

static void on_late_records(void *arg, const struct wc_task_rec *recs, size_t n)
{
	struct wc_engine *e = arg;
	size_t i;

	for (i = 0; i < n; i++)
		wc_account_record_late(e->account, &recs[i]);
}

int wc_engine_drain_exits(struct wc_engine *e, char *err, size_t errlen)
{
	int rc;

	pthread_mutex_lock(&e->lock);
	rc = wc_collector_drain_exits(e->collector, on_late_records, e, err,
				      errlen);
	pthread_mutex_unlock(&e->lock);
	return rc;
}

/* What a limit cost since it was last said, if a minute has passed. */
static void say_limit(struct limit *l, uint64_t count, uint64_t now,
		      const char *what, const char *why)
{
	if (count == l->said || (l->said_ns && now - l->said_ns < LIMIT_SAY_NS))
		return;
	wc_log(WC_LOG_WARN, "%llu %s%s: %s",
	       (unsigned long long)(count - l->said), what,
	       l->said_ns ? " in the last minute or so" : "", why);
	l->said = count;
	l->said_ns = now;
}

/* What each limit cost, and what to do about it. */
static const struct {
	const char *what, *why;
} limit_text[LIM_NR] = {
	[LIM_EXITS] = {"final records of exited threads dropped",
		       "the exit ring was full (raise ExitBufferKiB); their "
		       "last moments are lost, counted in exits_dropped, "
		       "exits_dropped_us and threads_lost"},
	[LIM_UNTRACKED] = {"threads or processes not counted",
			   "MaxThreads was reached (raise it); counted in "
			   "threads_untracked"},
	[LIM_STACKS] = {"stacks dropped",
			"the kernel's stack table was full (raise "
			"StackStorage); their time is under [stack table "
			"full], counted in stacks_full"},
	[LIM_WEIGHTS] = {"stack weights dropped",
			 "the kernel's table of (process, stack) weights was "
			 "full (raise StackStorage); counted in "
			 "stack_counts_full"},
	[LIM_WINDOW] = {"stacks or weights left out of the flush window",
			"its tables were full (raise StackStorage); their "
			"time is in their groups' remainder lines, counted "
			"in window_stacks_dropped and window_weights_dropped"},
	[LIM_UNWALKED] = {"waits under [kernel stack not walked]",
			  "a flush walks the kernel stacks of 16,384 new "
			  "waits at most; counted in waits_unwalked"},
	[LIM_SYM_BOUNDS] = {"mappings or symbol tables left out",
			    "a process had over 8,192 executable mappings or "
			    "8 MiB of maps, or a file's symbols were over "
			    "budget; their frames are module+0x..., counted "
			    "in symbol_over_bounds"},
	[LIM_UNWIND_ROOM] = {"files without unwind tables for want of room",
			     "the unwind rows were full (raise "
			     "UnwindTableMiB); their stacks are walked by "
			     "frame pointers, counted in "
			     "unwind_files_no_room"},
};

static uint64_t limit_count(const struct wc_self_stats *s, enum limit_kind k)
{
	switch (k) {
	case LIM_EXITS:
		return s->bpf.v[WC_CNT_EXITS_DROPPED];
	case LIM_UNTRACKED:
		return s->acct.threads_untracked;
	case LIM_STACKS:
		return s->bpf.v[WC_CNT_STACKS_FULL];
	case LIM_WEIGHTS:
		return s->bpf.v[WC_CNT_STACK_COUNTS_FULL];
	case LIM_WINDOW:
		return s->window.weights_dropped + s->window.stacks_dropped;
	case LIM_UNWALKED:
		return s->bpf.v[WC_CNT_WAITS_UNWALKED];
	case LIM_SYM_BOUNDS:
		return s->flush.sym_over_bounds;
	case LIM_UNWIND_ROOM:
		return s->uw.without[WC_UW_NO_ROOM];
	default:
		return 0;
	}
}

static void self_locked(const struct wc_engine *e, struct wc_self_stats *out);

/* Every bound that cost something is said, once a minute at most.  Not
 * storage_failed: task storage is refused now and then when programs
 * nest on a CPU, which is no bound anyone could raise.  Nor
 * weights_unowned: most are of processes Unmatched "drop" leaves out. */
static void report_limits(struct wc_engine *e, uint64_t now)
{
	struct wc_self_stats s;
	int k;

	self_locked(e, &s);
	for (k = 0; k < LIM_NR; k++)
		say_limit(&e->limits[k], limit_count(&s, k), now,
			  limit_text[k].what, limit_text[k].why);
}

/* Weights deferred since the last read, now that it knows who was born. */
static void place_deferred(struct wc_engine *e)
{
	uint32_t i;

	for (i = 0; i < e->ndeferred; i++)
		on_weight(e, &e->deferred[i].k, e->deferred[i].w);
	e->ndeferred = 0;
}

/* A read that a flush follows charges the waits under way to their
 * stacks: the file shows where they wait, and its totals are this read's
 * counters. */
static int read_locked(struct wc_engine *e, bool flushing, char *err,
		       size_t errlen)
{
	uint64_t start = wc_clock_ns(CLOCK_MONOTONIC),
		 at = wc_clock_ns(CLOCK_REALTIME);
	int rc;

	if (e->stacks && !flushing)
		flushing = (time_t)(at / 1000000000u) >= e->next_flush;
	e->flush_due = e->stacks && flushing;
	wc_account_begin(e->account);
	wc_account_clock(e->account, (int64_t)(at - start));
	rc = wc_collector_poll(e->collector, on_records, e, err, errlen);
	/* the kernel's counters were read between the two: on a busy host
	 * the read thread may wait tens of milliseconds for a CPU before or
	 * during the walk, which a stamp taken before it would not see; the
	 * charge of the waits under way reads no counter, so it comes after */
	e->read_at_ns = at + (wc_clock_ns(CLOCK_REALTIME) - at) / 2;
	if (rc == 0 && e->flush_due)
		rc = wc_collector_charge_waits(e->collector, WAIT_WALKS, err,
					       errlen);
	wc_account_end(e->account);
	if (!e->stacks)
		wc_account_flushed(e->account);
	/* after the accounting: processes that died in this read are still
	 * known, and new ones have their group; the values are not sent
	 * yet, so their processes are noted at the next drain, not now */
	if (e->stacks) {
		wc_flush_allow(e->flush, 0);
		place_deferred(e);
	}
	/* it named the stacks parked by waits under way */
	if (rc == 0 && start > e->let_go_ns)
		e->walked = true;
	report_limits(e, start);
	e->read_ns = wc_clock_ns(CLOCK_MONOTONIC) - start;
	return rc;
}

int wc_engine_read(struct wc_engine *e, char *err, size_t errlen)
{
	int rc;

	pthread_mutex_lock(&e->lock);
	rc = read_locked(e, false, err, errlen);
	pthread_mutex_unlock(&e->lock);
	return rc;
}

static void flush_group(void *arg, const struct wc_group_view *g)
{
	wc_flush_group(arg, g);
}

/*
 * A flush's scratch (symbol tables read, sorting, text) is freed when it
 * ends, but glibc keeps freed memory in the arena of the thread that used
 * it, and collectd runs the read callback on any of its read threads: each
 * one's arena would keep a flush's peak.  Hand the free pages back.
 */
static void give_back_memory(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* Stacks that could not be written (the spool is another writer's, or
 * unusable) are not taken: the kernel pays for none until a flush finds
 * the spool usable. */
static void pause_unwritable(struct wc_engine *e)
{
	wc_collector_pause_stacks(e->collector, !wc_flush_spool_ok(e->flush));
}

/* The window's last drain, right after a read (which placed the
 * processes its weights name), then the file.  *drained: the drain's rc. */
static int flush_window(struct wc_engine *e, time_t when, unsigned sym_ms,
			int *drained, char *err, size_t errlen)
{
	int rc;

	pthread_mutex_lock(&e->lock);
	e->flush_due = false;
	*drained = drain(e, err, errlen);
	wc_collector_new_window(e->collector);
	wc_flush_begin(e->flush);
	wc_flush_allow(e->flush, sym_ms);
	wc_account_foreach(e->account, flush_group, e->flush);
	wc_account_flushed(e->account);
	pthread_mutex_unlock(&e->lock);
	/* the long part (symbols, files) touches neither the account nor
	 * the collector: exits drain meanwhile, or a slow flush would fill
	 * their ring */
	note_now(e);
	rc = wc_flush_write(e->flush, e->stacks, when);
	pthread_mutex_lock(&e->lock);
	pause_unwritable(e);
	wc_stacks_next_window(e->stacks, let_go, e);
	e->let_go_ns = wc_clock_ns(CLOCK_MONOTONIC);
	e->walked = false;
	pthread_mutex_unlock(&e->lock);
	give_back_memory();
	return rc;
}

int wc_engine_flush(struct wc_engine *e, time_t when, char *err, size_t errlen)
{
	int drained;

	if (!e->stacks)
		return wc_err(err, errlen, "stacks are off");
	pthread_mutex_lock(&e->lock);
	drained = read_locked(e, true, err, errlen);
	pthread_mutex_unlock(&e->lock);
	if (drained)
		return -1;
	/* its user waits for the names: no budget, no share */
	if (flush_window(e, when, WC_SYM_WHOLE, &drained, err, errlen))
		return wc_err(err, errlen, "the file was not written");
	/* the file holds what the earlier drains took */
	if (drained)
		wc_log(WC_LOG_WARN, "the last drain before the file failed: %s",
		       err);
	return 0;
}

int wc_engine_maybe_flush(struct wc_engine *e, time_t now, char *err,
			  size_t errlen)
{
	int drained;

	if (!e->flush_due)
		return 0;
	/* a file not written is counted (spool_write_errors) and logged */
	flush_window(e, now, FLUSH_SYM_MS, &drained, err, errlen);
	/* on the interval's grid, so files stay evenly spaced */
	while (e->next_flush <= now)
		e->next_flush += e->cfg->flush_interval_s;
	return drained ? -1 : 1;
}

static void on_proc_gone(void *arg, uint32_t tgid)
{
	wc_flush_gone(arg, (pid_t)tgid);
}

static int open_stacks(struct wc_engine *e, char *err, size_t errlen)
{
	uint32_t n = e->cfg->stack_entries * WINDOW_FACTOR;

	e->max_deferred = e->cfg->stack_entries;
	e->deferred = calloc(e->max_deferred, sizeof(*e->deferred));
	e->max_notes = MAX_NOTES;
	e->notes = calloc(e->max_notes, sizeof(*e->notes));
	if (!e->deferred || !e->notes ||
	    wc_stacks_new(n, n, WINDOW_STACK_BYTES, &e->stacks))
		return wc_err(err, errlen,
			      "out of memory for %u stacks (StackStorage)",
			      e->cfg->stack_entries);
	e->flush = wc_flush_new(e->cfg, err, errlen);
	if (!e->flush)
		return -1;
	wc_account_on_proc_gone(e->account, on_proc_gone, e->flush);
	e->next_flush = time(NULL) + e->cfg->flush_interval_s;
	return 0;
}

/* What the frames will lack for want of a capability, said once. */
static void say_caps(struct wc_engine *e)
{
	char what[1024];

	e->caps_missing =
		wc_caps_missing(e->stacks != NULL, what, sizeof(what));
	if (e->caps_missing)
		wc_log(WC_LOG_WARN,
		       "stacks will be less complete: %s (capabilities_missing "
		       "counts them)",
		       what);
}

/* Rows the UnwindTableMiB option buys. */
static uint32_t unwind_rows(const struct wc_config *cfg)
{
	return (uint32_t)(((uint64_t)cfg->unwind_mib << 20) /
			  sizeof(struct wc_uw_row));
}

static int start_unwind(struct wc_engine *e, char *err, size_t errlen)
{
	struct wc_collector_uw m;

	if (!wc_collector_unwind(e->collector, &m))
		return 0;
	e->uw_map_bytes = m.map_bytes;
	e->uw = wc_engine_uw_start(&m, err, errlen);
	return e->uw ? 0 : -1;
}

int wc_engine_open(const struct wc_config *cfg, struct wc_engine **out,
		   char *err, size_t errlen)
{
	static const struct wc_walk_opts walk;

	return wc_engine_open_walk(cfg, &walk, out, err, errlen);
}

int wc_engine_open_walk(const struct wc_config *cfg,
			const struct wc_walk_opts *walk, struct wc_engine **out,
			char *err, size_t errlen)
{
	struct wc_collector_opts copts = {
		.sample_hz = cfg->sample_hz,
		.kthreads = cfg->kthreads,
		.exit_ring_kib = wc_config_exit_ring_kib(
			cfg, libbpf_num_possible_cpus()),
		.stacks = cfg->stacks,
		.min_block_us = cfg->min_block_us,
		.stack_entries = cfg->stack_entries,
		.held_stacks = cfg->stack_entries * WINDOW_FACTOR,
		.walk = *walk,
		.unwind_rows = cfg->unwind_tables ? unwind_rows(cfg) : 0,
		.unwind_files = UNWIND_FILES,
		.unwind_procs = UNWIND_PROCS,
		/* tests/bench/unwind.py's measure, never a user's */
		.measure_scan = getenv("WALLCLOCK_MEASURE_SCAN") != NULL,
	};
	struct wc_account_opts aopts = {
		.max_threads = cfg->max_threads,
		.max_groups = cfg->max_groups,
	};
	struct wc_engine *e = calloc(1, sizeof(*e));
	int rc;

	if (!e)
		return wc_err(err, errlen, "out of memory");
	e->cfg = cfg;
	pthread_mutex_init(&e->lock, NULL);
	wc_selector_init(&e->selector, cfg, NULL);
	aopts.selector = &e->selector;
	if (wc_account_new(&aopts, &e->account)) {
		pthread_mutex_destroy(&e->lock);
		free(e);
		return wc_err(err, errlen,
			      "out of memory for %u threads (MaxThreads)",
			      cfg->max_threads);
	}
	/* the programs first: once loaded they are in /proc/kallsyms, which
	 * the symbolizer reads when it starts */
	rc = wc_collector_open(&copts, &e->collector, err, errlen);
	if (rc || (cfg->stacks && open_stacks(e, err, errlen)) ||
	    start_unwind(e, err, errlen) || wc_engine_read(e, err, errlen) ||
	    (cfg->stacks && drain(e, err, errlen))) {
		wc_engine_close(e);
		return rc == -EACCES ? rc : -1;
	}
	say_caps(e);
	if (e->stacks)
		pause_unwritable(e);
	/* what the baseline drain took happened before the counters'
	 * baseline: not part of the first window */
	if (e->stacks)
		wc_stacks_next_window(e->stacks, let_go, e);
	e->let_go_ns = wc_clock_ns(CLOCK_MONOTONIC);
	wc_collector_new_window(e->collector);
	*out = e;
	return 0;
}

void wc_engine_foreach_group(struct wc_engine *e, wc_group_fn fn, void *arg)
{
	pthread_mutex_lock(&e->lock);
	wc_account_foreach(e->account, fn, arg);
	pthread_mutex_unlock(&e->lock);
}

uint64_t wc_engine_read_at(const struct wc_engine *e)
{
	return e->read_at_ns;
}

static void self_locked(const struct wc_engine *e, struct wc_self_stats *out)
{
	memset(out, 0, sizeof(*out));
	wc_collector_counters(e->collector, &out->bpf);
	wc_account_stats(e->account, &out->acct);
	out->read_ns = e->read_ns;
	out->exit_ring_fill = wc_collector_exit_ring_fill(e->collector);
	out->table_fill = (double)(out->acct.threads > out->acct.processes
					   ? out->acct.threads
					   : out->acct.processes) /
			  e->cfg->max_threads;
	out->ncpus = wc_collector_ncpus(e->collector);
	out->caps_missing = e->caps_missing;
	wc_collector_walk_stats(e->collector, &out->walk);
	out->stacks = e->stacks != NULL;
	if (!e->stacks)
		return;
	wc_stacks_stats(e->stacks, &out->window);
	wc_flush_stats(e->flush, &out->flush);
	out->weights_unowned = e->weights_unowned;
	out->drain_ns = e->drain_ns;
	out->stacks_copied = e->stacks_copied;
	out->unwind = e->uw != NULL;
	out->unwind_map_bytes = e->uw_map_bytes;
	if (e->uw)
		wc_engine_uw_stats(e->uw, &out->uw);
}

void wc_engine_self(struct wc_engine *e, struct wc_self_stats *out)
{
	pthread_mutex_lock(&e->lock);
	self_locked(e, out);
	pthread_mutex_unlock(&e->lock);
}

void wc_engine_close(struct wc_engine *e)
{
	if (!e)
		return;
	wc_engine_uw_stop(e->uw);
	wc_collector_close(e->collector);
	wc_account_free(e->account);
	wc_flush_free(e->flush);
	wc_stacks_free(e->stacks);
	free(e->deferred);
	free(e->notes);
	pthread_mutex_destroy(&e->lock);
	free(e);
}
