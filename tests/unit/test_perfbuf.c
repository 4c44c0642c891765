// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests of the perf ring reader on fake rings (memfd) and real ones, and of the CPU list parser. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/sampling/perfbuf.h"

/* ---- CPU lists ---- */

static void test_cpu_list_good(void **state)
{
	static const struct {
		const char *s;
		int n;
		int cpus[8];
	} cases[] = {
		{"0", 1, {0}},
		{"0\n", 1, {0}},
		{"0-1\n", 2, {0, 1}},
		{"0-3,5", 5, {0, 1, 2, 3, 5}},
		{"2,4-6,9\n", 5, {2, 4, 5, 6, 9}},
		{"7-7", 1, {7}},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int *cpus = NULL;
		int n = fl_cpu_list__parse(cases[i].s, &cpus);

		assert_int_equal(n, cases[i].n);
		for (int j = 0; j < n; j++)
			assert_int_equal(cpus[j], cases[i].cpus[j]);
		free(cpus);
	}
}

static void test_cpu_list_bad(void **state)
{
	static const char *const bad[] = {
		"",	 "\n", "a",  "-1",  "0-",     "3-1",   "0,0",  "1,0",
		"0-3,2", "0,", ",0", "0 1", "0-3,5x", "0\n\n", "0--1", " 0",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int *cpus = (int *)0x1;

		assert_int_equal(fl_cpu_list__parse(bad[i], &cpus), -EINVAL);
		assert_ptr_equal(cpus, (int *)0x1); /* untouched on failure */
	}
	int *cpus = NULL;
	assert_int_equal(fl_cpu_list__parse("0-70000", &cpus), -ERANGE);
	assert_int_equal(fl_cpu_list__parse("99999999999999999999", &cpus), -ERANGE);
	assert_null(cpus);
}

static void test_online_cpus(void **state)
{
	int *cpus = NULL;
	long conf = sysconf(_SC_NPROCESSORS_ONLN);
	int n;

	(void)state;
	n = fl_online_cpus(&cpus);
	assert_true(n > 0);
	assert_int_equal(n, conf);
	for (int i = 1; i < n; i++)
		assert_true(cpus[i] > cpus[i - 1]);
	free(cpus);
}

/* ---- fake rings: the reader's logic against rings whose bytes we write ---- */

struct fake_ring {
	int fd;
	size_t page, pages, len;
	unsigned char *map;
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	uint64_t size;
};

static void fake_ring_init(struct fake_ring *r, size_t pages)
{
	r->page = (size_t)sysconf(_SC_PAGESIZE);
	r->pages = pages;
	r->len = (pages + 1) * r->page;
	r->fd = memfd_create("fake-ring", MFD_CLOEXEC);
	assert_true(r->fd >= 0);
	assert_int_equal(ftruncate(r->fd, (off_t)r->len), 0);
	r->map = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	assert_true(r->map != MAP_FAILED);
	r->meta = (struct perf_event_mmap_page *)r->map;
	r->data = r->map + r->page;
	r->size = pages * r->page;
}

static void fake_ring_fini(struct fake_ring *r)
{
	munmap(r->map, r->len);
	close(r->fd);
}

/* Writes bytes at ring position pos, wrapping like the kernel does. */
static void fake_ring_put(struct fake_ring *r, uint64_t pos, const void *src, size_t len)
{
	for (size_t i = 0; i < len; i++)
		r->data[(pos + i) % r->size] = ((const unsigned char *)src)[i];
}

/* A record of `size` bytes: header then bytes counting up from `seed`. */
static uint64_t fake_ring_record(struct fake_ring *r, uint64_t pos, uint16_t size,
				 unsigned char seed)
{
	unsigned char buf[256];
	struct perf_event_header hdr = {.type = 0x4242, .misc = 0, .size = size};

	assert_true(size >= sizeof(hdr) && size <= sizeof(buf));
	memcpy(buf, &hdr, sizeof(hdr));
	for (size_t i = sizeof(hdr); i < size; i++)
		buf[i] = (unsigned char)(seed + i);
	fake_ring_put(r, pos, buf, size);
	return pos + size;
}

struct collect {
	int n;
	int stop_at;  /* return 7 on this record (1-based), 0 never */
	int later_at; /* return FL_PERFBUF_LATER on this record (1-based), 0 never */
	uint16_t sizes[64];
	unsigned char first[64];
	int bad_content;
};

static int collect_fn(const struct perf_event_header *hdr, void *ctx)
{
	struct collect *c = ctx;
	const unsigned char *p = (const unsigned char *)hdr;

	if (c->n < 64) {
		c->sizes[c->n] = hdr->size;
		c->first[c->n] = hdr->size > sizeof(*hdr) ? p[sizeof(*hdr)] : 0;
	}
	/* Every body byte follows the one before: a wrapped record was reassembled right. */
	for (size_t i = sizeof(*hdr) + 1; i < hdr->size; i++)
		if ((unsigned char)(p[i] - p[i - 1]) != 1)
			c->bad_content++;
	c->n++;
	if (c->stop_at && c->n == c->stop_at)
		return 7;
	if (c->later_at && c->n == c->later_at) {
		c->later_at = 0;
		return FL_PERFBUF_LATER;
	}
	return 0;
}

static void test_fake_wrap(void **state)
{
	struct fake_ring r;
	struct fl_perfbuf *b = NULL;
	struct collect c = {0};
	uint64_t start, pos;

	(void)state;
	fake_ring_init(&r, 1);
	/* Start 16 bytes before the end: the second record straddles it. */
	start = 3 * r.size - 16;
	r.meta->data_tail = start;
	pos = fake_ring_record(&r, start, 16, 10);
	pos = fake_ring_record(&r, pos, 200, 20);
	pos = fake_ring_record(&r, pos, 40, 30);
	r.meta->data_head = pos;

	assert_int_equal(fl_perfbuf__new(r.fd, 1, &b), 0);
	assert_int_equal(fl_perfbuf__fd(b), r.fd);
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), 3);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.sizes[0], 16);
	assert_int_equal(c.sizes[1], 200);
	assert_int_equal(c.sizes[2], 40);
	assert_int_equal(c.first[1], (unsigned char)(20 + 8));
	assert_int_equal(c.bad_content, 0);
	assert_int_equal(r.meta->data_tail, pos);

	/* Nothing new: nothing consumed. */
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), 0);
	assert_int_equal(c.n, 3);

	/* A record whose header itself straddles the end (never from the kernel, but legal). */
	start = 4 * r.size - 4;
	r.meta->data_tail = start;
	pos = fake_ring_record(&r, start, 64, 50);
	r.meta->data_head = pos;
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), 1);
	assert_int_equal(c.sizes[3], 64);
	assert_int_equal(c.bad_content, 0);

	fl_perfbuf__free(b);
	fake_ring_fini(&r);
}

static void test_fake_stop_early(void **state)
{
	struct fake_ring r;
	struct fl_perfbuf *b = NULL;
	struct collect c = {.stop_at = 2};
	uint64_t pos = 0;

	(void)state;
	fake_ring_init(&r, 2);
	for (int i = 0; i < 5; i++)
		pos = fake_ring_record(&r, pos, 24, (unsigned char)i);
	r.meta->data_head = pos;

	assert_int_equal(fl_perfbuf__new(r.fd, 2, &b), 0);
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), 7);
	assert_int_equal(c.n, 2);
	/* The record that stopped the walk is consumed; the rest waits. */
	assert_int_equal(r.meta->data_tail, 48);
	c.stop_at = 0;
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), 3);
	assert_int_equal(c.n, 5);
	assert_int_equal(r.meta->data_tail, pos);
	fl_perfbuf__free(b);
	fake_ring_fini(&r);
}

/* FL_PERFBUF_LATER: the record stays, and comes first next time. */
/* A two-page fake ring holding five 24-byte records, seeds 0, 10, ... 40: returns data_head. */
static uint64_t fake_ring_five(struct fake_ring *r)
{
	uint64_t pos = 0;

	fake_ring_init(r, 2);
	for (int i = 0; i < 5; i++)
		pos = fake_ring_record(r, pos, 24, (unsigned char)(10 * i));
	r->meta->data_head = pos;
	return pos;
}

static void test_fake_later(void **state)
{
	struct fake_ring r;
	struct fl_perfbuf *b = NULL;
	struct collect c = {.later_at = 3};
	uint64_t pos;

	(void)state;
	pos = fake_ring_five(&r);

	assert_int_equal(fl_perfbuf__new(r.fd, 2, &b), 0);
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), 2);
	assert_int_equal(r.meta->data_tail, 48);
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), 3);
	assert_int_equal(c.n, 6); /* the third record seen twice */
	assert_int_equal(c.first[2], c.first[3]);
	assert_int_equal(c.first[3], (unsigned char)(20 + 8));
	assert_int_equal(c.first[5], (unsigned char)(40 + 8));
	assert_int_equal(r.meta->data_tail, pos);
	fl_perfbuf__free(b);
	fake_ring_fini(&r);
}

/* peek walks as consume does and releases nothing: consume then sees every record. */
static void test_fake_peek(void **state)
{
	struct fake_ring r;
	struct fl_perfbuf *b = NULL;
	struct collect c = {.later_at = 4};
	uint64_t pos;

	(void)state;
	pos = fake_ring_five(&r);

	assert_int_equal(fl_perfbuf__new(r.fd, 2, &b), 0);
	assert_int_equal(fl_perfbuf__room(b), r.size);
	assert_int_equal(fl_perfbuf__peek(b, collect_fn, &c), 3); /* stopped before the fourth */
	assert_int_equal(r.meta->data_tail, 0);
	assert_int_equal(fl_perfbuf__peek(b, collect_fn, &c), 5);
	assert_int_equal(r.meta->data_tail, 0);
	assert_int_equal(fl_perfbuf__room(b), r.size); /* a look is not a read */
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), 5);
	assert_int_equal(fl_perfbuf__room(b), r.size - 5 * 24);
	assert_int_equal(c.n, 14);
	assert_int_equal(c.first[4], c.first[9]);
	assert_int_equal(c.first[9], (unsigned char)(0 + 8));
	assert_int_equal(r.meta->data_tail, pos);
	assert_int_equal(c.bad_content, 0);
	/* A corrupt ring is left as it is for consume to reset. */
	fake_ring_record(&r, pos, 24, 0);
	((struct perf_event_header *)(void *)(r.data + pos))->size = 4;
	r.meta->data_head = pos + 24;
	assert_int_equal(fl_perfbuf__peek(b, collect_fn, &c), -EBADMSG);
	assert_int_equal(r.meta->data_tail, pos);
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), -EBADMSG);
	assert_int_equal(r.meta->data_tail, pos + 24);
	fl_perfbuf__free(b);
	fake_ring_fini(&r);
}

static void test_fake_corrupt(void **state)
{
	struct fake_ring r;
	struct fl_perfbuf *b = NULL;
	struct collect c = {0};
	struct perf_event_header small = {.type = 1, .size = 4};
	uint64_t pos;

	(void)state;
	fake_ring_init(&r, 1);
	assert_int_equal(fl_perfbuf__new(r.fd, 1, &b), 0);

	/* A record smaller than its header. */
	pos = fake_ring_record(&r, 0, 32, 1);
	fake_ring_put(&r, pos, &small, sizeof(small));
	r.meta->data_head = pos + 32;
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), -EBADMSG);
	assert_int_equal(c.n, 1);
	assert_int_equal(r.meta->data_tail, r.meta->data_head); /* reset */

	/* A record longer than what the kernel published. */
	pos = fake_ring_record(&r, r.meta->data_head, 200, 1);
	r.meta->data_head = pos - 8;
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), -EBADMSG);
	assert_int_equal(c.n, 1);
	assert_int_equal(r.meta->data_tail, r.meta->data_head);

	/* A head further ahead than the ring is long. */
	r.meta->data_head = r.meta->data_tail + r.size + 8;
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), -EBADMSG);
	assert_int_equal(r.meta->data_tail, r.meta->data_head);

	/* Still usable after a reset. */
	pos = fake_ring_record(&r, r.meta->data_head, 24, 3);
	r.meta->data_head = pos;
	assert_int_equal(fl_perfbuf__consume(b, collect_fn, &c), 1);
	assert_int_equal(c.bad_content, 0);

	fl_perfbuf__free(b);
	fake_ring_fini(&r);
}

static void test_new_args(void **state)
{
	struct fake_ring r;
	struct fl_perfbuf *b = (struct fl_perfbuf *)0x1;

	(void)state;
	fake_ring_init(&r, 4);
	assert_int_equal(fl_perfbuf__new(r.fd, 3, &b), -EINVAL);
	assert_int_equal(fl_perfbuf__new(r.fd, 0, &b), -EINVAL);
	assert_int_equal(fl_perfbuf__new(-1, 4, &b), -EINVAL);
	assert_ptr_equal(b, (struct fl_perfbuf *)0x1);
	fl_perfbuf__free(NULL);
	fake_ring_fini(&r);
}

/* ---- real rings ---- */

/* The comm records of our own renames, on a dummy event bound to this thread. */
static int open_comm_event(void)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.comm = 1,
		.disabled = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	int fd = fl_perf_event_open(&attr, 0, -1, -1, 0);

	if (fd == -EACCES || fd == -EPERM || fd == -ENOENT || fd == -ENODEV || fd == -EOPNOTSUPP) {
		printf("perf_event_open: %s: skipping (needs root or "
		       "kernel.perf_event_paranoid<=1)\n",
		       strerror(-fd));
		exit(77);
	}
	assert_true(fd >= 0);
	return fd;
}

struct comm_rec {
	struct perf_event_header hdr;
	uint32_t pid, tid;
	char comm[];
};

struct comm_count {
	uint64_t comms, lost, other;
	uint64_t pos;	    /* bytes consumed so far: the ring position of the next record */
	uint64_t size;	    /* ring bytes */
	uint64_t straddled; /* records that wrapped around the end */
	unsigned next;	    /* expected sequence number in the name */
	int bad;
};

static int comm_fn(const struct perf_event_header *hdr, void *ctx)
{
	struct comm_count *c = ctx;

	if ((c->pos % c->size) + hdr->size > c->size)
		c->straddled++;
	c->pos += hdr->size;
	switch (hdr->type) {
	case PERF_RECORD_COMM: {
		const struct comm_rec *r = (const void *)hdr;
		unsigned seq;

		if (r->pid != (uint32_t)getpid() || sscanf(r->comm, "n%u", &seq) != 1) {
			c->other++;
			break;
		}
		if (seq != c->next)
			c->bad++;
		c->next = seq + 1;
		c->comms++;
		break;
	}
	case PERF_RECORD_LOST: {
		const struct {
			struct perf_event_header hdr;
			uint64_t id, lost;
		} *l = (const void *)hdr;

		c->lost += l->lost;
		break;
	}
	default:
		c->other++;
	}
	return 0;
}

/* Names of length 2..15: records of 24 and 32 bytes, so some straddle the end of the ring. */
static void rename_seq(unsigned seq)
{
	char name[16];
	unsigned pad = seq % 7;

	snprintf(name, sizeof(name), "n%u%.*s", seq, (int)pad, "xxxxxxx");
	assert_int_equal(prctl(PR_SET_NAME, name, 0, 0, 0), 0);
}

static void test_real_wraparound(void **state)
{
	int fd = open_comm_event();
	struct fl_perfbuf *b = NULL;
	struct comm_count c = {0};
	unsigned seq = 0;
	int rc;

	(void)state;
	assert_int_equal(fl_perfbuf__new(fd, 1, &b), 0);
	c.size = (uint64_t)sysconf(_SC_PAGESIZE);
	assert_int_equal(ioctl(fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	/* 50 renames (< 1600 bytes) between reads of a 4 KiB ring: never full, wraps ~25 times. */
	for (int round = 0; round < 80; round++) {
		for (int i = 0; i < 50; i++)
			rename_seq(seq++);
		rc = fl_perfbuf__consume(b, comm_fn, &c);
		assert_true(rc >= 50);
	}
	assert_int_equal(ioctl(fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	assert_true(fl_perfbuf__consume(b, comm_fn, &c) >= 0);
	prctl(PR_SET_NAME, "test_perfbuf", 0, 0, 0);

	assert_int_equal(c.comms, seq);
	assert_int_equal(c.lost, 0);
	assert_int_equal(c.bad, 0);
	assert_true(c.pos > 20 * c.size);
	assert_true(c.straddled > 0);
	printf("# %llu records, %llu bytes, %llu straddled the end\n", (unsigned long long)c.comms,
	       (unsigned long long)c.pos, (unsigned long long)c.straddled);
	fl_perfbuf__free(b);
	close(fd);
}

static void test_real_overflow_lost(void **state)
{
	int fd = open_comm_event();
	struct fl_perfbuf *b = NULL;
	struct comm_count c = {0};
	const unsigned total = 1000;

	(void)state;
	assert_int_equal(fl_perfbuf__new(fd, 1, &b), 0);
	c.size = (uint64_t)sysconf(_SC_PAGESIZE);
	assert_int_equal(ioctl(fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	/* Far more than a 4 KiB ring holds without a read: the kernel counts what it drops. */
	for (unsigned i = 0; i < total; i++)
		rename_seq(i);
	assert_true(fl_perfbuf__consume(b, comm_fn, &c) > 0);
	/* Found full: less room than one more COMM record needed. */
	printf("# %llu bytes free when read\n", (unsigned long long)fl_perfbuf__room(b));
	assert_true(fl_perfbuf__room(b) < 64);
	/* The LOST record is written once there is room again: make some. */
	rename_seq(total);
	assert_int_equal(ioctl(fd, PERF_EVENT_IOC_DISABLE, 0), 0);
	assert_true(fl_perfbuf__consume(b, comm_fn, &c) > 0);
	prctl(PR_SET_NAME, "test_perfbuf", 0, 0, 0);

	printf("# %llu comm records kept, %llu lost\n", (unsigned long long)c.comms,
	       (unsigned long long)c.lost);
	assert_true(c.lost > 0);
	assert_int_equal(c.comms + c.lost, total + 1);
	fl_perfbuf__free(b);
	close(fd);
}

/* ---- per-CPU event sets ---- */

struct own_comms {
	unsigned seen; /* our COMM records read */
	int fail;      /* returned for our next COMM record, then cleared */
};

/* Counts the COMM records of this process: the events see every process on their CPU. */
static int own_comm_fn(const struct perf_event_header *hdr, void *ctx)
{
	const struct comm_rec *r = (const void *)hdr;
	struct own_comms *c = ctx;
	int fail = c->fail;

	if (hdr->type != PERF_RECORD_COMM || r->pid != (uint32_t)getpid() ||
	    strncmp(r->comm, "cpuev", 5) != 0)
		return 0;
	c->fail = 0;
	if (fail)
		return fail;
	c->seen++;
	return 0;
}

static void rename_cpuev(unsigned n)
{
	char name[16];

	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "cpuev%u", i);
		assert_int_equal(prctl(PR_SET_NAME, name, 0, 0, 0), 0);
	}
}

static void test_cpu_events(void **state)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.comm = 1,
		.disabled = 1,
	};
	struct fl_cpu_events *ev = NULL;
	struct own_comms c = {0};
	int *cpus = NULL;
	int n, err;

	(void)state;
	n = fl_online_cpus(&cpus);
	assert_true(n > 0);
	free(cpus);
	err = fl_cpu_events__open(&attr, 1, &ev);
	if (err == -EACCES || err == -EPERM) {
		printf("# per-CPU events: %s: skipped (needs root or CAP_PERFMON)\n",
		       strerror(-err));
		skip();
	}
	assert_int_equal(err, 0);
	/* A slot per possible CPU, an event on each CPU online. */
	assert_true(fl_cpu_events__nr(ev) >= (size_t)n);
	assert_int_equal(fl_cpu_events__nr_opened(ev), n);
	for (size_t i = 0; i < fl_cpu_events__nr(ev); i++)
		if (fl_cpu_events__fd(ev, i) >= 0)
			assert_true(fl_cpu_events__cpu(ev, i) >= 0);
	assert_int_equal(fl_cpu_events__fd(ev, fl_cpu_events__nr(ev)), -EINVAL);
	/* Every event is tried and the first error returned. */
	assert_int_equal(fl_cpu_events__ioctl(ev, 0x7fff), -ENOTTY);

	assert_int_equal(fl_cpu_events__ioctl(ev, PERF_EVENT_IOC_ENABLE), 0);
	rename_cpuev(10);
	assert_int_equal(fl_cpu_events__consume(ev, own_comm_fn, &c), 0);
	assert_int_equal(c.seen, 10);

	/* A callback error stops the reading at once; the record that failed is not read again. */
	rename_cpuev(3);
	assert_int_equal(fl_cpu_events__ioctl(ev, PERF_EVENT_IOC_DISABLE), 0);
	c.fail = -ENOSPC;
	assert_int_equal(fl_cpu_events__consume(ev, own_comm_fn, &c), -ENOSPC);
	assert_int_equal(fl_cpu_events__consume(ev, own_comm_fn, &c), 0);
	assert_int_equal(c.seen, 12);
	prctl(PR_SET_NAME, "test_perfbuf", 0, 0, 0);
	fl_cpu_events__free(ev);

	/* Without rings: events to attach to, nothing to read. */
	ev = NULL;
	assert_int_equal(fl_cpu_events__open(&attr, 0, &ev), 0);
	assert_int_equal(fl_cpu_events__nr_opened(ev), n);
	assert_int_equal(fl_cpu_events__consume(ev, own_comm_fn, &c), -EINVAL);
	fl_cpu_events__free(ev);
	fl_cpu_events__free(NULL);
	assert_int_equal(fl_cpu_events__open(&attr, 3, &ev), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_list_good),	cmocka_unit_test(test_cpu_list_bad),
		cmocka_unit_test(test_online_cpus),	cmocka_unit_test(test_new_args),
		cmocka_unit_test(test_fake_wrap),	cmocka_unit_test(test_fake_stop_early),
		cmocka_unit_test(test_fake_later),
		cmocka_unit_test(test_fake_peek),	cmocka_unit_test(test_fake_corrupt),
		cmocka_unit_test(test_real_wraparound), cmocka_unit_test(test_real_overflow_lost),
		cmocka_unit_test(test_cpu_events),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
