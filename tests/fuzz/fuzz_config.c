/*
 * fuzz_config.c - option values as collectd's parser or the command line
 * hands them over: any key, any number of values of any type (NaN,
 * infinities, huge and negative numbers, strings of any bytes, regexes).
 * A rejected option must say why and name its key; the config must be
 * freed whole whatever was set.
 *
 * Input: one option a line, "KEY\tVALUE\tVALUE...", each value prefixed
 * with its type: s (string), n (number, as strtod reads it), b (bool).
 */
#include <string.h>

#include "fuzz.h"
#include "core/wc_config.h"

#define MAX_VALS 8

static int parse_vals(char *rest, struct wc_cval *v)
{
	char *save, *tok;
	int n = 0;

	for (tok = strtok_r(rest, "\t", &save); tok && n < MAX_VALS;
	     tok = strtok_r(NULL, "\t", &save), n++) {
		memset(&v[n], 0, sizeof(v[n]));
		switch (tok[0]) {
		case 'n':
			v[n].type = WC_CVAL_NUMBER;
			v[n].n = strtod(tok + 1, NULL);
			break;
		case 'b':
			v[n].type = WC_CVAL_BOOL;
			v[n].b = tok[1] == '1';
			break;
		default:
			v[n].type = WC_CVAL_STRING;
			v[n].s = tok + (tok[0] == 's');
		}
	}
	return n;
}

static void set_line(struct wc_config *cfg, char *line)
{
	struct wc_cval vals[MAX_VALS];
	char *tab = strchr(line, '\t'), err[512];
	int n = 0;

	if (tab) {
		*tab = '\0';
		n = parse_vals(tab + 1, vals);
	}
	err[0] = '\0';
	if (wc_config_set(cfg, line, vals, n, err, sizeof(err)) != 0) {
		FUZZ_ASSERT(memchr(err, 0, sizeof(err)) && err[0]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *save, *line, err[512];
	struct wc_config cfg;

	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	wc_config_init(&cfg);
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		set_line(&cfg, line);
	err[0] = '\0';
	if (wc_config_finish(&cfg, err, sizeof(err)) != 0)
		FUZZ_ASSERT(err[0]);
	else
		FUZZ_ASSERT(cfg.sample_hz >= WC_HZ_MIN &&
			    cfg.sample_hz <= WC_HZ_MAX);
	wc_config_exit_ring_kib(&cfg, 1 + (int)(size % 512));
	wc_config_free(&cfg);
	free(text);
	return 0;
}
