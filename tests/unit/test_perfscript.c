// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for lib/formats/perfscript.c: headers, stack lines, and text cut anywhere. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "flamed/formats/perfscript.h"

static bool str_is(struct fl_ps_str s, const char *want)
{
	return s.len == strlen(want) && !memcmp(s.s, want, s.len);
}

#define assert_str(field, want)                                                                    \
	do {                                                                                       \
		struct fl_ps_str got_ = (field);                                                   \
		if (!str_is(got_, (want)))                                                         \
			fail_msg("got '%.*s', want '%s'", (int)got_.len, got_.s, (want));          \
	} while (0)

static void header(const char *line, struct fl_ps_sample *out)
{
	assert_true(fl_perfscript__parse_header(line, strlen(line), out));
}

static void test_headers(void **state)
{
	struct fl_ps_sample s;

	(void)state;
	/* perf 6.1's default: comm, tid, cpu, time, period, event. */
	header("chains 21322 [001] 25293.952045:     250000 cpu-clock:pppH: ", &s);
	assert_str(s.comm, "chains");
	assert_str(s.tid, "21322");
	assert_int_equal(s.pid.len, 0);
	assert_str(s.event, "cpu-clock:pppH");
	assert_int_equal(s.period, 250000);
	/* Spaces in the name, pid/tid. */
	header("Web Content 1234/1240 [000] 1.000001: 10101010 cpu-clock: ", &s);
	assert_str(s.comm, "Web Content");
	assert_str(s.pid, "1234");
	assert_str(s.tid, "1240");
	assert_int_equal(s.period, 10101010);
	/* Old perf: no period. */
	header("perf 77 12.345678: cycles:", &s);
	assert_str(s.event, "cycles");
	assert_int_equal(s.period, 0);
	/* -F comm,tid,time: the time's ':' is not an event. */
	header("perf 77 12.345678:", &s);
	assert_int_equal(s.event.len, 0);
	assert_int_equal(s.period, 0);
	/* A pid/tid must be followed by a blank, as the script's pattern wants. */
	assert_false(fl_perfscript__parse_header("kworker/0:1 12/12", 17, &s));
	header("kworker/0:1 12/12 ", &s);
	assert_str(s.comm, "kworker/0:1");
	assert_str(s.pid, "12");
	/* A name that holds digits after a space: the first pid-shaped field wins. */
	header("my 2 proc 55 [000] 3.5: 1 task-clock:", &s);
	assert_str(s.comm, "my");
	assert_str(s.tid, "2");
	assert_str(s.event, "task-clock");
	/* A sample of an unknown thread: the period is the first pid-shaped field. */
	header(":-1    -1 [000] 26666.279963:    1001001 cpu-clock:pppH: ", &s);
	assert_str(s.comm, ":-1    -1 [000] 26666.279963:");
	assert_str(s.tid, "1001001");
	assert_str(s.event, "cpu-clock:pppH");
	assert_int_equal(s.period, 1001001);
	/* swapper under -F +pid: a tid of 0 leaves the pid unknown, as in the script. */
	header("swapper     0/0     [001] 2.0:     100000 cpu-clock: ", &s);
	assert_str(s.comm, "swapper");
	assert_str(s.tid, "0");
	assert_int_equal(s.pid.len, 0);
	/* '/'s without a tid; the tid's digits after several '/'s. */
	header("p 5/ [0] 1.0: 1 e:", &s);
	assert_str(s.tid, "5");
	assert_int_equal(s.pid.len, 0);
	header("p 5//6 [0] 1.0: 1 e:", &s);
	assert_str(s.pid, "5");
	assert_str(s.tid, "6");
	/* A one-byte comm, and a blank run right after it. */
	header("a 1/1 [000] 1.0: 1 cpu-clock:", &s);
	assert_str(s.comm, "a");
	header("a  7 [000] 1.0: 1 cpu-clock:", &s);
	assert_str(s.comm, "a");
	assert_str(s.tid, "7");
	/* The event: the run before the last ':', after blanks, a period, blanks, a ':'. */
	header("p 1 1.0:3 ev: ", &s);
	assert_str(s.event, "ev");
	assert_int_equal(s.period, 3);
	header("p 1 1.0 3 ev:", &s);
	assert_int_equal(s.event.len, 0);
	header("p 1 [0] 1.0: 1 cpu-clock:  4005d0 main (/x)", &s);
	assert_int_equal(s.event.len, 0);
	/* No pid: not a header. */
	assert_false(fl_perfscript__parse_header("garbage line", 12, &s));
	assert_false(fl_perfscript__parse_header("x", 1, &s));
	assert_false(fl_perfscript__parse_header(" a 1 ", 5, &s));
}

static void frame(const char *l, const char *addr, const char *sym, const char *mod)
{
	struct fl_ps_frame f;

	assert_true(fl_perfscript__parse_frame(l, strlen(l), &f));
	assert_str(f.addr, addr);
	assert_str(f.sym, sym);
	if (mod) {
		assert_true(f.has_mod);
		assert_str(f.mod, mod);
	} else {
		assert_false(f.has_mod);
	}
}

/* Where stackcollapse-perf.pl's backtracking pattern puts the address, symbol and module. */
static void test_frames_as_the_script(void **state)
{
	(void)state;
	frame("\t    4005d0 main+0x1f (/usr/bin/x)", "4005d0", "main", "/usr/bin/x");
	/* Not indented. */
	frame("4005d0 main (/usr/bin/x)", "4005d0", "main", "/usr/bin/x");
	/* perf's empty symbol: two blanks, the symbol is the second. */
	frame("\t7f1e2215d058  (/lib/libc-2.15.so)", "7f1e2215d058", " ", "/lib/libc-2.15.so");
	/* The last " (" whose non-blanks hold a ')'; the module ends at the last ')' there. */
	frame("  1 f (a) g (m)", "1", "f (a) g", "m");
	frame("  1 f (m) trailing words", "1", "f", "m");
	frame("  1 f (m)x)", "1", "f", "m)x");
	frame("  1 f ()", "1", "f", "");
	/* Two blanks before the module: the symbol keeps one. */
	frame("  1 f  (m)", "1", "f ", "m");
	/* Any word is an address; the symbol starts after blanks. */
	frame("  beef_stew chunky (m)", "beef_stew", "chunky", "m");
	frame("  not-hex frame (m)", "not", "-hex frame", "m");
	/* Only lower-case hex digits make an offset. */
	frame("  1 upper+0x1F (m)", "1", "upper+0x1F", "m");
	frame("  1 a+0x (m)", "1", "a+0x", "m");
	frame("  1 f+0x1+0x2 (m)", "1", "f+0x1", "m");
}

/* Where flamed reads more than the script's pattern does (flamed(1) lists them). */
static void test_frames_beyond_the_script(void **state)
{
	struct fl_ps_frame f;
	const char *l;

	(void)state;
	/* A module with blanks (the script drops the line). */
	frame("\t    7f12ab34 inline_outer+0x2f (/usr/bin/my prog)", "7f12ab34", "inline_outer",
	      "/usr/bin/my prog");
	/* A deleted library (the script: symbol "foo (/tmp/a.out", module "deleted)"). */
	frame("  400123 foo (/tmp/a.out (deleted))", "400123", "foo", "/tmp/a.out (deleted)");
	frame("  400123 foo+0x10 (/tmp/a b.so (deleted))", "400123", "foo", "/tmp/a b.so (deleted)");
	/* -F ip,sym: no module (the script drops the line); C++ parameters stay the symbol's. */
	frame("  400123 ns::f(int)", "400123", "ns::f(int)", NULL);
	frame("\t    7f00000f0000", "7f00000f0000", "[unknown]", NULL);
	/* -F ip,dso: an address, one blank, the module (the script: address "15c", symbol "7"). */
	frame("\t    15c7 (/usr/bin/x)", "15c7", "[unknown]", "/usr/bin/x");
	l = "  1 a+0x2f (m)";
	assert_true(fl_perfscript__parse_frame(l, strlen(l), &f));
	assert_true(f.has_offset);
	assert_int_equal(f.offset, 0x2f);
	/* Not a stack line: no address, nothing in parentheses, blanks only. */
	l = "    some source line: 12";
	assert_false(fl_perfscript__parse_frame(l, strlen(l), &f));
	assert_false(fl_perfscript__parse_frame(" \t ", 3, &f));
	assert_false(fl_perfscript__parse_frame("", 0, &f));
}

struct seen {
	int samples;
	size_t frames;
	uint64_t period_sum;
	char first_comm[64];
	char leaf[64];
};

static int on_sample(const struct fl_ps_sample *s, void *ctx)
{
	struct seen *v = ctx;

	if (!v->samples)
		snprintf(v->first_comm, sizeof(v->first_comm), "%.*s", (int)s->comm.len, s->comm.s);
	if (s->nr_frames)
		snprintf(v->leaf, sizeof(v->leaf), "%.*s", (int)s->frames[0].sym.len,
			 s->frames[0].sym.s);
	v->samples++;
	v->frames += s->nr_frames;
	v->period_sum += s->period;
	return 0;
}

static const char text[] = "# ========\r\n"
			   "# captured on: x\r\n"
			   "a b 10/11 [000] 1.0: 5 cpu-clock: \r\n"
			   "\t1 leaf+0x1 (/bin/x)\r\n"
			   "\t2 main (/bin/x)\r\n"
			   "\r\n"
			   "\t3 orphan (/bin/x)\n"
			   "not a header at all\n"
			   "\t4 dropped (/bin/x)\n"
			   "\n"
			   "c 12 [001] 2.0: 7 cpu-clock: \n"
			   "\t5 other (/bin/y)\n"
			   "d 13 [001] 3.0: 9 cpu-clock: \n"
			   "\t6 last (/bin/y)";

/* The same samples whatever the chunks. */
static void test_chunks(void **state)
{
	(void)state;
	for (size_t step = 1; step <= sizeof(text); step++) {
		struct fl_perfscript *p;
		struct fl_ps_stats st;
		struct seen v = {};

		assert_int_equal(fl_perfscript__new(on_sample, &v, &p), 0);
		for (size_t off = 0; off < sizeof(text) - 1; off += step) {
			size_t n = sizeof(text) - 1 - off < step ? sizeof(text) - 1 - off : step;

			assert_int_equal(fl_perfscript__feed(p, text + off, n), 0);
		}
		assert_int_equal(fl_perfscript__finish(p), 0);
		fl_perfscript__stats(p, &st);
		assert_int_equal(v.samples, 3);
		assert_int_equal(v.frames, 4);
		assert_int_equal(v.period_sum, 5 + 7 + 9);
		assert_string_equal(v.first_comm, "a b");
		assert_string_equal(v.leaf, "last");
		/* The orphan stack line and the bad header; its stack line is dropped with it. */
		assert_int_equal(st.unrecognized, 2);
		assert_int_equal(st.dropped, 1);
		assert_int_equal(st.too_long, 0);
		fl_perfscript__free(p);
	}
}

/* A line over the cap is skipped with its sample, and the parser goes on. */
static void test_long_line(void **state)
{
	size_t big = FL_PS_MAX_LINE + 100;
	char *buf = malloc(big + 200);
	struct fl_perfscript *p;
	struct fl_ps_stats st;
	struct seen v = {};
	size_t n = 0;

	(void)state;
	assert_non_null(buf);
	n += (size_t)sprintf(buf + n, "x 1 [0] 1.0: 1 e:\n\t1 ");
	memset(buf + n, 'a', big);
	n += big;
	n += (size_t)sprintf(buf + n, " (m)\n\t2 f (m)\n\ny 2 [0] 2.0: 1 e:\n\t3 g (m)\n");
	assert_int_equal(fl_perfscript__new(on_sample, &v, &p), 0);
	/* In 4 KiB chunks: the long line spans many. */
	for (size_t off = 0; off < n; off += 4096)
		assert_int_equal(fl_perfscript__feed(p, buf + off, n - off < 4096 ? n - off : 4096),
				 0);
	assert_int_equal(fl_perfscript__finish(p), 0);
	fl_perfscript__stats(p, &st);
	assert_int_equal(st.too_long, 1);
	assert_int_equal(v.samples, 1);
	assert_string_equal(v.leaf, "g");
	fl_perfscript__free(p);
	free(buf);
}

static int stop_cb(const struct fl_ps_sample *s, void *ctx)
{
	(void)s;
	(void)ctx;
	return 42;
}

static void test_callback_stops(void **state)
{
	struct fl_perfscript *p;

	(void)state;
	assert_int_equal(fl_perfscript__new(stop_cb, NULL, &p), 0);
	assert_int_equal(fl_perfscript__feed(p, "a 1 [0] 1.0: 1 e:\n\n", 19), 42);
	fl_perfscript__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_frames_as_the_script),
		cmocka_unit_test(test_frames_beyond_the_script),
		cmocka_unit_test(test_chunks),	       cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_callback_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
