/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The sampler: per-CPU cpu-clock sampling, stacks counted by a BPF program or from the perf ring. */
#ifndef FLAMED_SAMPLER_H
#define FLAMED_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flamed/sampling/cgroups.h"
#include "flamed/sampling/perfbuf.h"
#include "flamed/sampling/pidns.h"

/*
 * Two backends behind one interface. BPF (the default) counts distinct
 * stacks in the kernel; user space drains the maps at the end. The ring
 * backend asks for PERF_SAMPLE_CALLCHAIN and counts in user space; it is the
 * fallback when BPF cannot be loaded. Both give the same fl_raw_stack
 * records at drain time.
 */
struct fl_sampler;

enum fl_sampler_backend {
	FL_SAMPLER_BPF,
	FL_SAMPLER_RING,
};

struct fl_sampler_opts {
	size_t sz;	 /* sizeof(struct fl_sampler_opts) */
	uint64_t freq;	 /* samples per second per CPU, > 0 */
	const int *pids; /* processes (tgids) to keep; NULL/0: every process */
	size_t nr_pids;
	bool follow_children; /* also keep processes forked by kept ones */
	bool per_thread;      /* count per thread (fl_raw_stack.tid is set) */
	bool idle;	      /* keep idle-task (pid 0) samples; with pids, idle is just not kept */
	bool kernel;	      /* record kernel stacks */
	bool user;	      /* record user stacks */
	/*
	 * BPF: stack-map entries and counts-map entries of each of the two sets
	 * (0: sized by the backend from the samples of a second, which is what
	 * a set holds: see fl_sampler__gather()).
	 */
	uint32_t stack_storage_size;
	uint32_t max_stacks;
	/* Ring: data pages per CPU ring, a power of two (0: default). */
	size_t ring_pages;
	/*
	 * DWARF call graphs (ring backend only): each sample carries the user
	 * registers and a copy of stack_size bytes of the user stack (at most
	 * 65528, a multiple of 8), unwound by unwinder when the ring is read;
	 * the kernel part still comes from the callchain. The unwinder must
	 * see the mappings of the sample's time: read the tracker first.
	 */
	bool dwarf;
	uint32_t stack_size;
	struct fl_unwinder *unwinder;
	/*
	 * The era of a process at a time (fl_tracker__era() fits; NULL: one
	 * era). Samples counted in user space are kept apart by era, so that
	 * the addresses of one distinct stack mean one thing.
	 */
	uint64_t (*era)(void *ctx, uint32_t pid, uint64_t time);
	/*
	 * DWARF mode: whether a sampled user pc belongs to the image the
	 * process left in an exec still under way (fl_tracker__left_at_exec()
	 * fits; NULL: never). Such a sample has no user stack: it is not
	 * unwound, and not counted as a failed unwinding.
	 */
	bool (*left_at_exec)(void *ctx, uint32_t pid, uint64_t ip, uint64_t time);
	/*
	 * The time up to which the mappings and execs era, left_at_exec and the
	 * unwinder see are complete (fl_tracker__known_until() fits; NULL: all
	 * of them, always). The ring backend leaves a ring's later samples in
	 * the ring for the next poll: the CPU that ran an mmap() or exec may
	 * not be the one that sampled the new code, and the tracker reads its
	 * rings before the sampler's.
	 */
	uint64_t (*known_until)(void *ctx);
	void *era_ctx; /* for all three */
	/*
	 * fl_sampler__snapshot() will be called (the daemon). The BPF backend
	 * then keeps two sets of maps, twice the kernel memory: one counts
	 * while the other is read.
	 */
	bool snapshots;
	/*
	 * The pid namespace whose pids the stacks carry and targets are given
	 * in (NULL: flamed's own, read when the sampler is made). In a child
	 * namespace, samples of tasks it does not see (pid 0 in perf records,
	 * like the idle task) are counted in other_ns and dropped, or in
	 * filtered when there are targets. The ring backend gets its pids from
	 * the kernel, always in flamed's namespace: it looks at .initial only,
	 * and there it leaves idle samples to the kernel (exclude_idle), so
	 * that a pid 0 is never taken for idle; .idle is refused (-EOPNOTSUPP:
	 * the two cannot be told apart).
	 */
	const struct fl_pidns *pidns;
	/*
	 * --call-graph kernel-dwarf (BPF backend): the program walks user
	 * stacks itself with the unwind tables of the mapped files (frame
	 * pointers where there are none), which fl_sampler__set_maps() keeps
	 * up to date; max_table_bytes bounds the tables (0: a default).
	 * fl_sampler__new() fails when the kernel cannot load that program
	 * (the caller may try again without).
	 */
	bool kdwarf;
	uint64_t max_table_bytes;
	/* Tests: the feature probe answers as a kernel without bpf_loop (before 5.17). */
	bool pretend_no_bpf_loop;
	/*
	 * cgroup v2 (see flamed/sampling/cgroups.h). per_cgroup: each stack
	 * carries the cgroup its task was in (fl_raw_stack.cgroup_id), and
	 * stacks of different cgroups are counted apart. cgroups[0..nr_cgroups)
	 * (at most FL_CGROUP_MAX_TARGETS): only tasks in these cgroups or below
	 * them are sampled. The BPF backend decides in its program
	 * (bpf_get_current_ancestor_cgroup_id(), -EOPNOTSUPP without it); the
	 * ring backend asks for PERF_SAMPLE_CGROUP (Linux 5.7; -EINVAL before)
	 * and decides with cgroup_tree (borrowed; needed with cgroups), which
	 * places a sample's cgroup in the tree: a cgroup created and removed
	 * between two walks of it cannot be placed, and its samples are
	 * filtered.
	 */
	bool per_cgroup;
	const struct fl_cgroup_target *cgroups;
	size_t nr_cgroups;
	struct fl_cgroups *cgroup_tree;
	/*
	 * Python frames: a BPF program reads the interpreter's frame chain of
	 * the sampled thread in each process given by fl_sampler__set_python()
	 * (fl_raw_stack.pyips), and the names of their code objects
	 * (fl_sampler__py_code()). The BPF backend's program does it (the
	 * backend fails to load without it: try again without); the ring
	 * backend attaches a program to its events for it (the kernel filter's,
	 * which then keeps every sample until there are targets) and joins what
	 * it reads with the samples; where the kernel refuses that program,
	 * Python frames are off: fl_sampler__python() says so.
	 */
	bool python;
};

/*
 * DWARF mode: the outermost user "address" of a stack whose unwinding
 * stopped before the thread's first frame (never a real user address).
 */
#define FL_UIP_TRUNCATED 0xfffffffffffffffeULL /* the stack copy ended */
#define FL_UIP_FAILED 0xfffffffffffffffdULL    /* no CFI, unreadable file, bad rule */

/* One aggregated stack at drain time. */
struct fl_raw_stack {
	uint32_t pid;	      /* tgid; 0 for the idle task */
	uint32_t tid;	      /* 0 unless per_thread */
	const char *comm;     /* the thread's name, NUL-terminated */
	const uint64_t *kips; /* kernel frames, leaf first */
	size_t nr_kips;
	const uint64_t *uips; /* user frames, leaf first */
	size_t nr_uips;
	/* 0, or why a half is empty: -ENOENT not asked for, -EFAULT none. */
	int kerr, uerr;
	uint64_t count;
	/*
	 * When its samples were taken (CLOCK_MONOTONIC ns): user addresses are
	 * looked up in the mappings of time. Counted in user space, the stack
	 * belongs to one era and time is that era's start (time_first ==
	 * time); counted in the kernel, time_first and time are its first and
	 * last sample, and the two may fall in different eras.
	 */
	uint64_t time_first, time;
	/* The cgroup v2 id of the task with opts.per_cgroup, else 0. */
	uint64_t cgroup_id;
	/*
	 * Python frames (opts.python), leaf first: code object addresses,
	 * FL_PY_ENTRY on the outermost frame of each run of the interpreter's
	 * loop (flamed/python_abi.h).
	 */
	const uint64_t *pyips;
	size_t nr_pyips;
};

struct fl_sampler_stats {
	uint64_t samples;	  /* every sample taken (kept, idle, filtered) */
	uint64_t idle;		  /* idle-task samples dropped */
	uint64_t filtered;	  /* samples of processes not asked for */
	uint64_t filtered_kernel; /* ring: of filtered, dropped before a ring copy */
	uint64_t other_ns;	  /* samples of processes outside the pid namespace, dropped */
	uint64_t kstack_none, ustack_none; /* samples with no kernel/user stack */
	uint64_t collisions;		   /* BPF: stack-id hash collisions (recovered) */
	uint64_t map_full;		   /* BPF: a full map (recovered) */
	uint32_t max_stacks; /* BPF: counts-map entries of a set (max_stacks, or as sized) */
	uint64_t recovered;		   /* BPF: samples counted through the ring buffer */
	uint64_t lost;			   /* samples lost for good (full ring buffers) */
	uint64_t lost_records;		   /* ring: PERF_RECORD_LOST* (records, not samples) */
	uint64_t throttled; /* times the kernel throttled an event (PERF_RECORD_THROTTLE) */
	uint64_t truncated; /* stacks at FL_MAX_STACK_DEPTH frames */
	/* DWARF mode: how the unwinding of each kept sample with a user stack ended. */
	uint64_t unwind_complete, unwind_truncated, unwind_failed;
	/* kernel-dwarf: frames of the stack copies, and of them those stepped by the unwind tables. */
	uint64_t unwind_frames, unwind_row_steps;
	/*
	 * kernel-dwarf: user stacks walked by the program; those walked by
	 * unwind tables alone, those where frame pointers stood in for a file
	 * whose table was not loaded yet, or for code without CFI; and how the
	 * walks ended.
	 */
	uint64_t uw_walked, uw_tables, uw_fp_notable, uw_fp_nocfi;
	uint64_t uw_complete, uw_stopped, uw_truncated;
	/*
	 * ... of them, those sent to user space as stack copies because a
	 * table was not loaded yet (unwound there: their outcomes are in
	 * unwind_*), and those that could not be (the copies' ring full).
	 */
	uint64_t uw_copied, uw_copy_full;
	/* kernel-dwarf: the unwind tables (see lib/unwinding/ktables.h). */
	uint64_t tables_files, tables_loaded, tables_no_cfi, tables_over_budget, tables_pending;
	uint64_t tables_bytes, tables_peak_bytes, tables_code_bytes, tables_rows;
	uint64_t tables_build_ns, tables_first_ns, tables_last_ns, tables_unloaded;
	uint64_t tables_procs, tables_maps_dropped;
	/* Big files loaded by windows of code (in tables_loaded), their windows, the CFI held for them. */
	uint64_t tables_windowed, tables_windows, tables_src_bytes;
	uint64_t tables_windows_now; /* windows built at once for stack copies that waited enough */
	/* opts.python: samples with Python frames. */
	uint64_t py_samples;
	/* Samples whose Python frames were read but lost on the way (ring backend: no room for them). */
	uint64_t py_lost;
	struct fl_cpu_hotplug hotplug; /* CPUs offline for part of the time: not sampled then */
	/* Stacks fl_sampler__take() looked at, over the sampler's life: what the takes cost. */
	uint64_t take_examined;
	/* BPF: gathers (the kernel's maps emptied into user space), and the entries they moved. */
	uint64_t gathers, gathered;
};

/*
 * Opens the events on every online CPU (disabled) and, for BPF, loads and
 * attaches the program. Returns 0, or -errno: -EACCES/-EPERM when not
 * permitted, -EINVAL for a frequency the kernel refuses; for the BPF
 * backend any libbpf error (the caller may then try the ring backend).
 */
int fl_sampler__new(enum fl_sampler_backend backend, const struct fl_sampler_opts *opts,
		    struct fl_sampler **ret);
/* Accepts NULL. Detaches and closes everything. */
void fl_sampler__free(struct fl_sampler *s);

enum fl_sampler_backend fl_sampler__backend(const struct fl_sampler *s);

/* Adds a process to keep (the -- CMD child, after fork, before exec). */
int fl_sampler__add_pid(struct fl_sampler *s, int pid);

/*
 * Where the samples of processes not asked for are dropped: 1 in the
 * kernel, before they reach user space (the BPF backend always; the ring
 * backend with a BPF program on its events); 0 nowhere yet (no process
 * asked for: the ring backend loads its program with the first); -errno
 * why the ring backend could not load or attach it (no BPF, no
 * privileges): it then reads every process's samples from its rings and
 * drops them itself, which costs CPU and ring space on a busy machine.
 */
int fl_sampler__kernel_filter(const struct fl_sampler *s);

int fl_sampler__start(struct fl_sampler *s);
int fl_sampler__stop(struct fl_sampler *s);

/*
 * Fds to watch for readability (the BPF overflow ring buffer, the perf
 * rings), and the call that consumes what they hold. Call poll after stop
 * too, before drain.
 */
size_t fl_sampler__nr_fds(const struct fl_sampler *s);
int fl_sampler__fd(const struct fl_sampler *s, size_t i);
int fl_sampler__poll(struct fl_sampler *s);
/*
 * CPU hotplug: reopens (and enables) the events of CPUs that went offline
 * since the previous call and are back (see fl_cpu_events__stalled()).
 * Call it about once a second while sampling, after poll. The CPUs done
 * go to cpus (the first max); returns their number, or -errno for a failure
 * other than a CPU still offline. The fds may have changed then: watch
 * them again.
 */
int fl_sampler__revive(struct fl_sampler *s, int *cpus, size_t max);

/*
 * Calls fn for every distinct stack recorded so far (and not taken). The
 * record and the arrays it points to are valid during the call only. A
 * non-zero return from fn stops the walk and is returned. Once, at the
 * end: stacks are counted in the stats (truncated) as they are drained.
 */
typedef int (*fl_raw_stack_fn)(const struct fl_raw_stack *st, void *ctx);
int fl_sampler__drain(struct fl_sampler *s, fl_raw_stack_fn fn, void *ctx);

/*
 * The same stacks as a drain now, counted nowhere: called before the drain
 * (after fl_sampler__stop() and the last poll) by a caller that wants to
 * look at them first (which files they are in, say).
 */
int fl_sampler__peek(struct fl_sampler *s, fl_raw_stack_fn fn, void *ctx);

/*
 * Calls fn for every distinct stack of the processes pids (ascending, no
 * duplicates) recorded so far, and forgets them: a later drain or take
 * does not give them again, and a process taking over one of these pids
 * starts unfiltered by the old one's state. For processes that exited, so
 * that a long recording's memory does not grow with every process the
 * machine ever ran. Returns 0, -EINVAL, -ENOMEM or fn's non-zero return.
 */
int fl_sampler__take(struct fl_sampler *s, const uint32_t *pids, size_t n, fl_raw_stack_fn fn,
		     void *ctx);

/*
 * Moves what the kernel counted so far into user space (BPF backend; 0 and
 * nothing done elsewhere). To be called about once a second: the kernel's
 * maps are sized for a second of samples, and a take then looks at the
 * stacks of the processes it takes only. Returns 0 or -ENOMEM.
 */
int fl_sampler__gather(struct fl_sampler *s);

/*
 * Calls fn for every distinct stack recorded since the previous snapshot
 * (or the start), as drain does, and starts counting anew while sampling
 * goes on: no sample is counted twice or missed between two snapshots
 * (BPF: the program writes the other set of maps meanwhile). The ring
 * backend gives the stacks of its rings as last read (call poll first);
 * samples whose process was not yet known then come with a later
 * snapshot. The BPF backend needs opts.snapshots (-EINVAL without). On an
 * error (-ENOMEM, fn's return) the stacks not yet given are lost.
 */
int fl_sampler__snapshot(struct fl_sampler *s, fl_raw_stack_fn fn, void *ctx);

struct fl_tmap;

/*
 * kernel-dwarf: the executable mappings of process pid are now maps[0..n)
 * (sorted by start; fl_tracker__changed() gives them), n == 0: it exited.
 * Unwind tables of files not seen before are built in the background.
 * Returns 0, -EOPNOTSUPP (not kernel-dwarf) or -errno.
 */
int fl_sampler__set_maps(struct fl_sampler *s, uint32_t pid, const struct fl_tmap *maps, size_t n);
/* kernel-dwarf: drops the tables of files no process mapped for a while (no-op otherwise). */
void fl_sampler__trim_tables(struct fl_sampler *s);
/* kernel-dwarf: waits up to ms for the tables queued to be built (tests). */
void fl_sampler__settle_tables(struct fl_sampler *s, unsigned int ms);
/* Whether user stacks are walked in the kernel (kernel-dwarf loaded). */
bool fl_sampler__kdwarf(const struct fl_sampler *s);

struct fl_py_proc;
struct fl_py_code;

/* Whether Python frames are read (opts.python, and the kernel loaded the program that reads them). */
bool fl_sampler__python(const struct fl_sampler *s);

/*
 * opts.python: process pid runs the CPython described by p (where its
 * runtime is, the offsets of its version); p NULL: it does not (any more).
 * Returns 0, -EOPNOTSUPP (no Python support loaded) or -errno.
 */
int fl_sampler__set_python(struct fl_sampler *s, uint32_t pid, const struct fl_py_proc *p);
/*
 * The names of code object code of process pid as the program read them
 * (hostile: the process wrote them). Returns 0, -ENOENT (not read, or
 * forgotten since), -EOPNOTSUPP.
 */
int fl_sampler__py_code(struct fl_sampler *s, uint32_t pid, uint64_t code, struct fl_py_code *out);

/* Counters so far (cheap: reads the per-CPU counters). */
int fl_sampler__stats(struct fl_sampler *s, struct fl_sampler_stats *st);

#endif
