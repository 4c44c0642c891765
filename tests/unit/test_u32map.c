// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of lib/'s private uint32 table: lookups, updates, key 0, growth on awkward keys. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

/* Private to lib/, and linked into libflamed: reached by path. */
#include "../../lib/common/u32map.h"

static void test_empty(void **state)
{
	struct fl_u32map m = {0};
	uint32_t v = 7;

	(void)state;
	assert_false(fl_u32map__get(&m, 1, &v));
	assert_false(fl_u32map__get(&m, 0, NULL));
	assert_int_equal(v, 7);
	fl_u32map__fini(&m);
	fl_u32map__fini(&m);
}

static void test_put_get_update(void **state)
{
	struct fl_u32map m = {0};
	uint32_t v = 0;

	(void)state;
	assert_int_equal(fl_u32map__put(&m, 0, 1), -EINVAL);
	assert_int_equal(m.nr, 0);
	assert_int_equal(fl_u32map__put(&m, 42, 1), 0);
	assert_int_equal(fl_u32map__put(&m, UINT32_MAX, 2), 0);
	assert_true(fl_u32map__get(&m, 42, &v));
	assert_int_equal(v, 1);
	assert_true(fl_u32map__get(&m, UINT32_MAX, NULL));
	assert_int_equal(fl_u32map__put(&m, 42, 3), 0);
	assert_true(fl_u32map__get(&m, 42, &v));
	assert_int_equal(v, 3);
	assert_int_equal(m.nr, 2);
	assert_false(fl_u32map__get(&m, 43, &v));
	assert_false(fl_u32map__get(&m, 0, &v));
	fl_u32map__fini(&m);
	assert_int_equal(m.nr, 0);
	assert_false(fl_u32map__get(&m, 42, &v));
}

/* Keys that share their low bits (a stride of 2^16) must neither collide into nothing nor get lost. */
static void test_many_strided(void **state)
{
	static const uint32_t strides[] = {1, 64, 65536};
	const uint32_t n = 50000;

	(void)state;
	for (size_t s = 0; s < sizeof(strides) / sizeof(strides[0]); s++) {
		struct fl_u32map m = {0};

		for (uint32_t i = 0; i < n; i++)
			assert_int_equal(fl_u32map__put(&m, 1 + i * strides[s], i), 0);
		assert_int_equal(m.nr, n);
		assert_true(m.cap >= 2 * m.nr);
		assert_int_equal(m.cap & (m.cap - 1), 0);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t v = UINT32_MAX;

			assert_true(fl_u32map__get(&m, 1 + i * strides[s], &v));
			assert_int_equal(v, i);
		}
		fl_u32map__fini(&m);
	}
}

/*
 * Deleting in a table full of collisions: after any mix of puts and deletes
 * every key still there is found with its value, and no deleted one is.
 */
static void test_delete_against_reference(void **state)
{
	enum { N = 4096 };
	static uint32_t ref[N]; /* value + 1 per key 1..N-1; 0: absent */
	struct fl_u32map m = {0};
	uint32_t seed = 12345, v;
	size_t nr = 0;

	(void)state;
	for (int round = 0; round < 200000; round++) {
		uint32_t key;

		seed = seed * 1103515245 + 12345;
		/* Keys that share home slots: multiples of 64 among small ones. */
		key = 1 + (seed >> 8) % (N - 1);
		if ((seed >> 4) & 1)
			key = (key & ~63u) ? key & ~63u : 64;
		if ((seed >> 5) % 3 == 0) {
			assert_int_equal(fl_u32map__del(&m, key), ref[key] != 0);
			if (ref[key])
				nr--;
			ref[key] = 0;
		} else {
			assert_int_equal(fl_u32map__put(&m, key, (uint32_t)round), 0);
			if (!ref[key])
				nr++;
			ref[key] = (uint32_t)round + 1;
		}
	}
	assert_int_equal(m.nr, nr);
	for (uint32_t key = 1; key < N; key++) {
		assert_int_equal(fl_u32map__get(&m, key, &v), ref[key] != 0);
		if (ref[key])
			assert_int_equal(v, ref[key] - 1);
	}
	assert_false(fl_u32map__del(&m, 0));
	fl_u32map__fini(&m);
	assert_false(fl_u32map__del(&m, 5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_delete_against_reference),
		cmocka_unit_test(test_put_get_update),
		cmocka_unit_test(test_many_strided),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
