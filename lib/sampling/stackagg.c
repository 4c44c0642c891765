// SPDX-License-Identifier: GPL-2.0-or-later
/* Counting raw stacks in user space: a hash of (pid, tid, comm, errors, era, ips) to counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/profile_abi.h"
#include "flamed/sampling/stackagg.h"
#include "common/keycount.h"
#include "common/u32map.h"

/*
 * A distinct stack is one key of uint64_t words, exactly as compared and
 * hashed:
 *   [0] pid << 32 | tid
 *   [1..2] comm, up to 15 bytes, NUL-padded to 16
 *   [3] (u32)kerr << 32 | (u32)uerr
 *   [4] nr_kips << 32 | nr_uips
 *   [5] time: the start of the stack's era
 *   [6] cgroup id
 *   [7] nr_pyips
 *   [8..] kips, then uips, then pyips
 */
#define SA_KEY_HDR 8
#define SA_KEY_MAX_WORDS (SA_KEY_HDR + 3 * FL_MAX_STACK_DEPTH)

struct fl_stackagg {
	struct fl_keycount stacks;
	uint64_t key[SA_KEY_MAX_WORDS]; /* the key being added, built in place */
};

_Static_assert(FL_TASK_COMM_LEN == 2 * sizeof(uint64_t), "comm is two key words");

int fl_stackagg__new(struct fl_stackagg **ret)
{
	struct fl_stackagg *a;

	if (!ret)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	*ret = a;
	return 0;
}

void fl_stackagg__free(struct fl_stackagg *a)
{
	if (!a)
		return;
	fl_keycount__fini(&a->stacks);
	free(a);
}

/* Writes the key of st to a->key and returns its length in words. */
static size_t sa_build_key(struct fl_stackagg *a, const struct fl_raw_stack *st)
{
	size_t nk = st->nr_kips < FL_MAX_STACK_DEPTH ? st->nr_kips : FL_MAX_STACK_DEPTH;
	size_t nu = st->nr_uips < FL_MAX_STACK_DEPTH ? st->nr_uips : FL_MAX_STACK_DEPTH;
	size_t np = st->nr_pyips < FL_MAX_STACK_DEPTH ? st->nr_pyips : FL_MAX_STACK_DEPTH;
	uint64_t *k = a->key;
	char comm[FL_TASK_COMM_LEN] = {0};

	if (st->comm)
		memcpy(comm, st->comm, strnlen(st->comm, FL_TASK_COMM_LEN - 1));
	k[0] = (uint64_t)st->pid << 32 | st->tid;
	memcpy(&k[1], comm, sizeof(comm));
	k[3] = (uint64_t)(uint32_t)st->kerr << 32 | (uint32_t)st->uerr;
	k[4] = (uint64_t)nk << 32 | nu;
	k[5] = st->time;
	k[6] = st->cgroup_id;
	k[7] = np;
	if (nk)
		memcpy(&k[SA_KEY_HDR], st->kips, nk * sizeof(*k));
	if (nu)
		memcpy(&k[SA_KEY_HDR + nk], st->uips, nu * sizeof(*k));
	if (np)
		memcpy(&k[SA_KEY_HDR + nk + nu], st->pyips, np * sizeof(*k));
	return SA_KEY_HDR + nk + nu + np;
}

int fl_stackagg__add(struct fl_stackagg *a, const struct fl_raw_stack *st, uint64_t count)
{
	size_t words;

	if (!a || !st || (st->nr_kips && !st->kips) || (st->nr_uips && !st->uips) ||
	    (st->nr_pyips && !st->pyips))
		return -EINVAL;
	/* Nothing to add: no entry with a zero count ever reaches for_each. */
	if (!count)
		return 0;
	words = sa_build_key(a, st);
	return fl_keycount__add(&a->stacks, a->key, words * sizeof(*a->key), count);
}

static void sa_unpack(const uint64_t *key, uint64_t count, char comm[FL_TASK_COMM_LEN],
		      struct fl_raw_stack *st)
{
	size_t nk = key[4] >> 32, nu = (uint32_t)key[4];

	memcpy(comm, &key[1], FL_TASK_COMM_LEN);
	comm[FL_TASK_COMM_LEN - 1] = '\0';
	*st = (struct fl_raw_stack){
		.pid = (uint32_t)(key[0] >> 32),
		.tid = (uint32_t)key[0],
		.comm = comm,
		.kips = &key[SA_KEY_HDR],
		.nr_kips = nk,
		.uips = &key[SA_KEY_HDR + nk],
		.nr_uips = nu,
		.pyips = &key[SA_KEY_HDR + nk + nu],
		.nr_pyips = key[7],
		.kerr = (int)(uint32_t)(key[3] >> 32),
		.uerr = (int)(uint32_t)key[3],
		.count = count,
		.time_first = key[5],
		.time = key[5],
		.cgroup_id = key[6],
	};
}

int fl_stackagg__take(struct fl_stackagg *a, const uint32_t *pids, size_t n, fl_raw_stack_fn fn,
		      void *ctx)
{
	struct fl_keycount rest = {0}, taken;
	const void *k;
	uint64_t count;
	size_t pos = 0, len;
	int ret = 0;

	if (!a || !fn || (n && !pids))
		return -EINVAL;
	/* The table without them first: a failure there changes nothing. */
	while (fl_keycount__next(&a->stacks, &pos, &k, &len, &count)) {
		if (fl_u32_sorted_has(pids, n, (uint32_t)(((const uint64_t *)k)[0] >> 32)))
			continue;
		ret = fl_keycount__add(&rest, k, len, count);
		if (ret) {
			fl_keycount__fini(&rest);
			return ret;
		}
	}
	taken = a->stacks;
	a->stacks = rest;
	pos = 0;
	while (!ret && fl_keycount__next(&taken, &pos, &k, &len, &count)) {
		char comm[FL_TASK_COMM_LEN];
		struct fl_raw_stack st;

		if (!fl_u32_sorted_has(pids, n, (uint32_t)(((const uint64_t *)k)[0] >> 32)))
			continue;
		sa_unpack(k, count, comm, &st);
		ret = fn(&st, ctx);
	}
	fl_keycount__fini(&taken);
	return ret;
}

int fl_stackagg__for_each(const struct fl_stackagg *a, fl_raw_stack_fn fn, void *ctx)
{
	const void *k;
	uint64_t count;
	size_t pos = 0, len;

	if (!a || !fn)
		return -EINVAL;
	while (fl_keycount__next(&a->stacks, &pos, &k, &len, &count)) {
		char comm[FL_TASK_COMM_LEN];
		struct fl_raw_stack st;
		int ret;

		sa_unpack(k, count, comm, &st);
		ret = fn(&st, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

size_t fl_stackagg__nr_stacks(const struct fl_stackagg *a)
{
	return a ? a->stacks.nr_keys : 0;
}

uint64_t fl_stackagg__total(const struct fl_stackagg *a)
{
	return a ? a->stacks.total : 0;
}
