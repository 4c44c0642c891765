/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Function symbols of one ELF file (.symtab, else .dynsym) via libelf, and
 * of its separate debug info (debuginfo.h).
 */
#ifndef FLAMED_ELFSYMS_H
#define FLAMED_ELFSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flamed/symbols/debuginfo.h"

struct fl_elfsyms;

struct fl_elfsym {
	uint64_t addr;	  /* ELF virtual address (st_value) */
	uint64_t size;	  /* st_size, or the distance to the next symbol when 0 */
	const char *name; /* lives until fl_elfsyms__free() */
};

/*
 * Names. A string table of 1 MiB or more (Rust's and LLVM's libraries have
 * tens of MB) is not copied: the object keeps a copy of the file's fd, and
 * reads a symbol's name with pread when fl_elfsyms__find() or
 * fl_elfsyms__at() first hands the symbol out. Smaller tables, and every
 * table read from memory, are copied. So those two fill in the object
 * though it is const: use one object from one thread at a time. A name the
 * file no longer holds as it did (its owner rewrote the file) reads as "",
 * and fl_elfsyms__find() then finds nothing there.
 */

/*
 * Opens a regular file (fl_regfile__open(): a FIFO or a device is refused,
 * -EINVAL, before it is opened for reading) and reads its program headers and function symbols (STT_FUNC and
 * STT_GNU_IFUNC with a non-zero value, from .symtab when present, else
 * .dynsym; mapping symbols such as $x and $d are left out). The file is
 * closed before returning, but for the copy of its fd kept for names (above). A file with no symbols at all
 * loads fine (fl_elfsyms__count() == 0). Returns 0, -errno from open,
 * -EINVAL when it is not an ELF file libelf can read, or -EFBIG when its
 * header claims more than 65536 sections or program headers.
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

/*
 * The union of the function symbols of the binary open at fd (.symtab, else
 * .dynsym) and of its debug info found by fl_debuginfo__find() (fd, path and
 * opts as there): the separate debug file's .symtab, else the MiniDebugInfo's
 * .symtab (which holds the functions .dynsym lacks). They share the binary's
 * addresses; one name is kept per address, as in fl_elfsyms__open(). Segments
 * are the binary's. Files are read with pread, never mapped,
 * and closed before returning (but for copies kept for names, above); fd stays the caller's. No debug info found is
 * not an error: the binary's symbols alone, fl_elfsyms__debug_source() ==
 * FL_DEBUGINFO_NONE. Returns 0, or the errors of fl_elfsyms__open_fd().
 */
int fl_elfsyms__open_debug(int fd, const char *path, const struct fl_debuginfo_opts *opts,
			   struct fl_elfsyms **ret);

/*
 * Same, from debug info the caller found and keeps (to hand its DWARF to
 * libdw, say): symbols are copied (names as above), di may be freed right after.
 */
int fl_elfsyms__from_debuginfo(const struct fl_debuginfo *di, struct fl_elfsyms **ret);

/* Which debug info added symbols (FL_DEBUGINFO_NONE for the other constructors). */
enum fl_debuginfo_source fl_elfsyms__debug_source(const struct fl_elfsyms *e);

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
/* The memory it holds, in bytes (0 for NULL). */
size_t fl_elfsyms__bytes(const struct fl_elfsyms *e);
/* The i-th symbol by address, i < fl_elfsyms__count(). */
const struct fl_elfsym *fl_elfsyms__at(const struct fl_elfsyms *e, size_t i);

/* True for ARM/AArch64/RISC-V mapping symbols ("$a", "$d", "$t", "$x", "$x.foo"...). */
bool fl_elfsym__is_mapping_symbol(const char *name);

#endif
