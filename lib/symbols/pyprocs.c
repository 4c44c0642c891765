// SPDX-License-Identifier: GPL-2.0-or-later
/* Finding CPython in processes: probes interpreter files once each, by device and inode. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/sampling/tracker.h"
#include "flamed/symbols/pyprocs.h"
#include "flamed/symbols/pyruntime.h"
#include "common/u32map.h"
#include "files/mapped_file.h"

/* Interpreter files remembered: a machine has a few. Past it, new ones are probed each time. */
#define MAX_FILES 64

struct pyfile {
	uint64_t ino;
	uint32_t dev_major, dev_minor;
	int err; /* of the probe; -EOPNOTSUPP: a version without offsets */
	struct fl_pyruntime rt;
	struct fl_py_offsets off;
};

struct fl_pyprocs {
	struct fl_tracker *tracker;
	struct pyfile files[MAX_FILES];
	size_t nr_files;
	/* pid + 1 -> 1 while the process is found running a CPython (0 once dropped). */
	struct fl_u32map found;
};

int fl_pyprocs__new(struct fl_tracker *tracker, struct fl_pyprocs **ret)
{
	struct fl_pyprocs *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->tracker = tracker;
	*ret = p;
	return 0;
}

void fl_pyprocs__free(struct fl_pyprocs *p)
{
	if (p)
		fl_u32map__fini(&p->found);
	free(p);
}

bool fl_pyprocs__drop(struct fl_pyprocs *p, uint32_t pid)
{
	uint32_t v = 0;

	if (!fl_u32map__get(&p->found, pid + 1, &v) || !v)
		return false;
	fl_u32map__put(&p->found, pid + 1, 0); /* the key is there: no allocation */
	return true;
}

/* The file of tm, probed (a new one: *first). */
static const struct pyfile *probe(struct fl_pyprocs *p, uint32_t pid, const struct fl_tmap *tm,
				  struct pyfile *tmp, bool *first)
{
	struct pyfile *pf;
	int held;
	_cleanup_close_ int fd = -1;

	for (size_t i = 0; i < p->nr_files; i++)
		if (p->files[i].ino == tm->ino && p->files[i].dev_major == tm->dev_major &&
		    p->files[i].dev_minor == tm->dev_minor)
			return &p->files[i];
	*first = true;
	pf = p->nr_files < MAX_FILES ? &p->files[p->nr_files++] : tmp;
	*pf = (struct pyfile){.ino = tm->ino, .dev_major = tm->dev_major, .dev_minor = tm->dev_minor};
	/* The tracker's fd on the file mapped, else the path if it is still that file. */
	held = p->tracker ? fl_tracker__file_fd(p->tracker, tm) : -1;
	fd = held >= 0 ? fcntl(held, F_DUPFD_CLOEXEC, 3) : fl_open_mapped_file(tm, pid);
	pf->err = fd < 0 ? fd : fl_pyruntime__probe(fd, &pf->rt);
	if (!pf->err)
		pf->err = fl_pyruntime__offsets_of(&pf->rt, &pf->off);
	if (pf->err && pf->err != -EOPNOTSUPP)
		fl_pr_debug("python: %s: %s\n", tm->path, strerror(-pf->err));
	return pf;
}

int fl_pyprocs__find(struct fl_pyprocs *p, uint32_t pid, const struct fl_tmap *maps, size_t n,
		     struct fl_pyprocs_found *out)
{
	struct pyfile tmp;

	for (size_t i = 0; i < n; i++) {
		const struct pyfile *pf;
		bool first = false;

		if (fl_tmap__is_anon(&maps[i]) || !fl_pyruntime__candidate(maps[i].path))
			continue;
		pf = probe(p, pid, &maps[i], &tmp, &first);
		if (pf->err == -EOPNOTSUPP) {
			*out = (struct fl_pyprocs_found){
				.path = maps[i].path, .version = pf->rt.version, .first = first};
			return -EOPNOTSUPP;
		}
		uint64_t runtime;

		if (pf->err || fl_pyruntime__address(&pf->rt, maps[i].start, maps[i].pgoff, &runtime))
			continue;
		out->proc.runtime = runtime;
		out->proc.version = pf->rt.version;
		out->proc.pad = 0;
		out->proc.off = pf->off;
		out->path = maps[i].path;
		out->version = pf->rt.version;
		out->first = first;
		fl_pr_debug("python: pid %u runs CPython %x (%s)\n", pid, pf->rt.version, maps[i].path);
		/* Without memory to remember it, it is forgotten: a later drop finds nothing to undo. */
		fl_u32map__put(&p->found, pid + 1, 1);
		return 1;
	}
	return 0;
}
