/* SPDX-License-Identifier: GPL-2.0 */
/*
 * walk.bpf.h - the thread walk: every thread's record read while it
 * may change, by the task iterator or the open-coded walk, warmed ahead.
 *
 * Included once, in order, by wallclock.bpf.c.
 */
#ifndef WC_WALK_BPF_H
#define WC_WALK_BPF_H

/* A thread the iterator meets before any scheduler event: start it in the
 * state the kernel says it is in now.  Not one that is exiting: if it died
 * at its first switch-out, its whole life went through the exit ring under
 * an id of its own, and a new entry for the zombie would never be heard
 * from again (the account would count a thread lost); if not, its last
 * switch-out will do the same. */
static __always_inline struct wc_task *adopt(struct task_struct *task)
{
	unsigned int st = BPF_CORE_READ(task, __state);

	if (BPF_CORE_READ(task, flags) & K_PF_EXITING)
		return NULL;

	if (BPF_CORE_READ(task, on_cpu))
		return first_sight(task, rq_clock_of(task), WC_ONCPU, true,
				   SCRATCH_WALK);
	return first_sight(task, rq_clock_of(bpf_get_current_task_btf()),
			   state_of(st), false, SCRATCH_WALK);
}

/*
 * Bring a waiting thread's copy up to now.  If it is in fact running, the
 * wait ended at sched_info.last_arrival and it has run since, exactly as
 * its switch-out will charge it.  Charging the whole stretch as waiting
 * instead would report wait time that the switch-out then turns into run
 * time, and a counter that was ahead can only stay ahead: the group would
 * show more time than it had.  Stints since the checkpoint whose
 * switch-outs took the quick path are run, and the rest waits, as the
 * next slow switch-out will find.
 */
struct merged {
	__u64 run;	/* merged_run() */
	__u64 dep;	/* the last switch-out, if the entry is the thread's */
	__u64 stale_rd; /* wc_task.stale_rd, or RD_FRESH */
};

#define RD_FRESH (~0ULL)

/* runq_part, but a thread whose queue stamp a move left stale is asleep
 * still: it has waited for no CPU since the move. */
static __always_inline __u64 runq_so_far(struct task_struct *task,
					 __u64 rd_ckpt, __u64 stale_rd,
					 __u64 now)
{
	if (stale_rd != RD_FRESH)
		return stale_rd > rd_ckpt ? stale_rd - rd_ckpt : 0;
	return runq_part(task, rd_ckpt, now);
}

static __always_inline void
charge_waiting(struct task_struct *task, struct wc_task_rec *r, __u32 st,
	       __u64 ckpt, __u64 exec_ns, __u64 rd_ckpt, const struct merged *m)
{
	__u64 now = rq_clock_of(bpf_get_current_task_btf()), arrived = 0;
	__u64 run_ns = task->se.sum_exec_runtime, before;

	if (task->on_cpu)
		arrived = task->sched_info.last_arrival;
	/* a quick switch-out since the arrival: it is on its way off the
	 * CPU (on_cpu is cleared after the tracepoint) */
	if (arrived && m->dep >= arrived)
		arrived = 0;
	/* running: its wait ended at the arrival, or (an arrival before the
	 * checkpoint, on another CPU's clock) had ended already, as its
	 * switch-out will find */
	if (arrived && arrived <= now) {
		before = m->run;
		if (before == BEFORE_UNKNOWN)
			before = run_ns > exec_ns + (now - arrived)
					 ? run_ns - exec_ns - (now - arrived)
					 : 0;
		if (arrived > ckpt + before)
			add_wait(r->time_ns, st, ckpt + before, arrived,
				 runq_so_far(task, rd_ckpt, m->stale_rd,
					     arrived));
		add_run(r->time_ns, 0, 0, exec_ns, run_ns);
		return;
	}
	before = run_ns > exec_ns ? run_ns - exec_ns : 0;
	add_wait(r->time_ns, st, ckpt + before, now,
		 runq_so_far(task, rd_ckpt, m->stale_rd, now));
	add_run(r->time_ns, 0, 0, exec_ns, run_ns);
}

/*
 * Copy an entry that another CPU may be charging and bring it up to now:
 * a running thread by the kernel's run time so far (at most a tick behind;
 * its steal is settled when it switches out), a waiting one by the
 * iterator's own run-queue clock, which is busy running us and so at most
 * a tick behind too.  What is not counted yet is counted at the next read.
 */
static __always_inline bool snapshot(struct task_struct *task,
				     struct wc_task *t, struct wc_task_rec *r)
{
	struct quick *q;
	struct merged m;
	__u64 key;
	int i, k;

	q = quick_of(task, &key);
	for (i = 0; i < 4; i++) {
		__u32 s1 = READ_ONCE(t->seq);
		__u64 ckpt, exec_ns, rd_ckpt;
		__u32 s2, st;

		barrier();
		st = t->state;
		ckpt = t->ckpt;
		exec_ns = t->exec_ns;
		rd_ckpt = t->rd_ckpt;
		for (k = 0; k < WC_NSLOTS; k++)
			r->time_ns[k] = t->time_ns[k];
		/* inside the count: a charge that clears the entry's
		 * merged run comes after the checkpoint it charged to */
		m.run = merged_run(q, key, exec_ns);
		m.dep = q && q->key == key ? q->dep : 0;
		m.stale_rd = t->rd_stale ? t->stale_rd : RD_FRESH;
		barrier();
		s2 = READ_ONCE(t->seq);
		if (s1 != s2 || (s1 & 1))
			continue;
		if (st == WC_ONCPU)
			add_run(r->time_ns, 0, 0, exec_ns,
				task->se.sum_exec_runtime);
		else
			charge_waiting(task, r, st, ckpt, exec_ns, rd_ckpt, &m);
		r->state = st;
		r->id = t->id;
		r->samples = t->samples;
		r->parked_ustack = t->parked_ustack;
		r->owed_kstack = t->owed_ns ? t->owed_kstack : STACK_NONE;
		return true;
	}
	return false;
}

/* libbpf's bpf_ksym_exists, which Debian 12's libbpf lacks */
#define ksym_exists(sym) (!!(sym))

/* 6.2+; where it is missing the walk only goes without the warming */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __weak __ksym;

/*
 * The walk chases pointers: a thread's record takes some fifteen cache
 * lines (nine of its task_struct, its storage's pointer table, its entry,
 * its quick slot), and left alone it waits for one miss after another:
 * the next thread is found only from this one, its entry only from its
 * table, its table only from its task.  Asking early for the next thread's
 * lines with plain loads (BPF has no prefetch) does not help much either:
 * a load that misses holds up every instruction after it until it is
 * served, so each thread still waits about one miss.  So the walk asks
 * for the lines of WARM_BATCH threads at once, WARM_FAR threads ahead,
 * and waits for one miss per batch.  Where those threads are, it learns
 * from the walk before: walk_hints, indexed by thread id, notes where the
 * thread met WARM_FAR after it was, task and entry.  The lines those
 * point to (the storage table, the quick slot, the next hint) are asked
 * for WARM_NEAR ahead, once the task's lines have come in.  The last
 * WARM_RING threads' hints and ids are kept in `ahead` (the walk's alone:
 * runs never overlap).  A process that came or went spoils only the hints
 * of the few threads before it; loads through a hint are checked (a stale
 * or garbage address reads 0) and their values unused.  Measured at
 * 10,000 threads under churn (tests/bench/readbench): a fifth off the
 * read's CPU time.
 */
#define WARM_BATCH 8
#define WARM_FAR (4 * WARM_BATCH)
#define WARM_NEAR (2 * WARM_BATCH)
#define WARM_RING 64 /* > WARM_FAR + WARM_BATCH, a power of two */
#define HINT_SLOTS 65536

struct walk_hint {
	__u64 task;
	__u64 entry;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HINT_SLOTS);
	__type(key, __u32);
	__type(value, struct walk_hint);
} walk_hints SEC(".maps");

struct walk_ahead {
	__u64 task[WARM_RING]; /* by walk position */
	__u64 entry[WARM_RING];
	__u32 tid[WARM_RING];
	/* where a run is in the process list (a count in a register would
	 * keep the verifier from seeing that the loop's states converge) */
	__u32 proc_pos;
};

static struct walk_ahead ahead;

static __always_inline __u32 ring_slot(__u32 pos)
{
	opaque(pos);
	return pos & (WARM_RING - 1);
}

static __always_inline struct walk_hint *hint_of(__u32 tid)
{
	__u32 i = tid & (HINT_SLOTS - 1);

	return bpf_map_lookup_elem(&walk_hints, &i);
}

static __always_inline void touch(unsigned long addr)
{
	struct list_head *l = bpf_rdonly_cast(
		(void *)addr, bpf_core_type_id_kernel(struct list_head));
	void *v = l->next;

	barrier_var(v);
}

static __always_inline struct task_struct *task_at(__u64 addr)
{
	return bpf_rdonly_cast((void *)addr,
			       bpf_core_type_id_kernel(struct task_struct));
}

/* Load a value only to have its line fetched. */
#define fetch(x)                                                               \
	({                                                                     \
		__u64 __v = (__u64)(x);                                        \
		barrier_var(__v);                                              \
	})

/* The task's fields the record and the iterator's next step read, and
 * its entry's two lines. */
static __always_inline void warm_far(__u32 i)
{
	struct task_struct *task;
	__u64 e = ahead.entry[i];

	if (!ahead.task[i])
		return;
	task = task_at(ahead.task[i]);
	fetch(task->se.sum_exec_runtime);
	fetch(task->sched_info.run_delay);
	fetch(task->sched_info.last_queued);
	fetch(task->group_leader);
	fetch(task->bpf_storage);
	fetch(task->signal);
	fetch(task->thread_node.next);
	fetch(task->flags);
	fetch(task->pid);
	if (e) {
		touch(e);
		touch(e + 64);
	}
}

/* What those lines point to: the table the storage lookup reads first
 * (16 pointers: two lines), the quick slot, the thread's hint, and what
 * the first thread of a process reads for all of them: the end of the
 * thread list (in signal_struct) and the leader's start time and name. */
static __always_inline void warm_near(__u32 i)
{
	struct task_struct *task, *leader;
	unsigned long st;
	struct quick *q;
	__u64 key;

	if (!ahead.task[i])
		return;
	task = task_at(ahead.task[i]);
	st = (unsigned long)task->bpf_storage;
	if (st) {
		touch(st);
		touch(st + 64);
	}
	fetch(task->signal->thread_head.next);
	leader = task->group_leader;
	fetch(leader->start_time);
	fetch(leader->comm[0]);
	q = quick_of(task, &key);
	if (q)
		fetch(q->key);
	touch((unsigned long)hint_of(task->pid));
}

/* Before the thread at pos: learn where the one WARM_FAR on is, and at
 * the end of a batch ask for the lines of the next batch. */
static __always_inline void warm_ahead(__u32 pos, struct task_struct *task)
{
	struct walk_hint *h = hint_of(task->pid);
	__u32 i = ring_slot(pos + WARM_FAR), k;

	if (!ksym_exists(bpf_rdonly_cast))
		return;
	ahead.task[i] = h ? h->task : 0;
	ahead.entry[i] = h ? h->entry : 0;
	if (pos % WARM_BATCH != WARM_BATCH - 1)
		return;
	for (k = 0; k < WARM_BATCH; k++)
		warm_far(ring_slot(pos + WARM_FAR - k));
	for (k = 0; k < WARM_BATCH; k++)
		warm_near(ring_slot(pos + WARM_NEAR - k));
}

/* After it: it is where the thread WARM_FAR before it should look next
 * time.  Written only when it changed: a steady walk dirties nothing. */
static __always_inline void note_ahead(__u32 pos, struct task_struct *task,
				       __u64 entry)
{
	struct walk_hint *h;

	ahead.tid[ring_slot(pos)] = task->pid;
	if (pos < WARM_FAR)
		return;
	h = hint_of(ahead.tid[ring_slot(pos - WARM_FAR)]);
	if (!h)
		return;
	if (h->task != (__u64)task)
		h->task = (__u64)task;
	if (h->entry != entry)
		h->entry = entry;
}

/* The record of one live thread, brought up to now; false if there is
 * none to give (not profiled, no storage, torn, or dead already).  *entry
 * says where its storage entry is, for the next walk's warming.  A
 * function of its own, not inlined: inside the open-coded walk's loops
 * the verifier took 1.4 s over the inlined body, and 0.1 s over this. */
static __noinline bool thread_rec(struct task_struct *task,
				  struct wc_task_rec *r, __u64 *entry)
{
	struct wc_task *t;

	if (!profiled(task))
		return false;
	t = bpf_task_storage_get(&tasks, task, 0, 0);
	if (!t)
		t = adopt(task);
	if (!t)
		return false;
	*entry = (__u64)t;
	if (!snapshot(task, t, r)) {
		count(WC_CNT_TORN_READS);
		return false;
	}
	/* A dead thread's final record went through the exit ring; a zombie
	 * leader stays visible here and must not be counted twice. */
	if (r->state == WC_DEAD)
		return false;
	t->walked_ns = sum_slots(r->time_ns);
	fill_identity(r, task);
	/* its counters are as of now, give or take a tick: a walk the
	 * host stalls in the middle must not date them all alike */
	r->read_ns = bpf_ktime_get_ns();
	t->walked_at = r->read_ns;
	return true;
}

extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
			     unsigned int flags) __weak __ksym;
extern struct task_struct *
bpf_iter_task_next(struct bpf_iter_task *it) __weak __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __weak __ksym;
extern struct task_struct *bpf_task_from_pid(s32 pid) __weak __ksym;
extern struct task_struct *
bpf_task_acquire(struct task_struct *p) __weak __ksym;
extern void bpf_task_release(struct task_struct *p) __weak __ksym;
extern void bpf_rcu_read_lock(void) __weak __ksym;
extern void bpf_rcu_read_unlock(void) __weak __ksym;

/*
 * The same walk, open-coded (kernels with bpf_iter_task, 6.7+): it skips
 * the seq_file machinery and the pid lookup per thread that make the
 * iterator above cost twice as much a thread.  User space runs it once per
 * range of process ids [snap.lo, snap.hi), each holding about as many
 * threads as it wants handled in one go (a run does not yield the CPU),
 * and reads the records the run wrote, snaps[0, snap.count), where they
 * are: the array is mapped into user space.  (A ring buffer's reserve and
 * commit took 280 ns a record here, more than the rest of a thread's
 * record; the run is the array's only writer, and user space reads it
 * only once the run has returned.)  A run that fills the array says where
 * it stopped (stop_tgid, stop_tid: the thread not written); user space
 * takes the records, runs the rest of that process (resume_tid) and then
 * the process ids on either side of it again.  A thread written twice in
 * one read costs nothing: records are cumulative.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct wc_task_rec);
} snaps SEC(".maps");

struct wc_snap_args snap;

/* Write the threads of one process, from `from` on; false once the array
 * is full (the stop is noted). */
static __always_inline bool snap_threads(struct task_struct *from)
{
	struct bpf_iter_task it;
	struct task_struct *task;
	struct wc_task_rec *r;
	bool ok = true;
	__u64 entry;

	bpf_iter_task_new(&it, from, BPF_TASK_ITER_PROC_THREADS);
	while ((task = bpf_iter_task_next(&it))) {
		warm_ahead(snap.pos, task);
		r = bpf_map_lookup_elem(&snaps, &snap.count);
		if (!r) {
			snap.stop_tgid = task->tgid;
			snap.stop_tid = task->pid;
			ok = false;
			break;
		}
		__builtin_memset(r, 0, sizeof(*r));
		entry = 0;
		if (thread_rec(task, r, &entry))
			snap.count++;
		note_ahead(snap.pos, task, entry);
		snap.pos++;
	}
	bpf_iter_task_destroy(&it);
	return ok;
}

/*
 * Every run walks the whole process list to find the processes of its
 * range, one pointer after another (a quarter of a millisecond a pass at
 * 1,000 processes, cold).  The list changes little between passes (three
 * a read at 10,000 threads), so each pass notes where it found its nth
 * process, and the next asks for the lines of PROC_BATCH processes at
 * once, PROC_FAR ahead, from those notes: the two lines its step and its
 * test read.  A note that is off (the list changed) costs only its loads.
 */
#define PROC_BATCH 8
#define PROC_FAR (2 * PROC_BATCH)
#define PROC_SLOTS 65536

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PROC_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} walk_procs SEC(".maps");

static __always_inline void warm_procs(__u32 k, struct task_struct *p)
{
	__u64 *at = bpf_map_lookup_elem(&walk_procs, &k);
	struct task_struct *q;
	__u32 i, j;

	if (!at || !ksym_exists(bpf_rdonly_cast))
		return;
	if (*at != (__u64)p)
		*at = (__u64)p;
	if (k % PROC_BATCH)
		return;
	for (i = 0; i < PROC_BATCH; i++) {
		j = k + PROC_FAR + i;
		at = bpf_map_lookup_elem(&walk_procs, &j);
		if (!at || !*at)
			continue;
		q = task_at(*at);
		fetch(q->tasks.next);
		fetch(q->tgid);
	}
}

#endif /* WC_WALK_BPF_H */
