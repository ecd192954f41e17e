/*
 * wc_spool.h - the spool directory where flame graph files land.
 *
 * Owns: the directory's descriptor and an exclusive flock(2) on it; each
 * wc_spool_file its temporary file, a 64 KiB buffer and a zlib stream.
 * Invariants: every operation is relative to that descriptor (*at());
 * a final name only ever holds a complete file; nothing but our own
 * names is ever opened, renamed or removed; latest.* is never written
 * through; retention removes whole flushes, never the one just
 * committed; a failure costs the file, never the caller.
 * Threads: not thread-safe: one caller at a time.
 * Design: docs/design.md, section "Spool".
 */
#ifndef WC_SPOOL_H
#define WC_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define WC_SPOOL_MAX_SUFFIX 32

struct wc_spool_opts {
	const char *dir;
	bool gzip;
	int gzip_level;	       /* 1..9, 0 for zlib's default (6) */
	unsigned keep_flushes; /* 0 = no limit, for each of the three */
	unsigned keep_age_s;
	uint64_t keep_bytes;
};

struct wc_spool_stats {
	uint64_t files_written;
	uint64_t bytes_written;	 /* as stored, after compression */
	uint64_t write_errors;	 /* files lost to any error */
	uint64_t skipped_full;	 /* of which for want of space (ENOSPC,
				   EDQUOT) */
	uint64_t files_removed;	 /* by retention */
	uint64_t bytes_in_spool; /* our final-named files, at the last scan */
	uint64_t files_in_spool;
};

struct wc_spool;
struct wc_spool_file;

/*
 * For config time: dir exists, or its parent does and lets us create it.
 * If it exists it must be a directory, not a symlink, owned by root or our
 * euid, and not writable by group or others.  Returns 0, or -1 with a
 * message naming the path (and the mode or owner at fault) in err.
 */
int wc_spool_check_dir(const char *dir, char *err, size_t errlen);

/* Create the directory (0750) if missing, its parent must exist; open and
 * check it, take the lock, remove stale temporary files, and scan what is
 * there.  NULL with a message in err on failure. */
struct wc_spool *wc_spool_open(const struct wc_spool_opts *o, char *err,
			       size_t errlen);
/* Every file begun must be committed or aborted first. */
void wc_spool_close(struct wc_spool *s);

/*
 * Start one file of the flush at `when`, compressed if the spool says so
 * and may_gzip (an SVG that browsers open straight from disk may not).
 * NULL if the suffix is bad or the file cannot be created (counted and
 * logged as above).  write, commit and abort accept NULL, so a caller can
 * run the same code whether or not begin succeeded.
 */
struct wc_spool_file *wc_spool_begin(struct wc_spool *s, time_t when,
				     const char *suffix, bool may_gzip);
/* 0, or -1 once anything failed: the file is lost, commit will say so. */
int wc_spool_write(struct wc_spool_file *f, const void *buf, size_t len);
/* Finish, make it visible under its final name, point latest at it, apply
 * retention; frees f.  0, or -1 if the file was lost (nothing left of it). */
int wc_spool_commit(struct wc_spool_file *f);
/* Drop the file: remove the temporary, free f. */
void wc_spool_abort(struct wc_spool_file *f);

void wc_spool_get_stats(const struct wc_spool *s, struct wc_spool_stats *st);

#endif /* WC_SPOOL_H */
