/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fetching separate debug files from debuginfod servers in a background thread, within a budget. */
#ifndef FLAMED_DEBUGINFOD_H
#define FLAMED_DEBUGINFOD_H

#include <stddef.h>
#include <stdint.h>

/*
 * The client is libdebuginfod (elfutils): the servers are the URLs of
 * DEBUGINFOD_URLS (space-separated), and the files land in libdebuginfod's
 * own cache, shared with gdb, perf and every other client of the same user:
 * DEBUGINFOD_CACHE_PATH when set, else $HOME/.debuginfod_client_cache when
 * that exists, else $XDG_CACHE_HOME/debuginfod_client, else
 * $HOME/.cache/debuginfod_client ("/" when HOME is unset, as under a
 * systemd service without User=: a daemon should set DEBUGINFOD_CACHE_PATH).
 * The library also reads DEBUGINFOD_TIMEOUT, DEBUGINFOD_MAXSIZE,
 * DEBUGINFOD_MAXTIME, DEBUGINFOD_RETRY_LIMIT and DEBUGINFOD_HEADERS_FILE
 * from the environment; DEBUGINFOD_VERBOSE and DEBUGINFOD_PROGRESS are
 * overridden (libdebuginfod never writes to stderr here). libdebuginfod
 * remembers a miss (a 404; in 0.188 a truncated transfer too) for
 * cache_miss_s, 600 s by default, as an empty file in the cache: within that
 * time any client, a new object here included, fails at once without asking.
 * A transfer this object aborts (over the budget, or stopping) leaves no
 * such mark: it is removed.
 *
 * A fetched file is NOT trusted: a server, or whoever can write the cache
 * directory, chooses its bytes, and its path may be swapped for a symbolic
 * link after the fetch. This object never opens it by name; the caller
 * opens the path as any file of another user (O_NOFOLLOW, a regular file,
 * checked on the fd) and uses it only if it carries the build-id it was
 * fetched for.
 *
 * Budget: the worker spends at most max_files fetched files, max_bytes
 * bytes and max_seconds of transfers per budget (fl_debuginfod__reset_budget()
 * starts a new one). It is enforced inside a transfer: libdebuginfod's
 * progress callback aborts it once the time is spent or the size the server
 * announces (or the bytes received so far) exceed the bytes left. A file
 * found in the local cache costs no budget (counted in the stats all the
 * same).
 */

#define FL_DEBUGINFOD_MAX_ENTRIES 4096u /* distinct build-ids one object remembers */
#define FL_DEBUGINFOD_MIN_ID 2u		/* bytes of a build-id */
#define FL_DEBUGINFOD_MAX_ID 64u
#define FL_DEBUGINFOD_DEFAULT_FILES 64u /* per budget */
#define FL_DEBUGINFOD_DEFAULT_BYTES ((uint64_t)1 << 30)
#define FL_DEBUGINFOD_DEFAULT_SECONDS 30.0

struct fl_debuginfod;

struct fl_debuginfod_opts {
	size_t sz; /* sizeof(struct fl_debuginfod_opts) */
	/*
	 * Space-separated server URLs, e.g. "https://debuginfod.debian.net".
	 * NULL, empty or blank: DEBUGINFOD_URLS from the environment.
	 */
	const char *urls;
	unsigned max_files; /* files fetched per budget; 0: FL_DEBUGINFOD_DEFAULT_FILES */
	uint64_t max_bytes; /* bytes fetched per budget; 0: FL_DEBUGINFOD_DEFAULT_BYTES (1 GiB) */
	/* Wall-clock seconds spent in transfers per budget; 0: FL_DEBUGINFOD_DEFAULT_SECONDS. */
	double max_seconds;
};

/*
 * Starts the fetcher: one worker thread, idle until the first lookup.
 * opts NULL: all defaults. When opts->urls is given it is put in the
 * environment (setenv DEBUGINFOD_URLS, which libdebuginfod reads at each
 * fetch) before the thread starts: call this before the process has other
 * threads. Returns 0 with *ret set; -ENOENT (and no object) when no server
 * is configured (urls NULL or blank and DEBUGINFOD_URLS unset or blank):
 * debuginfod is off; -EINVAL (opts->sz too small, ret NULL, a negative or
 * NaN max_seconds); -ENOMEM; -ELIBACC: libdebuginfod, opened by the first
 * call, cannot be loaded (fl_debuginfod__lib_error() says why); or the
 * -errno of setenv, debuginfod_begin() or starting the thread.
 */
int fl_debuginfod__new(const struct fl_debuginfod_opts *opts, struct fl_debuginfod **ret);
/* Why libdebuginfod could not be loaded: one line, naming the file and its package; "" if it could. */
const char *fl_debuginfod__lib_error(void);

/*
 * Stops the worker, aborting a transfer in flight (libdebuginfod calls the
 * progress callback about once a second even while a server sends nothing,
 * so this returns within about a second), and frees d with every path it
 * handed out. Accepts NULL.
 */
void fl_debuginfod__free(struct fl_debuginfod *d);

enum fl_debuginfod_state {
	FL_DEBUGINFOD_FETCHED, /* in the cache: *path */
	FL_DEBUGINFOD_PENDING, /* queued or being fetched */
	FL_DEBUGINFOD_FAILED,  /* final for this object: see fl_debuginfod__lookup() */
	FL_DEBUGINFOD_SKIPPED, /* over the budget, or the table is full */
};

/*
 * Never blocks on the network (it takes the object's lock, held by the
 * worker only for bookkeeping). The first lookup of a build-id (id, len
 * bytes) queues it, FIFO, and returns PENDING; later ones return its state:
 *   FETCHED  *path (when path is not NULL) is the debug file in
 *            libdebuginfod's cache: a string owned by d, valid until
 *            fl_debuginfod__free(). Untrusted: see above.
 *   PENDING  queued or in flight: ask again once fl_debuginfod__generation()
 *            has changed.
 *   SKIPPED  over the budget (not asked, or its transfer aborted): queued
 *            again by fl_debuginfod__reset_budget(). Also returned, without
 *            remembering the build-id, when FL_DEBUGINFOD_MAX_ENTRIES
 *            build-ids are known already (counted in stats.full).
 *   FAILED   the servers had nothing, the transfer failed (a truncated
 *            answer included), or the file is larger than a whole budget's
 *            max_bytes: not asked again in this object's life. Also for a
 *            build-id of fewer than FL_DEBUGINFOD_MIN_ID or more than
 *            FL_DEBUGINFOD_MAX_ID bytes (or d or id NULL), not remembered.
 * *path is set only for FETCHED. Safe from any thread.
 */
enum fl_debuginfod_state fl_debuginfod__lookup(struct fl_debuginfod *d, const uint8_t *id,
					       size_t len, const char **path);

/*
 * Waits until nothing is queued or in flight, or `seconds` (>= 0) passed,
 * or the budget's time is spent. Returns how many lookups were still
 * PENDING then. When the budget ran out they are SKIPPED from then on (the
 * one in flight included: its transfer is aborted within about a second,
 * and it stays SKIPPED unless it completed first), so the stats taken next
 * count them as skipped; after a plain timeout they stay PENDING.
 */
unsigned fl_debuginfod__wait(struct fl_debuginfod *d, double seconds);

/*
 * Incremented (atomically) each time a lookup leaves PENDING (a fetch ends,
 * whatever its outcome, or queued lookups are skipped over the budget) and
 * when fl_debuginfod__reset_budget() queues SKIPPED ones again. A caller
 * that saw PENDING or SKIPPED asks again once it changed. Lock-free.
 */
uint64_t fl_debuginfod__generation(const struct fl_debuginfod *d);

struct fl_debuginfod_stats {
	/* Build-ids known by state now: the four add up to the table's size. */
	unsigned fetched, failed, skipped, pending;
	uint64_t bytes; /* of the files fetched, by their size, since fl_debuginfod__new() */
	double seconds; /* wall-clock seconds spent in libdebuginfod since then, in flight included */
	unsigned cached; /* of fetched: found in the local cache (no budget spent) */
	unsigned full;	 /* lookups refused (SKIPPED, not remembered): the table was full */
	int last_error;	 /* -errno of the last failure other than "not found"; 0: none */
};

/* Fills st. Takes the object's lock briefly; safe from any thread. */
void fl_debuginfod__stats(const struct fl_debuginfod *d, struct fl_debuginfod_stats *st);

/*
 * One line for the end-of-run summary, without a newline, e.g.
 *   debuginfod: 3 files fetched (12.4 MiB in 1.2 s), 1 failed, 0 skipped
 *   over the budget (64 files, 1.0 GiB, 30 s)
 * followed, when there are any, by ", N pending", ", N over the table's
 * limit" and "; last error: STRERROR". Written into buf (size bytes, NUL
 * included; truncated to fit).
 */
void fl_debuginfod__summary(const struct fl_debuginfod *d, char *buf, size_t size);

/*
 * Starts a new budget (the daemon calls it once per snapshot period): the
 * files, bytes and seconds spent are 0 again, and the SKIPPED build-ids are
 * queued again, in the order they were first looked up. A transfer in
 * flight goes on, charged to the new budget from now on.
 */
void fl_debuginfod__reset_budget(struct fl_debuginfod *d);

#endif
