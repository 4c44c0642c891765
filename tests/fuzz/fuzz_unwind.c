// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: the DWARF unwinder on what a profiled process controls, the
 * registers it was sampled with and the copy of its stack, against a real
 * file's CFI (tests/fixtures/data/nofp_chain.elf, mapped where the
 * recorded sample of test_unwind had it) and anonymous memory (a JIT's
 * code, stepped by frame pointers). Three unwinders take each input: by
 * libdw, by the file's compiled rows (as the default mode's stack copies
 * are), and by windows indexed by .eh_frame_hdr (as big files are). Each
 * must end (callers' frames are above, the copy is bounded), read within
 * the copy, and give the same stack every time; libdw's and the windows'
 * must agree, as test_unwind has them agree on real samples.
 *
 * The input: a flags byte (bit 0: taken in the kernel; bit 1: the pc is a
 * return address, a frame a walk reached), 17 registers (DWARF numbering,
 * 8 bytes each), then the stack copy. A register or stack word whose low
 * two bits are 1, 2 or 3 is made an address in the file's code, in the
 * copy, or in the anonymous code (the rest of the word picks where), so
 * that frames can be built; 0, the word as it is. rsp is the copy's start.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "flamed/unwind_abi.h"
#include "flamed/unwinding/cfitable.h"
#include "flamed/unwinding/unwind.h"
#include "fuzz.h"

#ifndef FUZZ_FIXTURE_DATA
#error "FUZZ_FIXTURE_DATA must name tests/fixtures/data"
#endif

/* Where test_unwind's recorded sample had the fixture's code. */
#define CODE_START 0x560cd82f8000ULL
#define CODE_END 0x560cd82f9000ULL
#define CODE_PGOFF 0x1000ULL
#define ANON_START 0x7f0000000000ULL
#define ANON_SIZE 0x10000ULL
#define STACK_START 0x7ffc00000000ULL
#define MAX_COPY 65536
#define MAX_IPS 128

static struct fl_tmap maps[2];
static char fixture[PATH_MAX];
static struct fl_cfitable rows;
static struct fl_unwinder *by_libdw, *by_rows, *by_windows;

static const struct fl_tmap *find_map(void *ctx, uint32_t pid, uint64_t addr, uint64_t time)
{
	(void)ctx;
	(void)pid;
	(void)time;
	for (size_t i = 0; i < 2; i++)
		if (addr >= maps[i].start && addr < maps[i].end)
			return &maps[i];
	return NULL;
}

/* The file's compiled rows, as fl_unwind_row_fn says them (anonymous memory never comes here). */
static int row_of(void *ctx, const struct fl_tmap *m, uint64_t off, struct fl_uw_row *row)
{
	const struct fl_uw_row *r = fl_cfitable__find(&rows, off);

	(void)ctx;
	FUZZ_CHECK(m == &maps[0]);
	if (!r || r->cfa_type == FL_CFA_NONE)
		return 2;
	if (r->cfa_type == FL_CFA_UNSUPPORTED)
		return 1;
	*row = *r;
	return 0;
}

static void setup(void)
{
	struct fl_unwind_opts o = {.sz = sizeof(o), .find_map = find_map};
	struct stat st;
	int fd;

	snprintf(fixture, sizeof(fixture), "%s/nofp_chain.elf", FUZZ_FIXTURE_DATA);
	FUZZ_CHECK(stat(fixture, &st) == 0);
	maps[0] = (struct fl_tmap){.start = CODE_START,
				   .end = CODE_END,
				   .pgoff = CODE_PGOFF,
				   .dev_major = major(st.st_dev),
				   .dev_minor = minor(st.st_dev),
				   .ino = st.st_ino,
				   .path = fixture};
	maps[1] = (struct fl_tmap){.start = ANON_START, .end = ANON_START + ANON_SIZE, .path = ""};
	fd = open(fixture, O_RDONLY | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(fl_cfitable__from_fd(fd, &rows) == 0);
	close(fd);
	FUZZ_CHECK(fl_unwinder__new(&o, &by_libdw) == 0);
	FUZZ_CHECK(fl_unwinder__new(&o, &by_rows) == 0);
	fl_unwinder__set_rows(by_rows, row_of, NULL);
	o.hdr_min_code = 1;
	FUZZ_CHECK(fl_unwinder__new(&o, &by_windows) == 0);
}

/* A word of the input, made an address where its low bits say so. */
static uint64_t place(uint64_t w, size_t copy)
{
	uint64_t at = w >> 2;

	switch (w & 3) {
	case 1:
		return CODE_START + at % (CODE_END - CODE_START);
	case 2:
		/* In the copy, or just past it (a read there is cut, not wrong). */
		return STACK_START + at % (copy + 64);
	case 3:
		return ANON_START + at % ANON_SIZE;
	default:
		return w;
	}
}

static size_t unwind(struct fl_unwinder *u, const struct fl_unwind_sample *s, uint64_t *ips,
		     enum fl_unwind_outcome *out)
{
	size_t n = fl_unwinder__unwind(u, s, ips, MAX_IPS, out);

	FUZZ_CHECK(n >= 1 && n <= MAX_IPS);
	FUZZ_CHECK(*out < FL_UNWIND_OUTCOME__MAX);
	FUZZ_CHECK(ips[0] == s->regs[FL_UNWIND_REG_IP]);
	fuzz_sink(fuzz_hash(0, ips, n * sizeof(*ips)));
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	static uint8_t stack[MAX_COPY];
	const size_t head = 1 + FL_UNWIND_NR_REGS * 8;
	struct fl_unwind_sample s = {.pid = 1, .stack = stack};
	uint64_t ips[MAX_IPS], again[MAX_IPS];
	enum fl_unwind_outcome out, out2;
	size_t n, n2, copy;

	if (!ready) {
		setup();
		ready = true;
	}
	if (size < head)
		return 0;
	copy = size - head < MAX_COPY ? (size - head) & ~(size_t)7 : MAX_COPY;
	for (size_t i = 0; i < copy; i += 8) {
		uint64_t w;

		memcpy(&w, data + head + i, 8);
		w = place(w, copy);
		memcpy(stack + i, &w, 8);
	}
	s.stack_size = copy;
	s.in_kernel = data[0] & 1;
	s.ra = data[0] & 2;
	for (size_t r = 0; r < FL_UNWIND_NR_REGS; r++) {
		uint64_t w;

		memcpy(&w, data + 1 + r * 8, 8);
		s.regs[r] = place(w, copy);
	}
	s.regs[FL_UNWIND_REG_SP] = STACK_START;

	n = unwind(by_libdw, &s, ips, &out);
	n2 = unwind(by_libdw, &s, again, &out2);
	FUZZ_CHECK(n2 == n && out2 == out && !memcmp(again, ips, n * sizeof(*ips)));
	n2 = unwind(by_windows, &s, again, &out2);
	FUZZ_CHECK(n2 == n && out2 == out && !memcmp(again, ips, n * sizeof(*ips)));
	unwind(by_rows, &s, again, &out2);
	return 0;
}
