// SPDX-License-Identifier: GPL-2.0-or-later
/* The daemon's snapshot directory read back: listing, TIME and RANGE parsing, range selection. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/daemon/snapdir.h"

#define NS_PER_S 1000000000LL
#define SNAPDIR_MAX_DEFAULT 1000000

struct fl_snapdir {
	int dfd;
	struct fl_snapshot *snaps;
	size_t nr;
};

static const struct {
	unsigned int bit;
	const char *ext;
} formats[] = {
	{FL_SNAP_FOLDED, ".folded"},
	{FL_SNAP_SVG, ".svg"},
	{FL_SNAP_PPROF, ".pb.gz"},
	{FL_SNAP_HTML, ".html"},
};

/* ---- small parsers --------------------------------------------------------------- */

/* Exactly n decimal digits at *p, into *v; advances *p. */
static bool take_digits(const char **p, int n, int *v)
{
	int x = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];

		if (c < '0' || c > '9')
			return false;
		x = x * 10 + (c - '0');
	}
	*p += n;
	*v = x;
	return true;
}

static bool is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* The years whose every second fits in int64_t nanoseconds, with a margin. */
static bool year_in_range(int y)
{
	return y > 1678 && y < 2262;
}

/* A calendar date and time of day, checked; fields as written (month 1-12). */
struct civil {
	int year, mon, mday, hour, min, sec;
};

static const char *check_civil(const struct civil *c)
{
	if (c->mon < 1 || c->mon > 12)
		return "no such month (01 to 12)";
	if (c->mday < 1 || c->mday > days_in_month(c->year, c->mon))
		return "no such day in that month";
	if (c->hour > 23)
		return "no such hour (00 to 23)";
	if (c->min > 59)
		return "no such minute (00 to 59)";
	if (c->sec > 59)
		return "no such second (00 to 59)";
	return NULL;
}

static struct tm civil_tm(const struct civil *c)
{
	struct tm tm = {
		.tm_year = c->year - 1900,
		.tm_mon = c->mon - 1,
		.tm_mday = c->mday,
		.tm_hour = c->hour,
		.tm_min = c->min,
		.tm_sec = c->sec,
		.tm_isdst = -1,
	};

	return tm;
}

/* ---- snapshot names -------------------------------------------------------------- */

bool fl_snapdir__parse_name(const char *name, struct fl_snapshot *s, unsigned int *format)
{
	const char *p = name, *base_end;
	struct civil c = {};
	unsigned int seq = 1;
	struct tm tm;

	if (!take_digits(&p, 4, &c.year) || *p++ != '-' || !take_digits(&p, 2, &c.mon) ||
	    *p++ != '-' || !take_digits(&p, 2, &c.mday) || *p++ != 'T' ||
	    !take_digits(&p, 2, &c.hour) || *p++ != '-' || !take_digits(&p, 2, &c.min) ||
	    *p++ != '-' || !take_digits(&p, 2, &c.sec) || *p++ != 'Z')
		return false;
	if (check_civil(&c) || !year_in_range(c.year))
		return false;
	if (*p == '-') {
		int n = 0;

		p++;
		/* "-2", "-17": the daemon's; "-1", "-02" and endless digits are no name of its. */
		if (*p < '1' || *p > '9')
			return false;
		seq = 0;
		while (*p >= '0' && *p <= '9' && n < 10) {
			seq = seq * 10 + (unsigned int)(*p++ - '0');
			n++;
		}
		if (n > 9 || seq < 2)
			return false;
	}
	base_end = p;
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strcmp(p, formats[i].ext))
			continue;
		if ((size_t)(base_end - name) >= sizeof(s->base))
			return false;
		memcpy(s->base, name, (size_t)(base_end - name));
		s->base[base_end - name] = '\0';
		tm = civil_tm(&c);
		tm.tm_isdst = 0;
		s->start_ns = (int64_t)timegm(&tm) * NS_PER_S;
		s->seq = seq;
		*format = formats[i].bit;
		return true;
	}
	return false;
}

const char *fl_snapdir__file_name(const struct fl_snapshot *s, unsigned int format,
				  char buf[FL_SNAP_NAME_MAX])
{
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (formats[i].bit == format)
			snprintf(buf, FL_SNAP_NAME_MAX, "%s%s", s->base, formats[i].ext);
	return buf;
}

/* ---- the listing ----------------------------------------------------------------- */

static int cmp_snapshot(const void *a, const void *b)
{
	const struct fl_snapshot *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void fl_snapdir__free(struct fl_snapdir *d)
{
	if (!d)
		return;
	if (d->dfd >= 0)
		close(d->dfd);
	free(d->snaps);
	free(d);
}

DEFINE_FREE_FUNC(struct fl_snapdir, fl_snapdir__free)

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

int fl_snapdir__scan(int dirfd, const char *path, size_t max, struct fl_snapdir **ret)
{
	_cleanup_(fl_snapdir__freep) struct fl_snapdir *d = calloc(1, sizeof(*d));
	_cleanup_(closedirp) DIR *dir = NULL;
	size_t cap = 0, n = 0, out = 0;
	struct dirent *de;
	int fd;

	if (!d)
		return -ENOMEM;
	d->dfd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY);
	if (d->dfd < 0)
		return -errno;
	if (!max)
		max = SNAPDIR_MAX_DEFAULT;
	/* readdir gets its own fd: the listing keeps d->dfd for opening the files. */
	fd = openat(d->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		int err = -errno;

		close(fd);
		return err;
	}
	for (;;) {
		struct fl_snapshot s = {};
		unsigned int format;
		struct stat st;

		errno = 0;
		de = readdir(dir);
		if (!de) {
			if (errno)
				return -errno;
			break;
		}
		if (!fl_snapdir__parse_name(de->d_name, &s, &format))
			continue;
		if (fstatat(d->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* deleted by retention meanwhile */
			return -errno;
		}
		if (!S_ISREG(st.st_mode)) {
			fl_pr_debug("snapdir: %s: not a regular file, not a snapshot\n", de->d_name);
			continue;
		}
		/* One entry per file for now: a snapshot has at most one per format. */
		if (n >= max * (sizeof(formats) / sizeof(formats[0])))
			return -E2BIG;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct fl_snapshot *ns = realloc(d->snaps, ncap * sizeof(*ns));

			if (!ns)
				return -ENOMEM;
			d->snaps = ns;
			cap = ncap;
		}
		/* An mtime past 2262 (touch -d) does not fit in ns: the end of time, then. */
		if (__builtin_mul_overflow((int64_t)st.st_mtim.tv_sec, NS_PER_S, &s.end_ns) ||
		    __builtin_add_overflow(s.end_ns, (int64_t)st.st_mtim.tv_nsec, &s.end_ns))
			s.end_ns = INT64_MAX;
		if (s.end_ns < s.start_ns)
			s.end_ns = s.start_ns;
		s.formats = format;
		d->snaps[n++] = s;
	}
	if (n)
		qsort(d->snaps, n, sizeof(*d->snaps), cmp_snapshot);
	/* The files of one snapshot are neighbours now: one entry each, the oldest mtime. */
	for (size_t i = 0; i < n; i++) {
		if (out && !cmp_snapshot(&d->snaps[out - 1], &d->snaps[i])) {
			struct fl_snapshot *o = &d->snaps[out - 1];

			o->formats |= d->snaps[i].formats;
			if (d->snaps[i].end_ns < o->end_ns)
				o->end_ns = d->snaps[i].end_ns;
			continue;
		}
		d->snaps[out++] = d->snaps[i];
	}
	if (out > max)
		return -E2BIG;
	d->nr = out;
	fl_pr_debug("snapdir: %s: %zu snapshots in %zu files\n", path, out, n);
	*ret = TAKE_PTR(d);
	return 0;
}

size_t fl_snapdir__nr(const struct fl_snapdir *d)
{
	return d->nr;
}

const struct fl_snapshot *fl_snapdir__get(const struct fl_snapdir *d, size_t i)
{
	return i < d->nr ? &d->snaps[i] : NULL;
}

int fl_snapdir__open(const struct fl_snapdir *d, const struct fl_snapshot *s, unsigned int format)
{
	char name[FL_SNAP_NAME_MAX];
	struct stat st;
	int fd;

	if (!(s->formats & format) || !*fl_snapdir__file_name(s, format, name))
		return -EINVAL;
	fd = openat(d->dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* ---- TIME and RANGE -------------------------------------------------------------- */

/* "-1h30m": d, h, m, s, each once, largest first. Into seconds. */
static int parse_relative(const char *p, int64_t *secs, const char **why)
{
	static const char units[] = "dhms";
	static const int64_t mult[] = {86400, 3600, 60, 1};
	int last = -1;
	int64_t total = 0;

	if (!*p) {
		*why = "a number and a unit must follow '-' (e.g. -1h30m)";
		return -EINVAL;
	}
	while (*p) {
		int64_t v = 0;
		int nd = 0;
		const char *u;

		while (*p >= '0' && *p <= '9') {
			if (++nd > 9) {
				*why = "too many digits";
				return -ERANGE;
			}
			v = v * 10 + (*p++ - '0');
		}
		if (!nd) {
			*why = "a number must come before each unit (e.g. -1h30m)";
			return -EINVAL;
		}
		if (!*p) {
			*why = "a unit must follow the number: d, h, m or s (e.g. -90s)";
			return -EINVAL;
		}
		u = strchr(units, *p);
		if (!u || !*u) {
			*why = "unknown unit: use d, h, m or s";
			return -EINVAL;
		}
		if (u - units <= last) {
			*why = "units go largest first, each once (e.g. -1d2h, -1h30m)";
			return -EINVAL;
		}
		last = (int)(u - units);
		total += v * mult[last];
		p++;
	}
	*secs = total;
	return 0;
}

/* ".5", ".123456789": a fraction of a second, into nanoseconds; advances *p. */
static bool take_fraction(const char **p, int64_t *ns)
{
	int64_t v = 0, scale = NS_PER_S;
	int nd = 0;

	if (**p != '.' && **p != ',')
		return true;
	(*p)++;
	while (**p >= '0' && **p <= '9') {
		if (nd < 9) {
			scale /= 10;
			v += (**p - '0') * scale;
		}
		nd++;
		(*p)++;
	}
	*ns = v;
	return nd > 0;
}

static int to_ns(time_t t, int64_t frac, int64_t *ret, const char **why)
{
	int64_t ns;

	if (__builtin_mul_overflow((int64_t)t, NS_PER_S, &ns) ||
	    __builtin_add_overflow(ns, frac, &ns)) {
		*why = "out of the years flamed handles (1679 to 2261)";
		return -ERANGE;
	}
	*ret = ns;
	return 0;
}

/* A local date and time: as mktime() reads it, refused when it does not exist (DST skips it). */
static int local_time(const struct civil *c, int64_t frac, int64_t *ret, const char **why)
{
	struct tm tm = civil_tm(c), back;
	time_t t = mktime(&tm);

	if (t == (time_t)-1 && tm.tm_year != 69) {
		*why = "not a time in the local time zone";
		return -EINVAL;
	}
	if (!localtime_r(&t, &back) || back.tm_year != c->year - 1900 || back.tm_mon != c->mon - 1 ||
	    back.tm_mday != c->mday || back.tm_hour != c->hour || back.tm_min != c->min) {
		*why = "that local time does not exist (a daylight saving change skips it): "
		       "give it in UTC or with an offset";
		return -EINVAL;
	}
	return to_ns(t, frac, ret, why);
}

static int parse_absolute(const char *s, int64_t *ret, const char **why)
{
	const char *p = s;
	struct civil c = {};
	int64_t frac = 0;
	int oh = 0, om = 0, sign;
	struct tm tm;

	if (!take_digits(&p, 4, &c.year) || *p++ != '-' || !take_digits(&p, 2, &c.mon) ||
	    *p++ != '-' || !take_digits(&p, 2, &c.mday)) {
		*why = "not a date, a time, now, or a time before now";
		return -EINVAL;
	}
	if (!year_in_range(c.year)) {
		*why = "out of the years flamed handles (1679 to 2261)";
		return -ERANGE;
	}
	c.hour = c.min = c.sec = 0;
	if (check_civil(&c)) {
		*why = check_civil(&c);
		return -EINVAL;
	}
	if (!*p) /* a date: its midnight, local time */
		return local_time(&c, 0, ret, why);
	if (*p != 'T' && *p != 't' && *p != ' ') {
		*why = "a 'T' or a space must come between the date and the time";
		return -EINVAL;
	}
	p++;
	if (!take_digits(&p, 2, &c.hour)) {
		*why = "the time must be HH:MM or HH:MM:SS";
		return -EINVAL;
	}
	/* A snapshot's name, as ls shows it: HH-MM-SSZ. */
	if (p[0] == '-' && strlen(p) == 7 && p[6] == 'Z') {
		p++;
		if (!take_digits(&p, 2, &c.min) || *p++ != '-' || !take_digits(&p, 2, &c.sec)) {
			*why = "the time must be HH:MM or HH:MM:SS";
			return -EINVAL;
		}
	} else {
		if (*p++ != ':' || !take_digits(&p, 2, &c.min)) {
			*why = "the time must be HH:MM or HH:MM:SS";
			return -EINVAL;
		}
		if (*p == ':') {
			p++;
			if (!take_digits(&p, 2, &c.sec) || !take_fraction(&p, &frac)) {
				*why = "the seconds must be two digits, perhaps with a fraction (SS.sss)";
				return -EINVAL;
			}
		}
	}
	if (check_civil(&c)) {
		*why = check_civil(&c);
		return -EINVAL;
	}
	if (!*p)
		return local_time(&c, frac, ret, why);
	tm = civil_tm(&c);
	tm.tm_isdst = 0;
	if ((*p == 'Z' || *p == 'z') && !p[1])
		return to_ns(timegm(&tm), frac, ret, why);
	if (*p != '+' && *p != '-') {
		*why = "after the time only Z, an offset (+01:00, -0500) or nothing (local time) "
		       "may follow";
		return -EINVAL;
	}
	sign = *p++ == '-' ? -1 : 1;
	if (!take_digits(&p, 2, &oh) || (*p == ':' && (p++, !take_digits(&p, 2, &om))) ||
	    (*p >= '0' && *p <= '9' && !take_digits(&p, 2, &om)) || *p) {
		*why = "the offset must be +HH:MM, +HHMM or +HH";
		return -EINVAL;
	}
	if (oh > 23 || om > 59) {
		*why = "no such offset from UTC (up to 23:59)";
		return -EINVAL;
	}
	return to_ns(timegm(&tm) - sign * (oh * 3600 + om * 60), frac, ret, why);
}

int fl_snapdir__parse_time(const char *s, int64_t now_ns, int64_t *ret, const char **why)
{
	int64_t secs, t;
	int err;

	*why = NULL;
	if (!*s) {
		*why = "empty";
		return -EINVAL;
	}
	if (!strcmp(s, "now")) {
		*ret = now_ns;
		return 0;
	}
	if (s[0] == '-') {
		err = parse_relative(s + 1, &secs, why);
		if (err)
			return err;
		/* At most 9 digits times a day, four times: no overflow before this check. */
		if (secs > 200LL * 366 * 86400) {
			*why = "too long ago";
			return -ERANGE;
		}
		*ret = now_ns - secs * NS_PER_S;
		return 0;
	}
	err = parse_absolute(s, &t, why);
	if (!err)
		*ret = t;
	return err;
}

int fl_snapdir__parse_range(const char *s, int64_t now_ns, int64_t *from, int64_t *to,
			    const char **why, const char **which)
{
	const char *dots = strstr(s, "..");
	_cleanup_free_ char *left = NULL;
	int64_t f = FL_SNAPDIR_OPEN, t = FL_SNAPDIR_OPEN;
	int err;

	*why = NULL;
	*which = "RANGE";
	if (!dots) {
		*why = "no '..' between FROM and TO (e.g. -2h..-1h, 2026-11-22T03:00Z.., ..now)";
		return -EINVAL;
	}
	if (strstr(dots + 2, "..")) {
		*why = "more than one '..'";
		return -EINVAL;
	}
	left = strndup(s, (size_t)(dots - s));
	if (!left)
		return -ENOMEM;
	if (*left) {
		*which = "FROM";
		err = fl_snapdir__parse_time(left, now_ns, &f, why);
		if (err)
			return err;
	}
	if (dots[2]) {
		*which = "TO";
		err = fl_snapdir__parse_time(dots + 2, now_ns, &t, why);
		if (err)
			return err;
	}
	if (f != FL_SNAPDIR_OPEN && t != FL_SNAPDIR_OPEN && f >= t) {
		*which = "RANGE";
		*why = "FROM is not before TO";
		return -EINVAL;
	}
	*which = NULL;
	*from = f;
	*to = t;
	return 0;
}

/* ---- selection ------------------------------------------------------------------- */

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/*
 * Where snapshot i ends: its mtime, or the next one's start when that is
 * earlier. The next interval starts at the drain that ends this one, so
 * its name (cut to the second) is this one's end to the second, where the
 * mtime is later by the time it took to write.
 */
static int64_t snap_end(const struct fl_snapdir *d, size_t i)
{
	int64_t e = d->snaps[i].end_ns;

	if (i + 1 < d->nr && d->snaps[i + 1].start_ns < e)
		e = max64(d->snaps[i + 1].start_ns, d->snaps[i].start_ns);
	return e;
}

/* The snapshot [s, e) is in the range [from, to): see fl_snapdir__select(). */
static bool snap_in_range(int64_t s, int64_t e, int64_t from, int64_t to)
{
	int64_t overlap = min64(e, to) - max64(s, from);
	int64_t need = min64(FL_SNAPDIR_SLACK_NS, min64((to - from) / 2, (e - s) / 2));

	if (e == s)
		return s >= from && s < to;
	return overlap > 0 && overlap >= need;
}

/*
 * How far a snapshot may stick out of the range and still be whole in it:
 * the slack, or a tenth of its length (its mtime is late by the time the
 * daemon took to symbolize and write it, which grows with the interval).
 */
static int64_t stick_out_tolerance(int64_t s, int64_t e)
{
	return max64(FL_SNAPDIR_SLACK_NS, (e - s) / 10);
}

static int add_gap(struct fl_snap_selection *sel, int64_t start, int64_t end, size_t *cap)
{
	if (sel->nr_gaps == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		struct fl_snap_gap *ng = realloc(sel->gaps, ncap * sizeof(*ng));

		if (!ng)
			return -ENOMEM;
		sel->gaps = ng;
		*cap = ncap;
	}
	sel->gaps[sel->nr_gaps++] = (struct fl_snap_gap){start, end};
	return 0;
}

int fl_snapdir__select(const struct fl_snapdir *d, int64_t from_ns, int64_t to_ns,
		       int64_t now_ns, unsigned int readable, struct fl_snap_selection *sel)
{
	size_t first = SIZE_MAX, last = 0, prev = SIZE_MAX, cap = 0;
	int64_t from = from_ns, to = to_ns == FL_SNAPDIR_OPEN ? now_ns : to_ns;

	memset(sel, 0, sizeof(*sel));
	if (from == FL_SNAPDIR_OPEN)
		from = d->nr ? min64(d->snaps[0].start_ns, to) : to;
	sel->from_ns = from;
	sel->to_ns = to;
	for (size_t i = 0; i < d->nr && from < to; i++) {
		if (!snap_in_range(d->snaps[i].start_ns, snap_end(d, i), from, to))
			continue;
		if (first == SIZE_MAX)
			first = i;
		last = i;
	}
	if (first == SIZE_MAX) {
		sel->has_head = true;
		sel->head = (struct fl_snap_gap){from, to};
		return 0;
	}
	sel->first = first;
	sel->nr = last - first + 1;
	for (size_t i = first; i <= last; i++) {
		const struct fl_snapshot *s = &d->snaps[i];
		int64_t e = snap_end(d, i), tol = stick_out_tolerance(s->start_ns, e);
		bool partial = from - s->start_ns > tol || e - to > tol;

		if (!(s->formats & readable)) {
			sel->nr_unreadable++;
			continue;
		}
		sel->nr_partial += partial;
		sel->last_partial = partial;
		if (prev == SIZE_MAX) {
			sel->first_partial = partial;
			if (s->start_ns - from > FL_SNAPDIR_SLACK_NS) {
				sel->has_head = true;
				sel->head = (struct fl_snap_gap){from, s->start_ns};
			}
		} else {
			int64_t pe = snap_end(d, prev);

			if (s->start_ns - pe > FL_SNAPDIR_SLACK_NS &&
			    add_gap(sel, pe, s->start_ns, &cap)) {
				fl_snapdir__selection_fini(sel);
				return -ENOMEM;
			}
			if (s->start_ns + FL_SNAPDIR_SLACK_NS < d->snaps[prev].end_ns)
				sel->nr_overlapping++;
		}
		prev = i;
	}
	if (prev == SIZE_MAX) {
		/* Only snapshots flamed cannot read: the whole range is uncovered. */
		sel->has_head = true;
		sel->head = (struct fl_snap_gap){from, to};
		return 0;
	}
	if (to - snap_end(d, prev) > FL_SNAPDIR_SLACK_NS) {
		sel->has_tail = true;
		sel->tail = (struct fl_snap_gap){snap_end(d, prev), to};
	}
	return 0;
}

void fl_snapdir__selection_fini(struct fl_snap_selection *sel)
{
	free(sel->gaps);
	sel->gaps = NULL;
	sel->nr_gaps = 0;
}
