// SPDX-License-Identifier: GPL-2.0-or-later
/* flamed record: options, the recording's event loop, and the output at the end. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flamed.h"
#include "flamed/common/cleanup.h"
#include "flamed/daemon/config.h"
#include "flamed/profile/fold.h"
#include "flamed/formats/folded.h"
#include "flamed/formats/pprof.h"
#include "flamed/common/log.h"
#include "flamed/profile/profile.h"
#include "flamed/profile_abi.h"
#include "flamed/unwind_abi.h"
#include "flamed/sampling/sampler.h"
#include "flamed/symbols/perfmap.h"
#include "flamed/symbols/symbolizer.h"
#include "flamed/sampling/tracker.h"
#include "flamed/unwinding/unwind.h"
#include "flamed/symbols/debuginfod.h"
#include "session.h"

#define DEFAULT_FREQ 99
/* A set-up this long (seconds) is said in the summary: the recording started that late. */
#define SLOW_SETUP_S 1.0
#define DEFAULT_DWARF_STACK 16384

enum format { FORMAT_AUTO, FORMAT_FOLDED, FORMAT_SVG, FORMAT_PPROF };

/* Parsed arguments: the only configuration there is, and it lives here in cmd/. */
struct record_args {
	bool all;
	int *pids;
	size_t nr_pids;
	char **cmd; /* NULL-terminated, or NULL */
	uint64_t freq;
	double duration;    /* seconds; 0 = until stopped */
	const char *output; /* NULL or "-" = stdout */
	enum format format;
	bool per_process, per_thread, idle;
	bool per_cgroup;			    /* --per-cgroup */
	const char *cgroups[FL_CGROUP_MAX_TARGETS]; /* --cgroup PATH, each */
	size_t nr_cgroups;
	bool kernel, user;
	bool no_bpf;
	bool no_inline, srcline, no_demangle;
	bool no_python;
	uint32_t stack_storage_size, max_stacks;
	uint32_t max_processes;
	uint64_t max_symbol_cache;
	bool dwarf;	     /* --call-graph dwarf */
	uint32_t stack_size; /* its user-stack copy in bytes */
	bool kdwarf;	     /* --call-graph kernel-dwarf (the default) */
	uint64_t max_unwind_tables;
	/* --debuginfod[=URLS], --no-debuginfod (default: on when DEBUGINFOD_URLS is set) */
	int debuginfod; /* -1 unset, 0 off, 1 on */
	const char *debuginfod_urls;
	unsigned debuginfod_files; /* --debuginfod-budget FILES,SIZE,SECONDS */
	uint64_t debuginfod_bytes;
	double debuginfod_seconds;
	struct svg_args svg; /* -o FILE.svg / --format svg */
};

static const char record_usage[] =
	"usage: flamed record [-a | -p PID[,PID...] | [--] CMD [ARGS...]] [options]\n"
	"\n"
	"Samples CPU stacks and writes them as folded stacks or a flame graph SVG when\n"
	"the recording ends\n"
	"(after -d SECONDS, when the targets exit, or on Ctrl-C / SIGTERM).\n"
	"\n"
	"targets:\n"
	"  -a, --all-cpus           every process on every CPU\n"
	"  -p, --pid PID[,PID...]   these processes, all their threads\n"
	"  -- CMD [ARGS...]         run CMD and profile it and its children\n"
	"options:\n"
	"  -F, --freq HZ            samples per second per CPU (default 99)\n"
	"  -d, --duration SECONDS   stop after this long\n"
	"  -o, --output FILE        output file; '-' or absent: stdout\n"
	"      --format FMT         folded, svg, html or pprof (default: from the extension of\n"
	"                           -o: .svg is svg; .html every frame in a page that zooms;\n"
	"                           .pb.gz and .pprof pprof; .folded, .txt, .collapsed or\n"
	"                           none folded)\n"
	"  -g                       accepted for perf compatibility: stacks are always recorded\n"
	"      --call-graph MODE    kernel-dwarf (the default): the BPF program walks user\n"
	"                           stacks with unwind tables built from the binaries' CFI\n"
	"                           (frame pointers where there is none), counted in BPF;\n"
	"                           fp: frame-pointer stacks only, counted in BPF;\n"
	"                           dwarf[,SIZE]: copy SIZE bytes of each user stack (default\n"
	"                           16384, at most 65528) and unwind it with the binaries' CFI\n"
	"                           in user space\n"
	"      --max-unwind-tables SIZE  memory for kernel-dwarf's unwind tables (default\n"
	"                           256M; files past it are walked with frame pointers)\n"
	"      --per-process        root frame COMM-PID\n"
	"      --per-thread         root frame COMM-PID/TID\n"
	"      --per-cgroup         a root frame for the service (cgroup v2) before the\n"
	"                           COMM frame: a systemd unit by its name (nginx.service,\n"
	"                           session-2.scope), a container as docker-ID, podman-ID\n"
	"                           or containerd-ID (12 hex digits), the root cgroup as /,\n"
	"                           other cgroups by their path under /sys/fs/cgroup\n"
	"      --cgroup PATH        only tasks in this cgroup v2 and its descendants\n"
	"                           (PATH under /sys/fs/cgroup, e.g. system.slice/nginx.service,\n"
	"                           or absolute); repeat for up to 8 cgroups; with -a, or\n"
	"                           with -p / -- CMD to keep only their tasks in it\n"
	"      --idle               keep idle-task samples (dropped by default)\n"
	"      --kernel-only        kernel stacks only\n"
	"      --user-only          user stacks only\n"
	"      --no-bpf             count stacks in user space from the perf ring buffer\n"
	"                           (with -p or --, a BPF program still drops other\n"
	"                           processes' samples in the kernel where it can)\n"
	"      --no-inline          no frames for inlined functions (shown, _[i], when the\n"
	"                           binaries have DWARF, their own or in separate debug files)\n"
	"      --srcline            add \" (file:line)\" to user frames (needs DWARF)\n"
	"      --no-python          show Python processes' native frames only (by default\n"
	"                           the functions CPython 3.11-3.13 runs replace its\n"
	"                           interpreter loop's frames: \"func (file.py:line)_[p]\")\n"
	"      --no-demangle        keep C++ and Rust names as the binaries have them\n"
	"      --debuginfod[=URLS]  fetch the debug info of files that have none here by\n"
	"                           build-id from these servers (default: DEBUGINFOD_URLS,\n"
	"                           on when it is set), in the background; the output waits\n"
	"                           for the fetches at most the budget's seconds\n"
	"      --no-debuginfod      not even when DEBUGINFOD_URLS is set\n"
	"      --debuginfod-budget FILES,SIZE,SECONDS  the most fetched per run (default\n"
	"                           64,1G,30; SIZE with K, M, G)\n"
	"      --stack-storage-size N  BPF stack-map entries, emptied every second (default:\n"
	"                           8 per sample a second, 4096 to 65536)\n"
	"      --max-stacks N       BPF counts-map entries, emptied every second (default:\n"
	"                           4 per sample a second, 4096 to 65536)\n"
	"      --max-processes N    processes tracked at once (default 32768); frames of\n"
	"                           others stay unnamed, and the summary says how many\n"
	"      --max-symbol-cache SIZE  memory for the files read for symbols and the JIT\n"
	"                           perf maps (default 1G; K, M, G); frames of files met\n"
	"                           past it are named by file, JIT code past it is [anon]\n"
	"  -v, --verbose            debug messages\n"
	"  -h, --help               this text\n";

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("flamed: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n\n", stderr);
	fputs(record_usage, stderr);
}

static int parse_u64(const char *s, uint64_t *val)
{
	char *end;
	unsigned long long v;

	if (!s[0] || s[0] == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*val = v;
	return 0;
}

static int parse_u32(const char *s, uint32_t *val)
{
	uint64_t v;

	if (parse_u64(s, &v) || v > UINT32_MAX)
		return -EINVAL;
	*val = (uint32_t)v;
	return 0;
}

static int parse_pids(const char *s, struct record_args *a)
{
	_cleanup_free_ char *copy = strdup(s);
	char *save = NULL, *tok;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		int *pids;

		if (parse_u64(tok, &v) || v == 0 || v > INT_MAX)
			return -EINVAL;
		pids = realloc(a->pids, (a->nr_pids + 1) * sizeof(*pids));
		if (!pids)
			return -ENOMEM;
		a->pids = pids;
		a->pids[a->nr_pids++] = (int)v;
	}
	return a->nr_pids ? 0 : -EINVAL;
}

enum {
	OPT_FORMAT = 256,
	OPT_CALL_GRAPH,
	OPT_PER_PROCESS,
	OPT_PER_THREAD,
	OPT_IDLE,
	OPT_KERNEL_ONLY,
	OPT_USER_ONLY,
	OPT_NO_BPF,
	OPT_NO_INLINE,
	OPT_NO_PYTHON,
	OPT_SRCLINE,
	OPT_NO_DEMANGLE,
	OPT_STACK_STORAGE,
	OPT_MAX_STACKS,
	OPT_MAX_PROCESSES,
	OPT_MAX_SYMBOL_CACHE,
	OPT_MAX_UNWIND_TABLES,
	OPT_PER_CGROUP,
	OPT_CGROUP,
	OPT_DEBUGINFOD,
	OPT_NO_DEBUGINFOD,
	OPT_DEBUGINFOD_BUDGET,
};

/* "FILES,SIZE,SECONDS" of --debuginfod-budget: each positive; SIZE with K, M or G. */
static int parse_debuginfod_budget(const char *s, struct record_args *a)
{
	unsigned long long files;
	uint64_t size;
	char sz[32], why[128];
	const char *comma;
	double secs;
	char *end;

	errno = 0;
	files = strtoull(s, &end, 10);
	if (errno || end == s || *end != ',' || !files || files > 1000000)
		return -EINVAL;
	s = end + 1;
	/* The size as the configuration's keys take it. */
	comma = strchr(s, ',');
	if (!comma || (size_t)(comma - s) >= sizeof(sz))
		return -EINVAL;
	memcpy(sz, s, (size_t)(comma - s));
	sz[comma - s] = '\0';
	if (fl_config__parse_size(sz, &size, why, sizeof(why)) || !size || size >= (1ull << 44))
		return -EINVAL;
	s = comma + 1;
	secs = strtod(s, &end);
	if (errno || end == s || *end || !(secs > 0 && secs <= 86400))
		return -EINVAL;
	a->debuginfod_files = (unsigned)files;
	a->debuginfod_bytes = size;
	a->debuginfod_seconds = secs;
	return 0;
}

/* "fp", "dwarf" or "dwarf,SIZE", as perf record spells it, or "kernel-dwarf". */
static int parse_call_graph(const char *s, struct record_args *a)
{
	uint32_t size;

	a->dwarf = false;
	a->kdwarf = !strcmp(s, "kernel-dwarf");
	if (a->kdwarf || !strcmp(s, "fp"))
		return 0;
	if (strncmp(s, "dwarf", 5) || (s[5] && s[5] != ','))
		return -EINVAL;
	a->dwarf = true;
	a->stack_size = DEFAULT_DWARF_STACK;
	if (!s[5])
		return 0;
	if (parse_u32(s + 6, &size) || size < 8 || size > 65528)
		return -EINVAL;
	a->stack_size = (size + 7) & ~7u; /* the kernel wants a multiple of 8 */
	return 0;
}

/* Returns 0 to go on, or an exit code (EXIT_USAGE, or 0 after --help) + 1000. */
static int parse_args(int argc, char **argv, struct record_args *a)
{
	static const struct option longopts[] = {
		{"all-cpus", no_argument, NULL, 'a'},
		{"pid", required_argument, NULL, 'p'},
		{"freq", required_argument, NULL, 'F'},
		{"duration", required_argument, NULL, 'd'},
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"call-graph", required_argument, NULL, OPT_CALL_GRAPH},
		{"per-process", no_argument, NULL, OPT_PER_PROCESS},
		{"per-thread", no_argument, NULL, OPT_PER_THREAD},
		{"per-cgroup", no_argument, NULL, OPT_PER_CGROUP},
		{"cgroup", required_argument, NULL, OPT_CGROUP},
		{"idle", no_argument, NULL, OPT_IDLE},
		{"kernel-only", no_argument, NULL, OPT_KERNEL_ONLY},
		{"user-only", no_argument, NULL, OPT_USER_ONLY},
		{"no-bpf", no_argument, NULL, OPT_NO_BPF},
		{"no-inline", no_argument, NULL, OPT_NO_INLINE},
		{"no-python", no_argument, NULL, OPT_NO_PYTHON},
		{"srcline", no_argument, NULL, OPT_SRCLINE},
		{"no-demangle", no_argument, NULL, OPT_NO_DEMANGLE},
		{"stack-storage-size", required_argument, NULL, OPT_STACK_STORAGE},
		{"max-stacks", required_argument, NULL, OPT_MAX_STACKS},
		{"max-processes", required_argument, NULL, OPT_MAX_PROCESSES},
		{"max-symbol-cache", required_argument, NULL, OPT_MAX_SYMBOL_CACHE},
		{"max-unwind-tables", required_argument, NULL, OPT_MAX_UNWIND_TABLES},
		{"debuginfod", optional_argument, NULL, OPT_DEBUGINFOD},
		{"no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD},
		{"debuginfod-budget", required_argument, NULL, OPT_DEBUGINFOD_BUDGET},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		SVG_LONG_OPTIONS,
		{},
	};
	bool kernel_only = false, user_only = false, freq_set = false;
	int c;

	a->freq = DEFAULT_FREQ;
	a->debuginfod = -1;
	a->kdwarf = true;
	svg_args_init(&a->svg);
	opterr = 0;
	/* '+': the first non-option starts the command, as with perf record. */
	while ((c = getopt_long(argc, argv, "+ap:F:d:o:gvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			a->all = true;
			break;
		case 'p':
			if (parse_pids(optarg, a)) {
				usage_error("invalid process list '%s': give PID or PID,PID,...",
					    optarg);
				return 1000 + EXIT_USAGE;
			}
			break;
		case 'F':
			if (parse_u64(optarg, &a->freq)) {
				usage_error("invalid frequency '%s': give samples per second, e.g. "
					    "-F 99",
					    optarg);
				return 1000 + EXIT_USAGE;
			}
			freq_set = true;
			break;
		case 'd': {
			char *end;

			errno = 0;
			a->duration = strtod(optarg, &end);
			if (errno || *end || !(a->duration > 0) || a->duration > 1e9 ||
			    isnan(a->duration)) {
				usage_error("invalid duration '%s': give seconds, e.g. -d 10",
					    optarg);
				return 1000 + EXIT_USAGE;
			}
			break;
		}
		case 'o':
			a->output = optarg;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "folded")) {
				a->format = FORMAT_FOLDED;
			} else if (!strcmp(optarg, "svg") || !strcmp(optarg, "html")) {
				a->format = FORMAT_SVG; /* the same graph, drawn by another writer */
				a->svg.html = !strcmp(optarg, "html");
			} else if (!strcmp(optarg, "pprof")) {
				a->format = FORMAT_PPROF;
			} else {
				usage_error("unknown format '%s': use folded, svg, html or pprof", optarg);
				return 1000 + EXIT_USAGE;
			}
			break;
		case 'g':
			break;
		case OPT_CALL_GRAPH:
			if (parse_call_graph(optarg, a)) {
				usage_error(
					"invalid --call-graph '%s': use kernel-dwarf, fp, dwarf "
					"or dwarf,SIZE (8 to 65528 bytes)",
					optarg);
				return 1000 + EXIT_USAGE;
			}
			break;
		case OPT_PER_PROCESS:
			a->per_process = true;
			break;
		case OPT_PER_THREAD:
			a->per_thread = true;
			break;
		case OPT_PER_CGROUP:
			a->per_cgroup = true;
			break;
		case OPT_CGROUP:
			if (a->nr_cgroups == FL_CGROUP_MAX_TARGETS) {
				msg("too many --cgroup: at most %d", FL_CGROUP_MAX_TARGETS);
				return 1000 + EXIT_USAGE;
			}
			a->cgroups[a->nr_cgroups++] = optarg;
			break;
		case OPT_IDLE:
			a->idle = true;
			break;
		case OPT_KERNEL_ONLY:
			kernel_only = true;
			break;
		case OPT_USER_ONLY:
			user_only = true;
			break;
		case OPT_NO_BPF:
			a->no_bpf = true;
			break;
		case OPT_NO_PYTHON:
			a->no_python = true;
			break;
		case OPT_NO_INLINE:
			a->no_inline = true;
			break;
		case OPT_SRCLINE:
			a->srcline = true;
			break;
		case OPT_NO_DEMANGLE:
			a->no_demangle = true;
			break;
		case OPT_STACK_STORAGE:
			if (parse_u32(optarg, &a->stack_storage_size) || !a->stack_storage_size ||
			    a->stack_storage_size > (1u << 24)) {
				usage_error("invalid --stack-storage-size '%s': give 1 to 16777216",
					    optarg);
				return 1000 + EXIT_USAGE;
			}
			break;
		case OPT_MAX_STACKS:
			if (parse_u32(optarg, &a->max_stacks) || !a->max_stacks ||
			    a->max_stacks > (1u << 24)) {
				usage_error("invalid --max-stacks '%s': give 1 to 16777216",
					    optarg);
				return 1000 + EXIT_USAGE;
			}
			break;
		case OPT_MAX_PROCESSES:
			if (parse_u32(optarg, &a->max_processes) || !a->max_processes ||
			    a->max_processes > 4194304) {
				usage_error("invalid --max-processes '%s': give 1 to 4194304",
					    optarg);
				return 1000 + EXIT_USAGE;
			}
			break;
		case OPT_MAX_SYMBOL_CACHE: {
			/* The daemon's key, and its parser: one meaning for both. */
			struct fl_config cfg;
			char why[256];

			fl_config__init(&cfg);
			if (fl_config__set(&cfg, "max_symbol_cache", optarg, why, sizeof(why))) {
				usage_error("invalid --max-symbol-cache: %s", why);
				return 1000 + EXIT_USAGE;
			}
			a->max_symbol_cache = cfg.max_symbol_cache;
			fl_config__fini(&cfg);
			break;
		}
		case OPT_DEBUGINFOD:
			a->debuginfod = 1;
			a->debuginfod_urls = optarg;
			if (optarg && !optarg[strspn(optarg, " \t")]) {
				usage_error("empty --debuginfod=: give server URLs, e.g. "
					    "--debuginfod=https://debuginfod.debian.net");
				return 1000 + EXIT_USAGE;
			}
			break;
		case OPT_NO_DEBUGINFOD:
			a->debuginfod = 0;
			a->debuginfod_urls = NULL;
			break;
		case OPT_DEBUGINFOD_BUDGET:
			if (parse_debuginfod_budget(optarg, a)) {
				usage_error("invalid --debuginfod-budget '%s': give FILES,SIZE,SECONDS, "
					    "e.g. 64,1G,30",
					    optarg);
				return 1000 + EXIT_USAGE;
			}
			break;
		case OPT_MAX_UNWIND_TABLES: {
			struct fl_config cfg;
			char why[256];

			fl_config__init(&cfg);
			if (fl_config__set(&cfg, "max_unwind_tables", optarg, why, sizeof(why))) {
				usage_error("invalid --max-unwind-tables: %s", why);
				return 1000 + EXIT_USAGE;
			}
			a->max_unwind_tables = cfg.max_unwind_tables;
			fl_config__fini(&cfg);
			break;
		}
		case 'v':
			verbose = true;
			break;
		case 'h':
			fputs(record_usage, stdout);
			fputs(svg_options_help, stdout);
			return 1000;
		case ':':
			usage_error("option '%s' needs a value", argv[optind - 1]);
			return 1000 + EXIT_USAGE;
		case '?':
			usage_error("unknown option '%s'", argv[optind - 1]);
			return 1000 + EXIT_USAGE;
		default:
			if (svg_args_parse(&a->svg, c, optarg))
				return 1000 + EXIT_USAGE;
			break;
		}
	}
	(void)freq_set;
	if (optind < argc)
		a->cmd = &argv[optind];

	if (a->debuginfod == 1 && !a->debuginfod_urls) {
		const char *env = getenv("DEBUGINFOD_URLS");

		if (!env || !env[strspn(env, " \t")]) {
			usage_error("--debuginfod: DEBUGINFOD_URLS is not set; give the servers, e.g. "
				    "--debuginfod=https://debuginfod.debian.net");
			return 1000 + EXIT_USAGE;
		}
	}
	if (kernel_only && user_only) {
		usage_error("--kernel-only and --user-only exclude each other");
		return 1000 + EXIT_USAGE;
	}
	a->kernel = !user_only;
	a->user = !kernel_only;
	if (a->per_process && a->per_thread) {
		usage_error("--per-process and --per-thread exclude each other");
		return 1000 + EXIT_USAGE;
	}
	if ((a->all ? 1 : 0) + (a->nr_pids ? 1 : 0) + (a->cmd ? 1 : 0) != 1) {
		usage_error(a->all || a->nr_pids || a->cmd
				    ? "give one target: -a, -p PID, or -- CMD"
				    : "nothing to record: give -a, -p PID, or -- CMD");
		return 1000 + EXIT_USAGE;
	}
	/* A cgroup that is not there is a mistake in the command line: said before anything starts. */
	if (a->nr_cgroups) {
		struct fl_cgroup_target t[FL_CGROUP_MAX_TARGETS];

		if (session_resolve_cgroups(a->cgroups, a->nr_cgroups, t))
			return 1000 + EXIT_USAGE;
	}
	if (a->svg.flamechart) {
		usage_error("--flamechart needs stacks in time order; record counts them: draw a "
			    "graph");
		return 1000 + EXIT_USAGE;
	}
	if (a->format == FORMAT_AUTO) {
		switch (output_format_of(a->output)) {
		case OUTPUT_FORMAT_SVG:
			a->format = FORMAT_SVG;
			break;
		case OUTPUT_FORMAT_HTML:
			a->format = FORMAT_SVG;
			a->svg.html = true;
			break;
		case OUTPUT_FORMAT_PPROF:
			a->format = FORMAT_PPROF;
			break;
		case OUTPUT_FORMAT_UNKNOWN:
			/* -o x.json must not quietly get folded text. */
			msg("cannot tell what to write to %s: flamed writes folded stacks "
			    "(.folded, .txt, .collapsed, or no extension), SVG (.svg), HTML (.html) "
			    "and pprof (.pb.gz, .pprof) (rename it, or give --format folded, svg, "
			    "html or pprof)",
			    a->output);
			return 1000 + EXIT_USAGE;
		default:
			a->format = FORMAT_FOLDED;
		}
	}
	if (a->format == FORMAT_SVG && svg_args_check(&a->svg))
		return 1000 + EXIT_USAGE;
	return 0;
}

static int pidfd_open(int pid)
{
	long fd = syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : (int)fd;
}

/* The process a task belongs to (Tgid in /proc/PID/status), or -errno. */
static int tgid_of(int pid)
{
	char path[64], line[256];
	_cleanup_fclose_ FILE *f = NULL;
	int tgid = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	return tgid;
}

static int check_pids(const struct record_args *a)
{
	for (size_t i = 0; i < a->nr_pids; i++) {
		int tgid;

		if (kill(a->pids[i], 0) < 0 && errno == ESRCH) {
			msg("no such process: %d (check the PID with ps)", a->pids[i]);
			return -ESRCH;
		}
		tgid = tgid_of(a->pids[i]);
		if (tgid > 0 && tgid != a->pids[i]) {
			msg("%d is a thread of process %d: use -p %d (all its threads are "
			    "profiled)",
			    a->pids[i], tgid, tgid);
			return -EINVAL;
		}
	}
	return 0;
}

/* How long -- CMD waits for the tables of the C library and the loader, at most. */
#define CMD_TABLES_WAIT_MS 500

/* The -- CMD child: forked stopped at a pipe, released once sampling runs. */
struct child {
	pid_t pid;
	int go_fd;     /* write end: closing it lets the child exec */
	int err_fd;    /* read end: the child writes errno here if exec fails */
	bool released; /* told to exec: until then it has our signal mask */
	bool exited;
	int status;
};

static int child_spawn(struct child *c, char **cmd, const sigset_t *orig_mask,
		       void (*orig_pipe)(int), bool stdout_is_output)
{
	int go[2], errp[2];

	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(errp, O_CLOEXEC) < 0) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	c->pid = fork();
	if (c->pid < 0) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		close(errp[0]);
		close(errp[1]);
		return err;
	}
	if (c->pid == 0) {
		const char *base = strrchr(cmd[0], '/');
		char b;
		int e;

		close(go[1]);
		close(errp[0]);
		/*
		 * Already the command, as far as samples tell: the execve() itself
		 * (tearing down our copy of flamed's memory, long under a sanitizer)
		 * is sampled before the kernel renames the process.
		 */
		prctl(PR_SET_NAME, base && base[1] ? base + 1 : cmd[0], 0, 0, 0);
		/* Wait until the parent samples us (or dies). */
		while (read(go[0], &b, 1) < 0 && errno == EINTR)
			;
		/* The command's own output must not land in the profile on our stdout. */
		if (stdout_is_output && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(127);
		/* The command gets the signal state we were started with. */
		signal(SIGPIPE, orig_pipe);
		sigprocmask(SIG_SETMASK, orig_mask, NULL);
		/* ... and only its user's rights: no file capability finds or runs it. */
		drop_privileges();
		execvp(cmd[0], cmd);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0) {
			/* nothing left to tell */
		}
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	c->go_fd = go[1];
	c->err_fd = errp[0];
	return 0;
}

/* Lets the child exec; returns 0, or -errno when exec failed. */
static int child_release(struct child *c)
{
	int e = 0;
	ssize_t n;

	close(c->go_fd);
	c->go_fd = -1;
	c->released = true;
	do
		n = read(c->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(c->err_fd);
	c->err_fd = -1;
	if (n == (ssize_t)sizeof(e))
		return -e;
	return 0;
}

/* The recording stopped before the command did: ask it to stop, then insist. */
static void child_stop(struct child *c)
{
	if (c->pid <= 0 || c->exited)
		return;
	if (!c->released) {
		/* Still waiting to exec, with SIGTERM blocked: nothing to ask. */
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
		c->exited = true;
		return;
	}
	kill(c->pid, SIGTERM);
	for (int i = 0; i < 100; i++) {
		if (waitpid(c->pid, NULL, WNOHANG) == c->pid) {
			c->exited = true;
			return;
		}
		usleep(10000);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	c->exited = true;
}

/* CPU seconds (user + system) this process used so far. */
static double cpu_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* With -v, how long each phase took, and the CPU it cost: where the profiler's own time goes. */
static void phase_done(const char *what, double *since)
{
	static double cpu_since;
	double t = now_s(), c = cpu_s();

	if (verbose)
		fprintf(stderr, "flamed: debug: %s: %.1f ms, %.1f ms CPU\n", what,
			(t - *since) * 1e3, (c - cpu_since) * 1e3);
	*since = t;
	cpu_since = c;
}

struct recording {
	struct record_args *args;
	struct session ses;
	struct child child;
	int *pidfds;
	size_t pids_alive;
	int tick_fd;
	bool status_line;
	double begun;	/* when flamed record began (set-up, then sampling) */
	double started; /* when sampling started */
	const char *stop_reason;
};

static void status_update(struct recording *r)
{
	struct fl_sampler_stats st;

	if (!r->status_line || fl_sampler__stats(r->ses.sampler, &st))
		return;
	fprintf(stderr, "\rflamed: recording %.0f s, %llu samples\033[K", now_s() - r->started,
		(unsigned long long)(st.samples - st.idle - st.filtered - st.other_ns));
	fflush(stderr);
}

/* Runs until the duration passes, a signal stops us, or the targets are gone. */
static int event_loop(struct recording *r, int ep, int sfd)
{
	struct epoll_event evs[16];

	while (!r->stop_reason) {
		int n = epoll_wait(ep, evs, ARRAY_SIZE(evs), -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			enum tag tag = (enum tag)(evs[i].data.u64 >> 32);
			uint32_t idx = (uint32_t)evs[i].data.u64;
			struct signalfd_siginfo si;
			uint64_t ticks;

			switch (tag) {
			case TAG_SIGNAL:
				while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
					if (si.ssi_signo == SIGCHLD) {
						int status;

						if (r->child.pid > 0 && !r->child.exited &&
						    waitpid(r->child.pid, &status, WNOHANG) ==
							    r->child.pid) {
							r->child.exited = true;
							r->child.status = status;
							r->stop_reason = "the command exited";
						}
					} else {
						r->stop_reason = "interrupted";
					}
				}
				break;
			case TAG_DURATION:
				r->stop_reason = "duration reached";
				break;
			case TAG_TICK:
				if (read(r->tick_fd, &ticks, sizeof(ticks)) < 0) {
					/* EAGAIN: another wakeup consumed it */
				}
				status_update(r);
				session_tick(&r->ses);
				if (r->ses.err)
					r->stop_reason = "out of memory";
				break;
			case TAG_SAMPLER:
			case TAG_TRACKER:
				session_event(&r->ses, tag);
				break;
			case TAG_PIDFD:
				epoll_ctl(ep, EPOLL_CTL_DEL, r->pidfds[idx], NULL);
				if (--r->pids_alive == 0)
					r->stop_reason = "the processes exited";
				break;
			case TAG_SNAPSHOT:
			case TAG_WATCHDOG:
				break;
			}
		}
	}
	return 0;
}

/*
 * Where every sample taken went: into the profile, dropped on purpose, or
 * lost, each cause counted apart. Anything else would be a bug: said so.
 */
static void print_accounting(const struct session *ses, const struct fl_profile *p,
			     const struct fl_sampler_stats *ss)
{
	uint64_t taken = ss->samples + ss->lost_records;
	uint64_t lost = ss->lost + ss->lost_records;
	uint64_t in_profile = fl_profile__total(p);
	uint64_t known = in_profile + ss->idle + ss->filtered + ss->other_ns + lost;
	char outside[96] = "";

	/* A term of its own only where there can be such samples: in a container. */
	if (!ses->pidns.initial || ss->other_ns)
		snprintf(outside, sizeof(outside), " %llu outside flamed's pid namespace,",
			 (unsigned long long)ss->other_ns);
	msg("accounting: %llu samples taken: %llu in the profile, %llu idle, %llu of other "
	    "processes,%s %llu lost (%llu with the BPF overflow ring full, %llu with a perf ring "
	    "full)",
	    (unsigned long long)taken, (unsigned long long)in_profile, (unsigned long long)ss->idle,
	    (unsigned long long)ss->filtered, outside, (unsigned long long)lost,
	    (unsigned long long)ss->lost, (unsigned long long)ss->lost_records);
	if (known != taken)
		msg("accounting: %lld samples unaccounted for (a bug: please report it)",
		    (long long)(taken - known));
}

/*
 * flamed's own cost: CPU (set-up and post-processing included) and peak
 * memory, the CPU as a share of what the machine had over flamed's whole
 * run, which is what it was spent in.
 */
static void print_own_cost(double elapsed)
{
	struct rusage ru;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	double cpu;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return;
	cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	if (cpus < 1)
		cpus = 1;
	msg("own cost: %.2f s of CPU (%.2f%% of %ld CPUs over %.1f s), %.1f MiB peak RSS", cpu,
	    elapsed > 0 ? 100.0 * cpu / (elapsed * (double)cpus) : 0.0, cpus, elapsed,
	    (double)ru.ru_maxrss / 1024.0);
}

/* Files whose CFI was left unread at --max-symbol-cache (--call-graph dwarf). */
static void report_cfi_budget(const struct recording *r)
{
	struct fl_unwind_stats us;

	fl_unwinder__stats(r->ses.unwinder, &us);
	if (us.files_over_budget)
		msg("call frame information of %llu files not read: --max-symbol-cache (%llu MiB) "
		    "had no room for the %.1f MiB their headers claim (raise it); stacks through "
		    "their code failed to unwind",
		    (unsigned long long)us.files_over_budget,
		    (unsigned long long)(r->ses.budget.max >> 20),
		    (double)us.bytes_over_budget / 1048576.0);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* kernel-dwarf: how the user stacks were walked, and what the tables cost. */
static void report_kdwarf(const struct recording *r, const struct fl_sampler_stats *ss)
{
	uint64_t n = ss->uw_walked;

	uint64_t uc = ss->unwind_complete + ss->unwind_truncated + ss->unwind_failed;

	msg("user stacks (kernel-dwarf): %llu walked, %.1f%% by unwind tables alone, "
	    "%.1f%% met a file whose table was not loaded yet (%.1f%% sent as stack copies and "
	    "unwound in user space, %.1f%% with frame pointers there), %.1f%% with frame "
	    "pointers for code without CFI; %.1f%% reached the outermost frame, %llu stopped "
	    "early ([unwind failed]), %llu cut at %d frames",
	    (unsigned long long)n, pct(ss->uw_tables, n), pct(ss->uw_fp_notable, n),
	    pct(ss->uw_copied, n), pct(ss->uw_fp_notable - ss->uw_copied, n),
	    pct(ss->uw_fp_nocfi, n), pct(ss->uw_complete, n), (unsigned long long)ss->uw_stopped,
	    (unsigned long long)ss->uw_truncated, FL_MAX_STACK_DEPTH);
	if (uc)
		msg("stack copies unwound in user space: %llu, %.1f%% complete, %.1f%% cut where "
		    "the %u-byte copy ended, %.1f%% failed; %.1f%% of their steps by the unwind "
		    "tables",
		    (unsigned long long)uc, pct(ss->unwind_complete, uc),
		    pct(ss->unwind_truncated, uc), FL_UCOPY_BYTES, pct(ss->unwind_failed, uc),
		    pct(ss->unwind_row_steps, ss->unwind_frames));
	msg("unwind tables: %llu files, %llu loaded (%.1f MiB for %.1f MiB of code, %.1f MiB "
	    "at most), %llu without usable CFI, %llu over --max-unwind-tables%s; built in %.0f "
	    "ms of CPU%s",
	    (unsigned long long)ss->tables_files, (unsigned long long)ss->tables_loaded,
	    (double)ss->tables_bytes / 1048576.0, (double)ss->tables_code_bytes / 1048576.0,
	    (double)ss->tables_peak_bytes / 1048576.0, (unsigned long long)ss->tables_no_cfi,
	    (unsigned long long)ss->tables_over_budget, ss->tables_over_budget ? " (raise it)" : "",
	    (double)ss->tables_build_ns / 1e6,
	    ss->tables_pending ? ", some still being built at the end" : "");
	if (verbose && ss->tables_first_ns)
		msg("unwind tables: the first loaded %.3f s after flamed started, the last %.3f s "
		    "after; %llu rows, %llu processes' mappings in the kernel at the end%s",
		    (double)ss->tables_first_ns / 1e9 - r->begun,
		    (double)ss->tables_last_ns / 1e9 - r->begun,
		    (unsigned long long)ss->tables_rows, (unsigned long long)ss->tables_procs,
		    ss->tables_maps_dropped ? " (some with more mappings than are kept)" : "");
	if (verbose && ss->tables_windowed)
		msg("unwind tables: %llu big files loaded by windows of %llu KiB where samples "
		    "reached: %llu windows (in the figures above), %.1f MiB held to build more; "
		    "%llu built at once for stack copies that had waited for them",
		    (unsigned long long)ss->tables_windowed,
		    (unsigned long long)(FL_UW_WIN_BYTES >> 10),
		    (unsigned long long)ss->tables_windows,
		    (double)ss->tables_src_bytes / 1048576.0,
		    (unsigned long long)ss->tables_windows_now);
}

static void print_summary(const struct recording *r, const struct fl_profile *p,
			  const struct fl_sampler_stats *ss, const struct fl_fold_stats *fs,
			  const struct fl_tracker_stats *ts, double elapsed)
{
	const struct record_args *a = r->args;

	msg("%llu samples, %zu stacks in %.1f s (%s, %s backend, call graph %s)%s%s",
	    (unsigned long long)fl_profile__total(p), fl_profile__nr_stacks(p), elapsed,
	    r->stop_reason,
	    fl_sampler__backend(r->ses.sampler) == FL_SAMPLER_BPF ? "bpf" : "ring buffer",
	    call_graph_name(&r->ses), a->output && strcmp(a->output, "-") ? ", written to " : "",
	    a->output && strcmp(a->output, "-") ? a->output : "");
	if (ss->idle)
		msg("%llu idle samples dropped (--idle keeps them)", (unsigned long long)ss->idle);
	if (ss->lost)
		msg("%llu samples lost: the overflow ring buffer was full (raise "
		    "--stack-storage-size or --max-stacks)",
		    (unsigned long long)ss->lost);
	if (ss->recovered)
		msg("%llu samples counted in user space (%llu stack-id collisions, %llu full-map "
		    "events)%s",
		    (unsigned long long)ss->recovered, (unsigned long long)ss->collisions,
		    (unsigned long long)ss->map_full, ss->lost ? "" : ": none lost");
	if (ss->lost_records)
		msg("%llu records lost: the perf ring buffers were full (lower -F)",
		    (unsigned long long)ss->lost_records);
	if (ss->other_ns)
		session_report_other_ns(ss->other_ns);
	print_accounting(&r->ses, p, ss);
	if (verbose && fl_sampler__backend(r->ses.sampler) == FL_SAMPLER_RING && ss->filtered)
		msg("samples of other processes: %llu dropped in the kernel, %llu read from "
		    "the perf ring buffer and dropped by flamed",
		    (unsigned long long)ss->filtered_kernel,
		    (unsigned long long)(ss->filtered - ss->filtered_kernel));
	session_report_throttling(&r->ses, ss);
	session_report_hotplug(ss);
	if (ts->lost)
		msg("process tracker: %llu mapping records lost (its perf rings were full); the "
		    "processes were read again from /proc %llu times, but code mapped and gone in "
		    "between may stay unsymbolized",
		    (unsigned long long)ts->lost, (unsigned long long)ts->rescans);
	if (ts->over_max)
		msg("process tracker: %llu processes not tracked, --max-processes (%llu) being "
		    "reached: their frames stay unnamed",
		    (unsigned long long)ts->over_max, (unsigned long long)r->ses.o.max_processes);
	if (ss->truncated)
		msg("%llu samples with a stack cut at the depth limit "
		    "(kernel.perf_event_max_stack, at most %d)",
		    (unsigned long long)ss->truncated, FL_MAX_STACK_DEPTH);
	if (a->dwarf) {
		uint64_t n = ss->unwind_complete + ss->unwind_truncated + ss->unwind_failed;
		struct fl_unwind_stats us;
		char fp[160] = "";

		fl_unwinder__stats(r->ses.unwinder, &us);
		if (us.fp_steps)
			snprintf(fp, sizeof(fp),
				 "; %llu frames stepped by frame pointers, in code without CFI "
				 "(JIT, gaps in a file's CFI)",
				 (unsigned long long)us.fp_steps);

		msg("DWARF unwinding of %llu user stacks: %.1f%% complete, %.1f%% cut where the "
		    "%u-byte stack copy ended%s, %.1f%% failed (unmapped or unreadable code, a "
		    "rule or frame pointer that leads nowhere)%s",
		    (unsigned long long)n,
		    n ? 100.0 * (double)ss->unwind_complete / (double)n : 0.0,
		    n ? 100.0 * (double)ss->unwind_truncated / (double)n : 0.0, a->stack_size,
		    ss->unwind_truncated ? " (a bigger --call-graph dwarf,SIZE copies more)" : "",
		    n ? 100.0 * (double)ss->unwind_failed / (double)n : 0.0, fp);
		report_cfi_budget(r);
	}
	if (fl_sampler__kdwarf(r->ses.sampler))
		report_kdwarf(r, ss);
	if (verbose)
		msg("process tracker: %llu forks, %llu execs, %llu exits; %llu processes tracked "
		    "at "
		    "the end, at most %llu at once, %llu dropped once their samples were named; "
		    "%llu mappings replaced by other code",
		    (unsigned long long)ts->forks, (unsigned long long)ts->execs,
		    (unsigned long long)ts->exits, (unsigned long long)ts->processes,
		    (unsigned long long)ts->peak_processes, (unsigned long long)ts->forgotten,
		    (unsigned long long)ts->replaced);
	if (verbose)
		msg("exited processes: %llu flushes passed on %llu stacks and looked at %llu; %llu "
		    "gathers moved %llu entries of the kernel's counts to user space",
		    (unsigned long long)r->ses.flushes, (unsigned long long)r->ses.flushed_stacks,
		    (unsigned long long)ss->take_examined, (unsigned long long)ss->gathers,
		    (unsigned long long)ss->gathered);
	if (fs->spanning_eras)
		msg("%llu samples share a kernel-counted stack with samples taken after a library "
		    "or program was replaced at its addresses: named with the later mappings "
		    "(--no-bpf keeps them apart)",
		    (unsigned long long)fs->spanning_eras);
	if (ts->history_dropped)
		msg("process tracker: %llu old mappings dropped from processes that replaced their "
		    "code more than %d times: samples of those times may be misnamed",
		    (unsigned long long)ts->history_dropped, 4096);
	if (r->ses.symbolizer) {
		struct fl_symbolizer_jit_stats js;

		fl_symbolizer__jit_stats(r->ses.symbolizer, &js);
		if (js.bytes_ignored)
			msg("perf maps (JIT): %llu bytes past the first %llu MiB of a map ignored",
			    (unsigned long long)js.bytes_ignored,
			    (unsigned long long)(FL_PERFMAP_MAX_FILE_SIZE >> 20));
		if (js.malformed || js.too_long || js.over_max)
			msg("perf maps (JIT): %llu lines skipped in %llu maps (%llu malformed, "
			    "%llu "
			    "longer than %d bytes, %llu past %u entries)",
			    (unsigned long long)(js.malformed + js.too_long + js.over_max),
			    (unsigned long long)js.maps, (unsigned long long)js.malformed,
			    (unsigned long long)js.too_long, FL_PERFMAP_MAX_LINE,
			    (unsigned long long)js.over_max, FL_PERFMAP_MAX_ENTRIES);
		if (js.over_budget)
			msg("perf maps (JIT): %llu maps not read in full, %.1f MiB of them left "
			    "unread: perf maps reached their cap of %llu MiB, 1/%d of "
			    "--max-symbol-cache (raise it); their code past it shows as [anon]",
			    (unsigned long long)js.over_budget,
			    (double)js.bytes_over_budget / 1048576.0,
			    (unsigned long long)(js.max_bytes >> 20), FL_SYM_JIT_SHARE);
		if (js.rereads_refused)
			msg("perf maps (JIT): a map shrank and grew back more than %d times: not "
			    "read again %llu times, its names kept as they were (some may be "
			    "stale)",
			    FL_PERFMAP_MAX_REREADS, (unsigned long long)js.rereads_refused);
		if (verbose && js.processes)
			msg("perf maps (JIT): %llu processes with JIT code, %llu maps opened, %llu "
			    "read (%llu opened a file already open for another process: read once "
			    "for all), %llu entries, %.1f MiB at most",
			    (unsigned long long)js.processes, (unsigned long long)js.opened,
			    (unsigned long long)js.maps, (unsigned long long)js.shared,
			    (unsigned long long)js.entries, (double)js.peak_bytes / 1048576.0);
	}
	if (fl_profile__nr_sanitized(p))
		msg("%llu process or function names held ';' or control characters: replaced by "
		    "':' and '?' so that they cannot split or forge a line",
		    (unsigned long long)fl_profile__nr_sanitized(p));
	if (r->ses.symbolizer) {
		struct fl_symbolizer_cache_stats cs;

		fl_symbolizer__cache_stats(r->ses.symbolizer, &cs);
		if (cs.files_not_read)
			msg("symbol cache: %llu files not read, its cap of %llu MiB being reached "
			    "(--max-symbol-cache): their frames are named by file",
			    (unsigned long long)cs.files_not_read,
			    (unsigned long long)(cs.max_bytes >> 20));
		else if (verbose)
			msg("symbol cache: %llu files, %.1f MiB at most",
			    (unsigned long long)cs.files, (double)cs.peak_bytes / 1048576.0);
	}
	if (r->ses.debuginfod) {
		char line[512];

		fl_debuginfod__summary(r->ses.debuginfod, line, sizeof(line));
		msg("%s", line);
	}
	if (fs->names_cut)
		msg("%llu frame names longer than %d bytes were cut there",
		    (unsigned long long)fs->names_cut, FL_FOLD_MAX_NAME);
	if (fs->no_user_stack)
		msg("%llu samples of user processes without a user stack",
		    (unsigned long long)fs->no_user_stack);
	msg("unsymbolized frames: %.1f%% (%llu of %llu frames in all samples)",
	    fs->frames ? 100.0 * (double)fs->unsymbolized / (double)fs->frames : 0.0,
	    (unsigned long long)fs->unsymbolized, (unsigned long long)fs->frames);
	if (session_python(&r->ses)) {
		if (fs->py_samples || verbose)
			msg("python: %llu samples with Python frames (%.1f%% with their leaf "
			    "named)",
			    (unsigned long long)fs->py_samples,
			    fs->py_samples
				    ? 100.0 * (double)fs->py_named_leaf / (double)fs->py_samples
				    : 0.0);
		if (ss->py_lost)
			msg("python: %llu samples' Python frames lost (the ring that carries them "
			    "to flamed was full): those samples show native frames",
			    (unsigned long long)ss->py_lost);
	}
	if (r->started - r->begun >= SLOW_SETUP_S)
		msg("sampling started %.1f s after flamed did (BPF, perf events, the scan of "
		    "/proc): that time is not in the recording",
		    r->started - r->begun);
	print_own_cost(now_s() - r->begun);
}

/*
 * The flame graph of the recording. Its subtitle (unless --subtitle gave
 * one) and its notes say what the recording could not show, so a graph
 * passed around on its own still carries its caveats.
 */
static int write_svg(const struct recording *r, const struct fl_profile *p,
		     const struct fl_sampler_stats *ss, const struct fl_fold_stats *fs,
		     const struct fl_tracker_stats *ts, double elapsed, FILE *f)
{
	struct record_args *a = r->args;
	_cleanup_free_ char *caveats = NULL;
	char outside[96] = "", offline[96] = "";

	if (ss->hotplug.cpus)
		snprintf(offline, sizeof(offline), "; CPUs offline, not sampled: %.1f CPU-s",
			 (double)ss->hotplug.dead_ns / 1e9);
	char n1[THOUSANDS_LEN], n2[THOUSANDS_LEN], n3[THOUSANDS_LEN], n4[THOUSANDS_LEN];

	if (ss->other_ns)
		snprintf(outside, sizeof(outside),
			 "; samples outside flamed's pid namespace left out: %s",
			 thousands(ss->other_ns, n1));
	if (asprintf(&caveats,
		     "%s samples in %.1f s at %llu Hz, call graph %s; stacks lost: %s, cut at "
		     "the depth limit: %s; "
		     "unsymbolized frames: %.1f%%; idle samples dropped: %s%s%s",
		     thousands(fl_profile__total(p), n1), elapsed, (unsigned long long)a->freq,
		     call_graph_name(&r->ses), thousands(ss->lost + ss->lost_records + ts->lost, n2),
		     thousands(ss->truncated, n3),
		     fs->frames ? 100.0 * (double)fs->unsymbolized / (double)fs->frames : 0.0,
		     thousands(ss->idle, n4), offline, outside) < 0) {
		caveats = NULL;
		return -ENOMEM;
	}
	return write_profile_svg(p, &a->svg, "flamed record", caveats, f);
}

/* The unfinished output, for a signal handler to remove. */
static const struct output *volatile abort_output;

static void on_second_signal(int sig)
{
	const struct output *o = abort_output;

	if (o)
		output_remove_temp(o);
	_exit(128 + sig);
}

/*
 * Once sampling stopped, the signals it waited for end flamed at once. One
 * that came with the stop (Ctrl-C as -d ran out) is still queued on the
 * signalfd: it was meant to stop the recording, so it is read, not obeyed.
 */
static void arm_second_signal(int sfd, const sigset_t *stop_signals)
{
	struct sigaction sa = {.sa_handler = on_second_signal};
	sigset_t unblock = *stop_signals;
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;

	sigdelset(&unblock, SIGCHLD);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigprocmask(SIG_UNBLOCK, &unblock, NULL);
}

static int record(struct record_args *a)
{
	_cleanup_close_ int ep = -1, sfd = -1, dfd = -1, tfd = -1;
	struct recording r = {.args = a, .child = {.go_fd = -1, .err_fd = -1}};
	struct output out = {};
	struct fl_sampler_stats ss = {};
	struct fl_tracker_stats ts = {};
	struct fl_fold_stats fs = {};
	struct fl_pidns ns;
	sigset_t mask, orig_mask;
	void (*orig_pipe)(int);
	const int *pids = a->pids;
	size_t nr_pids = a->nr_pids;
	int child_pid, err, ret = 1;
	double elapsed, phase;

	r.begun = now_s();
	if (session_check_freq(a->freq) || session_check_pidns(&ns) || check_pids(a))
		return 1;
	if (check_nofile())
		return 1;
	if (output_open(&out, a->output, 0))
		return 1;
	if (a->format == FORMAT_SVG && svg_args_open_map(&a->svg)) {
		output_abort(&out);
		return 1;
	}

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &orig_mask);
	/* A closed stdout (-o - | head) must be an error we report, not a silent death. */
	orig_pipe = signal(SIGPIPE, SIG_IGN);

	if (a->cmd) {
		err = child_spawn(&r.child, a->cmd, &orig_mask, orig_pipe, out.f == stdout);
		if (err) {
			msg("cannot start %s: %s", a->cmd[0], strerror(-err));
			goto out;
		}
		child_pid = r.child.pid;
		pids = &child_pid;
		nr_pids = 1;
	}

	phase = now_s();
	struct session_opts so = {
		.freq = a->freq,
		.pids = pids,
		.nr_pids = nr_pids,
		.follow_children = a->cmd != NULL,
		.per_process = a->per_process,
		.per_thread = a->per_thread,
		.per_cgroup = a->per_cgroup,
		.cgroups = a->cgroups,
		.nr_cgroups = a->nr_cgroups,
		.idle = a->idle,
		.kernel = a->kernel,
		.user = a->user,
		.no_bpf = a->no_bpf,
		.no_inline = a->no_inline,
		.python = !a->no_python,
		.srcline = a->srcline,
		.no_demangle = a->no_demangle,
		.dwarf = a->dwarf,
		.stack_size = a->stack_size,
		.kdwarf = a->kdwarf && !a->dwarf,
		.max_table_bytes = a->max_unwind_tables,
		.stack_storage_size = a->stack_storage_size,
		.max_stacks = a->max_stacks,
		.max_processes = a->max_processes ? a->max_processes : 32768,
		.max_cache_bytes = a->max_symbol_cache,
		.pprof = a->format == FORMAT_PPROF,
		.debuginfod = a->debuginfod != 0,
		.debuginfod_urls = a->debuginfod_urls,
		.debuginfod_files = a->debuginfod_files,
		.debuginfod_bytes = a->debuginfod_bytes,
		.debuginfod_seconds = a->debuginfod_seconds,
	};
	err = session_open(&r.ses, &so);
	phase_done("set-up (sampler, tracker, symbols)", &phase);
	if (err)
		goto out;

	ep = epoll_create1(EPOLL_CLOEXEC);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ep < 0 || sfd < 0 || tfd < 0) {
		msg("cannot set up the event loop: %s", strerror(errno));
		goto out;
	}
	err = epoll_add(ep, sfd, TAG_SIGNAL, 0);
	if (!err)
		err = epoll_add(ep, tfd, TAG_TICK, 0);
	r.tick_fd = tfd;
	if (!err && a->duration > 0) {
		dfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		err = dfd < 0 ? -errno : epoll_add(ep, dfd, TAG_DURATION, 0);
	}
	if (!err)
		err = session_watch(&r.ses, ep);
	if (!err && a->nr_pids) {
		r.pidfds = malloc(a->nr_pids * sizeof(*r.pidfds));
		err = r.pidfds ? 0 : -ENOMEM;
		for (size_t i = 0; !err && i < a->nr_pids; i++)
			r.pidfds[i] = -1;
		for (size_t i = 0; !err && i < a->nr_pids; i++) {
			r.pidfds[i] = pidfd_open(a->pids[i]);
			if (r.pidfds[i] == -ESRCH) {
				msg("no such process: %d (it exited before recording started)",
				    a->pids[i]);
				goto out;
			}
			if (r.pidfds[i] < 0) {
				err = r.pidfds[i];
				break;
			}
			err = epoll_add(ep, r.pidfds[i], TAG_PIDFD, (uint32_t)i);
			r.pids_alive++;
		}
	}
	if (err) {
		msg("cannot set up the event loop: %s", strerror(-err));
		goto out;
	}

	phase_done("event loop set-up", &phase);
	err = session_start(&r.ses);
	phase_done("tracker start (/proc scan) and sampler start", &phase);
	if (err)
		goto out;
	/*
	 * The clock starts with the sampling: the /proc scan may take seconds
	 * on a busy machine, and -d is the time sampled, not the time since
	 * flamed started (once it was nothing: "3 samples in 0.0 s"). The ticks
	 * too: the first status line a second into the recording.
	 */
	r.started = now_s();
	err = timer_arm(tfd, 1.0, 1.0);
	if (!err && dfd >= 0)
		err = timer_arm(dfd, a->duration, 0);
	if (err) {
		msg("cannot set up the event loop: %s", strerror(-err));
		goto out;
	}
	r.status_line = isatty(STDERR_FILENO);
	if (a->cmd) {
		/*
		 * kernel-dwarf: the tables of the C library and the loader (built
		 * from flamed's own, the files nearly every program maps) are
		 * ready before the command runs, so that its first samples are
		 * walked with them. Nothing else is sampled meanwhile.
		 */
		fl_sampler__settle_tables(r.ses.sampler, CMD_TABLES_WAIT_MS);
		err = child_release(&r.child);
		if (err) {
			msg("cannot run %s: %s", a->cmd[0], strerror(-err));
			waitpid(r.child.pid, NULL, 0);
			r.child.exited = true;
			goto out;
		}
	}

	phase = now_s();
	err = event_loop(&r, ep, sfd);
	session_stop(&r.ses);
	phase_done("recording and final ring reads", &phase);
	elapsed = now_s() - r.started;
	/* Not profiled any more: the command should not run on while we write. */
	child_stop(&r.child);
	/* A second Ctrl-C while the profile is written ends flamed, leaving no temp file. */
	abort_output = &out;
	arm_second_signal(sfd, &mask);
	if (r.status_line)
		fputs("\r\033[K", stderr);
	if (err)
		msg("event loop failed: %s; writing what was recorded", strerror(-err));
	if (!r.stop_reason)
		r.stop_reason = "stopped";

	phase = now_s();
	err = session_fetch_debuginfo(&r.ses);
	if (r.ses.debuginfod)
		phase_done("debuginfod", &phase);
	if (!err)
		err = session_drain(&r.ses);
	phase_done("drain and symbolize", &phase);
	if (err) {
		msg("cannot collect the samples: %s", strerror(-err));
		goto out;
	}
	if (fl_sampler__stats(r.ses.sampler, &ss))
		memset(&ss, 0, sizeof(ss));
	fl_tracker__stats(r.ses.tracker, &ts);
	fl_fold__stats(r.ses.fold, &fs);
	if (a->format == FORMAT_SVG) {
		err = write_svg(&r, r.ses.profile, &ss, &fs, &ts, elapsed, out.f);
	} else if (a->format == FORMAT_PPROF) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		fl_pprof__set_time(r.ses.pprof,
				   (int64_t)now.tv_sec * 1000000000 + now.tv_nsec -
					   (int64_t)(elapsed * 1e9),
				   (int64_t)(elapsed * 1e9));
		err = fl_pprof__write(r.ses.pprof, out.f);
	} else
		err = fl_folded__write(r.ses.profile, out.f);
	if (!err)
		err = output_commit(&out);
	abort_output = NULL;
	phase_done("write", &phase);
	if (err) {
		msg("cannot write %s: %s", out.path ? out.path : "standard output", strerror(-err));
		goto out;
	}
	print_summary(&r, r.ses.profile, &ss, &fs, &ts, elapsed);
	ret = 0;

out:
	output_abort(&out);
	svg_args_close_map(&a->svg);
	child_stop(&r.child);
	session_close(&r.ses);
	if (r.pidfds)
		for (size_t i = 0; i < a->nr_pids; i++)
			if (r.pidfds[i] >= 0)
				close(r.pidfds[i]);
	free(r.pidfds);
	if (r.child.go_fd >= 0)
		close(r.child.go_fd);
	if (r.child.err_fd >= 0)
		close(r.child.err_fd);
	return ret;
}

int cmd_record(int argc, char **argv)
{
	struct record_args a = {};
	int ret;

	ret = parse_args(argc, argv, &a);
	if (ret) {
		free(a.pids);
		return ret - 1000;
	}
	if (verbose)
		fl_set_print(debug_print);
	ret = record(&a);
	free(a.pids);
	return ret;
}
