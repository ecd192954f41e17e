/*
 * test_split.c - the arithmetic the BPF programs charge a thread's time
 * with (bpf/split.h), in user space: the plain cases, and the hard ones
 * (missed switches, steal, a lost quick slot, clocks that step back),
 * then random stretches against the invariant that a stretch charges its
 * wall time, or its run time where the kernel counted more.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"

static int missed;
#define split_missed() (missed++)
#include "bpf/split.h"

#define MS 1000000ULL

static __u64 sum(const __u64 *t)
{
	return t[WC_T_ONCPU] + t[WC_T_RUNQ] + t[WC_T_SLEEP] + t[WC_T_BLOCKED] +
	       t[WC_T_STEAL];
}

/* What charge() does at a switch-out: the stretch, then its waits with
 * the run queue's part up to the arrival. */
static __u64 charge(__u64 *t, const struct wc_stretch *s, __u64 rq)
{
	__u64 off = split_stretch(t, s);

	return add_wait(t, s->state, 0, off, rq);
}

/* Asleep 10 ms (1 of it in the run queue), then ran 2 ms. */
static void test_sleep_then_run(void)
{
	struct wc_stretch s = {.start = 100 * MS,
			       .arrived = 110 * MS,
			       .now = 112 * MS,
			       .exec_now = 2 * MS,
			       .state = WC_SLEEP};
	__u64 t[5] = {0};

	missed = 0;
	CHECK(charge(t, &s, 1 * MS) == 9 * MS);
	CHECK(t[WC_T_ONCPU] == 2 * MS && t[WC_T_RUNQ] == 1 * MS);
	CHECK(t[WC_T_SLEEP] == 9 * MS && t[WC_T_STEAL] == 0);
	CHECK(sum(t) == 12 * MS && missed == 0);
}

/* Blocked, and a preemption: the slept part goes to the state the wait
 * began in, and a preemption's is sleep (quick stints merged into it). */
static void test_blocked_and_preempted(void)
{
	__u64 t[5] = {0};

	CHECK(add_wait(t, WC_BLOCKED, 0, 10 * MS, 4 * MS) == 6 * MS);
	CHECK(t[WC_T_BLOCKED] == 6 * MS && t[WC_T_RUNQ] == 4 * MS);
	memset(t, 0, sizeof(t));
	CHECK(add_wait(t, WC_RUNQ, 0, 10 * MS, 4 * MS) == 6 * MS);
	CHECK(t[WC_T_RUNQ] == 4 * MS && t[WC_T_SLEEP] == 6 * MS);
	memset(t, 0, sizeof(t));
	CHECK(add_wait(t, WC_ONCPU, 0, 10 * MS, 0) == 0 && sum(t) == 0);
	/* more run queue than wall (two CPUs' clocks): all of it waiting */
	CHECK(add_wait(t, WC_SLEEP, 0, 3 * MS, 5 * MS) == 0);
	CHECK(t[WC_T_RUNQ] == 3 * MS && sum(t) == 3 * MS);
}

/* The stint ran 1.5 of its 2 ms: the rest is the hypervisor's. */
static void test_steal(void)
{
	struct wc_stretch s = {.start = 0,
			       .arrived = 10 * MS,
			       .now = 12 * MS,
			       .exec_ckpt = 5 * MS,
			       .exec_now = 5 * MS + 3 * MS / 2,
			       .state = WC_SLEEP};
	__u64 t[5] = {0};

	charge(t, &s, 0);
	CHECK(t[WC_T_STEAL] == MS / 2 && t[WC_T_ONCPU] == 3 * MS / 2);
	CHECK(t[WC_T_SLEEP] == 10 * MS && sum(t) == 12 * MS);
}

/* No arrival inside the stretch: the wait's end cannot be placed, so it
 * is all run and steal, and counted missed. */
static void test_arrival_outside(void)
{
	struct wc_stretch s = {.start = 50 * MS,
			       .arrived = 40 * MS,
			       .now = 60 * MS,
			       .exec_now = 4 * MS,
			       .state = WC_SLEEP};
	__u64 t[5] = {0};

	missed = 0;
	CHECK(charge(t, &s, 3 * MS) == 0);
	CHECK(missed == 1);
	CHECK(t[WC_T_ONCPU] == 4 * MS && t[WC_T_STEAL] == 6 * MS);
	CHECK(sum(t) == 10 * MS);
}

/* A switch-out nobody saw: 8 ms of run in a 1 ms stint.  The waits get
 * what the run leaves of the wall time, in the first wait's state. */
static void test_unseen_switch_out(void)
{
	struct wc_stretch s = {.start = 0,
			       .arrived = 19 * MS,
			       .now = 20 * MS,
			       .exec_now = 8 * MS,
			       .state = WC_BLOCKED};
	__u64 t[5] = {0};

	missed = 0;
	charge(t, &s, 2 * MS);
	CHECK(missed == 1);
	CHECK(t[WC_T_ONCPU] == 8 * MS && t[WC_T_STEAL] == 0);
	CHECK(t[WC_T_BLOCKED] + t[WC_T_RUNQ] == 12 * MS);
	CHECK(t[WC_T_RUNQ] == 2 * MS && sum(t) == 20 * MS);
}

/* Quick stints since the checkpoint ran 3 ms: that run was not steal, and
 * the waits are what is left before this stint. */
static void test_quick_stints_before(void)
{
	struct wc_stretch s = {.start = 0,
			       .arrived = 10 * MS,
			       .now = 12 * MS,
			       .exec_now = 5 * MS,
			       .before = 3 * MS,
			       .state = WC_SLEEP};
	__u64 t[5] = {0};

	missed = 0;
	charge(t, &s, 0);
	CHECK(missed == 0);
	CHECK(t[WC_T_ONCPU] == 5 * MS && t[WC_T_STEAL] == 0);
	CHECK(t[WC_T_SLEEP] == 7 * MS && sum(t) == 12 * MS);
}

/* The quick slot was lost (another thread took it): the stint is taken
 * to have had no steal, the run beyond it ran before. */
static void test_lost_quick_slot(void)
{
	struct wc_stretch s = {.start = 0,
			       .arrived = 10 * MS,
			       .now = 12 * MS,
			       .exec_now = 5 * MS,
			       .before = BEFORE_UNKNOWN,
			       .state = WC_SLEEP};
	__u64 t[5] = {0};

	missed = 0;
	charge(t, &s, 0);
	CHECK(missed == 0);
	CHECK(t[WC_T_ONCPU] == 5 * MS && t[WC_T_STEAL] == 0);
	CHECK(t[WC_T_SLEEP] == 7 * MS && sum(t) == 12 * MS);
	/* ... and with less run than the stint, what is left is steal */
	memset(t, 0, sizeof(t));
	s.exec_now = MS;
	charge(t, &s, 0);
	CHECK(t[WC_T_STEAL] == MS && t[WC_T_SLEEP] == 10 * MS);
}

/* A clock that reads behind the checkpoint (another CPU's, or one the
 * scheduler skipped updating): no wall time, but the run the kernel
 * counted is charged all the same. */
static void test_clock_behind(void)
{
	struct wc_stretch s = {.start = 100 * MS,
			       .arrived = 99 * MS,
			       .now = 98 * MS,
			       .exec_now = MS,
			       .state = WC_SLEEP};
	__u64 t[5] = {0};

	missed = 0;
	charge(t, &s, 0);
	CHECK(missed == 1);
	CHECK(t[WC_T_ONCPU] == MS && sum(t) == MS);
	CHECK(runq_grown(5, 0, 9, 100) == 0); /* run_delay behind: 0 */
}

/* A thread adopted while running has no wait to end. */
static void test_adopted_running(void)
{
	struct wc_stretch s = {.start = 0,
			       .arrived = 3 * MS,
			       .now = 4 * MS,
			       .exec_now = 3 * MS,
			       .state = WC_ONCPU};
	__u64 t[5] = {0};

	CHECK(charge(t, &s, 2 * MS) == 0);
	CHECK(t[WC_T_ONCPU] == 3 * MS && t[WC_T_STEAL] == MS);
	CHECK(sum(t) == 4 * MS);
}

/* The run queue's part: run_delay's growth, and a stay under way. */
static void test_runq_grown(void)
{
	CHECK(runq_grown(7 * MS, 0, 5 * MS, 100 * MS) == 2 * MS);
	CHECK(runq_grown(7 * MS, 96 * MS, 5 * MS, 100 * MS) == 6 * MS);
	CHECK(runq_grown(7 * MS, 101 * MS, 5 * MS, 100 * MS) == 2 * MS);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(uint64_t n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (rng_state * 0x2545f4914f6cdd1dULL) % n;
}

/*
 * Random stretches: the charge is the wall time when the run fits its
 * stint (and the quick stints before it), never less than the wall time,
 * and never more than the wall time or the run by more than what a
 * missed switch-out is allowed to hide.
 */
static void test_random_stretches(void)
{
	static const __u32 states[] = {WC_ONCPU, WC_RUNQ, WC_SLEEP, WC_BLOCKED};
	int i, bad = 0;

	for (i = 0; i < 1000000; i++) {
		struct wc_stretch s = {0};
		__u64 t[5] = {0}, wall, run, total, cap;

		s.start = 1000 * MS + rng(20 * MS) - 10 * MS;
		s.now = 1000 * MS + rng(40 * MS);
		s.arrived = s.start + rng(40 * MS) - 5 * MS;
		s.exec_ckpt = rng(10 * MS);
		s.exec_now = s.exec_ckpt + rng(30 * MS);
		if (!rng(10)) /* a counter that reads behind */
			s.exec_now = s.exec_ckpt - rng(s.exec_ckpt + 1);
		s.before = rng(4) ? rng(10 * MS) : BEFORE_UNKNOWN;
		s.state = states[rng(4)];
		charge(t, &s, rng(10 * MS));
		wall = s.now > s.start ? s.now - s.start : 0;
		run = s.exec_now > s.exec_ckpt ? s.exec_now - s.exec_ckpt : 0;
		total = sum(t);
		cap = (wall > run ? wall : run) + UNSEEN_RUN_NS;
		if ((total < wall || total > cap) && !bad++)
			printf("  start %llu now %llu arrived %llu exec %llu..%llu "
			       "before %llu state %u: total %llu, wall %llu, "
			       "run %llu\n",
			       (unsigned long long)s.start,
			       (unsigned long long)s.now,
			       (unsigned long long)s.arrived,
			       (unsigned long long)s.exec_ckpt,
			       (unsigned long long)s.exec_now,
			       (unsigned long long)s.before, s.state,
			       (unsigned long long)total,
			       (unsigned long long)wall,
			       (unsigned long long)run);
	}
	CHECK(bad == 0);
}

int main(void)
{
	check_prog = "test_split";
	RUN(test_sleep_then_run);
	RUN(test_blocked_and_preempted);
	RUN(test_steal);
	RUN(test_arrival_outside);
	RUN(test_unseen_switch_out);
	RUN(test_quick_stints_before);
	RUN(test_lost_quick_slot);
	RUN(test_clock_behind);
	RUN(test_adopted_running);
	RUN(test_runq_grown);
	RUN(test_random_stretches);
	return check_done();
}
