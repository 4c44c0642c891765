// SPDX-License-Identifier: GPL-2.0-or-later
/* Loads /proc/kallsyms text symbols into one string pool and one address-sorted array. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/common/cleanup.h"
#include "flamed/symbols/ksyms.h"
#include "common/parse.h"

/*
 * How far past the last symbol of a region (the kernel image, one module)
 * an address still belongs to it: that symbol has no successor to end it.
 */
#define KSYMS_TAIL (UINT64_C(1) << 20)

/* No offset into the pool: a kernel-image symbol has no module. */
#define NO_MODULE UINT32_MAX

/*
 * A symbol while loading. Names are pool offsets because the pool still
 * grows; 32 bits keep this array small (a pool of 4 GiB is refused).
 */
struct raw_ksym {
	uint64_t addr;
	uint32_t name_off;
	uint32_t module_off;
	uint32_t seq; /* line order, the last tie-break */
	uint8_t rank; /* lower wins among symbols at one address */
};

struct fl_ksyms {
	struct fl_ksym *syms; /* sorted by addr, one per address */
	size_t nr;
	char *pool; /* every name and module name, NUL-terminated */
	bool hidden;
};

/* Growable buffers used while loading; freed by loader__fini(). */
struct loader {
	struct raw_ksym *raw;
	size_t nr_raw, cap_raw;
	char *pool;
	size_t pool_len, pool_cap;
	uint32_t *modules; /* pool offsets of distinct module names */
	size_t nr_modules, cap_modules;
	uint32_t last_module; /* pool offset of the previous line's module */
	size_t nr_lines; /* lines that parsed, any symbol type */
	size_t nr_nonzero; /* of those, lines with a non-zero address */
};

static void loader__fini(struct loader *l)
{
	free(l->raw);
	free(l->pool);
	free(l->modules);
}

static int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	p = realloc(*buf, n * elem);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

/* Appends len bytes and a NUL to the pool; the offset goes to *off. */
static int loader__pool_add(struct loader *l, const char *s, size_t len, uint32_t *off)
{
	void *pool = l->pool;
	int err;

	if (len >= UINT32_MAX - l->pool_len)
		return -ENOMEM;
	err = grow(&pool, &l->pool_cap, l->pool_len + len + 1, 1);
	l->pool = pool;
	if (err)
		return err;
	memcpy(l->pool + l->pool_len, s, len);
	l->pool[l->pool_len + len] = '\0';
	*off = (uint32_t)l->pool_len;
	l->pool_len += len + 1;
	return 0;
}

/* Module names are few and come in runs: store each distinct one once. */
static int loader__module(struct loader *l, const char *s, size_t len, uint32_t *off)
{
	void *mods = l->modules;
	size_t i;
	int err;

	if (l->last_module != NO_MODULE && !strncmp(l->pool + l->last_module, s, len) &&
	    l->pool[l->last_module + len] == '\0') {
		*off = l->last_module;
		return 0;
	}
	for (i = 0; i < l->nr_modules; i++) {
		const char *m = l->pool + l->modules[i];

		if (!strncmp(m, s, len) && m[len] == '\0') {
			*off = l->last_module = l->modules[i];
			return 0;
		}
	}
	err = grow(&mods, &l->cap_modules, l->nr_modules + 1, sizeof(*l->modules));
	l->modules = mods;
	if (err)
		return err;
	err = loader__pool_add(l, s, len, off);
	if (err)
		return err;
	l->modules[l->nr_modules++] = *off;
	l->last_module = *off;
	return 0;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Global text first, then weak, then local: the name a reader expects. */
static int text_rank(char type)
{
	switch (type) {
	case 'T':
		return 0;
	case 'W':
		return 1;
	case 't':
		return 2;
	case 'w':
		return 3;
	default:
		return -1;
	}
}

/* Parses "addr type name[\t[module]]"; returns 1 for a text symbol, 0 for another line. */
static int loader__line(struct loader *l, const char *p)
{
	const char *name, *mod = NULL;
	size_t name_len, mod_len = 0, ndigits = 0;
	struct raw_ksym *r;
	uint64_t addr = 0;
	void *raw;
	int rank, d, err;

	for (; (d = fl_hexval(*p)) >= 0; p++) {
		if (++ndigits > 16)
			return 0;
		addr = addr << 4 | (uint64_t)d;
	}
	if (!ndigits || !is_blank(*p))
		return 0;
	while (is_blank(*p))
		p++;
	rank = text_rank(*p);
	if (!*p || !is_blank(p[1]))
		return 0;
	p += 2;
	while (is_blank(*p))
		p++;
	name = p;
	name_len = strcspn(p, " \t\n");
	p += name_len;
	if (!name_len)
		return 0;
	while (is_blank(*p))
		p++;
	if (*p == '[') {
		const char *end = strchr(++p, ']');

		if (!end || end == p)
			return 0;
		mod = p;
		mod_len = (size_t)(end - p);
	} else if (*p && *p != '\n') {
		return 0;
	}

	l->nr_lines++;
	if (addr)
		l->nr_nonzero++;
	if (rank < 0 || !addr)
		return 0;
	if (l->nr_raw >= UINT32_MAX)
		return -ENOMEM;

	raw = l->raw;
	err = grow(&raw, &l->cap_raw, l->nr_raw + 1, sizeof(*l->raw));
	l->raw = raw;
	if (err)
		return err;
	r = &l->raw[l->nr_raw];
	r->addr = addr;
	r->rank = (uint8_t)rank;
	r->seq = (uint32_t)l->nr_raw;
	r->module_off = NO_MODULE;
	err = loader__pool_add(l, name, name_len, &r->name_off);
	if (!err && mod)
		err = loader__module(l, mod, mod_len, &r->module_off);
	if (err)
		return err;
	l->nr_raw++;
	return 1;
}

/* Address, then line order: equal addresses stay in the order they were read. */
static int raw_ksym__cmp(const void *a, const void *b)
{
	const struct raw_ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool raw_sorted(const struct raw_ksym *r, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (r[i - 1].addr > r[i].addr)
			return false;
	return true;
}

/*
 * Sorts (the kernel already prints in address order, so usually nothing
 * moves), keeps the best-ranked symbol of each address, the first read among
 * equals, and turns pool offsets into pointers.
 */
static int ksyms__build(struct fl_ksyms *ks, struct loader *l)
{
	size_t i = 0, j, best, n = 0;

	if (!raw_sorted(l->raw, l->nr_raw))
		qsort(l->raw, l->nr_raw, sizeof(*l->raw), raw_ksym__cmp);
	ks->syms = malloc((l->nr_raw ? l->nr_raw : 1) * sizeof(*ks->syms));
	if (!ks->syms)
		return -ENOMEM;
	ks->pool = TAKE_PTR(l->pool);
	while (i < l->nr_raw) {
		const struct raw_ksym *r;

		for (best = i, j = i + 1; j < l->nr_raw && l->raw[j].addr == l->raw[i].addr; j++)
			if (l->raw[j].rank < l->raw[best].rank)
				best = j;
		r = &l->raw[best];
		ks->syms[n].addr = r->addr;
		ks->syms[n].name = ks->pool + r->name_off;
		ks->syms[n].module = r->module_off == NO_MODULE ? NULL : ks->pool + r->module_off;
		n++;
		i = j;
	}
	ks->nr = n;
	return 0;
}

DEFINE_FREE_FUNC(struct fl_ksyms, fl_ksyms__free)

int fl_ksyms__load(const struct fl_ksyms_opts *opts, struct fl_ksyms **ret)
{
	/* path is the first field after sz: any caller that has opts has it. */
	const char *path = opts && opts->path ? opts->path : "/proc/kallsyms";
	_cleanup_(loader__fini) struct loader l = { .last_module = NO_MODULE };
	_cleanup_(fl_ksyms__freep) struct fl_ksyms *ks = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t line_cap = 0;
	int err;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* /proc/kallsyms is several MB: fewer, larger reads. */
	setvbuf(f, NULL, _IOFBF, 1 << 16);

	errno = 0;
	while (getline(&line, &line_cap, f) >= 0) {
		err = loader__line(&l, line);
		if (err < 0)
			return err;
	}
	if (ferror(f))
		return errno ? -errno : -EIO;

	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	if (l.nr_lines && !l.nr_nonzero) {
		ks->hidden = true;
		*ret = TAKE_PTR(ks);
		return 0;
	}
	err = ksyms__build(ks, &l);
	if (err)
		return err;
	*ret = TAKE_PTR(ks);
	return 0;
}

void fl_ksyms__free(struct fl_ksyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->pool);
	free(ks);
}

/* Same region: both in the kernel image, or both in one module (module names are pooled once). */
static bool same_region(const struct fl_ksym *a, const struct fl_ksym *b)
{
	return a->module == b->module;
}

const struct fl_ksym *fl_ksyms__find(const struct fl_ksyms *ks, uint64_t addr)
{
	const struct fl_ksym *s;
	size_t lo = 0, hi;

	if (!ks || !ks->nr)
		return NULL;
	/* Find the first symbol above addr; the one before it is the candidate. */
	hi = ks->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &ks->syms[lo - 1];
	if (lo < ks->nr && same_region(s, &ks->syms[lo]))
		return s;
	return addr - s->addr <= KSYMS_TAIL ? s : NULL;
}

bool fl_ksyms__addrs_hidden(const struct fl_ksyms *ks)
{
	return ks && ks->hidden;
}

size_t fl_ksyms__count(const struct fl_ksyms *ks)
{
	return ks ? ks->nr : 0;
}
