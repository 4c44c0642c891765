// SPDX-License-Identifier: GPL-2.0-or-later
/* Opening the file a process mapped, and only that file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "in_root.h"
#include "mapped_file.h"

bool fl_is_mapped_file(const struct stat *st, const struct fl_tmap *tm)
{
	if (!S_ISREG(st->st_mode) || st->st_ino != tm->ino)
		return false;
	if (!tm->dev_major && !tm->dev_minor)
		return true;
	return major(st->st_dev) == tm->dev_major && minor(st->st_dev) == tm->dev_minor;
}

static int open_checked(const char *path, const struct fl_tmap *tm)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !fl_is_mapped_file(&st, tm)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * tm's path as the process sees it: under its root directory (another
 * mount namespace, a chroot), never leaving it, whatever symlinks say.
 */
static int open_in_root(uint32_t pid, const struct fl_tmap *tm)
{
	char root[32];
	struct stat st;
	int dfd, fd;

	if (tm->path[0] != '/')
		return -ENOENT;
	snprintf(root, sizeof(root), "/proc/%u/root", pid);
	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = fl_open_in_root(dfd, tm->path + 1, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	close(dfd);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !fl_is_mapped_file(&st, tm)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int fl_open_mapped_file(const struct fl_tmap *tm, uint32_t pid)
{
	char path[64];
	int fd = open_checked(tm->path, tm);

	if (fd >= 0 || !pid)
		return fd;
	fd = open_in_root(pid, tm);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)tm->start, (unsigned long long)tm->end);
	return open_checked(path, tm);
}
