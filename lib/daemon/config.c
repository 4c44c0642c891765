// SPDX-License-Identifier: GPL-2.0-or-later
/* The daemon's configuration: one setter per key, shared by the file parser and the command line. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "flamed/common/cleanup.h"
#include "flamed/daemon/config.h"
#include "flamed/files/regfile.h"
#include "common/parse.h"
#include "common/seterr.h"

#define NS_PER_SEC 1000000000ull
#define PID_MAX_LIMIT 4194304u /* the kernel's ceiling for pid_max */
#define MAX_STACK_COPY 65528u  /* perf's limit for PERF_SAMPLE_STACK_USER */
#define MAX_INTERVAL_S (7ull * 86400)
#define MAX_KEEP_AGE_S (36500ull * 86400)
#define MAX_KEEP_FILES 1000000000ull
#define MAX_PUSH_TIMEOUT_S 3600ull


/*
 * s quoted for a one-line message: '"' and '\' escaped, bytes that are not
 * printable ASCII as \xNN, cut after 64 input bytes with "...".
 */
static const char *quote(char *out, size_t outlen, const char *s)
{
	size_t o = 0, i;

	out[o++] = '"';
	for (i = 0; s[i] && o + 8 < outlen; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i == 64) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (ch == '"' || ch == '\\') {
			out[o++] = '\\';
			out[o++] = (char)ch;
		} else if (ch < 0x20 || ch >= 0x7f) {
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
		} else {
			out[o++] = (char)ch;
		}
	}
	out[o++] = '"';
	out[o] = '\0';
	return out;
}

#define QUOTE_SIZE (64 * 4 + 8)
#define Q(s) quote((char[QUOTE_SIZE]){0}, QUOTE_SIZE, (s))

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* s without leading and trailing blanks, as [*start, *start + *len). */
static void trim(const char *s, size_t n, const char **start, size_t *len)
{
	while (n && is_blank(*s))
		s++, n--;
	while (n && is_blank(s[n - 1]))
		n--;
	*start = s;
	*len = n;
}

/* A decimal number that is the whole of s, at most max. -EINVAL or -ERANGE. */
static int parse_num(const char *s, uint64_t max, uint64_t *v)
{
	const char *p = s;
	int r = fl_parse_uint(&p, 10, max, v);

	if (r)
		return r;
	return *p ? -EINVAL : 0;
}

/*
 * A number and an optional one-letter unit, blanks between them allowed: the
 * unit units[k] (case-insensitive) multiplies by mult[k + 1], no unit by
 * mult[0]. Returns -EINVAL, or -ERANGE when the product is above max.
 */
static int parse_with_unit(const char *s, const char *units, const uint64_t *mult, uint64_t max,
			   uint64_t *v)
{
	const char *p = s;
	uint64_t n, m = mult[0];
	int r = fl_parse_uint(&p, 10, UINT64_MAX, &n);

	if (r)
		return r;
	while (is_blank(*p))
		p++;
	if (*p) {
		const char *u = strchr(units, tolower((unsigned char)*p));

		if (!u || p[1])
			return -EINVAL;
		m = mult[u - units + 1];
	}
	if (n > max / m)
		return -ERANGE;
	*v = n * m;
	return 0;
}

/* Seconds, or s, m, h, d: in ns, at most max_s seconds. */
static int parse_duration(const char *s, uint64_t max_s, uint64_t *ns)
{
	static const uint64_t mult[] = {NS_PER_SEC, NS_PER_SEC, 60 * NS_PER_SEC, 3600 * NS_PER_SEC,
					86400 * NS_PER_SEC};

	return parse_with_unit(s, "smhd", mult, max_s * NS_PER_SEC, ns);
}

static int parse_bool(const char *s, bool *v)
{
	static const char *const yes[] = {"yes", "true", "1", "on"};
	static const char *const no[] = {"no", "false", "0", "off"};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
			*v = !strcasecmp(s, yes[i]);
			return 0;
		}
	}
	return -EINVAL;
}

/* --- one setter per key: parse fully, then write c ------------------------------- */

typedef int (*setter_fn)(struct fl_config *c, const char *v, char *err, size_t errlen);

static int set_u32(const char *v, uint32_t lo, uint32_t hi, uint32_t *out, char *err, size_t errlen)
{
	uint64_t n;
	int r = parse_num(v, hi, &n);

	if (r == -EINVAL) {
		fl_seterr(err, errlen, "%s is not a number (%u-%u)", Q(v), lo, hi);
		return -EINVAL;
	}
	if (r || n < lo) {
		fl_seterr(err, errlen, "%s is out of range (%u-%u)", Q(v), lo, hi);
		return -EINVAL;
	}
	*out = (uint32_t)n;
	return 0;
}

static int set_frequency(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	return set_u32(v, 1, 100000, &c->frequency, err, errlen);
}

/* "auto" (0): sized by the sampler from the samples of a second, as record's are. */
static int set_max_stacks(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	if (!strcmp(v, "auto")) {
		c->max_stacks = 0;
		return 0;
	}
	if (!set_u32(v, 1, 1u << 24, &c->max_stacks, err, errlen))
		return 0;
	if (parse_num(v, 1u << 24, &(uint64_t){0}) == -EINVAL)
		fl_seterr(err, errlen, "%s is neither auto nor a number (1-16777216)", Q(v));
	return -EINVAL;
}

static int set_max_processes(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	return set_u32(v, 1, PID_MAX_LIMIT, &c->max_processes, err, errlen);
}

static int set_interval(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	uint64_t ns;
	int r = parse_duration(v, MAX_INTERVAL_S, &ns);

	if (r == -EINVAL) {
		fl_seterr(err, errlen,
		       "%s is not a duration (seconds, or a number with s, m, h or d: 90, 5m, 1h)",
		       Q(v));
		return -EINVAL;
	}
	if (r || ns < NS_PER_SEC) {
		fl_seterr(err, errlen, "%s is out of range (1s-7d)", Q(v));
		return -EINVAL;
	}
	c->interval_ns = ns;
	return 0;
}

static int set_keep_age(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	uint64_t ns;
	int r = parse_duration(v, MAX_KEEP_AGE_S, &ns);

	if (r == -EINVAL) {
		fl_seterr(err, errlen,
		       "%s is not a duration (seconds, or a number with s, m, h or d: 12h, 30d; "
		       "0 = unlimited)",
		       Q(v));
		return -EINVAL;
	}
	if (r) {
		fl_seterr(err, errlen, "%s is out of range (0-36500d)", Q(v));
		return -EINVAL;
	}
	c->keep_age_ns = ns;
	return 0;
}

/* A size: bytes, or a number with K, M or G (powers of 1024). zero: what 0 means, or NULL. */
static int parse_size(const char *v, const char *zero, uint64_t *n, char *err, size_t errlen)
{
	static const uint64_t mult[] = {1, 1ull << 10, 1ull << 20, 1ull << 30};
	int r = parse_with_unit(v, "kmg", mult, UINT64_MAX, n);

	if (r == -EINVAL) {
		fl_seterr(err, errlen,
		       "%s is not a size (bytes, or a number with K, M or G, powers of 1024: 512M, "
		       "2G%s%s)",
		       Q(v), zero ? "; 0 = " : "", zero ? zero : "");
		return -EINVAL;
	}
	if (r) {
		fl_seterr(err, errlen, "%s is too big", Q(v));
		return -EINVAL;
	}
	return 0;
}

int fl_config__parse_size(const char *v, uint64_t *n, char *err, size_t errlen)
{
	return parse_size(v, NULL, n, err, errlen);
}

static int set_keep_bytes(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_size(v, "unlimited", &n, err, errlen))
		return -EINVAL;
	c->keep_bytes = n;
	return 0;
}

/* A memory size from 1M to 1024G into *n. */
static int set_mem_size(const char *v, uint64_t *n, char *err, size_t errlen)
{
	uint64_t size;

	if (parse_size(v, NULL, &size, err, errlen))
		return -EINVAL;
	if (size < (1ull << 20) || size > (1ull << 40)) {
		fl_seterr(err, errlen, "%s is out of range (1M-1024G)", Q(v));
		return -EINVAL;
	}
	*n = size;
	return 0;
}

static int set_max_symbol_cache(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	return set_mem_size(v, &c->max_symbol_cache, err, errlen);
}

static int set_max_unwind_tables(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	return set_mem_size(v, &c->max_unwind_tables, err, errlen);
}

static int set_keep_files(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	uint64_t n;
	int r = parse_num(v, MAX_KEEP_FILES, &n);

	if (r) {
		fl_seterr(err, errlen, "%s is %s (0-%llu; 0 = unlimited)", Q(v),
		       r == -EINVAL ? "not a number" : "out of range", MAX_KEEP_FILES);
		return -EINVAL;
	}
	c->keep_files = n;
	return 0;
}

static int set_bool(const char *v, bool *out, char *err, size_t errlen)
{
	if (parse_bool(v, out)) {
		fl_seterr(err, errlen, "%s is not a boolean (yes, no, true, false, on, off, 1, 0)",
		       Q(v));
		return -EINVAL;
	}
	return 0;
}

static int set_idle(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	return set_bool(v, &c->idle, err, errlen);
}

static int set_kernel(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	return set_bool(v, &c->kernel, err, errlen);
}

static int set_user(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	return set_bool(v, &c->user, err, errlen);
}

/*
 * "kernel-dwarf", or "fp", "dwarf" or "dwarf,SIZE" as perf record spells
 * them (blanks around ',' allowed).
 */
static int set_call_graph(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	uint64_t size = FL_CONFIG_DEFAULT_DWARF_STACK;
	const char *p;
	int r;

	if (!strcasecmp(v, "fp") || !strcasecmp(v, "kernel-dwarf")) {
		c->dwarf = false;
		c->kdwarf = !strcasecmp(v, "kernel-dwarf");
		c->stack_size = 0;
		return 0;
	}
	if (strncasecmp(v, "dwarf", 5))
		goto bad;
	p = v + 5;
	while (is_blank(*p))
		p++;
	if (*p) {
		if (*p++ != ',')
			goto bad;
		while (is_blank(*p))
			p++;
		r = parse_num(p, MAX_STACK_COPY, &size);
		if (r == -EINVAL)
			goto bad;
		if (r || size < 8 || size % 8) {
			fl_seterr(err, errlen,
			       "%s: the stack size must be a multiple of 8 from 8 to 65528", Q(v));
			return -EINVAL;
		}
	}
	c->dwarf = true;
	c->kdwarf = false;
	c->stack_size = (uint32_t)size;
	return 0;
bad:
	fl_seterr(err, errlen, "%s is not a call graph (kernel-dwarf, fp, dwarf or dwarf,SIZE)", Q(v));
	return -EINVAL;
}

/*
 * Calls fn on each comma-separated item of v, trimmed, until fn returns
 * non-zero. Returns fn's non-zero return, or -EINVAL with a message for an
 * empty item.
 */
static int for_each_item(const char *v, int (*fn)(const char *item, size_t len, void *ctx),
			 void *ctx, char *err, size_t errlen)
{
	const char *p = v;

	for (;;) {
		const char *end = strchr(p, ','), *s;
		size_t n;
		int r;

		if (!end)
			end = p + strlen(p);
		trim(p, (size_t)(end - p), &s, &n);
		if (!n) {
			fl_seterr(err, errlen, "%s has an empty item (a list is \"a, b, c\")", Q(v));
			return -EINVAL;
		}
		r = fn(s, n, ctx);
		if (r)
			return r;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

#define ITEM_REFUSED 1 /* from an item callback: the item is not valid */

struct formats {
	bool folded, svg, html, pprof;
};

static int add_format(const char *s, size_t n, void *ctx)
{
	struct formats *f = ctx;

	if (n == 6 && !strncasecmp(s, "folded", 6))
		f->folded = true;
	else if (n == 3 && !strncasecmp(s, "svg", 3))
		f->svg = true;
	else if (n == 4 && !strncasecmp(s, "html", 4))
		f->html = true;
	else if (n == 5 && !strncasecmp(s, "pprof", 5))
		f->pprof = true;
	else
		return ITEM_REFUSED;
	return 0;
}

static int set_formats(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	struct formats f = {0};
	int r = for_each_item(v, add_format, &f, err, errlen);

	if (r == ITEM_REFUSED)
		fl_seterr(err, errlen,
		       "%s is not a list of formats (folded, svg, html, pprof, \"folded, svg, pprof\")",
		       Q(v));
	if (r)
		return -EINVAL;
	c->fmt_folded = f.folded;
	c->fmt_svg = f.svg;
	c->fmt_html = f.html;
	c->fmt_pprof = f.pprof;
	return 0;
}

struct targets {
	int *pids;
	size_t nr_pids;
	char **names;
	size_t nr_names;
	bool all;
	const char *why; /* why an item was refused */
	char item[65];	 /* which one, cut */
};

static void targets_free(struct targets *t)
{
	size_t i;

	for (i = 0; i < t->nr_names; i++)
		free(t->names[i]);
	free(t->names);
	free(t->pids);
}

static int refuse(struct targets *t, const char *s, size_t n, const char *why)
{
	snprintf(t->item, sizeof(t->item), "%.*s", (int)(n < 64 ? n : 64), s);
	t->why = why;
	return ITEM_REFUSED;
}

static bool all_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int add_pid(struct targets *t, const char *s, size_t n)
{
	const char *p = s;
	uint64_t pid;
	size_t i;
	int *np;

	/* The item is followed by ',', a blank or the end: the digits stop there. */
	if (fl_parse_uint(&p, 10, PID_MAX_LIMIT, &pid) || !pid)
		return refuse(t, s, n, "is not a valid pid (1-4194304)");
	for (i = 0; i < t->nr_pids; i++)
		if (t->pids[i] == (int)pid)
			return 0;
	np = realloc(t->pids, (t->nr_pids + 1) * sizeof(*np));
	if (!np)
		return -ENOMEM;
	t->pids = np;
	t->pids[t->nr_pids++] = (int)pid;
	return 0;
}

static int add_name(struct targets *t, const char *s, size_t n)
{
	char **nn;
	size_t i;

	if (n > FL_CONFIG_NAME_MAX)
		return refuse(t, s, n,
			      "is longer than 15 bytes, the kernel's limit for a process name "
			      "(/proc/PID/comm)");
	for (i = 0; i < t->nr_names; i++)
		if (strlen(t->names[i]) == n && !memcmp(t->names[i], s, n))
			return 0;
	nn = realloc(t->names, (t->nr_names + 1) * sizeof(*nn));
	if (!nn)
		return -ENOMEM;
	t->names = nn;
	t->names[t->nr_names] = strndup(s, n);
	if (!t->names[t->nr_names])
		return -ENOMEM;
	t->nr_names++;
	return 0;
}

/* An item of digits only is a pid, anything else a process name; duplicates are dropped. */
static int add_target(const char *s, size_t n, void *ctx)
{
	struct targets *t = ctx;

	if (n == 3 && !strncasecmp(s, "all", 3)) {
		t->all = true;
		return 0;
	}
	if (t->nr_pids + t->nr_names >= FL_CONFIG_MAX_TARGETS)
		return refuse(t, s, n, "is one target too many (at most 1024)");
	return all_digits(s, n) ? add_pid(t, s, n) : add_name(t, s, n);
}

static int set_targets(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	struct targets t = {0};
	int r = for_each_item(v, add_target, &t, err, errlen);

	if (!r && t.all && (t.nr_pids || t.nr_names)) {
		fl_seterr(err, errlen, "%s: \"all\" cannot be combined with pids or names", Q(v));
		r = -EINVAL;
	} else if (r == -ENOMEM) {
		fl_seterr(err, errlen, "out of memory");
	} else if (r == ITEM_REFUSED) {
		fl_seterr(err, errlen, "%s %s", Q(t.item), t.why);
		r = -EINVAL;
	}
	if (r) {
		targets_free(&t);
		return r;
	}
	targets_free(&(struct targets){.pids = c->pids,
				       .nr_pids = c->nr_pids,
				       .names = c->names,
				       .nr_names = c->nr_names});
	c->all_targets = t.all;
	c->pids = t.pids;
	c->nr_pids = t.nr_pids;
	c->names = t.names;
	c->nr_names = t.nr_names;
	return 0;
}

static int set_output_dir(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	size_t n = strlen(v);

	if (v[0] != '/') {
		fl_seterr(err, errlen, "%s is not an absolute path (it must start with '/')", Q(v));
		return -EINVAL;
	}
	if (n >= FL_CONFIG_PATH_MAX) {
		fl_seterr(err, errlen, "%s is longer than %u bytes", Q(v), FL_CONFIG_PATH_MAX - 1);
		return -EINVAL;
	}
	while (n > 1 && v[n - 1] == '/') /* "/var/lib/flamed/" is "/var/lib/flamed" */
		n--;
	memcpy(c->output_dir, v, n);
	c->output_dir[n] = '\0';
	return 0;
}

/* --- the fleet: metrics endpoint, push to a profiling backend, cgroups ----------- */

static int set_metrics_listen(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	struct fl_hostport hp;
	const char *why;

	if (!*v) {
		c->metrics_listen[0] = '\0';
		c->metrics_addr = (struct fl_hostport){0};
		return 0;
	}
	if (strlen(v) >= FL_CONFIG_LISTEN_MAX) {
		fl_seterr(err, errlen, "%s is longer than %u bytes", Q(v), FL_CONFIG_LISTEN_MAX - 1);
		return -EINVAL;
	}
	if (fl_hostport__parse(v, &hp, &why)) {
		fl_seterr(err, errlen, "%s %s", Q(v), why);
		return -EINVAL;
	}
	if (!hp.port) {
		fl_seterr(err, errlen, "%s: port 0 is not a port to scrape (1-65535, e.g. 9464)",
		       Q(v));
		return -EINVAL;
	}
	strcpy(c->metrics_listen, v);
	c->metrics_addr = hp;
	return 0;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/*
 * The URL of a push backend: http:// or https://, a host, an optional port,
 * an optional path; no blanks, no user:password@ (it would show wherever the
 * URL is logged: that is push_auth_file's job).
 */
static int set_push_url(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	const char *auth, *end, *p;
	size_t n = strlen(v);

	if (!n) {
		c->push_url[0] = '\0';
		return 0;
	}
	if (n >= FL_CONFIG_URL_MAX) {
		fl_seterr(err, errlen, "%s is longer than %u bytes", Q(v), FL_CONFIG_URL_MAX - 1);
		return -EINVAL;
	}
	if (!strncasecmp(v, "http://", 7))
		auth = v + 7;
	else if (!strncasecmp(v, "https://", 8))
		auth = v + 8;
	else {
		fl_seterr(err, errlen,
		       "%s is not an http:// or https:// URL (e.g. http://pyroscope:4040)", Q(v));
		return -EINVAL;
	}
	for (p = v; *p; p++) {
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) {
			fl_seterr(err, errlen,
			       "%s has a blank, a control or a non-ASCII character (percent-encode "
			       "it)",
			       Q(v));
			return -EINVAL;
		}
	}
	end = auth + strcspn(auth, "/?#");
	if (memchr(auth, '@', (size_t)(end - auth))) {
		fl_seterr(err, errlen,
		       "%s has a user or password in it: put them in push_auth_file (as "
		       "user:password), which is not logged",
		       Q(v));
		return -EINVAL;
	}
	if (end == auth || *auth == ':') {
		fl_seterr(err, errlen, "%s has no host (e.g. http://pyroscope:4040)", Q(v));
		return -EINVAL;
	}
	if (*auth == '[' && !memchr(auth, ']', (size_t)(end - auth))) {
		fl_seterr(err, errlen, "%s has an IPv6 address without its ']'", Q(v));
		return -EINVAL;
	}
	/* A port, when the authority ends in ":digits" outside IPv6 brackets. */
	p = end;
	while (p > auth && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p > auth && p[-1] == ':') {
		uint64_t port;
		const char *q = p;

		if (fl_parse_uint(&q, 10, 65535, &port) || q != end || !port) {
			fl_seterr(err, errlen, "%s has no valid port (1-65535)", Q(v));
			return -EINVAL;
		}
	}
	memcpy(c->push_url, v, n + 1);
	return 0;
}

static int set_push_auth_file(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	size_t n = strlen(v);

	if (n && v[0] != '/') {
		fl_seterr(err, errlen, "%s is not an absolute path (it must start with '/')", Q(v));
		return -EINVAL;
	}
	if (n >= FL_CONFIG_PATH_MAX) {
		fl_seterr(err, errlen, "%s is longer than %u bytes", Q(v), FL_CONFIG_PATH_MAX - 1);
		return -EINVAL;
	}
	if (n && v[n - 1] == '/') {
		fl_seterr(err, errlen, "%s names a directory: name the file that holds the credential",
		       Q(v));
		return -EINVAL;
	}
	memcpy(c->push_auth_file, v, n + 1);
	return 0;
}

static bool is_app_name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_' || ch == '-' || ch == '.';
}

static int set_push_name(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	size_t n = strlen(v), i;

	if (n > FL_CONFIG_APP_NAME_MAX) {
		fl_seterr(err, errlen, "%s is longer than %u bytes", Q(v), FL_CONFIG_APP_NAME_MAX);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (!is_app_name_char(v[i])) {
			fl_seterr(err, errlen,
			       "%s is not an application name (letters, digits, '_', '-' and '.', "
			       "e.g. flamed or web-01.cpu)",
			       Q(v));
			return -EINVAL;
		}
	}
	memcpy(c->push_name, v, n + 1);
	return 0;
}

struct labels {
	struct fl_config_label *l;
	size_t n;
	const char *why; /* why an item was refused */
	char item[65];	 /* which one, cut */
};

static void labels_free(struct fl_config_label *l, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(l[i].key);
	free(l);
}

static int refuse_label(struct labels *ls, const char *s, size_t n, const char *why)
{
	snprintf(ls->item, sizeof(ls->item), "%.*s", (int)(n < 64 ? n : 64), s);
	ls->why = why;
	return ITEM_REFUSED;
}

/* A label name by the Prometheus rules, [a-zA-Z_][a-zA-Z0-9_]*. */
static bool is_label_name(const char *s, size_t n)
{
	size_t i;

	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* A label value: what the backend's "app{key=value,...}" syntax can carry. */
static bool is_label_value(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch < 0x20 || ch == 0x7f || strchr("{},=", ch))
			return false;
	}
	return n > 0;
}

/* One "key = value" item of push_labels. */
static int add_label(const char *s, size_t n, void *ctx)
{
	struct labels *ls = ctx;
	const char *eq = memchr(s, '=', n), *k, *v;
	struct fl_config_label *nl;
	size_t kn, vn, i;
	char *buf;

	if (!eq)
		return refuse_label(ls, s, n, "is not key=value");
	trim(s, (size_t)(eq - s), &k, &kn);
	trim(eq + 1, n - (size_t)(eq - s) - 1, &v, &vn);
	if (!is_label_name(k, kn) || kn > FL_CONFIG_LABEL_MAX)
		return refuse_label(ls, s, n,
				    "has an invalid label name (letters, digits and '_', not "
				    "starting with a digit: [a-zA-Z_][a-zA-Z0-9_]*)");
	if (kn >= 2 && k[0] == '_' && k[1] == '_')
		return refuse_label(ls, s, n, "has a label name starting with \"__\" (reserved)");
	if (!is_label_value(v, vn) || vn > FL_CONFIG_LABEL_MAX)
		return refuse_label(ls, s, n,
				    "has an invalid value (1 to 256 bytes, without '{', '}', ',', "
				    "'=' or control characters)");
	for (i = 0; i < ls->n; i++)
		if (strlen(ls->l[i].key) == kn && !memcmp(ls->l[i].key, k, kn))
			return refuse_label(ls, s, n, "repeats a label name");
	if (ls->n >= FL_CONFIG_MAX_LABELS)
		return refuse_label(ls, s, n, "is one label too many (at most 64)");
	nl = realloc(ls->l, (ls->n + 1) * sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	ls->l = nl;
	buf = malloc(kn + vn + 2);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, k, kn);
	buf[kn] = '\0';
	memcpy(buf + kn + 1, v, vn);
	buf[kn + 1 + vn] = '\0';
	ls->l[ls->n].key = buf;
	ls->l[ls->n].value = buf + kn + 1;
	ls->n++;
	return 0;
}

static int set_push_labels(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	struct labels ls = {0};
	int r = *v ? for_each_item(v, add_label, &ls, err, errlen) : 0;

	if (r == -ENOMEM) {
		fl_seterr(err, errlen, "out of memory");
	} else if (r == ITEM_REFUSED) {
		fl_seterr(err, errlen, "%s %s (a list is \"env=prod, region=eu\")", Q(ls.item),
		       ls.why);
		r = -EINVAL;
	}
	if (r) {
		labels_free(ls.l, ls.n);
		return r;
	}
	labels_free(c->push_labels, c->nr_push_labels);
	c->push_labels = ls.l;
	c->nr_push_labels = ls.n;
	return 0;
}

static int set_push_timeout(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	uint64_t ns;
	int r = parse_duration(v, MAX_PUSH_TIMEOUT_S, &ns);

	if (r == -EINVAL) {
		fl_seterr(err, errlen,
		       "%s is not a duration (seconds, or a number with s, m, h or d: 10, 30s, 2m)",
		       Q(v));
		return -EINVAL;
	}
	if (r || ns < NS_PER_SEC) {
		fl_seterr(err, errlen, "%s is out of range (1s-1h)", Q(v));
		return -EINVAL;
	}
	c->push_timeout_ns = ns;
	return 0;
}

static int set_push_spool_bytes(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_size(v, "no spool", &n, err, errlen))
		return -EINVAL;
	if (n > (1ull << 40)) {
		fl_seterr(err, errlen, "%s is out of range (0-1024G)", Q(v));
		return -EINVAL;
	}
	c->push_spool_bytes = n;
	return 0;
}

static int set_push_tls_verify(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	return set_bool(v, &c->push_tls_verify, err, errlen);
}

static int set_per_cgroup(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	return set_bool(v, &c->per_cgroup, err, errlen);
}

static int set_python(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	return set_bool(v, &c->python, err, errlen);
}

/*
 * A cgroup v2 directory: relative to FL_CONFIG_CGROUP_ROOT, or absolute under
 * it. Stored absolute, each component once with one '/' before it; "." and
 * ".." are refused rather than resolved (a path that climbs out is a mistake).
 */
static int set_cgroup(struct fl_config *c, const char *v, char *err, size_t errlen)
{
	static const char root[] = FL_CONFIG_CGROUP_ROOT;
	char out[FL_CONFIG_PATH_MAX];
	const char *p = v;
	size_t o = sizeof(root) - 1;

	if (!*v) {
		c->cgroup[0] = '\0';
		return 0;
	}
	if (has_control(v)) {
		fl_seterr(err, errlen, "%s has a control character", Q(v));
		return -EINVAL;
	}
	if (v[0] == '/') {
		if (strncmp(v, root, sizeof(root) - 1) ||
		    (v[sizeof(root) - 1] && v[sizeof(root) - 1] != '/')) {
			fl_seterr(err, errlen,
			       "%s is not under " FL_CONFIG_CGROUP_ROOT
			       " (give " FL_CONFIG_CGROUP_ROOT "/system.slice/x.service, or "
			       "system.slice/x.service relative to it)",
			       Q(v));
			return -EINVAL;
		}
		p = v + sizeof(root) - 1;
	}
	memcpy(out, root, o);
	while (*p) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (!n)
			break;
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) {
			fl_seterr(err, errlen,
			       "%s has a \".\" or \"..\" component: name the cgroup "
			       "directly",
			       Q(v));
			return -EINVAL;
		}
		if (o + 1 + n >= sizeof(out)) {
			fl_seterr(err, errlen,
			       "%s is longer than %u bytes under " FL_CONFIG_CGROUP_ROOT, Q(v),
			       FL_CONFIG_PATH_MAX - 1);
			return -EINVAL;
		}
		out[o++] = '/';
		memcpy(out + o, p, n);
		o += n;
		p += n;
	}
	out[o] = '\0';
	memcpy(c->cgroup, out, o + 1);
	return 0;
}

/* In the order of the shipped flamed.conf. */
static const struct key {
	const char *name;
	setter_fn set;
	bool empty_ok; /* "key =" is allowed: it means off */
} keys[] = {
	{"frequency", set_frequency, false},
	{"interval", set_interval, false},
	{"call_graph", set_call_graph, false},
	{"targets", set_targets, false},
	{"idle", set_idle, false},
	{"kernel", set_kernel, false},
	{"user", set_user, false},
	{"output_dir", set_output_dir, false},
	{"formats", set_formats, false},
	{"keep_files", set_keep_files, false},
	{"keep_age", set_keep_age, false},
	{"keep_bytes", set_keep_bytes, false},
	{"max_stacks", set_max_stacks, false},
	{"max_processes", set_max_processes, false},
	{"max_symbol_cache", set_max_symbol_cache, false},
	{"max_unwind_tables", set_max_unwind_tables, false},
	{"metrics_listen", set_metrics_listen, true},
	{"push_url", set_push_url, true},
	{"push_auth_file", set_push_auth_file, true},
	{"push_name", set_push_name, false},
	{"push_labels", set_push_labels, true},
	{"push_timeout", set_push_timeout, false},
	{"push_spool_bytes", set_push_spool_bytes, false},
	{"push_tls_verify", set_push_tls_verify, false},
	{"per_cgroup", set_per_cgroup, false},
	{"python", set_python, false},
	{"cgroup", set_cgroup, true},
};

const char *fl_config__key(size_t i)
{
	return i < ARRAY_SIZE(keys) ? keys[i].name : NULL;
}

/* The index in keys[] of the n bytes at s, '-' matching '_', or -1. */
static int find_key(const char *s, size_t n)
{
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		const char *k = keys[i].name;

		for (j = 0; j < n && k[j]; j++)
			if (s[j] != k[j] && !(s[j] == '-' && k[j] == '_'))
				break;
		if (j == n && !k[j])
			return (int)i;
	}
	return -1;
}

void fl_config__init(struct fl_config *c)
{
	*c = (struct fl_config){
		.frequency = 99,
		.interval_ns = 60 * NS_PER_SEC,
		.all_targets = true,
		.kernel = true,
		.user = true,
		.output_dir = "/var/lib/flamed",
		.fmt_folded = true,
		.max_stacks = 0, /* auto */
		.max_processes = 32768,
		.max_symbol_cache = 1ull << 30,
		.kdwarf = true,
		.max_unwind_tables = 256ull << 20,
		/* Bounded by default: a daemon installed and forgotten must not fill the disk. */
		.keep_age_ns = 7 * 24 * 3600 * NS_PER_SEC,
		.keep_bytes = 1ull << 30,
		.push_name = "flamed",
		.push_timeout_ns = 10 * NS_PER_SEC,
		.push_spool_bytes = 64ull << 20,
		.push_tls_verify = true,
		.python = true,
	};
}

void fl_config__fini(struct fl_config *c)
{
	if (!c)
		return;
	targets_free(&(struct targets){.pids = c->pids,
				       .nr_pids = c->nr_pids,
				       .names = c->names,
				       .nr_names = c->nr_names});
	labels_free(c->push_labels, c->nr_push_labels);
	fl_config__init(c);
}

static int set_known(struct fl_config *c, int k, const char *value, char *err, size_t errlen)
{
	if (!value || (!*value && !keys[k].empty_ok)) {
		fl_seterr(err, errlen, "no value");
		return -EINVAL;
	}
	return keys[k].set(c, value, err, errlen);
}

int fl_config__set(struct fl_config *c, const char *key, const char *value, char *err,
		   size_t errlen)
{
	int k = key ? find_key(key, strlen(key)) : -1;

	if (k < 0) {
		fl_seterr(err, errlen, "unknown key");
		return -EINVAL;
	}
	return set_known(c, k, value, err, errlen);
}

int fl_config__check(const struct fl_config *c, char *err, size_t errlen)
{
	if (!c->kernel && !c->user) {
		fl_seterr(err, errlen,
		       "kernel and user are both off: there would be no stacks to record");
		return -EINVAL;
	}
	return 0;
}

/* The file, whole, NUL-terminated, at most FL_CONFIG_MAX_FILE bytes. */
static int read_file(const char *path, char **ret, size_t *retlen, char *err, size_t errlen)
{
	/*
	 * A FIFO would block the daemon, a tty become its terminal: only a
	 * regular file is opened. The path is root's: /proc/self/fd/N will do.
	 */
	_cleanup_close_ int fd = fl_regfile__open(AT_FDCWD, path, FL_REGFILE_MAGICLINKS, NULL);
	int r;

	if (fd == -EINVAL) {
		fl_seterr(err, errlen, "%s is not a regular file (give a configuration file)", path);
		return fd;
	}
	if (fd < 0) {
		fl_seterr(err, errlen, "cannot open %s: %s", path, strerror(-fd));
		return fd;
	}
	r = fl_regfile__read_all(fd, FL_CONFIG_MAX_FILE, ret, retlen);
	if (r == -EFBIG)
		fl_seterr(err, errlen, "%s: larger than %u bytes, not a configuration file", path,
		       FL_CONFIG_MAX_FILE);
	else if (r == -ENOMEM)
		fl_seterr(err, errlen, "%s: out of memory", path);
	else if (r)
		fl_seterr(err, errlen, "cannot read %s: %s", path, strerror(-r));
	return r;
}

/* Where the comment starts in the n bytes at s ('#' first or after a blank), or n. */
static size_t comment_start(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == '#' && (i == 0 || is_blank(s[i - 1])))
			return i;
	return n;
}

/*
 * One line (without its "\n") into cfg; seen[k] is the line that set key k.
 * Errors go to err as "path:lineno: ...".
 */
static int parse_line(struct fl_config *cfg, const char *line, size_t n, const char *path,
		      size_t lineno, size_t *seen, char *err, size_t errlen)
{
	char buf[FL_CONFIG_MAX_LINE + 1], msg[512];
	const char *key, *val, *eq;
	size_t klen, vlen, i;
	int k, r;

	if (memchr(line, '\0', n)) {
		fl_seterr(err, errlen, "%s:%zu: a NUL byte (not a text file?)", path, lineno);
		return -EINVAL;
	}
	if (n && line[n - 1] == '\r')
		n--;
	if (n > FL_CONFIG_MAX_LINE) {
		fl_seterr(err, errlen, "%s:%zu: line longer than %u bytes", path, lineno,
		       FL_CONFIG_MAX_LINE);
		return -EINVAL;
	}
	trim(line, comment_start(line, n), &line, &n);
	if (!n)
		return 0;
	memcpy(buf, line, n);
	buf[n] = '\0';
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
			fl_seterr(err, errlen, "%s:%zu: a control character (0x%02x)", path, lineno,
			       ch);
			return -EINVAL;
		}
	}
	eq = strchr(buf, '=');
	if (!eq) {
		fl_seterr(err, errlen, "%s:%zu: %s is not a \"key = value\" line", path, lineno,
		       Q(buf));
		return -EINVAL;
	}
	trim(buf, (size_t)(eq - buf), &key, &klen);
	trim(eq + 1, strlen(eq + 1), &val, &vlen);
	if (!klen) {
		fl_seterr(err, errlen, "%s:%zu: no key before '='", path, lineno);
		return -EINVAL;
	}
	buf[key - buf + klen] = '\0';
	buf[val - buf + vlen] = '\0';
	k = find_key(key, klen);
	if (k < 0) {
		fl_seterr(err, errlen, "%s:%zu: %.64s: unknown key", path, lineno, key);
		return -EINVAL;
	}
	if (seen[k]) {
		fl_seterr(err, errlen, "%s:%zu: %.64s: already set on line %zu", path, lineno, key,
		       seen[k]);
		return -EINVAL;
	}
	r = set_known(cfg, k, val, msg, sizeof(msg));
	if (r) {
		fl_seterr(err, errlen, "%s:%zu: %.64s: %s", path, lineno, key, msg);
		return r;
	}
	seen[k] = lineno;
	return 0;
}

int fl_config__load(struct fl_config *c, const char *path, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, lineno = 0, seen[ARRAY_SIZE(keys)] = {0};
	struct fl_config n;
	const char *p, *end;
	char msg[512];
	int r;

	r = read_file(path, &buf, &len, err, errlen);
	if (r)
		return r;
	fl_config__init(&n);
	p = buf;
	end = buf + len;
	if (len >= 3 && !memcmp(p, "\xef\xbb\xbf", 3))
		p += 3;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		r = parse_line(&n, p, (size_t)(eol - p), path, ++lineno, seen, err, errlen);
		if (r)
			goto out_fini;
		p = nl ? nl + 1 : end;
	}
	r = fl_config__check(&n, msg, sizeof(msg));
	if (r) {
		fl_seterr(err, errlen, "%s: %s", path, msg);
		goto out_fini;
	}
	fl_config__fini(c);
	*c = n;
	return 0;
out_fini:
	fl_config__fini(&n);
	return r;
}
