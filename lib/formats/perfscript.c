// SPDX-License-Identifier: GPL-2.0-or-later
/* A streaming parser of `perf script` text (see perfscript.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memrchr */
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flamed/formats/perfscript.h"

/* A frame while its sample is read: offsets into the text arena, which may move. */
struct pframe {
	size_t addr, addr_len, sym, sym_len, mod, mod_len;
	uint64_t offset;
	bool has_offset, has_mod;
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

/* Byte classes, as Perl's on bytes: \s, \w, \d; and hex digit values plus one. */
enum { C_SPACE = 1, C_WORD = 2, C_DIGIT = 4 };

static const unsigned char ctype_tab[256] = {
	[' '] = C_SPACE,  ['\t'] = C_SPACE, ['\n'] = C_SPACE, ['\v'] = C_SPACE,
	['\f'] = C_SPACE, ['\r'] = C_SPACE, ['_'] = C_WORD,
#define D(c) [c] = C_WORD | C_DIGIT
	D('0'), D('1'), D('2'), D('3'), D('4'), D('5'), D('6'), D('7'), D('8'), D('9'),
#undef D
#define W(c) [c] = C_WORD, [c - 'a' + 'A'] = C_WORD
	W('a'), W('b'), W('c'), W('d'), W('e'), W('f'), W('g'), W('h'), W('i'),
	W('j'), W('k'), W('l'), W('m'), W('n'), W('o'), W('p'), W('q'), W('r'),
	W('s'), W('t'), W('u'), W('v'), W('w'), W('x'), W('y'), W('z'),
#undef W
};

static bool is_space(char c)
{
	return ctype_tab[(unsigned char)c] & C_SPACE;
}

static bool is_word(char c)
{
	return ctype_tab[(unsigned char)c] & C_WORD;
}

static bool is_digit(char c)
{
	return ctype_tab[(unsigned char)c] & C_DIGIT;
}

/* perf's indentation: what a stack line that the script's pattern misses must start with. */
static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Hex digit values plus one, 0 for other bytes. */
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

/*
 * The event and period, as stackcollapse-perf.pl finds them: the line ends
 * with ':' and blanks; before that ':' a run of non-blanks (the event), a
 * run of blanks, optional digits (the period), optional blanks, and a ':'
 * (the time's).
 */
static void parse_event(const char *l, size_t len, size_t from, struct fl_ps_sample *out)
{
	size_t t = len, u, w, d, c;
	uint64_t period = 0;

	while (t > from && is_space(l[t - 1]))
		t--;
	if (t <= from || l[t - 1] != ':')
		return;
	t--;
	for (u = t; u > from && !is_space(l[u - 1]); u--)
		;
	if (u == t)
		return;
	for (w = u; w > from && is_space(l[w - 1]); w--)
		;
	if (w == u)
		return;
	for (d = w; d > from && is_digit(l[d - 1]); d--)
		;
	for (c = d; c > from && is_space(l[c - 1]); c--)
		;
	if (c <= from || l[c - 1] != ':')
		return;
	for (size_t j = d; j < w; j++)
		period = period > (UINT64_MAX - 9) / 10 ? UINT64_MAX
							 : period * 10 + (uint64_t)(l[j] - '0');
	out->event = (struct fl_ps_str){l + u, t - u};
	out->period = period;
}

/*
 * A header is what stackcollapse-perf.pl takes for one: a non-blank, then
 * the shortest run of bytes followed by blanks, digits (the pid, or the tid
 * alone), optional '/'s and digits (the tid) and a blank. (The script wants
 * a comm of two bytes at least: "a 1/1 [000] 1.0: 1 cpu-clock:" is the
 * process "a" here, "a 1/1 [000] 1.0:" there.) Only the first blank of a
 * run of blanks can end the comm, so this is linear in the line.
 */
bool fl_perfscript__parse_header(const char *l, size_t len, struct fl_ps_sample *out)
{
	memset(out, 0, sizeof(*out));
	if (len < 2 || is_space(l[0]))
		return false;
	for (size_t e = 1; e < len;) {
		size_t k, m, s, q;

		if (!is_space(l[e])) {
			e++;
			continue;
		}
		for (k = e; k < len && is_space(l[k]); k++)
			;
		for (m = k; m < len && is_digit(l[m]); m++)
			;
		for (s = m; s < len && l[s] == '/'; s++)
			;
		for (q = s; q < len && is_digit(l[q]); q++)
			;
		if (m > k && q < len && is_space(l[q])) {
			out->comm = (struct fl_ps_str){l, e};
			/* A lone number, or a tid of "0" (swapper's "0/0"), is the tid; the pid is unknown. */
			if (q == s || (q - s == 1 && l[s] == '0')) {
				out->tid = (struct fl_ps_str){l + k, m - k};
				out->pid = (struct fl_ps_str){l + k, 0};
			} else {
				out->pid = (struct fl_ps_str){l + k, m - k};
				out->tid = (struct fl_ps_str){l + s, q - s};
			}
			parse_event(l, len, 0, out);
			return true;
		}
		e = k;
	}
	return false;
}

/* "+0x" and lower-case hex digits at the end of sym: the offset into the symbol, cut. */
static void cut_offset(struct fl_ps_frame *out)
{
	const char *s = out->sym.s;
	size_t h = out->sym.len;

	while (h > 0 && ((s[h - 1] >= '0' && s[h - 1] <= '9') || (s[h - 1] >= 'a' && s[h - 1] <= 'f')))
		h--;
	if (h == out->sym.len || h < 3 || s[h - 1] != 'x' || s[h - 2] != '0' || s[h - 3] != '+')
		return;
	if (out->sym.len - h <= 16) {
		uint64_t off = 0;

		for (size_t j = h; j < out->sym.len; j++)
			off = off << 4 | (uint64_t)hexval(s[j]);
		out->offset = off;
		out->has_offset = true;
	}
	out->sym.len = h - 3;
}

/*
 * An indented line the script's pattern misses: a hex address, then the
 * symbol, then "(module)" balanced at the end after a blank (a module whose
 * path holds blanks), or no module at all (perf script -F ip,sym).
 */
static bool parse_frame_loose(const char *l, size_t len, struct fl_ps_frame *out)
{
	size_t a, b, r, e, s_end;

	if (!len || !is_blank(l[0]))
		return false;
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
			out->has_mod = true;
			for (s_end = o; s_end > r && is_blank(l[s_end - 1]); s_end--)
				;
		}
	}
	out->sym = (struct fl_ps_str){l + r, s_end - r};
	if (!out->sym.len)
		out->sym = (struct fl_ps_str){"[unknown]", 9};
	return true;
}

/*
 * A stack line, as stackcollapse-perf.pl matches it: optional blanks, a run
 * of word characters (the address), optional blanks, the symbol (one byte
 * or more), then " (", non-blanks up to a ')' (the module), anything after.
 * The script's pattern backtracks; this finds the same match directly:
 *  - the module opens at the last " (" whose run of non-blanks holds a ')',
 *    and ends at the last ')' of that run;
 *  - the symbol is everything between the blanks after the address and that
 *    " (" when there is room; else the last blank before it (perf's empty
 *    symbol, "7f1e22  (/lib/x.so)", is " ").
 * Where the address is followed by " (" at once ("15c7 (/x)", perf script
 * -F ip,dso), the symbol is unknown (the script's backtracking takes the
 * address's last byte for it: "7").
 * "f (/lib/x.so (deleted))" is f in "/lib/x.so (deleted)" (the script reads
 * the symbol "f (/lib/x.so" in the module "deleted)").
 */
bool fl_perfscript__parse_frame(const char *l, size_t len, struct fl_ps_frame *out)
{
	size_t i0, w, s, p, mod_end = 0;
	bool found = false;

	memset(out, 0, sizeof(*out));
	for (i0 = 0; i0 < len && is_space(l[i0]); i0++)
		;
	for (w = i0; w < len && is_word(l[w]); w++)
		;
	for (s = w; s < len && is_space(l[s]); s++)
		;
	/*
	 * The '('s from the end (memrchr); one after a ' ' opens the module when
	 * its run of non-blanks holds a ')'. Those runs start after a blank and
	 * end at one: each byte is looked at once.
	 */
	if (w > i0) {
		const char *o, *q = l + len;

		while ((o = memrchr(l + w, '(', (size_t)(q - (l + w))))) {
			p = (size_t)(o - l);
			if (p > w && l[p - 1] == ' ') {
				for (size_t r = p + 1; r < len && !is_space(l[r]); r++)
					if (l[r] == ')')
						mod_end = r;
				if (mod_end) {
					p--;
					found = true;
					break;
				}
			}
			q = o;
		}
	}
	if (!found) {
		if (!parse_frame_loose(l, len, out))
			return false;
		cut_offset(out);
		return true;
	}
	out->mod = (struct fl_ps_str){l + p + 2, mod_end - (p + 2)};
	out->has_mod = true;
	if (p >= s + 1) {
		out->addr = (struct fl_ps_str){l + i0, w - i0};
		out->sym = (struct fl_ps_str){l + s, p - s};
	} else if (p >= w + 1) {
		out->addr = (struct fl_ps_str){l + i0, w - i0};
		out->sym = (struct fl_ps_str){l + p - 1, 1};
	} else {
		/* "15c7 (/x)" (perf script -F ip,dso): no symbol, not the script's "7". */
		out->addr = (struct fl_ps_str){l + i0, w - i0};
		out->sym = (struct fl_ps_str){"[unknown]", 9};
	}
	if (out->mod.len == 8 && !memcmp(out->mod.s, "deleted)", 8)) {
		const char *sym = out->sym.s;

		for (size_t j = out->sym.len; j >= 2; j--)
			if (sym[j - 2] == ' ' && sym[j - 1] == '(') {
				out->mod = (struct fl_ps_str){sym + j, mod_end - (size_t)(sym + j - l)};
				out->sym.len = j - 2;
				break;
			}
	}
	cut_offset(out);
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
				.has_mod = f->has_mod,
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

static int add_frame(struct fl_perfscript *p, const struct fl_ps_frame *f)
{
	struct pframe *pf;
	size_t base;

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
	if (grow(&p->text, &p->text_cap, p->text_len + f->addr.len + f->sym.len + f->mod.len))
		return -ENOMEM;
	base = p->text_len;
	pf = &p->pf[p->nr_frames++];
	pf->addr = base;
	pf->addr_len = f->addr.len;
	base = copy_text(p, base, f->addr);
	pf->sym = base;
	pf->sym_len = f->sym.len;
	base = copy_text(p, base, f->sym);
	pf->mod = base;
	pf->mod_len = f->mod.len;
	p->text_len = copy_text(p, base, f->mod);
	pf->offset = f->offset;
	pf->has_offset = f->has_offset;
	pf->has_mod = f->has_mod;
	return 0;
}

/* A field of the header parsed in l, moved to the same place in the copy at to. */
static struct fl_ps_str rebase(struct fl_ps_str s, const char *l, const char *to)
{
	return (struct fl_ps_str){s.s ? to + (s.s - l) : NULL, s.len};
}

static int do_line(struct fl_perfscript *p, const char *l, size_t len)
{
	struct fl_ps_sample h;
	struct fl_ps_frame f;
	int err;

	p->st.lines++;
	if (len && l[len - 1] == '\r')
		len--;
	if (!len)
		return end_sample(p);
	if (l[0] == '#')
		return 0;
	if (fl_perfscript__parse_header(l, len, &h)) {
		err = end_sample(p);
		if (err)
			return err;
		if (grow(&p->header, &p->header_cap, len))
			return -ENOMEM;
		memcpy(p->header, l, len);
		p->header_len = len;
		p->hdr = h;
		p->hdr.comm = rebase(h.comm, l, p->header);
		p->hdr.pid = rebase(h.pid, l, p->header);
		p->hdr.tid = rebase(h.tid, l, p->header);
		p->hdr.event = rebase(h.event, l, p->header);
		p->in_sample = true;
		return 0;
	}
	if (!fl_perfscript__parse_frame(l, len, &f)) {
		p->st.unrecognized++;
		/* Not a header: the stack lines after it have no sample. */
		if (!p->in_sample && !is_blank(l[0]))
			p->dropping = true;
		return 0;
	}
	if (p->in_sample)
		return add_frame(p, &f);
	if (p->dropping)
		p->st.dropped++;
	else
		p->st.unrecognized++;
	return 0;
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
