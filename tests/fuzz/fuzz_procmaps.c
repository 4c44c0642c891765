// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: /proc/PID/maps text, whose paths any process chooses
 * (fl_procmaps__parse() reads a FILE: the input through fmemopen()).
 */
#include "flamed/sampling/procmaps.h"
#include "fuzz.h"

static int on_map(const struct fl_procmap *m, void *ctx)
{
	uint64_t *h = ctx;

	FUZZ_CHECK(m->start <= m->end);
	FUZZ_CHECK(m->path);
	FUZZ_CHECK(!(m->prot & ~(uint32_t)(FL_PROT_READ | FL_PROT_WRITE | FL_PROT_EXEC)));
	*h = fuzz_hash_str(*h, m->path);
	*h = fuzz_hash_u64(*h, m->start ^ m->end ^ m->pgoff ^ m->ino);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t h = 0, nr_bad = 0;
	char *copy;
	FILE *f;

	/* fmemopen() wants a buffer it could write to, and one byte at least. */
	if (!size)
		return 0;
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	f = fmemopen(copy, size, "r");
	if (f) {
		FUZZ_CHECK(fl_procmaps__parse(f, on_map, &h, &nr_bad) == 0);
		fclose(f);
	}
	fuzz_sink(h + nr_bad);
	free(copy);
	return 0;
}
