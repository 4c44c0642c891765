/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The table compiler's reference engine, libdw, for the tests to compare against. Private to lib/. */
#ifndef FLAMED_CFITABLE_REF_H
#define FLAMED_CFITABLE_REF_H

#include <stddef.h>

#include "flamed/unwinding/cfitable.h"

/*
 * fl_cfitable__from_fd() and fl_cfitable__from_memory(), but each row asked
 * of libdw (dwarf_cfi_addrframe(), which interprets the FDE from its start
 * for every row: quadratic per FDE, bounded by the work bound) instead of
 * cfa_interp.h's one pass. Same results, same errors; the tables differ
 * where libdw's lookup answers from another FDE (overlapping FDEs without
 * .eh_frame_hdr: FL_CFITABLE_WHY_LIBDW rows) and where the work bound cuts
 * libdw's rows short. Not for flamed itself: it is the slow path.
 */
int fl_cfitable__from_fd_libdw(int fd, struct fl_cfitable *out);
int fl_cfitable__from_memory_libdw(const void *image, size_t size, struct fl_cfitable *out);

#endif
