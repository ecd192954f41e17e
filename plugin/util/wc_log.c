/* wc_log.c - see wc_log.h. */
#include <stdarg.h>
#include <stdio.h>

#include "util/wc_log.h"

static wc_log_fn log_sink;

void wc_log_set(wc_log_fn fn)
{
	log_sink = fn;
}

void wc_log(enum wc_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_sink)
		log_sink(level, msg);
	else
		fprintf(stderr, "wallclock: %s\n", msg);
}

int wc_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}
