/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Finding a binary's separate debug info: build-id, .gnu_debuglink, MiniDebugInfo. */
#ifndef FLAMED_DEBUGINFO_H
#define FLAMED_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

struct fl_debuginfo;

/* Where the debug info came from. */
enum fl_debuginfo_source {
	FL_DEBUGINFO_NONE,	    /* nothing found: the binary's own tables only */
	FL_DEBUGINFO_BUILD_ID,	    /* <debugdir>/.build-id/xx/rest.debug */
	FL_DEBUGINFO_DEBUGLINK,	    /* .gnu_debuglink: beside, .debug/, <debugdir>/<dir>/ */
	FL_DEBUGINFO_MINIDEBUGINFO, /* .gnu_debugdata, xz-compressed in the binary */
	FL_DEBUGINFO_DEBUGINFOD,    /* fetched by build-id from a debuginfod server */
};

struct fl_debuginfod;

struct fl_debuginfo_opts {
	size_t sz; /* sizeof(struct fl_debuginfo_opts) */
	/*
	 * Every path (the binary's directory, the debug directories, symlinks
	 * on the way) is resolved under this directory, as if it were "/"
	 * (openat2 RESOLVE_IN_ROOT): an open /proc/PID/root keeps a container's
	 * absolute symlinks inside the container. 0 (unset) or negative: the
	 * real root. The fd stays the caller's and is only used during find.
	 */
	int root_fd;
	/* NULL-terminated list of absolute directories; NULL: "/usr/lib/debug". */
	const char *const *debug_dirs;
	/* Cap on the decompressed MiniDebugInfo, in bytes; 0: FL_DEBUGINFO_MINI_MAX. */
	size_t max_minidebuginfo;
	/*
	 * Asked, when no separate debug file is found locally and the binary
	 * has no DWARF of its own, for the debug file of its build-id
	 * (debuginfod.h); never waited for: a fetch still going, or one
	 * skipped over the fetcher's budget, leaves
	 * fl_debuginfo__debuginfod_pending() true. The file it fetched is
	 * opened from the real root (flamed's own cache, not the process's
	 * root) and checked as any other candidate. NULL: not asked.
	 */
	struct fl_debuginfod *debuginfod;
};

#define FL_DEBUGINFO_MINI_MAX ((size_t)64 << 20)
/*
 * A debug file found by .gnu_debuglink for a binary without a build-id is
 * checked by the CRC-32 of all its bytes: one larger than this is refused
 * unread (a sparse file of a TiB costs its owner nothing, and flamed
 * hours of CPU). Real ones without a build-id are far smaller.
 */
#define FL_DEBUGINFO_MAX_CRC_SIZE ((uint64_t)256 << 20)

/*
 * Finds the debug info of the binary open at fd (a regular file the caller
 * checked is the mapped one), mapped from path (absolute, as seen from
 * root_fd; only its directory is used, for .gnu_debuglink; NULL: no
 * debuglink lookup by directory). In order:
 *   1. with a build-id note: <debugdir>/.build-id/xx/rest.debug;
 *   2. with .gnu_debuglink NAME: <dir>/NAME, <dir>/.debug/NAME and
 *      <debugdir>/<dir>/NAME;
 *   3. without DWARF in the binary: from opts->debuginfod, when it has
 *      fetched the build-id's debug file already;
 *   4. else .gnu_debugdata, decompressed in memory.
 * A separate file is used only when it is a regular ELF file of the same
 * class and machine, not the binary itself, and carries the binary's
 * build-id (when the binary has one; a debug file without a build-id is
 * then rejected), else matches the debuglink CRC-32 (and is at most
 * FL_DEBUGINFO_MAX_CRC_SIZE bytes). A binary that has both
 * .symtab and .debug_info is not searched for anything else.
 *
 * Finding nothing is not an error: *ret is set, with FL_DEBUGINFO_NONE
 * (why each candidate was refused goes to fl_pr_debug()). Returns 0,
 * -EINVAL (fd is not a regular ELF file libelf can read), -EFBIG (its
 * header claims more than 65536 sections or program headers: libelf
 * would allocate for each; candidates claiming so are refused), -EISDIR, or
 * -errno (fstat, dup, -ENOMEM). fd stays the caller's (the object keeps a
 * dup of it, and the debug file open, until fl_debuginfo__free()).
 */
int fl_debuginfo__find(int fd, const char *path, const struct fl_debuginfo_opts *opts,
		       struct fl_debuginfo **ret);

/*
 * Ends every Elf handed out below, closes the files and frees the
 * MiniDebugInfo image. Anything built on them (a Dwarf from
 * dwarf_begin_elf(), symbols pointing into their string tables) must be
 * gone first. Accepts NULL.
 */
void fl_debuginfo__free(struct fl_debuginfo *di);

enum fl_debuginfo_source fl_debuginfo__source(const struct fl_debuginfo *di);
/* "none", "build-id", "debuglink", "minidebuginfo", "debuginfod". */
const char *fl_debuginfo_source__str(enum fl_debuginfo_source src);

/*
 * The separate debug file as it was opened (under root_fd), or NULL (none,
 * or MiniDebugInfo). Lives until fl_debuginfo__free().
 */
const char *fl_debuginfo__path(const struct fl_debuginfo *di);

/*
 * The Elf handles below belong to di and live until fl_debuginfo__free():
 * do not elf_end() them. They are read-only and read with pread
 * (ELF_C_READ), never mapped: a file someone truncates while it is read
 * gives a short read and an error, never SIGBUS. Each section read (a whole
 * .debug_info for libdw) is copied into memory.
 */
/* The binary itself; never NULL. */
Elf *fl_debuginfo__binary_elf(const struct fl_debuginfo *di);
/* The separate debug file (build-id or debuglink), or NULL. */
Elf *fl_debuginfo__debug_elf(const struct fl_debuginfo *di);
/*
 * The files the two above read (-1: no debug file), open until
 * fl_debuginfo__free(): to read more of them later, dup them.
 */
int fl_debuginfo__binary_fd(const struct fl_debuginfo *di);
int fl_debuginfo__debug_fd(const struct fl_debuginfo *di);
/* The decompressed MiniDebugInfo (a .symtab, no DWARF), or NULL. */
Elf *fl_debuginfo__mini_elf(const struct fl_debuginfo *di);
/*
 * The ELF to give dwarf_begin_elf(): the debug file when it has a
 * .debug_info, else the binary when it has one, else NULL. Its addresses
 * are the binary's ELF virtual addresses.
 */
Elf *fl_debuginfo__dwarf_elf(const struct fl_debuginfo *di);
/*
 * The alternate DWARF of that ELF (the dwz file its .gnu_debugaltlink
 * names, carrying the build-id it names), or NULL: for fl_srcinfo__open().
 * Found under root_fd in <debugdir>/.build-id/, else at the path the
 * section gives (relative to the file holding the DWARF).
 */
Elf *fl_debuginfo__alt_elf(const struct fl_debuginfo *di);

/*
 * What reading di takes in memory, known before it is read, from the
 * section headers (and the compression headers) of files another user may
 * have written, so that a caller with a budget reads only what fits. Each
 * is an upper bound of what libelf and libdw allocate for those reads.
 *
 * fl_debuginfo__symbols_bytes(): the symbol tables (.symtab, .dynsym) and
 * their string tables of the binary, the debug file and the MiniDebugInfo,
 * and the MiniDebugInfo image itself (decompressed by find).
 *
 * fl_debuginfo__dwarf_bytes(): every debug section dwarf_begin_elf() reads
 * whole, of fl_debuginfo__dwarf_elf() and of the alternate DWARF, at its
 * size once inflated: a compressed section (SHF_COMPRESSED, or GNU's
 * .zdebug) of a few KiB may inflate to GiBs. A compression header that
 * cannot be read counts as UINT64_MAX. 0 when there is no DWARF.
 */
uint64_t fl_debuginfo__symbols_bytes(const struct fl_debuginfo *di);
uint64_t fl_debuginfo__dwarf_bytes(const struct fl_debuginfo *di);

/*
 * Inflates the compressed debug sections (SHF_COMPRESSED, zlib) of
 * fl_debuginfo__dwarf_elf() and of the alternate DWARF, at most max_bytes
 * of them in all (what the caller's budget allows of
 * fl_debuginfo__dwarf_bytes()), with libdeflate, about twice as fast as the
 * zlib that libdw would inflate them with in dwarf_begin_elf(). libelf's
 * copies of those sections then hold the inflated bytes, which di owns:
 * the ELF files stay valid until fl_debuginfo__free(). What is left
 * (another compression, a section past max_bytes) libdw inflates as
 * before. Once per di; before fl_srcinfo__open().
 */
void fl_debuginfo__inflate_dwarf(struct fl_debuginfo *di, uint64_t max_bytes);

/*
 * Whether opts->debuginfod was fetching the binary's debug file when it was
 * searched: finding it again once the fetch has ended may find more.
 */
bool fl_debuginfo__debuginfod_pending(const struct fl_debuginfo *di);

/* The binary's build-id (*id points into di), or 0 when it has none. */
size_t fl_debuginfo__build_id(const struct fl_debuginfo *di, const uint8_t **id);

/*
 * The CRC-32 that .gnu_debuglink stores (the usual one: zlib's crc32(),
 * reflected polynomial 0xedb88320). Start with crc = 0; chain calls by
 * passing the previous result.
 */
uint32_t fl_debuginfo__crc32(uint32_t crc, const void *buf, size_t len);

#endif
