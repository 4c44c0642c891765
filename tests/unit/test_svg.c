// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the SVG writer: positions, widths, layouts, diff colours, escaping, goldens. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flamed/profile/flametree.h"
#include "flamed/formats/palette.h"
#include "flamed/formats/svg.h"

#ifndef FIXTURE_SRC_DIR
#error "FIXTURE_SRC_DIR must name the source tests/fixtures directory"
#endif

static struct fl_flametree *tree_of(const char *folded, bool chart, bool reverse)
{
	struct fl_flametree_opts o = {.sz = sizeof(o), .flamechart = chart, .reverse = reverse};
	struct fl_flametree *t = NULL;
	const char *p = folded;

	assert_int_equal(fl_flametree__new(&o, &t), 0);
	while (*p) {
		const char *nl = strchr(p, '\n'), *sp;
		double before = 0, after;
		char *end;

		assert_non_null(nl);
		sp = memrchr(p, ' ', (size_t)(nl - p));
		after = strtod(sp + 1, &end);
		/* "stack before after" when a second number precedes. */
		{
			const char *sp2 = memrchr(p, ' ', (size_t)(sp - p));
			char *e2;
			double b = sp2 ? strtod(sp2 + 1, &e2) : 0;

			if (sp2 && e2 == sp) {
				before = b;
				sp = sp2;
			}
		}
		assert_int_equal(fl_flametree__add(t, p, (size_t)(sp - p), before, after), 0);
		p = nl + 1;
	}
	return t;
}

static char *render(struct fl_flametree *t, struct fl_svg_opts *o)
{
	struct fl_palette_opts po = {.kind = FL_PALETTE_HOT};
	struct fl_palette *pal = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fl_palette__new(&po, &pal), 0);
	o->sz = sizeof(*o);
	o->palette = pal;
	if (!o->width)
		o->width = 1200;
	assert_int_equal(fl_svg__write(t, o, f), 0);
	fclose(f);
	fl_palette__free(pal);
	return buf;
}

struct rect {
	double x, y, w, h;
	unsigned r, g, b;
};

/* The rect of the n-th frame (from 0) whose title starts with "NAME (". */
static bool find_rect(const char *svg, const char *name, int nth, struct rect *r)
{
	char key[256];
	const char *p = svg;

	snprintf(key, sizeof(key), "<title>%s (", name);
	for (;;) {
		p = strstr(p, key);
		if (!p)
			return false;
		if (nth-- == 0)
			break;
		p++;
	}
	p = strstr(p, "<rect ");
	assert_non_null(p);
	assert_int_equal(sscanf(p,
				"<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\" "
				"fill=\"rgb(%u,%u,%u)\"",
				&r->x, &r->y, &r->w, &r->h, &r->r, &r->g, &r->b),
			 7);
	return true;
}

/* Occurrences of needle in the document before its script (the script is ours). */
static size_t count_of(const char *hay, const char *needle)
{
	const char *end = strstr(hay, "<script");
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) && (!end || p < end); p++)
		n++;
	return n;
}

/* Attributes whose name starts with "on" (event handlers), in any tag before the script. */
static size_t event_attributes(const char *svg)
{
	const char *end = strstr(svg, "<script");
	bool in_tag = false, in_value = false;
	size_t n = 0;

	for (const char *p = svg; p < end; p++) {
		if (!in_tag) {
			in_tag = *p == '<';
			continue;
		}
		if (*p == '"')
			in_value = !in_value;
		else if (!in_value && *p == '>')
			in_tag = false;
		else if (!in_value && (p[-1] == ' ' || p[-1] == '\n') && p[0] == 'o' && p[1] == 'n')
			n++;
	}
	return n;
}

static const char basic[] = "app;main;a;b 50\n"
			    "app;main;a;c 30\n"
			    "app;main;d 20\n";

static void assert_near(double a, double b)
{
	if (a < b - 0.011 || a > b + 0.011)
		fail_msg("%g is not %g", a, b);
}

static void test_positions(void **state)
{
	struct fl_flametree *t = tree_of(basic, false, false);
	struct fl_svg_opts o = {.minwidth = 0.1};
	char *svg = render(t, &o);
	struct rect r;

	(void)state;
	/* 1180 px for 100 samples: 11.8 px a sample, from x = 10. */
	assert_true(find_rect(svg, "b", 0, &r));
	assert_near(r.x, 10);
	assert_near(r.w, 590);
	assert_near(r.h, 15);
	assert_true(find_rect(svg, "c", 0, &r));
	assert_near(r.x, 600);
	assert_near(r.w, 354);
	assert_true(find_rect(svg, "d", 0, &r));
	assert_near(r.x, 954);
	assert_near(r.w, 236);
	/* Flame graph: depth 3 (b) is above depth 0 (app), 16 px a row. */
	{
		struct rect app;

		assert_true(find_rect(svg, "app", 0, &app));
		assert_true(find_rect(svg, "b", 0, &r));
		assert_near(app.y - r.y, 48);
	}
	assert_int_equal(count_of(svg, "<g class=\"f\""), 6);
	assert_non_null(strstr(svg, "<title>b (50 samples, 50.00%)</title>"));
	assert_non_null(strstr(svg, "data-total=\"100\""));
	assert_non_null(strstr(svg, ">Flame Graph</text>"));
	/* Labels: "main" fits in its frame. */
	assert_non_null(strstr(svg, ">main</text>"));
	free(svg);
	fl_flametree__free(t);
}

static void test_inverted(void **state)
{
	struct fl_flametree *t = tree_of(basic, false, false);
	struct fl_svg_opts o = {.inverted = true, .minwidth = 0.1};
	char *svg = render(t, &o);
	struct rect app, b;

	(void)state;
	assert_true(find_rect(svg, "app", 0, &app));
	assert_true(find_rect(svg, "b", 0, &b));
	/* Icicle: the root row is the first under the title area, b three rows below. */
	assert_near(app.y, 36);
	assert_near(b.y - app.y, 48);
	assert_non_null(strstr(svg, ">Icicle Graph</text>"));
	assert_non_null(strstr(svg, "data-inverted=\"1\""));
	free(svg);
	fl_flametree__free(t);
}

static void test_reverse_and_chart(void **state)
{
	struct fl_flametree *t = tree_of("p;x;leaf 3\np;y;leaf 1\np;x;leaf 2\n", true, false);
	struct fl_svg_opts o = {.flamechart = true, .width = 120};
	char *svg = render(t, &o);
	struct rect r;

	(void)state;
	/* Flame chart, 100 px for 6 samples: x;leaf, y;leaf, x;leaf again in time order. */
	assert_true(find_rect(svg, "x", 0, &r));
	assert_near(r.x, 10);
	assert_near(r.w, 50);
	assert_true(find_rect(svg, "y", 0, &r));
	assert_near(r.x, 60);
	assert_true(find_rect(svg, "x", 1, &r));
	assert_near(r.x, 76.67);
	assert_near(r.w, 33.33);
	assert_non_null(strstr(svg, ">Flame Chart</text>"));
	assert_non_null(strstr(svg, "data-flamechart=\"1\""));
	free(svg);
	fl_flametree__free(t);

	t = tree_of("p;x;leaf 3\np;y;leaf 1\n", false, true);
	memset(&o, 0, sizeof(o));
	o.width = 120;
	svg = render(t, &o);
	/* Reversed: leaf is the only root, with x (3) and y (1) above it. */
	assert_true(find_rect(svg, "leaf", 0, &r));
	assert_near(r.w, 100);
	assert_false(find_rect(svg, "leaf", 1, &r));
	assert_true(find_rect(svg, "x", 0, &r));
	assert_near(r.w, 75);
	free(svg);
	fl_flametree__free(t);
}

static void test_minwidth_box(void **state)
{
	struct fl_flametree *t;
	struct fl_svg_opts o = {.minwidth = 5};
	char buf[4096] = "r;big 1000\n";
	char *svg;
	struct rect r;

	(void)state;
	for (int i = 0; i < 20; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "r;tiny%02d;below 1\n", i);
	t = tree_of(buf, false, false);
	svg = render(t, &o);
	/* 1180 px / 1020 samples: a tiny frame is 1.16 px < 5, the 20 of them 23 px. */
	assert_null(strstr(svg, "tiny"));
	assert_true(find_rect(svg, "20 frames narrower than 5 px, 20 below", 0, &r));
	assert_near(r.x, 10 + 1000 * 1180.0 / 1020);
	assert_near(r.w, 20 * 1180.0 / 1020);
	assert_int_equal(r.r, r.g); /* grey */
	assert_int_equal(r.g, r.b);
	assert_non_null(strstr(svg, "data-m=\"20\" data-d=\"20\""));
	free(svg);
	/* As a percentage: 3% of 1180 px = 35.4 px, wider than the box: nothing narrow drawn. */
	memset(&o, 0, sizeof(o));
	o.minwidth_pct = 3;
	svg = render(t, &o);
	assert_int_equal(count_of(svg, "<g class=\"f"), 2);
	free(svg);
	fl_flametree__free(t);
}

static void test_diff_colours(void **state)
{
	struct fl_flametree *t =
		tree_of("a;grew 10 40\na;shrank 40 10\na;same 20 20\na;new 0 15\n", false, false);
	struct fl_svg_opts o = {.diff = true};
	char *svg = render(t, &o);
	struct rect grew, shrank, same, nw;

	(void)state;
	assert_true(find_rect(svg, "grew", 0, &grew));
	assert_true(find_rect(svg, "shrank", 0, &shrank));
	assert_true(find_rect(svg, "same", 0, &same));
	assert_true(find_rect(svg, "new", 0, &nw));
	assert_true(grew.r > grew.b + 50);			   /* red */
	assert_true(shrank.b > shrank.r + 50);			   /* blue */
	assert_true(same.r > 200 && same.g > 200 && same.b > 200); /* near white */
	{
		struct fl_rgb c = fl_palette__new_color();

		assert_int_equal(nw.r, c.r);
		assert_int_equal(nw.g, c.g);
		assert_int_equal(nw.b, c.b);
	}
	/* Widths from after; the tooltip has both counts and the change. */
	assert_near(grew.w, 40 * 1180.0 / 85);
	assert_non_null(
		strstr(svg, "<title>grew (40 samples, 47.06%; before: 10, +30, +300.00%)</title>"));
	assert_non_null(strstr(
		svg, "<title>shrank (10 samples, 11.76%; before: 40, -30, -75.00%)</title>"));
	assert_non_null(
		strstr(svg, "<title>new (15 samples, 17.65%; before: 0, +15, new)</title>"));
	assert_non_null(strstr(svg, "data-a=\"10\""));
	free(svg);
	/* Negated: the colours swap. */
	o = (struct fl_svg_opts){.diff = true, .negate = true};
	svg = render(t, &o);
	assert_true(find_rect(svg, "grew", 0, &grew));
	assert_true(grew.b > grew.r + 50);
	free(svg);
	fl_flametree__free(t);
}

static void test_annotations_and_separator(void **state)
{
	struct fl_flametree *t = tree_of("p;sys_read_[k] 5\np;-;waker 5\n", false, false);
	struct fl_svg_opts o = {};
	char *svg = render(t, &o);
	struct rect r;

	(void)state;
	/* The annotation is not shown, in the title or the label. */
	assert_true(find_rect(svg, "sys_read", 0, &r));
	assert_null(strstr(svg, "_[k]"));
	assert_true(find_rect(svg, "-", 0, &r));
	assert_int_equal(r.r, r.g);
	assert_int_equal(r.g, r.b);
	free(svg);
	fl_flametree__free(t);
}

/* Every hostile byte is escaped or replaced: one script element, no markup from the input. */
static void test_hostile(void **state)
{
	static const char *const names[] = {
		"<script>alert(1)</script>",
		"]]>",
		"</script>",
		"<!--",
		"-->",
		"onload=alert(1)",
		"\" onmouseover=\"x",
		"'",
		"&amp;",
		"a\x01\x02\x1f\x7f"
		"b",
		"\xff\xfe\xc0\xaf",
		"\xed\xa0\x80",
		"\xef\xbf\xbe",
		"\xe2\x82",
		"ok\xe2\x82\xac",
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct fl_flametree *t;
	struct fl_svg_opts o = {.title = "<script>x</script>]]>",
				.subtitle = "\" onload=\"y",
				.notes = "</desc><script>z</script>",
				.countname = "<b>",
				.nametype = "&",
				.fonttype = "\"><script>",
				.minwidth = 0};
	char *svg;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		fprintf(f, "proc;%s 3\n", names[i]);
	fclose(f);
	t = tree_of(buf, false, false);
	free(buf);
	/* A 64 KiB name too. */
	{
		size_t n = 64 * 1024;
		char *big = malloc(n + 8);

		assert_non_null(big);
		memcpy(big, "proc;", 5);
		memset(big + 5, '<', n);
		assert_int_equal(fl_flametree__add(t, big, n + 5, 0, 3), 0);
		free(big);
	}
	svg = render(t, &o);
	/* Before the script: no script, no CDATA end, no comment, no event attribute. */
	assert_int_equal(count_of(svg, "<script"), 0);
	assert_non_null(strstr(svg, "<script"));
	assert_null(strstr(strstr(svg, "<script") + 1, "<script"));
	assert_int_equal(count_of(svg, "]]>"), 0);
	assert_int_equal(count_of(svg, "<!--"), 0);
	assert_int_equal(count_of(svg, "<title>"), count_of(svg, "</title>"));
	assert_int_equal(event_attributes(svg), 0);
	assert_non_null(strstr(svg, "&lt;script&gt;alert(1)&lt;/script&gt;"));
	/* Control characters and invalid UTF-8 became U+FFFD; valid UTF-8 stays. */
	assert_non_null(strstr(svg, "a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
				    "b"));
	assert_non_null(strstr(svg, "ok\xe2\x82\xac"));
	for (const char *p = svg; p < strstr(svg, "<script"); p++)
		assert_true(((unsigned char)*p >= 0x20 && *p != 0x7f) || *p == '\n');
	free(svg);
	fl_flametree__free(t);
}

/* Deep stacks: nesting stops at 64 levels, deeper frames are flat with their depth. */
static void test_deep_stack(void **state)
{
	struct fl_flametree *t = tree_of("", false, false);
	struct fl_str *frames = calloc(300, sizeof(*frames));
	char names[300][8];
	struct fl_svg_opts o = {.minwidth = 0.1};
	char *svg;
	int depth = 0, max_depth = 0;

	(void)state;
	assert_non_null(frames);
	for (int i = 0; i < 300; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d", i);
		frames[i] = (struct fl_str){names[i], strlen(names[i])};
	}
	assert_int_equal(fl_flametree__add_frames(t, frames, 300, 0, 5), 0);
	assert_int_equal(fl_flametree__add_frames(t, frames, 200, 0, 5), 0);
	free(frames);
	svg = render(t, &o);
	/* Element nesting of the frames, counted on the <g ...> and </g> of #frames. */
	for (const char *p = strstr(svg, "<g id=\"frames\">") + 1;
	     p < strstr(svg, "<g id=\"labels\">"); p++) {
		if (!strncmp(p, "<g ", 3) && ++depth > max_depth)
			max_depth = depth;
		else if (!strncmp(p, "</g>", 4))
			depth--;
	}
	assert_int_equal(depth, -1);	 /* the count ends with #frames' own </g> */
	assert_int_equal(max_depth, 65); /* 64 nested levels, and the flat ones inside the last */
	assert_int_equal(count_of(svg, "<g class=\"f\""), 300);
	assert_int_equal(count_of(svg, "data-depth="), 300 - 64);
	assert_non_null(strstr(svg, "data-depth=\"64\"><title>f64 "));
	assert_non_null(strstr(svg, "data-depth=\"299\"><title>f299 "));
	free(svg);
	fl_flametree__free(t);
}

/* Numbers: exact for the script, bounded for people, whatever the counts. */
static void test_numbers(void **state)
{
	struct fl_flametree *t =
		tree_of("a;x 1234567890123.25\na;y 1\nb;tiny 0.000000000000000001 10000000000000\n",
			false, false);
	struct fl_svg_opts o = {.diff = true, .minwidth = 0};
	char *svg = render(t, &o);

	(void)state;
	assert_non_null(strstr(svg, "data-c=\"1234567890123.25\""));
	assert_non_null(strstr(svg, "data-c=\"1234567890124.25\""));
	/* A change of 1e33 percent prints short, without reading past a buffer. */
	assert_non_null(strstr(svg, "+1e+33%)</title>"));
	for (const char *p = svg; p < strstr(svg, "<script"); p++)
		assert_true(*p != '\0');
	free(svg);
	fl_flametree__free(t);
}

static void test_notes_keep_lines(void **state)
{
	struct fl_flametree *t = tree_of("a 1\n", false, false);
	struct fl_svg_opts o = {.notes = "line one\nline\ttwo\x01<"};
	char *svg = render(t, &o);

	(void)state;
	assert_non_null(
		strstr(svg, "<desc id=\"notes\">line one\nline\ttwo\xef\xbf\xbd&lt;</desc>"));
	free(svg);
	fl_flametree__free(t);
}

/* Golden files: the whole document before the script, for small inputs. */
static void check_golden(const char *name, const char *svg)
{
	char path[512];
	const char *end = strstr(svg, "<script");
	size_t n = (size_t)(end - svg);
	FILE *f;
	char *want;
	long wlen;

	snprintf(path, sizeof(path), "%s/golden/%s", FIXTURE_SRC_DIR, name);
	if (getenv("FLAMED_REGEN_GOLDEN")) {
		f = fopen(path, "w");
		assert_non_null(f);
		fwrite(svg, 1, n, f);
		fclose(f);
	}
	f = fopen(path, "r");
	if (!f)
		fail_msg("missing golden file %s (FLAMED_REGEN_GOLDEN=1 writes it)", path);
	fseek(f, 0, SEEK_END);
	wlen = ftell(f);
	rewind(f);
	want = malloc((size_t)wlen + 1);
	assert_int_equal(fread(want, 1, (size_t)wlen, f), (size_t)wlen);
	want[wlen] = '\0';
	fclose(f);
	if ((size_t)wlen != n || memcmp(want, svg, n)) {
		size_t i = 0;

		while (i < n && i < (size_t)wlen && want[i] == svg[i])
			i++;
		fail_msg("%s differs from the output at byte %zu: \"%.60s\" vs \"%.60s\"", path, i,
			 want + i, svg + i);
	}
	free(want);
}

static void test_goldens(void **state)
{
	static const char input[] = "web;main;handle;parse 120\n"
				    "web;main;handle;render;layout 80\n"
				    "web;main;handle;render 15\n"
				    "web;main;idle 2\n"
				    "web;gc_[k] 30\n"
				    "db;query;scan 55\n"
				    "db;query;tiny1 1\n"
				    "db;query;tiny2 1\n";
	struct {
		const char *file;
		bool chart, reverse;
		struct fl_svg_opts o;
	} cases[] = {
		{"svg_basic.svg", false, false, {.minwidth = 0.1}},
		{"svg_inverted.svg", false, false, {.inverted = true, .minwidth = 0.1}},
		{"svg_reverse.svg", false, true, {.minwidth = 0.1}},
		{"svg_flamechart.svg", true, false, {.flamechart = true, .minwidth = 0.1}},
		{"svg_minwidth.svg", false, false, {.minwidth = 5, .sort = FL_SORT_COUNT}},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fl_flametree *t = tree_of(input, cases[i].chart, cases[i].reverse);
		char *svg = render(t, &cases[i].o);

		check_golden(cases[i].file, svg);
		free(svg);
		fl_flametree__free(t);
	}
	{
		struct fl_flametree *t = tree_of("web;main;handle 100 150\nweb;main;idle 50 20\n"
						 "web;gc 30 0\nweb;new 0 10\n",
						 false, false);
		struct fl_svg_opts o = {.diff = true, .minwidth = 0.1};
		char *svg = render(t, &o);

		check_golden("svg_diff.svg", svg);
		free(svg);
		fl_flametree__free(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_positions),
		cmocka_unit_test(test_inverted),
		cmocka_unit_test(test_reverse_and_chart),
		cmocka_unit_test(test_minwidth_box),
		cmocka_unit_test(test_diff_colours),
		cmocka_unit_test(test_annotations_and_separator),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_deep_stack),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_notes_keep_lines),
		cmocka_unit_test(test_goldens),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
