/*
 * wc_sym_fetch.h - everything the symbolizer reads on behalf of a process:
 * its maps and status, the files it maps (ELF images, their debug files),
 * its vdso and its JIT perf map, turned into plain data.
 *
 * Owns: nothing between calls; results belong to the caller.  This is the
 * code that touches what local users control, so it runs in the helper
 * process (wallclock-symd, through wc_sym_src), where a read that blocks or
 * a parser that crashes costs the helper, not collectd.  The files' rules
 * (regular files on readable filesystems, sizes fixed at open, who may own
 * a perf map or a debug file) are in wc_sym_proc.h and here.
 *
 * Every call is bounded: mappings and path bytes per process, table bytes
 * by the caller's budget, file bytes by their size at open.
 */
#ifndef WC_SYM_FETCH_H
#define WC_SYM_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "sym/wc_sym_cfi.h"
#include "sym/wc_sym_elf.h"
#include "sym/wc_sym_proc.h"
#include "sym/wc_sym_tab.h"

/* Executable mappings kept per process; a JIT can make many more. */
#define WC_FETCH_MAX_MAPS 8192
/* Path bytes kept per process (a library's mappings share one copy). */
#define WC_FETCH_PATH_BYTES (1u << 20)
/* No table is bigger, whatever the caller's budget. */
#define WC_FETCH_TABLE_MAX (64u << 20)
/* Unsized ELF symbols (assembly) cover at most this much. */
#define WC_FETCH_UNSIZED_MAX 4096

struct wc_fetch_ctx {
	const char *proc_root;
	const char *debug_root;
	/* what the calls met, added to */
	uint64_t refused;     /* files refused by the rules */
	uint64_t over_bounds; /* mappings, map bytes, tables past a bound */
	uint64_t too_big;     /* .symtab over budget, .dynsym used */
	uint64_t bad_lines;   /* perf-map lines that were no symbol */
};

/* The mapped file as map_files showed it when the maps were read (known
 * false when it could not be looked at).  Its device, not the maps
 * line's: btrfs shows one device there for all of a filesystem's
 * subvolumes, whose inode numbers repeat. */
struct wc_fetch_file {
	uint64_t size, mtime_ns, dev;
	bool known;
};

/* A process's executable mappings, in address order. */
struct wc_fetch_maps {
	pid_t nspid;
	uid_t euid;
	uint64_t sig;		     /* hash of the executable lines as read */
	struct wc_proc_map *maps;    /* path points into paths */
	struct wc_fetch_file *files; /* one per map */
	size_t n;
	char *paths;
	size_t paths_len;
	bool cut; /* a bound was hit: the rest of the mappings are unknown */
};

void wc_fetch_maps_free(struct wc_fetch_maps *m);

/*
 * Read pid's executable mappings.  1 if their hash is known_sig (only it,
 * nspid and euid filled then: pass 0 to have them read whatever), 0 with
 * *out filled, -1 if the process is gone or unreadable.
 */
int wc_fetch_maps(struct wc_fetch_ctx *c, pid_t pid, uint64_t known_sig,
		  struct wc_fetch_maps *out);

/* What a module needs from an ELF image. */
struct wc_fetch_image {
	struct wc_elf_seg segs[WC_ELF_MAX_SEGS];
	unsigned nsegs;
	uint8_t build_id[WC_ELF_BUILD_ID_MAX];
	unsigned build_id_len;
	uid_t owner; /* of the file: tables are shared only between files of
			one owner */
};

/* The image of mapping m of pid, opened through map_files, else its path
 * in the process's root; either only if it is the file m's line showed
 * (and, if f knows it, the one its stat showed).  0, or -1 with errno:
 * ESTALE (another file is at m's range now: ask again later), ENOENT
 * (the path names another file now), EINVAL (no ELF file), or the
 * open's. */
int wc_fetch_image(struct wc_fetch_ctx *c, pid_t pid,
		   const struct wc_proc_map *m, const struct wc_fetch_file *f,
		   struct wc_fetch_image *out);

/* Its function symbols into t (initialised by the caller with its budget,
 * finished here): .symtab, else a debug file's, else .dynsym.  0, or -1
 * (t is then empty; errno as above, ENOENT also for no symbols). */
int wc_fetch_symbols(struct wc_fetch_ctx *c, pid_t pid,
		     const struct wc_proc_map *m, const struct wc_fetch_file *f,
		     struct wc_symtab *t);

/* pid's vdso at [start, end): its image into *image (end - start bytes,
 * the caller's to free: what tells one image from another, since a
 * process may write to its own), what the module needs, and its symbols
 * into t as above (empty if it has none).  0, or -1 if no image could be
 * read. */
int wc_fetch_vdso(struct wc_fetch_ctx *c, pid_t pid, uint64_t start,
		  uint64_t end, char **image, struct wc_fetch_image *img,
		  struct wc_symtab *t);
#define WC_FETCH_VDSO_MAX (1024 * 1024)

/*
 * The unwind table of mapping m of pid (wc_sym_cfi), m's device being
 * its inode's own (what a walk keys tables by), from the file the
 * mapping shows now and the .debug_frame of its debug file if it has one
 * (found as for symbols: by build-id, or by .gnu_debuglink when m has a
 * path), under lim.  0, or -1 with errno: ESRCH (the process
 * or its mapping is gone), ESTALE (as for wc_fetch_image), EACCES
 * (refused by the rules), or wc_cfi_build's (ENOENT: no CFI; EFBIG,
 * E2BIG: over the limits; ETIME: over the CPU time; EINVAL: no x86-64
 * ELF file).
 */
int wc_fetch_cfi(struct wc_fetch_ctx *c, pid_t pid, const struct wc_proc_map *m,
		 const struct wc_cfi_limits *lim, struct wc_cfi_table *out);

/* Which perf map was read, to read it again only when it changed. */
struct wc_file_id {
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec;
};

enum wc_fetch_perfmap {
	WC_PERFMAP_NONE,      /* none, or refused: forget what was read */
	WC_PERFMAP_SAME,      /* the one read before, unchanged */
	WC_PERFMAP_READ,      /* read into t, *id says which */
	WC_PERFMAP_OVER = -1, /* over the budget: keep what was read */
};

/*
 * /tmp/perf-NSPID.map in pid's root, believed only if the process's own
 * user could have written it: a regular file reached without symlinks,
 * one link, owned by euid, that no one else may write.
 */
int wc_fetch_perfmap(struct wc_fetch_ctx *c, pid_t pid, pid_t nspid, uid_t euid,
		     const struct wc_file_id *known, struct wc_symtab *t,
		     struct wc_file_id *id);

#endif /* WC_SYM_FETCH_H */
