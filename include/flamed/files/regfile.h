/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Opening a file another user named (a mapping, a perf map, a debug link) for reading, safely. */
#ifndef FLAMED_REGFILE_H
#define FLAMED_REGFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * flamed runs as root and opens paths that other users' processes, files
 * and mount namespaces choose. Opening a FIFO blocks or wakes its writer;
 * opening a tty may make it flamed's controlling terminal (whose ^C and
 * hang-up then reach flamed); opening some devices rewinds a tape or
 * resets a modem. So a path is first opened with O_PATH, which touches
 * nothing, the fd is checked to be a regular file (and whatever else the
 * caller wants: the mapping's device and inode), and only that fd, through
 * /proc/self/fd, is opened for reading: the path cannot be swapped in
 * between. Every fd is O_CLOEXEC; the fd for reading is also O_NOCTTY and
 * O_NONBLOCK.
 */

/* How a path is resolved. 0: from dirfd (or AT_FDCWD), following symlinks but no /proc magic link. */
enum fl_regfile_flags {
	/*
	 * dirfd is a root directory (an open /proc/PID/root): "/", ".." and
	 * absolute symlinks stop at it (openat2 RESOLVE_IN_ROOT). Without
	 * openat2 (Linux < 5.6, a seccomp filter) such an open fails with -ENOSYS.
	 */
	FL_REGFILE_IN_ROOT = 1u << 0,
	/* The last component must not be a symlink (-ELOOP). */
	FL_REGFILE_NOFOLLOW = 1u << 1,
	/*
	 * No component may be a symlink (-ELOOP): for paths the kernel made,
	 * which never hold one (/proc/PID/maps, mmap records). Without openat2,
	 * only the last component is checked.
	 */
	FL_REGFILE_NO_SYMLINKS = 1u << 2,
	/* The path may go through a /proc magic link (/proc/PID/map_files/...). */
	FL_REGFILE_MAGICLINKS = 1u << 3,
};

/*
 * Opens path (relative to dirfd, or AT_FDCWD) with O_PATH as flags say, and
 * requires a regular file, whose fstat goes into *st. Nothing is opened for
 * reading. Returns the O_PATH fd (the caller closes it), or -errno from
 * openat2/openat, -ELOOP (a symlink where flags allow none), -EISDIR, or
 * -EINVAL (a FIFO, a device, a socket).
 */
int fl_regfile__open_path(int dirfd, const char *path, unsigned int flags, struct stat *st);

/*
 * Opens for reading the regular file an O_PATH fd refers to (through
 * /proc/self/fd: the same file, not the path again), and checks that it is
 * still the file st describes (device and inode). Returns the fd, -ESTALE
 * when it is not, or -errno (-ENOENT: no /proc mounted; nothing falls back
 * to opening the path).
 */
int fl_regfile__reopen(int path_fd, const struct stat *st);

/*
 * Both: the regular file at path, open for reading (O_RDONLY | O_CLOEXEC |
 * O_NOCTTY | O_NONBLOCK), its fstat in *st (NULL: not wanted). Returns the
 * fd or -errno as above.
 */
int fl_regfile__open(int dirfd, const char *path, unsigned int flags, struct stat *st);

/*
 * Reads an open file (fl_regfile__open()'s fd) whole into a NUL-terminated
 * buffer (*ret, the caller frees; *len bytes). Returns 0, -EFBIG when it
 * holds more than max bytes (however it grows while read), -ENOMEM, or
 * read(2)'s -errno.
 */
int fl_regfile__read_all(int fd, size_t max, char **ret, size_t *len);

/*
 * Reads size bytes at off into buf, again after a short read or EINTR,
 * until the file ends. Returns the bytes read (fewer than size: the file
 * ends first, maybe shrunk by its owner just now), or pread(2)'s -errno
 * (-EOVERFLOW: off + size past what off_t holds).
 */
ssize_t fl_regfile__pread(int fd, void *buf, size_t size, uint64_t off);

#endif
