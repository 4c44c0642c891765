/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The flame tree: stacks merged by common prefix, and its layout into drawn frames. */
#ifndef FLAMED_FLAMETREE_H
#define FLAMED_FLAMETREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Stacks go in root first; a frame of the tree is a distinct path of
 * names. Each frame has a count after (the one that gives widths) and a
 * count before (differential graphs; 0 otherwise), both inclusive of the
 * frames above it once fl_flametree__layout() ran.
 */
struct fl_flametree;

struct fl_flametree_opts {
	size_t sz; /* sizeof(struct fl_flametree_opts) */
	/*
	 * Flame chart: merge a frame only with the same frame of the previous
	 * stack added (stacks are in time order), so the x axis is time.
	 */
	bool flamechart;
	/* Reverse each stack before merging: leaves become roots. */
	bool reverse;
	/*
	 * The stacks arrive grouped: all those that share a prefix of frames
	 * (in merge order, after any reversal) one after the other, as a sort
	 * of the stacks gives them. A frame is then merged only with the same
	 * frame of the stack before, with no lookup. Flame charts are grouped
	 * by nature. If the promise is broken, a frame may be drawn twice.
	 */
	bool grouped;
	/*
	 * With grouped stacks (or a flame chart): a frame whose subtree is
	 * finished (a later stack does not pass through it) and whose count is
	 * below this has its subtree folded into it. The frames above it are
	 * dropped; their counts and their number stay in it. The tree then
	 * holds what a layout with min_count >= fold_below draws, not every
	 * frame. 0: nothing is folded.
	 */
	double fold_below;
};

/* A frame name of a stack given as separate strings. */
struct fl_str {
	const char *s;
	size_t len;
};

int fl_flametree__new(const struct fl_flametree_opts *opts, struct fl_flametree **ret);
/* Accepts NULL. */
void fl_flametree__free(struct fl_flametree *t);

/*
 * Adds a stack given as text, frames separated by ';' (an empty frame
 * between two ';' stays an empty name; empty ones at the end are dropped,
 * as flamegraph.pl's split drops them, but the first), with its counts before and after
 * (either may be 0; neither negative). Names are copied. Returns 0,
 * -EINVAL (len 0, a count < 0 or not finite), -E2BIG (more than
 * FL_FLAMETREE_MAX_DEPTH frames) or -ENOMEM.
 */
int fl_flametree__add(struct fl_flametree *t, const char *stack, size_t len, double before,
		      double after);
/* The same with the frames given one by one (n > 0). */
int fl_flametree__add_frames(struct fl_flametree *t, const struct fl_str *frames, size_t n,
			     double before, double after);

#define FL_FLAMETREE_MAX_DEPTH 8192

/* Sums of the counts added (after any scaling). */
double fl_flametree__total(const struct fl_flametree *t);
double fl_flametree__total_before(const struct fl_flametree *t);
/* Frames (distinct paths) in the tree, ids 1 to this; folded ones are gone. */
size_t fl_flametree__nr_frames(const struct fl_flametree *t);
/* Frames folded away (fold_below) so far; the rest is folded by the first layout. */
uint64_t fl_flametree__nr_folded(const struct fl_flametree *t);

/*
 * --normalize, as difffolded.pl does it: every stack's count before becomes
 * int(before * total after / total before), a whole number. Nothing
 * happens when the total before is 0.
 */
void fl_flametree__normalize_before(struct fl_flametree *t);

enum fl_flametree_sort {
	FL_SORT_NAME,  /* siblings by name, bytewise: towers stay put between graphs */
	FL_SORT_COUNT, /* siblings widest first (ties by name) */
	/*
	 * flamegraph.pl's order and frames: as its folded lines sorted
	 * bytewise ("a 5" < "a1 3" < "a;b 2", so a frame's place depends on
	 * what follows its name), each frame merged only with the same frame
	 * of the line before: a function with samples of its own and callees
	 * is two frames when a sibling whose name extends its name with a
	 * byte between ' ' and ';' ("cc", "cc1") sorts between them. Lines are
	 * taken to have a blank before their count, whose digits are not
	 * compared. Narrow frames are merged in place.
	 */
	FL_SORT_LINES,
};

struct fl_flametree_layout_opts {
	size_t sz;
	enum fl_flametree_sort sort; /* ignored for flame charts: input order */
	/*
	 * Frames whose count is below this are not drawn one by one: under each
	 * parent they are merged into one box (flame graph: after the wide
	 * siblings; flame chart: each run of consecutive narrow siblings in
	 * place). A box that is itself below min_count is not drawn.
	 */
	double min_count;
};

/* A drawn frame of the layout, in depth-first order, parents before children. */
struct fl_drawn {
	uint32_t node;	      /* the frame; meaningless for a merged box */
	uint32_t end;	      /* index of the first drawn frame after this one's subtree */
	uint32_t depth;	      /* 0 for roots */
	bool merged;	      /* a box for narrow frames */
	uint32_t nr_merged;   /* merged box: frames merged (siblings) */
	uint64_t nr_below;    /* merged box: frames below them */
	double start;	      /* in counts from the left edge */
	double count, before; /* inclusive */
	double own, own_before; /* the samples of stacks that end at this frame */
};

/*
 * Computes inclusive counts and the drawn frames. May be called again with
 * other options; no stack may be added after it with fold_below set. A
 * folded frame is always drawn merged, whatever min_count. Returns 0 or -ENOMEM. The array stays valid until the next
 * layout or fl_flametree__free().
 */
int fl_flametree__layout(struct fl_flametree *t, const struct fl_flametree_layout_opts *opts,
			 const struct fl_drawn **drawn, size_t *nr_drawn);

/* The name of a frame (node of a fl_drawn), NUL-terminated; lives as long as the tree. */
const char *fl_flametree__name(const struct fl_flametree *t, uint32_t node, size_t *len);
/* The frames of the path from a root to node, root first, for folded output. */
uint32_t fl_flametree__parent(const struct fl_flametree *t, uint32_t node);
/* A node's own counts (not inclusive): samples whose stack ends at it. */
void fl_flametree__self(const struct fl_flametree *t, uint32_t node, double *before, double *after);

#define FL_FLAMETREE_NONE UINT32_MAX

#endif
