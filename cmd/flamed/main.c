// SPDX-License-Identifier: GPL-2.0-or-later
/* flamed: argument dispatch to the subcommands. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "flamed.h"
#include "flamed/common/log.h"

bool verbose;

void msg(const char *fmt, ...)
{
	va_list ap;

	flockfile(stderr);
	fputs("flamed: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	funlockfile(stderr);
}

void debug_print(const char *fmt, va_list ap)
{
	/* One line whole: the unwind tables' thread prints too. */
	flockfile(stderr);
	fputs("flamed: debug: ", stderr);
	vfprintf(stderr, fmt, ap);
	funlockfile(stderr);
}

static void usage(FILE *f)
{
	fputs("usage: flamed <command> [options]\n"
	      "\n"
	      "commands:\n"
	      "  record   sample CPU stacks (-a, -p PID, or -- CMD): folded stacks or an SVG\n"
	      "  collapse perf script output to folded stacks (as stackcollapse-perf.pl)\n"
	      "  daemon   sample without end, a snapshot every interval (the systemd service)\n"
	      "  svg      folded stacks (from any tool) to an interactive flame graph SVG\n"
	      "  diff     a differential flame graph of two folded files\n"
	      "  convert  folded stacks to pprof, and pprof to folded stacks\n"
	      "\n"
	      "'flamed COMMAND --help' lists the options of a command.\n",
	      f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "daemon"))
		return cmd_daemon(argc - 1, argv + 1);
	/* The rest read and write files for the user: as the user. */
	drop_privileges();
	if (!strcmp(argv[1], "collapse"))
		return cmd_collapse(argc - 1, argv + 1);
	if (!strcmp(argv[1], "svg"))
		return cmd_svg(argc - 1, argv + 1);
	if (!strcmp(argv[1], "diff"))
		return cmd_diff(argc - 1, argv + 1);
	if (!strcmp(argv[1], "convert"))
		return cmd_convert(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		puts("flamed " FLAMED_VERSION);
		return 0;
	}
	msg("unknown command '%s'", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
