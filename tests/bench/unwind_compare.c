// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Measurement tool (not part of the build): libdw (flamed's lib/unwinding/unwind.c)
 * against libunwind's remote API on the same perf user-stack samples.
 *
 *   unwind_compare [-n N] [-F HZ] [-w PASSES] [-r ROUNDS] [-s STACK] [-d DIFFS]
 *                  [-c CACHE] [-m TAGS] LABEL=CMDLINE...
 *
 * Each LABEL=CMDLINE is a program to sample (CMDLINE split on spaces; the
 * word {SECS} is replaced by how long it must run). N samples of each
 * (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER, STACK bytes, HZ per
 * second, the ring read every 10 ms) are kept in memory, then unwound by
 *
 *   dw      libdw: fl_unwinder__unwind (libflamed.a)
 *   lu      libunwind: unw_init_remote/unw_step on one unw_addr_space_t per
 *           process, UNW_CACHE_GLOBAL, the default cache size
 *   lubig   the same with unw_set_cache_size(CACHE) (default 4096)
 *   lupt    UNW_CACHE_PER_THREAD, CACHE entries (libunwind 1.6.2 as Debian
 *           builds it takes the same locked path: as many rt_sigprocmask)
 *   lunone  UNW_CACHE_NONE: every frame looks its FDE up and parses it
 *
 * -m TAGS (comma-separated) runs libdw and only those libunwind variants.
 *
 * libunwind's accessors: access_mem reads the stack copy, and the ELF files
 * (mmap'd once per file, keyed by device and inode; the vdso from our own
 * copy) at the addresses they have in the sampled process; access_reg reads
 * the sample's registers; find_proc_info finds the mapping of the pc and
 * calls dwarf_search_unwind_table() on its .eh_frame_hdr as a
 * UNW_INFO_FORMAT_REMOTE_TABLE.
 *
 * Every method runs ROUNDS times (default 3), each time in a fresh child
 * process: one cold pass (new unwinder, nothing cached; the files are in the
 * page cache) then PASSES warm passes (default 5) over all samples. Peak
 * memory is the child's VmHWM minus its VmRSS at start; "heap" is what
 * malloc holds at the end minus at start.
 *
 * Frames are compared sample by sample (same count, same addresses) between
 * libdw and each libunwind variant. Exits 77 when perf_event_open is refused.
 */
#include <errno.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libunwind.h>

#include "flamed/symbols/elfsyms.h"
#include "flamed/sampling/perfbuf.h"
#include "flamed/sampling/procmaps.h"
#include "flamed/unwinding/unwind.h"

/* Not in libunwind's public headers; exported by libunwind-x86_64. */
int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
				       unw_proc_info_t *pi, int need_unwind_info, void *arg);

#define MAX_PROGS 8
#define MAX_MAPS 512
#define MAX_FRAMES 127 /* FL_MAX_STACK_DEPTH */
#define MAX_PASSES 64
#define MAX_ROUNDS 16

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --- the samples ------------------------------------------------------------------ */

struct prog {
	char label[64];
	char *argv[64];
	pid_t pid;
	struct fl_tmap maps[MAX_MAPS];
	char paths[MAX_MAPS][256];
	size_t nr_maps;
	size_t first, count; /* its samples in samples[] */
};

struct sample {
	uint32_t prog;
	uint64_t regs[FL_UNWIND_NR_REGS];
	unsigned char *stack;
	size_t size;
};

static struct prog progs[MAX_PROGS];
static size_t nr_progs;
static struct sample *samples;
static size_t nr_samples, cap_samples;
static size_t want_per_prog = 3000;

static ssize_t map_index(const struct prog *p, uint64_t addr)
{
	for (size_t i = 0; i < p->nr_maps; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			return (ssize_t)i;
	return -1;
}

static const struct fl_tmap *find_map(void *ctx, uint32_t pid, uint64_t addr, uint64_t time)
{
	(void)ctx;
	(void)time;
	for (size_t k = 0; k < nr_progs; k++)
		if ((uint32_t)progs[k].pid == pid) {
			ssize_t i = map_index(&progs[k], addr);

			return i < 0 ? NULL : &progs[k].maps[i];
		}
	return NULL;
}

static int add_map(const struct fl_procmap *m, void *ctx)
{
	struct prog *p = ctx;

	if (!(m->prot & FL_PROT_EXEC) || p->nr_maps == MAX_MAPS)
		return 0;
	snprintf(p->paths[p->nr_maps], sizeof(p->paths[0]), "%s", m->path);
	p->maps[p->nr_maps] = (struct fl_tmap){.start = m->start,
					       .end = m->end,
					       .pgoff = m->pgoff,
					       .dev_major = m->dev_major,
					       .dev_minor = m->dev_minor,
					       .ino = m->ino,
					       .path = p->paths[p->nr_maps]};
	p->nr_maps++;
	return 0;
}

static int on_record(const struct perf_event_header *hdr, void *ctx)
{
	struct prog *p = ctx;
	const unsigned char *q = (const unsigned char *)(hdr + 1);
	uint64_t abi, size, perf_regs[64];
	uint32_t pid;
	size_t nregs = (size_t)__builtin_popcountll(fl_unwind__perf_regs_mask());
	struct sample *s;

	if (hdr->type != PERF_RECORD_SAMPLE || p->count >= want_per_prog)
		return 0;
	memcpy(&pid, q, 4);
	q += 8; /* pid, tid */
	if (pid != (uint32_t)p->pid)
		return 0;
	memcpy(&abi, q, 8);
	q += 8;
	if (!abi)
		return 0;
	memcpy(perf_regs, q, nregs * 8);
	q += nregs * 8;
	memcpy(&size, q, 8);
	q += 8;
	if (nr_samples == cap_samples) {
		cap_samples = cap_samples ? cap_samples * 2 : 4096;
		samples = realloc(samples, cap_samples * sizeof(*samples));
		if (!samples)
			die("out of memory\n");
	}
	s = &samples[nr_samples];
	s->prog = (uint32_t)(p - progs);
	fl_unwind__regs_from_perf(perf_regs, s->regs);
	if (size) {
		uint64_t dyn;

		memcpy(&dyn, q + size, 8);
		size = dyn < size ? dyn : size;
	}
	s->stack = malloc(size ? size : 1);
	if (!s->stack)
		die("out of memory\n");
	memcpy(s->stack, q, size);
	s->size = size;
	nr_samples++;
	p->count++;
	return 0;
}

/* Runs the program and samples it until it has want_per_prog samples or exits. */
static int capture(struct prog *p, int freq, uint32_t stack_copy, double secs)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = (uint64_t)freq,
		.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
		.sample_regs_user = fl_unwind__perf_regs_mask(),
		.sample_stack_user = stack_copy,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.disabled = 1,
	};
	struct fl_perfbuf *buf = NULL;
	int fd, status, err;
	uint64_t t0, limit = (uint64_t)(secs * 1e9);

	p->first = nr_samples;
	p->count = 0;
	p->pid = fork();
	if (p->pid < 0)
		die("fork: %s\n", strerror(errno));
	if (!p->pid) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		execv(p->argv[0], p->argv);
		fprintf(stderr, "exec %s: %s\n", p->argv[0], strerror(errno));
		_exit(127);
	}
	usleep(300000); /* past exec and the dynamic loader */
	fd = fl_perf_event_open(&attr, p->pid, -1, -1, 0);
	if (fd < 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &status, 0);
		return fd;
	}
	if ((err = fl_perfbuf__new(fd, 512, &buf)))
		die("perf ring: %s\n", strerror(-err));
	if ((err = fl_procmaps__read(p->pid, add_map, p)))
		die("/proc/%d/maps: %s\n", p->pid, strerror(-err));
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	t0 = now_ns();
	while (p->count < want_per_prog && now_ns() - t0 < limit) {
		usleep(10000);
		if (fl_perfbuf__consume(buf, on_record, p) < 0)
			die("perf ring read failed\n");
		if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
			p->pid = -p->pid; /* exited: keep the number for the maps lookups */
			break;
		}
	}
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	fl_perfbuf__consume(buf, on_record, p);
	fl_perfbuf__free(buf);
	close(fd);
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &status, 0);
	} else {
		p->pid = -p->pid;
	}
	return 0;
}

/* --- method 1: libdw, through libflamed ---------------------------------------------- */

enum outcome { OUT_COMPLETE, OUT_TRUNCATED, OUT_FAILED, OUT__MAX };

struct dw_state {
	struct fl_unwinder *u;
};

static void *dw_new(size_t cache, int policy)
{
	struct dw_state *st = calloc(1, sizeof(*st));
	struct fl_unwind_opts o = {.sz = sizeof(o), .find_map = find_map};

	(void)cache, (void)policy;
	if (!st || fl_unwinder__new(&o, &st->u))
		die("fl_unwinder__new failed\n");
	return st;
}

static size_t dw_unwind(void *state, const struct sample *smp, uint64_t *ips, int *outcome)
{
	struct dw_state *st = state;
	struct fl_unwind_sample s = {
		.pid = (uint32_t)progs[smp->prog].pid, .stack = smp->stack, .stack_size = smp->size};
	enum fl_unwind_outcome out;
	size_t n;

	memcpy(s.regs, smp->regs, sizeof(s.regs));
	n = fl_unwinder__unwind(st->u, &s, ips, MAX_FRAMES, &out);
	*outcome = out == FL_UNWIND_COMPLETE ? OUT_COMPLETE
		   : out == FL_UNWIND_TRUNCATED ? OUT_TRUNCATED
						 : OUT_FAILED;
	return n;
}

static size_t dw_files(void *state)
{
	struct fl_unwind_stats s;

	fl_unwinder__stats(((struct dw_state *)state)->u, &s);
	return (size_t)s.files;
}

/* --- method 2: libunwind's remote API ------------------------------------------------ */

/* One ELF file, mapped once, shared by every process that maps it. */
struct lu_file {
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	bool vdso, bad;
	const unsigned char *img;
	size_t size;
	struct {
		uint64_t off, vaddr, filesz;
	} segs[16];
	size_t nr_segs;
	uint64_t lo, hi; /* the PT_LOAD vaddr range */
	bool has_hdr;
	uint64_t hdr_vaddr, table_vaddr, fde_count;
};

/* One executable mapping of a process, resolved to its file on first use. */
struct lu_map {
	uint8_t state; /* 0 not yet, 1 resolved, 2 unusable */
	bool has_di;
	struct lu_file *f;
	uint64_t bias, lo, hi; /* the file's image in the process: [lo, hi) */
	unw_dyn_info_t di;
};

struct lu_prog {
	unw_addr_space_t as;
	struct lu_map maps[MAX_MAPS];
	size_t last; /* the map access_mem used last */
};

struct lu_state {
	struct lu_file *files[64];
	size_t nr_files;
	struct lu_file vdso;
	bool vdso_tried;
	struct lu_prog lp[MAX_PROGS];
};

struct lu_arg {
	struct lu_state *st;
	struct lu_prog *lp;
	const struct prog *p;
	const struct sample *s;
	bool past_copy;
};

static size_t enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		return 8;
	case 0x02: /* udata2 */
	case 0x0a:
		return 2;
	case 0x03: /* udata4 */
	case 0x0b:
		return 4;
	default:
		return 0;
	}
}

static bool lu_file_off(const struct lu_file *f, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < f->nr_segs; i++)
		if (vaddr >= f->segs[i].vaddr && vaddr - f->segs[i].vaddr < f->segs[i].filesz) {
			*off = vaddr - f->segs[i].vaddr + f->segs[i].off;
			return *off < f->size;
		}
	return false;
}

/* The program headers and the .eh_frame_hdr of an ELF image. */
static void lu_parse(struct lu_file *f)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f->img;
	uint64_t hdr_off = 0;
	bool hdr = false;

	f->bad = true;
	if (f->size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > f->size)
		return;
	f->lo = UINT64_MAX;
	for (size_t i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(f->img + eh->e_phoff) + i;

		if (ph->p_type == PT_LOAD && f->nr_segs < 16) {
			f->segs[f->nr_segs].off = ph->p_offset;
			f->segs[f->nr_segs].vaddr = ph->p_vaddr;
			f->segs[f->nr_segs].filesz = ph->p_filesz;
			f->nr_segs++;
			if (ph->p_vaddr < f->lo)
				f->lo = ph->p_vaddr;
			if (ph->p_vaddr + ph->p_memsz > f->hi)
				f->hi = ph->p_vaddr + ph->p_memsz;
		} else if (ph->p_type == PT_GNU_EH_FRAME) {
			hdr = true;
			f->hdr_vaddr = ph->p_vaddr;
			hdr_off = ph->p_offset;
		}
	}
	if (!f->nr_segs)
		return;
	f->bad = false;
	if (hdr && hdr_off + 4 <= f->size) {
		const unsigned char *h = f->img + hdr_off;
		size_t ptr_sz = enc_size(h[1]), cnt_sz = enc_size(h[2]);
		uint64_t cnt = 0;

		/* version 1; a binary-searchable table of datarel sdata4 pairs */
		if (h[0] == 1 && h[3] == 0x3b && ptr_sz && (h[2] & 0xf0) == 0 && cnt_sz &&
		    hdr_off + 4 + ptr_sz + cnt_sz <= f->size) {
			memcpy(&cnt, h + 4 + ptr_sz, cnt_sz); /* little-endian */
			f->fde_count = cnt;
			f->table_vaddr = f->hdr_vaddr + 4 + ptr_sz + cnt_sz;
			f->has_hdr = cnt > 0;
		}
	}
}

static struct lu_file *lu_vdso(struct lu_state *st)
{
	const Elf64_Ehdr *eh;

	if (st->vdso_tried)
		return &st->vdso;
	st->vdso_tried = true;
	st->vdso.vdso = true;
	st->vdso.bad = true;
	eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return &st->vdso;
	st->vdso.img = (const unsigned char *)eh;
	st->vdso.size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	lu_parse(&st->vdso);
	return &st->vdso;
}

static struct lu_file *lu_file_get(struct lu_state *st, const struct fl_tmap *tm)
{
	struct lu_file *f;
	struct stat sb;
	int fd;

	if (!strcmp(tm->path, "[vdso]"))
		return lu_vdso(st);
	if (!tm->path[0] || tm->path[0] == '[' || !tm->ino)
		return NULL;
	for (size_t i = 0; i < st->nr_files; i++) {
		f = st->files[i];
		if (f->ino == tm->ino && f->dev_major == tm->dev_major &&
		    f->dev_minor == tm->dev_minor)
			return f;
	}
	if (st->nr_files == 64)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	st->files[st->nr_files++] = f;
	f->dev_major = tm->dev_major;
	f->dev_minor = tm->dev_minor;
	f->ino = tm->ino;
	f->bad = true;
	fd = open(tm->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return f;
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_ino == tm->ino &&
	    sb.st_size > 0) {
		void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m != MAP_FAILED) {
			f->img = m;
			f->size = (size_t)sb.st_size;
			lu_parse(f);
		}
	}
	close(fd);
	return f;
}

static struct lu_map *lu_resolve(struct lu_arg *a, size_t i)
{
	struct lu_map *lm = &a->lp->maps[i];
	const struct fl_tmap *tm = &a->p->maps[i];
	struct lu_file *f;

	if (lm->state)
		return lm->state == 1 ? lm : NULL;
	lm->state = 2;
	f = lu_file_get(a->st, tm);
	if (!f || f->bad)
		return NULL;
	for (size_t k = 0; k < f->nr_segs; k++) {
		uint64_t off = f->segs[k].off, page = off & ~0xfffull;

		if (tm->pgoff >= page && tm->pgoff < off + f->segs[k].filesz) {
			/* start maps file offset pgoff, at vaddr pgoff - off + vaddr */
			lm->bias = tm->start - (tm->pgoff - off + f->segs[k].vaddr);
			lm->f = f;
			lm->lo = f->lo + lm->bias;
			lm->hi = f->hi + lm->bias;
			lm->state = 1;
			break;
		}
	}
	if (lm->state != 1)
		return NULL;
	if (f->has_hdr) {
		lm->has_di = true;
		lm->di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
		lm->di.start_ip = tm->start;
		lm->di.end_ip = tm->end;
		lm->di.u.rti.name_ptr = 0;
		lm->di.u.rti.segbase = f->hdr_vaddr + lm->bias;
		lm->di.u.rti.table_data = f->table_vaddr + lm->bias;
		/* in words; each entry is two int32 */
		lm->di.u.rti.table_len = f->fde_count * 8 / sizeof(unw_word_t);
	}
	return lm;
}

static bool lu_read_image(const struct lu_map *lm, unw_word_t addr, unw_word_t *valp)
{
	uint64_t off;

	if (addr < lm->lo || addr >= lm->hi || !lu_file_off(lm->f, addr - lm->bias, &off))
		return false;
	if (off + 8 <= lm->f->size) {
		memcpy(valp, lm->f->img + off, 8);
	} else {
		*valp = 0;
		memcpy(valp, lm->f->img + off, lm->f->size - off);
	}
	return true;
}

static int lu_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write,
			 void *arg)
{
	struct lu_arg *a = arg;
	const struct sample *s = a->s;
	uint64_t sp = s->regs[FL_UNWIND_REG_SP];
	ssize_t i;

	(void)as;
	if (write)
		return -UNW_EINVAL;
	if (addr >= sp && addr - sp <= s->size && s->size - (addr - sp) >= 8) {
		memcpy(valp, s->stack + (addr - sp), 8);
		return 0;
	}
	/* An ELF image: the .eh_frame_hdr table, FDEs and CIEs, code. */
	if (a->lp->maps[a->lp->last].state == 1 && lu_read_image(&a->lp->maps[a->lp->last], addr, valp))
		return 0;
	for (size_t k = 0; k < a->p->nr_maps; k++)
		if (a->lp->maps[k].state == 1 && lu_read_image(&a->lp->maps[k], addr, valp)) {
			a->lp->last = k;
			return 0;
		}
	i = map_index(a->p, addr);
	if (i >= 0 && !a->lp->maps[i].state) {
		struct lu_map *lm = lu_resolve(a, (size_t)i);

		if (lm && lu_read_image(lm, addr, valp)) {
			a->lp->last = (size_t)i;
			return 0;
		}
	}
	if (addr >= sp)
		a->past_copy = true;
	return -UNW_EINVAL;
}

static int lu_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp, int write,
			 void *arg)
{
	struct lu_arg *a = arg;

	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	if (reg < 0 || reg >= FL_UNWIND_NR_REGS)
		return -UNW_EBADREG;
	/* libunwind's x86-64 numbering is DWARF's, as is the sample's. */
	*valp = a->s->regs[reg];
	return 0;
}

static int lu_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
			   void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EINVAL;
}

static int lu_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	(void)as, (void)c, (void)arg;
	return -UNW_EINVAL;
}

static int lu_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			     int need_unwind_info, void *arg)
{
	struct lu_arg *a = arg;
	ssize_t i = map_index(a->p, ip);
	struct lu_map *lm;

	if (i < 0)
		return -UNW_ENOINFO;
	lm = lu_resolve(a, (size_t)i);
	if (!lm || !lm->has_di)
		return -UNW_ENOINFO;
	return _Ux86_64_dwarf_search_unwind_table(as, ip, &lm->di, pi, need_unwind_info, arg);
}

static void lu_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as, (void)pi, (void)arg; /* libunwind frees the DWARF unwind info itself */
}

static int lu_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void)as, (void)dilap, (void)arg;
	return -UNW_ENOINFO;
}

static unw_accessors_t lu_accessors = {
	.find_proc_info = lu_find_proc_info,
	.put_unwind_info = lu_put_unwind_info,
	.get_dyn_info_list_addr = lu_get_dyn_info_list_addr,
	.access_mem = lu_access_mem,
	.access_reg = lu_access_reg,
	.access_fpreg = lu_access_fpreg,
	.resume = lu_resume,
	.get_proc_name = NULL,
};

static void *lu_new(size_t cache, int policy)
{
	struct lu_state *st = calloc(1, sizeof(*st));

	if (!st)
		die("out of memory\n");
	for (size_t k = 0; k < nr_progs; k++) {
		st->lp[k].as = unw_create_addr_space(&lu_accessors, 0);
		if (!st->lp[k].as)
			die("unw_create_addr_space failed\n");
		if (unw_set_caching_policy(st->lp[k].as, (unw_caching_policy_t)policy))
			die("unw_set_caching_policy failed\n");
		if (cache && unw_set_cache_size(st->lp[k].as, cache, 0))
			die("unw_set_cache_size(%zu) failed\n", cache);
		/*
		 * A per-thread cache is one for all address spaces, checked
		 * against the space's generation only: give each space its
		 * own, so that switching processes flushes it instead of
		 * reusing another process's entries for the same pc.
		 */
		if (policy == UNW_CACHE_PER_THREAD)
			for (size_t g = 0; g <= k; g++)
				unw_flush_cache(st->lp[k].as, 0, 0);
	}
	return st;
}

static size_t lu_unwind(void *state, const struct sample *smp, uint64_t *ips, int *outcome)
{
	struct lu_state *st = state;
	struct lu_arg a = {.st = st, .lp = &st->lp[smp->prog], .p = &progs[smp->prog], .s = smp};
	unw_cursor_t c;
	unw_word_t ip;
	size_t n = 0;
	int r;

	if (unw_init_remote(&c, a.lp->as, &a) < 0 || unw_get_reg(&c, UNW_REG_IP, &ip) < 0) {
		ips[n++] = smp->regs[FL_UNWIND_REG_IP];
		*outcome = OUT_FAILED;
		return n;
	}
	ips[n++] = ip;
	for (;;) {
		if (n == MAX_FRAMES) {
			*outcome = OUT_TRUNCATED;
			return n;
		}
		r = unw_step(&c);
		if (r == 0) {
			*outcome = OUT_COMPLETE;
			return n;
		}
		if (r < 0 || unw_get_reg(&c, UNW_REG_IP, &ip) < 0) {
			*outcome = a.past_copy ? OUT_TRUNCATED : OUT_FAILED;
			return n;
		}
		if (!ip) { /* flamed stops at a zero return address: count it the same */
			*outcome = OUT_COMPLETE;
			return n;
		}
		ips[n++] = ip;
	}
}

static size_t lu_files(void *state)
{
	return ((struct lu_state *)state)->nr_files + ((struct lu_state *)state)->vdso_tried;
}

/* --- running a method in a child ---------------------------------------------------- */

struct method {
	const char *name, *tag;
	void *(*create)(size_t cache, int policy);
	size_t (*unwind)(void *st, const struct sample *s, uint64_t *ips, int *outcome);
	size_t (*files)(void *st);
	size_t cache;
	int policy;
};

/* What a child hands back, in a MAP_SHARED block, followed by the cold pass's frames. */
struct result {
	int ok;
	uint64_t cold_ns[MAX_PROGS], cold_total_ns;
	uint64_t warm_ns[MAX_PASSES][MAX_PROGS], warm_total_ns[MAX_PASSES];
	int64_t peak_kb, rss_end_kb, anon_kb, file_kb, heap_bytes;
	uint64_t files;
	uint64_t cold_warm_diff; /* samples whose frames differ between cold and last warm pass */
};

struct frames {
	uint16_t n;
	uint8_t outcome;
	uint64_t ips[MAX_FRAMES];
};

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t len = strlen(key);

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static void pass(const struct method *m, void *st, struct frames *out, uint64_t *prog_ns)
{
	for (size_t k = 0; k < nr_progs; k++) {
		uint64_t t0 = now_ns();

		for (size_t i = progs[k].first; i < progs[k].first + progs[k].count; i++) {
			int oc;

			out[i].n = (uint16_t)m->unwind(st, &samples[i], out[i].ips, &oc);
			out[i].outcome = (uint8_t)oc;
		}
		prog_ns[k] = now_ns() - t0;
	}
}

static void run_child(const struct method *m, size_t warm, struct frames *cold, struct frames *last,
		      struct result *res, struct frames *shared)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	long rss0, anon0, file0;
	size_t heap0;
	void *st;
	uint64_t t0, t1;

	/* Our own copies of the output buffers now, so that the baseline holds them. */
	memset(cold, 0, nr_samples * sizeof(*cold));
	memset(last, 0, nr_samples * sizeof(*last));
	if (fd >= 0) {
		if (write(fd, "5", 1) != 1) { /* resets VmHWM to VmRSS */
		}
		close(fd);
	}
	rss0 = status_kb("VmRSS");
	anon0 = status_kb("RssAnon");
	file0 = status_kb("RssFile");
	heap0 = heap_in_use();
	t0 = now_ns();
	st = m->create(m->cache, m->policy);
	pass(m, st, cold, res->cold_ns);
	t1 = now_ns();
	res->cold_total_ns = t1 - t0; /* with the unwinder's creation */
	for (size_t w = 0; w < warm; w++) {
		uint64_t w0 = now_ns();

		pass(m, st, last, res->warm_ns[w]);
		res->warm_total_ns[w] = now_ns() - w0;
	}
	res->peak_kb = status_kb("VmHWM") - rss0;
	res->rss_end_kb = status_kb("VmRSS") - rss0;
	res->anon_kb = status_kb("RssAnon") - anon0;
	res->file_kb = status_kb("RssFile") - file0;
	res->heap_bytes = (int64_t)heap_in_use() - (int64_t)heap0;
	res->files = m->files(st);
	for (size_t i = 0; i < nr_samples; i++)
		if (cold[i].n != last[i].n || cold[i].outcome != last[i].outcome ||
		    memcmp(cold[i].ips, last[i].ips, cold[i].n * sizeof(uint64_t)))
			res->cold_warm_diff++;
	memcpy(shared, cold, nr_samples * sizeof(*cold));
	res->ok = 1;
}

/* --- the report ----------------------------------------------------------------------- */

struct names {
	char paths[32][256];
	struct fl_elfsyms *syms[32];
	size_t n;
};

static void describe(const struct prog *p, struct names *nm, uint64_t addr, char *buf, size_t len)
{
	ssize_t i = map_index(p, addr);
	const struct fl_tmap *m;
	struct fl_elfsyms *syms = NULL;
	const struct fl_elfsym *s;
	const char *base;
	uint64_t vaddr;

	if (i < 0) {
		snprintf(buf, len, "%#lx [unmapped]", (unsigned long)addr);
		return;
	}
	m = &p->maps[i];
	base = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
	for (size_t k = 0; k < nm->n; k++)
		if (!strcmp(nm->paths[k], m->path))
			syms = nm->syms[k];
	if (!syms && nm->n < 32 && m->path[0] == '/' && !fl_elfsyms__open(m->path, &syms)) {
		snprintf(nm->paths[nm->n], sizeof(nm->paths[0]), "%s", m->path);
		nm->syms[nm->n++] = syms;
	}
	if (syms && !fl_elfsyms__offset_to_vaddr(syms, addr - m->start + m->pgoff, &vaddr) &&
	    (s = fl_elfsyms__find(syms, vaddr)))
		snprintf(buf, len, "%s+%#lx (%s)", s->name, (unsigned long)(vaddr - s->addr), base);
	else
		snprintf(buf, len, "%s+%#lx", base, (unsigned long)(addr - m->start + m->pgoff));
}

static const char *const outcome_names[] = {"complete", "truncated", "failed"};

/*
 * Compares the frames of samples [from, to) of two methods: one table row
 * (shown == SIZE_MAX), or up to shown disagreements in detail.
 */
static void compare(const struct prog *p, const char *label, const struct frames *fa,
		    const struct frames *fb, size_t from, size_t to, const char *bname,
		    struct names *nm, size_t shown)
{
	size_t same = 0, dwl = 0, lul = 0, div = 0, oc[2][OUT__MAX] = {{0}}, nshown = 0, outdiff = 0;
	double d0 = 0, d1 = 0;
	char a[48], b[48];

	for (size_t i = from; i < to; i++) {
		const struct frames *x = &fa[i], *y = &fb[i];
		size_t common = 0, lim = x->n < y->n ? x->n : y->n;

		oc[0][x->outcome]++;
		oc[1][y->outcome]++;
		d0 += x->n;
		d1 += y->n;
		while (common < lim && x->ips[common] == y->ips[common])
			common++;
		if (x->n == y->n && common == lim) {
			same++;
			if (x->outcome == y->outcome)
				continue;
			outdiff++; /* same frames, told apart only by how the walk ended */
			common = lim ? lim - 1 : 0;
		} else if (common < lim)
			div++;
		else if (x->n > y->n)
			dwl++;
		else
			lul++;
		if (shown != SIZE_MAX && nshown < shown) {
			char sa[160], sb[160];

			nshown++;
			printf("  %s sample %zu: libdw %u frames (%s), %s %u frames (%s), same up to "
			       "frame %zu\n",
			       label, i - from, x->n, outcome_names[x->outcome], bname, y->n,
			       outcome_names[y->outcome], common);
			for (size_t j = common ? common - 1 : 0; j < common + 3 && (j < x->n || j < y->n);
			     j++) {
				if (j < x->n)
					describe(p, nm, x->ips[j], sa, sizeof(sa));
				else
					snprintf(sa, sizeof(sa), "-");
				if (j < y->n)
					describe(p, nm, y->ips[j], sb, sizeof(sb));
				else
					snprintf(sb, sizeof(sb), "-");
				printf("    #%-3zu %-60.60s | %.60s\n", j, sa, sb);
			}
		}
	}
	if (shown != SIZE_MAX)
		return;
	snprintf(a, sizeof(a), "%zu/%zu/%zu", oc[0][0], oc[0][1], oc[0][2]);
	snprintf(b, sizeof(b), "%zu/%zu/%zu", oc[1][0], oc[1][1], oc[1][2]);
	printf("%-14s %6zu %8.2f%% %8.2f %8.2f %20s %20s %8zu %8zu %8zu %8zu\n", label, to - from,
	       100.0 * (double)same / (double)(to - from), d0 / (double)(to - from),
	       d1 / (double)(to - from), a, b, dwl, lul, div, outdiff);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

static void usage(void)
{
	fprintf(stderr, "usage: unwind_compare [-n N] [-F HZ] [-w PASSES] [-r ROUNDS] [-s STACK] "
			"[-d DIFFS] [-c CACHE] [-m lu,lubig,lupt,lunone] LABEL=CMDLINE...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int freq = 999, opt;
	size_t warm = 5, rounds = 3, diffs = 3, big_cache = 4096;
	uint32_t stack_copy = 16384;
	struct method methods[] = {
		{"libdw", "dw", dw_new, dw_unwind, dw_files, 0, 0},
		{"libunwind", "lu", lu_new, lu_unwind, lu_files, 0, UNW_CACHE_GLOBAL},
		{"libunwind-big", "lubig", lu_new, lu_unwind, lu_files, 0, UNW_CACHE_GLOBAL},
		{"libunwind-pt", "lupt", lu_new, lu_unwind, lu_files, 0, UNW_CACHE_PER_THREAD},
		{"libunwind-nocache", "lunone", lu_new, lu_unwind, lu_files, 0, UNW_CACHE_NONE},
	};
	size_t NR_METHODS = sizeof(methods) / sizeof(methods[0]);
	struct result *res[8][MAX_ROUNDS];
	struct frames *fr[8][MAX_ROUNDS], *cold, *last;
	size_t fr_size;

	const char *only = NULL;

	while ((opt = getopt(argc, argv, "n:F:w:r:s:d:c:m:")) != -1) {
		switch (opt) {
		case 'm':
			only = optarg;
			break;
		case 'n':
			want_per_prog = strtoul(optarg, NULL, 10);
			break;
		case 'F':
			freq = atoi(optarg);
			break;
		case 'w':
			warm = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rounds = strtoul(optarg, NULL, 10);
			break;
		case 's':
			stack_copy = (uint32_t)strtoul(optarg, NULL, 10) & ~7u;
			break;
		case 'd':
			diffs = strtoul(optarg, NULL, 10);
			break;
		case 'c':
			big_cache = strtoul(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (optind == argc || !warm || warm > MAX_PASSES || !rounds || rounds > MAX_ROUNDS ||
	    argc - optind > MAX_PROGS)
		usage();
	methods[2].cache = big_cache;
	methods[3].cache = big_cache;
	{
		char name[32];

		snprintf(name, sizeof(name), "libunwind-c%zu", big_cache);
		methods[2].name = strdup(name);
		snprintf(name, sizeof(name), "libunwind-pt-c%zu", big_cache);
		methods[3].name = strdup(name);
	}

	if (only) { /* libdw always, then the libunwind variants named (tags, comma-separated) */
		size_t k = 1;
		char list[256];

		snprintf(list, sizeof(list), ",%s,", only);
		for (size_t m = 1; m < NR_METHODS; m++) {
			char tag[40];

			snprintf(tag, sizeof(tag), ",%s,", methods[m].tag);
			if (strstr(list, tag))
				methods[k++] = methods[m];
		}
		NR_METHODS = k;
	}

	/* Capture. */
	double secs = (double)want_per_prog / freq * 1.5 + 1;
	char secs_arg[32];

	snprintf(secs_arg, sizeof(secs_arg), "%.1f", secs + 2);
	for (int a = optind; a < argc; a++) {
		struct prog *p = &progs[nr_progs];
		char *eq = strchr(argv[a], '='), *tok, *save = NULL;
		size_t n = 0;
		uint64_t t0;
		int err;

		if (!eq)
			usage();
		*eq = 0;
		snprintf(p->label, sizeof(p->label), "%s", argv[a]);
		for (tok = strtok_r(eq + 1, " ", &save); tok && n < 63; tok = strtok_r(NULL, " ", &save))
			p->argv[n++] = !strcmp(tok, "{SECS}") ? secs_arg : tok;
		p->argv[n] = NULL;
		if (!n)
			usage();
		nr_progs++;
		t0 = now_ns();
		err = capture(p, freq, stack_copy, secs);
		if (err == -EACCES || err == -EPERM) {
			fprintf(stderr, "perf_event_open: %s: skipping\n", strerror(-err));
			return 77;
		}
		if (err)
			die("perf_event_open: %s\n", strerror(-err));
		fprintf(stderr, "captured %-14s %5zu samples in %.1f s, %zu executable mappings\n",
			p->label, p->count, (double)(now_ns() - t0) / 1e9, p->nr_maps);
	}
	{
		size_t bytes = 0;

		for (size_t i = 0; i < nr_samples; i++)
			bytes += samples[i].size;
		fprintf(stderr, "%zu samples in memory, %.1f MiB of stack copies (%.0f B each on average)\n",
			nr_samples, (double)bytes / 1048576.0, (double)bytes / (double)nr_samples);
	}

	/* Unwind: every method, every round, in a fresh child. */
	fr_size = nr_samples * sizeof(struct frames);
	cold = malloc(fr_size);
	last = malloc(fr_size);
	if (!cold || !last)
		die("out of memory\n");
	for (size_t r = 0; r < rounds; r++)
		for (size_t m = 0; m < NR_METHODS; m++) {
			void *blk = mmap(NULL, sizeof(struct result) + fr_size, PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
			pid_t pid;
			int status;

			if (blk == MAP_FAILED)
				die("mmap: %s\n", strerror(errno));
			res[m][r] = blk;
			fr[m][r] = (struct frames *)((char *)blk + sizeof(struct result));
			fflush(NULL);
			pid = fork();
			if (pid < 0)
				die("fork: %s\n", strerror(errno));
			if (!pid) {
				run_child(&methods[m], warm, cold, last, res[m][r], fr[m][r]);
				_exit(0);
			}
			if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
			    WEXITSTATUS(status) || !res[m][r]->ok)
				die("%s: the child failed (status %#x)\n", methods[m].name, status);
		}

	/* Timing. */
	printf("\n== time per sample (ns), %zu samples, %zu rounds; warm = %zu passes per round ==\n",
	       nr_samples, rounds, warm);
	printf("%-22s %10s %10s %10s %10s %9s %10s %10s %10s %10s %10s %6s\n", "method", "cold(med)",
	       "cold(min)", "warm(med)", "warm(min)", "ns/frame", "peakRSS", "endRSS", "anon", "file",
	       "heap", "files");
	for (size_t m = 0; m < NR_METHODS; m++) {
		uint64_t c[MAX_ROUNDS], w[MAX_ROUNDS * MAX_PASSES], pk[MAX_ROUNDS];
		size_t nw = 0;
		double cmed, wmed, cmin, wmin;

		for (size_t r = 0; r < rounds; r++) {
			c[r] = res[m][r]->cold_total_ns;
			pk[r] = (uint64_t)res[m][r]->peak_kb;
			for (size_t x = 0; x < warm; x++)
				w[nw++] = res[m][r]->warm_total_ns[x];
		}
		cmed = median(c, rounds) / (double)nr_samples;
		cmin = (double)c[0] / (double)nr_samples;
		wmed = median(w, nw) / (double)nr_samples;
		wmin = (double)w[0] / (double)nr_samples;
		double frames = 0;

		for (size_t i = 0; i < nr_samples; i++)
			frames += fr[m][0][i].n;
		printf("%-22s %10.0f %10.0f %10.0f %10.0f %9.0f %8.0fKB %8ldKB %8ldKB %8ldKB %8.0fKB "
		       "%6lu\n",
		       methods[m].name, cmed, cmin, wmed, wmin, wmed * (double)nr_samples / frames,
		       median(pk, rounds),
		       (long)res[m][0]->rss_end_kb, (long)res[m][0]->anon_kb,
		       (long)res[m][0]->file_kb, (double)res[m][0]->heap_bytes / 1024.0,
		       (unsigned long)res[m][0]->files);
	}
	printf("\n-- per program: median ns/sample (cold = first pass of a fresh unwinder, programs in "
	       "this order, so later ones find shared libraries cached) --\n");
	for (size_t m = 0; m < NR_METHODS; m++)
		printf("%s%s = %s", m ? ", " : "", methods[m].tag, methods[m].name);
	printf("; -c cold, -w warm\n%-14s %6s", "program", "N");
	for (size_t m = 0; m < NR_METHODS; m++)
		printf(" %8s-c %8s-w", methods[m].tag, methods[m].tag);
	printf("\n");
	for (size_t k = 0; k < nr_progs; k++) {
		printf("%-14s %6zu", progs[k].label, progs[k].count);
		for (size_t m = 0; m < NR_METHODS; m++) {
			uint64_t c[MAX_ROUNDS], w[MAX_ROUNDS * MAX_PASSES];
			size_t nw = 0;
			double cnt = (double)(progs[k].count ? progs[k].count : 1);

			for (size_t r = 0; r < rounds; r++) {
				c[r] = res[m][r]->cold_ns[k];
				for (size_t x = 0; x < warm; x++)
					w[nw++] = res[m][r]->warm_ns[x][k];
			}
			printf(" %10.0f %10.0f", median(c, rounds) / cnt, median(w, nw) / cnt);
		}
		printf("\n");
	}

	/* Frames. */
	printf("\n== frames: libdw against each libunwind variant (round 1, cold pass) ==\n"
	       "identical: same number of frames, same addresses; C/T/F: complete/truncated/failed;\n"
	       "dwLonger/luLonger: one list is a prefix of the other; diverge: an address differs;\n"
	       "outcome: identical frames but a different outcome (counted as identical)\n");
	for (size_t m = 0; m < NR_METHODS; m++) {
		uint64_t cw = 0, rr = 0;

		for (size_t r = 0; r < rounds; r++) {
			cw += res[m][r]->cold_warm_diff;
			if (r)
				for (size_t i = 0; i < nr_samples; i++)
					rr += fr[m][r][i].n != fr[m][0][i].n ||
					      memcmp(fr[m][r][i].ips, fr[m][0][i].ips,
						     fr[m][0][i].n * 8);
		}
		printf("%-22s samples differing cold vs warm pass: %lu, between rounds: %lu\n",
		       methods[m].name, (unsigned long)cw, (unsigned long)rr);
	}
	for (size_t m = 1; m < NR_METHODS; m++) {
		struct names nm = {.n = 0};

		printf("\n-- libdw vs %s --\n", methods[m].name);
		printf("%-14s %6s %9s %8s %8s %20s %20s %8s %8s %8s %8s\n", "program", "N", "identical",
		       "dwDepth", "luDepth", "libdw C/T/F", "libunwind C/T/F", "dwLonger", "luLonger",
		       "diverge", "outcome");
		for (int show = 0; show < 2; show++)
			for (size_t k = 0; k <= nr_progs; k++) {
				size_t from = k < nr_progs ? progs[k].first : 0;
				size_t to = k < nr_progs ? from + progs[k].count : nr_samples;

				if (to > from)
					compare(&progs[k < nr_progs ? k : 0], k < nr_progs ? progs[k].label : "ALL",
						fr[0][0], fr[m][0], from, to, methods[m].name, &nm,
						show ? (k < nr_progs ? diffs : 0) : SIZE_MAX);
			}
		for (size_t k = 0; k < nm.n; k++)
			fl_elfsyms__free(nm.syms[k]);
	}
	return 0;
}
