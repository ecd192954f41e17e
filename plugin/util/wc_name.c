/* wc_name.c - see wc_name.h. */
#include <string.h>

#include "util/wc_name.h"

static int safe_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

void wc_name_sanitize(const char *in, size_t inlen, char *out, size_t outlen)
{
	size_t i, n = 0;

	for (i = 0; i < inlen && in[i] && n + 1 < outlen; i++) {
		unsigned char c = (unsigned char)in[i];

		if (!safe_byte(c) || (n == 0 && (c == '.' || c == '-')))
			c = '_';
		out[n++] = (char)c;
	}
	out[n] = '\0';
	if (n == 0) {
		strncpy(out, "unknown", outlen - 1);
		out[outlen - 1] = '\0';
	}
	if (strcmp(out, WC_OTHER_GROUP) == 0) {
		if (outlen > sizeof(WC_OTHER_GROUP))
			strcpy(out, WC_OTHER_GROUP "_");
		else
			out[n - 1] = '_'; /* no room for "other_" */
	}
}

void wc_name_kthread(const char *comm, size_t len, char *out, size_t outlen)
{
	const char *slash = memchr(comm, '/', strnlen(comm, len));

	if (slash && slash != comm)
		len = (size_t)(slash - comm);
	wc_name_sanitize(comm, len, out, outlen);
}
