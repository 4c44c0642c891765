// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Counts distinct (process, thread, kernel stack, user stack) samples in the kernel. */
#include <stdbool.h>
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "flamed/profile_abi.h"
#include "pidns.bpf.h"

/* Kernel errno values; the BPF target has no libc headers. */
#define E2BIG 7
#define ENOMEM 12
#define EFAULT 14
#define EEXIST 17

/* Set by user space before load (the skeleton's rodata). */
const volatile bool keep_idle = false;
const volatile bool filter_pids = false;
const volatile bool per_thread = false;
const volatile bool want_kernel = true;
const volatile bool want_user = true;
/*
 * flamed runs in a child pid namespace (a container): keys, overflow
 * records and targets hold pids of that namespace (pidns_dev, pidns_ino),
 * which /proc and the perf records there use too. The kernel's own pids are
 * those of the initial namespace, which bpf_get_current_pid_tgid() gives.
 */
const volatile bool child_pidns = false;
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;
/* bpf_get_ns_current_pid_tgid() exists (5.7+); without it every task is looked up the long way. */
const volatile bool have_ns_helper = true;
/* Bytes waiting in the overflow ring before user space is woken: a quarter of it. */
const volatile __u64 overflow_wakeup = 2 << 20;
/*
 * Snapshots (the daemon): two sets of stack and counts maps. Samples go to
 * the set active_set names; user space flips it, waits for the programs
 * still using the other set to finish, then reads and empties that set at
 * leisure. Without two_sets only set 0 is used (set 1 has one entry each).
 */
const volatile bool two_sets = false;
__u32 active_set = 0;

/* Sizes are set by user space before load: these are placeholders. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, FL_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} stacks SEC(".maps"), stacks1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct fl_stack_key);
	__type(value, struct fl_stack_val);
	__uint(max_entries, 40960);
} counts SEC(".maps"), counts1 SEC(".maps");

/* Processes to keep when filter_pids is set (value unused). */
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
	__uint(max_entries, FL_CNT_MAX);
} counters SEC(".maps");

/* Samples the maps could not hold travel whole through here; sized by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} overflow SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	/* Per-CPU slot: no other CPU writes it, and a perf_event program does not nest on one CPU. */
	if (c)
		*c += 1;
}

static __always_inline void send_whole(struct bpf_perf_event_data *ctx, __u32 tgid, __u32 tid,
				       __u64 now)
{
	struct fl_overflow_rec *rec;
	long n;

	rec = bpf_ringbuf_reserve(&overflow, sizeof(*rec), 0);
	if (!rec) {
		count(FL_CNT_OVERFLOW_LOST);
		return;
	}
	rec->time = now;
	rec->tgid = tgid;
	rec->tid = tid;
	bpf_get_current_comm(rec->comm, sizeof(rec->comm));
	rec->nr_kernel = 0;
	rec->nr_user = 0;
	rec->kerr = FL_STACK_NONE;
	rec->uerr = FL_STACK_NONE;
	if (want_kernel) {
		n = bpf_get_stack(ctx, rec->ips, FL_MAX_STACK_DEPTH * sizeof(__u64), 0);
		if (n > 0) {
			rec->nr_kernel = (__u32)n / sizeof(__u64);
			rec->kerr = 0;
		} else {
			rec->kerr = n < 0 ? (__s32)n : -EFAULT;
		}
	}
	if (want_user) {
		n = bpf_get_stack(ctx, &rec->ips[FL_MAX_STACK_DEPTH],
				  FL_MAX_STACK_DEPTH * sizeof(__u64), BPF_F_USER_STACK);
		if (n > 0) {
			rec->nr_user = (__u32)n / sizeof(__u64);
			rec->uerr = 0;
		} else {
			rec->uerr = n < 0 ? (__s32)n : -EFAULT;
		}
	}
	/*
	 * Waking user space for every record would cost a context switch per
	 * sample; it drains on its own once a second, and is woken early only
	 * when the ring is a quarter full.
	 */
	bpf_ringbuf_submit(rec, bpf_ringbuf_query(&overflow, BPF_RB_AVAIL_DATA) >= overflow_wakeup
					? BPF_RB_FORCE_WAKEUP
					: BPF_RB_NO_WAKEUP);
	count(FL_CNT_OVERFLOW_SENT);
}

/* A stack id, or the reason there is none; true when the sample must travel whole. */
static __always_inline bool stack_id(struct bpf_perf_event_data *ctx, void *map, __u64 flags,
				     __s32 *id, __u32 none_counter)
{
	long ret = bpf_get_stackid(ctx, map, flags);

	*id = (__s32)ret;
	if (ret >= 0)
		return false;
	if (ret == -EEXIST) {
		count(FL_CNT_COLLISION);
		return true;
	}
	if (ret == -ENOMEM) {
		count(FL_CNT_STACKMAP_FULL);
		return true;
	}
	count(none_counter);
	return false;
}

static __always_inline void sample(struct bpf_perf_event_data *ctx, void *stack_map,
				   void *counts_map)
{
	struct fl_stack_key key = {};
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 tid = (__u32)pid_tgid;
	__u64 now = bpf_ktime_get_ns();
	struct fl_stack_val first = {.count = 1, .first_ns = now, .last_ns = now}, *val;
	bool whole = false;
	long err;

	/*
	 * The idle task is pid 0 in the initial namespace and in no other: it is
	 * told by its host pid. With targets, idle time is just another process
	 * we were not asked for.
	 */
	if (tid == 0) {
		if (filter_pids) {
			count(FL_CNT_FILTERED);
			return;
		}
		if (!keep_idle) {
			count(FL_CNT_IDLE);
			return;
		}
	} else if (child_pidns && !ns_ids(pidns_dev, pidns_ino, have_ns_helper, &tgid, &tid)) {
		/* Not one of ours, and a process flamed cannot name: nothing to show. */
		count(filter_pids ? FL_CNT_FILTERED : FL_CNT_OTHER_NS);
		return;
	}
	if (filter_pids && !bpf_map_lookup_elem(&targets, &tgid)) {
		count(FL_CNT_FILTERED);
		return;
	}

	key.tgid = tgid;
	key.tid = per_thread ? tid : 0;
	key.kstack = FL_STACK_NONE;
	key.ustack = FL_STACK_NONE;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	if (want_kernel)
		whole |= stack_id(ctx, stack_map, 0, &key.kstack, FL_CNT_KSTACK_NONE);
	if (want_user)
		whole |=
			stack_id(ctx, stack_map, BPF_F_USER_STACK, &key.ustack, FL_CNT_USTACK_NONE);
	if (whole) {
		send_whole(ctx, tgid, key.tid, now);
		return;
	}

	val = bpf_map_lookup_elem(counts_map, &key);
	if (val) {
		__sync_fetch_and_add(&val->count, 1);
		/* Racing CPUs may leave a time a few ns older: it only bounds the era. */
		if (val->last_ns < now)
			val->last_ns = now;
		return;
	}
	err = bpf_map_update_elem(counts_map, &key, &first, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* Another CPU inserted the same key first. */
		val = bpf_map_lookup_elem(counts_map, &key);
		if (val) {
			__sync_fetch_and_add(&val->count, 1);
			if (val->last_ns < now)
				val->last_ns = now;
		}
		return;
	}
	if (err) {
		count(FL_CNT_COUNTS_FULL);
		send_whole(ctx, tgid, key.tid, now);
	}
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	/*
	 * Counted on entry and exit: user space sees which CPUs are inside (see
	 * two_sets). The entry count is an atomic add, ordered before the load
	 * of active_set (a locked instruction on x86) as user space orders its
	 * store of active_set before reading the counts.
	 */
	__u32 idx = FL_CNT_SAMPLES;
	__u64 *entered = bpf_map_lookup_elem(&counters, &idx);

	if (entered)
		__sync_fetch_and_add(entered, 1);
	if (two_sets && *(volatile __u32 *)&active_set)
		sample(ctx, &stacks1, &counts1);
	else
		sample(ctx, &stacks, &counts);
	count(FL_CNT_DONE);
	return 0;
}

/*
 * With follow_children, a process forked by a kept process is kept too.
 * Targets are pids of flamed's namespace: so are the parent's and child's.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid, ctgid;
	__u8 one = 1;

	if (!fork_tgids(parent, child, child_pidns, pidns_ino, &ptgid, &ctgid))
		return 0;
	if (!bpf_map_lookup_elem(&targets, &ptgid))
		return 0;
	bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
