// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for lib/sampling/sampler_bpf.c with the real BPF program on real perf events. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "flamed/sampling/procmaps.h"
#include "flamed/sampling/sampler.h"
#include "flamed/sampling/tracker.h"
#include "stack_capture.h"

struct tally {
	uint64_t total;
	uint64_t stacks;
	uint64_t with_user;
	uint64_t other_pid;
	uint32_t pid;
};

static int tally_cb(const struct fl_raw_stack *st, void *ctx)
{
	struct tally *t = ctx;

	t->total += st->count;
	t->stacks++;
	if (st->nr_uips > 0)
		t->with_user += st->count;
	if (st->pid != t->pid)
		t->other_pid += st->count;
	return 0;
}

/*
 * Varied user stacks: recursion depth changes with the counter. The asm
 * keeps the compiler from turning the recursion into a loop (as gcc does
 * with "spin() + 1" in some builds: then every stack is the same).
 */
__attribute__((noinline)) static uint64_t spin(unsigned depth, uint64_t x)
{
	if (depth > 0) {
		uint64_t r = spin(depth - 1, x * 31 + depth);

		__asm__ __volatile__("" : "+r"(r));
		return r + 1;
	}
	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	return x;
}

/*
 * A child that burns @seconds of its own CPU time (not of wall time: on a busy
 * machine it takes longer, and is sampled as often per CPU second), once
 * child_go() lets it: it is not sampled before the sampler runs.
 */
struct child {
	pid_t pid;
	int go_fd;
};

static struct child busy_child(double seconds)
{
	int go[2];
	pid_t pid;

	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		volatile uint64_t sink = 0;
		unsigned n = 0;
		char c;
		double end;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		end = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) + seconds;
		do
			sink += spin(n++ % 40, sink);
		while (clock_seconds(CLOCK_PROCESS_CPUTIME_ID) < end);
		_exit(0);
	}
	close(go[0]);
	return (struct child){.pid = pid, .go_fd = go[1]};
}

static void child_go(struct child *c)
{
	assert_int_equal(write(c->go_fd, "g", 1), 1);
	close(c->go_fd);
	c->go_fd = -1;
}

/* Whether the child has exited (a zombie until child_reap()). */
static bool child_exited(pid_t pid)
{
	siginfo_t si = {};

	assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT), 0);
	return si.si_pid == pid;
}

/* Reaps the child; returns the CPU seconds it used. */
static double child_reap(const struct child *c)
{
	struct rusage ru;

	assert_int_equal(wait4(c->pid, NULL, 0, &ru), c->pid);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/*
 * @samples taken at @freq of a process that used @cpu_s seconds of CPU
 * while sampled: about @freq per CPU second (70 to 115 %), none counted
 * twice, however busy the machine is. The low end is the kernel's timer,
 * not flamed: in a VM the hrtimer behind cpu-clock fires late when the host
 * is busy (82.1 % seen once in a quiet CI run); what flamed itself drops is
 * checked exactly by the callers (the accounting identity, lost == 0).
 */
static void assert_samples_of_cpu(uint64_t samples, uint64_t freq, double cpu_s)
{
	double share = 100.0 * (double)samples / ((double)freq * cpu_s);

	printf("# %llu samples for %.3f s of CPU at %llu Hz: %.1f%%\n", (unsigned long long)samples,
	       cpu_s, (unsigned long long)freq, share);
	assert_true(share >= 70.0 && share <= 115.0);
}

static struct fl_sampler *open_or_skip(struct fl_sampler_opts *o)
{
	struct fl_sampler *s = NULL;
	int err = fl_sampler__new(FL_SAMPLER_BPF, o, &s);

	if (err == -EACCES || err == -EPERM) {
		fprintf(stderr, "SKIP: BPF or perf events not permitted (%s): run as root\n",
			strerror(-err));
		exit(77);
	}
	assert_int_equal(err, 0);
	return s;
}

/* Records a child that burns 1 s of CPU; returns the CPU seconds it used. */
static double record_child(struct fl_sampler_opts *o, struct fl_sampler_stats *ss, struct tally *t)
{
	struct fl_sampler *s;
	struct child child = busy_child(1.0);
	double cpu_s;
	int pid = child.pid;

	o->pids = &pid;
	o->nr_pids = 1;
	s = open_or_skip(o);
	assert_int_equal(fl_sampler__start(s), 0);
	child_go(&child);
	/* Until it exits: polled as flamed does, whatever time that takes. */
	while (!child_exited(child.pid)) {
		usleep(100000);
		assert_int_equal(fl_sampler__poll(s), 0);
	}
	cpu_s = child_reap(&child);
	assert_int_equal(fl_sampler__stop(s), 0);
	assert_int_equal(fl_sampler__poll(s), 0);
	*t = (struct tally){.pid = (uint32_t)child.pid};
	assert_int_equal(fl_sampler__drain(s, tally_cb, t), 0);
	assert_int_equal(fl_sampler__stats(s, ss), 0);
	fl_sampler__free(s);
	return cpu_s;
}

/* The mappings the tracker gives: the executable ones, but [vsyscall] (not the process's). */
static int add_tracked_map(const struct fl_procmap *pm, void *ctx)
{
	return strcmp(pm->path, "[vsyscall]") ? exec_maps_add(pm, ctx) : 0;
}

static int walked_cb(const struct fl_raw_stack *st, void *ctx)
{
	struct tally *t = ctx;

	if (st->pid == t->pid) {
		t->total += st->count;
		/* Deeper than spin() alone: the walk went past the leaf. */
		if (st->nr_uips >= 4)
			t->with_user += st->count;
	}
	return 0;
}

/*
 * kernel-dwarf through the sampler: the mappings given for this process
 * are walked with tables built when a sample first needs them (the
 * program's own binary) or at start (libc, ld.so); the stats say how the
 * stacks were walked; tables of files no process maps any more go after
 * two trims, their rows and files with them.
 */
static void test_kdwarf_tables(void **state)
{
	int self = getpid();
	/* Only this process: the counters are the program's, for every sample it walks. */
	struct fl_sampler_opts o = {.sz = sizeof(o),
				    .freq = 999,
				    .pids = &self,
				    .nr_pids = 1,
				    .user = true,
				    .kdwarf = true};
	struct exec_maps *em = calloc(1, sizeof(*em));
	struct fl_sampler_stats ss;
	struct tally t = {.pid = (uint32_t)getpid()};
	volatile uint64_t sink = 0;
	struct fl_sampler *s;
	double end;
	unsigned n = 0;

	(void)state;
	assert_non_null(em);
	s = open_or_skip(&o);
	assert_true(fl_sampler__kdwarf(s));
	assert_int_equal(fl_procmaps__read(getpid(), add_tracked_map, em), 0);
	assert_true(em->n >= 3);
	assert_int_equal(fl_sampler__set_maps(s, (uint32_t)getpid(), em->maps, em->n), 0);
	fl_sampler__settle_tables(s, 5000);
	assert_int_equal(fl_sampler__stats(s, &ss), 0);
	printf("# before sampling: %llu files, %llu loaded, %llu deferred-or-pending\n",
	       (unsigned long long)ss.tables_files, (unsigned long long)ss.tables_loaded,
	       (unsigned long long)(ss.tables_files - ss.tables_loaded - ss.tables_no_cfi));
	/* libc and ld.so at once; the test's own binary not before a sample needs it. */
	assert_true(ss.tables_loaded >= 2);
	assert_true(ss.tables_files > ss.tables_loaded);

	assert_int_equal(fl_sampler__start(s), 0);
	end = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) + 1.0;
	do {
		sink += spin(n++ % 40, sink);
		if (n % 64 == 0)
			assert_int_equal(fl_sampler__poll(s), 0);
	} while (clock_seconds(CLOCK_PROCESS_CPUTIME_ID) < end);
	assert_int_equal(fl_sampler__stop(s), 0);
	assert_int_equal(fl_sampler__poll(s), 0);
	fl_sampler__settle_tables(s, 5000);
	assert_int_equal(fl_sampler__drain(s, walked_cb, &t), 0);
	assert_int_equal(fl_sampler__stats(s, &ss), 0);
	printf("# %llu of our samples, %llu with 4+ user frames; walked %llu: tables alone %llu, "
	       "fp (no table yet) %llu, fp (no CFI) %llu; complete %llu, stopped %llu; "
	       "%llu files, %llu loaded, %llu rows, %llu bytes\n",
	       (unsigned long long)t.total, (unsigned long long)t.with_user,
	       (unsigned long long)ss.uw_walked, (unsigned long long)ss.uw_tables,
	       (unsigned long long)ss.uw_fp_notable, (unsigned long long)ss.uw_fp_nocfi,
	       (unsigned long long)ss.uw_complete, (unsigned long long)ss.uw_stopped,
	       (unsigned long long)ss.tables_files, (unsigned long long)ss.tables_loaded,
	       (unsigned long long)ss.tables_rows, (unsigned long long)ss.tables_bytes);
	assert_true(t.total > 100);
	assert_true(ss.uw_walked >= t.total);
	/* Every walk ends one way, and most by tables alone. */
	assert_int_equal(ss.uw_walked,
			 ss.uw_complete + ss.uw_stopped + ss.uw_truncated + ss.uw_copied);
	assert_true(ss.uw_copied <= ss.uw_fp_notable);
	assert_true(ss.uw_tables * 10 >= ss.uw_walked * 9);
	assert_true(t.with_user * 10 >= t.total * 9);
	/* The test's binary was needed: its table came. */
	assert_true(ss.tables_loaded >= 3);
	assert_true(ss.tables_rows > 0 && ss.tables_bytes >= ss.tables_rows * 16);

	/* Gone: after two trims no table is left, and every row went with them. */
	assert_int_equal(fl_sampler__set_maps(s, (uint32_t)getpid(), NULL, 0), 0);
	fl_sampler__trim_tables(s);
	fl_sampler__trim_tables(s);
	assert_int_equal(fl_sampler__stats(s, &ss), 0);
	assert_int_equal(ss.tables_loaded, 0);
	assert_int_equal(ss.tables_rows, 0);
	assert_int_equal(ss.tables_files, 0);
	assert_true(ss.tables_unloaded >= 3);
	fl_sampler__free(s);
	free(em);
}

/*
 * The tables' memory stays within max_table_bytes: libc's table (about
 * 450 KB) does not fit in 256 KiB and is counted over the budget; ld.so's
 * (about 40 KB) fits.
 */
static void test_kdwarf_budget(void **state)
{
	struct fl_sampler_opts o = {.sz = sizeof(o),
				    .freq = 99,
				    .user = true,
				    .kdwarf = true,
				    .max_table_bytes = 256 << 10};
	struct fl_sampler_stats ss;
	struct fl_sampler *s;

	(void)state;
	s = open_or_skip(&o);
	/* libc and ld.so, built at start. */
	fl_sampler__settle_tables(s, 5000);
	assert_int_equal(fl_sampler__stats(s, &ss), 0);
	printf("# budget 256 KiB: %llu files, %llu loaded, %llu over the budget, %llu bytes\n",
	       (unsigned long long)ss.tables_files, (unsigned long long)ss.tables_loaded,
	       (unsigned long long)ss.tables_over_budget, (unsigned long long)ss.tables_bytes);
	assert_true(ss.tables_over_budget >= 1);
	assert_true(ss.tables_loaded >= 1);
	assert_true(ss.tables_bytes <= 256 << 10 && ss.tables_peak_bytes <= 256 << 10);
	fl_sampler__free(s);
}

/*
 * A kernel that cannot run the walker (here: one without bpf_loop, as the
 * feature probe is told to answer) is refused with -EOPNOTSUPP, for the
 * caller to record frame-pointer stacks instead.
 */
static void test_kdwarf_unsupported(void **state)
{
	struct fl_sampler_opts o = {.sz = sizeof(o), .freq = 99, .user = true, .kdwarf = true};
	struct fl_sampler *s = NULL;

	(void)state;
	o.pretend_no_bpf_loop = true;
	assert_int_equal(fl_sampler__new(FL_SAMPLER_BPF, &o, &s), -EOPNOTSUPP);
	o.pretend_no_bpf_loop = false;
	o.kdwarf = false;
	s = open_or_skip(&o);
	assert_false(fl_sampler__kdwarf(s));
	fl_sampler__free(s);
}

static void test_counts_one_process(void **state)
{
	struct fl_sampler_opts o = {.sz = sizeof(o), .freq = 999, .kernel = true, .user = true};
	struct fl_sampler_stats ss;
	struct tally t;

	(void)state;
	assert_samples_of_cpu(t.total, o.freq, record_child(&o, &ss, &t));
	assert_int_equal(t.other_pid, 0);
	assert_true(t.with_user * 10 > t.total * 9);
	/* Every sample is accounted for: kept, idle, other processes, or lost. */
	assert_int_equal(ss.samples, t.total + ss.idle + ss.filtered + ss.lost);
	assert_int_equal(ss.lost, 0);
}

static void test_collisions_are_recovered(void **state)
{
	/* Two stack-map slots for dozens of distinct stacks: most collide. */
	struct fl_sampler_opts o = {.sz = sizeof(o),
				    .freq = 999,
				    .kernel = true,
				    .user = true,
				    .stack_storage_size = 2,
				    .max_stacks = 4};
	struct fl_sampler_stats ss;
	struct tally t;

	(void)state;
	/* Samples counted in user space count all the same. */
	assert_samples_of_cpu(t.total, o.freq, record_child(&o, &ss, &t));
	printf("# %llu samples in %llu stacks; %llu collisions, %llu full, %llu recovered, %llu "
	       "lost\n",
	       (unsigned long long)t.total, (unsigned long long)t.stacks,
	       (unsigned long long)ss.collisions, (unsigned long long)ss.map_full,
	       (unsigned long long)ss.recovered, (unsigned long long)ss.lost);
	assert_true(ss.collisions + ss.map_full > 0);
	assert_true(ss.recovered > 0);
	assert_int_equal(ss.lost, 0);
	assert_true(t.stacks > 4);
	assert_int_equal(ss.samples, t.total + ss.idle + ss.filtered + ss.lost);
}

/*
 * Snapshots while sampling goes on: every sample lands in exactly one
 * snapshot (or the final drain), none twice, none lost, with the stack
 * map small enough that it would fill up if snapshots did not empty it.
 */
static void test_snapshots_partition_samples(void **state)
{
	struct fl_sampler_opts o = {.sz = sizeof(o),
				    .freq = 999,
				    .kernel = true,
				    .user = true,
				    .stack_storage_size = 256,
				    .snapshots = true};
	struct fl_sampler_stats ss;
	struct fl_sampler *s;
	struct tally parts[8] = {}, last = {};
	uint64_t sum = 0;
	struct child child = busy_child(3600); /* until killed */
	int pid = child.pid;
	double cpu_prev = 0, cpu_now;
	clockid_t clock;

	(void)state;
	assert_int_equal(clock_getcpuclockid(child.pid, &clock), 0);
	o.pids = &pid;
	o.nr_pids = 1;
	s = open_or_skip(&o);
	assert_int_equal(fl_sampler__start(s), 0);
	child_go(&child);
	for (int i = 0; i < 8; i++) {
		/* 0.15 s more of the child's CPU, however long a busy machine takes to give it. */
		do {
			usleep(20000);
			cpu_now = clock_seconds(clock);
		} while (cpu_now < cpu_prev + 0.15);
		parts[i].pid = (uint32_t)child.pid;
		assert_int_equal(fl_sampler__snapshot(s, tally_cb, &parts[i]), 0);
		sum += parts[i].total;
		/* Each interval holds the samples of the CPU the child used in it. */
		printf("# snapshot %d: %llu samples for %.3f s of CPU\n", i,
		       (unsigned long long)parts[i].total, cpu_now - cpu_prev);
		assert_true((double)parts[i].total >= 0.7 * (double)o.freq * (cpu_now - cpu_prev));
		assert_int_equal(parts[i].other_pid, 0);
		cpu_prev = cpu_now;
	}
	kill(child.pid, SIGKILL);
	cpu_now = child_reap(&child);
	assert_int_equal(fl_sampler__stop(s), 0);
	assert_int_equal(fl_sampler__poll(s), 0);
	/* The rest: what the child burnt after the last one, until it was killed. */
	last.pid = (uint32_t)child.pid;
	assert_int_equal(fl_sampler__snapshot(s, tally_cb, &last), 0);
	sum += last.total;
	assert_samples_of_cpu(sum, o.freq, cpu_now);
	assert_int_equal(fl_sampler__stats(s, &ss), 0);
	assert_int_equal(ss.lost, 0);
	assert_int_equal(ss.samples, sum + ss.idle + ss.filtered);
	/*
	 * A snapshot of nothing new is empty, and so is the drain at the end:
	 * the snapshots took every sample. (A drain does not take what it
	 * gives: it comes once, last.)
	 */
	memset(&last, 0, sizeof(last));
	assert_int_equal(fl_sampler__snapshot(s, tally_cb, &last), 0);
	assert_int_equal(last.total, 0);
	assert_int_equal(fl_sampler__drain(s, tally_cb, &last), 0);
	assert_int_equal(last.total, 0);
	fl_sampler__free(s);

	/* Without opts.snapshots there is one set of maps: no snapshot. */
	o.snapshots = false;
	pid = getpid();
	s = open_or_skip(&o);
	assert_int_equal(fl_sampler__snapshot(s, tally_cb, &last), -EINVAL);
	fl_sampler__free(s);
}

/*
 * Gathers move the kernel's counts into user space as sampling goes on;
 * a take of a process that exited gives its samples and looks at no other
 * process's stacks, however many the long-lived one beside it has. No
 * sample is lost or counted twice on the way.
 */
static void test_gather_and_take(void **state)
{
	struct child longer = busy_child(3600); /* until killed */
	/* This process (whose children forked from now on are kept) and the long-lived child. */
	int pids[] = {getpid(), longer.pid};
	struct fl_sampler_opts o = {.sz = sizeof(o),
				    .freq = 999,
				    .kernel = true,
				    .user = true,
				    .pids = pids,
				    .nr_pids = 2,
				    .follow_children = true};
	struct fl_sampler_stats ss;
	struct tally t = {.pid = (uint32_t)longer.pid};
	struct fl_sampler *s;
	uint64_t taken = 0, examined = 0;
	double long_cpu;

	(void)state;
	s = open_or_skip(&o);
	assert_int_equal(fl_sampler__start(s), 0);
	child_go(&longer);
	for (int i = 0; i < 6; i++) {
		struct child c = busy_child(0.1);
		struct tally ct = {.pid = (uint32_t)c.pid};
		uint32_t pid = (uint32_t)c.pid;
		double cpu;

		child_go(&c);
		while (!child_exited(c.pid)) {
			usleep(50000);
			assert_int_equal(fl_sampler__poll(s), 0);
			assert_int_equal(fl_sampler__gather(s), 0);
		}
		cpu = child_reap(&c);
		assert_int_equal(fl_sampler__poll(s), 0);
		assert_int_equal(fl_sampler__take(s, &pid, 1, tally_cb, &ct), 0);
		assert_int_equal(ct.other_pid, 0);
		assert_samples_of_cpu(ct.total, o.freq, cpu);
		assert_int_equal(fl_sampler__stats(s, &ss), 0);
		/* What it looked at: this child's stacks, given to the callback. */
		assert_int_equal(ss.take_examined - examined, ct.stacks);
		examined = ss.take_examined;
		taken += ct.total;
		/* Taken once: nothing of it comes again. */
		ct = (struct tally){.pid = pid};
		assert_int_equal(fl_sampler__take(s, &pid, 1, tally_cb, &ct), 0);
		assert_int_equal(ct.total, 0);
	}
	kill(longer.pid, SIGKILL);
	long_cpu = child_reap(&longer);
	assert_int_equal(fl_sampler__stop(s), 0);
	assert_int_equal(fl_sampler__poll(s), 0);
	assert_int_equal(fl_sampler__stats(s, &ss), 0);
	/* A gather at least every 50 ms moved the counts: many entries, many flips. */
	printf("# %llu gathers moved %llu entries\n", (unsigned long long)ss.gathers,
	       (unsigned long long)ss.gathered);
	assert_true(ss.gathers >= 12);
	assert_true(ss.gathered > 0);
	assert_int_equal(fl_sampler__drain(s, tally_cb, &t), 0);
	printf("# the drain: %llu samples in %llu stacks, none looked at by a take\n",
	       (unsigned long long)t.total, (unsigned long long)t.stacks);
	/* The long-lived child's spin() recursion makes dozens of stacks. */
	assert_true(t.stacks >= 20);
	assert_samples_of_cpu(t.total - t.other_pid, o.freq, long_cpu);
	assert_int_equal(ss.lost, 0);
	/* Every sample once: the takes' and the drain's (whose total counts every process). */
	assert_int_equal(ss.samples, taken + t.total + ss.idle + ss.filtered);
	fl_sampler__free(s);
}

static void test_user_only_and_per_thread(void **state)
{
	struct fl_sampler_opts o = {.sz = sizeof(o), .freq = 499, .user = true, .per_thread = true};
	struct fl_sampler_stats ss;
	struct tally t;

	(void)state;
	assert_samples_of_cpu(t.total, o.freq, record_child(&o, &ss, &t));
	assert_int_equal(ss.kstack_none, 0);
}

/*
 * The pid-namespace path of the program, run in the initial namespace
 * presented as a child one: every task is found there (by
 * bpf_get_ns_current_pid_tgid), with the pids the plain path gives.
 */
static void test_pidns_translated(void **state)
{
	struct fl_sampler_opts o = {.sz = sizeof(o), .freq = 999, .kernel = true, .user = true};
	struct fl_sampler_stats ss;
	struct fl_pidns ns;
	struct tally t;

	(void)state;
	assert_int_equal(fl_pidns__self(&ns), 0);
	ns.initial = false;
	o.pidns = &ns;
	assert_samples_of_cpu(t.total, o.freq, record_child(&o, &ss, &t));
	assert_int_equal(t.other_pid, 0);
	assert_int_equal(ss.other_ns, 0);
	assert_int_equal(ss.samples, t.total + ss.idle + ss.filtered + ss.lost);
}

/*
 * A namespace no task is in (nsfs inodes start at 0xf0000000): every task
 * but the idle one is outside it, and counted so; with targets, as a
 * process not asked for.
 */
static void test_pidns_outside(void **state)
{
	struct fl_pidns ns = {.dev = 0, .ino = 1, .initial = false};
	struct fl_sampler_opts o = {
		.sz = sizeof(o), .freq = 999, .kernel = true, .user = true, .pidns = &ns};
	struct fl_sampler_stats ss;
	struct fl_sampler *s;
	struct tally t = {};
	struct child child;
	double cpu_s;

	(void)state;
	record_child(&o, &ss, &t);
	assert_int_equal(t.total, 0);
	assert_int_equal(ss.other_ns, 0);
	assert_true(ss.filtered > 300);

	o.pids = NULL;
	o.nr_pids = 0;
	child = busy_child(1.0);
	s = open_or_skip(&o);
	assert_int_equal(fl_sampler__start(s), 0);
	child_go(&child);
	cpu_s = child_reap(&child);
	assert_int_equal(fl_sampler__stop(s), 0);
	assert_int_equal(fl_sampler__poll(s), 0);
	assert_int_equal(fl_sampler__drain(s, tally_cb, &t), 0);
	assert_int_equal(fl_sampler__stats(s, &ss), 0);
	fl_sampler__free(s);
	printf("# %llu samples: %llu outside, %llu idle\n", (unsigned long long)ss.samples,
	       (unsigned long long)ss.other_ns, (unsigned long long)ss.idle);
	assert_int_equal(t.total, 0);
	/* The child alone, outside, was sampled about 999 times a CPU second. */
	assert_true((double)ss.other_ns >= 0.85 * 999 * cpu_s);
	assert_int_equal(ss.samples, ss.other_ns + ss.idle + ss.lost);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pidns_translated),
		cmocka_unit_test(test_pidns_outside),
		cmocka_unit_test(test_counts_one_process),
		cmocka_unit_test(test_kdwarf_tables),
		cmocka_unit_test(test_kdwarf_budget),
		cmocka_unit_test(test_kdwarf_unsupported),
		cmocka_unit_test(test_collisions_are_recovered),
		cmocka_unit_test(test_user_only_and_per_thread),
		cmocka_unit_test(test_snapshots_partition_samples),
		cmocka_unit_test(test_gather_and_take),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: needs root (or CAP_BPF and CAP_PERFMON)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
