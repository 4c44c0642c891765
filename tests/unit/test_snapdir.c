// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the snapshot directory: names, listing, TIME and RANGE, range selection. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/daemon/snapdir.h"

#define S 1000000000LL

/* 2026-11-22T03:00:00Z */
#define T0 (1795316400LL * S)

static char dir[256];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/flamed-snapdir.XXXXXX", getenv("TMPDIR") ?: "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Writes dir/name with mtime at (ns since the epoch). */
static void put(const char *name, int64_t mtime_ns)
{
	char path[PATH_MAX];
	struct timespec ts[2] = {{.tv_sec = mtime_ns / S, .tv_nsec = mtime_ns % S},
				 {.tv_sec = mtime_ns / S, .tv_nsec = mtime_ns % S}};
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "a;b 1\n", 6), 6);
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
}

/* The base name of the snapshot starting at t (UTC, whole seconds). */
static const char *stamp(int64_t t, char buf[32])
{
	time_t secs = (time_t)(t / S);
	struct tm tm;

	gmtime_r(&secs, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H-%M-%SZ", &tm);
	return buf;
}

static void put_snap(int64_t start, int64_t end, const char *ext)
{
	char b[32], name[64];

	snprintf(name, sizeof(name), "%s%s", stamp(start, b), ext);
	put(name, end);
}

static void test_parse_name(void **state)
{
	struct fl_snapshot s;
	unsigned int f = 0;

	(void)state;
	assert_true(fl_snapdir__parse_name("2026-11-22T03-12-00Z.folded", &s, &f));
	assert_string_equal(s.base, "2026-11-22T03-12-00Z");
	assert_int_equal(s.start_ns, T0 + 12 * 60 * S);
	assert_int_equal(s.seq, 1);
	assert_int_equal(f, FL_SNAP_FOLDED);
	assert_true(fl_snapdir__parse_name("2026-11-22T03-12-00Z-2.pb.gz", &s, &f));
	assert_string_equal(s.base, "2026-11-22T03-12-00Z-2");
	assert_int_equal(s.seq, 2);
	assert_int_equal(f, FL_SNAP_PPROF);
	assert_true(fl_snapdir__parse_name("2026-11-22T03-12-00Z-17.svg", &s, &f));
	assert_int_equal(s.seq, 17);
	assert_int_equal(f, FL_SNAP_SVG);
	assert_true(fl_snapdir__parse_name("2026-11-22T03-12-00Z.html", &s, &f));
	assert_int_equal(f, FL_SNAP_HTML);
	assert_false(fl_snapdir__parse_name("2026-11-22T03-12-00Z.htm", &s, &f));
	assert_true(fl_snapdir__parse_name("2024-02-29T23-59-59Z.folded", &s, &f));

	static const char *const bad[] = {
		"latest.folded",
		".tmp-2026-11-22T03-12-00Z.folded",
		"2026-11-22T03-12-00Z",
		"2026-11-22T03-12-00Z.",
		"2026-11-22T03-12-00Z.txt",
		"2026-11-22T03-12-00Z.folded~",
		"2026-11-22T03-12-00Z.folded.tmp",
		"2026-11-22T03-12-00Z.pb",
		"2026-11-22T03-12-00Z-1.folded",
		"2026-11-22T03-12-00Z-02.folded",
		"2026-11-22T03-12-00Z-.folded",
		"2026-11-22T03-12-00Z-1234567890.folded",
		"2026-11-22T03:12:00Z.folded",
		"2026-11-22T03-12-00.folded",
		"2026-13-22T03-12-00Z.folded",
		"2026-02-29T03-12-00Z.folded",
		"2026-11-22T24-00-00Z.folded",
		"2026-11-22T03-60-00Z.folded",
		"2026-11-22T03-12-60Z.folded",
		"x2026-11-22T03-12-00Z.folded",
		"226-11-22T03-12-00Z.folded",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (fl_snapdir__parse_name(bad[i], &s, &f))
			fail_msg("accepted %s", bad[i]);
	}
}

static int64_t ptime(const char *s, int64_t now)
{
	const char *why = NULL;
	int64_t t = 0;
	int err = fl_snapdir__parse_time(s, now, &t, &why);

	if (err)
		fail_msg("%s: %d %s", s, err, why ? why : "(no reason)");
	return t;
}

static void expect_bad_time(const char *s, const char *why_part)
{
	const char *why = NULL;
	int64_t t = 12345;
	int err = fl_snapdir__parse_time(s, T0, &t, &why);

	if (!err)
		fail_msg("accepted %s", s);
	assert_true(err == -EINVAL || err == -ERANGE);
	assert_non_null(why);
	assert_int_equal(t, 12345);
	if (why_part && !strstr(why, why_part))
		fail_msg("%s: reason \"%s\" does not say \"%s\"", s, why, why_part);
}

static void test_parse_time_utc(void **state)
{
	(void)state;
	assert_int_equal(ptime("2026-11-22T03:00:00Z", 0), T0);
	assert_int_equal(ptime("2026-11-22T03:00Z", 0), T0);
	assert_int_equal(ptime("2026-11-22t03:00z", 0), T0);
	assert_int_equal(ptime("2026-11-22T03:00:00.5Z", 0), T0 + S / 2);
	assert_int_equal(ptime("2026-11-22T03:00:00.123456789Z", 0), T0 + 123456789);
	assert_int_equal(ptime("2026-11-22T03-12-00Z", 0), T0 + 12 * 60 * S);
	/* Offsets: the same instant. */
	assert_int_equal(ptime("2026-11-22T04:00:00+01:00", 0), T0);
	assert_int_equal(ptime("2026-11-22T04:00+0100", 0), T0);
	assert_int_equal(ptime("2026-11-22T04:00+01", 0), T0);
	assert_int_equal(ptime("2026-11-21T22:00:00-05:00", 0), T0);
	assert_int_equal(ptime("2026-11-22T08:45+05:45", 0), T0);
	assert_int_equal(ptime("2026-11-22T03:00:00+00:00", 0), T0);
	/* now, and before now. */
	assert_int_equal(ptime("now", T0), T0);
	assert_int_equal(ptime("-1h", T0), T0 - 3600 * S);
	assert_int_equal(ptime("-30m", T0), T0 - 1800 * S);
	assert_int_equal(ptime("-90s", T0), T0 - 90 * S);
	assert_int_equal(ptime("-2d", T0), T0 - 2 * 86400 * S);
	assert_int_equal(ptime("-1h30m", T0), T0 - 5400 * S);
	assert_int_equal(ptime("-1d2h3m4s", T0), T0 - (86400 + 7200 + 180 + 4) * S);
	assert_int_equal(ptime("-0s", T0), T0);
}

static void test_parse_time_local(void **state)
{
	(void)state;
	/* Central Europe, as a POSIX rule: no tz database needed. */
	setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3", 1);
	tzset();
	assert_int_equal(ptime("2026-11-22 04:00", 0), T0);
	assert_int_equal(ptime("2026-11-22T04:00", 0), T0);
	assert_int_equal(ptime("2026-11-22 04:00:30", 0), T0 + 30 * S);
	assert_int_equal(ptime("2026-11-22", 0), T0 - 4 * 3600 * S); /* 2026-11-21T23:00Z */
	/* Summer time: two hours ahead of UTC. */
	assert_int_equal(ptime("2026-07-01 02:00", 0), ptime("2026-07-01T00:00Z", 0));
	/* A time the spring change skips, in local time only. */
	expect_bad_time("2026-03-29 02:30", "daylight saving");
	assert_int_equal(ptime("2026-03-29T02:30+01:00", 0), ptime("2026-03-29T01:30Z", 0));
	/* The zone does not touch UTC or offsets. */
	assert_int_equal(ptime("2026-11-22T03:00Z", 0), T0);
	setenv("TZ", "UTC0", 1);
	tzset();
	assert_int_equal(ptime("2026-11-22 03:00", 0), T0);
	assert_int_equal(ptime("2026-11-22", 0), T0 - 3 * 3600 * S);
	unsetenv("TZ");
	tzset();
}

static void test_parse_time_bad(void **state)
{
	(void)state;
	expect_bad_time("", "empty");
	expect_bad_time("yesterday", "not a date");
	expect_bad_time("03:00", "not a date");
	expect_bad_time("2026-13-01", "month");
	expect_bad_time("2026-02-30", "day");
	expect_bad_time("2026-11-22T25:00Z", "hour");
	expect_bad_time("2026-11-22T03:61Z", "minute");
	expect_bad_time("2026-11-22T03:00:61Z", "second");
	expect_bad_time("2026-11-22T3:00Z", "HH:MM");
	expect_bad_time("2026-11-22T03Z", "HH:MM");
	expect_bad_time("2026-11-22X03:00", "'T'");
	expect_bad_time("2026-11-22T03:00:00.Z", "fraction");
	expect_bad_time("2026-11-22T03:00:00UTC", "offset");
	expect_bad_time("2026-11-22T03:00+1", "offset");
	expect_bad_time("2026-11-22T03:00+01:0", "offset");
	expect_bad_time("2026-11-22T03:00+24:00", "offset");
	expect_bad_time("2026-11-22T03:00Zx", "offset");
	expect_bad_time("1600-01-01", "years");
	expect_bad_time("9999-01-01T00:00Z", "years");
	expect_bad_time("-", "number");
	expect_bad_time("-h", "number");
	expect_bad_time("-1", "unit");
	expect_bad_time("-1w", "unknown unit");
	expect_bad_time("-1H", "unknown unit");
	expect_bad_time("-30m1h", "largest first");
	expect_bad_time("-1h1h", "largest first");
	expect_bad_time("-1 h", "unknown unit");
	expect_bad_time("-1234567890s", "digits");
	expect_bad_time("-999999999d", "too long ago");
	expect_bad_time("+1h", "not a date");
	expect_bad_time("Now", "not a date");
}

static void test_parse_range(void **state)
{
	const char *why, *which;
	int64_t f, t;

	(void)state;
	assert_int_equal(fl_snapdir__parse_range("-2h..-1h", T0, &f, &t, &why, &which), 0);
	assert_int_equal(f, T0 - 7200 * S);
	assert_int_equal(t, T0 - 3600 * S);
	assert_int_equal(fl_snapdir__parse_range("2026-11-22T03:00Z..", T0, &f, &t, &why, &which),
			 0);
	assert_int_equal(f, T0);
	assert_int_equal(t, FL_SNAPDIR_OPEN);
	assert_int_equal(fl_snapdir__parse_range("..now", T0, &f, &t, &why, &which), 0);
	assert_int_equal(f, FL_SNAPDIR_OPEN);
	assert_int_equal(t, T0);
	assert_int_equal(fl_snapdir__parse_range("..", T0, &f, &t, &why, &which), 0);
	assert_int_equal(f, FL_SNAPDIR_OPEN);
	assert_int_equal(t, FL_SNAPDIR_OPEN);
	assert_int_equal(fl_snapdir__parse_range("2026-11-22T03:00:00.5Z..2026-11-22T04:00+01:00",
						 T0, &f, &t, &why, &which),
			 -EINVAL);
	assert_string_equal(which, "RANGE");
	assert_int_equal(fl_snapdir__parse_range("-1h", T0, &f, &t, &why, &which), -EINVAL);
	assert_string_equal(which, "RANGE");
	assert_int_equal(fl_snapdir__parse_range("-1h..-2h", T0, &f, &t, &why, &which), -EINVAL);
	assert_string_equal(which, "RANGE");
	assert_non_null(strstr(why, "not before"));
	assert_int_equal(fl_snapdir__parse_range("-1h..-1h", T0, &f, &t, &why, &which), -EINVAL);
	assert_int_equal(fl_snapdir__parse_range("-1x..", T0, &f, &t, &why, &which), -EINVAL);
	assert_string_equal(which, "FROM");
	assert_int_equal(fl_snapdir__parse_range("..2026-02-30", T0, &f, &t, &why, &which),
			 -EINVAL);
	assert_string_equal(which, "TO");
	assert_int_equal(fl_snapdir__parse_range("-3h..-2h..-1h", T0, &f, &t, &why, &which),
			 -EINVAL);
}

static void free_dir(struct fl_snapdir **d)
{
	fl_snapdir__free(*d);
}

static void test_scan(void **state)
{
	struct fl_snapdir *d __attribute__((cleanup(free_dir))) = NULL;
	char path[PATH_MAX];
	const struct fl_snapshot *s;
	int fd;

	(void)state;
	/* Out of order on disk; one with three files, whose mtimes differ. */
	put("2026-11-22T03-01-00Z.folded", T0 + 120 * S + 7);
	put("2026-11-22T03-01-00Z.pb.gz", T0 + 120 * S + 5);
	put("2026-11-22T03-01-00Z.svg", T0 + 120 * S + 9);
	put("2026-11-22T03-00-00Z-2.pb.gz", T0 + 60 * S);
	put("2026-11-22T03-00-00Z.folded", T0 + S / 2);
	put("2026-11-22T03-00-00Z-10.folded", T0 + 60 * S);
	/* Not snapshots: a link, a directory, a FIFO, other names. */
	snprintf(path, sizeof(path), "%s/latest.folded", dir);
	assert_int_equal(symlink("2026-11-22T03-01-00Z.folded", path), 0);
	snprintf(path, sizeof(path), "%s/2026-11-22T04-00-00Z.folded", dir);
	assert_int_equal(symlink("2026-11-22T03-01-00Z.folded", path), 0);
	snprintf(path, sizeof(path), "%s/2026-11-22T05-00-00Z.folded", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/2026-11-22T06-00-00Z.pb.gz", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	put(".tmp-2026-11-22T07-00-00Z.folded", T0);
	put("2026-11-22T07-00-00Z.folded.bak", T0);
	/* An mtime before its start (touched by hand): it ends where it starts. */
	put("2026-11-22T02-00-00Z.folded", T0 - 7200 * S - 5 * S);

	assert_int_equal(fl_snapdir__scan(AT_FDCWD, dir, 0, &d), 0);
	assert_int_equal(fl_snapdir__nr(d), 5);
	s = fl_snapdir__get(d, 0);
	assert_string_equal(s->base, "2026-11-22T02-00-00Z");
	assert_int_equal(s->end_ns, s->start_ns);
	s = fl_snapdir__get(d, 1);
	assert_string_equal(s->base, "2026-11-22T03-00-00Z");
	assert_int_equal(s->start_ns, T0);
	assert_int_equal(s->end_ns, T0 + S / 2);
	assert_int_equal(s->formats, FL_SNAP_FOLDED);
	s = fl_snapdir__get(d, 2);
	assert_string_equal(s->base, "2026-11-22T03-00-00Z-2");
	assert_int_equal(s->formats, FL_SNAP_PPROF);
	s = fl_snapdir__get(d, 3);
	assert_string_equal(s->base, "2026-11-22T03-00-00Z-10"); /* seq 10 after 2, not by name */
	s = fl_snapdir__get(d, 4);
	assert_string_equal(s->base, "2026-11-22T03-01-00Z");
	assert_int_equal(s->formats, FL_SNAP_FOLDED | FL_SNAP_SVG | FL_SNAP_PPROF);
	assert_int_equal(s->end_ns, T0 + 120 * S + 5); /* the oldest mtime */
	assert_null(fl_snapdir__get(d, 5));

	fd = fl_snapdir__open(d, s, FL_SNAP_PPROF);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fl_snapdir__open(d, fl_snapdir__get(d, 2), FL_SNAP_FOLDED), -EINVAL);
	/* Swapped for a link after the listing: not followed. */
	snprintf(path, sizeof(path), "%s/2026-11-22T03-01-00Z.folded", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(fl_snapdir__open(d, s, FL_SNAP_FOLDED), -ELOOP);

	char name[FL_SNAP_NAME_MAX];

	assert_string_equal(fl_snapdir__file_name(s, FL_SNAP_PPROF, name),
			    "2026-11-22T03-01-00Z.pb.gz");
	fl_snapdir__free(d);
	d = NULL;
	assert_int_equal(fl_snapdir__scan(AT_FDCWD, dir, 2, &d), -E2BIG);
	snprintf(path, sizeof(path), "%s/2026-11-22T03-01-00Z.svg", dir);
	assert_int_equal(fl_snapdir__scan(AT_FDCWD, path, 0, &d), -ENOTDIR);
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_equal(fl_snapdir__scan(AT_FDCWD, path, 0, &d), -ENOENT);
}

/*
 * Ten one-minute snapshots from 03:00, written 0.3 s after each minute,
 * but none for 03:04 and 03:05 (the daemon was down); 03:07 has an SVG only.
 */
static struct fl_snapdir *ten(void)
{
	struct fl_snapdir *d = NULL;

	for (int i = 0; i < 10; i++) {
		int64_t start = T0 + i * 60 * S, end = start + 60 * S + 3 * S / 10;

		if (i == 4 || i == 5)
			continue;
		put_snap(start, end, i == 7 ? ".svg" : ".folded");
		if (i % 2 && i != 7)
			put_snap(start, end, ".pb.gz");
	}
	assert_int_equal(fl_snapdir__scan(AT_FDCWD, dir, 0, &d), 0);
	assert_int_equal(fl_snapdir__nr(d), 8);
	return d;
}

#define READABLE (FL_SNAP_FOLDED | FL_SNAP_PPROF)

static void test_select_whole(void **state)
{
	struct fl_snapdir *d __attribute__((cleanup(free_dir))) = ten();
	struct fl_snap_selection sel;

	(void)state;
	/* Exactly 03:00-03:10: every snapshot, whole; the gap at 03:04-03:06 and 03:07's. */
	assert_int_equal(fl_snapdir__select(d, T0, T0 + 600 * S, T0 + 3600 * S, READABLE, &sel), 0);
	assert_int_equal(sel.first, 0);
	assert_int_equal(sel.nr, 8);
	assert_int_equal(sel.nr_unreadable, 1);
	assert_int_equal(sel.nr_partial, 0);
	assert_false(sel.first_partial);
	assert_false(sel.last_partial);
	assert_false(sel.has_head);
	assert_false(sel.has_tail);
	assert_int_equal(sel.nr_overlapping, 0);
	assert_int_equal(sel.nr_gaps, 2);
	/* 03:03's mtime (03:04:00.3) is its end: no next snapshot starts before. */
	assert_int_equal(sel.gaps[0].start_ns, T0 + 240 * S + 3 * S / 10);
	assert_int_equal(sel.gaps[0].end_ns, T0 + 360 * S);
	/* 03:06 ends where 03:07 (SVG only) starts; 03:08 is the next one read. */
	assert_int_equal(sel.gaps[1].start_ns, T0 + 420 * S);
	assert_int_equal(sel.gaps[1].end_ns, T0 + 480 * S);
	fl_snapdir__selection_fini(&sel);

	/* Open bounds: from the first, to now (long after the last: uncovered). */
	assert_int_equal(fl_snapdir__select(d, FL_SNAPDIR_OPEN, FL_SNAPDIR_OPEN, T0 + 3600 * S,
					    READABLE, &sel),
			 0);
	assert_int_equal(sel.from_ns, T0);
	assert_int_equal(sel.to_ns, T0 + 3600 * S);
	assert_int_equal(sel.nr, 8);
	assert_false(sel.has_head);
	assert_true(sel.has_tail);
	assert_int_equal(sel.tail.start_ns, T0 + 600 * S + 3 * S / 10);
	assert_int_equal(sel.tail.end_ns, T0 + 3600 * S);
	assert_int_equal(sel.nr_partial, 0);
	fl_snapdir__selection_fini(&sel);

	/* Open start, the now of the last write: all covered but the gaps. */
	assert_int_equal(fl_snapdir__select(d, FL_SNAPDIR_OPEN, FL_SNAPDIR_OPEN,
					    T0 + 600 * S + S / 2, READABLE, &sel),
			 0);
	assert_false(sel.has_tail);
	fl_snapdir__selection_fini(&sel);
}

static void test_select_partial(void **state)
{
	struct fl_snapdir *d __attribute__((cleanup(free_dir))) = ten();
	struct fl_snap_selection sel;

	(void)state;
	/* 02:58:30-03:02:30: starts before the first, ends in the middle of 03:02. */
	assert_int_equal(fl_snapdir__select(d, T0 - 90 * S, T0 + 150 * S, T0 + 3600 * S, READABLE,
					    &sel),
			 0);
	assert_int_equal(sel.first, 0);
	assert_int_equal(sel.nr, 3);
	assert_true(sel.has_head);
	assert_int_equal(sel.head.start_ns, T0 - 90 * S);
	assert_int_equal(sel.head.end_ns, T0);
	assert_int_equal(sel.nr_partial, 1);
	assert_false(sel.first_partial);
	assert_true(sel.last_partial);
	assert_false(sel.has_tail);
	assert_int_equal(sel.nr_gaps, 0);
	fl_snapdir__selection_fini(&sel);

	/* 03:01:30-03:08:30: the first and the last partial; 03:03's mtime 0.3 s in is not. */
	assert_int_equal(fl_snapdir__select(d, T0 + 90 * S, T0 + 510 * S, T0 + 3600 * S, READABLE,
					    &sel),
			 0);
	assert_int_equal(sel.first, 1);
	assert_int_equal(sel.nr, 6); /* 03:01, 02, 03, 06, 07 (SVG), 08 */
	assert_int_equal(sel.nr_partial, 2);
	assert_true(sel.first_partial);
	assert_true(sel.last_partial);
	assert_int_equal(sel.nr_gaps, 2);
	fl_snapdir__selection_fini(&sel);

	/* Starting at 03:04:00 exactly: 03:03 sticks in by its write time only, and is out. */
	assert_int_equal(fl_snapdir__select(d, T0 + 240 * S, T0 + 420 * S, T0 + 3600 * S, READABLE,
					    &sel),
			 0);
	assert_int_equal(sel.nr, 1);
	assert_string_equal(fl_snapdir__get(d, sel.first)->base, "2026-11-22T03-06-00Z");
	assert_true(sel.has_head);
	assert_int_equal(sel.head.end_ns, T0 + 360 * S);
	assert_int_equal(sel.nr_partial, 0);
	fl_snapdir__selection_fini(&sel);

	/* One second inside one snapshot: that one, partial at both ends. */
	assert_int_equal(fl_snapdir__select(d, T0 + 130 * S, T0 + 131 * S, T0 + 3600 * S, READABLE,
					    &sel),
			 0);
	assert_int_equal(sel.nr, 1);
	assert_int_equal(sel.first, 2);
	assert_int_equal(sel.nr_partial, 1);
	assert_true(sel.first_partial && sel.last_partial);
	assert_false(sel.has_head || sel.has_tail);
	fl_snapdir__selection_fini(&sel);
}

static void test_select_none(void **state)
{
	struct fl_snapdir *d __attribute__((cleanup(free_dir))) = ten();
	struct fl_snap_selection sel;

	(void)state;
	/* Inside the gap: nothing; the whole range uncovered. */
	assert_int_equal(fl_snapdir__select(d, T0 + 245 * S, T0 + 355 * S, T0 + 3600 * S, READABLE,
					    &sel),
			 0);
	assert_int_equal(sel.nr, 0);
	assert_true(sel.has_head);
	assert_int_equal(sel.head.start_ns, T0 + 245 * S);
	assert_int_equal(sel.head.end_ns, T0 + 355 * S);
	fl_snapdir__selection_fini(&sel);
	/* Before all, and after all. */
	assert_int_equal(fl_snapdir__select(d, T0 - 3600 * S, T0, T0 + 3600 * S, READABLE, &sel), 0);
	assert_int_equal(sel.nr, 0);
	fl_snapdir__selection_fini(&sel);
	assert_int_equal(fl_snapdir__select(d, T0 + 601 * S, FL_SNAPDIR_OPEN, T0 + 3600 * S,
					    READABLE, &sel),
			 0);
	assert_int_equal(sel.nr, 0);
	fl_snapdir__selection_fini(&sel);
	/* 03:07 only, which has an SVG only: selected, not readable, uncovered. */
	assert_int_equal(fl_snapdir__select(d, T0 + 420 * S, T0 + 480 * S, T0 + 3600 * S, READABLE,
					    &sel),
			 0);
	assert_int_equal(sel.nr, 1);
	assert_int_equal(sel.nr_unreadable, 1);
	assert_true(sel.has_head);
	fl_snapdir__selection_fini(&sel);
}

static void test_select_empty_and_overlap(void **state)
{
	struct fl_snapdir *d __attribute__((cleanup(free_dir))) = NULL;
	struct fl_snap_selection sel;

	(void)state;
	assert_int_equal(fl_snapdir__scan(AT_FDCWD, dir, 0, &d), 0);
	assert_int_equal(fl_snapdir__nr(d), 0);
	assert_int_equal(fl_snapdir__select(d, FL_SNAPDIR_OPEN, FL_SNAPDIR_OPEN, T0, READABLE,
					    &sel),
			 0);
	assert_int_equal(sel.nr, 0);
	fl_snapdir__selection_fini(&sel);
	fl_snapdir__free(d);
	d = NULL;
	/* Two writers: 03:00-03:10 and 03:05-03:06; and two in the same second (SIGUSR1). */
	put_snap(T0, T0 + 600 * S, ".folded");
	put_snap(T0 + 300 * S, T0 + 360 * S, ".folded");
	put("2026-11-22T03-20-00Z.folded", T0 + 1200 * S + S / 10);
	put("2026-11-22T03-20-00Z-2.folded", T0 + 1260 * S);
	assert_int_equal(fl_snapdir__scan(AT_FDCWD, dir, 0, &d), 0);
	assert_int_equal(fl_snapdir__select(d, T0, T0 + 360 * S, T0 + 3600 * S, READABLE, &sel),
			 0);
	assert_int_equal(sel.nr, 2);
	assert_int_equal(sel.nr_overlapping, 1);
	fl_snapdir__selection_fini(&sel);
	/* The first of a second's pair has no length: in, as it starts in the range. */
	assert_int_equal(fl_snapdir__select(d, T0 + 1200 * S, T0 + 1260 * S, T0 + 3600 * S,
					    READABLE, &sel),
			 0);
	assert_int_equal(sel.nr, 2);
	assert_int_equal(sel.nr_gaps, 0);
	assert_int_equal(sel.nr_partial, 0);
	fl_snapdir__selection_fini(&sel);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_name),
		cmocka_unit_test(test_parse_time_utc),
		cmocka_unit_test(test_parse_time_local),
		cmocka_unit_test(test_parse_time_bad),
		cmocka_unit_test(test_parse_range),
		cmocka_unit_test_setup_teardown(test_scan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_select_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_select_partial, setup, teardown),
		cmocka_unit_test_setup_teardown(test_select_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_select_empty_and_overlap, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
