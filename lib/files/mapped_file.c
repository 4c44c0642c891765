// SPDX-License-Identifier: GPL-2.0-or-later
/* Opening the file a process mapped, and only that file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/files/regfile.h"
#include "files/mapped_file.h"

bool fl_is_mapped_file(const struct stat *st, const struct fl_tmap *tm)
{
	if (!S_ISREG(st->st_mode) || st->st_ino != tm->ino)
		return false;
	if (!tm->dev_major && !tm->dev_minor)
		return true;
	return major(st->st_dev) == tm->dev_major && minor(st->st_dev) == tm->dev_minor;
}

/* path (from dirfd) if it is tm's file: checked on an O_PATH fd before it is opened for reading. */
static int open_checked(int dirfd, const char *path, unsigned int flags, const struct fl_tmap *tm)
{
	_cleanup_close_ int pfd = -1;
	struct stat st;

	pfd = fl_regfile__open_path(dirfd, path, flags, &st);
	if (pfd < 0)
		return pfd;
	if (!fl_is_mapped_file(&st, tm))
		return -ESTALE;
	return fl_regfile__reopen(pfd, &st);
}

/* Whether pid sees the mount namespace flamed sees (paths mean the same files). */
static bool same_mount_ns(uint32_t pid)
{
	struct stat self, other;
	char path[48];

	snprintf(path, sizeof(path), "/proc/%u/ns/mnt", pid);
	if (stat(path, &other) < 0 || stat("/proc/self/ns/mnt", &self) < 0)
		return false;
	return self.st_dev == other.st_dev && self.st_ino == other.st_ino;
}

int fl_open_mapped_file(const struct fl_tmap *tm, uint32_t pid)
{
	/* A path from the kernel (d_path) holds no symlink: one there was put by someone. */
	const unsigned int path_flags = FL_REGFILE_NO_SYMLINKS;
	_cleanup_close_ int root = -1;
	char path[64];
	int fd = -ENOENT;

	if (pid) {
		/* Exactly the mapped file, whatever its path is now or means to us (root only). */
		snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid,
			 (unsigned long long)tm->start, (unsigned long long)tm->end);
		fd = open_checked(AT_FDCWD, path, FL_REGFILE_MAGICLINKS, tm);
		if (fd >= 0)
			return fd;
		/* The path as the process sees it: its mount namespace, its chroot. */
		snprintf(path, sizeof(path), "/proc/%u/root", pid);
		root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (root >= 0 && tm->path[0] == '/') {
			fd = open_checked(root, tm->path + 1, path_flags | FL_REGFILE_IN_ROOT, tm);
			if (fd >= 0)
				return fd;
		}
	}
	/*
	 * The path in flamed's own namespace names another file when the
	 * process lives in another one. That is harmless when the mapping
	 * pins its file by device and inode (both are checked before anything
	 * is read), but a record without a device (a build-id mmap2 record)
	 * has only an inode number, which a file of ours may share: then only
	 * when the process is known to see the files we see (or no process
	 * was named).
	 */
	if (pid && !tm->dev_major && !tm->dev_minor && !same_mount_ns(pid))
		return fd;
	return open_checked(AT_FDCWD, tm->path, path_flags, tm);
}
