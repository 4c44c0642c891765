// SPDX-License-Identifier: GPL-2.0-or-later
/* Counting raw stacks in user space: a hash of (pid, tid, comm, errors, era, ips) to counts. */
#include <errno.h>
#include <stdbool.h>
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
 *   [5] time_first, [6] time: the starts of the eras of its first and last sample
 *   [7] cgroup id
 *   [8] nr_pyips
 *   [9..] kips, then uips, then pyips
 */
#define SA_KEY_HDR 9
#define SA_KEY_MAX_WORDS (SA_KEY_HDR + 3 * FL_MAX_STACK_DEPTH)

/*
 * The stacks of one process. Each process has a table of its own, so that
 * taking the stacks of the processes that exited costs what their stacks
 * are, never what the processes still running hold: a flush runs every
 * second on a machine starting hundreds of processes a second, beside
 * long-lived ones whose distinct stacks grow for hours.
 */
struct sa_shard {
	uint32_t pid;
	struct fl_keycount stacks;
};

struct fl_stackagg {
	struct fl_u32map by_pid; /* pid + 1 -> index in shards */
	struct sa_shard *shards;
	size_t nr_shards, cap_shards;
	size_t nr_stacks;
	uint64_t total;
	uint64_t examined;		/* stacks take() has looked at */
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
	for (size_t i = 0; i < a->nr_shards; i++)
		fl_keycount__fini(&a->shards[i].stacks);
	free(a->shards);
	fl_u32map__fini(&a->by_pid);
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
	k[5] = st->time_first;
	k[6] = st->time;
	k[7] = st->cgroup_id;
	k[8] = np;
	if (nk)
		memcpy(&k[SA_KEY_HDR], st->kips, nk * sizeof(*k));
	if (nu)
		memcpy(&k[SA_KEY_HDR + nk], st->uips, nu * sizeof(*k));
	if (np)
		memcpy(&k[SA_KEY_HDR + nk + nu], st->pyips, np * sizeof(*k));
	return SA_KEY_HDR + nk + nu + np;
}

/* The shard of pid, made if missing and make; NULL if missing (or out of memory). */
static struct sa_shard *sa_shard(struct fl_stackagg *a, uint32_t pid, bool make)
{
	uint32_t at;

	if (pid == UINT32_MAX)
		return NULL;
	if (fl_u32map__get(&a->by_pid, pid + 1, &at))
		return &a->shards[at];
	if (!make)
		return NULL;
	if (a->nr_shards == a->cap_shards) {
		size_t ncap = a->cap_shards ? a->cap_shards * 2 : 64;
		struct sa_shard *ns = realloc(a->shards, ncap * sizeof(*ns));

		if (!ns)
			return NULL;
		a->shards = ns;
		a->cap_shards = ncap;
	}
	if (fl_u32map__put(&a->by_pid, pid + 1, (uint32_t)a->nr_shards))
		return NULL;
	a->shards[a->nr_shards] = (struct sa_shard){.pid = pid};
	return &a->shards[a->nr_shards++];
}

/* Frees the shard at index at; the last one takes its place. */
static void sa_drop_shard(struct fl_stackagg *a, size_t at)
{
	struct sa_shard *sh = &a->shards[at];

	a->nr_stacks -= sh->stacks.nr_keys;
	a->total -= sh->stacks.total;
	fl_keycount__fini(&sh->stacks);
	fl_u32map__del(&a->by_pid, sh->pid + 1);
	if (at != --a->nr_shards) {
		*sh = a->shards[a->nr_shards];
		/* Just after a delete: the update finds room without growing. */
		fl_u32map__put(&a->by_pid, sh->pid + 1, (uint32_t)at);
	}
}

int fl_stackagg__add(struct fl_stackagg *a, const struct fl_raw_stack *st, uint64_t count)
{
	struct sa_shard *sh;
	size_t words, keys;
	int err;

	if (!a || !st || (st->nr_kips && !st->kips) || (st->nr_uips && !st->uips) ||
	    (st->nr_pyips && !st->pyips) || st->pid == UINT32_MAX)
		return -EINVAL;
	/* Nothing to add: no entry with a zero count ever reaches for_each. */
	if (!count)
		return 0;
	sh = sa_shard(a, st->pid, true);
	if (!sh)
		return -ENOMEM;
	words = sa_build_key(a, st);
	keys = sh->stacks.nr_keys;
	err = fl_keycount__add(&sh->stacks, a->key, words * sizeof(*a->key), count);
	if (err) {
		/* A shard made for this stack goes again: nothing changed. */
		if (!sh->stacks.nr_keys)
			sa_drop_shard(a, (size_t)(sh - a->shards));
		return err;
	}
	a->nr_stacks += sh->stacks.nr_keys - keys;
	a->total += count;
	return 0;
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
		.nr_pyips = key[8],
		.kerr = (int)(uint32_t)(key[3] >> 32),
		.uerr = (int)(uint32_t)key[3],
		.count = count,
		.time_first = key[5],
		.time = key[6],
		.cgroup_id = key[7],
	};
}

/* Calls fn for every stack of the shard. */
static int sa_shard_each(const struct sa_shard *sh, fl_raw_stack_fn fn, void *ctx, uint64_t *seen)
{
	const void *k;
	uint64_t count;
	size_t pos = 0, len;

	while (fl_keycount__next(&sh->stacks, &pos, &k, &len, &count)) {
		char comm[FL_TASK_COMM_LEN];
		struct fl_raw_stack st;
		int ret;

		if (seen)
			++*seen;
		sa_unpack(k, count, comm, &st);
		ret = fn(&st, ctx);
		if (ret)
			return ret;
	}
	return 0;
}

int fl_stackagg__take(struct fl_stackagg *a, const uint32_t *pids, size_t n, fl_raw_stack_fn fn,
		      void *ctx)
{
	int ret = 0;

	if (!a || !fn || (n && !pids))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		struct sa_shard *sh = sa_shard(a, pids[i], false);

		if (!sh)
			continue;
		if (!ret)
			ret = sa_shard_each(sh, fn, ctx, &a->examined);
		sa_drop_shard(a, (size_t)(sh - a->shards));
	}
	return ret;
}

int fl_stackagg__for_each(const struct fl_stackagg *a, fl_raw_stack_fn fn, void *ctx)
{
	if (!a || !fn)
		return -EINVAL;
	for (size_t i = 0; i < a->nr_shards; i++) {
		int ret = sa_shard_each(&a->shards[i], fn, ctx, NULL);

		if (ret)
			return ret;
	}
	return 0;
}

size_t fl_stackagg__nr_stacks(const struct fl_stackagg *a)
{
	return a ? a->nr_stacks : 0;
}

uint64_t fl_stackagg__total(const struct fl_stackagg *a)
{
	return a ? a->total : 0;
}

uint64_t fl_stackagg__examined(const struct fl_stackagg *a)
{
	return a ? a->examined : 0;
}
