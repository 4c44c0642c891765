/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Debug messages from libflamed, routed to a printer the front end installs. */
#ifndef FLAMED_LOG_H
#define FLAMED_LOG_H

#include <stdarg.h>

/*
 * lib/ never prints on its own and never logs above debug level: it hands
 * debug messages to this function, which cmd/ sets (NULL, the default,
 * discards them). libbpf's messages are routed here too by the samplers.
 */
typedef void (*fl_print_fn)(const char *fmt, va_list ap);

void fl_set_print(fl_print_fn fn);
void fl_pr_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
