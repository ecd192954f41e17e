/*
 * test_cycle.c - one whole life of the profiler under LeakSanitizer (built
 * with -fsanitize=address): open with stacks, reads, stack drains and
 * flushes to a spool while a workload spins, sleeps and makes threads,
 * then close; exits drain in a thread of their own meanwhile, as collectd
 * runs them.  Every allocation must be freed by then (LSan fails the
 * program at exit otherwise), the spool must hold the flushes, and no BPF
 * program of ours may be left loaded.  Built again with the whole core
 * under ThreadSanitizer (test_cycle_tsan), which fails the program on a
 * data race between the exit drain and the rest.  Needs root.
 *
 *   test_cycle WORKLOAD
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_test.h"
#include "check.h"
#include "core/wc_config.h"
#include "engine/wc_engine.h"

static const char *workload;

/* The exit drain's thread: ten times a second, as the plugin's. */
struct drainer {
	struct wc_engine *e;
	atomic_bool stop;
	atomic_int failures;
	int runs;
};

static void *drain_exits(void *arg)
{
	struct drainer *d = arg;
	struct timespec tick = {0, 10000000};
	char err[256];

	while (!atomic_load(&d->stop)) {
		if (wc_engine_drain_exits(d->e, err, sizeof(err)))
			atomic_fetch_add(&d->failures, 1);
		d->runs++;
		nanosleep(&tick, NULL);
	}
	return NULL;
}

static pid_t start_workload(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl(workload, workload, "--spin", "1", "--sleep", "1",
		      "--sleep-ms", "5", "--churn", "200", "--seconds", "5",
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

static int count_files(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += strncmp(de->d_name, "wallclock-", 10) == 0 &&
		     strstr(de->d_name, suffix) != NULL;
	closedir(d);
	return n;
}

/* A whole life of an engine; the programs it loaded into ids, *n. */
static void run_cycle(struct wc_config *cfg, int *flushes, __u32 *ids, int *n)
{
	struct wc_engine *e = NULL;
	struct timespec tick = {0, 100000000};
	struct drainer d = {0};
	pthread_t t;
	char err[1024];
	pid_t w;
	int i, status;

	CHECK(wc_engine_open(cfg, &e, err, sizeof(err)) == 0);
	if (!e) {
		printf("  %s\n", err);
		return;
	}
	*n = held_programs(ids, 64);
	d.e = e;
	CHECK(pthread_create(&t, NULL, drain_exits, &d) == 0);
	w = start_workload();
	for (i = 1; i <= 60; i++) {
		nanosleep(&tick, NULL);
		if (i % 10)
			continue;
		CHECK(wc_engine_read(e, err, sizeof(err)) == 0);
		CHECK(wc_engine_drain(e, err, sizeof(err)) == 0);
		*flushes += wc_engine_maybe_flush(e, time(NULL), err,
						  sizeof(err)) == 1;
	}
	waitpid(w, &status, 0);
	atomic_store(&d.stop, true);
	pthread_join(t, NULL);
	printf("# %d exit drains beside, %d failed\n", d.runs,
	       atomic_load(&d.failures));
	CHECK(d.runs > 0 && atomic_load(&d.failures) == 0);
	wc_engine_close(e);
}

static void test_whole_life(void)
{
	char dir[] = "/var/tmp/wc-cycle-XXXXXX", spool[64];
	struct wc_config cfg;
	int flushes = 0, n = 0;
	__u32 ids[64], before;

	if (geteuid() != 0)
		SKIP("needs root (BPF)");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	wc_config_init(&cfg);
	snprintf(cfg.spool_dir, sizeof(cfg.spool_dir), "%s", spool);
	cfg.flush_interval_s = 2;
	before = newest_program();
	run_cycle(&cfg, &flushes, ids, &n);
	printf("# %d flushes, %d folded files, %d flame graphs\n", flushes,
	       count_files(spool, ".folded"), count_files(spool, ".svg"));
	CHECK(flushes >= 2 && count_files(spool, ".folded") == flushes &&
	      count_files(spool, ".svg") == flushes);
	/* closed: its programs go with their last descriptor, and none it
	 * loaded for a moment is left held by no one */
	CHECK(n > 0 && still_loaded(ids, n) == 0);
	CHECK(unheld_programs_after(before) == 0);
	wc_config_free(&cfg);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		CHECK(system(cmd) == 0);
	}
}

int main(int argc, char **argv)
{
	check_prog = "test_cycle";
	if (argc < 2) {
		fprintf(stderr, "usage: test_cycle WORKLOAD\n");
		return 2;
	}
	workload = argv[1];
	quiet_logs();
	signal(SIGPIPE, SIG_IGN);
	RUN(test_whole_life);
	return check_done();
}
