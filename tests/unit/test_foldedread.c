// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the folded reader: good and malformed lines, counts, chunked reads, long lines. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/formats/foldedread.h"

struct got {
	char stack[256][64];
	double c0[256], c1[256];
	unsigned nc[256];
	size_t lineno[256];
	size_t n;
	double sum;
	size_t bytes;
};

static int collect(const struct fl_folded_line *l, void *ctx)
{
	struct got *g = ctx;

	g->sum += l->count[l->nr_counts - 1];
	g->bytes += l->len;
	if (g->n < 256) {
		size_t k = l->len < 63 ? l->len : 63;

		memcpy(g->stack[g->n], l->stack, k);
		g->stack[g->n][k] = '\0';
		g->c0[g->n] = l->count[0];
		g->c1[g->n] = l->count[1];
		g->nc[g->n] = l->nr_counts;
		g->lineno[g->n] = l->lineno;
	}
	g->n++;
	return 0;
}

static void parse_str(const char *s, struct got *g, struct fl_folded_stats *st)
{
	memset(g, 0, sizeof(*g));
	assert_int_equal(fl_folded__parse(s, strlen(s), collect, g, st), 0);
}

static void test_good_lines(void **state)
{
	struct fl_folded_stats st;
	struct got g;

	(void)state;
	parse_str("a;b;c 5\n"
		  "ns::f(int, char) const;g 7\n"
		  "frac 1.5\n"
		  "dot 3.\n"
		  "tabs\t\t9\n"
		  "trail 4  \n"
		  "diff;x 3 5\n"
		  "zero 0\n"
		  "last 2",
		  &g, &st);
	assert_int_equal(st.nr_bad, 0);
	assert_int_equal(st.good, 9);
	assert_int_equal(st.lines, 9);
	assert_int_equal(g.n, 9);
	assert_string_equal(g.stack[0], "a;b;c");
	assert_true(g.c0[0] == 5 && g.nc[0] == 1);
	assert_string_equal(g.stack[1], "ns::f(int, char) const;g");
	assert_true(g.c0[1] == 7);
	assert_true(g.c0[2] == 1.5);
	assert_true(g.c0[3] == 3);
	/* One blank ends the stack; the others are its (flamegraph.pl's "p;u  3" is "p;u "). */
	assert_string_equal(g.stack[4], "tabs\t");
	assert_true(g.c0[4] == 9);
	assert_string_equal(g.stack[5], "trail");
	assert_string_equal(g.stack[6], "diff;x");
	assert_int_equal(g.nc[6], 2);
	assert_true(g.c0[6] == 3 && g.c1[6] == 5);
	assert_true(g.c0[7] == 0);
	assert_string_equal(g.stack[8], "last");
	assert_int_equal(g.lineno[8], 9);
}

static void test_malformed(void **state)
{
	struct fl_folded_stats st;
	struct got g;
	static const char in[] = "good 1\n"
				 "\n"				  /* 2 blank */
				 "   \n"			  /* 3 blank */
				 "no count here\n"		  /* 4 */
				 "neg -5\n"			  /* 5 */
				 "crlf 5\r\n"			  /* 6 */
				 " 5\n"				  /* 7 no stack */
				 "foo5\n"			  /* 8 no count: part of the name */
				 "x 1.2.3\n"			  /* 9 */
				 "huge 1e999\n"			  /* 10 no count */
				 ".5\n"				  /* 11 */
				 "good 2\n";

	(void)state;
	parse_str(in, &g, &st);
	assert_int_equal(st.lines, 12);
	assert_int_equal(st.good, 2);
	assert_int_equal(g.n, 2);
	assert_true(g.sum == 3);
	assert_int_equal(st.nr_bad, 10);
	assert_int_equal(st.bad[FL_FOLDED_BLANK], 2);
	assert_int_equal(st.bad[FL_FOLDED_NEGATIVE], 1);
	assert_int_equal(st.bad[FL_FOLDED_CRLF], 1);
	assert_int_equal(st.bad[FL_FOLDED_NO_STACK], 1);
	assert_int_equal(st.bad[FL_FOLDED_NO_COUNT], 5);
	assert_int_equal(st.first_bad_line[0], 2);
	assert_int_equal(st.first_bad_line[1], 3);
	assert_int_equal(st.first_bad_line[2], 4);
	assert_int_equal(st.first_bad_kind[2], FL_FOLDED_NO_COUNT);
	assert_string_equal(fl_folded__bad_name(FL_FOLDED_CRLF), "CRLF line ending");
}

/*
 * A count alone has no stack (it once gave one of SIZE_MAX bytes, starting
 * before the line: found by fuzz_folded); a line of two numbers is a stack
 * and its count, not a differential line without a stack.
 */
static void test_count_alone(void **state)
{
	struct fl_folded_stats st;
	struct got g;

	(void)state;
	parse_str("42\n5 3\n 7 8\na 1\n", &g, &st);
	assert_int_equal(st.lines, 4);
	assert_int_equal(st.bad[FL_FOLDED_NO_STACK], 1);
	assert_int_equal(st.first_bad_line[0], 1);
	assert_int_equal(g.n, 3);
	assert_string_equal(g.stack[0], "5");
	assert_true(g.c0[0] == 3 && g.nc[0] == 1);
	assert_string_equal(g.stack[1], " 7");
	assert_true(g.c0[1] == 8 && g.nc[1] == 1);
	assert_string_equal(g.stack[2], "a");
	assert_int_equal(g.bytes, 1 + 2 + 1);
}

/* Counts past 2^53 are read (flamegraph.pl draws them); only one past a double's range is not. */
static void test_huge_counts(void **state)
{
	struct fl_folded_stats st;
	struct got g;
	char big[400];

	(void)state;
	parse_str("a 99999999999999999999999\nb 18446744073709551616 18446744073709551617\n", &g,
		  &st);
	assert_int_equal(st.nr_bad, 0);
	assert_true(fabs(g.c0[0] - 1e23) < 1e23 * 1e-12);
	assert_int_equal(g.nc[1], 2);
	assert_true(g.c0[1] == 18446744073709551616.0);
	memset(big, '9', sizeof(big) - 1);
	memcpy(big, "x ", 2);
	big[sizeof(big) - 1] = '\0';
	parse_str(big, &g, &st);
	assert_int_equal(st.bad[FL_FOLDED_HUGE], 1);
}

/* The stack keeps blanks at its end but the one before the count: "p;u  3" and "p;u ;x 5" share "u ". */
static void test_trailing_blank_kept(void **state)
{
	struct fl_folded_stats st;
	struct got g;

	(void)state;
	parse_str("p;u  3\np;u ;x 5\np;u 2 1\np;u 2  1\np;u  2 1\n", &g, &st);
	assert_int_equal(g.n, 5);
	assert_string_equal(g.stack[0], "p;u ");
	assert_string_equal(g.stack[1], "p;u ;x");
	assert_string_equal(g.stack[2], "p;u");
	assert_int_equal(g.nc[2], 2);
	/* Two blanks between the numbers: the first is the stack's, one count. */
	assert_string_equal(g.stack[3], "p;u 2 ");
	assert_int_equal(g.nc[3], 1);
	assert_string_equal(g.stack[4], "p;u ");
	assert_int_equal(g.nc[4], 2);
}

/* A '-' inside the last frame is part of the name, not a sign. */
static void test_dash_in_name(void **state)
{
	struct fl_folded_stats st;
	struct got g;

	(void)state;
	parse_str("bash-1234 5\njava;pool-1-thread-1 7\ncpu-7 3 4\nneg -2\n", &g, &st);
	assert_int_equal(g.n, 3);
	assert_string_equal(g.stack[0], "bash-1234");
	assert_int_equal(g.nc[0], 1);
	assert_string_equal(g.stack[1], "java;pool-1-thread-1");
	assert_true(g.c0[1] == 7);
	assert_string_equal(g.stack[2], "cpu-7");
	assert_int_equal(g.nc[2], 2);
	assert_int_equal(st.bad[FL_FOLDED_NEGATIVE], 1);
}

static void test_nul_and_negative_before(void **state)
{
	struct fl_folded_stats st;
	struct got g;
	static const char in[] = "a\0b 5\nx -3 5\nok 1\n";

	(void)state;
	memset(&g, 0, sizeof(g));
	assert_int_equal(fl_folded__parse(in, sizeof(in) - 1, collect, &g, &st), 0);
	assert_int_equal(st.bad[FL_FOLDED_NUL], 1);
	assert_int_equal(st.bad[FL_FOLDED_NEGATIVE], 1);
	assert_int_equal(g.n, 1);
}

static int stop_at_two(const struct fl_folded_line *l, void *ctx)
{
	(void)ctx;
	return l->lineno == 2 ? -ECANCELED : 0;
}

static void test_callback_stops(void **state)
{
	struct fl_folded_stats st;

	(void)state;
	assert_int_equal(fl_folded__parse("a 1\nb 2\nc 3\n", 12, stop_at_two, NULL, &st),
			 -ECANCELED);
	assert_int_equal(st.good, 2);
}

/* A writer thread is not needed: a temporary file is read the same way as a pipe. */
static int temp_fd(void)
{
	char path[] = "/tmp/test_foldedread.XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

static void test_fd_chunks(void **state)
{
	struct fl_folded_stats st;
	struct got g;
	int fd = temp_fd();
	size_t lines = 200000, bytes = 0;
	double want = 0;
	FILE *f = fdopen(dup(fd), "w");

	(void)state;
	/* Over 4 MiB: several chunks, lines cut at every chunk boundary. */
	for (size_t i = 0; i < lines; i++) {
		int n = fprintf(f, "proc;frame_%zu;leaf_%zu %zu\n", i % 97, i, i % 13 + 1);

		bytes += (size_t)n;
		want += (double)(i % 13 + 1);
	}
	fclose(f);
	assert_true(bytes > 4u << 20);
	lseek(fd, 0, SEEK_SET);
	memset(&g, 0, sizeof(g));
	assert_int_equal(fl_folded__parse_fd(fd, collect, &g, &st), 0);
	close(fd);
	assert_int_equal(st.nr_bad, 0);
	assert_int_equal(g.n, lines);
	assert_true(g.sum == want);
	assert_string_equal(g.stack[0], "proc;frame_0;leaf_0");
}

/* The first bytes already read (to tell the format): they start the first line. */
static void test_fd_after_head(void **state)
{
	struct fl_folded_stats st;
	struct got g;
	int fd = temp_fd();
	static const char rest[] = "b;c 5\nx 2";

	(void)state;
	assert_int_equal(write(fd, rest, sizeof(rest) - 1), (ssize_t)sizeof(rest) - 1);
	lseek(fd, 0, SEEK_SET);
	memset(&g, 0, sizeof(g));
	assert_int_equal(fl_folded__parse_fd_after(fd, "a;", 2, collect, &g, &st), 0);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.stack[0], "a;b;c");
	assert_true(g.c0[0] == 5);
	assert_string_equal(g.stack[1], "x");
	assert_int_equal(st.lines, 2);
	/* The whole input in the head: fd at its end already. */
	memset(&g, 0, sizeof(g));
	assert_int_equal(fl_folded__parse_fd_after(fd, "q 1", 3, collect, &g, &st), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.stack[0], "q");
	close(fd);
}

static void test_fd_too_long(void **state)
{
	struct fl_folded_stats st;
	struct got g;
	int fd = temp_fd();
	size_t n = FL_FOLDED_MAX_LINE + 4096;
	char *big = malloc(n);

	(void)state;
	assert_non_null(big);
	memset(big, 'x', n);
	assert_int_equal(write(fd, "before 1\n", 9), 9);
	assert_int_equal(write(fd, big, n), (ssize_t)n);
	assert_int_equal(write(fd, " 5\nafter 2\n", 11), 11);
	/* And a long line at the very end, without a newline. */
	assert_int_equal(write(fd, big, n), (ssize_t)n);
	free(big);
	lseek(fd, 0, SEEK_SET);
	memset(&g, 0, sizeof(g));
	assert_int_equal(fl_folded__parse_fd(fd, collect, &g, &st), 0);
	close(fd);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.stack[0], "before");
	assert_string_equal(g.stack[1], "after");
	assert_int_equal(g.lineno[1], 3);
	assert_int_equal(st.bad[FL_FOLDED_TOO_LONG], 2);
	assert_int_equal(st.lines, 4);
}

/* A name of 64 KiB is long but fine. */
static void test_fd_long_name(void **state)
{
	struct fl_folded_stats st;
	struct got g;
	int fd = temp_fd();
	size_t n = 3u << 20; /* longer than one chunk */
	char *big = malloc(n);

	(void)state;
	assert_non_null(big);
	memset(big, 'y', n);
	assert_int_equal(write(fd, big, n), (ssize_t)n);
	assert_int_equal(write(fd, " 7\n", 3), 3);
	free(big);
	lseek(fd, 0, SEEK_SET);
	memset(&g, 0, sizeof(g));
	assert_int_equal(fl_folded__parse_fd(fd, collect, &g, &st), 0);
	close(fd);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.bytes, n);
	assert_true(g.sum == 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_lines),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_count_alone),
		cmocka_unit_test(test_dash_in_name),
		cmocka_unit_test(test_huge_counts),
		cmocka_unit_test(test_trailing_blank_kept),
		cmocka_unit_test(test_nul_and_negative_before),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_fd_chunks),
		cmocka_unit_test(test_fd_after_head),
		cmocka_unit_test(test_fd_too_long),
		cmocka_unit_test(test_fd_long_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
