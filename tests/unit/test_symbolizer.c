// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for lib/symbols/symbolizer.c on this very process: its own code, libc, the vdso, unmapped memory. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <gelf.h>
#include <libelf.h>

#include "flamed/symbols/symbolizer.h"
#include "flamed/sampling/tracker.h"

static struct fl_tracker *tracker;
static struct fl_symbolizer *sym;

__attribute__((noinline, used)) int symbolizer_probe_function(int x);
__attribute__((noinline, used)) int symbolizer_probe_function(int x)
{
	return x * 3 + 1;
}

static int setup(void **state)
{
	int pid = getpid();
	struct fl_tracker_opts to = {.sz = sizeof(to), .pids = &pid, .nr_pids = 1};
	struct fl_symbolizer_opts so = {.sz = sizeof(so), .no_kernel = true};
	int err;

	(void)state;
	err = fl_tracker__new(&to, &tracker);
	if (err == -EACCES || err == -EPERM || err == -ENOSYS || err == -ENOENT) {
		fprintf(stderr, "SKIP: perf events unavailable (%s): run as root\n",
			strerror(-err));
		exit(77);
	}
	assert_int_equal(err, 0);
	assert_int_equal(fl_tracker__start(tracker), 0);
	so.tracker = tracker;
	assert_int_equal(fl_symbolizer__new(&so, &sym), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fl_symbolizer__free(sym);
	fl_tracker__free(tracker);
	return 0;
}

static void test_own_function(void **state)
{
	uint64_t ip = (uint64_t)(uintptr_t)&symbolizer_probe_function + 2;
	struct fl_sym out;

	(void)state;
	assert_int_equal(fl_symbolizer__user(sym, (uint32_t)getpid(), &ip, 1, &out), 0);
	assert_int_equal(out.reason, FL_SYM_OK);
	assert_string_equal(out.name, "symbolizer_probe_function");
	assert_string_equal(out.module, "test_symbolizer");
}

static void test_libc_function(void **state)
{
	/* Several addresses in one batch, each answered in order. */
	uint64_t ips[2] = {(uint64_t)(uintptr_t)&symbolizer_probe_function,
			   (uint64_t)(uintptr_t)&getppid + 1};
	struct fl_sym out[2];

	(void)state;
	assert_int_equal(fl_symbolizer__user(sym, (uint32_t)getpid(), ips, 2, out), 0);
	assert_int_equal(out[0].reason, FL_SYM_OK);
	assert_string_equal(out[0].name, "symbolizer_probe_function");
	assert_int_equal(out[1].reason, FL_SYM_OK);
	assert_non_null(strstr(out[1].name, "getppid"));
	assert_non_null(strstr(out[1].module, "libc"));
}

static void test_vdso(void **state)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct fl_sym out;
	uint64_t ip;

	(void)state;
	if (!base)
		skip();
	/* Somewhere in the vdso's text: it is named, or at least attributed to [vdso]. */
	ip = base + 0x800;
	assert_int_equal(fl_symbolizer__user(sym, (uint32_t)getpid(), &ip, 1, &out), 0);
	assert_non_null(out.module);
	assert_string_equal(out.module, "[vdso]");
}

static void test_unmapped_and_unknown_pid(void **state)
{
	uint64_t ip = 0x10;
	struct fl_sym out;

	(void)state;
	assert_int_equal(fl_symbolizer__user(sym, (uint32_t)getpid(), &ip, 1, &out), 0);
	assert_int_equal(out.reason, FL_SYM_UNMAPPED);
	assert_null(out.name);
	ip = (uint64_t)(uintptr_t)&symbolizer_probe_function;
	/* A pid the tracker never saw. */
	assert_int_equal(fl_symbolizer__user(sym, 0x7ffffff0u, &ip, 1, &out), 0);
	assert_int_equal(out.reason, FL_SYM_UNMAPPED);
}

static void test_anonymous_exec(void **state)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t ip;
	struct fl_sym out;

	(void)state;
	assert_true(p != MAP_FAILED);
	assert_int_equal(fl_tracker__poll(tracker), 0);
	ip = (uint64_t)(uintptr_t)p + 16;
	assert_int_equal(fl_symbolizer__user(sym, (uint32_t)getpid(), &ip, 1, &out), 0);
	assert_int_equal(out.reason, FL_SYM_ANON);
	munmap(p, 4096);
}

/* The bytes the cache holds after looking up ip with a symbolizer of cap max (0: the default). */
static uint64_t cache_bytes_after(uint64_t max, uint64_t ip)
{
	struct fl_symbolizer_opts so = {
		.sz = sizeof(so), .no_kernel = true, .tracker = tracker, .max_cache_bytes = max};
	struct fl_symbolizer_cache_stats cs;
	struct fl_symbolizer *s = NULL;
	struct fl_sym out;

	assert_int_equal(fl_symbolizer__new(&so, &s), 0);
	assert_int_equal(fl_symbolizer__user(s, (uint32_t)getpid(), &ip, 1, &out), 0);
	assert_int_equal(out.reason, FL_SYM_OK);
	fl_symbolizer__cache_stats(s, &cs);
	fl_symbolizer__free(s);
	return cs.bytes;
}

/* Whether a symbolizer of cap max names ip. */
static bool names_with(uint64_t max, uint64_t ip)
{
	struct fl_symbolizer_opts so = {
		.sz = sizeof(so), .no_kernel = true, .tracker = tracker, .max_cache_bytes = max};
	struct fl_symbolizer *s = NULL;
	struct fl_sym out;

	assert_int_equal(fl_symbolizer__new(&so, &s), 0);
	assert_int_equal(fl_symbolizer__user(s, (uint32_t)getpid(), &ip, 1, &out), 0);
	fl_symbolizer__free(s);
	return out.reason == FL_SYM_OK;
}

/*
 * The least cap with which the file holding ip is read: what reading it
 * takes (its symbol tables, read whole), more than what it then holds.
 */
static uint64_t room_to_read(uint64_t ip)
{
	uint64_t lo = 1, hi = 1;

	while (!names_with(hi, ip)) {
		assert_true(hi < (1ull << 32));
		lo = hi + 1;
		hi *= 2;
	}
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (names_with(mid, ip))
			hi = mid;
		else
			lo = mid + 1;
	}
	return hi;
}

/*
 * The cache's cap: with room to read one file only, the other file looked
 * up first is read, the next is not (named by the file, counted), and a
 * trim lets it be read after all once the first is gone. A file is read
 * only when reading it fits: the cache never holds more than its cap, and
 * it holds less than reading took (big string tables stay in the file).
 */
static void test_cache_cap(void **state)
{
	struct fl_symbolizer_opts so = {.sz = sizeof(so), .no_kernel = true, .tracker = tracker};
	struct fl_symbolizer *s = NULL;
	struct fl_symbolizer_cache_stats cs;
	uint64_t own = (uint64_t)(uintptr_t)&symbolizer_probe_function,
		 libc = (uint64_t)(uintptr_t)&getppid + 1, own_room, libc_room, first, second,
		 first_bytes, second_bytes;
	const char *second_name;
	struct fl_sym out;

	(void)state;
	/* Room to read the larger of the two, not both: that one is looked up second. */
	own_room = room_to_read(own);
	libc_room = room_to_read(libc);
	first = own_room > libc_room ? libc : own;
	second = own_room > libc_room ? own : libc;
	second_name = own_room > libc_room ? "symbolizer_probe_function" : "getppid";
	so.max_cache_bytes = own_room > libc_room ? own_room : libc_room;
	first_bytes = cache_bytes_after(so.max_cache_bytes, first);
	second_bytes = cache_bytes_after(so.max_cache_bytes, second);
	assert_true(first_bytes > 0 && second_bytes > 0);
	assert_true(second_bytes <= so.max_cache_bytes);
	assert_int_equal(fl_symbolizer__new(&so, &s), 0);
	assert_int_equal(fl_symbolizer__user(s, (uint32_t)getpid(), &first, 1, &out), 0);
	assert_int_equal(out.reason, FL_SYM_OK);
	assert_int_equal(fl_symbolizer__user(s, (uint32_t)getpid(), &second, 1, &out), 0);
	assert_int_not_equal(out.reason, FL_SYM_OK);
	assert_non_null(out.module);
	fl_symbolizer__cache_stats(s, &cs);
	assert_int_equal(cs.files_not_read, 1);
	assert_int_equal(cs.files, 2);
	assert_int_equal(cs.bytes, first_bytes);
	assert_true(cs.peak_bytes == cs.bytes && cs.bytes <= so.max_cache_bytes);
	printf("# room to read: %llu bytes (own), %llu (libc); held: %llu (first), %llu (second)\n",
	       (unsigned long long)own_room, (unsigned long long)libc_room,
	       (unsigned long long)first_bytes, (unsigned long long)second_bytes);

	/* Two trims without looking anything up: both files go, the cache is empty. */
	fl_symbolizer__trim(s);
	fl_symbolizer__trim(s);
	fl_symbolizer__trim(s);
	fl_symbolizer__cache_stats(s, &cs);
	assert_int_equal(cs.files, 0);
	assert_int_equal(cs.bytes, 0);
	assert_int_equal(fl_symbolizer__user(s, (uint32_t)getpid(), &second, 1, &out), 0);
	assert_int_equal(out.reason, FL_SYM_OK);
	assert_non_null(strstr(out.name, second_name));
	fl_symbolizer__free(s);
}

/* A process with anonymous executable memory ("JIT code"), waiting to be killed. */
struct jit_child {
	pid_t pid;
	uint64_t code; /* the address of its code */
	char map[64];  /* its /tmp/perf-PID.map */
};

static void jit_child_start(struct jit_child *c, int nr)
{
	int fds[2];

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		void *p =
			mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		/* Apart from the other children's, which may have the same mapping. */
		uint64_t a = (uint64_t)(uintptr_t)p + 64 * (uint64_t)nr;

		/* Not left behind by a test that fails before it kills us. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (p == MAP_FAILED || write(fds[1], &a, sizeof(a)) != sizeof(a))
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c->code, sizeof(c->code)), sizeof(c->code));
	close(fds[0]);
	snprintf(c->map, sizeof(c->map), "/tmp/perf-%d.map", (int)c->pid);
}

static void jit_child_stop(struct jit_child *c)
{
	if (c->pid <= 0)
		return;
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	unlink(c->map);
	c->pid = 0;
}

/* test_jit_maps's children: stopped and their maps removed even when it fails. */
static struct jit_child kids[2];

static int jit_teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < 2; i++)
		jit_child_stop(&kids[i]);
	return 0;
}

/* The symbolizer's answer for one address of pid. */
static struct fl_sym sym_of(struct fl_symbolizer *s, pid_t pid, uint64_t ip)
{
	struct fl_sym out;

	assert_int_equal(fl_symbolizer__user(s, (uint32_t)pid, &ip, 1, &out), 0);
	return out;
}

/*
 * Two JIT processes whose perf maps are one file (a hard link): noting them
 * reads nothing, opening them reads nothing either; the first name asked
 * for reads the file, once for both, charged to the symbol cache's budget.
 * The file is still read when the processes are gone and removed it. With
 * a budget too small, nothing is read, and that is counted. Perf maps take
 * at most their share of the budget: a big one leaves room for the
 * binaries' symbols.
 */
static void test_jit_maps(void **state)
{
	int pids[2];
	struct fl_tracker_opts to = {.sz = sizeof(to), .pids = pids, .nr_pids = 2};
	struct fl_symbolizer_opts so = {.sz = sizeof(so), .no_kernel = true};
	struct fl_symbolizer *s = NULL, *small = NULL, *half = NULL;
	const int junk = 40000; /* entries of about 280 bytes each, as charged: 11 MB */
	uint64_t own = (uint64_t)(uintptr_t)&symbolizer_probe_function,
		 libc = (uint64_t)(uintptr_t)&getppid + 1;
	struct fl_symbolizer_jit_stats js;
	struct fl_symbolizer_cache_stats cs;
	struct fl_tracker *t = NULL;
	struct fl_sym out;
	char line[128];
	FILE *f;

	(void)state;
	for (int i = 0; i < 2; i++) {
		jit_child_start(&kids[i], i);
		pids[i] = kids[i].pid;
	}
	assert_int_equal(fl_tracker__new(&to, &t), 0);
	assert_int_equal(fl_tracker__start(t), 0);
	so.tracker = t;
	assert_int_equal(fl_symbolizer__new(&so, &s), 0);
	so.max_cache_bytes = 1;
	assert_int_equal(fl_symbolizer__new(&so, &small), 0);
	so.max_cache_bytes = 4 << 20;
	assert_int_equal(fl_symbolizer__new(&so, &half), 0);

	f = fopen(kids[0].map, "we");
	assert_non_null(f);
	for (int i = 0; i < 2; i++)
		fprintf(f, "%llx 40 jit_code_of_%d\n", (unsigned long long)kids[i].code, i);
	for (int i = 0; i < junk; i++)
		fprintf(f, "%x 10 unique_junk_name_%d\n", 0x10000000 + 16 * i, i);
	fclose(f);
	assert_int_equal(link(kids[0].map, kids[1].map), 0);

	for (int i = 0; i < 2; i++) {
		assert_int_equal(fl_symbolizer__jit_process(s, (uint32_t)pids[i]), 0);
		assert_int_equal(fl_symbolizer__jit_process(small, (uint32_t)pids[i]), 0);
		assert_int_equal(fl_symbolizer__jit_process(half, (uint32_t)pids[i]), 0);
	}
	assert_int_equal(fl_symbolizer__jit_process(s, (uint32_t)pids[0]), 0); /* once */
	fl_symbolizer__jit_stats(s, &js);
	assert_int_equal(js.processes, 2);
	assert_int_equal(js.opened, 0);
	fl_symbolizer__jit_open_new(s);
	fl_symbolizer__jit_open_new(small);
	fl_symbolizer__jit_open_new(half);
	fl_symbolizer__jit_stats(s, &js);
	assert_int_equal(js.opened, 2);
	assert_int_equal(js.shared, 1);
	assert_int_equal(js.maps, 0);
	assert_int_equal(js.bytes, 0);

	/* Gone, and their map with them: what was opened is read all the same. */
	for (int i = 0; i < 2; i++)
		jit_child_stop(&kids[i]);
	for (int i = 0; i < 2; i++) {
		snprintf(line, sizeof(line), "jit_code_of_%d", i);
		out = sym_of(s, pids[i], kids[i].code + 8);
		assert_int_equal(out.reason, FL_SYM_OK);
		assert_true(out.jit);
		assert_string_equal(out.name, line);
	}
	fl_symbolizer__jit_stats(s, &js);
	assert_int_equal(js.maps, 1);
	assert_int_equal(js.entries, 2 + junk);
	assert_int_equal(js.over_budget, 0);
	assert_true(js.bytes > 0);
	fl_symbolizer__cache_stats(s, &cs);
	assert_int_equal(cs.bytes, js.bytes); /* one budget: no ELF file read here */

	out = sym_of(small, pids[0], kids[0].code + 8);
	assert_int_equal(out.reason, FL_SYM_ANON);
	fl_symbolizer__jit_stats(small, &js);
	assert_int_equal(js.over_budget, 1);
	assert_true(js.bytes_over_budget > 40);
	assert_int_equal(js.bytes, 0);

	/* The map fills the perf maps' share, not the cache: the binary is read after it. */
	out = sym_of(half, pids[1], kids[1].code + 8);
	assert_int_equal(out.reason, FL_SYM_OK);
	assert_string_equal(out.name, "jit_code_of_1");
	fl_symbolizer__jit_stats(half, &js);
	printf("# perf maps: %llu of %llu bytes, %llu entries; %llu bytes left unread\n",
	       (unsigned long long)js.bytes, (unsigned long long)js.max_bytes,
	       (unsigned long long)js.entries, (unsigned long long)js.bytes_over_budget);
	assert_int_equal(js.max_bytes, 2 << 20);
	assert_true(js.bytes > 0 && js.bytes <= js.max_bytes);
	assert_int_equal(js.over_budget, 1);
	out = sym_of(half, pids[0], own);
	assert_int_equal(out.reason, FL_SYM_OK);
	assert_string_equal(out.name, "symbolizer_probe_function");
	out = sym_of(half, pids[0], libc);
	assert_int_equal(out.reason, FL_SYM_OK);
	assert_non_null(strstr(out.name, "getppid"));
	fl_symbolizer__cache_stats(half, &cs);
	assert_int_equal(cs.files_not_read, 0);
	assert_true(cs.bytes > js.bytes);

	/* Forgotten: the file and its memory go with the last process. */
	fl_symbolizer__forget(s, (const uint32_t *)pids, 1);
	fl_symbolizer__cache_stats(s, &cs);
	assert_true(cs.bytes > 0);
	fl_symbolizer__forget(s, (const uint32_t *)pids + 1, 1);
	fl_symbolizer__cache_stats(s, &cs);
	assert_int_equal(cs.bytes, 0);
	fl_symbolizer__jit_stats(s, &js);
	assert_int_equal(js.maps, 1);
	assert_int_equal(js.entries, 2 + junk);
	fl_symbolizer__free(half);
	fl_symbolizer__free(small);
	fl_symbolizer__free(s);
	fl_tracker__free(t);
}

/* --- a file whose DWARF inflates ------------------------------------------------ */

#define BOMB_TEXT_SIZE 64
#define BOMB_BYTES ((size_t)256 << 20)

/* A new section called name (put into shstr at *shlen) of type with one data block. */
static Elf_Scn *bomb_section(Elf *e, char *shstr, size_t *shlen, const char *name, uint32_t type,
			     void *buf, size_t size, size_t align)
{
	Elf_Scn *scn = elf_newscn(e);
	Elf64_Shdr *sh = scn ? elf64_getshdr(scn) : NULL;
	Elf_Data *d = scn ? elf_newdata(scn) : NULL;

	if (!sh || !d)
		return NULL;
	sh->sh_name = (Elf64_Word)*shlen;
	strcpy(shstr + *shlen, name);
	*shlen += strlen(name) + 1;
	sh->sh_type = type;
	sh->sh_addralign = align;
	d->d_type = ELF_T_BYTE;
	d->d_buf = buf;
	d->d_size = size;
	d->d_align = align;
	return scn;
}

/*
 * Writes to fd a shared object of this machine: one function,
 * bomb_function, in an executable PT_LOAD, a stub .debug_info, and a
 * .debug_ranges of BOMB_BYTES zeros compressed with zlib: a file of some
 * 256 KiB that libdw inflates to 256 MiB when it reads the DWARF. Returns
 * .text's offset (= its address), or 0. Run in a child: the zeros it
 * compresses must not count in the test process's peak memory.
 */
static uint64_t write_bomb(int fd)
{
	static unsigned char text[BOMB_TEXT_SIZE], info[16];
	static char strtab[] = "\0bomb_function";
	char shstr[256] = "";
	size_t shlen = 1;
	Elf64_Sym syms[2] = {0};
	Elf_Scn *text_scn, *sym_scn, *str_scn, *ranges, *names;
	unsigned char *zeros = calloc(1, BOMB_BYTES);
	Elf64_Ehdr *eh;
	Elf64_Phdr *ph;
	Elf64_Shdr *sh;
	GElf_Shdr tsh;
	Elf *e;

	memset(text, 0xc3, sizeof(text)); /* ret */
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	if (!zeros || !e || !(eh = elf64_newehdr(e)) || !(ph = elf64_newphdr(e, 1)))
		return 0;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	text_scn = bomb_section(e, shstr, &shlen, ".text", SHT_PROGBITS, text, sizeof(text), 16);
	str_scn = bomb_section(e, shstr, &shlen, ".strtab", SHT_STRTAB, strtab, sizeof(strtab), 1);
	sym_scn = bomb_section(e, shstr, &shlen, ".symtab", SHT_SYMTAB, syms, sizeof(syms), 8);
	bomb_section(e, shstr, &shlen, ".debug_info", SHT_PROGBITS, info, sizeof(info), 1);
	ranges =
		bomb_section(e, shstr, &shlen, ".debug_ranges", SHT_PROGBITS, zeros, BOMB_BYTES, 1);
	if (!text_scn || !str_scn || !sym_scn || !ranges)
		return 0;
	elf64_getshdr(text_scn)->sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	sh = elf64_getshdr(sym_scn);
	sh->sh_link = (Elf64_Word)elf_ndxscn(str_scn);
	sh->sh_info = 1;
	sh->sh_entsize = sizeof(Elf64_Sym);
	elf_getdata(sym_scn, NULL)->d_type = ELF_T_SYM;
	if (elf_compress(ranges, ELFCOMPRESS_ZLIB, 0) != 1)
		return 0;
	names = bomb_section(e, shstr, &shlen, ".shstrtab", SHT_STRTAB, shstr, sizeof(shstr), 1);
	if (!names)
		return 0;
	eh->e_shstrndx = (Elf64_Half)elf_ndxscn(names);
	/* Laid out first: the function's address is where .text lands in the file. */
	if (elf_update(e, ELF_C_NULL) < 0 || !gelf_getshdr(text_scn, &tsh))
		return 0;
	elf64_getshdr(text_scn)->sh_addr = tsh.sh_offset;
	syms[1] = (Elf64_Sym){.st_name = 1,
			      .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			      .st_shndx = (Elf64_Section)elf_ndxscn(text_scn),
			      .st_value = tsh.sh_offset,
			      .st_size = sizeof(text)};
	*ph = (Elf64_Phdr){.p_type = PT_LOAD,
			   .p_flags = PF_R | PF_X,
			   .p_filesz = tsh.sh_offset + sizeof(text),
			   .p_memsz = tsh.sh_offset + sizeof(text),
			   .p_align = 4096};
	elf_flagdata(elf_getdata(sym_scn, NULL), ELF_C_SET, ELF_F_DIRTY);
	elf_flagphdr(e, ELF_C_SET, ELF_F_DIRTY);
	if (elf_update(e, ELF_C_WRITE) < 0)
		return 0;
	elf_end(e);
	free(zeros);
	return tsh.sh_offset;
}

static long peak_rss_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? -1 : ru.ru_maxrss;
}

/*
 * A user's library whose DWARF claims far more than the symbol cache may
 * hold (a compressed section libdw inflates) gets its symbols read, not
 * its DWARF: flamed's memory stays within the cache's cap (it grew by the
 * claimed size, 256 MiB, once), and so does what the cache counts.
 */
static void test_dwarf_over_budget(void **state)
{
	struct fl_symbolizer_opts so = {.sz = sizeof(so),
					.no_kernel = true,
					.tracker = tracker,
					.inlines = true,
					.srclines = true,
					.max_cache_bytes = 16 << 20};
	char path[] = "/tmp/flamed-test-bomb.XXXXXX";
	struct fl_symbolizer_cache_stats cs;
	struct fl_symbolizer *s = NULL;
	uint64_t text = 0;
	struct fl_sym out;
	long before, after;
	int fd, pfd[2], status;
	pid_t pid;
	void *map;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		text = write_bomb(fd);
		_exit(write(pfd[1], &text, sizeof(text)) == sizeof(text) ? 0 : 1);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &text, sizeof(text)), sizeof(text));
	close(pfd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(text > 0);
	map = mmap(NULL, (size_t)text + BOMB_TEXT_SIZE, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(fl_tracker__poll(tracker), 0);
	assert_int_equal(fl_symbolizer__new(&so, &s), 0);

	before = peak_rss_kib();
	out = sym_of(s, getpid(), (uint64_t)(uintptr_t)map + text + 4);
	after = peak_rss_kib();
	printf("# peak RSS %ld KiB before the lookup, %ld KiB after\n", before, after);
	assert_int_equal(out.reason, FL_SYM_OK);
	assert_string_equal(out.name, "bomb_function");
	assert_true(after - before < 64 << 10);
	fl_symbolizer__cache_stats(s, &cs);
	assert_true(cs.peak_bytes <= so.max_cache_bytes);
	fl_symbolizer__free(s);
	munmap(map, (size_t)text + BOMB_TEXT_SIZE);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_function),
		cmocka_unit_test(test_libc_function),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_unmapped_and_unknown_pid),
		cmocka_unit_test(test_anonymous_exec),
		cmocka_unit_test(test_cache_cap),
		cmocka_unit_test(test_dwarf_over_budget),
		cmocka_unit_test_teardown(test_jit_maps, jit_teardown),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: needs root for system-wide tracking events\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
