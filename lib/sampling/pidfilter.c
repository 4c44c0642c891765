// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Loads bpf/filter.bpf.c, keeps its targets and attaches it to the ring
 * sampler's perf events; reads the Python frames it sends.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/filter_abi.h"
#include "flamed/python_abi.h"
#include "filter.skel.h"
#include "sampling/bpfring.h"
#include "sampling/pidfilter.h"

/* Processes, threads and code objects the Python part keeps track of (as the BPF sampler's). */
#define PF_PY_PROCS 4096
#define PF_PY_TSTATES 8192
#define PF_PY_CODES 16384

struct fl_pidfilter {
	struct filter_bpf *skel;
	struct bpf_link *fork_link;
	struct bpf_link *exec_link; /* python */
	struct fl_bpfring *py_rb;   /* python: pyframes, py_wants */
	fl_pidfilter_py_fn on_python;
	void *py_ctx;
	bool python;
	bool keep_all;	 /* no target yet: the program keeps every sample */
	int nr_possible; /* the per-CPU counters' slots */
};

/* libbpf's messages (a verifier log, a missing BTF) go to the debug log, never to stderr. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[512];

	(void)level;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	fl_pr_debug("libbpf: %s", buf);
	return 0;
}

void fl_pidfilter__free(struct fl_pidfilter *f)
{
	if (!f)
		return;
	fl_bpfring__free(f->py_rb);
	bpf_link__destroy(f->exec_link);
	bpf_link__destroy(f->fork_link);
	filter_bpf__destroy(f->skel);
	free(f);
}

DEFINE_FREE_FUNC(struct fl_pidfilter, fl_pidfilter__free)

/* A record of pyframes to on_python: written by our program, and still checked before it is read. */
static int on_pyrec(void *ctx, void *data, size_t size)
{
	struct fl_pidfilter *f = ctx;
	const struct fl_filter_pyrec *rec = data;
	size_t head = offsetof(struct fl_filter_pyrec, frames);

	if (size < head || !rec->nr || rec->nr > FL_PY_MAX_FRAMES ||
	    size < head + rec->nr * sizeof(rec->frames[0]))
		return 0;
	f->on_python(f->py_ctx, rec);
	return 0;
}

/*
 * Without python the Python part is neither loaded nor made: its maps (a
 * ring buffer: Linux 5.8) and programs (bpf_loop: 5.17) stay out of the
 * way of a kernel that can filter but not read Python frames.
 */
static int setup_python(struct filter_bpf *skel, const struct fl_pidfilter_opts *opts)
{
	struct bpf_map *maps[] = {skel->maps.pyprocs,  skel->maps.py_tstates,
				  skel->maps.pycodes,  skel->maps.py_scratch,
				  skel->maps.pyframes, skel->maps.pyrec_scratch,
				  skel->maps.py_wants, skel->maps.py_asked};
	size_t ring = opts->py_ring_bytes;
	int err;

	if (!opts->python) {
		for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
			err = bpf_map__set_autocreate(maps[i], false);
			if (err)
				return err;
		}
		bpf_program__set_autoload(skel->progs.keep_targets_py, false);
		bpf_program__set_autoload(skel->progs.py_on_exec, false);
		return 0;
	}
	if (!opts->on_python || ring < 4096 || ring & (ring - 1) || ring > (1U << 30))
		return -EINVAL;
	bpf_program__set_autoload(skel->progs.keep_targets, false);
	skel->rodata->want_python = true;
	skel->rodata->py_wakeup = (__u32)(ring / 4);
	if ((err = bpf_map__set_max_entries(skel->maps.pyprocs, PF_PY_PROCS)) ||
	    (err = bpf_map__set_max_entries(skel->maps.py_tstates, PF_PY_TSTATES)) ||
	    (err = bpf_map__set_max_entries(skel->maps.pycodes, PF_PY_CODES)) ||
	    (err = bpf_map__set_max_entries(skel->maps.pyframes, (__u32)ring)))
		return err;
	return 0;
}

int fl_pidfilter__new(const struct fl_pidfilter_opts *opts, struct fl_pidfilter **ret)
{
	_cleanup_(fl_pidfilter__freep) struct fl_pidfilter *f = NULL;
	int err;

	if (!opts || !ret || opts->sz < sizeof(*opts) || !opts->pidns)
		return -EINVAL;
	libbpf_set_print(libbpf_print);
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	err = libbpf_num_possible_cpus();
	if (err < 0)
		return err;
	f->nr_possible = err;

	f->skel = filter_bpf__open();
	if (!f->skel)
		return -errno ?: -EINVAL;
	/* Targets and records are pids of flamed's namespace; the kernel's own are the host's. */
	if (!opts->pidns->initial) {
		f->skel->rodata->child_pidns = true;
		f->skel->rodata->pidns_dev = opts->pidns->dev;
		f->skel->rodata->pidns_ino = opts->pidns->ino;
		f->skel->rodata->have_ns_helper =
			libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT,
						BPF_FUNC_get_ns_current_pid_tgid, NULL) == 1;
	}
	if (!opts->follow_children)
		bpf_program__set_autoload(f->skel->progs.follow_fork, false);
	err = setup_python(f->skel, opts);
	if (err)
		goto out_err;
	err = filter_bpf__load(f->skel);
	if (err)
		goto out_err;
	f->keep_all = opts->keep_all;
	f->skel->data->filter_pids = !f->keep_all;
	if (opts->follow_children) {
		f->fork_link = bpf_program__attach(f->skel->progs.follow_fork);
		if (!f->fork_link) {
			err = -errno ?: -EINVAL;
			goto out_err;
		}
	}
	if (opts->python) {
		f->exec_link = bpf_program__attach(f->skel->progs.py_on_exec);
		if (!f->exec_link) {
			err = -errno ?: -EINVAL;
			goto out_err;
		}
		f->on_python = opts->on_python;
		f->py_ctx = opts->py_ctx;
		err = fl_bpfring__new(&f->py_rb);
		if (!err)
			err = fl_bpfring__add(f->py_rb, bpf_map__fd(f->skel->maps.pyframes), on_pyrec,
					      f);
		if (!err)
			err = fl_bpfring__add(f->py_rb, bpf_map__fd(f->skel->maps.py_wants), NULL,
					      f);
		if (err)
			goto out_err;
		f->python = true;
	}
	*ret = TAKE_PTR(f);
	return 0;

out_err:
	fl_pr_debug("pidfilter: cannot load the filter: %s\n", strerror(-err));
	return err;
}

int fl_pidfilter__add(struct fl_pidfilter *f, uint32_t pid)
{
	uint8_t kind = FL_FILTER_ASKED;

	if (!pid)
		return -EINVAL;
	if (bpf_map__update_elem(f->skel->maps.targets, &pid, sizeof(pid), &kind, sizeof(kind),
				 BPF_ANY))
		return -errno;
	/* The target first: from here on its samples are the only ones kept. */
	if (f->keep_all) {
		f->skel->data->filter_pids = true;
		f->keep_all = false;
	}
	return 0;
}

void fl_pidfilter__del(struct fl_pidfilter *f, uint32_t pid)
{
	/* -ENOENT when it was not one: nothing to do either way. */
	bpf_map__delete_elem(f->skel->maps.targets, &pid, sizeof(pid), 0);
}

int fl_pidfilter__attach(struct fl_pidfilter *f, int perf_fd)
{
	/*
	 * The ioctl, not a bpf_link: the ring sampler keeps its fds (it maps
	 * their rings and reopens them after CPU hotplug), and the program goes
	 * with the event when the event is closed. Works since Linux 4.9.
	 */
	struct bpf_program *prog =
		f->python ? f->skel->progs.keep_targets_py : f->skel->progs.keep_targets;

	if (ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, bpf_program__fd(prog)) < 0)
		return -errno;
	return 0;
}

/* Counter idx summed over the CPUs. */
static int counter(const struct fl_pidfilter *f, uint32_t idx, uint64_t *ret)
{
	_cleanup_free_ uint64_t *vals = calloc((size_t)f->nr_possible, sizeof(uint64_t));
	uint64_t sum = 0;

	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(f->skel->maps.counters), &idx, vals))
		return -errno;
	for (int cpu = 0; cpu < f->nr_possible; cpu++)
		sum += vals[cpu];
	*ret = sum;
	return 0;
}

int fl_pidfilter__dropped(const struct fl_pidfilter *f, uint64_t *dropped)
{
	return counter(f, FL_FILTER_DROPPED, dropped);
}

int fl_pidfilter__set_python(struct fl_pidfilter *f, uint32_t pid, const struct fl_py_proc *p)
{
	int fd;

	if (!f->python)
		return -EOPNOTSUPP;
	fd = bpf_map__fd(f->skel->maps.pyprocs);
	if (!p)
		return bpf_map_delete_elem(fd, &pid) && errno != ENOENT ? -errno : 0;
	return bpf_map_update_elem(fd, &pid, p, BPF_ANY) ? -errno : 0;
}

int fl_pidfilter__py_code(const struct fl_pidfilter *f, uint32_t pid, uint64_t code,
			  struct fl_py_code *out)
{
	struct fl_py_code_key key = {.tgid = pid, .code = code};

	if (!f->python)
		return -EOPNOTSUPP;
	return bpf_map_lookup_elem(bpf_map__fd(f->skel->maps.pycodes), &key, out) ? -errno : 0;
}

int fl_pidfilter__py_consume(struct fl_pidfilter *f)
{
	if (!f->python)
		return -EOPNOTSUPP;
	return fl_bpfring__consume(f->py_rb);
}

int fl_pidfilter__py_fd(const struct fl_pidfilter *f)
{
	if (!f->python)
		return -EOPNOTSUPP;
	return fl_bpfring__epoll_fd(f->py_rb);
}

int fl_pidfilter__py_lost(const struct fl_pidfilter *f, uint64_t *lost)
{
	if (!f->python) {
		*lost = 0;
		return 0;
	}
	return counter(f, FL_FILTER_PY_LOST, lost);
}
