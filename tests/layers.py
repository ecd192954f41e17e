#!/usr/bin/env python3
"""layers.py - the folders of plugin/ call only downwards.

Every source file lives in one folder of plugin/, every include of our own
headers names its folder ("core/wc_config.h"), and a folder includes only
itself and the folders below it.  Only collectd/ includes collectd's
headers.  One PASS/FAIL line per rule, each failure naming file and line.
"""
import os
import re
import sys

# Lower numbers are lower layers; folders of one level do not see each
# other.
LEVEL = {
    "util": 0,
    "format": 1,
    "core": 2, "sym": 2, "render": 2, "spool": 2,
    "stacks": 3, "unwind": 3,
    "engine": 4,
    "cli": 5, "collectd": 5,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                   "plugin")


def sources():
    for folder in sorted(os.listdir(SRC)):
        path = os.path.join(SRC, folder)
        if not os.path.isdir(path):
            yield None, folder
            continue
        for name in sorted(os.listdir(path)):
            if name.endswith((".c", ".h")):
                yield folder, name


def includes(folder, name):
    with open(os.path.join(SRC, folder, name), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1)


def check_include(folder, target):
    """Why folder may not include target, or None if it may."""
    head = target.split("/", 1)[0] if "/" in target else None
    if head == "bpf":
        return None
    if head == "collectd" and target.startswith("collectd/core/"):
        return None if folder == "collectd" else "collectd's header"
    if head not in LEVEL:
        return "not folder-qualified"
    if head != folder and LEVEL[head] >= LEVEL[folder]:
        return "calls up or sideways (%s is level %d, %s level %d)" % (
            head, LEVEL[head], folder, LEVEL[folder])
    return None


def main():
    placed, layered = [], []
    count = 0
    for folder, name in sources():
        if folder is None:
            placed.append("plugin/%s: not in a folder" % name)
            continue
        if folder not in LEVEL:
            placed.append("plugin/%s: a folder without a level" % folder)
            continue
        count += 1
        for n, target in includes(folder, name):
            why = check_include(folder, target)
            if why:
                layered.append("plugin/%s/%s:%d: %s: %s" % (
                    folder, name, n, target, why))
    for what, bad in (("every source file in a folder with a level", placed),
                      ("folders include only themselves and lower ones",
                       layered)):
        if bad:
            print("FAIL: layers: %s:\n  %s" % (what, "\n  ".join(bad)))
        else:
            print("PASS: layers: %s (%d files)" % (what, count))
    return 1 if placed or layered else 0


if __name__ == "__main__":
    sys.exit(main())
