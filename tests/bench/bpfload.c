/*
 * bpfload.c - load a BPF object and attach the named programs until
 * SIGINT or SIGTERM; the benchmark's way to run its yardsticks.
 *
 *   bpfload OBJECT PROGRAM...
 *
 * Prints "ready" once attached.  Exit status 1 if anything fails to load
 * or attach, naming it.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	int i;

	if (argc < 3) {
		fprintf(stderr, "usage: bpfload OBJECT PROGRAM...\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "bpfload: loading %s failed: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	for (i = 2; i < argc; i++) {
		struct bpf_program *p =
			bpf_object__find_program_by_name(obj, argv[i]);

		if (!p || !bpf_program__attach(p)) {
			fprintf(stderr, "bpfload: attaching %s failed\n",
				argv[i]);
			return 1;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("ready\n");
	fflush(stdout);
	while (!stop)
		pause();
	bpf_object__close(obj);
	return 0;
}
