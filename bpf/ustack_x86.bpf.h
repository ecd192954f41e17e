/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ustack_x86.bpf.h - the user stack on x86-64: the frame-pointer
 * walk and the recovery of callers lost in functions without frame
 * pointers.
 *
 * Decodes x86-64 call instructions and frame layouts: another
 * architecture needs its own, so a build for one stops here.
 *
 * Included once, in order, by wallclock.bpf.c.
 */
#ifndef WC_USTACK_X86_BPF_H
#define WC_USTACK_X86_BPF_H

#ifndef __TARGET_ARCH_x86
#error "the user-stack walk decodes x86-64; write one for this architecture"
#endif

/*
 * Frame pointers lose the caller of a function built without them, and
 * Debian's libc is: a thread blocked in nanosleep() shows libc and then
 * the caller's caller.  The lost return address is on the stack between
 * the stack pointer and the frame pointer (the frame of the function
 * without one), so look there for words that point into executable memory
 * right after a call instruction, and splice them in after the innermost
 * frame, in stack order (which is call order).  Requiring both makes a
 * stale pointer in a local variable an unlikely impostor.
 */
#define K_VM_EXEC 0x4

/*
 * Whether an address is in executable memory is bpf_find_vma()'s to say,
 * but with IRQs off (the sampler, the switch hook) it can answer only once
 * until the CPU next takes interrupts (it releases the mmap lock from an
 * irq_work), and each answer costs that interrupt.  So each process keeps
 * the executable mappings it was found to have, and a walk asks about at
 * most one new one.  A kept range can only go stale by being unmapped
 * while its process lives on, and a candidate must still follow a call
 * instruction.
 */
struct vma_answer {
	__u64 start;
	__u64 end;
	bool exec;
};

static long vma_note(struct task_struct *task, struct vm_area_struct *vma,
		     void *data)
{
	struct vma_answer *a = data;

	a->start = vma->vm_start;
	a->end = vma->vm_end;
	a->exec = (vma->vm_flags & K_VM_EXEC) != 0;
	return 0;
}

static __always_inline struct texts *texts_of(struct task_struct *task)
{
	struct text_key k = {.mm = (__u64)task->mm, .tgid = task->tgid};
	struct texts *x = bpf_map_lookup_elem(&texts, &k), fresh = {};

	if (x)
		return x;
	bpf_map_update_elem(&texts, &k, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&texts, &k);
}

/* Whether a kept range of x holds w; global for the reason of
 * wc_hash_stack(). */
__noinline int wc_texts_hold(const struct texts *x, __u64 w)
{
	__u32 i;

	if (!x)
		return 0;
	for (i = 0; i < TEXTS; i++)
		if (w >= x->start[i] && w < x->end[i])
			return 1;
	return 0;
}

/* Whether w is in an executable mapping of task: false if not, or not
 * known and this walk's one question was already asked.  The program's
 * own text needs no question: its mm says where it is. */
static __always_inline bool is_exec(struct texts *x, struct task_struct *task,
				    __u64 w, __u8 *asked)
{
	struct vma_answer a = {};
	struct mm_struct *mm = task->mm;
	__u32 i;

	if (mm && w >= mm->start_code && w < mm->end_code)
		return true;
	if (wc_texts_hold(x, w))
		return true;
	if (*asked)
		return false;
	*asked = 1;
	if (bpf_find_vma(task, w, vma_note, &a, 0) || !a.exec || a.end <= w)
		return false;
	i = x->next++ % TEXTS;
	x->start[i & (TEXTS - 1)] = a.start;
	x->end[i & (TEXTS - 1)] = a.end;
	return true;
}

/* x86-64 calls: e8 rel32 (5 bytes), and ff /2 in its 2, 3, 4, 6 and 7
 * byte forms (register, disp8, sib+disp8, disp32 or rip, sib+disp32). */
static __always_inline bool after_call(__u64 ret)
{
	__u8 b[8];

	if (bpf_probe_read_user(b, sizeof(b), (void *)(ret - 8)))
		return false;
	if (b[3] == 0xe8)
		return true;
	return (b[6] == 0xff && (b[7] & 0x38) == 0x10) ||
	       (b[5] == 0xff && (b[6] & 0x38) == 0x10) ||
	       (b[4] == 0xff && (b[5] & 0x38) == 0x10) ||
	       (b[2] == 0xff && (b[3] & 0x38) == 0x10) ||
	       (b[1] == 0xff && (b[2] & 0x38) == 0x10);
}

/* What the search's callbacks need to reach; its scalars are in
 * sc->scan. */
struct scan {
	struct scratch *sc;
	struct texts *texts;
	struct task_struct *task;
};

/* A return address: in user text, not the stack itself, right after a
 * call, in executable memory. */
static __always_inline bool is_return(struct scan *c, __u64 w)
{
	struct scan_vars *v = &c->sc->scan;

	if (w < 0x10000 || w >= 0x800000000000ULL ||
	    (w >= v->sp - 0x100000 && w < v->sp + 0x800000))
		return false;
	/* the cheap test first: asking about a mapping costs an IPI */
	return after_call(w) && is_exec(c->texts, c->task, w, &v->asked);
}

/* A stack address above `at`, where a frame's record may be. */
static __always_inline bool above(__u64 at, __u64 p)
{
	return p > at && p < at + 0x800000 && !(p & 7);
}

/*
 * Whether word j is the caller's frame pointer in a frame record (the
 * word after it being a return address) of code built with frame
 * pointers, seen from a function without them (libc's pthread_cond_wait
 * uses rbp for data, so the kernel's walk stops at the leaf).  The record
 * it points to must be one too, or the end of the chain (a saved frame
 * pointer of 0): a pointer into the stack beside a code address is not
 * enough.
 */
static __noinline bool is_record(struct scan *c, __u64 j)
{
	struct scratch *sc = c->sc;
	__u64 fp, *next = sc->record;

	/* masked as the verifier sees it, not folded into the caller's i */
	opaque(j);
	fp = sc->words[j & (SCAN_WORDS - 1)];
	if (!above(sc->scan.sp + j * 8, fp) ||
	    bpf_probe_read_user(next, sizeof(sc->record), (void *)fp))
		return false;
	return (next[0] == 0 || above(fp, next[0])) && next[1] &&
	       after_call(next[1]);
}

/* One word of the scan; a bpf_loop() body, so the verifier walks it once
 * rather than once per word. */
static long scan_word(__u64 i, void *data)
{
	struct scan *c = data;
	struct scratch *sc = c->sc;
	struct scan_vars *v;
	__u64 w;
	__u32 n;

	if (!sc || !c->texts)
		return 1;
	v = &sc->scan;
	n = v->n;
	if (i >= v->words || i >= SCAN_WORDS || n >= SCAN_CALLERS)
		return 1;
	w = sc->words[i & (SCAN_WORDS - 1)];
	if (!is_return(c, w))
		return 0;
	if (v->search && i > 0 && is_record(c, i - 1)) {
		v->record = (__u32)i;
		return 1;
	}
	sc->callers[n & (SCAN_CALLERS - 1)] = w;
	v->n = n + 1;
	return 0;
}

/* One frame of a frame-pointer walk from a record into sc->walk; a
 * bpf_loop() body. */
static long fp_step(__u64 i, void *data)
{
	struct scan *c = data;
	struct scratch *sc = c->sc;
	struct wc_stack *w;
	__u64 *rec, fp;
	__u32 n;

	if (!sc)
		return 1;
	w = &sc->walk;
	rec = sc->record;
	fp = sc->scan.fp;
	n = w->nr;
	if (n >= WC_STACK_DEPTH ||
	    bpf_probe_read_user(rec, sizeof(sc->record), (void *)fp) || !rec[1])
		return 1;
	w->ip[n] = rec[1];
	w->nr = n + 1;
	if (!above(fp, rec[0]))
		return 1;
	sc->scan.fp = rec[0];
	return 0;
}

/*
 * Return addresses between the stack pointer and the frame pointer (the
 * frame of the innermost function, which has none), or, where the kernel's
 * walk found nothing past the leaf (rbp is not a frame pointer there), in
 * the first SCAN_WORDS words, up to the first frame record: the walk then
 * goes on from it, into sc->walk after the leaf.
 */
static __always_inline __u32 find_callers(struct scratch *sc,
					  struct task_struct *task,
					  struct pt_regs *regs)
{
	__u64 sp = BPF_CORE_READ(regs, sp), bp = BPF_CORE_READ(regs, bp);
	struct scan c = {.sc = sc, .task = task};
	struct scan_vars *v = &sc->scan;
	__u32 n;

	__builtin_memset(v, 0, sizeof(*v));
	v->sp = sp;
	v->search = sc->walk.nr == 1;
	if (v->search)
		v->words = SCAN_WORDS;
	else if (bp <= sp || bp - sp > SCAN_WORDS * 8 * 2)
		return 0;
	else
		v->words = (bp - sp) / 8;
	if (bpf_probe_read_user(sc->words, sizeof(sc->words), (void *)sp))
		return 0;
	c.texts = texts_of(task);
	if (!c.texts)
		return 0;
	bpf_loop(SCAN_WORDS, scan_word, &c, 0);
	if (v->record) {
		v->fp = sp + (__u64)(v->record - 1) * 8;
		bpf_loop(WC_STACK_DEPTH, fp_step, &c, 0);
	}
	n = v->n;
	return n < SCAN_CALLERS ? n : SCAN_CALLERS;
}

/* sc->u = sc->walk[0], the first n of sc->callers, sc->walk[1..]: at
 * most WC_STACK_DEPTH frames.  Global for the reason of wc_hash_stack(). */
__noinline int wc_splice(struct scratch *sc, __u32 n)
{
	struct wc_stack *out, *walk;
	__u32 i, j;

	if (!sc)
		return 0;
	out = &sc->u;
	walk = &sc->walk;
	out->nr = 0;
	if (walk->nr == 0)
		return 0;
	out->ip[0] = walk->ip[0];
	for (i = 0; i < SCAN_CALLERS && i < n; i++) {
		out->ip[1 + i] = sc->callers[i];
		barrier();
	}
	for (j = 1; j < WC_STACK_DEPTH && j < walk->nr; j++) {
		__u32 k = j + i;

		if (k >= WC_STACK_DEPTH)
			break;
		out->ip[k] = walk->ip[j];
		barrier(); /* a loop, not a memmove call BPF lacks */
	}
	out->nr = walk->nr + i > WC_STACK_DEPTH ? WC_STACK_DEPTH : walk->nr + i;
	return 0;
}

/* The current thread's user stack into sc->u, walked by frame pointers,
 * callers recovered; false if the kernel could not walk it. */
static __always_inline bool walk_user_fp(void *ctx, struct scratch *sc,
					 struct task_struct *task,
					 struct pt_regs *regs)
{
	long len = bpf_get_stack(ctx, sc->walk.ip, sizeof(sc->walk.ip),
				 BPF_F_USER_STACK);
	__u32 n;

	sc->u.nr = 0;
	if (len <= 0) {
		if (len < 0)
			count(WC_CNT_STACK_ERRORS);
		return false;
	}
	sc->walk.nr = (__u32)(len / sizeof(__u64));
	n = find_callers(sc, task, regs);
	wc_splice(sc, n);
	return sc->u.nr > 0;
}

#endif /* WC_USTACK_X86_BPF_H */
