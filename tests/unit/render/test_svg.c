/*
 * test_svg.c - the flame graph renderer, checked on its own output: every
 * SVG written is parsed back (frames' data-value/data-x against their rect
 * x/width, each frame inside its parent, siblings by name), checked for
 * well-formed XML by a small checker here and by xmllint when it is
 * installed; plus totals, time units, escaping, colour families, kernel
 * shade, bounds, malformed lines, determinism and the cost of 10k lines.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "render/wc_svg.h"

#define FULL_PX 1180.0 /* default width 1200 less 10 px each side */
#define XPAD_PX 10.0
#define FRAME_H 16.0

/* ---- a sink for the file ---- */

struct sink {
	char *buf;
	size_t len, cap;
	int fail_after; /* calls before out fails; -1 = never */
	int calls;
};

static int sink_out(void *ctx, const char *buf, size_t len)
{
	struct sink *s = ctx;

	if (s->fail_after >= 0 && s->calls >= s->fail_after)
		return -1;
	s->calls++;
	if (s->len + len + 1 > s->cap) {
		s->cap = (s->len + len + 1) * 2;
		s->buf = realloc(s->buf, s->cap);
	}
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
	s->buf[s->len] = '\0';
	return 0;
}

/* Emit into a fresh string (caller frees); NULL if emit failed. */
static char *emit(struct wc_svg *g)
{
	struct sink s = {.fail_after = -1};
	ssize_t n;

	sink_out(&s, "", 0);
	n = wc_svg_emit(g, sink_out, &s);
	if (n < 0 || (size_t)n != s.len) {
		free(s.buf);
		return NULL;
	}
	return s.buf;
}

static struct wc_svg *from_lines(const char *const *lines, size_t n)
{
	struct wc_svg *g = wc_svg_new(NULL);
	size_t i;

	for (i = 0; g && i < n; i++)
		wc_svg_add_line(g, lines[i], strlen(lines[i]));
	return g;
}

static char *render(const char *const *lines, size_t n)
{
	struct wc_svg *g = from_lines(lines, n);
	char *out = g ? emit(g) : NULL;

	wc_svg_free(g);
	return out;
}

#define NLINES(a) (sizeof(a) / sizeof((a)[0]))

/* ---- well-formed XML: a small checker, and xmllint when installed ---- */

static bool is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == ':' ||
	       c == '.';
}

/* '&' must open one of the entities the renderer writes. */
static bool entity_ok(const char *p)
{
	static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;",
					   "&#39;"};
	size_t i;

	for (i = 0; i < NLINES(ents); i++)
		if (strncmp(p, ents[i], strlen(ents[i])) == 0)
			return true;
	return false;
}

/* Text and attribute bytes: no raw '<', known entities, no control byte
 * other than tab and newline. */
static bool chars_ok(const char *p, const char *end)
{
	for (; p < end; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '<' || (c < 0x20 && c != '\n' && c != '\t') ||
		    c == 0x7f)
			return false;
		if (c == '&' && !entity_ok(p))
			return false;
	}
	return true;
}

/* One start or end tag at p (after '<'); pushes or pops the stack. */
static const char *tag_ok(const char *p, const char **stack, size_t *depth)
{
	bool end = *p == '/';
	const char *name = p += end;
	size_t n;

	while (is_name_char(*p))
		p++;
	n = (size_t)(p - name);
	if (n == 0)
		return NULL;
	for (;;) {
		const char *an, *q;

		while (*p == ' ' || *p == '\n')
			p++;
		if (*p == '>' || (*p == '/' && p[1] == '>'))
			break;
		if (end)
			return NULL;
		for (an = p; is_name_char(*p); p++)
			;
		if (p == an || p[0] != '=' || p[1] != '"')
			return NULL;
		q = strchr(p + 2, '"');
		if (!q || !chars_ok(p + 2, q))
			return NULL;
		p = q + 1;
		if (*p != ' ' && *p != '>' && *p != '/' && *p != '\n')
			return NULL;
	}
	if (end) {
		if (*depth == 0 || strncmp(stack[*depth - 1], name, n) != 0 ||
		    is_name_char(stack[*depth - 1][n]))
			return NULL;
		(*depth)--;
	} else if (*p == '>') {
		if (*depth == 64)
			return NULL;
		stack[(*depth)++] = name;
	}
	return p + (*p == '/' ? 2 : 1);
}

static bool xml_balanced(const char *doc)
{
	const char *stack[64], *p = doc, *lt;
	size_t depth = 0;
	bool root_seen = false;

	if (strncmp(p, "<?xml ", 6) != 0 || !(p = strstr(p, "?>")))
		return false;
	for (p += 2; *p; p = lt) {
		lt = strchr(p, '<');
		if (!lt)
			lt = p + strlen(p);
		if (!chars_ok(p, lt) ||
		    (depth == 0 && strspn(p, "\n") != (size_t)(lt - p)))
			return false;
		if (!*lt)
			break;
		if (strncmp(lt, "<![CDATA[", 9) == 0) {
			if (depth == 0 || !(lt = strstr(lt, "]]>")))
				return false;
			lt += 3;
			continue;
		}
		if (depth == 0 && root_seen)
			return false;
		root_seen = true;
		if (!(lt = tag_ok(lt + 1, stack, &depth)))
			return false;
	}
	return root_seen && depth == 0;
}

static bool have_xmllint(void)
{
	static int have = -1;

	if (have < 0)
		have = system("command -v xmllint >/dev/null 2>&1") == 0;
	return have;
}

/* 1 if xmllint accepts doc, 0 if not, -1 if it could not be run. */
static int xmllint_ok(const char *doc, bool quiet)
{
	char path[] = "/tmp/test_svg.XXXXXX", cmd[128];
	size_t len = strlen(doc);
	int fd = mkstemp(path), rc;

	if (fd < 0)
		return -1;
	if (write(fd, doc, len) != (ssize_t)len) {
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s%s", path,
		 quiet ? " 2>/dev/null" : "");
	rc = system(cmd);
	unlink(path);
	return rc == 0;
}

/* Well-formed by the checker here, and by xmllint if it is there (the
 * test_xmllint case says loudly when it is not). */
static bool well_formed(const char *doc)
{
	if (!doc || !xml_balanced(doc))
		return false;
	return !have_xmllint() || xmllint_ok(doc, false) == 1;
}

/* ---- reading frames back ---- */

/* strstr by hand: under ASan, strstr measures the whole haystack on every
 * call, and a frame at a time through a 20 MB file that is quadratic. */
static const char *seek(const char *p, const char *needle)
{
	size_t i;

	for (; *p; p++) {
		for (i = 0; needle[i] && p[i] == needle[i]; i++)
			;
		if (!needle[i])
			return p;
	}
	return NULL;
}

struct frame {
	char name[256];
	char title[320];
	char text[256];
	uint64_t value, x;
	double rx, ry, rw;
	unsigned rgb[3];
};

/* The value of attribute name in [p, end), unescaped, into buf. */
static bool attr(const char *p, const char *end, const char *name, char *buf,
		 size_t n)
{
	char key[64];
	const char *v, *q;
	size_t o = 0;

	snprintf(key, sizeof(key), " %s=\"", name);
	v = seek(p, key);
	if (!v || v >= end)
		return false;
	v += strlen(key);
	q = strchr(v, '"');
	if (!q || q > end)
		return false;
	while (v < q && o + 1 < n) {
		static const char *const ents[][2] = {
			{"&amp;", "&"},	  {"&lt;", "<"},  {"&gt;", ">"},
			{"&quot;", "\""}, {"&#39;", "'"},
		};
		size_t i;

		for (i = 0; i < NLINES(ents); i++) {
			size_t el = strlen(ents[i][0]);

			if (strncmp(v, ents[i][0], el) == 0) {
				buf[o++] = ents[i][1][0];
				v += el;
				break;
			}
		}
		if (i == NLINES(ents))
			buf[o++] = *v++;
	}
	buf[o] = '\0';
	return true;
}

/* The text between open and close after p, raw, into buf. */
static bool inner(const char *p, const char *open, const char *close, char *buf,
		  size_t n)
{
	const char *a = seek(p, open), *b;

	if (!a)
		return false;
	a = strchr(a, '>');
	if (!a)
		return false;
	b = seek(++a, close);
	if (!b || (size_t)(b - a) >= n)
		return false;
	memcpy(buf, a, (size_t)(b - a));
	buf[b - a] = '\0';
	return true;
}

/* All drawn frames, in the order written (pre-order); *n of them. */
static struct frame *frames_of(const char *doc, size_t *n)
{
	const char *p = doc, *tag = "<g class=\"frame\"";
	struct frame *fr = NULL;
	size_t cap = 0;
	char v[64];

	*n = 0;
	while ((p = seek(p, tag))) {
		const char *end = seek(p, "</g>");
		const char *rect = seek(p, "<rect");
		struct frame *f;

		if (!end || !rect)
			break;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			fr = realloc(fr, cap * sizeof(*fr));
		}
		f = &fr[(*n)++];
		memset(f, 0, sizeof(*f));
		attr(p, end, "data-name", f->name, sizeof(f->name));
		attr(p, end, "data-value", v, sizeof(v));
		f->value = strtoull(v, NULL, 10);
		attr(p, end, "data-x", v, sizeof(v));
		f->x = strtoull(v, NULL, 10);
		attr(rect, end, "x", v, sizeof(v));
		f->rx = strtod(v, NULL);
		attr(rect, end, "y", v, sizeof(v));
		f->ry = strtod(v, NULL);
		attr(rect, end, "width", v, sizeof(v));
		f->rw = strtod(v, NULL);
		attr(rect, end, "fill", v, sizeof(v));
		sscanf(v, "rgb(%u,%u,%u)", &f->rgb[0], &f->rgb[1], &f->rgb[2]);
		inner(p, "<title", "</title>", f->title, sizeof(f->title));
		inner(rect, "<text", "</text>", f->text, sizeof(f->text));
		p = end;
	}
	return fr;
}

static const struct frame *find(const struct frame *fr, size_t n,
				const char *name, size_t nth)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(fr[i].name, name) == 0 && nth-- == 0)
			return &fr[i];
	return NULL;
}

static bool near(double a, double b, double tol)
{
	return a - b <= tol && b - a <= tol;
}

/*
 * The geometry of a whole file: the root spans the full width; every
 * width is its value's share of it (to the 0.01 px written); every frame
 * sits one row above its parent, inside its parent's px and us; children
 * add up to at most their parent; siblings run left to right by name.
 * Pre-order lets the last frame seen one row down be the parent.
 * Returns the number of frames checked, -1 at the first fault.
 */
static long check_geometry(const char *doc)
{
	size_t n, i, d;
	struct frame *fr = frames_of(doc, &n);
	const struct frame *last[WC_SVG_MAX_DEPTH + 2] = {0};
	uint64_t kids[WC_SVG_MAX_DEPTH + 2] = {0};
	double total, root_y;
	long ok = (long)n;

	if (n == 0) {
		free(fr);
		return 0;
	}
	total = (double)fr[0].value;
	root_y = fr[0].ry;
	if (strcmp(fr[0].name, "all") || !near(fr[0].rw, FULL_PX, 1e-9) ||
	    !near(fr[0].rx, XPAD_PX, 1e-9))
		ok = -1;
	for (i = 0; ok >= 0 && i < n; i++) {
		const struct frame *f = &fr[i], *p;

		d = (size_t)((root_y - f->ry) / FRAME_H + 0.5);
		if (d > WC_SVG_MAX_DEPTH + 1 ||
		    !near(f->rw, f->value / total * FULL_PX, 0.011) ||
		    !near(f->rx, XPAD_PX + f->x / total * FULL_PX, 0.006)) {
			printf("  frame %s: width %.2f x %.2f for %llu us\n",
			       f->name, f->rw, f->rx,
			       (unsigned long long)f->value);
			ok = -1;
			break;
		}
		last[d] = f;
		kids[d] = 0;
		if (d == 0)
			continue;
		p = last[d - 1];
		if (!p || f->x < p->x || f->x + f->value > p->x + p->value ||
		    f->rw > p->rw || f->rx < p->rx ||
		    f->rx + f->rw > p->rx + p->rw + 1e-9) {
			printf("  frame %s not inside its parent\n", f->name);
			ok = -1;
			break;
		}
		kids[d - 1] += f->value;
		if (kids[d - 1] > p->value) {
			printf("  children of %s add up past it\n", p->name);
			ok = -1;
		}
		/* the previous sibling, if any, is last[d] before f */
		if (i > 0 && fr[i - 1].ry <= f->ry) {
			const struct frame *prev = NULL;
			size_t j;

			for (j = i; j-- > 0 && fr[j].ry <= f->ry;)
				if (fr[j].ry == f->ry) {
					prev = &fr[j];
					break;
				}
			/* a gap is a sibling too narrow to draw */
			if (prev && prev->x >= p->x &&
			    (prev->x + prev->value > f->x ||
			     strcmp(prev->name, f->name) >= 0)) {
				printf("  %s then %s: not by name\n",
				       prev->name, f->name);
				ok = -1;
			}
		}
	}
	free(fr);
	return ok;
}

/* The text of the element with id, raw, into buf. */
static bool text_of(const char *doc, const char *id, char *buf, size_t n)
{
	char key[64];

	snprintf(key, sizeof(key), "<text id=\"%s\"", id);
	return inner(doc, key, "</text>", buf, n);
}

/* ---- colours ---- */

static double lightness(const unsigned rgb[3])
{
	unsigned mx = rgb[0], mn = rgb[0], i;

	for (i = 1; i < 3; i++) {
		mx = rgb[i] > mx ? rgb[i] : mx;
		mn = rgb[i] < mn ? rgb[i] : mn;
	}
	return (mx + mn) / 510.0;
}

/* HSL hue in degrees; -1 for a grey. */
static double hue(const unsigned c[3])
{
	double r = c[0], g = c[1], b = c[2], mx = r, mn = r, h;

	mx = g > mx ? g : mx;
	mx = b > mx ? b : mx;
	mn = g < mn ? g : mn;
	mn = b < mn ? b : mn;
	if (mx == mn)
		return -1;
	if (mx == r)
		h = 60 * (g - b) / (mx - mn);
	else if (mx == g)
		h = 60 * (2 + (b - r) / (mx - mn));
	else
		h = 60 * (4 + (r - g) / (mx - mn));
	return h < 0 ? h + 360 : h;
}

/* reds, oranges, yellows */
static bool warm(const unsigned c[3])
{
	double h = hue(c);

	return h >= 0 && h <= 60;
}

/* greens, teals, blues, purples */
static bool cool(const unsigned c[3])
{
	double h = hue(c);

	return h >= 140 && h <= 300;
}

static bool grey(const unsigned c[3])
{
	return c[0] == c[1] && c[1] == c[2];
}

/* ---- the tests ---- */

static const char *const demo[] = {
	"web;[on-cpu];main;start_thread;burn_cpu 4500000",
	"web;[on-cpu];main;start_thread;burn_cpu;apic_timer_interrupt_[k] "
	"20000",
	"web;[off-cpu sleep];main;start_thread;sleep_a_while;clock_nanosleep;"
	"do_nanosleep_[k];schedule_[k] 5000000",
	"web;[off-cpu io];main;start_thread;wait_for_disk;fsync;"
	"io_schedule_[k] 1600000",
	"web;[off-cpu runqueue];main;start_thread;burn_cpu;schedule_[k] "
	"1200000",
	"db;[on-cpu];query;parse 30000",
	"db;[off-cpu sleep];[waits below threshold] 87",
};

static void test_geometry(void)
{
	char *out = render(demo, NLINES(demo));
	size_t n;
	struct frame *fr = frames_of(out ? out : "", &n);
	const struct frame *all, *burn, *web, *db;

	CHECK(out != NULL);
	CHECK(well_formed(out));
	CHECK(check_geometry(out) > 20);
	all = find(fr, n, "all", 0);
	web = find(fr, n, "web", 0);
	db = find(fr, n, "db", 0);
	burn = find(fr, n, "burn_cpu", 1); /* on-CPU sorts after off-CPU */
	CHECK(all && web && db && burn);
	if (all && web && db && burn) {
		CHECK(all->value == 12350087);
		CHECK(web->value == 12320000 && db->value == 30087);
		/* db before web: by name, not by size */
		CHECK(db->rx < web->rx);
		CHECK(burn->value == 4520000);
		CHECK(near(burn->rw / all->rw, 4520000.0 / 12350087, 1e-4));
		CHECK_STR_HAS(burn->title, "burn_cpu (4.52 s, 36.60%)");
		CHECK(strcmp(burn->text, "burn_cpu") == 0);
	}
	/* 87 us is 0.008 px: not drawn, but counted in db and the total */
	CHECK(find(fr, n, "[waits below threshold]", 0) == NULL);
	CHECK(find(fr, n, "[off-cpu sleep]", 0) != NULL);
	CHECK_STR_HAS(out, "data-width=\"1180\" data-xpad=\"10\" "
			   "data-total=\"12350087\"");
	free(fr);
	free(out);
}

static void test_totals(void)
{
	struct wc_svg_opts o = {
		.title = "wallclock: host web-1",
		.subtitle = "2026-11-22 17:00:00 to 17:01:00 UTC",
	};
	struct wc_svg *g = wc_svg_new(&o);
	char *out, buf[512];
	size_t i;

	for (i = 0; i < NLINES(demo); i++)
		CHECK(wc_svg_add_line(g, demo[i], strlen(demo[i])) == 0);
	out = emit(g);
	CHECK(text_of(out, "title", buf, sizeof(buf)));
	CHECK(strcmp(buf, "wallclock: host web-1") == 0);
	CHECK(text_of(out, "subtitle", buf, sizeof(buf)));
	CHECK(strcmp(buf, "2026-11-22 17:00:00 to 17:01:00 UTC") == 0);
	CHECK(text_of(out, "totals", buf, sizeof(buf)));
	CHECK(strcmp(buf, "Total 12.4 s of thread time: "
			  "on-CPU 4.55 s (36.8%), off-CPU 7.8 s (63.2%) = "
			  "run queue 1.2 s, sleep 5 s, I/O 1.6 s") == 0);
	free(out);
	wc_svg_free(g);

	/* no markers (a perf file): the total alone */
	g = wc_svg_new(NULL);
	CHECK(wc_svg_add_line(g, "a;b 2500", 8) == 0);
	out = emit(g);
	CHECK(text_of(out, "totals", buf, sizeof(buf)));
	CHECK(strcmp(buf, "Total 2.5 ms of thread time") == 0);
	CHECK(text_of(out, "title", buf, sizeof(buf)));
	CHECK(strcmp(buf, "Flame Graph") == 0);
	free(out);
	wc_svg_free(g);
}

/* Time units to three significant digits, seen in the frames' titles. */
static void test_time_units(void)
{
	static const struct {
		uint64_t us;
		const char *want;
	} cases[] = {
		{1, "1 us"},
		{87, "87 us"},
		{999, "999 us"},
		{1000, "1 ms"},
		{1234, "1.23 ms"},
		{1205, "1.21 ms"},
		{9995, "10 ms"},
		{12345, "12.3 ms"},
		{450000, "450 ms"},
		{999499, "999 ms"},
		{999500, "1 s"},
		{1500000, "1.5 s"},
		{12345678, "12.3 s"},
		{987654321, "988 s"},
		{3600000000, "3600 s"},
	};
	size_t i;

	for (i = 0; i < NLINES(cases); i++) {
		struct wc_svg *g = wc_svg_new(NULL);
		const char *fr[] = {"x"};
		char *out, want[64];

		CHECK(wc_svg_add(g, fr, 1, cases[i].us) == 0);
		out = emit(g);
		snprintf(want, sizeof(want), "<title>x (%s, 100.00%%)</title>",
			 cases[i].want);
		CHECK_STR_HAS(out, want);
		free(out);
		wc_svg_free(g);
	}
}

static void test_escaping(void)
{
	static const char *const lines[] = {
		"app;[on-cpu];std::vector<int>& 10",
		"app;[on-cpu];\"quotes\" 'single' 20",
		"app;[on-cpu];ctl\x01\x1f\x7f\tbyte 30",
		"app;[on-cpu];bad\xff\xc3utf8 \xe2\x82 40",
		"app;[on-cpu];caf\xc3\xa9 50",
		"app;[on-cpu];   ;x 60", /* empty frame */
		"app;[on-cpu];<script>alert(1)</script> 70",
		"app;[on-cpu];a]]>b 80",
	};
	char *out = render(lines, NLINES(lines));
	size_t n;
	struct frame *fr = frames_of(out ? out : "", &n);

	CHECK(out != NULL);
	CHECK(well_formed(out));
	CHECK_STR_HAS(out, "data-name=\"std::vector&lt;int&gt;&amp;\"");
	CHECK_STR_HAS(out, "<title>std::vector&lt;int&gt;&amp; (");
	CHECK_STR_HAS(out, "data-name=\"&quot;quotes&quot; &#39;single&#39;\"");
	CHECK_STR_HAS(out, "data-name=\"ctl????byte\"");
	CHECK_STR_HAS(out, "data-name=\"caf\xc3\xa9\"");
	CHECK_STR_HAS(out, "data-name=\"[empty]\"");
	CHECK_STR_HAS(out, "&lt;script&gt;alert(1)&lt;/script&gt;");
	CHECK_STR_HAS(out, "data-name=\"a]]&gt;b\"");
	CHECK(strstr(out, "<int>") == NULL &&
	      strstr(out, "<script>alert") == NULL);
	CHECK(find(fr, n, "std::vector<int>&", 0) != NULL);
	CHECK(find(fr, n, "\"quotes\" 'single'", 0) != NULL);
	CHECK(find(fr, n, "bad??utf8 ??", 0) != NULL);
	CHECK(check_geometry(out) > 0);
	free(fr);
	free(out);

	/* invalid UTF-8 through wc_svg_add, and a cut mid-character */
	{
		struct wc_svg *g = wc_svg_new(&(struct wc_svg_opts){
			.title = "t\x01<&>\xff", .subtitle = "s\"'"});
		char big[WC_SVG_MAX_FRAME + 8];
		const char *fr2[] = {"bad\xff\xc3utf8", "\xed\xa0\x80sur",
				     "\xc0\xafover", big};

		/* a two-byte character across the cut: left out whole */
		memset(big, 'a', sizeof(big));
		memcpy(big + WC_SVG_MAX_FRAME - 1, "\xc3\xa9", 2);
		big[sizeof(big) - 1] = '\0';
		CHECK(wc_svg_add(g, fr2, 4, 10) == 0);
		out = emit(g);
		CHECK(well_formed(out));
		CHECK_STR_HAS(out, "data-name=\"bad??utf8\"");
		CHECK_STR_HAS(out, "data-name=\"???sur\"");
		CHECK_STR_HAS(out, "data-name=\"??over\"");
		CHECK_STR_HAS(out, "<text id=\"title\" x=\"600.00\" "
				   "y=\"24\">t?&lt;&amp;&gt;?</text>");
		CHECK_STR_HAS(out, ">s&quot;&#39;</text>");
		CHECK_STR_HAS(out, "aaaa\" data-value=\"10\"");
		CHECK(strstr(out, "a?") == NULL &&
		      strstr(out, "a\xc3") == NULL);
		{
			struct wc_svg_stats st;

			wc_svg_get_stats(g, &st);
			CHECK(st.truncated == 1);
		}
		free(out);
		wc_svg_free(g);
	}
}

static void test_empty(void)
{
	struct wc_svg *g = wc_svg_new(NULL);
	struct wc_svg_stats st;
	char *out;
	size_t n;
	struct frame *fr;

	out = emit(g);
	CHECK(out != NULL);
	CHECK(well_formed(out));
	CHECK_STR_HAS(out, ">no samples</text>");
	CHECK_STR_HAS(out, "data-total=\"0\"");
	CHECK_STR_HAS(out, "<text id=\"reset\"");
	CHECK_STR_HAS(out, "<text id=\"search\"");
	CHECK_STR_HAS(out, "<text id=\"matched\"");
	fr = frames_of(out, &n);
	CHECK(n == 0);
	free(fr);
	free(out);

	/* only malformed, zero and blank lines: still nothing to draw */
	CHECK(wc_svg_add_line(g, "junk", 4) == -1);
	CHECK(wc_svg_add_line(g, "a;b 0", 5) == 0);
	CHECK(wc_svg_add_line(g, "\n", 1) == 0);
	out = emit(g);
	CHECK_STR_HAS(out, ">no samples</text>");
	CHECK(well_formed(out));
	wc_svg_get_stats(g, &st);
	CHECK(st.lines == 2 && st.bad_lines == 1 && st.nodes == 1);
	CHECK(st.drawn == 0 && st.total_us == 0);
	free(out);
	wc_svg_free(g);
}

static void test_one_frame(void)
{
	static const char *const lines[] = {"solo 42"};
	char *out = render(lines, 1);
	size_t n;
	struct frame *fr = frames_of(out ? out : "", &n);

	CHECK(well_formed(out));
	CHECK(n == 2);
	if (n == 2) {
		CHECK(strcmp(fr[1].name, "solo") == 0 && fr[1].value == 42);
		CHECK(fr[1].rw == FULL_PX && fr[0].rw == FULL_PX);
		CHECK(fr[1].ry == fr[0].ry - FRAME_H);
		CHECK(grey(fr[1].rgb)); /* the group */
	}
	CHECK(check_geometry(out) == 2);
	CHECK_STR_HAS(out, "<title>solo (42 us, 100.00%)</title>");
	free(fr);
	free(out);
}

static void test_malformed(void)
{
	static const char *const bad[] = {
		"nospace", "a;b 12x", "a;b ",
		" 5",	   "   7",    "a;b 18446744073709551616", /* 2^64 */
		"a;b -5",  "a;b 1.5", "a;b 5 ",
	};
	struct wc_svg *g = wc_svg_new(NULL);
	struct wc_svg_stats st;
	const char *fr[] = {"a", NULL};
	size_t i;
	char *out;

	for (i = 0; i < NLINES(bad); i++)
		CHECK(wc_svg_add_line(g, bad[i], strlen(bad[i])) == -1);
	CHECK(wc_svg_add_line(g, "a;b 3\n", 6) == 0);
	CHECK(wc_svg_add_line(g, "a;b  4\r\n", 8) == 0);
	CHECK(wc_svg_add_line(g, "a b;c d 5", 9) == 0); /* spaces in frames */
	CHECK(wc_svg_add_line(g, "", 0) == 0);
	CHECK(wc_svg_add_line(g, "\r\n", 2) == 0);
	CHECK(wc_svg_add_line(g, "a;b 18446744073709551615", 24) == -1);
	CHECK(wc_svg_add(g, fr, 0, 5) == -1);
	CHECK(wc_svg_add(g, fr, 2, 6) == 0); /* NULL frame: "[empty]" */
	CHECK(wc_svg_add_line(NULL, "a 1", 3) == -1);
	CHECK(wc_svg_add_line(g, NULL, 3) == -1);
	CHECK(wc_svg_add(g, NULL, 1, 1) == -1);
	CHECK(wc_svg_emit(g, NULL, NULL) == -1);
	wc_svg_get_stats(g, &st);
	/* the 2^64-1 line is well-formed but would overflow the total */
	CHECK(st.bad_lines == NLINES(bad) + 2);
	CHECK(st.lines == NLINES(bad) + 3 + 1 + 2);
	CHECK(st.total_us == 3 + 4 + 5 + 6);
	out = emit(g);
	CHECK(well_formed(out));
	CHECK_STR_HAS(out, "data-name=\"a b\" data-value=\"5\"");
	CHECK_STR_HAS(out, "data-name=\"c d\" data-value=\"5\"");
	CHECK_STR_HAS(out, "data-name=\"a\" data-value=\"13\"");
	CHECK_STR_HAS(out, "data-name=\"b\" data-value=\"7\"");
	CHECK_STR_HAS(out, "data-name=\"[empty]\" data-value=\"6\"");
	CHECK(check_geometry(out) == 6);
	free(out);
	wc_svg_free(g);
}

static void test_determinism(void)
{
	static const char *const lines[] = {
		"b;[on-cpu];x;y 10",	 "a;[on-cpu];x 5",
		"b;[on-cpu];x;z 10",	 "b;[off-cpu io];x;y 7",
		"a;[on-cpu];x;y;z 3",	 "b;[on-cpu];x;y 1",
		"c;[off-cpu sleep];q 9", "a;[on-cpu];w 2",
	};
	const char *rev[NLINES(lines)];
	struct wc_svg *g;
	char *a, *b, *c;
	size_t i;

	for (i = 0; i < NLINES(lines); i++)
		rev[i] = lines[NLINES(lines) - 1 - i];
	g = from_lines(lines, NLINES(lines));
	a = emit(g);
	b = emit(g); /* emit leaves the tree as it was */
	wc_svg_free(g);
	c = render(rev, NLINES(rev));
	CHECK(a && b && c);
	CHECK(a && b && strcmp(a, b) == 0);
	CHECK(a && c && strcmp(a, c) == 0);
	CHECK(check_geometry(a) > 0);
	free(a);
	free(b);
	free(c);
}

static void test_colour_families(void)
{
	static const char *const lines[] = {
		"app;[on-cpu];main;work 100",
		"app;[off-cpu sleep];main;work 100",
		"app;[off-cpu runqueue];main;work 100",
		"app;[off-cpu io];main;work 100",
		"app;[off-cpu]; main;work 100",
		"db;[on-cpu];main;work 100",
		"perf;main;work 100", /* no marker */
	};
	char *out = render(lines, NLINES(lines)), *out2;
	size_t n, n2;
	struct frame *fr = frames_of(out ? out : "", &n), *fr2;
	/* frames named "work", in name order of their paths: app's
	 * [off-cpu io], [off-cpu runqueue], [off-cpu sleep], [off-cpu],
	 * [on-cpu], then db's, then perf's */
	const struct frame *io = find(fr, n, "work", 0);
	const struct frame *rq = find(fr, n, "work", 1);
	const struct frame *sl = find(fr, n, "work", 2);
	const struct frame *off = find(fr, n, "work", 3);
	const struct frame *on = find(fr, n, "work", 4);
	const struct frame *on_db = find(fr, n, "work", 5);
	const struct frame *none = find(fr, n, "work", 6);

	CHECK(well_formed(out));
	CHECK(io && rq && sl && off && on && on_db && none);
	if (!(io && rq && sl && off && on && on_db && none))
		goto out;
	CHECK(warm(on->rgb));
	CHECK(hue(on->rgb) >= 0 && on->rgb[0] > on->rgb[2] + 60);
	CHECK(hue(sl->rgb) >= 195 && hue(sl->rgb) <= 235); /* blue */
	CHECK(hue(rq->rgb) >= 255 && hue(rq->rgb) <= 295); /* purple */
	CHECK(hue(io->rgb) >= 155 && hue(io->rgb) <= 190); /* teal */
	CHECK(cool(off->rgb));
	CHECK(warm(none->rgb));
	/* reasons tell apart */
	CHECK(memcmp(sl->rgb, rq->rgb, sizeof(sl->rgb)) != 0);
	CHECK(memcmp(sl->rgb, io->rgb, sizeof(sl->rgb)) != 0);
	CHECK(memcmp(rq->rgb, io->rgb, sizeof(sl->rgb)) != 0);
	/* same name, same family: same colour, in any group and any file */
	CHECK(memcmp(on->rgb, on_db->rgb, sizeof(on->rgb)) == 0);
	/* group, marker and root grey */
	CHECK(grey(find(fr, n, "all", 0)->rgb));
	CHECK(grey(find(fr, n, "app", 0)->rgb));
	CHECK(grey(find(fr, n, "[on-cpu]", 0)->rgb));
	CHECK(grey(find(fr, n, "[off-cpu sleep]", 0)->rgb));
	/* main sits right under the marker: coloured, not grey */
	CHECK(warm(find(fr, n, "main", 4)->rgb));
	{
		static const char *const other[] = {"zz;[on-cpu];x;work 5"};

		out2 = render(other, 1);
		fr2 = frames_of(out2 ? out2 : "", &n2);
		CHECK(find(fr2, n2, "work", 0) != NULL);
		if (find(fr2, n2, "work", 0))
			CHECK(memcmp(find(fr2, n2, "work", 0)->rgb, on->rgb,
				     sizeof(on->rgb)) == 0);
		free(fr2);
		free(out2);
	}
	/* different names, different shades (a hash, not one colour) */
	CHECK(memcmp(find(fr, n, "main", 4)->rgb, on->rgb, sizeof(on->rgb)) !=
	      0);
out:
	free(fr);
	free(out);
}

static void test_kernel_shade(void)
{
	static const char *const lines[] = {
		"app;[on-cpu];u1;u2;u3;u4;k1_[k];k2_[k];k3_[k] 100",
		"app;[off-cpu sleep];u1;u2;u3;u4;k1_[k];k2_[k];k3_[k] 100",
		"app;[off-cpu io];u1;u2;u3;u4;k1_[k];k2_[k];k3_[k] 100",
		"app;[off-cpu runqueue];u1;u2;u3;u4;k1_[k];k2_[k];k3_[k] 100",
	};
	static const char *const user[] = {"u1", "u2", "u3", "u4"};
	static const char *const kern[] = {"k1_[k]", "k2_[k]", "k3_[k]"};
	char *out = render(lines, NLINES(lines));
	size_t n, fam, i;
	struct frame *fr = frames_of(out ? out : "", &n);

	CHECK(well_formed(out));
	for (fam = 0; fam < 4; fam++) {
		double umax = 0, kmin = 1;

		for (i = 0; i < NLINES(user); i++) {
			const struct frame *f = find(fr, n, user[i], fam);

			CHECK(f != NULL);
			if (f && lightness(f->rgb) > umax)
				umax = lightness(f->rgb);
		}
		for (i = 0; i < NLINES(kern); i++) {
			const struct frame *f = find(fr, n, kern[i], fam);

			CHECK(f != NULL);
			if (!f)
				continue;
			if (lightness(f->rgb) < kmin)
				kmin = lightness(f->rgb);
			/* paler, but still of its family */
			CHECK(fam == 3 ? warm(f->rgb) : cool(f->rgb));
		}
		if (!(kmin > umax + 0.1))
			printf("  family %zu: kernel %.2f, user %.2f\n", fam,
			       kmin, umax);
		CHECK(kmin > umax + 0.1);
	}
	free(fr);
	free(out);
}

/* Frames are bounded; what does not fit lands in the deepest frame that
 * did, so the total and every drawn width stay right. */
static void test_bounds(void)
{
	struct wc_svg_opts o = {.max_frames = 10};
	struct wc_svg *g = wc_svg_new(&o);
	struct wc_svg_stats st;
	char line[128], *out;
	const char *deep[WC_SVG_MAX_DEPTH + 10];
	size_t i, n;
	uint64_t want = 0;
	struct frame *fr;

	for (i = 0; i < 20; i++) {
		int len = snprintf(line, sizeof(line),
				   "g;[on-cpu];f%zu;leaf %zu", i, i + 1);

		CHECK(wc_svg_add_line(g, line, (size_t)len) == 0);
		want += i + 1;
	}
	wc_svg_get_stats(g, &st);
	CHECK(st.nodes == 10 && st.total_us == want);
	CHECK(st.nodes_merged == 20 - 3); /* f0 and its leaf fit, then f1 */
	out = emit(g);
	CHECK(well_formed(out));
	CHECK(check_geometry(out) == 10);
	CHECK_STR_HAS(out, "data-name=\"[on-cpu]\" data-value=\"210\"");
	CHECK_STR_HAS(out, "data-name=\"f3\" data-value=\"4\"");
	free(out);
	wc_svg_free(g);

	/* bytes: distinct long names until the budget says no */
	o = (struct wc_svg_opts){.max_bytes = 64 << 10};
	g = wc_svg_new(&o);
	want = 0;
	for (i = 0; i < 2000; i++) {
		char name[100];

		memset(name, 'n', sizeof(name));
		snprintf(name + 80, 20, "%zu", i);
		CHECK(wc_svg_add(g, (const char *const[]){"grp", name}, 2, 7) ==
		      0);
		want += 7;
	}
	wc_svg_get_stats(g, &st);
	CHECK(st.bytes <= 64 << 10 && st.nodes_merged > 0);
	CHECK(st.nodes > 100 && st.total_us == want);
	out = emit(g);
	CHECK(well_formed(out));
	CHECK(check_geometry(out) > 100);
	free(out);
	wc_svg_free(g);

	/* depth: the root-most WC_SVG_MAX_DEPTH frames are kept */
	g = wc_svg_new(NULL);
	for (i = 0; i < NLINES(deep); i++)
		deep[i] = i % 2 ? "odd" : "even";
	CHECK(wc_svg_add(g, deep, NLINES(deep), 5) == 0);
	wc_svg_get_stats(g, &st);
	CHECK(st.nodes == WC_SVG_MAX_DEPTH + 1 && st.truncated == 1);
	out = emit(g);
	fr = frames_of(out, &n);
	CHECK(n == WC_SVG_MAX_DEPTH + 1);
	CHECK(check_geometry(out) == WC_SVG_MAX_DEPTH + 1);
	CHECK(well_formed(out));
	free(fr);
	free(out);
	wc_svg_free(g);

	/* min_width_px: a narrower frame and what is above it not drawn */
	o = (struct wc_svg_opts){.min_width_px = 10};
	g = wc_svg_new(&o);
	CHECK(wc_svg_add_line(g, "a;big 990", 9) == 0);
	CHECK(wc_svg_add_line(g, "a;small;up 10", 13) == 0); /* 11.8 px */
	CHECK(wc_svg_add_line(g, "a;tiny;up 5", 11) == 0);   /* 5.9 px */
	out = emit(g);
	fr = frames_of(out, &n);
	CHECK(n == 5 && find(fr, n, "tiny", 0) == NULL);
	CHECK(find(fr, n, "up", 1) == NULL);
	CHECK(find(fr, n, "a", 0) && find(fr, n, "a", 0)->value == 1005);
	wc_svg_get_stats(g, &st);
	CHECK(st.drawn == 5 && st.nodes == 7);
	free(fr);
	free(out);
	wc_svg_free(g);
}

static void test_opts(void)
{
	struct wc_svg_opts o = {.width = 100};
	struct wc_svg *g;
	char *out;

	CHECK(wc_svg_new(&o) == NULL);
	o = (struct wc_svg_opts){.width = 20000};
	CHECK(wc_svg_new(&o) == NULL);
	o = (struct wc_svg_opts){.max_bytes = 1000};
	CHECK(wc_svg_new(&o) == NULL);
	o = (struct wc_svg_opts){.max_frames = (size_t)1 << 30};
	CHECK(wc_svg_new(&o) == NULL);
	o = (struct wc_svg_opts){.min_width_px = NAN};
	CHECK(wc_svg_new(&o) == NULL);
	o = (struct wc_svg_opts){.width = 800, .min_width_px = -1};
	g = wc_svg_new(&o);
	CHECK(g != NULL);
	CHECK(wc_svg_add_line(g, "a;b 1", 5) == 0);
	CHECK(wc_svg_add_line(g, "a;c 100000000", 13) == 0);
	out = emit(g);
	CHECK_STR_HAS(out, "width=\"800\" height=");
	CHECK_STR_HAS(out, "data-width=\"780\"");
	CHECK_STR_HAS(out, "data-name=\"b\""); /* 0.0000078 px, drawn */
	free(out);
	wc_svg_free(g);
	wc_svg_free(NULL);
}

static void test_out_failure(void)
{
	struct wc_svg *g = wc_svg_new(NULL);
	struct sink s = {.fail_after = 0};
	char *out;

	CHECK(wc_svg_add_line(g, "a;b 5", 5) == 0);
	CHECK(wc_svg_emit(g, sink_out, &s) == -1);
	CHECK(s.calls == 0);
	free(s.buf);
	out = emit(g);
	CHECK(out != NULL && well_formed(out));
	free(out);
	wc_svg_free(g);
}

/* The hooks a browser test drives, and the script's pieces. */
static void test_hooks(void)
{
	char *out = render(demo, NLINES(demo));

	CHECK_STR_HAS(out, "<g class=\"frame\" data-name=\"burn_cpu\" "
			   "data-value=\"4520000\" data-x=\"7830087\"><title>");
	CHECK_STR_HAS(out, "<text id=\"reset\" class=\"btn dim\"");
	CHECK_STR_HAS(out, "<text id=\"search\" class=\"btn\"");
	CHECK_STR_HAS(out, "<text id=\"matched\"");
	CHECK_STR_HAS(out, "<text id=\"details\"");
	CHECK_STR_HAS(out, "onload=\"init(evt)\"");
	CHECK_STR_HAS(out, "function zoom(g)");
	CHECK_STR_HAS(out, "function search(t)");
	CHECK_STR_HAS(out, "\"Matched: \"");
	/* self-contained: no link out of the file */
	CHECK(strstr(out, "href") == NULL && strstr(out, "src=") == NULL);
	CHECK(strstr(out, "http://") ==
	      strstr(out, "http://www.w3.org/2000/svg"));
	free(out);
}

static void test_xmllint(void)
{
	char *out;
	int rc;

	if (!have_xmllint())
		SKIP("xmllint not installed (apt-get install libxml2-utils): "
		     "only the built-in XML check ran");
	out = render(demo, NLINES(demo));
	rc = xmllint_ok(out, false);
	CHECK(rc == 1);
	/* and it catches what it should */
	CHECK(xmllint_ok("<?xml version=\"1.0\"?>\n<svg><g></svg>\n", true) ==
	      0);
	CHECK(!xml_balanced("<?xml version=\"1.0\"?>\n<svg><g></svg>\n"));
	CHECK(!xml_balanced("<?xml version=\"1.0\"?>\n<svg>a<b</svg>\n"));
	CHECK(!xml_balanced("<?xml version=\"1.0\"?>\n<svg>&x;</svg>\n"));
	free(out);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t rng_state = 1;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/*
 * nlines of a host's worth of stacks: 50 groups, 4 kinds, 10-30 frames.
 * Worst case, every frame past the fourth is drawn at random, so nearly
 * every line ends in a path of its own; otherwise a frame follows from its
 * parent and one in four branches, so stacks share prefixes as real ones
 * do.
 */
static char *make_lines(size_t nlines, bool worst, size_t *len)
{
	static const char *const words[] = {"main",
					    "start_thread",
					    "run",
					    "dispatch",
					    "handle",
					    "parse",
					    "read",
					    "write",
					    "poll",
					    "epoll_wait",
					    "malloc",
					    "free",
					    "memcpy",
					    "hash",
					    "lookup",
					    "std::map<int, int>::find",
					    "vfs_read_[k]",
					    "schedule_[k]",
					    "do_syscall_64_[k]",
					    "futex_wait_[k]"};
	static const char *const kinds[] = {"[on-cpu]", "[off-cpu sleep]",
					    "[off-cpu io]",
					    "[off-cpu runqueue]"};
	size_t cap = nlines * 400, n = 0, i, j;
	char *buf = malloc(cap);

	rng_state = 42;
	for (i = 0; i < nlines; i++) {
		size_t depth = 10 + rng() % 21;

		n += (size_t)snprintf(buf + n, cap - n, "group%zu;%s",
				      (size_t)(rng() % 50), kinds[rng() % 4]);
		size_t w = 0;

		for (j = 0; j < depth; j++) {
			if (j < 4)
				w = j;
			else if (worst)
				w = rng() % NLINES(words);
			else
				w = (w * 7 + 3 + (rng() % 4 ? 0 : rng() % 3)) %
				    NLINES(words);
			n += (size_t)snprintf(buf + n, cap - n, ";%s",
					      words[w]);
		}
		n += (size_t)snprintf(buf + n, cap - n, " %llu\n",
				      (unsigned long long)(1 + rng() % 100000));
	}
	*len = n;
	return buf;
}

static void render_lines(size_t nlines, bool worst, bool check_xml)
{
	struct wc_svg *g = wc_svg_new(NULL);
	struct wc_svg_stats st;
	struct sink s = {.fail_after = -1};
	size_t len, bad = 0;
	char *text = make_lines(nlines, worst, &len), *p, *nl;
	uint64_t want = 0;
	double t0, t_add, t_emit;
	ssize_t n;

	t0 = now_ms();
	for (p = text; (nl = strchr(p, '\n')); p = nl + 1) {
		bad += wc_svg_add_line(g, p, (size_t)(nl - p)) != 0;
		want += strtoull(memrchr(p, ' ', (size_t)(nl - p)), NULL, 10);
	}
	t_add = now_ms() - t0;
	t0 = now_ms();
	n = wc_svg_emit(g, sink_out, &s);
	t_emit = now_ms() - t0;
	wc_svg_get_stats(g, &st);
	CHECK(bad == 0 && st.lines == nlines && n > 0);
	CHECK(st.total_us == want && st.bytes <= 64 << 20);
	/* past the default 200000 nodes, stacks end early, counted */
	CHECK(st.nodes < 200000 ? st.nodes_merged == 0
				: st.nodes == 200000 && st.nodes_merged > 0);
	printf("# render %zuk lines%s: %.1f ms (add %.1f, emit %.1f), "
	       "%.0f KiB SVG, %llu nodes (%.0f KiB held), %llu drawn, "
	       "%llu merged\n",
	       nlines / 1000, worst ? " (worst case)" : "", t_add + t_emit,
	       t_add, t_emit, (double)n / 1024, (unsigned long long)st.nodes,
	       (double)st.bytes / 1024, (unsigned long long)st.drawn,
	       (unsigned long long)st.nodes_merged);
	if (check_xml) {
		CHECK(check_geometry(s.buf) == (long)st.drawn);
		CHECK(well_formed(s.buf));
	}
	free(s.buf);
	free(text);
	wc_svg_free(g);
}

static void test_10k_lines(void)
{
	render_lines(10000, false, true);
	render_lines(10000, true, true);
}

static void test_100k_lines(void)
{
	render_lines(100000, false, false);
}

int main(void)
{
	check_prog = "test_svg";
	RUN(test_geometry);
	RUN(test_totals);
	RUN(test_time_units);
	RUN(test_escaping);
	RUN(test_empty);
	RUN(test_one_frame);
	RUN(test_malformed);
	RUN(test_determinism);
	RUN(test_colour_families);
	RUN(test_kernel_shade);
	RUN(test_bounds);
	RUN(test_opts);
	RUN(test_out_failure);
	RUN(test_hooks);
	RUN(test_xmllint);
	RUN(test_10k_lines);
	RUN(test_100k_lines);
	return check_done();
}
