/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cgroup v2 for per-service attribution: the mount, paths to ids, ids to service names. */
#ifndef FLAMED_CGROUPS_H
#define FLAMED_CGROUPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of a service name, its NUL included: longer ones keep their end, after "...". */
#define FL_CGROUP_NAME_MAX 128
/* cgroups --cgroup may name at once (the BPF program compares each sample with each). */
#define FL_CGROUP_MAX_TARGETS 8
/* Levels below the root walked; deeper cgroups stay unnamed ("[cgroup ID]"). */
#define FL_CGROUP_MAX_DEPTH 32
/* cgroups remembered by default (fl_cgroups_opts.max_cgroups). */
#define FL_CGROUP_DEFAULT_MAX 16384

/*
 * A cgroup to sample: its id (the inode number of its directory, which is
 * what bpf_get_current_cgroup_id() and PERF_SAMPLE_CGROUP give) and its
 * level (0 for the root, 1 for a directory in it, ...), which is where
 * bpf_get_current_ancestor_cgroup_id() looks for it in a task's ancestry.
 */
struct fl_cgroup_target {
	uint64_t id;
	uint32_t level;
};

/*
 * The cgroup v2 mount: "/sys/fs/cgroup", or "/sys/fs/cgroup/unified" on a
 * hybrid (v1 + v2) system. Returns 0 and a static string in *ret, or
 * -ENOENT when neither is a cgroup2 file system.
 */
int fl_cgroup__root(const char **ret);

/*
 * Resolves path, relative to root (NULL: fl_cgroup__root()) or absolute
 * under it, or as /proc/PID/cgroup writes it ("/system.slice/x.service"),
 * into t. Every component is opened without following symlinks. Returns 0,
 * -ENOENT (no such cgroup), -ENOTDIR (not a directory, or a symlink),
 * -EINVAL (".." in it, or too deep), -EXDEV (an absolute path under
 * /sys/fs/cgroup but outside the v2 mount), or another -errno.
 */
int fl_cgroup__resolve(const char *root, const char *path, struct fl_cgroup_target *t);

/*
 * The service name of the cgroup at relpath (relative to the v2 mount,
 * slashes around it ignored; "" is the root): a systemd unit
 * ("x.service", ".scope", ".slice", ".socket") by its own name, a
 * container by its engine and the first 12 hex digits of its id
 * ("docker-<64 hex>.scope" and "docker/<64 hex>": "docker-ID12";
 * "cri-containerd-ID.scope": "containerd-ID12"; "libpod-ID.scope":
 * "podman-ID12"), the root as "/", anything else as relpath. Bytes that
 * folded stacks or XML cannot carry as they are (controls, ';', space,
 * bytes past ASCII) become '_'. Written to buf (len > 4), cut to len - 1
 * bytes by keeping the end after "...". Returns the length written.
 */
size_t fl_cgroup__service_name(const char *relpath, char *buf, size_t len);

/*
 * A cache of the cgroup tree: id -> service name and parent. Filled by a
 * walk of the mount at creation and again when an id is not found (at most
 * every 100 ms); the walk follows no symlink and stops at
 * FL_CGROUP_MAX_DEPTH levels and max_cgroups directories. Ids never found
 * (cgroups removed before a walk saw them; ids are never reused) are
 * remembered as such, a bounded number of them.
 */
struct fl_cgroups;

struct fl_cgroups_opts {
	size_t sz;	    /* sizeof(struct fl_cgroups_opts) */
	const char *root;   /* the directory to walk (NULL: fl_cgroup__root()); borrowed */
	size_t max_cgroups; /* 0: FL_CGROUP_DEFAULT_MAX */
};

/* Walks the tree once. Returns 0, -ENOENT (no cgroup v2 mount), -ENOMEM or -errno opening it. */
int fl_cgroups__new(const struct fl_cgroups_opts *opts, struct fl_cgroups **ret);
/* Accepts NULL. */
void fl_cgroups__free(struct fl_cgroups *c);

/*
 * The service name of cgroup id (fl_cgroup__service_name()), or "[cgroup
 * ID]" for an id not found. Never NULL; the string lives until the next
 * call on c (a walk replaces the table): copy it.
 */
const char *fl_cgroups__name(struct fl_cgroups *c, uint64_t id);

/*
 * Whether cgroup id is one of t[0..n) or below one: 1, 0 (no, or an id
 * never found: a cgroup gone before a walk could place it).
 */
int fl_cgroups__under(struct fl_cgroups *c, uint64_t id, const struct fl_cgroup_target *t,
		      size_t n);

/* Walks done so far (the first included), and cgroups known after the last. */
void fl_cgroups__stats(const struct fl_cgroups *c, uint64_t *walks, size_t *known);

#endif
