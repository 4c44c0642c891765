// SPDX-License-Identifier: GPL-2.0-or-later
/* The interning string pool: chunked arena for the bytes, open-addressing index by hash. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/strpool.h"
#include "common/hash.h"

/*
 * Strings are copied into arena chunks that are never reallocated, so a
 * pointer handed out stays valid until the pool is freed. A string too big
 * to share a chunk gets a chunk of its own.
 */
#define SP_CHUNK_SIZE (64 * 1024)
#define SP_BIG_STRING (SP_CHUNK_SIZE / 4)
#define SP_MIN_SLOTS 64
/* Slots store id + 1 (0 is empty), so the largest id is UINT32_MAX - 2. */
#define SP_MAX_IDS (UINT32_MAX - 1)

struct sp_entry {
	const char *s;
	uint32_t len;
};

/* Keeping the hash beside the id lets a probe skip most entries without touching them. */
struct sp_slot {
	uint32_t id1; /* id + 1, 0 when empty */
	uint32_t hash;
};

struct fl_strpool {
	struct sp_entry *entries; /* by id */
	size_t nr_entries, cap_entries;

	struct sp_slot *slots; /* power-of-two sized, linear probing */
	size_t nr_slots;

	char **chunks; /* every block allocated, for free */
	size_t nr_chunks, cap_chunks;
	char *cur; /* free space in the current shared chunk */
	size_t cur_left;
};

int fl_strpool__new(struct fl_strpool **ret)
{
	struct fl_strpool *p;

	if (!ret)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	*ret = p;
	return 0;
}

void fl_strpool__free(struct fl_strpool *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nr_chunks; i++)
		free(p->chunks[i]);
	free(p->chunks);
	free(p->slots);
	free(p->entries);
	free(p);
}

static struct sp_slot *sp_find_slot(const struct fl_strpool *p, const char *s, size_t len,
				    uint32_t hash)
{
	size_t mask = p->nr_slots - 1;
	size_t i = hash & mask;

	for (;; i = (i + 1) & mask) {
		struct sp_slot *slot = &p->slots[i];
		const struct sp_entry *e;

		if (!slot->id1)
			return slot;
		if (slot->hash != hash)
			continue;
		e = &p->entries[slot->id1 - 1];
		if (e->len == len && (!len || memcmp(e->s, s, len) == 0))
			return slot;
	}
}

/* Makes room for one more id in the index; on failure the old index is kept. */
static int sp_reserve_slots(struct fl_strpool *p)
{
	struct sp_slot *slots;
	size_t nr, i;

	/* Keep the load factor under 3/4: probes stay short and an empty slot always exists. */
	if (p->nr_slots && (p->nr_entries + 1) * 4 <= p->nr_slots * 3)
		return 0;
	nr = p->nr_slots ? p->nr_slots * 2 : SP_MIN_SLOTS;
	if (nr > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(nr, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < p->nr_slots; i++) {
		const struct sp_slot *old = &p->slots[i];
		size_t j;

		if (!old->id1)
			continue;
		for (j = old->hash & (nr - 1); slots[j].id1; j = (j + 1) & (nr - 1))
			;
		slots[j] = *old;
	}
	free(p->slots);
	p->slots = slots;
	p->nr_slots = nr;
	return 0;
}

static int sp_reserve_entry(struct fl_strpool *p)
{
	struct sp_entry *entries;
	size_t cap;

	if (p->nr_entries < p->cap_entries)
		return 0;
	cap = p->cap_entries ? p->cap_entries * 2 : 256;
	if (cap > SIZE_MAX / sizeof(*entries))
		return -ENOMEM;
	entries = realloc(p->entries, cap * sizeof(*entries));
	if (!entries)
		return -ENOMEM;
	p->entries = entries;
	p->cap_entries = cap;
	return 0;
}

/* Records a new block in the chunk list; the block is the caller's again on failure. */
static int sp_push_chunk(struct fl_strpool *p, char *chunk)
{
	if (p->nr_chunks == p->cap_chunks) {
		size_t cap = p->cap_chunks ? p->cap_chunks * 2 : 16;
		char **chunks = realloc(p->chunks, cap * sizeof(*chunks));

		if (!chunks)
			return -ENOMEM;
		p->chunks = chunks;
		p->cap_chunks = cap;
	}
	p->chunks[p->nr_chunks++] = chunk;
	return 0;
}

/* Room for size bytes that will never move; NULL when out of memory. */
static char *sp_alloc(struct fl_strpool *p, size_t size)
{
	_cleanup_free_ char *chunk = NULL;
	char *mem;

	if (size > SP_BIG_STRING) {
		chunk = malloc(size);
		if (!chunk || sp_push_chunk(p, chunk) < 0)
			return NULL;
		return TAKE_PTR(chunk);
	}
	if (size > p->cur_left) {
		/* The tail of the old chunk is wasted: at most a quarter of a chunk. */
		chunk = malloc(SP_CHUNK_SIZE);
		if (!chunk || sp_push_chunk(p, chunk) < 0)
			return NULL;
		p->cur = TAKE_PTR(chunk);
		p->cur_left = SP_CHUNK_SIZE;
	}
	mem = p->cur;
	p->cur += size;
	p->cur_left -= size;
	return mem;
}

int fl_strpool__intern(struct fl_strpool *p, const char *s, size_t len, uint32_t *id)
{
	struct sp_slot *slot;
	uint32_t hash;
	char *mem;
	int err;

	if (!p || !id || (!s && len))
		return -EINVAL;
	if (len >= UINT32_MAX)
		return -ENOMEM;
	hash = (uint32_t)fl_hash_bytes(s, len);
	if (p->nr_slots) {
		slot = sp_find_slot(p, s, len, hash);
		if (slot->id1) {
			*id = slot->id1 - 1;
			return 0;
		}
	}
	if (p->nr_entries >= SP_MAX_IDS)
		return -ENOMEM;

	/* Every allocation before the first change, so a failure leaves the pool as it was. */
	err = sp_reserve_entry(p);
	if (err)
		return err;
	err = sp_reserve_slots(p);
	if (err)
		return err;
	mem = sp_alloc(p, len + 1);
	if (!mem)
		return -ENOMEM;
	if (len)
		memcpy(mem, s, len);
	mem[len] = '\0';

	slot = sp_find_slot(p, s, len, hash);
	slot->id1 = (uint32_t)p->nr_entries + 1;
	slot->hash = hash;
	p->entries[p->nr_entries].s = mem;
	p->entries[p->nr_entries].len = (uint32_t)len;
	*id = (uint32_t)p->nr_entries++;
	return 0;
}

int fl_strpool__find(const struct fl_strpool *p, const char *s, size_t len, uint32_t *id)
{
	const struct sp_slot *slot;

	if (!p || !id || (!s && len) || !p->nr_slots || len >= UINT32_MAX)
		return -ENOENT;
	slot = sp_find_slot(p, s, len, (uint32_t)fl_hash_bytes(s, len));
	if (!slot->id1)
		return -ENOENT;
	*id = slot->id1 - 1;
	return 0;
}

const char *fl_strpool__str(const struct fl_strpool *p, uint32_t id)
{
	if (!p || id >= p->nr_entries)
		return NULL;
	return p->entries[id].s;
}

size_t fl_strpool__len(const struct fl_strpool *p, uint32_t id)
{
	if (!p || id >= p->nr_entries)
		return 0;
	return p->entries[id].len;
}

size_t fl_strpool__count(const struct fl_strpool *p)
{
	return p ? p->nr_entries : 0;
}
