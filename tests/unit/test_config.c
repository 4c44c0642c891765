// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests of the daemon's configuration: every key, the file syntax, errors, the shipped file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "flamed/daemon/config.h"

#define SHIPPED_CONF FIXTURE_SRC_DIR "/../../packaging/flamed.conf"
#define SEC 1000000000ull

static char tmp_path[] = "/tmp/test_config.XXXXXX";

static int setup(void **state)
{
	int fd = mkstemp(tmp_path);

	(void)state;
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(tmp_path);
	return 0;
}

static void write_file(const char *buf, size_t len)
{
	FILE *f = fopen(tmp_path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Loads s (len bytes, or strlen when 0) over c; returns load's result, message in err. */
static int load_n(struct fl_config *c, const char *s, size_t len, char *err, size_t errlen)
{
	write_file(s, len ? len : strlen(s));
	err[0] = '\0';
	return fl_config__load(c, tmp_path, err, errlen);
}

static int load(struct fl_config *c, const char *s, char *err, size_t errlen)
{
	return load_n(c, s, 0, err, errlen);
}

static void load_bad(const char *s, const char *want);

static bool same(const struct fl_config *a, const struct fl_config *b)
{
	size_t i;

	if (a->frequency != b->frequency || a->interval_ns != b->interval_ns ||
	    a->dwarf != b->dwarf || a->stack_size != b->stack_size ||
	    a->all_targets != b->all_targets || a->nr_pids != b->nr_pids ||
	    a->nr_names != b->nr_names || a->idle != b->idle || a->kernel != b->kernel ||
	    a->user != b->user || strcmp(a->output_dir, b->output_dir) ||
	    a->fmt_folded != b->fmt_folded || a->fmt_svg != b->fmt_svg || a->fmt_html != b->fmt_html ||
	    a->keep_files != b->keep_files || a->keep_age_ns != b->keep_age_ns ||
	    a->keep_bytes != b->keep_bytes || a->max_stacks != b->max_stacks ||
	    a->max_processes != b->max_processes || a->max_symbol_cache != b->max_symbol_cache ||
	    a->kdwarf != b->kdwarf || a->max_unwind_tables != b->max_unwind_tables ||
	    a->fmt_pprof != b->fmt_pprof || strcmp(a->metrics_listen, b->metrics_listen) ||
	    strcmp(a->metrics_addr.host, b->metrics_addr.host) ||
	    a->metrics_addr.port != b->metrics_addr.port || strcmp(a->push_url, b->push_url) ||
	    strcmp(a->push_auth_file, b->push_auth_file) || strcmp(a->push_name, b->push_name) ||
	    a->nr_push_labels != b->nr_push_labels || a->push_timeout_ns != b->push_timeout_ns ||
	    a->push_spool_bytes != b->push_spool_bytes ||
	    a->push_tls_verify != b->push_tls_verify || a->per_cgroup != b->per_cgroup ||
	    a->python != b->python || strcmp(a->cgroup, b->cgroup))
		return false;
	for (i = 0; i < a->nr_push_labels; i++)
		if (strcmp(a->push_labels[i].key, b->push_labels[i].key) ||
		    strcmp(a->push_labels[i].value, b->push_labels[i].value))
			return false;
	for (i = 0; i < a->nr_pids; i++)
		if (a->pids[i] != b->pids[i])
			return false;
	for (i = 0; i < a->nr_names; i++)
		if (strcmp(a->names[i], b->names[i]))
			return false;
	return true;
}

static bool is_default(const struct fl_config *c)
{
	struct fl_config d;

	fl_config__init(&d);
	return same(c, &d);
}

/* Sets key = value on a fresh config, expecting success; the caller reads *c and finis it. */
static void set_ok(struct fl_config *c, const char *key, const char *value)
{
	char err[256] = "";

	fl_config__init(c);
	if (fl_config__set(c, key, value, err, sizeof(err)))
		fail_msg("%s = %s refused: %s", key, value, err);
}

/* key = value is refused with a message containing want, and the config is unchanged. */
static void set_bad(const char *key, const char *value, const char *want)
{
	struct fl_config c;
	char err[256] = "";

	fl_config__init(&c);
	assert_int_equal(fl_config__set(&c, key, value, err, sizeof(err)), -EINVAL);
	if (!strstr(err, want))
		fail_msg("%s = %s: \"%s\" lacks \"%s\"", key, value, err, want);
	assert_null(strchr(err, '\n'));
	assert_true(is_default(&c));
	fl_config__fini(&c);
}

static void test_defaults(void **state)
{
	struct fl_config c;

	(void)state;
	fl_config__init(&c);
	assert_int_equal(c.frequency, 99);
	assert_true(c.interval_ns == 60 * SEC);
	assert_false(c.dwarf);
	assert_true(c.kdwarf); /* call_graph = kernel-dwarf */
	assert_int_equal(c.stack_size, 0);
	assert_true(c.all_targets);
	assert_int_equal(c.nr_pids + c.nr_names, 0);
	assert_false(c.idle);
	assert_true(c.kernel && c.user);
	assert_string_equal(c.output_dir, "/var/lib/flamed");
	assert_true(c.fmt_folded && !c.fmt_svg && !c.fmt_pprof);
	/* Bounded retention by default: a week, 1 GiB. */
	assert_true(c.keep_files == 0 && c.keep_age_ns == 7 * 86400 * SEC &&
		    c.keep_bytes == 1ull << 30);
	/* Sized from the samples of a second by the sampler, as record's maps are. */
	assert_int_equal(c.max_stacks, 0);
	assert_int_equal(c.max_processes, 32768);
	assert_true(c.max_symbol_cache == 1ull << 30);
	assert_true(c.max_unwind_tables == 256ull << 20);
	/* The fleet features are off; the push settings have their defaults. */
	assert_string_equal(c.metrics_listen, "");
	assert_string_equal(c.push_url, "");
	assert_string_equal(c.push_auth_file, "");
	assert_string_equal(c.push_name, "flamed");
	assert_int_equal(c.nr_push_labels, 0);
	assert_null(c.push_labels);
	assert_true(c.push_timeout_ns == 10 * SEC);
	assert_true(c.push_spool_bytes == 64ull << 20);
	assert_true(c.push_tls_verify);
	assert_false(c.per_cgroup);
	assert_true(c.python);
	assert_string_equal(c.cgroup, "");
	fl_config__fini(&c);
	fl_config__fini(NULL);
	assert_string_equal(fl_config__key(0), "frequency");
	assert_string_equal(fl_config__key(14), "max_symbol_cache");
	assert_string_equal(fl_config__key(15), "max_unwind_tables");
	assert_string_equal(fl_config__key(16), "metrics_listen");
	assert_string_equal(fl_config__key(25), "python");
	assert_string_equal(fl_config__key(26), "cgroup");
	assert_null(fl_config__key(27));
}

static void test_numbers(void **state)
{
	struct fl_config c;

	(void)state;
	set_ok(&c, "frequency", "1");
	assert_int_equal(c.frequency, 1);
	set_ok(&c, "frequency", "100000");
	assert_int_equal(c.frequency, 100000);
	set_bad("frequency", "abc", "\"abc\" is not a number (1-100000)");
	set_bad("frequency", "0", "\"0\" is out of range (1-100000)");
	set_bad("frequency", "100001", "out of range");
	set_bad("frequency", "99999999999999999999999", "out of range");
	set_bad("frequency", "-5", "not a number");
	set_bad("frequency", "+5", "not a number");
	set_bad("frequency", "9 9", "not a number");
	set_bad("frequency", "99Hz", "not a number");
	set_bad("frequency", "0x10", "not a number");
	set_bad("frequency", "", "no value");
	set_bad("frequency", NULL, "no value");

	set_ok(&c, "max_stacks", "16777216");
	assert_int_equal(c.max_stacks, 16777216);
	set_ok(&c, "max_stacks", "auto");
	assert_int_equal(c.max_stacks, 0);
	set_bad("max_stacks", "0", "out of range (1-16777216)");
	set_bad("max_stacks", "16777217", "out of range");
	set_bad("max_stacks", "Auto", "neither auto nor a number (1-16777216)");
	set_ok(&c, "max_processes", "1");
	assert_int_equal(c.max_processes, 1);
	set_bad("max_processes", "0", "out of range (1-4194304)");
	set_ok(&c, "max_symbol_cache", "64M");
	assert_true(c.max_symbol_cache == 64ull << 20);
	set_bad("max_symbol_cache", "1K", "out of range (1M-1024G)");
	set_bad("max_symbol_cache", "lots", "is not a size");
	set_ok(&c, "max_unwind_tables", "64M");
	assert_true(c.max_unwind_tables == 64ull << 20);
	set_ok(&c, "max-unwind-tables", "2G");
	assert_true(c.max_unwind_tables == 2ull << 30);
	set_bad("max_unwind_tables", "1K", "out of range (1M-1024G)");
	set_bad("max_unwind_tables", "2048G", "out of range (1M-1024G)");
	set_bad("max_processes", "4194305", "out of range");
	set_bad("max_processes", "lots", "not a number");

	set_ok(&c, "keep_files", "0");
	assert_true(c.keep_files == 0);
	set_ok(&c, "keep_files", "1000000000");
	assert_true(c.keep_files == 1000000000);
	set_bad("keep_files", "1000000001", "out of range");
	set_bad("keep_files", "-1", "not a number");
	set_bad("keep_files", "10k", "not a number");
}

static void test_durations(void **state)
{
	struct fl_config c;

	(void)state;
	set_ok(&c, "interval", "1");
	assert_true(c.interval_ns == SEC);
	set_ok(&c, "interval", "90s");
	assert_true(c.interval_ns == 90 * SEC);
	set_ok(&c, "interval", "5m");
	assert_true(c.interval_ns == 300 * SEC);
	set_ok(&c, "interval", "2 h");
	assert_true(c.interval_ns == 7200 * SEC);
	set_ok(&c, "interval", "1H");
	assert_true(c.interval_ns == 3600 * SEC);
	set_ok(&c, "interval", "7d");
	assert_true(c.interval_ns == 7 * 86400 * SEC);
	set_bad("interval", "0", "\"0\" is out of range (1s-7d)");
	set_bad("interval", "0s", "out of range");
	set_bad("interval", "8d", "out of range");
	set_bad("interval", "604801", "out of range");
	set_bad("interval", "99999999999999999999h", "out of range");
	set_bad("interval", "1.5h", "not a duration");
	set_bad("interval", "5min", "not a duration");
	set_bad("interval", "5x", "not a duration");
	set_bad("interval", "m", "not a duration");
	set_bad("interval", "-1", "not a duration");

	set_ok(&c, "keep_age", "0");
	assert_true(c.keep_age_ns == 0);
	set_ok(&c, "keep_age", "30d");
	assert_true(c.keep_age_ns == 30 * 86400 * SEC);
	set_ok(&c, "keep_age", "12h");
	assert_true(c.keep_age_ns == 12 * 3600 * SEC);
	set_ok(&c, "keep_age", "36500d");
	set_bad("keep_age", "36501d", "out of range");
	set_bad("keep_age", "1w", "not a duration");
	set_bad("keep_age", "forever", "not a duration");
}

static void test_sizes(void **state)
{
	struct fl_config c;

	(void)state;
	set_ok(&c, "keep_bytes", "0");
	assert_true(c.keep_bytes == 0);
	set_ok(&c, "keep_bytes", "1000");
	assert_true(c.keep_bytes == 1000);
	set_ok(&c, "keep_bytes", "4K");
	assert_true(c.keep_bytes == 4096);
	set_ok(&c, "keep_bytes", "512M");
	assert_true(c.keep_bytes == 512ull << 20);
	set_ok(&c, "keep_bytes", "2 G");
	assert_true(c.keep_bytes == 2ull << 30);
	set_ok(&c, "keep_bytes", "3g");
	assert_true(c.keep_bytes == 3ull << 30);
	set_ok(&c, "keep_bytes", "17179869183G");
	assert_true(c.keep_bytes == 17179869183ull << 30);
	set_bad("keep_bytes", "17179869184G", "too big");
	set_bad("keep_bytes", "18446744073709551616", "too big");
	set_bad("keep_bytes", "1T", "not a size");
	set_bad("keep_bytes", "1KB", "not a size");
	set_bad("keep_bytes", "1.5G", "not a size");
	set_bad("keep_bytes", "G", "not a size");
}

static void test_call_graph(void **state)
{
	struct fl_config c;

	(void)state;
	set_ok(&c, "call_graph", "fp");
	assert_false(c.dwarf);
	assert_false(c.kdwarf);
	assert_int_equal(c.stack_size, 0);
	set_ok(&c, "call_graph", "Kernel-DWARF");
	assert_true(c.kdwarf);
	assert_false(c.dwarf);
	set_ok(&c, "call_graph", "dwarf");
	assert_true(c.dwarf);
	assert_false(c.kdwarf);
	assert_int_equal(c.stack_size, 16384);
	set_ok(&c, "call_graph", "dwarf,8");
	assert_int_equal(c.stack_size, 8);
	set_ok(&c, "call_graph", "DWARF , 65528");
	assert_true(c.dwarf);
	assert_int_equal(c.stack_size, 65528);
	set_ok(&c, "call-graph", "dwarf,4096"); /* the command line's spelling */
	assert_int_equal(c.stack_size, 4096);
	set_bad("call_graph", "dwarf,0", "multiple of 8 from 8 to 65528");
	set_bad("call_graph", "dwarf,12", "multiple of 8");
	set_bad("call_graph", "dwarf,65536", "multiple of 8");
	set_bad("call_graph", "dwarf,99999999999999999999999", "multiple of 8");
	set_bad("call_graph", "dwarf,",
		"is not a call graph (kernel-dwarf, fp, dwarf or dwarf,SIZE)");
	set_bad("call_graph", "kernel-dwarf,8", "not a call graph");
	set_bad("call_graph", "dwarf,abc", "not a call graph");
	set_bad("call_graph", "dwarfs", "not a call graph");
	set_bad("call_graph", "lbr", "not a call graph");
	set_bad("call_graph", "fp,8", "not a call graph");
}

static void test_targets(void **state)
{
	struct fl_config c;
	char err[256];

	(void)state;
	set_ok(&c, "targets", "all");
	assert_true(c.all_targets);
	set_ok(&c, "targets", "ALL");
	assert_true(c.all_targets);

	set_ok(&c, "targets", "nginx, postgres,1234 ,  my app , 7z, 1234, nginx");
	assert_false(c.all_targets);
	assert_int_equal(c.nr_pids, 1);
	assert_int_equal(c.pids[0], 1234);
	assert_int_equal(c.nr_names, 4);
	assert_string_equal(c.names[0], "nginx");
	assert_string_equal(c.names[1], "postgres");
	assert_string_equal(c.names[2], "my app");
	assert_string_equal(c.names[3], "7z");
	/* A second set replaces the list; a failed one keeps it. */
	assert_int_equal(fl_config__set(&c, "targets", "1,2", err, sizeof(err)), 0);
	assert_int_equal(c.nr_pids, 2);
	assert_int_equal(c.nr_names, 0);
	assert_int_equal(c.pids[1], 2);
	assert_int_equal(fl_config__set(&c, "targets", "3,,4", err, sizeof(err)), -EINVAL);
	assert_int_equal(c.nr_pids, 2);
	assert_int_equal(c.pids[0], 1);
	assert_int_equal(fl_config__set(&c, "targets", "all", err, sizeof(err)), 0);
	assert_true(c.all_targets);
	assert_int_equal(c.nr_pids, 0);
	fl_config__fini(&c);

	set_ok(&c, "targets", "4194304");
	assert_int_equal(c.pids[0], 4194304);
	fl_config__fini(&c);
	set_ok(&c, "targets", "abcdefghijklmno"); /* exactly 15 bytes */
	assert_int_equal(c.nr_names, 1);
	fl_config__fini(&c);

	set_bad("targets", "0", "\"0\" is not a valid pid (1-4194304)");
	set_bad("targets", "4194305", "not a valid pid");
	set_bad("targets", "99999999999999999999999", "not a valid pid");
	set_bad("targets", "nginx,", "has an empty item");
	set_bad("targets", ",nginx", "has an empty item");
	set_bad("targets", " , ", "has an empty item");
	set_bad("targets", "all, nginx", "\"all\" cannot be combined");
	set_bad("targets", "a-very-long-process-name", "longer than 15 bytes");
	set_bad("targets", "nginx, 0", "\"0\" is not a valid pid");
}

static void test_target_limit(void **state)
{
	size_t n = FL_CONFIG_MAX_TARGETS + 1, i, o = 0;
	char *v = malloc(n * 8 + 1);
	struct fl_config c;

	(void)state;
	assert_non_null(v);
	for (i = 0; i < n - 1; i++)
		o += (size_t)sprintf(v + o, "%s%zu", i ? "," : "", i + 1);
	set_ok(&c, "targets", v);
	assert_int_equal(c.nr_pids, FL_CONFIG_MAX_TARGETS);
	fl_config__fini(&c);
	sprintf(v + o, ",%zu", n);
	set_bad("targets", v, "one target too many (at most 1024)");
	free(v);
}

static void test_booleans(void **state)
{
	static const char *const yes[] = {"yes", "true", "1", "on", "YES", "True", "On"};
	static const char *const no[] = {"no", "false", "0", "off", "No", "FALSE", "OFF"};
	struct fl_config c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		set_ok(&c, "idle", yes[i]);
		assert_true(c.idle);
		set_ok(&c, "kernel", no[i]);
		assert_false(c.kernel);
		set_ok(&c, "user", no[i]);
		assert_false(c.user);
	}
	set_bad("idle", "y", "\"y\" is not a boolean (yes, no, true, false, on, off, 1, 0)");
	set_bad("kernel", "2", "not a boolean");
	set_bad("user", "yes please", "not a boolean");
}

static void test_output_dir_and_formats(void **state)
{
	struct fl_config c;
	char longpath[FL_CONFIG_PATH_MAX + 1];

	(void)state;
	set_ok(&c, "output_dir", "/srv/flamed snapshots/");
	assert_string_equal(c.output_dir, "/srv/flamed snapshots");
	set_ok(&c, "output_dir", "/");
	assert_string_equal(c.output_dir, "/");
	set_ok(&c, "output_dir", "//");
	assert_string_equal(c.output_dir, "/");
	set_bad("output_dir", "var/lib/flamed", "not an absolute path");
	set_bad("output_dir", "~/flamed", "not an absolute path");
	memset(longpath, 'a', sizeof(longpath));
	longpath[0] = '/';
	longpath[FL_CONFIG_PATH_MAX - 1] = '\0';
	set_ok(&c, "output_dir", longpath);
	assert_int_equal(strlen(c.output_dir), FL_CONFIG_PATH_MAX - 1);
	longpath[FL_CONFIG_PATH_MAX - 1] = 'a';
	longpath[FL_CONFIG_PATH_MAX] = '\0';
	set_bad("output_dir", longpath, "longer than 1023 bytes");

	set_ok(&c, "formats", "svg");
	assert_true(!c.fmt_folded && c.fmt_svg);
	set_ok(&c, "formats", "folded, svg");
	assert_true(c.fmt_folded && c.fmt_svg);
	set_ok(&c, "formats", "SVG,folded,svg");
	assert_true(c.fmt_folded && c.fmt_svg && !c.fmt_pprof);
	set_ok(&c, "formats", "pprof");
	assert_true(!c.fmt_folded && !c.fmt_svg && c.fmt_pprof);
	set_ok(&c, "formats", "folded, PPROF, svg");
	assert_true(c.fmt_folded && c.fmt_svg && c.fmt_pprof && !c.fmt_html);
	set_ok(&c, "formats", "HTML");
	assert_true(!c.fmt_folded && !c.fmt_svg && !c.fmt_pprof && c.fmt_html);
	set_ok(&c, "formats", "svg, html");
	assert_true(c.fmt_svg && c.fmt_html && !c.fmt_folded);
	set_bad("formats", "png", "\"png\" is not a list of formats (folded, svg, html, pprof");
	set_bad("formats", "htm", "not a list of formats");
	set_bad("formats", "pb.gz", "not a list of formats");
	set_bad("formats", "folded svg", "not a list of formats");
	set_bad("formats", "folded,", "has an empty item");
}

static void test_metrics_listen(void **state)
{
	struct fl_config c;
	char err[256];

	(void)state;
	set_ok(&c, "metrics_listen", "127.0.0.1:9464");
	assert_string_equal(c.metrics_listen, "127.0.0.1:9464");
	assert_string_equal(c.metrics_addr.host, "127.0.0.1");
	assert_int_equal(c.metrics_addr.port, 9464);
	assert_int_equal(c.metrics_addr.family, AF_INET);
	set_ok(&c, "metrics_listen", "[::1]:9464");
	assert_string_equal(c.metrics_addr.host, "::1");
	assert_int_equal(c.metrics_addr.family, AF_INET6);
	set_ok(&c, "metrics-listen", "localhost:65535");
	assert_string_equal(c.metrics_addr.host, "localhost");
	assert_int_equal(c.metrics_addr.port, 65535);
	assert_int_equal(c.metrics_addr.family, AF_UNSPEC);
	set_ok(&c, "metrics_listen", "0.0.0.0:1");
	set_ok(&c, "metrics_listen", "[::]:9464");
	set_ok(&c, "metrics_listen", "node-01.example.com:9464");
	/* Empty is off, and a second set replaces the first. */
	assert_int_equal(fl_config__set(&c, "metrics_listen", "", err, sizeof(err)), 0);
	assert_string_equal(c.metrics_listen, "");
	assert_int_equal(c.metrics_addr.port, 0);
	fl_config__fini(&c);

	set_bad("metrics_listen", "9464", "\"9464\" has no port (HOST:PORT, e.g. 127.0.0.1:9464)");
	set_bad("metrics_listen", "127.0.0.1", "has no port");
	set_bad("metrics_listen", ":9464", "has no address");
	set_bad("metrics_listen", "127.0.0.1:0", "port 0 is not a port to scrape (1-65535");
	set_bad("metrics_listen", "127.0.0.1:65536", "has no valid port (a number from 1 to 65535");
	set_bad("metrics_listen", "127.0.0.1:", "has no valid port");
	set_bad("metrics_listen", "127.0.0.1:http", "has no valid port");
	set_bad("metrics_listen", "127.0.0.1:-1", "has no valid port");
	set_bad("metrics_listen", "::1:9464", "IPv6 address without brackets (write [::1]:9464)");
	set_bad("metrics_listen", "[::1:9464", "is not [IPv6]:PORT");
	set_bad("metrics_listen", "[127.0.0.1]:9464", "is not a valid IPv6 address in brackets");
	set_bad("metrics_listen", "[]:9464", "has no address");
	set_bad("metrics_listen", "256.0.0.1:9464", "is not a valid IPv4 address");
	set_bad("metrics_listen", "1.2.3:9464", "is not a valid IPv4 address");
	set_bad("metrics_listen", "my_host:9464", "is not a valid address");
	set_bad("metrics_listen", "-host:9464", "is not a valid address");
	set_bad("metrics_listen", "host-:9464", "is not a valid address");
	set_bad("metrics_listen", "a..b:9464", "is not a valid address");
	set_bad("metrics_listen", "http://127.0.0.1:9464", "is a URL, not HOST:PORT");
	set_bad("metrics_listen", "127.0.0.1 :9464", "is not a valid");
}

static void test_push_url(void **state)
{
	struct fl_config c;
	char err[256];

	(void)state;
	set_ok(&c, "push_url", "http://pyroscope:4040");
	assert_string_equal(c.push_url, "http://pyroscope:4040");
	set_ok(&c, "push_url", "HTTPS://profiles.example.com/");
	assert_string_equal(c.push_url, "HTTPS://profiles.example.com/");
	set_ok(&c, "push_url", "https://[2001:db8::1]:4040/base?x=1");
	set_ok(&c, "push_url", "http://127.0.0.1:65535");
	assert_int_equal(fl_config__set(&c, "push_url", "", err, sizeof(err)), 0);
	assert_string_equal(c.push_url, "");
	fl_config__fini(&c);

	set_bad("push_url", "pyroscope:4040", "is not an http:// or https:// URL");
	set_bad("push_url", "ftp://host/", "is not an http:// or https:// URL");
	set_bad("push_url", "http://", "has no host");
	set_bad("push_url", "http:///ingest", "has no host");
	set_bad("push_url", "http://:4040", "has no host");
	set_bad("push_url", "http://user:secret@host/",
		"has a user or password in it: put them in push_auth_file");
	set_bad("push_url", "http://host:0/", "has no valid port (1-65535)");
	set_bad("push_url", "http://host:65536", "has no valid port");
	set_bad("push_url", "http://host:/", "has no valid port");
	set_bad("push_url", "http://[::1/", "without its ']'");
	set_bad("push_url", "http://host/a b", "has a blank, a control or a non-ASCII character");
	set_bad("push_url", "http://h\xc3\xa9st/", "non-ASCII");
}

static void test_push_keys(void **state)
{
	char longname[FL_CONFIG_APP_NAME_MAX + 2];
	struct fl_config c;
	char err[256];

	(void)state;
	set_ok(&c, "push_auth_file", "/etc/flamed/push-token");
	assert_string_equal(c.push_auth_file, "/etc/flamed/push-token");
	assert_int_equal(fl_config__set(&c, "push_auth_file", "", err, sizeof(err)), 0);
	assert_string_equal(c.push_auth_file, "");
	set_bad("push_auth_file", "etc/token", "is not an absolute path");
	set_bad("push_auth_file", "/etc/flamed/", "names a directory");

	set_ok(&c, "push_name", "web-01.cpu");
	assert_string_equal(c.push_name, "web-01.cpu");
	set_ok(&c, "push_name", "my_app");
	memset(longname, 'a', sizeof(longname));
	longname[FL_CONFIG_APP_NAME_MAX] = '\0';
	set_ok(&c, "push_name", longname);
	longname[FL_CONFIG_APP_NAME_MAX] = 'a';
	longname[FL_CONFIG_APP_NAME_MAX + 1] = '\0';
	set_bad("push_name", longname, "longer than 128 bytes");
	set_bad("push_name", "my app", "is not an application name (letters, digits");
	set_bad("push_name", "app{env=prod}", "is not an application name");
	set_bad("push_name", "", "no value");

	set_ok(&c, "push_timeout", "30s");
	assert_true(c.push_timeout_ns == 30 * SEC);
	set_ok(&c, "push_timeout", "1h");
	assert_true(c.push_timeout_ns == 3600 * SEC);
	set_ok(&c, "push_timeout", "1");
	assert_true(c.push_timeout_ns == SEC);
	set_bad("push_timeout", "0", "\"0\" is out of range (1s-1h)");
	set_bad("push_timeout", "2h", "out of range (1s-1h)");
	set_bad("push_timeout", "10ms", "is not a duration");

	set_ok(&c, "push_spool_bytes", "0");
	assert_true(c.push_spool_bytes == 0);
	set_ok(&c, "push_spool_bytes", "256M");
	assert_true(c.push_spool_bytes == 256ull << 20);
	set_ok(&c, "push_spool_bytes", "1024G");
	set_bad("push_spool_bytes", "1025G", "out of range (0-1024G)");
	set_bad("push_spool_bytes", "lots", "is not a size");
	set_bad("push_spool_bytes", "lots", "0 = no spool");

	set_ok(&c, "push_tls_verify", "no");
	assert_false(c.push_tls_verify);
	set_ok(&c, "push_tls_verify", "YES");
	assert_true(c.push_tls_verify);
	set_bad("push_tls_verify", "maybe", "is not a boolean");
	fl_config__fini(&c);
}

static void test_push_labels(void **state)
{
	char many[64 * 12 + 16];
	struct fl_config c;
	char err[256];
	size_t i, o = 0;

	(void)state;
	set_ok(&c, "push_labels", "env=prod, region = eu-west-1 ,_team=web,k9=a b/c:d");
	assert_int_equal(c.nr_push_labels, 4);
	assert_string_equal(c.push_labels[0].key, "env");
	assert_string_equal(c.push_labels[0].value, "prod");
	assert_string_equal(c.push_labels[1].key, "region");
	assert_string_equal(c.push_labels[1].value, "eu-west-1");
	assert_string_equal(c.push_labels[2].key, "_team");
	assert_string_equal(c.push_labels[3].value, "a b/c:d");
	/* A second set replaces the list; a failed one keeps it; empty clears it. */
	assert_int_equal(fl_config__set(&c, "push_labels", "dc=x", err, sizeof(err)), 0);
	assert_int_equal(c.nr_push_labels, 1);
	assert_int_equal(fl_config__set(&c, "push_labels", "dc=y,1x=z", err, sizeof(err)), -EINVAL);
	assert_int_equal(c.nr_push_labels, 1);
	assert_string_equal(c.push_labels[0].value, "x");
	assert_int_equal(fl_config__set(&c, "push_labels", "", err, sizeof(err)), 0);
	assert_int_equal(c.nr_push_labels, 0);
	fl_config__fini(&c);

	for (i = 0; i < FL_CONFIG_MAX_LABELS; i++)
		o += (size_t)sprintf(many + o, "%sk%zu=v", i ? "," : "", i);
	set_ok(&c, "push_labels", many);
	assert_int_equal(c.nr_push_labels, FL_CONFIG_MAX_LABELS);
	fl_config__fini(&c);
	strcpy(many + o, ",one=more");
	set_bad("push_labels", many, "\"one=more\" is one label too many (at most 64)");

	set_bad("push_labels", "env",
		"\"env\" is not key=value (a list is \"env=prod, region=eu\")");
	set_bad("push_labels", "1env=prod", "\"1env=prod\" has an invalid label name");
	set_bad("push_labels", "e-nv=prod", "has an invalid label name (letters, digits and");
	set_bad("push_labels", "=prod", "has an invalid label name");
	set_bad("push_labels", "__name__=x", "starting with \"__\" (reserved)");
	set_bad("push_labels", "env=", "has an invalid value (1 to 256 bytes, without '{', '}'");
	set_bad("push_labels", "env=a=b", "has an invalid value");
	set_bad("push_labels", "env={x}", "has an invalid value");
	set_bad("push_labels", "env=a\tb", "has an invalid value");
	set_bad("push_labels", "env=a, env=b", "\"env=b\" repeats a label name");
	set_bad("push_labels", "env=a,", "has an empty item");
}

static void test_cgroup(void **state)
{
	char longpath[FL_CONFIG_PATH_MAX + 8];
	struct fl_config c;
	char err[256];

	(void)state;
	set_ok(&c, "per_cgroup", "yes");
	assert_true(c.per_cgroup);
	set_bad("per_cgroup", "sometimes", "is not a boolean");
	set_ok(&c, "python", "no");
	assert_false(c.python);
	set_bad("python", "maybe", "is not a boolean");

	set_ok(&c, "cgroup", "system.slice/nginx.service");
	assert_string_equal(c.cgroup, "/sys/fs/cgroup/system.slice/nginx.service");
	set_ok(&c, "cgroup", "/sys/fs/cgroup/system.slice/nginx.service/");
	assert_string_equal(c.cgroup, "/sys/fs/cgroup/system.slice/nginx.service");
	set_ok(&c, "cgroup", "/sys/fs/cgroup//user.slice///user-1000.slice");
	assert_string_equal(c.cgroup, "/sys/fs/cgroup/user.slice/user-1000.slice");
	set_ok(&c, "cgroup", "/sys/fs/cgroup");
	assert_string_equal(c.cgroup, "/sys/fs/cgroup");
	set_ok(&c, "cgroup", "my app.scope");
	assert_string_equal(c.cgroup, "/sys/fs/cgroup/my app.scope");
	set_ok(&c, "cgroup", "a/..b/c..");
	assert_string_equal(c.cgroup, "/sys/fs/cgroup/a/..b/c..");
	assert_int_equal(fl_config__set(&c, "cgroup", "", err, sizeof(err)), 0);
	assert_string_equal(c.cgroup, "");
	fl_config__fini(&c);

	set_bad("cgroup", "/system.slice/nginx.service",
		"is not under /sys/fs/cgroup (give /sys/fs/cgroup/system.slice/x.service, or "
		"system.slice/x.service relative to it)");
	set_bad("cgroup", "/sys/fs/cgroupX/a", "is not under /sys/fs/cgroup");
	set_bad("cgroup", "/sys/fs/cgroup/../../etc", "has a \".\" or \"..\" component");
	set_bad("cgroup", "system.slice/../x", "has a \".\" or \"..\" component");
	set_bad("cgroup", "./x", "component");
	set_bad("cgroup", "a\nb", "has a control character");
	memset(longpath, 'a', sizeof(longpath));
	longpath[FL_CONFIG_PATH_MAX] = '\0';
	set_bad("cgroup", longpath, "bytes under /sys/fs/cgroup");
}

static void test_load_fleet(void **state)
{
	struct fl_config c;
	char err[512];

	(void)state;
	fl_config__init(&c);
	assert_int_equal(load(&c,
			      "formats = folded, pprof\n"
			      "metrics_listen = [::1]:9464 # scraped by prometheus\n"
			      "push_url = https://pyroscope.example.com:4040\n"
			      "push_auth_file = /etc/flamed/push-token\n"
			      "push_name = web\n"
			      "push_labels = env = prod, dc=fra1\n"
			      "push_timeout = 30s\n"
			      "push_spool_bytes = 0\n"
			      "push_tls_verify = no\n"
			      "per_cgroup = yes\n"
			      "cgroup = system.slice\n",
			      err, sizeof(err)),
			 0);
	assert_true(c.fmt_folded && c.fmt_pprof && !c.fmt_svg);
	assert_string_equal(c.metrics_listen, "[::1]:9464");
	assert_int_equal(c.metrics_addr.port, 9464);
	assert_string_equal(c.push_url, "https://pyroscope.example.com:4040");
	assert_string_equal(c.push_auth_file, "/etc/flamed/push-token");
	assert_string_equal(c.push_name, "web");
	assert_int_equal(c.nr_push_labels, 2);
	assert_string_equal(c.push_labels[1].key, "dc");
	assert_true(c.push_timeout_ns == 30 * SEC && c.push_spool_bytes == 0);
	assert_false(c.push_tls_verify);
	assert_true(c.per_cgroup);
	assert_string_equal(c.cgroup, "/sys/fs/cgroup/system.slice");

	/* "key =" is off for the keys that allow it; a reload forgets the labels. */
	assert_int_equal(load(&c, "metrics_listen =\npush_url = # off\npush_labels =\ncgroup =\n",
			      err, sizeof(err)),
			 0);
	assert_true(is_default(&c));
	fl_config__fini(&c);

	load_bad("push_name =\n", ":1: push_name: no value");
	load_bad("push_timeout =\n", ":1: push_timeout: no value");
	load_bad("metrics_listen = 127.0.0.1\n",
		 ":1: metrics_listen: \"127.0.0.1\" has no port (HOST:PORT, e.g. 127.0.0.1:9464)");
	load_bad("push_labels = a=1\npush_labels = b=2\n",
		 ":2: push_labels: already set on line 1");
}

static void test_keys(void **state)
{
	struct fl_config c;
	char err[256];

	(void)state;
	set_bad("frequenzy", "99", "unknown key");
	set_bad("Frequency", "99", "unknown key");
	set_bad("", "99", "unknown key");
	set_bad(NULL, "99", "unknown key");
	set_ok(&c, "max-processes", "10");
	assert_int_equal(c.max_processes, 10);
	/* Messages never name the key: the caller says where it came from. */
	fl_config__init(&c);
	assert_int_equal(fl_config__set(&c, "frequency", "abc", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "\"abc\" is not a number (1-100000)");
	/* err may be NULL, or short: the message is cut, not overflowed. */
	assert_int_equal(fl_config__set(&c, "frequency", "abc", NULL, 0), -EINVAL);
	memset(err, 'x', sizeof(err));
	assert_int_equal(fl_config__set(&c, "frequency", "abc", err, 8), -EINVAL);
	assert_string_equal(err, "\"abc\" i");
	assert_int_equal(err[8], 'x');
	/* A value with control characters is shown escaped, on one line, cut. */
	set_bad("frequency", "1\n2\"\\", "\"1\\x0a2\\\"\\\\\" is not a number");
	set_bad("frequency",
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		"xxx",
		"xxxxxxxx...\" is not a number");
}

static void test_check(void **state)
{
	struct fl_config c;
	char err[256];

	(void)state;
	fl_config__init(&c);
	assert_int_equal(fl_config__check(&c, err, sizeof(err)), 0);
	c.kernel = false;
	assert_int_equal(fl_config__check(&c, err, sizeof(err)), 0);
	c.user = false;
	assert_int_equal(fl_config__check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "kernel and user are both off"));
}

static void test_load_good(void **state)
{
	struct fl_config c;
	char err[512];

	(void)state;
	fl_config__init(&c);
	assert_int_equal(load(&c,
			      "# a comment\n"
			      "\n"
			      "   \t\n"
			      "  # an indented comment\n"
			      "frequency=999\n"
			      "  interval   =   5m   # trailing comment\n"
			      "\tcall_graph\t=\tdwarf,8192\t\n"
			      "targets = nginx, postgres, 42 #comment\n"
			      "idle = yes\n"
			      "kernel = off\n"
			      "user = 1\n"
			      "output_dir = /srv/a#b/c d\n"
			      "formats = folded, svg\n"
			      "keep_files = 100\n"
			      "keep_age = 7d\n"
			      "keep_bytes = 1G\n"
			      "max_stacks = 1000\n"
			      "max_processes = 2000", /* no final newline */
			      err, sizeof(err)),
			 0);
	assert_int_equal(c.frequency, 999);
	assert_true(c.interval_ns == 300 * SEC);
	assert_true(c.dwarf);
	assert_int_equal(c.stack_size, 8192);
	assert_false(c.all_targets);
	assert_int_equal(c.nr_names, 2);
	assert_string_equal(c.names[1], "postgres");
	assert_int_equal(c.nr_pids, 1);
	assert_int_equal(c.pids[0], 42);
	assert_true(c.idle && !c.kernel && c.user);
	assert_string_equal(c.output_dir, "/srv/a#b/c d");
	assert_true(c.fmt_folded && c.fmt_svg);
	assert_true(c.keep_files == 100);
	assert_true(c.keep_age_ns == 7 * 86400 * SEC);
	assert_true(c.keep_bytes == 1ull << 30);
	assert_int_equal(c.max_stacks, 1000);
	assert_int_equal(c.max_processes, 2000);

	/* A reload starts from the defaults: keys no longer in the file go back. */
	assert_int_equal(load(&c, "frequency = 49\n", err, sizeof(err)), 0);
	assert_int_equal(c.frequency, 49);
	c.frequency = 99;
	assert_true(is_default(&c));

	/* Empty files, only comments, a '=' in a value, "key=" forms. */
	assert_int_equal(load(&c, "", err, sizeof(err)), 0);
	assert_true(is_default(&c));
	assert_int_equal(load(&c, "\n\n# x = y\n#frequency = abc\n", err, sizeof(err)), 0);
	assert_true(is_default(&c));
	assert_int_equal(load(&c, "output_dir = /a=b\n", err, sizeof(err)), 0);
	assert_string_equal(c.output_dir, "/a=b");
	fl_config__fini(&c);
}

static void test_load_crlf_bom(void **state)
{
	struct fl_config c;
	char err[512];

	(void)state;
	fl_config__init(&c);
	assert_int_equal(load(&c,
			      "\xef\xbb\xbf# saved by a DOS editor\r\n"
			      "frequency = 49\r\n"
			      "\r\n"
			      "targets = nginx, 7 # pids\r\n"
			      "output_dir = /srv/x\r",
			      err, sizeof(err)),
			 0);
	assert_int_equal(c.frequency, 49);
	assert_int_equal(c.nr_names, 1);
	assert_string_equal(c.names[0], "nginx");
	assert_int_equal(c.pids[0], 7);
	assert_string_equal(c.output_dir, "/srv/x");
	/* A carriage return anywhere but at the end of a line is a control character. */
	assert_int_equal(load(&c, "frequency = 4\r9\n", err, sizeof(err)), -EINVAL);
	assert_string_equal(err + strlen(tmp_path), ":1: a control character (0x0d)");
	assert_int_equal(c.frequency, 49);
	fl_config__fini(&c);
}

/* Loading s fails with -EINVAL and the message "TMPFILE" + want; the config is unchanged. */
static void load_bad_n(const char *s, size_t len, const char *want)
{
	struct fl_config c;
	char err[512];

	fl_config__init(&c);
	assert_int_equal(fl_config__set(&c, "targets", "keepme", err, sizeof(err)), 0);
	assert_int_equal(fl_config__set(&c, "frequency", "7", err, sizeof(err)), 0);
	assert_int_equal(load_n(&c, s, len, err, sizeof(err)), -EINVAL);
	if (strncmp(err, tmp_path, strlen(tmp_path)) || strcmp(err + strlen(tmp_path), want))
		fail_msg("got \"%s\", want \"<tmp>%s\"", err, want);
	assert_int_equal(c.frequency, 7);
	assert_int_equal(c.nr_names, 1);
	assert_string_equal(c.names[0], "keepme");
	fl_config__fini(&c);
}

static void load_bad(const char *s, const char *want)
{
	load_bad_n(s, 0, want);
}

static void test_load_errors(void **state)
{
	(void)state;
	load_bad("# ok\n\nfrequency = abc\n", ":3: frequency: \"abc\" is not a number (1-100000)");
	load_bad("frequency = 99 # per CPU\ninterval = 0\n",
		 ":2: interval: \"0\" is out of range (1s-7d)");
	load_bad("frequency = 99#x\n", ":1: frequency: \"99#x\" is not a number (1-100000)");
	load_bad("frequency =\n", ":1: frequency: no value");
	load_bad("frequency = # nothing\n", ":1: frequency: no value");
	load_bad("frequenzy = 99\n", ":1: frequenzy: unknown key");
	load_bad("idle = yes\nkernel = no\nidle = no\n", ":3: idle: already set on line 1");
	load_bad("call_graph = fp\ncall-graph = dwarf\n", ":2: call-graph: already set on line 1");
	load_bad("frequency 99\n", ":1: \"frequency 99\" is not a \"key = value\" line");
	load_bad("\n[daemon]\n", ":2: \"[daemon]\" is not a \"key = value\" line");
	load_bad(" = 99\n", ":1: no key before '='");
	load_bad("targets = nginx,,x\n", ":1: targets: \"nginx,,x\" has an empty item (a list is "
					 "\"a, b, c\")");
	load_bad("kernel = no\nuser = no\n",
		 ": kernel and user are both off: there would be no stacks to record");
	load_bad("frequency = 1\x01\n", ":1: a control character (0x01)");
	load_bad_n("frequency = 99\n# a\0b\n", 21, ":2: a NUL byte (not a text file?)");
	load_bad_n("\0", 1, ":1: a NUL byte (not a text file?)");
}

static void test_load_long_line(void **state)
{
	size_t n = FL_CONFIG_MAX_LINE, pre = strlen("output_dir = /");
	char *s = malloc(n + 16);
	struct fl_config c;
	char err[512];

	(void)state;
	assert_non_null(s);
	fl_config__init(&c);
	/* A comment of exactly the limit (plus "\r\n") is fine. */
	memset(s, '#', n);
	memcpy(s + n, "\r\nidle = 1\n", 12);
	assert_int_equal(load(&c, s, err, sizeof(err)), 0);
	assert_true(c.idle);
	/* One byte more is an error, even in a comment. */
	memset(s, '#', n + 1);
	memcpy(s + n + 1, "\nidle = 1\n", 11);
	load_bad(s, ":1: line longer than 4096 bytes");
	/* A value of the whole line reaches the setter, which has its own limit. */
	memcpy(s, "output_dir = /", pre);
	memset(s + pre, 'a', n - pre);
	s[n] = '\0';
	assert_int_equal(load(&c, s, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, ":1: output_dir: \"/aaaa"));
	assert_non_null(strstr(err, "...\" is longer than 1023 bytes"));
	free(s);

	/* A file of the size limit is read (and refused for its line); one byte more is not. */
	s = malloc(FL_CONFIG_MAX_FILE + 2);
	assert_non_null(s);
	memset(s, 'x', FL_CONFIG_MAX_FILE + 1);
	s[FL_CONFIG_MAX_FILE] = '\0';
	load_bad(s, ":1: line longer than 4096 bytes");
	s[FL_CONFIG_MAX_FILE] = '\n';
	s[FL_CONFIG_MAX_FILE + 1] = '\0';
	assert_int_equal(load(&c, s, err, sizeof(err)), -EFBIG);
	assert_non_null(strstr(err, "larger than 1048576 bytes"));
	assert_true(c.idle);
	free(s);
	fl_config__fini(&c);
}

static void test_load_open_errors(void **state)
{
	struct fl_config c;
	char err[512];

	(void)state;
	fl_config__init(&c);
	c.frequency = 5;
	assert_int_equal(fl_config__load(&c, "/nonexistent/flamed.conf", err, sizeof(err)),
			 -ENOENT);
	assert_string_equal(err, "cannot open /nonexistent/flamed.conf: No such file or directory");
	assert_int_equal(fl_config__load(&c, "/", err, sizeof(err)), -EISDIR);
	assert_string_equal(err, "cannot open /: Is a directory");
	assert_int_equal(c.frequency, 5);
	fl_config__fini(&c);
}

/* A FIFO (or a tty) named as the config file is refused, not opened: it would block the daemon. */
static void test_load_fifo(void **state)
{
	char dir[] = "/tmp/fl-config-XXXXXX", path[64], err[512];
	struct fl_config c;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/flamed.conf", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	fl_config__init(&c);
	alarm(10); /* nobody writes the FIFO: a blocking open would hang here */
	assert_int_equal(fl_config__load(&c, path, err, sizeof(err)), -EINVAL);
	alarm(0);
	assert_non_null(strstr(err, "is not a regular file"));
	assert_int_equal(fl_config__load(&c, "/dev/null", err, sizeof(err)), -EINVAL);
	fl_config__fini(&c);
	unlink(path);
	rmdir(dir);
}

static void test_shipped_file(void **state)
{
	FILE *f = fopen(SHIPPED_CONF, "r");
	char line[512], *all = NULL, err[512];
	size_t allsize = 0, i, found[32] = {0};
	FILE *uncommented = open_memstream(&all, &allsize);
	struct fl_config c;

	(void)state;
	assert_non_null(f);
	assert_non_null(uncommented);
	/* Loading it as shipped gives exactly the defaults. */
	fl_config__init(&c);
	c.frequency = 5;
	if (fl_config__load(&c, SHIPPED_CONF, err, sizeof(err)))
		fail_msg("%s", err);
	assert_true(is_default(&c));

	/*
	 * Every key appears once as "# key = default" ("# key =" when the
	 * default is empty): uncommenting those
	 * lines must still give exactly the defaults, so the documented
	 * defaults cannot drift from the code.
	 */
	while (fgets(line, sizeof(line), f)) {
		for (i = 0; fl_config__key(i); i++) {
			const char *k = fl_config__key(i);
			size_t n = strlen(k);

			/* "# key = value", or "# key =" for the keys whose default is empty. */
			if (!strncmp(line, "# ", 2) && !strncmp(line + 2, k, n) &&
			    (!strncmp(line + 2 + n, " = ", 3) || !strcmp(line + 2 + n, " =\n"))) {
				found[i]++;
				fputs(line + 2, uncommented);
			}
		}
	}
	fclose(f);
	fclose(uncommented);
	assert_true(i <= 32);
	for (i = 0; fl_config__key(i); i++)
		if (found[i] != 1)
			fail_msg("packaging/flamed.conf has %zu \"# %s =\" lines, not 1", found[i],
				 fl_config__key(i));
	if (load(&c, all, err, sizeof(err)))
		fail_msg("%s", err);
	assert_true(is_default(&c));
	free(all);
	fl_config__fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_call_graph),
		cmocka_unit_test(test_targets),
		cmocka_unit_test(test_target_limit),
		cmocka_unit_test(test_booleans),
		cmocka_unit_test(test_output_dir_and_formats),
		cmocka_unit_test(test_metrics_listen),
		cmocka_unit_test(test_push_url),
		cmocka_unit_test(test_push_keys),
		cmocka_unit_test(test_push_labels),
		cmocka_unit_test(test_cgroup),
		cmocka_unit_test(test_load_fleet),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_load_good),
		cmocka_unit_test(test_load_crlf_bom),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_load_long_line),
		cmocka_unit_test(test_load_open_errors),
		cmocka_unit_test(test_load_fifo),
		cmocka_unit_test(test_shipped_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
