/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The /proc/PID/maps parser. */
#ifndef FLAMED_PROCMAPS_H
#define FLAMED_PROCMAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define FL_PROT_READ 0x1
#define FL_PROT_WRITE 0x2
#define FL_PROT_EXEC 0x4

struct fl_procmap {
	uint64_t start, end; /* [start, end) */
	uint64_t pgoff;      /* file offset of start */
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	uint32_t prot;    /* FL_PROT_* */
	bool shared;      /* 's' rather than 'p' */
	bool deleted;     /* the path ended in " (deleted)", removed from path */
	const char *path; /* "" for anonymous; "[vdso]", "[stack]"...; borrowed */
};

/*
 * Parses one line ("start-end perms offset major:minor inode   path").
 * The line is modified in place (path is cut out of it, trailing newline and
 * " (deleted)" removed) and m->path points into it. Returns 0 or -EINVAL.
 */
int fl_procmaps__parse_line(char *line, struct fl_procmap *m);

/*
 * Calls fn for every line of f that parses (others are skipped and counted
 * in *nr_bad when nr_bad is not NULL). m and m->path are valid during the
 * call only. A non-zero return from fn stops and is returned; otherwise 0.
 */
typedef int (*fl_procmap_fn)(const struct fl_procmap *m, void *ctx);
int fl_procmaps__parse(FILE *f, fl_procmap_fn fn, void *ctx, uint64_t *nr_bad);

/* Opens /proc/PID/maps and parses it. Returns -ENOENT/-ESRCH when pid is gone. */
int fl_procmaps__read(int pid, fl_procmap_fn fn, void *ctx);

#endif
