// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the profile: name sanitization, stack merging, counts and errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flamed/profile/profile.h"

static struct fl_profile *new_profile(void)
{
	struct fl_profile *p = NULL;

	assert_int_equal(fl_profile__new(&p), 0);
	assert_non_null(p);
	return p;
}

static uint32_t intern_len(struct fl_profile *p, const char *s, size_t len)
{
	uint32_t id = UINT32_MAX;

	assert_int_equal(fl_profile__intern(p, s, len, &id), 0);
	return id;
}

static uint32_t intern(struct fl_profile *p, const char *s)
{
	return intern_len(p, s, strlen(s));
}

/* The name a raw name ends up as, and the sanitized counter's step. */
static void check_name(struct fl_profile *p, const char *raw, size_t len, const char *want,
		       uint64_t counted)
{
	uint64_t before = fl_profile__nr_sanitized(p);
	uint32_t id = intern_len(p, raw, len);

	assert_string_equal(fl_profile__name(p, id), want);
	assert_int_equal(fl_profile__nr_sanitized(p) - before, counted);
}

static void test_new_free(void **state)
{
	struct fl_profile *p = new_profile();

	(void)state;
	assert_int_equal(fl_profile__total(p), 0);
	assert_int_equal(fl_profile__nr_stacks(p), 0);
	assert_int_equal(fl_profile__nr_sanitized(p), 0);
	assert_null(fl_profile__name(p, 0));
	fl_profile__free(p);
	fl_profile__free(NULL);
	assert_int_equal(fl_profile__new(NULL), -EINVAL);
}

static void test_sanitize(void **state)
{
	struct fl_profile *p = new_profile();
	uint32_t a, b;

	(void)state;
	check_name(p, "main", 4, "main", 0);
	check_name(p, "std::vector<int>::push_back(int const&)",
		   strlen("std::vector<int>::push_back(int const&)"),
		   "std::vector<int>::push_back(int const&)", 0);
	check_name(p, "a;b", 3, "a:b", 1);
	check_name(p, ";;", 2, "::", 1);
	check_name(p, "line\nbreak", 10, "line?break", 1);
	check_name(p, "cr\r", 3, "cr?", 1);
	check_name(p, "\ttab", 4, "?tab", 1);
	check_name(p, "bell\a\x01\x1f", 7, "bell???", 1);
	check_name(p, "del\x7f", 4, "del?", 1);
	check_name(p, "nul\0inside", 10, "nul?inside", 1);
	check_name(p, "evil;x;y 99\nroot;z 1\n", 21, "evil:x:y 99?root:z 1?", 1);
	/* Not control characters: space, '~', UTF-8 and other high bytes. */
	check_name(p, " sp ~", 5, " sp ~", 0);
	check_name(p, "caf\xc3\xa9\x80\xff", 7, "caf\xc3\xa9\x80\xff", 0);
	check_name(p, "", 0, "[empty]", 1);
	check_name(p, NULL, 0, "[empty]", 1);
	/* Counted per name that had to change, every time. */
	check_name(p, "a;b", 3, "a:b", 1);

	/* A sanitized name and the name it became are one frame. */
	a = intern(p, "x;y");
	b = intern(p, "x:y");
	assert_int_equal(a, b);
	a = intern(p, "[empty]");
	b = intern_len(p, "", 0);
	assert_int_equal(a, b);

	/* Only len bytes are looked at. */
	check_name(p, "abc;def", 3, "abc", 0);
	fl_profile__free(p);
}

static void test_intern_errors(void **state)
{
	struct fl_profile *p = new_profile();
	uint32_t id = 7;

	(void)state;
	assert_int_equal(fl_profile__intern(NULL, "a", 1, &id), -EINVAL);
	assert_int_equal(fl_profile__intern(p, NULL, 3, &id), -EINVAL);
	assert_int_equal(fl_profile__intern(p, "a", 1, NULL), -EINVAL);
	assert_int_equal(id, 7);
	assert_null(fl_profile__name(NULL, 0));
	fl_profile__free(p);
}

struct seen {
	size_t calls;
	uint64_t sum;
	uint32_t frames[8];
	size_t n;
	uint64_t count;
};

static int record(const uint32_t *frames, size_t n, uint64_t count, void *ctx)
{
	struct seen *s = ctx;

	s->calls++;
	s->sum += count;
	if (n <= 8) {
		memcpy(s->frames, frames, n * sizeof(*frames));
		s->n = n;
		s->count = count;
	}
	return 0;
}

/* The count of one exact stack, found by walking the profile; 0 if absent. */
struct find {
	const uint32_t *frames;
	size_t n;
	uint64_t count;
	size_t matches;
};

static int find_cb(const uint32_t *frames, size_t n, uint64_t count, void *ctx)
{
	struct find *f = ctx;

	if (n == f->n && memcmp(frames, f->frames, n * sizeof(*frames)) == 0) {
		f->count = count;
		f->matches++;
	}
	return 0;
}

static uint64_t count_of(const struct fl_profile *p, const uint32_t *frames, size_t n)
{
	struct find f = { .frames = frames, .n = n };

	assert_int_equal(fl_profile__for_each(p, find_cb, &f), 0);
	assert_true(f.matches <= 1);
	return f.count;
}

static void test_add_merges(void **state)
{
	struct fl_profile *p = new_profile();
	uint32_t a, b, c, st[3];
	struct seen s = { 0 };

	(void)state;
	a = intern(p, "main");
	b = intern(p, "work");
	c = intern(p, "leaf");
	st[0] = a;
	st[1] = b;
	st[2] = c;
	assert_int_equal(fl_profile__add(p, st, 3, 5), 0);
	assert_int_equal(fl_profile__add(p, st, 3, 7), 0);
	assert_int_equal(fl_profile__nr_stacks(p), 1);
	assert_int_equal(fl_profile__total(p), 12);
	assert_int_equal(fl_profile__for_each(p, record, &s), 0);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.n, 3);
	assert_int_equal(s.count, 12);
	assert_memory_equal(s.frames, st, sizeof(st));

	/* The caller's array is copied, not kept. */
	st[2] = b;
	assert_int_equal(count_of(p, (uint32_t[]){ a, b, c }, 3), 12);
	fl_profile__free(p);
}

static void test_distinct_stacks(void **state)
{
	struct fl_profile *p = new_profile();
	uint32_t a, b;

	(void)state;
	a = intern(p, "a");
	b = intern(p, "b");
	/* Order, length and repetition all make a stack different. */
	assert_int_equal(fl_profile__add(p, (uint32_t[]){ a, b }, 2, 1), 0);
	assert_int_equal(fl_profile__add(p, (uint32_t[]){ b, a }, 2, 2), 0);
	assert_int_equal(fl_profile__add(p, (uint32_t[]){ a }, 1, 4), 0);
	assert_int_equal(fl_profile__add(p, (uint32_t[]){ a, a }, 2, 8), 0);
	assert_int_equal(fl_profile__add(p, (uint32_t[]){ a, b, a }, 3, 16), 0);
	assert_int_equal(fl_profile__add(p, (uint32_t[]){ a, b }, 2, 32), 0);
	assert_int_equal(fl_profile__nr_stacks(p), 5);
	assert_int_equal(fl_profile__total(p), 63);
	assert_int_equal(count_of(p, (uint32_t[]){ a, b }, 2), 33);
	assert_int_equal(count_of(p, (uint32_t[]){ b, a }, 2), 2);
	assert_int_equal(count_of(p, (uint32_t[]){ a }, 1), 4);
	assert_int_equal(count_of(p, (uint32_t[]){ a, a }, 2), 8);
	assert_int_equal(count_of(p, (uint32_t[]){ a, b, a }, 3), 16);
	assert_int_equal(count_of(p, (uint32_t[]){ b }, 1), 0);
	fl_profile__free(p);
}

static void test_add_errors(void **state)
{
	struct fl_profile *p = new_profile();
	uint32_t a, st[2];

	(void)state;
	a = intern(p, "a");
	st[0] = a;
	st[1] = a + 1; /* never interned */
	assert_int_equal(fl_profile__add(p, st, 0, 1), -EINVAL);
	assert_int_equal(fl_profile__add(p, st, 1, 0), -EINVAL);
	assert_int_equal(fl_profile__add(p, st, 2, 1), -EINVAL);
	assert_int_equal(fl_profile__add(p, (uint32_t[]){ UINT32_MAX }, 1, 1), -EINVAL);
	assert_int_equal(fl_profile__add(p, NULL, 1, 1), -EINVAL);
	assert_int_equal(fl_profile__add(NULL, st, 1, 1), -EINVAL);
	/* Nothing of the failed calls stuck. */
	assert_int_equal(fl_profile__nr_stacks(p), 0);
	assert_int_equal(fl_profile__total(p), 0);
	assert_int_equal(fl_profile__add(p, st, 1, 3), 0);
	assert_int_equal(fl_profile__nr_stacks(p), 1);
	assert_int_equal(fl_profile__total(p), 3);
	assert_int_equal(fl_profile__for_each(p, NULL, NULL), -EINVAL);
	assert_int_equal(fl_profile__total(NULL), 0);
	assert_int_equal(fl_profile__nr_stacks(NULL), 0);
	assert_int_equal(fl_profile__nr_sanitized(NULL), 0);
	fl_profile__free(p);
}

static int stop_at_third(const uint32_t *frames, size_t n, uint64_t count, void *ctx)
{
	size_t *calls = ctx;

	(void)frames;
	(void)n;
	(void)count;
	return ++*calls == 3 ? 42 : 0;
}

static void test_for_each_stops(void **state)
{
	struct fl_profile *p = new_profile();
	size_t calls = 0;
	uint32_t i, id;

	(void)state;
	for (i = 0; i < 10; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", i);
		id = intern(p, name);
		assert_int_equal(fl_profile__add(p, &id, 1, 1), 0);
	}
	assert_int_equal(fl_profile__for_each(p, stop_at_third, &calls), 42);
	assert_int_equal(calls, 3);
	fl_profile__free(p);
}

static void test_large_counts(void **state)
{
	struct fl_profile *p = new_profile();
	uint32_t a = intern(p, "a");

	(void)state;
	assert_int_equal(fl_profile__add(p, &a, 1, UINT64_C(1) << 62), 0);
	assert_int_equal(fl_profile__add(p, &a, 1, UINT64_C(1) << 62), 0);
	assert_int_equal(fl_profile__add(p, &a, 1, 1), 0);
	assert_true(fl_profile__total(p) == (UINT64_C(1) << 63) + 1);
	assert_true(count_of(p, &a, 1) == (UINT64_C(1) << 63) + 1);
	fl_profile__free(p);
}

/*
 * Stack i of the big test: depth 1..24, frames a function of i, and frame 0
 * spelling i out in base NR_NAMES so that no two stacks are equal.
 */
#define NR_NAMES 1000u
#define NR_BIG 1000000u

static size_t big_stack(uint32_t i, uint32_t *fr)
{
	size_t n = 3 + i % 22, k;
	uint64_t x = i * UINT64_C(0x9e3779b97f4a7c15);

	fr[0] = i % NR_NAMES;
	fr[1] = (i / NR_NAMES) % NR_NAMES;
	fr[2] = i / (NR_NAMES * NR_NAMES);
	for (k = 3; k < n; k++) {
		x ^= x >> 29;
		x *= UINT64_C(0xbf58476d1ce4e5b9);
		fr[k] = (uint32_t)(x % NR_NAMES);
	}
	return n;
}

struct big_check {
	size_t calls;
	uint64_t sum;
	size_t bad;
};

static int big_cb(const uint32_t *frames, size_t n, uint64_t count, void *ctx)
{
	struct big_check *c = ctx;
	uint32_t i = frames[0] + frames[1] * NR_NAMES + frames[2] * NR_NAMES * NR_NAMES;
	uint32_t want[32];

	c->calls++;
	c->sum += count;
	if (big_stack(i, want) != n || memcmp(want, frames, n * sizeof(*frames)) != 0 ||
	    count != (uint64_t)i % 7 + 1 + 3)
		c->bad++;
	return 0;
}

/* A million distinct stacks, each added twice: every one comes back once with both counts. */
static void test_million_stacks(void **state)
{
	struct fl_profile *p = new_profile();
	struct big_check c = { 0 };
	uint32_t fr[32], i;
	char name[16];
	size_t n;

	(void)state;
	for (i = 0; i < NR_NAMES; i++) {
		snprintf(name, sizeof(name), "fn%u", i);
		assert_int_equal(intern(p, name), i);
	}
	for (i = 0; i < NR_BIG; i++) {
		n = big_stack(i, fr);
		assert_int_equal(fl_profile__add(p, fr, n, (uint64_t)i % 7 + 1), 0);
	}
	for (i = NR_BIG; i-- > 0;) {
		n = big_stack(i, fr);
		assert_int_equal(fl_profile__add(p, fr, n, 3), 0);
	}
	assert_int_equal(fl_profile__nr_stacks(p), NR_BIG);
	assert_int_equal(fl_profile__for_each(p, big_cb, &c), 0);
	assert_int_equal(c.calls, NR_BIG);
	assert_int_equal(c.bad, 0);
	assert_true(c.sum == fl_profile__total(p));
	fl_profile__free(p);
}

/* What fl_profile__for_each_grouped() gave: each stack's frames in merge order, and its count. */
struct grouped_seen {
	uint32_t f[8][6];
	size_t n[8];
	uint64_t count[8];
	size_t nr;
	bool reverse;
	int stop_at;
};

static int grouped_cb(const uint32_t *frames, size_t n, uint64_t count, void *ctx)
{
	struct grouped_seen *g = ctx;

	if (g->nr == (size_t)g->stop_at)
		return -E2BIG;
	assert_true(g->nr < 8 && n <= 6);
	for (size_t i = 0; i < n; i++)
		g->f[g->nr][i] = frames[g->reverse ? n - 1 - i : i];
	g->n[g->nr] = n;
	g->count[g->nr++] = count;
	return 0;
}

/*
 * Every stack once with its count, and every prefix (of roots, or of
 * leaves when reversed) in one run of consecutive stacks: what a flame tree
 * with grouped set needs. Added in an order that interleaves them.
 */
static void test_for_each_grouped(void **state)
{
	struct fl_profile *p = new_profile();
	uint32_t a = intern(p, "a"), b = intern(p, "b"), c = intern(p, "c"), d = intern(p, "d");
	const uint32_t s[6][4] = { { a, b, c }, { a, d }, { a, b }, { d, b, c }, { a, b, d }, { a } };
	const size_t ns[6] = { 3, 2, 2, 3, 3, 1 };

	(void)state;
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(fl_profile__add(p, s[i], ns[i], i + 1), 0);
	for (int rev = 0; rev < 2; rev++) {
		struct grouped_seen g = { .reverse = rev, .stop_at = -1 };
		uint64_t sum = 0;

		assert_int_equal(fl_profile__for_each_grouped(p, rev, grouped_cb, &g), 0);
		assert_int_equal(g.nr, 6);
		for (size_t i = 0; i < g.nr; i++)
			sum += g.count[i];
		assert_int_equal(sum, 21);
		/* Stacks i < j < k: if i and k share a prefix, j shares it too. */
		for (size_t i = 0; i < g.nr; i++)
			for (size_t k = i + 2; k < g.nr; k++)
				for (size_t len = 1; len <= g.n[i] && len <= g.n[k]; len++) {
					if (memcmp(g.f[i], g.f[k], len * sizeof(uint32_t)))
						break;
					for (size_t j = i + 1; j < k; j++)
						assert_true(g.n[j] >= len &&
							    !memcmp(g.f[i], g.f[j], len * sizeof(uint32_t)));
				}
	}
	/* fn's error stops the walk and is returned. */
	{
		struct grouped_seen g = { .stop_at = 2 };

		assert_int_equal(fl_profile__for_each_grouped(p, false, grouped_cb, &g), -E2BIG);
		assert_int_equal(g.nr, 2);
	}
	fl_profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_free),
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_intern_errors),
		cmocka_unit_test(test_add_merges),
		cmocka_unit_test(test_distinct_stacks),
		cmocka_unit_test(test_add_errors),
		cmocka_unit_test(test_for_each_stops),
		cmocka_unit_test(test_for_each_grouped),
		cmocka_unit_test(test_large_counts),
		cmocka_unit_test(test_million_stacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
