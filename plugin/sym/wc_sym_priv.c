/* wc_sym_priv.c - see wc_sym_priv.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sym/wc_sym_priv.h"
#include "util/wc_cap.h"

/* Whose files the helper may write, were it made to: no one's. */
#define NOBODY 65534

/* Descriptors open at once: the socket, a file and its debug file, a
 * directory or two on the way. */
#define FILES_MAX 32
/* Address space: the biggest table twice (built and sent) and libelf's
 * copy of its sections, with room. */
#define MEMORY_MAX (1ULL << 30)

/*
 * Reading other users' processes takes CAP_SYS_PTRACE (their maps, root
 * and memory), CAP_DAC_READ_SEARCH (files only their owner may read) and
 * CAP_CHECKPOINT_RESTORE (map_files).  Everything else goes, for good.
 */
static int keep_readers(void)
{
	struct __user_cap_header_struct head = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct have[2], keep[2] = {{0}};
	const int wanted[] = {CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH,
			      CAP_CHECKPOINT_RESTORE};
	size_t i;

	if (syscall(SYS_capget, &head, have))
		return -1;
	for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
		keep[wanted[i] / 32].permitted |= 1u << (wanted[i] % 32);
	/* what of those it has (a test may run it without some) */
	for (i = 0; i < 2; i++) {
		keep[i].permitted &= have[i].permitted;
		keep[i].effective = keep[i].permitted;
	}
	return (int)syscall(SYS_capset, &head, keep);
}

static int limit(int resource, uint64_t max)
{
	struct rlimit r = {max, max};

	return setrlimit(resource, &r);
}

/*
 * Files are opened as nobody: root's files cannot be written, made or
 * removed (CAP_DAC_OVERRIDE and CAP_FOWNER are gone), and reading them
 * takes CAP_DAC_READ_SEARCH, kept.  The real uid stays 0, so that no user
 * can signal or trace the helper.  Landlock would forbid writes outright,
 * but it also forbids reading other processes' /proc entries.  Without
 * CAP_SETUID and CAP_SETGID (a collectd given only what profiling takes)
 * the file ids cannot change: it reads as itself, and the seccomp filter
 * alone keeps it from writing the files its user owns.  1: as nobody,
 * 0: as itself, -1.
 */
static int files_as_nobody(void)
{
	if (!wc_cap_have(CAP_SETUID) || !wc_cap_have(CAP_SETGID))
		return 0;
	if (setgroups(0, NULL))
		return -1;
	setfsgid(NOBODY);
	setfsuid(NOBODY);
	return setfsuid((uid_t)-1) == NOBODY ? 1 : -1;
}

#if defined(__x86_64__)
/* System calls a helper never makes, and that would let code running in
 * it (a parser exploited by a hostile file) reach further: trace or write
 * into other processes (CAP_SYS_PTRACE is kept, for reading), signal them
 * (its real uid is root's), run programs, use the network, mount, load
 * kernel code, change files other than by opening them. */
/* A table, three a row. */
/* clang-format off */
static const int denied[] = {
	SYS_ptrace,	    SYS_process_vm_readv, SYS_process_vm_writev,
	SYS_pidfd_getfd,    SYS_pidfd_open,	  SYS_pidfd_send_signal,
	SYS_kill,	    SYS_tkill,		  SYS_tgkill,
	SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo, SYS_execve,
	SYS_execveat,	    SYS_socket,		  SYS_connect,
	SYS_mount,	    SYS_umount2,	  SYS_fsopen,
	SYS_fsmount,	    SYS_fsconfig,	  SYS_move_mount,
	SYS_open_tree,	    SYS_pivot_root,	  SYS_chroot,
	SYS_unshare,	    SYS_setns,		  SYS_bpf,
	SYS_perf_event_open, SYS_init_module,	  SYS_finit_module,
	SYS_delete_module,  SYS_kexec_load,	  SYS_kexec_file_load,
	SYS_reboot,	    SYS_io_uring_setup,	  SYS_io_uring_enter,
	SYS_io_uring_register, SYS_userfaultfd,	  SYS_keyctl,
	SYS_add_key,	    SYS_request_key,	  SYS_unlink,
	SYS_unlinkat,	    SYS_rename,		  SYS_renameat,
	SYS_renameat2,	    SYS_mkdir,		  SYS_mkdirat,
	SYS_rmdir,	    SYS_link,		  SYS_linkat,
	SYS_symlink,	    SYS_symlinkat,	  SYS_chmod,
	SYS_fchmod,	    SYS_fchmodat,	  SYS_chown,
	SYS_fchown,	    SYS_lchown,		  SYS_fchownat,
	SYS_truncate,	    SYS_ftruncate,	  SYS_mknod,
	SYS_mknodat,	    SYS_setxattr,	  SYS_lsetxattr,
	SYS_fsetxattr,	    SYS_removexattr,	  SYS_lremovexattr,
	SYS_fremovexattr,   SYS_utimensat,	  SYS_futimesat,
	SYS_utimes,	    SYS_utime,		  SYS_swapon,
	SYS_swapoff,	    SYS_quotactl,	  SYS_acct,
	SYS_creat,	    SYS_open_by_handle_at,
};
/* clang-format on */

#define OPEN_WRITES (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)
#define NR offsetof(struct seccomp_data, nr)
#define ARG(i) offsetof(struct seccomp_data, args[i]) /* its low half */
#define REFUSE BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

/* An open asking to write: refused. */
static size_t deny_write_open(struct sock_filter *f, size_t n, int nr, int arg)
{
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      (unsigned)nr, 0, 3);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      ARG(arg));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
					      OPEN_WRITES, 0, 1);
	f[n++] = (struct sock_filter)REFUSE;
	return n;
}

/* as_self: files are opened as the helper's own user, who may own what
 * they could write.  openat2's flags are out of the filter's reach, so it
 * goes too (and with it reads inside containers' roots, which a helper
 * without CAP_SYS_PTRACE could not do anyway). */
static int deny_escapes(bool as_self)
{
	struct sock_filter f[6 + 2 * sizeof(denied) / sizeof(denied[0]) + 13];
	struct sock_fprog prog = {.filter = f};
	size_t i, n = 0;

	/* another architecture's numbers mean other calls: refused */
	f[n++] = (struct sock_filter)BPF_STMT(
		BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
					      AUDIT_ARCH_X86_64, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_KILL_PROCESS);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR);
	/* the x32 numbers */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K,
					      0x40000000, 0, 1);
	f[n++] = (struct sock_filter)REFUSE;
	for (i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		f[n++] = (struct sock_filter)BPF_JUMP(
			BPF_JMP | BPF_JEQ | BPF_K, (unsigned)denied[i], 0, 1);
		f[n++] = (struct sock_filter)REFUSE;
	}
	if (as_self) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      SYS_openat2, 0, 1);
		f[n++] = (struct sock_filter)REFUSE;
	}
	n = deny_write_open(f, n, SYS_openat, 2);
	n = deny_write_open(f, n, SYS_open, 1);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
					      SECCOMP_RET_ALLOW);
	prog.len = (unsigned short)n;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}
#else
static int deny_escapes(bool as_self)
{
	/* the list is x86-64's; elsewhere the other limits hold, but only
	 * the filter keeps a helper reading as itself from writing */
	if (as_self) {
		errno = EPERM;
		return -1;
	}
	return 0;
}
#endif

int wc_sym_priv_drop(void)
{
	int nobody;

	if (limit(RLIMIT_CORE, 0) || limit(RLIMIT_FSIZE, 0) ||
	    limit(RLIMIT_NOFILE, FILES_MAX) || limit(RLIMIT_AS, MEMORY_MAX) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	nobody = files_as_nobody();
	if (nobody < 0)
		return -1;
	/* after the fsuid change, which took DAC_READ_SEARCH from the
	 * effective set */
	if (keep_readers())
		return -1;
	return deny_escapes(!nobody);
}
