// SPDX-License-Identifier: GPL-2.0-or-later
/* The push exporter: a spool directory of pprof snapshots and a thread that posts them to Pyroscope's ingest API. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The calls go through pointers (dynlib.h): curl's type-checking macros would hide them. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/daemon/push.h"
#include "common/dynlib.h"
#include "common/seterr.h"

#define SPOOL_PREFIX "push-"
#define SPOOL_SUFFIX ".pprof"
#define TMP_PREFIX ".tmp-push-"
#define MAX_AUTH 4096u
#define MAX_BODY_NOTE 160u /* bytes of an error answer's body kept for last_error */

/* libcurl, opened by the first pusher (dynlib.h). */
static struct fl_dynlib libcurl =
	FL_DYNLIB_INIT("libcurl.so.4", "libcurl4 (Debian) or libcurl (Fedora)");

#define CURL_FUNCS(X)                                                                              \
	X(curl_global_init)                                                                        \
	X(curl_easy_init)                                                                          \
	X(curl_easy_setopt)                                                                        \
	X(curl_easy_perform)                                                                       \
	X(curl_easy_getinfo)                                                                       \
	X(curl_easy_cleanup)                                                                       \
	X(curl_easy_strerror)                                                                      \
	X(curl_slist_append)                                                                       \
	X(curl_slist_free_all)
CURL_FUNCS(FL_DYNLIB_SYM)
static const struct fl_dynlib_sym curl_syms[] = {CURL_FUNCS(FL_DYNLIB_ENTRY)};

/* ---- a growable string ---- */

struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		char *t;

		while (cap < b->len + n + 1)
			cap *= 2;
		t = realloc(b->s, cap);
		if (!t) {
			b->oom = true;
			return;
		}
		b->s = t;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		b->oom = true; /* only short numbers go through here */
		return;
	}
	sb_add(b, tmp, (size_t)n);
}

/* RFC 3986 unreserved characters stay, every other byte becomes %XX. */
static void sb_pct(struct sbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[3];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			sb_add(b, (const char *)&s[i], 1);
			continue;
		}
		e[0] = '%';
		e[1] = hex[c >> 4];
		e[2] = hex[c & 15];
		sb_add(b, e, 3);
	}
}


/* ---- options ---- */

static bool is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool app_char_ok(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-' || c == '/';
}

static bool key_ok(const char *k, size_t n)
{
	size_t i;

	if (!n || n > FL_PUSH_MAX_FIELD || (k[0] >= '0' && k[0] <= '9'))
		return false;
	for (i = 0; i < n; i++) {
		char c = k[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return false;
	}
	return true;
}

/* A trimmed label: k[0..kn) = v[0..vn). */
struct label {
	const char *k, *v;
	size_t kn, vn;
};

static void trim(const char **s, size_t *n)
{
	while (*n && is_blank(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && is_blank((*s)[*n - 1]))
		(*n)--;
}

/*
 * Splits labels into at most FL_PUSH_MAX_LABELS trimmed pairs, checked.
 * An empty or blank string is no label.
 */
static int parse_labels(const char *labels, struct label *out, size_t *nout, char *err,
			size_t errlen)
{
	const char *s = labels;
	size_t n = 0, i, j;

	*nout = 0;
	if (!labels)
		return 0;
	{
		const char *t = labels;
		size_t tn = strlen(labels);

		trim(&t, &tn);
		if (!tn)
			return 0;
	}
	for (;;) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *eq = memchr(s, '=', len);
		struct label l;

		if (n == FL_PUSH_MAX_LABELS) {
			fl_seterr(err, errlen, "more than %u labels", FL_PUSH_MAX_LABELS);
			return -EINVAL;
		}
		if (!eq) {
			fl_seterr(err, errlen, "label %u: \"%.*s\" is not key=value", (unsigned)n + 1,
			       (int)(len > 64 ? 64 : len), s);
			return -EINVAL;
		}
		l.k = s;
		l.kn = (size_t)(eq - s);
		l.v = eq + 1;
		l.vn = len - l.kn - 1;
		trim(&l.k, &l.kn);
		trim(&l.v, &l.vn);
		if (!key_ok(l.k, l.kn)) {
			fl_seterr(err, errlen,
			       "label %u: \"%.*s\" is not a label name ([A-Za-z_][A-Za-z0-9_]*, at "
			       "most %u bytes)",
			       (unsigned)n + 1, (int)(l.kn > 64 ? 64 : l.kn), l.k, FL_PUSH_MAX_FIELD);
			return -EINVAL;
		}
		if (l.kn >= 2 && l.k[0] == '_' && l.k[1] == '_') {
			fl_seterr(err, errlen, "label \"%.*s\": names starting with __ are reserved",
			       (int)l.kn, l.k);
			return -EINVAL;
		}
		if (!l.vn || l.vn > FL_PUSH_MAX_FIELD) {
			fl_seterr(err, errlen, "label \"%.*s\": the value must have 1 to %u bytes",
			       (int)l.kn, l.k, FL_PUSH_MAX_FIELD);
			return -EINVAL;
		}
		for (i = 0; i < l.vn; i++) {
			if (l.v[i] == '}' || is_ctl((unsigned char)l.v[i])) {
				fl_seterr(err, errlen,
				       "label \"%.*s\": a value cannot hold ',', '}' or a control "
				       "character",
				       (int)l.kn, l.k);
				return -EINVAL;
			}
		}
		for (j = 0; j < n; j++) {
			if (out[j].kn == l.kn && !memcmp(out[j].k, l.k, l.kn)) {
				fl_seterr(err, errlen, "label \"%.*s\" given twice", (int)l.kn, l.k);
				return -EINVAL;
			}
		}
		out[n++] = l;
		if (!end)
			break;
		s = end + 1;
	}
	*nout = n;
	return 0;
}

/* The base URL without trailing '/': its length, or -EINVAL. */
static int check_url(const char *url, size_t *len, char *err, size_t errlen)
{
	const char *host;
	size_t n, i, hostlen;

	if (!url || !*url) {
		fl_seterr(err, errlen, "no URL");
		return -EINVAL;
	}
	n = strlen(url);
	if (n >= FL_PUSH_MAX_URL) {
		fl_seterr(err, errlen, "the URL is longer than %u bytes", FL_PUSH_MAX_URL - 1);
		return -EINVAL;
	}
	if (!strncasecmp(url, "http://", 7))
		host = url + 7;
	else if (!strncasecmp(url, "https://", 8))
		host = url + 8;
	else {
		fl_seterr(err, errlen, "the URL must start with http:// or https://");
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)url[i];

		if (is_ctl(c) || c == ' ' || c == '?' || c == '#') {
			fl_seterr(err, errlen,
			       "the URL cannot hold a query, a fragment, a blank or a control "
			       "character");
			return -EINVAL;
		}
	}
	hostlen = strcspn(host, "/");
	if (!hostlen) {
		fl_seterr(err, errlen, "the URL has no host");
		return -EINVAL;
	}
	if (memchr(host, '@', hostlen)) {
		fl_seterr(err, errlen, "the URL cannot hold credentials: give them as the auth");
		return -EINVAL;
	}
	while (n > (size_t)(host - url) + hostlen && url[n - 1] == '/')
		n--;
	*len = n;
	return 0;
}

static const char *app_of(const struct fl_push_opts *o)
{
	return o->app_name ? o->app_name : "flamed";
}

static int check_app(const char *app, char *err, size_t errlen)
{
	size_t i, n = strlen(app);

	if (!n || n > FL_PUSH_MAX_FIELD) {
		fl_seterr(err, errlen, "the application name must have 1 to %u bytes",
		       FL_PUSH_MAX_FIELD);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (!app_char_ok(app[i])) {
			fl_seterr(err, errlen,
			       "the application name \"%.64s\" may hold only A-Z a-z 0-9 . _ - /",
			       app);
			return -EINVAL;
		}
	}
	return 0;
}

int fl_push__check_opts(const struct fl_push_opts *o, char *err, size_t errlen)
{
	struct label labels[FL_PUSH_MAX_LABELS];
	size_t n, i;
	int e;

	if (!o || o->sz < sizeof(*o)) {
		fl_seterr(err, errlen, "bad options structure");
		return -EINVAL;
	}
	e = check_url(o->url, &n, err, errlen);
	if (!e)
		e = check_app(app_of(o), err, errlen);
	if (!e)
		e = parse_labels(o->labels, labels, &n, err, errlen);
	if (e)
		return e;
	if (o->auth) {
		n = strlen(o->auth);
		if (!n || n > MAX_AUTH) {
			fl_seterr(err, errlen, "the credentials must have 1 to %u bytes", MAX_AUTH);
			return -EINVAL;
		}
		for (i = 0; i < n; i++) {
			if (is_ctl((unsigned char)o->auth[i])) {
				fl_seterr(err, errlen, "the credentials hold a control character");
				return -EINVAL;
			}
		}
	}
	if (!(o->timeout_s >= 0 && o->timeout_s <= 86400) ||
	    !(o->backoff_min_s >= 0 && o->backoff_min_s <= 86400) ||
	    !(o->backoff_max_s >= 0 && o->backoff_max_s <= 86400)) {
		fl_seterr(err, errlen, "timeouts and delays must be between 0 and 1 day");
		return -EINVAL;
	}
	return 0;
}

/* URL/ingest?name=APP{k=v,...}: the part of every request that does not change. */
static int base_url(const struct fl_push_opts *o, char **ret)
{
	struct label labels[FL_PUSH_MAX_LABELS];
	struct sbuf name = {0}, b = {0};
	size_t nlabels, ulen, i;
	int e;

	e = fl_push__check_opts(o, NULL, 0);
	if (e)
		return e;
	check_url(o->url, &ulen, NULL, 0);
	parse_labels(o->labels, labels, &nlabels, NULL, 0);
	sb_puts(&name, app_of(o));
	if (nlabels) {
		sb_puts(&name, "{");
		for (i = 0; i < nlabels; i++) {
			if (i)
				sb_puts(&name, ",");
			sb_add(&name, labels[i].k, labels[i].kn);
			sb_puts(&name, "=");
			sb_add(&name, labels[i].v, labels[i].vn);
		}
		sb_puts(&name, "}");
	}
	sb_add(&b, o->url, ulen);
	sb_puts(&b, "/ingest?name=");
	if (!name.oom)
		sb_pct(&b, name.s, name.len);
	free(name.s);
	if (name.oom || b.oom) {
		free(b.s);
		return -ENOMEM;
	}
	*ret = b.s;
	return 0;
}

static void add_query(struct sbuf *b, int64_t from_s, int64_t until_s, unsigned rate)
{
	sb_printf(b, "&from=%" PRId64 "&until=%" PRId64, from_s, until_s);
	sb_printf(b, "&format=pprof&sampleRate=%u", rate);
	sb_puts(b, "&spyName=flamed&units=samples&aggregationType=sum");
}

int fl_push__ingest_url(const struct fl_push_opts *o, int64_t from_s, int64_t until_s,
			unsigned sample_rate, char **ret)
{
	struct sbuf b = {0};
	int e;

	e = base_url(o, &b.s);
	if (e)
		return e;
	b.len = strlen(b.s);
	b.cap = b.len + 1;
	add_query(&b, from_s, until_s, sample_rate);
	if (b.oom) {
		free(b.s);
		return -ENOMEM;
	}
	*ret = b.s;
	return 0;
}

/* ---- spool names ---- */

int fl_push__spool_name(const struct fl_push_spool_name *n, char *buf, size_t size)
{
	int len;

	if (n->from_s < 0 || n->until_s < 0)
		return -EINVAL;
	len = snprintf(buf, size, SPOOL_PREFIX "%" PRIu64 "-%" PRId64 "-%" PRId64 "-%u" SPOOL_SUFFIX,
		       n->seq, n->from_s, n->until_s, n->sample_rate);
	if (len < 0 || (size_t)len >= size)
		return -ENOSPC;
	return len;
}

/* A decimal number at *s, no sign, no leading zero, at most max; *s moves past it. */
static bool parse_dec(const char **s, uint64_t max, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;

	if (*p < '0' || *p > '9')
		return false;
	if (*p == '0' && p[1] >= '0' && p[1] <= '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (x > (max - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*s = p;
	*v = x;
	return true;
}

int fl_push__parse_spool_name(const char *name, struct fl_push_spool_name *n)
{
	const char *s = name;
	uint64_t seq, from, until, rate;

	if (strncmp(s, SPOOL_PREFIX, strlen(SPOOL_PREFIX)))
		return -EINVAL;
	s += strlen(SPOOL_PREFIX);
	if (!parse_dec(&s, UINT64_MAX, &seq) || *s++ != '-' || !parse_dec(&s, INT64_MAX, &from) ||
	    *s++ != '-' || !parse_dec(&s, INT64_MAX, &until) || *s++ != '-' ||
	    !parse_dec(&s, UINT32_MAX, &rate) || strcmp(s, SPOOL_SUFFIX))
		return -EINVAL;
	n->seq = seq;
	n->from_s = (int64_t)from;
	n->until_s = (int64_t)until;
	n->sample_rate = (unsigned)rate;
	return 0;
}

/* A leftover temporary: ".tmp-push-SEQ". */
static bool is_tmp_name(const char *name)
{
	const char *s = name;
	uint64_t seq;

	if (strncmp(s, TMP_PREFIX, strlen(TMP_PREFIX)))
		return false;
	s += strlen(TMP_PREFIX);
	return parse_dec(&s, UINT64_MAX, &seq) && !*s;
}

/* ---- the object ---- */

struct spooled {
	struct fl_push_spool_name n;
	uint64_t bytes;
};

struct fl_push {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool started;
	atomic_bool stop; /* read by curl's progress callback without the lock */

	/* Set by fl_push__new(), read-only afterwards. */
	int dfd;
	char *base;	   /* URL/ingest?name=... */
	char *where;	   /* URL/ingest, for messages */
	char *auth;	   /* NULL, a bearer token or user:password */
	bool basic;
	double timeout_s, bmin, bmax;
	bool tls_verify;
	uint64_t max_bytes; /* UINT64_MAX: no cap but max_files */
	size_t max_files;
	CURL *curl; /* the sender thread's */
	struct curl_slist *headers;

	/* Under lock. */
	struct spooled *q; /* oldest (lowest seq) first */
	size_t n, cap;
	uint64_t next_seq;
	uint64_t bytes;	   /* of the files in q */
	uint64_t reserved; /* of the files fl_push__enqueue() is writing */
	bool inflight;
	uint64_t inflight_seq;
	bool inflight_gone; /* deleted for room while being sent */
	uint64_t failed_seq; /* the snapshot whose last attempt failed; 0: none */
	unsigned fails;	     /* in a row, for the backoff */
	double next_try;     /* monotonic seconds; 0: now */
	uint64_t rng;
	struct fl_push_stats st;
};

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void set_error(struct fl_push *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Under lock. */
static void set_error(struct fl_push *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->st.last_error, sizeof(p->st.last_error), fmt, ap);
	va_end(ap);
	p->st.last_error_seq++;
	fl_pr_debug("push: %s\n", p->st.last_error);
}

static void note_high(struct fl_push *p)
{
	if (p->bytes + p->reserved > p->st.spool_bytes_max)
		p->st.spool_bytes_max = p->bytes + p->reserved;
}

static void unlink_spooled(struct fl_push *p, const struct fl_push_spool_name *n)
{
	char name[128];

	if (fl_push__spool_name(n, name, sizeof(name)) > 0 && unlinkat(p->dfd, name, 0) &&
	    errno != ENOENT)
		fl_pr_debug("push: cannot delete %s from the spool: %s\n", name, strerror(errno));
}

/* Under lock: forgets q[i] (its file is already gone or about to be). */
static void forget(struct fl_push *p, size_t i)
{
	p->bytes -= p->q[i].bytes;
	memmove(&p->q[i], &p->q[i + 1], (p->n - i - 1) * sizeof(p->q[0]));
	p->n--;
}

static ssize_t find(const struct fl_push *p, uint64_t seq)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->q[i].n.seq == seq)
			return (ssize_t)i;
	return -1;
}

/*
 * Under lock: deletes the oldest spooled snapshot, the one in flight only
 * when it is the last. Returns false when there is nothing to delete.
 */
static bool drop_oldest(struct fl_push *p)
{
	size_t i = 0;

	if (!p->n)
		return false;
	if (p->inflight && p->q[0].n.seq == p->inflight_seq && p->n > 1)
		i = 1;
	unlink_spooled(p, &p->q[i].n);
	if (p->inflight && p->q[i].n.seq == p->inflight_seq)
		p->inflight_gone = true; /* counted when its request ends */
	else
		p->st.dropped++;
	forget(p, i);
	return true;
}

/* Under lock: room for files more files of len bytes in all. */
static void make_room(struct fl_push *p, size_t files, uint64_t len)
{
	while (p->bytes + p->reserved + len > p->max_bytes || p->n + files > p->max_files)
		if (!drop_oldest(p))
			break;
}

static int cmp_seq(const void *a, const void *b)
{
	const struct spooled *x = a, *y = b;

	return x->n.seq < y->n.seq ? -1 : x->n.seq > y->n.seq;
}

static int push_back(struct fl_push *p, const struct spooled *s)
{
	size_t i;

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct spooled *q = realloc(p->q, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		p->q = q;
		p->cap = cap;
	}
	/* In order of seq: concurrent enqueues may finish out of order. */
	for (i = p->n; i > 0 && p->q[i - 1].n.seq > s->n.seq; i--)
		p->q[i] = p->q[i - 1];
	p->q[i] = *s;
	p->n++;
	p->bytes += s->bytes;
	return 0;
}

/* What the spool holds at start: flamed's regular files, by name; temporaries deleted. */
static int scan_spool(struct fl_push *p)
{
	struct dirent *de;
	DIR *d;
	int fd, e = 0;

	/* Its own open file: a duplicate would share (and move) the caller's position. */
	fd = openat(p->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		e = -errno;
		close(fd);
		return e;
	}
	while ((errno = 0, de = readdir(d))) {
		struct spooled s;
		struct stat st;

		if (is_tmp_name(de->d_name)) {
			if (!fstatat(p->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
			    S_ISREG(st.st_mode))
				unlinkat(p->dfd, de->d_name, 0);
			continue;
		}
		if (fl_push__parse_spool_name(de->d_name, &s.n))
			continue;
		if (fstatat(p->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (st.st_size <= 0) { /* never written so: a disk that lost it */
			unlinkat(p->dfd, de->d_name, 0);
			p->st.dropped++;
			continue;
		}
		s.bytes = (uint64_t)st.st_size;
		e = push_back(p, &s);
		if (e)
			break;
		if (s.n.seq >= p->next_seq)
			p->next_seq = s.n.seq + 1;
	}
	if (!e && errno)
		e = -errno;
	closedir(d);
	if (e)
		return e;
	if (p->n)
		qsort(p->q, p->n, sizeof(p->q[0]), cmp_seq);
	make_room(p, 0, 0);
	note_high(p);
	return 0;
}

/* ---- sending ---- */

enum outcome {
	SENT,	 /* 2xx: delete */
	REFUSED, /* 4xx but 408, 429: delete */
	RETRY,	 /* later, after a delay */
	BROKEN,	 /* the file cannot be read: delete */
	STOPPED, /* fl_push__free(): keep */
};

struct answer {
	char body[MAX_BODY_NOTE];
	size_t len;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct answer *a = arg;
	size_t n = size * nmemb, room = sizeof(a->body) - 1 - a->len;

	memcpy(a->body + a->len, data, n < room ? n : room);
	a->len += n < room ? n : room;
	a->body[a->len] = '\0';
	return n;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct fl_push *p = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return atomic_load(&p->stop) ? 1 : 0;
}

/* The first line of an answer's body, printable ASCII only, for a message. */
static void body_note(char *s)
{
	char *c;

	s[strcspn(s, "\r\n")] = '\0';
	for (c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			*c = '?';
}

/* Reads a spooled file whole: it is flamed's own, a regular file, within the cap. */
static int read_spooled(struct fl_push *p, const struct fl_push_spool_name *n, char **ret,
			size_t *len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	char name[128];
	struct stat st;
	size_t got = 0;

	if (fl_push__spool_name(n, name, sizeof(name)) < 0)
		return -EINVAL;
	fd = openat(p->dfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size <= 0 || (uint64_t)st.st_size > p->max_bytes)
		return -EFBIG;
	buf = malloc((size_t)st.st_size);
	if (!buf)
		return -ENOMEM;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			return -EIO; /* shorter than it was a moment ago */
		got += (size_t)r;
	}
	*len = got;
	*ret = TAKE_PTR(buf);
	return 0;
}

/*
 * One request for the snapshot n. Sets *status (0: no answer), *retry_after
 * (seconds, 0: none) and msg (for last_error) on anything but SENT.
 */
static enum outcome send_one(struct fl_push *p, const struct fl_push_spool_name *n, long *status,
			     long *retry_after, char *msg, size_t msglen)
{
	char cerr[CURL_ERROR_SIZE] = "";
	_cleanup_free_ char *body = NULL;
	struct sbuf url = {0};
	struct answer ans = {.len = 0};
	curl_off_t ra = 0;
	size_t len = 0;
	CURLcode rc;
	int e;

	*status = 0;
	*retry_after = 0;
	e = read_spooled(p, n, &body, &len);
	if (e == -ENOMEM) {
		fl_seterr(msg, msglen, "out of memory reading a spooled snapshot");
		return RETRY;
	}
	if (e) {
		fl_seterr(msg, msglen, "cannot read a spooled snapshot (%" PRIu64 "): %s", n->seq,
		       strerror(-e));
		return BROKEN;
	}
	sb_puts(&url, p->base);
	add_query(&url, n->from_s, n->until_s, n->sample_rate);
	if (url.oom) {
		free(url.s);
		fl_seterr(msg, msglen, "out of memory");
		return RETRY;
	}
	sym_curl_easy_setopt(p->curl, CURLOPT_URL, url.s);
	sym_curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, body);
	sym_curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	sym_curl_easy_setopt(p->curl, CURLOPT_WRITEDATA, &ans);
	sym_curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, cerr);
	rc = sym_curl_easy_perform(p->curl);
	sym_curl_easy_setopt(p->curl, CURLOPT_ERRORBUFFER, NULL);
	free(url.s);
	if (rc == CURLE_ABORTED_BY_CALLBACK && atomic_load(&p->stop))
		return STOPPED;
	if (rc != CURLE_OK) {
		fl_seterr(msg, msglen, "cannot send to %s: %s", p->where,
			  cerr[0] ? cerr : sym_curl_easy_strerror(rc));
		return RETRY;
	}
	sym_curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, status);
	if (*status >= 200 && *status <= 299)
		return SENT;
	if (sym_curl_easy_getinfo(p->curl, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
		*retry_after = ra > 86400 ? 86400 : (long)ra;
	body_note(ans.body);
	fl_seterr(msg, msglen, "HTTP %ld from %s%s%s", *status, p->where, ans.body[0] ? ": " : "",
	       ans.body);
	if (*status >= 400 && *status <= 499 && *status != 408 && *status != 429)
		return REFUSED;
	/* 5xx, 408, 429; and 1xx, 3xx (redirects are not followed): a server to fix, data to keep. */
	return RETRY;
}

static double next_delay(struct fl_push *p, long status, long retry_after)
{
	double d = p->bmin, u;
	unsigned i;

	if (retry_after > 0 && (status == 429 || status == 503))
		return (double)retry_after < p->bmax ? (double)retry_after : p->bmax;
	for (i = 1; i < p->fails && d < p->bmax; i++)
		d *= 2;
	if (d > p->bmax)
		d = p->bmax;
	/* xorshift64: jitter only, so that a fleet's daemons do not retry in step. */
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	u = (double)(p->rng >> 11) / 9007199254740992.0;
	return d * (0.5 + 0.5 * u);
}

static void *sender(void *arg)
{
	struct fl_push *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!atomic_load(&p->stop)) {
		struct fl_push_spool_name n;
		enum outcome o;
		long status, retry_after;
		char msg[FL_PUSH_MAX_ERROR];
		ssize_t i;

		if (!p->n) {
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		if (p->next_try > 0) {
			double now = mono_now();

			if (now < p->next_try) {
				struct timespec ts;
				double t = p->next_try;

				ts.tv_sec = (time_t)t;
				ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
				pthread_cond_timedwait(&p->cond, &p->lock, &ts);
				continue;
			}
			p->next_try = 0;
		}
		n = p->q[0].n;
		p->inflight = true;
		p->inflight_seq = n.seq;
		p->inflight_gone = false;
		if (p->failed_seq == n.seq)
			p->st.retries++;
		pthread_mutex_unlock(&p->lock);

		o = send_one(p, &n, &status, &retry_after, msg, sizeof(msg));

		pthread_mutex_lock(&p->lock);
		p->inflight = false;
		if (status)
			p->st.last_status = status;
		i = find(p, n.seq);
		if (o == SENT || o == REFUSED || o == BROKEN) {
			if (i >= 0) {
				unlink_spooled(p, &n);
				forget(p, (size_t)i);
			}
			p->fails = 0;
			p->failed_seq = 0;
			p->st.consecutive_failures = 0;
		}
		switch (o) {
		case SENT:
			p->st.sent++;
			break;
		case REFUSED:
			p->st.refused++;
			set_error(p, "%s: snapshot %" PRId64 "-%" PRId64 " refused, deleted", msg,
				  n.from_s, n.until_s);
			break;
		case BROKEN:
			p->st.dropped++;
			set_error(p, "%s", msg);
			break;
		case RETRY:
			p->st.failed_attempts++;
			p->st.consecutive_failures++;
			p->fails++;
			if (i < 0) {
				p->st.dropped++; /* deleted for room meanwhile */
			} else {
				p->failed_seq = n.seq;
			}
			p->next_try = mono_now() + next_delay(p, status, retry_after);
			set_error(p, "%s", msg);
			break;
		case STOPPED:
			if (i < 0)
				p->st.dropped++;
			break;
		}
		p->inflight_gone = false;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ---- life cycle ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = fl_dynlib__load(&libcurl, curl_syms, ARRAY_SIZE(curl_syms));
	if (!curl_init_rc && sym_curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		curl_init_rc = -ENOMEM;
}

const char *fl_push__lib_error(void)
{
	return fl_dynlib__error(&libcurl);
}

static int setup_curl(struct fl_push *p)
{
	struct curl_slist *h = NULL, *t;
	long ms = (long)(p->timeout_s * 1000);

	p->curl = sym_curl_easy_init();
	if (!p->curl)
		return -ENOMEM;
	t = sym_curl_slist_append(h, "Content-Type: application/octet-stream");
	if (t)
		h = t;
	/* No "Expect: 100-continue" round trip: the body goes with the request. */
	t = t ? sym_curl_slist_append(h, "Expect:") : NULL;
	if (t)
		h = t;
	if (t && p->auth && !p->basic) {
		struct sbuf b = {0};

		sb_puts(&b, "Authorization: Bearer ");
		sb_puts(&b, p->auth);
		t = b.oom ? NULL : sym_curl_slist_append(h, b.s);
		if (b.s) {
			explicit_bzero(b.s, b.len);
			free(b.s);
		}
		if (t)
			h = t;
	}
	if (!t) {
		sym_curl_slist_free_all(h);
		return -ENOMEM;
	}
	p->headers = h;
	sym_curl_easy_setopt(p->curl, CURLOPT_HTTPHEADER, h);
	sym_curl_easy_setopt(p->curl, CURLOPT_POST, 1L);
	sym_curl_easy_setopt(p->curl, CURLOPT_NOSIGNAL, 1L);
	sym_curl_easy_setopt(p->curl, CURLOPT_TIMEOUT_MS, ms);
	sym_curl_easy_setopt(p->curl, CURLOPT_CONNECTTIMEOUT_MS, ms);
	sym_curl_easy_setopt(p->curl, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	sym_curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	sym_curl_easy_setopt(p->curl, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	sym_curl_easy_setopt(p->curl, CURLOPT_SSL_VERIFYPEER, p->tls_verify ? 1L : 0L);
	sym_curl_easy_setopt(p->curl, CURLOPT_SSL_VERIFYHOST, p->tls_verify ? 2L : 0L);
	sym_curl_easy_setopt(p->curl, CURLOPT_USERAGENT, "flamed");
	sym_curl_easy_setopt(p->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	sym_curl_easy_setopt(p->curl, CURLOPT_WRITEFUNCTION, on_body);
	sym_curl_easy_setopt(p->curl, CURLOPT_NOPROGRESS, 0L);
	sym_curl_easy_setopt(p->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	sym_curl_easy_setopt(p->curl, CURLOPT_XFERINFODATA, p);
	if (p->auth && p->basic) {
		sym_curl_easy_setopt(p->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		sym_curl_easy_setopt(p->curl, CURLOPT_USERPWD, p->auth);
	}
	return 0;
}

void fl_push__free(struct fl_push *p)
{
	if (!p)
		return;
	if (p->started) {
		pthread_mutex_lock(&p->lock);
		atomic_store(&p->stop, true);
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		pthread_join(p->thread, NULL);
	}
	sym_curl_slist_free_all(p->headers);
	if (p->curl)
		sym_curl_easy_cleanup(p->curl);
	if (p->auth) {
		explicit_bzero(p->auth, strlen(p->auth));
		free(p->auth);
	}
	free(p->base);
	free(p->where);
	free(p->q);
	if (p->dfd >= 0)
		close(p->dfd);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int fl_push__new(const struct fl_push_opts *opts, struct fl_push **ret)
{
	struct fl_push *p;
	pthread_condattr_t ca;
	struct stat st;
	size_t ulen;
	int e;

	e = fl_push__check_opts(opts, NULL, 0);
	if (e)
		return e;
	if (opts->spool_dir_fd < 0 || fstat(opts->spool_dir_fd, &st))
		return -EBADF;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* Another user could swap names under us there. */
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) || st.st_uid != geteuid())
		return -EPERM;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc)
		return curl_init_rc;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->dfd = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&p->stop, false);
	p->next_seq = 1;
	p->timeout_s = opts->timeout_s > 0 ? opts->timeout_s : FL_PUSH_DEFAULT_TIMEOUT;
	p->bmin = opts->backoff_min_s > 0 ? opts->backoff_min_s : FL_PUSH_DEFAULT_BACKOFF_MIN;
	p->bmax = opts->backoff_max_s > 0 ? opts->backoff_max_s : FL_PUSH_DEFAULT_BACKOFF_MAX;
	if (p->bmax < p->bmin)
		p->bmax = p->bmin;
	p->tls_verify = opts->tls_verify;
	/* 0: no backlog, only the newest snapshot waits. */
	p->max_bytes = opts->spool_max_bytes ? opts->spool_max_bytes : UINT64_MAX;
	p->max_files = opts->spool_max_bytes ? FL_PUSH_MAX_FILES : 1;
	if (getrandom(&p->rng, sizeof(p->rng), GRND_NONBLOCK) != (ssize_t)sizeof(p->rng))
		p->rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	p->rng |= 1; /* xorshift's state is never 0 */

	e = base_url(opts, &p->base);
	if (e)
		goto out_free;
	check_url(opts->url, &ulen, NULL, 0);
	p->where = malloc(ulen + sizeof("/ingest"));
	if (!p->where) {
		e = -ENOMEM;
		goto out_free;
	}
	memcpy(p->where, opts->url, ulen);
	strcpy(p->where + ulen, "/ingest");
	if (opts->auth) {
		p->auth = strdup(opts->auth);
		if (!p->auth) {
			e = -ENOMEM;
			goto out_free;
		}
		p->basic = strchr(p->auth, ':') != NULL;
	}
	p->dfd = fcntl(opts->spool_dir_fd, F_DUPFD_CLOEXEC, 3);
	if (p->dfd < 0) {
		e = -errno;
		goto out_free;
	}
	e = scan_spool(p);
	if (!e)
		e = setup_curl(p);
	if (e)
		goto out_free;
	e = -pthread_create(&p->thread, NULL, sender, p);
	if (e)
		goto out_free;
	p->started = true;
	*ret = p;
	return 0;

out_free:
	fl_push__free(p);
	return e;
}

/* Writes len bytes to a new file name in the spool: a temporary, fsync'ed, then renamed. */
static int write_spooled(struct fl_push *p, const struct fl_push_spool_name *n, const void *buf,
			 size_t len)
{
	char name[128], tmp[64];
	const char *c = buf;
	size_t done = 0;
	int fd, e = 0;

	if (fl_push__spool_name(n, name, sizeof(name)) < 0)
		return -EINVAL;
	snprintf(tmp, sizeof(tmp), TMP_PREFIX "%" PRIu64, n->seq);
	fd = openat(p->dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t w = write(fd, c + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			e = -errno;
			break;
		}
		done += (size_t)w;
	}
	if (!e && fsync(fd))
		e = -errno;
	if (close(fd) && !e)
		e = -EIO;
	if (!e && renameat(p->dfd, tmp, p->dfd, name))
		e = -errno;
	if (e)
		unlinkat(p->dfd, tmp, 0);
	return e;
}

int fl_push__enqueue(struct fl_push *p, const void *pprof_gz, size_t len, int64_t from_s,
		     int64_t until_s, unsigned sample_rate)
{
	struct spooled s;
	int e;

	if (!p || !pprof_gz || !len || from_s < 0 || until_s < from_s || !sample_rate)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	if (len > p->max_bytes) {
		p->st.dropped++;
		set_error(p, "a snapshot of %zu bytes is larger than the whole spool (%" PRIu64
			     " bytes): not pushed",
			  len, p->max_bytes);
		pthread_mutex_unlock(&p->lock);
		return -EFBIG;
	}
	make_room(p, 1, len);
	p->reserved += len;
	note_high(p);
	s.n.seq = p->next_seq++;
	s.n.from_s = from_s;
	s.n.until_s = until_s;
	s.n.sample_rate = sample_rate;
	s.bytes = len;
	pthread_mutex_unlock(&p->lock);

	e = write_spooled(p, &s.n, pprof_gz, len);

	pthread_mutex_lock(&p->lock);
	p->reserved -= len;
	if (!e) {
		e = push_back(p, &s);
		if (e) /* -ENOMEM: a file nobody will send until the next start */
			unlink_spooled(p, &s.n);
	}
	if (e) {
		p->st.write_errors++;
		set_error(p, "cannot spool a snapshot: %s", strerror(-e));
	} else {
		p->st.enqueued++;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return e;
}

void fl_push__stats(struct fl_push *p, struct fl_push_stats *st)
{
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	st->spooled_files = p->n;
	st->spool_bytes = p->bytes;
	st->next_attempt_s = 0;
	if (p->next_try > 0) {
		double d = p->next_try - mono_now();

		st->next_attempt_s = d > 0 ? d : 0;
	}
	pthread_mutex_unlock(&p->lock);
}
