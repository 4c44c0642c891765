/* SPDX-License-Identifier: GPL-2.0-or-later */
/* flamed collapse --inline: the functions inlined at a perf script frame's address, from DWARF. */
#ifndef FLAMED_CMD_INLINE_LOOKUP_H
#define FLAMED_CMD_INLINE_LOOKUP_H

#include <stddef.h>

#include "flamed/formats/perfscript.h"

#define INLINE_LOOKUP_MAX 32

struct inline_lookup;

int inline_lookup__new(struct inline_lookup **ret);
/* Accepts NULL. */
void inline_lookup__free(struct inline_lookup *il);
/*
 * The functions inlined at f's address in its module (an absolute path to
 * an ELF file with DWARF, here or in separate debug info), outermost first,
 * at most max; 0 when there are none or they cannot be known. The address
 * in the file is found from the frame's symbol and offset ("foo+0x1f": the
 * symbol's value plus the offset), or is the address itself in a non-PIE
 * executable. Names live as long as il.
 */
size_t inline_lookup__find(struct inline_lookup *il, const struct fl_ps_frame *f,
			   const char **names, size_t max);

#endif
