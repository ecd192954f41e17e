/*
 * wc_log.h - where the core's messages go.
 *
 * Owns: the one process-wide log sink.  The core never prints: it hands
 * complete lines to the sink, which a front end sets once at start (the
 * collectd glue to plugin_log, the tests to stderr).  Without a sink,
 * messages go to stderr.  Setting the sink is not thread-safe: do it before
 * any other call into the core.
 */
#ifndef WC_LOG_H
#define WC_LOG_H

enum wc_log_level {
	WC_LOG_ERR,
	WC_LOG_WARN,
	WC_LOG_NOTICE,
	WC_LOG_INFO,
	WC_LOG_DEBUG,
};

typedef void (*wc_log_fn)(enum wc_log_level level, const char *msg);

void wc_log_set(wc_log_fn fn);
void wc_log(enum wc_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Format into a caller's error buffer (always NUL-terminated); returns -1
 * so error paths can `return wc_err(...)`. */
int wc_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* WC_LOG_H */
