/*
 * wc_sym_proc.h - what the symbolizer reads out of procfs: a process's
 * mappings, identity (pid in its own namespace, uid), memory, and files
 * as that process sees them.
 *
 * Owns: nothing between calls but what the caller holds (a line reader's
 * buffer, returned descriptors).  Everything read here is untrusted text
 * (paths with spaces, " (deleted)" suffixes, lines of any length, files a
 * process's owner wrote): lines are read through a fixed buffer and an
 * overlong line is skipped and counted, never grown into.  Files in a
 * process's root are opened with openat2(RESOLVE_IN_ROOT) so that its
 * symlinks resolve inside its root, not ours.
 *
 * Every file opened on a process's behalf is looked at through an O_PATH
 * descriptor first (no driver code runs) and opened only if it is a
 * regular file on a disk-like filesystem (wc_fs_readable): procfs files
 * are regular too, and /proc/kmsg blocks its reader; a FIFO would hang
 * us; opening a device node can have effects.  The open itself does not
 * block (O_NONBLOCK), and the size seen then is the caller's read bound:
 * a file that grows while we read it is read no further.
 */
#ifndef WC_SYM_PROC_H
#define WC_SYM_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* A reader of text lines through one fixed buffer. */
struct wc_lines {
	int fd;
	char *buf; /* cap + 1 bytes: room for the NUL of a last line */
	size_t cap;
	size_t start, end;
	uint64_t left; /* bytes it may still read */
	bool eof;
	bool cut;	  /* stopped by the byte bound, not the end */
	bool skipping;	  /* inside a line longer than the buffer */
	uint64_t skipped; /* overlong lines dropped */
};

/* Takes fd (closed by wc_lines_close, also on failure here), reads at most
 * limit bytes of it (UINT64_MAX: to the end).  0 or -1. */
int wc_lines_open(struct wc_lines *r, int fd, size_t cap, uint64_t limit);
/* The next line, newline removed and NUL-terminated in place, valid until
 * the next call; NULL at the end or on a read error. */
char *wc_lines_next(struct wc_lines *r, size_t *len);
void wc_lines_close(struct wc_lines *r);

/* One line of /proc/PID/maps. */
struct wc_proc_map {
	uint64_t start, end, pgoff, ino;
	uint32_t dev_major, dev_minor;
	bool exec;
	bool deleted;	  /* " (deleted)" was removed from path */
	const char *path; /* into the parsed line; "" for anonymous memory */
	size_t pathlen;
};

/* Parse one maps line (modified in place: path is cut).  0 or -1. */
int wc_proc_parse_maps_line(char *line, size_t len, struct wc_proc_map *m);

/* Is a filesystem of this statfs type one whose regular files read like
 * a disk's: local disk filesystems, tmpfs, overlay, network filesystems?
 * Not procfs, sysfs, debugfs or other pseudo filesystems, and not FUSE,
 * which any user can mount in a user namespace and answer never. */
bool wc_fs_readable(long f_type);

/* Open "proc_root/pid/name" read-only; -1 with errno on failure. */
int wc_proc_open(const char *proc_root, pid_t pid, const char *name);

/* The pid in the process's own (innermost) pid namespace, and its
 * effective uid, from /proc/PID/status. */
int wc_proc_status(const char *proc_root, pid_t pid, pid_t *nspid, uid_t *euid);

/* stat() and open() of a mapped file through /proc/PID/map_files/LO-HI,
 * which works for deleted files and other mount namespaces alike. */
int wc_proc_stat_map_file(const char *proc_root, pid_t pid, uint64_t start,
			  uint64_t end, struct stat *st);
/* The open ones below fill *st as the file was at open, and refuse (EINVAL)
 * what is not a regular file on a readable filesystem. */
int wc_proc_open_map_file(const char *proc_root, pid_t pid, uint64_t start,
			  uint64_t end, struct stat *st);

/* How wc_proc_open_in_root may reach the file. */
enum {
	WC_OPEN_NO_SYMLINKS = 1, /* no symlink anywhere on the way */
};

/* Open PATH as the process sees it: inside /proc/PID/root, its symlinks
 * resolved in that root. */
int wc_proc_open_in_root(const char *proc_root, pid_t pid, const char *path,
			 unsigned flags, struct stat *st);
/* Open NAME in directory DIR as the process sees it, never leaving DIR
 * (no "..", no absolute or magic symlinks on the way). */
int wc_proc_open_beneath(const char *proc_root, pid_t pid, const char *dir,
			 size_t dirlen, const char *name, struct stat *st);

/* Read len bytes of the process's memory at addr: 0, or -1 if any is
 * unreadable. */
int wc_proc_read_mem(const char *proc_root, pid_t pid, uint64_t addr, void *buf,
		     size_t len);

/* Open a host file (debug files), by the same rules. */
int wc_open_regular(const char *path, struct stat *st);

#endif /* WC_SYM_PROC_H */
