/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What bpf/profile.bpf.c's user-stack walker and lib/unwinding/cfitable.c
 * share: the unwind table of one ELF file, and the executable mappings of
 * one process (x86-64).
 *
 * A file's table is a sorted array of rows, one per range of code with one
 * rule: from the row's pc up to the next row's pc, the caller's frame is
 * found as the row says. pcs are file offsets (an address of the file's
 * own terms moved by its PT_LOAD segment's p_offset - p_vaddr): the walker
 * looks up addr - map.start + map.pgoff, which is the same for every process
 * mapping the file, wherever it was loaded. Rows at gaps between functions
 * and the last row of a table are FL_CFA_NONE: no rule there.
 */
#ifndef FLAMED_UNWIND_ABI_H
#define FLAMED_UNWIND_ABI_H

#include <linux/types.h>

/* How the canonical frame address (the caller's stack pointer) is found. */
enum fl_cfa_type {
	FL_CFA_NONE = 0, /* no CFI covers this pc */
	FL_CFA_RSP = 1,	 /* rsp + cfa_off */
	FL_CFA_RBP = 2,	 /* rbp + cfa_off */
	/*
	 * glibc's and binutils' PLT entries: rsp + cfa_off, plus 8 when
	 * (pc & 15) >= plt_threshold (the push of the entry's second half);
	 * plt_threshold is kept in rbp_off (no rbp rule in a PLT stub).
	 */
	FL_CFA_PLT = 3,
	/*
	 * A signal frame (the sigreturn trampoline, CIE augmentation "S"):
	 * the interrupted context's rsp, rbp and rip are read from rsp +
	 * cfa_off, rsp + rbp_off and rsp + ra_off; the next pc is exact (the
	 * interrupted instruction, not a return address).
	 */
	FL_CFA_SIGNAL = 4,
	/* cfa = *(rbp + cfa_off): stack realignment (gcc's DRAP code in main and AVX code). */
	FL_CFA_DEREF_RBP = 5,
	/* The return address is undefined here: the outermost frame (_start, a thread's start). */
	FL_CFA_OUTERMOST = 6,
	/* CFI exists but its rule is one the walker does not evaluate: frame pointers for this frame. */
	FL_CFA_UNSUPPORTED = 7,
	/*
	 * FL_CFA_REG + N (N a DWARF register, 0-15, not rsp or rbp): register N
	 * + cfa_off. LLVM's stack-probe loops keep the CFA in r11, glibc's
	 * _dl_runtime_resolve in rbx, gcc's stack realignment in r10 for a few
	 * instructions. Both unwinders evaluate the rule where they know the
	 * register: in the sampled frame (the walker reads it from the task's
	 * saved user registers). Past it the walker follows only rsp, rbp and
	 * rip, and rbx as the rows say (rbx_off), so a CFA in rbx is found in
	 * callers too; for another register it takes frame pointers (with rbp
	 * 0: the stack stops there).
	 */
	FL_CFA_REG = 16,
};

/* The DWARF register of a FL_CFA_REG row, or -1 for another type. */
#define FL_CFA_REG_OF(type) ((type) >= FL_CFA_REG && (type) < FL_CFA_REG + 16 ? (int)(type) - FL_CFA_REG : -1)

/*
 * The word of x86-64's struct pt_regs (r15 ... ss) holding each DWARF
 * register (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8 ... r15, rip), as
 * an array initializer: for the walker reading a sampled frame's register,
 * and for user space reading a stack copy's.
 */
#define FL_PTREGS_OF_DWARF {10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16}

/* Where the caller's rbp is. */
enum fl_rbp_type {
	FL_RBP_SAME = 0,   /* unchanged (not saved, or "same value"/undefined) */
	FL_RBP_AT_CFA = 1, /* at cfa + rbp_off */
	FL_RBP_AT_RBP = 2, /* at rbp + rbp_off (DW_CFA_expression: DW_OP_breg6) */
};

/*
 * Where the caller's rbx is, in rbx_off: FL_RBX_SAME, FL_RBX_UNKNOWN, or
 * at cfa + rbx_off (SIGNAL: rsp + rbx_off). Only rbx of the callee-saved
 * registers is followed: the one a CFA is kept in across calls
 * (_dl_runtime_resolve's, ld.so's lazy binding, FL_CFA_REG + 3). No save
 * slot is at offset 0 or 1 from the CFA (slots are 8 bytes below it).
 */
#define FL_RBX_SAME 0	 /* unchanged: not saved (callee-saved, so not changed either) */
#define FL_RBX_UNKNOWN 1 /* a rule the walkers do not follow: not known past this frame */

/*
 * ra_off of a row whose return address is in a register, not on the stack:
 * FL_RA_REG + N for DWARF register N (0-15). glibc's __vfork pops it into
 * rdi around its system call (the child, sharing the stack, may overwrite
 * the slot), and both parent and child are sampled there, the parent in
 * the kernel's fork work, the child on its way back. Known in the sampled
 * frame only (from the task's saved registers); the CFA may then equal
 * rsp, since nothing of the frame is on the stack. No offset from the CFA
 * is this low.
 */
#define FL_RA_REG (-32768)
#define FL_RA_REG_OF(off)                                                                          \
	((off) >= FL_RA_REG && (off) < FL_RA_REG + 16 ? (int)(off) - FL_RA_REG : -1)

struct fl_uw_row {
	__u32 pc;      /* file offset where this rule starts */
	__u8 cfa_type; /* enum fl_cfa_type */
	__u8 rbp_type; /* enum fl_rbp_type (SIGNAL: unused) */
	/* return address at cfa + ra_off (x86-64: -8), or FL_RA_REG + N; SIGNAL: rsp + ra_off */
	__s16 ra_off;
	__s32 cfa_off;
	__s16 rbp_off;
	__s16 rbx_off; /* FL_RBX_SAME, FL_RBX_UNKNOWN, or the caller's rbx at cfa + rbx_off */
};

/* Entries of the walker's per-CPU cache of rows (bpf/unwind.bpf.h): slots named by bits of a hash. */
#define FL_UW_ROW_CACHE_BITS 12
#define FL_UW_ROW_CACHE (1u << FL_UW_ROW_CACHE_BITS)

/* Rows of one compiled table, at most (see FL_UW_TABLE_MAX_ROWS for a loaded one). */
#define FL_UW_MAX_ROWS (1u << 23)
/* Files with a table loaded at once (ids 1..FL_UW_MAX_FILES-1; 0 means none). */
#define FL_UW_MAX_FILES 8192

/*
 * Tables are kept a page at a time: 4 KiB holding 256 rows, or 1024 pcs
 * of a table's index. A table of n rows takes FL_UW_ROW_PAGES(n) pages of
 * rows, the rows one after the other (row i in page i / 256, slot i %
 * 256); when that is more than one page, one page of index follows them:
 * the pc of the first row of each row page. The walker reads two pages per
 * frame, the index and the row page it names: a map lookup and a few cache
 * lines each. (A binary search over the rows themselves touched another
 * page, and in a big table most often missed the TLB, at each of its 15
 * or so steps: 570 ns per frame on a busy build, more than half of the
 * walk.) A loaded table has at most FL_UW_TABLE_MAX_ROWS rows, one page of
 * index: a file with more is loaded by windows.
 */
#define FL_UW_PAGE_BYTES 4096
#define FL_UW_PAGE_ROWS 256
#define FL_UW_PAGE_PCS 1024
#define FL_UW_TABLE_MAX_ROWS (FL_UW_PAGE_ROWS * FL_UW_PAGE_PCS)
/* Iterations of the walker's searches in a page: log2 of its entries. */
#define FL_UW_ROW_STEPS 8
#define FL_UW_PCS_STEPS 10
#define FL_UW_ROW_PAGES(n) (((n) + FL_UW_PAGE_ROWS - 1) / FL_UW_PAGE_ROWS)
/* Pages of a table of n rows: its rows, and its index if it has more than one page of them. */
#define FL_UW_TABLE_PAGES(n) (FL_UW_ROW_PAGES(n) + (FL_UW_ROW_PAGES(n) > 1 ? 1 : 0))

union fl_uw_page {
	struct fl_uw_row rows[FL_UW_PAGE_ROWS];
	__u32 pcs[FL_UW_PAGE_PCS];
};

/*
 * Tables live in chunks: BPF arrays of pages, each holding the tables of
 * many files one after the other. (An array per file would cost a
 * synchronize_rcu(), some milliseconds, for each file put into the array
 * of maps; a chunk costs one for many files.) A file's table is where its
 * location (the table_loc map) says: chunk, first page, rows. 0 means not
 * loaded yet; FL_UW_LOC_NONE no table for good (no usable CFI, unreadable,
 * over the memory budget): frame pointers for its code. One 64-bit word, so
 * that the walker never reads half of an update.
 */
#define FL_UW_MAX_CHUNKS 64
#define FL_UW_LOC_NONE 0xffffffffffffffffULL
#define FL_UW_LOC(chunk, start, len) ((__u64)(len) << 40 | (__u64)(chunk) << 32 | (__u64)(start))
#define FL_UW_LOC_LEN(loc) ((__u32)((loc) >> 40))
#define FL_UW_LOC_CHUNK(loc) ((__u32)((loc) >> 32) & 0xff)
#define FL_UW_LOC_START(loc) ((__u32)(loc))

/*
 * A big file's table is loaded a window of code at a time, those samples
 * reach (compiling the whole of libLLVM's is a million rows, of which a
 * program runs a few): its location is then FL_UW_LOC_WINDOWED, and window
 * w, the file offsets [w * FL_UW_WIN_BYTES, (w + 1) * FL_UW_WIN_BYTES), has
 * a table of its own, located by the win_loc map under FL_UW_WIN_KEY()
 * (absent: not loaded yet; FL_UW_LOC_NONE: no CFI there). A window's
 * table holds the rule in force at its first byte.
 */
#define FL_UW_WIN_SHIFT 18
#define FL_UW_WIN_BYTES (1ULL << FL_UW_WIN_SHIFT)
#define FL_UW_LOC_WINDOWED 0xfffffffffffffffeULL
#define FL_UW_WIN_KEY(file_id, win) ((__u64)(file_id) << 32 | (__u32)(win))

/*
 * The outermost "frame" of a walk that stopped before the thread's first
 * frame (never a user address): user space shows it as a marker frame. The
 * same value as FL_UIP_FAILED of --call-graph dwarf.
 */
#define FL_UW_STOPPED_IP 0xfffffffffffffffdULL

/*
 * What the walker lacked, sent through the uw_wants ring: a process whose
 * mappings it does not have (tgid, file_id 0), a file whose table is not
 * loaded (file_id; window: the window of the pc, should the file be a
 * windowed one), or a window of a windowed file (file_id, window, flags
 * FL_UW_WANT_WINDOW).
 */
struct fl_uw_want {
	__u32 tgid;
	__u32 file_id;
	__u32 window;
	__u32 flags;
};

#define FL_UW_WANT_WINDOW 1u

/*
 * Keys of the uw_asked map: a tgid's is the tgid, a file's FL_UW_ASKED_FILE
 * | its id, a window's FL_UW_ASKED_WIN | FL_UW_WIN_KEY().
 */
#define FL_UW_ASKED_FILE (1ULL << 62)
#define FL_UW_ASKED_WIN (1ULL << 63)

/* One executable mapping of a process. */
struct fl_uw_map {
	__u64 start, end; /* [start, end) */
	__u64 pgoff;	  /* file offset of start */
	__u32 file_id;	  /* its table in the tables map; 0: none (anonymous memory, JIT) */
	__u32 flags;
};

/* Executable mappings per process, sorted by start (a process with more: the first ones). */
#define FL_UW_MAX_MAPS 256
/* Iterations of the mapping search: log2(FL_UW_MAX_MAPS) + 1. */
#define FL_UW_MAP_STEPS 9

struct fl_uw_proc {
	__u32 nr;
	__u32 pad;
	struct fl_uw_map maps[FL_UW_MAX_MAPS];
};

/*
 * A process with at most FL_UW_FEW_MAPS of them (most: a compiler, a
 * shell; a busy build's processes have 3 to 60) is kept in a map of its
 * own whose values are this struct, the start of struct fl_uw_proc: an
 * update copies and allocates 1 KiB, not 8 (six thousand updates in ten
 * seconds of a busy build), and the walker searches 6 steps, not 9. The
 * walker looks there first; a process is in one of the two maps.
 */
#define FL_UW_FEW_MAPS 32
#define FL_UW_FEW_STEPS 6

struct fl_uw_proc_few {
	__u32 nr;
	__u32 pad;
	struct fl_uw_map maps[FL_UW_FEW_MAPS];
};

#endif
