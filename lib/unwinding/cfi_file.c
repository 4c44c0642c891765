// SPDX-License-Identifier: GPL-2.0-or-later
/* One ELF file's call frame information, read for both unwinders (cfi_file.h). */
#include <elf.h>
#include <errno.h>
#include <libelf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "flamed/files/regfile.h"
#include "symbols/elfsize.h"
#include "unwinding/cfi_file.h"

/* The PT_LOAD segments and the code sections of an opened Elf. */
static int setup(struct fl_cfi_file *f)
{
	GElf_Ehdr eh;
	size_t n;

	if (elf_kind(f->elf) != ELF_K_ELF || elf_getphdrnum(f->elf, &n) < 0 ||
	    !gelf_getehdr(f->elf, &eh))
		return -EINVAL;
	f->entry = eh.e_entry;
	f->segs = calloc(n ? n : 1, sizeof(*f->segs));
	if (!f->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(f->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		f->segs[f->nr_segs++] = (struct fl_cfi_seg){.offset = ph.p_offset,
							    .vaddr = ph.p_vaddr,
							    .filesz = ph.p_filesz,
							    .exec = ph.p_flags & PF_X};
	}
	for (Elf_Scn *scn = NULL;
	     (scn = elf_nextscn(f->elf, scn)) && f->nr_code_starts < FL_CFI_MAX_CODE_SECTIONS;) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS &&
		    (sh.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) == (SHF_ALLOC | SHF_EXECINSTR) &&
		    sh.sh_size)
			f->code_starts[f->nr_code_starts++] = sh.sh_addr;
	}
	return 0;
}

static int begin(struct fl_cfi_file *f, Elf *elf)
{
	int err;

	memset(f, 0, sizeof(*f));
	if (!elf)
		return -EINVAL;
	f->elf = elf;
	err = setup(f);
	if (err)
		fl_cfi_file__fini(f);
	return err;
}

int fl_cfi_file__begin_fd(struct fl_cfi_file *f, int fd)
{
	int err;

	memset(f, 0, sizeof(*f));
	/* Before libelf sees the file: it allocates for every section the header claims. */
	err = fl_elfsize__check_fd(fd);
	if (err)
		return err;
	elf_version(EV_CURRENT);
	/* pread, not a mapping: ELF_C_READ reads what is asked for, when it is. */
	return begin(f, elf_begin(fd, ELF_C_READ, NULL));
}

int fl_cfi_file__begin_memory(struct fl_cfi_file *f, const void *image, size_t size)
{
	int err;

	memset(f, 0, sizeof(*f));
	err = fl_elfsize__check_mem(image, size);
	if (err)
		return err;
	elf_version(EV_CURRENT);
	/* libelf only reads it; its prototype predates const. */
	return begin(f, elf_memory((char *)image, size));
}

Elf_Scn *fl_cfi_file__section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		const char *n;

		if (!gelf_getshdr(scn, sh) || sh->sh_type == SHT_NOBITS || !sh->sh_size)
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

bool fl_cfi_file__size_ok(const struct fl_cfi_file *f, uint64_t file_size)
{
	GElf_Shdr sh;

	if (!fl_cfi_file__section(f->elf, ".eh_frame", &sh))
		return file_size <= FL_CFI_MAX_BYTES;
	if (sh.sh_size > FL_CFI_MAX_BYTES)
		return false;
	return !fl_cfi_file__section(f->elf, ".eh_frame_hdr", &sh) ||
	       sh.sh_size <= FL_CFI_MAX_BYTES;
}

uint64_t fl_cfi_file__bytes(const struct fl_cfi_file *f, int fd, uint64_t file_size)
{
	uint64_t n;
	GElf_Shdr sh;

	n = fl_cfi_file__section(f->elf, ".eh_frame", &sh) ? sh.sh_size : file_size;
	if (fl_cfi_file__section(f->elf, ".eh_frame_hdr", &sh))
		n = fl_elfsize__add(n, sh.sh_size);
	if (fl_cfi_file__section(f->elf, ".debug_frame", &sh)) {
		n = fl_elfsize__add(n, sh.sh_size);
		if (sh.sh_flags & SHF_COMPRESSED)
			n = fl_elfsize__add(n,
					    fl_elfsize__section(f->elf, fd, ".debug_frame", &sh));
	}
	return n;
}

/* .debug_frame's bytes into an image of their own (elfimage.h), from fd or from the Elf's memory. */
static void debug_frame_image(struct fl_cfi_file *f, int fd)
{
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Scn *scn;
	Elf_Data *raw = NULL;
	char *data;

	if (!gelf_getehdr(f->elf, &eh) ||
	    !(scn = fl_cfi_file__section(f->elf, ".debug_frame", &sh)) ||
	    sh.sh_size > FL_CFI_MAX_BYTES)
		return;
	if (fd < 0) {
		/* In memory the section is there to copy; compressed, its inflated size is unknown. */
		if (sh.sh_flags & SHF_COMPRESSED)
			return;
		raw = elf_rawdata(scn, NULL);
		if (!raw || !raw->d_buf || raw->d_size != sh.sh_size)
			return;
	}
	if (fl_elfimage__one_section(&f->dbg_image, &eh, ".debug_frame", (size_t)sh.sh_size,
				     sh.sh_flags, sh.sh_addralign, &data))
		return;
	if (raw)
		memcpy(data, raw->d_buf, raw->d_size);
	else if (fl_regfile__pread(fd, data, (size_t)sh.sh_size, sh.sh_offset) != (ssize_t)sh.sh_size)
		fl_elfimage__fini(&f->dbg_image);
}

void fl_cfi_file__read(struct fl_cfi_file *f, int fd)
{
	if (!f->elf)
		return;
	f->eh = dwarf_getcfi_elf(f->elf);
	debug_frame_image(f, fd);
}

void fl_cfi_file__fd_done(struct fl_cfi_file *f)
{
	if (f->elf)
		elf_cntl(f->elf, ELF_C_FDDONE);
}

Dwarf_CFI *fl_cfi_file__debug_frame(struct fl_cfi_file *f)
{
	if (!f->dbg_tried && f->dbg_image.image) {
		Dwarf *dw = fl_elfimage__dwarf(&f->dbg_image);

		f->dbg_tried = true;
		if (dw)
			f->dbg = dwarf_getcfi(dw);
	}
	return f->dbg;
}

Dwarf_Frame *fl_cfi_file__frame(struct fl_cfi_file *f, uint64_t vaddr)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_CFI *dbg;

	if (f->eh && dwarf_cfi_addrframe(f->eh, vaddr, &frame) == 0)
		return frame;
	dbg = fl_cfi_file__debug_frame(f);
	if (dbg && dwarf_cfi_addrframe(dbg, vaddr, &frame) == 0)
		return frame;
	return NULL;
}

bool fl_cfi_file__vaddr(const struct fl_cfi_file *f, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < f->nr_segs; i++)
		if (off >= f->segs[i].offset && off - f->segs[i].offset < f->segs[i].filesz) {
			*vaddr = off - f->segs[i].offset + f->segs[i].vaddr;
			return true;
		}
	return false;
}

bool fl_cfi_file__is_code_start(const struct fl_cfi_file *f, uint64_t vaddr)
{
	for (size_t i = 0; i < f->nr_code_starts; i++)
		if (f->code_starts[i] == vaddr)
			return true;
	return false;
}

const void *fl_cfi_file__vdso_image(size_t *size)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);

	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return NULL;
	*size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	return eh;
}

void fl_cfi_file__fini(struct fl_cfi_file *f)
{
	if (f->eh)
		dwarf_cfi_end(f->eh);
	fl_elfimage__fini(&f->dbg_image);
	if (f->elf)
		elf_end(f->elf);
	free(f->segs);
	memset(f, 0, sizeof(*f));
}
