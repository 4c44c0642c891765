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

/* a + b, UINT64_MAX when that overflows. */
static inline uint64_t fl_elfsize__add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

#endif
