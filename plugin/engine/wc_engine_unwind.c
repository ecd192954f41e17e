/* wc_engine_unwind.c - see wc_engine_unwind.h. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>

#include "engine/wc_engine_unwind.h"
#include "util/wc_clock.h"
#include "util/wc_log.h"

/* How often the thread looks for requests, and how long a round of
 * serving may go on (a build under way finishes: its limits bound it). */
#define SERVE_EVERY_MS 50
#define SERVE_BUDGET_NS 200000000ull
/* The helper's share of the time (a file's table is built once, for
 * every process that maps it: a quarter, so a busy host's first tables
 * come in seconds), and how long a request may take: above the builder's
 * own CPU limit. */
#define HELPER_SHARE 4
#define HELPER_DEADLINE_MS 10000

struct wc_engine_uw {
	struct wc_collector_uw maps;
	struct wc_uw_kernel k;
	struct wc_sym_src *src;
	struct wc_unwind *u;
	pthread_t thread;
	pthread_mutex_t lock; /* stop, and the copy of the stats */
	pthread_cond_t wake;
	bool stop;
	/* as of the last round: a reader never waits for a build */
	struct wc_unwind_stats st;
};

static size_t k_wants(void *ctx, struct wc_uw_key *keys,
		      struct wc_uw_want *wants, size_t max)
{
	struct wc_engine_uw *s = ctx;
	struct wc_uw_key *prev = NULL;
	size_t n = 0;

	while (n < max &&
	       bpf_map_get_next_key(s->maps.wants_fd, prev, &keys[n]) == 0) {
		prev = &keys[n];
		if (bpf_map_lookup_elem(s->maps.wants_fd, &keys[n],
					&wants[n]) == 0)
			n++;
	}
	return n;
}

static void k_unwant(void *ctx, const struct wc_uw_key *k)
{
	struct wc_engine_uw *s = ctx;

	bpf_map_delete_elem(s->maps.wants_fd, k);
}

static int k_put(void *ctx, const struct wc_uw_key *k,
		 const struct wc_uw_file *f)
{
	struct wc_engine_uw *s = ctx;

	return bpf_map_update_elem(s->maps.files_fd, k, f, BPF_ANY) ? -1 : 0;
}

static int k_get(void *ctx, const struct wc_uw_key *k, struct wc_uw_file *f)
{
	struct wc_engine_uw *s = ctx;

	return bpf_map_lookup_elem(s->maps.files_fd, k, f) ? -1 : 0;
}

static int k_del(void *ctx, const struct wc_uw_key *k)
{
	struct wc_engine_uw *s = ctx;

	if (bpf_map_delete_elem(s->maps.files_fd, k) == 0 || errno == ENOENT)
		return 0;
	return -1;
}

static void *serve_loop(void *arg)
{
	struct wc_engine_uw *s = arg;
	struct timespec until;

	struct wc_unwind_stats st;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		pthread_mutex_unlock(&s->lock);
		wc_unwind_serve(s->u, wc_clock_ns(CLOCK_MONOTONIC),
				SERVE_BUDGET_NS);
		wc_unwind_stats(s->u, &st);
		pthread_mutex_lock(&s->lock);
		s->st = st;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += SERVE_EVERY_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (!s->stop)
			pthread_cond_timedwait(&s->wake, &s->lock, &until);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void uw_free(struct wc_engine_uw *s)
{
	wc_unwind_free(s->u);
	if (s->src)
		wc_sym_src_free(s->src);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

struct wc_engine_uw *wc_engine_uw_start(const struct wc_collector_uw *m,
					char *err, size_t errlen)
{
	struct wc_sym_src_opts so = {
		.helper = wc_sym_src_default_helper(),
		.share = HELPER_SHARE,
		.deadline_ms = HELPER_DEADLINE_MS,
		.lacking = "no unwind tables are built (user stacks are "
			   "walked by frame pointers)",
	};
	struct wc_cfi_limits lim = WC_CFI_LIMITS_DEFAULT;
	struct wc_engine_uw *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	int rc;

	if (!s) {
		wc_err(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	/* a clock set back must not hold the serving for as long */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
	s->maps = *m;
	s->k = (struct wc_uw_kernel){
		.rows = m->rows,
		.nrows = m->nrows,
		.nfiles = m->nfiles,
		.ctx = s,
		.wants = k_wants,
		.unwant = k_unwant,
		.put = k_put,
		.get = k_get,
		.del = k_del,
	};
	/* a table may take half the rows at most: one file does not crowd
	 * out the rest */
	if (lim.rows_max > m->nrows / 2)
		lim.rows_max = m->nrows / 2;
	s->src = wc_sym_src_new(&so);
	s->u = s->src ? wc_unwind_new(&s->k, s->src, &lim) : NULL;
	if (!s->u) {
		uw_free(s);
		wc_err(err, errlen, "out of memory for the unwind tables");
		return NULL;
	}
	rc = pthread_create(&s->thread, NULL, serve_loop, s);
	if (rc) {
		uw_free(s);
		wc_err(err, errlen, "starting the unwind tables' thread: %s",
		       strerror(rc));
		return NULL;
	}
	return s;
}

void wc_engine_uw_stats(struct wc_engine_uw *s, struct wc_unwind_stats *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->st;
	pthread_mutex_unlock(&s->lock);
}

void wc_engine_uw_stop(struct wc_engine_uw *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	uw_free(s);
}
