/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Counting raw stacks in user space: the ring sampler and the BPF overflow path. */
#ifndef FLAMED_STACKAGG_H
#define FLAMED_STACKAGG_H

#include <stddef.h>
#include <stdint.h>

#include "flamed/sampling/sampler.h"

/*
 * A hash of distinct raw stacks — (pid, tid, comm, kernel ips, user ips,
 * Python ips, kerr, uerr, time_first, time, cgroup_id) — to counts. The
 * caller sets time_first and time to the starts of the eras of the first
 * and last sample (equal for one sample), so that samples of one era share
 * a key; for_each gives them back. Memory grows with the number of distinct
 * stacks, never with the number of samples. Each process's stacks are a
 * table of their own: taking a process's stacks costs what they are.
 */
struct fl_stackagg;

int fl_stackagg__new(struct fl_stackagg **ret);
/* Accepts NULL. */
void fl_stackagg__free(struct fl_stackagg *a);

/*
 * Adds count to the stack described by st (st->count is ignored; comm is
 * copied up to 15 bytes, the ip arrays are copied). nr_kips and nr_uips are
 * at most 127 (FL_MAX_STACK_DEPTH); longer arrays are cut to it. Returns 0 or
 * -ENOMEM (nothing changed).
 */
int fl_stackagg__add(struct fl_stackagg *a, const struct fl_raw_stack *st, uint64_t count);

/* Calls fn for every distinct stack with its summed count; order unspecified. */
int fl_stackagg__for_each(const struct fl_stackagg *a, fl_raw_stack_fn fn, void *ctx);

/*
 * Removes every stack of the pids and calls fn for each, looking at no
 * other process's stacks. Returns 0 or fn's first non-zero return, which
 * stops the calls (the stacks of the pids are gone all the same).
 */
int fl_stackagg__take(struct fl_stackagg *a, const uint32_t *pids, size_t n, fl_raw_stack_fn fn,
		      void *ctx);

size_t fl_stackagg__nr_stacks(const struct fl_stackagg *a);
/* Sum of all counts. */
uint64_t fl_stackagg__total(const struct fl_stackagg *a);
/* How many stacks take() has looked at, over the table's life: what the takes cost. */
uint64_t fl_stackagg__examined(const struct fl_stackagg *a);

#endif
