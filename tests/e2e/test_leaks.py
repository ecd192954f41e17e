#!/usr/bin/env python3
"""A whole life of the plugin in a real collectd, under AddressSanitizer
and LeakSanitizer: the plugin built with them (the suite's ASan build),
collectd started with their runtime preloaded.  Init, reads, drains,
flushes that symbolize and write stacks, the exit drain, then SIGTERM and
shutdown.  No error may be reported, and no leak with a frame of the
plugin (collectd's own are not ours to judge).
"""
import glob
import os
import re
import subprocess
import time

from wctest import BUILD, Env, case, done, require_built, skip

SAN_SO = os.path.join(BUILD + "-san", ".libs", "wallclock.so")


def runtime():
    """The ASan runtime the plugin was linked against."""
    out = subprocess.run(["ldd", SAN_SO], capture_output=True,
                         text=True).stdout
    m = re.search(r"(/\S*libasan\.so\S*)", out)
    return m.group(1) if m else None


def reports(log_base):
    text = ""
    for path in glob.glob(log_base + ".*"):
        with open(path, errors="replace") as f:
            text += f.read()
    return text


def ours(block):
    return "wallclock.so" in block or "/plugin/" in block


require_built()
asan = runtime() if os.path.exists(SAN_SO) else None
if not asan:
    skip("leaks", f"no ASan build of the plugin at {SAN_SO} (tests/check.sh "
         "makes it with the unit tests)")
    done()
with Env("leaks") as env:
    log_base = os.path.join(env.root, "asan")
    opts = (f"detect_leaks=1:log_path={log_base}:exitcode=0:"
            "allocator_may_return_null=1")
    w = env.workload("wcw_leaks", "--spin", "1", "--sleep", "1",
                     "--sleep-ms", "20", "--seconds", "60")
    cd = env.collectd(interval=1, plugin_conf="FlushInterval 2",
                      plugin_so=SAN_SO,
                      prefix=["env", f"LD_PRELOAD={asan}",
                              f"ASAN_OPTIONS={opts}"])
    cd.start()
    with open(f"/proc/{cd.pid}/maps") as f:
        maps = f.read()
    case("collectd runs the ASan build of the plugin, with the runtime",
         SAN_SO.replace("/.libs", "") in maps.replace("/.libs", "") and
         "libasan" in maps, "")
    files = lambda: glob.glob(os.path.join(cd.spool, "wallclock-*.folded"))
    t = time.time()
    while len(files()) < 3 and time.time() - t < 60:
        time.sleep(0.5)
    case("it profiles and writes stack files under ASan", len(files()) >= 3,
         str(files()))
    case("collectd exits with status 0", cd.stop() == 0)
    w.kill()
    text = reports(log_base)
    blocks = re.split(r"\n(?=(?:Direct|Indirect) leak of )", text)
    leaks = [b for b in blocks if re.match(r"(Direct|Indirect) leak of ", b)]
    mine = [b for b in leaks if ours(b)]
    print(f"# leaks: {len(leaks)} leak reports in all, {len(mine)} with a "
          "frame of the plugin")
    errors = [ln for ln in text.splitlines()
              if "ERROR: AddressSanitizer" in ln or "runtime error:" in ln]
    case("no memory error", not errors, "\n".join(errors[:20]))
    case("no leak of the plugin's", not mine, "\n\n".join(mine)[:4000])
done()
