// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: pprof profiles (profile.proto, gzipped or not), as `flamed
 * svg` and `flamed diff` read them: the format check, the reader, and the
 * flame tree its lines go into.
 */
#include <errno.h>
#include <math.h>

#include "flamed/formats/pprofread.h"
#include "flamed/profile/flametree.h"
#include "fuzz.h"

struct ctx {
	struct fl_flametree *tree;
	uint64_t hash, lines;
};

static int on_line(const struct fl_folded_line *l, void *arg)
{
	struct ctx *c = arg;
	int err;

	/* Every frame named: no empty one, nothing a folded line cannot hold. */
	FUZZ_CHECK(l->len > 0 && l->len <= FL_FOLDED_MAX_LINE);
	FUZZ_CHECK(l->stack[0] != ';' && l->stack[l->len - 1] != ';');
	for (size_t i = 0; i < l->len; i++) {
		unsigned char ch = (unsigned char)l->stack[i];

		FUZZ_CHECK(ch >= 0x20 && ch != 0x7f);
		FUZZ_CHECK(!(ch == ';' && i + 1 < l->len && l->stack[i + 1] == ';'));
	}
	FUZZ_CHECK(l->nr_counts == 1 && l->count[0] > 0 && isfinite(l->count[0]));
	FUZZ_CHECK(l->lineno > 0);
	err = fl_flametree__add(c->tree, l->stack, l->len, 0, l->count[0]);
	FUZZ_CHECK(err == 0 || err == -E2BIG);
	c->hash = fuzz_hash(c->hash, l->stack, l->len);
	c->lines++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A small cap keeps each run fast; the type asked for comes from the size. */
	const struct fl_pprof_read_opts o = {
		.sz = sizeof(o), .sample_type = size & 1 ? "samples" : NULL, .max_bytes = 8u << 20};
	const struct fl_flametree_opts to = {.sz = sizeof(to)};
	struct fl_pprof_read_info info;
	struct ctx c = {};
	int err;

	fuzz_sink(fl_pprof__detect(data, size));
	if (fl_flametree__new(&to, &c.tree))
		return 0;
	err = fl_pprof__parse(data, size, &o, on_line, &c, &info);
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -EFBIG || err == -ENOMEM);
	FUZZ_CHECK(err != 0 || info.samples == c.lines);
	FUZZ_CHECK(err == 0 || err == -ENOMEM || info.error);
	FUZZ_CHECK(memchr(info.type, '\0', sizeof(info.type)) &&
		   memchr(info.unit, '\0', sizeof(info.unit)));
	fuzz_sink(fuzz_hash_str(c.hash, info.type));
	fl_flametree__free(c.tree);
	return 0;
}
