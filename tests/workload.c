/*
 * workload.c - threads that each do one known thing, for a known time.
 *
 * The truth the tests compare the profiler against comes from two places:
 * the design (a spinner is on a CPU or waiting for one, a sleeper sleeps)
 * and the kernel (each thread reads its own /proc/thread-self/schedstat
 * just before it ends and the report lists them).  Functions are noinline
 * with telling names so stack tests can find them; build with frame
 * pointers.
 *
 *   workload [--spin N] [--sleep N] [--sleep-ms MS] [--long-ms MS]
 *            [--disk N] [--lock N]
 *            [--pingpong PAIRS] [--sleep-depth FRAMES] [--churn PER_SEC]
 *            [--churn-us US] [--churners N] [--seconds S] [--dir DIR]
 *            [--name COMM] [--report FILE] [--exec-thread PROGRAM]
 *            [--nappers N] [--moved STALE]
 *
 * Prints "ready PID" once every thread runs.  Exit status 0 on success.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 256
#define DISK_BLOCK 4096

struct result {
	const char *kind;
	pid_t tid;
	uint64_t on_ns, runq_ns, wall_ns;
	uint64_t runs;	 /* times it arrived on a CPU (schedstat's pcount) */
	uint64_t end_ns; /* when it reported (CLOCK_MONOTONIC) */
};

static struct {
	int spin, sleep, disk, lock, pingpong;
	int waiters;	 /* pairs of a pipe reader and a condition waiter */
	int sleep_depth; /* frames the sleepers descend before sleeping */
	long sleep_ms;
	long long_ms; /* naps at least this long are summed in the report */
	int nappers;  /* threads asleep, waking once a second, not reported */
	int moved;    /* naps of a sleeper moved to another CPU as it naps */
	int churn_per_sec;
	int churners; /* threads sharing churn_per_sec */
	long churn_us;
	double seconds;
	const char *dir;
	const char *name;
	const char *report;
	const char *exec_thread; /* a program taking seconds, like sleep */
} opt = {.seconds = 10, .dir = "/var/tmp", .churn_us = 1000, .churners = 1};

static uint64_t deadline_ns;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t started;
static struct result results[MAX_WORKERS + 1];
static int nresults;
static pthread_mutex_t results_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* This thread's schedstat: time on a CPU, time waiting for one (ns) and
 * arrivals on a CPU; all 0 if it cannot be read. */
struct schedstat {
	unsigned long long on, runq, runs;
};

static struct schedstat read_schedstat(void)
{
	struct schedstat st = {0, 0, 0};
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (f) {
		if (fscanf(f, "%llu %llu %llu", &st.on, &st.runq, &st.runs) !=
		    3)
			st.on = st.runq = st.runs = 0;
		fclose(f);
	}
	return st;
}

/* When this thread began: now, less the wait for a CPU it had before it
 * first ran (a new thread waits in the run queue from its creation; on a
 * busy emulated CPU for tens of milliseconds, which the profiler counts)
 * and what it has run since (tens of milliseconds there too). */
static uint64_t thread_start_ns(void)
{
	uint64_t now = now_ns();
	struct schedstat st = read_schedstat();

	return st.on + st.runq < now ? now - st.on - st.runq : now;
}

/* When this process began (fork), from the kernel's record of it: the
 * profiler counts the thread from there, and an exec and the dynamic
 * loader over a slow emulated disk took a tenth of a second before main.
 * starttime is in clock ticks on CLOCK_BOOTTIME; now if it cannot be
 * read. */
static uint64_t process_start_ns(void)
{
	char buf[1024], *p;
	unsigned long long ticks = 0;
	struct timespec boot;
	uint64_t now = now_ns(), boot_ns, start_ns;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	int i;

	if (f)
		fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	for (i = 0; p && i < 20; i++) /* field 22, the 20th after ")" */
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, "%llu", &ticks) != 1 || hz <= 0 ||
	    clock_gettime(CLOCK_BOOTTIME, &boot))
		return now;
	boot_ns =
		(uint64_t)boot.tv_sec * 1000000000ULL + (uint64_t)boot.tv_nsec;
	/* the kernel rounds down to a tick: take the middle of it */
	start_ns = (2 * ticks + 1) * (500000000ULL / (uint64_t)hz);
	return start_ns < boot_ns && boot_ns - start_ns < now
		       ? now - (boot_ns - start_ns)
		       : now;
}

static void record(const char *kind, uint64_t start_ns)
{
	struct schedstat st = read_schedstat();
	struct result *r;

	pthread_mutex_lock(&results_lock);
	if (nresults < MAX_WORKERS + 1) {
		r = &results[nresults++];
		r->kind = kind;
		r->tid = gettid();
		r->on_ns = st.on;
		r->runq_ns = st.runq;
		r->end_ns = now_ns();
		r->wall_ns = r->end_ns - start_ns;
		r->runs = st.runs;
	}
	pthread_mutex_unlock(&results_lock);
}

__attribute__((noinline)) static void burn_cpu(uint64_t until_ns)
{
	uint64_t x = 1;

	while (now_ns() < until_ns) {
		int i;

		for (i = 0; i < 10000; i++)
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	}
	sink = x;
}

__attribute__((noinline)) static void sleep_a_while(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000ULL),
		.tv_nsec = (long)(ns % 1000000000ULL),
	};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

__attribute__((noinline)) static void wait_for_disk(int fd, void *block)
{
	if (pwrite(fd, block, DISK_BLOCK, 0) != DISK_BLOCK)
		perror("pwrite");
	if (fdatasync(fd) != 0)
		perror("fdatasync");
}

__attribute__((noinline)) static void fight_for_lock(void)
{
	pthread_mutex_lock(&lock);
	burn_cpu(now_ns() + 1000000);
	pthread_mutex_unlock(&lock);
}

static void *spinner(void *arg)
{
	uint64_t start = thread_start_ns();

	(void)arg;
	pthread_barrier_wait(&started);
	burn_cpu(deadline_ns);
	record("spin", start);
	return NULL;
}

/* A deep stack: d frames of descend() above sleep_a_while. */
__attribute__((noinline)) static void descend(int d, uint64_t ns)
{
	if (d > 0)
		descend(d - 1, ns);
	else
		sleep_a_while(ns);
	sink += (uint64_t)d; /* not a tail call */
}

static uint64_t long_naps_ns; /* naps of --long-ms or more, summed */

/*
 * Sleep the kernel counted as run queue time.  On kernels that delay
 * dequeues, a sleeper moved to another CPU as it falls asleep keeps a
 * stale queue stamp, and its schedstat then counts the nap as a wait for
 * a CPU (see --moved); the profiler mends that.  A nap whose run_delay
 * grew by more than half of it beyond its lateness (the only real wait
 * for a CPU it can hold) had one.  Only naps of half a second or more
 * are watched: the reads around a nap are on-CPU stacks of their own,
 * and on a slow emulated CPU they cost about what the nap's system call
 * does.
 */
#define STALE_WATCH_NS 500000000ULL

static uint64_t stale_naps_ns;

/* After a nap of `nap` ns that took `took`, run_delay having been rd0. */
static void note_stale(uint64_t rd0, uint64_t nap, uint64_t took)
{
	uint64_t grew = read_schedstat().runq - rd0;
	uint64_t late = took > nap ? took - nap : 0;

	if (grew > late && grew - late > nap / 2)
		__atomic_fetch_add(&stale_naps_ns, grew - late,
				   __ATOMIC_RELAXED);
}

static void *sleeper(void *arg)
{
	uint64_t start = thread_start_ns();
	uint64_t chunk = (uint64_t)opt.sleep_ms * 1000000ULL;

	(void)arg;
	pthread_barrier_wait(&started);
	while (now_ns() < deadline_ns) {
		uint64_t left = deadline_ns - now_ns(), t, took, rd = 0;
		uint64_t nap = chunk && chunk < left ? chunk : left;
		bool watch = nap >= STALE_WATCH_NS;

		if (watch)
			rd = read_schedstat().runq;
		t = now_ns();
		descend(opt.sleep_depth, nap);
		took = now_ns() - t;
		if (watch)
			note_stale(rd, nap, took);
		/* a slow machine wakes a short nap late */
		if (opt.long_ms && took >= (uint64_t)opt.long_ms * 1000000ULL)
			__atomic_fetch_add(&long_naps_ns, took,
					   __ATOMIC_RELAXED);
	}
	record("sleep", start);
	return NULL;
}

/* Two threads handing a byte back and forth through pipes: each wait is
 * a few microseconds, the shortest a thread can sleep. */
struct pair {
	int there[2], back[2];
};

static struct pair pairs[MAX_WORKERS / 2];

static void *pinger(void *arg)
{
	struct pair *p = arg;
	uint64_t start = thread_start_ns();
	char c = 'p';

	pthread_barrier_wait(&started);
	while (now_ns() < deadline_ns) {
		if (write(p->there[1], &c, 1) != 1 ||
		    read(p->back[0], &c, 1) != 1)
			break;
	}
	c = 'q';
	if (write(p->there[1], &c, 1) != 1)
		perror("pinger");
	record("pingpong", start);
	return NULL;
}

static void *ponger(void *arg)
{
	struct pair *p = arg;
	uint64_t start = thread_start_ns();
	char c;

	pthread_barrier_wait(&started);
	while (read(p->there[0], &c, 1) == 1 && c != 'q') {
		if (write(p->back[1], &c, 1) != 1)
			break;
	}
	record("pingpong", start);
	return NULL;
}

static void *disk_writer(void *arg)
{
	uint64_t start = thread_start_ns();
	char path[4096];
	void *block;
	int fd;

	(void)arg;
	snprintf(path, sizeof(path), "%s/wc-workload-%d-%d.dat", opt.dir,
		 getpid(), gettid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	if (fd < 0) /* tmpfs has no O_DIRECT: still sync, still blocks less */
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || posix_memalign(&block, DISK_BLOCK, DISK_BLOCK)) {
		perror(path);
		exit(1);
	}
	memset(block, 0x5a, DISK_BLOCK);
	unlink(path);
	pthread_barrier_wait(&started);
	while (now_ns() < deadline_ns)
		wait_for_disk(fd, block);
	close(fd);
	free(block);
	record("disk", start);
	return NULL;
}

static void *locker(void *arg)
{
	uint64_t start = thread_start_ns();

	(void)arg;
	pthread_barrier_wait(&started);
	while (now_ns() < deadline_ns)
		fight_for_lock();
	record("lock", start);
	return NULL;
}

static void *short_lived(void *arg)
{
	(void)arg;
	burn_cpu(now_ns() + (uint64_t)opt.churn_us * 1000);
	return NULL;
}

/* Threads that live a moment each: exits the profiler must not lose. */
static unsigned long long churned; /* threads the churners made */

/* Its share of PER_SEC threads a second, paced by count (a sleep a thread
 * could not reach 10,000 a second): as many as are due, then a
 * millisecond off.  Each waits for one exit before the next creation, so
 * one churner makes about 10,000 a second with a CPU of its own here:
 * several share a higher rate, or one on a busy host. */
static void *churner(void *arg)
{
	uint64_t start = thread_start_ns(), now;
	unsigned long long mine = 0;

	(void)arg;
	pthread_barrier_wait(&started);
	while ((now = now_ns()) < deadline_ns) {
		unsigned long long due = (now - start) *
					 (uint64_t)opt.churn_per_sec /
					 (uint64_t)opt.churners / 1000000000ULL;

		for (; mine < due; mine++) {
			pthread_t t;

			if (pthread_create(&t, NULL, short_lived, NULL) != 0)
				break;
			pthread_join(t, NULL);
			__atomic_add_fetch(&churned, 1, __ATOMIC_RELAXED);
		}
		sleep_a_while(1000000);
	}
	record("churn", start);
	return NULL;
}

/* exec from a thread that is not the leader: the kernel hands it the
 * leader's PID, a case profilers keyed by TID get wrong. */
static void *execer(void *arg)
{
	char secs[32];

	(void)arg;
	pthread_barrier_wait(&started);
	sleep_a_while(1000000000ULL);
	snprintf(secs, sizeof(secs), "%.3f", opt.seconds);
	execl(opt.exec_thread, opt.exec_thread, secs, (char *)NULL);
	perror(opt.exec_thread);
	exit(1);
}

/* Threads that wait in one call each until the deadline, when main wakes
 * them: a read on a pipe and a condition variable. */
static int wait_pipe[2];
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static int woken;

__attribute__((noinline)) static void wait_in_read(void)
{
	char c;

	if (read(wait_pipe[0], &c, 1) != 1)
		perror("read");
	sink++; /* not a tail call */
}

__attribute__((noinline)) static void wait_on_cond(void)
{
	pthread_mutex_lock(&wake_lock);
	while (!woken)
		pthread_cond_wait(&wake_cond, &wake_lock);
	pthread_mutex_unlock(&wake_lock);
	sink++;
}

/* A pipe reader (arg NULL) or a condition waiter. */
static void *waiter(void *arg)
{
	uint64_t start = thread_start_ns();

	pthread_barrier_wait(&started);
	if (arg)
		wait_on_cond();
	else
		wait_in_read();
	record(arg ? "condwait" : "piperead", start);
	return NULL;
}

static void wake_waiters(void)
{
	struct timespec at = {(time_t)(deadline_ns / 1000000000ULL),
			      (long)(deadline_ns % 1000000000ULL)};
	int i;

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL))
		;
	pthread_mutex_lock(&wake_lock);
	woken = 1;
	pthread_cond_broadcast(&wake_cond);
	pthread_mutex_unlock(&wake_lock);
	for (i = 0; i < opt.waiters; i++)
		if (write(wait_pipe[1], "w", 1) != 1)
			perror("write");
}

/* One of many threads of a big idle server: asleep, waking once a second
 * (each at its own moment) until the process ends. */
static void *napper(void *arg)
{
	struct timespec ts = {0, (long)((uintptr_t)arg % 1000) * 1000000L};

	nanosleep(&ts, NULL);
	ts = (struct timespec){1, 0};
	for (;;)
		nanosleep(&ts, NULL);
	return NULL;
}

/*
 * --moved N: a sleeper that naps 200 ms after a millisecond of work beside
 * a spinner on CPU 0, and a mover on CPU 1 that moves it there as it naps,
 * until N naps were miscounted (or 250 naps).
 * Having just run ahead of the spinner, the sleeper often stays queued a
 * while (delayed dequeue), and the move then leaves its queue stamp
 * stale: the kernel counts the nap as run queue time.  The report says
 * how often, and how much, as the sleeper's own schedstat saw it, and how
 * late those naps ended (the real wait for a CPU after the wake-up, which
 * is run queue time indeed).
 */
#define MOVED_NAP_NS 200000000ULL
#define MOVED_MAX_NAPS 250

static int moved_napping;
static int moved_pipe[2];
static unsigned long long moved_naps, moved_stale, moved_stale_ns;
static unsigned long long moved_stale_late_ns;
static pid_t moved_tid;

static void pin_to(pid_t tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(tid, sizeof(set), &set);
}

static void *moved_sleeper(void *arg)
{
	uint64_t start = thread_start_ns();
	struct timespec nap = {0, (long)MOVED_NAP_NS};
	int i;

	(void)arg;
	moved_tid = gettid();
	pthread_barrier_wait(&started);
	for (i = 0; i < MOVED_MAX_NAPS && moved_stale < (unsigned)opt.moved;
	     i++) {
		unsigned long long rd;
		uint64_t t0, slept;

		pin_to(0, 0);
		burn_cpu(now_ns() + 1000000);
		rd = read_schedstat().runq;
		if (write(moved_pipe[1], "n", 1) != 1)
			break;
		t0 = now_ns();
		nanosleep(&nap, NULL);
		slept = now_ns() - t0;
		rd = read_schedstat().runq - rd;
		moved_naps++;
		if (rd > MOVED_NAP_NS / 2) {
			moved_stale++;
			moved_stale_ns += rd;
			if (slept > MOVED_NAP_NS)
				moved_stale_late_ns += slept - MOVED_NAP_NS;
		}
	}
	__atomic_store_n(&moved_napping, -1, __ATOMIC_RELEASE);
	if (write(moved_pipe[1], "q", 1) != 1)
		perror("write");
	record("moved", start);
	return NULL;
}

static void *moved_spinner(void *arg)
{
	uint64_t start = thread_start_ns();

	(void)arg;
	pin_to(0, 0);
	pthread_barrier_wait(&started);
	while (__atomic_load_n(&moved_napping, __ATOMIC_ACQUIRE) >= 0)
		burn_cpu(now_ns() + 1000000);
	record("spin", start);
	return NULL;
}

static void *mover(void *arg)
{
	uint64_t start = thread_start_ns();
	struct sched_param fifo = {.sched_priority = 1};
	struct timespec soon = {0, 20000};
	char c;

	(void)arg;
	pin_to(0, 1);
	/* busy CPUs must not make it late: the sleeper stays queued for
	 * about the millisecond it ran ahead */
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo);
	pthread_barrier_wait(&started);
	while (read(moved_pipe[0], &c, 1) == 1 && c == 'n') {
		nanosleep(&soon, NULL);
		pin_to(moved_tid, 1);
	}
	record("mover", start);
	return NULL;
}

static int start_nappers(void)
{
	pthread_attr_t attr;
	pthread_t t;
	int i;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (i = 0; i < opt.nappers; i++)
		if (pthread_create(&t, &attr, napper, (void *)(uintptr_t)i)) {
			perror("pthread_create");
			return -1;
		}
	pthread_attr_destroy(&attr);
	return 0;
}

/* The churner threads: none without a rate. */
static int churners(void)
{
	return opt.churn_per_sec > 0 ? opt.churners : 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: workload [--spin N] [--sleep N] [--sleep-ms MS] "
		"[--long-ms MS] [--disk N] [--lock N]\n"
		"                [--pingpong PAIRS] [--sleep-depth FRAMES] "
		"                [--churn PER_SEC] [--churn-us US] "
		"[--churners N] [--seconds S] [--dir DIR]\n"
		"                [--name COMM] [--report FILE] "
		"[--exec-thread PROGRAM]\n"
		"                [--nappers N] [--waiters PAIRS] [--moved N]\n");
	return 2;
}

static int parse(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			return usage();
		i++;
		if (strcmp(a, "--spin") == 0)
			opt.spin = atoi(v);
		else if (strcmp(a, "--sleep") == 0)
			opt.sleep = atoi(v);
		else if (strcmp(a, "--sleep-ms") == 0)
			opt.sleep_ms = atol(v);
		else if (strcmp(a, "--moved") == 0)
			opt.moved = atoi(v);
		else if (strcmp(a, "--nappers") == 0)
			opt.nappers = atoi(v);
		else if (strcmp(a, "--long-ms") == 0)
			opt.long_ms = atol(v);
		else if (strcmp(a, "--sleep-depth") == 0)
			opt.sleep_depth = atoi(v);
		else if (strcmp(a, "--disk") == 0)
			opt.disk = atoi(v);
		else if (strcmp(a, "--lock") == 0)
			opt.lock = atoi(v);
		else if (strcmp(a, "--pingpong") == 0)
			opt.pingpong = atoi(v);
		else if (strcmp(a, "--waiters") == 0)
			opt.waiters = atoi(v);
		else if (strcmp(a, "--churn") == 0)
			opt.churn_per_sec = atoi(v);
		else if (strcmp(a, "--churn-us") == 0)
			opt.churn_us = atol(v);
		else if (strcmp(a, "--churners") == 0)
			opt.churners = atoi(v);
		else if (strcmp(a, "--seconds") == 0)
			opt.seconds = atof(v);
		else if (strcmp(a, "--dir") == 0)
			opt.dir = v;
		else if (strcmp(a, "--name") == 0)
			opt.name = v;
		else if (strcmp(a, "--report") == 0)
			opt.report = v;
		else if (strcmp(a, "--exec-thread") == 0)
			opt.exec_thread = v;
		else
			return usage();
	}
	if (opt.spin + opt.sleep + opt.disk + opt.lock + 2 * opt.pingpong +
			    2 * opt.waiters + churners() +
			    (opt.exec_thread != NULL) >
		    MAX_WORKERS ||
	    opt.churners < 1)
		return usage();
	return 0;
}

static void write_report(uint64_t start)
{
	struct rusage ru;
	FILE *f;
	int i;

	record("main", start);
	if (!opt.report)
		return;
	f = fopen(opt.report, "w");
	if (!f) {
		perror(opt.report);
		exit(1);
	}
	getrusage(RUSAGE_SELF, &ru);
	fprintf(f, "pid %d\n", getpid());
	fprintf(f, "churned %llu\n", churned);
	fprintf(f, "long_naps_ns %llu\n", (unsigned long long)long_naps_ns);
	fprintf(f, "stale_naps_ns %llu\n", (unsigned long long)stale_naps_ns);
	fprintf(f, "moved_naps %llu\n", moved_naps);
	fprintf(f, "moved_stale %llu\n", moved_stale);
	fprintf(f, "moved_stale_ns %llu\n", moved_stale_ns);
	fprintf(f, "moved_stale_late_ns %llu\n", moved_stale_late_ns);
	fprintf(f, "rusage_ns %llu\n",
		(unsigned long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
				1000000000ULL +
			(unsigned long long)(ru.ru_utime.tv_usec +
					     ru.ru_stime.tv_usec) *
				1000ULL);
	for (i = 0; i < nresults; i++)
		fprintf(f, "thread %s %d %llu %llu %llu %llu %llu\n",
			results[i].kind, results[i].tid,
			(unsigned long long)results[i].on_ns,
			(unsigned long long)results[i].runq_ns,
			(unsigned long long)results[i].wall_ns,
			(unsigned long long)results[i].runs,
			(unsigned long long)results[i].end_ns);
	fclose(f);
}

int main(int argc, char **argv)
{
	pthread_t threads[MAX_WORKERS];
	uint64_t start = process_start_ns();
	int n = 0, total, i;

	if (parse(argc, argv))
		return 2;
	if (opt.name)
		prctl(PR_SET_NAME, opt.name, 0, 0, 0);
	total = opt.spin + opt.sleep + opt.disk + opt.lock + 2 * opt.pingpong +
		2 * opt.waiters + churners() + (opt.exec_thread != NULL) +
		3 * (opt.moved > 0);
	pthread_barrier_init(&started, NULL, (unsigned)total + 1);
	deadline_ns = now_ns() + (uint64_t)(opt.seconds * 1e9);
	for (i = 0; i < opt.spin; i++)
		pthread_create(&threads[n++], NULL, spinner, NULL);
	for (i = 0; i < opt.sleep; i++)
		pthread_create(&threads[n++], NULL, sleeper, NULL);
	for (i = 0; i < opt.disk; i++)
		pthread_create(&threads[n++], NULL, disk_writer, NULL);
	for (i = 0; i < opt.lock; i++)
		pthread_create(&threads[n++], NULL, locker, NULL);
	for (i = 0; i < opt.pingpong; i++) {
		if (pipe(pairs[i].there) || pipe(pairs[i].back)) {
			perror("pipe");
			return 1;
		}
		pthread_create(&threads[n++], NULL, pinger, &pairs[i]);
		pthread_create(&threads[n++], NULL, ponger, &pairs[i]);
	}
	if (opt.waiters && pipe(wait_pipe)) {
		perror("pipe");
		return 1;
	}
	for (i = 0; i < opt.waiters; i++) {
		pthread_create(&threads[n++], NULL, waiter, NULL);
		pthread_create(&threads[n++], NULL, waiter, &woken);
	}
	for (i = 0; i < churners(); i++)
		pthread_create(&threads[n++], NULL, churner, NULL);
	if (opt.exec_thread)
		pthread_create(&threads[n++], NULL, execer, NULL);
	if (opt.moved > 0) {
		if (pipe(moved_pipe)) {
			perror("pipe");
			return 1;
		}
		pthread_create(&threads[n++], NULL, moved_sleeper, NULL);
		pthread_create(&threads[n++], NULL, moved_spinner, NULL);
		pthread_create(&threads[n++], NULL, mover, NULL);
	}
	if (start_nappers())
		return 1;
	pthread_barrier_wait(&started);
	printf("ready %d\n", getpid());
	fflush(stdout);
	if (opt.waiters)
		wake_waiters();
	for (i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	write_report(start);
	return 0;
}
