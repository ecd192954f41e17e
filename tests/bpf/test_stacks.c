/*
 * test_stacks.c - stack capture in the kernel, seen through the collector:
 * on-CPU stacks land in the functions that burn the CPU, off-CPU stacks
 * carry the kernel stack the thread blocked in and the user stack it
 * blocked with, their time matches the waits, and waits shorter than the
 * threshold are never walked.
 *
 * Needs root (BPF); without it every test says SKIP with the reason.  The
 * workload (argv[1]) is built with frame pointers; its function addresses
 * come from nm and its load address from /proc/PID/maps, kernel symbols
 * from /proc/kallsyms, so nothing here depends on the symbolizer.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "bpf_test.h"
#include "check.h"
#include "core/wc_collector.h"
#include "util/wc_log.h"

#define MAX_WEIGHTS 65536
#define MAX_KSYMS 400000

static const char *workload;
static char skip_reason[256];

/* --- symbols -------------------------------------------------------- */

struct ksym {
	uint64_t addr;
	char name[64];
};

static struct ksym *ksyms;
static size_t nksyms;

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int load_kallsyms(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], type, name[256];
	unsigned long long addr;

	if (!f)
		return -1;
	ksyms = calloc(MAX_KSYMS, sizeof(*ksyms));
	while (ksyms && nksyms < MAX_KSYMS && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3)
			continue;
		if ((type != 't' && type != 'T') || addr == 0)
			continue;
		ksyms[nksyms].addr = addr;
		memcpy(ksyms[nksyms].name, name,
		       sizeof(ksyms[nksyms].name) - 1);
		nksyms++;
	}
	fclose(f);
	qsort(ksyms, nksyms, sizeof(*ksyms), cmp_ksym);
	return nksyms ? 0 : -1;
}

static const char *ksym_name(uint64_t addr)
{
	size_t lo = 0, hi = nksyms;

	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (ksyms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return nksyms && ksyms[lo].addr <= addr ? ksyms[lo].name : "?";
}

/* A function of the workload: its offset in the file (PIE: link address)
 * and size, from nm. */
struct func {
	const char *name;
	uint64_t lo, hi;
};

static struct func funcs[] = {
	{"burn_cpu", 0, 0}, {"sleep_a_while", 0, 0}, {"wait_for_disk", 0, 0},
	{"spinner", 0, 0},  {"sleeper", 0, 0},	     {"disk_writer", 0, 0},
	{"descend", 0, 0},  {"wait_in_read", 0, 0},  {"wait_on_cond", 0, 0},
};
#define NFUNCS (sizeof(funcs) / sizeof(funcs[0]))

static int load_funcs(void)
{
	char cmd[PATH_MAX + 32], line[512], name[256], type;
	unsigned long long addr, size;
	size_t i, found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -S '%s'", workload);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "%llx %llx %c %255s", &addr, &size, &type,
			   name) != 4)
			continue;
		for (i = 0; i < NFUNCS; i++)
			if (strcmp(name, funcs[i].name) == 0) {
				funcs[i].lo = addr;
				funcs[i].hi = addr + size;
				found++;
			}
	}
	pclose(p);
	return found == NFUNCS ? 0 : -1;
}

/* Load bias of the workload in pid: start minus offset of its mapping at
 * file offset 0 (a PIE links at 0). */
static int load_bias(pid_t pid, uint64_t *bias)
{
	char path[64], line[1024];
	FILE *f;
	int rc = -1;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;

		if (!strstr(line, "workload"))
			continue;
		if (sscanf(line, "%llx-%llx %*s %llx", &lo, &hi, &off) == 3 &&
		    off == 0) {
			*bias = lo;
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

static const char *user_func(uint64_t ip, uint64_t bias)
{
	size_t i;

	for (i = 0; i < NFUNCS; i++)
		if (ip - bias >= funcs[i].lo && ip - bias < funcs[i].hi)
			return funcs[i].name;
	return NULL;
}

/* --- one profiled run ------------------------------------------------ */

struct weight {
	struct wc_stack_key k;
	uint64_t w;
};

struct run {
	struct weight *w;
	size_t n;
	uint64_t bias;
	pid_t pid;
	struct wc_counters cnt;
	struct wc_collector *c;
	/* called after each poll's drain while the workload runs */
	void (*step)(struct run *r, int polls);
};

static void on_weights(void *arg, const struct wc_stack_key *k,
		       const uint64_t *w, size_t n)
{
	struct run *r = arg;
	size_t i;

	for (i = 0; i < n; i++) {
		if (k[i].tgid != (uint32_t)r->pid || r->n >= MAX_WEIGHTS)
			continue;
		r->w[r->n].k = k[i];
		r->w[r->n].w = w[i];
		r->n++;
	}
}

/* Stacks by hash: every stack the table's drains bring is kept, as the
 * engine keeps them (a wait's user stack is parked as it begins, and the
 * weight naming it comes when it ends, perhaps drains later; a stack made
 * only of library frames cannot be told apart from the host's), else
 * taken from the kernel once.  An open-addressed index finds them. */
struct stack_copy {
	uint64_t hash;
	struct wc_stack s;
	bool ok;
	bool drained; /* came with a drain of the stack table */
};

#define COPY_SLOTS (2 * MAX_WEIGHTS)

static struct stack_copy *copies;
static size_t ncopies;
static uint32_t *copy_index; /* 1 + index into copies, 0 = empty */
static int drain_errors;

static uint32_t *copy_slot(uint64_t hash)
{
	size_t i = (hash * 0x9e3779b97f4a7c15ULL) >> 47;

	while (copy_index[i % COPY_SLOTS] &&
	       copies[copy_index[i % COPY_SLOTS] - 1].hash != hash)
		i++;
	return &copy_index[i % COPY_SLOTS];
}

static struct stack_copy *copy_of(uint64_t hash)
{
	uint32_t *slot = copy_slot(hash);

	return *slot ? &copies[*slot - 1] : NULL;
}

/* A new copy, or NULL when the test's bound is reached (the checks on
 * stacks found then fail, naming no stack that was not kept). */
static struct stack_copy *copy_add(uint64_t hash)
{
	uint32_t *slot = copy_slot(hash);

	if (*slot || ncopies >= MAX_WEIGHTS)
		return NULL;
	copies[ncopies].hash = hash;
	*slot = ++ncopies;
	return &copies[ncopies - 1];
}

static void copies_reset(void)
{
	ncopies = 0;
	memset(copy_index, 0, COPY_SLOTS * sizeof(*copy_index));
}

/* As the engine does: stacks drained are told held, so the kernel only
 * names them from then on.  resent: drained again after that. */
static bool tell_held;
static size_t resent;

static void on_table_stack(void *arg, uint64_t hash, const struct wc_stack *st)
{
	struct run *r = arg;
	struct stack_copy *c;

	if (tell_held && hash >= WC_STACK_LABELS) {
		resent += copy_of(hash) != NULL;
		wc_collector_held(r->c, hash);
	}
	c = hash >= WC_STACK_LABELS ? copy_add(hash) : NULL;
	if (!c)
		return;
	c->s = *st;
	c->ok = true;
	c->drained = true;
}

/* As the daemon does at every read: the weights, then the stacks (the
 * rest of the host fills the kernel's table too). */
static void drain(struct run *r)
{
	char err[256];

	if (wc_collector_drain_stacks(r->c, on_weights, r, err, sizeof(err))) {
		printf("  drain: %s\n", err);
		drain_errors++;
	}
	if (wc_collector_drain_stack_table(r->c, on_table_stack, r, err,
					   sizeof(err))) {
		printf("  drain: %s\n", err);
		drain_errors++;
	}
}

static const struct wc_stack *stack_of(struct run *r, uint64_t hash)
{
	struct stack_copy *c;

	if (hash < WC_STACK_LABELS)
		return NULL;
	c = copy_of(hash);
	if (c)
		return c->ok ? &c->s : NULL;
	c = copy_add(hash);
	if (!c)
		return NULL;
	c->drained = false;
	c->ok = wc_collector_take_stack(r->c, hash, &c->s);
	return c->ok ? &c->s : NULL;
}

/* Run the workload to its end, draining as the daemon does. */
static bool run_workload(struct run *r, const char *const *args)
{
	const char *argv[32];
	int n = 0, status, polls = 0;

	r->bias = 0;
	argv[n++] = workload;
	while (*args && n < 30)
		argv[n++] = *args++;
	argv[n] = NULL;
	fflush(stdout); /* the child's freopen would print it again */
	r->pid = fork();
	if (r->pid == 0) {
		freopen("/dev/null", "w", stdout);
		execv(workload, (char *const *)argv);
		_exit(127);
	}
	while (waitpid(r->pid, &status, WNOHANG) == 0) {
		struct timespec ts = {0, 200000000L};

		nanosleep(&ts, NULL);
		if (!r->bias)
			load_bias(r->pid, &r->bias);
		drain(r); /* as the daemon does, at every read */
		polls++;
		if (r->step)
			r->step(r, polls);
	}
	drain(r);
	wc_collector_counters(r->c, &r->cnt);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && r->bias &&
	       polls > 2;
}

/* A step for the next profiled run (see struct run). */
static void (*run_step)(struct run *r, int polls);

static bool profile_in(struct run *r, unsigned int min_block_us,
		       uint32_t stack_entries, const char *const *args)
{
	struct wc_collector_opts o = {
		.sample_hz = 99,
		.exit_ring_kib = 1024,
		.stacks = true,
		.min_block_us = min_block_us,
		.stack_entries = stack_entries,
		.held_stacks = MAX_WEIGHTS,
	};
	char err[1024];

	memset(r, 0, sizeof(*r));
	r->step = run_step;
	copies_reset();
	r->w = calloc(MAX_WEIGHTS, sizeof(*r->w));
	if (!r->w || wc_collector_open(&o, &r->c, err, sizeof(err))) {
		printf("  collector: %s\n", r->w ? err : "out of memory");
		return false;
	}
	return run_workload(r, args);
}

static bool profile(struct run *r, unsigned int min_block_us,
		    const char *const *args)
{
	return profile_in(r, min_block_us, 16384, args);
}

static void finish(struct run *r)
{
	wc_collector_close(r->c);
	free(r->w);
}

static void dump(struct run *r, uint64_t uh, uint64_t kh, uint64_t w)
{
	const struct wc_stack *k = stack_of(r, kh), *u = stack_of(r, uh);
	uint32_t i;

	printf("  %" PRIu64 " u=%" PRIx64 ":", w, uh);
	for (i = 0; k && i < k->nr && i < 12; i++)
		printf(" %s", ksym_name(k->ip[i]));
	printf(" |");
	for (i = 0; u && i < u->nr && i < 8; i++) {
		const char *f = user_func(u->ip[i] - (i > 0), r->bias);

		printf(" %s", f ? f : "?");
	}
	printf("\n");
}

static bool kstack_has(struct run *r, uint64_t hash, const char *fn)
{
	const struct wc_stack *s = stack_of(r, hash);
	uint32_t i;

	for (i = 0; s && i < s->nr && i < WC_STACK_DEPTH; i++)
		if (strcmp(ksym_name(s->ip[i]), fn) == 0)
			return true;
	return false;
}

/* Kernel function names change between releases (pipe_read became
 * anon_pipe_read): a frame whose name contains part. */
static bool kstack_has_part(struct run *r, uint64_t hash, const char *part)
{
	const struct wc_stack *s = stack_of(r, hash);
	uint32_t i;

	for (i = 0; s && i < s->nr && i < WC_STACK_DEPTH; i++)
		if (strstr(ksym_name(s->ip[i]), part))
			return true;
	return false;
}

static bool ustack_has(struct run *r, uint64_t hash, const char *fn)
{
	const struct wc_stack *s = stack_of(r, hash);
	uint32_t i;

	for (i = 0; s && i < s->nr && i < WC_STACK_DEPTH; i++) {
		/* return addresses point after the call */
		const char *f = user_func(s->ip[i] - (i > 0), r->bias);

		if (f && strcmp(f, fn) == 0)
			return true;
	}
	return false;
}

#define NEED_ROOT()                                                            \
	do {                                                                   \
		if (skip_reason[0])                                            \
			SKIP(skip_reason);                                     \
	} while (0)

#define REPORT "/tmp/wc-test-stacks.report"

static const char *const spin_sleep_args[] = {
	"--spin",    "1", "--sleep",  "1",    "--sleep-ms", "20",
	"--seconds", "3", "--report", REPORT, NULL,
};

/* A number the workload's report gives, 0 if none. */
static unsigned long long reported(const char *what)
{
	unsigned long long v = 0, x;
	char line[256], name[64];
	FILE *f = fopen(REPORT, "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %llu", name, &x) == 2 &&
		    strcmp(name, what) == 0)
			v = x;
	if (f)
		fclose(f);
	return v;
}

enum reported { ON_CPU, SLEPT };

/* What the workload's threads of a kind ("spin", "sleep", "main"...;
 * NULL: all) had, summed, by their schedstat just before each ended, as
 * its report gives it: on-CPU, or slept (wall - on-CPU - run queue). */
static double reported_ns(const char *kind, enum reported what)
{
	unsigned long long on, rq, wall;
	char line[256], k[16];
	FILE *f = fopen(REPORT, "r");
	double ns = 0;
	int tid;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "thread %15s %d %llu %llu %llu", k, &tid, &on,
			   &rq, &wall) == 5 &&
		    (!kind || strcmp(k, kind) == 0))
			ns += what == ON_CPU
				      ? (double)on
				      : (double)wall - (double)on - (double)rq;
	if (f)
		fclose(f);
	return ns;
}

/* On-CPU: nearly all of the spinner thread's run time is sampled in
 * burn_cpu, called from spinner.  Measured against that thread's own run
 * time: the process's other threads (its start, exec and loader included,
 * a good part of a second on an emulated CPU) run elsewhere. */
static void test_oncpu_stacks(void)
{
	uint64_t total = 0, burn = 0, chain = 0;
	double spin;
	struct run r;
	size_t i;

	NEED_ROOT();
	CHECK(profile(&r, 1000, spin_sleep_args));
	for (i = 0; i < r.n; i++) {
		const struct wc_stack *u;
		const char *inner = NULL;
		uint32_t j;

		if (r.w[i].k.kind != WC_ONCPU)
			continue;
		total += r.w[i].w;
		u = stack_of(&r, r.w[i].k.ustack);
		/* the workload's innermost function: the clock it reads may
		 * be a system call (a VM without a usable TSC), in libc */
		for (j = 0; u && j < u->nr && !inner; j++)
			inner = user_func(u->ip[j] - (j > 0), r.bias);
		if (inner == funcs[0].name)
			burn += r.w[i].w;
		if (ustack_has(&r, r.w[i].k.ustack, "spinner"))
			chain += r.w[i].w;
	}
	spin = reported_ns("spin", ON_CPU);
	printf("# on-CPU: %.3f s of run time sampled, the spinner thread ran "
	       "%.3f s: %.1f%% of that in burn_cpu, %.1f%% under spinner\n",
	       total / 1e9, spin / 1e9, spin ? 100.0 * burn / spin : 0,
	       spin ? 100.0 * chain / spin : 0);
	/* Weights are run time: 3 s of one spinner, less what it lost to
	 * others.  A busy host may leave it a quarter of a CPU (0.75 s in a
	 * run beside two CPU hogs and a fuzzer): enough run time for the
	 * shares below to mean something (200 ms, 200 samples at 1 kHz),
	 * and all of it sampled. */
	CHECK(spin > 2e8 && total > 0.9 * spin);
	CHECK(burn > 0.9 * spin && burn <= 1.02 * spin);
	CHECK(chain > 0.9 * spin);
	finish(&r);
}

/* Off-CPU: the sleeper's 20 ms naps come back as sleep with the kernel
 * stack of nanosleep and a user stack through sleeper, and the time adds
 * up to what it slept. */
static void test_offcpu_sleep_stacks(void)
{
	uint64_t nap = 0, with_user = 0, with_caller = 0, other = 0;
	struct run r;
	double truth;
	size_t i;

	NEED_ROOT();
	CHECK(profile(&r, 1000, spin_sleep_args));
	truth = reported_ns("sleep", SLEPT);
	for (i = 0; i < r.n; i++) {
		if (r.w[i].k.kind != WC_SLEEP)
			continue;
		if (getenv("WC_DUMP"))
			dump(&r, r.w[i].k.ustack, r.w[i].k.kstack, r.w[i].w);
		if (!kstack_has(&r, r.w[i].k.kstack, "hrtimer_nanosleep")) {
			other += r.w[i].w;
			continue;
		}
		nap += r.w[i].w;
		if (ustack_has(&r, r.w[i].k.ustack, "sleeper"))
			with_user += r.w[i].w;
		/* the caller libc's nanosleep loses to frame pointers */
		if (ustack_has(&r, r.w[i].k.ustack, "sleep_a_while"))
			with_caller += r.w[i].w;
	}
	printf("# sleep: %.3f s in hrtimer_nanosleep, sleeper's schedstat "
	       "%.3f s; %.1f%% through sleeper, %.1f%% through sleep_a_while\n",
	       nap / 1e9, truth / 1e9, nap ? 100.0 * with_user / nap : 0,
	       nap ? 100.0 * with_caller / nap : 0);
	printf("# sleep: %.3f s in hrtimer_nanosleep (%.1f%% with a user stack "
	       "through sleeper), %.3f s elsewhere; %" PRIu64
	       " waits recorded, %" PRIu64 " without user stack\n",
	       nap / 1e9, nap ? 100.0 * with_user / nap : 0, other / 1e9,
	       (uint64_t)r.cnt.v[WC_CNT_OFFCPU_STACKS],
	       (uint64_t)r.cnt.v[WC_CNT_OFFCPU_NO_USER]);
	CHECK(truth > 1e9);
	CHECK_NEAR(nap, truth, 0.05);
	CHECK(with_user > 0.95 * nap);
	CHECK(with_caller > 0.95 * nap);
	/* the main thread waits for its workers in a futex */
	CHECK(other > 2e9);
	CHECK(r.cnt.v[WC_CNT_STACKS_FULL] == 0);
	CHECK(r.cnt.v[WC_CNT_STACK_COUNTS_FULL] == 0);
	finish(&r);
}

/* A thread whose waits are all short stops paying for user stack walks
 * after a few (the switch-out walks only where a recent wait was long),
 * while a sleeper beside it keeps every one of its stacks. */
static void test_short_waits_not_walked(void)
{
	const char *args[] = {"--pingpong", "1",	  "--sleep",
			      "1",	    "--sleep-ms", "20",
			      "--seconds",  "2",	  NULL};
	uint64_t nap = 0, with_caller = 0;
	struct run r;
	size_t i;

	NEED_ROOT();
	CHECK(profile(&r, 1000, args));
	for (i = 0; i < r.n; i++) {
		if (r.w[i].k.kind != WC_SLEEP ||
		    !kstack_has(&r, r.w[i].k.kstack, "hrtimer_nanosleep"))
			continue;
		nap += r.w[i].w;
		if (ustack_has(&r, r.w[i].k.ustack, "sleep_a_while"))
			with_caller += r.w[i].w;
	}
	printf("# ping-pong beside a sleeper: %" PRIu64 " walks for short "
	       "waits, %" PRIu64 " long waits recorded, %" PRIu64
	       " missed by the prediction; sleeper %.3f s, %.1f%% with its "
	       "caller\n",
	       (uint64_t)r.cnt.v[WC_CNT_WALKS_UNUSED],
	       (uint64_t)r.cnt.v[WC_CNT_OFFCPU_STACKS],
	       (uint64_t)r.cnt.v[WC_CNT_OFFCPU_USER_MISSED], nap / 1e9,
	       nap ? 100.0 * with_caller / nap : 0);
	/* two threads, a place or two each, 4 walks to learn each; a long
	 * wait (a hiccup of the VM, a busy host delaying the partner)
	 * re-arms its place for 4 more.  Walking every wait would be tens of
	 * thousands. */
	CHECK(r.cnt.v[WC_CNT_WALKS_UNUSED] <
	      500 + 4 * r.cnt.v[WC_CNT_OFFCPU_STACKS]);
	CHECK(nap > 1.5e9);
	CHECK(with_caller > 0.95 * nap);
	finish(&r);
}

/* The stack table, drained after the weights at every read, holds every
 * stack a drained weight names: none has to be taken separately. */
static void test_stack_table_drains(void)
{
	const char *args[] = {"--sleep",   "2",	     "--sleep-ms",
			      "5",	   "--spin", "1",
			      "--seconds", "1",	     NULL};
	size_t i, names = 0, found = 0;
	struct run r;

	NEED_ROOT();
	CHECK(profile(&r, 1000, args));
	for (i = 0; i < r.n; i++) {
		uint64_t h[2] = {r.w[i].k.ustack, r.w[i].k.kstack};
		int j;

		for (j = 0; j < 2; j++) {
			struct stack_copy *c =
				h[j] >= WC_STACK_LABELS ? copy_of(h[j]) : NULL;

			names += h[j] >= WC_STACK_LABELS;
			found += c && c->drained;
		}
	}
	printf("# stack table: %zu names of stacks in %zu weights, %zu found "
	       "in the table's drains (%zu stacks drained host-wide)\n",
	       names, r.n, found, ncopies);
	CHECK(names > 0 && found == names);
	finish(&r);
}

/* Stacks the drain told held are named, not stored again: the sleeper's
 * 5 ms naps keep naming the same two stacks, which the table brings once.
 * Let go, they are stored again the next time they come. */
static void test_held_stacks_named_only(void)
{
	const char *args[] = {"--sleep",   "1", "--sleep-ms", "5",
			      "--seconds", "2", NULL};
	size_t i, names = 0, found = 0, first_resent, drained;
	uint64_t known;
	struct run r;

	NEED_ROOT();
	tell_held = true;
	resent = 0;
	CHECK(profile(&r, 1000, args));
	for (i = 0; i < r.n; i++) {
		uint64_t h[2] = {r.w[i].k.ustack, r.w[i].k.kstack};
		int j;

		for (j = 0; j < 2; j++) {
			names += h[j] >= WC_STACK_LABELS;
			found += h[j] >= WC_STACK_LABELS && copy_of(h[j]) &&
				 copy_of(h[j])->drained;
		}
	}
	known = r.cnt.v[WC_CNT_STACKS_KNOWN];
	first_resent = resent;
	drained = ncopies;
	printf("# held: %zu stacks drained host-wide, %zu of them again, %" PRIu64
	       " found held by the kernel; the sleeper's %zu weights "
	       "name %zu stacks, %zu drained\n",
	       drained, first_resent, known, r.n, names, found);
	/* ~400 naps, each naming a user and a kernel stack */
	CHECK(known > 400);
	/* A nap that ends between a drain taking its stack and telling it
	 * held stores it again: rare against the namings (a bound on the
	 * few stacks drained host-wide failed one run in five). */
	CHECK(first_resent * 50 < known);
	CHECK(names > 0 && found == names);
	/* let go of all: the next naps store their stacks again */
	for (i = 0; i < ncopies; i++)
		wc_collector_let_go(r.c, copies[i].hash);
	resent = 0;
	r.n = 0;
	CHECK(run_workload(&r, args));
	printf("# held: after letting go, %zu stacks drained again, %" PRIu64
	       " more found held\n",
	       resent, (uint64_t)(r.cnt.v[WC_CNT_STACKS_KNOWN] - known));
	CHECK(resent >= 2);
	CHECK(r.cnt.v[WC_CNT_STACKS_KNOWN] - known > 400);
	tell_held = false;
	finish(&r);
}

/* A stack deeper than the short table's layout comes back whole, through
 * the table for deep stacks: 40 frames of descend() above the sleep. */
static void test_deep_stacks(void)
{
	const char *args[] = {
		"--sleep", "1",		"--sleep-ms", "10", "--sleep-depth",
		"40",	   "--seconds", "1",	      NULL};
	uint64_t nap = 0, whole = 0;
	uint32_t deepest = 0;
	struct run r;
	size_t i;

	NEED_ROOT();
	CHECK(profile(&r, 1000, args));
	for (i = 0; i < r.n; i++) {
		const struct wc_stack *u = stack_of(&r, r.w[i].k.ustack);
		uint32_t j, levels = 0;

		if (r.w[i].k.kind != WC_SLEEP || !u ||
		    !ustack_has(&r, r.w[i].k.ustack, "sleep_a_while"))
			continue;
		nap += r.w[i].w;
		for (j = 0; j < u->nr && j < WC_STACK_DEPTH; j++) {
			const char *f = user_func(u->ip[j] - (j > 0), r.bias);

			levels += f && strcmp(f, "descend") == 0;
		}
		if (u->nr > deepest)
			deepest = u->nr;
		if (levels >= 41 && ustack_has(&r, r.w[i].k.ustack, "sleeper"))
			whole += r.w[i].w;
	}
	printf("# deep: %.3f s asleep under sleep_a_while, %.1f%% with all 41 "
	       "descend frames and sleeper; deepest user stack %u frames\n",
	       nap / 1e9, nap ? 100.0 * whole / nap : 0, deepest);
	CHECK(nap > 0.5e9);
	CHECK(deepest > WC_SHORT_DEPTH);
	CHECK(whole > 0.95 * nap);
	finish(&r);
}

/* Tables far too small for the load: they fill, what does not fit is
 * dropped and counted, and draining them never fails (the kernel refills
 * a table as it drains; a bucket that no longer fits waits its turn). */
static void test_full_tables(void)
{
	const char *args[] = {"--sleep", "8", "--sleep-ms", "1", "--spin", "2",
			      "--disk",	 "1", "--seconds",  "2", NULL};
	struct run r;

	NEED_ROOT();
	drain_errors = 0;
	CHECK(profile_in(&r, 0, 16, args));
	printf("# 16-entry tables: %" PRIu64 " stacks and %" PRIu64
	       " weights dropped, %d drain errors, %zu weights drained\n",
	       (uint64_t)r.cnt.v[WC_CNT_STACKS_FULL],
	       (uint64_t)r.cnt.v[WC_CNT_STACK_COUNTS_FULL], drain_errors, r.n);
	CHECK(r.cnt.v[WC_CNT_STACKS_FULL] + r.cnt.v[WC_CNT_STACK_COUNTS_FULL] >
	      0);
	CHECK(drain_errors == 0);
	CHECK(r.n > 0);
	finish(&r);
}

/* Waits below the threshold are never walked: with a 50 ms threshold the
 * 20 ms naps leave no stack, while the 3 s join still does.  A slow
 * (emulated, busy) CPU wakes some naps late: those that took 50 ms or
 * more, by the sleeper's own clock, may be there, and nothing else. */
static void test_threshold(void)
{
	static const char *const args[] = {
		"--spin",    "1",	  "--sleep", "1",	 "--sleep-ms",
		"20",	     "--seconds", "3",	     "--report", REPORT,
		"--long-ms", "50",	  NULL,
	};
	uint64_t nap = 0, other = 0, late;
	struct run r;
	size_t i;

	NEED_ROOT();
	CHECK(profile(&r, 50000, args));
	for (i = 0; i < r.n; i++) {
		if (r.w[i].k.kind != WC_SLEEP)
			continue;
		if (kstack_has(&r, r.w[i].k.kstack, "hrtimer_nanosleep"))
			nap += r.w[i].w;
		else
			other += r.w[i].w;
	}
	late = reported("long_naps_ns");
	printf("# 50 ms threshold: %" PRIu64 " ns of 20 ms naps recorded "
	       "(%" PRIu64 " ns of them took 50 ms or more), %.3f s of longer "
	       "waits\n",
	       nap, late, other / 1e9);
	CHECK(nap <= late);
	CHECK(other > 2e9);
	finish(&r);
}

/* Reads a flush follows, in the middle of a run, each allowing some
 * kernel stacks to be walked: where their weights are in run.w, and the
 * counters around them. */
struct flush_read {
	int at_poll;
	uint32_t walks;
	size_t from, to;
	struct wc_counters before, after;
	double at_s; /* CLOCK_MONOTONIC, after its walk */
};

static struct flush_read flush_reads[] = {
	{.at_poll = 5, .walks = 1},
	{.at_poll = 10, .walks = 100000},
	{.at_poll = 15, .walks = 0},
};
#define NFLUSH_READS (sizeof(flush_reads) / sizeof(flush_reads[0]))

static void no_records(void *arg, const struct wc_task_rec *recs, size_t n)
{
	(void)arg;
	(void)recs;
	(void)n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void flush_step(struct run *r, int polls)
{
	char err[256];
	size_t i;

	for (i = 0; i < NFLUSH_READS; i++) {
		struct flush_read *f = &flush_reads[i];

		if (f->at_poll != polls)
			continue;
		f->from = r->n;
		wc_collector_counters(r->c, &f->before);
		if (wc_collector_poll(r->c, no_records, NULL, err,
				      sizeof(err)) ||
		    wc_collector_charge_waits(r->c, f->walks, err, sizeof(err)))
			printf("  poll: %s\n", err);
		f->at_s = now_s();
		wc_collector_new_window(r->c);
		drain(r);
		wc_collector_counters(r->c, &f->after);
		f->to = r->n;
	}
}

static uint64_t delta(const struct flush_read *f, enum wc_counter k)
{
	return f->after.v[k] - f->before.v[k];
}

/* The sleep weights of one flush read (or of the whole run: NULL) whose
 * kernel stack has a frame named with kpart and user stack passes
 * through ufn (NULL: any), and how many of them have no walked kernel
 * stack. */
static uint64_t slept_in(struct run *r, const struct flush_read *f,
			 const char *kpart, const char *ufn, size_t *unwalked)
{
	size_t i, from = f ? f->from : 0, to = f ? f->to : r->n;
	uint64_t ns = 0;

	for (i = from; i < to; i++) {
		const struct wc_stack_key *k = &r->w[i].k;

		if (k->kind != WC_SLEEP)
			continue;
		if (unwalked && k->kstack == WC_STACK_UNWALKED)
			(*unwalked)++;
		if ((!kpart || kstack_has_part(r, k->kstack, kpart)) &&
		    (!ufn || ustack_has(r, k->ustack, ufn)))
			ns += r->w[i].w;
	}
	return ns;
}

/*
 * Waits under way at a read a flush follows are charged to their stacks
 * then, and their ends charge only the rest: the workload's six threads
 * (two pipe readers, two condition waiters, a sleeper and main, each in
 * one call for 5 s; the last flush read is about 3 s in) have, over the
 * run, their sleep once, by their own schedstat.  The walks are bounded
 * (1 allowed: exactly 1 made host-wide, the rest counted unwalked), and
 * each wait's kernel stack is walked once: allowed none, waits walked at
 * the flush before are named again.
 */
static void test_waits_under_way(void)
{
	static const char *const args[] = {
		"--waiters", "2", "--sleep",  "1",    "--sleep-ms", "0",
		"--seconds", "5", "--report", REPORT, NULL,
	};
	const struct flush_read *f0 = &flush_reads[0], *f1 = &flush_reads[1],
				*f2 = &flush_reads[2];
	size_t unwalked1 = 0, unwalked2 = 0, i;
	uint64_t total, third, piped, futex, condf, nap;
	double truth, between;
	struct run r;

	NEED_ROOT();
	tell_held = true;
	run_step = flush_step;
	CHECK(profile(&r, 1000, args));
	run_step = NULL;
	truth = reported_ns(NULL, SLEPT);
	total = slept_in(&r, NULL, NULL, NULL, NULL);
	slept_in(&r, f1, NULL, NULL, &unwalked1);
	third = slept_in(&r, f2, NULL, NULL, &unwalked2);
	piped = slept_in(&r, f2, "pipe_read", "wait_in_read", NULL);
	/* libc's pthread_cond_wait keeps no frame pointer: wait_on_cond is
	 * found by the search for a frame record */
	futex = slept_in(&r, f2, "futex_wait", NULL, NULL);
	condf = slept_in(&r, f2, "futex_wait", "wait_on_cond", NULL);
	nap = slept_in(&r, f2, "hrtimer_nanosleep", "sleep_a_while", NULL);
	printf("# waits under way: host-wide %" PRIu64 " charged at the "
	       "first flush read, %" PRIu64 " walked (1 allowed); %" PRIu64
	       " at the third, %" PRIu64 " unwalked (none allowed)\n",
	       delta(f0, WC_CNT_WAITS_UNDER_WAY),
	       delta(f0, WC_CNT_WAITS_UNDER_WAY) -
		       delta(f0, WC_CNT_WAITS_UNWALKED),
	       delta(f2, WC_CNT_WAITS_UNDER_WAY),
	       delta(f2, WC_CNT_WAITS_UNWALKED));
	between = f2->at_s - f1->at_s;
	printf("# the workload's sleep: %.3f s charged to stacks, %.3f s by "
	       "its threads' schedstat; third flush read %.3f s for %.3f s "
	       "since the one before (pipe %.3f, futex %.3f of which %.3f "
	       "through wait_on_cond, nanosleep %.3f)\n",
	       total / 1e9, truth / 1e9, third / 1e9, between, piped / 1e9,
	       futex / 1e9, condf / 1e9, nap / 1e9);
	for (i = 0; getenv("WC_DUMP") && i < r.n; i++)
		dump(&r, r.w[i].k.ustack, r.w[i].k.kstack, r.w[i].w);
	CHECK(f0->to > f0->from && f2->to > f2->from);
	CHECK(delta(f0, WC_CNT_WAITS_UNDER_WAY) >= 6);
	CHECK(delta(f0, WC_CNT_WAITS_UNDER_WAY) -
		      delta(f0, WC_CNT_WAITS_UNWALKED) ==
	      1);
	CHECK(unwalked1 == 0);
	/* walked at the flush before, named again with none allowed */
	CHECK(unwalked2 == 0);
	CHECK(delta(f2, WC_CNT_WAITS_UNDER_WAY) >= 6);
	/* six threads, each for the time since the flush read before */
	CHECK_NEAR(third, 6e9 * between, 0.1);
	/* two pipe readers, two condition waiters, one sleeper of six:
	 * under their own functions and their waits' kernel frames */
	CHECK(piped > 0.32 * third && futex > 0.32 * third &&
	      nap > 0.16 * third);
	CHECK(condf > 0.95 * futex);
	CHECK(truth > 6 * 4.5e9);
	CHECK_NEAR(total, truth, 0.03);
	tell_held = false;
	finish(&r);
}

/* I/O: the disk writer's uninterruptible waits come back as blocked, with
 * a user stack through disk_writer.  A 20 us threshold: on a fast virtual
 * disk most writes wait less than 100 us, and the handful that did not
 * left the test at the mercy of one or two predictions. */
static void test_offcpu_blocked_stacks(void)
{
	static const char *const args[] = {
		"--disk", "1", "--seconds", "3", "--dir", "/var/tmp", NULL,
	};
	uint64_t blocked = 0, io = 0, through = 0;
	struct run r;
	size_t i;

	NEED_ROOT();
	CHECK(profile(&r, 20, args));
	for (i = 0; i < r.n; i++) {
		const struct wc_stack_key *k = &r.w[i].k;

		if (k->kind != WC_BLOCKED)
			continue;
		blocked += r.w[i].w;
		if (getenv("WC_DUMP"))
			dump(&r, k->ustack, k->kstack, r.w[i].w);
		/* The writer's close blocks too, where the file system
		 * discards the unlinked file's blocks: a real wait, from a
		 * call site whose waits were short (no user stack taken),
		 * and on a fast disk as long as all the long writes.  The
		 * generic frames name the writes on any architecture. */
		if (!kstack_has(&r, k->kstack, "vfs_write") &&
		    !kstack_has(&r, k->kstack, "do_fsync"))
			continue;
		io += r.w[i].w;
		if (ustack_has(&r, k->ustack, "disk_writer") &&
		    ustack_has(&r, k->ustack, "wait_for_disk"))
			through += r.w[i].w;
	}
	printf("# blocked: %.3f s, %.3f s in pwrite and fdatasync, %.1f%% of "
	       "that through disk_writer;wait_for_disk; "
	       "host-wide: %" PRIu64 " waits recorded, %" PRIu64
	       " without user stack, %" PRIu64
	       " missed by the prediction, %" PRIu64 " stack errors\n",
	       blocked / 1e9, io / 1e9, io ? 100.0 * through / io : 0,
	       (uint64_t)r.cnt.v[WC_CNT_OFFCPU_STACKS],
	       (uint64_t)r.cnt.v[WC_CNT_OFFCPU_NO_USER],
	       (uint64_t)r.cnt.v[WC_CNT_OFFCPU_USER_MISSED],
	       (uint64_t)r.cnt.v[WC_CNT_STACK_ERRORS]);
	finish(&r);
	if (io == 0)
		SKIP("this disk never made the writer wait 20 us");
	CHECK(through > 0.8 * io);
}

int main(int argc, char **argv)
{
	check_prog = "test_stacks";
	if (argc < 2) {
		fprintf(stderr, "usage: test_stacks PATH_TO_WORKLOAD\n");
		return 2;
	}
	workload = realpath(argv[1], NULL);
	if (!workload) {
		perror(argv[1]);
		return 2;
	}
	quiet_logs();
	copies = calloc(MAX_WEIGHTS, sizeof(*copies));
	copy_index = calloc(COPY_SLOTS, sizeof(*copy_index));
	if (!copies || !copy_index)
		return 1;
	if (geteuid() != 0)
		snprintf(skip_reason, sizeof(skip_reason),
			 "needs root to load BPF programs");
	else if (load_kallsyms())
		snprintf(skip_reason, sizeof(skip_reason),
			 "/proc/kallsyms shows no addresses "
			 "(kernel.kptr_restrict)");
	if (load_funcs()) {
		fprintf(stderr, "nm found no workload functions in %s\n",
			workload);
		return 1;
	}
	RUN(test_oncpu_stacks);
	RUN(test_offcpu_sleep_stacks);
	RUN(test_short_waits_not_walked);
	RUN(test_stack_table_drains);
	RUN(test_held_stacks_named_only);
	RUN(test_deep_stacks);
	RUN(test_full_tables);
	RUN(test_threshold);
	RUN(test_offcpu_blocked_stacks);
	RUN(test_waits_under_way);
	unlink(REPORT); /* the workload's, written by every run */
	free(copies);
	free(copy_index);
	free(ksyms);
	return check_done();
}
