// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of lib/'s private per-key counter: merging, order, odd lengths, growth. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Private to lib/, and linked into libflamed: reached by path. */
#include "../../lib/common/keycount.h"

static void test_empty(void **state)
{
	struct fl_keycount kc = {0};
	const void *key;
	uint64_t count;
	size_t pos = 0, len;

	(void)state;
	assert_false(fl_keycount__next(&kc, &pos, &key, &len, &count));
	fl_keycount__fini(&kc);
	fl_keycount__fini(&kc);
}

/* Keys of every length 0..20 bytes, prefixes of one another: all distinct, in order, aligned. */
static void test_lengths_and_order(void **state)
{
	const char bytes[] = "abcdefghijklmnopqrstu";
	struct fl_keycount kc = {0};
	const void *key;
	uint64_t count;
	size_t pos = 0, len, i;

	(void)state;
	for (int round = 1; round <= 3; round++)
		for (i = 0; i <= 20; i++)
			assert_int_equal(fl_keycount__add(&kc, bytes, i, (uint64_t)round * (i + 1)),
					 0);
	assert_int_equal(kc.nr_keys, 21);
	assert_true(kc.total == 6 * (21 * 22 / 2));
	for (i = 0; fl_keycount__next(&kc, &pos, &key, &len, &count); i++) {
		assert_int_equal(len, i);
		assert_int_equal((uintptr_t)key % sizeof(uint64_t), 0);
		if (len)
			assert_memory_equal(key, bytes, len);
		assert_true(count == 6 * (i + 1));
	}
	assert_int_equal(i, 21);
	fl_keycount__fini(&kc);
}

/* Many keys that differ in one word only: growth keeps every count and the first-seen order. */
static void test_many(void **state)
{
	const uint32_t n = 200000;
	struct fl_keycount kc = {0};
	uint64_t words[3] = {1, 2, 3}, count;
	const void *key;
	size_t pos = 0, len;
	uint32_t i;

	(void)state;
	for (i = 0; i < n; i++) {
		words[1] = i;
		assert_int_equal(fl_keycount__add(&kc, words, sizeof(words), 1), 0);
	}
	for (i = n; i-- > 0;) {
		words[1] = i;
		assert_int_equal(fl_keycount__add(&kc, words, sizeof(words), i), 0);
	}
	assert_int_equal(kc.nr_keys, n);
	for (i = 0; fl_keycount__next(&kc, &pos, &key, &len, &count); i++) {
		const uint64_t *w = key;

		assert_int_equal(len, sizeof(words));
		assert_true(w[0] == 1 && w[1] == i && w[2] == 3);
		assert_true(count == (uint64_t)i + 1);
	}
	assert_int_equal(i, n);
	fl_keycount__fini(&kc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_lengths_and_order),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
