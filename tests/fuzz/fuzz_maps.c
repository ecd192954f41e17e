/*
 * fuzz_maps.c - procfs text through the line reader that every procfs
 * read uses: /proc/PID/maps lines (paths a user chose: spaces, newlines
 * turned into escapes, " (deleted)", any length) and /proc/PID/status,
 * with a buffer and a byte bound chosen by the input.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "sym/wc_sym_proc.h"

static void maps(const uint8_t *data, size_t size, size_t cap, uint64_t limit)
{
	struct wc_proc_map m;
	struct wc_lines r;
	size_t len;
	char *line;

	if (wc_lines_open(&r, fuzz_memfd(data, size), cap, limit))
		return;
	while ((line = wc_lines_next(&r, &len))) {
		FUZZ_ASSERT(len <= cap && line[len] == '\0');
		if (wc_proc_parse_maps_line(line, len, &m) == 0) {
			FUZZ_ASSERT(m.path >= line && m.path <= line + len);
			FUZZ_ASSERT(m.pathlen == strlen(m.path));
		}
	}
	wc_lines_close(&r);
}

/* on tmpfs: a disk's stall under load would read as a slow input */
static char root[] = "/dev/shm/wc-fuzz-proc.XXXXXX";
static int dirfd = -1;

static void remove_root(void)
{
	unlinkat(dirfd, "1/status", 0);
	unlinkat(dirfd, "1", AT_REMOVEDIR);
	rmdir(root);
}

/* status is read by path: a private proc root with one pid in it */
static void status(const uint8_t *data, size_t size)
{
	pid_t nspid;
	uid_t euid;
	int fd;

	if (dirfd < 0) {
		if (!mkdtemp(root))
			abort();
		dirfd = open(root, O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0 || mkdirat(dirfd, "1", 0700))
			abort();
		atexit(remove_root);
	}
	fd = openat(dirfd, "1/status", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		    0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	wc_proc_status(root, 1, &nspid, &euid);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cap;

	if (size < 2)
		return 0;
	/* the first two bytes: buffer size and byte bound */
	cap = 16 + (size_t)data[0] * 16;
	maps(data + 2, size - 2, cap,
	     data[1] ? (uint64_t)data[1] * 7 : UINT64_MAX);
	maps(data + 2, size - 2, 4096, UINT64_MAX);
	status(data + 2, size - 2);
	return 0;
}
