// SPDX-License-Identifier: GPL-2.0-or-later
/* flamed collapse --inline (see inline_lookup.h). */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flamed/symbols/debuginfo.h"
#include "flamed/symbols/demangle.h"
#include "flamed/symbols/elfsyms.h"
#include "flamed/files/regfile.h"
#include "flamed/symbols/srcinfo.h"
#include "inline_lookup.h"

/* Modules read, at most: a perf script names few files, a hostile one many. */
#define MAX_MODULES 4096

struct by_name {
	char *key; /* the name as perf prints it: demangled, no parameters */
	uint64_t addr;
};

struct module {
	char *path;
	struct fl_debuginfo *di; /* keeps the DWARF's ELF open */
	struct fl_srcinfo *si;	 /* NULL: no DWARF, nothing to find */
	struct by_name *names;	 /* sorted by key */
	size_t nr_names;
	bool exec; /* ET_EXEC: addresses are the file's */
};

struct inline_lookup {
	struct module *mods;
	size_t nr_mods, cap_mods;
	struct fl_src_frame frames[INLINE_LOOKUP_MAX + 1];
};

int inline_lookup__new(struct inline_lookup **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

static void module_fini(struct module *m)
{
	for (size_t i = 0; i < m->nr_names; i++)
		free(m->names[i].key);
	free(m->names);
	fl_srcinfo__free(m->si);
	fl_debuginfo__free(m->di);
	free(m->path);
}

void inline_lookup__free(struct inline_lookup *il)
{
	if (!il)
		return;
	for (size_t i = 0; i < il->nr_mods; i++)
		module_fini(&il->mods[i]);
	free(il->mods);
	free(il);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct by_name *)a)->key, ((const struct by_name *)b)->key);
}

/* Names as perf shows them: demangled without parameters. */
static void index_names(struct module *m, const struct fl_elfsyms *syms)
{
	size_t n = fl_elfsyms__count(syms);
	char buf[1024];

	m->names = calloc(n ? n : 1, sizeof(*m->names));
	if (!m->names)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct fl_elfsym *s = fl_elfsyms__at(syms, i);
		struct by_name *b = &m->names[m->nr_names];

		if (fl_demangle(s->name, buf, sizeof(buf)) < 0)
			continue;
		b->key = strdup(buf);
		if (!b->key)
			break;
		b->addr = s->addr;
		m->nr_names++;
	}
	qsort(m->names, m->nr_names, sizeof(*m->names), cmp_name);
}

/* Reads path once; a file that cannot be used is remembered as such. */
static struct module *module_get(struct inline_lookup *il, const char *path, size_t len)
{
	struct fl_debuginfo_opts dio = {.sz = sizeof(dio)};
	struct fl_elfsyms *syms = NULL;
	struct module *m;
	GElf_Ehdr eh;
	Elf *dwarf;
	int fd;

	for (size_t i = 0; i < il->nr_mods; i++)
		if (strlen(il->mods[i].path) == len && !memcmp(il->mods[i].path, path, len))
			return &il->mods[i];
	if (il->nr_mods == MAX_MODULES)
		return NULL;
	if (il->nr_mods == il->cap_mods) {
		size_t ncap = il->cap_mods ? il->cap_mods * 2 : 16;
		struct module *nm = realloc(il->mods, ncap * sizeof(*nm));

		if (!nm)
			return NULL;
		il->mods = nm;
		il->cap_mods = ncap;
	}
	m = &il->mods[il->nr_mods];
	memset(m, 0, sizeof(*m));
	m->path = strndup(path, len);
	if (!m->path)
		return NULL;
	il->nr_mods++;
	/* Only regular files: a FIFO or a device named by the text is not even opened. */
	fd = fl_regfile__open(AT_FDCWD, m->path, 0, NULL);
	if (fd < 0)
		return m;
	if (fl_debuginfo__find(fd, m->path, &dio, &m->di)) {
		close(fd);
		return m;
	}
	close(fd);
	if (gelf_getehdr(fl_debuginfo__binary_elf(m->di), &eh))
		m->exec = eh.e_type == ET_EXEC;
	dwarf = fl_debuginfo__dwarf_elf(m->di);
	if (!dwarf || fl_srcinfo__open(dwarf, fl_debuginfo__alt_elf(m->di), &m->si))
		return m;
	if (!fl_elfsyms__from_debuginfo(m->di, &syms)) {
		index_names(m, syms);
		fl_elfsyms__free(syms);
	}
	return m;
}

static int parse_hex(struct fl_ps_str s, uint64_t *v)
{
	uint64_t x = 0;

	if (!s.len || s.len > 16)
		return -EINVAL;
	for (size_t i = 0; i < s.len; i++) {
		char c = s.s[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;

		if (d < 0)
			return -EINVAL;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return 0;
}

/* The symbol's value by the name perf printed (parameters, if any, ignored). */
static int symbol_addr(const struct module *m, struct fl_ps_str sym, uint64_t *addr)
{
	char key[1024];
	size_t len = sym.len;
	size_t lo = 0, hi = m->nr_names;

	for (size_t i = 0; i < sym.len; i++)
		if (sym.s[i] == '(') {
			len = i;
			break;
		}
	if (!len || len >= sizeof(key))
		return -ENOENT;
	memcpy(key, sym.s, len);
	key[len] = '\0';
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(m->names[mid].key, key);

		if (!c) {
			*addr = m->names[mid].addr;
			return 0;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

size_t inline_lookup__find(struct inline_lookup *il, const struct fl_ps_frame *f,
			   const char **names, size_t max)
{
	struct module *m;
	uint64_t vaddr, base;
	size_t n, out = 0;

	if (!f->mod.len || f->mod.s[0] != '/')
		return 0;
	m = module_get(il, f->mod.s, f->mod.len);
	if (!m || !m->si)
		return 0;
	if (f->has_offset && !symbol_addr(m, f->sym, &base))
		vaddr = base + f->offset;
	else if (m->exec && !parse_hex(f->addr, &vaddr))
		;
	else
		return 0;
	if (max > INLINE_LOOKUP_MAX)
		max = INLINE_LOOKUP_MAX;
	n = fl_srcinfo__frames(m->si, vaddr, il->frames, max + 1);
	/* frames[0] holds the address: the symbol perf printed. */
	for (size_t i = 1; i < n; i++)
		if (il->frames[i].name)
			names[out++] = il->frames[i].name;
	return out;
}
