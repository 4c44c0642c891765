// SPDX-License-Identifier: GPL-2.0-or-later
/* Dispatch from the public sampler interface to the BPF or ring backend. */
#include <errno.h>

#include "sampling/sampler_impl.h"

int fl_sampler__new(enum fl_sampler_backend backend, const struct fl_sampler_opts *opts,
		    struct fl_sampler **ret)
{
	if (!opts || !ret || opts->freq == 0)
		return -EINVAL;
	if (!opts->kernel && !opts->user)
		return -EINVAL;
	switch (backend) {
	case FL_SAMPLER_BPF:
		return fl_sampler_bpf__new(opts, ret);
	case FL_SAMPLER_RING:
		return fl_sampler_ring__new(opts, ret);
	}
	return -EINVAL;
}

void fl_sampler__free(struct fl_sampler *s)
{
	if (s)
		s->ops->free(s);
}

enum fl_sampler_backend fl_sampler__backend(const struct fl_sampler *s)
{
	return s->backend;
}

int fl_sampler__add_pid(struct fl_sampler *s, int pid)
{
	return s->ops->add_pid(s, pid);
}

int fl_sampler__kernel_filter(const struct fl_sampler *s)
{
	return s->ops->kernel_filter ? s->ops->kernel_filter(s) : 1;
}

int fl_sampler__start(struct fl_sampler *s)
{
	return s->ops->start(s);
}

int fl_sampler__stop(struct fl_sampler *s)
{
	return s->ops->stop(s);
}

size_t fl_sampler__nr_fds(const struct fl_sampler *s)
{
	return s->ops->nr_fds(s);
}

int fl_sampler__fd(const struct fl_sampler *s, size_t i)
{
	return s->ops->fd(s, i);
}

int fl_sampler__poll(struct fl_sampler *s)
{
	return s->ops->poll(s);
}

int fl_sampler__revive(struct fl_sampler *s, int *cpus, size_t max)
{
	return s->ops->revive ? s->ops->revive(s, cpus, max) : 0;
}

int fl_sampler__drain(struct fl_sampler *s, fl_raw_stack_fn fn, void *ctx)
{
	return s->ops->drain(s, fn, ctx);
}

int fl_sampler__peek(struct fl_sampler *s, fl_raw_stack_fn fn, void *ctx)
{
	return s->ops->peek(s, fn, ctx);
}

int fl_sampler__take(struct fl_sampler *s, const uint32_t *pids, size_t n, fl_raw_stack_fn fn,
		     void *ctx)
{
	for (size_t i = 1; i < n; i++)
		if (pids[i - 1] >= pids[i])
			return -EINVAL;
	return s->ops->take(s, pids, n, fn, ctx);
}

int fl_sampler__gather(struct fl_sampler *s)
{
	return s->ops->gather ? s->ops->gather(s) : 0;
}

int fl_sampler__snapshot(struct fl_sampler *s, fl_raw_stack_fn fn, void *ctx)
{
	return s->ops->snapshot(s, fn, ctx);
}

int fl_sampler__stats(struct fl_sampler *s, struct fl_sampler_stats *st)
{
	return s->ops->stats(s, st);
}

int fl_sampler__set_maps(struct fl_sampler *s, uint32_t pid, const struct fl_tmap *maps, size_t n)
{
	return s->ops->set_maps ? s->ops->set_maps(s, pid, maps, n) : -EOPNOTSUPP;
}

void fl_sampler__trim_tables(struct fl_sampler *s)
{
	if (s->ops->trim_tables)
		s->ops->trim_tables(s);
}

void fl_sampler__settle_tables(struct fl_sampler *s, unsigned int ms)
{
	if (s->ops->settle_tables)
		s->ops->settle_tables(s, ms);
}

bool fl_sampler__kdwarf(const struct fl_sampler *s)
{
	return s->ops->kdwarf && s->ops->kdwarf(s);
}

int sampler_pidns(const struct fl_sampler_opts *opts, struct fl_pidns *ret)
{
	if (opts->sz >= sizeof(*opts) && opts->pidns) {
		*ret = *opts->pidns;
		return 0;
	}
	return fl_pidns__self(ret);
}

int fl_sampler__set_python(struct fl_sampler *s, uint32_t pid, const struct fl_py_proc *p)
{
	return s->ops->set_python ? s->ops->set_python(s, pid, p) : -EOPNOTSUPP;
}

int fl_sampler__py_code(struct fl_sampler *s, uint32_t pid, uint64_t code, struct fl_py_code *out)
{
	return s->ops->py_code ? s->ops->py_code(s, pid, code, out) : -EOPNOTSUPP;
}

bool fl_sampler__python(const struct fl_sampler *s)
{
	return s->ops->python && s->ops->python(s);
}
