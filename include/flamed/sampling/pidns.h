/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pid namespace flamed runs in: the initial one or a child (a container), and its identity. */
#ifndef FLAMED_PIDNS_H
#define FLAMED_PIDNS_H

#include <stdbool.h>
#include <stdint.h>

/* The initial pid namespace's inode number (the kernel's PROC_PID_INIT_INO, fixed since 3.8). */
#define FL_PIDNS_INIT_INO 0xeffffffcU

/*
 * A pid namespace as bpf_get_ns_current_pid_tgid() names it. In a child
 * namespace the kernel still gives BPF programs its own (host) pids, while
 * /proc and perf records give the namespace's: the BPF sampler translates.
 */
struct fl_pidns {
	uint64_t dev; /* the nsfs device, in the kernel's encoding (major << 20 | minor) */
	uint64_t ino; /* the namespace's inode number */
	bool initial; /* the initial namespace: a task's pid is the same everywhere */
};

/* The kernel's dev_t (MKDEV) of a device number as stat(2) gives it. */
uint64_t fl_pidns__kernel_dev(uint64_t st_dev);

/*
 * The pid namespace of path (/proc/self/ns/pid for flamed's own, or
 * /proc/PID/ns/pid). Returns 0, or -errno from stat(2).
 */
int fl_pidns__from_path(const char *path, struct fl_pidns *ret);
int fl_pidns__self(struct fl_pidns *ret);

/*
 * Whether the /proc mounted at proc (usually "/proc") shows pids of the
 * namespace of the caller, whose pid is self: its "self" link names self.
 * A child pid namespace with the host's /proc (unshare --pid --fork without
 * --mount-proc) shows other pids, and every /proc/PID read would be another
 * process's. Returns 0; -EXDEV with *proc_pid set to the pid /proc gave;
 * or -errno when the link cannot be read (-ENOENT: no /proc).
 */
int fl_pidns__check_proc(const char *proc, int self, int *proc_pid);

#endif
