// SPDX-License-Identifier: GPL-2.0-or-later
/* Libraries opened when a job first needs them (dynlib.h). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#include "common/dynlib.h"

static void set_error(struct fl_dynlib *lib, const char *what)
{
	/* dlerror()'s message names the file, and says what was wrong with it. */
	snprintf(lib->error, sizeof(lib->error), "%s; install %s", what ? what : lib->soname,
		 lib->package);
}

int fl_dynlib__load(struct fl_dynlib *lib, const struct fl_dynlib_sym *syms, size_t n)
{
	int state;

	pthread_mutex_lock(&lib->lock);
	if (lib->state == 0) {
		/*
		 * By soname, as the dynamic linker would have found it at start:
		 * the same search (ld.so.cache, the system's directories).
		 */
		lib->handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
		lib->state = lib->handle ? 1 : -1;
		if (!lib->handle)
			set_error(lib, dlerror());
		for (size_t i = 0; lib->state == 1 && i < n; i++) {
			/* dlsym() returns a function's address as a void *, as POSIX has it. */
			*syms[i].addr = dlsym(lib->handle, syms[i].name);
			if (!*syms[i].addr) {
				char what[256];

				snprintf(what, sizeof(what), "%s has no %s", lib->soname, syms[i].name);
				set_error(lib, what);
				lib->state = -1;
			}
		}
	}
	state = lib->state;
	pthread_mutex_unlock(&lib->lock);
	return state == 1 ? 0 : -ELIBACC;
}

const char *fl_dynlib__error(const struct fl_dynlib *lib)
{
	return lib->error;
}
