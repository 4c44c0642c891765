// SPDX-License-Identifier: GPL-2.0-or-later
/* The pprof writer, read back with flamed's reader: stacks, lines, labels, hostile names. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flamed/formats/pprof.h"
#include "flamed/formats/pprofread.h"
#include "flamed/profile/profile.h"

/* What the reader gave back: "stack count" lines, in order. */
struct lines {
	char text[8192];
	size_t len;
};

static int collect(const struct fl_folded_line *l, void *ctx)
{
	struct lines *o = ctx;
	int n = snprintf(o->text + o->len, sizeof(o->text) - o->len, "%.*s %.0f\n", (int)l->len,
			 l->stack, l->count[0]);

	assert_true(n > 0 && (size_t)n < sizeof(o->text) - o->len);
	o->len += (size_t)n;
	return 0;
}

/* Writes p and reads it back (sample type type, NULL: the default) into o. */
static void round_trip(struct fl_pprof *p, const char *type, struct lines *o,
		       struct fl_pprof_read_info *info)
{
	struct fl_pprof_read_opts ro = {.sz = sizeof(ro), .sample_type = type};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fl_pprof__write(p, f), 0);
	assert_int_equal(fclose(f), 0);
	assert_true(len > 2 && (unsigned char)buf[0] == 0x1f && (unsigned char)buf[1] == 0x8b);
	assert_true(fl_pprof__detect(buf, len));
	memset(o, 0, sizeof(*o));
	assert_int_equal(fl_pprof__parse(buf, len, &ro, collect, o, info), 0);
	free(buf);
}

/* A stack of user code with inlined functions, the kernel, labels: as flamed's folded stacks. */
static void test_locations(void **state)
{
	struct fl_pprof_opts po = {.sz = sizeof(po), .period_ns = 10101010};
	struct fl_pprof_read_info info;
	struct fl_pprof *p;
	struct fl_pprof_line lines[3];
	uint32_t exe, kmap, f_main, f_outer, f_inl, f_k, loc_main, loc_outer, loc_k, stack[3];
	struct lines o;
	static const uint8_t bid[] = {0xde, 0xad, 0xbe, 0xef};
	struct fl_pprof_labels lab = {.comm = "app", .pid = 42, .tid = -1};

	(void)state;
	assert_int_equal(fl_pprof__new(&po, &p), 0);
	assert_int_equal(fl_pprof__mapping(p, "/usr/bin/app", bid, sizeof(bid), 0x1000, 0x9000, 0,
					   &exe),
			 0);
	assert_int_equal(fl_pprof__mapping(p, "[kernel.kallsyms]", NULL, 0, 0xffff800000000000ull,
					   UINT64_MAX, 0, &kmap),
			 0);
	/* The same path and start: the same mapping. */
	assert_int_equal(fl_pprof__mapping(p, "/usr/bin/app", bid, sizeof(bid), 0x1000, 0x9000, 0,
					   &stack[0]),
			 0);
	assert_int_equal(stack[0], exe);
	assert_int_equal(fl_pprof__function(p, "main", NULL, "app.c", 8, &f_main), 0);
	assert_int_equal(fl_pprof__function(p, "ns::outer()", "_ZN2ns5outerEv", "app.c", 18, &f_outer), 0);
	assert_int_equal(fl_pprof__function(p, "inl", NULL, "app.h", 1, &f_inl), 0);
	assert_int_equal(fl_pprof__function(p, "do_syscall_64", NULL, NULL, 0, &f_k), 0);
	lines[0] = (struct fl_pprof_line){.function = f_main, .line = 10};
	assert_int_equal(fl_pprof__location(p, exe, 0x1100, lines, 1, &loc_main), 0);
	/* Innermost first: inl was inlined into ns::outer. */
	lines[0] = (struct fl_pprof_line){.function = f_inl, .line = 3};
	lines[1] = (struct fl_pprof_line){.function = f_outer, .line = 20};
	assert_int_equal(fl_pprof__location(p, exe, 0x1200, lines, 2, &loc_outer), 0);
	lines[0] = (struct fl_pprof_line){.function = f_k};
	assert_int_equal(fl_pprof__location(p, kmap, 0xffffffff81000000ull, lines, 1, &loc_k), 0);
	/* Leaf first. */
	stack[0] = loc_k;
	stack[1] = loc_outer;
	stack[2] = loc_main;
	assert_int_equal(fl_pprof__add(p, stack, 3, &lab, 2), 0);
	assert_int_equal(fl_pprof__add(p, stack, 3, &lab, 3), 0);
	assert_int_equal(fl_pprof__add(p, stack + 1, 2, NULL, 1), 0);
	assert_int_equal(fl_pprof__add(p, stack, 3, NULL, 0), -EINVAL);
	assert_int_equal(fl_pprof__total(p), 6);
	assert_int_equal(fl_pprof__nr_samples(p), 2);

	round_trip(p, NULL, &o, &info);
	assert_string_equal(o.text, "app-42;main;ns::outer();inl_[i];do_syscall_64_[k] 5\n"
				    "main;ns::outer();inl_[i] 1\n");
	assert_string_equal(info.type, "samples");
	assert_int_equal(info.period, 10101010);
	round_trip(p, "cpu", &o, &info);
	assert_string_equal(o.text, "app-42;main;ns::outer();inl_[i];do_syscall_64_[k] 50505050\n"
				    "main;ns::outer();inl_[i] 10101010\n");
	fl_pprof__free(p);
}

/* Names anyone can choose: invalid UTF-8 is made valid, separators cannot merge two functions. */
static void test_hostile_names(void **state)
{
	struct fl_pprof_opts po = {.sz = sizeof(po)};
	struct fl_pprof_read_info info;
	struct fl_pprof_line line = {0};
	uint32_t f1, f2, l1, l2, stack[2];
	struct fl_pprof *p;
	struct lines o;

	(void)state;
	assert_int_equal(fl_pprof__new(&po, &p), 0);
	/* "a\1b" + "c" and "a" + "b\1c" were one key once. */
	assert_int_equal(fl_pprof__function(p, "a\1b", "c", NULL, 0, &f1), 0);
	assert_int_equal(fl_pprof__function(p, "a", "b\1c", NULL, 0, &f2), 0);
	assert_int_not_equal(f1, f2);
	/* A lone continuation byte, a cut sequence, an overlong '/', and valid é and U+1F600. */
	assert_int_equal(fl_pprof__function(p, "x\x80y\xc3", "\xc0\xaf\xc3\xa9\xf0\x9f\x98\x80", NULL, 0,
					    &line.function),
			 0);
	assert_int_equal(fl_pprof__location(p, 0, 0, &line, 1, &l1), 0);
	line.function = f1;
	assert_int_equal(fl_pprof__location(p, 0, 0, &line, 1, &l2), 0);
	stack[0] = l1;
	stack[1] = l2;
	assert_int_equal(fl_pprof__add(p, stack, 2, &(struct fl_pprof_labels){.comm = "\xff" "comm",
									   .pid = -1,
									   .tid = -1},
				       7),
			 0);
	round_trip(p, NULL, &o, &info);
	/* The reader makes \1 a '?' as the folded stacks do. */
	assert_string_equal(o.text, "?comm;a?b;x?y? 7\n");
	fl_pprof__free(p);
}

/* Folded stacks to pprof: "_[i]" frames become lines of the location before, and come back. */
static void test_add_profile(void **state)
{
	struct fl_pprof_opts po = {.sz = sizeof(po)};
	struct fl_pprof_read_info info;
	struct fl_profile *prof;
	struct fl_pprof *p;
	uint32_t ids[5];
	struct lines o;
	static const char *const names[] = {"app", "main", "inl_[i]", "deeper_[i]", "leaf_[k]"};

	(void)state;
	assert_int_equal(fl_profile__new(&prof), 0);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(fl_profile__intern(prof, names[i], strlen(names[i]), &ids[i]), 0);
	assert_int_equal(fl_profile__add(prof, ids, 5, 4), 0);
	assert_int_equal(fl_profile__add(prof, ids, 2, 1), 0);
	assert_int_equal(fl_pprof__new(&po, &p), 0);
	assert_int_equal(fl_pprof__add_profile(p, prof), 0);
	round_trip(p, NULL, &o, &info);
	assert_true(strstr(o.text, "app;main;inl_[i];deeper_[i];leaf_[k] 4\n") != NULL);
	assert_true(strstr(o.text, "app;main 1\n") != NULL);
	fl_pprof__free(p);
	fl_profile__free(prof);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_locations),
		cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_add_profile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
