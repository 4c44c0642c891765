// SPDX-License-Identifier: GPL-2.0-or-later
/* The BPF sampler backend: loads bpf/profile.bpf.c, attaches it per CPU, drains its maps. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/sampling/perfbuf.h"
#include "flamed/profile_abi.h"
#include "flamed/python_abi.h"
#include "flamed/sampling/stackagg.h"
#include "sampling/bpfring.h"
#include "sampling/perf_records.h"
#include "profile.skel.h"
#include "sampling/sampler_impl.h"
#include "common/u32map.h"
#include "flamed/unwind_abi.h"
#include "unwinding/ktables.h"
#include "flamed/unwinding/unwind.h"

_Static_assert(FL_UW_STOPPED_IP == FL_UIP_FAILED, "a stopped walk ends as a failed unwinding");

/* The most the sizes from the rate go to (size_maps). */
#define MAX_STACK_STORAGE 32768
#define MAX_STACKS 65536

/* A stack fetched from the stack map once, shared by every key naming it. */
struct cached_stack {
	uint32_t nr;
	uint64_t ips[];
};

struct fl_sampler_bpf {
	struct fl_sampler base;
	struct profile_bpf *skel;
	/*
	 * One cpu-clock event per CPU, each with a one-page ring: the program
	 * takes the samples, so the kernel writes only its own notes there
	 * (throttling).
	 */
	struct fl_cpu_events *events;
	uint64_t throttled;	 /* PERF_RECORD_THROTTLE notes (and notes lost) */
	struct bpf_link **links; /* one per event */
	struct bpf_link *fork_link;
	struct fl_bpfring *rb; /* overflow, uw_wants, py_wants, ucopies */
	/*
	 * Samples counted in user space: those sent whole through the overflow
	 * ring, the stack copies unwound here, and what each gather moved out
	 * of the kernel's maps.
	 */
	struct fl_stackagg *held;
	uint64_t gathers;	      /* flips of the sets that moved the old one here */
	uint64_t gathered;	      /* counts-map entries they moved */
	uint64_t take_examined;	      /* stacks take() looked at */
	uint32_t depth;		      /* frames per stack-map entry */
	uint32_t stack_slots;	      /* stack ids are below this */
	uint32_t ustack_slots;	      /* ... and ids of walked user stacks (kernel-dwarf) */
	uint32_t pystack_slots;	      /* ... and of Python stacks (python) */
	uint32_t nr_stacks;	      /* entries of each counts map */
	/*
	 * Whether the kernel looks up and deletes a stack-map entry in one
	 * call (Linux 6.13 and later): 0 not known yet, 1 yes, -1 no.
	 */
	int stack_lookup_delete;
	bool python;
	int nr_possible;
	uint64_t truncated; /* samples whose stack filled a whole stack-map entry, once counted */
	uint32_t active;    /* the set of maps samples go to */
	bool snapshots;	    /* opts.snapshots: snapshot() is allowed */
	uint64_t (*era)(void *ctx, uint32_t pid, uint64_t time);
	void *era_ctx;
	bool follow_children;
	bool filter_pids; /* targets: only their samples are kept */
	bool started;
	/* kernel-dwarf: the tables, and the programs following execs and forks. */
	struct fl_ktables *kt;
	/* kernel-dwarf: stack copies of samples whose tables were not loaded, unwound here. */
	struct fl_unwinder *unwinder;
	uint64_t uc_outcomes[FL_UNWIND_OUTCOME__MAX];
	uint64_t uc_frames; /* in the stack copies unwound */
	/* Stack copies held until the tables they lacked are built (kernel-dwarf). */
	struct fl_ucopy_rec *pending;
	size_t nr_pending;
	bool copy_final, copy_missed; /* unwind_copy() and unwind_row() */
	uint64_t uc_rows_retried;     /* row steps of unwinds tried again later */
	uint64_t uc_rows0;  /* the unwinder's row steps when we began (it is the caller's) */
	struct bpf_link *uw_exec_link, *uw_fork_link, *uw_exit_link;
	struct bpf_link *py_exec_link;
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *buf = NULL;

	(void)level;
	/* Whole: a verifier log is one message of many lines, and its end says what failed. */
	if (vasprintf(&buf, fmt, ap) < 0)
		return 0;
	fl_pr_debug("libbpf: %s", buf);
	free(buf);
	return 0;
}

static int read_sysctl_u32(const char *path, uint32_t *val)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	unsigned long v;

	if (!f)
		return -errno;
	if (fscanf(f, "%lu", &v) != 1 || v > UINT32_MAX)
		return -EINVAL;
	*val = (uint32_t)v;
	return 0;
}

static void bpf_free(struct fl_sampler *base)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;

	if (s->links)
		for (size_t i = 0; i < fl_cpu_events__nr(s->events); i++)
			bpf_link__destroy(s->links[i]);
	bpf_link__destroy(s->fork_link);
	bpf_link__destroy(s->uw_exec_link);
	bpf_link__destroy(s->uw_fork_link);
	bpf_link__destroy(s->uw_exit_link);
	bpf_link__destroy(s->py_exec_link);
	fl_cpu_events__free(s->events);
	/* The unwinder is the caller's: it must not step by our tables once they go. */
	if (s->unwinder && s->kt)
		fl_unwinder__set_rows(s->unwinder, NULL, NULL);
	fl_ktables__free(s->kt);
	fl_bpfring__free(s->rb);
	profile_bpf__destroy(s->skel);
	fl_stackagg__free(s->held);
	free(s->pending);
	free(s->links);
	free(s);
}

static uint64_t era_of(const struct fl_sampler_bpf *s, uint32_t pid, uint64_t time)
{
	return s->era ? s->era(s->era_ctx, pid, time) : 0;
}

static int on_overflow(void *ctx, void *data, size_t size)
{
	struct fl_sampler_bpf *s = ctx;
	const struct fl_overflow_rec *rec = data;
	char comm[FL_TASK_COMM_LEN + 1];
	struct fl_raw_stack st = {};

	if (size < sizeof(*rec))
		return 0;
	memcpy(comm, rec->comm, FL_TASK_COMM_LEN);
	comm[FL_TASK_COMM_LEN] = '\0';
	st.pid = rec->tgid;
	st.tid = rec->tid;
	st.comm = comm;
	st.cgroup_id = rec->cgroup_id;
	st.time = era_of(s, rec->tgid, rec->time);
	st.time_first = st.time;
	st.kips = (const uint64_t *)rec->ips;
	st.nr_kips = rec->nr_kernel <= FL_MAX_STACK_DEPTH ? rec->nr_kernel : FL_MAX_STACK_DEPTH;
	st.uips = (const uint64_t *)&rec->ips[FL_MAX_STACK_DEPTH];
	st.nr_uips = rec->nr_user <= FL_MAX_STACK_DEPTH ? rec->nr_user : FL_MAX_STACK_DEPTH;
	st.kerr = rec->kerr == FL_STACK_NONE ? -ENOENT : rec->kerr;
	st.uerr = rec->uerr == FL_STACK_NONE ? -ENOENT : rec->uerr;
	st.pyips = (const uint64_t *)rec->py;
	st.nr_pyips = rec->nr_py <= FL_MAX_STACK_DEPTH ? rec->nr_py : FL_MAX_STACK_DEPTH;
	/* An error here leaves the sample uncounted; the ring callback has no way to report it. */
	if (fl_stackagg__add(s->held, &st, 1) < 0)
		fl_pr_debug("sampler_bpf: out of memory counting an overflow sample\n");
	return 0;
}

static const struct fl_sampler_ops ops;

static const unsigned char ptregs_of_dwarf[FL_UNWIND_NR_REGS] = FL_PTREGS_OF_DWARF;

/*
 * A sample the walker could not finish with tables (one was not loaded
 * yet): unwound here from its stack copy, as --call-graph dwarf does, and
 * counted with the overflow path's samples.
 */
/* Unwinds a stack copy and counts its stack. */
/*
 * Unwinds a stack copy and counts its stack; final: whatever it takes. Else
 * a frame in a window of a big file that is not loaded stops the unwind
 * (the window is queued): false, the copy is to be unwound again later.
 */
static bool unwind_copy(struct fl_sampler_bpf *s, const struct fl_ucopy_rec *rec, bool final)
{
	uint64_t uips[FL_MAX_STACK_DEPTH];
	char comm[FL_TASK_COMM_LEN + 1];
	struct fl_unwind_sample us = {0};
	struct fl_unwind_stats before, after;
	enum fl_unwind_outcome out;
	struct fl_raw_stack st = {0};
	/*
	 * The frames the walker took before the missing table, leaf first (the
	 * program sends fewer than FL_MAX_STACK_DEPTH); the copy is of the rest.
	 */
	size_t walked = rec->nr_walked < FL_MAX_STACK_DEPTH ? rec->nr_walked : FL_MAX_STACK_DEPTH - 1,
	       n;

	memcpy(comm, rec->comm, FL_TASK_COMM_LEN);
	comm[FL_TASK_COMM_LEN] = '\0';
	us.pid = rec->tgid;
	us.time = rec->time;
	for (size_t r = 0; r < FL_UNWIND_NR_REGS; r++)
		us.regs[r] = rec->regs[ptregs_of_dwarf[r]];
	us.stack = rec->stack;
	us.stack_size = rec->stack_size <= FL_UCOPY_BYTES ? rec->stack_size : FL_UCOPY_BYTES;
	us.in_kernel = rec->nr_kernel > 0;
	if (walked) {
		us.valid = 1u << FL_UNWIND_REG_IP | 1u << FL_UNWIND_REG_SP | 1u << FL_UNWIND_REG_BP |
			   (rec->walked_flags & FL_UCOPY_RBX ? 1u << FL_UNWIND_REG_BX : 0);
		us.ra = !(rec->walked_flags & FL_UCOPY_EXACT);
		memcpy(uips, rec->walked, walked * sizeof(uips[0]));
	}
	fl_unwinder__stats(s->unwinder, &before);
	s->copy_final = final;
	s->copy_missed = false;
	n = walked + fl_unwinder__unwind(s->unwinder, &us, uips + walked,
					 FL_MAX_STACK_DEPTH - 1 - walked, &out);
	if (s->copy_missed) {
		/* Not counted: the steps of this try are not those of the copy's unwinding. */
		fl_unwinder__stats(s->unwinder, &after);
		s->uc_rows_retried += after.row_steps - before.row_steps;
		return false;
	}
	s->uc_outcomes[out]++;
	s->uc_frames += n;
	/* Where it stopped early, a marker says so, as in dwarf mode. */
	if (out == FL_UNWIND_TRUNCATED)
		uips[n++] = FL_UIP_TRUNCATED;
	else if (out == FL_UNWIND_FAILED)
		uips[n++] = FL_UIP_FAILED;
	st.pid = rec->tgid;
	st.tid = rec->tid;
	st.comm = comm;
	st.cgroup_id = rec->cgroup_id;
	st.time = era_of(s, rec->tgid, rec->time);
	st.time_first = st.time;
	st.kips = (const uint64_t *)rec->kips;
	st.nr_kips = rec->nr_kernel <= FL_MAX_STACK_DEPTH ? rec->nr_kernel : FL_MAX_STACK_DEPTH;
	st.kerr = rec->kerr == FL_STACK_NONE ? -ENOENT : rec->kerr;
	st.uips = uips;
	st.nr_uips = n;
	st.pyips = (const uint64_t *)rec->py;
	st.nr_pyips = rec->nr_py <= FL_MAX_STACK_DEPTH ? rec->nr_py : FL_MAX_STACK_DEPTH;
	if (fl_stackagg__add(s->held, &st, 1) < 0)
		fl_pr_debug("sampler_bpf: out of memory counting a stack copy\n");
	return true;
}

/*
 * Stack copies wait, up to UCOPY_PENDING of them for at most
 * UCOPY_PENDING_NS, for the tables they lacked (the walker asked for them
 * as it sent the copy; the unwinding asks for the windows of big files its
 * frames reach; a window takes a fraction of a millisecond): they are then
 * unwound by the tables, not by libdw, which reads the file's CFI a second
 * time and costs ten times more a frame (a first lookup in libLLVM: 1 ms).
 */
#define UCOPY_PENDING 256
#define UCOPY_PENDING_NS (200 * 1000000ULL)

/*
 * Unwinds the copies held once the tables are built: all of them (force),
 * else those whose frames have tables, and those held too long.
 */
static void flush_copies(struct fl_sampler_bpf *s, bool force)
{
	struct timespec ts;
	uint64_t now;
	size_t kept = 0;

	if (!s->nr_pending || (!force && fl_ktables__busy(s->kt)))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	for (size_t i = 0; i < s->nr_pending; i++) {
		const struct fl_ucopy_rec *rec = &s->pending[i];

		if (unwind_copy(s, rec, force || now >= rec->time + UCOPY_PENDING_NS))
			continue;
		if (kept != i)
			memcpy(&s->pending[kept], rec, sizeof(*rec));
		kept++;
	}
	s->nr_pending = kept;
}

static int on_ucopy(void *ctx, void *data, size_t size)
{
	struct fl_sampler_bpf *s = ctx;
	const struct fl_ucopy_rec *rec = data;

	if (size < sizeof(*rec) || !s->unwinder)
		return 0;
	if (s->kt && !s->pending)
		s->pending = malloc(UCOPY_PENDING * sizeof(*s->pending));
	if (s->pending && s->nr_pending == UCOPY_PENDING)
		flush_copies(s, true);
	if (s->pending) {
		memcpy(&s->pending[s->nr_pending++], rec, sizeof(*rec));
		return 0;
	}
	unwind_copy(s, rec, true);
	return 0;
}

static int unwind_row(void *ctx, const struct fl_tmap *m, uint64_t off, struct fl_uw_row *row)
{
	struct fl_sampler_bpf *s = ctx;
	int err;

	/* (Anonymous code, a JIT's, never comes here: the unwinder steps it by frame pointers.) */
	err = fl_ktables__row(s->kt, m, off, s->copy_final, row);
	if (!err)
		return 0;
	/*
	 * A table or window not built yet (queued now): this copy waits for
	 * it, unless it has waited enough. A window is then built at once;
	 * libdw only for a file whose table is not built at all.
	 */
	if (err == -EAGAIN && !s->copy_final) {
		s->copy_missed = true;
		return -1;
	}
	return err == -ENODATA ? 2 : 1;
}

/*
 * The walker lacked a file's table (a process's mappings come with the
 * tracker's read, which the same wakeup made the caller do first).
 */
static int on_want(void *ctx, void *data, size_t size)
{
	struct fl_sampler_bpf *s = ctx;
	const struct fl_uw_want *w = data;

	if (size < sizeof(*w))
		return 0;
	/*
	 * A target met before its mappings were known: all its files at once
	 * (a program just started needs its binary, libc and ld.so together).
	 * With every process sampled (-a), only the files the walker asks for
	 * one by one: a busy machine starts many programs, whose other files
	 * (a compiler's LLVM) would cost more to build than they give.
	 */
	if (w->file_id && (w->flags & FL_UW_WANT_WINDOW))
		fl_ktables__want_window(s->kt, w->file_id, w->window);
	else if (w->file_id)
		fl_ktables__want(s->kt, w->file_id, w->window);
	else if (w->tgid && s->filter_pids)
		fl_ktables__want_proc(s->kt, w->tgid);
	return 0;
}

/*
 * In a child pid namespace the program translates pids into it: with the
 * helper made for that where the kernel has it (5.7+), else (and for
 * tasks in namespaces nested in flamed's) by walking the task's pid.
 */
static int set_pidns(struct profile_bpf *skel, const struct fl_sampler_opts *opts)
{
	struct fl_pidns ns;
	int err = sampler_pidns(opts, &ns);

	if (err || ns.initial)
		return err;
	skel->rodata->child_pidns = true;
	skel->rodata->pidns_dev = ns.dev;
	skel->rodata->pidns_ino = ns.ino;
	skel->rodata->have_ns_helper =
		libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_get_ns_current_pid_tgid,
					NULL) == 1;
	fl_pr_debug("sampler_bpf: pid namespace %llu:%llu, %s\n", (unsigned long long)ns.dev,
		    (unsigned long long)ns.ino,
		    skel->rodata->have_ns_helper ? "bpf_get_ns_current_pid_tgid"
						 : "no bpf_get_ns_current_pid_tgid: pid walk");
	return 0;
}

_Static_assert(FL_MAX_CGROUP_TARGETS == FL_CGROUP_MAX_TARGETS, "one limit of --cgroup targets");

/*
 * --per-cgroup and --cgroup: the program reads the task's cgroup itself,
 * with helpers a kernel may not give perf_event programs (one built without
 * cgroups, an old one): -EOPNOTSUPP then, and the caller may try the ring
 * backend.
 */
static int set_cgroups(struct profile_bpf *skel, const struct fl_sampler_opts *opts)
{
	if (opts->sz < sizeof(*opts))
		return 0;
	if (opts->nr_cgroups > FL_MAX_CGROUP_TARGETS || (opts->nr_cgroups && !opts->cgroups))
		return -EINVAL;
	if (opts->per_cgroup &&
	    libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_get_current_cgroup_id,
				    NULL) != 1)
		return -EOPNOTSUPP;
	if (opts->nr_cgroups &&
	    libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT,
				    BPF_FUNC_get_current_ancestor_cgroup_id, NULL) != 1)
		return -EOPNOTSUPP;
	skel->rodata->per_cgroup = opts->per_cgroup;
	skel->rodata->nr_cgroups = (__u32)opts->nr_cgroups;
	for (size_t i = 0; i < opts->nr_cgroups; i++) {
		skel->rodata->cgroup_ids[i] = opts->cgroups[i].id;
		skel->rodata->cgroup_levels[i] = opts->cgroups[i].level;
	}
	return 0;
}

/* v rounded up to a power of two, within [lo, hi] (both powers of two). */
static uint32_t pow2_within(uint64_t v, uint32_t lo, uint32_t hi)
{
	uint32_t p = lo;

	while (p < v && p < hi)
		p <<= 1;
	return p;
}

/*
 * Map sizes from the samples of a second: each tick empties the set of maps
 * the programs wrote during the second before (bpf_gather), so a set holds
 * that much, whatever the recording's length. Every slot is depth x 8
 * bytes (1 KiB) of kernel memory, twice (two sets), and allocating it is
 * most of what the set-up costs (3.4 ms a MiB on a VM).
 *  - With frame pointers the stack map holds user and kernel stacks: eight
 *    slots per sample of a second. A new stack finds its hash slot taken
 *    (and travels whole through the overflow ring) at about the share of
 *    slots in use, at most 1/8 when every sample's stack is new.
 *  - With kernel-dwarf it holds kernel stacks only, fewer and more often
 *    the same: four slots per sample. The walked user stacks have a map of
 *    their own, two entries per sample, their ids in eight times as many
 *    slots (two tried per stack); Python stacks a quarter of that.
 *  - Counts: four entries per sample of a second.
 * At 999 Hz on 2 CPUs, kernel-dwarf: 8 MiB of stack map and 4 MiB of user
 * stacks per set; 1 MiB each at 99 Hz.
 *
 * The two rings are in flamed's RSS whole, twice over (the kernel maps
 * their pages when user space maps them, and the data pages twice, for
 * records that wrap), so they are sized by need. User space is woken when
 * one is a quarter full.
 *  - The overflow ring takes the samples whose stack found no room (the
 *    collisions above): a quarter of a second of every sample overflowing,
 *    256 KiB at 99 Hz on 2 CPUs, 2 MiB at 999 Hz, 8 MiB at 4999 Hz.
 *  - kernel-dwarf's stack copies (18.6 KiB each) are made for the samples of
 *    code whose unwind table is not loaded yet, a burst when programs
 *    start: a sixteenth of a second of every sample copied, 1 MiB at 99 Hz,
 *    4 MiB at 999 Hz, 8 MiB at most. Past it, samples are walked with frame
 *    pointers there, and counted.
 */
struct map_sizes {
	uint32_t storage;  /* stack-map slots */
	uint32_t ustorage; /* walked user stacks (kernel-dwarf) */
	uint32_t nr_stacks, ring_bytes, ucopy_bytes;
};

static void size_maps(const struct fl_sampler_opts *o, size_t nr_cpus, bool kdwarf,
		      struct map_sizes *ms)
{
	uint64_t per_s = o->freq * (uint64_t)nr_cpus;

	if (kdwarf)
		ms->storage = pow2_within(per_s * 4, 1024, MAX_STACK_STORAGE / 2);
	else
		ms->storage = pow2_within(per_s * 8, 4096, MAX_STACK_STORAGE);
	ms->ustorage = pow2_within(per_s * 2, 1024, MAX_STACK_STORAGE / 2);
	if (o->stack_storage_size)
		ms->storage = ms->ustorage = o->stack_storage_size;
	ms->nr_stacks = o->max_stacks ?: pow2_within(per_s * 4, 4096, MAX_STACKS);
	ms->ring_bytes =
		pow2_within(per_s * sizeof(struct fl_overflow_rec) / 4, 256u << 10, 64u << 20);
	ms->ucopy_bytes = pow2_within(per_s * sizeof(struct fl_ucopy_rec) / 16, 1u << 20, 8u << 20);
}

/* The CPUs that may be sampled: those present (online or to come), else those online now. */
static size_t sampled_cpus(const struct fl_cpu_events *ev)
{
	_cleanup_free_ int *cpus = NULL;
	int n = fl_present_cpus(&cpus);

	return n > 0 && (size_t)n <= fl_cpu_events__nr(ev) ? (size_t)n
							   : fl_cpu_events__nr_opened(ev);
}

/*
 * -v: how much of the program the verifier walked (bpf_prog_info's
 * verified_insns, 5.16+). Its time is most of flamed's start-up, in
 * proportion to that count.
 */
static void log_verified(const struct bpf_program *prog)
{
	struct bpf_prog_info info = {0};
	uint32_t len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0 && info.verified_insns)
		fl_pr_debug("sampler_bpf: %s: %u instructions, %u verified\n", bpf_program__name(prog),
			    info.xlated_prog_len / 8, info.verified_insns);
}

int fl_sampler_bpf__new(const struct fl_sampler_opts *opts, struct fl_sampler **ret)
{
	/* No sample_type: the program reads what it needs itself. */
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = opts->freq,
		.disabled = 1,
	};
	struct fl_sampler_bpf *s;
	uint32_t max_stack = FL_MAX_STACK_DEPTH;
	struct map_sizes ms;
	uint32_t uslots;
	bool kdwarf = opts->sz >= sizeof(*opts) && opts->kdwarf && opts->user;
	int err;

	/*
	 * The walker's loop is bpf_loop() (5.17): without it the verifier
	 * would refuse the program anyway, and say less. (Tests pretend a
	 * kernel without it: pretend_no_bpf_loop.)
	 */
	if (kdwarf && (opts->pretend_no_bpf_loop ||
		       libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL) != 1))
		return -EOPNOTSUPP;

	libbpf_set_print(libbpf_print);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->base.ops = &ops;
	s->base.backend = FL_SAMPLER_BPF;
	s->follow_children = opts->follow_children;
	if (opts->sz >= sizeof(*opts)) {
		s->era = opts->era;
		s->era_ctx = opts->era_ctx;
	}

	err = fl_stackagg__new(&s->held);
	if (err)
		goto out_free;

	/* Opening the events first gives a plain EACCES when perf events are not permitted. */
	err = fl_cpu_events__open(&attr, 1, &s->events);
	if (err)
		goto out_free;
	s->links = calloc(fl_cpu_events__nr(s->events), sizeof(*s->links));
	if (!s->links) {
		err = -ENOMEM;
		goto out_free;
	}

	s->skel = profile_bpf__open();
	if (!s->skel) {
		err = -errno ?: -EINVAL;
		goto out_free;
	}
	s->skel->rodata->keep_idle = opts->idle;
	s->filter_pids = opts->nr_pids > 0 || opts->follow_children;
	s->skel->rodata->filter_pids = s->filter_pids;
	s->skel->rodata->per_thread = opts->per_thread;
	s->skel->rodata->want_kernel = opts->kernel;
	s->skel->rodata->want_user = opts->user;
	err = set_pidns(s->skel, opts);
	if (!err)
		err = set_cgroups(s->skel, opts);
	if (err)
		goto out_free;

	/* A stack-map value may not hold more frames than kernel.perf_event_max_stack. */
	if (read_sysctl_u32("/proc/sys/kernel/perf_event_max_stack", &max_stack) == 0 &&
	    max_stack > FL_MAX_STACK_DEPTH)
		max_stack = FL_MAX_STACK_DEPTH;
	if (max_stack == 0)
		max_stack = 1;
	s->depth = max_stack;
	err = libbpf_num_possible_cpus();
	if (err < 0)
		goto out_free;
	s->nr_possible = err;
	size_maps(opts, sampled_cpus(s->events), kdwarf, &ms);
	fl_pr_debug("sampler_bpf: maps of a set: %u stack slots, %u walked user stacks, %u counts "
		    "(max_stacks); rings: overflow %u KiB, stack copies %u KiB\n",
		    ms.storage, kdwarf ? ms.ustorage : 0, ms.nr_stacks, ms.ring_bytes >> 10,
		    ms.ucopy_bytes >> 10);
	/* The walked user stacks' ids are hashed into a power of two of slots. */
	uslots = pow2_within(ms.ustorage, 1, 1u << 31);
	s->skel->rodata->overflow_wakeup = ms.ring_bytes / 4;
	s->snapshots = opts->sz >= sizeof(*opts) && opts->snapshots;
	if ((err = bpf_map__set_value_size(s->skel->maps.stacks, s->depth * sizeof(uint64_t))) ||
	    (err = bpf_map__set_value_size(s->skel->maps.stacks1, s->depth * sizeof(uint64_t))) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.stacks, ms.storage)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.stacks1, ms.storage)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.counts, ms.nr_stacks)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.counts1, ms.nr_stacks)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.overflow, ms.ring_bytes)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.targets, s->filter_pids ? 65536 : 1)))
		goto out_free;
	/* The kernel rounds the stack map up to a power of two buckets. */
	s->stack_slots = pow2_within(ms.storage, 1, 1u << 31);
	s->nr_stacks = ms.nr_stacks;
	if (!opts->follow_children)
		bpf_program__set_autoload(s->skel->progs.on_fork, false);
	s->skel->rodata->kdwarf = kdwarf;
	s->unwinder = kdwarf ? opts->unwinder : NULL;
	s->skel->rodata->want_copies = s->unwinder != NULL;
	s->skel->rodata->ucopy_wakeup = (s->unwinder ? ms.ucopy_bytes : 4096) / 4;
	/*
	 * Walked user stacks: a map of their own (one entry unused without).
	 * Their ids are hashes of the stacks in eight times as many slots as
	 * it has entries, two tried per stack: with a slot per
	 * stack, tried once, 40% of a busy build's samples found theirs
	 * taken (most of its stacks are seen once or twice) and travelled
	 * whole through the overflow ring.
	 */
	s->ustack_slots = kdwarf ? uslots * 8 : 1;
	s->skel->rodata->ustack_slots = s->ustack_slots;
	if ((err = bpf_map__set_max_entries(s->skel->maps.ustacks, kdwarf ? ms.ustorage : 1)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.ustacks1, kdwarf ? ms.ustorage : 1)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.procs, kdwarf ? 65536 : 1)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.file_ids,
					    kdwarf ? FL_UW_MAX_FILES : 1)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.uw_asked, kdwarf ? 8192 : 1)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.win_loc, kdwarf ? 65536 : 1)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.uw_rows,
					    kdwarf ? FL_UW_ROW_CACHE * (uint32_t)s->nr_possible
						   : 1)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.ucopies,
					    s->unwinder ? ms.ucopy_bytes : 4096)))
		goto out_free;
	if (!kdwarf) {
		bpf_program__set_autoload(s->skel->progs.uw_on_exec, false);
		bpf_program__set_autoload(s->skel->progs.uw_on_fork, false);
		bpf_program__set_autoload(s->skel->progs.uw_on_exit, false);
	}
	/*
	 * Python stacks: a quarter as many as the stack map (1 KiB each,
	 * preallocated: Python processes are some of those sampled), ids in
	 * sixteen times as many slots, as the walked user stacks have four per
	 * entry; those that find no room travel whole. Code objects' names,
	 * 288 bytes each: 4.7 MB for 16384.
	 */
	s->python = opts->sz >= sizeof(*opts) && opts->python && opts->user;
	s->skel->rodata->want_python = s->python;
	s->pystack_slots = s->python ? uslots * 4 : 1;
	s->skel->rodata->pystack_slots = s->pystack_slots;
	if ((err = bpf_map__set_max_entries(s->skel->maps.pystacks,
					    s->python ? (ms.ustorage + 3) / 4 : 1)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.pystacks1,
					    s->python ? (ms.ustorage + 3) / 4 : 1)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.pyprocs, s->python ? 4096 : 1)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.py_tstates, s->python ? 8192 : 1)) ||
	    (err = bpf_map__set_max_entries(s->skel->maps.pycodes, s->python ? 16384 : 1)))
		goto out_free;
	if (!s->python)
		bpf_program__set_autoload(s->skel->progs.py_on_exec, false);

	err = profile_bpf__load(s->skel);
	if (err)
		goto out_free;
	log_verified(s->skel->progs.on_sample);
	if (kdwarf) {
		struct fl_ktables_opts ko = {
			.sz = sizeof(ko),
			.tables_fd = bpf_map__fd(s->skel->maps.tables),
			.table_loc_fd = bpf_map__fd(s->skel->maps.table_loc),
			.procs_fd = bpf_map__fd(s->skel->maps.procs),
			.procs_few_fd = bpf_map__fd(s->skel->maps.procs_few),
			.asked_fd = bpf_map__fd(s->skel->maps.uw_asked),
			.file_ids_fd = bpf_map__fd(s->skel->maps.file_ids),
			.win_loc_fd = bpf_map__fd(s->skel->maps.win_loc),
			.epoch = &s->skel->bss->uw_epoch,
			.max_bytes = opts->max_table_bytes,
			/*
			 * A table is built when a sample first needs it: a machine
			 * (or a program, or flamed's own libraries in the -- CMD child
			 * before its exec) maps many files never sampled.
			 */
			.lazy = true,
			.exit_deletes = true, /* uw_on_exit: bpf_start() fails without it */
		};

		err = fl_ktables__new(&ko, &s->kt);
		if (err)
			goto out_free;
		fl_ktables__prefetch_self(s->kt);
		/*
		 * Stack copies are unwound with the tables too where they are loaded
		 * (a copy of a process whose mappings the walker did not know yet):
		 * no file's CFI read again, no libdw lookups.
		 */
		if (s->unwinder) {
			struct fl_unwind_stats us;

			fl_unwinder__stats(s->unwinder, &us);
			s->uc_rows0 = us.row_steps;
			fl_unwinder__set_rows(s->unwinder, unwind_row, s);
		}
	}
	for (size_t i = 0; i < opts->nr_pids; i++) {
		err = s->base.ops->add_pid(&s->base, opts->pids[i]);
		if (err)
			goto out_free;
	}

	if ((err = fl_bpfring__new(&s->rb)) ||
	    (err = fl_bpfring__add(s->rb, bpf_map__fd(s->skel->maps.overflow), on_overflow, s)))
		goto out_free;
	/* The walker's wants wake the same epoll fd: answered at the next poll, not a tick later. */
	if (s->kt &&
	    (err = fl_bpfring__add(s->rb, bpf_map__fd(s->skel->maps.uw_wants), on_want, s)))
		goto out_free;
	if (s->python &&
	    (err = fl_bpfring__add(s->rb, bpf_map__fd(s->skel->maps.py_wants), NULL, s)))
		goto out_free;
	if (s->unwinder &&
	    (err = fl_bpfring__add(s->rb, bpf_map__fd(s->skel->maps.ucopies), on_ucopy, s)))
		goto out_free;
	*ret = &s->base;
	return 0;

out_free:
	bpf_free(&s->base);
	return err;
}

static int bpf_add_pid(struct fl_sampler *base, int pid)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;
	uint32_t key = (uint32_t)pid;
	uint8_t one = 1;

	if (bpf_map__update_elem(s->skel->maps.targets, &key, sizeof(key), &one, sizeof(one),
				 BPF_ANY))
		return -errno;
	return 0;
}

static int bpf_start(struct fl_sampler *base)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;

	if (s->started)
		return 0;
	if (s->follow_children) {
		s->fork_link = bpf_program__attach(s->skel->progs.on_fork);
		if (!s->fork_link)
			return -errno ?: -EINVAL;
	}
	if (s->kt) {
		/* Before uw_on_fork: every copy it makes is deleted at its process's exit. */
		s->uw_exit_link = bpf_program__attach(s->skel->progs.uw_on_exit);
		if (!s->uw_exit_link)
			return -errno ?: -EINVAL;
		s->uw_exec_link = bpf_program__attach(s->skel->progs.uw_on_exec);
		if (!s->uw_exec_link)
			return -errno ?: -EINVAL;
		s->uw_fork_link = bpf_program__attach(s->skel->progs.uw_on_fork);
		if (!s->uw_fork_link)
			return -errno ?: -EINVAL;
	}
	if (s->python) {
		s->py_exec_link = bpf_program__attach(s->skel->progs.py_on_exec);
		if (!s->py_exec_link)
			return -errno ?: -EINVAL;
	}
	/* Attaching enables each event: sampling starts here (offline CPUs: once back). */
	for (size_t i = 0; i < fl_cpu_events__nr(s->events); i++) {
		if (fl_cpu_events__fd(s->events, i) < 0)
			continue;
		s->links[i] = bpf_program__attach_perf_event(s->skel->progs.on_sample,
							     fl_cpu_events__fd(s->events, i));
		if (!s->links[i])
			return -errno ?: -EINVAL;
		/* The link closes the perf fd when it is destroyed (libbpf's rule). */
		fl_cpu_events__disown(s->events, i);
	}
	s->started = true;
	return 0;
}

/* The old link closes the old event; until the new one is attached, CPU i is not sampled. */
static int unlink_event(void *ctx, size_t i)
{
	struct fl_sampler_bpf *s = ctx;

	if (s->links[i]) {
		bpf_link__destroy(s->links[i]);
		s->links[i] = NULL;
		fl_cpu_events__gone(s->events, i);
	}
	return 0;
}

static int link_event(void *ctx, size_t i)
{
	struct fl_sampler_bpf *s = ctx;

	s->links[i] = bpf_program__attach_perf_event(s->skel->progs.on_sample,
						     fl_cpu_events__fd(s->events, i));
	if (!s->links[i])
		return -errno ?: -EINVAL;
	fl_cpu_events__disown(s->events, i);
	return 0;
}

/* Each event of the CPUs back from offline opened again, and the program attached to it. */
static int bpf_revive(struct fl_sampler *base, int *cpus, size_t max)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;

	if (!s->started)
		return 0;
	return fl_cpu_events__revive(s->events, unlink_event, link_event, s, cpus, max);
}

static int bpf_stop(struct fl_sampler *base)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;

	return fl_cpu_events__ioctl(s->events, PERF_EVENT_IOC_DISABLE);
}

static size_t bpf_nr_fds(const struct fl_sampler *base)
{
	(void)base;
	return 1;
}

static int bpf_fd(const struct fl_sampler *base, size_t i)
{
	const struct fl_sampler_bpf *s = (const struct fl_sampler_bpf *)base;

	(void)i;
	return fl_bpfring__epoll_fd(s->rb);
}

/* The kernel's notes in an event's ring: throttling starts, and notes lost when it is full. */
static int on_note(const struct perf_event_header *hdr, void *ctx)
{
	struct fl_sampler_bpf *s = ctx;

	if (hdr->type == PERF_RECORD_THROTTLE)
		s->throttled++;
	else if (hdr->type == PERF_RECORD_LOST && hdr->size >= sizeof(struct fl_lost_rec))
		s->throttled += ((const struct fl_lost_rec *)hdr)->lost;
	return 0;
}

static int bpf_poll(struct fl_sampler *base)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;
	int n = fl_bpfring__consume(s->rb), err;

	flush_copies(s, false);
	err = fl_cpu_events__consume(s->events, on_note, s);
	if (n < 0)
		return n;
	return err == -EBADMSG ? 0 : err;
}

static int stacks_fd(const struct fl_sampler_bpf *s, uint32_t set)
{
	return bpf_map__fd(set ? s->skel->maps.stacks1 : s->skel->maps.stacks);
}

static int counts_fd(const struct fl_sampler_bpf *s, uint32_t set)
{
	return bpf_map__fd(set ? s->skel->maps.counts1 : s->skel->maps.counts);
}

/* Keys of a counts map, collected to be deleted after a walk. */
struct keyvec {
	struct fl_stack_key *keys;
	size_t nr, cap;
};

static int keyvec_add(struct keyvec *v, const struct fl_stack_key *key)
{
	if (v->nr == v->cap) {
		size_t ncap = v->cap ? v->cap * 2 : 64;
		struct fl_stack_key *nk = realloc(v->keys, ncap * sizeof(*nk));

		if (!nk)
			return -ENOMEM;
		v->keys = nk;
		v->cap = ncap;
	}
	v->keys[v->nr++] = *key;
	return 0;
}

/*
 * Stack map lookups, each at most once per drain: many keys share a stack.
 * One for the stack map, one for the walked user stacks (kernel-dwarf).
 */
struct stack_cache {
	struct fl_sampler_bpf *s;
	int fd;
	uint32_t depth;	 /* frames per entry */
	uint32_t nslots; /* ids are below this */
	bool del;	 /* a stack map emptied by this drain: an id read is deleted (stack_get()) */
	/*
	 * id + 1 -> its stack's index in held: the stacks a drain looked up,
	 * not an array of every id (the walked stacks' ids span four slots
	 * per entry, and a drain runs whenever enough processes have exited).
	 */
	struct fl_u32map by_id;
	struct cached_stack **held;
	size_t nr_held, cap_held;
	uint64_t *buf;
	bool emptied; /* every stack read and deleted by cache_prefetch() */
	struct stack_cache *user; /* the cache of user stack ids (itself without kernel-dwarf) */
	struct stack_cache *py;	  /* the cache of Python stack ids (NULL without) */
};

/* Stack id's frames ips (c->depth of them, zero-terminated unless all used) into c. */
static const struct cached_stack *cache_add(struct stack_cache *c, uint32_t id, const uint64_t *ips)
{
	struct cached_stack *cs;
	uint32_t nr = 0;

	if (c->nr_held == c->cap_held) {
		size_t ncap = c->cap_held ? c->cap_held * 2 : 256;
		struct cached_stack **nh = realloc(c->held, ncap * sizeof(*nh));

		if (!nh)
			return NULL;
		c->held = nh;
		c->cap_held = ncap;
	}
	while (nr < c->depth && ips[nr])
		nr++;
	cs = malloc(sizeof(*cs) + nr * sizeof(uint64_t));
	if (!cs)
		return NULL;
	cs->nr = nr;
	memcpy(cs->ips, ips, nr * sizeof(uint64_t));
	if (fl_u32map__put(&c->by_id, id + 1, (uint32_t)c->nr_held)) {
		free(cs);
		return NULL;
	}
	c->held[c->nr_held++] = cs;
	return cs;
}

/*
 * Reads stack id into c->buf; with c->del deleted in the same call where
 * the kernel can, so that clear_stacks() then finds nothing left (it took
 * two more calls a stack). False when the id holds no stack.
 */
static bool stack_read(struct stack_cache *c, int32_t id)
{
	struct fl_sampler_bpf *s = c->s;

	if (c->del && s->stack_lookup_delete >= 0) {
		if (!bpf_map_lookup_and_delete_elem(c->fd, &id, c->buf)) {
			s->stack_lookup_delete = 1;
			return true;
		}
		if (errno == ENOENT)
			return false;
		/* Before Linux 6.13 only hash maps, queues and stacks can (ENOTSUPP, EINVAL). */
		if (!s->stack_lookup_delete)
			fl_pr_debug("sampler_bpf: stack ids cannot be looked up and deleted at once "
				    "here (%s): deleted after the drain\n",
				    strerror(errno));
		s->stack_lookup_delete = -1;
	}
	return !bpf_map_lookup_elem(c->fd, &id, c->buf);
}

static const struct cached_stack *stack_get(struct stack_cache *c, int32_t id)
{
	uint32_t at;

	if (id < 0 || (uint32_t)id >= c->nslots)
		return NULL;
	if (fl_u32map__get(&c->by_id, (uint32_t)id + 1, &at))
		return c->held[at];
	memset(c->buf, 0, c->depth * sizeof(uint64_t));
	if (!stack_read(c, id))
		return NULL;
	return cache_add(c, (uint32_t)id, c->buf);
}

static int stack_err(int32_t id)
{
	if (id >= 0)
		return 0;
	if (id == FL_STACK_NONE)
		return -ENOENT;
	return id;
}

static int emit_key(struct stack_cache *c, const struct fl_stack_key *key,
		    const struct fl_stack_val *val, fl_raw_stack_fn fn, void *ctx)
{
	const struct cached_stack *ks = NULL, *us = NULL, *ps;
	char comm[FL_TASK_COMM_LEN + 1];
	struct fl_raw_stack st = {
		.pid = key->tgid,
		.tid = key->tid,
		.comm = comm,
		.kerr = stack_err(key->kstack),
		.uerr = stack_err(key->ustack),
		.count = val->count,
		.time_first = val->first_ns,
		.time = val->last_ns,
		.cgroup_id = key->cgroup_id,
	};

	memcpy(comm, key->comm, FL_TASK_COMM_LEN);
	comm[FL_TASK_COMM_LEN] = '\0';
	if (st.kerr == 0) {
		ks = stack_get(c, key->kstack);
		if (ks) {
			st.kips = ks->ips;
			st.nr_kips = ks->nr;
		} else {
			st.kerr = -EFAULT;
		}
	}
	if (st.uerr == 0) {
		us = stack_get(c->user, key->ustack);
		if (us) {
			st.uips = us->ips;
			st.nr_uips = us->nr;
		} else {
			st.uerr = -EFAULT;
		}
	}
	if (c->py && key->pystack >= 0) {
		ps = stack_get(c->py, key->pystack);
		if (ps) {
			st.pyips = ps->ips;
			st.nr_pyips = ps->nr;
		}
	}
	if ((ks && ks->nr == c->depth) || (us && us->nr == c->user->depth))
		c->s->truncated += val->count;
	return fn(&st, ctx);
}

/* Key by key: two syscalls per entry, for kernels without batch lookups. */
static int drain_counts_slow(int fd, struct stack_cache *c, fl_raw_stack_fn fn, void *ctx)
{
	struct fl_stack_key key, next;
	struct fl_stack_val val;
	bool first = true;
	int err;

	for (;;) {
		if (bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
			if (errno == ENOENT)
				return 0;
			return -errno;
		}
		first = false;
		key = next;
		if (bpf_map_lookup_elem(fd, &key, &val))
			continue; /* deleted meanwhile */
		err = emit_key(c, &key, &val, fn, ctx);
		if (err)
			return err;
	}
}

#define DRAIN_BATCH 4096
/* The kernel's internal "operation not supported", which leaks out of bpf(2). */
#define KERNEL_ENOTSUPP 524

/* Stacks per batch of cache_prefetch(): 254 KiB of walked stacks. */
#define PREFETCH_BATCH 256

/*
 * Reads hash map fd up to max entries a call into keys and vals (with del,
 * deleting them in the same call), and has fn take each call's n entries
 * from there. in and out: key-sized room for the batch cursor (a bucket
 * number). Returns 0, -EOPNOTSUPP where the kernel cannot batch, or an
 * error (fn's too).
 */
static int map_batches(int fd, bool del, __u32 max, void *keys, void *vals, void *in, void *out,
		       size_t key_size, int (*fn)(void *ctx, __u32 n), void *ctx)
{
	bool first = true, done = false;
	int err;

	while (!done) {
		__u32 n = max;

		err = (del ? bpf_map_lookup_and_delete_batch : bpf_map_lookup_batch)(
			fd, first ? NULL : in, out, keys, vals, &n, NULL);
		if (err) {
			err = -errno;
			if (err == -ENOENT)
				done = true; /* the last batch, n may still be > 0 */
			else if (first &&
				 (err == -EINVAL || err == -EOPNOTSUPP || err == -KERNEL_ENOTSUPP))
				return -EOPNOTSUPP;
			else
				return err;
		}
		first = false;
		memcpy(in, out, key_size);
		err = fn(ctx, n);
		if (err)
			return err;
	}
	return 0;
}

/* One call's stacks, into the cache. */
struct prefetch_batch {
	struct stack_cache *c;
	const uint32_t *keys;
	const uint64_t *vals;
};

static int prefetch_batch_cb(void *ctx, __u32 n)
{
	const struct prefetch_batch *b = ctx;

	for (__u32 i = 0; i < n; i++)
		if (b->keys[i] < b->c->nslots &&
		    !cache_add(b->c, b->keys[i], &b->vals[(size_t)i * b->c->depth]))
			return -ENOMEM;
	return 0;
}

/*
 * Reads every stack of c's map, a hash map (walked user stacks, Python
 * frames), into c a batch at a time, and with del deletes them in the same
 * calls: a syscall per PREFETCH_BATCH stacks, where stack_get() took one
 * per stack and clear_stacks() two more. Nearly all are wanted: the map is
 * emptied every second, and holds the stacks of that second's counts.
 * Returns 0 (c->emptied with del), -EOPNOTSUPP where the kernel cannot
 * batch, or another error; stack_get() looks up by id whatever was not read.
 */
static int cache_prefetch(struct stack_cache *c, bool del)
{
	_cleanup_free_ uint32_t *keys = malloc(PREFETCH_BATCH * sizeof(*keys));
	_cleanup_free_ uint64_t *vals = malloc(PREFETCH_BATCH * c->depth * sizeof(*vals));
	struct prefetch_batch b = {.c = c, .keys = keys, .vals = vals};
	uint32_t in_batch, out_batch;
	int err;

	if (!keys || !vals)
		return -ENOMEM;
	err = map_batches(c->fd, del, PREFETCH_BATCH, keys, vals, &in_batch, &out_batch,
			  sizeof(in_batch), prefetch_batch_cb, &b);
	if (!err)
		c->emptied = del;
	return err;
}

/* One call's entries of the counts map, each to the drain's fn. */
struct counts_batch {
	struct stack_cache *c;
	const struct fl_stack_key *keys;
	const struct fl_stack_val *vals;
	fl_raw_stack_fn fn;
	void *ctx;
};

static int counts_batch_cb(void *ctx, __u32 n)
{
	const struct counts_batch *b = ctx;
	int err;

	for (__u32 i = 0; i < n; i++) {
		err = emit_key(b->c, &b->keys[i], &b->vals[i], b->fn, b->ctx);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Many entries per syscall. Returns -EOPNOTSUPP when the kernel cannot
 * batch. With del, every entry read is deleted in the same call.
 */
static int drain_counts_batch(int fd, bool del, struct stack_cache *c, fl_raw_stack_fn fn,
			      void *ctx)
{
	_cleanup_free_ struct fl_stack_key *keys = malloc(DRAIN_BATCH * sizeof(*keys));
	_cleanup_free_ struct fl_stack_val *vals = malloc(DRAIN_BATCH * sizeof(*vals));
	struct counts_batch b = {.c = c, .keys = keys, .vals = vals, .fn = fn, .ctx = ctx};
	struct fl_stack_key in_batch, out_batch;

	if (!keys || !vals)
		return -ENOMEM;
	return map_batches(fd, del, DRAIN_BATCH, keys, vals, &in_batch, &out_batch,
			   sizeof(in_batch), counts_batch_cb, &b);
}

/*
 * Collects every key of the counts map fd, for deleting them after a walk
 * on a kernel without batch lookups.
 */
static int collect_keys(int fd, struct keyvec *all)
{
	struct fl_stack_key key, next;
	bool first = true;
	int err;

	while (!bpf_map_get_next_key(fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		err = keyvec_add(all, &key);
		if (err < 0)
			return err;
	}
	return errno == ENOENT ? 0 : -errno;
}

/* The counts map's keys; with del (a set no program writes any more) deleted too. */
static int drain_counts(int fd, bool del, struct stack_cache *c, fl_raw_stack_fn fn, void *ctx)
{
	struct keyvec all = {};
	int err = drain_counts_batch(fd, del, c, fn, ctx);

	if (err != -EOPNOTSUPP)
		return err;
	err = drain_counts_slow(fd, c, fn, ctx);
	if (!err && del)
		err = collect_keys(fd, &all);
	for (size_t i = 0; i < all.nr; i++)
		bpf_map_delete_elem(fd, &all.keys[i]);
	free(all.keys);
	return err;
}

static int cache_init(struct stack_cache *c, struct fl_sampler_bpf *s, int fd, uint32_t depth,
		      uint32_t nslots)
{
	*c = (struct stack_cache){.s = s, .fd = fd, .depth = depth, .nslots = nslots};
	c->user = c;
	c->buf = malloc(depth * sizeof(uint64_t));
	return c->buf ? 0 : -ENOMEM;
}

static void cache_fini(struct stack_cache *c)
{
	for (size_t i = 0; i < c->nr_held; i++)
		free(c->held[i]);
	free(c->held);
	fl_u32map__fini(&c->by_id);
	free(c->buf);
}

static int ustacks_fd(const struct fl_sampler_bpf *s, uint32_t set)
{
	return bpf_map__fd(set ? s->skel->maps.ustacks1 : s->skel->maps.ustacks);
}

static int pystacks_fd(const struct fl_sampler_bpf *s, uint32_t set)
{
	return bpf_map__fd(set ? s->skel->maps.pystacks1 : s->skel->maps.pystacks);
}

/*
 * Empties the stack map fd. Ids are collected first: the kernel finds the
 * next id by scanning on from the one given, unless that one is empty.
 */
static void clear_stacks(int fd, uint32_t nslots)
{
	_cleanup_free_ uint32_t *ids = malloc(nslots * sizeof(*ids));
	uint32_t id, next, n = 0;
	bool first = true;

	if (!ids)
		return;
	while (n < nslots && !bpf_map_get_next_key(fd, first ? NULL : &id, &next)) {
		first = false;
		id = next;
		ids[n++] = id;
	}
	for (uint32_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &ids[i]);
}

/*
 * A hash map of stacks read ahead into c in batches (what is not, an error
 * aside from memory, stack_get() looks up by id).
 */
static int cache_init_read(struct stack_cache *c, struct fl_sampler_bpf *s, int fd,
			   uint32_t depth, uint32_t nslots, bool del)
{
	int err = cache_init(c, s, fd, depth, nslots);

	if (!err)
		err = cache_prefetch(c, del);
	return err == -ENOMEM ? err : 0;
}

/*
 * The keys of one set of maps; with del (a set no program writes any more)
 * deleted too, and its walked and Python stacks emptied, even on failure.
 */
static int drain_set(struct fl_sampler_bpf *s, uint32_t set, bool del, fl_raw_stack_fn fn,
		     void *ctx)
{
	struct stack_cache c, uc = {0}, pc = {0};
	int err;

	err = cache_init(&c, s, stacks_fd(s, set), s->depth, s->stack_slots);
	c.del = del;
	if (!err && s->kt) {
		err = cache_init_read(&uc, s, ustacks_fd(s, set), FL_MAX_STACK_DEPTH,
				      s->ustack_slots, del);
		c.user = &uc;
	}
	if (!err && s->python) {
		err = cache_init_read(&pc, s, pystacks_fd(s, set), FL_PY_MAX_FRAMES,
				      s->pystack_slots, del);
		c.py = &pc;
	}
	if (!err)
		err = drain_counts(counts_fd(s, set), del, &c, fn, ctx);
	if (del && s->kt && !uc.emptied)
		clear_stacks(ustacks_fd(s, set), s->ustack_slots);
	if (del && s->python && !pc.emptied)
		clear_stacks(pystacks_fd(s, set), s->pystack_slots);
	cache_fini(&c);
	if (s->kt)
		cache_fini(&uc);
	if (s->python)
		cache_fini(&pc);
	return err;
}

/* The active set's keys, then what is held in user space. */
static int drain_with(struct fl_sampler_bpf *s, fl_raw_stack_fn fn, void *ctx)
{
	/* The copies held are samples taken: counted before any of them is passed on. */
	flush_copies(s, true);
	return drain_set(s, s->active, false, fn, ctx) ?: fl_stackagg__for_each(s->held, fn, ctx);
}

static int bpf_drain(struct fl_sampler *base, fl_raw_stack_fn fn, void *ctx)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;

	return drain_with(s, fn, ctx);
}

/* As drain, counting nothing: the stacks cut at the depth limit are counted by the drain. */
static int bpf_peek(struct fl_sampler *base, fl_raw_stack_fn fn, void *ctx)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;
	uint64_t truncated = s->truncated;
	int err = drain_with(s, fn, ctx);

	s->truncated = truncated;
	return err;
}

/*
 * Waits until no program still uses the set of maps that was active before
 * a flip: every CPU inside the program when the flip was seen (SAMPLES
 * ahead of DONE) has finished that sample. A program runs for microseconds;
 * after 100 ms a CPU is given up on (a sample it adds later is lost).
 */
static void wait_for_programs(struct fl_sampler_bpf *s)
{
	_cleanup_free_ uint64_t *entered = calloc((size_t)s->nr_possible, sizeof(uint64_t));
	_cleanup_free_ uint64_t *done = calloc((size_t)s->nr_possible, sizeof(uint64_t));
	int fd = bpf_map__fd(s->skel->maps.counters);
	uint32_t k_samples = FL_CNT_SAMPLES, k_done = FL_CNT_DONE;

	if (!entered || !done || bpf_map_lookup_elem(fd, &k_samples, entered))
		return;
	for (int tries = 0; tries < 1000; tries++) {
		bool inside = false;

		if (bpf_map_lookup_elem(fd, &k_done, done))
			return;
		for (int cpu = 0; cpu < s->nr_possible && !inside; cpu++)
			inside = done[cpu] < entered[cpu];
		if (!inside)
			return;
		usleep(100);
	}
}

/*
 * Flips the programs to the other set of maps and waits for those still in
 * the old one, whose samples are then all in its maps or in the overflow
 * ring (read here too). Returns the old set.
 */
static uint32_t flip_sets(struct fl_sampler_bpf *s)
{
	uint32_t old = s->active;

	s->active = !old;
	__atomic_store_n(&s->skel->bss->active_set, s->active, __ATOMIC_SEQ_CST);
	wait_for_programs(s);
	bpf_poll(&s->base);
	return old;
}

/*
 * Reads and empties a set no program writes any more: its keys to fn,
 * deleted as they are read, then its stacks. Emptied even on failure (only
 * -ENOMEM or fn's): no stack is given twice.
 */
static int empty_set(struct fl_sampler_bpf *s, uint32_t set, fl_raw_stack_fn fn, void *ctx)
{
	int err = drain_set(s, set, true, fn, ctx);

	if (err) {
		/* Keys left would name stack ids cleared below: gone with them. */
		struct keyvec left = {};
		int cfd = counts_fd(s, set);

		collect_keys(cfd, &left);
		for (size_t i = 0; i < left.nr; i++)
			bpf_map_delete_elem(cfd, &left.keys[i]);
		free(left.keys);
	}
	clear_stacks(stacks_fd(s, set), s->stack_slots);
	return err;
}

/* A key of the kernel's counts, held in user space from now on. */
static int hold_cb(const struct fl_raw_stack *st, void *ctx)
{
	struct fl_sampler_bpf *s = ctx;
	struct fl_raw_stack held = *st;

	/* Its first and last sample's eras: a key spanning two stays told apart (fold.c). */
	held.time_first = era_of(s, st->pid, st->time_first);
	held.time = era_of(s, st->pid, st->time);
	s->gathered++;
	return fl_stackagg__add(s->held, &held, st->count);
}

/*
 * Moves what the kernel counted into user space: the sets are flipped and
 * the old one emptied into the held table, where each process's stacks are
 * a table of their own. The kernel's maps then hold one tick's samples
 * (they are sized for that), and taking the stacks of processes that exited
 * costs what those stacks are: nothing walks the stacks of every process
 * still running.
 */
static int bpf_gather(struct fl_sampler *base)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;
	int err = empty_set(s, flip_sets(s), hold_cb, s);

	s->gathers++;
	return err;
}

/*
 * Flips the sets, empties the old one into fn, and hands over what is held
 * in user space. Nothing is lost between two snapshots: a sample goes to
 * one set or the other.
 */
static int bpf_snapshot(struct fl_sampler *base, fl_raw_stack_fn fn, void *ctx)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;
	struct fl_stackagg *fresh;
	int err;

	if (!s->snapshots)
		return -EINVAL;
	err = fl_stackagg__new(&fresh);
	if (err)
		return err;
	/* The copies held are samples taken: counted before any of them is passed on. */
	flush_copies(s, true);
	err = empty_set(s, flip_sets(s), fn, ctx);
	if (!err)
		err = fl_stackagg__for_each(s->held, fn, ctx);
	/* Emptied even on failure: no stack is given twice. */
	fl_stackagg__free(s->held);
	s->held = fresh;
	return err;
}

/*
 * The processes exited: what the kernel counted is gathered (they add no
 * sample to the new set) and their stacks taken from the held table.
 */
static int bpf_take(struct fl_sampler *base, const uint32_t *pids, size_t n, fl_raw_stack_fn fn,
		    void *ctx)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;
	int targets_fd = bpf_map__fd(s->skel->maps.targets);
	int err;

	flush_copies(s, true);
	err = bpf_gather(base);
	if (!err) {
		uint64_t before = fl_stackagg__examined(s->held);

		err = fl_stackagg__take(s->held, pids, n, fn, ctx);
		s->take_examined += fl_stackagg__examined(s->held) - before;
	}
	/* A new process with one of these pids is not kept for the old one's sake. */
	for (size_t i = 0; i < n && s->filter_pids; i++)
		bpf_map_delete_elem(targets_fd, &pids[i]);
	return err;
}

static int bpf_stats(struct fl_sampler *base, struct fl_sampler_stats *st)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;
	uint64_t sum[FL_CNT_MAX] = {};
	_cleanup_free_ uint64_t *vals = calloc((size_t)s->nr_possible, sizeof(uint64_t));
	int fd = bpf_map__fd(s->skel->maps.counters);

	if (!vals)
		return -ENOMEM;
	for (uint32_t k = 0; k < FL_CNT_MAX; k++) {
		if (bpf_map_lookup_elem(fd, &k, vals))
			return -errno;
		for (int cpu = 0; cpu < s->nr_possible; cpu++)
			sum[k] += vals[cpu];
	}
	*st = (struct fl_sampler_stats){
		.samples = sum[FL_CNT_SAMPLES],
		.idle = sum[FL_CNT_IDLE],
		.filtered = sum[FL_CNT_FILTERED],
		.other_ns = sum[FL_CNT_OTHER_NS],
		.kstack_none = sum[FL_CNT_KSTACK_NONE],
		.ustack_none = sum[FL_CNT_USTACK_NONE],
		.collisions = sum[FL_CNT_COLLISION],
		.map_full = sum[FL_CNT_STACKMAP_FULL] + sum[FL_CNT_COUNTS_FULL],
		.max_stacks = s->nr_stacks,
		.recovered = sum[FL_CNT_OVERFLOW_SENT],
		.lost = sum[FL_CNT_OVERFLOW_LOST],
		.truncated = s->truncated,
		.throttled = s->throttled,
		.uw_walked = sum[FL_CNT_UW_WALKED],
		.uw_tables = sum[FL_CNT_UW_TABLES],
		.uw_fp_notable = sum[FL_CNT_UW_FP_NOTABLE],
		.uw_fp_nocfi = sum[FL_CNT_UW_FP_NOCFI],
		.uw_complete = sum[FL_CNT_UW_COMPLETE],
		.uw_stopped = sum[FL_CNT_UW_STOPPED],
		.uw_truncated = sum[FL_CNT_UW_TRUNCATED],
		.uw_copied = sum[FL_CNT_UW_COPIED],
		.uw_copy_full = sum[FL_CNT_UW_COPY_FULL],
		.py_samples = sum[FL_CNT_PY_WALKED],
		.unwind_complete = s->uc_outcomes[FL_UNWIND_COMPLETE],
		.unwind_truncated = s->uc_outcomes[FL_UNWIND_TRUNCATED],
		.unwind_failed = s->uc_outcomes[FL_UNWIND_FAILED],
		.unwind_frames = s->uc_frames,
	};
	if (s->unwinder && s->kt) {
		struct fl_unwind_stats us;

		fl_unwinder__stats(s->unwinder, &us);
		st->unwind_row_steps = us.row_steps - s->uc_rows0 - s->uc_rows_retried;
	}
	if (s->kt) {
		struct fl_ktables_stats ks;

		fl_ktables__stats(s->kt, &ks);
		st->tables_files = ks.files;
		st->tables_loaded = ks.loaded;
		st->tables_no_cfi = ks.no_cfi;
		st->tables_over_budget = ks.over_budget;
		st->tables_pending = ks.pending;
		st->tables_bytes = ks.bytes;
		st->tables_peak_bytes = ks.peak_bytes;
		st->tables_code_bytes = ks.code_bytes;
		st->tables_rows = ks.rows;
		st->tables_windowed = ks.windowed;
		st->tables_windows = ks.windows;
		st->tables_windows_now = ks.windows_now;
		st->tables_src_bytes = ks.src_bytes;
		st->tables_build_ns = ks.build_ns;
		st->tables_first_ns = ks.first_load_ns;
		st->tables_last_ns = ks.last_load_ns;
		st->tables_unloaded = ks.unloaded;
		st->tables_procs = ks.procs;
		st->tables_maps_dropped = ks.maps_dropped;
	}
	fl_cpu_events__hotplug(s->events, &st->hotplug);
	st->take_examined = s->take_examined;
	st->gathers = s->gathers;
	st->gathered = s->gathered;
	return 0;
}

static int bpf_set_maps(struct fl_sampler *base, uint32_t pid, const struct fl_tmap *maps, size_t n)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;

	uint8_t v;

	if (!s->kt)
		return -EOPNOTSUPP;
	/* With targets, only theirs: the program never walks another process's stack. */
	if (n && s->filter_pids &&
	    bpf_map__lookup_elem(s->skel->maps.targets, &pid, sizeof(pid), &v, sizeof(v), 0))
		return 0;
	return fl_ktables__set_proc(s->kt, pid, maps, n);
}

static void bpf_trim_tables(struct fl_sampler *base)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;

	if (s->kt)
		fl_ktables__trim(s->kt);
}

static void bpf_settle_tables(struct fl_sampler *base, unsigned int ms)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;

	if (s->kt)
		fl_ktables__settle(s->kt, ms);
}

static bool bpf_kdwarf(const struct fl_sampler *base)
{
	return ((const struct fl_sampler_bpf *)base)->kt != NULL;
}

static int bpf_set_python(struct fl_sampler *base, uint32_t pid, const struct fl_py_proc *p)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;
	int fd;

	if (!s->python)
		return -EOPNOTSUPP;
	fd = bpf_map__fd(s->skel->maps.pyprocs);
	if (!p)
		return bpf_map_delete_elem(fd, &pid) && errno != ENOENT ? -errno : 0;
	return bpf_map_update_elem(fd, &pid, p, BPF_ANY) ? -errno : 0;
}

static int bpf_py_code(struct fl_sampler *base, uint32_t pid, uint64_t code,
		       struct fl_py_code *out)
{
	struct fl_sampler_bpf *s = (struct fl_sampler_bpf *)base;
	struct fl_py_code_key key = {.tgid = pid, .code = code};

	if (!s->python)
		return -EOPNOTSUPP;
	return bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.pycodes), &key, out) ? -errno : 0;
}

static bool bpf_python(const struct fl_sampler *base)
{
	return ((const struct fl_sampler_bpf *)base)->python;
}

static const struct fl_sampler_ops ops = {
	.python = bpf_python,
	.set_python = bpf_set_python,
	.py_code = bpf_py_code,
	.set_maps = bpf_set_maps,
	.trim_tables = bpf_trim_tables,
	.settle_tables = bpf_settle_tables,
	.kdwarf = bpf_kdwarf,
	.add_pid = bpf_add_pid,
	.start = bpf_start,
	.stop = bpf_stop,
	.nr_fds = bpf_nr_fds,
	.fd = bpf_fd,
	.poll = bpf_poll,
	.revive = bpf_revive,
	.drain = bpf_drain,
	.peek = bpf_peek,
	.take = bpf_take,
	.snapshot = bpf_snapshot,
	.gather = bpf_gather,
	.stats = bpf_stats,
	.free = bpf_free,
};
