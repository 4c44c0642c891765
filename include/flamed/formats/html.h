/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The HTML writer: a self-contained page with every frame of a flame tree (docs/html-format.md). */
#ifndef FLAMED_HTML_H
#define FLAMED_HTML_H

#include <stdio.h>

#include "flamed/formats/svg.h"
#include "flamed/profile/flametree.h"

/*
 * Lays the tree out with every frame kept (nothing merged, whatever
 * opts->minwidth says) and writes the page to f: the profile as a string
 * table and integer columns, zlib-compressed and base64-encoded, and the
 * viewer that draws it. Takes the SVG's options: titles, counts and
 * name type, font, frame height, total, sort, inverted, flame chart, diff,
 * negate, palette (colours are computed here, one per distinct name, or per
 * frame for diffs and waker chains), background. width, minwidth and
 * nameattr are the SVG's only. Returns 0, -EINVAL (bad options), -E2BIG
 * (more than 2^32 - 2 frames or names), -ENOMEM or -EIO (what was written
 * may be partial; the caller owns f and makes the output atomic).
 */
int fl_html__write(struct fl_flametree *t, const struct fl_svg_opts *opts, FILE *f);

#endif
