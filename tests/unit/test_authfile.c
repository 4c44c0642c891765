// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the push credential file: what is read, and every file that is refused. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/daemon/authfile.h"

static char dir[] = "/tmp/fl-authfile-XXXXXX";
static char path[128];

static int setup(void **state)
{
	(void)state;
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/token", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	rmdir(dir);
	return 0;
}

static void write_secret(const char *buf, size_t len, mode_t mode)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* Reading path fails with want_err and a message containing want, which never shows the secret. */
static void refused(uid_t owner, int want_err, const char *want)
{
	char err[512] = "", *s = NULL;

	assert_int_equal(fl_authfile__read(path, owner, &s, err, sizeof(err)), want_err);
	assert_null(s);
	if (!strstr(err, want))
		fail_msg("\"%s\" lacks \"%s\"", err, want);
	assert_null(strstr(err, "s3cret"));
	assert_null(strchr(err, '\n'));
}

static void test_good(void **state)
{
	char err[512], *s = NULL;

	(void)state;
	write_secret("s3cret-token\n", 13, 0600);
	assert_int_equal(fl_authfile__read(path, getuid(), &s, err, sizeof(err)), 0);
	assert_string_equal(s, "s3cret-token");
	fl_authfile__free(s);
	/* "\r\n" and several line ends go; spaces and ':' inside stay. */
	write_secret("user:pa ss:s3cret\r\n\n", 20, 0400);
	assert_int_equal(fl_authfile__read(path, getuid(), &s, err, sizeof(err)), 0);
	assert_string_equal(s, "user:pa ss:s3cret");
	fl_authfile__free(s);
	write_secret("no-newline", 10, 0600);
	assert_int_equal(fl_authfile__read(path, getuid(), &s, NULL, 0), 0);
	assert_string_equal(s, "no-newline");
	fl_authfile__free(s);
	fl_authfile__free(NULL);
}

static void test_limits(void **state)
{
	char *buf = malloc(FL_AUTHFILE_MAX + 4), err[512], *s = NULL;

	(void)state;
	assert_non_null(buf);
	memset(buf, 'x', FL_AUTHFILE_MAX + 4);
	buf[FL_AUTHFILE_MAX] = '\r';
	buf[FL_AUTHFILE_MAX + 1] = '\n';
	write_secret(buf, FL_AUTHFILE_MAX + 2, 0600);
	assert_int_equal(fl_authfile__read(path, getuid(), &s, err, sizeof(err)), 0);
	assert_int_equal(strlen(s), FL_AUTHFILE_MAX);
	fl_authfile__free(s);
	memset(buf, 'x', FL_AUTHFILE_MAX + 4);
	write_secret(buf, FL_AUTHFILE_MAX + 1, 0600);
	refused(getuid(), -EFBIG, "is larger than 4096 bytes: not a credential");
	write_secret(buf, FL_AUTHFILE_MAX + 4, 0600);
	refused(getuid(), -EFBIG, "is larger than 4096 bytes");
	free(buf);

	write_secret("", 0, 0600);
	refused(getuid(), -EINVAL, "is empty: write the token (or user:password) in it");
	write_secret("\n\r\n", 3, 0600);
	refused(getuid(), -EINVAL, "is empty");
	write_secret("s3cret\nsecond line\n", 19, 0600);
	refused(getuid(), -EINVAL, "holds a control character (0x0a) at byte 7");
	write_secret("s3c\0ret\n", 8, 0600);
	refused(getuid(), -EINVAL, "holds a control character (0x00) at byte 4");
	write_secret("s3cret\tx\n", 9, 0600);
	refused(getuid(), -EINVAL, "control character (0x09)");
}

static void test_owner_and_mode(void **state)
{
	char want[512];

	(void)state;
	write_secret("s3cret\n", 7, 0640);
	snprintf(want, sizeof(want),
		 "%s is open to group or others (mode 0640): a credential "
		 "must be private (chmod 600 %s)",
		 path, path);
	refused(getuid(), -EPERM, want);
	write_secret("s3cret\n", 7, 0604);
	refused(getuid(), -EPERM, "(mode 0604)");
	write_secret("s3cret\n", 7, 0602);
	refused(getuid(), -EPERM, "chmod 600");
	write_secret("s3cret\n", 7, 0600);
	snprintf(want, sizeof(want), "%s belongs to uid %u, not %u (chown %u %s)", path,
		 (unsigned int)getuid(), (unsigned int)getuid() + 1, (unsigned int)getuid() + 1,
		 path);
	refused(getuid() + 1, -EPERM, want);
}

static void test_not_files(void **state)
{
	char link[160], want[512];

	(void)state;
	write_secret("s3cret\n", 7, 0600);
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink(path, link), 0);
	{
		char err[512], *s = NULL;

		assert_int_equal(fl_authfile__read(link, getuid(), &s, err, sizeof(err)), -ELOOP);
		snprintf(want, sizeof(want), "%s is a symbolic link: name the file itself", link);
		assert_string_equal(err, want);
		assert_null(s);
	}
	unlink(link);

	/* A FIFO is refused without blocking (nobody writes it). */
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(10);
	refused(getuid(), -EINVAL, "is not a regular file");
	alarm(0);
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	refused(getuid(), -EINVAL, "is not a regular file");
	rmdir(path);
	snprintf(want, sizeof(want), "cannot open %s: No such file or directory", path);
	refused(getuid(), -ENOENT, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_owner_and_mode),
		cmocka_unit_test(test_not_files),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
