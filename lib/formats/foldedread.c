// SPDX-License-Identifier: GPL-2.0-or-later
/* The folded-stacks reader: splits untrusted text into stacks and counts, counting what it skips. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flamed/formats/foldedread.h"

static const char *const bad_names[FL_FOLDED_BAD__MAX] = {
	[FL_FOLDED_BLANK] = "blank",
	[FL_FOLDED_NO_COUNT] = "no count",
	[FL_FOLDED_NEGATIVE] = "negative count",
	[FL_FOLDED_CRLF] = "CRLF line ending",
	[FL_FOLDED_NO_STACK] = "no stack",
	[FL_FOLDED_NUL] = "NUL byte",
	[FL_FOLDED_TOO_LONG] = "line too long",
	[FL_FOLDED_HUGE] = "count too large",
};

const char *fl_folded__bad_name(enum fl_folded_bad kind)
{
	return (unsigned)kind < FL_FOLDED_BAD__MAX ? bad_names[kind] : "malformed";
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * The number that ends [p, *e): digits, optionally '.' and more digits.
 * On success moves *e to its first character. Returns 0, or the kind of
 * problem: FL_FOLDED_NO_COUNT (no number there, or not preceded by white
 * space), FL_FOLDED_NEGATIVE (white space and a '-' before it),
 * FL_FOLDED_HUGE.
 */
static int number_at_end(const char *p, const char **e, double *val)
{
	const char *end = *e, *s = end, *dot = NULL;
	double v = 0, scale = 1;
	uint64_t iv = 0;
	size_t ndig = 0;

	while (s > p && (is_digit(s[-1]) || s[-1] == '.')) {
		if (s[-1] == '.') {
			if (dot)
				return FL_FOLDED_NO_COUNT;
			dot = s - 1;
		}
		s--;
	}
	if (s == end || !is_digit(*s))
		return FL_FOLDED_NO_COUNT; /* "", ".5": flamegraph.pl wants a digit first */
	if (s > p && s[-1] == '-' && (s - 1 == p || is_blank(s[-2])))
		return FL_FOLDED_NEGATIVE; /* "stack -5"; "pool-1-thread-1 5" is a name */
	if (s > p && !is_blank(s[-1]))
		return FL_FOLDED_NO_COUNT; /* "foo5": part of the last frame */
	for (const char *q = s; q < (dot ? dot : end); q++, ndig++) {
		if (ndig < 19)
			iv = iv * 10 + (uint64_t)(*q - '0');
		else
			v = v * 10 + (*q - '0');
	}
	if (ndig <= 19) {
		v = (double)iv;
	} else {
		/* Rare: redo in floating point from the start, where overflow is inf. */
		v = 0;
		for (const char *q = s; q < (dot ? dot : end); q++)
			v = v * 10 + (*q - '0');
	}
	if (dot)
		for (const char *q = dot + 1; q < end && scale > 1e-18; q++) {
			scale /= 10;
			v += (*q - '0') * scale;
		}
	if (!(v <= FL_FOLDED_MAX_COUNT))
		return FL_FOLDED_HUGE;
	*val = v;
	*e = s;
	return 0;
}

static void note_bad(struct fl_folded_stats *st, enum fl_folded_bad kind)
{
	if (st->nr_bad < FL_FOLDED_FIRST_BAD) {
		st->first_bad_line[st->nr_bad] = st->lines;
		st->first_bad_kind[st->nr_bad] = kind;
	}
	st->bad[kind]++;
	st->nr_bad++;
}

/* One line without its '\n'. Returns fn's return, or 0. */
static int parse_line(const char *p, size_t len, fl_folded_line_fn fn, void *ctx,
		      struct fl_folded_stats *st)
{
	struct fl_folded_line l = {.lineno = ++st->lines};
	const char *e = p + len;
	double c1, c2;
	int kind;

	if (len > FL_FOLDED_MAX_LINE) {
		note_bad(st, FL_FOLDED_TOO_LONG);
		return 0;
	}
	if (memchr(p, '\0', len)) {
		note_bad(st, FL_FOLDED_NUL);
		return 0;
	}
	if (len && e[-1] == '\r') {
		note_bad(st, FL_FOLDED_CRLF);
		return 0;
	}
	while (e > p && is_blank(e[-1]))
		e--;
	if (e == p) {
		note_bad(st, FL_FOLDED_BLANK);
		return 0;
	}
	kind = number_at_end(p, &e, &c1);
	if (kind) {
		note_bad(st, (enum fl_folded_bad)kind);
		return 0;
	}
	/* A count alone ("42"): no stack, and no blank before it. */
	if (e == p) {
		note_bad(st, FL_FOLDED_NO_STACK);
		return 0;
	}
	/*
	 * One blank separates the count from the stack, as flamegraph.pl reads
	 * it: the stack keeps any other blank at its end ("p;u  3" is "p;u ").
	 */
	e--;
	l.count[0] = c1;
	l.nr_counts = 1;
	/* A second number before it: a differential line, "stack before after". */
	{
		const char *e2 = e;

		kind = number_at_end(p, &e2, &c2);
		if (kind == FL_FOLDED_NEGATIVE || kind == FL_FOLDED_HUGE) {
			note_bad(st, (enum fl_folded_bad)kind);
			return 0;
		}
		/* Not when no stack would be left before it ("5 3" is stack "5"). */
		if (!kind && e2 - p > 1) {
			l.count[0] = c2;
			l.count[1] = c1;
			l.nr_counts = 2;
			e = e2 - 1;
		}
	}
	if (e == p) {
		note_bad(st, FL_FOLDED_NO_STACK);
		return 0;
	}
	l.stack = p;
	l.len = (size_t)(e - p);
	st->good++;
	return fn(&l, ctx);
}

static int parse_chunk(const char *buf, size_t len, bool last, size_t *used, fl_folded_line_fn fn,
		       void *ctx, struct fl_folded_stats *st)
{
	const char *p = buf, *end = buf + len;
	int err;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl) {
			if (!last)
				break;
			nl = end;
		}
		err = parse_line(p, (size_t)(nl - p), fn, ctx, st);
		if (err) {
			*used = (size_t)(p - buf);
			return err;
		}
		p = nl < end ? nl + 1 : end;
	}
	*used = (size_t)(p - buf);
	return 0;
}

int fl_folded__parse(const char *buf, size_t len, fl_folded_line_fn fn, void *ctx,
		     struct fl_folded_stats *st)
{
	size_t used;

	memset(st, 0, sizeof(*st));
	return parse_chunk(buf, len, true, &used, fn, ctx, st);
}

#define CHUNK (1u << 20)

int fl_folded__parse_fd(int fd, fl_folded_line_fn fn, void *ctx, struct fl_folded_stats *st)
{
	return fl_folded__parse_fd_after(fd, NULL, 0, fn, ctx, st);
}

int fl_folded__parse_fd_after(int fd, const void *head, size_t head_len, fl_folded_line_fn fn,
			      void *ctx, struct fl_folded_stats *st)
{
	size_t cap = CHUNK, len = head_len, used;
	bool skipping = false; /* inside a line longer than the cap: drop it to its end */
	char *buf;
	int err = 0;

	memset(st, 0, sizeof(*st));
	if (head_len > CHUNK)
		return -EINVAL;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	if (head_len)
		memcpy(buf, head, head_len);
	for (;;) {
		ssize_t n;

		if (len == cap) {
			/* One line fills the buffer: grow up to the line cap, then skip it. */
			if (cap > FL_FOLDED_MAX_LINE) {
				skipping = true;
				len = 0;
			} else {
				char *nb = realloc(buf, cap * 2);

				if (!nb) {
					err = -ENOMEM;
					break;
				}
				buf = nb;
				cap *= 2;
			}
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (skipping) {
			char *nl = memchr(buf, '\n', (size_t)n);

			if (nl || n == 0) {
				st->lines++;
				note_bad(st, FL_FOLDED_TOO_LONG);
			}
			if (!nl) {
				if (n == 0)
					break;
				continue;
			}
			skipping = false;
			len = (size_t)(buf + n - (nl + 1));
			memmove(buf, nl + 1, len);
		} else {
			len += (size_t)n;
		}
		err = parse_chunk(buf, len, n == 0, &used, fn, ctx, st);
		if (err || n == 0)
			break;
		memmove(buf, buf + used, len - used);
		len -= used;
	}
	free(buf);
	return err;
}
