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

#include "flamed/common/budget.h"
#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/symbols/perfmap.h"
#include "flamed/common/strpool.h"
#include "common/hash.h"
#include "common/parse.h"
#include "flamed/files/regfile.h"

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

/* What is read from a file; goes as a whole when the file is re-read from the start. */
struct pm_content {
	uint64_t size_seen; /* st_size at the last read */
	uint64_t parsed;    /* bytes consumed: complete lines, or a too-long line being skipped */
	bool skipping;	    /* inside a too-long line: drop bytes up to the next newline */
	bool index_stale;   /* entries added but the index could not be rebuilt (ENOMEM) */
	bool over_budget;   /* reading stopped at a line the budget had no room for */
	uint64_t need;	    /* ... which needs this much room */
	struct fl_perfmap_cache *cache; /* charged (its budget, its bytes); NULL: nothing */
	uint64_t charged;		/* what this content took */
	struct fl_strpool *names;
	struct pm_entry *ents;
	size_t nr_ents, cap_ents;
	struct pm_seg *segs;
	size_t nr_segs;
	struct fl_perfmap_stats st;
};

/* One file (one inode), shared by the maps of a cache that opened it. */
struct pm_file {
	struct pm_file *next;		/* in the cache's bucket */
	struct fl_perfmap_cache *cache; /* NULL: private to one map */
	unsigned int refs;		/* maps using it */
	int fd;
	dev_t dev;
	ino_t ino;
	bool read;	     /* read at least once since it was (re)started */
	uint64_t version;    /* changes with the entries */
	uint64_t nr_reloads; /* re-read from the start (it shrank) */
	uint64_t used;	     /* the cache's generation at the last refresh */
	/* Re-reads from the start in the cache's generation reread_gen (see may_reread()). */
	uint64_t reread_gen;
	unsigned int rereads;
	struct pm_content c;
};

struct fl_perfmap_cache {
	struct pm_file **buckets; /* chained by (dev, ino); power-of-two count */
	size_t nr_buckets, nr_files;
	struct fl_budget *budget;
	uint64_t bytes, peak_bytes; /* charged by the contents held */
	uint64_t gen;		    /* fl_perfmap_cache__trim() calls */
	uint64_t rereads_refused;   /* see may_reread() */
	/* The counters that only grow, and those of the files (or contents) no longer held. */
	struct fl_perfmap_cache_stats gone;
};

struct fl_perfmap {
	int root_fd;
	int nspid;
	uint32_t uid;	   /* the process's real uid */
	uint64_t start_ns; /* when the process started, CLOCK_REALTIME */
	uint64_t nr_reloads;   /* files replaced, and the re-reads of the file seen */
	uint64_t file_reloads; /* f->nr_reloads when last counted */
	uint64_t version;      /* f->version at the last refresh */
	struct fl_perfmap_cache *cache;
	struct pm_file *f;
};

/*
 * What one entry may hold at most, its name aside, so that the budget is
 * never an underestimate: its pm_entry (24 bytes, in an array up to twice
 * as big as its use), two index segments (24 bytes each) allocated per
 * entry and, while the index is rebuilt, the old ones and the sort and heap
 * arrays (20 bytes); in the string pool, an entry (16 bytes, doubled) and a
 * hash slot (8 bytes at a load of 3/8 to 3/4). Checked against malloc in
 * the unit tests.
 */
#define PM_ENTRY_BYTES 224u
/* What a file read holds before any entry: its structures, a read buffer, the pool's first chunk. */
#define PM_FILE_BYTES (sizeof(struct pm_file) + READ_CHUNK + (64u << 10))

/* A name of len bytes: its copy in the pool, whose 64 KiB chunks may waste a quarter of themselves. */
static uint64_t entry_bytes(size_t len)
{
	return PM_ENTRY_BYTES + (uint64_t)len + 1 + ((uint64_t)len + 1) / 3;
}

enum pm_line {
	PM_OK,
	PM_BAD_HEX,
	PM_ZERO_SIZE,
	PM_OVERFLOW,
	PM_NO_NAME,
	PM_BAD_CHAR,
};

DEFINE_FREE_FUNC(struct fl_perfmap, fl_perfmap__free)

/* Charges n bytes to c's cache and its budget if they fit; false when not. */
static bool content_charge(struct pm_content *c, uint64_t n)
{
	struct fl_perfmap_cache *k = c->cache;

	if (!k) {
		c->charged += n;
		return true;
	}
	if (!fl_budget__take(k->budget, n))
		return false;
	c->charged += n;
	k->bytes += n;
	if (k->bytes > k->peak_bytes)
		k->peak_bytes = k->bytes;
	return true;
}

/* Frees what was read and gives its memory back; c is empty (same cache) after. */
static void content_fini(struct pm_content *c)
{
	struct fl_perfmap_cache *k = c->cache;

	if (k) {
		fl_budget__give(k->budget, c->charged);
		k->bytes -= c->charged;
	}
	fl_strpool__free(c->names);
	free(c->ents);
	free(c->segs);
	memset(c, 0, sizeof(*c));
	c->cache = k;
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
	/*
	 * The process's own: not root's too, as a user binds any file root
	 * owns over the path in a mount namespace of its own.
	 */
	if (st->st_uid != m->uid)
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

/* Returns 0, -ENOMEM, or -ENOSPC when the budget has no room for the entry. */
static int add_entry(struct pm_content *f, uint64_t start, uint64_t end, const char *name,
		     size_t len)
{
	uint64_t cost = entry_bytes(len) + (f->charged ? 0 : PM_FILE_BYTES);
	uint32_t id;
	int err;

	if (f->nr_ents >= FL_PERFMAP_MAX_ENTRIES) {
		f->st.nr_over_max++;
		return 0;
	}
	if (f->cache && !fl_budget__fits(f->cache->budget, cost)) {
		f->need = cost;
		return -ENOSPC;
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
	content_charge(f, cost); /* fits: checked above */
	f->ents[f->nr_ents++] = (struct pm_entry){
		.start = start,
		.end = end,
		.name = fl_strpool__str(f->names, id),
	};
	f->st.nr_entries = f->nr_ents;
	f->st.bytes = f->charged;
	return 0;
}

/*
 * One complete line without its newline. Returns 1 when it added an entry,
 * 0, -ENOMEM or -ENOSPC (no room in the budget).
 */
static int take_line(struct pm_content *f, const char *line, size_t len)
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
 * Parses the complete lines of fd in [f->parsed, min(size, cap)). A partial
 * last line is left unconsumed unless it is already too long, in which case
 * it is counted and its remaining bytes are skipped up to the next newline,
 * in this read or a later one. A line the budget has no room for stops the
 * read there (f->over_budget), to go on from it later. Sets *added when
 * entries were added.
 */
static int read_lines(int fd, struct pm_content *f, uint64_t size, bool *added)
{
	uint64_t lim = size < FL_PERFMAP_MAX_FILE_SIZE ? size : FL_PERFMAP_MAX_FILE_SIZE;
	uint64_t off = f->parsed; /* file offset of buf[0] */
	_cleanup_free_ char *buf = NULL;
	size_t have = 0;
	int err = 0;

	f->st.bytes_ignored = size - lim;
	f->size_seen = size;
	f->over_budget = false;
	f->st.bytes_over_budget = 0;
	if (off >= lim)
		return 0;
	f->size_seen = off; /* until the read succeeds: a failed one is retried */
	buf = malloc(READ_CHUNK);
	if (!buf)
		return -ENOMEM;
	while (off + have < lim) {
		uint64_t left = lim - off - have;
		size_t want = READ_CHUNK - have < left ? READ_CHUNK - have : (size_t)left;
		ssize_t n = pread(fd, buf + have, want, (off_t)(off + have));
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
	if (err == -ENOSPC) {
		f->over_budget = true;
		f->st.bytes_over_budget = lim - off;
		err = 0;
	}
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
static int build_index(struct pm_content *f)
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

/* The cache of files */

static size_t bucket_of(const struct fl_perfmap_cache *c, dev_t dev, ino_t ino)
{
	return fl_hash_u64_pair((uint64_t)ino, (uint64_t)dev) & (c->nr_buckets - 1);
}

static struct pm_file *cache_find(const struct fl_perfmap_cache *c, dev_t dev, ino_t ino)
{
	if (!c->nr_buckets)
		return NULL;
	for (struct pm_file *f = c->buckets[bucket_of(c, dev, ino)]; f; f = f->next)
		if (f->ino == ino && f->dev == dev)
			return f;
	return NULL;
}

/* Room for one more file at a load of at most 1. */
static int cache_reserve(struct fl_perfmap_cache *c)
{
	size_t n = c->nr_buckets ? c->nr_buckets * 2 : 64;
	struct pm_file **old = c->buckets, **b;
	size_t nr_old = c->nr_buckets;

	if (c->nr_files < c->nr_buckets)
		return 0;
	b = calloc(n, sizeof(*b));
	if (!b)
		return -ENOMEM;
	c->buckets = b;
	c->nr_buckets = n;
	for (size_t i = 0; i < nr_old; i++) {
		for (struct pm_file *f = old[i], *next; f; f = next) {
			size_t j = bucket_of(c, f->dev, f->ino);

			next = f->next;
			f->next = b[j];
			b[j] = f;
		}
	}
	free(old);
	return 0;
}

static void cache_remove(struct fl_perfmap_cache *c, struct pm_file *f)
{
	struct pm_file **pp = &c->buckets[bucket_of(c, f->dev, f->ino)];

	while (*pp && *pp != f)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = f->next;
		c->nr_files--;
	}
}

/* Adds the line counters of a content that goes away to the cache's. */
static void add_lines(struct fl_perfmap_stats *to, const struct fl_perfmap_stats *st)
{
	to->nr_lines += st->nr_lines;
	to->nr_entries += st->nr_entries;
	to->nr_malformed += st->nr_malformed;
	to->nr_bad_hex += st->nr_bad_hex;
	to->nr_zero_size += st->nr_zero_size;
	to->nr_overflow += st->nr_overflow;
	to->nr_no_name += st->nr_no_name;
	to->nr_bad_char += st->nr_bad_char;
	to->nr_too_long += st->nr_too_long;
	to->nr_over_max += st->nr_over_max;
	to->bytes_parsed += st->bytes_parsed;
	to->bytes_ignored += st->bytes_ignored;
}

/*
 * The file held for (dev, ino) in the cache, with one more user; else a new
 * one that takes *fd. Without a cache, always a new one of its own.
 */
static int file_get(struct fl_perfmap_cache *c, int *fd, const struct stat *st,
		    struct pm_file **ret)
{
	struct pm_file *f = c ? cache_find(c, st->st_dev, st->st_ino) : NULL;

	if (f) {
		f->refs++;
		c->gone.shared++;
		*ret = f;
		return 0;
	}
	if (c && cache_reserve(c))
		return -ENOMEM;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = TAKE_FD(*fd);
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->refs = 1;
	f->cache = c;
	f->c.cache = c;
	if (c) {
		size_t j = bucket_of(c, f->dev, f->ino);

		f->used = c->gen;
		f->next = c->buckets[j];
		c->buckets[j] = f;
		c->nr_files++;
	}
	*ret = f;
	return 0;
}

/* One user less; the last frees the file. Accepts NULL. */
static void file_put(struct pm_file *f)
{
	struct fl_perfmap_cache *c;

	if (!f || --f->refs)
		return;
	c = f->cache;
	if (c) {
		cache_remove(c, f);
		add_lines(&c->gone.lines, &f->c.st);
		c->gone.bytes_over_budget += f->c.st.bytes_over_budget;
	}
	content_fini(&f->c);
	close(f->fd);
	free(f);
}

/* Reading a file */

/* Counts a read that stopped at the budget, once per stop. */
static void note_budget(struct pm_file *f, bool was_over)
{
	if (f->cache && f->c.over_budget && !was_over)
		f->cache->gone.over_budget++;
}

/*
 * Reads f from the start into a new content that takes the place of its
 * current one (whose names go) once read; on failure the old one stays.
 * nspid names the file in debug messages.
 */
static int file_read_all(struct pm_file *f, uint64_t size, int nspid)
{
	struct pm_content c = {.cache = f->cache};
	bool added = false;
	int err = fl_strpool__new(&c.names);

	if (!err)
		err = read_lines(f->fd, &c, size, &added);
	if (!err)
		err = build_index(&c);
	if (err) {
		content_fini(&c);
		return err;
	}
	content_fini(&f->c);
	f->c = c;
	f->read = true;
	f->version++;
	note_budget(f, false);
	if (f->cache)
		f->cache->gone.files_read++;
	fl_pr_debug("perfmap: read tmp/perf-%d.map (inode %llu) from the start: %zu entries, "
		    "%llu bytes held%s\n",
		    nspid, (unsigned long long)f->ino, c.nr_ents, (unsigned long long)c.charged,
		    c.over_budget ? ", reading stopped at the memory budget" : "");
	return 0;
}

/* Reads what was appended to f since, or what the budget left unread. */
static int file_read_more(struct pm_file *f, uint64_t size)
{
	bool added = false, was_over = f->c.over_budget;
	int err = read_lines(f->fd, &f->c, size, &added);

	if (added || f->c.index_stale) {
		int e = build_index(&f->c);

		if (e && !err)
			err = e;
	}
	if (added)
		f->version++;
	note_budget(f, was_over);
	return err;
}

/* Whether f has more to read now: it grew, an index to finish, room for the line that did not fit. */
static bool file_behind(const struct pm_file *f, uint64_t size)
{
	if (size != f->c.size_seen || f->c.index_stale)
		return true;
	return f->c.over_budget && fl_budget__fits(f->cache ? f->cache->budget : NULL, f->c.need);
}

/* Makes f (held by m, which takes it; fd taken too) m's file; the file it had goes. */
static int switch_file(struct fl_perfmap *m, int *fd, const struct stat *st)
{
	struct pm_file *old = m->f, *f;
	int err = file_get(m->cache, fd, st, &f);

	if (err)
		return err;
	if (old)
		m->nr_reloads += old->nr_reloads - m->file_reloads + 1;
	file_put(old);
	m->f = f;
	m->file_reloads = f->nr_reloads;
	return 0;
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
	m->root_fd = -1;
	m->cache = opts->cache;
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
	err = switch_file(m, &fd, &st);
	if (err)
		return err;
	if (m->cache)
		m->cache->gone.opened++;
	if (m->f->refs > 1)
		fl_pr_debug("perfmap: pid %d: tmp/perf-%d.map is a file already open for another "
			    "process (inode %llu): read once for both\n",
			    opts->pid, m->nspid, (unsigned long long)st.st_ino);
	if (!opts->defer_read) {
		err = fl_perfmap__refresh(m);
		if (err < 0)
			return err;
	}
	m->version = m->f->version;
	*ret = TAKE_PTR(m);
	return 0;
}

/* The file we hold was unlinked: look the path up again. 1: m has another file now. */
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
	if (st.st_dev == m->f->dev && st.st_ino == m->f->ino)
		return 0; /* raced with a link(): still the same file */
	err = switch_file(m, &fd, &st);
	return err ? err : 1;
}

/*
 * A map that shrank is read again from the start: a JIT that started its
 * map over. One that shrinks and grows back between every two lookups
 * would make flamed parse up to FL_PERFMAP_MAX_FILE_SIZE per lookup; so a
 * file is re-read at most FL_PERFMAP_MAX_REREADS times per generation of
 * its cache, and keeps the entries it has after that.
 */
static bool may_reread(struct pm_file *f)
{
	uint64_t gen = f->cache ? f->cache->gen : 0;

	if (f->reread_gen != gen) {
		f->reread_gen = gen;
		f->rereads = 0;
	}
	if (f->rereads < FL_PERFMAP_MAX_REREADS) {
		f->rereads++;
		return true;
	}
	if (f->cache)
		f->cache->rereads_refused++;
	return false;
}

int fl_perfmap__refresh(struct fl_perfmap *m)
{
	bool replaced = false;
	struct pm_file *f;
	struct stat st;
	int err = 0;

	if (!m)
		return -EINVAL;
	f = m->f;
	if (fstat(f->fd, &st) < 0)
		return -errno;
	if (st.st_nlink == 0) {
		/* Gone from the path: the process may still append to what it holds open, as we do. */
		err = reopen(m);
		if (err < 0 && err != -ENOENT)
			return err; /* a refusal */
		if (err == 1) {
			replaced = true;
			f = m->f;
			if (fstat(f->fd, &st) < 0)
				return -errno;
		}
		err = 0;
	}
	if (f->cache)
		f->used = f->cache->gen;
	if (!f->read || (uint64_t)st.st_size < f->c.size_seen) {
		bool shrank = f->read;

		if (shrank && !may_reread(f))
			return 0;
		err = file_read_all(f, (uint64_t)st.st_size, m->nspid);
		if (!err && shrank)
			f->nr_reloads++;
	} else if (file_behind(f, (uint64_t)st.st_size)) {
		err = file_read_more(f, (uint64_t)st.st_size);
	}
	if (err)
		return err;
	if (!replaced && m->version == f->version)
		return 0;
	m->version = f->version;
	return 1;
}

const char *fl_perfmap__find(const struct fl_perfmap *m, uint64_t addr)
{
	const struct pm_content *c;
	size_t lo = 0, hi;

	if (!m)
		return NULL;
	c = &m->f->c;
	hi = c->nr_segs;
	/* The first segment starting after addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->segs[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= c->segs[lo - 1].end)
		return NULL;
	return c->segs[lo - 1].name;
}

void fl_perfmap__stats(const struct fl_perfmap *m, struct fl_perfmap_stats *stats)
{
	if (!stats)
		return;
	memset(stats, 0, sizeof(*stats));
	if (!m)
		return;
	*stats = m->f->c.st;
	stats->nr_reloads = m->nr_reloads + (m->f->nr_reloads - m->file_reloads);
}

void fl_perfmap__free(struct fl_perfmap *m)
{
	if (!m)
		return;
	file_put(m->f);
	if (m->root_fd >= 0)
		close(m->root_fd);
	free(m);
}

int fl_perfmap_cache__new(const struct fl_perfmap_cache_opts *opts, struct fl_perfmap_cache **ret)
{
	struct fl_perfmap_cache *c;

	if (!opts || opts->sz < sizeof(*opts) || !ret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->budget = opts->budget;
	*ret = c;
	return 0;
}

void fl_perfmap_cache__free(struct fl_perfmap_cache *c)
{
	if (!c)
		return;
	/* Files still held would point here: their maps were not freed (a caller's bug). */
	for (size_t i = 0; i < c->nr_buckets; i++)
		for (struct pm_file *f = c->buckets[i]; f; f = f->next)
			f->cache = f->c.cache = NULL;
	free(c->buckets);
	free(c);
}

void fl_perfmap_cache__trim(struct fl_perfmap_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nr_buckets; i++) {
		for (struct pm_file *f = c->buckets[i]; f; f = f->next) {
			if (!f->read || f->used + 1 >= c->gen)
				continue;
			add_lines(&c->gone.lines, &f->c.st);
			content_fini(&f->c);
			f->read = false;
			f->version++;
		}
	}
	c->gen++;
}

void fl_perfmap_cache__stats(const struct fl_perfmap_cache *c, struct fl_perfmap_cache_stats *st)
{
	if (!st)
		return;
	memset(st, 0, sizeof(*st));
	if (!c)
		return;
	*st = c->gone;
	st->files = c->nr_files;
	st->bytes = c->bytes;
	st->peak_bytes = c->peak_bytes;
	st->rereads_refused = c->rereads_refused;
	for (size_t i = 0; i < c->nr_buckets; i++) {
		for (const struct pm_file *f = c->buckets[i]; f; f = f->next) {
			add_lines(&st->lines, &f->c.st);
			st->bytes_over_budget += f->c.st.bytes_over_budget;
		}
	}
}
