// SPDX-License-Identifier: GPL-2.0-or-later
/* Output files of every subcommand: written beside the final path and renamed, never half written. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed.h"

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
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		/* Renaming over a device or a FIFO would replace it with a file. */
		fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
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
		return -ENOMEM;
	}
	fd = mkostemp(o->tmp_path, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		msg("cannot write %s: %s (choose a writable path with -o)", path, strerror(-err));
		free(o->tmp_path);
		o->tmp_path = NULL;
		return err;
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
		free(o->tmp_path);
		o->tmp_path = NULL;
		return -ENOMEM;
	}
	return 0;
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
