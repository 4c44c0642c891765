// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for ksyms: a captured kallsyms excerpt, hidden addresses, modules, the live file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flamed/symbols/ksyms.h"

#define MIB (UINT64_C(1) << 20)

/*
 * Fixtures in tests/fixtures/data:
 *   kallsyms         182 real lines of /proc/kallsyms (Linux 6.18, x86_64): the
 *                    start of .text, a slice around panic/abort, _etext and the
 *                    data symbols after it, init text, the tail with the
 *                    ftrace trampoline module line.
 *   kallsyms_hidden  the same lines with the addresses zeroed, as kptr_restrict shows them.
 *   kallsyms_modules hand-made in the kernel's "%016lx %c %s\t[%s]" format (the
 *                    capture machine loads no modules): two modules, out-of-order
 *                    lines, duplicate addresses, data symbols and broken lines.
 */
static struct fl_ksyms *load(const char *name)
{
	struct fl_ksyms_opts opts = { .sz = sizeof(opts) };
	struct fl_ksyms *ks = NULL;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/data/%s", FIXTURE_SRC_DIR, name);
	opts.path = path;
	assert_int_equal(fl_ksyms__load(&opts, &ks), 0);
	assert_non_null(ks);
	return ks;
}

static void assert_sym(const struct fl_ksyms *ks, uint64_t addr, const char *name,
		       const char *module, uint64_t sym_addr)
{
	const struct fl_ksym *s = fl_ksyms__find(ks, addr);

	if (!s)
		fail_msg("%#" PRIx64 ": no symbol, want %s", addr, name);
	assert_string_equal(s->name, name);
	assert_int_equal(s->addr, sym_addr);
	if (module) {
		assert_non_null(s->module);
		assert_string_equal(s->module, module);
	} else {
		assert_null(s->module);
	}
}

static void test_real_excerpt(void **state)
{
	struct fl_ksyms *ks = load("kallsyms");

	(void)state;
	assert_false(fl_ksyms__addrs_hidden(ks));
	/* 130 distinct addresses among the t/T/w/W lines; D, R, B lines left out. */
	assert_int_equal(fl_ksyms__count(ks), 130);

	/* Exact, and between two symbols. */
	assert_sym(ks, 0xffffffff81207340, "panic", NULL, 0xffffffff81207340);
	assert_sym(ks, 0xffffffff81207396, "panic", NULL, 0xffffffff81207340);
	assert_sym(ks, 0xffffffff81207610, "abort", NULL, 0xffffffff81207610); /* W */
	assert_sym(ks, 0xffffffff83783015, "set_reset_devices", NULL, 0xffffffff83783010);

	/* Below the first symbol. */
	assert_null(fl_ksyms__find(ks, 0xffffffff80ffffff));
	assert_null(fl_ksyms__find(ks, 0));

	/* Four T symbols at _stext: the first line wins. */
	assert_sym(ks, 0xffffffff81000000, "srso_alias_untrain_ret", NULL, 0xffffffff81000000);
	assert_sym(ks, 0xffffffff8100000f, "srso_alias_untrain_ret", NULL, 0xffffffff81000000);
	assert_sym(ks, 0xffffffff81000010, "__entry_text_start", NULL, 0xffffffff81000010);
	/* T _sinittext over the t __pfx_set_reset_devices at the same address. */
	assert_sym(ks, 0xffffffff83783000, "_sinittext", NULL, 0xffffffff83783000);

	/* A data symbol is no symbol: the text symbol below it goes on until the next. */
	assert_sym(ks, 0xffffffff82400000, "_etext", NULL, 0xffffffff82209988);

	/* The module line: found with its module, 1 MiB past it at most. */
	assert_sym(ks, 0xffffffffc0201000, "ftrace_trampoline", "__builtin__ftrace",
		   0xffffffffc0201000);
	assert_sym(ks, 0xffffffffc0201000 + MIB, "ftrace_trampoline", "__builtin__ftrace",
		   0xffffffffc0201000);
	assert_null(fl_ksyms__find(ks, 0xffffffffc0201000 + MIB + 1));
	assert_null(fl_ksyms__find(ks, UINT64_MAX));

	/* The last kernel-image symbol ends 1 MiB later: the next symbol is a module's. */
	assert_sym(ks, 0xffffffff837f8910 + MIB, "_einittext", NULL, 0xffffffff837f8910);
	assert_null(fl_ksyms__find(ks, 0xffffffff837f8910 + MIB + 1));
	fl_ksyms__free(ks);
}

static void test_modules(void **state)
{
	struct fl_ksyms *ks = load("kallsyms_modules");
	const struct fl_ksym *a, *b;

	(void)state;
	assert_false(fl_ksyms__addrs_hidden(ks));
	assert_int_equal(fl_ksyms__count(ks), 10);
	assert_sym(ks, 0xffffffff81000150, "fx_kernel_a", NULL, 0xffffffff81000100);
	assert_sym(ks, 0xffffffff81000200, "fx_kernel_b", NULL, 0xffffffff81000200);
	/* t then T at one address: T wins although it came second. */
	assert_sym(ks, 0xffffffffc0a00000, "fx_ext4_global", "ext4", 0xffffffffc0a00000);
	assert_sym(ks, 0xffffffffc0a000ff, "fx_ext4_global", "ext4", 0xffffffffc0a00000);
	assert_sym(ks, 0xffffffffc0a00100, "fx_ext4_second", "ext4", 0xffffffffc0a00100);
	/* Read after an xfs line, sorted into place. */
	assert_sym(ks, 0xffffffffc0a00200, "fx_ext4_weak", "ext4", 0xffffffffc0a00200);
	assert_sym(ks, 0xffffffffc0a00200 + MIB, "fx_ext4_weak", "ext4", 0xffffffffc0a00200);
	assert_null(fl_ksyms__find(ks, 0xffffffffc0a00200 + MIB + 1));
	assert_sym(ks, 0xffffffffc0c00010, "fx_xfs_first", "xfs", 0xffffffffc0c00000);
	/* Two t at one address: the first read wins. */
	assert_sym(ks, 0xffffffffc0c00050, "fx_xfs_dup_a", "xfs", 0xffffffffc0c00050);
	/* Data symbol left out; xfs's last text symbol covers it (within 1 MiB). */
	assert_sym(ks, 0xffffffffc0d00000, "fx_xfs_dup_a", "xfs", 0xffffffffc0c00050);
	assert_sym(ks, 0xffffffffc0e00000, "fx_bpf_prog", "bpf", 0xffffffffc0e00000);
	/* The kernel image ends 1 MiB after _etext. */
	assert_sym(ks, 0xffffffff81000300 + MIB, "_etext", NULL, 0xffffffff81000300);
	assert_null(fl_ksyms__find(ks, 0xffffffff81000300 + MIB + 1));

	/* Module names are stored once. */
	a = fl_ksyms__find(ks, 0xffffffffc0a00000);
	b = fl_ksyms__find(ks, 0xffffffffc0a00200);
	assert_ptr_equal(a->module, b->module);
	fl_ksyms__free(ks);
}

static void test_hidden(void **state)
{
	struct fl_ksyms *ks = load("kallsyms_hidden");

	(void)state;
	assert_true(fl_ksyms__addrs_hidden(ks));
	assert_int_equal(fl_ksyms__count(ks), 0);
	assert_null(fl_ksyms__find(ks, 0));
	assert_null(fl_ksyms__find(ks, 0xffffffff81207340));
	fl_ksyms__free(ks);
}

static void test_errors(void **state)
{
	struct fl_ksyms_opts opts = { .sz = sizeof(opts), .path = "/nonexistent/kallsyms" };
	struct fl_ksyms *ks = NULL;

	(void)state;
	assert_int_equal(fl_ksyms__load(&opts, &ks), -ENOENT);
	assert_null(ks);
	fl_ksyms__free(NULL);
	assert_null(fl_ksyms__find(NULL, 1));
	assert_int_equal(fl_ksyms__count(NULL), 0);
	assert_false(fl_ksyms__addrs_hidden(NULL));
}

/* An empty file, and one with a 1 MiB name and a line that never ends. */
static void test_odd_files(void **state)
{
	char path[] = "/tmp/fl-ksyms-XXXXXX";
	struct fl_ksyms_opts opts = { .sz = sizeof(opts), .path = path };
	struct fl_ksyms *ks = NULL;
	const struct fl_ksym *s;
	size_t long_len = 1 << 20;
	char *name;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fl_ksyms__load(&opts, &ks), 0);
	assert_int_equal(fl_ksyms__count(ks), 0);
	assert_false(fl_ksyms__addrs_hidden(ks));
	fl_ksyms__free(ks);

	name = malloc(long_len + 1);
	assert_non_null(name);
	memset(name, 'k', long_len);
	name[long_len] = '\0';
	f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "ffffffff81000000 T first\n");
	fprintf(f, "ffffffff81001000 t %s\n", name);
	fprintf(f, "ffffffff81002000 T last_without_newline");
	assert_int_equal(fclose(f), 0);
	assert_int_equal(fl_ksyms__load(&opts, &ks), 0);
	assert_int_equal(fl_ksyms__count(ks), 3);
	s = fl_ksyms__find(ks, 0xffffffff81001234);
	assert_non_null(s);
	assert_int_equal(strlen(s->name), long_len);
	s = fl_ksyms__find(ks, 0xffffffff81002000);
	assert_non_null(s);
	assert_string_equal(s->name, "last_without_newline");
	fl_ksyms__free(ks);
	free(name);
	unlink(path);
}

/*
 * The live file: every text line's address finds a symbol at exactly that
 * address (the name may be another at the same address). Timing is printed,
 * not asserted.
 */
static void test_live(void **state)
{
	struct fl_ksyms *ks = NULL;
	struct timespec t0, t1;
	char line[4096];
	size_t checked = 0;
	FILE *f;
	int err;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = fl_ksyms__load(NULL, &ks);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (err == -ENOENT || err == -EACCES) {
		print_message("skipping: /proc/kallsyms: %s\n", strerror(-err));
		skip();
		return;
	}
	assert_int_equal(err, 0);
	if (fl_ksyms__addrs_hidden(ks)) {
		print_message(
			"skipping: kallsyms addresses are hidden (kptr_restrict, not root)\n");
		fl_ksyms__free(ks);
		skip();
		return;
	}
	print_message("loaded %zu kernel symbols in %.1f ms\n", fl_ksyms__count(ks),
		      (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
			      (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	assert_true(fl_ksyms__count(ks) > 1000);

	f = fopen("/proc/kallsyms", "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		const struct fl_ksym *s;
		uint64_t addr;
		char type;

		if (sscanf(line, "%" SCNx64 " %c", &addr, &type) != 2 || !strchr("tTwW", type))
			continue;
		if (checked++ % 97)
			continue;
		s = fl_ksyms__find(ks, addr);
		assert_non_null(s);
		assert_int_equal(s->addr, addr);
	}
	fclose(f);
	assert_true(checked > 1000);
	fl_ksyms__free(ks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_excerpt), cmocka_unit_test(test_modules),
		cmocka_unit_test(test_hidden),	     cmocka_unit_test(test_errors),
		cmocka_unit_test(test_odd_files),    cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
