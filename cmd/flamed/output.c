// SPDX-License-Identifier: GPL-2.0-or-later
/* Output files of every subcommand: never through a name others planted, never half written. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed.h"
#include "flamed/common/cleanup.h"
#include "flamed/files/regfile.h"

#define CHOOSE_PRIVATE "choose a path in a directory only you can write"

/* "uid N (name)", for messages. */
static const char *user_name(uid_t uid, char *buf, size_t size)
{
	const struct passwd *pw = getpwuid(uid);

	snprintf(buf, size, "uid %u%s%s%s", (unsigned)uid, pw ? " (" : "", pw ? pw->pw_name : "",
		 pw ? ")" : "");
	return buf;
}

static const char *kind_name(const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return "a file";
	if (S_ISFIFO(st->st_mode))
		return "a FIFO";
	if (S_ISCHR(st->st_mode))
		return "a character device";
	if (S_ISBLK(st->st_mode))
		return "a block device";
	if (S_ISSOCK(st->st_mode))
		return "a socket";
	if (S_ISDIR(st->st_mode))
		return "a directory";
	return "not a file";
}

/* Says why fl_outpath__resolve() failed with err. Returns err. */
static int report_resolve(const struct output *o, int err)
{
	const struct fl_outpath *w = &o->where;
	bool same = !strcmp(w->where, o->path);
	char who[64];

	switch (w->problem) {
	case FL_OUTPATH_LINK:
		msg("refusing to write %s: %s is a symlink of %s in a directory others can write, "
		    "so it may lead anywhere (" CHOOSE_PRIVATE ")",
		    o->path, same ? "it" : w->where, user_name(w->owner, who, sizeof(who)));
		break;
	case FL_OUTPATH_PROC_LINK:
		msg("refusing to write %s: %s is a /proc link, not a path (give the file's path, "
		    "or /dev/fd/N for a descriptor flamed inherits)",
		    o->path, w->where);
		break;
	case FL_OUTPATH_LOOP:
		msg("cannot write %s: more than %d symbolic links (give the path they lead to)",
		    o->path, FL_OUTPATH_MAX_LINKS);
		break;
	default:
		if (err == -EISDIR)
			msg("cannot write %s: it is a directory (give a file name)", o->path);
		else if (same)
			msg("cannot write %s: %s (choose a writable path)", o->path,
			    strerror(-err));
		else
			msg("cannot write %s: %s: %s (choose a writable path)", o->path, w->where,
			    strerror(-err));
	}
	return err;
}

/* What was found at the name is not ours to replace or write into. Returns -EPERM. */
static int refuse_foreign(const struct output *o)
{
	char who[64];

	msg("refusing to write %s: it is %s of %s and others can write its directory (remove it, "
	    "or " CHOOSE_PRIVATE ")",
	    o->path, kind_name(&o->where.st), user_name(o->where.st.st_uid, who, sizeof(who)));
	return -EPERM;
}

/* Opens what the O_PATH fd holds with flags: the very file looked at, not a name. */
static int reopen(int path_fd, int flags)
{
	char proc[40];
	int fd;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path_fd);
	fd = open(proc, flags | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int open_stream(struct output *o, int fd)
{
	o->f = fdopen(fd, "w");
	if (!o->f) {
		close(fd);
		msg("out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* /dev/stdout, /dev/fd/N...: the descriptor the caller gave us, written as it is. */
static int open_fd(struct output *o)
{
	int n = o->where.fd, fl, fd;

	if (n == STDOUT_FILENO) {
		o->f = stdout;
		return 0;
	}
	fl = fcntl(n, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY) {
		msg("cannot write %s: descriptor %d is not open for writing", o->path, n);
		return -EBADF;
	}
	fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		msg("cannot write %s: %s", o->path, strerror(errno));
		return -errno;
	}
	return open_stream(o, fd);
}

/*
 * A FIFO or a character device is written in place, opened now: without
 * blocking (a FIFO nobody reads is an error, not a hang before recording)
 * and without becoming our controlling terminal.
 */
static int open_special(struct output *o)
{
	const struct fl_outpath *w = &o->where;
	int fd, fl;

	if (!fl_outpath__may_write(&w->st, &w->dir_st, geteuid()))
		return refuse_foreign(o);
	fd = reopen(w->fd, O_WRONLY);
	if (fd == -ENXIO && w->kind == FL_OUTPATH_FIFO) {
		msg("cannot write %s: no process has the FIFO open for reading (start the reader "
		    "first: flamed opens it now and writes when done)",
		    o->path);
		return fd;
	}
	if (fd < 0) {
		msg("cannot write %s: %s (choose a writable path)", o->path, strerror(-fd));
		return fd;
	}
	/* The reader may be slower than us: writes wait for it. */
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return open_stream(o, fd);
}

/* A new file, or one to replace: written unnamed beside it, named at output_commit(). */
static int open_file(struct output *o)
{
	const struct fl_outpath *w = &o->where;
	int err, fd;

	if (w->kind == FL_OUTPATH_FILE && !fl_outpath__may_write(&w->st, &w->dir_st, geteuid()))
		return refuse_foreign(o);
	err = fl_outfile__create(&o->file, w->dir_fd, w->name, 0666, 0);
	if (err) {
		msg("cannot write %s: %s (choose a writable path)", o->path, strerror(-err));
		return err;
	}
	o->has_file = true;
	/* The stream has its own fd: the file's stays open for fsync and linking. */
	fd = fcntl(o->file.fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		msg("cannot write %s: %s", o->path, strerror(errno));
		return -errno;
	}
	return open_stream(o, fd);
}

int output_open(struct output *o, const char *path, unsigned int flags)
{
	struct fl_outpath_opts opts = {.sz = sizeof(opts), .euid = geteuid()};
	_cleanup_(caps_restore) struct caps_saved caps = {};
	const struct fl_outpath *w = &o->where;
	int err;

	if (!path || !strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	/* The user named the path: it is walked and opened with the user's rights. */
	err = caps_lower(&caps);
	if (err) {
		msg("cannot write %s: cannot set aside flamed's capabilities: %s", path,
		    strerror(-err));
		return err;
	}
	o->path = path;
	o->resolved = true;
	err = fl_outpath__resolve(&o->where, path, &opts);
	if (err)
		err = report_resolve(o, err);
	else if (w->kind == FL_OUTPATH_DIR)
		err = report_resolve(o, -EISDIR);
	else if ((flags & OUTPUT_REGULAR) && w->kind != FL_OUTPATH_NONE &&
		 w->kind != FL_OUTPATH_FILE) {
		msg("cannot use %s: it is %s, not a regular file (give a file name)", path,
		    w->kind == FL_OUTPATH_FD ? "a descriptor" : kind_name(&w->st));
		err = -EINVAL;
	} else if (w->kind == FL_OUTPATH_OTHER) {
		msg("refusing to write %s: it is %s (give a file, a FIFO, a character device or -)",
		    path, kind_name(&w->st));
		err = -EPERM;
	} else if (w->kind == FL_OUTPATH_FD) {
		err = open_fd(o);
	} else if (w->kind == FL_OUTPATH_FIFO || w->kind == FL_OUTPATH_CHAR) {
		err = open_special(o);
	} else {
		err = open_file(o);
	}
	if (err)
		output_abort(o);
	return err;
}

FILE *output_read(const struct output *o)
{
	_cleanup_(caps_restore) struct caps_saved caps = {};
	FILE *f;
	int fd;

	if (!o->resolved || o->where.kind != FL_OUTPATH_FILE) {
		errno = ENOENT;
		return NULL;
	}
	/* Read as the user who named it, not with the capabilities (the open checks that). */
	fd = caps_lower(&caps);
	if (!fd)
		fd = fl_regfile__reopen(o->where.fd, &o->where.st);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

void output_abort(struct output *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	o->f = NULL;
	if (o->has_file)
		fl_outfile__close(&o->file);
	o->has_file = false;
	if (o->resolved)
		fl_outpath__fini(&o->where);
	o->resolved = false;
}

int output_commit(struct output *o)
{
	int err = 0;

	errno = 0;
	if (fflush(o->f) != 0 || ferror(o->f))
		err = -errno ?: -EIO;
	if (o->f == stdout)
		return err;
	if (fclose(o->f) != 0 && !err)
		err = -errno ?: -EIO;
	o->f = NULL;
	if (!err && o->has_file)
		err = fl_outfile__commit(&o->file, true);
	output_abort(o);
	return err;
}

void output_remove_temp(const struct output *o)
{
	if (o->has_file)
		fl_outfile__remove_temp(&o->file);
}

static const struct output *volatile remove_on_signal;

static void on_signal(int sig)
{
	const struct output *o = remove_on_signal;

	if (o)
		output_remove_temp(o);
	signal(sig, SIG_DFL);
	raise(sig);
}

void output_remove_on_signal(struct output *o)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
	struct sigaction sa = {.sa_handler = o ? on_signal : SIG_DFL};

	remove_on_signal = o;
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
}

enum output_format output_format_of(const char *path)
{
	const char *base, *dot;

	if (!path || !strcmp(path, "-"))
		return OUTPUT_FORMAT_NONE;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		return OUTPUT_FORMAT_NONE;
	if (!strcasecmp(dot, ".svg"))
		return OUTPUT_FORMAT_SVG;
	if (!strcasecmp(dot, ".html") || !strcasecmp(dot, ".htm"))
		return OUTPUT_FORMAT_HTML;
	if (!strcasecmp(dot, ".pprof") || (!strcasecmp(dot, ".gz") && dot - base >= 3 &&
					   !strncasecmp(dot - 3, ".pb", 3)))
		return OUTPUT_FORMAT_PPROF;
	if (!strcasecmp(dot, ".folded") || !strcasecmp(dot, ".txt") ||
	    !strcasecmp(dot, ".collapsed"))
		return OUTPUT_FORMAT_FOLDED;
	return OUTPUT_FORMAT_UNKNOWN;
}

int output_check_format(const char *path, enum output_format fmt, const char *who)
{
	enum output_format named = output_format_of(path);

	if (named == OUTPUT_FORMAT_NONE || named == fmt)
		return 0;
	msg("-o %s: %s writes %s, not what that name says (give it a %s name, no extension, or "
	    "-)",
	    path, who,
	    fmt == OUTPUT_FORMAT_SVG	 ? "an SVG flame graph"
	    : fmt == OUTPUT_FORMAT_HTML	 ? "an HTML flame graph"
	    : fmt == OUTPUT_FORMAT_PPROF ? "a pprof profile"
					 : "folded stacks",
	    fmt == OUTPUT_FORMAT_SVG	 ? ".svg"
	    : fmt == OUTPUT_FORMAT_HTML	 ? ".html"
	    : fmt == OUTPUT_FORMAT_PPROF ? ".pb.gz or .pprof"
					 : ".folded, .txt or .collapsed");
	return -EINVAL;
}
