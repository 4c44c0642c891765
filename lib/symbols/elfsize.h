/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What reading a section of a hostile ELF file costs in memory, known before it is read. Private to lib/. */
#ifndef FLAMED_ELFSIZE_H
#define FLAMED_ELFSIZE_H

#include <gelf.h>
#include <stdint.h>

/*
 * The bytes the section sh (called name) of elf, open at fd, takes in
 * memory once libelf reads it and, compressed (SHF_COMPRESSED, or GNU's
 * .zdebug with its "ZLIB" header), inflates it: the size its compression
 * header claims, which is what libelf allocates. The header is read from
 * the file with pread, not through libelf, which would read the whole
 * section. UINT64_MAX when a compression header cannot be read; 0 for
 * SHT_NOBITS.
 */
uint64_t fl_elfsize__section(Elf *elf, int fd, const char *name, const GElf_Shdr *sh);

/* Sections and program headers an ELF file of another user may have, at most. */
/* The ELF data encoding of this machine's words: ELFDATA2LSB or ELFDATA2MSB. */
#define FL_HOST_ELFDATA (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB)

#define FL_ELFSIZE_MAX_SECTIONS (1u << 16)
#define FL_ELFSIZE_MAX_SEGMENTS (1u << 16)
/* Bytes of section names, at most: libelf reads the table whole for the first name. */
#define FL_ELFSIZE_MAX_SHSTRTAB (16u << 20)

/*
 * Whether the ELF header of a file (open at fd) or of an image in memory
 * (size bytes) claims no more than FL_ELFSIZE_MAX_SECTIONS sections and
 * FL_ELFSIZE_MAX_SEGMENTS program headers, extended numbering (the counts
 * in section 0) included, and a section name table of no more than
 * FL_ELFSIZE_MAX_SHSTRTAB bytes: elf_begin() and elf_memory() allocate and
 * fill a descriptor for every section the header claims, and the first
 * section name looked up reads the whole table, each up to what the
 * file's size allows, and a sparse file's size costs its owner nothing (16
 * million sections, 4 GiB, for a file of 1 GiB holding 8 KiB). To be
 * called before libelf sees the file. Returns 0 (also for what is no ELF
 * header at all: libelf says so) or -EFBIG.
 */
int fl_elfsize__check_fd(int fd);
int fl_elfsize__check_mem(const void *image, size_t size);

/*
 * elf_begin(fd, ELF_C_READ) for a file of another user: a regular file
 * only (a FIFO or a device could block or never end), and its header
 * checked first (fl_elfsize__check_fd()). ELF_C_READ rather than a
 * mapping: libelf reads the headers and the sections asked for with pread,
 * so a file truncated under us gives a short read, never SIGBUS. Returns 0
 * and *ret (which may still be NULL or no ELF: libelf's to say), or
 * -errno, -EISDIR, -EINVAL, -EFBIG.
 */
int fl_elfsize__begin(int fd, Elf **ret);

/* a + b, UINT64_MAX when that overflows. */
static inline uint64_t fl_elfsize__add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

#endif
