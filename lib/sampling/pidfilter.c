// SPDX-License-Identifier: GPL-2.0-or-later
/* Loads bpf/filter.bpf.c, keeps its targets and attaches it to the ring sampler's perf events. */
#include <errno.h>
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
#include "filter.skel.h"
#include "sampling/pidfilter.h"

struct fl_pidfilter {
	struct filter_bpf *skel;
	struct bpf_link *fork_link;
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
	bpf_link__destroy(f->fork_link);
	filter_bpf__destroy(f->skel);
	free(f);
}

DEFINE_FREE_FUNC(struct fl_pidfilter, fl_pidfilter__free)

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
	err = filter_bpf__load(f->skel);
	if (err)
		goto out_err;
	if (opts->follow_children) {
		f->fork_link = bpf_program__attach(f->skel->progs.follow_fork);
		if (!f->fork_link) {
			err = -errno ?: -EINVAL;
			goto out_err;
		}
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
	if (ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, bpf_program__fd(f->skel->progs.keep_targets)) <
	    0)
		return -errno;
	return 0;
}

int fl_pidfilter__dropped(const struct fl_pidfilter *f, uint64_t *dropped)
{
	_cleanup_free_ uint64_t *vals = calloc((size_t)f->nr_possible, sizeof(uint64_t));
	uint32_t key = FL_FILTER_DROPPED;
	uint64_t sum = 0;

	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(f->skel->maps.counters), &key, vals))
		return -errno;
	for (int cpu = 0; cpu < f->nr_possible; cpu++)
		sum += vals[cpu];
	*dropped = sum;
	return 0;
}
