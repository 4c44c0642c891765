/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Names of JIT code from a process's perf map (/tmp/perf-PID.map), read as hostile input. */
#ifndef FLAMED_PERFMAP_H
#define FLAMED_PERFMAP_H

#include <stdbool.h>
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
/*
 * Re-reads from the start of a file that shrank, per generation of its
 * cache (an interval of the daemon, a whole recording); further shrinking
 * keeps the entries as they were, counted (rereads_refused).
 */
#define FL_PERFMAP_MAX_REREADS 4
/* Entries kept per file; good lines beyond are dropped and counted. */
#define FL_PERFMAP_MAX_ENTRIES (1u << 20)
/* A map whose mtime is this much before the process started is still its own (clock granularity). */
#define FL_PERFMAP_START_SLACK_NS 1000000000ull

struct fl_budget;
struct fl_perfmap;
struct fl_perfmap_cache;

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
	/*
	 * Where the file's content is kept: maps of the same file (hard links,
	 * a file several processes write) opened with one cache share one
	 * copy, read once, charged once to its budget. NULL: a copy of its
	 * own, with no budget. Borrowed: it must outlive the map.
	 */
	struct fl_perfmap_cache *cache;
	/* Open and check the file only: it is read by the first fl_perfmap__refresh(). */
	bool defer_read;
};

/*
 * Counters of the file currently read; all but nr_reloads start again at 0
 * when the file is re-read from the start. A file shared through a cache
 * has one set, whichever map read it.
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
	uint64_t bytes;		/* memory the entries hold, as charged to the budget */
	/*
	 * Bytes of the file (up to FL_PERFMAP_MAX_FILE_SIZE) left unread
	 * because the budget had no room for the next entry; they are read
	 * when a later refresh finds room. 0 when the file was read in full.
	 */
	uint64_t bytes_over_budget;
};

/*
 * Opens and parses the perf map of a process. The file is looked up with
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, O_NOFOLLOW | O_NONBLOCK)
 * under the root directory (where openat2 is missing, "tmp" and the file are
 * opened one component at a time, following no symlink at all), and used only
 * when it is:
 *   a regular file                           else -EINVAL (FIFO, device...)
 *   owned by the process's real uid          else -EPERM (not root's for a
 *                                             user's process: a user binds
 *                                             any file over the path in a
 *                                             mount namespace of its own)
 *   modified at or after the process started
 *   (less FL_PERFMAP_START_SLACK_NS)         else -ESTALE (left by an earlier
 *                                             process with the same pid)
 * A symlink in the last component gives -ELOOP, no file -ENOENT, a process
 * that is gone -ENOENT or -ESRCH. Malformed lines are never an error (see
 * the stats). The checks are made for each map, also when its file is one
 * the cache already holds (identified by device and inode on the open fd).
 * The file stays open: it can be read after the process is gone and the
 * file removed. Returns 0 and *ret, or -errno.
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
 * With a budget, entries are kept while it has room: reading stops at the
 * first line that does not fit (stats.bytes_over_budget) and goes on from
 * there at a refresh that finds room again. A file shared through a cache
 * is read once for all its maps: this map's refresh may find the work done
 * by another's. Returns 1 when the entries changed since this map's last
 * refresh, 0 when not, or -errno (the refusals of fl_perfmap__open() for a
 * replacement), in which case the entries are left as they were.
 */
int fl_perfmap__refresh(struct fl_perfmap *m);

/*
 * The name of the code at addr, or NULL. Where entries overlap (the JIT
 * reused the memory), the one later in the file wins. Binary search. The name
 * lives until fl_perfmap__free(), a refresh that re-reads the file from the
 * start (stats.nr_reloads changes; with a cache, a refresh of any map of the
 * same file) or fl_perfmap_cache__trim(); other refreshes keep it valid.
 */
const char *fl_perfmap__find(const struct fl_perfmap *m, uint64_t addr);

void fl_perfmap__stats(const struct fl_perfmap *m, struct fl_perfmap_stats *stats);

/* Accepts NULL. */
void fl_perfmap__free(struct fl_perfmap *m);

/*
 * The perf maps read, by file (device + inode), shared by the maps opened
 * with the cache: a file is held while one of them uses it.
 */
struct fl_perfmap_cache_opts {
	size_t sz; /* sizeof(struct fl_perfmap_cache_opts) */
	/*
	 * Charged for the memory the files' entries hold, with what else
	 * charges it; NULL: no limit. Borrowed: it must outlive the cache.
	 */
	struct fl_budget *budget;
};

/* Returns 0 and *ret, or -EINVAL / -ENOMEM. */
int fl_perfmap_cache__new(const struct fl_perfmap_cache_opts *opts, struct fl_perfmap_cache **ret);
/* Accepts NULL. Every map opened with the cache must be freed first. */
void fl_perfmap_cache__free(struct fl_perfmap_cache *c);

/*
 * Drops the entries of the files no map refreshed since the call before
 * the last one (they are read again, from the start, if a map is
 * refreshed later): what is held follows what is looked up. Names from
 * those files are freed.
 */
void fl_perfmap_cache__trim(struct fl_perfmap_cache *c);

/* Counted per file, each once however many maps share it; files freed included. */
struct fl_perfmap_cache_stats {
	uint64_t files;	     /* held now */
	uint64_t opened;     /* maps opened */
	uint64_t shared;     /* ... on a file another map of the cache held: not read again */
	uint64_t files_read; /* files read (each time it is read from the start) */
	/* Files whose reading stopped at the budget, and their bytes left unread. */
	uint64_t over_budget, bytes_over_budget;
	uint64_t bytes, peak_bytes; /* memory the entries of the files held take, as charged */
	/*
	 * Files that shrank again after FL_PERFMAP_MAX_REREADS re-reads from the
	 * start in one generation of the cache (fl_perfmap_cache__trim()): not
	 * read again then, their entries kept as they were.
	 */
	uint64_t rereads_refused;
	/* The lines of all the files read (nr_reloads: of every map). */
	struct fl_perfmap_stats lines;
};
void fl_perfmap_cache__stats(const struct fl_perfmap_cache *c, struct fl_perfmap_cache_stats *st);

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
