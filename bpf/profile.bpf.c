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
/* --call-graph kernel-dwarf: user stacks are walked here (unwind.bpf.h), not by bpf_get_stackid(). */
const volatile bool kdwarf = false;
const volatile bool have_ns_helper = true;
/* Bytes waiting in the overflow ring before user space is woken: a quarter of it. */
const volatile __u64 overflow_wakeup = 2 << 20;
/*
 * Two sets of stack and counts maps. Samples go to the set active_set
 * names; every second user space flips it, waits for the programs still
 * using the other set to finish, then reads and empties that set at
 * leisure (and a snapshot of the daemon does the same).
 */
__u32 active_set = 0;
/*
 * --per-cgroup: keys carry the task's cgroup v2 id. --cgroup: only tasks in
 * one of nr_cgroups cgroups, or below one, are sampled: the ancestor of the
 * task's cgroup at the target's level is the target itself.
 */
const volatile bool per_cgroup = false;
const volatile __u32 nr_cgroups = 0;
const volatile __u64 cgroup_ids[FL_MAX_CGROUP_TARGETS] = {};
const volatile __u32 cgroup_levels[FL_MAX_CGROUP_TARGETS] = {};

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

/*
 * Processes to keep when filter_pids is set (value unused); one entry
 * otherwise. Not preallocated: a few are written, and only in the hundreds
 * of thousands would preallocation pay for its set-up cost.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
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

/* A global function: checked once, where inlined it was checked on every path through each of its calls. */
__noinline int count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &idx);

	/* Per-CPU slot: no other CPU writes it, and a perf_event program does not nest on one CPU. */
	if (c)
		*c += 1;
	return 0;
}

#include "unwind.bpf.h"
#include "python.bpf.h"

/* Set by user space: slots of pystacks (a power of two) for the ids. */
const volatile __u32 pystack_slots = 1;

/* id -> a sample's Python frames (python.bpf.h), zero-terminated as ustacks' stacks. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct uw_stack);
} pystacks SEC(".maps"), pystacks1 SEC(".maps");

_Static_assert(sizeof(struct py_frames) == sizeof(struct uw_stack), "one layout of stacks");

/* Whether the current task is in one of the --cgroup targets or below one. */
static __always_inline bool in_cgroups(void)
{
	for (__u32 i = 0; i < FL_MAX_CGROUP_TARGETS; i++) {
		if (i >= nr_cgroups)
			break;
		if (bpf_get_current_ancestor_cgroup_id(cgroup_levels[i]) == cgroup_ids[i])
			return true;
	}
	return false;
}

/* The cgroup a key or record carries: the task's with per_cgroup, else 0 (one key for all). */
static __always_inline __u64 key_cgroup(void)
{
	return per_cgroup ? bpf_get_current_cgroup_id() : 0;
}

/* task_struct's bit for a task inside execve() (LSMs read it). */
struct task_struct___exec {
	unsigned int in_execve : 1;
} __attribute__((preserve_access_index));

/*
 * Whether the task, sampled in the kernel, is in execve() past its point of
 * no return: its old image's memory is gone, and the user registers saved
 * when it entered the kernel are the old image's until the new one's start
 * is set. It has no user stack then; walking one would read the new
 * image's memory by the old one's rules: [unwind failed] under every exec,
 * a tenth of a spawning loop's samples. Told by the new memory's start of
 * code, set just before the new start (mm->start_code: 0 until then, and
 * never 0 in an image's memory). Before that point the old image is whole,
 * and walked as any other. (Its lock is no help: execve() holds it while it
 * maps the new image.) A global function, checked once.
 */
__noinline int exec_replaced(struct bpf_perf_event_data *ctx)
{
	struct task_struct___exec *t = (void *)bpf_get_current_task();
	struct task_struct *task = (struct task_struct *)t;

	if (*(volatile unsigned long *)&ctx->regs.cs & 3)
		return false;
	if (!bpf_core_field_exists(t->in_execve) || !BPF_CORE_READ_BITFIELD_PROBED(t, in_execve))
		return false;
	return BPF_CORE_READ(task, mm) && !BPF_CORE_READ(task, mm, start_code);
}

/*
 * Sends the sample whole through the overflow ring. uwalked: the user stack
 * walked by the kernel-dwarf walker (its scratch stack), else NULL.
 */
static __always_inline void send_whole(struct bpf_perf_event_data *ctx, __u32 tgid, __u32 tid,
				       __u64 now, const struct uw_stack *uwalked, __u32 nr_walked,
				       const struct uw_stack *py, __u32 nr_py)
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
	rec->cgroup_id = key_cgroup();
	rec->nr_kernel = 0;
	rec->nr_user = 0;
	rec->kerr = FL_STACK_NONE;
	rec->uerr = FL_STACK_NONE;
	rec->nr_py = 0;
	if (py && nr_py && !bpf_probe_read_kernel(rec->py, sizeof(rec->py), py))
		rec->nr_py = nr_py;
	if (want_kernel) {
		n = bpf_get_stack(ctx, rec->ips, FL_MAX_STACK_DEPTH * sizeof(__u64), 0);
		if (n > 0) {
			rec->nr_kernel = (__u32)n / sizeof(__u64);
			rec->kerr = 0;
		} else {
			rec->kerr = n < 0 ? (__s32)n : -EFAULT;
		}
	}
	if (want_user && uwalked) {
		if (!bpf_probe_read_kernel(&rec->ips[FL_MAX_STACK_DEPTH], sizeof(*uwalked),
					   uwalked) &&
		    nr_walked) {
			rec->nr_user = nr_walked;
			rec->uerr = 0;
		} else {
			rec->uerr = -EFAULT;
		}
	} else if (want_user && !exec_replaced(ctx)) {
		/* (No stack walked: frame pointers, or none to walk.) */
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

/* The user registers of the current task: where the sample interrupted it, or its entry to the kernel. */
static __always_inline bool user_regs(struct bpf_perf_event_data *ctx, struct uw_walk *w)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct pt_regs regs;

	/*
	 * A task without memory (one exiting, past exit_mm()) has no user
	 * stack left to read: none, as --call-graph dwarf finds, rather than a
	 * walk that stops at once.
	 */
	if (!BPF_CORE_READ(task, mm))
		return false;
	/* Volatile: each a load at a constant offset from ctx, the only access the verifier takes. */
	if (*(volatile unsigned long *)&ctx->regs.cs & 3) {
		w->pc = *(volatile unsigned long *)&ctx->regs.rip;
		w->sp = *(volatile unsigned long *)&ctx->regs.rsp;
		w->bp = *(volatile unsigned long *)&ctx->regs.rbp;
		w->bx = *(volatile unsigned long *)&ctx->regs.rbx;
	} else {
		/* In the kernel: the registers saved when the task entered it (zero for a kernel thread). */
		void *saved = (void *)bpf_task_pt_regs(bpf_get_current_task_btf());

		if (!saved || bpf_probe_read_kernel(&regs, sizeof(regs), saved))
			return false;
		w->pc = regs.rip;
		w->sp = regs.rsp;
		w->bp = regs.rbp;
		w->bx = regs.rbx;
	}
	return w->pc != 0 && w->sp != 0;
}

/*
 * The two slots a walked stack may take, from its hash (uw_mix() of its
 * frames): ids below ustack_slots.
 */
static __always_inline __u32 ustack_id(__u64 h, __u32 slots)
{
	return (__u32)(h ^ (h >> 32)) & (slots - 1);
}

static __always_inline __u32 ustack_id2(__u64 h, __u32 slots)
{
	return (__u32)((h * 0xff51afd7ed558ccdULL) >> 32) & (slots - 1);
}

/*
 * Whether the walked stacks a and b are one: 1, else 0. A global function,
 * checked once by the verifier (its loop of 127 steps was a third of what
 * it checked when inlined in each path reaching it).
 */
__noinline int uw_same_stack(const struct uw_stack *a, const struct uw_stack *b)
{
	if (!a || !b)
		return 0;
	for (int i = 0; i < FL_MAX_STACK_DEPTH; i++) {
		if (a->ips[i] != b->ips[i])
			return 0;
		if (!a->ips[i])
			break;
	}
	return 1;
}

/* Zeroes a stack: a global function, its 128 stores checked once and not on every path. */
__noinline int uw_clear(struct uw_stack *s)
{
	if (s)
		__builtin_memset(s, 0, sizeof(*s));
	return 0;
}

/*
 * kernel-dwarf: walks the user stack, stores it in the ustacks map and sets
 * *id as bpf_get_stackid() would; WALKED_WHOLE when the sample must travel
 * whole (a hash collision, a full map), with the walk in *walked and
 * *nr_walked; WALKED_COPIED when a table it needed was not loaded and the
 * sample went to user space as a stack copy.
 */
/* Samples whose walk needed a table not loaded yet, copied whole for user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} ucopies SEC(".maps");

/* Bytes waiting in the copies' ring before user space is woken (set by user space). */
const volatile __u64 ucopy_wakeup = 2 << 20;
/* User space can unwind copies (it has an unwinder): else none is sent. */
const volatile bool want_copies = false;

/*
 * Sends the sample as --call-graph dwarf would: the user registers (the
 * task's pt_regs: where an interrupt from user mode or the entry to the
 * kernel saved them) and a copy of its user stack, read in chunks up to
 * the first that cannot be read (the top of the stack). When the walk w
 * met the missing table frames up, the frames it walked to there (in
 * walked), and that frame's registers and stack instead. False when the
 * ring is full.
 */
static __always_inline bool send_copy(struct bpf_perf_event_data *ctx, __u32 tgid, __u32 tid,
				      __u64 now, const struct uw_stack *py, __u32 nr_py,
				      const struct uw_walk *w, const struct uw_stack *walked)
{
	void *saved = (void *)bpf_task_pt_regs(bpf_get_current_task_btf());
	struct fl_ucopy_rec *rec;
	__u64 sp;
	long n;

	if (!saved)
		return false;
	rec = bpf_ringbuf_reserve(&ucopies, sizeof(*rec), 0);
	if (!rec)
		return false;
	rec->time = now;
	rec->tgid = tgid;
	rec->tid = tid;
	bpf_get_current_comm(rec->comm, sizeof(rec->comm));
	rec->cgroup_id = key_cgroup();
	rec->nr_kernel = 0;
	rec->kerr = FL_STACK_NONE;
	rec->nr_py = 0;
	if (py && nr_py && !bpf_probe_read_kernel(rec->py, sizeof(rec->py), py))
		rec->nr_py = nr_py;
	if (want_kernel) {
		n = bpf_get_stack(ctx, rec->kips, sizeof(rec->kips), 0);
		rec->kerr = n > 0 ? 0 : n < 0 ? (__s32)n : -EFAULT;
		rec->nr_kernel = n > 0 ? (__u32)n / sizeof(__u64) : 0;
	}
	rec->stack_size = 0;
	if (bpf_probe_read_kernel(rec->regs, sizeof(rec->regs), saved)) {
		bpf_ringbuf_discard(rec, 0);
		return false;
	}
	rec->nr_walked = 0;
	rec->walked_flags = 0;
	/* pt_regs: r15, r14, r13, r12, rbp (4), rbx (5) ... rip (16), cs, eflags, rsp (19), ss */
	if (w->miss_nr && w->miss_nr < FL_MAX_STACK_DEPTH &&
	    !bpf_probe_read_kernel(rec->walked, sizeof(rec->walked), walked->ips)) {
		rec->nr_walked = w->miss_nr;
		rec->walked_flags = w->miss_flags;
		rec->regs[4] = w->miss_bp;
		rec->regs[5] = w->miss_bx;
		rec->regs[16] = w->miss_pc;
		rec->regs[19] = w->miss_sp;
	}
	sp = rec->regs[19];
	for (int i = 0; i < FL_UCOPY_BYTES / FL_UCOPY_CHUNK; i++) {
		if (bpf_probe_read_user(&rec->stack[i * FL_UCOPY_CHUNK], FL_UCOPY_CHUNK,
					(const void *)(sp + i * FL_UCOPY_CHUNK)))
			break;
		rec->stack_size += FL_UCOPY_CHUNK;
	}
	bpf_ringbuf_submit(rec, bpf_ringbuf_query(&ucopies, BPF_RB_AVAIL_DATA) >= ucopy_wakeup
					? BPF_RB_FORCE_WAKEUP
					: BPF_RB_NO_WAKEUP);
	return true;
}

enum walked_how {
	WALKED_COUNTED, /* *id names the walked stack (or why there is none) */
	WALKED_WHOLE,	/* count it through the overflow ring (a collision, a full map) */
	WALKED_COPIED,	/* sent as a copy for user space: nothing more to do */
};

/*
 * The maps of a set: each call names set 0's map or set 1's, so that the
 * code around it is checked once for both sets (sample() is one global
 * function, not an inlined copy per set).
 */
static __always_inline void *set_lookup(__u32 set, void *m0, void *m1, const void *key)
{
	return set ? bpf_map_lookup_elem(m1, key) : bpf_map_lookup_elem(m0, key);
}

static __always_inline long set_update(__u32 set, void *m0, void *m1, const void *key,
				       const void *val, __u64 flags)
{
	return set ? bpf_map_update_elem(m1, key, val, flags)
		   : bpf_map_update_elem(m0, key, val, flags);
}

/*
 * Puts the stack out (of hash h) in the map of set (m0 or m1, slots ids) and sets *id to it: in
 * the first of its two slots, else the second: found there (most
 * samples: a stack seen before), or put in the first free one. Two slots
 * taken by other stacks (or a full map): WALKED_WHOLE, it travels whole.
 */
static __always_inline enum walked_how store_stack(__u32 set, void *m0, void *m1, __u32 slots,
						   struct uw_stack *out, __u64 h, __s32 *id)
{
	struct uw_stack *old;
	__u32 slot;
	long err;

	for (int i = 0; i < 2; i++) {
		slot = i ? ustack_id2(h, slots) : ustack_id(h, slots);
		*id = (__s32)slot;
		old = set_lookup(set, m0, m1, &slot);
		if (old) {
			if (uw_same_stack(out, old))
				return WALKED_COUNTED;
			continue;
		}
		err = set_update(set, m0, m1, &slot, out, BPF_NOEXIST);
		if (!err)
			return WALKED_COUNTED;
		/* Another CPU took the slot a moment ago: its stack may be this one. */
		if (err == -EEXIST) {
			old = set_lookup(set, m0, m1, &slot);
			if (old && uw_same_stack(out, old))
				return WALKED_COUNTED;
			continue;
		}
		count(FL_CNT_STACKMAP_FULL);
		return WALKED_WHOLE;
	}
	count(FL_CNT_COLLISION);
	return WALKED_WHOLE;
}

static __always_inline enum walked_how walk_user(struct bpf_perf_event_data *ctx, __u32 tgid,
						 __u32 tid, __u64 now, __u32 set, __s32 *id,
						 struct uw_stack **walked, __u32 *nr_walked,
						 const struct uw_stack *py, __u32 nr_py)
{
	struct uw_walk w = {.tgid = tgid, .exact = true};
	__u32 zero = 0, n;
	struct uw_stack *out = bpf_map_lookup_elem(&uw_scratch, &zero);

	if (!out)
		return WALKED_COUNTED;
	if (!user_regs(ctx, &w)) {
		*id = -EFAULT;
		count(FL_CNT_USTACK_NONE);
		return WALKED_COUNTED;
	}
	/* Zero-terminated as a stack map's entries are: the frames not written stay 0. */
	uw_clear(out);
	w.hash = UW_HASH_SEED;
	uw_walk_stack(&w);
	n = w.nr;
	if (w.end == UW_STOPPED && n < FL_MAX_STACK_DEPTH) {
		out->ips[n] = FL_UW_STOPPED_IP;
		w.hash = uw_mix(w.hash, FL_UW_STOPPED_IP);
		n++;
	}
	count(FL_CNT_UW_WALKED);
	if (!w.how)
		count(FL_CNT_UW_TABLES);
	if (w.how & UW_FP_NOTABLE)
		count(FL_CNT_UW_FP_NOTABLE);
	if (w.how & UW_FP_NOCFI)
		count(FL_CNT_UW_FP_NOCFI);
	/*
	 * A table was missing: frame pointers are guesswork there, a stack
	 * copy unwound in user space is not. How the copy's unwinding ends is
	 * user space's to count; the walk's end only for the walks kept.
	 */
	if ((w.how & UW_FP_NOTABLE) && want_copies) {
		if (send_copy(ctx, tgid, tid, now, py, nr_py, &w, out)) {
			count(FL_CNT_UW_COPIED);
			return WALKED_COPIED;
		}
		count(FL_CNT_UW_COPY_FULL);
	}
	count(w.end == UW_COMPLETE  ? FL_CNT_UW_COMPLETE
	      : w.end == UW_STOPPED ? FL_CNT_UW_STOPPED
				    : FL_CNT_UW_TRUNCATED);
	if (!n) {
		*id = -EFAULT;
		count(FL_CNT_USTACK_NONE);
		return WALKED_COUNTED;
	}
	*walked = out;
	*nr_walked = n;
	return store_stack(set, &ustacks, &ustacks1, ustack_slots, out, w.hash, id);
}

/* A stack id, or the reason there is none; true when the sample must travel whole. */
static __always_inline bool stack_id(struct bpf_perf_event_data *ctx, __u32 set, __u64 flags,
				     __s32 *id, __u32 none_counter)
{
	long ret =
		set ? bpf_get_stackid(ctx, &stacks1, flags) : bpf_get_stackid(ctx, &stacks, flags);

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

/*
 * One sample, into the maps of set (active_set when it began). A global
 * function: the verifier checks it once, for both sets, where an inlined
 * copy per set was checked twice (a third of the program's load time).
 */
__noinline int sample(struct bpf_perf_event_data *ctx, __u32 set)
{
	struct uw_stack *walked = NULL, *py = NULL;
	__u32 nr_walked = 0, nr_py = 0;
	struct fl_stack_key key = {};
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 tid = (__u32)pid_tgid;
	__u64 now = bpf_ktime_get_ns();
	struct fl_stack_val first = {.count = 1, .first_ns = now, .last_ns = now}, *val;
	bool whole = false;
	long err;

	/* Outside the --cgroup targets (the idle task is in the root cgroup). */
	if (nr_cgroups && !in_cgroups()) {
		count(FL_CNT_FILTERED);
		return 0;
	}
	/*
	 * The idle task is pid 0 in the initial namespace and in no other: it is
	 * told by its host pid. With targets, idle time is just another process
	 * we were not asked for.
	 */
	if (tid == 0) {
		if (filter_pids) {
			count(FL_CNT_FILTERED);
			return 0;
		}
		if (!keep_idle) {
			count(FL_CNT_IDLE);
			return 0;
		}
	} else if (child_pidns && !ns_ids(pidns_dev, pidns_ino, have_ns_helper, &tgid, &tid)) {
		/* Not one of ours, and a process flamed cannot name: nothing to show. */
		count(filter_pids ? FL_CNT_FILTERED : FL_CNT_OTHER_NS);
		return 0;
	}
	if (filter_pids && !bpf_map_lookup_elem(&targets, &tgid)) {
		count(FL_CNT_FILTERED);
		return 0;
	}

	key.tgid = tgid;
	key.tid = per_thread ? tid : 0;
	key.kstack = FL_STACK_NONE;
	key.ustack = FL_STACK_NONE;
	key.pystack = FL_STACK_NONE;
	key.cgroup_id = key_cgroup();
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	if (want_kernel)
		whole |= stack_id(ctx, set, 0, &key.kstack, FL_CNT_KSTACK_NONE);
	if (want_user && want_python && tid) {
		__u32 zero = 0;
		struct py_scratch *sc;
		int got = py_walk(tgid, (__u32)pid_tgid);

		sc = got > 0 ? bpf_map_lookup_elem(&py_scratch, &zero) : NULL;
		if (sc) {
			nr_py = (__u32)got;
			py = (struct uw_stack *)&sc->frames;
			count(FL_CNT_PY_WALKED);
			whole |= store_stack(set, &pystacks, &pystacks1, pystack_slots, py,
					     sc->hash, &key.pystack) == WALKED_WHOLE;
		}
	}
	if (want_user && exec_replaced(ctx)) {
		key.ustack = -EFAULT;
		count(FL_CNT_USTACK_NONE);
	} else if (want_user && kdwarf) {
		enum walked_how how = walk_user(ctx, tgid, key.tid, now, set, &key.ustack, &walked,
						&nr_walked, py, nr_py);

		if (how == WALKED_COPIED)
			return 0;
		whole |= how == WALKED_WHOLE;
	} else if (want_user) {
		whole |= stack_id(ctx, set, BPF_F_USER_STACK, &key.ustack, FL_CNT_USTACK_NONE);
	}
	if (whole) {
		send_whole(ctx, tgid, key.tid, now, walked, nr_walked, py, nr_py);
		return 0;
	}

	val = set_lookup(set, &counts, &counts1, &key);
	if (val) {
		__sync_fetch_and_add(&val->count, 1);
		/* Racing CPUs may leave a time a few ns older: it only bounds the era. */
		if (val->last_ns < now)
			val->last_ns = now;
		return 0;
	}
	err = set_update(set, &counts, &counts1, &key, &first, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* Another CPU inserted the same key first. */
		val = set_lookup(set, &counts, &counts1, &key);
		if (val) {
			__sync_fetch_and_add(&val->count, 1);
			if (val->last_ns < now)
				val->last_ns = now;
		}
		return 0;
	}
	if (err) {
		count(FL_CNT_COUNTS_FULL);
		send_whole(ctx, tgid, key.tid, now, walked, nr_walked, py, nr_py);
	}
	return 0;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx)
{
	/*
	 * Counted on entry and exit: user space sees which CPUs are inside (see
	 * active_set). The entry count is an atomic add, ordered before the load
	 * of active_set (a locked instruction on x86) as user space orders its
	 * store of active_set before reading the counts.
	 */
	__u32 idx = FL_CNT_SAMPLES;
	__u64 *entered = bpf_map_lookup_elem(&counters, &idx);

	if (entered)
		__sync_fetch_and_add(entered, 1);
	sample(ctx, *(volatile __u32 *)&active_set ? 1 : 0);
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

/*
 * kernel-dwarf: an exec replaces every mapping of the process. Its entry in
 * procs goes at once (its samples use frame pointers until user space has
 * read the new mappings), rather than walking new code with the old tables.
 */
/* The mapping of addr in task p's new image into its uw_kmaps, if its file has an id. */
static __always_inline void uw_exec_map(struct task_struct *p, __u32 tgid, __u64 addr)
{
	struct fl_uw_map found = {};

	if (!addr)
		return;
	bpf_find_vma(p, addr, vma_of, &found, 0);
	if (found.file_id)
		kmaps_add(tgid, &found);
}

/* Process tgid's mappings out of the walker's maps (an exec, an exit). */
static __always_inline void uw_forget(__u32 tgid)
{
	bpf_map_delete_elem(&procs_few, &tgid);
	bpf_map_delete_elem(&procs, &tgid);
	bpf_map_delete_elem(&uw_kmaps, &tgid);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(uw_on_exec, struct task_struct *p)
{
	__u32 tgid = task_tgid(p, child_pidns, pidns_ino);
	struct pt_regs *regs;
	__u64 ip = 0, asked;

	if (!tgid)
		return 0;
	uw_forget(tgid);
	/* Its first miss asks at once, even if the old image had asked (and was not answered). */
	asked = tgid;
	bpf_map_delete_elem(&uw_asked, &asked);
	/*
	 * The new image's first mappings, known to the kernel now: the
	 * program's code and the dynamic linker (where the task will start),
	 * if their files have ids (run or mapped before). Its first samples,
	 * before user space has read its mappings, are walked through them
	 * instead of travelling as stack copies. (In this context the mm is
	 * not locked: bpf_find_vma() answers each call.)
	 */
	if (p->mm)
		uw_exec_map(p, tgid, BPF_CORE_READ(p, mm, start_code));
	regs = (struct pt_regs *)bpf_task_pt_regs(p);
	if (regs && !bpf_probe_read_kernel(&ip, sizeof(ip), &regs->rip))
		uw_exec_map(p, tgid, ip);
	return 0;
}

/*
 * kernel-dwarf: a process's entries go when it exits (its leader thread:
 * should that end first, the other threads' samples ask again). User space
 * deletes only what it pushed (ktables.c): most processes of a busy
 * machine fork, exec and exit between two of its reads, and were never
 * pushed; the copy a fork made of their parent's is deleted here or at
 * their exec, without two bpf calls each from user space.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(uw_on_exit, struct task_struct *p)
{
	__u32 tgid;

	if (p->pid != p->tgid)
		return 0;
	tgid = task_tgid(p, child_pidns, pidns_ino);
	if (tgid)
		uw_forget(tgid);
	return 0;
}

/* kernel-dwarf: a forked child has its parent's mappings; it need not wait for user space. */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(uw_on_fork, struct task_struct *parent, struct task_struct *child)
{
	struct fl_uw_proc_few *pf;
	struct fl_uw_proc *pp;
	__u32 ptgid, ctgid;

	if (!fork_tgids(parent, child, child_pidns, pidns_ino, &ptgid, &ctgid))
		return 0;
	pf = bpf_map_lookup_elem(&procs_few, &ptgid);
	if (pf) {
		bpf_map_update_elem(&procs_few, &ctgid, pf, BPF_ANY);
		return 0;
	}
	pp = bpf_map_lookup_elem(&procs, &ptgid);
	if (pp)
		bpf_map_update_elem(&procs, &ctgid, pp, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
