/* wc_sym_src.c - see wc_sym_src.h. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/wc_log.h"
#include "sym/wc_sym_src.h"
#include "sym/wc_sym_wire.h"

/* waitid's id type for a pidfd (5.4), not in every libc's headers */
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define DENY_MAX 256
#define ZOMBIES_MAX 16
/* Helpers killed but still stuck (in a read even SIGKILL cannot end, like
 * one of a hung FUSE server): past this many, no new one is started. */
#define STUCK_MAX 4
/* A reply buffer bigger than this is freed after use. */
#define REPLY_KEEP (1u << 20)
/* Waiting for the helper may take a twentieth of the time on average, in
 * bursts of up to 1 s: budgets per drain and flush only say when a call
 * may start, and one can take up to the deadline. */
#define SHARE_DIVISOR 20
#define BURST_NS 1000000000LL
/* A reply never carries more: the biggest table and a process's maps. */
#define REPLY_MAX (WC_FETCH_TABLE_MAX + (8u << 20))

/* What a call reads, to say so and to never ask for it again if it made
 * the helper stall. */
enum culprit_kind { C_MAPS = 1, C_FILE, C_VDSO, C_PERFMAP };

struct culprit {
	enum culprit_kind kind;
	pid_t pid;
	uint64_t dev, ino; /* C_FILE */
	const char *path;  /* C_FILE: the file as the process sees it */
};

struct wc_sym_src {
	char *helper, *proc_root, *debug_root;
	const char *lacking;
	unsigned deadline_ms, share;
	struct wc_fetch_ctx ctx; /* the reads in this process, and counts */
	pid_t child;
	int pidfd; /* the helper's: never a pid that may be reused */
	int fd;
	bool down; /* stopped until the next cycle */
	bool start_failed_said;
	int zombies[ZOMBIES_MAX]; /* pidfds of helpers killed, not gone yet */
	struct culprit deny[DENY_MAX];
	size_t ndeny, deny_next;
	struct wc_wbuf req;
	char *reply;
	size_t reply_cap;
	uint64_t allowed_ns, spent_ns; /* the caller's budget */
	int64_t tokens_ns;    /* the long-run share left, may go below 0 */
	bool whole;	      /* WC_SYM_WHOLE: no share either */
	uint64_t refilled_ns; /* when it was last topped up */
	struct wc_sym_src_stats st;
};

const char *wc_sym_src_default_helper(void)
{
	const char *env = getenv("WALLCLOCK_SYMD");

	return env && env[0] ? env : WC_SYMD_PATH;
}

struct wc_sym_src *wc_sym_src_new(const struct wc_sym_src_opts *o)
{
	struct wc_sym_src *s = calloc(1, sizeof(*s));
	size_t i;

	if (!s)
		return NULL;
	s->fd = s->pidfd = -1;
	s->allowed_ns = UINT64_MAX;
	s->tokens_ns = BURST_NS;
	for (i = 0; i < ZOMBIES_MAX; i++)
		s->zombies[i] = -1;
	s->deadline_ms = o->deadline_ms ? o->deadline_ms
					: WC_SYM_SRC_DEADLINE_MS;
	s->share = o->share ? o->share : SHARE_DIVISOR;
	s->lacking = o->lacking ? o->lacking : "user frames are not named";
	s->helper = o->helper ? strdup(o->helper) : NULL;
	s->proc_root = strdup(o->proc_root ? o->proc_root : "/proc");
	s->debug_root =
		strdup(o->debug_root ? o->debug_root : "/usr/lib/debug");
	if ((o->helper && !s->helper) || !s->proc_root || !s->debug_root) {
		wc_sym_src_free(s);
		return NULL;
	}
	s->ctx.proc_root = s->proc_root;
	s->ctx.debug_root = s->debug_root;
	return s;
}

/* --- the helper's life ----------------------------------------------------- */

/*
 * Has the process behind pidfd ended (waiting up to ms)?  Reaped if it is
 * ours to reap: collectd may ignore SIGCHLD, and the kernel reaps it
 * then, so how it ended (into how, if given) may not be known.
 */
static bool ended(int pidfd, int ms, char *how, size_t len)
{
	struct pollfd pf = {pidfd, POLLIN, 0};
	siginfo_t si;

	if (poll(&pf, 1, ms) <= 0 || !(pf.revents & POLLIN))
		return false;
	memset(&si, 0, sizeof(si));
	if (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG) ||
	    !si.si_pid) {
		if (how)
			snprintf(how, len, "died");
	} else if (how && si.si_code == CLD_EXITED &&
		   si.si_status == WC_WIRE_EXIT_VERSION) {
		snprintf(how, len,
			 "is of another version of wallclock "
			 "(reinstall it)");
	} else if (how && si.si_code == CLD_EXITED) {
		snprintf(how, len, "exited with status %d", si.si_status);
	} else if (how) {
		snprintf(how, len, "died of signal %d", si.si_status);
	}
	return true;
}

/* How many are left. */
static unsigned reap_zombies(struct wc_sym_src *s)
{
	unsigned left = 0;
	size_t i;

	for (i = 0; i < ZOMBIES_MAX; i++) {
		if (s->zombies[i] >= 0 && ended(s->zombies[i], 0, NULL, 0)) {
			close(s->zombies[i]);
			s->zombies[i] = -1;
		}
		left += s->zombies[i] >= 0;
	}
	return left;
}

static void forget_child(struct wc_sym_src *s)
{
	if (s->pidfd >= 0)
		close(s->pidfd);
	s->pidfd = -1;
	s->child = 0;
}

/* Kill the helper and never wait for it: one stuck in a read that even
 * SIGKILL cannot end at once is reaped later. */
static void stop_helper(struct wc_sym_src *s)
{
	size_t i;

	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	if (s->pidfd < 0) {
		forget_child(s);
		return;
	}
	syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
	if (!ended(s->pidfd, 0, NULL, 0)) {
		for (i = 0; i < ZOMBIES_MAX && s->zombies[i] >= 0; i++)
			;
		if (i < ZOMBIES_MAX) {
			s->zombies[i] = s->pidfd;
			s->pidfd = -1;
		}
	}
	forget_child(s);
}

void wc_sym_src_free(struct wc_sym_src *s)
{
	struct timespec step = {0, 5000000};
	int i;

	if (!s)
		return;
	stop_helper(s);
	/* a helper killed just now is gone a moment later, unless a read
	 * even SIGKILL cannot end holds it: never wait long for that */
	for (i = 0; i < 40 && reap_zombies(s); i++)
		nanosleep(&step, NULL);
	wc_wbuf_free(&s->req);
	free(s->reply);
	free(s->helper);
	free(s->proc_root);
	free(s->debug_root);
	free(s);
}

static int spawn(struct wc_sym_src *s, int fd, pid_t *pid)
{
	char parent[24], wire[16];
	char *const argv[] = {s->helper,    "--parent",	    parent,
			      "--wire",	    wire,	    "--proc-root",
			      s->proc_root, "--debug-root", s->debug_root,
			      NULL};
	char *const envp[] = {NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	int rc;

	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	snprintf(wire, sizeof(wire), "%d", WC_WIRE_VERSION);
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	/* Descriptor 3 is the socket, and nothing else of ours goes; its
	 * own process group, so a terminal's Ctrl-C reaches only us. */
	posix_spawn_file_actions_adddup2(&fa, fd, 3);
	posix_spawn_file_actions_addclosefrom_np(&fa, 4);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF |
					      POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setpgroup(&at, 0);
	rc = posix_spawn(pid, s->helper, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	return rc;
}

static int start_helper(struct wc_sym_src *s)
{
	int sv[2], rc;

	if (reap_zombies(s) >= STUCK_MAX) {
		if (!s->start_failed_said)
			wc_log(WC_LOG_ERR,
			       "symbolizer: %u helpers are stuck in reads "
			       "that not even SIGKILL ends (a hung FUSE "
			       "server?); no other is started until they "
			       "are gone: %s",
			       STUCK_MAX, s->lacking);
		s->start_failed_said = true;
		s->st.start_failures++;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		s->st.start_failures++;
		return -1;
	}
	rc = spawn(s, sv[1], &s->child);
	close(sv[1]);
	/* Gone already (ESRCH, reaped by the kernel if collectd ignores
	 * SIGCHLD): the socket tells, at the first call. */
	if (rc == 0) {
		s->pidfd = (int)syscall(SYS_pidfd_open, s->child, 0);
		if (s->pidfd < 0 && errno != ESRCH) {
			rc = errno;
			kill(s->child, SIGKILL); /* just started: still ours */
		}
	}
	if (rc) {
		close(sv[0]);
		forget_child(s);
		if (!s->start_failed_said)
			wc_log(WC_LOG_ERR,
			       "symbolizer: cannot start %s: %s; %s until it "
			       "can (install it, or set WALLCLOCK_SYMD to "
			       "where it is)",
			       s->helper, strerror(rc), s->lacking);
		s->start_failed_said = true;
		s->st.start_failures++;
		return -1;
	}
	if (s->start_failed_said)
		wc_log(WC_LOG_NOTICE, "symbolizer: %s started", s->helper);
	s->start_failed_said = false;
	s->fd = sv[0];
	s->st.starts++;
	return 0;
}

/* A big reply's buffer (a table of megabytes) goes by the next call or
 * cycle. */
static void done_with_reply(struct wc_sym_src *s)
{
	if (s->reply_cap > REPLY_KEEP) {
		free(s->reply);
		s->reply = NULL;
		s->reply_cap = 0;
	}
}

void wc_sym_src_allow(struct wc_sym_src *s, unsigned ms)
{
	s->whole = ms == WC_SYM_WHOLE;
	s->allowed_ns = ms == WC_SYM_UNLIMITED || s->whole
				? UINT64_MAX
				: (uint64_t)ms * 1000000;
	s->spent_ns = 0;
}

void wc_sym_src_cycle(struct wc_sym_src *s)
{
	done_with_reply(s);
	s->down = false;
	reap_zombies(s);
}

/* --- what the helper must not read again ------------------------------------- */

/* A file stalls whoever maps it; the rest are one process's. */
static bool same_culprit(const struct culprit *a, const struct culprit *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == C_FILE)
		return a->dev == b->dev && a->ino == b->ino;
	return a->pid == b->pid;
}

static bool denied(const struct wc_sym_src *s, const struct culprit *c)
{
	size_t i;

	for (i = 0; i < s->ndeny; i++)
		if (same_culprit(&s->deny[i], c))
			return true;
	return false;
}

static void deny(struct wc_sym_src *s, const struct culprit *c)
{
	struct culprit *d = &s->deny[s->deny_next];

	*d = *c;
	d->path = NULL; /* the caller's; not needed to compare */
	s->deny_next = (s->deny_next + 1) % DENY_MAX;
	if (s->ndeny < DENY_MAX)
		s->ndeny++;
}

void wc_sym_src_forget(struct wc_sym_src *s, pid_t pid)
{
	size_t i;

	for (i = 0; i < s->ndeny; i++)
		if (s->deny[i].pid == pid && s->deny[i].kind != C_FILE)
			s->deny[i].kind = 0;
}

static void describe(const struct culprit *c, char *buf, size_t len)
{
	switch (c->kind) {
	case C_MAPS:
		snprintf(buf, len,
			 "the maps of pid %d (and the files they "
			 "name)",
			 (int)c->pid);
		break;
	case C_FILE:
		snprintf(buf, len, "%s, mapped by pid %d", c->path,
			 (int)c->pid);
		/* the path is a user's: no control bytes into the log */
		for (; *buf; buf++)
			if ((unsigned char)*buf < 0x20 || *buf == 0x7f)
				*buf = '?';
		break;
	case C_VDSO:
		snprintf(buf, len, "the vdso of pid %d", (int)c->pid);
		break;
	default:
		snprintf(buf, len, "the perf map of pid %d", (int)c->pid);
		break;
	}
}

/* The helper failed at c: stop it for this cycle, never read c again. */
static void failed(struct wc_sym_src *s, const struct culprit *c,
		   const char *how)
{
	char what[PATH_MAX + 64];

	describe(c, what, sizeof(what));
	wc_log(WC_LOG_WARN,
	       "symbolizer: %s %s reading %s; stopped: that is not read "
	       "again, and user frames are not named until the next flush",
	       s->helper, how, what);
	stop_helper(s);
	deny(s, c);
	s->down = true;
}

/* --- one request and its reply ------------------------------------------------ */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static long ms_left(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (deadline->tv_sec - now.tv_sec) * 1000 +
	       (deadline->tv_nsec - now.tv_nsec) / 1000000;
}

/* 1 done, 0 out of time, -1 the helper is gone. */
static int xfer(int fd, char *p, size_t n, bool out,
		const struct timespec *deadline)
{
	while (n) {
		struct pollfd pf = {fd, out ? POLLOUT : POLLIN, 0};
		long left = ms_left(deadline);
		ssize_t got;

		if (left <= 0)
			return 0;
		if (poll(&pf, 1, (int)left) < 0 && errno != EINTR)
			return -1;
		if (!pf.revents)
			continue;
		got = out ? send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT)
			  : recv(fd, p, n, MSG_DONTWAIT);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			return -1;
		p += got;
		n -= (size_t)got;
	}
	return 1;
}

/* Why a helper that stopped answering went away, for the log. */
static const char *death_of(struct wc_sym_src *s, char *buf, size_t len)
{
	/* its end of the socket closes just before it ends */
	if (s->pidfd < 0 || ended(s->pidfd, 100, buf, len)) {
		if (s->pidfd < 0)
			snprintf(buf, len, "died");
		forget_child(s);
	} else {
		snprintf(buf, len, "broke off");
	}
	return buf;
}

static int receive(struct wc_sym_src *s, const struct timespec *deadline,
		   struct wc_rbuf *r, int32_t *rc)
{
	uint32_t head[WC_WIRE_REPLY_HEAD / 4];
	int got = xfer(s->fd, (char *)head, sizeof(head), false, deadline);

	if (got <= 0)
		return got;
	if (head[0] > REPLY_MAX)
		return -1;
	if (head[0] > s->reply_cap) {
		char *np = realloc(s->reply, head[0]);

		if (!np)
			return -1;
		s->reply = np;
		s->reply_cap = head[0];
	}
	got = xfer(s->fd, s->reply, head[0], false, deadline);
	if (got <= 0)
		return got;
	*rc = (int32_t)head[1];
	s->st.refused += head[2];
	s->st.over_bounds += head[3];
	s->st.too_big += head[4];
	s->st.bad_lines += head[5];
	wc_rbuf_init(r, s->reply, head[0]);
	return 1;
}

static void begin(struct wc_sym_src *s, enum wc_wire_op op)
{
	uint32_t v = op;

	wc_wbuf_reset(&s->req, WC_WIRE_REQ_HEAD);
	if (!s->req.failed)
		memcpy(s->req.p + 4, &v, sizeof(v));
}

/* The long-run share: time since the last call earns a twentieth of
 * it (or the share the caller chose). */
static bool may_call(struct wc_sym_src *s)
{
	uint64_t now = mono_ns();

	if (s->refilled_ns)
		s->tokens_ns += (int64_t)((now - s->refilled_ns) / s->share);
	if (s->tokens_ns > BURST_NS)
		s->tokens_ns = BURST_NS;
	s->refilled_ns = now;
	if (s->whole)
		return true;
	return s->tokens_ns > 0 && s->spent_ns < s->allowed_ns;
}

static int skip(struct wc_sym_src *s)
{
	s->st.skipped++;
	errno = EAGAIN;
	return -1;
}

static int call_helper(struct wc_sym_src *s, const struct culprit *c,
		       struct wc_rbuf *r)
{
	struct timespec deadline;
	char how[64];
	int32_t rc = -1;
	int got;

	if (s->down || denied(s, c) || s->req.failed || !may_call(s))
		return skip(s);
	if (s->fd < 0 && start_helper(s)) {
		s->down = true;
		return skip(s);
	}
	wc_wbuf_seal(&s->req);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += s->deadline_ms / 1000;
	deadline.tv_nsec += (long)(s->deadline_ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	got = xfer(s->fd, s->req.p, s->req.len, true, &deadline);
	if (got > 0)
		got = receive(s, &deadline, r, &rc);
	if (got == 0) {
		snprintf(how, sizeof(how), "did not answer within %.1f s",
			 s->deadline_ms / 1e3);
		s->st.stalls++;
		failed(s, c, how);
		errno = EAGAIN;
		return -1;
	}
	if (got < 0) {
		s->st.crashes++;
		failed(s, c, death_of(s, how, sizeof(how)));
		errno = EAGAIN;
		return -1;
	}
	errno = ESRCH;
	return rc;
}

/*
 * Send the request built in s->req and wait for its reply; r then reads
 * its result.  The helper's rc (-1 with errno ESRCH: what it was asked
 * for is not there), or -1 with EAGAIN if there was no answer (logged,
 * and c not asked for again) or the call was not made.
 */
static int call(struct wc_sym_src *s, const struct culprit *c,
		struct wc_rbuf *r)
{
	uint64_t t0 = mono_ns();
	int rc;

	done_with_reply(s);
	rc = call_helper(s, c, r);
	t0 = mono_ns() - t0;
	s->spent_ns += t0;
	s->tokens_ns -= (int64_t)t0;
	return rc;
}

/* A reply that does not decode: the helper is not to be trusted. */
static int broken(struct wc_sym_src *s, const struct culprit *c)
{
	s->st.crashes++;
	failed(s, c, "sent a malformed reply");
	errno = EAGAIN;
	return -1;
}

/* The helper's rc: -errno from the calls that say why they failed. */
static int said(struct wc_sym_src *s, const struct culprit *c, int rc)
{
	if (rc >= -1)
		return rc;
	if (rc < -4095)
		return broken(s, c);
	errno = -rc;
	return -1;
}

/* --- the calls ------------------------------------------------------------------ */

static void add_counts(struct wc_sym_src *s)
{
	s->st.refused += s->ctx.refused;
	s->st.over_bounds += s->ctx.over_bounds;
	s->st.too_big += s->ctx.too_big;
	s->st.bad_lines += s->ctx.bad_lines;
	s->ctx.refused = s->ctx.over_bounds = s->ctx.too_big = 0;
	s->ctx.bad_lines = 0;
}

int wc_sym_src_maps(struct wc_sym_src *s, pid_t pid, uint64_t known_sig,
		    struct wc_fetch_maps *out)
{
	struct culprit c = {.kind = C_MAPS, .pid = pid};
	struct wc_rbuf r;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!s->helper) {
		rc = wc_fetch_maps(&s->ctx, pid, known_sig, out);
		add_counts(s);
		return rc;
	}
	begin(s, WC_OP_MAPS);
	wc_wbuf_u32(&s->req, (uint32_t)pid);
	wc_wbuf_u64(&s->req, known_sig);
	rc = call(s, &c, &r);
	if (rc == 0 || rc == 1)
		wc_wire_get_maps(&r, out);
	if (rc >= 0 && r.failed)
		return broken(s, &c);
	return rc;
}

static void put_file(struct wc_sym_src *s, enum wc_wire_op op, pid_t pid,
		     const struct wc_proc_map *m, struct culprit *c)
{
	*c = (struct culprit){
		.kind = C_FILE,
		.dev = (uint64_t)m->dev_major << 32 | m->dev_minor,
		.ino = m->ino,
		.pid = pid,
		.path = m->path,
	};
	begin(s, op);
	wc_wbuf_u32(&s->req, (uint32_t)pid);
	wc_wire_put_map(&s->req, m);
}

int wc_sym_src_image(struct wc_sym_src *s, pid_t pid,
		     const struct wc_proc_map *m, const struct wc_fetch_file *f,
		     struct wc_fetch_image *out)
{
	struct culprit c;
	struct wc_rbuf r;
	int rc;

	if (!s->helper) {
		rc = wc_fetch_image(&s->ctx, pid, m, f, out);
		add_counts(s);
		return rc;
	}
	put_file(s, WC_OP_IMAGE, pid, m, &c);
	wc_wire_put_file(&s->req, f);
	rc = call(s, &c, &r);
	if (rc == 0 && !wc_wire_get_image(&r, out))
		return broken(s, &c);
	return said(s, &c, rc);
}

int wc_sym_src_symbols(struct wc_sym_src *s, pid_t pid,
		       const struct wc_proc_map *m,
		       const struct wc_fetch_file *f, struct wc_symtab *t)
{
	struct culprit c;
	struct wc_rbuf r;
	int rc;

	if (!s->helper) {
		rc = wc_fetch_symbols(&s->ctx, pid, m, f, t);
		add_counts(s);
		return rc;
	}
	put_file(s, WC_OP_SYMBOLS, pid, m, &c);
	wc_wire_put_file(&s->req, f);
	wc_wbuf_u64(&s->req, t->max_bytes);
	rc = call(s, &c, &r);
	if (rc == 0 && !wc_wire_get_symtab(&r, t))
		return r.failed ? broken(s, &c) : -1;
	return said(s, &c, rc);
}

int wc_sym_src_vdso(struct wc_sym_src *s, pid_t pid, uint64_t start,
		    uint64_t end, char **image, struct wc_fetch_image *img,
		    struct wc_symtab *t)
{
	struct culprit c = {.kind = C_VDSO, .pid = pid};
	const void *bytes;
	struct wc_rbuf r;
	uint32_t len;
	int rc;

	if (!s->helper) {
		rc = wc_fetch_vdso(&s->ctx, pid, start, end, image, img, t);
		add_counts(s);
		return rc;
	}
	begin(s, WC_OP_VDSO);
	wc_wbuf_u32(&s->req, (uint32_t)pid);
	wc_wbuf_u64(&s->req, start);
	wc_wbuf_u64(&s->req, end);
	wc_wbuf_u64(&s->req, t->max_bytes);
	rc = call(s, &c, &r);
	if (rc != 0)
		return rc;
	len = wc_rbuf_u32(&r);
	bytes = len == end - start ? wc_rbuf_bytes(&r, len) : NULL;
	if (!bytes || !wc_wire_get_image(&r, img) ||
	    (!wc_wire_get_symtab(&r, t) && r.failed))
		return broken(s, &c);
	*image = malloc(len);
	if (!*image) {
		wc_symtab_free(t);
		errno = ENOMEM;
		return -1;
	}
	memcpy(*image, bytes, len);
	return 0;
}

int wc_sym_src_perfmap(struct wc_sym_src *s, pid_t pid, pid_t nspid, uid_t euid,
		       const struct wc_file_id *known, struct wc_symtab *t,
		       struct wc_file_id *id)
{
	struct culprit c = {.kind = C_PERFMAP, .pid = pid};
	const struct wc_file_id none = {0};
	struct wc_rbuf r;
	int rc;

	if (!s->helper) {
		rc = wc_fetch_perfmap(&s->ctx, pid, nspid, euid, known, t, id);
		add_counts(s);
		return rc;
	}
	begin(s, WC_OP_PERFMAP);
	wc_wbuf_u32(&s->req, (uint32_t)pid);
	wc_wbuf_u32(&s->req, (uint32_t)nspid);
	wc_wbuf_u32(&s->req, (uint32_t)euid);
	wc_wbuf_u32(&s->req, known != NULL);
	wc_wire_put_file_id(&s->req, known ? known : &none);
	wc_wbuf_u64(&s->req, t->max_bytes);
	rc = call(s, &c, &r);
	if (rc < 0 && rc != WC_PERFMAP_OVER)
		return WC_PERFMAP_OVER;
	if (rc == WC_PERFMAP_READ &&
	    (!wc_wire_get_file_id(&r, id) || !wc_wire_get_symtab(&r, t))) {
		if (r.failed)
			broken(s, &c);
		return WC_PERFMAP_OVER;
	}
	return rc;
}

int wc_sym_src_cfi(struct wc_sym_src *s, pid_t pid, const struct wc_proc_map *m,
		   const struct wc_cfi_limits *lim, struct wc_cfi_table *out)
{
	struct culprit c;
	struct wc_rbuf r;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!s->helper) {
		rc = wc_fetch_cfi(&s->ctx, pid, m, lim, out);
		add_counts(s);
		return rc;
	}
	put_file(s, WC_OP_CFI, pid, m, &c);
	wc_wire_put_cfi_limits(&s->req, lim);
	rc = said(s, &c, call(s, &c, &r));
	if (rc < 0)
		return rc;
	if (rc > 0 || !wc_wire_get_cfi(&r, lim->rows_max, out))
		return broken(s, &c);
	return 0;
}

bool wc_sym_src_cannot_start(const struct wc_sym_src *s)
{
	return s->start_failed_said;
}

void wc_sym_src_stats(const struct wc_sym_src *s, struct wc_sym_src_stats *out)
{
	*out = s->st;
	out->refused += s->ctx.refused;
	out->over_bounds += s->ctx.over_bounds;
	out->too_big += s->ctx.too_big;
	out->bad_lines += s->ctx.bad_lines;
}
