/* libfixture.c - a shared library for the symbolizer's tests: one
 * exported function, and one static function only .symtab names. */
#define NOINLINE __attribute__((noinline, used))

NOINLINE int wcsym_lib_gamma(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 7;
}

NOINLINE static int wcsym_lib_hidden_delta(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 11;
}

void *wcsym_lib_hidden_address(void)
{
	return (void *)wcsym_lib_hidden_delta;
}
