/*
 * wc_stacks.h - one flush window of stacks, between the kernel's tables and
 * the folded file: raw addresses, not yet symbolized.
 *
 * Owns: the window's weights per (group, process, kind, user stack, kernel
 * stack), and a copy of every stack they name, keyed by the kernel's hash.
 * Both are bounded at creation (weights by count, with 64 bytes each of
 * scratch for a walk, their group names stored once per window; stacks by
 * count and bytes); a weight that does not
 * fit is counted and its time is left to its group's remainder line in the
 * folded file.
 *
 * The kernel stores each distinct stack once and hands it over once (take
 * deletes it), but weights naming it can keep arriving in later windows,
 * so a stack outlives the window it came in.  Once a whole window has
 * passed without naming it, it is let go (the caller tells the kernel to
 * store it again when it comes back) but kept until the caller reaps, so
 * a weight the kernel recorded just before still finds it.  Not
 * thread-safe.
 */
#ifndef WC_STACKS_H
#define WC_STACKS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/wallclock.h"
#include "core/wc_config.h"

struct wc_stacks;

struct wc_stack_entry {
	const char *group; /* good during the walk */
	uint32_t tgid;
	uint32_t kind; /* enum wc_state: WC_ONCPU, WC_SLEEP or WC_BLOCKED */
	uint64_t ustack;
	uint64_t kstack;
	uint64_t weight; /* sample ticks on-CPU, nanoseconds off-CPU */
};

/* A stored stack: addresses innermost first. */
struct wc_stack_view {
	const uint64_t *ip;
	uint32_t nr;
};

struct wc_stacks_stats {
	uint64_t weights_dropped; /* weights that found the table full */
	uint64_t stacks_dropped;  /* stacks that found the store full */
	uint32_t weights;	  /* entries in this window */
	uint32_t stacks;	  /* stacks held */
	size_t stack_bytes;	  /* memory held by stacks */
};

int wc_stacks_new(uint32_t max_weights, uint32_t max_stacks,
		  size_t max_stack_bytes, struct wc_stacks **out);
void wc_stacks_free(struct wc_stacks *s);

/* Start fetching what adding k, and asking for its stacks, will look at:
 * a batch of weights goes faster prefetched all first. */
void wc_stacks_prefetch(const struct wc_stacks *s,
			const struct wc_stack_key *k);

/* Add weight under group (copied) for a key drained from the kernel. */
int wc_stacks_add(struct wc_stacks *s, const char *group,
		  const struct wc_stack_key *k, uint64_t weight);

/* Whether the stack with this hash is held (and marks it used in this
 * window); if not, the caller takes it from the kernel and puts it. */
bool wc_stacks_has(struct wc_stacks *s, uint64_t hash);
int wc_stacks_put(struct wc_stacks *s, uint64_t hash,
		  const struct wc_stack *st);
bool wc_stacks_get(const struct wc_stacks *s, uint64_t hash,
		   struct wc_stack_view *out);

/* The window's weights by process, the processes with the most on-CPU
 * weight first (then the most off-CPU, then by PID), and within one by a
 * 32-bit fold of the user stack's hash, so that a user stack's weights
 * follow each other (a symbolizer's caches then stay hot, and a budget
 * for symbols is spent on the busiest first); in the same order every
 * time. */
typedef void (*wc_stack_entry_fn)(void *arg, const struct wc_stack_entry *e);
void wc_stacks_foreach(struct wc_stacks *s, wc_stack_entry_fn fn, void *arg);

/* Close the window: weights go, stacks unnamed for a whole window are let
 * go (let_go is called with each hash, if not NULL). */
typedef void (*wc_stack_hash_fn)(void *arg, uint64_t hash);
void wc_stacks_next_window(struct wc_stacks *s, wc_stack_hash_fn let_go,
			   void *arg);
/* Free the stacks let go and not named since.  A stack let go and never
 * reaped is freed at the next window's end. */
void wc_stacks_reap(struct wc_stacks *s);

void wc_stacks_stats(const struct wc_stacks *s, struct wc_stacks_stats *out);

#endif /* WC_STACKS_H */
