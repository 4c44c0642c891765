/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A one-pass interpreter of DWARF call frame instructions (DW_CFA_*) for the table compiler. Private to lib/. */
#ifndef FLAMED_CFA_INTERP_H
#define FLAMED_CFA_INTERP_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The interpreter walks a CIE's initial instructions once, then each FDE's
 * instructions once, and gives every row of the FDE (a range of code and
 * the rules there) to a callback: linear in the bytes of CFI, where asking
 * libdw for each row (dwarf_cfi_addrframe()) re-interprets the FDE from its
 * start each time. Only the rules the walker's rows need are kept: the
 * CFA's, rbx's and rbp's (DWARF registers 3 and 6) and the return address
 * column's (16); instructions about other registers are read and dropped.
 *
 * Rules are handed out as libdw's dwarf_frame_cfa() and
 * dwarf_frame_register() present them (fl_cfa_state__cfa(),
 * fl_cfa_state__reg()), so that cfitable.c matches one form whichever
 * engine read the CFI. Everything read is bounds-checked: the input is
 * a file another user may have written.
 */

#define FL_CFA_REG_RBX 3
#define FL_CFA_REG_RBP 6
#define FL_CFA_REG_RA 16

/* remember_state without restore_state, at most (gcc nests one or two). */
#define FL_CFA_MAX_DEPTH 32

enum fl_cfa_reg_kind {
	FL_CFA_REG_UNSPECIFIED = 0, /* no instruction named it */
	FL_CFA_REG_UNDEFINED,
	FL_CFA_REG_SAME,
	FL_CFA_REG_OFFSET,     /* saved at CFA + value */
	FL_CFA_REG_VAL_OFFSET, /* is CFA + value */
	FL_CFA_REG_REGISTER,   /* in register value */
	FL_CFA_REG_EXPR,       /* saved at the address the expression computes */
	FL_CFA_REG_VAL_EXPR,   /* is what the expression computes */
};

/* One register's rule. value is the offset (as two's complement), or the register. */
struct fl_cfa_reg {
	uint8_t kind; /* enum fl_cfa_reg_kind */
	uint64_t value;
	const uint8_t *expr; /* EXPR and VAL_EXPR: the expression's bytes, in the section */
	uint64_t expr_len;
};

enum fl_cfa_cfa_kind {
	FL_CFA_CFA_NONE = 0, /* no rule yet */
	FL_CFA_CFA_REG_OFF,  /* register cfa_reg + cfa_off */
	FL_CFA_CFA_EXPR,     /* what the expression computes */
	FL_CFA_CFA_BROKEN,   /* an offset or register given to a rule of neither */
};

/* The rules at one row. Expressions point into the CFI section, which must outlive the state. */
struct fl_cfa_state {
	uint8_t cfa_kind; /* enum fl_cfa_cfa_kind */
	uint64_t cfa_reg, cfa_off;
	const uint8_t *cfa_expr;
	uint64_t cfa_expr_len;
	struct fl_cfa_reg rbx, rbp, ra;
};

/* What a CIE says about reading its FDEs' instructions. */
struct fl_cfa_cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t enc;		     /* DW_EH_PE_* of DW_CFA_set_loc's operand */
	const uint8_t *sec;	     /* the CFI section's bytes, for pcrel operands */
	uint64_t sec_addr;	     /* its address */
	struct fl_cfa_state initial; /* the rules after its initial instructions (fl_cfa__cie()) */
};

/*
 * Called for each row [pc, end) of an FDE, in order, rows adjoining, none
 * empty, all within the FDE. A negative return stops the walk with it.
 */
typedef int (*fl_cfa_row_fn)(void *ctx, uint64_t pc, uint64_t end, const struct fl_cfa_state *st);

/*
 * Interprets a CIE's initial instructions [p, end) into cie->initial (the
 * other fields filled in before). Returns 0, or -EINVAL for instructions
 * that cannot be read or are not allowed in a CIE (advance, restore).
 */
int fl_cfa__cie(struct fl_cfa_cie *cie, const uint8_t *p, const uint8_t *end);

/*
 * Interprets an FDE's instructions [p, end) for the code [lo, hi), from the
 * CIE's initial rules, giving each row to fn. A row ends at the first
 * advance whose location passes it (as a lookup of the pc would stop); an
 * advance that goes backwards (DW_CFA_set_loc, or a wrap-around) gives no
 * row. Returns 0 once rows cover [lo, hi); fn's negative return; or
 * -EINVAL at an instruction it cannot read (unknown, truncated, a LEB128
 * over ten bytes, restore_state without remember_state, remember_state
 * nested deeper than FL_CFA_MAX_DEPTH, def_cfa_register or def_cfa_offset
 * without a register CFA rule), *stop then being where rows end. Each
 * instruction consumes at least one byte: the work is linear in end - p.
 */
int fl_cfa__fde(const struct fl_cfa_cie *cie, const uint8_t *p, const uint8_t *end, uint64_t lo,
		uint64_t hi, fl_cfa_row_fn fn, void *ctx, uint64_t *stop);

/*
 * A rule as libdw hands it out: ops[0, n). The CFA register rule is one
 * DW_OP_bregx (number: the register, number2: the offset); a register
 * saved at CFA + N is DW_OP_call_frame_cfa, then DW_OP_plus_uconst N unless
 * N is 0; an expression register rule is DW_OP_call_frame_cfa then the
 * expression; val_ rules end with DW_OP_stack_value; "in register R" is
 * DW_OP_regx R. n 0 means same value, or undefined when undefined is set.
 * Expressions are decoded as far as the ops cfitable.c matches (breg,
 * bregx, lit, constNu, constu, deref, and, ge, shl, plus, plus_uconst) and
 * FL_CFA_MAX_OPS long: past another op, one cut short, or past that
 * length, the rest is one DW_OP_nop, which no pattern accepts. (libdw
 * decodes every op, and fails on some: the one difference is the reason
 * of a signal frame's return address rule of such an op, "ra" for libdw
 * when its decoding fails, "signal" here; the rows are the same.) An
 * empty register expression is "undefined", as libdw has it.
 */
#define FL_CFA_MAX_OPS 12
struct fl_cfa_ops {
	Dwarf_Op op[FL_CFA_MAX_OPS];
	size_t n;
	bool undefined;
};

/* The CFA rule. Always true: the form of the libdw engine's checks. */
bool fl_cfa_state__cfa(const struct fl_cfa_state *st, struct fl_cfa_ops *o);

/* A register's rule, likewise. A register never named has libdw's default: same value. */
bool fl_cfa_state__reg(const struct fl_cfa_reg *r, struct fl_cfa_ops *o);

/*
 * Readers of the CFI's encodings, within [*p, end): on success *p moves
 * past what was read. LEB128 numbers of more than ten bytes are refused.
 */
bool fl_cfa__uleb(const uint8_t **p, const uint8_t *end, uint64_t *v);
bool fl_cfa__sleb(const uint8_t **p, const uint8_t *end, uint64_t *v);
/*
 * A pointer of DW_EH_PE_* encoding enc, field_addr being the address of
 * the field (for pcrel). Application other than absolute and pcrel
 * (datarel, textrel...: no x86-64 toolchain writes them in FDEs),
 * indirection and aligned pointers are not read.
 */
bool fl_cfa__encoded(uint8_t enc, const uint8_t **p, const uint8_t *end, uint64_t field_addr,
		     uint64_t *v);

/* DW_EH_PE_* pointer encodings (LSB ABI), as far as FDEs use them. */
#define FL_PE_OMIT 0xff
#define FL_PE_FORMAT 0x0f
#define FL_PE_ABSPTR 0x00
#define FL_PE_ULEB128 0x01
#define FL_PE_UDATA2 0x02
#define FL_PE_UDATA4 0x03
#define FL_PE_UDATA8 0x04
#define FL_PE_SLEB128 0x09
#define FL_PE_SDATA2 0x0a
#define FL_PE_SDATA4 0x0b
#define FL_PE_SDATA8 0x0c
#define FL_PE_APPLY 0x70
#define FL_PE_PCREL 0x10
#define FL_PE_INDIRECT 0x80

#endif
