// SPDX-License-Identifier: GPL-2.0-or-later
/* The pprof reader: gunzips and decodes an untrusted profile.proto message into folded lines. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "flamed/common/cleanup.h"
#include "flamed/formats/pprofread.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Sample Sample;

/*
 * Decoding takes more memory than the message: an empty Sample is 2 bytes
 * on the wire and some 80 in memory. Real profiles take 6 to 8 times their
 * size; past this many times (plus some slack), the message is refused
 * rather than allowed to take 40 times its size.
 */
#define DECODE_FACTOR 16
#define DECODE_SLACK (64u << 20)

/* --- input: gzip or not, capped ------------------------------------------------------ */

static bool is_gzip(const uint8_t *b, size_t len)
{
	return len >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

/*
 * The varint at b[*pos..n): 0 (read, *pos after it), 1 (it runs past n:
 * the rest was not seen) or -1 (longer than 10 bytes: not a varint).
 */
static int head_varint(const uint8_t *b, size_t n, size_t *pos, uint64_t *v)
{
	*v = 0;
	for (unsigned i = 0; i < 10; i++) {
		if (*pos >= n)
			return 1;
		*v |= (uint64_t)(b[*pos] & 0x7f) << (7 * i);
		if (!(b[(*pos)++] & 0x80))
			return 0;
	}
	return -1;
}

/* Whether a field of Profile has this number and wire type (0 varint, 2 length-delimited). */
static bool profile_field_ok(uint64_t field, unsigned wire_type)
{
	switch (field) {
	case 1:	 /* sample_type */
	case 2:	 /* sample */
	case 3:	 /* mapping */
	case 4:	 /* location */
	case 5:	 /* function */
	case 6:	 /* string_table */
	case 11: /* period_type */
		return wire_type == 2;
	case 7:	 /* drop_frames */
	case 8:	 /* keep_frames */
	case 9:	 /* time_nanos */
	case 10: /* duration_nanos */
	case 12: /* period */
	case 14: /* default_sample_type */
		return wire_type == 0;
	case 13: /* comment: packed or not */
		return wire_type == 0 || wire_type == 2;
	}
	return false;
}

/* A byte folded text never holds: a control character other than tab and line ends. */
static bool is_binary(uint8_t c)
{
	return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f;
}

bool fl_pprof__detect(const void *buf, size_t len)
{
	const uint8_t *b = buf;
	size_t n = len < FL_PPROF_DETECT_BYTES ? len : FL_PPROF_DETECT_BYTES, pos = 0, fields = 0;
	bool binary = false;

	if (is_gzip(b, len))
		return true; /* folded text never starts with a control character */
	/*
	 * A raw message. Writers put different fields first (Go: time_nanos;
	 * others: sample_type), so the first bytes are walked as fields of a
	 * Profile: each of them must be one, with its wire type, and a
	 * ValueType no longer than two varints can be. Text starting "H" or
	 * "\n" may pass that: it must also hold a control character, which
	 * every message has in its first bytes (small numbers, lengths) and
	 * folded text never has.
	 */
	for (size_t i = 0; i < n; i++)
		binary |= is_binary(b[i]);
	if (!binary)
		return false;
	while (pos < n) {
		uint64_t tag, v;
		int r = head_varint(b, n, &pos, &tag);

		if (r)
			return r > 0 && fields > 0;
		if (!profile_field_ok(tag >> 3, (unsigned)(tag & 7)))
			return false;
		fields++;
		r = head_varint(b, n, &pos, &v);
		if (r)
			return r > 0;
		if ((tag & 7) != 2)
			continue;
		if (((tag >> 3) == 1 || (tag >> 3) == 11) && v > 22)
			return false;
		if (v >= n - pos)
			break; /* runs past what is seen */
		pos += v;
	}
	return fields > 0;
}

/*
 * Inflates gzip (or zlib) data, concatenated gzip members too, into *ret (the
 * caller frees), at most max bytes. Returns 0, -EFBIG past max, -EINVAL
 * (corrupt or truncated; *why says which) or -ENOMEM.
 */
static int gunzip(const uint8_t *in, size_t len, size_t max, uint8_t **ret, size_t *ret_len,
		  const char **why)
{
	z_stream z = {};
	size_t cap = len < max / 4 ? len * 4 : max, out_len = 0, in_used = 0;
	_cleanup_free_ uint8_t *out = NULL;
	int rc, err = 0;

	if (cap < 4096)
		cap = 4096;
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	rc = inflateInit2(&z, 15 + 32); /* 15: the largest window; +32: gzip or zlib header */
	if (rc != Z_OK)
		return rc == Z_MEM_ERROR ? -ENOMEM : -EINVAL;
	for (;;) {
		if (out_len == cap) {
			/* Room for one byte more than max: a profile that fills it is too big. */
			size_t ncap = cap > max / 2 ? max + 1 : cap * 2;
			uint8_t *nout;

			if (cap > max) {
				err = -EFBIG;
				break;
			}
			nout = realloc(out, ncap);
			if (!nout) {
				err = -ENOMEM;
				break;
			}
			out = nout;
			cap = ncap;
		}
		/* zlib counts in uInt: feed and drain at most 1 GiB at a time. */
		z.next_in = (Bytef *)(uintptr_t)(in + in_used);
		z.avail_in = (uInt)(len - in_used < (1u << 30) ? len - in_used : (1u << 30));
		z.next_out = out + out_len;
		z.avail_out = (uInt)(cap - out_len < (1u << 30) ? cap - out_len : (1u << 30));
		rc = inflate(&z, Z_NO_FLUSH);
		in_used = (size_t)(z.next_in - in);
		out_len = (size_t)(z.next_out - out);
		if (rc == Z_STREAM_END) {
			/* Another gzip member follows (gzip a b > ab.gz), or the end: trailing bytes are ignored, as gzip -d does. */
			if (is_gzip(in + in_used, len - in_used) && inflateReset(&z) == Z_OK)
				continue;
			break;
		}
		if (rc == Z_OK)
			continue;
		if (rc == Z_BUF_ERROR && z.avail_out == 0)
			continue; /* out is full: grow it */
		if (rc == Z_MEM_ERROR) {
			err = -ENOMEM;
		} else {
			*why = rc == Z_BUF_ERROR ? "truncated gzip data" : "corrupt gzip data";
			err = -EINVAL;
		}
		break;
	}
	inflateEnd(&z);
	if (!err && out_len > max)
		err = -EFBIG;
	if (err)
		return err;
	*ret = TAKE_PTR(out);
	*ret_len = out_len;
	return 0;
}

/* protobuf-c's allocations, counted against a budget: the decoder's memory stays bounded. */
struct budget {
	size_t left;
	bool over;
};

static void *budget_alloc(void *data, size_t size)
{
	struct budget *b = data;

	if (size > b->left) {
		b->over = true;
		return NULL;
	}
	b->left -= size;
	return malloc(size ? size : 1);
}

static void budget_free(void *data, void *p)
{
	(void)data;
	free(p);
}

/* --- ids to indices ------------------------------------------------------------------ */

/*
 * Locations, functions and mappings are named by arbitrary uint64 ids.
 * Writers mostly number them 1..n in order ("dense": the id is the index
 * plus one, no table); otherwise a sorted array, the first of equal ids wins.
 */
struct id_index {
	uint64_t id;
	size_t i;
};

struct id_table {
	struct id_index *v; /* NULL when dense */
	size_t n;
};

static int cmp_id_index(const void *a, const void *b)
{
	const struct id_index *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* ids[i] is the id of the i-th object (an accessor: the objects differ in type). */
static int id_table_build(struct id_table *t, size_t n, uint64_t (*id_of)(const void *, size_t),
			  const void *objs)
{
	bool dense = true;
	size_t k = 0;

	t->n = n;
	t->v = NULL;
	for (size_t i = 0; i < n && dense; i++)
		dense = id_of(objs, i) == i + 1;
	if (dense || !n)
		return 0;
	t->v = malloc(n * sizeof(*t->v));
	if (!t->v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		t->v[i] = (struct id_index){.id = id_of(objs, i), .i = i};
	qsort(t->v, n, sizeof(*t->v), cmp_id_index);
	for (size_t i = 0; i < n; i++)
		if (!k || t->v[k - 1].id != t->v[i].id)
			t->v[k++] = t->v[i];
	t->n = k;
	return 0;
}

/* The index of id, or SIZE_MAX. Id 0 names nothing. */
static size_t id_table_find(const struct id_table *t, uint64_t id)
{
	size_t lo = 0, hi = t->n;

	if (!id)
		return SIZE_MAX;
	if (!t->v)
		return id <= t->n ? (size_t)(id - 1) : SIZE_MAX;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].id == id)
			return t->v[mid].i;
		if (t->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

static uint64_t location_id(const void *objs, size_t i)
{
	return ((Location *const *)objs)[i]->id;
}

static uint64_t function_id(const void *objs, size_t i)
{
	return ((Function *const *)objs)[i]->id;
}

static uint64_t mapping_id(const void *objs, size_t i)
{
	return ((Mapping *const *)objs)[i]->id;
}

/* --- the reader ---------------------------------------------------------------------- */

struct reader {
	const Profile *p;
	struct id_table locs, funcs, maps;
	uint8_t *fixed_seen; /* a bit per string: its fix was counted */
	struct fl_pprof_read_info *info;
	char *line; /* the folded line being built */
	size_t len, cap;
	size_t nr_frames;
	bool too_long; /* the line went past FL_FOLDED_MAX_LINE: the sample is skipped */
	/*
	 * Bytes of stack text still to be made: samples may all point at one
	 * huge name or one deep location, so the work is bounded by the
	 * message's size, not by the number of samples (PPROF_TEXT_FACTOR).
	 */
	uint64_t text_left;
};

/* Stack text a profile may make: this many times its message's size, and this much more. */
#define PPROF_TEXT_FACTOR 64u
#define PPROF_TEXT_SLACK (64ull << 20)

/* String idx of the table, or NULL (counted) when there is none. */
static const char *str_at(struct reader *r, int64_t idx)
{
	if (idx < 0 || (uint64_t)idx >= r->p->n_string_table) {
		r->info->bad_refs++;
		return NULL;
	}
	return r->p->string_table[idx];
}

static int append(struct reader *r, const char *s, size_t n)
{
	if (r->too_long || n > FL_FOLDED_MAX_LINE - r->len) {
		r->too_long = true;
		return 0;
	}
	if (r->len + n > r->cap) {
		size_t cap = r->cap ? r->cap : 256;
		char *nl;

		while (cap < r->len + n)
			cap *= 2;
		nl = realloc(r->line, cap);
		if (!nl)
			return -ENOMEM;
		r->line = nl;
		r->cap = cap;
	}
	if (n)
		memcpy(r->line + r->len, s, n);
	r->len += n;
	return 0;
}

static int append_str(struct reader *r, const char *s)
{
	return append(r, s, strlen(s));
}

/* A character a frame name cannot hold: the separator, or a control character. */
static bool needs_fix(unsigned char c)
{
	return c == ';' || c < 0x20 || c == 0x7f;
}

/*
 * Appends a name from the profile: ';' becomes ':' and control characters
 * '?' (counted once per string of the table, idx; -1: not from the table).
 */
static int append_name(struct reader *r, const char *s, int64_t idx)
{
	/* Past what the line can hold, the length does not matter: no need to find the end. */
	size_t start = r->len, n = strnlen(s, FL_FOLDED_MAX_LINE - r->len + 1);
	bool fixed = false;
	int err = append(r, s, n);

	if (err || r->too_long)
		return err;
	for (size_t i = start; i < r->len; i++) {
		unsigned char c = (unsigned char)r->line[i];

		if (needs_fix(c)) {
			r->line[i] = c == ';' ? ':' : '?';
			fixed = true;
		}
	}
	if (fixed) {
		if (idx < 0) {
			r->info->names_fixed++;
		} else if (!(r->fixed_seen[idx / 8] & (1u << (idx % 8)))) {
			r->fixed_seen[idx / 8] |= (uint8_t)(1u << (idx % 8));
			r->info->names_fixed++;
		}
	}
	return 0;
}

static int begin_frame(struct reader *r)
{
	return r->nr_frames++ ? append(r, ";", 1) : 0;
}

static const char *path_base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The mapping of the kernel, as perf names it: "[kernel.kallsyms]", "[kernel.kallsyms]_text". */
static bool is_kernel_mapping(const char *filename)
{
	return !strncmp(filename, "[kernel", 7);
}

/* A perf map, where JITs name their code: "/tmp/perf-1234.map". */
static bool is_perf_map(const char *filename)
{
	const char *b = path_base(filename), *p;

	if (strncmp(b, "perf-", 5))
		return false;
	for (p = b + 5; *p >= '0' && *p <= '9'; p++)
		;
	return p > b + 5 && !strcmp(p, ".map");
}

/* What a location's frames are named from: its mapping's file name ("" without) and kind. */
struct where {
	const char *filename;
	int64_t filename_idx;
	const char *suffix; /* "_[k]", "_[j]" or "" */
};

static struct where location_where(struct reader *r, const Location *loc)
{
	struct where w = {.filename = "", .filename_idx = -1, .suffix = ""};
	size_t mi;

	if (!loc->mapping_id)
		return w;
	mi = id_table_find(&r->maps, loc->mapping_id);
	if (mi == SIZE_MAX) {
		r->info->bad_refs++;
		return w;
	}
	w.filename = str_at(r, r->p->mapping[mi]->filename);
	if (!w.filename) {
		w.filename = "";
		return w;
	}
	w.filename_idx = r->p->mapping[mi]->filename;
	if (is_kernel_mapping(w.filename))
		w.suffix = "_[k]";
	else if (is_perf_map(w.filename))
		w.suffix = "_[j]";
	return w;
}

/* A frame without a name: "[basename of the mapping]", "[vdso]" as it is, or "[unknown]". */
static int append_unnamed(struct reader *r, const struct where *w)
{
	const char *base = path_base(w->filename);
	int err;

	if (w->filename[0] == '[')
		return append_name(r, w->filename, w->filename_idx);
	if (!*base)
		return append_str(r, "[unknown]");
	err = append(r, "[", 1);
	if (!err)
		err = append_name(r, base, w->filename_idx);
	if (!err)
		err = append(r, "]", 1);
	return err;
}

/* One line of a location: its function's name (else its system name, else unnamed) and suffix. */
static int append_line_frame(struct reader *r, const struct where *w, uint64_t function_id,
			     const char *suffix)
{
	size_t fi = id_table_find(&r->funcs, function_id);
	const char *name = NULL;
	int64_t idx = -1;
	int err;

	if (fi == SIZE_MAX) {
		r->info->bad_refs++;
	} else {
		const Function *fn = r->p->function[fi];

		idx = fn->name;
		name = str_at(r, idx);
		if (!name || !*name) {
			idx = fn->system_name;
			name = str_at(r, idx);
		}
	}
	err = begin_frame(r);
	if (!err)
		err = name && *name ? append_name(r, name, idx) : append_unnamed(r, w);
	if (!err)
		err = append_str(r, suffix);
	return err;
}

/* A location's frames, outermost first: its last line, then the inlined ones, "_[i]". */
static int append_location(struct reader *r, uint64_t id)
{
	size_t li = id_table_find(&r->locs, id);
	const Location *loc;
	struct where w;
	int err;

	if (li == SIZE_MAX) {
		r->info->bad_refs++;
		err = begin_frame(r);
		return err ? err : append_str(r, "[unknown]");
	}
	loc = r->p->location[li];
	w = location_where(r, loc);
	if (!loc->n_line) {
		err = begin_frame(r);
		if (!err)
			err = append_unnamed(r, &w);
		return err ? err : append_str(r, w.suffix);
	}
	for (size_t j = loc->n_line; j-- > 0 && !r->too_long;) {
		err = append_line_frame(r, &w, loc->line[j]->function_id,
					j == loc->n_line - 1 ? w.suffix : "_[i]");
		if (err)
			return err;
	}
	return 0;
}

/* The labels that make root frames. */
struct roots {
	const Perftools__Profiles__Label *comm, *pid, *tid, *cgroup;
};

static void find_roots(struct reader *r, const Sample *s, struct roots *rt)
{
	memset(rt, 0, sizeof(*rt));
	for (size_t i = 0; i < s->n_label; i++) {
		const Perftools__Profiles__Label *l = s->label[i];
		const char *key = str_at(r, l->key);

		if (!key)
			continue;
		/* The first label of a key wins. */
		if (!strcmp(key, "comm") && !rt->comm)
			rt->comm = l;
		else if (!strcmp(key, "pid") && !rt->pid)
			rt->pid = l;
		else if (!strcmp(key, "tid") && !rt->tid)
			rt->tid = l;
		else if (!strcmp(key, "cgroup") && !rt->cgroup)
			rt->cgroup = l;
	}
}

/* A label's value: its string, or its number without one. */
static int append_label(struct reader *r, const Perftools__Profiles__Label *l)
{
	char num[24];
	const char *s;

	if (!l->str) {
		snprintf(num, sizeof(num), "%lld", (long long)l->num);
		return append_str(r, num);
	}
	s = str_at(r, l->str);
	if (!s || !*s)
		return append_str(r, "[unknown]"); /* a frame is never empty */
	return append_name(r, s, l->str);
}

/* "cgroup;comm-PID/TID", as flamed's folded output starts its stacks. */
static int append_roots(struct reader *r, const Sample *s)
{
	struct roots rt;
	int err = 0;

	find_roots(r, s, &rt);
	if (rt.cgroup) {
		err = begin_frame(r);
		if (!err)
			err = append_label(r, rt.cgroup);
	}
	if (err || !(rt.comm || rt.pid || rt.tid))
		return err;
	err = begin_frame(r);
	if (err)
		return err;
	if (rt.comm) {
		size_t start = r->len;

		err = append_label(r, rt.comm);
		/* Blanks in a thread name are '_', as in every stackcollapse script. */
		for (size_t i = start; !err && i < r->len; i++)
			if (r->line[i] == ' ')
				r->line[i] = '_';
	} else {
		err = append_str(r, "[unknown]");
	}
	if (!err && rt.pid) {
		err = append(r, "-", 1);
		if (!err)
			err = append_label(r, rt.pid);
	}
	if (!err && rt.tid) {
		err = append(r, "/", 1);
		if (!err)
			err = append_label(r, rt.tid);
	}
	return err;
}

/* name copied into dst[64], cut if longer. */
static void copy_name(char dst[64], const char *name)
{
	snprintf(dst, 64, "%s", name ? name : "");
}

static bool type_is(struct reader *r, size_t i, const char *name)
{
	const char *t = str_at(r, r->p->sample_type[i]->type);

	return t && !strcmp(t, name);
}

/*
 * The index of the sample type to read: want, else the default, else
 * "cpu", else the first. -EINVAL without one (the names in info->type).
 */
static int choose_type(struct reader *r, const char *want, size_t *ret)
{
	const Profile *p = r->p;
	struct fl_pprof_read_info *info = r->info;

	if (!p->n_sample_type) {
		info->error = "no sample types: not a pprof profile";
		return -EINVAL;
	}
	if (want) {
		size_t n = 0;

		for (size_t i = 0; i < p->n_sample_type; i++)
			if (type_is(r, i, want)) {
				*ret = i;
				return 0;
			}
		/* "samples, cpu": as many as fit, then ", ...". */
		for (size_t i = 0; i < p->n_sample_type; i++) {
			const char *t = str_at(r, p->sample_type[i]->type);
			int k = snprintf(info->type + n, sizeof(info->type) - n, "%s%s",
					 i ? ", " : "", t && *t ? t : "[unnamed]");

			if (k < 0 || (size_t)k >= sizeof(info->type) - n) {
				size_t at = n < sizeof(info->type) - 6 ? n : sizeof(info->type) - 6;

				snprintf(info->type + at, 6, ", ...");
				break;
			}
			n += (size_t)k;
		}
		info->error = "no sample type of that name";
		return -EINVAL;
	}
	if (p->default_sample_type) {
		const char *def = str_at(r, p->default_sample_type);

		for (size_t i = 0; def && i < p->n_sample_type; i++)
			if (type_is(r, i, def)) {
				*ret = i;
				return 0;
			}
	}
	for (size_t i = 0; i < p->n_sample_type; i++)
		if (type_is(r, i, "cpu")) {
			*ret = i;
			return 0;
		}
	*ret = 0;
	return 0;
}

static int read_samples(struct reader *r, size_t ti, fl_folded_line_fn fn, void *ctx)
{
	const Profile *p = r->p;

	for (size_t i = 0; i < p->n_sample; i++) {
		const Sample *s = p->sample[i];
		struct fl_folded_line l = {.nr_counts = 1, .lineno = i + 1};
		int err;

		if (ti >= s->n_value) {
			r->info->bad_refs++; /* no value of that type */
			continue;
		}
		if (s->value[ti] == 0) {
			r->info->zero++;
			continue;
		}
		if (s->value[ti] < 0) {
			r->info->negative++;
			continue;
		}
		r->len = 0;
		r->nr_frames = 0;
		r->too_long = false;
		err = append_roots(r, s);
		/* location_id[0] is the leaf: the root is the last. */
		for (size_t k = s->n_location_id; !err && k-- > 0 && !r->too_long;)
			err = append_location(r, s->location_id[k]);
		if (!err && !r->nr_frames)
			err = append_str(
				r, "[unknown]"); /* no location, no label: a frame all the same */
		if (err)
			return err;
		if (r->too_long) {
			r->info->too_long++;
			continue;
		}
		if (r->len > r->text_left) {
			r->info->error = "stacks far larger than the profile (the same names again and again)";
			return -EFBIG;
		}
		r->text_left -= r->len;
		l.stack = r->line;
		l.len = r->len;
		l.count[0] = (double)s->value[ti];
		r->info->samples++;
		err = fn(&l, ctx);
		if (err)
			return err;
	}
	return 0;
}

static int read_profile(const Profile *p, size_t msg_len, const struct fl_pprof_read_opts *opts,
			fl_folded_line_fn fn, void *ctx, struct fl_pprof_read_info *info)
{
	struct reader r = {
		.p = p, .info = info, .text_left = msg_len * PPROF_TEXT_FACTOR + PPROF_TEXT_SLACK};
	size_t ti;
	int err;

	info->time_nanos = p->time_nanos;
	info->duration_nanos = p->duration_nanos;
	info->period = p->period;
	err = choose_type(&r, opts ? opts->sample_type : NULL, &ti);
	if (err)
		return err;
	copy_name(info->type, str_at(&r, p->sample_type[ti]->type));
	copy_name(info->unit, str_at(&r, p->sample_type[ti]->unit));
	r.fixed_seen = calloc(p->n_string_table / 8 + 1, 1);
	err = r.fixed_seen ? 0 : -ENOMEM;
	if (!err)
		err = id_table_build(&r.locs, p->n_location, location_id, p->location);
	if (!err)
		err = id_table_build(&r.funcs, p->n_function, function_id, p->function);
	if (!err)
		err = id_table_build(&r.maps, p->n_mapping, mapping_id, p->mapping);
	if (!err)
		err = read_samples(&r, ti, fn, ctx);
	free(r.fixed_seen);
	free(r.locs.v);
	free(r.funcs.v);
	free(r.maps.v);
	free(r.line);
	return err;
}

int fl_pprof__parse(const void *buf, size_t len, const struct fl_pprof_read_opts *opts,
		    fl_folded_line_fn fn, void *ctx, struct fl_pprof_read_info *info)
{
	size_t max = FL_PPROF_MAX_BYTES;
	_cleanup_free_ uint8_t *plain = NULL;
	const uint8_t *msg = buf;
	size_t msg_len = len;
	struct budget b;
	ProtobufCAllocator alloc = {
		.alloc = budget_alloc, .free = budget_free, .allocator_data = &b};
	Profile *p;
	int err;

	memset(info, 0, sizeof(*info));
	if (opts && opts->sz >= offsetof(struct fl_pprof_read_opts, max_bytes) + sizeof(size_t) &&
	    opts->max_bytes && opts->max_bytes < max)
		max = opts->max_bytes;
	if (is_gzip(buf, len)) {
		err = gunzip(buf, len, max, &plain, &msg_len, &info->error);
		if (err == -EFBIG)
			info->error = "larger than the limit once decompressed";
		if (err)
			return err;
		msg = plain;
	} else if (len > max) {
		info->error = "larger than the limit";
		return -EFBIG;
	}
	b = (struct budget){.left = msg_len * DECODE_FACTOR + DECODE_SLACK};
	p = perftools__profiles__profile__unpack(&alloc, msg_len, msg);
	if (!p) {
		if (b.over) {
			info->error = "too many objects for its size";
			return -EFBIG;
		}
		info->error = is_gzip(buf, len)
				      ? "the data in the gzip file is not a profile.proto message"
				      : "not a profile.proto message";
		return -EINVAL;
	}
	/* The plain bytes are not needed any more: strings and arrays were copied. */
	free(TAKE_PTR(plain));
	err = read_profile(p, msg_len, opts, fn, ctx, info);
	perftools__profiles__profile__free_unpacked(p, &alloc);
	return err;
}
