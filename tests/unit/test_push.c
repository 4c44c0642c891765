// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the push exporter: spool names, the ingest URL, the spool's cap and resume, and requests to a listener on 127.0.0.1. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/daemon/push.h"
#include "flamed/formats/pprof.h"

#define RECEIVER FIXTURE_SRC_DIR "/../integration/push_receiver.py"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- a tiny HTTP server: one connection at a time, answers from a script ---- */

enum reply_kind { ANSWER, HANG, CLOSE_MID };

struct reply {
	enum reply_kind kind;
	int status;
	int retry_after; /* 0: no header */
	const char *body;
};

struct request {
	char line[1024]; /* "POST /path?query HTTP/1.1" */
	char auth[256];	 /* the Authorization value */
	char ctype[128]; /* the Content-Type value */
	unsigned char *body;
	size_t len;
	bool complete; /* the whole body arrived */
	double t;
};

#define MAX_REQS 64

struct server {
	int lfd, port;
	pthread_t th;
	pthread_mutex_t lock;
	bool stop;
	struct reply script[16];
	size_t nscript, pos;
	struct reply dflt;
	struct request reqs[MAX_REQS];
	size_t nreqs;
};

/* Reads until "\r\n\r\n" (or 16 KiB); returns the bytes read, head included. */
static ssize_t read_head(struct server *s, int fd, char *buf, size_t size, size_t *head_len)
{
	size_t got = 0;

	while (got < size - 1) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		char *end;
		ssize_t r;

		if (poll(&pfd, 1, 100) == 0) {
			if (__atomic_load_n(&s->stop, __ATOMIC_SEQ_CST))
				return -1;
			continue;
		}
		r = read(fd, buf + got, size - 1 - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
		buf[got] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end) {
			*head_len = (size_t)(end + 4 - buf);
			return (ssize_t)got;
		}
	}
	return -1;
}

static void header_value(const char *head, const char *name, char *out, size_t size)
{
	const char *h = head;
	size_t n = strlen(name);

	out[0] = '\0';
	while ((h = strstr(h, "\r\n"))) {
		h += 2;
		if (!strncasecmp(h, name, n) && h[n] == ':') {
			const char *v = h + n + 1, *e;

			while (*v == ' ')
				v++;
			e = strstr(v, "\r\n");
			snprintf(out, size, "%.*s", (int)(e - v), v);
			return;
		}
	}
}

static void serve_one(struct server *s, int fd)
{
	char head[16384], ans[512];
	struct request *rq = NULL;
	struct reply rp;
	size_t head_len = 0, want, got;
	ssize_t n;
	char cl[32];

	n = read_head(s, fd, head, sizeof(head), &head_len);
	if (n < 0)
		return;
	pthread_mutex_lock(&s->lock);
	rp = s->pos < s->nscript ? s->script[s->pos++] : s->dflt;
	if (s->nreqs < MAX_REQS)
		rq = &s->reqs[s->nreqs++];
	pthread_mutex_unlock(&s->lock);
	if (!rq)
		return;
	rq->t = now_s();
	snprintf(rq->line, sizeof(rq->line), "%.*s", (int)strcspn(head, "\r\n"), head);
	header_value(head, "Authorization", rq->auth, sizeof(rq->auth));
	header_value(head, "Content-Type", rq->ctype, sizeof(rq->ctype));
	header_value(head, "Content-Length", cl, sizeof(cl));
	want = (size_t)strtoul(cl, NULL, 10);
	rq->body = malloc(want + 1);
	got = (size_t)n - head_len;
	memcpy(rq->body, head + head_len, got);
	if (rp.kind == CLOSE_MID)
		want /= 2;
	while (got < want) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (poll(&pfd, 1, 2000) <= 0)
			break;
		r = read(fd, rq->body + got, want - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	rq->len = got;
	rq->complete = rp.kind == ANSWER && got == want;
	if (rp.kind == CLOSE_MID)
		return;
	if (rp.kind == HANG) {
		/* Until the client gives up (EOF) or the server stops. */
		for (;;) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			char c[512];

			if (__atomic_load_n(&s->stop, __ATOMIC_SEQ_CST))
				return;
			if (poll(&pfd, 1, 100) > 0 && read(fd, c, sizeof(c)) <= 0)
				return;
		}
	}
	{
		const char *body = rp.body ? rp.body : "";
		char ra[64] = "";

		if (rp.retry_after)
			snprintf(ra, sizeof(ra), "Retry-After: %d\r\n", rp.retry_after);
		n = snprintf(ans, sizeof(ans),
			     "HTTP/1.1 %d Whatever\r\nContent-Length: %zu\r\n%sConnection: "
			     "close\r\n\r\n%s",
			     rp.status, strlen(body), ra, body);
		if (write(fd, ans, (size_t)n) < 0)
			return;
	}
}

static void *server_main(void *arg)
{
	struct server *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_SEQ_CST)) {
		struct pollfd pfd = {.fd = s->lfd, .events = POLLIN};
		int fd;

		if (poll(&pfd, 1, 50) <= 0)
			continue;
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_one(s, fd);
		close(fd);
	}
	return NULL;
}

static struct server *server_start(int dflt_status)
{
	struct server *s = calloc(1, sizeof(*s));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);

	assert_non_null(s);
	s->dflt = (struct reply){.kind = ANSWER, .status = dflt_status};
	pthread_mutex_init(&s->lock, NULL);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s->lfd, 16), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &alen), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->th, NULL, server_main, s), 0);
	return s;
}

static void server_script(struct server *s, const struct reply *r, size_t n)
{
	pthread_mutex_lock(&s->lock);
	memcpy(s->script, r, n * sizeof(*r));
	s->nscript = n;
	s->pos = 0;
	pthread_mutex_unlock(&s->lock);
}

static size_t server_nreqs(struct server *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->nreqs;
	pthread_mutex_unlock(&s->lock);
	return n;
}

static void server_stop(struct server *s)
{
	size_t i;

	__atomic_store_n(&s->stop, true, __ATOMIC_SEQ_CST);
	pthread_join(s->th, NULL);
	close(s->lfd);
	for (i = 0; i < s->nreqs; i++)
		free(s->reqs[i].body);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* ---- helpers ---- */

struct spool {
	char path[64];
	int fd;
};

static void spool_make(struct spool *sp)
{
	strcpy(sp->path, "/tmp/test_push.XXXXXX");
	assert_non_null(mkdtemp(sp->path));
	sp->fd = open(sp->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(sp->fd >= 0);
}

static void spool_remove(struct spool *sp)
{
	char cmd[128];

	close(sp->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sp->path);
	assert_int_equal(system(cmd), 0);
}

/* The regular files of the spool named push-*: how many, their total bytes. */
static size_t spool_files(const struct spool *sp, uint64_t *bytes)
{
	DIR *d = opendir(sp->path);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	if (bytes)
		*bytes = 0;
	while ((de = readdir(d))) {
		struct fl_push_spool_name nm;
		struct stat st;

		if (fl_push__parse_spool_name(de->d_name, &nm))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		n++;
		if (bytes)
			*bytes += (uint64_t)st.st_size;
	}
	closedir(d);
	return n;
}

static struct fl_push_opts opts_for(int port, const struct spool *sp, char *url, size_t urlsize)
{
	snprintf(url, urlsize, "http://127.0.0.1:%d/pfx/", port);
	return (struct fl_push_opts){
		.sz = sizeof(struct fl_push_opts),
		.url = url,
		.app_name = "flamed",
		.labels = "env=prod",
		.timeout_s = 2,
		.spool_dir_fd = sp->fd,
		.spool_max_bytes = 1 << 20,
		.backoff_min_s = 0.05,
		.backoff_max_s = 0.2,
	};
}

/* Polls the stats until cond holds (at most secs). */
#define WAIT_FOR(p, st, secs, cond)                                                     \
	do {                                                                            \
		double _t0 = now_s();                                                   \
		for (;;) {                                                              \
			fl_push__stats((p), &(st));                                     \
			if (cond)                                                       \
				break;                                                  \
			if (now_s() - _t0 > (secs))                                     \
				fail_msg("not within %g s: %s (last error: %s)",        \
					 (double)(secs), #cond, (st).last_error);       \
			usleep(10000);                                                  \
		}                                                                       \
	} while (0)

static void fill(unsigned char *b, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 131 + i * 7);
}

static const char *expected_line(char *buf, size_t size, int64_t from, int64_t until, unsigned rate)
{
	snprintf(buf, size,
		 "POST /pfx/ingest?name=flamed%%7Benv%%3Dprod%%7D&from=%lld&until=%lld"
		 "&format=pprof&sampleRate=%u&spyName=flamed&units=samples&aggregationType=sum "
		 "HTTP/1.1",
		 (long long)from, (long long)until, rate);
	return buf;
}

/* ---- tests ---- */

static void test_spool_names(void **state)
{
	struct fl_push_spool_name n = {.seq = 42, .from_s = 1700000000, .until_s = 1700000060,
				       .sample_rate = 99}, m = {0};
	static const char *const bad[] = {
		"push-01-1-2-3.pprof",	  "push-1-1-2-3.pprof.x",    "push-1--1-2-3.pprof",
		"push-1-1-2-3.pprofx",	  "xpush-1-1-2-3.pprof",     "push-1-1-2.pprof",
		"push--1-2-3.pprof",	  "push-1-1-2-3-4.pprof",    "push-+1-1-2-3.pprof",
		"push-1-1-2-3.PPROF",	  "push-1-1-2-4294967296.pprof",
		"push-18446744073709551616-1-2-3.pprof", "push-1-9223372036854775808-2-3.pprof",
		".tmp-push-1",		  "push-1-1-2- 3.pprof",     "",
	};
	char buf[128];
	size_t i;

	(void)state;
	assert_int_equal(fl_push__spool_name(&n, buf, sizeof(buf)), 38);
	assert_string_equal(buf, "push-42-1700000000-1700000060-99.pprof");
	assert_int_equal(fl_push__parse_spool_name(buf, &m), 0);
	assert_true(m.seq == n.seq && m.from_s == n.from_s && m.until_s == n.until_s &&
		    m.sample_rate == n.sample_rate);
	assert_int_equal(fl_push__parse_spool_name("push-18446744073709551615-0-9223372036854775807-4294967295.pprof", &m), 0);
	assert_true(m.seq == UINT64_MAX && m.from_s == 0 && m.until_s == INT64_MAX &&
		    m.sample_rate == UINT32_MAX);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m.seq = 7;
		if (fl_push__parse_spool_name(bad[i], &m) != -EINVAL)
			fail_msg("\"%s\" parsed as a spool name", bad[i]);
		assert_int_equal(m.seq, 7);
	}
	assert_int_equal(fl_push__spool_name(&n, buf, 10), -ENOSPC);
	n.from_s = -1;
	assert_int_equal(fl_push__spool_name(&n, buf, sizeof(buf)), -EINVAL);
}

static void test_url(void **state)
{
	struct fl_push_opts o = {
		.sz = sizeof(o),
		.url = "https://pyro.example:4040/base//",
		.app_name = "my.app/x",
		.labels = " env = prod , team=a b&c{x=y ,  q=50%~ ",
		.spool_max_bytes = 1,
	};
	static const char *const bad_urls[] = {
		"ftp://h",	  "http://",	   "http:///x", "http://u:p@h/", "http://h/?q=1",
		"http://h/#f",	  "http://h/a b",  "h:4040",	"",		 "http://h/\n",
	};
	static const char *const bad_labels[] = {
		"1a=b", "a=b}", "a=b,a=c", "a", "__n=1", "a=", "a=b,", "=b", "a-b=c", "a=b\tc\x01",
	};
	char *url = NULL, err[200];
	size_t i;

	(void)state;
	assert_int_equal(fl_push__ingest_url(&o, 1700000000, 1700000060, 99, &url), 0);
	assert_string_equal(url, "https://pyro.example:4040/base/ingest?name=my.app%2Fx%7Benv%3Dprod%2C"
				 "team%3Da%20b%26c%7Bx%3Dy%2Cq%3D50%25~%7D&from=1700000000&until="
				 "1700000060&format=pprof&sampleRate=99&spyName=flamed&units=samples"
				 "&aggregationType=sum");
	free(url);
	o.labels = "   ";
	o.app_name = NULL;
	o.url = "http://[::1]:9";
	assert_int_equal(fl_push__ingest_url(&o, 0, 1, 1, &url), 0);
	assert_string_equal(url, "http://[::1]:9/ingest?name=flamed&from=0&until=1&format=pprof"
				 "&sampleRate=1&spyName=flamed&units=samples&aggregationType=sum");
	free(url);

	for (i = 0; i < sizeof(bad_urls) / sizeof(bad_urls[0]); i++) {
		o.url = bad_urls[i];
		err[0] = '\0';
		if (fl_push__check_opts(&o, err, sizeof(err)) != -EINVAL || !err[0])
			fail_msg("URL \"%s\" accepted", bad_urls[i]);
	}
	o.url = "http://h";
	for (i = 0; i < sizeof(bad_labels) / sizeof(bad_labels[0]); i++) {
		o.labels = bad_labels[i];
		err[0] = '\0';
		if (fl_push__check_opts(&o, err, sizeof(err)) != -EINVAL || !err[0])
			fail_msg("labels \"%s\" accepted", bad_labels[i]);
	}
	o.labels = NULL;
	o.app_name = "a b";
	assert_int_equal(fl_push__check_opts(&o, err, sizeof(err)), -EINVAL);
	o.app_name = "";
	assert_int_equal(fl_push__check_opts(&o, err, sizeof(err)), -EINVAL);
	o.app_name = NULL;
	o.auth = "tok\r\nX-Evil: 1";
	assert_int_equal(fl_push__check_opts(&o, err, sizeof(err)), -EINVAL);
	o.auth = "";
	assert_int_equal(fl_push__check_opts(&o, err, sizeof(err)), -EINVAL);
	o.auth = "user:pass";
	assert_int_equal(fl_push__check_opts(&o, err, sizeof(err)), 0);
	o.sz = sizeof(o) - 1;
	assert_int_equal(fl_push__check_opts(&o, err, sizeof(err)), -EINVAL);
}

/* Three snapshots, 200 each: in order, every parameter, the bearer token, the body. */
static void test_deliver(void **state)
{
	struct server *s = server_start(200);
	struct fl_push_stats st;
	struct fl_push *p = NULL;
	struct fl_push_opts o;
	struct spool sp;
	unsigned char body[3][3000];
	char url[128], line[512];
	size_t i;

	(void)state;
	spool_make(&sp);
	o = opts_for(s->port, &sp, url, sizeof(url));
	o.auth = "tok123";
	assert_int_equal(fl_push__new(&o, &p), 0);
	for (i = 0; i < 3; i++) {
		fill(body[i], sizeof(body[i]), (unsigned)i);
		assert_int_equal(fl_push__enqueue(p, body[i], sizeof(body[i]) - i, 100 + 10 * (int64_t)i,
						  110 + 10 * (int64_t)i, 99),
				 0);
	}
	WAIT_FOR(p, st, 10, st.sent == 3);
	assert_int_equal(st.enqueued, 3);
	assert_int_equal(st.failed_attempts + st.dropped + st.refused + st.retries, 0);
	assert_int_equal(st.spooled_files, 0);
	assert_int_equal(st.spool_bytes, 0);
	assert_true(st.spool_bytes_max >= 3000 && st.spool_bytes_max <= 3 * 3000);
	assert_int_equal(st.last_status, 200);
	fl_push__free(p);
	assert_int_equal(server_nreqs(s), 3);
	for (i = 0; i < 3; i++) {
		struct request *r = &s->reqs[i];

		assert_string_equal(r->line, expected_line(line, sizeof(line), 100 + 10 * (int64_t)i,
							   110 + 10 * (int64_t)i, 99));
		assert_string_equal(r->auth, "Bearer tok123");
		assert_string_equal(r->ctype, "application/octet-stream");
		assert_true(r->complete);
		assert_int_equal(r->len, sizeof(body[i]) - i);
		assert_memory_equal(r->body, body[i], r->len);
	}
	assert_int_equal(spool_files(&sp, NULL), 0);
	server_stop(s);
	spool_remove(&sp);
}

static void test_basic_auth(void **state)
{
	struct server *s = server_start(204);
	struct fl_push_stats st;
	struct fl_push *p = NULL;
	struct fl_push_opts o;
	struct spool sp;
	char url[128];

	(void)state;
	spool_make(&sp);
	o = opts_for(s->port, &sp, url, sizeof(url));
	o.auth = "user:pass";
	assert_int_equal(fl_push__new(&o, &p), 0);
	assert_int_equal(fl_push__enqueue(p, "x", 1, 5, 6, 1), 0);
	WAIT_FOR(p, st, 10, st.sent == 1);
	fl_push__free(p);
	assert_string_equal(s->reqs[0].auth, "Basic dXNlcjpwYXNz");
	server_stop(s);
	spool_remove(&sp);
}

/* 500, 429 + Retry-After: 1, 503, then 200: one delivery, the delay honoured. */
static void test_retry(void **state)
{
	static const struct reply script[] = {
		{.kind = ANSWER, .status = 500},
		{.kind = ANSWER, .status = 429, .retry_after = 1},
		{.kind = ANSWER, .status = 503, .body = "overloaded\nsecond line"},
		{.kind = ANSWER, .status = 408},
	};
	struct server *s = server_start(200);
	struct fl_push_stats st;
	struct fl_push *p = NULL;
	struct fl_push_opts o;
	struct spool sp;
	char url[128], line[512];
	size_t i;

	(void)state;
	server_script(s, script, 4);
	spool_make(&sp);
	o = opts_for(s->port, &sp, url, sizeof(url));
	o.backoff_max_s = 5;
	assert_int_equal(fl_push__new(&o, &p), 0);
	assert_int_equal(fl_push__enqueue(p, "snapshot", 8, 1000, 1060, 49), 0);
	WAIT_FOR(p, st, 15, st.sent == 1);
	assert_int_equal(st.failed_attempts, 4);
	assert_int_equal(st.retries, 4);
	assert_int_equal(st.consecutive_failures, 0);
	assert_int_equal(st.dropped + st.refused, 0);
	assert_true(st.last_error_seq == 4);
	assert_non_null(strstr(st.last_error, "HTTP 408"));
	fl_push__free(p);
	assert_int_equal(server_nreqs(s), 5);
	for (i = 0; i < 5; i++) {
		assert_string_equal(s->reqs[i].line, expected_line(line, sizeof(line), 1000, 1060, 49));
		assert_memory_equal(s->reqs[i].body, "snapshot", 8);
	}
	/* Retry-After: 1 between the 2nd and 3rd; the backoff alone is 0.1 s. */
	assert_true(s->reqs[2].t - s->reqs[1].t >= 0.95);
	assert_true(s->reqs[1].t - s->reqs[0].t < 0.9);
	assert_int_equal(spool_files(&sp, NULL), 0);
	server_stop(s);
	spool_remove(&sp);
}

/* A 400 deletes the snapshot for good, and the next one goes. */
static void test_refused(void **state)
{
	static const struct reply script[] = {
		{.kind = ANSWER, .status = 400, .body = "bad profile\x01"},
	};
	struct server *s = server_start(200);
	struct fl_push_stats st;
	struct fl_push *p = NULL;
	struct fl_push_opts o;
	struct spool sp;
	char url[128], line[512];

	(void)state;
	server_script(s, script, 1);
	spool_make(&sp);
	o = opts_for(s->port, &sp, url, sizeof(url));
	assert_int_equal(fl_push__new(&o, &p), 0);
	assert_int_equal(fl_push__enqueue(p, "one", 3, 1, 2, 99), 0);
	assert_int_equal(fl_push__enqueue(p, "two", 3, 2, 3, 99), 0);
	WAIT_FOR(p, st, 10, st.sent == 1 && st.refused == 1);
	assert_int_equal(st.failed_attempts, 0);
	assert_non_null(strstr(st.last_error, "HTTP 400"));
	assert_non_null(strstr(st.last_error, "bad profile?"));
	assert_non_null(strstr(st.last_error, "/pfx/ingest"));
	fl_push__free(p);
	assert_int_equal(server_nreqs(s), 2);
	assert_string_equal(s->reqs[1].line, expected_line(line, sizeof(line), 2, 3, 99));
	assert_int_equal(spool_files(&sp, NULL), 0);
	server_stop(s);
	spool_remove(&sp);
}

/* A server that never answers (timeout), one that closes mid-body, then one that works. */
static void test_hang_and_close(void **state)
{
	static const struct reply script[] = {{.kind = HANG}, {.kind = CLOSE_MID}};
	struct server *s = server_start(200);
	static unsigned char body[256 << 10];
	struct fl_push_stats st;
	struct fl_push *p = NULL;
	struct fl_push_opts o;
	struct spool sp;
	char url[128];

	(void)state;
	server_script(s, script, 2);
	spool_make(&sp);
	o = opts_for(s->port, &sp, url, sizeof(url));
	o.timeout_s = 0.5;
	fill(body, sizeof(body), 9);
	assert_int_equal(fl_push__new(&o, &p), 0);
	assert_int_equal(fl_push__enqueue(p, body, sizeof(body), 7, 8, 99), 0);
	WAIT_FOR(p, st, 15, st.sent == 1);
	assert_int_equal(st.failed_attempts, 2);
	fl_push__free(p);
	assert_int_equal(server_nreqs(s), 3);
	assert_false(s->reqs[1].complete);
	assert_true(s->reqs[2].complete);
	assert_int_equal(s->reqs[2].len, sizeof(body));
	assert_memory_equal(s->reqs[2].body, body, sizeof(body));
	server_stop(s);
	spool_remove(&sp);
}

/*
 * The cap: ten snapshots of 1000 bytes in a spool of 3500 while the server
 * fails: the newest three stay, the spool never holds more than 3500.
 * Then a restart with junk around them: the three go out oldest first,
 * the junk stays untouched, a leftover temporary goes.
 */
static void test_spool_cap_and_resume(void **state)
{
	struct server *s = server_start(500);
	struct fl_push_stats st;
	struct fl_push *p = NULL;
	struct fl_push_opts o;
	struct spool sp;
	unsigned char body[1000];
	char url[128], line[512], outside[64], path[256];
	uint64_t bytes;
	size_t i;
	int fd;

	(void)state;
	spool_make(&sp);
	o = opts_for(s->port, &sp, url, sizeof(url));
	o.spool_max_bytes = 3500;
	o.backoff_min_s = 60; /* one failed attempt, then no more during the test */
	o.backoff_max_s = 60;
	assert_int_equal(fl_push__new(&o, &p), 0);
	for (i = 0; i < 10; i++) {
		fill(body, sizeof(body), (unsigned)i);
		assert_int_equal(fl_push__enqueue(p, body, sizeof(body), 1000 + (int64_t)i,
						  1001 + (int64_t)i, 99),
				 0);
		if (i == 0)
			WAIT_FOR(p, st, 10, st.failed_attempts == 1 && st.next_attempt_s > 0);
		assert_true(spool_files(&sp, &bytes) <= 3);
		assert_true(bytes <= 3500);
	}
	fl_push__stats(p, &st);
	assert_int_equal(st.enqueued, 10);
	assert_int_equal(st.dropped, 7);
	assert_int_equal(st.spooled_files, 3);
	assert_int_equal(st.spool_bytes, 3000);
	assert_true(st.spool_bytes_max <= 3500 && st.spool_bytes_max >= 3000);
	assert_int_equal(fl_push__enqueue(p, body, 3501, 1, 2, 99), -EFBIG);
	assert_int_equal(fl_push__enqueue(p, body, 0, 1, 2, 99), -EINVAL);
	assert_int_equal(fl_push__enqueue(p, body, 1, 3, 2, 99), -EINVAL);
	assert_int_equal(fl_push__enqueue(p, body, 1, 1, 2, 0), -EINVAL);
	fl_push__stats(p, &st);
	assert_int_equal(st.dropped, 8);
	assert_int_equal(st.spooled_files, 3);
	fl_push__free(p);
	assert_int_equal(server_nreqs(s), 1);
	server_stop(s);

	/* On disk: seq 8, 9, 10, i.e. from 1007, 1008, 1009. */
	for (i = 0; i < 3; i++) {
		struct stat stt;

		snprintf(path, sizeof(path), "%s/push-%zu-%zu-%zu-99.pprof", sp.path, 8 + i, 1007 + i,
			 1008 + i);
		assert_int_equal(stat(path, &stt), 0);
		assert_int_equal(stt.st_mode & 0777, 0600);
		assert_int_equal(stt.st_size, 1000);
	}
	/* Junk: a symlink, a directory and a zero-padded name that look like snapshots. */
	strcpy(outside, "/tmp/test_push_outside.XXXXXX");
	fd = mkstemp(outside);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "secret", 6), 6);
	close(fd);
	assert_int_equal(symlinkat(outside, sp.fd, "push-100-1-2-3.pprof"), 0);
	assert_int_equal(mkdirat(sp.fd, "push-101-1-2-3.pprof", 0700), 0);
	fd = openat(sp.fd, "push-0102-1-2-3.pprof", O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0 && write(fd, "zz", 2) == 2);
	close(fd);
	fd = openat(sp.fd, "notes.txt", O_WRONLY | O_CREAT, 0600);
	close(fd);
	fd = openat(sp.fd, ".tmp-push-55", O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0 && write(fd, "partial", 7) == 7);
	close(fd);

	s = server_start(200);
	o = opts_for(s->port, &sp, url, sizeof(url));
	o.spool_max_bytes = 3500;
	assert_int_equal(fl_push__new(&o, &p), 0);
	WAIT_FOR(p, st, 10, st.sent == 3);
	assert_int_equal(fl_push__enqueue(p, "new", 3, 2000, 2001, 99), 0);
	WAIT_FOR(p, st, 10, st.sent == 4);
	assert_int_equal(st.dropped, 0);
	fl_push__free(p);
	assert_int_equal(server_nreqs(s), 4);
	for (i = 0; i < 3; i++) {
		assert_string_equal(s->reqs[i].line,
				    expected_line(line, sizeof(line), 1007 + (int64_t)i,
						  1008 + (int64_t)i, 99));
		fill(body, sizeof(body), 7 + (unsigned)i);
		assert_memory_equal(s->reqs[i].body, body, 1000);
	}
	assert_string_equal(s->reqs[3].line, expected_line(line, sizeof(line), 2000, 2001, 99));
	server_stop(s);

	assert_int_equal(faccessat(sp.fd, ".tmp-push-55", F_OK, 0), -1);
	assert_int_equal(faccessat(sp.fd, "notes.txt", F_OK, 0), 0);
	assert_int_equal(faccessat(sp.fd, "push-0102-1-2-3.pprof", F_OK, 0), 0);
	{
		struct stat stt;

		assert_int_equal(fstatat(sp.fd, "push-100-1-2-3.pprof", &stt, AT_SYMLINK_NOFOLLOW), 0);
		assert_true(S_ISLNK(stt.st_mode));
		assert_int_equal(fstatat(sp.fd, "push-101-1-2-3.pprof", &stt, AT_SYMLINK_NOFOLLOW), 0);
		assert_true(S_ISDIR(stt.st_mode));
		assert_int_equal(stat(outside, &stt), 0);
		assert_int_equal(stt.st_size, 6);
	}
	unlink(outside);
	spool_remove(&sp);
}

/* A lowered cap at start: the oldest spooled snapshots go. A shared directory is refused. */
static void test_start_over_cap(void **state)
{
	struct fl_push_stats st;
	struct fl_push *p = NULL;
	struct fl_push_opts o;
	struct spool sp;
	char url[128];
	size_t i;

	(void)state;
	spool_make(&sp);
	/* A port nobody listens on (the listener is closed): connection refused. */
	{
		struct server *s = server_start(200);
		int port = s->port;

		server_stop(s);
		o = opts_for(port, &sp, url, sizeof(url));
	}
	o.backoff_min_s = o.backoff_max_s = 60;
	assert_int_equal(fl_push__new(&o, &p), 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(fl_push__enqueue(p, "0123456789", 10, (int64_t)i, (int64_t)i + 1, 9), 0);
	WAIT_FOR(p, st, 10, st.failed_attempts == 1);
	assert_non_null(strstr(st.last_error, "cannot send to"));
	assert_int_equal(st.last_status, 0);
	fl_push__free(p);
	assert_int_equal(spool_files(&sp, NULL), 5);
	o.spool_max_bytes = 25;
	assert_int_equal(fl_push__new(&o, &p), 0);
	fl_push__stats(p, &st);
	assert_int_equal(st.dropped, 3);
	assert_int_equal(st.spooled_files, 2);
	fl_push__free(p);
	assert_int_equal(spool_files(&sp, NULL), 2);
	assert_int_equal(faccessat(sp.fd, "push-4-3-4-9.pprof", F_OK, 0), 0);
	assert_int_equal(faccessat(sp.fd, "push-5-4-5-9.pprof", F_OK, 0), 0);

	/* 0: no backlog, the newest only. */
	o.spool_max_bytes = 0;
	assert_int_equal(fl_push__new(&o, &p), 0);
	fl_push__stats(p, &st);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(fl_push__enqueue(p, "0123456789abcdef", 16, 7, 8, 9), 0);
	fl_push__stats(p, &st);
	assert_int_equal(st.dropped, 2);
	assert_int_equal(st.spooled_files, 1);
	fl_push__free(p);
	assert_int_equal(spool_files(&sp, NULL), 1);
	assert_int_equal(faccessat(sp.fd, "push-6-7-8-9.pprof", F_OK, 0), 0);

	assert_int_equal(fchmod(sp.fd, 0777), 0);
	assert_int_equal(fl_push__new(&o, &p), -EPERM);
	assert_int_equal(fchmod(sp.fd, 0700), 0);
	spool_remove(&sp);
}

/* fl_push__free() during a request that hangs: back within about a second. */
static void test_stop_bounded(void **state)
{
	static const struct reply script[] = {{.kind = HANG}};
	struct server *s = server_start(200);
	struct fl_push_stats st;
	struct fl_push *p = NULL;
	struct fl_push_opts o;
	struct spool sp;
	char url[128];
	double t0, t;

	(void)state;
	server_script(s, script, 1);
	spool_make(&sp);
	o = opts_for(s->port, &sp, url, sizeof(url));
	o.timeout_s = 30;
	assert_int_equal(fl_push__new(&o, &p), 0);
	assert_int_equal(fl_push__enqueue(p, "abc", 3, 1, 2, 99), 0);
	t0 = now_s();
	while (server_nreqs(s) < 1 && now_s() - t0 < 10)
		usleep(10000);
	assert_int_equal(server_nreqs(s), 1);
	usleep(100000);
	t0 = now_s();
	fl_push__free(p);
	t = now_s() - t0;
	print_message("fl_push__free() during a hanging request: %.2f s\n", t);
	assert_true(t < 2.5);
	assert_int_equal(spool_files(&sp, NULL), 1); /* kept for the next start */
	(void)st;
	server_stop(s);
	spool_remove(&sp);
}

/*
 * A real pprof body through tests/integration/push_receiver.py, read back
 * with `go tool pprof -raw`: skipped without python3 or go.
 */
static void test_receiver_pprof(void **state)
{
	struct fl_pprof_opts po = {.sz = sizeof(po), .period_ns = 10101010};
	struct fl_pprof_line ln[1];
	struct fl_push_stats st;
	struct fl_push *p = NULL;
	struct fl_pprof *pp = NULL;
	struct fl_push_opts o;
	struct spool sp;
	char dir[64], url[128], cmd[512], out[8192], portbuf[16];
	uint32_t fid, loc[2];
	char *buf = NULL;
	size_t len = 0, n;
	FILE *f;
	pid_t pid;
	int port = 0;
	double t0;

	(void)state;
	if (system("command -v python3 >/dev/null 2>&1 && command -v go >/dev/null 2>&1") != 0 ||
	    access(RECEIVER, R_OK)) {
		print_message("SKIP: python3, go or %s missing\n", RECEIVER);
		skip();
	}
	/* The profile: main -> burn, 5 samples. */
	assert_int_equal(fl_pprof__new(&po, &pp), 0);
	assert_int_equal(fl_pprof__function(pp, "burn_cpu", NULL, NULL, 0, &fid), 0);
	ln[0] = (struct fl_pprof_line){.function = fid};
	assert_int_equal(fl_pprof__location(pp, 0, 0x1000, ln, 1, &loc[0]), 0);
	assert_int_equal(fl_pprof__function(pp, "main", NULL, NULL, 0, &fid), 0);
	ln[0] = (struct fl_pprof_line){.function = fid};
	assert_int_equal(fl_pprof__location(pp, 0, 0x2000, ln, 1, &loc[1]), 0);
	assert_int_equal(fl_pprof__add(pp, loc, 2, NULL, 5), 0);
	fl_pprof__set_time(pp, 1700000000ll * 1000000000ll, 10ll * 1000000000ll);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(fl_pprof__write(pp, f), 0);
	assert_int_equal(fclose(f), 0);
	fl_pprof__free(pp);

	strcpy(dir, "/tmp/test_push_recv.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "%s/port", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char portfile[128], store[128];

		snprintf(portfile, sizeof(portfile), "%s/port", dir);
		snprintf(store, sizeof(store), "%s/store", dir);
		execlp("python3", "python3", RECEIVER, "--port", "0", "--port-file", portfile,
		       "--dir", store, "--name", "flamed{env=prod}", "--auth", "Bearer tok",
		       "--quiet", (char *)NULL);
		_exit(127);
	}
	t0 = now_s();
	for (;;) {
		FILE *pf = fopen(cmd, "r");

		if (pf) {
			if (fgets(portbuf, sizeof(portbuf), pf))
				port = atoi(portbuf);
			fclose(pf);
		}
		if (port > 0)
			break;
		if (now_s() - t0 > 15)
			fail_msg("push_receiver.py did not start");
		usleep(50000);
	}
	spool_make(&sp);
	o = opts_for(port, &sp, url, sizeof(url));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	o.auth = "tok";
	assert_int_equal(fl_push__new(&o, &p), 0);
	assert_int_equal(fl_push__enqueue(p, buf, len, 1700000000, 1700000010, 99), 0);
	WAIT_FOR(p, st, 15, st.sent == 1 || st.refused || st.failed_attempts);
	assert_int_equal(st.sent, 1);
	fl_push__free(p);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);

	snprintf(cmd, sizeof(cmd), "cd %s && HOME=%s go tool pprof -raw store/000001.pprof 2>&1", dir,
		 dir);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	assert_int_equal(pclose(f), 0);
	if (!strstr(out, "burn_cpu") || !strstr(out, "main"))
		fail_msg("go tool pprof -raw of the body received: %s", out);
	snprintf(cmd, sizeof(cmd), "grep -q '\"from\": \"1700000000\"' %s/store/params.jsonl", dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	spool_remove(&sp);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spool_names),
		cmocka_unit_test(test_url),
		cmocka_unit_test(test_deliver),
		cmocka_unit_test(test_basic_auth),
		cmocka_unit_test(test_retry),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_hang_and_close),
		cmocka_unit_test(test_spool_cap_and_resume),
		cmocka_unit_test(test_start_over_cap),
		cmocka_unit_test(test_stop_bounded),
		cmocka_unit_test(test_receiver_pprof),
	};

	/* Loopback only: no proxy in between. */
	unsetenv("http_proxy");
	unsetenv("https_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("HTTPS_PROXY");
	unsetenv("ALL_PROXY");
	unsetenv("all_proxy");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
