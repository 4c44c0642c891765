// SPDX-License-Identifier: GPL-2.0-or-later
/* The profile: sanitized frame names in a string pool and a hash of distinct stacks to counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/profile.h"
#include "flamed/strpool.h"
#include "hash.h"

#define PF_MIN_SLOTS 64
#define PF_EMPTY_NAME "[empty]"

/*
 * Stacks live back to back in one uint32_t arena as records
 *   [n, count low 32 bits, count high 32 bits, frame ids...]
 * so a stack is one contiguous run to hash, compare and count, with no
 * allocation per stack. An index slot is one uint64_t: the record's offset
 * + 1 in the low PF_OFF_BITS (0: empty slot) and the top bits of the
 * stack's hash above them, which rejects nearly every mismatch without
 * touching the arena. A lookup touches one slot and one record.
 */
#define PF_REC_HDR 3
#define PF_OFF_BITS 40
#define PF_OFF_MASK ((UINT64_C(1) << PF_OFF_BITS) - 1)

struct fl_profile {
	struct fl_strpool *names;
	uint64_t nr_sanitized;
	char *scratch; /* where a name is rewritten when it needs to be */
	size_t scratch_cap;

	uint32_t *arena; /* records in order of first appearance */
	size_t arena_len, arena_cap;
	size_t nr_stacks;

	uint64_t *slots; /* power-of-two sized, linear probing */
	size_t nr_slots;

	uint64_t total;
};

static inline uint64_t pf_hash(const uint32_t *frames, size_t n)
{
	return fl_hash_bytes(frames, n * sizeof(*frames));
}

int fl_profile__new(struct fl_profile **ret)
{
	struct fl_profile *p;
	int err;

	if (!ret)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	err = fl_strpool__new(&p->names);
	if (err) {
		free(p);
		return err;
	}
	*ret = p;
	return 0;
}

void fl_profile__free(struct fl_profile *p)
{
	if (!p)
		return;
	fl_strpool__free(p->names);
	free(p->scratch);
	free(p->arena);
	free(p->slots);
	free(p);
}

/* A byte that could end a frame or a line in some writer's output. */
static inline bool pf_is_unsafe(unsigned char c)
{
	return c == ';' || c < 0x20 || c == 0x7f;
}

int fl_profile__intern(struct fl_profile *p, const char *name, size_t len, uint32_t *id)
{
	size_t i;
	int err;

	if (!p || !id || (!name && len))
		return -EINVAL;
	if (!len) {
		err = fl_strpool__intern(p->names, PF_EMPTY_NAME, strlen(PF_EMPTY_NAME), id);
		if (!err)
			p->nr_sanitized++;
		return err;
	}
	for (i = 0; i < len; i++)
		if (pf_is_unsafe((unsigned char)name[i]))
			break;
	if (i == len)
		return fl_strpool__intern(p->names, name, len, id);

	if (len > p->scratch_cap) {
		char *scratch = realloc(p->scratch, len);

		if (!scratch)
			return -ENOMEM;
		p->scratch = scratch;
		p->scratch_cap = len;
	}
	memcpy(p->scratch, name, len);
	for (; i < len; i++) {
		unsigned char c = (unsigned char)p->scratch[i];

		if (c == ';')
			p->scratch[i] = ':';
		else if (pf_is_unsafe(c))
			p->scratch[i] = '?';
	}
	err = fl_strpool__intern(p->names, p->scratch, len, id);
	if (!err)
		p->nr_sanitized++;
	return err;
}

const char *fl_profile__name(const struct fl_profile *p, uint32_t id)
{
	return p ? fl_strpool__str(p->names, id) : NULL;
}

static inline uint64_t pf_rec_count(const uint32_t *rec)
{
	uint64_t c;

	memcpy(&c, rec + 1, sizeof(c));
	return c;
}

static inline void pf_rec_set_count(uint32_t *rec, uint64_t c)
{
	memcpy(rec + 1, &c, sizeof(c));
}

/* The slot holding the stack, or the empty slot where it would go. */
static uint64_t *pf_find_slot(const struct fl_profile *p, const uint32_t *frames, size_t n,
			      uint64_t hash)
{
	size_t mask = p->nr_slots - 1;
	size_t i = hash & mask;
	uint64_t tag = hash & ~PF_OFF_MASK;

	for (;; i = (i + 1) & mask) {
		uint64_t *slot = &p->slots[i];
		const uint32_t *rec;

		if (!*slot)
			return slot;
		if ((*slot & ~PF_OFF_MASK) != tag)
			continue;
		rec = p->arena + (*slot & PF_OFF_MASK) - 1;
		if (rec[0] == n && memcmp(rec + PF_REC_HDR, frames, n * sizeof(*frames)) == 0)
			return slot;
	}
}

/*
 * Makes room in the index for one more stack. A bigger index is filled by
 * walking the arena in order (sequential reads) and hashing each record
 * again; on failure the old index stays.
 */
static int pf_reserve_slots(struct fl_profile *p)
{
	uint64_t *slots;
	size_t nr, mask, off;

	/* Load factor under 3/4: probes stay short and an empty slot always exists. */
	if (p->nr_slots && (p->nr_stacks + 1) * 4 <= p->nr_slots * 3)
		return 0;
	nr = p->nr_slots ? p->nr_slots * 2 : PF_MIN_SLOTS;
	if (nr > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(nr, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	mask = nr - 1;
	for (off = 0; off < p->arena_len; off += PF_REC_HDR + p->arena[off]) {
		const uint32_t *rec = p->arena + off;
		uint64_t hash = pf_hash(rec + PF_REC_HDR, rec[0]);
		size_t j;

		for (j = hash & mask; slots[j]; j = (j + 1) & mask)
			;
		slots[j] = (hash & ~PF_OFF_MASK) | (off + 1);
	}
	free(p->slots);
	p->slots = slots;
	p->nr_slots = nr;
	return 0;
}

static int pf_reserve_arena(struct fl_profile *p, size_t words)
{
	uint32_t *arena;
	size_t cap;

	/* Offsets + 1 must fit in a slot's PF_OFF_BITS. */
	if (words >= PF_OFF_MASK - p->arena_len)
		return -ENOMEM;
	if (words <= p->arena_cap - p->arena_len)
		return 0;
	cap = p->arena_cap ? p->arena_cap : 4096;
	while (cap - p->arena_len < words) {
		if (cap > SIZE_MAX / 2 / sizeof(*arena))
			return -ENOMEM;
		cap *= 2;
	}
	arena = realloc(p->arena, cap * sizeof(*arena));
	if (!arena)
		return -ENOMEM;
	p->arena = arena;
	p->arena_cap = cap;
	return 0;
}

int fl_profile__add(struct fl_profile *p, const uint32_t *frames, size_t n, uint64_t count)
{
	size_t nr_names, i;
	uint64_t *slot, hash;
	uint32_t *rec;
	int err;

	if (!p || !frames || !n || !count)
		return -EINVAL;
	if (n >= UINT32_MAX)
		return -ENOMEM;
	nr_names = fl_strpool__count(p->names);
	for (i = 0; i < n; i++)
		if (frames[i] >= nr_names)
			return -EINVAL;

	hash = pf_hash(frames, n);
	if (p->nr_slots) {
		slot = pf_find_slot(p, frames, n, hash);
		if (*slot) {
			rec = p->arena + (*slot & PF_OFF_MASK) - 1;
			pf_rec_set_count(rec, pf_rec_count(rec) + count);
			p->total += count;
			return 0;
		}
	}

	/* Every allocation before the first change: on failure the profile is unchanged. */
	err = pf_reserve_slots(p);
	if (err)
		return err;
	err = pf_reserve_arena(p, PF_REC_HDR + n);
	if (err)
		return err;

	rec = p->arena + p->arena_len;
	rec[0] = (uint32_t)n;
	pf_rec_set_count(rec, count);
	memcpy(rec + PF_REC_HDR, frames, n * sizeof(*frames));
	slot = pf_find_slot(p, frames, n, hash);
	*slot = (hash & ~PF_OFF_MASK) | (p->arena_len + 1);
	p->arena_len += PF_REC_HDR + n;
	p->nr_stacks++;
	p->total += count;
	return 0;
}

uint64_t fl_profile__total(const struct fl_profile *p)
{
	return p ? p->total : 0;
}

size_t fl_profile__nr_stacks(const struct fl_profile *p)
{
	return p ? p->nr_stacks : 0;
}

uint64_t fl_profile__nr_sanitized(const struct fl_profile *p)
{
	return p ? p->nr_sanitized : 0;
}

int fl_profile__for_each(const struct fl_profile *p, fl_profile_stack_fn fn, void *ctx)
{
	size_t off;

	if (!p || !fn)
		return -EINVAL;
	for (off = 0; off < p->arena_len; off += PF_REC_HDR + p->arena[off]) {
		const uint32_t *rec = p->arena + off;
		int ret = fn(rec + PF_REC_HDR, rec[0], pf_rec_count(rec), ctx);

		if (ret)
			return ret;
	}
	return 0;
}
