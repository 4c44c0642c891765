// SPDX-License-Identifier: GPL-2.0-or-later
/* Inlined functions and source lines at an address, from DWARF through libdw. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "flamed/common/cleanup.h"
#include "flamed/symbols/srcinfo.h"
#include "symbols/elfimage.h"
#include "common/hash.h"

/*
 * dwarf_getscopes() walks a compile unit's DIE tree for every address:
 * on a C++ unit with tens of thousands of DIEs that is milliseconds per
 * address. Instead, the first address in a unit indexes it once: every
 * function and inlined-call range in it, sorted, each knowing the function
 * it lies in. An address is then a binary search and a walk up its chain.
 */

/* Nesting followed, and functions indexed per unit, at most (hostile DWARF). */
#define SRC_MAX_DEPTH 256
#define SRC_MAX_FUNCS (1u << 22)
#define SRC_NONE UINT32_MAX

/* A function or an inlined call in a unit. */
struct sfunc {
	Dwarf_Off off;	 /* its DIE */
	uint32_t parent; /* the function it lies in, or SRC_NONE */
	uint32_t first;	 /* its ranges: franges[first, first + nr) */
	uint32_t nr;
	bool inlined;
	/* Read from its DIE on first use: its name and, inlined, where it was called. */
	bool named;
	const char *name;
	const char *call_file;
	int call_line;
	const char *decl_file; /* where the function is defined (its abstract origin's, inlined) */
	int decl_line;
};

struct srange {
	uint64_t lo, hi;
	uint32_t func;
};

/* The index of one compile unit, built on first use. */
struct sunit {
	Dwarf_Off off; /* the unit's DIE; 0 marks an empty slot (a unit DIE is never at 0) */
	struct sfunc *funcs;
	size_t nr_funcs, cap_funcs;
	struct srange *franges; /* per function, in function order */
	size_t nr_franges, cap_franges;
	struct srange *sorted; /* all ranges by lo, outer before inner on ties */
};

struct fl_srcinfo {
	Dwarf *dw;
	/* dw's alternate (dwz) DWARF, and the alt's own: given, never looked for by libdw. */
	Dwarf *alt_dw;
	struct fl_elfimage none; /* an empty stand-in */
	struct sunit *units;	 /* open addressing by offset, power-of-two capacity */
	size_t nr_units, cap_units;
};

static void unit_fini(struct sunit *u)
{
	free(u->funcs);
	free(u->franges);
	free(u->sorted);
}

void fl_srcinfo__free(struct fl_srcinfo *si)
{
	if (!si)
		return;
	for (size_t i = 0; i < si->cap_units; i++)
		if (si->units[i].off)
			unit_fini(&si->units[i]);
	free(si->units);
	/* The main DWARF first: libdw frees no alternate it was given. */
	if (si->dw)
		dwarf_end(si->dw);
	if (si->alt_dw)
		dwarf_end(si->alt_dw);
	fl_elfimage__fini(&si->none);
	free(si);
}

DEFINE_FREE_FUNC(struct fl_srcinfo, fl_srcinfo__free)

/*
 * Whether dw has split units (-gsplit-dwarf): libdw would look for their
 * .dwo files itself, by the names in the DWARF, open()ing them for reading
 * (a FIFO there blocks, a tty becomes the controlling terminal) and
 * mapping them. Their skeletons have no functions to index anyway.
 */
static bool has_split_units(Dwarf *dw)
{
	Dwarf_CU *cu = NULL;
	uint8_t type;

	while (dwarf_get_units(dw, cu, &cu, NULL, &type, NULL, NULL) == 0)
		if (type == DW_UT_skeleton || type == DW_UT_split_compile ||
		    type == DW_UT_split_type)
			return true;
	return false;
}

/*
 * An empty DWARF (a tiny .debug_frame, no unit) to give libdw as the
 * alternate of a Dwarf that has none: on the first alternate form it
 * meets, libdw would otherwise open the path .gnu_debugaltlink names, as
 * above. Alternate forms then read nothing.
 */
static Dwarf *none_dwarf(struct fl_srcinfo *si)
{
	char *data;

	if (!si->none.image &&
	    fl_elfimage__one_section(&si->none, NULL, ".debug_frame", 4, 0, 4, &data))
		return NULL;
	return fl_elfimage__dwarf(&si->none);
}

/*
 * libdw (0.188) takes a string of .debug_str or .debug_line_str to end
 * within its section and reads it with strlen(): in a section whose last
 * byte is not NUL (a hostile file's), the last string is read past the
 * section's end, out of the buffer libelf allocated. Such a section is
 * hidden (SHT_NOBITS in libelf's copy of the headers; the file is not
 * written): the names it holds are not given, the rest of the DWARF is.
 * Checked as libdw will read it, inflated (libdw would inflate it anyway).
 */
static void hide_unterminated_strings(Elf *elf)
{
	static const char *const names[] = {".debug_str", ".debug_line_str", ".zdebug_str",
					    ".zdebug_line_str"};
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		bool ok = true, known = false;
		Elf_Data *d;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		for (size_t i = 0; name && i < ARRAY_SIZE(names); i++)
			known |= !strcmp(name, names[i]);
		if (!known)
			continue;
		if (sh.sh_flags & SHF_COMPRESSED)
			ok = elf_compress(scn, 0, 0) >= 0;
		else if (name[1] == 'z')
			ok = elf_compress_gnu(scn, 0, 0) >= 0;
		d = ok ? elf_getdata(scn, NULL) : NULL;
		if (d && (!d->d_size || (d->d_buf && ((const char *)d->d_buf)[d->d_size - 1] == '\0')))
			continue;
		if (gelf_getshdr(scn, &sh)) {
			sh.sh_type = SHT_NOBITS;
			gelf_update_shdr(scn, &sh);
		}
	}
}

int fl_srcinfo__open(Elf *elf, Elf *alt, struct fl_srcinfo **ret)
{
	_cleanup_(fl_srcinfo__freep) struct fl_srcinfo *si = NULL;
	Dwarf *none;

	if (!elf || !ret)
		return -EINVAL;
	si = calloc(1, sizeof(*si));
	if (!si)
		return -ENOMEM;
	hide_unterminated_strings(elf);
	si->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!si->dw)
		return -ENOENT;
	if (has_split_units(si->dw))
		return -ENOTSUP;
	none = none_dwarf(si);
	if (!none)
		return -ENOMEM; /* libdw would be free to look for files itself */
	if (alt) {
		hide_unterminated_strings(alt);
		si->alt_dw = dwarf_begin_elf(alt, DWARF_C_READ, NULL);
		if (si->alt_dw && has_split_units(si->alt_dw)) {
			dwarf_end(si->alt_dw);
			si->alt_dw = NULL;
		}
		if (si->alt_dw)
			dwarf_setalt(si->alt_dw, none);
	}
	dwarf_setalt(si->dw, si->alt_dw ? si->alt_dw : none);
	*ret = TAKE_PTR(si);
	return 0;
}

/* ---- building a unit's index ---- */

static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t ncap = *cap ? *cap : 64;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*arr, ncap * size);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = ncap;
	return 0;
}

/* Adds die (a function or an inlined call with code) under parent; its index, or SRC_NONE. */
static uint32_t add_func(struct sunit *u, Dwarf_Die *die, uint32_t parent, bool inlined, int *err)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	struct sfunc *f;

	if (u->nr_funcs >= SRC_MAX_FUNCS)
		return SRC_NONE;
	*err = grow((void **)&u->funcs, &u->cap_funcs, u->nr_funcs + 1, sizeof(*u->funcs));
	if (*err)
		return SRC_NONE;
	f = &u->funcs[u->nr_funcs];
	*f = (struct sfunc){.off = dwarf_dieoffset(die),
			    .parent = parent,
			    .first = (uint32_t)u->nr_franges,
			    .inlined = inlined};
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		*err = grow((void **)&u->franges, &u->cap_franges, u->nr_franges + 1,
			    sizeof(*u->franges));
		if (*err)
			return SRC_NONE;
		u->franges[u->nr_franges++] =
			(struct srange){.lo = lo, .hi = hi, .func = (uint32_t)u->nr_funcs};
		f->nr++;
	}
	if (!f->nr)
		return SRC_NONE; /* no code: a declaration, or an abstract instance */
	return (uint32_t)u->nr_funcs++;
}

static int cmp_range(const void *a, const void *b)
{
	const struct srange *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* Same start: the outer (longer) one first, so that the last one is the innermost. */
	if (x->hi != y->hi)
		return x->hi > y->hi ? -1 : 1;
	return x->func < y->func ? -1 : x->func > y->func;
}

/* Walks the unit's DIE tree once: every function and inlined call with code, and what holds it. */
static int unit_build(struct sunit *u, Dwarf_Die *cu)
{
	Dwarf_Die stack[SRC_MAX_DEPTH];
	uint32_t holder[SRC_MAX_DEPTH]; /* the function each level lies in */
	int depth = 0, err = 0;
	Dwarf_Off last;

	if (dwarf_child(cu, &stack[0]) != 0)
		return 0;
	holder[0] = SRC_NONE;
	last = dwarf_dieoffset(&stack[0]);
	while (depth >= 0) {
		Dwarf_Die *die = &stack[depth];
		int tag = dwarf_tag(die);
		uint32_t inner = holder[depth];

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
			uint32_t f = add_func(u, die, holder[depth],
					      tag == DW_TAG_inlined_subroutine, &err);

			if (err)
				return err;
			if (f != SRC_NONE)
				inner = f;
		}
		/* Down into the children, else along to the next sibling, else back up. */
		if (depth + 1 < SRC_MAX_DEPTH && dwarf_haschildren(die) &&
		    dwarf_child(die, &stack[depth + 1]) == 0) {
			holder[++depth] = inner;
		} else {
			while (depth >= 0 && dwarf_siblingof(&stack[depth], &stack[depth]) != 0)
				depth--;
			if (depth < 0)
				break;
		}
		/*
		 * A pre-order walk only moves forward in the unit. Malformed DWARF
		 * (a DIE that claims children it has not) makes dwarf_child() give
		 * a sibling, and the walk would see the same DIEs again at every
		 * depth: exponential time. Such a unit is indexed as far as it went.
		 */
		if (dwarf_dieoffset(&stack[depth]) <= last)
			break;
		last = dwarf_dieoffset(&stack[depth]);
	}
	if (!u->nr_franges)
		return 0;
	u->sorted = malloc(u->nr_franges * sizeof(*u->sorted));
	if (!u->sorted)
		return -ENOMEM;
	memcpy(u->sorted, u->franges, u->nr_franges * sizeof(*u->sorted));
	qsort(u->sorted, u->nr_franges, sizeof(*u->sorted), cmp_range);
	return 0;
}

static struct sunit *unit_slot(struct sunit *tab, size_t cap, Dwarf_Off off)
{
	size_t i = fl_hash_u64(off) & (cap - 1);

	while (tab[i].off && tab[i].off != off)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

/* The index of the unit cu, built now if it is new; NULL on -ENOMEM. */
static struct sunit *unit_get(struct fl_srcinfo *si, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct sunit *u;

	if (off == 0 || off == (Dwarf_Off)-1)
		return NULL;
	if ((si->nr_units + 1) * 2 > si->cap_units) {
		size_t ncap = si->cap_units ? si->cap_units * 2 : 64;
		struct sunit *tab = calloc(ncap, sizeof(*tab));

		if (!tab)
			return NULL;
		for (size_t i = 0; i < si->cap_units; i++)
			if (si->units[i].off)
				*unit_slot(tab, ncap, si->units[i].off) = si->units[i];
		free(si->units);
		si->units = tab;
		si->cap_units = ncap;
	}
	u = unit_slot(si->units, si->cap_units, off);
	if (u->off)
		return u;
	u->off = off;
	si->nr_units++;
	if (unit_build(u, cu)) {
		/* Kept empty: the unit is not walked again. */
		unit_fini(u);
		*u = (struct sunit){.off = off};
	}
	return u;
}

static bool func_holds(const struct sunit *u, const struct sfunc *f, uint64_t addr)
{
	for (uint32_t i = 0; i < f->nr; i++)
		if (u->franges[f->first + i].lo <= addr && addr < u->franges[f->first + i].hi)
			return true;
	return false;
}

/* The innermost function or inlined call holding addr, or SRC_NONE. */
static uint32_t innermost(const struct sunit *u, uint64_t addr)
{
	size_t lo = 0, hi = u->nr_franges;
	uint32_t f;

	/* The last range that starts at or before addr: its function is the innermost, or inside it. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->sorted[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return SRC_NONE;
	for (f = u->sorted[lo - 1].func; f != SRC_NONE; f = u->funcs[f].parent)
		if (func_holds(u, &u->funcs[f], addr))
			return f;
	return SRC_NONE;
}

/* ---- lookups ---- */

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

/* Where a function is defined: DW_AT_decl_file and DW_AT_decl_line, through its abstract origin. */
static void decl_site(Dwarf_Die *die, const char **file, int *line)
{
	if (dwarf_decl_line(die, line) || *line < 0)
		*line = 0;
	*file = dwarf_decl_file(die);
}

size_t fl_srcinfo__frames(struct fl_srcinfo *si, uint64_t vaddr, struct fl_src_frame *out,
			  size_t max)
{
	struct fl_src_frame inner[SRC_MAX_DEPTH];
	const char *file = NULL;
	struct sunit *u;
	Dwarf_Die cu;
	Dwarf_Line *dl;
	int line = 0;
	size_t n = 0;
	uint32_t f;

	if (!si || !max || !dwarf_addrdie(si->dw, vaddr, &cu) || !(u = unit_get(si, &cu)))
		return 0;
	f = innermost(u, vaddr);
	if (f == SRC_NONE)
		return 0;
	/* The innermost frame is at the line the line table gives for the address. */
	dl = dwarf_getsrc_die(&cu, vaddr);
	if (dl) {
		file = dwarf_linesrc(dl, NULL, NULL);
		if (dwarf_lineno(dl, &line))
			line = 0;
	}
	/* Innermost first: each inlined call's site is where its caller stands. */
	for (; f != SRC_NONE && n < SRC_MAX_DEPTH; f = u->funcs[f].parent) {
		struct sfunc *fn = &u->funcs[f];

		if (!fn->named) {
			Dwarf_Die die;

			if (!dwarf_offdie(si->dw, fn->off, &die))
				break;
			fn->name = die_name(&die);
			if (fn->inlined)
				call_site(&cu, &die, &fn->call_file, &fn->call_line);
			decl_site(&die, &fn->decl_file, &fn->decl_line);
			fn->named = true;
		}
		inner[n++] = (struct fl_src_frame){.name = fn->name,
						   .file = file,
						   .line = line,
						   .decl_file = fn->decl_file,
						   .decl_line = fn->decl_line};
		if (!fn->inlined)
			break;
		file = fn->call_file;
		line = fn->call_line;
	}
	/* Outermost first; past max, the innermost ones are left out. */
	for (size_t i = 0; i < n && i < max; i++)
		out[i] = inner[n - 1 - i];
	return n < max ? n : max;
}
