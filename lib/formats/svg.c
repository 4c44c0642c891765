// SPDX-License-Identifier: GPL-2.0-or-later
/* The SVG writer: lays out a flame tree and writes the flame graph of docs/svg-format.md. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/formats/nameattr.h"
#include "flamed/formats/svg.h"
#include "svg_script.h"
#include "common/utf8.h"

/*
 * Everything that reaches the document from outside (frame names, titles,
 * notes, font names, count names) goes through put_text(): XML-escaped,
 * with control characters and invalid UTF-8 replaced by U+FFFD, so it can
 * neither end an element nor start one, and the file stays well-formed
 * XML. Numbers are formatted here; colours come from the palette as bytes.
 */

#define XPAD 10.0
/*
 * Frames nest as <g> elements down to this depth; deeper ones are written
 * flat inside their ancestor at depth NEST_MAX - 1, each with data-depth:
 * libxml2 (xmllint, librsvg) refuses documents nested 256 deep, and stacks
 * reach 255 frames.
 */
#define NEST_MAX 64
#define OUT_BUF (256 * 1024)

struct out {
	FILE *f;
	char *buf;
	size_t len;
	bool err;
};

static void out_flush(struct out *o)
{
	if (o->len && fwrite(o->buf, 1, o->len, o->f) != o->len)
		o->err = true;
	o->len = 0;
}

static void put_mem(struct out *o, const char *s, size_t n)
{
	if (o->len + n > OUT_BUF) {
		out_flush(o);
		if (n > OUT_BUF) {
			if (fwrite(s, 1, n, o->f) != n)
				o->err = true;
			return;
		}
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void put(struct out *o, const char *s)
{
	put_mem(o, s, strlen(s));
}

static void put_ch(struct out *o, char c)
{
	if (o->len == OUT_BUF)
		out_flush(o);
	o->buf[o->len++] = c;
}

/*
 * Length of the valid UTF-8 sequence at s (n bytes available) that XML 1.0
 * allows, or 0: what fl_utf8_decode() refuses, and the non-characters
 * U+FFFE and U+FFFF.
 */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len = fl_utf8_decode(s, n, &cp);

	return len && cp != 0xfffe && cp != 0xffff ? len : 0;
}

static const char REPLACEMENT[] = "\xef\xbf\xbd"; /* U+FFFD */

/*
 * Writes at most max_chars characters of the len bytes at s, escaped.
 * Returns the number of characters written. Each invalid byte or control
 * character is one replacement character.
 */
static size_t put_text_n(struct out *o, const char *s, size_t len, size_t max_chars,
			 bool keep_lines)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	size_t chars = 0;

	while (p < end && chars < max_chars) {
		const unsigned char *run = p;

		/* Plain ASCII needing no escape: copy in one go. */
		while (p < end && chars < max_chars && *p >= 0x20 && *p < 0x7f && *p != '<' &&
		       *p != '>' && *p != '&' && *p != '"' && *p != '\'') {
			p++;
			chars++;
		}
		if (p > run)
			put_mem(o, (const char *)run, (size_t)(p - run));
		if (p == end || chars == max_chars)
			break;
		switch (*p) {
		case '<':
			put(o, "&lt;");
			p++;
			break;
		case '>':
			put(o, "&gt;");
			p++;
			break;
		case '&':
			put(o, "&amp;");
			p++;
			break;
		case '"':
			put(o, "&quot;");
			p++;
			break;
		case '\'':
			put(o, "&apos;");
			p++;
			break;
		default:
			if (keep_lines && (*p == '\n' || *p == '\t')) {
				put_ch(o, (char)*p);
				p++;
			} else if (*p < 0x20 || *p == 0x7f) {
				put(o, REPLACEMENT);
				p++;
			} else {
				size_t l = utf8_seq(p, (size_t)(end - p));

				if (l) {
					put_mem(o, (const char *)p, l);
					p += l;
				} else {
					put(o, REPLACEMENT);
					p++;
				}
			}
		}
		chars++;
	}
	return chars;
}

static void put_text(struct out *o, const char *s, size_t len)
{
	put_text_n(o, s, len, SIZE_MAX, false);
}

static void put_str_text(struct out *o, const char *s)
{
	put_text(o, s, strlen(s));
}

/* Characters put_text() would write for the len bytes at s. */
static size_t text_chars(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	size_t chars = 0;

	while (p < end) {
		size_t l = *p < 0x80 ? 1 : utf8_seq(p, (size_t)(end - p));

		p += l ? l : 1;
		chars++;
	}
	return chars;
}

/* printf into the output; what does not fit 128 bytes is cut, never read past. */
static void put_fmt(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put_fmt(struct out *o, const char *fmt, ...)
{
	char b[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	put_mem(o, b, (size_t)n < sizeof(b) ? (size_t)n : sizeof(b) - 1);
}

/* A pixel coordinate: two decimals, trailing zeros dropped. Callers keep |v| < 1e9. */
static void put_px(struct out *o, double v)
{
	long long c;

	if (!isfinite(v) || fabs(v) > 1e12)
		v = 0;
	c = llround(v * 100);
	if (c < 0) {
		put_ch(o, '-');
		c = -c;
	}
	if (c % 100 == 0)
		put_fmt(o, "%lld", c / 100);
	else if (c % 10 == 0)
		put_fmt(o, "%lld.%lld", c / 100, (c % 100) / 10);
	else
		put_fmt(o, "%lld.%02lld", c / 100, c % 100);
}

static bool is_integral(double v)
{
	return v == floor(v) && fabs(v) < 9007199254740992.0;
}

/*
 * A count for the script, which does its arithmetic with it: as many
 * digits as it takes to read back the same double (at most 17).
 */
static void put_num(struct out *o, double v)
{
	if (!isfinite(v))
		put_ch(o, '0');
	else if (is_integral(v))
		put_fmt(o, "%lld", (long long)v);
	else {
		/* The shortest form that reads back as the same double. */
		char b[40];

		for (int prec = 15; prec <= 17; prec++) {
			snprintf(b, sizeof(b), "%.*g", prec, v);
			if (strtod(b, NULL) == v)
				break;
		}
		put(o, b);
	}
}

/*
 * A count for people as flamegraph.pl writes it: rounded to an integer
 * ("%.0f", so 2.5 is 2), thousands separated by commas, of any size.
 */
size_t fl_svg__count_text(double v, char buf[FL_SVG_COUNT_TEXT])
{
	char b[400];
	size_t n, k = 0;

	if (!isfinite(v))
		v = 0;
	n = (size_t)snprintf(b, sizeof(b), "%.0f", fabs(v));
	if (n >= sizeof(b))
		n = sizeof(b) - 1;
	if (v < 0 && strcmp(b, "0"))
		buf[k++] = '-';
	for (size_t i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = b[i];
	}
	buf[k] = '\0';
	return k;
}

static void put_count(struct out *o, double v)
{
	char r[FL_SVG_COUNT_TEXT];

	put_mem(o, r, fl_svg__count_text(v, r));
}

static void put_pct(struct out *o, double part, double whole)
{
	double pct = whole > 0 ? 100.0 * part / whole : 0.0;

	put_fmt(o, fabs(pct) < 1e9 ? "%.2f%%" : "%.3g%%", pct);
}

static void put_rgb(struct out *o, struct fl_rgb c)
{
	put_fmt(o, "rgb(%u,%u,%u)", c.r, c.g, c.b);
}

static void put_attr_px(struct out *o, const char *name, double v)
{
	put_ch(o, ' ');
	put(o, name);
	put(o, "=\"");
	put_px(o, v);
	put_ch(o, '"');
}

/* The annotation at the end of a frame name, or 0: 'k', 'j', 'i', 'w'. */
static char annotation(const char *s, size_t len)
{
	if (len >= 4 && s[len - 4] == '_' && s[len - 3] == '[' && s[len - 1] == ']' &&
	    (s[len - 2] == 'k' || s[len - 2] == 'j' || s[len - 2] == 'i' || s[len - 2] == 'w'))
		return s[len - 2];
	return 0;
}

size_t fl_svg__display_len(const char *s, size_t len)
{
	return annotation(s, len) ? len - 4 : len;
}


struct geom {
	double W, H, fh, fs, charw, scale, total, minwidth;
	double ypad1, ypad2;
	uint32_t rows;
	bool inverted;
};

static double frame_y(const struct geom *g, uint32_t depth)
{
	if (g->inverted)
		return g->ypad1 + depth * g->fh;
	return g->H - g->ypad2 - (depth + 1) * g->fh;
}

/*
 * The label of a frame w pixels wide, as flamegraph.pl fits it: as many
 * characters as whole character widths fit, none below 3; a name longer
 * than that is cut to 2 fewer and "..". Returns how many characters of the
 * name, and whether cut.
 */
static size_t label_fit(const struct geom *g, double w, size_t chars, bool *cut)
{
	double fit = g->charw > 0 ? floor(w / g->charw) : 0;

	*cut = false;
	if (!(fit >= 3))
		return 0;
	if (fit >= (double)chars)
		return chars;
	*cut = true;
	return (size_t)fit - 2;
}

static void put_label(struct out *o, const struct geom *g, double x, double y, double w,
		      const char *name, size_t len)
{
	bool cut;
	size_t n = label_fit(g, w, text_chars(name, len), &cut);

	if (!n)
		return;
	put(o, "<text");
	put_attr_px(o, "x", x + 3);
	put_attr_px(o, "y", y + g->fh / 2 + g->fs * 0.35);
	put_ch(o, '>');
	put_text_n(o, name, len, n, false);
	if (cut)
		put(o, "..");
	put(o, "</text>\n");
}

static void put_header(struct out *o, const struct geom *g, const struct fl_svg_opts *op,
		       const char *title, struct fl_rgb top, struct fl_rgb bottom)
{
	char b[256];

	put(o, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
	       "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\"");
	put_attr_px(o, "width", g->W);
	put_attr_px(o, "height", g->H);
	put(o, " viewBox=\"0 0 ");
	put_px(o, g->W);
	put_ch(o, ' ');
	put_px(o, g->H);
	put(o, "\" id=\"flamegraph\" font-family=\"");
	put_str_text(o, op->fonttype);
	put_ch(o, '"');
	put_attr_px(o, "font-size", g->fs);
	put(o, " data-total=\"");
	put_num(o, g->total);
	snprintf(b, sizeof(b), "\" data-diff=\"%d\" data-inverted=\"%d\" data-flamechart=\"%d\"",
		 op->diff ? 1 : 0, g->inverted ? 1 : 0, op->flamechart ? 1 : 0);
	put(o, b);
	put_attr_px(o, "data-fh", g->fh);
	put_attr_px(o, "data-xpad", XPAD);
	put(o, " data-minwidth=\"");
	put_num(o, g->minwidth);
	put(o, "\" data-fontwidth=\"");
	put_num(o, op->fontwidth);
	put(o, "\" data-countname=\"");
	put_str_text(o, op->countname);
	put(o, "\" data-nametype=\"");
	put_str_text(o, op->nametype);
	put(o, "\">\n<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
	       "<stop stop-color=\"");
	put_rgb(o, top);
	put(o, "\" offset=\"5%\"/><stop stop-color=\"");
	put_rgb(o, bottom);
	put(o, "\" offset=\"95%\"/></linearGradient></defs>\n<style type=\"text/css\">\n"
	       "#title { text-anchor: middle; }\n"
	       "#matched { text-anchor: end; }\n"
	       "#subtitle { text-anchor: middle; fill: rgb(110,110,110); }\n"
	       "#unzoom, #search, #ignorecase { cursor: pointer; }\n"
	       "#search, #ignorecase { opacity: 0.4; }\n"
	       "#search:hover, #ignorecase:hover, #search.show, #ignorecase.show { opacity: 1; }\n"
	       "#frames g.f { cursor: pointer; }\n"
	       "#labels text { pointer-events: none; }\n"
	       ".hide { display: none; }\n"
	       "g.match > rect { fill: rgb(230,0,230); }\n"
	       "</style>\n");
	if (op->notes) {
		put(o, "<desc id=\"notes\">");
		/* Element content: line breaks and tabs are text here, kept as they are. */
		put_text_n(o, op->notes, strlen(op->notes), SIZE_MAX, true);
		put(o, "</desc>\n");
	}
	put(o, "<rect id=\"bg\" x=\"0\" y=\"0\"");
	put_attr_px(o, "width", g->W);
	put_attr_px(o, "height", g->H);
	put(o, " fill=\"url(#background)\"/>\n<text id=\"title\"");
	put_attr_px(o, "x", g->W / 2);
	put_attr_px(o, "y", g->fs * 2);
	put_attr_px(o, "font-size", g->fs + 5);
	put_ch(o, '>');
	put_str_text(o, title);
	put(o, "</text>\n");
	if (op->subtitle) {
		put(o, "<text id=\"subtitle\"");
		put_attr_px(o, "x", g->W / 2);
		put_attr_px(o, "y", g->fs * 4);
		put_ch(o, '>');
		put_str_text(o, op->subtitle);
		put(o, "</text>\n");
	}
	put(o, "<text id=\"unzoom\" class=\"hide\"");
	put_attr_px(o, "x", XPAD);
	put_attr_px(o, "y", g->fs * 2);
	put(o, ">Reset Zoom</text>\n<text id=\"search\"");
	put_attr_px(o, "x", g->W - XPAD - 100);
	put_attr_px(o, "y", g->fs * 2);
	put(o, ">Search</text>\n<text id=\"ignorecase\"");
	put_attr_px(o, "x", g->W - XPAD - 16);
	put_attr_px(o, "y", g->fs * 2);
	/* Right-aligned to the margin: "Matched: ... of zoomed" stays inside at any width. */
	put(o, ">ic</text>\n<text id=\"matched\"");
	put_attr_px(o, "x", g->W - XPAD);
	put_attr_px(o, "y", g->H - g->fs * 0.7);
	put(o, "> </text>\n<text id=\"details\"");
	put_attr_px(o, "x", XPAD);
	put_attr_px(o, "y", g->H - g->fs * 0.7);
	put(o, "> </text>\n");
}

/*
 * --nameattr's attributes of a frame, after its data-x...: an id, the link
 * the page opens on a click (data-href, data-target), and its name
 * (data-n) when a title of the file's replaces the tooltip it comes from.
 */
static void put_nameattr(struct out *o, const struct fl_nameattr_entry *na, const char *name,
			 size_t len)
{
	if (na->id) {
		put(o, "\" id=\"");
		put_str_text(o, na->id);
	}
	if (na->href) {
		put(o, "\" data-href=\"");
		put_str_text(o, na->href);
		put(o, "\" data-target=\"");
		put_str_text(o, na->target ? na->target : "_top");
	}
	if (na->title) {
		put(o, "\" data-n=\"");
		put_text_n(o, name, fl_svg__display_len(name, len), SIZE_MAX, false);
	}
}

/* The change of a frame's own samples (after - before of the stacks that end at it). */
static double self_delta(const struct fl_drawn *d)
{
	return d->merged ? 0 : d->own - d->own_before;
}

static void put_title(struct out *o, const struct fl_svg_opts *op, const struct geom *g,
		      const struct fl_drawn *d, const char *name, size_t len, double own_delta)
{
	put(o, "<title>");
	if (d->merged) {
		put_fmt(o, "%u frames narrower than ", d->nr_merged);
		put_px(o, g->minwidth);
		put_fmt(o, " px, %llu below", (unsigned long long)d->nr_below);
	} else {
		put_text(o, name, len);
	}
	put(o, " (");
	put_count(o, d->count);
	put_ch(o, ' ');
	put_str_text(o, op->countname);
	put(o, ", ");
	/* flamegraph.pl's percentage is of the rounded count it shows. */
	put_pct(o, nearbyint(d->count), g->total);
	if (op->diff_self && !d->merged) {
		/* flamegraph.pl's: the frame's own change, in % of the whole, signed. */
		double v = op->negate ? -own_delta : own_delta;
		double pct = g->total > 0 ? 100.0 * v / g->total : 0;

		put(o, pct > 0 ? "; +" : "; ");
		put_fmt(o, fabs(pct) < 1e9 ? "%.2f%%" : "%.3g%%", pct);
	} else if (op->diff && !d->merged) {
		double delta = d->count - d->before;

		put(o, "; before: ");
		put_count(o, d->before);
		put(o, delta >= 0 ? ", +" : ", ");
		put_count(o, delta);
		if (d->before > 0) {
			put(o, delta >= 0 ? ", +" : ", ");
			put_pct(o, delta, d->before);
		} else {
			put(o, ", new");
		}
	}
	put(o, ")</title>");
}

/* fl_svg__resolve_opts() for a tree of tree_total, but for the palette. */
static int resolve(double tree_total, const struct fl_svg_opts *opts, struct fl_svg_opts *op,
		   double *total, struct fl_rgb *top, struct fl_rgb *bottom)
{
	*op = (struct fl_svg_opts){
		.fonttype = "Verdana",
		.countname = "samples",
		.nametype = "Function:",
		.width = 1200,
		.frame_height = 16,
		.fontsize = 12,
		.fontwidth = 0.59,
		.minwidth = 0.1,
	};
	*top = (struct fl_rgb){0xee, 0xee, 0xee};
	*bottom = (struct fl_rgb){0xee, 0xee, 0xb0};
	if (opts) {
		size_t sz = opts->sz && opts->sz < sizeof(*op) ? opts->sz : sizeof(*op);
		struct fl_svg_opts in = {};

		memcpy(&in, opts, sz);
		op->title = in.title;
		op->subtitle = in.subtitle;
		op->notes = in.notes;
		if (in.fonttype)
			op->fonttype = in.fonttype;
		if (in.countname)
			op->countname = in.countname;
		if (in.nametype)
			op->nametype = in.nametype;
		if (in.width > 0)
			op->width = in.width;
		if (in.frame_height > 0)
			op->frame_height = in.frame_height;
		if (in.fontsize > 0)
			op->fontsize = in.fontsize;
		if (in.fontwidth > 0)
			op->fontwidth = in.fontwidth;
		op->minwidth = in.minwidth > 0 ? in.minwidth : 0;
		op->minwidth_pct = in.minwidth_pct;
		op->total = in.total;
		op->sort = in.sort;
		op->inverted = in.inverted;
		op->flamechart = in.flamechart;
		op->diff = in.diff;
		op->negate = in.negate;
		op->diff_self = in.diff && in.diff_self;
		op->nameattr = in.nameattr;
		op->palette = in.palette;
		if (in.bg_top.r || in.bg_top.g || in.bg_top.b || in.bg_bottom.r || in.bg_bottom.g ||
		    in.bg_bottom.b) {
			*top = in.bg_top;
			*bottom = in.bg_bottom;
		}
	}
	/* Bounds that keep every coordinate finite and every element valid. */
	if (!(op->width <= 1e6) || !(op->frame_height >= 2 && op->frame_height <= 1000) ||
	    !(op->fontsize >= 1 && op->fontsize <= 1000) ||
	    !(op->fontwidth >= 0.01 && op->fontwidth <= 10) || !(op->minwidth <= 1e6) ||
	    !(op->minwidth_pct <= 100) || !isfinite(op->total))
		return -EINVAL;
	*total = tree_total;
	if (op->total > *total)
		*total = op->total;
	if (!(*total >= 0))
		return -EINVAL;
	if (*total == 0)
		*total = 1; /* nothing to draw: an empty graph with its titles */
	if (!op->title)
		op->title = op->flamechart ? "Flame Chart"
			    : op->inverted ? "Icicle Graph"
					   : "Flame Graph";
	return 0;
}

int fl_svg__resolve_opts(const struct fl_flametree *t, const struct fl_svg_opts *opts,
			 struct fl_svg_opts *op, double *total, struct fl_rgb *top,
			 struct fl_rgb *bottom)
{
	int err = resolve(fl_flametree__total(t), opts, op, total, top, bottom);

	if (!err && !op->diff && !op->palette)
		return -EINVAL;
	return err;
}

/* The pixels frames are drawn in, and the count below which a frame is too narrow to draw. */
static double draw_width(const struct fl_svg_opts *op)
{
	return op->width - 2 * XPAD;
}

static double minwidth_px(const struct fl_svg_opts *op)
{
	return op->minwidth_pct > 0 ? op->minwidth_pct / 100.0 * draw_width(op) : op->minwidth;
}

static double min_count_of(const struct fl_svg_opts *op, double total)
{
	return minwidth_px(op) / (draw_width(op) / total);
}

double fl_svg__min_count(const struct fl_svg_opts *opts, double tree_total)
{
	struct fl_svg_opts op;
	struct fl_rgb top, bottom;
	double total;

	if (resolve(tree_total, opts, &op, &total, &top, &bottom) || !(draw_width(&op) > 1))
		return 0;
	return min_count_of(&op, total);
}

int fl_svg__write(struct fl_flametree *t, const struct fl_svg_opts *opts, FILE *f)
{
	struct fl_flametree_layout_opts lo = {.sz = sizeof(lo)};
	const struct fl_drawn *dr;
	size_t nr;
	struct geom g = {};
	struct out o = {.f = f};
	struct fl_svg_opts op;
	struct fl_rgb top, bottom;
	const char *title;
	double max_delta = 0;
	uint32_t *open_ends = NULL; /* ends of the open <g> elements, innermost last */
	bool *waker = NULL;	    /* by depth: a "-" frame below (chain palette) */
	size_t nr_open = 0;
	int err;

	err = fl_svg__resolve_opts(t, opts, &op, &g.total, &top, &bottom);
	if (err)
		return err;
	if (!(op.width > 2 * XPAD + 1))
		return -EINVAL;
	g.W = op.width;
	g.fh = op.frame_height;
	g.fs = op.fontsize;
	g.charw = op.fontsize * op.fontwidth;
	g.inverted = op.inverted;
	g.scale = draw_width(&op) / g.total;
	g.minwidth = minwidth_px(&op);
	lo.sort = op.sort;
	lo.min_count = min_count_of(&op, g.total);
	err = fl_flametree__layout(t, &lo, &dr, &nr);
	if (err)
		return err;
	for (size_t i = 0; i < nr; i++) {
		double delta = dr[i].count - dr[i].before;

		if (dr[i].depth + 1 > g.rows)
			g.rows = dr[i].depth + 1;
		if (op.diff_self)
			delta = self_delta(&dr[i]);
		if (!dr[i].merged && fabs(delta) > max_delta)
			max_delta = fabs(delta);
	}
	g.ypad1 = g.fs * 3 + (op.subtitle ? g.fs * 2 : 0);
	g.ypad2 = g.fs * 2 + 10;
	g.H = g.ypad1 + g.rows * g.fh + g.ypad2;
	title = op.title;

	o.buf = malloc(OUT_BUF);
	open_ends = malloc((g.rows + 1) * sizeof(*open_ends));
	waker = calloc(g.rows + 2, sizeof(*waker));
	if (!o.buf || !open_ends || !waker) {
		err = -ENOMEM;
		goto out;
	}
	put_header(&o, &g, &op, title, top, bottom);

	put(&o, "<g id=\"frames\">\n");
	for (size_t i = 0; i < nr; i++) {
		const struct fl_drawn *d = &dr[i];
		const char *name = NULL;
		size_t len = 0;
		struct fl_rgb c;
		const struct fl_nameattr_entry *na;
		double x = XPAD + d->start * g.scale, w = d->count * g.scale;

		while (nr_open && open_ends[nr_open - 1] <= i) {
			put(&o, "</g>\n");
			nr_open--;
		}
		if (d->merged) {
			c = fl_palette__grey();
		} else {
			name = fl_flametree__name(t, d->node, &len);
			if (len == 1 && name[0] == '-')
				c = fl_palette__grey();
			else if (op.diff_self)
				c = fl_palette__fg_diff_color(self_delta(d), max_delta, op.negate);
			else if (op.diff)
				c = fl_palette__diff_color(d->before, d->count, max_delta,
							   op.negate);
			else
				c = fl_palette__color(op.palette, name, len,
						      waker[d->depth] ? FL_COLOR_WAKER : 0);
			waker[d->depth + 1] = waker[d->depth] || (len == 1 && name[0] == '-');
		}
		na = !d->merged && op.nameattr ? fl_nameattr__find(op.nameattr, name, len) : NULL;
		if (na && na->class_) {
			put(&o, "<g class=\"f ");
			put_str_text(&o, na->class_);
			put(&o, "\" data-x=\"");
		} else {
			put(&o, d->merged ? "<g class=\"f m\" data-x=\"" : "<g class=\"f\" data-x=\"");
		}
		put_num(&o, d->start);
		put(&o, "\" data-c=\"");
		put_num(&o, d->count);
		if (op.diff) {
			put(&o, "\" data-a=\"");
			put_num(&o, d->before);
		}
		if (d->merged)
			put_fmt(&o, "\" data-m=\"%u\" data-d=\"%llu", d->nr_merged,
				(unsigned long long)d->nr_below);
		if (d->depth >= NEST_MAX)
			put_fmt(&o, "\" data-depth=\"%u", d->depth);
		if (na)
			put_nameattr(&o, na, name, len);
		put(&o, "\">");
		if (na && na->title) {
			put(&o, "<title>");
			put_str_text(&o, na->title);
			put(&o, "</title>");
		} else {
			put_title(&o, &op, &g, d, name, len ? fl_svg__display_len(name, len) : 0,
				  op.diff_self && !d->merged ? self_delta(d) : 0);
		}
		put(&o, "<rect");
		put_attr_px(&o, "x", x);
		put_attr_px(&o, "y", frame_y(&g, d->depth));
		put_attr_px(&o, "width", w);
		put_attr_px(&o, "height", g.fh - 1);
		put(&o, " fill=\"");
		put_rgb(&o, c);
		put(&o, "\" rx=\"2\" ry=\"2\"/>");
		if (d->end > i + 1 && d->depth < NEST_MAX) {
			put_ch(&o, '\n');
			open_ends[nr_open++] = d->end;
		} else {
			put(&o, "</g>\n");
		}
	}
	while (nr_open--)
		put(&o, "</g>\n");
	put(&o, "</g>\n<g id=\"labels\">\n");
	for (size_t i = 0; i < nr; i++) {
		const struct fl_drawn *d = &dr[i];
		size_t len;
		const char *name;

		if (d->merged || d->count * g.scale < 3 * g.charw)
			continue;
		name = fl_flametree__name(t, d->node, &len);
		put_label(&o, &g, XPAD + d->start * g.scale, frame_y(&g, d->depth),
			  d->count * g.scale, name, fl_svg__display_len(name, len));
	}
	put(&o, "</g>\n<script type=\"text/ecmascript\"><![CDATA[\n");
	put_mem(&o, fl_svg_script, fl_svg_script_len);
	put(&o, "\n]]></script>\n</svg>\n");
	out_flush(&o);
	err = o.err ? -EIO : 0;
out:
	free(o.buf);
	free(open_ends);
	free(waker);
	return err;
}
