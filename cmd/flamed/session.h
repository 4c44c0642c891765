/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A sampling session, what flamed record and flamed daemon share: the
 * sampler, the process tracker, the symbolizer and the profile their
 * stacks are folded into, and the work of the event loop around them.
 */
#ifndef FLAMED_CMD_SESSION_H
#define FLAMED_CMD_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "flamed/common/budget.h"
#include "flamed/profile/fold.h"
#include "flamed/sampling/cgroups.h"
#include "flamed/sampling/pidns.h"
#include "flamed/sampling/sampler.h"
#include "flamed/sampling/tracker.h"

struct fl_profile;
struct fl_pprof;
struct fl_symbolizer;
struct fl_unwinder;
struct svg_args;
struct fl_pyprocs;

/* epoll tags: what woke the loop up (data.u64 = tag << 32 | index). */
enum tag {
	TAG_SIGNAL,
	TAG_DURATION,
	TAG_TICK,
	TAG_SAMPLER,
	TAG_TRACKER,
	TAG_PIDFD,
	TAG_SNAPSHOT,
	TAG_WATCHDOG,
};

/*
 * Reads flamed's pid namespace into ns, and makes sure /proc is that
 * namespace's: in a container whose /proc is the host's, every pid would
 * name another process. Says why on stderr and returns -errno otherwise.
 */
int session_check_pidns(struct fl_pidns *ns);

/* Says that n samples of processes outside flamed's pid namespace were left out, and why. */
void session_report_other_ns(uint64_t n);

int epoll_add(int ep, int fd, enum tag tag, uint32_t idx);
/* Arms a timerfd: first expiry after first seconds, then every interval (0: once). */
int timer_arm(int fd, double first, double interval);
double now_s(void);

struct session_opts {
	uint64_t freq;
	const int *pids; /* processes to sample; NULL/0: every process */
	size_t nr_pids;
	bool follow_children;
	bool per_process, per_thread;
	bool idle, kernel, user;
	bool no_bpf;
	bool no_inline, srcline, no_demangle;
	bool dwarf;
	uint32_t stack_size;
	/*
	 * --call-graph kernel-dwarf: user stacks walked by the BPF program with
	 * unwind tables (frame pointers when it cannot be loaded: kdwarf_failed
	 * says why). max_table_bytes bounds the tables (0: a default).
	 */
	bool kdwarf;
	uint64_t max_table_bytes;
	uint32_t stack_storage_size, max_stacks;
	bool snapshots;		  /* session_snapshot() will be called */
	bool pprof;		  /* the samples also go to a pprof profile, s->pprof */
	bool quiet;		  /* no notices (BPF fallback) on stderr */
	size_t max_processes;	  /* tracked at once (0: no limit) */
	uint64_t max_cache_bytes; /* symbols and perf maps read (0: the symbolizer's default) */
	/* A process exec'd a program named comm (the daemon's targets by name). */
	void (*on_exec)(void *ctx, uint32_t pid, const char *comm);
	void *on_exec_ctx;
	/*
	 * cgroup v2. per_cgroup: each stack's root frame is its service (the
	 * name of the cgroup its task ran in, fl_cgroup__service_name()), then
	 * the comm frame; in pprof, the label "cgroup". cgroups[0..nr_cgroups)
	 * (at most FL_CGROUP_MAX_TARGETS): only tasks in these cgroups and
	 * their descendants are sampled; each a path relative to the v2 mount
	 * ("system.slice/nginx.service", "/system.slice/nginx.service") or
	 * absolute under it. Read by session_open() only.
	 */
	bool per_cgroup;
	const char *const *cgroups;
	size_t nr_cgroups;
	/*
	 * Debug files by build-id from debuginfod servers (debuginfod_urls,
	 * NULL: DEBUGINFOD_URLS) for files with no DWARF here, within a budget
	 * (0s: the defaults of debuginfod.h). Read by session_open() only.
	 */
	bool debuginfod;
	const char *debuginfod_urls;
	unsigned debuginfod_files;
	uint64_t debuginfod_bytes;
	double debuginfod_seconds;
	/*
	 * Python frames (BPF backend): in each process running a CPython
	 * flamed knows, the Python functions replace the interpreter loop's
	 * native frames.
	 */
	bool python;
};

struct session {
	struct session_opts o;
	/*
	 * Memory for what other users' files make flamed read, max_cache_bytes:
	 * the symbolizer's cache and the unwinder's CFI both charge it.
	 */
	struct fl_budget budget;
	struct fl_pidns pidns;	      /* flamed's pid namespace (session_check_pidns()) */
	struct fl_unwinder *unwinder; /* --call-graph dwarf */
	struct fl_sampler *sampler;
	struct fl_tracker *tracker;
	struct fl_symbolizer *symbolizer;
	struct fl_debuginfod *debuginfod; /* NULL: off */
	struct fl_profile *profile; /* the stacks named so far */
	struct fl_fold *fold;	    /* into profile */
	struct fl_pprof *pprof;	    /* with o.pprof: the same samples as locations, else NULL */
	int err;		    /* a failure of the loop's work (-ENOMEM), sticky */
	uint64_t tick_poll[2];	    /* when the last two ticks' ring reads began */
	unsigned int ticks_since_flush;
	/* Flushes of exited processes, and the stacks they passed on (their cost: see stats). */
	uint64_t flushes, flushed_stacks;
	unsigned int ticks_since_trim;
	int kdwarf_failed; /* -errno: kernel-dwarf asked for and not loadable (0: loaded or not asked) */
	int ep;		    /* the epoll the fds are watched with (session_watch()), or -1 */
	bool running;	    /* between session_start() and session_stop() */
	unsigned revived;   /* CPUs whose events were opened again after a hotplug */
	int *offline_at_start; /* present CPUs offline when sampling started */
	int nr_offline_at_start;
	bool revive_failed; /* said so once */
	int max_rate_start; /* kernel.perf_event_max_sample_rate at session_start(), or -1 */
	int max_rate_min;   /* ... the lowest seen since (read every tick) */
	/* per_cgroup or cgroups: the cgroup tree (names, ancestry), else NULL; and the targets. */
	struct fl_cgroups *cgroups;
	struct fl_cgroup_target cg_targets[FL_CGROUP_MAX_TARGETS];
	struct fl_pyprocs *pyprocs; /* Python frames read: the processes' interpreters, else NULL */
	int python_failed; /* -errno: Python frames asked for and not loadable */
};

/*
 * One line when the kernel throttled sampling (ss->throttled), with
 * kernel.perf_event_max_sample_rate then and now (the kernel lowers it
 * itself when perf interrupts take too long).
 */
void session_report_throttling(const struct session *s, const struct fl_sampler_stats *ss);

/* One line when CPUs were offline (not sampled) for part of the time (ss->hotplug). */
void session_report_hotplug(const struct fl_sampler_stats *ss);

/*
 * The user-stack mode that ran: "kernel-dwarf", "dwarf", "fp", or "fp
 * (kernel-dwarf could not load)"; "none" with user stacks not recorded.
 */
const char *call_graph_name(const struct session *s);
/* Whether Python frames are read (asked for, and the BPF program has them). */
bool session_python(const struct session *s);

/* A sampling frequency the kernel takes, or one line saying why not. Returns 0 or -EINVAL. */
int session_check_freq(uint64_t freq);
/*
 * Raises the soft RLIMIT_NOFILE to the hard one; when that is still less
 * than a session needs, says so in one line (the limit, the number needed)
 * and returns -EMFILE: every open would fail somewhere (BPF, symbols) and
 * the profile would be quietly partial.
 */
int check_nofile(void);
bool is_permission_error(int err);
void permission_hint(const char *what, int err);
int read_proc_int(const char *path, int *val);

/*
 * Resolves cgroup paths (session_opts.cgroups) into t[0..n), or says in one
 * line which one is wrong and why (no such cgroup, not under the cgroup v2
 * mount, more than FL_CGROUP_MAX_TARGETS). Returns 0 or -errno. For
 * checking arguments before anything starts; session_open() resolves them
 * again.
 */
int session_resolve_cgroups(const char *const *paths, size_t n, struct fl_cgroup_target *t);

/*
 * Sets up everything but starts nothing; prints one line on failure.
 * s must be zeroed. Returns 0 or -errno; session_close() in any case.
 */
int session_open(struct session *s, const struct session_opts *o);
/* Adds the sampler's and the tracker's fds to ep (TAG_SAMPLER, TAG_TRACKER). */
int session_watch(struct session *s, int ep);
/* Tracker first, then sampling. Prints one line on failure. */
int session_start(struct session *s);
/* TAG_SAMPLER or TAG_TRACKER woke the loop. */
void session_event(struct session *s, enum tag tag);
/* Once a second: reads the rings, retries JIT maps, names exited processes. */
void session_tick(struct session *s);
/* Stops sampling and reads what the rings still hold. */
void session_stop(struct session *s);
/* Every stack not yet named goes into the profile (at the end). Returns 0 or -errno. */
int session_drain(struct session *s);

/*
 * With debuginfod: looks at every stack recorded (before session_drain())
 * so that the debug files of the files they are in are asked for, and
 * waits for those fetches, at most the fetcher's time budget. The
 * recording is over by then: only the output waits. 0 without debuginfod.
 */
int session_fetch_debuginfo(struct session *s);
/*
 * The stacks sampled since the last snapshot go into the profile, and
 * sampling goes on. Returns 0 or -errno.
 */
int session_snapshot(struct session *s);
/*
 * The profile is handed over (*ret, the caller frees it) and a new empty
 * one takes its place; the same for the pprof profile (*pp_ret; NULL:
 * freed). Returns 0 or -ENOMEM (nothing changed).
 */
int session_take_profile(struct session *s, struct fl_profile **ret, struct fl_pprof **pp_ret);
/*
 * Stacks are folded into p (and pp, which may be NULL) from now on: the
 * session takes both (the ones it had are freed; pp too when the session
 * writes no pprof). For a profile that outlives a session (the daemon's
 * reload). Returns 0 or -ENOMEM (p still the caller's, pp freed).
 */
int session_set_profile(struct session *s, struct fl_profile *p, struct fl_pprof *pp);
void session_close(struct session *s);

/*
 * Writes the flame graph of p with sa's options to f. caveats (what the
 * profile could not show) become the subtitle unless sa has one, and the
 * notes, after who ("flamed record"). Returns 0 or -errno.
 */
int write_profile_svg(const struct fl_profile *p, const struct svg_args *sa, const char *who,
		      const char *caveats, FILE *f);

#endif
