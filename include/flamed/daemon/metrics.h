/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's Prometheus endpoint: an HTTP server for GET /metrics and the values it serves. */
#ifndef FLAMED_METRICS_H
#define FLAMED_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The server runs in a thread of its own (libmicrohttpd's), with every
 * signal blocked, so that the daemon's signalfd keeps them all. It answers
 * GET (and HEAD) /metrics with the Prometheus text format 0.0.4, 404 on any
 * other path, 405 on any other method, 413 on a request with a body; at most
 * FL_METRICS_MAX_CONNECTIONS connections at once (FL_METRICS_MAX_PER_IP from
 * one address), each closed after FL_METRICS_TIMEOUT_S seconds idle, each
 * with FL_METRICS_MEMORY bytes for its request headers. Nothing is logged
 * above debug level.
 *
 * The daemon fills a struct fl_metrics_values from its loop and hands it
 * over whole with fl_metrics__update(); a scrape copies it under a mutex and
 * reads the process_* metrics from /proc/self at that moment.
 */
#define FL_METRICS_MAX_CONNECTIONS 8u
#define FL_METRICS_MAX_PER_IP 4u
#define FL_METRICS_TIMEOUT_S 10u
#define FL_METRICS_MEMORY (32u << 10)

struct fl_metrics;

struct fl_metrics_opts {
	size_t sz; /* sizeof(struct fl_metrics_opts) */
	/*
	 * "HOST:PORT", see fl_hostport__parse() (config's metrics_listen):
	 * "127.0.0.1:9464", "[::1]:9464", "localhost:9464" (a name is resolved
	 * now, and the first address that binds is used). Port 0 takes a free
	 * port, for tests: fl_metrics__port() tells which.
	 */
	const char *listen;
	/* flamed_build_info{version="..."} 1; NULL: not exposed. Copied. */
	const char *version;
};

/*
 * Binds (SO_REUSEADDR, so a restart does not wait for TIME_WAIT), listens
 * and starts serving. Returns 0 and *ret, or -EINVAL (listen is not
 * HOST:PORT), -EADDRNOTAVAIL (a name that does not resolve, or an address
 * not on this machine), -EADDRINUSE, -EACCES (a port below 1024 without
 * CAP_NET_BIND_SERVICE), -ENOMEM, or another -errno of socket/bind/listen,
 * or of the server's start (-EIO when it gives none), or -ELIBACC:
 * libmicrohttpd, opened by the first call, cannot be loaded
 * (fl_metrics__lib_error() says why).
 */
int fl_metrics__new(const struct fl_metrics_opts *o, struct fl_metrics **ret);
/* Why libmicrohttpd could not be loaded: one line, naming the file and its package; "" if it could. */
const char *fl_metrics__lib_error(void);

/* Stops the server (waits for its thread: a scrape in progress ends) and frees m. Accepts NULL. */
void fl_metrics__free(struct fl_metrics *m);

/* The port the server listens on (the one chosen when listen said 0). */
uint16_t fl_metrics__port(const struct fl_metrics *m);

/* flamed_samples_lost_total{cause=...}: samples taken that no profile holds. */
enum fl_metrics_lost {
	FL_METRICS_LOST_RING_FULL,     /* "ring_full": sampler_stats.lost */
	FL_METRICS_LOST_COPY_FULL,     /* "stack_copy_full": sampler_stats.uw_copy_full */
	FL_METRICS_LOST_PID_NAMESPACE, /* "pid_namespace": sampler_stats.other_ns */
	FL_METRICS_LOST__MAX,
};

/* flamed_unwind_stacks_total{outcome=...}: how the walk of each user stack ended. */
enum fl_metrics_unwind {
	FL_METRICS_UNWIND_COMPLETE,  /* "complete": unwind_complete + uw_complete */
	FL_METRICS_UNWIND_TRUNCATED, /* "truncated": unwind_truncated + uw_truncated */
	FL_METRICS_UNWIND_STOPPED,   /* "stopped": uw_stopped (kernel-dwarf: no rule went on) */
	FL_METRICS_UNWIND_FAILED,    /* "failed": unwind_failed */
	FL_METRICS_UNWIND__MAX,
};

/* flamed_caps_hit_total{cap=...}: how often each resource cap turned something away. */
enum fl_metrics_cap {
	FL_METRICS_CAP_MAX_STACKS,	 /* "max_stacks": sampler_stats.map_full */
	FL_METRICS_CAP_MAX_PROCESSES,	 /* "max_processes": tracker_stats.over_max */
	FL_METRICS_CAP_MAX_SYMBOL_CACHE, /* "max_symbol_cache": files_not_read + files_over_budget */
	FL_METRICS_CAP_MAX_UNWIND_TABLES, /* "max_unwind_tables": sampler_stats.tables_over_budget */
	FL_METRICS_CAP_PERF_MAPS,	  /* "perf_maps": symbolizer_jit_stats.over_budget */
	FL_METRICS_CAP__MAX,
};

/*
 * What the daemon knows, as totals since it started: counters only grow
 * (one that goes down reads as a restart of the daemon to Prometheus, whose
 * rate() copes, but the daemon should carry totals across a reload that
 * replaces the sampler). The comments say which metric each field is.
 */
struct fl_metrics_values {
	/* flamed_samples_total{outcome=...}; outcome="lost" is the sum of lost[]. */
	uint64_t samples_profile;	/* "profile": folded into a profile (fold_stats.samples) */
	uint64_t samples_idle;		/* "idle": the idle task's, dropped (sampler_stats.idle) */
	uint64_t samples_other_process; /* "other_process": not a target (sampler_stats.filtered) */
	uint64_t lost[FL_METRICS_LOST__MAX]; /* flamed_samples_lost_total{cause=...} */

	/* flamed_snapshots_total{result="written"|"failed"} */
	uint64_t snapshots_written, snapshots_failed;
	double snapshot_duration_s; /* flamed_snapshot_duration_seconds: the last one's */
	double last_snapshot_time;  /* flamed_last_snapshot_timestamp_seconds: Unix time, 0 none */

	/* flamed_push_total{result="ok"|"failed"}, flamed_push_spool_bytes (a gauge), ..._dropped_total */
	uint64_t push_ok, push_failed;
	uint64_t push_spool_bytes;
	uint64_t push_spool_dropped;

	uint64_t unwind[FL_METRICS_UNWIND__MAX]; /* flamed_unwind_stacks_total{outcome=...} */
	uint64_t throttled; /* flamed_throttled_total: sampler_stats.throttled */
	uint64_t caps_hit[FL_METRICS_CAP__MAX]; /* flamed_caps_hit_total{cap=...} */
};

/* Replaces the values served (copied: v may be reused at once). Thread-safe. */
void fl_metrics__update(struct fl_metrics *m, const struct fl_metrics_values *v);

/*
 * The exposition of values v, with the process_* metrics of this process
 * now, written to f (what a scrape gets; for tests). version as in the
 * opts, or NULL. Returns 0 or -EIO when f fails.
 */
int fl_metrics__write(const struct fl_metrics_values *v, const char *version, FILE *f);

#endif
