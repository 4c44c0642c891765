/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What bpf/filter.bpf.c and lib/sampling/pidfilter.c share: the targets
 * map's values, the counters, and the Python frames of a sample.
 */
#ifndef FLAMED_FILTER_ABI_H
#define FLAMED_FILTER_ABI_H

#include <linux/types.h>

#include "flamed/python_abi.h"

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
	FL_FILTER_PY_SENT, /* ... kept with Python frames: a record in pyframes */
	FL_FILTER_PY_LOST, /* ... whose record pyframes had no room for */
	FL_FILTER_MAX,
};

/*
 * A record of the pyframes ring buffer: the Python frames (python_abi.h,
 * leaf first) of a sample the program kept, written just before the
 * kernel writes the sample to the perf ring of the same CPU. The record
 * is offsetof(frames) + nr * 8 bytes long. User space finds its sample by
 * cpu, tid and time: the kernel reads the sample's time (CLOCK_MONOTONIC,
 * as here) right after the program ran (Linux 6.2 and before) or right
 * before (since 6.3, where the sample is prepared first): a few
 * microseconds from [time, time + took], whose length is what reading
 * the frames took.
 */
struct fl_filter_pyrec {
	__u64 time; /* bpf_ktime_get_ns() as the program began: ns of CLOCK_MONOTONIC */
	__u32 cpu;
	__u32 tid;  /* in flamed's pid namespace, as the perf sample has it */
	__u32 nr;   /* frames, 1..FL_PY_MAX_FRAMES */
	__u32 took; /* ns from time to the record's writing (at most ~0U) */
	__u64 frames[FL_PY_MAX_FRAMES];
};

#endif
