/* wc_flush.c - see wc_flush.h. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stacks/wc_flush.h"
#include "stacks/wc_folded.h"
#include "util/wc_clock.h"
#include "util/wc_log.h"
#include "stacks/wc_memo.h"
#include "spool/wc_spool.h"
#include "render/wc_svg.h"
#include "sym/wc_sym.h"
#include "sym/wc_sym_src.h"

#define FRAME_LEN 256
#define MAX_FRAMES (2 * WC_STACK_DEPTH + 2)
#define KERNEL_SUFFIX "_[k]"
#define FOLD_BYTES (64u << 20)
#define MAX_ENTRY_IDS 16
#define MEMO_FRAMES 8192 /* user frames at a time: 256 KiB, cache-sized */
#define SVG_LINE_MAX (1u << 20) /* longer folded lines are not drawn */

/* Run-queue time has no stacks: it is shown by cause. */
#define RUNQ_WAIT "[waiting for a CPU]"
#define RUNQ_STEAL "[hypervisor steal]"
#define STACK_FULL "[stack table full]"
#define STACK_LOST "[stack lost]"
#define KSTACK_UNWALKED "[kernel stack not walked]"
#define USTACK_UNTAKEN "[user stack not taken]"

struct snap {
	char name[WC_NAME_MAX];
	uint64_t us[WC_NSLOTS]; /* counters at the last flush */
	uint64_t serial;	/* of the group's life they belong to */
	uint32_t gen;		/* flush that last saw the group */
};

struct wc_flush {
	const struct wc_config *cfg;
	struct wc_sym *sym;
	struct wc_fold *fold;
	struct wc_memo *memo;
	struct wc_spool *spool; /* NULL: nowhere to write */
	struct snap *snaps;
	uint32_t nsnaps, max_snaps, gen;
	time_t last_when; /* end of the previous window */
	char host[256];
	/* a folded line being passed to the renderer */
	char *line;
	size_t line_len;
	bool line_too_long;
	struct wc_flush_stats stats;
	/* scratch for one stack, root first */
	uint32_t ids[MAX_FRAMES];
	char text[FRAME_LEN];
	/* the user part of the last stack, for the next of its process and
	 * user stack (the walk brings them one after the other) */
	bool last_valid;
	uint32_t last_tgid, last_n, last_named;
	uint64_t last_ustack;
	/* the ids of entry-point frames met in this window (see put_user) */
	uint32_t entry_ids[MAX_ENTRY_IDS];
	uint32_t nentry_ids;
	char spool_err[512]; /* why there is no spool, "" if there is */
	uint64_t unwritten;  /* flushes without a spool */
};

/*
 * The spool, or NULL with the reason logged once while it stays the same
 * (another collectd holding it, a directory gone): it is tried again at
 * every flush, and no window is symbolized for nothing meanwhile.
 */
static void open_spool(struct wc_flush *f)
{
	const struct wc_config *cfg = f->cfg;
	struct wc_spool_opts o = {
		.dir = cfg->spool_dir,
		.gzip = cfg->spool_gzip,
		.keep_flushes = cfg->keep_files,
		.keep_age_s = cfg->keep_hours * 3600u,
		.keep_bytes = (uint64_t)cfg->keep_mib << 20,
	};
	char err[sizeof(f->spool_err)];

	f->spool = wc_spool_open(&o, err, sizeof(err));
	if (f->spool && f->spool_err[0])
		wc_log(WC_LOG_NOTICE,
		       "spool %s: usable again, taking stacks (the first file "
		       "follows at the next flush)",
		       cfg->spool_dir);
	if (f->spool) {
		f->spool_err[0] = '\0';
		return;
	}
	if (strcmp(err, f->spool_err) != 0)
		wc_log(WC_LOG_ERR,
		       "%s; no stacks are taken and no stack files written "
		       "until it can be used (tried again at every flush; "
		       "metrics go on)",
		       err);
	snprintf(f->spool_err, sizeof(f->spool_err), "%s", err);
}

static void set_below_label(struct wc_fold *fold, unsigned int us)
{
	char label[WC_FOLD_MAX_LABEL];

	if (us % 1000 == 0)
		snprintf(label, sizeof(label), "[waits < %u ms]", us / 1000);
	else
		snprintf(label, sizeof(label), "[waits < %u us]", us);
	wc_fold_set_below_label(fold, label);
}

struct wc_flush *wc_flush_new(const struct wc_config *cfg, char *err,
			      size_t errlen)
{
	struct wc_sym_opts so = {.helper = wc_sym_src_default_helper()};
	struct wc_flush *f = calloc(1, sizeof(*f));

	if (!f) {
		wc_err(err, errlen, "out of memory");
		return NULL;
	}
	f->cfg = cfg;
	f->max_snaps = (uint32_t)cfg->nsel + 1 + cfg->max_groups;
	f->snaps = calloc(f->max_snaps, sizeof(*f->snaps));
	f->fold = wc_fold_new(cfg->stack_entries * 2u, FOLD_BYTES);
	f->sym = wc_sym_new(&so, err, errlen);
	f->memo = wc_memo_new(cfg->stack_entries, MEMO_FRAMES);
	if (!f->snaps || !f->fold || !f->sym || !f->memo) {
		if (f->sym)
			wc_err(err, errlen, "out of memory for %u stacks",
			       cfg->stack_entries);
		wc_flush_free(f);
		return NULL;
	}
	set_below_label(f->fold, cfg->min_block_us);
	open_spool(f);
	f->last_when = time(NULL);
	if (gethostname(f->host, sizeof(f->host) - 1) != 0)
		snprintf(f->host, sizeof(f->host), "localhost");
	return f;
}

void wc_flush_free(struct wc_flush *f)
{
	if (!f)
		return;
	wc_spool_close(f->spool);
	wc_sym_free(f->sym);
	wc_fold_free(f->fold);
	wc_memo_free(f->memo);
	free(f->snaps);
	free(f->line);
	free(f);
}

void wc_flush_note(struct wc_flush *f, pid_t pid)
{
	if (f->spool)
		wc_sym_proc_note(f->sym, pid);
}

void wc_flush_prefetch_note(const struct wc_flush *f, pid_t pid)
{
	if (f->spool)
		wc_sym_proc_prefetch(f->sym, pid);
}

void wc_flush_gone(struct wc_flush *f, pid_t pid)
{
	wc_sym_proc_exited(f->sym, pid);
}

void wc_flush_allow(struct wc_flush *f, unsigned ms)
{
	wc_sym_allow(f->sym, ms);
}

void wc_flush_begin(struct wc_flush *f)
{
	wc_fold_reset(f->fold);
	wc_memo_reset(f->memo);
	f->nentry_ids = 0;
	f->last_valid = false;
	f->gen++;
}

static struct snap *snap_of(struct wc_flush *f, const char *name)
{
	uint32_t i, free_slot = UINT32_MAX;

	for (i = 0; i < f->nsnaps; i++) {
		if (strcmp(f->snaps[i].name, name) == 0)
			return &f->snaps[i];
		/* a group gone for a whole flush restarts from zero */
		if (free_slot == UINT32_MAX && f->snaps[i].gen + 1 < f->gen)
			free_slot = i;
	}
	if (free_slot == UINT32_MAX) {
		if (f->nsnaps == f->max_snaps)
			return NULL;
		free_slot = f->nsnaps++;
	}
	memset(&f->snaps[free_slot], 0, sizeof(struct snap));
	snprintf(f->snaps[free_slot].name, WC_NAME_MAX, "%s", name);
	return &f->snaps[free_slot];
}

/* The growth of a dispatched counter (cumulative us, floor of the ns) since
 * the last flush. */
static uint64_t growth(struct snap *s, const struct wc_group_view *g, int k)
{
	uint64_t now = g->time_ns[k] / 1000, d;

	d = now >= s->us[k] ? now - s->us[k] : now;
	s->us[k] = now;
	return d;
}

void wc_flush_group(struct wc_flush *f, const struct wc_group_view *g)
{
	const char *runq_wait[] = {RUNQ_WAIT}, *runq_steal[] = {RUNQ_STEAL};
	struct snap *s = snap_of(f, g->name);
	uint64_t d[WC_NSLOTS];
	int k;

	if (!s)
		return; /* more groups than configured: cannot happen */
	s->gen = f->gen;
	if (s->serial != g->serial) {
		/* a new life of the group: its counters started at zero */
		memset(s->us, 0, sizeof(s->us));
		s->serial = g->serial;
	}
	for (k = 0; k < WC_NSLOTS; k++)
		d[k] = growth(s, g, k);
	wc_fold_set_total(f->fold, g->name, WC_FOLD_ONCPU, d[WC_T_ONCPU]);
	wc_fold_set_total(f->fold, g->name, WC_FOLD_SLEEP, d[WC_T_SLEEP]);
	wc_fold_set_total(f->fold, g->name, WC_FOLD_BLOCKED, d[WC_T_BLOCKED]);
	wc_fold_set_total(f->fold, g->name, WC_FOLD_RUNQ,
			  d[WC_T_RUNQ] + d[WC_T_STEAL]);
	/* weights in ns that add up to the total exactly */
	wc_fold_add(f->fold, g->name, WC_FOLD_RUNQ, runq_wait, 1,
		    d[WC_T_RUNQ] * 1000);
	wc_fold_add(f->fold, g->name, WC_FOLD_RUNQ, runq_steal, 1,
		    d[WC_T_STEAL] * 1000);
}

/* Frames the BPF programs themselves add to a kernel stack. */
static bool is_glue(const char *name)
{
	static const char *const prefixes[] = {
		"bpf_prog_",	      "__bpf_prog_",   "bpf_trace_run",
		"__bpf_trace_",	      "bpf_get_stack", "__bpf_get_stack",
		"bpf_get_task_stack",
	};
	size_t i;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

static size_t put_label(struct wc_flush *f, size_t n, const char *label)
{
	if (n < MAX_FRAMES)
		f->ids[n++] = wc_fold_frame(f->fold, label);
	return n;
}

/* A kernel stack's frames, outermost first, without the BPF glue at its
 * leaf end, suffixed; symbolized once per flush. */
static size_t put_kernel(struct wc_flush *f, size_t n,
			 const struct wc_stack_view *v, uint64_t hash)
{
	size_t first = n;
	uint32_t i, leaf = 0, named = 0;

	/* the leaf end first, to know where the glue stops (one frame is
	 * kept whatever it is) */
	for (; leaf + 1 < v->nr; leaf++) {
		wc_sym_kernel(f->sym, v->ip[leaf], leaf > 0, f->text,
			      FRAME_LEN - sizeof(KERNEL_SUFFIX));
		if (!is_glue(f->text))
			break;
	}
	for (i = v->nr; i-- > leaf && n < MAX_FRAMES;) {
		int rc = wc_sym_kernel(f->sym, v->ip[i], i > 0, f->text,
				       FRAME_LEN - sizeof(KERNEL_SUFFIX));

		strcat(f->text, KERNEL_SUFFIX);
		named += rc == WC_SYM_NAME;
		f->ids[n++] = wc_fold_frame(f->fold, f->text);
	}
	f->stats.frames += (uint32_t)(n - first);
	f->stats.frames_named += named;
	wc_memo_stack_put(f->memo, hash, f->ids + first, n - first, named);
	return n;
}

/*
 * Where every thread's stack begins.  A walk that goes on past one read
 * the frame pointer that code without frame pointers left in the
 * register (a static binary's libc): what it found beyond is not a
 * caller.  Versioned names ("clone3@GLIBC_2.34") count too.
 */
static bool is_entry_point(const char *name)
{
	static const char *const entry[] = {"_start",
					    "__libc_start_main",
					    "__libc_start_call_main",
					    "start_thread",
					    "clone",
					    "clone3",
					    "__clone",
					    "__clone3",
					    "thread_start"};
	size_t n = strcspn(name, "@"), i;

	for (i = 0; i < sizeof(entry) / sizeof(entry[0]); i++)
		if (strlen(entry[i]) == n && !memcmp(entry[i], name, n))
			return true;
	return false;
}

static bool is_entry_id(const struct wc_flush *f, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < f->nentry_ids; i++)
		if (f->entry_ids[i] == id)
			return true;
	return false;
}

/* A user frame not met in this process yet: met at the same place in
 * another process of the binary, or symbolized now. */
static uint32_t user_frame(struct wc_flush *f, pid_t pid, uint64_t ip,
			   bool caller, bool *named)
{
	uint32_t id, mod;
	uint64_t off;
	bool placed = wc_sym_user_place(f->sym, pid, ip, caller, &mod, &off);
	int rc;

	if (placed && wc_memo_place_get(f->memo, mod, off, &id, named))
		return id;
	rc = wc_sym_user(f->sym, pid, ip, caller, f->text, FRAME_LEN);
	*named = rc == WC_SYM_NAME;
	id = wc_fold_frame(f->fold, f->text);
	if (*named && id != WC_FOLD_NO_FRAME && f->nentry_ids < MAX_ENTRY_IDS &&
	    is_entry_point(f->text) && !is_entry_id(f, id))
		f->entry_ids[f->nentry_ids++] = id;
	if (placed && id != WC_FOLD_NO_FRAME)
		wc_memo_place_put(f->memo, mod, off, id, *named);
	return id;
}

/* Why a walk by unwind tables ended where it did (the BPF walk's label
 * frame), or NULL for a frame. */
static const char *frame_label(uint64_t ip)
{
	static const char *const label[WC_FL_NR] = {
		[WC_FL_NO_TABLE] = "[no unwind table or frame pointer]",
		[WC_FL_UNLEARNT] = "[mapping not learnt yet]",
		[WC_FL_BAD_READ] = "[unwound to a bad frame]",
		[WC_FL_RULE] = "[unwind rule not followed]",
		[WC_FL_SIGNAL] = "[signal frame]",
		[WC_FL_PENDING] = "[unwind table not built yet]",
	};

	if (ip < WC_FRAME_LABEL)
		return NULL;
	ip -= WC_FRAME_LABEL;
	return ip < WC_FL_NR && label[ip] ? label[ip] : "[unwind ended]";
}

/* A user stack's frames, outermost first; each (process, address)
 * symbolized once per flush, and each place in a binary once while the
 * memo holds it.  It begins at the innermost entry point it holds, so a
 * program's stacks look the same however it was linked. */
static size_t put_user(struct wc_flush *f, size_t n, pid_t pid,
		       const struct wc_stack_view *v)
{
	size_t first = n;
	uint32_t i;

	for (i = v->nr; i-- > 0 && n < MAX_FRAMES; n++) {
		const char *label = frame_label(v->ip[i]);
		bool named;

		if (label) {
			f->ids[n] = wc_fold_frame(f->fold, label);
			continue;
		}
		f->stats.frames++;
		if (!wc_memo_frame_get(f->memo, (uint32_t)pid, v->ip[i], i > 0,
				       &f->ids[n], &named)) {
			f->ids[n] = user_frame(f, pid, v->ip[i], i > 0, &named);
			if (f->ids[n] != WC_FOLD_NO_FRAME)
				wc_memo_frame_put(f->memo, (uint32_t)pid,
						  v->ip[i], i > 0, f->ids[n],
						  named);
		}
		f->stats.frames_named += named;
		if (n > first && is_entry_id(f, f->ids[n])) {
			f->ids[first] = f->ids[n];
			n = first;
		}
	}
	return n;
}

/* Append a stack, outermost first. */
static size_t put_stack(struct wc_flush *f, size_t n, pid_t pid,
			const struct wc_stacks *st, uint64_t hash, bool kernel)
{
	struct wc_stack_view v;
	uint32_t named;
	int got;

	switch (hash) {
	case WC_STACK_NONE:
		return n;
	case WC_STACK_DROPPED:
		return put_label(f, n, STACK_FULL);
	case WC_STACK_UNWALKED:
		return put_label(f, n, KSTACK_UNWALKED);
	case WC_STACK_UNPARKED:
		return put_label(f, n, USTACK_UNTAKEN);
	}
	if (hash < WC_STACK_LABELS)
		return n;
	if (kernel) {
		got = wc_memo_stack_get(f->memo, hash, f->ids + n,
					MAX_FRAMES - n, &named);
		if (got >= 0) {
			f->stats.frames += (uint32_t)got;
			f->stats.frames_named += named;
			return n + (size_t)got;
		}
	}
	if (!wc_stacks_get(st, hash, &v)) {
		f->stats.stacks_lost++;
		return put_label(f, n, STACK_LOST);
	}
	return kernel ? put_kernel(f, n, &v, hash) : put_user(f, n, pid, &v);
}

static enum wc_fold_kind fold_kind(uint32_t kind)
{
	switch (kind) {
	case WC_SLEEP:
		return WC_FOLD_SLEEP;
	case WC_BLOCKED:
		return WC_FOLD_BLOCKED;
	case WC_RUNQ:
		return WC_FOLD_RUNQ;
	default:
		return WC_FOLD_ONCPU;
	}
}

struct svg_feed {
	struct wc_flush *f;
	struct wc_svg *svg;	    /* NULL: not drawing */
	struct wc_spool_file *file; /* the folded file */
};

struct add_ctx {
	struct wc_flush *f;
	const struct wc_stacks *st;
};

static void add_entry(void *arg, const struct wc_stack_entry *e)
{
	struct add_ctx *c = arg;
	struct wc_flush *f = c->f;
	size_t n = 0;

	if (f->last_valid && e->tgid == f->last_tgid &&
	    e->ustack == f->last_ustack) {
		n = f->last_n; /* still in f->ids */
		f->stats.frames += f->last_n;
		f->stats.frames_named += f->last_named;
	} else {
		uint64_t named = f->stats.frames_named;

		n = put_stack(f, n, (pid_t)e->tgid, c->st, e->ustack, false);
		f->last_valid = true;
		f->last_tgid = e->tgid;
		f->last_ustack = e->ustack;
		f->last_n = (uint32_t)n;
		f->last_named = (uint32_t)(f->stats.frames_named - named);
	}
	n = put_stack(f, n, (pid_t)e->tgid, c->st, e->kstack, true);
	wc_fold_add_ids(f->fold, e->group, fold_kind(e->kind), f->ids, n,
			e->weight);
}

static int to_spool(void *ctx, const char *buf, size_t len)
{
	return wc_spool_write(ctx, buf, len);
}

/* The renderer takes whole lines; the folded text comes in pieces. */
static int to_svg(void *ctx, const char *buf, size_t len)
{
	struct svg_feed *feed = ctx;
	struct wc_flush *f = feed->f;
	size_t i;

	for (i = 0; i < len; i++) {
		if (buf[i] == '\n') {
			if (!f->line_too_long)
				wc_svg_add_line(feed->svg, f->line,
						f->line_len);
			f->line_len = 0;
			f->line_too_long = false;
		} else if (f->line_len < SVG_LINE_MAX) {
			f->line[f->line_len++] = buf[i];
		} else {
			f->line_too_long = true;
		}
	}
	return 0;
}

static void utc(time_t t, const char *fmt, char *buf, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, fmt, &tm);
}

/* A renderer for this window's flame graph, fed while the folded file is
 * written (one pass over the stacks for both); NULL if off or no memory. */
static struct wc_svg *svg_start(struct wc_flush *f, time_t when)
{
	char title[320], sub[96], from[32], to[32];
	struct wc_svg_opts o = {0};

	if (!f->cfg->render_svg)
		return NULL;
	if (!f->line)
		f->line = malloc(SVG_LINE_MAX);
	if (!f->line)
		return NULL;
	utc(f->last_when, "%Y-%m-%d %H:%M:%S", from, sizeof(from));
	utc(when, "%H:%M:%S UTC", to, sizeof(to));
	snprintf(title, sizeof(title), "wallclock: %s", f->host);
	snprintf(sub, sizeof(sub), "%s to %s", from, to);
	o.title = title;
	o.subtitle = sub;
	f->line_len = 0;
	f->line_too_long = false;
	return wc_svg_new(&o);
}

/* The flame graph next to its folded file. */
static void svg_write(struct wc_flush *f, struct wc_svg *svg, time_t when)
{
	struct wc_spool_file *file =
		wc_spool_begin(f->spool, when, "svg", false);

	if (file && wc_svg_emit(svg, to_spool, file) >= 0)
		wc_spool_commit(file);
	else
		wc_spool_abort(file);
}

/* The folded text goes to its file and, when drawing, to the renderer. */
static int to_file_and_svg(void *ctx, const char *buf, size_t len)
{
	struct svg_feed *feed = ctx;

	if (feed->svg)
		to_svg(feed, buf, len);
	return wc_spool_write(feed->file, buf, len);
}

int wc_flush_write(struct wc_flush *f, struct wc_stacks *st, time_t when)
{
	struct add_ctx c = {f, st};
	struct wc_fold_stats fs;
	struct wc_spool_file *file = NULL;
	uint64_t start = wc_clock_ns(CLOCK_MONOTONIC);
	/* without a spool the window was taken without stacks (the engine
	 * pauses them): a spool usable now gets the next window's file */
	bool stackless = !f->spool;
	int rc = -1;

	if (!f->spool)
		open_spool(f);
	if (!f->spool)
		f->unwritten++;
	if (f->spool && !stackless) {
		wc_stacks_foreach(st, add_entry, &c);
		file = wc_spool_begin(f->spool, when, "folded", true);
	}
	if (file) {
		struct svg_feed feed = {f, svg_start(f, when), file};

		if (wc_fold_emit(f->fold, f->cfg->top_stacks, to_file_and_svg,
				 &feed) < 0)
			wc_spool_abort(file);
		else
			rc = wc_spool_commit(file);
		if (rc == 0 && feed.svg)
			svg_write(f, feed.svg, when);
		wc_svg_free(feed.svg);
	}
	f->last_when = when;
	wc_fold_get_stats(f->fold, &fs);
	f->stats.lines = fs.lines;
	wc_sym_cycle(f->sym);
	/* Hand back what the window and any reloaded symbol table freed:
	 * glibc keeps freed large blocks in the heap once its adaptive mmap
	 * threshold has grown, and the RSS would ratchet up with churn. */
	malloc_trim(0);
	f->stats.flushes++;
	f->stats.flush_ns = wc_clock_ns(CLOCK_MONOTONIC) - start;
	return rc;
}

bool wc_flush_spool_ok(const struct wc_flush *f)
{
	return f->spool != NULL;
}

void wc_flush_stats(const struct wc_flush *f, struct wc_flush_stats *out)
{
	struct wc_spool_stats sp = {0};
	struct wc_sym_stats sy;
	struct wc_memo_stats me;

	*out = f->stats;
	if (f->spool)
		wc_spool_get_stats(f->spool, &sp);
	wc_sym_stats(f->sym, &sy);
	out->files_written = sp.files_written;
	out->write_errors = sp.write_errors + f->unwritten;
	out->spool_ok = f->spool != NULL;
	out->spool_bytes = sp.bytes_in_spool;
	out->sym_hits = sy.module_hits;
	out->sym_misses = sy.module_misses;
	out->sym_bytes = sy.bytes;
	out->sym_procs = sy.procs;
	out->sym_refused = sy.refused;
	out->sym_bad_lines = sy.bad_lines;
	out->sym_over_bounds = sy.over_bounds;
	out->helper_starts = sy.helper_starts;
	out->helper_stalls = sy.helper_stalls;
	out->helper_crashes = sy.helper_crashes;
	out->helper_skipped = sy.helper_skipped;
	wc_memo_get_stats(f->memo, &me);
	/* a frame found by place was a miss by process first */
	out->memo_hits = me.frame_hits + me.place_hits + me.stack_hits;
	out->memo_misses = me.frame_misses - me.place_hits + me.stack_misses;
}
