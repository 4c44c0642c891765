/* SPDX-License-Identifier: GPL-2.0-or-later */
/* "HOST:PORT" as a listening address is written: metrics_listen, and fl_metrics' listen option. */
#ifndef FLAMED_HOSTPORT_H
#define FLAMED_HOSTPORT_H

#include <stdint.h>

#define FL_HOSTPORT_HOST_MAX 254u /* a DNS name: 253 bytes and the NUL */

/*
 * A parsed "HOST:PORT". host is without the brackets of an IPv6 literal, so
 * that it can be given to getaddrinfo(3) as it is.
 */
struct fl_hostport {
	char host[FL_HOSTPORT_HOST_MAX];
	uint16_t port;
	int family; /* AF_INET or AF_INET6 for a literal address, AF_UNSPEC for a name */
};

/*
 * Parses s, which is one of
 *   "127.0.0.1:9464"   an IPv4 address (dotted quad)
 *   "[::1]:9464"       an IPv6 address, in brackets
 *   "localhost:9464"   a host name (letters, digits, '-' and '.', RFC 1123)
 * with a decimal port from 0 to 65535 (the caller refuses 0 where it means
 * nothing). Returns 0 with *hp filled, or -EINVAL with *hp unchanged and
 * *why (if why is not NULL) pointing to a static phrase that completes
 * "VALUE ...", e.g. "has no port (HOST:PORT, e.g. 127.0.0.1:9464)".
 */
int fl_hostport__parse(const char *s, struct fl_hostport *hp, const char **why);

#endif
