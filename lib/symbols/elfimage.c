// SPDX-License-Identifier: GPL-2.0-or-later
/* An ELF image in memory with one section, built for libdw (elfimage.h). */
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/elfimage.h"

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif
#define HOST_CLASS (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)
#define MAX_NAME 64

int fl_elfimage__one_section(struct fl_elfimage *im, const GElf_Ehdr *like, const char *name,
			     size_t size, uint64_t flags, uint64_t align, char **data)
{
	static const char shstrtab[] = ".shstrtab";
	const size_t data_off = sizeof(ElfW(Ehdr));
	size_t name_len = strlen(name), names_off, names_size, sh_off, total;
	ElfW(Ehdr) * eh;
	ElfW(Shdr) * sh;
	char *img;

	if ((like &&
	     (like->e_ident[EI_CLASS] != HOST_CLASS || like->e_ident[EI_DATA] != HOST_DATA)) ||
	    name_len > MAX_NAME)
		return -ENOTSUP;
	if (size > SIZE_MAX / 2)
		return -ENOMEM;
	/* "\0NAME\0.shstrtab\0" */
	names_off = data_off + size;
	names_size = 1 + name_len + 1 + sizeof(shstrtab);
	sh_off = (names_off + names_size + 7) & ~(size_t)7;
	total = sh_off + 3 * sizeof(*sh);
	img = calloc(1, total);
	if (!img)
		return -ENOMEM;
	eh = (ElfW(Ehdr) *)img;
	if (like) {
		memcpy(eh->e_ident, like->e_ident, EI_NIDENT);
		eh->e_type = like->e_type;
		eh->e_machine = like->e_machine;
	} else {
		memcpy(eh->e_ident, ELFMAG, SELFMAG);
		eh->e_ident[EI_CLASS] = HOST_CLASS;
		eh->e_ident[EI_DATA] = HOST_DATA;
		eh->e_ident[EI_VERSION] = EV_CURRENT;
		eh->e_type = ET_REL;
	}
	eh->e_version = EV_CURRENT;
	eh->e_shoff = sh_off;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = 3;
	eh->e_shstrndx = 2;
	memcpy(img + names_off + 1, name, name_len);
	memcpy(img + names_off + 1 + name_len + 1, shstrtab, sizeof(shstrtab));
	sh = (ElfW(Shdr) *)(img + sh_off);
	sh[1] = (ElfW(Shdr)){.sh_name = 1,
			     .sh_type = SHT_PROGBITS,
			     .sh_flags = flags & SHF_COMPRESSED,
			     .sh_offset = data_off,
			     .sh_size = size,
			     .sh_addralign = align ? align : 1};
	sh[2] = (ElfW(Shdr)){.sh_name = (ElfW(Word))(1 + name_len + 1),
			     .sh_type = SHT_STRTAB,
			     .sh_offset = names_off,
			     .sh_size = names_size,
			     .sh_addralign = 1};
	fl_elfimage__fini(im);
	im->image = img;
	im->size = total;
	*data = img + data_off;
	return 0;
}

Dwarf *fl_elfimage__dwarf(struct fl_elfimage *im)
{
	if (im->dw || !im->image || im->elf)
		return im->dw;
	im->elf = elf_memory(im->image, im->size);
	if (im->elf)
		im->dw = dwarf_begin_elf(im->elf, DWARF_C_READ, NULL);
	return im->dw;
}

void fl_elfimage__fini(struct fl_elfimage *im)
{
	if (im->dw)
		dwarf_end(im->dw);
	if (im->elf)
		elf_end(im->elf);
	free(im->image);
	*im = (struct fl_elfimage){0};
}
