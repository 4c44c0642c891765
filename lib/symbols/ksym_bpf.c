// SPDX-License-Identifier: GPL-2.0-or-later
/* Runs bpf/ksym.bpf.c to name kernel addresses in batches, without reading /proc/kallsyms. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "flamed/ksym_abi.h"
#include "flamed/symbols/ksym_bpf.h"
#include "flamed/common/log.h"
#include "ksym.skel.h"

struct fl_ksym_bpf {
	struct ksym_bpf *skel;
	int prog_fd;
};

void fl_ksym_bpf__free(struct fl_ksym_bpf *kb)
{
	if (!kb)
		return;
	ksym_bpf__destroy(kb->skel);
	free(kb);
}

int fl_ksym_bpf__new(struct fl_ksym_bpf **ret)
{
	struct fl_ksym_bpf *kb = calloc(1, sizeof(*kb));
	int err;

	if (!kb)
		return -ENOMEM;
	kb->skel = ksym_bpf__open();
	if (!kb->skel) {
		err = -errno ?: -EINVAL;
		goto out_free;
	}
	err = ksym_bpf__load(kb->skel);
	if (err)
		goto out_free;
	if (!kb->skel->bss) {
		err = -EINVAL; /* .bss not mmap'able: a very old kernel */
		goto out_free;
	}
	kb->prog_fd = bpf_program__fd(kb->skel->progs.resolve);
	*ret = kb;
	return 0;

out_free:
	fl_pr_debug("ksym_bpf: cannot load: %s\n", strerror(-err));
	fl_ksym_bpf__free(kb);
	return err;
}

void fl_ksym_bpf__parse(const char *text, size_t len, size_t *name_len, const char **module,
			size_t *module_len)
{
	const char *sp = memchr(text, ' ', len);

	*module = NULL;
	*module_len = 0;
	/* Without a symbol the kernel prints the address itself. */
	if (len >= 2 && text[0] == '0' && text[1] == 'x') {
		*name_len = 0;
		return;
	}
	*name_len = sp ? (size_t)(sp - text) : len;
	if (sp && len - (size_t)(sp - text) >= 3 && sp[1] == '[' && text[len - 1] == ']') {
		*module = sp + 2;
		*module_len = len - (size_t)(sp - text) - 3;
	}
}

int fl_ksym_bpf__resolve(struct fl_ksym_bpf *kb, const uint64_t *addrs, size_t n,
			 fl_ksym_bpf_fn fn, void *ctx)
{
	struct ksym_bpf__bss *bss = kb->skel->bss;

	for (size_t done = 0; done < n;) {
		size_t batch = n - done < FL_KSYM_BATCH ? n - done : FL_KSYM_BATCH;
		LIBBPF_OPTS(bpf_test_run_opts, opts);
		int err;

		memcpy(bss->ksym_addrs, addrs + done, batch * sizeof(uint64_t));
		bss->ksym_count = (uint32_t)batch;
		memset(bss->ksym_names, 0, sizeof(bss->ksym_names[0]) * batch);
		if (bpf_prog_test_run_opts(kb->prog_fd, &opts) < 0)
			return -errno;
		for (size_t i = 0; i < batch; i++) {
			const char *text = bss->ksym_names[i];
			size_t len = strnlen(text, FL_KSYM_NAME_LEN);
			const char *module;
			size_t name_len, module_len;

			fl_ksym_bpf__parse(text, len, &name_len, &module, &module_len);
			err = fn(ctx, done + i, name_len ? text : NULL, name_len, module,
				 module_len);
			if (err)
				return err;
		}
		done += batch;
	}
	return 0;
}
