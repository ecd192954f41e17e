/*
 * readbench.c - what one read costs, measured from inside: opens the
 * engine at the plugin's defaults (the whole host), then once a second
 * drains the stack tables and reads, timing each read by the clock, by
 * the thread's CPU time, and by the thread's kernel time (the BPF walk
 * runs inside the syscalls that start it).  Run it beside the scale
 * benchmark's workload (tests/bench/scalegen.py says how to build and
 * start it); comparing two builds means running theirs in turn, each
 * over the same workload.
 *
 *   readbench [-n READS] [-s SKIP] [-i SECONDS] [-S] [-C MIB]
 *
 * -i: seconds between reads (default 1; the stack tables are drained
 * every second in between, as the plugin does).  -S: Stacks false.  -C: before each read, write MIB of memory so that
 * the walk starts with cold caches whatever the workload did in between
 * (steadier figures for comparing two builds on an idle workload).
 *
 * Prints one line per read ("read WALL_US CPU_US SYS_US RUN_US HAND_US":
 * RUN the kernel's walk, HAND handing its records to the accounting, both
 * wall time) after the first SKIP (default 3: the first walks adopt every
 * thread), then a summary line with medians.  Asserts nothing.  Needs root.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "engine/wc_engine.h"

#define MAX_READS 10000

/* never flushed into: only so the engine has a spool of its own */
static char spool_dir[] = "/tmp/wc-readbench.XXXXXX";

static uint64_t clock_us(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t sys_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return (uint64_t)ru.ru_stime.tv_sec * 1000000u +
	       (uint64_t)ru.ru_stime.tv_usec;
}

/* Push everything else out of the CPU caches. */
static void chill(unsigned char *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += 64)
		buf[i]++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return n ? v[n / 2] : 0;
}

static int open_engine(bool stacks, struct wc_config *cfg, struct wc_engine **e)
{
	struct wc_cval off = {.type = WC_CVAL_BOOL, .b = false};
	struct wc_cval dir = {.type = WC_CVAL_STRING, .s = spool_dir};
	char err[1024] = "";

	if (!mkdtemp(spool_dir))
		return perror("readbench: mkdtemp"), -1;
	wc_config_init(cfg);
	if ((!stacks &&
	     wc_config_set(cfg, "Stacks", &off, 1, err, sizeof(err))) ||
	    wc_config_set(cfg, "SpoolDir", &dir, 1, err, sizeof(err)) ||
	    wc_config_finish(cfg, err, sizeof(err)) ||
	    wc_engine_open(cfg, e, err, sizeof(err))) {
		fprintf(stderr, "readbench: %s\n", err);
		rmdir(spool_dir);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static uint64_t wall[MAX_READS], cpu[MAX_READS], sys[MAX_READS],
		run[MAX_READS], hand[MAX_READS];
	struct timespec tick = {1, 0};
	struct wc_engine *e;
	struct wc_config cfg;
	struct wc_self_stats st;
	bool stacks = true;
	int reads = 20, skip = 3, every = 1, chill_mib = 0, i, j, n = 0, c;
	size_t chill_len = 0;
	unsigned char *chill_buf = NULL;
	char err[1024];

	while ((c = getopt(argc, argv, "n:s:i:SC:")) != -1) {
		if (c == 'n')
			reads = atoi(optarg);
		else if (c == 's')
			skip = atoi(optarg);
		else if (c == 'i')
			every = atoi(optarg);
		else if (c == 'S')
			stacks = false;
		else if (c == 'C')
			chill_mib = atoi(optarg);
		else
			return 2;
	}
	if (reads < 1 || reads > MAX_READS || skip < 0 || every < 1 ||
	    chill_mib < 0 || chill_mib > 65536)
		return fprintf(stderr, "readbench: bad -n, -s, -i or -C\n"), 2;
	chill_len = (size_t)chill_mib << 20;
	if (chill_len && !(chill_buf = calloc(1, chill_len)))
		return perror("readbench"), 1;
	if (open_engine(stacks, &cfg, &e))
		return 1;
	for (i = 0; i < skip + reads; i++) {
		uint64_t w0, c0, s0, r0, h0;

		for (j = 0; j < every; j++) {
			nanosleep(&tick, NULL);
			if (stacks && wc_engine_drain(e, err, sizeof(err)))
				fprintf(stderr, "readbench: drain: %s\n", err);
		}
		if (chill_buf)
			chill(chill_buf, chill_len);
		wc_engine_self(e, &st);
		r0 = st.walk.run_ns;
		h0 = st.walk.hand_ns;
		w0 = clock_us(CLOCK_MONOTONIC);
		c0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
		s0 = sys_us();
		if (wc_engine_read(e, err, sizeof(err))) {
			fprintf(stderr, "readbench: read: %s\n", err);
			break;
		}
		if (i < skip)
			continue;
		wall[n] = clock_us(CLOCK_MONOTONIC) - w0;
		cpu[n] = clock_us(CLOCK_THREAD_CPUTIME_ID) - c0;
		sys[n] = sys_us() - s0;
		wc_engine_self(e, &st);
		run[n] = (st.walk.run_ns - r0) / 1000;
		hand[n] = (st.walk.hand_ns - h0) / 1000;
		printf("read %lu %lu %lu %lu %lu\n", (unsigned long)wall[n],
		       (unsigned long)cpu[n], (unsigned long)sys[n],
		       (unsigned long)run[n], (unsigned long)hand[n]);
		n++;
	}
	wc_engine_self(e, &st);
	printf("summary reads=%d wall_us=%lu cpu_us=%lu sys_us=%lu "
	       "run_us=%lu hand_us=%lu threads=%lu walk_runs=%lu refills=%lu "
	       "torn=%lu\n",
	       n, (unsigned long)median(wall, n), (unsigned long)median(cpu, n),
	       (unsigned long)median(sys, n), (unsigned long)median(run, n),
	       (unsigned long)median(hand, n), (unsigned long)st.acct.threads,
	       (unsigned long)st.walk.runs, (unsigned long)st.walk.refills,
	       (unsigned long)st.bpf.v[WC_CNT_TORN_READS]);
	wc_engine_close(e);
	wc_config_free(&cfg);
	rmdir(spool_dir);
	free(chill_buf);
	return n == reads ? 0 : 1;
}
