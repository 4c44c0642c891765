// SPDX-License-Identifier: GPL-2.0-or-later
/* Opening a file another user named for reading: O_PATH first, checked, then the fd reopened. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/files/regfile.h"

static int open_o_path(int dirfd, const char *path, unsigned int flags)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC};
	long fd;

	if (flags & FL_REGFILE_NOFOLLOW)
		how.flags |= O_NOFOLLOW;
	if (flags & FL_REGFILE_IN_ROOT)
		how.resolve |= RESOLVE_IN_ROOT;
	if (flags & FL_REGFILE_NO_SYMLINKS)
		how.resolve |= RESOLVE_NO_SYMLINKS;
	if (!(flags & FL_REGFILE_MAGICLINKS))
		how.resolve |= RESOLVE_NO_MAGICLINKS;
	fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	if (fd >= 0)
		return (int)fd;
	if (errno != ENOSYS || (flags & FL_REGFILE_IN_ROOT))
		return -errno;
	/* No openat2: the last component at least; an O_PATH open has no effect on the file anyway. */
	if (flags & FL_REGFILE_NO_SYMLINKS)
		how.flags |= O_NOFOLLOW;
	fd = openat(dirfd, path, (int)how.flags);
	return fd < 0 ? -errno : (int)fd;
}

static int regular_or_errno(const struct stat *st)
{
	if (S_ISREG(st->st_mode))
		return 0;
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	/* O_PATH | O_NOFOLLOW opens a symlink itself. */
	return S_ISLNK(st->st_mode) ? -ELOOP : -EINVAL;
}

int fl_regfile__open_path(int dirfd, const char *path, unsigned int flags, struct stat *st)
{
	_cleanup_close_ int fd = -1;
	int err;

	if (!path || !st)
		return -EINVAL;
	fd = open_o_path(dirfd, path, flags);
	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0)
		return -errno;
	err = regular_or_errno(st);
	return err ? err : TAKE_FD(fd);
}

int fl_regfile__reopen(int path_fd, const struct stat *st)
{
	_cleanup_close_ int fd = -1;
	struct stat now;
	char self[32];

	if (path_fd < 0 || !st)
		return -EINVAL;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", path_fd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &now) < 0)
		return -errno;
	if (!S_ISREG(now.st_mode) || now.st_dev != st->st_dev || now.st_ino != st->st_ino)
		return -ESTALE;
	return TAKE_FD(fd);
}

int fl_regfile__open(int dirfd, const char *path, unsigned int flags, struct stat *st)
{
	_cleanup_close_ int pfd = -1;
	struct stat tmp;

	if (!st)
		st = &tmp;
	pfd = fl_regfile__open_path(dirfd, path, flags, st);
	if (pfd < 0)
		return pfd;
	return fl_regfile__reopen(pfd, st);
}

int fl_regfile__read_all(int fd, size_t max, char **ret, size_t *len)
{
	_cleanup_free_ char *buf = NULL;
	size_t n = 0;

	*ret = NULL;
	*len = 0;
	buf = malloc(max + 2);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		/* One byte more than max: a file that holds more is refused, not cut. */
		ssize_t r = read(fd, buf + n, max + 1 - n);

		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			break;
		n += (size_t)r;
		if (n > max)
			return -EFBIG;
	}
	buf[n] = '\0';
	*ret = TAKE_PTR(buf);
	*len = n;
	return 0;
}

ssize_t fl_regfile__pread(int fd, void *buf, size_t size, uint64_t off)
{
	size_t done = 0;

	if (off > INT64_MAX || size > (uint64_t)INT64_MAX - off)
		return -EOVERFLOW;
	while (done < size) {
		ssize_t n = pread(fd, (char *)buf + done, size - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}
