/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The profile: distinct stacks of interned frame names with sample counts. */
#ifndef FLAMED_PROFILE_H
#define FLAMED_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A profile knows nothing of pids or ELF files: a stack is a list of frame
 * ids, root first (the process name, by convention), leaf last, and it has
 * a count. Adding the same stack twice adds the counts.
 */
struct fl_profile;

int fl_profile__new(struct fl_profile **ret);
/* Accepts NULL. */
void fl_profile__free(struct fl_profile *p);

/*
 * Interns a frame name of len bytes and writes its id to *id. Names are made
 * safe for every writer here, once: ';' becomes ':' and control characters
 * (newline, carriage return, tab, other bytes < 0x20 and 0x7f) become '?',
 * so that no name can split or forge a folded line; each name changed that
 * way is counted (fl_profile__nr_sanitized()). An empty name becomes "[empty]".
 * Returns 0 or -ENOMEM.
 */
int fl_profile__intern(struct fl_profile *p, const char *name, size_t len, uint32_t *id);

/* The name of a frame id; lives as long as the profile. NULL if unknown. */
const char *fl_profile__name(const struct fl_profile *p, uint32_t id);

/*
 * Adds count samples of the stack frames[0..n), root first. n may not be 0;
 * count may not be 0. Returns 0, -EINVAL (n == 0, count == 0, an id not
 * interned) or -ENOMEM (the profile is unchanged).
 */
int fl_profile__add(struct fl_profile *p, const uint32_t *frames, size_t n, uint64_t count);

/* Sum of all counts added. */
uint64_t fl_profile__total(const struct fl_profile *p);
/* Number of distinct stacks. */
size_t fl_profile__nr_stacks(const struct fl_profile *p);
/* Names that fl_profile__intern() had to change. */
uint64_t fl_profile__nr_sanitized(const struct fl_profile *p);

/*
 * Calls fn once per distinct stack, in no particular order. frames points
 * into the profile and is valid during the call only. A non-zero return
 * from fn stops the walk and is returned.
 */
typedef int (*fl_profile_stack_fn)(const uint32_t *frames, size_t n, uint64_t count, void *ctx);
int fl_profile__for_each(const struct fl_profile *p, fl_profile_stack_fn fn, void *ctx);

/*
 * The same in an order where the stacks that share a prefix of frames come
 * one after the other (prefixes of leaves when reverse), as a flame tree
 * with grouped set wants them. Costs a sort and 24 bytes per stack; returns
 * -ENOMEM without calling fn when they cannot be had.
 */
int fl_profile__for_each_grouped(const struct fl_profile *p, bool reverse, fl_profile_stack_fn fn,
				 void *ctx);

#endif
