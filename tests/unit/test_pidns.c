// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for lib/sampling/pidns.c: the kernel's device encoding, the namespace's identity, /proc's. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

#include "flamed/sampling/pidns.h"

/* bpf_get_ns_current_pid_tgid() compares with the kernel's dev_t: major above 20 bits of minor. */
static void test_kernel_dev(void **state)
{
	(void)state;
	assert_int_equal(fl_pidns__kernel_dev(makedev(0, 4)), 4);
	/* Minors past 255 are where the two encodings part. */
	assert_int_equal(fl_pidns__kernel_dev(makedev(0, 300)), 300);
	assert_true(makedev(0, 300) != 300);
	assert_int_equal(fl_pidns__kernel_dev(makedev(259, 3)), (259ull << 20) | 3);
}

static void test_self(void **state)
{
	struct fl_pidns ns, again;
	struct stat st;

	(void)state;
	assert_int_equal(fl_pidns__self(&ns), 0);
	assert_int_equal(stat("/proc/self/ns/pid", &st), 0);
	assert_int_equal(ns.ino, st.st_ino);
	assert_int_equal(ns.dev, fl_pidns__kernel_dev(st.st_dev));
	assert_int_equal(ns.initial, st.st_ino == FL_PIDNS_INIT_INO);
	/* A process of the same namespace: the same identity. */
	assert_int_equal(fl_pidns__from_path("/proc/thread-self/ns/pid", &again), 0);
	assert_int_equal(again.ino, ns.ino);
	assert_int_equal(fl_pidns__from_path("/nonexistent/ns/pid", &again), -ENOENT);
}

/* A fake /proc: a directory whose "self" link says what it is told to. */
static void fake_proc(char *dir, size_t len, const char *self)
{
	char link[PATH_MAX + 8];

	snprintf(dir, len, "%s/flamed-pidns.XXXXXX", getenv("TMPDIR") ?: "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(link, sizeof(link), "%s/self", dir);
	if (self)
		assert_int_equal(symlink(self, link), 0);
}

static void drop_proc(const char *dir)
{
	char link[PATH_MAX + 8];

	snprintf(link, sizeof(link), "%s/self", dir);
	unlink(link);
	rmdir(dir);
}

static void test_check_proc(void **state)
{
	char dir[PATH_MAX], me[32];
	int pid = -1;

	(void)state;
	/* The real one (the tests run with a /proc of their namespace). */
	assert_int_equal(fl_pidns__check_proc("/proc", getpid(), &pid), 0);

	snprintf(me, sizeof(me), "%d", (int)getpid());
	fake_proc(dir, sizeof(dir), me);
	assert_int_equal(fl_pidns__check_proc(dir, getpid(), &pid), 0);
	drop_proc(dir);

	/* The host's /proc seen from a child namespace: flamed is 1 there, 4242 here. */
	fake_proc(dir, sizeof(dir), "4242");
	assert_int_equal(fl_pidns__check_proc(dir, 1, &pid), -EXDEV);
	assert_int_equal(pid, 4242);
	drop_proc(dir);

	fake_proc(dir, sizeof(dir), "42x");
	assert_int_equal(fl_pidns__check_proc(dir, 42, &pid), -EINVAL);
	drop_proc(dir);

	/* No /proc mounted at all. */
	fake_proc(dir, sizeof(dir), NULL);
	assert_int_equal(fl_pidns__check_proc(dir, 1, &pid), -ENOENT);
	drop_proc(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_dev),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_check_proc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
