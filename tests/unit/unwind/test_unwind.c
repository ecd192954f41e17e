/*
 * test_unwind.c - the store of unwind tables against a fake kernel (an
 * array of rows, a files table and a list of wants, as the BPF maps hold
 * them), fed by real processes: the fixtures of build_cfi.sh, running.
 * Tables are built in this process (the helper's side is test_cfi's).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "../sym/fixtures/cfi_run.h"
#include "unwind/wc_unwind.h"

#define SEC 1000000000ull
#define FILES_MAX 64
#define WANTS_MAX 64

static char fxdir[PATH_MAX];
static char fx_skip[512];

struct fake_file {
	struct wc_uw_key key;
	struct wc_uw_file f;
	bool used;
};

struct fake {
	struct wc_uw_row *rows;
	struct fake_file files[FILES_MAX];
	struct wc_uw_key want_keys[WANTS_MAX];
	struct wc_uw_want wants[WANTS_MAX];
	size_t nwants;
	bool del_fails; /* the kernel's delete fails */
};

static bool same_key(const struct wc_uw_key *a, const struct wc_uw_key *b)
{
	return a->dev == b->dev && a->gen == b->gen && a->ino == b->ino;
}

static struct fake_file *fake_find(struct fake *k, const struct wc_uw_key *key)
{
	size_t i;

	for (i = 0; i < FILES_MAX; i++)
		if (k->files[i].used && same_key(&k->files[i].key, key))
			return &k->files[i];
	return NULL;
}

static size_t fake_wants(void *ctx, struct wc_uw_key *keys,
			 struct wc_uw_want *wants, size_t max)
{
	struct fake *k = ctx;
	size_t n = k->nwants < max ? k->nwants : max;

	memcpy(keys, k->want_keys, n * sizeof(*keys));
	memcpy(wants, k->wants, n * sizeof(*wants));
	return n;
}

static void fake_unwant(void *ctx, const struct wc_uw_key *key)
{
	struct fake *k = ctx;
	size_t i;

	for (i = 0; i < k->nwants; i++) {
		if (!same_key(&k->want_keys[i], key))
			continue;
		k->nwants--;
		k->want_keys[i] = k->want_keys[k->nwants];
		k->wants[i] = k->wants[k->nwants];
		return;
	}
}

static int fake_put(void *ctx, const struct wc_uw_key *key,
		    const struct wc_uw_file *f)
{
	struct fake *k = ctx;
	struct fake_file *x = fake_find(k, key);
	size_t i;

	for (i = 0; !x && i < FILES_MAX; i++)
		if (!k->files[i].used)
			x = &k->files[i];
	if (!x)
		return -1;
	*x = (struct fake_file){.key = *key, .f = *f, .used = true};
	return 0;
}

static int fake_get(void *ctx, const struct wc_uw_key *key,
		    struct wc_uw_file *f)
{
	struct fake_file *x = fake_find(ctx, key);

	if (!x)
		return -1;
	*f = x->f;
	return 0;
}

static int fake_del(void *ctx, const struct wc_uw_key *key)
{
	struct fake *k = ctx;
	struct fake_file *x = fake_find(k, key);

	if (k->del_fails)
		return -1;
	if (x)
		x->used = false;
	return 0;
}

/* A walk of pid met m's file: it asks (the latest asker wins). */
static void want(struct fake *k, pid_t pid, const struct wc_proc_map *m,
		 struct wc_uw_key *key)
{
	*key = (struct wc_uw_key){.dev = m->dev_major << 20 | m->dev_minor,
				  .ino = m->ino};
	fake_unwant(k, key);
	k->want_keys[k->nwants] = *key;
	k->wants[k->nwants] = (struct wc_uw_want){
		.pid = (uint32_t)pid, .start = m->start, .end = m->end};
	k->nwants++;
}

struct rig {
	struct fake k;
	struct wc_uw_kernel kern;
	struct wc_sym_src *src;
	struct wc_unwind *u;
	struct wc_unwind_stats st;
};

/* helper: wallclock-symd's path; NULL: the reads in this process */
static bool rig_init_with(struct rig *r, uint32_t nrows, uint32_t nfiles,
			  const struct wc_cfi_limits *lim, const char *helper)
{
	memset(r, 0, sizeof(*r));
	r->k.rows = calloc(nrows, sizeof(*r->k.rows));
	r->kern = (struct wc_uw_kernel){
		.rows = r->k.rows,
		.nrows = nrows,
		.nfiles = nfiles,
		.ctx = &r->k,
		.wants = fake_wants,
		.unwant = fake_unwant,
		.put = fake_put,
		.get = fake_get,
		.del = fake_del,
	};
	r->src = wc_sym_src_new(&(struct wc_sym_src_opts){.helper = helper});
	r->u = r->src && r->k.rows ? wc_unwind_new(&r->kern, r->src, lim)
				   : NULL;
	return r->u != NULL;
}

static bool rig_init(struct rig *r, uint32_t nrows, uint32_t nfiles,
		     const struct wc_cfi_limits *lim)
{
	return rig_init_with(r, nrows, nfiles, lim, NULL);
}

static void rig_free(struct rig *r)
{
	wc_unwind_free(r->u);
	if (r->src)
		wc_sym_src_free(r->src);
	free(r->k.rows);
}

static void serve(struct rig *r, uint64_t now_ns)
{
	wc_unwind_serve(r->u, now_ns, SEC);
	wc_unwind_stats(r->u, &r->st);
}

/* A running copy of fixture name: its mapping in *m (path in *maps). */
struct proc {
	struct cfi_running run;
	struct wc_fetch_maps maps;
	struct wc_proc_map m;
	char path[PATH_MAX];
};

static bool proc_start(struct proc *p, const char *name, const char *copy)
{
	char cmd[3 * PATH_MAX];

	memset(p, 0, sizeof(*p));
	p->run.pid = -1;
	snprintf(p->path, sizeof(p->path), "%.3000s/%s", fxdir,
		 copy ? copy : name);
	if (copy) {
		snprintf(cmd, sizeof(cmd), "cp '%s/%s' '%s'", fxdir, name,
			 p->path);
		if (system(cmd) != 0)
			return false;
	}
	return cfi_start(&p->run, p->path) &&
	       cfi_exec_map(p->run.pid, strrchr(p->path, '/'), &p->maps, &p->m);
}

static void proc_stop(struct proc *p)
{
	cfi_stop(&p->run);
	wc_fetch_maps_free(&p->maps);
}

/* The rows the file has, built directly. */
static bool direct(const char *path, struct wc_cfi_table *t)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct wc_elf_info info;
	struct wc_elf e;
	int rc;

	if (wc_elf_open_fd(&e, open(path, O_RDONLY | O_CLOEXEC)))
		return false;
	rc = wc_elf_read_info(&e, &info) || wc_cfi_build(&e, &info, &lim, t);
	wc_elf_close(&e);
	return rc == 0;
}

static const struct fake_file *entry(struct rig *r, const struct wc_uw_key *key)
{
	return fake_find(&r->k, key);
}

/* The places t takes in the rows array: its rows and their index. */
static uint32_t slots(const struct wc_cfi_table *t)
{
	struct wc_uw_file f = {.state = WC_UW_ROWS, .n = (uint32_t)t->n};

	wc_uw_index_shape(t, &f);
	return wc_uw_slots(&f);
}

/* Whether x's index, after its rows, names for each bucket the last row
 * at or before the bucket's start, with no more buckets than a quarter
 * of the rows (one at least). */
static bool index_right(const struct rig *r, const struct fake_file *x)
{
	const struct wc_uw_file *f = &x->f;
	const struct wc_uw_row *rows = &r->k.rows[f->first];
	const char *at = (const char *)&rows[f->n];
	uint32_t b, row, most = f->n / 4 ? f->n / 4 : 1;

	if (f->buckets == 0 || f->buckets > most ||
	    f->bshift < WC_UW_BSHIFT_MIN || f->bshift > 32 ||
	    f->bbase != (uint64_t)rows[0].off >> f->bshift ||
	    f->bbase + f->buckets - 1 !=
		    (uint64_t)rows[f->n - 1].off >> f->bshift)
		return false;
	for (b = 0; b < f->buckets; b++) {
		uint64_t start = (uint64_t)(f->bbase + b) << f->bshift;

		memcpy(&row, at + 4 * (size_t)b, sizeof(row));
		if (row >= f->n || (row > 0 && rows[row].off > start) ||
		    (row + 1 < f->n && rows[row + 1].off <= start))
			return false;
	}
	return true;
}

/* A file a walk asked for gets its rows and an entry that says where;
 * one without CFI is marked so for good; a process gone or a mapping no
 * longer its file leave nothing. */
static void test_serve(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct wc_cfi_table t = {0};
	const struct fake_file *x;
	struct proc a, none, gone = {.run.pid = -1};
	struct wc_uw_key ka, kn, kg;
	struct wc_proc_map stale;
	struct rig r;
	pid_t gpid;

	if (*fx_skip)
		SKIP(fx_skip);
	if (!rig_init(&r, 4096, 32, &lim) ||
	    !proc_start(&a, "cfx_nofp", NULL) ||
	    !proc_start(&none, "cfx_none", NULL) || !direct(a.path, &t)) {
		CHECK(!"rig and fixtures");
		goto out;
	}
	want(&r.k, a.run.pid, &a.m, &ka);
	want(&r.k, none.run.pid, &none.m, &kn);
	serve(&r, 10 * SEC);
	x = entry(&r, &ka);
	CHECK(x && x->f.state == WC_UW_ROWS && x->f.n == t.n);
	CHECK(x && x->f.first + wc_uw_slots(&x->f) <= 4096 &&
	      memcmp(&r.k.rows[x->f.first], t.rows, t.n * sizeof(*t.rows)) ==
		      0);
	CHECK(x && index_right(&r, x));
	x = entry(&r, &kn);
	CHECK(x && x->f.state == WC_UW_NONE && x->f.why == WC_UW_NO_CFI);
	CHECK(r.k.nwants == 0);
	CHECK(r.st.built == 1 && r.st.tables == 1 && r.st.entries == 2 &&
	      r.st.without[WC_UW_NO_CFI] == 1 && r.st.rows_used == slots(&t));
	/* No CFI stays so. */
	serve(&r, 10 * SEC + 2 * WC_UW_RETRY_NS);
	CHECK(entry(&r, &kn) != NULL);

	/* Gone, and stale: nothing kept, nothing asked again. */
	stale = a.m;
	stale.ino = ~a.m.ino; /* no file's (the fixtures' inodes are near) */
	want(&r.k, a.run.pid, &stale, &kg);
	serve(&r, 11 * SEC);
	x = entry(&r, &kg);
	CHECK(x && x->f.state == WC_UW_NONE && x->f.why == WC_UW_GONE &&
	      r.k.nwants == 0);
	serve(&r, 11 * SEC + WC_UW_MOVED_NS - 1);
	CHECK(entry(&r, &kg) != NULL);
	serve(&r, 11 * SEC + WC_UW_MOVED_NS);
	CHECK(!entry(&r, &kg));
	if (!proc_start(&gone, "cfx_none", "gone")) {
		CHECK(!"fixture copy");
		goto out;
	}
	gpid = gone.run.pid;
	cfi_stop(&gone.run);
	want(&r.k, gpid, &gone.m, &kg);
	serve(&r, 12 * SEC + WC_UW_SOON_NS);
	x = entry(&r, &kg);
	CHECK(x && x->f.why == WC_UW_GONE && r.k.nwants == 0 &&
	      r.st.entries == 3 && r.st.without[WC_UW_GONE] == 2);
out:
	proc_stop(&a);
	proc_stop(&none);
	proc_stop(&gone);
	wc_cfi_free(&t);
	rig_free(&r);
}

/* An entry the kernel lost is put again, without a new build. */
static void test_entry_lost(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	const struct fake_file *x;
	struct wc_uw_key ka;
	struct proc a;
	struct rig r;

	if (*fx_skip)
		SKIP(fx_skip);
	if (!rig_init(&r, 4096, 32, &lim) || !proc_start(&a, "cfx_fp", NULL)) {
		CHECK(!"rig and fixtures");
		goto out;
	}
	want(&r.k, a.run.pid, &a.m, &ka);
	serve(&r, SEC);
	fake_del(&r.k, &ka);
	want(&r.k, a.run.pid, &a.m, &ka);
	serve(&r, 2 * SEC);
	x = entry(&r, &ka);
	CHECK(x && x->f.state == WC_UW_ROWS);
	CHECK(r.st.built == 1 && r.st.lost == 1 &&
	      r.st.rows_used == wc_uw_slots(&x->f));
out:
	proc_stop(&a);
	rig_free(&r);
}

/* No room: a cold file is evicted, its rows rest, and the file that
 * needed them gets them once they have rested, not before. */
static void test_room(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct wc_cfi_table ta = {0}, tb = {0};
	const struct fake_file *x;
	struct wc_uw_key ka, kb;
	struct proc a, b;
	uint32_t nrows;
	struct rig r;

	if (*fx_skip)
		SKIP(fx_skip);
	if (!proc_start(&a, "cfx_nofp", NULL) ||
	    !proc_start(&b, "cfx_fp", NULL) || !direct(a.path, &ta) ||
	    !direct(b.path, &tb)) {
		CHECK(!"fixtures");
		memset(&r, 0, sizeof(r));
		goto out;
	}
	/* Room for either (under 7/8 of the array), not both. */
	nrows = slots(&ta) > slots(&tb) ? slots(&ta) : slots(&tb);
	nrows = (nrows * 8 + 6) / 7 + 1;
	CHECK(nrows < slots(&ta) + slots(&tb));
	if (!rig_init(&r, nrows, 32, &lim)) {
		CHECK(!"rig");
		goto out;
	}
	want(&r.k, a.run.pid, &a.m, &ka);
	serve(&r, 10 * SEC);
	CHECK(entry(&r, &ka) && r.st.built == 1);
	/* a is still hot: b waits without evicting it. */
	want(&r.k, b.run.pid, &b.m, &kb);
	serve(&r, 10 * SEC + 1);
	x = entry(&r, &kb);
	CHECK(x && x->f.state == WC_UW_NONE && x->f.why == WC_UW_NO_ROOM);
	CHECK(entry(&r, &ka) != NULL && r.st.evicted == 0);
	/* No room could be made: b is not built again until a may have
	 * cooled. */
	serve(&r, 10 * SEC + 2 * WC_UW_REST_NS + 1);
	CHECK(entry(&r, &kb) && r.st.without[WC_UW_NO_ROOM] == 1);
	/* Later, a cold: evicted for b, whose retry waits for the rest. */
	serve(&r, 10 * SEC + WC_UW_RETRY_NS + 1);
	CHECK(!entry(&r, &kb));
	want(&r.k, b.run.pid, &b.m, &kb);
	serve(&r, 10 * SEC + WC_UW_RETRY_NS + 2);
	CHECK(!entry(&r, &ka) && r.st.evicted == 1);
	x = entry(&r, &kb);
	CHECK(x && x->f.state == WC_UW_NONE && r.st.rows_resting == slots(&ta));
	/* Rested: b is placed where a was. */
	serve(&r, 10 * SEC + WC_UW_RETRY_NS + 2 + 2 * WC_UW_REST_NS);
	want(&r.k, b.run.pid, &b.m, &kb);
	serve(&r, 10 * SEC + WC_UW_RETRY_NS + 3 + 2 * WC_UW_REST_NS);
	x = entry(&r, &kb);
	CHECK(x && x->f.state == WC_UW_ROWS && x->f.first == 0 &&
	      x->f.n == tb.n);
	CHECK(r.st.rows_resting == 0 && r.st.rows_used == slots(&tb) &&
	      r.st.tables == 1);
out:
	proc_stop(&a);
	proc_stop(&b);
	wc_cfi_free(&ta);
	wc_cfi_free(&tb);
	rig_free(&r);
}

/* Room in pieces is no room: with rows enough free in all but none long
 * enough, a cold file gives its rows, and the table that needed them
 * gets a run of them once they rested. */
static void test_room_in_pieces(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct wc_cfi_table ts = {0}, tb = {0};
	struct proc s1, b1, s2, none, b2;
	struct wc_uw_key k1, kb1, k2, kn, kb2;
	struct fake_file *hot;
	const struct fake_file *x;
	struct rig r;
	pid_t gpid;
	bool ok;

	if (*fx_skip)
		SKIP(fx_skip);
	memset(&r, 0, sizeof(r));
	ok = proc_start(&s1, "cfx_df", "s1") &&
	     proc_start(&b1, "cfx_nofp", "b1") &&
	     proc_start(&s2, "cfx_df", "s2") &&
	     proc_start(&none, "cfx_none", NULL) &&
	     proc_start(&b2, "cfx_nofp", "b2") && direct(s1.path, &ts) &&
	     direct(b1.path, &tb);
	/* Small tables, a big one, and a tail too short for another big
	 * one; three entries at most. */
	if (!ok || ts.n >= tb.n ||
	    !rig_init(&r, 3 * slots(&ts) + slots(&tb) + slots(&tb) / 2 + 1, 4,
		      &lim)) {
		CHECK(!"fixtures and rig");
		goto out;
	}
	want(&r.k, s1.run.pid, &s1.m, &k1);
	serve(&r, 10 * SEC);
	want(&r.k, b1.run.pid, &b1.m, &kb1);
	serve(&r, 10 * SEC + 1);
	want(&r.k, s2.run.pid, &s2.m, &k2);
	serve(&r, 10 * SEC + 2);
	/* A fourth entry (a process gone, for 5 s) pushes out the first:
	 * a hole of its size. */
	gpid = none.run.pid;
	cfi_stop(&none.run);
	want(&r.k, gpid, &none.m, &kn);
	serve(&r, 10 * SEC + 3);
	CHECK(!entry(&r, &k1) && r.st.evicted == 1);
	serve(&r, 10 * SEC + 3 + WC_UW_SOON_NS);
	CHECK(!entry(&r, &kn) && r.st.entries == 2 && r.st.rows_resting == 0);
	hot = fake_find(&r.k, &kb1);
	if (hot)
		hot->f.used_ns = 100 * SEC;
	want(&r.k, b2.run.pid, &b2.m, &kb2);
	serve(&r, 16 * SEC);
	x = entry(&r, &kb2);
	CHECK(x && x->f.state == WC_UW_NONE && x->f.why == WC_UW_NO_ROOM);
	CHECK(!entry(&r, &k2) && entry(&r, &kb1) && r.st.evicted == 2);
	serve(&r, 16 * SEC + 2 * WC_UW_REST_NS);
	want(&r.k, b2.run.pid, &b2.m, &kb2);
	serve(&r, 16 * SEC + 2 * WC_UW_REST_NS + 1);
	x = entry(&r, &kb2);
	CHECK(x && x->f.state == WC_UW_ROWS &&
	      x->f.first == slots(&ts) + slots(&tb) && x->f.n == tb.n);
out:
	proc_stop(&s1);
	proc_stop(&b1);
	proc_stop(&s2);
	proc_stop(&none);
	proc_stop(&b2);
	wc_cfi_free(&ts);
	wc_cfi_free(&tb);
	rig_free(&r);
}

/* Entries stay under 7/8 of the files hash, the coldest going first. */
static void test_entries_bounded(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct proc p[10];
	struct wc_uw_key k[10];
	char name[32];
	struct rig r;
	int i, started = 0;

	if (*fx_skip)
		SKIP(fx_skip);
	if (!rig_init(&r, 4096, 8, &lim)) {
		CHECK(!"rig");
		goto out;
	}
	for (i = 0; i < 10; i++, started++) {
		snprintf(name, sizeof(name), "none%d", i);
		if (!proc_start(&p[i], "cfx_none", name)) {
			CHECK(!"fixture copies");
			goto out;
		}
	}
	for (i = 0; i < 10; i++) {
		want(&r.k, p[i].run.pid, &p[i].m, &k[i]);
		serve(&r, (uint64_t)(i + 1) * WC_UW_HOT_NS);
	}
	CHECK(r.st.entries == 7 && r.st.evicted == 3);
	CHECK(!entry(&r, &k[0]) && !entry(&r, &k[2]) && entry(&r, &k[3]) &&
	      entry(&r, &k[9]));
out:
	for (i = 0; i < started; i++)
		proc_stop(&p[i]);
	rig_free(&r);
}

/* Many tables dropped at once (entries for two, twelve files in one
 * serve): every drop's rows rest, and the accounting holds. */
static void test_many_drops(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct wc_cfi_table t = {0};
	struct proc p[12];
	struct wc_uw_key k[12];
	char name[32];
	struct rig r;
	int i, started = 0;

	if (*fx_skip)
		SKIP(fx_skip);
	if (!rig_init(&r, 4096, 3, &lim)) {
		CHECK(!"rig");
		goto out;
	}
	for (i = 0; i < 12; i++, started++) {
		snprintf(name, sizeof(name), "many%d", i);
		if (!proc_start(&p[i], "cfx_nofp", name)) {
			CHECK(!"fixture copies");
			goto out;
		}
		want(&r.k, p[i].run.pid, &p[i].m, &k[i]);
	}
	if (!direct(p[0].path, &t)) {
		CHECK(!"direct build");
		goto out;
	}
	serve(&r, 10 * SEC);
	CHECK(r.st.built == 12 && r.st.entries == 2 && r.st.evicted == 10);
	CHECK(r.st.rows_used == 2 * slots(&t) &&
	      r.st.rows_resting == 10 * slots(&t) && r.st.tables == 2 &&
	      r.st.rows_leaked == 0);
	serve(&r, 10 * SEC + WC_UW_REST_NS);
	CHECK(r.st.rows_resting == 0 && r.st.rows_used == 2 * slots(&t));
out:
	for (i = 0; i < started; i++)
		proc_stop(&p[i]);
	wc_cfi_free(&t);
	rig_free(&r);
}

/* Too slow is tried again after WC_UW_RETRY_NS. */
/* A table no walk used for WC_UW_IDLE_NS goes, its rows back after
 * they rest; one walks use stays. */
static void test_idle(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct proc a, b;
	struct wc_uw_key ka, kb;
	struct fake_file *x;
	struct rig r;
	uint64_t t0 = 10 * SEC,
		 later = t0 + WC_UW_IDLE_NS + WC_UW_IDLE_EVERY_NS;

	if (*fx_skip)
		SKIP(fx_skip);
	if (!rig_init(&r, 4096, 32, &lim) ||
	    !proc_start(&a, "cfx_nofp", NULL) ||
	    !proc_start(&b, "cfx_fp", NULL)) {
		CHECK(!"rig and fixtures");
		goto out;
	}
	want(&r.k, a.run.pid, &a.m, &ka);
	want(&r.k, b.run.pid, &b.m, &kb);
	serve(&r, t0);
	CHECK(r.st.tables == 2);
	/* a walk uses b's table late on; nobody uses a's */
	x = fake_find(&r.k, &kb);
	if (x)
		x->f.used_ns = later - SEC;
	serve(&r, later);
	CHECK(!entry(&r, &ka) && entry(&r, &kb) != NULL);
	CHECK(r.st.idle == 1 && r.st.tables == 1 && r.st.rows_resting > 0);
	serve(&r, later + WC_UW_REST_NS);
	CHECK(r.st.rows_resting == 0);
out:
	proc_stop(&a);
	proc_stop(&b);
	rig_free(&r);
}

/* An entry the kernel would not delete keeps its rows out of use: they
 * are leaked, counted, never rested and given to another file. */
static void test_del_fails(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct proc a;
	struct wc_uw_key ka;
	struct rig r;
	uint64_t t0 = 10 * SEC,
		 later = t0 + WC_UW_IDLE_NS + WC_UW_IDLE_EVERY_NS;
	uint64_t used;

	if (*fx_skip)
		SKIP(fx_skip);
	if (!rig_init(&r, 4096, 32, &lim) ||
	    !proc_start(&a, "cfx_nofp", NULL)) {
		CHECK(!"rig and fixtures");
		goto out;
	}
	want(&r.k, a.run.pid, &a.m, &ka);
	serve(&r, t0);
	used = r.st.rows_used;
	CHECK(r.st.tables == 1 && used > 0);
	r.k.del_fails = true;
	serve(&r, later);
	CHECK(r.st.idle == 1 && r.st.tables == 0);
	CHECK(r.st.rows_resting == 0 && r.st.rows_used == 0 &&
	      r.st.rows_leaked == used);
out:
	proc_stop(&a);
	rig_free(&r);
}

static void test_retry(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct wc_uw_key ka;
	const struct fake_file *x;
	struct proc a;
	struct rig r;

	if (*fx_skip)
		SKIP(fx_skip);
	lim.cpu_ns = 0;
	if (!rig_init(&r, 4096, 32, &lim) || !proc_start(&a, "cfx_fp", NULL)) {
		CHECK(!"rig and fixtures");
		goto out;
	}
	want(&r.k, a.run.pid, &a.m, &ka);
	serve(&r, SEC);
	x = entry(&r, &ka);
	CHECK(x && x->f.state == WC_UW_NONE && x->f.why == WC_UW_SLOW);
	serve(&r, SEC + WC_UW_RETRY_NS - 1);
	CHECK(entry(&r, &ka) != NULL);
	serve(&r, SEC + WC_UW_RETRY_NS);
	CHECK(entry(&r, &ka) == NULL && r.st.entries == 0);
out:
	proc_stop(&a);
	rig_free(&r);
}

/* A helper that cannot start turns files away for a while (frame
 * pointers stand in), rather than leaving them on their way for ever. */
static void test_no_helper(void)
{
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	const struct fake_file *x;
	struct wc_sym_src_stats ss;
	char missing[PATH_MAX];
	struct wc_uw_key ka;
	struct proc a;
	struct rig r;

	if (*fx_skip)
		SKIP(fx_skip);
	snprintf(missing, sizeof(missing), "%.3000s/no-such-symd", fxdir);
	if (!rig_init_with(&r, 4096, 32, &lim, missing) ||
	    !proc_start(&a, "cfx_fp", NULL)) {
		CHECK(!"rig and fixtures");
		goto out;
	}
	want(&r.k, a.run.pid, &a.m, &ka);
	serve(&r, SEC);
	x = entry(&r, &ka);
	wc_sym_src_stats(r.src, &ss);
	CHECK(x && x->f.state == WC_UW_NONE && x->f.why == WC_UW_NO_HELPER);
	CHECK(r.st.without[WC_UW_NO_HELPER] == 1 && ss.start_failures == 1);
	CHECK(wc_sym_src_cannot_start(r.src));
	serve(&r, SEC + WC_UW_RETRY_NS - 1);
	CHECK(entry(&r, &ka) != NULL);
	serve(&r, SEC + WC_UW_RETRY_NS);
	CHECK(entry(&r, &ka) == NULL);
out:
	proc_stop(&a);
	rig_free(&r);
}

/* Sparse tables get coarser buckets, never more than a quarter of
 * their rows; dense ones the finest. */
static void test_index_shape(void)
{
	static const uint32_t offs[][4] = {
		{0x1000, 0x1010, 0x1020, 0x1030},	  /* one bucket */
		{0x1000, 0x2000, 0x7fff0000, 0xfffffff0}, /* sparse */
		{0, 0x100, 0x200, 0x300},
	};
	struct wc_cfi_row rows[4];
	struct wc_cfi_table t = {.rows = rows, .n = 4};
	struct wc_uw_file f;
	size_t i, j;

	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		memset(rows, 0, sizeof(rows));
		for (j = 0; j < 4; j++)
			rows[j].off = offs[i][j];
		f = (struct wc_uw_file){.state = WC_UW_ROWS, .n = 4};
		wc_uw_index_shape(&t, &f);
		CHECK(f.buckets == 1 && f.bshift >= WC_UW_BSHIFT_MIN &&
		      f.bshift <= 32);
		CHECK(f.bbase == (uint64_t)offs[i][0] >> f.bshift &&
		      f.bbase == (uint64_t)offs[i][3] >> f.bshift);
		CHECK(wc_uw_slots(&f) == 5);
	}
	CHECK(i == 3 && f.bshift == 10); /* the last: 0x300 >> 10 == 0 */
}

int main(void)
{
	check_prog = "test_unwind";
	cfi_fixtures(fxdir, sizeof(fxdir), fx_skip, sizeof(fx_skip));
	RUN(test_serve);
	RUN(test_entry_lost);
	RUN(test_room);
	RUN(test_room_in_pieces);
	RUN(test_entries_bounded);
	RUN(test_many_drops);
	RUN(test_retry);
	RUN(test_idle);
	RUN(test_del_fails);
	RUN(test_no_helper);
	RUN(test_index_shape);
	if (!*fx_skip)
		cfi_fixtures_remove(fxdir);
	return check_done();
}
