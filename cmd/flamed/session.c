// SPDX-License-Identifier: GPL-2.0-or-later
/* A sampling session: what flamed record and flamed daemon share (see session.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "flamed.h"
#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/formats/pprof.h"
#include "flamed/formats/svg.h"
#include "flamed/profile/flametree.h"
#include "flamed/sampling/perfbuf.h"
#include "flamed/profile/profile.h"
#include "flamed/symbols/debuginfod.h"
#include "flamed/symbols/pyprocs.h"
#include "flamed/symbols/symbolizer.h"
#include "flamed/unwinding/unwind.h"
#include "session.h"

int epoll_add(int ep, int fd, enum tag tag, uint32_t idx)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)tag << 32 | idx};

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int timer_arm(int fd, double first, double interval)
{
	struct itimerspec its = {};

	its.it_value.tv_sec = (time_t)first;
	its.it_value.tv_nsec = (long)((first - (double)(time_t)first) * 1e9);
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;
	its.it_interval.tv_sec = (time_t)interval;
	its.it_interval.tv_nsec = (long)((interval - (double)(time_t)interval) * 1e9);
	return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int read_proc_u64(const char *path, uint64_t *val)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	unsigned long long v;

	if (!f)
		return -errno;
	if (fscanf(f, "%llu", &v) != 1)
		return -EINVAL;
	*val = v;
	return 0;
}

int read_proc_int(const char *path, int *val)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	if (fscanf(f, "%d", val) != 1)
		return -EINVAL;
	return 0;
}

int session_check_freq(uint64_t freq)
{
	uint64_t max = 0;

	if (freq == 0) {
		msg("frequency 0 is out of range: use -F 1 or more (at most "
		    "kernel.perf_event_max_sample_rate)");
		return -EINVAL;
	}
	if (read_proc_u64("/proc/sys/kernel/perf_event_max_sample_rate", &max) == 0 && freq > max) {
		msg("frequency %llu is above kernel.perf_event_max_sample_rate (%llu): use -F %llu "
		    "or less, or raise the sysctl",
		    (unsigned long long)freq, (unsigned long long)max, (unsigned long long)max);
		return -EINVAL;
	}
	return 0;
}

void permission_hint(const char *what, int err)
{
	int paranoid = 0;

	if (read_proc_int("/proc/sys/kernel/perf_event_paranoid", &paranoid) < 0)
		paranoid = 2;
	if (may_perf()) {
		/* The kernel would let us: something in front of it did not. */
		msg("cannot open %s: %s, although flamed has CAP_PERFMON%s: %s refuses "
		    "perf_event_open or bpf (a container: docker run --cap-add PERFMON --cap-add "
		    "BPF "
		    "with a seccomp profile that allows both, or --privileged; a systemd unit: "
		    "SystemCallFilter=)",
		    what, strerror(-err), geteuid() == 0 ? " (root)" : "",
		    seccomp_filtered() ? "the seccomp filter flamed runs under likely"
				       : "a seccomp filter or a security module (container policy) "
					 "likely");
	} else if (geteuid() == 0) {
		msg("cannot open %s: %s: flamed runs as root but without CAP_PERFMON or "
		    "CAP_SYS_ADMIN (a container?): grant them (docker run --cap-add PERFMON "
		    "--cap-add BPF), or lower kernel.perf_event_paranoid, now %d, to -1 for -a or "
		    "1 for -p",
		    what, strerror(-err), paranoid);
	} else {
		msg("cannot open %s: %s (run as root, or grant CAP_PERFMON and CAP_BPF, or lower "
		    "kernel.perf_event_paranoid, now %d, to -1 for -a or 1 for -p)",
		    what, strerror(-err), paranoid);
	}
}

/*
 * Without root's powers over other users' processes, their frames cannot be
 * named: said at the start, with the capabilities that would do it, rather
 * than leaving a profile of [unknown] frames to explain itself.
 */
static void note_missing_caps(const struct session_opts *o)
{
	bool others = !o->nr_pids; /* -a; with -p, only if a target is someone else's */

	for (size_t i = 0; i < o->nr_pids && !others; i++) {
		char path[32];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%d", o->pids[i]);
		others = !stat(path, &st) && st.st_uid != geteuid();
	}
	if (others && !have_cap(CAP_SYS_PTRACE))
		msg("warning: without CAP_SYS_PTRACE the mappings of other users' processes "
		    "cannot be read: their frames stay unnamed (run as root, or grant "
		    "cap_sys_ptrace and cap_dac_read_search too)");
}

bool is_permission_error(int err)
{
	return err == -EACCES || err == -EPERM;
}

/* Fds a session needs at least: events and rings per CPU, BPF, the loop, files being read. */
static unsigned long nofile_needed(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_CONF);

	/* 16 of them: kernel-dwarf's maps, programs, table thread and timer. */
	return 4ul * (unsigned long)(cpus > 0 ? cpus : 1) + 112;
}

int check_nofile(void)
{
	struct rlimit rl;
	unsigned long need = nofile_needed();

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		/*
		 * Short of fds, every open fails somewhere else: BPF, symbols,
		 * kallsyms. A profile quietly missing those is worse than none.
		 */
		msg("RLIMIT_NOFILE is %llu (hard limit %llu) and flamed needs at least %lu here "
		    "(%ld CPUs): raise it, e.g. ulimit -n %lu, or LimitNOFILE= for a service",
		    (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max, need,
		    sysconf(_SC_NPROCESSORS_CONF), need);
		return -EMFILE;
	}
	return 0;
}

/* One line on why opening what failed: the ways out of a refusal, else the error. */
static void open_failed(const char *what, int err)
{
	struct rlimit rl;

	if (is_permission_error(err)) {
		permission_hint(what, err);
	} else if ((err == -EMFILE || err == -ENFILE) && !getrlimit(RLIMIT_NOFILE, &rl)) {
		msg("cannot open %s: too many open files (RLIMIT_NOFILE is %llu; raise it, e.g. "
		    "ulimit -n %lu)",
		    what, (unsigned long long)rl.rlim_cur, 2 * nofile_needed());
	} else {
		msg("cannot open %s: %s", what, strerror(-err));
	}
}

int session_check_pidns(struct fl_pidns *ns)
{
	int proc_pid = 0, err = fl_pidns__self(ns);

	if (err) {
		msg("cannot read flamed's pid namespace from /proc/self/ns/pid: %s (mount /proc)",
		    strerror(-err));
		return err;
	}
	err = fl_pidns__check_proc("/proc", getpid(), &proc_pid);
	if (err == -EXDEV)
		msg("/proc is not of flamed's pid namespace (it calls flamed %d, flamed is %d): "
		    "mount a /proc of that namespace, e.g. unshare --pid --fork --mount-proc",
		    proc_pid, (int)getpid());
	else if (err)
		msg("cannot read /proc/self: %s (mount a /proc of flamed's pid namespace, e.g. "
		    "unshare --pid --fork --mount-proc)",
		    strerror(-err));
	return err;
}

void session_report_other_ns(uint64_t n)
{
	msg("%llu samples of processes outside flamed's pid namespace left out: flamed cannot "
	    "name them (run it in the host's pid namespace to profile them, e.g. docker run "
	    "--pid=host, or hostPID: true in a Kubernetes pod)",
	    (unsigned long long)n);
}

/* The era of a sample, from the tracker (set up after the sampler, before sampling starts). */
static uint64_t era_of(void *ctx, uint32_t pid, uint64_t time)
{
	const struct session *s = ctx;

	return s->tracker ? fl_tracker__era(s->tracker, pid, time) : 0;
}

/*
 * A process with JIT code: noted only. Its perf map is opened (not read)
 * at the next event once sampling runs, and read only if its JIT code has
 * samples: the start-up scan, before sampling starts, must stay quick.
 */
static void on_jit(void *ctx, uint32_t pid)
{
	struct session *s = ctx;

	if (s->symbolizer && fl_symbolizer__jit_process(s->symbolizer, pid))
		s->err = -ENOMEM;
}

static void on_exec(void *ctx, uint32_t pid, const char *comm)
{
	struct session *s = ctx;

	s->o.on_exec(s->o.on_exec_ctx, pid, comm);
}

static bool left_at_exec(void *ctx, uint32_t pid, uint64_t ip, uint64_t time)
{
	const struct session *s = ctx;

	return s->tracker && fl_tracker__left_at_exec(s->tracker, pid, ip, time);
}

/* Samples after this time wait for the tracker's next read (the tracker is read first). */
static uint64_t known_until(void *ctx)
{
	const struct session *s = ctx;

	return s->tracker ? fl_tracker__known_until(s->tracker) : UINT64_MAX;
}

/* The unwinder's view of the mappings: the tracker's at the sample's time. */
static const struct fl_tmap *find_map(void *ctx, uint32_t pid, uint64_t addr, uint64_t time)
{
	const struct session *s = ctx;

	return s->tracker ? fl_tracker__find_at(s->tracker, pid, addr, time) : NULL;
}

static int open_sampler(struct session *s)
{
	const struct session_opts *o = &s->o;
	struct fl_sampler_opts so = {
		.sz = sizeof(so),
		.freq = o->freq,
		.pids = o->pids,
		.nr_pids = o->nr_pids,
		.follow_children = o->follow_children,
		.per_thread = o->per_thread,
		.idle = o->idle,
		.kernel = o->kernel,
		.user = o->user,
		.stack_storage_size = o->stack_storage_size,
		.max_stacks = o->max_stacks,
		.dwarf = o->dwarf,
		.stack_size = o->stack_size,
		.unwinder = s->unwinder,
		.era = era_of,
		.left_at_exec = left_at_exec,
		.known_until = known_until,
		.era_ctx = s,
		.snapshots = o->snapshots,
		.pidns = &s->pidns,
		.kdwarf = o->kdwarf,
		/* The tests' way to meet a kernel older than 5.17 (record_kernel_dwarf.sh). */
		.pretend_no_bpf_loop = getenv("FLAMED_PRETEND_NO_BPF_LOOP") != NULL,
		.max_table_bytes = o->max_table_bytes,
		.per_cgroup = o->per_cgroup,
		.cgroups = s->cg_targets,
		.nr_cgroups = o->nr_cgroups,
		.cgroup_tree = s->cgroups,
		.python = o->python && o->user,
	};
	int err, bpf_err = 0, kfilter;

	if (o->dwarf) {
		/* Stack copies are unwound in user space: the ring buffer carries them. */
	} else if (o->no_bpf) {
		if (!o->quiet)
			msg("--no-bpf: counting stacks from the perf ring buffer");
	} else {
		bpf_err = fl_sampler__new(FL_SAMPLER_BPF, &so, &s->sampler);
		if (bpf_err && so.python) {
			/* Python frames are a part the kernel may refuse (CO-RE on task_struct): without them then. */
			s->python_failed = bpf_err;
			so.python = false;
			bpf_err = fl_sampler__new(FL_SAMPLER_BPF, &so, &s->sampler);
			if (!bpf_err)
				msg("cannot load the Python frame reader (%s): Python processes show "
				    "the interpreter's native frames",
				    strerror(-s->python_failed));
		}
		if (bpf_err && so.kdwarf && o->user) {
			/*
			 * The walker needs more of the kernel than counting stacks
			 * does (bpf_loop, BTF, map-in-map): frame pointers then, and
			 * say so, once, in the summary and here.
			 */
			s->kdwarf_failed = bpf_err;
			so.kdwarf = false;
			bpf_err = fl_sampler__new(FL_SAMPLER_BPF, &so, &s->sampler);
			if (!bpf_err)
				msg("cannot load the in-kernel unwinder (%s): user stacks by frame "
				    "pointers instead (--call-graph fp); it needs Linux 6.1 or "
				    "later "
				    "with BTF",
				    strerror(-s->kdwarf_failed));
		}
		if (!bpf_err)
			return 0;
	}
	/*
	 * Any BPF failure, a refused bpf(2) included (CAP_PERFMON without
	 * CAP_BPF, a seccomp filter, a kernel without BPF), leaves the ring
	 * buffer. Only when that fails too is it the user's problem, and then
	 * the ring buffer's error is the one that says what to do.
	 */
	if (o->idle && !s->pidns.initial) {
		msg("cannot keep idle samples with the perf ring buffer in a child pid namespace: "
		    "the kernel gives the idle task and the processes outside it the same pid, 0 "
		    "(drop --idle, use the BPF backend%s%s%s, or run flamed in the host's pid "
		    "namespace)",
		    bpf_err ? " (unavailable here: " : "", bpf_err ? strerror(-bpf_err) : "",
		    bpf_err ? ")" : "");
		return -EOPNOTSUPP;
	}
	err = fl_sampler__new(FL_SAMPLER_RING, &so, &s->sampler);
	if (err == -EINVAL && (o->per_cgroup || o->nr_cgroups)) {
		msg("the kernel refuses the cgroup of samples (PERF_SAMPLE_CGROUP, Linux 5.7 and "
		    "later) that --per-cgroup and --cgroup need with the perf ring buffer%s%s%s",
		    bpf_err ? " (BPF unavailable: " : "", bpf_err ? strerror(-bpf_err) : "",
		    bpf_err ? ")" : "");
		return err;
	}
	if (err) {
		open_failed("perf events", err);
		return err;
	}
	/* Without its filter in the kernel, the rings carry every process's samples: said once. */
	kfilter = fl_sampler__kernel_filter(s->sampler);
	if (bpf_err)
		msg("BPF unavailable (%s): counting stacks from the perf ring buffer instead%s",
		    strerror(-bpf_err),
		    kfilter < 0 ? ", and dropping other processes' samples only once read from it"
				: "");
	else if (kfilter < 0)
		msg("cannot filter samples in the kernel (%s): every process's samples go through "
		    "the perf ring buffer to be dropped by flamed (more of its CPU, and records "
		    "lost sooner on a busy machine)",
		    strerror(-kfilter));
	return 0;
}

static const char *cgroup_name(void *ctx, uint64_t id)
{
	return fl_cgroups__name(ctx, id);
}

int session_resolve_cgroups(const char *const *paths, size_t n, struct fl_cgroup_target *t)
{
	const char *root;
	int err;

	if (n > FL_CGROUP_MAX_TARGETS) {
		msg("too many cgroups to sample: %zu (at most %d)", n, FL_CGROUP_MAX_TARGETS);
		return -E2BIG;
	}
	if (!n)
		return 0;
	if (fl_cgroup__root(&root)) {
		msg("cannot sample by cgroup: no cgroup v2 file system at /sys/fs/cgroup or "
		    "/sys/fs/cgroup/unified (mount one there)");
		return -ENOENT;
	}
	for (size_t i = 0; i < n; i++) {
		err = fl_cgroup__resolve(root, paths[i], &t[i]);
		switch (err) {
		case 0:
			continue;
		case -ENOENT:
			msg("no cgroup '%s' under %s (give its path there, e.g. "
			    "system.slice/nginx.service, as /proc/PID/cgroup shows it)",
			    paths[i], root);
			break;
		case -ENOTDIR:
			msg("cgroup '%s': not a cgroup directory under %s", paths[i], root);
			break;
		case -EINVAL:
			msg("cgroup '%s': give a path without '..', at most %d levels deep",
			    paths[i], FL_CGROUP_MAX_DEPTH);
			break;
		case -EXDEV:
			msg("cgroup '%s': not in the cgroup v2 hierarchy, which is mounted at %s",
			    paths[i], root);
			break;
		default:
			msg("cannot open cgroup '%s' under %s: %s", paths[i], root, strerror(-err));
			break;
		}
		return err;
	}
	return 0;
}

/* The cgroup tree, for per_cgroup's names and the ring backend's --cgroup filter. */
static int open_cgroups(struct session *s)
{
	struct fl_cgroups_opts co = {.sz = sizeof(co)};
	int err;

	if (!s->o.per_cgroup && !s->o.nr_cgroups)
		return 0;
	err = session_resolve_cgroups(s->o.cgroups, s->o.nr_cgroups, s->cg_targets);
	if (err)
		return err;
	err = fl_cgroups__new(&co, &s->cgroups);
	if (err == -ENOENT)
		msg("cannot attribute samples to services: no cgroup v2 file system at "
		    "/sys/fs/cgroup or /sys/fs/cgroup/unified (mount one there)");
	else if (err)
		msg("cannot read the cgroup tree: %s", strerror(-err));
	return err;
}

static int py_code(void *ctx, uint32_t pid, uint64_t code, struct fl_py_code *out)
{
	struct session *s = ctx;

	return fl_sampler__py_code(s->sampler, pid, code, out);
}

static int new_fold(struct session *s, struct fl_profile *p, struct fl_pprof *pp,
		    struct fl_fold **ret)
{
	struct fl_fold_opts fo = {.sz = sizeof(fo),
				  .symbolizer = s->symbolizer,
				  .tracker = s->tracker,
				  .profile = p,
				  .per_process = s->o.per_process,
				  .per_thread = s->o.per_thread,
				  .demangle = !s->o.no_demangle,
				  .srclines = s->o.srcline,
				  .pprof = pp,
				  .per_cgroup = s->o.per_cgroup,
				  .cgroup_name = cgroup_name,
				  .cgroup_ctx = s->cgroups,
				  .py_code = py_code,
				  .py_ctx = s};

	return fl_fold__new(&fo, ret);
}

/* The pprof profile the samples also go to, with o.pprof; else *ret is NULL. */
static int new_pprof(struct session *s, struct fl_pprof **ret)
{
	struct fl_pprof_opts po = {.sz = sizeof(po),
				   .period_ns = s->o.freq ? (int64_t)(1000000000ull / s->o.freq) : 0};

	*ret = NULL;
	return s->o.pprof ? fl_pprof__new(&po, ret) : 0;
}

int session_open(struct session *s, const struct session_opts *o)
{
	int err;

	s->o = *o;
	s->ep = -1;
	s->budget = (struct fl_budget){.max = o->max_cache_bytes ?: FL_SYM_DEFAULT_CACHE};
	err = session_check_pidns(&s->pidns);
	if (err)
		return err;
	/* kernel-dwarf too: samples met before their tables were loaded come as stack copies. */
	if (o->dwarf || (o->kdwarf && o->user && !o->no_bpf)) {
		struct fl_unwind_opts uo = {
			.sz = sizeof(uo), .find_map = find_map, .ctx = s, .budget = &s->budget};

		err = fl_unwinder__new(&uo, &s->unwinder);
		if (err) {
			msg("cannot set up DWARF unwinding: %s", strerror(-err));
			return err;
		}
	}
	err = open_cgroups(s);
	if (err)
		return err;
	err = open_sampler(s);
	if (err)
		return err;

	/* A BPF program reads Python frames (loaded with them): processes are told to it. */
	bool python = o->python && o->user && fl_sampler__python(s->sampler);
	struct fl_tracker_opts to = {.sz = sizeof(to),
				     .pids = o->pids,
				     .nr_pids = o->nr_pids,
				     .hold_files = true,
				     .on_jit = on_jit,
				     .on_exec = o->on_exec ? on_exec : NULL,
				     .max_processes = o->max_processes,
				     .child_pidns = !s->pidns.initial,
				     .track_changes = fl_sampler__kdwarf(s->sampler) || python,
				     .ctx = s};
	err = fl_tracker__new(&to, &s->tracker);
	if (err) {
		open_failed("the process-tracking perf events", err);
		return err;
	}
	if (python) {
		err = fl_pyprocs__new(s->tracker, &s->pyprocs);
		if (err)
			return err;
	}

	if (o->debuginfod) {
		struct fl_debuginfod_opts dgo = {.sz = sizeof(dgo),
						 .urls = o->debuginfod_urls,
						 .max_files = o->debuginfod_files,
						 .max_bytes = o->debuginfod_bytes,
						 .max_seconds = o->debuginfod_seconds};

		err = fl_debuginfod__new(&dgo, &s->debuginfod);
		if (err == -ELIBACC) {
			msg("cannot fetch debug info from debuginfod: cannot load %s",
			    fl_debuginfod__lib_error());
			return err;
		}
		if (err && err != -ENOENT) {
			msg("cannot start fetching debug info from debuginfod: %s", strerror(-err));
			return err;
		}
	}

	/* Without a working BPF sampler, kernel names come from kallsyms too. */
	struct fl_symbolizer_opts syo = {.sz = sizeof(syo),
					 .debuginfod = s->debuginfod,
					 .tracker = s->tracker,
					 .no_kernel = !o->kernel,
					 .inlines = !o->no_inline,
					 .srclines = o->srcline,
					 .max_cache_bytes = o->max_cache_bytes,
					 .budget = &s->budget,
					 .no_bpf =
						 fl_sampler__backend(s->sampler) != FL_SAMPLER_BPF};
	err = fl_symbolizer__new(&syo, &s->symbolizer);
	if (err) {
		msg("cannot load symbols: %s", strerror(-err));
		return err;
	}
	if (o->kernel && fl_symbolizer__kernel_hidden(s->symbolizer)) {
		int kptr = -1;

		read_proc_int("/proc/sys/kernel/kptr_restrict", &kptr);
		/*
		 * kptr_restrict 0 and 1 show them to CAP_SYSLOG (0 also to anyone
		 * when kernel.perf_event_paranoid <= 1), 2 to nobody.
		 */
		if (kptr != 2 && !have_cap(CAP_SYSLOG))
			msg("warning: kernel addresses are hidden from flamed "
			    "(kernel.kptr_restrict=%d "
			    "and no CAP_SYSLOG): kernel frames will show as [kernel]; run as root, "
			    "or grant cap_syslog too",
			    kptr);
		else
			msg("warning: kernel addresses are hidden from everyone, root included "
			    "(kernel.kptr_restrict=%d): kernel frames will show as [kernel]; set "
			    "kernel.kptr_restrict=1",
			    kptr);
	}
	if (!o->quiet)
		note_missing_caps(o);

	err = fl_profile__new(&s->profile);
	if (!err)
		err = new_pprof(s, &s->pprof);
	if (!err)
		err = new_fold(s, s->profile, s->pprof, &s->fold);
	if (err)
		msg("cannot set up the profile: %s", strerror(-err));
	return err;
}

/* Fds already watched are fine: after a hotplug only the reopened events are new. */
static int watch_fd(int ep, int fd, enum tag tag, uint32_t idx)
{
	int err = fd < 0 ? 0 : epoll_add(ep, fd, tag, idx);

	return err == -EEXIST ? 0 : err;
}

int session_watch(struct session *s, int ep)
{
	int err = 0;

	s->ep = ep;
	/*
	 * kernel-dwarf and Python: a process's mappings reach the BPF program
	 * when the tracker is read. Its rings wake flamed only when a quarter
	 * full, and nothing reads them on a timer: a process sampled before
	 * its mappings were read asks for them (uw_wants, py_wants), and its
	 * want wakes flamed at once. An idle machine costs the tick alone.
	 */
	for (size_t i = 0; !err && i < fl_sampler__nr_fds(s->sampler); i++)
		err = watch_fd(ep, fl_sampler__fd(s->sampler, i), TAG_SAMPLER, (uint32_t)i);
	for (size_t i = 0; !err && i < fl_tracker__nr_fds(s->tracker); i++)
		err = watch_fd(ep, fl_tracker__fd(s->tracker, i), TAG_TRACKER, (uint32_t)i);
	return err;
}

/*
 * A CPU taken offline kills the events on it for good: once it is back,
 * they are opened again (mappings first, as ever), and the fds watched.
 */
static void revive_cpus(struct session *s)
{
	int cpus[8], n, m;

	n = fl_tracker__revive(s->tracker, cpus, 8);
	m = fl_sampler__revive(s->sampler, cpus, 8);
	if ((n < 0 || m < 0) && !s->revive_failed) {
		/* Once: it would come back every second. */
		msg("a CPU is back online, but its events could not be opened again: %s",
		    strerror(-(n < 0 ? n : m)));
		s->revive_failed = true;
	}
	if (m <= 0)
		return;
	s->revived += (unsigned)m;
	for (int i = 0; i < m && i < 8; i++) {
		bool first = false;

		for (int k = 0; k < s->nr_offline_at_start; k++)
			if (s->offline_at_start[k] == cpus[i]) {
				first = true;
				s->offline_at_start[k] = -1; /* the next time it is "back" */
			}
		if (first)
			msg("CPU %d came online: sampling it from now on", cpus[i]);
		else
			msg("CPU %d is back online: sampling it again (nothing was sampled there "
			    "while it was offline)",
			    cpus[i]);
	}
	if (s->ep >= 0 && session_watch(s, s->ep) < 0)
		msg("CPU hotplug: cannot watch the reopened events");
}

#define MAX_RATE_SYSCTL "/proc/sys/kernel/perf_event_max_sample_rate"

void session_report_throttling(const struct session *s, const struct fl_sampler_stats *ss)
{
	int now = -1;
	bool lowered;

	read_proc_int(MAX_RATE_SYSCTL, &now);
	if (now >= 0 && now > s->max_rate_min && s->max_rate_min >= 0)
		now = s->max_rate_min; /* lowered, then raised again */
	lowered = now >= 0 && s->max_rate_start >= 0 && now < s->max_rate_start;
	if (ss->throttled && lowered)
		msg("the kernel throttled sampling %llu times: kernel.perf_event_max_sample_rate "
		    "went from %d down to %d during the recording (the kernel lowers it itself "
		    "when "
		    "perf interrupts take too long); fewer samples were taken than -F %llu asks: "
		    "lower -F",
		    (unsigned long long)ss->throttled, s->max_rate_start, now,
		    (unsigned long long)s->o.freq);
	else if (ss->throttled)
		msg("the kernel throttled sampling %llu times (kernel.perf_event_max_sample_rate "
		    "is "
		    "%d; see also kernel.perf_cpu_time_max_percent); fewer samples were taken than "
		    "-F %llu asks: lower -F",
		    (unsigned long long)ss->throttled, now, (unsigned long long)s->o.freq);
	else if (lowered && (uint64_t)now < s->o.freq)
		msg("kernel.perf_event_max_sample_rate went from %d to %d during the recording, "
		    "below -F %llu: the kernel may have taken fewer samples",
		    s->max_rate_start, now, (unsigned long long)s->o.freq);
}

/*
 * CPUs there but offline now are sampled from when they come online (as a
 * CPU that goes away and comes back is): said once, so that a profile
 * missing them is not read as the whole machine.
 */
static void note_offline_cpus(struct session *s)
{
	_cleanup_free_ int *online = NULL, *present = NULL;
	int nr_online = fl_online_cpus(&online), nr_present = fl_present_cpus(&present);

	if (nr_online <= 0 || nr_present <= 0)
		return;
	s->offline_at_start = calloc((size_t)nr_present, sizeof(int));
	if (!s->offline_at_start)
		return;
	for (int i = 0; i < nr_present; i++) {
		bool on = false;

		for (int k = 0; k < nr_online && !on; k++)
			on = online[k] == present[i];
		if (!on)
			s->offline_at_start[s->nr_offline_at_start++] = present[i];
	}
	if (s->nr_offline_at_start == 1)
		msg("CPU %d is offline: it is sampled from when it comes online",
		    s->offline_at_start[0]);
	else if (s->nr_offline_at_start > 1)
		msg("%d CPUs are offline (CPU %d, ...): each is sampled from when it comes online",
		    s->nr_offline_at_start, s->offline_at_start[0]);
}

void session_report_hotplug(const struct fl_sampler_stats *ss)
{
	const struct fl_cpu_hotplug *h = &ss->hotplug;
	char still[64] = "";

	if (!h->cpus)
		return;
	if (h->dead_now)
		snprintf(still, sizeof(still), ", %u of them still offline at the end",
			 h->dead_now);
	msg("CPU hotplug: %u CPU%s offline for part of the time (about %.1f CPU-seconds in "
	    "all%s): nothing was sampled there meanwhile",
	    h->cpus, h->cpus == 1 ? " was" : "s were", (double)h->dead_ns / 1e9, still);
}

const char *call_graph_name(const struct session *s)
{
	if (!s->o.user)
		return "none";
	if (s->o.dwarf)
		return "dwarf";
	if (s->sampler && fl_sampler__kdwarf(s->sampler))
		return "kernel-dwarf";
	if (s->o.kdwarf && fl_sampler__backend(s->sampler) == FL_SAMPLER_BPF)
		return "fp (kernel-dwarf could not load)";
	if (s->o.kdwarf)
		return "fp (kernel-dwarf needs BPF)";
	return "fp";
}

bool session_python(const struct session *s)
{
	return s->pyprocs != NULL;
}

/*
 * Python: whether process pid maps a CPython flamed can read (the program
 * or libpython), and where its runtime is; the BPF program reads its
 * frames from then on. n == 0: it exited.
 */
static void python_maps(struct session *s, uint32_t pid, const struct fl_tmap *maps, size_t n)
{
	struct fl_pyprocs_found found;
	int ret = fl_pyprocs__find(s->pyprocs, pid, maps, n, &found);

	if (ret == 1 && !fl_sampler__set_python(s->sampler, pid, &found.proc))
		return;
	if (ret == -EOPNOTSUPP && found.first && !s->o.quiet)
		msg("python: %s is CPython %u.%u.%u, whose frames flamed cannot read (it knows "
		    "3.11, 3.12 and 3.13): its processes show the interpreter's native frames",
		    found.path, found.version >> 24, found.version >> 16 & 0xff,
		    found.version >> 8 & 0xff);
	/* Most processes never ran Python: no map update for them on every change of mappings. */
	if (fl_pyprocs__drop(s->pyprocs, pid))
		fl_sampler__set_python(s->sampler, pid, NULL);
}

static int push_maps_cb(void *ctx, uint32_t pid, const struct fl_tmap *maps, size_t n)
{
	struct session *s = ctx;

	/* A process the kernel could not be told about has frame-pointer stacks: not fatal. */
	if (fl_sampler__kdwarf(s->sampler))
		fl_sampler__set_maps(s->sampler, pid, maps, n);
	if (session_python(s))
		python_maps(s, pid, maps, n);
	return 0;
}

/*
 * Reads the mapping records, then (kernel-dwarf, Python) tells the BPF
 * program what changed: its view of the processes' mappings lags the
 * tracker's by one read.
 */
static void tracker_poll(struct session *s)
{
	fl_tracker__poll(s->tracker);
	if (fl_sampler__kdwarf(s->sampler) || session_python(s))
		fl_tracker__changed(s->tracker, push_maps_cb, s);
}

int session_start(struct session *s)
{
	int err;

	s->max_rate_start = -1;
	read_proc_int(MAX_RATE_SYSCTL, &s->max_rate_start);
	s->max_rate_min = s->max_rate_start;
	/* Tracker first: mappings made while the sampler starts are not missed. */
	err = fl_tracker__start(s->tracker);
	if (!err && (fl_sampler__kdwarf(s->sampler) || session_python(s)))
		fl_tracker__changed(s->tracker, push_maps_cb, s);
	if (!err)
		err = fl_sampler__start(s->sampler);
	if (err)
		open_failed("perf events", err);
	else if (!s->o.quiet)
		note_offline_cpus(s);
	s->running = !err;
	return err;
}

static int fold_cb(const struct fl_raw_stack *st, void *ctx)
{
	return fl_fold__add(ctx, st);
}

static int flushed_cb(const struct fl_raw_stack *st, void *ctx)
{
	struct session *s = ctx;

	s->flushed_stacks++;
	return fl_fold__add(s->fold, st);
}

#define FLUSH_BATCH 1024
/*
 * A flush looks at the stacks of the processes that exited only, but each
 * asks the tracker and symbolizer to forget them: it waits for this many
 * exited processes, or this many ticks.
 */
#define FLUSH_MIN_EXITED 256
/* Ticks between two trims of the unwind tables (kernel-dwarf). */
#define TRIM_TICKS 30
#define FLUSH_MAX_TICKS 10

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Names the stacks of processes that exited before the previous tick's
 * ring reads began (every ring has been read twice since: none of their
 * samples is unread, and the ring sampler has decided whose its undecided
 * samples are) and drops what the sampler and the tracker held for them.
 * Memory then follows the processes alive, not every process the machine
 * ran.
 */
static int flush_exited(struct session *s)
{
	uint32_t pids[FLUSH_BATCH];
	uint64_t before = s->tick_poll[0];
	bool forgot = false;
	size_t n;

	if (!before)
		return 0;
	if (++s->ticks_since_flush < FLUSH_MAX_TICKS &&
	    fl_tracker__exited(s->tracker, before, pids, FLUSH_MIN_EXITED) < FLUSH_MIN_EXITED)
		return 0;
	s->ticks_since_flush = 0;
	s->flushes++;
	do {
		int err;

		n = fl_tracker__exited(s->tracker, before, pids, FLUSH_BATCH);
		if (!n)
			break;
		qsort(pids, n, sizeof(*pids), cmp_u32);
		err = fl_sampler__take(s->sampler, pids, n, flushed_cb, s);
		if (err)
			return err;
		fl_tracker__forget(s->tracker, pids, n);
		fl_symbolizer__forget(s->symbolizer, pids, n);
		forgot = true;
	} while (n == FLUSH_BATCH);
	if (forgot)
		fl_tracker__release_files(s->tracker);
	return 0;
}

void session_event(struct session *s, enum tag tag)
{
	/* Mappings first: DWARF samples are unwound as they are read. */
	tracker_poll(s);
	if (tag == TAG_SAMPLER)
		fl_sampler__poll(s->sampler);
	/* While the JIT processes just seen live (a map they remove at exit stays readable). */
	fl_symbolizer__jit_open_new(s->symbolizer);
}

void session_tick(struct session *s)
{
	s->tick_poll[0] = s->tick_poll[1];
	s->tick_poll[1] = fl_tracker__now();
	tracker_poll(s);
	fl_sampler__poll(s->sampler);
	if (s->running) {
		int rate;

		revive_cpus(s);
		/* The lowest it went: the kernel lowers it, someone may raise it back. */
		if (s->max_rate_min >= 0 && !read_proc_int(MAX_RATE_SYSCTL, &rate) &&
		    rate < s->max_rate_min)
			s->max_rate_min = rate;
	}
	fl_symbolizer__jit_retry(s->symbolizer);
	/* The kernel's maps hold a second of samples: what they counted comes here. */
	if (!s->err)
		s->err = fl_sampler__gather(s->sampler);
	if (!s->err)
		s->err = flush_exited(s);
	/* Tables of files no process maps any more go (a file mapped again soon keeps its table). */
	if (++s->ticks_since_trim >= TRIM_TICKS) {
		s->ticks_since_trim = 0;
		fl_sampler__trim_tables(s->sampler);
	}
}

void session_stop(struct session *s)
{
	s->running = false;
	fl_sampler__stop(s->sampler);
	fl_tracker__stop(s->tracker);
	/* Mapping records first: the symbolizer needs every mapping the samples saw. */
	fl_tracker__poll(s->tracker);
	fl_sampler__poll(s->sampler);
}

int session_drain(struct session *s)
{
	return s->err ?: fl_sampler__drain(s->sampler, fold_cb, s->fold);
}

int session_fetch_debuginfo(struct session *s)
{
	struct fl_debuginfod_stats st;
	struct fl_profile *p = NULL;
	struct fl_fold *fold = NULL;
	int err;

	if (!s->debuginfod || s->err)
		return 0;
	/* Named once for nothing: the files met are asked for as they are read. */
	err = fl_profile__new(&p);
	if (!err)
		err = new_fold(s, p, NULL, &fold);
	if (!err)
		err = fl_sampler__peek(s->sampler, fold_cb, fold);
	fl_fold__free(fold);
	fl_profile__free(p);
	if (err)
		return err;
	fl_debuginfod__stats(s->debuginfod, &st);
	if (st.pending)
		fl_debuginfod__wait(s->debuginfod, s->o.debuginfod_seconds > 0
							   ? s->o.debuginfod_seconds
							   : FL_DEBUGINFOD_DEFAULT_SECONDS);
	return 0;
}

int session_snapshot(struct session *s)
{
	/* Mapping records first, as at a tick. */
	tracker_poll(s);
	fl_sampler__poll(s->sampler);
	return fl_sampler__snapshot(s->sampler, fold_cb, s->fold);
}

int session_set_profile(struct session *s, struct fl_profile *p, struct fl_pprof *pp)
{
	struct fl_fold *fold;
	int err;

	/* Samples of the session before go on in its pprof profile only if this one writes pprof too. */
	if (!s->o.pprof) {
		fl_pprof__free(pp);
		pp = NULL;
	} else if (!pp) {
		err = new_pprof(s, &pp);
		if (err)
			return err;
	}
	err = new_fold(s, p, pp, &fold);
	if (err) {
		fl_pprof__free(pp);
		return err;
	}
	fl_fold__free(s->fold);
	fl_profile__free(s->profile);
	fl_pprof__free(s->pprof);
	s->fold = fold;
	s->profile = p;
	s->pprof = pp;
	return 0;
}

int session_take_profile(struct session *s, struct fl_profile **ret, struct fl_pprof **pp_ret)
{
	struct fl_profile *p, *old = s->profile;
	struct fl_pprof *pp = NULL;
	struct fl_fold *fold;
	int err = fl_profile__new(&p);

	if (!err)
		err = new_pprof(s, &pp);
	if (!err)
		err = new_fold(s, p, pp, &fold);
	if (err) {
		fl_profile__free(p);
		fl_pprof__free(pp);
		return err;
	}
	fl_fold__free(s->fold);
	s->fold = fold;
	s->profile = p;
	*ret = old;
	if (pp_ret)
		*pp_ret = s->pprof;
	else
		fl_pprof__free(s->pprof);
	s->pprof = pp;
	return 0;
}

void session_close(struct session *s)
{
	fl_fold__free(s->fold);
	fl_profile__free(s->profile);
	fl_pprof__free(s->pprof);
	fl_symbolizer__free(s->symbolizer); /* borrows the tracker and the fetcher */
	fl_pyprocs__free(s->pyprocs);
	fl_debuginfod__free(s->debuginfod);
	fl_tracker__free(s->tracker);
	/* The sampler uses the unwinder until it is freed. */
	fl_sampler__free(s->sampler);
	fl_unwinder__free(s->unwinder);
	fl_cgroups__free(s->cgroups); /* after the sampler, which borrows it */
	free(s->offline_at_start);
	memset(s, 0, sizeof(*s));
}

struct tree_ctx {
	const struct fl_profile *p;
	struct fl_flametree *t;
	struct fl_str *frames;
	double factor;
};

static int add_to_tree(const uint32_t *frames, size_t n, uint64_t count, void *ctx)
{
	struct tree_ctx *c = ctx;

	if (n > FL_FLAMETREE_MAX_DEPTH)
		n = FL_FLAMETREE_MAX_DEPTH; /* cannot happen: stacks are at most 2 x 127 frames */
	for (size_t i = 0; i < n; i++) {
		c->frames[i].s = fl_profile__name(c->p, frames[i]);
		c->frames[i].len = strlen(c->frames[i].s);
	}
	return fl_flametree__add_frames(c->t, c->frames, n, 0, (double)count * c->factor);
}

int write_profile_svg(const struct fl_profile *p, const struct svg_args *sa, const char *who,
		      const char *caveats, FILE *f)
{
	/*
	 * The SVG draws nothing narrower than a minimum width: the tree is fed
	 * grouped and folds what it would merge, so it holds about what can be
	 * drawn, not every frame of every distinct stack. The HTML page keeps
	 * every frame. Folding stops a little under the SVG's own cut, so no
	 * rounding can fold a frame that it would draw.
	 */
	double fold =
		sa->html ? 0
			 : fl_svg__min_count(&sa->svg, (double)fl_profile__total(p) * sa->factor) *
				   (1 - 1e-9);
	struct fl_flametree_opts to = {.sz = sizeof(to),
				       .reverse = sa->reverse,
				       .flamechart = sa->flamechart,
				       .grouped = !sa->flamechart,
				       .fold_below = fold};
	_cleanup_free_ struct fl_str *frames = malloc(FL_FLAMETREE_MAX_DEPTH * sizeof(*frames));
	_cleanup_free_ char *notes = NULL;
	struct fl_flametree *t = NULL;
	struct tree_ctx c = {.p = p, .frames = frames, .factor = sa->factor};
	int err;

	if (!frames)
		return -ENOMEM;
	if (asprintf(&notes, "%s: %s%s%s", who, caveats, sa->svg.notes ? "\n" : "",
		     sa->svg.notes ? sa->svg.notes : "") < 0) {
		notes = NULL;
		return -ENOMEM;
	}
	err = fl_flametree__new(&to, &t);
	if (err)
		return err;
	c.t = t;
	/* A flame chart's stacks stay in time order, which groups them by itself. */
	err = sa->flamechart ? fl_profile__for_each(p, add_to_tree, &c)
			     : fl_profile__for_each_grouped(p, sa->reverse, add_to_tree, &c);
	if (!err) {
		struct svg_args a = *sa;

		if (!a.svg.subtitle)
			a.svg.subtitle = caveats;
		a.svg.notes = notes;
		err = svg_render(&a, t, f);
		fl_pr_debug("flame graph: %zu frames built, %llu more folded into narrow ones\n",
			    fl_flametree__nr_frames(t),
			    (unsigned long long)fl_flametree__nr_folded(t));
	}
	fl_flametree__free(t);
	return err;
}
