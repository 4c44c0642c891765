// SPDX-License-Identifier: GPL-2.0-or-later
/* Reads the perf map a JIT writes for its code, re-reading only what was appended, trusting none of it. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed/cleanup.h"
#include "flamed/log.h"
#include "flamed/perfmap.h"
#include "flamed/strpool.h"
#include "parse.h"
#include "flamed/regfile.h"

#define NSEC_PER_SEC 1000000000ull
#define READ_CHUNK (64u << 10) /* > FL_PERFMAP_MAX_LINE + 1: a whole line always fits */

/* One good line, in file order: a later index is a later line. */
struct pm_entry {
	uint64_t start, end; /* [start, end) */
	const char *name;    /* in the file's pool */
};

/* The lookup index: disjoint, sorted, each range named by the latest entry covering it. */
struct pm_seg {
	uint64_t start, end;
	const char *name;
};

/* Everything that belongs to one file (one inode) and goes when it is re-read from the start. */
struct pm_file {
	int fd;
	dev_t dev;
	ino_t ino;
	uint64_t size_seen; /* st_size at the last read */
	uint64_t parsed;    /* bytes consumed: complete lines, or a too-long line being skipped */
	bool skipping;	    /* inside a too-long line: drop bytes up to the next newline */
	bool index_stale;   /* entries added but the index could not be rebuilt (ENOMEM) */
	struct fl_strpool *names;
	struct pm_entry *ents;
	size_t nr_ents, cap_ents;
	struct pm_seg *segs;
	size_t nr_segs;
	struct fl_perfmap_stats st;
};

struct fl_perfmap {
	int root_fd;
	int nspid;
	uint32_t uid;	   /* the process's real uid */
	uint64_t start_ns; /* when the process started, CLOCK_REALTIME */
	uint64_t nr_reloads;
	struct pm_file f;
};

enum pm_line {
	PM_OK,
	PM_BAD_HEX,
	PM_ZERO_SIZE,
	PM_OVERFLOW,
	PM_NO_NAME,
	PM_BAD_CHAR,
};

DEFINE_FREE_FUNC(struct fl_perfmap, fl_perfmap__free)

static void file_fini(struct pm_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	fl_strpool__free(f->names);
	free(f->ents);
	free(f->segs);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

/* /proc readers */

/* The number after "Uid:" (the real uid) and the last one after "NSpid:". */
static int read_status(int pid, uint32_t *uid, int *nspid)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	bool have_uid = false, have_nspid = false;
	size_t cap = 0;
	char path[32];
	uint64_t v;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		const char *p = line;

		if (!strncmp(line, "Uid:", 4)) {
			p += 4;
			while (*p == '\t' || *p == ' ')
				p++;
			if (fl_parse_uint(&p, 10, UINT32_MAX, &v))
				return -EINVAL;
			*uid = (uint32_t)v;
			have_uid = true;
		} else if (!strncmp(line, "NSpid:", 6)) {
			p += 6;
			for (;;) {
				while (*p == '\t' || *p == ' ')
					p++;
				if (fl_parse_uint(&p, 10, INT32_MAX, &v))
					break;
				*nspid = (int)v;
				have_nspid = true;
			}
		}
	}
	if (ferror(f))
		return -EIO;
	if (!have_uid)
		return -EINVAL;
	if (!have_nspid) /* Linux < 4.1: no pid namespaces to translate */
		*nspid = pid;
	return 0;
}

int fl_perfmap__proc_nspid(int pid, int *nspid)
{
	uint32_t uid;
	int v, err;

	if (pid <= 0 || !nspid)
		return -EINVAL;
	err = read_status(pid, &uid, &v);
	if (err)
		return err;
	*nspid = v;
	return 0;
}

/* Reads a small /proc file whole, NUL-terminated. */
static int read_small(const char *path, char *buf, size_t size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t have = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (have < size - 1) {
		n = read(fd, buf + have, size - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		have += (size_t)n;
	}
	buf[have] = '\0';
	return 0;
}

/* starttime, field 22 of /proc/PID/stat, in clock ticks since boot. */
static int read_starttime(int pid, uint64_t *ticks)
{
	char path[32], buf[1024];
	const char *p;
	int err, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	err = read_small(path, buf, sizeof(buf));
	if (err)
		return err;
	/* comm (field 2) may hold spaces and parentheses: fields 3.. follow the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	for (i = 3; i < 22; i++) {
		if (*p != ' ')
			return -EINVAL;
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	p++;
	return fl_parse_uint(&p, 10, UINT64_MAX, ticks) ? -EINVAL : 0;
}

static int read_btime(uint64_t *btime)
{
	char buf[16384];
	const char *p;
	int err;

	err = read_small("/proc/stat", buf, sizeof(buf));
	if (err)
		return err;
	p = strstr(buf, "\nbtime ");
	if (!p)
		return -EINVAL;
	p += strlen("\nbtime ");
	return fl_parse_uint(&p, 10, UINT64_MAX / NSEC_PER_SEC - 1, btime) ? -EINVAL : 0;
}

int fl_perfmap__proc_owner(int pid, uint32_t *uid, uint64_t *start_ns)
{
	uint64_t ticks, btime, hz, since_boot;
	uint32_t u;
	int nspid, err;
	long tck;

	if (pid <= 0 || !uid || !start_ns)
		return -EINVAL;
	err = read_status(pid, &u, &nspid);
	if (!err)
		err = read_starttime(pid, &ticks);
	if (!err)
		err = read_btime(&btime);
	if (err)
		return err;
	tck = sysconf(_SC_CLK_TCK);
	hz = tck > 0 ? (uint64_t)tck : 100;
	/* Both parts round down: the result is never after the real start. */
	since_boot = ticks / hz * NSEC_PER_SEC + ticks % hz * NSEC_PER_SEC / hz;
	*uid = u;
	*start_ns = btime * NSEC_PER_SEC + since_boot;
	return 0;
}

/* Opening and checking the file */

static int open_map_file(int root_fd, int nspid)
{
	const unsigned int flags = FL_REGFILE_NOFOLLOW;
	_cleanup_close_ int dir = -1;
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "tmp/perf-%d.map", nspid);
	/*
	 * RESOLVE_IN_ROOT: ".." and absolute symlinks stop at the process's
	 * root, like for it. The file is looked at through O_PATH first: a
	 * FIFO or a device (a bind mount needs no symlink) is never opened.
	 */
	fd = fl_regfile__open(root_fd, path, flags | FL_REGFILE_IN_ROOT, NULL);
	if (fd == -ENOSYS) {
		/* No openat2 (Linux < 5.6, or a seccomp filter): follow no symlink at all. */
		dir = openat(root_fd, "tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dir < 0)
			return -errno;
		fd = fl_regfile__open(dir, path + strlen("tmp/"), flags, NULL);
	}
	/* Not a regular file, whatever it is instead (perfmap.h). */
	return fd == -EISDIR ? -EINVAL : fd;
}

/* Not older than the process, less the slack: one left by an earlier process with this pid is. */
static bool is_fresh(const struct stat *st, uint64_t start_ns)
{
	uint64_t mtime_ns;

	if (st->st_mtim.tv_sec < 0)
		return false;
	if ((uint64_t)st->st_mtim.tv_sec >= UINT64_MAX / NSEC_PER_SEC - 1)
		return true;
	mtime_ns = (uint64_t)st->st_mtim.tv_sec * NSEC_PER_SEC + (uint64_t)st->st_mtim.tv_nsec;
	return mtime_ns + FL_PERFMAP_START_SLACK_NS >= start_ns;
}

static int check_file(const struct fl_perfmap *m, int fd, struct stat *st)
{
	if (fstat(fd, st) < 0)
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	if (st->st_uid != m->uid && st->st_uid != 0)
		return -EPERM;
	if (!is_fresh(st, m->start_ns))
		return -ESTALE;
	return 0;
}

/* Parsing */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* NUL, CR, and the other control characters but tab: no JIT names code with those. */
static bool has_bad_char(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return true;
	}
	return false;
}

/* A hex number with an optional 0x, as perf's reader takes it. */
static int parse_hex(const char **pp, const char *lim, uint64_t *v)
{
	const char *p = *pp;

	if (lim - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && fl_hexval(p[2]) >= 0)
		p += 2;
	/* Safe past lim: the line ends with a newline, which is no digit. */
	if (fl_parse_uint(&p, 16, UINT64_MAX, v) || p > lim)
		return -EINVAL;
	*pp = p;
	return 0;
}

/*
 * Classifies the len bytes at line (a '\n' follows them) and, when good,
 * fills in the range and where the name is.
 */
static enum pm_line parse_line(const char *line, size_t len, uint64_t *start, uint64_t *end,
			       const char **name, size_t *name_len)
{
	const char *p = line, *lim = line + len;
	uint64_t size;

	if (has_bad_char(line, len))
		return PM_BAD_CHAR;
	if (parse_hex(&p, lim, start) || p == lim || !is_blank(*p))
		return PM_BAD_HEX;
	while (p < lim && is_blank(*p))
		p++;
	if (parse_hex(&p, lim, &size) || (p < lim && !is_blank(*p)))
		return PM_BAD_HEX;
	while (p < lim && is_blank(*p))
		p++;
	if (size == 0)
		return PM_ZERO_SIZE;
	if (size > UINT64_MAX - *start)
		return PM_OVERFLOW;
	if (p == lim)
		return PM_NO_NAME;
	*end = *start + size;
	*name = p;
	*name_len = (size_t)(lim - p);
	return PM_OK;
}

static int add_entry(struct pm_file *f, uint64_t start, uint64_t end, const char *name, size_t len)
{
	uint32_t id;
	int err;

	if (f->nr_ents >= FL_PERFMAP_MAX_ENTRIES) {
		f->st.nr_over_max++;
		return 0;
	}
	if (f->nr_ents == f->cap_ents) {
		size_t cap = f->cap_ents ? f->cap_ents * 2 : 64;
		struct pm_entry *ents = reallocarray(f->ents, cap, sizeof(*ents));

		if (!ents)
			return -ENOMEM;
		f->ents = ents;
		f->cap_ents = cap;
	}
	err = fl_strpool__intern(f->names, name, len, &id);
	if (err)
		return err;
	f->ents[f->nr_ents++] = (struct pm_entry){
		.start = start,
		.end = end,
		.name = fl_strpool__str(f->names, id),
	};
	f->st.nr_entries = f->nr_ents;
	return 0;
}

/* One complete line without its newline. Returns 1 when it added an entry, 0, or -ENOMEM. */
static int take_line(struct pm_file *f, const char *line, size_t len)
{
	uint64_t start = 0, end = 0;
	const char *name = NULL;
	size_t name_len = 0;
	size_t before = f->nr_ents;
	int err;

	f->st.nr_lines++;
	if (len > FL_PERFMAP_MAX_LINE) {
		f->st.nr_too_long++;
		return 0;
	}
	switch (parse_line(line, len, &start, &end, &name, &name_len)) {
	case PM_OK:
		err = add_entry(f, start, end, name, name_len);
		if (err) {
			f->st.nr_lines--; /* seen again on the retry */
			return err;
		}
		return f->nr_ents != before;
	case PM_BAD_HEX:
		f->st.nr_bad_hex++;
		break;
	case PM_ZERO_SIZE:
		f->st.nr_zero_size++;
		break;
	case PM_OVERFLOW:
		f->st.nr_overflow++;
		break;
	case PM_NO_NAME:
		f->st.nr_no_name++;
		break;
	case PM_BAD_CHAR:
		f->st.nr_bad_char++;
		break;
	}
	f->st.nr_malformed++;
	return 0;
}

/*
 * Parses the complete lines in [f->parsed, min(size, cap)). A partial last
 * line is left unconsumed unless it is already too long, in which case it is
 * counted and its remaining bytes are skipped up to the next newline, in
 * this read or a later one. Sets *added when entries were added.
 */
static int read_lines(struct pm_file *f, uint64_t size, bool *added)
{
	uint64_t lim = size < FL_PERFMAP_MAX_FILE_SIZE ? size : FL_PERFMAP_MAX_FILE_SIZE;
	uint64_t off = f->parsed; /* file offset of buf[0] */
	_cleanup_free_ char *buf = NULL;
	size_t have = 0;
	int err = 0;

	f->st.bytes_ignored = size - lim;
	f->size_seen = size;
	if (off >= lim)
		return 0;
	f->size_seen = off; /* until the read succeeds: a failed one is retried */
	buf = malloc(READ_CHUNK);
	if (!buf)
		return -ENOMEM;
	while (off + have < lim) {
		uint64_t left = lim - off - have;
		size_t want = READ_CHUNK - have < left ? READ_CHUNK - have : (size_t)left;
		ssize_t n = pread(f->fd, buf + have, want, (off_t)(off + have));
		char *p = buf, *end, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0) /* truncated meanwhile: the next refresh sees it shrunk */
			break;
		have += (size_t)n;
		end = buf + have;
		while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
			if (f->skipping) {
				f->skipping = false;
			} else {
				err = take_line(f, p, (size_t)(nl - p));
				if (err < 0)
					break;
				if (err > 0)
					*added = true;
				err = 0;
			}
			p = nl + 1;
		}
		if (err < 0) {
			off += (uint64_t)(p - buf);
			have = 0;
			break;
		}
		if (f->skipping || (size_t)(end - p) > FL_PERFMAP_MAX_LINE) {
			if (!f->skipping) {
				f->st.nr_lines++;
				f->st.nr_too_long++;
				f->skipping = true;
			}
			off += have;
			have = 0;
		} else {
			memmove(buf, p, (size_t)(end - p));
			off += (uint64_t)(p - buf);
			have = (size_t)(end - p);
		}
	}
	f->parsed = off;
	f->st.bytes_parsed = off;
	if (!err)
		f->size_seen = size;
	return err;
}

/* The index */

struct pm_start {
	uint64_t start;
	uint32_t idx;
};

static int cmp_start(const void *a, const void *b)
{
	const struct pm_start *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* A max-heap of entry indices: the top is the latest entry. */
static void heap_push(uint32_t *h, size_t *n, uint32_t v)
{
	size_t i = (*n)++;

	while (i && h[(i - 1) / 2] < v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static void heap_pop(uint32_t *h, size_t *n)
{
	uint32_t v = h[--*n];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < *n) {
		if (c + 1 < *n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

/*
 * Sweeps the entries by address with the live ones in a heap: between two
 * consecutive starts or ends, the latest live entry names the range. At most
 * 2n - 1 segments.
 */
static int build_index(struct pm_file *f)
{
	_cleanup_free_ struct pm_start *order = NULL;
	_cleanup_free_ uint32_t *heap = NULL;
	struct pm_seg *segs;
	size_t n = f->nr_ents, i = 0, nh = 0, ns = 0;
	uint64_t pos = 0;

	if (!n) {
		free(f->segs);
		f->segs = NULL;
		f->nr_segs = 0;
		f->index_stale = false;
		return 0;
	}
	order = calloc(n, sizeof(*order));
	heap = calloc(n, sizeof(*heap));
	segs = calloc(2 * n, sizeof(*segs));
	if (!order || !heap || !segs) {
		free(segs);
		f->index_stale = true;
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++)
		order[k] = (struct pm_start){.start = f->ents[k].start, .idx = (uint32_t)k};
	qsort(order, n, sizeof(*order), cmp_start);

	while (i < n || nh) {
		const struct pm_entry *top;
		uint64_t next;

		if (!nh)
			pos = order[i].start;
		while (i < n && order[i].start <= pos)
			heap_push(heap, &nh, order[i++].idx);
		while (nh && f->ents[heap[0]].end <= pos)
			heap_pop(heap, &nh);
		if (!nh)
			continue;
		top = &f->ents[heap[0]];
		next = top->end;
		if (i < n && order[i].start < next)
			next = order[i].start;
		if (ns && segs[ns - 1].end == pos && segs[ns - 1].name == top->name)
			segs[ns - 1].end = next;
		else
			segs[ns++] = (struct pm_seg){.start = pos, .end = next, .name = top->name};
		pos = next;
	}
	free(f->segs);
	f->segs = segs;
	f->nr_segs = ns;
	f->index_stale = false;
	return 0;
}

/* Reading a file from the start */

/* Takes fd (closed on failure too) and reads it whole into a new pm_file. */
static int file_load(int fd, const struct stat *st, struct pm_file *out)
{
	struct pm_file f = {.fd = fd, .dev = st->st_dev, .ino = st->st_ino};
	bool added = false;
	int err;

	err = fl_strpool__new(&f.names);
	if (!err)
		err = read_lines(&f, (uint64_t)st->st_size, &added);
	if (!err)
		err = build_index(&f);
	if (err) {
		file_fini(&f);
		return err;
	}
	*out = f;
	return 0;
}

/* Replaces the current file by fd (taken), read from the start. */
static int reload(struct fl_perfmap *m, int fd, const struct stat *st)
{
	struct pm_file f;
	int err = file_load(fd, st, &f);

	if (err)
		return err;
	file_fini(&m->f);
	m->f = f;
	m->nr_reloads++;
	fl_pr_debug("perfmap: re-read tmp/perf-%d.map from the start: %zu entries\n", m->nspid,
		    f.nr_ents);
	return 1;
}

int fl_perfmap__open(const struct fl_perfmap_opts *opts, struct fl_perfmap **ret)
{
	_cleanup_(fl_perfmap__freep) struct fl_perfmap *m = NULL;
	_cleanup_close_ int fd = -1;
	struct stat st;
	char path[32];
	int err;

	if (!opts || opts->sz < sizeof(*opts) || opts->pid <= 0 || opts->nspid < 0 || !ret)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->f.fd = -1;
	m->root_fd = -1;
	if (opts->root_fd >= 0) {
		m->root_fd = fcntl(opts->root_fd, F_DUPFD_CLOEXEC, 3);
	} else {
		snprintf(path, sizeof(path), "/proc/%d/root", opts->pid);
		m->root_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	if (m->root_fd < 0)
		return -errno;
	/* A root_fd left at 0 by a designated initializer is stdin: no directory. */
	if (fstat(m->root_fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	m->nspid = opts->nspid;
	if (!m->nspid) {
		err = fl_perfmap__proc_nspid(opts->pid, &m->nspid);
		if (err)
			return err;
	}
	err = fl_perfmap__proc_owner(opts->pid, &m->uid, &m->start_ns);
	if (err)
		return err;

	fd = open_map_file(m->root_fd, m->nspid);
	if (fd < 0)
		return fd;
	err = check_file(m, fd, &st);
	if (err) {
		fl_pr_debug("perfmap: pid %d: tmp/perf-%d.map refused: %s\n", opts->pid, m->nspid,
			    strerror(-err));
		return err;
	}
	err = file_load(TAKE_FD(fd), &st, &m->f);
	if (err)
		return err;
	*ret = TAKE_PTR(m);
	return 0;
}

/* The file we hold was unlinked: look the path up again. */
static int reopen(struct fl_perfmap *m)
{
	_cleanup_close_ int fd = open_map_file(m->root_fd, m->nspid);
	struct stat st;
	int err;

	if (fd < 0)
		return fd;
	err = check_file(m, fd, &st);
	if (err)
		return err;
	if (st.st_dev == m->f.dev && st.st_ino == m->f.ino)
		return 0; /* raced with a link(): still the same file */
	return reload(m, TAKE_FD(fd), &st);
}

int fl_perfmap__refresh(struct fl_perfmap *m)
{
	struct stat st;
	bool added = false;
	int fd, err;

	if (!m)
		return -EINVAL;
	if (fstat(m->f.fd, &st) < 0)
		return -errno;
	if (st.st_nlink == 0) {
		/* Gone from the path: the process may still append to what it holds open, as we do. */
		err = reopen(m);
		if (err && err != -ENOENT)
			return err; /* 1: replaced and read from the start; or a refusal */
	}
	if ((uint64_t)st.st_size < m->f.size_seen) {
		fd = fcntl(m->f.fd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			return -errno;
		return reload(m, fd, &st);
	}
	if ((uint64_t)st.st_size == m->f.size_seen && !m->f.index_stale)
		return 0;
	err = read_lines(&m->f, (uint64_t)st.st_size, &added);
	if (added || m->f.index_stale) {
		int e = build_index(&m->f);

		if (e && !err)
			err = e;
	}
	if (err)
		return err;
	return added;
}

const char *fl_perfmap__find(const struct fl_perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!m)
		return NULL;
	hi = m->f.nr_segs;
	/* The first segment starting after addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->f.segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= m->f.segs[lo - 1].end)
		return NULL;
	return m->f.segs[lo - 1].name;
}

void fl_perfmap__stats(const struct fl_perfmap *m, struct fl_perfmap_stats *stats)
{
	if (!stats)
		return;
	memset(stats, 0, sizeof(*stats));
	if (!m)
		return;
	*stats = m->f.st;
	stats->nr_reloads = m->nr_reloads;
}

void fl_perfmap__free(struct fl_perfmap *m)
{
	if (!m)
		return;
	file_fini(&m->f);
	if (m->root_fd >= 0)
		close(m->root_fd);
	free(m);
}
