/*
 * hostile.c - what an unprivileged local user runs against the profiler:
 * a process that looks like a JIT (code in anonymous executable memory,
 * running and sleeping), with a perf map the test arranges, or one that
 * keeps growing, or tens of thousands of mappings, or a file mapped
 * executable from wherever the test says.  test_security.py runs it as
 * nobody and checks that collectd neither leaks, nor stalls, nor pays
 * more than its bounds.
 *
 *   hostile [--jit HEXADDR] [--perf-map] [--grow-map] [--mappings N]
 *           [--map-exec FILE] [--name COMM] [--seconds S]
 *
 * --jit puts its code at HEXADDR (0: anywhere) and then spins in it and
 * sleeps, in turns; --perf-map describes that code in /tmp/perf-PID.map
 * (mode 0644, its own); --grow-map makes that map grow by 10 GB a second
 * (sparse); --mappings makes N mappings, half of them executable, a file's
 * and anonymous in turns; --map-exec maps FILE executable without reading
 * a byte of it.  Prints "ready PID" once set up.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define JIT_BYTES 65536
#define GROW_STEP (100ULL << 20) /* every 10 ms: 10 GB a second */
#define GROW_MAX (4ULL << 40)

static char perf_map[64];

static void die(const char *what)
{
	fprintf(stderr, "hostile: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* A loop the size of its argument, as machine code: the profiler sees a
 * program counter in memory no file backs. */
static void (*jit_code(uintptr_t at))(uint64_t)
{
	static const unsigned char spin[] = {
		0x48, 0x85, 0xff, /* test %rdi,%rdi */
		0x74, 0x05,	  /* jz done */
		0x48, 0xff, 0xcf, /* loop: dec %rdi */
		0x75, 0xfb,	  /* jnz loop */
		0xc3,		  /* done: ret */
	};
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	unsigned char *p;

	if (at)
		flags |= MAP_FIXED_NOREPLACE;
	p = mmap((void *)at, JIT_BYTES, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		die("mmap jit");
	memcpy(p, spin, sizeof(spin));
	if (mprotect(p, JIT_BYTES, PROT_READ | PROT_EXEC))
		die("mprotect jit");
#if defined(__x86_64__)
	return (void (*)(uint64_t))(uintptr_t)p;
#else
	return NULL; /* mapped, never run: still a JIT to the profiler */
#endif
}

static int open_map(void)
{
	int fd;

	snprintf(perf_map, sizeof(perf_map), "/tmp/perf-%d.map", getpid());
	fd = open(perf_map, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || fchmod(fd, 0644))
		die(perf_map);
	return fd;
}

static void write_map(void (*code)(uint64_t))
{
	int fd = open_map();

	dprintf(fd, "%lx 40 hostile_jit_spin\n",
		(unsigned long)(uintptr_t)code);
	close(fd);
}

static void *grow(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct timespec step = {0, 10000000};
	uint64_t size = 0;

	while (size < GROW_MAX) {
		size += GROW_STEP;
		if (ftruncate(fd, (off_t)size))
			break;
		nanosleep(&step, NULL);
	}
	return NULL;
}

static void grow_map(void (*code)(uint64_t))
{
	pthread_t t;
	int fd = open_map();

	dprintf(fd, "%lx 40 hostile_jit_spin\n",
		(unsigned long)(uintptr_t)code);
	if (pthread_create(&t, NULL, grow, (void *)(intptr_t)fd))
		die("pthread_create");
}

/* n mappings in one reserved range, so none merges with another: every
 * other page executable, from our own binary and anonymous in turns. */
static void mappings(long n)
{
	long page = sysconf(_SC_PAGESIZE), i;
	int fd = open("/proc/self/exe", O_RDONLY);
	char *base;

	base = mmap(NULL, (size_t)(n * page), PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (fd < 0 || base == MAP_FAILED)
		die("reserve");
	for (i = 0; i < n; i++) {
		char *at = base + i * page;
		void *p;

		if (i % 2 == 0)
			p = mmap(at, (size_t)page, PROT_READ,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				 0);
		else if (i % 4 == 1)
			p = mmap(at, (size_t)page, PROT_READ | PROT_EXEC,
				 MAP_PRIVATE | MAP_FIXED, fd, 0);
		else
			p = mmap(at, (size_t)page, PROT_READ | PROT_EXEC,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
				 0);
		if (p == MAP_FAILED)
			die("mmap");
	}
	close(fd);
}

static void map_exec(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd,
			   0) == MAP_FAILED)
		die(path);
	close(fd);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Spin in the JIT's code (or in C without one), then sleep, in turns. */
static void run(void (*code)(uint64_t), double seconds)
{
	struct timespec nap = {0, 30000000};
	double end = now_s() + seconds;
	volatile uint64_t x = 0;

	while (now_s() < end) {
		if (code)
			code(20000000);
		else
			for (x = 0; x < 20000000; x++)
				;
		nanosleep(&nap, NULL);
	}
}

int main(int argc, char **argv)
{
	void (*code)(uint64_t) = NULL;
	bool jit = false, map = false, growing = false;
	uintptr_t at = 0;
	double seconds = 60;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--jit") && v) {
			jit = true;
			at = (uintptr_t)strtoull(v, NULL, 16);
			i++;
		} else if (!strcmp(a, "--perf-map")) {
			map = true;
		} else if (!strcmp(a, "--grow-map")) {
			growing = true;
		} else if (!strcmp(a, "--mappings") && v) {
			mappings(atol(v));
			i++;
		} else if (!strcmp(a, "--map-exec") && v) {
			map_exec(v);
			i++;
		} else if (!strcmp(a, "--name") && v) {
			prctl(PR_SET_NAME, v);
			i++;
		} else if (!strcmp(a, "--seconds") && v) {
			seconds = atof(v);
			i++;
		} else {
			fprintf(stderr, "hostile: bad argument %s\n", a);
			return 2;
		}
	}
	if (jit)
		code = jit_code(at);
	if (map && code)
		write_map(code);
	if (growing && code)
		grow_map(code);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	run(code, seconds);
	if (perf_map[0])
		unlink(perf_map);
	return 0;
}
