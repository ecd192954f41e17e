/*
 * wc_sym_priv.h - what the symbolizer's helper process gives up before it
 * reads anything a user controls.
 *
 * Owns: nothing; it changes the calling process for good.  The helper
 * needs to read every process's maps, memory and files, and nothing else:
 * it keeps the three capabilities that reading takes and loses the rest,
 * may gain no privilege again (no_new_privs), opens files as nobody (so
 * it could write only where anyone may, and RLIMIT_FSIZE 0 makes that
 * nothing) where it may change its ids, else as itself under a stricter
 * seccomp filter, dumps no core, and has bounded descriptors and address
 * space.
 */
#ifndef WC_SYM_PRIV_H
#define WC_SYM_PRIV_H

/* 0, or -1 with errno if a step that must work did not. */
int wc_sym_priv_drop(void);

#endif /* WC_SYM_PRIV_H */
