/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Inlined functions and source lines at an address, from a file's DWARF (libdw). */
#ifndef FLAMED_SRCINFO_H
#define FLAMED_SRCINFO_H

#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

struct fl_srcinfo;

/* One function at an address: the one holding it, or one inlined into it. */
struct fl_src_frame {
	/*
	 * The linkage (mangled) name when DWARF has one, else the plain name;
	 * NULL when DWARF names none. Lives as long as the fl_srcinfo.
	 */
	const char *name;
	/* The source file and line this frame is at (for an outer frame: the inlined call); NULL/0 if unknown. */
	const char *file;
	int line;
	/* Where the function itself is defined (pprof's start line); NULL/0 if unknown. */
	const char *decl_file;
	int decl_line;
};

/*
 * Reads the DWARF of elf (the binary itself, or its separate debug file),
 * with alt as its alternate DWARF (the dwz file its .gnu_debugaltlink
 * names, found by fl_debuginfo__find(); NULL: none). Both must outlive the
 * fl_srcinfo. libdw is never left to open a file itself: without alt, an
 * alternate form reads nothing, and DWARF with split units (.dwo files)
 * is refused. Returns 0, -ENOENT when elf has no usable .debug_info,
 * -ENOTSUP (split units), or -ENOMEM.
 */
int fl_srcinfo__open(Elf *elf, Elf *alt, struct fl_srcinfo **ret);
/* Accepts NULL. */
void fl_srcinfo__free(struct fl_srcinfo *si);

/*
 * The frames at vaddr (an ELF virtual address), outermost first: out[0] is
 * the function that holds vaddr, out[1..] the functions inlined into it,
 * each inside the one before. Returns how many (at most max; 0 when DWARF
 * does not cover vaddr). The call is made once per distinct address:
 * callers cache the result.
 */
size_t fl_srcinfo__frames(struct fl_srcinfo *si, uint64_t vaddr, struct fl_src_frame *out,
			  size_t max);

#endif
