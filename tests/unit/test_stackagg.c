// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of user-space raw stack counting: merging, every key field, truncation, counts. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flamed/profile_abi.h"
#include "flamed/sampling/stackagg.h"

static struct fl_stackagg *new_agg(void)
{
	struct fl_stackagg *a = NULL;

	assert_int_equal(fl_stackagg__new(&a), 0);
	assert_non_null(a);
	return a;
}

/* Everything for_each gave back, deep-copied. */
struct got {
	struct fl_raw_stack st;
	char comm[FL_TASK_COMM_LEN + 1];
	uint64_t kips[FL_MAX_STACK_DEPTH + 1];
	uint64_t uips[FL_MAX_STACK_DEPTH + 1];
	uint64_t pyips[FL_MAX_STACK_DEPTH + 1];
};

struct collect {
	struct got *got;
	size_t nr, cap;
};

static int collect_cb(const struct fl_raw_stack *st, void *ctx)
{
	struct collect *c = ctx;
	struct got *g;
	size_t len;

	assert_true(c->nr < c->cap);
	assert_non_null(st->comm);
	len = strlen(st->comm);
	assert_true(len < FL_TASK_COMM_LEN);
	assert_true(st->nr_kips <= FL_MAX_STACK_DEPTH);
	assert_true(st->nr_uips <= FL_MAX_STACK_DEPTH);
	g = &c->got[c->nr++];
	g->st = *st;
	memcpy(g->comm, st->comm, len + 1);
	if (st->nr_kips)
		memcpy(g->kips, st->kips, st->nr_kips * sizeof(*st->kips));
	if (st->nr_uips)
		memcpy(g->uips, st->uips, st->nr_uips * sizeof(*st->uips));
	assert_true(st->nr_pyips <= FL_MAX_STACK_DEPTH);
	if (st->nr_pyips)
		memcpy(g->pyips, st->pyips, st->nr_pyips * sizeof(*st->pyips));
	g->st.comm = g->comm;
	g->st.kips = g->kips;
	g->st.uips = g->uips;
	return 0;
}

static struct collect collect(const struct fl_stackagg *a)
{
	struct collect c = {.cap = fl_stackagg__nr_stacks(a)};

	c.got = calloc(c.cap + 1, sizeof(*c.got));
	assert_non_null(c.got);
	assert_int_equal(fl_stackagg__for_each(a, collect_cb, &c), 0);
	assert_int_equal(c.nr, c.cap);
	return c;
}

static const uint64_t K3[] = {
	0xffffffff81000010ULL,
	0xffffffff81000020ULL,
	0xffffffff81000030ULL,
};
static const uint64_t U2[] = {0x401000, 0x402000};

static struct fl_raw_stack base_stack(void)
{
	return (struct fl_raw_stack){
		.pid = 100,
		.tid = 101,
		.comm = "worker",
		.kips = K3,
		.nr_kips = 3,
		.uips = U2,
		.nr_uips = 2,
	};
}

static void test_new_free(void **state)
{
	struct fl_stackagg *a = new_agg();

	(void)state;
	assert_int_equal(fl_stackagg__nr_stacks(a), 0);
	assert_int_equal(fl_stackagg__total(a), 0);
	fl_stackagg__free(a);
	fl_stackagg__free(NULL);
	assert_int_equal(fl_stackagg__new(NULL), -EINVAL);
	assert_int_equal(fl_stackagg__nr_stacks(NULL), 0);
	assert_int_equal(fl_stackagg__total(NULL), 0);
}

static void test_merge_equal(void **state)
{
	struct fl_stackagg *a = new_agg();
	struct fl_raw_stack st = base_stack();
	uint64_t kcopy[3], ucopy[2];
	char comm[32] = "worker";
	struct collect c;

	(void)state;
	st.count = 999; /* ignored */
	assert_int_equal(fl_stackagg__add(a, &st, 2), 0);
	/* Equal content through other buffers is the same stack. */
	memcpy(kcopy, K3, sizeof(kcopy));
	memcpy(ucopy, U2, sizeof(ucopy));
	memset(comm + 7, 'Z', 8); /* bytes after the NUL do not count */
	st.kips = kcopy;
	st.uips = ucopy;
	st.comm = comm;
	assert_int_equal(fl_stackagg__add(a, &st, 3), 0);
	assert_int_equal(fl_stackagg__nr_stacks(a), 1);
	assert_int_equal(fl_stackagg__total(a), 5);

	c = collect(a);
	assert_int_equal(c.got[0].st.count, 5);
	assert_int_equal(c.got[0].st.pid, 100);
	assert_int_equal(c.got[0].st.tid, 101);
	assert_string_equal(c.got[0].st.comm, "worker");
	assert_int_equal(c.got[0].st.nr_kips, 3);
	assert_int_equal(c.got[0].st.nr_uips, 2);
	assert_memory_equal(c.got[0].kips, K3, sizeof(K3));
	assert_memory_equal(c.got[0].uips, U2, sizeof(U2));
	assert_int_equal(c.got[0].st.kerr, 0);
	assert_int_equal(c.got[0].st.uerr, 0);
	free(c.got);
	fl_stackagg__free(a);
}

/* The stack with just one field changed from base_stack(). */
static struct fl_raw_stack variant(int which)
{
	static const uint64_t k_other[] = {0xffffffff81000010ULL, 0xffffffff81000020ULL,
					   0xffffffff81000031ULL};
	static const uint64_t k_moved[] = {0xffffffff81000010ULL, 0xffffffff81000020ULL,
					   0xffffffff81000030ULL, 0x401000};
	static const uint64_t u_moved[] = {0x402000};
	static const uint64_t py2[] = {0x7f0000001000ULL, 0x7f0000002001ULL};
	static const uint64_t py_moved[] = {0x401000, 0x402000};
	struct fl_raw_stack st = base_stack();

	switch (which) {
	case 0:
		break;
	case 1:
		st.pid = 200;
		break;
	case 2:
		st.tid = 0;
		break;
	case 3:
		st.comm = "worke";
		break;
	case 4:
		st.comm = "worker2";
		break;
	case 5:
		st.kerr = -EFAULT;
		break;
	case 6:
		st.uerr = -EFAULT;
		break;
	case 7:
		st.kips = k_other;
		break;
	case 8:
		st.nr_kips = 2; /* a prefix of the kernel frames */
		break;
	case 9:
		st.nr_uips = 1;
		break;
	case 10: /* the same frames, split between halves differently */
		st.kips = k_moved;
		st.nr_kips = 4;
		st.uips = u_moved;
		st.nr_uips = 1;
		break;
	case 11: /* kernel and user swapped */
		st.kips = U2;
		st.nr_kips = 2;
		st.uips = K3;
		st.nr_uips = 3;
		break;
	case 12:
		st.nr_kips = 0;
		st.kips = NULL;
		st.kerr = -ENOENT;
		break;
	case 13:
		st.pid = 101;
		st.tid = 100;
		break;
	case 14: /* Python frames */
		st.pyips = py2;
		st.nr_pyips = 2;
		break;
	case 15:
		st.pyips = py2;
		st.nr_pyips = 1;
		break;
	case 16: /* the user frames as Python frames */
		st.uips = NULL;
		st.nr_uips = 0;
		st.pyips = py_moved;
		st.nr_pyips = 2;
		break;
	default:
		fail();
	}
	return st;
}

#define NR_VARIANTS 17

static void test_every_field_counts(void **state)
{
	struct fl_stackagg *a = new_agg();
	struct collect c;
	int i, round;
	size_t j;

	(void)state;
	for (round = 0; round < 2; round++) {
		for (i = 0; i < NR_VARIANTS; i++) {
			struct fl_raw_stack st = variant(i);

			assert_int_equal(fl_stackagg__add(a, &st, (uint64_t)i + 1), 0);
		}
	}
	assert_int_equal(fl_stackagg__nr_stacks(a), NR_VARIANTS);
	assert_int_equal(fl_stackagg__total(a), NR_VARIANTS * (NR_VARIANTS + 1));

	/* Each comes back once, whole, with twice its count. */
	c = collect(a);
	for (j = 0; j < c.nr; j++) {
		const struct fl_raw_stack *g = &c.got[j].st;
		struct fl_raw_stack want;

		assert_true(g->count % 2 == 0 && g->count >= 2 && g->count <= 2 * NR_VARIANTS);
		want = variant((int)(g->count / 2 - 1));
		assert_int_equal(g->pid, want.pid);
		assert_int_equal(g->tid, want.tid);
		assert_string_equal(g->comm, want.comm);
		assert_int_equal(g->kerr, want.kerr);
		assert_int_equal(g->uerr, want.uerr);
		assert_int_equal(g->nr_kips, want.nr_kips);
		assert_int_equal(g->nr_uips, want.nr_uips);
		assert_int_equal(g->nr_pyips, want.nr_pyips);
		if (want.nr_pyips)
			assert_memory_equal(c.got[j].pyips, want.pyips,
					    want.nr_pyips * sizeof(uint64_t));
		if (want.nr_kips)
			assert_memory_equal(g->kips, want.kips, want.nr_kips * sizeof(uint64_t));
		if (want.nr_uips)
			assert_memory_equal(g->uips, want.uips, want.nr_uips * sizeof(uint64_t));
	}
	free(c.got);
	fl_stackagg__free(a);
}

static void test_comm(void **state)
{
	struct fl_stackagg *a = new_agg();
	struct fl_raw_stack st = base_stack();
	struct collect c;
	size_t i;
	int seen = 0;

	(void)state;
	/* Only the first 15 bytes of a name count. */
	st.comm = "0123456789abcdefXYZ";
	assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
	st.comm = "0123456789abcdeQ";
	assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
	st.comm = "0123456789abcde";
	assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
	/* No name is an empty name. */
	st.comm = NULL;
	assert_int_equal(fl_stackagg__add(a, &st, 10), 0);
	st.comm = "";
	assert_int_equal(fl_stackagg__add(a, &st, 10), 0);
	assert_int_equal(fl_stackagg__nr_stacks(a), 2);
	c = collect(a);
	for (i = 0; i < c.nr; i++) {
		if (c.got[i].st.count == 3) {
			assert_string_equal(c.got[i].st.comm, "0123456789abcde");
			seen |= 1;
		} else {
			assert_int_equal(c.got[i].st.count, 20);
			assert_string_equal(c.got[i].st.comm, "");
			seen |= 2;
		}
	}
	assert_int_equal(seen, 3);
	free(c.got);
	fl_stackagg__free(a);
}

static void test_truncation(void **state)
{
	struct fl_stackagg *a = new_agg();
	struct fl_raw_stack st = base_stack();
	uint64_t k[200], u[300];
	struct collect c;
	size_t i;

	(void)state;
	for (i = 0; i < 200; i++)
		k[i] = 0xffffffff80000000ULL + i;
	for (i = 0; i < 300; i++)
		u[i] = 0x400000 + i;
	st.kips = k;
	st.nr_kips = 200;
	st.uips = u;
	st.nr_uips = 300;
	assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
	/* Frames past 127 do not make a stack different... */
	k[150] = 1;
	u[199] = 2;
	st.nr_kips = 128;
	assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
	st.nr_kips = FL_MAX_STACK_DEPTH;
	st.nr_uips = FL_MAX_STACK_DEPTH;
	assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
	assert_int_equal(fl_stackagg__nr_stacks(a), 1);
	/* ...frames before do. */
	k[126] = 3;
	assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
	assert_int_equal(fl_stackagg__nr_stacks(a), 2);

	c = collect(a);
	for (i = 0; i < c.nr; i++) {
		assert_int_equal(c.got[i].st.nr_kips, FL_MAX_STACK_DEPTH);
		assert_int_equal(c.got[i].st.nr_uips, FL_MAX_STACK_DEPTH);
		assert_memory_equal(c.got[i].uips, u, FL_MAX_STACK_DEPTH * sizeof(*u));
		assert_memory_equal(c.got[i].kips, k, 126 * sizeof(*k));
		if (c.got[i].st.count == 3)
			assert_true(c.got[i].kips[126] == 0xffffffff80000000ULL + 126);
		else
			assert_true(c.got[i].kips[126] == 3);
	}
	free(c.got);
	fl_stackagg__free(a);
}

static void test_large_counts(void **state)
{
	struct fl_stackagg *a = new_agg();
	struct fl_raw_stack st = base_stack();
	struct collect c;

	(void)state;
	assert_int_equal(fl_stackagg__add(a, &st, UINT64_C(1) << 40), 0);
	assert_int_equal(fl_stackagg__add(a, &st, (UINT64_C(1) << 63) - 1), 0);
	/* Zero adds nothing, not even an entry. */
	st.pid = 7;
	assert_int_equal(fl_stackagg__add(a, &st, 0), 0);
	assert_int_equal(fl_stackagg__nr_stacks(a), 1);
	c = collect(a);
	assert_true(c.got[0].st.count == (UINT64_C(1) << 63) - 1 + (UINT64_C(1) << 40));
	assert_true(fl_stackagg__total(a) == c.got[0].st.count);
	free(c.got);
	fl_stackagg__free(a);
}

static void test_errors(void **state)
{
	struct fl_stackagg *a = new_agg();
	struct fl_raw_stack st = base_stack();

	(void)state;
	assert_int_equal(fl_stackagg__add(NULL, &st, 1), -EINVAL);
	assert_int_equal(fl_stackagg__add(a, NULL, 1), -EINVAL);
	st.kips = NULL;
	assert_int_equal(fl_stackagg__add(a, &st, 1), -EINVAL);
	st = base_stack();
	st.uips = NULL;
	assert_int_equal(fl_stackagg__add(a, &st, 1), -EINVAL);
	assert_int_equal(fl_stackagg__nr_stacks(a), 0);
	assert_int_equal(fl_stackagg__for_each(a, NULL, NULL), -EINVAL);
	fl_stackagg__free(a);
}

static int stop_at_second(const struct fl_raw_stack *st, void *ctx)
{
	int *calls = ctx;

	(void)st;
	return ++*calls == 2 ? -ENOSPC : 0;
}

static void test_for_each_stops(void **state)
{
	struct fl_stackagg *a = new_agg();
	int i, calls = 0;

	(void)state;
	for (i = 0; i < 5; i++) {
		struct fl_raw_stack st = variant(i);

		assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
	}
	assert_int_equal(fl_stackagg__for_each(a, stop_at_second, &calls), -ENOSPC);
	assert_int_equal(calls, 2);
	fl_stackagg__free(a);
}

#define NR_MANY 200000u

struct many_check {
	size_t calls, bad;
};

static int many_cb(const struct fl_raw_stack *st, void *ctx)
{
	struct many_check *m = ctx;
	uint32_t i = st->pid;
	size_t k;

	m->calls++;
	if (st->tid != i % 3 || st->count != 2 * (uint64_t)(i % 5 + 1) || st->nr_kips != i % 9 ||
	    st->nr_uips != (i % 40) + 1)
		m->bad++;
	for (k = 0; k < st->nr_kips; k++)
		if (st->kips[k] != 0xffffffff81000000ULL + i + k)
			m->bad++;
	for (k = 0; k < st->nr_uips; k++)
		if (st->uips[k] != 0x400000ULL * (k + 1) + i)
			m->bad++;
	return 0;
}

/* Many distinct stacks, each added twice: they survive every rehash and come back intact. */
static void test_many(void **state)
{
	struct fl_stackagg *a = new_agg();
	struct many_check m = {0};
	uint64_t k[FL_MAX_STACK_DEPTH], u[FL_MAX_STACK_DEPTH];
	uint32_t i, round;
	size_t j;

	(void)state;
	for (round = 0; round < 2; round++) {
		for (i = 0; i < NR_MANY; i++) {
			struct fl_raw_stack st = {
				.pid = i,
				.tid = i % 3,
				.comm = "many",
				.kips = k,
				.nr_kips = i % 9,
				.uips = u,
				.nr_uips = i % 40 + 1,
			};

			for (j = 0; j < st.nr_kips; j++)
				k[j] = 0xffffffff81000000ULL + i + j;
			for (j = 0; j < st.nr_uips; j++)
				u[j] = 0x400000ULL * (j + 1) + i;
			assert_int_equal(fl_stackagg__add(a, &st, i % 5 + 1), 0);
		}
	}
	assert_int_equal(fl_stackagg__nr_stacks(a), NR_MANY);
	assert_int_equal(fl_stackagg__for_each(a, many_cb, &m), 0);
	assert_int_equal(m.calls, NR_MANY);
	assert_int_equal(m.bad, 0);
	fl_stackagg__free(a);
}

/* The era (time) is part of a stack's identity, and comes back as both times. */
static void test_time_keeps_eras_apart(void **state)
{
	struct fl_stackagg *a = new_agg();
	struct fl_raw_stack st = base_stack();
	struct collect c;

	(void)state;
	st.time_first = st.time = 0;
	assert_int_equal(fl_stackagg__add(a, &st, 2), 0);
	st.time_first = st.time = 5000;
	assert_int_equal(fl_stackagg__add(a, &st, 3), 0);
	assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
	/* Counted in the kernel across two eras: a key of its own, both ends kept. */
	st.time_first = 0;
	assert_int_equal(fl_stackagg__add(a, &st, 7), 0);
	c = collect(a);
	assert_int_equal(c.nr, 3);
	for (size_t i = 0; i < c.nr; i++) {
		const struct fl_raw_stack *g = &c.got[i].st;

		if (g->time_first != g->time) {
			assert_int_equal(g->time_first, 0);
			assert_int_equal(g->time, 5000);
			assert_int_equal(g->count, 7);
		} else {
			assert_int_equal(g->count, g->time ? 4 : 2);
		}
	}
	free(c.got);
	fl_stackagg__free(a);
}

/* take: the stacks of the pids go to the callback once and leave the table; the rest stay. */
static void test_take(void **state)
{
	struct fl_stackagg *a = new_agg();
	struct collect c = {.cap = 16};
	const uint32_t pids[] = {100, 300};
	struct fl_raw_stack st = base_stack();

	(void)state;
	c.got = calloc(c.cap, sizeof(*c.got));
	assert_non_null(c.got);
	for (uint32_t pid = 100; pid <= 400; pid += 100) {
		st.pid = pid;
		assert_int_equal(fl_stackagg__add(a, &st, pid / 100), 0);
	}
	assert_int_equal(fl_stackagg__take(a, pids, 2, collect_cb, &c), 0);
	assert_int_equal(c.nr, 2);
	assert_int_equal(fl_stackagg__examined(a), 2);
	assert_true((c.got[0].st.pid == 100 && c.got[1].st.pid == 300) ||
		    (c.got[0].st.pid == 300 && c.got[1].st.pid == 100));
	assert_int_equal(c.got[0].st.count, c.got[0].st.pid / 100);
	assert_int_equal(fl_stackagg__nr_stacks(a), 2);
	assert_int_equal(fl_stackagg__total(a), 2 + 4);
	/* Taken again: nothing left of them. */
	c.nr = 0;
	assert_int_equal(fl_stackagg__take(a, pids, 2, collect_cb, &c), 0);
	assert_int_equal(c.nr, 0);
	/* New samples of a taken pid start afresh. */
	st.pid = 100;
	assert_int_equal(fl_stackagg__add(a, &st, 7), 0);
	free(c.got);
	c = collect(a);
	assert_int_equal(c.nr, 3);
	free(c.got);
	fl_stackagg__free(a);
}

/*
 * A take looks at the stacks of its pids only: a long-lived process's
 * thousands of stacks cost the takes of the short-lived ones nothing, and
 * stay whole through a thousand takes.
 */
static void test_take_costs_what_it_takes(void **state)
{
	struct fl_stackagg *a = new_agg();
	struct collect c = {.cap = 4};
	struct fl_raw_stack st = base_stack();
	uint64_t uips[2] = {0x401000, 0};
	struct collect all;

	(void)state;
	c.got = calloc(c.cap, sizeof(*c.got));
	assert_non_null(c.got);
	st.pid = 7;
	st.uips = uips;
	for (uint64_t i = 0; i < 10000; i++) {
		uips[1] = 0x500000 + i;
		assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
	}
	for (uint32_t pid = 1000; pid < 2000; pid++) {
		const uint32_t one[] = {pid};

		st.pid = pid;
		assert_int_equal(fl_stackagg__add(a, &st, 2), 0);
		assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
		c.nr = 0;
		assert_int_equal(fl_stackagg__take(a, one, 1, collect_cb, &c), 0);
		assert_int_equal(c.nr, 1);
		assert_int_equal(c.got[0].st.pid, pid);
		assert_int_equal(c.got[0].st.count, 3);
	}
	/* One stack looked at per take: the 10,000 of pid 7 never. */
	assert_int_equal(fl_stackagg__examined(a), 1000);
	assert_int_equal(fl_stackagg__nr_stacks(a), 10000);
	assert_int_equal(fl_stackagg__total(a), 10000);
	all = collect(a);
	for (size_t i = 0; i < all.nr; i++) {
		assert_int_equal(all.got[i].st.pid, 7);
		assert_int_equal(all.got[i].st.count, 1);
	}
	free(all.got);
	free(c.got);
	fl_stackagg__free(a);
}

/* Taking pids in any order, some unknown, leaves the others and their index whole. */
static void test_take_many_shards(void **state)
{
	struct fl_stackagg *a = new_agg();
	struct fl_raw_stack st = base_stack();
	struct collect c = {.cap = 600};
	uint32_t pids[300];
	size_t n = 0;

	(void)state;
	c.got = calloc(c.cap, sizeof(*c.got));
	assert_non_null(c.got);
	for (uint32_t pid = 1; pid <= 500; pid++) {
		st.pid = pid;
		assert_int_equal(fl_stackagg__add(a, &st, pid), 0);
	}
	/* Every third, and 100 pids never seen. */
	for (uint32_t pid = 3; pid <= 600; pid += 3)
		pids[n++] = pid;
	assert_int_equal(fl_stackagg__take(a, pids, n, collect_cb, &c), 0);
	assert_int_equal(c.nr, 166);
	for (size_t i = 0; i < c.nr; i++) {
		assert_int_equal(c.got[i].st.pid % 3, 0);
		assert_int_equal(c.got[i].st.count, c.got[i].st.pid);
	}
	assert_int_equal(fl_stackagg__nr_stacks(a), 500 - 166);
	/* The rest are found again: adding to them makes no new stack. */
	for (uint32_t pid = 1; pid <= 500; pid++) {
		if (pid % 3 == 0)
			continue;
		st.pid = pid;
		assert_int_equal(fl_stackagg__add(a, &st, 1), 0);
	}
	assert_int_equal(fl_stackagg__nr_stacks(a), 500 - 166);
	c.nr = 0;
	pids[0] = 1;
	pids[1] = 500;
	assert_int_equal(fl_stackagg__take(a, pids, 2, collect_cb, &c), 0);
	assert_int_equal(c.nr, 2);
	assert_int_equal(c.got[0].st.count + c.got[1].st.count, 1 + 1 + 500 + 1);
	/* fn's error stops the calls; the pids' stacks are gone all the same. */
	pids[0] = 2;
	pids[1] = 4;
	assert_int_equal(fl_stackagg__take(a, pids, 2, stop_at_second, &(int){1}), -ENOSPC);
	assert_int_equal(fl_stackagg__nr_stacks(a), 500 - 166 - 4);
	free(c.got);
	fl_stackagg__free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_free),
		cmocka_unit_test(test_time_keeps_eras_apart),
		cmocka_unit_test(test_take),
		cmocka_unit_test(test_take_costs_what_it_takes),
		cmocka_unit_test(test_take_many_shards),
		cmocka_unit_test(test_merge_equal),
		cmocka_unit_test(test_every_field_counts),
		cmocka_unit_test(test_comm),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_large_counts),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_for_each_stops),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
