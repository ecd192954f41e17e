#!/usr/bin/env python3
"""A full spool disk, then a read-only one, under a running collectd: the
plugin logs the failure once (not once per file), counts the lost files,
keeps dispatching its metrics every interval, and writes again as soon as
there is room.

The spool is a 512 KiB tmpfs, flushed every second and kept to its two
newest files; a file that is not ours fills it, then goes; a workload
keeps the files coming.
"""
import os
import subprocess
import time

from wctest import Env, case, done, require_built, skip, wait_until

GROUP = "wcw_full"


def spool_lines(cd):
    return [line for line in cd.log().splitlines()
            if "wallclock" in line and "spool" in line.lower()
            and ("[error]" in line or "[warning]" in line)]


require_built()
with Env("spoolfull") as env:
    spool = os.path.join(env.root, "spool")
    os.mkdir(spool, 0o750)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k,mode=0750",
                       "wc-spool-full", spool]).returncode != 0:
        skip("full spool", "cannot mount a tmpfs (needs root)")
        done()
    try:
        junk = os.path.join(spool, "not-ours")
        with open(junk, "wb") as f:
            f.write(b"x" * 508 * 1024)
        cd = env.collectd(interval=1, spool=False, plugin_conf=(
            f'SpoolDir "{spool}"\nFlushInterval 1\nTopStacks 20\n'
            "SpoolKeepFiles 2\nSpoolKeepMiB 0\nSpoolKeepHours 0\n"))
        cd.start()
        w = env.workload(GROUP, "--spin", "1", "--sleep", "1",
                         "--sleep-ms", "5", "--disk", "1", "--dir",
                         env.root, "--seconds", "30")
        full = wait_until(lambda: cd.csv("", "derive",
                                         "spool_write_errors")
                          and cd.csv("", "derive",
                                     "spool_write_errors")[-1][1] >= 3, 20)
        case("the spool fills up and files are lost (counted)", full,
             str(cd.csv("", "derive", "spool_write_errors")[-3:]))
        t_full = time.time()
        time.sleep(3)
        rows = [t for t, _ in cd.csv(GROUP, "wallclock_us", "oncpu")
                if t > t_full - 4]
        case("metrics keep coming every interval while the disk is full",
             len(rows) >= 5, f"{len(rows)} rows in 6 s")
        logged = spool_lines(cd)
        case("the failure is logged once, not per file",
             1 <= len(logged) <= 2, "\n".join(logged[-5:]))

        # room again: writing resumes, and says so
        files0 = cd.csv("", "derive", "spool_files")[-1][1]
        os.unlink(junk)
        resumed = wait_until(lambda: cd.csv("", "derive", "spool_files")
                             [-1][1] > files0, 10)
        case("writing resumes once there is room", resumed,
             str(cd.csv("", "derive", "spool_files")[-3:]))
        said = wait_until(lambda: cd.log_has("writing again"), 10)
        case("... and the log says so, with the files lost", said,
             "\n".join(cd.log().splitlines()[-5:]))

        # read-only: lost again, logged once more, metrics go on
        errs0 = cd.csv("", "derive", "spool_write_errors")[-1][1]
        before = len(spool_lines(cd))
        subprocess.run(["mount", "-o", "remount,ro", spool], check=True)
        lost = wait_until(lambda: cd.csv("", "derive",
                                         "spool_write_errors")
                          [-1][1] >= errs0 + 3, 10)
        case("a read-only spool costs files, counted", lost,
             str(cd.csv("", "derive", "spool_write_errors")[-3:]))
        after = spool_lines(cd)[before:]
        case("the read-only spool is logged once",
             1 <= len(after) <= 2,
             "\n".join(after[-5:]) + "\nlog tail:\n" +
             "\n".join(cd.log().splitlines()[-8:]))
        rows = cd.csv(GROUP, "wallclock_us", "oncpu")
        case("metrics still come while the spool is read-only",
             rows and rows[-1][0] > time.time() - 2.5, str(rows[-2:]))
        w.kill()
        rc = cd.stop()
        case("collectd exits cleanly", rc == 0, f"exit status {rc}")
    finally:
        subprocess.run(["umount", "-l", spool])
done()
