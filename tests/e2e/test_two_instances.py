#!/usr/bin/env python3
"""Two collectd instances with the plugin at once, sharing a SpoolDir.

Both profile (each its own programs, values in its own csv); the second
finds the spool locked, says so once with what to do, counts each flush
it could not write, writes nothing, and takes no stacks (its kernel side
pays for none); when the first stops, the second takes the spool over at
its next flush, says so, takes stacks again and writes the window after.
Each leaves no program, link or map behind.
"""
import glob
import os
import time

from wctest import (Collectd, Env, bpf_fd_ids, case, done, leaked_bpf,
                    require_built, wait_until)

require_built()
with Env("two") as env:
    w = env.workload("wcw_two", "--sleep", "1", "--sleep-ms", "20",
                     "--seconds", "60")
    roots = [os.path.join(env.root, n) for n in ("first", "second")]
    for r in roots:
        os.mkdir(r, 0o755)
    spool = os.path.join(roots[0], "spool")
    conf = f'SpoolDir "{spool}"\n  FlushInterval 2'
    a = Collectd(roots[0], 1, conf, spool=False).start()
    wait_until(lambda: glob.glob(os.path.join(spool, "wallclock-*.folded")),
               10)
    b = Collectd(roots[1], 1, conf, spool=False).start()
    ok = all(c.wait_rows("wcw_two", "wallclock_us", "sleep", 3, 10)
             for c in (a, b))
    case("both instances dispatch the workload's values", ok)
    pa, pb = bpf_fd_ids(a.pid)[0], bpf_fd_ids(b.pid)[0]
    case("each loaded programs of its own", pa and pb and not pa & pb,
         f"{pa} {pb}")
    wait_until(lambda: len(b.csv("", "derive", "spool_write_errors")) >= 6,
               15)
    errs = b.csv("", "derive", "spool_write_errors")
    case("the second counts the flushes it could not write",
         errs and errs[-1][1] >= 2, str(errs[-3:]))
    locked = [ln for ln in b.log().splitlines() if "in use by another" in ln]
    case("the second says once that the spool is in use, and what follows",
         len(locked) == 1 and "another collectd" in locked[0] and
         "tried again at every flush" in locked[0], "\n".join(locked))
    case("the second does not claim to write stacks",
         not b.log_has(f"stacks to {spool}"), b.log())

    def grew(c, since):
        rows = [v for t, v in c.csv("", "derive", "offcpu_stacks")
                if t >= since]
        return rows[-1] - rows[0] if len(rows) >= 2 else None
    locked_from = b.csv("", "derive", "spool_write_errors")[0][0]
    case("while locked out the second takes no stacks; the first does",
         grew(b, locked_from) == 0 and (grew(a, locked_from) or 0) > 0,
         f"second {grew(b, locked_from)}, first {grew(a, locked_from)}")
    mine = [f for f in os.listdir(spool) if f.startswith("wallclock-")]
    case("the first keeps writing its files", len(mine) >= 2, str(mine))
    case("the first stops with status 0", a.stop() == 0)
    taken = wait_until(lambda: b.log_has("usable again"), 10)
    taken_at = time.time()
    before = set(os.listdir(spool))
    wait_until(lambda: set(os.listdir(spool)) - before, 8)
    case("the second takes the spool over at its next flush and writes "
         "the window after it",
         taken and set(os.listdir(spool)) - before,
         f"{taken} {sorted(set(os.listdir(spool)) - before)}")
    wait_until(lambda: (grew(b, taken_at) or 0) > 0, 5)
    case("and takes stacks again", (grew(b, taken_at) or 0) > 0,
         str(grew(b, taken_at)))
    case("the second stops with status 0", b.stop() == 0)
    bad = [ln for ln in b.wallclock_errors(("error", "warning"))
           if "in use by another" not in ln]
    case("no other errors or warnings", not bad, "\n".join(bad))
    left = leaked_bpf()
    case("no program, link or map left behind", not any(left), str(left))
    w.kill()
done()
