// SPDX-License-Identifier: GPL-2.0-or-later
/* The one debug printer of libflamed, installed by the front end. */
#include <stdarg.h>
#include <stddef.h>

#include "flamed/common/log.h"

/* Set once by cmd/ before any work starts; NULL discards every message. */
static fl_print_fn fl_printer;

void fl_set_print(fl_print_fn fn)
{
	fl_printer = fn;
}

void fl_pr_debug(const char *fmt, ...)
{
	fl_print_fn fn = fl_printer;
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	fn(fmt, ap);
	va_end(ap);
}
