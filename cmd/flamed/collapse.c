// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * flamed collapse: `perf script` text to folded stacks, following the rules
 * of FlameGraph's stackcollapse-perf.pl (root frame the process name, frames
 * root first, offsets dropped, [module] for unknown symbols, _[k] _[j] _[i]
 * annotations, counts weighted by the period, lines sorted).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flamed.h"
#include "flamed/common/cleanup.h"
#include "flamed/formats/folded.h"
#include "flamed/formats/perfscript.h"
#include "flamed/profile/profile.h"
#include "inline_lookup.h"

static const char collapse_usage[] =
	"usage: flamed collapse [OPTIONS] [FILE...]\n"
	"\n"
	"Reads `perf script` output (FILEs, or standard input without one or for -) and\n"
	"writes folded stacks, one sorted \"root;...;leaf COUNT\" line per distinct stack,\n"
	"as stackcollapse-perf.pl does: `perf script | flamed collapse | flamed svg > out.svg`.\n"
	"\n"
	"  -o, --output FILE        write to FILE instead of standard output\n"
	"      --pid                root frame COMM-PID\n"
	"      --tid                root frame COMM-PID/TID\n"
	"      --kernel             annotate kernel frames _[k]\n"
	"      --jit                annotate JIT frames (from /tmp/perf-PID.map) _[j]\n"
	"      --all                both annotations: --kernel --jit\n"
	"      --addrs              unknown symbols keep their address: [module <addr>]\n"
	"      --event-filter=EVENT keep samples of EVENT (default: the first event seen)\n"
	"      --inline             add the functions inlined at each address, from the\n"
	"                           binaries' DWARF (read in process), annotated _[i]\n"
	"  -h, --help               this help\n";

#define READ_CHUNK (4u << 20)

struct collapse {
	bool pid, tid, kernel, jit, addrs, dwarf_inline;
	bool java; /* the sample being added is a "java" one */
	const char *event_filter;
	char *first_event;
	uint64_t other_events;
	struct fl_profile *p;
	uint32_t *ids;
	size_t cap_ids;
	char *buf; /* a frame name being built */
	size_t buf_cap;
	struct inline_lookup *il;
};

static bool str_eq(struct fl_ps_str s, const char *lit)
{
	size_t n = strlen(lit);

	return s.len == n && !memcmp(s.s, lit, n);
}

static bool starts_with(struct fl_ps_str s, const char *lit)
{
	size_t n = strlen(lit);

	return s.len >= n && !memcmp(s.s, lit, n);
}

static bool ends_with(struct fl_ps_str s, const char *lit)
{
	size_t n = strlen(lit);

	return s.len >= n && !memcmp(s.s + s.len - n, lit, n);
}

/* The first lit in the len bytes at s, or NULL. */
static const char *find(const char *s, size_t len, const char *lit)
{
	return memmem(s, len, lit, strlen(lit));
}

/* A kernel module or image: "[kernel.kallsyms]", "[ext4]", ".../vmlinux". */
static bool module_kernel(struct fl_ps_str mod)
{
	return (starts_with(mod, "[") || ends_with(mod, "vmlinux")) && !find(mod.s, mod.len, "unknown");
}

/* A perf map: the module holds "/tmp/perf-DIGITS.map" (a container's /tmp too). */
static bool module_jit(struct fl_ps_str mod)
{
	const char *at = mod.s, *end = mod.s + mod.len;

	while ((at = find(at, (size_t)(end - at), "/tmp/perf-"))) {
		const char *d = at + 10;

		while (d < end && *d >= '0' && *d <= '9')
			d++;
		if (d > at + 10 && end - d >= 4 && !memcmp(d, ".map", 4))
			return true;
		at++;
	}
	return false;
}

static int reserve(struct collapse *c, size_t n)
{
	char *nb;
	size_t ncap = c->buf_cap ? c->buf_cap : 256;

	if (n <= c->buf_cap)
		return 0;
	while (ncap < n)
		ncap *= 2;
	nb = realloc(c->buf, ncap);
	if (!nb)
		return -ENOMEM;
	c->buf = nb;
	c->buf_cap = ncap;
	return 0;
}

static int push_id(struct collapse *c, size_t *n, uint32_t id)
{
	if (*n == c->cap_ids) {
		size_t ncap = c->cap_ids ? c->cap_ids * 2 : 256;
		uint32_t *ni = realloc(c->ids, ncap * sizeof(*ni));

		if (!ni)
			return -ENOMEM;
		c->ids = ni;
		c->cap_ids = ncap;
	}
	c->ids[(*n)++] = id;
	return 0;
}

/*
 * stackcollapse-perf.pl's tidying, in place: the name is cut at its first
 * '(' (an argument list, a Java signature), but not at one that opens
 * "(anonymous namespace)", and not at all in a Go method (".(" and later
 * ")."); blanks before the cut stay. Then '"' and '\'' are deleted. (';'
 * becomes ':' when the profile interns the name.) Returns the new length.
 */
static size_t tidy(char *s, size_t len)
{
	static const char anon[] = "(anonymous namespace)";
	const size_t anon_len = sizeof(anon) - 1;
	const char *go;
	size_t n = 0;

	while (n < len && s[n] != '(' && s[n] != '"' && s[n] != '\'')
		n++;
	if (n == len)
		return len; /* most names: nothing to do */
	go = find(s, len, ".(");
	if (!go || !find(go + 2, len - (size_t)(go + 2 - s), ")."))
		for (size_t i = 0; i < len; i++)
			if (s[i] == '(' && !(len - i >= anon_len && !memcmp(s + i, anon, anon_len))) {
				len = i;
				break;
			}
	for (size_t i = n; i < len; i++)
		if (s[i] != '"' && s[i] != '\'')
			s[n++] = s[i];
	return n;
}

/* One frame name, tidied and annotated, interned: part k of the line's "a->b->c". */
static int frame_id(struct collapse *c, const struct fl_ps_frame *f, struct fl_ps_str part,
		    bool inlined, uint32_t *id)
{
	size_t n = 0;
	const char *suffix = NULL;

	if (reserve(c, part.len + f->mod.len + f->addr.len + 16))
		return -ENOMEM;
	if (str_eq(part, "[unknown]")) {
		/* Named by the module's file, "[libc.so.6]", when there is one. */
		struct fl_ps_str base = {"unknown", 7};

		if (f->has_mod && !str_eq(f->mod, "[unknown]")) {
			static const char deleted[] = " (deleted)";
			struct fl_ps_str mod = f->mod;

			/* A library deleted since it was mapped: named as it was. */
			if (ends_with(mod, deleted) && mod.len > sizeof(deleted) - 1)
				mod.len -= sizeof(deleted) - 1;
			base.s = mod.s + mod.len;
			while (base.s > mod.s && base.s[-1] != '/')
				base.s--;
			base.len = (size_t)(mod.s + mod.len - base.s);
		}
		c->buf[n++] = '[';
		if (base.len)
			memcpy(c->buf + n, base.s, base.len);
		n += base.len;
		if (c->addrs) {
			memcpy(c->buf + n, " <", 2);
			n += 2;
			memcpy(c->buf + n, f->addr.s, f->addr.len);
			n += f->addr.len;
			c->buf[n++] = '>';
		}
		c->buf[n++] = ']';
	} else if (part.len) {
		memcpy(c->buf, part.s, part.len);
		n = part.len;
	}
	n = tidy(c->buf, n);
	if (c->java && n && c->buf[0] == 'L' && memchr(c->buf, '/', n)) {
		memmove(c->buf, c->buf + 1, n - 1);
		n--;
	}
	if (inlined) {
		if (!find(c->buf, n, "_[i]"))
			suffix = "_[i]";
	} else if (c->kernel && module_kernel(f->mod)) {
		suffix = "_[k]";
	} else if (c->jit && module_jit(f->mod)) {
		if (!find(c->buf, n, "_[j]"))
			suffix = "_[j]";
	}
	if (suffix) {
		memcpy(c->buf + n, suffix, 4);
		n += 4;
	}
	return fl_profile__intern(c->p, c->buf, n, id);
}

/*
 * The frames of one stack line: "a->b->c" is a frame and two inlined into
 * it, split as Perl's split does (empty parts at the end dropped).
 */
static int add_line(struct collapse *c, const struct fl_ps_sample *s, size_t at, size_t *n)
{
	const struct fl_ps_frame *f = &s->frames[at];
	/* perf printed the functions inlined here already (DWARF call graphs): "(inlined)" leafward. */
	bool perf_did_inline = at > 0 && str_eq(s->frames[at - 1].mod, "inlined") &&
			       s->frames[at - 1].addr.len == f->addr.len &&
			       !memcmp(s->frames[at - 1].addr.s, f->addr.s, f->addr.len);
	bool perf_inlined = str_eq(f->mod, "inlined");
	struct fl_ps_str rest = f->sym;
	size_t k = 0;
	uint32_t id;
	int err;

	/* The script skips every function that starts with '('; C++'s anonymous namespaces stay. */
	if (starts_with(rest, "(") && !starts_with(rest, "(anonymous namespace)"))
		return 0;
	while (rest.len >= 2 && rest.s[rest.len - 2] == '-' && rest.s[rest.len - 1] == '>')
		rest.len -= 2;
	while (rest.len) {
		struct fl_ps_str part = rest;
		const char *arrow = find(rest.s, rest.len, "->");

		if (arrow)
			part.len = (size_t)(arrow - rest.s);
		err = frame_id(c, f, part, k++ > 0, &id);
		if (!err)
			err = push_id(c, n, id);
		if (err)
			return err;
		if (!arrow)
			break;
		rest.len -= part.len + 2;
		rest.s = arrow + 2;
	}
	if (c->il && !perf_inlined && !perf_did_inline && f->mod.len && f->mod.s[0] == '/') {
		const char *names[INLINE_LOOKUP_MAX];
		size_t nn = inline_lookup__find(c->il, f, names, INLINE_LOOKUP_MAX);

		for (size_t i = 0; i < nn; i++) {
			struct fl_ps_str part = {names[i], strlen(names[i])};

			err = frame_id(c, f, part, true, &id);
			if (!err)
				err = push_id(c, n, id);
			if (err)
				return err;
		}
	}
	return 0;
}

static int on_sample(const struct fl_ps_sample *s, void *ctx)
{
	struct collapse *c = ctx;
	size_t n = 0, len;
	uint32_t id;
	int err;

	if (s->event.len) {
		const char *want = c->event_filter ? c->event_filter : c->first_event;

		if (!want) {
			c->first_event = strndup(s->event.s, s->event.len);
			if (!c->first_event)
				return -ENOMEM;
		} else if (!str_eq(s->event, want)) {
			c->other_events++;
			return 0;
		}
	}
	/* The root: the process name, spaces made '_', with -PID or -PID/TID. */
	len = s->comm.len;
	if (reserve(c, len + s->pid.len + s->tid.len + 8))
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		c->buf[i] = s->comm.s[i] == ' ' ? '_' : s->comm.s[i];
	if (c->pid || c->tid) {
		c->buf[len++] = '-';
		if (s->pid.len) {
			memcpy(c->buf + len, s->pid.s, s->pid.len);
			len += s->pid.len;
		} else {
			c->buf[len++] = '?';
		}
		if (c->tid) {
			c->buf[len++] = '/';
			memcpy(c->buf + len, s->tid.s, s->tid.len);
			len += s->tid.len;
		}
	}
	/* Java signatures are tidied in a record whose root is "java" (not "java-PID"). */
	c->java = len == 4 && !memcmp(c->buf, "java", 4);
	err = fl_profile__intern(c->p, c->buf, len, &id);
	if (!err)
		err = push_id(c, &n, id);
	for (size_t i = s->nr_frames; !err && i > 0; i--)
		err = add_line(c, s, i - 1, &n);
	if (err)
		return err;
	return fl_profile__add(c->p, c->ids, n, s->period ? s->period : 1);
}

enum { OPT_PID = 256, OPT_TID, OPT_KERNEL, OPT_JIT, OPT_ALL, OPT_ADDRS, OPT_EVENT, OPT_INLINE };

static int feed_fd(struct fl_perfscript *ps, int fd, char *buf)
{
	for (;;) {
		ssize_t n = read(fd, buf, READ_CHUNK);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return 0;
		n = fl_perfscript__feed(ps, buf, (size_t)n);
		if (n)
			return (int)n;
	}
}

int cmd_collapse(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"pid", no_argument, NULL, OPT_PID},
		{"tid", no_argument, NULL, OPT_TID},
		{"kernel", no_argument, NULL, OPT_KERNEL},
		{"jit", no_argument, NULL, OPT_JIT},
		{"all", no_argument, NULL, OPT_ALL},
		{"addrs", no_argument, NULL, OPT_ADDRS},
		{"event-filter", required_argument, NULL, OPT_EVENT},
		{"inline", no_argument, NULL, OPT_INLINE},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	struct collapse c = {};
	struct fl_perfscript *ps = NULL;
	struct fl_ps_stats st;
	struct output out = {};
	const char *output = NULL;
	_cleanup_free_ int *fds = NULL;
	_cleanup_free_ char *buf = NULL;
	int opt, nfiles, ret = 1, err = 0;

	while ((opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			output = optarg;
			break;
		case OPT_PID:
			c.pid = true;
			break;
		case OPT_TID:
			c.tid = true;
			break;
		case OPT_KERNEL:
			c.kernel = true;
			break;
		case OPT_JIT:
			c.jit = true;
			break;
		case OPT_ALL:
			c.kernel = c.jit = true;
			break;
		case OPT_ADDRS:
			c.addrs = true;
			break;
		case OPT_EVENT:
			c.event_filter = optarg;
			break;
		case OPT_INLINE:
			c.dwarf_inline = true;
			break;
		case 'h':
			fputs(collapse_usage, stdout);
			return 0;
		default:
			fputs(collapse_usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (output_check_format(output, OUTPUT_FORMAT_FOLDED, "flamed collapse"))
		return EXIT_USAGE;
	nfiles = argc - optind;
	fds = calloc(nfiles ? (size_t)nfiles : 1, sizeof(*fds));
	buf = malloc(READ_CHUNK);
	if (!fds || !buf) {
		msg("out of memory");
		return 1;
	}
	/* Every input is opened first: a wrong name is reported before anything is written. */
	for (int i = 0; i < nfiles; i++) {
		const char *path = argv[optind + i];

		fds[i] = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
					   : dup(STDIN_FILENO);
		if (fds[i] < 0) {
			msg("cannot open %s: %s", path, strerror(errno));
			for (int j = 0; j < i; j++)
				close(fds[j]);
			return 1;
		}
	}
	if (!nfiles) {
		fds[0] = dup(STDIN_FILENO);
		nfiles = 1;
	}
	if (c.dwarf_inline && inline_lookup__new(&c.il)) {
		msg("out of memory");
		goto out;
	}
	if (fl_profile__new(&c.p) || fl_perfscript__new(on_sample, &c, &ps)) {
		msg("out of memory");
		goto out;
	}
	/* Each file's end ends its last line and sample: files never run into each other. */
	for (int i = 0; i < nfiles && !err; i++) {
		err = feed_fd(ps, fds[i], buf);
		if (!err)
			err = fl_perfscript__finish(ps);
	}
	if (err) {
		msg("cannot read the input: %s", strerror(-err));
		goto out;
	}
	if (output_open(&out, output, 0))
		goto out;
	output_remove_on_signal(&out);
	err = fl_folded__write(c.p, out.f);
	if (!err)
		err = output_commit(&out);
	if (err) {
		msg("cannot write %s: %s", output ? output : "standard output", strerror(-err));
		goto out;
	}
	fl_perfscript__stats(ps, &st);
	if (st.unrecognized || st.too_long || st.dropped)
		msg("collapse: skipped %llu lines (%llu unrecognized, %llu longer than %u bytes, "
		    "%llu in samples whose header could not be read)",
		    (unsigned long long)(st.unrecognized + st.too_long + st.dropped),
		    (unsigned long long)st.unrecognized, (unsigned long long)st.too_long,
		    FL_PS_MAX_LINE, (unsigned long long)st.dropped);
	if (c.other_events && !c.event_filter)
		msg("collapse: %llu samples of other events skipped (kept the first seen, %s; use "
		    "--event-filter=EVENT to choose)",
		    (unsigned long long)c.other_events, c.first_event);
	ret = 0;
out:
	output_remove_on_signal(NULL);
	output_abort(&out);
	for (int i = 0; i < nfiles; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fl_perfscript__free(ps);
	fl_profile__free(c.p);
	inline_lookup__free(c.il);
	free(c.first_event);
	free(c.ids);
	free(c.buf);
	return ret;
}
