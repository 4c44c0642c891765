/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Libraries that one job alone needs (libcurl to push, libmicrohttpd for
 * the metrics endpoint, libdebuginfod to fetch debug info), opened when
 * that job starts. Linked in, the dynamic linker loaded them and the
 * twenty-odd libraries they pull in (TLS, Kerberos, LDAP, ...) at every
 * start of every command: about 4 ms of CPU, three times what `flamed svg`
 * of a small profile takes without them. Private to lib/.
 *
 * A user of library L declares each function f it calls as sym_f
 * (FL_DYNLIB_SYM), resolves them all once in a load function
 * (FL_DYNLIB_RESOLVE, which returns -ELIBACC from it when one is missing),
 * and calls sym_f(...) as it would f(...): the prototypes are the
 * library's own headers'.
 */
#ifndef FLAMED_DYNLIB_H
#define FLAMED_DYNLIB_H

#include <pthread.h>

struct fl_dynlib {
	const char *soname;  /* "libcurl.so.4" */
	const char *package; /* to install: "libcurl4 (Debian) or libcurl (Fedora)" */
	pthread_mutex_t lock;
	void *handle;	 /* dlopen()'s, once it succeeded */
	int state;	 /* 0: not tried; 1: open; -1: failed for good */
	char error[512]; /* why it failed: one line, naming the library and where to find it */
};

#define FL_DYNLIB_INIT(so, pkg)                                                                    \
	{                                                                                          \
		.soname = (so), .package = (pkg), .lock = PTHREAD_MUTEX_INITIALIZER                \
	}

/*
 * Function name of lib (opened on the first call; never closed), or NULL:
 * the library or the function is missing, and fl_dynlib__error() says so.
 */
void *fl_dynlib__sym(struct fl_dynlib *lib, const char *name);
/* Why the last fl_dynlib__sym() failed; "" when none did. */
const char *fl_dynlib__error(const struct fl_dynlib *lib);

#define FL_DYNLIB_SYM(f) static typeof(f) *sym_##f
#define FL_DYNLIB_RESOLVE(lib, f)                                                                  \
	do {                                                                                       \
		sym_##f = (typeof(sym_##f))fl_dynlib__sym((lib), #f);                              \
		if (!sym_##f)                                                                      \
			return -ELIBACC;                                                           \
	} while (0)

#endif
