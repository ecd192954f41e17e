/* wc_sym.c - see wc_sym.h.  Processes and the kernel live here; files and
 * their symbol tables in wc_sym_mod.c. */
#include <errno.h>
#include <inttypes.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/wc_idmap.h"
#include "util/wc_log.h"
#include "sym/wc_sym.h"
#include "sym/wc_sym_kallsyms.h"
#include "sym/wc_sym_mod.h"
#include "sym/wc_sym_src.h"
#include "sym/wc_sym_tab.h"

#define DEFAULT_MAX_PROCS 4096
#define DEFAULT_MAX_MODULES 512
#define DEFAULT_MAX_BYTES (64u << 20)
/* Re-read kallsyms on misses at most this often (failed loads: rarer). */
#define KERNEL_RETRY_S 60
#define KERNEL_RETRY_FAILED_S 600

enum map_kind { MAP_FILE, MAP_VDSO, MAP_ANON, MAP_VSYSCALL };

/* What a mapping without a module (no memory for one, an unreadable
 * vdso, anonymous memory) is called. */
static const char *const labels[] = {
	[MAP_FILE] = "[file]",
	[MAP_VDSO] = "[vdso]",
	[MAP_ANON] = "[anon]",
	[MAP_VSYSCALL] = "[vsyscall]",
};

struct wc_sym_map {
	uint64_t start, end, pgoff;
	struct wc_mod *mod; /* a reference; NULL for anonymous memory */
	enum map_kind kind;
};

#define REFRESH_CYCLES 16

struct wc_sym_proc {
	pid_t pid, nspid;
	uid_t euid;
	uint32_t slot;
	uint64_t maps_sig; /* hash of the executable maps lines */
	struct wc_sym_map *maps;
	size_t nmaps;
	struct wc_symtab jit;	  /* finished, empty without a perf map */
	struct wc_file_id jit_id; /* the perf map read; all 0: none */
	bool jit_likely; /* has anonymous or shared executable memory */
	bool maps_cut;	 /* not all of them: past a bound */
	bool exited;
	bool unread;	     /* a file of its last read was left for later */
	uint64_t seen_cycle; /* noted or looked up */
	uint64_t read_cycle; /* maps read */
	uint64_t jit_cycle;  /* perf map read */
	uint64_t evict_seen; /* the cache's evictions when none was ours */
	uint64_t miss_cycle; /* re-read for a miss */
	size_t bytes;	     /* counted in s->proc_bytes */
};

struct wc_sym {
	size_t max_procs, max_bytes;
	char *proc_root;
	struct wc_sym_src *src;
	struct wc_mod_cache *mods;
	struct wc_idmap pids; /* pid -> slot */
	struct wc_sym_proc **slots;
	size_t nprocs;
	size_t proc_bytes;
	uint64_t cycle;
	struct wc_symtab kernel;
	uint64_t kernel_modules_sig;
	bool kernel_missed;
	bool kernel_failed;
	struct timespec kernel_tried;
	struct wc_sym_stats st;
};

/* --- output ------------------------------------------------------------ */

/* Copy with control bytes replaced: names end up in folded stacks,
 * collectd identifiers and SVG. */
static void put(char *buf, size_t len, const char *s)
{
	size_t i;

	if (!len)
		return;
	for (i = 0; s[i] && i + 1 < len; i++) {
		unsigned char c = (unsigned char)s[i];

		buf[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	buf[i] = '\0';
}

static bool mangled(const char *name)
{
	return name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

static int put_name(struct wc_sym *s, char *buf, size_t len, const char *name)
{
	char *dm = NULL;

	if (mangled(name))
		dm = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	put(buf, len, dm ? dm : name);
	free(dm);
	s->st.names++;
	return WC_SYM_NAME;
}

static int put_unknown(struct wc_sym *s, char *buf, size_t len)
{
	put(buf, len, "[unknown]");
	s->st.unknown++;
	return WC_SYM_UNKNOWN;
}

static int put_module(struct wc_sym *s, char *buf, size_t len, const char *name,
		      const uint64_t *off)
{
	char tmp[512];

	if (off)
		snprintf(tmp, sizeof(tmp), "%s+0x%" PRIx64, name, *off);
	else
		snprintf(tmp, sizeof(tmp), "%s", name);
	put(buf, len, tmp);
	s->st.fallbacks++;
	return WC_SYM_MODULE;
}

/* --- processes ---------------------------------------------------------- */

/* What we hold besides the module cache. */
static size_t own_bytes(const struct wc_sym *s)
{
	return s->proc_bytes + wc_symtab_bytes(&s->kernel);
}

static struct wc_sym_proc *proc_get(const struct wc_sym *s, pid_t pid)
{
	uint32_t slot;

	if (pid <= 0 || !wc_idmap_get(&s->pids, (uint64_t)pid, &slot))
		return NULL;
	return s->slots[slot];
}

static void proc_count(struct wc_sym *s, struct wc_sym_proc *p)
{
	s->proc_bytes -= p->bytes;
	p->bytes = sizeof(*p) + p->nmaps * sizeof(*p->maps) +
		   wc_symtab_bytes(&p->jit);
	s->proc_bytes += p->bytes;
}

static void maps_release(struct wc_sym *s, struct wc_sym_map *maps, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		wc_mod_unref(s->mods, maps[i].mod);
	free(maps);
}

static void proc_free(struct wc_sym *s, struct wc_sym_proc *p)
{
	maps_release(s, p->maps, p->nmaps);
	wc_symtab_free(&p->jit);
	s->proc_bytes -= p->bytes;
	wc_idmap_del(&s->pids, (uint64_t)p->pid);
	s->slots[p->slot] = NULL;
	s->nprocs--;
	free(p);
}

/* The process idle longest, if it was not used this cycle. */
static struct wc_sym_proc *proc_victim(struct wc_sym *s)
{
	struct wc_sym_proc *v = NULL;
	size_t i;

	for (i = 0; i < s->max_procs; i++) {
		struct wc_sym_proc *p = s->slots[i];

		if (p && (p->exited || p->seen_cycle < s->cycle) &&
		    (!v || p->seen_cycle < v->seen_cycle))
			v = p;
	}
	return v;
}

static struct wc_sym_proc *proc_new(struct wc_sym *s, pid_t pid)
{
	struct wc_sym_proc *p, *victim;
	size_t slot;

	if (s->nprocs == s->max_procs) {
		victim = proc_victim(s);
		if (!victim) {
			s->st.over_bounds++;
			errno = ENOSPC;
			return NULL;
		}
		proc_free(s, victim);
		s->st.evictions++;
	}
	for (slot = 0; s->slots[slot]; slot++)
		;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (wc_idmap_put(&s->pids, (uint64_t)pid, (uint32_t)slot)) {
		free(p);
		errno = ENOSPC;
		return NULL;
	}
	p->pid = pid;
	p->slot = (uint32_t)slot;
	wc_symtab_init(&p->jit, s->max_bytes / 8, 1);
	s->slots[slot] = p;
	s->nprocs++;
	proc_count(s, p);
	return p;
}

static enum map_kind kind_of(const struct wc_proc_map *m)
{
	if (!strcmp(m->path, "[vdso]"))
		return MAP_VDSO;
	if (!strcmp(m->path, "[vsyscall]"))
		return MAP_VSYSCALL;
	/* memfd and deleted files start with '/' too; "[anon:x]", "//anon"
	 * and the empty name are anonymous. */
	if (m->path[0] == '/' && m->path[1] != '/')
		return MAP_FILE;
	return MAP_ANON;
}

/* Per-process data (mappings, perf maps) may use half of max_bytes: the
 * other half is for symbol tables, which can be evicted. */
static size_t proc_room(const struct wc_sym *s)
{
	size_t cap = s->max_bytes / 2;

	return s->proc_bytes < cap ? cap - s->proc_bytes : 0;
}

/* Shared anonymous memory shows as a deleted file: JITs use it too. */
static bool jit_like(const struct wc_proc_map *m, enum map_kind kind)
{
	return kind == MAP_ANON || !strncmp(m->path, "/memfd:", 7) ||
	       !strncmp(m->path, "/dev/zero", 9) ||
	       !strncmp(m->path, "/SYSV", 5);
}

struct maps_build {
	struct wc_sym *s;
	struct wc_sym_proc *p;
	struct wc_sym_map *maps;
	size_t n;
	bool jit_likely;
	/* the file of the last file mapping: its next mappings share it */
	uint32_t last_major, last_minor;
	uint64_t last_ino;
	struct wc_mod *last_mod;
};

/* The module of a file mapping: the last one's again if it is the same
 * file (a library's mappings come together), else the cache's. */
static struct wc_mod *build_file(struct maps_build *b,
				 const struct wc_proc_map *pm,
				 const struct wc_fetch_file *f)
{
	if (b->last_mod && pm->ino == b->last_ino &&
	    pm->dev_major == b->last_major && pm->dev_minor == b->last_minor)
		return wc_mod_ref(b->last_mod);
	b->last_mod = wc_mod_file(b->s->mods, b->p->pid, pm, f);
	b->last_ino = pm->ino;
	b->last_major = pm->dev_major;
	b->last_minor = pm->dev_minor;
	return b->last_mod;
}

static void build_add(struct maps_build *b, const struct wc_proc_map *pm,
		      const struct wc_fetch_file *f)
{
	struct wc_sym_map *m = &b->maps[b->n++];

	m->start = pm->start;
	m->end = pm->end;
	m->pgoff = pm->pgoff;
	m->kind = kind_of(pm);
	m->mod = NULL;
	if (m->kind == MAP_FILE)
		m->mod = build_file(b, pm, f);
	else if (m->kind == MAP_VDSO)
		m->mod = wc_mod_vdso(b->s->mods, b->p->pid, pm->start, pm->end);
	b->jit_likely |= jit_like(pm, m->kind);
}

/* Was a table of p's evicted?  Looked for only when the cache evicted
 * something since the last look: a JIT can have thousands of mappings. */
static bool any_evicted(struct wc_sym *s, struct wc_sym_proc *p)
{
	uint64_t evictions = wc_mod_evictions(s->mods);
	size_t i;

	if (evictions == p->evict_seen)
		return false;
	for (i = 0; i < p->nmaps; i++)
		if (p->maps[i].mod && wc_mod_evicted(p->maps[i].mod))
			return true;
	p->evict_seen = evictions;
	return false;
}

/* The process's mappings from fm (in address order, as the binary search
 * needs them), as many as the memory we may hold for processes allows. */
static int proc_rebuild(struct wc_sym *s, struct wc_sym_proc *p,
			const struct wc_fetch_maps *fm)
{
	struct maps_build b = {.s = s, .p = p};
	size_t i, n = fm->n;

	p->maps_cut = fm->cut;
	if (n * sizeof(*b.maps) > proc_room(s)) {
		n = proc_room(s) / sizeof(*b.maps);
		s->st.over_bounds++;
		p->maps_cut = true;
	}
	b.maps = malloc((n ? n : 1) * sizeof(*b.maps));
	if (!b.maps)
		return -1;
	/* Tables read for these mappings make room counting all we hold. */
	wc_mod_set_other_bytes(s->mods, own_bytes(s));
	for (i = 0; i < n; i++)
		build_add(&b, &fm->maps[i], &fm->files[i]);
	/* Release the old mappings only now: modules they share with the
	 * new ones stay cached in between. */
	maps_release(s, p->maps, p->nmaps);
	p->maps = b.maps;
	p->nmaps = b.n;
	p->maps_sig = fm->sig;
	p->jit_likely = b.jit_likely;
	p->nspid = fm->nspid;
	p->euid = fm->euid;
	return 0;
}

static void perfmap_forget(struct wc_sym_proc *p)
{
	wc_symtab_free(&p->jit);
	memset(&p->jit_id, 0, sizeof(p->jit_id));
}

/* Read the process's perf map again if it changed (the helper applies
 * the rules on who may have written it). */
static void proc_perfmap(struct wc_sym *s, struct wc_sym_proc *p)
{
	static const struct wc_file_id none;
	struct wc_file_id id;
	struct wc_symtab t;
	size_t budget;
	int rc;

	if (!p->jit_likely)
		return;
	budget = s->max_bytes / 8;
	if (budget > proc_room(s) + wc_symtab_bytes(&p->jit))
		budget = proc_room(s) + wc_symtab_bytes(&p->jit);
	if (budget < 4096) {
		s->st.over_bounds++;
		return;
	}
	wc_symtab_init(&t, budget, 1);
	rc = wc_sym_src_perfmap(
		s->src, p->pid, p->nspid, p->euid,
		memcmp(&p->jit_id, &none, sizeof(none)) ? &p->jit_id : NULL, &t,
		&id);
	if (rc == WC_PERFMAP_NONE)
		perfmap_forget(p);
	if (rc != WC_PERFMAP_READ)
		return;
	wc_symtab_free(&p->jit);
	p->jit = t;
	p->jit_id = id;
}

/*
 * Bring p up to date with the live process; -1 if it is gone.  Unchanged
 * executable mappings mean nothing to redo, even if the pid was reused
 * meanwhile: the same files at the same addresses give the same names
 * (and a JIT's new perf map is a new file).  Changed ones may be another
 * process, so its namespace pid and uid are read again too.
 */
static int proc_refresh(struct wc_sym *s, struct wc_sym_proc *p)
{
	uint64_t known = any_evicted(s, p) ? 0 : p->maps_sig;
	struct wc_fetch_maps fm;
	int rc = wc_sym_src_maps(s->src, p->pid, known, &fm);

	if (rc == 0 && proc_rebuild(s, p, &fm))
		rc = -1;
	/* the same maps may be another process's now: its user counts */
	if (rc == 1) {
		p->nspid = fm.nspid;
		p->euid = fm.euid;
	}
	wc_fetch_maps_free(&fm);
	if (rc < 0)
		return -1;
	proc_perfmap(s, p);
	p->read_cycle = p->jit_cycle = s->cycle;
	p->unread = any_evicted(s, p);
	proc_count(s, p);
	return 0;
}

void wc_sym_proc_prefetch(const struct wc_sym *s, pid_t pid)
{
	wc_idmap_prefetch(&s->pids, (uint64_t)pid);
}

int wc_sym_proc_note(struct wc_sym *s, pid_t pid)
{
	struct wc_sym_proc *p = proc_get(s, pid);
	bool fresh = !p;

	if (pid <= 0) {
		errno = EINVAL;
		return -1;
	}
	/* A known process keeps its picture for a while: re-reading the
	 * maps of a thousand processes every cycle was most of a read.  An
	 * address the picture misses re-reads it at once (a library loaded
	 * since, code compiled in new memory, an exec: the new image sits
	 * elsewhere), a table evicted from the cache must be loaded again,
	 * and every REFRESH_CYCLES cycles all are read.  A file left for
	 * later (the budget spent on the maps) is asked for at the next
	 * note, not a cycle on.  A JIT's perf map grows all the time: it is
	 * looked at every cycle. */
	if (p && (p->exited || (p->read_cycle == s->cycle && !p->unread) ||
		  (!any_evicted(s, p) &&
		   s->cycle < p->read_cycle + REFRESH_CYCLES))) {
		if (!p->exited && p->jit_cycle != s->cycle) {
			p->jit_cycle = s->cycle;
			proc_perfmap(s, p);
			proc_count(s, p);
		}
		p->seen_cycle = s->cycle;
		return 0;
	}
	if (!p)
		p = proc_new(s, pid);
	if (!p)
		return -1;
	p->seen_cycle = s->cycle;
	if (proc_refresh(s, p) == 0)
		return 0;
	if (fresh) {
		proc_free(s, p);
		return -1;
	}
	/* Gone since the last note: what we have is its last picture.  Or
	 * not read now (EAGAIN): the picture stays until it can be. */
	if (errno != EAGAIN)
		p->exited = true;
	return 0;
}

void wc_sym_proc_exited(struct wc_sym *s, pid_t pid)
{
	struct wc_sym_proc *p = proc_get(s, pid);

	if (p)
		p->exited = true;
	/* what it made the helper stall on may be read for a new process
	 * under its pid */
	wc_sym_src_forget(s->src, pid);
}

static const struct wc_sym_map *find_map(const struct wc_sym_proc *p,
					 uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct wc_sym_map *m = &p->maps[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

/* Is m's file one of p's left for later (wc_sym_proc_note)? */
static bool left_for_later(const struct wc_sym_proc *p,
			   const struct wc_sym_map *m)
{
	return p->unread && m->mod && wc_mod_evicted(m->mod);
}

/* Resolve in p as it is now; -1 if nothing named it and a re-read of the
 * process might (an unknown address, or JIT code without an entry). */
static int resolve(struct wc_sym *s, struct wc_sym_proc *p, uint64_t addr,
		   char *buf, size_t len, bool last_try)
{
	const struct wc_symtab_ent *e = wc_symtab_find(&p->jit, addr);
	const struct wc_sym_map *m;
	const char *name;
	uint64_t off;

	if (e)
		return put_name(s, buf, len, wc_symtab_name(&p->jit, e));
	m = find_map(p, addr);
	if (!m || m->kind == MAP_ANON) {
		if (!last_try)
			return -1;
		return m ? put_module(s, buf, len, labels[MAP_ANON], NULL)
			 : put_unknown(s, buf, len);
	}
	if (!m->mod)
		return put_module(s, buf, len, labels[m->kind], NULL);
	off = addr - m->start + m->pgoff;
	name = wc_mod_lookup(s->mods, m->mod, off);
	if (name)
		return put_name(s, buf, len, name);
	if (!last_try && left_for_later(p, m))
		return -1;
	return put_module(s, buf, len, wc_mod_name(m->mod), &off);
}

bool wc_sym_user_place(struct wc_sym *s, pid_t pid, uint64_t addr, bool caller,
		       uint32_t *mod, uint64_t *off)
{
	struct wc_sym_proc *p = proc_get(s, pid);
	const struct wc_sym_map *m;

	if (!p)
		return false;
	if (caller && addr)
		addr--;
	/* resolve()'s order: a JIT's symbol first */
	if (wc_symtab_find(&p->jit, addr))
		return false;
	m = find_map(p, addr);
	if (!m || m->kind == MAP_ANON || !m->mod)
		return false;
	p->seen_cycle = s->cycle;
	*mod = wc_mod_serial(m->mod);
	*off = addr - m->start + m->pgoff;
	return true;
}

int wc_sym_user(struct wc_sym *s, pid_t pid, uint64_t addr, bool caller,
		char *buf, size_t len)
{
	const struct wc_sym_map *m;
	struct wc_sym_proc *p;
	bool may_refresh;
	int rc;

	s->st.lookups++;
	if (caller && addr)
		addr--;
	p = proc_get(s, pid);
	if (!p && wc_sym_proc_note(s, pid) == 0)
		p = proc_get(s, pid);
	if (!p)
		return put_unknown(s, buf, len);
	p->seen_cycle = s->cycle;
	/* One re-read per process and cycle for what the snapshot misses:
	 * a library loaded or code compiled since.  Not if the maps were cut
	 * at a bound: a read would cut them again (the periodic re-read
	 * still comes). */
	may_refresh = !p->exited && !p->maps_cut && p->miss_cycle != s->cycle;
	rc = resolve(s, p, addr, buf, len, !may_refresh);
	if (rc >= 0)
		return rc;
	p->miss_cycle = s->cycle;
	/* JIT code the perf map does not name yet may be named by its next
	 * lines; the maps would only say again that it is anonymous.  A
	 * file left for later is read through them. */
	m = find_map(p, addr);
	if (m && !left_for_later(p, m)) {
		proc_perfmap(s, p);
		proc_count(s, p);
	} else if (proc_refresh(s, p) && errno != EAGAIN) {
		p->exited = true;
	}
	return resolve(s, p, addr, buf, len, true);
}

/* --- kernel --------------------------------------------------------------- */

static void kernel_load(struct wc_sym *s)
{
	char path[4096], err[256];
	struct wc_symtab t;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &s->kernel_tried);
	snprintf(path, sizeof(path), "%s/modules", s->proc_root);
	s->kernel_modules_sig = wc_kallsyms_modules_sig(path);
	snprintf(path, sizeof(path), "%s/kallsyms", s->proc_root);
	rc = wc_kallsyms_load(&t, path, s->max_bytes / 2, err, sizeof(err));
	s->kernel_missed = false;
	if (rc) {
		/* Say it once; retries that fail alike are not news. */
		wc_log(s->kernel_failed ? WC_LOG_DEBUG : WC_LOG_WARN, "sym: %s",
		       err);
		s->kernel_failed = true;
		return;
	}
	wc_symtab_free(&s->kernel);
	s->kernel = t;
	s->kernel_failed = false;
}

static void kernel_maybe_reload(struct wc_sym *s)
{
	char path[4096];
	struct timespec now;
	long retry = s->kernel_failed ? KERNEL_RETRY_FAILED_S : KERNEL_RETRY_S;

	snprintf(path, sizeof(path), "%s/modules", s->proc_root);
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (wc_kallsyms_modules_sig(path) != s->kernel_modules_sig ||
	    (s->kernel_missed && now.tv_sec - s->kernel_tried.tv_sec >= retry))
		kernel_load(s);
}

int wc_sym_kernel(struct wc_sym *s, uint64_t addr, bool caller, char *buf,
		  size_t len)
{
	const struct wc_symtab_ent *e;

	s->st.lookups++;
	if (caller && addr)
		addr--;
	e = wc_symtab_find(&s->kernel, addr);
	if (!e) {
		/* Past the first symbol: code loaded since (a module, a BPF
		 * program) that a reload would name. */
		if (!s->kernel.n || addr >= s->kernel.ents[0].addr)
			s->kernel_missed = true;
		return put_unknown(s, buf, len);
	}
	return put_name(s, buf, len, wc_symtab_name(&s->kernel, e));
}

/* --- life cycle ------------------------------------------------------------ */

void wc_sym_allow(struct wc_sym *s, unsigned ms)
{
	wc_sym_src_allow(s->src, ms);
}

void wc_sym_cycle(struct wc_sym *s)
{
	size_t i;

	for (i = 0; i < s->max_procs; i++) {
		struct wc_sym_proc *p = s->slots[i];

		if (p && (p->exited ||
			  p->seen_cycle + WC_SYM_IDLE_CYCLES <= s->cycle))
			proc_free(s, p);
	}
	s->cycle++;
	kernel_maybe_reload(s);
	wc_mod_cycle(s->mods, own_bytes(s));
	wc_sym_src_cycle(s->src);
}

void wc_sym_stats(const struct wc_sym *s, struct wc_sym_stats *out)
{
	struct wc_sym_src_stats ss;
	struct wc_mod_stats ms;

	wc_mod_stats(s->mods, &ms);
	wc_sym_src_stats(s->src, &ss);
	*out = s->st;
	out->module_hits = ms.hits;
	out->module_misses = ms.misses;
	out->evictions += ms.evictions;
	out->over_bounds += ss.over_bounds + ss.too_big;
	out->refused = ss.refused;
	out->bad_lines = ss.bad_lines;
	out->helper_starts = ss.starts;
	out->helper_stalls = ss.stalls;
	out->helper_crashes = ss.crashes;
	out->helper_skipped = ss.skipped;
	out->procs = s->nprocs;
	out->modules = ms.tables;
	out->bytes = ms.bytes + own_bytes(s);
	out->kernel_symbols = s->kernel.n;
}

static size_t or_default(size_t v, size_t def)
{
	return v ? v : def;
}

struct wc_sym *wc_sym_new(const struct wc_sym_opts *o, char *err, size_t errlen)
{
	static const struct wc_sym_opts none;
	struct wc_mod_cache_opts mo;
	struct wc_sym_src_opts so;
	struct wc_sym *s;

	if (!o)
		o = &none;
	s = calloc(1, sizeof(*s));
	if (!s) {
		wc_err(err, errlen, "sym: out of memory");
		return NULL;
	}
	s->max_procs = or_default(o->max_procs, DEFAULT_MAX_PROCS);
	s->max_bytes = or_default(o->max_bytes, DEFAULT_MAX_BYTES);
	/* a new process's cycles are 0: never the current one */
	s->cycle = 1;
	if (s->max_procs > (1u << 24)) {
		wc_err(err, errlen, "sym: max_procs %zu is too many",
		       s->max_procs);
		goto fail;
	}
	s->proc_root = strdup(o->proc_root ? o->proc_root : "/proc");
	so = (struct wc_sym_src_opts){
		.helper = o->helper,
		.proc_root = o->proc_root,
		.debug_root = o->debug_root,
		.deadline_ms = o->deadline_ms,
	};
	s->src = wc_sym_src_new(&so);
	mo.max_tables = or_default(o->max_modules, DEFAULT_MAX_MODULES);
	mo.max_bytes = s->max_bytes;
	mo.src = s->src;
	s->slots = calloc(s->max_procs, sizeof(*s->slots));
	if (!s->proc_root || !s->src || !s->slots ||
	    wc_idmap_init(&s->pids, (uint32_t)s->max_procs) ||
	    !(s->mods = wc_mod_cache_new(&mo))) {
		wc_err(err, errlen, "sym: out of memory");
		goto fail;
	}
	kernel_load(s);
	return s;
fail:
	wc_sym_free(s);
	return NULL;
}

void wc_sym_free(struct wc_sym *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; s->slots && i < s->max_procs; i++)
		if (s->slots[i])
			proc_free(s, s->slots[i]);
	wc_mod_cache_free(s->mods);
	wc_sym_src_free(s->src);
	wc_idmap_free(&s->pids);
	wc_symtab_free(&s->kernel);
	free(s->slots);
	free(s->proc_root);
	free(s);
}
