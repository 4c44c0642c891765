// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: DWARF through libdw. The input is a binary (a memfd):
 * fl_debuginfo__find() reads its build-id, debuglink and MiniDebugInfo (no
 * directory is searched), then fl_srcinfo__open() its DWARF, and
 * fl_srcinfo__frames() the inlined functions and source lines at the
 * functions its symbols name, as the symbolizer does for a sample.
 */
#include <errno.h>

#include "flamed/symbols/debuginfo.h"
#include "flamed/symbols/elfsyms.h"
#include "flamed/symbols/srcinfo.h"
#include "fuzz.h"

#define MAX_MINI (4u << 20)
#define MAX_LOOKUPS 64
#define MAX_FRAMES 16

static uint64_t lookup(struct fl_srcinfo *si, uint64_t vaddr, uint64_t h)
{
	struct fl_src_frame fr[MAX_FRAMES];
	size_t n = fl_srcinfo__frames(si, vaddr, fr, MAX_FRAMES);

	FUZZ_CHECK(n <= MAX_FRAMES);
	for (size_t i = 0; i < n; i++) {
		h = fuzz_hash_str(h, fr[i].name);
		h = fuzz_hash_str(h, fr[i].file);
		h = fuzz_hash_u64(h, (uint64_t)fr[i].line);
	}
	return h;
}

/* Addresses worth asking about: where the functions the symbols name start, and their middles. */
static size_t addrs_of(const struct fl_debuginfo *di, uint64_t *out, size_t max)
{
	struct fl_elfsyms *e = NULL;
	size_t n = 0;

	if (fl_elfsyms__from_debuginfo(di, &e))
		return 0;
	for (size_t i = 0; i < fl_elfsyms__count(e) && n + 2 <= max; i++) {
		const struct fl_elfsym *s = fl_elfsyms__at(e, i);

		out[n++] = s->addr;
		out[n++] = s->addr + s->size / 2;
	}
	fl_elfsyms__free(e);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const no_dirs[] = {NULL};
	const struct fl_debuginfo_opts o = {.sz = sizeof(o),
					    .root_fd = -1,
					    .debug_dirs = no_dirs,
					    .max_minidebuginfo = MAX_MINI};
	uint64_t addrs[MAX_LOOKUPS], h = 0, h_again = 0;
	struct fl_debuginfo *di = NULL;
	struct fl_srcinfo *si = NULL;
	const uint8_t *id = NULL;
	size_t nr, id_len;
	Elf *dwarf;
	int fd, err;

	fd = fuzz_memfd(data, size);
	err = fl_debuginfo__find(fd, NULL, &o, &di);
	close(fd);
	/* A file is checked first for what its headers claim (elfsize.h): -EFBIG. */
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -EFBIG);
	if (err)
		return 0;
	FUZZ_CHECK(fl_debuginfo__binary_elf(di));
	id_len = fl_debuginfo__build_id(di, &id);
	FUZZ_CHECK(!id_len || id);
	fuzz_sink(fuzz_hash(0, id, id_len));

	dwarf = fl_debuginfo__dwarf_elf(di);
	if (dwarf && fl_srcinfo__open(dwarf, fl_debuginfo__alt_elf(di), &si) == 0) {
		nr = addrs_of(di, addrs, MAX_LOOKUPS);
		for (size_t i = 0; i < nr; i++)
			h = lookup(si, addrs[i], h);
		/* Again: now from the unit indexes and names the first pass built, the same answers. */
		for (size_t i = 0; i < nr; i++)
			h_again = lookup(si, addrs[i], h_again);
		FUZZ_CHECK(h == h_again);
		fl_srcinfo__free(si);
	}
	fl_debuginfo__free(di);
	return 0;
}
