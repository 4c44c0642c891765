/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The in-kernel unwinder's tables (--call-graph kernel-dwarf): which files
 * each process maps, and each file's unwind table, in the BPF maps that
 * bpf/unwind.bpf.h reads. Private to lib/ (the BPF sampler owns one).
 */
#ifndef FLAMED_KTABLES_H
#define FLAMED_KTABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flamed/sampling/tracker.h"
#include "flamed/unwind_abi.h"

/*
 * Tables are compiled (lib/unwinding/cfitable.c) by a thread of their own,
 * one file at a time, when the walker first needs a file (it asks through
 * a ring buffer; with lazy off, as soon as a process maps it): sampling
 * never waits for them, and a frame in a file whose table is not loaded
 * yet is walked with frame pointers, and counted. A file's table is shared
 * by every process mapping it (by device and inode; the vdso is one image
 * for all). Tables are copied into chunks, BPF arrays of many files' rows
 * each (an array of maps costs a synchronize_rcu() per update: one per
 * chunk, not per file). Their memory is bounded by max_bytes: a file whose
 * table does not fit gets none (frame pointers for its code).
 */
struct fl_ktables;

struct fl_ktables_opts {
	size_t sz;     /* sizeof(struct fl_ktables_opts) */
	int tables_fd; /* the BPF maps of bpf/unwind.bpf.h */
	int table_loc_fd;
	int procs_fd;
	int procs_few_fd; /* processes with at most FL_UW_FEW_MAPS mappings */
	int asked_fd; /* keys the walker asked for (FL_UW_ASKED_FILE): cleared when answered */
	int file_ids_fd; /* (device, inode) -> file id, for the walker's own mapping lookups */
	int win_loc_fd;	 /* windows of big files -> their tables (FL_UW_WIN_KEY()) */
	/*
	 * The walker's uw_epoch (its global data, mapped): bumped when a
	 * chunk is freed, so that rows cached by location miss. NULL: none.
	 */
	uint32_t *epoch;
	uint64_t max_bytes; /* table memory (kernel and ours), 0: FL_KTABLES_DEFAULT_BYTES */
	/*
	 * Build a file's table only when the walker first needs it
	 * (fl_ktables__want()), not when a process maps it: a whole machine
	 * maps many files whose code is never sampled (-a).
	 */
	bool lazy;
	/* Files with this much code or more are loaded by windows; 0: 4 MiB (tests set less). */
	uint64_t windowed_min_code;
	/*
	 * The program deletes a process's entry from procs and procs_few when
	 * it exits (uw_on_exit, attached before any fork is copied):
	 * fl_ktables__set_proc(pid, n = 0) then deletes only what it pushed,
	 * not for the many processes that fork, exec and exit between two
	 * reads of the tracker and were never pushed.
	 */
	bool exit_deletes;
};

#define FL_KTABLES_DEFAULT_BYTES ((uint64_t)256 << 20)

int fl_ktables__new(const struct fl_ktables_opts *opts, struct fl_ktables **ret);
/* Accepts NULL. Stops the thread; the BPF maps keep what was loaded (they go with the program). */
void fl_ktables__free(struct fl_ktables *kt);

/*
 * The executable mappings of process pid are now maps[0..n) (sorted by
 * start, as the tracker gives them); n == 0: it is gone. Tables of files
 * not seen before are queued. Returns 0 or -errno (the process then has no
 * mappings in the kernel: frame pointers for its samples).
 */
int fl_ktables__set_proc(struct fl_ktables *kt, uint32_t pid, const struct fl_tmap *maps, size_t n);

/*
 * The walker needs file_id's table (it asked through uw_wants): queued now
 * if it was waiting for that (lazy). win: the window of the pc that
 * needed it (FL_KTABLES_NO_WINDOW: none), built with it should the file be
 * a big one, whose table is loaded by windows (unwind_abi.h).
 */
void fl_ktables__want(struct fl_ktables *kt, uint32_t file_id, uint32_t win);

#define FL_KTABLES_NO_WINDOW UINT32_MAX

/* The walker needs window win of windowed file file_id: queued ahead of whole files. */
void fl_ktables__want_window(struct fl_ktables *kt, uint32_t file_id, uint32_t win);
/*
 * The walker met process pid before its mappings were in the kernel (they
 * are now, the caller read the tracker first): the tables of all its files
 * are wanted.
 */
void fl_ktables__want_proc(struct fl_ktables *kt, uint32_t pid);

/* Builds the tables of the C library and dynamic loader flamed runs on, which most programs map. */
void fl_ktables__prefetch_self(struct fl_ktables *kt);

/*
 * Unloads the tables of files that no process has mapped since the
 * previous call (the daemon calls it every interval; record now and then),
 * giving their memory back.
 */
void fl_ktables__trim(struct fl_ktables *kt);

/*
 * The row of the table loaded for file offset off of the file mapped at m
 * (its window's, for a windowed file), copied into *row: 0, or -ENOENT (no
 * table or window loaded, no row, or a row that is no rule). The caller's
 * thread, as the other calls; a stack copy is unwound with what the walker
 * would have used.
 */
int fl_ktables__row(struct fl_ktables *kt, const struct fl_tmap *m, uint64_t off, bool now,
		    struct fl_uw_row *row);
/*
 * (-EAGAIN: the file's table, or the window of a big file, not built yet,
 * queued now; ask again once it is. -ENODATA: the table has no CFI for off.)
 * now: a window not built yet is built here, at once, from the CFI held for
 * it (the rows of one window, held for the next calls), and not waited for:
 * for a stack copy that waited long enough, which would otherwise have
 * libdw read the big file's CFI whole. Only a file whose table is not built
 * at all still gives -EAGAIN.
 */

/*
 * The layout of a table in the kernel's pages (unwind_abi.h): rows[0..n),
 * n at most FL_UW_TABLE_MAX_ROWS, laid out in FL_UW_TABLE_PAGES(n) pages;
 * and the row covering off of a table so laid out, found as the walker
 * finds it (NULL: off is before its first row).
 */
void fl_ktables_layout(const struct fl_uw_row *rows, uint32_t n, union fl_uw_page *pages);
const struct fl_uw_row *fl_ktables_find(const union fl_uw_page *pages, uint32_t n, uint64_t off);

/* Whether tables are queued or being built. */
bool fl_ktables__busy(struct fl_ktables *kt);

/* Waits until the queue is empty (tests, and -v reports at the end); ms: at most that long. */
void fl_ktables__settle(struct fl_ktables *kt, unsigned int ms);

struct fl_ktables_stats {
	uint64_t files;		/* files seen */
	uint64_t deferred;	/* ... whose table no sample needed yet (lazy) */
	uint64_t loaded;	/* ... with a table in the kernel now */
	uint64_t no_cfi;	/* ... without: no usable CFI, unreadable or not ELF */
	uint64_t over_budget;	/* ... without: it did not fit in max_bytes */
	uint64_t pending;	/* ... queued or being built */
	uint64_t unloaded;	/* tables dropped by trim */
	uint64_t bytes;		/* kernel memory of the tables' chunks now */
	uint64_t src_bytes;	/* CFI held for windowed files (within max_bytes, with bytes) */
	uint64_t windowed;	/* files loaded by windows (in loaded) */
	uint64_t windows;	/* ... windows with rows in the kernel now */
	uint64_t windows_now;	/* windows built at once for fl_ktables__row(now) */
	uint64_t peak_bytes;	/* the most at once */
	uint64_t rows;		/* rows loaded now */
	uint64_t code_bytes;	/* bytes of code the loaded tables cover */
	uint64_t build_ns;	/* thread time spent compiling and loading */
	uint64_t first_load_ns; /* CLOCK_MONOTONIC of the first table loaded (0: none) */
	uint64_t last_load_ns;	/* ... of the last */
	uint64_t procs;		/* processes with mappings in the kernel now */
	uint64_t procs_failed;	/* updates of a process's mappings the kernel refused */
	uint64_t maps_dropped;	/* mappings left out: a process with more than FL_UW_MAX_MAPS */
};

void fl_ktables__stats(struct fl_ktables *kt, struct fl_ktables_stats *st);

#endif
