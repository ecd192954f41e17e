/* wc_cap.c - see wc_cap.h. */
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/wc_cap.h"

int wc_cap_effective(uint64_t *mask)
{
	struct __user_cap_header_struct head = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2] = {{0}};

	if (syscall(SYS_capget, &head, d) != 0)
		return -1;
	*mask = (uint64_t)d[1].effective << 32 | d[0].effective;
	return 0;
}

bool wc_cap_have(int cap)
{
	uint64_t mask;

	return wc_cap_effective(&mask) == 0 && wc_cap_in(mask, cap);
}
