// SPDX-License-Identifier: GPL-2.0-or-later
/* Consumer of BPF ring buffers, each ring's data mapped once (bpfring.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "sampling/bpfring.h"

struct bpfring_one {
	int map_fd;
	fl_bpfring_fn fn;
	void *ctx;
	uint64_t *cons_pos;	   /* the first page, ours to write */
	const uint64_t *prod_pos;  /* the second page, the kernel's */
	const unsigned char *data; /* size bytes, after prod_pos's page */
	uint64_t size;		   /* a power of two */
	void *cons_map, *prod_map;
	size_t prod_len;
	unsigned char *wrap; /* a record that wraps past the end, put back in one piece */
	size_t wrap_cap;
};

struct fl_bpfring {
	int epoll_fd;
	size_t page;
	struct bpfring_one *rings;
	size_t nr;
};

int fl_bpfring__new(struct fl_bpfring **ret)
{
	struct fl_bpfring *rb = calloc(1, sizeof(*rb));
	long page = sysconf(_SC_PAGESIZE);

	if (!rb)
		return -ENOMEM;
	rb->page = page > 0 ? (size_t)page : 4096;
	rb->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (rb->epoll_fd < 0) {
		int err = -errno;

		free(rb);
		return err;
	}
	*ret = rb;
	return 0;
}

static void one_unmap(struct fl_bpfring *rb, struct bpfring_one *r)
{
	if (r->cons_map && r->cons_map != MAP_FAILED)
		munmap(r->cons_map, rb->page);
	if (r->prod_map && r->prod_map != MAP_FAILED)
		munmap(r->prod_map, r->prod_len);
	free(r->wrap);
}

void fl_bpfring__free(struct fl_bpfring *rb)
{
	if (!rb)
		return;
	for (size_t i = 0; i < rb->nr; i++)
		one_unmap(rb, &rb->rings[i]);
	free(rb->rings);
	close(rb->epoll_fd);
	free(rb);
}

int fl_bpfring__add(struct fl_bpfring *rb, int map_fd, fl_bpfring_fn fn, void *ctx)
{
	struct bpf_map_info info = {0};
	uint32_t info_len = sizeof(info);
	struct epoll_event ev = {.events = EPOLLIN};
	struct bpfring_one r = {.map_fd = map_fd, .fn = fn, .ctx = ctx}, *grown;
	int err;

	if (bpf_obj_get_info_by_fd(map_fd, &info, &info_len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_RINGBUF || !info.max_entries ||
	    (info.max_entries & (info.max_entries - 1)) || info.max_entries % rb->page)
		return -EINVAL;
	r.size = info.max_entries;
	r.prod_len = rb->page + (size_t)r.size;
	/* The consumer's page, and then the producer's and the data: once (the kernel allows any length). */
	r.cons_map = mmap(NULL, rb->page, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (r.cons_map == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	r.prod_map = mmap(NULL, r.prod_len, PROT_READ, MAP_SHARED, map_fd, (off_t)rb->page);
	if (r.prod_map == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	r.cons_pos = r.cons_map;
	r.prod_pos = r.prod_map;
	r.data = (const unsigned char *)r.prod_map + rb->page;
	grown = realloc(rb->rings, (rb->nr + 1) * sizeof(*grown));
	if (!grown) {
		err = -ENOMEM;
		goto fail;
	}
	rb->rings = grown;
	ev.data.u32 = (uint32_t)rb->nr;
	if (epoll_ctl(rb->epoll_fd, EPOLL_CTL_ADD, map_fd, &ev)) {
		err = -errno;
		goto fail;
	}
	rb->rings[rb->nr++] = r;
	return 0;
fail:
	one_unmap(rb, &r);
	return err;
}

int fl_bpfring__epoll_fd(const struct fl_bpfring *rb)
{
	return rb->epoll_fd;
}

/* The size bytes of data at position pos: where they lie, or put back in one piece if they wrap. */
static void *record_data(struct bpfring_one *r, uint64_t pos, size_t size)
{
	size_t off = (size_t)(pos & (r->size - 1)), first;

	if (off + size <= r->size)
		return (void *)(r->data + off);
	if (size > r->wrap_cap) {
		unsigned char *grown = realloc(r->wrap, size);

		if (!grown)
			return NULL;
		r->wrap = grown;
		r->wrap_cap = size;
	}
	first = r->size - off;
	memcpy(r->wrap, r->data + off, first);
	memcpy(r->wrap + first, r->data, size - first);
	return r->wrap;
}

/*
 * The records of one ring, up to the first still being written; at most a
 * ring's worth of bytes a call, should the producer keep pace.
 */
static int one_consume(struct bpfring_one *r)
{
	uint64_t cons = __atomic_load_n(r->cons_pos, __ATOMIC_ACQUIRE), start = cons;
	int n = 0;

	for (;;) {
		uint64_t prod = __atomic_load_n(r->prod_pos, __ATOMIC_ACQUIRE);

		if (cons >= prod || cons - start >= r->size)
			return n;
		while (cons < prod) {
			const uint32_t *hdr = (const uint32_t *)(r->data + (cons & (r->size - 1)));
			uint32_t len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
			size_t size =
				len & ~(uint32_t)(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
			void *data;
			int err = 0;

			if (len & BPF_RINGBUF_BUSY_BIT)
				return n; /* being written: its producer wakes us again */
			if (size > r->size - BPF_RINGBUF_HDR_SZ)
				return -EBADMSG; /* not a record the kernel writes */
			if (len & BPF_RINGBUF_DISCARD_BIT) {
				/* nothing to hand out */
			} else if (!r->fn) {
				n++; /* a ring whose records only wake */
			} else {
				data = record_data(r, cons + BPF_RINGBUF_HDR_SZ, size);
				err = data ? r->fn(r->ctx, data, size) : -ENOMEM;
				n += err >= 0;
			}
			cons += (BPF_RINGBUF_HDR_SZ + size + 7) & ~(uint64_t)7;
			__atomic_store_n(r->cons_pos, cons, __ATOMIC_RELEASE);
			if (err < 0)
				return err;
		}
	}
}

int fl_bpfring__consume(struct fl_bpfring *rb)
{
	int total = 0;

	for (size_t i = 0; i < rb->nr; i++) {
		int n = one_consume(&rb->rings[i]);

		if (n < 0)
			return n;
		total = n > INT32_MAX - total ? INT32_MAX : total + n;
	}
	return total;
}
