/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel side of the ring sampler's process filter: bpf/filter.bpf.c
 * attached to its perf events drops the samples of processes that are not
 * targets before they are copied to the rings, and (python) reads the
 * Python frames of those it keeps into a BPF ring buffer. Private to lib/.
 */
#ifndef FLAMED_PIDFILTER_H
#define FLAMED_PIDFILTER_H

#include <stdbool.h>
#include <stdint.h>

#include "flamed/filter_abi.h"
#include "flamed/sampling/pidns.h"

struct fl_pidfilter;
struct fl_py_proc;
struct fl_py_code;

/* A record of Python frames, checked (nr within 1..FL_PY_MAX_FRAMES, all there); valid during the call. */
typedef void (*fl_pidfilter_py_fn)(void *ctx, const struct fl_filter_pyrec *rec);

struct fl_pidfilter_opts {
	size_t sz; /* sizeof(struct fl_pidfilter_opts) */
	/* The namespace whose pids the targets are (the perf records'): flamed's. */
	const struct fl_pidns *pidns;
	/* Processes forked by a target become targets (a fork tracepoint program). */
	bool follow_children;
	/*
	 * Until the first fl_pidfilter__add(), every sample is kept (not only
	 * the targets'): the program is there for the Python frames.
	 */
	bool keep_all;
	/*
	 * Python frames: for each sample kept of a process given to
	 * fl_pidfilter__set_python(), a record of its thread's Python frames,
	 * written before the sample, in a BPF ring buffer of py_ring_bytes (a
	 * power of two, at least a page; a quarter full wakes its fd), given
	 * to on_python by fl_pidfilter__py_consume().
	 */
	bool python;
	size_t py_ring_bytes;
	fl_pidfilter_py_fn on_python;
	void *py_ctx;
};

/*
 * Loads the program (and with follow_children attaches the fork program;
 * with python, the exec program). No target yet: attached to an event, it
 * drops every sample (keep_all: keeps them). Returns 0, or -errno from
 * libbpf or the kernel (-EPERM without CAP_BPF/CAP_PERFMON,
 * -ENOENT/-ESRCH/-EINVAL on a kernel without what the programs need:
 * BTF, tp_btf; with python also bpf_loop, Linux 5.17: try again without).
 */
int fl_pidfilter__new(const struct fl_pidfilter_opts *opts, struct fl_pidfilter **ret);
/* Accepts NULL. The events it was attached to keep the program until they are closed. */
void fl_pidfilter__free(struct fl_pidfilter *f);

/*
 * pid (a tgid, > 0) is a target for good; with keep_all, the first one
 * ends keeping every sample. Returns 0, -EINVAL or -errno (-E2BIG: 65536
 * targets).
 */
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

/*
 * Process pid (of the pidns) runs the CPython p describes; p NULL: it does
 * not (any more). Returns 0, -EOPNOTSUPP (not python) or -errno.
 */
int fl_pidfilter__set_python(struct fl_pidfilter *f, uint32_t pid, const struct fl_py_proc *p);
/*
 * The names of code object code (FL_PY_KEY()) of process pid, as the
 * program read them. Returns 0, -ENOENT, -EOPNOTSUPP.
 */
int fl_pidfilter__py_code(const struct fl_pidfilter *f, uint32_t pid, uint64_t code,
			  struct fl_py_code *out);
/*
 * Gives every record of Python frames written since the last call to
 * on_python, oldest first (in the order of each CPU's samples). Returns
 * their number, -EOPNOTSUPP or -errno.
 */
int fl_pidfilter__py_consume(struct fl_pidfilter *f);
/* An fd readable when the Python frames' ring is a quarter full; -EOPNOTSUPP without python. */
int fl_pidfilter__py_fd(const struct fl_pidfilter *f);
/* Samples kept whose Python frames had no room in the ring (taken without). Returns 0 or -errno. */
int fl_pidfilter__py_lost(const struct fl_pidfilter *f, uint64_t *lost);

#endif
