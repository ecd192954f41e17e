/*
 * wc_spool.h - the spool directory where flame graph files land.
 *
 * Owns: an open descriptor of the directory, held from open to close, and
 * an exclusive flock(2) on it, so there is one writer per directory and
 * every later operation is relative to that descriptor (*at() calls): a
 * directory renamed or replaced by a symlink after open is never followed.
 * Each wc_spool_file owns its temporary file, its descriptor, a 64 KiB
 * output buffer and, when compressing, one zlib stream (about 256 KiB);
 * commit or abort frees all of it.  Not thread-safe: one caller at a time.
 *
 * Names, in the directory:
 *   wallclock-YYYYMMDDTHHMMSSZ[-N].SUFFIX[.gz]   one file of a flush (UTC;
 *                               -1, -2... when the name is already taken)
 *   latest.SUFFIX[.gz]          a hard link to the newest of them
 *   .tmp-wallclock-PID-SEQ      a file being written
 *   .tmp-latest-PID-SEQ         the next latest link, for an instant
 * SUFFIX is 1..32 of [a-z0-9_-].  Nothing else in the directory is ever
 * opened, renamed or removed.
 *
 * Invariants:
 *   - A final name only ever holds a complete file: it is written under a
 *     temporary name (O_CREAT|O_EXCL|O_NOFOLLOW, so a planted symlink fails
 *     the create instead of being followed), fsync'ed, and renamed without
 *     replacing anything (RENAME_NOREPLACE, or link+unlink where the file
 *     system lacks it); then the directory is fsync'ed.  Temporary files
 *     left by a crash are removed by the next wc_spool_open().
 *   - latest.* is replaced by rename, never written through: a symlink
 *     planted there is replaced, its target untouched.
 *   - Files are mode 0640 whatever the umask; the directory, if created,
 *     0750.
 *   - Retention, after every commit, counts only regular files with our
 *     final names: never latest.*, symlinks, directories or other names.
 *     It counts and removes flushes, not files: the files that share a
 *     name's time and -N (a flush's .folded and .svg) go together.  The
 *     oldest flush (by its newest file's mtime, then by the name's time
 *     and -N) goes first, by age, then by count, then by total bytes
 *     (st_size); the flush of the file just committed is never removed.  A latest.* whose file is gone (link
 *     count 1) is removed too, since it would hold bytes nobody counts.
 *   - A failing disk (full, read-only, I/O errors) logs once, then stays
 *     quiet until a file is written again, which is logged too.  Failures
 *     cost the file, never the caller: it counts them and carries on.
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
