/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Consumer of BPF ring buffers (BPF_MAP_TYPE_RINGBUF), each mapped once. Private to lib/. */
#ifndef FLAMED_BPFRING_H
#define FLAMED_BPFRING_H

#include <stddef.h>

/*
 * What libbpf's ring_buffer does, with one difference: a ring's data is
 * mapped once, not twice. The kernel maps all of a ring's pages when it is
 * mapped (they are counted in RSS at once, used or not), and libbpf maps
 * the data twice in a row so that a record wrapping past the end reads as
 * one: 16 MiB of RSS for an 8 MiB ring. Here a record that wraps is copied
 * into a buffer of the ring's own; the others are handed out where they lie.
 *
 * Records are read as the kernel writes them: an 8-byte header (the
 * length, with a busy and a discard bit, then the page offset), the data,
 * padding to 8 bytes. Positions are the kernel's (consumer_pos in the
 * first page, the only one mapped writable; producer_pos in the second).
 * One thread.
 */
struct fl_bpfring;

/* A record's data, size bytes: valid until the callback returns; < 0 stops the consuming there. */
typedef int (*fl_bpfring_fn)(void *ctx, void *data, size_t size);

int fl_bpfring__new(struct fl_bpfring **ret);
/* Accepts NULL. */
void fl_bpfring__free(struct fl_bpfring *rb);
/*
 * Adds the ring of BPF map map_fd (not taken over), whose records go to
 * fn; fn NULL: its records only wake the reader, and are passed over.
 */
int fl_bpfring__add(struct fl_bpfring *rb, int map_fd, fl_bpfring_fn fn, void *ctx);
/* Readable (EPOLLIN) when a ring has records to consume. */
int fl_bpfring__epoll_fd(const struct fl_bpfring *rb);
/* Hands every record waiting in every ring to its callback: their number, or a callback's < 0. */
int fl_bpfring__consume(struct fl_bpfring *rb);

#endif
