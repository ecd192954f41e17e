/* wc_select.c - see wc_select.h. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/wc_name.h"
#include "core/wc_select.h"

#define COMM_LEN 16
#define CMDLINE_MAX 4096

void wc_selector_init(struct wc_selector *s, const struct wc_config *cfg,
		      wc_cmdline_fn cmdline)
{
	size_t i;

	s->cfg = cfg;
	s->cmdline = cmdline ? cmdline : wc_proc_cmdline;
	s->need_cmdline = false;
	for (i = 0; i < cfg->nsel; i++)
		if (cfg->sel[i].is_regex)
			s->need_cmdline = true;
}

long wc_proc_cmdline(uint32_t tgid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/cmdline", tgid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len);
	close(fd);
	return n >= 0 ? (long)n : -1;
}

/* The kernel truncates comm to 15 bytes: a longer configured name matches
 * on its first 15, as `ps` would show it. */
static bool comm_matches(const char *want, const char *comm)
{
	return strncmp(want, comm, COMM_LEN - 1) == 0 &&
	       (strlen(want) >= COMM_LEN - 1 ||
		strnlen(comm, COMM_LEN) == strlen(want));
}

/* Arguments joined by spaces, or the name for processes without one
 * (kernel threads, zombies, processes already gone or in the middle of an
 * exec); returns false in that case. */
static bool command_line(const struct wc_selector *s, uint32_t tgid,
			 const char *comm, char *buf, size_t len)
{
	long i, n = s->cmdline(tgid, buf, len - 1);

	if (n <= 0) {
		snprintf(buf, len, "%.*s", COMM_LEN, comm);
		return false;
	}
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	return true;
}

enum wc_verdict wc_select(const struct wc_selector *s, uint32_t tgid,
			  const char *comm, bool kthread, size_t *index,
			  char *name, bool *unsure)
{
	const struct wc_config *cfg = s->cfg;
	char cmd[CMDLINE_MAX];
	char safe_comm[COMM_LEN + 1];
	size_t i;

	if (cfg->only_tgid && tgid != cfg->only_tgid)
		return WC_SEL_DROP;
	*unsure = false;
	snprintf(safe_comm, sizeof(safe_comm), "%.*s", COMM_LEN - 1, comm);
	if (s->need_cmdline)
		*unsure = !command_line(s, tgid, safe_comm, cmd, sizeof(cmd)) &&
			  !kthread;
	for (i = 0; i < cfg->nsel; i++) {
		const struct wc_selection *sel = &cfg->sel[i];
		bool hit = sel->is_regex
				   ? regexec(&sel->re, cmd, 0, NULL, 0) == 0
				   : comm_matches(sel->comm, safe_comm);

		if (hit) {
			*index = i;
			snprintf(name, WC_NAME_MAX, "%s", sel->label);
			return WC_SEL_EXPLICIT;
		}
	}
	if (cfg->nsel > 0)
		return cfg->unmatched_other ? WC_SEL_OTHER : WC_SEL_DROP;
	if (kthread)
		wc_name_kthread(safe_comm, sizeof(safe_comm), name,
				WC_NAME_MAX);
	else
		wc_name_sanitize(safe_comm, sizeof(safe_comm), name,
				 WC_NAME_MAX);
	return WC_SEL_AUTO;
}
