#!/usr/bin/env node
// flame.js - drive one wallclock SVG flame graph in headless Chromium, the
// way a person would: screenshot, a mouse click on a frame (zoom), Reset
// Zoom, Search through the button and its prompt dialog, ?s=REGEX in the
// URL, Escape.  It only observes: everything it saw goes to a JSON file
// that tests/e2e/test_browser.py checks (so the PASS/FAIL lines come from
// one place).
//
//   node flame.js SVG OUTDIR FRAME
//
// SVG: the flame graph (opened as a file:// URL); OUTDIR: where the
// screenshot, Chromium's profile and result.json go; FRAME: the name of the
// frame to click and search for (e.g. burn_cpu).  playwright-core comes
// from NODE_PATH; the browser is WC_CHROMIUM (default /usr/bin/chromium).
// Exit status 0 when it got through every step (whatever it saw), 2 on bad
// usage, 3 when a step could not be done (the reason is in result.json).
'use strict';

const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { pathToFileURL } = require('url');

const STEP_MS = 5000; // a wait for one element or one change
const ALL_MS = 45000; // the whole run

const [svgPath, outDir, frameName] = process.argv.slice(2);
if (!svgPath || !outDir || !frameName) {
	console.error('usage: flame.js SVG OUTDIR FRAME');
	process.exit(2);
}
const resultPath = path.join(outDir, 'result.json');
const R = { steps: [], page_errors: [], console_errors: [], requests: [] };

function save() {
	fs.writeFileSync(resultPath, JSON.stringify(R, null, 1));
}

const START = Date.now();
function step(name) {
	R.steps.push(name);
	console.error(`flame.js: ${((Date.now() - START) / 1000).toFixed(2)} s: ${name}`);
}

// Last resort: playwright kills the browser it launched when node exits.
const watchdog = setTimeout(() => {
	R.fatal = `gave up after ${ALL_MS} ms, at step: ${R.steps[R.steps.length - 1]}`;
	save();
	process.exit(3);
}, ALL_MS);

// The colour of the one pixel of a 1x1 PNG: whatever the row filter, with
// no neighbours the filtered bytes are the pixel itself.
function pngPixel(buf) {
	const type = buf[25];
	let data = Buffer.alloc(0);
	for (let off = 8; off < buf.length;) {
		const len = buf.readUInt32BE(off);
		const kind = buf.toString('latin1', off + 4, off + 8);
		if (kind === 'IDAT')
			data = Buffer.concat([data, buf.subarray(off + 8, off + 8 + len)]);
		off += 12 + len;
	}
	const raw = zlib.inflateSync(data);
	if (buf[24] !== 8 || (type !== 2 && type !== 6))
		throw new Error(`PNG bit depth ${buf[24]}, colour type ${type}`);
	return [raw[1], raw[2], raw[3]];
}

function pngSize(buf) {
	return { w: buf.readUInt32BE(16), h: buf.readUInt32BE(20) };
}

async function main() {
	const { chromium } = require('playwright-core');
	const svgText = fs.readFileSync(svgPath, 'utf8');
	const m = /<svg[^>]*\swidth="(\d+)"[^>]*\sheight="(\d+)"/.exec(svgText);
	const width = m ? +m[1] : 1200, height = m ? +m[2] : 800;
	const url = pathToFileURL(path.resolve(svgPath)).href;
	const exe = process.env.WC_CHROMIUM || '/usr/bin/chromium';

	step('launch chromium');
	// The flags of shared/docs/testing.md; playwright adds --headless and
	// --no-sandbox (chromiumSandbox false), and the profile is ours.  Chromium's
	// crash handler (chrome_crashpad_handler) leaves our process tree (its
	// parent is init) and ends with the browser; HOME (set by the test)
	// holds its database.  --disable-crashpad-for-testing would stop it,
	// but then no page loads (Chromium 156).
	const ctx = await chromium.launchPersistentContext(
		path.join(outDir, 'chromium-profile'), {
			executablePath: exe,
			headless: true,
			chromiumSandbox: false,
			args: ['--disable-gpu', '--no-first-run',
				'--disable-background-networking',
				'--disable-component-update', '--disable-sync'],
			viewport: { width, height },
			deviceScaleFactor: 1,
			timeout: 20000,
		});
	R.browser_version = ctx.browser() ? ctx.browser().version() : null;
	try {
		await drive(ctx, url);
	} finally {
		step('close chromium');
		await ctx.close();
	}
}

async function drive(ctx, url) {
	ctx.setDefaultTimeout(STEP_MS);
	// Self-contained: anything but the file itself is refused and noted.
	await ctx.route('**/*', (route) => {
		const u = route.request().url();
		if (u.startsWith('file:'))
			return route.continue();
		R.requests.push(u);
		return route.abort();
	});
	const page = ctx.pages()[0] || await ctx.newPage();
	page.on('pageerror', (e) => R.page_errors.push(String(e)));
	page.on('console', (msg) => {
		if (msg.type() === 'error')
			R.console_errors.push(msg.text());
	});

	// What the page shows now: every frame as drawn, and the controls.
	const snap = () => page.evaluate(() => {
		const fr = document.getElementById('frames');
		const frames = Array.from(fr.querySelectorAll('g.frame')).map((g, i) => {
			const r = g.querySelector('rect'), t = g.querySelector('text');
			const bb = r.getBoundingClientRect();
			return {
				i, name: g.getAttribute('data-name'),
				value: +g.getAttribute('data-value'),
				x: +g.getAttribute('data-x'),
				y: parseFloat(r.getAttribute('y')),
				rx: r.getAttribute('x'), rw: r.getAttribute('width'),
				fill: r.getAttribute('fill'),
				cls: g.getAttribute('class'),
				display: getComputedStyle(g).display,
				visible: bb.width > 0 && getComputedStyle(g).display !== 'none',
				bbw: bb.width, bbx: bb.x,
				text: t ? t.textContent : null,
				tx: t ? t.getAttribute('x') : null,
				tw: t && t.textContent ? t.getComputedTextLength() : 0,
			};
		});
		const txt = (id) => {
			const e = document.getElementById(id);
			return e ? e.textContent : null;
		};
		const cls = (id) => {
			const e = document.getElementById(id);
			return e ? e.getAttribute('class') : null;
		};
		return {
			width: parseFloat(fr.getAttribute('data-width')),
			xpad: parseFloat(fr.getAttribute('data-xpad')),
			total: parseFloat(fr.getAttribute('data-total')),
			frames, matched: txt('matched'), details: txt('details'),
			totals: txt('totals'), title: txt('title'),
			reset_class: cls('reset'), search_class: cls('search'),
		};
	});
	// The colour Chromium painted at one point of the page.
	const pixel = async (x, y) => pngPixel(await page.screenshot(
		{ clip: { x: Math.floor(x), y: Math.floor(y), width: 1, height: 1 } }));
	// The widest frame of that name, and a locator for its rect.
	const target = (s) => s.frames.filter((f) => f.name === frameName)
		.sort((a, b) => b.value - a.value)[0];
	const rectOf = (f) => page.locator('#frames g.frame').nth(f.i).locator('rect');
	// Wait for a condition on the page; false (and a note) if it never came.
	const until = async (what, fn, arg) => {
		try {
			await page.waitForFunction(fn, arg, { timeout: STEP_MS });
			return true;
		} catch (e) {
			R.timeouts = (R.timeouts || []).concat(what);
			return false;
		}
	};
	// Search through the button: the prompt is answered with text (or
	// dismissed when text is null); returns what the dialog said.
	const searchVia = async (text) => {
		const seen = {};
		page.once('dialog', async (d) => {
			seen.type = d.type();
			seen.message = d.message();
			seen.default = d.defaultValue();
			if (text === null)
				await d.dismiss();
			else
				await d.accept(text);
		});
		await page.locator('#search').click();
		return seen;
	};

	step('open');
	const t0 = Date.now();
	await page.goto(url, { waitUntil: 'load' });
	await page.locator('#frames g.frame').first().waitFor();
	R.load_ms = Date.now() - t0;
	R.url = page.url();

	step('screenshot');
	const shot = path.join(outDir, 'flame.png');
	// The viewport is the SVG's size.  (fullPage needs document.body, which
	// an SVG document has not: playwright would wait for it for ever.)
	const png = await page.screenshot({ path: shot });
	R.screenshot = { path: shot, bytes: png.length, ...pngSize(png) };

	const before = await snap();
	R.before = before;
	const f = target(before);
	if (!f) {
		R.fatal = `no frame named ${frameName} is drawn`;
		return;
	}
	R.target = f;
	R.pixel_before = await pixel(f.bbx + f.bbw / 2,
		(await rectOf(f).boundingBox()).y + 7);
	R.pixel_background = await pixel(2, 2);

	step('hover');
	await rectOf(f).hover();
	await until('hover details', () => {
		const d = document.getElementById('details');
		return d && d.textContent.trim() !== '';
	});
	R.hover = (await snap()).details;

	step(`click ${frameName}`);
	await rectOf(f).click();
	await until('zoom', ([i, w]) => {
		const r = document.querySelectorAll('#frames g.frame')[i].querySelector('rect');
		return Math.abs(parseFloat(r.getAttribute('width')) - w) <= 0.5;
	}, [f.i, before.width]);
	R.zoomed = await snap();
	const box = await rectOf(f).boundingBox();
	R.zoom_box = box;
	R.pixel_zoomed = await pixel(box.x + box.width / 2, box.y + 7);

	step('reset zoom');
	await page.locator('#reset').click();
	await until('unzoom', ([i, w]) => {
		const r = document.querySelectorAll('#frames g.frame')[i].querySelector('rect');
		return r.getAttribute('width') === w;
	}, [f.i, f.rw]);
	R.reset = await snap();

	step(`search ${frameName}`);
	R.dialog1 = await searchVia(frameName);
	await until('search', () => /Matched/.test(
		document.getElementById('matched').textContent));
	R.searched = await snap();
	R.pixel_searched = await pixel(f.bbx + f.bbw / 2,
		(await rectOf(f).boundingBox()).y + 7);

	step('search for nothing');
	const prev = R.searched.matched;
	R.dialog2 = await searchVia('^zz_no_such_frame_zz$');
	await until('search for nothing', (p) =>
		document.getElementById('matched').textContent !== p, prev);
	R.nothing = await snap();

	step('search dismissed');
	R.dialog3 = await searchVia(null);
	// Nothing to wait for: the prompt returned null; let the click settle.
	await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
	R.dismissed = await snap();

	step('search kernel frames');
	R.dialog4 = await searchVia('_\\[k\\]$');
	await until('search kernel frames', (p) =>
		document.getElementById('matched').textContent !== p, R.dismissed.matched);
	R.kernel = await snap();

	step('search with a bad regex');
	R.dialog5 = await searchVia('(');
	await until('search with a bad regex', (p) =>
		document.getElementById('matched').textContent !== p, R.kernel.matched);
	R.bad_regex = await snap();

	step('search with ctrl-f');
	const seen = {};
	page.once('dialog', async (d) => {
		seen.type = d.type();
		await d.accept('sleep_a_while');
	});
	await page.keyboard.press('Control+f');
	await until('search with ctrl-f', () => /^Matched/.test(
		document.getElementById('matched').textContent));
	R.dialog6 = seen;
	R.ctrl_f = await snap();

	step('search from the URL');
	const sUrl = `${url}?s=${encodeURIComponent(frameName)}`;
	await page.goto(sUrl, { waitUntil: 'load' });
	await until('search from the URL', () => /Matched/.test(
		document.getElementById('matched').textContent));
	R.url_search = await snap();

	step('escape');
	await page.keyboard.press('Escape');
	await until('escape', () =>
		!/Matched/.test(document.getElementById('matched').textContent));
	R.escaped = await snap();

	step('zoom on the root while searching');
	await page.goto(sUrl, { waitUntil: 'load' });
	await until('search from the URL again', () => /Matched/.test(
		document.getElementById('matched').textContent));
	const root = (await snap()).frames.find((g) => g.name === 'all');
	if (root) {
		await page.locator('#frames g.frame').nth(root.i).locator('rect').click();
		R.root_zoom = await snap();
	}
	step('done');
}

main().then(() => {
	clearTimeout(watchdog);
	save();
	process.exit(R.fatal ? 3 : 0);
}, (e) => {
	clearTimeout(watchdog);
	R.fatal = `${R.steps[R.steps.length - 1]}: ${e && e.stack ? e.stack : e}`;
	save();
	process.exit(3);
});
