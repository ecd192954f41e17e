#!/usr/bin/env python3
"""The `wallclock` command: record (one process, without collectd), render
and merge (files, gzip, spool directories, time ranges, a group), and the
error paths (bad options, missing inputs, malformed lines), each with a
clear message and a non-zero exit.
"""
import gzip
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import wctest
from wctest import BUILD, Env, case, done, require_built, task_schedstat

CLI = os.path.join(BUILD, "wallclock")
SVG_NS = "{http://www.w3.org/2000/svg}"


def run(*args, prefix=(), **kw):
    kw.setdefault("timeout", 120)
    return subprocess.run(list(prefix) + [CLI] + [str(a) for a in args],
                          capture_output=True, text=True, **kw)


def folded(path):
    out = {}
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for line in f:
            stack, _, v = line.rstrip("\n").rpartition(" ")
            out[stack] = out.get(stack, 0) + int(v)
    return out


def svg_names(path):
    root = ET.parse(path).getroot()
    return [g.get("data-name") for g in root.iter(SVG_NS + "g")
            if g.get("class") == "frame"]


require_built()
with Env("cli") as env:
    # --- help and bad usage ---
    r = run("--help")
    case("--help prints the commands and exits 0",
         r.returncode == 0 and "record" in r.stdout and "render" in r.stdout
         and "merge" in r.stdout, r.stdout[:200])
    for sub in ("record", "render", "merge"):
        r = run(sub, "--help")
        case(f"{sub} --help documents its options", r.returncode == 0 and
             "usage: wallclock" in r.stdout and "-o, --output" in r.stdout,
             r.stdout[:200])
    for args, needle in ((["frobnicate"], 'unknown command "frobnicate"'),
                         (["record", "-d", "0"], '--duration "0"'),
                         (["record", "-F", "5000"], '--frequency "5000"'),
                         (["record", "-p", "abc"], '--pid "abc"'),
                         (["record", "--bogus"], "unrecognized option"),
                         (["record", "--unwind", "dwarf"],
                          'UserStackUnwinding "dwarf"'),
                         (["render"], "no input given")):
        r = run(*args)
        case(f"{' '.join(args)}: exit 2 with a message",
             r.returncode == 2 and needle in r.stderr, r.stderr[:300])
    r = run("record", "-p", "4194000", "-d", "1", "-o",
            os.path.join(env.root, "none"))
    case("record -p of a process that does not exist: exit 2",
         r.returncode == 2 and "no such process" in r.stderr, r.stderr)

    r = run("record", "-d", "1", "-o", os.path.join(env.root, "nopriv"),
            prefix=["setpriv", "--reuid=nobody", "--regid=nogroup",
                    "--clear-groups", "--inh-caps=-all"])
    case("record without privileges: exit 1, saying to use sudo "
         "(not collectd's advice)",
         r.returncode == 1 and "missing capabilities" in r.stderr and
         "sudo wallclock" in r.stderr and "collectd" not in r.stderr,
         r.stderr)

    # --- record one process (alive until the recording ends, however
    # long a loaded host takes to load the programs) ---
    w = env.workload("wcw_cli", "--spin", "1", "--sleep", "1",
                     "--sleep-ms", "20", "--seconds", "120")
    out = os.path.join(env.root, "rec")
    # The recording starts between the command's start and its saying so
    # (loading the programs may take seconds on a loaded host) and ends
    # before it exits: the kernel's count over the first span bounds what
    # it may show, over the second what it must show.
    before = task_schedstat(w.pid)[0]
    rec = subprocess.Popen([CLI, "record", "-d", "3", "-p", str(w.pid),
                            "-o", out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    wctest._cleanups.append(rec.kill)
    said = rec.stderr.readline()
    on0 = task_schedstat(w.pid)[0]
    stdout, stderr = rec.communicate(timeout=60)
    on1 = task_schedstat(w.pid)[0]
    kernel_on, kernel_most = (on1 - on0) / 1000, (on1 - before) / 1000
    r = subprocess.CompletedProcess(rec.args, rec.returncode, stdout,
                                    said + stderr)
    case("record exits 0 and names its files", r.returncode == 0 and
         "latest.folded" in r.stdout and "latest.svg" in r.stdout,
         r.stdout + r.stderr)
    w.kill()
    w.wait()
    lines = folded(os.path.join(out, "latest.folded")) if r.returncode == 0 \
        else {}
    groups = {k.split(";")[0] for k in lines}
    case("record -p: only that process's group", groups == {"wcw_cli"},
         str(groups))
    oncpu = sum(v for k, v in lines.items() if ";[on-cpu];" in k)
    burn = sum(v for k, v in lines.items()
               if ";[on-cpu];" in k and "spinner;burn_cpu" in k)
    sleep = sum(v for k, v in lines.items()
                if "[off-cpu sleep]" in k and "sleep_a_while" in k)
    print(f"# record: {len(lines)} stacks, on-CPU {oncpu} us ({burn} in "
          f"spinner;burn_cpu; the kernel counted {kernel_on:.0f} us while "
          f"the command recorded, {kernel_most:.0f} while it ran), "
          f"sleep_a_while {sleep} us over 3 s")
    # the recording's 3 s are most of what follows its saying so (a busy
    # host gives the spinner less than 3 s of CPU)
    case("record: the spinner's time on a CPU is in spinner;burn_cpu",
         0.6 * kernel_on < oncpu <= 1.02 * kernel_most and
         burn >= 0.9 * oncpu, f"{burn} of {oncpu} us, kernel "
         f"{kernel_on:.0f} to {kernel_most:.0f} us")
    case("record: the sleeper's ~3 s of naps are under sleep_a_while",
         2.5e6 < sleep < 3.3e6, f"{sleep} us")
    case("record: the SVG is well-formed and draws burn_cpu",
         "burn_cpu" in svg_names(os.path.join(out, "latest.svg")))

    # --- a statically linked program: its stacks begin at libc's entry
    # point, not at what the frame pointer its libc left behind points to
    spin_c = os.path.join(env.root, "static_spin.c")
    with open(spin_c, "w") as f:
        f.write("#include <time.h>\n"
                "static volatile unsigned long x;\n"
                "__attribute__((noinline)) static void static_leaf(void)\n"
                "{ for (unsigned long i = 0; i < 50000000UL; i++) x += i; }\n"
                "int main(void) { time_t t = time(NULL);\n"
                "  while (time(NULL) - t < 120) static_leaf(); return 0; }\n")
    spin = os.path.join(env.root, "wcw_static")
    cc = subprocess.run(["gcc", "-O2", "-g", "-fno-omit-frame-pointer",
                         "-static", spin_c, "-o", spin],
                        capture_output=True, text=True)
    case("a static test program builds", cc.returncode == 0, cc.stderr)
    # A helper 45 ms late to come up spends most of a drain's budget on
    # the maps: the binary's file is left for later, and must be read by
    # the recording's end (it was not, now and then, on a busy host).
    late = os.path.join(env.root, "late-symd")
    with open(late, "w") as f:
        f.write(f'#!/bin/sh\nsleep 0.045\nexec {os.environ["WALLCLOCK_SYMD"]}'
                ' "$@"\n')
    os.chmod(late, 0o755)
    variants = (("auto", "auto", None), ("framepointer", "framepointer", None),
                ("auto, a helper late to start", "auto", late)) \
        if cc.returncode == 0 else ()
    for i, (label, mode, helper) in enumerate(variants):
        p = subprocess.Popen([spin])
        wctest._cleanups.append(p.kill)
        out_s = os.path.join(env.root, f"rec_static_{i}")
        # alive until the recording's end, when its maps are read: a
        # loaded host can take seconds to load the programs
        rs = run("record", "-d", "2", "-p", p.pid, "-u", mode, "-o", out_s,
                 timeout=60, env=dict(os.environ, WALLCLOCK_SYMD=helper or
                                      os.environ["WALLCLOCK_SYMD"]))
        p.kill()
        p.wait()
        got = folded(os.path.join(out_s, "latest.folded")) \
            if rs.returncode == 0 else {}
        on = {k: v for k, v in got.items() if ";[on-cpu];" in k}
        roots = {k.split(";")[2] for k in on if "static_leaf" in k}
        case(f"static binary ({label}): every on-CPU stack begins at the "
             "entry point, nothing made up beyond it",
             roots == {"__libc_start_call_main"} and
             sum(v for k, v in on.items() if "main;static_leaf" in k) >=
             0.9 * sum(on.values()), f"{on}; it said: {rs.stderr}")

    # --- render and merge ---
    src = os.path.join(out, "latest.folded")
    gz = os.path.join(env.root, "copy.folded.gz")
    with open(src, "rb") as f, gzip.open(gz, "wb") as g:
        g.write(f.read())
    merged = os.path.join(env.root, "merged.folded")
    r = run("merge", "-o", merged, src, gz)
    m = folded(merged) if r.returncode == 0 else {}
    case("merge: a file and its gzip copy sum to exactly twice the values",
         r.returncode == 0 and m == {k: 2 * v for k, v in lines.items()},
         r.stderr)
    svg = os.path.join(env.root, "one.svg")
    r = run("render", "-o", svg, "-t", "two copies", src, gz)
    case("render: one SVG from both, with the title",
         r.returncode == 0 and "burn_cpu" in svg_names(svg) and
         "two copies" in open(svg).read(), r.stderr)
    # a spool directory, a time range and a group filter
    spool = os.path.join(env.root, "spool")
    os.mkdir(spool, 0o750)
    names = ["wallclock-20260101T000000Z.folded",
             "wallclock-20260101T000100Z.folded",
             "wallclock-20260101T000200Z.folded.gz"]
    bodies = ["a;[on-cpu];f 10\nb;[on-cpu];g 1\n", "a;[on-cpu];f 20\n",
              "a;[on-cpu];f 40\n"]
    for n, b in zip(names, bodies):
        opener = gzip.open if n.endswith(".gz") else open
        with opener(os.path.join(spool, n), "wt") as f:
            f.write(b)
    with open(os.path.join(spool, "notes.txt"), "w") as f:
        f.write("not ours 99\n")
    r = run("merge", spool)
    case("merge a spool directory: every folded file, plain and gzip, "
         "nothing else", r.returncode == 0 and
         r.stdout == "a;[on-cpu];f 70\nb;[on-cpu];g 1\n", r.stdout)
    r = run("merge", "--from", "20260101T000100Z", "--to",
            "20260101T000100Z", spool)
    case("merge --from/--to: the files in the range",
         r.stdout == "a;[on-cpu];f 20\n", r.stdout + r.stderr)
    r = run("merge", "-g", "b", spool)
    case("merge -g: one group", r.stdout == "b;[on-cpu];g 1\n", r.stdout)
    r = run("merge", "--from", "20990101T000000Z", spool)
    case("an empty time range says so", "no folded files in the time "
         "range" in r.stderr, r.stderr)
    # hostile input
    bad = os.path.join(env.root, "bad.folded")
    with open(bad, "w") as f:
        f.write("a;[on-cpu];f 5\nno value here\nx;y -3\n\n"
                "c;<&\"frame> 7\n")
    r = run("merge", bad)
    case("malformed lines are skipped and counted",
         r.returncode == 0 and "2 malformed lines" in r.stderr and
         r.stdout == "c;<&\"frame> 7\na;[on-cpu];f 5\n",
         r.stdout + r.stderr)
    r = run("render", "-o", os.path.join(env.root, "bad.svg"), bad)
    case("render escapes what XML would choke on",
         r.returncode == 0 and "<&\"frame>" in svg_names(
             os.path.join(env.root, "bad.svg")), r.stderr)
    r = run("render", os.path.join(env.root, "missing.folded"))
    case("a missing input: exit 1 naming it", r.returncode == 1 and
         "missing.folded" in r.stderr, r.stderr)
    r = run("merge", "-o", "/nonexistent/dir/out.folded", src)
    case("an unwritable output: exit 1 naming it", r.returncode == 1 and
         "/nonexistent/dir/out.folded" in r.stderr, r.stderr)
    cut = os.path.join(env.root, "cut.folded.gz")
    with open(cut, "wb") as f:
        f.write(gzip.compress(("".join(
            "g;[on-cpu];f%d %d\n" % (i, i) for i in range(5000))).encode())
            [:4000])
    r = run("merge", cut)
    case("a gzip file cut short: exit 1 naming it, not a silent part",
         r.returncode == 1 and "cut.folded.gz: corrupt or truncated gzip "
         "data" in r.stderr, r.stderr)
    fifo_dir = os.path.join(env.root, "fifo_spool")
    os.makedirs(fifo_dir)
    shutil.copy(src, os.path.join(fifo_dir,
                                  "wallclock-20260101T000000Z.folded"))
    os.mkfifo(os.path.join(fifo_dir, "wallclock-20260101T000100Z.folded"))
    r = run("merge", fifo_dir)
    case("a FIFO under a spool file's name is skipped, saying so, not "
         "waited on", r.returncode == 0 and "not a regular file" in
         r.stderr and r.stdout.strip() != "", r.stderr)
    r = run("merge", "--max-lines", "1", spool)
    case("--max-lines: the rest of a group goes to [other], totals kept",
         r.returncode == 0 and "a;[on-cpu];f 70" in r.stdout and
         "b;[other] 1" in r.stdout, r.stdout + r.stderr)
    shutil.rmtree(out, ignore_errors=True)
done()
