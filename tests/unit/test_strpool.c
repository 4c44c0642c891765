// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the interning string pool: ids, lengths, and pointers that never move. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/strpool.h"

static struct fl_strpool *new_pool(void)
{
	struct fl_strpool *p = NULL;

	assert_int_equal(fl_strpool__new(&p), 0);
	assert_non_null(p);
	return p;
}

static uint32_t intern(struct fl_strpool *p, const char *s)
{
	uint32_t id = UINT32_MAX;

	assert_int_equal(fl_strpool__intern(p, s, strlen(s), &id), 0);
	return id;
}

static void test_new_free(void **state)
{
	struct fl_strpool *p = new_pool();

	(void)state;
	assert_int_equal(fl_strpool__count(p), 0);
	assert_null(fl_strpool__str(p, 0));
	assert_int_equal(fl_strpool__len(p, 0), 0);
	fl_strpool__free(p);
	fl_strpool__free(NULL);
	assert_int_equal(fl_strpool__new(NULL), -EINVAL);
}

static void test_equal_strings_equal_ids(void **state)
{
	struct fl_strpool *p = new_pool();
	uint32_t a, b, c, a2, b2;

	(void)state;
	a = intern(p, "main");
	b = intern(p, "start_thread");
	c = intern(p, "mainx");
	a2 = intern(p, "main");
	b2 = intern(p, "start_thread");
	/* Dense, in order of first appearance. */
	assert_int_equal(a, 0);
	assert_int_equal(b, 1);
	assert_int_equal(c, 2);
	assert_int_equal(a2, a);
	assert_int_equal(b2, b);
	assert_int_equal(fl_strpool__count(p), 3);
	assert_string_equal(fl_strpool__str(p, a), "main");
	assert_string_equal(fl_strpool__str(p, c), "mainx");
	assert_int_equal(fl_strpool__len(p, b), strlen("start_thread"));
	assert_null(fl_strpool__str(p, 3));
	assert_null(fl_strpool__str(p, UINT32_MAX));
	fl_strpool__free(p);
}

static void test_len_not_nul(void **state)
{
	struct fl_strpool *p = new_pool();
	const char buf[] = "hello world";
	uint32_t id, id2;
	const char *s;

	(void)state;
	/* Only len bytes count; the copy is NUL-terminated. */
	assert_int_equal(fl_strpool__intern(p, buf, 5, &id), 0);
	s = fl_strpool__str(p, id);
	assert_string_equal(s, "hello");
	assert_int_equal(fl_strpool__len(p, id), 5);
	assert_true(s != buf);
	assert_int_equal(fl_strpool__intern(p, "hello", 5, &id2), 0);
	assert_int_equal(id, id2);
	assert_int_equal(fl_strpool__intern(p, buf, 6, &id2), 0);
	assert_int_not_equal(id, id2);
	assert_string_equal(fl_strpool__str(p, id2), "hello ");
	fl_strpool__free(p);
}

static void test_empty_and_lengths(void **state)
{
	struct fl_strpool *p = new_pool();
	char buf[64];
	uint32_t ids[33], id;
	size_t i, j;

	(void)state;
	assert_int_equal(fl_strpool__intern(p, "", 0, &id), 0);
	assert_string_equal(fl_strpool__str(p, id), "");
	assert_int_equal(fl_strpool__len(p, id), 0);
	assert_int_equal(fl_strpool__intern(p, NULL, 0, &ids[0]), 0);
	assert_int_equal(ids[0], id);

	/* Runs of one byte of every length: exercises the hash's word and tail steps. */
	memset(buf, 'x', sizeof(buf));
	for (i = 1; i < 33; i++)
		assert_int_equal(fl_strpool__intern(p, buf, i, &ids[i]), 0);
	for (i = 1; i < 33; i++) {
		assert_int_equal(fl_strpool__len(p, ids[i]), i);
		for (j = 1; j < i; j++)
			assert_int_not_equal(ids[i], ids[j]);
		assert_int_equal(fl_strpool__intern(p, buf, i, &id), 0);
		assert_int_equal(id, ids[i]);
	}
	/* High bytes are kept as they are. */
	id = intern(p, "caf\xc3\xa9\xff");
	assert_string_equal(fl_strpool__str(p, id), "caf\xc3\xa9\xff");
	fl_strpool__free(p);
}

static void test_bad_args(void **state)
{
	struct fl_strpool *p = new_pool();
	uint32_t id = 42;

	(void)state;
	assert_int_equal(fl_strpool__intern(NULL, "a", 1, &id), -EINVAL);
	assert_int_equal(fl_strpool__intern(p, "a", 1, NULL), -EINVAL);
	assert_int_equal(fl_strpool__intern(p, NULL, 1, &id), -EINVAL);
	assert_int_equal(id, 42);
	assert_int_equal(fl_strpool__count(p), 0);
	assert_null(fl_strpool__str(NULL, 0));
	assert_int_equal(fl_strpool__len(NULL, 0), 0);
	assert_int_equal(fl_strpool__count(NULL), 0);
	fl_strpool__free(p);
}

static void test_big_strings(void **state)
{
	struct fl_strpool *p = new_pool();
	size_t sizes[] = { 16383, 16384, 16385, 65535, 65536, 65537, 300000 };
	uint32_t ids[ARRAY_SIZE(sizes)];
	const char *ptrs[ARRAY_SIZE(sizes)];
	uint32_t small, id;
	char *buf;
	size_t i;

	(void)state;
	buf = malloc(300001);
	assert_non_null(buf);
	small = intern(p, "small");
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		memset(buf, (int)('a' + i), sizes[i]);
		assert_int_equal(fl_strpool__intern(p, buf, sizes[i], &ids[i]), 0);
		ptrs[i] = fl_strpool__str(p, ids[i]);
		intern(p, "filler between big ones");
	}
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		memset(buf, (int)('a' + i), sizes[i]);
		buf[sizes[i]] = '\0';
		assert_ptr_equal(fl_strpool__str(p, ids[i]), ptrs[i]);
		assert_int_equal(fl_strpool__len(p, ids[i]), sizes[i]);
		assert_string_equal(ptrs[i], buf);
		assert_int_equal(fl_strpool__intern(p, buf, sizes[i], &id), 0);
		assert_int_equal(id, ids[i]);
	}
	assert_string_equal(fl_strpool__str(p, small), "small");
	free(buf);
	fl_strpool__free(p);
}

#define NR_MANY 1000000u

/* A million strings: earlier pointers stay put through every growth, and every id comes back. */
static void test_million_stable(void **state)
{
	struct fl_strpool *p = new_pool();
	const char **ptrs;
	char buf[64];
	uint32_t i, id;
	int len;

	(void)state;
	ptrs = calloc(NR_MANY, sizeof(*ptrs));
	assert_non_null(ptrs);
	for (i = 0; i < NR_MANY; i++) {
		len = snprintf(buf, sizeof(buf), "sym_%u_%x", i, i * 2654435761u);
		assert_int_equal(fl_strpool__intern(p, buf, (size_t)len, &id), 0);
		assert_int_equal(id, i);
		ptrs[i] = fl_strpool__str(p, id);
	}
	assert_int_equal(fl_strpool__count(p), NR_MANY);
	for (i = 0; i < NR_MANY; i++) {
		len = snprintf(buf, sizeof(buf), "sym_%u_%x", i, i * 2654435761u);
		assert_ptr_equal(fl_strpool__str(p, i), ptrs[i]);
		if (strcmp(ptrs[i], buf) != 0)
			fail_msg("id %u: '%s' != '%s'", i, ptrs[i], buf);
		assert_int_equal(fl_strpool__len(p, i), (size_t)len);
		assert_int_equal(fl_strpool__intern(p, buf, (size_t)len, &id), 0);
		if (id != i)
			fail_msg("re-interning '%s' gave %u, not %u", buf, id, i);
	}
	assert_int_equal(fl_strpool__count(p), NR_MANY);
	free(ptrs);
	fl_strpool__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_free),
		cmocka_unit_test(test_equal_strings_equal_ids),
		cmocka_unit_test(test_len_not_nul),
		cmocka_unit_test(test_empty_and_lengths),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_big_strings),
		cmocka_unit_test(test_million_stable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
