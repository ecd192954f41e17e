/*
 * fixture.c - a process for the symbolizer's tests to resolve: it prints
 * "key 0xaddress" for functions whose names the test knows, then "ready",
 * then waits for its stdin to close and exits.
 *
 * Options: --lib PATH (dlopen a library and print its functions), --vdso
 * (print the vdso's clock_gettime), --jit (copy code into an anonymous
 * executable mapping and describe it in /tmp/perf-PID.map, with garbage
 * lines among the good ones), --map FILE (map FILE executable and print an
 * address 0x10 into it).  Built once more with wcsym_fixture_alpha renamed
 * and another binary's build-id, as a user forging names would.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, used))

NOINLINE int wcsym_fixture_alpha(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

NOINLINE static int wcsym_static_beta(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 5 + 2;
}

static void show(const char *key, const void *addr)
{
	printf("%s %p\n", key, addr);
}

static char perf_map[64];

static void jit(void)
{
	size_t len = 4096;
	unsigned char *code = mmap(NULL, len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a = (uintptr_t)code;
	char longname[10000];
	FILE *f;
	int fd;

	if (code == MAP_FAILED)
		exit(3);
	memset(code, 0xc3, len); /* ret */
	if (mprotect(code, len, PROT_READ | PROT_EXEC))
		exit(3);
	snprintf(perf_map, sizeof(perf_map), "/tmp/perf-%d.map", getpid());
	/* Only a map no one else may write is believed: not by umask. */
	fd = open(perf_map, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	f = fd >= 0 && fchmod(fd, 0644) == 0 ? fdopen(fd, "w") : NULL;
	if (!f)
		exit(3);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	fprintf(f, "%lx 40 jit_stale_name\n", (unsigned long)a);
	fprintf(f, "this is not a perf map line\n");
	fprintf(f, "zzzz 10 bad_start\n");
	fprintf(f, "%lx 0 zero_size\n", (unsigned long)(a + 0x100));
	fprintf(f, "%lx ffffffffffffffff wraps\n", (unsigned long)(a + 0x200));
	fprintf(f, "\x01\x02\x7f\n");
	fprintf(f, "%lx 10 %s\n", (unsigned long)(a + 0x300), longname);
	fprintf(f, "%lx\n", (unsigned long)(a + 0x400));
	fprintf(f, "0x%lx 0x40 jit_one\n", (unsigned long)a);
	fprintf(f, "%lx 20 Interpreter::run(int) [jit]\n",
		(unsigned long)(a + 0x80));
	fprintf(f, "%lx 8 ctrl\x01name\n", (unsigned long)(a + 0xc0));
	fclose(f);
	show("jit_one", code + 0x10);
	show("jit_two", code + 0x90);
	show("jit_ctrl", code + 0xc4);
	show("jit_gap", code + 0xe0);
}

static void vdso(void)
{
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *f = h ? dlsym(h, "__vdso_clock_gettime") : NULL;

	if (f)
		show("vdso_clock_gettime", f);
}

static void lib(const char *path)
{
	void *h = dlopen(path, RTLD_NOW);
	void *(*hidden)(void);

	if (!h) {
		fprintf(stderr, "fixture: %s\n", dlerror());
		exit(3);
	}
	show("lib_gamma", dlsym(h, "wcsym_lib_gamma"));
	hidden = (void *(*)(void))dlsym(h, "wcsym_lib_hidden_address");
	if (hidden)
		show("lib_delta", hidden());
}

static void map(const char *path)
{
	int fd = open(path, O_RDONLY);
	char *p;

	if (fd < 0)
		exit(3);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		exit(3);
	show("map", p + 0x10);
}

int main(int argc, char **argv)
{
	char c;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--lib") && i + 1 < argc)
			lib(argv[++i]);
		else if (!strcmp(argv[i], "--map") && i + 1 < argc)
			map(argv[++i]);
		else if (!strcmp(argv[i], "--vdso"))
			vdso();
		else if (!strcmp(argv[i], "--jit"))
			jit();
	}
	show("alpha", (void *)wcsym_fixture_alpha);
	show("beta", (void *)wcsym_static_beta);
	show("main", (void *)main);
	show("libc_nanosleep", (void *)nanosleep);
	/* A return address into libc's internals, named only by its .symtab
	 * (a debug file on Debian). */
	show("main_caller", __builtin_return_address(0));
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	if (perf_map[0])
		unlink(perf_map);
	return wcsym_fixture_alpha(1) + wcsym_static_beta(1) == 0;
}
