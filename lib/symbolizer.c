// SPDX-License-Identifier: GPL-2.0-or-later
/* Batch symbolization of kernel and user addresses, with ELF files cached per device and inode. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <elf.h>
#include <link.h>

#include "flamed/cleanup.h"
#include "flamed/elfsyms.h"
#include "flamed/ksyms.h"
#include "flamed/log.h"
#include "flamed/symbolizer.h"
#include "flamed/tracker.h"

/* One ELF file, read at most once per symbolizer. */
struct module {
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	struct fl_elfsyms *syms; /* NULL when the file could not be used */
	char *basename;
};

struct fl_symbolizer {
	struct fl_tracker *tracker;
	struct fl_ksyms *ksyms;
	bool kernel_hidden;
	/* Open-addressing table of modules; power-of-two capacity. */
	struct module **mods;
	size_t nr_mods, cap_mods;
	struct fl_elfsyms *vdso;
	bool vdso_tried;
};

static void module_free(struct module *m)
{
	if (!m)
		return;
	fl_elfsyms__free(m->syms);
	free(m->basename);
	free(m);
}

void fl_symbolizer__free(struct fl_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->cap_mods; i++)
		module_free(s->mods[i]);
	free(s->mods);
	fl_ksyms__free(s->ksyms);
	fl_elfsyms__free(s->vdso);
	free(s);
}

int fl_symbolizer__new(const struct fl_symbolizer_opts *opts, struct fl_symbolizer **ret)
{
	struct fl_symbolizer *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->tracker = opts->tracker;
	s->kernel_hidden = true;
	if (!opts->no_kernel) {
		struct fl_ksyms_opts kopts = { .sz = sizeof(kopts), .path = opts->kallsyms_path };

		err = fl_ksyms__load(&kopts, &s->ksyms);
		if (err == -ENOMEM) {
			fl_symbolizer__free(s);
			return err;
		}
		if (err)
			fl_pr_debug("symbolizer: kallsyms: %s\n", strerror(-err));
		s->kernel_hidden = !s->ksyms || fl_ksyms__addrs_hidden(s->ksyms) ||
				   fl_ksyms__count(s->ksyms) == 0;
	}
	*ret = s;
	return 0;
}

bool fl_symbolizer__kernel_hidden(const struct fl_symbolizer *s)
{
	return s->kernel_hidden;
}

int fl_symbolizer__kernel(struct fl_symbolizer *s, const uint64_t *ips, size_t n,
			  struct fl_sym *out)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t ip = i > 0 && ips[i] ? ips[i] - 1 : ips[i];
		const struct fl_ksym *ks = s->kernel_hidden ? NULL : fl_ksyms__find(s->ksyms, ip);

		if (ks) {
			out[i] = (struct fl_sym){ .name = ks->name,
						  .module = ks->module ? ks->module : "vmlinux",
						  .reason = FL_SYM_OK };
		} else {
			out[i] = (struct fl_sym){ .module = "kernel",
						  .reason = s->kernel_hidden ? FL_SYM_KERNEL_HIDDEN
									     : FL_SYM_NO_SYMBOL };
		}
	}
	return 0;
}

static uint64_t module_hash(uint32_t maj, uint32_t min, uint64_t ino)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ULL;

	h ^= ((uint64_t)maj << 32 | min) + 0x632be59bd9b4e019ULL + (h << 6) + (h >> 2);
	return h ^ (h >> 29);
}

static int mods_grow(struct fl_symbolizer *s)
{
	size_t cap = s->cap_mods ? s->cap_mods * 2 : 64;
	struct module **mods = calloc(cap, sizeof(*mods));

	if (!mods)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap_mods; i++) {
		struct module *m = s->mods[i];
		size_t j;

		if (!m)
			continue;
		j = module_hash(m->dev_major, m->dev_minor, m->ino) & (cap - 1);
		while (mods[j])
			j = (j + 1) & (cap - 1);
		mods[j] = m;
	}
	free(s->mods);
	s->mods = mods;
	s->cap_mods = cap;
	return 0;
}

static const char *path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/*
 * Opens a mapped file only if it is still the file that was mapped: a binary
 * replaced on disk since (same path, other inode) would give wrong names.
 */
static struct fl_elfsyms *open_mapped_file(const struct fl_tmap *tm)
{
	struct fl_elfsyms *syms = NULL;
	struct stat st;
	int err;

	if (stat(tm->path, &st) < 0) {
		fl_pr_debug("symbolizer: %s: %s\n", tm->path, strerror(errno));
		return NULL;
	}
	if (st.st_ino != tm->ino) {
		fl_pr_debug("symbolizer: %s: inode %llu is not the mapped %llu\n", tm->path,
			    (unsigned long long)st.st_ino, (unsigned long long)tm->ino);
		return NULL;
	}
	err = fl_elfsyms__open(tm->path, &syms);
	if (err) {
		fl_pr_debug("symbolizer: %s: %s\n", tm->path, strerror(-err));
		return NULL;
	}
	return syms;
}

static struct module *module_get(struct fl_symbolizer *s, const struct fl_tmap *tm)
{
	struct module *m;
	size_t j;

	if (s->nr_mods * 2 >= s->cap_mods && mods_grow(s))
		return NULL;
	j = module_hash(tm->dev_major, tm->dev_minor, tm->ino) & (s->cap_mods - 1);
	for (; (m = s->mods[j]); j = (j + 1) & (s->cap_mods - 1))
		if (m->ino == tm->ino && m->dev_major == tm->dev_major &&
		    m->dev_minor == tm->dev_minor)
			return m;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->dev_major = tm->dev_major;
	m->dev_minor = tm->dev_minor;
	m->ino = tm->ino;
	m->basename = strdup(path_basename(tm->path));
	if (!m->basename) {
		free(m);
		return NULL;
	}
	m->syms = open_mapped_file(tm);
	fl_pr_debug("symbolizer: read %s: %zu symbols\n", tm->path,
		    m->syms ? fl_elfsyms__count(m->syms) : 0);
	s->mods[j] = m;
	s->nr_mods++;
	return m;
}

/* The vdso is the same image in every process: read it from our own memory. */
static struct fl_elfsyms *vdso_syms(struct fl_symbolizer *s)
{
	const ElfW(Ehdr) *eh;
	size_t size;

	if (s->vdso_tried)
		return s->vdso;
	s->vdso_tried = true;
	eh = (const ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return NULL;
	/* The section headers come last in the vdso image. */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size > (1 << 20) || fl_elfsyms__from_memory(eh, size, &s->vdso))
		s->vdso = NULL;
	return s->vdso;
}

static bool is_anon_path(const char *path)
{
	return !path[0] || !strcmp(path, "//anon") || !strncmp(path, "[anon", 5) ||
	       !strncmp(path, "/memfd:", 7);
}

static void lookup(const struct fl_elfsyms *syms, const struct fl_tmap *tm, uint64_t ip,
		   struct fl_sym *out)
{
	const struct fl_elfsym *sym;
	uint64_t vaddr;

	if (fl_elfsyms__offset_to_vaddr(syms, ip - tm->start + tm->pgoff, &vaddr) == 0 &&
	    (sym = fl_elfsyms__find(syms, vaddr))) {
		out->name = sym->name;
		out->reason = FL_SYM_OK;
		return;
	}
	out->reason = FL_SYM_NO_SYMBOL;
}

int fl_symbolizer__user(struct fl_symbolizer *s, uint32_t pid, const uint64_t *ips, size_t n,
			struct fl_sym *out)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t ip = i > 0 && ips[i] ? ips[i] - 1 : ips[i];
		const struct fl_tmap *tm = s->tracker ? fl_tracker__find(s->tracker, pid, ip) : NULL;
		struct fl_sym *o = &out[i];

		*o = (struct fl_sym){ .reason = FL_SYM_UNMAPPED };
		if (!tm)
			continue;
		if (is_anon_path(tm->path)) {
			o->reason = FL_SYM_ANON;
			continue;
		}
		if (tm->path[0] == '[') {
			struct fl_elfsyms *vdso;

			o->module = tm->path;
			o->reason = FL_SYM_NO_SYMBOL;
			if (!strcmp(tm->path, "[vdso]") && (vdso = vdso_syms(s)))
				lookup(vdso, tm, ip, o);
			continue;
		}
		struct module *m = module_get(s, tm);

		if (!m)
			return -ENOMEM;
		o->module = m->basename;
		if (!m->syms) {
			o->reason = FL_SYM_NO_FILE;
			continue;
		}
		lookup(m->syms, tm, ip, o);
	}
	return 0;
}
