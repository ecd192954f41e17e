/* wc_walk.c - see wc_walk.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "util/wc_clock.h"
#include "core/wc_walk.h"

#define PID_SPAN (1u << 22) /* PID_MAX_LIMIT on 64-bit: no tgid above */
#define BUCKET_SHIFT 8	    /* 256 process ids a bucket */
#define NBUCKETS (PID_SPAN >> BUCKET_SHIFT)
#define SPLITS 64 /* ranges pending after stops, at most */
#define BATCH 64  /* records handed over at once */

struct range {
	uint32_t lo, hi;
	uint32_t resume; /* a thread of process lo to go on from, or 0 */
};

struct wc_walk {
	int prog_fd;
	struct wc_snap_args *args;
	const struct wc_task_rec *recs; /* the program's array, mapped */
	uint32_t nrecs;
	size_t map_bytes;
	uint32_t *counts; /* NBUCKETS: threads met per bucket, this walk */
	uint64_t noted;
	uint32_t *bounds; /* NBUCKETS + 1: the plan's range bounds */
	uint32_t nbounds; /* 0: no plan */
	wc_walk_fn fn;	  /* valid during a walk */
	void *arg;
	struct wc_walk_stats stats;
};

/* The records a run wrote, in batches, where the program wrote them. */
static void hand_over(struct wc_walk *w, uint32_t n)
{
	uint32_t i, k;

	for (i = 0; i < n; i++)
		wc_walk_note(w, w->recs[i].tgid);
	for (i = 0; i < n; i += k) {
		k = n - i < BATCH ? n - i : BATCH;
		w->fn(w->arg, w->recs + i, k);
	}
}

int wc_walk_new(int prog_fd, int map_fd, uint32_t nrecs,
		struct wc_snap_args *args, struct wc_walk **out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct wc_walk *w = calloc(1, sizeof(*w));
	void *m;

	if (!w)
		return -1;
	w->prog_fd = prog_fd;
	w->args = args;
	w->nrecs = nrecs;
	w->map_bytes = ((size_t)nrecs * sizeof(*w->recs) + page - 1) &
		       ~(page - 1);
	m = mmap(NULL, w->map_bytes, PROT_READ, MAP_SHARED, map_fd, 0);
	w->recs = m == MAP_FAILED ? NULL : m;
	w->counts = calloc(NBUCKETS, sizeof(*w->counts));
	w->bounds = calloc(NBUCKETS + 1, sizeof(*w->bounds));
	if (!w->recs || !w->counts || !w->bounds) {
		wc_walk_free(w);
		return -1;
	}
	*out = w;
	return 0;
}

bool wc_walk_planned(const struct wc_walk *w)
{
	return w->nbounds > 1;
}

void wc_walk_note(struct wc_walk *w, uint32_t tgid)
{
	uint32_t b = tgid >> BUCKET_SHIFT;

	w->counts[b < NBUCKETS ? b : NBUCKETS - 1]++;
	w->noted++;
}

/* Cut the process-id space where the threads met add up to a range's
 * worth: dense buckets alone, sparse ones together. */
static void plan(struct wc_walk *w)
{
	uint32_t b, acc = 0, n = 0;

	w->nbounds = 0;
	if (!w->noted)
		return;
	w->bounds[n++] = 0;
	for (b = 0; b + 1 < NBUCKETS; b++) {
		acc += w->counts[b];
		if (acc >= WC_WALK_THREADS) {
			w->bounds[n++] = (b + 1) << BUCKET_SHIFT;
			acc = 0;
		}
	}
	w->bounds[n++] = UINT32_MAX;
	w->nbounds = n;
}

void wc_walk_begin(struct wc_walk *w)
{
	plan(w);
	memset(w->counts, 0, NBUCKETS * sizeof(*w->counts));
	w->noted = 0;
}

/* One run of the program over r; stop->lo is 0 unless a full array cut
 * it short at process stop->lo, thread stop->resume. */
static int run(struct wc_walk *w, struct range r, struct range *stop)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	uint64_t t0, t1;

	w->args->lo = r.lo;
	w->args->hi = r.hi;
	w->args->resume_tid = r.resume;
	w->args->count = 0;
	w->stats.runs++;
	t0 = wc_clock_ns(CLOCK_MONOTONIC);
	if (bpf_prog_test_run_opts(w->prog_fd, &o))
		return -1;
	t1 = wc_clock_ns(CLOCK_MONOTONIC);
	w->stats.run_ns += t1 - t0;
	if (o.retval) {
		errno = ENOTSUP;
		return -1;
	}
	if (w->args->count > w->nrecs) {
		errno = EOVERFLOW;
		return -1;
	}
	hand_over(w, w->args->count);
	w->stats.hand_ns += wc_clock_ns(CLOCK_MONOTONIC) - t1;
	stop->lo = w->args->stop_tgid;
	stop->resume = w->args->stop_tid;
	return 0;
}

/* Run one planned range to the end: after a stop, the rest of the process
 * it stopped in, then the processes on either side of it again. */
static int run_range(struct wc_walk *w, struct range first)
{
	struct range todo[SPLITS], r, s;
	uint32_t n = 0;

	todo[n++] = first;
	while (n > 0) {
		r = todo[--n];
		if (run(w, r, &s))
			return -1;
		if (!s.lo)
			continue;
		w->stats.refills++;
		if (n + 3 > SPLITS) {
			errno = ENOSPC;
			return -1;
		}
		if (s.lo + 1 < r.hi)
			todo[n++] = (struct range){s.lo + 1, r.hi, 0};
		if (r.lo < s.lo)
			todo[n++] = (struct range){r.lo, s.lo, 0};
		todo[n++] = (struct range){s.lo, s.lo + 1, s.resume};
	}
	return 0;
}

int wc_walk_run(struct wc_walk *w, wc_walk_fn fn, void *arg)
{
	uint32_t i;
	int rc = 0;

	w->fn = fn;
	w->arg = arg;
	w->args->pos = 0;
	for (i = 0; i + 1 < w->nbounds && rc == 0; i++)
		rc = run_range(
			w, (struct range){w->bounds[i], w->bounds[i + 1], 0});
	w->fn = NULL;
	w->arg = NULL;
	if (rc)
		w->stats.failures++;
	return rc;
}

void wc_walk_stats(const struct wc_walk *w, struct wc_walk_stats *out)
{
	*out = w->stats;
}

void wc_walk_free(struct wc_walk *w)
{
	if (!w)
		return;
	if (w->recs)
		munmap((void *)w->recs, w->map_bytes);
	free(w->counts);
	free(w->bounds);
	free(w);
}
