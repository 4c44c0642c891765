/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Finding CPython (3.11+) in a mapped ELF file: where its _PyRuntime is and
 * which version it is, and the structure offsets the BPF program follows
 * for that version (python_abi.h): 3.11, 3.12 and 3.13.
 */
#ifndef FLAMED_PYRUNTIME_H
#define FLAMED_PYRUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flamed/python_abi.h"

/* PT_LOAD segments kept by fl_pyruntime__probe(); a file with more is refused. */
#define FL_PYRUNTIME_MAX_LOADS 16

/* What a mapped ELF file holds of CPython: the interpreter state's address and the version. */
struct fl_pyruntime {
	/* st_value of _PyRuntime in .dynsym (or .symtab): an ELF virtual address */
	uint64_t runtime_vaddr;
	/* PY_VERSION_HEX: the value of the Py_Version symbol, read from the file */
	uint32_t version;
	/*
	 * The PT_LOAD segments with file data, in program header order: to
	 * turn a mapping's (start, pgoff) into the load bias.
	 */
	size_t nr_loads;
	struct {
		uint64_t offset, vaddr, filesz;
	} loads[FL_PYRUNTIME_MAX_LOADS];
	/*
	 * 3.13: the offsets the file's _Py_DebugOffsets give (has_offsets),
	 * what fl_pyruntime__offsets_of() returns. Other versions: unset.
	 */
	bool has_offsets;
	struct fl_py_offsets offsets;
};

/*
 * Whether a mapped file's path can be a CPython: its basename is "python3",
 * "python3.N" with up to three ABI flag letters ("python3.11",
 * "python3.11d", "python3.13t"), or "libpython3.N<flags>.so" with or without
 * a version after it ("libpython3.11.so.1.0"). Maps show the file itself, so
 * a symlink's name ("python") is never what is asked about. Cheap, no I/O;
 * a false positive costs one fl_pyruntime__probe(). NULL: false.
 */
bool fl_pyruntime__candidate(const char *path);

/*
 * Reads fd, a regular ELF file of flamed's own class and machine, with
 * pread (elf_begin(ELF_C_READ); never mapped: another user's file, which may
 * be truncated under us) and fills *out. _PyRuntime and Py_Version are
 * looked up in .dynsym, else .symtab; both must be defined objects, Py_Version
 * 4 or 8 bytes inside a section with file data, _PyRuntime inside a
 * PT_LOAD, and the version 3.11 or later. For a 3.13 final release the
 * _Py_DebugOffsets at the start of _PyRuntime (initialized data: read from
 * the section's file bytes) are read too and mapped into out->offsets: the
 * cookie "xdebugpy", a version equal to Py_Version, a default (not
 * free-threaded) build and every field the program follows inside its
 * structure's size and the part of it the program reads, else -EPROTO.
 * The fd stays the caller's and its offset is not used. *out is written
 * only on success.
 *
 * Returns 0; -ENOENT when the file has no _PyRuntime or no Py_Version (not a
 * CPython 3.11+: 3.10 and older have no Py_Version); -EINVAL when fd is not a
 * regular file or not an ELF file; -EPROTO when the file is malformed (a
 * symbol or segment out of bounds, a version that cannot be, 3.13 debug
 * offsets that are not, more than
 * FL_PYRUNTIME_MAX_LOADS segments); -EFBIG when its header claims more
 * sections or segments than flamed reads (symbols/elfsize.h); -ENOEXEC
 * for an ELF file of another class, byte order or machine than flamed's (a
 * 32-bit CPython: the offsets are not its layout; not -EOPNOTSUPP, which is
 * fl_pyruntime__offsets()' "a version without a table"); or -errno of
 * fstat/pread. libelf running out of memory reads as a file it cannot
 * read (-EINVAL) or a table it skips.
 */
int fl_pyruntime__probe(int fd, struct fl_pyruntime *out);

/*
 * _PyRuntime's address in a process that maps the file's bytes at pgoff
 * (page-aligned, as in /proc/PID/maps) at map_start. The segment is the one
 * whose file range, from its first page (in the running kernel's page size)
 * to the end of its file data, holds pgoff; of two that share a page, the
 * later one: a segment is mapped from the page holding its start. Any
 * mapping of the file will do, the first (pgoff 0) as well as the others.
 * Returns 0 and *addr, or -ENOENT when no PT_LOAD covers pgoff.
 */
int fl_pyruntime__address(const struct fl_pyruntime *r, uint64_t map_start, uint64_t pgoff,
			  uint64_t *addr);

/*
 * The offsets the BPF program follows for a version (PY_VERSION_HEX) into
 * *off: 0, -EOPNOTSUPP for a version flamed has no table for, or -EINVAL
 * (off NULL). A table exists for 3.11.x final releases, any micro (the
 * pre-releases are refused: layouts moved during the alphas and betas), on
 * x86-64, where it is checked, and arm64 (the same LP64 layout: the unit
 * test checks it where it is built), and 3.12.x final releases likewise
 * (from 3.12.1's headers, checked by a live walk where a 3.12 is
 * installed). 3.13 has no table here: its offsets come from the file
 * (fl_pyruntime__offsets_of()); 3.14 and later are not supported.
 * *off is written only on success.
 */
int fl_pyruntime__offsets(uint32_t version, struct fl_py_offsets *off);

/*
 * The offsets for the CPython fl_pyruntime__probe() found in r: a 3.13's
 * from its _Py_DebugOffsets (r->has_offsets; with the str state's bits
 * and FRAME_OWNED_BY_CSTACK from 3.13's headers, no GIL holder), else
 * fl_pyruntime__offsets(r->version). 0, -EOPNOTSUPP (no offsets for that
 * version) or -EINVAL (r or off NULL). *off is written only on success.
 */
int fl_pyruntime__offsets_of(const struct fl_pyruntime *r, struct fl_py_offsets *off);

#endif
