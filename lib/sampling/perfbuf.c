// SPDX-License-Identifier: GPL-2.0-or-later
/* The perf_event ring reader, perf_event_open, the online-CPU list and per-CPU event sets. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/sampling/perfbuf.h"
#include "common/parse.h"

/* perf_event_header.size is 16 bits: no record is longer than this. */
#define PB_MAX_RECORD 65536

/* Higher CPU numbers than this in a CPU list are taken as garbage (NR_CPUS is at most 8192). */
#define PB_MAX_CPU 65535

struct fl_perfbuf {
	int fd;
	void *base; /* metadata page followed by the data pages */
	size_t map_len;
	struct perf_event_mmap_page *meta;
	const unsigned char *data;
	uint64_t size; /* bytes of data, a power of two */
	uint64_t mask;
	/* A record that wraps around the end of the ring is assembled here. */
	unsigned char *scratch;
	size_t scratch_len;
	uint64_t room; /* free bytes when the last consume began (size before any) */
};

static bool is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

int fl_perfbuf__new(int fd, size_t data_pages, struct fl_perfbuf **ret)
{
	struct fl_perfbuf *b;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t off, size;

	if (fd < 0 || !ret || page <= 0)
		return -EINVAL;
	if (!is_pow2(data_pages) || data_pages > SIZE_MAX / (size_t)page - 1)
		return -EINVAL;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->fd = fd;
	b->map_len = (data_pages + 1) * (size_t)page;
	/* Writable: the kernel only honours data_tail (no overwrite) on a writable mapping. */
	b->base = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (b->base == MAP_FAILED) {
		int err = -errno;

		b->base = NULL;
		fl_perfbuf__free(b);
		return err;
	}
	b->meta = b->base;

	/* Kernels since 4.1 say where the data is; older ones put it right after the first page. */
	off = b->meta->data_offset;
	size = b->meta->data_size;
	if (!size) {
		off = (uint64_t)page;
		size = (uint64_t)data_pages * (uint64_t)page;
	}
	if (!is_pow2(size) || off > b->map_len || size > b->map_len - off) {
		fl_pr_debug("perfbuf: odd ring layout: data_offset %llu data_size %llu\n",
			    (unsigned long long)off, (unsigned long long)size);
		fl_perfbuf__free(b);
		return -EINVAL;
	}
	b->data = (const unsigned char *)b->base + off;
	b->size = size;
	b->mask = size - 1;
	b->room = size;

	b->scratch_len = size < PB_MAX_RECORD ? (size_t)size : PB_MAX_RECORD;
	b->scratch = malloc(b->scratch_len);
	if (!b->scratch) {
		fl_perfbuf__free(b);
		return -ENOMEM;
	}
	*ret = b;
	return 0;
}

void fl_perfbuf__free(struct fl_perfbuf *b)
{
	if (!b)
		return;
	if (b->base)
		munmap(b->base, b->map_len);
	free(b->scratch);
	free(b);
}

int fl_perfbuf__fd(const struct fl_perfbuf *b)
{
	return b->fd;
}

/* Copies len bytes starting at ring position pos, which may wrap around the end. */
static void ring_copy(const struct fl_perfbuf *b, uint64_t pos, void *dst, size_t len)
{
	size_t off = (size_t)(pos & b->mask);
	size_t first = len;

	if (off + len > b->size)
		first = (size_t)(b->size - off);
	memcpy(dst, b->data + off, first);
	if (first < len)
		memcpy((unsigned char *)dst + first, b->data, len - first);
}

static void release(struct fl_perfbuf *b, uint64_t tail)
{
	/* Every read of the records we consumed happens before the kernel may overwrite them. */
	__atomic_store_n(&b->meta->data_tail, tail, __ATOMIC_RELEASE);
}

/* Calls fn for the records from data_tail on; releases what was read only with consume. */
static int ring_walk(struct fl_perfbuf *b, fl_perfbuf_fn fn, void *ctx, bool consume)
{
	uint64_t head, tail;
	int n = 0;

	/* Pairs with the kernel's barrier before it publishes data_head: the records are visible. */
	head = __atomic_load_n(&b->meta->data_head, __ATOMIC_ACQUIRE);
	/* Only we write data_tail. */
	tail = b->meta->data_tail;

	if (head - tail > b->size)
		goto out_corrupt;
	if (consume)
		b->room = b->size - (head - tail);

	while (tail != head) {
		struct perf_event_header hdr;
		const struct perf_event_header *rec;
		uint64_t off = tail & b->mask;
		int rc;

		if (head - tail < sizeof(hdr))
			goto out_corrupt;
		ring_copy(b, tail, &hdr, sizeof(hdr));
		if (hdr.size < sizeof(hdr) || hdr.size > head - tail || hdr.size > b->scratch_len)
			goto out_corrupt;

		if (off + hdr.size > b->size) {
			ring_copy(b, tail, b->scratch, hdr.size);
			rec = (const struct perf_event_header *)b->scratch;
		} else {
			rec = (const struct perf_event_header *)(b->data + off);
		}

		rc = fn(rec, ctx);
		if (rc == FL_PERFBUF_LATER)
			break;
		tail += hdr.size;
		if (n < INT_MAX)
			n++;
		if (rc) {
			if (consume)
				release(b, tail);
			return rc;
		}
	}
	if (consume)
		release(b, tail);
	return n;

out_corrupt:
	if (!consume)
		return -EBADMSG; /* left for fl_perfbuf__consume() to reset */
	fl_pr_debug("perfbuf: fd %d: corrupt ring (head %llu tail %llu), reset\n", b->fd,
		    (unsigned long long)head, (unsigned long long)tail);
	release(b, head);
	return -EBADMSG;
}

uint64_t fl_perfbuf__room(const struct fl_perfbuf *b)
{
	return b->room;
}

int fl_perfbuf__consume(struct fl_perfbuf *b, fl_perfbuf_fn fn, void *ctx)
{
	return ring_walk(b, fn, ctx, true);
}

int fl_perfbuf__peek(struct fl_perfbuf *b, fl_perfbuf_fn fn, void *ctx)
{
	return ring_walk(b, fn, ctx, false);
}

int fl_perf_event_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd,
		       unsigned long flags)
{
	long fd;

	/* Every fd of flamed is close-on-exec; a caller cannot forget it here. */
	fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	return (int)fd;
}

/* Reads a decimal number of at most PB_MAX_CPU at *p, advancing it. */
static int parse_cpu(const char **p, int *cpu)
{
	uint64_t v;
	int err = fl_parse_uint(p, 10, PB_MAX_CPU, &v);

	if (!err)
		*cpu = (int)v;
	return err;
}

int fl_cpu_list__parse(const char *s, int **cpus)
{
	_cleanup_free_ int *arr = NULL;
	size_t nr = 0, cap = 0;
	int last = -1;

	if (!s || !cpus)
		return -EINVAL;
	for (;;) {
		int lo, hi, err;

		err = parse_cpu(&s, &lo);
		if (err)
			return err;
		hi = lo;
		if (*s == '-') {
			s++;
			err = parse_cpu(&s, &hi);
			if (err)
				return err;
		}
		/* The kernel writes ascending, disjoint ranges; anything else is not its file. */
		if (hi < lo || lo <= last)
			return -EINVAL;
		for (int c = lo; c <= hi; c++) {
			if (nr == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				int *narr = realloc(arr, ncap * sizeof(*arr));

				if (!narr)
					return -ENOMEM;
				arr = narr;
				cap = ncap;
			}
			arr[nr++] = c;
		}
		last = hi;
		if (*s != ',')
			break;
		s++;
	}
	if (*s == '\n')
		s++;
	if (*s != '\0')
		return -EINVAL;
	*cpus = TAKE_PTR(arr);
	return (int)nr;
}

/* A CPU list of sysfs (/sys/devices/system/cpu/NAME), parsed. */
static int read_cpu_list(const char *name, int **cpus)
{
	_cleanup_close_ int fd = -1;
	char path[64], buf[4096];
	size_t len = 0;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	while (len < sizeof(buf) - 1) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (len == sizeof(buf) - 1)
		return -E2BIG;
	buf[len] = '\0';
	return fl_cpu_list__parse(buf, cpus);
}

int fl_online_cpus(int **cpus)
{
	return read_cpu_list("online", cpus);
}

int fl_present_cpus(int **cpus)
{
	return read_cpu_list("present", cpus);
}

/* The CPUs that may ever be online; the online ones where sysfs does not say. */
static int possible_cpus(int **cpus)
{
	int n = read_cpu_list("possible", cpus);

	return n > 0 ? n : fl_online_cpus(cpus);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool in_list(const int *cpus, int n, int cpu)
{
	for (int k = 0; k < n; k++)
		if (cpus[k] == cpu)
			return true;
	return false;
}

struct fl_cpu_events {
	int *cpus;
	size_t nr;
	int *fds;		  /* -1 where not open */
	bool *disowned;		  /* closed by someone else */
	struct fl_perfbuf **bufs; /* NULL without rings */
	/* For fl_cpu_events__reopen(): what they were opened with. */
	struct perf_event_attr attr;
	size_t ring_pages;
	uint64_t *enabled; /* time enabled at the last fl_cpu_events__stalled(); NO_TIME: none */
	/*
	 * CPU hotplug, CLOCK_MONOTONIC ns: when each event was last seen alive
	 * (its time enabled moving, or opened), and for how long events were
	 * dead before being opened again. An event dead now has been since
	 * about alive_ns.
	 */
	uint64_t *alive_ns;
	uint64_t *dead_ns;
	bool *was_dead, *is_dead;
	size_t nr_opened; /* events open after fl_cpu_events__open() */
};

#define NO_TIME UINT64_MAX

void fl_cpu_events__free(struct fl_cpu_events *ev)
{
	if (!ev)
		return;
	for (size_t i = 0; i < ev->nr; i++) {
		/* The ring goes first: it is a mapping of the event's fd. */
		if (ev->bufs)
			fl_perfbuf__free(ev->bufs[i]);
		if (ev->fds && ev->fds[i] >= 0 && !(ev->disowned && ev->disowned[i]))
			close(ev->fds[i]);
	}
	free(ev->disowned);
	free(ev->enabled);
	free(ev->alive_ns);
	free(ev->dead_ns);
	free(ev->was_dead);
	free(ev->is_dead);
	free(ev->bufs);
	free(ev->fds);
	free(ev->cpus);
	free(ev);
}

DEFINE_FREE_FUNC(struct fl_cpu_events, fl_cpu_events__free)

int fl_cpu_events__disown(struct fl_cpu_events *ev, size_t i)
{
	if (i >= ev->nr)
		return -EINVAL;
	ev->disowned[i] = true;
	return 0;
}

int fl_cpu_events__open(struct perf_event_attr *attr, size_t ring_pages, struct fl_cpu_events **ret)
{
	_cleanup_(fl_cpu_events__freep) struct fl_cpu_events *ev = NULL;
	_cleanup_free_ int *present = NULL;
	int n, nr_present;

	if (!attr || !ret)
		return -EINVAL;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	/*
	 * Every CPU that may come online: those offline now get their event
	 * when they do (fl_cpu_events__revive()), like those that go away and
	 * come back.
	 */
	n = possible_cpus(&ev->cpus);
	if (n < 0)
		return n;
	ev->nr = (size_t)n;
	ev->fds = malloc(ev->nr * sizeof(*ev->fds));
	ev->disowned = calloc(ev->nr, sizeof(*ev->disowned));
	ev->enabled = malloc(ev->nr * sizeof(*ev->enabled));
	ev->alive_ns = calloc(ev->nr, sizeof(*ev->alive_ns));
	ev->dead_ns = calloc(ev->nr, sizeof(*ev->dead_ns));
	ev->was_dead = calloc(ev->nr, sizeof(*ev->was_dead));
	ev->is_dead = calloc(ev->nr, sizeof(*ev->is_dead));
	if (!ev->fds || !ev->disowned || !ev->enabled || !ev->alive_ns || !ev->dead_ns ||
	    !ev->was_dead || !ev->is_dead)
		return -ENOMEM;
	for (size_t i = 0; i < ev->nr; i++) {
		ev->fds[i] = -1;
		ev->enabled[i] = NO_TIME;
	}
	/* The time enabled, read back, tells a live event from one its CPU's hotplug killed. */
	ev->attr = *attr;
	if (!ev->attr.read_format)
		ev->attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED;
	ev->ring_pages = ring_pages;
	attr = &ev->attr;
	if (ring_pages) {
		ev->bufs = calloc(ev->nr, sizeof(*ev->bufs));
		if (!ev->bufs)
			return -ENOMEM;
	}
	nr_present = fl_present_cpus(&present);

	for (size_t i = 0; i < ev->nr; i++) {
		int fd = fl_perf_event_open(attr, -1, ev->cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		int err;

		ev->alive_ns[i] = mono_ns();
		if (fd == -ENODEV) {
			/*
			 * Offline. A CPU that is there is not sampled until it comes
			 * online: dead from the start. One that is not there (a VM's
			 * spare slots) is opened if it ever is, and missed by nobody.
			 */
			fl_pr_debug("perfbuf: CPU %d is offline\n", ev->cpus[i]);
			if (nr_present < 0 || in_list(present, nr_present, ev->cpus[i]))
				ev->was_dead[i] = ev->is_dead[i] = true;
			continue;
		}
		if (fd < 0) {
			fl_pr_debug("perfbuf: perf_event_open on CPU %d: %s\n", ev->cpus[i],
				    strerror(-fd));
			return fd;
		}
		ev->fds[i] = fd;
		ev->nr_opened++;
		if (!ring_pages)
			continue;
		err = fl_perfbuf__new(fd, ring_pages, &ev->bufs[i]);
		if (err) {
			fl_pr_debug("perfbuf: mmap of the ring on CPU %d: %s\n", ev->cpus[i],
				    strerror(-err));
			return err;
		}
	}
	if (!ev->nr_opened)
		return -ENODEV;
	*ret = TAKE_PTR(ev);
	return 0;
}

size_t fl_cpu_events__nr_opened(const struct fl_cpu_events *ev)
{
	return ev->nr_opened;
}

size_t fl_cpu_events__nr(const struct fl_cpu_events *ev)
{
	return ev->nr;
}

int fl_cpu_events__fd(const struct fl_cpu_events *ev, size_t i)
{
	return i < ev->nr ? ev->fds[i] : -EINVAL;
}

int fl_cpu_events__cpu(const struct fl_cpu_events *ev, size_t i)
{
	return i < ev->nr ? ev->cpus[i] : -EINVAL;
}

int fl_cpu_events__ioctl(const struct fl_cpu_events *ev, unsigned long req)
{
	int err = 0;

	for (size_t i = 0; i < ev->nr; i++) {
		if (ev->fds[i] >= 0 && ioctl(ev->fds[i], req, 0) < 0 && !err)
			err = -errno;
		/* Enabled or disabled on purpose: no hotplug to see in the time until the next reading. */
		ev->enabled[i] = NO_TIME;
	}
	return err;
}

int fl_cpu_events__stalled(struct fl_cpu_events *ev, size_t i)
{
	uint64_t v[2];
	ssize_t n;
	bool stalled;

	if (i >= ev->nr)
		return -EINVAL;
	if (ev->fds[i] < 0)
		return 1; /* closed (fl_cpu_events__gone()): as good as dead */
	if (ev->attr.read_format != PERF_FORMAT_TOTAL_TIME_ENABLED)
		return -EOPNOTSUPP;
	n = read(ev->fds[i], v, sizeof(v));
	if (n < 0)
		return -errno;
	if (n != sizeof(v))
		return -EIO;
	stalled = ev->enabled[i] != NO_TIME && v[1] == ev->enabled[i];
	ev->enabled[i] = v[1];
	if (!stalled)
		ev->alive_ns[i] = mono_ns();
	return stalled;
}

int fl_cpu_events__revive(struct fl_cpu_events *ev, fl_cpu_events_fn before, fl_cpu_events_fn after,
			  void *ctx, int *cpus, size_t max)
{
	_cleanup_free_ int *online = NULL;
	int nr_online = -1;
	size_t n = 0;
	int err = 0;

	for (size_t i = 0; i < ev->nr; i++) {
		int rc = fl_cpu_events__stalled(ev, i);

		if (rc <= 0) {
			if (rc < 0 && !err)
				err = rc;
			continue;
		}
		/* A live event stood still: its CPU went offline (and may be back). */
		if (ev->fds[i] >= 0)
			ev->was_dead[i] = ev->is_dead[i] = true;
		/*
		 * A CPU offline since the start, or whose event is closed: one read
		 * of the online list spares a failing perf_event_open per CPU (a VM
		 * may list hundreds of possible CPUs).
		 */
		if (ev->fds[i] < 0) {
			if (nr_online == -1)
				nr_online = fl_online_cpus(&online);
			if (nr_online > 0 && !in_list(online, nr_online, ev->cpus[i]))
				continue;
		}
		if (before)
			before(ctx, i);
		rc = fl_cpu_events__reopen(ev, i);
		if (rc == -ENODEV)
			continue; /* still offline: tried again next time */
		if (!rc && after)
			rc = after(ctx, i);
		else if (!rc && ioctl(ev->fds[i], PERF_EVENT_IOC_ENABLE, 0) < 0)
			rc = -errno;
		if (rc) {
			if (!err)
				err = rc;
			continue;
		}
		/* Dead since it was last seen alive, at most about one call ago. */
		if (ev->is_dead[i])
			ev->dead_ns[i] += mono_ns() - ev->alive_ns[i];
		ev->alive_ns[i] = mono_ns();
		ev->is_dead[i] = false;
		if (n < max)
			cpus[n] = ev->cpus[i];
		n++;
	}
	return n ? (int)n : err;
}

void fl_cpu_events__hotplug(const struct fl_cpu_events *ev, struct fl_cpu_hotplug *st)
{
	uint64_t now = mono_ns();

	*st = (struct fl_cpu_hotplug){};
	for (size_t i = 0; i < ev->nr; i++) {
		if (!ev->was_dead[i])
			continue;
		st->cpus++;
		st->dead_ns += ev->dead_ns[i];
		if (ev->is_dead[i]) {
			st->dead_now++;
			st->dead_ns += now - ev->alive_ns[i];
		}
	}
}

int fl_cpu_events__gone(struct fl_cpu_events *ev, size_t i)
{
	if (i >= ev->nr || !ev->disowned[i])
		return -EINVAL;
	ev->fds[i] = -1;
	return 0;
}

int fl_cpu_events__reopen(struct fl_cpu_events *ev, size_t i)
{
	struct fl_perfbuf *b = NULL;
	int fd, err;

	if (i >= ev->nr)
		return -EINVAL;
	fd = fl_perf_event_open(&ev->attr, -1, ev->cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return fd;
	if (ev->ring_pages) {
		err = fl_perfbuf__new(fd, ev->ring_pages, &b);
		if (err) {
			close(fd);
			return err;
		}
		fl_perfbuf__free(ev->bufs[i]);
		ev->bufs[i] = b;
	}
	if (ev->fds[i] >= 0 && !ev->disowned[i])
		close(ev->fds[i]);
	ev->fds[i] = fd;
	ev->disowned[i] = false;
	ev->enabled[i] = NO_TIME;
	return 0;
}

/* Carries fn's error past fl_perfbuf__consume(), whose return may also count records. */
struct consume_ctx {
	fl_perfbuf_fn fn;
	void *ctx;
	int err;
};

static int consume_one(const struct perf_event_header *hdr, void *ctx)
{
	struct consume_ctx *c = ctx;

	int rc = c->fn(hdr, c->ctx);

	if (rc == FL_PERFBUF_LATER)
		return rc;
	c->err = rc;
	return rc ? -ECANCELED : 0;
}

/*
 * Every ring in CPU order, read for good (consume) or only looked at. A
 * corrupt ring: consume resets it, reads the others and returns -EBADMSG;
 * a look leaves it for the next consume.
 */
static int events_walk(struct fl_cpu_events *ev, fl_perfbuf_fn fn, void *ctx, bool consume)
{
	struct consume_ctx c = {.fn = fn, .ctx = ctx};
	int ret = 0;

	if (!ev->bufs || !fn)
		return -EINVAL;
	for (size_t i = 0; i < ev->nr; i++) {
		int rc = ev->bufs[i] ? ring_walk(ev->bufs[i], consume_one, &c, consume) : 0;

		if (c.err)
			return c.err;
		if (rc == -EBADMSG)
			ret = consume ? rc : 0;
		else if (rc < 0)
			return rc;
	}
	return ret;
}

uint64_t fl_cpu_events__least_room(const struct fl_cpu_events *ev)
{
	uint64_t least = UINT64_MAX;

	for (size_t i = 0; ev->bufs && i < ev->nr; i++)
		if (ev->bufs[i] && ev->bufs[i]->room < least)
			least = ev->bufs[i]->room;
	return least;
}

int fl_cpu_events__peek(struct fl_cpu_events *ev, fl_perfbuf_fn fn, void *ctx)
{
	return events_walk(ev, fn, ctx, false);
}

int fl_cpu_events__consume(struct fl_cpu_events *ev, fl_perfbuf_fn fn, void *ctx)
{
	return events_walk(ev, fn, ctx, true);
}
