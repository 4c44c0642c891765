// SPDX-License-Identifier: GPL-2.0-or-later
/* The uint32_t -> uint32_t table behind the tracker's processes and the ring sampler's tids. */
#include <errno.h>
#include <stdlib.h>

#include "common/hash.h"
#include "common/u32map.h"

#define U32MAP_MIN_CAP 64

static size_t u32map_home(uint32_t key, size_t cap)
{
	return fl_hash_u64(key) & (cap - 1);
}

/* The slot of key, or the empty slot where it would go; cap is not 0. */
static struct fl_u32map_ent *u32map_slot(struct fl_u32map_ent *ents, size_t cap, uint32_t key)
{
	size_t i = u32map_home(key, cap);

	while (ents[i].key && ents[i].key != key)
		i = (i + 1) & (cap - 1);
	return &ents[i];
}

bool fl_u32map__get(const struct fl_u32map *m, uint32_t key, uint32_t *val)
{
	const struct fl_u32map_ent *e;

	if (!m->cap || !key)
		return false;
	e = u32map_slot(m->ents, m->cap, key);
	if (!e->key)
		return false;
	if (val)
		*val = e->val;
	return true;
}

static int u32map_grow(struct fl_u32map *m)
{
	size_t cap = m->cap ? m->cap * 2 : U32MAP_MIN_CAP;
	struct fl_u32map_ent *ents;

	if (cap > SIZE_MAX / sizeof(*ents))
		return -ENOMEM;
	ents = calloc(cap, sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->ents[i].key)
			*u32map_slot(ents, cap, m->ents[i].key) = m->ents[i];
	free(m->ents);
	m->ents = ents;
	m->cap = cap;
	return 0;
}

int fl_u32map__put(struct fl_u32map *m, uint32_t key, uint32_t val)
{
	struct fl_u32map_ent *e;

	if (!key)
		return -EINVAL;
	/* Room first, so that a failure changes nothing (an update may grow the table early). */
	if ((m->nr + 1) * 2 > m->cap) {
		int err = u32map_grow(m);

		if (err)
			return err;
	}
	e = u32map_slot(m->ents, m->cap, key);
	if (!e->key) {
		e->key = key;
		m->nr++;
	}
	e->val = val;
	return 0;
}

/*
 * Linear probing without tombstones: after the hole, every entry of the
 * run that could live in it (its home is not between the hole and
 * itself) moves back, so that no lookup stops early at the hole.
 */
bool fl_u32map__del(struct fl_u32map *m, uint32_t key)
{
	struct fl_u32map_ent *e;
	size_t hole, i, mask;

	if (!m->cap || !key)
		return false;
	e = u32map_slot(m->ents, m->cap, key);
	if (!e->key)
		return false;
	mask = m->cap - 1;
	hole = (size_t)(e - m->ents);
	for (i = (hole + 1) & mask; m->ents[i].key; i = (i + 1) & mask) {
		size_t home = u32map_home(m->ents[i].key, m->cap);

		/* Stays when its home lies cyclically in (hole, i]. */
		if (((i - home) & mask) < ((i - hole) & mask))
			continue;
		m->ents[hole] = m->ents[i];
		hole = i;
	}
	m->ents[hole] = (struct fl_u32map_ent){0};
	m->nr--;
	return true;
}

void fl_u32map__fini(struct fl_u32map *m)
{
	free(m->ents);
	*m = (struct fl_u32map){0};
}
