// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for opening files others named: only regular files, never a FIFO or tty opened, no symlink where none may be. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flamed/files/regfile.h"
#include "hostile_paths.h"

struct fx {
	char dir[256];
	int dir_fd;
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	assert_true(scratch_dir_make(fx->dir, sizeof(fx->dir), "test_regfile"));
	fx->dir_fd = open(fx->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fx->dir_fd >= 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	close(fx->dir_fd);
	scratch_dir_remove(fx->dir);
	free(fx);
	return 0;
}

static void put(const struct fx *fx, const char *name, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fx->dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

static void sub(const struct fx *fx, const char *name, char *path, size_t size)
{
	snprintf(path, size, "%s/%s", fx->dir, name);
}

/* A regular file: open for reading only, close-on-exec, not blocking, the stat of it. */
static void test_regular(void **state)
{
	struct fx *fx = *state;
	char path[PATH_MAX], buf[16] = "";
	struct stat st, want;
	int fd, fl;

	put(fx, "file", "hello");
	sub(fx, "file", path, sizeof(path));
	assert_int_equal(stat(path, &want), 0);
	fd = fl_regfile__open(AT_FDCWD, path, 0, &st);
	assert_true(fd >= 0);
	assert_int_equal(st.st_ino, want.st_ino);
	assert_int_equal(st.st_dev, want.st_dev);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 5);
	assert_string_equal(buf, "hello");
	fl = fcntl(fd, F_GETFL);
	assert_int_equal(fl & O_ACCMODE, O_RDONLY);
	assert_true(fl & O_NONBLOCK);
	assert_false(fl & O_PATH);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	/* Relative to a directory fd, with or without a stat wanted. */
	fd = fl_regfile__open(fx->dir_fd, "file", FL_REGFILE_NOFOLLOW | FL_REGFILE_NO_SYMLINKS,
			      NULL);
	assert_true(fd >= 0);
	close(fd);
}

/* A FIFO is refused, and never opened for reading: its writer stays blocked. */
static void test_fifo(void **state)
{
	struct fx *fx = *state;
	struct fifo_watch w = {.writer = -1};
	char path[PATH_MAX];
	struct stat st;

	sub(fx, "fifo", path, sizeof(path));
	if (!fifo_watch_start(&w, path))
		skip();
	assert_int_equal(fl_regfile__open(AT_FDCWD, path, 0, &st), -EINVAL);
	assert_int_equal(fl_regfile__open_path(AT_FDCWD, path, 0, &st), -EINVAL);
	assert_false(fifo_watch_opened(&w, path));
}

static void test_devices(void **state)
{
	struct stat st;

	(void)state;
	assert_int_equal(fl_regfile__open(AT_FDCWD, "/dev/null", 0, &st), -EINVAL);
	assert_int_equal(fl_regfile__open(AT_FDCWD, "/dev/zero", 0, NULL), -EINVAL);
	/* O_PATH does not reach the tty driver: no ENXIO without a terminal, just "not regular". */
	assert_int_equal(fl_regfile__open(AT_FDCWD, "/dev/tty", 0, NULL), -EINVAL);
	assert_int_equal(fl_regfile__open(AT_FDCWD, "/", 0, NULL), -EISDIR);
	assert_int_equal(fl_regfile__open(AT_FDCWD, "/nonexistent/flamed", 0, NULL), -ENOENT);
	assert_int_equal(fl_regfile__open(AT_FDCWD, NULL, 0, NULL), -EINVAL);
}

static int open_pts(const char *pts, void *ctx)
{
	(void)ctx;
	return fl_regfile__open(AT_FDCWD, pts, 0, NULL);
}

/* A session leader without a terminal that is given a pty's path does not get the pty. */
static void test_tty_not_controlling(void **state)
{
	int ret = 0, has = ctty_after(open_pts, NULL, &ret);

	(void)state;
	if (has < 0)
		skip();
	assert_int_equal(ret, -EINVAL);
	assert_int_equal(has, 0);
}

static void test_symlinks(void **state)
{
	struct fx *fx = *state;
	char path[PATH_MAX], dir[PATH_MAX];
	int fd;

	put(fx, "target", "t");
	sub(fx, "link", path, sizeof(path));
	assert_int_equal(symlink("target", path), 0);
	/* Followed unless told not to. */
	fd = fl_regfile__open(AT_FDCWD, path, 0, NULL);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fl_regfile__open(AT_FDCWD, path, FL_REGFILE_NOFOLLOW, NULL), -ELOOP);
	assert_int_equal(fl_regfile__open(AT_FDCWD, path, FL_REGFILE_NO_SYMLINKS, NULL), -ELOOP);
	/* A symlink to a FIFO is a FIFO. */
	sub(fx, "fifo", dir, sizeof(dir));
	assert_int_equal(mkfifo(dir, 0644), 0);
	sub(fx, "fifolink", path, sizeof(path));
	assert_int_equal(symlink("fifo", path), 0);
	assert_int_equal(fl_regfile__open(AT_FDCWD, path, 0, NULL), -EINVAL);
	/* A symlinked directory on the way: only NO_SYMLINKS refuses it. */
	sub(fx, "realdir", dir, sizeof(dir));
	assert_int_equal(mkdir(dir, 0755), 0);
	put(fx, "realdir/f", "f");
	sub(fx, "dirlink", path, sizeof(path));
	assert_int_equal(symlink("realdir", path), 0);
	sub(fx, "dirlink/f", path, sizeof(path));
	fd = fl_regfile__open(AT_FDCWD, path, FL_REGFILE_NOFOLLOW, NULL);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fl_regfile__open(AT_FDCWD, path, FL_REGFILE_NO_SYMLINKS, NULL), -ELOOP);
}

/* /proc magic links only when asked for. */
static void test_magic_links(void **state)
{
	struct fx *fx = *state;
	char path[PATH_MAX], self[64];
	int held, fd;

	put(fx, "file", "x");
	sub(fx, "file", path, sizeof(path));
	held = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(held >= 0);
	snprintf(self, sizeof(self), "/proc/self/fd/%d", held);
	assert_int_equal(fl_regfile__open(AT_FDCWD, self, 0, NULL), -ELOOP);
	fd = fl_regfile__open(AT_FDCWD, self, FL_REGFILE_MAGICLINKS, NULL);
	assert_true(fd >= 0);
	close(fd);
	close(held);
}

/* Under a root: ".." and absolute symlinks stay inside it. */
static void test_in_root(void **state)
{
	struct fx *fx = *state;
	char path[PATH_MAX], outside[PATH_MAX];
	struct stat st, want;
	int fd;

	put(fx, "etc_file", "inside");
	sub(fx, "abs", path, sizeof(path));
	assert_int_equal(symlink("/etc_file", path), 0);
	sub(fx, "etc_file", path, sizeof(path));
	assert_int_equal(stat(path, &want), 0);
	fd = fl_regfile__open(fx->dir_fd, "/abs", FL_REGFILE_IN_ROOT, &st);
	assert_true(fd >= 0);
	assert_int_equal(st.st_ino, want.st_ino);
	close(fd);
	fd = fl_regfile__open(fx->dir_fd, "../../../../etc_file", FL_REGFILE_IN_ROOT, &st);
	assert_true(fd >= 0);
	assert_int_equal(st.st_ino, want.st_ino);
	close(fd);
	/* Outside the root, /etc/passwd is not reachable by its absolute path. */
	snprintf(outside, sizeof(outside), "%s/passwd_link", fx->dir);
	assert_int_equal(symlink("/etc/passwd", outside), 0);
	assert_int_equal(fl_regfile__open(fx->dir_fd, "passwd_link", FL_REGFILE_IN_ROOT, NULL),
			 -ENOENT);
}

/* Reopening checks that the fd is still the file that was looked at. */
static void test_reopen_other_inode(void **state)
{
	struct fx *fx = *state;
	char path[PATH_MAX], b[PATH_MAX], buf[4] = "";
	struct stat st, other;
	int pfd, fd;

	put(fx, "a", "a");
	put(fx, "b", "b");
	sub(fx, "a", path, sizeof(path));
	pfd = fl_regfile__open_path(AT_FDCWD, path, 0, &st);
	assert_true(pfd >= 0);
	assert_int_equal(fcntl(pfd, F_GETFL) & O_PATH, O_PATH);
	sub(fx, "b", path, sizeof(path));
	assert_int_equal(stat(path, &other), 0);
	assert_int_equal(fl_regfile__reopen(pfd, &other), -ESTALE);
	/* Renamed over since: the fd still means the file looked at, not the path. */
	sub(fx, "a", path, sizeof(path));
	sub(fx, "b", b, sizeof(b));
	assert_int_equal(rename(b, path), 0);
	fd = fl_regfile__reopen(pfd, &st);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, 1), 1);
	assert_string_equal(buf, "a");
	close(fd);
	close(pfd);
	assert_int_equal(fl_regfile__reopen(-1, &st), -EINVAL);
}

/* Reads whole ranges, fewer bytes where the file ends, and refuses offsets off_t cannot hold. */
static void test_pread(void **state)
{
	char data[10000], buf[sizeof(data)];
	int fd = memfd_create("test_regfile", MFD_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + 3);
	assert_int_equal(write(fd, data, sizeof(data)), sizeof(data));
	assert_int_equal(fl_regfile__pread(fd, buf, sizeof(buf), 0), sizeof(buf));
	assert_memory_equal(buf, data, sizeof(data));
	assert_int_equal(fl_regfile__pread(fd, buf, 500, 9000), 500);
	assert_memory_equal(buf, data + 9000, 500);
	assert_int_equal(fl_regfile__pread(fd, buf, 500, 9800), 200);
	assert_memory_equal(buf, data + 9800, 200);
	assert_int_equal(fl_regfile__pread(fd, buf, 500, 10000), 0);
	assert_int_equal(fl_regfile__pread(fd, buf, 1, (uint64_t)INT64_MAX + 1), -EOVERFLOW);
	assert_int_equal(fl_regfile__pread(fd, buf, 2, INT64_MAX), -EOVERFLOW);
	close(fd);
	assert_int_equal(fl_regfile__pread(fd, buf, 1, 0), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_regular, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo, setup, teardown),
		cmocka_unit_test(test_devices),
		cmocka_unit_test(test_tty_not_controlling),
		cmocka_unit_test_setup_teardown(test_symlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_magic_links, setup, teardown),
		cmocka_unit_test_setup_teardown(test_in_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_other_inode, setup, teardown),
		cmocka_unit_test(test_pread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
