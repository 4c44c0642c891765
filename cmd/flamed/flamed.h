/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the flamed front ends share: subcommand entry points and messages. */
#ifndef FLAMED_CMD_H
#define FLAMED_CMD_H

#include <stdbool.h>

/* Exit codes: 0 success, 1 runtime failure, 2 bad usage. */
#define EXIT_USAGE 2

extern bool verbose;

/* "flamed: " + message + newline on stderr. */
void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int cmd_record(int argc, char **argv);

#endif
