#!/usr/bin/env python3
"""wcfuse - a tiny read-only FUSE server whose requests can be made to hang.

Owns: one FUSE mount, made by hand with /dev/fuse and mount(2) (no libfuse,
standard library only), and the server process behind it.  Its root
directory holds one file per host file given, same base name, size and
bytes.  In hang mode chosen requests (default STATFS and READ) are read from
the kernel and never answered, so whoever touches them blocks in the kernel
as on a dead network filesystem.  Tests use (as root):

    srv = FuseServer(mnt, ["/bin/true"]).start()   # returns once mounted
    srv.hang(True)        # statfs()/read() on the mount now block forever
    srv.stop()            # aborts the connection, detaches, reaps; idempotent

Script: wcfuse.py MOUNTPOINT SRCFILE... [--hang-file F] [--hang-ops
STATFS,READ] [-v] prints "mounted", serves until SIGTERM/SIGINT, unmounts.
wcfuse.py --selftest proves all of this on the running kernel.
"""

import argparse
import atexit
import ctypes
import errno
import os
import re
import select
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

OPS = dict(LOOKUP=1, FORGET=2, GETATTR=3, OPEN=14, READ=15, STATFS=17,
           RELEASE=18, GETXATTR=22, LISTXATTR=23, FLUSH=25, INIT=26,
           OPENDIR=27, READDIR=28, RELEASEDIR=29, ACCESS=34, INTERRUPT=36,
           DESTROY=38, BATCH_FORGET=42, READDIRPLUS=44)
NAMES = {v: k for k, v in OPS.items()}
DEFAULT_HANG_OPS = frozenset({"STATFS", "READ"})
# These hang only when they concern a served file, so the root directory
# stays listable (ls, path walks, stat of the mount point) in hang mode.
PER_FILE_OPS = frozenset({"LOOKUP", "GETATTR", "OPEN", "READ"})
NO_REPLY = frozenset({"FORGET", "BATCH_FORGET", "INTERRUPT"})
EMPTY_OK = frozenset({"RELEASE", "RELEASEDIR", "FLUSH", "DESTROY"})

# Layouts from <linux/fuse.h>, little-endian, no implicit padding.
IN_HDR = struct.Struct("<IIQQIIIHH")          # fuse_in_header, 40
OUT_HDR = struct.Struct("<IiQ")               # fuse_out_header, 16
ATTR = struct.Struct("<6Q10I")                # fuse_attr, 88
ENTRY_OUT = struct.Struct("<4Q2I")            # fuse_entry_out minus attr
ATTR_OUT = struct.Struct("<Q2I")              # fuse_attr_out minus attr
INIT_IN = struct.Struct("<4I")                # fuse_init_in, head only
INIT_OUT = struct.Struct("<4I2H2I2HI7I")      # fuse_init_out, 64
OPEN_OUT = struct.Struct("<Q2I")              # fuse_open_out, 16
READ_IN = struct.Struct("<2QI")               # fuse_read_in, head only
KSTATFS = struct.Struct("<5Q4I6I")            # fuse_kstatfs, 80
DIRENT = struct.Struct("<2Q2I")               # fuse_dirent minus name, 24
assert (IN_HDR.size, ATTR.size, INIT_OUT.size, KSTATFS.size) == (40, 88, 64, 80)

VALID = 3600                     # seconds the kernel may cache names/attrs
MAX_WRITE = 128 * 1024
# The kernel refuses reads of /dev/fuse smaller than header+write_in+max_write.
BUFSIZE = MAX_WRITE + 4096
MS_RDONLY, MS_NOSUID, MS_NODEV, MNT_DETACH = 1, 2, 4, 2
FUSECTL = "/sys/fs/fuse/connections"

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def _sys_mount(src, target, fstype, flags, data):
    if _libc.mount(src.encode(), os.fsencode(target), fstype.encode(), flags,
                   data.encode() if data else None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {fstype} on {target}: {os.strerror(e)}")


def detach(mountpoint):
    """umount2(MNT_DETACH); quiet when it is no longer mounted."""
    if _libc.umount2(os.fsencode(mountpoint), MNT_DETACH) != 0:
        e = ctypes.get_errno()
        if e not in (errno.EINVAL, errno.ENOENT):
            raise OSError(e, f"umount {mountpoint}: {os.strerror(e)}")


def mount_fuse(mountpoint):
    """Open /dev/fuse and mount it at mountpoint; returns the device fd."""
    # CLOEXEC: a child exec'd later must not hold the connection open.
    fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    data = (f"fd={fd},rootmode=40000,user_id=0,group_id=0,"
            "allow_other,default_permissions")
    try:
        _sys_mount("wcfuse", mountpoint, "fuse.wcfuse",
                   MS_NOSUID | MS_NODEV | MS_RDONLY, data)
    except OSError:
        os.close(fd)
        raise
    return fd


def mount_dev(mountpoint):
    """The kernel dev_t of the topmost mount at mountpoint, or None.

    Read from mountinfo so that nothing is asked of a possibly hung server."""
    mountpoint, dev = os.path.realpath(mountpoint), None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            where = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])
            if where == mountpoint:
                major, minor = map(int, fields[2].split(":"))
                dev = (major << 20) | minor   # fusectl names it by this
    return dev


def abort_connection(dev):
    """Fail every pending and future request of the connection at once."""
    if not os.path.exists(f"{FUSECTL}/{dev}"):
        try:
            _sys_mount("fusectl", FUSECTL, "fusectl", 0, None)
        except OSError:
            pass                 # already mounted, or the connection is gone
    try:
        with open(f"{FUSECTL}/{dev}/abort", "w") as f:
            f.write("1")
    except FileNotFoundError:
        pass


class FuseFs:
    """The filesystem: one raw request in, one raw reply (or None) out."""

    def __init__(self, files, hang_file=None, hang_ops=DEFAULT_HANG_OPS,
                 verbose=False):
        self.files = {ino: (os.path.basename(p), os.path.abspath(p), os.stat(p))
                      for ino, p in enumerate(files, 2)}
        self.by_name = {name: ino for ino, (name, _, _) in self.files.items()}
        if len(self.by_name) != len(self.files):
            raise ValueError("wcfuse: two files share a base name")
        self.hang_file, self.verbose = hang_file, verbose
        self.hang_ops = frozenset(hang_ops)
        self.hung = []           # (unique, opcode name, nodeid) never answered
        self.started = time.time_ns()

    def handle(self, buf):
        _, opcode, unique, nodeid = IN_HDR.unpack_from(buf)[:4]
        body, name = buf[IN_HDR.size:], NAMES.get(opcode, str(opcode))
        if self._hangs(name, nodeid, body):
            self.hung.append((unique, name, nodeid))
            self._log(f"{name} node={nodeid} HANG")
            return None
        self._log(f"{name} node={nodeid}")
        if name in NO_REPLY:
            return None
        op = getattr(self, f"op_{name.lower()}", None)
        try:
            res = op(nodeid, body) if op else b"" if name in EMPTY_OK else errno.ENOSYS
        except OSError as e:     # the host file went away: say so, keep serving
            res = e.errno
        err, data = (res, b"") if isinstance(res, int) else (0, res)
        return OUT_HDR.pack(OUT_HDR.size + len(data), -err, unique) + data

    def _log(self, msg):
        if self.verbose:
            print(f"wcfuse: {msg}", file=sys.stderr, flush=True)

    def _hangs(self, name, nodeid, body):
        if name not in self.hang_ops or not self.hang_file \
                or not os.path.exists(self.hang_file):
            return False
        if name == "LOOKUP":
            return nodeid == 1 and _cstr(body) in self.by_name
        return name not in PER_FILE_OPS or nodeid in self.files

    def _attr(self, ino):
        if ino == 1:
            mode, size, nlink, t = stat.S_IFDIR | 0o755, 0, 2, self.started
        else:
            st = self.files[ino][2]
            mode, size, nlink, t = stat.S_IFREG | 0o755, st.st_size, 1, st.st_mtime_ns
        s, ns = divmod(t, 10**9)
        return ATTR.pack(ino, size, (size + 511) // 512, s, s, s, ns, ns, ns,
                         mode, nlink, 0, 0, 0, 4096, 0)

    def op_init(self, nodeid, body):
        major, _, readahead, _ = INIT_IN.unpack_from(body)
        if major != 7:
            return errno.EPROTO
        return INIT_OUT.pack(7, 31, readahead, 0, 16, 12, MAX_WRITE, 1,
                             0, 0, 0, *[0] * 7)

    def op_lookup(self, nodeid, body):
        ino = self.by_name.get(_cstr(body)) if nodeid == 1 else None
        if ino is None:
            return errno.ENOENT
        return ENTRY_OUT.pack(ino, 0, VALID, VALID, 0, 0) + self._attr(ino)

    def op_getattr(self, nodeid, body):
        if nodeid != 1 and nodeid not in self.files:
            return errno.ENOENT
        return ATTR_OUT.pack(VALID, 0, 0) + self._attr(nodeid)

    def op_open(self, nodeid, body):
        # No FOPEN_KEEP_CACHE: each open drops cached pages, so reads after
        # an open really reach us (and can hang).
        return OPEN_OUT.pack(0, 0, 0) if nodeid in self.files else errno.ENOENT

    def op_read(self, nodeid, body):
        _, offset, size = READ_IN.unpack_from(body)
        if nodeid not in self.files:
            return errno.EBADF
        fd = os.open(self.files[nodeid][1], os.O_RDONLY)
        try:
            return os.pread(fd, size, offset)
        finally:
            os.close(fd)

    def op_opendir(self, nodeid, body):
        return OPEN_OUT.pack(0, 0, 0) if nodeid == 1 else errno.ENOTDIR

    def op_readdir(self, nodeid, body):
        _, offset, size = READ_IN.unpack_from(body)
        entries = [(1, ".", 4), (1, "..", 4)] + [
            (ino, name, 8) for ino, (name, _, _) in self.files.items()]
        out = b""
        for i in range(offset, len(entries)):   # offset = index of next entry
            ino, name, dtype = entries[i]
            raw = name.encode()
            rec = DIRENT.pack(ino, i + 1, len(raw), dtype) + raw
            rec += b"\0" * (-len(rec) % 8)
            if len(out) + len(rec) > size:
                break
            out += rec
        return out

    def op_statfs(self, nodeid, body):
        blocks = sum((st.st_size + 4095) // 4096 for _, _, st in self.files.values())
        return KSTATFS.pack(blocks, 0, 0, len(self.files) + 1, 0,
                            4096, 255, 4096, 0, *[0] * 6)


def _cstr(body):
    return body.split(b"\0", 1)[0].decode(errors="replace")


def serve(fd, fs, on_ready=lambda: None):
    """Answer requests until the connection goes away (unmount or abort)."""
    ready = False
    while True:
        try:
            buf = os.read(fd, BUFSIZE)
        except OSError as e:
            if e.errno == errno.ENOENT:    # request interrupted before read
                continue
            if e.errno == errno.ENODEV:    # unmounted or aborted
                return
            raise
        reply = fs.handle(buf)
        if reply is not None:
            try:
                os.write(fd, reply)
            except OSError as e:
                if e.errno == errno.ENODEV:
                    return
                if e.errno != errno.ENOENT:   # ENOENT: asker gave up meanwhile
                    raise
        if not ready and IN_HDR.unpack_from(buf)[1] == OPS["INIT"]:
            ready = True
            on_ready()


def _ignore_signals(*_):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _interrupt(signum, frame):
    _ignore_signals()   # one is enough; a second must not cut the unmount short
    raise KeyboardInterrupt   # also breaks a read blocked on /dev/fuse


def run(mountpoint, fs):
    """Script mode: mount, say "mounted", serve until a signal, unmount."""
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    fd = None
    try:
        fd = mount_fuse(mountpoint)
        serve(fd, fs, lambda: print("mounted", flush=True))
    except KeyboardInterrupt:
        pass
    finally:
        _ignore_signals()
        if fd is not None:
            try:
                detach(mountpoint)
            finally:
                os.close(fd)   # last reference: the kernel aborts the connection


class FuseServer:
    """A FUSE mount served by a child process running this file."""

    def __init__(self, mountpoint, files, hang_ops=DEFAULT_HANG_OPS, verbose=False):
        self.mountpoint = os.path.realpath(mountpoint)
        self.files = [os.path.abspath(f) for f in files]
        self.hang_ops = sorted(NAMES.get(op, op) for op in hang_ops)  # names or ints
        self.verbose = verbose
        self.proc = self.dev = self._tmp = self._err = None
        self.stopped = False

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self, timeout=10):
        """Mount and return self once the kernel's INIT has been answered."""
        self._tmp = tempfile.mkdtemp(prefix="wcfuse.")
        self.hang_file = os.path.join(self._tmp, "hang")
        # Not a pipe: nobody would drain it while the server runs.
        err = None if self.verbose else open(os.path.join(self._tmp, "stderr"), "w+")
        self._err = err
        cmd = [sys.executable, os.path.abspath(__file__), self.mountpoint,
               *self.files, "--hang-file", self.hang_file,
               "--hang-ops", ",".join(self.hang_ops)] + ["-v"] * self.verbose
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=err)
        atexit.register(self.stop)
        line = b""
        if select.select([self.proc.stdout], [], [], timeout)[0]:
            line = self.proc.stdout.readline()
        self.proc.stdout.close()
        if line != b"mounted\n":
            why = "no answer in time"
            if err is not None and self.proc.poll() is not None:
                err.seek(0)
                why = err.read().strip().splitlines()[-1:] or ["exited"]
                why = why[0].removeprefix("wcfuse: ")
            self.stop()
            raise RuntimeError(f"wcfuse: mounting {self.mountpoint} failed: {why}")
        self.dev = mount_dev(self.mountpoint)
        return self

    def _reap(self, timeout):
        # After an abort the server sees ENODEV and exits by itself; a
        # SIGTERM is only for one that did not get that far.
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(1 if sig is None else timeout)
                return
            except subprocess.TimeoutExpired:
                pass
        self.proc.wait()

    def hang(self, on=True):
        """Switch hang mode; takes effect for the next request read."""
        if self.stopped or not self._tmp:
            return
        if on:
            open(self.hang_file, "w").close()
        elif os.path.exists(self.hang_file):
            os.unlink(self.hang_file)

    def stop(self, timeout=5):
        """Tear down even when requests hang: abort, detach, reap.  Idempotent."""
        if self.stopped:
            return
        self.stopped = True
        atexit.unregister(self.stop)
        if self.dev is not None:
            abort_connection(self.dev)
        if self.proc is not None:
            try:
                if self.dev is not None:
                    detach(self.mountpoint)
            except OSError as e:     # still reap the server below
                print(f"wcfuse: {e.strerror}", file=sys.stderr)
            self._reap(timeout)
        if self._err:
            self._err.close()
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mountpoint", nargs="?")
    ap.add_argument("files", nargs="*")
    ap.add_argument("--hang-file", help="hang while this file exists")
    ap.add_argument("--hang-ops", default=",".join(sorted(DEFAULT_HANG_OPS)),
                    help="opcodes left unanswered in hang mode")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="log each request on stderr")
    ap.add_argument("--selftest", action="store_true")
    args = ap.parse_args(argv)
    if args.selftest:
        return selftest()
    if not args.mountpoint or not args.files:
        ap.error("MOUNTPOINT and at least one SRCFILE are needed")
    ops = [o.strip().upper() for o in args.hang_ops.split(",") if o.strip()]
    bad = [o for o in ops if o not in OPS]
    if bad:
        ap.error(f"unknown opcode(s): {','.join(bad)}")
    fs = FuseFs(args.files, args.hang_file, ops, args.verbose)
    try:
        run(args.mountpoint, fs)
    except OSError as e:
        print(f"wcfuse: {e.strerror}", file=sys.stderr)
        return 1
    return 0


# ---- self-test -------------------------------------------------------------

_MAPPER = """if 1:
    import mmap, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDONLY)
    m = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_EXEC)
    print("mapped", flush=True)
    time.sleep(3600)
"""
_STATFS = "import os, sys; os.statvfs(sys.argv[1]); print('returned')"
_READ = "import sys; open(sys.argv[1], 'rb').read(4096); print('returned')"


def _py(code, *args):
    return subprocess.Popen([sys.executable, "-c", code, *args], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _children():
    kids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                    kids.append(int(pid))
        except OSError:
            pass
    return kids


def selftest():
    """Mount, check bytes, hang STATFS/READ, prove stop() still tears down."""
    failures = []

    def check(what, ok, detail=""):
        print(f"{'ok' if ok else 'FAIL'}: {what}" + (f" ({detail})" if detail else ""),
              flush=True)
        if not ok:
            failures.append(what)

    libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
    mnt = tempfile.mkdtemp(prefix="wcfuse-mnt.")
    srv = FuseServer(mnt, ["/bin/true", libc])
    t0 = time.monotonic()
    srv.start()
    print(f"start() took {time.monotonic() - t0:.3f}s, connection {srv.dev}", flush=True)
    true_, lib = os.path.join(mnt, "true"), os.path.join(mnt, "libc.so.6")
    with open("/bin/true", "rb") as f:
        want = f.read()
    cat = subprocess.run(["cat", true_], capture_output=True)
    check("cat of served true equals /bin/true", cat.stdout == want,
          f"{len(cat.stdout)} vs {len(want)} bytes")
    check("cmp of served libc.so.6", subprocess.run(["cmp", libc, lib]).returncode == 0)
    fstype = subprocess.run(["stat", "-f", "-c", "%T", mnt], capture_output=True,
                            text=True).stdout.strip()
    check("stat -f says fuse", fstype.startswith("fuse"), fstype)
    ls = subprocess.run(["ls", mnt], capture_output=True, text=True).stdout.split()
    check("ls lists the files", ls == ["libc.so.6", "true"], " ".join(ls))
    check("served true runs", subprocess.run([true_]).returncode == 0)

    mapper = _py(_MAPPER, lib)
    check("mmap PROT_READ|PROT_EXEC", mapper.stdout.readline().strip() == "mapped")
    srv.hang(True)
    blocked = {"statvfs": _py(_STATFS, mnt), "read": _py(_READ, lib)}
    time.sleep(2)
    for what, p in blocked.items():
        check(f"{what} blocks in hang mode", p.poll() is None,
              f"state {_state(p.pid)}")

    t0 = time.monotonic()
    srv.stop()
    took = time.monotonic() - t0
    check("stop() returns within 5s with requests hanging", took < 5, f"{took:.3f}s")
    for what, p in blocked.items():
        try:
            out = p.communicate(timeout=5)[0].strip().splitlines()
            check(f"{what} returns after abort", True, out[-1] if out else "")
        except subprocess.TimeoutExpired:
            check(f"{what} returns after abort", False, f"state {_state(p.pid)}")
    for p in [mapper, *blocked.values()]:
        p.kill()
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            pass
        p.stdout.close()
    check("server exited 0", srv.proc.returncode == 0, str(srv.proc.returncode))
    check("mount point is gone from mountinfo", mount_dev(mnt) is None)
    kids = _children()
    check("no process left behind", not kids, str(kids))
    srv.stop()   # idempotent
    os.rmdir(mnt)
    print("selftest", "FAILED: " + ", ".join(failures) if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
