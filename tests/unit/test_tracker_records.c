// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * White-box tests for lib/tracker.c's record handling, fed with records built
 * here: orders of events that real rings produce only by chance (a child's
 * mmap read before its fork, from another CPU's ring).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../lib/tracker.c"

static struct fl_tracker *bare_tracker(void)
{
	struct fl_tracker *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	assert_int_equal(fl_strpool__new(&t->paths), 0);
	return t;
}

static void feed_mmap2(struct fl_tracker *t, uint32_t pid, uint64_t addr, uint64_t len,
		       const char *path)
{
	union {
		struct fl_mmap2_rec r;
		char buf[sizeof(struct fl_mmap2_rec) + 64];
	} u = {};

	u.r.hdr.type = PERF_RECORD_MMAP2;
	u.r.hdr.size = (uint16_t)(sizeof(u.r) + strlen(path) + 1);
	u.r.pid = u.r.tid = pid;
	u.r.addr = addr;
	u.r.len = len;
	u.r.ino = 42;
	strcpy(u.r.filename, path);
	assert_int_equal(on_record(&u.r.hdr, t), 0);
}

static void feed_fork(struct fl_tracker *t, uint32_t pid, uint32_t ppid)
{
	struct fl_task_rec r = { .hdr = { .type = PERF_RECORD_FORK, .size = sizeof(r) },
				 .pid = pid, .ppid = ppid, .tid = pid, .ptid = ppid };

	assert_int_equal(on_record(&r.hdr, t), 0);
}

/*
 * The parent has one mapping; the child's own mapping, read before its
 * fork, splits that mapping in two when the fork's copy is merged: three
 * entries into an array sized for one.
 */
static void test_child_mmap_before_fork_splits_parent_mapping(void **state)
{
	struct fl_tracker *t = bare_tracker();
	const struct fl_tmap *m;

	(void)state;
	feed_mmap2(t, 100, 0x1000, 0x10000, "/parent/lib.so");
	feed_mmap2(t, 101, 0x4000, 0x1000, "/child/own.so");
	feed_fork(t, 101, 100);

	m = fl_tracker__find(t, 101, 0x1800);
	assert_non_null(m);
	assert_string_equal(m->path, "/parent/lib.so");
	m = fl_tracker__find(t, 101, 0x4800);
	assert_non_null(m);
	assert_string_equal(m->path, "/child/own.so");
	m = fl_tracker__find(t, 101, 0x8000);
	assert_non_null(m);
	assert_string_equal(m->path, "/parent/lib.so");
	/* The split tail keeps its file offset right. */
	assert_int_equal(m->pgoff, 0x5000 - 0x1000);
	fl_tracker__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_mmap_before_fork_splits_parent_mapping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
