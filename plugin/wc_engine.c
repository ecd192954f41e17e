/* wc_engine.c - see wc_engine.h. */
#include <stdlib.h>
#include <time.h>

#include "wc_engine.h"
#include "wc_log.h"
#include "wc_select.h"

struct wc_engine {
	const struct wc_config *cfg;
	struct wc_selector selector;
	struct wc_collector *collector;
	struct wc_account *account;
	uint64_t read_ns;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void on_record(void *arg, const struct wc_task_rec *rec)
{
	wc_account_record(arg, rec);
}

int wc_engine_read(struct wc_engine *e, char *err, size_t errlen)
{
	uint64_t start = mono_ns();
	int rc;

	wc_account_begin(e->account);
	rc = wc_collector_poll(e->collector, on_record, e->account, err,
			       errlen);
	wc_account_end(e->account);
	e->read_ns = mono_ns() - start;
	return rc;
}

int wc_engine_open(const struct wc_config *cfg, struct wc_engine **out,
		   char *err, size_t errlen)
{
	struct wc_collector_opts copts = {
		.sample_hz = cfg->sample_hz,
		.kthreads = cfg->kthreads,
		.exit_ring_kib = cfg->exit_ring_kib,
	};
	struct wc_account_opts aopts = {
		.max_threads = cfg->max_threads,
		.max_groups = cfg->max_groups,
	};
	struct wc_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return wc_err(err, errlen, "out of memory");
	e->cfg = cfg;
	wc_selector_init(&e->selector, cfg, NULL);
	aopts.selector = &e->selector;
	if (wc_account_new(&aopts, &e->account)) {
		free(e);
		return wc_err(err, errlen,
			      "out of memory for %u threads (MaxThreads)",
			      cfg->max_threads);
	}
	if (wc_collector_open(&copts, &e->collector, err, errlen) ||
	    wc_engine_read(e, err, errlen)) {
		wc_engine_close(e);
		return -1;
	}
	*out = e;
	return 0;
}

void wc_engine_foreach_group(const struct wc_engine *e, wc_group_fn fn,
			     void *arg)
{
	wc_account_foreach(e->account, fn, arg);
}

void wc_engine_self(const struct wc_engine *e, struct wc_self_stats *out)
{
	wc_collector_counters(e->collector, &out->bpf);
	wc_account_stats(e->account, &out->acct);
	out->read_ns = e->read_ns;
	out->exit_ring_fill = wc_collector_exit_ring_fill(e->collector);
	out->table_fill = (double)(out->acct.threads > out->acct.processes
					   ? out->acct.threads
					   : out->acct.processes) /
			  e->cfg->max_threads;
	out->ncpus = wc_collector_ncpus(e->collector);
}

void wc_engine_close(struct wc_engine *e)
{
	if (!e)
		return;
	wc_collector_close(e->collector);
	wc_account_free(e->account);
	free(e);
}
