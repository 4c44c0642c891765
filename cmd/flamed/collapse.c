// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * flamed collapse: `perf script` text to folded stacks, following the rules
 * of FlameGraph's stackcollapse-perf.pl (root frame the process name, frames
 * root first, offsets dropped, [module] for unknown symbols, _[k] _[j] _[i]
 * annotations, counts weighted by the period, lines sorted).
 */
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
	"      --all                all annotations: _[k], _[j] and inlined frames _[i]\n"
	"      --addrs              unknown symbols keep their address: [module <addr>]\n"
	"      --event-filter=EVENT keep samples of EVENT (default: the first event seen)\n"
	"      --inline             add the functions inlined at each address, from the\n"
	"                           binaries' DWARF (read in process), annotated _[i]\n"
	"  -h, --help               this help\n";

#define READ_CHUNK (4u << 20)

struct collapse {
	bool pid, tid, kernel, jit, inl_annot, addrs, dwarf_inline;
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

static bool ends_with(struct fl_ps_str s, const char *lit)
{
	size_t n = strlen(lit);

	return s.len >= n && !memcmp(s.s + s.len - n, lit, n);
}

static bool contains(struct fl_ps_str s, const char *lit)
{
	size_t n = strlen(lit);

	for (size_t i = 0; i + n <= s.len; i++)
		if (!memcmp(s.s + i, lit, n))
			return true;
	return false;
}

static bool module_known(struct fl_ps_str mod)
{
	return mod.len && !str_eq(mod, "unknown") && !str_eq(mod, "[unknown]") &&
	       !str_eq(mod, "inlined");
}

static bool module_kernel(struct fl_ps_str mod)
{
	return (mod.len && (mod.s[0] == '[' || ends_with(mod, "vmlinux"))) &&
	       !contains(mod, "unknown");
}

/* ".../perf-DIGITS.map" (a perf map file, in /tmp or a container's /tmp). */
static bool module_jit(struct fl_ps_str mod)
{
	size_t b = mod.len, d;

	if (!ends_with(mod, ".map"))
		return false;
	b -= 4;
	for (d = b; d > 0 && mod.s[d - 1] >= '0' && mod.s[d - 1] <= '9'; d--)
		;
	if (d == b || d < 5 || memcmp(mod.s + d - 5, "perf-", 5))
		return false;
	return d > 5 && mod.s[d - 6] == '/';
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
 * In one pass: ';' becomes ':' (a name can never split a folded line), and
 * the name is cut at its first '(' (an argument list, a Java signature),
 * but not at "(anonymous namespace)", and not at all in a Go method such
 * as "main.(*T).Run". Returns the new length.
 */
static size_t tidy(char *s, size_t len)
{
	static const char anon[] = "(anonymous namespace)";
	const size_t anon_len = sizeof(anon) - 1;
	size_t cut = len;
	bool go = false;

	for (size_t i = 0; i < len; i++) {
		char ch = s[i];

		if (ch == ';') {
			s[i] = ':';
		} else if (ch == '(') {
			if (i && s[i - 1] == '.')
				go = true;
			if (cut == len && !(len - i >= anon_len && !memcmp(s + i, anon, anon_len)))
				cut = i;
		} else if (ch == ')' && go && i + 1 < len && s[i + 1] == '.') {
			/* ".(...)." : a Go method, kept whole (';' still replaced). */
			for (size_t j = i; j < len; j++)
				if (s[j] == ';')
					s[j] = ':';
			return len;
		}
	}
	return cut;
}

/* One frame name, tidied and annotated, interned. */
static int frame_id(struct collapse *c, const struct fl_ps_sample *s, const struct fl_ps_frame *f,
		    struct fl_ps_str part, bool inlined, uint32_t *id)
{
	size_t n = 0, base_len;
	const char *base;
	const char *suffix = NULL;
	bool unknown = !part.len || str_eq(part, "[unknown]");

	if (reserve(c, part.len + f->mod.len + f->addr.len + 16))
		return -ENOMEM;
	if (unknown) {
		if (module_known(f->mod)) {
			static const char deleted[] = " (deleted)";
			struct fl_ps_str mod = f->mod;

			/* A library deleted since it was mapped: named as it was. */
			if (ends_with(mod, deleted) && mod.len > sizeof(deleted) - 1)
				mod.len -= sizeof(deleted) - 1;
			base = mod.s + mod.len;
			while (base > mod.s && base[-1] != '/')
				base--;
			base_len = (size_t)(mod.s + mod.len - base);
		} else {
			base = "unknown";
			base_len = 7;
		}
		c->buf[n++] = '[';
		memcpy(c->buf + n, base, base_len);
		n += base_len;
		if (c->addrs) {
			memcpy(c->buf + n, " <", 2);
			n += 2;
			memcpy(c->buf + n, f->addr.s, f->addr.len);
			n += f->addr.len;
			c->buf[n++] = '>';
		}
		c->buf[n++] = ']';
	} else {
		memcpy(c->buf, part.s, part.len);
		n = part.len;
	}
	/* "[module]" is built, not printed by perf: only ';' needs care (the profile's). */
	if (!unknown) {
		n = tidy(c->buf, n);
		while (n && (c->buf[n - 1] == ' ' || c->buf[n - 1] == '\t'))
			n--;
	}
	if (str_eq(s->comm, "java") && n > 1 && c->buf[0] == 'L' && memchr(c->buf, '/', n)) {
		memmove(c->buf, c->buf + 1, n - 1);
		n--;
	}
	if (!n) {
		memcpy(c->buf, "[unknown]", 9);
		n = 9;
	}
	if (inlined) {
		if (c->inl_annot)
			suffix = "_[i]";
	} else if (c->kernel && module_kernel(f->mod)) {
		suffix = "_[k]";
	} else if (c->jit && module_jit(f->mod)) {
		suffix = "_[j]";
	}
	if (suffix) {
		memcpy(c->buf + n, suffix, 4);
		n += 4;
	}
	return fl_profile__intern(c->p, c->buf, n, id);
}

/* The frames of one stack line: "a->b->c" is a frame and two inlined into it. */
static int add_line(struct collapse *c, const struct fl_ps_sample *s, size_t at, size_t *n)
{
	const struct fl_ps_frame *f = &s->frames[at];
	/* perf printed the functions inlined here already (DWARF call graphs): "(inlined)" leafward. */
	bool perf_did_inline = at > 0 && str_eq(s->frames[at - 1].mod, "inlined") &&
			       s->frames[at - 1].addr.len == f->addr.len &&
			       !memcmp(s->frames[at - 1].addr.s, f->addr.s, f->addr.len);
	bool perf_inlined = str_eq(f->mod, "inlined");
	struct fl_ps_str rest = f->sym;
	bool first = true;
	uint32_t id;
	int err;

	for (;;) {
		struct fl_ps_str part = rest;
		const char *arrow = NULL;

		for (size_t i = 0; i + 1 < rest.len; i++)
			if (rest.s[i] == '-' && rest.s[i + 1] == '>') {
				arrow = rest.s + i;
				break;
			}
		if (arrow)
			part.len = (size_t)(arrow - rest.s);
		err = frame_id(c, s, f, part, perf_inlined || !first, &id);
		if (!err)
			err = push_id(c, n, id);
		if (err)
			return err;
		first = false;
		if (!arrow)
			break;
		rest.len -= part.len + 2;
		rest.s = arrow + 2;
	}
	if (c->il && !perf_inlined && !perf_did_inline && module_known(f->mod) &&
	    f->mod.s[0] == '/') {
		const char *names[INLINE_LOOKUP_MAX];
		size_t nn = inline_lookup__find(c->il, f, names, INLINE_LOOKUP_MAX);

		for (size_t i = 0; i < nn; i++) {
			struct fl_ps_str part = {names[i], strlen(names[i])};

			err = frame_id(c, s, f, part, true, &id);
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
	/* The root: the process name, blanks made '_', with -PID or -PID/TID. */
	len = s->comm.len;
	if (reserve(c, len + s->pid.len + s->tid.len + 8))
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		c->buf[i] = s->comm.s[i] == ' ' || s->comm.s[i] == '\t' ? '_' : s->comm.s[i];
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
			c.kernel = c.jit = c.inl_annot = true;
			break;
		case OPT_ADDRS:
			c.addrs = true;
			break;
		case OPT_EVENT:
			c.event_filter = optarg;
			break;
		case OPT_INLINE:
			c.dwarf_inline = c.inl_annot = true;
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
