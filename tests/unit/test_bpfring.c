// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * lib/sampling/bpfring.c against a real BPF ring buffer, filled by a real
 * BPF program (a socket filter of twenty instructions, run by
 * BPF_PROG_TEST_RUN): 48-byte records through a 4 KiB ring, so that one
 * in a while a record's data wraps past the ring's end. Every record comes
 * back whole and in order, the ring's data is mapped once (not twice, as
 * libbpf maps it: the kernel counts every page in RSS), a callback's error
 * stops the consuming after its record, and the epoll fd says when there
 * is something to read. Needs root (or CAP_BPF): exits 77 without.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <cmocka.h>
#include <linux/bpf.h>

#include "sampling/bpfring.h"

#define RING_BYTES 4096u
/* Each record's data: skb->len, then four more words counting up from it. */
#define WORDS 5

static struct {
	int map, prog;
	uint32_t next_len; /* of the next packet run (it names the record) */
	uint32_t want;	   /* the len the next record must hold */
	int got;
	int fail_at; /* the callback's count at which it returns an error (-1: never) */
} t;

static struct bpf_insn insn(uint8_t code, unsigned dst, unsigned src, int16_t off, int32_t imm)
{
	return (struct bpf_insn){
		.code = code, .dst_reg = dst & 0xf, .src_reg = src & 0xf, .off = off, .imm = imm};
}

/* The program: five words on the stack, then bpf_ringbuf_output(ring, them, 40, 0). */
static int load_prog(int map_fd)
{
	struct bpf_insn p[32];
	size_t n = 0;
	int fd;

	p[n++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_6, BPF_REG_1,
		      (int16_t)offsetof(struct __sk_buff, len), 0);
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_7, BPF_REG_6, 0, 0);
	for (int w = 0; w < WORDS; w++) {
		p[n++] = insn(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_7,
			      (int16_t)(-8 * (WORDS - w)), 0);
		p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_7, 0, 0, 1);
	}
	p[n++] = insn(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, map_fd);
	p[n++] = insn(0, 0, 0, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0);
	p[n++] = insn(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -8 * WORDS);
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, 8 * WORDS);
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, 0);
	p[n++] = insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ringbuf_output);
	p[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
	p[n++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "t_ringout", "GPL", p, n, NULL);
	if (fd < 0)
		fail_msg("cannot load the test program: %s", strerror(errno));
	return fd;
}

static int setup(void **state)
{
	(void)state;
	t.map = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "t_ring", 0, 0, RING_BYTES, NULL);
	if (t.map < 0) {
		fprintf(stderr,
			"test_bpfring: cannot make a BPF ring buffer (%s): needs root or CAP_BPF\n",
			strerror(errno));
		exit(77);
	}
	t.prog = load_prog(t.map);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	close(t.prog);
	close(t.map);
	return 0;
}

/*
 * A test's records start at len want (skb->len: what follows the Ethernet
 * header, which the run takes off); the callback fails at its fail_at-th.
 */
static void begin(uint32_t want, int fail_at)
{
	t.want = want;
	t.next_len = 14 + want;
	t.got = 0;
	t.fail_at = fail_at;
}

/* Runs the program over nr packets, each a byte longer than the one before. */
static void produce(int nr)
{
	static unsigned char pkt[1024];

	for (int i = 0; i < nr; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = t.next_len);

		assert_true(t.next_len <= sizeof(pkt));
		assert_int_equal(bpf_prog_test_run_opts(t.prog, &o), 0);
		t.next_len++;
	}
}

static int on_record(void *ctx, void *data, size_t size)
{
	uint64_t w[WORDS];

	(void)ctx;
	assert_int_equal(size, sizeof(w));
	memcpy(w, data, sizeof(w));
	for (int i = 0; i < WORDS; i++)
		if (w[i] != t.want + (uint64_t)i)
			fail_msg("record %d: word %d is %llu, not %llu", t.got, i,
				 (unsigned long long)w[i],
				 (unsigned long long)(t.want + (uint64_t)i));
	t.want++;
	return t.got++ == t.fail_at ? -ECANCELED : 0;
}

/* Bytes of this process's mappings of the ring buffer (/proc/self/maps), writable or not. */
static void ring_mappings(size_t *rw, size_t *ro)
{
	char line[512], perms[8];
	unsigned long start, end;
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	*rw = *ro = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "bpf-map") ||
		    sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3)
			continue;
		if (perms[1] == 'w')
			*rw += end - start;
		else
			*ro += end - start;
	}
	fclose(f);
}

static int readable(const struct fl_bpfring *rb)
{
	struct epoll_event ev;

	return epoll_wait(fl_bpfring__epoll_fd(rb), &ev, 1, 0);
}

static void test_records_whole_and_in_order(void **state)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), rw, ro;
	struct fl_bpfring *rb;
	int total = 0;

	(void)state;
	begin(0, -1);
	assert_int_equal(fl_bpfring__new(&rb), 0);
	assert_int_equal(fl_bpfring__add(rb, t.map, on_record, NULL), 0);
	/* The consumer's page, and the producer's with the data once. */
	ring_mappings(&rw, &ro);
	assert_int_equal(rw, page);
	assert_int_equal(ro, page + RING_BYTES);
	assert_int_equal(readable(rb), 0);
	assert_int_equal(fl_bpfring__consume(rb), 0);
	/* Twelve times a record more than a ring's worth (48 bytes each): some wrap. */
	for (int round = 0; round < 12; round++) {
		produce(60);
		assert_int_equal(readable(rb), 1);
		assert_int_equal(fl_bpfring__consume(rb), 60);
		assert_int_equal(readable(rb), 0);
		total += 60;
	}
	assert_int_equal(t.got, total);
	assert_true((size_t)total * 48 > 8 * RING_BYTES);
	fl_bpfring__free(rb);
	ring_mappings(&rw, &ro);
	assert_int_equal(rw + ro, 0);
}

/* A callback's error ends the consuming after its record, which is not handed out again. */
static void test_callback_error_stops(void **state)
{
	struct fl_bpfring *rb;

	(void)state;
	begin(100, 2);
	assert_int_equal(fl_bpfring__new(&rb), 0);
	assert_int_equal(fl_bpfring__add(rb, t.map, on_record, NULL), 0);
	assert_int_equal(fl_bpfring__consume(rb), 0); /* what the test before left: nothing */
	produce(5);
	assert_int_equal(fl_bpfring__consume(rb), -ECANCELED);
	assert_int_equal(t.got, 3);
	assert_int_equal(fl_bpfring__consume(rb), 2);
	assert_int_equal(t.got, 5);
	fl_bpfring__free(rb);
}

/* A ring without a callback: its records wake the reader, are counted and passed over. */
static void test_wake_only(void **state)
{
	struct fl_bpfring *rb;

	(void)state;
	begin(200, -1);
	assert_int_equal(fl_bpfring__new(&rb), 0);
	assert_int_equal(fl_bpfring__add(rb, t.map, NULL, NULL), 0);
	assert_int_equal(fl_bpfring__consume(rb), 0);
	produce(7);
	assert_int_equal(readable(rb), 1);
	assert_int_equal(fl_bpfring__consume(rb), 7);
	assert_int_equal(readable(rb), 0);
	assert_int_equal(fl_bpfring__consume(rb), 0);
	assert_int_equal(t.got, 0);
	fl_bpfring__free(rb);
}

/* Not a ring buffer: refused. */
static void test_not_a_ring(void **state)
{
	struct fl_bpfring *rb;
	int arr = bpf_map_create(BPF_MAP_TYPE_ARRAY, "t_arr", 4, 8, 1, NULL);

	(void)state;
	assert_true(arr >= 0);
	assert_int_equal(fl_bpfring__new(&rb), 0);
	assert_int_equal(fl_bpfring__add(rb, arr, on_record, NULL), -EINVAL);
	assert_int_equal(fl_bpfring__consume(rb), 0);
	fl_bpfring__free(rb);
	close(arr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records_whole_and_in_order),
		cmocka_unit_test(test_callback_error_stops),
		cmocka_unit_test(test_wake_only),
		cmocka_unit_test(test_not_a_ring),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
