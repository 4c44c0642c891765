// SPDX-License-Identifier: GPL-2.0-or-later
/* Which pid namespace flamed runs in, and whether /proc is that namespace's. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "flamed/sampling/pidns.h"

uint64_t fl_pidns__kernel_dev(uint64_t st_dev)
{
	/* The kernel keeps 12 bits of major above 20 bits of minor; user space encodes otherwise. */
	return (uint64_t)major(st_dev) << 20 | minor(st_dev);
}

int fl_pidns__from_path(const char *path, struct fl_pidns *ret)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	*ret = (struct fl_pidns){
		.dev = fl_pidns__kernel_dev(st.st_dev),
		.ino = st.st_ino,
		.initial = st.st_ino == FL_PIDNS_INIT_INO,
	};
	return 0;
}

int fl_pidns__self(struct fl_pidns *ret)
{
	return fl_pidns__from_path("/proc/self/ns/pid", ret);
}

int fl_pidns__check_proc(const char *proc, int self, int *proc_pid)
{
	char path[PATH_MAX], buf[32], *end;
	ssize_t n;
	long v;

	if (snprintf(path, sizeof(path), "%s/self", proc) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || *end || end == buf || v < 0 || v > INT_MAX)
		return -EINVAL;
	if (v == self)
		return 0;
	*proc_pid = (int)v;
	return -EXDEV;
}
