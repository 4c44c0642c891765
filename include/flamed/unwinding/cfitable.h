/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The unwind table of one ELF file: its CFI compiled into the rows the in-kernel walker evaluates. */
#ifndef FLAMED_CFITABLE_H
#define FLAMED_CFITABLE_H

#include <stddef.h>
#include <stdint.h>

#include "flamed/unwind_abi.h"

/*
 * The table is compiled from the file's .eh_frame and .debug_frame (where
 * .eh_frame has no FDE): libdw enumerates the CIEs and FDEs, and each FDE's
 * instructions are interpreted once (lib/unwinding/cfa_interp.h), giving
 * the rules libdw gives the user-space unwinder (unwind.h), one row per
 * range of code whose rule for the
 * CFA, the caller's rbp and the return address is one. Row semantics are
 * unwind_abi.h's; rules no row type holds are FL_CFA_UNSUPPORTED rows,
 * counted by reason.
 *
 * Where FDEs overlap (broken files), each byte of code takes its rule from
 * one FDE: an .eh_frame FDE before a .debug_frame one, then the one that
 * starts last (the innermost, as .eh_frame_hdr's search finds it), then
 * the first in the section. Within that FDE the rule is what libdw
 * computes for the byte, from that FDE.
 */

/* Why CFI rows became FL_CFA_UNSUPPORTED. */
enum fl_cfitable_why {
	FL_CFITABLE_WHY_CFA, /* a CFA rule no row holds (an expression, r12 + a 64-bit N) */
	FL_CFITABLE_WHY_RA,  /* the return address not at an offset from the CFA */
	FL_CFITABLE_WHY_RBP, /* rbp saved some other way (in a register, an expression) */
	FL_CFITABLE_WHY_SIGNAL, /* a signal frame not laid out as the kernel's rt_sigframe */
	FL_CFITABLE_WHY_LIBDW,	/* broken CFI: instructions that cannot be read, from there on */
	FL_CFITABLE_WHY_WORK,	/* beyond the work the compiler spends on one file */
	FL_CFITABLE_WHY__MAX,
};

/* Rows are counted by type, those of FL_CFA_REG + N together (FL_CFITABLE_ROWS_REG). */
#define FL_CFITABLE_ROWS_REG (FL_CFA_UNSUPPORTED + 1)
#define FL_CFITABLE_ROW_KINDS (FL_CFITABLE_ROWS_REG + 1)

static inline unsigned fl_cfitable__row_kind(unsigned cfa_type)
{
	return cfa_type <= FL_CFA_UNSUPPORTED ? cfa_type : FL_CFITABLE_ROWS_REG;
}

struct fl_cfitable_counts {
	uint64_t fdes;		   /* FDEs read, .eh_frame and .debug_frame */
	uint64_t fdes_debug_frame; /* of them from .debug_frame */
	/* Not compiled: empty, outside the executable segments, or a pointer encoding not read. */
	uint64_t fdes_unused;
	uint64_t cfi_rows; /* rows of CFI of the FDEs compiled */
	/* CFI rows (or, for LIBDW and WORK, FDE ranges) made FL_CFA_UNSUPPORTED, by reason. */
	uint64_t unsupported[FL_CFITABLE_WHY__MAX];
	uint64_t rows[FL_CFITABLE_ROW_KINDS]; /* the table's rows by fl_cfitable__row_kind() */
	uint64_t work; /* bytes of CFI interpreted, as the bound counts them */
};

struct fl_cfitable {
	/*
	 * Sorted by pc, strictly increasing, no two neighbours with the same
	 * rule; the last row is FL_CFA_NONE, as is every row at a gap between
	 * FDEs. At most FL_UW_MAX_ROWS. Owned by the table.
	 */
	struct fl_uw_row *rows;
	size_t nr;
	uint64_t
		code_bytes; /* p_filesz of the executable PT_LOAD segments: table bytes per code byte */
	struct fl_cfitable_counts counts;
};

/*
 * Compiles the table of the ELF file open at fd (which must be a regular
 * file; it stays the caller's, and its offset is not moved): read with
 * pread through libelf, never mapped, within the size limits of the
 * user-space unwinder. Fills *out on success only; fl_cfitable__fini()
 * frees it. Returns 0, or
 *   -ENOENT   no CFI row for any executable byte,
 *   -EFBIG    more than FL_UW_MAX_ROWS rows, more than 2^21 FDEs in
 *             executable segments (compiling holds about 175 bytes for each;
 *             gcc's cc1 has 45 thousand), code beyond 4 GiB of
 *             file offsets, a CFI section over 256 MiB, or a header
 *             claiming more sections or segments than fl_elfsize allows,
 *   -EINVAL   not an ELF file, or not a regular file,
 *   -ENOTSUP  not x86-64 ELF64 little-endian,
 *   -ENOMEM.
 * The work spent on one file is bounded (a CIE's instructions are
 * interpreted again for each run of FDEs sharing it; a file can make that
 * often): past the bound, FDEs are FL_CFA_UNSUPPORTED
 * (FL_CFITABLE_WHY_WORK).
 */
int fl_cfitable__from_fd(int fd, struct fl_cfitable *out);

/*
 * Same, from an ELF image in memory (read only, not kept), whose
 * compressed .debug_frame is not read (its inflated size goes unchecked).
 */
int fl_cfitable__from_memory(const void *image, size_t size, struct fl_cfitable *out);

/*
 * Same, from this process's vdso, which is the image every process on
 * this kernel maps (its [vdso] mapping's pgoff is 0: file offsets are
 * offsets into the image). -ENOENT when there is no vdso.
 */
int fl_cfitable__vdso(struct fl_cfitable *out);

/*
 * A file's CFI read once and held, to compile its table one range of code
 * at a time: the in-kernel walker's windows of a big file, of which
 * samples reach a few (libLLVM's whole table is a million rows).
 */
struct fl_cfitable_src;

/*
 * Reads the CFI of the ELF file open at fd, as fl_cfitable__from_fd()
 * does, with its checks and errors; the fd stays the caller's and is
 * needed no more.
 */
int fl_cfitable_src__open(int fd, struct fl_cfitable_src **ret);

/* The whole table: what fl_cfitable__from_fd() gives. */
int fl_cfitable_src__all(struct fl_cfitable_src *s, struct fl_cfitable *out);

/*
 * The rows for the file offsets [lo, hi): those of the whole table, the
 * one in force at lo starting at lo, ending with a FL_CFA_NONE row at hi
 * (or before, where no CFI is the rule up to hi; hi below 4 GiB). Only the FDEs reaching into the range are interpreted (their index
 * is made on the first call). fl_cfitable__find() gives the whole table's
 * row for every offset in the range. The work bound is the file's, over
 * all ranges. code_bytes is hi - lo. Returns 0, -ENOENT (no CFI in the
 * range, or in the file), -EINVAL (lo >= hi), -EFBIG or -ENOMEM.
 */
int fl_cfitable_src__range(struct fl_cfitable_src *s, uint64_t lo, uint64_t hi,
			   struct fl_cfitable *out);

/*
 * Makes the index of the FDEs ranges use (else the first range does): 0,
 * or the error every range will give (-ENOENT, -EFBIG, -ENOMEM). Its memory
 * is in fl_cfitable_src__bytes() from then on.
 */
int fl_cfitable_src__index(struct fl_cfitable_src *s);

/*
 * Lets go of the CFI read, once the index is made (made now if it was
 * not): ranges then read the FDEs and CIEs they need from the file at fd
 * (a copy of the fd is kept; the caller's stays its own), with pread, so
 * that a big file's .eh_frame (libLLVM's: 5 MB) is not held between them.
 * A file changed since is read as any file is: its ranges may then fail.
 * Returns 0, -ENOTSUP for CFI that must stay (.debug_frame's, which may be
 * compressed), the index's error, or -errno of the fd's copy; s holds its
 * CFI as before on failure. fl_cfitable_src__all() is not for a released s.
 */
int fl_cfitable_src__release(struct fl_cfitable_src *s, int fd);

/*
 * A source for ranges alone, of the file open at fd (the caller's still),
 * made without reading its CFI: the index is .eh_frame_hdr's search table,
 * which the linker sorted, and ranges read the FDEs and CIEs they need as a
 * released source does (fl_cfitable_src__release()). For big files: libLLVM
 * is indexed by 0.7 MB read instead of 5 MB read and parsed. A range reads
 * the FDEs starting in it and the few before it, as no linker writes FDEs
 * that overlap; where they do, a range may miss the rule of one. Returns
 * 0, -ERANGE when the file has less code than min_code (its whole table
 * costs less; a file smaller than that is not even opened), -ENOTSUP when it has no such table to use (none, an
 * encoding linkers do not write, one not for its .eh_frame, .debug_frame
 * CFI too), or fl_cfitable_src__open()'s errors (-EIO: the table could not
 * be read).
 */
int fl_cfitable_src__open_hdr(int fd, uint64_t min_code, struct fl_cfitable_src **ret);

/* The fd a released source reads its file through (its own; the file indexed), else -1. */
int fl_cfitable_src__fd(const struct fl_cfitable_src *s);

/* Bytes of code in the file's executable segments. */
uint64_t fl_cfitable_src__code_bytes(const struct fl_cfitable_src *s);
/* Memory s holds: the CFI sections read (until released), and the index once made. */
uint64_t fl_cfitable_src__bytes(const struct fl_cfitable_src *s);
/* Accepts NULL. */
void fl_cfitable_src__free(struct fl_cfitable_src *s);

/* Frees the rows; t is empty (zeroed) again. Accepts an empty or zeroed table. */
void fl_cfitable__fini(struct fl_cfitable *t);

/*
 * The row covering file offset off: the last row whose pc <= off (the
 * search the BPF walker does), or NULL when off is before the first row.
 * A row of FL_CFA_NONE means no CFI covers off. The pointer lives until
 * fl_cfitable__fini().
 */
const struct fl_uw_row *fl_cfitable__find(const struct fl_cfitable *t, uint64_t off);

/* A short name for a reason ("cfa", "ra", ...), for -v output. */
const char *fl_cfitable__why_name(enum fl_cfitable_why why);

#endif
