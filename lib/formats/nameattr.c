// SPDX-License-Identifier: GPL-2.0-or-later
/* flamegraph.pl's --nameattr files (see nameattr.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "flamed/common/strpool.h"
#include "flamed/formats/nameattr.h"

struct fl_nameattr {
	struct fl_strpool *names;	  /* function names: the ids index entries */
	struct fl_nameattr_entry *entries; /* by name id; a later line for a name wins */
	size_t cap;
	char *text; /* a copy of the file, NULs at the ends of names and values */
};

void fl_nameattr__free(struct fl_nameattr *na)
{
	if (!na)
		return;
	fl_strpool__free(na->names);
	free(na->entries);
	free(na->text);
	free(na);
}

/* A link to a script runs code in whoever opens the graph: not a frame's href. */
static bool script_url(const char *v)
{
	while (*v == ' ' || *v == '\t')
		v++;
	return !strncasecmp(v, "javascript:", 11) || !strncasecmp(v, "vbscript:", 9) ||
	       !strncasecmp(v, "data:", 5);
}

static int set_pair(struct fl_nameattr_entry *e, char *pair, struct fl_nameattr_stats *st,
		    const char **why)
{
	char *eq = strchr(pair, '=');
	const char *k = pair, *v;

	if (!eq) {
		*why = "an attribute without '=': expected NAME<TAB>key=value<TAB>key=value...";
		return -EINVAL;
	}
	*eq = '\0';
	v = eq + 1;
	if (!strcmp(k, "title")) {
		e->title = v;
	} else if (!strcmp(k, "href")) {
		if (script_url(v)) {
			*why = "an href with a javascript:, vbscript: or data: URL: give a link to a page";
			return -EINVAL;
		}
		e->href = v;
	} else if (!strcmp(k, "target")) {
		e->target = v;
	} else if (!strcmp(k, "id")) {
		e->id = v;
	} else if (!strcmp(k, "class")) {
		e->class_ = v;
	} else if (!strcmp(k, "g_extra") || !strcmp(k, "a_extra")) {
		st->raw_markup++;
	} else {
		st->unknown++;
	}
	return 0;
}

int fl_nameattr__parse(const char *buf, size_t len, struct fl_nameattr **ret,
		       struct fl_nameattr_stats *st, size_t *bad_line, const char **why)
{
	struct fl_nameattr *na = calloc(1, sizeof(*na));
	char *p, *end;
	int err = -ENOMEM;

	*ret = NULL;
	*bad_line = 0;
	*why = "out of memory";
	memset(st, 0, sizeof(*st));
	{
		const char *nul = memchr(buf, '\0', len);

		if (nul) {
			*bad_line = 1;
			for (const char *q = buf; q < nul; q++)
				*bad_line += *q == '\n';
			*why = "a NUL byte";
			free(na);
			return -EINVAL;
		}
	}
	if (!na || fl_strpool__new(&na->names))
		goto fail;
	na->text = malloc(len + 1);
	if (!na->text)
		goto fail;
	memcpy(na->text, buf, len);
	na->text[len] = '\0';
	for (p = na->text, end = na->text + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p)), *tab, *pair;
		struct fl_nameattr_entry e = {};
		uint32_t id;

		if (!nl)
			nl = end;
		*nl = '\0';
		st->lines++;
		if (nl > p && nl[-1] == '\r')
			nl[-1] = '\0';
		if (!*p) { /* an empty line */
			p = nl + 1;
			continue;
		}
		tab = strchr(p, '\t');
		if (!tab) {
			*bad_line = st->lines;
			*why = "no tab after the function name: expected NAME<TAB>key=value<TAB>key=value...";
			err = -EINVAL;
			goto fail;
		}
		*tab = '\0';
		for (pair = tab + 1; pair;) {
			char *next = strchr(pair, '\t');

			if (next)
				*next++ = '\0';
			err = set_pair(&e, pair, st, why);
			if (err) {
				*bad_line = st->lines;
				goto fail;
			}
			pair = next;
		}
		err = fl_strpool__intern(na->names, p, strlen(p), &id);
		if (err)
			goto fail;
		if (id >= na->cap) {
			size_t cap = na->cap ? na->cap * 2 : 64;
			struct fl_nameattr_entry *ne;

			while (cap <= id)
				cap *= 2;
			ne = realloc(na->entries, cap * sizeof(*ne));
			if (!ne) {
				err = -ENOMEM;
				goto fail;
			}
			memset(ne + na->cap, 0, (cap - na->cap) * sizeof(*ne));
			na->entries = ne;
			na->cap = cap;
		}
		na->entries[id] = e;
		p = nl + 1;
	}
	st->entries = fl_strpool__count(na->names);
	*why = NULL;
	*ret = na;
	return 0;
fail:
	fl_nameattr__free(na);
	return err;
}

const struct fl_nameattr_entry *fl_nameattr__find(const struct fl_nameattr *na, const char *name,
						  size_t len)
{
	uint32_t id;

	if (!na || fl_strpool__find(na->names, name, len, &id) || id >= na->cap)
		return NULL;
	return &na->entries[id];
}
