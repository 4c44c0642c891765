// SPDX-License-Identifier: GPL-2.0-or-later
/* flamed convert: folded stacks to pprof and back, for the tools and backends that read either. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flamed.h"
#include "flamed/files/regfile.h"
#include "flamed/formats/folded.h"
#include "flamed/formats/foldedread.h"
#include "flamed/formats/pprof.h"
#include "flamed/formats/pprofread.h"
#include "flamed/profile/profile.h"

static const char convert_usage[] =
	"usage: flamed convert [options] [INPUT]\n"
	"\n"
	"Turns folded stacks into a pprof profile (gzipped profile.proto, as go tool pprof\n"
	"and the continuous-profiling backends read it), and a pprof profile into folded\n"
	"stacks. What INPUT is (a file, or standard input without one or with -) is told\n"
	"by its content; the output is the other format unless -o or --format says.\n"
	"\n"
	"options:\n"
	"  -o, --output FILE        output file ('-' or absent: stdout); .pb.gz and .pprof\n"
	"                           are pprof, .folded, .txt and .collapsed folded\n"
	"      --format FMT         folded or pprof\n"
	"      --sample-type NAME   of a pprof input: the values to read (default: its\n"
	"                           default sample type, else cpu, else the first)\n"
	"  -F, --freq HZ            of a folded input: the sampling rate, so that the pprof\n"
	"                           profile also has cpu/nanoseconds (1e9 / HZ per sample)\n"
	"  -h, --help               this text\n";

enum { OPT_FORMAT = 0x100, OPT_SAMPLE_TYPE };

/* Reads are bounded: a pprof profile is decompressed whole, folded text parsed from memory. */
#define CONVERT_MAX_INPUT (4ull << 30)

struct to_profile {
	struct fl_profile *p;
	uint32_t *ids;
	size_t cap;
	uint64_t fractional; /* counts rounded to whole samples */
	uint64_t too_small;  /* ... to 0, left out */
};

/* One folded line (or a pprof sample as one) into the profile: frames split at ';'. */
static int add_line(const struct fl_folded_line *l, void *ctx)
{
	struct to_profile *c = ctx;
	double v = l->count[l->nr_counts - 1];
	uint64_t count;
	size_t n = 0, start = 0;
	int err;

	if (v != floor(v))
		c->fractional++;
	v = nearbyint(v);
	if (v < 1) {
		c->too_small++;
		return 0;
	}
	count = v >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)v;
	for (size_t i = 0; i <= l->len; i++) {
		if (i < l->len && l->stack[i] != ';')
			continue;
		if (n == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 256;
			uint32_t *ids = realloc(c->ids, cap * sizeof(*ids));

			if (!ids)
				return -ENOMEM;
			c->ids = ids;
			c->cap = cap;
		}
		err = fl_profile__intern(c->p, l->stack + start, i - start, &c->ids[n++]);
		if (err)
			return err;
		start = i + 1;
	}
	return fl_profile__add(c->p, c->ids, n, count);
}

static int read_input(const char *path, char **buf, size_t *len)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) : STDIN_FILENO;
	int err;

	if (fd < 0) {
		err = -errno;
		msg("cannot read %s: %s", path, strerror(-err));
		return err;
	}
	err = fl_regfile__read_all(fd, CONVERT_MAX_INPUT, buf, len);
	if (fd != STDIN_FILENO)
		close(fd);
	if (err == -EFBIG)
		msg("cannot read %s: larger than %llu GiB", path, CONVERT_MAX_INPUT >> 30);
	else if (err)
		msg("cannot read %s: %s", path, strerror(-err));
	return err;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"sample-type", required_argument, NULL, OPT_SAMPLE_TYPE},
		{"freq", required_argument, NULL, 'F'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	enum output_format fmt = OUTPUT_FORMAT_NONE;
	struct fl_pprof_read_opts ro = {.sz = sizeof(ro)};
	struct to_profile c = {0};
	struct fl_pprof *pp = NULL;
	struct output out = {};
	const char *output = NULL, *input = "-", *name;
	unsigned long long freq = 0;
	char *buf = NULL, *end;
	size_t len = 0;
	bool in_pprof;
	int opt, err, ret = 1;

	while ((opt = getopt_long(argc, argv, "o:F:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			output = optarg;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "folded")) {
				fmt = OUTPUT_FORMAT_FOLDED;
			} else if (!strcmp(optarg, "pprof")) {
				fmt = OUTPUT_FORMAT_PPROF;
			} else {
				msg("unknown format '%s': use folded or pprof", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_SAMPLE_TYPE:
			ro.sample_type = optarg;
			break;
		case 'F':
			errno = 0;
			freq = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || !freq || freq > 1000000000) {
				msg("-F %s: give the sampling rate in Hz, 1 to 1000000000", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			fputs(convert_usage, stdout);
			return 0;
		default:
			fputs(convert_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		msg("convert takes one input (give the others to their own flamed convert)");
		return EXIT_USAGE;
	}
	if (optind < argc)
		input = argv[optind];
	name = strcmp(input, "-") ? input : "standard input";
	if (fmt == OUTPUT_FORMAT_NONE) {
		fmt = output_format_of(output);
		if (fmt == OUTPUT_FORMAT_SVG || fmt == OUTPUT_FORMAT_UNKNOWN) {
			msg("-o %s: convert writes folded stacks (.folded, .txt, .collapsed) and pprof "
			    "(.pb.gz, .pprof) (rename it, or give --format; flamed svg draws graphs)",
			    output);
			return EXIT_USAGE;
		}
	} else if (output_check_format(output, fmt, "this flamed convert")) {
		return EXIT_USAGE;
	}
	if (read_input(input, &buf, &len))
		return 1;
	in_pprof = fl_pprof__detect(buf, len);
	if (fmt == OUTPUT_FORMAT_NONE)
		fmt = in_pprof ? OUTPUT_FORMAT_FOLDED : OUTPUT_FORMAT_PPROF;
	if (in_pprof && freq)
		msg("-F is for folded input: %s is pprof, its own period is kept", name);

	err = fl_profile__new(&c.p);
	if (err)
		goto nomem;
	if (in_pprof) {
		struct fl_pprof_read_info info;
		struct fl_pprof_opts po = {.sz = sizeof(po)};

		err = fl_pprof__parse(buf, len, &ro, add_line, &c, &info);
		if (err == -EINVAL && ro.sample_type && info.type[0]) {
			msg("%s: no sample type \"%s\" (it has: %s): choose one with --sample-type",
			    name, ro.sample_type, info.type);
			goto out;
		}
		if (err == -EINVAL) {
			msg("%s: not a pprof profile that can be read (corrupt or cut short)", name);
			goto out;
		}
		if (err == -EFBIG) {
			msg("%s: larger than %u MiB once decompressed", name,
			    FL_PPROF_MAX_BYTES >> 20);
			goto out;
		}
		if (err)
			goto nomem;
		if (info.bad_refs)
			msg("%s: %llu references to locations, functions or strings the profile "
			    "lacks (named [unknown])",
			    name, (unsigned long long)info.bad_refs);
		if (fmt == OUTPUT_FORMAT_PPROF) {
			/* pprof to pprof: the stacks as names, at the input's period and time. */
			po.period_ns = !strcmp(info.unit, "nanoseconds") && info.period > 0
					       ? info.period
					       : 0;
			err = fl_pprof__new(&po, &pp);
			if (!err)
				fl_pprof__set_time(pp, info.time_nanos, info.duration_nanos);
		}
	} else {
		struct fl_folded_stats st;

		err = fl_folded__parse(buf, len, add_line, &c, &st);
		if (err)
			goto nomem;
		if (st.nr_bad)
			msg("%s: skipped %zu malformed line%s of %zu (first: line %zu, %s)", name,
			    st.nr_bad, st.nr_bad == 1 ? "" : "s", st.lines, st.first_bad_line[0],
			    fl_folded__bad_name(st.first_bad_kind[0]));
		if (!st.good) {
			msg("%s: no folded stacks in it (%zu lines): expected \"frame;frame;... "
			    "COUNT\" lines, or a pprof profile",
			    name, st.lines);
			goto out;
		}
		if (fmt == OUTPUT_FORMAT_PPROF) {
			struct fl_pprof_opts po = {.sz = sizeof(po),
						   .period_ns = freq ? (int64_t)(1000000000ull / freq)
								     : 0};

			err = fl_pprof__new(&po, &pp);
		}
	}
	if (err)
		goto nomem;
	if (c.fractional)
		msg("%s: %llu fractional counts rounded to whole samples (%llu to none, left out)",
		    name, (unsigned long long)c.fractional, (unsigned long long)c.too_small);
	if (pp) {
		err = fl_pprof__add_profile(pp, c.p);
		if (err)
			goto nomem;
	}
	if (output_open(&out, output, 0))
		goto out;
	output_remove_on_signal(&out);
	err = pp ? fl_pprof__write(pp, out.f) : fl_folded__write(c.p, out.f);
	if (!err)
		err = output_commit(&out);
	if (err) {
		msg("cannot write %s: %s", output ? output : "standard output", strerror(-err));
		goto out;
	}
	ret = 0;
	goto out;
nomem:
	msg("%s: %s", name, strerror(-err));
out:
	output_remove_on_signal(NULL);
	output_abort(&out);
	fl_pprof__free(pp);
	fl_profile__free(c.p);
	free(c.ids);
	free(buf);
	return ret;
}
