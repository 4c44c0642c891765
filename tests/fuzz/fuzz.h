/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the fuzz targets share: the libFuzzer entry point, input as a file, and reading results. */
#ifndef FLAMED_FUZZ_H
#define FLAMED_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Called once per input by libFuzzer, or by replay.c for each corpus file.
 * Returns 0 (libFuzzer reserves other values). A bug aborts.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * A broken promise of the code under test (not an input it rejects): print
 * where and abort, which libFuzzer and replay.c both report as a crash.
 */
#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/*
 * Reads every byte of what a parser handed back, so that AddressSanitizer
 * sees a pointer or length that runs past its buffer, and folds it into a
 * hash the caller may compare between two runs over the same input.
 */
static inline uint64_t fuzz_hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull; /* FNV-1a */
	return h;
}

static inline uint64_t fuzz_hash_u64(uint64_t h, uint64_t v)
{
	return fuzz_hash(h, &v, sizeof(v));
}

/* Keeps a hash alive, so that the compiler cannot drop the reads that made it. */
static volatile uint64_t fuzz_sink_;

static inline void fuzz_sink(uint64_t h)
{
	fuzz_sink_ = h;
}

/* The same for a NUL-terminated string (NULL allowed). */
static inline uint64_t fuzz_hash_str(uint64_t h, const char *s)
{
	return s ? fuzz_hash(h, s, strlen(s) + 1) : fuzz_hash_u64(h, 0);
}

/*
 * The input as an unnamed regular file (memfd), offset 0, for APIs that take
 * an fd or a path (/proc/self/fd/N). Returns the fd; the caller closes it.
 * Aborts when there is none: a harness that silently tests nothing is worse.
 */
/* Writes all of data to fd (aborts on failure). */
static inline void fuzz_write_all(int fd, const uint8_t *data, size_t size)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		FUZZ_CHECK(n > 0);
		done += (size_t)n;
	}
}

static inline int fuzz_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	FUZZ_CHECK(fd >= 0);
	fuzz_write_all(fd, data, size);
	FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
	return fd;
}

/*
 * The hex number at the start of each of the first lines of the input
 * ("ffffffff81000000 T _stext", "7f00 40 name"; an optional "0x"), up to
 * max of them: addresses worth looking up in what the input built.
 */
static inline size_t fuzz_line_addrs(const uint8_t *data, size_t size, uint64_t *out, size_t max)
{
	size_t nr = 0, i = 0;

	while (i < size && nr < max) {
		uint64_t v = 0;
		size_t digits = 0;

		if (i + 1 < size && data[i] == '0' && (data[i + 1] == 'x' || data[i + 1] == 'X'))
			i += 2;
		for (; i < size && digits < 16; i++, digits++) {
			int c = data[i], d;

			if (c >= '0' && c <= '9')
				d = c - '0';
			else if (c >= 'a' && c <= 'f')
				d = c - 'a' + 10;
			else if (c >= 'A' && c <= 'F')
				d = c - 'A' + 10;
			else
				break;
			v = v << 4 | (uint64_t)d;
		}
		if (digits)
			out[nr++] = v;
		while (i < size && data[i] != '\n')
			i++;
		i++;
	}
	return nr;
}

#endif
