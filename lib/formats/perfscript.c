// SPDX-License-Identifier: GPL-2.0-or-later
/* A streaming parser of `perf script` text (see perfscript.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/formats/perfscript.h"

/* A frame while its sample is read: offsets into the text arena, which may move. */
struct pframe {
	size_t addr, addr_len, sym, sym_len, mod, mod_len;
	uint64_t offset;
	bool has_offset;
};

struct fl_perfscript {
	fl_ps_sample_fn fn;
	void *ctx;
	/* A line cut by the end of a chunk. */
	char *line;
	size_t line_len, line_cap;
	bool too_long; /* the line being read passed FL_PS_MAX_LINE: skipped to its end */
	/* The sample being read. */
	bool in_sample, dropping;
	char *header; /* a copy of its header line */
	size_t header_len, header_cap;
	struct fl_ps_sample hdr; /* parsed, pointing into header */
	char *text;		 /* its frames' text */
	size_t text_len, text_cap;
	struct pframe *pf;
	struct fl_ps_frame *frames;
	size_t nr_frames, cap_frames;
	struct fl_ps_stats st;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Hex digit values plus one, 0 for other bytes: the parser's hottest test. */
static const unsigned char hex_tab[256] = {
	['0'] = 1,  ['1'] = 2,	['2'] = 3,  ['3'] = 4,	['4'] = 5,  ['5'] = 6,
	['6'] = 7,  ['7'] = 8,	['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12,
	['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12,
	['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

static int hexval(char c)
{
	return hex_tab[(unsigned char)c] - 1;
}

static int grow(char **buf, size_t *cap, size_t need)
{
	size_t ncap = *cap ? *cap : 256;
	char *nb;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	nb = realloc(*buf, ncap);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = ncap;
	return 0;
}

bool fl_perfscript__parse_header(const char *l, size_t len, struct fl_ps_sample *out)
{
	size_t i, k, m, e, ts, q, ps;
	bool found = false;

	memset(out, 0, sizeof(*out));
	/* comm: up to the first blank run followed by PID[/TID] and a blank or the end. */
	for (i = 1; i < len && !found; i++) {
		if (!is_blank(l[i]) || is_blank(l[i - 1]))
			continue;
		for (k = i; k < len && is_blank(l[k]); k++)
			;
		if (k == len || !is_digit(l[k]))
			continue;
		for (m = k; m < len && is_digit(l[m]); m++)
			;
		out->pid = (struct fl_ps_str){l + k, m - k};
		if (m + 1 < len && l[m] == '/' && is_digit(l[m + 1])) {
			size_t t = m + 1;

			for (m = t; m < len && is_digit(l[m]); m++)
				;
			out->tid = (struct fl_ps_str){l + t, m - t};
		} else {
			out->tid = out->pid;
			out->pid = (struct fl_ps_str){l + k, 0};
		}
		if (m < len && !is_blank(l[m]))
			continue;
		out->comm = (struct fl_ps_str){l, i};
		found = true;
	}
	if (!found)
		return false;
	/*
	 * The event is looked for after the comm, not after the pid: in a
	 * header perf writes for a sample of an unknown thread (":-1 -1 [000]
	 * 2.5: 1001001 cpu-clock:"), the first pid-shaped field is the period.
	 */
	i = out->comm.len;

	/* "...: [PERIOD] EVENT:" at the end. */
	for (e = len; e > i && is_blank(l[e - 1]); e--)
		;
	if (e <= i || l[e - 1] != ':')
		return true;
	for (ts = e - 1; ts > i && !is_blank(l[ts - 1]); ts--)
		;
	if (ts == e - 1 || ts <= i)
		return true;
	for (q = ts; q > i && is_blank(l[q - 1]); q--)
		;
	if (q == ts)
		return true;
	/* An optional period, all digits, between the ':' and the event. */
	for (ps = q; ps > i && is_digit(l[ps - 1]); ps--)
		;
	if (ps < q && ps > i && (is_blank(l[ps - 1]) || l[ps - 1] == ':')) {
		size_t c = ps;
		uint64_t period = 0;

		while (c > i && is_blank(l[c - 1]))
			c--;
		if (c > 0 && l[c - 1] == ':') {
			for (size_t j = ps; j < q; j++)
				period = period * 10 + (uint64_t)(l[j] - '0');
			out->period = period;
			out->event = (struct fl_ps_str){l + ts, e - 1 - ts};
			return true;
		}
	}
	if (q > 0 && l[q - 1] == ':')
		out->event = (struct fl_ps_str){l + ts, e - 1 - ts};
	return true;
}

bool fl_perfscript__parse_frame(const char *l, size_t len, struct fl_ps_frame *out)
{
	size_t a, b, r, e, s_end;

	memset(out, 0, sizeof(*out));
	for (a = 0; a < len && is_blank(l[a]); a++)
		;
	for (b = a; b < len && hexval(l[b]) >= 0; b++)
		;
	if (b == a || (b < len && !is_blank(l[b])))
		return false;
	out->addr = (struct fl_ps_str){l + a, b - a};
	for (r = b; r < len && is_blank(l[r]); r++)
		;
	for (e = len; e > r && is_blank(l[e - 1]); e--)
		;
	s_end = e;
	if (e > r && l[e - 1] == ')') {
		size_t o = e - 1;
		int depth = 0;

		while (o > r) {
			o--;
			if (l[o] == ')')
				depth++;
			else if (l[o] == '(' && depth-- == 0)
				break;
		}
		if (l[o] == '(' && depth < 0 && (o == r || is_blank(l[o - 1]))) {
			out->mod = (struct fl_ps_str){l + o + 1, e - 1 - (o + 1)};
			for (s_end = o; s_end > r && is_blank(l[s_end - 1]); s_end--)
				;
		}
	}
	out->sym = (struct fl_ps_str){l + r, s_end - r};
	/* "+0x1f": the offset into the symbol. */
	if (out->sym.len > 3) {
		const char *s = out->sym.s;
		size_t h = out->sym.len;

		while (h > 0 && hexval(s[h - 1]) >= 0)
			h--;
		if (h < out->sym.len && h >= 3 && s[h - 1] == 'x' && s[h - 2] == '0' &&
		    s[h - 3] == '+' && out->sym.len - h <= 16) {
			uint64_t off = 0;

			for (size_t j = h; j < out->sym.len; j++)
				off = off << 4 | (uint64_t)hexval(s[j]);
			out->offset = off;
			out->has_offset = true;
			out->sym.len = h - 3;
		}
	}
	return true;
}

int fl_perfscript__new(fl_ps_sample_fn fn, void *ctx, struct fl_perfscript **ret)
{
	struct fl_perfscript *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->fn = fn;
	p->ctx = ctx;
	*ret = p;
	return 0;
}

void fl_perfscript__free(struct fl_perfscript *p)
{
	if (!p)
		return;
	free(p->line);
	free(p->header);
	free(p->text);
	free(p->pf);
	free(p->frames);
	free(p);
}

static int end_sample(struct fl_perfscript *p)
{
	struct fl_ps_sample s = p->hdr;
	int err = 0;

	if (p->in_sample) {
		for (size_t i = 0; i < p->nr_frames; i++) {
			const struct pframe *f = &p->pf[i];

			p->frames[i] = (struct fl_ps_frame){
				.addr = {p->text + f->addr, f->addr_len},
				.sym = {p->text + f->sym, f->sym_len},
				.mod = {p->text + f->mod, f->mod_len},
				.offset = f->offset,
				.has_offset = f->has_offset,
			};
		}
		s.frames = p->frames;
		s.nr_frames = p->nr_frames;
		p->st.samples++;
		err = p->fn(&s, p->ctx);
	}
	p->in_sample = false;
	p->dropping = false;
	p->nr_frames = 0;
	p->text_len = 0;
	return err;
}

/* Appends s at off of the frames' text (room made by the caller); an empty s may have no pointer. */
static size_t copy_text(struct fl_perfscript *p, size_t off, struct fl_ps_str s)
{
	if (s.len)
		memcpy(p->text + off, s.s, s.len);
	return off + s.len;
}

static int add_frame(struct fl_perfscript *p, const char *l, size_t len)
{
	struct fl_ps_frame f;
	struct pframe *pf;
	size_t base;

	if (!fl_perfscript__parse_frame(l, len, &f)) {
		p->st.unrecognized++;
		return 0;
	}
	if (p->nr_frames == p->cap_frames) {
		size_t ncap = p->cap_frames ? p->cap_frames * 2 : 64;
		struct pframe *npf = realloc(p->pf, ncap * sizeof(*npf));
		struct fl_ps_frame *nf;

		if (!npf)
			return -ENOMEM;
		p->pf = npf;
		nf = realloc(p->frames, ncap * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		p->frames = nf;
		p->cap_frames = ncap;
	}
	if (grow(&p->text, &p->text_cap, p->text_len + f.addr.len + f.sym.len + f.mod.len))
		return -ENOMEM;
	base = p->text_len;
	pf = &p->pf[p->nr_frames++];
	pf->addr = base;
	pf->addr_len = f.addr.len;
	base = copy_text(p, base, f.addr);
	pf->sym = base;
	pf->sym_len = f.sym.len;
	base = copy_text(p, base, f.sym);
	pf->mod = base;
	pf->mod_len = f.mod.len;
	p->text_len = copy_text(p, base, f.mod);
	pf->offset = f.offset;
	pf->has_offset = f.has_offset;
	return 0;
}

static int do_line(struct fl_perfscript *p, const char *l, size_t len)
{
	size_t i;

	p->st.lines++;
	if (len && l[len - 1] == '\r')
		len--;
	for (i = 0; i < len && is_blank(l[i]); i++)
		;
	if (i == len)
		return end_sample(p);
	if (i == 0) {
		int err;

		if (l[0] == '#')
			return 0;
		err = end_sample(p);
		if (err)
			return err;
		if (grow(&p->header, &p->header_cap, len ? len : 1))
			return -ENOMEM;
		memcpy(p->header, l, len);
		p->header_len = len;
		if (!fl_perfscript__parse_header(p->header, len, &p->hdr)) {
			p->st.unrecognized++;
			p->dropping = true;
			return 0;
		}
		p->in_sample = true;
		return 0;
	}
	if (p->dropping) {
		p->st.dropped++;
		return 0;
	}
	if (!p->in_sample) {
		p->st.unrecognized++;
		return 0;
	}
	return add_frame(p, l, len);
}

/*
 * A line longer than the cap, starting with first: skipped whole. A header
 * ends the sample before it and starts one that is dropped; a stack line
 * drops its sample (a stack missing a frame would name the wrong code).
 */
static int skip_long_line(struct fl_perfscript *p, char first)
{
	int err = 0;

	p->st.too_long++;
	p->st.lines++;
	if (first == '#')
		return 0;
	if (!is_blank(first))
		err = end_sample(p);
	p->in_sample = false;
	p->dropping = true;
	p->nr_frames = 0;
	p->text_len = 0;
	return err;
}

int fl_perfscript__feed(struct fl_perfscript *p, const char *buf, size_t len)
{
	const char *end = buf + len;
	int err;

	while (buf < end) {
		const char *nl = memchr(buf, '\n', (size_t)(end - buf));
		size_t n = nl ? (size_t)(nl - buf) : (size_t)(end - buf);

		if (p->too_long) {
			/* The rest of an over-long line: dropped up to its end. */
			if (nl)
				p->too_long = false;
		} else if (p->line_len + n > FL_PS_MAX_LINE) {
			char first = p->line_len ? p->line[0] : buf[0];

			p->line_len = 0;
			err = skip_long_line(p, first);
			if (err)
				return err;
			p->too_long = !nl;
		} else if (!nl) {
			if (grow(&p->line, &p->line_cap, p->line_len + n))
				return -ENOMEM;
			memcpy(p->line + p->line_len, buf, n);
			p->line_len += n;
		} else if (p->line_len) {
			if (grow(&p->line, &p->line_cap, p->line_len + n))
				return -ENOMEM;
			memcpy(p->line + p->line_len, buf, n);
			err = do_line(p, p->line, p->line_len + n);
			p->line_len = 0;
			if (err)
				return err;
		} else {
			err = do_line(p, buf, n);
			if (err)
				return err;
		}
		buf += n + (nl != NULL);
	}
	return 0;
}

int fl_perfscript__finish(struct fl_perfscript *p)
{
	int err = 0;

	if (p->line_len && !p->too_long)
		err = do_line(p, p->line, p->line_len);
	p->line_len = 0;
	p->too_long = false;
	return err ?: end_sample(p);
}

void fl_perfscript__stats(const struct fl_perfscript *p, struct fl_ps_stats *st)
{
	*st = p->st;
}
