// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: the daemon's configuration. The input is loaded as a file
 * (a memfd, through /proc/self/fd/N), and also split at its first NUL, or
 * else its first '=', into a key and a value for fl_config__set(), as a
 * command-line override reaches it.
 */
#include <errno.h>

#include "flamed/daemon/config.h"
#include "fuzz.h"

static uint64_t hash_config(uint64_t h, const struct fl_config *c)
{
	FUZZ_CHECK(c->frequency >= 1 && c->frequency <= 100000);
	FUZZ_CHECK(c->nr_pids + c->nr_names <= FL_CONFIG_MAX_TARGETS);
	FUZZ_CHECK(!c->all_targets || (!c->nr_pids && !c->nr_names));
	FUZZ_CHECK(memchr(c->output_dir, '\0', sizeof(c->output_dir)));
	for (size_t i = 0; i < c->nr_pids; i++)
		h = fuzz_hash_u64(h, (uint64_t)c->pids[i]);
	for (size_t i = 0; i < c->nr_names; i++) {
		FUZZ_CHECK(strlen(c->names[i]) >= 1 && strlen(c->names[i]) <= FL_CONFIG_NAME_MAX);
		h = fuzz_hash_str(h, c->names[i]);
	}
	return fuzz_hash_str(h, c->output_dir);
}

static void load(const uint8_t *data, size_t size)
{
	struct fl_config c;
	char path[40], err[512];
	int fd, r;

	fd = fuzz_memfd(data, size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	fl_config__init(&c);
	err[0] = '\0';
	r = fl_config__load(&c, path, err, sizeof(err));
	close(fd);
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -EFBIG);
	FUZZ_CHECK(r == 0 || err[0]);
	FUZZ_CHECK(r != 0 || fl_config__check(&c, err, sizeof(err)) == 0);
	fuzz_sink(fuzz_hash_str(hash_config(0, &c), err));
	fl_config__fini(&c);
}

static void set(const uint8_t *data, size_t size)
{
	const uint8_t *sep = memchr(data, '\0', size);
	struct fl_config c;
	char *key, err[512];
	size_t klen;
	int r;

	if (!sep)
		sep = memchr(data, '=', size);
	if (!sep)
		return;
	klen = (size_t)(sep - data);
	/* Both NUL-terminated; a NUL inside the value ends it, as on a command line. */
	key = malloc(size + 1);
	if (!key)
		return;
	memcpy(key, data, size);
	key[klen] = '\0';
	key[size] = '\0';
	fl_config__init(&c);
	/* Twice: the second replaces what the first set (a targets list is freed). */
	for (int i = 0; i < 2; i++) {
		err[0] = '\0';
		r = fl_config__set(&c, key, key + klen + 1, err, sizeof(err));
		FUZZ_CHECK(r == 0 || (r == -EINVAL && err[0]));
	}
	fuzz_sink(hash_config(0, &c));
	fl_config__fini(&c);
	free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	load(data, size);
	set(data, size);
	return 0;
}
