/* wc_sym_priv.c - see wc_sym_priv.h. */
#include <linux/capability.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wc_sym_priv.h"

/* Whose files the helper may write, were it made to: no one's. */
#define NOBODY 65534

/* Descriptors open at once: the socket, a file and its debug file, a
 * directory or two on the way. */
#define FILES_MAX 32
/* Address space: the biggest table twice (built and sent) and libelf's
 * copy of its sections, with room. */
#define MEMORY_MAX (1ULL << 30)

/*
 * Reading other users' processes takes CAP_SYS_PTRACE (their maps, root
 * and memory), CAP_DAC_READ_SEARCH (files only their owner may read) and
 * CAP_CHECKPOINT_RESTORE (map_files).  Everything else goes, for good.
 */
static int keep_readers(void)
{
	struct __user_cap_header_struct head = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct have[2], keep[2] = {{0}};
	const int wanted[] = {CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH,
			      CAP_CHECKPOINT_RESTORE};
	size_t i;

	if (syscall(SYS_capget, &head, have))
		return -1;
	for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
		keep[wanted[i] / 32].permitted |= 1u << (wanted[i] % 32);
	/* what of those it has (a test may run it without some) */
	for (i = 0; i < 2; i++) {
		keep[i].permitted &= have[i].permitted;
		keep[i].effective = keep[i].permitted;
	}
	return (int)syscall(SYS_capset, &head, keep);
}

static int limit(int resource, uint64_t max)
{
	struct rlimit r = {max, max};

	return setrlimit(resource, &r);
}

/*
 * Files are opened as nobody: root's files cannot be written, made or
 * removed (CAP_DAC_OVERRIDE and CAP_FOWNER are gone), and reading them
 * takes CAP_DAC_READ_SEARCH, kept.  The real uid stays 0, so that no user
 * can signal or trace the helper.  Landlock would forbid writes outright,
 * but it also forbids reading other processes' /proc entries.
 */
static int files_as_nobody(void)
{
	if (getuid() != 0)
		return 0;
	if (setgroups(0, NULL))
		return -1;
	setfsgid(NOBODY);
	setfsuid(NOBODY);
	return setfsuid((uid_t)-1) == NOBODY ? 0 : -1;
}

int wc_sym_priv_drop(void)
{
	if (limit(RLIMIT_CORE, 0) || limit(RLIMIT_FSIZE, 0) ||
	    limit(RLIMIT_NOFILE, FILES_MAX) || limit(RLIMIT_AS, MEMORY_MAX) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || files_as_nobody())
		return -1;
	/* after the fsuid change, which took DAC_READ_SEARCH from the
	 * effective set */
	return keep_readers();
}
