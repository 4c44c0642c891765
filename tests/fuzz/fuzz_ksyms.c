// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: /proc/kallsyms text (fl_ksyms__load() takes a path: the input
 * is a memfd, read through /proc/self/fd/N), then lookups at the addresses
 * the lines start with.
 */
#include "flamed/symbols/ksyms.h"
#include "fuzz.h"

#define MAX_ADDRS 64

/*
 * Each line with a module name ("[ext4]") not seen before costs a scan of
 * the names seen so far: quadratic in the number of distinct modules. The
 * real file has a few hundred; a bigger input only slows the fuzzer down.
 */
#define MAX_INPUT (64u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[40];
	const struct fl_ksyms_opts o = {.sz = sizeof(o), .path = path};
	uint64_t addrs[MAX_ADDRS], h = 0;
	struct fl_ksyms *ks = NULL;
	size_t nr;
	int fd, err;

	if (size > MAX_INPUT)
		return 0;
	fd = fuzz_memfd(data, size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = fl_ksyms__load(&o, &ks);
	close(fd);
	FUZZ_CHECK(err == 0);
	FUZZ_CHECK(!fl_ksyms__addrs_hidden(ks) || fl_ksyms__count(ks) == 0);

	nr = fuzz_line_addrs(data, size, addrs, MAX_ADDRS);
	for (size_t i = 0; i < 3 * nr; i++) {
		uint64_t addr = addrs[i / 3] + i % 3 - 1;
		const struct fl_ksym *s = fl_ksyms__find(ks, addr);

		if (!s)
			continue;
		FUZZ_CHECK(s->addr <= addr);
		FUZZ_CHECK(s->name && s->name[0]);
		h = fuzz_hash_str(h, s->name);
		h = fuzz_hash_str(h, s->module);
	}
	fuzz_sink(h);
	fl_ksyms__free(ks);
	return 0;
}
