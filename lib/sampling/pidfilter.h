/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel side of the ring sampler's process filter: bpf/filter.bpf.c
 * attached to its perf events drops the samples of processes that are not
 * targets before they are copied to the rings. Private to lib/.
 */
#ifndef FLAMED_PIDFILTER_H
#define FLAMED_PIDFILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "flamed/sampling/pidns.h"

struct fl_pidfilter;

struct fl_pidfilter_opts {
	size_t sz; /* sizeof(struct fl_pidfilter_opts) */
	/* The namespace whose pids the targets are (the perf records'): flamed's. */
	const struct fl_pidns *pidns;
	/* Processes forked by a target become targets (a fork tracepoint program). */
	bool follow_children;
};

/*
 * Loads the program (and with follow_children attaches the fork program).
 * No target yet: attached to an event, it drops every sample. Returns 0,
 * or -errno from libbpf or the kernel (-EPERM without CAP_BPF/CAP_PERFMON,
 * -ENOENT/-ESRCH/-EINVAL on a kernel without what the programs need:
 * BTF, tp_btf).
 */
int fl_pidfilter__new(const struct fl_pidfilter_opts *opts, struct fl_pidfilter **ret);
/* Accepts NULL. The events it was attached to keep the program until they are closed. */
void fl_pidfilter__free(struct fl_pidfilter *f);

/* pid (a tgid, > 0) is a target for good. Returns 0, -EINVAL or -errno (-E2BIG: 65536 targets). */
int fl_pidfilter__add(struct fl_pidfilter *f, uint32_t pid);
/* pid is no target any more (its process exited), nor are its descendants through it. */
void fl_pidfilter__del(struct fl_pidfilter *f, uint32_t pid);

/*
 * Attaches the program to the perf event perf_fd (PERF_EVENT_IOC_SET_BPF):
 * from then on the kernel writes to the event's ring only the samples of
 * targets. The fd stays the caller's; closing it detaches the program.
 * Returns 0 or -errno (-EEXIST: the event has a program already).
 */
int fl_pidfilter__attach(struct fl_pidfilter *f, int perf_fd);

/* Samples the program dropped so far, on every event it is attached to. Returns 0 or -errno. */
int fl_pidfilter__dropped(const struct fl_pidfilter *f, uint64_t *dropped);

#endif
