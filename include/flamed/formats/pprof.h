/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pprof writer: samples as stacks of locations, in gzipped profile.proto. */
#ifndef FLAMED_PPROF_H
#define FLAMED_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fl_profile;
struct fl_pprof;

/*
 * A pprof profile being built. Strings, functions and mappings are interned
 * (each distinct one stored once); locations are added as given (their
 * caller caches them: one per distinct code address); samples of the same
 * locations and labels add up. Ids are dense from 1, pprof's convention.
 */
struct fl_pprof_opts {
	size_t sz; /* sizeof(struct fl_pprof_opts) */
	/*
	 * One sample is this many CPU nanoseconds (1e9 / frequency): then the
	 * samples have two values, samples/count and cpu/nanoseconds; 0:
	 * samples/count only.
	 */
	int64_t period_ns;
};

int fl_pprof__new(const struct fl_pprof_opts *opts, struct fl_pprof **ret);
/* Accepts NULL. */
void fl_pprof__free(struct fl_pprof *p);

/* When the samples began (Unix time, ns) and for how long they were taken. */
void fl_pprof__set_time(struct fl_pprof *p, int64_t time_ns, int64_t duration_ns);

/*
 * The mapping of a file at [start, limit) from file offset offset, with its
 * GNU build-id (bid_len bytes, 0: none). The same path and start give the
 * same id. Returns 0 or -ENOMEM.
 */
int fl_pprof__mapping(struct fl_pprof *p, const char *path, const uint8_t *bid, size_t bid_len,
		      uint64_t start, uint64_t limit, uint64_t offset, uint32_t *id);

/*
 * A function: the name shown, the name in the binary (NULL: the same), its
 * source file (NULL: unknown) and the line it starts at (0: unknown). The
 * same name, system name and file give the same id (and keep the first
 * start line). Returns 0 or -ENOMEM.
 */
int fl_pprof__function(struct fl_pprof *p, const char *name, const char *system_name,
		       const char *file, int64_t start_line, uint32_t *id);

struct fl_pprof_line {
	uint32_t function;
	int64_t line; /* 0: unknown */
};

/*
 * A new location at address in mapping (0: none), with n lines, innermost
 * (inlined) function first, the function the code is in last (pprof's
 * order). Returns 0 or -ENOMEM.
 */
int fl_pprof__location(struct fl_pprof *p, uint32_t mapping, uint64_t address,
		       const struct fl_pprof_line *lines, size_t n, uint32_t *id);

/* What a sample is labelled with; NULL / -1: no such label. */
struct fl_pprof_labels {
	const char *comm;   /* "comm" */
	const char *cgroup; /* "cgroup" */
	int64_t pid, tid;   /* "pid", "tid" */
};

/*
 * Adds count samples of the stack locs[0..n) (leaf first, pprof's order)
 * with labels l (NULL: none). Returns 0, -EINVAL (count 0) or -ENOMEM.
 */
int fl_pprof__add(struct fl_pprof *p, const uint32_t *locs, size_t n,
		  const struct fl_pprof_labels *l, uint64_t count);

/* Samples added, and the distinct (stack, labels) among them. */
uint64_t fl_pprof__total(const struct fl_pprof *p);
size_t fl_pprof__nr_samples(const struct fl_pprof *p);

/*
 * Adds every stack of prof, names only (folded stacks have nothing more):
 * each frame a location with one function of that name and no mapping,
 * except that frames ending in "_[i]" become inlined lines (without the
 * suffix) of the location before them, pprof's way; flamed's pprof reader
 * gives back the same stacks. Returns 0 or -ENOMEM.
 */
int fl_pprof__add_profile(struct fl_pprof *p, const struct fl_profile *prof);

/* Writes the profile, gzipped, to f. Returns 0, -EIO (f failed) or -ENOMEM. */
int fl_pprof__write(const struct fl_pprof *p, FILE *f);

#endif
