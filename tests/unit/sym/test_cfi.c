/*
 * test_cfi.c - the unwind table builder on files whose rules are known:
 * tests/unit/sym/fixtures/build_cfi.sh builds cfi_fixture.c with and
 * without frame pointers (and once with no .eh_frame) into a temporary
 * directory; libc gives a signal frame and a build big enough for the
 * limits.  Corrupted copies of a fixture must build or fail cleanly.
 *
 *   test_cfi --dump FILE   prints FILE's rows (tests/unit/sym/cfi_readelf.py
 *                          checks them against binutils' reading)
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gelf.h>

#include "check.h"
#include "sym/wc_sym_cfi.h"
#include "sym/wc_sym_fetch.h"
#include "sym/wc_sym_src.h"
#include "fixtures/cfi_run.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static char fxdir[PATH_MAX];
static char fx_skip[512];

static void fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, len, f, ap);
	va_end(ap);
}

struct file {
	struct wc_elf e;
	struct wc_elf_info info;
	struct wc_cfi_table t;
	int err; /* the build's errno, 0 when it built */
};

static bool open_file(struct file *f, const char *path)
{
	memset(f, 0, sizeof(*f));
	if (wc_elf_open_fd(&f->e, open(path, O_RDONLY | O_CLOEXEC)) ||
	    wc_elf_read_info(&f->e, &f->info)) {
		printf("  cannot open %s\n", path);
		return false;
	}
	return true;
}

static bool build_with(struct file *f, const char *path,
		       const struct wc_cfi_limits *lim)
{
	if (!open_file(f, path))
		return false;
	f->err = wc_cfi_build(&f->e, &f->info, lim, &f->t) ? errno : 0;
	return true;
}

static bool build(struct file *f, const char *name)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	char path[PATH_MAX];

	fmt(path, sizeof(path), "%s/%s", fxdir, name);
	return build_with(f, path, &lim);
}

static void close_file(struct file *f)
{
	wc_cfi_free(&f->t);
	wc_elf_close(&f->e);
}

static bool func_in(struct file *f, struct wc_elf *syms, const char *name,
		    uint64_t *off, uint64_t *size);

/* A function's file offset and size, from the fixture's .symtab. */
static bool func(struct file *f, const char *name, uint64_t *off,
		 uint64_t *size)
{
	return func_in(f, &f->e, name, off, size);
}

/* The same, the symbol from syms (a debug file of f's). */
static bool func_in(struct file *f, struct wc_elf *syms, const char *name,
		    uint64_t *off, uint64_t *size)
{
	struct wc_symtab st;
	bool found = false;
	size_t i;
	unsigned s;

	wc_symtab_init(&st, 1u << 20, 4096);
	if (wc_elf_symbols(syms, false, &st) < 0 || wc_symtab_finish(&st))
		goto out;
	for (i = 0; i < st.n && !found; i++) {
		const struct wc_symtab_ent *e = &st.ents[i];

		if (strcmp(wc_symtab_name(&st, e), name) != 0)
			continue;
		for (s = 0; s < f->info.nsegs; s++) {
			const struct wc_elf_seg *g = &f->info.segs[s];

			if (e->addr >= g->vaddr &&
			    e->addr - g->vaddr < g->filesz) {
				*off = e->addr - g->vaddr + g->off;
				*size = e->size;
				found = true;
			}
		}
	}
out:
	wc_symtab_free(&st);
	if (!found)
		printf("  no symbol %s\n", name);
	return found;
}

static bool sorted(const struct wc_cfi_table *t)
{
	size_t i;

	for (i = 1; i < t->n; i++)
		if (t->rows[i - 1].off >= t->rows[i].off)
			return false;
	return true;
}

static size_t count_kind(const struct wc_cfi_table *t, enum wc_cfa_kind k)
{
	size_t i, n = 0;

	for (i = 0; i < t->n; i++)
		n += wc_cfi_kind(&t->rows[i]) == k;
	return n;
}

/* With frame pointers: rsp + 8 at entry, rsp + 16 after the push (rbp
 * saved at CFA - 16), then rbp + 16. */
static void test_frame_pointer_rules(void)
{
	const struct wc_cfi_row *r;
	struct file f;
	uint64_t off, size, at;
	bool fp_seen = false;
	unsigned bad = 0;

	if (*fx_skip)
		SKIP(fx_skip);
	if (!build(&f, "cfx_fp") || !func(&f, "cfx_framed", &off, &size)) {
		CHECK(!"fixture read");
		close_file(&f);
		return;
	}
	CHECK(f.err == 0);
	CHECK(sorted(&f.t));
	r = wc_cfi_find(&f.t, off);
	CHECK(r && wc_cfi_kind(r) == WC_CFA_SP && r->cfa == 1 &&
	      wc_cfi_fp(r) == WC_FP_SAME);
	r = wc_cfi_find(&f.t, off + 1);
	CHECK(r && wc_cfi_kind(r) == WC_CFA_SP && r->cfa == 2 &&
	      wc_cfi_fp(r) == WC_FP_AT && r->fp_slot == -2);
	for (at = off; at < off + size; at++) {
		r = wc_cfi_find(&f.t, at);
		if (r && wc_cfi_kind(r) == WC_CFA_FP) {
			fp_seen = true;
			bad += r->cfa != 2 || wc_cfi_fp(r) != WC_FP_AT ||
			       r->fp_slot != -2;
		}
	}
	CHECK(fp_seen);
	CHECK(bad == 0);
	CHECK(count_kind(&f.t, WC_CFA_PLT) >= 1);
	CHECK(f.t.stats.unsupported == 0);
	close_file(&f);
}

/* Without: the CFA is rsp plus the 8 KiB frame, never rbp; a leaf keeps
 * rsp + 8 throughout. */
static void test_no_frame_pointer_rules(void)
{
	const struct wc_cfi_row *r;
	struct file f;
	uint64_t off, size, at, most = 0;
	unsigned bad = 0;

	if (*fx_skip)
		SKIP(fx_skip);
	if (!build(&f, "cfx_nofp") || !func(&f, "cfx_framed", &off, &size)) {
		CHECK(!"fixture read");
		close_file(&f);
		return;
	}
	CHECK(f.err == 0);
	for (at = off; at < off + size; at++) {
		r = wc_cfi_find(&f.t, at);
		bad += !r || wc_cfi_kind(r) != WC_CFA_SP;
		if (r && r->cfa > most)
			most = r->cfa;
	}
	CHECK(bad == 0);
	CHECK(most * 8 >= 8192 + 8);
	CHECK(func(&f, "cfx_leaf", &off, &size));
	for (at = off; at < off + size; at++) {
		r = wc_cfi_find(&f.t, at);
		bad += !r || wc_cfi_kind(r) != WC_CFA_SP || r->cfa != 1 ||
		       wc_cfi_fp(r) != WC_FP_SAME;
	}
	CHECK(bad == 0);
	close_file(&f);
}

/* _start says the return address is undefined: the walk ends there. */
static void test_outermost(void)
{
	const struct wc_cfi_row *r;
	struct file f;
	uint64_t off, size;

	if (*fx_skip)
		SKIP(fx_skip);
	if (!build(&f, "cfx_nofp") || !func(&f, "_start", &off, &size)) {
		CHECK(!"fixture read");
		close_file(&f);
		return;
	}
	r = wc_cfi_find(&f.t, off + 4);
	CHECK(r && wc_cfi_kind(r) == WC_CFA_END);
	/* The ELF header is no code. */
	r = wc_cfi_find(&f.t, 0);
	CHECK(!r || wc_cfi_kind(r) == WC_CFA_NONE);
	r = &f.t.rows[f.t.n - 1];
	CHECK(wc_cfi_kind(r) == WC_CFA_NONE);
	close_file(&f);
}

/* libc's __restore_rt is a signal frame ("zRS"); its table is the size
 * of a real library's. */
static void test_libc(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct file f;

	if (!build_with(&f, LIBC, &lim)) {
		CHECK(!"libc read");
		return;
	}
	CHECK(f.err == 0);
	CHECK(sorted(&f.t));
	printf("  libc: %zu rows, %zu FDEs, %zu skipped, %zu unsupported\n",
	       f.t.n, f.t.stats.fdes, f.t.stats.fdes_skipped,
	       f.t.stats.unsupported);
	CHECK(f.t.n > 10000);
	CHECK(count_kind(&f.t, WC_CFA_SIGNAL) >= 1);
	CHECK(count_kind(&f.t, WC_CFA_SP) > f.t.n / 2);
	/* A handful of hand-written functions use expressions. */
	CHECK(f.t.stats.unsupported < f.t.n / 1000);
	close_file(&f);
}

static void expect_error(const char *path, const struct wc_cfi_limits *lim,
			 int want)
{
	struct file f;

	if (!build_with(&f, path, lim)) {
		CHECK(!"file read");
		return;
	}
	if (f.err != want)
		printf("  %s: errno %d (%s), want %d (%s)\n", path, f.err,
		       strerror(f.err), want, strerror(want));
	CHECK(f.err == want);
	CHECK(f.t.n == 0 && f.t.rows == NULL);
	close_file(&f);
}

static void test_limits(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	char path[PATH_MAX];

	lim.rows_max = 100;
	expect_error(LIBC, &lim, E2BIG);
	lim = (struct wc_cfi_limits)WC_CFI_LIMITS_DEFAULT;
	lim.section_max = 4096;
	expect_error(LIBC, &lim, EFBIG);
	lim = (struct wc_cfi_limits)WC_CFI_LIMITS_DEFAULT;
	lim.cpu_ns = 0;
	expect_error(LIBC, &lim, ETIME);
	if (*fx_skip)
		SKIP(fx_skip);
	lim = (struct wc_cfi_limits)WC_CFI_LIMITS_DEFAULT;
	fmt(path, sizeof(path), "%s/cfx_none", fxdir);
	expect_error(path, &lim, ENOENT);
}

/* One FDE may not make more rows than fde_rows_max: the rest of its
 * range has no rule, and the table goes on. */
static void test_fde_rows_max(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	const struct wc_cfi_row *r;
	struct file f;
	char path[PATH_MAX];
	uint64_t off, size;

	if (*fx_skip)
		SKIP(fx_skip);
	lim.fde_rows_max = 1;
	fmt(path, sizeof(path), "%s/cfx_fp", fxdir);
	if (!build_with(&f, path, &lim) ||
	    !func(&f, "cfx_framed", &off, &size)) {
		CHECK(!"fixture read");
		close_file(&f);
		return;
	}
	CHECK(f.err == 0);
	r = wc_cfi_find(&f.t, off);
	CHECK(r && wc_cfi_kind(r) == WC_CFA_SP && r->cfa == 1);
	r = wc_cfi_find(&f.t, off + 1);
	CHECK(r && wc_cfi_kind(r) == WC_CFA_NONE);
	close_file(&f);
}

/* Code built without unwind tables: no rule in the file, its debug
 * file's .debug_frame (compressed) gives them, read directly and as the
 * helper's fetch finds it by build-id. */
static void test_debug_frame(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct wc_fetch_ctx ctx = {.proc_root = "/proc"};
	struct wc_fetch_maps maps = {0};
	struct wc_cfi_table fetched = {0};
	struct cfi_running p = {.pid = -1};
	const struct wc_cfi_row *r;
	struct wc_proc_map m;
	struct file f, dbg;
	char path[PATH_MAX], root[PATH_MAX];
	uint64_t off, size, at, most = 0;
	unsigned bad = 0;

	if (*fx_skip)
		SKIP(fx_skip);
	if (!build(&f, "cfx_df") || !build(&dbg, "cfx_df.debug") ||
	    !func_in(&f, &dbg.e, "cfx_framed", &off, &size)) {
		CHECK(!"fixtures read");
		goto out;
	}
	r = wc_cfi_find(&f.t, off + 8);
	CHECK(f.err == 0 && (!r || wc_cfi_kind(r) == WC_CFA_NONE));
	wc_cfi_free(&f.t);
	CHECK(wc_cfi_build_with(&f.e, &f.info, &dbg.e, &lim, &f.t) == 0);
	for (at = off; at < off + size; at++) {
		r = wc_cfi_find(&f.t, at);
		bad += !r || wc_cfi_kind(r) != WC_CFA_SP;
		if (r && r->cfa > most)
			most = r->cfa;
	}
	CHECK(bad == 0 && most * 8 >= 8192 + 8);
	CHECK(count_kind(&f.t, WC_CFA_END) >= 1); /* _start, from .eh_frame */

	fmt(path, sizeof(path), "%s/cfx_df", fxdir);
	fmt(root, sizeof(root), "%s/debugroot", fxdir);
	ctx.debug_root = root;
	if (!cfi_start(&p, path) ||
	    !cfi_exec_map(p.pid, "/cfx_df", &maps, &m)) {
		CHECK(!"fixture started");
		goto out;
	}
	CHECK(wc_fetch_cfi(&ctx, p.pid, &m, &lim, &fetched) == 0);
	CHECK(fetched.n == f.t.n &&
	      memcmp(fetched.rows, f.t.rows, f.t.n * sizeof(*f.t.rows)) == 0);
out:
	wc_cfi_free(&fetched);
	wc_fetch_maps_free(&maps);
	cfi_stop(&p);
	close_file(&dbg);
	close_file(&f);
}

/* A debug file found only by .gnu_debuglink (DIR/.debug/NAME) gives its
 * .debug_frame to the table as one found by build-id does. */
static void test_debuglink_frame(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct wc_fetch_ctx ctx = {.proc_root = "/proc"};
	struct wc_fetch_maps maps = {0};
	struct wc_cfi_table fetched = {0}, direct = {0};
	struct cfi_running p = {.pid = -1};
	struct wc_proc_map m;
	struct file f, dbg;
	char path[PATH_MAX];

	if (*fx_skip)
		SKIP(fx_skip);
	if (!build(&f, "cfx_dl") || !build(&dbg, ".debug/cfx_dl.debug")) {
		CHECK(!"fixtures read");
		goto out;
	}
	CHECK(f.info.debuglink[0] && !f.info.build_id_len);
	CHECK(wc_cfi_build_with(&f.e, &f.info, &dbg.e, &lim, &direct) == 0);
	CHECK(direct.n > f.t.n); /* .debug_frame's rows, beside _start's */
	fmt(path, sizeof(path), "%s/cfx_dl", fxdir);
	if (!cfi_start(&p, path) ||
	    !cfi_exec_map(p.pid, "/cfx_dl", &maps, &m)) {
		CHECK(!"fixture started");
		goto out;
	}
	CHECK(wc_fetch_cfi(&ctx, p.pid, &m, &lim, &fetched) == 0);
	CHECK(fetched.n == direct.n &&
	      memcmp(fetched.rows, direct.rows,
		     direct.n * sizeof(*direct.rows)) == 0);
out:
	wc_cfi_free(&fetched);
	wc_cfi_free(&direct);
	wc_fetch_maps_free(&maps);
	cfi_stop(&p);
	close_file(&dbg);
	close_file(&f);
}

static char *read_all(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) || !(buf = malloc((size_t)st.st_size))) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	*len = (size_t)st.st_size;
	if (read(fd, buf, *len) != (ssize_t)*len) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	return buf;
}

/* The executable segment's offset (or size) near 2^64: offsets that
 * wrap must not give rows out of order. */
static void wrap_code_segment(char *img, size_t len, bool size)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	size_t i, at;

	memcpy(&eh, img, sizeof(eh));
	for (i = 0; i < eh.e_phnum; i++) {
		at = eh.e_phoff + i * sizeof(ph);
		if (at + sizeof(ph) > len)
			return;
		memcpy(&ph, img + at, sizeof(ph));
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (size)
			ph.p_filesz = UINT64_MAX - 0x10;
		else
			ph.p_offset = UINT64_MAX - 0xf0;
		memcpy(img + at, &ph, sizeof(ph));
		return;
	}
}

/* Where .eh_frame is in an image. */
static bool eh_frame_span(char *img, size_t len, size_t *off, size_t *size)
{
	Elf *elf = elf_memory(img, len);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	const char *name;
	bool found = false;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
		goto out;
	while (!found && (scn = elf_nextscn(elf, scn)) != NULL) {
		name = gelf_getshdr(scn, &sh)
			       ? elf_strptr(elf, shstrndx, sh.sh_name)
			       : NULL;
		if (name && strcmp(name, ".eh_frame") == 0 && sh.sh_size &&
		    sh.sh_offset + sh.sh_size <= len) {
			*off = sh.sh_offset;
			*size = sh.sh_size;
			found = true;
		}
	}
out:
	if (elf)
		elf_end(elf);
	return found;
}

/* Bytes of .eh_frame flipped at random: every build ends, sorted and
 * bounded, or fails with an errno. */
static void test_corrupt(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	char path[PATH_MAX], *orig, *img;
	size_t len, i, built = 0, eh_off, eh_size;
	unsigned seed = 1, round;

	if (*fx_skip)
		SKIP(fx_skip);
	fmt(path, sizeof(path), "%s/cfx_fp", fxdir);
	orig = read_all(path, &len);
	img = orig ? malloc(len) : NULL;
	if (!img || !eh_frame_span(orig, len, &eh_off, &eh_size)) {
		CHECK(!"fixture read");
		free(orig);
		return;
	}
	lim.rows_max = 4096;
	for (round = 0; round < 300; round++) {
		struct wc_elf e;
		struct wc_elf_info info;
		struct wc_cfi_table t;

		memcpy(img, orig, len);
		for (i = 0; i < 1 + round % 8; i++)
			img[eh_off + (size_t)rand_r(&seed) % eh_size] ^=
				(char)(1 + rand_r(&seed) % 255);
		if (round % 10 == 0)
			wrap_code_segment(img, len, round % 20 == 0);
		if (wc_elf_open_mem(&e, img, len) ||
		    wc_elf_read_info(&e, &info)) {
			wc_elf_close(&e);
			continue;
		}
		if (wc_cfi_build(&e, &info, &lim, &t) == 0) {
			built++;
			CHECK(t.n > 0 && t.n <= lim.rows_max);
			CHECK(sorted(&t));
		} else {
			CHECK(t.n == 0 && errno != 0);
		}
		wc_cfi_free(&t);
		wc_elf_close(&e);
	}
	printf("  %zu of 300 corrupted copies built\n", built);
	free(img);
	free(orig);
}

static const char *helper_path(void)
{
	const char *h = wc_sym_src_default_helper();

	if (access(h, X_OK) == 0)
		return h;
	return access("./wallclock-symd", X_OK) == 0 ? "./wallclock-symd"
						     : NULL;
}

static bool same_table(const struct wc_cfi_table *a,
		       const struct wc_cfi_table *b)
{
	return a->n == b->n && a->n &&
	       memcmp(a->rows, b->rows, a->n * sizeof(*a->rows)) == 0;
}

/* A running process's mapped file, in this process and through the
 * helper: the same rows as the file read directly; a mapping that is
 * not the file's any more is refused, a gone process says so, and a file
 * without CFI says that across the helper too. */
static void test_fetch(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct wc_sym_src_opts o = {.deadline_ms = 10000, .share = 1};
	struct wc_sym_src *srcs[2] = {NULL, NULL};
	struct wc_fetch_maps maps = {0};
	struct wc_cfi_table got;
	struct wc_proc_map m, stale;
	struct cfi_running p = {.pid = -1}, none = {.pid = -1};
	char path[PATH_MAX], path_none[PATH_MAX];
	struct file f;
	int i;

	if (*fx_skip)
		SKIP(fx_skip);
	o.helper = helper_path();
	if (!o.helper)
		SKIP("no wallclock-symd (set WALLCLOCK_SYMD)");
	fmt(path, sizeof(path), "%s/cfx_nofp", fxdir);
	fmt(path_none, sizeof(path_none), "%s/cfx_none", fxdir);
	if (!build(&f, "cfx_nofp") || !cfi_start(&p, path) ||
	    !cfi_start(&none, path_none) ||
	    !cfi_exec_map(p.pid, "/cfx_nofp", &maps, &m)) {
		CHECK(!"fixtures started");
		goto out;
	}
	srcs[0] = wc_sym_src_new(&(struct wc_sym_src_opts){.helper = NULL});
	srcs[1] = wc_sym_src_new(&o);
	for (i = 0; i < 2; i++) {
		const char *how = i ? "helper" : "in-process";

		CHECK(srcs[i] != NULL);
		if (!srcs[i])
			continue;
		if (wc_sym_src_cfi(srcs[i], p.pid, &m, &lim, &got) != 0)
			printf("  %s: %s\n", how, strerror(errno));
		CHECK(same_table(&got, &f.t));
		wc_cfi_free(&got);
		stale = m;
		stale.ino++;
		CHECK(wc_sym_src_cfi(srcs[i], p.pid, &stale, &lim, &got) ==
			      -1 &&
		      errno == ESTALE);
		/* its inode number on another filesystem, which any user
		 * can make on a tmpfs: not the file either */
		stale = m;
		stale.dev_minor ^= 1;
		CHECK(wc_sym_src_cfi(srcs[i], p.pid, &stale, &lim, &got) ==
			      -1 &&
		      errno == ESTALE);
		CHECK(wc_sym_src_cfi(srcs[i], 0x3fffffff, &m, &lim, &got) ==
			      -1 &&
		      errno == ESRCH);
		lim.rows_max = 4;
		CHECK(wc_sym_src_cfi(srcs[i], p.pid, &m, &lim, &got) == -1 &&
		      errno == E2BIG);
		lim = (struct wc_cfi_limits)WC_CFI_LIMITS_DEFAULT;
		CHECK(got.n == 0 && !got.rows);
	}
	wc_fetch_maps_free(&maps);
	if (!cfi_exec_map(none.pid, "/cfx_none", &maps, &m)) {
		CHECK(!"fixture without CFI mapped");
		goto out;
	}
	for (i = 0; i < 2; i++)
		CHECK(srcs[i] &&
		      wc_sym_src_cfi(srcs[i], none.pid, &m, &lim, &got) == -1 &&
		      errno == ENOENT);
out:
	wc_fetch_maps_free(&maps);
	for (i = 0; i < 2; i++)
		if (srcs[i])
			wc_sym_src_free(srcs[i]);
	cfi_stop(&p);
	cfi_stop(&none);
	close_file(&f);
}

/* In a mount namespace of its own: a fixture run from an overlayfs (as
 * in a container) whose lower layer is a tmpfs.  Since 6.8 its maps
 * line shows the overlay's device, while a walk keys its table by the
 * inode's own (the layer's); its table is still fetched under that key,
 * and not under another inode number.  0 if all held. */
static int overlay_child(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct wc_fetch_ctx ctx = {.proc_root = "/proc"};
	struct wc_fetch_maps maps = {0};
	struct cfi_running p = {.pid = -1};
	struct wc_cfi_table got = {0};
	char dir[PATH_MAX], cmd[3 * PATH_MAX], opts[4 * PATH_MAX];
	struct wc_proc_map m, key;
	struct stat st;

	fmt(dir, sizeof(dir), "%s/ovl", fxdir);
	fmt(cmd, sizeof(cmd), "mkdir -p '%s' && cd '%s' && mkdir l u w m", dir,
	    dir);
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    system(cmd) != 0)
		return 2;
	fmt(cmd, sizeof(cmd), "%s/l", dir);
	if (mount("tmpfs", cmd, "tmpfs", 0, "size=16m"))
		return 2;
	fmt(cmd, sizeof(cmd), "cp '%s/cfx_nofp' '%s/l/'", fxdir, dir);
	fmt(opts, sizeof(opts), "lowerdir=%s/l,upperdir=%s/u,workdir=%s/w", dir,
	    dir, dir);
	if (system(cmd) != 0)
		return 2;
	fmt(cmd, sizeof(cmd), "%s/m", dir);
	if (mount("overlay", cmd, "overlay", 0, opts))
		return 3; /* no overlayfs here */
	fmt(cmd, sizeof(cmd), "%s/m/cfx_nofp", dir);
	if (!cfi_start(&p, cmd) ||
	    !cfi_exec_map(p.pid, "/m/cfx_nofp", &maps, &m)) {
		CHECK(!"fixture started from the overlay");
		goto out;
	}
	fmt(cmd, sizeof(cmd), "%s/l/cfx_nofp", dir);
	CHECK(stat(cmd, &st) == 0);
	key = m;
	key.dev_major = major(st.st_dev);
	key.dev_minor = minor(st.st_dev);
	printf("# overlay: maps show %u:%u, the walk's key %u:%u, inode %llu\n",
	       m.dev_major, m.dev_minor, key.dev_major, key.dev_minor,
	       (unsigned long long)m.ino);
	CHECK(wc_fetch_cfi(&ctx, p.pid, &key, &lim, &got) == 0 && got.n > 0);
	wc_cfi_free(&got);
	key.ino++;
	CHECK(wc_fetch_cfi(&ctx, p.pid, &key, &lim, &got) == -1 &&
	      errno == ESTALE);
out:
	wc_fetch_maps_free(&maps);
	cfi_stop(&p);
	return check_cur_failed;
}

static void test_overlay(void)
{
	pid_t pid;
	int status = 0;

	if (*fx_skip)
		SKIP(fx_skip);
	if (geteuid() != 0)
		SKIP("needs root (a mount namespace, overlayfs)");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int rc = overlay_child();

		fflush(stdout);
		_exit(rc);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	if (WEXITSTATUS(status) == 3)
		SKIP("overlayfs cannot be mounted here");
	CHECK(WEXITSTATUS(status) == 0);
}

static int dump(const char *path)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct file f;
	size_t i;

	if (!build_with(&f, path, &lim))
		return 1;
	if (f.err) {
		fprintf(stderr, "%s: %s\n", path, strerror(f.err));
		close_file(&f);
		return 1;
	}
	for (i = 0; i < f.t.n; i++) {
		const struct wc_cfi_row *r = &f.t.rows[i];

		printf("%x %d %u %d %d\n", r->off, wc_cfi_kind(r), r->cfa,
		       wc_cfi_fp(r), r->fp_slot);
	}
	close_file(&f);
	return 0;
}

int main(int argc, char **argv)
{
	elf_version(EV_CURRENT);
	if (argc == 3 && strcmp(argv[1], "--dump") == 0)
		return dump(argv[2]);
	check_prog = "test_cfi";
	cfi_fixtures(fxdir, sizeof(fxdir), fx_skip, sizeof(fx_skip));
	RUN(test_frame_pointer_rules);
	RUN(test_no_frame_pointer_rules);
	RUN(test_outermost);
	RUN(test_libc);
	RUN(test_limits);
	RUN(test_fde_rows_max);
	RUN(test_corrupt);
	RUN(test_fetch);
	RUN(test_overlay);
	RUN(test_debug_frame);
	RUN(test_debuglink_frame);
	if (!*fx_skip)
		cfi_fixtures_remove(fxdir);
	return check_done();
}
