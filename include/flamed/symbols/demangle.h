/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Demangling of C++ (Itanium ABI) and Rust (legacy and v0) symbol names, via libiberty. */
#ifndef FLAMED_DEMANGLE_H
#define FLAMED_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Names longer than this (in bytes, without the NUL) are not demangled.
 * libiberty's parser recurses once per level of nesting: at this cap a
 * hostile name takes up to about 400 KiB of stack (real names, a few KiB).
 * Real names are much shorter (libLLVM's longest: 554 bytes). perf and
 * c++filt stop at 1024 bytes, the guard of libiberty's stack-only interface;
 * fl_demangle() parses C++ names on the heap instead.
 */
#define FL_DEMANGLE_MAX_NAME 4096

/*
 * A demangled name longer than this is not used (the raw name is): a few
 * hundred bytes of hostile input can demangle to an exponential amount of
 * text (nested template arguments or Rust v0 back-references that refer to
 * each other), so the demangler is stopped here.
 */
#define FL_DEMANGLE_MAX_OUTPUT 65536

/* Flags of fl_demangle_flags(). */
enum fl_demangle_flags {
	/*
	 * C++ as `perf report -v` and c++filt show it: parameter lists,
	 * qualifiers of methods, return types of function templates and
	 * " [clone .cold]" suffixes: "long ns::spin<long>(long)". Without it,
	 * as perf 6.1 (Debian 12) shows it by default, "ns::spin<long>", with
	 * a clone suffix kept as it is in the raw name: "ns::spin<long>.cold".
	 * No effect on Rust names.
	 */
	FL_DEMANGLE_PARAMS = 1u << 0,
};

/* Bits of fl_demangle()'s non-negative return value. */
enum fl_demangle_result {
	FL_DEMANGLE_RAW = 0,		/* buf holds the name as it was */
	FL_DEMANGLE_DONE = 1 << 0,	/* buf holds the demangled name */
	FL_DEMANGLE_TRUNCATED = 1 << 1, /* buf holds only the start of it */
};

/*
 * The cheap test fl_demangle() starts with: true when name starts with
 * "_Z" (C++, and Rust's legacy mangling) or "_R" (Rust v0). Only such names
 * are given to libiberty. Not handled: "__Z" (Mach-O's extra underscore,
 * never in ELF files) and gcc's static constructors "_GLOBAL__sub_I_<name>"
 * (run once at start-up; perf and c++filt leave them raw too), nor D, Ada,
 * Java or Swift.
 */
bool fl_demangle__is_mangled(const char *name);

/*
 * Writes the name to show for the symbol name (from an ELF file: any bytes,
 * NUL-terminated) into buf, NUL-terminated, size bytes at most: the
 * demangled name when name is a C++ or Rust mangled name libiberty accepts
 * completely, else name itself. Names longer than FL_DEMANGLE_MAX_NAME and
 * names whose demangled form is longer than FL_DEMANGLE_MAX_OUTPUT stay raw.
 * Rust names lose their hashes (legacy "::h<16 hex digits>", v0 crate
 * disambiguators) and ".llvm.<n>" suffixes. C++ names are shown as perf
 * shows them by default: no parameters (see FL_DEMANGLE_PARAMS).
 *
 * When the result does not fit, buf holds its longest prefix of at most
 * size - 1 bytes that does not end inside a UTF-8 sequence, and the result
 * has FL_DEMANGLE_TRUNCATED set.
 *
 * Returns FL_DEMANGLE_RAW or FL_DEMANGLE_DONE, with FL_DEMANGLE_TRUNCATED
 * or-ed in when buf was cut; or -EINVAL when name or buf is NULL or size is
 * 0 (buf is then untouched). Whatever it returns but -EINVAL, buf holds the
 * name to show. No allocation for names that are not mangled; thread-safe
 * (libiberty's callback interface keeps no global state).
 */
int fl_demangle(const char *name, char *buf, size_t size);

/* Same, with enum fl_demangle_flags; -EINVAL for unknown flags. */
int fl_demangle_flags(const char *name, unsigned int flags, char *buf, size_t size);

#endif
