/* SPDX-License-Identifier: GPL-2.0 */
/*
 * unwind_x86.bpf.h - the user stack walked by unwind tables on x86-64:
 * each frame's caller from its file's rows (plugin/unwind puts them),
 * frame pointers only where no table covers the code and the frame
 * pointer is known good.
 *
 * Owns: the rows array, the files hash, the walks' wants, and each
 * process's mappings as the walks learnt them.
 *
 * Included once, in order, by wallclock.bpf.c, after ustack_x86.bpf.h.
 */
#ifndef WC_UNWIND_X86_BPF_H
#define WC_UNWIND_X86_BPF_H

/* User space sizes the first two before load, and maps and fills the
 * rows (see wc_unwind.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wc_uw_row);
} uw_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct wc_uw_key);
	__type(value, struct wc_uw_file);
} uw_files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct wc_uw_key);
	__type(value, struct wc_uw_want);
} uw_wants SEC(".maps");

/*
 * A process's executable mappings as its walks found them.  Finding one
 * costs bpf_find_vma(), which with IRQs off (the sampler, the switch
 * hook) answers once until the CPU next takes interrupts: so one new
 * mapping a walk, and a walk that needs a second ends there, counted.
 * exec gives a process a new mm, so a new entry.
 */
#define UW_MAPS 16
#define UWM_FILE 0x1 /* file-backed: dev, ino name it */

struct uw_map {
	__u64 vma; /* where the kernel kept it, to tell it is still there */
	__u64 start;
	__u64 end;
	__u64 delta; /* file offset = address + delta */
	__u64 ino;
	__u32 dev;
	__u32 gen;
	__u32 flags;
	__u32 pad;
};

struct uw_proc {
	struct uw_map m[UW_MAPS];
	__u32 next;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, struct text_key);
	__type(value, struct uw_proc);
} uw_procs SEC(".maps");

/* Rows a binary search may need to look at: log2 of WC_CFI_ROWS_MAX. */
#define UW_SEARCH 24
#define UW_STACK_SPAN 0x800000 /* a frame's CFA is this near its SP */
#define UW_WANT_AGAIN_NS 1000000000ULL
#define UW_USED_EVERY_NS 1000000000ULL

/* bpf_find_vma()'s callback: the mapping, read after (its context is
 * on the BPF stack, which the walk's loop shares with the program). */
static long uw_vma_note(struct task_struct *task, struct vm_area_struct *vma,
			void *data)
{
	*(__u64 *)data = (__u64)vma;
	return 0;
}

/*
 * A walk's state.  Its numbers live in the per-CPU scratch (struct
 * uw_regs), not on the BPF stack: there the verifier knows them exactly
 * and would check the loop's body once for every frame count.
 */
struct uwalk {
	struct scratch *sc;
	struct uw_regs *r; /* &sc->uw */
	struct task_struct *task;
	struct uw_proc *proc;
};

/* The walk ends early: counted, and said by a label frame. */
static __always_inline void uw_end(struct uwalk *w, __u32 why)
{
	switch (why) {
	case WC_FL_NO_TABLE:
		count(WC_CNT_UW_END_NO_TABLE);
		break;
	case WC_FL_UNLEARNT:
		count(WC_CNT_UW_END_UNLEARNT);
		break;
	case WC_FL_BAD_READ:
		count(WC_CNT_UW_END_BAD_READ);
		break;
	case WC_FL_RULE:
		count(WC_CNT_UW_END_RULE);
		break;
	case WC_FL_PENDING:
		count(WC_CNT_UW_END_PENDING);
		break;
	default:
		count(WC_CNT_UW_END_SIGNAL);
		break;
	}
	w->r->label = why;
}

static __always_inline __u64 uw_now(struct uwalk *w)
{
	if (!w->r->now)
		w->r->now = bpf_ktime_get_ns();
	return w->r->now;
}

static __always_inline struct uw_proc *uw_proc_of(struct task_struct *task)
{
	struct text_key k = {.mm = (__u64)task->mm, .tgid = task->tgid};
	struct uw_proc *p = bpf_map_lookup_elem(&uw_procs, &k);
	static const struct uw_proc fresh;

	if (p)
		return p;
	bpf_map_update_elem(&uw_procs, &k, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&uw_procs, &k);
}

/* How a kernel says a mapping's record is in its tree: 6.15 on, 6.4 to
 * 6.14 (with per-VMA locks); before, only the file it holds says. */
struct vm_area_struct___refcnt {
	refcount_t vm_refcnt;
} __attribute__((preserve_access_index));

struct vm_area_struct___detached {
	bool detached;
} __attribute__((preserve_access_index));

struct file___count {
	atomic_long_t f_count;
} __attribute__((preserve_access_index));

/* Whether the record at v is a mapping the kernel still has.  A freed
 * record reads as it was until it is reused, so its range, mm and file
 * alone do not tell. */
static __always_inline bool uw_vma_live(struct vm_area_struct *v)
{
	struct vm_area_struct___refcnt *r = (void *)v;
	struct vm_area_struct___detached *d = (void *)v;
	struct file___count *f;

	if (bpf_core_field_exists(r->vm_refcnt))
		return BPF_CORE_READ(r, vm_refcnt.refs.counter) != 0;
	if (bpf_core_field_exists(d->detached))
		return !BPF_CORE_READ(d, detached);
	/* a file mapped nowhere else was let go with its last mapping */
	f = (void *)BPF_CORE_READ(v, vm_file);
	if (f && bpf_core_field_exists(f->f_count))
		return BPF_CORE_READ(f, f_count.counter) != 0;
	return true;
}

/*
 * Whether cached mapping m is still what the kernel has there: a library
 * unloaded and another loaded at the same place, or two CPUs learning
 * into one slot at once, must not pair one file's rows with another's
 * code.  Read from the kernel's own record of the mapping, wherever it is
 * now: reused, it reads as another mapping; freed, as no longer in the
 * tree.
 */
static __always_inline bool uw_map_valid(struct uwalk *w,
					 const struct uw_map *m)
{
	struct vm_area_struct *v = (struct vm_area_struct *)m->vma;
	__u64 ino = 0;

	if (!uw_vma_live(v) || BPF_CORE_READ(v, vm_start) != m->start ||
	    BPF_CORE_READ(v, vm_end) != m->end ||
	    BPF_CORE_READ(v, vm_mm) != w->task->mm)
		return false;
	if (m->flags & UWM_FILE)
		ino = BPF_CORE_READ(v, vm_file, f_inode, i_ino);
	return ino == m->ino;
}

/* The first of p's cached mappings whose range holds pc; UW_MAPS if
 * none.  Global for the reason of wc_hash_stack(). */
__noinline __u32 wc_uw_slot(const struct uw_proc *p, __u64 pc)
{
	__u32 i;

	if (!p)
		return UW_MAPS;
	for (i = 0; i < UW_MAPS; i++)
		if (pc >= p->m[i].start && pc < p->m[i].end)
			return i;
	return UW_MAPS;
}

/* The mapping pc is in, learnt now if this walk may still ask; NULL if
 * not known (w->r->bad: the kernel said it is not executable code). */
static __always_inline struct uw_map *uw_map_of(struct uwalk *w, __u64 pc)
{
	struct uw_proc *p = w->proc;
	struct vm_area_struct *v;
	struct uw_map *m;
	__u64 addr = 0;
	__u32 i, stale;

	i = wc_uw_slot(p, pc);
	stale = i;
	if (i < UW_MAPS) {
		m = &p->m[i & (UW_MAPS - 1)];
		if ((w->r->valid & (1u << i)) || uw_map_valid(w, m)) {
			w->r->valid |= 1u << i;
			return m;
		}
		m->end = 0; /* stale: learnt again below */
	}
	if (w->r->asked)
		return NULL;
	w->r->asked = 1;
	if (bpf_find_vma(w->task, pc, uw_vma_note, &addr, 0) || !addr)
		goto bad;
	v = (struct vm_area_struct *)addr;
	if (!(BPF_CORE_READ(v, vm_flags) & K_VM_EXEC))
		goto bad;
	/* in the stale one's place: a library loaded again and again must
	 * not push the program's own mappings out */
	if (stale < UW_MAPS) {
		i = stale;
	} else {
		i = __sync_fetch_and_add(&p->next, 1);
		opaque(i);
	}
	i &= UW_MAPS - 1;
	m = &p->m[i];
	m->vma = addr;
	m->start = BPF_CORE_READ(v, vm_start);
	m->end = BPF_CORE_READ(v, vm_end);
	m->delta = (BPF_CORE_READ(v, vm_pgoff) << 12) - m->start;
	m->ino = BPF_CORE_READ(v, vm_file, f_inode, i_ino);
	m->gen = BPF_CORE_READ(v, vm_file, f_inode, i_generation);
	m->dev = BPF_CORE_READ(v, vm_file, f_inode, i_sb, s_dev);
	m->flags = BPF_CORE_READ(v, vm_file) ? UWM_FILE : 0;
	if (pc < m->start || pc >= m->end) {
		m->end = 0;
		goto bad;
	}
	w->r->valid |= 1u << i;
	return m;
bad:
	w->r->bad = 1;
	return NULL;
}

/* Ask user space for the table of the file w->r->key names, unless
 * asked lately.  Key and request are built in the scratch: the BPF stack
 * is the program's, and nearly full. */
static __always_inline void uw_want(struct uwalk *w, const struct uw_map *m)
{
	struct wc_uw_want *old = bpf_map_lookup_elem(&uw_wants, &w->r->key);
	struct wc_uw_want *want = &w->r->want;

	want->pid = w->task->tgid;
	want->start = m->start;
	want->end = m->end;
	want->ns = uw_now(w);
	if (old && want->ns - old->ns < UW_WANT_AGAIN_NS)
		return;
	if (bpf_map_update_elem(&uw_wants, &w->r->key, want, BPF_ANY))
		count(WC_CNT_UW_WANTS_DROPPED);
}

/* What a mapping's file has for pc. */
enum uw_cover {
	UW_ROW,	    /* a row */
	UW_NONE,    /* no table: no CFI, did not fit, anonymous (JIT) code */
	UW_PENDING, /* not known yet: asked for */
	UW_TURNED_AWAY, /* no table, for a reason frame pointers do not mend */
};

/* Bucket b of f's index: the row (from f->first) it starts at. */
static __always_inline __u32 uw_bucket(const struct wc_uw_file *f, __u32 b)
{
	__u32 at = f->first + f->n + b / 2;
	__u32 *r = bpf_map_lookup_elem(&uw_rows, &at);

	return r ? r[b & 1] : 0;
}

/* The last of f's rows at or before off (its place in the rows array),
 * by binary search from off's bucket; UW_NO_ROW if a row is missing or
 * the search did not end.  A global function: the verifier checks it
 * once on its own, rather than its loop at every call and for every
 * state a caller brings. */
#define UW_NO_ROW 0xffffffffu
__noinline __u32 wc_uw_find_row(const struct wc_uw_file *f, __u32 off)
{
	struct wc_uw_row *r;
	__u32 b, lo, hi, mid, i;
	__u64 at;

	if (!f || f->bshift > 32 || !f->buckets)
		return UW_NO_ROW;
	at = (__u64)off >> f->bshift;
	if (at < f->bbase)
		return UW_NO_ROW;
	/* past the last bucket: in the last, whose rows run to the end */
	b = at - f->bbase < f->buckets ? (__u32)(at - f->bbase)
				       : f->buckets - 1;
	lo = uw_bucket(f, b);
	hi = b + 1 < f->buckets ? uw_bucket(f, b + 1) + 1 : f->n;
	if (hi > f->n || lo >= hi)
		return UW_NO_ROW;
	lo += f->first;
	hi += f->first;
	for (i = 0; i < UW_SEARCH && lo + 1 < hi; i++) {
		mid = lo + (hi - lo) / 2;
		r = bpf_map_lookup_elem(&uw_rows, &mid);
		if (!r)
			return UW_NO_ROW;
		if (r->off <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo + 1 < hi ? UW_NO_ROW : lo;
}

/* What a file the kernel has no rows for offers a walk.  Frame pointers
 * stand in only where no table can be had: a file turned away for
 * another reason (refused, too slow) is most likely built like the rest,
 * without them; one the helper had no time for yet is asked for again
 * soon. */
static __always_inline enum uw_cover uw_cover_without(__u32 why)
{
	switch (why) {
	case WC_UW_DEFERRED:
		return UW_PENDING;
	case WC_UW_NO_CFI:
	case WC_UW_TOO_BIG:
	case WC_UW_NO_ROOM:
	case WC_UW_NO_HELPER:
		return UW_NONE;
	default:
		return UW_TURNED_AWAY;
	}
}

/* The row covering pc in m's file into *row, if its table has one. */
static __always_inline enum uw_cover uw_row_of(struct uwalk *w,
					       const struct uw_map *m, __u64 pc,
					       struct wc_uw_row **row)
{
	struct wc_uw_key *k = &w->r->key;
	struct wc_uw_row *r;
	struct wc_uw_file *f;
	__u64 off = pc + m->delta;
	__u32 lo;

	if (!(m->flags & UWM_FILE) || off > 0xffffffffULL)
		return UW_NONE;
	k->dev = m->dev;
	k->gen = m->gen;
	k->ino = m->ino;
	f = bpf_map_lookup_elem(&uw_files, k);
	if (!f) {
		uw_want(w, m);
		return UW_PENDING;
	}
	if (f->state != WC_UW_ROWS || !f->n)
		return uw_cover_without(f->why);
	if (uw_now(w) - f->used_ns > UW_USED_EVERY_NS)
		f->used_ns = w->r->now;
	lo = wc_uw_find_row(f, (__u32)off);
	if (lo == UW_NO_ROW)
		return UW_NONE;
	r = bpf_map_lookup_elem(&uw_rows, &lo);
	if (!r || r->off > (__u32)off || (r->rule & 15) == WC_CFA_NONE)
		return UW_NONE;
	*row = r;
	return UW_ROW;
}

/* The caller's frame by frame pointer: only where bp is known good. */
static __always_inline bool uw_fp_step(struct uwalk *w)
{
	__u64 *rec = w->sc->record;

	if (!w->r->fp_good) {
		uw_end(w, WC_FL_NO_TABLE);
		return false;
	}
	/* the outermost frame of code built with frame pointers */
	if (!w->r->bp) {
		w->r->complete = 1;
		return false;
	}
	if (w->r->bp < w->r->sp || w->r->bp - w->r->sp > UW_STACK_SPAN ||
	    (w->r->bp & 7) ||
	    bpf_probe_read_user(rec, sizeof(w->sc->record), (void *)w->r->bp) ||
	    !rec[1]) {
		uw_end(w, WC_FL_BAD_READ);
		return false;
	}
	w->r->sp = w->r->bp + 16;
	w->r->ip = rec[1];
	w->r->bp = rec[0];
	w->r->by_fp++;
	return true;
}

/* The caller's frame by row r at pc; false where the walk ends. */
static __always_inline bool uw_table_step(struct uwalk *w,
					  const struct wc_uw_row *r, __u64 pc)
{
	__u64 cfa, *rec = w->sc->record;
	__u32 kind = r->rule & 15, fp = r->rule >> 4;

	switch (kind) {
	case WC_CFA_SP:
		cfa = w->r->sp + 8 * (__u64)r->cfa;
		break;
	case WC_CFA_FP:
		if (!w->r->fp_good) {
			uw_end(w, WC_FL_RULE);
			return false;
		}
		cfa = w->r->bp + 8 * (__u64)r->cfa;
		break;
	case WC_CFA_PLT:
		cfa = w->r->sp + 8 + ((pc & 15) >= r->cfa ? 8 : 0);
		break;
	case WC_CFA_END:
		w->r->complete = 1;
		return false;
	case WC_CFA_SIGNAL:
		uw_end(w, WC_FL_SIGNAL);
		return false;
	default:
		uw_end(w, WC_FL_RULE);
		return false;
	}
	if (cfa <= w->r->sp || cfa - w->r->sp > UW_STACK_SPAN ||
	    bpf_probe_read_user(rec, 8, (void *)(cfa - 8))) {
		uw_end(w, WC_FL_BAD_READ);
		return false;
	}
	w->r->ip = rec[0];
	if (fp == WC_FP_AT) {
		if (bpf_probe_read_user(
			    &w->r->bp, 8,
			    (void *)(cfa + 8 * (__s64)r->fp_slot))) {
			uw_end(w, WC_FL_BAD_READ);
			return false;
		}
		/* restored from where this frame saved it */
		w->r->fp_good = 1;
	} else if (fp != WC_FP_SAME) {
		w->r->fp_good = 0;
	}
	w->r->sp = cfa;
	w->r->by_table++;
	/* a return address of 0: the outermost frame, by convention */
	if (!w->r->ip) {
		w->r->complete = 1;
		return false;
	}
	return true;
}

/* One frame; a bpf_loop() body.  An address is kept only once its
 * mapping is known to be executable code (the leaf's always is). */
static long uw_step(__u64 i, void *data)
{
	struct uwalk *w = data;
	struct wc_uw_row *r = NULL;
	enum uw_cover cover;
	struct uw_map *m;
	__u32 n = w->r->n;
	__u64 pc;

	if (!w->sc || !w->proc || n >= WC_STACK_DEPTH)
		return 1;
	/* a caller's pc is its call, the byte before the return address */
	pc = n ? w->r->ip - 1 : w->r->ip;
	m = uw_map_of(w, pc);
	cover = m ? uw_row_of(w, m, pc, &r) : UW_PENDING;
	if (n == 0 && cover != UW_ROW) {
		w->r->leaf_untabled = 1;
		return 1;
	}
	if (w->r->bad) {
		uw_end(w, WC_FL_BAD_READ);
		return 1;
	}
	w->sc->u.ip[n] = w->r->ip;
	w->r->n = n + 1;
	if (!m) {
		uw_end(w, WC_FL_UNLEARNT);
		return 1;
	}
	if (cover == UW_ROW && r)
		return uw_table_step(w, r, pc) ? 0 : 1;
	/* a table on its way: frame pointers would guess at code that
	 * likely has none */
	if (cover == UW_PENDING) {
		uw_end(w, WC_FL_PENDING);
		return 1;
	}
	if (cover == UW_TURNED_AWAY) {
		uw_end(w, WC_FL_NO_TABLE);
		return 1;
	}
	return uw_fp_step(w) ? 0 : 1;
}

/*
 * Measuring only (tests/bench/unwind.py): of the callers framepointer
 * mode's stack search recovers for this stack, how many a complete walk
 * by tables shows to be false (not among its frames).
 */
struct scan_check {
	struct scratch *sc;
	__u32 n;     /* callers found by the search */
	__u32 found; /* of those, in the walk's frames: one bit each */
};

static long scan_check_frame(__u64 i, void *data)
{
	struct scan_check *c = data;
	struct scratch *sc = c->sc;
	__u32 k;

	if (!sc || i >= sc->u.nr || i >= WC_STACK_DEPTH)
		return 1;
	for (k = 0; k < SCAN_CALLERS; k++)
		if (k < c->n && sc->callers[k] == sc->u.ip[i])
			c->found |= 1u << k;
	return 0;
}

static __always_inline void check_scan(void *ctx, struct scratch *sc,
				       struct task_struct *task,
				       struct pt_regs *regs)
{
	struct scan_check c = {.sc = sc};
	long len;
	__u32 k;

	len = bpf_get_stack(ctx, sc->walk.ip, sizeof(sc->walk.ip),
			    BPF_F_USER_STACK);
	if (len <= 0)
		return;
	sc->walk.nr = (__u32)(len / sizeof(__u64));
	c.n = find_callers(sc, task, regs);
	if (!c.n)
		return;
	bpf_loop(WC_STACK_DEPTH, scan_check_frame, &c, 0);
	count_n(WC_CNT_UW_SCAN_CALLERS, c.n);
	for (k = 0; k < SCAN_CALLERS; k++)
		if (k < c.n && !(c.found & (1u << k)))
			count(WC_CNT_UW_SCAN_FALSE);
}

/* The current thread's user stack into sc->u by tables where they cover
 * it; false where the innermost frame has none (walk by frame pointers
 * then, as without tables). */
static __always_inline bool walk_by_tables(void *ctx, struct scratch *sc,
					   struct task_struct *task,
					   struct pt_regs *regs)
{
	struct uw_regs *r = &sc->uw;
	struct uwalk w = {.sc = sc, .r = r, .task = task};
	__u32 n;

	sc->u.nr = 0;
	__builtin_memset(r, 0, sizeof(*r));
	r->ip = BPF_CORE_READ(regs, ip);
	r->sp = BPF_CORE_READ(regs, sp);
	r->bp = BPF_CORE_READ(regs, bp);
	r->fp_good = 1;
	w.proc = uw_proc_of(task);
	if (!w.proc || !r->ip)
		return false;
	bpf_loop(WC_STACK_DEPTH, uw_step, &w, 0);
	if (r->leaf_untabled) {
		count(WC_CNT_UW_LEAF_NO_TABLE);
		return false;
	}
	n = r->n;
	if (r->label && n < WC_STACK_DEPTH) {
		sc->u.ip[n] = WC_FRAME_LABEL + r->label;
		r->n = n + 1;
	}
	sc->u.nr = r->n < WC_STACK_DEPTH ? r->n : WC_STACK_DEPTH;
	count(WC_CNT_UW_WALKS);
	count_n(WC_CNT_UW_FRAMES_TABLE, r->by_table);
	count_n(WC_CNT_UW_FRAMES_FP, r->by_fp);
	if (r->complete)
		count(WC_CNT_UW_COMPLETE);
	if (measure_scan && r->complete)
		check_scan(ctx, sc, task, regs);
	return sc->u.nr > 0;
}

/* The current thread's user stack into sc->u; false if none. */
static __always_inline bool walk_user(void *ctx, struct scratch *sc,
				      struct task_struct *task,
				      struct pt_regs *regs)
{
	if (unwind_tables && walk_by_tables(ctx, sc, task, regs))
		return true;
	return walk_user_fp(ctx, sc, task, regs);
}

#endif /* WC_UNWIND_X86_BPF_H */
