/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A memory budget that several caches charge together: one limit for all
 * the memory spent on what other users wrote (symbol tables, perf maps).
 * A budget may have a parent: what it takes counts against both, so a
 * part of a whole can have a smaller limit of its own.
 */
#ifndef FLAMED_BUDGET_H
#define FLAMED_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

struct fl_budget {
	uint64_t max;		  /* bytes; 0: no limit of its own */
	uint64_t used;		  /* bytes charged now */
	uint64_t peak;		  /* the most charged at once */
	struct fl_budget *parent; /* charged too; NULL: none. Must outlive this one. */
};

/* Whether n more bytes fit in b and its parents (a NULL budget takes anything). */
static inline bool fl_budget__fits(const struct fl_budget *b, uint64_t n)
{
	for (; b; b = b->parent)
		if (b->max && (b->used > b->max || n > b->max - b->used))
			return false;
	return true;
}

/* How many more bytes fit in b and its parents: UINT64_MAX when none has a limit. */
static inline uint64_t fl_budget__room(const struct fl_budget *b)
{
	uint64_t room = UINT64_MAX;

	for (; b; b = b->parent) {
		if (!b->max)
			continue;
		if (b->used >= b->max)
			return 0;
		if (b->max - b->used < room)
			room = b->max - b->used;
	}
	return room;
}

/* Charges n bytes whether they fit or not: for what is known only once it is read. */
static inline void fl_budget__force(struct fl_budget *b, uint64_t n)
{
	for (; b; b = b->parent) {
		b->used += n;
		if (b->used > b->peak)
			b->peak = b->used;
	}
}

/* Charges n bytes if they fit: true, else false and nothing charged. */
static inline bool fl_budget__take(struct fl_budget *b, uint64_t n)
{
	if (!fl_budget__fits(b, n))
		return false;
	fl_budget__force(b, n);
	return true;
}

/* Gives back n bytes charged before. */
static inline void fl_budget__give(struct fl_budget *b, uint64_t n)
{
	for (; b; b = b->parent)
		b->used = n < b->used ? b->used - n : 0;
}

#endif
