/*
 * fuzz_frames.c - what the flush writes from hostile names: process names
 * into group names (wc_name), function names from anyone's ELF file and
 * perf map into folded lines (wc_folded).  Every line written must read
 * back as one well-formed line of valid UTF-8 with its value, and the
 * values must add up to what was written.
 *
 * Input: records split at '\n'; the first is the process name, each
 * next one a frame; its first byte picks the kind and the weight.
 */
#include <string.h>

#include "fuzz.h"
#include "stacks/wc_folded.h"
#include "cli/wc_merge.h"
#include "util/wc_name.h"
#include "util/wc_text.h"

#define MAX_FRAMES 64

struct sink {
	struct wc_merge *back;
	char line[(1 << 16) + 1];
	size_t len;
	uint64_t sum;
};

/* every line valid UTF-8 without control bytes */
static void check_utf8(const char *line, size_t len)
{
	size_t i = 0, k;

	while (i < len) {
		k = wc_utf8_seq((const unsigned char *)line + i, len - i);
		FUZZ_ASSERT(k > 0 && (unsigned char)line[i] >= 0x20 &&
			    line[i] != 0x7f);
		i += k;
	}
}

/* the file comes in pieces: cut it into lines and read them back */
static int to_sink(void *ctx, const char *buf, size_t len)
{
	struct sink *s = ctx;
	size_t i;

	for (i = 0; i < len; i++) {
		if (buf[i] != '\n') {
			FUZZ_ASSERT(s->len + 1 < sizeof(s->line));
			s->line[s->len++] = buf[i];
			continue;
		}
		uint64_t before = s->back->bad;
		const char *sp = memrchr(s->line, ' ', s->len);

		FUZZ_ASSERT(sp);
		s->line[s->len] = '\0';
		s->sum += strtoull(sp + 1, NULL, 10);
		check_utf8(s->line, s->len);
		wc_merge_line(s->back, s->line, s->len);
		FUZZ_ASSERT(s->back->bad == before);
		s->len = 0;
	}
	return 0;
}

static void check_group(const char *group)
{
	size_t i, n = strlen(group);

	FUZZ_ASSERT(n > 0 && group[0] != '.' && group[0] != '-');
	FUZZ_ASSERT(strcmp(group, WC_OTHER_GROUP) != 0);
	for (i = 0; i < n; i++)
		FUZZ_ASSERT(strchr("abcdefghijklmnopqrstuvwxyz"
				   "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-",
				   group[i]));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *save, *rec, group[64];
	const char *frames[MAX_FRAMES];
	struct wc_fold *f = wc_fold_new(64, 64u << 10);
	static struct sink sink;
	struct wc_fold_stats st;
	struct wc_merge back;
	size_t n = 0;
	ssize_t bytes;

	if (!text || !f || wc_merge_init(&back, 1024, NULL))
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	rec = strtok_r(text, "\n", &save);
	wc_name_sanitize(rec ? rec : "", rec ? strlen(rec) : 0, group,
			 sizeof(group));
	check_group(group);
	while ((rec = strtok_r(NULL, "\n", &save)) && n < MAX_FRAMES) {
		unsigned char b = (unsigned char)rec[0];

		frames[n++] = rec + 1;
		if (b % 3 == 0)
			wc_fold_add(f, group, (enum wc_fold_kind)(b / 3 % 4),
				    frames, n, (uint64_t)b * 1000);
		if (b % 7 == 0)
			wc_fold_set_total(f, group, (enum wc_fold_kind)(b % 4),
					  (uint64_t)b * 3);
	}
	if (n)
		wc_fold_add(f, group, WC_FOLD_SLEEP, frames, n, 5000);
	sink.back = &back;
	sink.len = 0;
	sink.sum = 0;
	bytes = wc_fold_emit(f, n % 5, to_sink, &sink);
	FUZZ_ASSERT(bytes >= 0 && sink.len == 0);
	wc_fold_get_stats(f, &st);
	FUZZ_ASSERT(st.total_us == sink.sum && st.bytes == (uint64_t)bytes);
	wc_merge_free(&back);
	wc_fold_free(f);
	free(text);
	return 0;
}
