// SPDX-License-Identifier: GPL-2.0-or-later
/* The process tracker: per-process executable mappings from /proc and from mmap2/comm/task records. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flamed/cleanup.h"
#include "flamed/log.h"
#include "flamed/perfbuf.h"
#include "flamed/procmaps.h"
#include "flamed/strpool.h"
#include "flamed/tracker.h"
#include "perf_records.h"
#include "u32map.h"

#define TR_DEFAULT_RING_PAGES 64
#define TR_KTHREADD_PID 2
/* include/linux/sched.h: "I am a kernel thread". */
#define TR_PF_KTHREAD 0x00200000UL

/*
 * One process (tgid). exited: its PERF_RECORD_EXIT was read (the mappings
 * stay); forked: its PERF_RECORD_FORK was read; scanned: its mappings were
 * read from /proc.
 */
struct tproc {
	uint32_t pid;
	bool exited, kthread, forked, scanned;
	struct fl_tmap *maps; /* sorted by start, disjoint */
	size_t nr_maps, cap_maps;
};

struct fl_tracker {
	int *pids; /* what to scan at start; NULL: all of /proc */
	size_t nr_pids;
	size_t ring_pages;

	struct fl_cpu_events *events; /* one per CPU, each with its ring */

	struct fl_strpool *paths;

	struct tproc *procs;
	size_t nr_procs, cap_procs;
	struct fl_u32map proc_idx; /* pid -> index into procs[]; pid 0 has no mappings */

	struct fl_tracker_stats st;
};

/* ---- the process table ---- */

static struct tproc *proc_find(const struct fl_tracker *t, uint32_t pid)
{
	uint32_t idx;

	return fl_u32map__get(&t->proc_idx, pid, &idx) ? &t->procs[idx] : NULL;
}

/* The process pid, created empty when unknown. Pointers into procs[] move on creation. */
static int proc_get(struct fl_tracker *t, uint32_t pid, struct tproc **ret)
{
	struct tproc *p = proc_find(t, pid);
	int err;

	if (p) {
		*ret = p;
		return 0;
	}
	if (pid == 0 || t->nr_procs >= UINT32_MAX)
		return -EINVAL;
	if (t->nr_procs == t->cap_procs) {
		size_t ncap = t->cap_procs ? t->cap_procs * 2 : 256;
		struct tproc *np = realloc(t->procs, ncap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		t->procs = np;
		t->cap_procs = ncap;
	}
	err = fl_u32map__put(&t->proc_idx, pid, (uint32_t)t->nr_procs);
	if (err)
		return err;
	p = &t->procs[t->nr_procs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->kthread = pid == TR_KTHREADD_PID;
	*ret = p;
	return 0;
}

/* ---- one process's mappings ---- */

/* Index of the first mapping that ends after addr (nr_maps when none). */
static size_t maps_lower(const struct fl_tmap *maps, size_t nr, uint64_t addr)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Puts m in the sorted array, replacing the ranges it overlaps: a mapping it
 * covers goes, one it partly covers is trimmed (or split in two).
 */
static int maps_insert(struct tproc *p, const struct fl_tmap *m)
{
	struct fl_tmap repl[3];
	size_t lo, hi, k = 0, removed;

	if (m->start >= m->end)
		return -EINVAL;
	lo = maps_lower(p->maps, p->nr_maps, m->start);
	for (hi = lo; hi < p->nr_maps && p->maps[hi].start < m->end; hi++)
		;
	if (lo < hi && p->maps[lo].start < m->start) {
		repl[k] = p->maps[lo];
		repl[k].end = m->start;
		k++;
	}
	repl[k++] = *m;
	if (lo < hi && p->maps[hi - 1].end > m->end) {
		repl[k] = p->maps[hi - 1];
		repl[k].pgoff += m->end - repl[k].start;
		repl[k].start = m->end;
		k++;
	}
	removed = hi - lo;
	if (p->nr_maps - removed + k > p->cap_maps) {
		/* One split can add two entries to an array sized exactly (a fork's copy). */
		size_t need = p->nr_maps - removed + k;
		size_t ncap = p->cap_maps ? p->cap_maps : 16;
		struct fl_tmap *nm;

		while (ncap < need)
			ncap *= 2;
		nm = realloc(p->maps, ncap * sizeof(*nm));

		if (!nm)
			return -ENOMEM;
		p->maps = nm;
		p->cap_maps = ncap;
	}
	memmove(p->maps + lo + k, p->maps + hi, (p->nr_maps - hi) * sizeof(*p->maps));
	memcpy(p->maps + lo, repl, k * sizeof(*repl));
	p->nr_maps = p->nr_maps - removed + k;
	return 0;
}

static const char *intern(struct fl_tracker *t, const char *s, size_t len)
{
	uint32_t id;

	if (fl_strpool__intern(t->paths, s, len, &id))
		return NULL;
	return fl_strpool__str(t->paths, id);
}

/* ---- records ---- */

static int on_mmap2(struct fl_tracker *t, const struct perf_event_header *hdr)
{
	const struct fl_mmap2_rec *r = (const void *)hdr;
	struct fl_tmap m = {0};
	struct tproc *p;
	size_t room;
	int err;

	if (hdr->size < offsetof(struct fl_mmap2_rec, filename))
		return 0;
	room = hdr->size - offsetof(struct fl_mmap2_rec, filename);
	/* Data mappings are not asked for (mmap_data=0); skip any that come anyway. */
	if (hdr->misc & PERF_RECORD_MISC_MMAP_DATA)
		return 0;
	if (r->len == 0 || r->addr + r->len < r->addr || r->pid == 0)
		return 0;
	m.start = r->addr;
	m.end = r->addr + r->len;
	m.pgoff = r->pgoff;
	if (!(hdr->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
		m.dev_major = r->maj;
		m.dev_minor = r->min;
		m.ino = r->ino;
	}
	m.path = intern(t, r->filename, strnlen(r->filename, room));
	if (!m.path)
		return -ENOMEM;
	err = proc_get(t, r->pid, &p);
	if (err)
		return err;
	err = maps_insert(p, &m);
	if (err)
		return err;
	/* A process that maps code has a user address space. */
	p->kthread = false;
	t->st.mmaps++;
	return 0;
}

static int on_comm(struct fl_tracker *t, const struct perf_event_header *hdr)
{
	const struct fl_comm_rec *r = (const void *)hdr;
	struct tproc *p;
	int err;

	if (hdr->size < sizeof(*r) || !(hdr->misc & PERF_RECORD_MISC_COMM_EXEC) || r->pid == 0)
		return 0;
	t->st.execs++;
	/* No clearing: the new image's mappings replace the old ones they overlap. */
	err = proc_get(t, r->pid, &p);
	if (err)
		return err;
	/* Kernel threads never exec; user-mode helpers start as their children and do. */
	p->kthread = false;
	return 0;
}

/*
 * Records of different CPUs are read one ring after the other, so a child's
 * mmap2 or exit records may be read before its fork record. A fork then
 * starts the child from the parent's mappings and lays whatever the child
 * already has on top. Only a child already forked once, or one from the
 * /proc scan that has exited, is an earlier process with the same pid and is
 * started afresh.
 */
static int on_fork(struct fl_tracker *t, const struct perf_event_header *hdr)
{
	const struct fl_task_rec *r = (const void *)hdr;
	struct fl_tmap *pmaps = NULL, *old;
	struct tproc *child, *parent;
	size_t nr_old, nr_pmaps = 0;
	bool parent_kthread;
	int err;

	if (hdr->size < sizeof(*r))
		return 0;
	/* A new thread shares its process's mappings. */
	if (r->pid == r->ppid || r->pid == 0)
		return 0;
	t->st.forks++;

	parent = proc_find(t, r->ppid);
	parent_kthread = r->ppid == TR_KTHREADD_PID || (parent && parent->kthread);
	if (parent && parent->nr_maps) {
		nr_pmaps = parent->nr_maps;
		pmaps = malloc(nr_pmaps * sizeof(*pmaps));
		if (!pmaps)
			return -ENOMEM;
		memcpy(pmaps, parent->maps, nr_pmaps * sizeof(*pmaps));
	}

	err = proc_get(t, r->pid, &child); /* may move parent */
	if (err) {
		free(pmaps);
		return err;
	}
	if (child->forked || (child->scanned && child->exited)) {
		child->nr_maps = 0;
		child->scanned = false;
	}
	old = child->maps;
	nr_old = child->nr_maps;
	child->maps = pmaps;
	child->nr_maps = nr_pmaps;
	child->cap_maps = nr_pmaps;
	for (size_t i = 0; i < nr_old; i++) {
		err = maps_insert(child, &old[i]);
		if (err) {
			free(child->maps);
			child->maps = old;
			child->nr_maps = nr_old;
			child->cap_maps = nr_old;
			return err;
		}
	}
	free(old);
	child->forked = true;
	child->exited = false;
	child->kthread = parent_kthread && !nr_old;
	return 0;
}

static int on_exit_rec(struct fl_tracker *t, const struct perf_event_header *hdr)
{
	const struct fl_task_rec *r = (const void *)hdr;
	struct tproc *p;

	/* Only the thread group leader's exit ends the process (as far as the tracker cares). */
	if (hdr->size < sizeof(*r) || r->pid != r->tid)
		return 0;
	t->st.exits++;
	p = proc_find(t, r->pid);
	/* Its mappings stay: samples are symbolized after the recording. */
	if (p)
		p->exited = true;
	return 0;
}

static int on_record(const struct perf_event_header *hdr, void *ctx)
{
	struct fl_tracker *t = ctx;
	int err = 0;

	switch (hdr->type) {
	case PERF_RECORD_MMAP2:
		err = on_mmap2(t, hdr);
		break;
	case PERF_RECORD_COMM:
		err = on_comm(t, hdr);
		break;
	case PERF_RECORD_FORK:
		err = on_fork(t, hdr);
		break;
	case PERF_RECORD_EXIT:
		err = on_exit_rec(t, hdr);
		break;
	case PERF_RECORD_LOST:
		if (hdr->size >= sizeof(struct fl_lost_rec))
			t->st.lost += ((const struct fl_lost_rec *)hdr)->lost;
		break;
	default:
		break;
	}
	return err;
}

/* ---- /proc ---- */

/* PF_* flags of a process from /proc/PID/stat (field 9), whose comm may hold anything. */
static int read_stat_flags(int pid, unsigned long *flags)
{
	_cleanup_close_ int fd = -1;
	char path[32], buf[1024];
	const char *p;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	if (len < 0)
		return -errno;
	buf[len] = '\0';
	/* The comm ends at the last ')'; the flags are the 7th field after it. */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	for (int field = 0; field < 7; field++) {
		while (*p == ' ')
			p++;
		if (field == 6)
			break;
		while (*p && *p != ' ')
			p++;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	*flags = strtoul(p, NULL, 10);
	if (errno)
		return -errno;
	return 0;
}

struct scan_ctx {
	struct fl_tracker *t;
	uint32_t pid;
	int err;
};

static int on_procmap(const struct fl_procmap *pm, void *ctx)
{
	struct scan_ctx *sc = ctx;
	struct fl_tmap m;
	struct tproc *p;
	int err;

	if (!(pm->prot & FL_PROT_EXEC) || pm->start >= pm->end)
		return 0;
	m.start = pm->start;
	m.end = pm->end;
	m.pgoff = pm->pgoff;
	m.dev_major = pm->dev_major;
	m.dev_minor = pm->dev_minor;
	m.ino = pm->ino;
	m.path = intern(sc->t, pm->path, strlen(pm->path));
	err = m.path ? proc_get(sc->t, sc->pid, &p) : -ENOMEM;
	if (!err)
		err = maps_insert(p, &m);
	if (err) {
		sc->err = err;
		return 1;
	}
	return 0;
}

static bool gone(int err)
{
	return err == -ENOENT || err == -ESRCH;
}

/* Reads one process from /proc: kernel thread or not, and its executable mappings. */
static int scan_pid(struct fl_tracker *t, int pid)
{
	struct scan_ctx sc = {.t = t, .pid = (uint32_t)pid};
	unsigned long flags = 0;
	struct tproc *p;
	int err;

	if (pid <= 0)
		return -EINVAL;
	err = read_stat_flags(pid, &flags);
	if (err == -EINVAL) /* unreadable stat: still try the maps */
		flags = 0;
	else if (err)
		return err;
	err = proc_get(t, (uint32_t)pid, &p);
	if (err)
		return err;
	p->scanned = true;
	if (flags & TR_PF_KTHREAD) {
		p->kthread = true;
		return 0;
	}
	err = fl_procmaps__read(pid, on_procmap, &sc);
	if (sc.err)
		return sc.err;
	if (err < 0)
		return err;
	return 0;
}

static int scan_all(struct fl_tracker *t)
{
	_cleanup_close_ int dfd = -1;
	struct dirent *de;
	DIR *dir;
	int err = 0;

	dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	dir = fdopendir(dfd);
	if (!dir)
		return -errno;
	TAKE_FD(dfd);
	while ((de = readdir(dir))) {
		char *end;
		long pid;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		errno = 0;
		pid = strtol(de->d_name, &end, 10);
		if (*end || errno || pid <= 0 || pid > INT32_MAX)
			continue;
		err = scan_pid(t, (int)pid);
		/* Processes vanish mid-scan; others' maps may be closed to us: neither stops the scan. */
		if (gone(err) || err == -EACCES || err == -EPERM || err == -EINVAL)
			err = 0;
		if (err)
			break;
	}
	closedir(dir);
	return err;
}

/* ---- the object ---- */

/* A side-band event: it never samples, it only brings the records. */
static struct perf_event_attr tracker_attr(size_t ring_bytes)
{
	return (struct perf_event_attr){
		.size = sizeof(struct perf_event_attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.disabled = 1,
		/*
		 * Executable mappings only (mmap_data stays 0), as MMAP2
		 * records. mmap must be set too: the kernel skips building
		 * mmap records at all unless some event has mmap or
		 * mmap_data set (mmap2 alone is not counted).
		 */
		.mmap = 1,
		.mmap2 = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		.watermark = 1,
		.wakeup_watermark = (uint32_t)(ring_bytes / 4),
	};
}

int fl_tracker__new(const struct fl_tracker_opts *opts, struct fl_tracker **ret)
{
	struct fl_tracker_opts o = {0};
	struct perf_event_attr attr;
	struct fl_tracker *t;
	size_t ring_bytes;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	if (!ret || page <= 0)
		return -EINVAL;
	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	if (o.nr_pids && !o.pids)
		return -EINVAL;
	if (!o.ring_pages)
		o.ring_pages = TR_DEFAULT_RING_PAGES;
	if (o.ring_pages & (o.ring_pages - 1) || o.ring_pages > (1U << 20))
		return -EINVAL;
	ring_bytes = o.ring_pages * (size_t)page;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->ring_pages = o.ring_pages;
	if (o.nr_pids) {
		t->pids = malloc(o.nr_pids * sizeof(*t->pids));
		if (!t->pids) {
			err = -ENOMEM;
			goto out_free;
		}
		memcpy(t->pids, o.pids, o.nr_pids * sizeof(*t->pids));
		t->nr_pids = o.nr_pids;
	}
	err = fl_strpool__new(&t->paths);
	if (err)
		goto out_free;

	attr = tracker_attr(ring_bytes);
	err = fl_cpu_events__open(&attr, t->ring_pages, &t->events);
	if (err)
		goto out_free;
	*ret = t;
	return 0;

out_free:
	fl_tracker__free(t);
	return err;
}

void fl_tracker__free(struct fl_tracker *t)
{
	if (!t)
		return;
	fl_cpu_events__free(t->events);
	for (size_t i = 0; i < t->nr_procs; i++)
		free(t->procs[i].maps);
	free(t->procs);
	fl_u32map__fini(&t->proc_idx);
	fl_strpool__free(t->paths);
	free(t->pids);
	free(t);
}

int fl_tracker__start(struct fl_tracker *t)
{
	int err;

	err = fl_cpu_events__ioctl(t->events, PERF_EVENT_IOC_ENABLE);
	if (err)
		return err;
	/* Whatever already happened replays before the scan, so the scan has the last word. */
	err = fl_tracker__poll(t);
	if (err)
		return err;
	if (!t->nr_pids)
		return scan_all(t);
	for (size_t i = 0; i < t->nr_pids; i++) {
		err = scan_pid(t, t->pids[i]);
		/* Gone already: the front end reports missing pids; its records may still come. */
		if (err && !gone(err))
			return err;
	}
	return 0;
}

int fl_tracker__stop(struct fl_tracker *t)
{
	return fl_cpu_events__ioctl(t->events, PERF_EVENT_IOC_DISABLE);
}

int fl_tracker__add_pid(struct fl_tracker *t, int pid)
{
	return scan_pid(t, pid);
}

size_t fl_tracker__nr_fds(const struct fl_tracker *t)
{
	return fl_cpu_events__nr(t->events);
}

int fl_tracker__fd(const struct fl_tracker *t, size_t i)
{
	return fl_cpu_events__fd(t->events, i);
}

int fl_tracker__poll(struct fl_tracker *t)
{
	return fl_cpu_events__consume(t->events, on_record, t);
}

const struct fl_tmap *fl_tracker__find(const struct fl_tracker *t, uint32_t pid, uint64_t addr)
{
	const struct tproc *p = proc_find(t, pid);
	size_t i;

	if (!p)
		return NULL;
	i = maps_lower(p->maps, p->nr_maps, addr);
	if (i < p->nr_maps && p->maps[i].start <= addr)
		return &p->maps[i];
	return NULL;
}

bool fl_tracker__is_kthread(const struct fl_tracker *t, uint32_t pid)
{
	const struct tproc *p;

	/* The idle task and kthreadd, whatever was scanned. */
	if (pid == 0 || pid == TR_KTHREADD_PID)
		return true;
	p = proc_find(t, pid);
	return p && p->kthread;
}

void fl_tracker__stats(const struct fl_tracker *t, struct fl_tracker_stats *st)
{
	*st = t->st;
	st->processes = t->nr_procs;
}
