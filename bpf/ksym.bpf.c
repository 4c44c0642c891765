// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Names kernel addresses with the kernel's own symbol lookup (%ps), a batch per run. */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "flamed/ksym_abi.h"

/*
 * User space writes the addresses and their number into .bss, runs the
 * program with BPF_PROG_TEST_RUN, and reads the names back from .bss. The
 * kernel looks each address up in its compressed symbol table, so naming a
 * few thousand addresses costs far less than reading all of /proc/kallsyms.
 */
__u64 ksym_addrs[FL_KSYM_BATCH];
__u32 ksym_count;
char ksym_names[FL_KSYM_BATCH][FL_KSYM_NAME_LEN];

SEC("syscall")
int resolve(void *ctx)
{
	for (__u32 i = 0; i < FL_KSYM_BATCH; i++) {
		if (i >= ksym_count)
			break;
		bpf_snprintf(ksym_names[i], FL_KSYM_NAME_LEN, "%ps", &ksym_addrs[i],
			     sizeof(ksym_addrs[i]));
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
