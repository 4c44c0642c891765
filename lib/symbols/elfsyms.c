// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * PT_LOAD segments and function symbols of one ELF file or in-memory image,
 * with those of its separate debug info, via libelf.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/symbols/elfsyms.h"
#include "flamed/files/regfile.h"
#include "symbols/elfsize.h"

/*
 * A zero-size symbol (hand-written assembly often has no .size) reaches to
 * the next symbol or the end of its section. When its section is unknown
 * (SHN_ABS, SHN_XINDEX, a section with no address), it gets at most this.
 */
#define ZERO_SIZE_CAP 4096

/*
 * find() looks back this many symbols when the nearest one below an address
 * is too short to hold it: a larger function may enclose a small one (an
 * alternate entry point in assembly). Bounded so lookups stay O(log n).
 */
#define ENCLOSING_LOOKBACK 8

/*
 * PLT sections larger than this are not read for stub names (libLLVM's .plt
 * is a few hundred KiB); relocation sections larger than this are not read.
 */
#define PLT_SECTION_MAX (16u << 20)
#define RELA_SECTION_MAX (64u << 20)

/*
 * The names of a string table this big are neither copied nor read when
 * the symbols are: each is read from the file when its symbol is first
 * found (struct name_store). A profile names a few hundred functions of a
 * library whose table holds a hundred thousand: Rust's librustc_driver has
 * 20 MB of names, libLLVM 18 MB.
 */
#define LAZY_STRTAB_MIN (1u << 20)
/*
 * A name read from a file is at most this long (a longer one names
 * nothing): a hostile table without NULs costs this much a symbol found.
 */
#define LAZY_NAME_MAX (64u << 10)

struct load_seg {
	uint64_t off, vaddr, filesz, memsz;
	bool exec;
};

/* A string table whose names are read when needed: in the file at fd (a copy of the caller's). */
struct name_file {
	int fd;
	uint64_t off, size; /* the table's bytes in the file */
	struct stat st;	    /* the file when the symbols were read: names are read from that only */
};

/*
 * Where the name of a symbol not copied is: at off in files[LAZY_FILE(bits)
 * - 1], a label's if bits has LAZY_LABEL (name_ok()). For a symbol, bits
 * >> LAZY_ALIAS_SHIFT is 0, or 1 + the index in aliases of the first of the
 * aliases its name is chosen from when read (cand__better()); the last of
 * those has LAZY_LAST.
 */
struct lazy_name {
	uint32_t off;
	uint32_t bits;
};

#define LAZY_FILE(bits) ((bits)&3u)
#define LAZY_LABEL 4u
#define LAZY_LAST 8u
#define LAZY_ALIAS_SHIFT 4

/*
 * The names read when needed (LAZY_STRTAB_MIN), for a symbol whose name
 * is NULL until fl_elfsyms__find() or fl_elfsyms__at() reads it. Held by
 * pointer, so that those two, which take a const fl_elfsyms, can fill it.
 */
struct name_store {
	struct name_file files[3];
	size_t nr_files;
	struct lazy_name *lazy; /* by symbol */
	struct lazy_name *aliases;
	size_t nr_aliases, cap_aliases;
	char **read; /* the names read so far, each its own allocation */
	size_t nr_read, cap_read, read_bytes;
};

struct fl_elfsyms {
	struct fl_elfsym *syms; /* sorted by addr, one per address */
	size_t nr;
	char *names; /* every name copied, NUL-terminated, one after the other */
	size_t names_len;
	struct name_store *ns; /* the names not copied, or NULL */
	struct load_seg *segs;
	size_t nr_segs;
	enum fl_debuginfo_source source; /* debug info the symbols came from too */
};

/*
 * A symbol while parsing; name points into the ELF string table data, or
 * into the names built for PLT stubs (struct plt_names).
 */
struct cand {
	uint64_t addr, size;
	const char *name; /* NULL: left in its file (file, stroff), neither read nor measured */
	union {
		uint32_t len;	/* of the name (longer ones are left out) */
		uint32_t alias; /* name left in its file: keep_aliases()'s */
	};
	uint32_t stroff;  /* its offset in its string table */
	uint32_t reach;	  /* to the end of its section: a zero-size symbol stops there */
	uint8_t rank;	  /* binding: lower is preferred */
	bool label;	  /* STT_NOTYPE in code: names only what no function covers */
	uint8_t file;	  /* 0: name is the name's bytes; else it stays in ns->files[file - 1] */
};

/* Label ranks follow every function's: a function at the same address names it. */
#define RANK_LABEL 4
/* A PLT stub's name is made up ("puts@plt"): any real symbol there wins. */
#define RANK_PLT 3

/* Section address ranges by index, to bound zero-size symbols. */
struct sec_range {
	uint64_t start, end;
	bool exec;
};

/* The "sym@plt" names made while reading one set of files, freed after build_syms(). */
struct plt_names {
	char **v;
	size_t nr, cap;
};

static void plt_names__free(struct plt_names *p)
{
	for (size_t i = 0; i < p->nr; i++)
		free(p->v[i]);
	free(p->v);
}

bool fl_elfsym__is_mapping_symbol(const char *name)
{
	if (!name || name[0] != '$')
		return false;
	switch (name[1]) {
	case 'a':
	case 'd':
	case 't':
	case 'x':
		break;
	default:
		return false;
	}
	if (name[2] == '\0' || name[2] == '.')
		return true;
	/* RISC-V names the ISA after $x: "$xrv64i2p1_m2p0". */
	return name[1] == 'x' && name[2] == 'r' && name[3] == 'v';
}

static void name_store__free(struct name_store *ns)
{
	if (!ns)
		return;
	for (size_t i = 0; i < ns->nr_files; i++)
		close(ns->files[i].fd);
	for (size_t i = 0; i < ns->nr_read; i++)
		free(ns->read[i]);
	free(ns->read);
	free(ns->lazy);
	free(ns->aliases);
	free(ns);
}

void fl_elfsyms__free(struct fl_elfsyms *e)
{
	if (!e)
		return;
	free(e->syms);
	free(e->names);
	name_store__free(e->ns);
	free(e->segs);
	free(e);
}

DEFINE_FREE_FUNC(struct fl_elfsyms, fl_elfsyms__free)
DEFINE_FREE_FUNC(struct fl_debuginfo, fl_debuginfo__free)

static void elf_endp(Elf **elf)
{
	if (*elf)
		elf_end(*elf);
}

static int read_segments(Elf *elf, struct fl_elfsyms *e)
{
	size_t i, n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	if (!n)
		return 0;
	e->segs = calloc(n, sizeof(*e->segs));
	if (!e->segs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		struct load_seg *s;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (ph.p_offset > UINT64_MAX - ph.p_filesz)
			continue;
		s = &e->segs[e->nr_segs++];
		s->off = ph.p_offset;
		s->vaddr = ph.p_vaddr;
		s->filesz = ph.p_filesz;
		s->memsz = ph.p_memsz;
		s->exec = ph.p_flags & PF_X;
	}
	return 0;
}

/* [start, end) of every allocated section, indexed like the section headers. */
static int read_sections(Elf *elf, struct sec_range **ret, size_t *nr)
{
	struct sec_range *r;
	Elf_Scn *scn = NULL;
	size_t n;

	if (elf_getshdrnum(elf, &n))
		return -EINVAL;
	r = calloc(n ? n : 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	while ((scn = elf_nextscn(elf, scn))) {
		size_t idx = elf_ndxscn(scn);
		GElf_Shdr sh;

		if (idx >= n || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (sh.sh_addr > UINT64_MAX - sh.sh_size)
			continue;
		r[idx].start = sh.sh_addr;
		r[idx].end = sh.sh_addr + sh.sh_size;
		r[idx].exec = sh.sh_flags & SHF_EXECINSTR;
	}
	*ret = r;
	*nr = n;
	return 0;
}

static unsigned bind_rank(unsigned char bind)
{
	switch (bind) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		return 0;
	case STB_WEAK:
		return 1;
	case STB_LOCAL:
		return 2;
	default:
		return 3;
	}
}

static bool is_func(unsigned char type)
{
	return type == STT_FUNC || type == STT_GNU_IFUNC;
}

/*
 * A label in code: an STT_NOTYPE symbol defined in an executable section,
 * as hand-written assembly leaves them (ld.so's _start and _dl_start_user).
 * Assemblers' local labels (.L*) are not labels anyone wrote: name_ok() drops those.
 */
static bool is_code_label(const GElf_Sym *sym, const struct sec_range *secs, size_t nr_secs)
{
	if (GELF_ST_TYPE(sym->st_info) != STT_NOTYPE || sym->st_shndx >= SHN_LORESERVE ||
	    sym->st_shndx >= nr_secs || !secs[sym->st_shndx].exec)
		return false;
	return sym->st_value >= secs[sym->st_shndx].start && sym->st_value < secs[sym->st_shndx].end;
}

/* The names of a symbol table: its linked string table, bounds known. */
struct strtab {
	const char *buf;
	size_t size;
	GElf_Shdr sh;
};

/*
 * Whether the names of the string table whose header is sh, in the file at
 * fd (-1: none), are left there: a big table the file holds as it is (not
 * compressed), offsets that fit.
 */
static bool strtab__lazy(const GElf_Shdr *sh, int fd)
{
	return fd >= 0 && sh->sh_size >= LAZY_STRTAB_MIN && sh->sh_size <= UINT32_MAX &&
	       !(sh->sh_flags & SHF_COMPRESSED) && sh->sh_offset <= (uint64_t)INT64_MAX - sh->sh_size;
}

/*
 * The string table of the symbol table symsh: its header, and unless
 * header_only, its bytes read (whole: libelf reads a section at once).
 */
static int strtab__open(Elf *elf, const GElf_Shdr *symsh, bool header_only, struct strtab *st)
{
	Elf_Scn *scn = elf_getscn(elf, symsh->sh_link);
	Elf_Data *d;

	if (!scn || !gelf_getshdr(scn, &st->sh) || st->sh.sh_type != SHT_STRTAB)
		return -EINVAL;
	st->buf = NULL;
	st->size = st->sh.sh_size;
	if (header_only)
		return 0;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return -EINVAL;
	st->buf = d->d_buf;
	st->size = d->d_size;
	return 0;
}

/* Whether f's file is still the one its symbols were read from (its owner may rewrite it). */
static bool name_file__same(const struct name_file *f)
{
	struct stat now;

	return !fstat(f->fd, &now) && now.st_size == f->st.st_size &&
	       now.st_mtim.tv_sec == f->st.st_mtim.tv_sec &&
	       now.st_mtim.tv_nsec == f->st.st_mtim.tv_nsec &&
	       now.st_ctim.tv_sec == f->st.st_ctim.tv_sec &&
	       now.st_ctim.tv_nsec == f->st.st_ctim.tv_nsec;
}

/*
 * The name at off of the string table of size bytes at base in the file
 * at fd, read now into a new NUL-terminated buffer of *len + 1 bytes (the
 * caller frees), or NULL: out of the table, or no NUL before its end or
 * LAZY_NAME_MAX bytes. A few hundred bytes are read first, more only for a
 * longer name.
 */
static char *pread_name(int fd, uint64_t base, uint64_t size, uint64_t off, size_t *len)
{
	size_t got = 0, want = 256, room;
	char *buf = NULL, *grown, *nul;

	if (off >= size)
		return NULL;
	room = size - off < LAZY_NAME_MAX + 1 ? (size_t)(size - off) : LAZY_NAME_MAX + 1;
	for (;;) {
		size_t n = want < room ? want : room;

		grown = realloc(buf, n);
		if (!grown)
			break;
		buf = grown;
		if (fl_regfile__pread(fd, buf + got, n - got, base + off + got) != (ssize_t)(n - got))
			break;
		nul = memchr(buf + got, '\0', n - got);
		if (nul) {
			*len = (size_t)(nul - buf);
			grown = realloc(buf, *len + 1); /* what it holds is what is counted */
			return grown ? grown : buf;
		}
		got = n;
		if (n == room)
			break;
		want = n * 8;
	}
	free(buf);
	return NULL;
}

/* pread_name() from f, or NULL when its file changed since its symbols were read (nothing is read from it any more). */
static char *name_file__read(const struct name_file *f, uint64_t off, size_t *len)
{
	if (off >= f->size || !name_file__same(f))
		return NULL;
	return pread_name(f->fd, f->off, f->size, off, len);
}

/* Files[] index + 1 of the table st (its header) of the file at fd, registered in *nsp (made if NULL). */
static int name_store__add_file(struct name_store **nsp, const struct strtab *st, int fd,
				uint8_t *file)
{
	struct name_store *ns = *nsp;
	int dup;

	if (!ns) {
		ns = calloc(1, sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		*nsp = ns;
	}
	if (ns->nr_files == ARRAY_SIZE(ns->files))
		return -EINVAL;
	dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return -errno;
	ns->files[ns->nr_files] =
		(struct name_file){.fd = dup, .off = st->sh.sh_offset, .size = st->size};
	if (fstat(dup, &ns->files[ns->nr_files].st)) {
		int err = -errno;

		close(dup);
		return err;
	}
	ns->nr_files++;
	*file = (uint8_t)ns->nr_files;
	return 0;
}

/* The NUL-terminated name at off, or NULL when it runs out of the table. */
static const char *strtab__name(const struct strtab *st, size_t off, size_t *len)
{
	const char *end;

	if (off >= st->size)
		return NULL;
	end = memchr(st->buf + off, '\0', st->size - off);
	if (!end)
		return NULL;
	*len = (size_t)(end - (st->buf + off));
	return st->buf + off;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/*
 * The candidate of symbol sym if its type, section and value make it one
 * (name aside): its fields but the name's. False when it is none.
 */
static bool cand_of(const GElf_Sym *sym, bool arm, const struct sec_range *secs, size_t nr_secs,
		    struct cand *x)
{
	bool label;

	if (sym->st_shndx == SHN_UNDEF || !sym->st_value)
		return false;
	if (!is_func(GELF_ST_TYPE(sym->st_info)) && GELF_ST_TYPE(sym->st_info) != STT_NOTYPE)
		return false;
	label = !is_func(GELF_ST_TYPE(sym->st_info));
	if (label && !is_code_label(sym, secs, nr_secs))
		return false;
	*x = (struct cand){.addr = sym->st_value, .size = sym->st_size, .label = label};
	/* ARM marks Thumb functions with bit 0 of the value. */
	if (arm)
		x->addr &= ~(uint64_t)1;
	x->rank = (uint8_t)(bind_rank(GELF_ST_BIND(sym->st_info)) + (label ? RANK_LABEL : 0));
	x->reach = ZERO_SIZE_CAP;
	if (sym->st_shndx < SHN_LORESERVE && sym->st_shndx < nr_secs) {
		const struct sec_range *r = &secs[sym->st_shndx];

		/* Sections of 4 GiB and more: their zero-size symbols reach less far. */
		if (r->start <= x->addr && x->addr < r->end)
			x->reach = r->end - x->addr > UINT32_MAX ? UINT32_MAX : (uint32_t)(r->end - x->addr);
	}
	return true;
}

/* Whether a name (len bytes at name, NUL after) keeps its symbol (label: a label's): not a mapping symbol nor a .L label. */
static bool name_ok(bool label, const char *name, size_t len)
{
	return len && !fl_elfsym__is_mapping_symbol(name) &&
	       !(label && name[0] == '.' && name[1] == 'L');
}

/*
 * A symbol table's entries in order. Read from the file at fd a chunk at a
 * time where the table is a plain array of native Elf64_Sym (any x86-64 or
 * arm64 file): libelf's elf_getdata() would copy the whole table into a
 * new buffer, 6 MB for Rust's libLLVM, paying a page fault every 4 KiB of
 * it, for the third of the entries that are functions. Elsewhere (an image
 * in memory, a compressed table, another class or byte order) libelf's
 * copy, converted, is read.
 */
struct symreader {
	Elf_Data *d;	 /* libelf's copy, or NULL: read from fd */
	int fd;
	uint64_t off;	 /* of the table in the file */
	size_t n;	 /* entries */
	Elf64_Sym *buf;	 /* entries [first, first + nr) */
	size_t first, nr;
};

/* Entries read from a file at a time: 48 KiB. */
#define SYM_CHUNK 2048

static bool symreader__native(Elf *elf, int fd, const GElf_Shdr *sh)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	struct stat st;

	/*
	 * A table past the file's end is libelf's to refuse, as it is for
	 * others. (A size above INT64_MAX would wrap the sum's check.)
	 */
	return fd >= 0 && ident && ident[EI_CLASS] == ELFCLASS64 && ident[EI_DATA] == FL_HOST_ELFDATA &&
	       !elf_getbase(elf) && sh->sh_type != SHT_NOBITS && !(sh->sh_flags & SHF_COMPRESSED) &&
	       sh->sh_size <= (uint64_t)INT64_MAX &&
	       sh->sh_offset <= (uint64_t)INT64_MAX - sh->sh_size && !fstat(fd, &st) &&
	       sh->sh_offset + sh->sh_size <= (uint64_t)st.st_size;
}

/* 0, or no symbols to read (-ENOENT) or no memory. */
static int symreader__open(struct symreader *r, Elf *elf, int fd, Elf_Scn *scn, const GElf_Shdr *sh)
{
	size_t entsize;

	*r = (struct symreader){.fd = -1};
	if (symreader__native(elf, fd, sh)) {
		r->fd = fd;
		r->off = sh->sh_offset;
		r->n = sh->sh_size / sizeof(Elf64_Sym);
		r->buf = malloc(SYM_CHUNK * sizeof(*r->buf));
		return r->buf ? 0 : -ENOMEM;
	}
	r->d = elf_getdata(scn, NULL);
	entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!r->d || !r->d->d_buf || !entsize)
		return -ENOENT;
	r->n = r->d->d_size / entsize;
	if (r->n > INT_MAX)
		r->n = INT_MAX; /* gelf_getsym() takes an int index */
	return 0;
}

/*
 * Entry i of the table, read in order. False when it cannot be read: one
 * libelf will not convert (the next may be read), or past what the file
 * still holds (its owner cut it short since its headers were read: nothing after is).
 */
static bool symreader__get(struct symreader *r, size_t i, GElf_Sym *sym)
{
	if (r->d)
		return gelf_getsym(r->d, (int)i, sym);
	if (i - r->first >= r->nr) {
		size_t want = r->n - i < SYM_CHUNK ? r->n - i : SYM_CHUNK;
		ssize_t got = fl_regfile__pread(r->fd, r->buf, want * sizeof(*r->buf),
						r->off + (uint64_t)i * sizeof(*r->buf));

		r->first = i;
		r->nr = got > 0 ? (size_t)got / sizeof(*r->buf) : 0;
		if (!r->nr) {
			r->n = i;
			return false;
		}
	}
	/* GElf_Sym is Elf64_Sym. */
	*sym = r->buf[i - r->first];
	return true;
}

static void symreader__close(struct symreader *r)
{
	free(r->buf);
}

/*
 * Collects the function symbols of one symbol table into *ret (count *nr).
 * A table that cannot be read gives no symbols rather than an error: the
 * caller falls back to the other table. Names point into the string table
 * read, or, for one left in the file at fd (strtab__lazy()), are not read
 * (name NULL, stroff) and the file is registered in *ns.
 */
static int collect(Elf *elf, int fd, Elf_Scn *scn, const struct sec_range *secs, size_t nr_secs,
		   struct name_store **ns, struct cand **ret, size_t *nr)
{
	bool arm = false, lazy;
	uint8_t file = 0;
	struct strtab st;
	struct symreader r;
	struct cand *c;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	size_t i, count = 0;
	int err = 0;

	*ret = NULL;
	*nr = 0;
	if (!scn || !gelf_getshdr(scn, &sh) || strtab__open(elf, &sh, true, &st))
		return 0;
	lazy = strtab__lazy(&st.sh, fd);
	if (!lazy && strtab__open(elf, &sh, false, &st))
		return 0;
	err = symreader__open(&r, elf, fd, scn, &sh);
	if (err)
		return err == -ENOENT ? 0 : err;
	if (gelf_getehdr(elf, &eh))
		arm = eh.e_machine == EM_ARM;
	c = calloc(r.n ? r.n : 1, sizeof(*c));
	if (!c) {
		symreader__close(&r);
		return -ENOMEM;
	}
	for (i = 0; i < r.n; i++) {
		struct cand *x = &c[count];
		GElf_Sym sym;

		if (!symreader__get(&r, i, &sym) || !cand_of(&sym, arm, secs, nr_secs, x))
			continue;
		if (sym.st_name > UINT32_MAX || sym.st_name >= st.size)
			continue;
		x->stroff = (uint32_t)sym.st_name;
		if (lazy && !sym.st_name)
			continue; /* a string table's first name is the empty one */
		if (!lazy) {
			size_t len;
			const char *name = strtab__name(&st, sym.st_name, &len);

			if (!name || len >= UINT32_MAX || !name_ok(x->label, name, len))
				continue;
			x->name = name;
			x->len = (uint32_t)len;
		}
		count++;
	}
	symreader__close(&r);
	if (lazy && count) {
		err = name_store__add_file(ns, &st, fd, &file);
		for (i = 0; !err && i < count; i++)
			c[i].file = file;
	}
	if (err) {
		free(c);
		return err;
	}
	*ret = c;
	*nr = count;
	return 0;
}

/*
 * Which of two names of one address is the better: fewer leading
 * underscores ("malloc" over "__libc_malloc"), then the shorter, then
 * strcmp. The symbols' ranks come first (cand__better()).
 */
static int name_better(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t la = leading_underscores(a), lb = leading_underscores(b);
	int c;

	if (la != lb)
		return la < lb ? -1 : 1;
	if (alen != blen)
		return alen < blen ? -1 : 1;
	c = strcmp(a, b);
	return c < 0 ? -1 : c > 0;
}

/*
 * Which of two symbols at one address names it: GLOBAL over WEAK over LOCAL
 * (the exported name is the one users know), then the better name
 * (name_better()). A total order, so the choice never depends on the
 * symbol table's order. Names left in their file are chosen from when
 * read (read_name()), not here: a name copied goes before them.
 */
static int cand__better(const struct cand *a, const struct cand *b)
{
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (!a->name || !b->name)
		return a->name ? -1 : b->name ? 1 : 0;
	return name_better(a->name, a->len, b->name, b->len);
}

/* Sort key of a candidate: its address, and where it sits in the candidate array. */
struct cand_key {
	uint64_t addr;
	size_t idx;
};

static int cand_key_cmp(const void *a, const void *b)
{
	const struct cand_key *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Bits of an index below n. */
static unsigned idx_bits(size_t n)
{
	unsigned b = 0;

	while (b < 64 && n > ((size_t)1 << b))
		b++;
	return b;
}

/*
 * Moves c[order[i]] to i for every i, order[] a permutation of [0, n): in
 * place, a cycle at a time (a copy of c would take as much again). Marks
 * each place done in order[] as it goes.
 */
static void permute(struct cand *c, uint64_t *order, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct cand held;
		size_t j = i;

		if (order[i] == i)
			continue;
		held = c[i];
		for (;;) {
			size_t from = (size_t)order[j];

			order[j] = j;
			if (from == i) {
				c[j] = held;
				break;
			}
			c[j] = c[from];
			j = from;
		}
	}
}

/*
 * Orders candidates by address, stably (equal addresses keep their table
 * order). libraries like libLLVM have a hundred thousand symbols, and
 * qsort's indirect comparisons on the candidates were most of the time
 * spent loading them: an LSD radix sort over 8-bit digits of one 64-bit
 * key each, the address less the lowest above the candidate's index,
 * where both fit (a file's code spans far less than 2^40 bytes). Only the
 * address's digits are sorted on, and those on which every key agrees are
 * skipped. Keys that do not fit (a hostile file's addresses) are sorted by
 * qsort.
 */
static int sort_cands(struct cand *c, size_t n)
{
	_cleanup_free_ uint64_t *k = NULL, *tmp = NULL;
	uint64_t lo = UINT64_MAX, hi = 0, all_or = 0, all_and = UINT64_MAX, *src, *dst, *swap;
	unsigned bits = idx_bits(n);

	for (size_t i = 0; i < n; i++) {
		lo = c[i].addr < lo ? c[i].addr : lo;
		hi = c[i].addr > hi ? c[i].addr : hi;
	}
	k = malloc(n * sizeof(*k));
	if (!k)
		return -ENOMEM;
	if (bits >= 64 || (bits && (hi - lo) >> (64 - bits))) {
		_cleanup_free_ struct cand_key *ck = malloc(n * sizeof(*ck));

		if (!ck)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			ck[i] = (struct cand_key){.addr = c[i].addr, .idx = i};
		qsort(ck, n, sizeof(*ck), cand_key_cmp);
		for (size_t i = 0; i < n; i++)
			k[i] = ck[i].idx;
		permute(c, k, n);
		return 0;
	}
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		k[i] = (c[i].addr - lo) << bits | i;
		all_or |= k[i];
		all_and &= k[i];
	}
	src = k;
	dst = tmp;
	/* Stable, and the keys start in index order: equal addresses stay in it. */
	for (unsigned shift = bits; shift < 64; shift += 8) {
		size_t count[256] = {0}, pos = 0;

		if ((((all_or ^ all_and) >> shift) & 0xff) == 0)
			continue; /* every key has the same digit here */
		for (size_t i = 0; i < n; i++)
			count[(src[i] >> shift) & 0xff]++;
		for (size_t d = 0; d < 256; d++) {
			size_t c_d = count[d];

			count[d] = pos;
			pos += c_d;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & 0xff]++] = src[i];
		swap = src;
		src = dst;
		dst = swap;
	}
	for (size_t i = 0; i < n; i++)
		src[i] &= ((uint64_t)1 << bits) - 1;
	permute(c, src, n);
	return 0;
}

/* Whether c's name stays in its file. */
static bool cand__lazy(const struct cand *c)
{
	return c->file;
}

/*
 * The candidates of rank rank among c[0..n), one address's (at that rank,
 * all with names left in their files), kept in ns->aliases for read_name()
 * to choose from: 1 + the index of the first, or 0 when there are fewer
 * than two (or no memory: the first names the address).
 */
static uint32_t keep_aliases(struct name_store *ns, const struct cand *c, size_t n, uint8_t rank)
{
	size_t first = ns->nr_aliases, k = 0;

	for (size_t i = 0; i < n; i++) {
		if (c[i].rank != rank)
			continue;
		if (ns->nr_aliases == ns->cap_aliases) {
			size_t cap = ns->cap_aliases ? ns->cap_aliases * 2 : 64;
			struct lazy_name *grown;

			if (cap > (UINT32_MAX >> LAZY_ALIAS_SHIFT) - 1 ||
			    !(grown = realloc(ns->aliases, cap * sizeof(*grown)))) {
				ns->nr_aliases = first;
				return 0;
			}
			ns->aliases = grown;
			ns->cap_aliases = cap;
		}
		ns->aliases[ns->nr_aliases++] = (struct lazy_name){
			.off = c[i].stroff, .bits = c[i].file | (c[i].label ? LAZY_LABEL : 0)};
		k++;
	}
	if (k < 2) {
		ns->nr_aliases = first;
		return 0;
	}
	ns->aliases[ns->nr_aliases - 1].bits |= LAZY_LAST;
	return (uint32_t)(first + 1);
}

/* Sorts, keeps one symbol per address, sizes zero-size ones, copies the names not left in files. */
static int build_syms(struct fl_elfsyms *e, struct cand *c, size_t n)
{
	size_t i, j, total = 0, nr = 0;
	uint64_t covered = 0; /* the end of the furthest-reaching function so far */
	char *p;

	if (n && sort_cands(c, n))
		return -ENOMEM;
	/*
	 * The best of each address names it, with the largest size of them all.
	 * A label inside a function (a jump target in its assembly) would cut
	 * the function's name off its tail: only labels outside are kept.
	 */
	for (i = 0; i < n; i = j) {
		struct cand best = c[i];
		uint64_t size = c[i].size, end;

		for (j = i + 1; j < n && c[j].addr == best.addr; j++) {
			if (c[j].size > size)
				size = c[j].size;
			if (cand__better(&c[j], &best) < 0)
				best = c[j];
		}
		/*
		 * Names left in their files that tie (a named one at that rank
		 * would have won): chosen from when the symbol is found.
		 */
		if (cand__lazy(&best))
			best.alias = j - i > 1 ? keep_aliases(e->ns, c + i, j - i, best.rank) : 0;
		best.size = size;
		if (best.label && best.addr < covered)
			continue;
		end = size > UINT64_MAX - best.addr ? UINT64_MAX : best.addr + size;
		if (!best.label && end > covered)
			covered = end;
		if (!cand__lazy(&best)) {
			if (best.len > SIZE_MAX - total - 1)
				return -ENOMEM;
			total += best.len + 1;
		}
		c[nr++] = best;
	}
	e->syms = calloc(nr ? nr : 1, sizeof(*e->syms));
	e->names = malloc(total ? total : 1);
	if (!e->syms || !e->names)
		return -ENOMEM;
	if (e->ns) {
		e->ns->lazy = calloc(nr ? nr : 1, sizeof(*e->ns->lazy));
		if (!e->ns->lazy)
			return -ENOMEM;
	}
	e->names_len = total;
	p = e->names;
	for (i = 0; i < nr; i++) {
		struct fl_elfsym *s = &e->syms[i];
		uint64_t end = c[i].addr > UINT64_MAX - c[i].reach ? UINT64_MAX : c[i].addr + c[i].reach;

		s->addr = c[i].addr;
		s->size = c[i].size;
		if (!s->size) {
			if (i + 1 < nr && c[i + 1].addr < end)
				end = c[i + 1].addr;
			s->size = end > s->addr ? end - s->addr : 0;
		}
		if (cand__lazy(&c[i])) {
			e->ns->lazy[i] = (struct lazy_name){
				.off = c[i].stroff,
				.bits = c[i].file | (c[i].label ? LAZY_LABEL : 0) |
					c[i].alias << LAZY_ALIAS_SHIFT};
			continue; /* s->name stays NULL until it is read */
		}
		memcpy(p, c[i].name, c[i].len);
		p[c[i].len] = '\0';
		s->name = p;
		p += c[i].len + 1;
	}
	e->nr = nr;
	return 0;
}

/*
 * Appends the nr_got candidates of *got to *c (*n of them, *cap allocated),
 * which grows by what they need only (a library's candidates take MBs), or
 * takes *got over when empty.
 */
static int append_cands(struct cand **c, size_t *n, size_t *cap, struct cand **got, size_t nr_got)
{
	struct cand *grown;

	if (!nr_got)
		return 0;
	if (!*c) {
		*c = *got;
		*got = NULL;
		*n = *cap = nr_got;
		return 0;
	}
	if (nr_got > *cap - *n) {
		if (nr_got > SIZE_MAX / sizeof(**c) - *n)
			return -ENOMEM;
		grown = realloc(*c, (*n + nr_got) * sizeof(**c));
		if (!grown)
			return -ENOMEM;
		*c = grown;
		*cap = *n + nr_got;
	}
	memcpy(*c + *n, *got, nr_got * sizeof(**c));
	*n += nr_got;
	return 0;
}

/*
 * Appends the function symbols of one ELF file to *c (*n of them, *cap
 * allocated): its .symtab, which has everything .dynsym has and the local
 * functions too, else its .dynsym. Names point into elf's string table.
 */
static int collect_elf(Elf *elf, int fd, struct name_store **ns, struct cand **c, size_t *n,
		       size_t *cap)
{
	_cleanup_free_ struct sec_range *secs = NULL;
	_cleanup_free_ struct cand *got = NULL;
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	size_t nr_secs, nr_got;
	int err;

	err = read_sections(elf, &secs, &nr_secs);
	if (err)
		return err;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !symtab)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && !dynsym)
			dynsym = scn;
	}
	err = collect(elf, fd, symtab, secs, nr_secs, ns, &got, &nr_got);
	if (!err && !nr_got) {
		free(TAKE_PTR(got));
		err = collect(elf, fd, dynsym, secs, nr_secs, ns, &got, &nr_got);
	}
	if (err)
		return err;
	return append_cands(c, n, cap, &got, nr_got);
}

/* --- PLT stubs ------------------------------------------------------------------- */

/* A PLT entry: the stub of ent bytes at addr jumps through the GOT slot at slot. */
struct plt_ent {
	uint64_t slot, addr;
	uint32_t ent;
	bool named;
};

/* The first of ents (n of them, sorted by slot) through slot, or NULL. */
static struct plt_ent *plt_ent_find(struct plt_ent *ents, size_t n, uint64_t slot)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ents[mid].slot < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ents[lo].slot == slot ? &ents[lo] : NULL;
}

static int plt_ent_cmp(const void *a, const void *b)
{
	const struct plt_ent *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Room for one more of *v's elements (size bytes each): 0, or -ENOMEM with *v as it was. */
static int grow_one(void **v, size_t size, size_t nr, size_t *cap)
{
	size_t ncap;
	void *grown;

	if (nr < *cap)
		return 0;
	ncap = *cap ? 2 * *cap : 64;
	grown = reallocarray(*v, ncap, size);
	if (!grown)
		return -ENOMEM;
	*v = grown;
	*cap = ncap;
	return 0;
}

static int plt_names__add(struct plt_names *p, const char *name, size_t len, char **ret)
{
	char *s;

	if (grow_one((void **)&p->v, sizeof(*p->v), p->nr, &p->cap))
		return -ENOMEM;
	if (len > SIZE_MAX - sizeof("@plt"))
		return -ENOMEM;
	s = malloc(len + sizeof("@plt"));
	if (!s)
		return -ENOMEM;
	memcpy(s, name, len);
	memcpy(s + len, "@plt", sizeof("@plt"));
	p->v[p->nr++] = s;
	*ret = s;
	return 0;
}

/*
 * Where the dynamic relocations start (DT_RELA) and how many of them, first,
 * are R_X86_64_RELATIVE (DT_RELACOUNT, which ld writes with -z combreloc, its
 * default): 0 and 0 without a .dynamic saying so.
 */
static void rela_relative(Elf *elf, uint64_t *rela, uint64_t *count)
{
	Elf_Scn *scn = NULL;

	*rela = *count = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC ||
		    sh.sh_size > RELA_SECTION_MAX || !(d = elf_getdata(scn, NULL)))
			continue;
		for (int i = 0;; i++) {
			GElf_Dyn dyn;

			if (!gelf_getdyn(d, i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag == DT_RELA)
				*rela = dyn.d_un.d_ptr;
			else if (dyn.d_tag == DT_RELACOUNT)
				*count = dyn.d_un.d_val;
		}
		return;
	}
}

/*
 * The symbols of a .dynsym and their names, read one at a time where that
 * reads less: the PLT's stubs name a few hundred of a library's tens of
 * thousands (libLLVM's .dynsym and .dynstr: 3.5 MB). A symbol is then read
 * from the file where libelf would copy the whole table (a native Elf64
 * file, symreader__native()), and the names of a string table of
 * LAZY_STRTAB_MIN or more are too. A library that calls thousands of
 * others' functions (libclang-cpp) has its tables read whole: a pread
 * costs about what copying 4 KiB does.
 */
#define PREAD_COST 4096

struct dynsyms {
	Elf_Data *d; /* libelf's copy of the table, or NULL: read from fd */
	int fd;
	uint64_t off, n;
	struct strtab st; /* st.buf NULL: names read from fd */
};

/* The table symsh and its names, for nr_wanted symbols at most. */
static int dynsyms__open(struct dynsyms *ds, Elf *elf, int fd, Elf_Scn *symscn,
			 const GElf_Shdr *symsh, size_t nr_wanted)
{
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	bool few, lazy;

	*ds = (struct dynsyms){.fd = fd};
	if (!entsize || strtab__open(elf, symsh, true, &ds->st))
		return -ENOENT;
	few = nr_wanted <= (symsh->sh_size + ds->st.sh.sh_size) / PREAD_COST;
	lazy = few && strtab__lazy(&ds->st.sh, fd);
	if (!lazy && strtab__open(elf, symsh, false, &ds->st))
		return -ENOENT;
	if (few && symreader__native(elf, fd, symsh)) {
		ds->off = symsh->sh_offset;
		ds->n = symsh->sh_size / sizeof(Elf64_Sym);
		return 0;
	}
	ds->d = elf_getdata(symscn, NULL);
	if (!ds->d || !ds->d->d_buf)
		return -ENOENT;
	ds->n = ds->d->d_size / entsize;
	return 0;
}

/* The name of symbol idx into *name (to free with *tofree), or false: none, or an empty one. */
static bool dynsyms__name(const struct dynsyms *ds, uint64_t idx, const char **name, size_t *len,
			  char **tofree)
{
	GElf_Sym sym;

	*tofree = NULL;
	if (!idx || idx >= ds->n || idx > INT_MAX)
		return false;
	if (ds->d) {
		if (!gelf_getsym(ds->d, (int)idx, &sym))
			return false;
	} else if (fl_regfile__pread(ds->fd, &sym, sizeof(sym), ds->off + idx * sizeof(sym)) !=
		   (ssize_t)sizeof(sym)) {
		return false;
	}
	if (ds->st.buf)
		*name = strtab__name(&ds->st, sym.st_name, len);
	else
		*name = *tofree = pread_name(ds->fd, ds->st.sh.sh_offset, ds->st.size, sym.st_name, len);
	return *name && *len;
}

/*
 * Names the entries of ents (nr_ents, sorted by slot) whose GOT slot one
 * SHT_RELA section fills with a .dynsym symbol: its JUMP_SLOT relocations
 * (.rela.plt) and GLOB_DAT ones (.rela.dyn: what .plt.got's stubs jump
 * through). Others (RELATIVE, IRELATIVE: no symbol) are not slots of a
 * named function. Each named entry becomes a stub in *stubs.
 *
 * A big PIE or C++ library has hundreds of thousands of RELATIVE
 * relocations in .rela.dyn (libLLVM: 5 MB of them) and a few hundred others:
 * when the section is the one DT_RELA gives and the last of the
 * DT_RELACOUNT entries that open it is indeed RELATIVE, only what follows
 * them is read. A file that lies so loses the names of its own stubs.
 */
static int name_stubs(Elf *elf, int fd, Elf_Scn *scn, const GElf_Shdr *sh, uint64_t rela,
		      uint64_t relacount, struct plt_ent *ents, size_t nr_ents,
		      struct plt_names *names, struct cand **stubs, size_t *nr, size_t *cap)
{
	Elf_Scn *symscn = elf_getscn(elf, sh->sh_link);
	Elf_Data *d = NULL;
	struct dynsyms ds;
	GElf_Shdr symsh;
	size_t n, entsize = gelf_fsize(elf, ELF_T_RELA, 1, EV_CURRENT);
	size_t i = 0;

	if (!symscn || !gelf_getshdr(symscn, &symsh) || symsh.sh_type != SHT_DYNSYM ||
	    sh->sh_size > RELA_SECTION_MAX || !entsize ||
	    dynsyms__open(&ds, elf, fd, symscn, &symsh, nr_ents))
		return 0;
	if (relacount && sh->sh_addr == rela && relacount < sh->sh_size / entsize &&
	    sh->sh_offset <= (uint64_t)INT64_MAX - sh->sh_size) {
		/* From the last RELATIVE one on (sh_size is bounded above: no overflow). */
		uint64_t skip = (relacount - 1) * entsize;
		GElf_Rela r;

		d = elf_getdata_rawchunk(elf, (int64_t)(sh->sh_offset + skip), sh->sh_size - skip,
					 ELF_T_RELA);
		if (d && d->d_buf && gelf_getrela(d, 0, &r) &&
		    GELF_R_TYPE(r.r_info) == R_X86_64_RELATIVE)
			i = 1;
		else
			d = NULL;
	}
	if (!d)
		d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf)
		return 0;
	n = d->d_size / entsize;
	for (; i < n && i <= INT_MAX; i++) {
		struct plt_ent *e;
		const char *name;
		char *tofree, *stub;
		GElf_Rela r;
		size_t len, type;
		bool ok;
		int err;

		if (!gelf_getrela(d, (int)i, &r))
			break;
		type = GELF_R_TYPE(r.r_info);
		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		e = plt_ent_find(ents, nr_ents, r.r_offset);
		if (!e || e->named)
			continue;
		ok = dynsyms__name(&ds, GELF_R_SYM(r.r_info), &name, &len, &tofree) &&
		     len < UINT32_MAX - 8;
		err = ok ? plt_names__add(names, name, len, &stub) : 0;
		free(tofree);
		if (err)
			return err;
		if (!ok)
			continue;
		for (; e < ents + nr_ents && e->slot == r.r_offset; e++) {
			e->named = true;
			if (grow_one((void **)stubs, sizeof(**stubs), *nr, cap))
				return -ENOMEM;
			(*stubs)[(*nr)++] = (struct cand){.addr = e->addr, .size = e->ent,
							  .reach = e->ent, .name = stub,
							  .len = (uint32_t)(len + 4), .rank = RANK_PLT};
		}
	}
	return 0;
}

/*
 * The GOT slot an x86-64 PLT entry jumps through, or 0: the entry's first
 * instruction (after an endbr64 and a bnd prefix, as IBT PLTs have them) is
 * `jmp *disp32(%rip)`. PLT0 (push, then jmp) and the lazy .plt entries of an
 * IBT PLT (endbr64, push, jmp) do not start so, and are not named.
 */
static uint64_t plt_entry_slot(const unsigned char *p, size_t size, uint64_t addr)
{
	static const unsigned char endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
	size_t k = 0;
	int32_t disp;

	if (size >= sizeof(endbr64) && !memcmp(p, endbr64, sizeof(endbr64)))
		k = sizeof(endbr64);
	if (k < size && p[k] == 0xf2)
		k++;
	if (size < k + 6 || p[k] != 0xff || p[k + 1] != 0x25)
		return 0;
	disp = (int32_t)((uint32_t)p[k + 2] | (uint32_t)p[k + 3] << 8 | (uint32_t)p[k + 4] << 16 |
			 (uint32_t)p[k + 5] << 24);
	return addr + k + 6 + (uint64_t)(int64_t)disp;
}

/*
 * Names the PLT stubs of an x86-64 file as objdump and perf do, "puts@plt":
 * each entry of .plt, .plt.sec and .plt.got whose jump goes through a GOT
 * slot that a relocation fills with a .dynsym symbol. Read from the
 * instructions and relocations themselves, so it holds for lazy and -z now
 * binding, IBT's split PLT and .plt.got alike. Other machines: no stubs named.
 * Appends to *c as collect_elf() does.
 */
static int collect_plt(Elf *elf, int fd, struct plt_names *names, struct cand **c, size_t *n,
		       size_t *cap)
{
	_cleanup_free_ struct plt_ent *ents = NULL;
	_cleanup_free_ struct cand *stubs = NULL;
	size_t nr_ents = 0, cap_ents = 0, shstrndx, nr_stubs = 0, cap_stubs = 0;
	uint64_t rela, relacount;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	int err;

	if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    gelf_getclass(elf) != ELFCLASS64 || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	/* The entries and their slots first: only the symbols of those are read. */
	while ((scn = elf_nextscn(elf, scn))) {
		const char *secname;
		Elf_Data *d;
		GElf_Shdr sh;
		size_t ent;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || sh.sh_size > PLT_SECTION_MAX)
			continue;
		secname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!secname || (strcmp(secname, ".plt") && strcmp(secname, ".plt.sec") &&
				 strcmp(secname, ".plt.got")))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size > sh.sh_size)
			continue;
		ent = sh.sh_entsize == 8 || sh.sh_entsize == 16 ? sh.sh_entsize : 16;
		for (size_t off = 0; off + ent <= d->d_size; off += ent) {
			uint64_t addr = sh.sh_addr + off,
				 slot = plt_entry_slot((const unsigned char *)d->d_buf + off, ent, addr);

			if (!slot || addr > UINT64_MAX - ent)
				continue;
			if (grow_one((void **)&ents, sizeof(*ents), nr_ents, &cap_ents))
				return -ENOMEM;
			ents[nr_ents++] = (struct plt_ent){.slot = slot, .addr = addr, .ent = (uint32_t)ent};
		}
	}
	if (!nr_ents)
		return 0;
	qsort(ents, nr_ents, sizeof(*ents), plt_ent_cmp);
	rela_relative(elf, &rela, &relacount);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_RELA) {
			err = name_stubs(elf, fd, scn, &sh, rela, relacount, ents, nr_ents, names,
					 &stubs, &nr_stubs, &cap_stubs);
			if (err)
				return err;
		}
	}
	return append_cands(c, n, cap, &stubs, nr_stubs);
}

/*
 * The union of the function symbols of elfs (NULL entries skipped), which
 * share one address space: a binary, its debug file, its MiniDebugInfo.
 * Duplicates (the same function in two tables) collapse in build_syms().
 * fds[i] is the file elfs[i] reads (-1: in memory), for names left there.
 */
static int read_symbols(Elf *const *elfs, const int *fds, size_t nr_elfs, struct fl_elfsyms *e)
{
	_cleanup_free_ struct cand *c = NULL;
	struct plt_names names = {0};
	size_t n = 0, cap = 0;
	int err = 0;

	for (size_t i = 0; i < nr_elfs && !err; i++) {
		if (!elfs[i])
			continue;
		err = collect_elf(elfs[i], fds[i], &e->ns, &c, &n, &cap);
		if (!err)
			err = collect_plt(elfs[i], fds[i], &names, &c, &n, &cap);
	}
	if (!err)
		err = build_syms(e, c, n);
	plt_names__free(&names);
	return err;
}

static bool elf_ok(Elf *elf)
{
	GElf_Ehdr eh;

	return elf && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &eh);
}

static int elfsyms__from_elf(Elf *elf, int fd, struct fl_elfsyms **ret)
{
	_cleanup_(fl_elfsyms__freep) struct fl_elfsyms *e = NULL;
	int err;

	if (!elf_ok(elf))
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	err = read_segments(elf, e);
	if (!err)
		err = read_symbols(&elf, &fd, 1, e);
	if (err)
		return err;
	*ret = TAKE_PTR(e);
	return 0;
}

int fl_elfsyms__from_debuginfo(const struct fl_debuginfo *di, struct fl_elfsyms **ret)
{
	_cleanup_(fl_elfsyms__freep) struct fl_elfsyms *e = NULL;
	Elf *elfs[] = {
		fl_debuginfo__binary_elf(di),
		fl_debuginfo__debug_elf(di),
		fl_debuginfo__mini_elf(di),
	};
	const int fds[] = {fl_debuginfo__binary_fd(di), fl_debuginfo__debug_fd(di), -1};
	int err;

	if (!di || !ret)
		return -EINVAL;
	if (!elf_ok(elfs[0]))
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	/* Segments are the binary's: the debug files' program headers describe no data. */
	err = read_segments(elfs[0], e);
	if (!err)
		err = read_symbols(elfs, fds, ARRAY_SIZE(elfs), e);
	if (err)
		return err;
	e->source = fl_debuginfo__source(di);
	*ret = TAKE_PTR(e);
	return 0;
}

/* Only the symbol tables are read (with pread: see fl_elfsyms__open_fd), and the files closed again. */
int fl_elfsyms__open_debug(int fd, const char *path, const struct fl_debuginfo_opts *opts,
			   struct fl_elfsyms **ret)
{
	_cleanup_(fl_debuginfo__freep) struct fl_debuginfo *di = NULL;
	int err;

	if (fd < 0 || !ret)
		return -EINVAL;
	err = fl_debuginfo__find(fd, path, opts, &di);
	if (err)
		return err;
	return fl_elfsyms__from_debuginfo(di, ret);
}

enum fl_debuginfo_source fl_elfsyms__debug_source(const struct fl_elfsyms *e)
{
	return e ? e->source : FL_DEBUGINFO_NONE;
}

/*
 * ELF_C_READ rather than a mapping: libelf then reads the headers and the
 * few sections we ask for with pread. A file truncated under us gives a
 * short read and an error, never SIGBUS, and a huge binary costs only its
 * symbol tables.
 */
int fl_elfsyms__open_fd(int fd, struct fl_elfsyms **ret)
{
	_cleanup_(elf_endp) Elf *elf = NULL;
	int err;

	if (fd < 0 || !ret)
		return -EINVAL;
	err = fl_elfsize__begin(fd, &elf);
	if (err)
		return err;
	return elfsyms__from_elf(elf, fd, ret);
}

int fl_elfsyms__open(const char *path, struct fl_elfsyms **ret)
{
	_cleanup_close_ int fd = -1;

	if (!path || !ret)
		return -EINVAL;
	/* A FIFO or a device is refused before it is opened for reading. */
	fd = fl_regfile__open(AT_FDCWD, path, 0, NULL);
	if (fd < 0)
		return fd;
	return fl_elfsyms__open_fd(fd, ret);
}

/*
 * libelf may convert data in place and wants a writable buffer: work on a
 * private copy, freed before returning, so any readable image (the vdso is
 * read-only) is safe to pass.
 */
int fl_elfsyms__from_memory(const void *image, size_t size, struct fl_elfsyms **ret)
{
	_cleanup_(elf_endp) Elf *elf = NULL;
	_cleanup_free_ char *copy = NULL;
	int err;

	if (!image || !size || !ret)
		return -EINVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	copy = malloc(size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, image, size);
	elf = elf_memory(copy, size);
	err = elfsyms__from_elf(elf, -1, ret);
	/* Symbols are copied out; end libelf's use of the buffer before freeing it. */
	elf_end(TAKE_PTR(elf));
	return err;
}

int fl_elfsyms__offset_to_vaddr(const struct fl_elfsyms *e, uint64_t off, uint64_t *vaddr)
{
	const struct load_seg *hit = NULL;
	size_t i;

	if (!e || !vaddr)
		return -ENOENT;
	/* Segments may share a file page; executable code is what ips point at. */
	for (i = 0; i < e->nr_segs; i++) {
		const struct load_seg *s = &e->segs[i];

		if (off < s->off || off - s->off >= s->filesz)
			continue;
		if (!hit || (s->exec && !hit->exec))
			hit = s;
	}
	if (!hit)
		return -ENOENT;
	*vaddr = hit->vaddr + (off - hit->off);
	return 0;
}

static bool sym_holds(const struct fl_elfsym *s, uint64_t vaddr)
{
	return vaddr >= s->addr && vaddr - s->addr < s->size;
}

/* The name at l in its file, if it names a symbol (name_ok()): NULL else. */
static char *read_one(const struct name_store *ns, const struct lazy_name *l, size_t *len)
{
	char *name = name_file__read(&ns->files[LAZY_FILE(l->bits) - 1], l->off, len);

	if (name && !name_ok(l->bits & LAZY_LABEL, name, *len)) {
		free(name);
		return NULL;
	}
	return name;
}

/*
 * The name of e->syms[i] left in its file, read now: the best of its
 * aliases' (name_better()) when it has some. No name there (one that
 * names nothing, or a file changed since: its owner may rewrite it) gives
 * "", never bytes from outside the table.
 */
static const char *read_name(const struct fl_elfsyms *e, size_t i)
{
	struct name_store *ns = e->ns;
	const struct lazy_name *l = &ns->lazy[i];
	uint32_t alias = l->bits >> LAZY_ALIAS_SHIFT;
	char *name = NULL;
	size_t len = 0;

	if (ns->nr_read == ns->cap_read &&
	    grow_one((void **)&ns->read, sizeof(*ns->read), ns->nr_read, &ns->cap_read))
		return e->syms[i].name = "";
	if (!alias) {
		name = read_one(ns, l, &len);
	} else {
		for (const struct lazy_name *a = &ns->aliases[alias - 1];; a++) {
			size_t alen;
			char *other = read_one(ns, a, &alen);

			if (other && (!name || name_better(other, alen, name, len) < 0)) {
				free(name);
				name = other;
				len = alen;
			} else {
				free(other);
			}
			if (a->bits & LAZY_LAST)
				break;
		}
	}
	if (!name)
		return e->syms[i].name = "";
	ns->read[ns->nr_read++] = name;
	ns->read_bytes += len + 1;
	return e->syms[i].name = name;
}

const struct fl_elfsym *fl_elfsyms__find(const struct fl_elfsyms *e, uint64_t vaddr)
{
	size_t lo = 0, hi, i;

	if (!e || !e->nr)
		return NULL;
	hi = e->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* syms[lo - 1] is the last symbol at or below vaddr. */
	for (i = lo; i > 0 && lo - i < ENCLOSING_LOOKBACK; i--)
		if (sym_holds(&e->syms[i - 1], vaddr))
			return *fl_elfsyms__at(e, i - 1)->name ? &e->syms[i - 1] : NULL;
	return NULL;
}

size_t fl_elfsyms__count(const struct fl_elfsyms *e)
{
	return e ? e->nr : 0;
}

size_t fl_elfsyms__bytes(const struct fl_elfsyms *e)
{
	if (!e)
		return 0;
	return sizeof(*e) + e->nr * sizeof(*e->syms) + e->names_len + e->nr_segs * sizeof(*e->segs) +
	       (e->ns ? sizeof(*e->ns) + e->nr * sizeof(*e->ns->lazy) +
				e->ns->cap_aliases * sizeof(*e->ns->aliases) +
				e->ns->cap_read * sizeof(*e->ns->read) + e->ns->read_bytes
		      : 0);
}

const struct fl_elfsym *fl_elfsyms__at(const struct fl_elfsyms *e, size_t i)
{
	if (!e->syms[i].name)
		read_name(e, i);
	return &e->syms[i];
}
