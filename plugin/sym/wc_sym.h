/*
 * wc_sym.h - turning user and kernel addresses into function names.
 *
 * Owns: the kernel's symbol table, a table of processes (mappings, perf
 * maps), a cache of mapped files, and ELF symbol tables shared by
 * build-id; all of it until wc_sym_free().
 * Invariants: at most max_procs processes, max_modules tables and
 * max_bytes in all, each bound counted when hit; a noted process still
 * resolves after it exits; processes' maps and files are read only by
 * the helper; no network, no mmap of files.
 * Threads: not thread-safe: one caller (the consumer thread) at a time.
 * Design: docs/design.md, section "Symbolizer".
 */
#ifndef WC_SYM_H
#define WC_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WC_SYM_IDLE_CYCLES 2

enum {
	WC_SYM_UNKNOWN = 0, /* "[unknown]": nothing covers the address */
	WC_SYM_MODULE = 1,  /* "libfoo.so+0x1234" (file offset) or "[anon]" */
	WC_SYM_NAME = 2,    /* a function name, demangled */
};

struct wc_sym_opts {
	size_t max_procs;	/* processes kept (default 4096) */
	size_t max_modules;	/* ELF symbol tables cached (default 512) */
	size_t max_bytes;	/* all caches together (default 64 MiB) */
	const char *proc_root;	/* default "/proc" */
	const char *debug_root; /* default "/usr/lib/debug" */
	/* wallclock-symd's path: processes and their files are read there,
	 * under a deadline (wc_sym_src.h).  NULL reads them in this
	 * process: only for tests of the reads themselves. */
	const char *helper;
	unsigned deadline_ms; /* 0: WC_SYM_SRC_DEADLINE_MS */
};

struct wc_sym;

/* NULL on bad options or no memory (err says which).  A kernel whose
 * symbols cannot be read (kptr_restrict) is logged, not fatal. */
struct wc_sym *wc_sym_new(const struct wc_sym_opts *o, char *err,
			  size_t errlen);
void wc_sym_free(struct wc_sym *s);

/*
 * Snapshot pid's executable mappings and load what resolving them needs.
 * A known process is a hash lookup, but for the re-reads above.  0, or
 * -1 if the process is unknown and unreadable.
 */
int wc_sym_proc_note(struct wc_sym *s, pid_t pid);
/*
 * Where addr of pid lies in a mapped file: the module's serial and the
 * file offset (caller: a return address, moved back into its call).  Two
 * processes of one binary give the same place for the same code, and
 * wc_sym_user() names a place alike in every process, so a caller may
 * remember names by place.  false where the name depends on the process
 * (JIT code, anonymous memory, an unknown process or address).
 */
bool wc_sym_user_place(struct wc_sym *s, pid_t pid, uint64_t addr, bool caller,
		       uint32_t *mod, uint64_t *off);

/* From now on, reading processes and files may take ms in all (0: none,
 * WC_SYM_UNLIMITED as at the start; a read is never cut short): a process
 * not read for the budget
 * is read at a later note, and a lookup that needed it gives a fallback
 * name.  Callers set it before each drain and flush, so that a host full
 * of hostile mappings costs them a bounded time. */
void wc_sym_allow(struct wc_sym *s, unsigned ms);
/* Start fetching what noting pid will look at, for a batch of notes. */
void wc_sym_proc_prefetch(const struct wc_sym *s, pid_t pid);
/* The process exited: keep it until the end of the current cycle. */
void wc_sym_proc_exited(struct wc_sym *s, pid_t pid);
/* End of a flush cycle: forget exited and idle processes, trim caches,
 * reload kernel symbols if modules came or went. */
void wc_sym_cycle(struct wc_sym *s);

/*
 * Resolve addr into buf (always NUL-terminated, cut to len).  caller: addr
 * is a return address (every frame but the innermost), look up addr - 1.
 * An unknown pid is noted first.  Returns WC_SYM_NAME, WC_SYM_MODULE or
 * WC_SYM_UNKNOWN.  Names are demangled (C++, Rust) and their control bytes
 * replaced by '?'.
 */
int wc_sym_user(struct wc_sym *s, pid_t pid, uint64_t addr, bool caller,
		char *buf, size_t len);
/* "func", or "func [module]" for modules; WC_SYM_NAME or WC_SYM_UNKNOWN. */
int wc_sym_kernel(struct wc_sym *s, uint64_t addr, bool caller, char *buf,
		  size_t len);

struct wc_sym_stats {
	uint64_t lookups;	 /* user and kernel */
	uint64_t names;		 /* ... answered with a name */
	uint64_t fallbacks;	 /* ... with module+offset */
	uint64_t unknown;	 /* ... with [unknown] */
	uint64_t module_hits;	 /* a mapping's file found in the cache */
	uint64_t module_misses;	 /* ... that had to be read */
	uint64_t evictions;	 /* tables and processes dropped for bounds */
	uint64_t over_bounds;	 /* left out for bounds: processes refused,
				    mappings past the cap, perf maps and
				    .symtabs over budget */
	uint64_t refused;	 /* files refused: not a regular file on a
				    readable filesystem, a perf map or debug
				    file of the wrong owner, a symlink */
	uint64_t bad_lines;	 /* perf-map lines that were no symbol */
	uint64_t helper_starts;	 /* wallclock-symd started */
	uint64_t helper_stalls;	 /* ... killed at the deadline */
	uint64_t helper_crashes; /* ... died, or broke the protocol */
	uint64_t helper_skipped; /* reads not asked for: helper stopped
				    until the next cycle, or what they would
				    read made one stall */
	uint64_t procs;		 /* processes held now */
	uint64_t modules;	 /* symbol tables held now */
	uint64_t bytes;		 /* memory held now, kernel table included */
	uint64_t kernel_symbols; /* 0: kernel frames cannot be named */
};

void wc_sym_stats(const struct wc_sym *s, struct wc_sym_stats *out);

#endif /* WC_SYM_H */
