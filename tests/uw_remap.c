/*
 * uw_remap.c - a process that keeps putting one library where another
 * was: dlopen() the first, spin in it, dlclose() it, dlopen() the second
 * (tests/uw_remap_lib.c built twice), spin in it, and so on for SECONDS.
 * What the unwinder caches of a mapping must not outlive it
 * (tests/e2e/test_remap.py runs it as nobody).  Prints "ready PID", and
 * at the end "same N of M": how often the next library landed where the
 * last had been.
 *
 * usage: uw_remap LIB_A LIB_B SECONDS
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef long (*spin_fn)(long ms);

static volatile long sink;

/* Its own frame, above the library's: what a walk must find there. */
static __attribute__((noinline)) int uw_remap_loop(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	spin_fn spin;
	Dl_info info;
	int base = 0;

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		exit(1);
	}
	spin = (spin_fn)dlsym(h, "uw_lib_spin");
	if (!spin || !dladdr((void *)spin, &info)) {
		fprintf(stderr, "no uw_lib_spin in %s\n", lib);
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
	until = time(NULL) + atoi(argv[3]);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (time(NULL) < until) {
		base = uw_remap_loop(argv[1 + n % 2]);
		same += n && base == last;
		last = base;
		n++;
	}
	printf("same %d of %d\n", same, n - 1);
	return 0;
}
