/* wc_sym_perfmap.c - see wc_sym_perfmap.h. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "sym/wc_sym_perfmap.h"
#include "sym/wc_sym_proc.h"
#include "util/wc_num.h"

#define LINE_BYTES 8192

/* A hex number, "0x" or not, and the space after it. */
static bool hex_field(const char **p, const char *end, uint64_t *v)
{
	if (end - *p > 2 && (*p)[0] == '0' &&
	    ((*p)[1] == 'x' || (*p)[1] == 'X'))
		*p += 2;
	return wc_parse_hex(p, end, v) && *p < end && **p == ' ';
}

int wc_perfmap_parse_line(const char *line, size_t len, uint64_t *start,
			  uint64_t *size, const char **name, size_t *namelen)
{
	const char *p = line, *end = line + len;

	if (!hex_field(&p, end, start))
		return -1;
	p++;
	if (!hex_field(&p, end, size))
		return -1;
	p++;
	/* A range that wraps is garbage, and so is an empty one. */
	if (*size == 0 || *start + *size < *start || p >= end)
		return -1;
	*name = p;
	*namelen = (size_t)(end - p);
	return 0;
}

/* Start far enough into a big file that its tail fits the budget; the
 * bytes from there to size into *len. */
static bool seek_tail(int fd, uint64_t size, size_t budget, uint64_t *len)
{
	uint64_t keep = budget / 2;

	*len = size;
	if (size <= keep || lseek(fd, (off_t)(size - keep), SEEK_SET) < 0)
		return false;
	*len = keep;
	return true;
}

long wc_perfmap_load(int fd, uint64_t file_size, struct wc_symtab *t,
		     uint64_t *bad)
{
	uint64_t bytes;
	bool partial = seek_tail(fd, file_size, t->max_bytes, &bytes);
	struct wc_lines r;
	uint32_t lineno = 0;
	const char *name;
	size_t len, namelen;
	uint64_t start, size;
	char *line;

	if (wc_lines_open(&r, fd, LINE_BYTES, bytes))
		return -1;
	while ((line = wc_lines_next(&r, &len))) {
		/* we came in mid-line: that line is not whole, unless the
		 * reader already dropped it for its length */
		if (partial) {
			partial = false;
			if (r.skipped == 0)
				continue;
		}
		if (wc_perfmap_parse_line(line, len, &start, &size, &name,
					  &namelen)) {
			(*bad)++;
			continue;
		}
		/* Later lines win: the line number is the rank. */
		if (wc_symtab_add(t, start, size, name, namelen, ++lineno)) {
			if (errno != EINVAL)
				break;
			(*bad)++;
		}
	}
	*bad += r.skipped;
	wc_lines_close(&r);
	if (wc_symtab_finish(t))
		return -1;
	return (long)t->n;
}
