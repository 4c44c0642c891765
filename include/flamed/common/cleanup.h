/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Scope-based cleanup: _cleanup_(f), TAKE_PTR and TAKE_FD, in systemd's spirit. */
#ifndef FLAMED_CLEANUP_H
#define FLAMED_CLEANUP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

/* Return the pointer and leave NULL behind, so the cleanup handler skips it. */
#define TAKE_PTR(p)                                                            \
	({                                                                     \
		__typeof__(p) _tp_ = (p);                                      \
		(p) = NULL;                                                    \
		_tp_;                                                          \
	})

/* Return the fd and leave -1 behind. */
#define TAKE_FD(fd)                                                            \
	({                                                                     \
		int _tf_ = (fd);                                               \
		(fd) = -1;                                                     \
		_tf_;                                                          \
	})

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

/* Defines `name##p(type **)` calling `fn(*p)`; fn must accept NULL. */
#define DEFINE_FREE_FUNC(type, fn)                                             \
	static inline void fn##p(type **p)                                     \
	{                                                                      \
		fn(*p);                                                        \
	}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
