// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: function symbols of an ELF file read with libelf, the three
 * ways the symbolizer loads them: from memory (the vdso), from an fd (a
 * memfd holding the input), and with its debug info (.gnu_debugdata, the
 * xz-compressed MiniDebugInfo, decoded in memory; no directory is searched,
 * so no file of this machine is read).
 */
#include <errno.h>

#include "flamed/symbols/elfsyms.h"
#include "fuzz.h"

/* Cap on the decompressed MiniDebugInfo: a small xz stream can claim gigabytes. */
#define MAX_MINI (4u << 20)

/* The symbols, sorted and within their names; lookups at each of them. */
static void walk(const struct fl_elfsyms *e)
{
	size_t n = fl_elfsyms__count(e);
	uint64_t h = 0, vaddr;

	for (size_t i = 0; i < n; i++) {
		const struct fl_elfsym *s = fl_elfsyms__at(e, i), *f;

		FUZZ_CHECK(s->name);
		FUZZ_CHECK(i == 0 || fl_elfsyms__at(e, i - 1)->addr < s->addr);
		h = fuzz_hash_str(h, s->name);
		f = fl_elfsyms__find(e, s->addr);
		FUZZ_CHECK(!f || (f->addr <= s->addr && s->addr - f->addr < f->size));
		if (s->size > 1)
			fl_elfsyms__find(e, s->addr + s->size - 1);
		if (i < 64 && fl_elfsyms__offset_to_vaddr(e, s->addr, &vaddr) == 0)
			h = fuzz_hash_u64(h, vaddr);
	}
	fuzz_sink(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const no_dirs[] = {NULL};
	const struct fl_debuginfo_opts o = {.sz = sizeof(o),
					    .root_fd = -1,
					    .debug_dirs = no_dirs,
					    .max_minidebuginfo = MAX_MINI};
	struct fl_elfsyms *e = NULL;
	int fd, err;

	err = fl_elfsyms__from_memory(data, size, &e);
	FUZZ_CHECK(err == 0 || err == -EINVAL);
	if (!err)
		walk(e);
	fl_elfsyms__free(e);
	e = NULL;

	/* A file is checked first for what its headers claim (elfsize.h): -EFBIG. */
	fd = fuzz_memfd(data, size);
	err = fl_elfsyms__open_fd(fd, &e);
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -EFBIG);
	if (!err)
		walk(e);
	fl_elfsyms__free(e);
	e = NULL;

	err = fl_elfsyms__open_debug(fd, NULL, &o, &e);
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -EFBIG);
	if (!err)
		walk(e);
	fl_elfsyms__free(e);
	close(fd);
	return 0;
}
