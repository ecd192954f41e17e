/*
 * fuzz_folded.c - folded files as `wallclock render` and `merge` read
 * them (any host's, any version's, anyone's): the merge reader, plain and
 * gzip, then its output through the SVG renderer.  The first byte picks
 * whether the rest is given as it is (a gzip seed mutated: inflate on
 * corrupt data) or compressed first (a valid gzip of mutated text).
 */
#include <string.h>
#include <zlib.h>

#include "fuzz.h"
#include "cli/wc_merge.h"
#include "render/wc_svg.h"

struct sink {
	size_t bytes;
};

static int to_sink(void *ctx, const char *buf, size_t len)
{
	(void)buf;
	((struct sink *)ctx)->bytes += len;
	return 0;
}

/* data as a gzip stream in a memfd */
static int gzip_fd(const uint8_t *data, size_t size)
{
	z_stream z = {0};
	uint8_t *out;
	size_t cap = size + size / 100 + 64;
	int fd;

	out = malloc(cap);
	if (!out || deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY))
		abort();
	z.next_in = (uint8_t *)data;
	z.avail_in = (uInt)size;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		abort();
	fd = fuzz_memfd(out, z.total_out);
	deflateEnd(&z);
	free(out);
	return fd;
}

/* The merged stacks, written and read back: nothing malformed, nothing
 * lost; then rendered. */
static void check_merged(const struct wc_merge *t)
{
	const struct wc_merge_entry **v;
	struct wc_svg_opts o = {.max_frames = 4096, .max_bytes = 4u << 20};
	struct wc_svg *svg = wc_svg_new(&o);
	struct wc_svg_stats st;
	struct sink sink = {0};
	struct wc_merge back;
	char *line;
	size_t n, i;
	int len;

	v = wc_merge_sorted(t, &n);
	if (!v || !svg || wc_merge_init(&back, n ? n : 1, NULL))
		abort();
	for (i = 0; i < n; i++) {
		FUZZ_ASSERT(i == 0 || v[i - 1]->value >= v[i]->value);
		len = asprintf(&line, "%s %llu", wc_merge_stack(t, v[i]),
			       (unsigned long long)v[i]->value);
		if (len < 0)
			abort();
		wc_merge_line(&back, line, (size_t)len);
		wc_svg_add_line(svg, line, (size_t)len);
		free(line);
	}
	FUZZ_ASSERT(back.bad == 0 && back.n == n);
	wc_svg_get_stats(svg, &st);
	FUZZ_ASSERT(st.bytes <= o.max_bytes && st.nodes <= o.max_frames);
	FUZZ_ASSERT(wc_svg_emit(svg, to_sink, &sink) >= 0);
	wc_svg_free(svg);
	wc_merge_free(&back);
	free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wc_merge t;
	int fd;

	if (size < 1)
		return 0;
	fd = data[0] & 1 ? gzip_fd(data + 1, size - 1)
			 : fuzz_memfd(data + 1, size - 1);
	/* a small table, so that overflow into [other] is reached */
	if (wc_merge_init(&t, 8, data[0] & 2 ? "g" : NULL))
		abort();
	wc_merge_read_fd(&t, fd);
	FUZZ_ASSERT(t.n <= t.limit && t.budget.bytes <= t.budget.max);
	FUZZ_ASSERT(t.bad <= t.lines);
	check_merged(&t);
	wc_merge_free(&t);
	return 0;
}
