// SPDX-License-Identifier: GPL-2.0-or-later
/* Inlined functions and source lines at an address, from DWARF through libdw. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "flamed/srcinfo.h"

/* Scopes at one address deeper than this are not followed (hostile DWARF). */
#define SRC_MAX_SCOPES 256

struct fl_srcinfo {
	Dwarf *dw;
};

int fl_srcinfo__open(Elf *elf, struct fl_srcinfo **ret)
{
	struct fl_srcinfo *si;
	Dwarf *dw;

	if (!elf || !ret)
		return -EINVAL;
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw)
		return -ENOENT;
	si = calloc(1, sizeof(*si));
	if (!si) {
		dwarf_end(dw);
		return -ENOMEM;
	}
	si->dw = dw;
	*ret = si;
	return 0;
}

void fl_srcinfo__free(struct fl_srcinfo *si)
{
	if (!si)
		return;
	dwarf_end(si->dw);
	free(si);
}

/* The name to show for a function DIE: its linkage name (through abstract origins and specifications), else its name. */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		name = dwarf_formstring(&attr);
	if (!name)
		name = dwarf_diename(die);
	return name && name[0] ? name : NULL;
}

/* Where an inlined call was made: its DW_AT_call_file and DW_AT_call_line. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inl, const char **file, int *line)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word idx, ln;
	size_t nfiles;

	*file = NULL;
	*line = 0;
	if (dwarf_attr(inl, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &ln) == 0 &&
	    ln <= INT32_MAX)
		*line = (int)ln;
	if (dwarf_attr(inl, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &idx) == 0 &&
	    dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && idx < nfiles)
		*file = dwarf_filesrc(files, idx, NULL, NULL);
}

size_t fl_srcinfo__frames(struct fl_srcinfo *si, uint64_t vaddr, struct fl_src_frame *out,
			  size_t max)
{
	struct fl_src_frame inner[SRC_MAX_SCOPES];
	Dwarf_Die cu, *scopes = NULL;
	Dwarf_Line *dl;
	const char *file = NULL;
	int nscopes, line = 0;
	size_t n = 0;

	if (!si || !max || !dwarf_addrdie(si->dw, vaddr, &cu))
		return 0;
	nscopes = dwarf_getscopes(&cu, vaddr, &scopes);
	if (nscopes > 0) {
		/*
		 * Past an inlined instance, dwarf_getscopes() goes on with the
		 * scopes of its abstract definition; the DIE's own parents are
		 * the functions it was inlined into.
		 */
		Dwarf_Die innermost = scopes[0];

		free(scopes);
		scopes = NULL;
		nscopes = dwarf_getscopes_die(&innermost, &scopes);
	}
	if (nscopes <= 0) {
		free(scopes);
		return 0;
	}
	/* The innermost frame is at the line the line table gives for the address. */
	dl = dwarf_getsrc_die(&cu, vaddr);
	if (dl) {
		file = dwarf_linesrc(dl, NULL, NULL);
		if (dwarf_lineno(dl, &line))
			line = 0;
	}
	/* Innermost first: each inlined call's site is where its caller stands. */
	for (int i = 0; i < nscopes && n < SRC_MAX_SCOPES; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		inner[n++] = (struct fl_src_frame){
			.name = die_name(&scopes[i]), .file = file, .line = line};
		if (tag == DW_TAG_subprogram)
			break;
		call_site(&cu, &scopes[i], &file, &line);
	}
	free(scopes);
	/* Outermost first; past max, the innermost ones are left out. */
	for (size_t i = 0; i < n && i < max; i++)
		out[i] = inner[n - 1 - i];
	return n < max ? n : max;
}
