/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The process tracker: executable mappings of processes over the recording. */
#ifndef FLAMED_TRACKER_H
#define FLAMED_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Symbolization needs the mappings a process had when it was sampled, and
 * many processes have exited, exec'd or unmapped a library by the time
 * their samples are named. The tracker opens one PERF_COUNT_SW_DUMMY event
 * per online CPU with mmap2, comm and task set (executable mappings only,
 * each record stamped with its CLOCK_MONOTONIC time), scans /proc for the
 * mappings that already exist, and keeps each process's mapping history:
 * the latest mappings, the ones they replaced, and the times at which an
 * address started to mean other code (a mapping replaced by a different
 * file or offset, an exec, a pid reused by a new process). A lookup names
 * the time of the sample; the era of a time (fl_tracker__era()) is what
 * samples must be kept apart by for their addresses to mean one thing.
 *
 * A forked child starts with its parent's mappings. Records of different
 * CPUs are read ring after ring, so they come out of order; their times
 * put them back in order.
 *
 * Every process seen in the events is tracked. The initial /proc scan covers
 * every process when opts->pids is empty, else only those pids (the events
 * cover their children). A process that exited stays until
 * fl_tracker__forget() drops it, once its samples are symbolized.
 */
struct fl_tracker;

struct fl_tracker_opts {
	size_t sz;	 /* sizeof(struct fl_tracker_opts) */
	const int *pids; /* processes to scan at start; NULL/0: all of /proc */
	size_t nr_pids;
	size_t ring_pages; /* per CPU, a power of two; 0 means 64 */
	/*
	 * Open every mapped file when first seen (through /proc/PID/map_files
	 * if it was already deleted or replaced) and hold it open until
	 * fl_tracker__free(): a binary or library deleted or replaced while its
	 * processes run, and gone with them, can still be read for names.
	 */
	bool hold_files;
	/*
	 * Called (from fl_tracker__start/poll/add_pid) the first time a
	 * process is seen with anonymous executable memory: JIT code, named
	 * by a perf map the process writes, to be opened while it lives.
	 */
	void (*on_jit)(void *ctx, uint32_t pid);
	void *ctx;
	/*
	 * Called when a process execs a program (comm: its new name, at most
	 * 15 bytes, as the kernel gives it). NULL: not called. ctx as above.
	 */
	void (*on_exec)(void *ctx, uint32_t pid, const char *comm);
	/*
	 * Processes tracked at once, at most (0: no limit). Beyond it, new
	 * processes are not tracked (their frames stay unnamed) and counted in
	 * over_max until exited ones are forgotten.
	 */
	size_t max_processes;
	/*
	 * flamed runs in a child pid namespace (a container): pid 2 there is an
	 * ordinary process, not kthreadd, and no kernel thread is seen.
	 */
	bool child_pidns;
	/*
	 * Keep a list of the processes whose latest mappings changed (or that
	 * exited) for fl_tracker__changed(): the in-kernel unwinder follows
	 * them.
	 */
	bool track_changes;
};

/* One executable mapping of a process. */
struct fl_tmap {
	uint64_t start, end; /* [start, end) */
	uint64_t pgoff;	     /* file offset of start */
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	/*
	 * The path as the kernel gave it ("/usr/lib/x86_64-linux-gnu/libc.so.6",
	 * "[vdso]", "//anon" or "" for anonymous memory). Interned: lives until
	 * fl_tracker__free().
	 */
	const char *path;
	/* CLOCK_MONOTONIC ns of the record that made it; 0 if found by the /proc scan. */
	uint64_t birth;
};

/*
 * Whether m is anonymous memory, as the kernel names it ("//anon", "",
 * "[anon:...]"), or a memfd: JIT code, named by perf maps, not by a file.
 */
bool fl_tmap__is_anon(const struct fl_tmap *m);

struct fl_tracker_stats {
	uint64_t lost;	/* records the kernel dropped (PERF_RECORD_LOST) */
	uint64_t mmaps; /* executable mappings recorded from events */
	uint64_t forks, exits, execs;
	uint64_t processes;	  /* processes currently tracked */
	uint64_t peak_processes;  /* the most tracked at once */
	uint64_t forgotten;	  /* processes dropped after they exited */
	uint64_t replaced;	  /* mappings replaced by other code at their address */
	uint64_t history_dropped; /* oldest history of a process dropped at its cap */
	uint64_t files_held;	  /* mapped files held open (hold_files) */
	uint64_t files_not_held;  /* ... not, past the cap or unopenable when first seen */
	uint64_t over_max;	  /* processes not tracked: max_processes were */
	uint64_t files_released;  /* held files closed: no process tracked maps them */
	/*
	 * Times the processes were read again from /proc because records were
	 * lost, or a ring was too full to be sure none were: what they mapped
	 * meanwhile is known from then on. At most a tenth of the time goes to
	 * it (all of /proc: at most once a second); rescan_ns is that time.
	 */
	uint64_t rescans;
	uint64_t rescan_ns;
};

/*
 * Opens the per-CPU events (disabled). Returns 0, or -errno from
 * perf_event_open (-EACCES/-EPERM: not permitted) or mmap.
 */
int fl_tracker__new(const struct fl_tracker_opts *opts, struct fl_tracker **ret);
/* Accepts NULL. Closes the events. */
void fl_tracker__free(struct fl_tracker *t);

/* Enables the events, then scans /proc (events first: nothing is missed). */
int fl_tracker__start(struct fl_tracker *t);
/* Disables the events; reads what is left with fl_tracker__poll(). */
int fl_tracker__stop(struct fl_tracker *t);

/* Scans /proc/PID/maps of one more process now (e.g. a child just forked). */
int fl_tracker__add_pid(struct fl_tracker *t, int pid);

/* The event fds, for epoll (readable when a ring is a quarter full). */
size_t fl_tracker__nr_fds(const struct fl_tracker *t);
int fl_tracker__fd(const struct fl_tracker *t, size_t i);

/* Reads every pending record from every ring. Returns 0 or -errno. */
int fl_tracker__poll(struct fl_tracker *t);
/*
 * CPU hotplug: reopens and enables the events of CPUs back from offline
 * (as fl_sampler__revive() does; call it first, after a poll), then scans
 * the processes again (all of /proc, or the ones tracked when pids were
 * given): nothing recorded what ran on those CPUs since they came back.
 * The CPUs done go to cpus (the first max); returns their number or
 * -errno. The fds may have changed then: watch them again.
 */
int fl_tracker__revive(struct fl_tracker *t, int *cpus, size_t max);
/*
 * The time (fl_tracker__now()) at which the last fl_tracker__poll() began:
 * every mapping made before it is known (unless that poll failed), later
 * ones may not be. 0 before the first poll.
 */
uint64_t fl_tracker__known_until(const struct fl_tracker *t);

/* CLOCK_MONOTONIC in ns, the clock of the records and of fl_tracker__find_at(). */
uint64_t fl_tracker__now(void);

/*
 * The latest mapping of process pid (a tgid) holding addr, or NULL. The
 * pointer lives until the next fl_tracker__poll(), fl_tracker__add_pid(),
 * fl_tracker__forget() or free.
 */
const struct fl_tmap *fl_tracker__find(const struct fl_tracker *t, uint32_t pid, uint64_t addr);

/*
 * The mapping that held addr in process pid at time (ns, CLOCK_MONOTONIC):
 * the newest one made at or before time since the process's last exec.
 * When none was (its record came late, or was lost), the oldest one made
 * after time, before the next exec: a sampled address was mapped. Lives as
 * long as fl_tracker__find()'s result.
 */
const struct fl_tmap *fl_tracker__find_at(const struct fl_tracker *t, uint32_t pid, uint64_t addr,
					  uint64_t time);

/*
 * The start of the era of pid that holds time: the last moment at or before
 * time at which one of its addresses began to mean other code (0: none).
 * Within one era an address means one thing, so lookups at any time of it,
 * the era's start included, give the same mapping.
 */
uint64_t fl_tracker__era(const struct fl_tracker *t, uint32_t pid, uint64_t time);

/*
 * Whether addr, unmapped in pid at time, belonged to the image pid left at
 * its last exec before time: a sample taken inside execve() after the old
 * memory was dropped still carries the old image's user registers, and
 * there is no user stack to walk.
 */
bool fl_tracker__left_at_exec(const struct fl_tracker *t, uint32_t pid, uint64_t addr,
			      uint64_t time);

/*
 * Up to max pids of processes whose exit was read and happened before
 * time (ns), into pids. Returns how many.
 */
size_t fl_tracker__exited(const struct fl_tracker *t, uint64_t before, uint32_t *pids, size_t max);

/* Drops what is known of these processes (exited ones; their samples are named). */
void fl_tracker__forget(struct fl_tracker *t, const uint32_t *pids, size_t n);

/*
 * With hold_files: the fd held open on tm's file (borrowed: dup it to keep
 * it), or -1 when there is none.
 */
int fl_tracker__file_fd(const struct fl_tracker *t, const struct fl_tmap *tm);
/*
 * Closes the held files (hold_files) that no process tracked maps any more,
 * now or in its history: after fl_tracker__forget(), so that a long run
 * does not hold every file the machine ever mapped.
 */
void fl_tracker__release_files(struct fl_tracker *t);

/*
 * With track_changes: calls fn for every process whose latest mappings
 * changed since the previous call (maps: all of them, sorted by start,
 * valid during the call), or that exited or was forgotten (maps NULL, n 0),
 * each once. A non-zero return from fn stops the walk and is returned; the
 * processes not told yet are told next time.
 */
typedef int (*fl_tracker_changed_fn)(void *ctx, uint32_t pid, const struct fl_tmap *maps,
				     size_t n);
int fl_tracker__changed(struct fl_tracker *t, fl_tracker_changed_fn fn, void *ctx);

/* True when pid is known to be a kernel thread (no user address space). */
bool fl_tracker__is_kthread(const struct fl_tracker *t, uint32_t pid);

void fl_tracker__stats(const struct fl_tracker *t, struct fl_tracker_stats *st);

#endif
