/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A count per distinct key, the core of the profile and of stackagg. Private to lib/. */
#ifndef FLAMED_KEYCOUNT_H
#define FLAMED_KEYCOUNT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Keys are byte strings (a stack of frame ids, a raw stack's words) copied
 * back to back into one arena, so there is no allocation per key and a key
 * is one contiguous run to hash and compare. A zeroed struct is an empty
 * table; fl_keycount__fini() frees it. The fields are for reading.
 */
struct fl_keycount {
	uint64_t *arena;	     /* records in order of first appearance */
	size_t arena_len, arena_cap; /* in words */
	uint64_t *slots;	     /* power-of-two sized, linear probing */
	size_t nr_slots;
	size_t nr_keys;
	uint64_t total; /* sum of all counts added */
};

void fl_keycount__fini(struct fl_keycount *kc);

/*
 * Adds count to the key of len bytes (copied; at most UINT32_MAX bytes).
 * Returns 0 or -ENOMEM, in which case nothing changed.
 */
int fl_keycount__add(struct fl_keycount *kc, const void *key, size_t len, uint64_t count);

/*
 * Walks the keys in order of first appearance: start with *pos = 0; each
 * call fills *key (8-byte aligned, valid until the next add), *len and
 * *count, and returns false past the last key.
 */
bool fl_keycount__next(const struct fl_keycount *kc, size_t *pos, const void **key, size_t *len,
		       uint64_t *count);

#endif
