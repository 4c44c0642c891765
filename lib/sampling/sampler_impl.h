/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The contract between lib/sampling/sampler.c and its two backends. Private to lib/. */
#ifndef FLAMED_SAMPLER_IMPL_H
#define FLAMED_SAMPLER_IMPL_H

#include "flamed/sampling/sampler.h"

struct fl_sampler_ops {
	int (*add_pid)(struct fl_sampler *s, int pid);
	int (*kernel_filter)(const struct fl_sampler *s); /* NULL: always in the kernel */
	int (*start)(struct fl_sampler *s);
	int (*stop)(struct fl_sampler *s);
	size_t (*nr_fds)(const struct fl_sampler *s);
	int (*fd)(const struct fl_sampler *s, size_t i);
	int (*poll)(struct fl_sampler *s);
	int (*revive)(struct fl_sampler *s, int *cpus, size_t max);
	int (*drain)(struct fl_sampler *s, fl_raw_stack_fn fn, void *ctx);
	int (*peek)(struct fl_sampler *s, fl_raw_stack_fn fn, void *ctx);
	int (*take)(struct fl_sampler *s, const uint32_t *pids, size_t n, fl_raw_stack_fn fn,
		    void *ctx);
	int (*snapshot)(struct fl_sampler *s, fl_raw_stack_fn fn, void *ctx);
	int (*gather)(struct fl_sampler *s); /* NULL: nothing to move */
	int (*stats)(struct fl_sampler *s, struct fl_sampler_stats *st);
	void (*free)(struct fl_sampler *s);
	/* kernel-dwarf (BPF backend only; NULL elsewhere). */
	int (*set_maps)(struct fl_sampler *s, uint32_t pid, const struct fl_tmap *maps, size_t n);
	void (*trim_tables)(struct fl_sampler *s);
	void (*settle_tables)(struct fl_sampler *s, unsigned int ms);
	bool (*kdwarf)(const struct fl_sampler *s);
	/* Python frames (NULL, or -EOPNOTSUPP: not read). */
	bool (*python)(const struct fl_sampler *s);
	int (*set_python)(struct fl_sampler *s, uint32_t pid, const struct fl_py_proc *p);
	int (*py_code)(struct fl_sampler *s, uint32_t pid, uint64_t code, struct fl_py_code *out);
};

/* Each backend's object starts with this. */
struct fl_sampler {
	const struct fl_sampler_ops *ops;
	enum fl_sampler_backend backend;
};

/* The pid namespace the stacks are for: opts->pidns, else flamed's own. Returns 0 or -errno. */
int sampler_pidns(const struct fl_sampler_opts *opts, struct fl_pidns *ret);

/* Constructors; same contract as fl_sampler__new(). */
int fl_sampler_bpf__new(const struct fl_sampler_opts *opts, struct fl_sampler **ret);
int fl_sampler_ring__new(const struct fl_sampler_opts *opts, struct fl_sampler **ret);

#endif
