// SPDX-License-Identifier: GPL-2.0-or-later
/* Turns raw stacks into named frames in a profile, following the folded-stack conventions. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/symbols/demangle.h"
#include "flamed/formats/pprof.h"
#include "flamed/profile/fold.h"
#include "flamed/profile/profile.h"
#include "flamed/profile_abi.h"
#include "flamed/python_abi.h"
#include "flamed/symbols/srcinfo.h"
#include "flamed/symbols/symbolizer.h"
#include "flamed/sampling/tracker.h"
#include "common/hash.h"
#include "common/utf8.h"

/*
 * Room for the root (and the service's frame), both halves at full depth,
 * one marker frame, and inlined frames.
 */
#define MAX_FRAMES (2 * FL_MAX_STACK_DEPTH + FL_PY_MAX_FRAMES + 3 + 1024)
#define NAME_MAX_LEN (FL_FOLD_MAX_NAME + 1)

/*
 * The frame id of an address, once named: the same code recurs in many
 * stacks (and, through shared libraries, in many processes), and naming it
 * again would mean a symbol search, formatting and hashing the name. A
 * name depends on the code only: a kernel address, or a file (device,
 * inode) and an offset in it, or the kind of memory where no file is.
 */
enum fkind {
	FK_EMPTY,
	FK_KERNEL,   /* k0: the address */
	FK_FILE,     /* k0: file offset, k1: inode, k2: device */
	FK_SPECIAL,  /* k0: offset in it, k1: the interned path ("[vdso]", ...) */
	FK_ANON,     /* anonymous executable memory: k0 the address, k1 the pid (perf maps) */
	FK_UNMAPPED, /* outside every known mapping */
	FK_PYCODE,   /* a Python frame: k0 its code object and fingerprint (FL_PY_KEY), k1 the pid */
};

/* The native frame of a run of CPython's interpreter loop, which Python frames replace. */
#define PY_EVAL_FRAME "_PyEval_EvalFrameDefault"

struct fentry {
	uint64_t k0, k1, k2;
	uint32_t kind;
	uint32_t first; /* its frame ids: ids[first, first + n), outermost first */
	uint32_t n;	/* 1, or more with inlined functions */
	uint32_t loc;	/* with opts.pprof: its location there */
	bool unsym;	/* the name is a placeholder, not a symbol */
	bool pyeval;	/* the function is PY_EVAL_FRAME */
};

struct fl_fold {
	struct fl_fold_opts opts;
	struct fl_fold_stats stats;
	struct fentry *cache; /* open addressing, power-of-two capacity */
	size_t nr_cache, cap_cache;
	uint64_t lookup[FL_MAX_STACK_DEPTH];	      /* addresses as looked up, leaf first */
	struct fentry key[FL_MAX_STACK_DEPTH];	      /* ... and what names them */
	const struct fl_tmap *tm[FL_MAX_STACK_DEPTH]; /* user: the mapping of each */
	uint64_t miss[FL_MAX_STACK_DEPTH];	      /* kernel addresses not cached */
	uint32_t miss_at[FL_MAX_STACK_DEPTH];	      /* where each miss is in lookup[] */
	size_t home[FL_MAX_STACK_DEPTH]; /* where each key[]'s probe starts */
	/* The cache entry of each lookup[]: inserts fill empty slots and move nothing. */
	struct fentry *slot[FL_MAX_STACK_DEPTH];
	struct fl_sym syms[FL_MAX_STACK_DEPTH];
	uint32_t frames[MAX_FRAMES];
	uint32_t *ids; /* frame ids of the cache entries */
	size_t nr_ids, cap_ids;
	/*
	 * Without srclines, a user function's frame depends on its name
	 * alone: the frame id of each name (its pointer: the symbolizer's
	 * names are stable), so that a function is demangled once, not once
	 * per address in it.
	 */
	struct nentry *names;
	size_t nr_names, cap_names;
	char name[NAME_MAX_LEN];
	char demangled[NAME_MAX_LEN];
	/* With opts.pprof: the stack's locations, root first, and what they are made of. */
	uint32_t locs[MAX_FRAMES];
	size_t nr_locs;
	struct fl_pprof_line lines[FL_MAX_STACK_DEPTH + 1];
	/* Python: where each segment of a stack's frames starts, and its end. */
	size_t seg[FL_PY_MAX_FRAMES + 1];
	bool py_leaf_named;	  /* the stack's leaf Python frame was named */
	const struct fentry *slot_py; /* the cache entry of the last Python frame added */
	uint32_t kernel_map;	/* the kernel's mapping, 0 until needed */
	uint32_t marker_loc[2]; /* "[stack copy ended]", "[unwind failed]" */
	struct fl_pprof_labels labels;
	char comm[64];
	char cgroup[128]; /* per_cgroup: the stack's service, as its frame and label say */
};

int fl_fold__new(const struct fl_fold_opts *opts, struct fl_fold **ret)
{
	struct fl_fold *f;

	if (!opts || !opts->symbolizer || !opts->profile)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->opts = *opts;
	*ret = f;
	return 0;
}

void fl_fold__free(struct fl_fold *f)
{
	if (f) {
		free(f->cache);
		free(f->ids);
		free(f->names);
	}
	free(f);
}

void fl_fold__stats(const struct fl_fold *f, struct fl_fold_stats *st)
{
	*st = f->stats;
}

static int intern(struct fl_fold *f, const char *s, size_t len, uint32_t *id)
{
	/* Every name is built in f->name: one that filled it was cut there. */
	if (len >= NAME_MAX_LEN - 1)
		f->stats.names_cut++;
	return fl_profile__intern(f->opts.profile, s, len, id);
}

static int intern_fmt(struct fl_fold *f, uint32_t *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int intern_fmt(struct fl_fold *f, uint32_t *id, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(f->name, sizeof(f->name), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(f->name))
		n = sizeof(f->name) - 1;
	return intern(f, f->name, (size_t)n, id);
}

/* Interns a + b + c (NULL for none), cut to the name buffer; no printf on this path. */
static int intern_cat(struct fl_fold *f, uint32_t *id, const char *a, const char *b, const char *c)
{
	const char *parts[3] = {a, b, c};
	size_t n = 0;

	for (size_t i = 0; i < 3; i++) {
		size_t len;

		if (!parts[i])
			continue;
		len = strnlen(parts[i], sizeof(f->name) - 1 - n);
		memcpy(f->name + n, parts[i], len);
		n += len;
	}
	return intern(f, f->name, n, id);
}

/* With per_cgroup, the service's frame: the name of the stack's cgroup. */
static int cgroup_frame(struct fl_fold *f, const struct fl_raw_stack *st, uint32_t *id)
{
	const char *src = f->opts.cgroup_name ? f->opts.cgroup_name(f->opts.cgroup_ctx, st->cgroup_id)
					      : NULL;
	int n;

	/*
	 * Kept for the pprof label. The resolver's names carry nothing a
	 * folded line cannot (fl_cgroup__service_name()); the profile makes
	 * any other name safe.
	 */
	if (src && src[0])
		n = snprintf(f->cgroup, sizeof(f->cgroup), "%s", src);
	else
		n = snprintf(f->cgroup, sizeof(f->cgroup), "[cgroup %llu]",
			     (unsigned long long)st->cgroup_id);
	if (n < 0)
		return -EINVAL;
	return intern(f, f->cgroup, strlen(f->cgroup), id);
}

/* The root frames: the service's with per_cgroup, then the comm's. *n counts them. */
static int root_frame(struct fl_fold *f, const struct fl_raw_stack *st, size_t *n)
{
	const char *src = st->comm && st->comm[0] ? st->comm : "[unknown]";
	uint32_t *id = &f->frames[*n];
	char comm[64];
	size_t i;
	int err;

	if (f->opts.per_cgroup) {
		err = cgroup_frame(f, st, id);
		if (err)
			return err;
		id = &f->frames[++*n];
	}
	(*n)++;
	/* Folded lines end in " COUNT": a space in the root frame would be read as part of it by some tools. */
	for (i = 0; src[i] && i < sizeof(comm) - 1; i++)
		comm[i] = src[i] == ' ' ? '_' : src[i];
	comm[i] = '\0';
	if (f->opts.pprof) {
		memcpy(f->comm, comm, i + 1);
		f->labels = (struct fl_pprof_labels){
			.comm = f->comm,
			.cgroup = f->opts.per_cgroup ? f->cgroup : NULL,
			.pid = f->opts.per_process || f->opts.per_thread ? (int64_t)st->pid : -1,
			.tid = f->opts.per_thread ? (int64_t)st->tid : -1,
		};
	}
	if (f->opts.per_thread)
		return intern_fmt(f, id, "%s-%u/%u", comm, st->pid, st->tid);
	if (f->opts.per_process)
		return intern_fmt(f, id, "%s-%u", comm, st->pid);
	return intern(f, comm, i, id);
}

struct nentry {
	const char *name; /* NULL: empty slot */
	uint32_t id;
	bool inlined;
};

static struct nentry *name_slot(struct nentry *tab, size_t cap, const char *name, bool inlined)
{
	size_t i = fl_hash_u64_pair((uint64_t)(uintptr_t)name, inlined) & (cap - 1);

	while (tab[i].name && (tab[i].name != name || tab[i].inlined != inlined))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static int names_reserve(struct fl_fold *f)
{
	size_t cap = f->cap_names ? f->cap_names * 2 : 1024;
	struct nentry *tab;

	if ((f->nr_names + 1) * 2 <= f->cap_names)
		return 0;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < f->cap_names; i++)
		if (f->names[i].name)
			*name_slot(tab, cap, f->names[i].name, f->names[i].inlined) = f->names[i];
	free(f->names);
	f->names = tab;
	f->cap_names = cap;
	return 0;
}

static const char *path_base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/*
 * A user function's frame: its name (demangled unless asked not to), then
 * " (file:line)" with srclines, then the suffix ("_[i]" for inlined ones).
 */
static int func_frame_named(struct fl_fold *f, const char *name, const char *file, int line,
			    const char *suffix, uint32_t *id);

static int func_frame(struct fl_fold *f, const char *name, const char *file, int line,
		      const char *suffix, uint32_t *id)
{
	struct nentry *e;
	int err;

	if (!name || f->opts.srclines)
		return func_frame_named(f, name, file, line, suffix, id);
	err = names_reserve(f);
	if (err)
		return err;
	e = name_slot(f->names, f->cap_names, name, suffix != NULL);
	if (e->name) {
		*id = e->id;
		return 0;
	}
	err = func_frame_named(f, name, file, line, suffix, id);
	if (err)
		return err;
	*e = (struct nentry){.name = name, .id = *id, .inlined = suffix != NULL};
	f->nr_names++;
	return 0;
}

static int func_frame_named(struct fl_fold *f, const char *name, const char *file, int line,
			    const char *suffix, uint32_t *id)
{
	const char *shown = name ? name : "[unknown]";
	size_t n;
	int len;

	if (name && f->opts.demangle && fl_demangle(name, f->demangled, sizeof(f->demangled)) > 0)
		shown = f->demangled;
	n = strnlen(shown, sizeof(f->name) - 1);
	memcpy(f->name, shown, n);
	if (f->opts.srclines && file && line > 0) {
		len = snprintf(f->name + n, sizeof(f->name) - n, " (%s:%d)", path_base(file), line);
		if (len > 0)
			n += (size_t)len < sizeof(f->name) - n ? (size_t)len
							       : sizeof(f->name) - n - 1;
	}
	if (suffix) {
		size_t sl = strnlen(suffix, sizeof(f->name) - 1 - n);

		memcpy(f->name + n, suffix, sl);
		n += sl;
	}
	return intern(f, f->name, n, id);
}

/* The placeholder or the name of one symbolization result, as a frame id. */
static int sym_frame(struct fl_fold *f, const struct fl_sym *sym, bool kernel, uint32_t *id)
{
	const char *k = kernel ? "_[k]" : NULL;

	switch (sym->reason) {
	case FL_SYM_OK:
		if (sym->jit)
			return intern_cat(f, id, sym->name, "_[j]", NULL);
		if (!kernel)
			return func_frame(f, sym->name, sym->file, sym->line, NULL, id);
		/* A module's function says which: "ext4_file_write_iter [ext4]_[k]". */
		if (sym->module && strcmp(sym->module, "vmlinux")) {
			int len = snprintf(f->name, sizeof(f->name), "%s [%s]_[k]", sym->name,
					   sym->module);

			if (len < 0)
				return -EINVAL;
			return intern(f, f->name,
				      (size_t)len < sizeof(f->name) ? (size_t)len
								    : sizeof(f->name) - 1,
				      id);
		}
		return intern_cat(f, id, sym->name, k, NULL);
	case FL_SYM_UNMAPPED:
		return intern_cat(f, id, "[unknown]", k, NULL);
	case FL_SYM_ANON:
		return intern_cat(f, id, "[anon]", k, NULL);
	case FL_SYM_KERNEL_HIDDEN:
		return intern_cat(f, id, "[kernel]", k, NULL);
	default:
		if (!sym->module)
			return intern_cat(f, id, "[unknown]", k, NULL);
		if (sym->module[0] == '[')
			return intern_cat(f, id, sym->module, k, NULL);
		/* "[" + module + "]" + suffix: the suffix goes after the bracket. */
		return intern_cat(f, id, "[", sym->module, kernel ? "]_[k]" : "]");
	}
}

static bool same_key(const struct fentry *a, const struct fentry *b)
{
	return a->kind == b->kind && a->k0 == b->k0 && a->k1 == b->k1 && a->k2 == b->k2;
}

static size_t cache_home(size_t cap, const struct fentry *k)
{
	return (fl_hash_u64_pair(k->k0, k->k1) ^ fl_hash_u64_pair(k->k2, k->kind)) & (cap - 1);
}

static struct fentry *cache_slot_from(struct fentry *tab, size_t cap, const struct fentry *k,
				      size_t i)
{
	while (tab[i].kind && !same_key(&tab[i], k))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static struct fentry *cache_slot(struct fentry *tab, size_t cap, const struct fentry *k)
{
	size_t i = cache_home(cap, k);

	while (tab[i].kind && !same_key(&tab[i], k))
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

/* Room for n more entries at most half full. */
static int cache_reserve(struct fl_fold *f, size_t n)
{
	size_t cap = f->cap_cache ? f->cap_cache : 4096;
	struct fentry *tab;

	while ((f->nr_cache + n) * 2 > cap)
		cap *= 2;
	if (cap == f->cap_cache)
		return 0;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < f->cap_cache; i++)
		if (f->cache[i].kind)
			*cache_slot(tab, cap, &f->cache[i]) = f->cache[i];
	free(f->cache);
	f->cache = tab;
	f->cap_cache = cap;
	return 0;
}

/* What names a user address held by tm (NULL: none). */
static struct fentry user_key(const struct fl_tmap *tm, uint32_t pid, uint64_t ip)
{
	if (!tm)
		return (struct fentry){.kind = FK_UNMAPPED};
	if (fl_tmap__is_anon(tm))
		return (struct fentry){.kind = FK_ANON, .k0 = ip, .k1 = pid};
	if (tm->path[0] == '[')
		return (struct fentry){.kind = FK_SPECIAL,
				       .k0 = ip - tm->start + tm->pgoff,
				       .k1 = (uint64_t)(uintptr_t)tm->path};
	return (struct fentry){.kind = FK_FILE,
			       .k0 = ip - tm->start + tm->pgoff,
			       .k1 = tm->ino,
			       .k2 = (uint64_t)tm->dev_major << 32 | tm->dev_minor};
}

/* Room for n more frame ids. */
static int ids_reserve(struct fl_fold *f, size_t n)
{
	size_t cap = f->cap_ids ? f->cap_ids : 4096;
	uint32_t *ids;

	while (f->nr_ids + n > cap)
		cap *= 2;
	if (cap == f->cap_ids)
		return 0;
	if (cap > UINT32_MAX)
		return -ENOMEM;
	ids = realloc(f->ids, cap * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	f->ids = ids;
	f->cap_ids = cap;
	return 0;
}

/* Where kernel addresses begin (x86-64, arm64): the kernel's one pprof mapping. */
#define KERNEL_START 0xffff800000000000ull

/* A name as the folded frame shows it, without the suffix: demangled unless asked not to. */
static const char *shown_name(struct fl_fold *f, const char *name)
{
	if (f->opts.demangle && fl_demangle(name, f->demangled, sizeof(f->demangled)) > 0)
		return f->demangled;
	return name;
}

/* A user address's mapping in the pprof profile (0: none). */
static int pprof_user_map(struct fl_fold *f, const struct fl_sym *sym, const struct fl_tmap *tm,
			  uint32_t pid, uint32_t *id)
{
	char jit[40];
	const char *path = tm ? tm->path : NULL;

	*id = 0;
	if (!tm)
		return 0;
	if (fl_tmap__is_anon(tm)) {
		/* JIT code is named by the process's perf map: the reader's "_[j]". */
		if (sym->jit) {
			snprintf(jit, sizeof(jit), "/tmp/perf-%u.map", pid);
			path = jit;
		} else {
			path = "[anon]";
		}
	}
	return fl_pprof__mapping(f->opts.pprof, path, sym->build_id, sym->build_id_len, tm->start,
				 tm->end, tm->pgoff, id);
}

/*
 * The pprof location of one address: its mapping, and its function with
 * the functions inlined at it as lines, innermost first. A user address
 * without a symbol has no lines (a backend names it from the mapping);
 * kernel ones always have a name, as in the folded stacks.
 */
static int pprof_location(struct fl_fold *f, const struct fl_sym *sym, bool kernel,
			  const struct fl_tmap *tm, uint32_t pid, uint64_t addr, uint32_t frame,
			  uint32_t *loc)
{
	struct fl_pprof *pp = f->opts.pprof;
	size_t n = 0, ni = sym->nr_inl < FL_MAX_STACK_DEPTH ? sym->nr_inl : FL_MAX_STACK_DEPTH;
	uint32_t map;
	int err;

	if (kernel) {
		const char *name = fl_profile__name(f->opts.profile, frame);
		size_t len = strlen(name);

		if (!f->kernel_map) {
			err = fl_pprof__mapping(pp, "[kernel.kallsyms]", NULL, 0, KERNEL_START,
						UINT64_MAX, 0, &f->kernel_map);
			if (err)
				return err;
		}
		/* The folded frame's name, less its "_[k]". */
		if (len >= 4 && !strcmp(name + len - 4, "_[k]"))
			len -= 4;
		memcpy(f->name, name, len);
		f->name[len] = '\0';
		err = fl_pprof__function(pp, f->name, NULL, NULL, 0, &f->lines[0].function);
		f->lines[0].line = 0;
		return err ?: fl_pprof__location(pp, f->kernel_map, addr, f->lines, 1, loc);
	}
	err = pprof_user_map(f, sym, tm, pid, &map);
	if (err)
		return err;
	if (sym->reason == FL_SYM_OK) {
		for (size_t i = ni; i-- > 0;) {
			const struct fl_src_frame *s = &sym->inl[i];

			err = fl_pprof__function(pp, s->name ? shown_name(f, s->name) : "[unknown]",
						 s->name, s->decl_file ?: s->file, s->decl_line,
						 &f->lines[n].function);
			if (err)
				return err;
			f->lines[n++].line = s->line;
		}
		err = fl_pprof__function(pp, shown_name(f, sym->name), sym->name,
					 sym->decl_file ?: sym->file, sym->decl_line,
					 &f->lines[n].function);
		if (err)
			return err;
		f->lines[n++].line = sym->line;
	}
	return fl_pprof__location(pp, map, addr, f->lines, n, loc);
}

/*
 * Names e from sym (its function, then the functions inlined into it,
 * each "_[i]") and puts it in the cache slot it was probed for; with
 * opts.pprof, also as a location there (tm and pid: a user address's
 * mapping and process, addr: the address looked up).
 */
static int cache_fill(struct fl_fold *f, struct fentry *e, const struct fentry *key,
		      const struct fl_sym *sym, bool kernel, const struct fl_tmap *tm, uint32_t pid,
		      uint64_t addr)
{
	size_t first = f->nr_ids;
	int err = ids_reserve(f, 1 + sym->nr_inl);

	if (!err)
		err = sym_frame(f, sym, kernel, &f->ids[f->nr_ids]);
	if (err)
		return err;
	f->nr_ids++;
	for (size_t i = 0; i < sym->nr_inl; i++) {
		err = func_frame(f, sym->inl[i].name, sym->inl[i].file, sym->inl[i].line, "_[i]",
				 &f->ids[f->nr_ids]);
		if (err)
			return err;
		f->nr_ids++;
	}
	*e = *key;
	e->first = (uint32_t)first;
	e->n = (uint32_t)(f->nr_ids - first);
	e->unsym = sym->reason != FL_SYM_OK;
	/* Its cold part (".cold", ".part.N" of the compiler) is the same run of the loop. */
	e->pyeval = !kernel && sym->reason == FL_SYM_OK && sym->name && !sym->jit &&
		    !strncmp(sym->name, PY_EVAL_FRAME, sizeof(PY_EVAL_FRAME) - 1) &&
		    (sym->name[sizeof(PY_EVAL_FRAME) - 1] == '\0' ||
		     sym->name[sizeof(PY_EVAL_FRAME) - 1] == '.');
	e->loc = 0;
	if (f->opts.pprof) {
		err = pprof_location(f, sym, kernel, tm, pid, addr, f->ids[first], &e->loc);
		if (err) {
			e->kind = FK_EMPTY; /* not filled after all */
			return err;
		}
	}
	f->nr_cache++;
	return 0;
}

/*
 * Appends the characters of a Python str as CPython held them (kind bytes
 * each, len bytes) to f->name from n as UTF-8; a character that is no
 * code point (a lone surrogate, past U+10FFFF, a control character)
 * becomes U+FFFD. Returns the new length.
 */
static size_t py_chars(struct fl_fold *f, size_t n, const char *src, size_t len, unsigned int kind)
{
	const unsigned char *p = (const unsigned char *)src;

	if (kind != 1 && kind != 2 && kind != 4)
		return n;
	for (size_t i = 0; i + kind <= len && n + 4 < sizeof(f->name); i += kind) {
		uint32_t cp = kind == 1	  ? p[i]
			      : kind == 2 ? (uint32_t)(p[i] | p[i + 1] << 8)
					  : (uint32_t)(p[i] | p[i + 1] << 8 | p[i + 2] << 16 |
						       (uint32_t)p[i + 3] << 24);

		if (cp < 0x20 || cp == 0x7f || (cp >= 0xd800 && cp < 0xe000) || cp > 0x10ffff)
			cp = 0xfffd;
		n += fl_utf8_encode(cp, f->name + n);
	}
	return n;
}

/* Appends str to f->name at n, as much as fits; the new length. */
static size_t name_put(struct fl_fold *f, size_t n, const char *str)
{
	size_t len = strnlen(str, sizeof(f->name) - 1 - n);

	memcpy(f->name + n, str, len);
	return n + len;
}

/*
 * The frame of a Python code object: "qualname (file:line)_[p]", or
 * "[python code]_[p]" when its names were not read. A cut name ends in
 * "...", a cut path starts with it.
 */
static int py_frame_fill(struct fl_fold *f, struct fentry *e, const struct fentry *key,
			 uint32_t pid, uint64_t code)
{
	struct fl_py_code pc;
	/* Lengths past their room are not believed. */
	bool named = f->opts.py_code && !f->opts.py_code(f->opts.py_ctx, pid, code, &pc) &&
		     pc.name_kind && pc.name_len && pc.name_len <= FL_PY_NAME_LEN &&
		     pc.file_len <= FL_PY_FILE_LEN;
	size_t first = f->nr_ids, n = 0, name_end = 0, file_at = 0, file_end = 0;
	int err = ids_reserve(f, 1);

	if (err)
		return err;
	if (named) {
		char line[24];

		snprintf(line, sizeof(line), ":%u)_[p]", pc.firstlineno);
		n = py_chars(f, 0, pc.name, pc.name_len, pc.name_kind);
		n = name_end = name_put(f, n, pc.name_cut ? "..." : "");
		n = file_at = name_put(f, n, " (");
		n = name_put(f, n, pc.file_cut ? "..." : "");
		if (pc.file_kind)
			n = py_chars(f, n, pc.file, pc.file_len, pc.file_kind);
		file_end = n;
		n = name_put(f, n, line);
		err = intern(f, f->name, n, &f->ids[first]);
	} else {
		err = intern_cat(f, &f->ids[first], "[python code]_[p]", NULL, NULL);
	}
	if (err)
		return err;
	f->nr_ids++;
	*e = *key;
	e->first = (uint32_t)first;
	e->n = 1;
	e->unsym = !named;
	e->loc = 0;
	if (f->opts.pprof) {
		struct fl_pprof_line line = {0};
		/* The function is the qualified name, its file and first line apart. */
		char *name = named ? strndup(f->name, name_end) : strdup("[python code]");
		char *file = named ? strndup(f->name + file_at, file_end - file_at) : NULL;

		if (!name || (named && !file)) {
			free(name);
			free(file);
			return -ENOMEM;
		}
		err = fl_pprof__function(f->opts.pprof, name, name, file, named ? pc.firstlineno : 0,
					 &line.function);
		line.line = named ? pc.firstlineno : 0;
		if (!err)
			err = fl_pprof__location(f->opts.pprof, 0, FL_PY_CODE(code), &line, 1, &e->loc);
		free(file);
		free(name);
		if (err) {
			e->kind = FK_EMPTY;
			return err;
		}
	}
	f->nr_cache++;
	return 0;
}

/* The frame of Python frame word w of process pid (named once per code object). */
static int py_frame(struct fl_fold *f, uint32_t pid, uint64_t w, size_t *nframes, uint64_t count)
{
	struct fentry key = {.kind = FK_PYCODE, .k0 = FL_PY_KEY(w), .k1 = pid}, *e;
	int err = cache_reserve(f, 1);

	if (err)
		return err;
	e = cache_slot(f->cache, f->cap_cache, &key);
	if (!e->kind) {
		err = py_frame_fill(f, e, &key, pid, key.k0);
		if (err)
			return err;
	}
	f->frames[(*nframes)++] = f->ids[e->first];
	f->slot_py = e;
	if (f->opts.pprof)
		f->locs[f->nr_locs++] = e->loc;
	f->stats.frames += count;
	if (e->unsym)
		f->stats.unsymbolized += count;
	return 0;
}

/*
 * The Python frames of segments [from, to] of st (leaf first: a segment
 * is one run of the interpreter's loop, ending at a frame marked
 * FL_PY_ENTRY), outermost first.
 */
static int py_segments(struct fl_fold *f, const struct fl_raw_stack *st, const size_t *seg,
		       size_t from, size_t to, size_t *nframes)
{
	for (size_t j = to + 1; j-- > from;) {
		for (size_t i = seg[j + 1]; i-- > seg[j];) {
			int err = py_frame(f, st->pid, st->pyips[i], nframes, st->count);

			if (err)
				return err;
			if (i == 0)
				f->py_leaf_named = !f->slot_py->unsym;
		}
	}
	return 0;
}

/*
 * Appends the frames of one half of a stack (ips leaf first) to f->frames,
 * outermost first. Every address but the leaf is a return address, looked
 * up at ip - 1 so that a call at the very end of a function is named by
 * its caller. User addresses are looked up in the mappings of st->time;
 * kernel addresses not seen before are named in one batch.
 */
static int add_half(struct fl_fold *f, const struct fl_raw_stack *st, bool kernel,
		    const uint64_t *ips, size_t n, size_t *nframes)
{
	struct fl_tracker *tr = f->opts.tracker;
	size_t nmiss = 0, npy = 0;
	int err;

	/*
	 * Room for the Python frames too: f->slot[] points into the cache,
	 * which must not grow (a new table) while py_frame() adds them.
	 */
	if (!kernel)
		npy = st->nr_pyips < FL_PY_MAX_FRAMES ? st->nr_pyips : FL_PY_MAX_FRAMES;
	err = cache_reserve(f, n + npy);
	if (err)
		return err;
	/*
	 * The keys first, each one's slot fetched while the next is made: the
	 * cache outgrows the CPU's, and its probes were waits on memory.
	 */
	for (size_t i = 0; i < n; i++) {
		f->lookup[i] = i > 0 && ips[i] ? ips[i] - 1 : ips[i];
		if (kernel) {
			f->key[i] = (struct fentry){.kind = FK_KERNEL, .k0 = f->lookup[i]};
		} else {
			f->tm[i] = tr ? fl_tracker__find_at(tr, st->pid, f->lookup[i], st->time)
				      : NULL;
			f->key[i] = user_key(f->tm[i], st->pid, f->lookup[i]);
		}
		f->home[i] = cache_home(f->cap_cache, &f->key[i]);
		__builtin_prefetch(&f->cache[f->home[i]]);
	}
	for (size_t i = 0; i < n; i++) {
		f->slot[i] = cache_slot_from(f->cache, f->cap_cache, &f->key[i], f->home[i]);
		if (f->slot[i]->kind)
			continue;
		if (kernel) {
			f->miss_at[nmiss] = (uint32_t)i;
			f->miss[nmiss++] = f->lookup[i];
			continue;
		}
		err = fl_symbolizer__in_map(f->opts.symbolizer, st->pid, f->tm[i], f->lookup[i],
					    &f->syms[0]);
		if (!err)
			err = cache_fill(f, f->slot[i], &f->key[i], &f->syms[0], false, f->tm[i],
					 st->pid, f->lookup[i]);
		if (err)
			return err;
	}
	if (nmiss) {
		err = fl_symbolizer__kernel(f->opts.symbolizer, f->miss, nmiss, f->syms);
		if (err)
			return err;
		for (size_t i = 0; i < nmiss; i++) {
			/* Probed again: two misses may have ended on the same empty slot. */
			struct fentry *e =
				cache_slot(f->cache, f->cap_cache, &f->key[f->miss_at[i]]);

			f->slot[f->miss_at[i]] = e;
			if (e->kind)
				continue; /* the same address twice in this stack */
			err = cache_fill(f, e, &f->key[f->miss_at[i]], &f->syms[i], true, NULL, 0,
					 f->miss[i]);
			if (err)
				return err;
		}
	}
	/*
	 * Python: segment j (from the leaf) is the run of the j-th loop frame
	 * from the leaf. Stacks are cut at their outermost end: a Python
	 * segment without its loop frame goes with the outermost loop frame,
	 * or before every native frame when none is left.
	 */
	size_t nseg = 0, nevals = 0, evals_seen = 0;

	if (npy) {
		f->seg[0] = 0;
		for (size_t i = 0; i < npy; i++)
			if ((st->pyips[i] & FL_PY_ENTRY) || i + 1 == npy)
				f->seg[++nseg] = i + 1;
		for (size_t i = 0; i < n; i++)
			nevals += f->slot[i]->pyeval;
		if (!nevals) {
			err = py_segments(f, st, f->seg, 0, nseg - 1, nframes);
			if (err)
				return err;
		}
	}
	for (size_t i = n; i-- > 0;) {
		const struct fentry *e = f->slot[i];
		uint32_t j0 = 0;

		if (nseg && e->pyeval) {
			/* This loop frame's segment, from the leaf. */
			size_t at = nevals - 1 - evals_seen++;

			if (at < nseg) {
				err = py_segments(f, st, f->seg, at,
						  evals_seen == 1 ? nseg - 1 : at, nframes);
				if (err)
					return err;
				j0 = 1; /* the loop's own frame replaced; what was inlined in it stays */
			}
		}
		/* The function, then what was inlined into it (dropped past the room left). */
		for (uint32_t j = j0;
		     j < e->n && (j == 0 || *nframes < MAX_FRAMES - FL_MAX_STACK_DEPTH); j++)
			f->frames[(*nframes)++] = f->ids[e->first + j];
		if (j0)
			continue;
		if (f->opts.pprof)
			f->locs[f->nr_locs++] = e->loc;
		f->stats.frames += st->count;
		if (e->unsym)
			f->stats.unsymbolized += st->count;
	}
	return 0;
}

/* The location of a marker frame: a function of that name, at no address. */
static int pprof_marker(struct fl_fold *f, const char *name, uint32_t *loc)
{
	struct fl_pprof_line line = {0};
	int err;

	if (*loc)
		return 0;
	err = fl_pprof__function(f->opts.pprof, name, NULL, NULL, 0, &line.function);
	return err ?: fl_pprof__location(f->opts.pprof, 0, 0, &line, 1, loc);
}

/*
 * Counted in the kernel, a stack's samples span [time_first, time]: when
 * an address of it meant other code at the two ends, some of them are
 * named by code they did not run.
 */
static bool spans_eras(struct fl_fold *f, const struct fl_raw_stack *st, size_t nu)
{
	struct fl_tracker *tr = f->opts.tracker;

	if (!tr || st->time_first == st->time ||
	    fl_tracker__era(tr, st->pid, st->time_first) == fl_tracker__era(tr, st->pid, st->time))
		return false;
	for (size_t i = 0; i < nu; i++) {
		uint64_t ip = i > 0 && st->uips[i] ? st->uips[i] - 1 : st->uips[i];
		struct fentry a =
			user_key(fl_tracker__find_at(tr, st->pid, ip, st->time_first), st->pid, ip);
		struct fentry b =
			user_key(fl_tracker__find_at(tr, st->pid, ip, st->time), st->pid, ip);

		if (!same_key(&a, &b))
			return true;
	}
	return false;
}

int fl_fold__add(struct fl_fold *f, const struct fl_raw_stack *st)
{
	size_t n = 0, nu = st->nr_uips, nk = st->nr_kips;
	bool kthread;
	int err;

	if (st->count == 0)
		return 0;
	if (nu > FL_MAX_STACK_DEPTH)
		nu = FL_MAX_STACK_DEPTH;
	if (nk > FL_MAX_STACK_DEPTH)
		nk = FL_MAX_STACK_DEPTH;
	kthread = st->pid == 0 ||
		  (f->opts.tracker && fl_tracker__is_kthread(f->opts.tracker, st->pid));
	if (kthread)
		f->stats.kthread_samples += st->count;
	else if (st->uerr && st->uerr != -ENOENT)
		f->stats.no_user_stack += st->count;

	f->nr_locs = 0;
	f->py_leaf_named = false;
	err = root_frame(f, st, &n);
	/* DWARF mode: an unwinding that stopped early says so where the missing callers would be. */
	if (!err && nu &&
	    (st->uips[nu - 1] == FL_UIP_TRUNCATED || st->uips[nu - 1] == FL_UIP_FAILED)) {
		bool failed = st->uips[nu - 1] == FL_UIP_FAILED;
		const char *marker = failed ? "[unwind failed]" : "[stack copy ended]";

		err = intern_cat(f, &f->frames[n++], marker, NULL, NULL);
		if (!err && f->opts.pprof)
			err = pprof_marker(f, marker, &f->marker_loc[failed]);
		if (!err && f->opts.pprof)
			f->locs[f->nr_locs++] = f->marker_loc[failed];
		nu--;
	}
	if (!err && nu) {
		if (spans_eras(f, st, nu))
			f->stats.spanning_eras += st->count;
		err = add_half(f, st, false, st->uips, nu, &n);
	}
	if (!err && nk)
		err = add_half(f, st, true, st->kips, nk, &n);
	if (!err && st->nr_pyips) {
		f->stats.py_samples += st->count;
		if (f->py_leaf_named)
			f->stats.py_named_leaf += st->count;
	}
	if (!err)
		err = fl_profile__add(f->opts.profile, f->frames, n, st->count);
	if (!err && f->opts.pprof) {
		/* pprof's order: leaf first. */
		for (size_t a = 0, b = f->nr_locs; a + 1 < b; a++, b--) {
			uint32_t t = f->locs[a];

			f->locs[a] = f->locs[b - 1];
			f->locs[b - 1] = t;
		}
		err = fl_pprof__add(f->opts.pprof, f->locs, f->nr_locs, &f->labels, st->count);
	}
	if (err)
		return err;
	f->stats.samples += st->count;
	return 0;
}
