// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tests for debuginfo: each fixture finds its debug info the expected way and
 * gives back exactly the function symbols nm listed before it was stripped;
 * mismatched files, escapes from a root and hostile notes, debuglinks and
 * xz streams are refused without a crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <lzma.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flamed/symbols/debuginfo.h"
#include "flamed/symbols/elfsyms.h"
#include "flamed/common/log.h"

#define DEBUGROOT FIXTURE_DIR "/debugroot"
#define MAX_NM 256

static const char *const fixture_dirs[] = {DEBUGROOT, NULL};

/* --- debug messages, to tell why a candidate was refused ------------------------- */

static char logbuf[16384];
static size_t loglen;

static void capture(const char *fmt, va_list ap)
{
	int n;

	if (loglen >= sizeof(logbuf) - 1)
		return;
	n = vsnprintf(logbuf + loglen, sizeof(logbuf) - loglen, fmt, ap);
	if (n > 0)
		loglen += (size_t)n < sizeof(logbuf) - loglen ? (size_t)n
							      : sizeof(logbuf) - 1 - loglen;
}

static void log_reset(void)
{
	loglen = 0;
	logbuf[0] = '\0';
}

static int setup(void **state)
{
	(void)state;
	fl_set_print(capture);
	log_reset();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fl_set_print(NULL);
	return 0;
}

/* --- fixtures ---------------------------------------------------------------------- */

static void fixture_path(char *buf, size_t size, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", FIXTURE_DIR, name);

	assert_true(n > 0 && (size_t)n < size);
}

static int open_fixture(const char *name)
{
	char path[PATH_MAX];
	int fd;

	fixture_path(path, sizeof(path), name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static struct fl_debuginfo *find_opts(const char *name, const struct fl_debuginfo_opts *o)
{
	struct fl_debuginfo *di = NULL;
	char path[PATH_MAX];
	int fd = open_fixture(name);

	fixture_path(path, sizeof(path), name);
	assert_int_equal(fl_debuginfo__find(fd, path, o, &di), 0);
	assert_non_null(di);
	/* The object keeps its own fd. */
	close(fd);
	return di;
}

static struct fl_debuginfo *find(const char *name)
{
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = fixture_dirs};

	return find_opts(name, &o);
}

/* A function symbol as nm listed it in NAME.nm, made from the unstripped NAME.full. */
struct nm_sym {
	char name[128];
	uint64_t addr;
};

static char *trim(char *s)
{
	char *e;

	while (*s == ' ')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/* nm --format=sysv lines: "name |value|class|type|size|line|section". */
static size_t read_nm(const char *fixture, struct nm_sym *out, size_t max)
{
	char path[PATH_MAX], line[512];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.nm", FIXTURE_DIR, fixture);
	f = fopen(path, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *col[7], *p = line;
		size_t c;

		for (c = 0; c < 7 && p; c++) {
			col[c] = p;
			p = strchr(p, '|');
			if (p)
				*p++ = '\0';
		}
		if (c < 7 || strcmp(trim(col[3]), "FUNC") || !*trim(col[1]))
			continue;
		assert_true(n < max);
		snprintf(out[n].name, sizeof(out[n].name), "%s", trim(col[0]));
		out[n].addr = strtoull(trim(col[1]), NULL, 16);
		n++;
	}
	fclose(f);
	assert_true(n > 0);
	return n;
}

static uint64_t nm_addr(const struct nm_sym *nm, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(nm[i].name, name))
			return nm[i].addr;
	fail_msg("nm does not list %s", name);
	return 0;
}

/*
 * Every function nm listed is found at its address, under its name (or the
 * name of an alias at the same address), and nothing else is: the count is
 * the number of distinct addresses, besides the PLT stubs ("puts@plt",
 * which nm does not list).
 */
static void assert_same_as_nm(const struct fl_elfsyms *e, const struct nm_sym *nm, size_t n)
{
	size_t distinct = 0, stubs = 0;

	for (size_t i = 0; i < fl_elfsyms__count(e); i++) {
		const char *name = fl_elfsyms__at(e, i)->name;
		size_t len = strlen(name);

		stubs += len > 4 && !strcmp(name + len - 4, "@plt");
	}

	for (size_t i = 0; i < n; i++) {
		const struct fl_elfsym *s = fl_elfsyms__find(e, nm[i].addr);
		bool named = false, first = true;

		assert_non_null(s);
		assert_int_equal(s->addr, nm[i].addr);
		for (size_t j = 0; j < n; j++) {
			if (nm[j].addr != nm[i].addr)
				continue;
			named |= !strcmp(nm[j].name, s->name);
			first &= j >= i;
		}
		if (!named)
			fail_msg("%#" PRIx64 ": %s, nm says %s", nm[i].addr, s->name, nm[i].name);
		distinct += first;
	}
	assert_int_equal(fl_elfsyms__count(e), distinct + stubs);
}

/* No symbol of e names the function nm puts at name's address. */
static void assert_hidden(const struct fl_elfsyms *e, const struct nm_sym *nm, size_t n,
			  const char *name)
{
	const struct fl_elfsym *s = fl_elfsyms__find(e, nm_addr(nm, n, name));

	assert_true(!s || strcmp(s->name, name));
}

/* The symbols of the stripped binary alone (its .dynsym). */
static struct fl_elfsyms *binary_only(const char *name)
{
	struct fl_elfsyms *e = NULL;
	char path[PATH_MAX];

	fixture_path(path, sizeof(path), name);
	assert_int_equal(fl_elfsyms__open(path, &e), 0);
	return e;
}

/* DWARF of the ELF that has it names the static function at its nm address. */
static void assert_dwarf_names(Elf *elf, uint64_t addr, const char *name)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	Dwarf_Die cu, *scopes = NULL;
	int n;

	assert_non_null(dw);
	assert_non_null(dwarf_addrdie(dw, addr, &cu));
	n = dwarf_getscopes(&cu, addr, &scopes);
	assert_true(n > 0);
	assert_int_equal(dwarf_tag(&scopes[0]), DW_TAG_subprogram);
	assert_string_equal(dwarf_diename(&scopes[0]), name);
	free(scopes);
	dwarf_end(dw);
}

/*
 * A fixture whose debug info is found (source, and path when it is a file):
 * symbols equal nm's of the unstripped build, the static functions are
 * named, which the stripped binary alone does not do; for a debug file, its
 * DWARF names them too.
 */
static void check_found(const char *fixture, enum fl_debuginfo_source want, const char *want_path)
{
	struct nm_sym nm[MAX_NM];
	size_t n = read_nm(fixture, nm, MAX_NM);
	struct fl_elfsyms *plain = binary_only(fixture);
	struct fl_debuginfo *di = find(fixture);
	struct fl_elfsyms *e = NULL;
	const struct fl_elfsym *s;

	assert_int_equal(fl_debuginfo__source(di), want);
	assert_non_null(fl_debuginfo__binary_elf(di));
	if (want_path) {
		assert_non_null(fl_debuginfo__path(di));
		assert_string_equal(fl_debuginfo__path(di), want_path);
		assert_non_null(fl_debuginfo__debug_elf(di));
		assert_null(fl_debuginfo__mini_elf(di));
		assert_ptr_equal(fl_debuginfo__dwarf_elf(di), fl_debuginfo__debug_elf(di));
		assert_dwarf_names(fl_debuginfo__dwarf_elf(di), nm_addr(nm, n, "fx_dbg_hidden_one"),
				   "fx_dbg_hidden_one");
	} else {
		assert_null(fl_debuginfo__path(di));
		assert_null(fl_debuginfo__debug_elf(di));
	}
	assert_int_equal(fl_elfsyms__from_debuginfo(di, &e), 0);
	fl_debuginfo__free(di); /* symbols are copies */
	assert_int_equal(fl_elfsyms__debug_source(e), want);
	assert_same_as_nm(e, nm, n);
	s = fl_elfsyms__find(e, nm_addr(nm, n, "fx_dbg_hidden_two") + 5);
	assert_non_null(s);
	assert_string_equal(s->name, "fx_dbg_hidden_two");
	print_message("%s: %s, %zu function symbols (%zu without it)\n", fixture,
		      fl_debuginfo_source__str(want), fl_elfsyms__count(e),
		      fl_elfsyms__count(plain));
	fl_elfsyms__free(e);
	assert_true(fl_elfsyms__count(plain) > 0);
	assert_hidden(plain, nm, n, "fx_dbg_hidden_one");
	assert_hidden(plain, nm, n, "fx_dbg_hidden_two");
	fl_elfsyms__free(plain);
}

/* A fixture whose candidates are all refused: the binary's .dynsym only. */
static void check_refused(const char *fixture, const struct fl_debuginfo_opts *o)
{
	struct nm_sym nm[MAX_NM];
	size_t n = read_nm(fixture, nm, MAX_NM);
	struct fl_elfsyms *plain = binary_only(fixture), *e = NULL;
	struct fl_debuginfo *di = find_opts(fixture, o);
	char path[PATH_MAX];
	int fd;

	assert_int_equal(fl_debuginfo__source(di), FL_DEBUGINFO_NONE);
	assert_null(fl_debuginfo__path(di));
	assert_null(fl_debuginfo__debug_elf(di));
	assert_null(fl_debuginfo__mini_elf(di));
	assert_null(fl_debuginfo__dwarf_elf(di));
	fl_debuginfo__free(di);

	fd = open_fixture(fixture);
	fixture_path(path, sizeof(path), fixture);
	assert_int_equal(fl_elfsyms__open_debug(fd, path, o, &e), 0);
	close(fd);
	assert_int_equal(fl_elfsyms__debug_source(e), FL_DEBUGINFO_NONE);
	assert_int_equal(fl_elfsyms__count(e), fl_elfsyms__count(plain));
	assert_true(fl_elfsyms__count(e) > 0);
	assert_non_null(fl_elfsyms__find(e, nm_addr(nm, n, "fx_dbg_exported")));
	assert_hidden(e, nm, n, "fx_dbg_hidden_one");
	assert_hidden(e, nm, n, "fx_dbg_hidden_two");
	print_message("%s: refused, %zu function symbols (.dynsym)\n", fixture,
		      fl_elfsyms__count(e));
	fl_elfsyms__free(e);
	fl_elfsyms__free(plain);
}

/* --- the lookups ------------------------------------------------------------------- */

static void test_crc32(void **state)
{
	static unsigned char buf[1 << 20];
	uint32_t chained;

	(void)state;
	assert_int_equal(fl_debuginfo__crc32(0, "", 0), 0);
	assert_int_equal(fl_debuginfo__crc32(0, "123456789", 9), 0xcbf43926u);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 13);
	/* liblzma's crc32 is the same CRC: a second implementation to agree with. */
	chained = fl_debuginfo__crc32(fl_debuginfo__crc32(0, buf, 1000), buf + 1000,
				      sizeof(buf) - 1000);
	assert_int_equal(chained, lzma_crc32(buf, sizeof(buf), 0));
	assert_int_equal(fl_debuginfo__crc32(0, buf, sizeof(buf)), chained);
}

static void test_debuglink_beside(void **state)
{
	struct fl_debuginfo *di;
	const uint8_t *id;

	(void)state;
	check_found("dbg_link", FL_DEBUGINFO_DEBUGLINK, FIXTURE_DIR "/dbg_link.debug");
	/* It has a build-id (checked instead of the CRC), not in the debug root: the link found it. */
	di = find("dbg_link");
	assert_int_equal(fl_debuginfo__build_id(di, &id), 20);
	fl_debuginfo__free(di);
}

static void test_debuglink_dot_debug(void **state)
{
	struct fl_debuginfo *di;

	(void)state;
	/* No build-id: the CRC decides. */
	di = find("dbg_link_nobid");
	assert_int_equal(fl_debuginfo__build_id(di, NULL), 0);
	fl_debuginfo__free(di);
	check_found("dbg_link_nobid", FL_DEBUGINFO_DEBUGLINK,
		    FIXTURE_DIR "/.debug/dbg_link_nobid.debug");
}

static void test_debuglink_debug_dir(void **state)
{
	struct fl_debuginfo_opts o = {.sz = sizeof(o)};

	(void)state;
	check_found("dbg_link_ddir", FL_DEBUGINFO_DEBUGLINK,
		    DEBUGROOT FIXTURE_DIR "/dbg_link_ddir.debug");
	/* Only under that debug directory: not in /usr/lib/debug. */
	check_refused("dbg_link_ddir", &o);
}

static void test_build_id(void **state)
{
	static const char *const two_dirs[] = {"/nonexistent/flamed-debug", "relative/ignored",
					       DEBUGROOT, NULL};
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = two_dirs};
	char want[PATH_MAX], *p;
	struct fl_debuginfo *di;
	const uint8_t *id;
	size_t len;
	struct stat st;

	(void)state;
	di = find("dbg_bid");
	len = fl_debuginfo__build_id(di, &id);
	assert_int_equal(len, 20);
	/* The build wrote this path from readelf -n's "Build ID". */
	p = want + snprintf(want, sizeof(want), "%s/.build-id/%02x/", DEBUGROOT, id[0]);
	for (size_t i = 1; i < len; i++)
		p += sprintf(p, "%02x", id[i]);
	strcpy(p, ".debug");
	assert_int_equal(stat(want, &st), 0);
	fl_debuginfo__free(di);
	check_found("dbg_bid", FL_DEBUGINFO_BUILD_ID, want);

	di = find_opts("dbg_bid", &o);
	assert_int_equal(fl_debuginfo__source(di), FL_DEBUGINFO_BUILD_ID);
	fl_debuginfo__free(di);

	/* Not in the default /usr/lib/debug, and it has no debuglink. */
	o.debug_dirs = NULL;
	check_refused("dbg_bid", &o);
}

static void test_minidebuginfo(void **state)
{
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = fixture_dirs};
	struct fl_debuginfo *di;

	(void)state;
	check_found("dbg_mini", FL_DEBUGINFO_MINIDEBUGINFO, NULL);
	di = find("dbg_mini");
	assert_non_null(fl_debuginfo__mini_elf(di));
	/* A symbol table, no DWARF, and the stripped binary has none either. */
	assert_null(fl_debuginfo__dwarf_elf(di));
	fl_debuginfo__free(di);

	/* Larger than the cap: refused. */
	o.max_minidebuginfo = 1024;
	log_reset();
	check_refused("dbg_mini", &o);
	assert_non_null(strstr(logbuf, ".gnu_debugdata"));
}

static void test_bad_crc(void **state)
{
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = fixture_dirs};
	struct nm_sym nm[MAX_NM];
	size_t n = read_nm("dbg_badcrc", nm, MAX_NM);
	struct fl_elfsyms *e = NULL;
	const struct fl_elfsym *s;

	(void)state;
	/* The file itself is a good debug file: only the CRC tells it is not the one. */
	assert_int_equal(fl_elfsyms__open(FIXTURE_DIR "/dbg_badcrc.debug", &e), 0);
	s = fl_elfsyms__find(e, nm_addr(nm, n, "fx_dbg_hidden_one"));
	assert_non_null(s);
	assert_string_equal(s->name, "fx_dbg_hidden_one");
	fl_elfsyms__free(e);

	log_reset();
	check_refused("dbg_badcrc", &o);
	assert_non_null(strstr(logbuf, "dbg_badcrc.debug: debuglink CRC mismatch"));
}

static void test_wrong_build_id(void **state)
{
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = fixture_dirs};

	(void)state;
	log_reset();
	check_refused("dbg_wrongbid", &o);
	/* Another build's file at its build-id path; a debuglink to a file without one. */
	assert_non_null(strstr(logbuf, ".debug: build-id mismatch"));
	assert_non_null(strstr(logbuf, "dbg_wrongbid.debug: no build-id"));
}

/* A binary with its own .symtab and DWARF needs nothing else. */
static void test_unstripped(void **state)
{
	struct fl_debuginfo *di = find("elf_pie");

	(void)state;
	assert_int_equal(fl_debuginfo__source(di), FL_DEBUGINFO_NONE);
	assert_null(fl_debuginfo__debug_elf(di));
	assert_non_null(fl_debuginfo__dwarf_elf(di));
	assert_ptr_equal(fl_debuginfo__dwarf_elf(di), fl_debuginfo__binary_elf(di));
	assert_true(fl_debuginfo__build_id(di, NULL) > 0);
	fl_debuginfo__free(di);
}

/*
 * The location lists libdw would inflate and flamed never reads are hidden
 * from it (SHT_NOBITS in libelf's copy of the headers) and not counted; the
 * rest is there, and libdw still reads the functions.
 */
static void test_unread_sections_hidden(void **state)
{
	struct fl_debuginfo *di = find("elf_pie");
	Elf *elf = fl_debuginfo__dwarf_elf(di);
	bool loclists = false, info = false;
	Elf_Scn *scn = NULL;
	uint64_t counted = 0;
	size_t shstrndx;
	Dwarf_CU *unit = NULL;
	Dwarf_Die cu;
	Dwarf *dw;

	(void)state;
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strncmp(name, ".debug_", 7))
			continue;
		if (!strcmp(name, ".debug_loclists")) {
			loclists = true;
			assert_int_equal(sh.sh_type, SHT_NOBITS);
			continue;
		}
		assert_int_equal(sh.sh_type, SHT_PROGBITS);
		info |= !strcmp(name, ".debug_info");
		counted += sh.sh_size;
	}
	assert_true(loclists); /* gcc -O2 -g writes them for elf_pie */
	assert_true(info);
	assert_int_equal(fl_debuginfo__dwarf_bytes(di), counted);
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	assert_non_null(dw);
	assert_int_equal(dwarf_get_units(dw, NULL, &unit, NULL, NULL, &cu, NULL), 0);
	assert_int_equal(dwarf_tag(&cu), DW_TAG_compile_unit);
	dwarf_end(dw);
	fl_debuginfo__free(di);
}

/* --- compressed DWARF, inflated with libdeflate -------------------------------------- */

/* The section of elf named name, and its header in *sh; NULL if none. */
static Elf_Scn *section_named(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		assert_non_null(gelf_getshdr(scn, sh));
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* How many of elf's .debug_ sections are compressed (SHF_COMPRESSED), and how many there are. */
static size_t compressed_debug(Elf *elf, size_t *all)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, n = 0;

	*all = 0;
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strncmp(name, ".debug_", 7) || sh.sh_type == SHT_NOBITS)
			continue;
		(*all)++;
		n += (sh.sh_flags & SHF_COMPRESSED) != 0;
	}
	return n;
}

/*
 * elf_pie_gz (elf_pie with objcopy --compress-debug-sections=zlib): every
 * debug section libdw reads is inflated by fl_debuginfo__inflate_dwarf()
 * into exactly elf_pie's bytes, libelf hands libdw those bytes, and libdw
 * reads the units from them.
 */
static void test_inflate_dwarf(void **state)
{
	struct fl_debuginfo *gz = find("elf_pie_gz"), *plain = find("elf_pie");
	Elf *elf = fl_debuginfo__dwarf_elf(gz), *ref = fl_debuginfo__dwarf_elf(plain);
	uint64_t need = fl_debuginfo__dwarf_bytes(gz);
	Elf_Scn *scn = NULL;
	size_t shstrndx, all, compared = 0;
	Dwarf_CU *unit = NULL;
	Dwarf_Die cu;
	Dwarf *dw;

	(void)state;
	assert_non_null(elf);
	assert_true(compressed_debug(elf, &all) >= 3); /* .debug_info, _abbrev, _line at least */
	assert_int_equal(need, fl_debuginfo__dwarf_bytes(plain));
	fl_debuginfo__inflate_dwarf(gz, need);
	assert_int_equal(compressed_debug(elf, &all), 0);
	/* Counted as before: the budget saw what was inflated. */
	assert_int_equal(fl_debuginfo__dwarf_bytes(gz), need);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, rsh;
		Elf_Data *d, *rd;
		Elf_Scn *rscn;
		const char *name;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strncmp(name, ".debug_", 7) || sh.sh_type == SHT_NOBITS)
			continue;
		rscn = section_named(ref, name, &rsh);
		assert_non_null(rscn);
		d = elf_getdata(scn, NULL);
		rd = elf_getdata(rscn, NULL);
		assert_non_null(d);
		assert_non_null(rd);
		assert_int_equal(sh.sh_size, rsh.sh_size);
		assert_int_equal(d->d_size, rd->d_size);
		assert_memory_equal(d->d_buf, rd->d_buf, rd->d_size);
		compared++;
	}
	assert_int_equal(compared, all);
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	assert_non_null(dw);
	assert_int_equal(dwarf_get_units(dw, NULL, &unit, NULL, NULL, &cu, NULL), 0);
	assert_int_equal(dwarf_tag(&cu), DW_TAG_compile_unit);
	dwarf_end(dw);
	/* Once: a second call inflates nothing more. */
	fl_debuginfo__inflate_dwarf(gz, need);
	fl_debuginfo__free(gz);
	fl_debuginfo__free(plain);
}

/* Past the budget given, sections stay compressed, for libdw to inflate as before. */
static void test_inflate_dwarf_budget(void **state)
{
	struct fl_debuginfo *gz = find("elf_pie_gz");
	Elf *elf = fl_debuginfo__dwarf_elf(gz);
	size_t all, before;
	Dwarf *dw;

	(void)state;
	before = compressed_debug(elf, &all);
	assert_true(before >= 3);
	fl_debuginfo__inflate_dwarf(gz, 16); /* less than any of them inflates to */
	assert_int_equal(compressed_debug(elf, &all), before);
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	assert_non_null(dw);
	dwarf_end(dw);
	fl_debuginfo__free(gz);
}

/*
 * A file whose .debug_info stream is damaged, and whose .debug_line header
 * claims more than its stream holds: both are left as they are (libdw
 * refuses them in its turn), the sound sections are inflated, and nothing
 * is read out of bounds (the sanitized build checks that).
 */
static void test_inflate_dwarf_hostile(void **state)
{
	char dir[] = "/tmp/flamed-test-gz.XXXXXX", path[PATH_MAX], src[PATH_MAX];
	static const unsigned char junk[64] = {0xff, 0x00, 0xee, 0x11};
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = fixture_dirs};
	struct fl_debuginfo *di = NULL;
	GElf_Shdr info, line, sh;
	char *buf;
	size_t len, all;
	uint64_t claim;
	Elf *elf;
	int in, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/elf_pie_gz", dir);
	fixture_path(src, sizeof(src), "elf_pie_gz");
	in = open(src, O_RDONLY | O_CLOEXEC);
	assert_true(in >= 0);
	len = (size_t)lseek(in, 0, SEEK_END);
	buf = malloc(len);
	assert_non_null(buf);
	assert_int_equal(pread(in, buf, len, 0), (ssize_t)len);
	close(in);
	/* Where the two sections are, read from the intact copy. */
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_non_null(section_named(elf, ".debug_info", &info));
	assert_non_null(section_named(elf, ".debug_line", &line));
	elf_end(elf);
	assert_true(info.sh_size > sizeof(Elf64_Chdr) + 2 * sizeof(junk));
	assert_true(line.sh_size > sizeof(Elf64_Chdr));
	/* Garbage in the middle of .debug_info's stream. */
	memcpy(buf + info.sh_offset + info.sh_size / 2, junk, sizeof(junk));
	/* .debug_line's header: 64 times the size its stream inflates to. */
	memcpy(&claim, buf + line.sh_offset + offsetof(Elf64_Chdr, ch_size), sizeof(claim));
	claim *= 64;
	memcpy(buf + line.sh_offset + offsetof(Elf64_Chdr, ch_size), &claim, sizeof(claim));
	assert_int_equal(pwrite(fd, buf, len, 0), (ssize_t)len);
	free(buf);

	assert_int_equal(fl_debuginfo__find(fd, path, &o, &di), 0);
	close(fd);
	elf = fl_debuginfo__dwarf_elf(di);
	assert_non_null(elf);
	fl_debuginfo__inflate_dwarf(di, fl_debuginfo__dwarf_bytes(di));
	assert_non_null(section_named(elf, ".debug_info", &sh));
	assert_true(sh.sh_flags & SHF_COMPRESSED);
	assert_non_null(section_named(elf, ".debug_line", &sh));
	assert_true(sh.sh_flags & SHF_COMPRESSED);
	assert_int_equal(compressed_debug(elf, &all), 2);
	assert_true(all > 2);
	fl_debuginfo__free(di);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/* --- a container's root ------------------------------------------------------------ */

static void mkdirs(const char *root, const char *rel)
{
	char path[PATH_MAX], *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t n;

	assert_true(in >= 0 && out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	close(out);
}

/* Removes whatever is at path (file, link, FIFO, empty directory). */
static void clear(const char *path)
{
	if (unlink(path) && errno == EISDIR)
		rmdir(path);
	else if (errno != ENOENT)
		rmdir(path);
}

static enum fl_debuginfo_source find_in_root(int root_fd, const char *fixture,
					     const char *path_in_root)
{
	static const char *const dirs[] = {"/dbg", NULL};
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .root_fd = root_fd, .debug_dirs = dirs};
	struct fl_debuginfo *di = NULL;
	enum fl_debuginfo_source src;
	int fd = open_fixture(fixture);

	assert_int_equal(fl_debuginfo__find(fd, path_in_root, &o, &di), 0);
	close(fd);
	src = fl_debuginfo__source(di);
	if (src != FL_DEBUGINFO_NONE)
		assert_non_null(fl_debuginfo__debug_elf(di));
	fl_debuginfo__free(di);
	return src;
}

/*
 * A fake container root: the build-id path and the debuglink beside the
 * binary must resolve inside it. Symlinks that lead out (absolute, or up
 * with ..) lead nowhere; FIFOs and directories are not opened; an absolute
 * symlink within the root works as it does in the container.
 */
static void test_root(void **state)
{
	char root[] = "/tmp/fl-dbgroot-XXXXXX", host_debug[PATH_MAX], link[PATH_MAX];
	char rel_dir[64], target[PATH_MAX + 64], beside[PATH_MAX];
	struct fl_debuginfo *di;
	const uint8_t *id;
	size_t len;
	int root_fd, n;
	char *p;

	(void)state;
	assert_non_null(mkdtemp(root));
	di = find("dbg_bid");
	len = fl_debuginfo__build_id(di, &id);
	assert_true(len == 20);
	n = snprintf(rel_dir, sizeof(rel_dir), "dbg/.build-id/%02x", id[0]);
	assert_true(n > 0);
	snprintf(link, sizeof(link), "%s/%s/", root, rel_dir);
	p = link + strlen(link);
	for (size_t i = 1; i < len; i++)
		p += sprintf(p, "%02x", id[i]);
	strcpy(p, ".debug");
	snprintf(host_debug, sizeof(host_debug), "%s", fl_debuginfo__path(di));
	fl_debuginfo__free(di);
	mkdirs(root, rel_dir);
	mkdirs(root, "store");
	mkdirs(root, "app");
	root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root_fd >= 0);

	assert_int_equal(find_in_root(root_fd, "dbg_bid", "/app/dbg_bid"), FL_DEBUGINFO_NONE);

	/* Absolute symlink to the real debug file on the host: inside the root it names nothing. */
	assert_int_equal(symlink(host_debug, link), 0);
	assert_int_equal(access(link, R_OK), 0); /* it does lead out, for everyone else */
	assert_int_equal(find_in_root(root_fd, "dbg_bid", "/app/dbg_bid"), FL_DEBUGINFO_NONE);
	clear(link);

	/* Up and out with "..": stops at the root. */
	snprintf(target, sizeof(target), "../../../../../../../../../../../../..%s", host_debug);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(access(link, R_OK), 0);
	assert_int_equal(find_in_root(root_fd, "dbg_bid", "/app/dbg_bid"), FL_DEBUGINFO_NONE);
	clear(link);

	/* A FIFO nobody writes: never opened for reading, so nothing hangs. */
	assert_int_equal(mkfifo(link, 0600), 0);
	alarm(10);
	assert_int_equal(find_in_root(root_fd, "dbg_bid", "/app/dbg_bid"), FL_DEBUGINFO_NONE);
	alarm(0);
	clear(link);

	assert_int_equal(mkdir(link, 0755), 0);
	assert_int_equal(find_in_root(root_fd, "dbg_bid", "/app/dbg_bid"), FL_DEBUGINFO_NONE);
	clear(link);

	/* The container's own absolute symlink, resolved in the container: found. */
	snprintf(target, sizeof(target), "%s/store/bid.debug", root);
	copy_file(host_debug, target);
	assert_int_equal(symlink("/store/bid.debug", link), 0);
	assert_int_equal(find_in_root(root_fd, "dbg_bid", "/app/dbg_bid"), FL_DEBUGINFO_BUILD_ID);
	clear(link);
	unlink(target);

	/* The debuglink beside the binary, by its path in the container. */
	snprintf(beside, sizeof(beside), "%s/app/dbg_link.debug", root);
	assert_int_equal(symlink(FIXTURE_DIR "/dbg_link.debug", beside), 0);
	assert_int_equal(find_in_root(root_fd, "dbg_link", "/app/dbg_link"), FL_DEBUGINFO_NONE);
	clear(beside);
	copy_file(FIXTURE_DIR "/dbg_link.debug", beside);
	assert_int_equal(find_in_root(root_fd, "dbg_link", "/app/dbg_link"),
			 FL_DEBUGINFO_DEBUGLINK);
	unlink(beside);

	close(root_fd);
	snprintf(target, sizeof(target), "%s/%s", root, rel_dir);
	rmdir(target);
	snprintf(target, sizeof(target), "%s/dbg/.build-id", root);
	rmdir(target);
	snprintf(target, sizeof(target), "%s/dbg", root);
	rmdir(target);
	snprintf(target, sizeof(target), "%s/store", root);
	rmdir(target);
	snprintf(target, sizeof(target), "%s/app", root);
	rmdir(target);
	assert_int_equal(rmdir(root), 0);
}

/* Through /proc magic links (/proc/self/root/...) not even the real root is searched. */
static void test_magic_link(void **state)
{
	char dir[] = "/tmp/fl-dbgmagic-XXXXXX", sub[PATH_MAX], link[PATH_MAX], target[PATH_MAX];
	const char *dirs[] = {dir, NULL};
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = dirs};
	struct fl_debuginfo *di;
	const char *host;
	char *p;

	(void)state;
	assert_non_null(mkdtemp(dir));
	di = find("dbg_bid");
	host = fl_debuginfo__path(di);
	/* .../.build-id/xx/rest.debug: the last two components */
	p = strstr(host, "/.build-id/");
	assert_non_null(p);
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", dir, p + strlen("/.build-id/"));
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(link, sizeof(link), "%s%s", dir, p);
	snprintf(target, sizeof(target), "/proc/self/root%s", host);
	fl_debuginfo__free(di);

	assert_int_equal(symlink(target, link), 0);
	di = find_opts("dbg_bid", &o);
	assert_int_equal(fl_debuginfo__source(di), FL_DEBUGINFO_NONE);
	fl_debuginfo__free(di);
	/* The same without the magic link is found. */
	unlink(link);
	assert_int_equal(symlink(target + strlen("/proc/self/root"), link), 0);
	di = find_opts("dbg_bid", &o);
	assert_int_equal(fl_debuginfo__source(di), FL_DEBUGINFO_BUILD_ID);
	fl_debuginfo__free(di);

	unlink(link);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	rmdir(sub);
	assert_int_equal(rmdir(dir), 0);
}

/* --- hostile input ----------------------------------------------------------------- */

struct gen_sec {
	const char *name;
	uint32_t type;
	const void *data;
	size_t size;
	size_t align;
	uint64_t flags; /* sh_flags */
};

/* A 64-bit little-endian ET_DYN with the given sections and nothing else. */
static void write_elf(const char *path, uint16_t machine, const struct gen_sec *secs, size_t n)
{
	char shstr[1024] = "";
	size_t shlen = 1;
	Elf64_Ehdr *eh;
	Elf_Scn *scn;
	Elf_Data *d;
	Elf64_Shdr *sh;
	Elf *e;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	assert_non_null(e);
	eh = elf64_newehdr(e);
	assert_non_null(eh);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	eh->e_machine = machine;
	eh->e_version = EV_CURRENT;
	for (size_t i = 0; i <= n; i++) {
		const char *name = i < n ? secs[i].name : ".shstrtab";

		scn = elf_newscn(e);
		assert_non_null(scn);
		sh = elf64_getshdr(scn);
		sh->sh_name = (Elf64_Word)shlen;
		assert_true(shlen + strlen(name) + 1 < sizeof(shstr));
		strcpy(shstr + shlen, name);
		shlen += strlen(name) + 1;
		d = elf_newdata(scn);
		assert_non_null(d);
		d->d_type = ELF_T_BYTE;
		if (i < n) {
			sh->sh_type = secs[i].type;
			sh->sh_flags = secs[i].flags;
			sh->sh_addralign = secs[i].align;
			d->d_buf = (void *)secs[i].data;
			d->d_size = secs[i].size;
			d->d_align = secs[i].align;
		} else {
			sh->sh_type = SHT_STRTAB;
			sh->sh_addralign = 1;
			d->d_buf = shstr;
			d->d_size = shlen;
			d->d_align = 1;
			eh->e_shstrndx = (Elf64_Half)elf_ndxscn(scn);
		}
	}
	assert_true(elf_update(e, ELF_C_WRITE) >= 0);
	elf_end(e);
	close(fd);
}

static enum fl_debuginfo_source find_path(const char *path, const struct fl_debuginfo_opts *o,
					  size_t *build_id_len)
{
	struct fl_debuginfo *di = NULL;
	enum fl_debuginfo_source src;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	assert_true(fd >= 0);
	err = fl_debuginfo__find(fd, path, o, &di);
	close(fd);
	assert_int_equal(err, 0);
	src = fl_debuginfo__source(di);
	if (build_id_len)
		*build_id_len = fl_debuginfo__build_id(di, NULL);
	fl_debuginfo__free(di);
	return src;
}

/* The .gnu_debugdata of dbg_mini, and its machine. */
static unsigned char *real_debugdata(size_t *size, uint16_t *machine)
{
	int fd = open_fixture("dbg_mini");
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	unsigned char *copy = NULL;
	GElf_Ehdr eh;
	size_t shstrndx;

	assert_non_null(elf);
	assert_non_null(gelf_getehdr(elf, &eh));
	*machine = eh.e_machine;
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".gnu_debugdata"))
			continue;
		d = elf_rawdata(scn, NULL);
		copy = malloc(d->d_size);
		memcpy(copy, d->d_buf, d->d_size);
		*size = d->d_size;
	}
	elf_end(elf);
	close(fd);
	assert_non_null(copy);
	return copy;
}

static enum fl_debuginfo_source mini_of(const char *path, uint16_t machine, const void *xz,
					size_t size, size_t cap)
{
	struct fl_debuginfo_opts o = {
		.sz = sizeof(o), .debug_dirs = fixture_dirs, .max_minidebuginfo = cap};
	struct gen_sec sec = {".gnu_debugdata", SHT_PROGBITS, xz, size, 1, 0};

	write_elf(path, machine, &sec, 1);
	return find_path(path, &o, NULL);
}

/* What an xz stream decompresses to, by liblzma's one-shot decoder. */
static size_t xz_size(const void *xz, size_t size)
{
	size_t cap = 16 << 20, in_pos = 0, out_pos = 0;
	uint64_t memlimit = UINT64_MAX;
	unsigned char *out = malloc(cap);

	assert_non_null(out);
	assert_int_equal(lzma_stream_buffer_decode(&memlimit, 0, NULL, xz, &in_pos, size, out,
						   &out_pos, cap),
			 LZMA_OK);
	free(out);
	return out_pos;
}

/* 100 MiB of zeros, a few KiB of xz: decoded, it would be larger than the cap. */
static unsigned char *xz_bomb(size_t *size)
{
	static unsigned char zeros[1 << 20];
	lzma_stream s = LZMA_STREAM_INIT;
	size_t cap = 1 << 20;
	unsigned char *out = malloc(cap);
	int fed = 0;
	lzma_ret r;

	assert_non_null(out);
	assert_int_equal(lzma_easy_encoder(&s, 0, LZMA_CHECK_CRC64), LZMA_OK);
	s.next_out = out;
	s.avail_out = cap;
	do {
		if (!s.avail_in && fed < 100) {
			s.next_in = zeros;
			s.avail_in = sizeof(zeros);
			fed++;
		}
		r = lzma_code(&s, fed < 100 || s.avail_in ? LZMA_RUN : LZMA_FINISH);
		assert_true(r == LZMA_OK || r == LZMA_STREAM_END);
		assert_true(s.avail_out > 0);
	} while (r != LZMA_STREAM_END);
	*size = (size_t)s.total_out;
	lzma_end(&s);
	return out;
}

/*
 * An xz stream whose LZMA2 filter claims a 4 GiB dictionary (the block
 * header re-encoded, with its CRC): the decoder must refuse to allocate it.
 */
static unsigned char *xz_dict_claim(const void *data, size_t len, size_t *size)
{
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	lzma_block blk = {0};
	size_t cap = len + 4096, pos = 0;
	unsigned char *out = malloc(cap);

	assert_non_null(out);
	assert_int_equal(
		lzma_easy_buffer_encode(0, LZMA_CHECK_CRC32, NULL, data, len, out, &pos, cap),
		LZMA_OK);
	blk.version = 1;
	blk.check = LZMA_CHECK_CRC32;
	blk.filters = filters;
	blk.header_size = lzma_block_header_size_decode(out[LZMA_STREAM_HEADER_SIZE]);
	assert_int_equal(lzma_block_header_decode(&blk, NULL, out + LZMA_STREAM_HEADER_SIZE),
			 LZMA_OK);
	assert_int_equal(filters[0].id, LZMA_FILTER_LZMA2);
	((lzma_options_lzma *)filters[0].options)->dict_size = UINT32_MAX;
	assert_int_equal(lzma_block_header_encode(&blk, out + LZMA_STREAM_HEADER_SIZE), LZMA_OK);
	for (size_t i = 0; filters[i].id != LZMA_VLI_UNKNOWN; i++)
		free(filters[i].options);
	*size = pos;
	return out;
}

static void test_hostile_minidebuginfo(void **state)
{
	char dir[] = "/tmp/fl-dbghostile-XXXXXX", path[PATH_MAX];
	unsigned char *xz, *bad, *bomb, *claim;
	size_t size, bomb_size, claim_size, cut, exact;
	uint16_t machine;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bin", dir);
	xz = real_debugdata(&size, &machine);

	/* The generator is right: the real stream in a generated ELF is found. */
	assert_int_equal(mini_of(path, machine, xz, size, 0), FL_DEBUGINFO_MINIDEBUGINFO);

	/* Every prefix: xz checks its own integrity, so none is taken. */
	for (cut = 1; cut < size; cut += cut < 64 ? 1 : 13)
		assert_int_equal(mini_of(path, machine, xz, cut, 0), FL_DEBUGINFO_NONE);

	/* Bit flips all over the stream. */
	bad = malloc(size);
	assert_non_null(bad);
	for (size_t i = 0; i < size; i += 7) {
		memcpy(bad, xz, size);
		bad[i] ^= (unsigned char)(1u << (i % 8));
		assert_int_equal(mini_of(path, machine, bad, size, 0), FL_DEBUGINFO_NONE);
	}
	free(bad);

	/* The cap: exactly what the stream holds is enough, a byte less is not. */
	exact = xz_size(xz, size);
	assert_int_equal(mini_of(path, machine, xz, size, exact), FL_DEBUGINFO_MINIDEBUGINFO);
	log_reset();
	assert_int_equal(mini_of(path, machine, xz, size, exact - 1), FL_DEBUGINFO_NONE);
	assert_non_null(strstr(logbuf, "more than the cap"));
	assert_int_equal(mini_of(path, machine, xz, size, 1), FL_DEBUGINFO_NONE);

	/* 100 MiB of zeros against the default 64 MiB cap. */
	log_reset();
	bomb = xz_bomb(&bomb_size);
	assert_true(bomb_size < 100000);
	assert_int_equal(mini_of(path, machine, bomb, bomb_size, 0), FL_DEBUGINFO_NONE);
	assert_non_null(strstr(logbuf, "more than the cap"));
	/* Decoded within a cap, zeros are no ELF image. */
	log_reset();
	assert_int_equal(mini_of(path, machine, bomb, bomb_size, (size_t)200 << 20),
			 FL_DEBUGINFO_NONE);
	assert_non_null(strstr(logbuf, "not an ELF image"));
	free(bomb);

	/* A 4 GiB dictionary claimed by an otherwise valid stream: over the memlimit. */
	log_reset();
	claim = xz_dict_claim("not an ELF file", 15, &claim_size);
	assert_int_equal(mini_of(path, machine, claim, claim_size, 0), FL_DEBUGINFO_NONE);
	assert_non_null(strstr(logbuf, "xz memory limit"));
	free(claim);

	/* Not xz at all, and empty. */
	assert_int_equal(mini_of(path, machine, "hello, world", 12, 0), FL_DEBUGINFO_NONE);
	assert_int_equal(mini_of(path, machine, "", 0, 0), FL_DEBUGINFO_NONE);

	/* The right stream, but the binary is another machine: the image does not match. */
	assert_int_equal(mini_of(path, machine == EM_AARCH64 ? EM_X86_64 : EM_AARCH64, xz, size, 0),
			 FL_DEBUGINFO_NONE);

	free(xz);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/* A note: header in little-endian, name and desc padded to 4. */
static size_t put_note(unsigned char *p, uint32_t namesz, uint32_t descsz, uint32_t type,
		       const char *name, const void *desc, size_t desc_len)
{
	size_t off = 12, nlen = name ? strlen(name) + 1 : 0;

	memcpy(p, &namesz, 4);
	memcpy(p + 4, &descsz, 4);
	memcpy(p + 8, &type, 4);
	if (name)
		memcpy(p + off, name, nlen);
	off += (nlen + 3) & ~(size_t)3;
	if (desc)
		memcpy(p + off, desc, desc_len);
	off += (desc_len + 3) & ~(size_t)3;
	return off;
}

static void test_hostile_notes(void **state)
{
	char dir[] = "/tmp/fl-dbgnotes-XXXXXX", path[PATH_MAX];
	const uint8_t id[20] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	uint8_t big[80] = {1};
	unsigned char buf[512];
	struct gen_sec sec = {".note.gnu.build-id", SHT_NOTE, buf, 0, 4, 0};
	size_t len, n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bin", dir);

	/* A good note, after another vendor's: read. */
	n = put_note(buf, 4, 4, 1, "Foo", "abcd", 4);
	n += put_note(buf + n, 4, 20, NT_GNU_BUILD_ID, "GNU", id, 20);
	sec.size = n;
	write_elf(path, EM_X86_64, &sec, 1);
	assert_int_equal(find_path(path, NULL, &len), FL_DEBUGINFO_NONE);
	assert_int_equal(len, 20);

	/* Sizes that run past the section: nothing read, no crash. */
	sec.size = put_note(buf, 4, 0xffffffffu, NT_GNU_BUILD_ID, "GNU", id, 20);
	write_elf(path, EM_X86_64, &sec, 1);
	assert_int_equal(find_path(path, NULL, &len), FL_DEBUGINFO_NONE);
	assert_int_equal(len, 0);
	sec.size = put_note(buf, 0xfffffff0u, 20, NT_GNU_BUILD_ID, "GNU", id, 20);
	write_elf(path, EM_X86_64, &sec, 1);
	assert_int_equal(find_path(path, NULL, &len), FL_DEBUGINFO_NONE);
	assert_int_equal(len, 0);
	/* Cut inside the descriptor, inside the header. */
	n = put_note(buf, 4, 20, NT_GNU_BUILD_ID, "GNU", id, 20);
	for (sec.size = 0; sec.size < n; sec.size++) {
		write_elf(path, EM_X86_64, &sec, 1);
		assert_int_equal(find_path(path, NULL, &len), FL_DEBUGINFO_NONE);
		assert_int_equal(len, 0);
	}
	/* Empty, and longer than any hash. */
	sec.size = put_note(buf, 4, 0, NT_GNU_BUILD_ID, "GNU", NULL, 0);
	write_elf(path, EM_X86_64, &sec, 1);
	assert_int_equal(find_path(path, NULL, &len), FL_DEBUGINFO_NONE);
	assert_int_equal(len, 0);
	sec.size = put_note(buf, 4, sizeof(big), NT_GNU_BUILD_ID, "GNU", big, sizeof(big));
	write_elf(path, EM_X86_64, &sec, 1);
	assert_int_equal(find_path(path, NULL, &len), FL_DEBUGINFO_NONE);
	assert_int_equal(len, 0);

	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/* fl_debuginfo__dwarf_bytes() of an ELF file with secs. */
static uint64_t dwarf_bytes_of(const char *path, const struct gen_sec *secs, size_t n)
{
	struct fl_debuginfo *di = NULL;
	uint64_t bytes;
	int fd;

	write_elf(path, EM_X86_64, secs, n);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fl_debuginfo__find(fd, path, NULL, &di), 0);
	close(fd);
	bytes = fl_debuginfo__dwarf_bytes(di);
	fl_debuginfo__free(di);
	return bytes;
}

/*
 * What libdw would hold once it read a file's DWARF, from the headers:
 * compressed sections (SHF_COMPRESSED, GNU .zdebug) at the size they claim
 * inflated, which is what libelf allocates; a compression header cut short
 * at "everything"; non-debug sections not at all.
 */
static void test_dwarf_bytes(void **state)
{
	char dir[] = "/tmp/fl-dbgbytes-XXXXXX", path[PATH_MAX];
	static const unsigned char info[100];
	/* Elf64_Chdr, little-endian: ELFCOMPRESS_ZLIB, reserved, size 2^40, align 1. */
	static const unsigned char chdr[24] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					       0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
	/* "ZLIB" and 3 GiB, big-endian. */
	static const unsigned char zdebug[16] = {'Z', 'L', 'I', 'B', 0, 0, 0, 0, 0xc0, 0, 0, 0};
	struct gen_sec secs[3] = {
		{".debug_info", SHT_PROGBITS, info, sizeof(info), 1, 0},
		{".text", SHT_PROGBITS, info, sizeof(info), 1, 0},
	};

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bin", dir);
	assert_int_equal(dwarf_bytes_of(path, secs, 2), sizeof(info));
	secs[2] = (struct gen_sec){".debug_ranges", SHT_PROGBITS, chdr, sizeof(chdr), 1,
				   SHF_COMPRESSED};
	assert_int_equal(dwarf_bytes_of(path, secs, 3), sizeof(info) + (1ull << 40));
	secs[2].size = 20; /* the header cut */
	assert_int_equal(dwarf_bytes_of(path, secs, 3), UINT64_MAX);
	secs[2] = (struct gen_sec){".zdebug_str", SHT_PROGBITS, zdebug, sizeof(zdebug), 1, 0};
	assert_int_equal(dwarf_bytes_of(path, secs, 3), sizeof(info) + (3ull << 30));
	/* Not compressed after all: read as it is. */
	secs[2].data = info;
	assert_int_equal(dwarf_bytes_of(path, secs, 3), sizeof(info) + sizeof(zdebug));
	/* No DWARF: nothing to read. */
	secs[0].name = ".rodata";
	assert_int_equal(dwarf_bytes_of(path, secs, 2), 0);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/*
 * An ELF header whose section count (extended numbering: section 0's
 * sh_size) claims 16 million section headers, in a sparse file of 1 GiB
 * that holds 8 KiB: libelf allocates and fills a descriptor for each
 * section in elf_begin() (4 GiB and ten seconds here); then one whose
 * section names claim the hole, read whole for the first name. The file
 * is refused from its header, before libelf sees it.
 */
static void test_absurd_section_count(void **state)
{
	char dir[] = "/tmp/fl-dbgshnum-XXXXXX", path[PATH_MAX];
	Elf64_Ehdr eh = {.e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB,
				     EV_CURRENT},
			 .e_type = ET_DYN,
			 .e_machine = EM_X86_64,
			 .e_version = EV_CURRENT,
			 .e_shoff = 4096,
			 .e_ehsize = sizeof(Elf64_Ehdr),
			 .e_shentsize = sizeof(Elf64_Shdr)};
	Elf64_Shdr sh0 = {.sh_size = ((1ull << 30) - 4096) / sizeof(Elf64_Shdr)};
	struct fl_debuginfo *di = NULL;
	struct rusage ru;
	long before;
	int fd, err;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bin", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &eh, sizeof(eh), 0), sizeof(eh));
	assert_int_equal(pwrite(fd, &sh0, sizeof(sh0), 4096), sizeof(sh0));
	assert_int_equal(ftruncate(fd, 1 << 30), 0);
	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	before = ru.ru_maxrss;
	err = fl_debuginfo__find(fd, path, NULL, &di);
	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	printf("# find: %s; peak RSS %ld KiB before, %ld KiB after\n", err ? strerror(-err) : "ok",
	       before, ru.ru_maxrss);
	assert_int_equal(err, -EFBIG);
	assert_null(di);
	assert_true(ru.ru_maxrss - before < 64 << 10);

	/*
	 * Two sections, the second the section names, claiming 1 GiB of the
	 * hole: every section name looked up reads the table whole.
	 */
	Elf64_Shdr names = {
		.sh_type = SHT_STRTAB, .sh_offset = 8192, .sh_size = (1ull << 30) - 8192};

	eh.e_shnum = 2;
	eh.e_shstrndx = 1;
	sh0.sh_size = 0;
	assert_int_equal(pwrite(fd, &eh, sizeof(eh), 0), sizeof(eh));
	assert_int_equal(pwrite(fd, &sh0, sizeof(sh0), 4096), sizeof(sh0));
	assert_int_equal(pwrite(fd, &names, sizeof(names), 4096 + sizeof(sh0)), sizeof(names));
	di = NULL;
	err = fl_debuginfo__find(fd, path, NULL, &di);
	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	printf("# names: %s; peak RSS %ld KiB\n", err ? strerror(-err) : "ok", ru.ru_maxrss);
	assert_int_equal(err, -EFBIG);
	assert_true(ru.ru_maxrss - before < 64 << 10);
	close(fd);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/*
 * A binary without build-id whose .gnu_debuglink names a debug file of
 * 16 GiB, a hole (a sparse file: nothing on disk): its CRC would be read
 * whole, a minute or more of CPU for every such binary. It is refused at
 * once, as larger than FL_DEBUGINFO_MAX_CRC_SIZE.
 */
static void test_debuglink_huge(void **state)
{
	char dir[] = "/tmp/fl-dbghuge-XXXXXX", path[PATH_MAX], debug[PATH_MAX];
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = fixture_dirs};
	unsigned char buf[16] = "bin.debug";
	struct gen_sec sec = {".gnu_debuglink", SHT_PROGBITS, buf, sizeof(buf), 4, 0};
	struct timespec t0, t1;
	uint16_t machine;
	size_t size;
	double secs;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bin", dir);
	snprintf(debug, sizeof(debug), "%s/bin.debug", dir);
	copy_file(FIXTURE_DIR "/.debug/dbg_link_nobid.debug", debug);
	assert_int_equal(truncate(debug, (off_t)16 << 30), 0);
	free(real_debugdata(&size, &machine));
	write_elf(path, machine, &sec, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(find_path(path, &o, NULL), FL_DEBUGINFO_NONE);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("# a 16 GiB debuglink candidate took %.2f s\n", secs);
	assert_true(secs < 5);
	unlink(debug);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/*
 * Malformed .gnu_debuglink sections lead nowhere; a well-formed one is
 * followed, the CRC (computed here) decides, and a link to the binary
 * itself is not taken.
 */
static void test_hostile_debuglink(void **state)
{
	char dir[] = "/tmp/fl-dbglink-XXXXXX", path[PATH_MAX], debug[PATH_MAX];
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = fixture_dirs};
	struct gen_sec sec = {".gnu_debuglink", SHT_PROGBITS, NULL, 0, 4, 0};
	unsigned char buf[512], note[64], *file;
	const uint8_t id[20] = {0xfe, 0xed};
	struct gen_sec two[2] = {{0}, {".note.gnu.build-id", SHT_NOTE, note, 0, 4, 0}};
	uint16_t machine;
	uint32_t crc;
	size_t size;
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bin", dir);
	snprintf(debug, sizeof(debug), "%s/bin.debug", dir);
	copy_file(FIXTURE_DIR "/.debug/dbg_link_nobid.debug", debug);
	free(real_debugdata(&size, &machine));
	/* The CRC of the copy, computed here with our CRC. */
	fd = open(debug, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	file = malloc((size_t)st.st_size);
	assert_int_equal(read(fd, file, (size_t)st.st_size), st.st_size);
	close(fd);
	crc = fl_debuginfo__crc32(0, file, (size_t)st.st_size);
	free(file);
	sec.data = buf;

	memcpy(buf, "bin.debug\0\0\0", 12);
	memcpy(buf + 12, &crc, 4);
	sec.size = 16;
	write_elf(path, machine, &sec, 1);
	assert_int_equal(find_path(path, &o, NULL), FL_DEBUGINFO_DEBUGLINK);

	/* One CRC bit off. */
	crc ^= 0x100;
	memcpy(buf + 12, &crc, 4);
	write_elf(path, machine, &sec, 1);
	assert_int_equal(find_path(path, &o, NULL), FL_DEBUGINFO_NONE);
	crc ^= 0x100;

	/* No room for the CRC; no NUL; no name. */
	sec.size = 13;
	write_elf(path, machine, &sec, 1);
	assert_int_equal(find_path(path, &o, NULL), FL_DEBUGINFO_NONE);
	memset(buf, 'a', sizeof(buf));
	sec.size = sizeof(buf);
	write_elf(path, machine, &sec, 1);
	assert_int_equal(find_path(path, &o, NULL), FL_DEBUGINFO_NONE);
	memset(buf, 0, 8);
	sec.size = 8;
	write_elf(path, machine, &sec, 1);
	assert_int_equal(find_path(path, &o, NULL), FL_DEBUGINFO_NONE);

	/* A path instead of a name: "../<dir>/bin.debug" would exist. */
	snprintf((char *)buf, sizeof(buf), "../%s/bin.debug", strrchr(dir, '/') + 1);
	size = (strlen((char *)buf) + 4) & ~(size_t)3;
	memcpy(buf + size, &crc, 4);
	sec.size = size + 4;
	write_elf(path, machine, &sec, 1);
	assert_int_equal(find_path(path, &o, NULL), FL_DEBUGINFO_NONE);

	/*
	 * Naming the binary itself, which has a build-id: the build-id would
	 * match, but the binary is not its own debug file.
	 */
	memcpy(buf, "bin\0", 4);
	memcpy(buf + 4, &crc, 4);
	sec.size = 8;
	two[0] = sec;
	two[1].size = put_note(note, 4, 20, NT_GNU_BUILD_ID, "GNU", id, 20);
	write_elf(path, machine, two, 2);
	assert_int_equal(find_path(path, &o, &size), FL_DEBUGINFO_NONE);
	assert_int_equal(size, 20);

	unlink(path);
	unlink(debug);
	assert_int_equal(rmdir(dir), 0);
}

static void test_bad_args(void **state)
{
	char dir[] = "/tmp/fl-dbgargs-XXXXXX", path[PATH_MAX];
	struct fl_debuginfo *di = NULL;
	int fd;

	(void)state;
	assert_int_equal(fl_debuginfo__find(-1, NULL, NULL, &di), -EINVAL);
	assert_null(di);
	fd = open_fixture("dbg_link");
	assert_int_equal(fl_debuginfo__find(fd, NULL, NULL, NULL), -EINVAL);
	close(fd);

	assert_non_null(mkdtemp(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(fl_debuginfo__find(fd, dir, NULL, &di), -EISDIR);
	close(fd);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	assert_int_equal(fl_debuginfo__find(fd, path, NULL, &di), -EINVAL);
	close(fd);
	unlink(path);
	snprintf(path, sizeof(path), "%s/text", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
	assert_int_equal(fl_debuginfo__find(fd, path, NULL, &di), -EINVAL);
	close(fd);
	unlink(path);
	assert_null(di);
	assert_int_equal(rmdir(dir), 0);

	/* Without a path there is no directory to look for the debuglink in. */
	fd = open_fixture("dbg_link");
	assert_int_equal(fl_debuginfo__find(fd, NULL, NULL, &di), 0);
	assert_int_equal(fl_debuginfo__source(di), FL_DEBUGINFO_NONE);
	fl_debuginfo__free(di);
	close(fd);

	fl_debuginfo__free(NULL);
	assert_int_equal(fl_debuginfo__source(NULL), FL_DEBUGINFO_NONE);
	assert_null(fl_debuginfo__path(NULL));
	assert_null(fl_debuginfo__binary_elf(NULL));
	assert_null(fl_debuginfo__dwarf_elf(NULL));
	assert_int_equal(fl_debuginfo__build_id(NULL, NULL), 0);
	assert_string_equal(fl_debuginfo_source__str(FL_DEBUGINFO_BUILD_ID), "build-id");
	assert_string_equal(fl_debuginfo_source__str(FL_DEBUGINFO_MINIDEBUGINFO), "minidebuginfo");
}

/* Every prefix of a binary with MiniDebugInfo either fails cleanly or loads. */
static void test_truncated_binary(void **state)
{
	char dir[] = "/tmp/fl-dbgcut-XXXXXX", path[PATH_MAX];
	struct fl_debuginfo_opts o = {.sz = sizeof(o), .debug_dirs = fixture_dirs};
	unsigned char *buf;
	struct stat st;
	int fd = open_fixture("dbg_mini");

	(void)state;
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cut", dir);
	for (size_t cut = 0; cut < (size_t)st.st_size; cut += cut < 256 ? 7 : 61) {
		struct fl_debuginfo *di = NULL;
		int out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), err;

		assert_int_equal(write(out, buf, cut), (ssize_t)cut);
		err = fl_debuginfo__find(out, path, &o, &di);
		assert_true(err == 0 || err == -EINVAL);
		if (!err)
			assert_int_equal(fl_debuginfo__source(di), FL_DEBUGINFO_NONE);
		fl_debuginfo__free(di);
		close(out);
	}
	free(buf);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32),
		cmocka_unit_test(test_debuglink_beside),
		cmocka_unit_test(test_debuglink_dot_debug),
		cmocka_unit_test(test_debuglink_debug_dir),
		cmocka_unit_test(test_build_id),
		cmocka_unit_test(test_minidebuginfo),
		cmocka_unit_test(test_bad_crc),
		cmocka_unit_test(test_wrong_build_id),
		cmocka_unit_test(test_unstripped),
		cmocka_unit_test(test_unread_sections_hidden),
		cmocka_unit_test(test_inflate_dwarf),
		cmocka_unit_test(test_inflate_dwarf_budget),
		cmocka_unit_test(test_inflate_dwarf_hostile),
		cmocka_unit_test(test_root),
		cmocka_unit_test(test_magic_link),
		cmocka_unit_test(test_hostile_minidebuginfo),
		cmocka_unit_test(test_hostile_notes),
		cmocka_unit_test(test_dwarf_bytes),
		cmocka_unit_test(test_hostile_debuglink),
		cmocka_unit_test(test_debuglink_huge),
		cmocka_unit_test(test_absurd_section_count),
		cmocka_unit_test(test_bad_args),
		cmocka_unit_test(test_truncated_binary),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
