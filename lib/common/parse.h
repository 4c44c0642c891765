/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Number parsing for the readers of kernel text: maps, kallsyms, CPU lists. Private to lib/. */
#ifndef FLAMED_PARSE_H
#define FLAMED_PARSE_H

#include <errno.h>
#include <stdint.h>

/* The value of a hex digit of either case, or -1. */
static inline int fl_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The value of c as a digit in base 10 or 16, or -1. */
static inline int fl_digitval(char c, unsigned int base)
{
	int d = fl_hexval(c);

	return d >= 0 && (unsigned int)d < base ? d : -1;
}

/*
 * Reads a number in base 10 or 16 at *pp: digits only, no sign, prefix or
 * space, at least one. On success *pp is past the last digit. Returns 0,
 * -EINVAL when *pp is not at a digit, or -ERANGE above max, checked digit
 * by digit so that nothing overflows; *pp and *v are left alone on error.
 */
static inline int fl_parse_uint(const char **pp, unsigned int base, uint64_t max, uint64_t *v)
{
	const char *p = *pp;
	uint64_t x = 0;
	int d;

	if (fl_digitval(*p, base) < 0)
		return -EINVAL;
	for (; (d = fl_digitval(*p, base)) >= 0; p++) {
		if ((uint64_t)d > max || x > (max - (uint64_t)d) / base)
			return -ERANGE;
		x = x * base + (uint64_t)d;
	}
	*v = x;
	*pp = p;
	return 0;
}

#endif
