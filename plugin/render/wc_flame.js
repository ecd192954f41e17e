"use strict";
var frames, all = [], details, matched, resetbtn, searchbtn;
var full = 0, xpad = 0, total = 0, charw = 12 * 0.59, term = null;
function init(evt) {
	frames = document.getElementById("frames");
	details = document.getElementById("details");
	matched = document.getElementById("matched");
	resetbtn = document.getElementById("reset");
	searchbtn = document.getElementById("search");
	all = Array.prototype.slice.call(frames.querySelectorAll("g.frame"));
	full = parseFloat(frames.getAttribute("data-width"));
	xpad = parseFloat(frames.getAttribute("data-xpad"));
	total = parseFloat(frames.getAttribute("data-total"));
	// the C side cut labels by an estimate: fix those the font made
	// wider than their frame
	for (var i = 0; i < all.length; i++) {
		var r = all[i].querySelector("rect");
		if (all[i].querySelector("text").getComputedTextLength() >
		    parseFloat(r.getAttribute("width")) - 6)
			fit(all[i], parseFloat(r.getAttribute("width")));
	}
	frames.addEventListener("click", function (e) {
		var g = frame_of(e.target);
		if (g)
			zoom(g);
	});
	frames.addEventListener("mouseover", function (e) {
		var g = frame_of(e.target);
		if (g)
			details.textContent = g.querySelector("title").textContent;
	});
	frames.addEventListener("mouseout", function () {
		details.textContent = " ";
	});
	resetbtn.addEventListener("click", unzoom);
	searchbtn.addEventListener("click", search_prompt);
	window.addEventListener("keydown", function (e) {
		if ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F")) {
			e.preventDefault();
			search_prompt();
		} else if (e.key === "Escape") {
			reset_search();
		}
	});
	var s = null;
	try {
		s = new URLSearchParams(window.location.search).get("s");
	} catch (err) {
	}
	if (s)
		search(s);
}
function frame_of(el) {
	for (; el && el !== frames; el = el.parentNode)
		if (el.classList && el.classList.contains("frame"))
			return el;
	return null;
}
// The frame as drawn unzoomed: kept before the first change.
function orig(g) {
	if (!g._o) {
		var r = g.querySelector("rect");
		g._o = {x: +g.getAttribute("data-x"), v: +g.getAttribute("data-value"),
			y: parseFloat(r.getAttribute("y")), rx: r.getAttribute("x"),
			rw: r.getAttribute("width")};
	}
	return g._o;
}
// Cut a label to its frame: estimate, then measure (fonts differ).
function fit(g, w) {
	var name = g.getAttribute("data-name"), n = Math.floor((w - 6) / charw);
	var t = g.querySelector("text");
	t.textContent = name.length <= n ? name :
		n < 3 ? "" : name.substring(0, n - 2) + "..";
	while (n >= 3 && t.textContent && t.getComputedTextLength() > w - 6) {
		n = Math.min(n, t.textContent.length) - 1;
		t.textContent = n < 3 ? "" : name.substring(0, n - 2) + "..";
	}
}
function place(g, x, w) {
	var r = g.querySelector("rect");
	r.setAttribute("x", x);
	r.setAttribute("width", w);
	g.querySelector("text").setAttribute("x", (parseFloat(x) + 3).toFixed(2));
	fit(g, parseFloat(w));
}
// g spans the full width, its ancestors too (faded), the rest hides.
function zoom(g) {
	var f = orig(g), ratio = full / f.v, i, e, o;
	for (i = 0; i < all.length; i++) {
		e = all[i];
		o = orig(e);
		e.classList.remove("hide", "parent");
		if (e === g) {
			place(e, xpad, full);
		} else if (o.y > f.y) {
			if (o.x <= f.x && o.x + o.v >= f.x + f.v) {
				e.classList.add("parent");
				place(e, xpad, full);
			} else {
				e.classList.add("hide");
			}
		} else if (o.y < f.y && o.x >= f.x && o.x + o.v <= f.x + f.v) {
			place(e, xpad + (o.x - f.x) * ratio, o.v * ratio);
		} else {
			e.classList.add("hide");
		}
	}
	resetbtn.classList.remove("dim");
}
function unzoom() {
	for (var i = 0; i < all.length; i++) {
		var e = all[i], o = orig(e);
		e.classList.remove("hide", "parent");
		place(e, o.rx, o.rw);
	}
	resetbtn.classList.add("dim");
}
function search_prompt() {
	var t = window.prompt("Search frames (regular expression):", term || "");
	if (t === null)
		return;
	if (t === "")
		reset_search();
	else
		search(t);
}
// Highlight matches; the share counts a match inside another once.
function search(t) {
	var re, spans = [], sum = 0, end = -1, i, r, pct;
	try {
		re = new RegExp(t);
	} catch (err) {
		reset_search();
		matched.textContent = "Bad regex: " + err.message;
		return -1;
	}
	reset_search();
	term = t;
	for (i = 0; i < all.length; i++) {
		if (!re.test(all[i].getAttribute("data-name")))
			continue;
		r = all[i].querySelector("rect");
		r._fill = r.getAttribute("fill");
		r.setAttribute("fill", "rgb(230,0,230)");
		spans.push(orig(all[i]));
	}
	spans.sort(function (a, b) {
		return a.x - b.x || b.v - a.v;
	});
	for (i = 0; i < spans.length; i++) {
		if (spans[i].x >= end) {
			sum += spans[i].v;
			end = spans[i].x + spans[i].v;
		}
	}
	pct = total > 0 ? 100 * sum / total : 0;
	matched.textContent = "Matched: " + pct.toFixed(1) + "%";
	if (spans.length)
		searchbtn.classList.add("on");
	return pct;
}
function reset_search() {
	for (var i = 0; i < all.length; i++) {
		var r = all[i].querySelector("rect");
		if (r._fill !== undefined) {
			r.setAttribute("fill", r._fill);
			delete r._fill;
		}
	}
	term = null;
	matched.textContent = " ";
	searchbtn.classList.remove("on");
}
