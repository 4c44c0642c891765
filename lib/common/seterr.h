/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one-line error messages lib/ hands back to its callers. Private to lib/. */
#ifndef FLAMED_SETERR_H
#define FLAMED_SETERR_H

#include <stddef.h>

/* Formats the message into err (errlen bytes, cut to fit); nothing when err is NULL or errlen 0. */
void fl_seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
