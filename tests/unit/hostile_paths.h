/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * For the unit tests of code that opens paths other users choose: scratch
 * directories to put hostile files in, whether a FIFO was opened for
 * reading, and whether a tty became the controlling terminal. Included by
 * the test files that need them.
 */
#ifndef FLAMED_TEST_HOSTILE_PATHS_H
#define FLAMED_TEST_HOSTILE_PATHS_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Makes dir ($TMPDIR or /tmp, then name.XXXXXX); false when it cannot. */
static inline bool scratch_dir_make(char *dir, size_t size, const char *name)
{
	snprintf(dir, size, "%s/%s.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
	return mkdtemp(dir) != NULL;
}

static inline int scratch_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* A copy of the file at path in a new unlinked file in /tmp: its fd (read-write), or -1. */
static inline int scratch_copy_unlinked(const char *path)
{
	int in = open(path, O_RDONLY | O_CLOEXEC), out = open("/tmp", O_TMPFILE | O_RDWR, 0600);
	struct stat st;
	bool ok = in >= 0 && out >= 0 && fstat(in, &st) == 0 && st.st_size > 0;

	for (off_t done = 0; ok && done < st.st_size;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)(st.st_size - done), 0);

		ok = n > 0;
		done += n;
	}
	if (in >= 0)
		close(in);
	if (!ok && out >= 0) {
		close(out);
		out = -1;
	}
	return out;
}

/* Removes dir and all in it, symlinks not followed. */
static inline void scratch_dir_remove(const char *dir)
{
	nftw(dir, scratch_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * A FIFO at path with a writer blocked in open(O_WRONLY): that open returns
 * (and the writer exits) as soon as anything opens the FIFO for reading.
 */
struct fifo_watch {
	pid_t writer;
};

static inline void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Whether pid is blocked in openat() (/proc/PID/syscall starts with its number). */
static inline bool in_openat(pid_t pid)
{
	char path[64], buf[64] = "";
	FILE *f;
	long nr = -1;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(buf, sizeof(buf), f))
		nr = strtol(buf, NULL, 10);
	fclose(f);
	return nr == SYS_openat || nr == SYS_open;
}

/* Returns false when the machine cannot tell (no /proc/PID/syscall): the caller skips. */
static inline bool fifo_watch_start(struct fifo_watch *w, const char *path)
{
	if (mkfifo(path, 0644) < 0)
		return false;
	w->writer = fork();
	if (w->writer < 0)
		return false;
	if (!w->writer) {
		int fd = open(path, O_WRONLY | O_CLOEXEC);

		_exit(fd >= 0 ? 0 : 1);
	}
	/* The writer must be waiting before anything else may open the FIFO. */
	for (int i = 0; i < 500; i++) {
		if (in_openat(w->writer)) {
			sleep_ms(20); /* in fifo_open's wait, not on its way */
			return true;
		}
		sleep_ms(10);
	}
	kill(w->writer, SIGKILL);
	waitpid(w->writer, NULL, 0);
	return false;
}

/* Whether the FIFO was opened for reading since fifo_watch_start(); ends the watch. */
static inline bool fifo_watch_opened(struct fifo_watch *w, const char *path)
{
	int status, fd;

	for (int i = 0; i < 20; i++) {
		if (waitpid(w->writer, &status, WNOHANG) == w->writer)
			return true;
		sleep_ms(10);
	}
	/* Release the writer (O_NONBLOCK: it is there, so no wait). */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	if (waitpid(w->writer, &status, 0) != w->writer)
		kill(w->writer, SIGKILL);
	return false;
}

/*
 * Calls fn(pts, ctx) in a child that is a session leader without a
 * controlling terminal, pts being the slave of a pty the child just made
 * (which nothing has opened yet: the first session leader to open it
 * without O_NOCTTY gets it). *ret is what fn returned; the result says
 * whether the child had a controlling terminal afterwards. Returns -1 when
 * no pty can be made (the caller skips).
 */
static inline int ctty_after(int (*fn)(const char *pts, void *ctx), void *ctx, int *ret)
{
	int pipefd[2], out[2] = {0, 0}, status;
	pid_t pid;

	if (pipe(pipefd) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		int master, r[2] = {-1, -1}, fd;
		const char *pts;

		close(pipefd[0]);
		setsid();
		master = posix_openpt(O_RDWR | O_NOCTTY);
		if (master < 0 || grantpt(master) || unlockpt(master) || !(pts = ptsname(master)))
			_exit(2);
		r[0] = fn(pts, ctx);
		if (r[0] >= 0)
			close(r[0]);
		/* /dev/tty opens only for a process with a controlling terminal. */
		fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
		r[1] = fd >= 0;
		if (write(pipefd[1], r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(3);
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], out, sizeof(out)) != (ssize_t)sizeof(out))
		out[1] = -1;
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	if (out[1] < 0)
		return -1;
	*ret = out[0];
	return out[1];
}

#endif
