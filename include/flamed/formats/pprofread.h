/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pprof reader: a profile.proto message, gzipped or not, from any tool, untrusted. */
#ifndef FLAMED_PPROFREAD_H
#define FLAMED_PPROFREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flamed/formats/foldedread.h"

/* The most a profile may take once decompressed; a larger one is refused (-EFBIG). */
#define FL_PPROF_MAX_BYTES (512u << 20)

/* How many of its first bytes fl_pprof__detect() looks at. */
#define FL_PPROF_DETECT_BYTES 64

/*
 * True when buf[0..len) (the first bytes of a file: FL_PPROF_DETECT_BYTES,
 * or all of a shorter one; more are not looked at) is a pprof profile
 * rather than folded text: gzip's magic (1f 8b), or the start of a raw
 * protobuf message: fields of Profile with their wire types (writers put
 * different ones first: Go time_nanos, others sample_type) and a control
 * character among them (small numbers and lengths). Folded text never
 * holds either: it would start with a control character, or hold one.
 */
bool fl_pprof__detect(const void *buf, size_t len);

struct fl_pprof_read_opts {
	size_t sz; /* sizeof(struct fl_pprof_read_opts) */
	/*
	 * The sample type whose values are the counts, by its type name
	 * ("cpu", "samples", "alloc_space"); NULL: the profile's
	 * default_sample_type, else "cpu" where there is one, else the first.
	 */
	const char *sample_type;
	/*
	 * The most the profile may take, decompressed, in bytes; 0 (and
	 * anything above it): FL_PPROF_MAX_BYTES. For tests, and for callers
	 * with less memory to spare.
	 */
	size_t max_bytes;
};

struct fl_pprof_read_info {
	/*
	 * The sample type read and its unit ("cpu", "nanoseconds"), copied (cut
	 * at 63 bytes). When the sample type asked for is not there, type lists
	 * the ones that are instead ("samples, cpu", ending ", ..." when they do not fit).
	 */
	char type[64], unit[64];
	int64_t time_nanos, duration_nanos, period;
	uint64_t samples;     /* samples with a non-zero value, one callback each */
	uint64_t zero;	      /* samples whose value was 0, skipped */
	uint64_t negative;    /* ... below 0, skipped */
	uint64_t bad_refs;    /* strings, locations, functions, mappings, values it does not have */
	uint64_t names_fixed; /* names whose ';' or control characters were replaced */
	uint64_t too_long;    /* samples with a stack over FL_FOLDED_MAX_LINE bytes, skipped */
	/*
	 * On -EINVAL or -EFBIG, what is wrong, in English, static storage
	 * ("truncated gzip data", "not a profile.proto message"); else NULL.
	 */
	const char *error;
};

/*
 * Parses the pprof profile in buf[0..len) and calls fn once per sample with
 * its stack as a folded line (root first, frames separated by ';'; nr_counts
 * 1; lineno is the sample's index from 1). Frame names follow flamed's
 * folded conventions so that a profile flamed wrote reads back as the
 * folded stacks it recorded:
 *   - a sample's string label "comm" is its root frame (blanks as '_'),
 *     then "-PID" with a numeric label "pid", then "/TID" with "tid"
 *     ("[unknown]-PID" without a comm); a "cgroup" string label is a frame
 *     before it (the root); the first label of a key counts;
 *   - a location's lines go outermost first; all but its last (outermost)
 *     line are inlined, "_[i]";
 *   - a function in a mapping named "[kernel.kallsyms]" (or starting
 *     "[kernel") is a kernel one, "_[k]"; in a perf map ("perf-N.map"), JIT, "_[j]";
 *   - a location without lines is "[basename of its mapping]" ("[vdso]" as
 *     it is when that already has brackets), or "[unknown]" without a
 *     mapping; the mapping's suffix goes on it too ("[kernel.kallsyms]_[k]");
 *   - a line whose function has no name (nor system name), or is not in the
 *     profile, is named as a location without lines, with its suffix;
 *     a location id that is not in the profile is "[unknown]"; a sample
 *     without locations or root labels, "[unknown]";
 *   - ';' in a name becomes ':' and control characters '?' (counted).
 * The sample type is the one asked for, else the profile's
 * default_sample_type, else "cpu", else the first. Samples whose value of
 * it is 0 or negative are skipped (counted); the count is the value.
 * Anything the profile refers to and does not have (a string index, a
 * location, function or mapping id, a value) is counted in bad_refs, never
 * fatal. Memory stays bounded: the decompressed profile by max_bytes, its
 * decoding by 16 times that (plus 64 MiB), a line by FL_FOLDED_MAX_LINE.
 * Returns 0, fn's non-zero return, -EINVAL (not a profile: the gzip data
 * or the message does not decode, it has no sample type, or none of that
 * name: *info says which exist in type, as "samples, cpu"), -EFBIG (over
 * max_bytes, or too many objects for its size) or -ENOMEM; info->error
 * says which in English.
 */
int fl_pprof__parse(const void *buf, size_t len, const struct fl_pprof_read_opts *opts,
		    fl_folded_line_fn fn, void *ctx, struct fl_pprof_read_info *info);

#endif
