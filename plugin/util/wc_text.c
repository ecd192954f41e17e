/* wc_text.c - see wc_text.h. */
#include "util/wc_text.h"

#include <stdint.h>
#include <string.h>

size_t wc_utf8_seq(const unsigned char *p, size_t n)
{
	uint32_t c;
	size_t len, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] < 0xc2)
		return 0;
	if (p[0] < 0xe0) {
		len = 2;
		c = p[0] & 0x1f;
	} else if (p[0] < 0xf0) {
		len = 3;
		c = p[0] & 0x0f;
	} else if (p[0] < 0xf5) {
		len = 4;
		c = p[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || c == 0xfffe ||
	    c == 0xffff)
		return 0;
	return len;
}

size_t wc_text_clean(const char *in, size_t n, char *out, size_t cap, bool *cut)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t i = 0, len = 0, k;

	*cut = false;
	while (n > 0 && p[n - 1] == ' ')
		n--;
	while (i < n && p[i] == ' ')
		i++;
	while (i < n) {
		k = wc_utf8_seq(p + i, n - i);
		if (len + (k ? k : 1) >= cap) {
			*cut = true;
			break;
		}
		if (k == 0 || (k == 1 && (p[i] < 0x20 || p[i] == 0x7f))) {
			out[len++] = '?';
			i++;
			continue;
		}
		memcpy(out + len, p + i, k);
		len += k;
		i += k;
	}
	out[len] = '\0';
	return len;
}
