/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Paths flamed writes: resolved by hand, relative to directory fds, never through a name others planted. */
#ifndef FLAMED_OUTPATH_H
#define FLAMED_OUTPATH_H

#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * flamed runs as root and writes where it is told, often in /tmp. The
 * kernel's fs.protected_symlinks may be off, and realpath() + rename()
 * race with whoever can write the directory. So a path is walked one
 * component at a time with O_PATH|O_NOFOLLOW; a symlink is followed only
 * when nobody less privileged than the writer (euid) could have put it
 * there (fl_outpath__link_trusted()); the result is a directory fd and a
 * name in it, which the writer then creates, replaces or opens relative to
 * that fd.
 */

/* What is at the name a path leads to. */
enum fl_outpath_kind {
	FL_OUTPATH_NONE,  /* nothing: a new file */
	FL_OUTPATH_FILE,  /* a regular file: replaced (renamed over), never written into */
	FL_OUTPATH_DIR,	  /* a directory */
	FL_OUTPATH_FIFO,  /* a FIFO */
	FL_OUTPATH_CHAR,  /* a character device */
	FL_OUTPATH_OTHER, /* a block device or a socket */
	FL_OUTPATH_FD,	  /* a descriptor of ours: /dev/stdout, /dev/fd/N, /proc/self/fd/N */
};

/* Why fl_outpath__resolve() failed. */
enum fl_outpath_problem {
	FL_OUTPATH_OK,
	FL_OUTPATH_SYSCALL,   /* a system call failed on `where` (the return value says how) */
	FL_OUTPATH_LINK,      /* -EPERM: `where` is a symlink someone else could have planted */
	FL_OUTPATH_PROC_LINK, /* -EPERM: `where` is a /proc link that is not a path (a fd, cwd...) */
	FL_OUTPATH_LOOP,      /* -ELOOP: more than FL_OUTPATH_MAX_LINKS symlinks */
};

#define FL_OUTPATH_MAX_LINKS 40

struct fl_outpath_opts {
	size_t sz;  /* sizeof(struct fl_outpath_opts) */
	uid_t euid; /* the writer: whose links and files count as its own */
	bool dir;   /* the path names a directory: every component must be one */
	mode_t mkdir_mode; /* with dir: create what is missing with this mode (less the umask); 0: do not */
};

struct fl_outpath {
	enum fl_outpath_kind kind;
	/* The directory holding name (an O_PATH fd); -1 for FL_OUTPATH_FD. */
	int dir_fd;
	/*
	 * FL_OUTPATH_FD: the descriptor number (not ours to close). DIR, FIFO,
	 * CHAR, OTHER, FILE: an O_PATH fd of what is there, fstat()ed into st.
	 * NONE: -1.
	 */
	int fd;
	char name[NAME_MAX + 1];
	struct stat st, dir_st;
	bool created; /* opts->mkdir_mode made a directory on the way */
	/* After a failure: why, the path walked up to the component at fault, and its owner. */
	enum fl_outpath_problem problem;
	char where[PATH_MAX];
	uid_t owner;
};

/*
 * Walks path (absolute, or relative to the current directory) as described
 * above and fills *o, which needs fl_outpath__fini() whatever the result.
 * With opts->dir, the result is an FL_OUTPATH_DIR (or -ENOTDIR). Returns 0
 * or -errno, with o->problem, o->where and o->owner saying what failed.
 * Writes nothing, except the directories opts->mkdir_mode asks for.
 */
int fl_outpath__resolve(struct fl_outpath *o, const char *path, const struct fl_outpath_opts *opts);
/* Closes o's fds. Safe on a zeroed or failed o, and twice. */
void fl_outpath__fini(struct fl_outpath *o);

/* The directory belongs to euid or root, and neither its group nor others may write it. */
bool fl_outpath__dir_private(const struct stat *dir, uid_t euid);
/*
 * A symlink in dir may be followed by euid: the directory is private, or
 * the link is euid's own and no hard link to it exists (someone else's
 * hard link to one of euid's links elsewhere is not euid's choice here).
 */
bool fl_outpath__link_trusted(const struct stat *link, const struct stat *dir, uid_t euid);
/*
 * euid may replace (a regular file) or write into (a FIFO, a device) st,
 * found in dir. A regular file, which is renamed over, not written into:
 * where neither dir's group nor others may write, or euid's own. A FIFO or
 * a device: in a directory private to euid (fl_outpath__dir_private()),
 * else only one euid or dir's owner made there, which no hard link shares
 * (a user's directory may hold a link to root's FIFO or to a device when
 * fs.protected_hardlinks is off).
 */
bool fl_outpath__may_write(const struct stat *st, const struct stat *dir, uid_t euid);
/*
 * N when path names the descriptor N of this process (/dev/stdout,
 * /dev/stderr, /dev/fd/N, /proc/self/fd/N, /proc/thread-self/fd/N,
 * /proc/PID/fd/N with our pid), else -1. Looks at the text only.
 */
int fl_outpath__fd_number(const char *path);

/*
 * A file that appears under its name, complete, only when committed: an
 * unnamed O_TMPFILE in the directory (nothing is left if the process is
 * killed), or where the filesystem has none, a named ".tmp-NAME-PID-N"
 * beside it (removed on failure; what a SIGKILL leaves is removed by
 * fl_outfile__remove_stale() later).
 */
struct fl_outfile {
	int fd;	    /* write here; -1 when closed */
	int dir_fd; /* borrowed: must outlive the outfile */
	char name[NAME_MAX + 1];
	char tmp[NAME_MAX + 1]; /* the named temporary in dir_fd while there is one, else "" */
};

#define FL_OUTFILE_NO_TMPFILE 0x1 /* always a named temporary (for tests) */

/*
 * Creates the file for name in dir_fd with mode (less the umask). *f needs
 * fl_outfile__close() once this succeeded. Returns 0 or -errno.
 */
int fl_outfile__create(struct fl_outfile *f, int dir_fd, const char *name, mode_t mode,
		       unsigned int flags);
/*
 * fsync()s the file and puts it under its name, replacing whatever entry
 * is there (replace: a file, a symlink, which is not followed) or failing
 * with -EEXIST (!replace). The fd stays open. Returns 0 or -errno.
 */
int fl_outfile__commit(struct fl_outfile *f, bool replace);
/* Closes the fd and removes the temporary, if any (nothing once committed). Safe twice. */
void fl_outfile__close(struct fl_outfile *f);
/* Removes the named temporary, if any; async-signal-safe. */
void fl_outfile__remove_temp(const struct fl_outfile *f);
/*
 * Removes the ".tmp-NAME-PID-N" temporaries for name in dir_fd that are
 * euid's regular files and whose process is gone. Returns how many.
 */
int fl_outfile__remove_stale(int dir_fd, const char *name, uid_t euid);

#endif
