// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * flamed daemon: samples without end and writes a snapshot of the stacks
 * every interval, under systemd (Type=notify, watchdog) or in a terminal.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "flamed.h"
#include "flamed/common/cleanup.h"
#include "flamed/daemon/config.h"
#include "flamed/unwinding/unwind.h"
#include "flamed/formats/folded.h"
#include "flamed/formats/pprof.h"
#include "flamed/daemon/authfile.h"
#include "flamed/daemon/metrics.h"
#include "flamed/daemon/push.h"
#include "flamed/daemon/snapdir.h"
#include "flamed/common/log.h"
#include "flamed/profile/profile.h"
#include "flamed/sampling/sampler.h"
#include "flamed/symbols/symbolizer.h"
#include "flamed/symbols/debuginfod.h"
#include "session.h"

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

static const char daemon_usage[] =
	"usage: flamed daemon [--config FILE] [--KEY VALUE]... [-v]\n"
	"\n"
	"Samples the machine without end and writes a snapshot of its stacks every\n"
	"interval (folded stacks and/or an SVG) to the output directory; meant to run\n"
	"as the systemd service flamed.service. SIGHUP reloads the configuration,\n"
	"SIGUSR1 writes a snapshot now, SIGTERM and SIGINT write a last one and exit.\n"
	"\n"
	"  -c, --config FILE        configuration file (default " FL_CONFIG_DEFAULT_PATH ")\n"
	"      --check-config       check the configuration (file and options) and exit:\n"
	"                           0 if the daemon would take it, else 1 and why\n"
	"                           (systemctl reload runs it first)\n"
	"      --KEY VALUE          override a key of the file (--KEY=VALUE too; '-' for '_'):\n"
	"                           --frequency HZ, --interval DURATION, --call-graph "
	"kernel-dwarf|fp|dwarf[,SIZE],\n"
	"                           --targets all|PID,NAME,..., --idle BOOL, --kernel BOOL,\n"
	"                           --user BOOL, --output-dir DIR, --formats folded,svg,html,\n"
	"                           --keep-files N, --keep-age DURATION, --keep-bytes SIZE,\n"
	"                           --max-stacks N, --max-processes N, --max-symbol-cache SIZE,\n"
	"                           --max-unwind-tables SIZE\n"
	"                           (see flamed.conf(5))\n"
	"  -v, --verbose            debug messages\n"
	"  -h, --help               this help\n";

/* At most this many error lines a minute; the rest are counted and reported. */
#define ERRORS_PER_MINUTE 5

struct override {
	const char *key, *value;
};

struct daemon {
	const char *config_path;
	bool config_given;
	bool check_only; /* --check-config */
	struct override *overrides;
	size_t nr_overrides;
	struct fl_config cfg;
	struct session ses;
	int *pids; /* the session's targets: cfg.pids, then processes matching cfg.names */
	size_t nr_pids, cap_pids;

	int ep, sfd, tick_fd, snap_fd, wd_fd;
	uint64_t watchdog_usec;
	time_t interval_start;	      /* wall clock: the snapshot's name */
	double interval_mono;	      /* monotonic: its length */
	struct fl_sampler_stats last; /* the sampler's counters at the last snapshot */
	char last_name[64];
	uint64_t snapshots, failures;
	uint64_t over_max;	   /* the tracker's, at the last snapshot */
	uint64_t files_not_read;   /* the symbolizer's, at the last snapshot */
	uint64_t cfi_not_read;	   /* the unwinder's files over budget, at the last snapshot */
	uint64_t maps_over_budget; /* perf maps not read in full, at the last snapshot */
	bool dir_missing_logged;
	bool other_ns_logged; /* samples outside flamed's pid namespace: said once */
	/* push_url: the snapshots' way to the backend; metrics_listen: the endpoint. */
	struct fl_push *push;
	uint64_t push_error_seq; /* the push error last logged */
	uint64_t push_secret;	 /* a hash of the credential it was made with (0: none) */
	/* What the pushers freed at reloads counted: the metrics' totals go on from it. */
	uint64_t push_sent, push_failed, push_dropped;
	uint64_t tables_over_last, tables_over_total; /* the sampler's over-budget gauge, made a count */
	struct fl_metrics *metrics;
	/*
	 * The metrics' counters: totals since the daemon started. mv_base holds
	 * the sampler's counters of the sessions closed before (a reload
	 * restarts sampling), samples_profile the samples of every snapshot.
	 */
	struct fl_metrics_values mv, mv_base;
	/* Error rate limit. */
	double err_window;
	unsigned int err_in_window, err_suppressed;
	bool stop;
};

static void notify(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET (a path,
 * or '@' for the abstract namespace). Nothing when it is not set.
 */
static void notify(const char *fmt, ...)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char buf[1024];
	size_t len;
	socklen_t salen;
	va_list ap;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
		return;
	len = strlen(path);
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, buf, strlen(buf), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
		fl_pr_debug("daemon: sd_notify: %s\n", strerror(errno));
	close(fd);
}

static void log_error(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Errors that may repeat every interval (a full disk) are rate-limited. */
static void log_error(struct daemon *d, const char *fmt, ...)
{
	double now = now_s();
	va_list ap;

	if (now - d->err_window >= 60) {
		if (d->err_suppressed)
			msg("%u error messages suppressed in the last minute", d->err_suppressed);
		d->err_window = now;
		d->err_in_window = 0;
		d->err_suppressed = 0;
	}
	if (d->err_in_window >= ERRORS_PER_MINUTE) {
		d->err_suppressed++;
		return;
	}
	d->err_in_window++;
	fputs("flamed: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Appends to the string in buf (cut at size, always terminated). */
static void append(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void append(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

/* ---- configuration ---- */

/* The file (a missing default file means the defaults), then the command line. */
static int load_config(const struct daemon *d, struct fl_config *c, char *err, size_t len)
{
	_cleanup_(caps_restore) struct caps_saved caps = {};
	char e[512];
	int ret;

	fl_config__init(c);
	/* Read with the rights of whoever named it, not with file capabilities. */
	ret = caps_lower(&caps);
	if (ret) {
		snprintf(err, len, "cannot set aside flamed's capabilities to read %s: %s",
			 d->config_path, strerror(-ret));
		return ret;
	}
	ret = fl_config__load(c, d->config_path, err, len);
	caps_restore(&caps);
	if (ret == -ENOENT && !d->config_given)
		ret = 0;
	if (ret)
		return ret;
	for (size_t i = 0; i < d->nr_overrides; i++) {
		ret = fl_config__set(c, d->overrides[i].key, d->overrides[i].value, e, sizeof(e));
		if (ret) {
			snprintf(err, len, "--%s: %s", d->overrides[i].key, e);
			return ret;
		}
	}
	return fl_config__check(c, err, len);
}

static bool same_pids(const struct fl_config *a, const struct fl_config *b)
{
	if (a->nr_pids != b->nr_pids || a->nr_names != b->nr_names)
		return false;
	for (size_t i = 0; i < a->nr_pids; i++)
		if (a->pids[i] != b->pids[i])
			return false;
	for (size_t i = 0; i < a->nr_names; i++)
		if (strcmp(a->names[i], b->names[i]))
			return false;
	return true;
}

/* Whether going from a to b needs a new sampling session. */
/* Samples become pprof locations too: for pprof snapshots, or to push them. */
static bool daemon_wants_pprof(const struct fl_config *c)
{
	return c->fmt_pprof || c->push_url[0];
}

static bool sampling_changed(const struct fl_config *a, const struct fl_config *b)
{
	if (daemon_wants_pprof(a) != daemon_wants_pprof(b) || a->per_cgroup != b->per_cgroup ||
	    a->python != b->python ||
	    strcmp(a->cgroup, b->cgroup))
		return true;
	return a->frequency != b->frequency || a->dwarf != b->dwarf || a->kdwarf != b->kdwarf ||
	       a->max_unwind_tables != b->max_unwind_tables || a->stack_size != b->stack_size ||
	       a->all_targets != b->all_targets || !same_pids(a, b) || a->idle != b->idle ||
	       a->kernel != b->kernel || a->user != b->user || a->max_stacks != b->max_stacks ||
	       a->max_processes != b->max_processes || a->max_symbol_cache != b->max_symbol_cache;
}

/* ---- targets by name ---- */

static bool name_wanted(const struct fl_config *c, const char *comm)
{
	for (size_t i = 0; i < c->nr_names; i++)
		if (!strcmp(c->names[i], comm))
			return true;
	return false;
}

static int add_target(struct daemon *d, int pid)
{
	for (size_t i = 0; i < d->nr_pids; i++)
		if (d->pids[i] == pid)
			return 0;
	if (d->nr_pids == d->cap_pids) {
		size_t ncap = d->cap_pids ? d->cap_pids * 2 : 16;
		int *np = realloc(d->pids, ncap * sizeof(*np));

		if (!np)
			return -ENOMEM;
		d->pids = np;
		d->cap_pids = ncap;
	}
	d->pids[d->nr_pids++] = pid;
	return 0;
}

/* The processes running now whose name is one of the configured ones. */
static int scan_names(struct daemon *d)
{
	_cleanup_(closedirp) DIR *proc = opendir("/proc");
	struct dirent *de;

	if (!proc)
		return -errno;
	while ((de = readdir(proc))) {
		char path[64], comm[32];
		_cleanup_close_ int fd = -1;
		ssize_t n;
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			continue;
		n = read(fd, comm, sizeof(comm) - 1);
		if (n <= 0)
			continue;
		comm[n] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		if (name_wanted(&d->cfg, comm) && add_target(d, (int)pid))
			return -ENOMEM;
	}
	return 0;
}

/* A process exec'd a program of a wanted name: it becomes a target. */
static void on_exec(void *ctx, uint32_t pid, const char *comm)
{
	struct daemon *d = ctx;

	if (!d->ses.sampler || !name_wanted(&d->cfg, comm))
		return;
	/* Not in d->pids: open_session() finds it by its name again. */
	if (fl_sampler__add_pid(d->ses.sampler, (int)pid) ||
	    fl_tracker__add_pid(d->ses.tracker, (int)pid))
		fl_pr_debug("daemon: cannot add process %u (%s)\n", pid, comm);
}

/* ---- the session ---- */

static int open_session(struct daemon *d)
{
	const struct fl_config *c = &d->cfg;
	/*
	 * The config's cgroup is absolute under /sys/fs/cgroup; the session
	 * takes it as /proc/PID/cgroup shows it, under the v2 mount, which is
	 * /sys/fs/cgroup/unified on a hybrid system.
	 */
	const char *cg = c->cgroup, *cgroup[1];
	size_t root = strlen(FL_CONFIG_CGROUP_ROOT);

	if (!strncmp(cg, FL_CONFIG_CGROUP_ROOT "/unified/", root + 9))
		cg += root + 8;
	else if (!strncmp(cg, FL_CONFIG_CGROUP_ROOT, root) && cg[root] == '/')
		cg += root;
	cgroup[0] = cg;
	struct session_opts so = {
		.freq = c->frequency,
		.follow_children = c->nr_names > 0,
		.idle = c->idle,
		.kernel = c->kernel,
		.user = c->user,
		.dwarf = c->dwarf,
		.stack_size = c->stack_size,
		.kdwarf = c->kdwarf && !c->dwarf,
		.max_table_bytes = c->max_unwind_tables,
		.max_stacks = c->max_stacks,
		.max_processes = c->max_processes,
		.max_cache_bytes = c->max_symbol_cache,
		.snapshots = true,
		.pprof = daemon_wants_pprof(c),
		.per_cgroup = c->per_cgroup,
		.python = c->python,
		.cgroups = cgroup,
		.nr_cgroups = c->cgroup[0] ? 1 : 0,
		.on_exec = c->nr_names ? on_exec : NULL,
		.on_exec_ctx = d,
		/* On when DEBUGINFOD_URLS is set (Environment= in a drop-in); never waited for. */
		.debuginfod = true,
	};
	int err;

	d->nr_pids = 0;
	for (size_t i = 0; i < c->nr_pids; i++)
		if (add_target(d, c->pids[i]))
			return -ENOMEM;
	if (c->nr_names && scan_names(d))
		return -ENOMEM;
	if (!c->all_targets) {
		/* None running yet: a pid no process has (0 is the idle task) keeps it empty. */
		static const int nobody = INT_MAX;

		so.pids = d->nr_pids ? d->pids : &nobody;
		so.nr_pids = d->nr_pids ? d->nr_pids : 1;
	}
	if (session_check_freq(c->frequency))
		return -EINVAL;
	err = session_open(&d->ses, &so);
	if (!err)
		err = session_watch(&d->ses, d->ep);
	if (!err)
		err = session_start(&d->ses);
	if (!err && fl_sampler__stats(d->ses.sampler, &d->last))
		memset(&d->last, 0, sizeof(d->last));
	/* A new tracker and symbolizer count from 0. */
	d->over_max = 0;
	d->files_not_read = 0;
	d->cfi_not_read = 0;
	d->maps_over_budget = 0;
	return err;
}

static void sampler_values(struct daemon *d, struct fl_metrics_values *v, bool into_base);

static void close_session(struct daemon *d)
{
	struct fl_metrics_values v = d->mv;

	/* What it counted stays in the metrics' totals. */
	if (d->ses.sampler)
		sampler_values(d, &v, true);
	/* Its fds leave the epoll set as they are closed. */
	session_close(&d->ses);
}

/* ---- exporters: push and metrics ---- */

/* Whether a and b push the same way (else the pusher is made again). */
static bool push_changed(const struct fl_config *a, const struct fl_config *b)
{
	if (strcmp(a->push_url, b->push_url) || strcmp(a->push_auth_file, b->push_auth_file) ||
	    strcmp(a->output_dir, b->output_dir) ||
	    strcmp(a->push_name, b->push_name) || a->push_timeout_ns != b->push_timeout_ns ||
	    a->push_spool_bytes != b->push_spool_bytes || a->push_tls_verify != b->push_tls_verify ||
	    a->nr_push_labels != b->nr_push_labels)
		return true;
	for (size_t i = 0; i < a->nr_push_labels; i++)
		if (strcmp(a->push_labels[i].key, b->push_labels[i].key) ||
		    strcmp(a->push_labels[i].value, b->push_labels[i].value))
			return true;
	return false;
}

static int open_output_dir(const char *dir, char *why, size_t whylen);

/*
 * The pusher c asks for (*ret NULL when it asks for none): its spool is
 * OUTPUT_DIR/spool, the credential is read now. Says why it cannot in err.
 */
/* FNV-1a of the credential: whether a reload brought another one, without keeping it. */
static uint64_t secret_hash(const char *secret)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; secret && *secret; secret++)
		h = (h ^ (unsigned char)*secret) * 0x100000001b3ull;
	return secret ? h : 0;
}

/* The hash of c's credential now (0: none, or unreadable: push_open() will say why). */
static uint64_t push_secret_of(const struct fl_config *c)
{
	char *secret = NULL;
	uint64_t h;

	if (!c->push_url[0] || !c->push_auth_file[0] ||
	    fl_authfile__read(c->push_auth_file, 0, &secret, NULL, 0))
		return 0;
	h = secret_hash(secret);
	fl_authfile__free(secret);
	return h;
}

static int push_open(const struct fl_config *c, struct fl_push **ret, uint64_t *hash, char *err,
		     size_t errlen)
{
	_cleanup_close_ int dfd = -1, spool = -1;
	char labels[FL_CONFIG_MAX_LABELS * (2 * FL_CONFIG_LABEL_MAX + 2)], why[PATH_MAX + 160];
	char *secret = NULL;
	size_t n = 0;
	int e;

	*ret = NULL;
	if (!c->push_url[0])
		return 0;
	labels[0] = '\0';
	for (size_t i = 0; i < c->nr_push_labels; i++)
		n += (size_t)snprintf(labels + n, sizeof(labels) - n, "%s%s=%s", i ? "," : "",
				      c->push_labels[i].key, c->push_labels[i].value);
	if (c->push_auth_file[0]) {
		e = fl_authfile__read(c->push_auth_file, 0, &secret, err, errlen);
		if (e)
			return e;
	}
	struct fl_push_opts po = {
		.sz = sizeof(po),
		.url = c->push_url,
		.auth = secret,
		.app_name = c->push_name,
		.labels = c->nr_push_labels ? labels : NULL,
		.timeout_s = (double)c->push_timeout_ns / 1e9,
		.tls_verify = c->push_tls_verify,
		.spool_max_bytes = c->push_spool_bytes,
	};
	e = fl_push__check_opts(&po, err, errlen);
	if (e)
		goto out;
	/* The spool: OUTPUT_DIR/spool, root's and no one else's, as the directory is. */
	dfd = open_output_dir(c->output_dir, why, sizeof(why));
	if (dfd < 0) {
		e = dfd;
		snprintf(err, errlen, "push: cannot use the output directory %.256s: %.256s", c->output_dir,
			 why[0] ? why : strerror(-e));
		goto out;
	}
	if (mkdirat(dfd, "spool", 0700) < 0 && errno != EEXIST) {
		e = -errno;
		snprintf(err, errlen, "push: cannot make %.256s/spool: %s", c->output_dir, strerror(-e));
		goto out;
	}
	spool = openat(dfd, "spool", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (spool < 0) {
		e = -errno;
		snprintf(err, errlen, "push: cannot open %.256s/spool: %s", c->output_dir, strerror(-e));
		goto out;
	}
	po.spool_dir_fd = spool;
	e = fl_push__new(&po, ret);
	*hash = secret_hash(secret);
	if (e == -EPERM)
		snprintf(err, errlen,
			 "push: %.256s/spool is not root's alone (chown root and chmod 700 it, or remove it)",
			 c->output_dir);
	else if (e == -ELIBACC)
		snprintf(err, errlen, "push: cannot load %s", fl_push__lib_error());
	else if (e)
		snprintf(err, errlen, "push: cannot start: %s", strerror(-e));
out:
	fl_authfile__free(secret);
	return e;
}

/* Sends the profile of the interval [from, until) on its way (spooled, never waited for). */
static void push_snapshot(struct daemon *d, time_t from, time_t until)
{
	struct fl_push_stats st;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int e;

	if (!d->push || !d->ses.pprof)
		return;
	/* A clock stepped back must not make the interval end before it began. */
	if (until < from)
		until = from;
	f = open_memstream(&buf, &len);
	e = f ? fl_pprof__write(d->ses.pprof, f) : -ENOMEM;
	if (f && fclose(f) && !e)
		e = -ENOMEM;
	if (!e)
		e = fl_push__enqueue(d->push, buf, len, from, until, d->cfg.frequency);
	free(buf);
	if (e)
		log_error(d, "push: cannot spool the snapshot: %s", strerror(-e));
	fl_push__stats(d->push, &st);
	if (st.last_error_seq != d->push_error_seq) {
		d->push_error_seq = st.last_error_seq;
		log_error(d, "push to %s: %s (%llu snapshots waiting, %llu bytes spooled, %llu dropped)",
			  d->cfg.push_url, st.last_error, (unsigned long long)st.spooled_files,
			  (unsigned long long)st.spool_bytes, (unsigned long long)st.dropped);
	}
}

/* The sampler's counters of the running session, added to those of the sessions before. */
static void sampler_values(struct daemon *d, struct fl_metrics_values *v, bool into_base)
{
	struct fl_metrics_values *b = &d->mv_base;
	struct fl_sampler_stats ss = {};
	struct fl_tracker_stats ts = {};
	struct fl_symbolizer_cache_stats cs = {};
	struct fl_symbolizer_jit_stats js = {};

	if (d->ses.sampler && fl_sampler__stats(d->ses.sampler, &ss))
		memset(&ss, 0, sizeof(ss));
	if (d->ses.tracker)
		fl_tracker__stats(d->ses.tracker, &ts);
	if (d->ses.symbolizer) {
		fl_symbolizer__cache_stats(d->ses.symbolizer, &cs);
		fl_symbolizer__jit_stats(d->ses.symbolizer, &js);
	}
	v->samples_idle = b->samples_idle + ss.idle;
	v->samples_other_process = b->samples_other_process + ss.filtered;
	v->lost[FL_METRICS_LOST_RING_FULL] = b->lost[FL_METRICS_LOST_RING_FULL] + ss.lost;
	v->lost[FL_METRICS_LOST_COPY_FULL] = b->lost[FL_METRICS_LOST_COPY_FULL] + ss.uw_copy_full;
	v->lost[FL_METRICS_LOST_PID_NAMESPACE] =
		b->lost[FL_METRICS_LOST_PID_NAMESPACE] + ss.other_ns;
	v->unwind[FL_METRICS_UNWIND_COMPLETE] =
		b->unwind[FL_METRICS_UNWIND_COMPLETE] + ss.unwind_complete + ss.uw_complete;
	v->unwind[FL_METRICS_UNWIND_TRUNCATED] =
		b->unwind[FL_METRICS_UNWIND_TRUNCATED] + ss.unwind_truncated + ss.uw_truncated;
	v->unwind[FL_METRICS_UNWIND_STOPPED] = b->unwind[FL_METRICS_UNWIND_STOPPED] + ss.uw_stopped;
	v->unwind[FL_METRICS_UNWIND_FAILED] = b->unwind[FL_METRICS_UNWIND_FAILED] + ss.unwind_failed;
	v->throttled = b->throttled + ss.throttled;
	v->caps_hit[FL_METRICS_CAP_MAX_STACKS] = b->caps_hit[FL_METRICS_CAP_MAX_STACKS] + ss.map_full;
	v->caps_hit[FL_METRICS_CAP_MAX_PROCESSES] =
		b->caps_hit[FL_METRICS_CAP_MAX_PROCESSES] + ts.over_max;
	v->caps_hit[FL_METRICS_CAP_MAX_SYMBOL_CACHE] =
		b->caps_hit[FL_METRICS_CAP_MAX_SYMBOL_CACHE] + cs.files_not_read;
	/* Files over the budget now (a table unloaded leaves it): each rise counts. */
	if (ss.tables_over_budget > d->tables_over_last)
		d->tables_over_total += ss.tables_over_budget - d->tables_over_last;
	d->tables_over_last = into_base ? 0 : ss.tables_over_budget;
	v->caps_hit[FL_METRICS_CAP_MAX_UNWIND_TABLES] = d->tables_over_total;
	v->caps_hit[FL_METRICS_CAP_PERF_MAPS] = b->caps_hit[FL_METRICS_CAP_PERF_MAPS] + js.over_budget;
	if (into_base) {
		/* The session is about to close: what it counted stays in the totals. */
		struct fl_metrics_values keep = *v;

		*b = keep;
	}
}

/* Hands the metrics their current values (every tick, and after each snapshot). */
static void metrics_update(struct daemon *d)
{
	struct fl_push_stats st;

	if (!d->metrics)
		return;
	sampler_values(d, &d->mv, false);
	memset(&st, 0, sizeof(st));
	if (d->push)
		fl_push__stats(d->push, &st);
	d->mv.push_ok = d->push_sent + st.sent;
	d->mv.push_failed = d->push_failed + st.failed_attempts + st.refused;
	d->mv.push_spool_bytes = st.spool_bytes;
	d->mv.push_spool_dropped = d->push_dropped + st.dropped;
	fl_metrics__update(d->metrics, &d->mv);
}

/*
 * Whether flamed has a network namespace of its own (systemd's
 * PrivateNetwork=yes, the shipped unit's): an endpoint there is reachable
 * from nowhere else, a backend unreachable.
 */
static bool own_netns(void)
{
	struct stat self, init;

	return !stat("/proc/self/ns/net", &self) && !stat("/proc/1/ns/net", &init) &&
	       self.st_ino != init.st_ino;
}

/* Says once why the exporters c asks for may not reach anyone. */
static void warn_netns(const struct fl_config *c)
{
	if ((c->metrics_listen[0] || c->push_url[0]) && own_netns())
		msg("warning: flamed runs in a network namespace of its own (PrivateNetwork=yes in "
		    "its unit): %s%s%s reach%s nothing outside it; allow the network in a drop-in "
		    "(flamed.conf(5), NETWORK)",
		    c->metrics_listen[0] ? "metrics_listen" : "",
		    c->metrics_listen[0] && c->push_url[0] ? " and " : "",
		    c->push_url[0] ? "push_url" : "",
		    c->metrics_listen[0] && c->push_url[0] ? "" : "es");
}

/* The endpoint c asks for (*ret NULL for none). Says why it cannot in err. */
static int metrics_open(const struct fl_config *c, struct fl_metrics **ret, char *err, size_t len)
{
	struct fl_metrics_opts mo = {
		.sz = sizeof(mo), .listen = c->metrics_listen, .version = FLAMED_VERSION};
	int e;

	*ret = NULL;
	if (!c->metrics_listen[0])
		return 0;
	e = fl_metrics__new(&mo, ret);
	if (e == -ELIBACC)
		snprintf(err, len, "metrics_listen = %s: cannot load %s", c->metrics_listen,
			 fl_metrics__lib_error());
	else if (e)
		snprintf(err, len, "metrics_listen = %s: cannot listen: %s%s", c->metrics_listen,
			 strerror(-e),
			 e == -EADDRINUSE ? " (another port, or stop what uses it)" : "");
	return e;
}

/* Frees the pusher, its counts kept in the daemon's totals. */
static void push_close(struct daemon *d)
{
	struct fl_push_stats st;

	if (!d->push)
		return;
	fl_push__stats(d->push, &st);
	d->push_sent += st.sent;
	d->push_failed += st.failed_attempts + st.refused;
	d->push_dropped += st.dropped;
	fl_push__free(d->push);
	d->push = NULL;
}

/*
 * Makes d's exporters those of to instead of from's: the old pusher is
 * stopped before the new one starts (one sender for one spool, nothing sent
 * twice), the old endpoint lets go of its port before the new one binds.
 * On failure, err says why and the exporters of from are back.
 */
static int switch_exporters(struct daemon *d, const struct fl_config *from,
			    const struct fl_config *to, char *err, size_t len)
{
	uint64_t secret = push_secret_of(to);
	bool np = push_changed(from, to) || (to->push_url[0] && secret != d->push_secret);
	bool nm = strcmp(from->metrics_listen, to->metrics_listen) != 0;
	char e2[600];
	int e = 0;

	if (nm) {
		fl_metrics__free(d->metrics);
		d->metrics = NULL;
		e = metrics_open(to, &d->metrics, err, len);
	}
	if (!e && np) {
		push_close(d);
		e = push_open(to, &d->push, &d->push_secret, err, len);
		d->push_error_seq = 0;
	}
	if (!e)
		return 0;
	if (nm) {
		fl_metrics__free(d->metrics);
		d->metrics = NULL;
		if (metrics_open(from, &d->metrics, e2, sizeof(e2)))
			log_error(d, "the old metrics endpoint cannot come back either: %s", e2);
	}
	if (np && !d->push && push_open(from, &d->push, &d->push_secret, e2, sizeof(e2)))
		log_error(d, "the old push settings cannot come back either: %s", e2);
	return e;
}

/* ---- snapshots ---- */

/* The formats a snapshot is written in, by their file name's extension. */
enum snap_format { SNAP_FOLDED, SNAP_SVG, SNAP_PPROF, SNAP_HTML, SNAP__MAX };
static const char *const snap_ext[SNAP__MAX] = {"folded", "svg", "pb.gz", "html"};
static const unsigned int snap_bit[SNAP__MAX] = {FL_SNAP_FOLDED, FL_SNAP_SVG, FL_SNAP_PPROF,
						 FL_SNAP_HTML};

static bool snap_wanted(const struct fl_config *c, enum snap_format f)
{
	switch (f) {
	case SNAP_FOLDED:
		return c->fmt_folded;
	case SNAP_SVG:
		return c->fmt_svg;
	case SNAP_HTML:
		return c->fmt_html;
	default:
		return c->fmt_pprof;
	}
}

/*
 * The output directory, created (with its parents, 0755) if missing, for
 * snapshots, latest.* links and retention, all relative to its fd: walked
 * without following a symlink someone else could have planted, and refused
 * unless it belongs to us (or root) and neither its group nor others may
 * write it, so that nobody else can put, swap or read-ahead anything in it.
 * Returns an fd or -errno; *why says what is wrong with it.
 */
static int open_output_dir(const char *dir, char *why, size_t whylen)
{
	struct fl_outpath_opts opts = {
		.sz = sizeof(opts), .euid = geteuid(), .dir = true, .mkdir_mode = 0755};
	_cleanup_(caps_restore) struct caps_saved caps = {};
	struct fl_outpath o;
	int fd, err;

	why[0] = '\0';
	/* Walked with the rights of whoever configured it, not with file capabilities. */
	err = caps_lower(&caps);
	if (err) {
		snprintf(why, whylen, "cannot set aside flamed's capabilities: %s", strerror(-err));
		return err;
	}
	err = fl_outpath__resolve(&o, dir, &opts);
	if (err) {
		if (o.problem == FL_OUTPATH_LINK)
			snprintf(why, whylen,
				 "%s is a symlink of uid %u in a directory others can write",
				 o.where, (unsigned)o.owner);
		else if (strcmp(o.where, dir))
			snprintf(why, whylen, "%s: %s", o.where, strerror(-err));
		fl_outpath__fini(&o);
		return err;
	}
	if (!fl_outpath__dir_private(&o.st, opts.euid)) {
		snprintf(why, whylen,
			 "it belongs to uid %u with mode %04o: it must be root's (or "
			 "flamed's) and writable by no one else",
			 (unsigned)o.st.st_uid, (unsigned)(o.st.st_mode & 07777));
		fl_outpath__fini(&o);
		return -EPERM;
	}
	if (o.created)
		msg("created the output directory %s", dir);
	/* O_PATH is not enough to list and fsync it. */
	fd = openat(o.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	err = -errno;
	fl_outpath__fini(&o);
	return fd >= 0 ? fd : err;
}

/* A listing of the directory dfd (which stays ours), or NULL. */
static DIR *list_dir(int dfd)
{
	int fd = dup(dfd);
	DIR *dir;

	if (fd < 0)
		return NULL;
	dir = fdopendir(fd);
	if (!dir)
		close(fd);
	return dir;
}

/* Removes temporary files a killed daemon left (only with the named-temp fallback). */
static void remove_stale_temps(int dfd)
{
	_cleanup_(closedirp) DIR *dir = list_dir(dfd);
	struct dirent *de;

	if (!dir)
		return;
	while ((de = readdir(dir)))
		if (!strncmp(de->d_name, ".tmp-", 5) || !strncmp(de->d_name, ".latest.", 8))
			unlinkat(dfd, de->d_name, 0);
}

/* Writes what fn writes into the unfinished file. Returns 0 or -errno. */
static int pending_write(struct fl_outfile *pf, int (*fn)(void *ctx, FILE *f), void *ctx)
{
	int fd = dup(pf->fd);
	FILE *f;
	int err;

	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	errno = 0;
	err = fn(ctx, f);
	/* A writer reports a failed write as -EIO; errno says why (ENOSPC, EDQUOT). */
	if (err == -EIO && errno)
		err = -errno;
	if (fflush(f) && (!err || err == -EIO))
		err = -errno;
	if (ferror(f) && !err)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

struct snap_ctx {
	struct daemon *d;
	const struct fl_profile *p;
	const struct fl_pprof *pp;
	const char *caveats;
	const char *title;
};

static int write_folded_cb(void *ctx, FILE *f)
{
	const struct snap_ctx *c = ctx;

	return fl_folded__write(c->p, f);
}

static int write_pprof_cb(void *ctx, FILE *f)
{
	const struct snap_ctx *c = ctx;

	return fl_pprof__write(c->pp, f);
}

static int write_graph(const struct snap_ctx *c, bool html, FILE *f)
{
	struct svg_args sa;

	svg_args_init(&sa);
	sa.svg.title = c->title;
	sa.html = html;
	return write_profile_svg(c->p, &sa, "flamed daemon", c->caveats, f);
}

static int write_svg_cb(void *ctx, FILE *f)
{
	return write_graph(ctx, false, f);
}

static int write_html_cb(void *ctx, FILE *f)
{
	return write_graph(ctx, true, f);
}

/* Points latest.EXT at name (relative), replacing the link in one rename. */
static int point_latest(int dfd, const char *name, const char *ext)
{
	char link[32], tmp[40];

	snprintf(link, sizeof(link), "latest.%s", ext);
	snprintf(tmp, sizeof(tmp), ".latest.%s.%d", ext, (int)getpid());
	unlinkat(dfd, tmp, 0);
	if (symlinkat(name, dfd, tmp) < 0)
		return -errno;
	if (renameat(dfd, tmp, dfd, link) < 0) {
		int err = -errno;

		unlinkat(dfd, tmp, 0);
		return err;
	}
	return 0;
}

struct snap_file {
	char base[64];
	time_t start;
	unsigned int seq;
	uint64_t bytes;
	bool has[SNAP__MAX];
};

static int cmp_snap(const void *a, const void *b)
{
	const struct snap_file *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void delete_snapshot(int dfd, const struct snap_file *s)
{
	char name[96];

	for (int f = 0; f < SNAP__MAX; f++) {
		if (!s->has[f])
			continue;
		snprintf(name, sizeof(name), "%s.%s", s->base, snap_ext[f]);
		unlinkat(dfd, name, 0);
	}
	fl_pr_debug("daemon: retention: deleted %s\n", s->base);
}

/*
 * Deletes the oldest snapshots until keep_files, keep_age and keep_bytes
 * hold. Only files named as snapshots are looked at; newest, the one just
 * written, is never deleted (whatever the clock did).
 */
static void retention(struct daemon *d, int dfd, const char *newest)
{
	const struct fl_config *c = &d->cfg;
	_cleanup_(closedirp) DIR *dir = NULL;
	_cleanup_free_ struct snap_file *snaps = NULL;
	size_t n = 0, cap = 0, first = 0;
	bool kept_newest = false;
	uint64_t total = 0;
	struct dirent *de;
	time_t now = time(NULL);

	if (!c->keep_files && !c->keep_age_ns && !c->keep_bytes)
		return;
	dir = list_dir(dfd);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		struct snap_file *s = NULL;
		struct fl_snapshot name;
		unsigned int fmt;
		const char *base = name.base;
		struct stat st;

		if (!fl_snapdir__parse_name(de->d_name, &name, &fmt))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		for (size_t i = 0; i < n && !s; i++)
			if (!strcmp(snaps[i].base, base))
				s = &snaps[i];
		if (!s) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct snap_file *ns = realloc(snaps, ncap * sizeof(*ns));

				if (!ns)
					return;
				snaps = ns;
				cap = ncap;
			}
			s = &snaps[n++];
			memset(s, 0, sizeof(*s));
			snprintf(s->base, sizeof(s->base), "%s", base);
			s->start = (time_t)(name.start_ns / 1000000000);
			s->seq = name.seq;
		}
		for (int f = 0; f < SNAP__MAX; f++)
			if (snap_bit[f] == fmt)
				s->has[f] = true;
		s->bytes += (uint64_t)st.st_size;
		total += (uint64_t)st.st_size;
	}
	if (n < 2)
		return;
	qsort(snaps, n, sizeof(*snaps), cmp_snap);
	for (; first < n; first++) {
		const struct snap_file *s = &snaps[first];

		if (!strcmp(s->base, newest)) {
			kept_newest = true;
			continue;
		}
		bool old =
			c->keep_age_ns && (double)(now - s->start) * 1e9 > (double)c->keep_age_ns;
		bool many = c->keep_files && n - first + kept_newest > c->keep_files;
		bool big = c->keep_bytes && total > c->keep_bytes;

		if (!old && !many && !big)
			break;
		delete_snapshot(dfd, s);
		total -= s->bytes;
	}
	if (c->keep_bytes && total > c->keep_bytes)
		log_error(d,
			  "keep_bytes = %llu is smaller than the newest snapshot (%llu bytes): "
			  "it is kept",
			  (unsigned long long)c->keep_bytes, (unsigned long long)total);
}

/*
 * Writes the profile of the interval: every format to a temporary file
 * first, then under the final names, so that a failure (a full disk)
 * leaves no file of this snapshot and its samples are written with the
 * next one. Returns 0 or -errno.
 */
static int write_snapshot(struct daemon *d, const struct fl_profile *p, const char *caveats,
			  char *name, size_t namelen, char *why, size_t whylen)
{
	const struct fl_config *c = &d->cfg;
	struct fl_outfile pf[SNAP__MAX] = {{.fd = -1}, {.fd = -1}, {.fd = -1}, {.fd = -1}};
	char stamp[32], title[128];
	struct snap_ctx sc = {
		.d = d, .p = p, .pp = d->ses.pprof, .caveats = caveats, .title = title};
	static int (*const write_cb[SNAP__MAX])(void *, FILE *) = {
		write_folded_cb, write_svg_cb, write_pprof_cb, write_html_cb};
	struct tm tm;
	int dfd, err = 0;
	size_t nf = 0;

	gmtime_r(&d->interval_start, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H-%M-%SZ", &tm);
	snprintf(title, sizeof(title), "CPU flame graph, %.*s %.2d:%.2d:%.2d UTC", 10, stamp,
		 tm.tm_hour, tm.tm_min, tm.tm_sec);
	dfd = open_output_dir(d->cfg.output_dir, why, whylen);
	if (dfd < 0)
		return dfd;
	/*
	 * Two intervals may start in the same second (SIGUSR1): NAME, NAME-2,
	 * NAME-3... one past the highest taken, so that names sort in the order
	 * they were written even after retention deleted some.
	 */
	unsigned int last = 0;

	for (unsigned int seq = 1; seq <= last + 8; seq++) {
		if (seq == 1)
			snprintf(name, namelen, "%s", stamp);
		else
			snprintf(name, namelen, "%s-%u", stamp, seq);
		for (int f = 0; f < SNAP__MAX; f++) {
			struct stat st;
			char fn[96];

			snprintf(fn, sizeof(fn), "%s.%s", name, snap_ext[f]);
			if (!fstatat(dfd, fn, &st, AT_SYMLINK_NOFOLLOW))
				last = seq;
		}
	}
	if (last)
		snprintf(name, namelen, "%s-%u", stamp, last + 1);
	else
		snprintf(name, namelen, "%s", stamp);
	for (int f = 0; f < SNAP__MAX && !err; f++) {
		char fname[96];

		if (!snap_wanted(c, (enum snap_format)f))
			continue;
		snprintf(fname, sizeof(fname), "%s.%s", name, snap_ext[f]);
		err = fl_outfile__create(&pf[nf], dfd, fname, 0600, 0);
		if (!err)
			err = pending_write(&pf[nf], write_cb[f], &sc);
		nf++;
	}
	size_t committed = 0;

	for (; committed < nf && !err; committed++)
		err = fl_outfile__commit(&pf[committed], false);
	if (err) {
		/* All or nothing: the samples are written again with the next snapshot. */
		for (size_t i = 0; i + 1 < committed; i++)
			unlinkat(dfd, pf[i].name, 0);
		for (size_t i = 0; i < nf; i++)
			fl_outfile__close(&pf[i]);
		close(dfd);
		return err;
	}
	for (size_t i = 0; i < nf; i++) {
		/* The name is NAME.EXT, and NAME has no '.'. */
		const char *ext = strchr(pf[i].name, '.') + 1;
		int lerr;

		fl_outfile__close(&pf[i]);
		lerr = point_latest(dfd, pf[i].name, ext);
		if (lerr)
			log_error(d, "cannot point latest.%s at %s: %s", ext, pf[i].name,
				  strerror(-lerr));
	}
	fsync(dfd);
	retention(d, dfd, name);
	close(dfd);
	return 0;
}

/*
 * What a big program that came and went made flamed read (its symbols, its
 * CFI, a profile of its stacks) is freed once its files go unused, but
 * glibc keeps freed pages inside its heaps: they are given back, or the
 * daemon's RSS stays at its highest for good. Only when much is free (at
 * least 8 MiB, and a quarter of what is in use): under steady churn some
 * 4 MiB are free after a snapshot, and trimming them every interval only
 * to fault the pages in again the next costs CPU for nothing.
 */
#define TRIM_MIN_FREE ((size_t)8 << 20)

static void give_back_heap(void)
{
#ifdef __GLIBC__
	struct mallinfo2 mi = mallinfo2();
	bool trim = mi.fordblks >= TRIM_MIN_FREE && mi.fordblks >= mi.uordblks / 4;

	fl_pr_debug("heap: %.1f MiB in use, %.1f MiB free%s\n", (double)mi.uordblks / 1048576.0,
		    (double)mi.fordblks / 1048576.0, trim ? ": given back" : "");
	if (trim)
		malloc_trim(0);
#endif
}

/*
 * The snapshot: the stacks since the last one go into the profile, which
 * is written; on success a new interval starts, on failure the profile
 * stays and the next snapshot writes both intervals' samples.
 */
static void snapshot(struct daemon *d, const char *why)
{
	struct fl_sampler_stats ss = {};
	struct fl_tracker_stats ts;
	struct fl_profile *p = NULL;
	char name[64], caveats[512], files[32], dirwhy[PATH_MAX + 160];
	char n1[THOUSANDS_LEN], n2[THOUSANDS_LEN], n3[THOUSANDS_LEN];
	double t0 = now_s();
	time_t next_start = time(NULL); /* the next interval starts with this drain */
	uint64_t lost;
	int err;

	if (!d->ses.sampler)
		return;
	err = session_snapshot(&d->ses);
	/* Each snapshot period has the fetcher's budget anew; what it fetched names the next ones. */
	if (d->ses.debuginfod)
		fl_debuginfod__reset_budget(d->ses.debuginfod);
	if (err) {
		/* Only -ENOMEM: what was taken so far is in the profile, the rest is lost. */
		log_error(d, "snapshot: cannot collect the samples: %s", strerror(-err));
	}
	if (fl_sampler__stats(d->ses.sampler, &ss))
		ss = d->last;
	lost = (ss.lost - d->last.lost) + (ss.lost_records - d->last.lost_records);
	snprintf(caveats, sizeof(caveats),
		 "%s samples in %.0f s at %u Hz (%s); stacks lost: %s; idle samples "
		 "dropped: %s",
		 thousands(fl_profile__total(d->ses.profile), n1), t0 - d->interval_mono,
		 d->cfg.frequency, why, thousands(lost, n2), thousands(ss.idle - d->last.idle, n3));
	if (ss.hotplug.dead_ns > d->last.hotplug.dead_ns)
		append(caveats, sizeof(caveats), "; CPUs offline, not sampled: %.1f CPU-s",
		       (double)(ss.hotplug.dead_ns - d->last.hotplug.dead_ns) / 1e9);
	if (ss.other_ns > d->last.other_ns)
		append(caveats, sizeof(caveats),
		       "; samples outside flamed's pid namespace left out: %s",
		       thousands(ss.other_ns - d->last.other_ns, n1));
	if (d->ses.pprof)
		fl_pprof__set_time(d->ses.pprof, (int64_t)d->interval_start * 1000000000,
				   (int64_t)((t0 - d->interval_mono) * 1e9));
	err = write_snapshot(d, d->ses.profile, caveats, name, sizeof(name), dirwhy,
			     sizeof(dirwhy));
	if (err) {
		d->failures++;
		log_error(d,
			  "cannot write the snapshot to %s: %s; its %llu samples are kept for the "
			  "next one, sampling goes on",
			  d->cfg.output_dir, dirwhy[0] ? dirwhy : strerror(-err),
			  (unsigned long long)fl_profile__total(d->ses.profile));
		notify("STATUS=cannot write snapshots to %s: %s", d->cfg.output_dir,
		       strerror(-err));
		d->mv.snapshots_failed++;
		metrics_update(d);
		return;
	}
	/* Written: the backend gets it too (local files come first, whatever it does). */
	push_snapshot(d, d->interval_start, next_start);
	d->mv.samples_profile += fl_profile__total(d->ses.profile);
	d->mv.snapshots_written++;
	d->mv.snapshot_duration_s = now_s() - t0;
	d->mv.last_snapshot_time = (double)time(NULL);
	files[0] = '\0';
	for (int f = 0, n = 0; f < SNAP__MAX; f++)
		if (snap_wanted(&d->cfg, (enum snap_format)f))
			n += snprintf(files + n, sizeof(files) - (size_t)n, "%s%s", n ? ", " : "",
				      f == SNAP_PPROF ? "pprof" : snap_ext[f]);
	msg("snapshot %s (%s): %llu samples, %zu stacks, %llu lost, written in %.0f ms", name,
	    files, (unsigned long long)fl_profile__total(d->ses.profile),
	    fl_profile__nr_stacks(d->ses.profile), (unsigned long long)lost, (now_s() - t0) * 1e3);
	if (ss.throttled > d->last.throttled)
		msg("the kernel throttled sampling %llu times this interval "
		    "(kernel.perf_event_max_sample_rate, kernel.perf_cpu_time_max_percent): fewer "
		    "samples than frequency %u asks",
		    (unsigned long long)(ss.throttled - d->last.throttled), d->cfg.frequency);
	if (ss.hotplug.dead_ns > d->last.hotplug.dead_ns)
		msg("CPU hotplug: about %.1f CPU-seconds not sampled this interval, CPUs being "
		    "offline",
		    (double)(ss.hotplug.dead_ns - d->last.hotplug.dead_ns) / 1e9);
	if (ss.other_ns > d->last.other_ns && !d->other_ns_logged) {
		/* Once: in a container it is so every interval. */
		session_report_other_ns(ss.other_ns - d->last.other_ns);
		d->other_ns_logged = true;
	}
	if (ss.map_full > d->last.map_full)
		msg("max_stacks (%s%u a second) reached: %llu samples counted in user space this "
		    "interval",
		    d->cfg.max_stacks ? "" : "auto: ", ss.max_stacks,
		    (unsigned long long)(ss.map_full - d->last.map_full));
	fl_tracker__stats(d->ses.tracker, &ts);
	if (ts.over_max > d->over_max)
		msg("max_processes (%u) reached: %llu processes not tracked this interval (their "
		    "frames stay unnamed)",
		    d->cfg.max_processes, (unsigned long long)(ts.over_max - d->over_max));
	d->over_max = ts.over_max;
	{
		struct fl_symbolizer_cache_stats cs;
		struct fl_unwind_stats us = {0};
		uint64_t unread, cfi;

		fl_symbolizer__cache_stats(d->ses.symbolizer, &cs);
		if (d->ses.unwinder)
			fl_unwinder__stats(d->ses.unwinder, &us);
		unread = cs.files_not_read - d->files_not_read;
		cfi = us.files_over_budget - d->cfi_not_read;
		if (unread || cfi)
			msg("max_symbol_cache (%llu MiB) reached: this interval %llu files not "
			    "read "
			    "(their frames are named by file), the CFI of %llu not read (stacks "
			    "through them fail to unwind)",
			    (unsigned long long)(d->cfg.max_symbol_cache >> 20),
			    (unsigned long long)unread, (unsigned long long)cfi);
		d->files_not_read = cs.files_not_read;
		d->cfi_not_read = us.files_over_budget;
	}
	{
		struct fl_symbolizer_jit_stats js;

		fl_symbolizer__jit_stats(d->ses.symbolizer, &js);
		if (js.over_budget > d->maps_over_budget)
			msg("perf maps reached their cap, %llu MiB (1/%d of max_symbol_cache: "
			    "raise it): %llu not read in full this interval, %.1f MiB of perf "
			    "maps unread in all (their JIT code shows as [anon])",
			    (unsigned long long)(js.max_bytes >> 20), FL_SYM_JIT_SHARE,
			    (unsigned long long)(js.over_budget - d->maps_over_budget),
			    (double)js.bytes_over_budget / 1048576.0);
		d->maps_over_budget = js.over_budget;
	}
	notify("STATUS=last snapshot %s: %llu samples", name,
	       (unsigned long long)fl_profile__total(d->ses.profile));
	snprintf(d->last_name, sizeof(d->last_name), "%s", name);
	d->snapshots++;
	d->last = ss;
	d->interval_start = next_start;
	d->interval_mono = t0;
	metrics_update(d);
	if (session_take_profile(&d->ses, &p, NULL) == 0) {
		fl_profile__free(p);
		/* Files no process used for two intervals: the new fold holds no name yet. */
		fl_symbolizer__trim(d->ses.symbolizer);
		if (d->ses.unwinder)
			fl_unwinder__trim(d->ses.unwinder);
		give_back_heap();
	} else
		log_error(d, "out of memory starting a new profile: the next snapshot repeats "
			     "this one's samples");
}

/* ---- reload ---- */

static void reload(struct daemon *d)
{
	struct fl_config c;
	char err[600];
	uint64_t old_interval = d->cfg.interval_ns;
	bool restart;

	if (load_config(d, &c, err, sizeof(err))) {
		log_error(d, "configuration refused, keeping the old one: %s", err);
		notify("STATUS=configuration refused: %s", err);
		fl_config__fini(&c);
		return;
	}
	/* The exporters first: a backend or a port it cannot use refuses the whole file. */
	if (switch_exporters(d, &d->cfg, &c, err, sizeof(err))) {
		log_error(d, "configuration refused, keeping the old one: %s", err);
		notify("STATUS=configuration refused: %s", err);
		fl_config__fini(&c);
		metrics_update(d);
		return;
	}
	restart = sampling_changed(&d->cfg, &c);
	if (restart) {
		struct fl_profile *p = NULL;
		struct fl_pprof *pp = NULL;
		struct fl_config old = d->cfg;
		int e;

		/*
		 * Everything the old session sampled stays in the interval's
		 * profile; at another frequency, the samples before are written
		 * first (a pprof profile has one period).
		 */
		if (c.frequency != d->cfg.frequency)
			snapshot(d, "frequency changed");
		session_stop(&d->ses);
		e = session_drain(&d->ses);
		if (!e)
			e = session_take_profile(&d->ses, &p, &pp);
		if (e) {
			/* Sampling stopped: the new session must start anyway. */
			log_error(d, "the samples of this interval are lost: %s", strerror(-e));
			p = NULL;
			pp = NULL;
		}
		close_session(d);
		d->cfg = c; /* d->cfg owns c's lists now */
		e = open_session(d);
		if (e) {
			log_error(d,
				  "cannot sample with the new configuration (%s): back to the "
				  "old one",
				  strerror(-e));
			close_session(d);
			if (switch_exporters(d, &d->cfg, &old, err, sizeof(err)))
				log_error(d, "%s", err);
			fl_config__fini(&d->cfg);
			d->cfg = old;
			e = open_session(d);
			if (e) {
				msg("cannot sample with the old configuration either: %s",
				    strerror(-e));
				fl_profile__free(p);
				fl_pprof__free(pp);
				d->stop = true;
				return;
			}
		} else {
			fl_config__fini(&old);
		}
		if (p && session_set_profile(&d->ses, p, pp))
			fl_profile__free(p); /* -ENOMEM: those samples are lost */
		else if (!p)
			fl_pprof__free(pp);
		msg("configuration reloaded from %s: sampling restarted at %u Hz (%s)",
		    d->config_path, d->cfg.frequency, call_graph_name(&d->ses));
	} else {
		fl_config__fini(&d->cfg);
		d->cfg = c;
		msg("configuration reloaded from %s", d->config_path);
	}
	if (d->cfg.interval_ns != old_interval)
		timer_arm(d->snap_fd, (double)d->cfg.interval_ns / 1e9,
			  (double)d->cfg.interval_ns / 1e9);
	notify("STATUS=configuration reloaded; last snapshot %s",
	       d->last_name[0] ? d->last_name : "(none yet)");
	metrics_update(d);
}

/* ---- the loop ---- */

static void handle_signals(struct daemon *d)
{
	struct signalfd_siginfo si;

	while (read(d->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGHUP:
			reload(d);
			break;
		case SIGUSR1:
			snapshot(d, "SIGUSR1");
			/* A new interval starts: the schedule follows it. */
			timer_arm(d->snap_fd, (double)d->cfg.interval_ns / 1e9,
				  (double)d->cfg.interval_ns / 1e9);
			break;
		default: /* SIGTERM, SIGINT */
			d->stop = true;
			break;
		}
	}
}

static int run(struct daemon *d)
{
	struct epoll_event evs[16];
	uint64_t ticks;

	while (!d->stop) {
		int n = epoll_wait(d->ep, evs, ARRAY_SIZE(evs), -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n && !d->stop; i++) {
			enum tag tag = (enum tag)(evs[i].data.u64 >> 32);

			switch (tag) {
			case TAG_SIGNAL:
				handle_signals(d);
				break;
			case TAG_TICK:
				if (read(d->tick_fd, &ticks, sizeof(ticks)) < 0) {
					/* EAGAIN */
				}
				session_tick(&d->ses);
				metrics_update(d);
				if (d->ses.err) {
					log_error(d, "out of memory naming exited processes: %s",
						  strerror(-d->ses.err));
					d->ses.err = 0;
				}
				break;
			case TAG_SNAPSHOT:
				if (read(d->snap_fd, &ticks, sizeof(ticks)) < 0) {
					/* EAGAIN */
				}
				snapshot(d, "interval");
				break;
			case TAG_WATCHDOG:
				if (read(d->wd_fd, &ticks, sizeof(ticks)) < 0) {
					/* EAGAIN */
				}
				notify("WATCHDOG=1");
				break;
			case TAG_SAMPLER:
			case TAG_TRACKER:
				/* A session closed by a reload may leave a stale event. */
				if (d->ses.sampler)
					session_event(&d->ses, tag);
				break;
			case TAG_DURATION:
			case TAG_PIDFD:
				break;
			}
		}
	}
	return 0;
}

/* WATCHDOG_USEC, when it is meant for us (WATCHDOG_PID unset or ours). */
static uint64_t watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	unsigned long long v;
	char *end;

	if (!usec)
		return 0;
	if (pid && strtol(pid, NULL, 10) != getpid())
		return 0;
	errno = 0;
	v = strtoull(usec, &end, 10);
	if (errno || *end || v == 0)
		return 0;
	return v;
}

static int parse_daemon_args(int argc, char **argv, struct daemon *d)
{
	d->config_path = FL_CONFIG_DEFAULT_PATH;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *key, *value, *eq;
		char keybuf[64], e[512];
		struct fl_config probe;
		bool known = false;

		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			fputs(daemon_usage, stdout);
			return 1000;
		}
		if (!strcmp(arg, "-v") || !strcmp(arg, "--verbose")) {
			verbose = true;
			continue;
		}
		if (!strcmp(arg, "--check-config")) {
			d->check_only = true;
			continue;
		}
		if (!strcmp(arg, "-c") || !strcmp(arg, "--config") ||
		    !strncmp(arg, "--config=", 9)) {
			if (arg[1] != '-' || !arg[8]) {
				if (i + 1 >= argc) {
					msg("%s needs a file\n\n%s", arg, daemon_usage);
					return EXIT_USAGE + 1000;
				}
				d->config_path = argv[++i];
			} else {
				d->config_path = arg + 9;
			}
			d->config_given = true;
			continue;
		}
		if (strncmp(arg, "--", 2) || !arg[2]) {
			msg("unexpected argument '%s'\n\n%s", arg, daemon_usage);
			return EXIT_USAGE + 1000;
		}
		eq = strchr(arg, '=');
		if (eq) {
			snprintf(keybuf, sizeof(keybuf), "%.*s", (int)(eq - arg - 2), arg + 2);
			value = eq + 1;
		} else {
			snprintf(keybuf, sizeof(keybuf), "%s", arg + 2);
			value = i + 1 < argc ? argv[i + 1] : NULL;
		}
		for (size_t k = 0; (key = fl_config__key(k)); k++) {
			char alt[64];

			snprintf(alt, sizeof(alt), "%s", key);
			for (char *p = alt; *p; p++)
				if (*p == '_')
					*p = '-';
			if (!strcmp(keybuf, key) || !strcmp(keybuf, alt)) {
				known = true;
				break;
			}
		}
		if (!known) {
			msg("unknown option '%s' (the options are the keys of "
			    "flamed.conf(5))\n\n%s",
			    arg, daemon_usage);
			return EXIT_USAGE + 1000;
		}
		if (!value) {
			msg("--%s needs a value", keybuf);
			return EXIT_USAGE + 1000;
		}
		if (!eq)
			i++;
		/* Checked now, so that a typo is a usage error, not a refused reload later. */
		fl_config__init(&probe);
		if (fl_config__set(&probe, key, value, e, sizeof(e))) {
			fl_config__fini(&probe);
			msg("--%s: %s", keybuf, e);
			return EXIT_USAGE + 1000;
		}
		fl_config__fini(&probe);
		struct override *no = realloc(d->overrides, (d->nr_overrides + 1) * sizeof(*no));

		if (!no)
			return 1 + 1000;
		d->overrides = no;
		d->overrides[d->nr_overrides].key = key;
		d->overrides[d->nr_overrides].value = value;
		d->nr_overrides++;
	}
	return 0;
}

int cmd_daemon(int argc, char **argv)
{
	struct daemon d = {.ep = -1, .sfd = -1, .tick_fd = -1, .snap_fd = -1, .wd_fd = -1};
	char err[600], why[PATH_MAX + 160];
	sigset_t mask;
	int ret, e, dfd;

	ret = parse_daemon_args(argc, argv, &d);
	if (ret) {
		free(d.overrides);
		return ret - 1000;
	}
	if (verbose)
		fl_set_print(debug_print);
	/* Messages reach the journal line by line, as they are written. */
	setvbuf(stderr, NULL, _IOLBF, 0);
	ret = 1;
	if (load_config(&d, &d.cfg, err, sizeof(err))) {
		msg("%s%s", err,
		    d.check_only ? " (refused: a running daemon keeps its old one)" : "");
		goto out;
	}
	if (d.check_only) {
		if (access(d.config_path, F_OK) == 0)
			msg("configuration %s: OK", d.config_path);
		else
			msg("no %s: the defaults, OK", d.config_path);
		ret = 0;
		goto out;
	}
	if (check_nofile())
		goto out;
	signal(SIGPIPE, SIG_IGN);

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	d.ep = epoll_create1(EPOLL_CLOEXEC);
	d.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	d.tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d.snap_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	d.wd_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (d.ep < 0 || d.sfd < 0 || d.tick_fd < 0 || d.snap_fd < 0 || d.wd_fd < 0) {
		msg("cannot set up the event loop: %s", strerror(errno));
		goto out;
	}
	e = epoll_add(d.ep, d.sfd, TAG_SIGNAL, 0);
	if (!e)
		e = epoll_add(d.ep, d.tick_fd, TAG_TICK, 0);
	if (!e)
		e = epoll_add(d.ep, d.snap_fd, TAG_SNAPSHOT, 0);
	if (!e)
		e = epoll_add(d.ep, d.wd_fd, TAG_WATCHDOG, 0);
	if (e) {
		msg("cannot set up the event loop: %s", strerror(-e));
		goto out;
	}

	/* A port that cannot be had is a start-up error, before anything is made. */
	if (metrics_open(&d.cfg, &d.metrics, err, sizeof(err))) {
		msg("%s (in %s)", err, d.config_path);
		goto out;
	}
	/* The directory now: a wrong output_dir is a start-up error, not a log line an hour later. */
	dfd = open_output_dir(d.cfg.output_dir, why, sizeof(why));
	if (dfd < 0) {
		msg("cannot use the output directory %s: %s (output_dir in %s, or --output-dir)",
		    d.cfg.output_dir, why[0] ? why : strerror(-dfd), d.config_path);
		goto out;
	}
	remove_stale_temps(dfd);
	close(dfd);
	if (push_open(&d.cfg, &d.push, &d.push_secret, err, sizeof(err))) {
		msg("%s (in %s)", err, d.config_path);
		goto out;
	}
	if (!d.cfg.push_tls_verify && d.push)
		msg("warning: push_tls_verify = no: the backend's TLS certificate is not checked");
	warn_netns(&d.cfg);

	if (open_session(&d))
		goto out;
	d.interval_start = time(NULL);
	d.interval_mono = now_s();
	e = timer_arm(d.tick_fd, 1.0, 1.0);
	if (!e)
		e = timer_arm(d.snap_fd, (double)d.cfg.interval_ns / 1e9,
			      (double)d.cfg.interval_ns / 1e9);
	d.watchdog_usec = watchdog_usec();
	if (!e && d.watchdog_usec)
		e = timer_arm(d.wd_fd, (double)d.watchdog_usec / 2e6,
			      (double)d.watchdog_usec / 2e6);
	if (e) {
		msg("cannot set up the event loop: %s", strerror(-e));
		goto out;
	}
	msg("daemon started: %u Hz, %s stacks, %s, a snapshot every %.0f s to %s (%s backend)",
	    d.cfg.frequency, call_graph_name(&d.ses),
	    d.cfg.all_targets ? "every process" : "configured targets",
	    (double)d.cfg.interval_ns / 1e9, d.cfg.output_dir,
	    fl_sampler__backend(d.ses.sampler) == FL_SAMPLER_BPF ? "bpf" : "ring buffer");
	notify("READY=1\nSTATUS=sampling at %u Hz, first snapshot in %.0f s", d.cfg.frequency,
	       (double)d.cfg.interval_ns / 1e9);

	e = run(&d);
	if (e)
		msg("event loop failed: %s; writing a last snapshot", strerror(-e));
	notify("STOPPING=1\nSTATUS=writing a last snapshot");
	if (d.ses.sampler)
		snapshot(&d, "stopped");
	msg("daemon stopped after %llu snapshots (%llu failed writes)",
	    (unsigned long long)d.snapshots, (unsigned long long)d.failures);
	ret = e ? 1 : 0;

out:
	close_session(&d);
	/* After the last snapshot: it is spooled, and sent at the next start if not now. */
	push_close(&d);
	fl_metrics__free(d.metrics);
	fl_config__fini(&d.cfg);
	free(d.pids);
	free(d.overrides);
	for (size_t i = 0; i < 5; i++) {
		int fd = (int[]){d.ep, d.sfd, d.tick_fd, d.snap_fd, d.wd_fd}[i];

		if (fd >= 0)
			close(fd);
	}
	return ret;
}
