/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Pids of flamed's pid namespace seen from BPF, for the programs that filter
 * by process (profile.bpf.c, filter.bpf.c). flamed may run in a child pid
 * namespace (a container): its targets, /proc and its perf records hold pids
 * of that namespace, while bpf_get_current_pid_tgid() and task->tgid give
 * those of the initial one. The namespace is named by the device and inode
 * of its nsfs file (struct fl_pidns in user space).
 */
#ifndef FLAMED_PIDNS_BPF_H
#define FLAMED_PIDNS_BPF_H

#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

/* Just enough of the kernel's types for CO-RE to relocate against its BTF. */
struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct pid_namespace {
	struct ns_common ns;
} __attribute__((preserve_access_index));

struct upid {
	int nr;
	struct pid_namespace *ns;
} __attribute__((preserve_access_index));

struct pid {
	unsigned int level;
	struct upid numbers[1];
} __attribute__((preserve_access_index));

struct mm_struct;

struct task_struct {
	int pid; /* the thread's */
	int tgid;
	struct pid *thread_pid;
	struct task_struct *group_leader;
	struct mm_struct *mm; /* NULL for kernel threads and tasks past exit_mm() */
} __attribute__((preserve_access_index));

/* Nesting deeper than the kernel allows (MAX_PID_NS_LEVEL, 32) cannot be flamed's. */
#define MAX_PIDNS_LEVELS 33

/*
 * The number pid has in the namespace of inode ns_ino, or 0 when that
 * namespace does not see it. A pid has one number per level, from the
 * initial namespace (level 0) down to the task's own: flamed's is the level
 * whose namespace has flamed's inode.
 */
static __always_inline __u32 pid_in_ns(struct pid *pid, __u64 ns_ino)
{
	unsigned int level = BPF_CORE_READ(pid, level);

	for (unsigned int i = 0; i < MAX_PIDNS_LEVELS && i <= level; i++) {
		struct upid *up = &pid->numbers[i];

		if (BPF_CORE_READ(up, ns, ns.inum) == ns_ino)
			return (__u32)BPF_CORE_READ(up, nr);
	}
	return 0;
}

/*
 * The current task's process and thread ids in the namespace (ns_dev,
 * ns_ino); false when it is not visible there (a task outside the
 * namespace). The helper (5.7+, have_helper) answers only for tasks whose
 * own namespace is that one (the kernel compares the namespace exactly,
 * -EINVAL otherwise): those in a namespace nested in it (a container in the
 * container) are found by walking their pid's levels.
 */
static __always_inline bool ns_ids(__u64 ns_dev, __u64 ns_ino, bool have_helper, __u32 *tgid,
				   __u32 *tid)
{
	struct bpf_pidns_info ns;
	struct task_struct *task;

	if (have_helper && !bpf_get_ns_current_pid_tgid(ns_dev, ns_ino, &ns, sizeof(ns))) {
		*tgid = ns.tgid;
		*tid = ns.pid;
		return true;
	}
	task = (struct task_struct *)bpf_get_current_task();
	*tid = pid_in_ns(BPF_CORE_READ(task, thread_pid), ns_ino);
	if (!*tid)
		return false; /* most often a task outside: its process is outside too */
	*tgid = pid_in_ns(BPF_CORE_READ(task, group_leader, thread_pid), ns_ino);
	return *tgid != 0;
}

/*
 * At sched_process_fork: the parent's and the child's process ids, in the
 * namespace of inode ns_ino when child_ns (else the initial namespace's).
 * False for a new thread (no new process), or a process the namespace does
 * not see.
 */
/*
 * The tgid of task p, the leader of its group or not, as flamed's
 * namespace numbers it (child_ns), or 0 when that namespace does not see it.
 */
static __always_inline __u32 task_tgid(struct task_struct *p, bool child_ns, __u64 ns_ino)
{
	if (!child_ns)
		return (__u32)p->tgid;
	return pid_in_ns(BPF_CORE_READ(p, group_leader, thread_pid), ns_ino);
}

static __always_inline bool fork_tgids(struct task_struct *parent, struct task_struct *child,
				       bool child_ns, __u64 ns_ino, __u32 *ptgid, __u32 *ctgid)
{
	*ptgid = parent->tgid;
	*ctgid = child->tgid;
	if (*ptgid == *ctgid)
		return false; /* a new thread */
	if (child_ns) {
		*ptgid = task_tgid(parent, child_ns, ns_ino);
		/* A new process leads its group: its pid is its tgid. */
		*ctgid = pid_in_ns(BPF_CORE_READ(child, thread_pid), ns_ino);
		if (!*ptgid || !*ctgid)
			return false;
	}
	return true;
}

#endif
