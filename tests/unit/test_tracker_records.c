// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * White-box tests for lib/sampling/tracker.c's record handling, fed with records built
 * here: orders of events that real rings produce only by chance (a child's
 * mmap read before its fork, from another CPU's ring).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "../../lib/sampling/tracker.c"

static struct fl_tracker *bare_tracker(void)
{
	struct fl_tracker *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	assert_int_equal(fl_strpool__new(&t->paths), 0);
	return t;
}

/* A record as the tracker's events write it: the body, then the time (sample_id_all). */
static void feed(struct fl_tracker *t, struct perf_event_header *hdr, size_t body, uint64_t time)
{
	char buf[512] __attribute__((aligned(8))) = {0};
	size_t size = (body + 7) / 8 * 8 + sizeof(time);

	assert_true(size <= sizeof(buf));
	memcpy(buf, hdr, body);
	memcpy(buf + size - sizeof(time), &time, sizeof(time));
	((struct perf_event_header *)buf)->size = (uint16_t)size;
	assert_int_equal(on_record((const struct perf_event_header *)buf, t), 0);
}

static void feed_mmap2_at(struct fl_tracker *t, uint32_t pid, uint64_t addr, uint64_t len,
			  uint64_t pgoff, const char *path, uint64_t ino, uint64_t time)
{
	union {
		struct fl_mmap2_rec r;
		char buf[sizeof(struct fl_mmap2_rec) + 64];
	} u = {};

	u.r.hdr.type = PERF_RECORD_MMAP2;
	u.r.pid = u.r.tid = pid;
	u.r.addr = addr;
	u.r.len = len;
	u.r.pgoff = pgoff;
	u.r.ino = ino;
	strcpy(u.r.filename, path);
	feed(t, &u.r.hdr, sizeof(u.r) + strlen(path) + 1, time);
}

static void feed_task(struct fl_tracker *t, uint32_t type, uint32_t pid, uint32_t ppid,
		      uint64_t time)
{
	struct fl_task_rec r = {.hdr = {.type = type},
				.pid = pid,
				.ppid = ppid,
				.tid = pid,
				.ptid = ppid,
				.time = time};

	feed(t, &r.hdr, sizeof(r), time);
}

static void feed_fork(struct fl_tracker *t, uint32_t pid, uint32_t ppid)
{
	feed_task(t, PERF_RECORD_FORK, pid, ppid, 500);
}

static void feed_exec(struct fl_tracker *t, uint32_t pid, uint64_t time)
{
	union {
		struct fl_comm_rec r;
		char buf[sizeof(struct fl_comm_rec) + 16];
	} u = {};

	u.r.hdr.type = PERF_RECORD_COMM;
	u.r.hdr.misc = PERF_RECORD_MISC_COMM_EXEC;
	u.r.pid = u.r.tid = pid;
	strcpy(u.r.comm, "prog");
	feed(t, &u.r.hdr, sizeof(u.r) + 5, time);
}

static const char *path_at(struct fl_tracker *t, uint32_t pid, uint64_t addr, uint64_t time)
{
	const struct fl_tmap *m = fl_tracker__find_at(t, pid, addr, time);

	return m ? m->path : "(none)";
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
	feed_mmap2_at(t, 100, 0x1000, 0x10000, 0, "/parent/lib.so", 42, 100);
	feed_mmap2_at(t, 101, 0x4000, 0x1000, 0, "/child/own.so", 43, 600);
	feed_fork(t, 101, 100); /* at 500 */

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

/*
 * Two non-PIE programs at the same address, one exec'ing the other: before
 * the exec an address is the first program's, after it the second's, and
 * the era changes at the exec.
 */
static void test_exec_reuses_addresses(void **state)
{
	struct fl_tracker *t = bare_tracker();

	(void)state;
	feed_mmap2_at(t, 100, 0x400000, 0x2000, 0, "/bin/a", 1, 10);
	feed_mmap2_at(t, 100, 0x7f0000, 0x1000, 0, "/lib/libc", 2, 11);
	feed_exec(t, 100, 20);
	feed_mmap2_at(t, 100, 0x401000, 0x2000, 0x1000, "/bin/b", 3, 21);

	assert_string_equal(path_at(t, 100, 0x401800, 15), "/bin/a");
	assert_string_equal(path_at(t, 100, 0x401800, 25), "/bin/b");
	/* At the era's start the new program is not mapped yet: the first one mapped after. */
	assert_string_equal(path_at(t, 100, 0x401800, 20), "/bin/b");
	/* The old image is gone after the exec, even where nothing replaced it. */
	assert_string_equal(path_at(t, 100, 0x7f0800, 15), "/lib/libc");
	assert_string_equal(path_at(t, 100, 0x7f0800, 25), "(none)");
	assert_string_equal(fl_tracker__find(t, 100, 0x401800)->path, "/bin/b");
	assert_int_equal(fl_tracker__era(t, 100, 15), 0);
	assert_int_equal(fl_tracker__era(t, 100, 20), 20);
	assert_int_equal(fl_tracker__era(t, 100, 99), 20);
	/* A sample inside the exec with the old image's pc: there is no user stack. */
	assert_true(fl_tracker__left_at_exec(t, 100, 0x7f0800, 20));
	assert_true(fl_tracker__left_at_exec(t, 100, 0x7f0800, 25));
	assert_false(fl_tracker__left_at_exec(t, 100, 0x7f0800, 15));
	assert_false(fl_tracker__left_at_exec(t, 100, 0x401800, 25));
	assert_false(fl_tracker__left_at_exec(t, 100, 0x10, 25));
	fl_tracker__free(t);
}

/* dlclose + dlopen of another library at the very same address, records in either order. */
static void test_library_replaced_at_same_address(void **state)
{
	for (int order = 0; order < 2; order++) {
		struct fl_tracker *t = bare_tracker();

		(void)state;
		if (order == 0) {
			feed_mmap2_at(t, 7, 0x10000, 0x4000, 0x1000, "/l/one.so", 5, 10);
			feed_mmap2_at(t, 7, 0x10000, 0x4000, 0x1000, "/l/two.so", 6, 30);
		} else {
			feed_mmap2_at(t, 7, 0x10000, 0x4000, 0x1000, "/l/two.so", 6, 30);
			feed_mmap2_at(t, 7, 0x10000, 0x4000, 0x1000, "/l/one.so", 5, 10);
		}
		assert_string_equal(path_at(t, 7, 0x12000, 20), "/l/one.so");
		assert_string_equal(path_at(t, 7, 0x12000, 30), "/l/two.so");
		assert_string_equal(path_at(t, 7, 0x12000, 40), "/l/two.so");
		assert_string_equal(fl_tracker__find(t, 7, 0x12000)->path, "/l/two.so");
		assert_int_equal(fl_tracker__era(t, 7, 20), 0);
		assert_int_equal(fl_tracker__era(t, 7, 30), 30);
		fl_tracker__free(t);
	}
}

/* The same code reported again (the scan, then a record; an mprotect) changes no era. */
static void test_same_code_again_is_no_change(void **state)
{
	struct fl_tracker *t = bare_tracker();
	struct fl_tmap m = {.start = 0x1000, .end = 0x3000, .pgoff = 0, .ino = 9};
	struct tproc *p;

	(void)state;
	m.path = intern(t, "/bin/x", 6);
	assert_int_equal(proc_get(t, 50, &p), 0);
	assert_int_equal(maps_insert(t, p, &m), 0);
	feed_mmap2_at(t, 50, 0x1000, 0x2000, 0, "/bin/x", 9, 40);
	feed_mmap2_at(t, 50, 0x2000, 0x1000, 0x1000, "/bin/x", 9, 50);
	assert_int_equal(proc_find(t, 50)->nr_changes, 0);
	assert_int_equal(fl_tracker__era(t, 50, 60), 0);
	assert_string_equal(path_at(t, 50, 0x2800, 1), "/bin/x");
	fl_tracker__free(t);
}

/*
 * A pid reused by a new process: its first process's mappings answer for
 * times before the new fork, the new one's after, and the new child starts
 * from its parent's mappings.
 */
static void test_pid_reused(void **state)
{
	struct fl_tracker *t = bare_tracker();

	(void)state;
	feed_mmap2_at(t, 1, 0x500000, 0x1000, 0, "/sbin/init", 1, 1);
	feed_task(t, PERF_RECORD_FORK, 200, 1, 10);
	feed_mmap2_at(t, 200, 0x900000, 0x1000, 0, "/first", 2, 11);
	feed_task(t, PERF_RECORD_EXIT, 200, 200, 20);
	feed_task(t, PERF_RECORD_FORK, 200, 1, 30);
	feed_mmap2_at(t, 200, 0x900000, 0x1000, 0, "/second", 3, 31);

	assert_string_equal(path_at(t, 200, 0x900800, 15), "/first");
	assert_string_equal(path_at(t, 200, 0x900800, 35), "/second");
	assert_string_equal(path_at(t, 200, 0x500800, 35), "/sbin/init");
	assert_int_equal(fl_tracker__exited(t, UINT64_MAX, (uint32_t[4]){0}, 4), 0);
	fl_tracker__free(t);
}

/*
 * A fork past max_processes: the child is not tracked (counted in over_max),
 * and the tracker goes on (it read the untracked child's state before).
 */
static void test_fork_past_max_processes(void **state)
{
	struct fl_tracker *t = bare_tracker();

	(void)state;
	t->max_procs = 2;
	feed_mmap2_at(t, 1, 0x500000, 0x1000, 0, "/sbin/init", 1, 1);
	feed_task(t, PERF_RECORD_FORK, 200, 1, 10);
	feed_task(t, PERF_RECORD_FORK, 300, 1, 20); /* the third process: not tracked */
	feed_mmap2_at(t, 300, 0x900000, 0x1000, 0, "/third", 2, 21);
	assert_int_equal(t->nr_procs, 2);
	assert_true(t->st.over_max >= 2);
	assert_string_equal(path_at(t, 200, 0x500800, 15), "/sbin/init");
	assert_string_equal(path_at(t, 300, 0x900800, 25), "(none)");
	fl_tracker__free(t);
}

/*
 * On the host pid 2 is kthreadd, and what it forks is a kernel thread until
 * it maps code; in a container (kthreadd 0: none) pid 2 is any process.
 */
static void test_pid_2_in_a_container(void **state)
{
	struct fl_tracker *t = bare_tracker();

	(void)state;
	t->kthreadd = TR_KTHREADD_PID;
	feed_task(t, PERF_RECORD_FORK, 30, 2, 10);
	assert_true(fl_tracker__is_kthread(t, 2));
	assert_true(fl_tracker__is_kthread(t, 30));
	fl_tracker__free(t);

	t = bare_tracker();
	t->kthreadd = 0;
	feed_mmap2_at(t, 1, 0x500000, 0x1000, 0, "/bin/sh", 1, 1);
	feed_task(t, PERF_RECORD_FORK, 2, 1, 5);
	feed_task(t, PERF_RECORD_FORK, 30, 2, 10);
	assert_false(fl_tracker__is_kthread(t, 2));
	assert_false(fl_tracker__is_kthread(t, 30));
	assert_string_equal(path_at(t, 30, 0x500800, 15), "/bin/sh");
	/* Records of tasks outside the namespace come with pid 0: none is tracked. */
	feed_mmap2_at(t, 0, 0x700000, 0x1000, 0, "/host/bin", 9, 20);
	feed_task(t, PERF_RECORD_FORK, 0, 0, 21);
	assert_null(fl_tracker__find_at(t, 0, 0x700800, 25));
	fl_tracker__free(t);
}

/* Exited processes are listed once their exit is older than asked, and forgotten for good. */
static void test_exited_and_forgotten(void **state)
{
	struct fl_tracker *t = bare_tracker();
	struct fl_tracker_stats st;
	uint32_t pids[8];
	size_t n;

	(void)state;
	for (uint32_t pid = 300; pid < 305; pid++) {
		feed_mmap2_at(t, pid, 0x400000, 0x1000, 0, "/bin/short", 4, pid);
		feed_task(t, PERF_RECORD_EXIT, pid, pid, 1000 + pid);
	}
	feed_mmap2_at(t, 400, 0x400000, 0x1000, 0, "/bin/long", 5, 1);
	assert_int_equal(fl_tracker__exited(t, 1302, pids, 8), 2);
	n = fl_tracker__exited(t, UINT64_MAX, pids, 8);
	assert_int_equal(n, 5);
	fl_tracker__forget(t, pids, n);
	fl_tracker__stats(t, &st);
	assert_int_equal(st.processes, 1);
	assert_int_equal(st.peak_processes, 6);
	assert_int_equal(st.forgotten, 5);
	assert_null(fl_tracker__find(t, 302, 0x400000));
	/* The one left moved in the table and is still found. */
	assert_string_equal(fl_tracker__find(t, 400, 0x400000)->path, "/bin/long");
	fl_tracker__free(t);
}

/* A process that replaces the same range over and over keeps a bounded history. */
static void test_history_is_capped(void **state)
{
	struct fl_tracker *t = bare_tracker();
	struct fl_tracker_stats st;
	char path[32];

	(void)state;
	for (uint64_t i = 0; i < 2 * TR_MAX_HISTORY + 10; i++) {
		snprintf(path, sizeof(path), "/gen/%llu", (unsigned long long)i);
		feed_mmap2_at(t, 9, 0x10000, 0x1000, 0, path, 100 + i, 10 * (i + 1));
	}
	fl_tracker__stats(t, &st);
	assert_true(st.history_dropped > 0);
	assert_true(proc_find(t, 9)->nr_hist <= TR_MAX_HISTORY);
	assert_true(proc_find(t, 9)->nr_changes <= TR_MAX_HISTORY);
	/* Recent history is still exact. */
	snprintf(path, sizeof(path), "/gen/%d", 2 * TR_MAX_HISTORY + 5);
	assert_string_equal(path_at(t, 9, 0x10000, 10 * (2 * TR_MAX_HISTORY + 6) + 5), path);
	fl_tracker__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_mmap_before_fork_splits_parent_mapping),
		cmocka_unit_test(test_exec_reuses_addresses),
		cmocka_unit_test(test_library_replaced_at_same_address),
		cmocka_unit_test(test_same_code_again_is_no_change),
		cmocka_unit_test(test_pid_reused),
		cmocka_unit_test(test_pid_2_in_a_container),
		cmocka_unit_test(test_fork_past_max_processes),
		cmocka_unit_test(test_exited_and_forgotten),
		cmocka_unit_test(test_history_is_capped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
