// SPDX-License-Identifier: GPL-2.0-or-later
/* What flamed may do: its capabilities, a seccomp filter, and dropping what a command does not need. */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "flamed.h"
#include "flamed/common/cleanup.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* A hexadecimal or decimal field of /proc/self/status ("CapEff:", "Seccomp:"). */
static int status_field(const char *key, int base, unsigned long long *val)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
	size_t klen = strlen(key);
	char line[256];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *end;

		if (strncmp(line, key, klen) || line[klen] != ':')
			continue;
		errno = 0;
		*val = strtoull(line + klen + 1, &end, base);
		return errno ? -errno : 0;
	}
	return -ENOENT;
}

bool have_cap(int cap)
{
	unsigned long long eff = 0;

	if (status_field("CapEff", 16, &eff))
		return geteuid() == 0; /* no /proc: guess */
	return cap < 64 && (eff >> cap) & 1;
}

bool may_perf(void)
{
	return have_cap(CAP_PERFMON) || have_cap(CAP_SYS_ADMIN);
}

bool seccomp_filtered(void)
{
	unsigned long long mode = 0;

	return !status_field("Seccomp", 10, &mode) && mode == 2;
}

int caps_lower(struct caps_saved *s)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {};

	s->lowered = false;
	/* Root is root, as in drop_privileges(). */
	if (geteuid() == 0 || getuid() == 0)
		return 0;
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	if (!data[0].effective && !data[1].effective)
		return 0;
	s->effective[0] = data[0].effective;
	s->effective[1] = data[1].effective;
	data[0].effective = data[1].effective = 0;
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	s->lowered = true;
	return 0;
}

void caps_restore(struct caps_saved *s)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {};

	if (!s->lowered)
		return;
	s->lowered = false;
	/* The permitted set is untouched: raising within it cannot fail but for a bug. */
	if (syscall(SYS_capget, &hdr, data) < 0)
		return;
	data[0].effective = s->effective[0];
	data[1].effective = s->effective[1];
	if (syscall(SYS_capset, &hdr, data) < 0)
		msg("warning: cannot raise the capabilities again: %s", strerror(errno));
}

void drop_privileges(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {};

	/*
	 * Root is root. Anyone else with capabilities has them from the
	 * binary's file capabilities (setcap, README "Privileges"), given for
	 * recording: svg, diff and collapse read whatever files they are
	 * named, and must read them as the user who named them.
	 */
	if (geteuid() == 0 || getuid() == 0)
		return;
	if (syscall(SYS_capset, &hdr, data) < 0)
		msg("warning: cannot drop the capabilities this command does not need: %s",
		    strerror(errno));
}
