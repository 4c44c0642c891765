// SPDX-License-Identifier: GPL-2.0-or-later
/* The DWARF unwinder: walks a copy of a user stack with the CFI of the mapped ELF files. */
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/unwinding/unwind.h"
#include "symbols/elfimage.h"
#include "symbols/elfsize.h"
#include "flamed/common/budget.h"
#include "common/hash.h"
#include "files/mapped_file.h"

/*
 * Per ELF file (by device and inode, or the vdso): the Elf handle, its
 * .eh_frame CFI and, lazily, its .debug_frame CFI, and its PT_LOAD segments
 * to turn a file offset into the address the CFI speaks of. libdw caches
 * what it parses inside each Dwarf_CFI, so a file's FDE table is built once
 * however many processes and samples use it.
 *
 * Files are read, never mapped: the owner of a library may truncate it
 * while flamed holds it, and a mapping of it would then raise SIGBUS in
 * flamed. What unwinding needs (the headers, .eh_frame_hdr, .eh_frame,
 * .debug_frame) is read when the file is opened, and the fd let go: a
 * machine maps many files.
 */
struct uw_seg {
	uint64_t offset, vaddr, filesz;
};

/* Code sections remembered per file; binaries have about five. */
#define UW_MAX_CODE_SECTIONS 16
/*
 * A CFI section larger than this is not read (nor is a file without section
 * headers larger than this): the biggest binaries have some tens of MB of
 * .eh_frame, and what a user's file makes flamed read into memory is bounded.
 */
#define UW_MAX_CFI_BYTES ((uint64_t)256 << 20)

struct uw_file {
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	bool vdso;
	bool bad; /* could not be opened or read: every pc in it fails */
	bool over_budget; /* bad for want of room in the budget: tried again after a trim */
	uint64_t bytes;	  /* charged to the budget */
	uint64_t used;	  /* the unwinder's generation when a sample last went through it */
	int fd;
	Elf *elf;
	Dwarf_CFI *eh;
	/* .debug_frame alone, in an ELF image of its own (debug_frame_image()), or empty. */
	struct fl_elfimage dbg_image;
	Dwarf_CFI *dbg; /* borrowed from dbg_image's Dwarf */
	bool dbg_tried;
	struct uw_seg *segs;
	size_t nr_segs;
	uint64_t entry; /* e_entry: where the program (or ld.so) starts */
	/* Where the code sections start (.init, .plt, .text, .fini...): function entries. */
	uint64_t code_starts[UW_MAX_CODE_SECTIONS];
	size_t nr_code_starts;
};

struct fl_unwinder {
	struct fl_unwind_opts opts;
	struct uw_file **files; /* open addressing by (dev, ino) */
	size_t cap_files, nr_files;
	struct uw_file *vdso;
	struct fl_unwind_stats stats;
	uint64_t gen; /* fl_unwinder__trim() calls */
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

static void file_free(struct fl_unwinder *u, struct uw_file *f)
{
	if (!f)
		return;
	fl_budget__give(u->opts.budget, f->bytes);
	u->stats.bytes -= f->bytes;
	if (f->eh)
		dwarf_cfi_end(f->eh);
	fl_elfimage__fini(&f->dbg_image);
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f->segs);
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

/* The PT_LOAD segments and the code sections of an opened Elf. */
static int file_setup(struct uw_file *f)
{
	GElf_Ehdr eh;
	size_t n;

	if (elf_kind(f->elf) != ELF_K_ELF || elf_getphdrnum(f->elf, &n) < 0 ||
	    !gelf_getehdr(f->elf, &eh))
		return -EINVAL;
	f->entry = eh.e_entry;
	f->segs = calloc(n ? n : 1, sizeof(*f->segs));
	if (!f->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->segs[f->nr_segs++] = (struct uw_seg){
			.offset = ph.p_offset, .vaddr = ph.p_vaddr, .filesz = ph.p_filesz};
	}
	for (Elf_Scn *scn = NULL;
	     (scn = elf_nextscn(f->elf, scn)) && f->nr_code_starts < UW_MAX_CODE_SECTIONS;) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
		    (sh.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) == (SHF_ALLOC | SHF_EXECINSTR) &&
		    sh.sh_size)
			f->code_starts[f->nr_code_starts++] = sh.sh_addr;
	}
	return 0;
}

/* The section called name with data in the file, or NULL; its header in *sh. */
static Elf_Scn *section_by_name(Elf *elf, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		const char *n;

		if (!gelf_getshdr(scn, sh) || sh->sh_type == SHT_NOBITS || !sh->sh_size)
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/*
 * Whether dwarf_getcfi_elf() may read the file's .eh_frame and
 * .eh_frame_hdr: each within UW_MAX_CFI_BYTES. Without an .eh_frame
 * section libdw finds them through PT_GNU_EH_FRAME, somewhere in the file:
 * then the whole file must be within it.
 */
static bool eh_frame_size_ok(Elf *elf, uint64_t file_size)
{
	GElf_Shdr sh;

	if (!section_by_name(elf, ".eh_frame", &sh))
		return file_size <= UW_MAX_CFI_BYTES;
	if (sh.sh_size > UW_MAX_CFI_BYTES)
		return false;
	return !section_by_name(elf, ".eh_frame_hdr", &sh) || sh.sh_size <= UW_MAX_CFI_BYTES;
}

static bool read_full(int fd, void *buf, size_t size, uint64_t off)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = pread(fd, (char *)buf + done, size - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false; /* an error, or the file is shorter than its headers say */
		done += (size_t)n;
	}
	return true;
}

/*
 * .debug_frame is read through a Dwarf, and dwarf_begin_elf() would read
 * every debug section of the file (.debug_info may be a GB): its bytes go
 * into an image of their own (elfimage.h), given to libdw if .eh_frame
 * ever falls short. Files of the host's class and byte order only, as the
 * registers are.
 */
static void debug_frame_image(struct uw_file *f, int fd)
{
	GElf_Ehdr eh;
	GElf_Shdr sh;
	char *data;

	if (!gelf_getehdr(f->elf, &eh) || !section_by_name(f->elf, ".debug_frame", &sh) ||
	    sh.sh_size > UW_MAX_CFI_BYTES)
		return;
	if (fl_elfimage__one_section(&f->dbg_image, &eh, ".debug_frame", (size_t)sh.sh_size,
				     sh.sh_flags, sh.sh_addralign, &data) == 0 &&
	    !read_full(fd, data, (size_t)sh.sh_size, sh.sh_offset))
		fl_elfimage__fini(&f->dbg_image);
}

static bool is_code_start(const struct uw_file *f, uint64_t vaddr)
{
	for (size_t i = 0; i < f->nr_code_starts; i++)
		if (f->code_starts[i] == vaddr)
			return true;
	return false;
}

/*
 * What reading f's CFI holds, known from its headers before it is read:
 * .eh_frame and .eh_frame_hdr (the whole file when libdw must find them
 * through PT_GNU_EH_FRAME), and the copy of .debug_frame, plus what libdw
 * inflates it to when it is compressed.
 */
static uint64_t cfi_bytes(Elf *elf, int fd, uint64_t file_size)
{
	uint64_t n;
	GElf_Shdr sh;

	n = section_by_name(elf, ".eh_frame", &sh) ? sh.sh_size : file_size;
	if (section_by_name(elf, ".eh_frame_hdr", &sh))
		n = fl_elfsize__add(n, sh.sh_size);
	if (section_by_name(elf, ".debug_frame", &sh)) {
		n = fl_elfsize__add(n, sh.sh_size);
		if (sh.sh_flags & SHF_COMPRESSED)
			n = fl_elfsize__add(n, fl_elfsize__section(elf, fd, ".debug_frame", &sh));
	}
	return n;
}

/*
 * Charges f's CFI to the budget before it is read: false, with f bad
 * until a trim and f->bytes the room it wanted, when it does not fit.
 */
static bool file_charge(struct fl_unwinder *u, struct uw_file *f, uint64_t file_size)
{
	f->bytes = cfi_bytes(f->elf, f->fd, file_size);
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

static struct uw_file *file_open(struct fl_unwinder *u, const struct fl_tmap *tm, uint32_t pid)
{
	struct uw_file *f = calloc(1, sizeof(*f));
	struct stat st;

	if (!f)
		return NULL;
	f->dev_major = tm->dev_major;
	f->dev_minor = tm->dev_minor;
	f->ino = tm->ino;
	/* The mapped file only; deleted or replaced since, through the process while it lives. */
	f->fd = fl_open_mapped_file(tm, pid);
	if (f->fd < 0) {
		fl_pr_debug("unwind: %s: %s\n", tm->path,
			    f->fd == -ESTALE ? "not the mapped file" : strerror(-f->fd));
		f->fd = -1;
		f->bad = true;
		return f;
	}
	/* pread, not a mapping: ELF_C_READ reads what is asked for, when it is. */
	f->elf = fl_elfsize__check_fd(f->fd) ? NULL : elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->elf || fstat(f->fd, &st) || file_setup(f)) {
		fl_pr_debug("unwind: %s: not a usable ELF file\n", tm->path);
		f->bad = true;
	} else if (!eh_frame_size_ok(f->elf, (uint64_t)st.st_size)) {
		fl_pr_debug("unwind: %s: CFI larger than %llu MiB, not read\n", tm->path,
			    (unsigned long long)(UW_MAX_CFI_BYTES >> 20));
		f->bad = true;
	} else if (!file_charge(u, f, (uint64_t)st.st_size)) {
		fl_pr_debug("unwind: %s: CFI of %llu bytes not read: no room in the budget\n",
			    tm->path, (unsigned long long)f->bytes);
		f->bytes = 0;
	} else {
		/* Both read here, whole: .eh_frame and .eh_frame_hdr now, .debug_frame aside. */
		f->eh = dwarf_getcfi_elf(f->elf);
		debug_frame_image(f, f->fd);
	}
	/* Nothing more is read from the file: the descriptor goes (a machine maps many files). */
	if (f->elf)
		elf_cntl(f->elf, ELF_C_FDDONE);
	close(f->fd);
	f->fd = -1;
	return f;
}

/* The vdso is the same image in every process: its CFI is read from our own copy. */
static struct uw_file *vdso_file(struct fl_unwinder *u)
{
	const ElfW(Ehdr) * eh;

	if (u->vdso)
		return u->vdso;
	u->vdso = calloc(1, sizeof(*u->vdso));
	if (!u->vdso)
		return NULL;
	u->vdso->fd = -1;
	u->vdso->vdso = true;
	eh = (const ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) {
		u->vdso->bad = true;
		return u->vdso;
	}
	/* Its size: the end of its section headers, which come last in the image. */
	u->vdso->elf = elf_memory((char *)eh, eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize);
	if (!u->vdso->elf || file_setup(u->vdso))
		u->vdso->bad = true;
	else
		u->vdso->eh = dwarf_getcfi_elf(u->vdso->elf);
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

static struct uw_file *file_get(struct fl_unwinder *u, const struct fl_tmap *tm, uint32_t pid)
{
	struct uw_file *f;
	size_t j;

	if (!strcmp(tm->path, "[vdso]"))
		return vdso_file(u);
	if (!tm->path[0] || tm->path[0] == '[' || !tm->ino)
		return NULL; /* anonymous memory (JIT), [vsyscall]... */
	if ((u->nr_files + 1) * 2 > u->cap_files && files_grow(u))
		return NULL;
	j = file_hash(tm->dev_major, tm->dev_minor, tm->ino) & (u->cap_files - 1);
	for (; (f = u->files[j]); j = (j + 1) & (u->cap_files - 1))
		if (f->ino == tm->ino && f->dev_major == tm->dev_major &&
		    f->dev_minor == tm->dev_minor) {
			f->used = u->gen;
			return f;
		}
	f = file_open(u, tm, pid);
	if (!f)
		return NULL;
	f->used = u->gen;
	u->files[j] = f;
	u->nr_files++;
	u->stats.files++;
	return f;
}

/* The address in the file's own terms (what its CFI and symbols use) of a file offset. */
static bool file_vaddr(const struct uw_file *f, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < f->nr_segs; i++)
		if (off >= f->segs[i].offset && off - f->segs[i].offset < f->segs[i].filesz) {
			*vaddr = off - f->segs[i].offset + f->segs[i].vaddr;
			return true;
		}
	return false;
}

/* The frame state at vaddr: .eh_frame first, then .debug_frame. NULL if neither covers it. */
static Dwarf_Frame *file_frame(struct uw_file *f, uint64_t vaddr)
{
	Dwarf_Frame *frame = NULL;

	if (f->eh && dwarf_cfi_addrframe(f->eh, vaddr, &frame) == 0)
		return frame;
	if (!f->dbg_tried && f->dbg_image.image) {
		Dwarf *dw = fl_elfimage__dwarf(&f->dbg_image);

		f->dbg_tried = true;
		if (dw)
			f->dbg = dwarf_getcfi(dw);
	}
	if (f->dbg && dwarf_cfi_addrframe(f->dbg, vaddr, &frame) == 0)
		return frame;
	return NULL;
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

/* The size of the program-entry code (_start, RTLD_START) that may lack CFI. */
#define ENTRY_CODE 0x80

/*
 * One step: from the registers of a frame to its caller's. Returns 1 when
 * there is a caller, 0 at the outermost frame, -1 when the step fails.
 */
static int step(struct fl_unwinder *u, struct uw_state *st, bool exact_pc)
{
	uint64_t pc = st->regs[FL_UNWIND_REG_IP], lookup = exact_pc ? pc : pc - 1, vaddr, cfa;
	uint64_t next[FL_UNWIND_NR_REGS];
	uint32_t next_valid = 0;
	const struct fl_tmap *tm;
	struct uw_file *f;
	Dwarf_Frame *frame;
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;
	bool is_value;
	int ra, ret = -1;

	tm = u->opts.find_map(u->opts.ctx, st->s->pid, lookup, st->s->time);
	if (!tm) {
		fl_pr_debug("unwind: pid %d: no mapping at 0x%" PRIx64 "\n", st->s->pid, lookup);
		return -1;
	}
	f = file_get(u, tm, st->s->pid);
	if (!f || f->bad || !file_vaddr(f, lookup - tm->start + tm->pgoff, &vaddr)) {
		fl_pr_debug("unwind: pid %d: 0x%" PRIx64 " in %s+0x%" PRIx64 ": %s\n", st->s->pid,
			    lookup, tm->path, lookup - tm->start + tm->pgoff,
			    !f || f->bad ? "file unreadable" : "not in a loaded segment");
		return -1;
	}
	frame = file_frame(f, vaddr);
	if (!frame) {
		/*
		 * The entry code of ld.so (and of some programs) is assembly without
		 * CFI; a return address a few bytes into it is the thread's first
		 * frame, not a failure.
		 */
		if (f->entry && vaddr >= f->entry && vaddr - f->entry < ENTRY_CODE)
			return 0;
		/*
		 * _init and _fini (crti.o's, the first bytes of .init and .fini) have
		 * no CFI; a process starting or ending is often sampled on their
		 * first instruction, in the page fault that brings it in.
		 */
		if (exact_pc && is_code_start(f, vaddr))
			return step_at_entry(st);
		fl_pr_debug("unwind: pid %d: no CFI for %s:0x%" PRIx64 "\n", st->s->pid, tm->path,
			    vaddr);
		return -1;
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
	if (cfa <= st->regs[FL_UNWIND_REG_SP] && st->valid & (1u << FL_UNWIND_REG_SP))
		goto out; /* the stack must grow towards callers, or we would loop */
	memcpy(st->regs, next, sizeof(next));
	st->valid = next_valid;
	ret = st->regs[FL_UNWIND_REG_IP] ? 1 : 0;
out:
	free(frame);
	return ret;
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
	st.sp0 = s->regs[FL_UNWIND_REG_SP];
	ips[n++] = st.regs[FL_UNWIND_REG_IP];
	if (PERF_REGS_MASK) {
		for (;;) {
			int r;

			if (n == max) {
				out = FL_UNWIND_TRUNCATED;
				break;
			}
			r = step(u, &st, n == 1);
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
