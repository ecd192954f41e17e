#!/usr/bin/env python3
"""adopted.py - how much of a host's waiting time has no user stack.

A wait's user stack is walked as the thread goes to sleep.  A thread that
was already asleep when the plugin started has none for that wait (the
plugin does not read another process's memory from outside), so its time
is under "[user stack not taken]" until it wakes.  On a host of daemons
that can be a good share of the flame graph: this prints it.

Before collectd starts: a PostgreSQL cluster (if Debian's postgresql-15
is installed; skipped, and said so, if not), a Python HTTP server, a
shell waiting for a child, and a `sleep`, all idle.  Then a query every 2
s and a page every 5 s while collectd (Interval 2, FlushInterval 10)
runs for --minutes.  Printed per folded file: the user processes' sleep
and I/O (threads with a user part; kernel threads have none), the share
under "[user stack not taken]" and under "[waits < 1 ms]", and the groups
with the most of it; then the median share from the third file on, and
the largest such lines of the last file.  Asserts nothing, except in
--smoke (the suite's): a PASS/FAIL line on whether the figures came out.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "e2e"))
from wctest import (Env, folded_files, folded_lines,  # noqa: E402
                    folded_time, require_built)

OFF = ("[off-cpu sleep]", "[off-cpu io]")
UNTAKEN = "[user stack not taken]"
PG_BIN = "/usr/lib/postgresql/15/bin"
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def as_postgres(cmd):
    return subprocess.run(["su", "postgres", "-s", "/bin/sh", "-c", cmd],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, cwd="/")


class Daemons:
    """The idle daemons and the traffic to them."""

    def __init__(self, root):
        self.root, self.procs, self.pg = root, [], None

    def start(self):
        if os.path.exists(os.path.join(PG_BIN, "postgres")):
            self.pg = os.path.join(self.root, "pg")
            os.mkdir(self.pg)
            shutil.chown(self.pg, "postgres")
            r = as_postgres(
                f"{PG_BIN}/initdb -D {self.pg}/data -A trust && "
                f"{PG_BIN}/pg_ctl -D {self.pg}/data -l {self.pg}/log -o "
                f"'-k {self.pg} -p 54329 -c listen_addresses=' start")
            if r.returncode:
                sys.exit(f"PostgreSQL did not start: {r.stderr}")
        else:
            print(f"# SKIP PostgreSQL: {PG_BIN}/postgres is not installed")
            self.pg = None
        www = os.path.join(self.root, "www")
        os.mkdir(www)
        with open(os.path.join(www, "index.html"), "w") as f:
            f.write("hi\n")
        self.spawn(NOBODY + ["python3", "-m", "http.server", "18089",
                             "--bind", "127.0.0.1"], cwd=www)
        self.spawn(NOBODY + ["sleep", "100000"])
        self.spawn(["bash", "-c", "sleep 100000; :"])
        time.sleep(3)

    def traffic(self):
        self.spawn(["bash", "-c", "while :; do curl -s "
                    "http://127.0.0.1:18089/ >/dev/null; sleep 5; done"])
        if self.pg:
            q = (f"{PG_BIN}/psql -h {self.pg} -p 54329 -qAtc "
                 "'select count(*) from pg_class' postgres")
            self.spawn(["bash", "-c", f"while :; do su postgres -s /bin/sh"
                        f" -c \"{q}\" >/dev/null; sleep 2; done"])

    def spawn(self, argv, cwd="/"):
        self.procs.append(subprocess.Popen(
            argv, cwd=cwd, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True))

    def stop(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, 9)
            except ProcessLookupError:
                pass
            p.wait()
        if self.pg:
            as_postgres(f"{PG_BIN}/pg_ctl -D {self.pg}/data stop -m fast")


def shares(path):
    """(user waiting us, untaken us, short us, {group: untaken us})"""
    tot = untaken = short = 0
    by = {}
    for fr, v in folded_lines(path):
        if fr[1] not in OFF or all(f.endswith("_[k]") for f in fr[2:]):
            continue
        tot += v
        if UNTAKEN in fr:
            untaken += v
            by[fr[0]] = by.get(fr[0], 0) + v
        if any(f.startswith("[waits <") for f in fr[2:]):
            short += v
    return tot, untaken, short, by


def report(files):
    t0 = folded_time(files[0])
    print("file at  waiting s  untaken %  short %  most untaken")
    for p in files:
        tot, untaken, short, by = shares(p)
        top = sorted(by.items(), key=lambda kv: -kv[1])[:4]
        print(f"{folded_time(p) - t0:6d} s {tot / 1e6:10.1f} "
              f"{100 * untaken / max(tot, 1):10.2f} "
              f"{100 * short / max(tot, 1):8.2f}  " +
              ", ".join(f"{g} {v / 1e6:.1f} s" for g, v in top))
    later = sorted(100 * s[1] / max(s[0], 1)
                   for s in map(shares, files[2:]))
    if later:
        print(f"untaken share from the third file on: median "
              f"{later[len(later) // 2]:.2f} %, {later[0]:.2f}-"
              f"{later[-1]:.2f} % ({len(later)} files)")
    lines = sorted(((v, fr) for fr, v in folded_lines(files[-1])
                    if UNTAKEN in fr), key=lambda x: -x[0])
    print("largest untaken lines of the last file:")
    for v, fr in lines[:8]:
        print(f"  {v / 1e6:6.2f} s {';'.join(fr)[:240]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--smoke", action="store_true",
                    help="the suite's check that it runs: 3 files")
    args = ap.parse_args()
    if args.smoke:
        args.minutes = 0.4
    require_built()
    root = tempfile.mkdtemp(prefix="wc-adopted-")
    os.chmod(root, 0o755)
    daemons = Daemons(root)
    try:
        daemons.start()
        with Env("adopted") as env:
            cd = env.collectd(interval=2, plugin_conf="FlushInterval 10\n"
                              "TopStacks 100000\n")
            cd.start()
            daemons.traffic()
            time.sleep(args.minutes * 60 + 12)
            cd.stop()
            files = folded_files(cd.spool)
            if len(files) < 3:
                sys.exit(f"only {len(files)} folded files")
            report(files)
            if args.smoke:
                by = shares(files[-1])[3]
                ok = by.get("sleep", 0) > 0
                print(f"{'PASS' if ok else 'FAIL'}: adopted.py smoke: "
                      f"{len(files)} files, the sleep started before "
                      f"collectd under {UNTAKEN}")
    finally:
        daemons.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
