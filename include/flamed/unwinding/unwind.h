/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The DWARF unwinder: user registers + a copy of the user stack to return addresses, from CFI. */
#ifndef FLAMED_UNWIND_H
#define FLAMED_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flamed/sampling/tracker.h"

/*
 * A sample taken with PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER holds
 * the user registers and a copy of the user stack from the stack pointer
 * up. The unwinder walks it with the call frame information of the mapped
 * files (.eh_frame, else .debug_frame) through libdw's CFI interface, and
 * evaluates the rules itself: CFI is read once per ELF file (cached by
 * device and inode) and shared by every process that maps the file; per
 * sample nothing is built or torn down. Code without CFI (a JIT's in
 * anonymous memory, a gap in a file's) is stepped by frame pointers, as the
 * in-kernel walker steps it.
 *
 * Registers are in DWARF numbering (x86-64: 0 rax, 1 rdx, 2 rcx, 3 rbx,
 * 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15, 16 the return address / rip).
 */
#define FL_UNWIND_NR_REGS 17
#define FL_UNWIND_REG_BX 3 /* x86-64 */
#define FL_UNWIND_REG_BP 6 /* x86-64 */
#define FL_UNWIND_REG_SP 7
#define FL_UNWIND_REG_IP 16

/* The sample_regs_user mask to ask perf for, and how to read what it gives. */
uint64_t fl_unwind__perf_regs_mask(void);
/*
 * perf_regs holds the registers of the mask in bit order (as the sample
 * carries them); fills regs in DWARF numbering.
 */
void fl_unwind__regs_from_perf(const uint64_t *perf_regs, uint64_t regs[FL_UNWIND_NR_REGS]);

struct fl_unwind_sample {
	uint32_t pid;  /* tgid: whose mappings */
	uint64_t time; /* when it was taken (CLOCK_MONOTONIC ns): the mappings of then */
	uint64_t regs[FL_UNWIND_NR_REGS];
	const unsigned char *stack; /* user memory from regs[FL_UNWIND_REG_SP] up */
	size_t stack_size;
	/*
	 * A frame a walk reached, not the sampled one: the registers known
	 * (bit r: regs[r]; 0: all), and its pc a return address (ra).
	 */
	uint32_t valid;
	bool ra;
	/*
	 * Taken in the kernel: the registers are those the task entered it
	 * with, its pc just past a system call's instruction (or at the one
	 * that trapped).
	 */
	bool in_kernel;
};

enum fl_unwind_outcome {
	FL_UNWIND_COMPLETE,  /* reached the outermost frame (undefined return address) */
	FL_UNWIND_TRUNCATED, /* the stack copy ended first */
	FL_UNWIND_FAILED,    /* an unmapped pc, an unreadable file, a bad rule or frame pointer */
	FL_UNWIND_OUTCOME__MAX,
};

/* The mapping holding addr in process pid at time, or NULL (fl_tracker__find_at() fits). */
typedef const struct fl_tmap *(*fl_unwind_find_map_fn)(void *ctx, uint32_t pid, uint64_t addr,
						       uint64_t time);

struct fl_budget;

struct fl_unwind_opts {
	size_t sz; /* sizeof(struct fl_unwind_opts) */
	fl_unwind_find_map_fn find_map;
	void *ctx;
	/*
	 * Charged for the CFI each file's headers say it holds, before it is
	 * read (files are other users'); a file whose CFI does not fit is
	 * not read (its pcs fail to unwind) until a fl_unwinder__trim() let
	 * it be tried again. NULL: no limit. Borrowed: it must outlive the
	 * unwinder.
	 */
	struct fl_budget *budget;
	/*
	 * Files with this much code or more that have an .eh_frame_hdr are
	 * indexed by it, their CFI not read whole, and stepped by rows
	 * compiled a window at a time (unwind_abi.h's windows; a rule the rows
	 * do not hold has the CFI read whole after all). 0: 4 MiB, what the
	 * kernel's tables call big; UINT64_MAX: never.
	 */
	uint64_t hdr_min_code;
};

struct fl_unwinder;

int fl_unwinder__new(const struct fl_unwind_opts *opts, struct fl_unwinder **ret);
/* Accepts NULL. */
void fl_unwinder__free(struct fl_unwinder *u);

/*
 * Unwinds one sample: ips[0] is the sampled pc, then one return address per
 * caller, leaf first (as they are: callers get the usual -1 adjustment only
 * when looked up). Writes at most max entries; *outcome says how it ended
 * (at max frames: truncated). Returns the number of ips written (>= 1
 * unless max is 0).
 */
size_t fl_unwinder__unwind(struct fl_unwinder *u, const struct fl_unwind_sample *s, uint64_t *ips,
			   size_t max, enum fl_unwind_outcome *outcome);

struct fl_unwind_stats {
	uint64_t outcomes[FL_UNWIND_OUTCOME__MAX];
	uint64_t files; /* ELF files opened for their CFI */
	/* Files whose CFI was not read for want of room in the budget, and the bytes it claimed. */
	uint64_t files_over_budget, bytes_over_budget;
	uint64_t bytes; /* charged to the budget now */
	uint64_t row_steps; /* frames stepped by a compiled row (fl_unwinder__set_rows(), or a window's) */
	uint64_t fp_steps;  /* frames stepped by frame pointers: code without CFI (a JIT's, a gap) */
	/*
	 * Files indexed by .eh_frame_hdr (fl_unwind_opts.hdr_min_code), their
	 * windows compiled, and those files whose CFI was read whole after all.
	 */
	uint64_t hdr_files, hdr_windows, hdr_whole;
};

void fl_unwinder__stats(const struct fl_unwinder *u, struct fl_unwind_stats *st);

struct fl_uw_row;

/*
 * The row of the compiled unwind table (unwind_abi.h) for file offset off
 * of the file mapped at m, copied into *row: 0; 1 none (no table loaded,
 * or a rule it does not hold: the file's CFI then); 2 the table says there
 * is no CFI at off (the file's is not searched); < 0 the unwind stops
 * there, failed (the caller will try it again).
 */
typedef int (*fl_unwind_row_fn)(void *ctx, const struct fl_tmap *m, uint64_t off,
				struct fl_uw_row *row);

/*
 * Frames whose file has a compiled table are stepped by its row (the rule
 * the in-kernel walker uses), without reading the file's CFI; the others,
 * and rules that need more than rip, rsp and rbp, as before. After a frame
 * stepped by a row only those three registers are known. fn NULL: none.
 * The caller keeps ctx alive until it sets fn again.
 */
void fl_unwinder__set_rows(struct fl_unwinder *u, fl_unwind_row_fn fn, void *ctx);

/*
 * Frees the files no sample unwound through since the call before the
 * last one, and those left unread for the budget (tried again when met):
 * what is held follows what is unwound (the daemon calls it every
 * interval).
 */
void fl_unwinder__trim(struct fl_unwinder *u);

#endif
