// SPDX-License-Identifier: GPL-2.0-or-later
/* flamed svg and flamed diff: folded stacks from any tool to a flame graph. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flamed.h"
#include "flamed/common/cleanup.h"
#include "flamed/formats/foldedread.h"

DEFINE_FREE_FUNC(struct fl_flametree, fl_flametree__free)

static const char svg_usage[] =
	"usage: flamed svg [options] [FILE...]\n"
	"\n"
	"Draws folded stacks (\"frame;frame;...;frame COUNT\" lines, as written by flamed\n"
	"record, FlameGraph's stackcollapse scripts, py-spy, async-profiler, bpftrace...)\n"
	"from the FILEs or standard input as an interactive flame graph SVG. A line with\n"
	"two counts (before, after) makes a differential graph.\n"
	"\n"
	"  -o, --output FILE        write here instead of standard output\n"
	"  -h, --help               this text\n";

static const char diff_usage[] =
	"usage: flamed diff [options] BEFORE.folded AFTER.folded\n"
	"\n"
	"A differential flame graph of AFTER against BEFORE: widths from AFTER, red where a\n"
	"frame grew, blue where it shrank (deeper for bigger changes), gold where it is new.\n"
	"\n"
	"  -n, --normalize          scale BEFORE to AFTER's total first (whole numbers)\n"
	"  -s, --strip-hex          hexadecimal addresses in frame names become 0x...\n"
	"      --folded             write \"stack BEFORE AFTER\" lines instead of an SVG\n"
	"  -o, --output FILE        write here instead of standard output\n"
	"  -h, --help               this text\n";

static void usage_error(const char *usage, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void usage_error(const char *usage, const char *fmt, ...)
{
	va_list ap;

	fputs("flamed: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(flamed %s --help lists the options)\n",
		usage == svg_usage ? "svg" : "diff");
}

/* What one input is added as. */
struct input {
	struct fl_flametree *tree;
	struct svg_args *args;
	const char *name;
	int side; /* -1: counts go to "before" (diff A); 1: to "after"; 0: as the line says */
	bool strip_hex;
	char *buf; /* strip-hex scratch */
	size_t cap;
	size_t nr_diff_lines, nr_too_deep;
	size_t nr_skipped; /* malformed lines, over every input */
	int err;
};

/* difffolded.pl's -s: every "0x" + hex digits becomes "0x...": addresses differ between runs. */
static size_t strip_hex(const char *s, size_t len, char *out)
{
	size_t j = 0;

	for (size_t i = 0; i < len;) {
		if (i + 2 < len && s[i] == '0' && s[i + 1] == 'x' && isxdigit((unsigned char)s[i + 2])) {
			memcpy(out + j, "0x...", 5);
			j += 5;
			i += 2;
			while (i < len && isxdigit((unsigned char)s[i]))
				i++;
			continue;
		}
		out[j++] = s[i++];
	}
	return j;
}

static int add_line(const struct fl_folded_line *l, void *ctx)
{
	struct input *in = ctx;
	double f = in->args->factor, before = 0, after;
	const char *stack = l->stack;
	size_t len = l->len;
	int err;

	if (l->nr_counts == 2 && !in->side) {
		before = l->count[0] * f;
		after = l->count[1] * f;
		in->nr_diff_lines++;
	} else {
		/* One profile per file in a diff: of two columns, the last is its count. */
		after = l->count[l->nr_counts - 1] * f;
	}
	if (in->side < 0) {
		before = after;
		after = 0;
	}
	if (in->strip_hex) {
		/* "0x1" (3 bytes) becomes "0x..." (5): at most 5/3 as long. */
		if (len / 3 * 5 + 5 > in->cap) {
			char *nb = realloc(in->buf, len / 3 * 5 + 5);

			if (!nb)
				return -ENOMEM;
			in->buf = nb;
			in->cap = len / 3 * 5 + 5;
		}
		len = strip_hex(stack, len, in->buf);
		stack = in->buf;
	}
	err = fl_flametree__add(in->tree, stack, len, before, after);
	if (err == -E2BIG) {
		in->nr_too_deep++;
		return 0;
	}
	return err;
}

/* Reads one input (a path, or "-" for stdin) into the tree; prints problems. Returns 0 or -errno. */
static int read_input(struct input *in, const char *path)
{
	struct fl_folded_stats st;
	int fd, err;

	in->name = strcmp(path, "-") ? path : "standard input";
	in->nr_too_deep = 0;
	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) : STDIN_FILENO;
	if (fd < 0) {
		err = -errno;
		msg("cannot read %s: %s", path, strerror(-err));
		return err;
	}
	err = fl_folded__parse_fd(fd, add_line, in, &st);
	if (fd != STDIN_FILENO)
		close(fd);
	if (err) {
		msg("cannot read %s: %s", in->name, strerror(-err));
		return err;
	}
	in->nr_skipped += st.nr_bad;
	if (st.nr_bad) {
		char lines[160] = "";
		size_t n = 0;

		for (size_t i = 0; i < st.nr_bad && i < FL_FOLDED_FIRST_BAD; i++)
			n += (size_t)snprintf(lines + n, sizeof(lines) - n, "%s%zu (%s)",
					      i ? ", " : "", st.first_bad_line[i],
					      fl_folded__bad_name(st.first_bad_kind[i]));
		msg("%s: skipped %zu malformed line%s of %zu: line%s %s%s%s", in->name, st.nr_bad,
		    st.nr_bad == 1 ? "" : "s", st.lines, st.nr_bad == 1 ? "" : "s", lines,
		    st.nr_bad > FL_FOLDED_FIRST_BAD ? ", ..." : "",
		    st.bad[FL_FOLDED_CRLF] ? " (DOS line endings: convert with dos2unix)" : "");
	}
	if (in->nr_too_deep)
		msg("%s: skipped %zu stacks deeper than %d frames", in->name, in->nr_too_deep,
		    FL_FLAMETREE_MAX_DEPTH);
	if (!st.good && !(in->side && !st.lines)) {
		/*
		 * An empty BEFORE or AFTER of a diff is fine, as for difffolded.pl:
		 * everything is new, or gone.
		 */
		msg("%s: no folded stacks in it (%zu lines): expected \"frame;frame;... COUNT\" "
		    "lines",
		    in->name, st.lines);
		return -EINVAL;
	}
	return 0;
}

static int write_output(const char *path, struct svg_args *sa, struct fl_flametree *t,
			int (*write)(struct svg_args *, struct fl_flametree *, FILE *))
{
	struct output out = {};
	int err;

	err = output_open(&out, path, 0);
	if (err)
		return err;
	output_remove_on_signal(&out);
	err = write(sa, t, out.f);
	if (!err) {
		err = output_commit(&out);
		if (err)
			msg("cannot write %s: %s",
			    path && strcmp(path, "-") ? path : "standard output", strerror(-err));
	}
	output_remove_on_signal(NULL);
	output_abort(&out);
	return err;
}

/*
 * As flamegraph.pl does when it has nothing to draw: a graph that says so,
 * for the tools that always expect one. The exit status still tells the
 * failure.
 */
static void write_no_samples(const char *output, struct svg_args *sa, const char *why)
{
	struct fl_flametree_opts to = {.sz = sizeof(to)};
	_cleanup_(fl_flametree__freep) struct fl_flametree *empty = NULL;

	if (fl_flametree__new(&to, &empty))
		return;
	sa->svg.subtitle = why;
	write_output(output, sa, empty, svg_render);
}

int cmd_svg(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		SVG_LONG_OPTIONS,
		{},
	};
	_cleanup_(fl_flametree__freep) struct fl_flametree *t = NULL;
	struct svg_args sa;
	struct input in = {};
	const char *output = NULL;
	int c, err;

	svg_args_init(&sa);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'h':
			fputs(svg_usage, stdout);
			fputs(svg_options_help, stdout);
			return 0;
		case ':':
			usage_error(svg_usage, "option '%s' needs a value", argv[optind - 1]);
			return EXIT_USAGE;
		case '?':
			usage_error(svg_usage, "unknown option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			if (svg_args_parse(&sa, c, optarg))
				return EXIT_USAGE;
		}
	}
	if (output_check_format(output, OUTPUT_FORMAT_SVG, "flamed svg"))
		return EXIT_USAGE;
	{
		struct fl_flametree_opts to = {
			.sz = sizeof(to), .flamechart = sa.flamechart, .reverse = sa.reverse};

		err = fl_flametree__new(&to, &t);
		if (err) {
			msg("out of memory");
			return 1;
		}
	}
	in.tree = t;
	in.args = &sa;
	if (optind == argc) {
		err = read_input(&in, "-");
	} else {
		err = 0;
		for (int i = optind; i < argc && !err; i++)
			err = read_input(&in, argv[i]);
	}
	if (err && err != -EINVAL)
		return 1;
	if (!err && !(fl_flametree__total(t) > 0)) {
		msg("nothing to draw: every count is zero");
		err = -EINVAL;
	}
	if (err) {
		write_no_samples(output, &sa, "No samples: the input held no folded stacks with a count above 0");
		return 1;
	}
	/* What was skipped is said in the graph too: it travels without the terminal. */
	char skipped[96];
	_cleanup_free_ char *notes = NULL;

	if (in.nr_skipped) {
		snprintf(skipped, sizeof(skipped), "%zu malformed input line%s skipped",
			 in.nr_skipped, in.nr_skipped == 1 ? "" : "s");
		if (!sa.svg.subtitle)
			sa.svg.subtitle = skipped;
		if (asprintf(&notes, "%s%s%s", sa.svg.notes ? sa.svg.notes : "",
			     sa.svg.notes ? "\n" : "", skipped) < 0)
			notes = NULL;
		else
			sa.svg.notes = notes;
	}
	sa.svg.diff = in.nr_diff_lines > 0;
	sa.svg.diff_self = sa.svg.diff; /* two-count input: coloured as flamegraph.pl colours it */
	return write_output(output, &sa, t, svg_render) ? 1 : 0;
}

/* --- diff ------------------------------------------------------------------------- */

struct diff_line {
	char *stack;
	double before, after;
};

static int cmp_diff_line(const void *a, const void *b)
{
	return strcmp(((const struct diff_line *)a)->stack, ((const struct diff_line *)b)->stack);
}

/*
 * A count as difffolded.pl prints one (Perl's numbers): a whole number in
 * full, a fraction with 15 significant digits. Where that would take an
 * exponent, which neither flamegraph.pl nor flamed svg reads back, digits
 * and a point instead.
 */
static void put_count(FILE *f, double v)
{
	char b[400];
	int n;

	if (v == floor(v)) {
		fprintf(f, " %.0f", v);
		return;
	}
	snprintf(b, sizeof(b), "%.15g", v);
	if (!strchr(b, 'e')) {
		fprintf(f, " %s", b);
		return;
	}
	n = snprintf(b, sizeof(b), "%.17f", v);
	while (n > 1 && b[n - 1] == '0')
		b[--n] = '\0';
	fprintf(f, " %s", b);
}

/* "stack before after" for every stack that ends somewhere, sorted. */
static int write_folded_diff(struct svg_args *sa, struct fl_flametree *t, FILE *f)
{
	size_t nr = fl_flametree__nr_frames(t), n = 0;
	_cleanup_free_ struct diff_line *lines = calloc(nr ? nr : 1, sizeof(*lines));
	_cleanup_free_ uint32_t *path = malloc(FL_FLAMETREE_MAX_DEPTH * sizeof(*path));
	_cleanup_free_ bool *parent = calloc(nr + 1, sizeof(*parent));
	int err = 0;

	(void)sa;
	if (!lines || !path || !parent)
		return -ENOMEM;
	for (uint32_t id = 1; id <= nr; id++) {
		uint32_t p = fl_flametree__parent(t, id);

		if (p != FL_FLAMETREE_NONE)
			parent[p] = true;
	}
	for (uint32_t id = 1; id <= nr; id++) {
		double before, after;
		size_t depth = 0, len = 0, off = 0;
		char *s;

		/* Every stack, as difffolded.pl prints every one: "0 0" after a --normalize to nothing. */
		fl_flametree__self(t, id, &before, &after);
		if (!(before > 0) && !(after > 0) && parent[id])
			continue;
		for (uint32_t p = id; p != FL_FLAMETREE_NONE; p = fl_flametree__parent(t, p)) {
			size_t l;

			fl_flametree__name(t, p, &l);
			len += l + 1;
			path[depth++] = p;
		}
		s = malloc(len);
		if (!s) {
			err = -ENOMEM;
			goto out;
		}
		while (depth--) {
			size_t l;
			const char *name = fl_flametree__name(t, path[depth], &l);

			memcpy(s + off, name, l);
			off += l;
			s[off++] = depth ? ';' : '\0';
		}
		lines[n++] = (struct diff_line){.stack = s, .before = before, .after = after};
	}
	qsort(lines, n, sizeof(*lines), cmp_diff_line);
	for (size_t i = 0; i < n; i++) {
		fputs(lines[i].stack, f);
		put_count(f, lines[i].before);
		put_count(f, lines[i].after);
		fputc('\n', f);
	}
	if (ferror(f))
		err = -EIO;
out:
	for (size_t i = 0; i < n; i++)
		free(lines[i].stack);
	return err;
}

int cmd_diff(int argc, char **argv)
{
	enum { OPT_FOLDED = 0x2000 };
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{"normalize", no_argument, NULL, 'n'},
		{"strip-hex", no_argument, NULL, 's'},
		{"folded", no_argument, NULL, OPT_FOLDED},
		SVG_LONG_OPTIONS,
		{},
	};
	_cleanup_(fl_flametree__freep) struct fl_flametree *t = NULL;
	struct fl_flametree_opts to = {.sz = sizeof(to)};
	struct svg_args sa;
	struct input in = {};
	const char *output = NULL;
	bool normalize = false, folded = false;
	int c, err;

	svg_args_init(&sa);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:hns", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			output = optarg;
			break;
		case 'h':
			fputs(diff_usage, stdout);
			fputs(svg_options_help, stdout);
			return 0;
		case 'n':
			normalize = true;
			break;
		case 's':
			in.strip_hex = true;
			break;
		case OPT_FOLDED:
			folded = true;
			break;
		case ':':
			usage_error(diff_usage, "option '%s' needs a value", argv[optind - 1]);
			return EXIT_USAGE;
		case '?':
			usage_error(diff_usage, "unknown option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			if (svg_args_parse(&sa, c, optarg))
				return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		usage_error(diff_usage,
			    "give two folded files: flamed diff BEFORE.folded AFTER.folded");
		return EXIT_USAGE;
	}
	if (sa.flamechart) {
		usage_error(diff_usage,
			    "--flamechart has no meaning for a diff: the stacks are merged");
		return EXIT_USAGE;
	}
	if (output_check_format(output, folded ? OUTPUT_FORMAT_FOLDED : OUTPUT_FORMAT_SVG,
				folded ? "flamed diff --folded" : "flamed diff"))
		return EXIT_USAGE;
	to.reverse = sa.reverse;
	if (fl_flametree__new(&to, &t)) {
		msg("out of memory");
		return 1;
	}
	in.tree = t;
	in.args = &sa;
	in.side = -1;
	err = read_input(&in, argv[optind]);
	if (!err) {
		in.side = 1;
		err = read_input(&in, argv[optind + 1]);
	}
	free(in.buf);
	if (err)
		return 1;
	if (!(fl_flametree__total(t) > 0) && !(fl_flametree__total_before(t) > 0)) {
		msg("%s and %s: every count is zero: nothing to compare", argv[optind],
		    argv[optind + 1]);
		return 1;
	}
	if (!(fl_flametree__total(t) > 0) && !folded) {
		/* Every frame is gone: the lines say so (--folded), a graph of AFTER has no width. */
		msg("%s: no samples: nothing to draw (--folded writes what was there before)",
		    argv[optind + 1]);
		write_no_samples(output, &sa, "No samples after: every frame of the profile before is gone");
		return 1;
	}
	if (normalize)
		fl_flametree__normalize_before(t);
	sa.svg.diff = true;
	if (!sa.svg.title)
		sa.svg.title = "Differential Flame Graph";
	return write_output(output, &sa, t, folded ? write_folded_diff : svg_render) ? 1 : 0;
}
