// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the metrics endpoint: the exposition text, and the server over a real socket. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/daemon/metrics.h"

/* --- a checker of the Prometheus text format (0.0.4) -------------------------------- */

struct family {
	char name[128];
	char type[16];
};

struct exposition {
	struct family fam[64];
	size_t nr_fam;
	size_t nr_samples;
};

static bool is_name_char(char ch, bool first)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == ':' ||
	       (!first && ch >= '0' && ch <= '9');
}

/* Reads a metric or label name at *p into out; false when there is none. */
static bool read_name(const char **p, char *out, size_t size)
{
	size_t n = 0;

	while (is_name_char((*p)[n], n == 0) && n + 1 < size) {
		out[n] = (*p)[n];
		n++;
	}
	out[n] = '\0';
	*p += n;
	return n > 0;
}

/* A label value in quotes at *p, with \\, \" and \n as the only escapes. */
static bool read_label_value(const char **p)
{
	const char *s = *p;

	if (*s++ != '"')
		return false;
	while (*s && *s != '"') {
		if (*s == '\n')
			return false;
		if (*s == '\\') {
			s++;
			if (*s != '\\' && *s != '"' && *s != 'n')
				return false;
		}
		s++;
	}
	if (*s != '"')
		return false;
	*p = s + 1;
	return true;
}

static bool read_value(const char *s)
{
	char *end;

	if (!strcmp(s, "NaN") || !strcmp(s, "+Inf") || !strcmp(s, "-Inf"))
		return true;
	if (!*s)
		return false;
	strtod(s, &end);
	return *end == '\0';
}

/*
 * Checks text line by line: "# HELP name text", then "# TYPE name
 * counter|gauge", then the family's samples "name{l="v",...} value", each
 * family once. Fails the test at the first line that is not so.
 */
static void check_exposition(const char *text, struct exposition *e)
{
	char *copy = strdup(text), *save = NULL, *line;
	char help_for[128] = "";
	struct family *cur = NULL;

	assert_non_null(copy);
	memset(e, 0, sizeof(*e));
	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *p = line;
		char name[128], label[128];
		size_t i;

		if (!strncmp(p, "# HELP ", 7)) {
			p += 7;
			if (!read_name(&p, help_for, sizeof(help_for)) || *p != ' ' || !p[1])
				fail_msg("bad HELP line: %s", line);
			cur = NULL;
			continue;
		}
		if (!strncmp(p, "# TYPE ", 7)) {
			p += 7;
			if (!read_name(&p, name, sizeof(name)) || *p++ != ' ')
				fail_msg("bad TYPE line: %s", line);
			if (strcmp(name, help_for))
				fail_msg("TYPE of %s not right after its HELP", name);
			if (strcmp(p, "counter") && strcmp(p, "gauge"))
				fail_msg("bad type: %s", line);
			for (i = 0; i < e->nr_fam; i++)
				if (!strcmp(e->fam[i].name, name))
					fail_msg("family %s twice", name);
			assert_true(e->nr_fam < 64);
			cur = &e->fam[e->nr_fam++];
			snprintf(cur->name, sizeof(cur->name), "%s", name);
			snprintf(cur->type, sizeof(cur->type), "%s", p);
			if (!strcmp(p, "counter") && !strstr(name, "_total"))
				fail_msg("counter %s does not end in _total", name);
			continue;
		}
		if (*p == '#')
			fail_msg("unexpected comment: %s", line);
		if (!read_name(&p, name, sizeof(name)))
			fail_msg("bad sample line: %s", line);
		if (!cur || strcmp(cur->name, name))
			fail_msg("sample %s outside its family", name);
		if (*p == '{') {
			p++;
			for (;;) {
				if (!read_name(&p, label, sizeof(label)) || *p++ != '=' ||
				    !read_label_value(&p))
					fail_msg("bad labels: %s", line);
				if (*p == ',') {
					p++;
					continue;
				}
				if (*p++ != '}')
					fail_msg("bad labels: %s", line);
				break;
			}
		}
		if (*p++ != ' ' || !read_value(p))
			fail_msg("bad value: %s", line);
		e->nr_samples++;
	}
	free(copy);
}

/* The value of the sample line that starts with "series " (name and labels), or fails. */
static double value_of(const char *text, const char *series)
{
	size_t n = strlen(series);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, series, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	fail_msg("no sample %s in:\n%s", series, text);
	return 0;
}

static char *write_text(const struct fl_metrics_values *v, const char *version)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(fl_metrics__write(v, version, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void fill(struct fl_metrics_values *v)
{
	*v = (struct fl_metrics_values){
		.samples_profile = 123456789012ull,
		.samples_idle = 7,
		.samples_other_process = 8,
		.lost = {[FL_METRICS_LOST_RING_FULL] = 3, [FL_METRICS_LOST_COPY_FULL] = 4},
		.snapshots_written = 5,
		.snapshots_failed = 1,
		.snapshot_duration_s = 0.25,
		.last_snapshot_time = 1764000000.5,
		.push_ok = 11,
		.push_failed = 2,
		.push_spool_bytes = 4096,
		.push_spool_dropped = 1,
		.unwind = {[FL_METRICS_UNWIND_COMPLETE] = 90, [FL_METRICS_UNWIND_FAILED] = 10},
		.throttled = 6,
		.caps_hit = {[FL_METRICS_CAP_MAX_STACKS] = 12, [FL_METRICS_CAP_PERF_MAPS] = 13},
	};
}

static void test_exposition(void **state)
{
	struct fl_metrics_values v;
	struct exposition e;
	char *text;

	(void)state;
	fill(&v);
	text = write_text(&v, "0.1.0");
	check_exposition(text, &e);
	assert_true(value_of(text, "flamed_samples_total{outcome=\"profile\"}") == 123456789012.0);
	assert_true(value_of(text, "flamed_samples_total{outcome=\"idle\"}") == 7);
	assert_true(value_of(text, "flamed_samples_total{outcome=\"other_process\"}") == 8);
	/* "lost" is the sum of the causes. */
	assert_true(value_of(text, "flamed_samples_total{outcome=\"lost\"}") == 7);
	assert_true(value_of(text, "flamed_samples_lost_total{cause=\"ring_full\"}") == 3);
	assert_true(value_of(text, "flamed_samples_lost_total{cause=\"stack_copy_full\"}") == 4);
	assert_true(value_of(text, "flamed_samples_lost_total{cause=\"pid_namespace\"}") == 0);
	assert_true(value_of(text, "flamed_snapshots_total{result=\"written\"}") == 5);
	assert_true(value_of(text, "flamed_snapshots_total{result=\"failed\"}") == 1);
	assert_true(value_of(text, "flamed_snapshot_duration_seconds") == 0.25);
	assert_true(value_of(text, "flamed_last_snapshot_timestamp_seconds") == 1764000000.5);
	assert_true(value_of(text, "flamed_push_total{result=\"ok\"}") == 11);
	assert_true(value_of(text, "flamed_push_total{result=\"failed\"}") == 2);
	assert_true(value_of(text, "flamed_push_spool_bytes") == 4096);
	assert_true(value_of(text, "flamed_push_spool_dropped_total") == 1);
	assert_true(value_of(text, "flamed_unwind_stacks_total{outcome=\"complete\"}") == 90);
	assert_true(value_of(text, "flamed_unwind_stacks_total{outcome=\"failed\"}") == 10);
	assert_true(value_of(text, "flamed_unwind_stacks_total{outcome=\"stopped\"}") == 0);
	assert_true(value_of(text, "flamed_throttled_total") == 6);
	assert_true(value_of(text, "flamed_caps_hit_total{cap=\"max_stacks\"}") == 12);
	assert_true(value_of(text, "flamed_caps_hit_total{cap=\"perf_maps\"}") == 13);
	assert_true(value_of(text, "flamed_caps_hit_total{cap=\"max_processes\"}") == 0);
	assert_true(value_of(text, "flamed_build_info{version=\"0.1.0\"}") == 1);
	/* This process, now. */
	assert_true(value_of(text, "process_cpu_seconds_total") >= 0);
	assert_true(value_of(text, "process_resident_memory_bytes") > 0);
	assert_true(value_of(text, "process_virtual_memory_bytes") >=
		    value_of(text, "process_resident_memory_bytes"));
	assert_true(value_of(text, "process_open_fds") >= 3);
	assert_true(value_of(text, "process_max_fds") >= value_of(text, "process_open_fds"));
	{
		double start = value_of(text, "process_start_time_seconds");
		struct timeval now;

		gettimeofday(&now, NULL);
		/* Started before now, and not long ago: this test is young. */
		assert_true(start <= (double)now.tv_sec + 1 && start > (double)now.tv_sec - 600);
	}
	assert_true(e.nr_fam >= 18);
	free(text);

	/* A label value with '"', '\' and a newline is escaped; no version, no build_info. */
	text = write_text(&v, "1.0 \"odd\\\nbuild");
	check_exposition(text, &e);
	assert_non_null(strstr(text, "flamed_build_info{version=\"1.0 \\\"odd\\\\\\nbuild\"} 1\n"));
	free(text);
	text = write_text(&v, NULL);
	check_exposition(text, &e);
	assert_null(strstr(text, "flamed_build_info"));
	free(text);

	/* Not-a-number and infinite gauges are spelled the format's way. */
	v.snapshot_duration_s = 0.0 / 0.0;
	v.last_snapshot_time = 1.0 / 0.0;
	text = write_text(&v, NULL);
	check_exposition(text, &e);
	assert_non_null(strstr(text, "flamed_snapshot_duration_seconds NaN\n"));
	assert_non_null(strstr(text, "flamed_last_snapshot_timestamp_seconds +Inf\n"));
	free(text);
}

/* --- the server ------------------------------------------------------------------- */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

struct response {
	int status;
	char headers[2048];
	char *body; /* NUL-terminated */
	size_t body_len;
};

/* Sends req as is to 127.0.0.1:port (or ::1 when v6), reads until the server closes. */
static int http(uint16_t port, bool v6, const char *req, struct response *r)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
	struct timeval tv = {.tv_sec = 10};
	char *buf = NULL, *end;
	size_t len = 0, cap = 0;
	int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin6.sin6_addr = in6addr_loopback;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (v6 ? connect(fd, (struct sockaddr *)&sin6, sizeof(sin6))
	       : connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		int e = -errno;

		close(fd);
		return e;
	}
	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail_msg("recv: %s", strerror(errno));
		if (!n)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	memset(r, 0, sizeof(*r));
	if (sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1)
		fail_msg("not an HTTP response: %s", buf);
	end = strstr(buf, "\r\n\r\n");
	assert_non_null(end);
	snprintf(r->headers, sizeof(r->headers), "%.*s", (int)(end - buf), buf);
	r->body_len = len - (size_t)(end + 4 - buf);
	r->body = strdup(end + 4);
	assert_non_null(r->body);
	free(buf);
	return 0;
}

static void get(uint16_t port, const char *path, struct response *r)
{
	char req[256];

	snprintf(req, sizeof(req),
		 "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", path);
	assert_int_equal(http(port, false, req, r), 0);
}

static void test_server(void **state)
{
	struct fl_metrics *m = NULL;
	struct fl_metrics_values v;
	struct exposition e;
	struct response r;
	sigset_t before, after;
	int fds = count_fds();
	uint16_t port;

	(void)state;
	sigemptyset(&before);
	sigaddset(&before, SIGUSR2);
	sigprocmask(SIG_BLOCK, &before, NULL);
	sigprocmask(SIG_BLOCK, NULL, &before);
	assert_int_equal(
		fl_metrics__new(&(struct fl_metrics_opts){.sz = sizeof(struct fl_metrics_opts),
							  .listen = "127.0.0.1:0",
							  .version = "9.9"},
				&m),
		0);
	/* The caller's signal mask is as it was (the server's thread has them all blocked). */
	sigprocmask(SIG_BLOCK, NULL, &after);
	assert_int_equal(sigismember(&after, SIGTERM), sigismember(&before, SIGTERM));
	assert_int_equal(sigismember(&after, SIGUSR2), 1);
	port = fl_metrics__port(m);
	assert_true(port > 0);

	/* Zeros before the first update. */
	get(port, "/metrics", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.headers, "text/plain; version=0.0.4"));
	check_exposition(r.body, &e);
	assert_true(value_of(r.body, "flamed_snapshots_total{result=\"written\"}") == 0);
	free(r.body);

	fill(&v);
	fl_metrics__update(m, &v);
	v.snapshots_written = 999; /* copied: a later change of v is not seen */
	get(port, "/metrics", &r);
	assert_int_equal(r.status, 200);
	check_exposition(r.body, &e);
	assert_true(value_of(r.body, "flamed_snapshots_total{result=\"written\"}") == 5);
	assert_true(value_of(r.body, "flamed_samples_total{outcome=\"profile\"}") ==
		    123456789012.0);
	assert_true(value_of(r.body, "flamed_build_info{version=\"9.9\"}") == 1);
	free(r.body);

	/* A query string is not part of the path. */
	get(port, "/metrics?name[]=x", &r);
	assert_int_equal(r.status, 200);
	free(r.body);

	get(port, "/", &r);
	assert_int_equal(r.status, 404);
	free(r.body);
	get(port, "/metrics/", &r);
	assert_int_equal(r.status, 404);
	free(r.body);
	get(port, "/../metrics", &r);
	assert_int_equal(r.status, 404);
	free(r.body);

	assert_int_equal(http(port, false,
			      "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
			      "Connection: close\r\n\r\nhello",
			      &r),
			 0);
	assert_int_equal(r.status, 405);
	assert_non_null(strstr(r.headers, "Allow: GET, HEAD"));
	free(r.body);
	assert_int_equal(http(port, false,
			      "DELETE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
			      &r),
			 0);
	assert_int_equal(r.status, 405);
	free(r.body);
	assert_int_equal(http(port, false,
			      "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
			      "Connection: close\r\n\r\nhello",
			      &r),
			 0);
	assert_int_equal(r.status, 413);
	free(r.body);
	assert_int_equal(http(port, false,
			      "GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
			      "Connection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
			      &r),
			 0);
	assert_int_equal(r.status, 413);
	free(r.body);
	/* HEAD: the headers, no body. */
	assert_int_equal(http(port, false,
			      "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &r),
			 0);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 0);
	free(r.body);
	/* HTTP/1.0 without Host works too (curl -0, old scrapers). */
	assert_int_equal(http(port, false, "GET /metrics HTTP/1.0\r\n\r\n", &r), 0);
	assert_int_equal(r.status, 200);
	free(r.body);

	fl_metrics__free(m);
	fl_metrics__free(NULL);
	/* The listening socket and every connection are closed. */
	assert_int_equal(count_fds(), fds);
	assert_int_not_equal(http(port, false, "GET /metrics HTTP/1.0\r\n\r\n", &r), 0);
}

static int new_on(const char *listen, struct fl_metrics **m)
{
	return fl_metrics__new(
		&(struct fl_metrics_opts){.sz = sizeof(struct fl_metrics_opts), .listen = listen},
		m);
}

static void test_listen_errors(void **state)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	struct fl_metrics *m = NULL;
	char addr[64];
	int fd, fds = count_fds();

	(void)state;
	assert_int_equal(new_on("9464", &m), -EINVAL);
	assert_int_equal(new_on("127.0.0.1", &m), -EINVAL);
	assert_int_equal(new_on("127.0.0.1:65536", &m), -EINVAL);
	assert_int_equal(new_on("::1:9464", &m), -EINVAL);
	assert_int_equal(new_on("[::1:9464", &m), -EINVAL);
	assert_int_equal(new_on("300.1.1.1:9464", &m), -EINVAL);
	assert_int_equal(new_on("", &m), -EINVAL);
	assert_int_equal(new_on(NULL, &m), -EINVAL);
	assert_int_equal(fl_metrics__new(NULL, &m), -EINVAL);
	/* An address that is not this machine's: TEST-NET-1. */
	assert_int_equal(new_on("192.0.2.1:9464", &m), -EADDRNOTAVAIL);
	/* A name that does not resolve (.invalid never does). */
	assert_int_equal(new_on("no-such-host.invalid:9464", &m), -EADDRNOTAVAIL);
	assert_null(m);

	/* A port someone listens on already. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sin.sin_port));
	assert_int_equal(new_on(addr, &m), -EADDRINUSE);
	assert_null(m);
	close(fd);
	assert_int_equal(count_fds(), fds);
}

static void test_names_and_ipv6(void **state)
{
	struct fl_metrics *m = NULL;
	struct response r;
	int fd;

	(void)state;
	assert_int_equal(new_on("localhost:0", &m), 0);
	fl_metrics__free(m);
	m = NULL;

	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		skip(); /* no IPv6 here */
		return;
	}
	close(fd);
	if (new_on("[::1]:0", &m) == -EADDRNOTAVAIL) {
		skip(); /* IPv6 without ::1 (disabled on lo) */
		return;
	}
	assert_non_null(m);
	assert_int_equal(http(fl_metrics__port(m), true, "GET /metrics HTTP/1.0\r\n\r\n", &r), 0);
	assert_int_equal(r.status, 200);
	free(r.body);
	fl_metrics__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exposition),
		cmocka_unit_test(test_server),
		cmocka_unit_test(test_listen_errors),
		cmocka_unit_test(test_names_and_ipv6),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
