// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for elfsyms: fixture processes resolve their own functions via maps and symbols. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/symbols/debuginfo.h"
#include "flamed/symbols/elfsyms.h"
#include "flamed/sampling/procmaps.h"
#include "hostile_paths.h"

#define MAX_FNS 32
#define MAX_MAPS 512

/* A fixture process that printed "name 0xaddr" lines and now waits on stdin. */
struct child {
	pid_t pid;
	int to_child;
	FILE *from_child;
	struct {
		char name[64];
		uint64_t addr;
	} fns[MAX_FNS];
	size_t nr_fns;
	struct {
		uint64_t start, end, pgoff;
		char *path;
	} maps[MAX_MAPS];
	size_t nr_maps;
};

static void fixture_path(char *buf, size_t size, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", FIXTURE_DIR, name);

	assert_true(n > 0 && (size_t)n < size);
}

static int save_map(const struct fl_procmap *m, void *ctx)
{
	struct child *c = ctx;

	if (c->nr_maps == MAX_MAPS)
		return -ENOSPC;
	c->maps[c->nr_maps].start = m->start;
	c->maps[c->nr_maps].end = m->end;
	c->maps[c->nr_maps].pgoff = m->pgoff;
	c->maps[c->nr_maps].path = strdup(m->path);
	assert_non_null(c->maps[c->nr_maps].path);
	c->nr_maps++;
	return 0;
}

/* Starts a fixture, reads its report up to "ready", and captures its maps while it waits. */
static void child_start(struct child *c, const char *fixture)
{
	char path[PATH_MAX], line[256];
	int in[2], out[2];

	memset(c, 0, sizeof(*c));
	fixture_path(path, sizeof(path), fixture);
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->to_child = in[1];
	c->from_child = fdopen(out[0], "r");
	assert_non_null(c->from_child);
	while (fgets(line, sizeof(line), c->from_child)) {
		char name[64];
		uint64_t addr;

		if (!strcmp(line, "ready\n"))
			break;
		assert_int_equal(sscanf(line, "%63s %" SCNx64, name, &addr), 2);
		assert_true(c->nr_fns < MAX_FNS);
		strcpy(c->fns[c->nr_fns].name, name);
		c->fns[c->nr_fns].addr = addr;
		c->nr_fns++;
	}
	assert_true(c->nr_fns > 0);
	assert_int_equal(fl_procmaps__read(c->pid, save_map, c), 0);
}

static void child_stop(struct child *c)
{
	int status;
	size_t i;

	close(c->to_child);
	fclose(c->from_child);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	for (i = 0; i < c->nr_maps; i++)
		free(c->maps[i].path);
}

static uint64_t child_addr(const struct child *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->nr_fns; i++)
		if (!strcmp(c->fns[i].name, name))
			return c->fns[i].addr;
	fail_msg("fixture did not report %s", name);
	return 0;
}

/*
 * What the symbolizer will do with a sampled ip: find its mapping, turn it
 * into a file offset, open the mapped file, convert to an ELF vaddr and look
 * the symbol up. The caller frees *e.
 */
static const struct fl_elfsym *resolve(const struct child *c, uint64_t ip, struct fl_elfsyms **e,
				       uint64_t *vaddr, const char **path)
{
	size_t i;

	for (i = 0; i < c->nr_maps; i++) {
		if (ip < c->maps[i].start || ip >= c->maps[i].end)
			continue;
		assert_true(c->maps[i].path[0] == '/');
		*path = c->maps[i].path;
		assert_int_equal(fl_elfsyms__open(c->maps[i].path, e), 0);
		assert_int_equal(fl_elfsyms__offset_to_vaddr(
					 *e, ip - c->maps[i].start + c->maps[i].pgoff, vaddr),
				 0);
		return fl_elfsyms__find(*e, *vaddr);
	}
	fail_msg("no mapping holds %#" PRIx64, ip);
	return NULL;
}

/* The reported function, and an ip a few bytes into it, both resolve to want. */
static void check_resolves(const struct child *c, const char *reported, const char *want,
			   const char *file_suffix)
{
	uint64_t addr = child_addr(c, reported);
	uint64_t deltas[] = { 0, 1, 3 };
	size_t i;

	for (i = 0; i < sizeof(deltas) / sizeof(deltas[0]); i++) {
		const struct fl_elfsym *s;
		struct fl_elfsyms *e = NULL;
		const char *path = NULL;
		uint64_t vaddr;

		s = resolve(c, addr + deltas[i], &e, &vaddr, &path);
		assert_non_null(s);
		assert_string_equal(s->name, want);
		assert_true(s->addr <= vaddr && vaddr - s->addr < s->size);
		assert_int_equal(vaddr - s->addr, deltas[i]);
		if (file_suffix) {
			size_t pl = strlen(path), sl = strlen(file_suffix);

			assert_true(pl >= sl && !strcmp(path + pl - sl, file_suffix));
		}
		fl_elfsyms__free(e);
	}
}

static void test_pie(void **state)
{
	struct child c;

	(void)state;
	child_start(&c, "elf_pie");
	check_resolves(&c, "fx_alpha", "fx_alpha", "/elf_pie");
	check_resolves(&c, "fx_beta", "fx_beta", "/elf_pie");
	check_resolves(&c, "fx_gamma", "fx_gamma", "/elf_pie");
	/* A LOCAL function: found because .symtab is read. */
	check_resolves(&c, "fx_local_delta", "fx_local_delta", "/elf_pie");
	child_stop(&c);
}

static void test_nopie(void **state)
{
	const char *names[] = { "fx_alpha", "fx_beta", "fx_gamma", "fx_local_delta" };
	struct child c;
	size_t i;

	(void)state;
	child_start(&c, "elf_nopie");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct fl_elfsyms *e = NULL;
		const struct fl_elfsym *s;
		const char *path;
		uint64_t vaddr, addr = child_addr(&c, names[i]);

		check_resolves(&c, names[i], names[i], "/elf_nopie");
		/* Not relocated: the runtime address is the link-time address. */
		s = resolve(&c, addr, &e, &vaddr, &path);
		assert_int_equal(vaddr, addr);
		assert_non_null(s);
		assert_int_equal(s->addr, addr);
		fl_elfsyms__free(e);
	}
	child_stop(&c);
}

static void test_stripped_dynsym_only(void **state)
{
	struct fl_elfsyms *full = NULL, *stripped = NULL, *e = NULL;
	char path[PATH_MAX];
	const char *mpath;
	struct child c;
	uint64_t vaddr;

	(void)state;
	child_start(&c, "elf_stripped");
	/* Exported with -rdynamic, so .dynsym names them after strip --strip-all. */
	check_resolves(&c, "fx_alpha", "fx_alpha", "/elf_stripped");
	check_resolves(&c, "fx_beta", "fx_beta", "/elf_stripped");
	check_resolves(&c, "fx_gamma", "fx_gamma", "/elf_stripped");
	/* The static function went with .symtab: nothing holds its address. */
	assert_null(resolve(&c, child_addr(&c, "fx_local_delta"), &e, &vaddr, &mpath));
	fl_elfsyms__free(e);
	child_stop(&c);

	fixture_path(path, sizeof(path), "elf_rdynamic");
	assert_int_equal(fl_elfsyms__open(path, &full), 0);
	fixture_path(path, sizeof(path), "elf_stripped");
	assert_int_equal(fl_elfsyms__open(path, &stripped), 0);
	assert_true(fl_elfsyms__count(stripped) > 0);
	assert_true(fl_elfsyms__count(stripped) < fl_elfsyms__count(full));
	fl_elfsyms__free(full);
	fl_elfsyms__free(stripped);
}

static void test_shared_lib(void **state)
{
	struct fl_elfsyms *e = NULL;
	const struct fl_elfsym *s;
	uint64_t nosize;
	const char *path;
	struct child c;

	(void)state;
	child_start(&c, "elf_uselib");
	check_resolves(&c, "fx_alpha", "fx_alpha", "/elf_uselib");
	check_resolves(&c, "fx_lib_one", "fx_lib_one", "/libfx_elf.so");
	check_resolves(&c, "fx_lib_two", "fx_lib_two", "/libfx_elf.so");
	check_resolves(&c, "fx_lib_local", "fx_lib_local", "/libfx_elf.so");
	/* Aliases at one address: GLOBAL beats the shorter WEAK fx_w1 and underscored __fx_g. */
	check_resolves(&c, "fx_w1", "fx_lib_one", "/libfx_elf.so");
	check_resolves(&c, "__fx_g", "fx_lib_one", "/libfx_elf.so");

	/* No .size: the first assembly function reaches exactly to the second. */
	check_resolves(&c, "fx_asm_nosize", "fx_asm_nosize", "/libfx_elf.so");
	s = resolve(&c, child_addr(&c, "fx_asm_nosize"), &e, &nosize, &path);
	assert_non_null(s);
	assert_int_equal(s->size, child_addr(&c, "fx_asm_next") - child_addr(&c, "fx_asm_nosize"));
	s = fl_elfsyms__find(e, nosize + s->size);
	assert_non_null(s);
	assert_string_equal(s->name, "fx_asm_next");
	assert_true(s->size > 0);
	fl_elfsyms__free(e);
	child_stop(&c);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void test_not_elf(void **state)
{
	char dir[] = "/tmp/fl-elfsyms-XXXXXX", path[PATH_MAX];
	struct fl_elfsyms *e = NULL;
	const char *text = "#!/bin/sh\necho not an ELF file\n";

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/script", dir);
	write_file(path, text, strlen(text));
	assert_int_equal(fl_elfsyms__open(path, &e), -EINVAL);
	assert_null(e);
	write_file(path, "", 0);
	assert_int_equal(fl_elfsyms__open(path, &e), -EINVAL);
	assert_null(e);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* Every prefix of a real ELF file either fails cleanly or loads: never a crash. */
static void test_truncated(void **state)
{
	char dir[] = "/tmp/fl-elfsyms-XXXXXX", path[PATH_MAX], src[PATH_MAX];
	struct fl_elfsyms *e;
	size_t size, cut;
	char *buf;
	FILE *f;

	(void)state;
	fixture_path(src, sizeof(src), "libfx_elf.so");
	f = fopen(src, "re");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	size = (size_t)ftell(f);
	rewind(f);
	buf = malloc(size);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, size, f), size);
	fclose(f);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cut.so", dir);
	for (cut = 0; cut < size; cut += cut < 256 ? 7 : 97) {
		int err;

		write_file(path, buf, cut);
		e = NULL;
		err = fl_elfsyms__open(path, &e);
		assert_true(err == 0 || err == -EINVAL);
		if (!err)
			(void)fl_elfsyms__find(e, 0x1110);
		fl_elfsyms__free(e);

		e = NULL;
		err = fl_elfsyms__from_memory(buf, cut ? cut : 1, &e);
		assert_true(err == 0 || err == -EINVAL);
		fl_elfsyms__free(e);
	}
	free(buf);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

static void test_not_regular(void **state)
{
	char dir[] = "/tmp/fl-elfsyms-XXXXXX", path[PATH_MAX];
	struct fifo_watch w = {.writer = -1};
	struct fl_elfsyms *e = NULL;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	/* A writer waits on the FIFO: refused without being opened for reading at all. */
	if (fifo_watch_start(&w, path)) {
		assert_int_equal(fl_elfsyms__open(path, &e), -EINVAL);
		assert_false(fifo_watch_opened(&w, path));
	} else if (access(path, F_OK)) {
		assert_int_equal(mkfifo(path, 0600), 0);
	}
	/* Nobody writes the FIFO now: a blocking open or read would hang here. */
	alarm(10);
	assert_int_equal(fl_elfsyms__open(path, &e), -EINVAL);
	assert_int_equal(fl_elfsyms__open("/dev/null", &e), -EINVAL);
	assert_int_equal(fl_elfsyms__open("/dev/zero", &e), -EINVAL);
	alarm(0);
	assert_int_equal(fl_elfsyms__open(dir, &e), -EISDIR);
	assert_null(e);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

static void test_missing(void **state)
{
	struct fl_elfsyms *e = NULL;

	(void)state;
	assert_int_equal(fl_elfsyms__open("/nonexistent/flamed/no-such-file", &e), -ENOENT);
	assert_null(e);
	assert_int_equal(fl_elfsyms__open(NULL, &e), -EINVAL);
	fl_elfsyms__free(NULL);
	assert_null(fl_elfsyms__find(NULL, 0x1000));
	assert_int_equal(fl_elfsyms__count(NULL), 0);
}

/* The vdso image's size, from its own headers: sections end the file. */
static size_t vdso_size(const void *base)
{
	const ElfW(Ehdr) *eh = base;
	size_t end = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	size_t ph_end = eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize;

	assert_memory_equal(eh->e_ident, ELFMAG, SELFMAG);
	return end > ph_end ? end : ph_end;
}

static void test_vdso(void **state)
{
	uintptr_t base = getauxval(AT_SYSINFO_EHDR);
	const char *names[] = { "__vdso_clock_gettime", "clock_gettime" };
	const char *versions[] = { "LINUX_2.6", "LINUX_2.6.39" };
	const struct fl_elfsym *s;
	struct fl_elfsyms *e = NULL;
	void *h, *fn = NULL;
	uint64_t vaddr;
	size_t i, j;

	(void)state;
	if (!base) {
		skip();
		return;
	}
	assert_int_equal(fl_elfsyms__from_memory((const void *)base, vdso_size((void *)base), &e),
			 0);
	assert_true(fl_elfsyms__count(e) > 0);

	/* Ask the dynamic linker, not our parser, where clock_gettime of the vdso is. */
	h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = dlopen("linux-vdso64.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = dlopen("linux-gate.so.1", RTLD_NOW | RTLD_NOLOAD);
	for (i = 0; h && !fn && i < sizeof(names) / sizeof(names[0]); i++)
		for (j = 0; !fn && j < sizeof(versions) / sizeof(versions[0]); j++)
			fn = dlvsym(h, names[i], versions[j]);
	if (!fn) {
		fl_elfsyms__free(e);
		if (h)
			dlclose(h);
		skip();
		return;
	}
	/* The vdso is one mapping from file offset 0 at base. */
	assert_int_equal(fl_elfsyms__offset_to_vaddr(e, (uintptr_t)fn - base, &vaddr), 0);
	s = fl_elfsyms__find(e, vaddr);
	assert_non_null(s);
	assert_non_null(strstr(s->name, "clock_gettime"));
	assert_int_equal(s->addr, vaddr);
	dlclose(h);
	fl_elfsyms__free(e);
}

static void test_mapping_symbols(void **state)
{
	const char *yes[] = { "$a",	"$d",	"$t",	     "$x",
			      "$x.foo", "$d.1", "$a.rodata", "$xrv64i2p1_m2p0" };
	const char *no[] = { "",       "$",   "$b",	"$ab",	"$x1", "x",
			     "$dummy", "a$x", "$t_foo", "main", "$xr", "$$x" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(fl_elfsym__is_mapping_symbol(yes[i]));
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(fl_elfsym__is_mapping_symbol(no[i]));
	assert_false(fl_elfsym__is_mapping_symbol(NULL));
}

/* A stub objdump names in a PLT section: "ADDR <NAME@plt>:". */
struct stub {
	uint64_t addr;
	char name[256];
};

/* The stubs objdump -d names in path's .plt, .plt.sec and .plt.got, but the unnamed (*ABS*+0x...@plt). */
static size_t objdump_stubs(const char *path, struct stub *out, size_t max)
{
	char cmd[PATH_MAX + 128], line[1024];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "objdump -d -j .plt -j .plt.sec -j .plt.got '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a;
		char name[256];
		size_t len;

		if (sscanf(line, "%llx <%255[^>]>:", &a, name) != 2)
			continue;
		len = strlen(name);
		if (len <= 4 || strcmp(name + len - 4, "@plt") || strchr(name, '*') || strchr(name, '+'))
			continue;
		assert_true(n < max);
		out[n].addr = a;
		snprintf(out[n].name, sizeof(out[n].name), "%s", name);
		n++;
	}
	pclose(p);
	return n;
}

/*
 * PLT stubs are named NAME@plt at the addresses objdump gives them, in the
 * classic lazy PLT, the IBT PLT (.plt.sec) with -z now, a library, libc
 * (.plt.got, IRELATIVE slots) and this test itself; no stub objdump does
 * not name.
 */
static void test_plt_stubs(void **state)
{
#if defined(__x86_64__)
	static const char *const fixtures[] = {"nofp_plt_lazy", "nofp_plt_now", "libnofp_plt.so"};
	static struct stub stubs[8192];
	char paths[5][PATH_MAX];
	size_t nr_paths = 0, total = 0;
	Dl_info info;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(fixtures); i++)
		fixture_path(paths[nr_paths++], PATH_MAX, fixtures[i]);
	assert_true(dladdr((void *)&printf, &info) && info.dli_fname);
	snprintf(paths[nr_paths++], PATH_MAX, "%s", info.dli_fname);
	assert_non_null(realpath("/proc/self/exe", paths[nr_paths++]));
	for (size_t i = 0; i < nr_paths; i++) {
		struct fl_elfsyms *e = NULL;
		size_t n = objdump_stubs(paths[i], stubs, ARRAY_SIZE(stubs)), ours = 0;
		bool step = false;

		assert_int_equal(fl_elfsyms__open(paths[i], &e), 0);
		for (size_t j = 0; j < n; j++) {
			const struct fl_elfsym *s = fl_elfsyms__find(e, stubs[j].addr);

			if (!s || s->addr != stubs[j].addr || strcmp(s->name, stubs[j].name))
				fail_msg("%s: %#" PRIx64 ": %s, objdump says %s", paths[i], stubs[j].addr,
					 s ? s->name : "(nothing)", stubs[j].name);
			/* The whole entry, and no further. */
			assert_ptr_equal(fl_elfsyms__find(e, s->addr + s->size - 1), s);
			assert_true(s->size == 8 || s->size == 16);
			step |= !strcmp(s->name, "nofp_plt_step@plt");
		}
		for (size_t j = 0; j < fl_elfsyms__count(e); j++) {
			const char *name = fl_elfsyms__at(e, j)->name;
			size_t len = strlen(name);

			ours += len > 4 && !strcmp(name + len - 4, "@plt");
		}
		printf("# %s: %zu PLT stubs named, objdump names %zu\n", paths[i], ours, n);
		assert_int_equal(ours, n);
		if (i < 2)
			assert_true(step);
		total += n;
		fl_elfsyms__free(e);
	}
	assert_true(total > 20);
#else
	(void)state;
	skip();
#endif
}

/* The value nm -P gives name in path (a symbol of any type), or fails. */
static uint64_t nm_value(const char *path, const char *name)
{
	char cmd[PATH_MAX + 64], line[512];
	uint64_t v = 0;
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm -P '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char sym[256], type;
		unsigned long long a;

		if (sscanf(line, "%255s %c %llx", sym, &type, &a) == 3 && !strcmp(sym, name)) {
			v = a;
			found = true;
		}
	}
	pclose(p);
	if (!found)
		fail_msg("nm does not list %s in %s", name, path);
	return v;
}

/*
 * Code labels (STT_NOTYPE in .text, no size): those outside any function
 * name the code up to the next symbol, as perf names ld.so's _dl_start_user;
 * one inside a function leaves the function its name.
 */
static void test_code_labels(void **state)
{
	struct fl_elfsyms *e = NULL;
	const struct fl_elfsym *s;
	char path[PATH_MAX];

	(void)state;
	fixture_path(path, sizeof(path), "liblabels.so");
	assert_int_equal(fl_elfsyms__open(path, &e), 0);
	s = fl_elfsyms__find(e, nm_value(path, "label_inside"));
	assert_non_null(s);
	assert_string_equal(s->name, "label_func");
	s = fl_elfsyms__find(e, nm_value(path, "label_outside") + 2);
	assert_non_null(s);
	assert_string_equal(s->name, "label_outside");
	assert_int_equal(s->addr, nm_value(path, "label_outside"));
	assert_int_equal(s->size, nm_value(path, "label_outside_global") - s->addr);
	s = fl_elfsyms__find(e, nm_value(path, "label_outside_global"));
	assert_non_null(s);
	assert_string_equal(s->name, "label_outside_global");
	fl_elfsyms__free(e);
}

/* Sizes and lookups hold together on a real library: sorted, one per address, find agrees. */
static void test_consistency(void **state)
{
	const char *libs[] = { "libfx_elf.so", "elf_pie", "elf_nopie", "elf_stripped" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		char path[PATH_MAX];
		struct fl_elfsyms *e = NULL;

		fixture_path(path, sizeof(path), libs[i]);
		assert_int_equal(fl_elfsyms__open(path, &e), 0);
		assert_true(fl_elfsyms__count(e) > 0);
		assert_null(fl_elfsyms__find(e, 0));
		assert_null(fl_elfsyms__find(e, UINT64_MAX));
		fl_elfsyms__free(e);
	}
}

/* Up to this ELF address every debug fixture's functions lie (small PIEs). */
#define DEBUG_FIXTURE_SWEEP 0x4000

/*
 * The two symbol sets agree at every address of the sweep: same symbol (name,
 * start, size) or none. Returns how often name was found in a.
 */
static size_t assert_same_lookups(const struct fl_elfsyms *a, const struct fl_elfsyms *b,
				  const char *name)
{
	size_t hits = 0;

	for (uint64_t v = 0; v < DEBUG_FIXTURE_SWEEP; v++) {
		const struct fl_elfsym *x = fl_elfsyms__find(a, v), *y = fl_elfsyms__find(b, v);

		if (!x || !y) {
			if (x != y)
				fail_msg("%#" PRIx64 ": %s against %s", v, x ? x->name : "nothing",
					 y ? y->name : "nothing");
			continue;
		}
		assert_string_equal(x->name, y->name);
		assert_int_equal(x->addr, y->addr);
		assert_int_equal(x->size, y->size);
		hits += !strcmp(x->name, name);
	}
	return hits;
}

static size_t count_name(const struct fl_elfsyms *e, const char *name)
{
	size_t hits = 0;

	for (uint64_t v = 0; v < DEBUG_FIXTURE_SWEEP; v++) {
		const struct fl_elfsym *s = fl_elfsyms__find(e, v);

		hits += s && !strcmp(s->name, name);
	}
	return hits;
}

/*
 * fl_elfsyms__open_debug() on each debug fixture: where the debug info is
 * found, the stripped binary plus it resolves every address exactly as the
 * unstripped build does (NAME.full); where it is refused, exactly as the
 * stripped binary alone. Segments are the binary's either way.
 */
static void test_debug_info(void **state)
{
	static const char *const dirs[] = {FIXTURE_DIR "/debugroot", NULL};
	const struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = dirs};
	const struct {
		const char *name;
		enum fl_debuginfo_source src;
	} fx[] = {
		{"dbg_link", FL_DEBUGINFO_DEBUGLINK},
		{"dbg_link_nobid", FL_DEBUGINFO_DEBUGLINK},
		{"dbg_link_ddir", FL_DEBUGINFO_DEBUGLINK},
		{"dbg_bid", FL_DEBUGINFO_BUILD_ID},
		{"dbg_mini", FL_DEBUGINFO_MINIDEBUGINFO},
		{"dbg_badcrc", FL_DEBUGINFO_NONE},
		{"dbg_wrongbid", FL_DEBUGINFO_NONE},
		{"elf_pie", FL_DEBUGINFO_NONE},
		{"elf_stripped", FL_DEBUGINFO_NONE},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fx) / sizeof(fx[0]); i++) {
		struct fl_elfsyms *e = NULL, *plain = NULL, *full = NULL;
		char path[PATH_MAX], full_path[PATH_MAX + 8];
		bool dbg = !strncmp(fx[i].name, "dbg_", 4);
		int fd;

		fixture_path(path, sizeof(path), fx[i].name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(fl_elfsyms__open_debug(fd, path, &o, &e), 0);
		/* The fd stays the caller's and usable. */
		assert_int_equal(fl_elfsyms__open_fd(fd, &plain), 0);
		close(fd);
		assert_int_equal(fl_elfsyms__debug_source(e), fx[i].src);
		assert_int_equal(fl_elfsyms__debug_source(plain), FL_DEBUGINFO_NONE);

		for (uint64_t off = 0; off < 0x3000; off += 0x10) {
			uint64_t va = 0, vb = 0;
			int ra = fl_elfsyms__offset_to_vaddr(e, off, &va);

			assert_int_equal(ra, fl_elfsyms__offset_to_vaddr(plain, off, &vb));
			assert_int_equal(va, vb);
		}
		if (fx[i].src == FL_DEBUGINFO_NONE) {
			assert_int_equal(fl_elfsyms__count(e), fl_elfsyms__count(plain));
			assert_same_lookups(e, plain, "");
			if (dbg)
				assert_int_equal(count_name(e, "fx_dbg_hidden_one"), 0);
		} else {
			snprintf(full_path, sizeof(full_path), "%s.full", path);
			assert_int_equal(fl_elfsyms__open(full_path, &full), 0);
			assert_int_equal(fl_elfsyms__count(e), fl_elfsyms__count(full));
			assert_true(assert_same_lookups(e, full, "fx_dbg_hidden_one") > 0);
			assert_true(count_name(e, "fx_dbg_hidden_two") > 0);
			assert_int_equal(count_name(plain, "fx_dbg_hidden_one"), 0);
			assert_true(fl_elfsyms__count(e) > fl_elfsyms__count(plain));
		}
		print_message("%s: %zu symbols with %s debug info, %zu without\n", fx[i].name,
			      fl_elfsyms__count(e), fl_debuginfo_source__str(fx[i].src),
			      fl_elfsyms__count(plain));
		fl_elfsyms__free(full);
		fl_elfsyms__free(plain);
		fl_elfsyms__free(e);
	}
}

static void test_debug_info_args(void **state)
{
	struct fl_elfsyms *e = NULL;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	(void)state;
	assert_int_equal(fl_elfsyms__open_debug(-1, NULL, NULL, &e), -EINVAL);
	assert_int_equal(fl_elfsyms__open_debug(fd, "/dev/null", NULL, &e), -EINVAL);
	assert_int_equal(fl_elfsyms__from_debuginfo(NULL, &e), -EINVAL);
	assert_null(e);
	assert_int_equal(fl_elfsyms__debug_source(NULL), FL_DEBUGINFO_NONE);
	close(fd);
}

/* The file at path whole in memory (*size bytes), for the caller to free. */
static void *slurp(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf;

	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*size = (size_t)st.st_size;
	return buf;
}

/*
 * A string table of 1 MiB or more stays in the file: the symbols hold a
 * fraction of the memory the copied names take, find() and at() read each
 * name when they first hand its symbol out, and every name, address and
 * size is what the same file read from memory (names copied) gives. No
 * name is read when the symbols are; those of aliases that tie on binding
 * are read, and chosen from, when their symbol is first handed out.
 */
static void test_lazy_names(void **state)
{
	struct fl_elfsyms *lazy = NULL, *copied = NULL;
	char path[PATH_MAX];
	size_t size, n, lazy_bytes, names = 0;
	void *image;

	(void)state;
	fixture_path(path, sizeof(path), "libbignames.so");
	image = slurp(path, &size);
	assert_int_equal(fl_elfsyms__from_memory(image, size, &copied), 0);
	free(image);
	assert_int_equal(fl_elfsyms__open(path, &lazy), 0);
	n = fl_elfsyms__count(copied);
	assert_true(n >= 4096);
	assert_int_equal(fl_elfsyms__count(lazy), n);
	lazy_bytes = fl_elfsyms__bytes(lazy);
	print_message("# %zu symbols: %zu bytes with names copied, %zu with names left in the file\n",
		      n, fl_elfsyms__bytes(copied), lazy_bytes);
	/* 4096 names of 270 bytes copied; 24 + 8 bytes a symbol left. */
	assert_true(lazy_bytes * 4 < fl_elfsyms__bytes(copied));
	for (size_t i = 0; i < n; i += 2) {
		const struct fl_elfsym *c = fl_elfsyms__at(copied, i), *l;

		l = fl_elfsyms__find(lazy, c->addr + c->size / 2);
		assert_non_null(l);
		assert_int_equal(l->addr, c->addr);
		assert_int_equal(l->size, c->size);
		assert_string_equal(l->name, c->name);
		names += strlen(c->name) + 1;
	}
	/* The names read are counted, and only those. */
	assert_true(fl_elfsyms__bytes(lazy) >= lazy_bytes + names);
	assert_true(fl_elfsyms__bytes(lazy) < lazy_bytes + names + n * sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		const struct fl_elfsym *c = fl_elfsyms__at(copied, i), *l = fl_elfsyms__at(lazy, i);

		assert_int_equal(l->addr, c->addr);
		assert_string_equal(l->name, c->name);
	}
	/*
	 * The .plt.got stub through which the library calls __cxa_finalize:
	 * named from .dynsym and a .dynstr of more than 1 MiB, each read
	 * from the file for the one symbol, as from memory.
	 */
	{
		size_t stubs = 0;

		for (size_t i = 0; i < n; i++)
			stubs += !strcmp(fl_elfsyms__at(lazy, i)->name, "__cxa_finalize@plt");
		assert_int_equal(stubs, 1);
	}
	/* Two aliases that tie but for their names: the first by strcmp, read from the file. */
	assert_string_equal(fl_elfsyms__find(lazy, nm_value(path, "bignames_alias_b"))->name,
			    "bignames_alias_a");
	fl_elfsyms__free(copied);
	fl_elfsyms__free(lazy);
}

/*
 * The names left in a file are its owner's to change: overwritten with
 * noise (no NUL left), cut short, or rewritten in place with names as
 * valid as any (its size the same, its modification time not) after the
 * symbols were read, a name not read yet reads as "" and find() finds
 * nothing there; a name read before stays. Nothing is read outside the
 * table (the sanitized build checks that).
 */
static void test_lazy_names_file_changed(void **state)
{
	char path[PATH_MAX], noise[4096];
	struct fl_elfsyms *e = NULL, *copied = NULL;
	const struct fl_elfsym *first;
	uint64_t second, last;
	struct stat st;
	size_t size, n;
	void *image;
	int fd;

	(void)state;
	fixture_path(path, sizeof(path), "libbignames.so");
	image = slurp(path, &size);
	assert_int_equal(fl_elfsyms__from_memory(image, size, &copied), 0);
	free(image);
	n = fl_elfsyms__count(copied);
	assert_true(n > 3);
	second = fl_elfsyms__at(copied, 1)->addr;
	last = fl_elfsyms__at(copied, n - 1)->addr;
	memset(noise, 0xaa, sizeof(noise));
	for (int how = 0; how < 3; how++) {
		fd = scratch_copy_unlinked(path);
		assert_true(fd >= 0);
		assert_int_equal(fstat(fd, &st), 0);
		assert_int_equal(fl_elfsyms__open_fd(fd, &e), 0);
		assert_int_equal(fl_elfsyms__count(e), n);
		first = fl_elfsyms__at(e, 0);
		assert_string_equal(first->name, fl_elfsyms__at(copied, 0)->name);
		assert_non_null(fl_elfsyms__find(e, second));
		if (how == 1) {
			assert_int_equal(ftruncate(fd, st.st_size / 2), 0);
		} else if (how == 0) {
			for (off_t off = 64; off < st.st_size; off += (off_t)sizeof(noise))
				assert_int_equal(pwrite(fd, noise, sizeof(noise), off), sizeof(noise));
		} else {
			/* The last name's bytes, each a 'z' now; the time it was changed, another. */
			const char *want = fl_elfsyms__at(copied, n - 1)->name;
			const struct timespec times[2] = {{.tv_nsec = UTIME_OMIT},
							  {.tv_sec = st.st_mtim.tv_sec - 10}};
			char *z = strdup(want), *at;

			assert_non_null(z);
			memset(z, 'z', strlen(z));
			image = slurp(path, &size);
			at = memmem(image, size, want, strlen(want) + 1);
			assert_non_null(at);
			assert_int_equal(pwrite(fd, z, strlen(z), at - (char *)image), strlen(z));
			assert_int_equal(futimens(fd, times), 0);
			free(image);
			free(z);
		}
		assert_null(fl_elfsyms__find(e, last));
		assert_string_equal(fl_elfsyms__at(e, n - 1)->name, "");
		assert_null(fl_elfsyms__find(e, last));
		/* What was read before stays. */
		assert_non_null(fl_elfsyms__find(e, second));
		assert_string_equal(first->name, fl_elfsyms__at(copied, 0)->name);
		fl_elfsyms__free(e);
		close(fd);
	}
	fl_elfsyms__free(copied);
}

/* --- A hand-made ELF file: symbol tables read from a file and from memory agree ------- */

struct mini_sym {
	const char *name;
	uint64_t value, size;
	unsigned char bind;
};

/*
 * An ELF64 file of the host's byte order with a .text at 0x1000 (1 MiB)
 * and a .symtab of the functions syms (all in .text's index), into buf
 * (size bytes); returns its length.
 */
static size_t mini_elf(unsigned char *buf, size_t size, const struct mini_sym *syms, size_t n)
{
	static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Shdr *sh;
	Elf64_Sym *st;
	size_t off = sizeof(*eh), sym_off, str_off, shstr_off, str_len = 1;

	memset(buf, 0, size);
	sym_off = off;
	st = (Elf64_Sym *)(buf + sym_off);
	off += (n + 1) * sizeof(Elf64_Sym);
	str_off = off;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(syms[i].name) + 1;

		assert_true(str_off + str_len + len < size);
		memcpy(buf + str_off + str_len, syms[i].name, len);
		st[i + 1] = (Elf64_Sym){.st_name = (Elf64_Word)str_len,
					.st_info = (unsigned char)ELF64_ST_INFO(syms[i].bind, STT_FUNC),
					.st_shndx = 1,
					.st_value = syms[i].value,
					.st_size = syms[i].size};
		str_len += len;
	}
	off += str_len;
	shstr_off = off;
	memcpy(buf + off, shstr, sizeof(shstr));
	off += sizeof(shstr);
	off = (off + 7) & ~(size_t)7;
	assert_true(off + 5 * sizeof(Elf64_Shdr) <= size);
	sh = (Elf64_Shdr *)(buf + off);
	sh[1] = (Elf64_Shdr){.sh_name = 1, .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			     .sh_addr = 0x1000, .sh_size = 1 << 20};
	sh[2] = (Elf64_Shdr){.sh_name = 7, .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
			     .sh_size = (n + 1) * sizeof(Elf64_Sym), .sh_link = 3, .sh_info = 1,
			     .sh_entsize = sizeof(Elf64_Sym), .sh_addralign = 8};
	sh[3] = (Elf64_Shdr){.sh_name = 15, .sh_type = SHT_STRTAB, .sh_offset = str_off,
			     .sh_size = str_len, .sh_addralign = 1};
	sh[4] = (Elf64_Shdr){.sh_name = 23, .sh_type = SHT_STRTAB, .sh_offset = shstr_off,
			     .sh_size = sizeof(shstr), .sh_addralign = 1};
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_shoff = off;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 5;
	eh->e_shstrndx = 4;
	return off + 5 * sizeof(Elf64_Shdr);
}

/* The symbols of image (len bytes) read from memory and from a file holding it. */
static void mini_open(const unsigned char *image, size_t len, struct fl_elfsyms **mem,
		      struct fl_elfsyms **file)
{
	char path[] = "/tmp/flamed-test-elfsyms.XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, image, len), (ssize_t)len);
	close(fd);
	assert_int_equal(fl_elfsyms__from_memory(image, len, mem), 0);
	assert_int_equal(fl_elfsyms__open(path, file), 0);
	unlink(path);
}

static void assert_sym(const struct fl_elfsyms *e, uint64_t at, const char *name, uint64_t addr,
		       uint64_t size)
{
	const struct fl_elfsym *s = fl_elfsyms__find(e, at);

	if (!s)
		fail_msg("%#" PRIx64 ": nothing, not %s", at, name);
	assert_string_equal(s->name, name);
	assert_int_equal(s->addr, addr);
	assert_int_equal(s->size, size);
}

/*
 * Symbols in no order, aliases of one address, a zero-size one, and with
 * spread_out a function at 0xffff800000000000 too: the addresses then span
 * more than a radix key holds beside the index, and another sort orders
 * them. Read from memory (libelf) and from the file (a chunk at a time)
 * alike, into the same table.
 */
static void test_hand_made(void **state)
{
	static const struct mini_sym syms[] = {
		{"f_next", 0x2100, 0x20, STB_GLOBAL},
		{"f_low", 0x1000, 0x10, STB_GLOBAL},
		{"a_local", 0x3000, 8, STB_LOCAL},
		{"f_zero", 0x2000, 0, STB_GLOBAL},
		{"a_weak", 0x3000, 4, STB_WEAK},
		{"a_global", 0x3000, 16, STB_GLOBAL},
		{"f_high", 0xffff800000000000, 0x40, STB_GLOBAL},
	};
	static unsigned char image[4096];

	(void)state;
	for (int spread_out = 0; spread_out < 2; spread_out++) {
		size_t n = ARRAY_SIZE(syms) - !spread_out, len = mini_elf(image, sizeof(image), syms, n);
		struct fl_elfsyms *e[2];

		mini_open(image, len, &e[0], &e[1]);
		for (int k = 0; k < 2; k++) {
			assert_int_equal(fl_elfsyms__count(e[k]), spread_out ? 5 : 4);
			assert_sym(e[k], 0x1008, "f_low", 0x1000, 0x10);
			assert_null(fl_elfsyms__find(e[k], 0x1010));
			/* To the next symbol. */
			assert_sym(e[k], 0x20ff, "f_zero", 0x2000, 0x100);
			assert_sym(e[k], 0x2100, "f_next", 0x2100, 0x20);
			/* The global name, and the largest size of the three. */
			assert_sym(e[k], 0x300f, "a_global", 0x3000, 16);
			if (spread_out)
				assert_sym(e[k], 0xffff80000000003f, "f_high", 0xffff800000000000, 0x40);
			for (size_t i = 1; i < fl_elfsyms__count(e[k]); i++)
				assert_true(fl_elfsyms__at(e[k], i - 1)->addr < fl_elfsyms__at(e[k], i)->addr);
		}
		fl_elfsyms__free(e[0]);
		fl_elfsyms__free(e[1]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pie),
		cmocka_unit_test(test_nopie),
		cmocka_unit_test(test_stripped_dynsym_only),
		cmocka_unit_test(test_shared_lib),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_not_regular),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_mapping_symbols),
		cmocka_unit_test(test_consistency),
		cmocka_unit_test(test_plt_stubs),
		cmocka_unit_test(test_code_labels),
		cmocka_unit_test(test_debug_info),
		cmocka_unit_test(test_debug_info_args),
		cmocka_unit_test(test_lazy_names),
		cmocka_unit_test(test_lazy_names_file_changed),
		cmocka_unit_test(test_hand_made),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
