/*
 * wc_sym_kallsyms.h - the kernel's text symbols, read from /proc/kallsyms
 * once, sorted and binary-searched.
 *
 * Owns: nothing of its own: it fills a caller's wc_symtab.  Names of
 * symbols in modules are stored as "func [module]", which is how they are
 * shown, so a lookup needs no formatting.  kallsyms has no sizes: a symbol
 * covers up to the next one, at most WC_KALLSYMS_UNSIZED_MAX bytes, so an
 * address past the last known symbol (a module or BPF program loaded
 * since) misses instead of landing on a wrong name.
 */
#ifndef WC_SYM_KALLSYMS_H
#define WC_SYM_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "sym/wc_sym_tab.h"

/* Larger than any function the kernel has, small next to module gaps. */
#define WC_KALLSYMS_UNSIZED_MAX (64 * 1024)

/*
 * Read path (/proc/kallsyms) into t (initialised here, finished on
 * success), at most max_bytes.  0, or -1 with a reason in err: among them
 * "addresses hidden" when every address reads as zero (kernel.kptr_restrict,
 * or not running as root).
 */
int wc_kallsyms_load(struct wc_symtab *t, const char *path, size_t max_bytes,
		     char *err, size_t errlen);

/* A hash of the loaded modules' names and addresses (/proc/modules):
 * it changes when modules come and go, not with their use counts.  0 if
 * there is no such file (a kernel without modules). */
uint64_t wc_kallsyms_modules_sig(const char *path);

#endif /* WC_SYM_KALLSYMS_H */
