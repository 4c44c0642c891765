// SPDX-License-Identifier: GPL-2.0-or-later
/* What reading a section of a hostile ELF file costs in memory (elfsize.h). */
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed/files/regfile.h"
#include "symbols/elfsize.h"

static uint32_t get32(const unsigned char *p, bool msb)
{
	if (msb)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint32_t get16(const unsigned char *p, bool msb)
{
	return msb ? (uint32_t)p[0] << 8 | p[1] : (uint32_t)p[1] << 8 | p[0];
}

static uint64_t get64(const unsigned char *p, bool msb)
{
	uint64_t a = get32(p, msb), b = get32(p + 4, msb);

	return msb ? a << 32 | b : b << 32 | a;
}

static bool read_at(int fd, void *buf, size_t size, uint64_t off)
{
	return fd >= 0 && fl_regfile__pread(fd, buf, size, off) == (ssize_t)size;
}

uint64_t fl_elfsize__section(Elf *elf, int fd, const char *name, const GElf_Shdr *sh)
{
	const char *ident = elf_getident(elf, NULL);
	bool is32 = gelf_getclass(elf) == ELFCLASS32, msb = ident && ident[EI_DATA] == ELFDATA2MSB;
	unsigned char hdr[sizeof(Elf64_Chdr)];

	if (sh->sh_type == SHT_NOBITS)
		return 0;
	if (sh->sh_flags & SHF_COMPRESSED) {
		size_t n = is32 ? sizeof(Elf32_Chdr) : sizeof(Elf64_Chdr);

		if (sh->sh_size < n || !read_at(fd, hdr, n, sh->sh_offset))
			return UINT64_MAX;
		/* Elf32_Chdr: type, size, align; Elf64_Chdr: type, reserved, size, align. */
		return is32 ? get32(hdr + 4, msb) : get64(hdr + 8, msb);
	}
	/* GNU's .zdebug: "ZLIB", then the size in big-endian, whatever the file's order. */
	if (name && !strncmp(name, ".zdebug", 7) && sh->sh_size >= 12) {
		if (!read_at(fd, hdr, 12, sh->sh_offset))
			return UINT64_MAX;
		if (!memcmp(hdr, "ZLIB", 4))
			return get64(hdr + 4, true);
	}
	return sh->sh_size;
}

/* Where the header is read from: a file, or an image in memory (mem != NULL). */
struct src {
	int fd;
	const unsigned char *mem;
	size_t size;
};

static bool src_read(const struct src *s, void *buf, size_t len, uint64_t off)
{
	if (!s->mem)
		return read_at(s->fd, buf, len, off);
	if (off > s->size || len > s->size - off)
		return false;
	memcpy(buf, s->mem + off, len);
	return true;
}

/* The size of section i of the table at shoff (is32, msb: the file's class and order), or 0. */
static uint64_t section_size(const struct src *s, uint64_t shoff, uint64_t i, bool is32, bool msb)
{
	unsigned char sh[sizeof(Elf64_Shdr)];
	size_t entsize = is32 ? sizeof(Elf32_Shdr) : sizeof(Elf64_Shdr);

	if (i > (UINT64_MAX - shoff) / entsize || !src_read(s, sh, entsize, shoff + i * entsize))
		return 0;
	if (get32(sh + offsetof(Elf64_Shdr, sh_type), msb) == SHT_NOBITS)
		return 0;
	return is32 ? get32(sh + offsetof(Elf32_Shdr, sh_size), msb)
		    : get64(sh + offsetof(Elf64_Shdr, sh_size), msb);
}

static int check(const struct src *s)
{
	unsigned char eh[sizeof(Elf64_Ehdr)], sh[sizeof(Elf64_Shdr)];
	uint64_t shoff, shnum, phnum, shstrndx;
	bool is32, msb;

	if (!src_read(s, eh, EI_NIDENT, 0) || memcmp(eh, ELFMAG, SELFMAG) ||
	    (eh[EI_CLASS] != ELFCLASS32 && eh[EI_CLASS] != ELFCLASS64))
		return 0;
	is32 = eh[EI_CLASS] == ELFCLASS32;
	msb = eh[EI_DATA] == ELFDATA2MSB;
	if (!src_read(s, eh, is32 ? sizeof(Elf32_Ehdr) : sizeof(Elf64_Ehdr), 0))
		return 0;
	if (is32) {
		shoff = get32(eh + offsetof(Elf32_Ehdr, e_shoff), msb);
		shnum = get16(eh + offsetof(Elf32_Ehdr, e_shnum), msb);
		phnum = get16(eh + offsetof(Elf32_Ehdr, e_phnum), msb);
		shstrndx = get16(eh + offsetof(Elf32_Ehdr, e_shstrndx), msb);
	} else {
		shoff = get64(eh + offsetof(Elf64_Ehdr, e_shoff), msb);
		shnum = get16(eh + offsetof(Elf64_Ehdr, e_shnum), msb);
		phnum = get16(eh + offsetof(Elf64_Ehdr, e_phnum), msb);
		shstrndx = get16(eh + offsetof(Elf64_Ehdr, e_shstrndx), msb);
	}
	/* Extended numbering: the real values are in section 0's sh_size, sh_info, sh_link. */
	if (shoff && (!shnum || phnum == PN_XNUM || shstrndx == SHN_XINDEX) &&
	    src_read(s, sh, is32 ? sizeof(Elf32_Shdr) : sizeof(Elf64_Shdr), shoff)) {
		if (!shnum)
			shnum = is32 ? get32(sh + offsetof(Elf32_Shdr, sh_size), msb)
				     : get64(sh + offsetof(Elf64_Shdr, sh_size), msb);
		if (phnum == PN_XNUM)
			phnum = is32 ? get32(sh + offsetof(Elf32_Shdr, sh_info), msb)
				     : get32(sh + offsetof(Elf64_Shdr, sh_info), msb);
		if (shstrndx == SHN_XINDEX)
			shstrndx = is32 ? get32(sh + offsetof(Elf32_Shdr, sh_link), msb)
					: get32(sh + offsetof(Elf64_Shdr, sh_link), msb);
	}
	if (shnum > FL_ELFSIZE_MAX_SECTIONS || phnum > FL_ELFSIZE_MAX_SEGMENTS)
		return -EFBIG;
	if (shoff && shstrndx && shstrndx < shnum &&
	    section_size(s, shoff, shstrndx, is32, msb) > FL_ELFSIZE_MAX_SHSTRTAB)
		return -EFBIG;
	return 0;
}

int fl_elfsize__check_fd(int fd)
{
	struct src s = {.fd = fd};

	return check(&s);
}

int fl_elfsize__check_mem(const void *image, size_t size)
{
	struct src s = {.fd = -1, .mem = image, .size = size};

	return image ? check(&s) : 0;
}

int fl_elfsize__begin(int fd, Elf **ret)
{
	struct stat st;

	*ret = NULL;
	if (fstat(fd, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	if (fl_elfsize__check_fd(fd))
		return -EFBIG;
	*ret = elf_begin(fd, ELF_C_READ, NULL);
	return 0;
}
