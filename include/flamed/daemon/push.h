/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pushing the daemon's pprof snapshots to a Pyroscope ingest endpoint, through a bounded on-disk spool. */
#ifndef FLAMED_PUSH_H
#define FLAMED_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The protocol is Grafana Pyroscope's HTTP ingest API: one request per
 * snapshot,
 *
 *   POST URL/ingest?name=APP{k=v,...}&from=S&until=S&format=pprof
 *        &sampleRate=HZ&spyName=flamed&units=samples&aggregationType=sum
 *   Content-Type: application/octet-stream
 *   [Authorization: Bearer TOKEN | basic auth]
 *
 * with the gzipped pprof profile as the body. Every query value is
 * percent-encoded (only A-Z a-z 0-9 - . _ ~ are left as they are).
 *
 * fl_push__enqueue() writes the snapshot into the spool directory and
 * returns; a thread of the push object sends the spooled snapshots, oldest
 * first, and deletes each right after its 2xx answer. The spool outlives
 * the object: the next fl_push__new() on the same directory resumes. The
 * directory's files are flamed's own: names "push-SEQ-FROM-UNTIL-RATE.pprof"
 * (decimal, no leading zeros), temporaries ".tmp-push-SEQ"; anything else
 * in it (other names, symbolic links, directories) is left alone, never
 * opened.
 */

#define FL_PUSH_MAX_FILES 100000u	 /* spooled snapshots: the oldest go past it */
#define FL_PUSH_MAX_LABELS 64u		 /* labels in fl_push_opts.labels */
#define FL_PUSH_MAX_FIELD 256u		 /* bytes: app name, a label key or value */
#define FL_PUSH_MAX_URL 2048u		 /* bytes of fl_push_opts.url */
#define FL_PUSH_MAX_ERROR 256u		 /* bytes of fl_push_stats.last_error, NUL included */
#define FL_PUSH_DEFAULT_TIMEOUT 10.0	 /* seconds per request */
#define FL_PUSH_DEFAULT_BACKOFF_MIN 1.0	 /* seconds: the first retry's delay */
#define FL_PUSH_DEFAULT_BACKOFF_MAX 300.0 /* seconds: the longest delay, Retry-After included */

struct fl_push;

struct fl_push_opts {
	size_t sz; /* sizeof(struct fl_push_opts) */
	/*
	 * "http://host[:port][/prefix]" or "https://...": "/ingest" is appended
	 * (a trailing '/' is dropped first). No query, fragment, user info
	 * (credentials go in auth), blank or control character.
	 */
	const char *url;
	/*
	 * NULL: no authentication. "user:password" (a ':' in it): HTTP basic
	 * authentication. Otherwise a bearer token. No control character. The
	 * caller reads it from its file; the object keeps its own copy.
	 */
	const char *auth;
	/* The application name: 1..FL_PUSH_MAX_FIELD bytes of A-Z a-z 0-9 . _ - / (NULL: "flamed"). */
	const char *app_name;
	/*
	 * NULL or "key=value,key=value": keys [A-Za-z_][A-Za-z0-9_]*, values
	 * 1..FL_PUSH_MAX_FIELD bytes of anything printable but ',' and '}'
	 * (Pyroscope's name syntax ends a value there); blanks around keys and
	 * values are dropped. At most FL_PUSH_MAX_LABELS.
	 */
	const char *labels;
	double timeout_s; /* per request, connection included; 0: FL_PUSH_DEFAULT_TIMEOUT */
	bool tls_verify;  /* check the server's certificate and host name (https) */
	/*
	 * The spool: a directory only root can write (the daemon's
	 * STATE_DIR/spool). The object works on a duplicate: the caller keeps
	 * and closes its own.
	 */
	int spool_dir_fd;
	/*
	 * Total bytes of spooled snapshots: the oldest are deleted past it. 0:
	 * no backlog, whatever its size only the newest snapshot is kept (a
	 * new one replaces the one waiting for a retry).
	 */
	uint64_t spool_max_bytes;
	/*
	 * Retries: the delay starts at backoff_min_s and doubles at each failure
	 * in a row up to backoff_max_s, each delay drawn in [d/2, d] (jitter).
	 * A Retry-After of a 429 or 503 answer replaces it, capped at
	 * backoff_max_s. 0: the defaults (1 s, 300 s). Tests shorten them.
	 */
	double backoff_min_s;
	double backoff_max_s;
};

/*
 * Checks the options fl_push__new() takes, without touching the spool or
 * the network: 0, or -EINVAL with one line in err (size errlen, may be
 * NULL) naming what is wrong, e.g. `label "env": a value cannot hold ','
 * or '}'`. For the daemon to refuse a configuration before using it.
 */
int fl_push__check_opts(const struct fl_push_opts *opts, char *err, size_t errlen);

/*
 * Checks opts, picks up the snapshots already in the spool (temporaries a
 * crash left are deleted; the oldest are deleted past spool_max_bytes) and
 * starts the sender thread. Returns 0 with *ret set, -EINVAL (an option:
 * see fl_push__check_opts()), -EPERM (the spool directory is writable by
 * group or others), -ENOTDIR, -ENOMEM, or the -errno of reading the
 * directory or starting the thread, or -ELIBACC: libcurl, opened by the
 * first call, cannot be loaded (fl_push__lib_error() says why).
 */
int fl_push__new(const struct fl_push_opts *opts, struct fl_push **ret);
/* Why libcurl could not be loaded: one line, naming the file and its package; "" if it could. */
const char *fl_push__lib_error(void);

/*
 * Stops the sender thread, aborting a request in flight (at most about
 * one second later, and never later than the request's timeout), and
 * frees p. The spool stays on disk for the next fl_push__new(). Accepts NULL.
 */
void fl_push__free(struct fl_push *p);

/*
 * Spools one snapshot: len (>= 1) bytes of gzipped pprof, the samples of
 * the Unix seconds [from_s, until_s) taken at sample_rate Hz. Never waits
 * for the network: the body is written to a temporary file of the spool
 * (0600, O_EXCL|O_NOFOLLOW, fsync'ed), renamed to its name and handed to
 * the sender. The oldest snapshots not being sent are deleted first when
 * the spool would exceed spool_max_bytes (the one being sent too, as a
 * last resort); each counts in dropped. The caller keeps pprof_gz.
 * Returns 0; -EINVAL (len 0, from_s < 0, until_s < from_s, sample_rate
 * 0); -EFBIG (len > spool_max_bytes > 0: not spooled, counted in dropped);
 * -ENOMEM; or the -errno of writing the file (nothing is left on disk).
 * Safe to call from any thread.
 */
int fl_push__enqueue(struct fl_push *p, const void *pprof_gz, size_t len, int64_t from_s,
		     int64_t until_s, unsigned sample_rate);

/* Counters since fl_push__new(), and the state of the spool now. */
struct fl_push_stats {
	uint64_t enqueued;	  /* snapshots spooled by fl_push__enqueue() */
	uint64_t sent;		  /* delivered: a 2xx answer */
	uint64_t refused;	  /* deleted after a 4xx other than 408 and 429: never sent again */
	uint64_t dropped;	  /* deleted unsent: the spool's caps, an unreadable file, -EFBIG */
	uint64_t failed_attempts; /* requests that failed and will be retried */
	uint64_t retries;	  /* requests made after a failure of the same snapshot */
	uint64_t write_errors;	  /* fl_push__enqueue() that could not write the file */
	uint64_t spooled_files;	  /* snapshots waiting (the one in flight included) */
	uint64_t spool_bytes;	  /* their bytes on disk */
	uint64_t spool_bytes_max; /* the most spool_bytes has been */
	uint64_t consecutive_failures; /* failed requests since the last delivered or refused one */
	long last_status;	       /* the last answer's HTTP status; 0: none or no answer */
	double next_attempt_s;	       /* seconds until the next retry; 0: not waiting */
	/*
	 * The last failure or refusal, one line ("HTTP 503 Service Unavailable
	 * from http://..." or "connection refused: ..."); "" when none yet.
	 * last_error_seq counts the errors: a new value means a new error.
	 */
	char last_error[FL_PUSH_MAX_ERROR];
	uint64_t last_error_seq;
};

/* Fills st. Takes the object's lock briefly; safe from any thread. */
void fl_push__stats(struct fl_push *p, struct fl_push_stats *st);

/*
 * The ingest URL of a snapshot, as fl_push__new() would send it: opts is
 * checked as there (only url, app_name and labels are read). On success
 * *ret is a malloc'ed string the caller frees. Returns 0, -EINVAL or
 * -ENOMEM.
 */
int fl_push__ingest_url(const struct fl_push_opts *opts, int64_t from_s, int64_t until_s,
			unsigned sample_rate, char **ret);

/* A spooled snapshot's name and what it encodes. */
struct fl_push_spool_name {
	uint64_t seq; /* the order of spooling: oldest first */
	int64_t from_s, until_s;
	unsigned sample_rate;
};

/*
 * Writes the file name of n into buf (size >= 96 is enough). Returns its
 * length, or -ENOSPC / -EINVAL (negative times).
 */
int fl_push__spool_name(const struct fl_push_spool_name *n, char *buf, size_t size);

/*
 * Parses a name that fl_push__spool_name() writes, and nothing else (no
 * leading zero, no sign, no overflow, nothing after). Returns 0, or
 * -EINVAL with *n unchanged.
 */
int fl_push__parse_spool_name(const char *name, struct fl_push_spool_name *n);

#endif
