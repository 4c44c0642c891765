/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reading a secret (push_auth_file: a token, or user:password) from a file only its owner can read. */
#ifndef FLAMED_AUTHFILE_H
#define FLAMED_AUTHFILE_H

#include <stddef.h>
#include <sys/types.h>

#define FL_AUTHFILE_MAX 4096u /* bytes: a bigger file is not a credential */

/*
 * Reads the credential in the file at path (absolute): one line, a bearer
 * token or "user:password", with its trailing "\n" or "\r\n" (any number of
 * them) stripped. The file is opened without following a symbolic link in
 * its last component and without becoming a controlling terminal (O_NOFOLLOW,
 * O_NOCTTY, through fl_regfile__open()), and is refused unless, checked on
 * the open fd:
 *  - it is a regular file (not a FIFO, a device, a directory);
 *  - it belongs to owner (the daemon passes 0: root);
 *  - no group or other permission bit is set (mode 0600 or 0400);
 *  - it holds 1 to FL_AUTHFILE_MAX bytes after the strip, none of them a
 *    control character (it ends up in an HTTP header).
 *
 * Returns 0 with *ret the credential (NUL-terminated; free it with
 * fl_authfile__free(), which wipes it first), or a negative errno with err
 * holding one line that names path and the fix, never the contents:
 * -errno of open ("cannot open /etc/flamed/token: No such file or
 * directory"), -ELOOP (a symbolic link), -EINVAL (not a regular file, empty,
 * a control character), -EPERM (owner or mode: "... is readable by group or
 * others (chmod 600 PATH)"), -EFBIG, -ENOMEM. err may be NULL.
 */
int fl_authfile__read(const char *path, uid_t owner, char **ret, char *err, size_t errlen);

/* Overwrites the credential with zeros and frees it. Accepts NULL. */
void fl_authfile__free(char *secret);

#endif
