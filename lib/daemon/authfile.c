// SPDX-License-Identifier: GPL-2.0-or-later
/* The push credential file: opened safely, owned by root, private, one line of text. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/daemon/authfile.h"
#include "flamed/files/regfile.h"
#include "common/seterr.h"


/* Checks on the open file's stat: who owns it, who else may read or write it. */
static int check_stat(const char *path, const struct stat *st, uid_t owner, char *err,
		      size_t errlen)
{
	if (st->st_uid != owner) {
		fl_seterr(err, errlen, "%s belongs to uid %u, not %u (chown %u %s)", path,
		       (unsigned int)st->st_uid, (unsigned int)owner, (unsigned int)owner, path);
		return -EPERM;
	}
	if (st->st_mode & (S_IRWXG | S_IRWXO)) {
		fl_seterr(err, errlen,
		       "%s is open to group or others (mode %04o): a credential must be private "
		       "(chmod 600 %s)",
		       path, (unsigned int)(st->st_mode & 07777), path);
		return -EPERM;
	}
	if (st->st_size > (off_t)FL_AUTHFILE_MAX + 2) {
		fl_seterr(err, errlen, "%s is larger than %u bytes: not a credential", path,
		       FL_AUTHFILE_MAX);
		return -EFBIG;
	}
	return 0;
}

/*
 * Reads up to max bytes of fd into buf; returns how many, or -EFBIG when
 * there are more (the file grew), or read's -errno.
 */
static ssize_t read_upto(int fd, char *buf, size_t max)
{
	size_t n = 0;

	for (;;) {
		ssize_t r = read(fd, buf + n, max + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			return (ssize_t)n;
		n += (size_t)r;
		if (n > max)
			return -EFBIG;
	}
}

int fl_authfile__read(const char *path, uid_t owner, char **ret, char *err, size_t errlen)
{
	/* Room for the longest credential, its "\r\n" and one byte that says "too long". */
	char buf[FL_AUTHFILE_MAX + 3];
	_cleanup_close_ int fd = -1;
	struct stat st;
	ssize_t n;
	size_t i;
	int r;

	fd = fl_regfile__open(AT_FDCWD, path, FL_REGFILE_NOFOLLOW, &st);
	if (fd == -ELOOP) {
		fl_seterr(err, errlen, "%s is a symbolic link: name the file itself", path);
		return fd;
	}
	if (fd == -EINVAL || fd == -EISDIR) {
		fl_seterr(err, errlen, "%s is not a regular file", path);
		return -EINVAL;
	}
	if (fd < 0) {
		fl_seterr(err, errlen, "cannot open %s: %s", path, strerror(-fd));
		return fd;
	}
	r = check_stat(path, &st, owner, err, errlen);
	if (r)
		return r;
	n = read_upto(fd, buf, FL_AUTHFILE_MAX + 2);
	if (n == -EFBIG) {
		explicit_bzero(buf, sizeof(buf));
		fl_seterr(err, errlen, "%s is larger than %u bytes: not a credential", path,
		       FL_AUTHFILE_MAX);
		return -EFBIG;
	}
	if (n < 0) {
		fl_seterr(err, errlen, "cannot read %s: %s", path, strerror((int)-n));
		return (int)n;
	}
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	r = 0;
	if (!n) {
		fl_seterr(err, errlen, "%s is empty: write the token (or user:password) in it", path);
		r = -EINVAL;
	} else if ((size_t)n > FL_AUTHFILE_MAX) {
		fl_seterr(err, errlen, "%s is larger than %u bytes: not a credential", path,
		       FL_AUTHFILE_MAX);
		r = -EFBIG;
	}
	for (i = 0; !r && i < (size_t)n; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (ch < 0x20 || ch == 0x7f) {
			fl_seterr(err, errlen,
			       "%s holds a control character (0x%02x) at byte %zu: it must be one "
			       "line, a token or user:password",
			       path, ch, i + 1);
			r = -EINVAL;
		}
	}
	if (!r) {
		*ret = strndup(buf, (size_t)n);
		if (!*ret) {
			fl_seterr(err, errlen, "%s: out of memory", path);
			r = -ENOMEM;
		}
	}
	explicit_bzero(buf, sizeof(buf));
	return r;
}

void fl_authfile__free(char *secret)
{
	if (!secret)
		return;
	explicit_bzero(secret, strlen(secret));
	free(secret);
}
