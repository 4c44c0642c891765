/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Kernel symbols from /proc/kallsyms: one string pool plus one sorted array. */
#ifndef FLAMED_KSYMS_H
#define FLAMED_KSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fl_ksyms;

struct fl_ksyms_opts {
	size_t sz; /* sizeof(struct fl_ksyms_opts), for forward compatibility */
	/* File in /proc/kallsyms format; NULL means /proc/kallsyms. */
	const char *path;
};

struct fl_ksym {
	uint64_t addr;
	/* Both point into the ksyms object and live until fl_ksyms__free(). */
	const char *name;
	const char *module; /* "ext4", or NULL for the kernel image */
};

/*
 * Reads text symbols (types t, T, w, W) with their module names. Lines that
 * do not parse are skipped. When every address reads as zero (kptr_restrict
 * hides them) the load still succeeds, with no symbols, and
 * fl_ksyms__addrs_hidden() says so. Returns 0, -ENOENT/-EACCES (cannot open)
 * or -ENOMEM.
 */
int fl_ksyms__load(const struct fl_ksyms_opts *opts, struct fl_ksyms **ret);
/* Accepts NULL. */
void fl_ksyms__free(struct fl_ksyms *ks);

/*
 * The symbol whose range holds addr: the last symbol at or below addr (a
 * symbol ends where the next one starts). NULL below the first symbol, above
 * the last symbol of its region by more than 1 MiB, or when addrs are hidden.
 * Binary search, O(log n).
 */
const struct fl_ksym *fl_ksyms__find(const struct fl_ksyms *ks, uint64_t addr);

bool fl_ksyms__addrs_hidden(const struct fl_ksyms *ks);
size_t fl_ksyms__count(const struct fl_ksyms *ks);

#endif
