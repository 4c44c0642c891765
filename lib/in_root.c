// SPDX-License-Identifier: GPL-2.0-or-later
/* Opening a path under a process's root directory with openat2(RESOLVE_IN_ROOT). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "in_root.h"

int fl_open_in_root(int root_fd, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)flags, .resolve = RESOLVE_NO_MAGICLINKS};
	long fd;

	if (root_fd >= 0)
		how.resolve |= RESOLVE_IN_ROOT;
	fd = syscall(SYS_openat2, root_fd >= 0 ? root_fd : AT_FDCWD, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}
