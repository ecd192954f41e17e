"""wctest - the end-to-end harness: a real collectd, the built plugin, real
workloads, and the kernel's own numbers to compare against.

Owns: temporary directories, collectd processes and workload processes it
starts (all stopped and removed at exit, even on failure).  Tests use:

    with Env("name") as env:
        cd = env.collectd(interval=1, plugin_conf='SampleFrequency 99')
        w = env.workload("wcw_spin", "--spin", "3", "--seconds", "8")
        ...
    case("what was checked", ok, "why it failed")

Every case prints one line the runner counts: PASS:/FAIL:/SKIP:.  The
script's exit status is non-zero when any case failed.

Environment: WC_BUILD_DIR is the build tree (plugin in .libs/wallclock.so,
workload in tests/workload).
"""

import atexit
import bisect
import calendar
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.environ.get("WC_BUILD_DIR", os.path.abspath("."))
PLUGIN_SO = os.path.join(BUILD, ".libs", "wallclock.so")
WORKLOAD = os.path.join(BUILD, "tests", "workload")
# collectd and the command run the symbolizer's helper from the build tree
os.environ.setdefault("WALLCLOCK_SYMD", os.path.join(BUILD, "wallclock-symd"))
PROG = os.path.basename(sys.argv[0])
# The outermost frames of a whole user stack: the flush begins each stack
# at the innermost of these it holds (is_entry_point in wc_flush.c).
ENTRY_POINTS = frozenset({
    "_start", "__libc_start_main", "__libc_start_call_main", "start_thread",
    "clone", "clone3", "__clone", "__clone3", "thread_start"})
HOST = "wctest"

_failures = 0
_cleanups = []


def case(name, ok, detail=""):
    """Record one checked fact."""
    global _failures
    if ok:
        print(f"PASS: {PROG}: {name}", flush=True)
    else:
        _failures += 1
        print(f"FAIL: {PROG}: {name}: {detail}", flush=True)
    return ok


def skip(name, why):
    print(f"SKIP: {PROG}: {name}: {why}", flush=True)


def near(got, want, rel):
    """Is got within rel (a fraction) of want?"""
    return abs(got - want) <= rel * abs(want)


def pct(got, want):
    return 100.0 * (got - want) / want if want else float("inf")


def done():
    """Exit with the status the runner expects."""
    sys.exit(1 if _failures else 0)


def _cleanup_all():
    for fn in reversed(_cleanups):
        try:
            fn()
        except Exception as e:  # cleanup must go on
            print(f"# cleanup: {e}", file=sys.stderr)


atexit.register(_cleanup_all)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))


def require_built():
    missing = [p for p in (PLUGIN_SO, WORKLOAD) if not os.path.exists(p)]
    if missing:
        case("build artefacts present", False, f"missing {missing}")
        done()


# Each counter of a limit hit, and what its warning says.
LIMIT_SAID = (
    ("exits_dropped", "final records of exited threads dropped"),
    ("threads_untracked", "MaxThreads was reached"),
    ("stacks_full", "stack table was full"),
    ("stack_counts_full", "stack weights dropped"),
    ("window_stacks_dropped", "left out of the flush window"),
    ("window_weights_dropped", "left out of the flush window"),
    ("waits_unwalked", "kernel stack not walked"),
    ("symbol_over_bounds", "symbol tables left out"),
    ("unwind_files_no_room", "for want of room"),
)


class Collectd:
    """One collectd -f with a generated config."""

    def __init__(self, root, interval, plugin_conf, wallclock=True,
                 writers=("csv", "unixsock"), extra="", prefix=(),
                 spool=True, plugin_so=PLUGIN_SO):
        """spool: True writes SpoolDir (a fresh path under root) into the
        wallclock block, False leaves it out (the plugin's default).
        plugin_so: another build's plugin (the benchmark's baseline)."""
        self.root = root
        self.interval = interval
        self.csv_dir = os.path.join(root, "csv")
        self.rrd_dir = os.path.join(root, "rrd")
        self.sock = os.path.join(root, "sock")
        self.log_path = os.path.join(root, "collectd.log")
        self.conf_path = os.path.join(root, "collectd.conf")
        self.spool = os.path.join(root, "spool")
        self.proc = None
        conf = [
            f'Hostname "{HOST}"',
            f"Interval {interval}",
            f'BaseDir "{root}"',
            f'PIDFile "{root}/collectd.pid"',
            "LoadPlugin logfile",
            "<Plugin logfile>",
            "  LogLevel info",
            f'  File "{self.log_path}"',
            "  Timestamp true",
            "  PrintSeverity true",
            "</Plugin>",
        ]
        if "csv" in writers:
            conf += ["LoadPlugin csv", "<Plugin csv>",
                     f'  DataDir "{self.csv_dir}"', "  StoreRates false",
                     "</Plugin>"]
        if "rrdtool" in writers:
            conf += ["LoadPlugin rrdtool", "<Plugin rrdtool>",
                     f'  DataDir "{self.rrd_dir}"', "</Plugin>"]
        if "unixsock" in writers:
            conf += ["LoadPlugin unixsock", "<Plugin unixsock>",
                     f'  SocketFile "{self.sock}"', '  SocketGroup "root"',
                     "</Plugin>"]
        conf.append(extra)
        if wallclock:
            conf += [f'PluginDir "{os.path.dirname(plugin_so)}"',
                     "LoadPlugin wallclock", 'PluginDir "/usr/lib/collectd"',
                     "<Plugin wallclock>"]
            if spool:
                conf.append(f'  SpoolDir "{self.spool}"')
            conf += [plugin_conf, "</Plugin>"]
        with open(self.conf_path, "w") as f:
            f.write("\n".join(conf) + "\n")
        self.prefix = list(prefix)

    def start(self, wait_first_read=True):
        # a collectd started before in this root logged it too
        seen = self.log().count("entering read-loop")
        self.proc = subprocess.Popen(
            self.prefix + ["collectd", "-f", "-C", self.conf_path],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _cleanups.append(self.kill)
        if wait_first_read:
            # loading takes 1-3 s here, but 20 s and more in an emulated
            # guest beside two CPU hogs: a collectd that dies says so at
            # once
            t0 = time.time()
            ok = wait_until(lambda: self.log().count("entering read-loop")
                            > seen or self.proc.poll() is not None, 180)
            if time.time() - t0 > 10:
                print(f"# collectd took {time.time() - t0:.0f} s to start")
            if not ok or self.proc.poll() is not None:
                raise RuntimeError("collectd did not start:\n" + self.log()
                                   + self.output())
        return self

    def test_run(self, timeout=60):
        """collectd -T: parse the config, init, read once, shut down.
        Returns (exit status, stdout+stderr, what it added to the log)."""
        before = len(self.log())
        r = subprocess.run(self.prefix + ["collectd", "-T", "-C",
                                          self.conf_path],
                           capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout + r.stderr, self.log()[before:]

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def output(self):
        if self.proc and self.proc.poll() is not None and self.proc.stdout:
            return self.proc.stdout.read()
        return ""

    def stop(self, timeout=30):
        """SIGTERM and wait; returns the exit status."""
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def log_has(self, text):
        return text in self.log()

    def wallclock_errors(self, levels=("error",)):
        """Log lines at one of levels that come from our plugin (or from
        libbpf on its behalf)."""
        pat = re.compile(r"\[(%s)\]" % "|".join(levels))
        return [line for line in self.log().splitlines()
                if "wallclock" in line and pat.search(line)]

    def csv(self, group, type_, tinst=""):
        """All (epoch, value) rows of one identifier, in time order."""
        inst = f"wallclock-{group}" if group else "wallclock"
        name = f"{type_}-{tinst}" if tinst else type_
        rows = []
        for path in sorted(glob.glob(os.path.join(
                self.csv_dir, HOST, inst, f"{name}-*"))):
            with open(path) as f:
                for line in f:
                    if line[0].isdigit():
                        t, v = line.strip().split(",")[:2]
                        rows.append((float(t), float(v)))
        rows.sort()
        return rows

    def last(self, group, type_, tinst="", default=0.0):
        """The newest value of one identifier, or default if none yet."""
        rows = self.csv(group, type_, tinst)
        return rows[-1][1] if rows else default

    def groups(self):
        base = os.path.join(self.csv_dir, HOST)
        return sorted(d[len("wallclock-"):] for d in os.listdir(base)
                      if d.startswith("wallclock-")) if os.path.isdir(
                          base) else []

    def limits_unsaid(self):
        """The self-metrics of a limit hit (a bound that cost something)
        that had counted something two reads before the newest, but whose
        warning is not in the log: the plugin says each, once a minute at
        most, in the read that sees it."""
        out = []
        for name, phrase in LIMIT_SAID:
            rows = self.csv("", "derive", name)
            if len(rows) >= 2 and rows[-2][1] > 0 and not any(
                    phrase in ln and "warn" in ln
                    for ln in self.log().splitlines()):
                out.append(f"{name} {rows[-2][1]:.0f}")
        return out

    def wait_rows(self, group, type_, tinst, n, timeout):
        return wait_until(lambda: len(self.csv(group, type_, tinst)) >= n,
                          timeout)


def helper_pids(parent):
    """The pids of the helpers (wallclock-symd: the symbolizer's, the
    unwind tables') of a collectd."""
    out = []
    for comm in glob.glob("/proc/[0-9]*/comm"):
        pid = comm.split("/")[2]
        try:
            with open(comm) as f, open(f"/proc/{pid}/stat") as g:
                if (f.read().strip() == "wallclock-symd" and
                        int(g.read().rsplit(")", 1)[1].split()[1]) ==
                        parent):
                    out.append(pid)
        except OSError:
            pass
    return out


def helper_check(root, prefix=()):
    """Run the helper's --check (it confines itself as a helper, then tries
    to create a file in root, which must be root's directory, and to
    truncate a file of root's there, both with open and openat2) under the
    command prefix; returns (confined, all refused, what it said)."""
    keep = os.path.join(root, "wallclock-symd-keep")
    with open(keep, "w") as f:
        f.write("root's\n")
    r = subprocess.run([*prefix, os.environ["WALLCLOCK_SYMD"], "--check",
                        root], capture_output=True, text=True)
    said = r.stdout + r.stderr
    tries = [ln.rsplit(": ", 1)[1] for ln in r.stdout.splitlines()
             if ln.startswith(("create ", "truncate "))]
    with open(keep) as f:
        intact = f.read() == "root's\n"
    os.unlink(keep)
    refused = ("Permission denied", "Operation not permitted")
    return (r.returncode == 0, len(tries) == 4 and intact and
            all(t in refused for t in tries), said)


def fuse_server(root, files, label):
    """A FUSE server (wcfuse.py) serving copies of files in root/mnt,
    stopped at the end; None, said in a SKIP line, where no FUSE
    filesystem can be mounted."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import wcfuse
    mnt = os.path.join(root, "mnt")
    os.makedirs(mnt)
    try:
        fs = wcfuse.FuseServer(mnt, files).start()
    except (RuntimeError, OSError) as e:
        skip(label, f"cannot mount a FUSE filesystem here: {e}")
        return None
    _cleanups.append(fs.stop)
    return fs


class TablesSettled:
    """A predicate for wait_until, polled about once a second: whether
    the walks of the last `quiet` polls went on without meeting an unwind
    table still on its way (the helper may build other programs' tables
    before the one a test is after)."""

    def __init__(self, cd, quiet=6):
        self.cd, self.quiet, self.polls = cd, quiet, []

    def __call__(self):
        self.polls.append(tuple(self.cd.last("", "derive", t) for t in
                                ("unwind_walks", "unwind_end_pending")))
        if len(self.polls) <= self.quiet:
            return False
        (w0, p0), (w1, p1) = self.polls[-self.quiet - 1], self.polls[-1]
        return w1 > w0 and p1 == p0


def wait_until(pred, timeout, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


class Workload:
    """The test workload under a chosen process name (via a symlink, so the
    kernel's comm is that name from exec on)."""

    def __init__(self, root, name, args, nice=0, cpu=None):
        link = os.path.join(root, "bin", name)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if not os.path.exists(link):
            os.symlink(WORKLOAD, link)
        self.report_path = os.path.join(root, f"{name}.report")
        # nice(1) and taskset(1) exec the workload: the same pid, its comm
        # the link's
        pre = ["nice", "-n", str(nice)] if nice else []
        if cpu is not None:
            pre += ["taskset", "-c", str(cpu)]
        self.proc = subprocess.Popen(pre + [link, "--report",
                                            self.report_path] + list(args),
                                     stdout=subprocess.PIPE, text=True)
        _cleanups.append(self.kill)
        line = self.proc.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"workload {name} did not start: {line!r}")
        self.pid = self.proc.pid
        self.started = time.time()

    def wait(self, timeout=120):
        return self.proc.wait(timeout)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def report(self):
        """{'rusage_ns': n, 'threads': [(kind, tid, on, runq, wall)]}"""
        out = {"threads": []}
        with open(self.report_path) as f:
            for line in f:
                p = line.split()
                if p[0] == "thread":
                    out["threads"].append((p[1], int(p[2]), int(p[3]),
                                           int(p[4]), int(p[5])))
                else:
                    out[p[0]] = int(p[1])
        return out


def proc_stat(key):
    """The numbers on one line of /proc/stat ("cpu", "processes"), or
    None."""
    with open("/proc/stat") as f:
        for line in f:
            name, *rest = line.split()
            if name == key:
                return [int(x) for x in rest]
    return None


def cpu_busy_s():
    """Seconds all CPUs spent busy since boot: every state from user to
    steal but idle and iowait."""
    v = proc_stat("cpu")
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def stolen_s():
    """Seconds the hypervisor took from all CPUs since boot."""
    return proc_stat("cpu")[7] / os.sysconf("SC_CLK_TCK")


def task_schedstat(pid):
    """(on_ns, runq_ns, threads) summed over a process's live threads."""
    on = runq = n = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                a, b, _ = f.read().split()
        except (OSError, ValueError):
            continue
        on += int(a)
        runq += int(b)
        n += 1
    return on, runq, n


class SchedSampler:
    """Samples /proc schedstat of some processes in the background, with
    timestamps on the same clock as collectd's (time.time()), so the
    kernel's numbers can be read at any instant collectd dispatched."""

    TRIES = 4

    def __init__(self, pids, period=0.02):
        self.pids = list(pids)
        self.period = period
        self.rows = {pid: [] for pid in self.pids}
        self.rejected = {pid: 0 for pid in self.pids}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        _cleanups.append(self.stop)

    def _run(self):
        # Ahead of the workload's spinners, so that a read is one instant:
        # it sleeps between samples, and starves no one.
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        except OSError:
            pass
        fastest = {pid: 1.0 for pid in self.pids}
        while not self._stop.is_set():
            for pid in self.pids:
                # A read the scheduler interrupted has no single instant:
                # kept if about as quick as the quickest of this process's
                # (2 ms here, ten times that in an emulated VM), and tried
                # again at once if not (an emulated CPU whose host thread
                # waits for a busy host interrupts many).
                for _ in range(self.TRIES):
                    t0 = time.time()
                    on, runq, n = task_schedstat(pid)
                    t1 = time.time()
                    fastest[pid] = min(fastest[pid], t1 - t0)
                    if not n:
                        break
                    if t1 - t0 < max(0.002, 2 * fastest[pid]):
                        self.rows[pid].append(((t0 + t1) / 2, on, runq, n))
                        break
                    self.rejected[pid] += 1
            time.sleep(self.period)

    def stop(self):
        self._stop.set()
        self._thread.join()

    def _around(self, pid, t):
        """The samples either side of t, or None outside what was
        sampled."""
        rows = self.rows[pid]
        for a, b in zip(rows, rows[1:]):
            if a[0] <= t <= b[0]:
                return a, b
        return None

    def at(self, pid, t):
        """(on_ns, runq_ns) linearly interpolated at time t, or None when t
        is outside what was sampled."""
        around = self._around(pid, t)
        if not around:
            return None
        (ta, oa, ra, _), (tb, ob, rb, _) = around
        f = (t - ta) / (tb - ta) if tb > ta else 0.0
        return oa + f * (ob - oa), ra + f * (rb - ra)

    def bracket(self, pid, t):
        """((on_lo, on_hi), (runq_lo, runq_hi)) in ns: the samples either
        side of t, between which the truth at t lies whatever the
        workload did between them (a sleeper runs in bursts, so the
        straight line of at() can miss a burst on either side), or None."""
        around = self._around(pid, t)
        if not around:
            return None
        (_, oa, ra, _), (_, ob, rb, _) = around
        return (oa, ob), (ra, rb)


class Env:
    """A temporary root for one test, removed afterwards."""

    def __init__(self, name):
        self.root = tempfile.mkdtemp(prefix=f"wc-{name}-", dir="/var/tmp")
        os.chmod(self.root, 0o755)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _cleanup_all()
        _cleanups.clear()
        if os.environ.get("WC_KEEP_TMP"):
            print(f"# kept {self.root}", file=sys.stderr)
        else:
            shutil.rmtree(self.root, ignore_errors=True)
        return False

    def collectd(self, interval=1, plugin_conf="", **kw):
        return Collectd(self.root, interval, plugin_conf, **kw)

    def workload(self, name, *args, nice=0, cpu=None):
        return Workload(self.root, name, args, nice, cpu)


def bpf_programs(prefix="wc_"):
    """Names of loaded BPF programs starting with prefix."""
    out = subprocess.run(["bpftool", "prog", "list"], capture_output=True,
                         text=True).stdout
    return [m.group(1) for m in re.finditer(r"name (\S+)", out)
            if m.group(1).startswith(prefix)]


def kernel_delays_dequeue():
    """Whether the kernel's sched_entity has sched_delayed (6.12 and
    later): its BTF names the field."""
    try:
        with open("/sys/kernel/btf/vmlinux", "rb") as f:
            return b"\0sched_delayed\0" in f.read()
    except OSError:
        return False


def row_at(rows, t, slack=0.3):
    """The row dispatched nearest to t (values of one read are stamped a
    few milliseconds apart), or None."""
    best = min(rows, key=lambda r: abs(r[0] - t), default=None)
    return best if best and abs(best[0] - t) <= slack else None


def counter_window(rows, t0, t1):
    """Difference of a cumulative counter between the reads at t0 and t1:
    (value, t_start, t_end) or None."""
    a, b = row_at(rows, t0), row_at(rows, t1)
    if not a or not b:
        return None
    return b[1] - a[1], a[0], b[0]


def bpftool_list(kind):
    """`bpftool -j KIND list` (KIND: prog, link) as a list of dicts."""
    import json
    out = subprocess.run(["bpftool", "-j", kind, "list"],
                         capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def fdinfo_ids(pid, fields):
    """{field: set of ids} of the BPF objects a process holds through its
    file descriptors, from /proc/PID/fdinfo (fields: "prog_id", "map_id",
    "link_id"; a link's fd names its program too)."""
    out = {f: set() for f in fields}
    for path in glob.glob(f"/proc/{pid}/fdinfo/*"):
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        for field in fields:
            m = re.search(rf"^{field}:\s*(\d+)", text, re.M)
            if m:
                out[field].add(int(m.group(1)))
    return out


def bpf_fd_ids(pid):
    """(prog ids, link ids) of the BPF objects a process holds through its
    file descriptors (what it loaded or attached)."""
    ids = fdinfo_ids(pid, ("prog_id", "link_id"))
    return ids["prog_id"], ids["link_id"]


def bpf_owned_ids():
    """Prog, link and map ids held through a file descriptor by any
    process."""
    progs, links, maps = set(), set(), set()
    for d in glob.glob("/proc/[0-9]*"):
        ids = fdinfo_ids(d.rsplit("/", 1)[1], ("prog_id", "link_id",
                                               "map_id"))
        progs |= ids["prog_id"]
        links |= ids["link_id"]
        maps |= ids["map_id"]
    return progs, links, maps


# The names of our maps (the skeleton's; .rodata and .bss get the object's
# name cut to eight bytes).
OUR_MAPS = {"uw_rows", "tasks", "exits", "counters", "sample_clock",
            "stacks", "deep_stacks", "stack_counts", "held", "scratch",
            "texts", "quicks", "uw_files", "uw_wants", "uw_procs",
            "walk_hints", "snaps", "walk_procs", "wallcloc.rodata",
            "wallcloc.bss"}


def leaked_bpf(prefix="wc_"):
    """Programs named prefix* (and the links to them), and maps named as
    ours, that no process holds (and, for maps, no program uses): left
    behind by someone (pinned, or attached without a link).  Tests may
    run side by side, so another collectd's objects are not leaks; an
    object is reported only if it is unowned on two looks 0.5 s apart (one
    that was just being closed is gone by then)."""
    def look():
        all_progs = bpftool_list("prog")
        progs = {p["id"]: p["name"] for p in all_progs
                 if p.get("name", "").startswith(prefix)}
        links = {lk["id"]: lk.get("prog_id") for lk in bpftool_list("link")
                 if lk.get("prog_id") in progs}
        used = {m for p in all_progs for m in p.get("map_ids", [])}
        maps = {m["id"]: m["name"] for m in bpftool_list("map")
                if m.get("name") in OUR_MAPS}
        owned_p, owned_l, owned_m = bpf_owned_ids()
        return ({i: n for i, n in progs.items() if i not in owned_p},
                {i for i in links if i not in owned_l},
                {i: n for i, n in maps.items()
                 if i not in owned_m and i not in used})
    p1, l1, m1 = look()
    if not p1 and not l1 and not m1:
        return {}, set(), {}
    time.sleep(0.5)
    p2, l2, m2 = look()
    return ({i: n for i, n in p2.items() if i in p1}, l1 & l2,
            {i: n for i, n in m2.items() if i in m1})


# The spool's folded files: what each kind marker holds of the metrics.
FOLDED_NAME = re.compile(r"^wallclock-(\d{8}T\d{6}Z)(-\d+)?\.folded$")
MARKERS = {"[on-cpu]": ("oncpu",), "[off-cpu runqueue]": ("runqueue", "steal"),
           "[off-cpu sleep]": ("sleep",), "[off-cpu io]": ("blocked",)}


def folded_files(spool):
    """The spool's folded files, oldest first (latest.folded aside)."""
    return sorted(p for p in glob.glob(os.path.join(spool, "*"))
                  if FOLDED_NAME.match(os.path.basename(p)))


def folded_lines(path):
    """[(frames, value)], or raise ValueError on a malformed line."""
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            stack, _, value = line.rstrip("\n").rpartition(" ")
            if not stack or not value.isdigit():
                raise ValueError(f"{path}:{n}: {line!r}")
            out.append((stack.split(";"), int(value)))
    return out


def folded_time(path):
    """The second of the read that wrote the file (in its name)."""
    m = FOLDED_NAME.match(os.path.basename(path))
    return calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%SZ"))


def read_times(cd):
    """The stamps of collectd's reads, in order: every read dispatches the
    self metrics, stamped when it read the kernel's counters."""
    return [t for t, _ in cd.csv("", "derive", "exits")]


def flushing_reads(cd):
    """{second: stamp} of the reads that wrote a file, by the second its
    name carries: those after which the count of spool files grew (a late
    read and the next one can share a second)."""
    spool = cd.csv("", "derive", "spool_files")
    return {int(t): t for (_, a), (t, b) in zip([(0, 0)] + spool, spool)
            if b > a}


def last_counted(cd):
    """The stamp of the last read whose count of spool files reached the
    csv, or 0.  collectd drops the values still queued for its writers
    when it stops, so the last read's rows may be there in part."""
    spool = cd.csv("", "derive", "spool_files")
    return spool[-1][0] if spool else 0


def flush_stamps(cd, group, files):
    """{file: group's stamp at the read that wrote it}, for the files
    whose read reached the csv with a row of the group.  A file holds what
    the kernel counted between two such stamps; the seconds in the files'
    names can be a second off that when a read is late."""
    reads, flushed = read_times(cd), flushing_reads(cd)
    rows = by_read(cd.csv(group, "wallclock_us", "sleep"), reads)
    out = {}
    for p in files:
        row = rows.get(flushed.get(folded_time(p)))
        if row:
            out[p] = row[0]
    return out


def by_read(rows, reads):
    """{read: (stamp, value)} of a group's rows.  A group is stamped when
    its threads were read, within its read's walk, and the read in the
    middle of that walk: the nearest read is its own, reads being a walk
    apart at least."""
    out = {}
    for t, v in rows:
        i = bisect.bisect_left(reads, t)
        near = reads[max(i - 1, 0):i + 1]
        if near:
            out[min(near, key=lambda r: abs(r - t))] = (t, v)
    return out


def totals_against_metrics(cd, files, parsed):
    """Each file's values per group and kind against the growth of the
    dispatched counters between the reads that wrote it and the previous
    file: (compared, [differences])."""
    reads = read_times(cd)
    flushed, counted = flushing_reads(cd), last_counted(cd)
    series = {(g, ti): by_read(cd.csv(g, "wallclock_us", ti), reads)
              for tinsts in MARKERS.values() for ti in tinsts
              for g in cd.groups()}
    checked, details = 0, []
    for prev, cur in zip(files, files[1:]):
        r0 = flushed.get(folded_time(prev))
        r1 = flushed.get(folded_time(cur))
        if r1 is None and folded_time(cur) > int(counted):
            continue  # collectd stopped before the csv had that read
        if r0 is None or r1 is None:
            details.append(f"{os.path.basename(prev)} -> "
                           f"{os.path.basename(cur)}: no read wrote them "
                           f"(flushing reads: {sorted(flushed.values())})")
            continue
        window = [t for t in reads if r0 < t <= r1]
        sums = {}
        for fr, v in parsed[cur]:
            sums[(fr[0], fr[1])] = sums.get((fr[0], fr[1]), 0) + v
        for g in cd.groups():
            for marker, tinsts in MARKERS.items():
                want, ok = 0, True
                for ti in tinsts:
                    rows = series[(g, ti)]
                    b = rows.get(r1)
                    if b is None:
                        ok = False
                        break
                    # new since the last file, or evicted and back: its
                    # counters started from zero within the window
                    a = rows.get(r0)
                    fresh = a is None or any(t not in rows for t in window)
                    want += b[1] - (0 if fresh else a[1])
                if not ok:
                    continue
                got = sums.get((g, marker), 0)
                checked += 1
                if got != want:
                    details.append(f"{os.path.basename(prev)} -> "
                                   f"{os.path.basename(cur)} {g} {marker}:"
                                   f" file {got} us, metrics {want:.0f} us"
                                   f" (reads at {r0:.3f}, {r1:.3f})")
    return checked, details
