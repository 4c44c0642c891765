// SPDX-License-Identifier: GPL-2.0-or-later
/* A count per distinct byte-string key: an arena of records and an open-addressing index. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/keycount.h"

/*
 * A record is uint64_t words: [count, key length in bytes, key...], the key
 * padded to a whole word so that the next record stays aligned. An index
 * slot is one uint64_t: the record's offset + 1 in the low KC_OFF_BITS (0:
 * empty slot) and the top bits of the key's hash above them, which rejects
 * nearly every mismatch without touching the arena. A lookup touches one
 * slot and, nearly always, only the record it wants.
 */
#define KC_REC_HDR 2
#define KC_MIN_SLOTS 16
#define KC_MIN_ARENA 128 /* words */
#define KC_OFF_BITS 40
#define KC_OFF_MASK ((UINT64_C(1) << KC_OFF_BITS) - 1)

static inline size_t kc_key_words(size_t len)
{
	return (len + sizeof(uint64_t) - 1) / sizeof(uint64_t);
}

static inline size_t kc_rec_words(const uint64_t *rec)
{
	return KC_REC_HDR + kc_key_words((size_t)rec[1]);
}

void fl_keycount__fini(struct fl_keycount *kc)
{
	free(kc->arena);
	free(kc->slots);
	*kc = (struct fl_keycount){0};
}

/* The slot holding the key, or the empty slot where it would go. */
static uint64_t *kc_find_slot(const struct fl_keycount *kc, const void *key, size_t len,
			      uint64_t hash)
{
	size_t mask = kc->nr_slots - 1;
	size_t i = hash & mask;
	uint64_t tag = hash & ~KC_OFF_MASK;

	for (;; i = (i + 1) & mask) {
		uint64_t *slot = &kc->slots[i];
		const uint64_t *rec;

		if (!*slot)
			return slot;
		if ((*slot & ~KC_OFF_MASK) != tag)
			continue;
		rec = kc->arena + (*slot & KC_OFF_MASK) - 1;
		if (rec[1] == len && (!len || memcmp(rec + KC_REC_HDR, key, len) == 0))
			return slot;
	}
}

/*
 * Makes room in the index for one more key. A bigger index is filled by
 * walking the arena in order (sequential reads) and hashing each key again;
 * on failure the old index stays.
 */
static int kc_reserve_slots(struct fl_keycount *kc)
{
	uint64_t *slots;
	size_t nr, mask, off;

	/* Load factor under 3/4: probes stay short and an empty slot always exists. */
	if (kc->nr_slots && (kc->nr_keys + 1) * 4 <= kc->nr_slots * 3)
		return 0;
	nr = kc->nr_slots ? kc->nr_slots * 2 : KC_MIN_SLOTS;
	if (nr > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(nr, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	mask = nr - 1;
	for (off = 0; off < kc->arena_len; off += kc_rec_words(kc->arena + off)) {
		const uint64_t *rec = kc->arena + off;
		uint64_t hash = fl_hash_bytes(rec + KC_REC_HDR, (size_t)rec[1]);
		size_t j;

		for (j = hash & mask; slots[j]; j = (j + 1) & mask)
			;
		slots[j] = (hash & ~KC_OFF_MASK) | (off + 1);
	}
	free(kc->slots);
	kc->slots = slots;
	kc->nr_slots = nr;
	return 0;
}

static int kc_reserve_arena(struct fl_keycount *kc, size_t words)
{
	uint64_t *arena;
	size_t cap;

	/* Offsets + 1 must fit in a slot's KC_OFF_BITS. */
	if (words >= KC_OFF_MASK - kc->arena_len)
		return -ENOMEM;
	if (words <= kc->arena_cap - kc->arena_len)
		return 0;
	/*
	 * Small at first: a table per process (stackagg) holds one or two
	 * stacks for the many processes that live for a moment.
	 */
	cap = kc->arena_cap ? kc->arena_cap : KC_MIN_ARENA;
	while (cap - kc->arena_len < words) {
		if (cap > SIZE_MAX / 2 / sizeof(*arena))
			return -ENOMEM;
		cap *= 2;
	}
	arena = realloc(kc->arena, cap * sizeof(*arena));
	if (!arena)
		return -ENOMEM;
	kc->arena = arena;
	kc->arena_cap = cap;
	return 0;
}

int fl_keycount__add(struct fl_keycount *kc, const void *key, size_t len, uint64_t count)
{
	uint64_t *slot, *rec, hash;
	size_t words;
	int err;

	if (len > UINT32_MAX)
		return -ENOMEM;
	hash = fl_hash_bytes(key, len);
	if (kc->nr_slots) {
		slot = kc_find_slot(kc, key, len, hash);
		if (*slot) {
			kc->arena[(*slot & KC_OFF_MASK) - 1] += count;
			kc->total += count;
			return 0;
		}
	}

	/* Every allocation before the first change: on failure nothing changed. */
	words = KC_REC_HDR + kc_key_words(len);
	err = kc_reserve_slots(kc);
	if (err)
		return err;
	err = kc_reserve_arena(kc, words);
	if (err)
		return err;

	rec = kc->arena + kc->arena_len;
	rec[0] = count;
	rec[1] = len;
	if (len) {
		rec[words - 1] = 0; /* the padding, if any */
		memcpy(rec + KC_REC_HDR, key, len);
	}
	slot = kc_find_slot(kc, key, len, hash);
	*slot = (hash & ~KC_OFF_MASK) | (kc->arena_len + 1);
	kc->arena_len += words;
	kc->nr_keys++;
	kc->total += count;
	return 0;
}

bool fl_keycount__next(const struct fl_keycount *kc, size_t *pos, const void **key, size_t *len,
		       uint64_t *count)
{
	const uint64_t *rec;

	if (*pos >= kc->arena_len)
		return false;
	rec = kc->arena + *pos;
	*count = rec[0];
	*len = (size_t)rec[1];
	*key = rec + KC_REC_HDR;
	*pos += kc_rec_words(rec);
	return true;
}
