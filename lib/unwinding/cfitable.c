// SPDX-License-Identifier: GPL-2.0-or-later
/* The unwind table compiler: an ELF file's CFI as the rows of unwind_abi.h (cfitable.h). */
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed/files/regfile.h"
#include "flamed/unwinding/cfitable.h"
#include "unwinding/cfitable_ref.h"
#include "symbols/elfsize.h"
#include "unwinding/cfa_interp.h"
#include "unwinding/cfi_file.h"

/* DWARF register numbers of x86-64. */
#define REG_RBX 3
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16 /* the return address column: the caller's rip */

/*
 * The work the compiler spends on one file, in bytes of CFI interpreted.
 * The interpreter reads each FDE once, and a CIE once per run of FDEs
 * sharing it: libLLVM-14's 10 MB of instructions cost 10 MB. Only a
 * hostile file (FDEs alternating between two CIEs of long initial
 * instructions) gets near the bound. libdw's engine (the tests' reference)
 * interprets an FDE from its start for each row: an FDE costs its rows
 * times its size there (cc1: 250 MB), and a hostile FDE of a million rows
 * would cost 10^12 bytes.
 */
#define WORK_MAX ((uint64_t)1 << 30)
/* What one FDE (or one libdw call) costs besides its bytes. */
#define WORK_PER_CALL 64
/*
 * FDEs compiled per file, at most: each costs about 175 bytes while the
 * table is compiled, most in libdw's own tree of FDEs (2 million in a
 * made-up 48 MB .eh_frame: 1.4 s, 354 MB). cc1 has 45 thousand.
 */
#define MAX_FDES ((size_t)1 << 21)

/* An FDE's CIE, as far as reading the FDE needs it. */
struct ct_cie {
	Dwarf_Off offset; /* in the section; (Dwarf_Off)-1 for none yet */
	uint64_t size;	  /* its bytes there */
	bool usable;	  /* its FDEs' ranges can be read */
	uint8_t enc;	  /* of initial_location and address_range ('R') */
	bool zaug;	  /* FDEs have augmentation data ('z') */
	bool signalp;	  /* a signal frame ('S') */
	uint64_t ra_reg;  /* the return address column */
	/* The interpreter's view, its initial rules made on the first FDE that needs them. */
	const uint8_t *ins, *ins_end; /* initial instructions */
	bool interp_done;
	int interp_err;
	struct fl_cfa_cie interp;
};

/* One FDE as the interpreter reads it. */
struct ct_fde_ins {
	struct ct_cie *cie;
	const uint8_t *p, *end; /* its instructions; p NULL: its augmentation data is broken */
	uint64_t bytes;		/* the whole FDE's, for the work bound */
};

/* One FDE compiled: [lo, hi) as file offsets, and its spans. */
struct ct_fde {
	uint32_t lo, hi;
	uint32_t seq;	/* the order FDEs were read in: .eh_frame's first */
	bool debug;	/* from .debug_frame */
	uint32_t first; /* its spans: spans[first, first + nr), tiling [lo, hi) in order */
	uint32_t nr;	/* (spans number at most FL_UW_MAX_ROWS) */
};

/* A range of one FDE with one rule: [row.pc, end). */
struct ct_span {
	struct fl_uw_row row;
	uint32_t end;
};

struct ct {
	struct fl_cfi_file *f;
	struct ct_fde *fdes;
	size_t nr_fdes, cap_fdes;
	struct ct_span *spans;
	size_t nr_spans, cap_spans;
	uint64_t work;
	struct fl_cfitable_counts counts;
	bool libdw; /* rows asked of libdw (the reference engine of the tests) */
};

const char *fl_cfitable__why_name(enum fl_cfitable_why why)
{
	static const char *const names[FL_CFITABLE_WHY__MAX] = {
		[FL_CFITABLE_WHY_CFA] = "cfa",	   [FL_CFITABLE_WHY_RA] = "ra",
		[FL_CFITABLE_WHY_RBP] = "rbp",	   [FL_CFITABLE_WHY_SIGNAL] = "signal",
		[FL_CFITABLE_WHY_LIBDW] = "libdw", [FL_CFITABLE_WHY_WORK] = "work",
	};

	return (unsigned)why < FL_CFITABLE_WHY__MAX ? names[why] : "?";
}

/* --- rules ------------------------------------------------------------------------ */

/* Rules are compared without their pc: two neighbours with one rule are one row. */
static bool same_rule(const struct fl_uw_row *a, const struct fl_uw_row *b)
{
	return a->cfa_type == b->cfa_type && a->rbp_type == b->rbp_type && a->ra_off == b->ra_off &&
	       a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off && a->rbx_off == b->rbx_off;
}

static bool fits_s32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static bool fits_s16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

/* A DW_OP_bregN or DW_OP_bregx: the value of register *reg plus *off. */
static bool op_breg(const Dwarf_Op *op, unsigned *reg, int64_t *off)
{
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return true;
	}
	if (op->atom == DW_OP_bregx && op->number <= REG_RA) {
		*reg = (unsigned)op->number;
		*off = (int64_t)op->number2;
		return true;
	}
	return false;
}

/* A constant pushed by DW_OP_litN or DW_OP_constNu. */
static bool op_const(const Dwarf_Op *op, uint64_t *v)
{
	if (op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31) {
		*v = op->atom - DW_OP_lit0;
		return true;
	}
	switch (op->atom) {
	case DW_OP_const1u:
	case DW_OP_const2u:
	case DW_OP_const4u:
	case DW_OP_const8u:
	case DW_OP_constu:
		*v = op->number;
		return true;
	}
	return false;
}

static bool op_is_const(const Dwarf_Op *op, uint64_t want)
{
	uint64_t v;

	return op_const(op, &v) && v == want;
}

/* "reg + off" alone: a CFA rule of DW_CFA_def_cfa. */
static bool is_reg_plus(const Dwarf_Op *ops, size_t n, unsigned reg, int64_t *off)
{
	unsigned r;

	return n == 1 && op_breg(&ops[0], &r, off) && r == reg;
}

/* "*(reg + off)": gcc's stack realignment (DRAP) through rbp, the sigframe's saved rsp. */
static bool is_deref(const Dwarf_Op *ops, size_t n, unsigned reg, int64_t *off)
{
	unsigned r;

	return n == 2 && op_breg(&ops[0], &r, off) && r == reg && ops[1].atom == DW_OP_deref;
}

/*
 * binutils' CFA of a PLT entry (its .plt, and .plt.sec's with IBT):
 *   DW_OP_breg7 N; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litT;
 *   DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus
 * rsp + N, plus 8 once rip & 15 >= T: the entry's second half runs after
 * its push.
 */
static bool is_plt_cfa(const Dwarf_Op *ops, size_t n, int64_t *off, uint64_t *threshold)
{
	unsigned r;
	int64_t rip_off;

	return n == 9 && op_breg(&ops[0], &r, off) && r == REG_RSP &&
	       op_breg(&ops[1], &r, &rip_off) && r == REG_RA && rip_off == 0 &&
	       op_is_const(&ops[2], 15) && ops[3].atom == DW_OP_and &&
	       op_const(&ops[4], threshold) && *threshold <= 16 && ops[5].atom == DW_OP_ge &&
	       op_is_const(&ops[6], 3) && ops[7].atom == DW_OP_shl && ops[8].atom == DW_OP_plus;
}

/*
 * A register rule "saved at CFA + off" (DW_CFA_offset and kin): libdw
 * gives it as DW_OP_call_frame_cfa, then DW_OP_plus_uconst off unless off
 * is 0 (off negative, as an unsigned).
 */
static bool is_at_cfa(const Dwarf_Op *ops, size_t n, int64_t *off)
{
	if (n < 1 || n > 2 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (n == 1) {
		*off = 0;
		return true;
	}
	if (ops[1].atom != DW_OP_plus_uconst)
		return false;
	*off = (int64_t)ops[1].number;
	return true;
}

/*
 * A register rule "saved at reg + off" (DW_CFA_expression: DW_OP_bregN
 * off): libdw puts the DW_OP_call_frame_cfa the expression starts with
 * (DWARF pushes the CFA first) before it.
 */
static bool is_at_reg(const Dwarf_Op *ops, size_t n, unsigned reg, int64_t *off)
{
	unsigned r;

	return n == 2 && ops[0].atom == DW_OP_call_frame_cfa && op_breg(&ops[1], &r, off) &&
	       r == reg;
}

/*
 * The rules of one row as libdw's dwarf_frame_cfa() and
 * dwarf_frame_register() present them, whichever engine read them (the
 * interpreter of cfa_interp.h hands them out in the same form).
 */
struct ct_rule {
	const Dwarf_Op *ops; /* NULL when n is 0 */
	size_t n;
	bool ok;	/* false: not given (an expression that cannot be decoded) */
	bool undefined; /* registers: n 0 means undefined, not same value */
};

struct ct_rules {
	struct ct_rule cfa, ra, rbp, rbx; /* ra: register 16's */
	uint64_t ra_reg;		  /* the CIE's return address column */
	bool signalp;			  /* the CIE's "S" augmentation */
};

/* An offset rbx_off can hold: 16 bits, and not one of its two markers. */
static bool rbx_off_fits(int64_t off)
{
	return fits_s16(off) && off != FL_RBX_SAME && off != FL_RBX_UNKNOWN;
}

/*
 * A register's rule "saved at CFA + *off": said so, or, with the CFA at
 * rsp + cfa_off, "saved at rsp + N", which is CFA + N - cfa_off.
 */
static bool saved_at_cfa(const struct ct_rule *reg, const struct fl_uw_row *row, int64_t *off)
{
	if (is_at_cfa(reg->ops, reg->n, off))
		return true;
	/* (off fits first: both in 32 bits, the difference cannot overflow 64.) */
	if (row->cfa_type != FL_CFA_RSP || !is_at_reg(reg->ops, reg->n, REG_RSP, off) ||
	    !fits_s32(*off))
		return false;
	*off -= row->cfa_off;
	return true;
}

/*
 * The rt_sigframe the kernel pushes for a handler, as glibc's __restore_rt
 * describes it ("S" augmentation): the CFA is the saved rsp,
 *   CFA: DW_OP_breg7 160; DW_OP_deref
 * and the other registers are at rsp + their place in the ucontext:
 *   rbp: DW_OP_breg7 120   rip: DW_OP_breg7 168
 */
static bool signal_row(const struct ct_rules *r, struct fl_uw_row *row, enum fl_cfitable_why *why)
{
	int64_t sp_at, ra_at, bp_at, bx_at;

	if (!r->cfa.ok || !is_deref(r->cfa.ops, r->cfa.n, REG_RSP, &sp_at) ||
	    !is_at_reg(r->ra.ops, r->ra.n, REG_RSP, &ra_at) || !r->rbp.ok ||
	    !is_at_reg(r->rbp.ops, r->rbp.n, REG_RSP, &bp_at) || !fits_s32(sp_at) ||
	    !fits_s16(ra_at) || !fits_s16(bp_at)) {
		*why = FL_CFITABLE_WHY_SIGNAL;
		return false;
	}
	row->cfa_type = FL_CFA_SIGNAL;
	row->cfa_off = (__s32)sp_at;
	row->rbp_off = (__s16)bp_at;
	row->ra_off = (__s16)ra_at;
	/* rbx too, at rsp + N (rbp's neighbour in the ucontext). */
	row->rbx_off = FL_RBX_UNKNOWN;
	if (r->rbx.ok && is_at_reg(r->rbx.ops, r->rbx.n, REG_RSP, &bx_at) && rbx_off_fits(bx_at))
		row->rbx_off = (__s16)bx_at;
	return true;
}

/* The caller's rbp: unchanged, at CFA + N, or at rbp + N. */
static bool rbp_row(const struct ct_rule *rbp, struct fl_uw_row *row, enum fl_cfitable_why *why)
{
	int64_t off;

	*why = FL_CFITABLE_WHY_RBP;
	if (!rbp->ok)
		return false;
	if (!rbp->n) {
		/* Same value, or undefined (the walker can do no better than keep it). */
		row->rbp_type = FL_RBP_SAME;
		return true;
	}
	if (row->cfa_type == FL_CFA_PLT)
		return false; /* rbp_off holds the PLT threshold */
	if (saved_at_cfa(rbp, row, &off) && fits_s16(off))
		row->rbp_type = FL_RBP_AT_CFA;
	else if (is_at_reg(rbp->ops, rbp->n, REG_RBP, &off) && fits_s16(off))
		row->rbp_type = FL_RBP_AT_RBP;
	else
		return false;
	row->rbp_off = (__s16)off;
	return true;
}

/*
 * The caller's rbx: unchanged, or at CFA + N; any other rule leaves it
 * unknown past this frame, which costs only a caller whose CFA is in rbx
 * (a row never fails for it).
 */
static void rbx_row(const struct ct_rule *rbx, struct fl_uw_row *row)
{
	int64_t off;

	row->rbx_off = FL_RBX_UNKNOWN;
	if (!rbx->ok)
		return;
	if (!rbx->n) {
		row->rbx_off = FL_RBX_SAME;
		return;
	}
	if (saved_at_cfa(rbx, row, &off) && rbx_off_fits(off))
		row->rbx_off = (__s16)off;
}

/*
 * One row's rules as a table rule (pc left 0), or false and *why the
 * walker cannot evaluate it.
 */
static bool rules_row(const struct ct_rules *r, struct fl_uw_row *row, enum fl_cfitable_why *why)
{
	const struct ct_rule *cfa = &r->cfa;
	uint64_t threshold;
	unsigned reg;
	int64_t off;

	memset(row, 0, sizeof(*row));
	*why = FL_CFITABLE_WHY_RA;
	if (r->ra_reg != REG_RA || !r->ra.ok)
		return false;
	if (r->ra.undefined) {
		row->cfa_type = FL_CFA_OUTERMOST;
		return true;
	}
	if (r->signalp) {
		*why = FL_CFITABLE_WHY_SIGNAL;
		return signal_row(r, row, why);
	}
	/* In a register (glibc's __vfork: rdi), or saved at CFA + N. */
	if (r->ra.n == 1 && r->ra.ops[0].atom == DW_OP_regx && r->ra.ops[0].number < 16 &&
	    r->ra.ops[0].number != REG_RSP)
		off = FL_RA_REG + (int64_t)r->ra.ops[0].number;
	else if (!is_at_cfa(r->ra.ops, r->ra.n, &off) || !fits_s16(off) || FL_RA_REG_OF(off) >= 0)
		return false;
	*why = FL_CFITABLE_WHY_CFA;
	if (!cfa->ok || !cfa->n)
		return false;
	row->ra_off = (__s16)off;
	if (is_reg_plus(cfa->ops, cfa->n, REG_RSP, &off) && fits_s32(off)) {
		row->cfa_type = FL_CFA_RSP;
	} else if (is_reg_plus(cfa->ops, cfa->n, REG_RBP, &off) && fits_s32(off)) {
		row->cfa_type = FL_CFA_RBP;
	} else if (is_deref(cfa->ops, cfa->n, REG_RBP, &off) && fits_s32(off)) {
		row->cfa_type = FL_CFA_DEREF_RBP;
	} else if (is_plt_cfa(cfa->ops, cfa->n, &off, &threshold) && fits_s32(off)) {
		row->cfa_type = FL_CFA_PLT;
		row->rbp_off = (__s16)threshold;
	} else if (cfa->n == 1 && op_breg(&cfa->ops[0], &reg, &off) && reg < 16 && fits_s32(off)) {
		/* Another general register (rsp and rbp matched above). */
		row->cfa_type = (__u8)(FL_CFA_REG + reg);
	} else {
		return false;
	}
	row->cfa_off = (__s32)off;
	rbx_row(&r->rbx, row);
	return rbp_row(&r->rbp, row, why);
}

/* --- spans of FDEs ------------------------------------------------------------------- */

static int grow(void **arr, size_t *cap, size_t want, size_t elem, size_t max)
{
	size_t cap2;
	void *p;

	if (want <= *cap)
		return 0;
	if (want > max)
		return -EFBIG;
	cap2 = *cap ? *cap * 2 : 256;
	if (cap2 > max)
		cap2 = max;
	p = realloc(*arr, cap2 * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = cap2;
	return 0;
}

/* Adds [pc, end) with row's rule to the last FDE, as a span or by stretching its last one. */
static int add_span(struct ct *c, uint32_t pc, uint32_t end, const struct fl_uw_row *row)
{
	struct ct_fde *fde = &c->fdes[c->nr_fdes - 1];
	struct ct_span *last = fde->nr ? &c->spans[c->nr_spans - 1] : NULL;
	int err;

	if (last && last->end == pc && same_rule(&last->row, row)) {
		last->end = end;
		return 0;
	}
	err = grow((void **)&c->spans, &c->cap_spans, c->nr_spans + 1, sizeof(*c->spans),
		   FL_UW_MAX_ROWS);
	if (err)
		return err;
	c->spans[c->nr_spans] = (struct ct_span){.row = *row, .end = end};
	c->spans[c->nr_spans].row.pc = pc;
	c->nr_spans++;
	fde->nr++;
	return 0;
}

static int add_unsupported(struct ct *c, uint32_t pc, uint32_t end, enum fl_cfitable_why why)
{
	const struct fl_uw_row row = {.cfa_type = FL_CFA_UNSUPPORTED};

	c->counts.unsupported[why]++;
	return add_span(c, pc, end, &row);
}

/* The file offset of vaddr in seg (add_fde() checked its FDE's offsets fit 32 bits). */
static uint32_t seg_off(const struct fl_cfi_seg *seg, uint64_t vaddr)
{
	return (uint32_t)(vaddr - seg->vaddr + seg->offset);
}

/* The rules of libdw's frame fr: they live as long as fr and lr. */
struct ct_libdw_rules {
	struct ct_rules r;
	Dwarf_Op mem_ra[3], mem_rbp[3], mem_rbx[3];
};

static void libdw_reg(Dwarf_Frame *fr, int regno, Dwarf_Op mem[3], struct ct_rule *rule)
{
	Dwarf_Op *ops;

	*rule = (struct ct_rule){0};
	if (dwarf_frame_register(fr, regno, mem, &ops, &rule->n))
		return;
	rule->ok = true;
	rule->undefined = !rule->n && ops == mem;
	rule->ops = rule->n ? ops : NULL;
}

static void libdw_rules(Dwarf_Frame *fr, int ra, bool signalp, struct ct_libdw_rules *lr)
{
	Dwarf_Op *ops;

	lr->r = (struct ct_rules){.ra_reg = (uint64_t)ra, .signalp = signalp};
	if (dwarf_frame_cfa(fr, &ops, &lr->r.cfa.n) == 0) {
		lr->r.cfa.ok = true;
		lr->r.cfa.ops = lr->r.cfa.n ? ops : NULL;
	}
	libdw_reg(fr, REG_RA, lr->mem_ra, &lr->r.ra);
	libdw_reg(fr, REG_RBP, lr->mem_rbp, &lr->r.rbp);
	libdw_reg(fr, REG_RBX, lr->mem_rbx, &lr->r.rbx);
}

/*
 * The rows of the FDE covering [lo, hi) (addresses of the file, within the
 * executable segment seg), asked of libdw one after the other: each ends
 * where the next starts. What libdw cannot give, or gives out of order
 * (broken CFI), and what is past the work bound, is FL_CFA_UNSUPPORTED to
 * the FDE's end.
 */
static int walk_fde(struct ct *c, Dwarf_CFI *cfi, uint64_t lo, uint64_t hi,
		    const struct fl_cfi_seg *seg, uint64_t fde_bytes)
{
	uint64_t pc = lo, cost = fde_bytes + WORK_PER_CALL;
	int err = 0;

	while (pc < hi && !err) {
		Dwarf_Frame *fr = NULL;
		struct ct_libdw_rules lr;
		Dwarf_Addr start, end;
		enum fl_cfitable_why why;
		struct fl_uw_row row;
		bool signalp = false;
		int ra;

		if (cost > WORK_MAX || c->work > WORK_MAX - cost)
			return add_unsupported(c, seg_off(seg, pc), seg_off(seg, hi),
					       FL_CFITABLE_WHY_WORK);
		c->work += cost;
		if (dwarf_cfi_addrframe(cfi, pc, &fr))
			return add_unsupported(c, seg_off(seg, pc), seg_off(seg, hi),
					       FL_CFITABLE_WHY_LIBDW);
		ra = dwarf_frame_info(fr, &start, &end, &signalp);
		/*
		 * The row holds pc and starts within the FDE: the first at
		 * its very start. Otherwise libdw answered from another FDE
		 * covering pc (an outer one, in a broken file with nested
		 * FDEs and no .eh_frame_hdr), or read the FDE's start
		 * otherwise than fl_cfa__encoded() did: its rows cannot be
		 * trusted. A later row may say it starts before pc: after
		 * DW_CFA_restore_state, libdw gives the remembered row's
		 * start with its rules.
		 */
		if (ra < 0 || start < lo || start > pc || end <= pc) {
			free(fr);
			return add_unsupported(c, seg_off(seg, pc), seg_off(seg, hi),
					       FL_CFITABLE_WHY_LIBDW);
		}
		c->counts.cfi_rows++;
		libdw_rules(fr, ra, signalp, &lr);
		if (!rules_row(&lr.r, &row, &why)) {
			c->counts.unsupported[why]++;
			row = (struct fl_uw_row){.cfa_type = FL_CFA_UNSUPPORTED};
		}
		free(fr);
		if (end > hi)
			end = hi;
		err = add_span(c, seg_off(seg, pc), seg_off(seg, end), &row);
		pc = end;
	}
	return err;
}

/* What interp_row() needs of the FDE being interpreted. */
struct ct_interp {
	struct ct *c;
	const struct ct_cie *cie;
	const struct fl_cfi_seg *seg;
};

static void interp_rule(bool ok, const struct fl_cfa_ops *o, struct ct_rule *rule)
{
	*rule = (struct ct_rule){
		.ops = o->n ? o->op : NULL, .n = o->n, .ok = ok, .undefined = o->undefined};
}

/* One row of the interpreter (fl_cfa_row_fn), as a span of the FDE. */
static int interp_row(void *ctx, uint64_t pc, uint64_t end, const struct fl_cfa_state *st)
{
	const struct ct_interp *x = ctx;
	struct fl_cfa_ops cfa, ra, rbp, rbx;
	struct ct_rules r = {.ra_reg = x->cie->ra_reg, .signalp = x->cie->signalp};
	enum fl_cfitable_why why;
	struct fl_uw_row row;

	interp_rule(fl_cfa_state__cfa(st, &cfa), &cfa, &r.cfa);
	interp_rule(fl_cfa_state__reg(&st->ra, &ra), &ra, &r.ra);
	interp_rule(fl_cfa_state__reg(&st->rbp, &rbp), &rbp, &r.rbp);
	interp_rule(fl_cfa_state__reg(&st->rbx, &rbx), &rbx, &r.rbx);
	x->c->counts.cfi_rows++;
	if (!rules_row(&r, &row, &why)) {
		x->c->counts.unsupported[why]++;
		row = (struct fl_uw_row){.cfa_type = FL_CFA_UNSUPPORTED};
	}
	return add_span(x->c, seg_off(x->seg, pc), seg_off(x->seg, end), &row);
}

/*
 * Charges cost to the work bound: false, charging nothing, once it is
 * spent.
 */
static bool charge(struct ct *c, uint64_t cost)
{
	if (cost > WORK_MAX || c->work > WORK_MAX - cost)
		return false;
	c->work += cost;
	return true;
}

/*
 * The rows of the FDE covering [lo, hi), interpreted in one pass (the
 * CIE's initial instructions once for all its FDEs in a row). Work: the
 * bytes of the FDE, and of the CIE each time it is interpreted. What cannot
 * be read, from the instruction on, and FDEs past the work bound, are
 * FL_CFA_UNSUPPORTED (FL_CFITABLE_WHY_LIBDW, the reason of libdw's engine
 * for broken CFI, or FL_CFITABLE_WHY_WORK).
 */
static int interp_fde(struct ct *c, const struct ct_fde_ins *ins, uint64_t lo, uint64_t hi,
		      const struct fl_cfi_seg *seg)
{
	struct ct_cie *cie = ins->cie;
	struct ct_interp x = {.c = c, .cie = cie, .seg = seg};
	uint64_t stop;
	int err;

	if (!cie->interp_done) {
		if (!charge(c, (uint64_t)(cie->ins_end - cie->ins) + WORK_PER_CALL))
			return add_unsupported(c, seg_off(seg, lo), seg_off(seg, hi),
					       FL_CFITABLE_WHY_WORK);
		cie->interp_done = true;
		cie->interp_err =
			cie->ins ? fl_cfa__cie(&cie->interp, cie->ins, cie->ins_end) : -EINVAL;
	}
	if (!charge(c, ins->bytes + WORK_PER_CALL))
		return add_unsupported(c, seg_off(seg, lo), seg_off(seg, hi), FL_CFITABLE_WHY_WORK);
	if (cie->interp_err || !ins->p)
		return add_unsupported(c, seg_off(seg, lo), seg_off(seg, hi),
				       FL_CFITABLE_WHY_LIBDW);
	err = fl_cfa__fde(&cie->interp, ins->p, ins->end, lo, hi, interp_row, &x, &stop);
	if (err == -EINVAL)
		return add_unsupported(c, seg_off(seg, stop), seg_off(seg, hi),
				       FL_CFITABLE_WHY_LIBDW);
	return err;
}

/* The executable segment holding vaddr, or NULL. */
static const struct fl_cfi_seg *exec_seg(const struct fl_cfi_file *f, uint64_t vaddr)
{
	for (size_t i = 0; i < f->nr_segs; i++) {
		const struct fl_cfi_seg *s = &f->segs[i];

		/* One whose end wraps around is no segment of any process. */
		if (s->exec && s->filesz <= UINT64_MAX - s->vaddr && vaddr >= s->vaddr &&
		    vaddr - s->vaddr < s->filesz)
			return s;
	}
	return NULL;
}

/*
 * The part of the FDE [lo, lo + len) in the executable segment lo is in:
 * *seg, its end *hi, and its file offsets [*off_lo, *off_hi). Returns 0,
 * 1 for an FDE not used (empty, or not in code), -EFBIG.
 */
static int fde_span(const struct fl_cfi_file *f, uint64_t lo, uint64_t len,
		    const struct fl_cfi_seg **seg, uint64_t *hi, uint32_t *off_lo, uint32_t *off_hi)
{
	const struct fl_cfi_seg *s = exec_seg(f, lo);

	if (!s || !len)
		return 1;
	/* Clipped to the segment: the code of the FDE is there, or it is not code. */
	*hi = len < s->filesz - (lo - s->vaddr) ? lo + len : s->vaddr + s->filesz;
	if (s->offset > UINT32_MAX || *hi - s->vaddr > UINT32_MAX - s->offset)
		return -EFBIG; /* the walker's pcs are 32 bits */
	*seg = s;
	*off_lo = (uint32_t)(lo - s->vaddr + s->offset);
	*off_hi = (uint32_t)(*hi - s->vaddr + s->offset);
	return 0;
}

/*
 * Compiles the FDE of [lo, lo + len): the part in the executable segment
 * lo is in. Returns 0 (also for an FDE not used), -EFBIG, -ENOMEM.
 */
static int add_fde(struct ct *c, Dwarf_CFI *cfi, bool debug, uint64_t lo, uint64_t len,
		   const struct ct_fde_ins *ins)
{
	const struct fl_cfi_seg *seg;
	uint32_t off_lo, off_hi;
	uint64_t hi;
	int err = fde_span(c->f, lo, len, &seg, &hi, &off_lo, &off_hi);

	if (err > 0) {
		c->counts.fdes_unused++;
		return 0;
	}
	if (err)
		return err;
	err = grow((void **)&c->fdes, &c->cap_fdes, c->nr_fdes + 1, sizeof(*c->fdes), MAX_FDES);
	if (err)
		return err;
	c->fdes[c->nr_fdes] = (struct ct_fde){
		.lo = off_lo,
		.hi = off_hi,
		.seq = (uint32_t)c->nr_fdes,
		.debug = debug,
		.first = (uint32_t)c->nr_spans,
	};
	c->nr_fdes++;
	if (c->libdw)
		return walk_fde(c, cfi, lo, hi, seg, ins->bytes);
	return interp_fde(c, ins, lo, hi, seg);
}

/*
 * The first byte of each code section in [lo, hi) (file offsets) that no
 * FDE read covers, as an FDE of its own with one rule: a function's entry,
 * where nothing is pushed yet and the return address is at rsp. crti.o's
 * _init and _fini, the first bytes of .init and .fini, have no CFI, and a
 * process starting or ending is often sampled there, in the page fault that
 * brings that code in (the walker cannot read the instruction then). The
 * user-space unwinder took such a pc for an entry already; the rows now say
 * so for the walker too. Not counted among the FDEs read.
 */
static int add_code_starts(struct ct *c, uint64_t lo, uint64_t hi)
{
	static const struct fl_uw_row entry = {.cfa_type = FL_CFA_RSP,
					       .rbp_type = FL_RBP_SAME,
					       .ra_off = -8,
					       .cfa_off = 8,
					       .rbx_off = FL_RBX_SAME};
	size_t read = c->nr_fdes;
	int err;

	for (size_t i = 0; i < c->f->nr_code_starts; i++) {
		const struct fl_cfi_seg *seg = exec_seg(c->f, c->f->code_starts[i]);
		uint64_t off;
		bool covered = false;

		if (!seg || seg->offset > UINT32_MAX - 1 ||
		    c->f->code_starts[i] - seg->vaddr > UINT32_MAX - 1 - seg->offset)
			continue;
		off = c->f->code_starts[i] - seg->vaddr + seg->offset;
		if (off < lo || off >= hi)
			continue;
		for (size_t j = 0; j < read && !covered; j++)
			covered = c->fdes[j].lo <= off && off < c->fdes[j].hi;
		if (covered)
			continue;
		err = grow((void **)&c->fdes, &c->cap_fdes, c->nr_fdes + 1, sizeof(*c->fdes),
			   MAX_FDES);
		if (err)
			return err;
		/* Last in order: an FDE read that covered it would win (there is none). */
		c->fdes[c->nr_fdes++] = (struct ct_fde){.lo = (uint32_t)off,
							.hi = (uint32_t)off + 1,
							.seq = UINT32_MAX,
							.first = (uint32_t)c->nr_spans};
		err = add_span(c, (uint32_t)off, (uint32_t)off + 1, &entry);
		if (err)
			return err;
	}
	return 0;
}

/* --- reading FDEs -------------------------------------------------------------------- */

/*
 * The 'R' encoding of an .eh_frame CIE, from its augmentation string and
 * data: "zR" and the like (each letter with data says how much), or no
 * augmentation at all (absolute pointers).
 */
static bool cie_encoding(const Dwarf_CIE *cie, uint8_t *enc)
{
	const uint8_t *p = cie->augmentation_data,
		      *end = p ? p + cie->augmentation_data_size : NULL;
	const char *a = cie->augmentation;

	*enc = FL_PE_ABSPTR;
	if (!a || !a[0])
		return true;
	if (a[0] != 'z' || !p)
		return false;
	for (a++; *a; a++) {
		uint64_t skip;

		switch (*a) {
		case 'R':
			if (p == end)
				return false;
			*enc = *p;
			return *enc != FL_PE_OMIT;
		case 'L':
			if (p == end)
				return false;
			p++;
			break;
		case 'P':
			/* The personality routine's encoding, then the pointer; address not needed. */
			if (p == end)
				return false;
			{
				uint8_t penc = *p++;

				if (!fl_cfa__encoded(penc & ~(FL_PE_INDIRECT | FL_PE_APPLY), &p,
						     end, 0, &skip))
					return false;
			}
			break;
		case 'S': /* signal frame: libdw says it (signalp) */
		case 'B': /* AArch64's pointer authentication key */
		case 'G': /* AArch64's memory tagging */
			break;
		default:
			return false; /* what follows cannot be found */
		}
	}
	/* No 'R': absolute pointers. */
	return true;
}

/* Whether [p, end) is within data (libdw says so; a file that fooled it must not fool us). */
static bool in_data(const Elf_Data *data, const uint8_t *p, const uint8_t *end)
{
	const uint8_t *b = data->d_buf;

	return p && end && p >= b && end >= p && (size_t)(end - b) <= data->d_size;
}

/* The CIE at offset, read again unless it is the last one read (FDEs share few CIEs). */
static struct ct_cie *cie_at(struct ct_cie *cie, const unsigned char *ident, Elf_Data *data,
			     uint64_t sh_addr, bool eh, Dwarf_Off offset)
{
	Dwarf_CFI_Entry e;
	Dwarf_Off next = offset;
	const char *aug;

	if (cie->offset == offset)
		return cie;
	*cie = (struct ct_cie){.offset = offset};
	if (offset >= data->d_size || dwarf_next_cfi(ident, data, eh, offset, &next, &e) != 0 ||
	    !dwarf_cfi_cie_p(&e) || next <= offset || next > data->d_size)
		return cie;
	cie->size = next - offset;
	aug = e.cie.augmentation ? e.cie.augmentation : "";
	if (eh) {
		cie->usable = cie_encoding(&e.cie, &cie->enc);
	} else {
		/* .debug_frame: absolute addresses of the file's class, no augmentation. */
		cie->enc = FL_PE_UDATA8;
		cie->usable = !aug[0];
	}
	cie->zaug = aug[0] == 'z';
	cie->signalp = cie->zaug && strchr(aug, 'S');
	cie->ra_reg = e.cie.return_address_register;
	cie->ins = e.cie.initial_instructions;
	cie->ins_end = e.cie.initial_instructions_end;
	if (!in_data(data, cie->ins, cie->ins_end))
		cie->ins = cie->ins_end = NULL;
	cie->interp = (struct fl_cfa_cie){
		.code_align = e.cie.code_alignment_factor,
		.data_align = e.cie.data_alignment_factor,
		.enc = cie->enc,
		.sec = data->d_buf,
		.sec_addr = sh_addr,
	};
	return cie;
}

/* What next_fde() found at an offset. */
enum nf {
	NF_END,	   /* the end of the section (or an entry whose length cannot be trusted) */
	NF_SKIP,   /* a CIE, or an entry libdw cannot read */
	NF_UNUSED, /* an FDE whose range cannot be read */
	NF_FDE,	   /* an FDE: its range and instructions */
};

/*
 * Reads the entry at *off of a CFI section (data, at address sh_addr; eh
 * for .eh_frame's format) and moves *off past it. An FDE's range is
 * [*lo, *lo + *len), its instructions *ins (cie: the last CIE read, kept
 * between calls).
 */
static enum nf next_fde(const unsigned char *ident, Elf_Data *data, uint64_t sh_addr, bool eh,
			struct ct_cie *cie, Dwarf_Off *off, struct ct_fde_ins *ins, uint64_t *lo,
			uint64_t *len)
{
	Dwarf_Off next = *off;
	Dwarf_CFI_Entry e;
	struct ct_cie *ci;
	const uint8_t *p;
	uint64_t aug_len;
	int r;

	if (*off >= data->d_size)
		return NF_END;
	r = dwarf_next_cfi(ident, data, eh, *off, &next, &e);
	if (r > 0)
		return NF_END; /* the end, or .eh_frame's zero terminator */
	/* Every entry moves on: a broken one is skipped if its length can be trusted. */
	if (next <= *off || next > data->d_size)
		return NF_END;
	*off = next;
	if (r < 0 || dwarf_cfi_cie_p(&e))
		return NF_SKIP;
	ci = cie_at(cie, ident, data, sh_addr, eh, e.fde.CIE_pointer);
	p = e.fde.start;
	if (!ci->usable || !in_data(data, e.fde.start, e.fde.end) ||
	    !fl_cfa__encoded(ci->enc, &p, e.fde.end,
			     sh_addr + (uint64_t)(p - (const uint8_t *)data->d_buf), lo) ||
	    !fl_cfa__encoded(ci->enc & FL_PE_FORMAT, &p, e.fde.end, 0, len) ||
	    *len > UINT64_MAX - *lo)
		return NF_UNUSED;
	*ins = (struct ct_fde_ins){.cie = ci,
				   .p = p,
				   .end = e.fde.end,
				   .bytes = (uint64_t)(e.fde.end - e.fde.start)};
	/* The FDE's augmentation data before its instructions ('z': sized). */
	if (ci->zaug &&
	    (!fl_cfa__uleb(&ins->p, ins->end, &aug_len) || aug_len > (uint64_t)(ins->end - ins->p)))
		ins->p = NULL;
	else if (ci->zaug)
		ins->p += aug_len;
	return NF_FDE;
}

/*
 * Compiles every FDE of a CFI section (data, at address sh_addr; eh for
 * .eh_frame's format) with libdw's cfi of the same section.
 */
static int read_section(struct ct *c, Dwarf_CFI *cfi, Elf_Data *data, uint64_t sh_addr, bool eh)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(c->f->elf, NULL);
	struct ct_cie cie = {.offset = (Dwarf_Off)-1};
	Dwarf_Off off = 0;
	enum nf r;

	if (!ident || !data || !data->d_buf)
		return 0;
	for (;;) {
		struct ct_fde_ins ins;
		uint64_t lo, len;
		int err;

		r = next_fde(ident, data, sh_addr, eh, &cie, &off, &ins, &lo, &len);
		if (r == NF_END)
			break;
		if (r == NF_SKIP)
			continue;
		c->counts.fdes++;
		c->counts.fdes_debug_frame += !eh;
		if (r == NF_UNUSED) {
			c->counts.fdes_unused++;
			continue;
		}
		err = add_fde(c, cfi, !eh, lo, len, &ins);
		if (err)
			return err;
	}
	return 0;
}

/* --- the table ----------------------------------------------------------------------- */

/* Whether FDE a's rule wins over b's where both cover a byte (cfitable.h). */
static bool fde_wins(const struct ct_fde *a, const struct ct_fde *b)
{
	if (a->debug != b->debug)
		return !a->debug;
	if (a->lo != b->lo)
		return a->lo > b->lo;
	return a->seq < b->seq;
}

/* A binary heap of FDE indices, the winner on top. */
struct ct_heap {
	uint32_t *v;
	size_t n;
};

static void heap_push(struct ct_heap *h, const struct ct_fde *fdes, uint32_t i)
{
	size_t k = h->n++;

	while (k && fde_wins(&fdes[i], &fdes[h->v[(k - 1) / 2]])) {
		h->v[k] = h->v[(k - 1) / 2];
		k = (k - 1) / 2;
	}
	h->v[k] = i;
}

static void heap_pop(struct ct_heap *h, const struct ct_fde *fdes)
{
	uint32_t last = h->v[--h->n];
	size_t k = 0;

	for (;;) {
		size_t child = 2 * k + 1;

		if (child >= h->n)
			break;
		if (child + 1 < h->n && fde_wins(&fdes[h->v[child + 1]], &fdes[h->v[child]]))
			child++;
		if (!fde_wins(&fdes[h->v[child]], &fdes[last]))
			break;
		h->v[k] = h->v[child];
		k = child;
	}
	h->v[k] = last;
}

/*
 * Sorts v[0..n) by the upper 32 bits of each value, keeping the order of
 * equal keys (an LSD radix sort, 11 bits a pass, a pass skipped where all
 * keys share its digit). tmp: room for n values. The tables' sorts (FDE
 * bounds and starts: a million of each in libLLVM) took a sixth of their
 * compiling with qsort().
 */
static void sort_by_key32(uint64_t *v, uint64_t *tmp, size_t n)
{
	size_t count[2048];
	uint64_t *src = v, *dst = tmp, *swap;

	for (unsigned int shift = 32; shift < 64; shift += 11) {
		size_t sum = 0;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & 2047]++;
		if (n && count[(src[0] >> shift) & 2047] == n)
			continue;
		for (size_t d = 0; d < 2048; d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & 2047]++] = src[i];
		swap = src;
		src = dst;
		dst = swap;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

/* Appends a row unless it has the rule of the row before (pcs come strictly increasing). */
static int emit(struct fl_cfitable *t, size_t *cap, uint32_t pc, const struct fl_uw_row *rule)
{
	int err;

	if (t->nr && same_rule(&t->rows[t->nr - 1], rule))
		return 0;
	err = grow((void **)&t->rows, cap, t->nr + 1, sizeof(*t->rows), FL_UW_MAX_ROWS);
	if (err)
		return err;
	t->rows[t->nr] = *rule;
	t->rows[t->nr].pc = pc;
	t->nr++;
	return 0;
}

/* The rows of FDE fde over [a, b), which it covers. */
static int emit_fde(struct ct *c, struct fl_cfitable *t, size_t *cap, const struct ct_fde *fde,
		    uint32_t a, uint32_t b)
{
	const struct ct_span *s = &c->spans[fde->first];
	size_t lo = 0, hi = fde->nr;
	int err;

	/* The span holding a: its spans tile [fde->lo, fde->hi) in order. */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].row.pc <= a)
			lo = mid;
		else
			hi = mid;
	}
	for (size_t i = lo; i < fde->nr && s[i].row.pc < b; i++) {
		err = emit(t, cap, s[i].row.pc > a ? s[i].row.pc : a, &s[i].row);
		if (err)
			return err;
	}
	return 0;
}

/*
 * The table: at each boundary of an FDE, the winning FDE among those
 * covering the range up to the next boundary gives the rows there (none: a
 * FL_CFA_NONE row); the last boundary, the end of code, gets FL_CFA_NONE.
 * A sweep over the boundaries with a heap of the FDEs begun, whose ended
 * ones leave it once on top: O(n log n) for n FDEs, overlapping or not.
 */
static int build(struct ct *c, struct fl_cfitable *t)
{
	static const struct fl_uw_row none = {.cfa_type = FL_CFA_NONE};
	size_t n = c->nr_fdes, nr_bounds = 0, k = 0, cap = 0;
	/* Starts (key: lo, then the FDE's index) and bounds (key: lo or hi), and room to sort them. */
	uint64_t *order = NULL, *bounds = NULL, *tmp = NULL;
	struct ct_heap heap = {0};
	int err = -ENOMEM;

	bounds = malloc(2 * n * sizeof(*bounds));
	order = malloc(n * sizeof(*order));
	tmp = malloc(2 * n * sizeof(*tmp));
	heap.v = malloc(n * sizeof(*heap.v));
	if (!bounds || !order || !tmp || !heap.v)
		goto out_free;
	for (size_t i = 0; i < n; i++) {
		bounds[2 * i] = (uint64_t)c->fdes[i].lo << 32;
		bounds[2 * i + 1] = (uint64_t)c->fdes[i].hi << 32;
		order[i] = (uint64_t)c->fdes[i].lo << 32 | (uint32_t)i;
	}
	sort_by_key32(bounds, tmp, 2 * n);
	for (size_t i = 0; i < 2 * n; i++)
		if (!nr_bounds || bounds[i] != bounds[nr_bounds - 1])
			bounds[nr_bounds++] = bounds[i];
	/* Stable: FDEs starting together stay in index order. */
	sort_by_key32(order, tmp, n);
	err = 0;
	for (size_t i = 0; i < nr_bounds && !err; i++) {
		uint32_t x = (uint32_t)(bounds[i] >> 32);

		while (k < n && (uint32_t)(order[k] >> 32) == x)
			heap_push(&heap, c->fdes, (uint32_t)order[k++]);
		while (heap.n && c->fdes[heap.v[0]].hi <= x)
			heap_pop(&heap, c->fdes);
		if (heap.n && i + 1 < nr_bounds)
			err = emit_fde(c, t, &cap, &c->fdes[heap.v[0]], x,
				       (uint32_t)(bounds[i + 1] >> 32));
		else
			err = emit(t, &cap, x, &none);
	}
out_free:
	free(heap.v);
	free(tmp);
	free(order);
	free(bounds);
	return err;
}

static void table_counts(struct fl_cfitable *t)
{
	for (size_t i = 0; i < t->nr; i++)
		t->counts.rows[fl_cfitable__row_kind(t->rows[i].cfa_type)]++;
}

/* Whether the table has a rule for any byte: more than FL_CFA_NONE rows. */
static bool table_has_cfi(const struct fl_cfitable *t)
{
	return t->counts.rows[FL_CFA_NONE] < t->nr;
}

/* The file's .eh_frame data and address, as libdw reads it (the first section of the name). */
static Elf_Data *eh_frame_data(Elf *elf, uint64_t *addr)
{
	GElf_Shdr sh;
	Elf_Scn *scn = fl_cfi_file__section(elf, ".eh_frame", &sh);

	if (!scn)
		return NULL;
	*addr = sh.sh_addr;
	return elf_rawdata(scn, NULL);
}

/* The .debug_frame data libdw reads, inflated if it was compressed: its image's one section. */
static Elf_Data *debug_frame_data(struct fl_cfi_file *f)
{
	Elf_Scn *scn;

	if (!fl_cfi_file__debug_frame(f) || !f->dbg_image.elf)
		return NULL;
	scn = elf_getscn(f->dbg_image.elf, 1);
	return scn ? elf_getdata(scn, NULL) : NULL;
}

static uint64_t code_bytes(const struct fl_cfi_file *f)
{
	uint64_t n = 0;

	for (size_t i = 0; i < f->nr_segs; i++)
		if (f->segs[i].exec)
			n = fl_elfsize__add(n, f->segs[i].filesz);
	return n;
}

/* Compiles the table of an opened file whose CFI was read. */
static int compile(struct fl_cfi_file *f, bool libdw, struct fl_cfitable *out)
{
	struct ct c = {.f = f, .libdw = libdw};
	struct fl_cfitable t = {0};
	Dwarf_CFI *dbg;
	Elf_Data *data;
	uint64_t addr = 0;
	int err = 0;

	if (f->eh && (data = eh_frame_data(f->elf, &addr)))
		err = read_section(&c, f->eh, data, addr, true);
	dbg = fl_cfi_file__debug_frame(f);
	if (!err && dbg && (data = debug_frame_data(f)))
		err = read_section(&c, dbg, data, 0, false);
	if (!err && c.nr_fdes)
		err = add_code_starts(&c, 0, UINT64_MAX);
	if (!err)
		err = c.nr_fdes ? build(&c, &t) : -ENOENT;
	if (!err) {
		c.counts.work = c.work;
		t.counts = c.counts;
		table_counts(&t);
		if (!table_has_cfi(&t))
			err = -ENOENT;
	}
	free(c.fdes);
	free(c.spans);
	if (err) {
		free(t.rows);
		return err;
	}
	t.code_bytes = code_bytes(f);
	*out = t;
	return 0;
}

/* x86-64 ELF64 little-endian, the walker's. */
static int check_machine(Elf *elf)
{
	GElf_Ehdr eh;

	if (!gelf_getehdr(elf, &eh))
		return -EINVAL;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_X86_64)
		return -ENOTSUP;
	return 0;
}

/* A compressed .debug_frame must inflate to no more than an uncompressed one may be. */
static bool debug_frame_size_ok(struct fl_cfi_file *f, int fd)
{
	GElf_Shdr sh;

	if (!fl_cfi_file__section(f->elf, ".debug_frame", &sh) || !(sh.sh_flags & SHF_COMPRESSED))
		return true;
	return fd < 0 || fl_elfsize__section(f->elf, fd, ".debug_frame", &sh) <= FL_CFI_MAX_BYTES;
}

/* Opens the file at fd, its headers alone, with the checks of every file's CFI; its size in *size. */
static int open_headers(int fd, struct fl_cfi_file *f, uint64_t *size)
{
	struct stat st;
	int err;

	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	err = fl_cfi_file__begin_fd(f, fd);
	if (err)
		return err;
	err = check_machine(f->elf);
	if (!err &&
	    (!fl_cfi_file__size_ok(f, (uint64_t)st.st_size) || !debug_frame_size_ok(f, fd)))
		err = -EFBIG;
	if (err) {
		fl_cfi_file__fini(f);
		return err;
	}
	*size = (uint64_t)st.st_size;
	return 0;
}

/* Opens the file at fd and reads its CFI (f then needs the fd no more); *bytes: what f holds. */
static int open_fd(int fd, struct fl_cfi_file *f, uint64_t *bytes)
{
	uint64_t size;
	int err = open_headers(fd, f, &size);

	if (err)
		return err;
	if (bytes)
		*bytes = fl_cfi_file__bytes(f, fd, size);
	fl_cfi_file__read(f, fd);
	/* Everything is read: nothing in the compile may go back to a file that can change. */
	fl_cfi_file__fd_done(f);
	return 0;
}

static int from_fd(int fd, bool libdw, struct fl_cfitable *out)
{
	struct fl_cfi_file f;
	int err;

	err = open_fd(fd, &f, NULL);
	if (err)
		return err;
	err = compile(&f, libdw, out);
	fl_cfi_file__fini(&f);
	return err;
}

static int from_memory(const void *image, size_t size, bool libdw, struct fl_cfitable *out)
{
	struct fl_cfi_file f;
	int err;

	err = fl_cfi_file__begin_memory(&f, image, size);
	if (err)
		return err;
	err = check_machine(f.elf);
	if (!err && !fl_cfi_file__size_ok(&f, size))
		err = -EFBIG;
	if (!err) {
		fl_cfi_file__read(&f, -1);
		err = compile(&f, libdw, out);
	}
	fl_cfi_file__fini(&f);
	return err;
}

int fl_cfitable__from_fd(int fd, struct fl_cfitable *out)
{
	return from_fd(fd, false, out);
}

int fl_cfitable__from_memory(const void *image, size_t size, struct fl_cfitable *out)
{
	return from_memory(image, size, false, out);
}

int fl_cfitable__from_fd_libdw(int fd, struct fl_cfitable *out)
{
	return from_fd(fd, true, out);
}

int fl_cfitable__from_memory_libdw(const void *image, size_t size, struct fl_cfitable *out)
{
	return from_memory(image, size, true, out);
}

int fl_cfitable__vdso(struct fl_cfitable *out)
{
	size_t size;
	const void *image = fl_cfi_file__vdso_image(&size);

	if (!image)
		return -ENOENT;
	return fl_cfitable__from_memory(image, size, out);
}

/* --- a table a range at a time ------------------------------------------------------ */

/* One FDE of the file, indexed: [lo, hi) as file offsets, and where it is. */
struct cs_fde {
	uint32_t lo, hi;
	uint32_t seq;	/* its place among the FDEs compiled, in the order of the sections */
	uint32_t entry; /* its offset in its section */
	uint32_t size;	/* its bytes there */
	uint32_t cie;	/* its CIE, in cies[] (.eh_frame's only) */
	bool debug;	/* in .debug_frame */
};

/* One FDE of the file, indexed by .eh_frame_hdr: its start as a file offset, and where it is. */
struct cs_hdr_fde {
	uint32_t lo, entry;
};

/* first_at() searches both indexes by their first field. */
_Static_assert(offsetof(struct cs_fde, lo) == 0 && offsetof(struct cs_hdr_fde, lo) == 0,
	       "an index entry starts with its lo");

/* A CIE of .eh_frame: where it is, and its bytes. */
struct cs_cie {
	uint32_t entry, size;
};

struct fl_cfitable_src {
	struct fl_cfi_file f;
	uint64_t bytes;		    /* of the CFI held (f) and the index */
	uint64_t code_bytes;
	bool indexed;		    /* the index was made (index_err says how) */
	/*
	 * Indexed by .eh_frame_hdr's search table (fl_cfitable_src__open_hdr()):
	 * hdr_fdes[nr] in place of fdes, the FDEs' ends, sizes and CIEs not
	 * known until a range reads them.
	 */
	struct cs_hdr_fde *hdr_fdes;
	int index_err;
	struct cs_fde *fdes;	    /* sorted by lo */
	uint32_t *reach;	    /* reach[i]: the largest hi of fdes[0..i] */
	size_t nr;
	struct cs_cie *cies; /* those of .eh_frame's FDEs, once each where they follow */
	size_t nr_cies, cap_cies;
	/*
	 * Once released (fl_cfitable_src__release()): f holds only the
	 * segments, and ranges read the entries they need of .eh_frame
	 * (eh_size bytes at eh_off in the file at fd, its address eh_addr).
	 */
	int fd;
	uint64_t eh_off, eh_size, eh_addr;
	unsigned char ident[EI_NIDENT];
	struct fl_cfitable_counts counts; /* fdes, fdes_debug_frame, fdes_unused of the file */
	uint64_t work;		    /* spent so far on all ranges: the bound is the file's */
};

int fl_cfitable_src__open(int fd, struct fl_cfitable_src **ret)
{
	struct fl_cfitable_src *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->fd = -1;
	err = open_fd(fd, &s->f, &s->bytes);
	if (err) {
		free(s);
		return err;
	}
	s->code_bytes = code_bytes(&s->f);
	*ret = s;
	return 0;
}

int fl_cfitable_src__all(struct fl_cfitable_src *s, struct fl_cfitable *out)
{
	return compile(&s->f, false, out);
}

uint64_t fl_cfitable_src__code_bytes(const struct fl_cfitable_src *s)
{
	return s->code_bytes;
}

int fl_cfitable_src__fd(const struct fl_cfitable_src *s)
{
	return s->fd;
}

uint64_t fl_cfitable_src__bytes(const struct fl_cfitable_src *s)
{
	return s->bytes;
}

void fl_cfitable_src__free(struct fl_cfitable_src *s)
{
	if (!s)
		return;
	fl_cfi_file__fini(&s->f);
	free(s->fdes);
	free(s->hdr_fdes);
	free(s->reach);
	free(s->cies);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

static int cmp_cs_lo(const void *a, const void *b)
{
	const struct cs_fde *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_cs_seq(const void *a, const void *b)
{
	const struct cs_fde *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Indexes the FDEs of one section (as read_section() reads them, without compiling). */
static int index_section(struct fl_cfitable_src *s, Elf_Data *data, uint64_t sh_addr, bool eh,
			 size_t *cap)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(s->f.elf, NULL);
	struct ct_cie cie = {.offset = (Dwarf_Off)-1};
	Dwarf_Off off = 0, at;
	enum nf r;

	if (!ident || !data || !data->d_buf)
		return 0;
	for (;;) {
		const struct fl_cfi_seg *seg;
		struct ct_fde_ins ins;
		uint64_t lo, len, hi;
		uint32_t off_lo, off_hi;
		int err;

		at = off;
		r = next_fde(ident, data, sh_addr, eh, &cie, &off, &ins, &lo, &len);
		if (r == NF_END)
			break;
		if (r == NF_SKIP)
			continue;
		s->counts.fdes++;
		s->counts.fdes_debug_frame += !eh;
		err = r == NF_FDE ? fde_span(&s->f, lo, len, &seg, &hi, &off_lo, &off_hi) : 1;
		if (err > 0) {
			s->counts.fdes_unused++;
			continue;
		}
		if (err)
			return err;
		err = grow((void **)&s->fdes, cap, s->nr + 1, sizeof(*s->fdes), MAX_FDES);
		if (err)
			return err;
		if (eh && (!s->nr_cies || s->cies[s->nr_cies - 1].entry != ins.cie->offset)) {
			err = grow((void **)&s->cies, &s->cap_cies, s->nr_cies + 1,
				   sizeof(*s->cies), MAX_FDES);
			if (err)
				return err;
			/* Both within the section, which FL_CFI_MAX_BYTES bounds. */
			s->cies[s->nr_cies++] = (struct cs_cie){.entry = (uint32_t)ins.cie->offset,
								.size = (uint32_t)ins.cie->size};
		}
		s->fdes[s->nr] = (struct cs_fde){
			.lo = off_lo,
			.hi = off_hi,
			.seq = (uint32_t)s->nr,
			.entry = (uint32_t)at,
			.size = (uint32_t)(off - at),
			.cie = eh ? (uint32_t)s->nr_cies - 1 : 0,
			.debug = !eh,
		};
		s->nr++;
	}
	return 0;
}

/* Sorts s->fdes by lo, then seq (their index now: they are in the order read). */
static int sort_fdes(struct fl_cfitable_src *s)
{
	uint64_t *keys = malloc(2 * s->nr * sizeof(*keys));
	struct cs_fde *sorted = malloc(s->nr * sizeof(*sorted));

	if (!keys || !sorted) {
		free(keys);
		free(sorted);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nr; i++)
		keys[i] = (uint64_t)s->fdes[i].lo << 32 | (uint32_t)i;
	sort_by_key32(keys, keys + s->nr, s->nr);
	for (size_t i = 0; i < s->nr; i++)
		sorted[i] = s->fdes[(uint32_t)keys[i]];
	free(keys);
	free(s->fdes);
	s->fdes = sorted;
	return 0;
}

/* Memory of the FDE index (fdes, reach, cies). */
static uint64_t index_bytes(const struct fl_cfitable_src *s)
{
	if (s->hdr_fdes)
		return s->nr * sizeof(*s->hdr_fdes);
	return s->nr * (sizeof(*s->fdes) + sizeof(*s->reach)) + s->nr_cies * sizeof(*s->cies);
}

/* The index of every FDE by start, made once. */
static int src_index(struct fl_cfitable_src *s)
{
	Dwarf_CFI *dbg;
	Elf_Data *data;
	uint64_t addr = 0;
	size_t cap = 0;
	int err = 0;

	if (s->indexed)
		return s->index_err;
	s->indexed = true;
	if (s->f.eh && (data = eh_frame_data(s->f.elf, &addr)))
		err = index_section(s, data, addr, true, &cap);
	dbg = fl_cfi_file__debug_frame(&s->f);
	if (!err && dbg && (data = debug_frame_data(&s->f)))
		err = index_section(s, data, 0, false, &cap);
	if (!err && !s->nr)
		err = -ENOENT;
	if (!err) {
		size_t i = 1;

		/* Linkers write FDEs in address order, mostly: sorted already, no sort. */
		while (i < s->nr && cmp_cs_lo(&s->fdes[i - 1], &s->fdes[i]) < 0)
			i++;
		if (i < s->nr)
			err = sort_fdes(s);
		s->reach = err ? NULL : malloc(s->nr * sizeof(*s->reach));
		if (!err && !s->reach)
			err = -ENOMEM;
	}
	if (!err) {
		for (size_t i = 0; i < s->nr; i++)
			s->reach[i] = i && s->reach[i - 1] > s->fdes[i].hi ? s->reach[i - 1]
									   : s->fdes[i].hi;
		s->bytes += index_bytes(s);
	} else {
		free(s->fdes);
		s->fdes = NULL;
		s->nr = 0;
		free(s->cies);
		s->cies = NULL;
		s->nr_cies = 0;
	}
	s->index_err = err;
	return err;
}

/* Keeps the rows of t for [lo, hi): the one in force at lo moved to lo, none from hi on. */
static int clip(struct fl_cfitable *t, uint64_t lo, uint64_t hi)
{
	static const struct fl_uw_row none = {.cfa_type = FL_CFA_NONE};
	size_t first = 0, n = 0, cap;

	while (first + 1 < t->nr && t->rows[first + 1].pc <= lo)
		first++;
	/* No rule before the first row: a range starts with its first rule (FDEs ending before lo said none). */
	while (first < t->nr && t->rows[first].cfa_type == FL_CFA_NONE)
		first++;
	for (size_t i = first; i < t->nr && t->rows[i].pc < hi; i++) {
		t->rows[n] = t->rows[i];
		if (t->rows[n].pc < lo)
			t->rows[n].pc = (uint32_t)lo;
		n++;
	}
	t->nr = n;
	cap = n;
	/* Past hi no rule of this range holds (a range ending at 4 GiB needs no such row). */
	if (hi <= UINT32_MAX)
		return emit(t, &cap, (uint32_t)hi, &none);
	return 0;
}

int fl_cfitable_src__index(struct fl_cfitable_src *s)
{
	return src_index(s);
}

/* Releases s's CFI, its index made: what ranges need is read from fd (a copy of it, kept) from now on. */
static int released(struct fl_cfitable_src *s, int fd, const GElf_Shdr *eh)
{
	const char *ident = elf_getident(s->f.elf, NULL);
	uint64_t starts[FL_CFI_MAX_CODE_SECTIONS];
	struct fl_cfi_seg *segs;
	size_t nr_segs, nr_starts;
	int dup;

	if (!ident)
		return -EINVAL;
	dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return -errno;
	memcpy(s->ident, ident, EI_NIDENT);
	s->eh_off = eh->sh_offset;
	s->eh_size = eh->sh_size;
	s->eh_addr = eh->sh_addr;
	s->fd = dup;
	/* Only the segments and the code sections' starts stay (fde_span(), add_code_starts()). */
	segs = s->f.segs;
	nr_segs = s->f.nr_segs;
	memcpy(starts, s->f.code_starts, sizeof(starts));
	nr_starts = s->f.nr_code_starts;
	s->f.segs = NULL;
	fl_cfi_file__fini(&s->f);
	s->f.segs = segs;
	s->f.nr_segs = nr_segs;
	memcpy(s->f.code_starts, starts, sizeof(starts));
	s->f.nr_code_starts = nr_starts;
	s->bytes = index_bytes(s) + nr_segs * sizeof(*segs);
	return 0;
}

/* A CFI section called name that ranges may pread: stored as it is, within FL_CFI_MAX_BYTES. */
static bool raw_cfi_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	return fl_cfi_file__section(elf, name, sh) &&
	       (sh->sh_type == SHT_PROGBITS || sh->sh_type == SHT_X86_64_UNWIND) &&
	       !(sh->sh_flags & SHF_COMPRESSED) && sh->sh_size <= FL_CFI_MAX_BYTES &&
	       sh->sh_offset <= (uint64_t)INT64_MAX - sh->sh_size;
}

int fl_cfitable_src__release(struct fl_cfitable_src *s, int fd)
{
	const char *ident;
	GElf_Shdr sh;
	int err = src_index(s);

	if (err || s->fd >= 0)
		return err;
	ident = s->f.elf ? elf_getident(s->f.elf, NULL) : NULL;
	/* .debug_frame's FDEs are read from an image libdw inflated: those stay. */
	if (!ident || s->counts.fdes_debug_frame || !s->f.eh ||
	    !raw_cfi_section(s->f.elf, ".eh_frame", &sh))
		return -ENOTSUP;
	return released(s, fd, &sh);
}

static int cmp_hdr_fde(const void *a, const void *b)
{
	const struct cs_hdr_fde *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->entry < y->entry ? -1 : x->entry > y->entry;
}

/* .eh_frame_hdr's version, and its search table's encoding: pairs of datarel sdata4, as linkers write. */
#define HDR_VERSION 1
#define HDR_TABLE_ENC (0x30 | FL_PE_SDATA4)

/*
 * The index from .eh_frame_hdr's search table, read from fd: an FDE's
 * start and where it is in .eh_frame, sorted by start. Returns 0, -ENOTSUP
 * (no table to use: none, another encoding, one not for this .eh_frame, or
 * .debug_frame CFI too), -EFBIG, -EIO or -ENOMEM.
 */
static int hdr_index(struct fl_cfitable_src *s, int fd, GElf_Shdr *eh)
{
	uint8_t head[4 + 8 + 8];
	const uint8_t *p = head + 4, *end;
	uint64_t eh_ptr, count, at;
	GElf_Shdr hdr, dbg;
	int32_t *pairs;
	size_t n, i;
	int err = 0;

	if (!raw_cfi_section(s->f.elf, ".eh_frame", eh) ||
	    !raw_cfi_section(s->f.elf, ".eh_frame_hdr", &hdr) ||
	    fl_cfi_file__section(s->f.elf, ".debug_frame", &dbg))
		return -ENOTSUP;
	n = hdr.sh_size < sizeof(head) ? (size_t)hdr.sh_size : sizeof(head);
	if (n < 4 || fl_regfile__pread(fd, head, n, hdr.sh_offset) != (ssize_t)n)
		return -ENOTSUP;
	end = head + n;
	if (head[0] != HDR_VERSION || head[3] != HDR_TABLE_ENC ||
	    !fl_cfa__encoded(head[1], &p, end, hdr.sh_addr + 4, &eh_ptr) || eh_ptr != eh->sh_addr)
		return -ENOTSUP;
	at = (uint64_t)(p - head);
	if (!fl_cfa__encoded(head[2], &p, end, hdr.sh_addr + at, &count))
		return -ENOTSUP;
	at = (uint64_t)(p - head);
	if (!count || count > MAX_FDES || count > (hdr.sh_size - at) / 8)
		return -ENOTSUP;
	pairs = malloc((size_t)count * 8);
	s->hdr_fdes = malloc((size_t)count * sizeof(*s->hdr_fdes));
	if (!pairs || !s->hdr_fdes) {
		free(pairs);
		return -ENOMEM;
	}
	if (fl_regfile__pread(fd, pairs, (size_t)count * 8, hdr.sh_offset + at) !=
	    (ssize_t)(count * 8)) {
		free(pairs);
		return -EIO;
	}
	for (i = 0; i < count; i++) {
		/* Addresses relative to the table's section (x86-64: little-endian, as the file is). */
		uint64_t lo = hdr.sh_addr + (uint64_t)(int64_t)pairs[2 * i],
			 entry = hdr.sh_addr + (uint64_t)(int64_t)pairs[2 * i + 1] - eh->sh_addr;
		const struct fl_cfi_seg *seg = exec_seg(&s->f, lo);

		s->counts.fdes++;
		if (!seg || entry >= eh->sh_size) {
			s->counts.fdes_unused++;
			continue;
		}
		if (seg->offset > UINT32_MAX || lo - seg->vaddr > UINT32_MAX - seg->offset) {
			err = -EFBIG; /* the walker's pcs are 32 bits */
			break;
		}
		s->hdr_fdes[s->nr++] = (struct cs_hdr_fde){
			.lo = (uint32_t)(lo - seg->vaddr + seg->offset),
			.entry = (uint32_t)entry,
		};
	}
	free(pairs);
	if (!err && !s->nr)
		err = -ENOENT;
	/* The table is sorted by address; the file offsets of one segment are too. */
	for (i = 1; !err && i < s->nr && s->hdr_fdes[i - 1].lo <= s->hdr_fdes[i].lo;)
		i++;
	if (!err && i < s->nr)
		qsort(s->hdr_fdes, s->nr, sizeof(*s->hdr_fdes), cmp_hdr_fde);
	return err;
}

int fl_cfitable_src__open_hdr(int fd, uint64_t min_code, struct fl_cfitable_src **ret)
{
	struct fl_cfitable_src *s;
	struct stat st;
	uint64_t size;
	GElf_Shdr eh;
	int err;

	/* Most files are small: their headers are read once, by fl_cfitable_src__open(). */
	if (fstat(fd, &st))
		return -errno;
	if ((uint64_t)st.st_size < min_code)
		return -ERANGE;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = -1;
	err = open_headers(fd, &s->f, &size);
	if (err) {
		free(s);
		return err;
	}
	s->code_bytes = code_bytes(&s->f);
	err = s->code_bytes < min_code ? -ERANGE : hdr_index(s, fd, &eh);
	if (!err)
		err = released(s, fd, &eh);
	if (err) {
		fl_cfitable_src__free(s);
		return err;
	}
	s->indexed = true;
	*ret = s;
	return 0;
}

/* Entries closer than this are read in one pread. */
#define REREAD_GAP 4096

/*
 * A buffer of .eh_frame's size for the entries a range reads, zeros
 * elsewhere (which take no memory), to munmap() after; NULL: no memory.
 */
static uint8_t *section_buf(const struct fl_cfitable_src *s)
{
	void *buf = mmap(NULL, s->eh_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return buf == MAP_FAILED ? NULL : buf;
}

/* section_buf()'s buffer as the Elf_Data of .eh_frame the parse reads. */
static Elf_Data section_data(const struct fl_cfitable_src *s, uint8_t *buf)
{
	return (Elf_Data){.d_buf = buf,
			  .d_type = ELF_T_BYTE,
			  .d_version = EV_CURRENT,
			  .d_size = s->eh_size,
			  .d_align = 1};
}

/* Bytes [a, b) of .eh_frame into buf (the section's size) where they belong; a short file leaves zeros. */
static void reread(const struct fl_cfitable_src *s, uint8_t *buf, uint64_t a, uint64_t b)
{
	if (b > s->eh_size)
		b = s->eh_size;
	if (a < b)
		(void)fl_regfile__pread(s->fd, buf + a, b - a, s->eh_off + a);
}

/*
 * The .eh_frame of a released source as an Elf_Data with only the entries
 * of pick (n FDEs in the order of the section) and their CIEs read, at
 * their offsets: a mapping of the section's size, zeros elsewhere (which
 * take no memory), to munmap() after.
 */
static int reread_entries(const struct fl_cfitable_src *s, const struct cs_fde *pick, size_t n,
			  Elf_Data *d)
{
	uint8_t *buf = section_buf(s);
	uint32_t last_cie = UINT32_MAX;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		uint64_t a = pick[i].entry, b = a + pick[i].size;

		for (i++; i < n && pick[i].entry >= a && pick[i].entry <= b + REREAD_GAP; i++)
			if (pick[i].entry + (uint64_t)pick[i].size > b)
				b = pick[i].entry + (uint64_t)pick[i].size;
		reread(s, buf, a, b);
	}
	for (size_t i = 0; i < n; i++) {
		const struct cs_cie *cie = &s->cies[pick[i].cie];

		/* FDEs share few CIEs, and mostly those next to each other. */
		if (pick[i].cie == last_cie)
			continue;
		last_cie = pick[i].cie;
		reread(s, buf, cie->entry, (uint64_t)cie->entry + cie->size);
	}
	*d = section_data(s, buf);
	return 0;
}

/* A little-endian word of .eh_frame read into buf (size bytes), at off; 0 past its end. */
static uint32_t word_at(const uint8_t *buf, uint64_t size, uint64_t off)
{
	uint32_t v = 0;

	if (size >= 4 && off <= size - 4)
		memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* What is read of an entry before its length is known: most FDEs and CIEs are shorter. */
#define HDR_GUESS 256

/*
 * reread_entries() for a source indexed by .eh_frame_hdr, which knows
 * where the FDEs of pick start but not their sizes nor their CIEs: their
 * first bytes are read (those close together in one pread), then what
 * their lengths say is left, then the CIEs they point to.
 */
static int reread_hdr(const struct fl_cfitable_src *s, const struct cs_fde *pick, size_t n,
		      Elf_Data *d)
{
	uint64_t a = 0, have = 0, last_cie = UINT64_MAX;
	uint8_t *buf = section_buf(s);

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t at = pick[i].entry, len, cie;

		/* [a, have) is read: a new stretch unless the FDE's length and CIE pointer are in it. */
		if (!i || at < a || at + 8 > have) {
			a = at;
			have = at + HDR_GUESS;
			for (size_t j = i + 1; j < n && pick[j].entry >= at &&
					       pick[j].entry <= have + REREAD_GAP;
			     j++)
				if (pick[j].entry + HDR_GUESS > have)
					have = pick[j].entry + HDR_GUESS;
			reread(s, buf, a, have);
		}
		len = word_at(buf, s->eh_size, at);
		/* The terminator, or a 64-bit length (no linker writes one): parsed as they are. */
		if (!len || len == UINT32_MAX)
			continue;
		if (at + 4 + len > have) {
			reread(s, buf, have, at + 4 + len);
			have = at + 4 + len;
		}
		/* Its CIE is as far back as the word after the length says. */
		cie = word_at(buf, s->eh_size, at + 4);
		if (!cie || cie > at + 4 || at + 4 - cie == last_cie)
			continue;
		last_cie = at + 4 - cie;
		reread(s, buf, last_cie, last_cie + HDR_GUESS);
		len = word_at(buf, s->eh_size, last_cie);
		if (len != UINT32_MAX && 4 + len > HDR_GUESS)
			reread(s, buf, last_cie + HDR_GUESS, last_cie + 4 + len);
	}
	*d = section_data(s, buf);
	return 0;
}

/*
 * The first of n index entries (stride bytes apart, each starting with its
 * uint32_t lo, sorted by it) starting at off or after: n if none.
 */
static size_t first_at(const void *entries, size_t n, size_t stride, uint64_t off)
{
	size_t a = 0, b = n;

	while (a < b) {
		size_t mid = a + (b - a) / 2;
		uint32_t lo;

		memcpy(&lo, (const uint8_t *)entries + mid * stride, sizeof(lo));
		if (lo < off)
			a = mid + 1;
		else
			b = mid;
	}
	return a;
}

/* FDEs before a range that a source indexed by .eh_frame_hdr reads too: the one covering lo may be behind empty ones. */
#define HDR_BEFORE 4

int fl_cfitable_src__range(struct fl_cfitable_src *s, uint64_t lo, uint64_t hi,
			   struct fl_cfitable *out)
{
	const unsigned char *ident =
		s->fd >= 0 ? s->ident : (const unsigned char *)elf_getident(s->f.elf, NULL);
	struct ct c = {.f = &s->f, .work = s->work};
	struct ct_cie cie_eh = {.offset = (Dwarf_Off)-1}, cie_dbg = {.offset = (Dwarf_Off)-1};
	struct fl_cfitable t = {0};
	struct cs_fde *pick = NULL;
	size_t b, n = 0;
	Elf_Data *eh = NULL, *dbg = NULL, reread_eh = {0};
	uint64_t eh_addr = 0;
	int err;

	if (lo >= hi || lo > UINT32_MAX || !ident)
		return -EINVAL;
	err = src_index(s);
	if (err)
		return err;
	if (s->hdr_fdes) {
		/*
		 * Their ends are not known: those starting in the range, and the
		 * few before it of which one may reach into it (linkers write no
		 * FDEs that overlap, which the table could not say).
		 */
		size_t first = first_at(s->hdr_fdes, s->nr, sizeof(*s->hdr_fdes), lo);

		b = first_at(s->hdr_fdes, s->nr, sizeof(*s->hdr_fdes), hi);
		first = first > HDR_BEFORE ? first - HDR_BEFORE : 0;
		n = b - first;
		/* The file's work bound, before a hostile table has every FDE read in one range. */
		if (n > (WORK_MAX - s->work) / WORK_PER_CALL)
			return -EFBIG;
		pick = n ? malloc(n * sizeof(*pick)) : NULL;
		for (size_t i = 0; pick && i < n; i++)
			pick[i] = (struct cs_fde){.lo = s->hdr_fdes[first + i].lo,
						  .hi = s->hdr_fdes[first + i].lo,
						  .seq = s->hdr_fdes[first + i].entry,
						  .entry = s->hdr_fdes[first + i].entry};
	} else {
		/* Those starting below hi (fdes[0..b)), of which those ending above lo. */
		b = first_at(s->fdes, s->nr, sizeof(*s->fdes), hi);
		for (size_t i = b; i-- > 0 && s->reach[i] > lo;)
			n += s->fdes[i].hi > lo;
		pick = n ? malloc(n * sizeof(*pick)) : NULL;
		n = 0;
		for (size_t i = b; pick && i-- > 0 && s->reach[i] > lo;)
			if (s->fdes[i].hi > lo)
				pick[n++] = s->fdes[i];
	}
	if (!n)
		return -ENOENT;
	if (!pick)
		return -ENOMEM;
	/* Compiled in the order the whole file's are: which FDE wins an overlap is the same. */
	qsort(pick, n, sizeof(*pick), cmp_cs_seq);
	if (s->fd >= 0) {
		/* Released: .eh_frame's alone, and seq is their order in it. */
		err = s->hdr_fdes ? reread_hdr(s, pick, n, &reread_eh)
			     : reread_entries(s, pick, n, &reread_eh);
		if (err) {
			free(pick);
			return err;
		}
		eh = &reread_eh;
		eh_addr = s->eh_addr;
	} else {
		if (s->f.eh)
			eh = eh_frame_data(s->f.elf, &eh_addr);
		if (fl_cfi_file__debug_frame(&s->f))
			dbg = debug_frame_data(&s->f);
	}
	for (size_t i = 0; i < n && !err; i++) {
		Elf_Data *data = pick[i].debug ? dbg : eh;
		Dwarf_Off off = pick[i].entry;
		struct ct_fde_ins ins;
		uint64_t flo, len;
		size_t before = c.nr_fdes;

		/*
		 * Read again as the index read it (or, indexed by
		 * .eh_frame_hdr, read at last). The section held has not
		 * changed (it is ours); one read again may have (the file is
		 * its owner's): then what is read is parsed as any file is.
		 */
		enum nf r = data ? next_fde(ident, data, pick[i].debug ? 0 : eh_addr,
					    !pick[i].debug, pick[i].debug ? &cie_dbg : &cie_eh,
					    &off, &ins, &flo, &len)
				 : NF_END;

		if (r != NF_FDE && r != NF_UNUSED) {
			err = -EINVAL;
			break;
		}
		c.counts.fdes++;
		c.counts.fdes_debug_frame += pick[i].debug;
		if (r == NF_UNUSED) {
			/* As the whole file's compile counts it (the index's own picks have ranges). */
			c.counts.fdes_unused++;
			continue;
		}
		err = add_fde(&c, NULL, pick[i].debug, flo, len, &ins);
		if (!err && c.nr_fdes > before)
			c.fdes[before].seq = pick[i].seq;
	}
	if (!err && c.nr_fdes)
		err = add_code_starts(&c, lo, hi);
	if (!err)
		err = c.nr_fdes ? build(&c, &t) : -ENOENT;
	if (!err)
		err = clip(&t, lo, hi);
	s->work = c.work;
	if (!err) {
		c.counts.work = c.work;
		t.counts = c.counts;
		table_counts(&t);
		if (!table_has_cfi(&t))
			err = -ENOENT;
	}
	free(pick);
	free(c.fdes);
	free(c.spans);
	if (reread_eh.d_buf)
		munmap(reread_eh.d_buf, s->eh_size);
	if (err) {
		free(t.rows);
		return err;
	}
	t.code_bytes = hi - lo;
	*out = t;
	return 0;
}

void fl_cfitable__fini(struct fl_cfitable *t)
{
	if (!t)
		return;
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

const struct fl_uw_row *fl_cfitable__find(const struct fl_cfitable *t, uint64_t off)
{
	size_t lo = 0, hi = t->nr;

	if (!t->nr || off < t->rows[0].pc)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= off)
			lo = mid;
		else
			hi = mid;
	}
	return &t->rows[lo];
}
