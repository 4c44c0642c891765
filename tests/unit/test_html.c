// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the HTML writer: the page's data read back by an independent
 * decoder of docs/html-format.md (every frame, depths, counts, gaps, diff
 * columns, colours), and what hostile names and titles can do to the page.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include <cmocka.h>

#include "flamed/formats/html.h"
#include "flamed/formats/palette.h"
#include "flamed/profile/flametree.h"

/* "stack COUNT" or "stack BEFORE AFTER" lines. */
static struct fl_flametree *tree_of(const char *folded)
{
	struct fl_flametree_opts o = {.sz = sizeof(o)};
	struct fl_flametree *t = NULL;
	const char *p = folded;

	assert_int_equal(fl_flametree__new(&o, &t), 0);
	while (*p) {
		const char *nl = strchr(p, '\n'), *sp, *sp2;
		double before = 0, after;
		char *end;

		assert_non_null(nl);
		sp = memrchr(p, ' ', (size_t)(nl - p));
		after = strtod(sp + 1, &end);
		sp2 = memrchr(p, ' ', (size_t)(sp - p));
		if (sp2) {
			char *e2;
			double b = strtod(sp2 + 1, &e2);

			if (e2 == sp) {
				before = b;
				sp = sp2;
			}
		}
		assert_int_equal(fl_flametree__add(t, p, (size_t)(sp - p), before, after), 0);
		p = nl + 1;
	}
	return t;
}

static char *render(struct fl_flametree *t, struct fl_svg_opts *o, enum fl_palette_kind kind)
{
	struct fl_palette_opts po = {.kind = kind};
	struct fl_palette *pal = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fl_palette__new(&po, &pal), 0);
	o->sz = sizeof(*o);
	o->palette = o->diff ? NULL : pal;
	assert_int_equal(fl_html__write(t, o, f), 0);
	fclose(f);
	fl_palette__free(pal);
	return buf;
}

/* ---- an independent reader of the page ---- */

struct page {
	char *meta; /* the JSON text */
	unsigned char *data;
	size_t len, off;
	uint64_t frames, names, colors;
	bool integral, gaps, diff, framecolors;
	char **name;	 /* names[names] */
	unsigned char *rgb;
	uint64_t *namecolor;
	int64_t *depth;
	uint64_t *nameidx, *color;
	double *count, *gap, *before;
};

/* The text between "BEGIN" and the next "</script>", copied. */
static char *between(const char *html, const char *begin)
{
	const char *s = strstr(html, begin), *e;

	assert_non_null(s);
	s += strlen(begin);
	e = strstr(s, "</script>");
	assert_non_null(e);
	return strndup(s, (size_t)(e - s));
}

static double meta_num(const char *meta, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(meta, k);
	assert_non_null(p);
	return strtod(p + strlen(k), NULL);
}

static bool meta_bool(const char *meta, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\":", key);
	p = strstr(meta, k);
	assert_non_null(p);
	p += strlen(k);
	assert_true(!strncmp(p, "true", 4) || !strncmp(p, "false", 5));
	return !strncmp(p, "true", 4);
}

static int b64val(char c)
{
	const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = c ? strchr(a, c) : NULL;

	return p ? (int)(p - a) : -1;
}

static unsigned char *unbase64(const char *s, size_t *len)
{
	size_t n = strlen(s), o = 0;
	unsigned char *out = malloc(n / 4 * 3 + 3);

	assert_int_equal(n % 4, 0);
	for (size_t i = 0; i < n; i += 4) {
		int v[4];

		for (int k = 0; k < 4; k++)
			v[k] = s[i + k] == '=' ? 0 : b64val(s[i + k]);
		for (int k = 0; k < 4; k++)
			assert_true(v[k] >= 0);
		out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (s[i + 2] != '=')
			out[o++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		if (s[i + 3] != '=')
			out[o++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
	}
	*len = o;
	return out;
}

static uint64_t varint(struct page *p)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		unsigned char c;

		assert_true(p->off < p->len);
		c = p->data[p->off++];
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	fail_msg("a varint longer than 9 bytes");
	return 0;
}

static double count(struct page *p)
{
	uint64_t u = 0;
	double d;

	if (p->integral)
		return (double)varint(p);
	assert_true(p->off + 8 <= p->len);
	for (int i = 0; i < 8; i++)
		u |= (uint64_t)p->data[p->off++] << (8 * i);
	memcpy(&d, &u, sizeof(d));
	return d;
}

static void read_page(const char *html, struct page *p)
{
	char *b64;
	unsigned char *z;
	size_t zlen;
	uLongf len;

	memset(p, 0, sizeof(*p));
	p->meta = between(html, "<script type=\"application/json\" id=\"flamed-meta\">");
	p->frames = (uint64_t)meta_num(p->meta, "frames");
	p->names = (uint64_t)meta_num(p->meta, "names");
	p->colors = (uint64_t)meta_num(p->meta, "colors");
	p->integral = meta_bool(p->meta, "integral");
	p->gaps = meta_bool(p->meta, "gaps");
	p->diff = meta_bool(p->meta, "diff");
	p->framecolors = meta_bool(p->meta, "framecolors");
	b64 = between(html, "<script type=\"application/octet-stream\" id=\"flamed-data\">");
	z = unbase64(b64, &zlen);
	len = (uLongf)meta_num(p->meta, "bytes");
	p->data = malloc(len + 1);
	assert_int_equal(uncompress(p->data, &len, z, zlen), Z_OK);
	assert_int_equal(len, (uLongf)meta_num(p->meta, "bytes"));
	p->len = len;
	free(b64);
	free(z);

	p->name = calloc(p->names + 1, sizeof(*p->name));
	for (uint64_t i = 0; i < p->names; i++) {
		unsigned char *nl = memchr(p->data + p->off, '\n', p->len - p->off);

		assert_non_null(nl);
		p->name[i] = strndup((char *)p->data + p->off, (size_t)(nl - p->data - p->off));
		p->off = (size_t)(nl - p->data) + 1;
	}
	assert_true(p->off + 3 * p->colors <= p->len);
	p->rgb = p->data + p->off;
	p->off += 3 * p->colors;
	p->namecolor = calloc(p->names + 1, sizeof(uint64_t));
	for (uint64_t i = 0; i < p->names; i++) {
		p->namecolor[i] = varint(p);
		assert_true(p->namecolor[i] < p->colors);
	}
	p->depth = calloc(p->frames + 1, sizeof(int64_t));
	p->nameidx = calloc(p->frames + 1, sizeof(uint64_t));
	p->color = calloc(p->frames + 1, sizeof(uint64_t));
	p->count = calloc(p->frames + 1, sizeof(double));
	p->gap = calloc(p->frames + 1, sizeof(double));
	p->before = calloc(p->frames + 1, sizeof(double));
	for (uint64_t i = 0; i < p->frames; i++) {
		uint64_t zz = varint(p);
		int64_t delta = zz & 1 ? -(int64_t)((zz + 1) / 2) : (int64_t)(zz / 2);

		p->depth[i] = (i ? p->depth[i - 1] : -1) + 1 + delta;
		assert_true(p->depth[i] >= 0);
	}
	for (uint64_t i = 0; i < p->frames; i++) {
		p->nameidx[i] = varint(p);
		assert_true(p->nameidx[i] < p->names);
	}
	for (uint64_t i = 0; i < p->frames; i++)
		p->count[i] = count(p);
	if (p->gaps)
		for (uint64_t i = 0; i < p->frames; i++)
			p->gap[i] = count(p);
	if (p->diff)
		for (uint64_t i = 0; i < p->frames; i++)
			p->before[i] = count(p);
	for (uint64_t i = 0; i < p->frames; i++) {
		p->color[i] = p->framecolors ? varint(p) : p->namecolor[p->nameidx[i]];
		assert_true(p->color[i] < p->colors);
	}
	assert_int_equal(p->off, p->len); /* every byte accounted for */
}

static void page_free(struct page *p)
{
	for (uint64_t i = 0; i < p->names; i++)
		free(p->name[i]);
	free(p->name);
	free(p->meta);
	free(p->data);
	free(p->namecolor);
	free(p->depth);
	free(p->nameidx);
	free(p->color);
	free(p->count);
	free(p->gap);
	free(p->before);
}

static const char *frame_name(const struct page *p, uint64_t i)
{
	return p->name[p->nameidx[i]];
}

static struct fl_rgb frame_rgb(const struct page *p, uint64_t i)
{
	const unsigned char *c = p->rgb + 3 * p->color[i];

	return (struct fl_rgb){c[0], c[1], c[2]};
}

/* Occurrences of needle in hay, ignoring case. */
static size_t count_ci(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *s = strcasestr(hay, needle); s; s = strcasestr(s + 1, needle))
		n++;
	return n;
}

/* ---- tests ---- */

static void test_columns(void **state)
{
	struct fl_flametree *t = tree_of("app;main;parse 3\napp;main;lex 2\nidle 1\n");
	struct fl_svg_opts o = {.sort = FL_SORT_NAME};
	char *html = render(t, &o, FL_PALETTE_HOT);
	struct page p;
	static const char *const names[] = {"app", "main", "lex", "parse", "idle"};
	static const int64_t depths[] = {0, 1, 2, 2, 0};
	static const double counts[] = {5, 5, 2, 3, 1};

	(void)state;
	read_page(html, &p);
	assert_int_equal(p.frames, 5);
	assert_int_equal(p.names, 5);
	assert_true(p.integral);
	assert_false(p.gaps); /* by name: every frame starts where its place is */
	assert_false(p.diff);
	assert_false(p.framecolors);
	assert_int_equal((int)meta_num(p.meta, "total"), 6);
	for (int i = 0; i < 5; i++) {
		assert_string_equal(frame_name(&p, (uint64_t)i), names[i]);
		assert_int_equal(p.depth[i], depths[i]);
		assert_true(p.count[i] == counts[i]);
	}
	assert_non_null(strstr(html, "<!DOCTYPE html>"));
	assert_non_null(strstr(html, "Content-Security-Policy\" content=\"default-src 'none';"));
	assert_non_null(strstr(html, "<title>Flame Graph</title>"));
	page_free(&p);
	free(html);
	fl_flametree__free(t);
}

/* flamegraph.pl's order: a frame's own samples come before its callees, so they start after a gap. */
static void test_gaps(void **state)
{
	struct fl_flametree *t = tree_of("a 4\na;b 3\na;c 1\n");
	struct fl_svg_opts o = {.sort = FL_SORT_LINES};
	char *html = render(t, &o, FL_PALETTE_HOT);
	struct page p;

	(void)state;
	read_page(html, &p);
	assert_true(p.gaps);
	assert_int_equal(p.frames, 3);
	assert_string_equal(frame_name(&p, 1), "b");
	assert_true(p.gap[0] == 0);
	assert_true(p.gap[1] == 4); /* b starts after a's own 4 */
	assert_true(p.gap[2] == 0); /* c right after b */
	page_free(&p);
	free(html);
	fl_flametree__free(t);
}

/* Nothing is merged: frames far narrower than a pixel are all there. */
static void test_every_frame(void **state)
{
	struct fl_flametree_opts to = {.sz = sizeof(to)};
	struct fl_flametree *t = NULL;
	struct fl_svg_opts o = {.sort = FL_SORT_NAME, .minwidth = 50};
	char stack[64], *html;
	struct page p;
	uint64_t leaves = 0;

	(void)state;
	assert_int_equal(fl_flametree__new(&to, &t), 0);
	assert_int_equal(fl_flametree__add(t, "main;hot", 8, 0, 1e6), 0);
	for (int i = 0; i < 5000; i++) {
		int n = snprintf(stack, sizeof(stack), "main;cold%04d;leaf", i);

		assert_int_equal(fl_flametree__add(t, stack, (size_t)n, 0, 1), 0);
	}
	html = render(t, &o, FL_PALETTE_HOT);
	read_page(html, &p);
	assert_int_equal(p.frames, fl_flametree__nr_frames(t));
	assert_int_equal(p.frames, 2 + 2 * 5000);
	for (uint64_t i = 0; i < p.frames; i++)
		if (!strcmp(frame_name(&p, i), "leaf")) {
			assert_int_equal(p.depth[i], 2);
			assert_true(p.count[i] == 1);
			leaves++;
		}
	assert_int_equal(leaves, 5000);
	assert_int_equal(p.names, 5000 + 3); /* "leaf" once in the table */
	page_free(&p);
	free(html);
	fl_flametree__free(t);
}

static void test_diff(void **state)
{
	struct fl_flametree *t = tree_of("a;b 10 30\na;c 20 5\na;d 0 7\n");
	struct fl_svg_opts o = {.sort = FL_SORT_NAME, .diff = true};
	char *html = render(t, &o, FL_PALETTE_HOT);
	struct page p;
	double max = 0;

	(void)state;
	read_page(html, &p);
	assert_true(p.diff);
	assert_true(p.framecolors);
	assert_int_equal(p.frames, 4);
	for (uint64_t i = 0; i < p.frames; i++)
		if (fabs(p.count[i] - p.before[i]) > max)
			max = fabs(p.count[i] - p.before[i]);
	for (uint64_t i = 0; i < p.frames; i++) {
		struct fl_rgb want = fl_palette__diff_color(p.before[i], p.count[i], max, false);
		struct fl_rgb got = frame_rgb(&p, i);

		assert_int_equal(got.r, want.r);
		assert_int_equal(got.g, want.g);
		assert_int_equal(got.b, want.b);
	}
	/* a: 30 before, 42 after; b grew (red), c shrank (blue), d is new. */
	assert_true(p.before[0] == 30 && p.count[0] == 42);
	assert_string_equal(frame_name(&p, 1), "b");
	assert_true(frame_rgb(&p, 1).r == 255 && frame_rgb(&p, 1).b < 255);
	assert_string_equal(frame_name(&p, 2), "c");
	assert_true(frame_rgb(&p, 2).b == 255 && frame_rgb(&p, 2).r < 255);
	assert_string_equal(frame_name(&p, 3), "d");
	assert_memory_equal(&(struct fl_rgb[]){fl_palette__new_color()}[0],
			    &(struct fl_rgb[]){frame_rgb(&p, 3)}[0], sizeof(struct fl_rgb));
	page_free(&p);
	free(html);
	fl_flametree__free(t);
}

static void test_fractions(void **state)
{
	struct fl_flametree *t = tree_of("a;b 0.25\na 1.5\n");
	struct fl_svg_opts o = {.sort = FL_SORT_LINES};
	char *html = render(t, &o, FL_PALETTE_HOT);
	struct page p;

	(void)state;
	read_page(html, &p);
	assert_false(p.integral);
	assert_true(p.count[0] == 1.75);
	assert_true(p.count[1] == 0.25);
	assert_true(p.gap[1] == 1.5);
	page_free(&p);
	free(html);
	fl_flametree__free(t);
}

/* One colour per function; the annotation picks it and is not shown. */
static void test_colours(void **state)
{
	struct fl_flametree *t =
		tree_of("a;b;memcpy 1\nc;memcpy 1\nd;do_syscall_64_[k] 1\nd;do_syscall_64 1\n");
	struct fl_svg_opts o = {.sort = FL_SORT_NAME};
	char *html = render(t, &o, FL_PALETTE_HOT);
	struct page p;
	int memcpy_seen = 0, sys_k = -1, sys = -1;
	uint64_t memcpy_color = 0;

	(void)state;
	read_page(html, &p);
	for (uint64_t i = 0; i < p.frames; i++) {
		if (!strcmp(frame_name(&p, i), "memcpy")) {
			if (memcpy_seen++)
				assert_int_equal(p.color[i], memcpy_color);
			memcpy_color = p.color[i];
		}
		if (!strcmp(frame_name(&p, i), "do_syscall_64")) {
			if (sys < 0)
				sys = (int)i;
			else
				sys_k = (int)i;
		}
	}
	assert_int_equal(memcpy_seen, 2);
	assert_true(sys >= 0 && sys_k >= 0);
	/* Two entries, shown alike, coloured apart: one of them is the kernel's orange. */
	assert_int_not_equal(p.nameidx[sys], p.nameidx[sys_k]);
	assert_int_not_equal(p.color[sys], p.color[sys_k]);
	assert_null(strstr(html, "_[k]"));
	page_free(&p);
	free(html);
	fl_flametree__free(t);
}

static void test_hostile(void **state)
{
	struct fl_flametree_opts to = {.sz = sizeof(to)};
	struct fl_flametree *t = NULL;
	struct fl_svg_opts o = {
		.sort = FL_SORT_NAME,
		.title = "</script><script>alert(1)</script>\xe2\x80\xa8",
		.subtitle = "<!-- a & b \"c\" \xff\x01",
		.notes = "\xe2\x80\xae" "evil",
		.countname = "</SCRIPT>",
	};
	const size_t long_len = 100000;
	char *big = malloc(long_len + 1), *html, *head;
#define LIT(s) {s, sizeof(s) - 1}
	const struct fl_str frames[] = {
		LIT("</script><script>alert(2)</script>"),
		LIT("bad\xff\xfe utf8 \x01\x1b[31m"),
		LIT("abc\xe2\x80\xae" "fed"),
		{big, long_len},
	};
#undef LIT
	struct page p;

	(void)state;
	memset(big, 'x', long_len);
	big[long_len] = '\0';
	assert_int_equal(fl_flametree__new(&to, &t), 0);
	assert_int_equal(fl_flametree__add_frames(t, frames, 4, 0, 1), 0);
	html = render(t, &o, FL_PALETTE_HOT);

	/*
	 * Only our own elements: the meta and the data in the head, the viewer's
	 * script in the body (whose text, ours, may mention "<script>" in a comment,
	 * harmless without "<!--"; it has no end tag but its own).
	 */
	head = strndup(html, (size_t)(strstr(html, "</head>") - html));
	assert_int_equal(count_ci(head, "<script"), 2);
	assert_int_equal(count_ci(head, "</script"), 2);
	assert_int_equal(count_ci(html, "</script"), 3);
	assert_int_equal(count_ci(html, "<!--"), 0);
	free(head);
	assert_non_null(strstr(html, "<title>&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
	read_page(html, &p);
	assert_non_null(strstr(p.meta, "\"title\":\"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"
					"\\u003c/script\\u003e\\u2028\""));
	assert_non_null(strstr(p.meta, "\"subtitle\":\"\\u003c!-- a \\u0026 b \\\"c\\\" "
					"\xef\xbf\xbd\xef\xbf\xbd\""));
	assert_non_null(strstr(p.meta, "\"notes\":\"\\u003cU+202E\\u003eevil\""));
	assert_int_equal(p.frames, 4);
	/* In the data, names keep their markup characters: base64 cannot end an element. */
	assert_string_equal(frame_name(&p, 0), "</script><script>alert(2)</script>");
	assert_string_equal(frame_name(&p, 1),
			    "bad\xef\xbf\xbd\xef\xbf\xbd utf8 \xef\xbf\xbd\xef\xbf\xbd[31m");
	assert_string_equal(frame_name(&p, 2), "abc<U+202E>fed");
	assert_int_equal(strlen(frame_name(&p, 3)), long_len);
	page_free(&p);
	free(html);
	free(big);
	fl_flametree__free(t);
}

static void test_empty_and_bad_options(void **state)
{
	struct fl_flametree_opts to = {.sz = sizeof(to)};
	struct fl_flametree *t = NULL;
	struct fl_svg_opts o = {.sort = FL_SORT_NAME, .subtitle = "No samples"};
	char *html;
	struct page p;
	FILE *f;

	(void)state;
	assert_int_equal(fl_flametree__new(&to, &t), 0);
	html = render(t, &o, FL_PALETTE_HOT);
	read_page(html, &p);
	assert_int_equal(p.frames, 0);
	assert_int_equal(p.names, 0);
	page_free(&p);
	free(html);
	/* No palette for a graph that is not a diff. */
	f = fopen("/dev/null", "w");
	o.palette = NULL;
	assert_int_equal(fl_html__write(t, &o, f), -EINVAL);
	fclose(f);
	fl_flametree__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_columns),
		cmocka_unit_test(test_gaps),
		cmocka_unit_test(test_every_frame),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_fractions),
		cmocka_unit_test(test_colours),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_empty_and_bad_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
