/*
 * uw_remap_lib.c - the library tests/uw_remap.c keeps swapping, built
 * twice: -DVARIANT=1 keeps a 4 KiB array on its stack, -DVARIANT=2 six
 * saved registers and nothing else.  The same size either way, so the
 * kernel puts one where the other was; the frames differ, so one's
 * unwind rows used on the other's code find a wrong caller.
 */
#include <time.h>

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

__attribute__((noinline)) long uw_lib_spin(long ms)
{
	long end = now_ms() + ms, acc = 0, k;
#if VARIANT == 1
	volatile char pad[4096];

	pad[0] = 1;
#else
	__asm__ volatile("" ::: "rbx", "r12", "r13", "r14", "r15");
#endif
	while (now_ms() < end)
		for (k = 0; k < 200000; k++)
			acc += k ^ (acc >> 3);
#if VARIANT == 1
	return acc + pad[0];
#else
	return acc;
#endif
}
