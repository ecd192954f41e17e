#!/usr/bin/env python3
"""A user who keeps putting one library where another was cannot make the
unwinder use one file's rows on the other's code.

tests/uw_remap.c, run as nobody from nobody's directory, loads two builds
of tests/uw_remap_lib.c at once for 2 s (so that both tables are in),
then in turn at the same address (dlopen, spin 15 ms, dlclose: about 60
swaps a second), moving to the other CPU between two,
so that the last library's freed mapping records stay unused and still
read as its range and file.  Their spinners' frames differ (a 4 KiB
array against six saved registers), so a row of one applied to the
other finds a wrong caller.  A real collectd with UserStackUnwinding
"auto" and the program's own functions built without frame pointers:

- the libraries did land at one address (else nothing was tried);
- every complete stack through the libraries is main, uw_remap_loop
  and the library (a row of the other library finds a caller that only
  looks right: a return address calls left on the stack);
- at least 90 % of the time in the libraries has a complete stack (a
  walk learns one new mapping; each swap is one, learnt again in the
  place of the one it replaced);
- collectd keeps dispatching every interval and exits cleanly.
"""
import os
import subprocess
import time

from wctest import (ENTRY_POINTS as ENTRY, Env, case, done, folded_files,
                    folded_lines, folded_time, require_built, wait_until)

NOBODY = 65534
FLUSH = 2
SECONDS = 16
HERE = os.path.dirname(os.path.abspath(__file__))
ONCPU = "[on-cpu]"


def as_nobody(cmd):
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
            "--clear-groups", "--"] + cmd


def build(d):
    """The program and its two libraries, nobody's, in d."""
    lib = os.path.join(HERE, "..", "uw_remap_lib.c")
    cc = ["gcc", "-O2", "-g", "-fomit-frame-pointer"]
    for name, variant in (("libuwa.so", 1), ("libuwb.so", 2)):
        subprocess.run(cc + ["-shared", "-fPIC", f"-DVARIANT={variant}",
                             "-o", os.path.join(d, name), lib], check=True)
    prog = os.path.join(d, "uw_remap")
    subprocess.run(cc + ["-o", prog, os.path.join(HERE, "..", "uw_remap.c"),
                         "-ldl"], check=True)
    for name in os.listdir(d) + [""]:
        os.chown(os.path.join(d, name), NOBODY, NOBODY)
    return prog


def in_lib(frame):
    return ("uw_lib_spin" in frame or "now_ms" in frame or
            "libuwa.so" in frame or "libuwb.so" in frame)


require_built()
with Env("remap") as env:
    d = os.path.join(env.root, "nobody")
    os.makedirs(d)
    os.chmod(d, 0o755)
    prog = build(d)
    cd = env.collectd(interval=1, plugin_conf=(
        f'UserStackUnwinding "auto"\nFlushInterval {FLUSH}\n'
        "TopStacks 100000\n"))
    cd.start()
    began = time.time()
    p = subprocess.Popen(as_nobody([prog, os.path.join(d, "libuwa.so"),
                                    os.path.join(d, "libuwb.so"),
                                    str(SECONDS)]),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    out, err = p.communicate(timeout=SECONDS + 60)
    end = time.time()
    same = [ln for ln in out.splitlines() if ln.startswith("same ")]
    words = same[0].split() if same else []
    cpus = [ln for ln in out.splitlines() if ln.startswith("cpus ")]
    print(f"# uw_remap: {same[0] if same else err.strip()}, "
          f"{cpus[0] if cpus else 'no cpus line'}")
    if cpus and cpus[0] != "cpus 2":
        print("# one CPU: it did not move, so freed mapping records were "
              "most likely reused at once")
    case("the libraries took turns at one address (most swaps)",
         p.returncode == 0 and len(words) == 4 and int(words[3]) >= 100 and
         int(words[1]) >= 0.9 * int(words[3]), f"{out} {err}")
    wait_until(lambda: any(folded_time(f) > end + FLUSH
                           for f in folded_files(cd.spool)), 3 * FLUSH + 5)
    rows = [t for t, _ in cd.csv("", "gauge", "threads") if t >= began]
    gap = max((b - a for a, b in zip(rows, rows[1:])), default=99)
    rc = cd.stop()
    case("collectd exits cleanly", rc == 0, f"exit status {rc}")
    case("values dispatched every interval meanwhile (longest gap <= 4.5 s)",
         len(rows) >= SECONDS and gap <= 4.5, f"{len(rows)} reads, {gap}")

    # the tables are in by the end of the warm-up: from the third file
    files = [f for f in folded_files(cd.spool)[2:]
             if folded_time(f) <= end + FLUSH]
    lines = [(fr[2:], v) for f in files for fr, v in folded_lines(f)
             if fr[0] == "uw_remap" and fr[1] == ONCPU]
    total = good = guessed = 0
    wrong = []
    for fr, v in lines:
        i = next((k for k, f in enumerate(fr) if in_lib(f)), None)
        if i is None:
            continue
        total += v
        if fr[0] not in ENTRY:
            # ended early: labelled, or by frame pointers and the caller
            # search where the table was not in yet (what the search
            # finds there may be what earlier calls left on the stack)
            if i > 0 and fr[i - 1] != "uw_remap_loop" and \
                    not fr[i - 1].startswith("["):
                guessed += v
        elif fr[i - 2:i] == ["main", "uw_remap_loop"]:
            good += v
        else:
            wrong.append(f"{';'.join(fr)} {v}")
    print(f"# uw_remap {ONCPU} in the libraries: {total / 1e6:.2f} s, "
          f"{100 * good / total if total else 0:.1f} % complete through "
          f"uw_remap_loop, {len(wrong)} complete stacks with other "
          f"callers; {100 * guessed / total if total else 0:.1f} % ended "
          "early at a caller the search guessed")
    case("no complete stack through the libraries has other callers than "
         "main and uw_remap_loop",
         total > 0 and not wrong, "\n".join(wrong[:10]))
    case("at least 90 % of the time in the libraries has a complete stack",
         total > 1e6 and good >= 0.9 * total,
         f"{good} of {total} us\n" + "\n".join(
             f"{';'.join(fr)} {v}" for fr, v in
             sorted(lines, key=lambda x: -x[1])[:10]))
    for fr, v in sorted(lines, key=lambda x: -x[1])[:6]:
        print(f"# {';'.join(fr)} {v}")
done()
