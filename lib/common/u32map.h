/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A small uint32_t -> uint32_t hash table for pids and tids. Private to lib/. */
#ifndef FLAMED_U32MAP_H
#define FLAMED_U32MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Open addressing with linear probing, at most half full. Key 0 marks an
 * empty slot, so it cannot be stored: no pid or tid kept here is 0. A
 * zeroed struct is an empty map; fl_u32map__fini() frees it.
 */
struct fl_u32map_ent {
	uint32_t key, val;
};

struct fl_u32map {
	struct fl_u32map_ent *ents;
	size_t cap, nr; /* cap: 0 or a power of two, at least twice nr */
};

/* Whether key is in the map; its value goes to *val unless val is NULL. */
bool fl_u32map__get(const struct fl_u32map *m, uint32_t key, uint32_t *val);
/* Sets the value of key, adding it if new. Returns 0, -EINVAL (key 0) or -ENOMEM (unchanged). */
int fl_u32map__put(struct fl_u32map *m, uint32_t key, uint32_t val);
/* Whether key is in the ascending array keys[0..n). */
static inline bool fl_u32_sorted_has(const uint32_t *keys, size_t n, uint32_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (keys[mid] == key)
			return true;
		if (keys[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Removes key; returns whether it was there. */
bool fl_u32map__del(struct fl_u32map *m, uint32_t key);
void fl_u32map__fini(struct fl_u32map *m);

#endif
