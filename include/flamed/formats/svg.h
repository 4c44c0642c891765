/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The SVG writer: an interactive flame graph (docs/svg-format.md) from a flame tree. */
#ifndef FLAMED_SVG_H
#define FLAMED_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "flamed/profile/flametree.h"
#include "flamed/formats/palette.h"

struct fl_nameattr;

struct fl_svg_opts {
	size_t sz; /* sizeof(struct fl_svg_opts) */
	/* Texts, any bytes (escaped, invalid UTF-8 replaced); NULL for the defaults. */
	const char *title;     /* default "Flame Graph", "Icicle Graph", "Flame Chart" */
	const char *subtitle;  /* NULL: none */
	const char *notes;     /* NULL: none; goes into <desc id="notes"> */
	const char *fonttype;  /* default "Verdana" */
	const char *countname; /* default "samples" */
	const char *nametype;  /* default "Function:" */
	double width;	       /* image width in pixels, default 1200 */
	double frame_height;   /* default 16 */
	double fontsize;       /* default 12 */
	double fontwidth;      /* average character width / fontsize, default 0.59 */
	/* Frames narrower than this many pixels are merged (flamegraph.pl's default: 0.1). */
	double minwidth;
	/* If > 0, minwidth is this percentage of the total instead. */
	double minwidth_pct;
	/* Percentages and widths relative to this instead of the sum of counts, if larger. */
	double total;
	enum fl_flametree_sort sort;
	bool inverted;		    /* icicle: roots at the top */
	bool flamechart;	    /* the tree is a flame chart (title, data-flamechart) */
	bool diff;		    /* colour by before/after (counts before are in the tree) */
	bool negate;		    /* diff: swap red and blue */
	/*
	 * diff as flamegraph.pl colours two-count input: by the change of the
	 * frame's own samples (the stacks that end at it), white when none,
	 * and its tooltip "NAME (N samples, P%; +D%)"; else by the change of
	 * the frame's inclusive count, gold when new (flamed diff).
	 */
	bool diff_self;
	struct fl_palette *palette; /* colours of a normal graph; required unless diff */
	/* --nameattr: a frame's tooltip, link, id, class by its name (NULL: none). */
	const struct fl_nameattr *nameattr;
	struct fl_rgb bg_top, bg_bottom; /* all zero: the default yellow gradient */
};

/*
 * Lays the tree out (fl_flametree__layout()) and writes the SVG to f.
 * An empty tree gives a graph without frames. Returns 0, -EINVAL (bad options), -ENOMEM or -EIO (what was
 * written may be partial; the caller owns f and makes the output atomic).
 */
int fl_svg__write(struct fl_flametree *t, const struct fl_svg_opts *opts, FILE *f);

/*
 * A count as the graph shows it, as flamegraph.pl does: rounded to a whole
 * number ("%.0f"), thousands separated by commas ("1,234,567"), of any
 * size. Writes it NUL-terminated to buf; returns its length.
 */
#define FL_SVG_COUNT_TEXT 540
size_t fl_svg__count_text(double v, char buf[FL_SVG_COUNT_TEXT]);

/*
 * The options of a graph of t as every writer takes them: opts (NULL, or
 * an older, shorter struct) with the defaults for what it leaves out, the
 * title by the layout when none is given, and the background gradient.
 * *total is what percentages and widths are of: the tree's total, or
 * opts->total if larger, 1 for an empty tree. Returns 0 or -EINVAL for a
 * value out of bounds (or no palette for a graph that is not a diff).
 */
int fl_svg__resolve_opts(const struct fl_flametree *t, const struct fl_svg_opts *opts,
			 struct fl_svg_opts *op, double *total, struct fl_rgb *top,
			 struct fl_rgb *bottom);

/*
 * The count below which fl_svg__write() merges a frame instead of drawing
 * it, for a tree whose total is tree_total, with opts; 0 when opts are out
 * of bounds. A tree built with fold_below at or under it draws the same.
 */
double fl_svg__min_count(const struct fl_svg_opts *opts, double tree_total);

/*
 * The length of a frame name as the graph shows it: without its annotation
 * ("_[k]", "_[j]", "_[i]", "_[w]"), which only picks its colour.
 */
size_t fl_svg__display_len(const char *name, size_t len);

#endif
