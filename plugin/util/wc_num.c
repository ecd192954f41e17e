/*
 * wc_num.c - bounded numbers out of untrusted text.
 */
#include "util/wc_num.h"

bool wc_parse_hex(const char **p, const char *end, uint64_t *v)
{
	unsigned digits = 0;
	uint64_t x = 0;

	for (; *p < end && digits < 17; (*p)++, digits++) {
		char c = **p;
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		x = x << 4 | d;
	}
	*v = x;
	return digits > 0 && digits <= 16;
}

bool wc_parse_dec(const char **p, const char *end, uint64_t *v)
{
	unsigned digits = 0;
	uint64_t x = 0;

	for (; *p < end && **p >= '0' && **p <= '9'; (*p)++, digits++) {
		unsigned d = (unsigned)(**p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return digits > 0;
}
