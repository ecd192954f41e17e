// uw_cxx.cpp - test_unwind.py's C++ program: most of its time goes into
// libstdc++'s number formatting (std::ostream's inserters, in the shared
// library, which Debian builds without frame pointers) and on into libc,
// the rest into a std::map; built -O2.
//
// usage: uw_cxx SECONDS
#include <chrono>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

__attribute__((noinline)) static void uw_churn(std::map<std::string, int> &m,
					       unsigned &seed)
{
	for (int i = 0; i < 1000; i++) {
		std::ostringstream os;

		seed = seed * 1103515245u + 12345u;
		os << "key-" << (seed % 100000) << '/' << seed / 7.0;
		if (seed & 1)
			m[os.str()] = i;
		else
			m.erase(os.str());
	}
}

int main(int argc, char **argv)
{
	auto secs = std::chrono::seconds(argc > 1 ? std::atoi(argv[1]) : 10);
	auto until = std::chrono::steady_clock::now() + secs;
	std::map<std::string, int> m;
	unsigned seed = 1;

	while (std::chrono::steady_clock::now() < until)
		uw_churn(m, seed);
	return m.size() > 1000000 ? 1 : 0;
}
