// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for the DWARF reader: files the DWARF names (dwz, .dwo) are found by flamed, never by libdw. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed/symbols/debuginfo.h"
#include "flamed/symbols/elfsyms.h"
#include "flamed/files/regfile.h"
#include "flamed/symbols/srcinfo.h"
#include "hostile_paths.h"

#if !defined(FIXTURE_DIR)
#error "FIXTURE_DIR must name the fixtures directory"
#endif

/* No debug directory: only what a file names itself is looked for. */
static const char *const no_dirs[] = {"/nonexistent/flamed-test-debug", NULL};

/* The address of function name in the ELF file at path. */
static uint64_t addr_of(const char *path, const char *name)
{
	struct fl_elfsyms *e = NULL;
	uint64_t addr = 0;

	assert_int_equal(fl_elfsyms__open(path, &e), 0);
	for (size_t i = 0; i < fl_elfsyms__count(e); i++)
		if (!strcmp(fl_elfsyms__at(e, i)->name, name))
			addr = fl_elfsyms__at(e, i)->addr;
	fl_elfsyms__free(e);
	assert_true(addr != 0);
	return addr;
}

/* The debug info of path, found with no debug directory. */
static struct fl_debuginfo *find(const char *path)
{
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = no_dirs};
	struct fl_debuginfo *di = NULL;
	int fd = fl_regfile__open(AT_FDCWD, path, 0, NULL);

	assert_true(fd >= 0);
	assert_int_equal(fl_debuginfo__find(fd, path, &o, &di), 0);
	close(fd);
	return di;
}

/* The name DWARF gives the function at vaddr (NULL: none), through srcinfo. */
static const char *frame_name(struct fl_debuginfo *di, uint64_t vaddr, struct fl_srcinfo **si)
{
	struct fl_src_frame out[8];
	size_t n;

	assert_int_equal(
		fl_srcinfo__open(fl_debuginfo__dwarf_elf(di), fl_debuginfo__alt_elf(di), si), 0);
	n = fl_srcinfo__frames(*si, vaddr, out, 8);
	assert_true(n >= 1);
	return out[0].name;
}

static bool have_dwz_fixture(char *path, size_t size)
{
	snprintf(path, size, "%s/dbg_dwz_a", FIXTURE_DIR);
	return access(path, R_OK) == 0;
}

/* Names moved by dwz into the alternate file are read from it. */
static void test_dwz_alt(void **state)
{
	char path[PATH_MAX];
	struct fl_debuginfo *di;
	struct fl_srcinfo *si = NULL;
	const char *name;

	(void)state;
	if (!have_dwz_fixture(path, sizeof(path)))
		skip();
	di = find(path);
	assert_non_null(fl_debuginfo__alt_elf(di));
	name = frame_name(di, addr_of(path, "fx_dbg_hidden_one") + 4, &si);
	assert_non_null(name);
	assert_string_equal(name, "fx_dbg_hidden_one");
	fl_srcinfo__free(si);
	fl_debuginfo__free(di);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	assert_true(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	close(out);
}

/*
 * The alternate file's name leads to a FIFO (the binary and its directory
 * are a user's): not opened, no hang; the names it held are missing. Then
 * another ELF file, whose build-id is not the one asked for: not used.
 */
static void test_dwz_alt_hostile(void **state)
{
	char src[PATH_MAX], dir[] = "/tmp/fl-srcinfo-XXXXXX", bin[PATH_MAX], alt[PATH_MAX];
	struct fifo_watch w = {.writer = -1};
	struct fl_debuginfo *di;
	struct fl_srcinfo *si = NULL;
	uint64_t addr;

	(void)state;
	if (!have_dwz_fixture(src, sizeof(src)))
		skip();
	assert_non_null(mkdtemp(dir));
	snprintf(bin, sizeof(bin), "%s/dbg_dwz_a", dir);
	snprintf(alt, sizeof(alt), "%s/dbg_dwz.common", dir);
	copy_file(src, bin);
	addr = addr_of(bin, "fx_dbg_hidden_one") + 4;
	if (!fifo_watch_start(&w, alt))
		skip();
	alarm(20); /* libdw's own open() of a FIFO with no writer never returns */
	di = find(bin);
	assert_null(fl_debuginfo__alt_elf(di));
	assert_null(frame_name(di, addr, &si));
	alarm(0);
	assert_false(fifo_watch_opened(&w, alt));
	fl_srcinfo__free(si);
	fl_debuginfo__free(di);

	assert_int_equal(unlink(alt), 0);
	snprintf(src, sizeof(src), "%s/dbg_dwz_b", FIXTURE_DIR);
	copy_file(src, alt);
	di = find(bin);
	assert_null(fl_debuginfo__alt_elf(di));
	assert_null(frame_name(di, addr, &si));
	fl_srcinfo__free(si);
	fl_debuginfo__free(di);
	unlink(alt);
	unlink(bin);
	rmdir(dir);
}

/* Where the skeleton unit of the ELF at path says its .dwo file is. */
static void dwo_path_of(const char *path, char *dwo, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	Dwarf_Attribute a;
	const char *dir = NULL, *name = NULL;
	uint8_t type;

	assert_non_null(dw);
	while (!name && dwarf_get_units(dw, cu, &cu, NULL, &type, &cudie, NULL) == 0) {
		if (type != DW_UT_skeleton)
			continue;
		if (dwarf_attr(&cudie, DW_AT_dwo_name, &a))
			name = dwarf_formstring(&a);
		if (dwarf_attr(&cudie, DW_AT_comp_dir, &a))
			dir = dwarf_formstring(&a);
	}
	assert_non_null(name);
	if (name[0] == '/' || !dir)
		snprintf(dwo, size, "%s", name);
	else
		snprintf(dwo, size, "%s/%s", dir, name);
	dwarf_end(dw);
	close(fd);
}

/* Split DWARF is refused, and its .dwo never opened (libdw would open() and map it itself). */
static void test_split_refused(void **state)
{
	char path[PATH_MAX], dwo[PATH_MAX];
	struct fl_debuginfo *di;
	struct fl_srcinfo *si = NULL;
	struct inotify_event ev;
	int in;

	(void)state;
	snprintf(path, sizeof(path), "%s/dbg_split", FIXTURE_DIR);
	dwo_path_of(path, dwo, sizeof(dwo));
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(in >= 0);
	assert_true(inotify_add_watch(in, dwo, IN_OPEN) >= 0);
	di = find(path);
	assert_non_null(fl_debuginfo__dwarf_elf(di));
	assert_int_equal(
		fl_srcinfo__open(fl_debuginfo__dwarf_elf(di), fl_debuginfo__alt_elf(di), &si),
		-ENOTSUP);
	assert_null(si);
	fl_debuginfo__free(di);
	assert_int_equal(read(in, &ev, sizeof(ev)), -1);
	assert_int_equal(errno, EAGAIN);
	close(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dwz_alt),
		cmocka_unit_test(test_dwz_alt_hostile),
		cmocka_unit_test(test_split_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
