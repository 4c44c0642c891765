// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: a JIT's perf map (/tmp/perf-PID.map), which the profiled
 * program writes. The map is written into a fake root directory in two
 * parts: opened after the first, refreshed after the second (an appending
 * JIT), then cut to a third (re-read from the start). After each step the
 * lookups must answer as a map opened fresh on the same bytes does.
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "flamed/symbols/perfmap.h"
#include "fuzz.h"

#define NSPID 4242 /* the file is tmp/perf-4242.map under the fake root */
#define MAX_ADDRS 32

/* The fake root, made on the first input and removed at exit. */
static char root_dir[PATH_MAX];
static char map_path[PATH_MAX + 32];
static int root_fd = -1;

static void remove_root(void)
{
	char tmp[PATH_MAX + 8];

	if (root_fd >= 0)
		close(root_fd);
	unlink(map_path);
	snprintf(tmp, sizeof(tmp), "%s/tmp", root_dir);
	rmdir(tmp);
	rmdir(root_dir);
}

static void make_root(void)
{
	const char *tmpdir = getenv("TMPDIR");
	char tmp[PATH_MAX + 8];

	snprintf(root_dir, sizeof(root_dir), "%s/fuzz_perfmap.XXXXXX", tmpdir ? tmpdir : "/tmp");
	FUZZ_CHECK(mkdtemp(root_dir));
	atexit(remove_root);
	snprintf(tmp, sizeof(tmp), "%s/tmp", root_dir);
	snprintf(map_path, sizeof(map_path), "%s/perf-%d.map", tmp, NSPID);
	FUZZ_CHECK(mkdir(tmp, 0755) == 0);
	root_fd = open(root_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(root_fd >= 0);
}

static void put(const uint8_t *data, size_t size, int flags)
{
	int fd = open(map_path, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);

	FUZZ_CHECK(fd >= 0);
	fuzz_write_all(fd, data, size);
	close(fd);
}

static struct fl_perfmap *open_map(void)
{
	const struct fl_perfmap_opts o = {
		.sz = sizeof(o), .pid = getpid(), .root_fd = root_fd, .nspid = NSPID};
	struct fl_perfmap *m = NULL;

	FUZZ_CHECK(fl_perfmap__open(&o, &m) == 0);
	return m;
}

/* m, read piece by piece, against a map opened now on the file as it is. */
static void same_as_fresh(const struct fl_perfmap *m, const uint64_t *addrs, size_t nr)
{
	struct fl_perfmap *fresh = open_map();
	struct fl_perfmap_stats a, b;
	uint64_t h = 0;

	fl_perfmap__stats(m, &a);
	fl_perfmap__stats(fresh, &b);
	FUZZ_CHECK(a.nr_lines == b.nr_lines && a.nr_entries == b.nr_entries);
	FUZZ_CHECK(a.nr_malformed == b.nr_malformed && a.nr_too_long == b.nr_too_long);
	FUZZ_CHECK(a.bytes_parsed == b.bytes_parsed);
	FUZZ_CHECK(a.nr_malformed ==
		   a.nr_bad_hex + a.nr_zero_size + a.nr_overflow + a.nr_no_name + a.nr_bad_char);
	/* Each address the lines start with, the byte before it and the byte after. */
	for (size_t i = 0; i < 3 * nr; i++) {
		uint64_t addr = addrs[i / 3] + i % 3 - 1;
		const char *x = fl_perfmap__find(m, addr), *y = fl_perfmap__find(fresh, addr);

		FUZZ_CHECK(!x == !y);
		FUZZ_CHECK(!x || !strcmp(x, y));
		h = fuzz_hash_str(h, x);
	}
	fuzz_sink(h);
	fl_perfmap__free(fresh);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t addrs[MAX_ADDRS];
	size_t nr, split;
	struct fl_perfmap *m;
	int r;

	if (root_fd < 0)
		make_root();
	/* The first byte says where the file is cut in two; the rest is the file. */
	if (!size)
		return 0;
	split = (size - 1) * data[0] / 255;
	data++;
	size--;
	nr = fuzz_line_addrs(data, size, addrs, MAX_ADDRS);

	put(data, split, O_TRUNC);
	m = open_map();
	same_as_fresh(m, addrs, nr);

	put(data + split, size - split, O_APPEND);
	r = fl_perfmap__refresh(m);
	FUZZ_CHECK(r == 0 || r == 1);
	same_as_fresh(m, addrs, nr);

	FUZZ_CHECK(truncate(map_path, (off_t)(size / 3)) == 0);
	r = fl_perfmap__refresh(m);
	FUZZ_CHECK(r == 0 || r == 1);
	same_as_fresh(m, addrs, nr);

	fl_perfmap__free(m);
	return 0;
}
