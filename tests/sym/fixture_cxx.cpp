// fixture_cxx.cpp - C++ names for the symbolizer's tests to demangle:
// prints "key 0xaddress" lines, then "ready", then waits for stdin to close.
#include <cstdio>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, used))

namespace ns {
struct klass {
	static int method(int x);
};

NOINLINE int klass::method(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 2;
}

template <typename T> NOINLINE T twice(T x)
{
	__asm__ volatile("" : "+r"(x));
	return x + x;
}
} // namespace ns

int main()
{
	char c;
	long (*tw)(long) = ns::twice<long>;

	std::printf("method %p\n", (void *)&ns::klass::method);
	std::printf("twice %p\n", (void *)tw);
	std::printf("ready\n");
	std::fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return ns::klass::method(1) + (int)tw(1) == 0;
}
