/*
 * wallclock.c - the collectd plugin: the only file that speaks collectd.
 *
 * Owns: the plugin context (configuration and running engine), the
 * translation of <Plugin wallclock> into wc_config options, the types the
 * plugin dispatches, and the dispatch of per-group and self metrics.
 *
 * Threads: collectd calls config and init on its main thread, and
 * shutdown after the read threads have stopped.  Two read callbacks touch
 * the engine: the read every Interval, and the drain of the kernel's
 * stack tables every second in between; collectd may run them on two read
 * threads at once, so `lock` serialises them (the engine is not
 * thread-safe).
 */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"
#include "collectd/core/utils/common/common.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>

#include "engine/wc_engine.h"
#include "util/wc_log.h"

#define PLUGIN "wallclock"
#define MAX_VALUES 8
/* Log a failing read the first time and then every this many reads. */
#define READ_ERROR_EVERY 60
/* Seconds between drains of the kernel's stack tables. */
#define DRAIN_EVERY 1.0
/* 10 a second, for 0.2 ms each at 10,000 exits a second: the default
 * exit ring (8,192 records on 2 CPUs) then takes bursts of 80,000 a
 * second, which a storm slowed by a busy CPU makes when it catches up */
#define EXITS_EVERY 0.1

static struct {
	struct wc_config cfg;
	bool configured;
	struct wc_engine *engine;
	uint64_t read_errors;
	cdtime_t read_time; /* of this read: every value and the flush's file */
	pthread_mutex_t lock; /* the engine, between the two read callbacks */
} ctx = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void log_sink(enum wc_log_level level, const char *msg)
{
	static const int map[] = {
		[WC_LOG_ERR] = LOG_ERR,	      [WC_LOG_WARN] = LOG_WARNING,
		[WC_LOG_NOTICE] = LOG_NOTICE, [WC_LOG_INFO] = LOG_INFO,
		[WC_LOG_DEBUG] = LOG_DEBUG,
	};

	plugin_log(map[level], PLUGIN " plugin: %s", msg);
}

/* libbpf's lines already start with "libbpf: "; its debug chatter and the
 * verifier log come at lower levels unless a load fails. */
static int libbpf_sink(enum libbpf_print_level level, const char *fmt,
		       va_list ap)
{
	char line[1024];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	plugin_log(level == LIBBPF_WARN ? LOG_WARNING : LOG_INFO,
		   PLUGIN " plugin: %s", line);
	return 0;
}

static int to_cvals(const oconfig_item_t *item, struct wc_cval *vals, char *err,
		    size_t errlen)
{
	int i;

	if (item->children_num > 0)
		return wc_err(err, errlen, "%s does not take a block",
			      item->key);
	if (item->values_num > MAX_VALUES)
		return wc_err(err, errlen, "%s: too many values (%d)",
			      item->key, item->values_num);
	for (i = 0; i < item->values_num; i++) {
		const oconfig_value_t *v = &item->values[i];

		memset(&vals[i], 0, sizeof(vals[i]));
		switch (v->type) {
		case OCONFIG_TYPE_STRING:
			vals[i].type = WC_CVAL_STRING;
			vals[i].s = v->value.string;
			break;
		case OCONFIG_TYPE_NUMBER:
			vals[i].type = WC_CVAL_NUMBER;
			vals[i].n = v->value.number;
			break;
		default:
			vals[i].type = WC_CVAL_BOOL;
			vals[i].b = v->value.boolean;
			break;
		}
	}
	return 0;
}

static int wc_config_cb(oconfig_item_t *ci)
{
	struct wc_cval vals[MAX_VALUES];
	char err[512];
	int i;

	for (i = 0; i < ci->children_num; i++) {
		const oconfig_item_t *item = &ci->children[i];

		if (to_cvals(item, vals, err, sizeof(err)) ||
		    wc_config_set(&ctx.cfg, item->key, vals, item->values_num,
				  err, sizeof(err))) {
			ERROR(PLUGIN " plugin: %s", err);
			return -1;
		}
	}
	if (wc_config_finish(&ctx.cfg, err, sizeof(err))) {
		ERROR(PLUGIN " plugin: %s", err);
		return -1;
	}
	ctx.configured = true;
	return 0;
}

static void submit_at(cdtime_t when, const char *group, const char *type,
		      const char *tinst, value_t value)
{
	value_list_t vl = VALUE_LIST_INIT;

	vl.values = &value;
	vl.values_len = 1;
	vl.time = when;
	sstrncpy(vl.plugin, PLUGIN, sizeof(vl.plugin));
	sstrncpy(vl.plugin_instance, group, sizeof(vl.plugin_instance));
	sstrncpy(vl.type, type, sizeof(vl.type));
	sstrncpy(vl.type_instance, tinst, sizeof(vl.type_instance));
	plugin_dispatch_values(&vl);
}

static void submit(const char *group, const char *type, const char *tinst,
		   value_t value)
{
	submit_at(ctx.read_time, group, type, tinst, value);
}

static void submit_us(cdtime_t when, const char *group, const char *tinst,
		      uint64_t ns)
{
	submit_at(when, group, "wallclock_us", tinst,
		  (value_t){.derive = (derive_t)(ns / 1000)});
}

/* Cumulative nanoseconds become cumulative microseconds: the remainder is
 * carried in the next read's total, never lost.  Off-CPU is everything
 * that is not the thread's own run time, so on + off is wall time.  Stamped
 * when the group's threads were read, which on a busy host can be a good
 * part of a second from the middle of the whole read. */
static void submit_group(void *arg, const struct wc_group_view *g)
{
	uint64_t off = g->time_ns[WC_T_RUNQ] + g->time_ns[WC_T_SLEEP] +
		       g->time_ns[WC_T_BLOCKED] + g->time_ns[WC_T_STEAL];
	cdtime_t t = g->read_at_ns ? NS_TO_CDTIME_T(g->read_at_ns)
				   : ctx.read_time;

	(void)arg;
	submit_us(t, g->name, "oncpu", g->time_ns[WC_T_ONCPU]);
	submit_us(t, g->name, "offcpu", off);
	submit_us(t, g->name, "runqueue", g->time_ns[WC_T_RUNQ]);
	submit_us(t, g->name, "sleep", g->time_ns[WC_T_SLEEP]);
	submit_us(t, g->name, "blocked", g->time_ns[WC_T_BLOCKED]);
	submit_us(t, g->name, "steal", g->time_ns[WC_T_STEAL]);
	submit_at(t, g->name, "wallclock_samples", "",
		  (value_t){.derive = (derive_t)g->samples});
	submit_at(t, g->name, "wallclock_threads", "",
		  (value_t){.gauge = (gauge_t)g->threads});
}

static void submit_derive(const char *tinst, uint64_t v)
{
	submit("", "derive", tinst, (value_t){.derive = (derive_t)v});
}

static void submit_gauge(const char *tinst, double v)
{
	submit("", "gauge", tinst, (value_t){.gauge = v});
}

/* Stack capture, symbolization and the spool: what was dropped, how well
 * frames resolve, how long a flush takes. */
static void submit_stack_self(const struct wc_self_stats *s)
{
	submit_derive("stacks_full", s->bpf.v[WC_CNT_STACKS_FULL]);
	submit_derive("stack_counts_full", s->bpf.v[WC_CNT_STACK_COUNTS_FULL]);
	submit_derive("stack_errors", s->bpf.v[WC_CNT_STACK_ERRORS]);
	submit_derive("offcpu_stacks", s->bpf.v[WC_CNT_OFFCPU_STACKS]);
	submit_derive("offcpu_no_user_stack", s->bpf.v[WC_CNT_OFFCPU_NO_USER]);
	submit_derive("offcpu_user_missed",
		      s->bpf.v[WC_CNT_OFFCPU_USER_MISSED]);
	submit_derive("offcpu_walks_unused", s->bpf.v[WC_CNT_WALKS_UNUSED]);
	submit_derive("waits_under_way", s->bpf.v[WC_CNT_WAITS_UNDER_WAY]);
	submit_derive("waits_unwalked", s->bpf.v[WC_CNT_WAITS_UNWALKED]);
	submit_derive("stacks_truncated", s->bpf.v[WC_CNT_STACKS_TRUNCATED]);
	submit_derive("stacks_known", s->bpf.v[WC_CNT_STACKS_KNOWN]);
	submit_derive("stacks_copied", s->stacks_copied);
	submit("", "total_time_in_ms", "drain",
	       (value_t){.derive = (derive_t)(s->drain_ns / 1000000)});
	submit_derive("window_weights_dropped", s->window.weights_dropped);
	submit_derive("window_stacks_dropped", s->window.stacks_dropped);
	submit_derive("stacks_lost", s->flush.stacks_lost);
	submit_derive("frames", s->flush.frames);
	submit_derive("frames_named", s->flush.frames_named);
	submit_derive("symbol_cache_hits", s->flush.sym_hits);
	submit_derive("symbol_cache_misses", s->flush.sym_misses);
	submit_derive("symbol_files_refused", s->flush.sym_refused);
	submit_derive("perfmap_lines_refused", s->flush.sym_bad_lines);
	submit_derive("symbol_over_bounds", s->flush.sym_over_bounds);
	submit_derive("symbolizer_starts", s->flush.helper_starts);
	submit_derive("symbolizer_stalls", s->flush.helper_stalls);
	submit_derive("symbolizer_crashes", s->flush.helper_crashes);
	submit_derive("symbolizer_skipped", s->flush.helper_skipped);
	submit_derive("flush_memo_hits", s->flush.memo_hits);
	submit_derive("flush_memo_misses", s->flush.memo_misses);
	submit_derive("spool_files", s->flush.files_written);
	submit_derive("spool_write_errors", s->flush.write_errors);
	submit_gauge("window_stacks", s->window.stacks);
	submit_gauge("flush_lines", (double)s->flush.lines);
	submit("", "bytes", "symbol_cache",
	       (value_t){.gauge = (double)s->flush.sym_bytes});
	submit("", "bytes", "spool",
	       (value_t){.gauge = (double)s->flush.spool_bytes});
	if (s->flush.flushes)
		submit("", "duration", "flush",
		       (value_t){.gauge = (double)s->flush.flush_ns / 1e9});
}

/* User stacks by unwind tables: how complete, why walks ended early,
 * what the tables hold and cost. */
static void submit_unwind_self(const struct wc_self_stats *s)
{
	static const char *const why[WC_UW_WHY_NR] = {
		[WC_UW_NO_CFI] = "unwind_files_no_cfi",
		[WC_UW_TOO_BIG] = "unwind_files_too_big",
		[WC_UW_NO_ROOM] = "unwind_files_no_room",
		[WC_UW_SLOW] = "unwind_files_slow",
		[WC_UW_REFUSED] = "unwind_files_refused",
		[WC_UW_UNREADABLE] = "unwind_files_unreadable",
		[WC_UW_DEFERRED] = "unwind_files_deferred",
		[WC_UW_GONE] = "unwind_files_gone",
		[WC_UW_NO_HELPER] = "unwind_files_no_helper",
	};
	const __u64 *v = s->bpf.v;
	int i;

	submit_derive("unwind_walks", v[WC_CNT_UW_WALKS]);
	submit_derive("unwind_complete", v[WC_CNT_UW_COMPLETE]);
	submit_derive("unwind_frames_table", v[WC_CNT_UW_FRAMES_TABLE]);
	submit_derive("unwind_frames_fp", v[WC_CNT_UW_FRAMES_FP]);
	submit_derive("unwind_leaf_no_table", v[WC_CNT_UW_LEAF_NO_TABLE]);
	submit_derive("unwind_end_no_table", v[WC_CNT_UW_END_NO_TABLE]);
	submit_derive("unwind_end_unlearnt", v[WC_CNT_UW_END_UNLEARNT]);
	submit_derive("unwind_end_bad_read", v[WC_CNT_UW_END_BAD_READ]);
	submit_derive("unwind_end_rule", v[WC_CNT_UW_END_RULE]);
	submit_derive("unwind_end_signal", v[WC_CNT_UW_END_SIGNAL]);
	submit_derive("unwind_end_pending", v[WC_CNT_UW_END_PENDING]);
	submit_derive("unwind_wants_dropped", v[WC_CNT_UW_WANTS_DROPPED]);
	submit_derive("unwind_scan_callers", v[WC_CNT_UW_SCAN_CALLERS]);
	submit_derive("unwind_scan_false", v[WC_CNT_UW_SCAN_FALSE]);
	submit_derive("unwind_tables_built", s->uw.built);
	submit_derive("unwind_evicted", s->uw.evicted);
	submit_derive("unwind_idle", s->uw.idle);
	for (i = 1; i < WC_UW_WHY_NR; i++)
		submit_derive(why[i], s->uw.without[i]);
	submit("", "total_time_in_ms", "unwind_build",
	       (value_t){.derive = (derive_t)(s->uw.build_ns / 1000000)});
	submit_gauge("unwind_tables", (double)s->uw.tables);
	submit("", "bytes", "unwind_rows",
	       (value_t){.gauge = (double)s->uw.rows_used * 8});
	submit("", "bytes", "unwind_maps",
	       (value_t){.gauge = (double)s->unwind_map_bytes});
}

/* The profiler's own health, under the plugin without an instance (no
 * group name can be empty, so these never collide with a group). */
static void submit_self(void)
{
	struct wc_self_stats s;

	wc_engine_self(ctx.engine, &s);
	submit_derive("samples", s.bpf.v[WC_CNT_SAMPLES]);
	submit_derive("samples_late", s.bpf.v[WC_CNT_SAMPLES_LATE]);
	submit_derive("samples_misplaced", s.bpf.v[WC_CNT_SAMPLES_MISPLACED]);
	submit_derive("idle_samples", s.bpf.v[WC_CNT_IDLE_SAMPLES]);
	submit_derive("samples_lost", s.bpf.v[WC_CNT_SAMPLES_LOST]);
	submit_derive("storage_failed", s.bpf.v[WC_CNT_STORAGE_FAILED]);
	submit_derive("exits", s.bpf.v[WC_CNT_EXITS]);
	submit_derive("exits_dropped", s.bpf.v[WC_CNT_EXITS_DROPPED]);
	submit_derive("exits_dropped_us",
		      s.bpf.v[WC_CNT_EXITS_DROPPED_NS] / 1000);
	submit_derive("torn_reads", s.bpf.v[WC_CNT_TORN_READS]);
	submit_derive("switches_missed", s.bpf.v[WC_CNT_SWITCHES_MISSED]);
	submit_derive("switches_charged", s.bpf.v[WC_CNT_SWITCHES_CHARGED]);
	submit_derive("runq_stamps_stale", s.bpf.v[WC_CNT_RUNQ_STAMPS_STALE]);
	submit_derive("runq_stale_us", s.bpf.v[WC_CNT_RUNQ_STALE_NS] / 1000);
	submit_derive("runq_stale_unmended",
		      s.bpf.v[WC_CNT_RUNQ_STALE_UNMENDED]);
	submit_derive("walk_runs", s.walk.runs);
	submit_derive("walk_refills", s.walk.refills);
	submit_derive("walk_failures", s.walk.failures);
	submit_derive("threads_lost", s.acct.threads_lost);
	submit_derive("threads_untracked", s.acct.threads_untracked);
	submit_derive("groups_taken_over", s.acct.groups_taken_over);
	submit_derive("read_errors",
		      __atomic_load_n(&ctx.read_errors, __ATOMIC_RELAXED));
	if (s.stacks)
		submit_derive("weights_unowned", s.weights_unowned);
	submit_gauge("threads", s.acct.threads);
	submit_gauge("processes", s.acct.processes);
	submit_gauge("groups", s.acct.groups);
	submit_gauge("processes_waiting", s.acct.waiting);
	submit_gauge("cpus", s.ncpus);
	submit_gauge("capabilities_missing", s.caps_missing);
	submit("", "percent", "exit_ring_fill",
	       (value_t){.gauge = 100.0 * s.exit_ring_fill});
	submit("", "percent", "table_fill",
	       (value_t){.gauge = 100.0 * s.table_fill});
	submit("", "duration", "read",
	       (value_t){.gauge = (double)s.read_ns / 1e9});
	if (s.stacks)
		submit_stack_self(&s);
	if (s.unwind)
		submit_unwind_self(&s);
}

static void read_failed(const char *err)
{
	/* the exit drain fails outside ctx.lock */
	uint64_t n = __atomic_add_fetch(&ctx.read_errors, 1, __ATOMIC_RELAXED);

	if ((n - 1) % READ_ERROR_EVERY == 0)
		WARNING(PLUGIN " plugin: read failed (%" PRIu64 " so far): %s",
			n, err);
}

/* A failing read is logged and counted but reported as success: collectd
 * would otherwise back off the whole plugin for up to a day. */
static int wc_read_cb(user_data_t *ud)
{
	char err[512];

	(void)ud;
	pthread_mutex_lock(&ctx.lock);
	if (wc_engine_read(ctx.engine, err, sizeof(err)))
		read_failed(err);
	/* stamped when the counters were read, not when the read began */
	ctx.read_time = NS_TO_CDTIME_T(wc_engine_read_at(ctx.engine));
	wc_engine_foreach_group(ctx.engine, submit_group, NULL);
	/* after the dispatch, so a file's totals are the values just sent */
	if (wc_engine_maybe_flush(ctx.engine, (time_t)(ctx.read_time >> 30),
				  err, sizeof(err)) < 0)
		read_failed(err);
	submit_self();
	pthread_mutex_unlock(&ctx.lock);
	return 0;
}

/* What a drain between reads empties: the stack tables or the exit ring. */
struct drain {
	int (*fn)(struct wc_engine *e, char *err, size_t errlen);
	bool serialised; /* with the read callback, under ctx.lock */
};

static const struct drain drain_stacks = {wc_engine_drain, true};
static const struct drain drain_exits = {wc_engine_drain_exits, false};

static int wc_drain_cb(user_data_t *ud)
{
	const struct drain *d = ud->data;
	char err[512];

	/* the exit drain locks inside the engine, and runs while a read
	 * flushes: a slow flush must not fill the exit ring */
	if (d->serialised)
		pthread_mutex_lock(&ctx.lock);
	if (d->fn(ctx.engine, err, sizeof(err)))
		read_failed(err);
	if (d->serialised)
		pthread_mutex_unlock(&ctx.lock);
	return 0;
}

static int register_drain(const char *name, const struct drain *d, double every)
{
	user_data_t ud = {.data = (void *)d};

	return plugin_register_complex_read(NULL, name, wc_drain_cb,
					    DOUBLE_TO_CDTIME_T(every), &ud);
}

/* rc -EACCES: the process lacks the capabilities, which a service gets
 * from its settings. */
static int not_started(const char *err, int rc)
{
	ERROR(PLUGIN " plugin: not started: %s%s. The rest of collectd keeps "
		     "running.",
	      err,
	      rc == -EACCES ? "; run collectd as root with its full capability "
			      "set, or grant CAP_BPF and CAP_PERFMON in its "
			      "service's CapabilityBoundingSet and "
			      "AmbientCapabilities"
			    : "");
	return 0;
}

static int wc_init_cb(void)
{
	struct wc_self_stats s;
	char err[1024];
	int rc;

	libbpf_set_print(libbpf_sink);
	/* On failure report success anyway: collectd 5.12 remembers a failed
	 * init and exits 1 at shutdown, which service managers record as a
	 * failure of the whole daemon.  Without a read callback the plugin is
	 * simply off; the error says why. */
	if (!ctx.configured && wc_config_finish(&ctx.cfg, err, sizeof(err)))
		return not_started(err, 0);
	rc = wc_engine_open(&ctx.cfg, &ctx.engine, err, sizeof(err));
	if (rc)
		return not_started(err, rc);
	wc_engine_self(ctx.engine, &s);
	INFO(PLUGIN " plugin: profiling at %u Hz on %u CPUs%s",
	     ctx.cfg.sample_hz, s.ncpus,
	     ctx.cfg.kthreads ? ", kernel threads included" : "");
	if (ctx.cfg.stacks && s.flush.spool_ok)
		INFO(PLUGIN " plugin: stacks of waits from %u us on, top %u "
			    "stacks to %s every %u s",
		     ctx.cfg.min_block_us, ctx.cfg.top_stacks,
		     ctx.cfg.spool_dir, ctx.cfg.flush_interval_s);
	if (ctx.cfg.stacks &&
	    register_drain(PLUGIN "_drain", &drain_stacks, DRAIN_EVERY))
		WARNING(PLUGIN " plugin: no drain between reads: the stack "
			       "tables must hold a whole Interval");
	if (register_drain(PLUGIN "_exits", &drain_exits, EXITS_EVERY))
		WARNING(PLUGIN " plugin: no exit drain between reads: the exit "
			       "ring must hold a whole Interval's exits");
	return plugin_register_complex_read(NULL, PLUGIN, wc_read_cb, 0, NULL);
}

static int wc_shutdown_cb(void)
{
	wc_engine_close(ctx.engine);
	ctx.engine = NULL;
	wc_config_free(&ctx.cfg);
	return 0;
}

static void register_types(void)
{
	static data_source_t us = {"value", DS_TYPE_DERIVE, 0.0, NAN};
	static data_source_t samples = {"value", DS_TYPE_DERIVE, 0.0, NAN};
	static data_source_t threads = {"value", DS_TYPE_GAUGE, 0.0, NAN};
	data_set_t sets[] = {
		{"wallclock_us", 1, &us},
		{"wallclock_samples", 1, &samples},
		{"wallclock_threads", 1, &threads},
	};
	size_t i;

	for (i = 0; i < STATIC_ARRAY_SIZE(sets); i++)
		plugin_register_data_set(&sets[i]);
}

__attribute__((visibility("default"))) void module_register(void)
{
	wc_log_set(log_sink);
	wc_config_init(&ctx.cfg);
	register_types();
	plugin_register_complex_config(PLUGIN, wc_config_cb);
	plugin_register_init(PLUGIN, wc_init_cb);
	plugin_register_shutdown(PLUGIN, wc_shutdown_cb);
}
