/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An ELF image in memory with one section of a file, for libdw. Private to lib/. */
#ifndef FLAMED_ELFIMAGE_H
#define FLAMED_ELFIMAGE_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stddef.h>

/*
 * dwarf_begin_elf() reads every debug section of the Elf it is given,
 * whole, into memory when the Elf reads its file (and a file must be read,
 * not mapped: its owner may truncate it). To hand libdw one section only,
 * it gets an image with nothing else: the ELF header of a file, the
 * section, its name table and three section headers. A zeroed struct is
 * empty; fl_elfimage__fini() frees it. The fields are for reading.
 */
struct fl_elfimage {
	char *image;
	size_t size;
	Elf *elf; /* of image, once fl_elfimage__dwarf() was called */
	Dwarf *dw;
};

/*
 * Builds im's image: the ELF header of like (class and byte order must be
 * the host's; NULL: the host's, for no machine in particular, enough for
 * DWARF that is not CFI), the section called name (at most 64 bytes) of size bytes,
 * with sh_flags & SHF_COMPRESSED of flags (libdw inflates it) and align.
 * The section's bytes, zeroed, are at *data for the caller to fill in.
 * Returns 0, -ENOTSUP (another class or byte order, a longer name) or
 * -ENOMEM.
 */
int fl_elfimage__one_section(struct fl_elfimage *im, const GElf_Ehdr *like, const char *name,
			     size_t size, uint64_t flags, uint64_t align, char **data);

/*
 * The Dwarf of the image, made on the first call (NULL: no image, or libdw
 * refused it). It lives until fl_elfimage__fini().
 */
Dwarf *fl_elfimage__dwarf(struct fl_elfimage *im);

/* Ends the Dwarf and the Elf, frees the image; im is empty again. */
void fl_elfimage__fini(struct fl_elfimage *im);

#endif
