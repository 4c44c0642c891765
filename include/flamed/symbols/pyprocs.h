/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which processes run a CPython, and where its runtime is: for the BPF program's Python frames. */
#ifndef FLAMED_PYPROCS_H
#define FLAMED_PYPROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flamed/python_abi.h"

struct fl_tmap;
struct fl_tracker;
struct fl_pyprocs;

/* tracker (borrowed, may be NULL): the files it holds open are read rather than opened again. */
int fl_pyprocs__new(struct fl_tracker *tracker, struct fl_pyprocs **ret);
/* Accepts NULL. */
void fl_pyprocs__free(struct fl_pyprocs *p);

struct fl_pyprocs_found {
	struct fl_py_proc proc; /* with 1: what the program needs */
	const char *path;	/* the interpreter file (the mapping's path) */
	uint32_t version;	/* PY_VERSION_HEX, with 1 and -EOPNOTSUPP */
	bool first;		/* -EOPNOTSUPP: the first time this file was met */
};

/*
 * Whether process pid, whose executable mappings are maps[0..n), runs a
 * CPython: the program, or libpython, mapped from a file whose ELF symbols
 * say so (_PyRuntime, Py_Version). Each file is read once. Returns 1 (*out
 * filled), 0 (none), -EOPNOTSUPP (a CPython of a version flamed has no
 * offsets for: out->version, out->path, out->first).
 */
int fl_pyprocs__find(struct fl_pyprocs *p, uint32_t pid, const struct fl_tmap *maps, size_t n,
		     struct fl_pyprocs_found *out);

/*
 * Forgets that process pid runs a CPython (it exited, exec'd another
 * program, or was told to the BPF program and refused): true when
 * fl_pyprocs__find() had found one, so that only those are undone there.
 */
bool fl_pyprocs__drop(struct fl_pyprocs *p, uint32_t pid);

#endif
