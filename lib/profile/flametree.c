// SPDX-License-Identifier: GPL-2.0-or-later
/* The flame tree: merges stacks by common prefix and lays the frames out for drawing. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/profile/flametree.h"
#include "flamed/common/strpool.h"
#include "common/hash.h"

/*
 * Node 0 is a virtual root above the roots; a parent is always created
 * before its children, so parent ids are smaller than child ids and one
 * backward pass over the nodes sums counts up the tree.
 *
 * Most of the work of reading a big profile is finding each frame's node.
 * Folded files are sorted, so a stack shares most of its frames with the
 * one before: the path of the previous stack is kept, and only the frames
 * after the common prefix (found with memcmp) are looked up, by
 * (parent, name id) in one open-addressing table.
 *
 * Grouped stacks (and flame charts) need no table: a frame past the common
 * prefix is new. They also say when a subtree is finished: when a stack
 * leaves it, nothing will be added under it again, and every node created
 * after its root is in it. A finished subtree narrower than fold_below is
 * then folded: its nodes are dropped (the node array is cut back to just
 * after its root) and their counts and number kept in the root. So the
 * tree holds the frames a layout can draw, plus one narrow node per
 * branch, however many distinct deep stacks there are.
 */

struct ft_node {
	uint32_t parent;
	uint32_t name; /* strpool id */
	double self, self_before;
	double count, before; /* inclusive, after layout */
	double start;	      /* flame chart: the count added before this frame appeared */
	uint64_t below;	      /* frames in the subtree, without itself (after layout) */
	bool folded;	      /* its subtree was folded: count, before and below are set */
};

/* What the finished children of a node on the current path add up to. */
struct ft_acc {
	double count, before;
	uint64_t below;
};

struct fl_flametree {
	struct fl_flametree_opts opts;
	struct fl_strpool *names;
	struct ft_node *nodes;
	size_t nr_nodes, cap_nodes;

	uint32_t *slots; /* node ids, FL_FLAMETREE_NONE when empty */
	size_t nr_slots; /* power of two */

	/*
	 * The previous stack's path: node ids, and a copy of its names back to
	 * back in prev (names[k] at prev + path_off[k]): comparing with the copy
	 * reads memory just written, not the string pool.
	 */
	uint32_t *path;
	struct ft_name {
		size_t off, len;
	} * path_names;
	size_t path_len;
	struct ft_acc *path_acc; /* grouped, fold_below > 0: for path[k] */
	char *prev;
	size_t prev_cap;
	struct fl_str *scratch; /* split or reversed frames */

	double total, total_before;
	uint64_t nr_folded; /* nodes dropped by folding */

	/* Layout output and workspace. */
	struct fl_drawn *drawn;
	size_t nr_drawn, cap_drawn;
	uint32_t *child_off; /* CSR: children of node i are kids[child_off[i] .. child_off[i+1]) */
	uint32_t *kids;
};

int fl_flametree__new(const struct fl_flametree_opts *opts, struct fl_flametree **ret)
{
	struct fl_flametree *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	if (opts)
		memcpy(&t->opts, opts,
		       opts->sz && opts->sz < sizeof(t->opts) ? opts->sz : sizeof(t->opts));
	err = fl_strpool__new(&t->names);
	t->cap_nodes = 1024;
	t->nodes = calloc(t->cap_nodes, sizeof(*t->nodes));
	t->nr_slots = 2048;
	t->slots = malloc(t->nr_slots * sizeof(*t->slots));
	t->path = malloc(FL_FLAMETREE_MAX_DEPTH * sizeof(*t->path));
	t->path_names = malloc(FL_FLAMETREE_MAX_DEPTH * sizeof(*t->path_names));
	t->scratch = malloc(FL_FLAMETREE_MAX_DEPTH * sizeof(*t->scratch));
	if (t->opts.fold_below > 0)
		t->path_acc = calloc(FL_FLAMETREE_MAX_DEPTH, sizeof(*t->path_acc));
	t->prev_cap = 4096;
	t->prev = malloc(t->prev_cap);
	if (err || !t->nodes || !t->slots || !t->path || !t->path_names || !t->scratch ||
	    !t->prev || (t->opts.fold_below > 0 && !t->path_acc)) {
		fl_flametree__free(t);
		return -ENOMEM;
	}
	memset(t->slots, 0xff, t->nr_slots * sizeof(*t->slots));
	t->nodes[0].parent = FL_FLAMETREE_NONE;
	t->nodes[0].name = FL_FLAMETREE_NONE;
	t->nr_nodes = 1;
	*ret = t;
	return 0;
}

void fl_flametree__free(struct fl_flametree *t)
{
	if (!t)
		return;
	fl_strpool__free(t->names);
	free(t->nodes);
	free(t->slots);
	free(t->path);
	free(t->path_names);
	free(t->prev);
	free(t->scratch);
	free(t->path_acc);
	free(t->drawn);
	free(t->child_off);
	free(t->kids);
	free(t);
}

static uint64_t slot_hash(uint32_t parent, uint32_t name)
{
	return fl_hash_u64_pair(parent, name);
}

static int grow_slots(struct fl_flametree *t)
{
	size_t n = t->nr_slots * 2, mask = n - 1;
	uint32_t *s = malloc(n * sizeof(*s));

	if (!s)
		return -ENOMEM;
	memset(s, 0xff, n * sizeof(*s));
	for (size_t i = 0; i < t->nr_slots; i++) {
		uint32_t id = t->slots[i];
		size_t j;

		if (id == FL_FLAMETREE_NONE)
			continue;
		j = slot_hash(t->nodes[id].parent, t->nodes[id].name) & mask;
		while (s[j] != FL_FLAMETREE_NONE)
			j = (j + 1) & mask;
		s[j] = id;
	}
	free(t->slots);
	t->slots = s;
	t->nr_slots = n;
	return 0;
}

static int new_node(struct fl_flametree *t, uint32_t parent, uint32_t name, uint32_t *ret)
{
	struct ft_node *n;

	if (t->nr_nodes >= FL_FLAMETREE_NONE - 1)
		return -ENOMEM;
	if (t->nr_nodes == t->cap_nodes) {
		size_t cap = t->cap_nodes * 2;
		struct ft_node *nn = realloc(t->nodes, cap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		t->nodes = nn;
		t->cap_nodes = cap;
	}
	n = &t->nodes[t->nr_nodes];
	memset(n, 0, sizeof(*n));
	n->parent = parent;
	n->name = name;
	n->start = t->total;
	*ret = (uint32_t)t->nr_nodes++;
	return 0;
}

/* The child of parent named name (an interned id), created if missing. */
static int child_of(struct fl_flametree *t, uint32_t parent, const struct fl_str *f, uint32_t *ret)
{
	uint32_t name, id;
	size_t mask, j;
	int err;

	if (memchr(f->s, '\0', f->len))
		return -EINVAL;
	err = fl_strpool__intern(t->names, f->s, f->len, &name);
	if (err)
		return err;
	if (t->opts.flamechart || t->opts.grouped)
		return new_node(t, parent, name, ret);
	if ((t->nr_nodes + 1) * 2 > t->nr_slots) {
		err = grow_slots(t);
		if (err)
			return err;
	}
	mask = t->nr_slots - 1;
	j = slot_hash(parent, name) & mask;
	for (; (id = t->slots[j]) != FL_FLAMETREE_NONE; j = (j + 1) & mask)
		if (t->nodes[id].parent == parent && t->nodes[id].name == name) {
			*ret = id;
			return 0;
		}
	err = new_node(t, parent, name, &id);
	if (err)
		return err;
	t->slots[j] = id;
	*ret = id;
	return 0;
}

/* Makes room for n more bytes of names after off in t->prev. */
static int prev_reserve(struct fl_flametree *t, size_t off, size_t n)
{
	size_t cap = t->prev_cap ? t->prev_cap : 4096;
	char *p;

	if (off + n <= t->prev_cap)
		return 0;
	while (cap < off + n)
		cap *= 2;
	p = realloc(t->prev, cap);
	if (!p)
		return -ENOMEM;
	t->prev = p;
	t->prev_cap = cap;
	return 0;
}

static bool folds(const struct fl_flametree *t)
{
	return t->path_acc && (t->opts.grouped || t->opts.flamechart);
}

/*
 * The nodes path[from..path_len) are finished, deepest first: each adds up
 * to its parent's, and is folded when narrower than fold_below.
 */
static void finish_path(struct fl_flametree *t, size_t from)
{
	for (size_t k = t->path_len; k-- > from;) {
		struct ft_node *nd = &t->nodes[t->path[k]];
		struct ft_acc *a = &t->path_acc[k];
		double count = nd->self + a->count, before = nd->self_before + a->before;

		if (a->below && count < t->opts.fold_below) {
			/* Every node after it is in its subtree, and finished. */
			t->nr_folded += t->nr_nodes - ((size_t)t->path[k] + 1);
			t->nr_nodes = (size_t)t->path[k] + 1;
			nd->folded = true;
			nd->count = count;
			nd->before = before;
			nd->below = a->below;
		}
		if (k) {
			struct ft_acc *up = &t->path_acc[k - 1];

			up->count += count;
			up->before += before;
			up->below += a->below + 1;
		}
		*a = (struct ft_acc){};
	}
	if (from < t->path_len)
		t->path_len = from;
}

/* Adds a stack already in merge order. */
static int add_path(struct fl_flametree *t, const struct fl_str *f, size_t n, double before,
		    double after)
{
	size_t i = 0, off;
	int err;

	if (!n || !(before >= 0) || !(after >= 0) || !isfinite(before) || !isfinite(after))
		return -EINVAL;
	if (n > FL_FLAMETREE_MAX_DEPTH)
		return -E2BIG;
	while (i < t->path_len && i < n && t->path_names[i].len == f[i].len &&
	       !memcmp(t->prev + t->path_names[i].off, f[i].s, f[i].len))
		i++;
	if (folds(t))
		finish_path(t, i);
	off = i ? t->path_names[i - 1].off + t->path_names[i - 1].len : 0;
	for (; i < n; i++) {
		uint32_t parent = i ? t->path[i - 1] : 0, id;

		err = prev_reserve(t, off, f[i].len);
		if (!err)
			err = child_of(t, parent, &f[i], &id);
		if (err) {
			t->path_len = i; /* the path so far is still right */
			return err;
		}
		t->path[i] = id;
		memcpy(t->prev + off, f[i].s, f[i].len);
		t->path_names[i] = (struct ft_name){.off = off, .len = f[i].len};
		off += f[i].len;
	}
	t->path_len = n;
	t->nodes[t->path[n - 1]].self += after;
	t->nodes[t->path[n - 1]].self_before += before;
	t->total += after;
	t->total_before += before;
	return 0;
}

int fl_flametree__add_frames(struct fl_flametree *t, const struct fl_str *frames, size_t n,
			     double before, double after)
{
	if (n > FL_FLAMETREE_MAX_DEPTH)
		return -E2BIG;
	if (!t->opts.reverse)
		return add_path(t, frames, n, before, after);
	for (size_t k = 0; k < n; k++)
		t->scratch[k] = frames[n - 1 - k];
	return add_path(t, t->scratch, n, before, after);
}

int fl_flametree__add(struct fl_flametree *t, const char *stack, size_t len, double before,
		      double after)
{
	struct fl_str *fr = t->scratch;
	const char *p = stack, *end = stack + len;
	size_t n = 0;

	if (!len)
		return -EINVAL;
	for (;;) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *fe = semi ? semi : end;

		if (n == FL_FLAMETREE_MAX_DEPTH)
			return -E2BIG;
		fr[n].s = p;
		fr[n].len = (size_t)(fe - p);
		n++;
		if (!semi)
			break;
		p = semi + 1;
	}
	/* As Perl's split in flamegraph.pl: empty frames at the end are dropped ("a;b;"). */
	while (n > 1 && !fr[n - 1].len)
		n--;
	if (t->opts.reverse)
		for (size_t k = 0; k < n / 2; k++) {
			struct fl_str tmp = fr[k];

			fr[k] = fr[n - 1 - k];
			fr[n - 1 - k] = tmp;
		}
	return add_path(t, fr, n, before, after);
}

double fl_flametree__total(const struct fl_flametree *t)
{
	return t->total;
}

double fl_flametree__total_before(const struct fl_flametree *t)
{
	return t->total_before;
}

size_t fl_flametree__nr_frames(const struct fl_flametree *t)
{
	return t->nr_nodes - 1;
}

uint64_t fl_flametree__nr_folded(const struct fl_flametree *t)
{
	return t->nr_folded;
}

void fl_flametree__normalize_before(struct fl_flametree *t)
{
	double to = t->total, from = t->total_before, sum = 0;

	if (!(from > 0))
		return;
	for (size_t i = 0; i < t->nr_nodes; i++) {
		t->nodes[i].self_before = trunc(t->nodes[i].self_before * to / from);
		sum += t->nodes[i].self_before;
	}
	t->total_before = sum;
}

const char *fl_flametree__name(const struct fl_flametree *t, uint32_t node, size_t *len)
{
	if (node == 0 || node >= t->nr_nodes) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = fl_strpool__len(t->names, t->nodes[node].name);
	return fl_strpool__str(t->names, t->nodes[node].name);
}

uint32_t fl_flametree__parent(const struct fl_flametree *t, uint32_t node)
{
	if (node == 0 || node >= t->nr_nodes || t->nodes[node].parent == 0)
		return FL_FLAMETREE_NONE;
	return t->nodes[node].parent;
}

void fl_flametree__self(const struct fl_flametree *t, uint32_t node, double *before, double *after)
{
	*before = node < t->nr_nodes ? t->nodes[node].self_before : 0;
	*after = node < t->nr_nodes ? t->nodes[node].self : 0;
}

/* --- layout --------------------------------------------------------------------- */

static int cmp_name(const void *a, const void *b, void *ctx)
{
	const struct fl_flametree *t = ctx;
	uint32_t na = t->nodes[*(const uint32_t *)a].name, nb = t->nodes[*(const uint32_t *)b].name;
	size_t la = fl_strpool__len(t->names, na), lb = fl_strpool__len(t->names, nb);
	int c = memcmp(fl_strpool__str(t->names, na), fl_strpool__str(t->names, nb),
		       la < lb ? la : lb);

	if (c)
		return c;
	return la < lb ? -1 : la > lb;
}

/*
 * An item of flamegraph.pl's order: a child's own samples (the folded lines
 * "...;NAME COUNT") or its callees' ("...;NAME;..."). Lines sort bytewise,
 * so an item sorts by NAME, then ' ' and its count as a line writes it
 * ("%.0f", or 15 digits for a fraction), or ';' (what follows ';' never
 * decides: no name holds one). The count matters when a sibling's name
 * extends this one with a blank: "f 10" sorts after "f /x.js 10".
 */
#define FT_ITEM_KIDS 0x80000000u

/* The bytes of an item's key after its name: the separator, and for own samples the count. */
static size_t item_tail(const struct fl_flametree *t, uint32_t item, char *buf, size_t cap)
{
	const struct ft_node *nd = &t->nodes[item & ~FT_ITEM_KIDS];
	int n;

	if (item & FT_ITEM_KIDS) {
		buf[0] = ';';
		return 1;
	}
	n = snprintf(buf, cap, nd->self == floor(nd->self) ? " %.0f" : " %.15g", nd->self);
	return n > 0 && (size_t)n < cap ? (size_t)n : 1;
}

static int cmp_item(const void *a, const void *b, void *ctx)
{
	const struct fl_flametree *t = ctx;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	uint32_t na = t->nodes[ia & ~FT_ITEM_KIDS].name, nb = t->nodes[ib & ~FT_ITEM_KIDS].name;
	size_t la = fl_strpool__len(t->names, na), lb = fl_strpool__len(t->names, nb);
	const char *sa = fl_strpool__str(t->names, na), *sb = fl_strpool__str(t->names, nb);
	size_t m = la < lb ? la : lb, ta, tb, i;
	char bufa[400], bufb[400];
	int c = memcmp(sa, sb, m);

	if (c)
		return c;
	if (la == lb) /* the same child: its own samples, ' ', before its callees, ';' */
		return (ia & FT_ITEM_KIDS) ? 1 : -1;
	/* One name is a prefix of the other: its separator decides, but against a blank. */
	{
		unsigned char sep = (la < lb ? ia : ib) & FT_ITEM_KIDS ? ';' : ' ';
		unsigned char next = (unsigned char)(la < lb ? sb[m] : sa[m]);

		if (sep != next)
			return (sep < next) == (la < lb) ? -1 : 1;
	}
	ta = item_tail(t, ia, bufa, sizeof(bufa));
	tb = item_tail(t, ib, bufb, sizeof(bufb));
	for (i = m; i < la + ta && i < lb + tb; i++) {
		unsigned char ca = (unsigned char)(i < la ? sa[i] : bufa[i - la]);
		unsigned char cb = (unsigned char)(i < lb ? sb[i] : bufb[i - lb]);

		if (ca != cb)
			return ca < cb ? -1 : 1;
	}
	if (la + ta != lb + tb)
		return la + ta < lb + tb ? -1 : 1;
	return 0;
}

static int cmp_count(const void *a, const void *b, void *ctx)
{
	const struct fl_flametree *t = ctx;
	double ca = t->nodes[*(const uint32_t *)a].count, cb = t->nodes[*(const uint32_t *)b].count;

	if (ca != cb)
		return ca > cb ? -1 : 1;
	return cmp_name(a, b, ctx);
}

static struct fl_drawn *push_drawn(struct fl_flametree *t)
{
	if (t->nr_drawn == t->cap_drawn) {
		size_t cap = t->cap_drawn ? t->cap_drawn * 2 : 1024;
		struct fl_drawn *d = realloc(t->drawn, cap * sizeof(*d));

		if (!d)
			return NULL;
		t->drawn = d;
		t->cap_drawn = cap;
	}
	return memset(&t->drawn[t->nr_drawn++], 0, sizeof(struct fl_drawn));
}

/* Draws node (a real frame) at start and depth; its subtree follows later. */
static struct fl_drawn *draw_node(struct fl_flametree *t, uint32_t id, double start, uint32_t depth)
{
	struct fl_drawn *d = push_drawn(t);

	if (!d)
		return NULL;
	d->node = id;
	d->depth = depth;
	d->start = start;
	d->count = t->nodes[id].count;
	d->before = t->nodes[id].before;
	d->own = t->nodes[id].self;
	d->own_before = t->nodes[id].self_before;
	return d;
}

static int draw_box(struct fl_flametree *t, double start, uint32_t depth, double count,
		    double before, uint32_t n, uint64_t below, double min_count)
{
	struct fl_drawn *d;

	if (!n || count < min_count || count <= 0)
		return 0;
	d = push_drawn(t);
	if (!d)
		return -ENOMEM;
	d->node = FL_FLAMETREE_NONE;
	d->merged = true;
	d->depth = depth;
	d->start = start;
	d->count = count;
	d->before = before;
	d->nr_merged = n;
	d->nr_below = below;
	d->end = (uint32_t)t->nr_drawn;
	return 0;
}


struct ft_frame {
	uint32_t node, drawn; /* drawn: index of its fl_drawn, or NONE for the virtual root */
	uint32_t next;	      /* next child to visit, an index into kids (lines: into items) */
	uint32_t end;	      /* lines: the end of its items */
	uint32_t depth;	      /* of its children */
	double cursor;	      /* where the next wide child starts (flame graph) */
	/* narrow children seen so far (flame graph: all; flame chart: the current run) */
	double nar_count, nar_before, nar_start;
	uint32_t nar_n;
	uint64_t nar_below;
};

/* Draws the run of narrow frames fr has seen (at start) as one box, and starts a new run. */
static int flush_run(struct fl_flametree *t, struct ft_frame *fr, double start, double min_count)
{
	int err = draw_box(t, start, fr->depth, fr->nar_count, fr->nar_before, fr->nar_n,
			   fr->nar_below, min_count);

	fr->nar_n = 0;
	fr->nar_count = fr->nar_before = 0;
	fr->nar_below = 0;
	return err;
}

/* All of fr's children seen: its last run of narrow ones drawn (at start), its subtree closed. */
static int close_frame(struct fl_flametree *t, struct ft_frame *fr, double start, double min_count)
{
	int err = flush_run(t, fr, start, min_count);

	if (!err && fr->drawn != FL_FLAMETREE_NONE)
		t->drawn[fr->drawn].end = (uint32_t)t->nr_drawn;
	return err;
}

/*
 * The flame graph in flamegraph.pl's order (FL_SORT_LINES): each node's
 * items (its children's own samples and callees, see cmp_item()) sorted,
 * and walked in that order; a child's two items make one frame when they
 * are next to each other, two frames when a sibling's sorts between them.
 * Narrow frames are merged in place, each run of them one box, so that the
 * others are where flamegraph.pl draws them. Needs t->child_off and t->kids.
 */
static int layout_lines(struct fl_flametree *t, const struct fl_flametree_layout_opts *o)
{
	size_t n = t->nr_nodes, nr_items = 0;
	uint32_t *item_off = calloc(n + 1, sizeof(*item_off));
	uint32_t *items = malloc((2 * n + 1) * sizeof(*items));
	struct ft_frame *stack = malloc((FL_FLAMETREE_MAX_DEPTH + 2) * sizeof(*stack));
	size_t sp = 0;
	int err = -ENOMEM;

	if (!item_off || !items || !stack)
		goto out;
	for (size_t p = 0; p < n; p++) {
		uint32_t first = (uint32_t)nr_items;

		item_off[p] = first;
		for (uint32_t k = t->child_off[p]; k < t->child_off[p + 1]; k++) {
			uint32_t c = t->kids[k];
			const struct ft_node *nd = &t->nodes[c];
			bool kids = t->child_off[c + 1] > t->child_off[c] || nd->folded;

			if (nd->self > 0 || nd->self_before > 0 || !kids)
				items[nr_items++] = c;
			if (kids)
				items[nr_items++] = c | FT_ITEM_KIDS;
		}
		if (nr_items - first > 1)
			qsort_r(items + first, nr_items - first, sizeof(*items), cmp_item, t);
	}
	item_off[n] = (uint32_t)nr_items;

	t->nr_drawn = 0;
	stack[sp++] = (struct ft_frame){
		.drawn = FL_FLAMETREE_NONE, .next = item_off[0], .end = item_off[1]};
	while (sp) {
		struct ft_frame *fr = &stack[sp - 1];

		if (fr->next < fr->end) {
			uint32_t it = items[fr->next++], id = it & ~FT_ITEM_KIDS;
			const struct ft_node *c = &t->nodes[id];
			bool own = !(it & FT_ITEM_KIDS), kids = !own;
			double count, before;
			struct fl_drawn *d;

			if (own && fr->next < fr->end && items[fr->next] == (id | FT_ITEM_KIDS)) {
				kids = true;
				fr->next++;
			}
			count = (own ? c->self : 0) + (kids ? c->count - c->self : 0);
			before = (own ? c->self_before : 0) + (kids ? c->before - c->self_before : 0);
			if (c->folded || count < o->min_count || count <= 0) {
				if (count <= 0 && before <= 0)
					continue;
				if (!fr->nar_n)
					fr->nar_start = fr->cursor;
				fr->nar_n++;
				fr->nar_count += count;
				fr->nar_before += before;
				fr->nar_below += kids ? c->below : 0;
				fr->cursor += count;
				continue;
			}
			if (fr->nar_n) {
				err = flush_run(t, fr, fr->nar_start, o->min_count);
				if (err)
					goto out;
			}
			d = push_drawn(t);
			if (!d || sp > FL_FLAMETREE_MAX_DEPTH) {
				err = -ENOMEM;
				goto out;
			}
			d->node = id;
			d->depth = fr->depth;
			d->start = fr->cursor;
			d->count = count;
			d->before = before;
			d->own = own ? c->self : 0;
			d->own_before = own ? c->self_before : 0;
			d->end = (uint32_t)t->nr_drawn;
			fr->cursor += count;
			if (kids) {
				uint32_t depth = fr->depth + 1;
				/* Its own samples' line sorts before its callees': they come first. */
				double start = d->start + (own ? c->self : 0);

				stack[sp++] = (struct ft_frame){.drawn = (uint32_t)(t->nr_drawn - 1),
								 .next = item_off[id],
								 .end = item_off[id + 1],
								 .depth = depth,
								 .cursor = start};
			}
			continue;
		}
		err = close_frame(t, fr, fr->nar_start, o->min_count);
		if (err)
			goto out;
		sp--;
	}
	err = 0;
out:
	free(item_off);
	free(items);
	free(stack);
	return err;
}

int fl_flametree__layout(struct fl_flametree *t, const struct fl_flametree_layout_opts *opts,
			 const struct fl_drawn **drawn, size_t *nr_drawn)
{
	struct fl_flametree_layout_opts o = {.sort = FL_SORT_NAME};
	size_t n = t->nr_nodes;
	struct ft_frame *stack = NULL;
	size_t sp = 0;
	bool chart = t->opts.flamechart;
	int err = -ENOMEM;

	if (opts)
		memcpy(&o, opts, opts->sz && opts->sz < sizeof(o) ? opts->sz : sizeof(o));

	if (folds(t)) {
		finish_path(t, 0);
		n = t->nr_nodes;
	}
	/* Inclusive counts and subtree sizes, children before parents. */
	for (size_t i = 0; i < n; i++) {
		if (t->nodes[i].folded)
			continue;
		t->nodes[i].count = t->nodes[i].self;
		t->nodes[i].before = t->nodes[i].self_before;
		t->nodes[i].below = 0;
	}
	for (size_t i = n - 1; i > 0; i--) {
		struct ft_node *c = &t->nodes[i], *p = &t->nodes[c->parent];

		p->count += c->count;
		p->before += c->before;
		p->below += c->below + 1;
	}

	/* Children lists (CSR), in creation order, then sorted. */
	free(t->child_off);
	free(t->kids);
	t->child_off = calloc(n + 1, sizeof(*t->child_off));
	t->kids = malloc((n ? n : 1) * sizeof(*t->kids));
	if (!t->child_off || !t->kids)
		return -ENOMEM;
	for (size_t i = 1; i < n; i++)
		t->child_off[t->nodes[i].parent + 1]++;
	for (size_t i = 0; i < n; i++)
		t->child_off[i + 1] += t->child_off[i];
	{
		uint32_t *fill = malloc(n * sizeof(*fill));

		if (!fill)
			return -ENOMEM;
		memcpy(fill, t->child_off, n * sizeof(*fill));
		for (size_t i = 1; i < n; i++)
			t->kids[fill[t->nodes[i].parent]++] = (uint32_t)i;
		free(fill);
	}
	if (!chart && o.sort == FL_SORT_LINES) {
		err = layout_lines(t, &o);
		if (!err) {
			*drawn = t->drawn;
			*nr_drawn = t->nr_drawn;
		}
		return err;
	}
	if (!chart)
		for (size_t i = 0; i < n; i++) {
			uint32_t k = t->child_off[i + 1] - t->child_off[i];

			if (k > 1)
				qsort_r(t->kids + t->child_off[i], k, sizeof(uint32_t),
					o.sort == FL_SORT_COUNT ? cmp_count : cmp_name, t);
		}

	/* Depth-first walk with an explicit stack: stacks can be thousands deep. */
	t->nr_drawn = 0;
	stack = malloc((FL_FLAMETREE_MAX_DEPTH + 2) * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	stack[sp++] = (struct ft_frame){.node = 0,
					.drawn = FL_FLAMETREE_NONE,
					.next = t->child_off[0],
					.depth = 0,
					.cursor = 0};
	while (sp) {
		struct ft_frame *fr = &stack[sp - 1];
		uint32_t end_kid = t->child_off[fr->node + 1];

		if (fr->next < end_kid) {
			uint32_t id = t->kids[fr->next++];
			struct ft_node *c = &t->nodes[id];
			struct fl_drawn *d;
			double start;

			if (c->folded || c->count < o.min_count || c->count <= 0) {
				if (c->count <= 0 && c->before <= 0)
					continue;
				if (chart && !fr->nar_n)
					fr->nar_start = c->start;
				fr->nar_n++;
				fr->nar_count += c->count;
				fr->nar_before += c->before;
				fr->nar_below += c->below;
				continue;
			}
			if (chart && fr->nar_n) {
				/* A wide frame ends the run of narrow ones before it. */
				err = flush_run(t, fr, fr->nar_start, o.min_count);
				if (err)
					goto out;
			}
			start = chart ? c->start : fr->cursor;
			fr->cursor += c->count;
			d = draw_node(t, id, start, fr->depth);
			if (!d || sp > FL_FLAMETREE_MAX_DEPTH) {
				err = -ENOMEM;
				goto out;
			}
			stack[sp++] = (struct ft_frame){.node = id,
							.drawn = (uint32_t)(t->nr_drawn - 1),
							.next = t->child_off[id],
							.depth = fr->depth + 1,
							.cursor = start};
			continue;
		}
		/* All children seen: the narrow ones go after the wide ones (or in place). */
		err = close_frame(t, fr, chart ? fr->nar_start : fr->cursor, o.min_count);
		if (err)
			goto out;
		sp--;
	}
	err = 0;
	*drawn = t->drawn;
	*nr_drawn = t->nr_drawn;
out:
	free(stack);
	return err;
}
