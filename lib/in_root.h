/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Opening a path as a process with another root directory sees it. Private to lib/. */
#ifndef FLAMED_IN_ROOT_H
#define FLAMED_IN_ROOT_H

/*
 * openat2() of path with flags (as given: add O_CLOEXEC yourself), never
 * through a /proc magic link. With root_fd >= 0, path is resolved under
 * that directory as if it were "/": ".." and absolute symlinks stop at it
 * (RESOLVE_IN_ROOT), so a container's own files can never lead outside it.
 * With root_fd < 0, from the current directory. Returns the fd or -errno
 * (-ENOSYS: no openat2, Linux < 5.6 or a seccomp filter).
 */
int fl_open_in_root(int root_fd, const char *path, int flags);

#endif
