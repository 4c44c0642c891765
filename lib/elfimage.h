/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An ELF image in memory with one section of a file, for libdw. Private to lib/. */
#ifndef FLAMED_ELFIMAGE_H
#define FLAMED_ELFIMAGE_H

#include <gelf.h>
#include <stddef.h>

/*
 * dwarf_begin_elf() reads every debug section of the Elf it is given,
 * whole, into memory when the Elf reads its file (and a file must be read,
 * not mapped: its owner may truncate it). To hand libdw one section only,
 * it gets an image with nothing else: the ELF header of like (class and
 * byte order must be the host's), the section called name of size bytes
 * with sh_flags & SHF_COMPRESSED of flags (libdw inflates it) and align,
 * its name table and three section headers.
 *
 * Returns the image (the caller frees it, after elf_end() of the
 * elf_memory() made of it) with its size in *image_size and the section's
 * bytes, zeroed, at *data to fill in; or NULL (out of memory, a name over
 * 64 bytes, or another class or byte order than the host's).
 */
char *fl_elfimage__one_section(const GElf_Ehdr *like, const char *name, size_t size, uint64_t flags,
			       uint64_t align, char **data, size_t *image_size);

#endif
