// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the pprof reader: profiles built here with protobuf-c, raw and gzipped, good and hostile. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>

#include "flamed/formats/pprofread.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;

/* --- building a profile ------------------------------------------------------------------ */

#define MAX_OBJS 64

struct builder {
	Profile p;
	char *strings[MAX_OBJS];
	ValueType types[MAX_OBJS], *type_ptrs[MAX_OBJS];
	Sample samples[MAX_OBJS], *sample_ptrs[MAX_OBJS];
	uint64_t loc_ids[MAX_OBJS][MAX_OBJS];
	int64_t values[MAX_OBJS][4];
	Label labels[MAX_OBJS][4], *label_ptrs[MAX_OBJS][4];
	Mapping maps[MAX_OBJS], *map_ptrs[MAX_OBJS];
	Location locs[MAX_OBJS], *loc_ptrs[MAX_OBJS];
	Line lines[MAX_OBJS][8], *line_ptrs[MAX_OBJS][8];
	Function funcs[MAX_OBJS], *func_ptrs[MAX_OBJS];
};

static void b_init(struct builder *b)
{
	memset(b, 0, sizeof(*b));
	perftools__profiles__profile__init(&b->p);
	b->p.string_table = b->strings;
	b->p.sample_type = b->type_ptrs;
	b->p.sample = b->sample_ptrs;
	b->p.mapping = b->map_ptrs;
	b->p.location = b->loc_ptrs;
	b->p.function = b->func_ptrs;
	b->strings[b->p.n_string_table++] = (char *)"";
}

/* The index of s in the string table, added if new. */
static int64_t b_str(struct builder *b, const char *s)
{
	for (size_t i = 0; i < b->p.n_string_table; i++)
		if (!strcmp(b->strings[i], s))
			return (int64_t)i;
	assert_true(b->p.n_string_table < MAX_OBJS);
	b->strings[b->p.n_string_table] = (char *)s;
	return (int64_t)b->p.n_string_table++;
}

static void b_type(struct builder *b, const char *type, const char *unit)
{
	ValueType *t = &b->types[b->p.n_sample_type];

	perftools__profiles__value_type__init(t);
	t->type = b_str(b, type);
	t->unit = b_str(b, unit);
	b->type_ptrs[b->p.n_sample_type++] = t;
}

static void b_mapping(struct builder *b, uint64_t id, const char *filename)
{
	Mapping *m = &b->maps[b->p.n_mapping];

	perftools__profiles__mapping__init(m);
	m->id = id;
	m->filename = b_str(b, filename);
	b->map_ptrs[b->p.n_mapping++] = m;
}

static void b_function(struct builder *b, uint64_t id, const char *name)
{
	Function *f = &b->funcs[b->p.n_function];

	perftools__profiles__function__init(f);
	f->id = id;
	f->name = b_str(b, name);
	b->func_ptrs[b->p.n_function++] = f;
}

/* A location with n lines, functions fids[0] (innermost) .. fids[n-1] (the containing one). */
static void b_location(struct builder *b, uint64_t id, uint64_t mapping_id, size_t n,
		       const uint64_t *fids)
{
	size_t k = b->p.n_location;
	Location *l = &b->locs[k];

	perftools__profiles__location__init(l);
	l->id = id;
	l->mapping_id = mapping_id;
	for (size_t i = 0; i < n; i++) {
		perftools__profiles__line__init(&b->lines[k][i]);
		b->lines[k][i].function_id = fids[i];
		b->line_ptrs[k][i] = &b->lines[k][i];
	}
	l->n_line = n;
	l->line = b->line_ptrs[k];
	b->loc_ptrs[b->p.n_location++] = l;
}

/* A sample: locations leaf first, nv values. */
static Sample *b_sample(struct builder *b, size_t n, const uint64_t *locs, size_t nv,
			const int64_t *values)
{
	size_t k = b->p.n_sample;
	Sample *s = &b->samples[k];

	perftools__profiles__sample__init(s);
	if (n)
		memcpy(b->loc_ids[k], locs, n * sizeof(*locs));
	if (nv)
		memcpy(b->values[k], values, nv * sizeof(*values));
	s->n_location_id = n;
	s->location_id = b->loc_ids[k];
	s->n_value = nv;
	s->value = b->values[k];
	s->label = b->label_ptrs[k];
	b->sample_ptrs[b->p.n_sample++] = s;
	return s;
}

static void b_label(struct builder *b, Sample *s, const char *key, const char *str, int64_t num)
{
	size_t k = (size_t)(s - b->samples);
	Label *l = &b->labels[k][s->n_label];

	perftools__profiles__label__init(l);
	l->key = b_str(b, key);
	l->str = str ? b_str(b, str) : 0;
	l->num = num;
	b->label_ptrs[k][s->n_label++] = l;
}

static uint8_t *b_pack(struct builder *b, size_t *len)
{
	uint8_t *buf = malloc(perftools__profiles__profile__get_packed_size(&b->p) + 1);

	assert_non_null(buf);
	*len = perftools__profiles__profile__pack(&b->p, buf);
	return buf;
}

/* data gzipped (windowBits 31: a gzip header), in a new buffer. */
static uint8_t *gzip(const void *data, size_t len, size_t *out_len)
{
	z_stream z = {};
	size_t cap = compressBound((uLong)len) + 64;
	uint8_t *out = malloc(cap);

	assert_non_null(out);
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)(uintptr_t)data;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

/* --- reading it ---------------------------------------------------------------------------- */

struct got {
	char stack[32][256];
	double count[32];
	size_t lineno[32];
	size_t n;
	int stop_with; /* returned by the callback */
};

static int collect(const struct fl_folded_line *l, void *ctx)
{
	struct got *g = ctx;

	assert_int_equal(l->nr_counts, 1);
	if (g->n < 32) {
		size_t k = l->len < 255 ? l->len : 255;

		memcpy(g->stack[g->n], l->stack, k);
		g->stack[g->n][k] = '\0';
		g->count[g->n] = l->count[0];
		g->lineno[g->n] = l->lineno;
	}
	g->n++;
	return g->stop_with;
}

static int parse(struct builder *b, const char *type, struct got *g,
		 struct fl_pprof_read_info *info)
{
	const struct fl_pprof_read_opts o = {.sz = sizeof(o), .sample_type = type};
	size_t len;
	uint8_t *buf = b_pack(b, &len);
	int err;

	memset(g, 0, sizeof(*g));
	err = fl_pprof__parse(buf, len, &o, collect, g, info);
	free(buf);
	return err;
}

/* A profile with one type, "cpu", and function ids 1.. for names. */
static void simple(struct builder *b, const char *const *names, size_t n)
{
	b_init(b);
	b_type(b, "cpu", "nanoseconds");
	for (size_t i = 0; i < n; i++)
		b_function(b, i + 1, names[i]);
}

/* --- tests ----------------------------------------------------------------------------------- */

static void test_stack_order_and_inlines(void **state)
{
	static const char *const names[] = {"main", "outer", "mid", "inner"};
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;

	(void)state;
	simple(&b, names, 4);
	b_location(&b, 1, 0, 1, (const uint64_t[]){1});
	/* outer calls mid calls inner, both inlined into outer: line[0] is the innermost. */
	b_location(&b, 2, 0, 3, (const uint64_t[]){4, 3, 2});
	b_sample(&b, 2, (const uint64_t[]){2, 1}, 1, (const int64_t[]){1000});
	b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){7});
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.stack[0], "main;outer;mid_[i];inner_[i]");
	assert_true(g.count[0] == 1000);
	assert_int_equal(g.lineno[0], 1);
	assert_string_equal(g.stack[1], "main");
	assert_int_equal(g.lineno[1], 2);
	assert_int_equal(info.samples, 2);
	assert_int_equal(info.bad_refs, 0);
	assert_string_equal(info.type, "cpu");
	assert_string_equal(info.unit, "nanoseconds");
}

static void test_root_labels(void **state)
{
	static const char *const names[] = {"main"};
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;
	Sample *s;

	(void)state;
	simple(&b, names, 1);
	b_location(&b, 1, 0, 1, (const uint64_t[]){1});
	s = b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){1});
	b_label(&b, s, "tid", NULL, 43);
	b_label(&b, s, "comm", "my app", 0);
	b_label(&b, s, "pid", NULL, 42);
	b_label(&b, s, "comm", "second", 0); /* the first of a key counts */
	s = b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){1});
	b_label(&b, s, "comm", "app", 0);
	b_label(&b, s, "pid", NULL, 42);
	b_label(&b, s, "cgroup", "/system.slice/x.service", 0);
	s = b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){1});
	b_label(&b, s, "pid", NULL, 7);
	b_label(&b, s, "other", "ignored", 0);
	s = b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){1});
	b_label(&b, s, "cgroup", "/", 0);
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_int_equal(g.n, 4);
	assert_string_equal(g.stack[0], "my_app-42/43;main");
	assert_string_equal(g.stack[1], "/system.slice/x.service;app-42;main");
	assert_string_equal(g.stack[2], "[unknown]-7;main");
	assert_string_equal(g.stack[3], "/;main");
}

static void test_mapping_kinds(void **state)
{
	static const char *const names[] = {"main", "do_syscall_64", "jitted", "", "native_inl"};
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;

	(void)state;
	simple(&b, names, 5);
	b_mapping(&b, 1, "/usr/bin/app");
	b_mapping(&b, 2, "[kernel.kallsyms]");
	b_mapping(&b, 3, "/tmp/perf-1234.map");
	b_mapping(&b, 4, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	b_mapping(&b, 5, "[vdso]");
	b_mapping(&b, 6, "");
	b_location(&b, 1, 1, 1, (const uint64_t[]){1});
	b_location(&b, 2, 2, 1, (const uint64_t[]){2});
	b_location(&b, 3, 3, 1, (const uint64_t[]){3});
	b_location(&b, 4, 4, 0, NULL);			   /* no lines: the mapping */
	b_location(&b, 5, 5, 0, NULL);			   /* "[vdso]" as it is */
	b_location(&b, 6, 0, 0, NULL);			   /* nothing at all */
	b_location(&b, 7, 2, 0, NULL);			   /* kernel, no symbol */
	b_location(&b, 8, 4, 1, (const uint64_t[]){4});	   /* a nameless function */
	b_location(&b, 9, 2, 2, (const uint64_t[]){5, 2}); /* inlined in the kernel */
	b_location(&b, 10, 6, 0, NULL);			   /* a mapping without a name */
	b_location(&b, 11, 3, 0, NULL);			   /* JIT code without a symbol */
	b_sample(&b, 3, (const uint64_t[]){2, 3, 1}, 1, (const int64_t[]){1});
	b_sample(&b, 5, (const uint64_t[]){6, 5, 4, 8, 1}, 1, (const int64_t[]){1});
	b_sample(&b, 4, (const uint64_t[]){9, 10, 11, 7}, 1, (const int64_t[]){1});
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_int_equal(g.n, 3);
	assert_string_equal(g.stack[0], "main;jitted_[j];do_syscall_64_[k]");
	assert_string_equal(g.stack[1], "main;[libc.so.6];[libc.so.6];[vdso];[unknown]");
	assert_string_equal(g.stack[2],
			    "[kernel.kallsyms]_[k];[perf-1234.map]_[j];[unknown];do_syscall_64_[k];"
			    "native_inl_[i]");
	assert_int_equal(info.bad_refs, 0);
}

static void test_sample_types(void **state)
{
	static const char *const names[] = {"main"};
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;

	(void)state;
	b_init(&b);
	b_type(&b, "samples", "count");
	b_type(&b, "cpu", "nanoseconds");
	b_function(&b, 1, "main");
	b_location(&b, 1, 0, 1, (const uint64_t[]){1});
	b_sample(&b, 1, (const uint64_t[]){1}, 2, (const int64_t[]){3, 30000000});
	(void)names;

	/* cpu, without a default. */
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_true(g.count[0] == 30000000);
	assert_string_equal(info.type, "cpu");
	/* Asked for. */
	assert_int_equal(parse(&b, "samples", &g, &info), 0);
	assert_true(g.count[0] == 3);
	assert_string_equal(info.type, "samples");
	assert_string_equal(info.unit, "count");
	/* Unknown: the error, and the names there are. */
	assert_int_equal(parse(&b, "alloc_space", &g, &info), -EINVAL);
	assert_int_equal(g.n, 0);
	assert_string_equal(info.type, "samples, cpu");
	assert_non_null(info.error);
	/* The profile's default wins over cpu. */
	b.p.default_sample_type = b_str(&b, "samples");
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_string_equal(info.type, "samples");
	/* A default that is not a type, or not a string: cpu again. */
	b.p.default_sample_type = b_str(&b, "main");
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_string_equal(info.type, "cpu");
	b.p.default_sample_type = 999;
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_string_equal(info.type, "cpu");
	assert_int_equal(info.bad_refs, 1);
	/* Neither a default nor cpu: the first. */
	b.p.default_sample_type = 0;
	b.types[1].type = b_str(&b, "wall");
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_string_equal(info.type, "samples");
	/* None at all: not a profile. */
	b.p.n_sample_type = 0;
	assert_int_equal(parse(&b, NULL, &g, &info), -EINVAL);
}

static void test_long_type_list(void **state)
{
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;

	(void)state;
	b_init(&b);
	b_type(&b, "alloc_objects", "count");
	b_type(&b, "alloc_space", "bytes");
	b_type(&b, "inuse_objects", "count");
	b_type(&b, "inuse_space", "bytes");
	b_type(&b, "a_type_with_a_rather_long_name_that_does_not_fit", "bytes");
	assert_int_equal(parse(&b, "cpu", &g, &info), -EINVAL);
	assert_true(strlen(info.type) < sizeof(info.type));
	assert_string_equal(info.type,
			    "alloc_objects, alloc_space, inuse_objects, inuse_space, ...");
}

static void test_zero_and_negative(void **state)
{
	static const char *const names[] = {"main"};
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;

	(void)state;
	simple(&b, names, 1);
	b_location(&b, 1, 0, 1, (const uint64_t[]){1});
	b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){0});
	b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){-5});
	b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){INT64_MAX});
	b_sample(&b, 1, (const uint64_t[]){1}, 0, NULL); /* no value of the type */
	b_sample(&b, 0, NULL, 1, (const int64_t[]){2});	 /* no locations */
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_int_equal(g.n, 2);
	assert_true(g.count[0] == (double)INT64_MAX);
	assert_int_equal(g.lineno[0], 3);
	assert_string_equal(g.stack[1], "[unknown]");
	assert_int_equal(info.samples, 2);
	assert_int_equal(info.zero, 1);
	assert_int_equal(info.negative, 1);
	assert_int_equal(info.bad_refs, 1);
}

static void test_bad_refs(void **state)
{
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;

	(void)state;
	b_init(&b);
	b_type(&b, "cpu", "nanoseconds");
	/* Ids far apart and out of order: no array indexed by id. */
	b_function(&b, UINT64_MAX, "big");
	b_function(&b, 5, "five");
	b_function(&b, 5, "five again"); /* the first of an id wins */
	b_function(&b, 1ull << 40, "");
	b.funcs[3].name = 12345; /* a string that is not there */
	b_mapping(&b, 1ull << 50, "/lib/libx.so");
	b_location(&b, 1ull << 62, 1ull << 50, 1, (const uint64_t[]){UINT64_MAX});
	b_location(&b, 3, 0, 1, (const uint64_t[]){5});
	b_location(&b, 9, 77, 0, NULL); /* a mapping that is not there */
	b_location(&b, 10, 1ull << 50, 1, (const uint64_t[]){1ull << 40}); /* a bad name */
	b_location(&b, 11, 0, 1, (const uint64_t[]){6}); /* a function that is not there */
	b_location(&b, 12, 0, 1, (const uint64_t[]){0}); /* function id 0: none */
	b_sample(&b, 4, (const uint64_t[]){1ull << 62, 3, 424242, 0}, 1, (const int64_t[]){1});
	b_sample(&b, 4, (const uint64_t[]){9, 10, 11, 12}, 1, (const int64_t[]){1});
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_int_equal(g.n, 2);
	/* Leaf first in the profile: 0 and 424242 are the outermost, and are not there. */
	assert_string_equal(g.stack[0], "[unknown];[unknown];five;big");
	assert_string_equal(g.stack[1], "[unknown];[unknown];[libx.so];[unknown]");
	assert_int_equal(info.bad_refs, 2 + 1 + 1 + 1 + 1);
}

static void test_string_index_labels(void **state)
{
	static const char *const names[] = {"main"};
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;
	Sample *s;

	(void)state;
	simple(&b, names, 1);
	b_location(&b, 1, 0, 1, (const uint64_t[]){1});
	s = b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){1});
	b_label(&b, s, "comm", "x", 0);
	b.labels[0][0].str = -3; /* comm: a string that is not there */
	b_label(&b, s, "pid", NULL, 1);
	b.labels[0][1].key = 1000; /* a key that is not there: no pid */
	b.types[0].unit = 99;	   /* a unit that is not there */
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.stack[0], "[unknown];main");
	assert_string_equal(info.unit, "");
	assert_int_equal(info.bad_refs, 3);
}

static void test_names_fixed(void **state)
{
	static const char *const names[] = {"a;b", "ctl\x01\x1f\x7f", "ok é"};
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;
	Sample *s;

	(void)state;
	simple(&b, names, 3);
	b_mapping(&b, 1, "/x/lib;evil.so");
	b_location(&b, 1, 0, 1, (const uint64_t[]){1});
	b_location(&b, 2, 0, 1, (const uint64_t[]){2});
	b_location(&b, 3, 0, 1, (const uint64_t[]){3});
	b_location(&b, 4, 1, 0, NULL);
	s = b_sample(&b, 4, (const uint64_t[]){4, 3, 2, 1}, 1, (const int64_t[]){1});
	b_label(&b, s, "comm", "t;\n", 0);
	/* The same names again: each string is counted once. */
	b_sample(&b, 2, (const uint64_t[]){2, 1}, 1, (const int64_t[]){1});
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.stack[0], "t:?;a:b;ctl???;ok é;[lib:evil.so]");
	assert_string_equal(g.stack[1], "a:b;ctl???");
	assert_int_equal(info.names_fixed, 4);
}

static void test_gzip_and_raw(void **state)
{
	static const char *const names[] = {"main", "work"};
	const struct fl_pprof_read_opts o = {.sz = sizeof(o)};
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;
	size_t len, zlen;
	uint8_t *raw, *z, *two;

	(void)state;
	simple(&b, names, 2);
	b.p.time_nanos = 1700000000000000000;
	b.p.duration_nanos = 2000000000;
	b.p.period = 10000000;
	b_location(&b, 1, 0, 1, (const uint64_t[]){1});
	b_location(&b, 2, 0, 1, (const uint64_t[]){2});
	b_sample(&b, 2, (const uint64_t[]){2, 1}, 1, (const int64_t[]){5});
	raw = b_pack(&b, &len);
	z = gzip(raw, len, &zlen);
	assert_true(fl_pprof__detect(raw, len));
	assert_true(fl_pprof__detect(z, zlen));

	memset(&g, 0, sizeof(g));
	assert_int_equal(fl_pprof__parse(raw, len, &o, collect, &g, &info), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.stack[0], "main;work");
	memset(&g, 0, sizeof(g));
	assert_int_equal(fl_pprof__parse(z, zlen, NULL, collect, &g, &info), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.stack[0], "main;work");
	assert_int_equal(info.time_nanos, 1700000000000000000);
	assert_int_equal(info.duration_nanos, 2000000000);
	assert_int_equal(info.period, 10000000);

	/* Two gzip members, as `cat a.gz b.gz`: the message goes on in the second. */
	two = malloc(2 * zlen);
	assert_non_null(two);
	{
		size_t l1, l2;
		uint8_t *z1 = gzip(raw, len / 2, &l1),
			*z2 = gzip(raw + len / 2, len - len / 2, &l2);

		memcpy(two, z1, l1);
		memcpy(two + l1, z2, l2);
		memset(&g, 0, sizeof(g));
		assert_int_equal(fl_pprof__parse(two, l1 + l2, NULL, collect, &g, &info), 0);
		assert_int_equal(g.n, 1);
		assert_string_equal(g.stack[0], "main;work");
		free(z1);
		free(z2);
	}

	/* Truncated gzip, corrupt gzip, a message cut short, garbage. */
	memset(&g, 0, sizeof(g));
	assert_int_equal(fl_pprof__parse(z, zlen - 9, NULL, collect, &g, &info), -EINVAL);
	assert_string_equal(info.error, "truncated gzip data");
	z[zlen / 2] ^= 0xff;
	z[zlen / 2 + 1] ^= 0x55;
	{
		int err = fl_pprof__parse(z, zlen, NULL, collect, &g, &info);

		assert_int_equal(err, -EINVAL);
		assert_non_null(info.error);
	}
	assert_int_equal(fl_pprof__parse(raw, len - 3, NULL, collect, &g, &info), -EINVAL);
	assert_int_equal(fl_pprof__parse("\x0a\x05\x08\x01\xff\xff", 6, NULL, collect, &g, &info),
			 -EINVAL);
	assert_int_equal(fl_pprof__parse("", 0, NULL, collect, &g, &info), -EINVAL);
	assert_int_equal(g.n, 0);
	free(two);
	free(raw);
	free(z);
}

static void test_size_caps(void **state)
{
	struct fl_pprof_read_opts o = {.sz = sizeof(o), .max_bytes = 4096};
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g = {};
	static char big_name[8192];
	size_t len, zlen;
	uint8_t *raw, *z, *zeros;

	(void)state;
	/* A profile of 8 KiB, squeezed by gzip to some 100 bytes: over a 4 KiB cap. */
	memset(big_name, 'x', sizeof(big_name) - 1);
	b_init(&b);
	b_type(&b, "cpu", "nanoseconds");
	b_function(&b, 1, big_name);
	b_location(&b, 1, 0, 1, (const uint64_t[]){1});
	b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){1});
	raw = b_pack(&b, &len);
	z = gzip(raw, len, &zlen);
	assert_true(zlen < 1024);
	assert_int_equal(fl_pprof__parse(z, zlen, &o, collect, &g, &info), -EFBIG);
	assert_int_equal(fl_pprof__parse(raw, len, &o, collect, &g, &info), -EFBIG);
	o.max_bytes = len; /* exactly at the cap: fine */
	assert_int_equal(fl_pprof__parse(z, zlen, &o, collect, &g, &info), 0);
	o.max_bytes = len - 1;
	assert_int_equal(fl_pprof__parse(z, zlen, &o, collect, &g, &info), -EFBIG);
	assert_int_equal(g.n, 1);
	free(raw);
	free(z);

	/* A gzip bomb: 64 MiB of zeros in 64 KiB, against a 1 MiB cap. */
	zeros = calloc(64u << 20, 1);
	assert_non_null(zeros);
	z = gzip(zeros, 64u << 20, &zlen);
	free(zeros);
	o.max_bytes = 1u << 20;
	assert_int_equal(fl_pprof__parse(z, zlen, &o, collect, &g, &info), -EFBIG);
	free(z);
}

/* Many empty samples: 2 bytes each on the wire, far more decoded: refused, not allocated. */
static void test_decode_budget(void **state)
{
	const size_t n = 8u << 20; /* 4 Mi samples: some 320 MiB decoded, over 16 x 8 + 64 MiB */
	struct fl_pprof_read_info info;
	struct got g = {};
	uint8_t *buf = malloc(n);

	(void)state;
	assert_non_null(buf);
	for (size_t i = 0; i < n; i += 2) {
		buf[i] = 0x12; /* field 2 (sample), length-delimited */
		buf[i + 1] = 0;
	}
	assert_int_equal(fl_pprof__parse(buf, n, NULL, collect, &g, &info), -EFBIG);
	free(buf);
}

static void test_too_long(void **state)
{
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;
	char *name = malloc(1u << 20);
	uint64_t locs[20];

	(void)state;
	assert_non_null(name);
	memset(name, 'n', (1u << 20) - 1);
	name[(1u << 20) - 1] = '\0';
	b_init(&b);
	b_type(&b, "cpu", "nanoseconds");
	b_function(&b, 1, name);
	b_function(&b, 2, "small");
	b_location(&b, 1, 0, 1, (const uint64_t[]){1});
	b_location(&b, 2, 0, 1, (const uint64_t[]){2});
	for (size_t i = 0; i < 20; i++)
		locs[i] = 1;
	b_sample(&b, 20, locs, 1, (const int64_t[]){1}); /* 20 MiB of stack: skipped */
	b_sample(&b, 1, (const uint64_t[]){2}, 1, (const int64_t[]){1});
	assert_int_equal(parse(&b, NULL, &g, &info), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.stack[0], "small");
	assert_int_equal(info.too_long, 1);
	assert_int_equal(info.samples, 1);
	free(name);
}

/* A deep stack, of distinct locations with ids in no order: no recursion, no stack arrays. */
static void test_deep_stack(void **state)
{
	const size_t depth = 200000;
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType t = PERFTOOLS__PROFILES__VALUE_TYPE__INIT, *tp = &t;
	Sample s = PERFTOOLS__PROFILES__SAMPLE__INIT, *sp = &s;
	Function f = PERFTOOLS__PROFILES__FUNCTION__INIT, *fp = &f;
	Line line = PERFTOOLS__PROFILES__LINE__INIT, *lp = &line;
	Location *locs = calloc(depth, sizeof(*locs));
	Location **loc_ptrs = calloc(depth, sizeof(*loc_ptrs));
	uint64_t *ids = calloc(depth, sizeof(*ids));
	char *strings[] = {(char *)"", (char *)"cpu", (char *)"nanoseconds", (char *)"f"};
	int64_t value = 1;
	struct fl_pprof_read_info info;
	struct got g = {};
	uint8_t *buf;
	size_t len;

	(void)state;
	assert_true(locs && loc_ptrs && ids);
	t.type = 1;
	t.unit = 2;
	f.id = 1;
	f.name = 3;
	line.function_id = 1;
	for (size_t i = 0; i < depth; i++) {
		perftools__profiles__location__init(&locs[i]);
		locs[i].id = (i * 7919 + 13) % 1000003 + 1; /* distinct, in no order */
		locs[i].n_line = 1;
		locs[i].line = &lp;
		loc_ptrs[i] = &locs[i];
		ids[i] = locs[i].id;
	}
	s.n_location_id = depth;
	s.location_id = ids;
	s.n_value = 1;
	s.value = &value;
	p.n_sample_type = 1;
	p.sample_type = &tp;
	p.n_sample = 1;
	p.sample = &sp;
	p.n_location = depth;
	p.location = loc_ptrs;
	p.n_function = 1;
	p.function = &fp;
	p.n_string_table = 4;
	p.string_table = strings;
	buf = malloc(perftools__profiles__profile__get_packed_size(&p));
	assert_non_null(buf);
	len = perftools__profiles__profile__pack(&p, buf);
	assert_int_equal(fl_pprof__parse(buf, len, NULL, collect, &g, &info), 0);
	assert_int_equal(g.n, 1);
	assert_int_equal(info.bad_refs, 0);
	assert_memory_equal(g.stack[0], "f;f;f;f", 7);
	free(buf);
	free(locs);
	free(loc_ptrs);
	free(ids);
}

static void test_callback_stops(void **state)
{
	static const char *const names[] = {"main"};
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g;
	const struct fl_pprof_read_opts o = {.sz = sizeof(o)};
	size_t len;
	uint8_t *buf;

	(void)state;
	simple(&b, names, 1);
	b_location(&b, 1, 0, 1, (const uint64_t[]){1});
	b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){1});
	b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){1});
	buf = b_pack(&b, &len);
	memset(&g, 0, sizeof(g));
	g.stop_with = 7;
	assert_int_equal(fl_pprof__parse(buf, len, &o, collect, &g, &info), 7);
	assert_int_equal(g.n, 1);
	free(buf);
}

/* An opts struct from before max_bytes (sz smaller): the default cap, no read past it. */
static void test_old_opts(void **state)
{
	static const char *const names[] = {"main"};
	struct fl_pprof_read_opts o = {.sz = offsetof(struct fl_pprof_read_opts, max_bytes),
				       .max_bytes = 1};
	struct fl_pprof_read_info info;
	struct builder b;
	struct got g = {};
	size_t len;
	uint8_t *buf;

	(void)state;
	simple(&b, names, 1);
	b_location(&b, 1, 0, 1, (const uint64_t[]){1});
	b_sample(&b, 1, (const uint64_t[]){1}, 1, (const int64_t[]){1});
	buf = b_pack(&b, &len);
	assert_int_equal(fl_pprof__parse(buf, len, &o, collect, &g, &info), 0);
	assert_int_equal(g.n, 1);
	free(buf);
}

static void test_detect(void **state)
{
	static const char *const folded[] = {
		"main;work 12\n",
		"\n\nmain 1\n",
		"\nab;c 1\n", /* a blank line, then text: 0a 61 62 */
		"\n\t\t1\n",
		"\n\x01\x08x 1\n",	   /* a control character, but 'x' is no field of Profile */
		"\n\x17\x08x 1\n",	   /* nor can a ValueType be 23 bytes */
		"H\xc3\xa9\xc3\xa9;x 1\n", /* "Héé": time_nanos and a varint, but no control character */
		"P;Z;h;p 5\n",		   /* every first byte a field of Profile */
		"[unknown];x 1\n",
		"\x8b\x1f",
		"",
	};
	/* Go's runtime/pprof: time_nanos first, then sample_type. */
	static const uint8_t go_head[] = {0x48, 0xef, 0x8b, 0xd0, 0x85, 0xfe, 0xc3, 0xee,
					  0xf5, 0x18, 0x0a, 0x04, 0x08, 0x01, 0x10, 0x02};
	static const uint8_t raw_type[] = {0x0a, 0x04, 0x08, 0x01, 0x10, 0x02};
	static const uint8_t raw_unit[] = {0x0a, 0x02, 0x10, 0x02};

	(void)state;
	for (size_t i = 0; i < sizeof(folded) / sizeof(folded[0]); i++)
		assert_false(fl_pprof__detect(folded[i], strlen(folded[i])));
	assert_true(fl_pprof__detect("\x1f\x8b", 2));
	assert_true(fl_pprof__detect(go_head, sizeof(go_head)));
	assert_true(fl_pprof__detect(go_head, 11));
	assert_true(fl_pprof__detect(raw_type, sizeof(raw_type)));
	assert_true(fl_pprof__detect(raw_type, 3));
	assert_true(fl_pprof__detect(raw_unit, sizeof(raw_unit)));
	/* Not enough to tell: no control character seen yet. */
	assert_false(fl_pprof__detect(go_head, 9));
	assert_false(fl_pprof__detect(raw_type, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stack_order_and_inlines),
		cmocka_unit_test(test_root_labels),
		cmocka_unit_test(test_mapping_kinds),
		cmocka_unit_test(test_sample_types),
		cmocka_unit_test(test_long_type_list),
		cmocka_unit_test(test_zero_and_negative),
		cmocka_unit_test(test_bad_refs),
		cmocka_unit_test(test_string_index_labels),
		cmocka_unit_test(test_names_fixed),
		cmocka_unit_test(test_gzip_and_raw),
		cmocka_unit_test(test_size_caps),
		cmocka_unit_test(test_decode_budget),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_deep_stack),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_old_opts),
		cmocka_unit_test(test_detect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
