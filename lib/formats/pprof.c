// SPDX-License-Identifier: GPL-2.0-or-later
/* The pprof writer: interned strings, functions and mappings; samples summed per stack and labels. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "flamed/formats/pprof.h"
#include "flamed/common/strpool.h"
#include "flamed/profile/profile.h"
#include "common/keycount.h"
#include "common/utf8.h"
#include "profile.pb-c.h"

struct mapping {
	uint64_t start, limit, offset;
	uint32_t file, build_id; /* string ids */
	/*
	 * What its locations have: a mapping with functions is not symbolized
	 * again by the reader (go tool pprof would, from the file on its
	 * disk, and lose what flamed found, perf maps and inlined frames).
	 */
	bool functions, filenames, line_numbers, inline_frames;
};

struct function {
	uint32_t name, system_name, file; /* string ids */
	int64_t start_line;
};

struct location {
	uint64_t address;
	uint32_t mapping;
	uint32_t first, n; /* lines[first, first + n) */
};

/* A sample's key: these, then its location ids, leaf first. */
enum { K_COMM, K_CGROUP, K_PID, K_TID, K__HEAD };

struct fl_pprof {
	struct fl_pprof_opts opts;
	int64_t time_ns, duration_ns;
	struct fl_strpool *strings; /* the string table: "" is 0 */
	struct fl_strpool *fkeys;   /* name \1 system name \1 file: function id - 1 */
	struct fl_strpool *mkeys;   /* path \1 start: mapping id - 1 */
	struct mapping *maps;
	size_t nr_maps, cap_maps;
	struct function *funcs;
	size_t nr_funcs, cap_funcs;
	struct location *locs;
	size_t nr_locs, cap_locs;
	struct fl_pprof_line *lines;
	size_t nr_lines, cap_lines;
	struct fl_keycount samples;
	uint32_t *key; /* scratch */
	size_t cap_key;
	uint32_t s_comm, s_cgroup, s_pid, s_tid;	  /* label keys */
	uint32_t s_samples, s_count, s_cpu, s_nanoseconds; /* sample types */
};

/* Room for one more of n elements of size sz in *arr (capacity *cap). */
static int grow(void **arr, size_t *cap, size_t n, size_t sz)
{
	size_t c = *cap ? *cap * 2 : 256;
	void *a;

	if (n < *cap)
		return 0;
	if (c > UINT32_MAX)
		return -ENOMEM;
	a = realloc(*arr, c * sz);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = c;
	return 0;
}

#define GROW(arr, cap, n) grow((void **)&(arr), &(cap), (n), sizeof(*(arr)))

/*
 * Interns s as a string of the table. A proto3 string must be UTF-8, and a
 * backend that checks refuses the whole profile otherwise: names come from
 * binaries and process names anyone can make, so each byte of an invalid
 * sequence becomes '?'.
 */
static int str(struct fl_pprof *p, const char *s, uint32_t *id)
{
	size_t n = s ? strlen(s) : 0, i = 0, len;
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;
	char *fixed;
	int err;

	while (i < n && (len = fl_utf8_decode(u + i, n - i, &cp)))
		i += len;
	if (i == n)
		return fl_strpool__intern(p->strings, s ? s : "", n, id);
	fixed = malloc(n);
	if (!fixed)
		return -ENOMEM;
	memcpy(fixed, s, i);
	while (i < n) {
		len = fl_utf8_decode(u + i, n - i, &cp);
		if (len) {
			memcpy(fixed + i, s + i, len);
			i += len;
		} else {
			fixed[i++] = '?';
		}
	}
	err = fl_strpool__intern(p->strings, fixed, n, id);
	free(fixed);
	return err;
}

int fl_pprof__new(const struct fl_pprof_opts *opts, struct fl_pprof **ret)
{
	struct fl_pprof *p;
	uint32_t empty;
	int err;

	if (!opts || opts->period_ns < 0)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->opts = *opts;
	err = fl_strpool__new(&p->strings);
	if (!err)
		err = fl_strpool__new(&p->fkeys);
	if (!err)
		err = fl_strpool__new(&p->mkeys);
	if (!err)
		err = str(p, "", &empty);
	if (!err)
		err = str(p, "comm", &p->s_comm);
	if (!err)
		err = str(p, "cgroup", &p->s_cgroup);
	if (!err)
		err = str(p, "pid", &p->s_pid);
	if (!err)
		err = str(p, "tid", &p->s_tid);
	if (!err)
		err = str(p, "samples", &p->s_samples);
	if (!err)
		err = str(p, "count", &p->s_count);
	if (!err)
		err = str(p, "cpu", &p->s_cpu);
	if (!err)
		err = str(p, "nanoseconds", &p->s_nanoseconds);
	if (err) {
		fl_pprof__free(p);
		return err;
	}
	*ret = p;
	return 0;
}

void fl_pprof__free(struct fl_pprof *p)
{
	if (!p)
		return;
	fl_strpool__free(p->strings);
	fl_strpool__free(p->fkeys);
	fl_strpool__free(p->mkeys);
	free(p->maps);
	free(p->funcs);
	free(p->locs);
	free(p->lines);
	free(p->key);
	fl_keycount__fini(&p->samples);
	free(p);
}

void fl_pprof__set_time(struct fl_pprof *p, int64_t time_ns, int64_t duration_ns)
{
	p->time_ns = time_ns;
	p->duration_ns = duration_ns;
}

/*
 * Interns the key of a, b and c in pool, each after its length ("3:abc"):
 * names may hold any byte, and no two triples make the same key. *fresh
 * when it is new.
 */
static int intern_key(struct fl_strpool *pool, const char *a, const char *b, const char *c,
		      uint32_t *id, bool *fresh)
{
	const char *parts[3] = {a, b, c};
	size_t lens[3] = {strlen(a), strlen(b), strlen(c)}, n = lens[0] + lens[1] + lens[2] + 3 * 21;
	char stack_buf[512], *k = n <= sizeof(stack_buf) ? stack_buf : malloc(n);
	size_t before = fl_strpool__count(pool), at = 0;
	int err;

	if (!k)
		return -ENOMEM;
	for (int i = 0; i < 3; i++) {
		at += (size_t)snprintf(k + at, n - at, "%zu:", lens[i]);
		memcpy(k + at, parts[i], lens[i]);
		at += lens[i];
	}
	err = fl_strpool__intern(pool, k, at, id);
	if (k != stack_buf)
		free(k);
	*fresh = fl_strpool__count(pool) > before;
	return err;
}

int fl_pprof__mapping(struct fl_pprof *p, const char *path, const uint8_t *bid, size_t bid_len,
		      uint64_t start, uint64_t limit, uint64_t offset, uint32_t *id)
{
	char at[24], hex[2 * 64 + 1];
	struct mapping m = {.start = start, .limit = limit, .offset = offset};
	uint32_t k;
	bool fresh;
	int err;

	snprintf(at, sizeof(at), "%llx", (unsigned long long)start);
	err = intern_key(p->mkeys, path, at, "", &k, &fresh);
	if (err)
		return err;
	if (!fresh) {
		*id = k + 1;
		return 0;
	}
	if (bid_len > 64)
		bid_len = 64;
	for (size_t i = 0; i < bid_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", bid[i]);
	hex[2 * bid_len] = '\0';
	err = GROW(p->maps, p->cap_maps, p->nr_maps);
	if (!err)
		err = str(p, path, &m.file);
	if (!err)
		err = str(p, hex, &m.build_id);
	if (err)
		return err; /* the key stays: it names the next mapping added, harmless */
	p->maps[p->nr_maps++] = m;
	*id = k + 1;
	return 0;
}

int fl_pprof__function(struct fl_pprof *p, const char *name, const char *system_name,
		       const char *file, int64_t start_line, uint32_t *id)
{
	struct function f = {.start_line = start_line};
	uint32_t k;
	bool fresh;
	int err;

	if (!system_name)
		system_name = name;
	err = intern_key(p->fkeys, name, system_name, file ? file : "", &k, &fresh);
	if (err)
		return err;
	if (!fresh) {
		*id = k + 1;
		return 0;
	}
	err = GROW(p->funcs, p->cap_funcs, p->nr_funcs);
	if (!err)
		err = str(p, name, &f.name);
	if (!err)
		err = str(p, system_name, &f.system_name);
	if (!err)
		err = str(p, file, &f.file);
	if (err)
		return err;
	p->funcs[p->nr_funcs++] = f;
	*id = k + 1;
	return 0;
}

int fl_pprof__location(struct fl_pprof *p, uint32_t mapping, uint64_t address,
		       const struct fl_pprof_line *lines, size_t n, uint32_t *id)
{
	int err = GROW(p->locs, p->cap_locs, p->nr_locs);

	while (!err && p->nr_lines + n > p->cap_lines)
		err = GROW(p->lines, p->cap_lines, p->cap_lines);
	if (err)
		return err;
	/* A location with no lines (an address without a symbol) may come first: no array yet. */
	if (n)
		memcpy(p->lines + p->nr_lines, lines, n * sizeof(*lines));
	if (mapping && mapping <= p->nr_maps && n) {
		struct mapping *m = &p->maps[mapping - 1];

		m->functions = true;
		m->inline_frames |= n > 1;
		for (size_t i = 0; i < n; i++) {
			m->line_numbers |= lines[i].line > 0;
			if (lines[i].function && lines[i].function <= p->nr_funcs)
				m->filenames |= p->funcs[lines[i].function - 1].file != 0;
		}
	}
	p->locs[p->nr_locs++] = (struct location){.address = address,
						  .mapping = mapping,
						  .first = (uint32_t)p->nr_lines,
						  .n = (uint32_t)n};
	p->nr_lines += n;
	*id = (uint32_t)p->nr_locs;
	return 0;
}

int fl_pprof__add(struct fl_pprof *p, const uint32_t *locs, size_t n,
		  const struct fl_pprof_labels *l, uint64_t count)
{
	int err;

	if (!count)
		return -EINVAL;
	if (K__HEAD + n > p->cap_key) {
		uint32_t *k = realloc(p->key, (K__HEAD + n) * sizeof(*k));

		if (!k)
			return -ENOMEM;
		p->key = k;
		p->cap_key = K__HEAD + n;
	}
	memset(p->key, 0, K__HEAD * sizeof(*p->key));
	if (l) {
		err = l->comm ? str(p, l->comm, &p->key[K_COMM]) : 0;
		if (!err && l->cgroup)
			err = str(p, l->cgroup, &p->key[K_CGROUP]);
		if (err)
			return err;
		/* Stored plus one: 0 is "no label". */
		p->key[K_PID] = l->pid >= 0 ? (uint32_t)l->pid + 1 : 0;
		p->key[K_TID] = l->tid >= 0 ? (uint32_t)l->tid + 1 : 0;
	}
	if (n)
		memcpy(p->key + K__HEAD, locs, n * sizeof(*locs));
	return fl_keycount__add(&p->samples, p->key, (K__HEAD + n) * sizeof(*p->key), count);
}

uint64_t fl_pprof__total(const struct fl_pprof *p)
{
	return p->samples.total;
}

size_t fl_pprof__nr_samples(const struct fl_pprof *p)
{
	return p->samples.nr_keys;
}

/* "name_[i]": the name's length without the suffix, or 0 if it has none. */
static size_t inlined_len(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && !strcmp(name + n - 4, "_[i]") ? n - 4 : 0;
}

struct from_profile {
	struct fl_pprof *p;
	const struct fl_profile *prof;
	uint32_t *loc_of; /* frame id -> location id (0: none yet), for frames of one line */
	size_t nr_loc_of;
	uint32_t *locs;
	size_t cap_locs;
	struct fl_pprof_line *lines;
	size_t cap_lines;
	char *name;
	size_t cap_name;
};

static int name_function(struct from_profile *c, uint32_t frame, bool strip, uint32_t *fid)
{
	const char *name = fl_profile__name(c->prof, frame);
	size_t n = strip ? inlined_len(name) : strlen(name);

	if (n + 1 > c->cap_name) {
		char *b = realloc(c->name, n + 1);

		if (!b)
			return -ENOMEM;
		c->name = b;
		c->cap_name = n + 1;
	}
	memcpy(c->name, name, n);
	c->name[n] = '\0';
	return fl_pprof__function(c->p, c->name, NULL, NULL, 0, fid);
}

static int add_stack(const uint32_t *frames, size_t n, uint64_t count, void *ctx)
{
	struct from_profile *c = ctx;
	size_t nl = 0;
	int err;

	if (n > c->cap_locs || n > c->cap_lines) {
		uint32_t *l = realloc(c->locs, n * sizeof(*l));
		struct fl_pprof_line *ln;

		if (!l)
			return -ENOMEM;
		c->locs = l;
		c->cap_locs = n;
		ln = realloc(c->lines, n * sizeof(*ln));
		if (!ln)
			return -ENOMEM;
		c->lines = ln;
		c->cap_lines = n;
	}
	/* Root first: a frame and the "_[i]" frames after it are one location. */
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		uint32_t id;

		while (j < n && inlined_len(fl_profile__name(c->prof, frames[j])))
			j++;
		if (j == i + 1 && frames[i] < c->nr_loc_of && c->loc_of[frames[i]]) {
			id = c->loc_of[frames[i]];
		} else {
			/* pprof's order: the innermost inlined function first. */
			for (size_t k = j; k-- > i;) {
				err = name_function(c, frames[k], k > i, &c->lines[j - 1 - k].function);
				if (err)
					return err;
				c->lines[j - 1 - k].line = 0;
			}
			err = fl_pprof__location(c->p, 0, 0, c->lines, j - i, &id);
			if (err)
				return err;
			if (j == i + 1 && frames[i] < c->nr_loc_of)
				c->loc_of[frames[i]] = id;
		}
		c->locs[nl++] = id;
		i = j;
	}
	/* Leaf first. */
	for (size_t a = 0, b = nl - 1; a < b; a++, b--) {
		uint32_t t = c->locs[a];

		c->locs[a] = c->locs[b];
		c->locs[b] = t;
	}
	return fl_pprof__add(c->p, c->locs, nl, NULL, count);
}

/* The number of frame ids of prof: one past the largest seen. */
static int max_frame(const uint32_t *frames, size_t n, uint64_t count, void *ctx)
{
	size_t *max = ctx;

	(void)count;
	for (size_t i = 0; i < n; i++)
		if (frames[i] + (size_t)1 > *max)
			*max = frames[i] + (size_t)1;
	return 0;
}

int fl_pprof__add_profile(struct fl_pprof *p, const struct fl_profile *prof)
{
	struct from_profile c = {.p = p, .prof = prof};
	int err;

	fl_profile__for_each(prof, max_frame, &c.nr_loc_of);
	c.loc_of = calloc(c.nr_loc_of ? c.nr_loc_of : 1, sizeof(*c.loc_of));
	if (!c.loc_of)
		return -ENOMEM;
	err = fl_profile__for_each(prof, add_stack, &c);
	free(c.loc_of);
	free(c.locs);
	free(c.lines);
	free(c.name);
	return err;
}

/* ---- writing ---- */

/* Deflates in[0..n) into f as one gzip member. */
static int gzip_to(const uint8_t *in, size_t n, FILE *f)
{
	uint8_t out[64 * 1024];
	z_stream z = {0};
	int zr;

	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)in;
	do {
		/* avail_in is 32 bits: feed at most 1 GiB at a time. */
		size_t chunk = n > (1u << 30) ? (1u << 30) : n;

		z.avail_in = (uInt)chunk;
		n -= chunk;
		do {
			z.next_out = out;
			z.avail_out = sizeof(out);
			zr = deflate(&z, n ? Z_NO_FLUSH : Z_FINISH);
			if (zr == Z_STREAM_ERROR) {
				deflateEnd(&z);
				return -ENOMEM;
			}
			if (fwrite(out, 1, sizeof(out) - z.avail_out, f) != sizeof(out) - z.avail_out) {
				deflateEnd(&z);
				return -EIO;
			}
		} while (z.avail_out == 0);
	} while (n);
	deflateEnd(&z);
	return zr == Z_STREAM_END ? 0 : -EIO;
}

typedef Perftools__Profiles__Profile PProfile;
typedef Perftools__Profiles__ValueType PValueType;
typedef Perftools__Profiles__Sample PSample;
typedef Perftools__Profiles__Label PLabel;
typedef Perftools__Profiles__Mapping PMapping;
typedef Perftools__Profiles__Location PLocation;
typedef Perftools__Profiles__Line PLine;
typedef Perftools__Profiles__Function PFunction;

/* Everything the message points to, allocated at once and freed at once. */
struct msg {
	PProfile prof;
	PValueType types[2], period;
	PValueType *type_ptrs[2];
	PSample *samples, **sample_ptrs;
	PLabel *labels, **label_ptrs;
	uint64_t *loc_ids;
	int64_t *values;
	PMapping *maps, **map_ptrs;
	PLocation *locs, **loc_ptrs;
	PLine *lines, **line_ptrs;
	PFunction *funcs, **func_ptrs;
	char **strings;
};

static void msg_free(struct msg *m)
{
	free(m->samples);
	free(m->sample_ptrs);
	free(m->labels);
	free(m->label_ptrs);
	free(m->loc_ids);
	free(m->values);
	free(m->maps);
	free(m->map_ptrs);
	free(m->locs);
	free(m->loc_ptrs);
	free(m->lines);
	free(m->line_ptrs);
	free(m->funcs);
	free(m->func_ptrs);
	free(m->strings);
}

static int build_samples(const struct fl_pprof *p, struct msg *m)
{
	size_t ns = p->samples.nr_keys, nv = p->opts.period_ns ? 2 : 1, nlab = 0, nloc = 0;
	size_t pos = 0, len, li = 0, loci = 0;
	const void *key;
	uint64_t count;

	while (fl_keycount__next(&p->samples, &pos, &key, &len, &count)) {
		const uint32_t *k = key;

		nlab += (k[K_COMM] != 0) + (k[K_CGROUP] != 0) + (k[K_PID] != 0) + (k[K_TID] != 0);
		nloc += len / sizeof(uint32_t) - K__HEAD;
	}
	m->samples = calloc(ns ? ns : 1, sizeof(*m->samples));
	m->sample_ptrs = calloc(ns ? ns : 1, sizeof(*m->sample_ptrs));
	m->labels = calloc(nlab ? nlab : 1, sizeof(*m->labels));
	m->label_ptrs = calloc(nlab ? nlab : 1, sizeof(*m->label_ptrs));
	m->loc_ids = calloc(nloc ? nloc : 1, sizeof(*m->loc_ids));
	m->values = calloc(ns ? ns * nv : 1, sizeof(*m->values));
	if (!m->samples || !m->sample_ptrs || !m->labels || !m->label_ptrs || !m->loc_ids ||
	    !m->values)
		return -ENOMEM;
	pos = 0;
	for (size_t i = 0; fl_keycount__next(&p->samples, &pos, &key, &len, &count); i++) {
		const uint32_t *k = key;
		size_t n = len / sizeof(uint32_t) - K__HEAD;
		PSample *s = &m->samples[i];

		perftools__profiles__sample__init(s);
		m->sample_ptrs[i] = s;
		s->n_location_id = n;
		s->location_id = &m->loc_ids[loci];
		for (size_t j = 0; j < n; j++)
			m->loc_ids[loci++] = k[K__HEAD + j];
		s->n_value = nv;
		s->value = &m->values[i * nv];
		s->value[0] = count > INT64_MAX ? INT64_MAX : (int64_t)count;
		if (nv > 1)
			s->value[1] = count > (uint64_t)(INT64_MAX / p->opts.period_ns)
					      ? INT64_MAX
					      : (int64_t)count * p->opts.period_ns;
		s->label = &m->label_ptrs[li];
		for (int h = 0; h < K__HEAD; h++) {
			PLabel *l;

			if (!k[h])
				continue;
			l = &m->labels[li];
			perftools__profiles__label__init(l);
			m->label_ptrs[li++] = l;
			s->n_label++;
			switch (h) {
			case K_COMM:
				l->key = p->s_comm;
				l->str = k[h];
				break;
			case K_CGROUP:
				l->key = p->s_cgroup;
				l->str = k[h];
				break;
			case K_PID:
				l->key = p->s_pid;
				l->num = (int64_t)k[h] - 1;
				break;
			default:
				l->key = p->s_tid;
				l->num = (int64_t)k[h] - 1;
			}
		}
	}
	m->prof.n_sample = ns;
	m->prof.sample = m->sample_ptrs;
	return 0;
}

static int build(const struct fl_pprof *p, struct msg *m)
{
	size_t nstr;
	int err;

	perftools__profiles__profile__init(&m->prof);
	for (int i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&m->types[i]);
		m->type_ptrs[i] = &m->types[i];
	}
	m->types[0].type = p->s_samples;
	m->types[0].unit = p->s_count;
	m->types[1].type = p->s_cpu;
	m->types[1].unit = p->s_nanoseconds;
	m->prof.n_sample_type = p->opts.period_ns ? 2 : 1;
	m->prof.sample_type = m->type_ptrs;
	/* Drawn as samples first: the counts the folded stacks have. */
	m->prof.default_sample_type = p->s_samples;
	if (p->opts.period_ns) {
		perftools__profiles__value_type__init(&m->period);
		m->period.type = p->s_cpu;
		m->period.unit = p->s_nanoseconds;
		m->prof.period_type = &m->period;
		m->prof.period = p->opts.period_ns;
	}
	m->prof.time_nanos = p->time_ns;
	m->prof.duration_nanos = p->duration_ns;

	err = build_samples(p, m);
	if (err)
		return err;

	m->maps = calloc(p->nr_maps + 1, sizeof(*m->maps));
	m->map_ptrs = calloc(p->nr_maps + 1, sizeof(*m->map_ptrs));
	m->funcs = calloc(p->nr_funcs + 1, sizeof(*m->funcs));
	m->func_ptrs = calloc(p->nr_funcs + 1, sizeof(*m->func_ptrs));
	m->locs = calloc(p->nr_locs + 1, sizeof(*m->locs));
	m->loc_ptrs = calloc(p->nr_locs + 1, sizeof(*m->loc_ptrs));
	m->lines = calloc(p->nr_lines + 1, sizeof(*m->lines));
	m->line_ptrs = calloc(p->nr_lines + 1, sizeof(*m->line_ptrs));
	nstr = fl_strpool__count(p->strings);
	m->strings = calloc(nstr, sizeof(*m->strings));
	if (!m->maps || !m->map_ptrs || !m->funcs || !m->func_ptrs || !m->locs || !m->loc_ptrs ||
	    !m->lines || !m->line_ptrs || !m->strings)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_maps; i++) {
		PMapping *x = &m->maps[i];

		perftools__profiles__mapping__init(x);
		m->map_ptrs[i] = x;
		x->id = i + 1;
		x->memory_start = p->maps[i].start;
		x->memory_limit = p->maps[i].limit;
		x->file_offset = p->maps[i].offset;
		x->filename = p->maps[i].file;
		x->build_id = p->maps[i].build_id;
		x->has_functions = p->maps[i].functions;
		x->has_filenames = p->maps[i].filenames;
		x->has_line_numbers = p->maps[i].line_numbers;
		x->has_inline_frames = p->maps[i].inline_frames;
	}
	for (size_t i = 0; i < p->nr_funcs; i++) {
		PFunction *x = &m->funcs[i];

		perftools__profiles__function__init(x);
		m->func_ptrs[i] = x;
		x->id = i + 1;
		x->name = p->funcs[i].name;
		x->system_name = p->funcs[i].system_name;
		x->filename = p->funcs[i].file;
		x->start_line = p->funcs[i].start_line;
	}
	for (size_t i = 0; i < p->nr_lines; i++) {
		perftools__profiles__line__init(&m->lines[i]);
		m->line_ptrs[i] = &m->lines[i];
		m->lines[i].function_id = p->lines[i].function;
		m->lines[i].line = p->lines[i].line;
	}
	for (size_t i = 0; i < p->nr_locs; i++) {
		PLocation *x = &m->locs[i];

		perftools__profiles__location__init(x);
		m->loc_ptrs[i] = x;
		x->id = i + 1;
		x->mapping_id = p->locs[i].mapping;
		x->address = p->locs[i].address;
		x->n_line = p->locs[i].n;
		x->line = &m->line_ptrs[p->locs[i].first];
	}
	for (size_t i = 0; i < nstr; i++)
		m->strings[i] = (char *)fl_strpool__str(p->strings, (uint32_t)i);
	m->prof.n_mapping = p->nr_maps;
	m->prof.mapping = m->map_ptrs;
	m->prof.n_function = p->nr_funcs;
	m->prof.function = m->func_ptrs;
	m->prof.n_location = p->nr_locs;
	m->prof.location = m->loc_ptrs;
	m->prof.n_string_table = nstr;
	m->prof.string_table = m->strings;
	return 0;
}

int fl_pprof__write(const struct fl_pprof *p, FILE *f)
{
	struct msg m = {0};
	uint8_t *buf = NULL;
	size_t size;
	int err = build(p, &m);

	if (!err) {
		size = perftools__profiles__profile__get_packed_size(&m.prof);
		buf = malloc(size ? size : 1);
		err = buf ? 0 : -ENOMEM;
	}
	if (!err) {
		perftools__profiles__profile__pack(&m.prof, buf);
		err = gzip_to(buf, size, f);
	}
	if (!err && fflush(f))
		err = -EIO;
	free(buf);
	msg_free(&m);
	return err;
}
