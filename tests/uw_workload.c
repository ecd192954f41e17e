/*
 * uw_workload.c - the unwinding tests' own program: its threads spend
 * their time on the CPU in a qsort() comparator, asleep in nanosleep()
 * and blocked in a read() of a pipe, every one of them through libc,
 * each behind a chain of functions of its own.  Built with and without
 * frame pointers (tests/e2e/test_unwind.py).
 *
 * usage: uw_workload SECONDS
 *        uw_workload SECONDS signal
 *        uw_workload SECONDS naps
 * The second spins for SECONDS in a signal handler instead, whose walks
 * end at the signal frame; the third only naps, 1.2 ms at a time, so
 * that every switch-out parks its user stack (tests/bench/unwind.py).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 4096

static volatile int stop;
static int pipe_fds[2];

static int __attribute__((noinline)) uw_compare(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	volatile int k;

	for (k = 0; k < 200; k++)
		;
	return (x > y) - (x < y);
}

static void __attribute__((noinline)) uw_sort(int *v)
{
	int i;

	for (i = 0; i < N; i++)
		v[i] = rand();
	qsort(v, N, sizeof(*v), uw_compare);
}

static void *__attribute__((noinline)) uw_spin(void *arg)
{
	static int v[N];

	(void)arg;
	while (!stop)
		uw_sort(v);
	return NULL;
}

static void __attribute__((noinline)) uw_nap(void)
{
	struct timespec ts = {0, 20000000};

	nanosleep(&ts, NULL);
}

static void __attribute__((noinline)) uw_short_nap(void)
{
	struct timespec ts = {0, 1200000};

	nanosleep(&ts, NULL);
}

static void *__attribute__((noinline)) uw_sleep(void *arg)
{
	(void)arg;
	while (!stop)
		uw_nap();
	return NULL;
}

static void __attribute__((noinline)) uw_wait_pipe(void)
{
	char c;

	if (read(pipe_fds[0], &c, 1) < 0)
		perror("read");
}

static void *__attribute__((noinline)) uw_reader(void *arg)
{
	(void)arg;
	while (!stop)
		uw_wait_pipe();
	return NULL;
}

static int handler_secs;

static void __attribute__((noinline)) uw_on_signal(int sig)
{
	time_t until = time(NULL) + handler_secs;
	volatile unsigned long k;

	(void)sig;
	while (time(NULL) < until)
		for (k = 0; k < 10000000; k++)
			;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 10, i;
	pthread_t t[3];

	if (argc > 2 && strcmp(argv[2], "naps") == 0) {
		time_t until = time(NULL) + secs;

		while (time(NULL) < until)
			uw_short_nap();
		return 0;
	}
	if (argc > 2 && strcmp(argv[2], "signal") == 0) {
		handler_secs = secs;
		signal(SIGUSR1, uw_on_signal);
		raise(SIGUSR1);
		return 0;
	}

	if (pipe(pipe_fds))
		return 1;
	pthread_create(&t[0], NULL, uw_spin, NULL);
	pthread_create(&t[1], NULL, uw_sleep, NULL);
	pthread_create(&t[2], NULL, uw_reader, NULL);
	/* the pipe is written to every 50 ms: long waits, each from the
	 * same place */
	for (i = 0; i < secs * 20; i++) {
		uw_nap();
		uw_nap();
		uw_nap();
		if (write(pipe_fds[1], "x", 1) != 1)
			break;
	}
	stop = 1;
	if (write(pipe_fds[1], "x", 1) != 1)
		return 1;
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}
