/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Libraries that one job alone needs (libcurl to push, libmicrohttpd for
 * the metrics endpoint, libdebuginfod to fetch debug info), opened when
 * that job starts. Linked in, the dynamic linker loaded them and the
 * twenty-odd libraries they pull in (TLS, Kerberos, LDAP, ...) at every
 * start of every command: about 4 ms of CPU, three times what `flamed svg`
 * of a small profile takes without them. Private to lib/.
 *
 * A user of library L lists the functions f it calls in an X-macro, declares
 * each as sym_f (FL_DYNLIB_SYM) and a table of them (FL_DYNLIB_ENTRY), has
 * them all resolved once by fl_dynlib__load() when its job starts, and
 * calls sym_f(...) as it would f(...): the prototypes are the library's own
 * headers'.
 */
#ifndef FLAMED_DYNLIB_H
#define FLAMED_DYNLIB_H

#include <pthread.h>
#include <stddef.h>

struct fl_dynlib {
	const char *soname;  /* "libcurl.so.4" */
	const char *package; /* to install: "libcurl4 (Debian) or libcurl (Fedora)" */
	pthread_mutex_t lock;
	void *handle;	 /* dlopen()'s, once it succeeded */
	int state;	 /* 0: not tried; 1: open, every function resolved; -1: failed for good */
	char error[512]; /* why it failed: one line, naming the library and where to find it */
};

#define FL_DYNLIB_INIT(so, pkg)                                                                    \
	{                                                                                          \
		.soname = (so), .package = (pkg), .lock = PTHREAD_MUTEX_INITIALIZER                \
	}

/* A function to resolve: its name, and where its address goes. */
struct fl_dynlib_sym {
	const char *name;
	void **addr;
};

/*
 * Opens lib (the first call; never closed) and resolves the n functions of
 * syms, once: 0, or -ELIBACC when the library or a function is missing,
 * and fl_dynlib__error() says which.
 */
int fl_dynlib__load(struct fl_dynlib *lib, const struct fl_dynlib_sym *syms, size_t n);
/* Why fl_dynlib__load() failed; "" when it did not. */
const char *fl_dynlib__error(const struct fl_dynlib *lib);

#define FL_DYNLIB_SYM(f) static typeof(f) *sym_##f;
#define FL_DYNLIB_ENTRY(f) {#f, (void **)&sym_##f},

#endif
