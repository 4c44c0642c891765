/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the flamed front ends share: subcommand entry points and messages. */
#ifndef FLAMED_CMD_H
#define FLAMED_CMD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "flamed/profile/flametree.h"
#include "flamed/files/outpath.h"
#include "flamed/formats/palette.h"
#include "flamed/formats/svg.h"

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
/*
 * record and daemon keep their capabilities, but open and read the files
 * their user names (-o, --cp, --config, output_dir) with that user's own
 * rights: caps_lower() empties the effective set (the permitted set stays)
 * and caps_restore() puts it back, e.g.
 *   _cleanup_(caps_restore) struct caps_saved caps = {};
 *   err = caps_lower(&caps);
 * Root keeps root (nothing is lowered). caps_lower() returns 0 or -errno;
 * on failure nothing was lowered, and the caller must not go on.
 */
struct caps_saved {
	bool lowered;
	uint32_t effective[2];
};
int caps_lower(struct caps_saved *s);
void caps_restore(struct caps_saved *s);

int cmd_record(int argc, char **argv);
int cmd_daemon(int argc, char **argv);
int cmd_collapse(int argc, char **argv);
int cmd_svg(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_convert(int argc, char **argv);

/*
 * Where an output goes. A path is resolved with fl_outpath__resolve(): a
 * symlink is followed only when nobody less privileged could have planted
 * it, and what is found decides: nothing or a regular file -> a new file
 * (O_TMPFILE) in that directory, named at output_commit() by a rename
 * relative to the directory fd (a SIGKILL leaves nothing); a FIFO or a
 * character device -> opened now, without blocking, written in place;
 * /dev/stdout, /dev/fd/N, /proc/self/fd/N -> that descriptor of ours; a
 * block device, a socket, a directory, or another user's file in a
 * directory others can write -> refused.
 */
struct output {
	const char *path; /* as given; NULL: stdout */
	FILE *f;
	struct fl_outpath where; /* valid while resolved */
	struct fl_outfile file;	 /* valid while has_file */
	bool resolved, has_file;
};

#define OUTPUT_REGULAR 0x1 /* a regular file (or none yet) only: a file also read (--cp) */

/*
 * Opens o->f for path (NULL or "-": stdout); o must be zeroed. Prints the
 * error, and then leaves nothing to release. Returns 0 or -errno.
 */
int output_open(struct output *o, const char *path, unsigned int flags);
/* The regular file o replaces, opened for reading (what was resolved, not the name), or NULL. */
FILE *output_read(const struct output *o);
/* Flushes, fsyncs and puts the file under its name. Returns 0 or -errno (nothing is left). */
int output_commit(struct output *o);
/* Closes and removes the unfinished file, if any; safe after commit, and on a zeroed o. */
void output_abort(struct output *o);
/* Removes o's named temporary (only where there is no O_TMPFILE); async-signal-safe. */
void output_remove_temp(const struct output *o);
/*
 * Until called again with NULL: SIGINT, SIGTERM, SIGHUP and SIGPIPE remove
 * o's temporary file, then end the process as the signal would have.
 */
void output_remove_on_signal(struct output *o);

/* The format an output's name says (its last component's extension). */
enum output_format {
	OUTPUT_FORMAT_NONE,    /* no extension, or stdout */
	OUTPUT_FORMAT_FOLDED,  /* .folded, .txt, .collapsed */
	OUTPUT_FORMAT_SVG,     /* .svg */
	OUTPUT_FORMAT_PPROF,   /* .pb.gz, .pprof */
	OUTPUT_FORMAT_HTML,    /* .html, .htm */
	OUTPUT_FORMAT_UNKNOWN, /* anything else: flamed does not write it */
};

enum output_format output_format_of(const char *path);
/*
 * For who (e.g. "flamed svg"), which writes fmt only: 0 if path's name
 * says fmt or nothing, else -EINVAL after saying so.
 */
int output_check_format(const char *path, enum output_format fmt, const char *who);

/* The flame graph options every SVG-writing subcommand takes (flamegraph.pl's, and ours). */
struct svg_args {
	struct fl_svg_opts svg;
	enum fl_palette_kind colors;
	bool hash;
	const char *cp_path; /* --cp: the colour map file; NULL: none */
	struct output *map;  /* cp_path, opened by svg_args_open_map(); shared by copies */
	bool reverse, flamechart;
	double factor; /* counts are multiplied by this */
	bool html; /* the HTML page with every frame (fl_html__write()), not the SVG */
	const char *nameattr_path; /* --nameattr FILE */
	struct fl_nameattr *nameattr; /* loaded from it, for one svg_render() */
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
	SVG_OPT_NAMEATTR,
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
	{ "sort", required_argument, NULL, SVG_OPT_SORT },                      \
	{ "nameattr", required_argument, NULL, SVG_OPT_NAMEATTR }

/* The help text of those options. */
extern const char svg_options_help[];

/* v as the graph writes counts ("1,234,567", fl_svg__count_text()) in buf; returns buf. For SVG subtitles. */
#define THOUSANDS_LEN FL_SVG_COUNT_TEXT
const char *thousands(uint64_t v, char buf[THOUSANDS_LEN]);

void svg_args_init(struct svg_args *a);
/*
 * For who ("flamed svg"), which writes an SVG or the HTML page: picks html
 * from format ("svg", "html", or NULL: the extension of output, .html or
 * .htm) and says what is wrong when the name says another format, format
 * and name disagree, or an option is the SVG's only. Returns 0 or -EINVAL
 * (said).
 */
int svg_args_format(struct svg_args *a, const char *output, const char *format, const char *who);
/* What svg_args_format() checks of the options alone (record picks html itself). */
int svg_args_check(const struct svg_args *a);
/* Frees what a render loaded (--nameattr). */
void svg_args_fini(struct svg_args *a);
/*
 * Handles option c (one of SVG_OPT_*) with its argument. Returns 0, or
 * -EINVAL after printing what is wrong with the value (a usage error).
 */
int svg_args_parse(struct svg_args *a, int c, const char *arg);
/*
 * Writes the flame graph of t to f with these options, as an SVG or (html)
 * as the HTML page: the palette (and
 * its --cp map, loaded before and saved after) is made here. Prints its
 * errors. Returns 0 or -errno.
 */
int svg_render(struct svg_args *a, struct fl_flametree *t, FILE *f);
/*
 * Opens the --cp map for writing now (nothing without --cp), so that a path
 * flamed refuses is an error before any work. Prints its errors. Returns 0
 * or -errno. svg_args_close_map() releases it (safe when not open).
 */
int svg_args_open_map(struct svg_args *a);
void svg_args_close_map(struct svg_args *a);

#endif
