/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An interning string pool: each distinct string stored once, named by a dense id. */
#ifndef FLAMED_STRPOOL_H
#define FLAMED_STRPOOL_H

#include <stddef.h>
#include <stdint.h>

struct fl_strpool;

int fl_strpool__new(struct fl_strpool **ret);
/* Accepts NULL. Invalidates every pointer returned by fl_strpool__str(). */
void fl_strpool__free(struct fl_strpool *p);

/*
 * Interns the len bytes at s (they may contain no NUL). Writes the id of the
 * string to *id: equal strings get equal ids, ids are dense from 0 in order
 * of first appearance. Returns 0, or -ENOMEM (the pool is unchanged).
 */
int fl_strpool__intern(struct fl_strpool *p, const char *s, size_t len, uint32_t *id);

/* The id of the len bytes at s if they were interned: 0, or -ENOENT. Adds nothing. */
int fl_strpool__find(const struct fl_strpool *p, const char *s, size_t len, uint32_t *id);

/*
 * The NUL-terminated string of an id, or NULL for an id never returned.
 * The pointer lives until fl_strpool__free(); interning more strings
 * does not move it.
 */
const char *fl_strpool__str(const struct fl_strpool *p, uint32_t id);
/* Length in bytes of an id's string (0 for an unknown id). */
size_t fl_strpool__len(const struct fl_strpool *p, uint32_t id);
size_t fl_strpool__count(const struct fl_strpool *p);

#endif
