/* wc_collector.c - see wc_collector.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "core/wc_collector.h" /* before the skeleton: it names our types */
#include "bpf/wallclock.skel.h"
#include "util/wc_cap.h"
#include "util/wc_clock.h"
#include "util/wc_log.h"
#include "core/wc_walk.h"

#define ITER_BUF_BYTES (64 * 1024)
/* The walk's array: twice a range's worth of records (896 KiB). */
#define WALK_RECS (2u * WC_WALK_THREADS)
#define REC_BYTES sizeof(struct wc_task_rec)

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

struct wc_collector {
	struct wallclock_bpf *skel;
	struct bpf_link *switch_link;
	struct bpf_link *stale_links[2]; /* wc_migrate, wc_wakeup; or NULL */
	struct bpf_link *iter_link;
	struct bpf_link *waits_link; /* wc_waits' iterator */
	struct wc_walk *walk;	   /* NULL: the kernel has no open-coded walk */
	bool walk_failing;	   /* logged; quiet until a walk works again */
	struct wc_stack_key *keys; /* drain buffers, stack_entries each */
	uint64_t *weights;
	uint64_t *hashes; /* a chunk of a stack table at a time */
	struct wc_stack *chunk;
	struct wc_stack_short *short_chunk;
	uint32_t stack_entries;
	struct wc_held_bucket *held; /* mapped; NULL without stacks */
	size_t held_bytes;
	struct wc_uw_row *uw_rows; /* mapped; NULL without unwind tables */
	bool unwind_refused;	   /* the kernel would not load the walk */
	size_t uw_rows_bytes;
	uint32_t held_mask;
	struct bpf_link **perf_links; /* one per sampled CPU */
	struct wc_counters *per_cpu;  /* ncpus_possible, for reading counters */
	unsigned int nperf;
	struct ring_buffer *exit_ring;
	unsigned long ring_bytes;
	unsigned long ring_drained; /* bytes this drain of the ring found */
	unsigned long ring_peak;    /* the most a drain found since a poll */
	unsigned long ring_fill;    /* ring_peak as of the last poll */
	int ncpus_possible;
	/* valid during a poll only */
	wc_rec_fn fn;
	void *arg;
	/* whole records from its start: the iterator's are handed over in
	 * place */
	_Alignas(struct wc_task_rec) unsigned char iter_buf[ITER_BUF_BYTES +
							    REC_BYTES];
};

/* Say what is missing before the kernel says only "EPERM"; how to give
 * it is the caller's to say (sudo, or a service's settings). */
static int check_caps(char *err, size_t errlen)
{
	uint64_t d;

	if (wc_cap_effective(&d))
		return 0; /* cannot tell: let the kernel decide */
	if (wc_cap_in(d, CAP_SYS_ADMIN) ||
	    (wc_cap_in(d, CAP_BPF) && wc_cap_in(d, CAP_PERFMON)))
		return 0;
	wc_err(err, errlen,
	       "missing capabilities: loading the profiler needs CAP_BPF and "
	       "CAP_PERFMON (or CAP_SYS_ADMIN), and this process has%s%s%s of "
	       "them",
	       wc_cap_in(d, CAP_BPF) ? " CAP_BPF" : "",
	       wc_cap_in(d, CAP_PERFMON) ? " CAP_PERFMON" : "",
	       wc_cap_in(d, CAP_BPF) || wc_cap_in(d, CAP_PERFMON) ? " only"
								  : " none");
	return -EACCES;
}

static int check_btf(char *err, size_t errlen)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		return 0;
	return wc_err(err, errlen,
		      "the kernel has no BTF (/sys/kernel/btf/vmlinux: %s): "
		      "wallclock needs a kernel built with "
		      "CONFIG_DEBUG_INFO_BTF=y",
		      strerror(errno));
}

/* The sched_switch tracepoint passes prev_state (5.18 and later): its
 * BTF prototype has the context and four arguments. */
static bool switch_has_prev_state(const struct btf *btf)
{
	int id = btf__find_by_name_kind(btf, "btf_trace_sched_switch",
					BTF_KIND_TYPEDEF);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;

	while (t && (btf_is_typedef(t) || btf_is_ptr(t)))
		t = btf__type_by_id(btf, t->type);
	return t && btf_is_func_proto(t) && btf_vlen(t) >= 5;
}

/*
 * What the programs need of the kernel, looked at before loading them:
 * below 6.1 (the oldest kernel the suite runs on) a missing one is named,
 * rather than left to a verifier's message.
 */
const char *wc_collector_btf_lacks(const struct btf *btf)
{
	if (!switch_has_prev_state(btf))
		return "the prev_state argument of the sched_switch "
		       "tracepoint (5.18)";
	if (btf__find_by_name_kind(btf, "bpf_iter__task", BTF_KIND_STRUCT) < 0)
		return "the BPF task iterator (5.8)";
	return NULL;
}

/* 1 the kernel has the map type, 0 not; -1 if it would not say. */
static int probe_map(enum bpf_map_type type, const char *what, char *err,
		     size_t errlen)
{
	int rc = libbpf_probe_bpf_map_type(type, NULL);

	if (rc >= 0)
		return rc;
	return wc_err(
		err, errlen,
		"the kernel refused bpf() asked for %s (%s): check kernel "
		"lockdown (/sys/kernel/security/lockdown) and any "
		"seccomp filter or security module confining collectd",
		what, strerror(-rc));
}

static int check_kernel(char *err, size_t errlen)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const char *missing = btf ? wc_collector_btf_lacks(btf)
				  : "readable kernel BTF";
	int rc = 1;

	btf__free(btf);
	if (!missing) {
		rc = probe_map(BPF_MAP_TYPE_TASK_STORAGE, "task storage", err,
			       errlen);
		missing = rc == 0 ? "BPF task storage (5.11)" : NULL;
	}
	if (!missing && rc > 0) {
		rc = probe_map(BPF_MAP_TYPE_RINGBUF, "a ring buffer", err,
			       errlen);
		missing = rc == 0 ? "the BPF ring buffer (5.8)" : NULL;
	}
	if (rc < 0)
		return -1;
	if (!missing)
		return 0;
	return wc_err(err, errlen,
		      "this kernel lacks %s: wallclock needs Linux 6.1 or "
		      "later (the oldest it is tested on, Debian 12's)",
		      missing);
}

static unsigned int round_pow2(unsigned long v)
{
	unsigned long p = 1;

	while (p < v)
		p <<= 1;
	return (unsigned int)p;
}

/* Stacks copied out of the kernel per system call: 256 KiB of buffer. */
#define STACK_CHUNK 256u

/* Without stacks the tables still exist (the programs name them) but
 * shrink to one entry. */
static int size_stacks(struct wc_collector *c,
		       const struct wc_collector_opts *o)
{
	uint32_t n = o->stacks ? o->stack_entries : 1;
	int rc;

	c->stack_entries = n;
	rc = bpf_map__set_max_entries(c->skel->maps.stacks, n);
	if (!rc)
		rc = bpf_map__set_max_entries(c->skel->maps.deep_stacks,
					      n >= 4 ? n / 4 : 1);
	if (!rc)
		rc = bpf_map__set_max_entries(c->skel->maps.stack_counts, n);
	c->held_mask = o->stacks ? round_pow2(o->held_stacks / WC_HELD_WAYS) - 1
				 : 0;
	c->skel->rodata->held_mask = c->held_mask;
	if (!rc)
		rc = bpf_map__set_max_entries(c->skel->maps.held,
					      c->held_mask + 1);
	if (rc || !o->stacks || c->keys)
		return rc;
	c->keys = calloc(n, sizeof(*c->keys));
	c->weights = calloc(n, sizeof(*c->weights));
	c->hashes = calloc(STACK_CHUNK, sizeof(*c->hashes));
	c->chunk = calloc(STACK_CHUNK, sizeof(*c->chunk));
	c->short_chunk = calloc(STACK_CHUNK, sizeof(*c->short_chunk));
	return c->keys && c->weights && c->hashes && c->chunk && c->short_chunk
		       ? 0
		       : -ENOMEM;
}

/* Without unwind tables the maps shrink to an entry or so. */
static int size_unwind(struct wc_collector *c,
		       const struct wc_collector_opts *o)
{
	bool on = o->stacks && o->unwind_rows && !c->unwind_refused;
	int rc;

	c->skel->rodata->unwind_tables = on;
	c->skel->rodata->measure_scan = on && o->measure_scan;
	rc = bpf_map__set_max_entries(c->skel->maps.uw_rows,
				      on ? o->unwind_rows : 1);
	if (!rc)
		rc = bpf_map__set_max_entries(c->skel->maps.uw_files,
					      on ? o->unwind_files : 1);
	if (!rc)
		rc = bpf_map__set_max_entries(c->skel->maps.uw_procs,
					      on ? o->unwind_procs : 64);
	if (!rc)
		rc = bpf_map__set_max_entries(c->skel->maps.uw_wants,
					      on ? 1024 : 1);
	return rc;
}

/* What the running kernel has that some programs need: read from its BTF
 * once per load. */
struct kernel_has {
	bool walks;  /* the open-coded task iterator (6.7+) */
	bool delays; /* delayed dequeues (6.12+): stale.bpf.h loads */
};

static bool btf_has_walks(const struct btf *btf)
{
	static const char *const need[] = {
		"bpf_iter_task_new", "bpf_task_from_pid", "bpf_rcu_read_lock"};
	bool ok = btf != NULL;
	size_t i;

	for (i = 0; ok && i < sizeof(need) / sizeof(need[0]); i++)
		ok = btf__find_by_name_kind(btf, need[i], BTF_KIND_FUNC) >= 0;
	return ok;
}

static bool btf_has_delays(const struct btf *btf)
{
	int id = btf ? btf__find_by_name_kind(btf, "sched_entity",
					      BTF_KIND_STRUCT)
		     : -1;
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m = t ? btf_members(t) : NULL;
	int i;

	for (i = 0; m && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, m[i].name_off),
			    "sched_delayed"))
			return true;
	return false;
}

static void kernel_has(struct kernel_has *k)
{
	struct btf *btf = btf__load_vmlinux_btf();

	k->walks = btf_has_walks(btf);
	k->delays = btf_has_delays(btf);
	btf__free(btf);
}

bool wc_collector_kernel_walks(void)
{
	struct kernel_has k;

	kernel_has(&k);
	return k.walks;
}

bool wc_collector_kernel_delays(void)
{
	struct kernel_has k;

	kernel_has(&k);
	return k.delays;
}

/* Open the object and size it for o; k->walks says whether the
 * open-coded walk's program is loaded (without it, its array shrinks to
 * one record). */
static int prepare(struct wc_collector *c, const struct wc_collector_opts *o,
		   const struct kernel_has *k, char *err, size_t errlen)
{
	unsigned long bytes = (unsigned long)o->exit_ring_kib * 1024;
	bool with_walk = k->walks;
	__u32 walk_recs = 1;
	int rc;

	c->skel = wallclock_bpf__open();
	if (!c->skel)
		return wc_err(err, errlen, "opening the BPF object failed: %s",
			      strerror(errno));
	c->skel->rodata->include_kthreads = o->kthreads;
	c->skel->rodata->sample_period_ns = 1000000000ULL / o->sample_hz;
	c->skel->rodata->stacks_enabled = o->stacks;
	c->skel->rodata->min_block_ns = (__u64)o->min_block_us * 1000;
	c->skel->rodata->load_mono_ns = wc_clock_ns(CLOCK_MONOTONIC);
	rc = size_stacks(c, o);
	if (!rc)
		rc = size_unwind(c, o);
	if (rc)
		return wc_err(err, errlen, "sizing the stack tables failed: %s",
			      strerror(-rc));
	bytes = round_pow2(bytes < 4096 ? 4096 : bytes);
	c->ring_bytes = bytes;
	rc = bpf_map__set_max_entries(c->skel->maps.exits, (__u32)bytes);
	if (with_walk)
		walk_recs = o->walk.recs ? o->walk.recs : WALK_RECS;
	/* an array the kernel refuses: the fallback below */
	if (with_walk && o->walk.refused)
		walk_recs = 0;
	if (!rc)
		rc = bpf_map__set_max_entries(c->skel->maps.snaps, walk_recs);

	if (rc)
		return wc_err(err, errlen,
			      "sizing the exit ring and the walk's array "
			      "failed: %s",
			      strerror(-rc));
	bpf_program__set_autoload(c->skel->progs.wc_snap, with_walk);
	bpf_program__set_autoload(c->skel->progs.wc_migrate, k->delays);
	bpf_program__set_autoload(c->skel->progs.wc_wakeup, k->delays);
	return 0;
}

/* A new object, prepared and loaded: non-zero if it could not be prepared
 * (err says why); *load_rc gets what the load returned. */
static int try_load(struct wc_collector *c, const struct wc_collector_opts *o,
		    const struct kernel_has *k, int *load_rc, char *err,
		    size_t errlen)
{
	wallclock_bpf__destroy(c->skel);
	c->skel = NULL;
	if (prepare(c, o, k, err, errlen))
		return -1;
	*load_rc = wallclock_bpf__load(c->skel);
	return 0;
}

/* Load, with the open-coded walk if the kernel has what it needs; if it
 * will not load with it, once more without (the iterator reads alone). */
static int load(struct wc_collector *c, const struct wc_collector_opts *o,
		char *err, size_t errlen)
{
	struct kernel_has k;
	int rc;

	kernel_has(&k);
	if (o->walk.iterator_only)
		k.walks = false;
	else if (!k.walks)
		wc_log(WC_LOG_INFO,
		       "this kernel has no open-coded task iterator (6.7 "
		       "and later): threads are read with the task iterator "
		       "(slower reads at thousands of threads)");
	if (try_load(c, o, &k, &rc, err, errlen))
		return -1;
	if (rc && rc != -EPERM && c->skel->rodata->unwind_tables) {
		wc_log(WC_LOG_WARN,
		       "the user stack walk by unwind tables did not load "
		       "(%s): walking user stacks by frame pointers",
		       strerror(-rc));
		c->unwind_refused = true;
		if (try_load(c, o, &k, &rc, err, errlen))
			return -1;
	}
	if (rc && rc != -EPERM && k.walks) {
		wc_log(WC_LOG_WARN,
		       "the open-coded thread walk did not load (%s): reading "
		       "with the task iterator",
		       strerror(-rc));
		k.walks = false;
		if (try_load(c, o, &k, &rc, err, errlen))
			return -1;
	}
	if (rc == -EPERM)
		return wc_err(err, errlen,
			      "the kernel refused to load the BPF programs "
			      "(%s): check the capabilities above and kernel "
			      "lockdown (/sys/kernel/security/lockdown)",
			      strerror(-rc));
	if (rc)
		return wc_err(err, errlen,
			      "loading the BPF programs failed: %s (the "
			      "libbpf messages above say which check failed)",
			      strerror(-rc));
	return 0;
}

static int attach_sched(struct wc_collector *c, char *err, size_t errlen)
{
	c->switch_link = bpf_program__attach(c->skel->progs.wc_switch);
	if (!c->switch_link)
		return wc_err(
			err, errlen, "attaching %s failed: %s",
			bpf_program__section_name(c->skel->progs.wc_switch),
			strerror(errno));
	if (bpf_program__autoload(c->skel->progs.wc_migrate)) {
		c->stale_links[0] =
			bpf_program__attach(c->skel->progs.wc_migrate);
		c->stale_links[1] =
			bpf_program__attach(c->skel->progs.wc_wakeup);
		if (!c->stale_links[0] || !c->stale_links[1])
			return wc_err(err, errlen,
				      "attaching the migration and wake-up "
				      "hooks failed: %s",
				      strerror(errno));
	}
	c->iter_link = bpf_program__attach_iter(c->skel->progs.wc_iter, NULL);
	c->waits_link = c->iter_link ? bpf_program__attach_iter(
					       c->skel->progs.wc_waits, NULL)
				     : NULL;
	if (!c->iter_link || !c->waits_link)
		return wc_err(err, errlen,
			      "attaching the task iterator failed: %s",
			      strerror(errno));
	return 0;
}

static int perf_event_open_cpu(unsigned int hz, int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		/* cpu-clock counts nanoseconds: a fixed period is exact */
		.sample_period = 1000000000ULL / hz,
	};

	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

static int paranoia(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = -99;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -99;
		fclose(f);
	}
	return v;
}

static int attach_cpu(struct wc_collector *c, unsigned int hz, int cpu,
		      char *err, size_t errlen)
{
	struct bpf_link *link;
	int fd = perf_event_open_cpu(hz, cpu);

	if (fd < 0 && (errno == ENODEV || errno == ENOENT))
		return 0; /* went offline meanwhile */
	/* the capabilities were checked before: not for want of them */
	if (fd < 0 && (errno == EPERM || errno == EACCES))
		return wc_err(err, errlen,
			      "opening the cpu-clock perf event on CPU %d "
			      "failed: %s, despite CAP_PERFMON: check any "
			      "seccomp filter or security module confining "
			      "collectd (kernel.perf_event_paranoid is %d)",
			      cpu, strerror(errno), paranoia());
	if (fd < 0)
		return wc_err(err, errlen,
			      "opening the cpu-clock perf event on CPU %d "
			      "failed: %s (kernel.perf_event_paranoid is %d)",
			      cpu, strerror(errno), paranoia());
	link = bpf_program__attach_perf_event(c->skel->progs.wc_sample, fd);
	if (!link) {
		int e = errno;

		close(fd);
		return wc_err(err, errlen,
			      "attaching the sampler to CPU %d failed: %s", cpu,
			      strerror(e));
	}
	c->perf_links[c->nperf++] = link;
	return 0;
}

/* /sys/devices/system/cpu/online: "0-3,5,7-8" */
static int attach_sampler(struct wc_collector *c, unsigned int hz, char *err,
			  size_t errlen)
{
	char list[1024], *tok, *save = NULL;
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");

	if (!f || !fgets(list, sizeof(list), f)) {
		if (f)
			fclose(f);
		return wc_err(err, errlen,
			      "cannot read /sys/devices/system/cpu/online");
	}
	fclose(f);
	c->perf_links =
		calloc((size_t)c->ncpus_possible, sizeof(*c->perf_links));
	if (!c->perf_links)
		return wc_err(err, errlen, "out of memory");
	for (tok = strtok_r(list, ",\n", &save); tok;
	     tok = strtok_r(NULL, ",\n", &save)) {
		int lo, hi, cpu;

		if (sscanf(tok, "%d-%d", &lo, &hi) != 2)
			hi = lo = atoi(tok);
		for (cpu = lo; cpu <= hi && cpu < c->ncpus_possible; cpu++)
			if (attach_cpu(c, hz, cpu, err, errlen))
				return -1;
	}
	return 0;
}

static int on_exit_record(void *ctx, void *data, size_t size)
{
	struct wc_collector *c = ctx;

	/* a ring record is its 8-byte header plus the data, 8-aligned */
	c->ring_drained += 8 + ((size + 7) & ~7UL);
	if (size >= REC_BYTES)
		c->fn(c->arg, data, 1);
	return 0;
}

/* A memory-mapped array map, whole pages: NULL on failure. */
static void *map_array(const struct bpf_map *m, size_t *bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t n = (size_t)bpf_map__max_entries(m) * bpf_map__value_size(m);
	void *p;

	n = (n + page - 1) / page * page;
	p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m),
		 0);
	if (p == MAP_FAILED)
		return NULL;
	*bytes = n;
	return p;
}

static int map_held(struct wc_collector *c)
{
	c->held = map_array(c->skel->maps.held, &c->held_bytes);
	return c->held ? 0 : -1;
}

static int map_unwind(struct wc_collector *c)
{
	c->uw_rows = map_array(c->skel->maps.uw_rows, &c->uw_rows_bytes);
	return c->uw_rows ? 0 : -1;
}

/* What a map's entries take, roughly: the kernel adds its own per entry
 * to a hash (a list node and the key). */
static uint64_t map_bytes(const struct bpf_map *m, size_t extra)
{
	return (uint64_t)bpf_map__max_entries(m) *
	       (bpf_map__key_size(m) + bpf_map__value_size(m) + extra);
}

bool wc_collector_unwind(const struct wc_collector *c,
			 struct wc_collector_uw *out)
{
	const struct wallclock_bpf *s = c->skel;

	memset(out, 0, sizeof(*out));
	if (!c->uw_rows)
		return false;
	out->rows = c->uw_rows;
	out->nrows = bpf_map__max_entries(s->maps.uw_rows);
	out->nfiles = bpf_map__max_entries(s->maps.uw_files);
	out->files_fd = bpf_map__fd(s->maps.uw_files);
	out->wants_fd = bpf_map__fd(s->maps.uw_wants);
	out->map_bytes = c->uw_rows_bytes + map_bytes(s->maps.uw_files, 48) +
			 map_bytes(s->maps.uw_wants, 48) +
			 map_bytes(s->maps.uw_procs, 64);
	return true;
}

int wc_collector_open(const struct wc_collector_opts *o,
		      struct wc_collector **out, char *err, size_t errlen)
{
	struct wc_collector *c;
	int rc = check_caps(err, errlen);

	if (rc)
		return rc;
	if (check_btf(err, errlen) || check_kernel(err, errlen))
		return -1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return wc_err(err, errlen, "out of memory");
	c->ncpus_possible = libbpf_num_possible_cpus();
	if (c->ncpus_possible <= 0) {
		free(c);
		return wc_err(err, errlen, "cannot count the possible CPUs");
	}
	c->per_cpu = calloc((size_t)c->ncpus_possible, sizeof(*c->per_cpu));
	if (!c->per_cpu) {
		free(c);
		return wc_err(err, errlen, "out of memory");
	}
	if (load(c, o, err, errlen) || attach_sched(c, err, errlen) ||
	    attach_sampler(c, o->sample_hz, err, errlen))
		goto fail;
	if (bpf_program__autoload(c->skel->progs.wc_snap) &&
	    wc_walk_new(bpf_program__fd(c->skel->progs.wc_snap),
			bpf_map__fd(c->skel->maps.snaps),
			bpf_map__max_entries(c->skel->maps.snaps),
			&c->skel->bss->snap, &c->walk)) {
		wc_err(err, errlen, "setting up the task walk failed: %s",
		       strerror(errno));
		goto fail;
	}
	/* without it the programs copy out every stack each time they take it */
	if (o->stacks && map_held(c))
		wc_log(WC_LOG_WARN,
		       "mapping the held-stacks set failed (%s): stacks are "
		       "copied out of the kernel every time they are taken",
		       strerror(errno));
	if (c->skel->rodata->unwind_tables && map_unwind(c)) {
		wc_err(err, errlen,
		       "mapping the unwind tables' rows failed: %s",
		       strerror(errno));
		goto fail;
	}
	c->exit_ring = ring_buffer__new(bpf_map__fd(c->skel->maps.exits),
					on_exit_record, c, NULL);
	if (!c->exit_ring) {
		wc_err(err, errlen, "opening the exit ring failed: %s",
		       strerror(errno));
		goto fail;
	}
	*out = c;
	return 0;
fail:
	wc_collector_close(c);
	return -1;
}

/* The whole records read so far, in place; a partial one moves to the
 * front for the next read to complete. */
static void deliver(struct wc_collector *c, size_t *have)
{
	const struct wc_task_rec *recs = (const void *)c->iter_buf;
	size_t i, n = *have / REC_BYTES, used = n * REC_BYTES;

	for (i = 0; c->walk && i < n; i++)
		wc_walk_note(c->walk, recs[i].tgid);
	if (n)
		c->fn(c->arg, recs, n);
	memmove(c->iter_buf, c->iter_buf + used, *have - used);
	*have -= used;
}

static int run_iterator(struct wc_collector *c, char *err, size_t errlen)
{
	int fd = bpf_iter_create(bpf_link__fd(c->iter_link));
	size_t have = 0;
	ssize_t n;

	if (fd < 0)
		return wc_err(err, errlen, "starting the task iterator: %s",
			      strerror(errno));
	for (;;) {
		n = read(fd, c->iter_buf + have, ITER_BUF_BYTES);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		deliver(c, &have);
	}
	close(fd);
	if (n < 0)
		return wc_err(err, errlen, "reading the task iterator: %s",
			      strerror(errno));
	return 0;
}

static int consume_exits(struct wc_collector *c)
{
	int rc;

	c->ring_drained = 0;
	rc = ring_buffer__consume(c->exit_ring);
	if (c->ring_drained > c->ring_peak)
		c->ring_peak = c->ring_drained;
	return rc;
}

/* The open-coded walk where it works and knows where the threads are,
 * else (a first read, an older kernel, a failed walk) the iterator. */
static int walk(struct wc_collector *c, char *err, size_t errlen)
{
	int rc;

	if (!c->walk)
		return run_iterator(c, err, errlen);
	wc_walk_begin(c->walk);
	if (!wc_walk_planned(c->walk))
		return run_iterator(c, err, errlen);
	rc = wc_walk_run(c->walk, c->fn, c->arg);
	if (rc == 0) {
		c->walk_failing = false;
		return 0;
	}
	if (!c->walk_failing)
		wc_log(WC_LOG_WARN,
		       "the task walk failed (%s): reading with the task "
		       "iterator until it works again",
		       strerror(errno));
	c->walk_failing = true;
	return run_iterator(c, err, errlen);
}

int wc_collector_poll(struct wc_collector *c, wc_rec_fn fn, void *arg,
		      char *err, size_t errlen)
{
	int rc;

	c->fn = fn;
	c->arg = arg;
	/* Live threads first: a thread dying meanwhile then has its final
	 * record after its last live one, never before. */
	rc = walk(c, err, errlen);
	if (consume_exits(c) < 0 && rc == 0)
		rc = wc_err(err, errlen, "draining the exit ring: %s",
			    strerror(errno));
	c->ring_fill = c->ring_peak;
	c->ring_peak = 0;
	c->fn = NULL;
	c->arg = NULL;
	return rc;
}

int wc_collector_drain_exits(struct wc_collector *c, wc_rec_fn fn, void *arg,
			     char *err, size_t errlen)
{
	int rc = 0;

	c->fn = fn;
	c->arg = arg;
	if (consume_exits(c) < 0)
		rc = wc_err(err, errlen, "draining the exit ring: %s",
			    strerror(errno));
	c->fn = NULL;
	c->arg = NULL;
	return rc;
}

/* The whole table in as few system calls as the kernel allows: the batch
 * call takes what fits and says where to go on. */
static int drain_batch(struct wc_collector *c, int fd, uint32_t *got)
{
	struct wc_stack_key token;
	bool first = true;
	uint32_t total = 0;

	for (;;) {
		uint32_t n = c->stack_entries - total;
		int rc;

		if (n == 0)
			break;
		rc = bpf_map_lookup_and_delete_batch(
			fd, first ? NULL : &token, &token, c->keys + total,
			c->weights + total, &n, NULL);
		first = false;
		total += n;
		/* ENOSPC: the next bucket does not fit in what is left of the
		 * buffer (the programs refilled the table as it drained);
		 * the rest waits for the next read */
		if (rc == -ENOENT || rc == -ENOSPC)
			break;
		if (rc) {
			*got = total;
			return rc;
		}
	}
	*got = total;
	return 0;
}

int wc_collector_drain_stacks(struct wc_collector *c, wc_weight_fn fn,
			      void *arg, char *err, size_t errlen)
{
	uint32_t n = 0;
	int rc;

	if (!c->keys)
		return 0;
	rc = drain_batch(c, bpf_map__fd(c->skel->maps.stack_counts), &n);
	if (n)
		fn(arg, c->keys, c->weights, n);
	if (rc)
		return wc_err(err, errlen, "draining the stack weights: %s",
			      strerror(-rc));
	return 0;
}

static void widen(const struct wc_stack_short *in, struct wc_stack *out)
{
	out->nr = in->nr < WC_SHORT_DEPTH ? in->nr : WC_SHORT_DEPTH;
	out->pad = 0;
	memcpy(out->ip, in->ip, out->nr * sizeof(out->ip[0]));
}

/* One stack table, a chunk per system call, bounded by its size even if
 * the programs refill it as fast as it empties. */
static int drain_table(struct wc_collector *c, struct bpf_map *map,
		       bool short_layout, wc_stack_fn fn, void *arg)
{
	uint32_t total = 0, max = bpf_map__max_entries(map);
	int fd = bpf_map__fd(map);
	__u64 token;
	bool first = true;

	while (total < max) {
		uint32_t i, n = STACK_CHUNK;
		void *vals = short_layout ? (void *)c->short_chunk
					  : (void *)c->chunk;
		int rc = bpf_map_lookup_and_delete_batch(
			fd, first ? NULL : &token, &token, c->hashes, vals, &n,
			NULL);

		first = false;
		for (i = 0; i < n; i++) {
			if (short_layout)
				widen(&c->short_chunk[i], &c->chunk[0]);
			fn(arg, c->hashes[i],
			   short_layout ? &c->chunk[0] : &c->chunk[i]);
		}
		total += n;
		if (rc == -ENOENT || rc == -ENOSPC)
			return 0;
		if (rc)
			return rc;
	}
	return 0;
}

int wc_collector_drain_stack_table(struct wc_collector *c, wc_stack_fn fn,
				   void *arg, char *err, size_t errlen)
{
	int rc;

	if (!c->keys)
		return 0;
	rc = drain_table(c, c->skel->maps.stacks, true, fn, arg);
	if (!rc)
		rc = drain_table(c, c->skel->maps.deep_stacks, false, fn, arg);
	if (rc)
		return wc_err(err, errlen, "draining the stack table: %s",
			      strerror(-rc));
	return 0;
}

bool wc_collector_take_stack(struct wc_collector *c, uint64_t hash,
			     struct wc_stack *out)
{
	struct wc_stack_short sh;
	__u64 key = hash;

	if (!c->keys)
		return false;
	if (bpf_map_lookup_and_delete_elem(bpf_map__fd(c->skel->maps.stacks),
					   &key, &sh) == 0) {
		widen(&sh, out);
		return true;
	}
	return bpf_map_lookup_and_delete_elem(
		       bpf_map__fd(c->skel->maps.deep_stacks), &key, out) == 0;
}

/* Relaxed stores of whole words: a program reads each word once and
 * compares it, so it sees the old hash or the new one, never a mix. */
void wc_collector_held(struct wc_collector *c, uint64_t hash)
{
	struct wc_held_bucket *b;
	int w, free_way = -1;

	if (!c->held || hash < WC_STACK_LABELS)
		return;
	b = &c->held[wc_held_bucket_of(hash, c->held_mask)];
	for (w = 0; w < WC_HELD_WAYS; w++) {
		uint64_t v = __atomic_load_n(&b->hash[w], __ATOMIC_RELAXED);

		if (v == hash)
			return;
		if (v == 0 && free_way < 0)
			free_way = w;
	}
	/* a full bucket: one of its stacks is only stored again */
	if (free_way < 0)
		free_way = (int)((hash >> 40) % WC_HELD_WAYS);
	__atomic_store_n(&b->hash[free_way], hash, __ATOMIC_RELAXED);
}

void wc_collector_let_go(struct wc_collector *c, uint64_t hash)
{
	struct wc_held_bucket *b;
	int w;

	if (!c->held || hash < WC_STACK_LABELS)
		return;
	b = &c->held[wc_held_bucket_of(hash, c->held_mask)];
	for (w = 0; w < WC_HELD_WAYS; w++)
		if (__atomic_load_n(&b->hash[w], __ATOMIC_RELAXED) == hash)
			__atomic_store_n(&b->hash[w], 0, __ATOMIC_RELAXED);
}

void wc_collector_new_window(struct wc_collector *c)
{
	c->skel->bss->window_start_ns = wc_clock_ns(CLOCK_MONOTONIC);
}

void wc_collector_pause_stacks(struct wc_collector *c, bool paused)
{
	__atomic_store_n(&c->skel->bss->stacks_paused, paused ? 1u : 0u,
			 __ATOMIC_RELAXED);
}

int wc_collector_charge_waits(struct wc_collector *c, uint32_t max_walks,
			      char *err, size_t errlen)
{
	char buf[64];
	ssize_t n;
	int fd;

	c->skel->bss->wait_walks = max_walks;
	fd = bpf_iter_create(bpf_link__fd(c->waits_link));
	if (fd < 0)
		return wc_err(err, errlen, "starting the waits' iterator: %s",
			      strerror(errno));
	/* it writes nothing: reading to the end runs it over every task */
	while ((n = read(fd, buf, sizeof(buf))) > 0 ||
	       (n < 0 && errno == EINTR))
		;
	close(fd);
	if (n < 0)
		return wc_err(err, errlen, "reading the waits' iterator: %s",
			      strerror(errno));
	return 0;
}

void wc_collector_counters(const struct wc_collector *c,
			   struct wc_counters *sum)
{
	__u32 zero = 0;
	int cpu, k;

	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(bpf_map__fd(c->skel->maps.counters), &zero,
				c->per_cpu) != 0)
		return;
	for (cpu = 0; cpu < c->ncpus_possible; cpu++)
		for (k = 0; k < WC_CNT_NR; k++)
			sum->v[k] += c->per_cpu[cpu].v[k];
}

double wc_collector_exit_ring_fill(const struct wc_collector *c)
{
	return c->ring_bytes ? (double)c->ring_fill / c->ring_bytes : 0;
}

void wc_collector_walk_stats(const struct wc_collector *c,
			     struct wc_walk_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (c->walk)
		wc_walk_stats(c->walk, out);
	out->loaded = c->walk != NULL;
}

unsigned int wc_collector_ncpus(const struct wc_collector *c)
{
	return c->nperf;
}

void wc_collector_close(struct wc_collector *c)
{
	unsigned int i;

	if (!c)
		return;
	if (c->held)
		munmap(c->held, c->held_bytes);
	if (c->uw_rows)
		munmap(c->uw_rows, c->uw_rows_bytes);
	ring_buffer__free(c->exit_ring);
	for (i = 0; i < c->nperf; i++)
		bpf_link__destroy(c->perf_links[i]);
	free(c->perf_links);
	bpf_link__destroy(c->iter_link);
	bpf_link__destroy(c->waits_link);
	wc_walk_free(c->walk);
	bpf_link__destroy(c->switch_link);
	bpf_link__destroy(c->stale_links[0]);
	bpf_link__destroy(c->stale_links[1]);
	wallclock_bpf__destroy(c->skel);
	free(c->per_cpu);
	free(c->keys);
	free(c->weights);
	free(c->hashes);
	free(c->chunk);
	free(c->short_chunk);
	free(c);
}
