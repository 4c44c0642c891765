// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the DWARF unwinder on real samples of real fixture processes. */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>
#include <gelf.h>
#include <libelf.h>

#include "flamed/common/budget.h"
#include "flamed/symbols/elfsyms.h"
#include "flamed/unwinding/cfitable.h"
#include "flamed/unwinding/unwind.h"
#include "stack_capture.h"

#if !defined(FIXTURE_DIR) || !defined(FIXTURE_SRC_DIR)
#error "FIXTURE_DIR and FIXTURE_SRC_DIR must name the fixtures directories"
#endif

/* Symbol tables of the fixture's files, opened once each. */
struct names {
	char paths[8][PATH_MAX];
	struct fl_elfsyms *syms[8];
	size_t n;
};

/* The name of a user address in one of the fixture's files (its binary or its libraries), else "?". */
static const char *name_of(struct capture *c, struct names *nm, uint64_t addr)
{
	const struct fl_tmap *m = exec_maps_find(&c->exec, 0, addr, 0);
	const struct fl_elfsym *s;
	struct fl_elfsyms *syms = NULL;
	uint64_t vaddr;

	if (!m || !strstr(m->path, "/tests/fixtures/"))
		return "?";
	for (size_t i = 0; i < nm->n; i++)
		if (!strcmp(nm->paths[i], m->path))
			syms = nm->syms[i];
	if (!syms && nm->n < 8) {
		if (fl_elfsyms__open(m->path, &syms))
			return "?";
		snprintf(nm->paths[nm->n], PATH_MAX, "%s", m->path);
		nm->syms[nm->n++] = syms;
	}
	if (!syms || fl_elfsyms__offset_to_vaddr(syms, addr - m->start + m->pgoff, &vaddr))
		return "?";
	s = fl_elfsyms__find(syms, vaddr);
	return s ? s->name : "?";
}

/* The stats of share_with_chain()'s unwinder that indexes every file by .eh_frame_hdr. */
static struct fl_unwind_stats hdr_stats;

/*
 * Unwinds every sample of prog (run with arg, unless NULL) and returns the
 * share (0-100) of those whose frames, leaf first, contain want[] (leaf
 * first) in order, one after the other.
 */
static double share_with_chain_arg(const char *prog, const char *arg, const char *const *want,
				   size_t nr_want, double *complete)
{
	struct capture *c = capture_arg(prog, arg, 1.5);
	struct fl_unwind_opts o = {.sz = sizeof(o), .find_map = exec_maps_find};
	struct fl_unwinder *u = NULL, *uh = NULL;
	struct fl_unwind_stats st;
	struct names nm = {.n = 0};
	size_t hits = 0, done = 0;

	if (!c)
		skip();
	o.ctx = &c->exec;
	assert_int_equal(fl_unwinder__new(&o, &u), 0);
	/* And every file indexed by its .eh_frame_hdr, as big ones are: the same frames. */
	o.hdr_min_code = 1;
	assert_int_equal(fl_unwinder__new(&o, &uh), 0);
	assert_true(c->nr_samples > 100);
	for (size_t i = 0; i < c->nr_samples; i++) {
		struct fl_unwind_sample s = {.pid = (uint32_t)c->pid,
					     .stack = c->samples[i].stack,
					     .stack_size = c->samples[i].size};
		enum fl_unwind_outcome out, out_h;
		uint64_t ips[128], ips_h[128];
		size_t n, n_h, k = 0;

		memcpy(s.regs, c->samples[i].regs, sizeof(s.regs));
		n = fl_unwinder__unwind(u, &s, ips, 128, &out);
		n_h = fl_unwinder__unwind(uh, &s, ips_h, 128, &out_h);
		assert_int_equal(n_h, n);
		assert_int_equal(out_h, out);
		assert_memory_equal(ips_h, ips, n * sizeof(*ips));
		done += out == FL_UNWIND_COMPLETE;
		for (size_t j = 0; j < n && k < nr_want; j++) {
			const char *name = name_of(c, &nm, j ? ips[j] - 1 : ips[j]);

			if (!strcmp(name, want[k]))
				k++;
			else if (k)
				break;
		}
		hits += k == nr_want;
	}
	*complete = 100.0 * (double)done / (double)c->nr_samples;
	print_message("%s: %zu samples, %.1f%% with the chain, %.1f%% unwound to the end\n", prog,
		      c->nr_samples, 100.0 * (double)hits / (double)c->nr_samples, *complete);
	fl_unwinder__stats(uh, &st);
	print_message("%s: the same by .eh_frame_hdr: %" PRIu64 " files (%" PRIu64
		      " read whole after all), %" PRIu64 " windows, %" PRIu64 " row steps, %" PRIu64
		      " bytes\n",
		      prog, st.hdr_files, st.hdr_whole, st.hdr_windows, st.row_steps, st.bytes);
	hdr_stats = st;
	assert_true(st.hdr_files > 0 && st.hdr_windows > 0 && st.row_steps > 0);
	fl_unwinder__free(u);
	fl_unwinder__free(uh);
	for (size_t i = 0; i < nm.n; i++)
		fl_elfsyms__free(nm.syms[i]);
	{
		double share = 100.0 * (double)hits / (double)c->nr_samples;

		capture_free(c);
		return share;
	}
}

static double share_with_chain(const char *prog, const char *const *want, size_t nr_want,
			       double *complete)
{
	return share_with_chain_arg(prog, NULL, want, nr_want, complete);
}

/* The chains fixture has frame pointers, but its CFI must give the same chains. */
static void test_chains(void **state)
{
	static const char *const a[] = {"burn_cpu", "chain_a3", "chain_a2", "chain_a1", "main"};
	static const char *const b[] = {"burn_cpu", "chain_b3", "chain_b2", "chain_b1", "main"};
	double complete, sa, sb;

	(void)state;
	sa = share_with_chain("chains", a, 5, &complete);
	sb = share_with_chain("chains", b, 5, &complete);
	/* Nearly every sample is in one of the two chains. */
	assert_true(sa + sb >= 95);
	assert_true(sa > sb);
	assert_true(complete >= 95);
}

/* Built without frame pointers: only CFI finds the callers. */
static void test_no_frame_pointers(void **state)
{
	static const char *const chain[] = {"nofp_burn", "nofp_8", "nofp_7", "nofp_6", "nofp_5",
					    "nofp_4",	 "nofp_3", "nofp_2", "nofp_1", "main"};
	double complete;

	(void)state;
	assert_true(share_with_chain("nofp_chain", chain, 10, &complete) >= 95);
	assert_true(complete >= 95);
}

/*
 * Built with -fno-asynchronous-unwind-tables: its functions' CFI is in
 * .debug_frame only, which the unwinder reads (not maps) into an image of
 * its own.
 */
static void test_debug_frame_only(void **state)
{
	static const char *const chain[] = {"nofp_burn", "nofp_8", "nofp_7", "nofp_6", "nofp_5",
					    "nofp_4",	 "nofp_3", "nofp_2", "nofp_1", "main"};
	double complete;

	(void)state;
	assert_true(share_with_chain("nofp_dbgframe", chain, 10, &complete) >= 95);
	assert_true(complete >= 95);
}

/* A callback called from inside a shared library built without frame pointers. */
static void test_through_library(void **state)
{
	static const char *const chain[] = {"nofp_burn",      "nofp_cb",	  "nofp_lib_inner",
					    "nofp_lib_outer", "nofp_lib_iterate", "main"};
	double complete;

	(void)state;
	assert_true(share_with_chain("nofp_callback", chain, 6, &complete) >= 95);
	assert_true(complete >= 95);
}

/*
 * A signal handler interrupting code that realigns its stack. A signal
 * frame's rule is one the rows do not hold: libc (__restore_rt), indexed
 * by its .eh_frame_hdr in share_with_chain()'s second unwinder, has its
 * CFI read whole at the first, and the frames are the same.
 */
static void test_signal_frames(void **state)
{
	static const char *const chain[] = {"nofp_burn", "nofp_sig_handler_work", "nofp_on_prof"};
	double complete;

	(void)state;
	assert_true(share_with_chain("nofp_sigdrap", chain, 3, &complete) >= 5);
	assert_true(hdr_stats.hdr_whole >= 1);
}

/*
 * A caller whose CFA is in rbx (as ld.so's lazy binding has it), two frames
 * above the samples: its callee saved rbx and cleared it. The unwinder that
 * steps every frame by rows (share_with_chain()'s second) follows rbx
 * through them, and finds what libdw finds.
 */
static void test_rbx_cfa(void **state)
{
	static const char *const chain[] = {"nofp_burn",    "nofp_probe_keep", "nofp_probe_call",
					    "nofp_probe_2", "nofp_probe_1",	   "main"};
	double complete;

	(void)state;
	assert_true(share_with_chain_arg("nofp_probe", "call", chain, 6, &complete) >= 95);
	assert_true(complete >= 95);
}

/*
 * A sample recorded once and checked in (tests/fixtures/data/nofp_chain.sample:
 * the registers, the stack copy and the mapping of the text segment) with
 * the binary it was taken of (nofp_chain.elf, debug info stripped): the
 * unwinder must find the same frames on any machine, whatever the compiler.
 */
struct recorded {
	struct exec_maps *exec; /* the one mapping, of the text segment */
	struct fl_unwinder *u;
	struct fl_elfsyms *syms;
	struct fl_unwind_sample s;
	unsigned char *stack;
	uint64_t start, pgoff;
};

/* Loads the sample and an unwinder charging budget (NULL: none), with hdr_min_code. */
static void recorded_load_hdr(struct recorded *r, struct fl_budget *budget, uint64_t hdr_min_code)
{
	struct fl_unwind_opts o = {.sz = sizeof(o),
				   .find_map = exec_maps_find,
				   .budget = budget,
				   .hdr_min_code = hdr_min_code};
	unsigned long long start, end, pgoff;
	char line[256], elf[PATH_MAX];
	struct stat st;
	size_t size;
	FILE *f;

	memset(r, 0, sizeof(*r));
	r->exec = calloc(1, sizeof(*r->exec));
	assert_non_null(r->exec);
	o.ctx = r->exec;
	r->s.pid = 1;
	snprintf(elf, sizeof(elf), "%s/data/nofp_chain.elf", FIXTURE_SRC_DIR);
	assert_int_equal(stat(elf, &st), 0);
	f = fopen(FIXTURE_SRC_DIR "/data/nofp_chain.sample", "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f)); /* comment */
	assert_int_equal(fscanf(f, "map %llx %llx %llx\n", &start, &end, &pgoff), 3);
	while (fgets(line, sizeof(line), f) && strncmp(line, "regs", 4))
		; /* segment lines: the same mapping */
	{
		char *p = line + 4;

		for (int i = 0; i < FL_UNWIND_NR_REGS; i++)
			r->s.regs[i] = strtoull(p, &p, 16);
	}
	assert_int_equal(fscanf(f, "stack %zu\n", &size), 1);
	/* 8 bytes of room below the copy, for a test to push a return address. */
	r->stack = malloc(size + 8);
	assert_non_null(r->stack);
	for (size_t i = 0; i < size; i++) {
		unsigned b;

		assert_int_equal(fscanf(f, " %2x", &b), 1);
		r->stack[8 + i] = (unsigned char)b;
	}
	fclose(f);
	r->s.stack = r->stack + 8;
	r->s.stack_size = size;
	r->start = start;
	r->pgoff = pgoff;
	/* The checked-in file stands for the mapped one: its own device and inode. */
	snprintf(r->exec->paths[0], sizeof(r->exec->paths[0]), "%s", elf);
	r->exec->maps[0] = (struct fl_tmap){.start = start,
					    .end = end,
					    .pgoff = pgoff,
					    .dev_major = major(st.st_dev),
					    .dev_minor = minor(st.st_dev),
					    .ino = st.st_ino,
					    .path = r->exec->paths[0]};
	r->exec->n = 1;
	assert_int_equal(fl_unwinder__new(&o, &r->u), 0);
	assert_int_equal(fl_elfsyms__open(elf, &r->syms), 0);
}

/* Loads the sample and an unwinder charging budget (NULL: none); no file is big enough for .eh_frame_hdr. */
static void recorded_load(struct recorded *r, struct fl_budget *budget)
{
	recorded_load_hdr(r, budget, UINT64_MAX);
}

static void recorded_free(struct recorded *r)
{
	fl_elfsyms__free(r->syms);
	fl_unwinder__free(r->u);
	free(r->stack);
	free(r->exec);
}

/* The name of the function at ips[i] (a return address unless i is the leaf). */
static const char *recorded_name(const struct recorded *r, const uint64_t *ips, size_t i, bool leaf)
{
	const struct fl_elfsym *sym;
	uint64_t vaddr;

	assert_int_equal(
		fl_elfsyms__offset_to_vaddr(
			r->syms, (leaf ? ips[i] : ips[i] - 1) - r->start + r->pgoff, &vaddr),
		0);
	sym = fl_elfsyms__find(r->syms, vaddr);
	assert_non_null(sym);
	return sym->name;
}

static const char *const recorded_chain[] = {"nofp_burn", "nofp_8", "nofp_7", "nofp_6", "nofp_5",
					     "nofp_4",	  "nofp_3", "nofp_2", "nofp_1", "main"};

static void test_recorded_sample(void **state)
{
	struct recorded r;
	enum fl_unwind_outcome out;
	uint64_t ips[64];
	size_t n;

	(void)state;
	recorded_load(&r, NULL);
	n = fl_unwinder__unwind(r.u, &r.s, ips, 64, &out);
	/* The chain, then main's return address into libc, which this fixture does not map. */
	assert_int_equal(n, 11);
	assert_int_equal(out, FL_UNWIND_FAILED);
	for (size_t i = 0; i < 10; i++)
		assert_string_equal(recorded_name(&r, ips, i, i == 0), recorded_chain[i]);
	recorded_free(&r);
}

/*
 * r's sample as if nofp_burn had just called the function at file offset
 * off, which pushed nothing yet: the return address (returned) on top of
 * the stack, the pc at off, rbp set to bp.
 */
static uint64_t sample_called(struct recorded *r, uint64_t off, uint64_t bp)
{
	uint64_t ra = r->s.regs[FL_UNWIND_REG_IP] + 1;

	memcpy(r->stack, &ra, 8);
	r->s.stack = r->stack;
	r->s.stack_size += 8;
	r->s.regs[FL_UNWIND_REG_SP] -= 8;
	r->s.regs[FL_UNWIND_REG_IP] = off - r->pgoff + r->start;
	r->s.regs[FL_UNWIND_REG_BP] = bp;
	return ra;
}

/*
 * r's sample as if nofp_burn had just called _fini: the leaf is .fini's
 * first byte, the return address (returned) on top of the stack.
 */
static uint64_t sample_at_fini(struct recorded *r)
{
	uint64_t fini = 0;
	size_t nsec;
	Elf *elf;
	int fd;

	fd = open(r->exec->paths[0], O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &nsec), 0);
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, nsec, sh.sh_name);
		if (name && !strcmp(name, ".fini"))
			fini = sh.sh_addr;
	}
	elf_end(elf);
	close(fd);
	assert_true(fini != 0);

	return sample_called(r, fini, r->s.regs[FL_UNWIND_REG_BP]); /* text segment: vaddr == offset */
}

/*
 * _fini has no CFI (crti.o is assembly). A sample at its first byte (as
 * if nofp_burn had just called it): the unwinder must step from it into
 * the chain.
 */
static void test_leaf_at_code_start(void **state)
{
	struct recorded r;
	enum fl_unwind_outcome out;
	uint64_t ips[64], ra;
	size_t n;

	(void)state;
	recorded_load(&r, NULL);
	ra = sample_at_fini(&r);
	n = fl_unwinder__unwind(r.u, &r.s, ips, 64, &out);
	assert_int_equal(n, 12);
	assert_int_equal(out, FL_UNWIND_FAILED); /* main's caller, in libc, is not mapped */
	assert_int_equal(ips[1], ra);
	for (size_t i = 0; i < 10; i++)
		assert_string_equal(recorded_name(&r, ips, i + 1, false), recorded_chain[i]);
	recorded_free(&r);
}

/* Compiled rows that say "no CFI here" (2), or "none compiled: the file's CFI" (1), everywhere. */
static int rows_none(void *ctx, const struct fl_tmap *m, uint64_t off, struct fl_uw_row *row)
{
	(void)m;
	(void)off;
	(void)row;
	return *(const int *)ctx;
}

/*
 * Where the compiled tables say a pc has no CFI, the file's headers tell
 * whether it is code that needs none (_fini here): its CFI (MBs for a big
 * library) is not read for that. It is once a step needs it.
 */
static void test_no_cfi_reads_headers_only(void **state)
{
	struct fl_budget budget = {.max = 0};
	struct fl_unwind_stats st;
	enum fl_unwind_outcome out;
	struct recorded r;
	uint64_t ips[64], ra;
	int says = 2;

	(void)state;
	recorded_load(&r, &budget);
	ra = sample_at_fini(&r);
	fl_unwinder__set_rows(r.u, rows_none, &says);
	/*
	 * _fini's first byte stepped from the headers; then no CFI for
	 * nofp_burn either, which frame pointers step: its rbp is 0, the
	 * outermost frame as far as they tell.
	 */
	assert_int_equal(r.s.regs[FL_UNWIND_REG_BP], 0);
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 2);
	assert_int_equal(out, FL_UNWIND_COMPLETE);
	assert_int_equal(ips[1], ra);
	fl_unwinder__stats(r.u, &st);
	assert_int_equal(st.files, 1);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(budget.used, 0);
	/* Rows that defer to the file's CFI: read now, and the whole chain found. */
	says = 1;
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 12);
	fl_unwinder__stats(r.u, &st);
	assert_int_equal(st.files, 1);
	assert_true(st.bytes > 0);
	assert_int_equal(budget.used, st.bytes);
	for (size_t i = 0; i < 10; i++)
		assert_string_equal(recorded_name(&r, ips, i + 1, false), recorded_chain[i]);
	recorded_free(&r);
}

/* The fixture's compiled rows, the one at reg_at made "cfa = r11 + REG_CFA_OFF". */
struct reg_rows {
	struct fl_cfitable t;
	uint64_t reg_at;
};


#define REG_CFA_OFF 536632 /* LLVM's stack-probe loop in a 524 KiB frame */

/* The fixture's compiled row for off, as fl_unwind_row_fn says it. */
static int fixture_row(const struct reg_rows *rr, uint64_t off, struct fl_uw_row *row)
{
	const struct fl_uw_row *r = fl_cfitable__find(&rr->t, off);

	if (!r || r->cfa_type == FL_CFA_NONE)
		return 2;
	if (r->cfa_type == FL_CFA_UNSUPPORTED)
		return 1;
	*row = *r;
	return 0;
}

/* The recorded sample, its unwinder stepping by fn over the fixture's compiled rows, mutated at the leaf's. */
static void recorded_with_rows(struct recorded *r, struct reg_rows *rr, fl_unwind_row_fn fn)
{
	int fd;

	recorded_load(r, NULL);
	fd = open(r->exec->paths[0], O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fl_cfitable__from_fd(fd, &rr->t), 0);
	close(fd);
	fl_unwinder__set_rows(r->u, fn, rr);
	rr->reg_at = r->s.regs[FL_UNWIND_REG_IP] - r->start + r->pgoff;
}

/* ips (of r's sample) hold the whole recorded chain, leaf first. */
static void expect_recorded_chain(const struct recorded *r, const uint64_t *ips)
{
	for (size_t i = 0; i < 10; i++)
		assert_string_equal(recorded_name(r, ips, i, i == 0), recorded_chain[i]);
}

/* An anonymous mapping (a JIT's code) beside the fixture's, in r's unwinder. */
#define ANON_CODE 0x7f0000000000ULL

static void recorded_add_anon(struct recorded *r)
{
	r->exec->paths[1][0] = '\0';
	r->exec->maps[1] = (struct fl_tmap){
		.start = ANON_CODE, .end = ANON_CODE + 0x10000, .path = r->exec->paths[1]};
	r->exec->n = 2;
}

/*
 * Code without CFI in anonymous memory (a JIT's) is stepped by frame
 * pointers, as the in-kernel walker steps it: here a JIT function called
 * by nofp_burn, its frame made (rbp pushed and pointing at it), on to the
 * whole chain. With rbp 0 there (no frame pointers) the stack ends there,
 * whole as far as they tell: _start and thread entries clear rbp.
 */
static void test_anon_code_by_frame_pointers(void **state)
{
	struct fl_unwind_stats st;
	enum fl_unwind_outcome out;
	struct recorded r;
	uint64_t ips[64], ra, bp;

	(void)state;
	recorded_load(&r, NULL);
	recorded_add_anon(&r);
	/* The call (ra pushed), then push %rbp and mov %rsp, %rbp: 16 bytes below the copy. */
	bp = r.s.regs[FL_UNWIND_REG_BP];
	ra = r.s.regs[FL_UNWIND_REG_IP] + 1;
	r.stack = realloc(r.stack, r.s.stack_size + 24);
	assert_non_null(r.stack);
	memmove(r.stack + 16, r.stack + 8, r.s.stack_size);
	memcpy(r.stack, &bp, 8);
	memcpy(r.stack + 8, &ra, 8);
	r.s.stack = r.stack;
	r.s.stack_size += 16;
	r.s.regs[FL_UNWIND_REG_SP] -= 16;
	r.s.regs[FL_UNWIND_REG_BP] = r.s.regs[FL_UNWIND_REG_SP];
	r.s.regs[FL_UNWIND_REG_IP] = ANON_CODE + 0x40;
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 12);
	assert_int_equal(out, FL_UNWIND_FAILED); /* main's caller, in libc, is not mapped */
	assert_int_equal(ips[0], ANON_CODE + 0x40);
	assert_int_equal(ips[1], ra);
	fl_unwinder__stats(r.u, &st);
	assert_int_equal(st.fp_steps, 1);
	for (size_t i = 0; i < 10; i++)
		assert_string_equal(recorded_name(&r, ips, i + 1, false), recorded_chain[i]);

	r.s.regs[FL_UNWIND_REG_BP] = 0;
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 1);
	assert_int_equal(out, FL_UNWIND_COMPLETE);
	/* A misaligned rbp is no frame pointer. */
	r.s.regs[FL_UNWIND_REG_BP] = r.s.regs[FL_UNWIND_REG_SP] + 4;
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 1);
	assert_int_equal(out, FL_UNWIND_FAILED);
	recorded_free(&r);
}

/*
 * The file offset of a gap in the fixture's CFI at least 3 bytes long,
 * after a row "CFA = rsp + 8" (a function's ret): where glibc's clone3
 * ends its CFI, just before its syscall instruction. (Not after a code
 * section's first byte, which the compiled tables alone give a row of one
 * byte: the entry's rule.)
 */
static uint64_t fixture_cfi_gap(const struct recorded *r)
{
	struct fl_cfitable t = {0};
	uint64_t gap = 0;
	int fd = open(r->exec->paths[0], O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(fl_cfitable__from_fd(fd, &t), 0);
	close(fd);
	for (size_t i = 0; i + 2 < t.nr && !gap; i++)
		if (t.rows[i].cfa_type == FL_CFA_RSP && t.rows[i].cfa_off == 8 &&
		    t.rows[i].ra_off == -8 && t.rows[i + 1].pc > t.rows[i].pc + 1 &&
		    t.rows[i + 1].cfa_type == FL_CFA_NONE &&
		    t.rows[i + 2].pc >= t.rows[i + 1].pc + 3)
			gap = t.rows[i + 1].pc;
	fl_cfitable__fini(&t);
	assert_true(gap != 0);
	return gap;
}

/* The recorded sample at a gap's pc + 2, nofp_burn its caller: the leaf and the chain, as n says. */
static void expect_syscall_gap(struct recorded *r, uint64_t gap, bool in_kernel, uint64_t rax,
			       size_t n, enum fl_unwind_outcome want)
{
	enum fl_unwind_outcome out;
	uint64_t ips[64], ra;

	ra = sample_called(r, gap + 2, 0);
	r->s.in_kernel = in_kernel;
	r->s.regs[0] = rax;
	assert_int_equal(fl_unwinder__unwind(r->u, &r->s, ips, 64, &out), n);
	assert_int_equal(out, want);
	if (n > 1) {
		assert_int_equal(ips[1], ra);
		for (size_t i = 0; i < 10; i++)
			assert_string_equal(recorded_name(r, ips, i + 1, false), recorded_chain[i]);
	}
}

static int rows_of_fixture(void *ctx, const struct fl_tmap *m, uint64_t off, struct fl_uw_row *row)
{
	(void)m;
	return fixture_row(ctx, off, row);
}

/*
 * glibc's clone and clone3 end their CFI before the syscall instruction;
 * the parent, sampled in the kernel's fork work, returns just past it, 2
 * bytes into the gap. Its frame is the rule's before the syscall (the
 * file's CFI, or the compiled rows). The child (rax 0) is its own first
 * frame. A sample not taken in the kernel has no syscall there: rbp 0,
 * frame pointers, the end.
 */
static void test_syscall_after_cfi(void **state)
{
	struct reg_rows rr = {0};
	struct recorded r;
	uint64_t gap;

	static const struct {
		bool in_kernel;
		uint64_t rax;
		size_t n;
		enum fl_unwind_outcome want;
	} cases[] = {
		{true, 1234, 12, FL_UNWIND_FAILED}, /* main's caller, in libc, is not mapped */
		{true, 0, 1, FL_UNWIND_COMPLETE},
		{false, 1234, 1, FL_UNWIND_COMPLETE},
	};

	(void)state;
	for (int rows = 0; rows < 2; rows++)
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			if (rows)
				recorded_with_rows(&r, &rr, rows_of_fixture);
			else
				recorded_load(&r, NULL);
			gap = fixture_cfi_gap(&r);
			expect_syscall_gap(&r, gap, cases[i].in_kernel, cases[i].rax, cases[i].n,
					   cases[i].want);
			if (rows)
				fl_cfitable__fini(&rr.t);
			recorded_free(&r);
		}
}

static int rows_with_reg(void *ctx, const struct fl_tmap *m, uint64_t off, struct fl_uw_row *row)
{
	struct reg_rows *rr = ctx;
	int ret = fixture_row(rr, off, row);

	(void)m;
	if (!ret && off == rr->reg_at) {
		assert_int_equal(row->cfa_type, FL_CFA_RSP);
		row->cfa_type = FL_CFA_REG + 11;
		row->cfa_off = REG_CFA_OFF;
	}
	return ret;
}

/*
 * A rule "cfa = register + N" for a register other than rsp and rbp (r11
 * in LLVM's stack probes, rbx in ld.so's _dl_runtime_resolve): stepped from
 * the sampled registers, without reading the file's CFI (libdw reads a big
 * library's whole .eh_frame for one frame). Past the sampled frame, where
 * the register is no longer known, the walk ends there, the CFI unread.
 */
static void test_reg_rule_without_cfi(void **state)
{
	struct fl_unwind_stats st;
	enum fl_unwind_outcome out;
	const struct fl_uw_row *leaf;
	struct reg_rows rr = {0};
	struct recorded r;
	uint64_t ips[64];

	(void)state;
	recorded_with_rows(&r, &rr, rows_with_reg);
	/* In the sampled frame: r11 holds the CFA less N, as the probe loop keeps it. */
	leaf = fl_cfitable__find(&rr.t, rr.reg_at);
	assert_non_null(leaf);
	r.s.regs[11] = r.s.regs[FL_UNWIND_REG_SP] + (uint64_t)(int64_t)leaf->cfa_off - REG_CFA_OFF;
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 11);
	assert_int_equal(out, FL_UNWIND_FAILED); /* main's caller, in libc, is not mapped */
	expect_recorded_chain(&r, ips);
	fl_unwinder__stats(r.u, &st);
	assert_int_equal(st.files, 0);
	assert_int_equal(st.bytes, 0);

	/* The same rule one frame up: r11 is not known there (a row restores rsp, rbp, rip). */
	rr.reg_at = ips[1] - 1 - r.start + r.pgoff;
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 2);
	assert_int_equal(out, FL_UNWIND_FAILED);
	assert_int_equal(ips[1] - 1 - r.start + r.pgoff, rr.reg_at);
	fl_unwinder__stats(r.u, &st);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(st.files, 0);
	fl_cfitable__fini(&rr.t);
	recorded_free(&r);
}

/* The fixture's compiled rows, the leaf's saying rbp was saved just below the stack copy. */
static int rows_rbp_below(void *ctx, const struct fl_tmap *m, uint64_t off, struct fl_uw_row *row)
{
	struct reg_rows *rr = ctx;
	int ret = fixture_row(rr, off, row);

	(void)m;
	if (!ret && off == rr->reg_at) {
		assert_int_equal(row->cfa_type, FL_CFA_RSP);
		row->rbp_type = FL_RBP_AT_CFA;
		row->rbp_off = (__s16)(-row->cfa_off - 8);
	}
	return ret;
}

/*
 * At a "pop %rbp; ret" the CFI still says rbp is saved at cfa - 16, below
 * the stack pointer: outside the stack copy. rbp is then unknown, as libdw
 * has it, and the unwinding goes on (the fixture's callers need no rbp).
 * Row steps stopped at the leaf there: in about one run in eight, a live
 * sample of test_chains or test_signal_frames was unwound whole by libdw
 * and not by rows.
 */
static void test_rbp_slot_below_copy(void **state)
{
	enum fl_unwind_outcome out;
	struct reg_rows rr = {0};
	struct recorded r;
	uint64_t ips[64];

	(void)state;
	recorded_with_rows(&r, &rr, rows_rbp_below);
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 11);
	assert_int_equal(out, FL_UNWIND_FAILED); /* main's caller, in libc, is not mapped */
	expect_recorded_chain(&r, ips);
	fl_cfitable__fini(&rr.t);
	recorded_free(&r);
}

/*
 * The CFI a file holds comes out of a budget, charged before it is read:
 * with no room, the file is not read (its pcs fail), counted, and tried
 * again after a trim; read, it is charged what its headers say and given
 * back when a trim finds it unused since the trim before.
 */
static void test_budget(void **state)
{
	struct fl_budget budget = {.max = 1};
	struct fl_unwind_stats st;
	enum fl_unwind_outcome out;
	struct recorded r;
	uint64_t ips[64];

	(void)state;
	recorded_load(&r, &budget);
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 1);
	assert_int_equal(out, FL_UNWIND_FAILED);
	fl_unwinder__stats(r.u, &st);
	assert_int_equal(st.files_over_budget, 1);
	assert_true(st.bytes_over_budget > 1);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(budget.used, 0);

	/* Room again: the trim lets the file be read. */
	fl_unwinder__trim(r.u);
	budget.max = 0;
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 11);
	fl_unwinder__stats(r.u, &st);
	assert_true(st.bytes > 0);
	assert_int_equal(budget.used, st.bytes);
	printf("# CFI of nofp_chain.elf: %llu bytes\n", (unsigned long long)st.bytes);

	/* Used since the last trim: kept; then unused for two: given back. */
	fl_unwinder__trim(r.u);
	assert_int_equal(budget.used, st.bytes);
	fl_unwinder__trim(r.u);
	fl_unwinder__trim(r.u);
	assert_int_equal(budget.used, 0);
	fl_unwinder__stats(r.u, &st);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 11);
	recorded_free(&r);
}

/*
 * The fixture indexed by its .eh_frame_hdr, as a big file is: the whole
 * chain by its window's rows, its CFI not read whole, the index and the
 * window charged to the budget and given back when the file goes at a trim.
 */
static void test_hdr_budget(void **state)
{
	struct fl_budget budget = {.max = 0};
	struct fl_unwind_stats st;
	enum fl_unwind_outcome out;
	struct recorded r;
	uint64_t ips[64];

	(void)state;
	recorded_load_hdr(&r, &budget, 1);
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 11);
	assert_int_equal(out, FL_UNWIND_FAILED);
	expect_recorded_chain(&r, ips);
	fl_unwinder__stats(r.u, &st);
	assert_int_equal(st.files, 1);
	assert_int_equal(st.hdr_files, 1);
	assert_int_equal(st.hdr_windows, 1);
	assert_int_equal(st.hdr_whole, 0);
	assert_int_equal(st.row_steps, 10);
	assert_true(st.bytes > 0);
	assert_int_equal(budget.used, st.bytes);
	/* Again: the window is kept. */
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 11);
	fl_unwinder__stats(r.u, &st);
	assert_int_equal(st.hdr_windows, 1);
	assert_int_equal(budget.used, st.bytes);
	/* Unused for two trims: all of it given back. */
	fl_unwinder__trim(r.u);
	fl_unwinder__trim(r.u);
	fl_unwinder__trim(r.u);
	assert_int_equal(budget.used, 0);
	fl_unwinder__stats(r.u, &st);
	assert_int_equal(st.bytes, 0);
	/* No room for the index nor for the CFI: the step fails, nothing is left charged. */
	budget.max = 1;
	assert_int_equal(fl_unwinder__unwind(r.u, &r.s, ips, 64, &out), 1);
	fl_unwinder__stats(r.u, &st);
	assert_int_equal(budget.used, st.bytes);
	recorded_free(&r);
	assert_int_equal(budget.used, 0);
}

static void test_regs_mapping(void **state)
{
	uint64_t perf[64], regs[FL_UNWIND_NR_REGS];
	size_t n = (size_t)__builtin_popcountll(fl_unwind__perf_regs_mask());

	(void)state;
	if (!n)
		skip();
	/* AX BX CX DX SI DI BP SP IP R8..R15, in that order, get 100 + their perf number. */
	static const int perf_no[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 18, 19, 20, 21, 22, 23};
	for (size_t i = 0; i < n; i++)
		perf[i] = 100 + (uint64_t)perf_no[i];
	fl_unwind__regs_from_perf(perf, regs);
	assert_int_equal(regs[0], 100); /* rax */
	assert_int_equal(regs[1], 103); /* rdx */
	assert_int_equal(regs[2], 102); /* rcx */
	assert_int_equal(regs[3], 101); /* rbx */
	assert_int_equal(regs[6], 106); /* rbp */
	assert_int_equal(regs[FL_UNWIND_REG_SP], 107);
	assert_int_equal(regs[FL_UNWIND_REG_IP], 108);
	assert_int_equal(regs[8], 116);	 /* r8 */
	assert_int_equal(regs[15], 123); /* r15 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regs_mapping),	 cmocka_unit_test(test_recorded_sample),
		cmocka_unit_test(test_chains),		 cmocka_unit_test(test_no_frame_pointers),
		cmocka_unit_test(test_through_library),	 cmocka_unit_test(test_leaf_at_code_start),
		cmocka_unit_test(test_debug_frame_only), cmocka_unit_test(test_budget),
		cmocka_unit_test(test_no_cfi_reads_headers_only),
		cmocka_unit_test(test_anon_code_by_frame_pointers),
		cmocka_unit_test(test_syscall_after_cfi),
		cmocka_unit_test(test_reg_rule_without_cfi),
		cmocka_unit_test(test_signal_frames),
		cmocka_unit_test(test_rbx_cfa),	 cmocka_unit_test(test_hdr_budget),
		cmocka_unit_test(test_rbp_slot_below_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
