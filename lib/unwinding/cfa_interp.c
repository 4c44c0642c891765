// SPDX-License-Identifier: GPL-2.0-or-later
/* The one-pass interpreter of DWARF call frame instructions (cfa_interp.h). */
#include <dwarf.h>
#include <errno.h>
#include <string.h>

#include "unwinding/cfa_interp.h"

/* LEB128 numbers longer than this cannot be 64-bit values: hostile, refused. */
#define LEB_MAX_BYTES 10

/* A LEB128 number at *p (at most LEB_MAX_BYTES), sign-extended if sign. */
static bool read_leb(const uint8_t **p, const uint8_t *end, bool sign, uint64_t *v)
{
	const uint8_t *q = *p;
	unsigned shift = 0;

	*v = 0;
	for (int i = 0; i < LEB_MAX_BYTES && q < end; i++) {
		uint8_t b = *q++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (sign && shift < 64 && (b & 0x40))
				*v |= ~(uint64_t)0 << shift;
			*p = q;
			return true;
		}
	}
	return false;
}

bool fl_cfa__uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	return read_leb(p, end, false, v);
}

bool fl_cfa__sleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	return read_leb(p, end, true, v);
}

/* n little-endian bytes at *p, sign-extended if sign. */
static bool read_fixed(const uint8_t **p, const uint8_t *end, unsigned n, bool sign, uint64_t *v)
{
	if ((size_t)(end - *p) < n)
		return false;
	*v = 0;
	for (unsigned i = 0; i < n; i++)
		*v |= (uint64_t)(*p)[i] << (8 * i);
	if (sign && n < 8 && (*v >> (8 * n - 1)) & 1)
		*v |= ~(uint64_t)0 << (8 * n);
	*p += n;
	return true;
}

bool fl_cfa__encoded(uint8_t enc, const uint8_t **p, const uint8_t *end, uint64_t field_addr,
		     uint64_t *v)
{
	bool ok;

	if (enc & FL_PE_INDIRECT ||
	    ((enc & FL_PE_APPLY) != 0 && (enc & FL_PE_APPLY) != FL_PE_PCREL))
		return false;
	switch (enc & FL_PE_FORMAT) {
	case FL_PE_ABSPTR:
	case FL_PE_UDATA8:
	case FL_PE_SDATA8:
		ok = read_fixed(p, end, 8, false, v);
		break;
	case FL_PE_UDATA2:
		ok = read_fixed(p, end, 2, false, v);
		break;
	case FL_PE_SDATA2:
		ok = read_fixed(p, end, 2, true, v);
		break;
	case FL_PE_UDATA4:
		ok = read_fixed(p, end, 4, false, v);
		break;
	case FL_PE_SDATA4:
		ok = read_fixed(p, end, 4, true, v);
		break;
	case FL_PE_ULEB128:
		ok = fl_cfa__uleb(p, end, v);
		break;
	case FL_PE_SLEB128:
		ok = fl_cfa__sleb(p, end, v);
		break;
	default:
		return false;
	}
	if (ok && (enc & FL_PE_APPLY) == FL_PE_PCREL)
		*v += field_addr;
	return ok;
}

/* --- instructions -------------------------------------------------------------------- */

/* The rule of a tracked register, or NULL for one whose rule no row needs. */
static struct fl_cfa_reg *reg_of(struct fl_cfa_state *st, uint64_t reg)
{
	if (reg == FL_CFA_REG_RBP)
		return &st->rbp;
	if (reg == FL_CFA_REG_RBX)
		return &st->rbx;
	if (reg == FL_CFA_REG_RA)
		return &st->ra;
	return NULL;
}

static void set_reg(struct fl_cfa_state *st, uint64_t reg, uint8_t kind, uint64_t value)
{
	struct fl_cfa_reg *r = reg_of(st, reg);

	if (r)
		*r = (struct fl_cfa_reg){.kind = kind, .value = value};
}

/* An expression operand: its uleb length, then its bytes, all within end. */
static bool read_block(const uint8_t **p, const uint8_t *end, const uint8_t **expr, uint64_t *len)
{
	if (!fl_cfa__uleb(p, end, len) || *len > (uint64_t)(end - *p))
		return false;
	*expr = *p;
	*p += *len;
	return true;
}

/* What one run of instructions works with: a CIE's (initial NULL) or an FDE's. */
struct run {
	const struct fl_cfa_cie *cie;
	const struct fl_cfa_state *initial; /* DW_CFA_restore's rules; NULL in a CIE */
	struct fl_cfa_state st;
	struct fl_cfa_state stack[FL_CFA_MAX_DEPTH];
	unsigned depth;
	uint64_t loc;  /* the location the instructions are at */
	uint64_t done; /* rows are given up to here: the highest location reached */
	uint64_t hi;   /* the FDE's end */
	fl_cfa_row_fn fn;
	void *ctx;
};

/* Moves the location to loc: the rows up to it (within the FDE, past what was given) are given. */
static int advance(struct run *r, uint64_t loc)
{
	uint64_t end;
	int err;

	r->loc = loc;
	if (!r->fn || loc <= r->done)
		return 0;
	end = loc < r->hi ? loc : r->hi;
	err = r->fn(r->ctx, r->done, end, &r->st);
	r->done = end;
	return err;
}

/*
 * One instruction at *p (p < end). Returns 0, a negative error of the
 * callback, or -EINVAL for an instruction that cannot be read.
 */
static int step(struct run *r, const uint8_t **p, const uint8_t *end)
{
	const struct fl_cfa_cie *cie = r->cie;
	struct fl_cfa_state *st = &r->st;
	uint8_t op = *(*p)++;
	uint64_t reg, off, delta;
	const uint8_t *expr;
	struct fl_cfa_reg *rr;

	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
		delta = op & 0x3f;
		goto advance;
	case DW_CFA_offset:
		reg = op & 0x3f;
		if (!fl_cfa__uleb(p, end, &off))
			return -EINVAL;
		set_reg(st, reg, FL_CFA_REG_OFFSET, off * (uint64_t)cie->data_align);
		return 0;
	case DW_CFA_restore:
		reg = op & 0x3f;
		goto restore;
	}
	switch (op) {
	case DW_CFA_nop:
		return 0;
	case DW_CFA_set_loc:
		if (!fl_cfa__encoded(cie->enc, p, end, cie->sec_addr + (uint64_t)(*p - cie->sec),
				     &off))
			return -EINVAL;
		return advance(r, off);
	case DW_CFA_advance_loc1:
		if (end - *p < 1)
			return -EINVAL;
		delta = *(*p)++;
		goto advance;
	case DW_CFA_advance_loc2:
		if (!fl_cfa__encoded(FL_PE_UDATA2, p, end, 0, &delta))
			return -EINVAL;
		goto advance;
	case DW_CFA_advance_loc4:
		if (!fl_cfa__encoded(FL_PE_UDATA4, p, end, 0, &delta))
			return -EINVAL;
		goto advance;
	case DW_CFA_MIPS_advance_loc8:
		if (!fl_cfa__encoded(FL_PE_UDATA8, p, end, 0, &delta))
			return -EINVAL;
		goto advance;
	case DW_CFA_offset_extended:
		if (!fl_cfa__uleb(p, end, &reg) || !fl_cfa__uleb(p, end, &off))
			return -EINVAL;
		set_reg(st, reg, FL_CFA_REG_OFFSET, off * (uint64_t)cie->data_align);
		return 0;
	case DW_CFA_offset_extended_sf:
		if (!fl_cfa__uleb(p, end, &reg) || !fl_cfa__sleb(p, end, &off))
			return -EINVAL;
		set_reg(st, reg, FL_CFA_REG_OFFSET, off * (uint64_t)cie->data_align);
		return 0;
	case DW_CFA_GNU_negative_offset_extended:
		if (!fl_cfa__uleb(p, end, &reg) || !fl_cfa__uleb(p, end, &off))
			return -EINVAL;
		set_reg(st, reg, FL_CFA_REG_OFFSET, -(off * (uint64_t)cie->data_align));
		return 0;
	case DW_CFA_val_offset:
		if (!fl_cfa__uleb(p, end, &reg) || !fl_cfa__uleb(p, end, &off))
			return -EINVAL;
		set_reg(st, reg, FL_CFA_REG_VAL_OFFSET, off * (uint64_t)cie->data_align);
		return 0;
	case DW_CFA_val_offset_sf:
		if (!fl_cfa__uleb(p, end, &reg) || !fl_cfa__sleb(p, end, &off))
			return -EINVAL;
		set_reg(st, reg, FL_CFA_REG_VAL_OFFSET, off * (uint64_t)cie->data_align);
		return 0;
	case DW_CFA_restore_extended:
		if (!fl_cfa__uleb(p, end, &reg))
			return -EINVAL;
		goto restore;
	case DW_CFA_undefined:
		if (!fl_cfa__uleb(p, end, &reg))
			return -EINVAL;
		set_reg(st, reg, FL_CFA_REG_UNDEFINED, 0);
		return 0;
	case DW_CFA_same_value:
		if (!fl_cfa__uleb(p, end, &reg))
			return -EINVAL;
		set_reg(st, reg, FL_CFA_REG_SAME, 0);
		return 0;
	case DW_CFA_register:
		if (!fl_cfa__uleb(p, end, &reg) || !fl_cfa__uleb(p, end, &off))
			return -EINVAL;
		set_reg(st, reg, FL_CFA_REG_REGISTER, off);
		return 0;
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		if (!fl_cfa__uleb(p, end, &reg) || !read_block(p, end, &expr, &off))
			return -EINVAL;
		rr = reg_of(st, reg);
		if (rr)
			*rr = (struct fl_cfa_reg){
				.kind = op == DW_CFA_expression ? FL_CFA_REG_EXPR
								: FL_CFA_REG_VAL_EXPR,
				.expr = expr,
				.expr_len = off,
			};
		return 0;
	case DW_CFA_remember_state:
		if (r->depth == FL_CFA_MAX_DEPTH)
			return -EINVAL;
		r->stack[r->depth++] = *st;
		return 0;
	case DW_CFA_restore_state:
		if (!r->depth)
			return -EINVAL;
		*st = r->stack[--r->depth];
		return 0;
	case DW_CFA_def_cfa:
		if (!fl_cfa__uleb(p, end, &reg) || !fl_cfa__uleb(p, end, &off))
			return -EINVAL;
		goto def_cfa;
	case DW_CFA_def_cfa_sf:
		if (!fl_cfa__uleb(p, end, &reg) || !fl_cfa__sleb(p, end, &off))
			return -EINVAL;
		off *= (uint64_t)cie->data_align;
		goto def_cfa;
	case DW_CFA_def_cfa_register:
		if (!fl_cfa__uleb(p, end, &reg))
			return -EINVAL;
		st->cfa_reg = reg;
		goto cfa_changed;
	case DW_CFA_def_cfa_offset:
		if (!fl_cfa__uleb(p, end, &off))
			return -EINVAL;
		st->cfa_off = off;
		goto cfa_changed;
	case DW_CFA_def_cfa_offset_sf:
		if (!fl_cfa__sleb(p, end, &off))
			return -EINVAL;
		st->cfa_off = off * (uint64_t)cie->data_align;
		goto cfa_changed;
	case DW_CFA_def_cfa_expression:
		if (!read_block(p, end, &expr, &off))
			return -EINVAL;
		st->cfa_kind = FL_CFA_CFA_EXPR;
		st->cfa_expr = expr;
		st->cfa_expr_len = off;
		return 0;
	case DW_CFA_GNU_args_size:
		return fl_cfa__uleb(p, end, &off) ? 0 : -EINVAL;
	case DW_CFA_GNU_window_save:
		/*
		 * SPARC's: registers 16-31 saved at CFA + 8 * (n - 16). No
		 * x86-64 compiler emits it; libdw gives it that meaning here,
		 * and so the return address column's rule.
		 */
		set_reg(st, FL_CFA_REG_RA, FL_CFA_REG_OFFSET, 0);
		return 0;
	default:
		return -EINVAL; /* user extensions: nothing x86-64 emits */
	}

advance:
	if (!r->initial)
		return -EINVAL; /* a CIE has no rows */
	/* Locations wrap around as 64-bit addresses do: backwards, no row. */
	return advance(r, r->loc + delta * cie->code_align);
restore:
	if (!r->initial)
		return -EINVAL;
	rr = reg_of(st, reg);
	if (rr)
		*rr = reg == FL_CFA_REG_RBP   ? r->initial->rbp
		      : reg == FL_CFA_REG_RBX ? r->initial->rbx
					      : r->initial->ra;
	return 0;
def_cfa:
	st->cfa_kind = FL_CFA_CFA_REG_OFF;
	st->cfa_reg = reg;
	st->cfa_off = off;
	return 0;
cfa_changed:
	/*
	 * A new register or offset for a CFA rule that had none (an
	 * expression, or no rule): DWARF does not allow it, and libdw makes
	 * of it a rule nobody can evaluate. So does this until the next
	 * def_cfa or def_cfa_expression.
	 */
	if (st->cfa_kind != FL_CFA_CFA_REG_OFF)
		st->cfa_kind = FL_CFA_CFA_BROKEN;
	return 0;
}

int fl_cfa__cie(struct fl_cfa_cie *cie, const uint8_t *p, const uint8_t *end)
{
	struct run r = {.cie = cie};
	int err = 0;

	while (p < end && !err)
		err = step(&r, &p, end);
	if (!err)
		cie->initial = r.st;
	return err;
}

int fl_cfa__fde(const struct fl_cfa_cie *cie, const uint8_t *p, const uint8_t *end, uint64_t lo,
		uint64_t hi, fl_cfa_row_fn fn, void *ctx, uint64_t *stop)
{
	struct run r = {
		.cie = cie,
		.initial = &cie->initial,
		.st = cie->initial,
		.loc = lo,
		.done = lo,
		.hi = hi,
		.fn = fn,
		.ctx = ctx,
	};
	int err = 0;

	while (p < end && r.done < hi && !err)
		err = step(&r, &p, end);
	if (!err && r.done < hi)
		err = fn(ctx, r.done, hi, &r.st);
	*stop = r.done;
	return err;
}

/* --- rules as libdw hands them out ---------------------------------------------------- */

/* Appends op to o if there is room for it and for what may follow (stack_value); false if not. */
static bool put_op(struct fl_cfa_ops *o, uint8_t atom, uint64_t number, uint64_t number2)
{
	if (o->n >= FL_CFA_MAX_OPS - 2)
		return false;
	o->op[o->n++] = (Dwarf_Op){.atom = atom, .number = number, .number2 = number2};
	return true;
}

/*
 * Decodes the expression [p, end) onto o. An op it does not read, one cut
 * short, or ops beyond the room end it with one DW_OP_nop: no pattern of
 * cfitable.c has it, so the rule matches none, as libdw's decoding of it
 * (which may fail, or read past the cut) matches none.
 */
static void decode(const uint8_t *p, const uint8_t *end, struct fl_cfa_ops *o)
{
	while (p < end) {
		uint8_t atom = *p++;
		uint64_t a = 0, b = 0;
		bool ok = true;

		if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
			ok = fl_cfa__sleb(&p, end, &a);
		} else if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) {
			/* no operand */
		} else {
			switch (atom) {
			case DW_OP_bregx:
				ok = fl_cfa__uleb(&p, end, &a) && fl_cfa__sleb(&p, end, &b);
				break;
			case DW_OP_const1u:
				ok = p < end;
				if (ok)
					a = *p++;
				break;
			case DW_OP_const2u:
				ok = fl_cfa__encoded(FL_PE_UDATA2, &p, end, 0, &a);
				break;
			case DW_OP_const4u:
				ok = fl_cfa__encoded(FL_PE_UDATA4, &p, end, 0, &a);
				break;
			case DW_OP_const8u:
				ok = fl_cfa__encoded(FL_PE_UDATA8, &p, end, 0, &a);
				break;
			case DW_OP_constu:
			case DW_OP_plus_uconst:
				ok = fl_cfa__uleb(&p, end, &a);
				break;
			case DW_OP_deref:
			case DW_OP_and:
			case DW_OP_ge:
			case DW_OP_shl:
			case DW_OP_plus:
				break;
			default:
				ok = false;
			}
		}
		if (!ok || !put_op(o, atom, a, b)) {
			o->op[o->n++] = (Dwarf_Op){.atom = DW_OP_nop};
			return;
		}
	}
}

bool fl_cfa_state__cfa(const struct fl_cfa_state *st, struct fl_cfa_ops *o)
{
	o->n = 0;
	o->undefined = false;
	switch (st->cfa_kind) {
	case FL_CFA_CFA_REG_OFF:
		put_op(o, DW_OP_bregx, st->cfa_reg, st->cfa_off);
		return true;
	case FL_CFA_CFA_EXPR:
		decode(st->cfa_expr, st->cfa_expr + st->cfa_expr_len, o);
		return true;
	case FL_CFA_CFA_BROKEN:
		o->op[o->n++] = (Dwarf_Op){.atom = DW_OP_nop};
		return true;
	}
	return true;
}

bool fl_cfa_state__reg(const struct fl_cfa_reg *r, struct fl_cfa_ops *o)
{
	o->n = 0;
	o->undefined = false;
	switch (r->kind) {
	case FL_CFA_REG_UNDEFINED:
		o->undefined = true;
		return true;
	case FL_CFA_REG_UNSPECIFIED:
	case FL_CFA_REG_SAME:
		return true;
	case FL_CFA_REG_OFFSET:
	case FL_CFA_REG_VAL_OFFSET:
		put_op(o, DW_OP_call_frame_cfa, 0, 0);
		if (r->value)
			put_op(o, DW_OP_plus_uconst, r->value, 0);
		break;
	case FL_CFA_REG_REGISTER:
		put_op(o, DW_OP_regx, r->value, 0);
		return true;
	case FL_CFA_REG_EXPR:
	case FL_CFA_REG_VAL_EXPR:
		if (!r->expr_len) {
			/* libdw hands an empty expression out as "undefined". */
			o->undefined = true;
			return true;
		}
		put_op(o, DW_OP_call_frame_cfa, 0, 0);
		decode(r->expr, r->expr + r->expr_len, o);
		break;
	}
	if (r->kind == FL_CFA_REG_VAL_OFFSET || r->kind == FL_CFA_REG_VAL_EXPR)
		o->op[o->n++] = (Dwarf_Op){.atom = DW_OP_stack_value};
	return true;
}
