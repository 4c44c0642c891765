/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A streaming parser of `perf script` text: one callback per sample, memory bounded by one sample. */
#ifndef FLAMED_PERFSCRIPT_H
#define FLAMED_PERFSCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The text is fed in chunks cut anywhere. Lines are told apart as
 * stackcollapse-perf.pl tells them (see flamed(1), "Differences from
 * stackcollapse-perf.pl", for where this parser does better): '#' lines are
 * comments; an empty line ends a sample; a header is "COMM PID[/TID] ..."
 * (fl_perfscript__parse_header()); other lines are stack lines when they
 * have the shape "ADDRESS SYMBOL (MODULE)", indented or not, perf printing
 * the leaf first (fl_perfscript__parse_frame()). A header also ends the
 * sample before it, as does the end of the text. "\r\n" line ends work.
 * Lines longer than FL_PS_MAX_LINE bytes, lines that are neither, and
 * stack lines outside a sample are skipped and counted, never fatal.
 */
#define FL_PS_MAX_LINE (1u << 20)

/* Text fields point into the parser's buffers: valid during the callback only. */
struct fl_ps_str {
	const char *s;
	size_t len;
};

struct fl_ps_frame {
	struct fl_ps_str addr; /* hex, as printed */
	struct fl_ps_str sym;  /* the symbol, "+0x..." offset removed; may be empty */
	struct fl_ps_str mod;  /* the module, in "(...)"; empty when there is none */
	bool has_mod;	       /* false: the line had no "(...)" (perf script -F ip,sym) */
	uint64_t offset;       /* the removed "+0x..." offset, 0 when there was none */
	bool has_offset;
};

struct fl_ps_sample {
	struct fl_ps_str comm;
	struct fl_ps_str pid;		  /* digits; empty when the header gives the tid alone (or a tid 0) */
	struct fl_ps_str tid;		  /* digits */
	struct fl_ps_str event;		  /* empty when the header has none */
	uint64_t period;		  /* 0 when the header has none (or 0) */
	const struct fl_ps_frame *frames; /* leaf first */
	size_t nr_frames;
};

struct fl_ps_stats {
	uint64_t lines;
	uint64_t samples;      /* samples passed to the callback */
	uint64_t unrecognized; /* lines skipped: neither a header nor a stack line in a sample */
	uint64_t too_long;     /* lines skipped: longer than FL_PS_MAX_LINE */
	uint64_t dropped;      /* stack lines skipped with the header that could not be read */
};

/* A non-zero return stops the parser and is returned by feed/finish. */
typedef int (*fl_ps_sample_fn)(const struct fl_ps_sample *s, void *ctx);

struct fl_perfscript;

int fl_perfscript__new(fl_ps_sample_fn fn, void *ctx, struct fl_perfscript **ret);
/* Accepts NULL. */
void fl_perfscript__free(struct fl_perfscript *p);
/* Parses len more bytes. Returns 0, -ENOMEM or the callback's non-zero return. */
int fl_perfscript__feed(struct fl_perfscript *p, const char *buf, size_t len);
/*
 * The end of the text: the last line and sample. Feeding may go on after
 * it (the next file). Returns as feed does.
 */
int fl_perfscript__finish(struct fl_perfscript *p);
void fl_perfscript__stats(const struct fl_perfscript *p, struct fl_ps_stats *st);

/* Parses one header line (no line end). Returns false when it is not one. For tests. */
bool fl_perfscript__parse_header(const char *line, size_t len, struct fl_ps_sample *out);
/* Parses one stack line (no line end). Returns false when it is not one. For tests. */
bool fl_perfscript__parse_frame(const char *line, size_t len, struct fl_ps_frame *out);

#endif
