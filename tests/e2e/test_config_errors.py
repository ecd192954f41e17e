#!/usr/bin/env python3
"""Bad options are refused, and the message says which option and value.

For each bad <Plugin wallclock> block, `collectd -T` (parse, init, one
read, shut down) must exit non-zero and log a "wallclock plugin:" line that
names the option and the offending value; one of them is also started as a
daemon (collectd -f), which must refuse to start.  A good configuration
with every option at a boundary value passes `collectd -T` with status 0
and no wallclock errors.
"""
import os
import subprocess

from wctest import Collectd, Env, case, done, require_built

require_built()


def spool_cases(root):
    """SpoolDir values that exist on disk in some unsafe form."""
    regular = os.path.join(root, "spool-file")
    with open(regular, "w") as f:
        f.write("not a directory\n")
    real = os.path.join(root, "spool-real")
    os.mkdir(real, 0o755)
    link = os.path.join(root, "spool-link")
    os.symlink(real, link)
    open_dir = os.path.join(root, "spool-0777")
    os.mkdir(open_dir)
    os.chmod(open_dir, 0o777)  # past the umask
    group_w = os.path.join(root, "spool-0775")
    os.mkdir(group_w)
    os.chmod(group_w, 0o775)
    foreign = os.path.join(root, "spool-nobody")
    os.mkdir(foreign, 0o755)
    os.chown(foreign, 65534, 65534)
    return [
        ("SpoolDir owned by another user", f'SpoolDir "{foreign}"',
         ["SpoolDir", f'"{foreign}"', "owned by uid 65534"]),
        ("SpoolDir is a regular file", f'SpoolDir "{regular}"',
         ["SpoolDir", f'"{regular}"', "not a directory"]),
        ("SpoolDir is a symlink", f'SpoolDir "{link}"',
         ["SpoolDir", f'"{link}"', "symbolic link"]),
        ("SpoolDir is a symlink, named with a trailing slash",
         f'SpoolDir "{link}/"', ["SpoolDir", f'"{link}/"', "symbolic link"]),
        ("SpoolDir mode 0777", f'SpoolDir "{open_dir}"',
         ["SpoolDir", f'"{open_dir}"', "0777"]),
        ("SpoolDir mode 0775", f'SpoolDir "{group_w}"',
         ["SpoolDir", f'"{group_w}"', "0775"]),
        ("SpoolDir in a missing directory",
         f'SpoolDir "{root}/no/such/dir"',
         ["SpoolDir", f'"{root}/no/such/dir"', "parent"]),
    ]


# (what, option lines, strings the message must contain)
CASES = [
    ("unknown key", "SampleRate 49", ["SampleRate", "unknown option"]),
    ("SampleFrequency 0", "SampleFrequency 0", ["SampleFrequency 0:"]),
    ("SampleFrequency -5", "SampleFrequency -5", ["SampleFrequency -5:"]),
    ("SampleFrequency 100000", "SampleFrequency 100000",
     ["SampleFrequency 100000:"]),
    ("SampleFrequency 1001", "SampleFrequency 1001",
     ["SampleFrequency 1001:"]),
    ("SampleFrequency 49.5", "SampleFrequency 49.5",
     ["SampleFrequency 49.5:"]),
    ('SampleFrequency "49"', 'SampleFrequency "49"',
     ['SampleFrequency "49":']),
    ("SampleFrequency with two values", "SampleFrequency 49 50",
     ["SampleFrequency", "got 2"]),
    ('KernelThreads "yes"', 'KernelThreads "yes"',
     ['KernelThreads "yes":', "true or false"]),
    ("KernelThreads 1", "KernelThreads 1", ["KernelThreads 1:"]),
    ("MaxGroups 0", "MaxGroups 0", ["MaxGroups 0:"]),
    ("MaxGroups 1001", "MaxGroups 1001", ["MaxGroups 1001:"]),
    ("MaxThreads 10", "MaxThreads 10", ["MaxThreads 10:"]),
    ("MaxThreads 4194305", "MaxThreads 4194305", ["MaxThreads 4194305:"]),
    ("ExitBufferKiB 1", "ExitBufferKiB 1", ["ExitBufferKiB 1:"]),
    ('Process ""', 'Process ""', ['Process "":', "empty"]),
    ("Process 42", "Process 42", ["Process 42:", "quoted string"]),
    ("Process with 64 bytes", f'Process "{"p" * 64}"',
     ["Process", '"' + "p" * 40, "longer than 63"]),
    ('Process "other"', 'Process "other"', ['Process "other":', "reserved"]),
    ('ProcessMatch "other"', 'ProcessMatch "other" "x"',
     ['ProcessMatch "other":', "reserved"]),
    ("duplicate Process", 'Process "dup"\nProcess "dup"',
     ['Process "dup":', "already defined"]),
    ("duplicate after sanitising", 'Process "wc/x"\nProcess "wc_x"',
     ['Process "wc_x":', '"wc_x" is already defined']),
    ("duplicate across Process and ProcessMatch",
     'Process "dup"\nProcessMatch "dup" "x"',
     ['ProcessMatch "dup":', "already defined"]),
    ("ProcessMatch bad regex", 'ProcessMatch "x" "("',
     ['ProcessMatch "x" "("', "bad regex"]),
    ("ProcessMatch with one value", 'ProcessMatch "x"',
     ["ProcessMatch", "got 1"]),
    ('Unmatched "maybe"', 'Unmatched "maybe"',
     ['Unmatched "maybe":', '"other" or "drop"']),
    ('SpoolDir "relative"', 'SpoolDir "relative"',
     ['SpoolDir "relative":', "absolute"]),
    ("nested block", '<Process "x">\n    SampleFrequency 5\n  </Process>',
     ["Process", "block"]),
]

with Env("config") as env:
    cases = CASES + spool_cases(env.root)
    for i, (what, lines, want) in enumerate(cases):
        root = os.path.join(env.root, f"c{i}")
        os.mkdir(root, 0o755)
        cd = Collectd(root, 1, "  " + lines, writers=(), spool=False)
        rc, out, log = cd.test_run()
        text = out + log
        ours = [ln for ln in text.splitlines() if "wallclock plugin:" in ln]
        named = [ln for ln in ours if all(w in ln for w in want)]
        case(f"{what}: collectd -T refuses it", rc != 0,
             f"exit status {rc}")
        case(f"{what}: message names option and value", bool(named),
             f"want a 'wallclock plugin:' line with {want}; got "
             f"{ours or text[-400:]!r}")

    # The daemon refuses to start at all (not just the test mode).
    root = os.path.join(env.root, "daemon")
    os.mkdir(root, 0o755)
    cd = Collectd(root, 1, "  MaxGroups 0", writers=(), spool=False)
    try:
        r = subprocess.run(["collectd", "-f", "-C", cd.conf_path],
                           capture_output=True, text=True, timeout=20)
        rc, text = r.returncode, r.stdout + r.stderr + cd.log()
    except subprocess.TimeoutExpired:
        rc, text = None, "still running after 20 s"
    case("collectd -f with MaxGroups 0 does not start", rc not in (0, None),
         f"exit status {rc}")
    case("collectd -f logs why", "wallclock plugin: MaxGroups 0:" in text,
         text[-400:])

    # Boundary values are accepted, and the plugin loads and reads.
    root = os.path.join(env.root, "good")
    os.mkdir(root, 0o755)
    good = "\n".join([
        "  SampleFrequency 1000", "  KernelThreads true", "  MaxGroups 1000",
        "  MaxThreads 1024", "  ExitBufferKiB 64",
        '  Process "wcw_good"', '  ProcessMatch "by_re" "^/usr/sbin/.*"',
        '  Unmatched "drop"', f'  SpoolDir "{root}/spool/"'])
    cd = Collectd(root, 1, good, writers=(), spool=False)
    rc, out, log = cd.test_run()
    case("good config: collectd -T exits 0", rc == 0,
         f"exit status {rc}: {(out + log)[-600:]}")
    case("good config: the plugin started",
         "wallclock plugin: profiling at 1000 Hz" in log, log[-600:])
    case("good config: no wallclock errors or warnings",
         not cd.wallclock_errors(("error", "warning")),
         "\n".join(cd.wallclock_errors(("error", "warning"))))
done()
