/* wc_sym_priv.c - see wc_sym_priv.h. */
#include <sys/prctl.h>
#include <sys/resource.h>

#include "wc_sym_priv.h"

int wc_sym_priv_drop(void)
{
	struct rlimit none = {0, 0};

	if (setrlimit(RLIMIT_CORE, &none) || setrlimit(RLIMIT_FSIZE, &none))
		return -1;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}
