/*
 * wc_kmemo.h - kernel stacks symbolized once per flush.
 *
 * Owns: for each kernel stack (by the kernel's hash) met in the current
 * flush, the text of its frames as the folded file shows them, root
 * first, in one arena.  Kernel stacks repeat across processes (every
 * sleeper of a host shares a handful), so most of a flush's kernel frames
 * come from here instead of the symbolizer.  Bounded: at most max_stacks
 * stacks and max_bytes of text; a stack that does not fit is symbolized
 * again when met again.  wc_kmemo_reset forgets everything (the next
 * flush may see a reloaded kallsyms) and keeps the memory.
 */
#ifndef WC_KMEMO_H
#define WC_KMEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wc_kmemo;

struct wc_kmemo *wc_kmemo_new(uint32_t max_stacks, size_t max_bytes);
void wc_kmemo_free(struct wc_kmemo *m);
void wc_kmemo_reset(struct wc_kmemo *m);

/* The frames of a remembered stack into out (at most max), and how many
 * of them had a name; the count, or -1 if the stack is not remembered.
 * The strings live until the next reset. */
int wc_kmemo_get(const struct wc_kmemo *m, uint64_t hash, const char **out,
		 size_t max, uint32_t *named);

/* Remember n frames of a stack (root first); false if it does not fit. */
bool wc_kmemo_put(struct wc_kmemo *m, uint64_t hash,
		  const char *const *frames, size_t n, uint32_t named);

#endif /* WC_KMEMO_H */
