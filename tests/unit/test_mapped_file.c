// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for opening the file a process mapped: that file only, never a FIFO, a tty or a symlink's target. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../lib/files/mapped_file.h"
#include "hostile_paths.h"

struct fx {
	char dir[256];
};

static int setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	assert_true(scratch_dir_make(fx->dir, sizeof(fx->dir), "test_mapped_file"));
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	scratch_dir_remove(fx->dir);
	free(fx);
	return 0;
}

/* A file of 8 KiB under the fixture directory, and a mapping record that names it. */
static void make_file(const struct fx *fx, const char *name, char *path, size_t size,
		      struct fl_tmap *tm)
{
	static char page[8192];
	struct stat st;
	FILE *f;

	snprintf(path, size, "%s/%s", fx->dir, name);
	f = fopen(path, "we");
	assert_non_null(f);
	memset(page, 'x', sizeof(page));
	assert_int_equal(fwrite(page, 1, sizeof(page), f), sizeof(page));
	assert_int_equal(fclose(f), 0);
	assert_int_equal(stat(path, &st), 0);
	*tm = (struct fl_tmap){.start = 0x400000,
			       .end = 0x402000,
			       .dev_major = major(st.st_dev),
			       .dev_minor = minor(st.st_dev),
			       .ino = st.st_ino,
			       .path = path};
}

static void test_the_mapped_file(void **state)
{
	struct fx *fx = *state;
	char path[PATH_MAX], other[PATH_MAX];
	struct fl_tmap tm, tm2;
	int fd;

	make_file(fx, "lib.so", path, sizeof(path), &tm);
	fd = fl_open_mapped_file(&tm, 0);
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fd);
	/* Replaced on disk since: another inode at the path. */
	make_file(fx, "new.so", other, sizeof(other), &tm2);
	assert_int_equal(rename(other, path), 0);
	assert_int_equal(fl_open_mapped_file(&tm, 0), -ESTALE);
	/* Same inode number, another device: not the file either. */
	tm2.path = path;
	tm2.dev_minor++;
	assert_int_equal(fl_open_mapped_file(&tm2, 0), -ESTALE);
}

/* A path that now names a FIFO is refused without the FIFO being opened. */
static void test_fifo_not_opened(void **state)
{
	struct fx *fx = *state;
	struct fifo_watch w = {.writer = -1};
	char path[PATH_MAX];
	struct fl_tmap tm;

	make_file(fx, "lib.so", path, sizeof(path), &tm);
	assert_int_equal(unlink(path), 0);
	if (!fifo_watch_start(&w, path))
		skip();
	assert_true(fl_open_mapped_file(&tm, 0) < 0);
	assert_false(fifo_watch_opened(&w, path));
}

static int open_pts(const char *pts, void *ctx)
{
	struct fl_tmap tm = *(const struct fl_tmap *)ctx;
	struct stat st;

	if (stat(pts, &st) < 0)
		return -errno;
	tm.path = pts;
	tm.ino = st.st_ino; /* even the inode of the tty itself */
	tm.dev_major = major(st.st_dev);
	tm.dev_minor = minor(st.st_dev);
	return fl_open_mapped_file(&tm, 0);
}

/*
 * A mapping named like a tty of ours (a process in another mount namespace
 * can map a file it calls /dev/pts/N): flamed, without a controlling
 * terminal, must not get that tty as one.
 */
static void test_tty_not_controlling(void **state)
{
	struct fl_tmap tm = {.start = 0x400000, .end = 0x401000};
	int ret = 0, has = ctty_after(open_pts, &tm, &ret);

	(void)state;
	if (has < 0)
		skip();
	assert_true(ret < 0);
	assert_int_equal(has, 0);
}

/* Kernel paths hold no symlink: one on the way was put there, and is not followed. */
static void test_no_symlinks(void **state)
{
	struct fx *fx = *state;
	char path[PATH_MAX], link[PATH_MAX + 16], dir[PATH_MAX + 16];
	struct fl_tmap tm;

	make_file(fx, "lib.so", path, sizeof(path), &tm);
	snprintf(link, sizeof(link), "%s/link.so", fx->dir);
	assert_int_equal(symlink(path, link), 0);
	tm.path = link;
	assert_int_equal(fl_open_mapped_file(&tm, 0), -ELOOP);
	snprintf(dir, sizeof(dir), "%s/dirlink", fx->dir);
	assert_int_equal(symlink(fx->dir, dir), 0);
	snprintf(link, sizeof(link), "%s/dirlink/lib.so", fx->dir);
	assert_int_equal(fl_open_mapped_file(&tm, 0), -ELOOP);
}

/*
 * With a live process, /proc/PID/map_files comes first: the file mapped,
 * even when its path now names a FIFO, which is not opened (root only).
 */
static void test_map_files_first(void **state)
{
	struct fx *fx = *state;
	struct fifo_watch w = {.writer = -1};
	char path[PATH_MAX];
	struct fl_tmap tm;
	struct stat st;
	void *map;
	int fd;

	if (geteuid() != 0)
		skip();
	make_file(fx, "lib.so", path, sizeof(path), &tm);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	map = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(map != MAP_FAILED);
	close(fd);
	tm.start = (uint64_t)(uintptr_t)map;
	tm.end = tm.start + 8192;
	assert_int_equal(unlink(path), 0);
	if (!fifo_watch_start(&w, path)) {
		munmap(map, 8192);
		skip();
	}
	fd = fl_open_mapped_file(&tm, (uint32_t)getpid());
	assert_false(fifo_watch_opened(&w, path));
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_ino, tm.ino);
	close(fd);
	munmap(map, 8192);
}

/*
 * A process in another mount namespace, where our path is hidden by a
 * tmpfs: a mapping record without a device (an inode number only) is not
 * looked up at flamed's own path, which names another file for that
 * process; with its device, the file is pinned and may be (root only).
 */
static void test_other_mount_ns(void **state)
{
	struct fx *fx = *state;
	char path[PATH_MAX], c = 0;
	int ready[2], go[2], fd;
	struct fl_tmap tm;
	pid_t pid;

	if (geteuid() != 0)
		skip();
	make_file(fx, "lib.so", path, sizeof(path), &tm);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(ready[0]);
		close(go[1]);
		c = unshare(CLONE_NEWNS) == 0 &&
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
		    mount("none", fx->dir, "tmpfs", 0, NULL) == 0;
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	if (!c) {
		close(go[1]);
		waitpid(pid, NULL, 0);
		skip();
	}
	tm.dev_major = tm.dev_minor = 0;
	fd = fl_open_mapped_file(&tm, (uint32_t)pid);
	if (fd >= 0)
		close(fd);
	assert_true(fd < 0);
	make_file(fx, "lib.so", path, sizeof(path), &tm); /* the device again */
	tm.start = tm.end = 0;
	fd = fl_open_mapped_file(&tm, (uint32_t)pid);
	assert_true(fd >= 0);
	close(fd);
	close(go[1]);
	waitpid(pid, NULL, 0);
	close(ready[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_the_mapped_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_not_opened, setup, teardown),
		cmocka_unit_test(test_tty_not_controlling),
		cmocka_unit_test_setup_teardown(test_no_symlinks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_files_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_mount_ns, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
