// SPDX-License-Identifier: GPL-2.0-or-later
/* flamed svg and flamed diff: folded stacks from any tool to a flame graph. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flamed.h"
#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/daemon/snapdir.h"
#include "flamed/formats/foldedread.h"
#include "flamed/formats/pprofread.h"

DEFINE_FREE_FUNC(struct fl_flametree, fl_flametree__free)
DEFINE_FREE_FUNC(struct fl_snapdir, fl_snapdir__free)

static const char svg_usage[] =
	"usage: flamed svg [options] [FILE...]\n"
	"       flamed svg [options] [--from TIME] [--to TIME] DIR\n"
	"\n"
	"Draws folded stacks (\"frame;frame;...;frame COUNT\" lines, as written by flamed\n"
	"record, FlameGraph's stackcollapse scripts, py-spy, async-profiler, bpftrace...)\n"
	"or pprof profiles (profile.proto, gzipped or not: Go's runtime/pprof, pprof,\n"
	"perf_to_profile...) from the FILEs or standard input as an interactive flame\n"
	"graph SVG. A line with two counts (before, after) makes a differential graph.\n"
	"Given a directory (flamed daemon's output_dir), it merges the snapshots whose\n"
	"intervals overlap --from..--to (default: the first snapshot .. now), and says\n"
	"gaps, uncovered ends and snapshots only partly in the range (included whole).\n"
	"\n"
	"  -o, --output FILE        write here instead of standard output\n"
	"      --format FMT         svg, or html: a page that keeps every frame and zooms\n"
	"                           into any of them (default: from the extension of -o)\n"
	"      --sample-type NAME   of a pprof profile, the values drawn (cpu, samples,\n"
	"                           alloc_space...; default: the profile's default, else cpu)\n"
	"      --from TIME          DIR: the range's start (default: the first snapshot)\n"
	"      --to TIME            DIR: the range's end (default: now)\n"
	"                           TIME: 2026-11-22T03:00:00Z, 2026-11-22T04:00+01:00,\n"
	"                           2026-11-22 03:00 (local), 2026-11-22 (00:00 local),\n"
	"                           now, -90s, -30m, -1h30m, -2d (before now)\n"
	"  -h, --help               this text\n";

static const char diff_usage[] =
	"usage: flamed diff [options] BEFORE AFTER\n"
	"       flamed diff [options] --before FROM..TO --after FROM..TO DIR\n"
	"\n"
	"A differential flame graph of AFTER against BEFORE: widths from AFTER, red where a\n"
	"frame grew, blue where it shrank (deeper for bigger changes), gold where it is new.\n"
	"Each is folded stacks or a pprof profile (gzipped or not), or a time range of the\n"
	"snapshots in DIR (flamed daemon's output_dir), merged as flamed svg --from --to\n"
	"merges them. FROM or TO left out: the first snapshot, now. TIME as flamed svg\n"
	"--help says, e.g. --before -2h..-1h --after -1h.. DIR.\n"
	"\n"
	"  -n, --normalize          scale BEFORE to AFTER's total first (whole numbers)\n"
	"  -s, --strip-hex          hexadecimal addresses in frame names become 0x...\n"
	"      --folded             write \"stack BEFORE AFTER\" lines instead of a graph\n"
	"      --format FMT         svg, or html: every frame, in a page (default: from -o)\n"
	"      --sample-type NAME   of pprof profiles, the values compared (cpu, samples...)\n"
	"      --before FROM..TO    the snapshots of DIR in this range are BEFORE\n"
	"      --after FROM..TO     ... and these AFTER\n"
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
	const char *sample_type; /* --sample-type: of pprof inputs */
	/* The sample type and unit of the pprof inputs read ("" before one; mixed: they differ). */
	char type[64], unit[64];
	bool mixed;
	bool no_graph; /* an input flamed could not read (not one without samples): no empty graph */
	bool snapshot; /* a daemon snapshot: one without samples (an idle interval) is no error */
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

/* Reads up to n bytes, fewer only at the end of fd. Returns the number read or -errno. */
static ssize_t read_full(int fd, void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = read(fd, (char *)buf + done, n - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/*
 * The whole of fd after its first head_len bytes (in head), in *ret (the
 * caller frees), at most max bytes in all. Returns 0, -EFBIG past max,
 * -ENOMEM or read(2)'s -errno.
 */
static int read_whole(int fd, const void *head, size_t head_len, size_t max, char **ret,
		      size_t *len)
{
	size_t cap = 1u << 20, n = head_len;
	_cleanup_free_ char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	memcpy(buf, head, head_len);
	for (;;) {
		ssize_t r;

		if (n == cap) {
			/* One byte more than max: a larger input is refused, not cut. */
			size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
			char *nb;

			if (cap > max)
				return -EFBIG;
			nb = realloc(buf, ncap);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = ncap;
		}
		r = read_full(fd, buf + n, cap - n);
		if (r < 0)
			return (int)r;
		if (!r)
			break;
		n += (size_t)r;
	}
	if (n > max)
		return -EFBIG;
	*ret = TAKE_PTR(buf);
	*len = n;
	return 0;
}

/* Reads a pprof profile (its first head_len bytes in head) into the tree; prints problems. */
static int read_pprof(struct input *in, int fd, const void *head, size_t head_len)
{
	const struct fl_pprof_read_opts po = {.sz = sizeof(po), .sample_type = in->sample_type};
	struct fl_pprof_read_info info;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int err;

	err = read_whole(fd, head, head_len, FL_PPROF_MAX_BYTES, &buf, &len);
	if (err == -EFBIG) {
		msg("%s: larger than %u MiB: flamed reads pprof profiles up to that size", in->name,
		    FL_PPROF_MAX_BYTES >> 20);
		return err;
	}
	if (err) {
		msg("cannot read %s: %s", in->name, strerror(-err));
		return err;
	}
	err = fl_pprof__parse(buf, len, &po, add_line, in, &info);
	in->no_graph = err != 0;
	if (err == -EINVAL && in->sample_type && info.type[0]) {
		msg("%s: no sample type \"%s\" (it has: %s): choose one with --sample-type",
		    in->name, in->sample_type, info.type);
		return err;
	}
	if (err == -EINVAL) {
		msg("%s: cannot read it as a pprof profile: %s (is the file whole? write it again)",
		    in->name, info.error ? info.error : "it does not decode");
		return err;
	}
	if (err == -EFBIG) {
		msg("%s: too large: %s (flamed reads pprof profiles up to %u MiB)", in->name,
		    info.error ? info.error : "over the limit", FL_PPROF_MAX_BYTES >> 20);
		return err;
	}
	if (err) {
		msg("cannot read %s: %s", in->name, strerror(-err));
		return err;
	}
	if (!in->type[0] && !in->mixed) {
		snprintf(in->type, sizeof(in->type), "%s", info.type);
		snprintf(in->unit, sizeof(in->unit), "%s", info.unit);
	} else if (strcmp(in->type, info.type) || strcmp(in->unit, info.unit)) {
		in->mixed = true;
	}
	if (info.bad_refs)
		msg("%s: %" PRIu64 " reference%s to strings, locations, functions, mappings or "
		    "values the profile does not have: drawn as [unknown] (a damaged profile?)",
		    in->name, info.bad_refs, info.bad_refs == 1 ? "" : "s");
	if (info.too_long)
		msg("%s: skipped %" PRIu64 " sample%s whose stack takes more than %u MiB", in->name,
		    info.too_long, info.too_long == 1 ? "" : "s", FL_FOLDED_MAX_LINE >> 20);
	if (info.negative)
		msg("%s: skipped %" PRIu64 " sample%s with a negative %s value", in->name,
		    info.negative, info.negative == 1 ? "" : "s", info.type);
	if (in->nr_too_deep)
		msg("%s: skipped %zu stacks deeper than %d frames", in->name, in->nr_too_deep,
		    FL_FLAMETREE_MAX_DEPTH);
	if (!info.samples && !in->side && !in->snapshot) {
		msg("%s: no samples with a %s value above 0 (%" PRIu64 " of 0)%s", in->name,
		    info.type, info.zero,
		    in->sample_type ? "" : ": choose another with --sample-type");
		return -EINVAL;
	}
	return 0;
}

/* Reads one open input, in->name, into the tree; prints problems. Returns 0 or -errno. */
static int read_input_fd(struct input *in, int fd)
{
	struct fl_folded_stats st;
	char head[FL_PPROF_DETECT_BYTES];
	ssize_t got;
	bool pprof;
	int err;

	in->nr_too_deep = 0;
	/* Its first bytes say which format: stdin and pipes cannot be read twice, so they are kept. */
	got = read_full(fd, head, sizeof(head));
	pprof = got >= 0 && fl_pprof__detect(head, (size_t)got);
	if (got < 0)
		err = (int)got;
	else if (pprof)
		err = read_pprof(in, fd, head, (size_t)got);
	else
		err = fl_folded__parse_fd_after(fd, head, (size_t)got, add_line, in, &st);
	if (pprof)
		return err; /* said */
	/* Folded counts: not what a pprof sample type says. */
	in->mixed = true;
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
	if (!st.good && !(in->side && !st.lines) && !in->snapshot) {
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

/* Reads one input (a path, or "-" for stdin) into the tree; prints problems. Returns 0 or -errno. */
static int read_input(struct input *in, const char *path)
{
	int fd, err;

	in->name = strcmp(path, "-") ? path : "standard input";
	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) : STDIN_FILENO;
	if (fd < 0) {
		err = -errno;
		msg("cannot read %s: %s", path, strerror(-err));
		return err;
	}
	err = read_input_fd(in, fd);
	if (fd != STDIN_FILENO)
		close(fd);
	return err;
}

/* --- time ranges over a daemon's snapshot directory ------------------------------- */

#define NS 1000000000LL

static const char time_forms[] =
	"TIME is 2026-11-22T03:00:00Z, 2026-11-22T04:00+01:00 (an offset), 2026-11-22 03:00 "
	"(local time), 2026-11-22 (its 00:00, local), now, or before now: -90s, -30m, -1h30m, -2d";

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* --from/--to TIME into *ret; a bad one is said in one line. Returns 0 or -EINVAL. */
static int parse_time_arg(const char *opt, const char *arg, int64_t now, int64_t *ret)
{
	const char *why;

	if (!fl_snapdir__parse_time(arg, now, ret, &why))
		return 0;
	msg("%s '%s': %s; %s", opt, arg, why, time_forms);
	return -EINVAL;
}

/* --before/--after FROM..TO; a bad one is said in one line. Returns 0 or -EINVAL. */
static int parse_range_arg(const char *opt, const char *arg, int64_t now, int64_t *from,
			   int64_t *to)
{
	const char *why, *which;

	if (!fl_snapdir__parse_range(arg, now, from, to, &why, &which))
		return 0;
	msg("%s '%s': %s%s%s; RANGE is FROM..TO, either left out for the first snapshot or now "
	    "(-2h..-1h, 2026-11-22T03:00Z.., ..2026-11-22); %s",
	    opt, arg, strcmp(which, "RANGE") ? which : "", strcmp(which, "RANGE") ? ": " : "",
	    why ? why : "out of memory", time_forms);
	return -EINVAL;
}

enum { TF_DATE = 1, TF_SECONDS = 2 };

/* t (ns, UTC) as "2026-11-22 03:00:05", without the date unless TF_DATE, the seconds when not 0 or TF_SECONDS. */
static const char *fmt_time(int64_t t, unsigned int flags, char buf[32])
{
	time_t secs = (time_t)(t / NS - (t % NS < 0));
	struct tm tm;
	size_t n = 0;

	gmtime_r(&secs, &tm);
	if (flags & TF_DATE)
		n = strftime(buf, 32, "%Y-%m-%d ", &tm);
	strftime(buf + n, 32 - n, (flags & TF_SECONDS) || tm.tm_sec ? "%H:%M:%S" : "%H:%M", &tm);
	return buf;
}

static const char *fmt_duration(int64_t ns, char buf[32])
{
	double s = (double)ns / NS;

	if (s < 100)
		snprintf(buf, 32, "%.0f s", s);
	else if (s < 7200)
		snprintf(buf, 32, "%.0f min", s / 60);
	else if (s < 172800)
		snprintf(buf, 32, "%.1f h", s / 3600);
	else
		snprintf(buf, 32, "%.1f days", s / 86400);
	return buf;
}

static bool same_day(int64_t a, int64_t b)
{
	char x[32], y[32];

	fmt_time(a, TF_DATE, x);
	fmt_time(b, TF_DATE, y);
	return !strncmp(x, y, 10);
}

/* What reading a range found, for the graph: the subtitle and the notes. */
struct range_report {
	char subtitle[400];
	char *notes; /* lines, each also said on stderr; freed by the caller */
};

static void range_report_fini(struct range_report *r)
{
	free(r->notes);
}

static void say(struct range_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line on stderr, and the same line in the graph's notes. */
static void say(struct range_report *r, const char *fmt, ...)
{
	_cleanup_free_ char *line = NULL;
	char *notes;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0) {
		line = NULL;
		return;
	}
	msg("%s", line);
	if (asprintf(&notes, "%s%s%s", r->notes ? r->notes : "", r->notes ? "\n" : "", line) < 0)
		return;
	free(r->notes);
	r->notes = notes;
}

__attribute__((format(printf, 3, 4))) static void append(char *buf, size_t size, const char *fmt,
							  ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, size - n, fmt, ap);
	va_end(ap);
}

/* The snapshot's file to read: folded (cheaper), or pprof; pprof first when --sample-type asks. */
static unsigned int snap_format_to_read(const struct input *in, const struct fl_snapshot *s)
{
	if (in->sample_type && (s->formats & FL_SNAP_PPROF))
		return FL_SNAP_PPROF;
	return s->formats & FL_SNAP_FOLDED ? FL_SNAP_FOLDED : FL_SNAP_PPROF;
}

/* Says where the range is not covered, or covered by snapshots that stick out of it. */
static void report_coverage(struct range_report *r, const char *who, const struct fl_snapdir *d,
			    const struct fl_snap_selection *sel, bool days)
{
	const unsigned int full = TF_DATE | TF_SECONDS, brief = days ? TF_DATE : 0;
	const struct fl_snapshot *first = NULL, *last = NULL, *unreadable = NULL;
	char a[32], b[32], c[32];
	size_t nread = sel->nr - sel->nr_unreadable;

	for (size_t i = sel->first; i < sel->first + sel->nr; i++) {
		const struct fl_snapshot *s = fl_snapdir__get(d, i);

		if (!(s->formats & (FL_SNAP_FOLDED | FL_SNAP_PPROF))) {
			if (!unreadable)
				unreadable = s;
			continue;
		}
		if (!first)
			first = s;
		last = s;
	}
	if (sel->has_head) {
		say(r, "%s: no snapshot from %s to %s UTC (%s): the range starts before the first one",
		    who, fmt_time(sel->head.start_ns, full, a), fmt_time(sel->head.end_ns, full, b),
		    fmt_duration(sel->head.end_ns - sel->head.start_ns, c));
		append(r->subtitle, sizeof(r->subtitle), "; none before %s",
		       fmt_time(sel->head.end_ns, brief, a));
	}
	for (size_t i = 0; i < sel->nr_gaps && i < 20; i++)
		say(r, "%s: gap from %s to %s UTC (%s): no snapshot", who,
		    fmt_time(sel->gaps[i].start_ns, full, a), fmt_time(sel->gaps[i].end_ns, full, b),
		    fmt_duration(sel->gaps[i].end_ns - sel->gaps[i].start_ns, c));
	if (sel->nr_gaps > 20)
		say(r, "%s: and %zu more gaps", who, sel->nr_gaps - 20);
	if (sel->nr_gaps) {
		append(r->subtitle, sizeof(r->subtitle), "; %zu gap%s (", sel->nr_gaps,
		       sel->nr_gaps == 1 ? "" : "s");
		for (size_t i = 0; i < sel->nr_gaps && i < 3; i++)
			append(r->subtitle, sizeof(r->subtitle), "%s%s-%s", i ? ", " : "",
			       fmt_time(sel->gaps[i].start_ns, brief, a),
			       fmt_time(sel->gaps[i].end_ns, brief, b));
		append(r->subtitle, sizeof(r->subtitle), "%s)", sel->nr_gaps > 3 ? ", ..." : "");
	}
	if (sel->has_tail) {
		say(r, "%s: no snapshot from %s to %s UTC (%s): the range ends after the last one", who,
		    fmt_time(sel->tail.start_ns, full, a), fmt_time(sel->tail.end_ns, full, b),
		    fmt_duration(sel->tail.end_ns - sel->tail.start_ns, c));
		append(r->subtitle, sizeof(r->subtitle), "; none after %s",
		       fmt_time(sel->tail.start_ns, brief, a));
	}
	if (sel->first_partial && first)
		say(r, "%s: %s (%s to %s UTC) is only partly in the range: its samples cannot be "
		       "split, all of them are included",
		    who, first->base, fmt_time(first->start_ns, full, a),
		    fmt_time(first->end_ns, full, b));
	if (sel->last_partial && last && last != first)
		say(r, "%s: %s (%s to %s UTC) is only partly in the range: its samples cannot be "
		       "split, all of them are included",
		    who, last->base, fmt_time(last->start_ns, full, a),
		    fmt_time(last->end_ns, full, b));
	if (nread == 1 && sel->first_partial)
		append(r->subtitle, sizeof(r->subtitle), "; partial");
	else if (sel->first_partial && sel->last_partial)
		append(r->subtitle, sizeof(r->subtitle), "; first and last partial");
	else if (sel->first_partial || sel->last_partial)
		append(r->subtitle, sizeof(r->subtitle), "; %s partial",
		       sel->first_partial ? "first" : "last");
	if (sel->nr_unreadable) {
		say(r, "%s: skipped %zu snapshot%s with only a graph, SVG or HTML (%s%s): flamed reads "
		       ".folded or .pb.gz",
		    who, sel->nr_unreadable, sel->nr_unreadable == 1 ? "" : "s", unreadable->base,
		    sel->nr_unreadable > 1 ? ", ..." : "");
		append(r->subtitle, sizeof(r->subtitle), "; %zu skipped (graphs only)",
		       sel->nr_unreadable);
	}
	if (sel->nr_overlapping) {
		say(r, "%s: %zu snapshot%s before the one before %s ends (two daemons writing "
		       "here?): their samples may be counted twice",
		    who, sel->nr_overlapping,
		    sel->nr_overlapping == 1 ? " starts" : "s start",
		    sel->nr_overlapping == 1 ? "it" : "them");
		append(r->subtitle, sizeof(r->subtitle), "; %zu overlapping", sel->nr_overlapping);
	}
}

/*
 * Reads the snapshots of dir that overlap [from, to) (FL_SNAPDIR_OPEN: the
 * first snapshot, now) into in's tree, says what the range lacks on stderr
 * and in r. label ("before", "after", or NULL) starts the subtitle.
 * Returns 0, -ENOENT when no snapshot is in the range (said; r->subtitle
 * says it for an empty graph), or -errno (said).
 */
static int read_range(struct input *in, const char *dir, int64_t from, int64_t to, int64_t now,
		      const char *label, struct range_report *r)
{
	_cleanup_(fl_snapdir__freep) struct fl_snapdir *d = NULL;
	struct fl_snap_selection sel;
	char who[PATH_MAX + 16], rtext[80], a[32], b[32];
	size_t nread, nr_folded = 0, nr_pprof = 0, nr_gone = 0;
	bool days;
	int err;

	snprintf(who, sizeof(who), "%s%s%s%s", dir, label ? " (" : "", label ? label : "",
		 label ? ")" : "");
	err = fl_snapdir__scan(AT_FDCWD, dir, 0, &d);
	if (err) {
		msg("cannot list the snapshots in %s: %s", dir,
		    err == -ENOTDIR ? "not a directory (give the daemon's output_dir)"
		    : err == -E2BIG ? "more than 1,000,000 snapshots"
				    : strerror(-err));
		return err;
	}
	err = fl_snapdir__select(d, from, to, now, FL_SNAP_FOLDED | FL_SNAP_PPROF, &sel);
	if (err) {
		msg("out of memory");
		return err;
	}
	days = !same_day(sel.from_ns, sel.to_ns);
	if (days)
		snprintf(rtext, sizeof(rtext), "%s - %s UTC", fmt_time(sel.from_ns, TF_DATE, a),
			 fmt_time(sel.to_ns, TF_DATE, b));
	else
		snprintf(rtext, sizeof(rtext), "%s-%s UTC", fmt_time(sel.from_ns, TF_DATE, a),
			 fmt_time(sel.to_ns, 0, b));
	nread = sel.nr - sel.nr_unreadable;
	if (!nread) {
		size_t n = fl_snapdir__nr(d);

		if (!n)
			msg("%s: no snapshots in it (files named as the daemon names them, "
			    "2026-11-22T03-12-00Z.folded)",
			    who);
		else
			msg("%s: no snapshot%s in %s (it has %zu, from %s to %s UTC)", who,
			    sel.nr_unreadable ? " flamed can read (.folded or .pb.gz)" : "", rtext, n,
			    fmt_time(fl_snapdir__get(d, 0)->start_ns, TF_DATE | TF_SECONDS, a),
			    fmt_time(fl_snapdir__get(d, n - 1)->end_ns, TF_DATE | TF_SECONDS, b));
		snprintf(r->subtitle, sizeof(r->subtitle), "No samples: no snapshot in %s", rtext);
		fl_snapdir__selection_fini(&sel);
		return -ENOENT;
	}
	for (size_t i = sel.first; i < sel.first + sel.nr && !err; i++) {
		const struct fl_snapshot *s = fl_snapdir__get(d, i);
		char file[FL_SNAP_NAME_MAX], name[PATH_MAX + FL_SNAP_NAME_MAX + 2];
		unsigned int format;
		int fd;

		if (!(s->formats & (FL_SNAP_FOLDED | FL_SNAP_PPROF)))
			continue;
		format = snap_format_to_read(in, s);
		snprintf(name, sizeof(name), "%s/%s", dir, fl_snapdir__file_name(s, format, file));
		fd = fl_snapdir__open(d, s, format);
		if (fd == -ENOENT) {
			/* Retention deleted it since the listing. */
			nr_gone++;
			continue;
		}
		if (fd < 0) {
			msg("cannot read %s: %s", name,
			    fd == -ELOOP || fd == -EINVAL ? "no longer a regular file" : strerror(-fd));
			err = fd;
			break;
		}
		in->name = name;
		in->snapshot = true;
		err = read_input_fd(in, fd);
		in->snapshot = false;
		close(fd);
		if (format == FL_SNAP_FOLDED)
			nr_folded++;
		else
			nr_pprof++;
	}
	if (err) {
		fl_snapdir__selection_fini(&sel);
		return err;
	}
	fl_pr_debug("svg: %s: %zu snapshots read, %zu folded, %zu pprof\n", who, nread, nr_folded,
		    nr_pprof);
	snprintf(r->subtitle, sizeof(r->subtitle), "%s%s%s: %zu snapshot%s", label ? label : "",
		 label ? " " : "", rtext, nread - nr_gone, nread - nr_gone == 1 ? "" : "s");
	report_coverage(r, who, d, &sel, days);
	if (nr_gone)
		say(r, "%s: %zu snapshot%s deleted while read (the daemon's retention?)", who,
		    nr_gone, nr_gone == 1 ? " was" : "s were");
	if (in->sample_type && nr_folded)
		say(r, "%s: %zu snapshot%s no .pb.gz: %s counts are samples, not %s", who, nr_folded,
		    nr_folded == 1 ? " has" : "s have", nr_folded == 1 ? "its" : "their",
		    in->sample_type);
	fl_snapdir__selection_fini(&sel);
	return 0;
}

/* The graph's notes: the user's, what reading said, and the skipped lines; NULL when none. */
static char *join_notes(const char *a, const char *b)
{
	char *s;

	if (!a || !*a)
		return b ? strdup(b) : NULL;
	if (!b || !*b)
		return strdup(a);
	if (asprintf(&s, "%s\n%s", a, b) < 0)
		return NULL;
	return s;
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

/*
 * What the counts of pprof inputs are, when they agree and the options do
 * not say: the unit ("nanoseconds") in the tooltips, the sample type in the
 * subtitle.
 */
static void name_pprof_counts(struct svg_args *sa, const struct input *in, char *buf, size_t size)
{
	if (!in->type[0] || in->mixed)
		return;
	if (!sa->svg.countname && in->unit[0] && strcmp(in->unit, "count"))
		sa->svg.countname = in->unit;
	if (!sa->svg.subtitle) {
		snprintf(buf, size, "%s%s%s%s", in->type, in->unit[0] ? " (" : "", in->unit,
			 in->unit[0] ? ")" : "");
		sa->svg.subtitle = buf;
	}
}

int cmd_svg(int argc, char **argv)
{
	enum { OPT_SAMPLE_TYPE = 0x2001, OPT_FROM, OPT_TO, OPT_FORMAT };
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"help", no_argument, NULL, 'h'},
		{"sample-type", required_argument, NULL, OPT_SAMPLE_TYPE},
		{"from", required_argument, NULL, OPT_FROM},
		{"to", required_argument, NULL, OPT_TO},
		SVG_LONG_OPTIONS,
		{},
	};
	_cleanup_(fl_flametree__freep) struct fl_flametree *t = NULL;
	struct svg_args sa;
	struct input in = {};
	const char *output = NULL, *from_arg = NULL, *to_arg = NULL, *format = NULL;
	int64_t now = now_ns(), since = FL_SNAPDIR_OPEN, until = FL_SNAPDIR_OPEN;
	_cleanup_(range_report_fini) struct range_report rr = {};
	bool range;
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
		case OPT_SAMPLE_TYPE:
			in.sample_type = optarg;
			break;
		case OPT_FROM:
			from_arg = optarg;
			break;
		case OPT_TO:
			to_arg = optarg;
			break;
		case OPT_FORMAT:
			format = optarg;
			break;
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
	if (svg_args_format(&sa, output, format, "flamed svg"))
		return EXIT_USAGE;
	range = from_arg || to_arg;
	if (!range && argc - optind == 1) {
		struct stat st;

		/* A directory: the daemon's snapshots, all of them. */
		range = !stat(argv[optind], &st) && S_ISDIR(st.st_mode);
	}
	if (range) {
		if (argc - optind != 1) {
			usage_error(svg_usage, "--from and --to read one directory of daemon "
					       "snapshots: flamed svg --from TIME --to TIME DIR");
			return EXIT_USAGE;
		}
		if ((from_arg && parse_time_arg("--from", from_arg, now, &since)) ||
		    (to_arg && parse_time_arg("--to", to_arg, now, &until)))
			return EXIT_USAGE;
		if (from_arg && to_arg && since >= until) {
			msg("--from '%s' is not before --to '%s': give the earlier time to --from",
			    from_arg, to_arg);
			return EXIT_USAGE;
		}
	}
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
	if (range) {
		err = read_range(&in, argv[optind], since, until, now, NULL, &rr);
		if (err == -ENOENT) {
			write_no_samples(output, &sa, rr.subtitle);
			return 1;
		}
		if (err)
			return 1;
	} else if (optind == argc) {
		err = read_input(&in, "-");
	} else {
		err = 0;
		for (int i = optind; i < argc && !err; i++)
			err = read_input(&in, argv[i]);
	}
	if (err && (err != -EINVAL || in.no_graph))
		return 1;
	if (!err && !(fl_flametree__total(t) > 0)) {
		msg("nothing to draw: every count is zero");
		err = -EINVAL;
	}
	if (err) {
		write_no_samples(output, &sa, "No samples: the input held no folded stacks with a count above 0");
		return 1;
	}
	/* What was skipped, and what a range lacks, is said in the graph too: it travels without the terminal. */
	char skipped[96];
	_cleanup_free_ char *notes = NULL, *range_notes = NULL;

	if (range) {
		/* The notes say the range whatever the subtitle is. */
		_cleanup_free_ char *head = join_notes(sa.svg.notes, rr.subtitle);

		if (!sa.svg.subtitle)
			sa.svg.subtitle = rr.subtitle;
		range_notes = join_notes(head, rr.notes);
		if (range_notes)
			sa.svg.notes = range_notes;
	}
	if (in.nr_skipped) {
		snprintf(skipped, sizeof(skipped), "%zu malformed input line%s skipped",
			 in.nr_skipped, in.nr_skipped == 1 ? "" : "s");
		if (!sa.svg.subtitle)
			sa.svg.subtitle = skipped;
		free(notes);
		notes = join_notes(sa.svg.notes, skipped);
		if (notes)
			sa.svg.notes = notes;
	}
	char pprof_subtitle[160];

	name_pprof_counts(&sa, &in, pprof_subtitle, sizeof(pprof_subtitle));
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
	enum { OPT_FOLDED = 0x2000, OPT_SAMPLE_TYPE, OPT_BEFORE, OPT_AFTER, OPT_FORMAT };
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{"normalize", no_argument, NULL, 'n'},
		{"strip-hex", no_argument, NULL, 's'},
		{"folded", no_argument, NULL, OPT_FOLDED},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"sample-type", required_argument, NULL, OPT_SAMPLE_TYPE},
		{"before", required_argument, NULL, OPT_BEFORE},
		{"after", required_argument, NULL, OPT_AFTER},
		SVG_LONG_OPTIONS,
		{},
	};
	_cleanup_(fl_flametree__freep) struct fl_flametree *t = NULL;
	_cleanup_(range_report_fini) struct range_report rb = {}, ra = {};
	struct fl_flametree_opts to = {.sz = sizeof(to)};
	struct svg_args sa;
	struct input in = {};
	const char *output = NULL, *before_arg = NULL, *after_arg = NULL, *format = NULL;
	int64_t now = now_ns(), b_from = 0, b_to = 0, a_from = 0, a_to = 0;
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
		case OPT_SAMPLE_TYPE:
			in.sample_type = optarg;
			break;
		case OPT_BEFORE:
			before_arg = optarg;
			break;
		case OPT_AFTER:
			after_arg = optarg;
			break;
		case OPT_FORMAT:
			format = optarg;
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
	if ((before_arg || after_arg) && (!before_arg || !after_arg || argc - optind != 1)) {
		usage_error(diff_usage, "give both ranges and one directory of daemon snapshots: "
					"flamed diff --before FROM..TO --after FROM..TO DIR");
		return EXIT_USAGE;
	}
	if (before_arg) {
		if (parse_range_arg("--before", before_arg, now, &b_from, &b_to) ||
		    parse_range_arg("--after", after_arg, now, &a_from, &a_to))
			return EXIT_USAGE;
	} else if (argc - optind != 2) {
		usage_error(diff_usage, "give two files, folded stacks or pprof profiles: "
					"flamed diff BEFORE AFTER");
		return EXIT_USAGE;
	}
	if (sa.flamechart) {
		usage_error(diff_usage,
			    "--flamechart has no meaning for a diff: the stacks are merged");
		return EXIT_USAGE;
	}
	if (folded && format) {
		msg("--folded writes lines, not a graph: drop --format");
		return EXIT_USAGE;
	}
	if (folded ? output_check_format(output, OUTPUT_FORMAT_FOLDED, "flamed diff --folded")
		   : svg_args_format(&sa, output, format, "flamed diff"))
		return EXIT_USAGE;
	to.reverse = sa.reverse;
	if (fl_flametree__new(&to, &t)) {
		msg("out of memory");
		return 1;
	}
	in.tree = t;
	in.args = &sa;
	in.side = -1;
	if (before_arg) {
		err = read_range(&in, argv[optind], b_from, b_to, now, "before", &rb);
		if (!err) {
			in.side = 1;
			err = read_range(&in, argv[optind], a_from, a_to, now, "after", &ra);
		}
		if (err == -ENOENT && !folded)
			write_no_samples(output, &sa, ra.subtitle[0] ? ra.subtitle : rb.subtitle);
	} else {
		err = read_input(&in, argv[optind]);
		if (!err) {
			in.side = 1;
			err = read_input(&in, argv[optind + 1]);
		}
	}
	free(in.buf);
	if (err)
		return 1;
	const char *bname = before_arg ? before_arg : argv[optind];
	const char *aname = before_arg ? after_arg : argv[optind + 1];

	if (!(fl_flametree__total(t) > 0) && !(fl_flametree__total_before(t) > 0)) {
		msg("%s and %s: every count is zero: nothing to compare", bname, aname);
		return 1;
	}
	if (!(fl_flametree__total(t) > 0) && !folded) {
		/* Every frame is gone: the lines say so (--folded), a graph of AFTER has no width. */
		msg("%s: no samples: nothing to draw (--folded writes what was there before)",
		    aname);
		write_no_samples(output, &sa, "No samples after: every frame of the profile before is gone");
		return 1;
	}
	if (normalize)
		fl_flametree__normalize_before(t);
	char pprof_subtitle[160];

	char range_subtitle[sizeof(rb.subtitle) + sizeof(ra.subtitle) + 4];
	_cleanup_free_ char *range_notes = NULL;

	if (before_arg) {
		_cleanup_free_ char *head = NULL, *mid = NULL;

		snprintf(range_subtitle, sizeof(range_subtitle), "%s | %s", rb.subtitle,
			 ra.subtitle);
		if (!sa.svg.subtitle)
			sa.svg.subtitle = range_subtitle;
		head = join_notes(sa.svg.notes, range_subtitle);
		mid = join_notes(head, rb.notes);
		range_notes = join_notes(mid, ra.notes);
		if (range_notes)
			sa.svg.notes = range_notes;
	}
	name_pprof_counts(&sa, &in, pprof_subtitle, sizeof(pprof_subtitle));
	sa.svg.diff = true;
	if (!sa.svg.title)
		sa.svg.title = "Differential Flame Graph";
	return write_output(output, &sa, t, folded ? write_folded_diff : svg_render) ? 1 : 0;
}
