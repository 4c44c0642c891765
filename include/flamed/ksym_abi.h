/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What bpf/ksym.bpf.c and lib/symbols/ksym_bpf.c share: the batch of addresses to name. */
#ifndef FLAMED_KSYM_ABI_H
#define FLAMED_KSYM_ABI_H

/* Addresses named per run of the program, and room per name ("name [module]"). */
#define FL_KSYM_BATCH 256
#define FL_KSYM_NAME_LEN 512 /* KSYM_NAME_LEN since Linux 6.1 (Rust symbols) */

#endif
