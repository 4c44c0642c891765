// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for the perf map reader: the format, hostile lines, growth, replacement and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <malloc.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "flamed/common/budget.h"
#include "flamed/symbols/perfmap.h"
#include "hostile_paths.h"

#define NSPID 4242 /* names the file in the fake roots: tmp/perf-4242.map */

/* A fake root directory with tmp/ in it, and the map's path there. */
struct fx {
	char dir[256];
	char map[PATH_MAX];
	char outside[64]; /* a directory elsewhere, when a test made one */
	int root_fd;
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	char tmp[PATH_MAX + 8];

	assert_non_null(fx);
	snprintf(fx->dir, sizeof(fx->dir), "%s/test_perfmap.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(tmp, sizeof(tmp), "%s/tmp", fx->dir);
	assert_int_equal(mkdir(tmp, 0755), 0);
	snprintf(fx->map, sizeof(fx->map), "%s/tmp/perf-%d.map", fx->dir, NSPID);
	fx->root_fd = open(fx->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fx->root_fd >= 0);
	*state = fx;
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	close(fx->root_fd);
	nftw(fx->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (fx->outside[0])
		nftw(fx->outside, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return 0;
}

/* Writes len bytes to path, appending or from scratch (same inode either way). */
static void put(const char *path, const void *data, size_t len, bool append)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void put_str(const char *path, const char *s, bool append)
{
	put(path, s, strlen(s), append);
}

static int open_map(const struct fx *fx, struct fl_perfmap **m)
{
	struct fl_perfmap_opts o = {
		.sz = sizeof(o),
		.pid = getpid(),
		.root_fd = fx->root_fd,
		.nspid = NSPID,
	};

	return fl_perfmap__open(&o, m);
}

/* A map opened with a cache, named by nspid under the fake root (tmp/perf-NSPID.map). */
static int open_cached(const struct fx *fx, int nspid, struct fl_perfmap_cache *c, bool defer,
		       struct fl_perfmap **m)
{
	struct fl_perfmap_opts o = {
		.sz = sizeof(o),
		.pid = getpid(),
		.root_fd = fx->root_fd,
		.nspid = nspid,
		.cache = c,
		.defer_read = defer,
	};

	return fl_perfmap__open(&o, m);
}

static struct fl_perfmap_cache *new_cache(struct fl_budget *b)
{
	struct fl_perfmap_cache_opts o = {.sz = sizeof(o), .budget = b};
	struct fl_perfmap_cache *c = NULL;

	assert_int_equal(fl_perfmap_cache__new(&o, &c), 0);
	return c;
}

static struct fl_perfmap_cache_stats cache_stats(const struct fl_perfmap_cache *c)
{
	struct fl_perfmap_cache_stats st;

	fl_perfmap_cache__stats(c, &st);
	return st;
}

/* The path of tmp/perf-NSPID.map under the fake root. */
static void map_path(const struct fx *fx, int nspid, char *buf, size_t size)
{
	snprintf(buf, size, "%s/tmp/perf-%d.map", fx->dir, nspid);
}

static struct fl_perfmap_stats stats_of(const struct fl_perfmap *m)
{
	struct fl_perfmap_stats st;

	fl_perfmap__stats(m, &st);
	return st;
}

/* find() must name addr name, or nothing when name is NULL. */
static void expect_name(const struct fl_perfmap *m, uint64_t addr, const char *name)
{
	const char *got = fl_perfmap__find(m, addr);

	if (!name && got)
		fail_msg("0x%llx: \"%s\", expected nothing", (unsigned long long)addr, got);
	if (name && (!got || strcmp(got, name)))
		fail_msg("0x%llx: \"%s\", expected \"%s\"", (unsigned long long)addr,
			 got ? got : "(null)", name);
}

static void test_good_lines(void **state)
{
	const char data[] = "1000 10 alpha\n"
			    "0x2000 20 beta\n"
			    "3000 8 name with  two spaces \n"
			    "4000\t10\ttab separated\n"
			    "ABC0 10 LazyCompile:*upper file:///x.js:1:2\n"
			    "ffffffffffffff00 ff top\n";
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;
	struct fl_perfmap_stats st;

	put_str(fx->map, data, false);
	assert_int_equal(open_map(fx, &m), 0);
	expect_name(m, 0xfff, NULL);
	expect_name(m, 0x1000, "alpha");
	expect_name(m, 0x100f, "alpha");
	expect_name(m, 0x1010, NULL);
	expect_name(m, 0x2000, "beta");
	expect_name(m, 0x201f, "beta");
	expect_name(m, 0x3004, "name with  two spaces ");
	expect_name(m, 0x4000, "tab separated");
	expect_name(m, 0xabcf, "LazyCompile:*upper file:///x.js:1:2");
	expect_name(m, 0xfffffffffffffffe, "top");
	expect_name(m, UINT64_MAX, NULL);
	expect_name(m, 0, NULL);
	st = stats_of(m);
	assert_int_equal(st.nr_lines, 6);
	assert_int_equal(st.nr_entries, 6);
	assert_int_equal(st.nr_malformed, 0);
	assert_int_equal(st.nr_too_long, 0);
	assert_int_equal(st.bytes_parsed, sizeof(data) - 1);
	assert_int_equal(st.bytes_ignored, 0);
	assert_int_equal(st.nr_reloads, 0);
	/* Nothing changed: nothing to do. */
	assert_int_equal(fl_perfmap__refresh(m), 0);
	fl_perfmap__free(m);
	fl_perfmap__free(NULL);
	assert_null(fl_perfmap__find(NULL, 0x1000));
}

static void test_malformed(void **state)
{
	/* Each bad line is followed by a good one, which must survive it. */
	static const char data[] =
		/* bad hex or separator: 8 */
		"zz00 10 a\n1 1 ok1\n"
		"1000 1g b\n2 1 ok2\n"
		"10000000000000000 10 c\n3 1 ok3\n"
		"\n4 1 ok4\n"
		" 1000 10 d\n5 1 ok5\n"
		"1000\n6 1 ok6\n"
		"0x 10 e\n7 1 ok7\n"
		"-1000 10 f\n8 1 ok8\n"
		/* zero size: 2 */
		"1000 0 zero\n9 1 ok9\n"
		"1000 0x0 zero\na 1 oka\n"
		/* overflow: 2 */
		"ffffffffffffff00 100 ovf\nb 1 okb\n"
		"1 ffffffffffffffff ovf\nc 1 okc\n"
		/* no name: 3 */
		"1000 10\nd 1 okd\n"
		"1000 10 \ne 1 oke\n"
		"1000 10\t \nf 1 okf\n"
		/* bad characters: 4 */
		"1000 10 a\rb\n10 1 ok10\n"
		"1000 10 crlf\r\n11 1 ok11\n"
		"1000 10 a\0b\n12 1 ok12\n"
		"1000 10 \x1b[31mred\n13 1 ok13\n";
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;
	struct fl_perfmap_stats st;
	char name[16];

	put(fx->map, data, sizeof(data) - 1, false);
	assert_int_equal(open_map(fx, &m), 0);
	st = stats_of(m);
	assert_int_equal(st.nr_bad_hex, 8);
	assert_int_equal(st.nr_zero_size, 2);
	assert_int_equal(st.nr_overflow, 2);
	assert_int_equal(st.nr_no_name, 3);
	assert_int_equal(st.nr_bad_char, 4);
	assert_int_equal(st.nr_malformed, 19);
	assert_int_equal(st.nr_entries, 19);
	assert_int_equal(st.nr_lines, 38);
	assert_int_equal(st.nr_too_long, 0);
	for (unsigned int i = 1; i <= 0x13; i++) {
		snprintf(name, sizeof(name), "ok%x", i);
		expect_name(m, i, name);
	}
	expect_name(m, 0x1000, NULL);
	expect_name(m, 0xffffffffffffff00, NULL);
	fl_perfmap__free(m);
}

static void test_too_long(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;
	struct fl_perfmap_stats st;
	size_t big = 1 << 20;
	char *line = malloc(big + 64);
	int n;

	assert_non_null(line);
	/* Exactly FL_PERFMAP_MAX_LINE bytes: kept. */
	n = snprintf(line, 64, "1000 10 ");
	memset(line + n, 'k', FL_PERFMAP_MAX_LINE - (size_t)n);
	line[FL_PERFMAP_MAX_LINE] = '\n';
	put(fx->map, line, FL_PERFMAP_MAX_LINE + 1, false);
	/* One byte more: skipped. */
	n = snprintf(line, 64, "2000 10 ");
	memset(line + n, 'l', FL_PERFMAP_MAX_LINE + 1 - (size_t)n);
	line[FL_PERFMAP_MAX_LINE + 1] = '\n';
	put(fx->map, line, FL_PERFMAP_MAX_LINE + 2, true);
	/* 1 MiB, across many reads: skipped. */
	n = snprintf(line, 64, "3000 10 ");
	memset(line + n, 'm', big);
	line[(size_t)n + big] = '\n';
	put(fx->map, line, (size_t)n + big + 1, true);
	put_str(fx->map, "4000 10 after\n", true);

	assert_int_equal(open_map(fx, &m), 0);
	st = stats_of(m);
	assert_int_equal(st.nr_too_long, 2);
	assert_int_equal(st.nr_entries, 2);
	assert_int_equal(st.nr_lines, 4);
	assert_int_equal(st.nr_malformed, 0);
	assert_int_equal(strlen(fl_perfmap__find(m, 0x1000)),
			 FL_PERFMAP_MAX_LINE - strlen("1000 10 "));
	expect_name(m, 0x2000, NULL);
	expect_name(m, 0x3000, NULL);
	expect_name(m, 0x4000, "after");

	/* A too-long line still being written: skipped up to its newline, in later reads. */
	memset(line, 'x', 10000);
	put(fx->map, "5000 10 ", 8, true);
	put(fx->map, line, 10000, true);
	assert_int_equal(fl_perfmap__refresh(m), 0);
	st = stats_of(m);
	assert_int_equal(st.nr_too_long, 3);
	put(fx->map, line, 10000, true);
	assert_int_equal(fl_perfmap__refresh(m), 0);
	put_str(fx->map, "xx\n6000 10 later\n", true);
	assert_int_equal(fl_perfmap__refresh(m), 1);
	st = stats_of(m);
	assert_int_equal(st.nr_too_long, 3);
	assert_int_equal(st.nr_entries, 3);
	assert_int_equal(st.nr_malformed, 0);
	expect_name(m, 0x5000, NULL);
	expect_name(m, 0x6000, "later");
	fl_perfmap__free(m);
	free(line);
}

static void test_overlap(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;

	put_str(fx->map,
		"1000 100 old\n"
		"1040 10 new\n"
		"2010 10 small\n"
		"2000 100 big\n"
		"3000 10 same\n"
		"3010 10 same\n",
		false);
	assert_int_equal(open_map(fx, &m), 0);
	expect_name(m, 0x1000, "old");
	expect_name(m, 0x103f, "old");
	expect_name(m, 0x1040, "new");
	expect_name(m, 0x104f, "new");
	expect_name(m, 0x1050, "old");
	expect_name(m, 0x10ff, "old");
	expect_name(m, 0x1100, NULL);
	/* Written later, the big one hides the small one. */
	expect_name(m, 0x2015, "big");
	expect_name(m, 0x20ff, "big");
	expect_name(m, 0x3000, "same");
	expect_name(m, 0x301f, "same");

	/* Code memory reused: a later line over all of it. */
	put_str(fx->map, "fff 1000 newest\n", true);
	assert_int_equal(fl_perfmap__refresh(m), 1);
	expect_name(m, 0xffe, NULL);
	expect_name(m, 0xfff, "newest");
	expect_name(m, 0x1040, "newest");
	expect_name(m, 0x1ffe, "newest");
	expect_name(m, 0x1fff, NULL);
	expect_name(m, 0x2010, "big");
	fl_perfmap__free(m);
}

/* Random overlapping entries against a brute-force "last line covering addr". */
static void test_overlap_random(void **state)
{
	enum { N = 300, SPACE = 2048 };
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;
	uint64_t start[N], size[N];
	char *buf = malloc(N * 32), name[16];
	size_t len = 0;
	uint32_t rng = 12345;

	assert_non_null(buf);
	for (int i = 0; i < N; i++) {
		rng = rng * 1103515245u + 12345u;
		start[i] = (rng >> 8) % SPACE;
		rng = rng * 1103515245u + 12345u;
		size[i] = 1 + (rng >> 8) % (i % 10 == 0 ? 400 : 40);
		len += (size_t)snprintf(buf + len, 32, "%llx %llx f%d\n",
					(unsigned long long)start[i], (unsigned long long)size[i],
					i);
	}
	put(fx->map, buf, len, false);
	assert_int_equal(open_map(fx, &m), 0);
	for (uint64_t a = 0; a < SPACE + 450; a++) {
		int last = -1;

		for (int i = 0; i < N; i++)
			if (start[i] <= a && a < start[i] + size[i])
				last = i;
		snprintf(name, sizeof(name), "f%d", last);
		expect_name(m, a, last < 0 ? NULL : name);
	}
	fl_perfmap__free(m);
	free(buf);
}

static void test_growth(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;
	struct fl_perfmap_stats st;
	const char *alpha;

	put_str(fx->map, "1000 10 alpha\n2000 10 b", false);
	assert_int_equal(open_map(fx, &m), 0);
	alpha = fl_perfmap__find(m, 0x1000);
	assert_string_equal(alpha, "alpha");
	expect_name(m, 0x2000, NULL);
	st = stats_of(m);
	assert_int_equal(st.bytes_parsed, strlen("1000 10 alpha\n"));
	assert_int_equal(st.nr_lines, 1);

	/* The partial line waits for its newline. */
	assert_int_equal(fl_perfmap__refresh(m), 0);
	put_str(fx->map, "et", true);
	assert_int_equal(fl_perfmap__refresh(m), 0);
	expect_name(m, 0x2000, NULL);
	put_str(fx->map, "a\n3000 10 gamma\n", true);
	assert_int_equal(fl_perfmap__refresh(m), 1);
	expect_name(m, 0x2000, "beta");
	expect_name(m, 0x3000, "gamma");
	/* Not re-read from the start: the old name is still where it was. */
	assert_ptr_equal(fl_perfmap__find(m, 0x1000), alpha);
	st = stats_of(m);
	assert_int_equal(st.nr_lines, 3);
	assert_int_equal(st.nr_entries, 3);
	assert_int_equal(st.nr_reloads, 0);
	assert_int_equal(st.bytes_parsed, strlen("1000 10 alpha\n2000 10 beta\n3000 10 gamma\n"));

	/* Appended bad lines change nothing but the counters. */
	put_str(fx->map, "4000 0 zero\n", true);
	assert_int_equal(fl_perfmap__refresh(m), 0);
	assert_int_equal(stats_of(m).nr_zero_size, 1);
	fl_perfmap__free(m);
}

static void test_shrink_replace(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;
	struct fl_perfmap_stats st;
	char other[PATH_MAX + 8];

	put_str(fx->map, "1000 10 one\n2000 10 two\n3000 10 three\n", false);
	assert_int_equal(open_map(fx, &m), 0);
	assert_int_equal(stats_of(m).nr_entries, 3);

	/* Truncated and rewritten shorter: from the start. */
	put_str(fx->map, "1000 10 uno\n", false);
	assert_int_equal(fl_perfmap__refresh(m), 1);
	expect_name(m, 0x1000, "uno");
	expect_name(m, 0x2000, NULL);
	st = stats_of(m);
	assert_int_equal(st.nr_reloads, 1);
	assert_int_equal(st.nr_entries, 1);
	assert_int_equal(st.nr_lines, 1);

	/* Replaced by rename (another inode, even a longer file): from the start. */
	snprintf(other, sizeof(other), "%s.new", fx->map);
	put_str(other, "5000 10 eins\n6000 10 zwei\n7000 10 drei\n8000 10 vier\n", false);
	assert_int_equal(rename(other, fx->map), 0);
	assert_int_equal(fl_perfmap__refresh(m), 1);
	expect_name(m, 0x1000, NULL);
	expect_name(m, 0x8000, "vier");
	st = stats_of(m);
	assert_int_equal(st.nr_reloads, 2);
	assert_int_equal(st.nr_entries, 4);
	assert_int_equal(fl_perfmap__refresh(m), 0);

	/* Removed: the names stay; what is appended to the open file is still read. */
	int fd = open(fx->map, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(unlink(fx->map), 0);
	assert_int_equal(fl_perfmap__refresh(m), 0);
	expect_name(m, 0x8000, "vier");
	assert_int_equal(write(fd, "9000 10 fuenf\n", 14), 14);
	close(fd);
	assert_int_equal(fl_perfmap__refresh(m), 1);
	expect_name(m, 0x9000, "fuenf");
	assert_int_equal(stats_of(m).nr_reloads, 2);

	/* A replacement that fails the checks is refused, and the names stay. */
	put_str(fx->map, "a000 10 stale\n", false);
	struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
	assert_int_equal(utimensat(AT_FDCWD, fx->map, old, 0), 0);
	assert_int_equal(fl_perfmap__refresh(m), -ESTALE);
	expect_name(m, 0x9000, "fuenf");
	expect_name(m, 0xa000, NULL);
	fl_perfmap__free(m);
}

static void test_refuse_fifo(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;

	assert_int_equal(mkfifo(fx->map, 0644), 0);
	/* O_NONBLOCK: no writer, and yet no hang. */
	assert_int_equal(open_map(fx, &m), -EINVAL);
	assert_null(m);
	assert_int_equal(unlink(fx->map), 0);
	assert_int_equal(mkdir(fx->map, 0755), 0);
	assert_int_equal(open_map(fx, &m), -EINVAL);
	assert_null(m);
}

static void test_refuse_symlink(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;
	char *outside = fx->outside;
	char target[PATH_MAX], path[PATH_MAX + 64];

	/*
	 * A map outside the fake root, not under /tmp (where the fake root
	 * is, and where an absolute "/tmp/..." would lead back into it).
	 */
	snprintf(outside, sizeof(fx->outside), "/var/tmp/test_perfmap.XXXXXX");
	if (!mkdtemp(outside)) {
		outside[0] = '\0';
		skip();
	}
	snprintf(target, sizeof(target), "%s/perf-%d.map", outside, NSPID);
	put_str(target, "1000 10 outside\n", false);
	snprintf(path, sizeof(path), "%s/tmp/real.map", fx->dir);
	put_str(path, "1000 10 real\n", false);

	/* The map a symlink, relative or absolute: refused. */
	assert_int_equal(symlink("real.map", fx->map), 0);
	assert_int_equal(open_map(fx, &m), -ELOOP);
	assert_int_equal(unlink(fx->map), 0);
	assert_int_equal(symlink(target, fx->map), 0);
	assert_int_equal(open_map(fx, &m), -ELOOP);
	assert_null(m);

	/*
	 * tmp itself an absolute symlink: resolved inside the root, as the
	 * process resolves it, never to the directory of that name outside.
	 */
	assert_int_equal(unlink(fx->map), 0);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/tmp", fx->dir);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(symlink(outside, path), 0);
	assert_int_equal(open_map(fx, &m), -ENOENT);
	assert_null(m);

	/* The same path inside the root: that one is used. */
	snprintf(target, sizeof(target), "%s%s", fx->dir, outside);
	for (char *p = target + strlen(fx->dir) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		assert_true(mkdir(target, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
	assert_int_equal(mkdir(target, 0755), 0);
	snprintf(path, sizeof(path), "%s/perf-%d.map", target, NSPID);
	put_str(path, "1000 10 inside\n", false);
	assert_int_equal(open_map(fx, &m), 0);
	expect_name(m, 0x1000, "inside");
	fl_perfmap__free(m);
}

static void test_refuse_owner(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;

	if (geteuid() != 0 || getuid() != 0)
		skip(); /* chown to another uid needs root */
	put_str(fx->map, "1000 10 theirs\n", false);
	assert_int_equal(chown(fx->map, 12345, 12345), 0);
	assert_int_equal(open_map(fx, &m), -EPERM);
	assert_null(m);
	/* The process's own (root's, here) are accepted. */
	assert_int_equal(chown(fx->map, 0, 0), 0);
	assert_int_equal(open_map(fx, &m), 0);
	expect_name(m, 0x1000, "theirs");
	fl_perfmap__free(m);
}

/*
 * A process of another user: its own map only, not one of root's. In its
 * own mount namespace a user binds any file root owns over its
 * tmp/perf-PID.map (a bind mount needs no right to read the file); root's
 * flamed must not read it for that user's names.
 */
static void test_refuse_root_file_for_user(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap_opts o = {.sz = sizeof(o), .root_fd = fx->root_fd, .nspid = NSPID};
	struct fl_perfmap *m = NULL;
	int pfd[2], status;
	char c;

	if (geteuid() != 0 || getuid() != 0)
		skip(); /* a process of another uid, and chown, need root */
	assert_int_equal(pipe(pfd), 0);
	o.pid = fork();
	assert_true(o.pid >= 0);
	if (o.pid == 0) {
		close(pfd[0]);
		if (setresgid(12345, 12345, 12345) || setresuid(12345, 12345, 12345))
			_exit(1);
		/* Not left behind if the test fails (a change of uid clears an earlier one). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(pfd[1]); /* running as 12345 */
		pause();
		_exit(0);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 0);
	close(pfd[0]);
	put_str(fx->map, "1000 10 roots_secret\n", false);
	assert_int_equal(chown(fx->map, 0, 0), 0);
	assert_int_equal(fl_perfmap__open(&o, &m), -EPERM);
	assert_null(m);
	assert_int_equal(chown(fx->map, 12345, 12345), 0);
	assert_int_equal(fl_perfmap__open(&o, &m), 0);
	expect_name(m, 0x1000, "roots_secret");
	fl_perfmap__free(m);
	kill(o.pid, SIGKILL);
	assert_int_equal(waitpid(o.pid, &status, 0), o.pid);
}

static void test_refuse_stale(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;
	struct timespec ts[2];
	uint64_t start_ns;
	uint32_t uid;

	assert_int_equal(fl_perfmap__proc_owner(getpid(), &uid, &start_ns), 0);
	put_str(fx->map, "1000 10 old\n", false);

	/* An hour before this process started: left by another one. */
	ts[0].tv_sec = ts[1].tv_sec = (time_t)(start_ns / 1000000000u) - 3600;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	assert_int_equal(utimensat(AT_FDCWD, fx->map, ts, 0), 0);
	assert_int_equal(open_map(fx, &m), -ESTALE);
	assert_null(m);
	/* Before the epoch, in case someone tries. */
	ts[0].tv_sec = ts[1].tv_sec = -100;
	assert_int_equal(utimensat(AT_FDCWD, fx->map, ts, 0), 0);
	assert_int_equal(open_map(fx, &m), -ESTALE);

	/* Half a second before the (rounded-down) start: within the slack. */
	ts[0].tv_sec = ts[1].tv_sec = (time_t)(start_ns / 1000000000u);
	ts[0].tv_nsec = ts[1].tv_nsec = (long)(start_ns % 1000000000u);
	ts[0].tv_sec--;
	ts[1].tv_sec--;
	ts[0].tv_nsec += 500000000;
	ts[1].tv_nsec += 500000000;
	if (ts[1].tv_nsec >= 1000000000) {
		ts[0].tv_sec++;
		ts[1].tv_sec++;
		ts[0].tv_nsec -= 1000000000;
		ts[1].tv_nsec -= 1000000000;
	}
	assert_int_equal(utimensat(AT_FDCWD, fx->map, ts, 0), 0);
	assert_int_equal(open_map(fx, &m), 0);
	expect_name(m, 0x1000, "old");
	fl_perfmap__free(m);
}

static void test_caps(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;
	struct fl_perfmap_stats st;
	const size_t extra = 5, nr = FL_PERFMAP_MAX_ENTRIES + extra;
	char *buf = malloc(nr * 16), name[16];
	size_t len = 0;
	int fd;

	/* Entries: the first FL_PERFMAP_MAX_ENTRIES good lines are kept. */
	assert_non_null(buf);
	for (size_t i = 0; i < nr; i++)
		len += (size_t)snprintf(buf + len, 16, "%zx 1 n%zu\n", i, i % 3);
	put(fx->map, buf, len, false);
	free(buf);
	assert_int_equal(open_map(fx, &m), 0);
	st = stats_of(m);
	assert_int_equal(st.nr_entries, FL_PERFMAP_MAX_ENTRIES);
	assert_int_equal(st.nr_over_max, extra);
	assert_int_equal(st.nr_lines, nr);
	snprintf(name, sizeof(name), "n%u", (FL_PERFMAP_MAX_ENTRIES - 1) % 3);
	expect_name(m, FL_PERFMAP_MAX_ENTRIES - 1, name);
	expect_name(m, FL_PERFMAP_MAX_ENTRIES, NULL);
	fl_perfmap__free(m);

	/* Size: a sparse file past FL_PERFMAP_MAX_FILE_SIZE; the zeros are one too-long line. */
	put_str(fx->map, "1000 10 first\n", false);
	fd = open(fx->map, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)FL_PERFMAP_MAX_FILE_SIZE + 4096), 0);
	assert_int_equal(pwrite(fd, "\n2000 10 beyond\n", 16, (off_t)FL_PERFMAP_MAX_FILE_SIZE + 10),
			 16);
	close(fd);
	assert_int_equal(open_map(fx, &m), 0);
	st = stats_of(m);
	assert_int_equal(st.bytes_ignored, 4096);
	assert_int_equal(st.bytes_parsed, FL_PERFMAP_MAX_FILE_SIZE);
	assert_int_equal(st.nr_entries, 1);
	assert_int_equal(st.nr_too_long, 1);
	expect_name(m, 0x1000, "first");
	expect_name(m, 0x2000, NULL);
	assert_int_equal(fl_perfmap__refresh(m), 0);
	fl_perfmap__free(m);
}

static void test_bad_opts(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap *m = NULL;
	struct fl_perfmap_opts o = {.sz = sizeof(o), .pid = getpid(), .root_fd = fx->root_fd};

	assert_int_equal(fl_perfmap__open(NULL, &m), -EINVAL);
	assert_int_equal(fl_perfmap__open(&o, NULL), -EINVAL);
	o.sz = 4;
	assert_int_equal(fl_perfmap__open(&o, &m), -EINVAL);
	o.sz = sizeof(o);
	o.pid = 0;
	assert_int_equal(fl_perfmap__open(&o, &m), -EINVAL);
	o.pid = getpid();
	o.nspid = NSPID;
	assert_int_equal(fl_perfmap__open(&o, &m), -ENOENT); /* no map written */
	assert_null(m);
	/* A root that is no directory (as root_fd = 0, stdin, would usually be). */
	put_str(fx->map, "1000 10 x\n", false);
	o.root_fd = open(fx->map, O_RDONLY | O_CLOEXEC);
	assert_true(o.root_fd >= 0);
	assert_int_equal(fl_perfmap__open(&o, &m), -ENOTDIR);
	close(o.root_fd);
	o.root_fd = 12345; /* not open */
	assert_int_equal(fl_perfmap__open(&o, &m), -EBADF);
	assert_null(m);
	assert_int_equal(fl_perfmap__refresh(NULL), -EINVAL);
}

static void test_proc(void **state)
{
	struct timespec now;
	uint64_t start_ns, now_ns;
	uint32_t uid;
	int nspid;
	pid_t pid;

	(void)state;
	assert_int_equal(fl_perfmap__proc_nspid(getpid(), &nspid), 0);
	assert_int_equal(nspid, getpid());
	assert_int_equal(fl_perfmap__proc_owner(getpid(), &uid, &start_ns), 0);
	assert_int_equal(uid, getuid());
	clock_gettime(CLOCK_REALTIME, &now);
	now_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	/* Started a moment ago (a test run takes seconds; a minute leaves room for valgrind). */
	assert_true(start_ns <= now_ns + 1000000000u);
	assert_true(now_ns - start_ns < 60 * 1000000000ull);

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(fl_perfmap__proc_nspid(pid, &nspid), -ENOENT);
	assert_int_equal(fl_perfmap__proc_owner(pid, &uid, &start_ns), -ENOENT);
	assert_int_equal(fl_perfmap__proc_nspid(-1, &nspid), -EINVAL);
}

/* The real thing: /tmp/perf-PID.map through /proc/PID/root, nspid read from /proc. */
static void test_real_path(void **state)
{
	struct fl_perfmap_opts o = {.sz = sizeof(o), .pid = getpid(), .root_fd = -1};
	struct fl_perfmap *m = NULL;
	char path[64];

	(void)state;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	put_str(path, "7f0000001000 40 JS:*real file:///r.js:1:1\n", false);
	assert_int_equal(fl_perfmap__open(&o, &m), 0);
	unlink(path);
	expect_name(m, 0x7f0000001020, "JS:*real file:///r.js:1:1");
	fl_perfmap__free(m);
}

/*
 * Two processes whose maps are one file (hard links): one copy, read once,
 * charged once, refreshed for both by whichever looks first; a third with
 * a file of its own is not mixed in. The file goes with its last map.
 */
static void test_shared(void **state)
{
	struct fx *fx = *state;
	struct fl_budget b = {.max = 1ull << 30};
	struct fl_perfmap_cache *c = new_cache(&b);
	struct fl_perfmap *m1 = NULL, *m2 = NULL, *m3 = NULL;
	struct fl_perfmap_cache_stats cs;
	char lnk[PATH_MAX], own[PATH_MAX];
	uint64_t used;

	put_str(fx->map, "1000 10 alpha\n2000 10 beta\n", false);
	map_path(fx, NSPID + 1, lnk, sizeof(lnk));
	assert_int_equal(link(fx->map, lnk), 0);
	map_path(fx, NSPID + 2, own, sizeof(own));
	put_str(own, "1000 10 mine\n", false);

	assert_int_equal(open_cached(fx, NSPID, c, true, &m1), 0);
	assert_int_equal(open_cached(fx, NSPID + 1, c, true, &m2), 0);
	assert_int_equal(open_cached(fx, NSPID + 2, c, true, &m3), 0);
	cs = cache_stats(c);
	assert_int_equal(cs.opened, 3);
	assert_int_equal(cs.shared, 1);
	assert_int_equal(cs.files, 2);
	/* Deferred: opened and checked, nothing read, nothing charged. */
	assert_int_equal(cs.files_read, 0);
	assert_int_equal(cs.bytes, 0);
	assert_int_equal(b.used, 0);
	expect_name(m1, 0x1000, NULL);
	assert_int_equal(stats_of(m1).nr_lines, 0);

	/* The first refresh of either reads the file; the other finds it read. */
	assert_int_equal(fl_perfmap__refresh(m2), 1);
	used = b.used;
	assert_true(used > 0);
	assert_int_equal(fl_perfmap__refresh(m1), 1);
	assert_int_equal(fl_perfmap__refresh(m1), 0);
	assert_int_equal(cache_stats(c).files_read, 1);
	assert_int_equal(b.used, used);
	assert_ptr_equal(fl_perfmap__find(m1, 0x1000), fl_perfmap__find(m2, 0x1000));
	expect_name(m1, 0x2000, "beta");
	assert_int_equal(fl_perfmap__refresh(m3), 1);
	expect_name(m3, 0x1000, "mine");
	expect_name(m1, 0x1000, "alpha");
	assert_int_equal(cache_stats(c).files_read, 2);
	assert_int_equal(cache_stats(c).bytes, b.used);

	/* Appended once: read by one refresh, seen as a change by the other's. */
	put_str(lnk, "3000 10 gamma\n", true);
	assert_int_equal(fl_perfmap__refresh(m1), 1);
	assert_int_equal(fl_perfmap__refresh(m2), 1);
	assert_int_equal(fl_perfmap__refresh(m2), 0);
	expect_name(m2, 0x3000, "gamma");
	assert_int_equal(stats_of(m2).bytes_parsed, stats_of(m1).bytes_parsed);
	assert_int_equal(stats_of(m2).nr_entries, 3);

	/* Shrunk: re-read once, for both. */
	put_str(fx->map, "1000 10 uno\n", false);
	assert_int_equal(fl_perfmap__refresh(m2), 1);
	assert_int_equal(fl_perfmap__refresh(m1), 1);
	expect_name(m1, 0x1000, "uno");
	expect_name(m1, 0x2000, NULL);
	assert_int_equal(stats_of(m1).nr_reloads, 1);
	assert_int_equal(stats_of(m2).nr_reloads, 1);
	cs = cache_stats(c);
	assert_int_equal(cs.files_read, 3);
	assert_int_equal(cs.lines.nr_entries, 2); /* uno, mine */

	/* The file stays while one map uses it, and its memory with it. */
	fl_perfmap__free(m1);
	assert_int_equal(cache_stats(c).files, 2);
	expect_name(m2, 0x1000, "uno");
	fl_perfmap__free(m2);
	fl_perfmap__free(m3);
	cs = cache_stats(c);
	assert_int_equal(cs.files, 0);
	assert_int_equal(cs.bytes, 0);
	assert_int_equal(b.used, 0);
	assert_true(b.peak >= used);
	/* What was read stays counted. */
	assert_int_equal(cs.lines.nr_entries, 2);
	fl_perfmap_cache__free(c);
}

/* A deferred map of a process that is gone and took its file along is still read. */
static void test_deferred_removed(void **state)
{
	struct fx *fx = *state;
	struct fl_perfmap_cache *c = new_cache(NULL);
	struct fl_perfmap *m = NULL;

	put_str(fx->map, "1000 10 before exit\n", false);
	assert_int_equal(open_cached(fx, NSPID, c, true, &m), 0);
	assert_int_equal(unlink(fx->map), 0);
	assert_int_equal(fl_perfmap__refresh(m), 1);
	expect_name(m, 0x1000, "before exit");
	fl_perfmap__free(m);
	fl_perfmap_cache__free(c);
}

/* A map of n lines "ADDR 1 name_ADDR" (as a JIT with unique names writes). */
static size_t put_unique(const char *path, size_t n)
{
	size_t cap = n * 32, len = 0;
	char *buf = malloc(cap);

	assert_non_null(buf);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%zx 1 name_%zx\n", 0x10000 + i,
					0x10000 + i);
	put(path, buf, len, false);
	free(buf);
	return len;
}

/* Line i of put_unique() is named. */
static void expect_unique(const struct fl_perfmap *m, size_t i)
{
	char name[32];

	snprintf(name, sizeof(name), "name_%zx", 0x10000 + i);
	expect_name(m, 0x10000 + i, name);
}

/*
 * The budget: reading stops at the first entry with no room, counted with
 * the bytes left; once there is room it goes on from there; a file met
 * with the budget full keeps none. The budget is never exceeded.
 */
static void test_budget(void **state)
{
	struct fx *fx = *state;
	struct fl_budget b = {.max = 256u << 10};
	struct fl_perfmap_cache *c = new_cache(&b);
	struct fl_perfmap *m = NULL, *m2 = NULL;
	struct fl_perfmap_cache_stats cs;
	struct fl_perfmap_stats st;
	const size_t n = 20000;
	char other[PATH_MAX];
	size_t len = put_unique(fx->map, n), kept;

	assert_int_equal(open_cached(fx, NSPID, c, false, &m), 0);
	st = stats_of(m);
	kept = st.nr_entries;
	printf("# %zu of %zu entries in a budget of %llu bytes\n", kept, n,
	       (unsigned long long)b.max);
	assert_true(kept > 0 && kept < n);
	assert_true(b.used <= b.max);
	assert_int_equal(st.bytes, b.used);
	assert_int_equal(st.bytes_over_budget, len - st.bytes_parsed);
	assert_int_equal(st.nr_lines, kept); /* the line that did not fit is not counted yet */
	expect_unique(m, 0);
	expect_unique(m, kept - 1);
	expect_name(m, 0x10000 + kept, NULL);
	cs = cache_stats(c);
	assert_int_equal(cs.over_budget, 1);
	assert_int_equal(cs.bytes_over_budget, st.bytes_over_budget);

	/* Nothing more fits: a refresh reads nothing and counts nothing new. */
	assert_int_equal(fl_perfmap__refresh(m), 0);
	assert_int_equal(stats_of(m).nr_entries, kept);
	assert_int_equal(cache_stats(c).over_budget, 1);

	/* Another file, the budget full: opened, nothing kept, all its bytes unread. */
	map_path(fx, NSPID + 1, other, sizeof(other));
	put_str(other, "1000 10 late\n", false);
	assert_int_equal(open_cached(fx, NSPID + 1, c, false, &m2), 0);
	expect_name(m2, 0x1000, NULL);
	assert_int_equal(stats_of(m2).bytes_over_budget, 13);
	cs = cache_stats(c);
	assert_int_equal(cs.over_budget, 2);
	assert_int_equal(cs.bytes_over_budget, stats_of(m).bytes_over_budget + 13);

	/* Room again: the rest is read, from where it stopped. */
	b.max = 64u << 20;
	assert_int_equal(fl_perfmap__refresh(m), 1);
	st = stats_of(m);
	assert_int_equal(st.nr_entries, n);
	assert_int_equal(st.nr_lines, n);
	assert_int_equal(st.bytes_over_budget, 0);
	assert_int_equal(st.bytes_parsed, len);
	expect_unique(m, kept);
	expect_unique(m, n - 1);
	assert_int_equal(fl_perfmap__refresh(m2), 1);
	expect_name(m2, 0x1000, "late");
	assert_int_equal(cache_stats(c).bytes_over_budget, 0);
	assert_int_equal(cache_stats(c).bytes, b.used);
	fl_perfmap__free(m);
	fl_perfmap__free(m2);
	assert_int_equal(b.used, 0);
	fl_perfmap_cache__free(c);
}

/* Trims drop what no refresh asked for since the one before; a refresh reads it again. */
static void test_trim(void **state)
{
	struct fx *fx = *state;
	struct fl_budget b = {.max = 1ull << 30};
	struct fl_perfmap_cache *c = new_cache(&b);
	struct fl_perfmap *m = NULL;

	put_str(fx->map, "1000 10 alpha\n", false);
	assert_int_equal(open_cached(fx, NSPID, c, false, &m), 0);
	fl_perfmap_cache__trim(c);
	assert_int_equal(fl_perfmap__refresh(m), 0); /* looked up: kept */
	fl_perfmap_cache__trim(c);
	fl_perfmap_cache__trim(c);
	expect_name(m, 0x1000, "alpha");
	fl_perfmap_cache__trim(c);
	expect_name(m, 0x1000, NULL);
	assert_int_equal(b.used, 0);
	assert_int_equal(cache_stats(c).files, 1);
	assert_int_equal(fl_perfmap__refresh(m), 1);
	expect_name(m, 0x1000, "alpha");
	assert_true(b.used > 0);
	assert_int_equal(cache_stats(c).files_read, 2);
	fl_perfmap__free(m);
	fl_perfmap_cache__free(c);
	fl_perfmap_cache__trim(NULL);
	fl_perfmap_cache__free(NULL);
}

/* Bytes malloc gives out now (small blocks and mmapped ones). */
static uint64_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
}

/* A "Vm...:" line of /proc/self/status, in bytes (0: not there). */
static uint64_t vm_status(const char *key)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long kb = 0;
	size_t klen = strlen(key);

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':')
			sscanf(line + klen + 1, "%llu", &kb);
	fclose(f);
	return kb << 10;
}

/* Starts the peak resident size (VmHWM) again from the current one; false if the kernel cannot. */
static bool reset_peak_rss(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	bool ok = fd >= 0 && write(fd, "5", 1) == 1;

	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * What a map is charged is never less than what reading it takes: from
 * malloc once read, and resident at the peak, while the index is rebuilt
 * with the old one still there (read in two parts for that). Without
 * malloc statistics (a sanitizer's allocator, which also keeps freed memory
 * for a while), only said.
 */
static void test_budget_covers_memory(void **state)
{
	struct fx *fx = *state;
	struct fl_budget b = {.max = 1ull << 30};
	struct fl_perfmap_cache *c = new_cache(&b);
	struct fl_perfmap *m = NULL;
	const size_t n = 300000;
	uint64_t before, after, rss0 = 0, peak = 0;
	size_t len = put_unique(fx->map, n);
	bool hwm;
	int fd;

	/* The first half, then all of it. */
	fd = open(fx->map, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(len / 2)), 0);
	close(fd);
	before = heap_in_use();
	hwm = reset_peak_rss();
	rss0 = vm_status("VmRSS");
	assert_int_equal(open_cached(fx, NSPID, c, false, &m), 0);
	put_unique(fx->map, n);
	assert_int_equal(fl_perfmap__refresh(m), 1);
	assert_int_equal(stats_of(m).nr_entries, n);
	after = heap_in_use();
	peak = vm_status("VmHWM");
	if (after <= before) {
		printf("# no malloc statistics here: the charge (%llu bytes) is not checked\n",
		       (unsigned long long)b.used);
	} else {
		printf("# %zu entries: %llu bytes charged, %llu taken from malloc, %llu more "
		       "resident at the peak\n",
		       n, (unsigned long long)b.used, (unsigned long long)(after - before),
		       hwm ? (unsigned long long)(peak - rss0) : 0ull);
		assert_true(b.used >= after - before);
		if (hwm && peak > rss0)
			assert_true(b.used >= peak - rss0);
		/* Not wildly more either: the budget is worth its number. */
		assert_true(b.used < 4 * (after - before));
	}
	fl_perfmap__free(m);
	fl_perfmap_cache__free(c);
}

/*
 * A map that shrinks and grows back again and again is not parsed again
 * every time: FL_PERFMAP_MAX_REREADS re-reads from the start per generation
 * of the cache, then its entries stay as they were, counted; the next
 * generation (the daemon's next interval) allows re-reads again.
 */
static void test_reread_bound(void **state)
{
	struct fx *fx = *state;
	struct fl_budget b = {.max = 1ull << 30};
	struct fl_perfmap_cache *c = new_cache(&b);
	struct fl_perfmap *m = NULL;
	char line[64], name[32];
	int pad = 20;

	put_str(fx->map, "1000 10 first_name_with_a_long_tail\n", false);
	assert_int_equal(open_cached(fx, NSPID, c, false, &m), 0);
	expect_name(m, 0x1000, "first_name_with_a_long_tail");
	/* Each write is shorter than the one before: the file shrank. */
	for (int i = 0; i < FL_PERFMAP_MAX_REREADS + 3; i++, pad--) {
		snprintf(line, sizeof(line), "1000 10 n%d_%.*s\n", i, pad,
			 "xxxxxxxxxxxxxxxxxxxxxx");
		put_str(fx->map, line, false);
		fl_perfmap__refresh(m);
	}
	snprintf(name, sizeof(name), "n%d_%.*s", FL_PERFMAP_MAX_REREADS - 1,
		 20 - (FL_PERFMAP_MAX_REREADS - 1), "xxxxxxxxxxxxxxxxxxxxxx");
	expect_name(m, 0x1000, name);
	assert_int_equal(cache_stats(c).rereads_refused, 3);
	/* A new generation: read again. */
	fl_perfmap_cache__trim(c);
	put_str(fx->map, "1000 10 later\n", false);
	fl_perfmap__refresh(m);
	expect_name(m, 0x1000, "later");
	assert_int_equal(cache_stats(c).rereads_refused, 3);
	fl_perfmap__free(m);
	fl_perfmap_cache__free(c);
}

/* A FIFO at the map's path is refused without being opened for reading: its writer stays blocked. */
static void test_fifo_not_opened(void **state)
{
	struct fx *fx = *state;
	struct fifo_watch w = {.writer = -1};
	struct fl_perfmap *m = NULL;

	if (!fifo_watch_start(&w, fx->map))
		skip();
	assert_int_equal(open_map(fx, &m), -EINVAL);
	assert_false(fifo_watch_opened(&w, fx->map));
	assert_null(m);
}

/* The map's path with a pty bind-mounted over it (no symlink needed), in a mount namespace of its own. */
static int open_tty_map(const char *pts, void *ctx)
{
	struct fx fx = *(const struct fx *)ctx;
	struct fl_perfmap *m = NULL;
	int fd, err;

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	fd = open(fx.map, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	if (mount(pts, fx.map, NULL, MS_BIND, NULL))
		return -errno;
	/* A directory fd from before unshare() would still see the old namespace's mounts. */
	fx.root_fd = open(fx.dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fx.root_fd < 0)
		return -errno;
	err = open_map(&fx, &m);
	fl_perfmap__free(m);
	return err;
}

/* flamed without a controlling terminal does not get one from a map that is a tty (root only). */
static void test_tty_not_controlling(void **state)
{
	int ret = 0, has;

	if (geteuid() != 0)
		skip();
	has = ctty_after(open_tty_map, *state, &ret);
	if (has < 0 || ret == -EPERM)
		skip();
	assert_int_equal(ret, -EINVAL);
	assert_int_equal(has, 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_good_lines),
		T(test_malformed),
		T(test_too_long),
		T(test_overlap),
		T(test_overlap_random),
		T(test_growth),
		T(test_shrink_replace),
		T(test_refuse_fifo),
		T(test_refuse_symlink),
		T(test_refuse_owner),
		T(test_refuse_root_file_for_user),
		T(test_refuse_stale),
		T(test_caps),
		T(test_bad_opts),
		T(test_shared),
		T(test_deferred_removed),
		T(test_budget),
		T(test_trim),
		T(test_budget_covers_memory),
		T(test_reread_bound),
		T(test_fifo_not_opened),
		T(test_tty_not_controlling),
		cmocka_unit_test(test_proc),
		cmocka_unit_test(test_real_path),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
