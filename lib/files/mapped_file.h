/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Opening the file a process mapped, and only that file. Private to lib/. */
#ifndef FLAMED_MAPPED_FILE_H
#define FLAMED_MAPPED_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "flamed/sampling/tracker.h"

/* Same inode, and same device when the mapping record said which (a build-id record does not). */
bool fl_is_mapped_file(const struct stat *st, const struct fl_tmap *tm);

/*
 * Opens the regular file behind tm (read-only, close-on-exec, never a
 * controlling terminal) only if it is still the file that was mapped: a
 * binary replaced on disk since (same path, other inode), or another file
 * with the same inode number on another filesystem, would give wrong
 * answers, and a path that now names a FIFO or a device must not be opened
 * at all. Every candidate is opened with O_PATH and checked (regular file,
 * the mapping's device and inode) before it is opened for reading
 * (regfile.h). With a pid, in order: /proc/PID/map_files/START-END (exactly
 * the mapped file, deleted or replaced since; root only), the path under
 * /proc/PID/root (the process's mount namespace or chroot, never leaving
 * it). Then the path as flamed sees it, with no symlink in it: skipped for
 * a mapping without a device when the process is not in flamed's mount
 * namespace (an inode number alone does not name a file there). Returns
 * the fd (the caller closes it) or -errno (-ESTALE: not the mapped file).
 */
int fl_open_mapped_file(const struct fl_tmap *tm, uint32_t pid);

#endif
