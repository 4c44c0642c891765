/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Opening the file a process mapped, and only that file. Private to lib/. */
#ifndef FLAMED_MAPPED_FILE_H
#define FLAMED_MAPPED_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "flamed/tracker.h"

/* Same inode, and same device when the mapping record said which (a build-id record does not). */
bool fl_is_mapped_file(const struct stat *st, const struct fl_tmap *tm);

/*
 * Opens the regular file behind tm (read-only, close-on-exec, never blocking
 * on a FIFO) only if it is still the file that was mapped: a binary replaced
 * on disk since (same path, other inode), or another file with the same
 * inode number on another filesystem, would give wrong answers. The check is
 * made on the opened fd, so the path cannot be swapped in between. With a
 * pid, the path is also tried under /proc/PID/root (a process in another
 * mount namespace or chroot; symlinks resolved inside that root), and a
 * file deleted or replaced since is opened through /proc/PID/map_files
 * while that process lives (root only). Returns the fd
 * (the caller closes it) or -errno (-ESTALE: not the mapped file).
 */
int fl_open_mapped_file(const struct fl_tmap *tm, uint32_t pid);

#endif
