/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Kernel address naming through a BPF program that asks the kernel's own symbol table. */
#ifndef FLAMED_KSYM_BPF_H
#define FLAMED_KSYM_BPF_H

#include <stddef.h>
#include <stdint.h>

/*
 * /proc/kallsyms costs tens of milliseconds to produce and parse on every
 * run; a profile needs a few thousand kernel addresses named. This loads a
 * tiny BPF_PROG_TYPE_SYSCALL program that formats addresses with "%ps" (the
 * kernel's kallsyms_lookup), a batch per BPF_PROG_TEST_RUN. Needs CAP_BPF
 * and CAP_PERFMON and a 5.14+ kernel; callers fall back to kallsyms.
 */
struct fl_ksym_bpf;

/* Returns 0, or a negative errno from loading the program. */
int fl_ksym_bpf__new(struct fl_ksym_bpf **ret);
/* Accepts NULL. */
void fl_ksym_bpf__free(struct fl_ksym_bpf *kb);

/*
 * Names addrs[0..n). For each address calls fn(ctx, i, name, name_len,
 * module, module_len): name is NULL when the kernel knows no symbol there,
 * module NULL for the kernel image. The strings are not NUL-terminated and
 * live during the call only. Returns 0, the first non-zero return of fn, or
 * a negative errno from running the program.
 */
typedef int (*fl_ksym_bpf_fn)(void *ctx, size_t i, const char *name, size_t name_len,
			      const char *module, size_t module_len);
int fl_ksym_bpf__resolve(struct fl_ksym_bpf *kb, const uint64_t *addrs, size_t n,
			 fl_ksym_bpf_fn fn, void *ctx);

/*
 * Splits one "%ps" result: "func", "func [module]", or "0xffff..." (no
 * symbol: *name_len = 0). Exposed for tests.
 */
void fl_ksym_bpf__parse(const char *text, size_t len, size_t *name_len, const char **module,
			size_t *module_len);

#endif
