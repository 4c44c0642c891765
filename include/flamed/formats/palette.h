/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Frame colours of the flame graph: the --colors palettes, --hash, --cp maps, diff colours. */
#ifndef FLAMED_PALETTE_H
#define FLAMED_PALETTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct fl_rgb {
	uint8_t r, g, b;
};

/* --colors NAME, with flamegraph.pl's meaning of each name. */
enum fl_palette_kind {
	FL_PALETTE_HOT, /* the default: reds, oranges, yellows */
	FL_PALETTE_MEM, /* greens */
	FL_PALETTE_IO, /* blues */
	FL_PALETTE_WAKEUP, /* aqua */
	FL_PALETTE_CHAIN, /* off-CPU chains: waker frames (after a "-" frame) aqua, the rest blue */
	FL_PALETTE_JAVA, /* by kind: JIT/Java green, inline aqua, kernel orange, C++ yellow, C red */
	FL_PALETTE_JS, /* by kind: JIT/JS green, kernel orange, C++ yellow, C red */
	FL_PALETTE_PERL, /* by kind: Perl green, kernel orange, C++ yellow, C red */
	FL_PALETTE_RED,
	FL_PALETTE_GREEN,
	FL_PALETTE_BLUE,
	FL_PALETTE_AQUA,
	FL_PALETTE_YELLOW,
	FL_PALETTE_PURPLE,
	FL_PALETTE_ORANGE,
};

/* Parses a --colors name. Returns 0 or -EINVAL. */
int fl_palette__parse_kind(const char *name, enum fl_palette_kind *ret);
/* The --colors name of a kind (static storage). */
const char *fl_palette__kind_name(enum fl_palette_kind kind);

struct fl_palette_opts {
	enum fl_palette_kind kind;
	/*
	 * false: the colour's variation comes from a pseudo-random sequence with
	 * a fixed seed (so the same input gives the same SVG bytes);
	 * true (--hash): from a hash of the name, so a function has the same
	 * colour in every graph.
	 */
	bool hash;
};

struct fl_palette;

int fl_palette__new(const struct fl_palette_opts *opts, struct fl_palette **ret);
/* Accepts NULL. */
void fl_palette__free(struct fl_palette *p);

/* Flags for fl_palette__color(). */
#define FL_COLOR_WAKER 0x1 /* the frame is above a "-" separator frame in its stack (chain) */

/*
 * The colour of a frame. name is the full frame name of len bytes, with its
 * annotation if any: a trailing "_[k]" (kernel), "_[j]" (JIT), "_[i]"
 * (inlined), "_[w]" (waker) or "_[p]" (Python) selects the colour of that
 * kind in every palette (kernel orange, JIT green, inlined aqua, waker
 * aqua, Python blue; with --hash, FlameGraph's colours, which know no
 * Python); the variation
 * (hash or sequence) is computed from the name without the annotation.
 * A frame named "-" is grey. With a colour map loaded (fl_palette__load_map),
 * a name in the map keeps its colour, and a new name's colour is added to it.
 * Never fails: returns a grey when memory for the map runs out.
 */
struct fl_rgb fl_palette__color(struct fl_palette *p, const char *name, size_t len, unsigned flags);

/*
 * --cp: reads a colour map, one "NAME->rgb(R,G,B)" per line (flamegraph.pl's
 * palette.map format; the name is split off at the last "->"). The file is
 * untrusted: lines that are malformed, longer than 64 KiB, or with a
 * component above 255 are skipped and counted in *nr_bad (may be NULL).
 * Enables the map even when f is empty. Returns 0, -ENOMEM or -EIO.
 */
int fl_palette__load_map(struct fl_palette *p, FILE *f, size_t *nr_bad);
/*
 * Writes the map (loaded entries plus every name coloured since), sorted
 * bytewise by name, in the same format. Returns 0 or -EIO. The caller owns
 * f and makes the replacement atomic.
 */
int fl_palette__save_map(const struct fl_palette *p, FILE *f);

/*
 * The colour of a frame in a differential graph, from its inclusive counts
 * before and after: red when it grew, blue when it shrank (swapped with
 * negate), the intensity growing with |after - before| / max_abs_delta
 * (max_abs_delta > 0: the largest change of any frame); near white when
 * unchanged. A frame that is new (before == 0, after > 0) gets its own
 * colour, fl_palette__new_color().
 */
struct fl_rgb fl_palette__diff_color(double before, double after, double max_abs_delta, bool negate);
/*
 * flamegraph.pl's colour of a frame of a two-count graph, from the change
 * of its own samples: white for none, red where it grew (green and blue
 * 210 x (max - delta) / max), blue where it shrank; negate swaps them.
 */
struct fl_rgb fl_palette__fg_diff_color(double delta, double max_abs_delta, bool negate);
struct fl_rgb fl_palette__new_color(void);
/* The grey of "-" separators and of merged narrow frames. */
struct fl_rgb fl_palette__grey(void);

/*
 * --bgcolors: "yellow" (the default), "blue", "green", "grey" give a
 * vertical gradient from *top to *bottom; "#rrggbb" a flat colour (both
 * the same). Returns 0 or -EINVAL for anything else.
 */
int fl_palette__parse_bgcolors(const char *s, struct fl_rgb *top, struct fl_rgb *bottom);

#endif
