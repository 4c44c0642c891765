// SPDX-License-Identifier: GPL-2.0-or-later
/* Tests for lib/symbols/ksym_bpf.c: "%ps" parsing, and naming real kernel addresses through BPF. */
#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "flamed/symbols/ksym_bpf.h"

static void parse(const char *text, const char *want_name, const char *want_module)
{
	const char *module;
	size_t name_len, module_len;

	fl_ksym_bpf__parse(text, strlen(text), &name_len, &module, &module_len);
	if (!want_name) {
		assert_int_equal(name_len, 0);
		return;
	}
	assert_int_equal(name_len, strlen(want_name));
	assert_memory_equal(text, want_name, name_len);
	if (!want_module) {
		assert_null(module);
		return;
	}
	assert_non_null(module);
	assert_int_equal(module_len, strlen(want_module));
	assert_memory_equal(module, want_module, module_len);
}

static void test_parse(void **state)
{
	(void)state;
	parse("do_syscall_64", "do_syscall_64", NULL);
	parse("ext4_file_read_iter [ext4]", "ext4_file_read_iter", "ext4");
	parse("0xffffffffc0201000", NULL, NULL);
	parse("bpf_prog_6deef7357e7b4530_on_sample [bpf]", "bpf_prog_6deef7357e7b4530_on_sample",
	      "bpf");
	/* Damaged text: no closing bracket, so no module, but never a read past the end. */
	parse("f [mod", "f", NULL);
	parse("f []", "f", "");
}

/* The address of a kernel function, from /proc/kallsyms; 0 when hidden or absent. */
static uint64_t kallsyms_addr(const char *want)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[512], name[256], type;
	unsigned long long a;
	uint64_t found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && !strcmp(name, want))
			found = a;
	fclose(f);
	return found;
}

struct result {
	size_t calls;
	char names[4][64];
	bool module[4];
};

static int record_cb(void *ctx, size_t i, const char *name, size_t name_len, const char *module,
		     size_t module_len)
{
	struct result *r = ctx;

	(void)module_len;
	assert_int_equal(i, r->calls);
	r->calls++;
	if (i < 4) {
		snprintf(r->names[i], sizeof(r->names[i]), "%.*s", name ? (int)name_len : 0,
			 name ? name : "");
		r->module[i] = module != NULL;
	}
	return 0;
}

static struct fl_ksym_bpf *open_or_skip(void)
{
	struct fl_ksym_bpf *kb = NULL;
	int err = fl_ksym_bpf__new(&kb);

	if (err == -EPERM || err == -EACCES) {
		fprintf(stderr, "SKIP: BPF not permitted (%s)\n", strerror(-err));
		exit(77);
	}
	assert_int_equal(err, 0);
	return kb;
}

static void test_resolve_real_addresses(void **state)
{
	uint64_t sched = kallsyms_addr("schedule");
	struct fl_ksym_bpf *kb;
	struct result r = {};
	uint64_t addrs[3];

	(void)state;
	if (!sched)
		skip(); /* kptr_restrict hides addresses */
	kb = open_or_skip();
	addrs[0] = sched;
	addrs[1] = sched + 4; /* inside the function */
	addrs[2] = 0x10;      /* no symbol anywhere near */
	assert_int_equal(fl_ksym_bpf__resolve(kb, addrs, 3, record_cb, &r), 0);
	assert_int_equal(r.calls, 3);
	assert_string_equal(r.names[0], "schedule");
	assert_string_equal(r.names[1], "schedule");
	assert_false(r.module[0]);
	assert_string_equal(r.names[2], "");
	fl_ksym_bpf__free(kb);
}

static void test_resolve_many_batches(void **state)
{
	uint64_t sched = kallsyms_addr("schedule");
	struct fl_ksym_bpf *kb;
	struct result r = {};
	uint64_t many[600];

	(void)state;
	if (!sched)
		skip();
	kb = open_or_skip();
	for (size_t i = 0; i < 600; i++)
		many[i] = sched + (i % 8);
	/* record_cb checks that results come back in order, once each. */
	assert_int_equal(fl_ksym_bpf__resolve(kb, many, 600, record_cb, &r), 0);
	assert_int_equal(r.calls, 600);
	assert_string_equal(r.names[3], "schedule");
	fl_ksym_bpf__free(kb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_resolve_real_addresses),
		cmocka_unit_test(test_resolve_many_batches),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: needs root (BPF)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
