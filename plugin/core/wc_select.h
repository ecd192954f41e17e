/*
 * wc_select.h - which group a process belongs to.
 *
 * Owns nothing long-lived: it reads the selections of a wc_config (which
 * must outlive it) and, when a ProcessMatch needs it, the process's command
 * line through a reader the caller may replace (tests do).
 *
 * Rules, in order: with only_tgid set (the command line's -p), every other
 * process is dropped; the first Process/ProcessMatch that matches names the
 * group; with selections configured, the rest goes to "other" or is dropped
 * (Unmatched); without any, every process is grouped by its name (kernel
 * threads by the part before '/').
 */
#ifndef WC_SELECT_H
#define WC_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/wc_config.h"

enum wc_verdict {
	WC_SEL_EXPLICIT, /* *index = the selection's position */
	WC_SEL_AUTO,	 /* name = the automatic group */
	WC_SEL_OTHER,
	WC_SEL_DROP,
};

/* Fills buf with the NUL-separated command line; returns its length (0 when
 * the process has none: a zombie leader, or one in the middle of an exec),
 * or -1 when it cannot be read (the process is gone). */
typedef long (*wc_cmdline_fn)(uint32_t tgid, char *buf, size_t len);

struct wc_selector {
	const struct wc_config *cfg;
	wc_cmdline_fn cmdline;
	bool need_cmdline;
};

void wc_selector_init(struct wc_selector *s, const struct wc_config *cfg,
		      wc_cmdline_fn cmdline);

/* comm: the thread group leader's name (not necessarily NUL-terminated,
 * at most 16 bytes).  name must hold WC_NAME_MAX bytes.  *unsure is set
 * when a ProcessMatch had only the name to go by for a user process: an
 * exec sets the new name before the new command line, so the caller should
 * ask again a little later. */
enum wc_verdict wc_select(const struct wc_selector *s, uint32_t tgid,
			  const char *comm, bool kthread, size_t *index,
			  char *name, bool *unsure);

/* The default reader: /proc/TGID/cmdline. */
long wc_proc_cmdline(uint32_t tgid, char *buf, size_t len);

#endif /* WC_SELECT_H */
