// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * CPython in a mapped ELF file: _PyRuntime's address and Py_Version read
 * with libelf, and the per-version offsets of the structures the BPF
 * program follows from there (python_abi.h): tables for 3.11 and 3.12, the
 * interpreter's own _Py_DebugOffsets for 3.13.
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
#include "flamed/files/regfile.h"
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

/*
 * 3.12.x's, from 3.12.1's internal headers (the live walk of
 * tests/unit/test_pyruntime.c follows them through a running 3.12). The
 * frame has no is_entry: the frame above a C-stack shim (owner
 * FRAME_OWNED_BY_CSTACK, 3) is the entry. _PyRuntimeState has no
 * tstate_current any more (the current thread state is a thread-local):
 * the program finds the thread's state in the interpreters' lists.
 */
static const struct fl_py_offsets py312 = {
	.runtime_interp_head = 40,
	.runtime_tstate_current = FL_PY_NONE,
	.interp_next = 0,
	.interp_threads_head = 72,
	.tstate_next = 8,
	.tstate_thread_id = 136,
	.tstate_cframe = 56,
	.tstate_frame = 0,
	.frame_code = 0,
	.frame_previous = 8,
	.frame_is_entry = FL_PY_NONE,
	.frame_owner = 70,
	.code_filename = 112,
	.code_qualname = 128,
	.code_firstlineno = 68,
	/* PyASCIIObject lost wstr: 40 bytes, the compact one 56. */
	.str_length = 16,
	.str_state = 32,
	.str_ascii_data = 40,
	.str_compact_data = 56,
	/* state: interned:2, kind:3, compact:1, ascii:1, statically_allocated:1. */
	.state_kind_shift = 2,
	.state_compact_bit = 5,
	.state_ascii_bit = 6,
	.owner_cstack = 3,
};

/*
 * 3.13.x: what its _Py_DebugOffsets do not say, from 3.13.0's internal
 * headers (the rest is read from the file, fl_pyruntime__probe()). The str
 * state's bits are 3.12's; the frame's owner of C-stack shims is
 * FRAME_OWNED_BY_CSTACK, 3; there is no runtime-wide GIL holder (it is
 * per interpreter, _gil.last_holder); PyCompactUnicodeObject is
 * PyASCIIObject and two words (utf8_length, utf8).
 */
#define PY313_OWNER_CSTACK 3
#define PY313_COMPACT_EXTRA 16

/*
 * The bytes the program reads of a frame, a code object and a str
 * (PY_FRAME_READ, PY_CODE_READ, PY_STR_READ in bpf/python.bpf.h): the
 * fields it takes from them must lie inside.
 */
#define FRAME_READ 72
#define CODE_READ 192
#define STR_READ 80

static bool is_final(uint32_t version, unsigned minor)
{
	return PY_MAJOR(version) == 3 && PY_MINOR(version) == minor &&
	       PY_RELEASE_LEVEL(version) == PY_RELEASE_FINAL;
}

int fl_pyruntime__offsets(uint32_t version, struct fl_py_offsets *off)
{
	if (!off)
		return -EINVAL;
#if defined(__x86_64__) || defined(__aarch64__)
	/*
	 * Only final releases: layouts moved during the alphas and betas,
	 * and no release candidate was checked. The micro releases share one
	 * layout (the internal structures are not changed in a bug-fix
	 * release; 3.11.2 and 3.11.7 were compared).
	 */
	if (is_final(version, 11)) {
		*off = py311;
		return 0;
	}
	if (is_final(version, 12)) {
		*off = py312;
		return 0;
	}
#endif
	/* 3.13 is read from the file's _Py_DebugOffsets: fl_pyruntime__offsets_of(). */
	return -EOPNOTSUPP;
}

int fl_pyruntime__offsets_of(const struct fl_pyruntime *r, struct fl_py_offsets *off)
{
	if (!r || !off)
		return -EINVAL;
	if (r->has_offsets) {
		*off = r->offsets;
		return 0;
	}
	return fl_pyruntime__offsets(r->version, off);
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
	ssize_t n = fl_regfile__pread(fd, buf, size, off);

	if (n == -EOVERFLOW)
		return -EPROTO;
	if (n < 0)
		return (int)n;
	/* The file ends before the section it claims: truncated, maybe right now. */
	return (size_t)n == size ? 0 : -EPROTO;
}

/*
 * Reads the first size bytes of sym (size at most st_size) from the file
 * bytes of the section that holds it: initialized data only.
 */
static int read_sym_data(Elf *elf, int fd, const GElf_Sym *sym, void *buf, size_t size)
{
	uint64_t at;
	Elf_Scn *scn;
	GElf_Shdr sh;

	if (size > sym->st_size || sym->st_shndx >= SHN_LORESERVE)
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
	return pread_all(fd, buf, size, sh.sh_offset + at);
}

/* Reads Py_Version's value (const unsigned long: 8 bytes in LP64, 4 in ILP32). */
static int read_version(Elf *elf, int fd, const GElf_Sym *sym, uint32_t *version)
{
	unsigned char buf[8];
	uint64_t v = 0;
	size_t i, size = sym->st_size;
	int err;

	if (size != 4 && size != 8)
		return -EPROTO;
	err = read_sym_data(elf, fd, sym, buf, size);
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

/*
 * 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), the first
 * member of _PyRuntimeState, which the interpreter initializes with the
 * offsets of its own build: every field 8 bytes, in the file's byte order.
 * Only the part up to unicode_object is used; the whole is checked to fit.
 */
struct py_debug_offsets {
	char cookie[8];	  /* "xdebugpy" */
	uint64_t version; /* PY_VERSION_HEX */
	uint64_t free_threaded;
	struct {
		uint64_t size, finalizing, interpreters_head;
	} runtime_state;
	struct {
		uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
			ceval_gil, gil_runtime_state, gil_runtime_state_enabled,
			gil_runtime_state_locked, gil_runtime_state_holder;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
			datastack_chunk, status;
	} thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus, owner;
	} interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
			localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct {
		uint64_t size, ob_type;
	} pyobject;
	struct {
		uint64_t size, tp_name, tp_repr, tp_flags;
	} type_object;
	struct {
		uint64_t size, ob_item, ob_size;
	} tuple_object, list_object;
	struct {
		uint64_t size, ma_keys, ma_values;
	} dict_object;
	struct {
		uint64_t size, ob_fval;
	} float_object;
	struct {
		uint64_t size, lv_tag, ob_digit;
	} long_object;
	struct {
		uint64_t size, ob_size, ob_sval;
	} bytes_object;
	struct {
		uint64_t size, state, length, asciiobject_size;
	} unicode_object;
	struct {
		uint64_t size, collecting;
	} gc;
};

_Static_assert(sizeof(struct py_debug_offsets) == 584, "3.13's _Py_DebugOffsets is 584 bytes");

/*
 * Whether a field of width bytes at off lies in a structure of size bytes
 * and in the first limit bytes of it the program reads; *out = off then.
 */
static bool take_field(uint64_t off, uint64_t width, uint64_t size, uint64_t limit, __u16 *out)
{
	if (size > limit)
		size = limit;
	if (off >= FL_PY_NONE || !in_file(off, width, size))
		return false;
	*out = (__u16)off;
	return true;
}

/*
 * The offsets of a 3.13 from its _Py_DebugOffsets d (read from the file:
 * hostile, every value checked) and what they lack (PY313_*). -EPROTO:
 * not the debug offsets of a default (GIL) 3.13 build of version.
 */
static int map_debug_offsets(const struct py_debug_offsets *d, uint32_t version,
			     struct fl_py_offsets *out)
{
	struct fl_py_offsets o = {
		.runtime_tstate_current = FL_PY_NONE,
		.tstate_cframe = FL_PY_NONE,
		.frame_is_entry = FL_PY_NONE,
		.state_kind_shift = 2,
		.state_compact_bit = 5,
		.state_ascii_bit = 6,
		.owner_cstack = PY313_OWNER_CSTACK,
	};
	bool ok;

	/* A free-threaded build (3.13t) has other objects' headers and no table for the rest. */
	if (memcmp(d->cookie, "xdebugpy", 8) || d->version != version || d->free_threaded)
		return -EPROTO;
	ok = take_field(d->runtime_state.interpreters_head, 8, d->runtime_state.size, UINT64_MAX,
			&o.runtime_interp_head) &&
	     take_field(d->interpreter_state.next, 8, d->interpreter_state.size, UINT64_MAX,
			&o.interp_next) &&
	     take_field(d->interpreter_state.threads_head, 8, d->interpreter_state.size, UINT64_MAX,
			&o.interp_threads_head) &&
	     take_field(d->thread_state.next, 8, d->thread_state.size, UINT64_MAX,
			&o.tstate_next) &&
	     take_field(d->thread_state.thread_id, 8, d->thread_state.size, UINT64_MAX,
			&o.tstate_thread_id) &&
	     take_field(d->thread_state.current_frame, 8, d->thread_state.size, UINT64_MAX,
			&o.tstate_frame) &&
	     take_field(d->interpreter_frame.executable, 8, d->interpreter_frame.size, FRAME_READ,
			&o.frame_code) &&
	     take_field(d->interpreter_frame.previous, 8, d->interpreter_frame.size, FRAME_READ,
			&o.frame_previous) &&
	     take_field(d->interpreter_frame.owner, 1, d->interpreter_frame.size, FRAME_READ,
			&o.frame_owner) &&
	     take_field(d->code_object.filename, 8, d->code_object.size, CODE_READ,
			&o.code_filename) &&
	     take_field(d->code_object.qualname, 8, d->code_object.size, CODE_READ,
			&o.code_qualname) &&
	     take_field(d->code_object.firstlineno, 4, d->code_object.size, CODE_READ,
			&o.code_firstlineno) &&
	     take_field(d->unicode_object.length, 8, d->unicode_object.asciiobject_size, STR_READ,
			&o.str_length) &&
	     take_field(d->unicode_object.state, 4, d->unicode_object.asciiobject_size, STR_READ,
			&o.str_state) &&
	     /* The characters follow the header: its size is an offset too. */
	     take_field(d->unicode_object.asciiobject_size, 0, UINT64_MAX, UINT64_MAX,
			&o.str_ascii_data) &&
	     take_field(d->unicode_object.asciiobject_size + PY313_COMPACT_EXTRA, 0, UINT64_MAX,
			UINT64_MAX, &o.str_compact_data);
	if (!ok)
		return -EPROTO;
	*out = o;
	return 0;
}

/* A 3.13's offsets, from the _Py_DebugOffsets at the start of _PyRuntime's file data. */
static int read_debug_offsets(Elf *elf, int fd, const GElf_Sym *runtime, uint32_t version,
			      struct fl_py_offsets *out)
{
	struct py_debug_offsets d;
	int err;

	/* The file is of flamed's byte order (is_host_abi()): the words read as they are. */
	err = read_sym_data(elf, fd, runtime, &d, sizeof(d));
	if (err)
		return err;
	return map_debug_offsets(&d, version, out);
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
	/*
	 * 3.13 says its own layout. Later versions moved it (and what the
	 * program reads, as 3.14's tagged f_executable): not read.
	 */
	if (is_final(r.version, 13)) {
		err = read_debug_offsets(elf, fd, &s.runtime, r.version, &r.offsets);
		if (err)
			return err;
		r.has_offsets = true;
	}
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
