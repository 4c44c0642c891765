/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The folded-stacks writer: FlameGraph's "root;...;leaf COUNT" lines. */
#ifndef FLAMED_FOLDED_H
#define FLAMED_FOLDED_H

#include <stdio.h>

struct fl_profile;

/*
 * Writes one line per distinct stack, "frame;frame;...;frame COUNT\n", root
 * first, lines sorted bytewise (as stackcollapse-perf.pl's output, so the
 * output of the same profile is always the same bytes). A pure function of
 * the profile. Returns 0, or -EIO / -ENOMEM (what was written may be partial;
 * the caller owns f and its error state).
 */
int fl_folded__write(const struct fl_profile *p, FILE *f);

#endif
