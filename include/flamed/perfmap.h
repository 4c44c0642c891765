/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Names of JIT code from a process's perf map (/tmp/perf-PID.map), read as hostile input. */
#ifndef FLAMED_PERFMAP_H
#define FLAMED_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

/*
 * The format (perf's tools/perf/Documentation/jit-interface.txt): one
 * "START SIZE name" per line, START and SIZE in hex (an optional "0x" is
 * accepted, as perf does), separated by spaces or tabs; the name is the rest
 * of the line and may hold spaces. The profiled program writes the file, so
 * everything about it is checked and capped:
 */

/* Bytes read from the start of a file; anything beyond is ignored and counted. */
#define FL_PERFMAP_MAX_FILE_SIZE (256ull << 20)
/* Longest line, newline excluded; longer lines are skipped and counted. */
#define FL_PERFMAP_MAX_LINE 4096
/* Entries kept per file; good lines beyond are dropped and counted. */
#define FL_PERFMAP_MAX_ENTRIES (1u << 20)
/* A map whose mtime is this much before the process started is still its own (clock granularity). */
#define FL_PERFMAP_START_SLACK_NS 1000000000ull

struct fl_perfmap;

struct fl_perfmap_opts {
	size_t sz; /* sizeof(struct fl_perfmap_opts) */
	int pid;   /* the process, in flamed's pid namespace; required */
	/*
	 * The process's root directory (an O_PATH or O_DIRECTORY fd), under
	 * which "tmp/perf-NSPID.map" is looked up: symlinks, absolute ones
	 * included, never lead outside it. -1: /proc/PID/root (0 is an fd;
	 * one that is no directory gives -ENOTDIR). The fd stays the
	 * caller's (the map keeps a duplicate).
	 */
	int root_fd;
	/* The pid in the process's own namespace, which names the file; 0: read it. */
	int nspid;
};

/*
 * Counters of the file currently read; all but nr_reloads start again at 0
 * when the file is re-read from the start.
 */
struct fl_perfmap_stats {
	uint64_t nr_lines;   /* complete lines seen, good or not */
	uint64_t nr_entries; /* good lines kept */
	/* Malformed lines, skipped; nr_malformed is the sum of the five kinds. */
	uint64_t nr_malformed;
	uint64_t nr_bad_hex; /* START or SIZE missing, not hex, over 64 bits, or a bad separator */
	uint64_t nr_zero_size;	/* SIZE 0 */
	uint64_t nr_overflow;	/* START + SIZE beyond 2^64 */
	uint64_t nr_no_name;	/* nothing after SIZE */
	uint64_t nr_bad_char;	/* a NUL, CR or other control character (tab excepted) */
	uint64_t nr_too_long;	/* lines over FL_PERFMAP_MAX_LINE, skipped */
	uint64_t nr_over_max;	/* good lines dropped at FL_PERFMAP_MAX_ENTRIES */
	uint64_t bytes_parsed;	/* file offset up to which lines have been consumed */
	uint64_t bytes_ignored; /* bytes beyond FL_PERFMAP_MAX_FILE_SIZE at the last refresh */
	uint64_t nr_reloads;	/* times the file was re-read from the start (shrunk or replaced) */
};

/*
 * Opens and parses the perf map of a process. The file is looked up with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, O_NOFOLLOW | O_NONBLOCK)
 * under the root directory (where openat2 is missing, "tmp" and the file are
 * opened one component at a time, following no symlink at all), and used only
 * when it is:
 *   a regular file                           else -EINVAL (FIFO, device...)
 *   owned by the process's real uid or root  else -EPERM
 *   modified at or after the process started
 *   (less FL_PERFMAP_START_SLACK_NS)         else -ESTALE (left by an earlier
 *                                             process with the same pid)
 * A symlink in the last component gives -ELOOP, no file -ENOENT, a process
 * that is gone -ENOENT or -ESRCH. Malformed lines are never an error (see
 * the stats). Returns 0 and *ret, or -errno.
 */
int fl_perfmap__open(const struct fl_perfmap_opts *opts, struct fl_perfmap **ret);

/*
 * Reads what was appended since the last read: the file is kept open, and
 * while it is in place with its size unchanged this costs one fstat().
 * A partial last line (no newline yet) is left for the next refresh. A file
 * that shrank is re-read from the start. One that was unlinked is looked up
 * again: another file that passes the checks of fl_perfmap__open() replaces
 * it and is read from the start; when there is none, what is appended to the
 * unlinked file (the process may hold it open) is still read. Not noticed: a
 * file truncated and rewritten past its old size between two refreshes.
 * Returns 1 when the entries changed, 0 when not, or -errno (the refusals of
 * fl_perfmap__open() for a replacement), in which case the entries are left
 * as they were.
 */
int fl_perfmap__refresh(struct fl_perfmap *m);

/*
 * The name of the code at addr, or NULL. Where entries overlap (the JIT
 * reused the memory), the one later in the file wins. Binary search. The name
 * lives until fl_perfmap__free() or a refresh that re-reads the file from the
 * start (stats.nr_reloads changes); other refreshes keep it valid.
 */
const char *fl_perfmap__find(const struct fl_perfmap *m, uint64_t addr);

void fl_perfmap__stats(const struct fl_perfmap *m, struct fl_perfmap_stats *stats);

/* Accepts NULL. */
void fl_perfmap__free(struct fl_perfmap *m);

/*
 * The pid of a process as it sees itself: the last number of the "NSpid:"
 * line of /proc/PID/status (pid itself on kernels without that line).
 * Returns 0 or -errno.
 */
int fl_perfmap__proc_nspid(int pid, int *nspid);

/*
 * The real uid of a process ("Uid:" in /proc/PID/status) and when it started,
 * in ns since the epoch (CLOCK_REALTIME), from starttime in /proc/PID/stat and
 * btime in /proc/stat: seconds granularity at best, never later than the real
 * start. Returns 0 or -errno.
 */
int fl_perfmap__proc_owner(int pid, uint32_t *uid, uint64_t *start_ns);

#endif
