/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The folded-stacks reader: "frame;...;frame COUNT [COUNT]" lines from any tool, untrusted. */
#ifndef FLAMED_FOLDEDREAD_H
#define FLAMED_FOLDEDREAD_H

#include <float.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A line is a stack (frames separated by ';', root first), a blank, a
 * count, and optionally a second count after another blank (flamegraph.pl's
 * differential input: count before, count after). The stack is everything
 * before that one blank, blanks at its end included, as flamegraph.pl reads
 * it. Counts are decimal numbers, possibly fractional ("12", "0.5", "3.");
 * blanks after the last are allowed (flamegraph.pl skips such a line).
 * Everything else is a malformed line: skipped and counted by kind, never
 * fatal.
 */
enum fl_folded_bad {
	FL_FOLDED_BLANK,    /* empty or only white space */
	FL_FOLDED_NO_COUNT, /* no count at the end */
	FL_FOLDED_NEGATIVE, /* a count below zero */
	FL_FOLDED_CRLF,	    /* ends in a carriage return (DOS line ending) */
	FL_FOLDED_NO_STACK, /* a count and no stack */
	FL_FOLDED_NUL,	    /* a NUL byte in the line */
	FL_FOLDED_TOO_LONG, /* longer than FL_FOLDED_MAX_LINE */
	FL_FOLDED_HUGE,	    /* a count above FL_FOLDED_MAX_COUNT (not a finite double) */
	FL_FOLDED_BAD__MAX,
};

/* Lines longer than this are skipped (and counted), whatever their content. */
#define FL_FOLDED_MAX_LINE (16u << 20)

/* Counts above this (the largest double) are malformed; larger ones are drawn, as flamegraph.pl does. */
#define FL_FOLDED_MAX_COUNT DBL_MAX

/* A short English name of a kind ("no count"), static storage. */
const char *fl_folded__bad_name(enum fl_folded_bad kind);

struct fl_folded_line {
	const char *stack; /* not NUL-terminated; valid during the callback only */
	size_t len;
	double count[2];    /* count[0] only, or before, after */
	unsigned nr_counts; /* 1 or 2 */
	size_t lineno;	    /* from 1 */
};

#define FL_FOLDED_FIRST_BAD 3

struct fl_folded_stats {
	size_t lines; /* lines seen, good or bad */
	size_t good;
	size_t bad[FL_FOLDED_BAD__MAX];
	size_t nr_bad; /* sum of bad[] */
	/* The first FL_FOLDED_FIRST_BAD malformed lines, for the user. */
	size_t first_bad_line[FL_FOLDED_FIRST_BAD];
	enum fl_folded_bad first_bad_kind[FL_FOLDED_FIRST_BAD];
};

/* Called once per good line; a non-zero return stops the reading and is returned. */
typedef int (*fl_folded_line_fn)(const struct fl_folded_line *line, void *ctx);

/*
 * Parses the len bytes at buf (a last line without '\n' counts) and calls fn
 * for each good line. *st is zeroed first. Returns 0 or fn's non-zero return.
 */
int fl_folded__parse(const char *buf, size_t len, fl_folded_line_fn fn, void *ctx,
		     struct fl_folded_stats *st);

/*
 * The same, reading fd to its end in chunks: memory stays bounded by the
 * longest line, not the input size (the buffer doubles up to twice
 * FL_FOLDED_MAX_LINE; longer lines are skipped without being kept). Returns 0,
 * fn's non-zero return, -errno of a failed read, or -ENOMEM.
 */
int fl_folded__parse_fd(int fd, fl_folded_line_fn fn, void *ctx, struct fl_folded_stats *st);

/*
 * The same, when the first head_len bytes of the input were already read
 * from fd (to tell its format): they are parsed first, then the rest of fd.
 * head_len is at most 1 MiB (-EINVAL beyond).
 */
int fl_folded__parse_fd_after(int fd, const void *head, size_t head_len, fl_folded_line_fn fn,
			      void *ctx, struct fl_folded_stats *st);

#endif
