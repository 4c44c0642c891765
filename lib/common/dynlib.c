// SPDX-License-Identifier: GPL-2.0-or-later
/* Libraries opened when a job first needs them (dynlib.h). */
#include <dlfcn.h>
#include <stdio.h>

#include "common/dynlib.h"

static void set_error(struct fl_dynlib *lib, const char *what)
{
	/* dlerror()'s message names the file, and says what was wrong with it. */
	snprintf(lib->error, sizeof(lib->error), "%s; install %s", what ? what : lib->soname,
		 lib->package);
}

void *fl_dynlib__sym(struct fl_dynlib *lib, const char *name)
{
	void *sym = NULL;

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
	}
	if (lib->state == 1) {
		dlerror();
		sym = dlsym(lib->handle, name);
		if (!sym) {
			char what[256];

			snprintf(what, sizeof(what), "%s has no %s", lib->soname, name);
			set_error(lib, what);
		}
	}
	pthread_mutex_unlock(&lib->lock);
	return sym;
}

const char *fl_dynlib__error(const struct fl_dynlib *lib)
{
	return lib->error;
}
