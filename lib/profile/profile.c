// SPDX-License-Identifier: GPL-2.0-or-later
/* The profile: sanitized frame names in a string pool and a hash of distinct stacks to counts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/profile/profile.h"
#include "flamed/common/strpool.h"
#include "common/keycount.h"

#define PF_EMPTY_NAME "[empty]"

/* A stack is its frame ids as one key; the keys remember their order of first appearance. */
struct fl_profile {
	struct fl_strpool *names;
	uint64_t nr_sanitized;
	char *scratch; /* where a name is rewritten when it needs to be */
	size_t scratch_cap;
	struct fl_keycount stacks;
};

int fl_profile__new(struct fl_profile **ret)
{
	struct fl_profile *p;
	int err;

	if (!ret)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	err = fl_strpool__new(&p->names);
	if (err) {
		free(p);
		return err;
	}
	*ret = p;
	return 0;
}

void fl_profile__free(struct fl_profile *p)
{
	if (!p)
		return;
	fl_strpool__free(p->names);
	free(p->scratch);
	fl_keycount__fini(&p->stacks);
	free(p);
}

/* A byte that could end a frame or a line in some writer's output. */
static inline bool pf_is_unsafe(unsigned char c)
{
	return c == ';' || c < 0x20 || c == 0x7f;
}

int fl_profile__intern(struct fl_profile *p, const char *name, size_t len, uint32_t *id)
{
	size_t i;
	int err;

	if (!p || !id || (!name && len))
		return -EINVAL;
	if (!len) {
		err = fl_strpool__intern(p->names, PF_EMPTY_NAME, strlen(PF_EMPTY_NAME), id);
		if (!err)
			p->nr_sanitized++;
		return err;
	}
	for (i = 0; i < len; i++)
		if (pf_is_unsafe((unsigned char)name[i]))
			break;
	if (i == len)
		return fl_strpool__intern(p->names, name, len, id);

	if (len > p->scratch_cap) {
		char *scratch = realloc(p->scratch, len);

		if (!scratch)
			return -ENOMEM;
		p->scratch = scratch;
		p->scratch_cap = len;
	}
	memcpy(p->scratch, name, len);
	for (; i < len; i++) {
		unsigned char c = (unsigned char)p->scratch[i];

		if (c == ';')
			p->scratch[i] = ':';
		else if (pf_is_unsafe(c))
			p->scratch[i] = '?';
	}
	err = fl_strpool__intern(p->names, p->scratch, len, id);
	if (!err)
		p->nr_sanitized++;
	return err;
}

const char *fl_profile__name(const struct fl_profile *p, uint32_t id)
{
	return p ? fl_strpool__str(p->names, id) : NULL;
}

int fl_profile__add(struct fl_profile *p, const uint32_t *frames, size_t n, uint64_t count)
{
	size_t nr_names, i;

	if (!p || !frames || !n || !count)
		return -EINVAL;
	if (n >= UINT32_MAX)
		return -ENOMEM;
	nr_names = fl_strpool__count(p->names);
	for (i = 0; i < n; i++)
		if (frames[i] >= nr_names)
			return -EINVAL;

	return fl_keycount__add(&p->stacks, frames, n * sizeof(*frames), count);
}

uint64_t fl_profile__total(const struct fl_profile *p)
{
	return p ? p->stacks.total : 0;
}

size_t fl_profile__nr_stacks(const struct fl_profile *p)
{
	return p ? p->stacks.nr_keys : 0;
}

uint64_t fl_profile__nr_sanitized(const struct fl_profile *p)
{
	return p ? p->nr_sanitized : 0;
}

int fl_profile__for_each(const struct fl_profile *p, fl_profile_stack_fn fn, void *ctx)
{
	const void *key;
	uint64_t count;
	size_t pos = 0, len;

	if (!p || !fn)
		return -EINVAL;
	while (fl_keycount__next(&p->stacks, &pos, &key, &len, &count)) {
		int ret = fn(key, len / sizeof(uint32_t), count, ctx);

		if (ret)
			return ret;
	}
	return 0;
}

struct pf_stack {
	const uint32_t *frames;
	size_t n;
	uint64_t count;
};

/* Frame ids compared one by one, root first (leaf first if reversed); a prefix sorts first. */
static int cmp_stack(const void *a, const void *b, void *ctx)
{
	const struct pf_stack *x = a, *y = b;
	bool reverse = *(const bool *)ctx;
	size_t m = x->n < y->n ? x->n : y->n;

	for (size_t i = 0; i < m; i++) {
		uint32_t fx = x->frames[reverse ? x->n - 1 - i : i];
		uint32_t fy = y->frames[reverse ? y->n - 1 - i : i];

		if (fx != fy)
			return fx < fy ? -1 : 1;
	}
	return x->n < y->n ? -1 : x->n > y->n;
}

int fl_profile__for_each_grouped(const struct fl_profile *p, bool reverse, fl_profile_stack_fn fn,
				 void *ctx)
{
	struct pf_stack *v;
	const void *key;
	uint64_t count;
	size_t pos = 0, len, n = 0;
	int err = 0;

	if (!p || !fn)
		return -EINVAL;
	v = malloc((p->stacks.nr_keys ? p->stacks.nr_keys : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	while (n < p->stacks.nr_keys && fl_keycount__next(&p->stacks, &pos, &key, &len, &count))
		v[n++] = (struct pf_stack){key, len / sizeof(uint32_t), count};
	qsort_r(v, n, sizeof(*v), cmp_stack, &reverse);
	for (size_t i = 0; i < n && !err; i++)
		err = fn(v[i].frames, v[i].n, v[i].count, ctx);
	free(v);
	return err;
}
