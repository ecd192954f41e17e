/*
 * wc_symd.c - wallclock-symd, the symbolizer's helper process: it reads
 * what local users control (maps, mapped files, debug files, perf maps)
 * for collectd and answers with plain data, one request at a time, on the
 * socket it finds as descriptor 3.
 *
 *   wallclock-symd --parent PID --wire N [--proc-root DIR]
 *                  [--debug-root DIR]
 *   wallclock-symd --check DIR    (confine, then try to write in DIR,
 *                                  to trace and to signal the caller)
 *
 * It is started by wc_sym_src, never by hand.  Whatever a hostile file
 * does to it (a read that never returns, a parser that crashes) costs
 * this process: the parent kills it after a deadline and starts another.
 * It exits when its parent goes away or closes the socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sym/wc_sym_priv.h"
#include "sym/wc_sym_wire.h"

#define SOCK_FD 3
/* Not an rc any op returns (WC_OP_CFI returns -errno). */
#define OP_UNKNOWN INT32_MIN
/* The parent's watcher only waits. */
#define WATCHER_STACK (64 * 1024)

static struct wc_fetch_ctx ctx = {.proc_root = "/proc",
				  .debug_root = "/usr/lib/debug"};

/* The caller's table budget: never more than a reply may carry. */
static size_t budget_of(struct wc_rbuf *r)
{
	uint64_t b = wc_rbuf_u64(r);

	return b > WC_FETCH_TABLE_MAX ? WC_FETCH_TABLE_MAX : (size_t)b;
}

static int op_maps(struct wc_rbuf *r, struct wc_wbuf *out)
{
	pid_t pid = (pid_t)wc_rbuf_u32(r);
	uint64_t known = wc_rbuf_u64(r);
	struct wc_fetch_maps m;
	int rc;

	if (r->failed)
		return -1;
	rc = wc_fetch_maps(&ctx, pid, known, &m);
	if (rc == 0)
		wc_wire_put_maps(out, &m);
	else if (rc == 1)
		wc_wire_put_maps(out, &m); /* no mappings: its ids and sig */
	wc_fetch_maps_free(&m);
	return rc;
}

/* A file that is not the mapping's any more is asked for again: said
 * apart (-ESTALE) from one that cannot be read (-1). */
static int stale_or_gone(void)
{
	return errno == ESTALE ? -ESTALE : -1;
}

static int op_image(struct wc_rbuf *r, struct wc_wbuf *out)
{
	pid_t pid = (pid_t)wc_rbuf_u32(r);
	struct wc_fetch_image img;
	struct wc_fetch_file f;
	struct wc_proc_map m;

	if (!wc_wire_get_map(r, &m))
		return -1;
	wc_wire_get_file(r, &f);
	if (r->failed)
		return -1;
	if (wc_fetch_image(&ctx, pid, &m, &f, &img))
		return stale_or_gone();
	wc_wire_put_image(out, &img);
	return 0;
}

static int op_symbols(struct wc_rbuf *r, struct wc_wbuf *out)
{
	pid_t pid = (pid_t)wc_rbuf_u32(r);
	struct wc_fetch_file f;
	struct wc_proc_map m;
	struct wc_symtab t;
	int rc;

	if (!wc_wire_get_map(r, &m))
		return -1;
	wc_wire_get_file(r, &f);
	wc_symtab_init(&t, budget_of(r), WC_FETCH_UNSIZED_MAX);
	if (r->failed)
		return -1;
	rc = wc_fetch_symbols(&ctx, pid, &m, &f, &t);
	if (rc == 0)
		wc_wire_put_symtab(out, &t);
	wc_symtab_free(&t);
	return rc ? stale_or_gone() : 0;
}

static int op_vdso(struct wc_rbuf *r, struct wc_wbuf *out)
{
	pid_t pid = (pid_t)wc_rbuf_u32(r);
	uint64_t start = wc_rbuf_u64(r), end = wc_rbuf_u64(r);
	struct wc_fetch_image img;
	struct wc_symtab t;
	char *image = NULL;
	int rc;

	wc_symtab_init(&t, budget_of(r), WC_FETCH_UNSIZED_MAX);
	if (r->failed)
		return -1;
	rc = wc_fetch_vdso(&ctx, pid, start, end, &image, &img, &t);
	if (rc == 0) {
		wc_wbuf_u32(out, (uint32_t)(end - start));
		wc_wbuf_bytes(out, image, (size_t)(end - start));
		wc_wire_put_image(out, &img);
		wc_wire_put_symtab(out, &t);
	}
	free(image);
	wc_symtab_free(&t);
	return rc;
}

static int op_perfmap(struct wc_rbuf *r, struct wc_wbuf *out)
{
	pid_t pid = (pid_t)wc_rbuf_u32(r), nspid = (pid_t)wc_rbuf_u32(r);
	uid_t euid = (uid_t)wc_rbuf_u32(r);
	bool have_known = wc_rbuf_u32(r);
	struct wc_file_id known, id;
	struct wc_symtab t;
	int rc;

	wc_wire_get_file_id(r, &known);
	wc_symtab_init(&t, budget_of(r), 1);
	if (r->failed)
		return -1;
	rc = wc_fetch_perfmap(&ctx, pid, nspid, euid,
			      have_known ? &known : NULL, &t, &id);
	if (rc == WC_PERFMAP_READ) {
		wc_wire_put_file_id(out, &id);
		wc_wire_put_symtab(out, &t);
	}
	wc_symtab_free(&t);
	return rc;
}

/* Failures as -errno, so that the caller can tell them apart. */
static int op_cfi(struct wc_rbuf *r, struct wc_wbuf *out)
{
	pid_t pid = (pid_t)wc_rbuf_u32(r);
	struct wc_cfi_limits lim;
	struct wc_cfi_table t;
	struct wc_proc_map m;

	if (!wc_wire_get_map(r, &m) || !wc_wire_get_cfi_limits(r, &lim))
		return -EINVAL;
	if (wc_fetch_cfi(&ctx, pid, &m, &lim, &t))
		return errno > 1 ? -errno : -EACCES;
	wc_wire_put_cfi(out, &t);
	wc_cfi_free(&t);
	return 0;
}

static int dispatch(uint32_t op, struct wc_rbuf *r, struct wc_wbuf *out)
{
	switch (op) {
	case WC_OP_MAPS:
		return op_maps(r, out);
	case WC_OP_IMAGE:
		return op_image(r, out);
	case WC_OP_SYMBOLS:
		return op_symbols(r, out);
	case WC_OP_VDSO:
		return op_vdso(r, out);
	case WC_OP_PERFMAP:
		return op_perfmap(r, out);
	case WC_OP_CFI:
		return op_cfi(r, out);
	default:
		return OP_UNKNOWN;
	}
}

static bool read_full(void *buf, size_t n)
{
	char *p = buf;

	while (n) {
		ssize_t got = read(SOCK_FD, p, n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return false;
		p += got;
		n -= (size_t)got;
	}
	return true;
}

static bool write_full(const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t put = send(SOCK_FD, p, n, MSG_NOSIGNAL);

		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0)
			return false;
		p += put;
		n -= (size_t)put;
	}
	return true;
}

/* One request answered; false when the parent is gone or broke the
 * protocol (nothing to do but exit). */
static bool serve_one(struct wc_wbuf *out, char *req)
{
	uint32_t head[2], fields[5];
	struct wc_rbuf r;
	int32_t rc;

	if (!read_full(head, sizeof(head)) || head[0] > WC_WIRE_REQ_MAX ||
	    !read_full(req, head[0]))
		return false;
	wc_rbuf_init(&r, req, head[0]);
	wc_wbuf_reset(out, WC_WIRE_REPLY_HEAD);
	ctx.refused = ctx.over_bounds = ctx.too_big = ctx.bad_lines = 0;
	rc = dispatch(head[1], &r, out);
	if (rc == OP_UNKNOWN || out->failed)
		return false;
	fields[0] = (uint32_t)rc;
	fields[1] = (uint32_t)ctx.refused;
	fields[2] = (uint32_t)ctx.over_bounds;
	fields[3] = (uint32_t)ctx.too_big;
	fields[4] = (uint32_t)ctx.bad_lines;
	wc_wbuf_seal(out);
	memcpy(out->p + 4, fields, sizeof(fields));
	return write_full(out->p, out->len);
}

/* Ends the whole helper when the parent process ends, even in the middle
 * of a long read (exit kills the other threads; a read that FUSE has
 * handed to its server ends only when the server answers or goes).
 * PR_SET_PDEATHSIG would follow the thread that started us, and collectd
 * ends its idle read threads while another still uses us. */
static void *watch_parent(void *arg)
{
	struct pollfd pf = {(int)(intptr_t)arg, POLLIN, 0};

	while (poll(&pf, 1, -1) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* Die with the parent, and keep to what this process needs. */
static int setup(pid_t parent)
{
	pthread_attr_t at;
	pthread_t th;
	int pidfd, rc;

	signal(SIGPIPE, SIG_IGN);
	/* the parent checked after the open, in case it went before: the
	 * confinement refuses pidfd_open, and the watcher starts after it,
	 * confined as well */
	pidfd = (int)syscall(SYS_pidfd_open, parent, 0);
	if (pidfd < 0 || getppid() != parent || wc_sym_priv_drop())
		return -1;
	if (pthread_attr_init(&at))
		return -1;
	rc = pthread_attr_setstacksize(&at, WATCHER_STACK) ||
	     pthread_create(&th, &at, watch_parent, (void *)(intptr_t)pidfd);
	pthread_attr_destroy(&at);
	return rc ? -1 : 0;
}

static int open2(const char *path, uint64_t flags)
{
	struct open_how how = {.flags = flags,
			       .mode = flags & O_CREAT ? 0600 : 0};

	return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
}

/* Say how opening path with flags, both ways, went. */
static void try_write(const char *what, const char *path, int flags)
{
	int fd = open(path, flags, 0600);

	printf("%s %s: %s\n", what, path, fd < 0 ? strerror(errno) : "done");
	if (fd >= 0)
		close(fd);
	fd = open2(path, (uint64_t)flags);
	printf("%s %s (openat2): %s\n", what, path,
	       fd < 0 ? strerror(errno) : "done");
	if (fd >= 0)
		close(fd);
}

/* --check: confine this process as a helper, then try what a helper must
 * not be able to do, and say what happened (the tests read it).  dir is
 * root's; a file wallclock-symd-keep in it is one the helper must not
 * truncate. */
static int check(const char *dir)
{
	char path[4096];

	/* results go to a pipe: a file would be refused (RLIMIT_FSIZE) */
	signal(SIGXFSZ, SIG_IGN);
	if (wc_sym_priv_drop()) {
		printf("confine: failed: %s\n", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/wallclock-symd-check", dir);
	try_write("create", path, O_WRONLY | O_CREAT | O_TRUNC);
	snprintf(path, sizeof(path), "%s/wallclock-symd-keep", dir);
	try_write("truncate", path, O_WRONLY | O_TRUNC);
	printf("trace the parent: %s\n", ptrace(PTRACE_ATTACH, getppid(), 0, 0)
						 ? strerror(errno)
						 : "done");
	printf("signal the parent: %s\n",
	       kill(getppid(), 0) ? strerror(errno) : "done");
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "wallclock-symd: started by the wallclock plugin and "
			"command, not by hand\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct wc_wbuf out = {0};
	pid_t parent = 0;
	int i, wire = 0;
	char *req;

	if (argc == 3 && !strcmp(argv[1], "--check"))
		return check(argv[2]);
	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--parent"))
			parent = (pid_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--wire"))
			wire = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--proc-root"))
			ctx.proc_root = argv[i + 1];
		else if (!strcmp(argv[i], "--debug-root"))
			ctx.debug_root = argv[i + 1];
		else
			return usage();
	}
	if (i != argc || parent <= 0)
		return usage();
	if (wire != WC_WIRE_VERSION)
		return WC_WIRE_EXIT_VERSION;
	if (setup(parent))
		return 1;
	req = malloc(WC_WIRE_REQ_MAX);
	if (!req)
		return 1;
	while (serve_one(&out, req))
		;
	free(req);
	wc_wbuf_free(&out);
	return 0;
}
