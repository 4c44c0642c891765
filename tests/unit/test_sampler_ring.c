// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests of the ring sampler backend on real busy processes: pid filter, idle, children, names. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/sampling/sampler.h"

static volatile uint64_t sink;

/* Where the busy processes spend their time: the leaf of most of their samples. */
__attribute__((noinline)) static void spin_work(uint64_t iters)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < iters; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
}

/* This thread's CPU time: what it is sampled for, however busy the machine. */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Spins for secs of this thread's CPU time (on a busy machine, longer on the clock). */
__attribute__((noinline)) static void spin_for(double secs)
{
	double end = cpu_now() + secs;

	while (cpu_now() < end)
		spin_work(200000);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

static bool in_spin_work(uint64_t ip)
{
	uint64_t lo = (uint64_t)(uintptr_t)spin_work;

	return ip >= lo && ip < lo + 512;
}

static struct fl_sampler *new_sampler(const struct fl_sampler_opts *opts)
{
	struct fl_sampler *s = NULL;
	int err = fl_sampler__new(FL_SAMPLER_RING, opts, &s);

	if (err == -EACCES || err == -EPERM || err == -ENOENT || err == -ENODEV ||
	    err == -EOPNOTSUPP) {
		printf("fl_sampler__new(ring): %s: skipping (needs root or "
		       "kernel.perf_event_paranoid<=0)\n",
		       strerror(-err));
		exit(77);
	}
	assert_int_equal(err, 0);
	assert_int_equal(fl_sampler__backend(s), FL_SAMPLER_RING);
	assert_true(fl_sampler__nr_fds(s) > 0);
	return s;
}

/*
 * Whether s drops other processes' samples in the kernel: it must where BPF
 * works. Where it does not (no BPF here), the user-space filter alone is
 * tested, and the checks of what the kernel dropped are skipped.
 */
static bool kernel_filters(const struct fl_sampler *s)
{
	int kf = fl_sampler__kernel_filter(s);

	if (kf < 0) {
		printf("# no kernel filter (%s): only the user-space one is tested\n",
		       strerror(-kf));
		return false;
	}
	assert_int_equal(kf, 1);
	return true;
}

/* Reads the rings as they fill until child has exited (and is reaped), then stops. */
static void run_until_exit(struct fl_sampler **ss, size_t nr, pid_t child)
{
	struct pollfd pfds[64];
	size_t n = 0;
	int status;

	for (size_t i = 0; i < nr; i++)
		for (size_t j = 0; j < fl_sampler__nr_fds(ss[i]) && n < 64; j++)
			pfds[n++] =
				(struct pollfd){.fd = fl_sampler__fd(ss[i], j), .events = POLLIN};
	for (;;) {
		pid_t w = waitpid(child, &status, WNOHANG);

		assert_true(w >= 0);
		if (w == child)
			break;
		poll(pfds, n, 100);
		for (size_t i = 0; i < nr; i++)
			assert_int_equal(fl_sampler__poll(ss[i]), 0);
	}
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (size_t i = 0; i < nr; i++) {
		assert_int_equal(fl_sampler__stop(ss[i]), 0);
		assert_int_equal(fl_sampler__poll(ss[i]), 0);
	}
}

struct tally {
	uint32_t pid_a, pid_b; /* the processes of interest */
	uint64_t total, a, b, other;
	uint64_t a_leaf_spin, b_leaf_spin, a_uempty, b_comm_other;
	uint64_t idle;
	int bad_tid, bad_comm, bad_kerr, bad_uerr, bad_depth;
	bool per_thread, kernel;
	const char *comm_a, *comm_b;
};

static int tally_fn(const struct fl_raw_stack *st, void *ctx)
{
	struct tally *t = ctx;

	t->total += st->count;
	if (st->nr_kips > 127 || st->nr_uips > 127)
		t->bad_depth++;
	if (!t->kernel && (st->kerr != -ENOENT || st->nr_kips))
		t->bad_kerr++;
	if (t->kernel && st->kerr != (st->nr_kips ? 0 : -EFAULT))
		t->bad_kerr++;
	if (st->uerr != (st->nr_uips ? 0 : -EFAULT))
		t->bad_uerr++;
	if (!st->comm || !st->comm[0])
		t->bad_comm++;
	if (st->pid == 0) {
		t->idle += st->count;
		if (strcmp(st->comm, "swapper"))
			t->bad_comm++;
		return 0;
	}
	if (t->per_thread ? st->tid == 0 : st->tid != 0)
		t->bad_tid++;
	if (st->pid == t->pid_a) {
		t->a += st->count;
		if (st->nr_uips && in_spin_work(st->uips[0]))
			t->a_leaf_spin += st->count;
		if (!st->nr_uips)
			t->a_uempty += st->count;
		if (t->comm_a && strcmp(st->comm, t->comm_a))
			t->bad_comm++;
	} else if (st->pid == t->pid_b) {
		t->b += st->count;
		if (st->nr_uips && in_spin_work(st->uips[0]))
			t->b_leaf_spin += st->count;
		/*
		 * Its first samples may carry the name it had before renaming
		 * itself: the COMM record can sit in another CPU's ring.
		 */
		if (t->comm_b && strcmp(st->comm, t->comm_b))
			t->b_comm_other += st->count;
	} else {
		t->other += st->count;
	}
	return 0;
}

static void print_stats(const char *what, struct fl_sampler *s)
{
	struct fl_sampler_stats st;

	assert_int_equal(fl_sampler__stats(s, &st), 0);
	printf("# %s: samples %llu idle %llu filtered %llu (in the kernel %llu) kstack_none %llu "
	       "ustack_none %llu truncated %llu lost_records %llu throttled %llu\n",
	       what, (unsigned long long)st.samples, (unsigned long long)st.idle,
	       (unsigned long long)st.filtered, (unsigned long long)st.filtered_kernel,
	       (unsigned long long)st.kstack_none, (unsigned long long)st.ustack_none,
	       (unsigned long long)st.truncated, (unsigned long long)st.lost_records,
	       (unsigned long long)st.throttled);
}

/* A child that waits for a byte on fd, renames itself and spins for secs. */
static pid_t fork_spinner(int *go_fd, const char *name, double secs)
{
	int go[2];
	pid_t child;

	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		prctl(PR_SET_NAME, name, 0, 0, 0);
		spin_for(secs);
		_exit(0);
	}
	close(go[0]);
	*go_fd = go[1];
	return child;
}

static void test_pid_filter(void **state)
{
	struct fl_sampler *s[2];
	struct fl_sampler_stats st;
	struct tally t = {.kernel = true, .comm_a = "spinner"};
	int go;
	pid_t child = fork_spinner(&go, "spinner", 1.0);
	int pids[1] = {child};
	struct fl_sampler_opts opts = {
		.sz = sizeof(opts),
		.freq = 999,
		.pids = pids,
		.nr_pids = 1,
		.kernel = true,
		.user = true,
		.per_thread = true,
	};

	(void)state;
	s[0] = new_sampler(&opts);
	/* No filter at all, threads together, user stacks only. */
	opts.pids = NULL;
	opts.nr_pids = 0;
	opts.per_thread = false;
	opts.kernel = false;
	opts.ring_pages = 16;
	s[1] = new_sampler(&opts);

	assert_int_equal(fl_sampler__start(s[0]), 0);
	assert_int_equal(fl_sampler__start(s[1]), 0);
	assert_int_equal(write(go, "g", 1), 1);
	close(go);
	run_until_exit(s, 2, child);

	t.pid_a = (uint32_t)child;
	t.per_thread = true;
	assert_int_equal(fl_sampler__drain(s[0], tally_fn, &t), 0);
	print_stats("pids={child}", s[0]);
	printf("# child %d: %llu samples, %llu with the leaf in spin_work, other tgids %llu\n",
	       child, (unsigned long long)t.a, (unsigned long long)t.a_leaf_spin,
	       (unsigned long long)t.other);
	assert_true(t.a > 100);
	assert_int_equal(t.other, 0);
	assert_int_equal(t.idle, 0);
	assert_true(t.a_leaf_spin * 2 > t.a);
	assert_true(t.a_uempty * 10 < t.a);
	assert_int_equal(t.bad_tid + t.bad_comm + t.bad_kerr + t.bad_uerr + t.bad_depth, 0);
	assert_int_equal(fl_sampler__stats(s[0], &st), 0);
	assert_int_equal(st.samples, t.total + st.idle + st.filtered);
	assert_true(st.kstack_none > 0); /* samples in user mode have no kernel half */
	/* The kernel let through the child's samples only. */
	if (kernel_filters(s[0]))
		assert_int_equal(st.filtered_kernel, st.filtered);

	memset(&t, 0, sizeof(t));
	t.pid_a = (uint32_t)child;
	t.comm_a = "spinner";
	assert_int_equal(fl_sampler__drain(s[1], tally_fn, &t), 0);
	print_stats("everything", s[1]);
	printf("# unfiltered: child %llu, others %llu\n", (unsigned long long)t.a,
	       (unsigned long long)t.other);
	assert_true(t.a > 100);
	assert_int_equal(t.bad_tid + t.bad_comm + t.bad_kerr + t.bad_uerr + t.bad_depth, 0);
	assert_int_equal(fl_sampler__stats(s[1], &st), 0);
	assert_int_equal(st.filtered, 0);
	assert_int_equal(st.filtered_kernel, 0);
	assert_int_equal(fl_sampler__kernel_filter(s[1]), 0); /* nothing to filter */
	assert_int_equal(st.kstack_none, 0);		      /* not asked for is not "none" */

	fl_sampler__free(s[0]);
	fl_sampler__free(s[1]);
}

static int stop_at_first(const struct fl_raw_stack *st, void *ctx)
{
	(void)st;
	(*(int *)ctx)++;
	return 42;
}

/* An idle machine: idle samples are counted and dropped, or kept as pid 0 "swapper". */
static void test_idle(void **state)
{
	struct fl_sampler *s[2];
	struct fl_sampler_stats st;
	struct tally t = {.kernel = true};
	struct fl_sampler_opts opts = {
		.sz = sizeof(opts),
		.freq = 499,
		.kernel = true,
		.user = true,
		.idle = true,
	};
	struct timespec ts = {0, 400 * 1000 * 1000};
	uint64_t idle_kept;
	int calls = 0;

	(void)state;
	s[0] = new_sampler(&opts);
	opts.idle = false;
	s[1] = new_sampler(&opts);
	assert_int_equal(fl_sampler__start(s[0]), 0);
	assert_int_equal(fl_sampler__start(s[1]), 0);
	nanosleep(&ts, NULL);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fl_sampler__stop(s[i]), 0);
		assert_int_equal(fl_sampler__poll(s[i]), 0);
	}

	assert_int_equal(fl_sampler__drain(s[0], tally_fn, &t), 0);
	print_stats("idle kept", s[0]);
	idle_kept = t.idle;
	assert_int_equal(t.bad_comm + t.bad_kerr + t.bad_uerr + t.bad_depth, 0);
	assert_int_equal(fl_sampler__stats(s[0], &st), 0);
	assert_int_equal(st.idle, 0);
	assert_int_equal(st.samples, t.total);
	assert_int_equal(fl_sampler__drain(s[0], stop_at_first, &calls), 42);
	assert_int_equal(calls, 1);

	memset(&t, 0, sizeof(t));
	t.kernel = true;
	assert_int_equal(fl_sampler__drain(s[1], tally_fn, &t), 0);
	print_stats("idle dropped", s[1]);
	assert_int_equal(t.idle, 0);
	assert_int_equal(fl_sampler__stats(s[1], &st), 0);
	assert_int_equal(st.samples, t.total + st.idle);
	/* Both sampled the same CPUs at once; other work on the machine may leave no idle time. */
	if (!idle_kept && !st.idle)
		printf("# no CPU was ever idle: idle counts not checked\n");
	else
		assert_true(idle_kept > 0 && st.idle > 0);
	fl_sampler__free(s[0]);
	fl_sampler__free(s[1]);
}

static void pin_to(long cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((int)cpu, &set);
	sched_setaffinity(0, sizeof(set), &set); /* best effort */
}

/*
 * The kept child forks a grandchild that spins: kept with follow_children
 * (and named by its COMM record), filtered without. The child forks on the
 * last CPU and the grandchild runs on the first, whose ring is read first:
 * its first samples are read before the fork record and wait as pending.
 */
static void test_follow_children(void **state)
{
	struct fl_sampler *s[2];
	struct fl_sampler_stats st;
	struct tally t = {.kernel = true, .comm_b = "grandspin"};
	int go[2], gp[2];
	pid_t child, grandchild = 0;
	int pids[1];
	long nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct fl_sampler_opts opts = {
		.sz = sizeof(opts),
		.freq = 999,
		.pids = pids,
		.nr_pids = 1,
		.follow_children = true,
		.kernel = true,
		.user = true,
	};

	(void)state;
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	assert_int_equal(pipe2(gp, O_CLOEXEC), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		pid_t g;
		int status;
		char c;

		close(go[1]);
		close(gp[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		pin_to(nr_cpus - 1);
		g = fork();
		if (g < 0)
			_exit(3);
		if (g == 0) {
			pin_to(0);
			prctl(PR_SET_NAME, "grandspin", 0, 0, 0);
			spin_for(1.0);
			_exit(0);
		}
		if (write(gp[1], &g, sizeof(g)) != (ssize_t)sizeof(g))
			_exit(4);
		if (waitpid(g, &status, 0) != g || !WIFEXITED(status) || WEXITSTATUS(status))
			_exit(5);
		_exit(0);
	}
	close(go[0]);
	close(gp[1]);
	pids[0] = child;
	s[0] = new_sampler(&opts);
	opts.follow_children = false;
	s[1] = new_sampler(&opts);
	assert_int_equal(fl_sampler__start(s[0]), 0);
	assert_int_equal(fl_sampler__start(s[1]), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	assert_int_equal(read(gp[0], &grandchild, sizeof(grandchild)), (ssize_t)sizeof(grandchild));
	close(gp[0]);
	run_until_exit(s, 2, child);

	t.pid_a = (uint32_t)child;
	t.pid_b = (uint32_t)grandchild;
	assert_int_equal(fl_sampler__drain(s[0], tally_fn, &t), 0);
	print_stats("follow_children", s[0]);
	printf("# child %d: %llu samples; grandchild %d: %llu samples (%llu in spin_work, %llu "
	       "under its old name); others %llu\n",
	       child, (unsigned long long)t.a, grandchild, (unsigned long long)t.b,
	       (unsigned long long)t.b_leaf_spin, (unsigned long long)t.b_comm_other,
	       (unsigned long long)t.other);
	assert_true(t.b > 100);
	assert_true(t.b_leaf_spin * 2 > t.b);
	assert_true(t.b_comm_other * 20 < t.b);
	assert_int_equal(t.other, 0);
	assert_int_equal(t.bad_tid + t.bad_comm + t.bad_kerr + t.bad_uerr + t.bad_depth, 0);
	assert_int_equal(fl_sampler__stats(s[0], &st), 0);
	assert_int_equal(st.samples, t.total + st.idle + st.filtered);
	/*
	 * The kernel followed the fork too: the grandchild's samples came
	 * through, the others' did not (unless a lost fork record left user
	 * space unsure whose they were).
	 */
	if (kernel_filters(s[0]) && !st.lost_records)
		assert_int_equal(st.filtered_kernel, st.filtered);

	memset(&t, 0, sizeof(t));
	t.kernel = true;
	t.pid_a = (uint32_t)child;
	t.pid_b = (uint32_t)grandchild;
	assert_int_equal(fl_sampler__drain(s[1], tally_fn, &t), 0);
	print_stats("no follow", s[1]);
	assert_int_equal(t.b, 0);
	assert_int_equal(t.other, 0);
	assert_int_equal(fl_sampler__stats(s[1], &st), 0);
	assert_true(st.filtered > 100);
	if (kernel_filters(s[1]) && !st.lost_records)
		assert_int_equal(st.filtered_kernel, st.filtered);
	fl_sampler__free(s[0]);
	fl_sampler__free(s[1]);
}

/* add_pid turns the filter on for a sampler created without pids. */
static void test_add_pid(void **state)
{
	struct fl_sampler *s;
	struct tally t = {.kernel = true, .comm_a = "spinner"};
	int go;
	pid_t child = fork_spinner(&go, "spinner", 0.4);
	struct fl_sampler_opts opts = {
		.sz = sizeof(opts),
		.freq = 999,
		.kernel = true,
		.user = true,
	};

	(void)state;
	s = new_sampler(&opts);
	assert_int_equal(fl_sampler__kernel_filter(s), 0);
	assert_int_equal(fl_sampler__add_pid(s, child), 0);
	assert_int_equal(fl_sampler__add_pid(s, 0), -EINVAL);
	kernel_filters(s); /* loaded with the first pid */
	assert_int_equal(fl_sampler__start(s), 0);
	assert_int_equal(write(go, "g", 1), 1);
	close(go);
	run_until_exit(&s, 1, child);
	t.pid_a = (uint32_t)child;
	assert_int_equal(fl_sampler__drain(s, tally_fn, &t), 0);
	assert_true(t.a > 40);
	assert_int_equal(t.other, 0);
	assert_int_equal(t.bad_comm, 0);
	fl_sampler__free(s);
	fl_sampler__free(NULL);
}

struct name_count {
	uint32_t pid;
	uint64_t before, after, other;
};

static int count_names(const struct fl_raw_stack *st, void *ctx)
{
	struct name_count *nc = ctx;

	if (st->pid != nc->pid)
		return 0;
	if (!strcmp(st->comm, "before"))
		nc->before += st->count;
	else if (!strcmp(st->comm, "after"))
		nc->after += st->count;
	else
		nc->other += st->count;
	return 0;
}
/* Spins until the calling thread has had secs of CPU time (a busy machine gives it less per second). */
__attribute__((noinline)) static void spin_cpu(double secs)
{
	struct timespec ts;

	do {
		spin_work(200000);
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	} while ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9 < secs);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

/*
 * A thread renamed on one CPU and sampled on another: its COMM records are
 * in the last CPU's ring, the samples under its new name mostly in the
 * first one's, which is read first. The rings are read once, after it
 * exited: each sample still gets the name it ran under (0.1 s of CPU as
 * "before", 0.4 s as "after"), not the one of whichever ring came first.
 */
static void test_rename_across_rings(void **state)
{
	struct fl_sampler *s;
	long last = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	struct fl_sampler_opts opts = {
		.sz = sizeof(opts),
		.freq = 999,
		.kernel = true,
		.user = true,
	};
	struct name_count nc = {0};
	int go[2], status;
	pid_t child;

	(void)state;
	if (last < 1) {
		printf("# one CPU online: no second ring to read first\n");
		skip();
	}
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		pin_to(last);
		prctl(PR_SET_NAME, "before", 0, 0, 0);
		spin_cpu(0.1);
		prctl(PR_SET_NAME, "after", 0, 0, 0);
		pin_to(0);
		spin_cpu(0.5);
		_exit(0);
	}
	close(go[0]);
	s = new_sampler(&opts);
	assert_int_equal(fl_sampler__add_pid(s, child), 0);
	assert_int_equal(fl_sampler__start(s), 0);
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	/* No read while it runs: each ring holds all it got (a few hundred samples). */
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(fl_sampler__stop(s), 0);
	assert_int_equal(fl_sampler__poll(s), 0);
	nc.pid = (uint32_t)child;
	assert_int_equal(fl_sampler__drain(s, count_names, &nc), 0);
	print_stats("rename across rings", s);
	printf("# %llu samples named before, %llu after, %llu otherwise\n",
	       (unsigned long long)nc.before, (unsigned long long)nc.after,
	       (unsigned long long)nc.other);
	assert_true(nc.after > 100);
	assert_true(nc.before * 2 < nc.after);
	assert_true(nc.other * 20 < nc.after);
	fl_sampler__free(s);
}

/*
 * --call-graph dwarf -p PID beside a busy process that is not a target: each
 * sample carries a 16 KiB stack copy, and none of the busy one's may reach
 * the rings (issue 15): the kernel drops them, and user space drops none.
 */
static void test_kernel_filter_dwarf(void **state)
{
	struct fl_sampler *s;
	struct fl_sampler_stats st;
	struct tally t = {.kernel = true, .comm_a = "target"};
	int go_target, go_busy, status;
	pid_t target = fork_spinner(&go_target, "target", 0.3);
	pid_t busy = fork_spinner(&go_busy, "busy", 1.0);
	int pids[1] = {target};
	struct fl_sampler_opts opts = {
		.sz = sizeof(opts),
		.freq = 999,
		.pids = pids,
		.nr_pids = 1,
		.kernel = true,
		.user = true,
		.dwarf = true,
		.stack_size = 16384,
	};

	(void)state;
	s = new_sampler(&opts);
	assert_int_equal(fl_sampler__start(s), 0);
	assert_int_equal(write(go_target, "g", 1), 1);
	assert_int_equal(write(go_busy, "g", 1), 1);
	close(go_target);
	close(go_busy);
	run_until_exit(&s, 1, busy);
	assert_int_equal(waitpid(target, &status, 0), target);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	t.pid_a = (uint32_t)target;
	assert_int_equal(fl_sampler__drain(s, tally_fn, &t), 0);
	print_stats("dwarf, pids={target}", s);
	assert_true(t.a > 100);
	assert_int_equal(t.other + t.idle, 0);
	assert_int_equal(fl_sampler__stats(s, &st), 0);
	assert_int_equal(st.samples, t.total + st.idle + st.filtered);
	if (!kernel_filters(s)) {
		fl_sampler__free(s);
		skip();
	}
	/* At least the busy process's second of CPU, every sample of it dropped in the kernel. */
	assert_true(st.filtered_kernel > 500);
	assert_int_equal(st.filtered - st.filtered_kernel, 0);
	fl_sampler__free(s);
}

static void test_bad_opts(void **state)
{
	struct fl_sampler *s = (struct fl_sampler *)0x1;
	struct fl_sampler_opts opts = {
		.sz = sizeof(opts),
		.freq = 99,
		.user = true,
		.ring_pages = 3,
	};

	(void)state;
	assert_int_equal(fl_sampler__new(FL_SAMPLER_RING, &opts, &s), -EINVAL);
	opts.ring_pages = 0;
	opts.nr_pids = 1;
	assert_int_equal(fl_sampler__new(FL_SAMPLER_RING, &opts, &s), -EINVAL);
	assert_ptr_equal(s, (struct fl_sampler *)0x1);
}

/* In a child pid namespace the kernel gives idle and outside tasks pid 0: --idle cannot be kept. */
static void test_idle_refused_in_child_pidns(void **state)
{
	struct fl_sampler *s = (struct fl_sampler *)0x1;
	struct fl_pidns ns = {.ino = 0xf0000123u, .initial = false};
	struct fl_sampler_opts opts = {
		.sz = sizeof(opts), .freq = 99, .user = true, .idle = true, .pidns = &ns};

	(void)state;
	assert_int_equal(fl_sampler__new(FL_SAMPLER_RING, &opts, &s), -EOPNOTSUPP);
	assert_ptr_equal(s, (struct fl_sampler *)0x1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_opts),
		cmocka_unit_test(test_pid_filter),
		cmocka_unit_test(test_idle),
		cmocka_unit_test(test_follow_children),
		cmocka_unit_test(test_add_pid),
		cmocka_unit_test(test_idle_refused_in_child_pidns),
		cmocka_unit_test(test_rename_across_rings),
		cmocka_unit_test(test_kernel_filter_dwarf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
