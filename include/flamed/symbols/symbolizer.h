/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The symbolizer: (pid, address) batches in, one name or one reason per address out. */
#ifndef FLAMED_SYMBOLIZER_H
#define FLAMED_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fl_budget;
struct fl_src_frame;
struct fl_tmap;
struct fl_tracker;
struct fl_symbolizer;

struct fl_symbolizer_opts {
	size_t sz; /* sizeof(struct fl_symbolizer_opts) */
	/* Mappings of user processes; borrowed, must outlive the symbolizer. */
	struct fl_tracker *tracker;
	/* Kernel symbols file; NULL means /proc/kallsyms. */
	const char *kallsyms_path;
	bool no_kernel; /* do not load kernel symbols at all */
	/*
	 * Read all of /proc/kallsyms instead of naming kernel addresses one by
	 * one through a BPF program (the default when BPF works: much cheaper).
	 */
	bool no_bpf;
	/*
	 * From the DWARF of the mapped files (when they have it): the
	 * functions inlined at an address (fl_sym.inl), and source lines
	 * (fl_sym.file/line and each inlined frame's).
	 */
	bool inlines;
	bool srclines;
	/*
	 * The most memory the files read may hold (symbol tables, the DWARF
	 * sections kept for inlines and source lines, and the entries of
	 * perf maps), in bytes; 0: FL_SYM_DEFAULT_CACHE. A file is read only
	 * when what it takes fits in what is left, as its headers say before
	 * it is read (compressed DWARF at its inflated size): else its frames
	 * are named by the file, and fl_symbolizer__cache_stats() counts it;
	 * DWARF that does not fit is not read (no inlined frames or lines
	 * from that file), its symbols still are. Perf maps may take
	 * 1 / FL_SYM_JIT_SHARE of it, so that the binaries' symbols keep the
	 * rest whatever the maps hold; a map is read up to the first entry
	 * with no room (fl_symbolizer__jit_stats()).
	 */
	uint64_t max_cache_bytes;
	/*
	 * A budget the cache's is part of, charged too (what others charge,
	 * the DWARF unwinder's CFI, leaves that much less room); NULL: none.
	 * Borrowed: it must outlive the symbolizer.
	 */
	struct fl_budget *budget;
	/*
	 * Debug files fetched by build-id for files with no DWARF here
	 * (fl_debuginfo_opts.debuginfod). A file looked up while its fetch
	 * was going is read again, once, the first time it is met after
	 * the fetcher's generation moved on. Borrowed; NULL: none.
	 */
	struct fl_debuginfod *debuginfod;
};

#define FL_SYM_DEFAULT_CACHE (1024ull << 20)
#define FL_SYM_JIT_SHARE 2

enum fl_sym_reason {
	FL_SYM_OK,	      /* name is the function */
	FL_SYM_UNMAPPED,      /* no mapping holds the address: "[unknown]" */
	FL_SYM_NO_SYMBOL,     /* in module, but no symbol covers it: "[module]" */
	FL_SYM_NO_FILE,	      /* module file unreadable, not ELF or replaced: "[module]" */
	FL_SYM_ANON,	      /* anonymous executable memory (JIT without map) */
	FL_SYM_KERNEL_HIDDEN, /* kernel addresses hidden by kptr_restrict: "[kernel]" */
};

struct fl_sym {
	/* The function name for FL_SYM_OK, else NULL. */
	const char *name;
	/* Basename of the module ("libc.so.6", "ext4", "vmlinux"), or NULL. */
	const char *module;
	enum fl_sym_reason reason;
	/* name comes from the process's perf map (JIT code): "_[j]". */
	bool jit;
	/*
	 * User addresses of files with DWARF (read for inlines or srclines):
	 * where in name the address is (NULL/0: unknown).
	 */
	const char *file;
	int line;
	/* ... and where name is defined (its first line), from DWARF too (NULL/0: unknown). */
	const char *decl_file;
	int decl_line;
	/* The GNU build-id of the module's file (build_id_len 0: none or not known). */
	const uint8_t *build_id;
	size_t build_id_len;
	/*
	 * With inlines: the functions inlined at the address, each inside the
	 * one before, name's callee first (their names are linkage names when
	 * DWARF has them, like name). Valid until the next call.
	 */
	const struct fl_src_frame *inl;
	size_t nr_inl;
};

/*
 * Kernel symbols are set up on first use (fl_symbolizer__kernel() or
 * fl_symbolizer__kernel_hidden()). A kallsyms that cannot be read or hides
 * its addresses is not an error: kernel frames then come back
 * FL_SYM_KERNEL_HIDDEN. Returns 0 or -ENOMEM.
 */
int fl_symbolizer__new(const struct fl_symbolizer_opts *opts, struct fl_symbolizer **ret);
/* Accepts NULL. */
void fl_symbolizer__free(struct fl_symbolizer *s);

/*
 * Symbolizes n user addresses of process pid, in its latest mappings, into
 * out[0..n), in order. The
 * addresses are looked up as given: for a return address in a stack, pass
 * ip - 1 so that a call at the very end of a function is named by its
 * caller (fl_fold does). Each ELF file is read once per symbolizer however
 * many processes map it (cached by device and inode). Names live until
 * fl_symbolizer__free(). Returns 0 or -ENOMEM.
 */
int fl_symbolizer__user(struct fl_symbolizer *s, uint32_t pid, const uint64_t *ips, size_t n,
			struct fl_sym *out);

/*
 * Symbolizes one user address in the mapping tm of process pid that held
 * it (from fl_tracker__find_at()): the result depends only on tm's file
 * and the address's offset in it. The file is the one the tracker holds
 * open, else tm's path if it still names the mapped inode, else
 * /proc/pid/map_files while pid lives. Returns 0 or -ENOMEM.
 */
int fl_symbolizer__in_map(struct fl_symbolizer *s, uint32_t pid, const struct fl_tmap *tm,
			  uint64_t ip, struct fl_sym *out);

/*
 * Process pid runs JIT code: its perf map (/tmp/perf-PID.map as the process
 * sees it: under its root, with its namespace's pid) names the addresses
 * of its anonymous executable memory. Only noted here, which is cheap
 * enough for every process of the start-up scan: the file is opened and
 * checked by fl_symbolizer__jit_open_new() (to be called soon, while the
 * process lives: the checks need /proc/PID), tried again by
 * fl_symbolizer__jit_retry() while the JIT has not written it yet, and
 * read only when one of the process's JIT addresses is to be named, then
 * re-read as it grows, until forgotten. Processes whose maps are one file
 * (hard links, a shared file) share one copy of it, read once. Returns 0
 * or -ENOMEM; a map that cannot be used is not an error (debug message).
 */
int fl_symbolizer__jit_process(struct fl_symbolizer *s, uint32_t pid);
/* Opens (without reading) the perf maps of the processes noted since the last call. */
void fl_symbolizer__jit_open_new(struct fl_symbolizer *s);
/* The same, then tries again to open the perf maps of JIT processes that had none yet. */
void fl_symbolizer__jit_retry(struct fl_symbolizer *s);
/* JIT processes and their perf maps so far, forgotten processes' included. */
struct fl_symbolizer_jit_stats {
	uint64_t processes; /* noted by fl_symbolizer__jit_process() */
	uint64_t opened;    /* perf maps found and opened (not yet read) */
	uint64_t shared;    /* ... that were a file another process's map had open */
	/* Perf map files read (each once however many processes share it), and their lines. */
	uint64_t maps;
	uint64_t entries;
	uint64_t malformed;	/* bad hex, zero size, overflow, no name, control characters */
	uint64_t too_long;	/* lines over FL_PERFMAP_MAX_LINE */
	uint64_t over_max;	/* entries past FL_PERFMAP_MAX_ENTRIES */
	uint64_t bytes_ignored; /* past FL_PERFMAP_MAX_FILE_SIZE */
	/* Memory their entries take now and at most, and may take (a part of the cache's). */
	uint64_t bytes, peak_bytes, max_bytes;
	/* Maps whose reading stopped at max_bytes (or the cache's cap), and their bytes left unread. */
	uint64_t over_budget, bytes_over_budget;
	uint64_t rereads_refused; /* maps that shrank too often: kept as they were (perfmap.h) */
};
void fl_symbolizer__jit_stats(const struct fl_symbolizer *s, struct fl_symbolizer_jit_stats *st);

/* Drops what is kept for these processes (their perf maps). */
void fl_symbolizer__forget(struct fl_symbolizer *s, const uint32_t *pids, size_t n);

/*
 * Frees the files (symbols, debug info, the entries of perf maps) not
 * looked up since the call before the last one, and those left unread at
 * the cache's cap (to be tried again): a long run keeps what its processes
 * use, not every file the machine ever ran. Names given out before are freed with their
 * file: call it when no name from before the last call is still held (the
 * daemon: after each snapshot, with a new fold).
 */
void fl_symbolizer__trim(struct fl_symbolizer *s);

/*
 * The files read for symbols: their memory now and at most (perf maps'
 * included: one budget), and those left unread at the cap.
 */
struct fl_symbolizer_cache_stats {
	uint64_t bytes, peak_bytes, max_bytes;
	uint64_t files;		 /* held now */
	uint64_t files_not_read; /* met while the cache was full (each time) */
};
void fl_symbolizer__cache_stats(const struct fl_symbolizer *s,
				struct fl_symbolizer_cache_stats *st);

/* The same for kernel addresses; one batch costs at most a few syscalls. */
int fl_symbolizer__kernel(struct fl_symbolizer *s, const uint64_t *ips, size_t n,
			  struct fl_sym *out);

/* True when kernel addresses are hidden or kallsyms is unreadable (sets up kernel symbols). */
bool fl_symbolizer__kernel_hidden(struct fl_symbolizer *s);

#endif
