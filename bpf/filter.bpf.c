// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Drops the samples of processes that are not targets before the kernel copies them to a perf ring. */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "flamed/filter_abi.h"
#include "pidns.bpf.h"

/*
 * Attached to the ring sampler's cpu-clock events (PERF_EVENT_IOC_SET_BPF),
 * this program decides whether the kernel writes a sample to the event's
 * ring. In Linux 6.1 (kernel/events/core.c) attaching replaces the event's
 * overflow_handler by bpf_overflow_handler(), which runs the program and
 * calls the original handler (perf_event_output_forward(): the sample is
 * prepared, its user stack copied and written to the ring) only when the
 * program returned non-zero; since 6.9 __perf_event_overflow() calls
 * bpf_overflow_handler() itself and skips the output on 0 just the same.
 * So a sample this program answers 0 for costs no ring space, no 16 KiB
 * stack copy and no wakeup. (When another BPF program is running on the CPU,
 * bpf_prog_active, the kernel does not run this one and drops the sample
 * uncounted, as it does for every perf_event program.)
 */

/* Set by user space before load (the skeleton's rodata): see profile.bpf.c. */
const volatile bool child_pidns = false;
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;
const volatile bool have_ns_helper = true;

/* Processes whose samples are written to the rings: tgid (of flamed's namespace) -> FL_FILTER_*. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 65536);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, FL_FILTER_MAX);
} counters SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	/* Per-CPU slot: no other CPU writes it, and a perf_event program does not nest on one CPU. */
	if (c)
		*c += 1;
}

/*
 * The same decision as the ring sampler's in user space: the idle task
 * (host tid 0) and the tasks outside flamed's pid namespace are no target's.
 */
static __always_inline bool is_target(void)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 tid = (__u32)pid_tgid;

	if (tid == 0)
		return false;
	if (child_pidns && !ns_ids(pidns_dev, pidns_ino, have_ns_helper, &tgid, &tid))
		return false;
	return bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

SEC("perf_event")
int keep_targets(struct bpf_perf_event_data *ctx)
{
	count(FL_FILTER_SEEN);
	if (is_target())
		return 1;
	count(FL_FILTER_DROPPED);
	return 0;
}

/*
 * With follow_children, a process forked by a target is a target too. The
 * tracepoint fires in the parent before the child can run (kernel_clone()
 * calls wake_up_new_task() after it): the child's first sample finds it
 * here. A child of anyone else that got the pid of an exited descendant is
 * no target any more (user space does the same with the fork records).
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(follow_fork, struct task_struct *parent, struct task_struct *child)
{
	__u8 child_kind = FL_FILTER_CHILD, *kind;
	__u32 ptgid, ctgid;

	if (!fork_tgids(parent, child, child_pidns, pidns_ino, &ptgid, &ctgid))
		return 0;
	if (bpf_map_lookup_elem(&targets, &ptgid)) {
		bpf_map_update_elem(&targets, &ctgid, &child_kind, BPF_NOEXIST);
		return 0;
	}
	kind = bpf_map_lookup_elem(&targets, &ctgid);
	if (kind && *kind == FL_FILTER_CHILD)
		bpf_map_delete_elem(&targets, &ctgid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
