/* SPDX-License-Identifier: GPL-2.0-or-later */
/* flamegraph.pl's --nameattr files: attributes of the frames of a function. */
#ifndef FLAMED_NAMEATTR_H
#define FLAMED_NAMEATTR_H

#include <stddef.h>

/*
 * A line is a function name, a tab, and tab-separated KEY=VALUE pairs. The
 * keys flamed uses: title (the frame's tooltip, instead of "NAME (N
 * samples, P%)"), href (a link the frame opens when clicked; Ctrl-click
 * zooms), target (where: default _top), id, class (added to the frame's).
 * flamegraph.pl's g_extra and a_extra (raw SVG markup) are not taken; other
 * keys are ignored, as flamegraph.pl ignores them. Values are text: the
 * writer escapes them.
 */
struct fl_nameattr;

struct fl_nameattr_entry {
	const char *title, *href, *target, *id, *class_; /* NULL when not given */
};

/* What a file had that flamed does not take, for one note. */
struct fl_nameattr_stats {
	size_t lines, entries;
	size_t raw_markup; /* g_extra / a_extra pairs, ignored */
	size_t unknown;	   /* pairs of other keys, ignored */
};

/*
 * Parses len bytes. Returns 0, -ENOMEM, or -EINVAL for a malformed line:
 * then *bad_line is its number (from 1) and *why says what is wrong.
 */
int fl_nameattr__parse(const char *buf, size_t len, struct fl_nameattr **ret,
		       struct fl_nameattr_stats *st, size_t *bad_line, const char **why);
/* Accepts NULL. */
void fl_nameattr__free(struct fl_nameattr *na);
/* The attributes of the frames named name (len bytes), or NULL. */
const struct fl_nameattr_entry *fl_nameattr__find(const struct fl_nameattr *na, const char *name,
						  size_t len);

#endif
