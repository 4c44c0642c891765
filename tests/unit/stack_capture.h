/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * For the unit tests that unwind real stacks: the executable mappings of a
 * process, and captures of a fixture process's user stacks (its registers
 * and a copy of its stack per perf sample). Every test file is a program of
 * its own, so the functions are static; inline, because a file may use only
 * some of them.
 */
#ifndef FLAMED_TEST_STACK_CAPTURE_H
#define FLAMED_TEST_STACK_CAPTURE_H

#include <limits.h>
#include <linux/perf_event.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/sampling/perfbuf.h"
#include "flamed/sampling/procmaps.h"
#include "flamed/sampling/tracker.h"
#include "flamed/unwinding/unwind.h"

#ifndef FIXTURE_DIR
#error "FIXTURE_DIR must name the directory of the built fixtures"
#endif

/* --- the executable mappings of a process ---------------------------------------- */

#define EXEC_MAPS_MAX 256

/* maps[0..n), in the order /proc/PID/maps gives them; maps[i].path points into paths[i]. */
struct exec_maps {
	struct fl_tmap maps[EXEC_MAPS_MAX];
	char paths[EXEC_MAPS_MAX][PATH_MAX];
	size_t n;
};

/* An fl_procmaps__read() callback: appends m to the struct exec_maps ctx if m is executable. */
static inline int exec_maps_add(const struct fl_procmap *m, void *ctx)
{
	struct exec_maps *em = ctx;

	if (!(m->prot & FL_PROT_EXEC) || em->n == EXEC_MAPS_MAX)
		return 0;
	snprintf(em->paths[em->n], sizeof(em->paths[0]), "%s", m->path);
	em->maps[em->n] = (struct fl_tmap){.start = m->start,
					   .end = m->end,
					   .pgoff = m->pgoff,
					   .dev_major = m->dev_major,
					   .dev_minor = m->dev_minor,
					   .ino = m->ino,
					   .path = em->paths[em->n]};
	em->n++;
	return 0;
}

/*
 * An fl_unwind_opts.find_map with the struct exec_maps as ctx (one process,
 * at any time): the mapping that holds addr, else NULL.
 */
static inline const struct fl_tmap *exec_maps_find(void *ctx, uint32_t pid, uint64_t addr,
						   uint64_t time)
{
	struct exec_maps *em = ctx;

	(void)pid;
	(void)time;
	for (size_t i = 0; i < em->n; i++)
		if (addr >= em->maps[i].start && addr < em->maps[i].end)
			return &em->maps[i];
	return NULL;
}

/* --- captures of a fixture's user stacks ------------------------------------------ */

#define CAPTURE_STACK_COPY 16384 /* bytes of stack each sample copies */
#define CAPTURE_MAX_SAMPLES 4096 /* the samples after these are dropped */
#define CAPTURE_WALL_MAX 60	 /* the longest a capture waits for its child's CPU time, in s */

/* A fixture process, its executable mappings, and the samples taken of it. */
struct capture {
	pid_t pid; /* killed and reaped by the time capture() returns */
	struct exec_maps exec;
	struct {
		uint64_t regs[FL_UNWIND_NR_REGS];
		unsigned char *stack; /* size bytes from regs[FL_UNWIND_REG_SP] up; malloc'd */
		size_t size;
	} samples[CAPTURE_MAX_SAMPLES];
	size_t nr_samples;
};

/* A clock's time in seconds. */
static inline double clock_seconds(clockid_t clk)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(clk, &ts), 0);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * An fl_perfbuf__consume() callback: appends a sample (pid and tid, the
 * registers' ABI and values, the stack's size, bytes and dynamic size) to
 * the struct capture ctx. Samples without user registers (a kernel
 * thread's) are left out.
 */
static inline int capture_on_record(const struct perf_event_header *hdr, void *ctx)
{
	struct capture *c = ctx;
	const unsigned char *p = (const unsigned char *)(hdr + 1);
	size_t nregs = (size_t)__builtin_popcountll(fl_unwind__perf_regs_mask());
	uint64_t abi, size, perf_regs[64];

	if (hdr->type != PERF_RECORD_SAMPLE || c->nr_samples == CAPTURE_MAX_SAMPLES)
		return 0;
	p += 8; /* pid, tid */
	memcpy(&abi, p, 8);
	p += 8;
	if (!abi)
		return 0;
	memcpy(perf_regs, p, nregs * 8);
	p += nregs * 8;
	memcpy(&size, p, 8);
	p += 8;
	fl_unwind__regs_from_perf(perf_regs, c->samples[c->nr_samples].regs);
	if (size) {
		uint64_t dyn;

		memcpy(&dyn, p + size, 8);
		size = dyn < size ? dyn : size;
	}
	c->samples[c->nr_samples].stack = malloc(size ? size : 1);
	assert_non_null(c->samples[c->nr_samples].stack);
	memcpy(c->samples[c->nr_samples].stack, p, size);
	c->samples[c->nr_samples].size = size;
	c->nr_samples++;
	return 0;
}

/*
 * Runs FIXTURE_DIR/prog (with arg after its seconds, unless NULL) and
 * samples its user stacks at 999 Hz for `seconds` of its CPU time, or
 * CAPTURE_WALL_MAX seconds of wall clock if that comes first. Returns a
 * capture for capture_free(), or NULL when the perf event cannot be opened
 * (the caller skips).
 */
static inline struct capture *capture_arg(const char *prog, const char *arg, double seconds)
{
	struct capture *c = calloc(1, sizeof(*c));
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = 999,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
		.sample_regs_user = fl_unwind__perf_regs_mask(),
		.sample_stack_user = CAPTURE_STACK_COPY,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.disabled = 1,
	};
	struct fl_perfbuf *buf = NULL;
	char path[PATH_MAX], secs[32];
	clockid_t cpu;
	double start;
	int fd, status;

	assert_non_null(c);
	snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, prog);
	/* It runs for as long as the capture may wait, and is killed after. */
	snprintf(secs, sizeof(secs), "%g", CAPTURE_WALL_MAX + 2.0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (!c->pid) {
		execl(path, prog, secs, arg, (char *)NULL);
		_exit(127);
	}
	usleep(200000); /* past exec and the dynamic loader */
	fd = fl_perf_event_open(&attr, c->pid, -1, -1, 0);
	if (fd < 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &status, 0);
		free(c);
		return NULL;
	}
	assert_int_equal(fl_perfbuf__new(fd, 256, &buf), 0);
	assert_int_equal(fl_procmaps__read(c->pid, exec_maps_add, &c->exec), 0);
	assert_int_equal(clock_getcpuclockid(c->pid, &cpu), 0);
	start = clock_seconds(cpu);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	/*
	 * Until the child had `seconds` of CPU, however busy the machine (a
	 * wall-clock window gives a starved child no samples). Each sample
	 * carries 16 KiB of stack: read the ring often.
	 */
	for (long waited = 0;
	     clock_seconds(cpu) - start < seconds && waited < CAPTURE_WALL_MAX * 1000;
	     waited += 10) {
		usleep(10000);
		assert_true(fl_perfbuf__consume(buf, capture_on_record, c) >= 0);
	}
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	assert_true(fl_perfbuf__consume(buf, capture_on_record, c) >= 0);
	fl_perfbuf__free(buf);
	close(fd);
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &status, 0);
	return c;
}

static inline struct capture *capture(const char *prog, double seconds)
{
	return capture_arg(prog, NULL, seconds);
}

/* Frees c and its samples' stacks; NULL is fine. */
static inline void capture_free(struct capture *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_samples; i++)
		free(c->samples[i].stack);
	free(c);
}

#endif
