/*
 * wc_sym_src.h - where the symbolizer's reads of processes and files
 * happen: in the helper process wallclock-symd, under a deadline, or (for
 * tests of the reads themselves) in this process.
 *
 * Owns: the helper (its process and socket), the request and reply
 * buffers, and a list of what made a helper stall or crash.  Each call is
 * one wc_sym_fetch call, made by the helper and answered within the
 * deadline or not at all: a helper that has not answered by then is
 * killed, what it was reading is logged and never asked for again (until
 * the process it belongs to is forgotten), and the helper stays stopped
 * until the next cycle, so one hostile file costs one deadline per cycle
 * at most.  A helper that dies is treated the same.  While stopped, calls
 * fail at once: the symbolizer falls back to module+offset names.  Calls
 * start only within the caller's budget (wc_sym_src_allow) and while the
 * helper has taken less than a twentieth of the time since the start, in
 * bursts of up to 1 s.
 *
 * Not thread-safe: one caller (the symbolizer's) at a time.
 */
#ifndef WC_SYM_SRC_H
#define WC_SYM_SRC_H

#include <stdint.h>
#include <sys/types.h>

#include "sym/wc_sym_fetch.h"

#define WC_SYM_SRC_DEADLINE_MS 2000
#define WC_SYM_UNLIMITED UINT32_MAX
/* No limit, and no long-run share either: for a caller whose user waits
 * for the names (a command-line recording's end). */
#define WC_SYM_WHOLE (UINT32_MAX - 1)

struct wc_sym_src_opts {
	const char *helper;	/* wallclock-symd's path; NULL: in-process */
	const char *proc_root;	/* default "/proc" */
	const char *debug_root; /* default "/usr/lib/debug" */
	unsigned deadline_ms;	/* 0: WC_SYM_SRC_DEADLINE_MS */
	unsigned share;		/* 1/share of the time, 0: a twentieth */
	/* what is lost while the helper cannot start, for the log (a
	 * literal); NULL: "user frames are not named" */
	const char *lacking;
};

struct wc_sym_src;

/* Where wallclock-symd is: $WALLCLOCK_SYMD (a build tree, tests), else
 * where `make install` put it. */
const char *wc_sym_src_default_helper(void);

/* NULL without memory.  The helper is started when first needed. */
struct wc_sym_src *wc_sym_src_new(const struct wc_sym_src_opts *o);
/* Stops the helper at once, whatever it is doing. */
void wc_sym_src_free(struct wc_sym_src *s);

/* The wc_fetch_* calls of the same names and results.  -1 with errno
 * EAGAIN when the helper did not answer, or was not asked (stopped, what
 * the call reads made one stall, the caller's budget spent): the same
 * call may work later, as it may with ESTALE (another file is at the
 * mapping's place now); with another errno, what was asked for is not
 * there (the process is gone, the file unreadable or refused). */
int wc_sym_src_maps(struct wc_sym_src *s, pid_t pid, uint64_t known_sig,
		    struct wc_fetch_maps *out);
int wc_sym_src_image(struct wc_sym_src *s, pid_t pid,
		     const struct wc_proc_map *m, const struct wc_fetch_file *f,
		     struct wc_fetch_image *out);
int wc_sym_src_symbols(struct wc_sym_src *s, pid_t pid,
		       const struct wc_proc_map *m,
		       const struct wc_fetch_file *f, struct wc_symtab *t);
int wc_sym_src_vdso(struct wc_sym_src *s, pid_t pid, uint64_t start,
		    uint64_t end, char **image, struct wc_fetch_image *img,
		    struct wc_symtab *t);
/* WC_PERFMAP_OVER also when the helper did not answer: what was read
 * before is kept. */
int wc_sym_src_perfmap(struct wc_sym_src *s, pid_t pid, pid_t nspid, uid_t euid,
		       const struct wc_file_id *known, struct wc_symtab *t,
		       struct wc_file_id *id);

/* The unwind table of mapping m of pid, as wc_fetch_cfi (its errnos),
 * or EAGAIN as above. */
int wc_sym_src_cfi(struct wc_sym_src *s, pid_t pid, const struct wc_proc_map *m,
		   const struct wc_cfi_limits *lim, struct wc_cfi_table *out);

/* From now on, calls may start while they have taken less than ms in all
 * (0: none; WC_SYM_UNLIMITED, as at the start: no limit; WC_SYM_WHOLE):
 * what the caller can afford before it must go on (a drain, a flush).  A
 * call is never cut short for it. */
void wc_sym_src_allow(struct wc_sym_src *s, unsigned ms);
/* A new cycle: a helper stopped in the last one may be started again. */
void wc_sym_src_cycle(struct wc_sym_src *s);
/* pid is gone: what it made stall may be asked for again under a new
 * process of that pid. */
void wc_sym_src_forget(struct wc_sym_src *s, pid_t pid);

struct wc_sym_src_stats {
	uint64_t refused, over_bounds, too_big; /* as in wc_fetch_ctx */
	uint64_t bad_lines;			/* likewise */
	uint64_t starts;			/* helpers started */
	uint64_t stalls;	 /* helpers killed at the deadline */
	uint64_t crashes;	 /* helpers that died, or broke the protocol */
	uint64_t skipped;	 /* calls not made: helper stopped, what they
			     would read made one stall, budget spent */
	uint64_t start_failures; /* helpers that could not be started */
};

void wc_sym_src_stats(const struct wc_sym_src *s, struct wc_sym_src_stats *out);
/* Whether the last try to start the helper failed (logged once): calls
 * are skipped until a start succeeds, one try a cycle. */
bool wc_sym_src_cannot_start(const struct wc_sym_src *s);

#endif /* WC_SYM_SRC_H */
