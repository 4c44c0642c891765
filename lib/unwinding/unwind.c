// SPDX-License-Identifier: GPL-2.0-or-later
/* The DWARF unwinder: walks a copy of a user stack with the CFI of the mapped ELF files. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/unwind_abi.h"
#include "flamed/unwinding/unwind.h"
#include "symbols/elfsize.h"
#include "flamed/common/budget.h"
#include "common/hash.h"
#include "common/u32map.h"
#include "files/mapped_file.h"
#include "flamed/unwinding/cfitable.h"
#include "unwinding/cfi_file.h"

/*
 * Files with this much code or more are indexed by their .eh_frame_hdr and
 * stepped by rows compiled a window at a time, as the kernel's tables of
 * big files are (ktables.c): libLLVM's CFI is not read whole (5 MB).
 */
#define UW_HDR_MIN_CODE ((uint64_t)4 << 20)

/*
 * Per ELF file (by device and inode, or the vdso): its CFI (cfi_file.h),
 * read once however many processes and samples use it, and what the
 * unwinder keeps about it. The fd is let go once the CFI is read: a machine
 * maps many files.
 */
struct uw_file {
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	bool vdso;
	bool bad;	  /* could not be opened or read: every pc in it fails */
	bool over_budget; /* bad for want of room in the budget: tried again after a trim */
	uint64_t bytes;	  /* charged to the budget */
	uint64_t used;	  /* the unwinder's generation when a sample last went through it */
	/*
	 * Its headers read, its CFI not: the steps through it so far were at
	 * pcs the compiled tables say have none (a big file's CFI is MBs).
	 */
	bool cfi_unread;
	/*
	 * A big file indexed by its .eh_frame_hdr, its CFI not read: steps take
	 * the rows of their pc's window, compiled once each (wins, empty where
	 * there is no CFI; by window + 1 in win_idx). hdr_failed: a step needed
	 * a rule rows do not hold, and the CFI was read whole after all.
	 */
	struct fl_cfitable_src *src;
	struct fl_cfitable *wins;
	size_t nr_wins, cap_wins;
	struct fl_u32map win_idx;
	bool hdr_failed;
	struct fl_cfi_file cfi;
};

struct fl_unwinder {
	struct fl_unwind_opts opts;
	struct uw_file **files; /* open addressing by (dev, ino) */
	size_t cap_files, nr_files;
	struct uw_file *vdso;
	struct fl_unwind_stats stats;
	uint64_t gen; /* fl_unwinder__trim() calls */
	fl_unwind_row_fn row_fn; /* fl_unwinder__set_rows() */
	void *row_ctx;
};

/* --- registers ------------------------------------------------------------------ */

#if defined(__x86_64__)
/*
 * perf's x86 register numbers (arch/x86/include/uapi/asm/perf_regs.h): AX 0,
 * BX 1, CX 2, DX 3, SI 4, DI 5, BP 6, SP 7, IP 8, FLAGS 9, segment registers
 * 10-15, R8-R15 16-23. The sample carries the masked ones in bit order.
 */
static const int perf_to_dwarf[] = {
	[0] = 0,   [1] = 3,   [2] = 2,	 [3] = 1,   [4] = 4,   [5] = 5,
	[6] = 6,   [7] = 7,   [8] = 16,	 [16] = 8,  [17] = 9,  [18] = 10,
	[19] = 11, [20] = 12, [21] = 13, [22] = 14, [23] = 15,
};
#define PERF_REGS_MASK (0x1ffULL | (0xffULL << 16))
#else
static const int perf_to_dwarf[1];
#define PERF_REGS_MASK 0ULL
#endif

uint64_t fl_unwind__perf_regs_mask(void)
{
	return PERF_REGS_MASK;
}

void fl_unwind__regs_from_perf(const uint64_t *perf_regs, uint64_t regs[FL_UNWIND_NR_REGS])
{
	size_t k = 0;

	memset(regs, 0, FL_UNWIND_NR_REGS * sizeof(*regs));
	for (unsigned bit = 0; bit < 64; bit++)
		if (PERF_REGS_MASK & (1ULL << bit))
			regs[perf_to_dwarf[bit]] = perf_regs[k++];
}

/* --- files ------------------------------------------------------------------------ */

int fl_unwinder__new(const struct fl_unwind_opts *opts, struct fl_unwinder **ret)
{
	struct fl_unwinder *u;

	if (!opts || !opts->find_map)
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	memcpy(&u->opts, opts, opts->sz && opts->sz < sizeof(u->opts) ? opts->sz : sizeof(u->opts));
	elf_version(EV_CURRENT);
	*ret = u;
	return 0;
}

/* Lets go of f's index and windows, and of what they were charged (all of f->bytes). */
static void file_hdr_free(struct fl_unwinder *u, struct uw_file *f)
{
	fl_budget__give(u->opts.budget, f->bytes);
	u->stats.bytes -= f->bytes;
	f->bytes = 0;
	fl_cfitable_src__free(f->src);
	f->src = NULL;
	for (size_t i = 0; i < f->nr_wins; i++)
		fl_cfitable__fini(&f->wins[i]);
	free(f->wins);
	f->wins = NULL;
	f->nr_wins = f->cap_wins = 0;
	fl_u32map__fini(&f->win_idx);
}

static void file_free(struct fl_unwinder *u, struct uw_file *f)
{
	if (!f)
		return;
	file_hdr_free(u, f);
	fl_cfi_file__fini(&f->cfi);
	free(f);
}

void fl_unwinder__free(struct fl_unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->cap_files; i++)
		file_free(u, u->files[i]);
	free(u->files);
	file_free(u, u->vdso);
	free(u);
}

/*
 * Charges f's CFI to the budget before it is read: false, with f bad
 * until a trim and f->bytes the room it wanted, when it does not fit.
 */
static bool file_charge(struct fl_unwinder *u, struct uw_file *f, int fd, uint64_t file_size)
{
	f->bytes = fl_cfi_file__bytes(&f->cfi, fd, file_size);
	if (fl_budget__take(u->opts.budget, f->bytes)) {
		u->stats.bytes += f->bytes;
		return true;
	}
	f->bad = true;
	f->over_budget = true;
	u->stats.files_over_budget++;
	u->stats.bytes_over_budget = fl_elfsize__add(u->stats.bytes_over_budget, f->bytes);
	return false;
}

/*
 * A big file indexed by its .eh_frame_hdr instead of its CFI read (unless
 * that failed it once): true when it is, the index charged to the budget.
 */
static bool file_hdr(struct fl_unwinder *u, struct uw_file *f, int fd, const char *path)
{
	uint64_t min = u->opts.hdr_min_code ? u->opts.hdr_min_code : UW_HDR_MIN_CODE, bytes;

	if (f->hdr_failed || fl_cfitable_src__open_hdr(fd, min, &f->src))
		return false;
	bytes = fl_cfitable_src__bytes(f->src);
	if (!fl_budget__take(u->opts.budget, bytes)) {
		fl_cfitable_src__free(f->src);
		f->src = NULL;
		return false;
	}
	f->bytes = bytes;
	u->stats.bytes += bytes;
	u->stats.hdr_files++;
	fl_pr_debug("unwind: %s: indexed by .eh_frame_hdr, %llu bytes\n", path,
		    (unsigned long long)bytes);
	return true;
}

/* Reads f's headers, and unless !want_cfi its CFI too, from fd (closed here), the file mapped at tm. */
static void file_load_fd(struct fl_unwinder *u, struct uw_file *f, const struct fl_tmap *tm,
			 int fd, bool want_cfi)
{
	struct stat st;

	if (fstat(fd, &st) || fl_cfi_file__begin_fd(&f->cfi, fd)) {
		fl_pr_debug("unwind: %s: not a usable ELF file\n", tm->path);
		f->bad = true;
	} else if (!want_cfi) {
		f->cfi_unread = true;
	} else if (!fl_cfi_file__size_ok(&f->cfi, (uint64_t)st.st_size)) {
		fl_pr_debug("unwind: %s: CFI larger than %llu MiB, not read\n", tm->path,
			    (unsigned long long)(FL_CFI_MAX_BYTES >> 20));
		f->bad = true;
	} else if (file_hdr(u, f, fd, tm->path)) {
		/* Its CFI is read a window at a time (file_row()). */
	} else if (!file_charge(u, f, fd, (uint64_t)st.st_size)) {
		fl_pr_debug("unwind: %s: CFI of %llu bytes not read: no room in the budget\n",
			    tm->path, (unsigned long long)f->bytes);
		f->bytes = 0;
	} else {
		/* Both read here, whole: .eh_frame and .eh_frame_hdr now, .debug_frame aside. */
		fl_cfi_file__read(&f->cfi, fd);
		fl_pr_debug("unwind: %s: CFI read, %llu bytes\n", tm->path,
			    (unsigned long long)f->bytes);
	}
	/* Nothing more is read from the file: the descriptor goes (a machine maps many files). */
	fl_cfi_file__fd_done(&f->cfi);
	close(fd);
}

/* Reads f's headers, and unless !want_cfi its CFI too, from the file mapped at tm. */
static void file_load(struct fl_unwinder *u, struct uw_file *f, const struct fl_tmap *tm,
		      uint32_t pid, bool want_cfi)
{
	/* The mapped file only; deleted or replaced since, through the process while it lives. */
	int fd = fl_open_mapped_file(tm, pid);

	if (fd < 0) {
		fl_pr_debug("unwind: %s: %s\n", tm->path,
			    fd == -ESTALE ? "not the mapped file" : strerror(-fd));
		f->bad = true;
		return;
	}
	file_load_fd(u, f, tm, fd, want_cfi);
}

static struct uw_file *file_open(struct fl_unwinder *u, const struct fl_tmap *tm, uint32_t pid,
				 bool want_cfi)
{
	struct uw_file *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->dev_major = tm->dev_major;
	f->dev_minor = tm->dev_minor;
	f->ino = tm->ino;
	file_load(u, f, tm, pid, want_cfi);
	return f;
}

/* f, whose headers alone were read, with its CFI read now (from the start again: libelf let go of the fd). */
static void file_read_cfi(struct fl_unwinder *u, struct uw_file *f, const struct fl_tmap *tm,
			  uint32_t pid)
{
	fl_cfi_file__fini(&f->cfi);
	f->cfi_unread = false;
	file_load(u, f, tm, pid, true);
}

/* The vdso is the same image in every process: its CFI is read from our own copy. */
static struct uw_file *vdso_file(struct fl_unwinder *u)
{
	const void *image;
	size_t size;

	if (u->vdso)
		return u->vdso;
	u->vdso = calloc(1, sizeof(*u->vdso));
	if (!u->vdso)
		return NULL;
	u->vdso->vdso = true;
	image = fl_cfi_file__vdso_image(&size);
	if (!image || fl_cfi_file__begin_memory(&u->vdso->cfi, image, size))
		u->vdso->bad = true;
	else
		fl_cfi_file__read(&u->vdso->cfi, -1);
	return u->vdso;
}

static uint64_t file_hash(uint32_t maj, uint32_t min, uint64_t ino)
{
	return fl_hash_u64_pair(ino, (uint64_t)maj << 32 | min);
}

/* The file table at capacity cap, the files placed again (open addressing). */
static int files_rehash(struct fl_unwinder *u, size_t cap)
{
	struct uw_file **files = calloc(cap, sizeof(*files));

	if (!files)
		return -ENOMEM;
	for (size_t i = 0; i < u->cap_files; i++) {
		struct uw_file *f = u->files[i];
		size_t j;

		if (!f)
			continue;
		j = file_hash(f->dev_major, f->dev_minor, f->ino) & (cap - 1);
		while (files[j])
			j = (j + 1) & (cap - 1);
		files[j] = f;
	}
	free(u->files);
	u->files = files;
	u->cap_files = cap;
	return 0;
}

static int files_grow(struct fl_unwinder *u)
{
	return files_rehash(u, u->cap_files ? u->cap_files * 2 : 64);
}

/* Code that is not a file's: anonymous memory (a JIT's), [vsyscall] and the like (not [vdso]). */
static bool no_file(const struct fl_tmap *tm)
{
	if (tm->path[0] == '[')
		return strcmp(tm->path, "[vdso]") != 0;
	return fl_tmap__is_anon(tm) || !tm->ino;
}

/*
 * The file mapped at tm, opened once; want_cfi: with its CFI read (else
 * its headers may do: the step has no CFI to look up).
 */
static struct uw_file *file_get(struct fl_unwinder *u, const struct fl_tmap *tm, uint32_t pid,
				bool want_cfi)
{
	struct uw_file *f;
	size_t j;

	if (!strcmp(tm->path, "[vdso]"))
		return vdso_file(u);
	if (no_file(tm))
		return NULL;
	if ((u->nr_files + 1) * 2 > u->cap_files && files_grow(u))
		return NULL;
	j = file_hash(tm->dev_major, tm->dev_minor, tm->ino) & (u->cap_files - 1);
	for (; (f = u->files[j]); j = (j + 1) & (u->cap_files - 1))
		if (f->ino == tm->ino && f->dev_major == tm->dev_major &&
		    f->dev_minor == tm->dev_minor) {
			f->used = u->gen;
			if (f->cfi_unread && want_cfi && !f->bad)
				file_read_cfi(u, f, tm, pid);
			return f;
		}
	f = file_open(u, tm, pid, want_cfi);
	if (!f)
		return NULL;
	f->used = u->gen;
	u->files[j] = f;
	u->nr_files++;
	u->stats.files++;
	return f;
}

/* --- evaluation ------------------------------------------------------------------- */

struct uw_state {
	uint64_t regs[FL_UNWIND_NR_REGS];
	uint32_t valid; /* bit r: regs[r] is known */
	const struct fl_unwind_sample *s;
	uint64_t sp0;	/* where the stack copy starts */
	bool past_copy; /* a read went beyond the copy's end */
};

static bool read_word(struct uw_state *st, uint64_t addr, uint64_t *val)
{
	if (addr < st->sp0 || addr - st->sp0 > st->s->stack_size ||
	    st->s->stack_size - (addr - st->sp0) < sizeof(*val)) {
		if (addr >= st->sp0)
			st->past_copy = true;
		return false;
	}
	memcpy(val, st->s->stack + (addr - st->sp0), sizeof(*val));
	return true;
}

static bool reg_of(const struct uw_state *st, uint64_t r, uint64_t *val)
{
	if (r >= FL_UNWIND_NR_REGS || !(st->valid & (1u << r)))
		return false;
	*val = st->regs[r];
	return true;
}

#define EVAL_STACK 16

/*
 * Evaluates a DWARF expression of the CFI (the operations compilers emit
 * for CFA and register rules, PLT entries' included). On success *val is
 * the result and *is_value says whether it is the register's value
 * (DW_OP_stack_value, DW_OP_regN) rather than the address it is saved at.
 */
static bool eval(struct uw_state *st, const Dwarf_Op *ops, size_t nops, uint64_t cfa, bool have_cfa,
		 uint64_t *val, bool *is_value)
{
	uint64_t stk[EVAL_STACK], a, b;
	size_t sp = 0;

	*is_value = false;
#define PUSH(v)                                                                                    \
	do {                                                                                       \
		if (sp == EVAL_STACK)                                                              \
			return false;                                                              \
		stk[sp++] = (v);                                                                   \
	} while (0)
#define POP(v)                                                                                     \
	do {                                                                                       \
		if (!sp)                                                                           \
			return false;                                                              \
		(v) = stk[--sp];                                                                   \
	} while (0)
	for (size_t i = 0; i < nops; i++) {
		const Dwarf_Op *op = &ops[i];
		uint8_t at = op->atom;

		if (at >= DW_OP_lit0 && at <= DW_OP_lit31) {
			PUSH((uint64_t)(at - DW_OP_lit0));
		} else if (at >= DW_OP_breg0 && at <= DW_OP_breg31) {
			if (!reg_of(st, at - DW_OP_breg0, &a))
				return false;
			PUSH(a + op->number);
		} else if (at >= DW_OP_reg0 && at <= DW_OP_reg31) {
			if (nops != 1 || !reg_of(st, at - DW_OP_reg0, &a))
				return false;
			*val = a;
			*is_value = true;
			return true;
		} else {
			switch (at) {
			case DW_OP_regx:
				if (nops != 1 || !reg_of(st, op->number, &a))
					return false;
				*val = a;
				*is_value = true;
				return true;
			case DW_OP_bregx:
				if (!reg_of(st, op->number, &a))
					return false;
				PUSH(a + op->number2);
				break;
			case DW_OP_const1u:
			case DW_OP_const1s:
			case DW_OP_const2u:
			case DW_OP_const2s:
			case DW_OP_const4u:
			case DW_OP_const4s:
			case DW_OP_const8u:
			case DW_OP_const8s:
			case DW_OP_constu:
			case DW_OP_consts:
				PUSH(op->number);
				break;
			case DW_OP_call_frame_cfa:
				if (!have_cfa)
					return false;
				PUSH(cfa);
				break;
			case DW_OP_plus_uconst:
				POP(a);
				PUSH(a + op->number);
				break;
			case DW_OP_deref:
				POP(a);
				if (!read_word(st, a, &b))
					return false;
				PUSH(b);
				break;
			case DW_OP_dup:
				POP(a);
				PUSH(a);
				PUSH(a);
				break;
			case DW_OP_drop:
				POP(a);
				break;
			case DW_OP_swap:
				POP(a);
				POP(b);
				PUSH(a);
				PUSH(b);
				break;
			case DW_OP_neg:
				POP(a);
				PUSH(-a);
				break;
			case DW_OP_not:
				POP(a);
				PUSH(~a);
				break;
			case DW_OP_plus:
			case DW_OP_minus:
			case DW_OP_and:
			case DW_OP_or:
			case DW_OP_xor:
			case DW_OP_mul:
			case DW_OP_shl:
			case DW_OP_shr:
			case DW_OP_shra:
			case DW_OP_ge:
			case DW_OP_gt:
			case DW_OP_le:
			case DW_OP_lt:
			case DW_OP_eq:
			case DW_OP_ne:
				POP(b);
				POP(a);
				switch (at) {
				case DW_OP_plus:
					a += b;
					break;
				case DW_OP_minus:
					a -= b;
					break;
				case DW_OP_and:
					a &= b;
					break;
				case DW_OP_or:
					a |= b;
					break;
				case DW_OP_xor:
					a ^= b;
					break;
				case DW_OP_mul:
					a *= b;
					break;
				case DW_OP_shl:
					a = b < 64 ? a << b : 0;
					break;
				case DW_OP_shr:
					a = b < 64 ? a >> b : 0;
					break;
				case DW_OP_shra:
					a = (uint64_t)((int64_t)a >> (b < 63 ? b : 63));
					break;
				case DW_OP_ge:
					a = (int64_t)a >= (int64_t)b;
					break;
				case DW_OP_gt:
					a = (int64_t)a > (int64_t)b;
					break;
				case DW_OP_le:
					a = (int64_t)a <= (int64_t)b;
					break;
				case DW_OP_lt:
					a = (int64_t)a < (int64_t)b;
					break;
				case DW_OP_eq:
					a = a == b;
					break;
				case DW_OP_ne:
					a = a != b;
					break;
				}
				PUSH(a);
				break;
			case DW_OP_stack_value:
				*is_value = true;
				break;
			case DW_OP_nop:
				break;
			default:
				return false; /* not a CFI operation we know */
			}
		}
	}
#undef PUSH
#undef POP
	if (!sp)
		return false;
	*val = stk[sp - 1];
	return true;
}

/* --- the walk --------------------------------------------------------------------- */

/*
 * The leaf frame at the first instruction of a function: nothing is pushed
 * yet, so the return address is at the stack pointer and every other
 * register still holds the caller's value. Returns as step() does.
 */
static int step_at_entry(struct uw_state *st)
{
#if defined(__x86_64__)
	uint64_t sp = st->regs[FL_UNWIND_REG_SP], ra;

	if (!(st->valid & (1u << FL_UNWIND_REG_SP)) || !read_word(st, sp, &ra))
		return -1;
	st->regs[FL_UNWIND_REG_SP] = sp + 8;
	st->regs[FL_UNWIND_REG_IP] = ra;
	st->valid |= 1u << FL_UNWIND_REG_IP;
	return ra ? 1 : 0;
#else
	(void)st;
	return -1;
#endif
}

#if defined(__x86_64__)
/* DWARF's x86-64 register numbers (FL_UNWIND_REG_SP is rsp, 7) */
#define DW_RBX FL_UNWIND_REG_BX
#define DW_RBP FL_UNWIND_REG_BP

/*
 * One step by a compiled row (unwind_abi.h), as the in-kernel walker takes
 * it, and by FL_CFA_REG rows, which the walker cannot take. Returns as
 * step() does, or -2 for a rule it leaves to libdw.
 */
static int step_row(struct uw_state *st, const struct fl_uw_row *r)
{
	const uint32_t bp_bit = 1u << DW_RBP, bx_bit = 1u << DW_RBX;
	uint64_t sp = st->regs[FL_UNWIND_REG_SP], bp = st->regs[DW_RBP];
	uint64_t pc = st->regs[FL_UNWIND_REG_IP], cfa, ra, nbp = bp, nbx = st->regs[DW_RBX];
	bool bp_ok = st->valid & bp_bit, bx_ok = st->valid & bx_bit;
	int ra_reg;

	if (!(st->valid & (1u << FL_UNWIND_REG_SP)))
		return -2;
	switch (r->cfa_type) {
	case FL_CFA_RSP:
		cfa = sp + (uint64_t)(int64_t)r->cfa_off;
		break;
	case FL_CFA_RBP:
		if (!bp_ok)
			return -2;
		cfa = bp + (uint64_t)(int64_t)r->cfa_off;
		break;
	case FL_CFA_PLT:
		cfa = sp + (uint64_t)(int64_t)r->cfa_off + ((pc & 15) >= (uint64_t)r->rbp_off ? 8 : 0);
		break;
	case FL_CFA_DEREF_RBP:
		if (!bp_ok || !read_word(st, bp + (uint64_t)(int64_t)r->cfa_off, &cfa))
			return -1;
		break;
	case FL_CFA_OUTERMOST:
		return 0;
	default:
		if (FL_CFA_REG_OF(r->cfa_type) >= 0) {
			int reg = FL_CFA_REG_OF(r->cfa_type);

			/*
			 * Known in the sampled frame; past a row's step only rsp,
			 * rbp, rip and rbx are, and libdw's rule (the same) could
			 * do no better: its file is not read for that.
			 */
			if (!(st->valid & (1u << reg)))
				return -1;
			cfa = st->regs[reg] + (uint64_t)(int64_t)r->cfa_off;
			break;
		}
		/* Signal frames too: libdw's own rules restore every register of the context. */
		return -2;
	}
	if (r->rbp_type == FL_RBP_AT_RBP && !bp_ok)
		return -2;
	ra_reg = FL_RA_REG_OF(r->ra_off);
	if (ra_reg >= 0) {
		/* In a register (__vfork's rdi): known in the sampled frame, where nothing else is pushed. */
		if (!(st->valid & (1u << ra_reg)) || cfa < sp)
			return -1;
		ra = st->regs[ra_reg];
	} else if (!read_word(st, cfa + (uint64_t)(int64_t)r->ra_off, &ra)) {
		return -1;
	}
	/*
	 * A saved rbp that cannot be read leaves it unknown, as libdw does: at
	 * a "pop %rbp; ret" the CFI still says rbp is saved at cfa - 16, now
	 * below the stack pointer and the copy, and only a caller that needs it
	 * fails.
	 */
	if (r->rbp_type == FL_RBP_AT_CFA)
		bp_ok = read_word(st, cfa + (uint64_t)(int64_t)r->rbp_off, &nbp);
	else if (r->rbp_type == FL_RBP_AT_RBP)
		bp_ok = read_word(st, bp + (uint64_t)(int64_t)r->rbp_off, &nbp);
	/* rbx likewise (the walker defers the read until a CFA needs it: the same rbx). */
	if (r->rbx_off == FL_RBX_UNKNOWN)
		bx_ok = false;
	else if (r->rbx_off != FL_RBX_SAME)
		bx_ok = read_word(st, cfa + (uint64_t)(int64_t)r->rbx_off, &nbx);
	/*
	 * The stack must grow towards callers, or we would loop; with the
	 * return address in a register it may stay, but the pc must move.
	 */
	if (cfa < sp || (cfa == sp && (ra_reg < 0 || ra == pc)))
		return -1;
	st->regs[FL_UNWIND_REG_IP] = ra;
	st->regs[FL_UNWIND_REG_SP] = cfa;
	st->regs[DW_RBP] = nbp;
	st->regs[DW_RBX] = nbx;
	/* A row says nothing of the other registers: unknown from here on. */
	st->valid = (1u << FL_UNWIND_REG_IP) | (1u << FL_UNWIND_REG_SP) | (bp_ok ? bp_bit : 0) |
		    (bx_ok ? bx_bit : 0);
	return ra ? 1 : 0;
}
#endif

#if defined(__x86_64__)
/* step_row(), the steps it took counted: -2 for a rule it leaves to libdw. */
static int step_by_row(struct fl_unwinder *u, struct uw_state *st, const struct fl_uw_row *row)
{
	int ret = step_row(st, row);

	if (ret != -2)
		u->stats.row_steps++;
	return ret;
}

/*
 * The row for file offset off of f, indexed by .eh_frame_hdr: from its
 * window's rows, compiled on the first step there and kept. Returns 0,
 * -ENODATA where there is no CFI, -ENOSPC (no room in the budget for the
 * window), or the error of a window that could not be compiled.
 */
static int file_row(struct fl_unwinder *u, struct uw_file *f, uint64_t off,
		    struct fl_uw_row *row)
{
	uint32_t win = (uint32_t)(off >> FL_UW_WIN_SHIFT), i;
	const struct fl_uw_row *r;

	if (off > UINT32_MAX)
		return -ENODATA;
	if (!fl_u32map__get(&f->win_idx, win + 1, &i)) {
		uint64_t lo = (uint64_t)win << FL_UW_WIN_SHIFT, bytes;
		struct fl_cfitable t = {0};
		int err = fl_cfitable_src__range(f->src, lo, lo + FL_UW_WIN_BYTES, &t);

		if (err && err != -ENOENT)
			return err;
		bytes = t.nr * sizeof(*t.rows) + sizeof(*f->wins);
		if (f->nr_wins == f->cap_wins) {
			size_t cap = f->cap_wins ? 2 * f->cap_wins : 8;
			struct fl_cfitable *w = realloc(f->wins, cap * sizeof(*w));

			if (!w) {
				fl_cfitable__fini(&t);
				return -ENOMEM;
			}
			f->wins = w;
			f->cap_wins = cap;
		}
		if (!fl_budget__take(u->opts.budget, bytes)) {
			fl_cfitable__fini(&t);
			return -ENOSPC;
		}
		i = (uint32_t)f->nr_wins;
		if (fl_u32map__put(&f->win_idx, win + 1, i)) {
			fl_budget__give(u->opts.budget, bytes);
			fl_cfitable__fini(&t);
			return -ENOMEM;
		}
		f->wins[f->nr_wins++] = t;
		f->bytes += bytes;
		u->stats.bytes += bytes;
		u->stats.hdr_windows++;
	}
	r = fl_cfitable__find(&f->wins[i], off);
	if (!r || r->cfa_type == FL_CFA_NONE)
		return -ENODATA;
	*row = *r;
	return 0;
}

/*
 * f, indexed by .eh_frame_hdr, met a rule its rows do not hold (a signal
 * frame's, or one they mark unsupported): its CFI read whole for libdw,
 * which takes every such rule, as for a small file.
 */
static void file_hdr_fails(struct fl_unwinder *u, struct uw_file *f, const struct fl_tmap *tm)
{
	/* From the file indexed: its process may be gone, and its path may name another by now. */
	int fd = fcntl(fl_cfitable_src__fd(f->src), F_DUPFD_CLOEXEC, 3);

	file_hdr_free(u, f);
	f->hdr_failed = true;
	u->stats.hdr_whole++;
	fl_cfi_file__fini(&f->cfi);
	if (fd < 0) {
		f->bad = true;
		return;
	}
	file_load_fd(u, f, tm, fd, true);
}
#endif

/* The size of the program-entry code (_start, RTLD_START) that may lack CFI. */
#define ENTRY_CODE 0x80

#if defined(__x86_64__)
/* The frame-pointer rule: the CFA at rbp + 16, the return address and the caller's rbp below it. */
static const struct fl_uw_row fp_row = {
	.cfa_type = FL_CFA_RBP,
	.rbp_type = FL_RBP_AT_CFA,
	.cfa_off = 16,
	.ra_off = -8,
	.rbp_off = -16,
	.rbx_off = FL_RBX_UNKNOWN,
};
#endif

/*
 * A frame in code without CFI (a JIT's, [vsyscall], a gap in a file's CFI)
 * by frame pointers, as the in-kernel walker steps it: rbp points at the
 * saved rbp, the return address above it. There, an rbp of 0 is the
 * outermost frame (_start and thread entries clear it). Returns as step()
 * does.
 */
static int step_fp(struct fl_unwinder *u, struct uw_state *st)
{
#if defined(__x86_64__)
	uint64_t bp = st->regs[DW_RBP];
	int ret;

	if (!(st->valid & (1u << DW_RBP)) || (bp & 7))
		return -1;
	if (!bp)
		return 0;
	ret = step_row(st, &fp_row);
	if (ret < 0)
		return -1;
	u->stats.fp_steps++;
	return ret;
#else
	(void)u;
	(void)st;
	return -1;
#endif
}

/*
 * Whether CFI covers file offset off of the file mapped at tm: 1, 0, or -1
 * when that is not known (a table not built yet, a file unreadable).
 */
static int has_cfi(struct fl_unwinder *u, const struct fl_tmap *tm, uint32_t pid, uint64_t off)
{
	Dwarf_Frame *frame;
	struct uw_file *f;
	uint64_t vaddr;
#if defined(__x86_64__)
	struct fl_uw_row row;
	int rr;

	if (u->row_fn) {
		rr = u->row_fn(u->row_ctx, tm, off, &row);
		if (rr < 0 || rr == 2)
			return rr < 0 ? -1 : 0;
		if (!rr)
			return 1;
	}
#endif
	f = file_get(u, tm, pid, true);
	if (!f || f->bad || !fl_cfi_file__vaddr(&f->cfi, off, &vaddr))
		return -1;
#if defined(__x86_64__)
	if (f->src) {
		rr = file_row(u, f, off, &row);
		return !rr ? 1 : rr == -ENODATA ? 0 : -1;
	}
#endif
	/* (A code section's first byte has the entry's rule in the compiled tables.) */
	frame = fl_cfi_file__frame(&f->cfi, vaddr);
	free(frame);
	return frame || fl_cfi_file__is_code_start(&f->cfi, vaddr);
}

static int step_at(struct fl_unwinder *u, struct uw_state *st, uint64_t lookup, bool exact_pc,
		   bool at_syscall);

/*
 * A step at lookup, in a file or code that has no CFI there. glibc's clone
 * and clone3 end their CFI before the syscall instruction (the child's
 * frame is not what it says), and the parent, sampled in the kernel's fork
 * work, returns just past it: where the sampled frame's exact pc, entered
 * the kernel from, is 2 bytes past the end of CFI, its frame is what the
 * rule before the syscall says (the instruction moves no stack). The
 * child returns there too, on its new stack and with rax 0: its first
 * frame (clone's child calls its function and exits). Elsewhere, frame
 * pointers.
 */
static int step_no_cfi(struct fl_unwinder *u, struct uw_state *st, const struct fl_tmap *tm,
		       uint64_t lookup, bool exact_pc, bool at_syscall)
{
	uint64_t off = lookup - tm->start + tm->pgoff, rax;

	if (at_syscall && exact_pc && st->s->in_kernel && off >= 3 &&
	    has_cfi(u, tm, st->s->pid, off - 2) == 0 && has_cfi(u, tm, st->s->pid, off - 3) == 1) {
		if (reg_of(st, 0, &rax) && !rax)
			return 0;
		return step_at(u, st, lookup - 3, exact_pc, false);
	}
	return step_fp(u, st);
}

/*
 * One step: from the registers of a frame to its caller's, by the rule at
 * lookup (the pc, or the call before a return address); at_syscall: the
 * rule may be the one before a system call's instruction. Returns 1 when
 * there is a caller, 0 at the outermost frame, -1 when the step fails.
 */
static int step_at(struct fl_unwinder *u, struct uw_state *st, uint64_t lookup, bool exact_pc,
		   bool at_syscall)
{
	uint64_t pc = st->regs[FL_UNWIND_REG_IP], vaddr, cfa;
	uint64_t next[FL_UNWIND_NR_REGS];
	uint32_t next_valid = 0;
	const struct fl_tmap *tm;
	struct uw_file *f;
	Dwarf_Frame *frame;
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;
	bool is_value, no_cfi = false, ra_in_reg = false;
	int ra, ret = -1;

	tm = u->opts.find_map(u->opts.ctx, st->s->pid, lookup, st->s->time);
	if (!tm) {
		fl_pr_debug("unwind: pid %d: no mapping at 0x%" PRIx64 "\n", st->s->pid, lookup);
		return -1;
	}
	if (no_file(tm))
		return step_fp(u, st);
#if defined(__x86_64__)
	if (u->row_fn) {
		struct fl_uw_row row;

		int rr = u->row_fn(u->row_ctx, tm, lookup - tm->start + tm->pgoff, &row);

		if (rr < 0)
			return -1;
		no_cfi = rr == 2;
		if (!rr && (ret = step_by_row(u, st, &row)) != -2)
			return ret;
		ret = -1;
	}
#endif
	f = file_get(u, tm, st->s->pid, !no_cfi);
	if (!f || f->bad || !fl_cfi_file__vaddr(&f->cfi, lookup - tm->start + tm->pgoff, &vaddr)) {
		fl_pr_debug("unwind: pid %d: 0x%" PRIx64 " in %s+0x%" PRIx64 ": %s\n", st->s->pid,
			    lookup, tm->path, lookup - tm->start + tm->pgoff,
			    !f || f->bad ? "file unreadable" : "not in a loaded segment");
		return -1;
	}
#if defined(__x86_64__)
	if (f->src && !no_cfi) {
		struct fl_uw_row row;
		int rr = file_row(u, f, lookup - tm->start + tm->pgoff, &row);

		if (!rr && (ret = step_by_row(u, st, &row)) != -2)
			return ret;
		ret = -1;
		if (rr == -ENOSPC)
			return -1;
		if (rr == -ENODATA) {
			no_cfi = true;
		} else {
			file_hdr_fails(u, f, tm);
			if (f->bad)
				return -1;
		}
	}
#endif
	/* (Where the compiled table says there is none, libdw's search of a big file is spared.) */
	frame = no_cfi ? NULL : fl_cfi_file__frame(&f->cfi, vaddr);
	if (!frame) {
		/*
		 * The entry code of ld.so (and of some programs) is assembly without
		 * CFI; a return address a few bytes into it is the thread's first
		 * frame, not a failure.
		 */
		if (f->cfi.entry && vaddr >= f->cfi.entry && vaddr - f->cfi.entry < ENTRY_CODE)
			return 0;
		/*
		 * _init and _fini (crti.o's, the first bytes of .init and .fini) have
		 * no CFI; a process starting or ending is often sampled on their
		 * first instruction, in the page fault that brings it in. (The
		 * compiled tables give the byte that rule for any pc, a return
		 * address's too, and so does this.)
		 */
		if (fl_cfi_file__is_code_start(&f->cfi, vaddr))
			return step_at_entry(st);
		fl_pr_debug("unwind: pid %d: no CFI for %s:0x%" PRIx64 "\n", st->s->pid, tm->path,
			    vaddr);
		return step_no_cfi(u, st, tm, lookup, exact_pc, at_syscall);
	}
	ra = dwarf_frame_info(frame, NULL, NULL, NULL);
	if (ra < 0 || ra >= FL_UNWIND_NR_REGS)
		goto out;
	if (dwarf_frame_cfa(frame, &ops, &nops) || !nops ||
	    !eval(st, ops, nops, 0, false, &cfa, &is_value))
		goto out;
	for (int r = 0; r < FL_UNWIND_NR_REGS; r++) {
		uint64_t v;

		if (dwarf_frame_register(frame, r, ops_mem, &ops, &nops))
			goto out;
		if (!nops) {
			/* same value: ops NULL; undefined: ops == ops_mem */
			if (!ops && (st->valid & (1u << r))) {
				next[r] = st->regs[r];
				next_valid |= 1u << r;
			}
			continue;
		}
		if (r == ra && nops == 1 && ops[0].atom == DW_OP_regx)
			ra_in_reg = true;
		if (!eval(st, ops, nops, cfa, true, &v, &is_value))
			continue; /* unknown in the caller; fatal only if used */
		if (!is_value && !read_word(st, v, &v))
			continue;
		next[r] = v;
		next_valid |= 1u << r;
	}
	/* The caller's stack pointer is the CFA, by the x86-64 and AArch64 conventions. */
	next[FL_UNWIND_REG_SP] = cfa;
	next_valid |= 1u << FL_UNWIND_REG_SP;
	if (!(next_valid & (1u << ra))) {
		/* No return address: the outermost frame (_start, clone), or a read past the copy. */
		ret = st->past_copy ? -1 : 0;
		goto out;
	}
	next[FL_UNWIND_REG_IP] = next[ra];
	next_valid |= 1u << FL_UNWIND_REG_IP;
	/*
	 * The stack must grow towards callers, or we would loop; with the
	 * return address in a register (__vfork's) it may stay, but the pc
	 * must move.
	 */
	if (st->valid & (1u << FL_UNWIND_REG_SP) &&
	    (cfa < st->regs[FL_UNWIND_REG_SP] ||
	     (cfa == st->regs[FL_UNWIND_REG_SP] && (!ra_in_reg || next[ra] == pc))))
		goto out;
	memcpy(st->regs, next, sizeof(next));
	st->valid = next_valid;
	ret = st->regs[FL_UNWIND_REG_IP] ? 1 : 0;
out:
	free(frame);
	return ret;
}

static int step(struct fl_unwinder *u, struct uw_state *st, bool exact_pc)
{
	uint64_t pc = st->regs[FL_UNWIND_REG_IP];

	return step_at(u, st, exact_pc ? pc : pc - 1, exact_pc, true);
}

size_t fl_unwinder__unwind(struct fl_unwinder *u, const struct fl_unwind_sample *s, uint64_t *ips,
			   size_t max, enum fl_unwind_outcome *outcome)
{
	struct uw_state st = {.s = s, .valid = (1u << FL_UNWIND_NR_REGS) - 1};
	enum fl_unwind_outcome out = FL_UNWIND_FAILED;
	size_t n = 0;

	if (!max) {
		*outcome = FL_UNWIND_TRUNCATED;
		return 0;
	}
	memcpy(st.regs, s->regs, sizeof(st.regs));
	if (s->valid)
		st.valid = s->valid;
	st.sp0 = s->regs[FL_UNWIND_REG_SP];
	ips[n++] = st.regs[FL_UNWIND_REG_IP];
	if (PERF_REGS_MASK) {
		for (;;) {
			int r;

			if (n == max) {
				out = FL_UNWIND_TRUNCATED;
				break;
			}
			r = step(u, &st, n == 1 && !s->ra);
			if (r == 0) {
				out = FL_UNWIND_COMPLETE;
				break;
			}
			if (r < 0) {
				out = st.past_copy ? FL_UNWIND_TRUNCATED : FL_UNWIND_FAILED;
				break;
			}
			ips[n++] = st.regs[FL_UNWIND_REG_IP];
		}
	}
	u->stats.outcomes[out]++;
	*outcome = out;
	return n;
}

void fl_unwinder__set_rows(struct fl_unwinder *u, fl_unwind_row_fn fn, void *ctx)
{
	u->row_fn = fn;
	u->row_ctx = ctx;
}

void fl_unwinder__stats(const struct fl_unwinder *u, struct fl_unwind_stats *st)
{
	*st = u->stats;
}

void fl_unwinder__trim(struct fl_unwinder *u)
{
	size_t freed = 0;

	for (size_t i = 0; i < u->cap_files; i++) {
		struct uw_file *f = u->files[i];

		if (f && (f->over_budget || f->used + 1 < u->gen)) {
			file_free(u, f);
			u->files[i] = NULL;
			freed++;
		}
	}
	u->gen++;
	if (!freed)
		return;
	u->nr_files -= freed;
	/* The survivors are placed again; at the same capacity only memory can fail. */
	if (files_rehash(u, u->cap_files))
		fl_pr_debug("unwind: out of memory rebuilding the file table\n");
}
