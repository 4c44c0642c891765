// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * C++ and Rust symbol names made readable with libiberty's callback
 * demanglers, writing into the caller's buffer with hard caps on the input
 * and on the output.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "flamed/symbols/demangle.h"

/* Always on: const/volatile where they belong. Never DMGL_NO_RECURSE_LIMIT. */
#define CXX_OPTS DMGL_ANSI

/*
 * Where a demangler's output goes: the caller's buffer, cut at size - 1
 * bytes, and a count of everything produced, which gives up (longjmp) past
 * FL_DEMANGLE_MAX_OUTPUT. libiberty's printers allocate nothing while they
 * print (their state is on the stack; the C++ tree is freed by our caller),
 * so leaving them by longjmp leaks nothing, except when Rust v0 is printing
 * a punycode identifier: its decoded copy (4 bytes per byte of the name),
 * lost only for names that reach the cap.
 */
struct sink {
	char *buf;
	size_t size;	    /* of buf, >= 1 */
	size_t len;	    /* bytes in buf, at most size - 1 */
	size_t total;	    /* bytes produced, also those that did not fit */
	unsigned char next; /* the first byte that did not fit */
	bool full;
	jmp_buf *too_long;
};

static void sink_reset(struct sink *s)
{
	s->len = 0;
	s->total = 0;
	s->full = false;
}

static void sink_put(struct sink *s, const char *data, size_t n)
{
	if (!s->full) {
		size_t room = s->size - 1 - s->len;

		if (n <= room) {
			memcpy(s->buf + s->len, data, n);
			s->len += n;
		} else {
			memcpy(s->buf + s->len, data, room);
			s->len += room;
			s->next = (unsigned char)data[room];
			s->full = true;
		}
	}
	s->total += n;
	if (s->too_long && s->total > FL_DEMANGLE_MAX_OUTPUT)
		longjmp(*s->too_long, 1);
}

static void sink_cb(const char *data, size_t n, void *opaque)
{
	sink_put(opaque, data, n);
}

static bool is_utf8_continuation(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/*
 * Terminates the buffer. When it was cut inside a UTF-8 sequence (the first
 * byte left out continues one), the sequence's bytes in the buffer go too:
 * at most 3, as no sequence is longer than 4.
 */
static int sink_finish(struct sink *s, int ret)
{
	if (s->full) {
		for (int i = 0; i < 3 && s->len > 0 && is_utf8_continuation(s->next); i++)
			s->next = (unsigned char)s->buf[--s->len];
		ret |= FL_DEMANGLE_TRUNCATED;
	}
	s->buf[s->len] = '\0';
	return ret;
}

/* One demangler call: Rust's, or printing a parsed C++ name. */
struct job {
	const char *name;
	int options;
	struct demangle_component *dc; /* printing marks it: not const */
};

static int rust_job(const struct job *j, struct sink *s)
{
	return rust_demangle_callback(j->name, j->options, sink_cb, s);
}

static int cxx_print_job(const struct job *j, struct sink *s)
{
	return cplus_demangle_print_callback(j->options, j->dc, sink_cb, s);
}

/*
 * Runs one demangler into the sink. True when it succeeded within
 * FL_DEMANGLE_MAX_OUTPUT; otherwise the sink is as it was (a demangler may
 * fail after it printed part of the name).
 */
static bool run_demangler(struct sink *s, int (*fn)(const struct job *, struct sink *),
			  const struct job *j)
{
	size_t start_len = s->len, start_total = s->total;
	jmp_buf too_long;
	bool ok = false;

	s->too_long = &too_long;
	if (setjmp(too_long) == 0)
		ok = fn(j, s) != 0;
	s->too_long = NULL;
	if (!ok) {
		s->len = start_len;
		s->total = start_total;
		s->full = false;
	}
	return ok;
}

/*
 * The first clone suffix of a parsed C++ name (".cold", ".isra.0",
 * ".constprop.0.isra.0"...: all of them, from the first one's dot on; it
 * points into the name), or NULL. Each clone wraps the encoding (left) and
 * its suffix (right), the last one outermost.
 */
static const char *cxx_clone_suffix(const struct demangle_component *dc)
{
	const char *suffix = NULL;

	while (dc && dc->type == DEMANGLE_COMPONENT_CLONE) {
		const struct demangle_component *r = dc->u.s_binary.right;

		if (r && r->type == DEMANGLE_COMPONENT_NAME)
			suffix = r->u.s_name.s;
		dc = dc->u.s_binary.left;
	}
	return suffix;
}

/*
 * C++ names are parsed into a tree on the heap and printed from it:
 * cplus_demangle_v3_callback() keeps the tree on the stack and so refuses
 * names over 1024 bytes (perf and c++filt show those raw).
 *
 * Without parameters, the name is parsed twice: with DMGL_PARAMS first,
 * which checks that libiberty accepts all of it (without, it reads no
 * further than the function's name and ignores any bytes after it) and
 * finds the clone suffixes; then without, to print.
 */
static bool demangle_cxx(struct sink *s, const char *name, unsigned int flags)
{
	struct job j = {.name = name, .options = DMGL_PARAMS | CXX_OPTS};
	const char *suffix = NULL;
	void *mem = NULL;
	bool ok;

	j.dc = cplus_demangle_v3_components(name, j.options, &mem);
	if (j.dc && !(flags & FL_DEMANGLE_PARAMS)) {
		suffix = cxx_clone_suffix(j.dc);
		free(mem);
		mem = NULL;
		j.options = CXX_OPTS;
		j.dc = cplus_demangle_v3_components(name, j.options, &mem);
	}
	ok = j.dc && run_demangler(s, cxx_print_job, &j);
	free(mem);
	if (ok && suffix)
		sink_put(s, suffix, strlen(suffix)); /* bounded: the name is */
	return ok;
}

bool fl_demangle__is_mangled(const char *name)
{
	return name && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

int fl_demangle_flags(const char *name, unsigned int flags, char *buf, size_t size)
{
	struct sink s = {.buf = buf, .size = size};

	if (!name || !buf || !size || (flags & ~(unsigned int)FL_DEMANGLE_PARAMS))
		return -EINVAL;

	if (fl_demangle__is_mangled(name) &&
	    strnlen(name, FL_DEMANGLE_MAX_NAME + 1) <= FL_DEMANGLE_MAX_NAME) {
		/*
		 * Rust first, as cplus_demangle() does: a legacy Rust name is
		 * also a valid C++ name (with the hash as its last component).
		 * No DMGL_VERBOSE: it would keep the hashes.
		 */
		struct job rust = {.name = name};

		if (run_demangler(&s, rust_job, &rust))
			return sink_finish(&s, FL_DEMANGLE_DONE);
		if (name[1] == 'Z' && demangle_cxx(&s, name, flags))
			return sink_finish(&s, FL_DEMANGLE_DONE);
	}
	sink_reset(&s);
	sink_put(&s, name, strlen(name));
	return sink_finish(&s, FL_DEMANGLE_RAW);
}

int fl_demangle(const char *name, char *buf, size_t size)
{
	return fl_demangle_flags(name, 0, buf, size);
}
