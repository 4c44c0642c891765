// SPDX-License-Identifier: GPL-2.0-or-later
/* Counting raw stacks in user space: a hash of (pid, tid, comm, errors, ips) to counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/profile_abi.h"
#include "flamed/stackagg.h"
#include "hash.h"

/*
 * Each distinct stack is one record of uint64_t words in an arena: its count,
 * then its key (from word 1) exactly as compared and hashed:
 *   [0] count
 *   [1] pid << 32 | tid
 *   [2..3] comm, up to 15 bytes, NUL-padded to 16
 *   [4] (u32)kerr << 32 | (u32)uerr
 *   [5] nr_kips << 32 | nr_uips
 *   [6..] kips, then uips
 * An index slot is one uint64_t: the record's offset + 1 in the low
 * SA_OFF_BITS (0: empty) and the top bits of the key's hash above them, so a
 * lookup touches one slot and, nearly always, only the record it wants.
 */
#define SA_KEY_HDR 5
#define SA_KEY_MAX_WORDS (SA_KEY_HDR + 2 * FL_MAX_STACK_DEPTH)
#define SA_MIN_SLOTS 64
#define SA_OFF_BITS 40
#define SA_OFF_MASK ((UINT64_C(1) << SA_OFF_BITS) - 1)

struct fl_stackagg {
	uint64_t *arena; /* records in order of first appearance */
	size_t arena_len, arena_cap;
	size_t nr_stacks;

	uint64_t *slots; /* power-of-two sized, linear probing */
	size_t nr_slots;

	uint64_t total;
	uint64_t key[SA_KEY_MAX_WORDS]; /* the key being added, built in place */
};

_Static_assert(FL_TASK_COMM_LEN == 2 * sizeof(uint64_t), "comm is two key words");

static inline uint64_t sa_hash(const uint64_t *w, size_t n)
{
	return fl_hash_bytes(w, n * sizeof(*w));
}

/* Length in words of the key starting at k. */
static inline size_t sa_key_words(const uint64_t *k)
{
	return SA_KEY_HDR + (k[4] >> 32) + (uint32_t)k[4];
}

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
	free(a->arena);
	free(a->slots);
	free(a);
}

/* Writes the key of st to a->key and returns its length in words. */
static size_t sa_build_key(struct fl_stackagg *a, const struct fl_raw_stack *st)
{
	size_t nk = st->nr_kips < FL_MAX_STACK_DEPTH ? st->nr_kips : FL_MAX_STACK_DEPTH;
	size_t nu = st->nr_uips < FL_MAX_STACK_DEPTH ? st->nr_uips : FL_MAX_STACK_DEPTH;
	uint64_t *k = a->key;
	char comm[FL_TASK_COMM_LEN] = { 0 };

	if (st->comm)
		memcpy(comm, st->comm, strnlen(st->comm, FL_TASK_COMM_LEN - 1));
	k[0] = (uint64_t)st->pid << 32 | st->tid;
	memcpy(&k[1], comm, sizeof(comm));
	k[3] = (uint64_t)(uint32_t)st->kerr << 32 | (uint32_t)st->uerr;
	k[4] = (uint64_t)nk << 32 | nu;
	if (nk)
		memcpy(&k[SA_KEY_HDR], st->kips, nk * sizeof(*k));
	if (nu)
		memcpy(&k[SA_KEY_HDR + nk], st->uips, nu * sizeof(*k));
	return SA_KEY_HDR + nk + nu;
}

/* The slot holding a->key (of words words), or the empty slot where it would go. */
static uint64_t *sa_find_slot(const struct fl_stackagg *a, size_t words, uint64_t hash)
{
	size_t mask = a->nr_slots - 1;
	size_t i = hash & mask;
	uint64_t tag = hash & ~SA_OFF_MASK;

	for (;; i = (i + 1) & mask) {
		uint64_t *slot = &a->slots[i];
		const uint64_t *key;

		if (!*slot)
			return slot;
		if ((*slot & ~SA_OFF_MASK) != tag)
			continue;
		key = a->arena + (*slot & SA_OFF_MASK); /* offset + 1: past the count */
		if (sa_key_words(key) == words && memcmp(key, a->key, words * sizeof(*key)) == 0)
			return slot;
	}
}

/*
 * Makes room in the index for one more stack. A bigger index is filled by
 * walking the arena in order and hashing each key again; on failure the old
 * index stays.
 */
static int sa_reserve_slots(struct fl_stackagg *a)
{
	uint64_t *slots;
	size_t nr, mask, off;

	/* Load factor under 3/4: probes stay short and an empty slot always exists. */
	if (a->nr_slots && (a->nr_stacks + 1) * 4 <= a->nr_slots * 3)
		return 0;
	nr = a->nr_slots ? a->nr_slots * 2 : SA_MIN_SLOTS;
	if (nr > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(nr, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	mask = nr - 1;
	for (off = 0; off < a->arena_len; off += 1 + sa_key_words(a->arena + off + 1)) {
		const uint64_t *key = a->arena + off + 1;
		uint64_t hash = sa_hash(key, sa_key_words(key));
		size_t j;

		for (j = hash & mask; slots[j]; j = (j + 1) & mask)
			;
		slots[j] = (hash & ~SA_OFF_MASK) | (off + 1);
	}
	free(a->slots);
	a->slots = slots;
	a->nr_slots = nr;
	return 0;
}

static int sa_reserve_arena(struct fl_stackagg *a, size_t words)
{
	uint64_t *arena;
	size_t cap;

	/* Offsets + 1 must fit in a slot's SA_OFF_BITS. */
	if (words >= SA_OFF_MASK - a->arena_len)
		return -ENOMEM;
	if (words <= a->arena_cap - a->arena_len)
		return 0;
	cap = a->arena_cap ? a->arena_cap : 4096;
	while (cap - a->arena_len < words) {
		if (cap > SIZE_MAX / 2 / sizeof(*arena))
			return -ENOMEM;
		cap *= 2;
	}
	arena = realloc(a->arena, cap * sizeof(*arena));
	if (!arena)
		return -ENOMEM;
	a->arena = arena;
	a->arena_cap = cap;
	return 0;
}

int fl_stackagg__add(struct fl_stackagg *a, const struct fl_raw_stack *st, uint64_t count)
{
	uint64_t *slot, *rec, hash;
	size_t words;
	int err;

	if (!a || !st || (st->nr_kips && !st->kips) || (st->nr_uips && !st->uips))
		return -EINVAL;
	/* Nothing to add: no entry with a zero count ever reaches for_each. */
	if (!count)
		return 0;
	words = sa_build_key(a, st);
	hash = sa_hash(a->key, words);
	if (a->nr_slots) {
		slot = sa_find_slot(a, words, hash);
		if (*slot) {
			a->arena[(*slot & SA_OFF_MASK) - 1] += count;
			a->total += count;
			return 0;
		}
	}

	/* Every allocation before the first change: on failure nothing changed. */
	err = sa_reserve_slots(a);
	if (err)
		return err;
	err = sa_reserve_arena(a, 1 + words);
	if (err)
		return err;

	slot = sa_find_slot(a, words, hash);
	rec = a->arena + a->arena_len;
	rec[0] = count;
	memcpy(rec + 1, a->key, words * sizeof(*a->key));
	*slot = (hash & ~SA_OFF_MASK) | (a->arena_len + 1);
	a->arena_len += 1 + words;
	a->nr_stacks++;
	a->total += count;
	return 0;
}

int fl_stackagg__for_each(const struct fl_stackagg *a, fl_raw_stack_fn fn, void *ctx)
{
	size_t off;

	if (!a || !fn)
		return -EINVAL;
	for (off = 0; off < a->arena_len; off += 1 + sa_key_words(a->arena + off + 1)) {
		const uint64_t *rec = a->arena + off;
		const uint64_t *key = rec + 1;
		size_t nk = key[4] >> 32;
		char comm[FL_TASK_COMM_LEN];
		struct fl_raw_stack st;
		int ret;

		memcpy(comm, &key[1], sizeof(comm));
		comm[FL_TASK_COMM_LEN - 1] = '\0';
		st = (struct fl_raw_stack){
			.pid = (uint32_t)(key[0] >> 32),
			.tid = (uint32_t)key[0],
			.comm = comm,
			.kips = &key[SA_KEY_HDR],
			.nr_kips = nk,
			.uips = &key[SA_KEY_HDR + nk],
			.nr_uips = (uint32_t)key[4],
			.kerr = (int)(uint32_t)(key[3] >> 32),
			.uerr = (int)(uint32_t)key[3],
			.count = rec[0],
		};
		ret = fn(&st, ctx);
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
