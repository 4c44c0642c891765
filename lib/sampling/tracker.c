// SPDX-License-Identifier: GPL-2.0-or-later
/* The process tracker: per-process executable mappings from /proc and from mmap2/comm/task records. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/sampling/perfbuf.h"
#include "flamed/sampling/procmaps.h"
#include "flamed/common/strpool.h"
#include "flamed/sampling/tracker.h"
#include "common/hash.h"
#include "files/mapped_file.h"
#include "sampling/perf_records.h"
#include "common/u32map.h"

#define TR_DEFAULT_RING_PAGES 64
/* The longest record the tracker's events write: an mmap2 with a PATH_MAX name and its time. */
#define TR_MAX_RECORD (sizeof(struct fl_mmap2_rec) + PATH_MAX + sizeof(uint64_t))
/* After lost records, all of /proc is read again at most this often, ... */
#define TR_RESCAN_INTERVAL_NS 1000000000ull
/* ... and any rescan takes at most 1 / TR_RESCAN_SHARE of the time. */
#define TR_RESCAN_SHARE 10
#define TR_KTHREADD_PID 2
#define TR_COMM_MAX 16 /* bytes of a comm, without its NUL */
/* include/linux/sched.h: "I am a kernel thread". */
#define TR_PF_KTHREAD 0x00200000UL
/*
 * Replaced mappings and era changes kept per process. A process that keeps
 * mapping different code over the same addresses (a JIT with file-backed
 * code, a plugin host) loses its oldest history past this, counted.
 */
#define TR_MAX_HISTORY 4096
/* Files held open at most (hold_files), and never more than a quarter of RLIMIT_NOFILE. */
#define TR_MAX_HELD_FILES 4096

/*
 * A moment an address of a process began to mean other code: a mapping
 * replaced by a different one (exec false), or an exec or a reused pid
 * after which nothing mapped before counts (exec true).
 */
struct tchange {
	uint64_t time;
	bool exec;
};

/*
 * One process (tgid). exited: its PERF_RECORD_EXIT was read (the mappings
 * stay until forgotten); forked: its PERF_RECORD_FORK was read; scanned:
 * its mappings were read from /proc.
 */
struct tproc {
	uint32_t pid;
	bool exited, kthread, forked, scanned;
	bool jit;     /* anonymous executable memory seen (on_jit called) */
	bool changed; /* in the changed list (track_changes) */
	uint64_t exit_time;
	struct fl_tmap *maps; /* the latest: sorted by start, disjoint */
	size_t nr_maps, cap_maps;
	struct fl_tmap *hist; /* replaced mappings, whole, in no order */
	size_t nr_hist, cap_hist;
	struct tchange *changes; /* sorted by time */
	size_t nr_changes, cap_changes;
};

/* A mapped file held open: its identity as the mappings give it. */
struct tfile {
	uint64_t ino;
	uint32_t dev_major, dev_minor;
	int fd;	   /* 0 marks an empty slot: fds held are never 0 (stdin is ours) */
	bool used; /* fl_tracker__release_files(): mapped by a process tracked */
};

/* A record read and not applied yet: its time, the order it was read in, where its copy is. */
struct tr_ord {
	uint64_t time, seq;
	size_t off;
};

struct fl_tracker {
	int *pids; /* what to scan at start; NULL: all of /proc */
	size_t nr_pids;
	size_t ring_pages;
	bool hold_files;
	void (*on_jit)(void *ctx, uint32_t pid);
	void (*on_exec)(void *ctx, uint32_t pid, const char *comm);
	size_t max_procs;
	void *ctx;
	uint32_t kthreadd; /* its pid: 2, or 0 (none) in a child pid namespace */
	size_t max_files;
	uint64_t known_until; /* see fl_tracker__known_until() */
	uint64_t scan_birth;  /* the birth of mappings the scan finds: 0 at start */
	bool rescan_due;      /* records were (or may have been) lost since the last scan */
	uint64_t full_room;   /* a ring read with less room may have dropped records */
	uint64_t next_rescan; /* CLOCK_MONOTONIC ns before which no rescan after a loss runs */
	/*
	 * Records read from the rings and not applied yet (see
	 * fl_tracker__poll()): copies in ord_buf, ordered through ord.
	 */
	unsigned char *ord_buf;
	size_t ord_len, ord_cap;
	struct tr_ord *ord;
	size_t nr_ord, cap_ord;
	uint64_t ord_seq;
	struct tfile *files; /* open addressing, power-of-two capacity */
	size_t nr_files, cap_files;

	struct fl_cpu_events *events; /* one per CPU, each with its ring */

	struct fl_strpool *paths;

	struct tproc *procs;
	size_t nr_procs, cap_procs;
	struct fl_u32map proc_idx; /* pid -> index into procs[]; pid 0 has no mappings */

	/* Pids whose latest mappings changed or that exited, not yet told (track_changes). */
	bool track_changes;
	uint32_t *changed;
	size_t nr_changed, cap_changed;

	struct fl_tracker_stats st;
};

/*
 * Notes that p's latest mappings changed (or that it exited), for
 * fl_tracker__changed(). Failing to note it only delays the news: the next
 * change of p is noted again.
 */
static void note_changed(struct fl_tracker *t, struct tproc *p)
{
	if (!t->track_changes || p->changed)
		return;
	if (t->nr_changed == t->cap_changed) {
		size_t ncap = t->cap_changed ? t->cap_changed * 2 : 256;
		uint32_t *nc = realloc(t->changed, ncap * sizeof(*nc));

		if (!nc)
			return;
		t->changed = nc;
		t->cap_changed = ncap;
	}
	t->changed[t->nr_changed++] = p->pid;
	p->changed = true;
}

/* ---- the process table ---- */

static void proc_fini(struct tproc *p)
{
	free(p->maps);
	free(p->hist);
	free(p->changes);
}

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

	*ret = p; /* NULL on failure: a caller that forgets the error faults at once */
	if (p)
		return 0;
	if (pid == 0 || t->nr_procs >= UINT32_MAX)
		return -EINVAL;
	if (t->max_procs && t->nr_procs >= t->max_procs) {
		t->st.over_max++;
		return -ENOSPC;
	}
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
	p->kthread = pid == t->kthreadd;
	if (t->nr_procs > t->st.peak_processes)
		t->st.peak_processes = t->nr_procs;
	*ret = p;
	return 0;
}

/* Removes pid; the last process moves into its place. */
static void proc_remove(struct fl_tracker *t, uint32_t pid)
{
	uint32_t idx, last;

	if (!fl_u32map__get(&t->proc_idx, pid, &idx))
		return;
	proc_fini(&t->procs[idx]);
	fl_u32map__del(&t->proc_idx, pid);
	last = (uint32_t)t->nr_procs - 1;
	if (idx != last) {
		t->procs[idx] = t->procs[last];
		fl_u32map__put(&t->proc_idx, t->procs[idx].pid, idx); /* an update: cannot fail */
	}
	t->nr_procs--;
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

/* Whether two mappings give their common addresses the same meaning. */
static bool same_code(const struct fl_tmap *a, const struct fl_tmap *b)
{
	return a->path == b->path && a->ino == b->ino && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && a->start - a->pgoff == b->start - b->pgoff;
}

/* Appends to a process's history, dropping its oldest half at the cap. */
static int hist_push(struct fl_tracker *t, struct tproc *p, const struct fl_tmap *m)
{
	if (p->nr_hist == TR_MAX_HISTORY) {
		size_t keep = TR_MAX_HISTORY / 2;
		size_t oldest = 0;

		/* In no order: drop the entries born first, found by a partial selection. */
		for (size_t n = 0; n < TR_MAX_HISTORY - keep; n++) {
			oldest = 0;
			for (size_t i = 1; i < p->nr_hist; i++)
				if (p->hist[i].birth < p->hist[oldest].birth)
					oldest = i;
			p->hist[oldest] = p->hist[--p->nr_hist];
		}
		t->st.history_dropped += TR_MAX_HISTORY - keep;
	}
	if (p->nr_hist == p->cap_hist) {
		size_t ncap = p->cap_hist ? p->cap_hist * 2 : 8;
		struct fl_tmap *nh = realloc(p->hist, ncap * sizeof(*nh));

		if (!nh)
			return -ENOMEM;
		p->hist = nh;
		p->cap_hist = ncap;
	}
	p->hist[p->nr_hist++] = *m;
	return 0;
}

/* Notes that addresses of p mean other code from time on (kept in time order). */
static int change_add(struct fl_tracker *t, struct tproc *p, uint64_t time, bool exec)
{
	size_t i;

	if (p->nr_changes == TR_MAX_HISTORY) {
		size_t drop = TR_MAX_HISTORY / 2;

		memmove(p->changes, p->changes + drop,
			(p->nr_changes - drop) * sizeof(*p->changes));
		p->nr_changes -= drop;
		t->st.history_dropped += drop;
	}
	if (p->nr_changes == p->cap_changes) {
		size_t ncap = p->cap_changes ? p->cap_changes * 2 : 4;
		struct tchange *nc = realloc(p->changes, ncap * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		p->changes = nc;
		p->cap_changes = ncap;
	}
	for (i = p->nr_changes; i > 0 && p->changes[i - 1].time > time; i--)
		;
	if (i > 0 && p->changes[i - 1].time == time) {
		p->changes[i - 1].exec |= exec;
		return 0;
	}
	memmove(p->changes + i + 1, p->changes + i, (p->nr_changes - i) * sizeof(*p->changes));
	p->changes[i] = (struct tchange){.time = time, .exec = exec};
	p->nr_changes++;
	return 0;
}

static int maps_insert(struct fl_tracker *t, struct tproc *p, const struct fl_tmap *in);

/*
 * A record read late: mappings of other code made after it already hold
 * parts of its range (maps[lo, hi) overlap it; the oldest of those newer
 * ones was made at newer). It goes whole to the history, where lookups of
 * times before the newer ones find it, and its parts that nothing newer
 * covers go in as the latest there.
 */
static int insert_under(struct fl_tracker *t, struct tproc *p, const struct fl_tmap *m, size_t lo,
			size_t hi, uint64_t newer)
{
	_cleanup_free_ uint64_t *cover = malloc((hi - lo) * 2 * sizeof(*cover));
	size_t nr = 0;
	uint64_t at = m->start;
	int err;

	if (!cover)
		return -ENOMEM;
	for (size_t i = lo; i < hi; i++) {
		if (p->maps[i].birth > m->birth && !same_code(&p->maps[i], m)) {
			cover[nr++] = p->maps[i].start;
			cover[nr++] = p->maps[i].end;
		}
	}
	t->st.replaced++;
	err = hist_push(t, p, m);
	if (!err)
		err = change_add(t, p, newer, false);
	/* The gaps between the newer ones (sorted, disjoint), and after the last. */
	for (size_t i = 0; !err && i <= nr; i += 2) {
		uint64_t gap_end = i < nr ? cover[i] : m->end;

		if (gap_end > m->end)
			gap_end = m->end;
		if (at < gap_end) {
			struct fl_tmap piece = *m;

			piece.start = at;
			piece.end = gap_end;
			piece.pgoff = m->pgoff + (at - m->start);
			err = maps_insert(t, p, &piece);
		}
		if (i < nr && cover[i + 1] > at)
			at = cover[i + 1];
	}
	return err;
}

/*
 * Puts m in the sorted array, replacing the ranges it overlaps: a mapping it
 * covers goes, one it partly covers is trimmed (or split in two). A
 * replaced mapping of other code goes whole to the history, and the time of
 * m becomes an era change. A record read late, older than a mapping of
 * other code already in place, goes to the history itself.
 */
static int maps_insert(struct fl_tracker *t, struct tproc *p, const struct fl_tmap *in)
{
	struct fl_tmap repl[3], mm = *in, *m = &mm;
	uint64_t newer = UINT64_MAX;
	bool replaced = false;
	size_t lo, hi, k = 0, removed;
	int err;

	if (m->start >= m->end)
		return -EINVAL;
	lo = maps_lower(p->maps, p->nr_maps, m->start);
	for (hi = lo; hi < p->nr_maps && p->maps[hi].start < m->end; hi++) {
		const struct fl_tmap *o = &p->maps[hi];

		if (same_code(o, m)) {
			/*
			 * The same code again (an mprotect, the scan after a
			 * record): there since the older record. The scan's 0
			 * says only "before the scan": a record's time wins.
			 */
			if (o->birth && (!m->birth || o->birth < m->birth))
				m->birth = o->birth;
		} else if (o->birth > in->birth) {
			if (o->birth < newer)
				newer = o->birth;
		} else {
			replaced = true;
		}
	}
	if (newer != UINT64_MAX)
		return insert_under(t, p, m, lo, hi, newer);
	if (replaced) {
		for (size_t i = lo; i < hi; i++) {
			if (same_code(&p->maps[i], m))
				continue;
			err = hist_push(t, p, &p->maps[i]);
			if (err)
				return err;
			t->st.replaced++;
		}
		err = change_add(t, p, in->birth, false);
		if (err)
			return err;
	}
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
	note_changed(t, p);
	return 0;
}

bool fl_tmap__is_anon(const struct fl_tmap *m)
{
	return !m->path[0] || !strcmp(m->path, "//anon") || !strncmp(m->path, "[anon", 5) ||
	       !strncmp(m->path, "/memfd:", 7);
}

/* The first anonymous code of a process: it has a JIT, whose perf map may be read. */
static void note_jit(struct fl_tracker *t, uint32_t pid, const struct fl_tmap *m)
{
	struct tproc *p;

	if (!t->on_jit || !fl_tmap__is_anon(m) || !(p = proc_find(t, pid)) || p->jit)
		return;
	p->jit = true;
	t->on_jit(t->ctx, pid);
}

/* ---- mapped files held open ---- */

static bool is_file_path(const struct fl_tmap *m)
{
	return m->path[0] == '/' && m->ino != 0;
}

static struct tfile *file_slot(struct tfile *tab, size_t cap, const struct fl_tmap *m)
{
	size_t i =
		fl_hash_u64_pair(m->ino, (uint64_t)m->dev_major << 32 | m->dev_minor) & (cap - 1);

	while (tab[i].fd && (tab[i].ino != m->ino || tab[i].dev_major != m->dev_major ||
			     tab[i].dev_minor != m->dev_minor))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

/*
 * The first time a file shows up in a mapping of pid, it is opened (and
 * checked to be the mapped inode) and held. A failure is not an error: it
 * is counted and tried again at the next mapping of the file.
 */
static int hold_file(struct fl_tracker *t, const struct fl_tmap *m, uint32_t pid)
{
	struct tfile *slot;
	int fd;

	if (!t->hold_files || !is_file_path(m))
		return 0;
	if (t->cap_files && file_slot(t->files, t->cap_files, m)->fd)
		return 0;
	if (t->nr_files >= t->max_files) {
		t->st.files_not_held++;
		return 0;
	}
	if ((t->nr_files + 1) * 2 > t->cap_files) {
		size_t ncap = t->cap_files ? t->cap_files * 2 : 256;
		struct tfile *tab = calloc(ncap, sizeof(*tab));

		if (!tab)
			return -ENOMEM;
		for (size_t i = 0; i < t->cap_files; i++)
			if (t->files[i].fd) {
				struct fl_tmap k = {.ino = t->files[i].ino,
						    .dev_major = t->files[i].dev_major,
						    .dev_minor = t->files[i].dev_minor};

				*file_slot(tab, ncap, &k) = t->files[i];
			}
		free(t->files);
		t->files = tab;
		t->cap_files = ncap;
	}
	fd = fl_open_mapped_file(m, pid);
	if (fd <= 0) {
		if (fd == 0)
			close(fd);
		t->st.files_not_held++;
		return 0;
	}
	slot = file_slot(t->files, t->cap_files, m);
	*slot = (struct tfile){
		.ino = m->ino, .dev_major = m->dev_major, .dev_minor = m->dev_minor, .fd = fd};
	t->nr_files++;
	t->st.files_held++;
	return 0;
}

static void mark_used(struct fl_tracker *t, const struct fl_tmap *maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tfile *f;

		if (!is_file_path(&maps[i]))
			continue;
		f = file_slot(t->files, t->cap_files, &maps[i]);
		if (f->fd)
			f->used = true;
	}
}

void fl_tracker__release_files(struct fl_tracker *t)
{
	struct tfile *tab;
	size_t kept = 0;

	if (!t->nr_files)
		return;
	for (size_t i = 0; i < t->nr_procs; i++) {
		mark_used(t, t->procs[i].maps, t->procs[i].nr_maps);
		mark_used(t, t->procs[i].hist, t->procs[i].nr_hist);
	}
	/* Open addressing: the table is built again from the files kept. */
	tab = calloc(t->cap_files, sizeof(*tab));
	if (!tab)
		return;
	for (size_t i = 0; i < t->cap_files; i++) {
		struct tfile *f = &t->files[i];
		struct fl_tmap k = {
			.ino = f->ino, .dev_major = f->dev_major, .dev_minor = f->dev_minor};

		if (!f->fd)
			continue;
		if (!f->used) {
			close(f->fd);
			t->st.files_released++;
			continue;
		}
		f->used = false;
		*file_slot(tab, t->cap_files, &k) = *f;
		kept++;
	}
	free(t->files);
	t->files = tab;
	t->nr_files = kept;
}

int fl_tracker__file_fd(const struct fl_tracker *t, const struct fl_tmap *tm)
{
	const struct tfile *f;

	if (!t->cap_files || !tm || !is_file_path(tm))
		return -1;
	f = file_slot(t->files, t->cap_files, tm);
	return f->fd ? f->fd : -1;
}

static const char *intern(struct fl_tracker *t, const char *s, size_t len)
{
	uint32_t id;

	if (fl_strpool__intern(t->paths, s, len, &id))
		return NULL;
	return fl_strpool__str(t->paths, id);
}

/* ---- records ---- */

/*
 * Every record ends in its sample_id: with sample_type PERF_SAMPLE_TIME and
 * sample_id_all, that is the time alone. Records too short have none.
 */
static bool rec_time(const struct perf_event_header *hdr, size_t body, uint64_t *time)
{
	if (hdr->size < body + sizeof(*time))
		return false;
	memcpy(time, (const char *)hdr + hdr->size - sizeof(*time), sizeof(*time));
	return true;
}

static int on_mmap2(struct fl_tracker *t, const struct perf_event_header *hdr)
{
	const struct fl_mmap2_rec *r = (const void *)hdr;
	size_t body = offsetof(struct fl_mmap2_rec, filename);
	struct fl_tmap m = {0};
	struct tproc *p;
	int err;

	if (!rec_time(hdr, body, &m.birth))
		return 0;
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
	/* The name is NUL-padded up to the sample_id. */
	m.path = intern(t, r->filename, strnlen(r->filename, hdr->size - body - sizeof(uint64_t)));
	if (!m.path)
		return -ENOMEM;
	err = proc_get(t, r->pid, &p);
	if (err)
		return err;
	err = maps_insert(t, p, &m);
	if (!err)
		err = hold_file(t, &m, r->pid);
	if (err)
		return err;
	note_jit(t, r->pid, &m);
	/* A process that maps code has a user address space. */
	p->kthread = false;
	t->st.mmaps++;
	return 0;
}

/*
 * From an exec on, only what was mapped after it counts: the mappings of
 * the old image go to the history (those already read of the new image,
 * from another CPU's ring, stay).
 */
static int proc_barrier(struct fl_tracker *t, struct tproc *p, uint64_t time)
{
	size_t i, kept = 0;
	int err = change_add(t, p, time, true);

	for (i = 0; !err && i < p->nr_maps; i++) {
		if (p->maps[i].birth >= time)
			p->maps[kept++] = p->maps[i];
		else
			err = hist_push(t, p, &p->maps[i]);
	}
	/* On failure the rest stay: a lookup still finds them by their birth. */
	for (; i < p->nr_maps; i++)
		p->maps[kept++] = p->maps[i];
	p->nr_maps = kept;
	note_changed(t, p);
	return err;
}

static int on_comm(struct fl_tracker *t, const struct perf_event_header *hdr)
{
	const struct fl_comm_rec *r = (const void *)hdr;
	struct tproc *p;
	uint64_t time;
	int err;

	if (!rec_time(hdr, sizeof(*r), &time) || !(hdr->misc & PERF_RECORD_MISC_COMM_EXEC) ||
	    r->pid == 0)
		return 0;
	t->st.execs++;
	/* Told first: a process past max_processes may still be a target by name. */
	if (t->on_exec) {
		char comm[TR_COMM_MAX + 1];
		size_t room = hdr->size - sizeof(*r), n = 0;

		while (n < room && n < TR_COMM_MAX && r->comm[n])
			n++;
		memcpy(comm, r->comm, n);
		comm[n] = '\0';
		t->on_exec(t->ctx, r->pid, comm);
	}
	err = proc_get(t, r->pid, &p);
	if (err)
		return err;
	/* Kernel threads never exec; user-mode helpers start as their children and do. */
	p->kthread = false;
	return proc_barrier(t, p, time);
}

/*
 * A child starts with its parent's mappings, as made at the fork. Records
 * of different CPUs are read one ring after the other, so a child's mmap2
 * or exit records may be read before its fork record: its own mappings,
 * newer, then stay on top. A pid known before (forked before, or found by
 * the scan and exited) now names a new process: a barrier at the fork
 * keeps the two apart.
 */
static int on_fork(struct fl_tracker *t, const struct perf_event_header *hdr)
{
	const struct fl_task_rec *r = (const void *)hdr;
	struct fl_tmap *pmaps = NULL;
	struct tproc *child, *parent;
	size_t nr_pmaps = 0;
	bool parent_kthread, had_maps;
	int err = 0;

	if (hdr->size < sizeof(*r))
		return 0;
	/* A new thread shares its process's mappings. */
	if (r->pid == r->ppid || r->pid == 0)
		return 0;
	t->st.forks++;

	parent = proc_find(t, r->ppid);
	parent_kthread = (r->ppid && r->ppid == t->kthreadd) || (parent && parent->kthread);
	if (parent && parent->nr_maps) {
		pmaps = malloc(parent->nr_maps * sizeof(*pmaps));
		if (!pmaps)
			return -ENOMEM;
		for (size_t i = 0; i < parent->nr_maps; i++) {
			/* Mapped by the parent after the fork (read early): not the child's. */
			if (parent->maps[i].birth > r->time)
				continue;
			pmaps[nr_pmaps] = parent->maps[i];
			/* The child's copy begins at the fork. */
			pmaps[nr_pmaps++].birth = r->time;
		}
	}

	err = proc_get(t, r->pid, &child); /* may move parent */
	if (err) {
		/* Past max_processes (-ENOSPC): the child is not tracked. */
		free(pmaps);
		return err;
	}
	if (child->forked || (child->scanned && child->exited))
		err = proc_barrier(t, child, r->time);
	had_maps = child->nr_maps > 0;
	for (size_t i = 0; !err && i < nr_pmaps; i++)
		err = maps_insert(t, child, &pmaps[i]);
	free(pmaps);
	if (err)
		return err;
	child->forked = true;
	child->exited = false;
	child->scanned = false;
	child->kthread = parent_kthread && !had_maps;
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
	/* Its mappings stay until its samples are named and it is forgotten. */
	if (p) {
		p->exited = true;
		p->exit_time = r->time;
		note_changed(t, p);
	}
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
	/* A process past max_processes is not tracked: counted, not an error. */
	return err == -ENOSPC ? 0 : err;
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
	m.birth = sc->t->scan_birth; /* 0 at start: before the scan, before every record */
	m.path = intern(sc->t, pm->path, strlen(pm->path));
	err = m.path ? proc_get(sc->t, sc->pid, &p) : -ENOMEM;
	if (!err)
		err = maps_insert(sc->t, p, &m);
	if (!err)
		err = hold_file(sc->t, &m, sc->pid);
	if (!err)
		note_jit(sc->t, sc->pid, &m);
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
		if (gone(err) || err == -EACCES || err == -EPERM || err == -EINVAL ||
		    err == -ENOSPC)
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
		/* Every record stamped with its time, on the clock of BPF's bpf_ktime_get_ns(). */
		.sample_type = PERF_SAMPLE_TIME,
		.sample_id_all = 1,
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
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
	/* Less room than this at a read: records may have been dropped (a tiny ring: half of it). */
	t->full_room = ring_bytes / 2 < TR_MAX_RECORD ? ring_bytes / 2 : TR_MAX_RECORD;
	t->hold_files = o.hold_files;
	if (o.sz >= sizeof(o)) {
		t->on_jit = o.on_jit;
		t->ctx = o.ctx;
		t->on_exec = o.on_exec;
		t->max_procs = o.max_processes;
		t->track_changes = o.track_changes;
	}
	t->kthreadd = o.sz >= sizeof(o) && o.child_pidns ? 0 : TR_KTHREADD_PID;
	t->max_files = TR_MAX_HELD_FILES;
	{
		struct rlimit rl;

		/* A quarter of the fds: the events, BPF and the files being read need the rest. */
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 4 < t->max_files)
			t->max_files = rl.rlim_cur / 4;
	}
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
	for (size_t i = 0; i < t->cap_files; i++)
		if (t->files[i].fd)
			close(t->files[i].fd);
	free(t->files);
	for (size_t i = 0; i < t->nr_procs; i++)
		proc_fini(&t->procs[i]);
	free(t->procs);
	fl_u32map__fini(&t->proc_idx);
	fl_strpool__free(t->paths);
	free(t->pids);
	free(t->ord_buf);
	free(t->ord);
	free(t->changed);
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

/*
 * Processes scanned again after events were dead: what they mapped or
 * exec'd meanwhile is news of now, not of before every record.
 */
static int rescan(struct fl_tracker *t)
{
	uint32_t *pids;
	size_t n = 0;
	int err = 0;

	t->scan_birth = fl_tracker__now();
	if (!t->nr_pids) {
		err = scan_all(t);
		goto out;
	}
	pids = malloc((t->nr_procs ? t->nr_procs : 1) * sizeof(*pids));
	if (!pids) {
		err = -ENOMEM;
		goto out;
	}
	/* The processes tracked (the targets and their descendants), as scan_pid() may move them. */
	for (size_t i = 0; i < t->nr_procs; i++)
		if (!t->procs[i].exited && !t->procs[i].kthread)
			pids[n++] = t->procs[i].pid;
	for (size_t i = 0; i < n && !err; i++) {
		err = scan_pid(t, (int)pids[i]);
		if (gone(err) || err == -EACCES || err == -EPERM || err == -ENOSPC)
			err = 0;
	}
	free(pids);
out:
	t->scan_birth = 0;
	return err;
}

int fl_tracker__revive(struct fl_tracker *t, int *cpus, size_t max)
{
	int n = fl_cpu_events__revive(t->events, NULL, NULL, NULL, cpus, max), err;

	if (n <= 0)
		return n;
	/* What ran on those CPUs between their return and now left no records. */
	err = rescan(t);
	return err ? err : (int)n;
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

/* A copy's room: records are read through their structs, so every copy starts 8-aligned. */
static size_t ord_room(const struct perf_event_header *hdr)
{
	return ((size_t)hdr->size + 7) & ~(size_t)7;
}

/* Copies a record for later: fl_tracker__poll() applies them in time order. */
static int collect(const struct perf_event_header *hdr, void *ctx)
{
	struct fl_tracker *t = ctx;
	size_t room = ord_room(hdr);
	struct tr_ord *o;

	if (t->ord_len + room > t->ord_cap) {
		size_t cap = t->ord_cap ? t->ord_cap : 16384;
		unsigned char *b;

		while (cap < t->ord_len + room)
			cap *= 2;
		b = realloc(t->ord_buf, cap);
		if (!b)
			return -ENOMEM;
		t->ord_buf = b;
		t->ord_cap = cap;
	}
	if (t->nr_ord == t->cap_ord) {
		size_t cap = t->cap_ord ? 2 * t->cap_ord : 256;
		struct tr_ord *n = realloc(t->ord, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->ord = n;
		t->cap_ord = cap;
	}
	o = &t->ord[t->nr_ord++];
	/* A record too short for its time goes first: on_record() skips it anyway. */
	if (!rec_time(hdr, sizeof(*hdr), &o->time))
		o->time = 0;
	o->seq = t->ord_seq++;
	o->off = t->ord_len;
	memcpy(t->ord_buf + t->ord_len, hdr, hdr->size);
	t->ord_len += room;
	return 0;
}

static int ord_cmp(const void *a, const void *b)
{
	const struct tr_ord *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int seq_cmp(const void *a, const void *b)
{
	const struct tr_ord *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Every CPU has its ring, and a process's records land in the ring of the
 * CPU it ran on: a parent's exec in one, its child's fork read first from
 * another would hand the child the image the parent left. So records are
 * applied in time order across rings, and only up to the moment the read
 * began: later ones may still be on their way to other rings, and wait for
 * the next read.
 */
int fl_tracker__poll(struct fl_tracker *t)
{
	/*
	 * A mapping's record is in its ring before the mmap() or exec that made
	 * it returns, so before any sample that can see it is taken.
	 */
	uint64_t now = fl_tracker__now(), lost_before = t->st.lost;
	int ret = fl_cpu_events__consume(t->events, collect, t), err;
	size_t i, len = 0;

	if (t->nr_ord > 1)
		qsort(t->ord, t->nr_ord, sizeof(*t->ord), ord_cmp);
	for (i = 0; i < t->nr_ord && t->ord[i].time <= now; i++) {
		err = on_record((const void *)(t->ord_buf + t->ord[i].off), t);
		/* A record that fails is dropped, as a ring read drops it; the rest still apply. */
		if (err && !ret)
			ret = err;
	}
	/*
	 * The rest move to the front. Copies lie in the order they were read
	 * (seq): moved in that order, none is overwritten before it moves.
	 */
	if (i && i < t->nr_ord)
		memmove(t->ord, t->ord + i, (t->nr_ord - i) * sizeof(*t->ord));
	t->nr_ord -= i;
	if (t->nr_ord > 1)
		qsort(t->ord, t->nr_ord, sizeof(*t->ord), seq_cmp);
	for (size_t k = 0; k < t->nr_ord; k++) {
		const struct perf_event_header *h = (const void *)(t->ord_buf + t->ord[k].off);
		size_t room = ord_room(h);

		memmove(t->ord_buf + len, h, h->size);
		t->ord[k].off = len;
		len += room;
	}
	t->ord_len = len;
	/*
	 * Even after an error: a record that failed, or was lost with a reset
	 * ring, is never read again, and samples must not wait for it forever.
	 */
	t->known_until = now;
	/*
	 * Lost records leave mappings unknown, or stale where new code took
	 * their place: /proc says what is mapped now. A ring found too full
	 * for the longest record may have dropped some, which the kernel says
	 * only with its next record: scanned at once, not a read later.
	 */
	if (t->st.lost > lost_before || fl_cpu_events__least_room(t->events) < t->full_room)
		t->rescan_due = true;
	if (t->rescan_due && now >= t->next_rescan) {
		uint64_t begin = fl_tracker__now(), end, cost, wait;

		err = rescan(t);
		end = fl_tracker__now();
		cost = end - begin;
		/*
		 * Whoever floods the rings (any user can mmap in a loop) must not
		 * turn flamed into a /proc reader: scans take at most a tenth of
		 * its time, and all of /proc at most one a second.
		 */
		wait = cost * (TR_RESCAN_SHARE - 1);
		if (!t->nr_pids && wait < TR_RESCAN_INTERVAL_NS)
			wait = TR_RESCAN_INTERVAL_NS;
		t->next_rescan = end + wait;
		t->rescan_due = false;
		t->st.rescans++;
		t->st.rescan_ns += cost;
		if (err && !ret)
			ret = err;
	}
	return ret < 0 ? ret : 0;
}

uint64_t fl_tracker__known_until(const struct fl_tracker *t)
{
	return t->known_until;
}

uint64_t fl_tracker__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const struct fl_tmap *latest(const struct tproc *p, uint64_t addr)
{
	size_t i = maps_lower(p->maps, p->nr_maps, addr);

	if (i < p->nr_maps && p->maps[i].start <= addr)
		return &p->maps[i];
	return NULL;
}

const struct fl_tmap *fl_tracker__find(const struct fl_tracker *t, uint32_t pid, uint64_t addr)
{
	const struct tproc *p = proc_find(t, pid);

	return p ? latest(p, addr) : NULL;
}

/* Index of the first change after time (nr_changes when none). */
static size_t changes_after(const struct tproc *p, uint64_t time)
{
	size_t lo = 0, hi = p->nr_changes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->changes[mid].time <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct pick {
	uint64_t time, from, until; /* candidates were made in [from, until) */
	const struct fl_tmap *exact, *later;
};

static void consider(struct pick *pk, const struct fl_tmap *m)
{
	if (m->birth < pk->from || m->birth >= pk->until)
		return;
	if (m->birth <= pk->time) {
		if (!pk->exact || m->birth > pk->exact->birth)
			pk->exact = m;
	} else if (!pk->later || m->birth < pk->later->birth) {
		pk->later = m;
	}
}

const struct fl_tmap *fl_tracker__find_at(const struct fl_tracker *t, uint32_t pid, uint64_t addr,
					  uint64_t time)
{
	const struct tproc *p = proc_find(t, pid);
	struct pick pk = {.time = time, .until = UINT64_MAX};
	const struct fl_tmap *m;
	size_t next;

	if (!p)
		return NULL;
	m = latest(p, addr);
	/* Nothing ever changed meaning: the latest mappings are the only ones. */
	if (!p->nr_changes)
		return m;
	next = changes_after(p, time);
	for (size_t i = next; i-- > 0;)
		if (p->changes[i].exec) {
			pk.from = p->changes[i].time;
			break;
		}
	for (size_t i = next; i < p->nr_changes; i++)
		if (p->changes[i].exec) {
			pk.until = p->changes[i].time;
			break;
		}
	if (m)
		consider(&pk, m);
	for (size_t i = 0; i < p->nr_hist; i++)
		if (p->hist[i].start <= addr && addr < p->hist[i].end)
			consider(&pk, &p->hist[i]);
	return pk.exact ? pk.exact : pk.later;
}

bool fl_tracker__left_at_exec(const struct fl_tracker *t, uint32_t pid, uint64_t addr,
			      uint64_t time)
{
	const struct tproc *p = proc_find(t, pid);

	if (!p || fl_tracker__find_at(t, pid, addr, time))
		return false;
	for (size_t i = changes_after(p, time); i-- > 0;)
		if (p->changes[i].exec)
			return p->changes[i].time > 0 &&
			       fl_tracker__find_at(t, pid, addr, p->changes[i].time - 1) != NULL;
	return false;
}

uint64_t fl_tracker__era(const struct fl_tracker *t, uint32_t pid, uint64_t time)
{
	const struct tproc *p = proc_find(t, pid);
	size_t next;

	if (!p || !p->nr_changes)
		return 0;
	next = changes_after(p, time);
	return next ? p->changes[next - 1].time : 0;
}

size_t fl_tracker__exited(const struct fl_tracker *t, uint64_t before, uint32_t *pids, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nr_procs && n < max; i++)
		if (t->procs[i].exited && t->procs[i].exit_time < before)
			pids[n++] = t->procs[i].pid;
	return n;
}

void fl_tracker__forget(struct fl_tracker *t, const uint32_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!proc_find(t, pids[i]))
			continue;
		proc_remove(t, pids[i]);
		t->st.forgotten++;
	}
}

int fl_tracker__changed(struct fl_tracker *t, fl_tracker_changed_fn fn, void *ctx)
{
	size_t i;
	int err = 0;

	for (i = 0; i < t->nr_changed && !err; i++) {
		struct tproc *p = proc_find(t, t->changed[i]);

		if (!p) {
			err = fn(ctx, t->changed[i], NULL, 0);
			continue;
		}
		p->changed = false;
		err = p->exited ? fn(ctx, p->pid, NULL, 0) : fn(ctx, p->pid, p->maps, p->nr_maps);
	}
	/* What fn did not see (it failed) is told next time. */
	if (i && i < t->nr_changed)
		memmove(t->changed, t->changed + i, (t->nr_changed - i) * sizeof(*t->changed));
	t->nr_changed -= i;
	return err;
}

bool fl_tracker__is_kthread(const struct fl_tracker *t, uint32_t pid)
{
	const struct tproc *p;

	/* The idle task and kthreadd, whatever was scanned. */
	if (pid == 0 || pid == t->kthreadd)
		return true;
	p = proc_find(t, pid);
	return p && p->kthread;
}

void fl_tracker__stats(const struct fl_tracker *t, struct fl_tracker_stats *st)
{
	*st = t->st;
	st->processes = t->nr_procs;
}
