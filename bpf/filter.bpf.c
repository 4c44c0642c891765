// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Drops the samples of processes that are not targets before the kernel
 * copies them to a perf ring, and reads the Python frames of those it keeps.
 */
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

#include "python.bpf.h"

/* With want_python (python.bpf.h): bytes in pyframes that wake user space. */
const volatile __u32 py_wakeup = 1;

/*
 * Whether only the targets' samples are written (else every process's, the
 * program then being there for the Python frames). In .data, not rodata:
 * user space turns it on with the first target, the program attached.
 */
volatile bool filter_pids = true;

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

/* Kept samples' Python frames (struct fl_filter_pyrec), for user space to join; sized by it. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} pyframes SEC(".maps");

/* Per CPU: the record being made (bpf_ringbuf_output() copies as many bytes as it has frames). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct fl_filter_pyrec);
	__uint(max_entries, 1);
} pyrec_scratch SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	/* Per-CPU slot: no other CPU writes it, and a perf_event program does not nest on one CPU. */
	if (c)
		*c += 1;
}

/*
 * The current task's process and thread ids in flamed's pid namespace
 * (the perf records' pids); false for the idle task (host tid 0) and the
 * tasks outside that namespace.
 */
static __always_inline bool current_ids(__u64 pid_tgid, __u32 *tgid, __u32 *tid)
{
	*tgid = pid_tgid >> 32;
	*tid = (__u32)pid_tgid;
	if (*tid == 0)
		return false;
	return !child_pidns || ns_ids(pidns_dev, pidns_ino, have_ns_helper, tgid, tid);
}

/*
 * The Python frames of the current thread (tid of flamed's namespace) to
 * pyframes, when its process is one of pyprocs and the thread is in
 * Python; begun is when the program began.
 */
static __always_inline void send_python(__u32 tgid, __u32 tid, __u32 host_tid, __u64 begun)
{
	__u32 zero = 0, flags;
	__u64 size, now;
	struct fl_filter_pyrec *rec;
	struct py_scratch *sc;
	int n = py_walk(tgid, host_tid);

	if (n <= 0)
		return;
	if (n > FL_PY_MAX_FRAMES)
		n = FL_PY_MAX_FRAMES;
	sc = bpf_map_lookup_elem(&py_scratch, &zero);
	rec = bpf_map_lookup_elem(&pyrec_scratch, &zero);
	if (!sc || !rec || bpf_probe_read_kernel(rec->frames, sizeof(rec->frames), sc->frames.ips))
		return;
	rec->cpu = bpf_get_smp_processor_id();
	rec->tid = tid;
	rec->nr = (__u32)n;
	flags = bpf_ringbuf_query(&pyframes, BPF_RB_AVAIL_DATA) >= py_wakeup ? BPF_RB_FORCE_WAKEUP
									     : BPF_RB_NO_WAKEUP;
	size = __builtin_offsetof(struct fl_filter_pyrec, frames) + (__u64)n * 8;
	/* The bound again, where the verifier sees it on the size passed. */
	asm volatile("" : "+r"(size));
	if (size > sizeof(*rec))
		return;
	now = bpf_ktime_get_ns();
	rec->time = begun;
	rec->took = now - begun < 0xffffffffULL ? (__u32)(now - begun) : 0xffffffffU;
	if (bpf_ringbuf_output(&pyframes, rec, size, flags))
		count(FL_FILTER_PY_LOST);
	else
		count(FL_FILTER_PY_SENT);
}

/*
 * The same decision as the ring sampler's in user space: the idle task
 * and the tasks outside flamed's pid namespace are no target's. Two entry
 * points, so that a kernel that cannot load the Python part (python.bpf.h
 * needs bpf_loop, 5.17, and CO-RE on the task's fs base) still filters:
 * only the program loaded takes its functions and maps with it.
 */
static __always_inline int keep(bool python)
{
	/* Python: the sample's own time is read just before or just after the program. */
	__u64 begun = python ? bpf_ktime_get_ns() : 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid, tid;
	bool seen = current_ids(pid_tgid, &tgid, &tid);

	count(FL_FILTER_SEEN);
	if (filter_pids && !(seen && bpf_map_lookup_elem(&targets, &tgid))) {
		count(FL_FILTER_DROPPED);
		return 0;
	}
	if (python && want_python && seen)
		send_python(tgid, tid, (__u32)pid_tgid, begun);
	return 1;
}

SEC("perf_event")
int keep_targets(struct bpf_perf_event_data *ctx)
{
	return keep(false);
}

SEC("perf_event")
int keep_targets_py(struct bpf_perf_event_data *ctx)
{
	return keep(true);
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
