/*
 * wc_format.c - the folded stack format's markers, frame text and line
 * parser.
 */
#include "format/wc_format.h"

#include <string.h>

#include "util/wc_text.h"

static const char *const markers[WC_FOLD_NKINDS] = {
	[WC_FOLD_ONCPU] = "[on-cpu]",
	[WC_FOLD_RUNQ] = "[off-cpu runqueue]",
	[WC_FOLD_SLEEP] = "[off-cpu sleep]",
	[WC_FOLD_BLOCKED] = "[off-cpu io]",
};

const char *wc_fold_marker(enum wc_fold_kind kind)
{
	return (unsigned)kind < WC_FOLD_NKINDS ? markers[kind] : NULL;
}

int wc_fold_marker_kind(const char *frame)
{
	int k;

	for (k = 0; k < WC_FOLD_NKINDS; k++)
		if (strcmp(frame, markers[k]) == 0)
			return k;
	return -1;
}

bool wc_fold_is_offcpu(const char *frame)
{
	return strncmp(frame, "[off-cpu", 8) == 0;
}

size_t wc_fold_frame_clean(const char *in, size_t n, char *out, size_t cap,
			   bool *cut)
{
	size_t len = wc_text_clean(in, n, out, cap, cut), i;

	for (i = 0; i < len; i++)
		if (out[i] == ';')
			out[i] = ':';
	if (len == 0) {
		len = strlen(WC_FOLD_EMPTY);
		memcpy(out, WC_FOLD_EMPTY, len + 1);
	}
	return len;
}

int wc_fold_parse(const char *line, size_t len, struct wc_fold_line *out)
{
	size_t i, sp;
	uint64_t v = 0;

	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len == 0)
		return 0;
	if (memchr(line, '\0', len))
		return -1;
	for (i = len; i > 0 && line[i - 1] != ' '; i--)
		;
	if (i == 0 || i == len)
		return -1;
	for (sp = i - 1; i < len; i++) {
		unsigned d = (unsigned char)line[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	while (sp > 0 && line[sp - 1] == ' ')
		sp--;
	if (sp == 0)
		return -1;
	out->stack = line;
	out->len = sp;
	out->value = v;
	return 1;
}

const char *wc_fold_value_text(uint64_t value, char buf[24])
{
	int k = 23;

	buf[k] = '\0';
	buf[--k] = '\n';
	do {
		buf[--k] = (char)('0' + value % 10);
		value /= 10;
	} while (value);
	buf[--k] = ' ';
	return buf + k;
}
