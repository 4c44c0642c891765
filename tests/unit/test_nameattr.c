// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for lib/formats/nameattr.c: flamegraph.pl's --nameattr files. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "flamed/formats/nameattr.h"

static struct fl_nameattr *parse_ok(const char *text, struct fl_nameattr_stats *st)
{
	struct fl_nameattr *na = NULL;
	size_t line = 99;
	const char *why = "x";

	assert_int_equal(fl_nameattr__parse(text, strlen(text), &na, st, &line, &why), 0);
	assert_non_null(na);
	assert_null(why);
	return na;
}

static void test_keys(void **state)
{
	struct fl_nameattr_stats st;
	struct fl_nameattr *na;
	const struct fl_nameattr_entry *e;

	(void)state;
	na = parse_ok("main\ttitle=The main loop\thref=https://x/?a=b=c\tclass=hot\tid=m\n"
		      "\n"
		      "work_[k]\ttarget=_blank\tg_extra=onclick=\"x()\"\ta_extra=y\tcolor=red\r\n"
		      "main\tid=second\n",
		      &st);
	assert_int_equal(st.lines, 4);
	assert_int_equal(st.entries, 2);
	assert_int_equal(st.raw_markup, 2);
	assert_int_equal(st.unknown, 1);
	/* A later line for a name wins, whole. */
	e = fl_nameattr__find(na, "main", 4);
	assert_non_null(e);
	assert_string_equal(e->id, "second");
	assert_null(e->title);
	/* Names are the frames' own, annotation included; the value is split at its first '='; CRLF. */
	e = fl_nameattr__find(na, "work_[k]", 8);
	assert_non_null(e);
	assert_string_equal(e->target, "_blank");
	assert_null(fl_nameattr__find(na, "work", 4));
	assert_null(fl_nameattr__find(na, "mai", 3));
	fl_nameattr__free(na);
	na = parse_ok("f\thref=https://x/?a=b=c\n", &st);
	assert_string_equal(fl_nameattr__find(na, "f", 1)->href, "https://x/?a=b=c");
	fl_nameattr__free(na);
	fl_nameattr__free(NULL);
}

static void bad(const char *text, size_t len, size_t want_line, const char *why_has)
{
	struct fl_nameattr_stats st;
	struct fl_nameattr *na = (void *)1;
	size_t line = 0;
	const char *why = NULL;

	assert_int_equal(fl_nameattr__parse(text, len, &na, &st, &line, &why), -EINVAL);
	assert_null(na);
	assert_int_equal(line, want_line);
	assert_non_null(why);
	if (!strstr(why, why_has))
		fail_msg("why '%s' lacks '%s'", why, why_has);
}

static void test_malformed(void **state)
{
	(void)state;
	bad("ok\tid=1\nno tab here\n", 20, 2, "no tab");
	bad("f\tid\n", 5, 1, "without '='");
	bad("f\thref= JavaScript:alert(1)\n", 28, 1, "javascript:");
	bad("f\thref=data:text/html,x\n", 24, 1, "data:");
	bad("a\tid=1\nb\tid=\0x\n", 15, 2, "NUL");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
