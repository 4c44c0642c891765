// SPDX-License-Identifier: GPL-2.0-or-later
/* The flame graph options shared by svg, diff and record, and rendering with them. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flamed.h"
#include "flamed/common/cleanup.h"
#include "flamed/files/regfile.h"
#include "flamed/formats/html.h"
#include "flamed/formats/nameattr.h"

const char svg_options_help[] =
	"flame graph options (as flamegraph.pl's):\n"
	"      --title TEXT         title (default \"Flame Graph\")\n"
	"      --subtitle TEXT      second title line\n"
	"      --width PX           image width (default 1200)\n"
	"      --height PX          frame height (default 16)\n"
	"      --minwidth PX|N%     merge frames narrower than this (default 0.1 px)\n"
	"      --fonttype FONT      font family (default Verdana)\n"
	"      --fontsize N         font size (default 12)\n"
	"      --fontwidth F        average character width / font size (default 0.59)\n"
	"      --countname NAME     what the counts are (default samples)\n"
	"      --nametype TEXT      label before a frame name (default \"Function:\")\n"
	"      --colors PALETTE     hot (default), mem, io, wakeup, chain, java, js, perl,\n"
	"                           red, green, blue, aqua, yellow, purple, orange\n"
	"      --bgcolors COLOR     yellow (default), blue, green, grey, or #rrggbb\n"
	"      --hash               colour from the name, as flamegraph.pl --hash\n"
	"      --cp[=FILE]          keep colours in FILE between runs (default palette.map)\n"
	"      --reverse            reverse each stack (leaves become roots)\n"
	"      --inverted           icicle graph: roots at the top\n"
	"      --flamechart         input order, merging only consecutive stacks (x is time)\n"
	"      --negate             differential: swap red and blue\n"
	"      --notes TEXT         notes stored in the SVG\n"
	"      --total N            percentages and widths of this total, if larger than the sum\n"
	"      --factor F           multiply the counts by F\n"
	"      --sort name|count    sibling order: by name, as flamegraph.pl (default), or widest first\n"
	"      --nameattr FILE      frame attributes by function: NAME<TAB>title=...<TAB>href=...\n";

void svg_args_init(struct svg_args *a)
{
	memset(a, 0, sizeof(*a));
	a->svg.sz = sizeof(a->svg);
	a->svg.width = 1200;
	a->svg.frame_height = 16;
	a->svg.fontsize = 12;
	a->svg.fontwidth = 0.59;
	a->svg.minwidth = 0.1;
	a->svg.sort = FL_SORT_LINES; /* flamegraph.pl's order and frames */
	a->colors = FL_PALETTE_HOT;
	a->factor = 1;
}

/* A number in (lo, hi]; strict: no trailing text, no inf or nan. */
static int parse_num(const char *s, double lo, double hi, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*v) || !(*v > lo) || *v > hi)
		return -EINVAL;
	return 0;
}

static int bad(const char *opt, const char *arg, const char *want)
{
	msg("invalid %s '%s': %s", opt, arg, want);
	return -EINVAL;
}

int svg_args_parse(struct svg_args *a, int c, const char *arg)
{
	struct fl_svg_opts *o = &a->svg;
	double v;

	switch (c) {
	case SVG_OPT_TITLE:
		o->title = arg;
		return 0;
	case SVG_OPT_SUBTITLE:
		o->subtitle = arg;
		return 0;
	case SVG_OPT_NOTES:
		o->notes = arg;
		return 0;
	case SVG_OPT_FONTTYPE:
		o->fonttype = arg;
		return 0;
	case SVG_OPT_COUNTNAME:
		o->countname = arg;
		return 0;
	case SVG_OPT_NAMETYPE:
		o->nametype = arg;
		return 0;
	case SVG_OPT_WIDTH:
		if (parse_num(arg, 50, 1e6, &o->width))
			return bad("--width", arg, "give pixels, 51 to 1000000");
		return 0;
	case SVG_OPT_HEIGHT:
		if (parse_num(arg, 0, 1000, &o->frame_height) || o->frame_height < 2)
			return bad("--height", arg, "give the frame height in pixels, 2 to 1000");
		return 0;
	case SVG_OPT_FONTSIZE:
		if (parse_num(arg, 0, 1000, &o->fontsize) || o->fontsize < 1)
			return bad("--fontsize", arg, "give a size in pixels, 1 to 1000");
		return 0;
	case SVG_OPT_FONTWIDTH:
		if (parse_num(arg, 0, 10, &o->fontwidth) || o->fontwidth < 0.01)
			return bad("--fontwidth", arg,
				   "give a fraction of the font size, 0.01 to 10");
		return 0;
	case SVG_OPT_MINWIDTH: {
		size_t n = strlen(arg);

		if (n > 1 && arg[n - 1] == '%') {
			_cleanup_free_ char *num = strndup(arg, n - 1);

			if (!num || parse_num(num, 0, 100, &o->minwidth_pct))
				return bad("--minwidth", arg,
					   "give pixels (0.1) or a percentage (0.5%)");
			return 0;
		}
		if (parse_num(arg, -1, 1e6, &v) || v < 0)
			return bad("--minwidth", arg, "give pixels (0.1) or a percentage (0.5%)");
		o->minwidth = v;
		o->minwidth_pct = 0;
		return 0;
	}
	case SVG_OPT_COLORS:
		if (fl_palette__parse_kind(arg, &a->colors))
			return bad("--colors", arg,
				   "use hot, mem, io, wakeup, chain, java, js, perl, red, green, "
				   "blue, aqua, yellow, purple or orange");
		return 0;
	case SVG_OPT_BGCOLORS:
		if (fl_palette__parse_bgcolors(arg, &o->bg_top, &o->bg_bottom))
			return bad("--bgcolors", arg, "use yellow, blue, green, grey or #rrggbb");
		return 0;
	case SVG_OPT_HASH:
		a->hash = true;
		return 0;
	case SVG_OPT_CP:
		a->cp_path = arg && *arg ? arg : "palette.map";
		return 0;
	case SVG_OPT_REVERSE:
		a->reverse = true;
		return 0;
	case SVG_OPT_INVERTED:
		o->inverted = true;
		return 0;
	case SVG_OPT_FLAMECHART:
		a->flamechart = true;
		o->flamechart = true;
		return 0;
	case SVG_OPT_NEGATE:
		o->negate = true;
		return 0;
	case SVG_OPT_TOTAL:
		if (parse_num(arg, 0, 1e18, &o->total))
			return bad("--total", arg, "give a positive count");
		return 0;
	case SVG_OPT_FACTOR:
		if (parse_num(arg, 0, 1e12, &a->factor))
			return bad("--factor", arg, "give a positive number, e.g. 0.001");
		return 0;
	case SVG_OPT_NAMEATTR:
		a->nameattr_path = arg;
		return 0;
	case SVG_OPT_SORT:
		if (!strcmp(arg, "name"))
			o->sort = FL_SORT_LINES; /* by name, as flamegraph.pl orders its lines */
		else if (!strcmp(arg, "count"))
			o->sort = FL_SORT_COUNT;
		else
			return bad("--sort", arg, "use name or count");
		return 0;
	}
	return -EINVAL;
}

int svg_args_format(struct svg_args *a, const char *output, const char *format, const char *who)
{
	enum output_format named = output_format_of(output);

	if (format && strcmp(format, "svg") && strcmp(format, "html")) {
		msg("unknown format '%s': %s writes svg or html", format, who);
		return -EINVAL;
	}
	if (format) {
		/* Any name, as record --format takes one, but not another format's. */
		a->html = !strcmp(format, "html");
		if (named != OUTPUT_FORMAT_NONE && named != OUTPUT_FORMAT_UNKNOWN &&
		    named != (a->html ? OUTPUT_FORMAT_HTML : OUTPUT_FORMAT_SVG)) {
			msg("-o %s: --format %s writes %s, not what that name says (rename it, or "
			    "drop --format)",
			    output, format, a->html ? "HTML" : "an SVG");
			return -EINVAL;
		}
	} else {
		a->html = named == OUTPUT_FORMAT_HTML;
		if (named != OUTPUT_FORMAT_NONE && named != OUTPUT_FORMAT_SVG && !a->html) {
			msg("-o %s: %s writes an SVG (.svg) or HTML (.html) flame graph, not what "
			    "that name says (rename it, or give --format svg or html)",
			    output, who);
			return -EINVAL;
		}
	}
	return svg_args_check(a);
}

int svg_args_check(const struct svg_args *a)
{
	if (a->html && a->nameattr_path) {
		msg("--nameattr links and titles are drawn by the SVG only (write an .svg, or drop "
		    "--nameattr)");
		return -EINVAL;
	}
	return 0;
}

DEFINE_FREE_FUNC(struct fl_palette, fl_palette__free)

/* Loads the --cp map: the file it replaces, or, the first time, none: an empty map. */
static int load_map(struct fl_palette *p, const struct output *map)
{
	_cleanup_fclose_ FILE *f = NULL;
	size_t nr_bad = 0;
	int err;

	if (map->where.kind == FL_OUTPATH_NONE)
		f = fopen("/dev/null", "re"); /* an empty map, filled and saved at the end */
	else
		f = output_read(map);
	if (!f) {
		err = -errno;
		msg("cannot read colour map %s: %s", map->path, strerror(-err));
		return err;
	}
	err = fl_palette__load_map(p, f, &nr_bad);
	if (err) {
		msg("cannot read colour map %s: %s", map->path, strerror(-err));
		return err;
	}
	if (nr_bad)
		msg("%s: skipped %zu malformed lines", map->path, nr_bad);
	return 0;
}

int svg_args_open_map(struct svg_args *a)
{
	int err;

	if (!a->cp_path || a->map)
		return 0;
	a->map = calloc(1, sizeof(*a->map));
	if (!a->map) {
		msg("out of memory");
		return -ENOMEM;
	}
	err = output_open(a->map, a->cp_path, OUTPUT_REGULAR);
	if (err)
		svg_args_close_map(a);
	return err;
}

void svg_args_close_map(struct svg_args *a)
{
	if (a->map)
		output_abort(a->map);
	free(a->map);
	a->map = NULL;
}

#define NAMEATTR_MAX_BYTES (64u << 20)

/* --nameattr FILE, read once (a regular file, at most 64 MiB). Returns 0 or -errno, said. */
static int load_nameattr(struct svg_args *a)
{
	struct fl_nameattr_stats st;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len, bad_line;
	const char *why;
	int err;

	if (!a->nameattr_path || a->nameattr)
		return 0;
	fd = fl_regfile__open(AT_FDCWD, a->nameattr_path, 0, NULL);
	if (fd < 0) {
		msg("cannot read --nameattr %s: %s", a->nameattr_path,
		    fd == -EINVAL ? "not a regular file" : strerror(-fd));
		return fd;
	}
	err = fl_regfile__read_all(fd, NAMEATTR_MAX_BYTES, &buf, &len);
	if (err == -EFBIG) {
		msg("--nameattr %s: larger than %u MiB", a->nameattr_path, NAMEATTR_MAX_BYTES >> 20);
		return err;
	}
	if (err) {
		msg("cannot read --nameattr %s: %s", a->nameattr_path, strerror(-err));
		return err;
	}
	err = fl_nameattr__parse(buf, len, &a->nameattr, &st, &bad_line, &why);
	if (err == -EINVAL) {
		msg("--nameattr %s line %zu: %s", a->nameattr_path, bad_line, why);
		return err;
	}
	if (err) {
		msg("--nameattr %s: %s", a->nameattr_path, strerror(-err));
		return err;
	}
	if (st.raw_markup)
		msg("--nameattr %s: %zu g_extra/a_extra attributes ignored: flamed writes no raw "
		    "SVG markup from a file",
		    a->nameattr_path, st.raw_markup);
	return 0;
}

void svg_args_fini(struct svg_args *a)
{
	fl_nameattr__free(a->nameattr);
	a->nameattr = NULL;
}

static int render(struct svg_args *a, struct fl_flametree *t, FILE *f)
{
	struct fl_palette_opts po = {.kind = a->colors, .hash = a->hash};
	_cleanup_(fl_palette__freep) struct fl_palette *p = NULL;
	int err;

	err = svg_args_check(a);
	if (err)
		return err;
	err = load_nameattr(a);
	if (err)
		return err;
	a->svg.nameattr = a->nameattr;
	err = fl_palette__new(&po, &p);
	if (err) {
		msg("cannot set up colours: %s", strerror(-err));
		return err;
	}
	if (a->map) {
		err = load_map(p, a->map);
		if (err)
			return err;
	}
	a->svg.palette = p;
	err = a->html ? fl_html__write(t, &a->svg, f) : fl_svg__write(t, &a->svg, f);
	a->svg.palette = NULL;
	if (err) {
		msg("cannot write the %s flame graph: %s", a->html ? "HTML" : "SVG",
		    err == -E2BIG ? "more than 2^32 frames" : strerror(-err));
		return err;
	}
	if (a->map) {
		err = fl_palette__save_map(p, a->map->f);
		if (!err)
			err = output_commit(a->map);
		if (err)
			msg("cannot write colour map %s: %s", a->cp_path, strerror(-err));
	}
	return err;
}

int svg_render(struct svg_args *a, struct fl_flametree *t, FILE *f)
{
	bool opened_here = a->cp_path && !a->map;
	bool loaded_here = a->nameattr_path && !a->nameattr;
	int err;

	err = svg_args_open_map(a);
	if (!err)
		err = render(a, t, f);
	if (opened_here)
		svg_args_close_map(a);
	if (loaded_here)
		svg_args_fini(a);
	a->svg.nameattr = a->nameattr;
	return err;
}

const char *thousands(uint64_t v, char buf[THOUSANDS_LEN])
{
	fl_svg__count_text((double)v, buf);
	return buf;
}
