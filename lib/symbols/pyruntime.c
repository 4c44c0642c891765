// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * CPython in a mapped ELF file: _PyRuntime's address and Py_Version read
 * with libelf, and the per-version offsets of the structures the BPF
 * program follows from there (python_abi.h).
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/symbols/pyruntime.h"
#include "symbols/elfsize.h"

/*
 * A symbol table or its strings larger than this is not read: CPython's
 * .dynsym is tens of KiB and an unstripped libpython's .symtab a few MiB,
 * while what a hostile file claims is read into memory whole.
 */
#define SYMTAB_MAX (16u << 20)
#define STRTAB_MAX (16u << 20)

/* The ELF files whose layouts are flamed's own: a CPython of another ABI has other offsets. */
#define HOST_CLASS (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)
#define HOST_DATA (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? ELFDATA2MSB : ELFDATA2LSB)
#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#endif

#define PY_MAJOR(v) ((v) >> 24)
#define PY_MINOR(v) (((v) >> 16) & 0xff)
#define PY_RELEASE_LEVEL(v) (((v) >> 4) & 0xf)
#define PY_RELEASE_FINAL 0xf

/* 3.11.x's offsets, from its internal headers (tests/unit/test_pyruntime.c compares them). */
static const struct fl_py_offsets py311 = {
	.runtime_interp_head = 40,
	.runtime_tstate_current = 576,
	.interp_next = 0,
	.interp_threads_head = 16,
	.tstate_next = 8,
	.tstate_thread_id = 152,
	.tstate_cframe = 56,
	.tstate_frame = 8,
	.frame_code = 32,
	.frame_previous = 48,
	.frame_is_entry = 68,
	.frame_owner = 69,
	.code_filename = 112,
	.code_qualname = 128,
	.code_firstlineno = 72,
	.str_length = 16,
	.str_state = 32,
	.str_ascii_data = 48,
	.str_compact_data = 72,
	/* state: interned:2, kind:3, compact:1, ascii:1, ready:1, from bit 0. */
	.state_kind_shift = 2,
	.state_compact_bit = 5,
	.state_ascii_bit = 6,
	/* 3.11 has no C-stack shim frames (FRAME_OWNED_BY_CSTACK is 3.12's). */
	.owner_cstack = 0xff,
};

int fl_pyruntime__offsets(uint32_t version, struct fl_py_offsets *off)
{
	if (!off)
		return -EINVAL;
#if defined(__x86_64__) || defined(__aarch64__)
	/*
	 * Only final releases: layouts moved during 3.11's alphas and betas,
	 * and no release candidate was checked. The micro releases share one
	 * layout (the internal structures are not changed in a bug-fix
	 * release; 3.11.2 and 3.11.7 were compared).
	 */
	if (PY_MAJOR(version) == 3 && PY_MINOR(version) == 11 &&
	    PY_RELEASE_LEVEL(version) == PY_RELEASE_FINAL) {
		*off = py311;
		return 0;
	}
#endif
	/*
	 * 3.12 moved the frame (and added shim frames, owner_cstack): no
	 * table yet. 3.13+ describe their own layout in _PyRuntime's
	 * _Py_DebugOffsets, which flamed could read instead of a table:
	 * future work.
	 */
	return -EOPNOTSUPP;
}

/* --- which file names ------------------------------------------------------------ */

/* Skips "3.N" and up to three ABI flag letters ("d", "t"...); NULL when s does not start so. */
static const char *skip_version(const char *s)
{
	size_t digits = 0, flags = 0;

	if (s[0] != '3' || s[1] != '.')
		return NULL;
	for (s += 2; *s >= '0' && *s <= '9'; s++)
		digits++;
	for (; *s >= 'a' && *s <= 'z'; s++)
		flags++;
	return digits && digits <= 3 && flags <= 3 ? s : NULL;
}

static bool is_python_name(const char *name)
{
	const char *rest;

	if (strncmp(name, "python", 6))
		return false;
	name += 6;
	if (!strcmp(name, "3"))
		return true;
	rest = skip_version(name);
	return rest && !*rest;
}

/* "libpython3.N<flags>.so", then nothing or ".<version>" ("libpython3.11.so.1.0"). */
static bool is_libpython_name(const char *name)
{
	const char *rest;

	if (strncmp(name, "libpython", 9))
		return false;
	rest = skip_version(name + 9);
	if (!rest || strncmp(rest, ".so", 3))
		return false;
	rest += 3;
	return !*rest || *rest == '.';
}

bool fl_pyruntime__candidate(const char *path)
{
	const char *base;

	if (!path)
		return false;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return is_python_name(base) || is_libpython_name(base);
}

/* --- reading the file ------------------------------------------------------------ */

static void elf_endp(Elf **elf)
{
	if (*elf)
		elf_end(*elf);
}

/* Whether [off, off + len) lies in a file of size bytes. */
static bool in_file(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/*
 * Whether the program and section header tables the ELF header names are
 * in the file (a truncated copy's are not: libelf would fail to read them
 * one by one, later, and a table cut short would look like no symbol).
 */
static bool headers_in_file(Elf *elf, const GElf_Ehdr *eh, uint64_t size)
{
	size_t phnum, shnum;

	/* The counts libelf uses: PN_XNUM and a zero e_shnum say "see section 0". */
	if (elf_getphdrnum(elf, &phnum) || elf_getshdrnum(elf, &shnum))
		return false;
	return in_file(eh->e_phoff, (uint64_t)phnum * eh->e_phentsize, size) &&
	       in_file(eh->e_shoff, (uint64_t)shnum * eh->e_shentsize, size);
}

/* Whether the ELF file is of flamed's own ABI. */
static bool is_host_abi(const GElf_Ehdr *eh)
{
	if (eh->e_ident[EI_CLASS] != HOST_CLASS || eh->e_ident[EI_DATA] != HOST_DATA)
		return false;
#ifdef HOST_MACHINE
	return eh->e_machine == HOST_MACHINE;
#else
	return true;
#endif
}

static int read_loads(Elf *elf, struct fl_pyruntime *r)
{
	size_t i, n;

	if (elf_getphdrnum(elf, &n))
		return -EPROTO;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -EPROTO;
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (ph.p_offset > UINT64_MAX - ph.p_filesz ||
		    ph.p_vaddr > UINT64_MAX - ph.p_memsz || ph.p_filesz > ph.p_memsz)
			return -EPROTO;
		/* No linker makes so many: a file that claims them is not a CPython we read. */
		if (r->nr_loads == FL_PYRUNTIME_MAX_LOADS)
			return -EPROTO;
		r->loads[r->nr_loads].offset = ph.p_offset;
		r->loads[r->nr_loads].vaddr = ph.p_vaddr;
		r->loads[r->nr_loads].filesz = ph.p_filesz;
		r->nr_loads++;
	}
	return 0;
}

/* Whether [vaddr, vaddr + size) lies in a PT_LOAD's memory image. */
static bool in_load(Elf *elf, uint64_t vaddr, uint64_t size)
{
	size_t i, n;

	if (elf_getphdrnum(elf, &n))
		return false;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && in_file(vaddr - ph.p_vaddr, size, ph.p_memsz))
			return true;
	}
	return false;
}

struct py_syms {
	GElf_Sym runtime, version;
	bool have_runtime, have_version;
};

/* Whether sym is a defined data object, as both symbols are. */
static bool is_defined_object(const GElf_Sym *sym)
{
	return GELF_ST_TYPE(sym->st_info) == STT_OBJECT && sym->st_shndx != SHN_UNDEF;
}

/*
 * Looks up what s still lacks in the symbol tables of type (SHT_DYNSYM or
 * SHT_SYMTAB). A table too large, compressed or with a bad string table is
 * skipped, as if absent.
 */
static void find_syms(Elf *elf, Elf64_Word type, struct py_syms *s)
{
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)) && !(s->have_runtime && s->have_version)) {
		Elf_Scn *strscn;
		GElf_Shdr sh, strsh;
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type)
			continue;
		if (sh.sh_size > SYMTAB_MAX || (sh.sh_flags & SHF_COMPRESSED) || !entsize ||
		    sh.sh_entsize != entsize)
			continue;
		strscn = elf_getscn(elf, sh.sh_link);
		if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB ||
		    strsh.sh_size > STRTAB_MAX || (strsh.sh_flags & SHF_COMPRESSED))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size > sh.sh_size)
			continue;
		n = d->d_size / entsize;
		for (i = 1; i < n && i <= INT32_MAX && !(s->have_runtime && s->have_version); i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || !is_defined_object(&sym))
				continue;
			/* elf_strptr() checks the offset and the terminating NUL. */
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			if (!s->have_runtime && !strcmp(name, "_PyRuntime")) {
				s->runtime = sym;
				s->have_runtime = true;
			} else if (!s->have_version && !strcmp(name, "Py_Version")) {
				s->version = sym;
				s->have_version = true;
			}
		}
	}
}

static int pread_all(int fd, void *buf, size_t size, uint64_t off)
{
	ssize_t n;

	if (off > INT64_MAX)
		return -EPROTO;
	do
		n = pread(fd, buf, size, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* The file ends before the section it claims: truncated, maybe right now. */
	return (size_t)n == size ? 0 : -EPROTO;
}

/*
 * Reads Py_Version's value (const unsigned long: 8 bytes in LP64, 4 in
 * ILP32) from the file bytes of the section that holds it.
 */
static int read_version(Elf *elf, int fd, const GElf_Sym *sym, uint32_t *version)
{
	unsigned char buf[8];
	uint64_t v = 0, at;
	Elf_Scn *scn;
	GElf_Shdr sh;
	size_t i, size = sym->st_size;
	int err;

	if (size != 4 && size != 8)
		return -EPROTO;
	if (sym->st_shndx >= SHN_LORESERVE)
		return -EPROTO;
	scn = elf_getscn(elf, sym->st_shndx);
	if (!scn || !gelf_getshdr(scn, &sh))
		return -EPROTO;
	if (sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC) ||
	    (sh.sh_flags & SHF_COMPRESSED))
		return -EPROTO;
	if (sym->st_value < sh.sh_addr || !in_file(sym->st_value - sh.sh_addr, size, sh.sh_size))
		return -EPROTO;
	at = sym->st_value - sh.sh_addr;
	if (sh.sh_offset > UINT64_MAX - at)
		return -EPROTO;
	err = pread_all(fd, buf, size, sh.sh_offset + at);
	if (err)
		return err;
	for (i = 0; i < size; i++) {
		unsigned char b = HOST_DATA == ELFDATA2MSB ? buf[i] : buf[size - 1 - i];

		v = v << 8 | b;
	}
	/* Py_Version first shipped in 3.11: anything else is not a version. */
	if (v > UINT32_MAX || PY_MAJOR(v) != 3 || PY_MINOR(v) < 11)
		return -EPROTO;
	*version = (uint32_t)v;
	return 0;
}

int fl_pyruntime__probe(int fd, struct fl_pyruntime *out)
{
	_cleanup_(elf_endp) Elf *elf = NULL;
	struct fl_pyruntime r = {0};
	struct py_syms s = {0};
	struct stat st;
	GElf_Ehdr eh;
	int err;

	if (fd < 0 || !out)
		return -EINVAL;
	err = fl_elfsize__begin(fd, &elf);
	if (err)
		return err == -EISDIR ? -EINVAL : err;
	if (fstat(fd, &st))
		return -errno;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -EINVAL;
	if (!is_host_abi(&eh))
		return -ENOEXEC;
	if (!headers_in_file(elf, &eh, (uint64_t)st.st_size))
		return -EPROTO;
	err = read_loads(elf, &r);
	if (err)
		return err;

	/* .dynsym first: small, and what a stripped CPython keeps. */
	find_syms(elf, SHT_DYNSYM, &s);
	if (!s.have_runtime || !s.have_version)
		find_syms(elf, SHT_SYMTAB, &s);
	if (!s.have_runtime || !s.have_version)
		return -ENOENT;

	if (!s.runtime.st_value || !in_load(elf, s.runtime.st_value, s.runtime.st_size))
		return -EPROTO;
	err = read_version(elf, fd, &s.version, &r.version);
	if (err)
		return err;
	r.runtime_vaddr = s.runtime.st_value;
	*out = r;
	return 0;
}

/* --- in a process ---------------------------------------------------------------- */

int fl_pyruntime__address(const struct fl_pyruntime *r, uint64_t map_start, uint64_t pgoff,
			  uint64_t *addr)
{
	long pagesize = sysconf(_SC_PAGESIZE);
	uint64_t page = pagesize > 0 ? (uint64_t)pagesize : 4096;
	size_t i, hit = SIZE_MAX;

	if (!r || !addr || r->nr_loads > FL_PYRUNTIME_MAX_LOADS)
		return -ENOENT;
	/*
	 * A segment is mapped from the page that holds its first byte, which
	 * the segment before may end in: the later segment is that mapping's.
	 */
	for (i = 0; i < r->nr_loads; i++) {
		uint64_t off = r->loads[i].offset, first = off & ~(page - 1);

		if (pgoff < first || pgoff >= fl_elfsize__add(off, r->loads[i].filesz))
			continue;
		if (hit == SIZE_MAX || off > r->loads[hit].offset)
			hit = i;
	}
	if (hit == SIZE_MAX)
		return -ENOENT;
	/*
	 * The mapping starts at the segment's vaddr for pgoff: the load bias is
	 * map_start minus that (mod 2^64: a non-PIE executable's is 0).
	 */
	*addr = r->runtime_vaddr +
		(map_start - (r->loads[hit].vaddr + (pgoff - r->loads[hit].offset)));
	return 0;
}
