/*
 * test_account.c - per-thread records in, per-group totals out: exact
 * deltas, thread and process lifetimes (exit, loss, PID reuse, exec), the
 * table bounds, churn, MaxGroups slots, and explicit selections.  Records
 * are synthetic, so every expected total is known exactly.
 */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "core/wc_account.h"

#define NVALS(a) (sizeof(a) / sizeof((a)[0]))
#define SAMPLES_PER_BASE 7

/* Account tests must never read the command lines of real processes. */
static long no_cmdline(uint32_t tgid, char *buf, size_t len)
{
	(void)tgid;
	(void)buf;
	(void)len;
	return -1;
}

struct fix {
	struct wc_config cfg;
	struct wc_selector sel;
	struct wc_account *a;
	wc_cmdline_fn cmdline;
	bool unflushed; /* reads are not followed by a file */
};

static void fix_config(struct fix *f)
{
	wc_config_init(&f->cfg);
	f->a = NULL;
	f->cmdline = no_cmdline;
	f->unflushed = false;
}

/* After fix_config and any selections; on failure, frees the config. */
static bool fix_start(struct fix *f, uint32_t max_threads, uint32_t max_groups)
{
	struct wc_account_opts o = {
		.max_threads = max_threads,
		.max_groups = max_groups,
		.selector = &f->sel,
	};

	wc_selector_init(&f->sel, &f->cfg, f->cmdline);
	if (wc_account_new(&o, &f->a) == 0)
		return true;
	printf("  wc_account_new(%u, %u) failed\n", max_threads, max_groups);
	check_cur_failed = 1;
	wc_config_free(&f->cfg);
	return false;
}

static bool fix_new(struct fix *f, uint32_t max_threads, uint32_t max_groups)
{
	fix_config(f);
	return fix_start(f, max_threads, max_groups);
}

static void fix_free(struct fix *f)
{
	wc_account_free(f->a);
	wc_config_free(&f->cfg);
}

static void add_selection(struct fix *f, const char *key, const char *label,
			  const char *re)
{
	struct wc_cval v[2] = {
		{.type = WC_CVAL_STRING, .s = label},
		{.type = WC_CVAL_STRING, .s = re},
	};
	char err[256];

	if (wc_config_set(&f->cfg, key, v, re ? 2 : 1, err, sizeof(err))) {
		printf("  %s\n", err);
		check_cur_failed = 1;
	}
}

/*
 * One thread's record.  Its cumulative times are base * (slot + 1) and
 * its samples base * SAMPLES_PER_BASE, so a group's expected totals follow
 * from the sum of its threads' bases, and a column mixed up with another
 * shows.
 */
static struct wc_task_rec rec(uint64_t id, uint32_t tgid, uint64_t start,
			      const char *comm, uint64_t base, uint32_t flags)
{
	struct wc_task_rec r = {
		.id = id,
		.tid = (uint32_t)id,
		.tgid = tgid,
		.leader_start_ns = start,
		.samples = base * SAMPLES_PER_BASE,
		.flags = flags,
	};
	int k;

	for (k = 0; k < WC_NSLOTS; k++)
		r.time_ns[k] = base * (uint64_t)(k + 1);
	memcpy(r.leader_comm, comm, strnlen(comm, WC_COMM_LEN));
	return r;
}

/* A single-threaded process: tid = tgid = id, started at id * 1000. */
static struct wc_task_rec solo(uint32_t id, const char *comm, uint64_t base,
			       uint32_t flags)
{
	return rec(id, id, id * 1000ULL, comm, base, flags);
}

static void read_recs(struct fix *f, const struct wc_task_rec *r, size_t n)
{
	size_t i;

	wc_account_begin(f->a);
	for (i = 0; i < n; i++)
		wc_account_record(f->a, &r[i]);
	wc_account_end(f->a);
	/* a file after every read, unless the test says otherwise */
	if (!f->unflushed)
		wc_account_flushed(f->a);
}

#define READ(f, ...)                                                           \
	do {                                                                   \
		const struct wc_task_rec r_[] = {__VA_ARGS__};                 \
		read_recs(f, r_, NVALS(r_));                                   \
	} while (0)

static void read_empty(struct fix *f, int times)
{
	while (times-- > 0)
		read_recs(f, NULL, 0);
}

/* --- what wc_account_foreach dispatches --- */

struct view {
	char name[WC_NAME_MAX];
	uint64_t time_ns[WC_NSLOTS];
	uint64_t samples;
	uint32_t threads;
	uint64_t read_at_ns;
};

static struct view views[64];
static size_t nviews;

static void collect(void *arg, const struct wc_group_view *g)
{
	struct view *v = &views[nviews];

	(void)arg;
	if (nviews == NVALS(views))
		return;
	snprintf(v->name, sizeof(v->name), "%s", g->name);
	memcpy(v->time_ns, g->time_ns, sizeof(v->time_ns));
	v->samples = g->samples;
	v->threads = g->threads;
	v->read_at_ns = g->read_at_ns;
	nviews++;
}

static const struct view *group(const struct fix *f, const char *name)
{
	size_t i;

	nviews = 0;
	wc_account_foreach(f->a, collect, NULL);
	for (i = 0; i < nviews; i++)
		if (strcmp(views[i].name, name) == 0)
			return &views[i];
	return NULL;
}

static struct wc_account_stats stats(const struct fix *f)
{
	struct wc_account_stats s;

	wc_account_stats(f->a, &s);
	return s;
}

/* Group `name` is dispatched, holds `base` worth of time and samples in
 * total, and had `threads` threads this read. */
static void expect_group(int line, const struct fix *f, const char *name,
			 uint64_t base, uint32_t threads)
{
	const struct view *v = group(f, name);
	bool ok = v && v->samples == base * SAMPLES_PER_BASE &&
		  v->threads == threads;
	int k;

	for (k = 0; ok && k < WC_NSLOTS; k++)
		ok = v->time_ns[k] == base * (uint64_t)(k + 1);
	if (ok)
		return;
	check_cur_failed = 1;
	if (!v) {
		printf("  %s:%d: group \"%s\" not dispatched\n", __FILE__, line,
		       name);
		return;
	}
	printf("  %s:%d: group \"%s\": time", __FILE__, line, name);
	for (k = 0; k < WC_NSLOTS; k++)
		printf(" %llu", (unsigned long long)v->time_ns[k]);
	printf(" samples %llu threads %u; want base %llu threads %u\n",
	       (unsigned long long)v->samples, v->threads,
	       (unsigned long long)base, threads);
}

static void expect_absent(int line, const struct fix *f, const char *name)
{
	if (group(f, name)) {
		printf("  %s:%d: group \"%s\" dispatched\n", __FILE__, line,
		       name);
		check_cur_failed = 1;
	}
}

#define GROUP(f, name, base, threads)                                          \
	expect_group(__LINE__, f, name, base, threads)
#define ABSENT(f, name) expect_absent(__LINE__, f, name)

/* --- tests --- */

static void test_deltas_add_up(void)
{
	struct fix f;
	uint64_t r, b1, b2;

	if (!fix_new(&f, 1024, 50))
		return;
	for (r = 1; r <= 10; r++) {
		b1 = r * r * 1000 + 7 * r;
		b2 = r < 5 ? 3 * r : 15; /* then idle: no delta at all */
		READ(&f, rec(1, 10, 1000, "app", b1, 0),
		     rec(2, 10, 1000, "app", b2, 0));
		GROUP(&f, "app", b1 + b2, 2);
	}
	CHECK(stats(&f).threads == 2 && stats(&f).processes == 1);
	CHECK(stats(&f).groups == 1 && stats(&f).regressions == 0);
	fix_free(&f);
}

/* A record stamped with when the kernel read it (monotonic). */
static struct wc_task_rec stamped(uint32_t id, const char *comm, uint64_t base,
				  uint64_t read_ns)
{
	struct wc_task_rec r = solo(id, comm, base, 0);

	r.read_ns = read_ns;
	return r;
}

/* A group's values carry when its processes' threads were read (the
 * middle of their stamps, on the realtime clock); one that only ended
 * this read carries none. */
static void test_read_stamps(void)
{
	const int64_t off = 1700000000000000000LL;
	const struct wc_task_rec first[] = {stamped(12, "beta", 1, 500),
					    stamped(13, "gamma", 1, 700)};
	const struct wc_task_rec r[] = {stamped(10, "alpha", 2, 1000),
					stamped(12, "beta", 2, 1000),
					stamped(11, "alpha", 2, 3000),
					solo(13, "gamma", 2, WC_REC_EXITED)};
	const struct view *v;
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	READ(&f, solo(10, "alpha", 1, 0), solo(11, "alpha", 1, 0));
	v = group(&f, "alpha");
	CHECK(v && v->read_at_ns == 0); /* never stamped */
	wc_account_clock(f.a, off);
	/* groups made in the read that stamps them */
	read_recs(&f, first, NVALS(first));
	v = group(&f, "beta");
	CHECK(v && v->read_at_ns == off + 500);
	v = group(&f, "gamma");
	CHECK(v && v->read_at_ns == off + 700);
	read_recs(&f, r, NVALS(r));
	v = group(&f, "alpha");
	CHECK(v && v->read_at_ns == off + 2000);
	v = group(&f, "beta");
	CHECK(v && v->read_at_ns == off + 1000);
	v = group(&f, "gamma");
	CHECK(v && v->read_at_ns == 0);
	/* the next read starts over */
	READ(&f, solo(12, "beta", 3, 0));
	v = group(&f, "beta");
	CHECK(v && v->read_at_ns == 0);
	fix_free(&f);
}

/* The iterator may still see a thread that then dies in the same read. */
static void test_final_record_same_read(void)
{
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	READ(&f, solo(1, "app", 100, 0));
	READ(&f, solo(1, "app", 200, 0), solo(1, "app", 250, WC_REC_EXITED));
	GROUP(&f, "app", 250, 1);
	CHECK(stats(&f).threads == 0 && stats(&f).processes == 0);
	read_empty(&f, 1);
	GROUP(&f, "app", 250, 0);
	CHECK(stats(&f).threads_lost == 0);
	fix_free(&f);
}

static void test_final_record_later_read(void)
{
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	READ(&f, solo(1, "app", 100, 0));
	READ(&f, solo(1, "app", 300, WC_REC_EXITED));
	GROUP(&f, "app", 300, 1);
	CHECK(stats(&f).threads == 0 && stats(&f).processes == 0);
	fix_free(&f);
}

/* Stacks drained after a read name processes by tgid: one whose last
 * thread died in that read still has its group, until the next read. */
static void test_group_of_tgid(void)
{
	struct fix f;
	const char *g;

	if (!fix_new(&f, 1024, 50))
		return;
	READ(&f, solo(1, "app", 100, 0), solo(2, "db", 100, 0));
	g = wc_account_group_of(f.a, 1);
	CHECK(g && strcmp(g, "app") == 0);
	CHECK(wc_account_group_of(f.a, 3) == NULL);
	READ(&f, solo(1, "app", 300, WC_REC_EXITED), solo(2, "db", 200, 0));
	g = wc_account_group_of(f.a, 1);
	CHECK(g && strcmp(g, "app") == 0);
	read_empty(&f, 1);
	CHECK(wc_account_group_of(f.a, 1) == NULL);
	/* a reused PID belongs to its new process */
	READ(&f, rec(1, 1, 99000, "web", 100, 0));
	g = wc_account_group_of(f.a, 1);
	CHECK(g && strcmp(g, "web") == 0);
	fix_free(&f);
}

/* Born and dead between two reads: only the exit ring ever saw it. */
static void test_exited_never_seen_live(void)
{
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	READ(&f, rec(5, 20, 2000, "short", 400, WC_REC_EXITED),
	     rec(6, 20, 2000, "short", 50, WC_REC_EXITED));
	GROUP(&f, "short", 450, 2);
	CHECK(stats(&f).threads == 0 && stats(&f).processes == 0);
	CHECK(stats(&f).threads_untracked == 0);
	fix_free(&f);
}

/* A dropped final record must not pin a thread (and its process) forever. */
static void test_vanished_thread_lost(void)
{
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	READ(&f, rec(1, 10, 1000, "app", 100, 0),
	     rec(2, 10, 1000, "app", 40, 0), solo(3, "solo", 70, 0));
	READ(&f, rec(1, 10, 1000, "app", 200, 0));
	CHECK(stats(&f).threads_lost == 0 && stats(&f).threads == 3);
	GROUP(&f, "app", 240, 1);
	GROUP(&f, "solo", 70, 0);
	READ(&f, rec(1, 10, 1000, "app", 300, 0));
	CHECK(stats(&f).threads_lost == 2);
	CHECK(stats(&f).threads == 1 && stats(&f).processes == 1);
	GROUP(&f, "app", 340, 1);
	GROUP(&f, "solo", 70, 0);
	fix_free(&f);
}

/* The same tgid with another start time is another process, even inside
 * one read where the old one's final record comes after the new one. */
static void test_pid_reuse(void)
{
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	READ(&f, rec(1, 50, 1000, "old", 100, 0));
	CHECK(stats(&f).processes == 1);
	READ(&f, rec(2, 50, 2000, "new", 30, 0),
	     rec(1, 50, 1000, "old", 150, WC_REC_EXITED));
	GROUP(&f, "old", 150, 1);
	GROUP(&f, "new", 30, 1);
	CHECK(stats(&f).processes == 1 && stats(&f).threads == 1);
	READ(&f, rec(2, 50, 2000, "new", 80, 0));
	GROUP(&f, "old", 150, 0);
	GROUP(&f, "new", 80, 1);
	fix_free(&f);
}

static void test_exec_moves_time(void)
{
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	READ(&f, solo(60, "sh", 100, 0));
	READ(&f, solo(60, "make", 250, 0));
	GROUP(&f, "sh", 100, 0);
	GROUP(&f, "make", 150, 1);
	READ(&f, solo(60, "make", 400, 0));
	GROUP(&f, "sh", 100, 0);
	GROUP(&f, "make", 300, 1);
	CHECK(stats(&f).processes == 1);
	fix_free(&f);
}

static void test_thread_counts_per_read(void)
{
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	READ(&f, rec(1, 10, 1000, "a", 10, 0), rec(2, 10, 1000, "a", 10, 0),
	     rec(3, 10, 1000, "a", 10, 0), solo(20, "b", 10, 0));
	GROUP(&f, "a", 30, 3);
	GROUP(&f, "b", 10, 1);
	/* A thread seen only through its final record still ran this read. */
	READ(&f, rec(1, 10, 1000, "a", 20, 0), rec(2, 10, 1000, "a", 20, 0),
	     rec(3, 10, 1000, "a", 20, WC_REC_EXITED));
	GROUP(&f, "a", 60, 3);
	GROUP(&f, "b", 10, 0);
	READ(&f, rec(1, 10, 1000, "a", 30, 0), rec(2, 10, 1000, "a", 30, 0),
	     solo(20, "b", 20, 0));
	GROUP(&f, "a", 80, 2);
	GROUP(&f, "b", 20, 1);
	fix_free(&f);
}

static uint64_t group_samples(const struct fix *f, const char *name)
{
	const struct view *v = group(f, name);

	return v ? v->samples : UINT64_MAX;
}

/* Samples move on their own: a thread can run without being sampled. */
static void test_samples_deltas(void)
{
	struct wc_task_rec a = solo(1, "app", 100, 0);
	struct wc_task_rec b = rec(2, 1, 1000, "app", 100, 0);
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	a.samples = 3;
	READ(&f, a);
	CHECK(group_samples(&f, "app") == 3);
	a.time_ns[0] += 1000;
	READ(&f, a);
	CHECK(group_samples(&f, "app") == 3);
	a.samples = 10;
	b.samples = 4;
	READ(&f, a, b);
	CHECK(group_samples(&f, "app") == 14);
	CHECK(group(&f, "app") && group(&f, "app")->time_ns[0] == 1200);
	fix_free(&f);
}

/*
 * A counter behind the last one seen (the iterator's in-progress estimate
 * can run ahead of what the scheduler charges later) is counted as a
 * regression, gives no delta rather than a wrapped 2^64 one, and the time
 * it was ahead is not counted a second time when it catches up.
 */
static void test_regression_counted(void)
{
	struct wc_task_rec r = solo(1, "app", 1000, 0);
	const struct view *v;
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	READ(&f, r);
	r = solo(1, "app", 1500, 0);
	r.time_ns[WC_T_RUNQ] = 10;
	READ(&f, r);
	CHECK(stats(&f).regressions == 1);
	v = group(&f, "app");
	CHECK(v && v->time_ns[WC_T_ONCPU] == 1500);
	CHECK(v && v->time_ns[WC_T_RUNQ] == 2000);
	CHECK(v && v->time_ns[WC_T_SLEEP] == 4500);
	CHECK(v && v->time_ns[WC_T_STEAL] == 7500);
	r.time_ns[WC_T_RUNQ] = 2500;
	r.samples = 1;
	READ(&f, r);
	CHECK(stats(&f).regressions == 2);
	v = group(&f, "app");
	CHECK(v && v->time_ns[WC_T_RUNQ] == 2500);
	CHECK(v && v->samples == 1500 * SAMPLES_PER_BASE);
	r.samples = 1500 * SAMPLES_PER_BASE + 3;
	READ(&f, r);
	v = group(&f, "app");
	CHECK(v && v->samples == 1500 * SAMPLES_PER_BASE + 3);
	CHECK(stats(&f).regressions == 2);
	fix_free(&f);
}

/*
 * One more thread than fits, threads_per_proc to a process, then the final
 * record of a thread never seen: that needs no slot, so it still counts.
 */
static void overfill(uint32_t threads_per_proc)
{
	struct wc_task_rec *r = calloc(1026, sizeof(*r));
	struct fix f;
	uint32_t i;

	CHECK(r != NULL);
	if (!r || !fix_new(&f, 1024, 50)) {
		free(r);
		return;
	}
	for (i = 0; i < 1025; i++) {
		uint32_t tgid = i / threads_per_proc + 1;

		r[i] = rec(i + 1, tgid, tgid * 1000ULL, "w", 10, 0);
	}
	r[1025] = rec(5000, 1, 1000, "w", 10, WC_REC_EXITED);
	read_recs(&f, r, 1026);
	CHECK(stats(&f).threads == 1024);
	CHECK(stats(&f).threads_untracked == 1);
	GROUP(&f, "w", 10250, 1025);
	fix_free(&f);
	free(r);
}

static void test_table_bound_threads(void)
{
	overfill(1025);
}

static void test_table_bound_processes(void)
{
	overfill(1);
}

/*
 * 100k threads, each its own process, live for one read and dead at the
 * next: far more than the 1024 slots, so any slot not given back shows up
 * as untracked threads long before the end.
 */
static void test_churn(void)
{
	static const char *const names[] = {"a", "b", "c", "d", "e"};
	uint64_t want[5] = {0};
	struct wc_task_rec r[200];
	uint32_t read, i, max_threads = 0;
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	for (read = 0; read <= 1000; read++) {
		size_t n = 0;

		for (i = 0; read < 1000 && i < 100; i++) {
			uint32_t id = read * 100 + i + 1;

			r[n++] = solo(id, names[id % 5], id % 97, 0);
		}
		for (i = 0; read > 0 && i < 100; i++) {
			uint32_t id = (read - 1) * 100 + i + 1;

			r[n++] = solo(id, names[id % 5], id % 97 + 5,
				      WC_REC_EXITED);
			want[id % 5] += id % 97 + 5;
		}
		read_recs(&f, r, n);
		if (stats(&f).threads > max_threads)
			max_threads = stats(&f).threads;
	}
	/* The last read held only the final records of 20 threads each. */
	for (i = 0; i < 5; i++)
		GROUP(&f, names[i], want[i], 20);
	CHECK(max_threads == 100);
	CHECK(stats(&f).threads == 0 && stats(&f).processes == 0);
	CHECK(stats(&f).threads_untracked == 0 && stats(&f).threads_lost == 0);
	CHECK(stats(&f).regressions == 0);
	fix_free(&f);
}

/* Busiest first, and neither by name nor by record order: awk is first
 * on both counts and least busy. */
static const struct {
	const char *comm;
	uint64_t rate;
} busy[] = {
	{"awk", 10}, {"bash", 30}, {"cron", 20}, {"java", 40}, {"mysql", 50},
};

/* Read `read` of the MaxGroups story: each process's cumulative base is
 * rate * read; mysql and java die at read 2. */
static void busy_read(struct fix *f, uint64_t read)
{
	struct wc_task_rec r[NVALS(busy)];
	size_t i, n = 0;

	for (i = 0; i < NVALS(busy); i++) {
		bool slotted = busy[i].rate >= 40;

		if (slotted && read > 2)
			continue;
		r[n++] = solo((uint32_t)i + 1, busy[i].comm,
			      busy[i].rate * read,
			      slotted && read == 2 ? WC_REC_EXITED : 0);
	}
	read_recs(f, r, n);
}

static void test_max_groups(void)
{
	struct fix f;
	uint64_t read;

	if (!fix_new(&f, 1024, 2))
		return;
	busy_read(&f, 1);
	GROUP(&f, "mysql", 50, 1);
	GROUP(&f, "java", 40, 1);
	GROUP(&f, "other", 60, 3);
	ABSENT(&f, "bash");
	CHECK(stats(&f).waiting == 3 && stats(&f).groups == 3);
	busy_read(&f, 2);
	GROUP(&f, "mysql", 100, 1);
	/* Slots stay while their groups have been idle under five reads. */
	for (read = 3; read <= 6; read++)
		busy_read(&f, read);
	GROUP(&f, "mysql", 100, 0);
	GROUP(&f, "other", 360, 3);
	busy_read(&f, 7);
	ABSENT(&f, "mysql");
	ABSENT(&f, "java");
	CHECK(stats(&f).waiting == 3);
	busy_read(&f, 8);
	GROUP(&f, "bash", 30, 1);
	GROUP(&f, "cron", 20, 1);
	ABSENT(&f, "awk");
	GROUP(&f, "other", 430, 1);
	CHECK(stats(&f).waiting == 1 && stats(&f).groups == 3);
	fix_free(&f);
}

/* A group whose last growth no file has taken keeps its slot until one
 * has: evicted before, its window would reach the file as weights with
 * no total. */
static void test_kept_until_flushed(void)
{
	struct fix f;
	uint64_t read;

	if (!fix_new(&f, 1024, 2))
		return;
	f.unflushed = true;
	busy_read(&f, 1);
	busy_read(&f, 2);
	/* mysql and java died at read 2: idle five reads and more */
	for (read = 3; read <= 9; read++)
		busy_read(&f, read);
	GROUP(&f, "mysql", 100, 0);
	GROUP(&f, "java", 80, 0);
	wc_account_flushed(f.a);
	busy_read(&f, 10);
	ABSENT(&f, "mysql");
	ABSENT(&f, "java");
	fix_free(&f);
}

/* A single-threaded process that has run on_ms and slept sleep_ms. */
static struct wc_task_rec timed(uint32_t id, const char *comm, uint64_t on_ms,
				uint64_t sleep_ms)
{
	struct wc_task_rec r = {.id = id,
				.tid = id,
				.tgid = id,
				.leader_start_ns = id * 1000ULL};

	r.time_ns[WC_T_ONCPU] = on_ms * 1000000ULL;
	r.time_ns[WC_T_SLEEP] = sleep_ms * 1000000ULL;
	memcpy(r.leader_comm, comm, strnlen(comm, WC_COMM_LEN));
	return r;
}

/*
 * Idle processes that took every slot first give one up to a busy
 * service that came later (the review's 55 sleeps against a root service
 * burning CPU), but only after holding it ten reads, one slot a read, and
 * only to a name much busier than the group it displaces: series do not
 * flap between groups of similar weight.
 */
static void test_busy_takes_slot(void)
{
	struct fix f;
	uint64_t n;

	if (!fix_new(&f, 1024, 2))
		return;
	for (n = 1; n <= 4; n++)
		READ(&f, timed(1, "sleepa", 0, 1000 * n),
		     timed(2, "sleepb", 0, 1000 * n));
	for (n = 5; n <= 10; n++)
		READ(&f, timed(1, "sleepa", 0, 1000 * n),
		     timed(2, "sleepb", 0, 1000 * n),
		     timed(3, "svc", 100 * n, 900 * n));
	ABSENT(&f, "svc");
	CHECK(stats(&f).groups_taken_over == 0 && stats(&f).waiting == 1);
	READ(&f, timed(1, "sleepa", 0, 11000), timed(2, "sleepb", 0, 11000),
	     timed(3, "svc", 1100, 9900));
	CHECK(group(&f, "svc") != NULL);
	CHECK(!group(&f, "sleepa") != !group(&f, "sleepb"));
	CHECK(stats(&f).groups_taken_over == 1 && stats(&f).waiting == 1);
	/* a second busy name takes the other idle slot, then nothing moves:
	 * 60 ms a read is not twice 100, and idle names never win */
	for (n = 12; n <= 40; n++)
		READ(&f, timed(1, "sleepa", 0, 1000 * n),
		     timed(2, "sleepb", 0, 1000 * n),
		     timed(3, "svc", 100 * n, 900 * n),
		     timed(4, "busy2", 60 * (n - 11), 940 * (n - 11)));
	CHECK(group(&f, "svc") && group(&f, "busy2"));
	ABSENT(&f, "sleepa");
	ABSENT(&f, "sleepb");
	CHECK(stats(&f).groups_taken_over == 2 && stats(&f).waiting == 2);
	fix_free(&f);
}

/* Process "nginx", ProcessMatch "jvm" (the reader fails, so the regex
 * sees the comm), and Unmatched as asked. */
static bool fix_selections(struct fix *f, bool drop)
{
	fix_config(f);
	add_selection(f, "Process", "nginx", NULL);
	add_selection(f, "ProcessMatch", "jvm", "^jav");
	f->cfg.unmatched_other = !drop;
	return fix_start(f, 1024, 50);
}

static void explicit_run(bool drop)
{
	struct fix f;

	if (!fix_selections(&f, drop))
		return;
	READ(&f, solo(1, "nginx", 10, 0), solo(2, "java", 20, 0),
	     solo(3, "bash", 30, 0),
	     solo(4, "kworker/0:1", 40, WC_REC_KTHREAD));
	GROUP(&f, "nginx", 10, 1);
	GROUP(&f, "jvm", 20, 1);
	ABSENT(&f, "bash");
	ABSENT(&f, "kworker");
	if (drop)
		ABSENT(&f, "other");
	else
		GROUP(&f, "other", 70, 2);
	/* its stacks are not worth symbolizing: only the left out */
	CHECK(wc_account_dropped(f.a, 3) == drop);
	CHECK(!wc_account_dropped(f.a, 1) && !wc_account_dropped(f.a, 2));
	CHECK(!wc_account_dropped(f.a, 9));
	CHECK(stats(&f).groups == (drop ? 2u : 3u));
	CHECK(stats(&f).waiting == 0);
	fix_free(&f);
}

static void test_explicit_selections(void)
{
	explicit_run(false);
}

static void test_explicit_selections_drop(void)
{
	explicit_run(true);
}

/* Configured groups are the picture the user asked for: they show, at 0,
 * from the first read and do not age out. */
static void test_explicit_dispatched_idle(void)
{
	struct fix f;

	if (!fix_selections(&f, false))
		return;
	read_empty(&f, 1);
	GROUP(&f, "nginx", 0, 0);
	GROUP(&f, "jvm", 0, 0);
	GROUP(&f, "other", 0, 0);
	read_empty(&f, 20);
	GROUP(&f, "nginx", 0, 0);
	GROUP(&f, "jvm", 0, 0);
	CHECK(stats(&f).groups == 3);
	fix_free(&f);
	if (!fix_selections(&f, true))
		return;
	read_empty(&f, 1);
	GROUP(&f, "nginx", 0, 0);
	ABSENT(&f, "other");
	CHECK(stats(&f).groups == 2);
	fix_free(&f);
}

/* An "other" nobody used would be a permanently empty series; once used,
 * it stays, so its counters never vanish mid-graph. */
static void test_other_only_when_used(void)
{
	struct fix f;

	if (!fix_new(&f, 1024, 1))
		return;
	READ(&f, solo(1, "app", 10, 0));
	ABSENT(&f, "other");
	CHECK(stats(&f).groups == 1);
	READ(&f, solo(1, "app", 20, 0), solo(2, "db", 5, 0));
	GROUP(&f, "other", 5, 1);
	READ(&f, solo(1, "app", 30, 0), solo(2, "db", 6, WC_REC_EXITED));
	read_empty(&f, 10);
	GROUP(&f, "other", 6, 0);
	fix_free(&f);
}

/* Process 5's command line: none until `exec_done` (an exec sets the name
 * before the arguments), then java's. */
static bool exec_done;
static int exec_reads;

static long cmdline_after_exec(uint32_t tgid, char *buf, size_t len)
{
	static const char argv[] = "java\0-jar\0app.jar\0";

	exec_reads++;
	if (tgid != 5 || !exec_done)
		return tgid == 5 ? 0 : -1;
	if (len < sizeof(argv) - 1)
		return -1;
	memcpy(buf, argv, sizeof(argv) - 1);
	return (long)sizeof(argv) - 1;
}

static bool fix_mid_exec(struct fix *f)
{
	fix_config(f);
	add_selection(f, "ProcessMatch", "jvm", "^java -jar");
	f->cfg.unmatched_other = false;
	f->cmdline = cmdline_after_exec;
	exec_done = false;
	exec_reads = 0;
	return fix_start(f, 1024, 50);
}

/* Seen between the exec's new name and its new arguments, a process is
 * decided by name (dropped here) and asked again at the next read. */
static void test_match_caught_in_exec(void)
{
	struct fix f;

	if (!fix_mid_exec(&f))
		return;
	READ(&f, solo(5, "java", 10, 0));
	GROUP(&f, "jvm", 0, 0);
	exec_done = true;
	READ(&f, solo(5, "java", 25, 0));
	GROUP(&f, "jvm", 15, 1);
	read_empty(&f, 1);
	READ(&f, solo(5, "java", 40, 0));
	GROUP(&f, "jvm", 30, 1);
	CHECK(exec_reads == 2);
	fix_free(&f);
	/* One that never shows arguments (a zombie leader) is asked a bounded
	 * number of times. */
	if (!fix_mid_exec(&f))
		return;
	for (int i = 1; i <= 10; i++)
		READ(&f, solo(5, "java", 10 * (uint64_t)i, 0));
	GROUP(&f, "jvm", 0, 0);
	CHECK(exec_reads == 4);
	fix_free(&f);
}

static void test_kernel_threads_fold(void)
{
	struct fix f;

	if (!fix_new(&f, 1024, 50))
		return;
	READ(&f, solo(1, "kworker/0:1", 10, WC_REC_KTHREAD),
	     solo(2, "kworker/1:2H", 20, WC_REC_KTHREAD),
	     solo(3, "kworker/0:1", 40, 0));
	GROUP(&f, "kworker", 30, 2);
	GROUP(&f, "kworker_0_1", 40, 1);
	fix_free(&f);
}

int main(void)
{
	check_prog = "test_account";
	RUN(test_deltas_add_up);
	RUN(test_final_record_same_read);
	RUN(test_final_record_later_read);
	RUN(test_group_of_tgid);
	RUN(test_exited_never_seen_live);
	RUN(test_vanished_thread_lost);
	RUN(test_pid_reuse);
	RUN(test_exec_moves_time);
	RUN(test_thread_counts_per_read);
	RUN(test_samples_deltas);
	RUN(test_regression_counted);
	RUN(test_table_bound_threads);
	RUN(test_table_bound_processes);
	RUN(test_churn);
	RUN(test_max_groups);
	RUN(test_kept_until_flushed);
	RUN(test_busy_takes_slot);
	RUN(test_read_stamps);
	RUN(test_explicit_selections);
	RUN(test_explicit_selections_drop);
	RUN(test_explicit_dispatched_idle);
	RUN(test_other_only_when_used);
	RUN(test_kernel_threads_fold);
	RUN(test_match_caught_in_exec);
	return check_done();
}
