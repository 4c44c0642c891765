/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the flamed front ends share: subcommand entry points and messages. */
#ifndef FLAMED_CMD_H
#define FLAMED_CMD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "flamed/flametree.h"
#include "flamed/palette.h"
#include "flamed/svg.h"

/* Exit codes: 0 success, 1 runtime failure, 2 bad usage. */
#define EXIT_USAGE 2

extern bool verbose;

/* "flamed: " + message + newline on stderr. */
void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* libflamed's debug messages (-v): "flamed: debug: " + message on stderr (fl_set_print). */
void debug_print(const char *fmt, va_list ap);

/* Whether flamed has capability cap (CAP_*) in its effective set. */
bool have_cap(int cap);
/* CAP_PERFMON or CAP_SYS_ADMIN: the kernel lets flamed sample every CPU. */
bool may_perf(void);
/* A seccomp filter applies to flamed (a container runtime, a systemd unit). */
bool seccomp_filtered(void);
/*
 * For the commands that only read and write files named by the user (svg,
 * diff, collapse): any capability from the binary's file capabilities is
 * dropped, so they read files as that user. Root keeps root.
 */
void drop_privileges(void);

int cmd_record(int argc, char **argv);
int cmd_daemon(int argc, char **argv);
int cmd_collapse(int argc, char **argv);
int cmd_svg(int argc, char **argv);
int cmd_diff(int argc, char **argv);

/*
 * Where an output goes: a temporary file beside the final path (beside a
 * symlink's target), renamed at the end; or, for a path that exists and is
 * not a regular file (/dev/null, a FIFO), that file itself.
 */
struct output {
	const char *path; /* as given; NULL: stdout */
	char *final_path; /* what is renamed over: path, or its symlink's target */
	char *tmp_path;
	FILE *f;
	bool direct; /* written in place, no rename */
};

/* Opens o->f for path (NULL or "-": stdout). Prints the error. Returns 0 or -errno. */
int output_open(struct output *o, const char *path);
/* Flushes, fsyncs and renames into place. Returns 0 or -errno (the temp file is removed). */
int output_commit(struct output *o);
/* Closes and removes the temporary file, if any; safe after commit. */
void output_abort(struct output *o);
/*
 * Until called again with NULL: SIGINT, SIGTERM, SIGHUP and SIGPIPE remove
 * o's temporary file, then end the process as the signal would have.
 */
void output_remove_on_signal(struct output *o);

/* The flame graph options every SVG-writing subcommand takes (flamegraph.pl's, and ours). */
struct svg_args {
	struct fl_svg_opts svg;
	enum fl_palette_kind colors;
	bool hash;
	const char *cp_path; /* --cp: the colour map file; NULL: none */
	bool reverse, flamechart;
	double factor; /* counts are multiplied by this */
};

enum {
	SVG_OPT_TITLE = 0x1000,
	SVG_OPT_SUBTITLE,
	SVG_OPT_WIDTH,
	SVG_OPT_HEIGHT,
	SVG_OPT_MINWIDTH,
	SVG_OPT_FONTTYPE,
	SVG_OPT_FONTSIZE,
	SVG_OPT_FONTWIDTH,
	SVG_OPT_COUNTNAME,
	SVG_OPT_NAMETYPE,
	SVG_OPT_COLORS,
	SVG_OPT_BGCOLORS,
	SVG_OPT_HASH,
	SVG_OPT_CP,
	SVG_OPT_REVERSE,
	SVG_OPT_INVERTED,
	SVG_OPT_FLAMECHART,
	SVG_OPT_NEGATE,
	SVG_OPT_NOTES,
	SVG_OPT_TOTAL,
	SVG_OPT_FACTOR,
	SVG_OPT_SORT,
};

/* The getopt_long entries of the SVG options, to put in each subcommand's table. */
#define SVG_LONG_OPTIONS                                                        \
	{ "title", required_argument, NULL, SVG_OPT_TITLE },                    \
	{ "subtitle", required_argument, NULL, SVG_OPT_SUBTITLE },              \
	{ "width", required_argument, NULL, SVG_OPT_WIDTH },                    \
	{ "height", required_argument, NULL, SVG_OPT_HEIGHT },                  \
	{ "minwidth", required_argument, NULL, SVG_OPT_MINWIDTH },              \
	{ "fonttype", required_argument, NULL, SVG_OPT_FONTTYPE },              \
	{ "fontsize", required_argument, NULL, SVG_OPT_FONTSIZE },              \
	{ "fontwidth", required_argument, NULL, SVG_OPT_FONTWIDTH },            \
	{ "countname", required_argument, NULL, SVG_OPT_COUNTNAME },            \
	{ "nametype", required_argument, NULL, SVG_OPT_NAMETYPE },              \
	{ "colors", required_argument, NULL, SVG_OPT_COLORS },                  \
	{ "bgcolors", required_argument, NULL, SVG_OPT_BGCOLORS },              \
	{ "hash", no_argument, NULL, SVG_OPT_HASH },                            \
	{ "cp", optional_argument, NULL, SVG_OPT_CP },                          \
	{ "reverse", no_argument, NULL, SVG_OPT_REVERSE },                      \
	{ "inverted", no_argument, NULL, SVG_OPT_INVERTED },                    \
	{ "flamechart", no_argument, NULL, SVG_OPT_FLAMECHART },                \
	{ "negate", no_argument, NULL, SVG_OPT_NEGATE },                        \
	{ "notes", required_argument, NULL, SVG_OPT_NOTES },                    \
	{ "total", required_argument, NULL, SVG_OPT_TOTAL },                    \
	{ "factor", required_argument, NULL, SVG_OPT_FACTOR },                  \
	{ "sort", required_argument, NULL, SVG_OPT_SORT }

/* The help text of those options. */
extern const char svg_options_help[];

void svg_args_init(struct svg_args *a);
/*
 * Handles option c (one of SVG_OPT_*) with its argument. Returns 0, or
 * -EINVAL after printing what is wrong with the value (a usage error).
 */
int svg_args_parse(struct svg_args *a, int c, const char *arg);
/*
 * Writes the flame graph of t to f with these options: the palette (and
 * its --cp map, loaded before and saved after) is made here. Prints its
 * errors. Returns 0 or -errno.
 */
int svg_render(struct svg_args *a, struct fl_flametree *t, FILE *f);

#endif
