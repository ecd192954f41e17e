/* wc_caps.c - see wc_caps.h. */
#include "engine/wc_caps.h"

#include <linux/capability.h>
#include <stdio.h>
#include <string.h>

#include "util/wc_cap.h"

struct need {
	int cap, or_cap; /* or_cap: another that does as well, or -1 */
	int and_cap;	 /* another it takes too, or -1 */
	const char *name, *gives;
};

static const struct need needs[] = {
	{CAP_SYS_PTRACE, -1, -1, "CAP_SYS_PTRACE",
	 "process's maps, vdso or files (reading another process's takes "
	 "it), so every user frame is [unknown]"},
	{CAP_DAC_READ_SEARCH, -1, -1, "CAP_DAC_READ_SEARCH",
	 "binaries and debug files only their owner may read, so their "
	 "frames are module+0x..."},
	{CAP_CHECKPOINT_RESTORE, CAP_SYS_ADMIN, -1, "CAP_CHECKPOINT_RESTORE",
	 "/proc/PID/map_files: binaries deleted or replaced since they were "
	 "started and files in containers' mount namespaces go unnamed"},
	{CAP_SETUID, -1, CAP_SETGID, "CAP_SETUID and CAP_SETGID",
	 "perf maps, separate debug files or files by their path (the "
	 "symbolizer's helper cannot read as user nobody, so it is refused "
	 "openat2), so JIT frames are [unknown]"},
	{CAP_SYSLOG, -1, -1, "CAP_SYSLOG",
	 "kernel addresses in /proc/kallsyms (kernel.kptr_restrict 1, or 0 "
	 "with kernel.perf_event_paranoid above 1), so every kernel frame is "
	 "[unknown]"},
};

static int sysctl_int(const char *path)
{
	FILE *f = fopen(path, "re");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* Does reading kernel addresses take CAP_SYSLOG here?  kptr_restrict 1
 * hides them from those without it, 0 too unless perf_event_paranoid is
 * 1 or less, and 2 from everyone (no capability helps). */
static bool kallsyms_needs_syslog(void)
{
	int kr = sysctl_int("/proc/sys/kernel/kptr_restrict");

	return kr == 1 ||
	       (kr == 0 &&
		sysctl_int("/proc/sys/kernel/perf_event_paranoid") > 1);
}

unsigned wc_caps_missing(bool stacks, char *text, size_t len)
{
	uint64_t d;
	unsigned n = 0;
	size_t i, at = 0;

	if (len)
		text[0] = '\0';
	if (!stacks || wc_cap_effective(&d))
		return 0;
	for (i = 0; i < sizeof(needs) / sizeof(needs[0]); i++) {
		const struct need *nd = &needs[i];
		int k;

		if (((wc_cap_in(d, nd->cap) || wc_cap_in(d, nd->or_cap)) &&
		     (nd->and_cap < 0 || wc_cap_in(d, nd->and_cap))) ||
		    (nd->cap == CAP_SYSLOG && !kallsyms_needs_syslog()))
			continue;
		n++;
		k = snprintf(text + at, len - at, "%swithout %s, no %s",
			     at ? "; " : "", nd->name, nd->gives);
		if (k > 0 && (size_t)k < len - at)
			at += (size_t)k;
	}
	return n;
}
