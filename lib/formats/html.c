// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The HTML writer: every frame of a flame tree as a string table and integer
 * columns (docs/html-format.md), zlib-compressed and base64-encoded into a
 * page that carries its own viewer (html_view.js, html_view.css).
 *
 * What reaches the page from outside (frame names, titles, notes, count
 * names) is cleaned here: valid UTF-8 only, control characters replaced by
 * U+FFFD, bidirectional controls written out visibly ("<U+202E>"). Names go
 * into the compressed data, which base64 keeps free of markup; texts go into
 * a JSON object in which '<', '>' and '&' are \u escapes, and into <title>
 * HTML-escaped. The viewer shows them with textContent and fillText only.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "flamed/common/strpool.h"
#include "flamed/formats/html.h"
#include "common/u32map.h"
#include "common/utf8.h"
#include "html_view_css.h"
#include "html_view_js.h"

#define MAX_EXACT 9007199254740992.0 /* 2^53: counts below are whole doubles, varints */

struct bytes {
	unsigned char *p;
	size_t len, cap;
	bool oom;
};

static bool bytes_room(struct bytes *b, size_t n)
{
	size_t cap;
	unsigned char *p;

	if (b->oom)
		return false;
	if (b->cap - b->len >= n)
		return true;
	cap = b->cap ? b->cap : 4096;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2) {
			b->oom = true;
			return false;
		}
		cap *= 2;
	}
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

static void put_mem(struct bytes *b, const void *s, size_t n)
{
	if (n && bytes_room(b, n)) {
		memcpy(b->p + b->len, s, n);
		b->len += n;
	}
}

static void put_str(struct bytes *b, const char *s)
{
	put_mem(b, s, strlen(s));
}

static void put_byte(struct bytes *b, unsigned char c)
{
	if (bytes_room(b, 1))
		b->p[b->len++] = c;
}

/* LEB128 of v < 2^53. */
static void put_varint(struct bytes *b, uint64_t v)
{
	while (v >= 0x80) {
		put_byte(b, (unsigned char)(v | 0x80));
		v >>= 7;
	}
	put_byte(b, (unsigned char)v);
}

/* A count: a varint when the data is integral, else a little-endian double. */
static void put_count(struct bytes *b, double v, bool integral)
{
	if (integral) {
		put_varint(b, (uint64_t)v);
	} else {
		uint64_t u;
		unsigned char le[8];

		memcpy(&u, &v, sizeof(u));
		for (int i = 0; i < 8; i++)
			le[i] = (unsigned char)(u >> (8 * i));
		put_mem(b, le, sizeof(le));
	}
}

static bool is_bidi_control(uint32_t cp)
{
	return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069);
}

static const char REPLACEMENT[] = "\xef\xbf\xbd"; /* U+FFFD */

/*
 * Appends the len bytes at s as the page shows them: valid UTF-8, each
 * invalid byte and each control character (C0, DEL, C1) one U+FFFD, each
 * bidirectional control spelt out as "<U+202E>".
 */
static void put_clean(struct bytes *b, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	while (p < end) {
		const unsigned char *run = p;
		uint32_t cp;
		size_t l;

		while (p < end && *p >= 0x20 && *p < 0x7f)
			p++;
		put_mem(b, run, (size_t)(p - run));
		if (p == end)
			break;
		l = fl_utf8_decode(p, (size_t)(end - p), &cp);
		if (!l || cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
			put_str(b, REPLACEMENT);
			p += l ? l : 1;
		} else if (is_bidi_control(cp)) {
			char tag[16];

			snprintf(tag, sizeof(tag), "<U+%04X>", (unsigned)cp);
			put_str(b, tag);
			p += l;
		} else {
			put_mem(b, p, l);
			p += l;
		}
	}
}

/* A JSON string of clean text: '<', '>', '&', U+2028 and U+2029 escaped too. */
static void put_json_clean(struct bytes *b, const unsigned char *s, size_t len)
{
	put_byte(b, '"');
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];
		char esc[8];

		if (c == '"' || c == '\\') {
			put_byte(b, '\\');
			put_byte(b, c);
		} else if (c == '<' || c == '>' || c == '&') {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			put_str(b, esc);
		} else if (c == 0xe2 && i + 2 < len && s[i + 1] == 0x80 &&
			   (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
			put_str(b, s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029");
			i += 2;
		} else {
			put_byte(b, c);
		}
	}
	put_byte(b, '"');
}

/* "key":"text" (null when text is NULL), text cleaned first. */
static void put_json_text(struct bytes *b, const char *key, const char *text)
{
	struct bytes tmp = {};

	put_byte(b, '"');
	put_str(b, key);
	put_str(b, "\":");
	if (!text) {
		put_str(b, "null");
		return;
	}
	put_clean(&tmp, text, strlen(text));
	if (tmp.oom)
		b->oom = true;
	else
		put_json_clean(b, tmp.p ? tmp.p : (const unsigned char *)"", tmp.len);
	free(tmp.p);
}

static void put_json_num(struct bytes *b, const char *key, double v)
{
	char num[64];

	if (!isfinite(v))
		v = 0;
	snprintf(num, sizeof(num), "\"%s\":%.17g", key, v);
	put_str(b, num);
}

static void put_json_bool(struct bytes *b, const char *key, bool v)
{
	put_byte(b, '"');
	put_str(b, key);
	put_str(b, v ? "\":true" : "\":false");
}

/* Text for the <title> element: cleaned, then HTML-escaped. */
static void put_html_text(struct bytes *b, const char *text)
{
	struct bytes tmp = {};

	put_clean(&tmp, text, strlen(text));
	for (size_t i = 0; i < tmp.len; i++) {
		switch (tmp.p[i]) {
		case '<':
			put_str(b, "&lt;");
			break;
		case '>':
			put_str(b, "&gt;");
			break;
		case '&':
			put_str(b, "&amp;");
			break;
		case '"':
			put_str(b, "&quot;");
			break;
		default:
			put_byte(b, tmp.p[i]);
		}
	}
	if (tmp.oom)
		b->oom = true;
	free(tmp.p);
}

static void put_rgb_hex(struct bytes *b, struct fl_rgb c)
{
	char s[16];

	snprintf(s, sizeof(s), "\"#%02x%02x%02x\"", c.r, c.g, c.b);
	put_str(b, s);
}

static bool whole(double v)
{
	return v >= 0 && v < MAX_EXACT && v == floor(v);
}

/* The colour table: distinct colours, in order of first use. */
struct colors {
	struct fl_u32map index; /* rgb + 1 -> index */
	struct bytes rgb;
	uint32_t nr;
};

static int color_index(struct colors *c, struct fl_rgb rgb, uint32_t *idx)
{
	uint32_t key = ((uint32_t)rgb.r << 16 | (uint32_t)rgb.g << 8 | rgb.b) + 1;
	int err;

	if (fl_u32map__get(&c->index, key, idx))
		return 0;
	err = fl_u32map__put(&c->index, key, c->nr);
	if (err)
		return err;
	put_byte(&c->rgb, rgb.r);
	put_byte(&c->rgb, rgb.g);
	put_byte(&c->rgb, rgb.b);
	if (c->rgb.oom)
		return -ENOMEM;
	*idx = c->nr++;
	return 0;
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Writes the n bytes at s as base64 (RFC 4648, padded, no line breaks). */
static void write_base64(FILE *f, const unsigned char *s, size_t n)
{
	char out[4096];
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		size_t k = n - i;

		if (k > 1)
			v |= (uint32_t)s[i + 1] << 8;
		if (k > 2)
			v |= s[i + 2];
		out[o++] = B64[v >> 18 & 63];
		out[o++] = B64[v >> 12 & 63];
		out[o++] = k > 1 ? B64[v >> 6 & 63] : '=';
		out[o++] = k > 2 ? B64[v & 63] : '=';
		if (o == sizeof(out)) {
			fwrite(out, 1, o, f);
			o = 0;
		}
	}
	fwrite(out, 1, o, f);
}

/* What the layout gives, per frame kept, and the tables built from it. */
struct model {
	const struct fl_drawn *dr;
	size_t nr_drawn;
	uint32_t *keep;	      /* indices into dr of the frames written */
	uint32_t *name;	      /* per frame: its name's id */
	uint32_t *color;      /* per frame: its colour (framecolors) */
	double *gap;	      /* per frame */
	uint32_t nr;	      /* frames written */
	struct fl_strpool *names; /* full names, annotation included: ids */
	struct bytes shown;   /* the names as shown, each ended by '\n' */
	uint32_t *namecolor;  /* per name id */
	size_t namecolor_cap;
	struct colors colors;
	bool integral, gaps, framecolors;
};

static void model_fini(struct model *m)
{
	free(m->keep);
	free(m->name);
	free(m->color);
	free(m->gap);
	fl_strpool__free(m->names);
	free(m->shown.p);
	free(m->namecolor);
	fl_u32map__fini(&m->colors.index);
	free(m->colors.rgb.p);
}

/* The id of a frame's name, interned with its shown form and its colour when new. */
static int intern_name(struct model *m, const struct fl_svg_opts *op, const char *name, size_t len,
		       uint32_t *id)
{
	size_t before = fl_strpool__count(m->names);
	struct fl_rgb c;
	uint32_t ci;
	int err;

	err = fl_strpool__intern(m->names, name, len, id);
	if (err)
		return err;
	if (fl_strpool__count(m->names) == before)
		return 0;
	if (*id >= UINT32_MAX - 1)
		return -E2BIG;
	if (*id >= m->namecolor_cap) {
		size_t cap = m->namecolor_cap ? m->namecolor_cap * 2 : 1024;
		uint32_t *p = realloc(m->namecolor, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		m->namecolor = p;
		m->namecolor_cap = cap;
	}
	put_clean(&m->shown, name, fl_svg__display_len(name, len));
	put_byte(&m->shown, '\n');
	if (m->shown.oom)
		return -ENOMEM;
	if (len == 1 && name[0] == '-')
		c = fl_palette__grey();
	else if (op->palette)
		c = fl_palette__color(op->palette, name, len, 0);
	else
		c = fl_palette__grey(); /* diff: every frame has its own colour */
	err = color_index(&m->colors, c, &ci);
	if (err)
		return err;
	m->namecolor[*id] = ci;
	return 0;
}

/* The change of a frame's own samples, as the SVG colours flamegraph.pl's two-count input. */
static double self_delta(const struct fl_drawn *d)
{
	return d->own - d->own_before;
}

static int build_model(struct model *m, const struct fl_flametree *t, const struct fl_svg_opts *op)
{
	const struct fl_drawn *dr = m->dr;
	size_t nr = m->nr_drawn;
	double *place = NULL; /* by depth: where the next frame there would start */
	bool *waker = NULL;   /* by depth: a "-" frame below (chain palette) */
	uint32_t rows = 0;
	double max_delta = 0;
	int err;

	if (nr >= UINT32_MAX - 1)
		return -E2BIG;
	for (size_t i = 0; i < nr; i++) {
		double delta = op->diff_self ? self_delta(&dr[i]) : dr[i].count - dr[i].before;

		if (dr[i].depth + 1 > rows)
			rows = dr[i].depth + 1;
		if (!dr[i].merged && fabs(delta) > max_delta)
			max_delta = fabs(delta);
	}
	err = fl_strpool__new(&m->names);
	if (err)
		return err;
	m->keep = malloc((nr ? nr : 1) * sizeof(*m->keep));
	m->name = malloc((nr ? nr : 1) * sizeof(*m->name));
	m->color = malloc((nr ? nr : 1) * sizeof(*m->color));
	m->gap = malloc((nr ? nr : 1) * sizeof(*m->gap));
	place = calloc(rows + 2, sizeof(*place));
	waker = calloc(rows + 2, sizeof(*waker));
	if (!m->keep || !m->name || !m->color || !m->gap || !place || !waker) {
		err = -ENOMEM;
		goto out;
	}
	m->integral = true;
	for (size_t i = 0; i < nr; i++) {
		const struct fl_drawn *d = &dr[i];
		const char *name;
		size_t len;
		uint32_t id, k = m->nr;
		struct fl_rgb c;
		bool dash;

		/* Boxes of frames without samples after: nothing to draw, nothing below. */
		if (d->merged)
			continue;
		name = fl_flametree__name(t, d->node, &len);
		err = intern_name(m, op, name, len, &id);
		if (err)
			goto out;
		dash = len == 1 && name[0] == '-';
		m->keep[k] = (uint32_t)i;
		m->name[k] = id;
		m->gap[k] = d->start - place[d->depth];
		if (m->gap[k] != 0)
			m->gaps = true;
		place[d->depth] = d->start + d->count;
		place[d->depth + 1] = d->start;
		if (!whole(d->count) || !whole(m->gap[k]) || (op->diff && !whole(d->before)))
			m->integral = false;
		waker[d->depth + 1] = waker[d->depth] || dash;
		m->color[k] = m->namecolor[id];
		if (op->diff && !dash) {
			if (op->diff_self)
				c = fl_palette__fg_diff_color(self_delta(d), max_delta, op->negate);
			else
				c = fl_palette__diff_color(d->before, d->count, max_delta,
							   op->negate);
			err = color_index(&m->colors, c, &m->color[k]);
			m->framecolors = true;
		} else if (waker[d->depth] && !dash && op->palette) {
			c = fl_palette__color(op->palette, name, len, FL_COLOR_WAKER);
			err = color_index(&m->colors, c, &m->color[k]);
			m->framecolors = true;
		}
		if (err)
			goto out;
		m->nr++;
	}
	err = 0;
out:
	free(place);
	free(waker);
	return err;
}

/* The data section of docs/html-format.md, uncompressed. */
static void put_data(struct bytes *b, const struct model *m, const struct fl_svg_opts *op)
{
	int64_t prev = -1; /* the depth before the first root */

	put_mem(b, m->shown.p, m->shown.len);
	put_mem(b, m->colors.rgb.p, m->colors.rgb.len);
	for (size_t i = 0; i < fl_strpool__count(m->names); i++)
		put_varint(b, m->namecolor[i]);
	for (uint32_t k = 0; k < m->nr; k++) {
		int64_t depth = m->dr[m->keep[k]].depth;
		int64_t delta = depth - prev - 1; /* a child right after its parent: 0 */

		put_varint(b, delta >= 0 ? (uint64_t)delta * 2 : (uint64_t)(-delta) * 2 - 1);
		prev = depth;
	}
	for (uint32_t k = 0; k < m->nr; k++)
		put_varint(b, m->name[k]);
	for (uint32_t k = 0; k < m->nr; k++)
		put_count(b, m->dr[m->keep[k]].count, m->integral);
	if (m->gaps)
		for (uint32_t k = 0; k < m->nr; k++)
			put_count(b, m->gap[k], m->integral);
	if (op->diff)
		for (uint32_t k = 0; k < m->nr; k++)
			put_count(b, m->dr[m->keep[k]].before, m->integral);
	if (m->framecolors)
		for (uint32_t k = 0; k < m->nr; k++)
			put_varint(b, m->color[k]);
}

static void put_meta(struct bytes *b, const struct model *m, const struct fl_svg_opts *op,
		     const char *title, double total, size_t data_len, struct fl_rgb top,
		     struct fl_rgb bottom)
{
	put_str(b, "{\"version\":1,");
	put_json_text(b, "title", title);
	put_byte(b, ',');
	put_json_text(b, "subtitle", op->subtitle);
	put_byte(b, ',');
	put_json_text(b, "notes", op->notes);
	put_byte(b, ',');
	put_json_text(b, "countname", op->countname);
	put_byte(b, ',');
	put_json_text(b, "nametype", op->nametype);
	put_byte(b, ',');
	put_json_text(b, "fonttype", op->fonttype);
	put_byte(b, ',');
	put_json_num(b, "fontsize", op->fontsize);
	put_byte(b, ',');
	put_json_num(b, "fontwidth", op->fontwidth);
	put_byte(b, ',');
	put_json_num(b, "frameheight", op->frame_height);
	put_byte(b, ',');
	put_json_num(b, "total", total);
	put_byte(b, ',');
	put_json_bool(b, "inverted", op->inverted);
	put_byte(b, ',');
	put_json_bool(b, "flamechart", op->flamechart);
	put_byte(b, ',');
	put_json_bool(b, "diff", op->diff);
	put_byte(b, ',');
	put_json_bool(b, "diffself", op->diff_self);
	put_byte(b, ',');
	put_json_bool(b, "negate", op->negate);
	put_str(b, ",\"bg\":[");
	put_rgb_hex(b, top);
	put_byte(b, ',');
	put_rgb_hex(b, bottom);
	put_str(b, "],");
	put_json_num(b, "frames", m->nr);
	put_byte(b, ',');
	put_json_num(b, "names", (double)fl_strpool__count(m->names));
	put_byte(b, ',');
	put_json_num(b, "colors", m->colors.nr);
	put_byte(b, ',');
	put_json_bool(b, "integral", m->integral);
	put_byte(b, ',');
	put_json_bool(b, "framecolors", m->framecolors);
	put_byte(b, ',');
	put_json_bool(b, "gaps", m->gaps);
	put_byte(b, ',');
	put_json_num(b, "bytes", (double)data_len);
	put_byte(b, '}');
}

static const char CSP[] = "default-src 'none'; script-src 'unsafe-inline'; "
			  "style-src 'unsafe-inline'; img-src data:";

int fl_html__write(struct fl_flametree *t, const struct fl_svg_opts *opts, FILE *f)
{
	struct fl_svg_opts op;
	struct fl_flametree_layout_opts lo = {.sz = sizeof(lo), .min_count = 0};
	struct fl_rgb top, bottom;
	struct model m = {};
	struct bytes data = {}, head = {};
	unsigned char *z = NULL;
	uLongf zlen;
	const char *title;
	double total;
	int err;

	/* The SVG's options; width, minwidth and nameattr are the SVG's only. */
	err = fl_svg__resolve_opts(t, opts, &op, &total, &top, &bottom);
	if (err)
		return err;
	title = op.title;

	lo.sort = op.sort;
	err = fl_flametree__layout(t, &lo, &m.dr, &m.nr_drawn);
	if (err)
		return err;
	err = build_model(&m, t, &op);
	if (err)
		goto out;
	put_data(&data, &m, &op);
	if (data.oom) {
		err = -ENOMEM;
		goto out;
	}
	zlen = compressBound((uLong)data.len);
	z = malloc(zlen);
	if (!z) {
		err = -ENOMEM;
		goto out;
	}
	if (compress2(z, &zlen, data.p ? data.p : (const Bytef *)"", (uLong)data.len,
		      Z_DEFAULT_COMPRESSION) != Z_OK) {
		err = -ENOMEM;
		goto out;
	}

	put_str(&head, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		       "<meta http-equiv=\"Content-Security-Policy\" content=\"");
	put_str(&head, CSP);
	put_str(&head, "\">\n<meta name=\"viewport\" content=\"width=device-width, "
		       "initial-scale=1\">\n<meta name=\"generator\" content=\"flamed\">\n<title>");
	put_html_text(&head, title);
	put_str(&head, "</title>\n<style>\n");
	put_mem(&head, fl_html_view_css, fl_html_view_css_len);
	put_str(&head, "</style>\n<script type=\"application/json\" id=\"flamed-meta\">");
	put_meta(&head, &m, &op, title, total, data.len, top, bottom);
	put_str(&head, "</script>\n<script type=\"application/octet-stream\" id=\"flamed-data\">");
	if (head.oom) {
		err = -ENOMEM;
		goto out;
	}
	fwrite(head.p, 1, head.len, f);
	write_base64(f, z, zlen);
	fputs("</script>\n</head><body>\n<noscript>This flame graph is drawn by its script: "
	      "enable JavaScript to see it.</noscript>\n<script>\n",
	      f);
	fwrite(fl_html_view_js, 1, fl_html_view_js_len, f);
	fputs("\n</script>\n</body></html>\n", f);
	err = ferror(f) ? -EIO : 0;
out:
	model_fini(&m);
	free(data.p);
	free(head.p);
	free(z);
	return err;
}
