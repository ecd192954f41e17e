#!/usr/bin/env python3
"""The flame graph in a real browser: a real collectd with the plugin
writes SVGs of a known workload (a spinner in burn_cpu, a sleeper in
sleep_a_while); the newest one opens in headless Chromium (Debian's
/usr/bin/chromium, driven by playwright-core from npm through
tests/browser/flame.js) and is used the way a person would: a screenshot,
a mouse click on burn_cpu (zoom), Reset Zoom, Search through the button and
its prompt dialog, Ctrl-F, ?s=REGEX in the URL, Escape.

flame.js only observes and writes what it saw to result.json; this script
checks it against the SVG's own data (data-x, data-value, data-total), so
the oracle is the geometry and the totals the plugin wrote, not the page's
script.

Needs node (>= 18), npm and chromium: without them, or when npm cannot
install the pinned playwright-core (tests/browser/package-lock.json, into
the build dir, reused while the lock file is unchanged), the test SKIPs and
says so loudly.  Groups are limited to the workload (Process, Unmatched
drop) so the graph is the workload's, whatever else runs on the machine.
"""
import glob
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

from wctest import BUILD, Env, case, done, require_built, skip, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_BROWSER = os.path.join(os.path.dirname(HERE), "browser")
NODE_DIR = os.path.join(BUILD, "tests", "browser-node")
CHROMIUM = os.environ.get("WC_CHROMIUM", "/usr/bin/chromium")
FLUSH = 2
GROUP = "wcw_browser"
FRAME = "burn_cpu"
MATCH_FILL = "rgb(230,0,230)"  # plugin/render/wc_flame.js and .css
BACKGROUND = (0xf6, 0xf6, 0xf2)
PX = 0.5  # px: how far a width may be from the one wanted


def loud_skip(what, why):
    bar = "#" * 72
    print(f"{bar}\n# BROWSER TEST NOT RUN: {why}\n{bar}", file=sys.stderr,
          flush=True)
    skip(what, why)
    done()


def node_major():
    try:
        out = subprocess.run(["node", "--version"], capture_output=True,
                             text=True, timeout=20).stdout
        return int(out.strip().lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return 0


def install_playwright():
    """playwright-core as locked, under the build dir; None or a reason."""
    lock = os.path.join(SRC_BROWSER, "package-lock.json")
    with open(lock) as f:
        want = f.read()
    try:
        with open(os.path.join(NODE_DIR, "package-lock.json")) as f:
            have = f.read()
    except OSError:
        have = None
    if have == want and os.path.exists(os.path.join(
            NODE_DIR, "node_modules", "playwright-core", "package.json")):
        return None
    tmp = f"{NODE_DIR}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(SRC_BROWSER, name), tmp)
    t0 = time.time()
    try:
        # Few, short retries: without a registry this fails in seconds.
        r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund",
                            "--ignore-scripts", "--loglevel=error",
                            "--fetch-retries=1",
                            "--fetch-retry-mintimeout=2000",
                            "--fetch-retry-maxtimeout=5000",
                            "--fetch-timeout=30000"],
                           cwd=tmp, capture_output=True, text=True,
                           timeout=150)
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        return "npm ci timed out after 150 s (no registry?)"
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        lines = [ln for ln in (r.stdout + r.stderr).splitlines()
                 if ln.startswith("npm error") and "nodedir" not in ln]
        return (f"npm ci of playwright-core failed (exit {r.returncode}, "
                f"no registry?): " + " | ".join(lines[:3]))
    shutil.rmtree(NODE_DIR, ignore_errors=True)
    os.rename(tmp, NODE_DIR)
    print(f"# installed playwright-core in {NODE_DIR} "
          f"({time.time() - t0:.1f} s)")
    return None


def ours(root):
    """PIDs (other than ours) whose command line or cwd names root: the
    collectd, workload, node and chromium processes this test started."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if root in cmd:
            pids.append((int(d), cmd[:120]))
    return pids


def kill_ours(root):
    for pid, _ in ours(root):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or \
            head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def rgb(fill):
    m = re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", fill or "")
    return tuple(int(v) for v in m.groups()) if m else None


def same_colour(a, b, tol=2):
    return a is not None and b is not None and \
        all(abs(x - y) <= tol for x, y in zip(a, b))


def union_share(frames, pred, total):
    """Share (%) of the time under frames matching pred, a frame inside
    another counted once: from data-x and data-value alone."""
    spans = sorted((f["x"], f["x"] + f["value"]) for f in frames
                   if pred(f["name"]))
    covered, end = 0, -1
    for a, b in spans:
        if a >= end:
            covered += b - a
            end = b
        elif b > end:  # cannot happen in a tree; count it right anyway
            covered += b - end
            end = b
    return 100.0 * covered / total if total else 0.0


def matched_pct(text):
    m = re.fullmatch(r"\s*Matched: (\d+(?:\.\d+)?)%\s*", text or "")
    return float(m.group(1)) if m else None


def relation(o, f):
    """'self', 'ancestor', 'descendant' or None: o's place relative to f,
    from the layout (root at the bottom: a larger y is nearer the root)."""
    if o["i"] == f["i"]:
        return "self"
    inside = f["x"] <= o["x"] and o["x"] + o["value"] <= f["x"] + f["value"]
    covers = o["x"] <= f["x"] and o["x"] + o["value"] >= f["x"] + f["value"]
    if o["y"] > f["y"] and covers:
        return "ancestor"
    if o["y"] < f["y"] and inside:
        return "descendant"
    return None


def check_page(R, svg_w, svg_h):
    before = R["before"]
    W, xpad, total = before["width"], before["xpad"], before["total"]
    frames = before["frames"]
    f = R["target"]

    # Screenshot.
    shot = R["screenshot"]
    size = png_size(shot["path"]) if os.path.exists(shot["path"]) else None
    nbytes = os.path.getsize(shot["path"]) if size else 0
    print(f"# screenshot {shot['path']}: {nbytes} bytes, "
          f"{size[0] if size else '?'}x{size[1] if size else '?'} px")
    case("the screenshot is a non-empty PNG of the SVG's size",
         size is not None and nbytes > 1000 and size == (svg_w, svg_h),
         f"{nbytes} bytes, size {size}, SVG {svg_w}x{svg_h}")
    case("the screenshot shows the graph: the page background, and "
         f"{FRAME}'s colour at its rect",
         same_colour(tuple(R["pixel_background"]), BACKGROUND) and
         same_colour(tuple(R["pixel_before"]), rgb(f["fill"])),
         f"background {R['pixel_background']}, at {FRAME} "
         f"{R['pixel_before']} (fill {f['fill']})")
    case("no JavaScript errors on the page",
         not R["page_errors"] and not R["console_errors"],
         f"{R['page_errors']} {R['console_errors']}")
    case("the page asks for nothing beyond its own file",
         not R["requests"], str(R["requests"][:5]))
    print(f"# page loaded in {R['load_ms']} ms; {len(frames)} frames drawn; "
          f"graph width {W:g} px; {FRAME} {float(f['rw']):g} px wide at "
          f"x={f['rx']} ({100.0 * f['value'] / total:.1f}% of "
          f"{total / 1e6:.2f} s)")

    title = None
    with open(R["svg"], encoding="utf-8") as fh:
        m = re.search(r'<g class="frame" data-name="%s"[^>]*><title>([^<]*)'
                      % re.escape(FRAME), fh.read())
        title = m.group(1) if m else None
    case("hovering a frame shows its name, time and share",
         R.get("hover") and R["hover"] == title,
         f"details {R.get('hover')!r}, title {title!r}")
    print(f"# hover: {R.get('hover')!r}")

    # Zoom: the click on the rect.
    z = {g["i"]: g for g in R["zoomed"]["frames"]}
    zt = z[f["i"]]
    print(f"# after the click on {FRAME}: rect width {zt['rw']} (attribute), "
          f"{zt['bbw']:.2f} px on screen, x={zt['rx']}; graph width {W:g}")
    case(f"a click on {FRAME} widens it to the graph's width "
         f"(within {PX} px)",
         abs(float(zt["rw"]) - W) <= PX and abs(zt["bbw"] - W) <= PX and
         abs(float(zt["rx"]) - xpad) <= PX and zt["visible"],
         f"width {zt['rw']} ({zt['bbw']:.2f} px drawn) at x={zt['rx']}, "
         f"want {W:g} at {xpad:g}; timeouts {R.get('timeouts')}")
    bad_anc, bad_desc, bad_other, others = [], [], [], []
    for o in frames:
        rel = relation(o, f)
        n = z[o["i"]]
        if rel == "ancestor":
            if not n["visible"] or abs(float(n["rw"]) - W) > PX:
                bad_anc.append(f"{o['name']}: {n['rw']} {n['display']}")
        elif rel == "descendant":
            want_w = o["value"] * W / f["value"]
            want_x = xpad + (o["x"] - f["x"]) * W / f["value"]
            if not n["visible"] or abs(float(n["rw"]) - want_w) > PX or \
                    abs(float(n["rx"]) - want_x) > PX:
                bad_desc.append(f"{o['name']}: {n['rx']}+{n['rw']}, want "
                                f"{want_x:.2f}+{want_w:.2f}")
        elif rel is None and o["visible"]:
            others.append(o)
            if n["visible"] and float(n["rw"]) >= float(o["rw"]):
                bad_other.append(f"{o['name']}: {o['rw']} -> {n['rw']}")
    case("after the zoom its callers span the graph's width (faded)",
         not bad_anc, "; ".join(bad_anc[:5]))
    case("after the zoom its callees are scaled by the same ratio",
         not bad_desc, "; ".join(bad_desc[:5]))
    case("after the zoom every frame not on its path is hidden or narrower",
         others and not bad_other,
         f"{len(others)} frames off the path; {'; '.join(bad_other[:5])}")
    ex = next((o for o in others if o["name"] == "sleep_a_while"),
              others[0] if others else None)
    if ex:
        n = z[ex["i"]]
        print(f"# off the path: {ex['name']} {ex['rw']} px wide before, "
              f"{'hidden' if not n['visible'] else n['rw'] + ' px'} after "
              f"({sum(not z[o['i']]['visible'] for o in others)} of "
              f"{len(others)} off-path frames hidden)")
    case("Reset Zoom lights up while zoomed",
         "dim" not in (R["zoomed"]["reset_class"] or "").split() and
         "dim" in (before["reset_class"] or "").split(),
         f"{before['reset_class']!r} -> {R['zoomed']['reset_class']!r}")
    case("the zoomed frame is painted across the graph (its colour at its "
         "new centre)", same_colour(tuple(R["pixel_zoomed"]), rgb(f["fill"])),
         f"{R['pixel_zoomed']} at the centre, fill {f['fill']}")

    # Reset Zoom.
    rs = {g["i"]: g for g in R["reset"]["frames"]}
    moved = [f"{o['name']}: {o['rx']}+{o['rw']} {o['display']} -> "
             f"{rs[o['i']]['rx']}+{rs[o['i']]['rw']} {rs[o['i']]['display']}"
             for o in frames
             if (rs[o["i"]]["rx"], rs[o["i"]]["rw"], rs[o["i"]]["display"],
                 rs[o["i"]]["cls"]) != (o["rx"], o["rw"], o["display"],
                                        o["cls"])]
    print(f"# after Reset Zoom: {FRAME} {rs[f['i']]['rw']} px wide "
          f"(was {f['rw']}), {len(moved)} of {len(frames)} frames differ")
    case("Reset Zoom puts every frame back where it was, at its width",
         not moved, "; ".join(moved[:5]))
    relabel = [f"{o['name']}: {o['text']!r} at {o['tx']} -> "
               f"{rs[o['i']]['text']!r} at {rs[o['i']]['tx']}"
               for o in frames
               if (rs[o["i"]]["text"], rs[o["i"]]["tx"]) !=
               (o["text"], o["tx"])]
    case("Reset Zoom puts every label back as it was drawn", not relabel,
         "; ".join(relabel[:5]))
    case("Reset Zoom dims again", "dim" in
         (R["reset"]["reset_class"] or "").split(),
         repr(R["reset"]["reset_class"]))

    # Search through the button and the prompt.
    d1 = R.get("dialog1", {})
    case("Search opens a prompt dialog", d1.get("type") == "prompt", str(d1))
    s = {g["i"]: g for g in R["searched"]["frames"]}
    hits = [o for o in frames if o["name"] == FRAME]
    unchanged = [o["name"] for o in hits if s[o["i"]]["fill"] == o["fill"]]
    recoloured = [o["name"] for o in frames if o["name"] != FRAME and
                  s[o["i"]]["fill"] != o["fill"]]
    print(f"# search {FRAME!r}: fill {f['fill']} -> {s[f['i']]['fill']}, "
          f"#matched {R['searched']['matched']!r}")
    case(f"a search for {FRAME} changes the fill of its frames, and only "
         "theirs", hits and not unchanged and not recoloured,
         f"{len(unchanged)} of {len(hits)} unchanged; others recoloured: "
         f"{recoloured[:5]}")
    case("the highlight is painted", same_colour(
        tuple(R["pixel_searched"]), rgb(s[f["i"]]["fill"])) and not
        same_colour(tuple(R["pixel_searched"]), tuple(R["pixel_before"])),
        f"{R['pixel_searched']} at {FRAME}, fill {s[f['i']]['fill']}, "
        f"before {R['pixel_before']}")
    want = union_share(frames, lambda n: n == FRAME, total)
    got = matched_pct(R["searched"]["matched"])
    case(f"#matched shows {FRAME}'s share of the total (> 0)",
         got is not None and got > 0 and abs(got - want) <= 0.051,
         f"{R['searched']['matched']!r}, want {want:.2f}%")

    d2 = R.get("dialog2", {})
    nothing = R["nothing"]
    nf = {g["i"]: g for g in nothing["frames"]}
    print(f"# search '^zz_no_such_frame_zz$': #matched "
          f"{nothing['matched']!r}")
    case("the prompt offers the last search", d2.get("default") == FRAME,
         str(d2))
    case("a search that matches nothing shows 0 (or no match) and no "
         "highlight", (matched_pct(nothing["matched"]) == 0.0 or
                       "Matched" not in nothing["matched"]) and
         all(nf[o["i"]]["fill"] == o["fill"] for o in frames),
         f"{nothing['matched']!r}")
    dm = R["dismissed"]
    case("a dismissed prompt changes nothing",
         dm["matched"] == nothing["matched"] and
         [g["fill"] for g in dm["frames"]] ==
         [g["fill"] for g in nothing["frames"]], f"{dm['matched']!r}")

    kern = R["kernel"]
    want = union_share(frames, lambda n: n.endswith("_[k]"), total)
    got = matched_pct(kern["matched"])
    print(f"# search '_\\[k\\]$': #matched {kern['matched']!r} "
          f"(nested kernel frames counted once: {want:.2f}%)")
    case("a search matching nested frames counts their time once",
         got is not None and abs(got - want) <= 0.051,
         f"{kern['matched']!r}, want {want:.2f}%")
    bad = R["bad_regex"]
    case("a bad regex says so in #matched",
         (bad["matched"] or "").startswith("Bad regex"), repr(bad["matched"]))
    R["_bad_regex_kept"] = sum(g["fill"] == MATCH_FILL
                               for g in bad["frames"])

    cf = R["ctrl_f"]
    want = union_share(frames, lambda n: n == "sleep_a_while", total)
    got = matched_pct(cf["matched"])
    print(f"# Ctrl-F 'sleep_a_while': #matched {cf['matched']!r}")
    case("Ctrl-F opens the search prompt too",
         R.get("dialog6", {}).get("type") == "prompt" and got is not None
         and abs(got - want) <= 0.051, f"{R.get('dialog6')} "
         f"{cf['matched']!r}, want {want:.2f}%")

    us = R["url_search"]
    uf = {g["i"]: g for g in us["frames"]}
    print(f"# ?s={FRAME}: #matched {us['matched']!r}")
    case(f"?s={FRAME} in the URL searches on load",
         us["matched"] == R["searched"]["matched"] and
         all(uf[o["i"]]["fill"] == s[o["i"]]["fill"] for o in frames),
         f"{us['matched']!r} vs {R['searched']['matched']!r}")
    es = R["escaped"]
    ef = {g["i"]: g for g in es["frames"]}
    case("Escape clears the search",
         (es["matched"] or "").strip() == "" and
         all(ef[o["i"]]["fill"] == o["fill"] for o in frames),
         repr(es["matched"]))

    rz = R.get("root_zoom")
    if rz:
        zz = {g["i"]: g for g in rz["frames"]}
        off = max(max(abs(float(zz[o["i"]]["rx"]) - float(o["rx"])),
                      abs(float(zz[o["i"]]["rw"]) - float(o["rw"])))
                  for o in frames)
        case("a click on the root (all) keeps the layout the plugin drew "
             "(within 0.02 px) and the search",
             off <= 0.02 and rz["matched"] == R["searched"]["matched"] and
             all(zz[o["i"]]["visible"] for o in frames),
             f"max move {off:.3f} px, #matched {rz['matched']!r}")


require_built()
absent = [n for n in ("flame.js", "package.json", "package-lock.json")
          if not os.path.exists(os.path.join(SRC_BROWSER, n))]
if absent:
    loud_skip("flame graph in headless Chromium",
              f"{SRC_BROWSER} lacks {', '.join(absent)} (a tarball without "
              "tests/browser?)")
missing = [t for t in ("node", "npm") if not shutil.which(t)]
if not os.access(CHROMIUM, os.X_OK):
    missing.append(CHROMIUM)
if missing:
    loud_skip("flame graph in headless Chromium",
              f"missing {', '.join(missing)} (Debian packages chromium, "
              "nodejs, npm: tests/deps.sh should install them)")
if node_major() < 18:
    loud_skip("flame graph in headless Chromium",
              f"node {node_major() or '?'} is too old: playwright-core "
              "needs >= 18")
why = install_playwright()
if why:
    loud_skip("flame graph in headless Chromium", why)

T0 = time.time()
with Env("browser") as env:
    try:
        cd = env.collectd(interval=1, plugin_conf=(
            f"FlushInterval {FLUSH}\nSampleFrequency 99\n"
            f'Process "{GROUP}"\nUnmatched "drop"\n'))
        cd.start()
        w = env.workload(GROUP, "--spin", "1", "--sleep", "1",
                         "--sleep-ms", "20", "--seconds", "8")
        # A whole flush window inside the workload's run: a file written
        # two windows after it started.
        latest = os.path.join(cd.spool, "latest.svg")
        due = w.started + 2 * FLUSH + 0.2
        ok = wait_until(lambda: os.path.exists(latest) and
                        os.path.getmtime(latest) >= due, 4 * FLUSH + 5)
        # latest.svg is a hard link to the newest wallclock-*.svg: open
        # that name, which a flush at shutdown does not replace.
        svg = None
        if ok:
            svg = next((p for p in sorted(glob.glob(os.path.join(
                cd.spool, "wallclock-*.svg"))) if os.path.samefile(
                    p, latest)), latest)
        rc = cd.stop()
        w.kill()
        spool = os.listdir(cd.spool) if os.path.isdir(cd.spool) else None
        case("collectd wrote a flame graph with the workload running",
             ok and svg, f"spool: {spool}")
        case("collectd exits cleanly", rc == 0, f"exit status {rc}")
        case("no errors from the plugin", not cd.wallclock_errors(),
             "\n".join(cd.wallclock_errors()))
        if not (ok and svg):
            done()
        with open(svg, encoding="utf-8") as fh:
            text = fh.read()
        m = re.search(r'<svg[^>]*\swidth="(\d+)"[^>]*\sheight="(\d+)"', text)
        svg_w, svg_h = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        nframes = text.count('class="frame"')
        print(f"# {os.path.basename(svg)} (latest.svg): {len(text)} bytes, "
              f"{svg_w}x{svg_h} px, {nframes} frames")
        if not case(f"the SVG draws {FRAME}",
                    f'data-name="{FRAME}"' in text,
                    "no frame of that name"):
            done()

        out = os.path.join(env.root, "browser")
        os.makedirs(out)
        envn = dict(os.environ, NODE_PATH=os.path.join(NODE_DIR,
                                                       "node_modules"),
                    WC_CHROMIUM=CHROMIUM, TMPDIR=out, HOME=out)
        t = time.time()
        node = subprocess.Popen(
            ["node", os.path.join(SRC_BROWSER, "flame.js"), svg, out, FRAME],
            env=envn, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True)
        try:
            log, _ = node.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(node.pid, signal.SIGKILL)
            log, _ = node.communicate()
        browser_s = time.time() - t
        try:
            with open(os.path.join(out, "result.json")) as fh:
                R = json.load(fh)
        except (OSError, ValueError) as e:
            R = {"fatal": f"no result.json: {e}"}
        print(f"# browser: Chromium {R.get('browser_version')}, "
              f"{browser_s:.1f} s for {len(R.get('steps', []))} steps")
        if not case("the browser session ran every step",
                    node.returncode == 0 and not R.get("fatal"),
                    f"node exited {node.returncode}: {R.get('fatal')}\n"
                    + log[-3000:]):
            done()
        R["svg"] = svg
        check_page(R, svg_w, svg_h)
        over = [(float(g["tx"]) + g["tw"] - float(g["rx"]) - float(g["rw"]),
                 g["name"]) for g in R["before"]["frames"]
                if g["visible"] and g["text"]]
        worst = max(over, default=(0, ""))
        if worst[0] > 1:
            print(f"# note: the label of {worst[1]} runs {worst[0]:.1f} px "
                  f"past its rect (labels are cut by an estimate of the "
                  f"font's width)")
        else:
            print(f"# labels: each fits its rect (the closest has "
                  f"{-worst[0]:.1f} px to spare)")
        if R.get("_bad_regex_kept"):
            print(f"# note: after a bad regex the previous search's "
                  f"{R['_bad_regex_kept']} highlights stay while #matched "
                  f"says {R['bad_regex']['matched'][:40]!r}")

        # Nothing of ours outlives the test.
        left = []
        wait_until(lambda: not ours(env.root), 5, step=0.1)
        left = ours(env.root)
        case("no chromium, node or collectd process left behind", not left,
             "; ".join(f"{p} {c}" for p, c in left))
    finally:
        kill_ours(env.root)
print(f"# test took {time.time() - T0:.1f} s (collectd, workload, browser)")
done()
