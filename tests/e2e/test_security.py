#!/usr/bin/env python3
"""What an unprivileged local user (nobody, through setpriv) can do to a
collectd that profiles the host as root, tried for real:

1. a perf map that is a symlink to a root-only file: its text must never
   reach the spool;
2. a perf map that is /proc/kmsg, bind-mounted in the user's own user and
   mount namespace (skipped, loudly, where unprivileged user namespaces are
   off);
3. a stripped binary whose .gnu_debuglink names /proc/kmsg, through a
   symlink beside it;
4. a copy of a root-owned program, one function renamed, its build-id kept:
   the root program's frames keep their real names;
5. a perf map that grows by 10 GB a second;
5b. a FIFO where a perf map goes, and a 300 MB perf map ending in a
   megabyte-long name and binary garbage after its one good line;
6. 20 processes with 64,000 mappings each, half of them executable;
7. a mapped file whose reads never return (a FUSE server that hangs, as a
   root-mounted allow_other one can): the symbolizer's helper is stopped
   at its deadline, the rest of the host keeps its names;
8. libraries changed on disk under running processes: renamed over by a
   decoy, their tail overwritten with random bytes, then cut off.

In every case wallclock values keep being dispatched every interval, the
drain and flush stay bounded, and collectd stops on SIGTERM in under 5 s.
The figures are printed as "# ..." lines.
"""
import glob
import os
import secrets
import shutil
import subprocess
import sys
import time

import wctest
from wctest import (Env, case, done, fuse_server, helper_check,
                    helper_pids, require_built, skip, wait_until)

NOBODY = 65534
INTERVAL = 1
FLUSH = 2
HOSTILE = os.path.join(wctest.BUILD, "tests", "hostile")
JIT_ADDR = 0x100000000


def as_nobody(cmd):
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
            "--clear-groups", "--"] + cmd


def spawn(cmd, ready=True):
    """Start cmd; with ready, wait for its "ready PID" line.  Killed at the
    end of the test."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    wctest._cleanups.append(lambda: (p.poll() is None and p.kill(),
                                     p.wait()))
    if ready:
        line = p.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"{cmd} did not start: {line!r} "
                               f"{p.stderr.read() if p.poll() else ''}")
    return p


def nobody_dir(env, name):
    """A directory of nobody's, with a copy of the hostile program."""
    d = os.path.join(env.root, name)
    os.makedirs(d)
    shutil.copy(HOSTILE, os.path.join(d, "hostile"))
    for p in (d, os.path.join(d, "hostile")):
        os.chown(p, NOBODY, NOBODY)
        os.chmod(p, 0o755)
    return d


def spool_text(cd):
    out = []
    for p in glob.glob(os.path.join(cd.spool, "*")):
        with open(p, "rb") as f:
            out.append(f.read().decode("utf-8", "replace"))
    return "\n".join(out)


def folded_lines(cd, group, after=0):
    """Lines of the folded files (written after a time) for one group:
    [(frames, value)]."""
    out = []
    for p in glob.glob(os.path.join(cd.spool, "wallclock-*.folded")):
        if os.path.getmtime(p) <= after:
            continue
        with open(p, errors="replace") as f:
            for line in f:
                stack, _, value = line.rstrip("\n").rpartition(" ")
                frames = stack.split(";")
                if frames[0] == group and value.isdigit():
                    out.append((frames, int(value)))
    return out


def wait_group(cd, group, timeout=8 * FLUSH + 10, pred=None):
    return wait_until(lambda: any(pred is None or pred(fr) for fr, _ in
                                  folded_lines(cd, group)), timeout, 0.2)


def dispatch_gap(cd, since):
    """The longest time between two reads' values from since on, and the
    number of reads."""
    rows = [t for t, _ in cd.csv("", "gauge", "threads") if t >= since]
    gaps = [b - a for a, b in zip(rows, rows[1:])]
    return (max(gaps) if gaps else float("inf")), len(rows)


def check_dispatch(cd, since, label, limit=2.5 * INTERVAL):
    gap, n = dispatch_gap(cd, since)
    print(f"# {label}: {n} reads since the attack, longest gap {gap:.2f} s")
    case(f"{label}: values dispatched every interval (longest gap "
         f"<= {limit:.1f} s)", n >= 5 and gap <= limit,
         f"{n} reads, longest gap {gap:.2f} s")


def check_bounded(cd, since, label, flush_max=1.0):
    flushes = [v for t, v in cd.csv("", "duration", "flush") if t >= since]
    drain = [(t, v) for t, v in cd.csv("", "total_time_in_ms", "drain")
             if t >= since]
    spent = drain[-1][1] - drain[0][1] if len(drain) > 1 else 0
    span = drain[-1][0] - drain[0][0] if len(drain) > 1 else 1
    worst = max(flushes, default=0)
    print(f"# {label}: flush at most {worst * 1000:.0f} ms; drains "
          f"{spent:.0f} ms in {span:.0f} s")
    case(f"{label}: flushes take under {flush_max:.1f} s",
         flushes and worst < flush_max, f"{flushes}")
    # the helper's share (a twentieth) and a burst (1 s), and the drains'
    # own work
    case(f"{label}: drains take under 15% of the time",
         len(drain) >= 3 and spent < 0.15 * 1000 * span,
         f"{spent} ms in {span:.0f} s, {len(drain)} reads")


def check_stop(cd, label):
    t = time.time()
    rc = cd.stop(timeout=30)
    took = time.time() - t
    print(f"# {label}: collectd stopped {took:.2f} s after SIGTERM")
    case(f"{label}: collectd stops on SIGTERM in under 5 s",
         rc == 0 and took < 5, f"exit status {rc} after {took:.1f} s")


def self_counter(cd, name):
    rows = cd.csv("", "derive", name)
    return rows[-1][1] if rows else 0


def start_collectd(env, conf=""):
    cd = env.collectd(interval=INTERVAL, plugin_conf=f"FlushInterval {FLUSH}"
                      f"\nMinBlockMicroseconds 1000\n{conf}")
    return cd.start()


def sysctl(name, value):
    path = "/proc/sys/" + name.replace(".", "/")
    with open(path) as f:
        old = f.read().strip()
    with open(path, "w") as f:
        f.write(value)
    wctest._cleanups.append(lambda: open(path, "w").write(old))
    return old


# --- the helper itself -------------------------------------------------------

CAPS_KEPT = (1 << 19) | (1 << 2) | (1 << 40)  # SYS_PTRACE, DAC_READ_SEARCH,
#                                              CHECKPOINT_RESTORE


def status_fields(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f
                    if ":\t" in line)


def check_helper_confined(cd):
    # the symbolizer's, and the unwind tables' (started by the first
    # table a walk asks for)
    wait_until(lambda: len(helper_pids(cd.pid)) >= 2, 10, 0.1)
    pids = helper_pids(cd.pid)
    case("helper: collectd runs two helpers, the symbolizer's and the "
         "unwind tables'", len(pids) == 2, str(pids))
    # every thread of each: its watcher of collectd too
    tids = [f"{pid}/task/{tid}" for pid in pids
            for tid in sorted(os.listdir(f"/proc/{pid}/task"))]
    for i, tid in enumerate(tids):
        st = status_fields(tid)
        eff, prm = int(st["CapEff"], 16), int(st["CapPrm"], 16)
        print(f"# helper thread {tid}: CapEff {eff:#x} CapPrm {prm:#x} "
              f"NoNewPrivs {st.get('NoNewPrivs')} Seccomp "
              f"{st.get('Seccomp')}")
        case(f"helper thread {i + 1} of {len(tids)}: it keeps only the "
             "capabilities that reading takes, can gain none, and is under "
             "its seccomp filter", eff == prm == CAPS_KEPT and
             st.get("NoNewPrivs") == "1" and st.get("Seccomp") == "2",
             str(st))
        case(f"helper thread {i + 1} of {len(tids)}: it opens files as "
             "nobody (fsuid), not root",
             st.get("Uid", "").split()[3:4] == [str(NOBODY)] and
             st.get("Uid", "").split()[0] == "0", st.get("Uid"))
    # root's directory: a root helper could write there, this one cannot;
    # nor trace or signal its parent (seccomp: x86-64's list)
    confined, refused, said = helper_check(cd.root)
    print("# helper --check: " + said.strip().replace("\n", "; "))
    case("helper: it can neither make nor truncate root's files",
         confined and refused, said)
    lines = dict(ln.split(": ", 1)[0:2] for ln in said.splitlines()
                 if ": " in ln)
    if os.uname().machine == "x86_64":
        case("helper: it can neither trace nor signal other processes",
             lines.get("trace the parent") in
             ("Permission denied", "Operation not permitted") and
             lines.get("signal the parent") in
             ("Permission denied", "Operation not permitted"), said)


# --- 1 ----------------------------------------------------------------------

def leak_through_symlink():
    with Env("sec-leak") as env:
        sysctl("fs.protected_symlinks", "0")
        secret_dir = os.path.join(env.root, "rootonly")
        os.makedirs(secret_dir, mode=0o700)
        marker = "WCSECRET_" + secrets.token_hex(6)
        secret = os.path.join(secret_dir, "secret")
        with open(secret, "w") as f:
            f.write(f"{JIT_ADDR:x} 10000 {marker}\n")
        os.chmod(secret, 0o600)
        d = nobody_dir(env, "leak")
        cd = start_collectd(env)
        p = spawn(as_nobody([os.path.join(d, "hostile"), "--jit",
                             f"{JIT_ADDR:x}", "--name", "hleak"]))
        link = f"/tmp/perf-{p.pid}.map"
        subprocess.run(as_nobody(["ln", "-sf", secret, link]), check=True)
        wctest._cleanups.append(lambda: os.path.lexists(link) and
                                os.unlink(link))
        named = wait_group(cd, "hleak", pred=lambda fr: "[anon]" in fr)
        time.sleep(2 * FLUSH)
        case("leak: the JIT-like process of nobody was profiled, its code "
             "[anon]", named, str(folded_lines(cd, "hleak")[:3]))
        case("leak: a root-only file's text never reaches the spool "
             "through a perf map symlink", marker not in spool_text(cd),
             "marker found in the spool")
        case("leak: the symlinked perf map is counted as refused",
             self_counter(cd, "symbol_files_refused") >= 1,
             str(self_counter(cd, "symbol_files_refused")))
        check_helper_confined(cd)
        check_stop(cd, "leak")


# --- 2 ----------------------------------------------------------------------

def userns_works():
    r = subprocess.run(as_nobody(["unshare", "-Urm", "true"]),
                       capture_output=True, text=True)
    return r.returncode == 0, r.stderr.strip()


def kmsg_in_namespace():
    ok, why = userns_works()
    if not ok:
        skip("kmsg: a perf map bind-mounted from /proc/kmsg in a user "
             "namespace", f"unprivileged user namespaces are off here "
             f"(unshare -Urm as nobody: {why})")
        return
    with Env("sec-kmsg") as env:
        d = nobody_dir(env, "kmsg")
        cd = start_collectd(env)
        since = time.time()
        script = ('touch /tmp/perf-$$.map && '
                  'mount --bind /proc/kmsg /tmp/perf-$$.map && '
                  f'exec {d}/hostile --jit 0 --name hkmsg')
        p = spawn(as_nobody(["unshare", "-Urm", "sh", "-c", script]))
        wctest._cleanups.append(
            lambda: os.path.exists(f"/tmp/perf-{p.pid}.map") and
            os.unlink(f"/tmp/perf-{p.pid}.map"))
        named = wait_group(cd, "hkmsg", pred=lambda fr: "[anon]" in fr)
        time.sleep(3 * FLUSH)
        case("kmsg: the process with /proc/kmsg as its perf map was "
             "profiled", named, str(folded_lines(cd, "hkmsg")[:3]))
        check_dispatch(cd, since, "kmsg")
        check_bounded(cd, since, "kmsg")
        case("kmsg: the perf map is refused (procfs, not the process's "
             "user's)", self_counter(cd, "symbol_files_refused") >= 1,
             str(self_counter(cd, "symbol_files_refused")))
        check_stop(cd, "kmsg")


# --- 3 ----------------------------------------------------------------------

def debuglink_to_kmsg():
    with Env("sec-dbglink") as env:
        d = nobody_dir(env, "dbg")
        b = os.path.join(d, "hdbg")
        steps = [["cp", os.path.join(d, "hostile"), b],
                 ["objcopy", "--only-keep-debug", b, b + ".debug"],
                 ["objcopy", "--strip-all", b],
                 ["objcopy", f"--add-gnu-debuglink={b}.debug", b],
                 ["rm", b + ".debug"],
                 ["ln", "-s", "/proc/kmsg", b + ".debug"],
                 ["mkdir", os.path.join(d, ".debug")],
                 ["ln", "-s", "/proc/kmsg",
                  os.path.join(d, ".debug", "hdbg.debug")]]
        for s in steps:
            subprocess.run(as_nobody(s), check=True, capture_output=True)
        cd = start_collectd(env)
        since = time.time()
        spawn(as_nobody([b, "--name", "hdbg"]))
        named = wait_group(cd, "hdbg", pred=lambda fr: any(
            f.startswith("hdbg+0x") for f in fr))
        time.sleep(3 * FLUSH)
        case("debuglink: the stripped binary was symbolized (hdbg+0x... "
             "without its debug file)", named,
             str(folded_lines(cd, "hdbg")[:3]))
        check_dispatch(cd, since, "debuglink")
        check_bounded(cd, since, "debuglink")
        check_stop(cd, "debuglink")


# --- 4 ----------------------------------------------------------------------

def forged_build_id():
    with Env("sec-forge") as env:
        victim = os.path.join(env.root, "victim")
        shutil.copy(wctest.WORKLOAD, victim)
        os.chmod(victim, 0o755)
        d = nobody_dir(env, "forge")
        forged = os.path.join(d, "forger")
        # the symbol table's name (and DWARF's): same length, same layout
        patch = ("import sys; p=sys.argv[1]; b=open(p,'rb').read(); "
                 "assert b.count(b'\\0burn_cpu\\0'); "
                 "open(p,'wb').write(b.replace(b'\\0burn_cpu\\0',"
                 "b'\\0pwned_fn\\0'))")
        subprocess.run(as_nobody(["cp", victim, forged]), check=True)
        subprocess.run(as_nobody(["python3", "-c", patch, forged]),
                       check=True)
        cd = start_collectd(env)
        spawn(as_nobody([forged, "--spin", "1", "--seconds", "120",
                         "--name", "forger"]))
        own = wait_group(cd, "forger", pred=lambda fr: "pwned_fn" in fr)
        case("forge: the forger's own frames carry its own names", own,
             str(folded_lines(cd, "forger")[:3]))
        spawn([victim, "--spin", "1", "--seconds", "120", "--name",
               "victim"])
        seen = wait_group(cd, "victim", pred=lambda fr: "[on-cpu]" in fr
                          and len(fr) > 3)
        time.sleep(2 * FLUSH)
        lines = [fr for fr, _ in folded_lines(cd, "victim")
                 if "[on-cpu]" in fr]
        real = sum(1 for fr in lines if "burn_cpu" in fr)
        fake = sum(1 for fr in lines if "pwned_fn" in fr)
        print(f"# forge: victim on-CPU lines {len(lines)}, with burn_cpu "
              f"{real}, with pwned_fn {fake}")
        case("forge: the root program's frames keep their real names",
             seen and real > 0 and fake == 0,
             f"{real} lines with burn_cpu, {fake} with pwned_fn")
        check_stop(cd, "forge")


# --- 5 ----------------------------------------------------------------------

def growing_perf_map():
    with Env("sec-grow") as env:
        d = nobody_dir(env, "grow")
        cd = start_collectd(env)
        since = time.time()
        p = spawn(as_nobody([os.path.join(d, "hostile"), "--jit", "0",
                             "--grow-map", "--name", "hgrow"]))
        wctest._cleanups.append(
            lambda: os.path.exists(f"/tmp/perf-{p.pid}.map") and
            os.unlink(f"/tmp/perf-{p.pid}.map"))
        named = wait_group(cd, "hgrow")
        time.sleep(5 * FLUSH)
        size = os.stat(f"/tmp/perf-{p.pid}.map").st_size
        print(f"# grow: the perf map had grown to {size / 1e9:.0f} GB")
        case("grow: the process with the growing perf map was profiled",
             named and size > 10e9, f"{size} bytes")
        check_dispatch(cd, since, "grow")
        check_bounded(cd, since, "grow")
        check_stop(cd, "grow")


def hostile_perf_maps():
    """A FIFO where a JIT's perf map goes, and a 300 MB map whose tail has
    a megabyte-long name and binary garbage after its one good line."""
    with Env("sec-maps") as env:
        d = nobody_dir(env, "hmaps")
        cd = start_collectd(env)
        since = time.time()
        rss0 = int(open(f"/proc/{cd.pid}/status").read()
                   .split("VmRSS:")[1].split()[0])
        fifo = spawn(as_nobody([os.path.join(d, "hostile"), "--jit",
                                f"{JIT_ADDR:x}", "--name", "hfifo"]))
        fifo_map = f"/tmp/perf-{fifo.pid}.map"
        subprocess.run(as_nobody(["mkfifo", fifo_map]), check=True)
        big = spawn(as_nobody([os.path.join(d, "hostile"), "--jit",
                               f"{JIT_ADDR:x}", "--name", "hbig"]))
        big_map = f"/tmp/perf-{big.pid}.map"
        for m in (fifo_map, big_map):
            wctest._cleanups.append(lambda m=m: os.path.lexists(m) and
                                    os.unlink(m))
        # written aside and renamed into place, nobody's from the start:
        # a map seen with the wrong owner stays refused while unchanged
        tmp_map = f"/tmp/.wc-perf-{big.pid}.tmp"
        with open(tmp_map, "wb") as f:
            f.truncate(300 << 20)  # NULs, no newline: one endless line
            f.seek(300 << 20)
            f.write(f"\n{JIT_ADDR:x} 10000 hjit_good\n".encode())
            f.write(f"{JIT_ADDR:x} 10000 ".encode() + b"N" * (1 << 20) +
                    b"\n")
            f.write(os.urandom(64 << 10).replace(b"\n", b"") + b"\n")
            f.write(b"\xff\xfe\x00\x01 zz \x80\n" * 1000)
        os.chown(tmp_map, NOBODY, NOBODY)
        os.chmod(tmp_map, 0o644)
        os.rename(tmp_map, big_map)
        good = wait_group(cd, "hbig", pred=lambda fr: "hjit_good" in fr)
        wait_group(cd, "hfifo")
        time.sleep(3 * FLUSH)
        text = spool_text(cd)
        rss1 = int(open(f"/proc/{cd.pid}/status").read()
                   .split("VmRSS:")[1].split()[0])
        print(f"# perf maps: collectd's RSS {rss0 / 1024:.1f} -> "
              f"{rss1 / 1024:.1f} MiB with a 300 MB map and a FIFO")
        case("perf maps: of a 300 MB map the tail is read, its good line "
             "names the JIT code", good,
             str(folded_lines(cd, "hbig")[:3]))
        case("perf maps: the megabyte-long name and the binary lines name "
             "nothing", "NNNNNNNN" not in text and
             not any("\ufffd" in ln or "\x00" in ln
                     for ln in text.splitlines()), "")
        case("perf maps: and are counted",
             self_counter(cd, "perfmap_lines_refused") >= 2,
             str(self_counter(cd, "perfmap_lines_refused")))
        case("perf maps: the FIFO is refused, not waited on, and counted",
             wait_group(cd, "hfifo") and
             self_counter(cd, "symbol_files_refused") >= 1,
             str(self_counter(cd, "symbol_files_refused")))
        case("perf maps: collectd's RSS grows by under 16 MiB",
             rss1 - rss0 < 16 << 10, f"{rss0} -> {rss1} KiB")
        check_dispatch(cd, since, "perf maps")
        check_bounded(cd, since, "perf maps")
        check_stop(cd, "perf maps")


# --- 6 ----------------------------------------------------------------------

def cpu_seconds(pid, children=True):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = [int(x) for x in fields[11:15 if children else 13]]
    return sum(ticks) / os.sysconf("SC_CLK_TCK")


def helpers_cpu():
    total = 0.0
    for comm in glob.glob("/proc/[0-9]*/comm"):
        try:
            with open(comm) as f:
                if f.read().strip() == "wallclock-symd":
                    total += cpu_seconds(comm.split("/")[2], False)
        except OSError:
            pass
    return total


def many_mappings(nproc=20, nmaps=64000, seconds=20):
    with Env("sec-maps") as env:
        d = nobody_dir(env, "maps")
        cd = start_collectd(env)
        since = time.time()
        for _ in range(nproc):
            spawn(as_nobody([os.path.join(d, "hostile"), "--mappings",
                             str(nmaps), "--jit", "0", "--name", "hmaps"]))
        named = wait_group(cd, "hmaps")
        time.sleep(2 * FLUSH)
        c0, h0, t0 = cpu_seconds(cd.pid), helpers_cpu(), time.time()
        time.sleep(seconds)
        c1, h1, t1 = cpu_seconds(cd.pid), helpers_cpu(), time.time()
        share = 100 * ((c1 - c0) + (h1 - h0)) / (t1 - t0)
        print(f"# maps: {nproc} processes of {nmaps} mappings: collectd "
              f"{100 * (c1 - c0) / (t1 - t0):.1f}% of a CPU and its "
              f"helper {100 * (h1 - h0) / (t1 - t0):.1f}%, over "
              f"{t1 - t0:.0f} s")
        case("maps: the processes were profiled", named)
        case("maps: collectd and its helper take under 10% of a CPU",
             share < 10, f"{share:.1f}%")
        case("maps: what was left out for bounds is counted",
             self_counter(cd, "symbol_over_bounds") > 0,
             str(self_counter(cd, "symbol_over_bounds")))
        said = [ln for ln in cd.log().splitlines()
                if "symbol tables left out" in ln]
        minutes = 1 + int((time.time() - since) // 60)
        case("maps: and said, once a minute at most, naming "
             "symbol_over_bounds", 1 <= len(said) <= minutes and
             all("symbol_over_bounds" in ln for ln in said),
             "\n".join(said))
        check_dispatch(cd, since + 2 * FLUSH, "maps")
        check_bounded(cd, t0, "maps")
        check_stop(cd, "maps")


# --- 7 ----------------------------------------------------------------------

def fuse_that_hangs():
    with Env("sec-fuse") as env:
        fs = fuse_server(env.root, ["/bin/true"],
                         "fuse: a mapped file whose reads never return")
        if not fs:
            return
        mnt = fs.mountpoint
        cd = start_collectd(env)
        named = env.workload("wcw_named", "--spin", "1", "--seconds", "120")
        wait_group(cd, "wcw_named", pred=lambda fr: "burn_cpu" in fr)
        fs.hang(True)
        since = time.time()
        d = nobody_dir(env, "fuse")
        spawn(as_nobody([os.path.join(d, "hostile"), "--map-exec",
                         os.path.join(mnt, "true"), "--name", "hfuse"]))
        stalled = wait_until(lambda: self_counter(
            cd, "symbolizer_stalls") >= 1, 20, 0.2)
        time.sleep(4 * FLUSH)
        lines = [ln for ln in cd.log().splitlines()
                 if "did not answer" in ln]
        print(f"# fuse: {lines[:1]}")
        case("fuse: the helper is stopped at its deadline, and the log "
             "says what it was reading",
             stalled and lines and os.path.join(mnt, "true") in lines[0],
             f"stalls {self_counter(cd, 'symbolizer_stalls')}, {lines}")
        case("fuse: the file is not read again: one stall in all",
             self_counter(cd, "symbolizer_stalls") == 1,
             str(self_counter(cd, "symbolizer_stalls")))
        check_dispatch(cd, since, "fuse", limit=2.5 * INTERVAL + 2.0)
        t = time.time()
        named_after = wait_until(lambda: any(
            "burn_cpu" in fr for fr, _ in folded_lines(cd, "wcw_named", t)),
            6 * FLUSH, 0.2)
        case("fuse: the host's other processes keep their names",
             named_after, "no new file with burn_cpu")
        check_stop(cd, "fuse")
        named.kill()


# --- 8 ----------------------------------------------------------------------

LIB_SRC = """
__attribute__((noinline)) void NAME(void)
{
	for (volatile unsigned long i = 0;; i++)
		;
}
"""
SPIN_PY = """
import ctypes, os, sys
ctypes.CDLL(None).prctl(15, sys.argv[2].encode(), 0, 0, 0)
lib = ctypes.CDLL(sys.argv[1])
print("ready", os.getpid(), flush=True)
getattr(lib, sys.argv[3])()
"""


def build_lib(d, path, name):
    src = os.path.join(d, name + ".c")
    with open(src, "w") as f:
        f.write(LIB_SRC.replace("NAME", name))
    subprocess.run(["gcc", "-O1", "-g", "-shared", "-fPIC", "-o", path,
                    src], check=True)
    os.chown(path, NOBODY, NOBODY)


def loads_end(path):
    """Where a library's last loaded byte ends: after it come .symtab,
    .strtab and the section headers, which nothing running needs."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    end = 0
    for i in range(phnum):
        ptype, _, off, _, _, filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize)
        if ptype == 1:
            end = max(end, off + filesz)
    return end, len(data)


def overwrite(path, at, n):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, secrets.token_bytes(n), at)
    finally:
        os.close(fd)


def lib_spinner(d, lib, comm, func):
    script = os.path.join(d, "spin.py")
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write(SPIN_PY)
    return spawn(as_nobody([sys.executable, script, lib, comm, func]))


def frames_of(cd, group, after):
    return [fr for fr, _ in folded_lines(cd, group, after)
            if "[on-cpu]" in fr]


def check_heaviest(cd, group, lib, func, label):
    """The heaviest on-CPU stack of a spinner in a changed library, from
    now on, ends in it: named, or as module+offset, never another name."""
    t = time.time()

    def heaviest():
        lines = [(v, fr) for fr, v in folded_lines(cd, group, t)
                 if "[on-cpu]" in fr]
        return max(lines)[1][-1] if lines else None

    leaf = None
    if wait_until(lambda: heaviest() is not None, 8 * FLUSH + 10, 0.2):
        time.sleep(2 * FLUSH)
        leaf = heaviest()
    print(f"# {label}: the heaviest stack ends in {leaf}")
    case(f"{label}: the spinner's heaviest stack ends in its function, "
         "named or as module+offset", leaf == func or
         (leaf or "").startswith(lib + "+0x"), str(leaf))


def replaced_libraries():
    """Libraries changed on disk under running processes: one renamed over
    by another whose same offsets hold a decoy's name (a package upgrade
    does this), one whose tail (symbols, section headers) is overwritten
    with random bytes and then cut off, in place, while mapped."""
    if not shutil.which("gcc"):
        skip("replaced libraries", "no gcc to build the test's libraries")
        return
    with Env("sec-replace") as env:
        d = nobody_dir(env, "replace")
        lib = os.path.join(d, "libwcrep.so")
        build_lib(d, lib, "wc_lib_spin_a")
        spin_a = lib_spinner(d, lib, "wcw_replaced", "wc_lib_spin_a")
        decoy = os.path.join(d, "decoy.so")
        build_lib(d, decoy, "wc_lib_decoy")
        os.rename(decoy, lib)
        # collectd first sees the process once its library is replaced
        cd = start_collectd(env)
        since = time.time()
        wait_group(cd, "wcw_replaced", pred=lambda fr: any(
            "wc_lib_" in f for f in fr))
        fr = frames_of(cd, "wcw_replaced", 0)
        named = [f for fs in fr for f in fs if "wc_lib_" in f]
        print(f"# replaced: {sorted(set(named))}")
        case("replaced: the running library's own names, not the file "
             "now at its path", named and
             all(f == "wc_lib_spin_a" for f in named), str(named))
        spin_a.kill()

        # changed in place while a process runs it, once named; then
        # libraries changed before anything of ours read them
        cut = os.path.join(d, "libwccut.so")
        build_lib(d, cut, "wc_lib_spin_c")
        lib_spinner(d, cut, "wcw_cut", "wc_lib_spin_c")
        ok = wait_group(cd, "wcw_cut", pred=lambda fr: "wc_lib_spin_c"
                        in fr)
        case("cut: the library's spinner is named before the change", ok,
             str(frames_of(cd, "wcw_cut", 0)[:3]))
        end, size = loads_end(cut)
        overwrite(cut, end, size - end)
        os.truncate(cut, end)
        check_heaviest(cd, "wcw_cut", "libwccut.so", "wc_lib_spin_c",
                       f"cut while running (tail of {size - end} bytes "
                       f"after {end})")
        for label in ("garbage", "truncated"):
            path = os.path.join(d, f"libwc{label}.so")
            func = f"wc_lib_{label}"
            build_lib(d, path, func)
            end, size = loads_end(path)
            overwrite(path, end, size - end)
            if label == "truncated":
                os.truncate(path, end)
            comm = f"wcw_{label}"
            lib_spinner(d, path, comm, func)
            check_heaviest(cd, comm, os.path.basename(path), func,
                           f"{label} before read")
        case("replaced and cut: the helper never crashed or stalled",
             self_counter(cd, "symbolizer_stalls") == 0,
             str(self_counter(cd, "symbolizer_stalls")))
        check_dispatch(cd, since, "replaced and cut")
        check_stop(cd, "replaced and cut")


require_built()
if not os.path.exists(HOSTILE):
    case("tests/hostile is built", False, HOSTILE)
    done()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ONLY = os.environ.get("CHECK_ONLY")
for test in (leak_through_symlink, kmsg_in_namespace, debuglink_to_kmsg,
             forged_build_id, growing_perf_map, hostile_perf_maps,
             many_mappings, fuse_that_hangs, replaced_libraries):
    if not ONLY or ONLY == test.__name__:
        test()
done()

