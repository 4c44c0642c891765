// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Unit tests of the unwind table compiler: the rules of made-up CFI and of
 * real binaries, hostile files, and walks of real stacks with the rows
 * alone, checked against the DWARF unwinder's.
 */
#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>
#include <gelf.h>
#include <libelf.h>

#include "flamed/sampling/procmaps.h"
#include "flamed/symbols/elfsyms.h"
#include "flamed/unwinding/cfitable.h"
#include "flamed/unwinding/unwind.h"
#include "hostile_paths.h"
#include "stack_capture.h"
#include "unwinding/cfi_file.h"
#include "unwinding/cfitable_ref.h"
#include "unwinding/ktables.h"

#if !defined(FIXTURE_DIR) || !defined(FIXTURE_SRC_DIR)
#error "FIXTURE_DIR and FIXTURE_SRC_DIR must name the fixtures directories"
#endif

/* --- checking tables ------------------------------------------------------------- */

static bool same_rule(const struct fl_uw_row *a, const struct fl_uw_row *b)
{
	return a->cfa_type == b->cfa_type && a->rbp_type == b->rbp_type && a->ra_off == b->ra_off &&
	       a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off && a->rbx_off == b->rbx_off;
}

/* What every table promises (cfitable.h), find() included. */
static void check_table(const struct fl_cfitable *t)
{
	uint64_t by_type[FL_CFITABLE_ROW_KINDS] = {0};

	assert_true(t->nr >= 2); /* a rule, and the closing FL_CFA_NONE */
	assert_true(t->nr <= FL_UW_MAX_ROWS);
	assert_int_equal(t->rows[t->nr - 1].cfa_type, FL_CFA_NONE);
	if (t->rows[0].pc)
		assert_null(fl_cfitable__find(t, t->rows[0].pc - 1));
	for (size_t i = 0; i < t->nr; i++) {
		const struct fl_uw_row *r = &t->rows[i];

		assert_true(r->cfa_type <= FL_CFA_UNSUPPORTED ||
			    (FL_CFA_REG_OF(r->cfa_type) >= 0 && FL_CFA_REG_OF(r->cfa_type) != 6 &&
			     FL_CFA_REG_OF(r->cfa_type) != 7));
		assert_true(r->rbp_type <= FL_RBP_AT_RBP);
		by_type[fl_cfitable__row_kind(r->cfa_type)]++;
		assert_ptr_equal(fl_cfitable__find(t, r->pc), r);
		if (i) {
			assert_true(t->rows[i - 1].pc < r->pc);
			assert_false(same_rule(&t->rows[i - 1], r));
			assert_ptr_equal(fl_cfitable__find(t, r->pc - 1), &t->rows[i - 1]);
		}
	}
	assert_ptr_equal(fl_cfitable__find(t, UINT64_MAX), &t->rows[t->nr - 1]);
	assert_memory_equal(by_type, t->counts.rows, sizeof(by_type));
}

/* The row at off must be of type cfa_type with these offsets (rbp_type, rbp_off, ra_off). */
static void expect_row(const struct fl_cfitable *t, uint64_t off, int cfa_type, int cfa_off,
		       int rbp_type, int rbp_off, int ra_off)
{
	const struct fl_uw_row *r = fl_cfitable__find(t, off);

	if (!r)
		fail_msg("no row at 0x%llx", (unsigned long long)off);
	if (r->cfa_type != cfa_type || r->cfa_off != cfa_off || r->rbp_type != rbp_type ||
	    r->rbp_off != rbp_off || r->ra_off != ra_off)
		fail_msg("row at 0x%llx (pc 0x%x): type %d cfa %d rbp %d/%d ra %d; want type %d "
			 "cfa %d rbp %d/%d ra %d",
			 (unsigned long long)off, r->pc, r->cfa_type, r->cfa_off, r->rbp_type,
			 r->rbp_off, r->ra_off, cfa_type, cfa_off, rbp_type, rbp_off, ra_off);
}

/* The row at off must say rbx_off (FL_RBX_SAME, FL_RBX_UNKNOWN or an offset). */
static void expect_rbx(const struct fl_cfitable *t, uint64_t off, int rbx_off)
{
	const struct fl_uw_row *r = fl_cfitable__find(t, off);

	if (!r)
		fail_msg("no row at 0x%llx", (unsigned long long)off);
	if (r->rbx_off != rbx_off)
		fail_msg("row at 0x%llx (pc 0x%x): rbx %d; want %d", (unsigned long long)off, r->pc,
			 r->rbx_off, rbx_off);
}

static void expect_type(const struct fl_cfitable *t, uint64_t off, int cfa_type)
{
	const struct fl_uw_row *r = fl_cfitable__find(t, off);

	if (!r || r->cfa_type != cfa_type)
		fail_msg("row at 0x%llx: type %d, want %d", (unsigned long long)off,
			 r ? r->cfa_type : -1, cfa_type);
}

static int table_of_path(const char *path, struct fl_cfitable *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = fl_cfitable__from_fd(fd, t);
	close(fd);
	return err;
}

static void table_of_fixture(const char *name, struct fl_cfitable *t)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, name);
	assert_int_equal(table_of_path(path, t), 0);
	check_table(t);
}

/* --- ELF facts of real files ----------------------------------------------------- */

/* The file offset of vaddr through the file's PT_LOAD segments. */
static uint64_t vaddr_to_off(const char *path, uint64_t vaddr)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t off = UINT64_MAX;
	size_t n;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr &&
		    vaddr - ph.p_vaddr < ph.p_filesz)
			off = vaddr - ph.p_vaddr + ph.p_offset;
	}
	elf_end(elf);
	close(fd);
	assert_true(off != UINT64_MAX);
	return off;
}

/* The file offset (and size) of the function called name, from the file's symbols. */
static uint64_t fn_off(const char *path, const char *name, uint64_t *size)
{
	struct fl_elfsyms *syms = NULL;
	uint64_t vaddr = 0;

	assert_int_equal(fl_elfsyms__open(path, &syms), 0);
	for (size_t i = 0; i < fl_elfsyms__count(syms); i++) {
		const struct fl_elfsym *s = fl_elfsyms__at(syms, i);

		if (!strcmp(s->name, name)) {
			vaddr = s->addr;
			if (size)
				*size = s->size;
		}
	}
	fl_elfsyms__free(syms);
	if (!vaddr)
		fail_msg("%s: no function %s", path, name);
	return vaddr_to_off(path, vaddr);
}

/* The address and size of a section, and e_entry. */
static bool elf_facts(const char *path, const char *section, uint64_t *addr, uint64_t *size,
		      uint64_t *entry)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool found = false;
	GElf_Ehdr eh;
	size_t shstrndx;
	Elf *elf;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_non_null(gelf_getehdr(elf, &eh));
	*entry = eh.e_entry;
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(n, section)) {
			*addr = sh.sh_addr;
			*size = sh.sh_size;
			found = true;
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

static void read_at(const char *path, uint64_t off, void *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, n, (off_t)off), (ssize_t)n);
	close(fd);
}

/* Skips an endbr64, where a toolchain with CET puts one first. */
static size_t skip_endbr(const uint8_t *code)
{
	static const uint8_t endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};

	return memcmp(code, endbr64, sizeof(endbr64)) ? 0 : sizeof(endbr64);
}

/* --- rules of real binaries ------------------------------------------------------ */

/* A function without a frame: its CFA is rsp + 8 on entry and rsp + 8 + N after "sub $N, %rsp". */
static void check_nofp_function(const struct fl_cfitable *t, const char *path)
{
	uint8_t code[16];
	uint64_t f8, burn, size;
	size_t at;
	uint32_t imm = 0;

	burn = fn_off(path, "nofp_burn", NULL);
	expect_row(t, burn, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);

	/* nofp_8 starts by making room for its 64 words (gcc: sub $0x208, %rsp). */
	f8 = fn_off(path, "nofp_8", &size);
	expect_row(t, f8, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	read_at(path, f8, code, sizeof(code));
	at = skip_endbr(code);
	if (code[at] == 0x48 && code[at + 1] == 0x81 && code[at + 2] == 0xec) {
		memcpy(&imm, code + at + 3, 4);
		at += 7;
	} else if (code[at] == 0x48 && code[at + 1] == 0x83 && code[at + 2] == 0xec) {
		imm = code[at + 3];
		at += 4;
	} else {
		fail_msg("nofp_8 does not start with sub $N, %%rsp");
	}
	assert_true(imm >= 512);
	expect_row(t, f8 + at - 1, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_row(t, f8 + at, FL_CFA_RSP, 8 + (int)imm, FL_RBP_SAME, 0, -8);
	/* The code after the function, up to the next one, is padding no FDE covers. */
	expect_type(t, f8 + size, FL_CFA_NONE);
}

static void test_nofp_rules(void **state)
{
	struct fl_cfitable t;

	(void)state;
	table_of_fixture("nofp_chain", &t);
	check_nofp_function(&t, FIXTURE_DIR "/nofp_chain");
	assert_int_equal(t.counts.fdes_debug_frame, 0);
	fl_cfitable__fini(&t);
}

/* The same functions with their CFI in .debug_frame only, then compressed there. */
static void test_debug_frame(void **state)
{
	static const char *const prog = FIXTURE_DIR "/nofp_dbgframe";
	struct fl_cfitable t, tz;
	char dir[PATH_MAX], z[PATH_MAX + 16], cmd[3 * PATH_MAX];

	(void)state;
	table_of_fixture("nofp_dbgframe", &t);
	check_nofp_function(&t, prog);
	assert_true(t.counts.fdes_debug_frame > 8);

	assert_true(scratch_dir_make(dir, sizeof(dir), "test_cfitable"));
	snprintf(z, sizeof(z), "%s/z", dir);
	snprintf(cmd, sizeof(cmd), "objcopy --compress-debug-sections=zlib '%s' '%s' 2>/dev/null",
		 prog, z);
	if (system(cmd) == 0) {
		/* libdw inflates it: the table is the same. */
		assert_int_equal(table_of_path(z, &tz), 0);
		assert_int_equal(tz.nr, t.nr);
		assert_memory_equal(tz.rows, t.rows, t.nr * sizeof(*t.rows));
		fl_cfitable__fini(&tz);
	} else {
		print_message(
			"objcopy cannot compress: the compressed .debug_frame is not tested\n");
	}
	scratch_dir_remove(dir);
	fl_cfitable__fini(&t);
}

/*
 * With frame pointers: "push %rbp" makes the CFA rsp + 16 with rbp saved
 * at CFA - 16, "mov %rsp, %rbp" makes it rbp + 16, "pop %rbp" rsp + 8.
 */
static void test_fp_rules(void **state)
{
	static const char *const prog = FIXTURE_DIR "/chains";
	static const uint8_t prologue[] = {0x55, 0x48, 0x89, 0xe5};
	struct fl_cfitable t;
	uint64_t f, size;
	uint8_t code[64];
	size_t at;

	(void)state;
	table_of_fixture("chains", &t);
	f = fn_off(prog, "chain_a1", &size);
	assert_true(size <= sizeof(code));
	read_at(prog, f, code, (size_t)size);
	at = skip_endbr(code);
	assert_memory_equal(code + at, prologue, sizeof(prologue));
	expect_row(&t, f + at, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_row(&t, f + at + 1, FL_CFA_RSP, 16, FL_RBP_AT_CFA, -16, -8);
	expect_row(&t, f + at + 3, FL_CFA_RSP, 16, FL_RBP_AT_CFA, -16, -8);
	expect_row(&t, f + at + 4, FL_CFA_RBP, 16, FL_RBP_AT_CFA, -16, -8);
	/*
	 * At the ret that ends it (gcc schedules the pop earlier) the CFA is
	 * rsp + 8 again; gcc leaves rbp's rule as it was: the slot still holds it.
	 */
	assert_int_equal(code[size - 1], 0xc3);
	expect_type(&t, f + at + 5, FL_CFA_RBP);
	expect_row(&t, f + size - 1, FL_CFA_RSP, 8, FL_RBP_AT_CFA, -16, -8);
	fl_cfitable__fini(&t);
}

/*
 * binutils' PLT: PLT0 pushes twice (rsp + 16, then + 24), the entries' CFA
 * is an expression of rip (FL_CFA_PLT, threshold 11). _start has CFI that
 * leaves the return address undefined.
 */
static void test_plt_and_start(void **state)
{
	static const char *const prog = FIXTURE_DIR "/nofp_chain";
	uint64_t plt, size, entry;
	struct fl_cfitable t;

	(void)state;
	table_of_fixture("nofp_chain", &t);
	assert_true(elf_facts(prog, ".plt", &plt, &size, &entry));
	assert_true(size >= 32);
	plt = vaddr_to_off(prog, plt);
	expect_row(&t, plt, FL_CFA_RSP, 16, FL_RBP_SAME, 0, -8);
	expect_row(&t, plt + 6, FL_CFA_RSP, 24, FL_RBP_SAME, 0, -8);
	expect_row(&t, plt + 16, FL_CFA_PLT, 8, FL_RBP_SAME, 11, -8);
	expect_row(&t, plt + size - 1, FL_CFA_PLT, 8, FL_RBP_SAME, 11, -8);
	assert_int_equal(t.counts.rows[FL_CFA_PLT], 1);
	expect_row(&t, vaddr_to_off(prog, entry), FL_CFA_OUTERMOST, 0, FL_RBP_SAME, 0, 0);
	fl_cfitable__fini(&t);
}

/* The file offset and path of the mapping holding addr in this process. */
struct self_map {
	uint64_t addr, off;
	char path[PATH_MAX];
};

static int find_self_map(const struct fl_procmap *m, void *ctx)
{
	struct self_map *s = ctx;

	if (s->addr >= m->start && s->addr < m->end) {
		s->off = s->addr - m->start + m->pgoff;
		snprintf(s->path, sizeof(s->path), "%s", m->path);
	}
	return 0;
}

static void on_usr1(int sig)
{
	(void)sig;
}

/*
 * glibc returns from every signal handler into __restore_rt (our sigaction
 * hands it to the kernel as sa_restorer): its row is a signal frame reading
 * the interrupted rsp, rbp and rip at rsp + 160, 120 and 168, where the
 * kernel's rt_sigframe keeps them (uc_mcontext's rsp, rbp, rip). Its FDE
 * starts a byte early, for unwinders that look up return address - 1.
 */
static void test_libc_signal_frame(void **state)
{
	struct sigaction sa = {.sa_handler = on_usr1}, old;
	struct self_map m = {0};
	struct fl_cfitable t;

	(void)state;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	assert_int_equal(sigaction(SIGUSR1, NULL, &old), 0);
	if (!old.sa_restorer)
		skip();
	m.addr = (uint64_t)(uintptr_t)old.sa_restorer;
	assert_int_equal(fl_procmaps__read(getpid(), find_self_map, &m), 0);
	assert_true(m.path[0] == '/');
	assert_int_equal(table_of_path(m.path, &t), 0);
	check_table(&t);
	expect_row(&t, m.off, FL_CFA_SIGNAL, 160, FL_RBP_SAME, 120, 168);
	expect_row(&t, m.off - 1, FL_CFA_SIGNAL, 160, FL_RBP_SAME, 120, 168);
	/* rbx beside rbp in the ucontext's registers. */
	expect_rbx(&t, m.off, 128);
	assert_true(t.counts.rows[FL_CFA_SIGNAL] >= 1);
	print_message("%s: %zu rows, %zu bytes for %llu bytes of code\n", m.path, t.nr,
		      t.nr * sizeof(*t.rows), (unsigned long long)t.code_bytes);
	fl_cfitable__fini(&t);
	signal(SIGUSR1, SIG_DFL);
}

static void test_vdso(void **state)
{
	struct fl_cfitable t;
	int err;

	(void)state;
	err = fl_cfitable__vdso(&t);
	if (err == -ENOENT)
		skip(); /* no vdso, or one without CFI */
	assert_int_equal(err, 0);
	check_table(&t);
	assert_true(t.counts.rows[FL_CFA_RSP] + t.counts.rows[FL_CFA_RBP] >= 1);
	assert_true(t.code_bytes > 0);
	fl_cfitable__fini(&t);
}

/* --- the interpreter against libdw ----------------------------------------------- */

/*
 * The two engines' tables must be one: rows, counts and code bytes, all
 * but the work (the interpreter counts bytes read once, libdw's engine the
 * FDE's bytes again for each row).
 */
static void expect_same_tables(const struct fl_cfitable *t, const struct fl_cfitable *ref,
			       const char *what)
{
	struct fl_cfitable_counts a = t->counts, b = ref->counts;
	size_t k = 0;

	while (k < t->nr && k < ref->nr && !memcmp(&t->rows[k], &ref->rows[k], sizeof(t->rows[k])))
		k++;
	if (k < t->nr || k < ref->nr) {
		const struct fl_uw_row *x = k < t->nr ? &t->rows[k] : NULL;
		const struct fl_uw_row *y = k < ref->nr ? &ref->rows[k] : NULL;

		fail_msg(
			"%s: %zu rows, libdw %zu; row %zu: pc 0x%x type %d cfa %d rbp %d/%d ra %d, "
			"libdw pc 0x%x type %d cfa %d rbp %d/%d ra %d",
			what, t->nr, ref->nr, k, x ? x->pc : 0, x ? x->cfa_type : -1,
			x ? x->cfa_off : 0, x ? x->rbp_type : 0, x ? x->rbp_off : 0,
			x ? x->ra_off : 0, y ? y->pc : 0, y ? y->cfa_type : -1, y ? y->cfa_off : 0,
			y ? y->rbp_type : 0, y ? y->rbp_off : 0, y ? y->ra_off : 0);
	}
	a.work = b.work = 0;
	for (int w = 0; w < FL_CFITABLE_WHY__MAX; w++)
		if (a.unsupported[w] != b.unsupported[w])
			print_message("%s: %llu rows unsupported for %s, libdw %llu\n", what,
				      (unsigned long long)a.unsupported[w],
				      fl_cfitable__why_name(w),
				      (unsigned long long)b.unsupported[w]);
	if (memcmp(&a, &b, sizeof(a)))
		fail_msg("%s: counts differ (cfi rows %llu, libdw %llu)", what,
			 (unsigned long long)a.cfi_rows, (unsigned long long)b.cfi_rows);
	assert_int_equal(t->code_bytes, ref->code_bytes);
}

/* Both engines on the file at path (absent: false); the same error or the same table. */
static bool compare_path(const char *path)
{
	struct fl_cfitable t, ref;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err, err_ref;

	if (fd < 0)
		return false;
	err = fl_cfitable__from_fd(fd, &t);
	err_ref = fl_cfitable__from_fd_libdw(fd, &ref);
	close(fd);
	if (err != err_ref)
		fail_msg("%s: error %d, libdw %d", path, err, err_ref);
	if (!err) {
		expect_same_tables(&t, &ref, path);
		fl_cfitable__fini(&t);
		fl_cfitable__fini(&ref);
	}
	return true;
}

/* Real binaries, the fixtures and the vdso: the interpreter's rows are libdw's. */
static void test_engines_real(void **state)
{
	static const char *const files[] = {
		"/lib/x86_64-linux-gnu/libc.so.6",
		"/lib64/ld-linux-x86-64.so.2",
		"/usr/bin/python3.11",
		"/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
		"/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1",
	};
	struct fl_cfitable t, ref;
	const void *vdso;
	struct dirent *d;
	size_t size, nr = 0;
	DIR *dir;

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (!compare_path(files[i]))
			print_message("%s: absent, skipped\n", files[i]);
	dir = opendir(FIXTURE_DIR);
	assert_non_null(dir);
	while ((d = readdir(dir))) {
		char path[PATH_MAX];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, d->d_name);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		assert_true(compare_path(path));
		nr++;
	}
	closedir(dir);
	assert_true(nr > 10);
	vdso = fl_cfi_file__vdso_image(&size);
	if (vdso) {
		assert_int_equal(fl_cfitable__from_memory(vdso, size, &t), 0);
		assert_int_equal(fl_cfitable__from_memory_libdw(vdso, size, &ref), 0);
		expect_same_tables(&t, &ref, "[vdso]");
		fl_cfitable__fini(&t);
		fl_cfitable__fini(&ref);
	}
}

/* --- a table a range at a time ------------------------------------------------------ */

/* The rule at off in t: NONE where no row covers it. */
static struct fl_uw_row rule_at(const struct fl_cfitable *t, uint64_t off)
{
	const struct fl_uw_row *r = fl_cfitable__find(t, off);
	struct fl_uw_row x = r ? *r : (struct fl_uw_row){.cfa_type = FL_CFA_NONE};

	x.pc = 0;
	return x;
}

static void expect_rule_at(const struct fl_cfitable *whole, const struct fl_cfitable *part,
			   uint64_t off, const char *what, uint64_t lo)
{
	struct fl_uw_row a = rule_at(whole, off), b = rule_at(part, off);

	if (memcmp(&a, &b, sizeof(a)))
		fail_msg("%s: range at 0x%llx: at 0x%llx type %d cfa %d, whole table type %d cfa %d",
			 what, (unsigned long long)lo, (unsigned long long)off, b.cfa_type,
			 b.cfa_off, a.cfa_type, a.cfa_off);
}

/*
 * The table t laid out in the kernel's pages (fl_ktables_layout()) gives,
 * searched as the walker searches it (fl_ktables_find()), the row the
 * table gives at each row's first byte, the byte before it and the byte
 * after; and nothing before its first row.
 */
static void expect_paged(const struct fl_cfitable *t, const char *what)
{
	uint32_t n = (uint32_t)t->nr;
	union fl_uw_page *pages;

	assert_true(n > 0 && n <= FL_UW_TABLE_MAX_ROWS);
	pages = malloc(FL_UW_TABLE_PAGES(n) * sizeof(*pages));
	assert_non_null(pages);
	memset(pages, 0xa5, FL_UW_TABLE_PAGES(n) * sizeof(*pages));
	fl_ktables_layout(t->rows, n, pages);
	if (t->rows[0].pc > 0)
		assert_null(fl_ktables_find(pages, n, t->rows[0].pc - 1));
	for (uint32_t i = 0; i < n; i++) {
		uint64_t pc = t->rows[i].pc;

		for (uint64_t off = pc ? pc - 1 : pc; off <= pc + 1; off++) {
			const struct fl_uw_row *want = fl_cfitable__find(t, off),
					       *got = fl_ktables_find(pages, n, off);

			if (!want && !got)
				continue;
			if (!want || !got || memcmp(want, got, sizeof(*want)))
				fail_msg("%s: %u rows laid out in pages: at 0x%llx row pc 0x%x, "
					 "the table's 0x%x",
					 what, n, (unsigned long long)off, got ? got->pc : 0,
					 want ? want->pc : 0);
		}
	}
	free(pages);
}

/* Whether the ELF file at fd has a .debug_frame section. */
static bool has_debug_frame(int fd)
{
	struct fl_cfi_file f;
	GElf_Shdr sh;
	bool has;

	assert_int_equal(fl_cfi_file__begin_fd(&f, fd), 0);
	has = fl_cfi_file__section(f.elf, ".debug_frame", &sh) != NULL;
	fl_cfi_file__fini(&f);
	return has;
}

/*
 * The file at fd compiled whole through a source is fl_cfitable__from_fd()'s
 * table, and each range of step bytes has its rows: the whole table's rule
 * at every offset where either table's rule changes. A source released
 * (fl_cfitable_src__release()) gives each range the same rows as one that
 * holds its CFI, and holds less than that CFI (.eh_frame's bytes). Returns
 * the ranges with rows.
 */
static size_t expect_ranges(int fd, const char *what, uint64_t step)
{
	struct fl_cfitable ref, whole, part, again;
	struct fl_cfitable_src *s, *rel, *hdr = NULL, *small = NULL;
	size_t with_rows = 0;
	uint64_t end, eh_bytes;
	int hdr_err;

	assert_int_equal(fl_cfitable__from_fd(fd, &ref), 0);
	assert_int_equal(fl_cfitable_src__open(fd, &s), 0);
	assert_int_equal(fl_cfitable_src__all(s, &whole), 0);
	assert_int_equal(whole.nr, ref.nr);
	assert_memory_equal(whole.rows, ref.rows, ref.nr * sizeof(*ref.rows));
	assert_int_equal(fl_cfitable_src__open(fd, &rel), 0);
	assert_int_equal(fl_cfitable_src__index(rel), 0);
	eh_bytes = fl_cfitable_src__bytes(rel);
	if (fl_cfitable_src__release(rel, fd) == -ENOTSUP) {
		/* .debug_frame's CFI stays: all of it does. */
		assert_true(has_debug_frame(fd));
		assert_int_equal(fl_cfitable_src__bytes(rel), eh_bytes);
	} else {
		assert_true(fl_cfitable_src__bytes(rel) < eh_bytes);
	}
	/* Indexed by .eh_frame_hdr, which every file here has (but one with .debug_frame too). */
	hdr_err = fl_cfitable_src__open_hdr(fd, 0, &hdr);
	if (hdr_err == -ENOTSUP)
		assert_true(has_debug_frame(fd));
	else
		assert_int_equal(hdr_err, 0);
	/* A file with less code than asked for is not indexed: its whole table is the way. */
	assert_int_equal(fl_cfitable_src__open_hdr(fd, UINT64_MAX, &small), -ERANGE);
	assert_null(small);
	print_message("%s: %.1f KiB held, %.1f KiB once released, %.1f KiB indexed by .eh_frame_hdr\n",
		      what, (double)eh_bytes / 1024.0, (double)fl_cfitable_src__bytes(rel) / 1024.0,
		      hdr ? (double)fl_cfitable_src__bytes(hdr) / 1024.0 : 0.0);
	end = ref.rows[ref.nr - 1].pc + 1;
	for (uint64_t lo = ref.rows[0].pc / step * step; lo < end; lo += step) {
		uint64_t hi = lo + step;
		int err = fl_cfitable_src__range(s, lo, hi, &part);

		assert_int_equal(fl_cfitable_src__range(rel, lo, hi, &again), err);
		if (!err) {
			assert_int_equal(again.nr, part.nr);
			assert_memory_equal(again.rows, part.rows, part.nr * sizeof(*part.rows));
			fl_cfitable__fini(&again);
		}
		if (hdr) {
			int got = fl_cfitable_src__range(hdr, lo, hi, &again);

			if (got != err)
				fail_msg("%s: [0x%" PRIx64 ", 0x%" PRIx64 "): %d by .eh_frame_hdr, %d",
					 what, lo, hi, got, err);
			if (!err) {
				assert_int_equal(again.nr, part.nr);
				assert_memory_equal(again.rows, part.rows,
						    part.nr * sizeof(*part.rows));
				fl_cfitable__fini(&again);
			}
		}
		if (err == -ENOENT) {
			/* No CFI in the range: none at lo, and no row with a rule inside. */
			struct fl_uw_row none = {.cfa_type = FL_CFA_NONE}, a = rule_at(&ref, lo);

			assert_memory_equal(&a, &none, sizeof(a));
			for (size_t i = 0; i < ref.nr; i++)
				if (ref.rows[i].pc > lo && ref.rows[i].pc < hi)
					assert_int_equal(ref.rows[i].cfa_type, FL_CFA_NONE);
			continue;
		}
		assert_int_equal(err, 0);
		with_rows++;
		assert_true(part.nr > 0 && part.rows[0].pc >= lo);
		assert_true(part.rows[part.nr - 1].pc <= hi);
		assert_int_equal(part.rows[part.nr - 1].cfa_type, FL_CFA_NONE);
		expect_rule_at(&ref, &part, lo, what, lo);
		for (size_t i = 0; i + 1 < part.nr; i++) {
			expect_rule_at(&ref, &part, part.rows[i].pc, what, lo);
			if (part.rows[i].pc > lo)
				expect_rule_at(&ref, &part, part.rows[i].pc - 1, what, lo);
		}
		/* The whole table's rows inside, from the first after lo (a search from lo). */
		for (const struct fl_uw_row *r = fl_cfitable__find(&ref, lo);
		     r && r < ref.rows + ref.nr && r->pc < hi; r++) {
			if (r->pc > lo) {
				expect_rule_at(&ref, &part, r->pc, what, lo);
				expect_rule_at(&ref, &part, r->pc - 1, what, lo);
			}
		}
		expect_rule_at(&ref, &part, hi - 1, what, lo);
		expect_paged(&part, what);
		fl_cfitable__fini(&part);
	}
	if (!fl_cfitable__find(&ref, ref.rows[0].pc))
		fail_msg("%s: no first row", what);
	if (ref.nr <= FL_UW_TABLE_MAX_ROWS)
		expect_paged(&ref, what);
	assert_int_equal(fl_cfitable_src__range(s, 5, 5, &part), -EINVAL);
	fl_cfitable_src__free(s);
	fl_cfitable_src__free(rel);
	fl_cfitable_src__free(hdr);
	fl_cfitable__fini(&whole);
	fl_cfitable__fini(&ref);
	return with_rows;
}

/* Real binaries in windows of the walker's size, and of a few bytes (cuts inside functions). */
static void test_ranges_real(void **state)
{
	static const struct {
		const char *path;
		uint64_t step;
	} files[] = {
		{"/lib/x86_64-linux-gnu/libc.so.6", FL_UW_WIN_BYTES},
		{"/lib/x86_64-linux-gnu/libc.so.6", 4096},
		{"/lib64/ld-linux-x86-64.so.2", 100},
		{"/usr/bin/python3.11", FL_UW_WIN_BYTES},
		{"/usr/lib/gcc/x86_64-linux-gnu/12/cc1", FL_UW_WIN_BYTES},
		{"/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", FL_UW_WIN_BYTES},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		int fd = open(files[i].path, O_RDONLY | O_CLOEXEC);
		size_t n;

		if (fd < 0) {
			print_message("%s: absent, skipped\n", files[i].path);
			continue;
		}
		n = expect_ranges(fd, files[i].path, files[i].step);
		close(fd);
		assert_true(n > 0);
	}
}

/*
 * A released source reads its file again for every range, and the file is
 * its owner's: cut short or overwritten after the index was made, ranges
 * fail or give what the bytes now say, and nothing is read outside them
 * (the sanitized build checks that).
 */
static void test_released_file_changed(void **state)
{
	const char *path = "/lib/x86_64-linux-gnu/libc.so.6";
	struct fl_cfitable_src *srcs[2];
	struct fl_cfitable part;
	struct stat st;
	size_t ok = 0, ok_hdr = 0, failed = 0;
	int fd;

	(void)state;
	fd = scratch_copy_unlinked(path);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	/* Released once indexed, and indexed by .eh_frame_hdr: both read the file for every range. */
	assert_int_equal(fl_cfitable_src__open(fd, &srcs[0]), 0);
	assert_int_equal(fl_cfitable_src__release(srcs[0], fd), 0);
	assert_int_equal(fl_cfitable_src__open_hdr(fd, 0, &srcs[1]), 0);
	/* The windows before the change are built from the file. */
	for (uint64_t lo = 0; lo < (uint64_t)st.st_size; lo += FL_UW_WIN_BYTES) {
		if (fl_cfitable_src__range(srcs[0], lo, lo + FL_UW_WIN_BYTES, &part) == 0) {
			ok++;
			fl_cfitable__fini(&part);
		}
		if (fl_cfitable_src__range(srcs[1], lo, lo + FL_UW_WIN_BYTES, &part) == 0) {
			ok_hdr++;
			fl_cfitable__fini(&part);
		}
	}
	assert_true(ok > 0);
	assert_int_equal(ok_hdr, ok);
	/* Overwritten with noise, then cut to half, then to nothing. */
	srand(20);
	for (int round = 0; round < 3; round++) {
		size_t rows = 0;

		if (round == 0) {
			char buf[4096];

			for (off_t off = 0; off < st.st_size; off += (off_t)sizeof(buf)) {
				for (size_t i = 0; i < sizeof(buf); i++)
					buf[i] = (char)rand();
				assert_true(pwrite(fd, buf, sizeof(buf), off) > 0);
			}
		} else {
			assert_int_equal(ftruncate(fd, round == 1 ? st.st_size / 2 : 0), 0);
		}
		for (int k = 0; k < 2; k++) {
			failed = 0;
			rows = 0;
			for (uint64_t lo = 0; lo < (uint64_t)st.st_size; lo += FL_UW_WIN_BYTES) {
				int err = fl_cfitable_src__range(srcs[k], lo, lo + FL_UW_WIN_BYTES,
								 &part);

				if (err) {
					failed++;
					continue;
				}
				rows += part.nr;
				fl_cfitable__fini(&part);
			}
			print_message("%s changed (%d)%s: %zu windows with rows before, %zu fail "
				      "now, %zu rows\n",
				      path, round, k ? ", indexed by .eh_frame_hdr" : "", ok, failed,
				      rows);
			if (round == 2)
				assert_int_equal(failed,
						 ((uint64_t)st.st_size + FL_UW_WIN_BYTES - 1) /
							 FL_UW_WIN_BYTES);
		}
	}
	fl_cfitable_src__free(srcs[0]);
	fl_cfitable_src__free(srcs[1]);
	close(fd);
}

/*
 * Tables of every size around the pages' edges (one row, a page of rows
 * and one more, a full index), with pcs a few bytes apart, laid out and
 * searched as the walker does; more rows than a page of index covers are
 * refused.
 */
static void test_paged_layout(void **state)
{
	static const uint32_t sizes[] = {
		1, 2, 3, 255, 256, 257, 511, 512, 513, 1000, 65536, 65537,
		FL_UW_TABLE_MAX_ROWS - 1, FL_UW_TABLE_MAX_ROWS,
	};
	struct fl_cfitable t = {0};
	union fl_uw_page page;
	uint32_t pc;

	(void)state;
	srand(15);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		t.nr = sizes[k];
		t.rows = calloc(t.nr, sizeof(*t.rows));
		assert_non_null(t.rows);
		pc = 16 + (uint32_t)(rand() % 8);
		for (size_t i = 0; i < t.nr; i++) {
			t.rows[i].pc = pc;
			t.rows[i].cfa_type = i + 1 == t.nr ? FL_CFA_NONE : FL_CFA_RSP;
			t.rows[i].cfa_off = (int32_t)i;
			pc += 1 + (uint32_t)(rand() % 5);
		}
		expect_paged(&t, "made-up");
		free(t.rows);
	}
	memset(&page, 0, sizeof(page));
	assert_null(fl_ktables_find(&page, FL_UW_TABLE_MAX_ROWS + 1, 0));
	assert_null(fl_ktables_find(&page, 0, 0));
}

/* --- made-up CFI ------------------------------------------------------------------- */

/*
 * A small x86-64 ELF image with CFI written by hand: .text of text_size
 * bytes at vaddr and offset TEXT (one executable PT_LOAD), .eh_frame
 * and/or .debug_frame after it.
 */
#define TEXT 0x1000u
#define EH_ADDR 0x100000u /* .eh_frame's address (no segment: libdw reads it by section) */

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void put_u8(struct buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put_u32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put_u64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void patch_u32(struct buf *b, size_t at, uint32_t v)
{
	memcpy(b->p + at, &v, 4);
}

struct synth {
	struct buf eh, dbg;
	uint64_t text_size;
	/* Knobs for hostile headers. */
	uint16_t machine;
	uint64_t seg_offset; /* the PT_LOAD's p_offset (normally TEXT) */
	uint64_t eh_size;    /* .eh_frame's sh_size, if not 0 */
	bool ref_differs;    /* libdw's engine gives other rows: the test compares them itself */
};

static void synth_init(struct synth *s)
{
	memset(s, 0, sizeof(*s));
	s->text_size = 0x2000;
	s->machine = EM_X86_64;
	s->seg_offset = TEXT;
}

static void synth_free(struct synth *s)
{
	free(s->eh.p);
	free(s->dbg.p);
}

/* Pads an entry begun at start with DW_CFA_nop to a multiple of 8 and writes its length. */
static void entry_end(struct buf *b, size_t start)
{
	while ((b->n - start) % 8)
		put_u8(b, DW_CFA_nop);
	patch_u32(b, start, (uint32_t)(b->n - start - 4));
}

/*
 * A CIE (code alignment 1, data alignment -8, return address column 16)
 * with the usual initial rules, CFA rsp + 8 and the return address at
 * CFA - 8, then ins. .eh_frame's have augmentation aug ("zR" or "zRS",
 * pointers pcrel sdata4); .debug_frame's none. Returns its offset.
 * synth_cie_as() leaves out the usual rules unless usual.
 */
static size_t synth_cie_as(struct synth *s, bool dbg, const char *aug, bool usual,
			   const uint8_t *ins, size_t n)
{
	static const uint8_t initial[] = {DW_CFA_def_cfa, 7, 8, DW_CFA_offset | 16, 1};
	struct buf *b = dbg ? &s->dbg : &s->eh;
	size_t start = b->n;

	put_u32(b, 0);
	put_u32(b, dbg ? 0xffffffffu : 0);
	put_u8(b, 1); /* version */
	if (dbg)
		aug = "";
	put(b, aug, strlen(aug) + 1);
	put_u8(b, 1);	 /* code alignment */
	put_u8(b, 0x78); /* data alignment -8 */
	put_u8(b, 16);	 /* return address column */
	if (aug[0] == 'z') {
		put_u8(b, 1);	 /* augmentation data */
		put_u8(b, 0x1b); /* DW_EH_PE_pcrel | DW_EH_PE_sdata4 */
	}
	if (usual)
		put(b, initial, sizeof(initial));
	put(b, ins, n);
	entry_end(b, start);
	return start;
}

static size_t synth_cie(struct synth *s, bool dbg, const char *aug, const uint8_t *ins, size_t n)
{
	return synth_cie_as(s, dbg, aug, true, ins, n);
}

/* An FDE of the CIE at cie for [lo, lo + len) (addresses of the file) with instructions ins. */
static void synth_fde(struct synth *s, bool dbg, size_t cie, uint64_t lo, uint64_t len,
		      const uint8_t *ins, size_t n)
{
	struct buf *b = dbg ? &s->dbg : &s->eh;
	size_t start = b->n;

	put_u32(b, 0);
	if (dbg) {
		put_u32(b, (uint32_t)cie);
		put_u64(b, lo);
		put_u64(b, len);
	} else {
		put_u32(b, (uint32_t)(b->n - cie)); /* back to the CIE from this field */
		put_u32(b, (uint32_t)(lo - (EH_ADDR + b->n)));
		put_u32(b, (uint32_t)len);
		put_u8(b, 0); /* no augmentation data */
	}
	put(b, ins, n);
	entry_end(b, start);
}

/* The image, in a buffer the caller frees; its size in *size. */
static uint8_t *synth_image(struct synth *s, size_t *size)
{
	static const char names[] = "\0.text\0.eh_frame\0.debug_frame\0.shstrtab";
	const size_t text_off = TEXT, eh_off = TEXT + s->text_size;
	const size_t dbg_off = eh_off + s->eh.n + 4, names_off = dbg_off + s->dbg.n;
	const size_t sh_off = (names_off + sizeof(names) + 7) & ~(size_t)7;
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Shdr *sh;
	size_t nsh = 1;
	uint8_t *img;

	*size = sh_off + 5 * sizeof(*sh);
	img = calloc(1, *size);
	assert_non_null(img);
	eh = (Elf64_Ehdr *)img;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = s->machine;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_shoff = sh_off;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(*sh);
	ph = (Elf64_Phdr *)(img + sizeof(*eh));
	*ph = (Elf64_Phdr){.p_type = PT_LOAD,
			   .p_flags = PF_R | PF_X,
			   .p_offset = s->seg_offset,
			   .p_vaddr = TEXT,
			   .p_paddr = TEXT,
			   .p_filesz = s->text_size,
			   .p_memsz = s->text_size,
			   .p_align = 0x1000};
	/* (An empty section has no buffer: nothing to copy.) */
	if (s->eh.n)
		memcpy(img + eh_off, s->eh.p, s->eh.n); /* then .eh_frame's zero terminator */
	if (s->dbg.n)
		memcpy(img + dbg_off, s->dbg.p, s->dbg.n);
	memcpy(img + names_off, names, sizeof(names));
	sh = (Elf64_Shdr *)(img + sh_off);
	sh[nsh++] = (Elf64_Shdr){.sh_name = 1,
				 .sh_type = SHT_PROGBITS,
				 .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
				 .sh_addr = TEXT,
				 .sh_offset = text_off,
				 .sh_size = s->text_size,
				 .sh_addralign = 16};
	if (s->eh.n)
		sh[nsh++] = (Elf64_Shdr){.sh_name = 7,
					 .sh_type = SHT_PROGBITS,
					 .sh_flags = SHF_ALLOC,
					 .sh_addr = EH_ADDR,
					 .sh_offset = eh_off,
					 .sh_size = s->eh_size ? s->eh_size : s->eh.n + 4,
					 .sh_addralign = 8};
	if (s->dbg.n)
		sh[nsh++] = (Elf64_Shdr){.sh_name = 17,
					 .sh_type = SHT_PROGBITS,
					 .sh_offset = dbg_off,
					 .sh_size = s->dbg.n,
					 .sh_addralign = 8};
	sh[nsh] = (Elf64_Shdr){.sh_name = 30,
			       .sh_type = SHT_STRTAB,
			       .sh_offset = names_off,
			       .sh_size = sizeof(names),
			       .sh_addralign = 1};
	eh->e_shstrndx = (uint16_t)nsh;
	eh->e_shnum = (uint16_t)(nsh + 1);
	return img;
}

/*
 * The image's table, through an fd (a memfd) or from memory, and both must
 * agree, and with libdw's engine (unless s->ref_differs).
 */
static int synth_table(struct synth *s, struct fl_cfitable *t)
{
	struct fl_cfitable tm, ref;
	size_t size;
	uint8_t *img = synth_image(s, &size);
	int fd = memfd_create("synth", MFD_CLOEXEC), err, err_mem, err_ref;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, size), (ssize_t)size);
	err = fl_cfitable__from_fd(fd, t);
	close(fd);
	err_mem = fl_cfitable__from_memory(img, size, &tm);
	err_ref = fl_cfitable__from_memory_libdw(img, size, &ref);
	free(img);
	assert_int_equal(err, err_mem);
	assert_int_equal(err, err_ref);
	if (!err) {
		check_table(t);
		assert_int_equal(t->nr, tm.nr);
		assert_memory_equal(t->rows, tm.rows, t->nr * sizeof(*t->rows));
		fl_cfitable__fini(&tm);
		if (!s->ref_differs)
			expect_same_tables(t, &ref, "made-up image");
		fl_cfitable__fini(&ref);
	}
	return err;
}

/* The table of one FDE, [lo, lo + len) with n bytes of instructions, under a plain CIE. */
static int synth_one_fde(struct synth *s, uint64_t lo, uint64_t len, const uint8_t *ins,
			 size_t n, struct fl_cfitable *t)
{
	size_t cie;

	synth_init(s);
	cie = synth_cie(s, false, "zR", NULL, 0);
	synth_fde(s, false, cie, lo, len, ins, n);
	return synth_table(s, t);
}

/*
 * A code section's first byte that no FDE covers (crti.o's _init) gets the
 * rule of a function's entry, one byte long; one an FDE covers keeps the
 * FDE's. (test_ranges_real checks ranges against whole tables of real
 * files, which have them.)
 */
static void test_synth_code_start(void **state)
{
	static const uint8_t cfa16[] = {DW_CFA_def_cfa_offset, 16};
	struct fl_cfitable t;
	struct synth s;

	(void)state;
	/* .text starts at TEXT: the FDE at TEXT + 0x10 leaves its first bytes without CFI. */
	assert_int_equal(synth_one_fde(&s, TEXT + 0x10, 0x20, cfa16, sizeof(cfa16), &t), 0);
	expect_row(&t, TEXT, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_type(&t, TEXT + 1, FL_CFA_NONE);
	expect_type(&t, TEXT + 0xf, FL_CFA_NONE);
	expect_row(&t, TEXT + 0x10, FL_CFA_RSP, 16, FL_RBP_SAME, 0, -8);
	/* Not an FDE read. */
	assert_int_equal(t.counts.fdes, 1);
	fl_cfitable__fini(&t);
	synth_free(&s);

	/* An FDE at TEXT: its rule there, not the entry's. */
	assert_int_equal(synth_one_fde(&s, TEXT, 0x20, cfa16, sizeof(cfa16), &t), 0);
	expect_row(&t, TEXT, FL_CFA_RSP, 16, FL_RBP_SAME, 0, -8);
	expect_row(&t, TEXT + 1, FL_CFA_RSP, 16, FL_RBP_SAME, 0, -8);
	fl_cfitable__fini(&t);
	synth_free(&s);
}

/* Every rule shape the walker evaluates, and some it does not. */
static void test_synth_rules(void **state)
{
	/* push %rbp; mov %rsp, %rbp; DRAP; r10-based CFA; rbp in a register; ... */
	static const uint8_t f1[] = {
		DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_offset | 6, 2,
		DW_CFA_advance_loc | 3, DW_CFA_def_cfa_register, 6,
		/* 0x1014: cfa = *(rbp - 8), rbp saved at rbp + 0 */
		DW_CFA_advance_loc | 0x10, DW_CFA_def_cfa_expression, 3, DW_OP_breg6, 0x78,
		DW_OP_deref, DW_CFA_expression, 6, 2, DW_OP_breg6, 0,
		/* 0x1024: cfa = r10 + 0 */
		DW_CFA_advance_loc | 0x10, DW_CFA_def_cfa, 10, 0,
		/* 0x102c: cfa = rsp + 24, rbp kept in rbx */
		DW_CFA_advance_loc | 8, DW_CFA_def_cfa, 7, 24, DW_CFA_register, 6, 3,
		/* 0x1034: cfa = rsp + 16, rbp saved at rsp + 8 (CFA - 8) */
		DW_CFA_advance_loc | 8, DW_CFA_def_cfa_offset, 16, DW_CFA_expression, 6, 2,
		DW_OP_breg7, 8,
		/* 0x1038: the return address kept in rcx */
		DW_CFA_advance_loc | 4, DW_CFA_register, 16, 2,
		/* 0x103c: the return address undefined */
		DW_CFA_advance_loc | 4, DW_CFA_undefined, 16};
	/* binutils' lazy PLT: PLT0 pushes twice, the entries' CFA depends on rip. */
	static const uint8_t plt[] = {/* 0x1100: rsp + 16, 0x1106: rsp + 24 */
				      DW_CFA_def_cfa_offset, 16, DW_CFA_advance_loc | 6,
				      DW_CFA_def_cfa_offset, 24,
				      /* 0x1110: rsp + 8 + ((rip & 15) >= 11) << 3 */
				      DW_CFA_advance_loc | 10, DW_CFA_def_cfa_expression, 11,
				      DW_OP_breg7, 8, DW_OP_breg16, 0, DW_OP_lit15, DW_OP_and,
				      DW_OP_lit11, DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus};
	/* glibc's __restore_rt (part of it): registers at rsp + their place in the ucontext. */
	static const uint8_t sig[] = {
		/* cfa = *(rsp + 160) */
		DW_CFA_def_cfa_expression, 4, DW_OP_breg7, 0xa0, 0x01, DW_OP_deref,
		/* rbp at rsp + 120, rsp at rsp + 160, rip at rsp + 168, rbx at rsp + 128 */
		DW_CFA_expression, 6, 3, DW_OP_breg7, 0xf8, 0x00, DW_CFA_expression, 7, 3,
		DW_OP_breg7, 0xa0, 0x01, DW_CFA_expression, 16, 3, DW_OP_breg7, 0xa8, 0x01,
		DW_CFA_expression, 3, 3, DW_OP_breg7, 0x80, 0x01};
	/* Other registers' rules: kept as FL_CFA_REG rows where they are register + N. */
	static const uint8_t regs[] = {
		/* 0x1400: cfa = r11 + 536632 (LLVM's stack-probe loop in a 524 KiB frame) */
		DW_CFA_def_cfa, 11, 0xb8, 0xe0, 0x20,
		/* 0x1408: cfa = *(r11 + 8): no row holds it */
		DW_CFA_advance_loc | 8, DW_CFA_def_cfa_expression, 3, DW_OP_breg11, 8, DW_OP_deref,
		/* 0x1410: cfa = rbx + 2^31: past cfa_off's 32 bits */
		DW_CFA_advance_loc | 8, DW_CFA_def_cfa, 3, 0x80, 0x80, 0x80, 0x80, 0x08};
	/* The return address saved at CFA - 32768: an offset that would read as FL_RA_REG + 0. */
	static const uint8_t far_ra[] = {DW_CFA_offset | 16, 0x80, 0x20};
	struct fl_cfitable t;
	struct synth s;
	size_t cie, cie_s;

	(void)state;
	synth_init(&s);
	cie = synth_cie(&s, false, "zR", NULL, 0);
	cie_s = synth_cie(&s, false, "zRS", NULL, 0);
	synth_fde(&s, false, cie, 0x1000, 0x40, f1, sizeof(f1));
	synth_fde(&s, false, cie, 0x1100, 0x60, plt, sizeof(plt));
	synth_fde(&s, false, cie_s, 0x1200, 0x10, sig, sizeof(sig));
	/* A signal frame with ordinary rules: its next pc would not be exact. */
	synth_fde(&s, false, cie_s, 0x1300, 0x10, NULL, 0);
	synth_fde(&s, false, cie, 0x1400, 0x20, regs, sizeof(regs));
	synth_fde(&s, false, cie, 0x1480, 0x10, far_ra, sizeof(far_ra));
	assert_int_equal(synth_table(&s, &t), 0);

	assert_null(fl_cfitable__find(&t, 0xfff));
	expect_row(&t, 0x1000, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x1001, FL_CFA_RSP, 16, FL_RBP_AT_CFA, -16, -8);
	expect_row(&t, 0x1004, FL_CFA_RBP, 16, FL_RBP_AT_CFA, -16, -8);
	expect_row(&t, 0x1013, FL_CFA_RBP, 16, FL_RBP_AT_CFA, -16, -8);
	expect_row(&t, 0x1014, FL_CFA_DEREF_RBP, -8, FL_RBP_AT_RBP, 0, -8);
	expect_row(&t, 0x1024, FL_CFA_REG + 10, 0, FL_RBP_AT_RBP, 0, -8);
	expect_row(&t, 0x102c, FL_CFA_UNSUPPORTED, 0, 0, 0, 0);
	expect_row(&t, 0x1034, FL_CFA_RSP, 16, FL_RBP_AT_CFA, -8, -8);
	/* In a register: a row all the same (__vfork's), taken in the sampled frame only. */
	expect_row(&t, 0x1038, FL_CFA_RSP, 16, FL_RBP_AT_CFA, -8, FL_RA_REG + 2);
	expect_row(&t, 0x103c, FL_CFA_OUTERMOST, 0, 0, 0, 0);
	expect_row(&t, 0x103f, FL_CFA_OUTERMOST, 0, 0, 0, 0);
	expect_type(&t, 0x1040, FL_CFA_NONE); /* the gap to the next FDE */
	expect_type(&t, 0x10ff, FL_CFA_NONE);
	expect_row(&t, 0x1100, FL_CFA_RSP, 16, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x1106, FL_CFA_RSP, 24, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x1110, FL_CFA_PLT, 8, FL_RBP_SAME, 11, -8);
	expect_row(&t, 0x115f, FL_CFA_PLT, 8, FL_RBP_SAME, 11, -8);
	expect_row(&t, 0x1200, FL_CFA_SIGNAL, 160, FL_RBP_SAME, 120, 168);
	expect_rbx(&t, 0x1200, 128);
	expect_row(&t, 0x1300, FL_CFA_UNSUPPORTED, 0, 0, 0, 0);
	expect_type(&t, 0x1310, FL_CFA_NONE);
	expect_row(&t, 0x1400, FL_CFA_REG + 11, 536632, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x1407, FL_CFA_REG + 11, 536632, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x1408, FL_CFA_UNSUPPORTED, 0, 0, 0, 0);
	expect_row(&t, 0x141f, FL_CFA_UNSUPPORTED, 0, 0, 0, 0);
	expect_type(&t, 0x1420, FL_CFA_NONE);
	expect_row(&t, 0x1480, FL_CFA_UNSUPPORTED, 0, 0, 0, 0);
	expect_type(&t, 0x1490, FL_CFA_NONE);
	assert_int_equal(t.rows[t.nr - 1].pc, 0x1490);

	assert_int_equal(t.counts.fdes, 6);
	assert_int_equal(t.counts.rows[FL_CFITABLE_ROWS_REG], 2);
	assert_int_equal(t.counts.unsupported[FL_CFITABLE_WHY_CFA], 2);
	assert_int_equal(t.counts.unsupported[FL_CFITABLE_WHY_RBP], 1);
	assert_int_equal(t.counts.unsupported[FL_CFITABLE_WHY_RA], 1);
	assert_int_equal(t.counts.unsupported[FL_CFITABLE_WHY_SIGNAL], 1);
	assert_int_equal(t.counts.unsupported[FL_CFITABLE_WHY_LIBDW], 0);
	assert_int_equal(t.code_bytes, s.text_size);
	fl_cfitable__fini(&t);
	synth_free(&s);
}

/*
 * rbx's rules: followed where it is unchanged or saved at the CFA (or rsp)
 * plus N, unknown for any other rule, and never a reason to fail a row.
 */
static void test_synth_rbx(void **state)
{
	static const uint8_t f[] = {
		/* 0x1501: push %rbx */
		DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_offset | 3, 2,
		/* 0x1505: cfa = rbx + 16 (_dl_runtime_resolve's mov %rsp, %rbx) */
		DW_CFA_advance_loc | 4, DW_CFA_def_cfa_register, 3,
		/* 0x1509: cfa = rsp + 16, rbx saved at rsp + 8 */
		DW_CFA_advance_loc | 4, DW_CFA_def_cfa, 7, 16, DW_CFA_expression, 3, 2, DW_OP_breg7, 8,
		/* 0x150d: rbx kept in r12 */
		DW_CFA_advance_loc | 4, DW_CFA_register, 3, 12,
		/* 0x1511: rbx at CFA - 40000, past 16 bits */
		DW_CFA_advance_loc | 4, DW_CFA_offset | 3, 0x88, 0x27,
		/* 0x1515: rbx at *(rsp + 8) (an expression no row holds) */
		DW_CFA_advance_loc | 4, DW_CFA_expression, 3, 3, DW_OP_breg7, 8, DW_OP_deref,
		/* 0x1519: restored (the CIE's rule: same value) */
		DW_CFA_advance_loc | 4, DW_CFA_restore | 3};
	struct fl_cfitable t;
	struct synth s;

	(void)state;
	assert_int_equal(synth_one_fde(&s, 0x1500, 0x20, f, sizeof(f), &t), 0);
	check_table(&t);
	expect_row(&t, 0x1500, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_rbx(&t, 0x1500, FL_RBX_SAME);
	expect_row(&t, 0x1501, FL_CFA_RSP, 16, FL_RBP_SAME, 0, -8);
	expect_rbx(&t, 0x1501, -16);
	expect_row(&t, 0x1505, FL_CFA_REG + 3, 16, FL_RBP_SAME, 0, -8);
	expect_rbx(&t, 0x1505, -16);
	expect_row(&t, 0x1509, FL_CFA_RSP, 16, FL_RBP_SAME, 0, -8);
	expect_rbx(&t, 0x1509, -8);
	expect_row(&t, 0x150d, FL_CFA_RSP, 16, FL_RBP_SAME, 0, -8);
	expect_rbx(&t, 0x150d, FL_RBX_UNKNOWN);
	expect_rbx(&t, 0x1511, FL_RBX_UNKNOWN);
	expect_rbx(&t, 0x1515, FL_RBX_UNKNOWN);
	expect_row(&t, 0x1519, FL_CFA_RSP, 16, FL_RBP_SAME, 0, -8);
	expect_rbx(&t, 0x1519, FL_RBX_SAME);
	/* Three rules of rbx in a row, all unknown, are one row. */
	assert_ptr_equal(fl_cfitable__find(&t, 0x1511), fl_cfitable__find(&t, 0x150d));
	assert_ptr_equal(fl_cfitable__find(&t, 0x1515), fl_cfitable__find(&t, 0x150d));
	assert_int_equal(t.counts.unsupported[FL_CFITABLE_WHY_CFA] +
			 t.counts.unsupported[FL_CFITABLE_WHY_RBP] +
			 t.counts.unsupported[FL_CFITABLE_WHY_RA],
		 0);
	fl_cfitable__fini(&t);
	synth_free(&s);
}

/*
 * Rows with one rule are one: a row that only saves a register no row
 * follows (r12), and two FDEs end to end with the same rule, add none.
 */
static void test_synth_merge(void **state)
{
	static const uint8_t save_r12[] = {DW_CFA_advance_loc | 4, DW_CFA_offset | 12, 2};
	struct fl_cfitable t;
	struct synth s;
	size_t cie;

	(void)state;
	synth_init(&s);
	cie = synth_cie(&s, false, "zR", NULL, 0);
	synth_fde(&s, false, cie, 0x1000, 0x20, save_r12, sizeof(save_r12));
	synth_fde(&s, false, cie, 0x1020, 0x10, NULL, 0);
	assert_int_equal(synth_table(&s, &t), 0);
	assert_int_equal(t.nr, 2);
	assert_int_equal(t.rows[0].pc, 0x1000);
	assert_int_equal(t.rows[1].pc, 0x1030);
	assert_int_equal(t.counts.cfi_rows, 3);
	fl_cfitable__fini(&t);
	synth_free(&s);
}

/*
 * gcc's early return: remember the state, pop the frame, ret, restore it.
 * libdw says the restored row starts where the remembered one did; the
 * table must still have it start where it does.
 */
static void test_synth_restore_state(void **state)
{
	static const uint8_t f[] = {DW_CFA_advance_loc | 7,
				    DW_CFA_def_cfa_offset,
				    0xd0,
				    0x02,
				    DW_CFA_advance_loc | 0x10,
				    DW_CFA_remember_state,
				    DW_CFA_def_cfa_offset,
				    8,
				    DW_CFA_advance_loc | 5,
				    DW_CFA_restore_state};
	struct fl_cfitable t;
	struct synth s;

	(void)state;
	assert_int_equal(synth_one_fde(&s, 0x1000, 0x40, f, sizeof(f), &t), 0);
	assert_int_equal(t.nr, 5);
	expect_row(&t, 0x1000, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x1007, FL_CFA_RSP, 336, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x1017, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x101b, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x101c, FL_CFA_RSP, 336, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x103f, FL_CFA_RSP, 336, FL_RBP_SAME, 0, -8);
	expect_type(&t, 0x1040, FL_CFA_NONE);
	assert_int_equal(t.counts.unsupported[FL_CFITABLE_WHY_LIBDW], 0);
	fl_cfitable__fini(&t);
	synth_free(&s);
}

/*
 * Overlapping FDEs: .eh_frame's before .debug_frame's, then the one that
 * starts last, then the first; outside the overlaps each FDE keeps its
 * own rows. The table is the same every time.
 */
static void test_synth_overlap(void **state)
{
	static const uint8_t cfa32[] = {DW_CFA_def_cfa_offset, 32};
	static const uint8_t cfa48[] = {DW_CFA_def_cfa_offset, 48};
	static const uint8_t cfa64[] = {DW_CFA_def_cfa_offset, 64};
	static const uint8_t cfa40[] = {DW_CFA_def_cfa_offset, 40};
	struct fl_cfitable t, again, ref;
	struct synth s;
	size_t cie, dcie, size;
	uint8_t *img;

	(void)state;
	synth_init(&s);
	s.ref_differs = true;
	cie = synth_cie(&s, false, "zR", NULL, 0);
	dcie = synth_cie(&s, true, "", NULL, 0);
	synth_fde(&s, false, cie, 0x1000, 0x100, NULL, 0);		/* A: rsp + 8 */
	synth_fde(&s, false, cie, 0x1040, 0x40, cfa32, sizeof(cfa32));	/* B inside A */
	synth_fde(&s, false, cie, 0x10f0, 0x110, cfa48, sizeof(cfa48)); /* C across A's end */
	synth_fde(&s, false, cie, 0x1000, 0x100, cfa64, sizeof(cfa64)); /* A again, later */
	synth_fde(&s, true, dcie, 0x1000, 0x100, cfa64, sizeof(cfa64)); /* A in .debug_frame */
	synth_fde(&s, true, dcie, 0x1400, 0x10, cfa40, sizeof(cfa40));	/* .debug_frame alone */
	synth_fde(&s, false, cie, 0x1500, 0, NULL, 0);			/* empty */
	synth_fde(&s, false, cie, 0x9000, 0x10, NULL, 0);		/* outside the code */
	assert_int_equal(synth_table(&s, &t), 0);
	assert_int_equal(synth_table(&s, &again), 0);
	assert_int_equal(t.nr, again.nr);
	assert_memory_equal(t.rows, again.rows, t.nr * sizeof(*t.rows));

	expect_row(&t, 0x1000, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x103f, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	/* B wins over A; C over A where they overlap: each FDE's own rows. */
	expect_row(&t, 0x1040, FL_CFA_RSP, 32, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x107f, FL_CFA_RSP, 32, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x1080, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x10ef, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x10f0, FL_CFA_RSP, 48, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x1100, FL_CFA_RSP, 48, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x11ff, FL_CFA_RSP, 48, FL_RBP_SAME, 0, -8);
	expect_type(&t, 0x1200, FL_CFA_NONE);
	expect_row(&t, 0x1400, FL_CFA_RSP, 40, FL_RBP_SAME, 0, -8);
	expect_type(&t, 0x1410, FL_CFA_NONE);
	assert_int_equal(t.rows[t.nr - 1].pc, 0x1410);
	assert_int_equal(t.counts.fdes, 8);
	assert_int_equal(t.counts.fdes_debug_frame, 2);
	assert_int_equal(t.counts.fdes_unused, 2);
	assert_int_equal(t.counts.unsupported[FL_CFITABLE_WHY_LIBDW], 0);

	/*
	 * libdw's engine: without .eh_frame_hdr, libdw answers for B's and C's
	 * bytes from A (the first FDE covering them), which that engine will
	 * not take for theirs: unsupported there, the rest the same.
	 */
	img = synth_image(&s, &size);
	assert_int_equal(fl_cfitable__from_memory_libdw(img, size, &ref), 0);
	free(img);
	for (uint64_t pc = TEXT; pc < TEXT + s.text_size; pc++) {
		const struct fl_uw_row *a = fl_cfitable__find(&t, pc),
				       *b = fl_cfitable__find(&ref, pc);

		if ((pc >= 0x1040 && pc < 0x1080) || (pc >= 0x10f0 && pc < 0x1200))
			assert_true(same_rule(a, b) || b->cfa_type == FL_CFA_UNSUPPORTED);
		else if (a || b)
			assert_true(a && b && same_rule(a, b));
	}
	fl_cfitable__fini(&ref);
	fl_cfitable__fini(&again);
	fl_cfitable__fini(&t);

	/* In ranges, from a file: the same winners where FDEs overlap, and cuts in every FDE. */
	{
		char path[] = "/tmp/flamed-cfitable-XXXXXX";
		int fd = mkstemp(path);

		assert_true(fd >= 0);
		unlink(path);
		img = synth_image(&s, &size);
		assert_int_equal(write(fd, img, size), (ssize_t)size);
		free(img);
		for (uint64_t step = 1; step <= 0x200; step *= 2)
			assert_true(expect_ranges(fd, "overlap", step) > 0);
		close(fd);
	}
	synth_free(&s);
}

/* The rule of the work-bound FDE at pc (TEXT + 1 + i starts its row i). */
static int work_fde_cfa(uint64_t pc)
{
	return pc == TEXT ? 8 : ((pc - TEXT - 1) & 1 ? 16 : 24);
}

/*
 * An FDE of a hundred thousand rows: libdw's engine's work on it is
 * quadratic, bounded, and its rows past the bound are unsupported; the
 * interpreter's is linear and it compiles them all. That is the only
 * difference between the two tables.
 */
static void test_synth_work_bound(void **state)
{
	struct fl_cfitable t, ref;
	struct synth s;
	struct buf ins = {0};
	struct timespec t0, t1;
	uint64_t cut = 0;
	uint8_t *img;
	size_t cie, size;
	double secs;

	(void)state;
	synth_init(&s);
	s.text_size = 0x20000;
	s.ref_differs = true;
	for (unsigned i = 0; i < 100000; i++) {
		uint8_t row[] = {DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, i & 1 ? 16 : 24};

		put(&ins, row, sizeof(row));
	}
	cie = synth_cie(&s, false, "zR", NULL, 0);
	synth_fde(&s, false, cie, TEXT, 100000 + 1, ins.p, ins.n);
	synth_fde(&s, false, cie, TEXT + 0x1f000, 0x10, NULL, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(synth_table(&s, &t), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	print_message("an FDE of 100000 rows: %.2f s for three compiles (one libdw's), %llu rows\n",
		      secs, (unsigned long long)t.counts.cfi_rows);
	assert_true(secs < 30);
	/* Every row, and the small FDE after. */
	assert_int_equal(t.counts.unsupported[FL_CFITABLE_WHY_WORK], 0);
	assert_int_equal(t.counts.cfi_rows, 100001 + 1);
	for (uint64_t pc = TEXT; pc < TEXT + 100001; pc++)
		expect_row(&t, pc, FL_CFA_RSP, work_fde_cfa(pc), FL_RBP_SAME, 0, -8);
	expect_type(&t, TEXT + 100001, FL_CFA_NONE);
	expect_row(&t, TEXT + 0x1f000, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);

	/* libdw's engine: the same rows up to the bound, then one unsupported row to the end. */
	img = synth_image(&s, &size);
	assert_int_equal(fl_cfitable__from_memory_libdw(img, size, &ref), 0);
	free(img);
	assert_int_equal(ref.counts.unsupported[FL_CFITABLE_WHY_WORK], 1);
	assert_true(ref.counts.cfi_rows < 100000);
	for (uint64_t pc = TEXT; pc < TEXT + 0x20000; pc++) {
		const struct fl_uw_row *a = fl_cfitable__find(&t, pc),
				       *b = fl_cfitable__find(&ref, pc);

		if (b->cfa_type == FL_CFA_UNSUPPORTED) {
			assert_true(pc < TEXT + 100001);
			if (!cut)
				cut = pc;
			continue;
		}
		assert_true(!cut || pc >= TEXT + 100001);
		assert_true(same_rule(a, b));
	}
	assert_true(cut > TEXT + 2);
	assert_int_equal(ref.counts.cfi_rows, cut - TEXT + 1);
	fl_cfitable__fini(&ref);
	fl_cfitable__fini(&t);
	free(ins.p);
	synth_free(&s);
}

/*
 * remember_state nested deeper than the interpreter keeps (32): its rows
 * end there, unsupported; libdw's engine has no bound, and differs.
 */
static void test_synth_deep_state(void **state)
{
	struct fl_cfitable t;
	struct synth s;
	uint8_t f[64];
	size_t n = 0, cie;

	(void)state;
	f[n++] = DW_CFA_advance_loc | 1;
	f[n++] = DW_CFA_def_cfa_offset;
	f[n++] = 16;
	f[n++] = DW_CFA_advance_loc | 1;
	for (int i = 0; i < 40; i++)
		f[n++] = DW_CFA_remember_state;
	f[n++] = DW_CFA_advance_loc | 1;
	synth_init(&s);
	s.ref_differs = true;
	cie = synth_cie(&s, false, "zR", NULL, 0);
	synth_fde(&s, false, cie, 0x1000, 0x10, f, n);
	assert_int_equal(synth_table(&s, &t), 0);
	expect_row(&t, 0x1000, FL_CFA_RSP, 8, FL_RBP_SAME, 0, -8);
	expect_row(&t, 0x1001, FL_CFA_RSP, 16, FL_RBP_SAME, 0, -8);
	expect_type(&t, 0x1002, FL_CFA_UNSUPPORTED);
	expect_type(&t, 0x100f, FL_CFA_UNSUPPORTED);
	assert_int_equal(t.counts.unsupported[FL_CFITABLE_WHY_LIBDW], 1);
	fl_cfitable__fini(&t);
	synth_free(&s);
}

/* Headers that say "not for this walker" or "too big". */
static void test_synth_refused(void **state)
{
	struct fl_cfitable t;
	struct synth s;
	size_t cie;

	(void)state;
	assert_int_equal(synth_one_fde(&s, 0x1000, 0x10, NULL, 0, &t), 0);
	fl_cfitable__fini(&t);

	s.machine = EM_AARCH64;
	assert_int_equal(synth_table(&s, &t), -ENOTSUP);
	s.machine = EM_X86_64;

	/* Code at file offsets past 4 GiB: the walker's pcs are 32 bits. */
	s.seg_offset = (uint64_t)1 << 32;
	assert_int_equal(synth_table(&s, &t), -EFBIG);
	s.seg_offset = TEXT;

	/* An .eh_frame its header says is 300 MiB (a sparse file's would be): not read. */
	s.eh_size = (uint64_t)300 << 20;
	assert_int_equal(synth_table(&s, &t), -EFBIG);
	s.eh_size = 0;
	synth_free(&s);

	/* No CFI at all, or none for the code. */
	synth_init(&s);
	assert_int_equal(synth_table(&s, &t), -ENOENT);
	cie = synth_cie(&s, false, "zR", NULL, 0);
	synth_fde(&s, false, cie, 0x9000, 0x10, NULL, 0);
	assert_int_equal(synth_table(&s, &t), -ENOENT);
	synth_free(&s);
}

/* A generator for hostile bytes, the same every run. */
static uint64_t rnd(uint64_t *x)
{
	*x = *x * 6364136223846793005u + 1442695040888963407u;
	return *x >> 33;
}

/* Compiled corruptions, and of them those whose rows libdw's engine gives the same. */
struct hostile_counts {
	uint64_t ok, same;
};

/*
 * Whatever the bytes, the compiler returns a table that keeps its promises,
 * or an error. libdw's engine is not asked to agree on garbage (it answers
 * for a pc from whichever FDE its lookup finds, reads LEB128 numbers past
 * ten bytes...): the agreement is counted, not required.
 */
static void compile_any(const uint8_t *img, size_t size, struct hostile_counts *n)
{
	struct fl_cfitable t, ref;
	int err = fl_cfitable__from_memory(img, size, &t);

	if (err) {
		assert_true(err == -EINVAL || err == -ENOENT || err == -EFBIG || err == -ENOTSUP ||
			    err == -ENOMEM);
		return;
	}
	check_table(&t);
	if (!fl_cfitable__from_memory_libdw(img, size, &ref)) {
		n->same += ref.nr == t.nr && !memcmp(ref.rows, t.rows, t.nr * sizeof(*t.rows));
		fl_cfitable__fini(&ref);
	}
	fl_cfitable__fini(&t);
	n->ok++;
}

/* Expressions of DW_CFA_*expression: what cfitable.c matches, near misses, broken ones. */
static void put_rand_expr(struct buf *b, uint64_t *x)
{
	static const uint8_t exprs[][12] = {
		{0},
		{2, DW_OP_breg7, 8},
		{2, DW_OP_breg6, 0x70},
		{3, DW_OP_breg7, 0x10, DW_OP_deref},
		{3, DW_OP_breg6, 0x78, DW_OP_deref},
		{11, DW_OP_breg7, 8, DW_OP_breg16, 0, DW_OP_lit15, DW_OP_and, DW_OP_lit11, DW_OP_ge,
		 DW_OP_lit3, DW_OP_shl, DW_OP_plus},
		{11, DW_OP_breg7, 8, DW_OP_breg16, 0, DW_OP_const1u, 15, DW_OP_and, DW_OP_lit11,
		 DW_OP_ge, DW_OP_lit3, DW_OP_shl},
		{3, DW_OP_bregx, 6, 0x10},
		{2, DW_OP_plus_uconst, 16},
		{1, DW_OP_lit5},
		{1, DW_OP_call_frame_cfa},
		{2, DW_OP_breg7, DW_OP_dup},
		{2, DW_OP_breg7, 0x80}, /* its offset cut short */
		{4, DW_OP_breg7, 0xa0, 0x01, DW_OP_deref},
		{3, DW_OP_breg7, 0xf8, 0x00},
		{3, DW_OP_breg7, 0xa8, 0x01},
		{11, DW_OP_lit1, DW_OP_lit1, DW_OP_lit1, DW_OP_lit1, DW_OP_lit1, DW_OP_lit1,
		 DW_OP_lit1, DW_OP_lit1, DW_OP_lit1, DW_OP_lit1, DW_OP_lit1},
	};
	const uint8_t *e = exprs[rnd(x) % (sizeof(exprs) / sizeof(exprs[0]))];

	put(b, e, 1 + (size_t)e[0]);
}

/* One instruction of those compilers emit (and, rarely, one none does), with small operands. */
static void put_rand_ins(struct buf *b, uint64_t *x)
{
	static const uint8_t regs[] = {3, 6, 7, 16, 6, 16};
	uint8_t reg = regs[rnd(x) % sizeof(regs)], reg2 = regs[rnd(x) % sizeof(regs)];
	uint8_t small = (uint8_t)(rnd(x) % 0x40), s7 = (uint8_t)(rnd(x) % 0x80);

	switch (rnd(x) % 29) {
	case 0:
	case 1:
	case 2:
	case 3:
		put_u8(b, (uint8_t)(DW_CFA_advance_loc | (rnd(x) % 8)));
		break;
	case 4:
		put_u8(b, DW_CFA_advance_loc1);
		put_u8(b, (uint8_t)(rnd(x) % 40));
		break;
	case 5:
		put_u8(b, DW_CFA_advance_loc2);
		put_u8(b, (uint8_t)(rnd(x) % 40));
		put_u8(b, 0);
		break;
	case 6:
		put_u8(b, DW_CFA_def_cfa);
		put_u8(b, reg);
		put_u8(b, s7);
		break;
	case 7:
		put_u8(b, DW_CFA_def_cfa_sf);
		put_u8(b, reg);
		put_u8(b, s7);
		break;
	case 8:
	case 9:
		put_u8(b, DW_CFA_def_cfa_offset);
		put_u8(b, s7);
		break;
	case 10:
		put_u8(b, DW_CFA_def_cfa_offset_sf);
		put_u8(b, s7);
		break;
	case 11:
		put_u8(b, DW_CFA_def_cfa_register);
		put_u8(b, reg);
		break;
	case 12:
		put_u8(b, DW_CFA_def_cfa_expression);
		put_rand_expr(b, x);
		break;
	case 13:
	case 14:
		put_u8(b, (uint8_t)(DW_CFA_offset | reg));
		put_u8(b, small);
		break;
	case 15: {
		static const uint8_t ops[] = {DW_CFA_offset_extended, DW_CFA_offset_extended_sf,
					      DW_CFA_GNU_negative_offset_extended,
					      DW_CFA_val_offset, DW_CFA_val_offset_sf};

		put_u8(b, ops[rnd(x) % sizeof(ops)]);
		put_u8(b, reg);
		put_u8(b, s7);
		break;
	}
	case 16:
		put_u8(b, (uint8_t)(DW_CFA_restore | reg));
		break;
	case 17:
		put_u8(b, DW_CFA_restore_extended);
		put_u8(b, reg);
		break;
	case 18:
		put_u8(b, rnd(x) & 1 ? DW_CFA_undefined : DW_CFA_same_value);
		put_u8(b, reg);
		break;
	case 19:
		put_u8(b, DW_CFA_register);
		put_u8(b, reg);
		put_u8(b, reg2);
		break;
	case 20:
	case 21:
		put_u8(b, rnd(x) % 3 ? DW_CFA_expression : DW_CFA_val_expression);
		put_u8(b, reg);
		put_rand_expr(b, x);
		break;
	case 22:
		put_u8(b, DW_CFA_remember_state);
		break;
	case 23:
		put_u8(b, DW_CFA_restore_state);
		break;
	case 24:
		put_u8(b, DW_CFA_GNU_args_size);
		put_u8(b, s7);
		break;
	case 25:
		put_u8(b, DW_CFA_nop);
		break;
	case 26:
		put_u8(b, DW_CFA_offset_extended);
		put_u8(b, 0x90); /* a register number over two bytes */
		put_u8(b, 0x01);
		put_u8(b, s7);
		break;
	case 27:
		put_u8(b, DW_CFA_advance_loc4);
		put_u32(b, (uint32_t)(rnd(x) % 40));
		break;
	default:
		if (rnd(x) % 8 == 0)
			put_u8(b, rnd(x) & 1 ? 0x2d : 0x1c); /* GNU_window_save, lo_user */
		break;
	}
}

/*
 * Made-up CFI of random instructions, such as compilers emit and some they
 * do not: the interpreter's rows are libdw's, rule for rule, reason for
 * reason.
 */
static void test_engines_random(void **state)
{
	uint64_t x = 7, compiled = 0;

	(void)state;
	for (int img = 0; img < 400; img++) {
		struct synth s;
		struct buf cie_ins = {0};
		struct fl_cfitable t;
		size_t cies[3];
		int err;

		synth_init(&s);
		if (rnd(&x) & 1) {
			put_u8(&cie_ins, DW_CFA_offset | 6);
			put_u8(&cie_ins, 2);
		}
		cies[0] = synth_cie(&s, false, "zR", cie_ins.p, cie_ins.n);
		cies[1] = synth_cie(&s, false, "zRS", NULL, 0);
		cies[2] = synth_cie_as(&s, false, "zR", false, cie_ins.p, cie_ins.n);
		for (uint64_t a = 0x1000; a < 0x1800; a += 0x80) {
			struct buf ins = {0};

			for (int k = 0, n = (int)(rnd(&x) % 24); k < n; k++)
				put_rand_ins(&ins, &x);
			synth_fde(&s, false, cies[rnd(&x) % 8 < 6 ? 0 : 1 + rnd(&x) % 2], a,
				  0x40 + rnd(&x) % 0x40, ins.p, ins.n);
			free(ins.p);
		}
		err = synth_table(&s, &t); /* and compared with libdw's engine */
		if (!err) {
			fl_cfitable__fini(&t);
			compiled++;
		}
		free(cie_ins.p);
		synth_free(&s);
	}
	print_message("random instructions: %llu of 400 images compiled the same\n",
		      (unsigned long long)compiled);
	assert_true(compiled > 300);
}

/* Truncated and corrupted images, made-up and real. */
static void test_hostile_images(void **state)
{
	static const uint8_t f1[] = {
		DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset,	 16, DW_CFA_advance_loc | 4,
		DW_CFA_remember_state,	DW_CFA_def_cfa_register, 6,  DW_CFA_advance_loc | 2,
		DW_CFA_restore_state};
	struct synth s;
	struct hostile_counts ok = {0}, ok_real = {0};
	uint64_t x = 42;
	size_t size, cie, eh_at;
	uint8_t *img, *copy;
	struct stat st;
	int fd;

	(void)state;
	synth_init(&s);
	cie = synth_cie(&s, false, "zR", NULL, 0);
	for (uint64_t a = 0x1000; a < 0x1400; a += 0x40)
		synth_fde(&s, false, cie, a, 0x30, f1, sizeof(f1));
	img = synth_image(&s, &size);
	eh_at = TEXT + s.text_size;
	for (size_t n = 0; n < size; n += 13)
		compile_any(img, n, &ok);
	copy = malloc(size);
	assert_non_null(copy);
	for (int i = 0; i < 3000; i++) {
		memcpy(copy, img, size);
		for (int k = 0, nr = 1 + (int)(rnd(&x) % 4); k < nr; k++)
			copy[eh_at + rnd(&x) % s.eh.n] = (uint8_t)rnd(&x);
		compile_any(copy, size, &ok);
	}
	print_message(
		"made-up images: %llu of their corruptions compiled, %llu as libdw's engine\n",
		(unsigned long long)ok.ok, (unsigned long long)ok.same);
	assert_true(ok.ok > 0);
	free(copy);
	free(img);
	synth_free(&s);

	/* A real binary, cut short and with bytes of its .eh_frame changed. */
	fd = open(FIXTURE_DIR "/nofp_chain", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	size = (size_t)st.st_size;
	img = malloc(size);
	copy = malloc(size);
	assert_non_null(img);
	assert_non_null(copy);
	assert_int_equal(pread(fd, img, size, 0), (ssize_t)size);
	close(fd);
	{
		uint64_t eh, eh_size, entry;

		assert_true(
			elf_facts(FIXTURE_DIR "/nofp_chain", ".eh_frame", &eh, &eh_size, &entry));
		eh = vaddr_to_off(FIXTURE_DIR "/nofp_chain", eh);
		for (size_t n = 0; n < size; n += size / 97)
			compile_any(img, n, &ok_real);
		for (int i = 0; i < 2000; i++) {
			memcpy(copy, img, size);
			for (int k = 0, nr = 1 + (int)(rnd(&x) % 3); k < nr; k++)
				copy[eh + rnd(&x) % eh_size] = (uint8_t)rnd(&x);
			compile_any(copy, size, &ok_real);
		}
	}
	print_message("nofp_chain: %llu of its corruptions compiled, %llu as libdw's engine\n",
		      (unsigned long long)ok_real.ok, (unsigned long long)ok_real.same);
	assert_true(ok_real.ok > 0);
	free(copy);
	free(img);
}

/* Files that are not ELF, or not regular. */
static void test_hostile_files(void **state)
{
	struct fl_cfitable t;
	char dir[PATH_MAX], path[PATH_MAX + 16];
	int fd;

	(void)state;
	assert_int_equal(table_of_path(FIXTURE_SRC_DIR "/data/kallsyms", &t), -EINVAL);
	assert_true(scratch_dir_make(dir, sizeof(dir), "test_cfitable"));
	snprintf(path, sizeof(path), "%s/empty", dir);
	fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fl_cfitable__from_fd(fd, &t), -EINVAL);
	close(fd);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fl_cfitable__from_fd(fd, &t), -EINVAL);
	close(fd);
	assert_int_equal(fl_cfitable__from_memory("\177ELF", 4, &t), -EINVAL);
	assert_int_equal(fl_cfitable__from_fd(-1, &t), -EBADF);
	scratch_dir_remove(dir);
	fl_cfitable__fini(NULL);
}

/* --- the walk, checked against the DWARF unwinder ------------------------------- */

#define MAX_FRAMES 128

/* The tables of the files a capture maps, compiled on first use (err: why there is none). */
struct tables {
	struct {
		const char *path; /* the capture's */
		struct fl_cfitable t;
		int err;
	} f[32];
	size_t n;
};

static const struct fl_cfitable *table_for(struct tables *ts, const struct fl_tmap *m)
{
	size_t i;

	for (i = 0; i < ts->n; i++)
		if (!strcmp(ts->f[i].path, m->path))
			return ts->f[i].err ? NULL : &ts->f[i].t;
	if (i == 32)
		return NULL;
	ts->f[i].path = m->path;
	if (!strcmp(m->path, "[vdso]"))
		ts->f[i].err = fl_cfitable__vdso(&ts->f[i].t);
	else if (m->path[0] == '/')
		ts->f[i].err = table_of_path(m->path, &ts->f[i].t);
	else
		ts->f[i].err = -ENOENT;
	if (!ts->f[i].err)
		check_table(&ts->f[i].t);
	ts->n++;
	return ts->f[i].err ? NULL : &ts->f[i].t;
}

static void tables_fini(struct tables *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		if (!ts->f[i].err)
			fl_cfitable__fini(&ts->f[i].t);
}

/* Reads the word at addr from the sample's stack copy (which starts at sp0). */
static bool stack_word(const unsigned char *stack, size_t size, uint64_t sp0, uint64_t addr,
		       uint64_t *val)
{
	if (addr < sp0 || addr - sp0 > size || size - (addr - sp0) < 8)
		return false;
	memcpy(val, stack + (addr - sp0), 8);
	return true;
}

struct walk_stats {
	uint64_t signal_frames; /* SIGNAL rows stepped through */
	uint64_t fp_frames;	/* UNSUPPORTED rows stepped through with frame pointers */
	uint64_t drap_frames;	/* DEREF_RBP rows stepped through */
	uint64_t rbx_frames;	/* rows with the CFA in rbx stepped through, past the sampled frame */
};

/*
 * The walk the BPF program does, from the rows alone (unwind_abi.h):
 *  - the leaf's pc, and the pc after a signal frame, are exact: their row
 *    is looked up at the pc itself; a return address is looked up at
 *    pc - 1, in the call it returns from (which may end its function);
 *  - the row is the last whose pc <= the lookup's file offset (address -
 *    mapping start + mapping pgoff) in the table of the mapping's file;
 *  - RSP, RBP: cfa = rsp or rbp + cfa_off; PLT: rsp + cfa_off, plus 8 when
 *    (pc & 15) >= rbp_off (the frame's pc, not the lookup's); DEREF_RBP:
 *    cfa = *(rbp + cfa_off); UNSUPPORTED: frame pointers, cfa = rbp + 16
 *    with rbp saved at cfa - 16; then the return address is
 *    *(cfa + ra_off) (FL_RA_REG + N: register N, in the sampled frame
 *    only, where the cfa may equal rsp), rbp is *(cfa + rbp_off)
 *    (AT_CFA), *(rbp + rbp_off) (AT_RBP) or unchanged (SAME), and rsp is
 *    the cfa;
 *  - REG + rbx: cfa = rbx + cfa_off, where rbx is known: the sampled one,
 *    kept where a row says SAME, read from cfa + rbx_off where it says
 *    so, unknown after UNKNOWN, after frame pointers and where it cannot
 *    be read; where not known, and for other registers, frame pointers;
 *  - SIGNAL: rsp, rbp, the pc and rbx are *(rsp + cfa_off), *(rsp +
 *    rbp_off), *(rsp + ra_off) and *(rsp + rbx_off), and that pc is exact;
 *  - the walk ends, complete, at OUTERMOST or a return address of 0, and
 *    stops at NONE, at an address no mapping or table covers, at a value
 *    it needs and cannot read from the stack copy (an rbp that cannot be
 *    read is unknown until a rule needs it), and where the cfa is not
 *    above rsp (a loop).
 * Returns the number of ips, leaf first, as fl_unwinder__unwind() gives them.
 */
static size_t table_walk(struct capture *c, struct tables *ts, size_t k, uint64_t *ips,
			 struct walk_stats *ws)
{
	const unsigned char *stack = c->samples[k].stack;
	size_t size = c->samples[k].size, n = 0;
	uint64_t rsp = c->samples[k].regs[FL_UNWIND_REG_SP], sp0 = rsp;
	uint64_t rbp = c->samples[k].regs[6], pc = c->samples[k].regs[FL_UNWIND_REG_IP];
	uint64_t rbx = c->samples[k].regs[3];
	bool rbp_known = true, rbx_known = true, exact = true;

	ips[n++] = pc;
	while (n < MAX_FRAMES) {
		uint64_t lookup = exact ? pc : pc - 1, cfa, ra, base;
		int type;
		const struct fl_tmap *m = exec_maps_find(&c->exec, 0, lookup, 0);
		const struct fl_cfitable *t = m ? table_for(ts, m) : NULL;
		const struct fl_uw_row *r =
			t ? fl_cfitable__find(t, lookup - m->start + m->pgoff) : NULL;

		if (!r)
			break;
		exact = false;
		/* The walker takes frame pointers where it cannot evaluate a register's rule. */
		type = r->cfa_type;
		if (FL_CFA_REG_OF(type) >= 0 && (FL_CFA_REG_OF(type) != 3 || !rbx_known))
			type = FL_CFA_UNSUPPORTED;
		switch (type) {
		case FL_CFA_REG + 3:
			cfa = rbx + (uint64_t)(int64_t)r->cfa_off;
			if (n > 1)
				ws->rbx_frames++;
			break;
		case FL_CFA_RSP:
			cfa = rsp + (uint64_t)(int64_t)r->cfa_off;
			break;
		case FL_CFA_RBP:
			if (!rbp_known)
				return n;
			cfa = rbp + (uint64_t)(int64_t)r->cfa_off;
			break;
		case FL_CFA_PLT:
			cfa = rsp + (uint64_t)(int64_t)r->cfa_off +
			      ((int64_t)(pc & 15) >= r->rbp_off ? 8 : 0);
			break;
		case FL_CFA_DEREF_RBP:
			if (!rbp_known || !stack_word(stack, size, sp0,
						      rbp + (uint64_t)(int64_t)r->cfa_off, &cfa))
				return n;
			ws->drap_frames++;
			break;
		case FL_CFA_UNSUPPORTED:
			if (!rbp_known)
				return n;
			cfa = rbp + 16;
			ws->fp_frames++;
			break;
		case FL_CFA_SIGNAL:
			if (!stack_word(stack, size, sp0, rsp + (uint64_t)(int64_t)r->cfa_off,
					&cfa) ||
			    !stack_word(stack, size, sp0, rsp + (uint64_t)(int64_t)r->ra_off, &ra))
				return n;
			rbp_known = stack_word(stack, size, sp0,
					       rsp + (uint64_t)(int64_t)r->rbp_off, &rbp);
			rbx_known = r->rbx_off != FL_RBX_UNKNOWN &&
				    stack_word(stack, size, sp0,
					       rsp + (uint64_t)(int64_t)r->rbx_off, &rbx);
			if (cfa <= rsp)
				return n;
			rsp = cfa;
			pc = ra;
			exact = true;
			ws->signal_frames++;
			if (!pc)
				return n;
			ips[n++] = pc;
			continue;
		default: /* NONE, OUTERMOST */
			return n;
		}
		if (type != FL_CFA_UNSUPPORTED && FL_RA_REG_OF(r->ra_off) >= 0) {
			/* In a register: the sampled one's, where the cfa may be rsp. */
			if (n != 1 || cfa < rsp)
				return n;
			ra = c->samples[k].regs[FL_RA_REG_OF(r->ra_off)];
		} else if (cfa <= rsp ||
			   !stack_word(stack, size, sp0, cfa + (uint64_t)(int64_t)r->ra_off, &ra)) {
			return n;
		}
		if (type == FL_CFA_UNSUPPORTED)
			rbx_known = false;
		else if (r->rbx_off == FL_RBX_UNKNOWN)
			rbx_known = false;
		else if (r->rbx_off != FL_RBX_SAME)
			rbx_known = stack_word(stack, size, sp0, cfa + (uint64_t)(int64_t)r->rbx_off,
					       &rbx);
		if (type == FL_CFA_UNSUPPORTED) {
			rbp_known = stack_word(stack, size, sp0, cfa - 16, &rbp);
		} else if (r->rbp_type != FL_RBP_SAME) {
			base = r->rbp_type == FL_RBP_AT_CFA ? cfa : rbp;
			if (r->rbp_type == FL_RBP_AT_RBP && !rbp_known)
				return n;
			rbp_known = stack_word(stack, size, sp0,
					       base + (uint64_t)(int64_t)r->rbp_off, &rbp);
		}
		rsp = cfa;
		pc = ra;
		if (!pc)
			return n;
		ips[n++] = pc;
	}
	return n;
}

/* fl_unwinder__set_rows()'s source: the rows of the tables table_walk() uses. */
static int rows_of_tables(void *ctx, const struct fl_tmap *m, uint64_t off, struct fl_uw_row *row)
{
	const struct fl_cfitable *t = table_for(ctx, m);
	const struct fl_uw_row *r = t ? fl_cfitable__find(t, off) : NULL;

	if (!t || (r && r->cfa_type == FL_CFA_UNSUPPORTED))
		return 1;
	/* No CFI where the table has no row: the unwinder does not search the file's. */
	if (!r || r->cfa_type == FL_CFA_NONE)
		return 2;
	*row = *r;
	return 0;
}

/*
 * Samples prog and unwinds every sample three times: with the DWARF
 * unwinder, with table_walk(), and with the DWARF unwinder stepping by the
 * tables' rows (as stack copies of kernel-dwarf are unwound). Nearly all
 * must give the same ips, and deep ones; the unwinder with rows the same
 * ips as without, its frames stepped by rows.
 */
static void cross_check(const char *prog, const char *arg, struct walk_stats *ws)
{
	struct capture *c = capture_arg(prog, arg, 1.5);
	struct fl_unwind_opts o = {.sz = sizeof(o), .find_map = exec_maps_find};
	struct fl_unwinder *u = NULL, *ur = NULL;
	struct fl_unwind_stats us;
	struct tables ts = {.n = 0};
	size_t same = 0, deep = 0, shown = 0, same_rows = 0;

	if (!c)
		skip();
	o.ctx = &c->exec;
	assert_int_equal(fl_unwinder__new(&o, &u), 0);
	assert_int_equal(fl_unwinder__new(&o, &ur), 0);
	fl_unwinder__set_rows(ur, rows_of_tables, &ts);
	assert_true(c->nr_samples > 100);
	memset(ws, 0, sizeof(*ws));
	for (size_t i = 0; i < c->nr_samples; i++) {
		struct fl_unwind_sample s = {.pid = (uint32_t)c->pid,
					     .stack = c->samples[i].stack,
					     .stack_size = c->samples[i].size};
		uint64_t a[MAX_FRAMES], b[MAX_FRAMES], r[MAX_FRAMES];
		enum fl_unwind_outcome out, out_r;
		size_t na, nb, nr;

		memcpy(s.regs, c->samples[i].regs, sizeof(s.regs));
		na = fl_unwinder__unwind(u, &s, a, MAX_FRAMES, &out);
		nb = table_walk(c, &ts, i, b, ws);
		nr = fl_unwinder__unwind(ur, &s, r, MAX_FRAMES, &out_r);
		if (nr == na && out_r == out && !memcmp(a, r, na * sizeof(*a)))
			same_rows++;
		else if (shown++ < 5)
			print_message("%s sample %zu: unwinder %zu frames (%d), with rows %zu (%d)\n",
				      prog, i, na, (int)out, nr, (int)out_r);
		if (na == nb && !memcmp(a, b, na * sizeof(*a))) {
			same++;
			deep += nb >= 4;
			continue;
		}
		if (shown++ < 5) {
			print_message("%s sample %zu: unwinder %zu frames, table walk %zu:\n", prog,
				      i, na, nb);
			for (size_t j = 0; j < (na > nb ? na : nb); j++)
				print_message("  %2zu %16llx %16llx\n", j,
					      j < na ? (unsigned long long)a[j] : 0ull,
					      j < nb ? (unsigned long long)b[j] : 0ull);
		}
	}
	print_message("%s: %zu samples, %.2f%% the same (%zu of them 4 frames or more), %llu "
		      "signal frames, %llu realigned, %llu CFAs in rbx past the leaf, %llu "
		      "frame-pointer steps\n",
		      prog, c->nr_samples, 100.0 * (double)same / (double)c->nr_samples, deep,
		      (unsigned long long)ws->signal_frames, (unsigned long long)ws->drap_frames,
		      (unsigned long long)ws->rbx_frames, (unsigned long long)ws->fp_frames);
	assert_true((double)same >= 0.99 * (double)c->nr_samples);
	assert_true((double)deep >= 0.9 * (double)c->nr_samples);
	fl_unwinder__stats(ur, &us);
	print_message("%s: with rows, %.2f%% the same as without, %llu frames stepped by rows\n",
		      prog, 100.0 * (double)same_rows / (double)c->nr_samples,
		      (unsigned long long)us.row_steps);
	assert_true((double)same_rows >= 0.99 * (double)c->nr_samples);
	assert_true(us.row_steps >= c->nr_samples);
	tables_fini(&ts);
	fl_unwinder__free(ur);
	fl_unwinder__free(u);
	capture_free(c);
}

/* A fixture to cross-check, and how many frames of the rarer kinds its walks must step through. */
struct walk_case {
	const char *name; /* of its cmocka test */
	const char *prog;
	const char *arg; /* its second argument, or NULL */
	uint64_t min_signal_frames, min_drap_frames, min_rbx_frames;
};

static struct walk_case walks[] = {
	{.name = "test_walk_nofp_chain", .prog = "nofp_chain"},
	{.name = "test_walk_chains", .prog = "chains"},
	{.name = "test_walk_library", .prog = "nofp_callback"},
	/*
	 * Samples in the signal handler are walked through __restore_rt's row
	 * into the interrupted code; those in the main chain through
	 * nofp_sig_1's realigned frame (DEREF_RBP, rbp AT_RBP).
	 */
	{.name = "test_walk_signal",
	 .prog = "nofp_sigdrap",
	 .min_signal_frames = 50,
	 .min_drap_frames = 500},
	/*
	 * nofp_probe_call keeps its CFA in rbx, which its callee
	 * nofp_probe_keep saved and cleared: samples in nofp_burn find it
	 * two frames up.
	 */
	{.name = "test_walk_rbx_cfa", .prog = "nofp_probe", .arg = "call", .min_rbx_frames = 500},
};

/* walks[i]'s cmocka test: a test each, so that one fixture's failure hides no other's. */
static void test_walk(void **state)
{
	const struct walk_case *w = *state;
	struct walk_stats ws;

	cross_check(w->prog, w->arg, &ws);
	assert_true(ws.signal_frames >= w->min_signal_frames);
	assert_true(ws.drap_frames >= w->min_drap_frames);
	assert_true(ws.rbx_frames >= w->min_rbx_frames);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synth_rules),
		cmocka_unit_test(test_synth_code_start),
		cmocka_unit_test(test_synth_rbx),
		cmocka_unit_test(test_synth_merge),
		cmocka_unit_test(test_synth_restore_state),
		cmocka_unit_test(test_synth_overlap),
		cmocka_unit_test(test_synth_work_bound),
		cmocka_unit_test(test_synth_deep_state),
		cmocka_unit_test(test_synth_refused),
		cmocka_unit_test(test_nofp_rules),
		cmocka_unit_test(test_debug_frame),
		cmocka_unit_test(test_fp_rules),
		cmocka_unit_test(test_plt_and_start),
		cmocka_unit_test(test_libc_signal_frame),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_engines_real),
		cmocka_unit_test(test_ranges_real),
		cmocka_unit_test(test_released_file_changed),
		cmocka_unit_test(test_paged_layout),
		cmocka_unit_test(test_engines_random),
		cmocka_unit_test(test_hostile_images),
		cmocka_unit_test(test_hostile_files),
		{walks[0].name, test_walk, NULL, NULL, &walks[0]},
		{walks[1].name, test_walk, NULL, NULL, &walks[1]},
		{walks[2].name, test_walk, NULL, NULL, &walks[2]},
		{walks[3].name, test_walk, NULL, NULL, &walks[3]},
		{walks[4].name, test_walk, NULL, NULL, &walks[4]},
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
