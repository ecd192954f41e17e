/*
 * uw_remap.c - a process that keeps putting one library where another
 * was: dlopen() the first, spin in it, dlclose() it, dlopen() the second
 * (tests/uw_remap_lib.c built twice), spin in it, and so on for SECONDS.
 * What the unwinder caches of a mapping must not outlive it
 * (tests/e2e/test_remap.py runs it as nobody).  It first loads both at
 * once and spins in each in turn for WARM_MS, so that both tables are in
 * before the swaps begin (they are the file's, wherever it is mapped).
 * Between two libraries it moves to another CPU where it may: the kernel
 * then takes the next one's mappings from that CPU's free records, and
 * the last one's freed records stay as they were, still naming its range
 * and file.  Prints "ready PID", and at the end "same N of M": how often
 * the next library landed where the last had been, and "cpus K": how
 * many it moved among.
 *
 * usage: uw_remap LIB_A LIB_B SECONDS
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef long (*spin_fn)(long ms);

static volatile long sink;

static int cpus[2], ncpus;

static void find_cpus(void)
{
	cpu_set_t set;
	int c;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (c = 0; c < CPU_SETSIZE && ncpus < 2; c++)
		if (CPU_ISSET(c, &set))
			cpus[ncpus++] = c;
}

static void hop(int n)
{
	cpu_set_t set;

	if (ncpus < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpus[n % 2], &set);
	sched_setaffinity(0, sizeof(set), &set);
}

#define WARM_MS 2000

static spin_fn spin_of(void *h, const char *lib)
{
	spin_fn spin;

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		exit(1);
	}
	spin = (spin_fn)dlsym(h, "uw_lib_spin");
	if (!spin) {
		fprintf(stderr, "no uw_lib_spin in %s\n", lib);
		exit(1);
	}
	return spin;
}

/* Both libraries at once, at two addresses: a table asked for is built
 * from the file the walk saw, which stays where it is meanwhile. */
static void warm(const char *a, const char *b)
{
	void *ha = dlopen(a, RTLD_NOW | RTLD_LOCAL);
	spin_fn sa = spin_of(ha, a);
	void *hb = dlopen(b, RTLD_NOW | RTLD_LOCAL);
	spin_fn sb = spin_of(hb, b);
	int i;

	for (i = 0; i < WARM_MS / 50; i++)
		sink += i % 2 ? sb(50) : sa(50);
	dlclose(ha);
	dlclose(hb);
}

/* Its own frame, above the library's: what a walk must find there. */
static __attribute__((noinline)) int uw_remap_loop(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	spin_fn spin = spin_of(h, lib);
	Dl_info info;
	int base = 0;

	if (!dladdr((void *)spin, &info)) {
		fprintf(stderr, "dladdr cannot place uw_lib_spin of %s\n", lib);
		exit(1);
	}
	sink += spin(15);
	base = (int)((unsigned long)info.dli_fbase >> 12);
	dlclose(h);
	return base;
}

int main(int argc, char **argv)
{
	time_t until;
	int last = 0, same = 0, n = 0, base;

	if (argc != 4) {
		fprintf(stderr, "usage: uw_remap LIB_A LIB_B SECONDS\n");
		return 2;
	}
	find_cpus();
	warm(argv[1], argv[2]);
	until = time(NULL) + atoi(argv[3]);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (time(NULL) < until) {
		base = uw_remap_loop(argv[1 + n % 2]);
		same += n && base == last;
		last = base;
		n++;
		hop(n);
	}
	printf("same %d of %d\ncpus %d\n", same, n - 1, ncpus);
	return 0;
}
