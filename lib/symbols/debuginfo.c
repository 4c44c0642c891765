// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Finding the debug info of a binary the way gdb and elfutils document it:
 * by build-id, by .gnu_debuglink, or in its .gnu_debugdata (MiniDebugInfo).
 * Every byte read here (notes, section data, xz streams, the files found)
 * may be hostile: sizes are checked before use, never trusted.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <libdeflate.h>
#include <limits.h>
#include <lzma.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/symbols/debuginfo.h"
#include "flamed/symbols/debuginfod.h"
#include "flamed/common/log.h"
#include "flamed/files/regfile.h"
#include "symbols/elfsize.h"

#define DEFAULT_DEBUG_DIR "/usr/lib/debug"
/* Build-ids are 16 (md5, uuid) or 20 (sha1) bytes; anything longer is garbage. */
#define BUILD_ID_MAX 64
/* Note sections hold a few small notes; a larger one is not read. */
#define NOTE_SECTION_MAX (1u << 20)
/* A file name, padding and a CRC. */
#define DEBUGLINK_SECTION_MAX (NAME_MAX + 1 + 3 + 4)
/* A path, a NUL and a build-id. */
#define ALTLINK_SECTION_MAX (PATH_MAX + BUILD_ID_MAX)
/* What the xz decoder may allocate (its dictionary, mostly): xz -9 needs 65 MiB. */
#define MINI_MEMLIMIT ((uint64_t)80 << 20)
#define CRC_CHUNK (1u << 20)

struct fl_debuginfo {
	enum fl_debuginfo_source source;
	char *path; /* the separate debug file, or NULL */
	uint8_t build_id[BUILD_ID_MAX];
	size_t build_id_len;
	int bin_fd;
	Elf *bin;
	int dbg_fd;
	Elf *dbg;
	void *mini_image;
	size_t mini_size;
	Elf *mini;
	Elf *dwarf; /* bin or dbg, or NULL */
	int alt_fd;
	Elf *alt; /* the dwz file dwarf's .gnu_debugaltlink names, or NULL */
	bool debuginfod_pending;
	bool inflated; /* fl_debuginfo__inflate_dwarf() was called */
	void **bufs;   /* sections it inflated: libelf's copies of dwarf and alt point here */
	size_t nr_bufs;
};

/* What one search needs besides the object it fills. */
struct search {
	struct fl_debuginfo *di;
	struct fl_debuginfo_opts o;
	const char *const *dirs;
	struct stat bin_st;
	GElf_Ehdr bin_eh;
	bool real_root; /* open candidates from "/", not o.root_fd (debuginfod's cache) */
};

/* --- CRC-32 ---------------------------------------------------------------------- */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t fl_debuginfo__crc32(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	pthread_once(&crc_once, crc_table_init);
	crc = ~crc;
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* The CRC of the whole file, read with pread up to the size fstat gave. */
static int file_crc32(int fd, uint64_t size, uint32_t *ret)
{
	_cleanup_free_ unsigned char *buf = malloc(CRC_CHUNK);
	uint32_t crc = 0;
	uint64_t off = 0;

	if (!buf)
		return -ENOMEM;
	while (off < size) {
		size_t want = size - off < CRC_CHUNK ? (size_t)(size - off) : CRC_CHUNK;
		ssize_t n = pread(fd, buf, want, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* shrank under us */
		crc = fl_debuginfo__crc32(crc, buf, (size_t)n);
		off += (uint64_t)n;
	}
	*ret = crc;
	return 0;
}

/* --- ELF helpers ----------------------------------------------------------------- */

static uint32_t read32(const unsigned char *p, bool msb)
{
	if (msb)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static bool elf_msb(Elf *elf)
{
	const char *ident = elf_getident(elf, NULL);

	return ident && ident[EI_DATA] == ELFDATA2MSB;
}

/* The section called name, or NULL. Names come through libelf's bounds-checked elf_strptr. */
static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/*
 * The bytes of a section as they are in the file, at most max of them. NULL
 * for SHT_NOBITS (a debug file's copy of .text), an empty or larger
 * section, or one that runs past the end of the file (libelf checks).
 */
static const unsigned char *section_bytes(Elf_Scn *scn, const GElf_Shdr *sh, size_t max,
					  size_t *size)
{
	Elf_Data *d;

	if (sh->sh_type == SHT_NOBITS || !sh->sh_size || sh->sh_size > max)
		return NULL;
	d = elf_rawdata(scn, NULL);
	if (!d || !d->d_buf || !d->d_size || d->d_size > max)
		return NULL;
	*size = d->d_size;
	return d->d_buf;
}

static bool has_data_section(Elf *elf, const char *name)
{
	GElf_Shdr sh;

	return find_section(elf, name, &sh) && sh.sh_type != SHT_NOBITS && sh.sh_size;
}

static bool has_symtab(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB && sh.sh_size)
			return true;
	return false;
}

static bool has_dwarf(Elf *elf)
{
	return has_data_section(elf, ".debug_info") || has_data_section(elf, ".zdebug_info");
}

static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/*
 * The GNU build-id in a block of notes: each a header (namesz, descsz,
 * type), then the name and the descriptor, each padded to align. Every
 * size is checked against what is left; a note that does not fit ends the
 * walk. Returns the id's length, or 0.
 */
static size_t notes_build_id(const unsigned char *buf, size_t size, size_t align, bool msb,
			     uint8_t *id)
{
	size_t off = 0;

	while (off <= size && size - off >= 12) {
		uint32_t namesz = read32(buf + off, msb);
		uint32_t descsz = read32(buf + off + 4, msb);
		uint32_t type = read32(buf + off + 8, msb);
		size_t name = off + 12, desc;

		if (namesz > size - name)
			return 0;
		desc = align_up(name + namesz, align);
		if (desc > size || descsz > size - desc)
			return 0;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(buf + name, "GNU", 4)) {
			if (!descsz || descsz > BUILD_ID_MAX)
				return 0;
			memcpy(id, buf + desc, descsz);
			return descsz;
		}
		off = align_up(desc + descsz, align);
	}
	return 0;
}

/*
 * The build-id from the note sections; from the PT_NOTE segments when there
 * are no section headers. A debug file's program headers point at data it
 * does not have, so sections come first.
 */
static size_t read_build_id(Elf *elf, uint8_t *id)
{
	bool msb = elf_msb(elf);
	Elf_Scn *scn = NULL;
	size_t n, nsec = 0, len;

	while ((scn = elf_nextscn(elf, scn))) {
		const unsigned char *buf;
		GElf_Shdr sh;

		nsec++;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		buf = section_bytes(scn, &sh, NOTE_SECTION_MAX, &n);
		if (!buf)
			continue;
		len = notes_build_id(buf, n, sh.sh_addralign == 8 ? 8 : 4, msb, id);
		if (len)
			return len;
	}
	if (nsec || elf_getphdrnum(elf, &n))
		return 0;
	for (size_t i = 0; i < n && i < INT_MAX; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE || !ph.p_filesz ||
		    ph.p_filesz > NOTE_SECTION_MAX)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		if (!d || !d->d_buf || d->d_size != ph.p_filesz)
			continue;
		len = notes_build_id(d->d_buf, d->d_size, ph.p_align == 8 ? 8 : 4, msb, id);
		if (len)
			return len;
	}
	return 0;
}

/* A debuglink name names a file in a directory: no path, no "." or "..". */
static bool debuglink_name_ok(const char *name, size_t len)
{
	if (!len || len > NAME_MAX || memchr(name, '/', len))
		return false;
	return strcmp(name, ".") && strcmp(name, "..");
}

/*
 * .gnu_debuglink: a file name, a NUL, zero padding to a multiple of 4, then
 * the debug file's CRC-32 in the ELF's byte order.
 */
static bool read_debuglink(Elf *elf, char *name, uint32_t *crc)
{
	const unsigned char *buf, *nul;
	GElf_Shdr sh;
	Elf_Scn *scn;
	size_t size, len, crc_off;

	scn = find_section(elf, ".gnu_debuglink", &sh);
	if (!scn || !(buf = section_bytes(scn, &sh, DEBUGLINK_SECTION_MAX, &size)))
		return false;
	nul = memchr(buf, '\0', size);
	if (!nul)
		return false;
	len = (size_t)(nul - buf);
	crc_off = align_up(len + 1, 4);
	if (crc_off > size || size - crc_off < 4 || !debuglink_name_ok((const char *)buf, len))
		return false;
	memcpy(name, buf, len + 1);
	*crc = read32(buf + crc_off, elf_msb(elf));
	return true;
}

static void elf_endp(Elf **elf)
{
	if (*elf)
		elf_end(*elf);
}

/* libelf's handle of the file at fd, read with pread; NULL for a header claiming absurd counts. */
static Elf *elf_read(int fd)
{
	return fl_elfsize__check_fd(fd) ? NULL : elf_begin(fd, ELF_C_READ, NULL);
}

/* An Elf of a regular file or image that must be an ELF object of the wanted kind. */
static Elf *elf_check(Elf *elf, const GElf_Ehdr *like)
{
	GElf_Ehdr eh;

	if (!elf)
		return NULL;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    (like &&
	     (gelf_getclass(elf) != like->e_ident[EI_CLASS] ||
	      eh.e_ident[EI_DATA] != like->e_ident[EI_DATA] || eh.e_machine != like->e_machine))) {
		elf_end(elf);
		return NULL;
	}
	return elf;
}

/*
 * Debug sections flamed never reads: location lists, macros and the
 * name indexes. libdw inflates every debug section it knows when it opens
 * a DWARF (dwarf_begin_elf), read later or not; location lists alone are a
 * sixth of libc6-dbg's compressed bytes and a seventh inflated.
 */
static const char *const unread_sections[] = {
	"debug_loc", "debug_loclists", "debug_macro", "debug_macinfo", "debug_pubnames", "debug_pubtypes",
};

static bool is_unread_section(const char *name)
{
	if (!name || name[0] != '.')
		return false;
	name += name[1] == 'z' ? 2 : 1; /* .zdebug_*: GNU-compressed */
	for (size_t i = 0; i < ARRAY_SIZE(unread_sections); i++)
		if (!strcmp(name, unread_sections[i]))
			return true;
	return false;
}

/*
 * Marks elf's unread debug sections SHT_NOBITS in libelf's copy of the
 * section headers (the file is not written): libdw then passes them over,
 * and the budget does not count them (debug_sections_bytes()).
 */
static void hide_unread_sections(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !is_unread_section(elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		sh.sh_type = SHT_NOBITS;
		gelf_update_shdr(scn, &sh);
	}
}

/* --- inflating DWARF ------------------------------------------------------------- */

/*
 * A compressed section's bytes as read (raw, raw_size of them: a
 * compression header, then a zlib stream), inflated into *out (malloc()ed,
 * the caller's), its alignment in *align. Returns the size inflated, or 0
 * when it is not done: not zlib, a header or stream that does not hold up,
 * more than room bytes, no memory.
 */
static uint64_t inflate_raw(const unsigned char *raw, uint64_t raw_size, bool is32, uint64_t room,
			    struct libdeflate_decompressor *z, void **out, uint64_t *align)
{
	size_t hdr = is32 ? sizeof(Elf32_Chdr) : sizeof(Elf64_Chdr), got = 0;
	uint64_t size;
	uint32_t type;

	if (raw_size <= hdr)
		return 0;
	if (is32) {
		Elf32_Chdr c;

		memcpy(&c, raw, sizeof(c));
		type = c.ch_type;
		size = c.ch_size;
		*align = c.ch_addralign;
	} else {
		Elf64_Chdr c;

		memcpy(&c, raw, sizeof(c));
		type = c.ch_type;
		size = c.ch_size;
		*align = c.ch_addralign;
	}
	if (type != ELFCOMPRESS_ZLIB || !size || size > room || size > SIZE_MAX ||
	    (*align & (*align - 1)))
		return 0;
	*out = malloc(size);
	if (!*out)
		return 0;
	if (libdeflate_zlib_decompress(z, raw + hdr, raw_size - hdr, *out, size, &got) !=
		    LIBDEFLATE_SUCCESS ||
	    got != size) {
		free(*out);
		*out = NULL;
		return 0;
	}
	return size;
}

/*
 * Section scn of elf (open at fd), compressed with zlib (SHF_COMPRESSED),
 * inflated (inflate_raw()) into a buffer di owns, which libelf's copy of
 * the section then holds, so that libdw finds it uncompressed: the section
 * is marked SHT_NOBITS while elf_getdata() first reads it (nothing is read
 * from the file), given the inflated bytes, then its header is restored
 * without SHF_COMPRESSED. Returns the bytes inflated, 0 when it is left as
 * it was for libdw to inflate, or UINT64_MAX when the section can no longer
 * be read (then hidden).
 */
static uint64_t inflate_section(struct fl_debuginfo *di, Elf *elf, int fd, Elf_Scn *scn,
				GElf_Shdr *sh, uint64_t room, struct libdeflate_decompressor *z)
{
	const char *ident = elf_getident(elf, NULL);
	uint64_t size, align = 0;
	unsigned char *raw;
	void **bufs, *out = NULL;
	GElf_Shdr hidden;
	Elf_Data *data;
	ssize_t n;

	/* The header is read as the host's words: a file of the other byte order is libdw's. */
	if (!ident || ident[EI_DATA] != FL_HOST_ELFDATA)
		return 0;
	if (!sh->sh_size || sh->sh_size > room || sh->sh_size > SIZE_MAX)
		return 0;
	bufs = realloc(di->bufs, (di->nr_bufs + 1) * sizeof(*bufs));
	if (!bufs)
		return 0;
	di->bufs = bufs;
	/* Mapped, not malloc()ed: its pages go back as soon as it is inflated. */
	raw = mmap(NULL, sh->sh_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return 0;
	n = fl_regfile__pread(fd, raw, sh->sh_size, sh->sh_offset);
	size = n == (ssize_t)sh->sh_size
		       ? inflate_raw(raw, sh->sh_size, gelf_getclass(elf) == ELFCLASS32, room, z,
				     &out, &align)
		       : 0;
	munmap(raw, sh->sh_size);
	if (!size)
		return 0;
	/* Held until fl_debuginfo__free(), whatever happens next: libelf may point at it. */
	di->bufs[di->nr_bufs++] = out;
	hidden = *sh;
	hidden.sh_type = SHT_NOBITS;
	if (!gelf_update_shdr(scn, &hidden))
		return 0;
	data = elf_getdata(scn, NULL);
	if (data) {
		data->d_buf = out;
		data->d_size = size;
		data->d_off = 0;
		data->d_type = ELF_T_BYTE;
		data->d_align = align ? align : 1;
	}
	sh->sh_flags &= ~(uint64_t)SHF_COMPRESSED;
	sh->sh_size = size;
	sh->sh_addralign = align;
	/* Read back as libdw will: anything but those bytes, and the section stays hidden. */
	if (!data || !gelf_update_shdr(scn, sh) || elf_getdata(scn, NULL) != data ||
	    data->d_buf != out) {
		gelf_update_shdr(scn, &hidden);
		return UINT64_MAX;
	}
	return size;
}

/* inflate_section() for each compressed debug section of elf, at most *room bytes in all. */
static void inflate_sections(struct fl_debuginfo *di, Elf *elf, int fd, uint64_t *room,
			     struct libdeflate_decompressor *z)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || fd < 0 || elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;
		uint64_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(sh.sh_flags & SHF_COMPRESSED))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strncmp(name, ".debug_", 7))
			continue;
		n = inflate_section(di, elf, fd, scn, &sh, *room, z);
		if (n == UINT64_MAX)
			fl_pr_debug("debuginfo: %s: libelf did not take the inflated section %s: "
				    "left out\n",
				    di->path ? di->path : "(the binary)", name);
		else
			*room -= n;
	}
}

void fl_debuginfo__inflate_dwarf(struct fl_debuginfo *di, uint64_t max_bytes)
{
	struct libdeflate_decompressor *z;

	if (!di || !di->dwarf || di->inflated)
		return;
	di->inflated = true;
	z = libdeflate_alloc_decompressor();
	if (!z)
		return;
	inflate_sections(di, di->dwarf, di->dwarf == di->dbg ? di->dbg_fd : di->bin_fd, &max_bytes,
			 z);
	inflate_sections(di, di->alt, di->alt_fd, &max_bytes, z);
	libdeflate_free_decompressor(z);
}

/* --- what reading costs ---------------------------------------------------------- */

/* The bytes of the debug sections of elf (open at fd), inflated: libdw reads them whole. */
static uint64_t debug_sections_bytes(Elf *elf, int fd)
{
	Elf_Scn *scn = NULL;
	uint64_t sum = 0;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		/* .debug_*, .zdebug_*, *.dwo, .gnu.debuglto_*: every name libdw knows, and more. */
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && strstr(name, "debug"))
			sum = fl_elfsize__add(sum, fl_elfsize__section(elf, fd, name, &sh));
	}
	return sum;
}

/* The bytes of elf's symbol tables and of the string tables they name. */
static uint64_t symtabs_bytes(Elf *elf)
{
	Elf_Scn *scn = NULL;
	uint64_t sum = 0;

	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, str;
		Elf_Scn *link;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		sum = fl_elfsize__add(sum, sh.sh_size);
		link = elf_getscn(elf, sh.sh_link);
		if (link && gelf_getshdr(link, &str) && str.sh_type != SHT_NOBITS)
			sum = fl_elfsize__add(sum, str.sh_size);
	}
	return sum;
}

uint64_t fl_debuginfo__symbols_bytes(const struct fl_debuginfo *di)
{
	if (!di)
		return 0;
	return fl_elfsize__add(fl_elfsize__add(symtabs_bytes(di->bin), symtabs_bytes(di->dbg)),
			       fl_elfsize__add(symtabs_bytes(di->mini), di->mini_size));
}

uint64_t fl_debuginfo__dwarf_bytes(const struct fl_debuginfo *di)
{
	if (!di || !di->dwarf)
		return 0;
	return fl_elfsize__add(
		debug_sections_bytes(di->dwarf, di->dwarf == di->dbg ? di->dbg_fd : di->bin_fd),
		debug_sections_bytes(di->alt, di->alt_fd));
}

/* --- opening files under the root ------------------------------------------------ */

/*
 * A regular file at path, read-only, resolved under root_fd when there is
 * one (RESOLVE_IN_ROOT: "/", ".." and absolute symlinks stop at it; build-id
 * links are symlinks, so they are followed, inside that root). Its type is
 * checked on an O_PATH fd first, so a FIFO or a device is never opened for
 * reading at all, and only that fd is reopened (regfile.h). Without openat2
 * (Linux < 5.6) only the real root can be searched.
 */
static int open_regular(const struct search *s, const char *path)
{
	bool in_root = s->o.root_fd > 0 && !s->real_root;

	/* debuginfod's cache holds regular files: a link there is not one it wrote. */
	return fl_regfile__open(in_root ? s->o.root_fd : AT_FDCWD, path,
				in_root	       ? FL_REGFILE_IN_ROOT
				: s->real_root ? FL_REGFILE_NOFOLLOW
					       : 0,
				NULL);
}

/* --- candidates ------------------------------------------------------------------ */

/*
 * Opens path and keeps it as the debug file if it is the binary's: same
 * build-id when the binary has one, else the debuglink CRC (has_crc). Returns
 * true when it was taken.
 */
static bool try_candidate(struct search *s, const char *path, enum fl_debuginfo_source how,
			  bool has_crc, uint32_t crc)
{
	struct fl_debuginfo *di = s->di;
	_cleanup_(elf_endp) Elf *elf = NULL;
	_cleanup_close_ int fd = -1;
	uint8_t id[BUILD_ID_MAX];
	struct stat st;
	size_t len;

	fd = open_regular(s, path);
	if (fd < 0) {
		if (fd != -ENOENT && fd != -ENOTDIR)
			fl_pr_debug("debuginfo: %s: %s\n", path, strerror(-fd));
		return false;
	}
	if (fstat(fd, &st) || (st.st_dev == s->bin_st.st_dev && st.st_ino == s->bin_st.st_ino))
		return false; /* a debuglink naming the binary itself */
	elf = elf_check(elf_read(fd), &s->bin_eh);
	if (!elf) {
		fl_pr_debug("debuginfo: %s: not an ELF file like the binary\n", path);
		return false;
	}
	if (di->build_id_len) {
		len = read_build_id(elf, id);
		if (len != di->build_id_len || memcmp(id, di->build_id, len)) {
			fl_pr_debug("debuginfo: %s: %s\n", path,
				    len ? "build-id mismatch" : "no build-id");
			return false;
		}
	} else {
		uint32_t got = 0;
		int err;

		if (!has_crc)
			return false;
		if ((uint64_t)st.st_size > FL_DEBUGINFO_MAX_CRC_SIZE) {
			fl_pr_debug("debuginfo: %s: %llu bytes, too large to check its CRC\n", path,
				    (unsigned long long)st.st_size);
			return false;
		}
		err = file_crc32(fd, (uint64_t)st.st_size, &got);
		if (err || got != crc) {
			fl_pr_debug("debuginfo: %s: %s\n", path,
				    err ? strerror(-err) : "debuglink CRC mismatch");
			return false;
		}
	}
	di->path = strdup(path);
	if (!di->path)
		return false;
	di->dbg = TAKE_PTR(elf);
	di->dbg_fd = TAKE_FD(fd);
	di->source = how;
	return true;
}

/* <dir>/.build-id/xx/rest.debug of a build-id; false when it does not fit or dir is not absolute. */
static bool build_id_path(const char *dir, const uint8_t *id, size_t len, char *path, size_t size)
{
	char hex[2 * BUILD_ID_MAX + 1];
	int n;

	if (len < 2 || len > BUILD_ID_MAX || dir[0] != '/')
		return false;
	for (size_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	n = snprintf(path, size, "%s/.build-id/%.2s/%s.debug", dir, hex, hex + 2);
	return n > 0 && (size_t)n < size;
}

static bool try_build_id(struct search *s)
{
	const struct fl_debuginfo *di = s->di;
	char path[PATH_MAX];

	for (const char *const *d = s->dirs; *d; d++)
		if (build_id_path(*d, di->build_id, di->build_id_len, path, sizeof(path)) &&
		    try_candidate(s, path, FL_DEBUGINFO_BUILD_ID, false, 0))
			return true;
	return false;
}

static bool try_debuglink(struct search *s, const char *bin_path)
{
	char name[NAME_MAX + 1], dir[PATH_MAX], path[PATH_MAX];
	const char *slash;
	uint32_t crc;
	size_t len;
	int n;

	if (!read_debuglink(s->di->bin, name, &crc))
		return false;
	if (!bin_path || bin_path[0] != '/' || !(slash = strrchr(bin_path, '/')))
		return false;
	len = (size_t)(slash - bin_path);
	if (len >= sizeof(dir))
		return false;
	memcpy(dir, bin_path, len);
	dir[len] = '\0'; /* "" for a binary in "/" */

	n = snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (n > 0 && (size_t)n < sizeof(path) &&
	    try_candidate(s, path, FL_DEBUGINFO_DEBUGLINK, true, crc))
		return true;
	n = snprintf(path, sizeof(path), "%s/.debug/%s", dir, name);
	if (n > 0 && (size_t)n < sizeof(path) &&
	    try_candidate(s, path, FL_DEBUGINFO_DEBUGLINK, true, crc))
		return true;
	for (const char *const *d = s->dirs; *d; d++) {
		n = snprintf(path, sizeof(path), "%s%s/%s", *d, dir, name);
		if (**d != '/' || n < 0 || (size_t)n >= sizeof(path))
			continue;
		if (try_candidate(s, path, FL_DEBUGINFO_DEBUGLINK, true, crc))
			return true;
	}
	return false;
}

/*
 * The debug file debuginfod fetched for the binary's build-id, when it has
 * one: in flamed's own cache, so opened from the real root; checked like
 * any other candidate (the server is not trusted to send the right file).
 * A fetch still going is remembered, not waited for.
 */
static bool try_debuginfod(struct search *s)
{
	struct fl_debuginfo *di = s->di;
	const char *path = NULL;
	bool ok;

	if (!s->o.debuginfod || !di->build_id_len)
		return false;
	switch (fl_debuginfod__lookup(s->o.debuginfod, di->build_id, di->build_id_len, &path)) {
	case FL_DEBUGINFOD_FETCHED:
		break;
	case FL_DEBUGINFOD_PENDING:
	case FL_DEBUGINFOD_SKIPPED: /* over this budget: asked again with the next one (the daemon) */
		di->debuginfod_pending = true;
		return false;
	default:
		return false;
	}
	s->real_root = true;
	ok = path && try_candidate(s, path, FL_DEBUGINFO_DEBUGINFOD, false, 0);
	s->real_root = false;
	return ok;
}

/* Keeps path as the alternate DWARF if it is an ELF file like the binary with build-id id. */
static bool try_alt_candidate(struct search *s, const char *path, const uint8_t *id, size_t len)
{
	_cleanup_(elf_endp) Elf *elf = NULL;
	_cleanup_close_ int fd = open_regular(s, path);
	uint8_t got[BUILD_ID_MAX];

	if (fd < 0)
		return false;
	elf = elf_check(elf_read(fd), &s->bin_eh);
	if (!elf || read_build_id(elf, got) != len || memcmp(got, id, len)) {
		fl_pr_debug("debuginfo: %s: not the alternate DWARF asked for\n", path);
		return false;
	}
	s->di->alt = TAKE_PTR(elf);
	s->di->alt_fd = TAKE_FD(fd);
	return true;
}

/*
 * The alternate DWARF (the dwz file that debug files of a package share)
 * named by .gnu_debugaltlink: a path, a NUL, and the build-id the file
 * must carry. Looked for where libdw would look (<debugdir>/.build-id/,
 * then the path, relative to the file holding the DWARF), but under the
 * root, regular files only, and read, not mapped: libdw is never left to
 * open it itself (srcinfo.h).
 */
static void try_alt(struct search *s, const char *dwarf_path)
{
	const unsigned char *buf, *nul, *id;
	char path[PATH_MAX];
	const char *slash;
	size_t size, len, id_len;
	GElf_Shdr sh;
	Elf_Scn *scn;
	int n;

	scn = find_section(s->di->dwarf, ".gnu_debugaltlink", &sh);
	if (!scn || !(buf = section_bytes(scn, &sh, ALTLINK_SECTION_MAX, &size)) ||
	    !(nul = memchr(buf, '\0', size)))
		return;
	len = (size_t)(nul - buf);
	id = nul + 1;
	id_len = size - len - 1;
	if (!id_len || id_len > BUILD_ID_MAX)
		return;
	for (const char *const *d = s->dirs; *d; d++)
		if (build_id_path(*d, id, id_len, path, sizeof(path)) &&
		    try_alt_candidate(s, path, id, id_len))
			return;
	if (!len || len >= sizeof(path))
		return;
	if (buf[0] == '/') {
		memcpy(path, buf, len + 1);
	} else {
		if (!dwarf_path || dwarf_path[0] != '/' || !(slash = strrchr(dwarf_path, '/')))
			return;
		n = snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - dwarf_path), dwarf_path,
			     (const char *)buf);
		if (n < 0 || (size_t)n >= sizeof(path))
			return;
	}
	try_alt_candidate(s, path, id, id_len);
}

/*
 * Decompresses an xz stream into a buffer grown by doubling up to max: the
 * sizes the stream claims are never used to allocate, and the decoder's
 * own memory (its dictionary) is held to MINI_MEMLIMIT.
 */
static int xz_decode(const unsigned char *in, size_t in_size, size_t max, unsigned char **ret,
		     size_t *ret_size)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	_cleanup_free_ unsigned char *buf = NULL;
	size_t cap = in_size < max / 4 ? in_size * 4 : max;
	unsigned char spare;
	bool at_cap = false;
	int err = 0;

	if (cap < 4096)
		cap = max < 4096 ? max : 4096;
	if (!cap)
		return -EFBIG;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	if (lzma_stream_decoder(&strm, MINI_MEMLIMIT, 0) != LZMA_OK)
		return -ENOMEM;
	strm.next_in = in;
	strm.avail_in = in_size;
	strm.next_out = buf;
	strm.avail_out = cap;
	for (;;) {
		lzma_ret r = lzma_code(&strm, LZMA_FINISH);
		unsigned char *grown;

		if (at_cap && !strm.avail_out) {
			err = -EFBIG; /* it wrote into the spare byte */
			break;
		}
		if (r == LZMA_STREAM_END)
			break;
		if (r != LZMA_OK) {
			err = r == LZMA_MEM_ERROR	 ? -ENOMEM
			      : r == LZMA_MEMLIMIT_ERROR ? -E2BIG
							 : -EINVAL;
			break;
		}
		if (strm.avail_out)
			continue; /* not for want of space: the decoder says when input ran out */
		if (cap == max) {
			/* Full: one spare byte tells a stream that ends here from a larger one. */
			strm.next_out = &spare;
			strm.avail_out = 1;
			at_cap = true;
			continue;
		}
		cap = cap > max / 2 ? max : cap * 2;
		grown = realloc(buf, cap);
		if (!grown) {
			err = -ENOMEM;
			break;
		}
		buf = grown;
		strm.next_out = buf + strm.total_out;
		strm.avail_out = cap - (size_t)strm.total_out;
	}
	if (!err && !strm.total_out)
		err = -EINVAL;
	if (!err) {
		*ret_size = (size_t)strm.total_out;
		*ret = TAKE_PTR(buf);
	}
	lzma_end(&strm);
	return err;
}

static bool try_mini(struct search *s)
{
	struct fl_debuginfo *di = s->di;
	size_t max = s->o.max_minidebuginfo ? s->o.max_minidebuginfo : FL_DEBUGINFO_MINI_MAX;
	const unsigned char *in;
	unsigned char *image = NULL;
	size_t in_size, size;
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf *elf;
	int err;

	scn = find_section(di->bin, ".gnu_debugdata", &sh);
	if (!scn)
		return false;
	/* A stream larger than the cap on what it decompresses to is not read at all. */
	in = section_bytes(scn, &sh, max, &in_size);
	if (!in)
		return false;
	err = xz_decode(in, in_size, max, &image, &size);
	if (err) {
		fl_pr_debug("debuginfo: .gnu_debugdata: %s\n",
			    err == -EFBIG   ? "decompresses to more than the cap"
			    : err == -E2BIG ? "needs more than the xz memory limit"
					    : strerror(-err));
		return false;
	}
	elf = fl_elfsize__check_mem(image, size)
		      ? NULL
		      : elf_check(elf_memory((char *)image, size), &s->bin_eh);
	if (!elf) {
		fl_pr_debug("debuginfo: .gnu_debugdata: not an ELF image like the binary\n");
		free(image);
		return false;
	}
	di->mini_image = image;
	di->mini_size = size;
	di->mini = elf;
	di->source = FL_DEBUGINFO_MINIDEBUGINFO;
	return true;
}

/* --- the object ------------------------------------------------------------------ */

void fl_debuginfo__free(struct fl_debuginfo *di)
{
	if (!di)
		return;
	if (di->alt)
		elf_end(di->alt);
	if (di->alt_fd >= 0)
		close(di->alt_fd);
	if (di->mini)
		elf_end(di->mini);
	free(di->mini_image);
	if (di->dbg)
		elf_end(di->dbg);
	if (di->dbg_fd >= 0)
		close(di->dbg_fd);
	if (di->bin)
		elf_end(di->bin);
	if (di->bin_fd >= 0)
		close(di->bin_fd);
	/* After elf_end(): the sections inflated by fl_debuginfo__inflate_dwarf() were its data. */
	for (size_t i = 0; i < di->nr_bufs; i++)
		free(di->bufs[i]);
	free(di->bufs);
	free(di->path);
	free(di);
}

DEFINE_FREE_FUNC(struct fl_debuginfo, fl_debuginfo__free)

int fl_debuginfo__find(int fd, const char *path, const struct fl_debuginfo_opts *opts,
		       struct fl_debuginfo **ret)
{
	_cleanup_(fl_debuginfo__freep) struct fl_debuginfo *di = NULL;
	static const char *const default_dirs[] = {DEFAULT_DEBUG_DIR, NULL};
	struct search s = {0};

	if (fd < 0 || !ret)
		return -EINVAL;
	if (opts)
		memcpy(&s.o, opts, opts->sz && opts->sz < sizeof(s.o) ? opts->sz : sizeof(s.o));
	s.dirs = s.o.debug_dirs ? s.o.debug_dirs : default_dirs;
	if (fstat(fd, &s.bin_st))
		return -errno;
	if (!S_ISREG(s.bin_st.st_mode))
		return S_ISDIR(s.bin_st.st_mode) ? -EISDIR : -EINVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	di = calloc(1, sizeof(*di));
	if (!di)
		return -ENOMEM;
	di->dbg_fd = -1;
	di->alt_fd = -1;
	di->bin_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (di->bin_fd < 0)
		return -errno;
	if (fl_elfsize__check_fd(di->bin_fd))
		return -EFBIG;
	di->bin = elf_check(elf_begin(di->bin_fd, ELF_C_READ, NULL), NULL);
	if (!di->bin || !gelf_getehdr(di->bin, &s.bin_eh))
		return -EINVAL;
	s.di = di;
	di->build_id_len = read_build_id(di->bin, di->build_id);
	/* Symbols and DWARF are all here already. */
	if (!(has_symtab(di->bin) && has_dwarf(di->bin)) && !try_build_id(&s) &&
	    !try_debuglink(&s, path) && (has_dwarf(di->bin) || !try_debuginfod(&s)))
		try_mini(&s);
	if (di->dbg && has_dwarf(di->dbg))
		di->dwarf = di->dbg;
	else if (has_dwarf(di->bin))
		di->dwarf = di->bin;
	if (di->dwarf)
		try_alt(&s, di->dwarf == di->dbg ? di->path : path);
	hide_unread_sections(di->dwarf);
	hide_unread_sections(di->alt);
	*ret = TAKE_PTR(di);
	return 0;
}

enum fl_debuginfo_source fl_debuginfo__source(const struct fl_debuginfo *di)
{
	return di ? di->source : FL_DEBUGINFO_NONE;
}

const char *fl_debuginfo_source__str(enum fl_debuginfo_source src)
{
	switch (src) {
	case FL_DEBUGINFO_NONE:
		return "none";
	case FL_DEBUGINFO_BUILD_ID:
		return "build-id";
	case FL_DEBUGINFO_DEBUGLINK:
		return "debuglink";
	case FL_DEBUGINFO_MINIDEBUGINFO:
		return "minidebuginfo";
	case FL_DEBUGINFO_DEBUGINFOD:
		return "debuginfod";
	}
	return "?";
}

const char *fl_debuginfo__path(const struct fl_debuginfo *di)
{
	return di ? di->path : NULL;
}

Elf *fl_debuginfo__binary_elf(const struct fl_debuginfo *di)
{
	return di ? di->bin : NULL;
}

int fl_debuginfo__binary_fd(const struct fl_debuginfo *di)
{
	return di ? di->bin_fd : -1;
}

int fl_debuginfo__debug_fd(const struct fl_debuginfo *di)
{
	return di && di->dbg ? di->dbg_fd : -1;
}

Elf *fl_debuginfo__debug_elf(const struct fl_debuginfo *di)
{
	return di ? di->dbg : NULL;
}

Elf *fl_debuginfo__mini_elf(const struct fl_debuginfo *di)
{
	return di ? di->mini : NULL;
}

Elf *fl_debuginfo__dwarf_elf(const struct fl_debuginfo *di)
{
	return di ? di->dwarf : NULL;
}

Elf *fl_debuginfo__alt_elf(const struct fl_debuginfo *di)
{
	return di ? di->alt : NULL;
}

bool fl_debuginfo__debuginfod_pending(const struct fl_debuginfo *di)
{
	return di && di->debuginfod_pending;
}

size_t fl_debuginfo__build_id(const struct fl_debuginfo *di, const uint8_t **id)
{
	if (!di || !di->build_id_len)
		return 0;
	if (id)
		*id = di->build_id;
	return di->build_id_len;
}
