// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for lib/profile/fold.c: frame naming and order, root frames, kernel annotation, stats. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "flamed/profile/fold.h"
#include "flamed/formats/folded.h"
#include "flamed/profile/profile.h"
#include "flamed/sampling/sampler.h"
#include "flamed/symbols/symbolizer.h"

/* Captured from a real /proc/kallsyms (see tests/fixtures/data/kallsyms.fold). */
#define SYS_GETPID 0xffffffff81377cc0ULL
#define DO_SYSCALL_64 0xffffffff821ed4a0ULL
#define EXT4_WRITE_ITER 0xffffffffc0a01000ULL /* in module ext4 */

struct env {
	struct fl_symbolizer *sym;
	struct fl_profile *prof;
	struct fl_fold *fold;
};

static struct env *env_new(bool per_process, bool per_thread, const char *kallsyms)
{
	struct env *e = calloc(1, sizeof(*e));
	struct fl_symbolizer_opts so = {.sz = sizeof(so), .kallsyms_path = kallsyms};

	assert_non_null(e);
	assert_int_equal(fl_symbolizer__new(&so, &e->sym), 0);
	assert_int_equal(fl_profile__new(&e->prof), 0);
	struct fl_fold_opts fo = {.sz = sizeof(fo),
				  .symbolizer = e->sym,
				  .profile = e->prof,
				  .per_process = per_process,
				  .per_thread = per_thread};
	assert_int_equal(fl_fold__new(&fo, &e->fold), 0);
	return e;
}

static void env_free(struct env *e)
{
	fl_fold__free(e->fold);
	fl_profile__free(e->prof);
	fl_symbolizer__free(e->sym);
	free(e);
}

static char *folded(struct env *e)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fl_folded__write(e->prof, f), 0);
	fclose(f);
	return buf;
}

/* A kernel module's function names its module. */
static void test_kernel_module_frames(void **state)
{
	struct env *e = env_new(false, false, FIXTURE_SRC_DIR "/data/kallsyms.fold");
	uint64_t kips[] = {EXT4_WRITE_ITER + 0x10, DO_SYSCALL_64 + 0x20};
	struct fl_raw_stack st = {
		.pid = 42, .comm = "dd", .kips = kips, .nr_kips = 2, .uerr = -ENOENT, .count = 3};
	char *out;

	(void)state;
	assert_int_equal(fl_fold__add(e->fold, &st), 0);
	out = folded(e);
	assert_string_equal(out, "dd;do_syscall_64_[k];ext4_file_write_iter [ext4]_[k] 3\n");
	free(out);
	env_free(e);
}

static void test_kernel_frames_outermost_first(void **state)
{
	struct env *e = env_new(false, false, FIXTURE_SRC_DIR "/data/kallsyms.fold");
	/* Leaf first, as the kernel reports: getpid was called by do_syscall_64. */
	uint64_t kips[] = {SYS_GETPID + 4, DO_SYSCALL_64 + 0x20};
	struct fl_raw_stack st = {.pid = 42,
				  .comm = "my prog",
				  .kips = kips,
				  .nr_kips = 2,
				  .uerr = -ENOENT,
				  .count = 7};
	struct fl_fold_stats fs;
	char *out;

	(void)state;
	assert_int_equal(fl_fold__add(e->fold, &st), 0);
	out = folded(e);
	assert_string_equal(out, "my_prog;do_syscall_64_[k];__x64_sys_getpid_[k] 7\n");
	fl_fold__stats(e->fold, &fs);
	assert_int_equal(fs.samples, 7);
	assert_int_equal(fs.frames, 2 * 7);
	assert_int_equal(fs.unsymbolized, 0);
	free(out);
	env_free(e);
}

static void test_user_then_kernel_and_unknown(void **state)
{
	struct env *e = env_new(false, false, FIXTURE_SRC_DIR "/data/kallsyms.fold");
	/* No tracker: user addresses are outside every known mapping. */
	uint64_t uips[] = {0x1000, 0x2000};
	uint64_t kips[] = {SYS_GETPID + 1};
	struct fl_raw_stack st = {.pid = 42,
				  .comm = "a",
				  .uips = uips,
				  .nr_uips = 2,
				  .kips = kips,
				  .nr_kips = 1,
				  .count = 3};
	struct fl_fold_stats fs;
	char *out;

	(void)state;
	assert_int_equal(fl_fold__add(e->fold, &st), 0);
	out = folded(e);
	assert_string_equal(out, "a;[unknown];[unknown];__x64_sys_getpid_[k] 3\n");
	fl_fold__stats(e->fold, &fs);
	assert_int_equal(fs.frames, 3 * 3);
	assert_int_equal(fs.unsymbolized, 2 * 3);
	free(out);
	env_free(e);
}

/* DWARF mode: a stack whose unwinding stopped early says so where its callers would be. */
static void test_unwind_markers(void **state)
{
	struct env *e = env_new(false, false, FIXTURE_SRC_DIR "/data/kallsyms.fold");
	uint64_t cut[] = {0x1000, 0x2000, FL_UIP_TRUNCATED};
	uint64_t failed[] = {0x1000, FL_UIP_FAILED};
	uint64_t only[] = {FL_UIP_FAILED};
	struct fl_raw_stack a = {
		.pid = 42, .comm = "a", .uips = cut, .nr_uips = 3, .kerr = -ENOENT, .count = 2};
	struct fl_raw_stack b = {
		.pid = 42, .comm = "a", .uips = failed, .nr_uips = 2, .kerr = -ENOENT, .count = 5};
	struct fl_raw_stack c = {
		.pid = 42, .comm = "b", .uips = only, .nr_uips = 1, .kerr = -ENOENT, .count = 1};
	char *out;

	(void)state;
	assert_int_equal(fl_fold__add(e->fold, &a), 0);
	assert_int_equal(fl_fold__add(e->fold, &b), 0);
	assert_int_equal(fl_fold__add(e->fold, &c), 0);
	out = folded(e);
	assert_string_equal(out, "a;[stack copy ended];[unknown];[unknown] 2\n"
				 "a;[unwind failed];[unknown] 5\n"
				 "b;[unwind failed] 1\n");
	free(out);
	env_free(e);
}

static void test_root_frames(void **state)
{
	uint64_t kips[] = {SYS_GETPID};
	struct fl_raw_stack st = {.pid = 42,
				  .tid = 43,
				  .comm = "w",
				  .kips = kips,
				  .nr_kips = 1,
				  .uerr = -ENOENT,
				  .count = 1};
	struct env *e;
	char *out;

	(void)state;
	e = env_new(true, false, FIXTURE_SRC_DIR "/data/kallsyms.fold");
	assert_int_equal(fl_fold__add(e->fold, &st), 0);
	out = folded(e);
	assert_string_equal(out, "w-42;__x64_sys_getpid_[k] 1\n");
	free(out);
	env_free(e);

	e = env_new(false, true, FIXTURE_SRC_DIR "/data/kallsyms.fold");
	assert_int_equal(fl_fold__add(e->fold, &st), 0);
	out = folded(e);
	assert_string_equal(out, "w-42/43;__x64_sys_getpid_[k] 1\n");
	free(out);
	env_free(e);
}

static void test_return_address_at_function_start(void **state)
{
	struct env *e = env_new(false, false, FIXTURE_SRC_DIR "/data/kallsyms.fold");
	/*
	 * A return address equal to the start of do_syscall_64 belongs to a call
	 * at the very end of the function before it (here __pfx_do_syscall_64):
	 * looked up at ip - 1. The leaf is the sampled address itself.
	 */
	uint64_t kips[] = {DO_SYSCALL_64, DO_SYSCALL_64};
	struct fl_raw_stack st = {
		.pid = 1, .comm = "r", .kips = kips, .nr_kips = 2, .uerr = -ENOENT, .count = 1};
	char *out;

	(void)state;
	assert_int_equal(fl_fold__add(e->fold, &st), 0);
	out = folded(e);
	assert_string_equal(out, "r;__pfx_do_syscall_64_[k];do_syscall_64_[k] 1\n");
	free(out);
	env_free(e);
}

static void test_cached_frames_count_every_time(void **state)
{
	struct env *e = env_new(false, false, FIXTURE_SRC_DIR "/data/kallsyms.fold");
	uint64_t kips[] = {SYS_GETPID + 4, DO_SYSCALL_64 + 0x20};
	uint64_t uips[] = {0x1000};
	struct fl_raw_stack st = {.pid = 9,
				  .comm = "c",
				  .uips = uips,
				  .nr_uips = 1,
				  .kips = kips,
				  .nr_kips = 2,
				  .count = 1};
	struct fl_fold_stats fs;
	char *out;

	(void)state;
	/* The same addresses again, in another process and another stack. */
	assert_int_equal(fl_fold__add(e->fold, &st), 0);
	st.pid = 10;
	st.count = 2;
	assert_int_equal(fl_fold__add(e->fold, &st), 0);
	st.nr_kips = 1;
	assert_int_equal(fl_fold__add(e->fold, &st), 0);
	out = folded(e);
	assert_string_equal(out, "c;[unknown];__x64_sys_getpid_[k] 2\n"
				 "c;[unknown];do_syscall_64_[k];__x64_sys_getpid_[k] 3\n");
	fl_fold__stats(e->fold, &fs);
	assert_int_equal(fs.samples, 5);
	/* Weighted by samples: 1 x 3 frames, 2 x 3 frames, 2 x 2 frames; one unnamed each. */
	assert_int_equal(fs.frames, 1 * 3 + 2 * 3 + 2 * 2);
	assert_int_equal(fs.unsymbolized, 1 + 2 + 2);
	free(out);
	env_free(e);
}

static void test_hidden_kernel(void **state)
{
	struct env *e = env_new(false, false, "/nonexistent/kallsyms");
	uint64_t kips[] = {SYS_GETPID};
	struct fl_raw_stack st = {
		.pid = 1, .comm = "x", .kips = kips, .nr_kips = 1, .uerr = -EFAULT, .count = 2};
	struct fl_fold_stats fs;
	char *out;

	(void)state;
	assert_true(fl_symbolizer__kernel_hidden(e->sym));
	assert_int_equal(fl_fold__add(e->fold, &st), 0);
	out = folded(e);
	assert_string_equal(out, "x;[kernel]_[k] 2\n");
	fl_fold__stats(e->fold, &fs);
	assert_int_equal(fs.no_user_stack, 2);
	free(out);
	env_free(e);
}

static void test_hostile_comm(void **state)
{
	struct env *e = env_new(false, false, FIXTURE_SRC_DIR "/data/kallsyms.fold");
	uint64_t kips[] = {SYS_GETPID};
	struct fl_raw_stack st = {.pid = 1,
				  .comm = "a;b 9\nc",
				  .kips = kips,
				  .nr_kips = 1,
				  .uerr = -ENOENT,
				  .count = 5};
	char *out;

	(void)state;
	assert_int_equal(fl_fold__add(e->fold, &st), 0);
	out = folded(e);
	/* One line, the count intact: the name cannot add frames or lines. */
	assert_string_equal(out, "a:b_9?c;__x64_sys_getpid_[k] 5\n");
	free(out);
	env_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_frames_outermost_first),
		cmocka_unit_test(test_kernel_module_frames),
		cmocka_unit_test(test_user_then_kernel_and_unknown),
		cmocka_unit_test(test_unwind_markers),
		cmocka_unit_test(test_root_frames),
		cmocka_unit_test(test_return_address_at_function_start),
		cmocka_unit_test(test_cached_frames_count_every_time),
		cmocka_unit_test(test_hidden_kernel),
		cmocka_unit_test(test_hostile_comm),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
