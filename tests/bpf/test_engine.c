/*
 * test_engine.c - the engine with real BPF, no collectd: lifetimes, exits,
 * exec, kernel threads, idle, whose maps the symbolizer reads, and a clean
 * unload.
 *
 * Needs root (BPF); without it every test says SKIP with the reason.  The
 * workload binary comes from argv[1] (the build's tests/workload) and runs
 * under names of our choosing through symlinks, so its group is known.
 * Truth comes from the workload's report: each thread's own schedstat read
 * just before it ends, and getrusage() of the whole process.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf_test.h"
#include "check.h"
#include "engine/wc_engine.h"
#include "util/wc_log.h"

#define MAX_GROUPS 512

static const char *workload;
static char bin_dir[] = "/tmp/wc-engine-XXXXXX";
/* the kernel has the open-coded walk (6.7+): one more program */
static int kernel_walks;
static int kernel_delays; /* the two hooks of bpf/stale.bpf.h load */
static char skip_reason[256];

struct group_set {
	struct wc_group_view g[MAX_GROUPS];
	char names[MAX_GROUPS][WC_NAME_MAX];
	int n;
};

struct report {
	unsigned long long rusage_ns;
	/* the kernel's count of all its threads' CPU time, exit included
	 * (wait4): the workload's own getrusage misses what it runs after */
	unsigned long long died_ns;
	unsigned long long on_ns, runq_ns, wall_ns;
	/* of runq_ns, sleep the kernel counted as waits for a CPU (stale
	 * queue stamps, which the profiler mends), as the sleepers saw it */
	unsigned long long stale_ns;
	unsigned long long runs; /* arrivals on a CPU, all threads */
	/* all threads' time from their reports to the reaping: what each
	 * still ran or waited after it reported is within it */
	unsigned long long after_ns;
	int threads;
};

static void collect(void *arg, const struct wc_group_view *v)
{
	struct group_set *s = arg;

	if (s->n >= MAX_GROUPS)
		return;
	s->g[s->n] = *v;
	snprintf(s->names[s->n], WC_NAME_MAX, "%s", v->name);
	s->g[s->n].name = s->names[s->n];
	s->n++;
}

static const struct wc_group_view *find(const struct group_set *s,
					const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->g[i].name, name) == 0)
			return &s->g[i];
	return NULL;
}

static void groups_of(struct wc_engine *e, struct group_set *s)
{
	memset(s, 0, sizeof(*s));
	wc_engine_foreach_group(e, collect, s);
}

static uint64_t wall_of(const struct wc_group_view *g)
{
	uint64_t sum = 0;
	int k;

	for (k = 0; k < WC_NSLOTS; k++)
		sum += g->time_ns[k];
	return sum;
}

/* How the next engines walk the threads (the tests of the walk set it). */
static struct wc_walk_opts walk;

/* Every process but `only` left out, if it is not 0 (the command line's
 * -p). */
static struct wc_engine *open_only(struct wc_config *cfg, bool kthreads,
				   uint32_t only)
{
	struct wc_engine *e = NULL;
	char err[1024];

	wc_config_init(cfg);
	cfg->kthreads = kthreads;
	cfg->sample_hz = 99;
	cfg->only_tgid = only;
	snprintf(cfg->spool_dir, sizeof(cfg->spool_dir), "%s/spool", bin_dir);
	if (wc_engine_open_walk(cfg, &walk, &e, err, sizeof(err))) {
		printf("  engine: %s\n", err);
		return NULL;
	}
	return e;
}

static struct wc_engine *open_engine(struct wc_config *cfg, bool kthreads)
{
	return open_only(cfg, kthreads, 0);
}

/* Run the workload under `name` to completion, reading the engine every
 * 200 ms meanwhile (as a daemon would), then once more after it exits. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static unsigned long long last_died_ns; /* of the last workload reaped */
static uint64_t last_life_ns;		/* from its fork to its reaping */
static uint64_t last_reaped_ns;		/* CLOCK_MONOTONIC */

/* Start the workload under `name`, reporting to report_path if not NULL,
 * without waiting for it. */
static pid_t spawn(const char *name, const char *report_path,
		   const char *const *args)
{
	char link[PATH_MAX];
	const char *argv[32];
	int n = 0;
	pid_t pid;

	snprintf(link, sizeof(link), "%s/%s", bin_dir, name);
	if (symlink(workload, link) != 0 && errno != EEXIST)
		return -1;
	argv[n++] = link;
	if (report_path) {
		argv[n++] = "--report";
		argv[n++] = report_path;
	}
	while (*args && n < 30)
		argv[n++] = *args++;
	argv[n] = NULL;
	fflush(stdout); /* the child's freopen would print it again */
	pid = fork();
	if (pid == 0) {
		/* Named as the workload from the fork, which its report
		 * counts from: an exec slowed by 9p on a starved guest took
		 * over a read, which put the time so far under our name. */
		prctl(PR_SET_NAME, name);
		freopen("/dev/null", "w", stdout);
		execv(link, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static int run_workload(struct wc_engine *e, const char *name,
			const char *const *args, const char *report_path,
			long read_ms)
{
	struct rusage ru;
	char err[512];
	int n, status, every;
	uint64_t born;
	pid_t pid;

	born = mono_ns();
	pid = spawn(name, report_path, args);
	if (pid < 0)
		return -1;
	/* reaped within 10 ms of its death, so its life is known to that;
	 * exits drained between reads as the plugin does, so that another
	 * program's thread storm does not fill the ring; reads half a period
	 * off the workload's whole seconds, when its phases change */
	every = read_ms / 10 > 0 ? read_ms / 10 : 1;
	for (n = 1; wait4(pid, &status, WNOHANG, &ru) == 0; n++) {
		struct timespec ts = {0, 10000000L};

		nanosleep(&ts, NULL);
		if (n % every == every / 2) {
			if (wc_engine_read(e, err, sizeof(err)))
				printf("  read: %s\n", err);
		} else if (wc_engine_drain_exits(e, err, sizeof(err))) {
			printf("  drain: %s\n", err);
		}
	}
	last_reaped_ns = mono_ns();
	last_life_ns = last_reaped_ns - born;
	last_died_ns =
		(unsigned long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
			1000000000ULL +
		(unsigned long long)(ru.ru_utime.tv_usec +
				     ru.ru_stime.tv_usec) *
			1000ULL;
	/* the parent hears of the death before the last thread's final
	 * switch-out, which sends its final record: let it happen */
	usleep(100000);
	/* twice: the first takes the final records, so the second finds
	 * the process's groups without threads */
	for (n = 0; n < 2; n++)
		if (wc_engine_read(e, err, sizeof(err)))
			printf("  read: %s\n", err);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int read_report(const char *path, struct report *r)
{
	char kind[32], line[256];
	unsigned long long on, runq, wall, runs, end;
	FILE *f = fopen(path, "r");
	int tid;

	memset(r, 0, sizeof(*r));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "rusage_ns %llu", &r->rusage_ns) == 1 ||
		    sscanf(line, "stale_naps_ns %llu", &r->stale_ns) == 1)
			continue;
		if (sscanf(line, "thread %31s %d %llu %llu %llu %llu %llu",
			   kind, &tid, &on, &runq, &wall, &runs, &end) == 7) {
			r->on_ns += on;
			r->runq_ns += runq;
			r->wall_ns += wall;
			r->runs += runs;
			if (last_reaped_ns > end)
				r->after_ns += last_reaped_ns - end;
			r->threads++;
		}
	}
	fclose(f);
	return 0;
}

#define NEED_ROOT()                                                            \
	do {                                                                   \
		if (skip_reason[0])                                            \
			SKIP(skip_reason);                                     \
	} while (0)

/* What one profiled run of the workload left behind. */
struct outcome {
	struct group_set groups;
	struct wc_self_stats self;
	struct report report;
};

/* Profile the workload under `name` from before it starts until after it
 * is reaped, reading every read_ms meanwhile. */
static bool profile(const char *name, const char *const *args, long read_ms,
		    struct outcome *o)
{
	struct wc_config cfg;
	struct wc_engine *e;
	char rep[PATH_MAX];
	bool ok;

	memset(o, 0, sizeof(*o));
	e = open_engine(&cfg, false);
	if (!e)
		return false;
	snprintf(rep, sizeof(rep), "%s/%s.report", bin_dir, name);
	ok = run_workload(e, name, args, rep, read_ms) == 0;
	read_report(rep, &o->report); /* none after an exec */
	o->report.died_ns = last_died_ns;
	groups_of(e, &o->groups);
	wc_engine_self(e, &o->self);
	wc_engine_close(e);
	wc_config_free(&cfg);
	return ok;
}

/* Profile a process of `threads` threads, 3 spinning and the rest
 * asleep, for its whole life; false if it did not run. */
static bool profile_life(const char *name, const char *sleepers, int threads,
			 struct outcome *o, const struct wc_group_view **g)
{
	const char *const args[] = {"--spin",	 "3", "--sleep", sleepers,
				    "--seconds", "3", NULL};
	const struct report *r = &o->report;

	CHECK(profile(name, args, 200, o));
	*g = find(&o->groups, name);
	CHECK(*g != NULL && r->threads == threads);
	if (!*g)
		return false;
	printf("# %s: on %.4f runq %.4f sleep %.4f blocked %.4f "
	       "steal %.4f s; kernel on %.4f runq %.4f wall %.4f s; "
	       "walk: %llu runs, %llu refills, %llu failures; "
	       "%llu regressions\n",
	       name, (*g)->time_ns[0] / 1e9, (*g)->time_ns[1] / 1e9,
	       (*g)->time_ns[2] / 1e9, (*g)->time_ns[3] / 1e9,
	       (*g)->time_ns[4] / 1e9, r->on_ns / 1e9, r->runq_ns / 1e9,
	       r->wall_ns / 1e9, (unsigned long long)o->self.walk.runs,
	       (unsigned long long)o->self.walk.refills,
	       (unsigned long long)o->self.walk.failures,
	       (unsigned long long)o->self.acct.regressions);
	return true;
}

/*
 * A whole life's totals against the workload's reports.  A thread's report
 * ends a moment before the thread does, our account at its exit: the steps
 * between (a process's teardown, waits for a CPU) took up to 0.3 s of CPU
 * on a slow emulated one, so each thread may have up to the time from its
 * report to the reaping on top of the bound.  On-CPU against the kernel's
 * total at the death (wait4), which has them.  The run queue against the
 * kernel's less the naps it miscounted (stale queue stamps), which the
 * profiler mends.
 */
static void check_life_totals(const struct wc_group_view *g,
			      const struct report *r)
{
	unsigned long long slack = r->after_ns;
	double runq = (double)(r->runq_ns - r->stale_ns);

	printf("# life: on %.4f s (rusage %.4f), runq %.4f s (report %.4f, "
	       "of it stale %.4f), wall %.4f s (report %.4f, slack %.4f)\n",
	       g->time_ns[WC_T_ONCPU] / 1e9, r->died_ns / 1e9,
	       g->time_ns[WC_T_RUNQ] / 1e9, r->runq_ns / 1e9, r->stale_ns / 1e9,
	       wall_of(g) / 1e9, r->wall_ns / 1e9, slack / 1e9);
	CHECK_NEAR(g->time_ns[WC_T_ONCPU], r->died_ns, 0.01);
	CHECK(g->time_ns[WC_T_RUNQ] >= 0.97 * runq &&
	      g->time_ns[WC_T_RUNQ] <= 1.03 * runq + slack);
	CHECK(wall_of(g) >= 0.99 * r->wall_ns &&
	      wall_of(g) <= 1.01 * r->wall_ns + slack);
}

/* Samples against on-CPU time x frequency: within 10 %, or three standard
 * deviations of a count that size where that is more (about 200 samples
 * here: where the threads share their CPUs with others, each tick lands
 * on one of them by chance). */
static void check_samples(const struct wc_group_view *g, unsigned hz)
{
	double want = g->time_ns[WC_T_ONCPU] / 1e9 * hz;

	CHECK_NEAR(g->samples, want, want > 900 ? 0.10 : 3 / sqrt(want + 1));
}

/* A whole process's life: every thread's time, including the final
 * stretch reported at exit. */
static void test_lifetime_matches_kernel(void)
{
	static struct outcome o;
	const struct report *r = &o.report;
	const struct wc_group_view *g;

	NEED_ROOT();
	if (!profile_life("wce_life", "1", 5, &o, &g))
		return;
	/* read by the open-coded walk after the first read, where the
	 * kernel has it (6.7+), else by the iterator alone */
	CHECK(o.self.walk.loaded ? o.self.walk.runs > 0
				 : o.self.walk.runs == 0);
	CHECK(o.self.walk.failures == 0);
	check_life_totals(g, r);
	check_samples(g, 99);
	CHECK(g->threads == 0);
	CHECK(o.self.acct.threads_lost == 0);
	CHECK(o.self.bpf.v[WC_CNT_EXITS_DROPPED] == 0);
	CHECK(o.self.bpf.v[WC_CNT_EXITS] >= 5);
}

/* The same with an array that holds 36 records: runs stop, and go on from
 * where they stopped (inside the 43-thread process too), and no thread's
 * time is lost or counted twice. */
static void test_walk_refills(void)
{
	static struct outcome o;
	const struct report *r = &o.report;
	const struct wc_group_view *g;

	NEED_ROOT();
	if (!kernel_walks)
		SKIP("this kernel has no open-coded task iterator (6.7+): "
		     "nothing to refill");
	walk.recs = 36;
	if (!profile_life("wce_refill", "39", 43, &o, &g)) {
		walk.recs = 0;
		return;
	}
	walk.recs = 0;
	CHECK(o.self.walk.refills > 0 && o.self.walk.failures == 0);
	check_life_totals(g, r);
	CHECK(g->threads == 0);
	CHECK(o.self.acct.threads_lost == 0);
}

/* A whole life read by the task iterator alone, with *knob set while the
 * engine opens: the same figures as the walk's. */
static void check_iterator_life(const char *name, bool *knob)
{
	static struct outcome o;
	const struct report *r = &o.report;
	const struct wc_group_view *g;
	bool ran;

	*knob = true;
	ran = profile_life(name, "1", 5, &o, &g);
	*knob = false;
	if (!ran)
		return;
	CHECK(o.self.walk.runs == 0);
	check_life_totals(g, r);
	CHECK(o.self.acct.threads_lost == 0);
}

/*
 * Most context switches skip the task storage: a pair of threads passing
 * a token through pipes on one CPU (short sleeps, nothing to park once
 * learned) switches out tens of thousands of times, and only a few of
 * those, host-wide, take the slow path, while the pair's time still
 * matches the kernel's.  On one CPU, because a stint with steal is
 * charged, and a hypervisor counts the wake-up of an idle vCPU as steal:
 * a pair waking each other across CPUs had it in 27 % of its stints.
 */
static void test_most_switches_are_quick(void)
{
	static struct outcome o;
	const char *const args[] = {"--pingpong", "1", "--seconds", "2", NULL};
	const struct report *r = &o.report;
	const struct wc_group_view *g;
	unsigned long long charged;
	cpu_set_t all, one;

	NEED_ROOT();
	CHECK(sched_getaffinity(0, sizeof(all), &all) == 0);
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
	CHECK(profile("wce_quick", args, 200, &o));
	CHECK(sched_setaffinity(0, sizeof(all), &all) == 0);
	g = find(&o.groups, "wce_quick");
	charged = o.self.bpf.v[WC_CNT_SWITCHES_CHARGED];
	printf("# wce_quick: the pair arrived on a CPU %llu times; %llu "
	       "switch-outs charged host-wide\n",
	       r->runs, charged);
	/* thousands are plenty to tell most from some; a slow emulated CPU
	 * makes a tenth of what this one does */
	CHECK(r->threads == 3 && r->runs > 2000); /* and main */
	CHECK(charged * 10 < r->runs);
	CHECK(g != NULL);
	if (!g)
		return;
	check_life_totals(g, r);
}

/* Kernels before 6.7 read with the task iterator alone. */
static void test_iterator_only(void)
{
	NEED_ROOT();
	check_iterator_life("wce_iter", &walk.iterator_only);
}

/* A kernel that will not load the walk: the plugin starts anyway, on the
 * iterator. */
static void test_walk_load_fallback(void)
{
	NEED_ROOT();
	check_iterator_life("wce_nowalk", &walk.refused);
}

/* Threads that live a couple of milliseconds each: only their final
 * records carry them, and none may be lost. */
static void test_short_lived_threads(void)
{
	static const char *const args[] = {
		"--churn", "300", "--churn-us", "2000", "--seconds", "3", NULL};
	static struct outcome o;
	const struct wc_group_view *g;

	NEED_ROOT();
	CHECK(profile("wce_churn", args, 200, &o));
	g = find(&o.groups, "wce_churn");
	CHECK(g != NULL);
	/* against the kernel's own total at the death (the workload's
	 * getrusage misses its report and exit: 3 % on a slow VM).  That
	 * total is taken as each thread leaves its group, and the thread
	 * runs on to its last switch-out, which its final record counts:
	 * microseconds here, a third of a millisecond a thread in an
	 * emulated guest beside busy CPUs (+3.4 % over 300 threads once),
	 * so the plugin may be above it by up to 0.5 ms a thread. */
	if (g) {
		double on = (double)g->time_ns[WC_T_ONCPU];
		double died = (double)o.report.died_ns;
		double tail = 0.5e6 * (double)o.self.bpf.v[WC_CNT_EXITS];

		printf("# wce_churn: on-CPU %.4f s, at the death %.4f s "
		       "(%+.2f %%), %llu exits host-wide\n",
		       on / 1e9, died / 1e9, 100.0 * (on - died) / died,
		       (unsigned long long)o.self.bpf.v[WC_CNT_EXITS]);
		CHECK(on >= died * 0.97 && on <= died * 1.03 + tail);
	}
	CHECK(o.self.bpf.v[WC_CNT_EXITS] >= 300);
	CHECK(o.self.bpf.v[WC_CNT_EXITS_DROPPED] == 0);
	CHECK(o.self.acct.threads_lost == 0);
}

/* exec from a thread that is not the leader: the kernel gives it the
 * leader's PID.  Keyed by thread identity, nothing is counted twice. */
static void test_exec_from_thread(void)
{
	static char execd[PATH_MAX];
	const char *const args[] = {"--exec-thread", execd, "--spin", "1",
				    "--seconds",     "2",   NULL};
	static struct outcome o;
	const struct wc_group_view *before, *after;

	NEED_ROOT();
	snprintf(execd, sizeof(execd), "%s/wce_execd", bin_dir);
	CHECK(symlink("/bin/sleep", execd) == 0 || errno == EEXIST);
	/* after one second the process becomes "wce_execd 2" (sleep) */
	CHECK(profile("wce_exec", args, 1000, &o));
	before = find(&o.groups, "wce_exec");
	after = find(&o.groups, "wce_execd");
	CHECK(before != NULL && after != NULL);
	if (before && after)
		printf("# wce_exec: before on %.3f runq %.3f sleep %.3f blocked "
		       "%.3f steal %.3f s, after on %.3f runq %.3f sleep %.3f "
		       "blocked %.3f steal %.3f s\n",
		       before->time_ns[0] / 1e9, before->time_ns[1] / 1e9,
		       before->time_ns[2] / 1e9, before->time_ns[3] / 1e9,
		       before->time_ns[4] / 1e9, after->time_ns[0] / 1e9,
		       after->time_ns[1] / 1e9, after->time_ns[2] / 1e9,
		       after->time_ns[3] / 1e9, after->time_ns[4] / 1e9);
	/* Three threads until the exec at t, then one: 2 t + life.  The
	 * exec comes after the thread's 1 s nap and leaves the 2 s sleep to
	 * run, so without double counting the sum is within
	 * [life + 2 s, 3 life - 4 s]; counting the exec'ing thread twice
	 * adds t (1 s or more; on a busy emulated CPU both phases stretch,
	 * so no fixed 5 s holds). */
	if (before && after) {
		double sum = (double)(wall_of(before) + wall_of(after));
		double life = (double)last_life_ns;

		printf("# wce_exec: %.3f s of threads over a life of %.3f s\n",
		       sum / 1e9, life / 1e9);
		CHECK(sum >= 0.99 * (life + 2e9) &&
		      sum <= 1.01 * (3 * life - 4e9));
	}
	CHECK(o.self.acct.threads_lost == 0);
}

static bool is_kthread_group(const char *name)
{
	static const char *const known[] = {"kworker",	 "ksoftirqd",
					    "migration", "rcu_preempt",
					    "kthreadd",	 "cpuhp"};
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(name, known[i]) == 0)
			return true;
	return false;
}

static int count_kthread_groups(bool kthreads)
{
	struct wc_config cfg;
	struct wc_engine *e;
	struct group_set s;
	char err[256];
	int i, n = 0;

	e = open_engine(&cfg, kthreads);
	if (!e)
		return -1;
	for (i = 0; i < 5; i++) {
		usleep(200000);
		wc_engine_read(e, err, sizeof(err));
	}
	groups_of(e, &s);
	for (i = 0; i < s.n; i++)
		n += is_kthread_group(s.g[i].name);
	wc_engine_close(e);
	wc_config_free(&cfg);
	return n;
}

/*
 * Children that die at their first switch-out have their whole life sent
 * through the exit ring, and stay zombies until reaped: a walk meeting one
 * must not start tracking it, or once reaped it is a thread lost (the
 * account hears of it no more).  Reads over 200 zombies, then after.
 */
static void test_zombies_not_adopted(void)
{
	struct wc_self_stats a, b;
	struct wc_config cfg;
	struct wc_engine *e;
	pid_t kids[200];
	char err[256];
	int i, n = 0;

	NEED_ROOT();
	e = open_engine(&cfg, false);
	CHECK(e != NULL);
	if (!e)
		return;
	wc_engine_read(e, err, sizeof(err));
	wc_engine_self(e, &a);
	for (i = 0; i < 200; i++) {
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(0);
		n += kids[i] > 0;
	}
	usleep(100000);
	for (i = 0; i < 3; i++)
		wc_engine_read(e, err, sizeof(err));
	for (i = 0; i < 200; i++)
		if (kids[i] > 0)
			waitpid(kids[i], NULL, 0);
	for (i = 0; i < 3; i++)
		wc_engine_read(e, err, sizeof(err));
	wc_engine_self(e, &b);
	printf("# %d zombies: %llu exits, %llu threads lost\n", n,
	       (unsigned long long)(b.bpf.v[WC_CNT_EXITS] -
				    a.bpf.v[WC_CNT_EXITS]),
	       (unsigned long long)(b.acct.threads_lost - a.acct.threads_lost));
	CHECK(n == 200);
	CHECK(b.bpf.v[WC_CNT_EXITS] - a.bpf.v[WC_CNT_EXITS] >= 200);
	CHECK(b.acct.threads_lost == a.acct.threads_lost);
	wc_engine_close(e);
	wc_config_free(&cfg);
}

static void test_kernel_threads_option(void)
{
	NEED_ROOT();
	CHECK(count_kthread_groups(false) == 0);
	CHECK(count_kthread_groups(true) > 0);
}

/*
 * Every sample lands on a profiled thread or on idle, and the idle tasks
 * (all PID 0) never become a process.  The total cannot exceed one sample
 * per period per CPU (late ticks are credited, never invented).  It can
 * fall short: on these VMs an idle vCPU's timer may not fire for seconds
 * (perf's own cpu-clock sampler loses the same ticks): the lower bound is
 * one CPU's worth, which the CPU keeping time always delivers.
 */
/* CPU-seconds all CPUs spent idle, from /proc/stat (idle + iowait). */
static double idle_seconds(void)
{
	unsigned long long v[5] = {0};
	FILE *f = fopen("/proc/stat", "r");
	int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu", &v[0], &v[1],
			   &v[2], &v[3], &v[4])
		  : 0;

	if (f)
		fclose(f);
	return n == 5 ? (double)(v[3] + v[4]) / (double)sysconf(_SC_CLK_TCK)
		      : 0;
}

/* A kernel's BTF of the shape ours has, or an older one's: sched_switch
 * with or without prev_state, a task iterator or none. */
static struct btf *kernel_btf(int switch_args, bool iterator)
{
	struct btf *b = btf__new_empty();
	int i, num, ptr, proto;

	num = btf__add_int(b, "int", 4, BTF_INT_SIGNED);
	ptr = btf__add_ptr(b, 0);
	proto = btf__add_func_proto(b, num);
	btf__add_func_param(b, "__data", ptr);
	for (i = 1; i < switch_args; i++)
		btf__add_func_param(b, "arg", num);
	btf__add_typedef(b, "btf_trace_sched_switch", btf__add_ptr(b, proto));
	if (iterator)
		btf__add_struct(b, "bpf_iter__task", 0);
	return b;
}

/* Below 6.1 the plugin refuses to start, naming what the kernel lacks
 * (older kernels are not in Debian's archive to boot: their BTF shape is
 * made here). */
static void test_old_kernel_refused(void)
{
	struct btf *before_518 = kernel_btf(4, true);
	struct btf *no_iter = kernel_btf(5, false);
	struct btf *ours = kernel_btf(5, true);
	const char *why = wc_collector_btf_lacks(before_518);

	CHECK(why && strstr(why, "prev_state") && strstr(why, "5.18"));
	why = wc_collector_btf_lacks(no_iter);
	CHECK(why && strstr(why, "task iterator"));
	CHECK(wc_collector_btf_lacks(ours) == NULL);
	/* and the kernel this runs on has it all */
	btf__free(ours);
	ours = btf__load_vmlinux_btf();
	CHECK(ours && wc_collector_btf_lacks(ours) == NULL);
	btf__free(before_518);
	btf__free(no_iter);
	btf__free(ours);
}

static void test_idle_is_not_a_process(void)
{
	struct wc_config cfg;
	struct wc_engine *e;
	struct group_set s;
	struct wc_self_stats a, b;
	struct timespec t0, t1;
	char err[256];
	double secs, most, got, idle0, idle;
	int i;

	NEED_ROOT();
	e = open_engine(&cfg, true);
	CHECK(e != NULL);
	if (!e)
		return;
	wc_engine_self(e, &a);
	idle0 = idle_seconds();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	sleep(3);
	wc_engine_read(e, err, sizeof(err));
	wc_engine_self(e, &b);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	idle = idle_seconds() - idle0;
	secs = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	most = secs * 99 * b.ncpus;
	got = (double)(b.bpf.v[WC_CNT_SAMPLES] - a.bpf.v[WC_CNT_SAMPLES] +
		       b.bpf.v[WC_CNT_IDLE_SAMPLES] -
		       a.bpf.v[WC_CNT_IDLE_SAMPLES] +
		       b.bpf.v[WC_CNT_SAMPLES_LOST] -
		       a.bpf.v[WC_CNT_SAMPLES_LOST]);
	printf("# %.0f samples of at most %.0f\n", got, most);
	CHECK(got <= most * 1.02);
	CHECK(got >= 0.8 * secs * 99);
	/* idle samples when the kernel says a CPU was idle a while (a busy
	 * host may leave none) */
	printf("# %.2f CPU-seconds idle, %" PRIu64 " idle samples\n", idle,
	       (uint64_t)(b.bpf.v[WC_CNT_IDLE_SAMPLES] -
			  a.bpf.v[WC_CNT_IDLE_SAMPLES]));
	if (idle > 0.5)
		CHECK(b.bpf.v[WC_CNT_IDLE_SAMPLES] >
		      a.bpf.v[WC_CNT_IDLE_SAMPLES]);
	groups_of(e, &s);
	for (i = 0; i < s.n; i++)
		CHECK(strncmp(s.g[i].name, "swapper", 7) != 0);
	wc_engine_close(e);
	wc_config_free(&cfg);
}

static void test_close_unloads_everything(void)
{
	struct wc_config cfg;
	struct wc_engine *e;
	__u32 ids[64], before;
	int n;

	NEED_ROOT();
	before = newest_program();
	e = open_engine(&cfg, false);
	CHECK(e != NULL);
	if (!e)
		return;
	/* the switch hook, the sampler, the two iterators (records, waits
	 * under way), the open-coded walk (kernels before 6.7 have no
	 * walk) and, from 6.12, the migration and wake-up hooks */
	n = held_programs(ids, 64);
	CHECK(n == 4 + kernel_walks + 2 * kernel_delays);
	wc_engine_close(e);
	wc_config_free(&cfg);
	CHECK(held_programs(ids + n, 64 - n) == 0 && still_loaded(ids, n) == 0);
	CHECK(unheld_programs_after(before) == 0);
}

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Every group with threads read live is dated within the read that read
 * them, by the iterator (the first read) and by the walk after it. */
static void check_stamps(bool iterator_only)
{
	static struct group_set s;
	struct wc_config cfg;
	struct wc_engine *e;
	uint64_t before, after;
	char err[512];
	int i, k, live, bad;

	walk.iterator_only = iterator_only;
	e = open_engine(&cfg, false);
	walk.iterator_only = false;
	CHECK(e != NULL);
	if (!e)
		return;
	for (i = 0; i < 3; i++) {
		before = real_ns();
		CHECK(wc_engine_read(e, err, sizeof(err)) == 0);
		after = real_ns();
		groups_of(e, &s);
		live = bad = 0;
		for (k = 0; k < s.n; k++) {
			/* 0: only final records (threads that exited before
			 * the read, a busy host's cat and rm), which collectd
			 * dates with the read's own time */
			if (!s.g[k].threads || !s.g[k].read_at_ns)
				continue;
			live++;
			if (s.g[k].read_at_ns < before ||
			    s.g[k].read_at_ns > after) {
				printf("  read %d: %s dated %" PRIu64
				       " ns, read in [%" PRIu64 ", %" PRIu64
				       "]\n",
				       i, s.g[k].name, s.g[k].read_at_ns,
				       before, after);
				bad++;
			}
		}
		CHECK(live > 0 && bad == 0);
	}
	wc_engine_close(e);
	wc_config_free(&cfg);
}

static void test_groups_stamped(void)
{
	NEED_ROOT();
	check_stamps(false);
	check_stamps(true);
}

/* Without stacks the same three programs run, and no wait of a sleeper
 * costs a stack walk: none recorded, none parked and wasted. */
static void test_no_stacks_no_walks(void)
{
	const char *args[] = {"--sleep",   "2", "--sleep-ms", "5",
			      "--seconds", "1", NULL};
	struct wc_self_stats self;
	struct wc_config cfg;
	struct wc_engine *e = NULL;
	char err[1024], rep[PATH_MAX];
	__u32 ids[64];
	int n;

	NEED_ROOT();
	wc_config_init(&cfg);
	cfg.stacks = false;
	if (wc_engine_open(&cfg, &e, err, sizeof(err)))
		printf("  engine: %s\n", err);
	CHECK(e != NULL);
	if (!e)
		return;
	n = held_programs(ids, 64);
	CHECK(n == 4 + kernel_walks + 2 * kernel_delays);
	snprintf(rep, sizeof(rep), "%s/wce_nostack.report", bin_dir);
	CHECK(run_workload(e, "wce_nostack", args, rep, 200) == 0);
	wc_engine_self(e, &self);
	printf("# no stacks: %llu samples, %llu off-CPU stacks, %llu walks\n",
	       (unsigned long long)self.bpf.v[WC_CNT_SAMPLES],
	       (unsigned long long)self.bpf.v[WC_CNT_OFFCPU_STACKS],
	       (unsigned long long)self.bpf.v[WC_CNT_WALKS_UNUSED]);
	CHECK(self.bpf.v[WC_CNT_OFFCPU_STACKS] == 0);
	CHECK(self.bpf.v[WC_CNT_WALKS_UNUSED] == 0);
	CHECK(self.bpf.v[WC_CNT_STACK_ERRORS] == 0);
	wc_engine_close(e);
	wc_config_free(&cfg);
	CHECK(still_loaded(ids, n) == 0);
}

#define DECOYS 16

/* Profile with stacks, read once, then drained every 100 ms and read
 * every 200 (as the plugin does), only `only` kept if it is not 0, until
 * the symbolizer holds `want` processes' maps or `*drains` drains have
 * run: how many it then holds.  A starved host may need more than one
 * drain's budget to read them all, so *drains says how many it took.
 * The first read comes first: until a read has seen a process its group
 * is not known, and the drain notes it in case it exits before one does.
 */
static uint64_t held_after(uint32_t only, uint64_t want, int *drains,
			   uint64_t *unowned)
{
	struct wc_self_stats self = {0};
	struct wc_config cfg;
	struct wc_engine *e;
	char err[512];
	int n;

	e = open_only(&cfg, false, only);
	CHECK(e != NULL);
	if (!e)
		return 0;
	if (wc_engine_read(e, err, sizeof(err)))
		printf("  read: %s\n", err);
	for (n = 1; n <= *drains; n++) {
		usleep(100000);
		if (n % 2 == 0 && wc_engine_read(e, err, sizeof(err)))
			printf("  read: %s\n", err);
		if (wc_engine_drain(e, err, sizeof(err)))
			printf("  drain: %s\n", err);
		wc_engine_self(e, &self);
		if (self.flush.sym_procs >= want)
			break;
	}
	*drains = n > *drains ? *drains : n;
	*unowned = self.weights_unowned;
	wc_engine_close(e);
	wc_config_free(&cfg);
	return self.flush.sym_procs;
}

/* Processes left out (the command line's -p, Unmatched "drop") show in no
 * file: reading their maps would only spend the drains' budget, which a
 * busy host needs for the processes kept. */
static void end_all(pid_t *pids, int n)
{
	int i, status;

	for (i = 0; i < n; i++) {
		if (pids[i] <= 0)
			continue;
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
	}
}

static void test_dropped_not_read(void)
{
	const char *const args[] = {"--sleep",	 "1",  "--sleep-ms", "5",
				    "--seconds", "30", NULL};
	uint64_t all, kept, unowned_all, unowned_kept;
	pid_t pids[DECOYS + 1];
	int i, took = 150, drains;

	NEED_ROOT();
	if (getenv("WC_EMULATED_CPU"))
		SKIP("the engine's own choice, the same on every kernel (the "
		     "host runs it): on an emulated CPU the host starves, the "
		     "decoys first run after the reads that would know them, "
		     "and a process not known yet is noted");
	for (i = 0; i <= DECOYS; i++)
		pids[i] = spawn(i ? "wce_decoy" : "wce_kept", NULL, args);
	usleep(300000);
	all = held_after(0, DECOYS + 1, &took, &unowned_all);
	printf("# maps held: %llu with every process kept (after %d drains)\n",
	       (unsigned long long)all, took);
	/* as many drains as every process took: as much budget, at least */
	drains = took < 20 ? 20 : took;
	kept = held_after((uint32_t)pids[0], UINT64_MAX, &drains,
			  &unowned_kept);
	printf("# maps held: %llu with one kept (after %d; %llu and %llu "
	       "weights left out)\n",
	       (unsigned long long)kept, drains,
	       (unsigned long long)unowned_all,
	       (unsigned long long)unowned_kept);
	/* most decoys show when kept; the one kept still shows, they not */
	CHECK(all > DECOYS / 2);
	CHECK(unowned_kept >= DECOYS);
	CHECK(kept >= 1 && kept <= all / 4);
	end_all(pids, DECOYS + 1);
}

int main(int argc, char **argv)
{
	check_prog = "test_engine";
	if (argc < 2) {
		fprintf(stderr, "usage: test_engine PATH_TO_WORKLOAD\n");
		return 2;
	}
	workload = realpath(argv[1], NULL);
	if (!workload) {
		perror(argv[1]);
		return 2;
	}
	quiet_logs();
	kernel_walks = wc_collector_kernel_walks();
	kernel_delays = wc_collector_kernel_delays();
	if (geteuid() != 0)
		snprintf(skip_reason, sizeof(skip_reason),
			 "needs root to load BPF programs");
	if (!mkdtemp(bin_dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_close_unloads_everything);
	RUN(test_no_stacks_no_walks);
	RUN(test_groups_stamped);
	RUN(test_lifetime_matches_kernel);
	RUN(test_walk_refills);
	RUN(test_iterator_only);
	RUN(test_walk_load_fallback);
	RUN(test_most_switches_are_quick);
	RUN(test_short_lived_threads);
	RUN(test_exec_from_thread);
	RUN(test_zombies_not_adopted);
	RUN(test_kernel_threads_option);
	RUN(test_idle_is_not_a_process);
	RUN(test_old_kernel_refused);
	RUN(test_dropped_not_read);
	if (fork() == 0) /* leave the directory to rm, not to this process */
		execlp("rm", "rm", "-rf", bin_dir, (char *)NULL);
	wait(NULL);
	return check_done();
}
