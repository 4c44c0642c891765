/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's snapshot directory read back: its snapshots in time order, and time ranges over them. */
#ifndef FLAMED_SNAPDIR_H
#define FLAMED_SNAPDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Times are nanoseconds since the Unix epoch (UTC), int64_t: enough for
 * the years 1678 to 2262, and whole seconds in every name flamed writes.
 */

/* The formats a snapshot has, by file extension: a bit set. */
enum fl_snap_format {
	FL_SNAP_FOLDED = 1u << 0, /* NAME.folded */
	FL_SNAP_SVG = 1u << 1,	  /* NAME.svg */
	FL_SNAP_PPROF = 1u << 2,  /* NAME.pb.gz */
	FL_SNAP_HTML = 1u << 3,	  /* NAME.html */
};

/* The longest snapshot base name: "2026-11-22T03-12-00Z" + "-" + seq. */
#define FL_SNAP_BASE_MAX 32

/*
 * How far apart two times may be and still count as the same moment: the
 * daemon names an interval by its start cut to the second, and a file's
 * mtime is when it was written, after the interval's samples were drained
 * and symbolized. A gap, a part of a snapshot outside the range, or an
 * uncovered start or end of the range is only said beyond this.
 */
#define FL_SNAPDIR_SLACK_NS (2 * 1000000000LL)

struct fl_snapshot {
	char base[FL_SNAP_BASE_MAX]; /* "2026-11-22T03-12-00Z" or "...Z-2": the name without extension */
	int64_t start_ns;	     /* from the name: the interval's start (UTC, whole seconds) */
	/*
	 * The oldest mtime of its files, when it was written: the interval's
	 * end (a little after it). Never before start_ns: an older mtime (a
	 * file touched by hand, a clock set back) is taken as start_ns.
	 */
	int64_t end_ns;
	unsigned int seq;     /* 1 without a "-N" suffix, else N (>= 2) */
	unsigned int formats; /* enum fl_snap_format bits: the files it has */
};

/*
 * Parses a snapshot file name: "YYYY-MM-DDTHH-MM-SSZ" (a real UTC date and
 * time), then "-N" (N from 2, no leading zero, at most 9 digits) or
 * nothing, then ".folded", ".svg", ".html" or ".pb.gz", and nothing else. On
 * success fills s's base, start_ns and seq, sets *format (one
 * enum fl_snap_format bit) and returns true; s->end_ns and s->formats are
 * not touched. "latest.folded", ".tmp-*" and anything else: false.
 */
bool fl_snapdir__parse_name(const char *name, struct fl_snapshot *s, unsigned int *format);

struct fl_snapdir;

/*
 * Lists the snapshots in the directory at path (relative to dirfd, or
 * AT_FDCWD): its entries whose name fl_snapdir__parse_name() accepts and
 * that are regular files (fstatat without following symlinks: latest.*
 * and any other link are not snapshots), grouped by base name, sorted by
 * start, then seq. The directory stays open (O_CLOEXEC) in the listing for
 * fl_snapdir__open(). At most max snapshots (0: 1,000,000) are kept;
 * beyond that -E2BIG. Returns 0 and *ret (free with fl_snapdir__free()),
 * or -errno of open/fstatat/getdents (-ENOTDIR: path is not a directory),
 * -E2BIG or -ENOMEM.
 */
int fl_snapdir__scan(int dirfd, const char *path, size_t max, struct fl_snapdir **ret);
void fl_snapdir__free(struct fl_snapdir *d);

size_t fl_snapdir__nr(const struct fl_snapdir *d);
/* The i-th snapshot (i < fl_snapdir__nr()), in time order; valid until fl_snapdir__free(). */
const struct fl_snapshot *fl_snapdir__get(const struct fl_snapdir *d, size_t i);

/*
 * Opens snapshot s's file of format (one bit it has) for reading, relative
 * to the listing's directory fd, without following a symlink, without
 * blocking and without becoming a controlling terminal, and only if it is
 * (still) a regular file. Returns the fd (the caller closes it) or -errno:
 * -ELOOP (now a symlink), -EINVAL (not a regular file, or a format s does
 * not have).
 */
int fl_snapdir__open(const struct fl_snapdir *d, const struct fl_snapshot *s, unsigned int format);

/* The file name of s in format (one bit): "BASE.folded"; buf holds FL_SNAP_BASE_MAX + 8 bytes. */
#define FL_SNAP_NAME_MAX (FL_SNAP_BASE_MAX + 8)
const char *fl_snapdir__file_name(const struct fl_snapshot *s, unsigned int format,
				  char buf[FL_SNAP_NAME_MAX]);

/* ---- times and ranges ------------------------------------------------------------- */

/* An open bound of a range: from the first snapshot, or to now. */
#define FL_SNAPDIR_OPEN INT64_MIN

/*
 * Parses a TIME, as a user gives one:
 *   2026-11-22T03:00:00Z, 2026-11-22T03:00Z     UTC ('z' too; seconds may
 *                                               have a fraction, ".5")
 *   2026-11-22T04:00:00+01:00, ...-0500, ...+01 with an offset from UTC
 *   2026-11-22 03:00, 2026-11-22T03:00[:SS]     local time (the TZ of the
 *                                               process; a time that a DST
 *                                               change skips is refused)
 *   2026-11-22                                  that day's 00:00, local time
 *   2026-11-22T03-12-00Z                        a snapshot's name (UTC)
 *   now
 *   -1h, -30m, -90s, -2d, -1h30m                before now: numbers with
 *                                               units d, h, m, s, each unit
 *                                               once, largest first
 * now_ns is "now". Returns 0 and *ret, or -EINVAL (-ERANGE: out of the
 * years 1678-2262) with *why, static English naming the problem ("no month
 * 13", "unknown unit 'x'"), for the caller to print with the forms above.
 */
int fl_snapdir__parse_time(const char *s, int64_t now_ns, int64_t *ret, const char **why);

/*
 * Parses a RANGE, "FROM..TO": TIMEs as fl_snapdir__parse_time() reads
 * them, either one empty for an open bound (FL_SNAPDIR_OPEN in *from or
 * *to): "-2h..-1h", "2026-11-22T03:00Z..", "..2026-11-22". With both,
 * FROM must be before TO. Returns 0, or -EINVAL/-ERANGE with *why, and
 * *which says which side is wrong ("FROM", "TO", or "RANGE" for the whole:
 * no "..", or FROM not before TO).
 */
int fl_snapdir__parse_range(const char *s, int64_t now_ns, int64_t *from, int64_t *to,
			    const char **why, const char **which);

/* A stretch of the range no snapshot covers. */
struct fl_snap_gap {
	int64_t start_ns, end_ns;
};

/* What fl_snapdir__select() found. */
struct fl_snap_selection {
	/* The range as used: an open FROM is the first selected snapshot's start, an open TO now_ns. */
	int64_t from_ns, to_ns;
	size_t first, nr; /* the snapshots selected: fl_snapdir__get(first .. first + nr - 1) */
	/*
	 * Of those, how many have none of the formats asked for (an SVG only):
	 * they are selected but cannot be read; their time shows as a gap.
	 */
	size_t nr_unreadable;
	/*
	 * Selected snapshots that stick out of the range by more than the
	 * slack, at its start or end: their samples cannot be split, so they
	 * are whole in the result. first_partial, last_partial: the first or
	 * the last readable one is.
	 */
	size_t nr_partial;
	bool first_partial, last_partial;
	/* Readable snapshots that start well before the one before them ends: samples counted twice? */
	size_t nr_overlapping;
	/*
	 * Where no readable snapshot covers the range, in time order: before
	 * the first one (head), between two (gaps), after the last (tail).
	 * Each is longer than the slack. gaps is allocated (the caller frees
	 * it with fl_snapdir__selection_fini()).
	 */
	bool has_head, has_tail;
	struct fl_snap_gap head, tail;
	struct fl_snap_gap *gaps;
	size_t nr_gaps;
};

/*
 * Selects the snapshots of d whose interval overlaps [from_ns, to_ns)
 * (FL_SNAPDIR_OPEN for either: the first snapshot, now_ns): by more than
 * the slack, or by more than half of the range or of the snapshot, when
 * those are short; a snapshot of no length is in if it starts in the
 * range. A snapshot ends at its mtime, or at the next one's start when
 * that is earlier (the name is cut to the second, the mtime is when it
 * was written). readable is the enum fl_snap_format bits the caller reads;
 * coverage (head, gaps, tail, partial) is of the snapshots that have one
 * of them. A selection of nothing (nr 0) is not an error: has_head says
 * the whole range is uncovered. Returns 0 or -ENOMEM (sel left empty).
 */
int fl_snapdir__select(const struct fl_snapdir *d, int64_t from_ns, int64_t to_ns,
		       int64_t now_ns, unsigned int readable, struct fl_snap_selection *sel);
void fl_snapdir__selection_fini(struct fl_snap_selection *sel);

#endif
