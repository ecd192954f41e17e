/*
 * wc_memo.h - what one flush has already symbolized, as folded-frame ids.
 *
 * Owns: for each kernel stack (by the kernel's hash) met in the current
 * flush, the ids of its frames (root first) and how many had a name; and
 * for each user frame (process, address, leaf or caller) the id of its
 * text and whether it was a name, and the same for each place in a file
 * (module, offset).  Kernel stacks repeat across processes, a binary's
 * functions across its processes and a process's functions across its
 * stacks, so most frames of a flush are found here instead of being
 * symbolized, made safe and interned again.  The ids are wc_fold's (wc_fold_frame), good until its
 * next reset, which is why wc_memo_reset goes with it.  Bounded, all sized
 * at creation: max_stacks kernel stacks with at most 32 frames each on
 * average (one that does not fit is symbolized again when met again), and
 * max_frames user frames, a table small enough to stay in the CPU's cache:
 * when it is full it is emptied, so it suits a caller that goes through
 * the frames process by process.
 */
#ifndef WC_MEMO_H
#define WC_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wc_memo;

struct wc_memo_stats {
	uint64_t frame_hits, frame_misses, frame_clears;
	uint64_t place_hits; /* of the frame misses, found by place */
	uint64_t stack_hits, stack_misses, stacks_full;
};

struct wc_memo *wc_memo_new(uint32_t max_stacks, uint32_t max_frames);
void wc_memo_free(struct wc_memo *m);
/* Forget every id (keep the memory and the stats). */
void wc_memo_reset(struct wc_memo *m);

/* The ids of a remembered kernel stack into out (at most max), and how
 * many had a name; the count, or -1 if the stack is not remembered. */
int wc_memo_stack_get(struct wc_memo *m, uint64_t hash, uint32_t *out,
		      size_t max, uint32_t *named);
/* Remember n ids of a stack (root first); false if it does not fit. */
bool wc_memo_stack_put(struct wc_memo *m, uint64_t hash, const uint32_t *ids,
		       size_t n, uint32_t named);

/* The id of a user frame of process pid at addr (caller: a return
 * address); false if not remembered. */
bool wc_memo_frame_get(struct wc_memo *m, uint32_t pid, uint64_t addr,
		       bool caller, uint32_t *id, bool *named);
/* false if addr is 0 (never remembered) or pid is out of range. */
bool wc_memo_frame_put(struct wc_memo *m, uint32_t pid, uint64_t addr,
		       bool caller, uint32_t id, bool named);

/* The same by place (wc_sym_user_place: a module and a file offset),
 * across processes: the processes of one binary share their names.  In
 * the same table as the frames, emptied with it. */
bool wc_memo_place_get(struct wc_memo *m, uint32_t mod, uint64_t off,
		       uint32_t *id, bool *named);
bool wc_memo_place_put(struct wc_memo *m, uint32_t mod, uint64_t off,
		       uint32_t id, bool named);

void wc_memo_get_stats(const struct wc_memo *m, struct wc_memo_stats *st);

#endif /* WC_MEMO_H */
