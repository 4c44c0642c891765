// SPDX-License-Identifier: GPL-2.0-or-later
/* The folded-stacks writer: one sorted "root;...;leaf COUNT" line per distinct stack. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/common/cleanup.h"
#include "flamed/formats/folded.h"
#include "flamed/profile/profile.h"

/*
 * Lines are sorted by their stack text S = name0 ';' name1 ';' ... ';' nameN,
 * bytewise (memcmp order, a prefix first), without building S: stacks are
 * compared frame by frame through two precomputed ranks of every name.
 *
 * Names never contain ';' (the profile rewrites it), so equal ids are equal
 * text and, at the first frame where two stacks differ, the order of S is
 * decided by the two names and what follows each of them, ';' or the end:
 *  - both go on:   compare name+';'  (the "semi" rank);
 *  - both end:     compare the names alone (the "plain" rank);
 *  - one ends:     the two ranks agree unless one name is a prefix of the
 *                  other, and in every such case the stack that ends sorts
 *                  first (worked out in fd_cmp_stacks()).
 */

#define FD_OUT_BUF (256 * 1024)

struct fd_line {
	size_t off; /* of the first frame in fd_ctx.frames */
	size_t n;
	uint64_t count;
};

struct fd_name {
	const char *s;
	size_t len;
};

struct fd_ctx {
	const struct fl_profile *p;
	uint32_t *frames; /* a copy of every stack, back to back */
	size_t nr_frames, cap_frames;
	struct fd_line *lines;
	size_t nr_lines, cap_lines;
	uint32_t max_id;

	struct fd_name *names; /* by id */
	uint32_t *rank_plain; /* by id */
	uint32_t *rank_semi;  /* by id */
};

static void fd_ctx_done(struct fd_ctx *c)
{
	free(c->frames);
	free(c->lines);
	free(c->names);
	free(c->rank_plain);
	free(c->rank_semi);
}

/* fl_profile__for_each() lends each stack for the call only: keep a copy to sort. */
static int fd_copy_stack(const uint32_t *frames, size_t n, uint64_t count, void *arg)
{
	struct fd_ctx *c = arg;
	struct fd_line *l;
	size_t i;

	if (c->nr_lines == c->cap_lines) {
		size_t cap = c->cap_lines ? c->cap_lines * 2 : 1024;
		struct fd_line *lines;

		if (cap > SIZE_MAX / sizeof(*lines))
			return -ENOMEM;
		lines = realloc(c->lines, cap * sizeof(*lines));
		if (!lines)
			return -ENOMEM;
		c->lines = lines;
		c->cap_lines = cap;
	}
	if (n > c->cap_frames - c->nr_frames) {
		size_t cap = c->cap_frames ? c->cap_frames : 16384;
		uint32_t *copy;

		while (cap - c->nr_frames < n) {
			if (cap > SIZE_MAX / 2 / sizeof(*copy))
				return -ENOMEM;
			cap *= 2;
		}
		copy = realloc(c->frames, cap * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		c->frames = copy;
		c->cap_frames = cap;
	}
	memcpy(c->frames + c->nr_frames, frames, n * sizeof(*frames));
	for (i = 0; i < n; i++)
		if (frames[i] > c->max_id)
			c->max_id = frames[i];
	l = &c->lines[c->nr_lines++];
	l->off = c->nr_frames;
	l->n = n;
	l->count = count;
	c->nr_frames += n;
	return 0;
}

/* Names alone, bytewise, the shorter first when one is a prefix of the other. */
static int fd_cmp_plain(const void *a, const void *b, void *arg)
{
	const struct fd_name *na = &((const struct fd_ctx *)arg)->names[*(const uint32_t *)a];
	const struct fd_name *nb = &((const struct fd_ctx *)arg)->names[*(const uint32_t *)b];
	size_t m = na->len < nb->len ? na->len : nb->len;
	int r = memcmp(na->s, nb->s, m);

	if (r)
		return r;
	return na->len < nb->len ? -1 : na->len > nb->len;
}

/* Each name followed by ';': where one is a prefix, its ';' meets a byte of the other. */
static int fd_cmp_semi(const void *a, const void *b, void *arg)
{
	const struct fd_name *na = &((const struct fd_ctx *)arg)->names[*(const uint32_t *)a];
	const struct fd_name *nb = &((const struct fd_ctx *)arg)->names[*(const uint32_t *)b];
	size_t m = na->len < nb->len ? na->len : nb->len;
	int r = memcmp(na->s, nb->s, m);
	unsigned char ca, cb;

	if (r)
		return r;
	ca = na->len > m ? (unsigned char)na->s[m] : ';';
	cb = nb->len > m ? (unsigned char)nb->s[m] : ';';
	return ca < cb ? -1 : ca > cb;
}

static void fd_rank(struct fd_ctx *c, size_t nr_names, uint32_t *order,
		    int (*cmp)(const void *, const void *, void *), uint32_t *rank)
{
	size_t i;

	for (i = 0; i < nr_names; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, nr_names, sizeof(*order), cmp, c);
	for (i = 0; i < nr_names; i++)
		rank[order[i]] = (uint32_t)i;
}

static int fd_prepare_names(struct fd_ctx *c)
{
	size_t nr_names = (size_t)c->max_id + 1, i;
	_cleanup_free_ uint32_t *order = NULL;

	c->names = calloc(nr_names, sizeof(*c->names));
	c->rank_plain = calloc(nr_names, sizeof(*c->rank_plain));
	c->rank_semi = calloc(nr_names, sizeof(*c->rank_semi));
	order = calloc(nr_names, sizeof(*order));
	if (!c->names || !c->rank_plain || !c->rank_semi || !order)
		return -ENOMEM;
	for (i = 0; i < nr_names; i++) {
		const char *s = fl_profile__name(c->p, (uint32_t)i);

		/* Ids are dense and every id in a stack is known: only a broken profile gets here. */
		if (!s)
			return -EINVAL;
		c->names[i].s = s;
		c->names[i].len = strlen(s);
	}
	fd_rank(c, nr_names, order, fd_cmp_plain, c->rank_plain);
	fd_rank(c, nr_names, order, fd_cmp_semi, c->rank_semi);
	return 0;
}

static int fd_cmp_stacks(const void *a, const void *b, void *arg)
{
	const struct fd_ctx *c = arg;
	const struct fd_line *la = &c->lines[*(const uint32_t *)a];
	const struct fd_line *lb = &c->lines[*(const uint32_t *)b];
	const uint32_t *fa = c->frames + la->off;
	const uint32_t *fb = c->frames + lb->off;
	size_t m = la->n < lb->n ? la->n : lb->n, i;
	bool a_ends, b_ends, plain_lt, semi_lt;
	uint32_t x, y;

	for (i = 0; i < m && fa[i] == fb[i]; i++)
		;
	if (i == m) /* one stack is the other plus frames: S of the shorter is a prefix */
		return la->n < lb->n ? -1 : la->n > lb->n;
	x = fa[i];
	y = fb[i];
	a_ends = i + 1 == la->n;
	b_ends = i + 1 == lb->n;
	if (!a_ends && !b_ends)
		return c->rank_semi[x] < c->rank_semi[y] ? -1 : 1;
	plain_lt = c->rank_plain[x] < c->rank_plain[y];
	if (a_ends && b_ends)
		return plain_lt ? -1 : 1;
	/*
	 * One stack ends with its name, the other has ';' after its own. If
	 * neither name is a prefix of the other, both ranks say the same,
	 * and it is the answer. If they disagree, one name is a proper prefix
	 * of the other:
	 *  - the ending name is the prefix: nothing beats the end, it is first;
	 *  - the going-on name is the prefix: its ';' meets a byte of the
	 *    ending name, which is the semi order, and the semi order is the
	 *    one of the two that puts the ending stack first (plain puts the
	 *    prefix, the going-on stack, first).
	 * Either way the ending stack sorts first.
	 */
	semi_lt = c->rank_semi[x] < c->rank_semi[y];
	if (plain_lt == semi_lt)
		return plain_lt ? -1 : 1;
	return a_ends ? -1 : 1;
}

struct fd_out {
	FILE *f;
	char *buf;
	size_t len;
};

static int fd_flush(struct fd_out *o)
{
	if (o->len && fwrite(o->buf, 1, o->len, o->f) != o->len)
		return -EIO;
	o->len = 0;
	return 0;
}

static inline int fd_put(struct fd_out *o, const char *s, size_t len)
{
	if (len > FD_OUT_BUF - o->len) {
		if (fd_flush(o))
			return -EIO;
		if (len > FD_OUT_BUF)
			return fwrite(s, 1, len, o->f) == len ? 0 : -EIO;
	}
	memcpy(o->buf + o->len, s, len);
	o->len += len;
	return 0;
}

/* " COUNT\n" */
static int fd_put_count(struct fd_out *o, uint64_t count)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	tmp[--i] = '\n';
	do {
		tmp[--i] = (char)('0' + count % 10);
		count /= 10;
	} while (count);
	tmp[--i] = ' ';
	return fd_put(o, tmp + i, sizeof(tmp) - i);
}

static int fd_write_line(struct fd_out *o, const struct fd_ctx *c, const struct fd_line *l)
{
	const uint32_t *fr = c->frames + l->off;
	size_t i;

	for (i = 0; i < l->n; i++) {
		const struct fd_name *nm = &c->names[fr[i]];

		if (i && fd_put(o, ";", 1))
			return -EIO;
		if (fd_put(o, nm->s, nm->len))
			return -EIO;
	}
	return fd_put_count(o, l->count);
}

int fl_folded__write(const struct fl_profile *p, FILE *f)
{
	_cleanup_(fd_ctx_done) struct fd_ctx c = { .p = p };
	_cleanup_free_ uint32_t *order = NULL;
	_cleanup_free_ char *buf = NULL;
	struct fd_out o;
	size_t i;
	int err;

	if (!p || !f)
		return -EINVAL;
	err = fl_profile__for_each(p, fd_copy_stack, &c);
	if (err)
		return err;
	if (!c.nr_lines)
		return 0;
	if (c.nr_lines > UINT32_MAX)
		return -ENOMEM;
	err = fd_prepare_names(&c);
	if (err)
		return err;

	order = malloc(c.nr_lines * sizeof(*order));
	buf = malloc(FD_OUT_BUF);
	if (!order || !buf)
		return -ENOMEM;
	for (i = 0; i < c.nr_lines; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, c.nr_lines, sizeof(*order), fd_cmp_stacks, &c);

	o = (struct fd_out){ .f = f, .buf = buf };
	for (i = 0; i < c.nr_lines; i++) {
		err = fd_write_line(&o, &c, &c.lines[order[i]]);
		if (err)
			return err;
	}
	if (fd_flush(&o) || fflush(f) == EOF || ferror(f))
		return -EIO;
	return 0;
}
