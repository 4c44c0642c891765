// SPDX-License-Identifier: GPL-2.0-or-later
/* The Prometheus endpoint: the exposition of the daemon's values, and the HTTP server for it. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/daemon/hostport.h"
#include "flamed/daemon/metrics.h"
#include "common/dynlib.h"

#define LISTEN_BACKLOG 16
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* libmicrohttpd, opened by the first endpoint (dynlib.h). */
static struct fl_dynlib libmhd =
	FL_DYNLIB_INIT("libmicrohttpd.so.12", "libmicrohttpd12 (Debian) or libmicrohttpd (Fedora)");

#define MHD_FUNCS(X)                                                                               \
	X(MHD_start_daemon)                                                                        \
	X(MHD_stop_daemon)                                                                         \
	X(MHD_lookup_connection_value)                                                             \
	X(MHD_create_response_from_buffer_with_free_callback)                                      \
	X(MHD_add_response_header)                                                                 \
	X(MHD_queue_response)                                                                      \
	X(MHD_destroy_response)
MHD_FUNCS(FL_DYNLIB_SYM)
static const struct fl_dynlib_sym mhd_syms[] = {MHD_FUNCS(FL_DYNLIB_ENTRY)};

const char *fl_metrics__lib_error(void)
{
	return fl_dynlib__error(&libmhd);
}

struct fl_metrics {
	struct MHD_Daemon *mhd;
	uint16_t port;
	char *version;
	pthread_mutex_t lock; /* guards values: written by the daemon, read by scrapes */
	struct fl_metrics_values values;
};

/* --- the exposition ------------------------------------------------------------------ */

static const char *const lost_names[FL_METRICS_LOST__MAX] = {
	[FL_METRICS_LOST_RING_FULL] = "ring_full",
	[FL_METRICS_LOST_COPY_FULL] = "stack_copy_full",
	[FL_METRICS_LOST_PID_NAMESPACE] = "pid_namespace",
};

static const char *const unwind_names[FL_METRICS_UNWIND__MAX] = {
	[FL_METRICS_UNWIND_COMPLETE] = "complete",
	[FL_METRICS_UNWIND_TRUNCATED] = "truncated",
	[FL_METRICS_UNWIND_STOPPED] = "stopped",
	[FL_METRICS_UNWIND_FAILED] = "failed",
};

static const char *const cap_names[FL_METRICS_CAP__MAX] = {
	[FL_METRICS_CAP_MAX_STACKS] = "max_stacks",
	[FL_METRICS_CAP_MAX_PROCESSES] = "max_processes",
	[FL_METRICS_CAP_MAX_SYMBOL_CACHE] = "max_symbol_cache",
	[FL_METRICS_CAP_MAX_UNWIND_TABLES] = "max_unwind_tables",
	[FL_METRICS_CAP_PERF_MAPS] = "perf_maps",
};

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value as the text format wants it: '\', '"' and newline escaped. */
static void put_label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void put_name(FILE *f, const char *name, const char *label, const char *value)
{
	fputs(name, f);
	if (label) {
		fprintf(f, "{%s=\"", label);
		put_label_value(f, value);
		fputs("\"}", f);
	}
}

static void sample_u64(FILE *f, const char *name, const char *label, const char *value, uint64_t v)
{
	put_name(f, name, label, value);
	fprintf(f, " %" PRIu64 "\n", v);
}

static void sample_double(FILE *f, const char *name, const char *label, const char *value, double v)
{
	put_name(f, name, label, value);
	if (isnan(v))
		fputs(" NaN\n", f);
	else if (isinf(v))
		fputs(v > 0 ? " +Inf\n" : " -Inf\n", f);
	else
		fprintf(f, " %.15g\n", v);
}

/* One counter family whose samples are an array of counts named by names[]. */
static void counter_array(FILE *f, const char *name, const char *help, const char *label,
			  const char *const *names, const uint64_t *counts, size_t n)
{
	size_t i;

	family(f, name, "counter", help);
	for (i = 0; i < n; i++)
		sample_u64(f, name, label, names[i], counts[i]);
}

/* --- process_*: this process, read when scraped --------------------------------------- */

/* The first line of a /proc file into buf; false when it cannot be read. */
static bool read_proc_line(const char *path, char *buf, int size)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	return f && fgets(buf, size, f);
}

/* Start time of this process in Unix seconds: /proc/self/stat's field 22 after /proc/stat's btime. */
static bool start_time(double *ret)
{
	_cleanup_fclose_ FILE *f = NULL;
	char buf[1024], line[256];
	unsigned long long start = 0, btime = 0;
	const char *p;
	long hz = sysconf(_SC_CLK_TCK);
	int field;

	if (hz <= 0 || !read_proc_line("/proc/self/stat", buf, sizeof(buf)))
		return false;
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	if (!p)
		return false;
	/* After ')' come fields 3, 4, ...: skip to the 22nd, starttime. */
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return false;
	f = fopen("/proc/stat", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %llu", &btime) == 1)
			break;
	if (!btime)
		return false;
	*ret = (double)btime + (double)start / (double)hz;
	return true;
}

/* Open fds, not counting the one that lists them. -1 when /proc is not there. */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			n++;
	closedir(d);
	return n;
}

static void process_metrics(FILE *f)
{
	long page = sysconf(_SC_PAGESIZE), fds = open_fds();
	unsigned long long vsize, rss;
	struct rusage ru;
	struct rlimit rl;
	char buf[256];
	double t;

	if (!getrusage(RUSAGE_SELF, &ru)) {
		t = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
		family(f, "process_cpu_seconds_total", "counter",
		       "Total user and system CPU time spent in seconds.");
		sample_double(f, "process_cpu_seconds_total", NULL, NULL, t);
	}
	if (page > 0 && read_proc_line("/proc/self/statm", buf, sizeof(buf)) &&
	    sscanf(buf, "%llu %llu", &vsize, &rss) == 2) {
		family(f, "process_resident_memory_bytes", "gauge",
		       "Resident memory size in bytes.");
		sample_u64(f, "process_resident_memory_bytes", NULL, NULL, rss * (uint64_t)page);
		family(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
		sample_u64(f, "process_virtual_memory_bytes", NULL, NULL, vsize * (uint64_t)page);
	}
	if (fds >= 0) {
		family(f, "process_open_fds", "gauge", "Number of open file descriptors.");
		sample_u64(f, "process_open_fds", NULL, NULL, (uint64_t)fds);
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		family(f, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
		if (rl.rlim_cur == RLIM_INFINITY)
			sample_double(f, "process_max_fds", NULL, NULL, INFINITY);
		else
			sample_u64(f, "process_max_fds", NULL, NULL, (uint64_t)rl.rlim_cur);
	}
	if (start_time(&t)) {
		family(f, "process_start_time_seconds", "gauge",
		       "Start time of the process since unix epoch in seconds.");
		sample_double(f, "process_start_time_seconds", NULL, NULL, t);
	}
}

int fl_metrics__write(const struct fl_metrics_values *v, const char *version, FILE *f)
{
	uint64_t lost = 0;
	size_t i;

	for (i = 0; i < FL_METRICS_LOST__MAX; i++)
		lost += v->lost[i];
	if (version) {
		family(f, "flamed_build_info", "gauge",
		       "The flamed version, as a label; always 1.");
		put_name(f, "flamed_build_info", "version", version);
		fputs(" 1\n", f);
	}
	family(f, "flamed_samples_total", "counter",
	       "Samples taken, by what became of them: in a profile, the idle task's (dropped), "
	       "of a process not profiled (dropped), lost.");
	sample_u64(f, "flamed_samples_total", "outcome", "profile", v->samples_profile);
	sample_u64(f, "flamed_samples_total", "outcome", "idle", v->samples_idle);
	sample_u64(f, "flamed_samples_total", "outcome", "other_process", v->samples_other_process);
	sample_u64(f, "flamed_samples_total", "outcome", "lost", lost);
	counter_array(f, "flamed_samples_lost_total",
		      "Samples lost, by cause: a full ring buffer, a full ring of stack copies, a "
		      "process outside flamed's pid namespace.",
		      "cause", lost_names, v->lost, FL_METRICS_LOST__MAX);

	family(f, "flamed_snapshots_total", "counter",
	       "Snapshots written to the output directory, and attempts that failed.");
	sample_u64(f, "flamed_snapshots_total", "result", "written", v->snapshots_written);
	sample_u64(f, "flamed_snapshots_total", "result", "failed", v->snapshots_failed);
	family(f, "flamed_snapshot_duration_seconds", "gauge",
	       "Time the last snapshot took: collecting, symbolizing, writing.");
	sample_double(f, "flamed_snapshot_duration_seconds", NULL, NULL, v->snapshot_duration_s);
	family(f, "flamed_last_snapshot_timestamp_seconds", "gauge",
	       "When the last snapshot was written, in Unix time; 0 before the first.");
	sample_double(f, "flamed_last_snapshot_timestamp_seconds", NULL, NULL,
		      v->last_snapshot_time);

	family(f, "flamed_push_total", "counter",
	       "Profiles pushed to the backend (push_url), and pushes that failed.");
	sample_u64(f, "flamed_push_total", "result", "ok", v->push_ok);
	sample_u64(f, "flamed_push_total", "result", "failed", v->push_failed);
	family(f, "flamed_push_spool_bytes", "gauge",
	       "Bytes of profiles waiting to be pushed again (at most push_spool_bytes).");
	sample_u64(f, "flamed_push_spool_bytes", NULL, NULL, v->push_spool_bytes);
	family(f, "flamed_push_spool_dropped_total", "counter",
	       "Profiles dropped from a full spool without being pushed.");
	sample_u64(f, "flamed_push_spool_dropped_total", NULL, NULL, v->push_spool_dropped);

	counter_array(f, "flamed_unwind_stacks_total",
		      "User stacks walked by call frame information, by how the walk ended.",
		      "outcome", unwind_names, v->unwind, FL_METRICS_UNWIND__MAX);
	family(f, "flamed_throttled_total", "counter",
	       "Times the kernel throttled sampling (kernel.perf_event_max_sample_rate).");
	sample_u64(f, "flamed_throttled_total", NULL, NULL, v->throttled);
	counter_array(f, "flamed_caps_hit_total",
		      "Times a resource cap of flamed.conf turned a stack, process or file away.",
		      "cap", cap_names, v->caps_hit, FL_METRICS_CAP__MAX);

	process_metrics(f);
	return ferror(f) ? -EIO : 0;
}

/* --- the HTTP server --------------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, const char *text)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	/* A static string: no free callback. */
	r = sym_MHD_create_response_from_buffer_with_free_callback(strlen(text), (void *)text,
								   NULL);
	if (!r)
		return MHD_NO;
	sym_MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		sym_MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = sym_MHD_queue_response(conn, status, r);
	sym_MHD_destroy_response(r);
	return ret;
}

/* A request that announces a body: a GET has none to give, and none is read. */
static bool has_body(struct MHD_Connection *conn)
{
	const char *len = sym_MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							  MHD_HTTP_HEADER_CONTENT_LENGTH);

	return (len && strcmp(len, "0")) ||
	       sym_MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					       MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

static enum MHD_Result serve_metrics(struct fl_metrics *m, struct MHD_Connection *conn)
{
	struct fl_metrics_values v;
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	pthread_mutex_lock(&m->lock);
	v = m->values;
	pthread_mutex_unlock(&m->lock);
	f = open_memstream(&buf, &len);
	if (!f)
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	err = fl_metrics__write(&v, m->version, f);
	if (fclose(f) || err) {
		free(buf);
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	r = sym_MHD_create_response_from_buffer_with_free_callback(len, buf, free);
	if (!r) {
		free(buf);
		return MHD_NO;
	}
	sym_MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
	sym_MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	ret = sym_MHD_queue_response(conn, MHD_HTTP_OK, r);
	sym_MHD_destroy_response(r);
	return ret;
}

/*
 * Called when the headers are in: the answer is queued at once, whatever
 * the request, so that no body is ever read (a body of a request that gets
 * an answer first is discarded with the connection).
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req)
{
	(void)version;
	(void)upload_data;
	(void)req;
	if (*upload_data_size)
		return MHD_NO; /* answered already: the body is not wanted */
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
			     "only GET /metrics is served here\n");
	if (has_body(conn))
		return reply(conn, 413 /* Content Too Large */, "a request body is not accepted\n");
	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
	return serve_metrics(cls, conn);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];

	(void)cls;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	fl_pr_debug("metrics: %s\n", buf);
}

static int gai_errno(int gai)
{
	if (gai == EAI_SYSTEM)
		return errno ? -errno : -EIO;
	if (gai == EAI_MEMORY)
		return -ENOMEM;
	return -EADDRNOTAVAIL;
}

/* A listening TCP socket on one of the addresses of hp; -errno of the last that failed. */
static int listen_on(const struct fl_hostport *hp)
{
	struct addrinfo hints = {
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV | (hp->family != AF_UNSPEC ? AI_NUMERICHOST : 0),
		.ai_family = hp->family,
	};
	struct addrinfo *res, *ai;
	char port[8];
	int gai, err = -EADDRNOTAVAIL;

	snprintf(port, sizeof(port), "%u", (unsigned int)hp->port);
	gai = getaddrinfo(hp->host, port, &hints, &res);
	if (gai)
		return gai_errno(gai);
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		int one = 1;

		if (fd < 0) {
			err = -errno;
			continue;
		}
		/* A restart must not wait for the old connections' TIME_WAIT. */
		if (!setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
		    !bind(fd, ai->ai_addr, ai->ai_addrlen) && !listen(fd, LISTEN_BACKLOG)) {
			freeaddrinfo(res);
			return fd;
		}
		err = -errno;
		close(fd);
	}
	freeaddrinfo(res);
	return err;
}

static uint16_t bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/*
 * Starts libmicrohttpd on the listening fd. Its thread is created with every
 * signal blocked: the daemon takes them with a signalfd, which only works
 * when no thread lets them through.
 */
static struct MHD_Daemon *start_server(struct fl_metrics *m, int fd)
{
	struct MHD_Daemon *mhd;
	sigset_t all, old;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	mhd = sym_MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, m, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)FL_METRICS_MAX_CONNECTIONS,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)FL_METRICS_MAX_PER_IP,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)FL_METRICS_TIMEOUT_S,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)FL_METRICS_MEMORY,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return mhd;
}

/* Closes fd unless it is no longer the socket of st (the server closed it on its way out). */
static void close_if_same(int fd, const struct stat *st)
{
	struct stat now;

	if (!fstat(fd, &now) && now.st_dev == st->st_dev && now.st_ino == st->st_ino)
		close(fd);
}

int fl_metrics__new(const struct fl_metrics_opts *o, struct fl_metrics **ret)
{
	struct fl_hostport hp;
	struct fl_metrics *m;
	struct stat st;
	int fd, err;

	if (!o || o->sz < offsetof(struct fl_metrics_opts, listen) + sizeof(o->listen) ||
	    !o->listen || fl_hostport__parse(o->listen, &hp, NULL))
		return -EINVAL;
	err = fl_dynlib__load(&libmhd, mhd_syms, ARRAY_SIZE(mhd_syms));
	if (err)
		return err;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	if (o->sz >= offsetof(struct fl_metrics_opts, version) + sizeof(o->version) && o->version) {
		m->version = strdup(o->version);
		if (!m->version) {
			fl_metrics__free(m);
			return -ENOMEM;
		}
	}
	fd = listen_on(&hp);
	if (fd < 0) {
		fl_metrics__free(m);
		return fd;
	}
	m->port = bound_port(fd);
	fstat(fd, &st);
	errno = 0;
	m->mhd = start_server(m, fd);
	if (!m->mhd) {
		err = errno ? -errno : -EIO;
		close_if_same(fd, &st);
		fl_metrics__free(m);
		return err;
	}
	*ret = m;
	return 0;
}

void fl_metrics__free(struct fl_metrics *m)
{
	if (!m)
		return;
	if (m->mhd)
		sym_MHD_stop_daemon(m->mhd); /* closes the listening socket */
	pthread_mutex_destroy(&m->lock);
	free(m->version);
	free(m);
}

uint16_t fl_metrics__port(const struct fl_metrics *m)
{
	return m->port;
}

void fl_metrics__update(struct fl_metrics *m, const struct fl_metrics_values *v)
{
	pthread_mutex_lock(&m->lock);
	m->values = *v;
	pthread_mutex_unlock(&m->lock);
}
