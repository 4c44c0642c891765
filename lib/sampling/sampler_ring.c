// SPDX-License-Identifier: GPL-2.0-or-later
/* The ring sampler backend: cpu-clock samples with callchains read from per-CPU perf rings. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "flamed/common/log.h"
#include "flamed/sampling/perfbuf.h"
#include "flamed/profile_abi.h"
#include "flamed/python_abi.h"
#include "flamed/sampling/stackagg.h"
#include "flamed/unwinding/unwind.h"
#include "sampling/perf_records.h"
#include "sampling/pidfilter.h"
#include "sampling/sampler_impl.h"
#include "common/u32map.h"

#define SR_DEFAULT_RING_PAGES 128
/* DWARF samples carry a stack copy each (16 KiB by default): a bigger ring. */
#define SR_DEFAULT_DWARF_RING_PAGES 1024
/* Ancestors walked to find a kept one; pid reuse could otherwise make a loop. */
#define SR_MAX_ANCESTRY 256
/* Python: records of one CPU waiting for their samples, at most (the oldest go first). */
#define SR_PYQ_MAX 1024
/* ... the farthest a record's time is from its sample's, in ns (and half the sampling period). */
#define SR_PY_WINDOW_NS 1000000ULL

static const char sr_idle_comm[] = "swapper";
static const char sr_unknown_comm[] = "[unknown]";
/* The samples of a task the kernel has no pid for any more (on_sample()). */
static const char sr_exiting_comm[] = "[exiting]";

/* Values in the kept map. */
enum {
	KEEP_NO = 0,	/* was a descendant; its pid went to an unrelated process */
	KEEP_CHILD = 1, /* a descendant of an asked-for process */
	KEEP_ASKED = 2, /* from opts->pids or add_pid: kept for good */
};

struct comm_ent {
	char name[FL_TASK_COMM_LEN];
	/*
	 * The name before the last rename (an exec, mostly) and when that was:
	 * a sample of before it, read after it (from another ring, or left in
	 * its ring for the next poll), still gets the name it ran under.
	 */
	char prev[FL_TASK_COMM_LEN];
	uint64_t since; /* 0: no rename seen */
	uint32_t tid;
	bool exited;	    /* the thread's exit was read: its tid may be reused */
	uint64_t exit_poll; /* ... in this poll */
};

/* A sample's Python frames from the kernel filter, waiting for the sample (struct fl_filter_pyrec). */
struct py_ent {
	uint64_t time, end; /* the program's run: [time, end] */
	uint32_t tid, nr;
	uint64_t frames[FL_PY_MAX_FRAMES];
};

/* One CPU's records, oldest first: n entries from head in a ring of cap (0 or a power of two). */
struct py_queue {
	struct py_ent *ents;
	size_t head, n, cap;
};

struct ring_sampler {
	struct fl_sampler base;
	struct fl_sampler_opts opts; /* opts.pids not kept: copied into kept */

	struct fl_cpu_events *events; /* one per CPU, each with its ring */

	/*
	 * flamed runs in a child pid namespace: the kernel gives pid 0 to the
	 * tasks it cannot see there, and the idle task is left out (exclude_idle).
	 */
	bool child_ns;
	struct fl_pidns ns; /* the namespace of the pids in the records: flamed's */

	/* Filtering: on once pids were given or added. */
	bool filter;
	/*
	 * The same filter in the kernel, loaded when filtering starts: the
	 * samples of other processes are not even copied to the rings. What
	 * it lets through is filtered here again. kfilter_err: why it is not
	 * in use (0: it is, or no filtering).
	 */
	struct fl_pidfilter *kfilter;
	int kfilter_err;
	/*
	 * Python frames (opts.python): the kernel filter's program reads them
	 * for each sample it keeps (loaded then without targets too, keeping
	 * every sample) and writes them to a BPF ring before the kernel writes
	 * the sample; they are joined here by CPU, thread and time. python: it
	 * does; sample_cpu: the samples carry their CPU (PERF_SAMPLE_CPU, asked
	 * for when the program loaded with python). pyq: per CPU number, the
	 * records read and not yet joined; pyips: the sample's being read.
	 */
	bool python, sample_cpu;
	uint64_t py_window; /* ns: a record is within this of its sample's time */
	struct py_queue *pyq;
	size_t nr_pyq;
	uint64_t py_dropped; /* records dropped here: their CPU's queue full */
	uint64_t pyips[FL_PY_MAX_FRAMES];
	size_t nr_pyips;
	struct fl_u32map kept;	  /* tgid -> KEEP_* */
	struct fl_u32map parents; /* follow_children: tgid -> parent tgid from fork records */

	/* Thread names: tid -> index into comms. */
	struct fl_u32map comm_idx;
	struct comm_ent *comms;
	size_t nr_comms, cap_comms;

	struct fl_stackagg *agg;
	uint64_t take_examined; /* stacks take() looked at */
	/*
	 * follow_children: samples of tgids not known to descend from a kept
	 * one when read, because the fork record may sit unread in another
	 * CPU's ring. The kernel writes a fork record before the child can run,
	 * so once every ring has been read once more, the answer is known:
	 * pending holds what the current poll read, pending_prev what the poll
	 * before read (decided at the end of this one). Memory stays bounded by
	 * what two polls bring.
	 */
	struct fl_stackagg *pending, *pending_prev;

	/* --cgroup: the targets (opts.cgroups copied), placed by opts.cgroup_tree. */
	struct fl_cgroup_target cgroups[FL_CGROUP_MAX_TARGETS];
	size_t nr_cgroups;
	bool want_cgroup; /* PERF_SAMPLE_CGROUP: per_cgroup or targets */

	struct fl_sampler_stats st;
	uint64_t polls;	      /* ring_poll() calls so far */
	uint64_t known_until; /* samples after this wait for the next poll (opts.known_until) */
	uint64_t kips[FL_MAX_STACK_DEPTH], uips[FL_MAX_STACK_DEPTH];
};

static struct ring_sampler *to_ring(struct fl_sampler *s)
{
	return (struct ring_sampler *)s;
}

static const struct ring_sampler *to_ring_const(const struct fl_sampler *s)
{
	return (const struct ring_sampler *)s;
}

/* ---- thread names ---- */

static int comm_set(struct ring_sampler *r, uint32_t tid, const char *comm, size_t len)
{
	uint32_t idx;
	int err;

	if (len >= FL_TASK_COMM_LEN)
		len = FL_TASK_COMM_LEN - 1;
	if (!fl_u32map__get(&r->comm_idx, tid, &idx)) {
		if (r->nr_comms >= UINT32_MAX)
			return -ENOMEM;
		if (r->nr_comms == r->cap_comms) {
			size_t ncap = r->cap_comms ? r->cap_comms * 2 : 256;
			struct comm_ent *nc = realloc(r->comms, ncap * sizeof(*nc));

			if (!nc)
				return -ENOMEM;
			r->comms = nc;
			r->cap_comms = ncap;
		}
		idx = (uint32_t)r->nr_comms;
		err = fl_u32map__put(&r->comm_idx, tid, idx);
		if (err)
			return err;
		r->nr_comms++;
	}
	memset(&r->comms[idx], 0, sizeof(r->comms[idx]));
	memcpy(r->comms[idx].name, comm, len);
	r->comms[idx].tid = tid;
	return 0;
}

/*
 * Forgets the names of threads whose exit was read two polls ago or more:
 * every ring has been read since, so no sample of theirs is still unread.
 * Returns 0 or -ENOMEM (nothing lost: the names stay).
 */
static int comms_prune(struct ring_sampler *r)
{
	for (size_t i = r->nr_comms; i-- > 0;) {
		size_t last = r->nr_comms - 1;
		uint32_t tid = r->comms[i].tid;

		if (!r->comms[i].exited || r->comms[i].exit_poll + 2 > r->polls)
			continue;
		if (i != last) {
			/* An update (fits the table): the last entry moves into the hole. */
			int err = fl_u32map__put(&r->comm_idx, r->comms[last].tid, (uint32_t)i);

			if (err)
				return err;
			r->comms[i] = r->comms[last];
		}
		fl_u32map__del(&r->comm_idx, tid);
		r->nr_comms--;
	}
	return 0;
}

static struct comm_ent *comm_ent(const struct ring_sampler *r, uint32_t tid)
{
	uint32_t idx;

	if (!fl_u32map__get(&r->comm_idx, tid, &idx))
		return NULL;
	return &r->comms[idx];
}

/*
 * A thread renamed at time (a COMM record's): its old name stays for older
 * samples. A record not newer than the last rename applied is one read
 * ahead already (ring_poll() applies every ring's names before reading any
 * sample) or older than what is known: the name stays as it is.
 */
static int comm_rename(struct ring_sampler *r, uint32_t tid, const char *comm, size_t len,
		       uint64_t time)
{
	struct comm_ent *e = comm_ent(r, tid);
	char old[FL_TASK_COMM_LEN] = "";
	int err;

	if (e && time && time <= e->since)
		return 0;
	/* An exited thread's name is not this one's past: a new task took its tid. */
	if (e && !e->exited)
		memcpy(old, e->name, sizeof(old));
	err = comm_set(r, tid, comm, len);
	if (err || !time)
		return err;
	e = comm_ent(r, tid); /* comm_set() may have moved the table */
	memcpy(e->prev, old, sizeof(e->prev));
	e->since = time;
	return 0;
}

static const char *comm_cached(const struct ring_sampler *r, uint32_t tid)
{
	const struct comm_ent *e = comm_ent(r, tid);

	return e ? e->name : NULL;
}

/* The kernel's name of a thread: /proc/PID/task/TID/comm without its newline. */
static int read_proc_comm(uint32_t pid, uint32_t tid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ENODATA;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/*
 * The thread's name from the COMM records (or inherited at fork), else read
 * from /proc once and remembered, else its process's name if known, else
 * "[unknown]": its name at time. Always returns a string.
 */
static const char *comm_of(struct ring_sampler *r, uint32_t pid, uint32_t tid, uint64_t time)
{
	const struct comm_ent *e;
	const char *c;
	char buf[64];

	if (tid == 0)
		return sr_idle_comm;
	e = comm_ent(r, tid);
	if (e)
		return e->since && time < e->since && e->prev[0] ? e->prev : e->name;
	if (read_proc_comm(pid, tid, buf, sizeof(buf)) == 0 && buf[0]) {
		if (comm_set(r, tid, buf, strlen(buf)) == 0)
			return comm_cached(r, tid);
		return sr_unknown_comm;
	}
	c = comm_cached(r, pid);
	/* Copied: comm_set() may move the names. */
	snprintf(buf, sizeof(buf), "%s", c ? c : sr_unknown_comm);
	/* Remembered either way: /proc is read at most once per thread. */
	if (comm_set(r, tid, buf, strlen(buf)) == 0)
		return comm_cached(r, tid);
	return sr_unknown_comm;
}

/* ---- records ---- */

/*
 * PERF_SAMPLE_TID | PERF_SAMPLE_TIME, then (sample_cpu) PERF_SAMPLE_CPU's
 * u32 cpu, u32 reserved, then PERF_SAMPLE_CALLCHAIN's u64 nr, u64 ips[nr]:
 * the kernel's order.
 */
struct sample_rec {
	struct perf_event_header hdr;
	uint32_t pid, tid;
	uint64_t time;
};

/* ---- Python frames ---- */

static struct py_ent *pyq_at(const struct py_queue *q, size_t i)
{
	return &q->ents[(q->head + i) & (q->cap - 1)];
}

static void pyq_pop(struct py_queue *q, size_t k)
{
	q->head = (q->head + k) & (q->cap - 1);
	q->n -= k;
}

/* Room for one more: the queue grows up to SR_PYQ_MAX, then its oldest goes. */
static int pyq_room(struct ring_sampler *r, struct py_queue *q)
{
	struct py_ent *ents;
	size_t cap;

	if (q->n < q->cap)
		return 0;
	if (q->cap >= SR_PYQ_MAX) {
		pyq_pop(q, 1);
		r->py_dropped++;
		return 0;
	}
	cap = q->cap ? q->cap * 2 : 16;
	ents = malloc(cap * sizeof(*ents));
	if (!ents)
		return -ENOMEM;
	for (size_t i = 0; i < q->n; i++)
		ents[i] = *pyq_at(q, i);
	free(q->ents);
	q->ents = ents;
	q->cap = cap;
	q->head = 0;
	return 0;
}

/*
 * A record of the kernel filter: queued on its CPU's (records of one CPU
 * come in the order of its samples). Without memory it is dropped: its
 * sample goes without Python frames.
 */
static void on_pyrec(void *ctx, const struct fl_filter_pyrec *rec)
{
	struct ring_sampler *r = ctx;
	struct py_queue *q;
	struct py_ent *e;

	if (rec->cpu >= r->nr_pyq)
		return;
	q = &r->pyq[rec->cpu];
	if (pyq_room(r, q)) {
		r->py_dropped++;
		return;
	}
	e = pyq_at(q, q->n++);
	e->time = rec->time;
	e->end = rec->time + rec->took;
	e->tid = rec->tid;
	e->nr = rec->nr;
	memcpy(e->frames, rec->frames, rec->nr * sizeof(e->frames[0]));
}

/* How far time is from the program's run of e. */
static uint64_t time_dist(const struct py_ent *e, uint64_t time)
{
	return time < e->time ? e->time - time : time > e->end ? time - e->end : 0;
}

/*
 * The Python frames of the sample of thread tid on CPU cpu at time, into
 * pyips: the record of that CPU and thread nearest to time, within the
 * window. The program writes a sample's record while the kernel makes
 * the sample: before it is in the perf ring, the sample's time read a
 * moment before the program ran or after (struct fl_filter_pyrec).
 * Samples of one CPU are a sampling period apart, twice the window at
 * least: no other sample's record is that near. Whatever is older than
 * the sample (others' records, those of samples the perf ring had no room
 * for) is dropped then: a later sample cannot be that far.
 */
static void py_join(struct ring_sampler *r, uint32_t cpu, uint32_t tid, uint64_t time)
{
	struct py_queue *q;
	size_t best = SIZE_MAX, i;
	uint64_t best_d = UINT64_MAX;

	r->nr_pyips = 0;
	if (!r->python || cpu >= r->nr_pyq)
		return;
	q = &r->pyq[cpu];
	/*
	 * The BPF ring is read before the perf rings, but the program may have
	 * written since: the record of a sample read now is there once the
	 * sample is. Read again unless a record after this sample's is in.
	 */
	if (!q->n || pyq_at(q, q->n - 1)->time <= time + r->py_window) {
		fl_pidfilter__py_consume(r->kfilter);
		q = &r->pyq[cpu];
	}
	for (i = 0; i < q->n; i++) {
		const struct py_ent *e = pyq_at(q, i);
		uint64_t d = time_dist(e, time);

		if (e->time > time && d >= r->py_window)
			break;
		if (e->tid == tid && d < r->py_window && d < best_d) {
			best = i;
			best_d = d;
		}
	}
	if (best != SIZE_MAX) {
		const struct py_ent *e = pyq_at(q, best);

		memcpy(r->pyips, e->frames, e->nr * sizeof(e->frames[0]));
		r->nr_pyips = e->nr;
		pyq_pop(q, best + 1);
		return;
	}
	while (q->n && pyq_at(q, 0)->time <= time)
		pyq_pop(q, 1);
}

static void pyq_clear(struct ring_sampler *r, uint32_t cpu)
{
	if (cpu < r->nr_pyq)
		r->pyq[cpu].n = 0;
}

static void pyq_free(struct ring_sampler *r)
{
	for (size_t i = 0; i < r->nr_pyq; i++)
		free(r->pyq[i].ents);
	free(r->pyq);
	r->pyq = NULL;
	r->nr_pyq = 0;
}

static uint32_t keep_state(const struct ring_sampler *r, uint32_t pid)
{
	uint32_t v;

	return fl_u32map__get(&r->kept, pid, &v) ? v : KEEP_NO;
}

static bool is_kept(const struct ring_sampler *r, uint32_t pid)
{
	return keep_state(r, pid) != KEEP_NO;
}

static int keep_child(struct ring_sampler *r, uint32_t pid)
{
	return is_kept(r, pid) ? 0 : fl_u32map__put(&r->kept, pid, KEEP_CHILD);
}

/* A kept tgid, or a descendant of one through the fork records read so far. */
static bool is_kept_descendant(const struct ring_sampler *r, uint32_t pid)
{
	for (int i = 0; i < SR_MAX_ANCESTRY; i++) {
		if (is_kept(r, pid))
			return true;
		if (!fl_u32map__get(&r->parents, pid, &pid))
			return false;
	}
	return false;
}

/* Counters that describe the stacks that were kept. */
static void account_kept(struct ring_sampler *r, const struct fl_raw_stack *st, uint64_t count)
{
	if (st->kerr == -EFAULT)
		r->st.kstack_none += count;
	if (st->uerr == -EFAULT)
		r->st.ustack_none += count;
	if (st->nr_kips >= FL_MAX_STACK_DEPTH || st->nr_uips >= FL_MAX_STACK_DEPTH)
		r->st.truncated += count;
	if (st->nr_pyips)
		r->st.py_samples += count;
	/*
	 * DWARF outcomes are counted here, for the samples kept only: with
	 * -- CMD a sample is unwound before it is known whose it is (the
	 * kernel filter lets only the targets' through; without it, those of
	 * every process, which fail at once, unmapped).
	 */
	if (r->opts.dwarf && st->nr_uips) {
		uint64_t outer = st->uips[st->nr_uips - 1];

		if (outer == FL_UIP_TRUNCATED)
			r->st.unwind_truncated += count;
		else if (outer == FL_UIP_FAILED)
			r->st.unwind_failed += count;
		else
			r->st.unwind_complete += count;
	}
}

/*
 * DWARF mode: the PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER parts
 * after the callchain (at byte off of the record), unwound into r->uips.
 * A stack whose unwinding stopped early gets a marker as its outermost
 * frame. Returns 0, or -EBADMSG for a record that does not add up.
 */
static int dwarf_user_stack(struct ring_sampler *r, const struct perf_event_header *hdr, size_t off,
			    uint32_t pid, uint64_t time, size_t *nu)
{
	const unsigned char *p = (const unsigned char *)hdr, *end = p + hdr->size;
	size_t nregs = (size_t)__builtin_popcountll(fl_unwind__perf_regs_mask());
	uint64_t abi, size, dyn, perf_regs[64];
	struct fl_unwind_sample s = {
		.pid = pid,
		.time = time,
		.in_kernel = (hdr->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL,
	};
	enum fl_unwind_outcome out;
	size_t n;

	*nu = 0;
	p += off;
	if ((size_t)(end - p) < 8)
		return -EBADMSG;
	memcpy(&abi, p, 8);
	p += 8;
	if (abi) {
		if ((size_t)(end - p) < nregs * 8)
			return -EBADMSG;
		memcpy(perf_regs, p, nregs * 8);
		p += nregs * 8;
	}
	if ((size_t)(end - p) < 8)
		return -EBADMSG;
	memcpy(&size, p, 8);
	p += 8;
	if (size) {
		if ((size_t)(end - p) < size + 8)
			return -EBADMSG;
		memcpy(&dyn, p + size, 8);
		s.stack = p;
		s.stack_size = dyn < size ? dyn : size;
	}
	if (!abi || !r->opts.user || !r->opts.unwinder)
		return 0; /* a kernel thread, or user stacks not asked for */
	fl_unwind__regs_from_perf(perf_regs, s.regs);
	if (r->opts.left_at_exec &&
	    r->opts.left_at_exec(r->opts.era_ctx, pid, s.regs[FL_UNWIND_REG_IP], time))
		return 0; /* inside execve(): no user stack */
	/*
	 * Not a byte of the stack readable where the task entered the kernel:
	 * its memory is not the one its registers point into any more, as in
	 * execve() past its point of no return, before the exec's record.
	 */
	if (s.in_kernel && size && !s.stack_size)
		return 0;
	n = fl_unwinder__unwind(r->opts.unwinder, &s, r->uips, FL_MAX_STACK_DEPTH - 1, &out);
	if (out == FL_UNWIND_TRUNCATED)
		r->uips[n++] = FL_UIP_TRUNCATED;
	else if (out == FL_UNWIND_FAILED)
		r->uips[n++] = FL_UIP_FAILED;
	*nu = n;
	return 0;
}

static int on_sample(struct ring_sampler *r, const struct perf_event_header *hdr)
{
	const struct sample_rec *rec = (const void *)hdr;
	enum { CTX_OTHER, CTX_KERNEL, CTX_USER } ctx = CTX_OTHER;
	struct fl_raw_stack st = {0};
	size_t nk = 0, nu = 0;
	size_t off = sizeof(*rec) + (r->sample_cpu ? 8 : 0); /* the callchain's nr */
	const uint64_t *ips;
	uint64_t nr, cgroup = 0;
	uint32_t cpu = 0;
	bool pending = false, exiting;
	uint32_t tid;

	if (hdr->size < off + sizeof(nr))
		return 0;
	if (r->sample_cpu)
		memcpy(&cpu, (const char *)hdr + sizeof(*rec), sizeof(cpu));
	memcpy(&nr, (const char *)hdr + off, sizeof(nr));
	off += sizeof(nr);
	ips = (const uint64_t *)((const char *)hdr + off);
	if (nr > (hdr->size - off) / sizeof(uint64_t))
		return 0; /* a chain longer than its record: not one of ours */
	if (rec->time > r->known_until)
		return FL_PERFBUF_LATER; /* its mappings may sit unread in the tracker's rings */
	r->st.samples++;
	/* Every sample read of its CPU, kept or not: the records older than it go. */
	if (r->python)
		py_join(r, cpu, rec->tid, rec->time);
	/*
	 * PERF_SAMPLE_CGROUP is the last part asked for, and every part before
	 * it a whole number of words: the record's last word.
	 */
	if (r->want_cgroup) {
		if (hdr->size < off + (nr + 1) * sizeof(uint64_t))
			return 0;
		memcpy(&cgroup, (const char *)hdr + hdr->size - sizeof(cgroup), sizeof(cgroup));
		if (r->nr_cgroups &&
		    !fl_cgroups__under(r->opts.cgroup_tree, cgroup, r->cgroups, r->nr_cgroups)) {
			r->st.filtered++;
			return 0;
		}
	}

	/*
	 * pid -1: a task the kernel has no pid for any more, past the point
	 * of its exit where it was released (a thread, or a reaped process,
	 * on its last way out). Whose it was is not known: with targets,
	 * not theirs as far as anyone can tell; in a child namespace, maybe a
	 * task outside it; else its kernel stack is kept, as "[exiting]".
	 */
	exiting = rec->pid == UINT32_MAX;
	/*
	 * A released thread of a live process (tid -1) goes by the process:
	 * a name kept for tid -1 would be another process's next time.
	 */
	tid = rec->tid == UINT32_MAX ? rec->pid : rec->tid;
	if (exiting && r->filter) {
		r->st.filtered++;
		return 0;
	}
	if (exiting && r->child_ns) {
		r->st.other_ns++;
		return 0;
	}
	/* With targets, the idle task is just another process not asked for (as in the BPF program). */
	if (rec->pid == 0 && r->filter) {
		r->st.filtered++;
		return 0;
	}
	/* Not the idle task (the kernel leaves it out here): a task outside the namespace. */
	if (rec->pid == 0 && r->child_ns) {
		r->st.other_ns++;
		return 0;
	}
	if (rec->pid == 0) {
		if (!r->opts.idle) {
			r->st.idle++;
			return 0;
		}
	} else if (r->filter && !is_kept(r, rec->pid)) {
		if (!r->opts.follow_children) {
			r->st.filtered++;
			return 0;
		}
		pending = true;
	}

	if (r->opts.dwarf && !exiting) {
		int err = dwarf_user_stack(r, hdr, off + nr * sizeof(uint64_t), rec->pid, rec->time,
					   &nu);

		if (err)
			return 0; /* a malformed record: not one of ours */
	}

	/* Leaf first within each half; other contexts (hypervisor, guest) are not ours. */
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip = ips[i];

		if (ip >= PERF_CONTEXT_MAX) {
			if (ip == PERF_CONTEXT_KERNEL)
				ctx = CTX_KERNEL;
			else if (ip == PERF_CONTEXT_USER)
				ctx = CTX_USER;
			else
				ctx = CTX_OTHER;
			continue;
		}
		if (ctx == CTX_KERNEL && nk < FL_MAX_STACK_DEPTH)
			r->kips[nk++] = ip;
		else if (ctx == CTX_USER && nu < FL_MAX_STACK_DEPTH && !r->opts.dwarf && !exiting)
			r->uips[nu++] = ip;
	}

	/* No pid to key it by: the kernel's own, 0 (a process pid 0 never exits). */
	st.pid = exiting ? 0 : rec->pid;
	st.tid = r->opts.per_thread && !exiting ? tid : 0;
	st.cgroup_id = r->opts.per_cgroup ? cgroup : 0;
	/* Keyed by era: samples whose addresses mean other code are counted apart. */
	st.time = r->opts.era && !exiting ? r->opts.era(r->opts.era_ctx, rec->pid, rec->time) : 0;
	st.time_first = st.time;
	st.comm = exiting ? sr_exiting_comm : comm_of(r, rec->pid, tid, rec->time);
	if (r->opts.kernel) {
		st.kips = r->kips;
		st.nr_kips = nk;
		st.kerr = nk ? 0 : -EFAULT;
	} else {
		st.kerr = -ENOENT;
	}
	if (r->opts.user && !exiting) {
		st.uips = r->uips;
		st.nr_uips = nu;
		st.uerr = nu ? 0 : -EFAULT;
	} else {
		st.uerr = -ENOENT;
	}
	if (r->nr_pyips) {
		st.pyips = r->pyips;
		st.nr_pyips = r->nr_pyips;
	}

	if (pending)
		return fl_stackagg__add(r->pending, &st, 1);
	account_kept(r, &st, 1);
	return fl_stackagg__add(r->agg, &st, 1);
}

static int on_comm(struct ring_sampler *r, const struct perf_event_header *hdr)
{
	const struct fl_comm_rec *rec = (const void *)hdr;
	uint64_t time = 0;
	size_t room, tail;

	/* tid 0: a task outside flamed's pid namespace (the idle task is never renamed). */
	if (hdr->size <= sizeof(*rec) || rec->tid == 0)
		return 0;
	room = hdr->size - sizeof(*rec);
	/*
	 * sample_id_all: the record ends in its pid, tid and time, then
	 * (sample_cpu) its cpu; the name is padded before.
	 */
	tail = r->sample_cpu ? 8 : 0;
	if (room >= 8 + 16 + tail)
		memcpy(&time, (const char *)hdr + hdr->size - tail - sizeof(time), sizeof(time));
	return comm_rename(r, rec->tid, rec->comm, strnlen(rec->comm, room), time);
}

/*
 * Records of different CPUs are read one ring after the other, so a task's
 * COMM record may be read before its FORK record: a live name is never
 * overwritten by the inherited one, only a missing one or one left by an
 * exited task with the same tid.
 */
static int on_fork(struct ring_sampler *r, const struct perf_event_header *hdr)
{
	const struct fl_task_rec *rec = (const void *)hdr;
	const struct comm_ent *mine;
	const char *pc;
	int err;

	if (hdr->size < sizeof(*rec) || rec->tid == 0)
		return 0;
	/* A new task is named after its creator until it execs or renames itself. */
	mine = comm_ent(r, rec->tid);
	pc = comm_cached(r, rec->ptid);
	if (pc && (!mine || mine->exited)) {
		char c[FL_TASK_COMM_LEN];

		memcpy(c, pc, sizeof(c)); /* comm_set may move pc */
		err = comm_set(r, rec->tid, c, strnlen(c, sizeof(c)));
		if (err)
			return err;
	}
	if (rec->pid == rec->ppid || !r->filter || !r->opts.follow_children)
		return 0;
	err = fl_u32map__put(&r->parents, rec->pid, rec->ppid);
	if (err)
		return err;
	if (is_kept(r, rec->ppid))
		return keep_child(r, rec->pid);
	/*
	 * A pid learned as a descendant now names a process of someone else.
	 * (Should its parent be a descendant whose fork is not read yet, the
	 * pending samples are resolved through the parents map.)
	 */
	if (keep_state(r, rec->pid) == KEEP_CHILD)
		return fl_u32map__put(&r->kept, rec->pid, KEEP_NO);
	return 0;
}

static void on_exit_rec(struct ring_sampler *r, const struct perf_event_header *hdr)
{
	const struct fl_task_rec *rec = (const void *)hdr;
	struct comm_ent *e;

	if (hdr->size < sizeof(*rec))
		return;
	/* The name stays for the samples still unread; a new task may take the tid over. */
	e = comm_ent(r, rec->tid);
	/* Older than the name the tid bears (read ahead): the end of an earlier task with that tid. */
	if (e && !(rec->time && e->since && rec->time < e->since)) {
		e->exited = true;
		e->exit_poll = r->polls;
	}
}

static int on_record(const struct perf_event_header *hdr, void *ctx)
{
	struct ring_sampler *r = ctx;
	int err = 0;

	switch (hdr->type) {
	case PERF_RECORD_SAMPLE:
		err = on_sample(r, hdr);
		break;
	case PERF_RECORD_COMM:
		err = on_comm(r, hdr);
		break;
	case PERF_RECORD_FORK:
		err = on_fork(r, hdr);
		break;
	case PERF_RECORD_EXIT:
		on_exit_rec(r, hdr);
		break;
	case PERF_RECORD_LOST:
		if (hdr->size >= sizeof(struct fl_lost_rec))
			r->st.lost_records += ((const struct fl_lost_rec *)hdr)->lost;
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (hdr->size >= sizeof(struct fl_lost_samples_rec))
			r->st.lost_records += ((const struct fl_lost_samples_rec *)hdr)->lost;
		break;
	case PERF_RECORD_THROTTLE:
		r->st.throttled++;
		break;
	default:
		break;
	}
	return err;
}

/* Names only, up to where on_record() stops (a sample to be read at the next poll). */
static int on_peek(const struct perf_event_header *hdr, void *ctx)
{
	struct ring_sampler *r = ctx;
	const struct sample_rec *rec = (const void *)hdr;

	if (hdr->type == PERF_RECORD_COMM)
		return on_comm(r, hdr);
	if (hdr->type == PERF_RECORD_SAMPLE && hdr->size >= sizeof(*rec) &&
	    rec->time > r->known_until)
		return FL_PERFBUF_LATER;
	return 0;
}

/* ---- the kernel filter ---- */

/* Event i (open) gets the filter: a failure leaves it unfiltered in the kernel, never unsampled. */
static int kfilter_attach(struct ring_sampler *r, size_t i)
{
	int err = fl_pidfilter__attach(r->kfilter, fl_cpu_events__fd(r->events, i));

	if (err)
		fl_pr_debug("sampler_ring: cannot attach the kernel filter to CPU %d: %s\n",
			    fl_cpu_events__cpu(r->events, i), strerror(-err));
	return err;
}

/* Bytes of the Python frames' ring: a quarter second of the longest records of every CPU. */
static size_t py_ring_bytes(const struct ring_sampler *r)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t want =
		r->opts.freq * (uint64_t)(cpus > 0 ? cpus : 1) * sizeof(struct fl_filter_pyrec) / 4;
	size_t bytes = 256 << 10;

	while (bytes < want && bytes < (32u << 20))
		bytes <<= 1;
	return bytes;
}

/*
 * Loads the kernel filter with the targets pids; without any (python),
 * it keeps every sample until the first is added. With python it reads
 * the Python frames too. Returns 0 (r->kfilter set) or -errno.
 */
static int kfilter_load(struct ring_sampler *r, const int *pids, size_t n, bool python)
{
	struct fl_pidfilter_opts fo = {
		.sz = sizeof(fo),
		.pidns = &r->ns,
		.follow_children = r->opts.follow_children,
		.keep_all = !n,
		.python = python,
		.py_ring_bytes = python ? py_ring_bytes(r) : 0,
		.on_python = on_pyrec,
		.py_ctx = r,
	};
	struct fl_pidfilter *f = NULL;
	int err = fl_pidfilter__new(&fo, &f);

	for (size_t i = 0; !err && i < n; i++)
		err = fl_pidfilter__add(f, (uint32_t)pids[i]);
	if (err) {
		fl_pr_debug("sampler_ring: cannot load the kernel filter%s: %s\n",
			    python ? " with Python frames" : "", strerror(-err));
		fl_pidfilter__free(f);
		return err;
	}
	r->kfilter = f;
	return 0;
}

/*
 * The kernel filter loaded goes to every event. On failure the rings get
 * the samples it would have dropped, as they did before there was one,
 * and kfilter_err says why; attached nowhere, it goes, and the Python
 * frames with it.
 */
static void kfilter_attach_all(struct ring_sampler *r)
{
	size_t attached = 0;
	int err = 0, e;

	for (size_t i = 0; i < fl_cpu_events__nr(r->events); i++) {
		if (fl_cpu_events__fd(r->events, i) < 0)
			continue;
		e = kfilter_attach(r, i);
		if (e)
			err = e;
		else
			attached++;
	}
	if (!err)
		return;
	r->kfilter_err = err;
	/* Attached to some events, it stays: what it dropped there is counted. */
	if (!attached) {
		fl_pidfilter__free(r->kfilter);
		r->kfilter = NULL;
		r->python = false;
	}
}

/* ---- operations ---- */

static int ring_add_pid(struct fl_sampler *s, int pid)
{
	struct ring_sampler *r = to_ring(s);
	int err;

	if (pid <= 0)
		return -EINVAL;
	/* Known to the kernel first: it must never drop the samples of a process kept here. */
	if (r->kfilter) {
		err = fl_pidfilter__add(r->kfilter, (uint32_t)pid);
		if (err)
			return err;
	}
	err = fl_u32map__put(&r->kept, (uint32_t)pid, KEEP_ASKED);
	if (err)
		return err;
	if (!r->filter && !r->kfilter && !r->kfilter_err) {
		err = kfilter_load(r, &pid, 1, false);
		if (err)
			r->kfilter_err = err;
		else
			kfilter_attach_all(r);
	}
	r->filter = true;
	return 0;
}

static int ring_kernel_filter(const struct fl_sampler *s)
{
	const struct ring_sampler *r = to_ring_const(s);

	/* Loaded for the Python frames only, it keeps every sample. */
	if (!r->filter)
		return 0;
	if (r->kfilter_err)
		return r->kfilter_err;
	return r->kfilter ? 1 : 0;
}

static int ring_start(struct fl_sampler *s)
{
	return fl_cpu_events__ioctl(to_ring(s)->events, PERF_EVENT_IOC_ENABLE);
}

static int ring_stop(struct fl_sampler *s)
{
	return fl_cpu_events__ioctl(to_ring(s)->events, PERF_EVENT_IOC_DISABLE);
}

/* An event opened again: the kernel filter first, then sampling. */
static int refilter_event(void *ctx, size_t i)
{
	struct ring_sampler *r = ctx;
	int cpu = fl_cpu_events__cpu(r->events, i);

	if (r->kfilter)
		kfilter_attach(r, i); /* on failure, its samples are filtered here */
	/* What waits of the old event's samples never comes: its ring was read. */
	if (cpu >= 0)
		pyq_clear(r, (uint32_t)cpu);
	if (ioctl(fl_cpu_events__fd(r->events, i), PERF_EVENT_IOC_ENABLE, 0) < 0)
		return -errno;
	return 0;
}

/* Each event of the CPUs back from offline opened again (with a new ring), filtered and enabled. */
static int ring_revive(struct fl_sampler *s, int *cpus, size_t max)
{
	struct ring_sampler *r = to_ring(s);

	return fl_cpu_events__revive(r->events, NULL, refilter_event, r, cpus, max);
}

/* The perf rings, then (python) the Python frames' ring. */
static size_t ring_nr_fds(const struct fl_sampler *s)
{
	const struct ring_sampler *r = to_ring_const(s);

	return fl_cpu_events__nr(r->events) + (r->python ? 1 : 0);
}

static int ring_fd(const struct fl_sampler *s, size_t i)
{
	const struct ring_sampler *r = to_ring_const(s);

	if (r->python && i == fl_cpu_events__nr(r->events))
		return fl_pidfilter__py_fd(r->kfilter);
	return fl_cpu_events__fd(r->events, i);
}

static int resolve_one(const struct fl_raw_stack *st, void *ctx)
{
	struct ring_sampler *r = ctx;
	int err;

	if (!is_kept_descendant(r, st->pid)) {
		r->st.filtered += st->count;
		return 0;
	}
	/* Its later samples go straight to the kept ones. */
	err = keep_child(r, st->pid);
	if (!err)
		err = fl_stackagg__add(r->agg, st, st->count);
	if (err)
		return err;
	account_kept(r, st, st->count);
	return 0;
}

/*
 * Samples of tgids unknown when read: descendants of kept ones join them,
 * the rest are filtered. *pa is left empty.
 */
static int resolve_pending(struct ring_sampler *r, struct fl_stackagg **pa)
{
	struct fl_stackagg *fresh = NULL;
	int err;

	if (!fl_stackagg__nr_stacks(*pa))
		return 0;
	err = fl_stackagg__new(&fresh);
	if (err)
		return err;
	fl_pr_debug("sampler_ring: resolving %llu pending samples\n",
		    (unsigned long long)fl_stackagg__total(*pa));
	/* Emptied even on failure (only -ENOMEM): a later drain must not count a stack twice. */
	err = fl_stackagg__for_each(*pa, resolve_one, r);
	fl_stackagg__free(*pa);
	*pa = fresh;
	return err;
}

static int ring_poll(struct fl_sampler *s)
{
	struct ring_sampler *r = to_ring(s);
	struct fl_stackagg *tmp;
	int ret, err;

	r->polls++;
	r->known_until = r->opts.known_until ? r->opts.known_until(r->opts.era_ctx) : UINT64_MAX;
	/*
	 * The rings are read one after the other, and a thread renamed (an exec)
	 * on one CPU may be sampled on another whose ring comes first: every
	 * ring's names are applied before any sample is named.
	 */
	err = fl_cpu_events__peek(r->events, on_peek, r);
	if (err)
		return err;
	/*
	 * The Python frames first: the program writes a sample's before the
	 * kernel writes the sample, so each sample read finds its own (or
	 * reads them again: py_join()).
	 */
	if (r->python)
		fl_pidfilter__py_consume(r->kfilter);
	ret = fl_cpu_events__consume(r->events, on_record, r);
	/* A corrupt ring was reset and the others read: the pending samples can still be decided. */
	if (ret < 0 && ret != -EBADMSG)
		return ret;
	/* Every ring was read once more since the previous poll: its pending samples are decided. */
	err = resolve_pending(r, &r->pending_prev);
	if (err)
		return err;
	tmp = r->pending_prev;
	r->pending_prev = r->pending;
	r->pending = tmp;
	return ret;
}

static int ring_drain(struct fl_sampler *s, fl_raw_stack_fn fn, void *ctx)
{
	struct ring_sampler *r = to_ring(s);
	int err;

	/* The caller read every ring after stop: nothing pending can learn more. */
	err = resolve_pending(r, &r->pending_prev);
	if (!err)
		err = resolve_pending(r, &r->pending);
	if (err)
		return err;
	return fl_stackagg__for_each(r->agg, fn, ctx);
}

static int ring_take(struct fl_sampler *s, const uint32_t *pids, size_t n, fl_raw_stack_fn fn,
		     void *ctx)
{
	struct ring_sampler *r = to_ring(s);
	uint64_t before = fl_stackagg__examined(r->agg);
	int err = fl_stackagg__take(r->agg, pids, n, fn, ctx);

	r->take_examined += fl_stackagg__examined(r->agg) - before;
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		fl_u32map__del(&r->kept, pids[i]);
		fl_u32map__del(&r->parents, pids[i]);
		/* A new process with one of these pids is not kept for the old one's sake. */
		if (r->kfilter)
			fl_pidfilter__del(r->kfilter, pids[i]);
	}
	return comms_prune(r);
}

static int ring_snapshot(struct fl_sampler *s, fl_raw_stack_fn fn, void *ctx)
{
	struct ring_sampler *r = to_ring(s);
	struct fl_stackagg *fresh;
	int err = fl_stackagg__new(&fresh);

	if (err)
		return err;
	err = fl_stackagg__for_each(r->agg, fn, ctx);
	/* Emptied even on failure: no stack is given twice. */
	fl_stackagg__free(r->agg);
	r->agg = fresh;
	return err;
}

static int ring_stats(struct fl_sampler *s, struct fl_sampler_stats *st)
{
	struct ring_sampler *r = to_ring(s);
	uint64_t dropped, py_lost;

	*st = r->st;
	st->take_examined = r->take_examined;
	st->py_lost = r->py_dropped;
	if (r->python && fl_pidfilter__py_lost(r->kfilter, &py_lost) == 0)
		st->py_lost += py_lost;
	/*
	 * The samples the kernel dropped were taken, and not asked for. (A
	 * failed read leaves them out: the accounting line then says so.)
	 */
	if (r->kfilter && fl_pidfilter__dropped(r->kfilter, &dropped) == 0) {
		st->samples += dropped;
		st->filtered += dropped;
		st->filtered_kernel = dropped;
	}
	fl_cpu_events__hotplug(r->events, &st->hotplug);
	return 0;
}

static void ring_free(struct fl_sampler *s)
{
	struct ring_sampler *r = to_ring(s);

	fl_cpu_events__free(r->events);
	fl_pidfilter__free(r->kfilter);
	pyq_free(r);
	fl_stackagg__free(r->agg);
	fl_stackagg__free(r->pending);
	fl_stackagg__free(r->pending_prev);
	fl_u32map__fini(&r->kept);
	fl_u32map__fini(&r->parents);
	fl_u32map__fini(&r->comm_idx);
	free(r->comms);
	free(r);
}

static int ring_set_python(struct fl_sampler *s, uint32_t pid, const struct fl_py_proc *p)
{
	struct ring_sampler *r = to_ring(s);

	return r->python ? fl_pidfilter__set_python(r->kfilter, pid, p) : -EOPNOTSUPP;
}

static int ring_py_code(struct fl_sampler *s, uint32_t pid, uint64_t code, struct fl_py_code *out)
{
	struct ring_sampler *r = to_ring(s);

	return r->python ? fl_pidfilter__py_code(r->kfilter, pid, code, out) : -EOPNOTSUPP;
}

static bool ring_python(const struct fl_sampler *s)
{
	return to_ring_const(s)->python;
}

static const struct fl_sampler_ops ring_ops = {
	.python = ring_python,
	.set_python = ring_set_python,
	.py_code = ring_py_code,
	.add_pid = ring_add_pid,
	.kernel_filter = ring_kernel_filter,
	.start = ring_start,
	.stop = ring_stop,
	.nr_fds = ring_nr_fds,
	.fd = ring_fd,
	.poll = ring_poll,
	.revive = ring_revive,
	.drain = ring_drain,
	.peek = ring_drain, /* it counts nothing, and gives the same stacks again */
	.take = ring_take,
	.snapshot = ring_snapshot,
	.stats = ring_stats,
	.free = ring_free,
};

/* Samples with callchains, and the names and parentage in the same ring. */
static struct perf_event_attr ring_attr(const struct fl_sampler_opts *opts, bool child_ns,
					bool want_cgroup, bool want_cpu, size_t ring_bytes)
{
	return (struct perf_event_attr){
		.size = sizeof(struct perf_event_attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = opts->freq,
		/* The callchain's first kernel or user entry is the sampled ip: no PERF_SAMPLE_IP. */
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
			       (opts->dwarf ? PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER : 0) |
			       (want_cpu ? PERF_SAMPLE_CPU : 0) |
			       (want_cgroup ? PERF_SAMPLE_CGROUP : 0),
		/* The tracker's clock: a sample's time finds the mappings of its moment. */
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
		/*
		 * In a child pid namespace the kernel gives the idle task and the
		 * tasks outside the same pid, 0: only the idle task can be left out.
		 */
		.exclude_idle = child_ns && !opts->idle,
		.exclude_callchain_kernel = !opts->kernel,
		/* DWARF: the user part is unwound from the registers and the stack copy. */
		.exclude_callchain_user = !opts->user || opts->dwarf,
		.sample_regs_user = opts->dwarf ? fl_unwind__perf_regs_mask() : 0,
		.sample_stack_user = opts->dwarf ? opts->stack_size : 0,
		.comm = 1,
		.task = 1,
		/* Names, forks and exits carry their time too (comm_rename()). */
		.sample_id_all = 1,
		.disabled = 1,
		.watermark = 1,
		.wakeup_watermark = (uint32_t)(ring_bytes / 4),
	};
}

/*
 * Python: a queue per CPU number an event has, and the window of a join:
 * half the sampling period (cpu-clock samples a CPU at a fixed period,
 * 1/freq), at most SR_PY_WINDOW_NS.
 */
static int py_queues(struct ring_sampler *r)
{
	uint64_t half = 500000000ULL / r->opts.freq;
	int max = -1;

	for (size_t i = 0; i < fl_cpu_events__nr(r->events); i++) {
		int cpu = fl_cpu_events__cpu(r->events, i);

		if (cpu > max)
			max = cpu;
	}
	if (max < 0)
		return -ENODEV;
	r->pyq = calloc((size_t)max + 1, sizeof(*r->pyq));
	if (!r->pyq)
		return -ENOMEM;
	r->nr_pyq = (size_t)max + 1;
	r->py_window = half < SR_PY_WINDOW_NS ? half : SR_PY_WINDOW_NS;
	r->python = true;
	return 0;
}

int fl_sampler_ring__new(const struct fl_sampler_opts *opts, struct fl_sampler **ret)
{
	struct perf_event_attr attr;
	struct ring_sampler *r;
	long page = sysconf(_SC_PAGESIZE);
	size_t ring_pages;
	int err;

	if (!opts || !ret || page <= 0 || opts->sz < offsetof(struct fl_sampler_opts, ring_pages))
		return -EINVAL;
	if (opts->nr_pids && !opts->pids)
		return -EINVAL;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->base.ops = &ring_ops;
	r->base.backend = FL_SAMPLER_RING;
	memcpy(&r->opts, opts, opts->sz < sizeof(r->opts) ? opts->sz : sizeof(r->opts));
	r->opts.pids = NULL;
	r->opts.nr_pids = 0;
	if (r->opts.dwarf && (!r->opts.stack_size || r->opts.stack_size > 65528 ||
			      r->opts.stack_size % 8 || !fl_unwind__perf_regs_mask())) {
		err = -EINVAL;
		goto out_free;
	}
	ring_pages = r->opts.ring_pages ? r->opts.ring_pages
		     : r->opts.dwarf	? SR_DEFAULT_DWARF_RING_PAGES
					: SR_DEFAULT_RING_PAGES;
	if (ring_pages & (ring_pages - 1) || ring_pages > (1U << 20) || !r->opts.freq) {
		err = -EINVAL;
		goto out_free;
	}
	r->opts.ring_pages = ring_pages;
	/* The kernel gives pids of the namespace of the events' opener: flamed's. */
	err = sampler_pidns(&r->opts, &r->ns);
	if (err)
		goto out_free;
	r->child_ns = !r->ns.initial;
	if (r->child_ns && r->opts.idle) {
		err = -EOPNOTSUPP;
		goto out_free;
	}
	if (opts->sz >= sizeof(*opts)) {
		if (opts->nr_cgroups > FL_CGROUP_MAX_TARGETS ||
		    (opts->nr_cgroups && (!opts->cgroups || !opts->cgroup_tree))) {
			err = -EINVAL;
			goto out_free;
		}
		r->nr_cgroups = opts->nr_cgroups;
		if (r->nr_cgroups)
			memcpy(r->cgroups, opts->cgroups, r->nr_cgroups * sizeof(*r->cgroups));
		r->want_cgroup = opts->per_cgroup || opts->nr_cgroups;
	}
	r->opts.cgroups = NULL; /* copied: the caller's array may go */

	for (size_t i = 0; i < opts->nr_pids; i++) {
		if (opts->pids[i] <= 0) {
			err = -EINVAL;
			goto out_free;
		}
		err = fl_u32map__put(&r->kept, (uint32_t)opts->pids[i], KEEP_ASKED);
		if (err)
			goto out_free;
		r->filter = true;
	}

	err = fl_stackagg__new(&r->agg);
	if (!err)
		err = fl_stackagg__new(&r->pending);
	if (!err)
		err = fl_stackagg__new(&r->pending_prev);
	if (err)
		goto out_free;

	/*
	 * The kernel filter before the events: loaded with the Python frames,
	 * the samples carry their CPU to be joined with them. It goes to the
	 * events once they are open. Python frames the kernel cannot read are
	 * none (fl_sampler__set_python() says so): no failure.
	 */
	if (r->opts.python && r->opts.user)
		r->sample_cpu = !kfilter_load(r, opts->pids, opts->nr_pids, true);
	if (r->filter && !r->kfilter) {
		err = kfilter_load(r, opts->pids, opts->nr_pids, false);
		if (err)
			r->kfilter_err = err;
	}
	attr = ring_attr(&r->opts, r->child_ns, r->want_cgroup, r->sample_cpu,
			 ring_pages * (size_t)page);
	err = fl_cpu_events__open(&attr, ring_pages, &r->events);
	if (err)
		goto out_free;
	if (r->sample_cpu) {
		err = py_queues(r);
		if (err)
			goto out_free;
	}
	if (r->kfilter)
		kfilter_attach_all(r);
	*ret = &r->base;
	return 0;

out_free:
	ring_free(&r->base);
	return err;
}
