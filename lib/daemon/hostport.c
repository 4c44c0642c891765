// SPDX-License-Identifier: GPL-2.0-or-later
/* Parsing a listening address "HOST:PORT": IPv4, [IPv6] or a host name, and a port. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "flamed/daemon/hostport.h"
#include "common/parse.h"

static bool is_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/*
 * A host name by RFC 1123: dot-separated labels of 1 to 63 letters, digits
 * and '-', neither starting nor ending with '-'; at most 253 bytes; a last
 * label of digits only would be an IPv4 address gone wrong (999.1.1.1).
 */
static bool is_host_name(const char *s, size_t n)
{
	size_t i, label = 0;
	bool digits_only = true;

	if (!n || n > FL_HOSTPORT_HOST_MAX - 1)
		return false;
	for (i = 0; i <= n; i++) {
		char ch = i < n ? s[i] : '.';

		if (ch == '.') {
			if (!label || label > 63 || s[i - 1] == '-')
				return false;
			if (i == n && digits_only)
				return false;
			label = 0;
			digits_only = true;
			continue;
		}
		if (!is_alnum(ch) && !(ch == '-' && label))
			return false;
		if (ch < '0' || ch > '9')
			digits_only = false;
		label++;
	}
	return true;
}

static bool looks_numeric(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!(s[i] >= '0' && s[i] <= '9') && s[i] != '.')
			return false;
	return true;
}

int fl_hostport__parse(const char *s, struct fl_hostport *hp, const char **why)
{
	const char *colon, *host = s, *p, *unused;
	char buf[FL_HOSTPORT_HOST_MAX];
	unsigned char addr[sizeof(struct in6_addr)];
	size_t hlen;
	uint64_t port;
	int family;

	if (!why)
		why = &unused;
	if (strstr(s, "://")) {
		*why = "is a URL, not HOST:PORT (e.g. 127.0.0.1:9464)";
		return -EINVAL;
	}
	colon = strrchr(s, ':');
	if (!colon) {
		*why = "has no port (HOST:PORT, e.g. 127.0.0.1:9464)";
		return -EINVAL;
	}
	hlen = (size_t)(colon - s);
	if (s[0] == '[') {
		if (hlen < 2 || s[hlen - 1] != ']') {
			*why = "is not [IPv6]:PORT (e.g. [::1]:9464)";
			return -EINVAL;
		}
		host = s + 1;
		hlen -= 2;
		family = AF_INET6;
	} else if (memchr(s, ':', hlen)) {
		*why = "has an IPv6 address without brackets (write [::1]:9464)";
		return -EINVAL;
	} else {
		family = looks_numeric(s, hlen) ? AF_INET : AF_UNSPEC;
	}
	if (!hlen) {
		*why = "has no address (e.g. 127.0.0.1:9464, or 0.0.0.0:9464 for every "
		       "interface)";
		return -EINVAL;
	}
	if (hlen >= sizeof(buf)) {
		*why = "has an address longer than 253 bytes";
		return -EINVAL;
	}
	memcpy(buf, host, hlen);
	buf[hlen] = '\0';
	if (family == AF_INET6 && inet_pton(AF_INET6, buf, addr) != 1) {
		*why = "is not a valid IPv6 address in brackets (e.g. [::1]:9464)";
		return -EINVAL;
	}
	if (family == AF_INET && inet_pton(AF_INET, buf, addr) != 1) {
		*why = "is not a valid IPv4 address and port (e.g. 127.0.0.1:9464)";
		return -EINVAL;
	}
	if (family == AF_UNSPEC && !is_host_name(buf, hlen)) {
		*why = "is not a valid address: an IPv4 address, [IPv6] or a host name, then "
		       ":PORT";
		return -EINVAL;
	}
	p = colon + 1;
	if (fl_parse_uint(&p, 10, 65535, &port) || *p) {
		*why = "has no valid port (a number from 1 to 65535 after the last ':')";
		return -EINVAL;
	}
	memcpy(hp->host, buf, hlen + 1);
	hp->port = (uint16_t)port;
	hp->family = family;
	return 0;
}
