// SPDX-License-Identifier: GPL-2.0-or-later
/* Batch symbolization of kernel and user addresses, with ELF files cached per device and inode. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <elf.h>
#include <gelf.h>
#include <link.h>

#include "flamed/common/budget.h"
#include "flamed/common/cleanup.h"
#include "flamed/symbols/debuginfo.h"
#include "flamed/symbols/debuginfod.h"
#include "flamed/symbols/elfsyms.h"
#include "flamed/symbols/ksym_bpf.h"
#include "flamed/symbols/ksyms.h"
#include "flamed/common/log.h"
#include "flamed/symbols/perfmap.h"
#include "flamed/symbols/srcinfo.h"
#include "flamed/common/strpool.h"
#include "flamed/symbols/symbolizer.h"
#include "flamed/sampling/tracker.h"
#include "common/hash.h"
#include "files/mapped_file.h"
#include "common/u32map.h"

/* One ELF file, read at most once per symbolizer. */
/* Kernel addresses looked up in one go (a stack has at most 127). */
#define FL_KSYM_MAX_BATCH_ADDRS 128

struct module {
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	struct fl_elfsyms *syms; /* NULL when the file could not be used */
	char *basename;
	/*
	 * With inlines or srclines, the DWARF of the file or of its separate
	 * debug file, when there is some (di keeps those files open for it).
	 */
	struct fl_debuginfo *di;
	struct fl_srcinfo *src;
	uint64_t used;	/* the symbolizer's generation at its last lookup */
	uint64_t bytes; /* what it holds (counted in the cache) */
	uint64_t syms_bytes; /* fl_elfsyms__bytes(syms) when last counted: names read since are added */
	bool not_read;	/* met with the cache full */
	uint8_t build_id[32]; /* SHA-1's 20 bytes, or up to 32; longer ones are not kept */
	uint8_t build_id_len;
	/* debuginfod was fetching its debug file when it was read: at this generation. */
	bool debuginfod_pending;
	uint64_t debuginfod_gen;
};

/* A JIT process: its perf map, or the tries left to find one. */
struct jitproc {
	uint32_t pid;
	struct fl_perfmap *map; /* NULL while not found */
	unsigned int tries;
	bool tried; /* opened once at least (else still in the pending list) */
};

/* How many ticks a JIT process has to write its perf map. */
#define JIT_MAP_TRIES 30

/* Inlined frames at one address, at most (a deeper nest keeps its outermost ones). */
#define FL_SYM_MAX_INLINE 32

/* A kernel address named through BPF, kept for the next stack that has it. */
struct kentry {
	uint64_t addr;	  /* 0: empty slot */
	const char *name; /* NULL: the kernel knows no symbol there */
	const char *module;
};

struct fl_symbolizer {
	struct fl_tracker *tracker;
	/* Kernel side, set up on first use: BPF naming, else kallsyms. */
	const char *kallsyms_path;
	bool no_kernel, no_bpf;
	bool kernel_ready;
	bool kernel_hidden;
	struct fl_ksyms *ksyms;
	struct fl_ksym_bpf *kbpf;
	struct kentry *kcache; /* open addressing, power-of-two capacity */
	size_t nr_kcache, cap_kcache;
	struct fl_strpool *kpool; /* names and modules in kcache */
	uint64_t *kmiss;	  /* scratch: addresses to ask the kernel about */
	/* Open-addressing table of modules; power-of-two capacity. */
	struct module **mods;
	size_t nr_mods, cap_mods;
	uint64_t gen; /* fl_symbolizer__trim() calls */
	uint64_t mods_trimmed;
	struct fl_symbolizer_cache_stats cache; /* its bytes: the budget's */
	struct fl_budget budget;		/* symbol tables, DWARF and perf maps */
	struct fl_budget jit_budget;		/* perf maps: a part of budget */
	struct fl_debuginfod *debuginfod;	/* borrowed, or NULL */
	struct fl_elfsyms *vdso;
	bool vdso_tried;
	bool inlines, srclines;
	struct fl_u32map jit_idx; /* pid -> index into jits */
	struct jitproc *jits;
	size_t nr_jits, cap_jits;
	uint32_t *jit_pending; /* pids noted but not tried yet, oldest first */
	size_t nr_pending, cap_pending;
	uint64_t jit_noted;		/* processes noted, forgotten ones included */
	struct fl_perfmap_cache *pmaps; /* the perf maps' files, shared by processes */
	struct fl_src_frame src[FL_SYM_MAX_INLINE + 1]; /* scratch: the last address's frames */
};

/* What m read from its file: symbols, DWARF, the files kept open for it. */
static void module_clear(struct module *m)
{
	fl_elfsyms__free(m->syms);
	fl_srcinfo__free(m->src); /* before the files its DWARF is in */
	fl_debuginfo__free(m->di);
	m->syms = NULL;
	m->src = NULL;
	m->di = NULL;
}

static void module_free(struct module *m)
{
	if (!m)
		return;
	module_clear(m);
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
	fl_ksym_bpf__free(s->kbpf);
	free(s->kcache);
	free(s->kmiss);
	fl_strpool__free(s->kpool);
	fl_elfsyms__free(s->vdso);
	for (size_t i = 0; i < s->nr_jits; i++)
		fl_perfmap__free(s->jits[i].map);
	fl_perfmap_cache__free(s->pmaps); /* after its maps */
	free(s->jits);
	free(s->jit_pending);
	fl_u32map__fini(&s->jit_idx);
	free(s);
}

int fl_symbolizer__new(const struct fl_symbolizer_opts *opts, struct fl_symbolizer **ret)
{
	struct fl_symbolizer *s = calloc(1, sizeof(*s));
	struct fl_perfmap_cache_opts po = {.sz = sizeof(po)};

	if (!s)
		return -ENOMEM;
	s->tracker = opts->tracker;
	s->kallsyms_path = opts->kallsyms_path;
	s->no_kernel = opts->no_kernel;
	s->no_bpf = opts->no_bpf;
	s->budget.max = FL_SYM_DEFAULT_CACHE;
	if (opts->sz >= sizeof(*opts)) {
		s->inlines = opts->inlines;
		s->srclines = opts->srclines;
		if (opts->max_cache_bytes)
			s->budget.max = opts->max_cache_bytes;
		s->budget.parent = opts->budget;
		s->debuginfod = opts->debuginfod;
	}
	/* Hostile perf maps must not keep the binaries' symbols from being read. */
	s->jit_budget =
		(struct fl_budget){.max = s->budget.max / FL_SYM_JIT_SHARE, .parent = &s->budget};
	po.budget = &s->jit_budget;
	if (fl_perfmap_cache__new(&po, &s->pmaps)) {
		free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

/* Whether /proc/kallsyms shows addresses: its first line is enough to tell. */
static bool kallsyms_visible(void)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/kallsyms", "re");
	unsigned long long addr = 0;

	return f && fscanf(f, "%llx", &addr) == 1 && addr != 0;
}

static int load_kallsyms(struct fl_symbolizer *s)
{
	struct fl_ksyms_opts kopts = {.sz = sizeof(kopts), .path = s->kallsyms_path};
	int err = fl_ksyms__load(&kopts, &s->ksyms);

	if (err == -ENOMEM)
		return err;
	if (err)
		fl_pr_debug("symbolizer: kallsyms: %s\n", strerror(-err));
	s->kernel_hidden =
		!s->ksyms || fl_ksyms__addrs_hidden(s->ksyms) || fl_ksyms__count(s->ksyms) == 0;
	return 0;
}

/*
 * Kernel symbols on first use. Naming through BPF costs a few milliseconds
 * per run; reading all of /proc/kallsyms costs tens. Addresses that
 * kallsyms hides stay hidden either way: that is the administrator's call.
 */
static int kernel_init(struct fl_symbolizer *s)
{
	if (s->kernel_ready)
		return 0;
	s->kernel_ready = true;
	if (s->no_kernel) {
		s->kernel_hidden = true;
		return 0;
	}
	if (s->kallsyms_path || s->no_bpf)
		return load_kallsyms(s);
	if (!kallsyms_visible()) {
		s->kernel_hidden = true;
		return 0;
	}
	if (fl_ksym_bpf__new(&s->kbpf) == 0 && fl_strpool__new(&s->kpool) == 0)
		return 0;
	fl_ksym_bpf__free(s->kbpf);
	s->kbpf = NULL;
	return load_kallsyms(s);
}

bool fl_symbolizer__kernel_hidden(struct fl_symbolizer *s)
{
	if (kernel_init(s))
		return true;
	return s->kernel_hidden;
}

static struct kentry *kcache_slot(struct kentry *tab, size_t cap, uint64_t addr)
{
	size_t i = fl_hash_u64(addr) & (cap - 1);

	while (tab[i].addr && tab[i].addr != addr)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static int kcache_reserve(struct fl_symbolizer *s, size_t more)
{
	size_t cap = s->cap_kcache ? s->cap_kcache : 1024;
	struct kentry *tab;

	while ((s->nr_kcache + more) * 2 > cap)
		cap *= 2;
	if (cap == s->cap_kcache)
		return 0;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap_kcache; i++)
		if (s->kcache[i].addr)
			*kcache_slot(tab, cap, s->kcache[i].addr) = s->kcache[i];
	free(s->kcache);
	s->kcache = tab;
	s->cap_kcache = cap;
	return 0;
}

static int intern_n(struct fl_strpool *pool, const char *str, size_t len, const char **out)
{
	uint32_t id;
	int err;

	*out = NULL;
	if (!str)
		return 0;
	err = fl_strpool__intern(pool, str, len, &id);
	if (!err)
		*out = fl_strpool__str(pool, id);
	return err;
}

static int kcache_fill(void *ctx, size_t i, const char *name, size_t name_len, const char *module,
		       size_t module_len)
{
	struct fl_symbolizer *s = ctx;
	struct kentry *e = kcache_slot(s->kcache, s->cap_kcache, s->kmiss[i]);
	int err;

	if (e->addr)
		return 0; /* the same address twice in one stack */
	e->addr = s->kmiss[i];
	err = intern_n(s->kpool, name, name_len, &e->name);
	if (!err)
		err = intern_n(s->kpool, module, module_len, &e->module);
	s->nr_kcache++;
	return err;
}

static int kernel_bpf(struct fl_symbolizer *s, const uint64_t *adj, size_t n)
{
	size_t nmiss = 0;
	int err;

	err = kcache_reserve(s, n);
	if (err)
		return err;
	if (!s->kmiss) {
		s->kmiss = malloc(FL_KSYM_MAX_BATCH_ADDRS * sizeof(*s->kmiss));
		if (!s->kmiss)
			return -ENOMEM;
	}
	/* Address 0 marks an empty slot: it is never asked about. */
	for (size_t i = 0; i < n && nmiss < FL_KSYM_MAX_BATCH_ADDRS; i++)
		if (adj[i] && !kcache_slot(s->kcache, s->cap_kcache, adj[i])->addr)
			s->kmiss[nmiss++] = adj[i];
	if (!nmiss)
		return 0;
	return fl_ksym_bpf__resolve(s->kbpf, s->kmiss, nmiss, kcache_fill, s);
}

int fl_symbolizer__kernel(struct fl_symbolizer *s, const uint64_t *ips, size_t n,
			  struct fl_sym *out)
{
	int err = kernel_init(s);

	if (err)
		return err;
	for (size_t off = 0; off < n; off += FL_KSYM_MAX_BATCH_ADDRS) {
		size_t m = n - off < FL_KSYM_MAX_BATCH_ADDRS ? n - off : FL_KSYM_MAX_BATCH_ADDRS;
		const uint64_t *addrs = ips + off;

		if (s->kbpf && !s->kernel_hidden) {
			err = kernel_bpf(s, addrs, m);
			if (err == -ENOMEM)
				return err;
			if (err) {
				/* The program stopped working (lost privileges?): kallsyms it is. */
				fl_pr_debug("symbolizer: naming through BPF failed: %s\n",
					    strerror(-err));
				fl_ksym_bpf__free(s->kbpf);
				s->kbpf = NULL;
				err = load_kallsyms(s);
				if (err)
					return err;
			}
		}
		for (size_t i = 0; i < m; i++) {
			struct fl_sym *o = &out[off + i];
			const char *name = NULL, *module = NULL;

			if (s->kernel_hidden || !addrs[i]) {
				/* nothing to look up */
			} else if (s->kbpf) {
				const struct kentry *e =
					kcache_slot(s->kcache, s->cap_kcache, addrs[i]);

				name = e->name;
				module = e->module;
			} else {
				const struct fl_ksym *ks = fl_ksyms__find(s->ksyms, addrs[i]);

				if (ks) {
					name = ks->name;
					module = ks->module;
				}
			}
			if (name)
				*o = (struct fl_sym){.name = name,
						     .module = module ? module : "vmlinux",
						     .reason = FL_SYM_OK};
			else
				*o = (struct fl_sym){.module = "kernel",
						     .reason = s->kernel_hidden
								       ? FL_SYM_KERNEL_HIDDEN
								       : FL_SYM_NO_SYMBOL};
		}
	}
	return 0;
}

static uint64_t module_hash(uint32_t maj, uint32_t min, uint64_t ino)
{
	return fl_hash_u64_pair(ino, (uint64_t)maj << 32 | min);
}

/* Rebuilds the module table with capacity cap (a power of two). */
static int mods_rehash(struct fl_symbolizer *s, size_t cap)
{
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

static int mods_grow(struct fl_symbolizer *s)
{
	return mods_rehash(s, s->cap_mods ? s->cap_mods * 2 : 64);
}

void fl_symbolizer__trim(struct fl_symbolizer *s)
{
	size_t freed = 0;

	for (size_t i = 0; i < s->cap_mods; i++) {
		struct module *m = s->mods[i];

		if (m && (m->used + 1 < s->gen || m->not_read)) {
			fl_budget__give(&s->budget, m->bytes);
			module_free(m);
			s->mods[i] = NULL;
			freed++;
		}
	}
	s->gen++;
	fl_perfmap_cache__trim(s->pmaps);
	if (!freed)
		return;
	s->nr_mods -= freed;
	s->cache.files = s->nr_mods;
	s->mods_trimmed += freed;
	/* Open addressing: the survivors are placed again (same capacity: cannot fail but for memory). */
	if (mods_rehash(s, s->cap_mods))
		fl_pr_debug("symbolizer: out of memory rebuilding the module table\n");
}

static const char *path_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/*
 * The symbols of a mapped file, with those of its separate debug info
 * (build-id, .gnu_debuglink, MiniDebugInfo; looked up under the process's
 * root while it lives), and its DWARF for inlined frames and source lines.
 * The file is the one the tracker holds open, else the path if it is
 * still the file that was mapped, else the process's /proc/PID/map_files
 * entry while it lives (mapped_file.h).
 *
 * The files are another user's: what they make flamed hold is checked
 * against the room left in the budget before it is read (their section
 * headers say it, compressed sections at their inflated size), and
 * m->bytes is set to it. Returns false when not even the symbols fit:
 * then nothing is kept.
 */
static bool open_mapped_file(struct fl_symbolizer *s, struct module *m, const struct fl_tmap *tm,
			     uint32_t pid)
{
	int held = s->tracker ? fl_tracker__file_fd(s->tracker, tm) : -1;
	_cleanup_close_ int fd =
		held >= 0 ? fcntl(held, F_DUPFD_CLOEXEC, 3) : fl_open_mapped_file(tm, pid);
	_cleanup_close_ int root_fd = -1;
	uint64_t room = fl_budget__room(&s->budget), need, dwarf_need = 0;
	/* Read, not mapped: a debug file truncated under us must not raise SIGBUS. */
	struct fl_debuginfo_opts dio = {
		.sz = sizeof(dio),
		/* Decompressed before anything else is known: never more than there is room for. */
		.max_minidebuginfo = room < FL_DEBUGINFO_MINI_MAX ? (size_t)room : 0,
		.debuginfod = s->debuginfod,
	};
	struct fl_debuginfo *di = NULL;
	/* Before the lookup: a fetch that ends while the file is read moves it on. */
	uint64_t gen = fl_debuginfod__generation(s->debuginfod);
	Elf *dwarf_elf;
	int err;

	m->bytes = sizeof(*m);
	if (fd < 0) {
		fl_pr_debug("symbolizer: %s: %s\n", tm->path,
			    fd == -ESTALE ? "not the mapped file any more" : strerror(-fd));
		return true;
	}
	if (pid) {
		char root[32];

		snprintf(root, sizeof(root), "/proc/%u/root", pid);
		root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	dio.root_fd = root_fd;
	err = fl_debuginfo__find(fd, tm->path, &dio, &di);
	if (err) {
		fl_pr_debug("symbolizer: %s: %s\n", tm->path, strerror(-err));
		return true;
	}
	if (fl_debuginfo__debuginfod_pending(di)) {
		m->debuginfod_pending = true;
		m->debuginfod_gen = gen;
	}
	{
		const uint8_t *bid;
		size_t len = fl_debuginfo__build_id(di, &bid);

		m->build_id_len = (uint8_t)(len <= sizeof(m->build_id) ? len : 0);
		if (m->build_id_len)
			memcpy(m->build_id, bid, m->build_id_len);
	}
	need = sizeof(*m) + fl_debuginfo__symbols_bytes(di);
	if (need > room) {
		fl_pr_debug("symbolizer: %s not read: symbols of %llu bytes, room for %llu\n",
			    tm->path, (unsigned long long)need, (unsigned long long)room);
		fl_debuginfo__free(di);
		return false;
	}
	m->bytes = need;
	err = fl_elfsyms__from_debuginfo(di, &m->syms);
	if (err) {
		fl_pr_debug("symbolizer: %s: %s\n", tm->path, strerror(-err));
		fl_debuginfo__free(di);
		m->syms = NULL;
		return true;
	}
	/*
	 * Reading took need; what stays is the symbols (the names of big
	 * tables stay in the file), unless the DWARF keeps di and its sections.
	 */
	m->syms_bytes = fl_elfsyms__bytes(m->syms);
	m->bytes = sizeof(*m) + m->syms_bytes;
	if (fl_debuginfo__source(di) != FL_DEBUGINFO_NONE)
		fl_pr_debug("symbolizer: %s: debug info by %s: %s\n", tm->path,
			    fl_debuginfo_source__str(fl_debuginfo__source(di)),
			    fl_debuginfo__path(di) ? fl_debuginfo__path(di) : "(in the file)");
	dwarf_elf = s->inlines || s->srclines ? fl_debuginfo__dwarf_elf(di) : NULL;
	if (dwarf_elf) {
		dwarf_need = fl_debuginfo__dwarf_bytes(di);
		if (dwarf_need > room - need) {
			fl_pr_debug("symbolizer: %s: DWARF of %llu bytes not read, room for %llu\n",
				    tm->path, (unsigned long long)dwarf_need,
				    (unsigned long long)(room - need));
			dwarf_elf = NULL;
		}
	}
	if (dwarf_elf)
		fl_debuginfo__inflate_dwarf(di, dwarf_need);
	if (dwarf_elf && fl_srcinfo__open(dwarf_elf, fl_debuginfo__alt_elf(di), &m->src) == 0) {
		m->di = di; /* its files stay open for the DWARF */
		m->bytes = need + dwarf_need;
		return true;
	}
	m->src = NULL;
	fl_debuginfo__free(di);
	return true;
}

void fl_symbolizer__cache_stats(const struct fl_symbolizer *s, struct fl_symbolizer_cache_stats *st)
{
	*st = s->cache;
	st->bytes = s->budget.used;
	st->peak_bytes = s->budget.peak;
	st->max_bytes = s->budget.max;
}

static void module_read(struct fl_symbolizer *s, struct module *m, const struct fl_tmap *tm,
			uint32_t pid);

/*
 * A file read while debuginfod fetched its debug file is read again once a
 * fetch has ended since (its own, or another: asking is cheap), while it
 * is still pending: what it holds is given back first.
 */
static void module_refresh(struct fl_symbolizer *s, struct module *m, const struct fl_tmap *tm,
			   uint32_t pid)
{
	if (!m->debuginfod_pending || fl_debuginfod__generation(s->debuginfod) == m->debuginfod_gen)
		return;
	fl_budget__give(&s->budget, m->bytes);
	module_clear(m);
	m->bytes = 0;
	m->debuginfod_pending = false;
	if (m->not_read)
		s->cache.files_not_read--;
	m->not_read = false;
	module_read(s, m, tm, pid);
}

static struct module *module_get(struct fl_symbolizer *s, const struct fl_tmap *tm, uint32_t pid)
{
	struct module *m;
	size_t j;

	if (s->nr_mods * 2 >= s->cap_mods && mods_grow(s))
		return NULL;
	j = module_hash(tm->dev_major, tm->dev_minor, tm->ino) & (s->cap_mods - 1);
	for (; (m = s->mods[j]); j = (j + 1) & (s->cap_mods - 1))
		if (m->ino == tm->ino && m->dev_major == tm->dev_major &&
		    m->dev_minor == tm->dev_minor) {
			m->used = s->gen;
			module_refresh(s, m, tm, pid);
			return m;
		}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->dev_major = tm->dev_major;
	m->dev_minor = tm->dev_minor;
	m->ino = tm->ino;
	m->used = s->gen;
	m->basename = strdup(path_basename(tm->path));
	if (!m->basename) {
		free(m);
		return NULL;
	}
	module_read(s, m, tm, pid);
	s->mods[j] = m;
	s->nr_mods++;
	s->cache.files = s->nr_mods;
	return m;
}

/* Reads m's file into it, within the budget (or marks it not read). */
static void module_read(struct fl_symbolizer *s, struct module *m, const struct fl_tmap *tm,
			uint32_t pid)
{
	/* Its frames are named by the file; tried again after a trim (the daemon). */
	if (!fl_budget__fits(&s->budget, sizeof(*m))) {
		m->not_read = true;
		fl_pr_debug("symbolizer: %s not read: the cache holds %llu bytes, its cap\n",
			    tm->path, (unsigned long long)s->budget.used);
	} else if (!open_mapped_file(s, m, tm, pid)) {
		m->not_read = true;
	} else {
		/* Checked against the room left before it was read: it fits. */
		fl_budget__force(&s->budget, m->bytes);
		/* Device and inode say which file: containers have their own libc.so.6. */
		fl_pr_debug("symbolizer: read %s (device %u:%u, inode %llu): %zu symbols, %llu "
			    "bytes\n",
			    tm->path, tm->dev_major, tm->dev_minor, (unsigned long long)tm->ino,
			    m->syms ? fl_elfsyms__count(m->syms) : 0, (unsigned long long)m->bytes);
	}
	if (m->not_read) {
		m->bytes = 0;
		s->cache.files_not_read++;
	}
}

/* The vdso is the same image in every process: read it from our own memory. */
static struct fl_elfsyms *vdso_syms(struct fl_symbolizer *s)
{
	const ElfW(Ehdr) * eh;
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

static void lookup(const struct fl_elfsyms *syms, const struct fl_tmap *tm, uint64_t ip,
		   struct fl_sym *out, uint64_t *vaddr)
{
	const struct fl_elfsym *sym;

	if (fl_elfsyms__offset_to_vaddr(syms, ip - tm->start + tm->pgoff, vaddr) == 0 &&
	    (sym = fl_elfsyms__find(syms, *vaddr))) {
		out->name = sym->name;
		out->reason = FL_SYM_OK;
		return;
	}
	out->reason = FL_SYM_NO_SYMBOL;
}

/* Counts in the cache the names a lookup read from m's file (elfsyms.h): fewer than the symbols hit. */
static void names_read(struct fl_symbolizer *s, struct module *m)
{
	uint64_t now = fl_elfsyms__bytes(m->syms);

	if (now > m->syms_bytes) {
		fl_budget__force(&s->budget, now - m->syms_bytes);
		m->bytes += now - m->syms_bytes;
		m->syms_bytes = now;
	}
}

/*
 * The functions inlined at vaddr and the source lines, from the module's
 * DWARF. The symbol names the outer function; DWARF's first frame is that
 * same function, so only its position is taken.
 */
static void add_srcinfo(struct fl_symbolizer *s, struct module *m, uint64_t vaddr, struct fl_sym *o)
{
	size_t n = fl_srcinfo__frames(m->src, vaddr, s->src, FL_SYM_MAX_INLINE + 1);

	if (!n)
		return;
	o->file = s->src[0].file;
	o->line = s->src[0].line;
	o->decl_file = s->src[0].decl_file;
	o->decl_line = s->src[0].decl_line;
	if (s->inlines && n > 1) {
		o->inl = &s->src[1];
		o->nr_inl = n - 1;
	}
}

/*
 * Opens pid's perf map, checks it and keeps it open, without reading it:
 * false while there is none to use (yet).
 */
static bool jit_open(struct fl_symbolizer *s, struct jitproc *j)
{
	struct fl_perfmap_opts o = {.sz = sizeof(o),
				    .pid = (int)j->pid,
				    .root_fd = -1,
				    .cache = s->pmaps,
				    .defer_read = true};
	int err = fl_perfmap__open(&o, &j->map);

	j->tried = true;
	if (err) {
		j->map = NULL;
		if (err != -ENOENT)
			fl_pr_debug("symbolizer: perf map of %u: %s\n", j->pid, strerror(-err));
		return false;
	}
	fl_pr_debug("symbolizer: perf map of %u opened\n", j->pid);
	return true;
}

int fl_symbolizer__jit_process(struct fl_symbolizer *s, uint32_t pid)
{
	int err;

	if (!pid || fl_u32map__get(&s->jit_idx, pid, NULL))
		return 0;
	if (s->nr_jits == s->cap_jits) {
		size_t ncap = s->cap_jits ? s->cap_jits * 2 : 16;
		struct jitproc *nj = reallocarray(s->jits, ncap, sizeof(*nj));

		if (!nj)
			return -ENOMEM;
		s->jits = nj;
		s->cap_jits = ncap;
	}
	if (s->nr_pending == s->cap_pending) {
		size_t ncap = s->cap_pending ? s->cap_pending * 2 : 16;
		uint32_t *np = reallocarray(s->jit_pending, ncap, sizeof(*np));

		if (!np)
			return -ENOMEM;
		s->jit_pending = np;
		s->cap_pending = ncap;
	}
	err = fl_u32map__put(&s->jit_idx, pid, (uint32_t)s->nr_jits);
	if (err)
		return err;
	s->jits[s->nr_jits++] = (struct jitproc){.pid = pid, .tries = JIT_MAP_TRIES};
	s->jit_pending[s->nr_pending++] = pid;
	s->jit_noted++;
	return 0;
}

void fl_symbolizer__jit_open_new(struct fl_symbolizer *s)
{
	for (size_t i = 0; i < s->nr_pending; i++) {
		uint32_t idx;

		/* Forgotten meanwhile, or tried already by a lookup. */
		if (fl_u32map__get(&s->jit_idx, s->jit_pending[i], &idx) && !s->jits[idx].tried)
			jit_open(s, &s->jits[idx]);
	}
	s->nr_pending = 0;
}

void fl_symbolizer__jit_retry(struct fl_symbolizer *s)
{
	fl_symbolizer__jit_open_new(s);
	for (size_t i = 0; i < s->nr_jits; i++) {
		struct jitproc *j = &s->jits[i];

		if (!j->map && j->tries) {
			j->tries--;
			jit_open(s, j);
		}
	}
}

void fl_symbolizer__jit_stats(const struct fl_symbolizer *s, struct fl_symbolizer_jit_stats *st)
{
	struct fl_perfmap_cache_stats cs;

	fl_perfmap_cache__stats(s->pmaps, &cs);
	*st = (struct fl_symbolizer_jit_stats){
		.processes = s->jit_noted,
		.opened = cs.opened,
		.shared = cs.shared,
		.maps = cs.files_read,
		.entries = cs.lines.nr_entries,
		.malformed = cs.lines.nr_malformed,
		.too_long = cs.lines.nr_too_long,
		.over_max = cs.lines.nr_over_max,
		.bytes_ignored = cs.lines.bytes_ignored,
		.bytes = cs.bytes,
		.peak_bytes = cs.peak_bytes,
		.max_bytes = s->jit_budget.max,
		.over_budget = cs.over_budget,
		.bytes_over_budget = cs.bytes_over_budget,
		.rereads_refused = cs.rereads_refused,
	};
}

void fl_symbolizer__forget(struct fl_symbolizer *s, const uint32_t *pids, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		uint32_t idx, last;

		if (!fl_u32map__get(&s->jit_idx, pids[k], &idx))
			continue;
		fl_perfmap__free(s->jits[idx].map);
		fl_u32map__del(&s->jit_idx, pids[k]);
		last = (uint32_t)s->nr_jits - 1;
		if (idx != last) {
			s->jits[idx] = s->jits[last];
			fl_u32map__put(&s->jit_idx, s->jits[idx].pid, idx); /* an update: fits */
		}
		s->nr_jits--;
	}
}

/*
 * A name for JIT code from pid's perf map: the map is read here, on the
 * first lookup (most processes with JIT code never need theirs), and read
 * again if it grew.
 */
static const char *jit_name(struct fl_symbolizer *s, uint32_t pid, uint64_t ip)
{
	uint32_t idx;
	struct jitproc *j;

	if (!fl_u32map__get(&s->jit_idx, pid, &idx))
		return NULL;
	j = &s->jits[idx];
	if (!j->map && !((!j->tried || j->tries) && jit_open(s, j)))
		return NULL;
	fl_perfmap__refresh(j->map);
	return fl_perfmap__find(j->map, ip);
}

int fl_symbolizer__in_map(struct fl_symbolizer *s, uint32_t pid, const struct fl_tmap *tm,
			  uint64_t ip, struct fl_sym *o)
{
	struct module *m;
	uint64_t vaddr;

	*o = (struct fl_sym){.reason = FL_SYM_UNMAPPED};
	if (!tm)
		return 0;
	if (fl_tmap__is_anon(tm)) {
		o->name = jit_name(s, pid, ip);
		o->reason = o->name ? FL_SYM_OK : FL_SYM_ANON;
		o->jit = o->name != NULL;
		return 0;
	}
	if (tm->path[0] == '[') {
		struct fl_elfsyms *vdso;

		o->module = tm->path;
		o->reason = FL_SYM_NO_SYMBOL;
		if (!strcmp(tm->path, "[vdso]") && (vdso = vdso_syms(s)))
			lookup(vdso, tm, ip, o, &vaddr);
		return 0;
	}
	m = module_get(s, tm, pid);
	if (!m)
		return -ENOMEM;
	o->module = m->basename;
	o->build_id = m->build_id;
	o->build_id_len = m->build_id_len;
	if (!m->syms) {
		o->reason = FL_SYM_NO_FILE;
		return 0;
	}
	lookup(m->syms, tm, ip, o, &vaddr);
	names_read(s, m);
	if (o->reason == FL_SYM_OK && m->src)
		add_srcinfo(s, m, vaddr, o);
	return 0;
}

int fl_symbolizer__user(struct fl_symbolizer *s, uint32_t pid, const uint64_t *ips, size_t n,
			struct fl_sym *out)
{
	for (size_t i = 0; i < n; i++) {
		const struct fl_tmap *tm =
			s->tracker ? fl_tracker__find(s->tracker, pid, ips[i]) : NULL;
		int err = fl_symbolizer__in_map(s, pid, tm, ips[i], &out[i]);

		if (err)
			return err;
	}
	return 0;
}
