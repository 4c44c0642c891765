// SPDX-License-Identifier: GPL-2.0-or-later
/* Output paths walked by hand relative to directory fds, and files that appear only when complete. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/common/log.h"
#include "flamed/files/outpath.h"

#define WRITABLE_BY_OTHERS (S_IWGRP | S_IWOTH)

bool fl_outpath__dir_private(const struct stat *dir, uid_t euid)
{
	return (dir->st_uid == euid || dir->st_uid == 0) && !(dir->st_mode & WRITABLE_BY_OTHERS);
}

bool fl_outpath__link_trusted(const struct stat *link, const struct stat *dir, uid_t euid)
{
	if (fl_outpath__dir_private(dir, euid))
		return true;
	return link->st_uid == euid && link->st_nlink == 1;
}

bool fl_outpath__may_write(const struct stat *st, const struct stat *dir, uid_t euid)
{
	/* Renamed over, never written into: the links it has elsewhere keep the old file. */
	if (S_ISREG(st->st_mode))
		return !(dir->st_mode & WRITABLE_BY_OTHERS) || st->st_uid == euid;
	if (fl_outpath__dir_private(dir, euid))
		return true;
	/*
	 * Written into, where another user may have put it: made there by us
	 * or by the directory's owner, and no hard link to a FIFO or device
	 * elsewhere (fs.protected_hardlinks may be off).
	 */
	return (st->st_uid == euid || st->st_uid == dir->st_uid) && st->st_nlink == 1;
}

/* The number in s (decimal digits only, up to INT_MAX), or -1. */
static int fd_digits(const char *s)
{
	long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -1;
		v = v * 10 + (*s - '0');
		if (v > INT_MAX)
			return -1;
	}
	return (int)v;
}

static const char *skip_prefix(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(s, prefix, n) ? NULL : s + n;
}

int fl_outpath__fd_number(const char *path)
{
	const char *p;
	char *end;
	long pid;

	if (!strcmp(path, "/dev/stdout"))
		return 1;
	if (!strcmp(path, "/dev/stderr"))
		return 2;
	if ((p = skip_prefix(path, "/dev/fd/")) || (p = skip_prefix(path, "/proc/self/fd/")) ||
	    (p = skip_prefix(path, "/proc/thread-self/fd/")))
		return fd_digits(p);
	p = skip_prefix(path, "/proc/");
	if (!p || !isdigit((unsigned char)*p))
		return -1;
	errno = 0;
	pid = strtol(p, &end, 10);
	if (errno || pid != getpid() || !(p = skip_prefix(end, "/fd/")))
		return -1;
	return fd_digits(p);
}

/* The walk through a path: where it is, and what is left. */
struct walk {
	struct fl_outpath *o;
	const struct fl_outpath_opts *opts;
	int dfd; /* the directory reached (owned), O_PATH or O_RDONLY */
	struct stat dst;
	bool absolute;
	char shown[PATH_MAX]; /* its path as walked, for messages ("" at the start) */
	char rest[PATH_MAX];  /* what is left to walk */
	int links;
};

/* Paths shown in messages: cut at PATH_MAX, as they may be after links. */
static void __attribute__((format(printf, 3, 4))) show(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

/* o->where = the walked path plus name. */
static void set_where(struct walk *w, const char *name)
{
	const char *sep = w->absolute || w->shown[0] ? "/" : "";

	if (!name)
		show(w->o->where, sizeof(w->o->where), "%s",
		     w->shown[0]   ? w->shown
		     : w->absolute ? "/"
				   : ".");
	else
		show(w->o->where, sizeof(w->o->where), "%s%s%s", w->shown, sep, name);
}

static int fail(struct walk *w, const char *name, enum fl_outpath_problem problem, int err)
{
	set_where(w, name);
	w->o->problem = problem;
	return err;
}

/* Starts (again) at "/" or at the current directory. */
static int walk_start(struct walk *w, bool absolute)
{
	if (w->dfd >= 0)
		close(w->dfd);
	w->absolute = absolute;
	w->shown[0] = '\0';
	w->dfd = open(absolute ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w->dfd < 0 || fstat(w->dfd, &w->dst) < 0)
		return fail(w, NULL, FL_OUTPATH_SYSCALL, -errno);
	return 0;
}

/* Goes down into the directory fd (taken), reached as name. */
static void walk_enter(struct walk *w, int fd, const struct stat *st, const char *name)
{
	size_t n = strlen(w->shown);

	close(w->dfd);
	w->dfd = fd;
	w->dst = *st;
	show(w->shown + n, sizeof(w->shown) - n, "%s%s", w->absolute || n ? "/" : "", name);
}

/* rest = head + tail (tail may point into rest). */
static int set_rest(struct walk *w, const char *head, const char *tail)
{
	char buf[PATH_MAX];

	if ((size_t)snprintf(buf, sizeof(buf), "%s%s", head, tail) >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(w->rest, buf, strlen(buf) + 1);
	return 0;
}

/* The result is the descriptor n of ours. */
static int found_fd(struct walk *w, int n)
{
	if (fcntl(n, F_GETFD) < 0) {
		snprintf(w->o->where, sizeof(w->o->where), "/dev/fd/%d", n);
		w->o->problem = FL_OUTPATH_SYSCALL;
		return -EBADF;
	}
	w->o->kind = FL_OUTPATH_FD;
	w->o->fd = n;
	return 1;
}

/*
 * The symlink fd (its stat st), met as name in the current directory with
 * tail left after it: its target replaces it in what is left to walk.
 * Returns 0 to go on, 1 when the path now names one of our descriptors, or
 * -errno.
 */
static int walk_follow(struct walk *w, int fd, const struct stat *st, const char *name,
		       const char *tail)
{
	char target[PATH_MAX];
	struct statfs sfs;
	ssize_t n;
	int err;

	if (++w->links > FL_OUTPATH_MAX_LINKS)
		return fail(w, name, FL_OUTPATH_LOOP, -ELOOP);
	if (!fl_outpath__link_trusted(st, &w->dst, w->opts->euid)) {
		w->o->owner = st->st_uid;
		return fail(w, name, FL_OUTPATH_LINK, -EPERM);
	}
	n = readlinkat(fd, "", target, sizeof(target));
	if (n < 0)
		return fail(w, name, FL_OUTPATH_SYSCALL, -errno);
	if ((size_t)n >= sizeof(target) || n == 0)
		return fail(w, name, FL_OUTPATH_SYSCALL, n ? -ENAMETOOLONG : -ENOENT);
	target[n] = '\0';
	/*
	 * /proc's links to a process's files (fd/N, cwd, exe...) are no paths:
	 * their text is "pipe:[123]" or a name the file had once. Only the
	 * ones naming a process (self, thread-self) are followed.
	 */
	if (fstatfs(fd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC &&
	    !isdigit((unsigned char)target[0]))
		return fail(w, name, FL_OUTPATH_PROC_LINK, -EPERM);
	fl_pr_debug("outpath: following %s%s%s -> %s\n", w->shown,
		    w->absolute || w->shown[0] ? "/" : "", name, target);
	err = set_rest(w, target, tail);
	if (err)
		return fail(w, name, FL_OUTPATH_SYSCALL, err);
	if (target[0] != '/')
		return 0;
	err = walk_start(w, true);
	if (err)
		return err;
	n = fl_outpath__fd_number(w->rest);
	return n >= 0 ? found_fd(w, (int)n) : 0;
}

/* Creates the missing directory name. Returns an O_PATH fd of what is there then, or -errno. */
static int walk_mkdir(struct walk *w, const char *name)
{
	int fd;

	/* Made by someone else meanwhile (EEXIST): looked at like any other. */
	if (mkdirat(w->dfd, name, w->opts->mkdir_mode) == 0) {
		w->o->created = true;
		fl_pr_debug("outpath: created %s/%s\n", w->shown, name);
	} else if (errno != EEXIST) {
		return -errno;
	}
	fd = openat(w->dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * What is at the last component, name, in the current directory. Returns 0
 * (found), 1 (a link was followed: walk on), 2 (it led to a descriptor of
 * ours) or -errno.
 */
static int walk_last(struct walk *w, const char *name, const char *tail)
{
	struct fl_outpath *o = w->o;
	int fd = openat(w->dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno != ENOENT)
		return fail(w, name, FL_OUTPATH_SYSCALL, -errno);
	if (fd >= 0 && fstat(fd, &o->st) < 0) {
		close(fd);
		return fail(w, name, FL_OUTPATH_SYSCALL, -errno);
	}
	if (fd >= 0 && S_ISLNK(o->st.st_mode)) {
		struct stat lst = o->st;
		int err = walk_follow(w, fd, &lst, name, tail);

		close(fd);
		memset(&o->st, 0, sizeof(o->st));
		return err < 0 ? err : err ? 2 : 1;
	}
	snprintf(o->name, sizeof(o->name), "%s", name);
	o->dir_fd = TAKE_FD(w->dfd);
	o->dir_st = w->dst;
	o->fd = fd;
	if (fd < 0)
		o->kind = FL_OUTPATH_NONE;
	else if (S_ISREG(o->st.st_mode))
		o->kind = FL_OUTPATH_FILE;
	else if (S_ISDIR(o->st.st_mode))
		o->kind = FL_OUTPATH_DIR;
	else if (S_ISFIFO(o->st.st_mode))
		o->kind = FL_OUTPATH_FIFO;
	else if (S_ISCHR(o->st.st_mode))
		o->kind = FL_OUTPATH_CHAR;
	else
		o->kind = FL_OUTPATH_OTHER;
	return 0;
}

static int walk(struct walk *w, const char *path)
{
	const struct fl_outpath_opts *opts = w->opts;
	int err, n;

	n = fl_outpath__fd_number(path);
	if (n >= 0)
		return found_fd(w, n);
	err = set_rest(w, path, "");
	if (!err && !path[0])
		err = -ENOENT;
	if (err)
		return fail(w, NULL, FL_OUTPATH_SYSCALL, err);
	err = walk_start(w, path[0] == '/');
	if (err)
		return err;
	for (char *p = w->rest;;) {
		char name[NAME_MAX + 1];
		const char *tail;
		size_t len;
		struct stat st;
		int fd;

		while (*p == '/')
			p++;
		if (!*p) {
			/* The path named the directory reached: "/", ".", "dir/". */
			if (!opts->dir)
				return fail(w, NULL, FL_OUTPATH_SYSCALL, -EISDIR);
			w->o->kind = FL_OUTPATH_DIR;
			w->o->st = w->dst;
			w->o->fd = TAKE_FD(w->dfd);
			return 0;
		}
		len = strcspn(p, "/");
		if (len > NAME_MAX)
			return fail(w, NULL, FL_OUTPATH_SYSCALL, -ENAMETOOLONG);
		memcpy(name, p, len);
		name[len] = '\0';
		tail = p + len;
		if (!strcmp(name, ".")) {
			p += len;
			continue;
		}
		if (!*tail && !opts->dir && strcmp(name, "..")) {
			err = walk_last(w, name, tail);
			if (err < 0 || err == 2)
				return err < 0 ? err : 1;
			if (!err)
				return 0;
			p = w->rest;
			continue;
		}
		/* A directory to go through. */
		fd = openat(w->dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT && opts->dir && opts->mkdir_mode)
			fd = walk_mkdir(w, name);
		else if (fd < 0)
			fd = -errno;
		if (fd < 0)
			return fail(w, name, FL_OUTPATH_SYSCALL, fd);
		if (fstat(fd, &st) < 0) {
			err = -errno;
			close(fd);
			return fail(w, name, FL_OUTPATH_SYSCALL, err);
		}
		if (S_ISLNK(st.st_mode)) {
			err = walk_follow(w, fd, &st, name, tail);
			close(fd);
			if (err)
				return err;
			p = w->rest;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			close(fd);
			return fail(w, name, FL_OUTPATH_SYSCALL, -ENOTDIR);
		}
		walk_enter(w, fd, &st, name);
		p += len;
	}
}

int fl_outpath__resolve(struct fl_outpath *o, const char *path, const struct fl_outpath_opts *opts)
{
	struct walk w = {.o = o, .opts = opts, .dfd = -1};
	int err;

	memset(o, 0, sizeof(*o));
	o->dir_fd = -1;
	o->fd = -1;
	err = walk(&w, path);
	if (w.dfd >= 0)
		close(w.dfd);
	if (err < 0) {
		if (o->kind != FL_OUTPATH_FD && o->fd >= 0)
			close(o->fd);
		o->fd = -1;
		return err;
	}
	o->problem = FL_OUTPATH_OK;
	return 0;
}

void fl_outpath__fini(struct fl_outpath *o)
{
	if (o->dir_fd >= 0)
		close(o->dir_fd);
	if (o->fd >= 0 && o->kind != FL_OUTPATH_FD)
		close(o->fd);
	o->dir_fd = -1;
	o->fd = -1;
}

/* --- files that appear whole ------------------------------------------------------ */

/*
 * Sets f->tmp to ".tmp-NAME-PID-N" so that a signal handler reading it
 * meanwhile (fl_outfile__remove_temp()) sees "" or the whole name.
 */
static void set_temp_name(struct fl_outfile *f, unsigned int i)
{
	char buf[NAME_MAX + 1];

	snprintf(buf, sizeof(buf), ".tmp-%.200s-%d-%u", f->name, (int)getpid(), i);
	f->tmp[0] = '\0';
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memcpy(f->tmp + 1, buf + 1, strlen(buf));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	f->tmp[0] = buf[0];
}

static void clear_temp_name(struct fl_outfile *f)
{
	f->tmp[0] = '\0';
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

int fl_outfile__create(struct fl_outfile *f, int dir_fd, const char *name, mode_t mode,
		       unsigned int flags)
{
	int fd = -1;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->dir_fd = dir_fd;
	if (strlen(name) > NAME_MAX || !name[0])
		return name[0] ? -ENAMETOOLONG : -EINVAL;
	strcpy(f->name, name);
	if (!(flags & FL_OUTFILE_NO_TMPFILE)) {
		fd = openat(dir_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
		if (fd >= 0) {
			f->fd = fd;
			return 0;
		}
		/* Filesystems without O_TMPFILE say so in one of these ways. */
		if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return -errno;
		fl_pr_debug("outfile: no O_TMPFILE here: a named temporary for %s\n", name);
	}
	fl_outfile__remove_stale(dir_fd, name, geteuid());
	for (unsigned int i = 0; i < 100; i++) {
		set_temp_name(f, i);
		fd = openat(dir_fd, f->tmp,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		int err = -errno;

		clear_temp_name(f);
		return err;
	}
	f->fd = fd;
	return 0;
}

int fl_outfile__commit(struct fl_outfile *f, bool replace)
{
	char proc[40];
	int err;

	if (fsync(f->fd) < 0)
		return -errno;
	if (f->tmp[0]) {
		if (replace ? renameat(f->dir_fd, f->tmp, f->dir_fd, f->name)
			    : renameat2(f->dir_fd, f->tmp, f->dir_fd, f->name, RENAME_NOREPLACE))
			return -errno;
		clear_temp_name(f);
		return 0;
	}
	/* The unnamed file gets a name; AT_EMPTY_PATH would need CAP_DAC_READ_SEARCH. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
	if (linkat(AT_FDCWD, proc, f->dir_fd, f->name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != EEXIST || !replace)
		return -errno;
	/* Something is there: a temporary name first, then one rename over it. */
	for (unsigned int i = 0;; i++) {
		set_temp_name(f, i);
		if (linkat(AT_FDCWD, proc, f->dir_fd, f->tmp, AT_SYMLINK_FOLLOW) == 0)
			break;
		if (errno != EEXIST || i == 99) {
			err = -errno;
			clear_temp_name(f);
			return err;
		}
	}
	if (renameat(f->dir_fd, f->tmp, f->dir_fd, f->name) < 0) {
		err = -errno;
		fl_outfile__remove_temp(f);
		clear_temp_name(f);
		return err;
	}
	clear_temp_name(f);
	return 0;
}

void fl_outfile__remove_temp(const struct fl_outfile *f)
{
	if (f->tmp[0])
		unlinkat(f->dir_fd, f->tmp, 0);
}

void fl_outfile__close(struct fl_outfile *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	fl_outfile__remove_temp(f);
	clear_temp_name(f);
}

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

/* "PID-N" and nothing more: the pid, or -1. */
static long temp_pid(const char *s)
{
	char *end;
	long pid;

	if (!isdigit((unsigned char)*s))
		return -1;
	pid = strtol(s, &end, 10);
	if (*end != '-' || !isdigit((unsigned char)end[1]))
		return -1;
	strtoul(end + 1, &end, 10);
	return *end ? -1 : pid;
}

int fl_outfile__remove_stale(int dir_fd, const char *name, uid_t euid)
{
	_cleanup_(closedirp) DIR *dir = NULL;
	char prefix[NAME_MAX + 1];
	struct dirent *de;
	size_t plen;
	int fd, n = 0;

	plen = (size_t)snprintf(prefix, sizeof(prefix), ".tmp-%.200s-", name);
	fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(dir))) {
		struct stat st;
		long pid;

		if (strncmp(de->d_name, prefix, plen))
			continue;
		pid = temp_pid(de->d_name + plen);
		if (pid <= 0 || pid > INT_MAX || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue; /* still running, or not ours to know */
		if (fstatat(dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != euid)
			continue;
		if (unlinkat(dir_fd, de->d_name, 0) == 0) {
			fl_pr_debug("outfile: removed %s, left by process %ld\n", de->d_name, pid);
			n++;
		}
	}
	return n;
}
