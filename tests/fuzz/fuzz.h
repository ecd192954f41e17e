/*
 * fuzz.h - what the libFuzzer targets share: the input as a file, since
 * the parsers under test read descriptors and paths as they do in the
 * daemon.
 */
#ifndef WC_FUZZ_H
#define WC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A memfd holding data, at offset 0; aborts if the kernel has none (the
 * run is then meaningless, not passed). */
static inline int fuzz_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t at = 0;

	if (fd < 0)
		abort();
	while (at < size) {
		ssize_t n = write(fd, data + at, size - at);

		if (n <= 0)
			abort();
		at += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET) != 0)
		abort();
	return fd;
}

/* A broken invariant is a finding: abort so libFuzzer keeps the input. */
#define FUZZ_ASSERT(cond)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#cond);                                        \
			abort();                                               \
		}                                                              \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* WC_FUZZ_H */
