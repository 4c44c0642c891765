// SPDX-License-Identifier: GPL-2.0-or-later
/* The debuginfod fetcher: a table of build-ids, a FIFO queue and one thread that asks libdebuginfod, within a budget. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <elfutils/debuginfod.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/symbols/debuginfod.h"
#include "common/dynlib.h"

/* libdebuginfod, opened by the first fetcher (dynlib.h). */
static struct fl_dynlib libdebuginfod = FL_DYNLIB_INIT(
	"libdebuginfod.so.1", "libdebuginfod1 (Debian) or elfutils-debuginfod-client (Fedora)");

#define DEBUGINFOD_FUNCS(X)                                                                        \
	X(debuginfod_begin)                                                                        \
	X(debuginfod_end)                                                                          \
	X(debuginfod_find_debuginfo)                                                               \
	X(debuginfod_get_user_data)                                                                \
	X(debuginfod_set_user_data)                                                                \
	X(debuginfod_set_progressfn)                                                               \
	X(debuginfod_set_verbose_fd)
DEBUGINFOD_FUNCS(FL_DYNLIB_SYM)
static const struct fl_dynlib_sym debuginfod_syms[] = {DEBUGINFOD_FUNCS(FL_DYNLIB_ENTRY)};

const char *fl_debuginfod__lib_error(void)
{
	return fl_dynlib__error(&libdebuginfod);
}

#define NIL UINT32_MAX
#define FIRST_CAP 64u
#define LOG_WINDOW 10.0 /* seconds: at most LOG_BURST failure messages in each */
#define LOG_BURST 5u

/*
 * Why the progress callback stopped a transfer. libdebuginfod 0.188 calls
 * it about once a second even while the server sends nothing: measured
 * against a server that accepts the connection and never answers, calls
 * at 0.0 s (twice), 0.2 s, 1.2 s, 2.2 s... (a counting the calls, b = 0),
 * and the transfer ends within a millisecond of the callback returning
 * nonzero. So the stop flag and the time budget bound a hanging transfer
 * by themselves, within about a second; DEBUGINFOD_TIMEOUT (90 s by
 * default, read by the library) is left to the user. test_debuginfod's
 * hang cases check that this holds for the library it runs with.
 */
enum abort_reason {
	GO_ON,
	STOPPING,   /* fl_debuginfod__free() */
	OVER_TIME,  /* the budget's seconds are spent */
	OVER_BYTES, /* the file does not fit in what is left of max_bytes */
	TOO_BIG,    /* nor in a whole budget's max_bytes */
};

struct entry {
	uint8_t id[FL_DEBUGINFOD_MAX_ID];
	uint8_t len;
	uint8_t state; /* enum fl_debuginfod_state */
	bool queued;   /* in the FIFO */
	bool inflight; /* being fetched by the worker */
	uint32_t next; /* the next queued entry; NIL: the last */
	char *path;    /* FETCHED: libdebuginfod's malloc'ed path */
};

struct fl_debuginfod {
	pthread_mutex_t lock;
	pthread_cond_t work; /* the worker waits for lookups, a new budget or stop */
	pthread_cond_t done; /* fl_debuginfod__wait() waits for fetches to end */
	pthread_t thread;
	bool started;
	atomic_bool stop;
	_Atomic uint64_t generation;

	/* Set by fl_debuginfod__new(), read-only afterwards. */
	unsigned max_files;
	uint64_t max_bytes;
	double max_seconds;
	debuginfod_client *client; /* the worker's only */

	/* The worker's (the progress callback runs in the worker's thread). */
	enum abort_reason abort;
	bool progressed; /* the callback ran: the fetch went to the network */
	double log_window;
	unsigned log_count, log_hidden;

	/* Under lock. */
	struct entry *e; /* in the order of first lookup */
	uint32_t n, cap;
	uint32_t *slots; /* open addressing: entry index + 1; 0: empty */
	uint32_t nslots; /* a power of 2, at least twice n */
	uint32_t head, tail;
	unsigned count[4]; /* entries per state */
	/* The budget now. */
	uint64_t epoch; /* incremented by fl_debuginfod__reset_budget() */
	double epoch_start;
	unsigned files_used;
	uint64_t bytes_used;
	double secs_used; /* of the transfers that ended in this budget */
	/* The fetch in flight. */
	bool busy;
	uint32_t cur;
	double cur_start;
	/* Since the start. */
	uint64_t bytes;
	double seconds;
	unsigned cached, full;
	int last_error;
};

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void to_timespec(double t, struct timespec *ts)
{
	if (t > 1e15)
		t = 1e15;
	ts->tv_sec = (time_t)t;
	ts->tv_nsec = (long)((t - (double)ts->tv_sec) * 1e9);
	if (ts->tv_nsec >= 1000000000L)
		ts->tv_nsec = 999999999L;
}

static void to_hex(const uint8_t *id, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = hex[id[i] >> 4];
		out[2 * i + 1] = hex[id[i] & 15];
	}
	out[2 * len] = '\0';
}

static bool is_blank(const char *s)
{
	if (!s)
		return true;
	for (; *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n')
			return false;
	return true;
}

/* ---- the table: entries in lookup order, an open-addressing index ---- */

/*
 * FNV-1a. Build-ids come from files other users write, so they can collide
 * on purpose: FL_DEBUGINFOD_MAX_ENTRIES bounds the probes all the same.
 */
static uint32_t hash_id(const uint8_t *id, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= id[i];
		h *= 16777619u;
	}
	h ^= (uint32_t)len;
	return h;
}

/* The slot holding id, or the empty slot where it would go. Under lock. */
static uint32_t *find_slot(struct fl_debuginfod *d, const uint8_t *id, size_t len)
{
	uint32_t mask = d->nslots - 1, i = hash_id(id, len) & mask;

	for (;;) {
		uint32_t *s = &d->slots[i];
		const struct entry *e;

		if (!*s)
			return s;
		e = &d->e[*s - 1];
		if (e->len == len && !memcmp(e->id, id, len))
			return s;
		i = (i + 1) & mask;
	}
}

static int grow_slots(struct fl_debuginfod *d)
{
	uint32_t nslots = d->nslots * 2, *old = d->slots, oldn = d->nslots, i;

	d->slots = calloc(nslots, sizeof(*d->slots));
	if (!d->slots) {
		d->slots = old;
		return -ENOMEM;
	}
	d->nslots = nslots;
	for (i = 0; i < oldn; i++) {
		if (old[i]) {
			const struct entry *e = &d->e[old[i] - 1];

			*find_slot(d, e->id, e->len) = old[i];
		}
	}
	free(old);
	return 0;
}

/* Appends a new entry in state st. Returns its index, or NIL (-ENOMEM). Under lock. */
static uint32_t add_entry(struct fl_debuginfod *d, uint32_t *slot, const uint8_t *id, size_t len,
			  enum fl_debuginfod_state st)
{
	struct entry *e;

	if (d->n == d->cap) {
		uint32_t cap = d->cap * 2;
		struct entry *t = realloc(d->e, cap * sizeof(*t));

		if (!t)
			return NIL;
		d->e = t;
		d->cap = cap;
	}
	if ((d->n + 1) * 2 > d->nslots) {
		if (grow_slots(d))
			return NIL;
		slot = find_slot(d, id, len);
	}
	e = &d->e[d->n];
	memset(e, 0, sizeof(*e));
	memcpy(e->id, id, len);
	e->len = (uint8_t)len;
	e->state = (uint8_t)st;
	e->next = NIL;
	d->count[st]++;
	*slot = d->n + 1;
	return d->n++;
}

static void set_state(struct fl_debuginfod *d, uint32_t i, enum fl_debuginfod_state st)
{
	struct entry *e = &d->e[i];

	d->count[e->state]--;
	d->count[st]++;
	e->state = (uint8_t)st;
}

static void enqueue(struct fl_debuginfod *d, uint32_t i)
{
	d->e[i].queued = true;
	d->e[i].next = NIL;
	if (d->tail == NIL)
		d->head = i;
	else
		d->e[d->tail].next = i;
	d->tail = i;
}

static uint32_t dequeue(struct fl_debuginfod *d)
{
	uint32_t i = d->head;

	d->head = d->e[i].next;
	if (d->head == NIL)
		d->tail = NIL;
	d->e[i].queued = false;
	d->e[i].next = NIL;
	return i;
}

/* ---- the budget (under lock) ---- */

static double time_used(const struct fl_debuginfod *d, double now)
{
	double t = d->secs_used;

	if (d->busy) {
		double from = d->cur_start > d->epoch_start ? d->cur_start : d->epoch_start;

		if (now > from)
			t += now - from;
	}
	return t;
}

static bool budget_spent(const struct fl_debuginfod *d, double now)
{
	return d->files_used >= d->max_files || d->bytes_used >= d->max_bytes ||
	       time_used(d, now) >= d->max_seconds;
}

static void bump_generation(struct fl_debuginfod *d)
{
	atomic_fetch_add(&d->generation, 1);
	pthread_cond_broadcast(&d->done);
}

/* Every queued lookup becomes SKIPPED. */
static void skip_queued(struct fl_debuginfod *d)
{
	bool any = false;

	while (d->head != NIL) {
		set_state(d, dequeue(d), FL_DEBUGINFOD_SKIPPED);
		any = true;
	}
	if (any)
		bump_generation(d);
}

/*
 * libdebuginfod's progress callback, in the worker's thread. a and b are
 * bytes received and expected once a server is chosen (b = -1: no
 * Content-Length); before, b is 0 and a counts the calls.
 */
static int on_progress(debuginfod_client *c, long a, long b)
{
	struct fl_debuginfod *d = sym_debuginfod_get_user_data(c);
	enum abort_reason r = GO_ON;
	uint64_t got = b != 0 && a > 0 ? (uint64_t)a : 0;
	uint64_t want = b > 0 ? (uint64_t)b : 0;

	d->progressed = true;
	if (atomic_load(&d->stop)) {
		r = STOPPING;
	} else {
		double now = mono_now();

		pthread_mutex_lock(&d->lock);
		if (time_used(d, now) >= d->max_seconds) {
			r = OVER_TIME;
		} else {
			uint64_t left =
				d->bytes_used < d->max_bytes ? d->max_bytes - d->bytes_used : 0;

			if (want > d->max_bytes || got > d->max_bytes)
				r = TOO_BIG;
			else if (want > left || got > left)
				r = OVER_BYTES;
		}
		pthread_mutex_unlock(&d->lock);
	}
	if (r != GO_ON && d->abort == GO_ON)
		d->abort = r;
	return r != GO_ON;
}

/* ---- the worker ---- */

/*
 * libdebuginfod's cache directory, by its own rules (checked against
 * 0.188): DEBUGINFOD_CACHE_PATH; else $HOME/.debuginfod_client_cache if it
 * exists; else $XDG_CACHE_HOME/debuginfod_client; else
 * $HOME/.cache/debuginfod_client, HOME defaulting to "/". NULL: -ENOMEM.
 */
static char *cache_dir(void)
{
	const char *env = getenv(DEBUGINFOD_CACHE_PATH_ENV_VAR), *home, *xdg;
	struct stat st;
	char *p = NULL;

	if (env && *env)
		return strdup(env);
	home = getenv("HOME");
	if (!home)
		home = "/";
	if (asprintf(&p, "%s/.debuginfod_client_cache", home) < 0)
		return NULL;
	if (!stat(p, &st))
		return p;
	free(p);
	p = NULL;
	xdg = getenv("XDG_CACHE_HOME");
	if (xdg && *xdg) {
		if (asprintf(&p, "%s/debuginfod_client", xdg) < 0)
			return NULL;
	} else if (asprintf(&p, "%s/.cache/debuginfod_client", home) < 0) {
		return NULL;
	}
	return p;
}

/*
 * libdebuginfod 0.188 answers a transfer its progress callback aborted
 * with -ENOENT, and leaves in its cache the mark of a server's 404: an
 * empty file where the debug file would be (CACHE/HEX/debuginfo). For
 * cache_miss_s (600 s by default) every client of that cache, the next
 * fetch here included, then takes the build-id as missing without asking.
 * An abort is ours (a budget, a stop), not the server's answer: the mark
 * goes, if it is the one our transfer left (an empty regular file of our
 * user, modified since the transfer began). Opened relative to the cache
 * directory, following no symbolic link below it.
 */
static void drop_abort_mark(const char *hex, time_t since)
{
	_cleanup_free_ char *root = cache_dir();
	_cleanup_close_ int rfd = -1, dfd = -1;
	struct stat st;

	if (!root)
		return;
	rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return;
	dfd = openat(rfd, hex, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	if (fstatat(dfd, "debuginfo", &st, AT_SYMLINK_NOFOLLOW))
		return;
	if (!S_ISREG(st.st_mode) || st.st_size || st.st_uid != geteuid() || st.st_mtime < since - 1)
		return;
	if (!unlinkat(dfd, "debuginfo", 0))
		fl_pr_debug("debuginfod: %s: aborted; its miss mark removed from the cache\n", hex);
}

/* At most LOG_BURST failure messages every LOG_WINDOW seconds: a dead server fails every lookup. */
static void log_failure(struct fl_debuginfod *d, const char *hex, int err, double now)
{
	if (now - d->log_window >= LOG_WINDOW) {
		if (d->log_hidden)
			fl_pr_debug("debuginfod: %u more failures not shown\n", d->log_hidden);
		d->log_window = now;
		d->log_count = 0;
		d->log_hidden = 0;
	}
	if (d->log_count >= LOG_BURST) {
		d->log_hidden++;
		return;
	}
	d->log_count++;
	if (err == -ENOENT)
		fl_pr_debug("debuginfod: %s: not found (or the transfer broke off)\n", hex);
	else if (err == -EFBIG)
		fl_pr_debug("debuginfod: %s: larger than a whole budget (%" PRIu64 " bytes)\n", hex,
			    d->max_bytes);
	else
		fl_pr_debug("debuginfod: %s: %s\n", hex, strerror(-err));
}

/* What one fetch gave. */
struct result {
	int err; /* 0: fetched */
	char *path;
	uint64_t size;
	double t0, t1;
};

/* Asks libdebuginfod for one build-id, without the lock. */
static void fetch(struct fl_debuginfod *d, const uint8_t *id, size_t len, const char *hex,
		  struct result *r)
{
	time_t since = time(NULL);
	struct stat st;
	int fd;

	d->abort = GO_ON;
	d->progressed = false;
	r->path = NULL;
	r->size = 0;
	r->t0 = mono_now();
	fd = sym_debuginfod_find_debuginfo(d->client, id, (int)len, &r->path);
	r->t1 = mono_now();
	if (fd < 0) {
		r->err = fd;
	} else {
		/* The client opened it; only its size is read here. */
		if (fstat(fd, &st))
			r->err = -errno;
		else if (!S_ISREG(st.st_mode))
			r->err = -EINVAL;
		else
			r->err = 0;
		r->size = r->err ? 0 : (uint64_t)st.st_size;
		close(fd);
	}
	if (r->err) {
		free(r->path);
		r->path = NULL;
	}
	if (r->err && d->abort != GO_ON)
		drop_abort_mark(hex, since);
	if (!r->err)
		fl_pr_debug("debuginfod: %s: %" PRIu64 " bytes in %.2f s%s: %s\n", hex, r->size,
			    r->t1 - r->t0, d->progressed ? "" : " (cached)", r->path);
	else if (d->abort == GO_ON || d->abort == TOO_BIG)
		log_failure(d, hex, d->abort == TOO_BIG ? -EFBIG : r->err, r->t1);
	else if (d->abort != STOPPING)
		fl_pr_debug("debuginfod: %s: aborted over the budget\n", hex);
}

/* Records the end of the fetch of entry i, begun in budget epoch. Under lock. */
static void finish(struct fl_debuginfod *d, uint32_t i, uint64_t epoch, struct result *r)
{
	struct entry *e = &d->e[i];
	double from = r->t0 > d->epoch_start ? r->t0 : d->epoch_start;

	e->inflight = false;
	d->busy = false;
	d->seconds += r->t1 - r->t0;
	/* A file from the local cache cost no transfer: it is not charged. */
	if (d->progressed && r->t1 > from)
		d->secs_used += r->t1 - from;
	if (!r->err) {
		e->path = TAKE_PTR(r->path);
		set_state(d, i, FL_DEBUGINFOD_FETCHED);
		d->bytes += r->size;
		if (d->progressed) {
			d->files_used++;
			d->bytes_used += r->size;
		} else {
			d->cached++;
		}
	} else if (d->abort == STOPPING) {
		/* The object is going away: the lookup stays PENDING. */
	} else if (d->abort == OVER_TIME || d->abort == OVER_BYTES) {
		if (d->epoch != epoch) {
			/* A new budget began meanwhile: try again within it. */
			set_state(d, i, FL_DEBUGINFOD_PENDING);
			enqueue(d, i);
		} else {
			set_state(d, i, FL_DEBUGINFOD_SKIPPED);
		}
	} else {
		set_state(d, i, FL_DEBUGINFOD_FAILED);
		if (d->abort == TOO_BIG)
			d->last_error = -EFBIG;
		else if (r->err != -ENOENT)
			d->last_error = r->err;
	}
	bump_generation(d);
}

static void *worker(void *arg)
{
	struct fl_debuginfod *d = arg;

	pthread_mutex_lock(&d->lock);
	while (!atomic_load(&d->stop)) {
		uint8_t id[FL_DEBUGINFOD_MAX_ID];
		char hex[2 * FL_DEBUGINFOD_MAX_ID + 1];
		struct result r;
		uint64_t epoch;
		uint32_t i;
		size_t len;
		double now;

		if (d->head == NIL) {
			pthread_cond_wait(&d->work, &d->lock);
			continue;
		}
		now = mono_now();
		if (budget_spent(d, now)) {
			skip_queued(d);
			continue;
		}
		i = dequeue(d);
		len = d->e[i].len;
		memcpy(id, d->e[i].id, len);
		d->e[i].inflight = true;
		d->busy = true;
		d->cur = i;
		d->cur_start = now;
		epoch = d->epoch;
		/* A waiter now knows when the budget's time runs out. */
		pthread_cond_broadcast(&d->done);
		pthread_mutex_unlock(&d->lock);

		to_hex(id, len, hex);
		fetch(d, id, len, hex, &r);

		pthread_mutex_lock(&d->lock);
		finish(d, i, epoch, &r);
		free(r.path);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* ---- life cycle ---- */

void fl_debuginfod__free(struct fl_debuginfod *d)
{
	uint32_t i;

	if (!d)
		return;
	if (d->started) {
		pthread_mutex_lock(&d->lock);
		atomic_store(&d->stop, true);
		pthread_cond_broadcast(&d->work);
		pthread_mutex_unlock(&d->lock);
		pthread_join(d->thread, NULL);
	}
	if (d->client)
		sym_debuginfod_end(d->client);
	for (i = 0; i < d->n; i++)
		free(d->e[i].path);
	free(d->e);
	free(d->slots);
	pthread_cond_destroy(&d->done);
	pthread_cond_destroy(&d->work);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

int fl_debuginfod__new(const struct fl_debuginfod_opts *opts, struct fl_debuginfod **ret)
{
	struct fl_debuginfod_opts o = {.sz = sizeof(o)};
	struct fl_debuginfod *d;
	pthread_condattr_t ca;
	sigset_t all, old;
	int e;

	if (!ret)
		return -EINVAL;
	if (opts) {
		if (opts->sz < sizeof(*opts))
			return -EINVAL;
		o = *opts;
	}
	if (!(o.max_seconds >= 0))
		return -EINVAL;
	if (!is_blank(o.urls)) {
		if (setenv(DEBUGINFOD_URLS_ENV_VAR, o.urls, 1))
			return -errno;
	} else if (is_blank(getenv(DEBUGINFOD_URLS_ENV_VAR))) {
		return -ENOENT;
	}
	e = fl_dynlib__load(&libdebuginfod, debuginfod_syms, ARRAY_SIZE(debuginfod_syms));
	if (e)
		return e;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->work, &ca);
	pthread_cond_init(&d->done, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&d->stop, false);
	atomic_init(&d->generation, 0);
	d->max_files = o.max_files ? o.max_files : FL_DEBUGINFOD_DEFAULT_FILES;
	d->max_bytes = o.max_bytes ? o.max_bytes : FL_DEBUGINFOD_DEFAULT_BYTES;
	d->max_seconds = o.max_seconds > 0 ? o.max_seconds : FL_DEBUGINFOD_DEFAULT_SECONDS;
	d->head = d->tail = NIL;
	d->epoch_start = mono_now();
	d->log_window = -LOG_WINDOW;

	d->cap = FIRST_CAP;
	d->nslots = 2 * FIRST_CAP;
	d->e = calloc(d->cap, sizeof(*d->e));
	d->slots = calloc(d->nslots, sizeof(*d->slots));
	if (!d->e || !d->slots) {
		e = -ENOMEM;
		goto out_free;
	}

	errno = 0;
	d->client = sym_debuginfod_begin();
	if (!d->client) {
		e = errno ? -errno : -ENOMEM;
		goto out_free;
	}
	sym_debuginfod_set_user_data(d->client, d);
	/* Also replaces the stderr progress bar DEBUGINFOD_PROGRESS would turn on. */
	sym_debuginfod_set_progressfn(d->client, on_progress);
	/* DEBUGINFOD_VERBOSE would make the client write to stderr: nothing is written. */
	sym_debuginfod_set_verbose_fd(d->client, -1);

	/*
	 * The worker (and libcurl's resolver threads, which inherit its mask)
	 * takes no signal: a daemon that blocks its signals for a signalfd
	 * after this still gets every one of them.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = -pthread_create(&d->thread, NULL, worker, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e)
		goto out_free;
	d->started = true;
	*ret = d;
	return 0;

out_free:
	fl_debuginfod__free(d);
	return e;
}

/* ---- the caller's side ---- */

enum fl_debuginfod_state fl_debuginfod__lookup(struct fl_debuginfod *d, const uint8_t *id,
					       size_t len, const char **path)
{
	enum fl_debuginfod_state st;
	uint32_t *slot, i;

	if (!d || !id || len < FL_DEBUGINFOD_MIN_ID || len > FL_DEBUGINFOD_MAX_ID)
		return FL_DEBUGINFOD_FAILED;
	pthread_mutex_lock(&d->lock);
	slot = find_slot(d, id, len);
	if (*slot) {
		const struct entry *e = &d->e[*slot - 1];

		st = (enum fl_debuginfod_state)e->state;
		if (st == FL_DEBUGINFOD_FETCHED && path)
			*path = e->path;
		pthread_mutex_unlock(&d->lock);
		return st;
	}
	st = budget_spent(d, mono_now()) ? FL_DEBUGINFOD_SKIPPED : FL_DEBUGINFOD_PENDING;
	i = d->n < FL_DEBUGINFOD_MAX_ENTRIES ? add_entry(d, slot, id, len, st) : NIL;
	if (i == NIL) {
		d->full++;
		st = FL_DEBUGINFOD_SKIPPED;
	} else if (st == FL_DEBUGINFOD_PENDING) {
		enqueue(d, i);
		pthread_cond_signal(&d->work);
	}
	pthread_mutex_unlock(&d->lock);
	return st;
}

unsigned fl_debuginfod__wait(struct fl_debuginfod *d, double seconds)
{
	double deadline;
	unsigned pending;

	if (!d)
		return 0;
	if (!(seconds >= 0))
		seconds = 0;
	deadline = mono_now() + seconds;
	pthread_mutex_lock(&d->lock);
	for (;;) {
		double now = mono_now(), wake = deadline;
		struct timespec ts;

		if (d->head == NIL && !d->busy)
			break;
		if (budget_spent(d, now)) {
			pending = d->count[FL_DEBUGINFOD_PENDING];
			/*
			 * The worker would do the same (the transfer in flight
			 * is aborted within about a second): the stats taken
			 * next already show it.
			 */
			if (d->busy && d->e[d->cur].state == FL_DEBUGINFOD_PENDING) {
				set_state(d, d->cur, FL_DEBUGINFOD_SKIPPED);
				bump_generation(d);
			}
			skip_queued(d);
			pthread_mutex_unlock(&d->lock);
			return pending;
		}
		if (now >= deadline)
			break;
		if (d->busy) {
			double t = now + (d->max_seconds - time_used(d, now));

			if (t < wake)
				wake = t;
		}
		to_timespec(wake, &ts);
		pthread_cond_timedwait(&d->done, &d->lock, &ts);
	}
	pending = d->count[FL_DEBUGINFOD_PENDING];
	pthread_mutex_unlock(&d->lock);
	return pending;
}

uint64_t fl_debuginfod__generation(const struct fl_debuginfod *d)
{
	return d ? atomic_load(&d->generation) : 0;
}

void fl_debuginfod__stats(const struct fl_debuginfod *d, struct fl_debuginfod_stats *st)
{
	struct fl_debuginfod *m = (struct fl_debuginfod *)d; /* the lock only */

	memset(st, 0, sizeof(*st));
	if (!d)
		return;
	pthread_mutex_lock(&m->lock);
	st->fetched = d->count[FL_DEBUGINFOD_FETCHED];
	st->failed = d->count[FL_DEBUGINFOD_FAILED];
	st->skipped = d->count[FL_DEBUGINFOD_SKIPPED];
	st->pending = d->count[FL_DEBUGINFOD_PENDING];
	st->bytes = d->bytes;
	st->seconds = d->seconds;
	if (d->busy)
		st->seconds += mono_now() - d->cur_start;
	st->cached = d->cached;
	st->full = d->full;
	st->last_error = d->last_error;
	pthread_mutex_unlock(&m->lock);
}

void fl_debuginfod__reset_budget(struct fl_debuginfod *d)
{
	bool again = false;
	uint32_t i;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->epoch++;
	d->epoch_start = mono_now();
	d->files_used = 0;
	d->bytes_used = 0;
	d->secs_used = 0;
	for (i = 0; i < d->n; i++) {
		if (d->e[i].state == FL_DEBUGINFOD_SKIPPED && !d->e[i].inflight) {
			set_state(d, i, FL_DEBUGINFOD_PENDING);
			enqueue(d, i);
			again = true;
		}
	}
	if (again)
		bump_generation(d);
	pthread_cond_signal(&d->work);
	pthread_mutex_unlock(&d->lock);
}

/* ---- the summary ---- */

static void human_bytes(uint64_t n, char *buf, size_t size)
{
	if (n < 1024)
		snprintf(buf, size, "%" PRIu64 " B", n);
	else if (n < ((uint64_t)1 << 20))
		snprintf(buf, size, "%.1f KiB", (double)n / 1024.0);
	else if (n < ((uint64_t)1 << 30))
		snprintf(buf, size, "%.1f MiB", (double)n / (1024.0 * 1024.0));
	else
		snprintf(buf, size, "%.1f GiB", (double)n / (1024.0 * 1024.0 * 1024.0));
}

/* snprintf at *pos, which stops at size - 1 when the text is cut. */
static void append(char *buf, size_t size, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t size, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*pos >= size - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *pos, size - *pos, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	*pos = (size_t)n >= size - *pos ? size - 1 : *pos + (size_t)n;
}

void fl_debuginfod__summary(const struct fl_debuginfod *d, char *buf, size_t size)
{
	struct fl_debuginfod_stats st;
	char got[32], cap[32];
	size_t pos = 0;

	if (!buf || !size)
		return;
	buf[0] = '\0';
	if (!d)
		return;
	fl_debuginfod__stats(d, &st);
	human_bytes(st.bytes, got, sizeof(got));
	human_bytes(d->max_bytes, cap, sizeof(cap));
	append(buf, size, &pos,
	       "debuginfod: %u file%s fetched (%s in %.1f s), %u failed, %u skipped over the "
	       "budget (%u file%s, %s, %g s)",
	       st.fetched, st.fetched == 1 ? "" : "s", got, st.seconds, st.failed, st.skipped,
	       d->max_files, d->max_files == 1 ? "" : "s", cap, d->max_seconds);
	if (st.pending)
		append(buf, size, &pos, ", %u pending", st.pending);
	if (st.full)
		append(buf, size, &pos, ", %u over the table's limit (%u build-ids)", st.full,
		       FL_DEBUGINFOD_MAX_ENTRIES);
	if (st.last_error)
		append(buf, size, &pos, "; last error: %s", strerror(-st.last_error));
}
