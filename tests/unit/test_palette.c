// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of frame colours: families, annotations, --hash, colour maps, diff and backgrounds. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flamed/common/cleanup.h"
#include "flamed/formats/palette.h"

static const enum fl_palette_kind all_kinds[] = {
	FL_PALETTE_HOT,	 FL_PALETTE_MEM,  FL_PALETTE_IO,     FL_PALETTE_WAKEUP, FL_PALETTE_CHAIN,
	FL_PALETTE_JAVA, FL_PALETTE_JS,	  FL_PALETTE_PERL,   FL_PALETTE_RED,	FL_PALETTE_GREEN,
	FL_PALETTE_BLUE, FL_PALETTE_AQUA, FL_PALETTE_YELLOW, FL_PALETTE_PURPLE, FL_PALETTE_ORANGE,
};

static struct fl_palette *new_pal(enum fl_palette_kind kind, bool hash)
{
	struct fl_palette_opts opts = {.kind = kind, .hash = hash};
	struct fl_palette *p = NULL;

	assert_int_equal(fl_palette__new(&opts, &p), 0);
	assert_non_null(p);
	return p;
}

static struct fl_rgb col(struct fl_palette *p, const char *name)
{
	return fl_palette__color(p, name, strlen(name), 0);
}

static bool rgb_eq(struct fl_rgb a, struct fl_rgb b)
{
	return a.r == b.r && a.g == b.g && a.b == b.b;
}

static int absdiff(int a, int b)
{
	return a > b ? a - b : b - a;
}

/*
 * The hue families as a viewer would name them. Loose enough to survive a
 * retuned formula, tight enough that no two families of one palette overlap.
 */
static bool is_red(struct fl_rgb c)
{
	return c.r >= 190 && c.g <= 100 && c.b <= 100;
}

static bool is_green(struct fl_rgb c)
{
	return c.g >= 180 && c.r <= 120 && c.b <= 120;
}

static bool is_blue(struct fl_rgb c)
{
	return c.b >= 190 && c.r <= 140 && c.g <= 140;
}

static bool is_aqua(struct fl_rgb c)
{
	return c.g >= 160 && c.b >= 160 && c.r <= 120 && absdiff(c.g, c.b) <= 10;
}

static bool is_yellow(struct fl_rgb c)
{
	return c.r >= 170 && c.g >= 170 && c.b <= 90 && absdiff(c.r, c.g) <= 10;
}

static bool is_purple(struct fl_rgb c)
{
	return c.r >= 170 && c.b >= 170 && c.g <= 140 && absdiff(c.r, c.b) <= 10;
}

static bool is_orange(struct fl_rgb c)
{
	return c.r >= 200 && c.g >= 100 && c.g <= 160 && c.b <= 50;
}

/* hot: red through yellow. Red always dominates, blue stays low, green varies. */
static bool is_hot(struct fl_rgb c)
{
	return c.r >= 200 && c.b <= 60 && c.g < c.r;
}

/* mem: greens, possibly leaning to blue, never to red. */
static bool is_mem(struct fl_rgb c)
{
	return c.g >= 170 && c.g > c.r + 60 && c.g > c.b + 30;
}

/* io: blues with red below green. */
static bool is_io(struct fl_rgb c)
{
	return c.b >= 190 && c.b > c.g + 50 && c.g >= c.r;
}

static bool is_grey(struct fl_rgb c)
{
	return c.r == c.g && c.g == c.b && c.r >= 100 && c.r <= 220;
}

typedef bool (*family_fn)(struct fl_rgb c);

static family_fn kind_family(enum fl_palette_kind kind)
{
	switch (kind) {
	case FL_PALETTE_HOT:
		return is_hot;
	case FL_PALETTE_MEM:
		return is_mem;
	case FL_PALETTE_IO:
		return is_io;
	case FL_PALETTE_WAKEUP:
	case FL_PALETTE_AQUA:
		return is_aqua;
	case FL_PALETTE_CHAIN:
	case FL_PALETTE_BLUE:
		return is_blue;
	case FL_PALETTE_JAVA:
	case FL_PALETTE_JS:
	case FL_PALETTE_PERL:
	case FL_PALETTE_RED:
		return is_red; /* a plain C name in the language palettes */
	case FL_PALETTE_GREEN:
		return is_green;
	case FL_PALETTE_YELLOW:
		return is_yellow;
	case FL_PALETTE_PURPLE:
		return is_purple;
	case FL_PALETTE_ORANGE:
		return is_orange;
	}
	return NULL;
}

static void check_rgb(struct fl_rgb c, family_fn fam, const char *what, const char *name)
{
	if (!fam(c))
		fail_msg("%s: '%s' got rgb(%u,%u,%u)", what, name, c.r, c.g, c.b);
}

static void test_kind_names(void **state)
{
	static const char *const bad[] = {"",	  "HOT",  "hot ",   " hot", "ho",
					  "hott", "rand", "java\n", "grey", "chain2"};
	enum fl_palette_kind k = FL_PALETTE_PURPLE;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(all_kinds); i++) {
		const char *name = fl_palette__kind_name(all_kinds[i]);

		assert_non_null(name);
		assert_int_equal(fl_palette__parse_kind(name, &k), 0);
		assert_int_equal(k, all_kinds[i]);
	}
	assert_string_equal(fl_palette__kind_name(FL_PALETTE_HOT), "hot");
	assert_string_equal(fl_palette__kind_name(FL_PALETTE_WAKEUP), "wakeup");
	assert_string_equal(fl_palette__kind_name(FL_PALETTE_JS), "js");
	assert_null(fl_palette__kind_name((enum fl_palette_kind)99));
	k = FL_PALETTE_PURPLE;
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(fl_palette__parse_kind(bad[i], &k), -EINVAL);
	assert_int_equal(fl_palette__parse_kind(NULL, &k), -EINVAL);
	assert_int_equal(fl_palette__parse_kind("hot", NULL), -EINVAL);
	assert_int_equal(k, FL_PALETTE_PURPLE);
}

static void test_new_free(void **state)
{
	struct fl_palette_opts bad = {.kind = (enum fl_palette_kind)99};
	struct fl_palette *p = NULL;

	(void)state;
	assert_int_equal(fl_palette__new(&bad, &p), -EINVAL);
	assert_null(p);
	assert_int_equal(fl_palette__new(NULL, NULL), -EINVAL);
	/* NULL options: hot, not hashed. */
	assert_int_equal(fl_palette__new(NULL, &p), 0);
	check_rgb(col(p, "main"), is_hot, "default palette", "main");
	fl_palette__free(p);
	fl_palette__free(NULL);
	/* Never fails, even without a palette or a name. */
	assert_true(rgb_eq(fl_palette__color(NULL, "x", 1, 0), fl_palette__grey()));
	p = new_pal(FL_PALETTE_HOT, false);
	assert_true(rgb_eq(fl_palette__color(p, NULL, 3, 0), fl_palette__grey()));
	check_rgb(fl_palette__color(p, NULL, 0, 0), is_hot, "empty name", "");
	fl_palette__free(p);
}

/* Every kind, flamed's own colours: many names, all in the kind's family, and not all alike. */
static void test_families(void **state)
{
	char name[64];
	size_t k, i;
	int mode;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(all_kinds); k++) {
		family_fn fam = kind_family(all_kinds[k]);

		for (mode = 0; mode < 1; mode++) {
			struct fl_palette *p = new_pal(all_kinds[k], mode);
			struct fl_rgb first = {0, 0, 0};
			size_t nr_diff = 0;

			for (i = 0; i < 2000; i++) {
				struct fl_rgb c;

				snprintf(name, sizeof(name), "func%zu", i);
				c = col(p, name);
				check_rgb(c, fam, fl_palette__kind_name(all_kinds[k]), name);
				if (i == 0)
					first = c;
				else if (!rgb_eq(c, first))
					nr_diff++;
			}
			if (nr_diff < 1900)
				fail_msg("%s: only %zu of 2000 colours differ from the first",
					 fl_palette__kind_name(all_kinds[k]), nr_diff);
			fl_palette__free(p);
		}
	}
}

/* Hot in detail: the variation spans red to yellow rather than one shade. */
static void test_hot_spread(void **state)
{
	struct fl_palette *p = new_pal(FL_PALETTE_HOT, false);
	int min_g = 255, max_g = 0;
	size_t i;

	(void)state;
	for (i = 0; i < 5000; i++) {
		struct fl_rgb c = col(p, "f");

		min_g = c.g < min_g ? c.g : min_g;
		max_g = c.g > max_g ? c.g : max_g;
	}
	assert_true(min_g < 70);
	assert_true(max_g > 180);
	fl_palette__free(p);
}

/* Annotations and "-" mean the same in every palette, in both modes. */
static void test_annotations_every_palette(void **state)
{
	static const struct {
		const char *name;
		family_fn fam;
	} cases[] = {
		{"do_syscall_64_[k]", is_orange}, {"_[k]", is_orange},
		{"Interpreter_[j]", is_green},	  {"java/lang/String.hashCode_[j]", is_green},
		{"std::min_[i]", is_aqua},	  {"inlined_[i]", is_aqua},
		{"futex_wait_[w]", is_aqua},	  {"schedule_[k]", is_orange},
		{"main (app.py:3)_[p]", is_blue}, {"Worker.run (/srv/w.py:10)_[p]", is_blue},
	};
	size_t k, i;
	int mode;

	(void)state;
	for (k = 0; k < ARRAY_SIZE(all_kinds); k++) {
		for (mode = 0; mode < 1; mode++) {
			struct fl_palette *p = new_pal(all_kinds[k], mode);

			for (i = 0; i < ARRAY_SIZE(cases); i++)
				check_rgb(col(p, cases[i].name), cases[i].fam,
					  fl_palette__kind_name(all_kinds[k]), cases[i].name);
			assert_true(rgb_eq(col(p, "-"), fl_palette__grey()));
			assert_true(rgb_eq(fl_palette__color(p, "-", 1, FL_COLOR_WAKER),
					   fl_palette__grey()));
			fl_palette__free(p);
		}
	}
	assert_true(is_grey(fl_palette__grey()));
}

/* Lookalikes of annotations are ordinary names. */
static void test_not_annotations(void **state)
{
	static const char *const names[] = {"foo_[x]", "foo_[K]",  "foo[k]", "foo_(k)",
					    "foo_[k",  "foo_[k] ", "_[k]x",  "[k]",
					    "--",      "- ",	   "-x"};
	struct fl_palette *p = new_pal(FL_PALETTE_BLUE, false);
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(names); i++)
		check_rgb(col(p, names[i]), is_blue, "blue", names[i]);
	fl_palette__free(p);
}


static void test_chain(void **state)
{
	char name[64];
	size_t i;
	int mode;

	(void)state;
	for (mode = 0; mode < 1; mode++) { /* --hash is flamegraph.pl's: test_hash_as_flamegraph_pl */
		struct fl_palette *p = new_pal(FL_PALETTE_CHAIN, mode);
		struct fl_palette *hot = new_pal(FL_PALETTE_HOT, mode);

		for (i = 0; i < 500; i++) {
			snprintf(name, sizeof(name), "fn_%zu", i);
			check_rgb(fl_palette__color(p, name, strlen(name), 0), is_blue, "chain",
				  name);
			check_rgb(fl_palette__color(p, name, strlen(name), FL_COLOR_WAKER), is_aqua,
				  "chain waker", name);
			/* The annotation wins over the flag. */
			snprintf(name, sizeof(name), "fn_%zu_[k]", i);
			check_rgb(fl_palette__color(p, name, strlen(name), FL_COLOR_WAKER),
				  is_orange, "chain waker", name);
			/* Only chain honours the flag. */
			check_rgb(fl_palette__color(hot, "fn", 2, FL_COLOR_WAKER), is_hot, "hot",
				  "fn");
		}
		fl_palette__free(p);
		fl_palette__free(hot);
	}
}

struct class_case {
	const char *name;
	family_fn fam;
};

static void check_classes(enum fl_palette_kind kind, const struct class_case *cases, size_t n)
{
	int mode;
	size_t i;

	for (mode = 0; mode < 1; mode++) { /* --hash is flamegraph.pl's: test_hash_as_flamegraph_pl */
		struct fl_palette *p = new_pal(kind, mode);

		for (i = 0; i < n; i++)
			check_rgb(col(p, cases[i].name), cases[i].fam, fl_palette__kind_name(kind),
				  cases[i].name);
		fl_palette__free(p);
	}
}

static void test_java_classes(void **state)
{
	static const struct class_case cases[] = {
		{"java/lang/Thread.run", is_green},
		{"Ljava/lang/Thread;::run", is_green},
		{"org/apache/Foo$Bar.baz", is_green},
		{"org/x/Y$$Lambda$12/0x0000000800c0b040.run", is_green},
		{"java.util.HashMap.get", is_green},
		{"com.example.App.lambda$main$0", is_green},
		{"std::vector<int>::push_back", is_yellow},
		{"JavaThread::run", is_yellow},
		{"_ZN6Thread3runEv", is_yellow},
		{"memcpy", is_red},
		{"Interpreter", is_red},
		{"memcpy.part.0", is_red},
		{"foo.cold", is_red},
		{"foo.constprop.0.isra.0", is_red},
		{"java-1234/1240", is_red},
		{"kworker/0:1", is_red},
		{"operator/", is_red},
		{"[libjvm.so]", is_red},
		{"[unknown]", is_red},
		{"/usr/lib/jvm/libjvm.so", is_red},
		{"java/", is_red},
		{"copy(src/dst)", is_red},
		{"do_syscall_64_[k]", is_orange},
		{"java/lang/Thread.run_[i]", is_aqua},
		{"Interpreter_[j]", is_green},
	};

	(void)state;
	check_classes(FL_PALETTE_JAVA, cases, ARRAY_SIZE(cases));
}

static void test_js_classes(void **state)
{
	static const struct class_case cases[] = {
		{"LazyCompile:~foo /app/server.js:12:3", is_green},
		{"LazyCompile:*bar", is_green},
		{"JS:~handler", is_green},
		{"Builtin:ArrayMap", is_green},
		{"BytecodeHandler:Ldar", is_green},
		{"~foo /app/x.js:1", is_green},
		{"render /app/view.mjs:4", is_green},
		{"load /app/conf.cjs:9", is_green},
		{"v8::internal::Heap::CollectGarbage", is_yellow},
		{"node::Start", is_yellow},
		{"_ZN2v88internal4Heap14CollectGarbageEv", is_yellow},
		{"uv_run", is_red},
		{"node-42/43", is_red},
		{"[node]", is_red},
		{"Lazy:", is_red},
		{"lazyCompile:x", is_red},
		{"epoll_wait_[k]", is_orange},
		{"foo_[j]", is_green},
	};

	(void)state;
	check_classes(FL_PALETTE_JS, cases, ARRAY_SIZE(cases));
}

static void test_perl_classes(void **state)
{
	static const struct class_case cases[] = {
		{"main::foo", is_green},
		{"Foo::Bar::baz", is_green},
		{"main::__ANON__", is_green},
		{"main::__ANON__[/app/x.pl:12]", is_green},
		{"foo /app/script.pl:3", is_green},
		{"Foo/Bar.pm", is_green},
		{"Perl_pp_entersub", is_green},
		{"perl_run", is_green},
		{"XS_Digest__MD5_add", is_green},
		{"std::vector<int>::push_back", is_yellow},
		{"ns::Class::~Class()", is_yellow},
		{"Foo::", is_yellow},
		{"_ZN3Foo3barEv", is_yellow},
		{"memcpy", is_red},
		{"memcpy@plt", is_red},
		{"[libfoo.plugin.so]", is_red},
		{"S_regmatch", is_red},
		{"read_[k]", is_orange},
	};

	(void)state;
	check_classes(FL_PALETTE_PERL, cases, ARRAY_SIZE(cases));
}

/* Default mode: a fixed-seed sequence, so the same calls give the same bytes. */
static void test_sequence_deterministic(void **state)
{
	struct fl_palette *a = new_pal(FL_PALETTE_HOT, false);
	struct fl_palette *b = new_pal(FL_PALETTE_HOT, false);
	struct fl_palette *c = new_pal(FL_PALETTE_HOT, false);
	struct fl_rgb first[64];
	char name[32];
	size_t i, nr_same = 0;

	(void)state;
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "f%zu", i % 37);
		assert_true(rgb_eq(col(a, name), col(b, name)));
	}
	/* Not a hash: the same name draws new colours, and the order matters. */
	for (i = 0; i < ARRAY_SIZE(first); i++)
		first[i] = col(c, "same");
	for (i = 1; i < ARRAY_SIZE(first); i++)
		nr_same += rgb_eq(first[i], first[0]);
	assert_true(nr_same < 4);
	fl_palette__free(a);
	fl_palette__free(b);
	fl_palette__free(c);

	/*
	 * Pinned: the first colours of a fresh palette are part of the SVG's
	 * bytes. Values from an independent reimplementation (splitmix64 from
	 * the seed, hot's formula), not from a run of this code.
	 */
	a = new_pal(FL_PALETTE_HOT, false);
	first[0] = col(a, "main");
	first[1] = col(a, "main");
	fl_palette__free(a);
	assert_int_equal(first[0].r, 233);
	assert_int_equal(first[0].g, 72);
	assert_int_equal(first[0].b, 42);
	assert_int_equal(first[1].r, 231);
	assert_int_equal(first[1].g, 61);
	assert_int_equal(first[1].b, 15);
}

/*
 * --hash: flamegraph.pl's colours. The expected values come from a model
 * of its name hash and palettes written apart from palette.c (in Python:
 * the three first bytes of the name for v1, of the reversed name for v2
 * and v3, everything to the first '`' after the first byte dropped).
 */
static void test_hash_as_flamegraph_pl(void **state)
{
	static const struct {
		enum fl_palette_kind kind;
		const char *name;
		uint8_t r, g, b;
	} cases[] = {
		{FL_PALETTE_HOT, "main", 247, 83, 46},
		{FL_PALETTE_HOT, "start_thread", 241, 156, 40},
		/* hot ignores annotations, as flamegraph.pl's does */
		{FL_PALETTE_HOT, "do_syscall_64_[k]", 236, 189, 34},
		{FL_PALETTE_HOT, "libc.so.6`malloc", 243, 112, 42},
		{FL_PALETTE_HOT, "x", 255, 230, 55},
		{FL_PALETTE_HOT, "ab`", 232, 230, 30},
		{FL_PALETTE_MEM, "main", 0, 232, 76},
		{FL_PALETTE_IO, "main", 101, 101, 236},
		{FL_PALETTE_RED, "main", 219, 79, 79},
		{FL_PALETTE_GREEN, "main", 71, 219, 71},
		{FL_PALETTE_BLUE, "main", 101, 101, 223},
		{FL_PALETTE_YELLOW, "main", 194, 194, 57},
		{FL_PALETTE_PURPLE, "main", 213, 101, 213},
		{FL_PALETTE_AQUA, "main", 71, 184, 184},
		{FL_PALETTE_ORANGE, "main", 213, 113, 0},
		/* the language palettes pick a colour by flamegraph.pl's tests */
		{FL_PALETTE_JAVA, "Ljava/lang/Thread;::run", 87, 234, 87},
		{FL_PALETTE_JAVA, "JavaCalls::call_helper", 203, 203, 60},
		{FL_PALETTE_JAVA, "tcp_sendmsg_[k]", 237, 137, 0},
		{FL_PALETTE_JAVA, "main", 219, 79, 79},
		{FL_PALETTE_JS, "LazyCompile:*bar /app/x.js:3_[j]", 83, 231, 83},
		{FL_PALETTE_JS, "Builtin:ArrayMap", 80, 193, 193},
		{FL_PALETTE_PERL, "Perl_pp_entersub", 102, 247, 102},
		{FL_PALETTE_CHAIN, "main_[w]", 71, 184, 184},
		{FL_PALETTE_CHAIN, "main", 101, 101, 223},
	};
	struct fl_palette *p;
	struct fl_rgb c;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		p = new_pal(cases[i].kind, true);
		c = col(p, cases[i].name);
		if (c.r != cases[i].r || c.g != cases[i].g || c.b != cases[i].b)
			fail_msg("%s --hash '%s': rgb(%u,%u,%u), want rgb(%u,%u,%u)",
				 fl_palette__kind_name(cases[i].kind), cases[i].name, c.r, c.g, c.b,
				 cases[i].r, cases[i].g, cases[i].b);
		/* The same again, in another palette object, after other names. */
		col(p, "noise");
		assert_true(rgb_eq(col(p, cases[i].name), c));
		fl_palette__free(p);
	}
	/* Only len bytes count. */
	p = new_pal(FL_PALETTE_HOT, true);
	assert_true(rgb_eq(fl_palette__color(p, "mainXYZ", 4, 0), col(p, "main")));
	fl_palette__free(p);
}

/* Writes data into a real file, so that NULs and long lines reach the reader as they are. */
static FILE *file_of(const char *data, size_t len)
{
	FILE *f = tmpfile();

	assert_non_null(f);
	if (len)
		assert_int_equal(fwrite(data, 1, len, f), len);
	rewind(f);
	return f;
}

static int load_bytes(struct fl_palette *p, const char *data, size_t len, size_t *nr_bad)
{
	FILE *f = file_of(data, len);
	int err = fl_palette__load_map(p, f, nr_bad);

	fclose(f);
	return err;
}

static int load_str(struct fl_palette *p, const char *s, size_t *nr_bad)
{
	return load_bytes(p, s, strlen(s), nr_bad);
}

/* Saves p into a malloc'd buffer (*len bytes). */
static char *save(const struct fl_palette *p, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	assert_int_equal(fl_palette__save_map(p, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void assert_rgb(struct fl_rgb c, unsigned r, unsigned g, unsigned b)
{
	if (c.r != r || c.g != g || c.b != b)
		fail_msg("rgb(%u,%u,%u), expected rgb(%u,%u,%u)", c.r, c.g, c.b, r, g, b);
}

/* Every line of a saved map is NAME->rgb(...) and the names are in bytewise order. */
static size_t check_saved_sorted(const char *buf, size_t len)
{
	const char *prev = NULL, *line = buf;
	size_t prev_len = 0, nr = 0;

	while (line < buf + len) {
		const char *nl = memchr(line, '\n', (size_t)(buf + len - line));
		const char *arrow = NULL, *s;
		size_t name_len, n;
		int c;

		assert_non_null(nl);
		for (s = line; s + 1 < nl; s++) {
			if (s[0] == '-' && s[1] == '>')
				arrow = s;
		}
		assert_non_null(arrow);
		name_len = (size_t)(arrow - line);
		if (prev) {
			n = prev_len < name_len ? prev_len : name_len;
			c = n ? memcmp(prev, line, n) : 0;
			assert_true(c < 0 || (c == 0 && prev_len < name_len));
		}
		prev = line;
		prev_len = name_len;
		line = nl + 1;
		nr++;
	}
	return nr;
}

static void test_map_basic(void **state)
{
	static const char map[] = "main->rgb(200,100,50)\n"
				  "do_syscall_64_[k]->rgb(1,2,3)\n"
				  "a->b->rgb(7,8,9)\n"
				  "edge->rgb(255,255,255)\n"
				  "zeros->rgb(000,0,010)\n"
				  "crlf->rgb(13,14,15)\r\n"
				  "dup->rgb(1,1,1)\n"
				  "dup->rgb(2,2,2)\n"
				  "\n"
				  "->rgb(4,4,4)\n"
				  "last->rgb(16,17,18)";
	struct fl_palette *p = new_pal(FL_PALETTE_BLUE, true);
	size_t nr_bad = 99;

	(void)state;
	assert_int_equal(load_str(p, map, &nr_bad), 0);
	assert_int_equal(nr_bad, 0);
	assert_rgb(col(p, "main"), 200, 100, 50);
	/* The map wins over annotations and the palette. */
	assert_rgb(col(p, "do_syscall_64_[k]"), 1, 2, 3);
	assert_rgb(col(p, "a->b"), 7, 8, 9);
	assert_rgb(col(p, "edge"), 255, 255, 255);
	assert_rgb(col(p, "zeros"), 0, 0, 10);
	assert_rgb(col(p, "crlf"), 13, 14, 15);
	assert_rgb(col(p, "dup"), 2, 2, 2);
	assert_rgb(fl_palette__color(p, "", 0, 0), 4, 4, 4);
	assert_rgb(col(p, "last"), 16, 17, 18);
	/* Not in the map: the palette's colour, which is then remembered. */
	check_rgb(col(p, "do_syscall_64"), is_blue, "blue", "do_syscall_64");
	check_rgb(col(p, "crlf\r"), is_blue, "blue", "crlf\\r");
	fl_palette__free(p);
}

static void test_map_bad_lines(void **state)
{
	static const char map[] = "good->rgb(1,2,3)\n"
				  "no arrow rgb(1,2,3)\n"
				  "bad-rgb(1,2,3)\n"
				  "x->rgb(256,0,0)\n"
				  "x->rgb(0,1000,0)\n"
				  "x->rgb(0,0,99999999999999999999999)\n"
				  "x->rgb(-1,0,0)\n"
				  "x->rgb(+1,0,0)\n"
				  "x->rgb(0,0,0\n"
				  "x->rgb(0,0,0))\n"
				  "x->rgb(0,0,0) trailing\n"
				  "x->rgb( 1,2,3)\n"
				  "x->rgb(1, 2,3)\n"
				  "x->rgb(1,2)\n"
				  "x->rgb(1,2,3,4)\n"
				  "x->rgb(,2,3)\n"
				  "x->RGB(1,2,3)\n"
				  "x->rgb(0001,2,3)\n"
				  "x->rgb(0x1,2,3)\n"
				  "x->#010203\n"
				  "x-> rgb(1,2,3)\n"
				  "->\n"
				  "-\n"
				  ">\n"
				  "x->rgb(1,2,3)->\n"
				  "x->rgb(1,2,3)\r\r\n"
				  "ok2->rgb(4,5,6)\n";
	struct fl_palette *p = new_pal(FL_PALETTE_RED, false);
	size_t nr_bad = 0;

	(void)state;
	assert_int_equal(load_str(p, map, &nr_bad), 0);
	assert_int_equal(nr_bad, 25);
	assert_rgb(col(p, "good"), 1, 2, 3);
	assert_rgb(col(p, "ok2"), 4, 5, 6);
	/* None of the bad lines made an entry: x gets a red of its own. */
	check_rgb(col(p, "x"), is_red, "red", "x");
	/* NULL nr_bad is fine. */
	assert_int_equal(load_str(p, "junk\n", NULL), 0);
	fl_palette__free(p);
}

static void test_map_nul_bytes(void **state)
{
	static const char map[] = "nul\0name->rgb(10,11,12)\n"
				  "bad->rgb(1\0,2,3)\n"
				  "\0\0\0\n"
				  "bad2->rgb(1,2,3)\0\n"
				  "after->rgb(20,21,22)\n";
	struct fl_palette *p = new_pal(FL_PALETTE_HOT, false);
	size_t nr_bad = 0, len;
	struct fl_rgb c;
	char *buf;

	(void)state;
	/* A line with a NUL is bad, wherever the NUL is: map names hold none. */
	assert_int_equal(load_bytes(p, map, sizeof(map) - 1, &nr_bad), 0);
	assert_int_equal(nr_bad, 4);
	assert_rgb(col(p, "after"), 20, 21, 22);
	/* A frame name with a NUL is coloured by the palette, not remembered. */
	c = fl_palette__color(p, "nul\0name", 8, 0);
	check_rgb(c, is_hot, "hot", "nul\\0name");
	assert_false(rgb_eq(fl_palette__color(p, "nul\0name", 8, 0), c));
	/* "nul" alone is another name, and is remembered. */
	c = col(p, "nul");
	check_rgb(c, is_hot, "hot", "nul");
	assert_true(rgb_eq(col(p, "nul"), c));
	buf = save(p, &len);
	assert_int_equal(check_saved_sorted(buf, len), 2);
	assert_null(memchr(buf, '\0', len));
	free(buf);
	fl_palette__free(p);
}

static void test_map_long_lines(void **state)
{
	const size_t max = 64 * 1024;
	const char *tail = "->rgb(1,2,3)";
	struct fl_palette *p = new_pal(FL_PALETTE_HOT, false);
	size_t nr_bad = 0, name_len = max - strlen(tail), n, len;
	char *data, *buf;

	(void)state;
	data = malloc(4 * max);
	assert_non_null(data);

	/* 200 KiB, then a good line: the reader resumes right after the long one. */
	memset(data, 'a', 200 * 1024);
	n = 200 * 1024;
	n += (size_t)sprintf(data + n, "%s\nok->rgb(4,5,6)\n", tail);
	assert_int_equal(load_bytes(p, data, n, &nr_bad), 0);
	assert_int_equal(nr_bad, 1);
	assert_rgb(col(p, "ok"), 4, 5, 6);

	/* A line of exactly the limit loads; one byte more does not. */
	memset(data, 'b', name_len);
	n = name_len + (size_t)sprintf(data + name_len, "%s\n", tail);
	memset(data + n, 'c', name_len + 1);
	n += name_len + 1;
	n += (size_t)sprintf(data + n, "%s", tail); /* and no newline at the end */
	assert_int_equal(load_bytes(p, data, n, &nr_bad), 0);
	assert_int_equal(nr_bad, 1);
	assert_rgb(fl_palette__color(p, data, name_len, 0), 1, 2, 3);
	memset(data, 'c', name_len + 1);
	check_rgb(fl_palette__color(p, data, name_len + 1, 0), is_hot, "hot", "ccc...");

	/* A line cut at the limit would be valid: it is skipped all the same. */
	memset(data, 'e', name_len);
	n = name_len + (size_t)sprintf(data + name_len, "%sjunk\n", tail);
	assert_int_equal(load_bytes(p, data, n, &nr_bad), 0);
	assert_int_equal(nr_bad, 1);
	check_rgb(fl_palette__color(p, data, name_len, 0), is_hot, "hot", "eee...");

	/* A coloured name too long to load again is not saved. */
	memset(data, 'd', 2 * max);
	check_rgb(fl_palette__color(p, data, 2 * max, 0), is_hot, "hot", "ddd...");
	buf = save(p, &len);
	assert_null(memmem(buf, len, "dddd", 4));
	assert_null(memmem(buf, len, "cccc", 4));
	/* 'e' fits a line with its loaded colour, but not with every colour: not remembered. */
	assert_null(memmem(buf, len, "eeee", 4));
	assert_non_null(memmem(buf, len, "bbbb", 4));
	free(buf);
	free(data);
	fl_palette__free(p);
}

/* Random bytes must neither crash nor leave the map unable to round-trip. */
static void test_map_garbage(void **state)
{
	const size_t size = 1024 * 1024;
	uint64_t x = 0x123456789abcdefULL;
	struct fl_palette *p = new_pal(FL_PALETTE_HOT, false), *q;
	size_t nr_bad = 0, i, len1, len2;
	char *data, *buf1, *buf2;

	(void)state;
	data = malloc(size);
	assert_non_null(data);
	for (i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		data[i] = (char)(x >> 24);
		/* Sprinkle the format's own characters, and valid tails after garbage names. */
		if ((x & 0x3f) == 1)
			data[i] = '\n';
		else if ((x & 0x3f) == 2)
			data[i] = '-';
		else if ((x & 0x3ff) == 3 && i + 20 < size)
			i += (size_t)sprintf(data + i, "->rgb(%u,%u,%u)\n",
					     (unsigned)(x >> 40) & 0xff, (unsigned)(x >> 48) & 0xff,
					     (unsigned)(x >> 56)) -
			     1;
	}
	assert_int_equal(load_bytes(p, data, size, &nr_bad), 0);
	assert_true(nr_bad > 1000);
	buf1 = save(p, &len1);
	assert_true(check_saved_sorted(buf1, len1) > 100);

	q = new_pal(FL_PALETTE_BLUE, true);
	assert_int_equal(load_bytes(q, buf1, len1, &nr_bad), 0);
	assert_int_equal(nr_bad, 0);
	buf2 = save(q, &len2);
	assert_int_equal(len1, len2);
	assert_memory_equal(buf1, buf2, len1);
	free(buf1);
	free(buf2);
	free(data);
	fl_palette__free(p);
	fl_palette__free(q);
}

static const char *const round_trip_names[] = {
	"main",
	"start_thread",
	"do_syscall_64_[k]",
	"Interpreter_[j]",
	"std::min_[i]",
	"futex_wait_[w]",
	"a->b",
	"zzz",
	"Zzz",
	"café",
	"with space",
	"-",
	"",
};

/* load, colour, save, load again: the same colours, and the same file. */
static void test_map_round_trip(void **state)
{
	struct fl_rgb c1[ARRAY_SIZE(round_trip_names)], c2;
	struct fl_palette *p = new_pal(FL_PALETTE_HOT, false), *q, *r;
	size_t nr_bad = 0, i, len1, len2;
	char *buf1, *buf2;

	(void)state;
	assert_int_equal(load_str(p, "main->rgb(200,100,50)\nfoo_[k]->rgb(1,2,3)\n", &nr_bad), 0);
	for (i = 0; i < ARRAY_SIZE(round_trip_names); i++)
		c1[i] = col(p, round_trip_names[i]);
	assert_rgb(c1[0], 200, 100, 50);
	/* A name in the map keeps its colour, even in the sequence mode. */
	for (i = 0; i < ARRAY_SIZE(round_trip_names); i++)
		assert_true(rgb_eq(col(p, round_trip_names[i]), c1[i]));
	/* A name with a newline cannot be saved: coloured, not remembered. */
	check_rgb(col(p, "two\nlines"), is_hot, "hot", "two\\nlines");
	buf1 = save(p, &len1);
	/* Every name but "-" (always grey), plus foo_[k]. */
	assert_int_equal(check_saved_sorted(buf1, len1), ARRAY_SIZE(round_trip_names));
	assert_null(memmem(buf1, len1, "two", 3));
	assert_non_null(memmem(buf1, len1, "foo_[k]->rgb(1,2,3)\n", 20));

	/* Another palette, another mode: the map decides. */
	q = new_pal(FL_PALETTE_PURPLE, true);
	assert_int_equal(load_bytes(q, buf1, len1, &nr_bad), 0);
	assert_int_equal(nr_bad, 0);
	for (i = 0; i < ARRAY_SIZE(round_trip_names); i++) {
		c2 = col(q, round_trip_names[i]);
		if (!rgb_eq(c1[i], c2))
			fail_msg("'%s' changed colour on reload", round_trip_names[i]);
	}
	buf2 = save(q, &len2);
	assert_int_equal(len1, len2);
	assert_memory_equal(buf1, buf2, len1);

	/* Without a map nothing is remembered or saved; an empty file enables one. */
	r = new_pal(FL_PALETTE_HOT, false);
	col(r, "main");
	free(buf2);
	buf2 = save(r, &len2);
	assert_int_equal(len2, 0);
	assert_int_equal(load_bytes(r, "", 0, &nr_bad), 0);
	assert_int_equal(nr_bad, 0);
	c2 = col(r, "main");
	assert_true(rgb_eq(col(r, "main"), c2));
	free(buf2);
	buf2 = save(r, &len2);
	assert_int_equal(len2, strlen("main->rgb(000,000,000)\n") - 6 + (c2.r > 9) + (c2.r > 99) +
				       (c2.g > 9) + (c2.g > 99) + (c2.b > 9) + (c2.b > 99));
	free(buf1);
	free(buf2);
	fl_palette__free(p);
	fl_palette__free(q);
	fl_palette__free(r);
}

/* Chain: both colours of a name survive the map, the waker one as NAME_[w]. */
static void test_map_chain(void **state)
{
	struct fl_palette *p = new_pal(FL_PALETTE_CHAIN, false), *q;
	struct fl_rgb on, off;
	size_t nr_bad = 0, len;
	char *buf;

	(void)state;
	assert_int_equal(load_str(p, "", NULL), 0);
	on = fl_palette__color(p, "foo", 3, 0);
	off = fl_palette__color(p, "foo", 3, FL_COLOR_WAKER);
	check_rgb(on, is_blue, "chain", "foo");
	check_rgb(off, is_aqua, "chain waker", "foo");
	assert_true(rgb_eq(fl_palette__color(p, "foo", 3, 0), on));
	assert_true(rgb_eq(fl_palette__color(p, "foo", 3, FL_COLOR_WAKER), off));
	assert_true(rgb_eq(col(p, "foo_[w]"), off));
	buf = save(p, &len);
	assert_int_equal(check_saved_sorted(buf, len), 2);

	q = new_pal(FL_PALETTE_CHAIN, true);
	assert_int_equal(load_bytes(q, buf, len, &nr_bad), 0);
	assert_int_equal(nr_bad, 0);
	assert_true(rgb_eq(fl_palette__color(q, "foo", 3, 0), on));
	assert_true(rgb_eq(fl_palette__color(q, "foo", 3, FL_COLOR_WAKER), off));
	free(buf);
	fl_palette__free(p);
	fl_palette__free(q);
}

static void test_map_io_errors(void **state)
{
	struct fl_palette *p = new_pal(FL_PALETTE_HOT, false);
	size_t nr_bad = 7;
	FILE *f;

	(void)state;
	/* Reading a write-only stream fails: the error is reported, not taken for EOF. */
	f = fopen("/dev/null", "w");
	assert_non_null(f);
	assert_int_equal(fl_palette__load_map(p, f, &nr_bad), -EIO);
	fclose(f);
	assert_int_equal(fl_palette__load_map(NULL, stdin, &nr_bad), -EINVAL);
	assert_int_equal(fl_palette__load_map(p, NULL, &nr_bad), -EINVAL);
	assert_int_equal(fl_palette__save_map(p, NULL), -EINVAL);

	col(p, "main");
	f = fopen("/dev/full", "w");
	if (f) {
		assert_int_equal(fl_palette__save_map(p, f), -EIO);
		fclose(f);
	}
	f = fopen("/dev/null", "r");
	assert_non_null(f);
	assert_int_equal(fl_palette__save_map(p, f), -EIO);
	fclose(f);
	fl_palette__free(p);
}

/* Map mode at graph scale: a million calls, every name stays put through the growth. */
static void test_map_many(void **state)
{
	const size_t nr_names = 200000;
	struct fl_palette *p = new_pal(FL_PALETTE_HOT, false);
	struct fl_rgb *first;
	char name[48];
	size_t i, len;
	int n;

	(void)state;
	first = calloc(nr_names, sizeof(*first));
	assert_non_null(first);
	assert_int_equal(load_str(p, "", NULL), 0);
	for (i = 0; i < 5 * nr_names; i++) {
		struct fl_rgb c;

		n = snprintf(name, sizeof(name), "sym_%zu_%zx", i % nr_names,
			     (i % nr_names) * 2654435761u);
		c = fl_palette__color(p, name, (size_t)n, 0);
		if (i < nr_names)
			first[i] = c;
		else if (!rgb_eq(c, first[i % nr_names]))
			fail_msg("'%s' changed colour", name);
	}
	free(save(p, &len));
	assert_true(len > nr_names * 20);
	free(first);
	fl_palette__free(p);
}

static void test_diff(void **state)
{
	struct fl_rgb c, prev;
	double d;

	(void)state;
	/* Direction. */
	c = fl_palette__diff_color(100, 150, 100, false);
	assert_true(c.r == 255 && c.g == c.b && c.g < 255);
	c = fl_palette__diff_color(150, 100, 100, false);
	assert_true(c.b == 255 && c.r == c.g && c.r < 255);
	/* Negate swaps the hues. */
	c = fl_palette__diff_color(100, 150, 100, true);
	assert_true(c.b == 255 && c.r == c.g && c.r < 255);
	c = fl_palette__diff_color(150, 100, 100, true);
	assert_true(c.r == 255 && c.g == c.b && c.g < 255);

	/* Unchanged: near white, neutral. */
	c = fl_palette__diff_color(100, 100, 100, false);
	assert_true(c.r == c.g && c.g == c.b && c.r >= 230);
	c = fl_palette__diff_color(0, 0, 100, false);
	assert_true(c.r == c.g && c.g == c.b && c.r >= 230);

	/* Intensity grows with the change, to full colour at the largest change. */
	prev = fl_palette__diff_color(1000, 1000.5, 100, false);
	assert_true(prev.g >= 225);
	for (d = 5; d <= 100; d += 5) {
		c = fl_palette__diff_color(1000, 1000 + d, 100, false);
		assert_true(c.g < prev.g);
		prev = c;
		c = fl_palette__diff_color(1000, 1000 - d, 100, false);
		assert_true(c.r == prev.g && c.b == 255);
	}
	assert_rgb(fl_palette__diff_color(0.5, 100.5, 100, false), 255, 0, 0);
	assert_rgb(fl_palette__diff_color(100, 0, 100, false), 0, 0, 255);
	/* Past the maximum: clamped. */
	assert_rgb(fl_palette__diff_color(1, 500, 100, false), 255, 0, 0);

	/* New frames get their own colour, whatever negate says. */
	assert_true(rgb_eq(fl_palette__diff_color(0, 5, 100, false), fl_palette__new_color()));
	assert_true(rgb_eq(fl_palette__diff_color(0, 5, 100, true), fl_palette__new_color()));
	assert_false(rgb_eq(fl_palette__diff_color(0.001, 5, 100, false), fl_palette__new_color()));

	/* Nonsense in, still a colour out. */
	c = fl_palette__diff_color(1, 2, 0, false);
	assert_true(c.r == 255 && c.g == c.b);
	c = fl_palette__diff_color(1, 2, -1, false);
	assert_true(c.r == 255 && c.g == c.b);
	c = fl_palette__diff_color(NAN, 2, 10, false);
	assert_true(c.r == c.g && c.g == c.b);
	c = fl_palette__diff_color(2, 1, NAN, false);
	assert_true(c.b == 255 && c.r == c.g);
}

/* The new colour stands apart from the diff hues and the search highlight. */
static void test_new_color_distinct(void **state)
{
	static const struct fl_rgb others[] = {
		{255, 0, 0},	 {0, 0, 255},	  {230, 0, 230}, /* search highlight */
		{255, 128, 128}, {128, 128, 255}, {245, 245, 245},
	};
	struct fl_rgb n = fl_palette__new_color();
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(others); i++) {
		int d = absdiff(n.r, others[i].r) + absdiff(n.g, others[i].g) +
			absdiff(n.b, others[i].b);

		if (d < 150)
			fail_msg("new colour too close to rgb(%u,%u,%u)", others[i].r, others[i].g,
				 others[i].b);
	}
	assert_true(n.r > 200 && n.g > 150 && n.b < 80); /* gold */
	assert_false(rgb_eq(n, fl_palette__grey()));
}

static void test_bgcolors(void **state)
{
	static const char *const named[] = {"yellow", "blue", "green", "grey"};
	static const char *const bad[] = {
		"",
		"Yellow",
		"yellow ",
		" yellow",
		"gray",
		"red",
		"#",
		"#12345",
		"#1234567",
		"#12345g",
		"#g12345",
		"rgb(1,2,3)",
		"#-12345",
		"#12 345",
		"# 123456",
		"123456",
		"0x123456",
		"##123456",
		"#123456\n",
		"\"/><script>",
		"#fff",
		"#ffffff;",
		"#\xff\xff\xff\xff\xff\xff",
	};
	struct fl_rgb top, bottom, sentinel = {1, 2, 3};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(named); i++) {
		top = bottom = sentinel;
		assert_int_equal(fl_palette__parse_bgcolors(named[i], &top, &bottom), 0);
		assert_false(rgb_eq(top, sentinel));
		/* A gradient, pale enough for frames to stand out. */
		assert_false(rgb_eq(top, bottom));
		assert_true(top.r >= 200 && top.g >= 200 && top.b >= 200);
		assert_true(bottom.r >= 170 && bottom.g >= 170 && bottom.b >= 170);
	}
	assert_int_equal(fl_palette__parse_bgcolors("yellow", &top, &bottom), 0);
	assert_true(bottom.b < bottom.r && bottom.b < bottom.g);
	/* The SVG writer's default, so "--bgcolors yellow" draws the same bytes. */
	assert_rgb(top, 0xee, 0xee, 0xee);
	assert_rgb(bottom, 0xee, 0xee, 0xb0);
	assert_int_equal(fl_palette__parse_bgcolors("blue", &top, &bottom), 0);
	assert_true(bottom.b > bottom.r);
	assert_int_equal(fl_palette__parse_bgcolors("green", &top, &bottom), 0);
	assert_true(bottom.g > bottom.r && bottom.g > bottom.b);
	assert_int_equal(fl_palette__parse_bgcolors("grey", &top, &bottom), 0);
	assert_true(bottom.r == bottom.g && bottom.g == bottom.b);

	assert_int_equal(fl_palette__parse_bgcolors("#0a1B2c", &top, &bottom), 0);
	assert_rgb(top, 0x0a, 0x1b, 0x2c);
	assert_rgb(bottom, 0x0a, 0x1b, 0x2c);
	assert_int_equal(fl_palette__parse_bgcolors("#000000", &top, &bottom), 0);
	assert_rgb(top, 0, 0, 0);
	assert_int_equal(fl_palette__parse_bgcolors("#FFffFF", &top, &bottom), 0);
	assert_rgb(bottom, 255, 255, 255);

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		top = bottom = sentinel;
		if (fl_palette__parse_bgcolors(bad[i], &top, &bottom) != -EINVAL)
			fail_msg("accepted bgcolors '%s'", bad[i]);
		assert_true(rgb_eq(top, sentinel) && rgb_eq(bottom, sentinel));
	}
	assert_int_equal(fl_palette__parse_bgcolors(NULL, &top, &bottom), -EINVAL);
	assert_int_equal(fl_palette__parse_bgcolors("grey", NULL, &bottom), -EINVAL);
	assert_int_equal(fl_palette__parse_bgcolors("grey", &top, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_new_free),
		cmocka_unit_test(test_families),
		cmocka_unit_test(test_hot_spread),
		cmocka_unit_test(test_annotations_every_palette),
		cmocka_unit_test(test_not_annotations),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_java_classes),
		cmocka_unit_test(test_js_classes),
		cmocka_unit_test(test_perl_classes),
		cmocka_unit_test(test_sequence_deterministic),
		cmocka_unit_test(test_hash_as_flamegraph_pl),
		cmocka_unit_test(test_map_basic),
		cmocka_unit_test(test_map_bad_lines),
		cmocka_unit_test(test_map_nul_bytes),
		cmocka_unit_test(test_map_long_lines),
		cmocka_unit_test(test_map_garbage),
		cmocka_unit_test(test_map_round_trip),
		cmocka_unit_test(test_map_chain),
		cmocka_unit_test(test_map_io_errors),
		cmocka_unit_test(test_map_many),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_new_color_distinct),
		cmocka_unit_test(test_bgcolors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
