// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: folded stacks ("a;b;c 12"), as `flamed svg` and `flamed diff`
 * read them: the reader from a buffer and from an fd (which must agree),
 * then the flame tree the lines go into, and its layout.
 */
#include <errno.h>
#include <math.h>

#include "flamed/profile/flametree.h"
#include "flamed/formats/foldedread.h"
#include "fuzz.h"

struct ctx {
	const char *buf; /* the input: every stack must point into it */
	size_t size;
	struct fl_flametree *tree; /* NULL for the fd pass */
	uint64_t hash;
};

static int on_line(const struct fl_folded_line *l, void *arg)
{
	struct ctx *c = arg;
	int err;

	FUZZ_CHECK(l->len > 0);
	FUZZ_CHECK(l->nr_counts == 1 || l->nr_counts == 2);
	for (unsigned i = 0; i < l->nr_counts; i++)
		FUZZ_CHECK(l->count[i] >= 0 && l->count[i] <= FL_FOLDED_MAX_COUNT);
	if (c->tree) {
		FUZZ_CHECK(l->stack >= c->buf && l->len <= c->size &&
			   l->stack + l->len <= c->buf + c->size);
		/* -E2BIG (too deep) is an answer, not a bug; a count it refuses would be. */
		if (l->nr_counts == 2)
			err = fl_flametree__add(c->tree, l->stack, l->len, l->count[0],
						l->count[1]);
		else
			err = fl_flametree__add(c->tree, l->stack, l->len, 0, l->count[0]);
		FUZZ_CHECK(err == 0 || err == -E2BIG);
	}
	c->hash = fuzz_hash(c->hash, l->stack, l->len);
	c->hash = fuzz_hash(c->hash, l->count, sizeof(l->count));
	return 0;
}

static void walk_layout(struct fl_flametree *t, enum fl_flametree_sort sort, double min_count)
{
	const struct fl_flametree_layout_opts lo = {
		.sz = sizeof(lo), .sort = sort, .min_count = min_count};
	const struct fl_drawn *d;
	const char *name;
	size_t n, len;
	uint64_t h = 0;

	if (fl_flametree__layout(t, &lo, &d, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(d[i].end > i && d[i].end <= n);
		FUZZ_CHECK(isfinite(d[i].start) && isfinite(d[i].count));
		if (d[i].merged)
			continue;
		name = fl_flametree__name(t, d[i].node, &len);
		h = fuzz_hash(h, name, len);
		fl_flametree__parent(t, d[i].node);
	}
	fuzz_sink(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Which tree: the options come from the size, so the fuzzer reaches all four. */
	const struct fl_flametree_opts to = {
		.sz = sizeof(to), .flamechart = size & 1, .reverse = size & 2};
	struct fl_folded_stats st, st_fd;
	struct ctx c = {.buf = (const char *)data, .size = size};
	struct ctx c_fd = {.buf = (const char *)data, .size = size};
	int fd;

	if (fl_flametree__new(&to, &c.tree))
		return 0;
	FUZZ_CHECK(fl_folded__parse((const char *)data, size, on_line, &c, &st) == 0);
	FUZZ_CHECK(st.good + st.nr_bad == st.lines);

	/* The fd reader is the same parser fed in chunks: it must see the same lines. */
	fd = fuzz_memfd(data, size);
	FUZZ_CHECK(fl_folded__parse_fd(fd, on_line, &c_fd, &st_fd) == 0);
	close(fd);
	FUZZ_CHECK(st_fd.lines == st.lines && st_fd.good == st.good && st_fd.nr_bad == st.nr_bad &&
		   c_fd.hash == c.hash);

	walk_layout(c.tree, FL_SORT_NAME, 0);
	walk_layout(c.tree, FL_SORT_COUNT, fl_flametree__total(c.tree) / 100);
	fl_flametree__free(c.tree);
	return 0;
}
