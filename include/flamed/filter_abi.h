/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What bpf/filter.bpf.c and lib/sampling/pidfilter.c share: the targets map's values and the counters. */
#ifndef FLAMED_FILTER_ABI_H
#define FLAMED_FILTER_ABI_H

/*
 * Values of the targets map (tgid -> kind), as the ring sampler keeps them
 * in user space: a child's pid taken over by a process that descends from
 * no target stops being one; an asked-for pid stays one.
 */
enum fl_filter_target {
	FL_FILTER_CHILD = 1, /* forked by a target (follow_children) */
	FL_FILTER_ASKED = 2, /* given by the user (-p, the -- CMD child) */
};

/* Indexes of the per-CPU counters array. */
enum fl_filter_counter {
	FL_FILTER_SEEN,	   /* samples the program was run for */
	FL_FILTER_DROPPED, /* ... of them not written to the perf ring: not a target's */
	FL_FILTER_MAX,
};

#endif
