// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for the /proc/PID/maps parser on captured real maps, hostile lines and live processes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flamed/sampling/procmaps.h"

#define MAX_MAPS 4096 /* the test's own maps: libcurl's libraries are many */

/*
 * Fixtures in tests/fixtures/data:
 *   maps_real     /proc/self/maps of a Python process that had mapped a file
 *                 with spaces in its name, a deleted file, a 200-character
 *                 name and a memfd (Linux 6.18, x86_64), as the kernel printed it.
 *   maps_hostile  hand-made: valid lines with odd paths, 10 broken lines, a
 *                 5000-character path and no newline at the end.
 */

/* Copies of every mapping a parse reported. */
struct maps {
	struct fl_procmap m[MAX_MAPS];
	char *paths[MAX_MAPS];
	size_t nr;
	size_t stop_after; /* return 7 from the callback after this many, 0: never */
};

static int save(const struct fl_procmap *m, void *ctx)
{
	struct maps *v = ctx;

	assert_true(v->nr < MAX_MAPS);
	v->m[v->nr] = *m;
	v->paths[v->nr] = strdup(m->path);
	assert_non_null(v->paths[v->nr]);
	v->m[v->nr].path = v->paths[v->nr];
	v->nr++;
	return v->stop_after && v->nr == v->stop_after ? 7 : 0;
}

static void maps_fini(struct maps *v)
{
	size_t i;

	for (i = 0; i < v->nr; i++)
		free(v->paths[i]);
	v->nr = 0;
}

static int parse_fixture(const char *name, struct maps *v, uint64_t *nr_bad)
{
	char path[PATH_MAX];
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "%s/data/%s", FIXTURE_SRC_DIR, name);
	f = fopen(path, "re");
	assert_non_null(f);
	err = fl_procmaps__parse(f, save, v, nr_bad);
	fclose(f);
	return err;
}

static const struct fl_procmap *by_path(const struct maps *v, const char *path)
{
	size_t i;

	for (i = 0; i < v->nr; i++)
		if (!strcmp(v->m[i].path, path))
			return &v->m[i];
	fail_msg("no mapping of \"%s\"", path);
	return NULL;
}

static void test_parse_line(void **state)
{
	char line[] = "7f7390244000-7f739039a000 r-xp 00026000 fe:00 332835                     "
		      "/usr/lib/x86_64-linux-gnu/libc.so.6\n";
	char anon[] = "7f738fbb7000-7f738fcea000 rw-p 00000000 00:00 0 \n";
	char bare[] = "7f738fbb7000-7f738fcea000 ---s 00000000 00:00 0";
	struct fl_procmap m;

	(void)state;
	assert_int_equal(fl_procmaps__parse_line(line, &m), 0);
	assert_int_equal(m.start, 0x7f7390244000);
	assert_int_equal(m.end, 0x7f739039a000);
	assert_int_equal(m.pgoff, 0x26000);
	assert_int_equal(m.dev_major, 0xfe);
	assert_int_equal(m.dev_minor, 0);
	assert_int_equal(m.ino, 332835);
	assert_int_equal(m.prot, FL_PROT_READ | FL_PROT_EXEC);
	assert_false(m.shared);
	assert_false(m.deleted);
	assert_string_equal(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	/* The path is cut out of the line itself. */
	assert_true(m.path > line && m.path < line + sizeof(line));

	assert_int_equal(fl_procmaps__parse_line(anon, &m), 0);
	assert_string_equal(m.path, "");
	assert_int_equal(m.prot, FL_PROT_READ | FL_PROT_WRITE);
	assert_int_equal(fl_procmaps__parse_line(bare, &m), 0);
	assert_string_equal(m.path, "");
	assert_int_equal(m.prot, 0);
	assert_true(m.shared);

	assert_int_equal(fl_procmaps__parse_line(NULL, &m), -EINVAL);
	assert_int_equal(fl_procmaps__parse_line(line, NULL), -EINVAL);
}

static void test_real_capture(void **state)
{
	struct maps v = { 0 };
	const struct fl_procmap *m;
	uint64_t nr_bad = 99;
	char longname[256];

	(void)state;
	assert_int_equal(parse_fixture("maps_real", &v, &nr_bad), 0);
	assert_int_equal(nr_bad, 0);
	assert_int_equal(v.nr, 113);

	m = by_path(&v, "[vdso]");
	assert_int_equal(m->prot, FL_PROT_READ | FL_PROT_EXEC);
	assert_int_equal(m->start, 0x7f7390a0d000);
	assert_int_equal(m->end, 0x7f7390a0f000);
	assert_int_equal(m->ino, 0);

	m = by_path(&v, "/tmp/fx dir/lib with spaces.so");
	assert_false(m->deleted);
	assert_true(m->shared);
	assert_int_equal(m->ino, 10953521);

	m = by_path(&v, "/tmp/fx dir/gone.so");
	assert_true(m->deleted);
	assert_int_equal(m->pgoff, 0x1000);

	m = by_path(&v, "/memfd:fx memfd");
	assert_true(m->deleted);
	assert_int_equal(m->dev_minor, 1);

	snprintf(longname, sizeof(longname), "/tmp/fx dir/%0200d.so", 0);
	memset(longname + strlen("/tmp/fx dir/"), 'x', 200);
	m = by_path(&v, longname);
	assert_false(m->deleted);

	m = by_path(&v, "[vsyscall]");
	assert_int_equal(m->start, 0xffffffffff600000);
	assert_int_equal(m->prot, FL_PROT_EXEC);

	/* Four libc mappings, executable one at offset 0x26000. */
	m = &v.m[70];
	assert_string_equal(m->path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	assert_int_equal(m->pgoff, 0x26000);
	assert_int_equal(m->prot, FL_PROT_READ | FL_PROT_EXEC);
	maps_fini(&v);
}

static void test_hostile(void **state)
{
	struct maps v = { 0 };
	uint64_t nr_bad = 0;
	const struct fl_procmap *m;
	size_t i;

	(void)state;
	assert_int_equal(parse_fixture("maps_hostile", &v, &nr_bad), 0);
	assert_int_equal(nr_bad, 10);
	assert_int_equal(v.nr, 8);

	assert_string_equal(v.m[0].path, "/usr/bin/fx spaced  name");
	assert_false(v.m[0].deleted);
	assert_string_equal(v.m[1].path, "/usr/bin/fx spaced  name");
	assert_true(v.m[1].deleted);
	/* "(deleted)" without the space before it is part of the name. */
	assert_string_equal(v.m[2].path, "/tmp/(deleted)");
	assert_false(v.m[2].deleted);
	assert_string_equal(v.m[3].path, "");
	assert_string_equal(v.m[4].path, "");
	assert_int_equal(v.m[4].prot, 0);

	m = &v.m[5];
	assert_int_equal(strlen(m->path), strlen("/long/") + 5000 + strlen(".so"));
	assert_int_equal(m->pgoff, 0xabcd);
	assert_int_equal(m->dev_major, 0x103);
	assert_int_equal(m->dev_minor, 7);
	assert_int_equal(m->ino, 42);
	assert_true(m->shared);

	assert_string_equal(v.m[6].path, "[anon:fx name with spaces]");
	/* The last line has no newline. */
	assert_string_equal(v.m[7].path, "[vsyscall]");
	for (i = 0; i < v.nr; i++)
		assert_true(v.m[i].start <= v.m[i].end);
	maps_fini(&v);
}

static void test_bad_lines(void **state)
{
	const char *bad[] = {
		"",
		"\n",
		"7f00-7f10",
		"7f00-7f10 r-xp",
		"7f00-7f10 r-xp 0 08:02",
		"7f00-7f10 r-x 0 08:02 1 /short/perms",
		"7f00-7f10 r-xpp 0 08:02 1 /long/perms",
		"7f00-7f10 r-xp 0 08:02 1/no/space",
		"7f00-7f10  r-xp 0 08:02 1 /two/spaces",
		"7f00-7f10 r-xp 0 100000000:02 1 /major/too/big",
		"7f00-7f10 r-xp 0 08:02 18446744073709551616 /inode/overflow",
		"7f00-7f10 r-xp 10000000000000000 08:02 1 /offset/overflow",
		"7f00 - 7f10 r-xp 0 08:02 1 /spaced/range",
		"g000-7f10 r-xp 0 08:02 1 /not/hex",
	};
	struct fl_procmap m;
	char buf[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", bad[i]);
		if (fl_procmaps__parse_line(buf, &m) != -EINVAL)
			fail_msg("accepted: \"%s\"", bad[i]);
	}
	/* Largest values that fit are accepted. */
	snprintf(buf, sizeof(buf),
		 "0-ffffffffffffffff rw-s ffffffffffffffff ffffffff:ffffffff "
		 "18446744073709551615 /max");
	assert_int_equal(fl_procmaps__parse_line(buf, &m), 0);
	assert_int_equal(m.end, UINT64_MAX);
	assert_int_equal(m.dev_major, UINT32_MAX);
	assert_int_equal(m.ino, UINT64_MAX);
}

/* Streams with a 1 MiB path and with a NUL inside a line. */
static void test_streams(void **state)
{
	const char nul_line[] = "1000-2000 r-xp 0 08:02 5 /a\0b\n3000-4000 r--p 0 08:02 5 /c\n";
	struct maps v = { 0 };
	size_t len = 1 << 20, n;
	uint64_t nr_bad;
	char *buf;
	FILE *f;

	(void)state;
	buf = malloc(len + 128);
	assert_non_null(buf);
	n = (size_t)snprintf(buf, 128, "1000-2000 r-xp 00000000 08:02 5 /");
	memset(buf + n, 'p', len);
	memcpy(buf + n + len, " (deleted)\n", sizeof(" (deleted)\n"));
	f = fmemopen(buf, strlen(buf), "r");
	assert_non_null(f);
	assert_int_equal(fl_procmaps__parse(f, save, &v, &nr_bad), 0);
	fclose(f);
	assert_int_equal(nr_bad, 0);
	assert_int_equal(v.nr, 1);
	assert_int_equal(strlen(v.m[0].path), len + 1);
	assert_true(v.m[0].deleted);
	maps_fini(&v);
	free(buf);

	f = fmemopen((void *)nul_line, sizeof(nul_line) - 1, "r");
	assert_non_null(f);
	assert_int_equal(fl_procmaps__parse(f, save, &v, NULL), 0);
	fclose(f);
	assert_int_equal(v.nr, 2);
	assert_string_equal(v.m[0].path, "/a");
	assert_string_equal(v.m[1].path, "/c");
	maps_fini(&v);
}

static void test_callback_stops(void **state)
{
	struct maps v = { .stop_after = 3 };

	(void)state;
	assert_int_equal(parse_fixture("maps_real", &v, NULL), 7);
	assert_int_equal(v.nr, 3);
	maps_fini(&v);
	assert_int_equal(fl_procmaps__parse(NULL, save, &v, NULL), -EINVAL);
}

static void test_read_self(void **state)
{
	uintptr_t code = (uintptr_t)test_read_self, stack = (uintptr_t)&code;
	struct maps v = { 0 };
	char exe[PATH_MAX];
	bool found_code = false, found_stack = false;
	ssize_t n;
	size_t i;

	(void)state;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(fl_procmaps__read(getpid(), save, &v), 0);
	assert_true(v.nr > 3);
	for (i = 0; i < v.nr; i++) {
		const struct fl_procmap *m = &v.m[i];

		if (m->start <= code && code < m->end) {
			assert_string_equal(m->path, exe);
			assert_true(m->prot & FL_PROT_EXEC);
			found_code = true;
		}
		/* Under valgrind the main thread runs on another mapping: check both apart. */
		if (m->start <= stack && stack < m->end)
			assert_true(m->prot & FL_PROT_WRITE);
		if (!strcmp(m->path, "[stack]"))
			found_stack = true;
	}
	assert_true(found_code);
	assert_true(found_stack);
	maps_fini(&v);
}

static void test_read_gone(void **state)
{
	struct maps v = { 0 };
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	/* Reaped: /proc/PID is gone (a reused pid within microseconds is not expected). */
	assert_int_equal(fl_procmaps__read(pid, save, &v), -ENOENT);
	assert_int_equal(v.nr, 0);
	assert_int_equal(fl_procmaps__read(-1, save, &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_line), cmocka_unit_test(test_real_capture),
		cmocka_unit_test(test_hostile),	   cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_streams),	   cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_read_self),  cmocka_unit_test(test_read_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
