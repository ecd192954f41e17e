/* wc_svg.c - see wc_svg.h. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/wc_svg.h"
#include "format/wc_format.h"
#include "util/wc_hash.h"
#include "util/wc_strtab.h"
#include "util/wc_text.h"

#define NONE UINT32_MAX
#define OUT_CHUNK 65536
#define MIN_BYTES (64u << 10)
#define MAX_BYTES (1u << 30)
#define MAX_FRAMES (1u << 26)
#define MIN_WIDTH 200
#define MAX_WIDTH 16384

#define DEF_TITLE "Flame Graph"
#define DEF_WIDTH 1200
#define DEF_MIN_WIDTH_PX 0.1
#define DEF_MAX_FRAMES 200000
#define DEF_MAX_BYTES (64u << 20)

/* Geometry in px.  CHAR_W is the average glyph width flamegraph.pl also
 * guesses for a 12 px proportional font: text is cut by it, not measured,
 * so the C side and the script agree without a layout engine. */
#define XPAD 10
#define TOP_H 76    /* title, subtitle, totals */
#define BOTTOM_H 30 /* details line */
#define FRAME_H 16
#define RECT_H "15"
#define TEXT_DY 11 /* baseline of 12 px text in a 15 px rect */
#define CHAR_W (12 * 0.59)
#define TEXT_PAD 3

#define GREY_FILL "rgb(200,200,200)"

/* Colour families, from the first marker frame on a stack's path. */
enum svg_kind {
	K_NONE, /* no marker (yet): flamegraph.pl's warm default */
	K_ON = 1 + WC_FOLD_ONCPU,
	K_RUNQ = 1 + WC_FOLD_RUNQ,
	K_SLEEP = 1 + WC_FOLD_SLEEP,
	K_IO = 1 + WC_FOLD_BLOCKED,
	K_OFF = 1 + WC_FOLD_NKINDS, /* "[off-cpu...]" of another reason */
	K_NKINDS,
};

#define F_MARKER 1 /* this frame set its path's kind */
#define F_KERNEL 2 /* name ends in "_[k]" */

struct svg_node {
	uint64_t value; /* us, its own and everything above it */
	uint64_t x;	/* emit: us left of it under the root */
	uint32_t name;	/* offset in text */
	uint32_t parent;
	uint32_t child; /* emit: first child by name, NONE */
	uint32_t next;	/* emit: next sibling by name, NONE */
	uint16_t depth; /* root 0 */
	uint8_t kind;
	uint8_t flags;
};

struct wc_svg {
	unsigned width;
	double min_width_px;
	size_t max_frames;
	struct wc_budget budget; /* of everything below */
	char title[WC_SVG_MAX_LABEL + 1];
	char subtitle[WC_SVG_MAX_LABEL + 1];

	struct wc_strtab strs; /* frame names */

	/* the tree; node 0 is the root */
	struct svg_node *nodes;
	uint32_t *order; /* emit's sort, as many as nodes */
	size_t nnodes, nodes_cap, order_cap;
	uint32_t *node_slots; /* index + 1 by (parent, name), 0 = empty */
	size_t node_slot_cap;

	struct wc_svg_stats st;

	/* one emit's output, flushed to out in OUT_CHUNK pieces */
	wc_svg_out_fn out;
	void *ctx;
	bool out_err;
	size_t out_len;
	uint64_t out_total;

	/* scratch of one frame: fixed, so an add never allocates for it */
	char frame_buf[WC_SVG_MAX_FRAME + 1];
	char out_buf[OUT_CHUNK];
};

/* The offset of str (n bytes, safe text), added if new; NONE if no room. */
static uint32_t intern(struct wc_svg *s, const char *str, size_t n)
{
	uint32_t off;

	return wc_strtab_intern(&s->strs, str, n, true, &off) < 0 ? NONE : off;
}

/* ---- the tree ---- */

static size_t node_home(uint32_t parent, uint32_t name, size_t mask)
{
	return wc_mix32((uint64_t)parent << 32 | name) & mask;
}

static uint32_t node_find(const struct wc_svg *s, uint32_t parent,
			  uint32_t name, size_t *slot)
{
	size_t mask = s->node_slot_cap - 1, i = node_home(parent, name, mask);

	while (s->node_slots[i]) {
		uint32_t k = s->node_slots[i] - 1;

		if (s->nodes[k].parent == parent && s->nodes[k].name == name) {
			*slot = i;
			return k;
		}
		i = (i + 1) & mask;
	}
	*slot = i;
	return NONE;
}

static int node_rehash(struct wc_svg *s)
{
	size_t ncap = s->node_slot_cap * 2, mask = ncap - 1, i, j;
	uint32_t *slots;

	if (!wc_budget_has(&s->budget, ncap * sizeof(*slots)))
		return -1;
	slots = calloc(ncap, sizeof(*slots));
	if (!slots)
		return -1;
	for (i = 1; i < s->nnodes; i++) {
		const struct svg_node *nd = &s->nodes[i];

		for (j = node_home(nd->parent, nd->name, mask); slots[j];
		     j = (j + 1) & mask)
			;
		slots[j] = (uint32_t)i + 1;
	}
	free(s->node_slots);
	s->budget.bytes += (ncap - s->node_slot_cap) * sizeof(*slots);
	s->node_slots = slots;
	s->node_slot_cap = ncap;
	return 0;
}

/* Room for one more node and its sort slot. */
static int node_room(struct wc_svg *s)
{
	size_t ncap;

	if (s->nnodes >= s->max_frames)
		return -1;
	if ((s->nnodes + 1) * 2 > s->node_slot_cap && node_rehash(s) < 0)
		return -1;
	if (s->nnodes < s->nodes_cap)
		return 0;
	ncap = s->nodes_cap * 2;
	if (ncap > s->max_frames)
		ncap = s->max_frames;
	/* emit sorts every node: room for it is taken as nodes are made */
	if (s->order_cap < ncap &&
	    wc_budget_resize(&s->budget, (void **)&s->order, &s->order_cap,
			     ncap, sizeof(*s->order)))
		return -1;
	return wc_budget_resize(&s->budget, (void **)&s->nodes, &s->nodes_cap,
				ncap, sizeof(*s->nodes));
}

/* The colour family a marker frame starts. */
static int marker_kind(const char *name)
{
	int k = wc_fold_marker_kind(name);

	if (k >= 0)
		return K_ON + k;
	return wc_fold_is_offcpu(name) ? K_OFF : K_NONE;
}

static bool ends_with(const char *s, size_t n, const char *tail)
{
	size_t t = strlen(tail);

	return n >= t && memcmp(s + n - t, tail, t) == 0;
}

/* The child of parent named by offset name, made if new; NONE if full. */
static uint32_t child_of(struct wc_svg *s, uint32_t parent, uint32_t name,
			 size_t name_len)
{
	const struct svg_node *p;
	struct svg_node *nd;
	size_t slot;
	uint32_t i = node_find(s, parent, name, &slot);

	if (i != NONE)
		return i;
	if (node_room(s) < 0)
		return NONE;
	node_find(s, parent, name, &slot); /* the index may have moved */
	i = (uint32_t)s->nnodes++;
	p = &s->nodes[parent];
	nd = &s->nodes[i];
	memset(nd, 0, sizeof(*nd));
	nd->name = name;
	nd->parent = parent;
	nd->child = nd->next = NONE;
	nd->depth = (uint16_t)(p->depth + 1);
	nd->kind = p->kind;
	if (p->kind == K_NONE) {
		nd->kind = (uint8_t)marker_kind(wc_strtab_str(&s->strs, name));
		if (nd->kind != K_NONE)
			nd->flags |= F_MARKER;
	}
	if (ends_with(wc_strtab_str(&s->strs, name), name_len, "_[k]"))
		nd->flags |= F_KERNEL;
	s->node_slots[slot] = i + 1;
	return i;
}

/* ---- adding ---- */

struct add_walk {
	uint32_t at; /* deepest node so far */
	uint64_t value;
	size_t depth;
	bool cut;
	bool full;
};

static int add_begin(struct wc_svg *s, struct add_walk *w, uint64_t value)
{
	memset(w, 0, sizeof(*w));
	w->value = value;
	if (value > UINT64_MAX - s->nodes[0].value)
		return -1;
	s->nodes[0].value += value;
	s->st.total_us += value;
	return 0;
}

/* One frame further up the stack; false once the walk has ended. */
static bool add_step(struct wc_svg *s, struct add_walk *w, const char *frame,
		     size_t n)
{
	bool cut;
	size_t len;
	uint32_t name, c;

	if (w->full)
		return false;
	if (w->depth == WC_SVG_MAX_DEPTH) {
		w->cut = true;
		return false;
	}
	len = wc_fold_frame_clean(frame, n, s->frame_buf, sizeof(s->frame_buf),
				  &cut);
	w->cut |= cut;
	name = intern(s, s->frame_buf, len);
	c = name == NONE ? NONE : child_of(s, w->at, name, len);
	if (c == NONE) {
		w->full = true;
		return false;
	}
	s->nodes[c].value += w->value;
	w->at = c;
	w->depth++;
	return true;
}

static void add_end(struct wc_svg *s, const struct add_walk *w)
{
	s->st.nodes_merged += w->full;
	s->st.truncated += w->cut;
}

static int bad_line(struct wc_svg *s)
{
	s->st.bad_lines++;
	return -1;
}

int wc_svg_add_line(struct wc_svg *s, const char *line, size_t len)
{
	struct wc_fold_line l;
	struct add_walk w;
	const char *p, *end, *q;
	int rc;

	if (!s || (!line && len))
		return -1;
	rc = wc_fold_parse(line, len, &l);
	if (rc == 0)
		return 0;
	s->st.lines++;
	if (rc < 0 || add_begin(s, &w, l.value) < 0)
		return bad_line(s);
	if (l.value == 0)
		return 0;
	for (p = l.stack, end = l.stack + l.len;; p = q + 1) {
		q = memchr(p, ';', (size_t)(end - p));
		if (!q)
			q = end;
		if (!add_step(s, &w, p, (size_t)(q - p)) || q == end)
			break;
	}
	add_end(s, &w);
	return 0;
}

int wc_svg_add(struct wc_svg *s, const char *const *frames, size_t n,
	       uint64_t value_us)
{
	struct add_walk w;
	size_t i;

	if (!s || (!frames && n))
		return -1;
	s->st.lines++;
	if (n == 0 || add_begin(s, &w, value_us) < 0)
		return bad_line(s);
	if (value_us == 0)
		return 0;
	for (i = 0; i < n; i++) {
		const char *f = frames[i] ? frames[i] : "";

		if (!add_step(s, &w, f, strlen(f)))
			break;
	}
	add_end(s, &w);
	return 0;
}

/* ---- life cycle ---- */

static void set_label(char *dst, const char *src)
{
	bool cut;

	wc_text_clean(src, src ? strlen(src) : 0, dst, WC_SVG_MAX_LABEL + 1,
		      &cut);
}

static int check_opts(const struct wc_svg_opts *o)
{
	if (o->width && (o->width < MIN_WIDTH || o->width > MAX_WIDTH))
		return -1;
	if (o->max_frames > MAX_FRAMES)
		return -1;
	if (o->max_bytes &&
	    (o->max_bytes < MIN_BYTES || o->max_bytes > MAX_BYTES))
		return -1;
	/* negative is fine: every frame is drawn */
	if (isnan(o->min_width_px))
		return -1;
	return 0;
}

struct wc_svg *wc_svg_new(const struct wc_svg_opts *opts)
{
	static const struct wc_svg_opts none;
	const struct wc_svg_opts *o = opts ? opts : &none;
	struct wc_svg *s;
	uint32_t root;
	size_t n;

	if (check_opts(o) < 0)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->width = o->width ? o->width : DEF_WIDTH;
	s->min_width_px = o->min_width_px ? o->min_width_px : DEF_MIN_WIDTH_PX;
	s->max_frames = o->max_frames ? o->max_frames : DEF_MAX_FRAMES;
	s->budget.max = o->max_bytes ? o->max_bytes : DEF_MAX_BYTES;
	set_label(s->title, o->title && *o->title ? o->title : DEF_TITLE);
	set_label(s->subtitle, o->subtitle);

	s->node_slot_cap = 256;
	s->node_slots = calloc(s->node_slot_cap, sizeof(*s->node_slots));
	s->budget.bytes = s->node_slot_cap * sizeof(uint32_t);
	if (!s->node_slots || wc_strtab_init(&s->strs, &s->budget, 4096))
		goto fail;
	n = s->max_frames < 64 ? s->max_frames : 64;
	if (wc_budget_resize(&s->budget, (void **)&s->nodes, &s->nodes_cap, n,
			     sizeof(*s->nodes)) ||
	    wc_budget_resize(&s->budget, (void **)&s->order, &s->order_cap, n,
			     sizeof(*s->order)))
		goto fail;
	root = intern(s, "all", 3);
	if (root == NONE)
		goto fail;
	memset(&s->nodes[0], 0, sizeof(s->nodes[0]));
	s->nodes[0].name = root;
	s->nodes[0].parent = NONE;
	s->nodes[0].child = s->nodes[0].next = NONE;
	s->nnodes = 1;
	return s;
fail:
	wc_svg_free(s);
	return NULL;
}

void wc_svg_free(struct wc_svg *s)
{
	if (!s)
		return;
	wc_strtab_free(&s->strs);
	free(s->nodes);
	free(s->order);
	free(s->node_slots);
	free(s);
}

void wc_svg_get_stats(const struct wc_svg *s, struct wc_svg_stats *st)
{
	*st = s->st;
	st->nodes = s->nnodes;
	st->bytes = s->budget.bytes;
}

/* ---- output ---- */

static void out_flush(struct wc_svg *s)
{
	if (!s->out_err && s->out_len) {
		if (s->out(s->ctx, s->out_buf, s->out_len) < 0)
			s->out_err = true;
		else
			s->out_total += s->out_len;
	}
	s->out_len = 0;
}

static void put(struct wc_svg *s, const char *buf, size_t len)
{
	while (len > 0 && !s->out_err) {
		size_t n = OUT_CHUNK - s->out_len;

		if (n > len)
			n = len;
		memcpy(s->out_buf + s->out_len, buf, n);
		s->out_len += n;
		buf += n;
		len -= n;
		if (s->out_len == OUT_CHUNK)
			out_flush(s);
	}
}

static void put_str(struct wc_svg *s, const char *str)
{
	put(s, str, strlen(str));
}

/* printf without floating point, so the locale never shows. */
__attribute__((format(printf, 2, 3))) static void putf(struct wc_svg *s,
						       const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(s, buf,
		    (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* Safe text (see wc_text_clean) with XML's five specials escaped; good in
 * element content and in attribute values alike. */
static void put_esc(struct wc_svg *s, const char *str, size_t len)
{
	size_t i, from = 0;

	for (i = 0; i < len; i++) {
		const char *ent;

		switch (str[i]) {
		case '&':
			ent = "&amp;";
			break;
		case '<':
			ent = "&lt;";
			break;
		case '>':
			ent = "&gt;";
			break;
		case '"':
			ent = "&quot;";
			break;
		case '\'':
			ent = "&#39;";
			break;
		default:
			continue;
		}
		put(s, str + from, i - from);
		put_str(s, ent);
		from = i + 1;
	}
	put(s, str + from, len - from);
}

/* Digits by hand: a frame writes a dozen numbers, and vsnprintf for each
 * was most of emit's time. */
static void put_u64(struct wc_svg *s, uint64_t v)
{
	char buf[20];
	size_t i = sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(s, buf + i, sizeof(buf) - i);
}

/* px with two decimals, from hundredths rounded once. */
static void put_px(struct wc_svg *s, uint64_t hundredths)
{
	char frac[3] = {'.', (char)('0' + hundredths / 10 % 10),
			(char)('0' + hundredths % 10)};

	put_u64(s, hundredths / 100);
	put(s, frac, sizeof(frac));
}

/* Integer with d decimals (tenths or hundredths) into buf, trailing
 * zeros of the fraction dropped. */
static void fmt_scaled(char *buf, size_t n, uint64_t v, int d)
{
	uint64_t div = d == 2 ? 100 : d == 1 ? 10 : 1;
	int len = snprintf(buf, n, "%llu", (unsigned long long)(v / div));

	if (d == 0 || v % div == 0 || len < 0 || (size_t)len >= n)
		return;
	if (d == 2 && v % 10 == 0)
		snprintf(buf + len, n - (size_t)len, ".%llu",
			 (unsigned long long)(v % div / 10));
	else
		snprintf(buf + len, n - (size_t)len, ".%0*llu", d,
			 (unsigned long long)(v % div));
}

static uint64_t div_round(uint64_t a, uint64_t b)
{
	return a / b + (a % b >= b - a % b);
}

/* Microseconds for a person, to three significant digits: "87 us",
 * "1.23 ms", "450 ms", "12.3 s". */
static void fmt_time(char *buf, size_t n, uint64_t us)
{
	uint64_t div, v;
	const char *unit;

	if (us < 1000) {
		snprintf(buf, n, "%llu us", (unsigned long long)us);
		return;
	}
	/* the unit after rounding: 999.5 ms is "1 s", not "1000 ms" */
	div = us < 999500 ? 1000 : 1000000;
	unit = div == 1000 ? "ms" : "s";
	if (us / div < 10 && (v = div_round(us, div / 100)) < 1000) {
		fmt_scaled(buf, n, v, 2);
	} else if (us / div < 100 && (v = div_round(us, div / 10)) < 1000) {
		fmt_scaled(buf, n, v, 1);
	} else {
		fmt_scaled(buf, n, div_round(us, div), 0);
	}
	snprintf(buf + strlen(buf), n - strlen(buf), " %s", unit);
}

/* part of total as a percentage with d decimals, e.g. "36.6%". */
static void fmt_pct(char *buf, size_t n, uint64_t part, uint64_t total, int d)
{
	double scale = d == 2 ? 10000.0 : 1000.0;
	uint64_t v = total ? (uint64_t)((double)part * scale / total + 0.5) : 0;
	uint64_t div = d == 2 ? 100 : 10;

	snprintf(buf, n, "%llu.%0*llu%%", (unsigned long long)(v / div), d,
		 (unsigned long long)(v % div));
}

/* ---- colours ---- */

/* Hue range (degrees), saturation and lightness range of a family's user
 * frames; kernel frames take the same hues, paler. */
struct family {
	double h0, h1, sat, l0, l1, kl0, kl1;
};

static const struct family families[K_NKINDS] = {
	[K_NONE] = {0, 50, 0.85, 0.52, 0.60, 0.74, 0.78},
	[K_ON] = {0, 50, 0.85, 0.52, 0.60, 0.74, 0.78},
	[K_RUNQ] = {260, 290, 0.55, 0.55, 0.63, 0.78, 0.82},
	[K_SLEEP] = {200, 230, 0.70, 0.60, 0.67, 0.80, 0.84},
	[K_IO] = {160, 185, 0.60, 0.42, 0.50, 0.68, 0.72},
	[K_OFF] = {235, 255, 0.35, 0.55, 0.62, 0.76, 0.80},
};

static unsigned channel(double v)
{
	v = v < 0 ? 0 : v > 1 ? 1 : v;
	return (unsigned)(v * 255 + 0.5);
}

static void hsl_rgb(double h, double sat, double l, unsigned rgb[3])
{
	double hp = h / 60,
	       c = (1 - (2 * l - 1 < 0 ? 1 - 2 * l : 2 * l - 1)) * sat;
	double f = hp - 2 * (int)(hp / 2) - 1, x = c * (1 - (f < 0 ? -f : f));
	double m = l - c / 2, r = 0, g = 0, b = 0;

	switch ((int)hp % 6) {
	case 0:
		r = c, g = x;
		break;
	case 1:
		r = x, g = c;
		break;
	case 2:
		g = c, b = x;
		break;
	case 3:
		g = x, b = c;
		break;
	case 4:
		r = x, b = c;
		break;
	default:
		r = c, b = x;
		break;
	}
	rgb[0] = channel(r + m);
	rgb[1] = channel(g + m);
	rgb[2] = channel(b + m);
}

static bool is_grey(const struct svg_node *nd)
{
	return nd->depth <= 1 || (nd->flags & F_MARKER);
}

/* The fill of a non-grey frame: its family's, the shade a hash of its
 * name, so a name looks the same in every file. */
static void frame_rgb(const struct wc_svg *s, const struct svg_node *nd,
		      unsigned rgb[3])
{
	const struct family *f = &families[nd->kind];
	const char *name = wc_strtab_str(&s->strs, nd->name);
	uint32_t h = wc_hash32(name, strlen(name));
	double a = (h & 0xffff) / 65535.0, b = (h >> 16) / 65535.0;
	double l = (nd->flags & F_KERNEL) ? f->kl0 + b * (f->kl1 - f->kl0)
					  : f->l0 + b * (f->l1 - f->l0);

	hsl_rgb(f->h0 + a * (f->h1 - f->h0), f->sat, l, rgb);
}

/* ---- emit ---- */

static int by_parent_name(const void *a, const void *b, void *arg)
{
	const struct wc_svg *s = arg;
	const struct svg_node *x = &s->nodes[*(const uint32_t *)a];
	const struct svg_node *y = &s->nodes[*(const uint32_t *)b];

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return strcmp(wc_strtab_str(&s->strs, x->name),
		      wc_strtab_str(&s->strs, y->name));
}

/* Link each node's children in name order: the picture must not depend on
 * the order stacks came in. */
static void sort_children(struct wc_svg *s)
{
	size_t i, n = s->nnodes - 1;

	for (i = 0; i < s->nnodes; i++)
		s->nodes[i].child = s->nodes[i].next = NONE;
	for (i = 0; i < n; i++)
		s->order[i] = (uint32_t)i + 1;
	qsort_r(s->order, n, sizeof(*s->order), by_parent_name, s);
	for (i = n; i-- > 0;) {
		struct svg_node *nd = &s->nodes[s->order[i]];

		nd->next = s->nodes[nd->parent].child;
		s->nodes[nd->parent].child = s->order[i];
	}
}

/* Pre-order: into i's children if descend, else on to the next frame. */
static uint32_t walk_next(const struct wc_svg *s, uint32_t i, bool descend)
{
	if (descend && s->nodes[i].child != NONE)
		return s->nodes[i].child;
	while (i != 0) {
		if (s->nodes[i].next != NONE)
			return s->nodes[i].next;
		i = s->nodes[i].parent;
	}
	return NONE;
}

/* Horizontal edge in hundredths of a px, at x us under the root.  Edges,
 * not widths, are rounded, so a frame never pokes out of its parent. */
static uint64_t edge(const struct wc_svg *s, uint64_t x)
{
	double full = s->width - 2 * XPAD;
	double frac = (double)x / (double)s->nodes[0].value;

	return (uint64_t)((XPAD + frac * full) * 100 + 0.5);
}

static bool drawn(const struct wc_svg *s, uint32_t i)
{
	double full = s->width - 2 * XPAD;

	return i == 0 ||
	       (double)s->nodes[i].value / (double)s->nodes[0].value * full >=
		       s->min_width_px;
}

/* Place the frames (x of each under the root); returns the depth of the
 * deepest drawn one and counts them. */
static unsigned layout(struct wc_svg *s)
{
	unsigned max_depth = 0;
	uint32_t i = 0, c;

	s->st.drawn = 0;
	s->nodes[0].x = 0;
	while (i != NONE) {
		bool d = drawn(s, i);
		uint64_t x = s->nodes[i].x;

		if (d) {
			s->st.drawn++;
			if (s->nodes[i].depth > max_depth)
				max_depth = s->nodes[i].depth;
			for (c = s->nodes[i].child; c != NONE;
			     c = s->nodes[c].next) {
				s->nodes[c].x = x;
				x += s->nodes[c].value;
			}
		}
		i = walk_next(s, i, d);
	}
	return max_depth;
}

/* Name text that fits w hundredths of a px, cut with "..": as many
 * characters as CHAR_W says fit, none if fewer than three. */
static void put_fitted(struct wc_svg *s, const char *name, uint64_t w)
{
	double room = (double)w / 100 - 2 * TEXT_PAD;
	long fit = room > 0 ? (long)(room / CHAR_W) : 0;
	size_t len = strlen(name), i, chars = 0, cut = 0;

	for (i = 0; i < len; i++) {
		if (((unsigned char)name[i] & 0xc0) == 0x80)
			continue;
		if ((long)chars == fit - 2)
			cut = i;
		chars++;
	}
	if ((long)chars <= fit) {
		put_esc(s, name, len);
	} else if (fit >= 3) {
		put_esc(s, name, cut);
		put_str(s, "..");
	}
}

static void put_frame(struct wc_svg *s, uint32_t i, unsigned height)
{
	const struct svg_node *nd = &s->nodes[i];
	const char *name = wc_strtab_str(&s->strs, nd->name);
	size_t len = strlen(name);
	uint64_t x0 = edge(s, nd->x), x1 = edge(s, nd->x + nd->value);
	unsigned y = height - BOTTOM_H - (nd->depth + 1u) * FRAME_H, rgb[3];
	char t[32], p[32];

	fmt_time(t, sizeof(t), nd->value);
	fmt_pct(p, sizeof(p), nd->value, s->nodes[0].value, 2);
	put_str(s, "<g class=\"frame\" data-name=\"");
	put_esc(s, name, len);
	put_str(s, "\" data-value=\"");
	put_u64(s, nd->value);
	put_str(s, "\" data-x=\"");
	put_u64(s, nd->x);
	put_str(s, "\"><title>");
	put_esc(s, name, len);
	put_str(s, " (");
	put_str(s, t);
	put_str(s, ", ");
	put_str(s, p);
	put_str(s, ")</title><rect x=\"");
	put_px(s, x0);
	put_str(s, "\" y=\"");
	put_u64(s, y);
	put_str(s, "\" width=\"");
	put_px(s, x1 - x0);
	put_str(s, "\" height=\"" RECT_H "\" fill=\"");
	if (is_grey(nd)) {
		put_str(s, GREY_FILL);
	} else {
		frame_rgb(s, nd, rgb);
		put_str(s, "rgb(");
		put_u64(s, rgb[0]);
		put_str(s, ",");
		put_u64(s, rgb[1]);
		put_str(s, ",");
		put_u64(s, rgb[2]);
		put_str(s, ")");
	}
	put_str(s, "\" rx=\"2\" ry=\"2\"/><text x=\"");
	put_px(s, x0 + TEXT_PAD * 100);
	put_str(s, "\" y=\"");
	put_u64(s, y + TEXT_DY);
	put_str(s, "\">");
	put_fitted(s, name, x1 - x0);
	put_str(s, "</text></g>\n");
}

static void put_frames(struct wc_svg *s, unsigned height)
{
	uint32_t i = 0;

	while (i != NONE) {
		bool d = drawn(s, i);

		if (d)
			put_frame(s, i, height);
		i = walk_next(s, i, d);
	}
}

/* " name T (P%)" into the totals line; "sep" before it. */
static void put_share(struct wc_svg *s, const char *sep, const char *name,
		      uint64_t us, uint64_t total)
{
	char t[32], p[32];

	fmt_time(t, sizeof(t), us);
	fmt_pct(p, sizeof(p), us, total, 1);
	putf(s, "%s%s %s (%s)", sep, name, t, p);
}

static void put_totals(struct wc_svg *s)
{
	static const char *const reason[K_NKINDS] = {
		[K_RUNQ] = "run queue",
		[K_SLEEP] = "sleep",
		[K_IO] = "I/O",
		[K_OFF] = "other",
	};
	uint64_t kt[K_NKINDS] = {0}, total = s->nodes[0].value, off, marked;
	char t[32];
	size_t i;
	int k;

	for (i = 1; i < s->nnodes; i++)
		if (s->nodes[i].flags & F_MARKER)
			kt[s->nodes[i].kind] += s->nodes[i].value;
	off = kt[K_RUNQ] + kt[K_SLEEP] + kt[K_IO] + kt[K_OFF];
	marked = kt[K_ON] + off;
	fmt_time(t, sizeof(t), total);
	putf(s, "Total %s of thread time", t);
	if (marked == 0)
		return;
	put_share(s, ": ", "on-CPU", kt[K_ON], total);
	put_share(s, ", ", "off-CPU", off, total);
	for (k = K_RUNQ, i = 0; k < K_NKINDS; k++) {
		if (!kt[k])
			continue;
		fmt_time(t, sizeof(t), kt[k]);
		putf(s, "%s%s %s", i++ ? ", " : " = ", reason[k], t);
	}
	if (total > marked)
		put_share(s, ", ", "unmarked", total - marked, total);
}

/* The script (zoom, reset, search, hover details; geometry from the data-
 * attributes, so the rounding of the drawn px never adds up) and the
 * style: wc_flame.js and wc_flame.css, embedded at build time. */
static const char script[] = {
#include "render/wc_flame.js.inc"
};

static const char style[] = {
#include "render/wc_flame.css.inc"
};

static void put_head(struct wc_svg *s, unsigned height)
{
	unsigned w = s->width;

	put_str(s,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n");
	putf(s,
	     "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
	     "width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
	     "onload=\"init(evt)\">\n",
	     w, height, w, height);
	put_str(s, "<style type=\"text/css\"><![CDATA[\n");
	put_str(s, style);
	put_str(s, "]]></style>\n<script type=\"text/ecmascript\"><![CDATA[\n");
	put_str(s, script);
	put_str(s, "]]></script>\n");
	putf(s,
	     "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" "
	     "fill=\"#f6f6f2\"/>\n",
	     w, height);
	put_str(s, "<text id=\"title\" x=\"");
	put_px(s, w * 50u);
	put_str(s, "\" y=\"24\">");
	put_esc(s, s->title, strlen(s->title));
	put_str(s, "</text>\n<text id=\"subtitle\" x=\"");
	put_px(s, w * 50u);
	put_str(s, "\" y=\"44\">");
	put_esc(s, s->subtitle, strlen(s->subtitle));
	put_str(s, "</text>\n<text id=\"totals\" x=\"");
	put_px(s, w * 50u);
	put_str(s, "\" y=\"62\">");
	put_totals(s);
	putf(s,
	     "</text>\n<text id=\"reset\" class=\"btn dim\" x=\"%u\" "
	     "y=\"24\">Reset Zoom</text>\n"
	     "<text id=\"search\" class=\"btn\" x=\"%u\" y=\"24\">Search</text>\n"
	     "<text id=\"details\" x=\"%u\" y=\"%u\"> </text>\n"
	     "<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n",
	     XPAD, w - XPAD, XPAD, height - 10, w - XPAD, height - 10);
}

ssize_t wc_svg_emit(struct wc_svg *s, wc_svg_out_fn out, void *ctx)
{
	uint64_t total;
	unsigned depth = 0, height;

	if (!s || !out)
		return -1;
	s->out = out;
	s->ctx = ctx;
	s->out_err = false;
	s->out_len = 0;
	s->out_total = 0;
	s->st.drawn = 0;
	total = s->nodes[0].value;
	sort_children(s);
	if (total)
		depth = layout(s);
	else
		depth = 1; /* room for the "no samples" line */
	height = TOP_H + (depth + 1) * FRAME_H + BOTTOM_H;
	put_head(s, height);
	putf(s,
	     "<g id=\"frames\" data-width=\"%u\" data-xpad=\"%u\" "
	     "data-total=\"%llu\">\n",
	     s->width - 2 * XPAD, XPAD, (unsigned long long)total);
	if (total)
		put_frames(s, height);
	put_str(s, "</g>\n");
	if (!total)
		putf(s,
		     "<text id=\"nosamples\" x=\"%u\" y=\"%u\">no samples"
		     "</text>\n",
		     s->width / 2, TOP_H + FRAME_H + 12);
	put_str(s, "</svg>\n");
	out_flush(s);
	s->st.out_bytes = s->out_total;
	return s->out_err ? -1 : (ssize_t)s->out_total;
}
