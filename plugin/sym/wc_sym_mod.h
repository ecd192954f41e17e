/*
 * wc_sym_mod.h - the cache of mapped files ("modules") and of their ELF
 * symbol tables.
 *
 * Owns: module records, one per file (device and inode from the maps line,
 * plus size and mtime when map_files can be stat'ed, so a file replaced
 * under the same inode number is a new module), each holding the file's
 * name and load segments; and symbol tables, one per ELF image, shared by
 * every module with the same build-id and the same owner (the same libc in
 * every container of one owner is one table; a user cannot lend their
 * names to another's binary by giving theirs its build-id).  Files are
 * read through a wc_sym_src, never here.
 *
 * Invariants: a module lives while mappings hold a reference to it, and
 * an unreferenced one lives on (as a cache for the next process of that
 * binary) while it has a table and has been used in the last
 * WC_MOD_IDLE_CYCLES cycles.  Tables are bounded by count (max_tables) and
 * bytes (max_bytes, shared with whatever the caller holds) and evicted
 * least recently used; a module whose table was evicted is marked so and
 * answers with name+offset until the next process that maps it reads it
 * again.  A table
 * holds at most max_bytes / 2: a .symtab over that falls back to .dynsym.
 * Not thread-safe.
 */
#ifndef WC_SYM_MOD_H
#define WC_SYM_MOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sym/wc_sym_fetch.h"
#include "sym/wc_sym_src.h"

#define WC_MOD_IDLE_CYCLES 8
/* A vdso is two pages; anything this big is not one. */
#define WC_MOD_VDSO_MAX (1024 * 1024)

struct wc_mod_cache_opts {
	size_t max_tables;
	size_t max_bytes;
	struct wc_sym_src *src; /* borrowed */
};

struct wc_mod_stats {
	uint64_t hits;	 /* a mapping's module found ready */
	uint64_t misses; /* ... that had to be read (new, or evicted) */
	uint64_t evictions;
	uint64_t tables;
	uint64_t bytes; /* tables and module records */
};

struct wc_mod_cache;
struct wc_mod;

struct wc_mod_cache *wc_mod_cache_new(const struct wc_mod_cache_opts *o);
void wc_mod_cache_free(struct wc_mod_cache *c);

/*
 * The module of a file mapping of pid (m from its maps line, f what the
 * file looked like then), read on a miss.  The caller owns one reference.
 * A file that cannot be read or has no symbols still gets a module (its
 * name serves the fallback); NULL only without memory.
 */
struct wc_mod *wc_mod_file(struct wc_mod_cache *c, pid_t pid,
			   const struct wc_proc_map *m,
			   const struct wc_fetch_file *f);
/* The module of pid's [vdso] at [start, end), keyed by its image. */
struct wc_mod *wc_mod_vdso(struct wc_mod_cache *c, pid_t pid, uint64_t start,
			   uint64_t end);
/* One more reference to mod (not NULL), for the caller. */
struct wc_mod *wc_mod_ref(struct wc_mod *mod);
void wc_mod_unref(struct wc_mod_cache *c, struct wc_mod *mod);

/* Tables lost so far (evicted, or not read for want of the helper):
 * while it has not changed, no module lost one. */
uint64_t wc_mod_evictions(const struct wc_mod_cache *c);
/* The module has a table to read again (evicted, or not read yet). */
bool wc_mod_evicted(const struct wc_mod *mod);

/* The function covering file offset off, or NULL.  Marks the table used. */
const char *wc_mod_lookup(struct wc_mod_cache *c, struct wc_mod *mod,
			  uint64_t off);
/* The file's base name, for "name+0xoffset". */
const char *wc_mod_name(const struct wc_mod *mod);
/* Which module this is: no two modules of the cache share one (from 1). */
uint32_t wc_mod_serial(const struct wc_mod *mod);

/* What the caller holds besides, counted against max_bytes when a new
 * table makes room. */
void wc_mod_set_other_bytes(struct wc_mod_cache *c, size_t other_bytes);
/* Keep within bounds; forget idle unreferenced modules.  Call once per
 * cycle. */
void wc_mod_cycle(struct wc_mod_cache *c, size_t other_bytes);

void wc_mod_stats(const struct wc_mod_cache *c, struct wc_mod_stats *out);

#endif /* WC_SYM_MOD_H */
