// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the flame tree: merging, inclusive counts, layout, narrow boxes, charts, diffs. */
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

static struct fl_flametree *new_tree(bool chart, bool reverse)
{
	struct fl_flametree_opts o = { .sz = sizeof(o), .flamechart = chart, .reverse = reverse };
	struct fl_flametree *t = NULL;

	assert_int_equal(fl_flametree__new(&o, &t), 0);
	return t;
}

static void add(struct fl_flametree *t, const char *stack, double before, double after)
{
	assert_int_equal(fl_flametree__add(t, stack, strlen(stack), before, after), 0);
}

static const struct fl_drawn *layout(struct fl_flametree *t, enum fl_flametree_sort sort,
				     double min_count, size_t *n)
{
	struct fl_flametree_layout_opts o = { .sz = sizeof(o), .sort = sort, .min_count = min_count };
	const struct fl_drawn *d = NULL;

	assert_int_equal(fl_flametree__layout(t, &o, &d, n), 0);
	return d;
}

/* "name@depth:start+count" for each drawn frame, "#N" for a box of N, joined by spaces. */
static char *describe(struct fl_flametree *t, const struct fl_drawn *d, size_t n)
{
	static char buf[4096];
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *name = d[i].merged ? "#" : fl_flametree__name(t, d[i].node, NULL);

		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s%s@%u:%g+%g", i ? " " : "",
					name, "", d[i].depth, d[i].start, d[i].count);
		if (d[i].merged)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "[%u,%llu]", d[i].nr_merged,
						(unsigned long long)d[i].nr_below);
	}
	return buf;
}

/*
 * FL_SORT_LINES: flamegraph.pl's frames. Its sorted folded lines here are
 * "p;cc 5" < "p;cc1 4" < "p;cc;x 3" < "p;u 1" < "p;u x 2" < "p;u;y 6":
 * cc is two frames around cc1; u's own samples and callees are split by
 * "u x" (a name with a blank: "p;u " is a prefix of "p;u x ").
 */
static void test_line_order(void **state)
{
	struct fl_flametree *t = new_tree(false, false);
	const struct fl_drawn *d;
	size_t n;

	(void)state;
	add(t, "p;u;y", 0, 6);
	add(t, "p;cc;x", 0, 3);
	add(t, "p;u x", 0, 2);
	add(t, "p;cc1", 0, 4);
	add(t, "p;cc", 0, 5);
	add(t, "p;u", 0, 1);
	d = layout(t, FL_SORT_LINES, 0, &n);
	assert_string_equal(describe(t, d, n), "p@0:0+21 cc@1:0+5 cc1@1:5+4 cc@1:9+3 x@2:9+3 "
					      "u@1:12+1 u x@1:13+2 u@1:15+6 y@2:15+6");
	/* The frames' own samples: the first cc has 5, the second none. */
	assert_true(d[1].own == 5 && d[3].own == 0 && d[5].own == 1 && d[7].own == 0);
	/* Subtrees: the second cc holds x. */
	assert_int_equal(d[3].end, 5);
	/* A frame with both, and no sibling between: one frame, its own samples left of its callees. */
	add(t, "q", 0, 1);
	add(t, "q;r", 0, 1);
	d = layout(t, FL_SORT_LINES, 0, &n);
	assert_non_null(strstr(describe(t, d, n), "q@0:21+2 r@1:22+1"));
	fl_flametree__free(t);
}

/* FL_SORT_LINES: narrow frames merge in place, the wide ones stay where flamegraph.pl puts them. */
static void test_line_order_narrow(void **state)
{
	struct fl_flametree *t = new_tree(false, false);
	const struct fl_drawn *d;
	size_t n;

	(void)state;
	add(t, "r;a", 0, 1);
	add(t, "r;b", 0, 1);
	add(t, "r;c", 0, 10);
	add(t, "r;d", 0, 1);
	add(t, "r;e", 0, 10);
	d = layout(t, FL_SORT_LINES, 2, &n);
	assert_string_equal(describe(t, d, n), "r@0:0+23 #@1:0+2[2,0] c@1:2+10 e@1:13+10");
	fl_flametree__free(t);
}

static void test_merge_and_order(void **state)
{
	struct fl_flametree *t = new_tree(false, false);
	const struct fl_drawn *d;
	size_t n;

	(void)state;
	/* Unsorted input, a repeated stack, a stack that is a prefix of another. */
	add(t, "app;main;d", 0, 20);
	add(t, "app;main;a;c", 0, 30);
	add(t, "app;main;a;b", 0, 40);
	add(t, "app;main;a;b", 0, 10);
	add(t, "app;main", 0, 5);
	add(t, "other;x", 0, 1);
	assert_true(fl_flametree__total(t) == 106);
	assert_int_equal(fl_flametree__nr_frames(t), 8);
	d = layout(t, FL_SORT_NAME, 0, &n);
	assert_string_equal(describe(t, d, n), "app@0:0+105 main@1:0+105 a@2:0+80 b@3:0+50 "
					       "c@3:50+30 d@2:80+20 other@0:105+1 x@1:105+1");
	/* Subtree ends: app's subtree is drawn frames 0..5, a's 2..4. */
	assert_int_equal(d[0].end, 6);
	assert_int_equal(d[2].end, 5);
	assert_int_equal(d[3].end, 4);
	d = layout(t, FL_SORT_COUNT, 0, &n);
	assert_string_equal(describe(t, d, n), "app@0:0+105 main@1:0+105 a@2:0+80 b@3:0+50 "
					       "c@3:50+30 d@2:80+20 other@0:105+1 x@1:105+1");
	fl_flametree__free(t);
}

static void test_sort_count(void **state)
{
	struct fl_flametree *t = new_tree(false, false);
	const struct fl_drawn *d;
	size_t n;

	(void)state;
	add(t, "r;a", 0, 1);
	add(t, "r;b", 0, 3);
	add(t, "r;c", 0, 2);
	add(t, "r;d", 0, 2);
	d = layout(t, FL_SORT_COUNT, 0, &n);
	assert_string_equal(describe(t, d, n), "r@0:0+8 b@1:0+3 c@1:3+2 d@1:5+2 a@1:7+1");
	d = layout(t, FL_SORT_NAME, 0, &n);
	assert_string_equal(describe(t, d, n), "r@0:0+8 a@1:0+1 b@1:1+3 c@1:4+2 d@1:6+2");
	fl_flametree__free(t);
}

/* Name order is bytewise: a name that is a prefix of another comes first. */
static void test_name_order_bytewise(void **state)
{
	struct fl_flametree *t = new_tree(false, false);
	const struct fl_drawn *d;
	size_t n;

	(void)state;
	add(t, "r;ab", 0, 1);
	add(t, "r;a", 0, 1);
	add(t, "r;B", 0, 1);
	add(t, "r;;x", 0, 1); /* an empty name */
	add(t, "r;", 0, 1);   /* the empty frame at the end is dropped, as flamegraph.pl's split does */
	d = layout(t, FL_SORT_NAME, 0, &n);
	assert_string_equal(describe(t, d, n), "r@0:0+5 @1:0+1 x@2:0+1 B@1:1+1 a@1:2+1 ab@1:3+1");
	fl_flametree__free(t);
}

static void test_narrow_merged(void **state)
{
	struct fl_flametree *t = new_tree(false, false);
	const struct fl_drawn *d;
	size_t n;

	(void)state;
	add(t, "r;a1", 0, 1);
	add(t, "r;a2;deep;deeper", 0, 1);
	add(t, "r;big", 0, 50);
	add(t, "r;c", 0, 2);
	add(t, "r;z", 0, 30);
	add(t, "r;z;t1", 0, 1);
	add(t, "r;z;t2", 0, 1);
	/* min_count 3: a1, a2 (and its 2 below) and c merge into one box after big and z. */
	d = layout(t, FL_SORT_NAME, 3, &n);
	assert_string_equal(describe(t, d, n), "r@0:0+86 big@1:0+50 z@1:50+32 #@1:82+4[3,2]");
	assert_true(d[3].merged);
	/* z's two narrow children (2 together) make a box below the limit: not drawn. */
	assert_int_equal(d[2].end, 3);
	assert_int_equal(d[0].end, 4);
	/* With no limit every frame is drawn. */
	d = layout(t, FL_SORT_NAME, 0, &n);
	assert_int_equal(n, fl_flametree__nr_frames(t));
	fl_flametree__free(t);
}

static void test_reverse(void **state)
{
	struct fl_flametree *t = new_tree(false, true);
	const struct fl_drawn *d;
	size_t n;

	(void)state;
	add(t, "app;main;work;leaf", 0, 3);
	add(t, "app;main;other;leaf", 0, 1);
	d = layout(t, FL_SORT_NAME, 0, &n);
	assert_string_equal(describe(t, d, n),
			    "leaf@0:0+4 other@1:0+1 main@2:0+1 app@3:0+1 work@1:1+3 main@2:1+3 app@3:1+3");
	fl_flametree__free(t);
}

static void test_flamechart(void **state)
{
	struct fl_flametree *t = new_tree(true, false);
	const struct fl_drawn *d;
	size_t n;

	(void)state;
	/* Time order; a;b comes back after a gap and is a new frame, a is one frame throughout. */
	add(t, "a;b", 0, 2);
	add(t, "a", 0, 1);
	add(t, "a;b", 0, 3);
	add(t, "c", 0, 1);
	add(t, "a", 0, 1);
	d = layout(t, FL_SORT_COUNT /* ignored */, 0, &n);
	assert_string_equal(describe(t, d, n), "a@0:0+6 b@1:0+2 b@1:3+3 c@0:6+1 a@0:7+1");
	fl_flametree__free(t);
}

static void test_flamechart_narrow_runs(void **state)
{
	struct fl_flametree *t = new_tree(true, false);
	const struct fl_drawn *d;
	size_t n;

	(void)state;
	add(t, "r;x", 0, 1);
	add(t, "r;y", 0, 1);
	add(t, "r;wide", 0, 10);
	add(t, "r;p", 0, 1);
	add(t, "r;q", 0, 1);
	add(t, "r;s", 0, 1);
	d = layout(t, FL_SORT_NAME, 2, &n);
	/* Each run of narrow frames is a box in place: 2 before wide, 3 after. */
	assert_string_equal(describe(t, d, n), "r@0:0+15 #@1:0+2[2,0] wide@1:2+10 #@1:12+3[3,0]");
	fl_flametree__free(t);
}

static void test_diff_counts(void **state)
{
	struct fl_flametree *t = new_tree(false, false);
	const struct fl_drawn *d;
	size_t n;

	(void)state;
	/* Before: a;b 10, a;c 10. After: a;b 30, a;d 5. */
	add(t, "a;b", 10, 0);
	add(t, "a;c", 10, 0);
	add(t, "a;b", 0, 30);
	add(t, "a;d", 0, 5);
	assert_true(fl_flametree__total(t) == 35);
	assert_true(fl_flametree__total_before(t) == 20);
	d = layout(t, FL_SORT_NAME, 0, &n);
	/* c is gone after: not drawn (zero width); its before-count stays in a's. */
	assert_string_equal(describe(t, d, n), "a@0:0+35 b@1:0+30 d@1:30+5");
	assert_true(d[0].before == 20 && d[1].before == 10 && d[2].before == 0);
	/* As difffolded.pl: int(10 * 35 / 20) = 17 for each stack, a sum of 34, not 35. */
	fl_flametree__normalize_before(t);
	assert_true(fl_flametree__total_before(t) == 34);
	d = layout(t, FL_SORT_NAME, 0, &n);
	assert_true(d[0].before == 34 && d[1].before == 17);
	{
		double b, a;

		fl_flametree__self(t, d[1].node, &b, &a);
		assert_true(b == 17 && a == 30);
		assert_int_equal(fl_flametree__parent(t, d[1].node), d[0].node);
		assert_int_equal(fl_flametree__parent(t, d[0].node), FL_FLAMETREE_NONE);
	}
	fl_flametree__free(t);
}

static void test_bad_input(void **state)
{
	struct fl_flametree *t = new_tree(false, false);
	size_t n = FL_FLAMETREE_MAX_DEPTH + 1, len = n * 2;
	char *deep = malloc(len);
	struct fl_str nul = { "a\0b", 3 };

	(void)state;
	assert_non_null(deep);
	for (size_t i = 0; i < n; i++) {
		deep[2 * i] = 'f';
		deep[2 * i + 1] = ';';
	}
	assert_int_equal(fl_flametree__add(t, deep, len - 1, 0, 1), -E2BIG);
	assert_int_equal(fl_flametree__add(t, deep, len - 3, 0, 1), 0); /* exactly the limit */
	free(deep);
	assert_int_equal(fl_flametree__add(t, "x", 1, 0, -1), -EINVAL);
	assert_int_equal(fl_flametree__add(t, "x", 0, 0, 1), -EINVAL);
	assert_int_equal(fl_flametree__add_frames(t, &nul, 1, 0, 1), -EINVAL);
	/* The tree still works after errors. */
	add(t, "f;g", 0, 2);
	assert_true(fl_flametree__total(t) == 3);
	fl_flametree__free(t);
}

/* Sorted and shuffled input give the same layout (the prefix cache is only a shortcut). */
static void test_prefix_cache_equivalence(void **state)
{
	struct fl_flametree *a = new_tree(false, false), *b = new_tree(false, false);
	char lines[500][64];
	size_t n = 500, na, nb;
	const struct fl_drawn *da, *db;

	(void)state;
	srand(7);
	for (size_t i = 0; i < n; i++)
		snprintf(lines[i], sizeof(lines[i]), "p%d;f%d;g%d;h%d", rand() % 3, rand() % 4,
			 rand() % 5, rand() % 6);
	for (size_t i = 0; i < n; i++)
		add(a, lines[i], 0, (double)(i % 7 + 1));
	for (size_t i = n; i-- > 0;)
		add(b, lines[i], 0, (double)(i % 7 + 1));
	da = layout(a, FL_SORT_NAME, 0, &na);
	db = layout(b, FL_SORT_NAME, 0, &nb);
	assert_int_equal(na, nb);
	assert_int_equal(fl_flametree__nr_frames(a), fl_flametree__nr_frames(b));
	for (size_t i = 0; i < na; i++) {
		assert_string_equal(fl_flametree__name(a, da[i].node, NULL),
				    fl_flametree__name(b, db[i].node, NULL));
		assert_true(da[i].start == db[i].start && da[i].count == db[i].count);
		assert_int_equal(da[i].depth, db[i].depth);
		assert_int_equal(da[i].end, db[i].end);
	}
	fl_flametree__free(a);
	fl_flametree__free(b);
}

/* Random deep stacks over names that are prefixes of each other ("cc", "cc1", "cc x"). */
#define FOLD_STACKS 3000
#define FOLD_DEPTH 24
static const char *const fold_names[] = { "cc", "cc1", "cc x", "main", "f", "g", "h", "[k]" };
struct fold_stack {
	uint8_t f[FOLD_DEPTH];
	size_t n;
	double before, after;
	bool reverse;
};

static int cmp_fold_stack(const void *a, const void *b)
{
	const struct fold_stack *x = a, *y = b;
	size_t m = x->n < y->n ? x->n : y->n;

	for (size_t i = 0; i < m; i++) {
		uint8_t fx = x->f[x->reverse ? x->n - 1 - i : i], fy = y->f[y->reverse ? y->n - 1 - i : i];

		if (fx != fy)
			return fx < fy ? -1 : 1;
	}
	return x->n < y->n ? -1 : x->n > y->n;
}

static void add_fold_stack(struct fl_flametree *t, const struct fold_stack *s)
{
	struct fl_str fr[FOLD_DEPTH];

	for (size_t i = 0; i < s->n; i++)
		fr[i] = (struct fl_str){ fold_names[s->f[i]], strlen(fold_names[s->f[i]]) };
	assert_int_equal(fl_flametree__add_frames(t, fr, s->n, s->before, s->after), 0);
}

/*
 * A tree fed grouped stacks with fold_below draws exactly what the tree of
 * every frame draws at that min_count, in every order and as a chart, while
 * holding a fraction of the frames.
 */
static void test_fold_draws_the_same(void **state)
{
	static struct fold_stack st[FOLD_STACKS];
	const enum fl_flametree_sort sorts[] = { FL_SORT_NAME, FL_SORT_COUNT, FL_SORT_LINES };
	double total = 0;

	(void)state;
	srand(11);
	for (size_t i = 0; i < FOLD_STACKS; i++) {
		/* A few shared roots, then branches that diverge at every depth. */
		st[i].n = 3 + (size_t)(rand() % (FOLD_DEPTH - 3));
		for (size_t k = 0; k < st[i].n; k++)
			st[i].f[k] = (uint8_t)(k < 2 ? rand() % 2 : rand() % 8);
		st[i].after = (double)(rand() % 3 == 0 ? 0 : 1 + rand() % 20);
		st[i].before = (double)(rand() % 4 == 0 ? 0 : rand() % 9);
		if (!st[i].after && !st[i].before)
			st[i].after = 1;
		total += st[i].after;
	}
	for (int mode = 0; mode < 4; mode++) {
		bool chart = mode == 3, reverse = mode == 1;
		double min = total / 400; /* fold what a 400-pixel graph at 1 px cannot draw */

		for (size_t i = 0; i < FOLD_STACKS; i++)
			st[i].reverse = reverse;
		if (!chart)
			qsort(st, FOLD_STACKS, sizeof(*st), cmp_fold_stack);
		for (size_t si = 0; si < (chart ? 1 : 3); si++) {
			struct fl_flametree_opts oa = { .sz = sizeof(oa), .flamechart = chart, .reverse = reverse };
			struct fl_flametree_opts ob = oa;
			struct fl_flametree *a = NULL, *b = NULL;
			const struct fl_drawn *da, *db;
			size_t na, nb;

			ob.grouped = !chart;
			ob.fold_below = min;
			assert_int_equal(fl_flametree__new(&oa, &a), 0);
			assert_int_equal(fl_flametree__new(&ob, &b), 0);
			for (size_t i = 0; i < FOLD_STACKS; i++) {
				/* The full tree gets them in another order: merging does not depend on it. */
				add_fold_stack(a, &st[chart ? i : (i * 7919) % FOLD_STACKS]);
				add_fold_stack(b, &st[i]);
			}
			assert_true(fl_flametree__total(a) == fl_flametree__total(b));
			da = layout(a, sorts[si], min, &na);
			db = layout(b, sorts[si], min, &nb);
			assert_true(na > 20);
			assert_int_equal(na, nb);
			for (size_t i = 0; i < na; i++) {
				assert_int_equal(da[i].merged, db[i].merged);
				if (!da[i].merged)
					assert_string_equal(fl_flametree__name(a, da[i].node, NULL),
							    fl_flametree__name(b, db[i].node, NULL));
				assert_int_equal(da[i].depth, db[i].depth);
				assert_int_equal(da[i].end, db[i].end);
				assert_int_equal(da[i].nr_merged, db[i].nr_merged);
				assert_int_equal(da[i].nr_below, db[i].nr_below);
				assert_true(da[i].start == db[i].start && da[i].count == db[i].count);
				assert_true(da[i].before == db[i].before && da[i].own == db[i].own);
				assert_true(da[i].own_before == db[i].own_before);
			}
			/* The folded tree holds a fraction of the frames. */
			assert_true(fl_flametree__nr_frames(b) * 4 < fl_flametree__nr_frames(a));
			assert_int_equal(fl_flametree__nr_frames(b) + fl_flametree__nr_folded(b),
					 fl_flametree__nr_frames(a));
			assert_int_equal(fl_flametree__nr_folded(a), 0);
			/* A second layout of the folded tree is the same. */
			db = layout(b, sorts[si], min, &nb);
			assert_int_equal(na, nb);
			fl_flametree__free(a);
			fl_flametree__free(b);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_and_order),
		cmocka_unit_test(test_line_order),
		cmocka_unit_test(test_line_order_narrow),
		cmocka_unit_test(test_sort_count),
		cmocka_unit_test(test_name_order_bytewise),
		cmocka_unit_test(test_narrow_merged),
		cmocka_unit_test(test_reverse),
		cmocka_unit_test(test_flamechart),
		cmocka_unit_test(test_flamechart_narrow_runs),
		cmocka_unit_test(test_diff_counts),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_prefix_cache_equivalence),
		cmocka_unit_test(test_fold_draws_the_same),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
