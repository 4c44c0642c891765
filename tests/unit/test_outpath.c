// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of output path resolution (which links are followed) and of files that appear whole. */
#include <dirent.h>
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/files/outpath.h"

static char dir[256];

/* A fresh scratch directory per test, the current directory while it runs. */
static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s/flamed-outpath.XXXXXX", getenv("TMPDIR") ?: "/tmp");
	if (!mkdtemp(dir) || chdir(dir) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	if (chdir("/") < 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct stat mkstat(uid_t uid, mode_t mode, nlink_t nlink)
{
	struct stat st = {.st_uid = uid, .st_mode = mode, .st_nlink = nlink};

	return st;
}

static void test_predicates(void **state)
{
	struct stat etc = mkstat(0, S_IFDIR | 0755, 2), tmp = mkstat(0, S_IFDIR | 01777, 2),
		    grp = mkstat(0, S_IFDIR | 0775, 2), home = mkstat(1000, S_IFDIR | 0755, 2),
		    mine = mkstat(1000, S_IFDIR | 0700, 2);

	(void)state;
	/* A directory only root or the writer can write. */
	assert_true(fl_outpath__dir_private(&etc, 0));
	assert_true(fl_outpath__dir_private(&etc, 1000));
	assert_true(fl_outpath__dir_private(&mine, 1000));
	assert_false(fl_outpath__dir_private(&mine, 0));
	assert_false(fl_outpath__dir_private(&home, 0)); /* another user's */
	assert_false(fl_outpath__dir_private(&tmp, 0));
	assert_false(fl_outpath__dir_private(&grp, 0));

	/* Links: any in a private directory; elsewhere only our own, not hard-linked. */
	struct stat l_root = mkstat(0, S_IFLNK | 0777, 1),
		    l_nobody = mkstat(65534, S_IFLNK | 0777, 1),
		    l_root_hard = mkstat(0, S_IFLNK | 0777, 2),
		    l_user = mkstat(1000, S_IFLNK | 0777, 1);

	assert_true(fl_outpath__link_trusted(&l_nobody, &etc, 0));
	assert_true(fl_outpath__link_trusted(&l_root, &tmp, 0));
	assert_false(fl_outpath__link_trusted(&l_nobody, &tmp, 0));
	assert_false(fl_outpath__link_trusted(&l_root_hard, &tmp, 0));
	assert_false(
		fl_outpath__link_trusted(&l_root, &tmp, 1000)); /* root's, but not the writer's */
	assert_true(fl_outpath__link_trusted(&l_user, &tmp, 1000));
	/* A user's link in the user's home: root does not let the user choose what it replaces. */
	assert_false(fl_outpath__link_trusted(&l_user, &home, 0));
	assert_true(fl_outpath__link_trusted(&l_user, &home, 1000));

	/* Final names. */
	struct stat f_nobody = mkstat(65534, S_IFREG | 0644, 1),
		    f_root = mkstat(0, S_IFREG | 0600, 1),
		    f_root_hard = mkstat(0, S_IFREG | 0600, 3),
		    p_nobody = mkstat(65534, S_IFIFO | 0666, 1),
		    p_root = mkstat(0, S_IFIFO | 0600, 1),
		    c_root_hard = mkstat(0, S_IFCHR | 0666, 2),
		    f_user = mkstat(1000, S_IFREG | 0644, 1);

	assert_false(fl_outpath__may_write(&f_nobody, &tmp, 0));
	assert_false(fl_outpath__may_write(&p_nobody, &tmp, 0));
	assert_true(fl_outpath__may_write(&f_root, &tmp, 0));
	assert_true(fl_outpath__may_write(&f_root_hard, &tmp,
					  0)); /* renamed over: the links keep theirs */
	assert_true(fl_outpath__may_write(&p_root, &tmp, 0));
	assert_false(fl_outpath__may_write(&c_root_hard, &tmp, 0)); /* a device linked into /tmp */
	assert_true(fl_outpath__may_write(&c_root_hard, &etc, 0));
	assert_false(fl_outpath__may_write(&f_root, &grp, 1000));
	/* Another user's file in that user's own directory: nobody else could have put it there. */
	assert_true(fl_outpath__may_write(&f_user, &home, 0));
	/*
	 * Written into, not replaced: in a directory another user owns, that
	 * user's FIFO, never a device or FIFO linked in from elsewhere
	 * (fs.protected_hardlinks off), which its mode bits do not tell.
	 */
	struct stat p_user = mkstat(1000, S_IFIFO | 0600, 1),
		    p_root_hard = mkstat(0, S_IFIFO | 0600, 2),
		    c_user_hard = mkstat(1000, S_IFCHR | 0600, 2);

	assert_true(fl_outpath__may_write(&p_user, &home, 0));
	assert_false(fl_outpath__may_write(&c_root_hard, &home, 0));
	assert_false(fl_outpath__may_write(&p_root_hard, &home, 0));
	assert_false(fl_outpath__may_write(&c_user_hard, &home, 0));
}

static void test_fd_number(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(fl_outpath__fd_number("/dev/stdout"), 1);
	assert_int_equal(fl_outpath__fd_number("/dev/stderr"), 2);
	assert_int_equal(fl_outpath__fd_number("/dev/fd/63"), 63);
	assert_int_equal(fl_outpath__fd_number("/proc/self/fd/7"), 7);
	assert_int_equal(fl_outpath__fd_number("/proc/thread-self/fd/0"), 0);
	snprintf(buf, sizeof(buf), "/proc/%d/fd/5", (int)getpid());
	assert_int_equal(fl_outpath__fd_number(buf), 5);
	snprintf(buf, sizeof(buf), "/proc/%d/fd/5", (int)getpid() + 1);
	assert_int_equal(fl_outpath__fd_number(buf), -1);
	assert_int_equal(fl_outpath__fd_number("/dev/fd/"), -1);
	assert_int_equal(fl_outpath__fd_number("/dev/fd/3/x"), -1);
	assert_int_equal(fl_outpath__fd_number("/dev/fd/-1"), -1);
	assert_int_equal(fl_outpath__fd_number("/dev/fd/99999999999"), -1);
	assert_int_equal(fl_outpath__fd_number("/proc/self/cwd"), -1);
	assert_int_equal(fl_outpath__fd_number("dev/stdout"), -1);
	assert_int_equal(fl_outpath__fd_number("/dev/stdoutx"), -1);
}

static const struct fl_outpath_opts *opts_of(uid_t euid)
{
	static struct fl_outpath_opts o;

	o = (struct fl_outpath_opts){.sz = sizeof(o), .euid = euid};
	return &o;
}

/* The name of o's directory, as /proc sees it. */
static const char *dir_of(const struct fl_outpath *o)
{
	static char buf[PATH_MAX];
	char proc[64];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->dir_fd);
	n = readlink(proc, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	return buf;
}

static void touch(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_resolve_plain(void **state)
{
	struct fl_outpath o;
	char sub[PATH_MAX];

	(void)state;
	assert_int_equal(mkdir("d", 0755), 0);
	touch("d/f", "x");
	assert_int_equal(mkfifo("d/p", 0600), 0);

	assert_int_equal(fl_outpath__resolve(&o, "new.svg", opts_of(geteuid())), 0);
	assert_int_equal(o.kind, FL_OUTPATH_NONE);
	assert_string_equal(o.name, "new.svg");
	assert_string_equal(dir_of(&o), dir);
	fl_outpath__fini(&o);
	fl_outpath__fini(&o);

	assert_int_equal(fl_outpath__resolve(&o, "./d//f", opts_of(geteuid())), 0);
	assert_int_equal(o.kind, FL_OUTPATH_FILE);
	assert_string_equal(o.name, "f");
	snprintf(sub, sizeof(sub), "%s/d", dir);
	assert_string_equal(dir_of(&o), sub);
	fl_outpath__fini(&o);

	snprintf(sub, sizeof(sub), "%s/d/../d/p", dir);
	assert_int_equal(fl_outpath__resolve(&o, sub, opts_of(geteuid())), 0);
	assert_int_equal(o.kind, FL_OUTPATH_FIFO);
	fl_outpath__fini(&o);

	assert_int_equal(fl_outpath__resolve(&o, "d", opts_of(geteuid())), 0);
	assert_int_equal(o.kind, FL_OUTPATH_DIR);
	fl_outpath__fini(&o);

	assert_int_equal(fl_outpath__resolve(&o, "d/", opts_of(geteuid())), -EISDIR);
	fl_outpath__fini(&o);
	assert_int_equal(fl_outpath__resolve(&o, "d/f/x", opts_of(geteuid())), -ENOTDIR);
	assert_string_equal(o.where, "d/f");
	fl_outpath__fini(&o);
	assert_int_equal(fl_outpath__resolve(&o, "nodir/x", opts_of(geteuid())), -ENOENT);
	assert_int_equal(o.problem, FL_OUTPATH_SYSCALL);
	assert_string_equal(o.where, "nodir");
	fl_outpath__fini(&o);
	assert_int_equal(fl_outpath__resolve(&o, "", opts_of(geteuid())), -ENOENT);
	fl_outpath__fini(&o);

	assert_int_equal(fl_outpath__resolve(&o, "/dev/null", opts_of(geteuid())), 0);
	assert_int_equal(o.kind, FL_OUTPATH_CHAR);
	assert_string_equal(o.name, "null");
	fl_outpath__fini(&o);
}

static void test_resolve_fds(void **state)
{
	struct fl_outpath o;
	char buf[64];
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(fl_outpath__resolve(&o, "/dev/stdout", opts_of(geteuid())), 0);
	assert_int_equal(o.kind, FL_OUTPATH_FD);
	assert_int_equal(o.fd, 1);
	fl_outpath__fini(&o);
	/* The descriptor is the caller's: fini leaves it open. */
	snprintf(buf, sizeof(buf), "/dev/fd/%d", fd);
	assert_int_equal(fl_outpath__resolve(&o, buf, opts_of(geteuid())), 0);
	assert_int_equal(o.kind, FL_OUTPATH_FD);
	assert_int_equal(o.fd, fd);
	fl_outpath__fini(&o);
	assert_true(fcntl(fd, F_GETFD) >= 0);
	/* Reached through links: /dev/fd is one to /proc/self/fd, and so is ours. */
	assert_int_equal(symlink(buf, "tofd"), 0);
	assert_int_equal(fl_outpath__resolve(&o, "tofd", opts_of(geteuid())), 0);
	assert_int_equal(o.kind, FL_OUTPATH_FD);
	assert_int_equal(o.fd, fd);
	fl_outpath__fini(&o);
	close(fd);
	assert_int_equal(fl_outpath__resolve(&o, buf, opts_of(geteuid())), -EBADF);
	fl_outpath__fini(&o);
	/* /proc links that are no paths are not followed. */
	assert_int_equal(fl_outpath__resolve(&o, "/proc/self/cwd/x", opts_of(geteuid())), -EPERM);
	assert_int_equal(o.problem, FL_OUTPATH_PROC_LINK);
	fl_outpath__fini(&o);
	assert_int_equal(fl_outpath__resolve(&o, "/proc/self/fd/1/x", opts_of(geteuid())), -EPERM);
	assert_int_equal(o.problem, FL_OUTPATH_PROC_LINK);
	fl_outpath__fini(&o);
}

static void test_resolve_links(void **state)
{
	struct fl_outpath o;
	char sub[PATH_MAX];
	uid_t me = geteuid();

	(void)state;
	assert_int_equal(mkdir("t", 0755), 0);
	touch("t/target", "x");
	assert_int_equal(symlink("t/target", "rel"), 0);
	snprintf(sub, sizeof(sub), "%s/t", dir);
	assert_int_equal(symlink(sub, "abs"), 0);
	assert_int_equal(symlink("rel", "chain"), 0);
	assert_int_equal(symlink("loop1", "loop2"), 0);
	assert_int_equal(symlink("loop2", "loop1"), 0);

	/* Our own links in our own directory are followed: the target is what gets replaced. */
	assert_int_equal(fl_outpath__resolve(&o, "chain", opts_of(me)), 0);
	assert_int_equal(o.kind, FL_OUTPATH_FILE);
	assert_string_equal(o.name, "target");
	assert_string_equal(dir_of(&o), sub);
	fl_outpath__fini(&o);
	assert_int_equal(fl_outpath__resolve(&o, "abs/new", opts_of(me)), 0);
	assert_int_equal(o.kind, FL_OUTPATH_NONE);
	assert_string_equal(dir_of(&o), sub);
	fl_outpath__fini(&o);
	assert_int_equal(fl_outpath__resolve(&o, "loop1", opts_of(me)), -ELOOP);
	assert_int_equal(o.problem, FL_OUTPATH_LOOP);
	fl_outpath__fini(&o);

	/*
	 * In a directory others can write, a link that is not the writer's is
	 * refused: here the writer is someone else than the links' owner.
	 */
	assert_int_equal(chmod(".", 01777), 0);
	assert_int_equal(fl_outpath__resolve(&o, "rel", opts_of(me + 1)), -EPERM);
	assert_int_equal(o.problem, FL_OUTPATH_LINK);
	assert_int_equal(o.owner, me);
	assert_string_equal(o.where, "rel");
	fl_outpath__fini(&o);
	snprintf(sub, sizeof(sub), "%s/abs/target", dir);
	assert_int_equal(fl_outpath__resolve(&o, sub, opts_of(me + 1)), -EPERM);
	snprintf(sub, sizeof(sub), "%s/abs", dir);
	assert_string_equal(o.where, sub);
	fl_outpath__fini(&o);
	/* ... and the writer's own is followed, unless hard-linked. */
	assert_int_equal(fl_outpath__resolve(&o, "rel", opts_of(me)), 0);
	assert_int_equal(o.kind, FL_OUTPATH_FILE);
	fl_outpath__fini(&o);
	assert_int_equal(linkat(AT_FDCWD, "rel", AT_FDCWD, "t/hard", 0), 0);
	assert_int_equal(fl_outpath__resolve(&o, "rel", opts_of(me)), -EPERM);
	fl_outpath__fini(&o);
}

static void test_resolve_mkdir(void **state)
{
	struct fl_outpath_opts opts = {.sz = sizeof(opts), .euid = geteuid(), .dir = true};
	struct fl_outpath o;
	struct stat st;
	mode_t mask = umask(0);

	(void)state;
	assert_int_equal(fl_outpath__resolve(&o, "a/b", &opts), -ENOENT);
	fl_outpath__fini(&o);
	opts.mkdir_mode = 0750;
	umask(027);
	assert_int_equal(fl_outpath__resolve(&o, "a/b", &opts), 0);
	assert_int_equal(o.kind, FL_OUTPATH_DIR);
	assert_true(o.created);
	assert_int_equal(fstat(o.fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
	fl_outpath__fini(&o);
	assert_int_equal(stat("a", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
	/* The umask takes away, never adds. */
	umask(077);
	assert_int_equal(fl_outpath__resolve(&o, "a/c", &opts), 0);
	fl_outpath__fini(&o);
	assert_int_equal(stat("a/c", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	umask(mask);
	/* A symlink of the writer's own on the way is followed; a missing name beyond is created. */
	assert_int_equal(symlink("a", "toa"), 0);
	assert_int_equal(fl_outpath__resolve(&o, "toa/d", &opts), 0);
	fl_outpath__fini(&o);
	assert_int_equal(stat("a/d", &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* ... and one of someone else's in a directory others can write is not. */
	assert_int_equal(chmod(".", 01777), 0);
	opts.euid = geteuid() + 1;
	assert_int_equal(fl_outpath__resolve(&o, "toa/e", &opts), -EPERM);
	assert_int_equal(o.problem, FL_OUTPATH_LINK);
	fl_outpath__fini(&o);
	assert_int_equal(access("a/e", F_OK), -1);
	opts.euid = geteuid();
	/* The directory asked for is there already: found, not created. */
	assert_int_equal(fl_outpath__resolve(&o, "a", &opts), 0);
	assert_false(o.created);
	fl_outpath__fini(&o);
	touch("file", "");
	assert_int_equal(fl_outpath__resolve(&o, "file", &opts), -ENOTDIR);
	fl_outpath__fini(&o);
	assert_int_equal(fl_outpath__resolve(&o, "/", &opts), 0);
	assert_int_equal(o.kind, FL_OUTPATH_DIR);
	fl_outpath__fini(&o);
}

static size_t nr_entries(void)
{
	DIR *d = opendir(".");
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void read_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

static void write_all(int fd, const char *s)
{
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

static void check_outfile(unsigned int flags)
{
	struct fl_outfile f;
	char buf[64];
	struct stat st;
	int dfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	mode_t mask = umask(022);

	assert_true(dfd >= 0);
	/* Nothing under the name until committed; nothing at all after an abort. */
	assert_int_equal(fl_outfile__create(&f, dfd, "out.svg", 0666, flags), 0);
	write_all(f.fd, "partial");
	assert_int_equal(access("out.svg", F_OK), -1);
	assert_int_equal(nr_entries(), (flags & FL_OUTFILE_NO_TMPFILE) ? 1 : 0);
	fl_outfile__close(&f);
	fl_outfile__close(&f);
	assert_int_equal(nr_entries(), 0);

	assert_int_equal(fl_outfile__create(&f, dfd, "out.svg", 0666, flags), 0);
	write_all(f.fd, "one");
	assert_int_equal(fl_outfile__commit(&f, true), 0);
	fl_outfile__close(&f);
	read_file("out.svg", buf, sizeof(buf));
	assert_string_equal(buf, "one");
	assert_int_equal(stat("out.svg", &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(nr_entries(), 1);

	/* Replacing: the entry is replaced, a symlink is not followed. */
	touch("victim", "precious");
	assert_int_equal(unlink("out.svg"), 0);
	assert_int_equal(symlink("victim", "out.svg"), 0);
	assert_int_equal(fl_outfile__create(&f, dfd, "out.svg", 0600, flags), 0);
	write_all(f.fd, "two");
	assert_int_equal(fl_outfile__commit(&f, true), 0);
	fl_outfile__close(&f);
	read_file("victim", buf, sizeof(buf));
	assert_string_equal(buf, "precious");
	assert_int_equal(lstat("out.svg", &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	read_file("out.svg", buf, sizeof(buf));
	assert_string_equal(buf, "two");

	/* Not replacing: -EEXIST, and the temporary goes. */
	assert_int_equal(fl_outfile__create(&f, dfd, "out.svg", 0600, flags), 0);
	assert_int_equal(fl_outfile__commit(&f, false), -EEXIST);
	fl_outfile__close(&f);
	assert_int_equal(nr_entries(), 2);
	read_file("out.svg", buf, sizeof(buf));
	assert_string_equal(buf, "two");
	umask(mask);
	close(dfd);
}

static void test_outfile(void **state)
{
	(void)state;
	check_outfile(0);
}

static void test_outfile_named_temp(void **state)
{
	(void)state;
	check_outfile(FL_OUTFILE_NO_TMPFILE);
}

/* What a killed writer left is removed by the next one: only its own, of dead processes. */
static void test_remove_stale(void **state)
{
	struct fl_outfile f;
	char dead[64], alive[64], other[64];
	int dfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	pid_t pid = fork();

	(void)state;
	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	snprintf(dead, sizeof(dead), ".tmp-x.svg-%d-0", (int)pid);
	snprintf(alive, sizeof(alive), ".tmp-x.svg-%d-0", (int)getppid());
	snprintf(other, sizeof(other), ".tmp-x.svg-%d-0-x", (int)pid);
	touch(dead, "");
	touch(alive, "");
	touch(other, "");
	touch(".tmp-y.svg-1-0", "");
	assert_int_equal(fl_outfile__remove_stale(dfd, "x.svg", geteuid() + 1), 0);
	assert_int_equal(fl_outfile__remove_stale(dfd, "x.svg", geteuid()), 1);
	assert_int_equal(access(dead, F_OK), -1);
	assert_int_equal(access(alive, F_OK), 0);
	assert_int_equal(access(other, F_OK), 0);
	/* The named-temporary writer does it on its own. */
	touch(dead, "");
	assert_int_equal(fl_outfile__create(&f, dfd, "x.svg", 0666, FL_OUTFILE_NO_TMPFILE), 0);
	assert_int_equal(access(dead, F_OK), -1);
	fl_outfile__close(&f);
	close(dfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_predicates),
		cmocka_unit_test(test_fd_number),
		cmocka_unit_test_setup_teardown(test_resolve_plain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve_fds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve_links, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve_mkdir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outfile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outfile_named_temp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_stale, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
