// SPDX-License-Identifier: GPL-2.0-or-later
/* Output files of every subcommand: written beside the final path and renamed, never half written. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed.h"
#include "flamed/cleanup.h"

/*
 * flamed runs as root, and -o /tmp/out.svg must not write wherever a
 * symlink someone else planted there points. The kernel's
 * fs.protected_symlinks rule is applied here by hand (realpath() and
 * rename() do not apply it): in a sticky world-writable directory, a
 * symlink is followed only when it belongs to us or to the directory's
 * owner. Returns 0, or -EPERM after saying why.
 */
static int check_symlink(const char *path)
{
	_cleanup_free_ char *copy = strdup(path);
	struct stat lst, dst;
	char *slash;

	if (!copy)
		return -ENOMEM;
	if (lstat(path, &lst) < 0 || !S_ISLNK(lst.st_mode))
		return 0;
	slash = strrchr(copy, '/');
	if (!slash)
		strcpy(copy, ".");
	else if (slash == copy)
		copy[1] = '\0';
	else
		*slash = '\0';
	if (stat(copy, &dst) < 0)
		return 0; /* then opening fails and says why */
	if ((dst.st_mode & S_ISVTX) && (dst.st_mode & S_IWOTH) && lst.st_uid != geteuid() &&
	    lst.st_uid != dst.st_uid) {
		msg("refusing to write %s: a symlink owned by uid %u in the world-writable "
		    "directory %s (remove it or choose another path with -o)",
		    path, (unsigned)lst.st_uid, copy);
		return -EPERM;
	}
	return 0;
}

int output_open(struct output *o, const char *path)
{
	struct stat st;
	mode_t mask;
	int fd, err;

	if (!path || !strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	o->path = path;
	err = check_symlink(path);
	if (err)
		return err;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* Renaming over a device or a FIFO would replace it with a file. */
		fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (fd >= 0 && (fstat(fd, &st) < 0 || S_ISREG(st.st_mode))) {
			/* Replaced by a regular file since: never write into one in place. */
			close(fd);
			fd = -1;
			errno = EAGAIN;
		}
		if (fd < 0 || !(o->f = fdopen(fd, "w"))) {
			err = -errno;
			if (fd >= 0)
				close(fd);
			msg("cannot write %s: %s (choose a writable path with -o)", path,
			    strerror(-err));
			return err;
		}
		o->direct = true;
		return 0;
	}
	/* Through a symlink, the file it points to is replaced and the link stays. */
	o->final_path = realpath(path, NULL);
	if (!o->final_path)
		o->final_path = strdup(path);
	if (!o->final_path || asprintf(&o->tmp_path, "%s.XXXXXX", o->final_path) < 0) {
		o->tmp_path = NULL;
		err = -ENOMEM;
		goto fail;
	}
	fd = mkostemp(o->tmp_path, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		msg("cannot write %s: %s (choose a writable path with -o)", path, strerror(-err));
		goto fail;
	}
	/* mkostemp makes the file private; an output file gets the usual mode. */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) < 0) {
		/* Not fatal: the file stays readable by its owner. */
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		close(fd);
		unlink(o->tmp_path);
		err = -ENOMEM;
		goto fail;
	}
	return 0;

fail:
	/* A failed open leaves the caller nothing to release. */
	free(o->tmp_path);
	free(o->final_path);
	o->tmp_path = NULL;
	o->final_path = NULL;
	return err;
}

void output_abort(struct output *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	if (o->tmp_path)
		unlink(o->tmp_path);
	free(o->tmp_path);
	free(o->final_path);
	o->tmp_path = NULL;
	o->final_path = NULL;
	o->f = NULL;
}

int output_commit(struct output *o)
{
	int err = 0;

	if (fflush(o->f) != 0 || ferror(o->f))
		err = -errno ?: -EIO;
	if (o->f == stdout)
		return err;
	if (!err && o->tmp_path && fsync(fileno(o->f)) < 0)
		err = -errno;
	if (fclose(o->f) != 0 && !err)
		err = -errno ?: -EIO;
	o->f = NULL;
	if (!err && o->tmp_path && rename(o->tmp_path, o->final_path) < 0)
		err = -errno;
	if (o->tmp_path && err)
		unlink(o->tmp_path);
	free(o->tmp_path);
	free(o->final_path);
	o->tmp_path = NULL;
	o->final_path = NULL;
	return err;
}

static const char *volatile remove_on_signal;

static void on_signal(int sig)
{
	const char *p = remove_on_signal;

	if (p)
		unlink(p);
	signal(sig, SIG_DFL);
	raise(sig);
}

void output_remove_on_signal(struct output *o)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
	struct sigaction sa = {.sa_handler = o ? on_signal : SIG_DFL};

	remove_on_signal = o ? o->tmp_path : NULL;
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
}
