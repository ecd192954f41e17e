/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stackstore.bpf.h - stacks stored once, by hash, and the weights
 * that name them.
 *
 * Owns nothing beyond the maps: user stacks the kernel already holds
 * (wc_held_bucket) are not stored again.
 *
 * Included once, in order, by wallclock.bpf.c.
 */
#ifndef WC_STACKSTORE_BPF_H
#define WC_STACKSTORE_BPF_H

#define STACK_NONE WC_STACK_NONE
#define STACK_DROPPED WC_STACK_DROPPED

/* A global function: the verifier checks it once, on its own, rather
 * than its loop of WC_STACK_DEPTH frames at every call and for every
 * state a caller brings; a call costs one return, not one a frame. */
__noinline __u64 wc_hash_stack(const struct wc_stack *s)
{
	__u64 h;
	__u32 i;

	if (!s)
		return WC_STACK_LABELS;
	h = 0xcbf29ce484222325ULL ^ s->nr;
	for (i = 0; i < WC_STACK_DEPTH && i < s->nr; i++) {
		h = (h ^ s->ip[i]) * 0x100000001b3ULL;
		h ^= h >> 31;
	}
	return h >= WC_STACK_LABELS ? h : h + WC_STACK_LABELS;
}

/* Whether user space holds this stack already: then naming it is enough
 * (and storing it again would only be copied out and thrown away). */
static __always_inline bool user_holds(__u64 h)
{
	__u32 i = wc_held_bucket_of(h, held_mask);
	struct wc_held_bucket *b = bpf_map_lookup_elem(&held, &i);
	int w;

	if (!b)
		return false;
	for (w = 0; w < WC_HELD_WAYS; w++)
		if (READ_ONCE(b->hash[w]) == h)
			return true;
	return false;
}

/* Store a stack the kernel just wrote into s (len bytes, or an error) and
 * return its hash. */
static __always_inline __u64 save_stack(struct wc_stack *s, long len)
{
	__u64 h;
	long rc;

	if (len <= 0) {
		if (len < 0)
			count(WC_CNT_STACK_ERRORS);
		return STACK_NONE;
	}
	s->nr = (__u32)(len / sizeof(__u64));
	if (s->nr >= WC_STACK_DEPTH)
		count(WC_CNT_STACKS_TRUNCATED);
	h = wc_hash_stack(s);
	if (user_holds(h)) {
		count(WC_CNT_STACKS_KNOWN);
		return h;
	}
	/* the short layout is a prefix of the full one */
	if (s->nr <= WC_SHORT_DEPTH)
		rc = bpf_map_update_elem(&stacks, &h, s, BPF_NOEXIST);
	else
		rc = bpf_map_update_elem(&deep_stacks, &h, s, BPF_NOEXIST);
	if (rc && rc != -K_EEXIST) {
		count(WC_CNT_STACKS_FULL);
		return STACK_DROPPED;
	}
	return h;
}

static __always_inline void add_weight(__u32 tgid, __u32 kind, __u64 ustack,
				       __u64 kstack, __u64 w)
{
	struct wc_stack_key k = {
		.tgid = tgid, .kind = kind, .ustack = ustack, .kstack = kstack};
	__u64 *v = bpf_map_lookup_elem(&stack_counts, &k);
	long rc;

	if (v) {
		__sync_fetch_and_add(v, w);
		return;
	}
	rc = bpf_map_update_elem(&stack_counts, &k, &w, BPF_NOEXIST);
	if (rc == -K_EEXIST) {
		v = bpf_map_lookup_elem(&stack_counts, &k);
		if (v)
			__sync_fetch_and_add(v, w);
	} else if (rc) {
		count(WC_CNT_STACK_COUNTS_FULL);
	}
}

static __always_inline struct scratch *scratch_buf(__u32 which)
{
	return bpf_map_lookup_elem(&scratch, &which);
}

#endif /* WC_STACKSTORE_BPF_H */
