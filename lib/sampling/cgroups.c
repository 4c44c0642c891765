// SPDX-License-Identifier: GPL-2.0-or-later
/* cgroup v2: finding the mount, resolving --cgroup paths, naming the services samples ran in. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/sampling/cgroups.h"
#include "common/hash.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* Ids never found, remembered at most (then forgotten all at once). */
#define CG_MAX_MISSING 4096
/* A walk for an unknown id at most this often (ns). */
#define CG_RESCAN_NS (100 * 1000000ULL)

static bool is_cgroup2(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && (unsigned long)sf.f_type == CGROUP2_SUPER_MAGIC;
}

int fl_cgroup__root(const char **ret)
{
	/* Unified first; the hybrid layout puts v2 under v1's tmpfs. */
	static const char *const candidates[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};

	for (size_t i = 0; i < ARRAY_SIZE(candidates); i++) {
		if (is_cgroup2(candidates[i])) {
			*ret = candidates[i];
			return 0;
		}
	}
	return -ENOENT;
}

/* The part of path below root: NULL when path is absolute under /sys/fs/cgroup but not root. */
static const char *below_root(const char *root, const char *path)
{
	size_t rl = strlen(root);

	if (!strncmp(path, root, rl) && (path[rl] == '/' || path[rl] == '\0'))
		return path + rl;
	/* Hybrid: a v1 hierarchy's path is not a v2 cgroup. */
	if (!strncmp(path, "/sys/fs/cgroup/", 15) || !strcmp(path, "/sys/fs/cgroup"))
		return NULL;
	/* As /proc/PID/cgroup writes it: relative to the mount, with a leading '/'. */
	return path;
}

int fl_cgroup__resolve(const char *root, const char *path, struct fl_cgroup_target *t)
{
	_cleanup_free_ char *copy = NULL;
	_cleanup_close_ int fd = -1;
	char *save = NULL, *comp;
	uint32_t level = 0;
	const char *rel;
	struct stat st;
	int err;

	if (!path || !t)
		return -EINVAL;
	if (!root) {
		err = fl_cgroup__root(&root);
		if (err)
			return err;
	}
	rel = below_root(root, path);
	if (!rel)
		return -EXDEV;
	copy = strdup(rel);
	if (!copy)
		return -ENOMEM;
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		int next;

		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..") || level >= FL_CGROUP_MAX_DEPTH)
			return -EINVAL;
		/* A symlink (ELOOP) is no cgroup: cgroupfs has none, a tmpfs above it may. */
		next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return errno == ELOOP ? -ENOTDIR : -errno;
		close(fd);
		fd = next;
		level++;
	}
	if (fstat(fd, &st) < 0)
		return -errno;
	t->id = (uint64_t)st.st_ino;
	t->level = level;
	return 0;
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return n > 0;
}

static bool has_suffix(const char *s, size_t n, const char *suffix)
{
	size_t sl = strlen(suffix);

	return n >= sl && !memcmp(s + n - sl, suffix, sl);
}

static bool is_unit(const char *s, size_t n)
{
	return has_suffix(s, n, ".service") || has_suffix(s, n, ".scope") ||
	       has_suffix(s, n, ".slice") || has_suffix(s, n, ".socket");
}

/*
 * A container's scope, "PREFIXID.scope" with a hex id of at least 12
 * digits (exactly 64 when full is set): the id's start in *id.
 */
static bool is_engine_scope(const char *s, size_t n, const char *prefix, bool full, const char **id)
{
	size_t pl = strlen(prefix), idl;

	if (n <= pl + 6 || memcmp(s, prefix, pl) || !has_suffix(s, n, ".scope"))
		return false;
	idl = n - pl - 6;
	if ((full && idl != 64) || idl < 12 || !is_hex(s + pl, idl))
		return false;
	*id = s + pl;
	return true;
}

/* The name's bytes, made safe for folded stacks and XML. */
static bool unsafe_byte(unsigned char c)
{
	return c < 0x20 || c >= 0x7f || c == ';' || c == ' ';
}

/* Writes src[0..n) to buf safely, cut to len - 1 bytes by keeping its end after "...". */
static size_t put_safe(char *buf, size_t len, const char *src, size_t n)
{
	size_t o = 0;

	if (n > len - 1) {
		memcpy(buf, "...", 3);
		o = 3;
		src += n - (len - 1 - 3);
		n = len - 1 - 3;
	}
	for (size_t i = 0; i < n; i++)
		buf[o++] = unsafe_byte((unsigned char)src[i]) ? '_' : src[i];
	buf[o] = '\0';
	return o;
}

size_t fl_cgroup__service_name(const char *relpath, char *buf, size_t len)
{
	const char *p = relpath ? relpath : "", *last, *id;
	size_t n, ln, pl = 0;
	const char *parent = NULL;
	char tmp[32];

	if (!buf || len <= 4)
		return 0;
	while (*p == '/')
		p++;
	n = strlen(p);
	while (n && p[n - 1] == '/')
		n--;
	if (!n)
		return put_safe(buf, len, "/", 1);
	last = p + n;
	while (last > p && last[-1] != '/')
		last--;
	ln = (size_t)(p + n - last);
	if (last > p) {
		const char *pe = last - 1;

		/* Slashes between the two components: "a//b" is "a/b". */
		while (pe > p && pe[-1] == '/')
			pe--;
		parent = pe;
		while (parent > p && parent[-1] != '/')
			parent--;
		pl = (size_t)(pe - parent);
	}
	/* Docker with the cgroupfs driver: "/docker/ID". */
	if (parent && pl == 6 && !memcmp(parent, "docker", 6) && ln == 64 && is_hex(last, 64)) {
		snprintf(tmp, sizeof(tmp), "docker-%.12s", last);
		return put_safe(buf, len, tmp, strlen(tmp));
	}
	if (is_engine_scope(last, ln, "docker-", true, &id)) {
		snprintf(tmp, sizeof(tmp), "docker-%.12s", id);
		return put_safe(buf, len, tmp, strlen(tmp));
	}
	if (is_engine_scope(last, ln, "cri-containerd-", false, &id)) {
		snprintf(tmp, sizeof(tmp), "containerd-%.12s", id);
		return put_safe(buf, len, tmp, strlen(tmp));
	}
	if (is_engine_scope(last, ln, "libpod-", false, &id)) {
		snprintf(tmp, sizeof(tmp), "podman-%.12s", id);
		return put_safe(buf, len, tmp, strlen(tmp));
	}
	if (is_unit(last, ln))
		return put_safe(buf, len, last, ln);
	return put_safe(buf, len, p, n);
}

/* ---- the cache ---- */

struct cg_entry {
	uint64_t id;	 /* 0: an empty slot (no cgroup has id 0) */
	uint64_t parent; /* 0 for the root */
	char name[FL_CGROUP_NAME_MAX];
};

struct fl_cgroups {
	char *root;
	size_t max;
	struct cg_entry *tab; /* open addressing, cap a power of two, at most half full */
	size_t cap, nr;
	uint64_t *missing; /* ids a walk begun after they were asked for did not find */
	size_t cap_missing, nr_missing;
	uint64_t last_walk_ns;
	uint64_t walks;
	char path[PATH_MAX]; /* the walk's current path, relative to root */
	char unknown[40];    /* "[cgroup ID]" */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static size_t slot_of(const uint64_t *ids, size_t stride, size_t cap, uint64_t id)
{
	size_t i = fl_hash_mix64(id) & (cap - 1);

	for (;;) {
		uint64_t at = *(const uint64_t *)((const char *)ids + i * stride);

		if (!at || at == id)
			return i;
		i = (i + 1) & (cap - 1);
	}
}

static struct cg_entry *find(const struct fl_cgroups *c, uint64_t id)
{
	struct cg_entry *e;

	if (!id || !c->tab)
		return NULL;
	e = &c->tab[slot_of(&c->tab[0].id, sizeof(*e), c->cap, id)];
	return e->id == id ? e : NULL;
}

static bool is_missing(const struct fl_cgroups *c, uint64_t id)
{
	if (!c->missing)
		return false;
	return c->missing[slot_of(c->missing, sizeof(uint64_t), c->cap_missing, id)] == id;
}

static void add_missing(struct fl_cgroups *c, uint64_t id)
{
	if (!c->missing) {
		c->cap_missing = 2 * CG_MAX_MISSING;
		c->missing = calloc(c->cap_missing, sizeof(uint64_t));
		if (!c->missing)
			return; /* only remembering is lost: a later miss walks again */
	}
	if (c->nr_missing >= CG_MAX_MISSING) {
		memset(c->missing, 0, c->cap_missing * sizeof(uint64_t));
		c->nr_missing = 0;
	}
	c->missing[slot_of(c->missing, sizeof(uint64_t), c->cap_missing, id)] = id;
	c->nr_missing++;
}

/* Adds the cgroup whose path (relative) is c->path. Returns 0, or -ENOSPC at the cap. */
static int add_entry(struct fl_cgroups *c, uint64_t id, uint64_t parent)
{
	struct cg_entry *e;

	if (!id)
		return 0;
	if (c->nr >= c->max)
		return -ENOSPC;
	e = &c->tab[slot_of(&c->tab[0].id, sizeof(*e), c->cap, id)];
	if (e->id == id)
		return 0;
	e->id = id;
	e->parent = parent;
	fl_cgroup__service_name(c->path, e->name, sizeof(e->name));
	c->nr++;
	return 0;
}

/* Walks the directory fd (c->path, its id) and what is below it, depth levels down at most. */
static int walk_dir(struct fl_cgroups *c, int fd, uint64_t id, unsigned int depth)
{
	size_t plen = strlen(c->path);
	struct dirent *de;
	DIR *d;
	int err = 0, dfd;

	if (depth >= FL_CGROUP_MAX_DEPTH)
		return 0;
	dfd = dup(fd);
	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	while (!err && (de = readdir(d))) {
		struct stat st;
		int sub;

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (plen + 1 + strlen(de->d_name) + 1 > sizeof(c->path))
			continue; /* unnamable here: its samples say "[cgroup ID]" */
		sub = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue; /* gone meanwhile, or not a directory */
		if (fstat(sub, &st) < 0) {
			close(sub);
			continue;
		}
		snprintf(c->path + plen, sizeof(c->path) - plen, "%s%s", plen ? "/" : "",
			 de->d_name);
		err = add_entry(c, (uint64_t)st.st_ino, id);
		if (!err)
			err = walk_dir(c, sub, (uint64_t)st.st_ino, depth + 1);
		c->path[plen] = '\0';
		close(sub);
	}
	closedir(d);
	return err;
}

/* A new table from a walk of the whole tree. The old one goes, success or not. */
static int walk(struct fl_cgroups *c)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int err;

	c->last_walk_ns = mono_ns();
	c->walks++;
	memset(c->tab, 0, c->cap * sizeof(*c->tab));
	c->nr = 0;
	fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	c->path[0] = '\0';
	err = add_entry(c, (uint64_t)st.st_ino, 0);
	if (!err)
		err = walk_dir(c, fd, (uint64_t)st.st_ino, 0);
	if (err == -ENOSPC) {
		fl_pr_debug("cgroups: more than %zu cgroups: the others stay unnamed\n", c->max);
		err = 0;
	}
	fl_pr_debug("cgroups: %zu cgroups under %s\n", c->nr, c->root);
	return err;
}

int fl_cgroups__new(const struct fl_cgroups_opts *opts, struct fl_cgroups **ret)
{
	const char *root = opts && opts->root ? opts->root : NULL;
	struct fl_cgroups *c;
	int err;

	if (!ret)
		return -EINVAL;
	if (!root) {
		err = fl_cgroup__root(&root);
		if (err)
			return err;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->max = opts && opts->max_cgroups ? opts->max_cgroups : FL_CGROUP_DEFAULT_MAX;
	c->cap = 16;
	while (c->cap < 2 * c->max)
		c->cap <<= 1;
	c->root = strdup(root);
	c->tab = calloc(c->cap, sizeof(*c->tab));
	if (!c->root || !c->tab) {
		fl_cgroups__free(c);
		return -ENOMEM;
	}
	err = walk(c);
	if (err) {
		fl_cgroups__free(c);
		return err;
	}
	*ret = c;
	return 0;
}

void fl_cgroups__free(struct fl_cgroups *c)
{
	if (!c)
		return;
	free(c->root);
	free(c->tab);
	free(c->missing);
	free(c);
}

/* The entry of id, walking the tree again for one not known (see the header). */
static const struct cg_entry *lookup(struct fl_cgroups *c, uint64_t id)
{
	const struct cg_entry *e = find(c, id);
	uint64_t asked;

	if (e || !id || is_missing(c, id))
		return e;
	asked = mono_ns();
	if (asked - c->last_walk_ns < CG_RESCAN_NS)
		return NULL; /* asked again soon: not known yet, not given up on */
	if (walk(c))
		return NULL;
	e = find(c, id);
	/* Not there for a walk begun after it was asked for: gone, and ids are never reused. */
	if (!e)
		add_missing(c, id);
	return e;
}

const char *fl_cgroups__name(struct fl_cgroups *c, uint64_t id)
{
	const struct cg_entry *e = lookup(c, id);

	if (e)
		return e->name;
	snprintf(c->unknown, sizeof(c->unknown), "[cgroup %" PRIu64 "]", id);
	return c->unknown;
}

int fl_cgroups__under(struct fl_cgroups *c, uint64_t id, const struct fl_cgroup_target *t, size_t n)
{
	const struct cg_entry *e = lookup(c, id);

	/* A parent is in the table whenever its child is: the walk goes down. */
	for (int depth = 0; e && depth <= FL_CGROUP_MAX_DEPTH; depth++) {
		for (size_t i = 0; i < n; i++)
			if (t[i].id == e->id)
				return 1;
		e = find(c, e->parent);
	}
	return 0;
}

void fl_cgroups__stats(const struct fl_cgroups *c, uint64_t *walks, size_t *known)
{
	*walks = c->walks;
	*known = c->nr;
}
