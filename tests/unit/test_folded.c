// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the folded writer: golden output, line syntax, order, hostile names, errors. */
#include <errno.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flamed/formats/folded.h"
#include "flamed/profile/profile.h"

#ifndef FIXTURE_SRC_DIR
#error "FIXTURE_SRC_DIR must name the source tests/fixtures directory"
#endif

static struct fl_profile *new_profile(void)
{
	struct fl_profile *p = NULL;

	assert_int_equal(fl_profile__new(&p), 0);
	return p;
}

static uint32_t intern_len(struct fl_profile *p, const char *s, size_t len)
{
	uint32_t id = UINT32_MAX;

	assert_int_equal(fl_profile__intern(p, s, len, &id), 0);
	return id;
}

/* Adds a stack given as NULL-terminated raw names, root first. */
static void add_names(struct fl_profile *p, uint64_t count, const char *const *names)
{
	uint32_t fr[64];
	size_t n = 0;

	for (; names[n]; n++) {
		assert_true(n < 64);
		fr[n] = intern_len(p, names[n], strlen(names[n]));
	}
	assert_int_equal(fl_profile__add(p, fr, n, count), 0);
}

#define ADD(p, count, ...) add_names(p, count, (const char *const[]){ __VA_ARGS__, NULL })

/* The writer's output as one NUL-terminated buffer. */
static char *write_folded(const struct fl_profile *p, size_t *len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	assert_non_null(f);
	assert_int_equal(fl_folded__write(p, f), 0);
	assert_int_equal(fclose(f), 0);
	if (len)
		*len = size;
	return buf;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long size;

	if (!f)
		fail_msg("cannot open %s", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	assert_true(size >= 0);
	rewind(f);
	buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
	buf[size] = '\0';
	fclose(f);
	*len = (size_t)size;
	return buf;
}

/*
 * The reference: every line built as text, sorted with strcmp() on the
 * stack part. Slow and obviously right, to hold the rank-based sort to.
 */
struct ref_line {
	char *stack;
	uint64_t count;
};

struct ref {
	const struct fl_profile *p;
	struct ref_line *lines;
	size_t nr;
};

static int ref_collect(const uint32_t *frames, size_t n, uint64_t count, void *ctx)
{
	struct ref *r = ctx;
	size_t len = 0, i;
	char *s;

	for (i = 0; i < n; i++)
		len += strlen(fl_profile__name(r->p, frames[i])) + 1;
	s = malloc(len + 1);
	assert_non_null(s);
	s[0] = '\0';
	for (i = 0; i < n; i++) {
		if (i)
			strcat(s, ";");
		strcat(s, fl_profile__name(r->p, frames[i]));
	}
	r->lines[r->nr].stack = s;
	r->lines[r->nr].count = count;
	r->nr++;
	return 0;
}

static int ref_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ref_line *)a)->stack, ((const struct ref_line *)b)->stack);
}

static char *reference_folded(const struct fl_profile *p)
{
	struct ref r = { .p = p };
	char *out = NULL;
	size_t size = 0, i;
	FILE *f;

	r.lines = calloc(fl_profile__nr_stacks(p) + 1, sizeof(*r.lines));
	assert_non_null(r.lines);
	assert_int_equal(fl_profile__for_each(p, ref_collect, &r), 0);
	qsort(r.lines, r.nr, sizeof(*r.lines), ref_cmp);
	f = open_memstream(&out, &size);
	assert_non_null(f);
	for (i = 0; i < r.nr; i++) {
		fprintf(f, "%s %llu\n", r.lines[i].stack, (unsigned long long)r.lines[i].count);
		free(r.lines[i].stack);
	}
	assert_int_equal(fclose(f), 0);
	free(r.lines);
	return out;
}

/*
 * Checks the syntax of every line, that the stacks are strictly increasing
 * and that the counts add up to the profile's total.
 */
static void check_lines(const struct fl_profile *p, char *out)
{
	regex_t re;
	char *line, *save = NULL, *prev = NULL;
	size_t nr = 0;
	uint64_t sum = 0;

	assert_int_equal(regcomp(&re, "^[^\n;]+(;[^\n;]+)* [0-9]+$", REG_EXTENDED | REG_NOSUB), 0);
	assert_true(!*out || out[strlen(out) - 1] == '\n');
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');

		if (regexec(&re, line, 0, NULL, 0) != 0)
			fail_msg("malformed line: '%s'", line);
		assert_non_null(sp);
		sum += strtoull(sp + 1, NULL, 10);
		*sp = '\0';
		if (prev && strcmp(prev, line) >= 0)
			fail_msg("out of order: '%s' then '%s'", prev, line);
		prev = line;
		nr++;
	}
	regfree(&re);
	assert_int_equal(nr, fl_profile__nr_stacks(p));
	assert_true(sum == fl_profile__total(p));
}

static struct fl_profile *basic_profile(void)
{
	struct fl_profile *p = new_profile();

	ADD(p, 10, "bash", "main", "foo");
	ADD(p, 3, "bash", "main", "foo", "fooz");
	ADD(p, 2, "bash", "main", "foo!");
	ADD(p, 1, "bash", "main", "foo(");
	ADD(p, 4, "bash", "main", "fooz");
	ADD(p, 5, "bash", "main", "foo!", "x;y");
	ADD(p, 2, "bash", "main.cold");
	ADD(p, 1, "bash");
	ADD(p, 1, "bash", "");
	ADD(p, 7, "python3", "_start", "__libc_start_main", "main");
	ADD(p, 1, "python3", "[unknown]");
	ADD(p, 2, "python3", "a b", "do_syscall_64_[k]");
	ADD(p, 9, "python3", "evil;x;y 99\nroot;z 1\n");
	ADD(p, 6, "python3", "main.cold");
	/* Same stacks again: the lines carry the sums. */
	ADD(p, 90, "bash", "main", "foo");
	ADD(p, 1, "python3", "[unknown]");
	ADD(p, 12345678901234ULL, "perl", "Perl_runops_standard", "Perl_pp_sort");
	return p;
}

static void test_golden_basic(void **state)
{
	struct fl_profile *p = basic_profile();
	char *out, *golden, *ref;
	size_t len, glen;

	(void)state;
	out = write_folded(p, &len);
	golden = read_file(FIXTURE_SRC_DIR "/golden/basic.folded", &glen);
	if (len != glen || memcmp(out, golden, len) != 0)
		fail_msg("output differs from golden/basic.folded:\n%s", out);
	/* The golden file and the reference writer agree too. */
	ref = reference_folded(p);
	assert_string_equal(out, ref);
	check_lines(p, out);
	free(ref);
	free(golden);
	free(out);
	fl_profile__free(p);
}

static void test_empty_profile(void **state)
{
	struct fl_profile *p = new_profile();
	size_t len = 1;
	char *out;

	(void)state;
	intern_len(p, "unused", 6);
	out = write_folded(p, &len);
	assert_int_equal(len, 0);
	free(out);
	fl_profile__free(p);
}

static void test_hostile_name(void **state)
{
	struct fl_profile *p = new_profile();
	char *out;

	(void)state;
	ADD(p, 1, "root", "evil;x;y 99\nroot;z 1\n");
	ADD(p, 2, "\n", ";", "\r\n");
	ADD(p, 3, "a", "b 7\nc");
	out = write_folded(p, NULL);
	assert_string_equal(out, "?;:;?? 2\n"
				 "a;b 7?c 3\n"
				 "root;evil:x:y 99?root:z 1? 1\n");
	check_lines(p, out);
	free(out);
	fl_profile__free(p);
}

/* Same stacks, names interned and stacks added in another order: the same bytes. */
static void test_deterministic(void **state)
{
	struct fl_profile *a = basic_profile(), *b = new_profile();
	char *oa, *ob;

	(void)state;
	ADD(b, 12345678901234ULL, "perl", "Perl_runops_standard", "Perl_pp_sort");
	ADD(b, 6, "python3", "main.cold");
	ADD(b, 9, "python3", "evil;x;y 99\nroot;z 1\n");
	ADD(b, 2, "python3", "a b", "do_syscall_64_[k]");
	ADD(b, 2, "python3", "[unknown]");
	ADD(b, 7, "python3", "_start", "__libc_start_main", "main");
	ADD(b, 1, "bash", "");
	ADD(b, 1, "bash");
	ADD(b, 2, "bash", "main.cold");
	ADD(b, 5, "bash", "main", "foo!", "x;y");
	ADD(b, 4, "bash", "main", "fooz");
	ADD(b, 1, "bash", "main", "foo(");
	ADD(b, 2, "bash", "main", "foo!");
	ADD(b, 3, "bash", "main", "foo", "fooz");
	ADD(b, 100, "bash", "main", "foo");
	oa = write_folded(a, NULL);
	ob = write_folded(b, NULL);
	assert_string_equal(oa, ob);
	free(oa);
	free(ob);
	fl_profile__free(a);
	fl_profile__free(b);
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/*
 * Random profiles over short names from an alphabet chosen around ';' (0x3b):
 * names that are prefixes of each other, bytes below and above ';', and raw
 * ';' and newlines the profile must rewrite. The writer must match the
 * reference byte for byte.
 */
static void test_random_profiles(void **state)
{
	static const char alphabet[] = "ab!:.~ ;\n<(z\x01";
	uint64_t seed = 0x0123456789abcdefULL;
	int round;

	(void)state;
	for (round = 0; round < 300; round++) {
		struct fl_profile *p = new_profile();
		uint32_t names[40], fr[8];
		size_t nr_names = 2 + rng_next(&seed) % 39, i, k;
		size_t nr_stacks = 1 + rng_next(&seed) % 400;
		char *out, *ref;

		for (i = 0; i < nr_names; i++) {
			char name[5];
			size_t len = rng_next(&seed) % 5;

			for (k = 0; k < len; k++)
				name[k] = alphabet[rng_next(&seed) % (sizeof(alphabet) - 1)];
			names[i] = intern_len(p, name, len);
		}
		for (i = 0; i < nr_stacks; i++) {
			size_t n = 1 + rng_next(&seed) % 6;

			for (k = 0; k < n; k++)
				fr[k] = names[rng_next(&seed) % nr_names];
			assert_int_equal(fl_profile__add(p, fr, n, 1 + rng_next(&seed) % 1000), 0);
		}
		out = write_folded(p, NULL);
		ref = reference_folded(p);
		if (strcmp(out, ref) != 0)
			fail_msg("round %d differs from the reference:\n%s\n--- reference:\n%s",
				 round, out, ref);
		check_lines(p, out);
		free(out);
		free(ref);
		fl_profile__free(p);
	}
}

/* A line longer than any internal buffer still comes out whole. */
static void test_huge_name(void **state)
{
	struct fl_profile *p = new_profile();
	size_t big = 300000, i; /* more than the writer's buffer */
	uint32_t fr[3];
	char *name, *out, *ref;

	(void)state;
	name = malloc(big);
	assert_non_null(name);
	for (i = 0; i < big; i++)
		name[i] = (char)('a' + i % 26);
	fr[0] = intern_len(p, "root", 4);
	fr[1] = intern_len(p, name, big);
	fr[2] = intern_len(p, name, big / 2);
	for (i = 0; i < 40; i++) {
		char leaf[16];

		snprintf(leaf, sizeof(leaf), "leaf%zu", i);
		fr[2] = intern_len(p, leaf, strlen(leaf));
		assert_int_equal(fl_profile__add(p, fr, i % 2 ? 3 : 2, i + 1), 0);
	}
	out = write_folded(p, NULL);
	ref = reference_folded(p);
	assert_true(strcmp(out, ref) == 0);
	check_lines(p, out);
	free(out);
	free(ref);
	free(name);
	fl_profile__free(p);
}

static void test_write_errors(void **state)
{
	struct fl_profile *p = basic_profile();
	FILE *f;

	(void)state;
	assert_int_equal(fl_folded__write(NULL, stdout), -EINVAL);
	assert_int_equal(fl_folded__write(p, NULL), -EINVAL);
	/* /dev/full: every write fails with ENOSPC, which the writer reports as -EIO. */
	f = fopen("/dev/full", "w");
	if (f) {
		assert_int_equal(fl_folded__write(p, f), -EIO);
		fclose(f);
	}
	/* A stream opened for reading only. */
	f = fopen("/dev/null", "r");
	assert_non_null(f);
	assert_int_equal(fl_folded__write(p, f), -EIO);
	fclose(f);
	fl_profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_basic),
		cmocka_unit_test(test_empty_profile),
		cmocka_unit_test(test_hostile_name),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_random_profiles),
		cmocka_unit_test(test_huge_name),
		cmocka_unit_test(test_write_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
