/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Function symbols of one ELF file (.symtab, else .dynsym) via libelf. */
#ifndef FLAMED_ELFSYMS_H
#define FLAMED_ELFSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fl_elfsyms;

struct fl_elfsym {
	uint64_t addr; /* ELF virtual address (st_value) */
	uint64_t size; /* st_size, or the distance to the next symbol when 0 */
	const char *name; /* lives until fl_elfsyms__free() */
};

/*
 * Opens a regular file (O_RDONLY | O_CLOEXEC | O_NONBLOCK; not a FIFO or a
 * device) and reads its program headers and function symbols (STT_FUNC and
 * STT_GNU_IFUNC with a non-zero value, from .symtab when present, else
 * .dynsym; mapping symbols such as $x and $d are left out). The file is
 * closed before returning: symbols are copied. A file with no symbols at all
 * loads fine (fl_elfsyms__count() == 0). Returns 0, -errno from open, or
 * -EINVAL when it is not an ELF file libelf can read.
 */
int fl_elfsyms__open(const char *path, struct fl_elfsyms **ret);

/*
 * Same, from an fd the caller opened (and checked: see the symbolizer, which
 * compares the file's device and inode with the mapping's first). The fd
 * stays the caller's.
 */
int fl_elfsyms__open_fd(int fd, struct fl_elfsyms **ret);

/* Same, from an ELF image in memory (the vdso); the image is not kept. */
int fl_elfsyms__from_memory(const void *image, size_t size, struct fl_elfsyms **ret);

/* Accepts NULL. */
void fl_elfsyms__free(struct fl_elfsyms *e);

/*
 * Converts a file offset (a mapping's pgoff + (ip - mapping start)) into the
 * ELF virtual address of the PT_LOAD segment that holds it: correct for PIE
 * and non-PIE executables and shared libraries alike. Returns 0, or -ENOENT
 * when no PT_LOAD covers off.
 */
int fl_elfsyms__offset_to_vaddr(const struct fl_elfsyms *e, uint64_t off, uint64_t *vaddr);

/* The function holding vaddr ([addr, addr+size)), or NULL. Binary search. */
const struct fl_elfsym *fl_elfsyms__find(const struct fl_elfsyms *e, uint64_t vaddr);

size_t fl_elfsyms__count(const struct fl_elfsyms *e);

/* True for ARM/AArch64/RISC-V mapping symbols ("$a", "$d", "$t", "$x", "$x.foo"...). */
bool fl_elfsym__is_mapping_symbol(const char *name);

#endif
