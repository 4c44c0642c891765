/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What bpf/profile.bpf.c and lib/sampling/sampler_bpf.c share: map layouts and records. */
#ifndef FLAMED_PROFILE_ABI_H
#define FLAMED_PROFILE_ABI_H

#include <linux/types.h>

/* Frames per stack: the kernel's default kernel.perf_event_max_stack. */
#define FL_MAX_STACK_DEPTH 127
#define FL_TASK_COMM_LEN 16

/*
 * Stack ids below zero are not ids: FL_STACK_NONE when that half of the
 * stack was not asked for, else the negative errno bpf_get_stackid()
 * returned (-EFAULT: no stack, e.g. a kernel thread's user half).
 */
#define FL_STACK_NONE (-1000)

/* Key of the counts map: one entry per distinct (process, thread, cgroup, stacks). */
struct fl_stack_key {
	__u32 tgid;
	__u32 tid; /* 0 unless per-thread counts were asked for */
	__s32 kstack;
	__s32 ustack;
	__s32 pystack; /* id in pystacks of its Python frames, or FL_STACK_NONE */
	__u32 pad;
	char comm[FL_TASK_COMM_LEN];
	__u64 cgroup_id; /* the task's cgroup v2 id with per_cgroup, else 0 */
};

/* --cgroup: the program keeps the samples of these cgroups and their descendants. */
#define FL_MAX_CGROUP_TARGETS 8

/*
 * Value of the counts map. The times (bpf_ktime_get_ns(), CLOCK_MONOTONIC)
 * bound when the key's samples were taken: user space names its addresses
 * with the mappings of those moments.
 */
struct fl_stack_val {
	__u64 count;
	__u64 first_ns, last_ns;
};

/* Indexes of the per-CPU counters array. */
enum fl_counter {
	FL_CNT_SAMPLES,	      /* every sample the program saw */
	FL_CNT_IDLE,	      /* idle-task samples dropped */
	FL_CNT_FILTERED,      /* samples of other processes (-p) */
	FL_CNT_KSTACK_NONE,   /* kernel stack: bpf_get_stackid -EFAULT */
	FL_CNT_USTACK_NONE,   /* user stack: -EFAULT */
	FL_CNT_COLLISION,     /* stack map hash collision (-EEXIST) */
	FL_CNT_STACKMAP_FULL, /* stack map had no free bucket (-ENOMEM) */
	FL_CNT_COUNTS_FULL,   /* counts map full (-E2BIG/-ENOMEM) */
	FL_CNT_OVERFLOW_SENT, /* samples sent whole through the ring buffer */
	FL_CNT_OVERFLOW_LOST, /* ... and those the full ring buffer dropped */
	FL_CNT_DONE,	      /* samples the program finished with (SAMPLES - DONE: inside now) */
	FL_CNT_OTHER_NS,      /* samples of tasks outside flamed's pid namespace (no targets) */
	/* --call-graph kernel-dwarf: user stacks walked in the program, and how. */
	FL_CNT_UW_WALKED,     /* user stacks walked */
	FL_CNT_UW_TABLES,     /* ... every frame by its file's unwind table */
	FL_CNT_UW_FP_NOTABLE, /* ... some frame by frame pointers: its file's table not loaded yet */
	FL_CNT_UW_FP_NOCFI,   /* ... some frame by frame pointers: code without CFI (JIT, asm) */
	FL_CNT_UW_COMPLETE,   /* ... (those not sent as copies) reached the outermost frame */
	FL_CNT_UW_STOPPED,    /* ... stopped before it (marked FL_UIP_FAILED) */
	FL_CNT_UW_TRUNCATED,  /* ... cut at FL_MAX_STACK_DEPTH frames */
	FL_CNT_UW_COPIED,     /* ... sent as a stack copy for user space (a table not loaded yet) */
	FL_CNT_UW_COPY_FULL,  /* ... not: the copies' ring was full (counted as walked) */
	FL_CNT_PY_WALKED,     /* samples with Python frames (python.bpf.h) */
	FL_CNT_MAX,
};

/*
 * A sample that could not be counted in the kernel (a stack-id collision, a
 * full map) is not dropped: its stacks travel whole through the ring buffer
 * and user space counts it. nr_* are frame counts in ips[]: kernel frames
 * first (leaf first), then user frames from ips[FL_MAX_STACK_DEPTH].
 */
struct fl_overflow_rec {
	__u64 time; /* bpf_ktime_get_ns() */
	__u32 tgid;
	__u32 tid;
	char comm[FL_TASK_COMM_LEN];
	__u64 cgroup_id; /* as in fl_stack_key */
	__s32 kerr; /* 0, FL_STACK_NONE, or -errno from bpf_get_stack */
	__s32 uerr;
	__u32 nr_kernel;
	__u32 nr_user;
	__u64 ips[2 * FL_MAX_STACK_DEPTH];
	__u32 nr_py; /* Python frames in py (python_abi.h), leaf first */
	__u32 pad;
	__u64 py[FL_MAX_STACK_DEPTH];
};

/*
 * kernel-dwarf: a sample whose walk met a file without its table yet (a
 * program just started, a library just loaded) is not counted as walked
 * (frame pointers there are guesswork in code without them): it travels
 * with its user registers and a copy of its user stack, as --call-graph
 * dwarf's samples do, and user space unwinds it with the same CFI. The
 * registers are the kernel's struct pt_regs of x86-64, 21 words; kernel
 * frames as in fl_overflow_rec.
 *
 * A walk that met the file a few frames up (a library just loaded, called
 * from deep in a program) sends the frames it walked (walked, nr_walked:
 * leaf first), and the registers and copy are those of the frame it
 * stopped at: the copy then holds the stack beyond them, which a copy from
 * the leaf would miss when the frames below are big. Of those registers
 * only rip, rsp and rbp are known, and rbx with FL_UCOPY_RBX; rip is a
 * return address unless FL_UCOPY_EXACT.
 */
#define FL_UCOPY_BYTES 32768
#define FL_UCOPY_CHUNK 512
#define FL_UCOPY_REGS 21
#define FL_UCOPY_RBX 1u
#define FL_UCOPY_EXACT 2u

struct fl_ucopy_rec {
	__u64 time;
	__u32 tgid;
	__u32 tid;
	char comm[FL_TASK_COMM_LEN];
	__u64 cgroup_id; /* as in fl_stack_key */
	__s32 kerr;
	__u32 nr_kernel;
	__u64 kips[FL_MAX_STACK_DEPTH];
	__u64 regs[FL_UCOPY_REGS];
	__u32 stack_size; /* bytes of stack from regs' rsp up */
	__u32 nr_py;	  /* as in fl_overflow_rec */
	__u64 py[FL_MAX_STACK_DEPTH];
	__u32 nr_walked;  /* 0: regs are the sampled frame's, all known */
	__u32 walked_flags; /* FL_UCOPY_* */
	__u64 walked[FL_MAX_STACK_DEPTH];
	__u8 stack[FL_UCOPY_BYTES];
};

#endif
