// SPDX-License-Identifier: GPL-2.0-or-later
/* One-line error messages into the caller's buffer. */
#include <stdarg.h>
#include <stdio.h>

#include "common/seterr.h"

void fl_seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
