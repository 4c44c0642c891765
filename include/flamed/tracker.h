/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The process tracker: executable mappings of processes over the recording. */
#ifndef FLAMED_TRACKER_H
#define FLAMED_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Symbolization needs the mappings a process had when it was sampled, and
 * many processes have exited by the time a recording ends. The tracker opens
 * one PERF_COUNT_SW_DUMMY event per online CPU with mmap2, comm and task set
 * (executable mappings only), scans /proc for the mappings that already
 * exist, and keeps, per process, the executable mappings it had, so that
 * samples of processes that exited still symbolize. A forked child starts
 * with a copy of its parent's mappings; exec does not clear them (new
 * mappings replace the ranges they overlap, which covers the new image).
 *
 * Every process seen in the events is tracked. The initial /proc scan covers
 * every process when opts->pids is empty, else only those pids (the events
 * cover their children).
 */
struct fl_tracker;

struct fl_tracker_opts {
	size_t sz; /* sizeof(struct fl_tracker_opts) */
	const int *pids; /* processes to scan at start; NULL/0: all of /proc */
	size_t nr_pids;
	size_t ring_pages; /* per CPU, a power of two; 0 means 64 */
};

/* One executable mapping of a process. */
struct fl_tmap {
	uint64_t start, end; /* [start, end) */
	uint64_t pgoff;      /* file offset of start */
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	/*
	 * The path as the kernel gave it ("/usr/lib/x86_64-linux-gnu/libc.so.6",
	 * "[vdso]", "//anon" or "" for anonymous memory). Interned: lives until
	 * fl_tracker__free().
	 */
	const char *path;
};

struct fl_tracker_stats {
	uint64_t lost;     /* records the kernel dropped (PERF_RECORD_LOST) */
	uint64_t mmaps;    /* executable mappings recorded from events */
	uint64_t forks, exits, execs;
	uint64_t processes; /* processes currently tracked */
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
 * The mapping of process pid (a tgid) holding addr, or NULL. The pointer
 * lives until the next fl_tracker__poll(), fl_tracker__add_pid() or free.
 */
const struct fl_tmap *fl_tracker__find(const struct fl_tracker *t, uint32_t pid, uint64_t addr);

/* True when pid is known to be a kernel thread (no user address space). */
bool fl_tracker__is_kthread(const struct fl_tracker *t, uint32_t pid);

void fl_tracker__stats(const struct fl_tracker *t, struct fl_tracker_stats *st);

#endif
