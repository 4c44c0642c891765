// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the debuginfod fetcher against tests/fixtures/debuginfod_stub.py: fetches, misses, hanging and broken servers, the budget. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/symbols/debuginfod.h"

#define STUB FIXTURE_SRC_DIR "/debuginfod_stub.py"
#define ID_LEN 20
#define WAIT_S 20.0 /* generous: a fetch from 127.0.0.1 takes milliseconds */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- per-test state: a temporary directory, its cache, up to two stub servers ---- */

struct stub {
	pid_t pid;
	int port;
	char url[64];
};

struct env {
	char dir[64];	 /* /tmp/flamed-debuginfod-XXXXXX */
	char cache[128]; /* dir/cache: DEBUGINFOD_CACHE_PATH */
	char log[128];	 /* dir/log: the stubs' request log */
	struct stub stubs[2];
	int nstubs;
	int saved_stderr; /* >= 0 while stderr goes to dir/stderr */
};

static void make_id(uint8_t *id, unsigned seed)
{
	unsigned i;

	for (i = 0; i < ID_LEN; i++)
		id[i] = (uint8_t)(seed * 37u + i * 11u + 1u);
}

static void hex_of(const uint8_t *id, size_t len, char *out)
{
	size_t i;

	for (i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
}

/* Writes size pseudo-random bytes (seeded) to dir/name; the path goes to out. */
static void make_file(struct env *e, const char *name, size_t size, unsigned seed, char *out,
		      size_t outlen)
{
	uint32_t x = seed * 2654435761u + 1u;
	FILE *f;
	size_t i;

	snprintf(out, outlen, "%s/%s", e->dir, name);
	f = fopen(out, "wb");
	assert_non_null(f);
	for (i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		fputc((int)(x & 0xff), f);
	}
	assert_int_equal(fclose(f), 0);
}

/*
 * Starts the stub: argv after MODE is "HEX FILE" pairs, NULL-terminated;
 * delay (NULL: the stub's default) is slow's pause between 4 KiB writes,
 * "-SECONDS" for no Content-Length. Reads the port it prints (10 s at most).
 */
static struct stub *start_stub(struct env *e, const char *mode, const char *delay, ...)
{
	const char *argv[32];
	struct stub *s;
	int pfd[2], n = 0;
	char line[32] = "";
	size_t got = 0;
	double until;
	va_list ap;

	assert_true(e->nstubs < 2);
	s = &e->stubs[e->nstubs];
	argv[n++] = "python3";
	argv[n++] = STUB;
	argv[n++] = mode;
	va_start(ap, delay);
	for (;;) {
		const char *a = va_arg(ap, const char *);

		if (!a)
			break;
		assert_true(n < 24);
		argv[n++] = a;
	}
	va_end(ap);
	argv[n++] = "--log";
	argv[n++] = e->log;
	if (delay && *delay == '-') { /* "-SECONDS": slow without Content-Length */
		argv[n++] = "--no-length";
		delay++;
	}
	if (delay) {
		argv[n++] = "--delay";
		argv[n++] = delay;
	}
	argv[n] = NULL;
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (!s->pid) {
		dup2(pfd[1], 1);
		execvp("python3", (char *const *)argv);
		_exit(127);
	}
	e->nstubs++;
	close(pfd[1]);
	until = now_s() + 10;
	while (!strchr(line, '\n') && got < sizeof(line) - 1 && now_s() < until) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		ssize_t r;

		if (poll(&p, 1, 100) <= 0)
			continue;
		r = read(pfd[0], line + got, sizeof(line) - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
		line[got] = '\0';
	}
	close(pfd[0]);
	s->port = atoi(line);
	assert_true(s->port > 0 && s->port < 65536);
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
	return s;
}

static void stop_stubs(struct env *e)
{
	int i;

	for (i = 0; i < e->nstubs; i++) {
		if (e->stubs[i].pid > 0) {
			kill(e->stubs[i].pid, SIGKILL);
			waitpid(e->stubs[i].pid, NULL, 0);
			e->stubs[i].pid = 0;
		}
	}
	e->nstubs = 0;
}

/* How many requests the stubs logged for the build-id id. */
static int requests_for(struct env *e, const uint8_t *id)
{
	char hex[2 * ID_LEN + 1], want[128], line[256];
	FILE *f = fopen(e->log, "r");
	int n = 0;

	if (!f)
		return 0;
	hex_of(id, ID_LEN, hex);
	snprintf(want, sizeof(want), "/buildid/%s/debuginfo", hex);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, want))
			n++;
	fclose(f);
	return n;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void restore_stderr(struct env *e)
{
	if (e->saved_stderr >= 0) {
		fflush(stderr);
		dup2(e->saved_stderr, 2);
		close(e->saved_stderr);
		e->saved_stderr = -1;
	}
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	if (!e)
		return -1;
	e->saved_stderr = -1;
	strcpy(e->dir, "/tmp/flamed-debuginfod-XXXXXX");
	if (!mkdtemp(e->dir))
		return -1;
	snprintf(e->cache, sizeof(e->cache), "%s/cache", e->dir);
	snprintf(e->log, sizeof(e->log), "%s/log", e->dir);
	if (mkdir(e->cache, 0700))
		return -1;
	/* A fresh cache for each test; the URLs come from the options. */
	setenv("DEBUGINFOD_CACHE_PATH", e->cache, 1);
	unsetenv("DEBUGINFOD_URLS");
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	restore_stderr(e);
	stop_stubs(e);
	nftw(e->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(e);
	return 0;
}

static struct fl_debuginfod *new_on(const char *urls, unsigned files, uint64_t bytes, double secs)
{
	struct fl_debuginfod_opts o = {
		.sz = sizeof(o),
		.urls = urls,
		.max_files = files,
		.max_bytes = bytes,
		.max_seconds = secs,
	};
	struct fl_debuginfod *d = NULL;

	assert_int_equal(fl_debuginfod__new(&o, &d), 0);
	assert_non_null(d);
	return d;
}

static bool same_bytes(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	bool same = fa && fb;

	while (same) {
		int ca = fgetc(fa), cb = fgetc(fb);

		if (ca != cb)
			same = false;
		if (ca == EOF || cb == EOF)
			break;
	}
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

static uint64_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	return (uint64_t)st.st_size;
}

/* ---- the tests ---- */

static void test_no_urls(void **state)
{
	struct fl_debuginfod_opts o = {.sz = sizeof(o)};
	struct fl_debuginfod *d = (struct fl_debuginfod *)&o; /* must stay as it is */

	(void)state;
	assert_int_equal(fl_debuginfod__new(&o, &d), -ENOENT);
	assert_ptr_equal(d, &o);
	assert_int_equal(fl_debuginfod__new(NULL, &d), -ENOENT);
	o.urls = "";
	assert_int_equal(fl_debuginfod__new(&o, &d), -ENOENT);
	o.urls = " \t ";
	assert_int_equal(fl_debuginfod__new(&o, &d), -ENOENT);
	assert_null(getenv("DEBUGINFOD_URLS")); /* a blank urls is not put there */
	setenv("DEBUGINFOD_URLS", "  ", 1);
	assert_int_equal(fl_debuginfod__new(&o, &d), -ENOENT);
	assert_ptr_equal(d, &o);

	/* The environment's servers when urls is not given. */
	setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9", 1);
	d = NULL;
	assert_int_equal(fl_debuginfod__new(&o, &d), 0);
	assert_non_null(d);
	fl_debuginfod__free(d);

	/* A given urls goes into the environment. */
	o.urls = "http://127.0.0.1:7";
	d = NULL;
	assert_int_equal(fl_debuginfod__new(&o, &d), 0);
	assert_string_equal(getenv("DEBUGINFOD_URLS"), "http://127.0.0.1:7");
	fl_debuginfod__free(d);

	o.sz = sizeof(o) - 1;
	assert_int_equal(fl_debuginfod__new(&o, &d), -EINVAL);
	o.sz = sizeof(o);
	o.max_seconds = -1;
	assert_int_equal(fl_debuginfod__new(&o, &d), -EINVAL);
	fl_debuginfod__free(NULL);
}

static void test_fetched(void **state)
{
	struct env *e = *state;
	uint8_t a[ID_LEN], c[ID_LEN], bad[FL_DEBUGINFOD_MAX_ID + 1] = {0};
	char ha[2 * ID_LEN + 1], hc[2 * ID_LEN + 1], fa[256], fc[256], errf[256], sum[512];
	const char *path = NULL, *again = NULL;
	struct fl_debuginfod_stats st;
	struct fl_debuginfod *d;
	struct stub *s;
	uint64_t gen;
	int fd;

	make_id(a, 1);
	make_id(c, 3);
	hex_of(a, ID_LEN, ha);
	hex_of(c, ID_LEN, hc);
	make_file(e, "a.debug", 300000, 1, fa, sizeof(fa));
	make_file(e, "c.debug", 5000, 3, fc, sizeof(fc));
	s = start_stub(e, "serve", NULL, ha, fa, hc, fc, NULL);

	/* libdebuginfod would write to stderr with these: it must not. */
	setenv("DEBUGINFOD_VERBOSE", "1", 1);
	setenv("DEBUGINFOD_PROGRESS", "1", 1);
	snprintf(errf, sizeof(errf), "%s/stderr", e->dir);
	fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	fflush(stderr);
	e->saved_stderr = dup(2);
	assert_true(e->saved_stderr >= 0);
	dup2(fd, 2);
	close(fd);

	d = new_on(s->url, 0, 0, 0);
	gen = fl_debuginfod__generation(d);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, &path), FL_DEBUGINFOD_PENDING);
	assert_null(path);
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 0);
	assert_true(fl_debuginfod__generation(d) > gen);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, &path), FL_DEBUGINFOD_FETCHED);
	assert_non_null(path);
	/* In the cache it was given, with the server's bytes. */
	assert_memory_equal(path, e->cache, strlen(e->cache));
	assert_int_equal(file_size(path), 300000);
	assert_true(same_bytes(path, fa));
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, &again), FL_DEBUGINFOD_FETCHED);
	assert_ptr_equal(again, path);
	assert_int_equal(requests_for(e, a), 1);

	/* Build-ids of 2..64 bytes only; others are not remembered. */
	assert_int_equal(fl_debuginfod__lookup(d, bad, 1, NULL), FL_DEBUGINFOD_FAILED);
	assert_int_equal(fl_debuginfod__lookup(d, bad, FL_DEBUGINFOD_MAX_ID + 1, NULL),
			 FL_DEBUGINFOD_FAILED);
	assert_int_equal(fl_debuginfod__lookup(d, NULL, ID_LEN, NULL), FL_DEBUGINFOD_FAILED);
	assert_int_equal(fl_debuginfod__lookup(NULL, a, ID_LEN, NULL), FL_DEBUGINFOD_FAILED);

	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.fetched, 1);
	assert_int_equal(st.failed, 0);
	assert_int_equal(st.skipped, 0);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.cached, 0);
	assert_int_equal(st.bytes, 300000);
	assert_true(st.seconds > 0 && st.seconds < WAIT_S);
	fl_debuginfod__summary(d, sum, sizeof(sum));
	assert_non_null(strstr(sum, "debuginfod: 1 file fetched (293.0 KiB in "));
	assert_non_null(
		strstr(sum, "), 0 failed, 0 skipped over the budget (64 files, 1.0 GiB, 30 s)"));
	assert_null(strchr(sum, '\n'));
	fl_debuginfod__summary(d, sum, 12);
	assert_string_equal(sum, "debuginfod:");
	fl_debuginfod__free(d);

	/*
	 * A second object over the same cache: a is found there, costing no
	 * budget (max_files 1 still lets c be fetched).
	 */
	d = new_on(s->url, 1, 0, 0);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, NULL), FL_DEBUGINFOD_PENDING);
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 0);
	assert_int_equal(fl_debuginfod__lookup(d, c, ID_LEN, NULL), FL_DEBUGINFOD_PENDING);
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 0);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, &path), FL_DEBUGINFOD_FETCHED);
	assert_int_equal(fl_debuginfod__lookup(d, c, ID_LEN, &path), FL_DEBUGINFOD_FETCHED);
	assert_true(same_bytes(path, fc));
	assert_int_equal(requests_for(e, a), 1);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.fetched, 2);
	assert_int_equal(st.cached, 1);
	assert_int_equal(st.bytes, 305000);
	fl_debuginfod__free(d);

	restore_stderr(e);
	unsetenv("DEBUGINFOD_VERBOSE");
	unsetenv("DEBUGINFOD_PROGRESS");
	assert_int_equal(file_size(errf), 0);
}

static void test_not_found(void **state)
{
	struct env *e = *state;
	uint8_t a[ID_LEN], b[ID_LEN];
	char ha[2 * ID_LEN + 1], fa[256], sum[512];
	struct fl_debuginfod_stats st;
	struct fl_debuginfod *d;
	const char *path = NULL;
	struct stub *s;

	make_id(a, 1);
	make_id(b, 2);
	hex_of(a, ID_LEN, ha);
	make_file(e, "a.debug", 1000, 1, fa, sizeof(fa));
	s = start_stub(e, "serve", NULL, ha, fa, NULL);

	d = new_on(s->url, 0, 0, 0);
	assert_int_equal(fl_debuginfod__lookup(d, b, ID_LEN, &path), FL_DEBUGINFOD_PENDING);
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 0);
	assert_int_equal(fl_debuginfod__lookup(d, b, ID_LEN, &path), FL_DEBUGINFOD_FAILED);
	assert_null(path);
	/* Not asked again in the object's life, a new budget or not. */
	fl_debuginfod__reset_budget(d);
	assert_int_equal(fl_debuginfod__lookup(d, b, ID_LEN, NULL), FL_DEBUGINFOD_FAILED);
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 0);
	assert_int_equal(requests_for(e, b), 1);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.fetched, 0);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(st.last_error, 0); /* the server had nothing: no error */
	fl_debuginfod__summary(d, sum, sizeof(sum));
	assert_non_null(strstr(sum, "0 files fetched (0 B in "));
	assert_non_null(strstr(sum, ", 1 failed, 0 skipped"));
	assert_null(strstr(sum, "last error"));
	fl_debuginfod__free(d);
}

static void test_hang(void **state)
{
	struct env *e = *state;
	struct fl_debuginfod_stats st;
	enum fl_debuginfod_state s1;
	struct fl_debuginfod *d;
	uint8_t a[ID_LEN];
	struct stub *s;
	double t;
	unsigned n;

	make_id(a, 1);
	s = start_stub(e, "hang", NULL, NULL);
	d = new_on(s->url, 0, 0, 2.0);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, NULL), FL_DEBUGINFOD_PENDING);
	t = now_s();
	n = fl_debuginfod__wait(d, 30);
	t = now_s() - t;
	assert_int_equal(n, 1);
	assert_true(t >= 1.9);
	assert_true(t < 2.0 + 2.0);
	s1 = fl_debuginfod__lookup(d, a, ID_LEN, NULL);
	assert_true(s1 == FL_DEBUGINFOD_SKIPPED || s1 == FL_DEBUGINFOD_FAILED);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.skipped + st.failed, 1);
	/* Over the budget: a new lookup is not even queued. */
	a[0] ^= 0xff;
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, NULL), FL_DEBUGINFOD_SKIPPED);
	t = now_s();
	fl_debuginfod__free(d);
	assert_true(now_s() - t < 2.0);
}

static void test_free_while_hanging(void **state)
{
	struct env *e = *state;
	struct fl_debuginfod *d;
	char ha[2 * ID_LEN + 1], fa[256];
	const char *path = NULL;
	uint8_t a[ID_LEN];
	struct stub *s;
	double t;

	make_id(a, 1);
	hex_of(a, ID_LEN, ha);
	s = start_stub(e, "hang", NULL, NULL);
	/*
	 * A budget of 2 bytes: while no server has answered, the progress
	 * callback's first argument counts its calls, not bytes.
	 */
	d = new_on(s->url, 0, 2, 0);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, NULL), FL_DEBUGINFOD_PENDING);
	/* A plain timeout: it stays pending. */
	assert_int_equal(fl_debuginfod__wait(d, 1.5), 1);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, NULL), FL_DEBUGINFOD_PENDING);
	t = now_s();
	fl_debuginfod__free(d);
	assert_true(now_s() - t < 2.0);

	/*
	 * The aborted transfer left no "missing" mark in the cache: with a
	 * server that has it, the same cache gives it at once.
	 */
	make_file(e, "a.debug", 2000, 1, fa, sizeof(fa));
	s = start_stub(e, "serve", NULL, ha, fa, NULL);
	d = new_on(s->url, 0, 0, 0);
	fl_debuginfod__lookup(d, a, ID_LEN, NULL);
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 0);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, &path), FL_DEBUGINFOD_FETCHED);
	assert_true(same_bytes(path, fa));
	fl_debuginfod__free(d);
}

static int good_files;

/* Counts the non-empty files below a build-id directory (the cache's control files are above). */
static int count_good(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	if (flag == FTW_F && ftw->level >= 2 && st->st_size > 0)
		good_files++;
	return 0;
}

static void test_half(void **state)
{
	struct env *e = *state;
	struct fl_debuginfod_stats st;
	struct fl_debuginfod *d;
	char ha[2 * ID_LEN + 1], fa[256];
	const char *path = NULL;
	uint8_t a[ID_LEN];
	struct stub *s;

	make_id(a, 1);
	hex_of(a, ID_LEN, ha);
	make_file(e, "a.debug", 300000, 1, fa, sizeof(fa));
	s = start_stub(e, "half", NULL, ha, fa, NULL);
	d = new_on(s->url, 0, 0, 0);
	fl_debuginfod__lookup(d, a, ID_LEN, NULL);
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 0);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, &path), FL_DEBUGINFOD_FAILED);
	assert_null(path);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.fetched, 0);
	assert_int_equal(st.bytes, 0);
	assert_true(requests_for(e, a) >= 1);
	fl_debuginfod__free(d);
	good_files = 0;
	assert_int_equal(nftw(e->cache, count_good, 16, FTW_PHYS), 0);
	assert_int_equal(good_files, 0);
}

static void test_max_files(void **state)
{
	struct env *e = *state;
	uint8_t id[4][ID_LEN];
	char hex[3][2 * ID_LEN + 1], f[256];
	struct fl_debuginfod_stats st;
	struct fl_debuginfod *d;
	struct stub *s;
	uint64_t gen;
	int i;

	make_file(e, "x.debug", 10000, 7, f, sizeof(f));
	for (i = 0; i < 4; i++)
		make_id(id[i], (unsigned)i + 1);
	for (i = 0; i < 3; i++)
		hex_of(id[i], ID_LEN, hex[i]);
	s = start_stub(e, "serve", NULL, hex[0], f, hex[1], f, hex[2], f, NULL);
	d = new_on(s->url, 2, 0, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(fl_debuginfod__lookup(d, id[i], ID_LEN, NULL),
				 FL_DEBUGINFOD_PENDING);
	fl_debuginfod__wait(d, WAIT_S);
	/* FIFO: the first two are fetched, the third never asked for. */
	assert_int_equal(fl_debuginfod__lookup(d, id[0], ID_LEN, NULL), FL_DEBUGINFOD_FETCHED);
	assert_int_equal(fl_debuginfod__lookup(d, id[1], ID_LEN, NULL), FL_DEBUGINFOD_FETCHED);
	assert_int_equal(fl_debuginfod__lookup(d, id[2], ID_LEN, NULL), FL_DEBUGINFOD_SKIPPED);
	assert_int_equal(fl_debuginfod__lookup(d, id[3], ID_LEN, NULL), FL_DEBUGINFOD_SKIPPED);
	assert_int_equal(requests_for(e, id[2]), 0);
	assert_int_equal(requests_for(e, id[3]), 0);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.fetched, 2);
	assert_int_equal(st.skipped, 2);
	assert_int_equal(st.pending, 0);
	assert_int_equal(st.bytes, 20000);

	/* A new budget: both are asked for, in order, id[3] gets a 404. */
	gen = fl_debuginfod__generation(d);
	fl_debuginfod__reset_budget(d);
	assert_true(fl_debuginfod__generation(d) > gen); /* SKIPPED ones: ask again */
	assert_int_equal(fl_debuginfod__lookup(d, id[2], ID_LEN, NULL), FL_DEBUGINFOD_PENDING);
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 0);
	assert_true(fl_debuginfod__generation(d) >= gen + 3);
	assert_int_equal(fl_debuginfod__lookup(d, id[2], ID_LEN, NULL), FL_DEBUGINFOD_FETCHED);
	assert_int_equal(fl_debuginfod__lookup(d, id[3], ID_LEN, NULL), FL_DEBUGINFOD_FAILED);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.fetched, 3);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.skipped, 0);
	assert_int_equal(st.bytes, 30000);
	fl_debuginfod__free(d);
}

static void test_max_bytes(void **state)
{
	struct env *e = *state;
	uint8_t a[ID_LEN], b[ID_LEN], c[ID_LEN];
	char ha[2 * ID_LEN + 1], hb[2 * ID_LEN + 1], hc[2 * ID_LEN + 1], fa[256], fc[256];
	char sum[512];
	struct fl_debuginfod_stats st;
	struct fl_debuginfod *d;
	const char *path;
	struct stub *s;

	make_id(a, 1);
	make_id(b, 2);
	make_id(c, 3);
	hex_of(a, ID_LEN, ha);
	hex_of(b, ID_LEN, hb);
	hex_of(c, ID_LEN, hc);
	make_file(e, "a.debug", 100000, 1, fa, sizeof(fa));
	make_file(e, "c.debug", 200000, 3, fc, sizeof(fc));
	/*
	 * With Content-Length: the size is known from the first bytes on. Slow,
	 * so that the transfer is still going on when the callback learns it.
	 */
	s = start_stub(e, "slow", "0.002", ha, fa, hb, fa, hc, fc, NULL);
	d = new_on(s->url, 0, 150000, 0);
	fl_debuginfod__lookup(d, a, ID_LEN, NULL);
	fl_debuginfod__lookup(d, b, ID_LEN, NULL);
	fl_debuginfod__lookup(d, c, ID_LEN, NULL);
	fl_debuginfod__wait(d, WAIT_S);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, NULL), FL_DEBUGINFOD_FETCHED);
	/* 100000 bytes do not fit in the 50000 left. */
	assert_int_equal(fl_debuginfod__lookup(d, b, ID_LEN, NULL), FL_DEBUGINFOD_SKIPPED);
	/* 200000 bytes never fit in a budget of 150000. */
	assert_int_equal(fl_debuginfod__lookup(d, c, ID_LEN, NULL), FL_DEBUGINFOD_FAILED);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.fetched, 1);
	assert_int_equal(st.skipped, 1);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.bytes, 100000);
	assert_int_equal(st.last_error, -EFBIG);
	fl_debuginfod__summary(d, sum, sizeof(sum));
	assert_non_null(strstr(sum, "1 skipped over the budget (64 files, 146.5 KiB, 30 s)"));
	assert_non_null(strstr(sum, "; last error: "));

	/* A new budget fetches b: its aborted transfer did not mark it missing. */
	fl_debuginfod__reset_budget(d);
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 0);
	assert_int_equal(fl_debuginfod__lookup(d, b, ID_LEN, &path), FL_DEBUGINFOD_FETCHED);
	assert_true(same_bytes(path, fa));
	assert_int_equal(fl_debuginfod__lookup(d, c, ID_LEN, NULL), FL_DEBUGINFOD_FAILED);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.bytes, 200000);
	fl_debuginfod__free(d);
}

static void test_max_bytes_no_length(void **state)
{
	struct env *e = *state;
	uint8_t a[ID_LEN], b[ID_LEN];
	char ha[2 * ID_LEN + 1], hb[2 * ID_LEN + 1], fa[256], fb[256];
	struct fl_debuginfod_stats st;
	struct fl_debuginfod *d;
	const char *path;
	struct stub *s;

	make_id(a, 1);
	make_id(b, 2);
	hex_of(a, ID_LEN, ha);
	hex_of(b, ID_LEN, hb);
	make_file(e, "a.debug", 40000, 1, fa, sizeof(fa));
	make_file(e, "b.debug", 300000, 2, fb, sizeof(fb));
	/* No Content-Length: only the bytes received so far tell. */
	s = start_stub(e, "slow", "-0.005", ha, fa, hb, fb, NULL);
	d = new_on(s->url, 0, 320000, 0);
	fl_debuginfod__lookup(d, a, ID_LEN, NULL);
	fl_debuginfod__lookup(d, b, ID_LEN, NULL);
	fl_debuginfod__wait(d, WAIT_S);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, NULL), FL_DEBUGINFOD_FETCHED);
	assert_int_equal(fl_debuginfod__lookup(d, b, ID_LEN, NULL), FL_DEBUGINFOD_SKIPPED);
	assert_int_equal(requests_for(e, b), 1);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.bytes, 40000);
	assert_int_equal(st.skipped, 1);

	fl_debuginfod__reset_budget(d);
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 0);
	assert_int_equal(fl_debuginfod__lookup(d, b, ID_LEN, &path), FL_DEBUGINFOD_FETCHED);
	assert_true(same_bytes(path, fb));
	assert_int_equal(requests_for(e, b), 2);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.bytes, 340000);
	assert_int_equal(st.skipped, 0);
	fl_debuginfod__free(d);
}

static void test_time_budget_mid_transfer(void **state)
{
	struct env *e = *state;
	char ha[2 * ID_LEN + 1], fa[256];
	struct fl_debuginfod_stats st;
	struct fl_debuginfod *d;
	uint8_t a[ID_LEN];
	struct stub *s;
	uint64_t gen;
	double t;

	make_id(a, 1);
	hex_of(a, ID_LEN, ha);
	/* About 2.5 s of transfer: over a budget of 1 s. */
	make_file(e, "a.debug", 4096 * 25, 1, fa, sizeof(fa));
	s = start_stub(e, "slow", "0.1", ha, fa, NULL);
	d = new_on(s->url, 0, 0, 1.0);
	fl_debuginfod__lookup(d, a, ID_LEN, NULL);
	t = now_s();
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 1);
	assert_true(now_s() - t < 1.0 + 2.0);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.skipped, 1);
	assert_int_equal(st.pending, 0);
	/* Its transfer is aborted within about a second of the budget's end. */
	gen = fl_debuginfod__generation(d);
	t = now_s();
	while (fl_debuginfod__generation(d) == gen && now_s() - t < 5)
		usleep(10000);
	assert_true(now_s() - t < 1.5);
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, NULL), FL_DEBUGINFOD_SKIPPED);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.skipped, 1);
	assert_int_equal(st.fetched, 0);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(requests_for(e, a), 1);
	fl_debuginfod__free(d);
}

static void test_table_full(void **state)
{
	struct env *e = *state;
	char ha[2 * ID_LEN + 1], fa[256], sum[512];
	struct fl_debuginfod_stats st;
	struct fl_debuginfod *d;
	uint8_t a[ID_LEN], x[8];
	struct stub *s;
	unsigned i;

	make_id(a, 1);
	hex_of(a, ID_LEN, ha);
	make_file(e, "a.debug", 1000, 1, fa, sizeof(fa));
	s = start_stub(e, "serve", NULL, ha, fa, NULL);
	/* One file spends the budget: every later build-id is SKIPPED, unasked. */
	d = new_on(s->url, 1, 0, 0);
	fl_debuginfod__lookup(d, a, ID_LEN, NULL);
	assert_int_equal(fl_debuginfod__wait(d, WAIT_S), 0);
	for (i = 1; i < FL_DEBUGINFOD_MAX_ENTRIES; i++) {
		memset(x, 0, sizeof(x));
		memcpy(x, &i, sizeof(i));
		assert_int_equal(fl_debuginfod__lookup(d, x, sizeof(x), NULL),
				 FL_DEBUGINFOD_SKIPPED);
	}
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.fetched + st.skipped, FL_DEBUGINFOD_MAX_ENTRIES);
	assert_int_equal(st.full, 0);
	/* Full: refused and not remembered, each time. */
	i = FL_DEBUGINFOD_MAX_ENTRIES;
	memset(x, 0, sizeof(x));
	memcpy(x, &i, sizeof(i));
	assert_int_equal(fl_debuginfod__lookup(d, x, sizeof(x), NULL), FL_DEBUGINFOD_SKIPPED);
	assert_int_equal(fl_debuginfod__lookup(d, x, sizeof(x), NULL), FL_DEBUGINFOD_SKIPPED);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.full, 2);
	assert_int_equal(st.skipped, FL_DEBUGINFOD_MAX_ENTRIES - 1);
	/* The table still finds what it holds, after all its growth. */
	assert_int_equal(fl_debuginfod__lookup(d, a, ID_LEN, NULL), FL_DEBUGINFOD_FETCHED);
	i = 1234;
	memset(x, 0, sizeof(x));
	memcpy(x, &i, sizeof(i));
	assert_int_equal(fl_debuginfod__lookup(d, x, sizeof(x), NULL), FL_DEBUGINFOD_SKIPPED);
	fl_debuginfod__stats(d, &st);
	assert_int_equal(st.full, 2);
	fl_debuginfod__summary(d, sum, sizeof(sum));
	assert_non_null(strstr(sum, ", 2 over the table's limit"));
	fl_debuginfod__free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_urls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fetched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_found, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hang, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_while_hanging, setup, teardown),
		cmocka_unit_test_setup_teardown(test_half, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_bytes_no_length, setup, teardown),
		cmocka_unit_test_setup_teardown(test_time_budget_mid_transfer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_full, setup, teardown),
	};

	if (system("command -v python3 >/dev/null 2>&1") != 0) {
		printf("SKIP: no python3 to run %s\n", STUB);
		return 77;
	}
	/* The stubs listen on 127.0.0.1: no proxy in between. */
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	setenv("no_proxy", "127.0.0.1", 1);
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
