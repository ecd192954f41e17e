/*
 * wc_sym_tab.h - a sorted table of {address, size, name}: the one shape
 * every symbol source (kallsyms, ELF symbol tables, perf maps) is turned
 * into, so that resolving an address is one binary search.
 *
 * Owns: its entry array and its string pool.  A table is filled by
 * wc_symtab_add() in any order, then finished once by wc_symtab_finish()
 * (sorted, one entry kept per address, unsized symbols given the distance
 * to the next one); only a finished table is searched, and it never
 * changes after.  Every add is checked against the table's byte budget
 * before anything grows, so a hostile source (a symbol table claiming
 * billions of entries, a perf map that never ends) costs at most that
 * budget: the add fails with E2BIG and the builder stops there.
 */
#ifndef WC_SYM_TAB_H
#define WC_SYM_TAB_H

#include <stddef.h>
#include <stdint.h>

/* Longer names (deep C++ templates) are cut: nothing needs more. */
#define WC_SYMTAB_NAME_MAX 4096

struct wc_symtab_ent {
	uint64_t addr;
	uint32_t size; /* bytes covered from addr, never 0 once finished */
	uint32_t name; /* offset into strs */
};

struct wc_symtab_pending; /* entries while building, see wc_sym_tab.c */

struct wc_symtab {
	struct wc_symtab_ent *ents; /* sorted by addr, distinct addrs */
	size_t n;
	char *strs; /* NUL-terminated names */
	size_t strs_len;
	size_t strs_cap;
	struct wc_symtab_pending *pend;
	size_t pend_n;
	size_t pend_cap;
	size_t max_bytes;
	uint32_t unsized_max; /* bound for symbols of unknown size */
};

/* max_bytes bounds entries and names together, while building and after;
 * a symbol without a size covers up to the next symbol, at most
 * unsized_max bytes (at least 1). */
void wc_symtab_init(struct wc_symtab *t, size_t max_bytes,
		    uint32_t unsized_max);
void wc_symtab_free(struct wc_symtab *t);

/*
 * Add a symbol; size 0 means unknown.  Among symbols at one address the
 * highest rank is kept, and among equal ranks the first added.  Returns 0,
 * or -1 with errno E2BIG (budget spent) or ENOMEM.  Names longer than
 * WC_SYMTAB_NAME_MAX are cut; empty names are refused (EINVAL).
 */
int wc_symtab_add(struct wc_symtab *t, uint64_t addr, uint64_t size,
		  const char *name, size_t namelen, uint32_t rank);

/* Sort and index what was added; frees the building state.  0 or -1
 * (ENOMEM, the table is then empty). */
int wc_symtab_finish(struct wc_symtab *t);

/*
 * Make t (initialised, empty) a finished table of n entries and the
 * strs_len bytes of names they point into, copied: a table finished
 * elsewhere (the helper process) and sent here.  Checked as if hostile:
 * within t's budget (else E2BIG), addresses strictly ascending, sizes not
 * 0, names inside the pool, the pool NUL-terminated (else EINVAL).  0 or
 * -1, t empty then.
 */
int wc_symtab_adopt(struct wc_symtab *t, const struct wc_symtab_ent *ents,
		    size_t n, const char *strs, size_t strs_len);

/* The entry covering addr in a finished table, or NULL. */
const struct wc_symtab_ent *wc_symtab_find(const struct wc_symtab *t,
					   uint64_t addr);

static inline const char *wc_symtab_name(const struct wc_symtab *t,
					 const struct wc_symtab_ent *e)
{
	return t->strs + e->name;
}

/* Heap bytes held now (building or finished). */
size_t wc_symtab_bytes(const struct wc_symtab *t);

#endif /* WC_SYM_TAB_H */
