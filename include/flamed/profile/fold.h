/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Folding raw stacks into a profile: symbolize, name every frame, add to the profile. */
#ifndef FLAMED_FOLD_H
#define FLAMED_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flamed/sampling/sampler.h"

struct fl_profile;
struct fl_py_code;
struct fl_symbolizer;
struct fl_tracker;
struct fl_fold;

struct fl_fold_opts {
	size_t sz;			  /* sizeof(struct fl_fold_opts) */
	struct fl_symbolizer *symbolizer; /* borrowed */
	struct fl_tracker *tracker;	  /* borrowed; may be NULL */
	struct fl_profile *profile;	  /* borrowed: stacks are added to it */
	bool per_process;		  /* root frame "comm-PID" */
	bool per_thread; /* root frame "comm-PID/TID" (needs per-thread raw stacks) */
	/*
	 * C++ and Rust names demangled. Inlined functions, when the
	 * symbolizer gives them, become frames of their own, "_[i]"; with
	 * srclines every user frame ends in " (file:line)".
	 */
	bool demangle;
	bool srclines;
	/*
	 * Borrowed; NULL: none. Each stack is also added there as pprof
	 * locations: the address looked up, its mapping (file, build-id, the
	 * kernel as one mapping "[kernel.kallsyms]"), the function (shown and
	 * mangled names, source file) and what was inlined at it as lines of
	 * the one location; the root frame's parts are the labels comm, pid
	 * (per_process, per_thread) and tid (per_thread).
	 */
	struct fl_pprof *pprof;
	/*
	 * Per-service attribution: a frame before the comm frame names the
	 * stack's service, cgroup_name(cgroup_ctx, st->cgroup_id), a string
	 * read during the call only (fl_cgroups__name() fits; NULL: "[cgroup
	 * ID]"); it is also the pprof label "cgroup".
	 */
	bool per_cgroup;
	const char *(*cgroup_name)(void *ctx, uint64_t id);
	void *cgroup_ctx;
	/*
	 * Python frames (fl_raw_stack.pyips): the names of a code object of
	 * process pid (fl_sampler__py_code() fits; NULL: none are named). The
	 * frames of each run of the interpreter's loop take the place of its
	 * native frame, _PyEval_EvalFrameDefault, as "qualname (file:line)_[p]"
	 * (line: the function's first), outermost first.
	 */
	int (*py_code)(void *ctx, uint32_t pid, uint64_t code, struct fl_py_code *out);
	void *py_ctx;
};

struct fl_fold_stats {
	uint64_t samples;	  /* samples added to the profile */
	uint64_t frames;	  /* user and kernel frames of all samples added */
	uint64_t unsymbolized;	  /* ... of which had no symbol: the profile's unnamed share */
	uint64_t no_user_stack;	  /* samples of user processes whose user stack was missing */
	uint64_t kthread_samples; /* samples of kernel threads */
	/*
	 * Samples counted in the kernel under one stack whose addresses meant
	 * other code at its first and last sample (the same raw stack before
	 * and after a library was replaced at its address): named with the
	 * mappings of the last.
	 */
	uint64_t spanning_eras;
	/* Frame names cut at FL_FOLD_MAX_NAME bytes (each distinct name once, mostly). */
	uint64_t names_cut;
	/* Samples with Python frames, and of them those whose leaf Python frame is named. */
	uint64_t py_samples, py_named_leaf;
};

/* The longest frame name written, in bytes (C++ template names can be far longer). */
#define FL_FOLD_MAX_NAME 1023

/*
 * Stack naming, the folded-stack conventions of FlameGraph's stackcollapse
 * scripts: the root frame is the thread name with spaces turned into '_'
 * (plus -PID or -PID/TID; with per_cgroup, after a frame of the service),
 * then user frames outermost first, then kernel
 * frames suffixed "_[k]". A frame without a symbol is "[module]" (the
 * module's basename), "[unknown]" outside every mapping, "[anon]" in
 * anonymous executable memory, and "[kernel]_[k]" when kernel symbols are
 * hidden.
 */
int fl_fold__new(const struct fl_fold_opts *opts, struct fl_fold **ret);
/* Accepts NULL. */
void fl_fold__free(struct fl_fold *f);

/* Symbolizes st and adds st->count samples of it. Returns 0 or -ENOMEM. */
int fl_fold__add(struct fl_fold *f, const struct fl_raw_stack *st);

void fl_fold__stats(const struct fl_fold *f, struct fl_fold_stats *st);

#endif
