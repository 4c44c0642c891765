// SPDX-License-Identifier: GPL-2.0-or-later
/* Parses /proc/PID/maps lines, which may carry any path a process chose, without trusting them. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/common/cleanup.h"
#include "flamed/sampling/procmaps.h"
#include "common/parse.h"

#define DELETED_SUFFIX " (deleted)"

/* Hex with an upper bound: addresses, offsets and device numbers. */
static int parse_hex(const char **pp, uint64_t max, uint64_t *v)
{
	return fl_parse_uint(pp, 16, max, v);
}

static int parse_dec(const char **pp, uint64_t *v)
{
	return fl_parse_uint(pp, 10, UINT64_MAX, v);
}

/* Consumes exactly the character c. */
static int expect(const char **pp, char c)
{
	if (**pp != c)
		return -EINVAL;
	(*pp)++;
	return 0;
}

static int parse_perms(const char **pp, struct fl_procmap *m)
{
	const char *p = *pp;

	m->prot = 0;
	if (p[0] == 'r')
		m->prot |= FL_PROT_READ;
	else if (p[0] != '-')
		return -EINVAL;
	if (p[1] == 'w')
		m->prot |= FL_PROT_WRITE;
	else if (p[1] != '-')
		return -EINVAL;
	if (p[2] == 'x')
		m->prot |= FL_PROT_EXEC;
	else if (p[2] != '-')
		return -EINVAL;
	if (p[3] == 's')
		m->shared = true;
	else if (p[3] == 'p')
		m->shared = false;
	else
		return -EINVAL;
	*pp = p + 4;
	return 0;
}

/* Cuts the trailing newline and " (deleted)" off the path, which may hold spaces. */
static void set_path(char *path, struct fl_procmap *m)
{
	size_t len = strlen(path);
	size_t slen = sizeof(DELETED_SUFFIX) - 1;

	if (len && path[len - 1] == '\n')
		path[--len] = '\0';
	m->deleted = false;
	if (len > slen && !strcmp(path + len - slen, DELETED_SUFFIX)) {
		len -= slen;
		path[len] = '\0';
		m->deleted = true;
	}
	m->path = path;
}

int fl_procmaps__parse_line(char *line, struct fl_procmap *m)
{
	const char *p = line;
	struct fl_procmap t = { 0 };
	uint64_t major, minor;

	if (!line || !m)
		return -EINVAL;
	if (parse_hex(&p, UINT64_MAX, &t.start) || expect(&p, '-') ||
	    parse_hex(&p, UINT64_MAX, &t.end) || expect(&p, ' ') || parse_perms(&p, &t) ||
	    expect(&p, ' ') || parse_hex(&p, UINT64_MAX, &t.pgoff) || expect(&p, ' ') ||
	    parse_hex(&p, UINT32_MAX, &major) || expect(&p, ':') ||
	    parse_hex(&p, UINT32_MAX, &minor) || expect(&p, ' ') || parse_dec(&p, &t.ino))
		return -EINVAL;
	if (t.end < t.start)
		return -EINVAL;
	/* After the inode: nothing (anonymous), or padding then the path. */
	if (*p != '\0' && *p != '\n' && *p != ' ')
		return -EINVAL;
	while (*p == ' ')
		p++;
	t.dev_major = (uint32_t)major;
	t.dev_minor = (uint32_t)minor;
	set_path(line + (p - line), &t);
	*m = t;
	return 0;
}

int fl_procmaps__parse(FILE *f, fl_procmap_fn fn, void *ctx, uint64_t *nr_bad)
{
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	int err;

	if (!f || !fn)
		return -EINVAL;
	if (nr_bad)
		*nr_bad = 0;
	errno = 0;
	while (getline(&line, &cap, f) >= 0) {
		struct fl_procmap m;

		if (fl_procmaps__parse_line(line, &m)) {
			if (nr_bad)
				(*nr_bad)++;
			continue;
		}
		err = fn(&m, ctx);
		if (err)
			return err;
		errno = 0;
	}
	if (ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

int fl_procmaps__read(int pid, fl_procmap_fn fn, void *ctx)
{
	_cleanup_fclose_ FILE *f = NULL;
	char path[32];

	if (pid <= 0 || !fn)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	return fl_procmaps__parse(f, fn, ctx, NULL);
}
